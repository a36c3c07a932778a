//! What precise translation costs: memory per held offset sync, the time to load
//! syncs, and the time to translate, beside MM2's precision
//! (docs/translation.md, "Precise translation").
//!
//! For each shape (partitions × syncs per partition, one sync every 100 offsets of
//! an identity mirror) it builds an offset-sync store in both precisions, each in a
//! fresh process (so freed memory of an earlier store is not reused), and prints the
//! growth of the resident set (`/proc/self/statm`), the live heap bytes (a counting
//! allocator), the store's own estimate, the load time per sync and the time per
//! translation for a group 10 syncs behind the head and one at the oldest sync.
//!
//! ```sh
//! cargo run --release -p mm2-checkpoint --example precise_memory [PARTITIONS SYNCS mm2|precise]
//! ```

use std::alloc::System;
use std::hint::black_box;
use std::time::Instant;

use mm2_checkpoint::core::{InitMode, OffsetSyncStore, Precision, SyncHistory};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

/// Counts every allocation (the workspace forbids `unsafe`).
#[global_allocator]
static ALLOC: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const SPACING: i64 = 100;

/// Resident set size in bytes (Linux, 4 KiB pages).
fn rss() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn live_heap() -> isize {
    let s = ALLOC.stats();
    s.bytes_allocated as isize - s.bytes_deallocated as isize
}

fn topic_names(partitions: usize) -> Vec<String> {
    // 100 partitions per topic, like the sync_store bench.
    (0..partitions.div_ceil(100))
        .map(|t| format!("source-topic-{t}"))
        .collect()
}

fn measure(partitions: usize, syncs: usize, precision: Precision) {
    let topics = topic_names(partitions);
    let (rss0, heap0) = (rss(), live_heap());
    let began = Instant::now();
    let mut store = OffsetSyncStore::with_precision(InitMode::LoadAllHistory, precision);
    // Round-robin over the partitions, as syncs arrive on the offset-syncs topic.
    for n in 0..syncs as i64 {
        for p in 0..partitions {
            let topic = &topics[p / 100];
            store.apply(topic, (p % 100) as i32, n * SPACING, n * SPACING);
        }
    }
    store.finish_initial_read();
    let load = began.elapsed();
    let (rss1, heap1) = (rss(), live_heap());
    let held = store.precise_syncs();
    let head = (syncs as i64 - 1) * SPACING;
    let translate = |u: i64| {
        let rounds = (2_000_000 / partitions).max(1);
        let began = Instant::now();
        for _ in 0..rounds {
            for p in 0..partitions {
                let topic = &topics[p / 100];
                black_box(store.translate_offset(topic, (p % 100) as i32, black_box(u)));
            }
        }
        began.elapsed().as_nanos() as f64 / (rounds * partitions) as f64
    };
    let near = translate(head - 10 * SPACING + 50);
    let oldest = translate(50);
    let name = match precision {
        Precision::Mm2 => "mm2".to_string(),
        Precision::Precise { .. } => "precise".to_string(),
    };
    let total = (partitions * syncs) as f64;
    println!(
        "{name:>7} {partitions:>6} x {syncs:>9}: RSS +{:>11} B, heap +{:>11} B, estimate {:>11} B; \
         held {held:>10} ({:>5.1} B RSS / {:>5.1} B heap per sync); load {:>6.0} ns/sync; \
         translate {near:>5.0} ns near head, {oldest:>5.0} ns at the oldest sync",
        rss1.saturating_sub(rss0),
        heap1 - heap0,
        store.approx_heap_bytes(),
        rss1.saturating_sub(rss0) as f64 / total,
        (heap1 - heap0) as f64 / total,
        load.as_nanos() as f64 / total,
    );
    drop(store);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [partitions, syncs, precision] = &args[..] {
        let (Ok(partitions), Ok(syncs)) = (partitions.parse(), syncs.parse()) else {
            eprintln!("usage: precise_memory [PARTITIONS SYNCS mm2|precise]");
            std::process::exit(2);
        };
        let precision = match precision.as_str() {
            "precise" => Precision::Precise {
                max_syncs: 100_000_000,
            },
            _ => Precision::Mm2,
        };
        measure(partitions, syncs, precision);
        return;
    }
    println!(
        "per partition: {} B of MM2 slots, {} B of precise history header (plus 8 B a sync)",
        OffsetSyncStore::history_bytes(),
        std::mem::size_of::<SyncHistory>()
    );
    let me = std::env::current_exe().expect("the example's path");
    for (partitions, syncs) in [
        (1, 1_000_000),
        (1_000, 1_000),
        (10_000, 100),
        (1_000, 10_000),
        (10_000, 1_000),
    ] {
        for precision in ["mm2", "precise"] {
            let status = std::process::Command::new(&me)
                .args([partitions.to_string(), syncs.to_string(), precision.into()])
                .status()
                .expect("run one measurement");
            assert!(
                status.success(),
                "{partitions} x {syncs} {precision}: {status}"
            );
        }
    }
}
