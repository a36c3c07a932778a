//! What keeping precise translation's history in the sync-history topic costs
//! (docs/translation.md, "Restarts and compaction"): the bytes written per sync,
//! the records written, and the time to decide a restore and put the histories
//! back into a store, for PARTITIONS × SYNCS identity syncs (one every 100
//! offsets, partitions interleaved as they arrive on the offset-syncs topic,
//! written in rounds of one sync per partition).
//!
//! ```sh
//! cargo run --release -p mm2-checkpoint --example sync_archive_cost [PARTITIONS SYNCS]
//! ```

use std::time::Instant;

use mm2_checkpoint::core::sync_archive::{ArchiveRestore, ArchiveWriter};
use mm2_checkpoint::core::{InitMode, OffsetSync, OffsetSyncStore, Precision};

const SPACING: i64 = 100;
const TOPIC: &str = "topic";

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("PARTITIONS SYNCS as integers"))
        .collect();
    let (partitions, syncs) = match args[..] {
        [p, s] => (p, s),
        _ => (1_000, 1_000),
    };
    let precision = Precision::Precise { max_syncs: syncs };
    let mut store = OffsetSyncStore::with_precision(InitMode::LoadAllHistory, precision);
    store.finish_initial_read();
    let mut writer = ArchiveWriter::new(syncs, 0);
    let mut archive: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    let (mut bytes, mut records) = (0usize, 0usize);
    let mut offset = 0i64;
    let started = Instant::now();
    for n in 0..syncs as i64 {
        for p in 0..partitions as i32 {
            let applied = store.apply(TOPIC, p, n * SPACING, n * SPACING);
            let sync = OffsetSync::new(n * SPACING, n * SPACING);
            writer.on_sync(TOPIC, p, offset, sync, applied.restarted);
            offset += 1;
        }
        // One emission round per sync of every partition.
        for (k, v) in writer.take_records(offset) {
            let key = k.encode().expect("key");
            bytes += key.len() + v.as_ref().map_or(0, Vec::len);
            records += 1;
            archive.push((key, v));
        }
    }
    let write_time = started.elapsed();
    let total = partitions * syncs;
    // The compacted archive: the last record of each key.
    let mut last = std::collections::HashMap::new();
    for (k, v) in archive {
        last.insert(k, v);
    }
    let kept_bytes: usize = last
        .iter()
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    println!(
        "{partitions} partitions x {syncs} syncs: written {records} records, {:.1} bytes per sync \
         (every round rewrites the open chunks); after compaction {} records, {:.2} bytes per sync; \
         writer {:.0} ns per sync",
        bytes as f64 / total as f64,
        last.len(),
        kept_bytes as f64 / total as f64,
        write_time.as_nanos() as f64 / total as f64
    );

    // Restart after compaction: the topic keeps each partition's newest sync.
    let started = Instant::now();
    let mut restore = ArchiveRestore::new();
    for (k, v) in &last {
        restore.record(Some(k), v.as_deref()).expect("valid record");
    }
    let read_time = started.elapsed();
    let mut fresh = OffsetSyncStore::with_precision(InitMode::LoadAllHistory, precision);
    let newest = (syncs as i64 - 1) * SPACING;
    let first = offset - partitions as i64;
    for p in 0..partitions as i32 {
        fresh.apply(TOPIC, p, newest, newest);
        restore.observe(
            first + i64::from(p),
            Some((TOPIC, p, OffsetSync::new(newest, newest))),
        );
    }
    fresh.finish_initial_read();
    let decision = restore.finish(offset, InitMode::LoadAllHistory);
    let decided = started.elapsed();
    for r in &decision.accepted {
        let held: Vec<OffsetSync> = r.syncs.iter().map(|s| s.sync).collect();
        fresh
            .restore_history(&r.topic, r.partition, &held, r.complete)
            .expect("restored");
    }
    let restored = started.elapsed();
    println!(
        "restore: {} partitions accepted, {} refused; decode {:.0} ms, decide {:.0} ms, into the store {:.0} ms ({:.0} ns per sync in all)",
        decision.accepted.len(),
        decision.refused.len(),
        read_time.as_secs_f64() * 1e3,
        (decided - read_time).as_secs_f64() * 1e3,
        (restored - decided).as_secs_f64() * 1e3,
        restored.as_nanos() as f64 / total as f64
    );
    assert_eq!(fresh.precise_syncs(), total);
}
