use bytes::{Bytes, BytesMut};

use super::*;

fn sample_records() -> Vec<ProducerRecord> {
    vec![
        ProducerRecord {
            timestamp: 1_700_000_000_000,
            key: Some(Bytes::from_static(b"key-0")),
            value: Some(Bytes::from_static(b"value-0")),
            headers: vec![
                Header::new("trace", &b"abc"[..]),
                Header {
                    key: "empty".to_owned(),
                    value: None,
                },
            ],
        },
        // Null key.
        ProducerRecord {
            timestamp: 1_700_000_000_005,
            key: None,
            value: Some(Bytes::from(vec![7u8; 300])),
            headers: vec![],
        },
        // Tombstone: key with a null value.
        ProducerRecord {
            timestamp: 1_700_000_000_003,
            key: Some(Bytes::from_static(b"key-2")),
            value: None,
            headers: vec![],
        },
        // Empty (not null) key and value.
        ProducerRecord {
            timestamp: 1_700_000_000_003,
            key: Some(Bytes::new()),
            value: Some(Bytes::new()),
            headers: vec![Header::new("h", &b""[..])],
        },
    ]
}

fn decode_all(bytes: &Bytes) -> Result<Vec<DecodedBatch>, RecordsError> {
    decode_checked(&mut bytes.clone())
}

/// A record as plain values, to compare what the visitor sees with a decoded record.
type Seen = (
    i64,
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

fn seen(r: RecordRef<'_>) -> Seen {
    (
        r.offset,
        r.timestamp,
        r.key.map(<[u8]>::to_vec),
        r.value.map(<[u8]>::to_vec),
        r.headers
            .iter()
            .map(|(k, v)| (k.to_owned(), v.map(<[u8]>::to_vec)))
            .collect(),
    )
}

/// [`decode_batches`], checking on the way that [`visit_batches`] agrees with it on
/// the same bytes: the same error, or the records of the data batches in order
/// (control batches skipped), the same whole-batch bytes and next offset; and
/// that a record's [`ConsumerRecord::as_record_ref`] is what the visitor saw.
fn decode_checked(bytes: &mut Bytes) -> Result<Vec<DecodedBatch>, RecordsError> {
    let before = bytes.clone();
    let mut visited = Vec::new();
    let visit = visit_batches(&before, |r| visited.push(seen(r)));
    let decoded = decode_batches(bytes);
    match (&decoded, visit) {
        (Ok(batches), Ok(v)) => {
            let expected: Vec<Seen> = batches
                .iter()
                .filter(|b| !b.is_control)
                .flat_map(|b| b.records.iter().map(|r| seen(r.as_record_ref())))
                .collect();
            assert_eq!(visited, expected, "the visitor sees the decoded records");
            assert_eq!(v.bytes, before.len() - bytes.len(), "whole-batch bytes");
            assert_eq!(v.batches, batches.len());
            assert_eq!(v.next_offset, batches.last().map(DecodedBatch::next_offset));
        }
        (Err(e), Err(v)) => assert_eq!(e, &v, "the visitor fails with the same error"),
        (d, v) => panic!("decode_batches gave {d:?}, visit_batches {v:?}"),
    }
    decoded
}

fn assert_round_trip(codec: Codec) {
    let input = sample_records();
    let mut encoded = encode_batch(&input, codec).expect("encode");
    let batches = decode_checked(&mut encoded).expect("decode");
    assert!(encoded.is_empty(), "the whole buffer is consumed");
    assert_eq!(batches.len(), 1);
    let batch = &batches[0];
    assert_eq!(batch.codec, codec);
    assert_eq!(batch.base_offset, 0);
    assert_eq!(batch.last_offset, 3);
    assert_eq!(batch.producer_id, -1);
    assert_eq!(batch.producer_epoch, -1);
    assert_eq!(batch.base_sequence, -1);
    assert_eq!(batch.partition_leader_epoch, -1);
    assert!(!batch.is_transactional);
    assert!(!batch.is_control);
    assert_eq!(batch.timestamp_type, TimestampType::CreateTime);
    assert_eq!(batch.first_timestamp, 1_700_000_000_000);
    assert_eq!(batch.max_timestamp, 1_700_000_000_005);
    let expected: Vec<ConsumerRecord> = input
        .into_iter()
        .zip(0..)
        .map(|(r, offset)| ConsumerRecord {
            offset,
            timestamp: r.timestamp,
            key: r.key,
            value: r.value,
            headers: r.headers,
        })
        .collect();
    assert_eq!(batch.records, expected);
}

#[test]
fn round_trip_uncompressed() {
    assert_round_trip(Codec::None);
}

#[test]
fn round_trip_gzip() {
    assert_round_trip(Codec::Gzip);
}

#[test]
fn round_trip_snappy() {
    assert_round_trip(Codec::Snappy);
}

#[test]
fn round_trip_lz4() {
    assert_round_trip(Codec::Lz4);
}

#[test]
fn round_trip_zstd() {
    assert_round_trip(Codec::Zstd);
}

#[test]
fn round_trip_large_batch_spans_many_compression_blocks() {
    // 1,000 records of 200 bytes: more than one 64 KiB LZ4 block and one 32 KiB snappy block.
    let input: Vec<ProducerRecord> = (0..1000)
        .map(|i: i64| ProducerRecord {
            timestamp: 1_000 + i,
            key: Some(Bytes::from(format!("key-{i}"))),
            value: Some(Bytes::from(format!("{i:0>200}"))),
            headers: vec![],
        })
        .collect();
    for codec in Codec::ALL {
        let encoded = encode_batch(&input, codec).expect("encode");
        let batches = decode_all(&encoded).expect("decode");
        let records = &batches[0].records;
        assert_eq!(records.len(), 1000, "{codec}");
        assert_eq!(records[999].offset, 999, "{codec}");
        assert_eq!(records[999].timestamp, 1_999, "{codec}");
        assert_eq!(records[999].value, input[999].value, "{codec}");
    }
}

#[test]
fn compressed_batches_are_smaller_for_repetitive_data() {
    let input: Vec<ProducerRecord> = (0..200)
        .map(|_| ProducerRecord {
            timestamp: 5,
            key: None,
            value: Some(Bytes::from(vec![b'a'; 100])),
            headers: vec![],
        })
        .collect();
    let plain = encode_batch(&input, Codec::None).expect("encode").len();
    for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
        let compressed = encode_batch(&input, codec).expect("encode").len();
        assert!(compressed * 4 < plain, "{codec}: {compressed} vs {plain}");
    }
}

