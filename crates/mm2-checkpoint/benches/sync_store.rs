//! Offset-sync store throughput: applying syncs and translating offsets across
//! 10,000 source partitions (100 topics × 100 partitions).

// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
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
    let partitions = topics.len() as u64 * PARTITIONS as u64;
    let mut group = c.benchmark_group("sync_store_ingest");
    group.throughput(Throughput::Elements(partitions));
    // One iteration applies the next sync to every one of the 10,000 partitions,
    // round-robin, each +100 past its previous sync.
    group.bench_function("apply_round_10k_partitions", |b| {
        b.iter_batched_ref(
            || (warmed_store(&topics), WARM_SYNCS),
            |(store, n)| {
                for topic in &topics {
                    for p in 0..PARTITIONS {
                        store.apply(black_box(topic), p, *n * STEP, *n * STEP);
                    }
                }
                *n += 1;
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn ingest_steady(c: &mut Criterion) {
    let topics = topic_names();
    let mut store = warmed_store(&topics);
    let mut n = WARM_SYNCS;
    let partitions = topics.len() as u64 * PARTITIONS as u64;
    let mut group = c.benchmark_group("sync_store_ingest_steady");
    group.throughput(Throughput::Elements(partitions));
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

criterion_group!(benches, ingest_steady, ingest, translate);
criterion_main!(benches);
