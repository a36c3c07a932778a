//! Records of Kafka's `__consumer_offsets` topic (docs/commit-follower.md section 1), decoded
//! for the commit follower.
//!
//! The group coordinator keeps its state in that topic as records whose key starts
//! with an `INT16` record type (Kafka calls it the key version):
//! * `0` and `1`: an offset commit, keyed by group, topic and partition; the value
//!   is an `OffsetCommitValue` of version 0 to 4 (4 is a flexible version: compact
//!   strings and tagged fields). A null value removes the commit (offset expiry,
//!   DeleteConsumerGroupOffsets, group deletion).
//! * `2`: a classic group's metadata, keyed by group. Only the protocol type is read
//!   (to leave out groups that are not consumer groups); a null value means the group
//!   was deleted.
//! * anything higher: records of KIP-848 consumer groups, share groups and streams
//!   groups. None of them carries a committed offset, so they are reported as
//!   [`OffsetsRecord::Other`] for counting and skipped.
//!
//! Decoding is total: any input yields a record or an [`OffsetsDecodeError`] naming
//! the part and the field. Nothing here panics or allocates more than the input holds.

use std::fmt;

use super::format::RecordPart;
use super::types::TopicPartition;

/// The highest `OffsetCommitValue` version this decoder reads.
pub const MAX_OFFSET_COMMIT_VALUE_VERSION: i16 = 4;

/// The highest `GroupMetadataValue` version this decoder reads.
pub const MAX_GROUP_METADATA_VALUE_VERSION: i16 = 4;

/// One record of `__consumer_offsets`, as far as checkpointing needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OffsetsRecord {
    /// A group's commit for one partition; `None` removes it (a tombstone).
    OffsetCommit {
        /// The group.
        group: String,
        /// The committed partition.
        topic_partition: TopicPartition,
        /// The commit, or `None` for a tombstone.
        value: Option<OffsetCommitValue>,
    },
    /// A classic group's metadata; `None` means the group was deleted.
    GroupMetadata {
        /// The group.
        group: String,
        /// What was read of the value, or `None` for a tombstone.
        value: Option<GroupMetadataValue>,
    },
    /// A record type this decoder does not need (KIP-848, share or streams groups).
    Other {
        /// The record type (key version).
        record_type: i16,
    },
}

/// The value of an offset commit record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCommitValue {
    /// The committed offset.
    pub offset: i64,
    /// The leader epoch of the commit (version 3 and later; -1 when unknown).
    pub leader_epoch: Option<i32>,
    /// The commit metadata.
    pub metadata: String,
    /// When the commit was made (ms since the epoch).
    pub commit_timestamp: i64,
    /// The explicit expiry time of version 1 records.
    pub expire_timestamp: Option<i64>,
}

/// The part of a classic group's metadata value the follower reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMetadataValue {
    /// The group's protocol type (`consumer`, `connect`, or empty for a group with
    /// no members that was only ever committed to).
    pub protocol_type: String,
    /// The group's generation.
    pub generation: i32,
}

/// Why a `__consumer_offsets` record could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OffsetsDecodeError {
    /// The record has no key (the coordinator never writes one).
    NullKey,
    /// The bytes ended before a field was complete.
    Truncated {
        /// Key or value.
        part: RecordPart,
        /// The field being read.
        field: &'static str,
        /// Bytes the field needed.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A length prefix of a non-nullable string is negative or overflows.
    BadLength {
        /// Key or value.
        part: RecordPart,
        /// The field being read.
        field: &'static str,
    },
    /// A string field is not valid UTF-8.
    InvalidUtf8 {
        /// Key or value.
        part: RecordPart,
        /// The field being read.
        field: &'static str,
    },
    /// A partition number in a key is negative.
    NegativePartition {
        /// The partition number found.
        partition: i32,
    },
    /// A value version this decoder does not know (newer than Kafka 4.1 writes).
    UnsupportedValueVersion {
        /// The record type (key version) of the record.
        record_type: i16,
        /// The value version found.
        version: i16,
    },
    /// Bytes were left over after the last field of a key or an offset commit value.
    TrailingBytes {
        /// Key or value.
        part: RecordPart,
        /// How many bytes were left.
        count: usize,
    },
}