#[test]
fn encoded_header_is_a_non_idempotent_producer_batch() {
    let encoded = encode_batch(&sample_records(), Codec::Lz4).expect("encode");
    assert_eq!(read_i64(&encoded, BASE_OFFSET_AT), Some(0));
    assert_eq!(
        read_i32(&encoded, BATCH_LENGTH_AT),
        Some(encoded.len() as i32 - 12)
    );
    assert_eq!(encoded[MAGIC_AT], 2);
    assert_eq!(
        read_i16(&encoded, ATTRIBUTES_AT),
        Some(3),
        "lz4, CreateTime, no flags"
    );
    assert_eq!(read_i32(&encoded, LAST_OFFSET_DELTA_AT), Some(3));
    assert_eq!(read_i64(&encoded, PRODUCER_ID_AT), Some(-1));
    assert_eq!(read_i16(&encoded, PRODUCER_EPOCH_AT), Some(-1));
    assert_eq!(read_i32(&encoded, BASE_SEQUENCE_AT), Some(-1));
    assert_eq!(read_i32(&encoded, RECORD_COUNT_AT), Some(4));
    // LZ4 frame magic right after the header.
    assert_eq!(&encoded[61..65], &[0x04, 0x22, 0x4d, 0x18]);
}

/// An uncompressed batch written out by hand from the protocol documentation: base
/// offset 42, one record at offset 42 with key "k", value "v", no headers, timestamp
/// 1000, producer id 7 / epoch 1 / sequence 5, partition leader epoch 3. The CRC-32C
/// was computed independently (a bitwise Python CRC-32C, reflected polynomial
/// 0x82F63B78, checked against the standard "123456789" vector 0xE3069283).
const HAND_WRITTEN_BATCH: [u8; 70] = [
    0, 0, 0, 0, 0, 0, 0, 42, // base offset
    0, 0, 0, 58, // batch length
    0, 0, 0, 3, // partition leader epoch
    2, // magic
    0x22, 0x3e, 0x98, 0xd2, // crc
    0, 0, // attributes
    0, 0, 0, 0, // last offset delta
    0, 0, 0, 0, 0, 0, 0x03, 0xe8, // first timestamp
    0, 0, 0, 0, 0, 0, 0x03, 0xe8, // max timestamp
    0, 0, 0, 0, 0, 0, 0, 7, // producer id
    0, 1, // producer epoch
    0, 0, 0, 5, // base sequence
    0, 0, 0, 1, // record count
    // record: length 8, attributes, timestamp delta 0, offset delta 0,
    // key length 1 (zigzag 2), "k", value length 1, "v", 0 headers
    0x10, 0, 0, 0, 0x02, b'k', 0x02, b'v', 0,
];

#[test]
fn decodes_hand_written_batch() {
    let batches = decode_all(&Bytes::from_static(&HAND_WRITTEN_BATCH)).expect("decode");
    let batch = &batches[0];
    assert_eq!(batch.base_offset, 42);
    assert_eq!(batch.last_offset, 42);
    assert_eq!(batch.next_offset(), 43);
    assert_eq!(batch.partition_leader_epoch, 3);
    assert_eq!(batch.producer_id, 7);
    assert_eq!(batch.producer_epoch, 1);
    assert_eq!(batch.base_sequence, 5);
    assert_eq!(
        batch.records,
        vec![ConsumerRecord {
            offset: 42,
            timestamp: 1000,
            key: Some(Bytes::from_static(b"k")),
            value: Some(Bytes::from_static(b"v")),
            headers: vec![],
        }]
    );
}

