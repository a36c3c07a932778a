//! Feeds arbitrary keys and values to the `__consumer_offsets` decoder
//! (`core::consumer_offsets::decode`). It must return a record or an
//! `OffsetsDecodeError`, never panic, and what it returns must be consistent
//! with the bytes: a decoded key re-encodes to exactly the key given, and a
//! decoded offset commit value re-encodes to the value given (for the flexible
//! version 4, whose varints may be padded and whose tagged fields are skipped,
//! to a canonical value that decodes to the same record).
//!
//! Input layout (the seeds in `seeds/consumer_offsets/` are real records from
//! Kafka 4.1.1 and 3.9.1, written in it by the e2e vector capture):
//! a flags byte (bit 0: the key is present, bit 1: the value is present), the key
//! length as a big-endian `u16`, the key (cut short if the input ends), then the
//! rest of the input as the value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm2_checkpoint::core::consumer_offsets::{OffsetCommitValue, OffsetsRecord, decode};

fn string(out: &mut Vec<u8>, s: &str) {
    let len = i16::try_from(s.len()).expect("a decoded STRING fits an INT16 length");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// The fields of an offset commit value of `version` before its tagged fields.
fn commit_value(version: i16, c: &OffsetCommitValue) -> Vec<u8> {
    let mut out = version.to_be_bytes().to_vec();
    out.extend_from_slice(&c.offset.to_be_bytes());
    if version >= 3 {
        let epoch = c.leader_epoch.expect("versions 3+ have a leader epoch");
        out.extend_from_slice(&epoch.to_be_bytes());
    } else {
        assert_eq!(
            c.leader_epoch, None,
            "version {version} has no leader epoch"
        );
    }
    if version >= 4 {
        // COMPACT_STRING: unsigned varint of length + 1.
        let mut n = c.metadata.len() as u64 + 1;
        while n >= 0x80 {
            out.push((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
        out.extend_from_slice(c.metadata.as_bytes());
    } else {
        string(&mut out, &c.metadata);
    }
    out.extend_from_slice(&c.commit_timestamp.to_be_bytes());
    match (version, c.expire_timestamp) {
        (1, Some(expire)) => out.extend_from_slice(&expire.to_be_bytes()),
        (1, None) => panic!("version 1 has an expire timestamp"),
        (_, None) => {}
        (_, Some(_)) => panic!("version {version} has no expire timestamp"),
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let flags = data.first().copied().unwrap_or(0);
    let rest = data.get(1..).unwrap_or_default();
    let (len, rest) = match rest {
        [hi, lo, rest @ ..] => (usize::from(u16::from_be_bytes([*hi, *lo])), rest),
        _ => (0, rest),
    };
    let (key, value) = rest.split_at(len.min(rest.len()));
    let key = (flags & 1 != 0).then_some(key);
    let value = (flags & 2 != 0).then_some(value);

    let record = match decode(key, value) {
        Ok(record) => record,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    let _ = format!("{record:?}");
    let key = key.expect("a record decodes only from a key");
    let record_type = i16::from_be_bytes([key[0], key[1]]);
    let mut encoded_key = record_type.to_be_bytes().to_vec();
    match &record {
        OffsetsRecord::OffsetCommit {
            group,
            topic_partition,
            value: commit,
        } => {
            assert!(matches!(record_type, 0 | 1));
            assert!(topic_partition.partition >= 0);
            string(&mut encoded_key, group);
            string(&mut encoded_key, &topic_partition.topic);
            encoded_key.extend_from_slice(&topic_partition.partition.to_be_bytes());
            assert_eq!(encoded_key, key, "the key re-encodes");
            assert_eq!(commit.is_some(), value.is_some());
            if let (Some(c), Some(value)) = (commit, value) {
                let version = i16::from_be_bytes([value[0], value[1]]);
                let fields = commit_value(version, c);
                if version >= 4 {
                    // Varints may be padded (0x81 0x00 is 1, as Kafka reads it too)
                    // and tagged fields are skipped: the canonical encoding, with no
                    // tagged fields, must decode to the same record.
                    let mut canonical = fields;
                    canonical.push(0);
                    assert_eq!(
                        decode(Some(key), Some(&canonical)).as_ref(),
                        Ok(&record),
                        "the value re-encodes"
                    );
                } else {
                    assert_eq!(fields, value, "the value re-encodes");
                }
            }
        }
        OffsetsRecord::GroupMetadata { group, value: meta } => {
            assert_eq!(record_type, 2);
            string(&mut encoded_key, group);
            assert_eq!(encoded_key, key, "the key re-encodes");
            assert_eq!(meta.is_some(), value.is_some());
        }
        OffsetsRecord::Other { record_type: t } => {
            assert_eq!(*t, record_type);
            assert!(!matches!(t, 0..=2));
        }
    }
});
