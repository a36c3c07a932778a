//! Live heap bytes of the daemon's per-(group, partition) state, measured with a
//! counting global allocator.
//!
//! Builds what a flow holds after its first emission round at `GROUPS` groups ×
//! `PARTITIONS` partitions of each of `TOPICS` topics (the bench's shape is one
//! topic): the commit follower's view of the groups' offsets, the offset-sync
//! store, the checkpoint store, the `checkpoint_latency_ms` series, and the
//! round's transient buffers (the OffsetFetch answers, the encoded records, one
//! `/metrics` scrape). Prints the live bytes each adds and the allocations it
//! makes, then the CPU time of the core's planning of one emitting round (empty
//! store) and one steady round (nothing moved), as the driver calls it.
//!
//! ```sh
//! cargo run --release -p mm2-checkpoint --example mem_breakdown [GROUPS] [PARTITIONS] [TOPICS]
//! ```

use std::alloc::System;
use std::collections::BTreeMap;
use std::time::Duration;

use mm2_checkpoint::core::checkpoint_store::CheckpointStore;
use mm2_checkpoint::core::consumer_offsets::{OffsetCommitValue, OffsetsRecord};
use mm2_checkpoint::core::filter::{GroupFilter, TopicFilter};
use mm2_checkpoint::core::followed_offsets::FollowedOffsets;
use mm2_checkpoint::core::policy::{Flow, ReplicationPolicy};
use mm2_checkpoint::core::round::CheckpointRound;
use mm2_checkpoint::core::round::{CommittedOffset, GroupOffsets};
use mm2_checkpoint::core::sync_store::{InitMode, OffsetSync, OffsetSyncStore};
use mm2_checkpoint::core::types::TopicPartition;
use mm2_checkpoint::driver::OutRecord;
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