/// Replaces a batch's record payload with `payload` compressed by another program,
/// setting the codec bits, the length and the CRC.
fn with_foreign_payload(codec_id: i16, payload: &[u8]) -> Bytes {
    let mut batch = BytesMut::from(&HAND_WRITTEN_BATCH[..BATCH_HEADER_LEN]);
    batch.extend_from_slice(payload);
    let length = (batch.len() - LOG_OVERHEAD) as i32;
    batch[BATCH_LENGTH_AT..BATCH_LENGTH_AT + 4].copy_from_slice(&length.to_be_bytes());
    batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&codec_id.to_be_bytes());
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    batch.freeze()
}

fn assert_foreign_payload_decodes(codec: Codec, codec_id: i16, payload: &[u8]) {
    let batches = decode_all(&with_foreign_payload(codec_id, payload)).expect("decode");
    assert_eq!(batches[0].codec, codec);
    assert_eq!(batches[0].records.len(), 1);
    assert_eq!(batches[0].records[0].key.as_deref(), Some(&b"k"[..]));
    assert_eq!(batches[0].records[0].value.as_deref(), Some(&b"v"[..]));
}

/// `printf '\x10\0\0\0\x02k\x02v\0' | gzip -9n`
const GZIP_RECORD: &[u8] = &[
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x13, 0x60, 0x60, 0x60, 0x60, 0xca,
    0x66, 0x2a, 0x63, 0x00, 0x00, 0xa3, 0x7f, 0xcf, 0xa6, 0x09, 0x00, 0x00, 0x00,
];

#[test]
fn decodes_gzip_from_the_gzip_tool() {
    assert_foreign_payload_decodes(Codec::Gzip, 1, GZIP_RECORD);
}

/// `printf '\x10\0\0\0\x02k\x02v\0' | lz4 -c` (LZ4 frame with content checksum).
const LZ4_RECORD: &[u8] = &[
    0x04, 0x22, 0x4d, 0x18, 0x64, 0x40, 0xa7, 0x09, 0x00, 0x00, 0x80, 0x10, 0x00, 0x00, 0x00, 0x02,
    0x6b, 0x02, 0x76, 0x00, 0x00, 0x00, 0x00, 0x00, 0x4a, 0xde, 0xdd, 0x54,
];

#[test]
fn decodes_lz4_from_the_lz4_tool() {
    assert_foreign_payload_decodes(Codec::Lz4, 3, LZ4_RECORD);
}

/// `printf '\x10\0\0\0\x02k\x02v\0' | zstd -c` (one frame with content checksum).
const ZSTD_RECORD: &[u8] = &[
    0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0x49, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x02, 0x6b, 0x02,
    0x76, 0x00, 0xe1, 0x47, 0x77, 0x5f,
];

#[test]
fn decodes_zstd_from_the_zstd_tool() {
    assert_foreign_payload_decodes(Codec::Zstd, 4, ZSTD_RECORD);
}

#[test]
fn decodes_concatenated_zstd_frames() {
    let mut payload = Vec::new();
    // The record's 9 bytes split over two frames.
    payload.extend(ruzstd::encoding::compress_to_vec(
        &b"\x10\0\0\0\x02k"[..],
        ruzstd::encoding::CompressionLevel::Fastest,
    ));
    payload.extend(ruzstd::encoding::compress_to_vec(
        &b"\x02v\0"[..],
        ruzstd::encoding::CompressionLevel::Fastest,
    ));
    assert_foreign_payload_decodes(Codec::Zstd, 4, &payload);
}

#[test]
fn decodes_bare_snappy_block() {
    let payload = snap::raw::Encoder::new()
        .compress_vec(b"\x10\0\0\0\x02k\x02v\0")
        .expect("snappy");
    assert_foreign_payload_decodes(Codec::Snappy, 2, &payload);
}

#[test]
fn decodes_xerial_snappy_stream_with_two_blocks() {
    let mut payload = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01".to_vec();
    for part in [&b"\x10\0\0\0\x02"[..], &b"k\x02v\0"[..]] {
        let block = snap::raw::Encoder::new()
            .compress_vec(part)
            .expect("snappy");
        payload.extend((block.len() as u32).to_be_bytes());
        payload.extend(block);
    }
    assert_foreign_payload_decodes(Codec::Snappy, 2, &payload);
}

#[test]
fn decodes_consecutive_batches_in_order() {
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&encode_batch(&sample_records(), Codec::Gzip).expect("encode"));
    buf.extend_from_slice(&HAND_WRITTEN_BATCH);
    let batches = decode_all(&buf.freeze()).expect("decode");
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0].records.len(), 4);
    assert_eq!(batches[1].base_offset, 42);
}

#[test]
fn partial_trailing_batch_is_left_in_the_buffer() {
    for codec in Codec::ALL {
        let whole = encode_batch(&sample_records(), codec).expect("encode");
        for cut in 1..whole.len() {
            let mut buf = BytesMut::from(&HAND_WRITTEN_BATCH[..]);
            buf.extend_from_slice(&whole[..cut]);
            let mut buf = buf.freeze();
            let batches = decode_checked(&mut buf).expect("partial tail is not an error");
            assert_eq!(batches.len(), 1, "{codec} cut at {cut}");
            assert_eq!(batches[0].base_offset, 42);
            assert_eq!(&buf[..], &whole[..cut], "{codec}: the partial batch stays");
        }
    }
}