impl fmt::Display for OffsetsDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const WHAT: &str = "__consumer_offsets record";
        match self {
            OffsetsDecodeError::NullKey => write!(f, "{WHAT} has a null key"),
            OffsetsDecodeError::Truncated {
                part,
                field,
                needed,
                remaining,
            } => write!(
                f,
                "{WHAT} {part} is truncated in field `{field}`: needed {needed} bytes, {remaining} left"
            ),
            OffsetsDecodeError::BadLength { part, field } => {
                write!(f, "{WHAT} {part} field `{field}` has an invalid length")
            }
            OffsetsDecodeError::InvalidUtf8 { part, field } => {
                write!(f, "{WHAT} {part} field `{field}` is not valid UTF-8")
            }
            OffsetsDecodeError::NegativePartition { partition } => {
                write!(f, "{WHAT} key has a negative partition {partition}")
            }
            OffsetsDecodeError::UnsupportedValueVersion {
                record_type,
                version,
            } => write!(
                f,
                "{WHAT} of type {record_type} has value version {version}, newer than this decoder reads"
            ),
            OffsetsDecodeError::TrailingBytes { part, count } => {
                write!(
                    f,
                    "{WHAT} {part} has {count} unexpected bytes after the last field"
                )
            }
        }
    }
}

impl std::error::Error for OffsetsDecodeError {}

/// Decodes one record of `__consumer_offsets` from its key and value.
pub fn decode(
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<OffsetsRecord, OffsetsDecodeError> {
    let key = key.ok_or(OffsetsDecodeError::NullKey)?;
    let mut k = Reader::new(key, RecordPart::Key);
    let record_type = k.i16("record_type")?;
    match record_type {
        0 | 1 => {
            let group = k.string("group")?;
            let topic = k.string("topic")?;
            let partition = k.i32("partition")?;
            k.finish()?;
            if partition < 0 {
                return Err(OffsetsDecodeError::NegativePartition { partition });
            }
            let value = value
                .map(|v| decode_offset_commit_value(record_type, v))
                .transpose()?;
            Ok(OffsetsRecord::OffsetCommit {
                group,
                topic_partition: TopicPartition::new(topic, partition),
                value,
            })
        }
        2 => {
            let group = k.string("group")?;
            k.finish()?;
            let value = value.map(decode_group_metadata_value).transpose()?;
            Ok(OffsetsRecord::GroupMetadata { group, value })
        }
        // Negative types are not Kafka's either; they are skipped like unknown ones
        // rather than treated as corrupt, since nothing in them is read.
        other => Ok(OffsetsRecord::Other { record_type: other }),
    }
}

/// The value of an offset commit record of type `record_type` (0 or 1, which
/// Kafka 4.1 calls `LegacyOffsetCommitValue` and `OffsetCommitValue`; type 0
/// was only ever written with value version 0, whose layout both share).
fn decode_offset_commit_value(
    record_type: i16,
    bytes: &[u8],
) -> Result<OffsetCommitValue, OffsetsDecodeError> {
    let mut v = Reader::new(bytes, RecordPart::Value);
    let version = v.i16("version")?;
    if !(0..=MAX_OFFSET_COMMIT_VALUE_VERSION).contains(&version) {
        return Err(OffsetsDecodeError::UnsupportedValueVersion {
            record_type,
            version,
        });
    }
    let flexible = version >= 4;
    let offset = v.i64("offset")?;
    let leader_epoch = if version >= 3 {
        Some(v.i32("leader_epoch")?)
    } else {
        None
    };
    let metadata = if flexible {
        v.compact_string("metadata")?
    } else {
        v.string("metadata")?
    };
    let commit_timestamp = v.i64("commit_timestamp")?;
    let expire_timestamp = if version == 1 {
        Some(v.i64("expire_timestamp")?)
    } else {
        None
    };
    if flexible {
        // Kafka 4.1 defines tag 0, the topic id (a 16-byte UUID), which 4.1.1
        // does not write yet (tests/data/consumer_offsets/); the follower needs
        // none of the tagged fields.
        v.skip_tagged_fields()?;
    }
    v.finish()?;
    Ok(OffsetCommitValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp,
        expire_timestamp,
    })
}

fn decode_group_metadata_value(bytes: &[u8]) -> Result<GroupMetadataValue, OffsetsDecodeError> {
    let mut v = Reader::new(bytes, RecordPart::Value);
    let version = v.i16("version")?;
    if !(0..=MAX_GROUP_METADATA_VALUE_VERSION).contains(&version) {
        return Err(OffsetsDecodeError::UnsupportedValueVersion {
            record_type: 2,
            version,
        });
    }
    let protocol_type = if version >= 4 {
        v.compact_string("protocol_type")?
    } else {
        v.string("protocol_type")?
    };
    let generation = v.i32("generation")?;
    // The rest (protocol, leader, members and their assignments) is not needed.
    Ok(GroupMetadataValue {
        protocol_type,
        generation,
    })
}

