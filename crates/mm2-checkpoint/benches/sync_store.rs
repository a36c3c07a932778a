//! Offset-sync store throughput: applying syncs and translating offsets across
//! 10,000 source partitions (100 topics × 100 partitions).

// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mm2_checkpoint::core::{InitMode, OffsetSyncStore, OffsetTranslator, TopicPartition};

const TOPICS: usize = 100;
const PARTITIONS: i32 = 100;
/// Upstream (and downstream) distance between consecutive syncs of a partition, like
/// MM2's default `offset.lag.max` of 100.
const STEP: i64 = 100;
/// Syncs applied per partition before measuring, so histories are in steady state.
const WARM_SYNCS: i64 = 1_000;

fn topic_names() -> Vec<String> {
    (0..TOPICS).map(|t| format!("source-topic-{t}")).collect()
}

fn warmed_store(topics: &[String]) -> OffsetSyncStore {
    let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
    store.finish_initial_read();
    for n in 0..WARM_SYNCS {
        for topic in topics {
            for p in 0..PARTITIONS {
                store.apply(topic, p, n * STEP, n * STEP);
            }
        }
    }
    store
}

fn ingest(c: &mut Criterion) {
    let topics = topic_names();
    let mut store = warmed_store(&topics);
    let mut n = WARM_SYNCS;
    let partitions = topics.len() as u64 * PARTITIONS as u64;
    let mut group = c.benchmark_group("sync_store_ingest");
    group.throughput(Throughput::Elements(partitions));
    // One iteration applies the next sync to every one of the 10,000 partitions,
    // round-robin, each +100 past its previous sync; histories stay in steady state.
    group.bench_function("apply_round_10k_partitions", |b| {
        b.iter(|| {
            for topic in &topics {
                for p in 0..PARTITIONS {
                    store.apply(black_box(topic), p, n * STEP, n * STEP);
                }
            }
            n += 1;
        });
    });
    group.finish();
}

fn translate(c: &mut Criterion) {
    let topics = topic_names();
    let store = warmed_store(&topics);
    let tps: Vec<TopicPartition> = topics
        .iter()
        .flat_map(|t| (0..PARTITIONS).map(move |p| TopicPartition::new(t.clone(), p)))
        .collect();
    let head = (WARM_SYNCS - 1) * STEP;
    let mut group = c.benchmark_group("sync_store_translate");
    group.throughput(Throughput::Elements(tps.len() as u64));
    // Groups near the head (the common case) and far behind it (scans more slots).
    for (name, lag) in [("near_head", 250), ("lag_50000", 50_000)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                for tp in &tps {
                    black_box(store.translate(black_box(tp), head - lag));
                }
            });
        });
    }
    group.finish();
}

/// Resident set size in bytes (Linux `/proc/self/statm`, 4 KiB pages), if available.
fn rss_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Not a timing: prints what 10,000 tracked partitions cost, measured as the growth
/// of the process's resident set while the store fills, next to the store's estimate.
fn memory(_: &mut Criterion) {
    let topics = topic_names();
    let before = rss_bytes();
    let store = warmed_store(&topics);
    let after = rss_bytes();
    let estimate = store.approx_heap_bytes();
    let partitions = store.partition_count();
    match (before, after) {
        (Some(before), Some(after)) => println!(
            "memory: {partitions} partitions: RSS +{} B ({} B/partition); estimate {} B ({} B/partition)",
            after.saturating_sub(before),
            after.saturating_sub(before) / partitions,
            estimate,
            estimate / partitions,
        ),
        _ => println!("memory: estimate {estimate} B for {partitions} partitions (no /proc)"),
    }
    black_box(store);
}

criterion_group!(benches, memory, ingest, translate);
criterion_main!(benches);