/// CPU time this thread has used so far (`/proc/thread-self/schedstat`, ns);
/// zero where that file is missing.
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let groups: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let partitions: i32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let topic_count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let entries = groups * partitions as usize * topic_count;
    // Names shaped like the bench's.
    let id = "1764691234-1000";
    let topics: Vec<String> = (0..topic_count)
        .map(|t| match t {
            0 => format!("bench-{id}"),
            _ => format!("bench-{id}-t{t}"),
        })
        .collect();
    let flow = "source->target";
    let names: Vec<String> = (0..groups).map(|i| format!("bench-{id}-g{i}")).collect();
    let tps: Vec<TopicPartition> = topics
        .iter()
        .flat_map(|t| (0..partitions).map(move |p| TopicPartition::new(t.as_str(), p)))
        .collect();
    println!(
        "{groups} groups x {topic_count} topics x {partitions} partitions = {entries} group-partitions\n"
    );

    // The offset-sync store: 11 syncs per partition, as the bench writes them.
    let s = snap();
    let mut syncs = OffsetSyncStore::new(InitMode::LoadAllHistory);
    for tp in &tps {
        for u in (0..=1_000).step_by(100) {
            syncs.apply_sync(tp, OffsetSync::new(u, u + 7));
        }
    }
    syncs.finish_initial_read();
    report(
        "offset-sync store (kept; per partition, not group)",
        s,
        entries,
    );

    // The commit follower's view, fed the records `__consumer_offsets` holds.
    let s = snap();
    let mut view = FollowedOffsets::new(GroupFilter::default(), TopicFilter::default());
    for g in &names {
        for tp in &tps {
            view.apply(OffsetsRecord::OffsetCommit {
                group: g.clone(),
                topic_partition: tp.clone(),
                value: Some(OffsetCommitValue {
                    offset: 1_000,
                    leader_epoch: None,
                    metadata: String::new(),
                    commit_timestamp: 0,
                    expire_timestamp: None,
                }),
            });
        }
    }
    view.clear_changed();
    report("follower: groups' committed offsets (kept)", s, entries);
    // New offset syncs mark the groups committed on their partitions (a scan
    // of every commit): for a partition no group commits on, for one every
    // group commits on, then for every partition.
    let uncommitted = TopicPartition::new(topics[0].as_str(), partitions);
    let cpu = thread_cpu();
    view.partitions_synced([&uncommitted]);
    let none_synced_cpu = thread_cpu() - cpu;
    assert!(!view.has_changes());
    let cpu = thread_cpu();
    view.partitions_synced(&tps[..1]);
    let one_synced_cpu = thread_cpu() - cpu;
    view.clear_changed();
    let cpu = thread_cpu();
    view.partitions_synced(&tps);
    let all_synced_cpu = thread_cpu() - cpu;
    view.clear_changed();
    let s = snap();
    let group_list: Vec<String> = view.group_names().map(str::to_owned).collect();
    report("flow: list of groups for OffsetFetch (kept)", s, entries);

    // The OffsetFetch answers of one window of a round (the driver plans each
    // window of 2,000 groups as its answers arrive, with the next window in
    // flight), then, for the planning figures below, of every group at once.
    // What OffsetFetch answers for `groups`: every partition at offset 1,000.
    let answers = |groups: &[String]| -> BTreeMap<String, GroupOffsets> {
        groups
            .iter()
            .map(|g| {
                let offsets = tps
                    .iter()
                    .map(|tp| {
                        let c = CommittedOffset {
                            offset: 1_000,
                            metadata: String::new(),
                        };
                        (tp.clone(), Some(c))
                    })
                    .collect();
                (g.clone(), offsets)
            })
            .collect()
    };
    let s = snap();
    let window = answers(&group_list[..group_list.len().min(2_000)]);
    report(
        "round: one window's OffsetFetch answers (transient)",
        s,
        entries,
    );
    drop(window);

    // The OffsetFetch answers of every group at once (not held by the driver
    // since the windows; kept here to plan a whole round at once).
    let s = snap();
    let fetched = answers(&group_list);
    report("round: all OffsetFetch answers (harness only)", s, entries);

    // The round's checkpoints, planned by the core on an empty store.
    let cp_flow = Flow::new("source", "target");
    let policy = ReplicationPolicy::default();
    let topic_filter = TopicFilter::default();
    let round = CheckpointRound {
        flow: &cp_flow,
        policy: &policy,
        topic_filter: &topic_filter,
    };
    let s = snap();
    let mut store = CheckpointStore::new(names.iter().cloned());
    report("checkpoint store: assigned groups (kept)", s, entries);
    let s = snap();
    let cpu = thread_cpu();
    let plan = round.plan_counted(&syncs, &store, &fetched);
    let emitting_cpu = thread_cpu() - cpu;
    report("round: planned checkpoints (transient)", s, entries);
    assert_eq!(
        plan.checkpoints.len(),
        entries,
        "every partition translates"
    );
    let cps = plan.checkpoints;

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
    store.on_produced(&cps);
    report("checkpoint store: last checkpoints (kept)", s, entries);

    let s = snap();
    // Per-partition latency series (opt-in; the default, `flow`, keeps one
    // per flow): the largest set the estate can have.
    let metrics = Metrics::with_settings(
        "0.0.0",
        "test",
        mm2_checkpoint::metrics::MetricsSettings {
            latency_granularity: mm2_checkpoint::metrics::LatencyGranularity::Partition,
            mm2_names: false,
            status_interval: None,
            ..mm2_checkpoint::metrics::MetricsSettings::default()
        },
    );
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
    let started = std::time::Instant::now();
    let text = metrics.encode_prometheus().unwrap_or_default();
    let whole_wall = started.elapsed();
    report(
        "metrics: one exposition built whole (transient)",
        s,
        entries,
    );
    println!(
        "  (exposition {} bytes of text, {:.0} ms)",
        text.len(),
        whole_wall.as_secs_f64() * 1e3
    );

    // The same exposition as the `/metrics` endpoint sends it: in pieces
    // through a channel of one slot, the encoding on its own thread; the
    // highest live heap seen while the pieces arrive.
    let s = snap();
    let started = std::time::Instant::now();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(1);
    let encoder = {
        let metrics = metrics.clone();
        std::thread::spawn(move || metrics.stream_exposition(false, tx))
    };
    let (mut streamed, mut pieces, mut peak) = (0usize, 0usize, 0isize);
    while let Some(piece) = rx.blocking_recv() {
        peak = peak.max(snap().bytes - s.bytes);
        streamed += piece.len();
        pieces += 1;
    }
    let whole = encoder.join().is_ok_and(|r| r.is_ok());
    println!(
        "metrics: one streamed /metrics answer (transient): {streamed} bytes in {pieces} pieces, \
         at most {peak} B live at once, {:.0} ms (whole: {whole}, same length: {})",
        started.elapsed().as_secs_f64() * 1e3,
        streamed == text.len()
    );

    drop((cps, records, text));

    // A steady round: the same answers again, every checkpoint already stored.
    let s = snap();
    let cpu = thread_cpu();
    let steady = round.plan_counted(&syncs, &store, &fetched);
    let steady_cpu = thread_cpu() - cpu;
    report(
        "round: steady plan, as the driver asks (transient)",
        s,
        entries,
    );
    assert_eq!(steady.counts.not_more_recent, entries as u64);
    assert!(steady.checkpoints.is_empty(), "nothing moved");
    drop((steady, fetched));

    let kept = snap();
    println!(
        "\nkept after the round (whole process): {} B live in {} allocations",
        kept.bytes, kept.blocks
    );
    println!(
        "core CPU: emitting round plan {:.1} ms, steady round plan {:.1} ms",
        emitting_cpu.as_secs_f64() * 1e3,
        steady_cpu.as_secs_f64() * 1e3
    );
    println!(
        "core CPU: follower marking the groups of new syncs: a partition without commits {:.1} ms, 1 partition {:.1} ms, all {} partitions {:.1} ms",
        none_synced_cpu.as_secs_f64() * 1e3,
        one_synced_cpu.as_secs_f64() * 1e3,
        tps.len(),
        all_synced_cpu.as_secs_f64() * 1e3
    );
    drop((store, metrics, view, syncs, group_list));
}