/// A cursor over a key or value, returning typed errors instead of panicking.
struct Reader<'a> {
    bytes: &'a [u8],
    part: RecordPart,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], part: RecordPart) -> Self {
        Reader { bytes, part }
    }

    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], OffsetsDecodeError> {
        if self.bytes.len() < n {
            return Err(OffsetsDecodeError::Truncated {
                part: self.part,
                field,
                needed: n,
                remaining: self.bytes.len(),
            });
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn array<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], OffsetsDecodeError> {
        let head = self.take(field, N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(head);
        Ok(out)
    }

    fn i16(&mut self, field: &'static str) -> Result<i16, OffsetsDecodeError> {
        self.array(field).map(i16::from_be_bytes)
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, OffsetsDecodeError> {
        self.array(field).map(i32::from_be_bytes)
    }

    fn i64(&mut self, field: &'static str) -> Result<i64, OffsetsDecodeError> {
        self.array(field).map(i64::from_be_bytes)
    }

    /// An unsigned varint of at most 5 bytes (32 bits), as Kafka writes lengths.
    fn uvarint(&mut self, field: &'static str) -> Result<u32, OffsetsDecodeError> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = self.take(field, 1)?[0];
            if i == 4 && b > 0x0f {
                return Err(self.bad_length(field));
            }
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.bad_length(field))
    }

    fn bad_length(&self, field: &'static str) -> OffsetsDecodeError {
        OffsetsDecodeError::BadLength {
            part: self.part,
            field,
        }
    }

    fn utf8(&mut self, field: &'static str, len: usize) -> Result<String, OffsetsDecodeError> {
        let raw = self.take(field, len)?;
        std::str::from_utf8(raw)
            .map(str::to_owned)
            .map_err(|_| OffsetsDecodeError::InvalidUtf8 {
                part: self.part,
                field,
            })
    }

    /// A non-nullable `STRING` (INT16 length).
    fn string(&mut self, field: &'static str) -> Result<String, OffsetsDecodeError> {
        let len = self.i16(field)?;
        let len = usize::try_from(len).map_err(|_| self.bad_length(field))?;
        self.utf8(field, len)
    }

    /// A non-nullable `COMPACT_STRING` (unsigned varint length + 1).
    fn compact_string(&mut self, field: &'static str) -> Result<String, OffsetsDecodeError> {
        let n = self.uvarint(field)?;
        let len = n.checked_sub(1).ok_or_else(|| self.bad_length(field))?;
        self.utf8(field, len as usize)
    }

    /// A tagged-field section: a count, then (tag, size, bytes) per field.
    fn skip_tagged_fields(&mut self) -> Result<(), OffsetsDecodeError> {
        let count = self.uvarint("tagged_fields")?;
        for _ in 0..count {
            self.uvarint("tagged_field_tag")?;
            let size = self.uvarint("tagged_field_size")?;
            self.take("tagged_field_data", size as usize)?;
        }
        Ok(())
    }

    fn finish(&self) -> Result<(), OffsetsDecodeError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(OffsetsDecodeError::TrailingBytes {
                part: self.part,
                count: self.bytes.len(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as i16).to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    fn commit_key(group: &str, topic: &str, partition: i32) -> Vec<u8> {
        let mut k = 1i16.to_be_bytes().to_vec();
        string(&mut k, group);
        string(&mut k, topic);
        k.extend_from_slice(&partition.to_be_bytes());
        k
    }

    fn value_v3(offset: i64, metadata: &str) -> Vec<u8> {
        let mut v = 3i16.to_be_bytes().to_vec();
        v.extend_from_slice(&offset.to_be_bytes());
        v.extend_from_slice(&7i32.to_be_bytes());
        string(&mut v, metadata);
        v.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        v
    }

    #[test]
    fn decodes_an_offset_commit_and_its_tombstone() {
        let key = commit_key("g", "orders", 3);
        let value = value_v3(42, "m");
        let rec = decode(Some(&key), Some(&value)).unwrap();
        assert_eq!(
            rec,
            OffsetsRecord::OffsetCommit {
                group: "g".into(),
                topic_partition: TopicPartition::new("orders", 3),
                value: Some(OffsetCommitValue {
                    offset: 42,
                    leader_epoch: Some(7),
                    metadata: "m".into(),
                    commit_timestamp: 1_700_000_000_000,
                    expire_timestamp: None,
                }),
            }
        );
        let tomb = decode(Some(&key), None).unwrap();
        assert!(matches!(
            tomb,
            OffsetsRecord::OffsetCommit { value: None, .. }
        ));
    }

    #[test]
    fn decodes_a_flexible_value_with_tagged_fields() {
        let mut v = 4i16.to_be_bytes().to_vec();
        v.extend_from_slice(&10i64.to_be_bytes());
        v.extend_from_slice(&(-1i32).to_be_bytes());
        v.push(3); // compact string of length 2
        v.extend_from_slice(b"hi");
        v.extend_from_slice(&5i64.to_be_bytes());
        v.extend_from_slice(&[1, 0, 2, 0xaa, 0xbb]); // one tagged field, 2 bytes
        let key = commit_key("g", "t", 0);
        let OffsetsRecord::OffsetCommit { value: Some(c), .. } =
            decode(Some(&key), Some(&v)).unwrap()
        else {
            panic!("not a commit")
        };
        assert_eq!(
            (c.offset, c.leader_epoch, c.metadata.as_str()),
            (10, Some(-1), "hi")
        );
    }

    #[test]
    fn the_topic_id_tag_of_kafka_4_1_is_skipped() {
        let mut v = 4i16.to_be_bytes().to_vec();
        v.extend_from_slice(&10i64.to_be_bytes());
        v.extend_from_slice(&(-1i32).to_be_bytes());
        v.push(1); // empty compact string
        v.extend_from_slice(&5i64.to_be_bytes());
        v.extend_from_slice(&[1, 0, 16]); // one tagged field: tag 0, 16 bytes
        v.extend_from_slice(&[0x5a; 16]);
        let key = commit_key("g", "t", 0);
        let OffsetsRecord::OffsetCommit { value: Some(c), .. } =
            decode(Some(&key), Some(&v)).unwrap()
        else {
            panic!("not a commit")
        };
        assert_eq!((c.offset, c.metadata.as_str()), (10, ""));
    }

    #[test]
    fn an_unknown_value_version_names_the_record_type_of_its_key() {
        let mut key = commit_key("g", "t", 0);
        key[..2].copy_from_slice(&0i16.to_be_bytes());
        let v = 5i16.to_be_bytes();
        assert_eq!(
            decode(Some(&key), Some(&v)),
            Err(OffsetsDecodeError::UnsupportedValueVersion {
                record_type: 0,
                version: 5
            })
        );
    }

    #[test]
    fn reads_the_protocol_type_of_group_metadata() {
        let mut k = 2i16.to_be_bytes().to_vec();
        string(&mut k, "g");
        let mut v = 3i16.to_be_bytes().to_vec();
        string(&mut v, "consumer");
        v.extend_from_slice(&5i32.to_be_bytes());
        v.extend_from_slice(b"rest is ignored");
        let rec = decode(Some(&k), Some(&v)).unwrap();
        assert_eq!(
            rec,
            OffsetsRecord::GroupMetadata {
                group: "g".into(),
                value: Some(GroupMetadataValue {
                    protocol_type: "consumer".into(),
                    generation: 5
                })
            }
        );
    }

    #[test]
    fn newer_record_types_are_other() {
        let k = 3i16.to_be_bytes();
        assert_eq!(
            decode(Some(&k), Some(b"x")).unwrap(),
            OffsetsRecord::Other { record_type: 3 }
        );
    }

    #[test]
    fn every_truncation_of_a_valid_record_is_an_error() {
        let key = commit_key("group", "topic", 1);
        let value = value_v3(1, "meta");
        for n in 0..key.len() {
            assert!(
                decode(Some(&key[..n]), Some(&value)).is_err(),
                "key cut at {n}"
            );
        }
        for n in 0..value.len() {
            assert!(
                decode(Some(&key), Some(&value[..n])).is_err(),
                "value cut at {n}"
            );
        }
    }

    #[test]
    fn rejects_bad_input_with_named_errors() {
        assert_eq!(decode(None, None), Err(OffsetsDecodeError::NullKey));
        let mut v = 9i16.to_be_bytes().to_vec();
        v.extend_from_slice(&[0; 20]);
        let key = commit_key("g", "t", 0);
        assert_eq!(
            decode(Some(&key), Some(&v)),
            Err(OffsetsDecodeError::UnsupportedValueVersion {
                record_type: 1,
                version: 9
            })
        );
        let bad = commit_key("g", "t", -2);
        assert_eq!(
            decode(Some(&bad), None),
            Err(OffsetsDecodeError::NegativePartition { partition: -2 })
        );
        let mut long = value_v3(1, "");
        long.push(0);
        assert!(matches!(
            decode(Some(&key), Some(&long)),
            Err(OffsetsDecodeError::TrailingBytes { count: 1, .. })
        ));
    }
}
