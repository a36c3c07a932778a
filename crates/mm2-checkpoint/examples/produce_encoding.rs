//! Allocations and CPU of encoding a first round's checkpoints into produce
//! batches, the driver's way before and after checkpoints were written straight
//! into the produce batch (docs/benchmarks.md, "Measurements behind the
//! design"): before, each checkpoint's key and value in a
//! `Vec` of their own (`OutRecord`), copied into `Bytes` (`ProducerRecord`) and
//! encoded by kafka-protocol's batch encoder; after, written straight into one
//! `BatchBuilder` per chunk. Both give the same bytes (checked here).
//!
//! ```sh
//! cargo run --release -p mm2-checkpoint --example produce_encoding [GROUPS] [PARTITIONS]
//! ```

use std::alloc::System;
use std::time::Duration;

use bytes::Bytes;
use kafka_lite::records::{BatchBuilder, Codec, ProducerRecord, encode_batch};
use mm2_checkpoint::core::format::{Checkpoint, CheckpointKey};
use mm2_checkpoint::core::types::TopicPartition;
use mm2_checkpoint::driver::OutRecord;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

/// Counts every allocation (the workspace forbids `unsafe`, so the counting
/// wrapper comes from `stats_alloc`).
#[global_allocator]
static ALLOC: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The driver's chunk: 8,000 records (its 512 KiB bound is not reached at
/// these name lengths).
const CHUNK: usize = 8_000;

/// CPU time this thread has used so far (`/proc/thread-self/schedstat`).
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

fn allocations() -> usize {
    ALLOC.stats().allocations
}

fn before(chunk: &[Checkpoint], ts: i64) -> Bytes {
    let records: Vec<OutRecord> = chunk
        .iter()
        .map(|cp| OutRecord {
            key: cp.encode_key().unwrap(),
            value: cp.encode_value().unwrap(),
            timestamp: ts,
        })
        .collect();
    let records: Vec<ProducerRecord> = records
        .iter()
        .map(|r| ProducerRecord {
            timestamp: r.timestamp,
            key: Some(Bytes::copy_from_slice(&r.key)),
            value: Some(Bytes::copy_from_slice(&r.value)),
            headers: Vec::new(),
        })
        .collect();
    encode_batch(&records, Codec::None).unwrap()
}

fn after(chunk: &[Checkpoint], ts: i64) -> Bytes {
    let size: usize = chunk.iter().map(|cp| cp.encoded_len().unwrap() + 21).sum();
    let mut batch = BatchBuilder::with_capacity(size);
    for cp in chunk {
        batch
            .push_with::<Failure>(
                ts,
                |b| cp.encode_key_into(b).map_err(|e| Failure(e.to_string())),
                |b| cp.encode_value_into(b).map_err(|e| Failure(e.to_string())),
            )
            .unwrap();
    }
    batch.finish(Codec::None, None).unwrap()
}

/// Why a record could not be written (none is expected here).
#[derive(Debug)]
struct Failure(#[allow(dead_code)] String);

impl From<kafka_lite::records::RecordsError> for Failure {
    fn from(e: kafka_lite::records::RecordsError) -> Self {
        Failure(e.to_string())
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let groups: usize = args.next().map_or(100_000, |a| a.parse().unwrap());
    let partitions: i32 = args.next().map_or(10, |a| a.parse().unwrap());
    // The bench's name lengths: group `bench-group-<n>`, topic
    // `<source alias>.<topic>` of about 30 bytes, empty metadata.
    let cps: Vec<Checkpoint> = (0..groups)
        .flat_map(|g| {
            (0..partitions).map(move |p| Checkpoint {
                key: CheckpointKey {
                    group: format!("bench-group-{g:06}"),
                    topic_partition: TopicPartition::new("bo1796462548n100000.bench-topic", p),
                },
                upstream_offset: 1_000 + i64::from(p),
                downstream_offset: 990 + i64::from(p),
                metadata: String::new(),
            })
        })
        .collect();
    let ts = 1_796_462_548_000;
    let mut results = Vec::new();
    for (name, encode) in [
        (
            "before: Vec per key and value, Bytes copies, kafka-protocol's encoder",
            before as fn(&[Checkpoint], i64) -> Bytes,
        ),
        ("after: one BatchBuilder per chunk", after),
    ] {
        let (a, cpu) = (allocations(), thread_cpu());
        let mut bytes = 0;
        let mut batches = Vec::new();
        for chunk in cps.chunks(CHUNK) {
            let batch = encode(chunk, ts);
            bytes += batch.len();
            // Keep a few batches to compare; drop the rest as the driver does.
            if batches.len() < 3 {
                batches.push(batch);
            }
        }
        let (allocs, cpu) = (allocations() - a, thread_cpu() - cpu);
        println!(
            "{name}\n  {} checkpoints, {bytes} bytes of batches, {allocs} allocations ({:.2} per checkpoint), CPU {:.0} ms",
            cps.len(),
            allocs as f64 / cps.len() as f64,
            cpu.as_secs_f64() * 1000.0
        );
        results.push(batches);
    }
    assert_eq!(
        results[0], results[1],
        "the two ways encode different bytes"
    );
    println!("same bytes: yes");
}
