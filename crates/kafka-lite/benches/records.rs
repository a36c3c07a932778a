//! Encode and decode throughput of one record batch per codec.
//!
//! The batch is 1,000 records with a 10-byte key and a ~100-byte value of
//! semi-repetitive text (JSON-like, as MM2's topics carry), so that every codec has
//! something to find. Throughput is counted in *uncompressed* record bytes (the sum of
//! key and value lengths), so the numbers compare codecs on the same work.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_main};
use kafka_lite::records::{Codec, ProducerRecord, decode_batches, encode_batch};

const RECORDS: usize = 1_000;

fn batch_records() -> Vec<ProducerRecord> {
    (0..RECORDS)
        .map(|i| {
            let key = format!("key-{i:06}");
            let value = format!(
                "{{\"group\":\"group-{}\",\"topic\":\"orders\",\"partition\":{},\"offset\":{}}}",
                i % 17,
                i % 12,
                1_000_000 + i * 31
            );
            let value = format!("{value:<100}");
            ProducerRecord {
                timestamp: 1_700_000_000_000 + i as i64,
                key: Some(Bytes::from(key)),
                value: Some(Bytes::from(value)),
                headers: vec![],
            }
        })
        .collect()
}

fn payload_bytes(records: &[ProducerRecord]) -> u64 {
    records
        .iter()
        .map(|r| r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len()))
        .sum::<usize>() as u64
}

fn codecs(c: &mut Criterion) {
    let records = batch_records();
    let bytes = payload_bytes(&records);

    let mut encode = c.benchmark_group("encode_batch");
    encode.throughput(Throughput::Bytes(bytes));
    for codec in Codec::ALL {
        encode.bench_function(codec.name(), |b| {
            b.iter(|| encode_batch(black_box(&records), codec).expect("encode"))
        });
    }
    encode.finish();

    let mut decode = c.benchmark_group("decode_batches");
    decode.throughput(Throughput::Bytes(bytes));
    for codec in Codec::ALL {
        let encoded = encode_batch(&records, codec).expect("encode");
        decode.bench_function(codec.name(), |b| {
            b.iter(|| {
                let mut input = black_box(encoded.clone());
                decode_batches(&mut input).expect("decode")
            })
        });
    }
    decode.finish();
}

// The macro generates an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::codecs);
}

criterion_main!(group::benches);
