//! Record batches written by the Java client (kafka-clients 3.9.1, `MemoryRecords`,
//! with snappy-java 1.1.10.5, lz4-java 1.8.0 and zstd-jni 1.5.6-4), printed as hex.
//! They pin decoding to what real Java producers and brokers write.

use bytes::{Bytes, BytesMut};

use super::*;

fn hex(s: &str) -> Bytes {
    let digits = s.as_bytes();
    assert!(digits.len().is_multiple_of(2));
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).expect("ascii"), 16).expect("hex"))
        .collect::<Vec<u8>>()
        .into()
}

fn assert_java_sample(hex_batch: &str, codec: Codec) {
    let batches = decode_batches(&mut hex(hex_batch)).expect("decode");
    assert_eq!(batches.len(), 1);
    let batch = &batches[0];
    assert_eq!(batch.codec, codec);
    assert_eq!((batch.base_offset, batch.last_offset), (100, 102));
    assert_eq!(batch.producer_id, -1);
    assert_eq!(batch.timestamp_type, TimestampType::CreateTime);
    assert_eq!(batch.max_timestamp, 1_700_000_000_005);
    assert_eq!(
        batch.records,
        vec![
            ConsumerRecord {
                offset: 100,
                timestamp: 1_700_000_000_000,
                key: Some(Bytes::from_static(b"key-0")),
                value: Some(Bytes::from_static(b"value-0")),
                headers: vec![
                    Header::new("trace", "abc"),
                    Header {
                        key: "empty".to_owned(),
                        value: None
                    }
                ],
            },
            ConsumerRecord {
                offset: 101,
                timestamp: 1_700_000_000_005,
                key: None,
                value: Some(Bytes::from_static(b"v1")),
                headers: vec![],
            },
            ConsumerRecord {
                offset: 102,
                timestamp: 1_700_000_000_003,
                key: Some(Bytes::from_static(b"k2")),
                value: None,
                headers: vec![],
            },
        ]
    );
}

#[test]
fn decodes_java_uncompressed_batch() {
    assert_java_sample(JAVA_NONE, Codec::None);
}

#[test]
fn decodes_java_gzip_batch() {
    assert_java_sample(JAVA_GZIP, Codec::Gzip);
}

#[test]
fn decodes_java_snappy_batch() {
    assert_java_sample(JAVA_SNAPPY, Codec::Snappy);
}

#[test]
fn decodes_java_lz4_batch() {
    assert_java_sample(JAVA_LZ4, Codec::Lz4);
}

#[test]
fn decodes_java_zstd_batch() {
    assert_java_sample(JAVA_ZSTD, Codec::Zstd);
}

/// Java writes the same uncompressed bytes as we do for the same records, apart from the
/// base offset (Java's `MemoryRecords` was given 100; producers send 0).
#[test]
fn uncompressed_encoding_matches_java_byte_for_byte() {
    let records: Vec<ProducerRecord> = decode_batches(&mut hex(JAVA_NONE)).expect("decode")[0]
        .records
        .iter()
        .map(|r| ProducerRecord {
            timestamp: r.timestamp,
            key: r.key.clone(),
            value: r.value.clone(),
            headers: r.headers.clone(),
        })
        .collect();
    let ours = encode_batch(&records, Codec::None).expect("encode");
    let mut java = BytesMut::from(&hex(JAVA_NONE)[..]);
    java[BASE_OFFSET_AT..BASE_OFFSET_AT + 8].fill(0);
    assert_eq!(ours, java.freeze());
}

fn java_transaction_log() -> Vec<DecodedBatch> {
    let mut log = BytesMut::new();
    for part in [
        JAVA_TXN_DATA_200,
        JAVA_TXN_ABORT_201,
        JAVA_TXN_DATA_202,
        JAVA_TXN_COMMIT_203,
        JAVA_PLAIN_204,
    ] {
        log.extend_from_slice(&hex(part));
    }
    decode_batches(&mut log.freeze()).expect("decode")
}

#[test]
fn decodes_java_transactional_and_control_batches() {
    let log = java_transaction_log();
    let flags: Vec<(i64, i64, bool, bool, Option<ControlRecordType>)> = log
        .iter()
        .map(|b| {
            (
                b.base_offset,
                b.producer_id,
                b.is_transactional,
                b.is_control,
                b.control_type(),
            )
        })
        .collect();
    assert_eq!(
        flags,
        vec![
            (200, 5000, true, false, None),
            (201, 5000, true, true, Some(ControlRecordType::Abort)),
            (202, 5000, true, false, None),
            (203, 5000, true, true, Some(ControlRecordType::Commit)),
            (204, -1, false, false, None),
        ]
    );
    assert_eq!(log[2].codec, Codec::Lz4);
    assert_eq!(log[2].base_sequence, 1);
}

