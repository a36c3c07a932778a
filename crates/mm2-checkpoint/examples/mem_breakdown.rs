//! Live heap bytes of the daemon's per-(group, partition) state, measured with a
//! counting global allocator.
//!
//! Builds what a flow holds after its first emission round at `GROUPS` groups ×
//! `PARTITIONS` partitions (the shape of `cargo xtask bench mm2`): the checkpoint
//! store, the `checkpoint_latency_ms` series, and the round's transient buffers
//! (the OffsetFetch answers, the encoded records, one `/metrics` scrape). Prints
//! the live bytes each adds and the allocations it makes.
//!
//! ```sh
//! cargo run --release -p mm2-checkpoint --example mem_breakdown [GROUPS] [PARTITIONS]
//! ```

use std::alloc::System;
use std::collections::BTreeMap;
use std::time::Duration;

use mm2_checkpoint::core::checkpoint_store::CheckpointStore;
use mm2_checkpoint::core::format::{Checkpoint, CheckpointKey};
use mm2_checkpoint::core::round::{CommittedOffset, GroupOffsets};
use mm2_checkpoint::core::types::TopicPartition;
use mm2_checkpoint::driver::kafka::OutRecord;
use mm2_checkpoint::metrics::Metrics;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

/// Counts every allocation (the workspace forbids `unsafe`, so the counting
/// wrapper comes from `stats_alloc`).
#[global_allocator]
static ALLOC: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes glibc's malloc adds to each block on 64-bit, on average (an 8-byte
/// header plus rounding to 16); an estimate, printed apart from the exact
/// requested bytes.
const BLOCK_OVERHEAD: isize = 16;

#[derive(Clone, Copy)]
struct Snap {
    bytes: isize,
    blocks: isize,
}

fn snap() -> Snap {
    let s = ALLOC.stats();
    Snap {
        bytes: s.bytes_allocated as isize - s.bytes_deallocated as isize,
        blocks: s.allocations as isize - s.deallocations as isize,
    }
}

/// Prints what was allocated and is still live since `before`.
fn report(what: &str, before: Snap, entries: usize) {
    let now = snap();
    let bytes = now.bytes - before.bytes;
    let blocks = now.blocks - before.blocks;
    let with_overhead = bytes + blocks * BLOCK_OVERHEAD;
    println!(
        "{what:<46} {bytes:>9} B in {blocks:>6} blocks  ~{:>5.0} B per group-partition",
        with_overhead as f64 / entries as f64
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let groups: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let partitions: i32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let entries = groups * partitions as usize;
    // Names shaped like the bench's.
    let id = "1764691234-1000";
    let topic = format!("bench-{id}");
    let flow = "source->target";
    let names: Vec<String> = (0..groups).map(|i| format!("bench-{id}-g{i}")).collect();
    println!("{groups} groups x {partitions} partitions = {entries} group-partitions\n");

    // The OffsetFetch answers of one round, as the driver builds them.
    let s = snap();
    let fetched: BTreeMap<String, GroupOffsets> = names
        .iter()
        .map(|g| {
            let offsets = (0..partitions)
                .map(|p| {
                    let c = CommittedOffset {
                        offset: 1_000_000,
                        metadata: String::new(),
                    };
                    (TopicPartition::new(topic.as_str(), p), Some(c))
                })
                .collect();
            (g.clone(), offsets)
        })
        .collect();
    report("round: OffsetFetch answers (transient)", s, entries);

    // The round's checkpoints.
    let s = snap();
    let cps: Vec<Checkpoint> = fetched
        .iter()
        .flat_map(|(g, offsets)| {
            offsets.keys().map(move |tp| Checkpoint {
                key: CheckpointKey {
                    group: g.clone(),
                    topic_partition: tp.clone(),
                },
                upstream_offset: 1_000_000,
                downstream_offset: 999_000,
                metadata: String::new(),
            })
        })
        .collect();
    report("round: planned checkpoints (transient)", s, entries);

    let s = snap();
    let records: Vec<OutRecord> = cps
        .iter()
        .filter_map(|cp| {
            Some(OutRecord {
                key: cp.encode_key().ok()?,
                value: cp.encode_value().ok()?,
                timestamp: 0,
            })
        })
        .collect();
    report("round: encoded records (transient)", s, entries);

    let s = snap();
    let mut store = CheckpointStore::new(names.iter().cloned());
    report("checkpoint store: assigned groups", s, entries);
    let s = snap();
    store.on_produced(&cps);
    report("checkpoint store: last checkpoints (kept)", s, entries);

    let s = snap();
    let metrics = Metrics::new("0.0.0", "test");
    report("metrics: registry (kept)", s, entries);
    let s = snap();
    for cp in &cps {
        let tp = &cp.key.topic_partition;
        metrics.set_checkpoint_latency(
            flow,
            &cp.key.group,
            &tp.topic,
            tp.partition,
            Duration::from_millis(12),
        );
    }
    report("metrics: checkpoint_latency_ms series (kept)", s, entries);

    let s = snap();
    let text = metrics.encode_prometheus().unwrap_or_default();
    report("metrics: one /metrics scrape body (transient)", s, entries);
    println!("  (scrape body {} bytes of text)", text.len());

    drop((fetched, cps, records, text));
    let kept = snap();
    println!(
        "\nkept after the round (whole process): {} B live in {} allocations",
        kept.bytes, kept.blocks
    );
    drop((store, metrics));
}