#[test]
fn lone_partial_batch_decodes_to_nothing() {
    let whole = encode_batch(&sample_records(), Codec::None).expect("encode");
    let mut buf = whole.slice(..whole.len() - 1);
    assert_eq!(decode_checked(&mut buf), Ok(vec![]));
    assert_eq!(buf.len(), whole.len() - 1);
}

#[test]
fn empty_input_decodes_to_nothing() {
    assert_eq!(decode_checked(&mut Bytes::new()), Ok(vec![]));
}

/// A batch whose length field is shortened, with the CRC fixed up, so that the record
/// data itself is cut short inside a "complete" batch.
fn with_truncated_payload(whole: &Bytes, keep: usize) -> Bytes {
    let mut batch = BytesMut::from(&whole[..BATCH_HEADER_LEN + keep]);
    let length = (batch.len() - LOG_OVERHEAD) as i32;
    batch[BATCH_LENGTH_AT..BATCH_LENGTH_AT + 4].copy_from_slice(&length.to_be_bytes());
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    batch.freeze()
}

/// Cutting the compressed data short never yields different records: the batch is an
/// error, or (when only a trailer such as the LZ4 end mark is missing) the same records.
#[test]
fn truncated_record_data_is_an_error_or_the_same_records_for_every_codec() {
    for codec in Codec::ALL {
        let whole = encode_batch(&sample_records(), codec).expect("encode");
        let expected = decode_all(&whole).expect("decode").remove(0).records;
        let payload_len = whole.len() - BATCH_HEADER_LEN;
        for keep in 0..payload_len {
            match decode_all(&with_truncated_payload(&whole, keep)) {
                Err(_) => {}
                Ok(batches) => assert_eq!(
                    batches[0].records, expected,
                    "{codec}: keeping {keep} of {payload_len} payload bytes"
                ),
            }
        }
    }
}