#[test]
fn read_committed_on_java_transactions_keeps_committed_and_plain_records() {
    let log = java_transaction_log();
    let next_offset = log.last().map(DecodedBatch::next_offset);
    let aborted = [AbortedTransaction {
        producer_id: 5000,
        first_offset: 200,
    }];
    let values: Vec<Option<Bytes>> = read_committed(log, &aborted)
        .into_iter()
        .flat_map(|b| b.records)
        .map(|r| r.value)
        .collect();
    assert_eq!(
        values,
        vec![
            Some(Bytes::from_static(b"committed")),
            Some(Bytes::from_static(b"plain"))
        ]
    );
    assert_eq!(next_offset, Some(205));
}

const JAVA_NONE: &str = concat!(
    "000000000000006400000067ffffffff0290ce5e0a0000000000020000018bcfe568000000018bcfe56805ff",
    "ffffffffffffffffffffffffff00000003460000000a6b65792d300e76616c75652d30040a74726163650661",
    "62630a656d7074790110000a02010476310010000604046b320100",
);

const JAVA_GZIP: &str = concat!(
    "00000000000000640000007bffffffff02777a5b1d0001000000020000018bcfe568000000018bcfe56805ff",
    "ffffffffffffffffffffffffff000000031f8b08000000000000ff73636060e0ca4eadd435e02b4bcc294dd5",
    "3560e12a294a4c4e654b4c4ae64acd2d28a9641460e06262642933641060606361c9366264000010fa44f836",
    "000000",
);

const JAVA_SNAPPY: &str = concat!(
    "00000000000000640000007dffffffff029ffd5c1a0002000000020000018bcfe568000000018bcfe56805ff",
    "ffffffffffffffffffffffffff0000000382534e415050590000000001000000010000003836d4460000000a",
    "6b65792d300e76616c75652d30040a7472616365066162630a656d7074790110000a02010476310010000604",
    "046b320100",
);

const JAVA_LZ4: &str = concat!(
    "000000000000006400000076ffffffff021bc049690003000000020000018bcfe568000000018bcfe56805ff",
    "ffffffffffffffffffffffffff0000000304224d1860408236000080460000000a6b65792d300e76616c7565",
    "2d30040a7472616365066162630a656d7074790110000a02010476310010000604046b32010000000000",
);

const JAVA_ZSTD: &str = concat!(
    "000000000000006400000073ffffffff0204c752a10004000000020000018bcfe568000000018bcfe56805ff",
    "ffffffffffffffffffffffffff0000000328b52ffd0058b00100460000000a6b65792d300e76616c75652d30",
    "040a7472616365066162630a656d7074790110000a02010476310010000604046b320100010000",
);

const JAVA_TXN_DATA_200: &str = concat!(
    "00000000000000c8000000400000000002bf3d7c4c0010000000000000018bcfe56be80000018bcfe56be800",
    "00000000001388000000000000000000011c00000002610e61626f7274656400",
);

const JAVA_TXN_ABORT_201: &str = concat!(
    "00000000000000c9000000420000000002d10d8b5e0030000000000000018bcfe56be90000018bcfe56be900",
    "000000000013880000ffffffff000000012000000008000000000c00000000000000",
);

const JAVA_TXN_DATA_202: &str = concat!(
    "00000000000000ca0000005100000000026f5bdf390013000000000000018bcfe56bea0000018bcfe56bea00",
    "000000000013880000000000010000000104224d186040821100008020000000026312636f6d6d6974746564",
    "0000000000",
);

const JAVA_TXN_COMMIT_203: &str = concat!(
    "00000000000000cb000000420000000002820862100030000000000000018bcfe56beb0000018bcfe56beb00",
    "000000000013880000ffffffff000000012000000008000000010c00000000000000",
);

const JAVA_PLAIN_204: &str = concat!(
    "00000000000000cc0000003effffffff02ab9951d70000000000000000018bcfe56bec0000018bcfe56becff",
    "ffffffffffffffffffffffffff000000011800000002700a706c61696e00",
);
