//! Hostile-input regression tests: element counts read from the wire must
//! not drive allocations before the bytes are known to exist.
//!
//! Before the vendored kafka-protocol patch (`vendor/kafka-protocol/PATCHES.md`)
//! each of these inputs asked the allocator for tens to hundreds of GiB and
//! the process aborted, so a regression shows up as a dead test binary.

use bytes::{Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::frame::decode_response;

/// The fuzzer's reproducer: selector byte 0 (ApiVersions v0), then the frame:
/// correlation id, error code and an `api_keys` count of 0x504ffeff.
const API_VERSIONS_ARRAY_COUNT_OOM: &[u8] =
    include_bytes!("../fuzz/regressions/api-versions-array-count-oom.bin");

#[test]
fn fuzz_reproducer_with_huge_array_count_is_a_decode_error() {
    let (&selector, frame) = API_VERSIONS_ARRAY_COUNT_OOM.split_first().unwrap();
    assert_eq!(selector, 0, "selector 0 is ApiVersions v0");
    let err = decode_response::<ApiVersionsRequest>(Bytes::copy_from_slice(frame), 0).unwrap_err();
    assert!(err.contains("Not enough bytes"), "{err}");
}

#[test]
fn compact_array_count_beyond_the_frame_is_a_decode_error() {
    // Metadata v9 (flexible): correlation id, empty header tags, throttle
    // time, then the compact `brokers` count 2^32 - 2 (varint 0xfffffffe + 1).
    let frame: &[u8] = &[0, 0, 0, 7, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f];
    let err = decode_response::<MetadataRequest>(Bytes::copy_from_slice(frame), 9).unwrap_err();
    assert!(err.contains("Not enough bytes"), "{err}");
}

/// One uncompressed v2 batch holding one record with a single header
/// `abcd` (null value).
fn batch_with_one_header() -> BytesMut {
    let mut headers = IndexMap::new();
    headers.insert(StrBytes::from_static_str("abcd"), None);
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 0,
        key: None,
        value: Some(Bytes::from_static(b"v")),
        headers,
    };
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, [&record], &options).unwrap();
    buf
}

/// Recomputes a v2 batch's CRC-32C (over attributes..end, stored at 17..21)
/// after the test has edited the batch.
fn fix_crc(batch: &mut [u8]) {
    let crc = crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// CRC-32C (Castagnoli), bitwise; test-only, for re-sealing edited batches.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn unedited_test_batch_decodes() {
    // Guards the two tests below: their only change is the count they edit.
    let mut batch = batch_with_one_header().freeze();
    let set = RecordBatchDecoder::decode(&mut batch).unwrap();
    assert_eq!(set.records.len(), 1);
    assert_eq!(set.records[0].headers.len(), 1);
}

#[test]
fn record_batch_with_huge_record_count_is_a_decode_error() {
    let mut batch = batch_with_one_header();
    // Record count: bytes 57..61 of a v2 batch.
    batch[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
    fix_crc(&mut batch);
    let err = RecordBatchDecoder::decode(&mut batch.freeze()).unwrap_err();
    assert!(err.to_string().contains("Not enough bytes"), "{err:#}");
}

#[test]
fn record_with_huge_header_count_is_a_decode_error() {
    let mut batch = batch_with_one_header();
    // The record ends with: header count 1 (zigzag varint 0x02), key length
    // 4 (0x08), "abcd", value length -1 (0x01). Overwrite the count and the
    // next four bytes with a 5-byte varint count of 2^30, keeping every
    // length field valid; decoding then runs out of bytes in the first header.
    let tail: &[u8] = &[0x02, 0x08, b'a', b'b', b'c', b'd', 0x01];
    let at = batch
        .windows(tail.len())
        .position(|w| w == tail)
        .expect("header bytes in the encoded batch");
    batch[at..at + 5].copy_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x08]);
    fix_crc(&mut batch);
    assert!(RecordBatchDecoder::decode(&mut batch.freeze()).is_err());
}

#[test]
fn snappy_batch_claiming_4_gib_is_a_decode_error() {
    let mut batch = batch_with_one_header();
    // Attributes (21..23): compression 2 = snappy. Replace the records with
    // a raw snappy block whose header varint claims 2^32 - 1 bytes, followed
    // by one literal byte.
    batch[22] |= 2;
    batch.truncate(61);
    batch.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, b'x']);
    let len = i32::try_from(batch.len() - 12).unwrap();
    batch[8..12].copy_from_slice(&len.to_be_bytes());
    fix_crc(&mut batch);
    let err = RecordBatchDecoder::decode(&mut batch.freeze()).unwrap_err();
    assert!(err.to_string().contains("snappy header claims"), "{err:#}");
}