#[test]
fn corrupted_crc_is_rejected() {
    let mut bad = BytesMut::from(&HAND_WRITTEN_BATCH[..]);
    bad[69] ^= 0x01; // flip a bit in the last record byte
    let err = decode_all(&bad.freeze()).unwrap_err();
    assert!(
        matches!(
            err,
            RecordsError::CrcMismatch {
                base_offset: 42,
                stored: 0x223e_98d2,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn other_magic_is_rejected() {
    let mut bad = BytesMut::from(&HAND_WRITTEN_BATCH[..]);
    bad[MAGIC_AT] = 1;
    assert_eq!(
        decode_all(&bad.freeze()),
        Err(RecordsError::UnsupportedMagic {
            base_offset: 42,
            magic: 1
        })
    );
}

#[test]
fn unknown_codec_id_is_rejected() {
    let bad = with_foreign_payload(5, &HAND_WRITTEN_BATCH[BATCH_HEADER_LEN..]);
    assert_eq!(
        decode_all(&bad),
        Err(RecordsError::UnknownCodecId {
            base_offset: 42,
            id: 5
        })
    );
}

#[test]
fn batch_length_shorter_than_a_header_is_rejected() {
    let mut bad = BytesMut::from(&HAND_WRITTEN_BATCH[..]);
    bad[BATCH_LENGTH_AT..BATCH_LENGTH_AT + 4].copy_from_slice(&10i32.to_be_bytes());
    assert_eq!(
        decode_all(&bad.freeze()),
        Err(RecordsError::InvalidBatchLength {
            base_offset: 42,
            length: 10
        })
    );
}

#[test]
fn negative_batch_length_is_rejected() {
    let mut bad = BytesMut::from(&HAND_WRITTEN_BATCH[..]);
    bad[BATCH_LENGTH_AT..BATCH_LENGTH_AT + 4].copy_from_slice(&(-1i32).to_be_bytes());
    assert!(matches!(
        decode_all(&bad.freeze()),
        Err(RecordsError::InvalidBatchLength { length: -1, .. })
    ));
}

/// Rewrites one header field of the hand-written batch (and its CRC when the field is
/// covered by it).
fn hand_written_with(at: usize, field: &[u8]) -> Bytes {
    let mut batch = BytesMut::from(&HAND_WRITTEN_BATCH[..]);
    batch[at..at + field.len()].copy_from_slice(field);
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    batch.freeze()
}

#[test]
fn huge_record_count_is_rejected_before_allocation() {
    let bad = hand_written_with(RECORD_COUNT_AT, &i32::MAX.to_be_bytes());
    assert!(matches!(
        decode_all(&bad),
        Err(RecordsError::InvalidRecordCount {
            count: i32::MAX,
            bytes: 9,
            ..
        })
    ));
}

#[test]
fn base_offset_near_i64_max_is_rejected() {
    let bad = hand_written_with(BASE_OFFSET_AT, &(i64::MAX - 5).to_be_bytes());
    assert!(matches!(
        decode_all(&bad),
        Err(RecordsError::InvalidOffsets { .. })
    ));
}

#[test]
fn timestamp_overflow_is_an_error_not_a_wrap() {
    let bad = hand_written_with(FIRST_TIMESTAMP_AT, &i64::MAX.to_be_bytes());
    // The record's delta is 0, so this one is fine...
    assert_eq!(
        decode_all(&bad).expect("decode")[0].records[0].timestamp,
        i64::MAX
    );
    // ...but a delta of +1 on top of i64::MAX is not.
    let mut record = HAND_WRITTEN_BATCH[BATCH_HEADER_LEN..].to_vec();
    record[2] = 0x02; // timestamp delta zigzag(1)
    let mut batch = BytesMut::from(&bad[..BATCH_HEADER_LEN]);
    batch.extend_from_slice(&record);
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    assert!(matches!(
        decode_all(&batch.freeze()),
        Err(RecordsError::InvalidRecord { .. })
    ));
}

#[test]
fn record_offset_beyond_last_offset_delta_is_rejected() {
    let mut record = HAND_WRITTEN_BATCH[BATCH_HEADER_LEN..].to_vec();
    record[3] = 0x02; // offset delta 1 while lastOffsetDelta is 0
    let bad = with_foreign_payload(0, &record);
    assert!(matches!(
        decode_all(&bad),
        Err(RecordsError::InvalidRecord {
            base_offset: 42,
            ..
        })
    ));
}

#[test]
fn log_append_time_batches_report_the_max_timestamp() {
    let bad = hand_written_with(ATTRIBUTES_AT, &ATTR_LOG_APPEND_TIME.to_be_bytes());
    let bad = {
        let mut b = BytesMut::from(&bad[..]);
        b[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&5000i64.to_be_bytes());
        let crc = crc32c::crc32c(&b[ATTRIBUTES_AT..]);
        b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        b.freeze()
    };
    let batch = &decode_all(&bad).expect("decode")[0];
    assert_eq!(batch.timestamp_type, TimestampType::LogAppendTime);
    assert_eq!(batch.records[0].timestamp, 5000);
}

#[test]
fn decompression_bomb_is_rejected() {
    let zeros = vec![0u8; MAX_DECOMPRESSED_BATCH_BYTES + 1];
    let payload = snap::raw::Encoder::new()
        .compress_vec(&zeros)
        .expect("snappy");
    assert!(matches!(
        decode_all(&with_foreign_payload(2, &payload)),
        Err(RecordsError::DecompressedTooLarge {
            codec: Codec::Snappy,
            ..
        })
    ));
    let payload = lz4_flex::frame::FrameEncoder::new(Vec::new());
    let payload = {
        let mut enc = payload;
        std::io::Write::write_all(&mut enc, &zeros).expect("lz4");
        enc.finish().expect("lz4")
    };
    assert!(matches!(
        decode_all(&with_foreign_payload(3, &payload)),
        Err(RecordsError::DecompressedTooLarge {
            codec: Codec::Lz4,
            ..
        })
    ));
}

#[test]
fn garbage_compressed_payload_is_a_decompress_error() {
    for (codec, id) in [
        (Codec::Gzip, 1),
        (Codec::Snappy, 2),
        (Codec::Lz4, 3),
        (Codec::Zstd, 4),
    ] {
        let bad = with_foreign_payload(id, b"definitely not compressed data");
        assert!(
            matches!(decode_all(&bad), Err(RecordsError::Decompress { codec: c, .. }) if c == codec),
            "{codec}"
        );
    }
}

#[test]
fn encoding_nothing_is_an_error() {
    assert_eq!(
        encode_batch(&[], Codec::None),
        Err(RecordsError::EmptyBatch)
    );
}

#[test]
fn encoding_a_negative_timestamp_is_an_error() {
    let records = [ProducerRecord {
        timestamp: -1,
        ..ProducerRecord::default()
    }];
    assert_eq!(
        encode_batch(&records, Codec::None),
        Err(RecordsError::NegativeTimestamp {
            index: 0,
            timestamp: -1
        })
    );
}

#[test]
fn encoding_a_repeated_header_key_is_an_error() {
    let records = [ProducerRecord {
        headers: vec![Header::new("a", "1"), Header::new("a", "2")],
        ..ProducerRecord::default()
    }];
    assert_eq!(
        encode_batch(&records, Codec::None),
        Err(RecordsError::DuplicateHeaderKey {
            index: 0,
            key: "a".to_owned()
        })
    );
}

#[test]
fn codec_names_match_kafka_compression_type() {
    for (name, codec) in [
        ("none", Codec::None),
        ("gzip", Codec::Gzip),
        ("snappy", Codec::Snappy),
        ("lz4", Codec::Lz4),
        ("zstd", Codec::Zstd),
    ] {
        assert_eq!(name.parse::<Codec>(), Ok(codec));
        assert_eq!(codec.to_string(), name);
    }
    assert_eq!(
        "producer".parse::<Codec>(),
        Err(UnknownCodec("producer".to_owned()))
    );
    assert!("GZIP".parse::<Codec>().is_err());
}

// ---- read_committed ----

fn batch(
    base_offset: i64,
    producer_id: i64,
    transactional: bool,
    control: Option<i16>,
) -> DecodedBatch {
    let records = match control {
        // Control record key: version 0, then the type.
        Some(kind) => vec![ConsumerRecord {
            offset: base_offset,
            timestamp: 0,
            key: Some(Bytes::from([0, 0, (kind >> 8) as u8, kind as u8].to_vec())),
            value: Some(Bytes::from_static(&[0, 0, 0, 0, 0, 0])),
            headers: vec![],
        }],
        None => vec![ConsumerRecord {
            offset: base_offset,
            timestamp: 0,
            key: None,
            value: Some(Bytes::from(format!("data@{base_offset}"))),
            headers: vec![],
        }],
    };
    DecodedBatch {
        base_offset,
        last_offset: base_offset,
        partition_leader_epoch: 0,
        producer_id,
        producer_epoch: 0,
        base_sequence: 0,
        is_transactional: transactional,
        is_control: control.is_some(),
        codec: Codec::None,
        timestamp_type: TimestampType::CreateTime,
        first_timestamp: 0,
        max_timestamp: 0,
        records,
    }
}

fn offsets(batches: &[DecodedBatch]) -> Vec<i64> {
    batches.iter().map(|b| b.base_offset).collect()
}

const ABORT: Option<i16> = Some(0);
const COMMIT: Option<i16> = Some(1);

#[test]
fn read_committed_drops_aborted_transactions_and_markers() {
    let batches = vec![
        batch(0, -1, false, None), // plain producer
        batch(1, 10, true, None),  // txn 10, aborted below
        batch(2, 20, true, None),  // txn 20, committed below
        batch(3, 10, true, None),
        batch(4, 10, true, ABORT),
        batch(5, 20, true, COMMIT),
        batch(6, 10, true, None), // a later txn of producer 10, committed
        batch(7, 10, true, COMMIT),
    ];
    let aborted = [AbortedTransaction {
        producer_id: 10,
        first_offset: 1,
    }];
    assert_eq!(offsets(&read_committed(batches, &aborted)), vec![0, 2, 6]);
}

#[test]
fn read_committed_without_aborted_transactions_drops_only_control_batches() {
    let batches = vec![
        batch(0, 10, true, None),
        batch(1, 10, true, COMMIT),
        batch(2, 11, false, None),
    ];
    assert_eq!(offsets(&read_committed(batches, &[])), vec![0, 2]);
}

#[test]
fn read_committed_applies_an_abort_only_from_its_first_offset() {
    // Producer 10 commits a transaction at 0..1, then aborts one starting at 2.
    let batches = vec![
        batch(0, 10, true, None),
        batch(1, 10, true, COMMIT),
        batch(2, 10, true, None),
        batch(3, 10, true, ABORT),
    ];
    let aborted = [AbortedTransaction {
        producer_id: 10,
        first_offset: 2,
    }];
    assert_eq!(offsets(&read_committed(batches, &aborted)), vec![0]);
}

#[test]
fn read_committed_keeps_idempotent_batches_of_an_aborting_producer_id() {
    // Non-transactional batches are never aborted, whatever the producer id.
    let batches = vec![batch(0, 10, false, None), batch(1, 10, true, ABORT)];
    let aborted = [AbortedTransaction {
        producer_id: 10,
        first_offset: 0,
    }];
    assert_eq!(offsets(&read_committed(batches, &aborted)), vec![0]);
}

#[test]
fn read_committed_accepts_aborted_list_in_any_order() {
    let batches = vec![
        batch(0, 10, true, None),
        batch(1, 20, true, None),
        batch(2, 10, true, ABORT),
        batch(3, 20, true, ABORT),
        batch(4, 30, false, None),
    ];
    let aborted = [
        AbortedTransaction {
            producer_id: 20,
            first_offset: 1,
        },
        AbortedTransaction {
            producer_id: 10,
            first_offset: 0,
        },
    ];
    assert_eq!(offsets(&read_committed(batches, &aborted)), vec![4]);
}

#[test]
fn control_type_reads_the_marker_key() {
    assert_eq!(
        batch(0, 1, true, ABORT).control_type(),
        Some(ControlRecordType::Abort)
    );
    assert_eq!(
        batch(0, 1, true, COMMIT).control_type(),
        Some(ControlRecordType::Commit)
    );
    assert_eq!(
        batch(0, 1, true, Some(9)).control_type(),
        Some(ControlRecordType::Unknown(9))
    );
    assert_eq!(batch(0, 1, true, None).control_type(), None);
}

#[test]
fn empty_batch_left_by_compaction_decodes_with_no_records() {
    // Records removed by compaction: header only, count 0, offsets 42..=44 kept.
    let mut batch = BytesMut::from(&HAND_WRITTEN_BATCH[..BATCH_HEADER_LEN]);
    batch[BATCH_LENGTH_AT..BATCH_LENGTH_AT + 4].copy_from_slice(&49i32.to_be_bytes());
    batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&4i16.to_be_bytes()); // zstd
    batch[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4].copy_from_slice(&2i32.to_be_bytes());
    batch[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&0i32.to_be_bytes());
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    let batches = decode_all(&batch.freeze()).expect("decode");
    assert_eq!(batches[0].records, vec![]);
    assert_eq!(batches[0].next_offset(), 45);
}

#[test]
fn repeated_header_keys_are_all_kept() {
    // One record: null key and value, headers a=1, a=2.
    let record = [
        0x1c, 0, 0, 0, 0x01, 0x01, 0x04, 0x02, b'a', 0x02, b'1', 0x02, b'a', 0x02, b'2',
    ];
    let batches = decode_all(&with_foreign_payload(0, &record)).expect("decode");
    assert_eq!(
        batches[0].records[0].headers,
        vec![Header::new("a", "1"), Header::new("a", "2")]
    );
}

/// Found by the `record_batch` fuzz target: kafka-protocol's decoder reserves room for
/// the declared header count up front.
#[test]
fn huge_header_count_is_rejected_before_allocation() {
    // One record: null key and value, header count i32::MAX (zigzag varint).
    let record = [0x14, 0, 0, 0, 0x01, 0x01, 0xfe, 0xff, 0xff, 0xff, 0x0f];
    let err = decode_all(&with_foreign_payload(0, &record)).unwrap_err();
    assert!(
        matches!(&err, RecordsError::InvalidRecord { reason, .. } if reason.contains("header count")),
        "{err}"
    );
}

#[test]
fn bytes_after_the_declared_records_are_rejected() {
    let mut payload = HAND_WRITTEN_BATCH[BATCH_HEADER_LEN..].to_vec();
    payload.push(0);
    assert!(matches!(
        decode_all(&with_foreign_payload(0, &payload)),
        Err(RecordsError::InvalidRecord { .. })
    ));
}

#[test]
fn record_fields_must_fill_the_declared_record_size() {
    let mut payload = HAND_WRITTEN_BATCH[BATCH_HEADER_LEN..].to_vec();
    payload[0] = 0x12; // size 9 instead of 8
    payload.push(0);
    assert!(matches!(
        decode_all(&with_foreign_payload(0, &payload)),
        Err(RecordsError::InvalidRecord { .. })
    ));
}

#[test]
fn batch_spans_reads_the_headers_of_whole_batches_only() {
    let one = encode_batch(&sample_records(), Codec::None).expect("encode");
    let two = encode_batch(&sample_records()[..2], Codec::Gzip).expect("encode");
    // The second batch follows the first at offset 4.
    let mut second = BytesMut::from(&two[..]);
    second[..8].copy_from_slice(&4i64.to_be_bytes());
    let mut all = BytesMut::from(&one[..]);
    all.extend_from_slice(&second);
    let whole = all.len();
    // A cut-off third batch is left out, as `decode_batches` leaves it.
    all.extend_from_slice(&one[..20]);
    let spans = batch_spans(&all).expect("spans");
    assert_eq!(
        spans,
        BatchSpans {
            bytes: whole,
            records: 6,
            next_offset: Some(6),
        }
    );
    assert_eq!(batch_spans(&[]).expect("empty"), BatchSpans::default());
    // A length field that cannot be a batch is an error.
    let mut bad = BytesMut::from(&one[..]);
    bad[8..12].copy_from_slice(&3i32.to_be_bytes());
    assert!(matches!(
        batch_spans(&bad),
        Err(RecordsError::InvalidBatchLength { length: 3, .. })
    ));
}

#[test]
fn decoding_into_one_vector_gives_the_same_batches_and_records_and_nothing_on_error() {
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&encode_batch(&sample_records(), Codec::Gzip).expect("encode"));
    buf.extend_from_slice(&HAND_WRITTEN_BATCH);
    buf.extend_from_slice(&encode_batch(&sample_records(), Codec::None).expect("encode"));
    let whole = buf.freeze();
    let per_batch = decode_all(&whole).expect("decode");
    let mut bytes = whole.clone();
    let mut flat = vec![];
    let batches = decode_batches_into(&mut bytes, &mut flat).expect("decode into");
    assert!(bytes.is_empty());
    assert_eq!(batches.len(), per_batch.len());
    for (into, kept) in batches.iter().zip(&per_batch) {
        assert!(into.records.is_empty());
        let mut without = kept.clone();
        without.records.clear();
        assert_eq!(*into, without);
    }
    let expected: Vec<ConsumerRecord> = per_batch.into_iter().flat_map(|b| b.records).collect();
    assert_eq!(flat, expected);
    // A corrupt last batch: the error of decode_batches, and `flat` as it was.
    let mut bad = BytesMut::from(&whole[..]);
    let last = bad.len() - 1;
    bad[last] ^= 0x01;
    let bad = bad.freeze();
    let mut flat = vec![expected[0].clone()];
    let err = decode_batches_into(&mut bad.clone(), &mut flat).expect_err("bad CRC");
    assert_eq!(err, decode_all(&bad).expect_err("bad CRC"));
    assert_eq!(flat, vec![expected[0].clone()]);
}

/// Records without headers, timestamps not decreasing: what `BatchBuilder`
/// must write byte for byte as `encode_batch_as` does.
fn builder_records() -> Vec<ProducerRecord> {
    let mut records: Vec<ProducerRecord> = (0..300i64)
        .map(|i| ProducerRecord {
            timestamp: 1_700_000_000_000 + i / 7,
            key: Some(Bytes::from(
                format!("key-{i}").repeat(1 + (i as usize % 30)),
            )),
            value: Some(Bytes::from(vec![i as u8; (i as usize * 13) % 200])),
            headers: vec![],
        })
        .collect();
    records[3].key = None;
    records[5].value = None;
    records[8].key = Some(Bytes::new());
    records
}

fn build(records: &[ProducerRecord]) -> BatchBuilder {
    let mut b = BatchBuilder::with_capacity(16);
    for r in records {
        b.push(r.timestamp, r.key.as_deref(), r.value.as_deref())
            .unwrap();
    }
    b
}

#[test]
fn batch_builder_writes_the_bytes_encode_batch_writes() {
    let records = builder_records();
    for n in [1, 2, records.len()] {
        let recs = &records[..n];
        let ours = build(recs).finish(Codec::None, None).unwrap();
        assert_eq!(
            ours,
            encode_batch(recs, Codec::None).unwrap(),
            "{n} records"
        );
        let producer = BatchProducer {
            producer_id: 4242,
            producer_epoch: 7,
            base_sequence: 99,
            transactional: true,
        };
        let ours = build(recs).finish(Codec::None, Some(producer)).unwrap();
        assert_eq!(
            ours,
            encode_batch_as(recs, Codec::None, Some(producer)).unwrap(),
            "{n} records, transactional"
        );
    }
}

#[test]
fn batch_builder_push_with_writes_what_push_writes() {
    let records = builder_records();
    let mut b = BatchBuilder::default();
    for r in &records {
        let (k, v) = (
            r.key.clone().unwrap_or_default(),
            r.value.clone().unwrap_or_default(),
        );
        b.push_with::<RecordsError>(
            r.timestamp,
            |buf| {
                buf.extend_from_slice(&k);
                Ok(())
            },
            |buf| {
                buf.extend_from_slice(&v);
                Ok(())
            },
        )
        .unwrap();
    }
    // A failing record adds nothing.
    let e = b.push_with(
        1_800_000_000_000,
        |buf| {
            buf.extend_from_slice(b"partial");
            Ok(())
        },
        |_| Err(RecordsError::EmptyBatch),
    );
    assert_eq!(e, Err(RecordsError::EmptyBatch));
    assert_eq!(b.len(), records.len());
    let same: Vec<ProducerRecord> = records
        .iter()
        .map(|r| ProducerRecord {
            key: Some(r.key.clone().unwrap_or_default()),
            value: Some(r.value.clone().unwrap_or_default()),
            ..r.clone()
        })
        .collect();
    assert_eq!(
        b.finish(Codec::None, None).unwrap(),
        encode_batch(&same, Codec::None).unwrap()
    );
}

#[test]
fn batch_builder_batches_decode_with_every_codec() {
    let records = builder_records();
    for codec in Codec::ALL {
        let mut bytes = build(&records).finish(codec, None).unwrap();
        let batches = decode_batches(&mut bytes).unwrap();
        assert_eq!(batches.len(), 1, "{codec}");
        let decoded = &batches[0].records;
        assert_eq!(decoded.len(), records.len(), "{codec}");
        for (i, (d, r)) in decoded.iter().zip(&records).enumerate() {
            assert_eq!(d.offset, i as i64, "{codec}");
            assert_eq!(d.timestamp, r.timestamp, "{codec}");
            assert_eq!(d.key, r.key, "{codec}");
            assert_eq!(d.value, r.value, "{codec}");
        }
    }
}

#[test]
fn batch_builder_refuses_what_cannot_be_a_batch() {
    assert_eq!(
        BatchBuilder::default().finish(Codec::None, None),
        Err(RecordsError::EmptyBatch)
    );
    let mut b = BatchBuilder::default();
    assert_eq!(
        b.push(-1, Some(b"k"), None),
        Err(RecordsError::NegativeTimestamp {
            index: 0,
            timestamp: -1
        })
    );
    assert!(b.is_empty());
    // A later record may carry an earlier timestamp (a negative delta), as
    // the Java producer writes it; the max timestamp is the largest.
    b.push(1_000, Some(b"a"), Some(b"1")).unwrap();
    b.push(900, Some(b"b"), Some(b"2")).unwrap();
    let mut bytes = b.finish(Codec::None, None).unwrap();
    let batch = &decode_batches(&mut bytes).unwrap()[0];
    let ts: Vec<i64> = batch.records.iter().map(|r| r.timestamp).collect();
    assert_eq!(ts, [1_000, 900]);
}
