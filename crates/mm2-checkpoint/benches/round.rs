//! Emission round decisions for 1,000,000 group-partitions.
//!
//! 1,000 groups × 1,000 partitions each (10 topics × 100 partitions), translated by
//! a trivial in-bench translator so that only the round's own work is measured:
//! filtering, renaming, conflict detection, translation calls, the monotonicity
//! check and building the sorted plan.
//!
//! * `first_round`: empty checkpoint store, every partition yields a checkpoint.
//! * `steady_round`: every partition already has a last checkpoint and has moved on,
//!   so every partition is compared with its last checkpoint and emitted.
//! * `idle_round`: nothing moved, every checkpoint is suppressed as a repeat.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_main};
use mm2_checkpoint::core::checkpoint_store::CheckpointStore;
use mm2_checkpoint::core::filter::TopicFilter;
use mm2_checkpoint::core::policy::{Flow, ReplicationPolicy};
use mm2_checkpoint::core::round::{CheckpointRound, CommittedOffset, GroupOffsets};
use mm2_checkpoint::core::{OffsetTranslator, TopicPartition, Translation};

const GROUPS: usize = 1_000;
const TOPICS: usize = 10;
const PARTITIONS: i32 = 100;

/// Translates `u` to `u / 2`: a stand-in for the offset-sync store.
struct Halve;

impl OffsetTranslator for Halve {
    fn translate(&self, _: &TopicPartition, upstream: i64) -> Translation {
        Translation::Translated(upstream / 2)
    }
}

fn source_offsets(offset: i64) -> BTreeMap<String, GroupOffsets> {
    (0..GROUPS)
        .map(|g| {
            let offsets = (0..TOPICS)
                .flat_map(|t| (0..PARTITIONS).map(move |p| (t, p)))
                .map(|(t, p)| {
                    let committed = CommittedOffset {
                        offset: offset + i64::from(p),
                        metadata: String::new(),
                    };
                    (
                        TopicPartition::new(format!("topic-{t}"), p),
                        Some(committed),
                    )
                })
                .collect();
            (format!("group-{g:04}"), offsets)
        })
        .collect()
}

fn bench_rounds(c: &mut Criterion) {
    let flow = Flow::new("source", "target");
    let policy = ReplicationPolicy::default();
    let topic_filter = TopicFilter::default();
    let round = CheckpointRound {
        flow: &flow,
        policy: &policy,
        topic_filter: &topic_filter,
    };
    let groups: Vec<String> = (0..GROUPS).map(|g| format!("group-{g:04}")).collect();
    let first = source_offsets(1_000);
    let later = source_offsets(2_000);

    let empty = CheckpointStore::new(groups.iter().cloned());
    let mut filled = CheckpointStore::new(groups.iter().cloned());
    filled.on_produced(&round.plan(&Halve, &empty, &first).checkpoints);
    assert_eq!(filled.len(), GROUPS * TOPICS * PARTITIONS as usize);

    let mut bench = c.benchmark_group("round");
    bench.sample_size(10);
    bench.throughput(Throughput::Elements(
        (GROUPS * TOPICS) as u64 * PARTITIONS as u64,
    ));
    bench.bench_function("first_round", |b| {
        b.iter(|| black_box(round.plan(&Halve, &empty, black_box(&first))))
    });
    bench.bench_function("steady_round", |b| {
        b.iter(|| black_box(round.plan(&Halve, &filled, black_box(&later))))
    });
    bench.bench_function("idle_round", |b| {
        b.iter(|| black_box(round.plan(&Halve, &filled, black_box(&first))))
    });
    bench.finish();
}

/// The generated group function lives in a private module so it needs no docs.
mod group {
    criterion::criterion_group!(benches, super::bench_rounds);
}
criterion_main!(group::benches);
