//! Fuzz target `record_batch`: arbitrary bytes into `kafka_lite::records::decode_batches`.
//!
//! Each input is decoded twice: as it is (exercising the framing, partial-batch and
//! header checks), and with its batch length and CRC-32C fixed up so that random
//! mutations get past the checksum and reach the decompressors and the record parser.
//! Whatever the bytes, decoding must return (never panic or abort), and what it returns
//! must be consistent with the batch headers.
#![no_main]

use bytes::{Bytes, BytesMut};
use kafka_lite::records::decode_batches;
use libfuzzer_sys::fuzz_target;

const BATCH_HEADER_LEN: usize = 61;

fuzz_target!(|data: &[u8]| {
    check(Bytes::copy_from_slice(data));
    if data.len() >= BATCH_HEADER_LEN {
        let mut fixed = BytesMut::from(data);
        let length = (fixed.len() - 12) as i32;
        fixed[8..12].copy_from_slice(&length.to_be_bytes());
        fixed[16] = 2; // magic
        let crc = crc32c::crc32c(&fixed[21..]);
        fixed[17..21].copy_from_slice(&crc.to_be_bytes());
        check(fixed.freeze());
    }
});

fn check(input: Bytes) {
    let mut bytes = input.clone();
    let Ok(batches) = decode_batches(&mut bytes) else {
        return;
    };
    assert!(bytes.len() <= input.len());
    assert!(batches.is_empty() || bytes.len() < input.len());
    for batch in &batches {
        assert!(batch.base_offset <= batch.last_offset);
        for record in &batch.records {
            assert!((batch.base_offset..=batch.last_offset).contains(&record.offset));
        }
    }
}
