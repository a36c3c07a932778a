//! Record formats of MM2's internal topics (docs/behaviour.md A), byte-identical to MirrorMaker 2.
//!
//! MM2 writes its offset syncs, checkpoints and heartbeats as Kafka protocol
//! `Struct`s: fixed-width big-endian integers and `INT16`-length-prefixed UTF-8
//! strings, concatenated with no padding. Encoding here produces exactly the same
//! bytes; decoding is *total*: every input, however malformed, yields either a value
//! or a [`DecodeError`] saying what was wrong and where. Nothing here panics.
//!
//! Decoding is stricter than MM2 in two places, both deliberate:
//! * a checkpoint value whose version header is not `0` is rejected with
//!   [`DecodeError::UnsupportedVersion`] (MM2 parses any version as v0, quirk H.5);
//! * bytes left over after the last field are rejected with
//!   [`DecodeError::TrailingBytes`] (MM2 silently ignores them). A record with
//!   trailing bytes was written by something that is not MM2 v0, so reading it as
//!   v0 would risk a misread value.
//!
//! Negative partition numbers in keys are rejected too: no Kafka partition is
//! negative, and a restored checkpoint for partition `-1` could later be committed to
//! a target group.

use std::fmt;

use super::types::TopicPartition;

/// The only checkpoint value version this crate reads and the one it always writes.
pub const CHECKPOINT_VERSION: i16 = 0;

/// The only heartbeat value version MM2 writes.
pub const HEARTBEAT_VERSION: i16 = 0;

/// Longest string (in UTF-8 bytes) the `STRING` type can carry.
pub const MAX_STRING_LEN: usize = i16::MAX as usize;

/// Which kind of record a decode or encode error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// An offset-sync record (docs/behaviour.md A.2).
    OffsetSync,
    /// A checkpoint record (docs/behaviour.md A.3).
    Checkpoint,
    /// A heartbeat record (docs/behaviour.md A.4).
    Heartbeat,
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordKind::OffsetSync => "offset-sync",
            RecordKind::Checkpoint => "checkpoint",
            RecordKind::Heartbeat => "heartbeat",
        })
    }
}

/// The key or the value of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordPart {
    /// The record key.
    Key,
    /// The record value.
    Value,
}

impl fmt::Display for RecordPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordPart::Key => "key",
            RecordPart::Value => "value",
        })
    }
}

/// Why a record could not be decoded. Every variant names the record kind and part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The key or value is null (a tombstone, or a record without a key).
    Null {
        /// Record kind being decoded.
        kind: RecordKind,
        /// Which part was null.
        part: RecordPart,
    },
    /// The bytes ended before a field was complete.
    Truncated {
        /// Record kind being decoded.
        kind: RecordKind,
        /// Key or value.
        part: RecordPart,
        /// The field being read.
        field: &'static str,
        /// Bytes the field needed.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A string length prefix was negative (`STRING` is not nullable).
    NegativeStringLength {
        /// Record kind being decoded.
        kind: RecordKind,
        /// Key or value.
        part: RecordPart,
        /// The field being read.
        field: &'static str,
        /// The length prefix found.
        length: i16,
    },
    /// A string field is not valid UTF-8.
    InvalidUtf8 {
        /// Record kind being decoded.
        kind: RecordKind,
        /// Key or value.
        part: RecordPart,
        /// The field being read.
        field: &'static str,
    },
    /// A partition number in a key is negative.
    NegativePartition {
        /// Record kind being decoded.
        kind: RecordKind,
        /// The partition number found.
        partition: i32,
    },
    /// The value's version header is not one this crate understands.
    UnsupportedVersion {
        /// Record kind being decoded.
        kind: RecordKind,
        /// The version found.
        version: i16,
    },
    /// Bytes were left over after the last field.
    TrailingBytes {
        /// Record kind being decoded.
        kind: RecordKind,
        /// Key or value.
        part: RecordPart,
        /// How many bytes were left.
        count: usize,
    },
}

impl DecodeError {
    /// The kind of record this error is about.
    pub fn record_kind(&self) -> RecordKind {
        match self {
            DecodeError::Null { kind, .. }
            | DecodeError::Truncated { kind, .. }
            | DecodeError::NegativeStringLength { kind, .. }
            | DecodeError::InvalidUtf8 { kind, .. }
            | DecodeError::NegativePartition { kind, .. }
            | DecodeError::UnsupportedVersion { kind, .. }
            | DecodeError::TrailingBytes { kind, .. } => *kind,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Null { kind, part } => write!(f, "{kind} record has a null {part}"),
            DecodeError::Truncated {
                kind,
                part,
                field,
                needed,
                remaining,
            } => write!(
                f,
                "{kind} record {part} is truncated in field `{field}`: needed {needed} bytes, {remaining} left"
            ),
            DecodeError::NegativeStringLength {
                kind,
                part,
                field,
                length,
            } => write!(
                f,
                "{kind} record {part} field `{field}` has a negative string length {length}"
            ),
            DecodeError::InvalidUtf8 { kind, part, field } => {
                write!(f, "{kind} record {part} field `{field}` is not valid UTF-8")
            }
            DecodeError::NegativePartition { kind, partition } => {
                write!(f, "{kind} record key has a negative partition {partition}")
            }
            DecodeError::UnsupportedVersion { kind, version } => write!(
                f,
                "{kind} record value has version {version}; only version 0 is supported"
            ),
            DecodeError::TrailingBytes { kind, part, count } => write!(
                f,
                "{kind} record {part} has {count} unexpected trailing bytes after the last field"
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why a record could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// A string is longer than [`MAX_STRING_LEN`] UTF-8 bytes.
    StringTooLong {
        /// Record kind being encoded.
        kind: RecordKind,
        /// The field being written.
        field: &'static str,
        /// Its length in bytes.
        length: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::StringTooLong {
                kind,
                field,
                length,
            } => write!(
                f,
                "{kind} record field `{field}` is {length} bytes long; the maximum is {MAX_STRING_LEN}"
            ),
        }
    }
}

impl std::error::Error for EncodeError {}

/// An offset sync (docs/behaviour.md A.2): upstream offset `upstream_offset` of the **source**
/// partition `topic_partition` was written at downstream offset `downstream_offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetSync {
    /// The source (upstream) topic-partition, as named on the source cluster.
    pub topic_partition: TopicPartition,
    /// Offset on the source cluster.
    pub upstream_offset: i64,
    /// Offset of the same record on the target cluster.
    pub downstream_offset: i64,
}

impl OffsetSync {
    /// Encodes the record key: `topic: STRING, partition: INT32`.
    pub fn encode_key(&self) -> Result<Vec<u8>, EncodeError> {
        let mut buf = Vec::with_capacity(32);
        let mut w = Writer::new(RecordKind::OffsetSync, &mut buf);
        w.string("topic", &self.topic_partition.topic)?;
        w.i32(self.topic_partition.partition);
        Ok(buf)
    }

    /// Encodes the record value: `upstreamOffset: INT64, offset: INT64` (16 bytes).
    pub fn encode_value(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(32);
        let mut w = Writer::new(RecordKind::OffsetSync, &mut buf);
        w.i64(self.upstream_offset);
        w.i64(self.downstream_offset);
        buf
    }

    /// Decodes a record's key and value.
    pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Self, DecodeError> {
        OffsetSyncRef::decode(key, value).map(|s| s.to_owned())
    }
}

/// An [`OffsetSync`] whose topic borrows the record's key: what the initial
/// read of the offset-syncs topic decodes, without allocating per record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetSyncRef<'a> {
    /// The source (upstream) topic.
    pub topic: &'a str,
    /// The source partition.
    pub partition: i32,
    /// Offset on the source cluster.
    pub upstream_offset: i64,
    /// Offset of the same record on the target cluster.
    pub downstream_offset: i64,
}

impl<'a> OffsetSyncRef<'a> {
    /// Decodes a record's key and value, with the same checks and errors as
    /// [`OffsetSync::decode`].
    pub fn decode(key: Option<&'a [u8]>, value: Option<&[u8]>) -> Result<Self, DecodeError> {
        let kind = RecordKind::OffsetSync;
        let mut k = Reader::new(kind, RecordPart::Key, non_null(kind, RecordPart::Key, key)?);
        let topic = k.str("topic")?;
        let partition = k.partition()?;
        k.finish()?;
        let mut r = Reader::new(
            kind,
            RecordPart::Value,
            non_null(kind, RecordPart::Value, value)?,
        );
        let upstream_offset = r.i64("upstreamOffset")?;
        let downstream_offset = r.i64("offset")?;
        r.finish()?;
        Ok(OffsetSyncRef {
            topic,
            partition,
            upstream_offset,
            downstream_offset,
        })
    }

    /// The owned sync.
    pub fn to_owned(&self) -> OffsetSync {
        OffsetSync {
            topic_partition: TopicPartition {
                topic: self.topic.to_owned(),
                partition: self.partition,
            },
            upstream_offset: self.upstream_offset,
            downstream_offset: self.downstream_offset,
        }
    }
}

/// The key of a checkpoint record (docs/behaviour.md A.3): a consumer group and a **downstream**
/// topic-partition. The checkpoints topic is compacted on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CheckpointKey {
    /// Consumer group id.
    pub group: String,
    /// Downstream (target-cluster) topic-partition.
    pub topic_partition: TopicPartition,
}

impl CheckpointKey {
    /// Encodes the key: `group: STRING, topic: STRING, partition: INT32`.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let mut buf = Vec::with_capacity(32);
        self.encode_into(&mut buf)?;
        Ok(buf)
    }

    /// Appends the encoded key ([`encode`](Self::encode)) to `buf`; on error
    /// `buf` is left as it was.
    pub fn encode_into(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError> {
        let at = buf.len();
        let mut w = Writer::new(RecordKind::Checkpoint, buf);
        let r = w
            .string("group", &self.group)
            .and_then(|()| w.string("topic", &self.topic_partition.topic));
        match r {
            Ok(()) => {
                w.i32(self.topic_partition.partition);
                Ok(())
            }
            Err(e) => {
                buf.truncate(at);
                Err(e)
            }
        }
    }

    /// Decodes a checkpoint key.
    pub fn decode(key: Option<&[u8]>) -> Result<Self, DecodeError> {
        let kind = RecordKind::Checkpoint;
        let mut r = Reader::new(kind, RecordPart::Key, non_null(kind, RecordPart::Key, key)?);
        let group = r.string("group")?;
        let topic = r.string("topic")?;
        let partition = r.partition()?;
        r.finish()?;
        Ok(CheckpointKey {
            group,
            topic_partition: TopicPartition { topic, partition },
        })
    }
}

/// A checkpoint (docs/behaviour.md A.3): group `key.group` committed `upstream_offset` on the
/// source partition that maps to `key.topic_partition`, which translates to
/// `downstream_offset` on the target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Group and downstream topic-partition.
    pub key: CheckpointKey,
    /// The group's committed offset on the source cluster.
    pub upstream_offset: i64,
    /// The translated offset on the target cluster.
    pub downstream_offset: i64,
    /// The group's commit metadata on the source (never absent: null becomes `""`).
    pub metadata: String,
}

impl Checkpoint {
    /// Encodes the record key (see [`CheckpointKey::encode`]).
    pub fn encode_key(&self) -> Result<Vec<u8>, EncodeError> {
        self.key.encode()
    }

    /// Encodes the record value: `version: INT16` (always 0), `upstreamOffset: INT64`,
    /// `offset: INT64`, `metadata: STRING`.
    pub fn encode_value(&self) -> Result<Vec<u8>, EncodeError> {
        let mut buf = Vec::with_capacity(32);
        self.encode_value_into(&mut buf)?;
        Ok(buf)
    }

    /// Bytes of the encoded key and value together, or the error encoding
    /// them gives, without encoding them.
    pub fn encoded_len(&self) -> Result<usize, EncodeError> {
        let string = |field: &'static str, s: &str| match i16::try_from(s.len()) {
            Ok(_) => Ok(2 + s.len()),
            Err(_) => Err(EncodeError::StringTooLong {
                kind: RecordKind::Checkpoint,
                field,
                length: s.len(),
            }),
        };
        let key = string("group", &self.key.group)?
            + string("topic", &self.key.topic_partition.topic)?
            + 4;
        let value = 2 + 8 + 8 + string("metadata", &self.metadata)?;
        Ok(key + value)
    }

    /// Appends the encoded key to `buf` ([`encode_key`](Self::encode_key),
    /// without a buffer of its own); on error `buf` is left as it was.
    pub fn encode_key_into(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError> {
        self.key.encode_into(buf)
    }

    /// Appends the encoded value to `buf` ([`encode_value`](Self::encode_value),
    /// without a buffer of its own); on error `buf` is left as it was.
    pub fn encode_value_into(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError> {
        let at = buf.len();
        let mut w = Writer::new(RecordKind::Checkpoint, buf);
        w.i16(CHECKPOINT_VERSION);
        w.i64(self.upstream_offset);
        w.i64(self.downstream_offset);
        let r = w.string("metadata", &self.metadata);
        if r.is_err() {
            buf.truncate(at);
        }
        r
    }

    /// Decodes a record's key and value. A version other than 0 is rejected
    /// ([`DecodeError::UnsupportedVersion`]) rather than read as v0 (quirk H.5).
    pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Self, DecodeError> {
        let kind = RecordKind::Checkpoint;
        let key = CheckpointKey::decode(key)?;
        let mut r = Reader::new(
            kind,
            RecordPart::Value,
            non_null(kind, RecordPart::Value, value)?,
        );
        let version = r.i16("version")?;
        if version != CHECKPOINT_VERSION {
            return Err(DecodeError::UnsupportedVersion { kind, version });
        }
        let upstream_offset = r.i64("upstreamOffset")?;
        let downstream_offset = r.i64("offset")?;
        let metadata = r.string("metadata")?;
        r.finish()?;
        Ok(Checkpoint {
            key,
            upstream_offset,
            downstream_offset,
            metadata,
        })
    }
}

/// A heartbeat (docs/behaviour.md A.4). It matters to checkpointing only through topic naming.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heartbeat {
    /// Alias of the cluster the heartbeat came from.
    pub source_alias: String,
    /// Alias of the cluster it was written to.
    pub target_alias: String,
    /// Epoch milliseconds.
    pub timestamp_ms: i64,
}

impl Heartbeat {
    /// Encodes the key: `sourceClusterAlias: STRING, targetClusterAlias: STRING`.
    pub fn encode_key(&self) -> Result<Vec<u8>, EncodeError> {
        let mut buf = Vec::with_capacity(32);
        let mut w = Writer::new(RecordKind::Heartbeat, &mut buf);
        w.string("sourceClusterAlias", &self.source_alias)?;
        w.string("targetClusterAlias", &self.target_alias)?;
        Ok(buf)
    }

    /// Encodes the value: `version: INT16` (0), `timestamp: INT64`.
    pub fn encode_value(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(32);
        let mut w = Writer::new(RecordKind::Heartbeat, &mut buf);
        w.i16(HEARTBEAT_VERSION);
        w.i64(self.timestamp_ms);
        buf
    }

    /// Decodes a heartbeat's key and value; a version other than 0 is rejected.
    pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Self, DecodeError> {
        let kind = RecordKind::Heartbeat;
        let mut r = Reader::new(kind, RecordPart::Key, non_null(kind, RecordPart::Key, key)?);
        let source_alias = r.string("sourceClusterAlias")?;
        let target_alias = r.string("targetClusterAlias")?;
        r.finish()?;
        let mut r = Reader::new(
            kind,
            RecordPart::Value,
            non_null(kind, RecordPart::Value, value)?,
        );
        let version = r.i16("version")?;
        if version != HEARTBEAT_VERSION {
            return Err(DecodeError::UnsupportedVersion { kind, version });
        }
        let timestamp_ms = r.i64("timestamp")?;
        r.finish()?;
        Ok(Heartbeat {
            source_alias,
            target_alias,
            timestamp_ms,
        })
    }
}

fn non_null(
    kind: RecordKind,
    part: RecordPart,
    bytes: Option<&[u8]>,
) -> Result<&[u8], DecodeError> {
    bytes.ok_or(DecodeError::Null { kind, part })
}

/// Appends protocol primitives to a buffer.
struct Writer<'a> {
    kind: RecordKind,
    buf: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    fn new(kind: RecordKind, buf: &'a mut Vec<u8>) -> Self {
        Writer { kind, buf }
    }

    fn i16(&mut self, v: i16) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    fn string(&mut self, field: &'static str, s: &str) -> Result<(), EncodeError> {
        let length = s.len();
        let prefix = i16::try_from(length).map_err(|_| EncodeError::StringTooLong {
            kind: self.kind,
            field,
            length,
        })?;
        self.i16(prefix);
        self.buf.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Reads protocol primitives from a byte slice, reporting errors with context.
struct Reader<'a> {
    kind: RecordKind,
    part: RecordPart,
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(kind: RecordKind, part: RecordPart, bytes: &'a [u8]) -> Self {
        Reader {
            kind,
            part,
            rest: bytes,
        }
    }

    fn take<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        match self.rest.split_first_chunk::<N>() {
            Some((head, tail)) => {
                self.rest = tail;
                Ok(*head)
            }
            None => Err(self.truncated(field, N)),
        }
    }

    fn truncated(&self, field: &'static str, needed: usize) -> DecodeError {
        DecodeError::Truncated {
            kind: self.kind,
            part: self.part,
            field,
            needed,
            remaining: self.rest.len(),
        }
    }

    fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        self.take::<2>(field).map(i16::from_be_bytes)
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        self.take::<4>(field).map(i32::from_be_bytes)
    }

    fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        self.take::<8>(field).map(i64::from_be_bytes)
    }

    fn partition(&mut self) -> Result<i32, DecodeError> {
        let partition = self.i32("partition")?;
        if partition < 0 {
            return Err(DecodeError::NegativePartition {
                kind: self.kind,
                partition,
            });
        }
        Ok(partition)
    }

    fn string(&mut self, field: &'static str) -> Result<String, DecodeError> {
        self.str(field).map(str::to_owned)
    }

    fn str(&mut self, field: &'static str) -> Result<&'a str, DecodeError> {
        let length = self.i16(field)?;
        let n = usize::try_from(length).map_err(|_| DecodeError::NegativeStringLength {
            kind: self.kind,
            part: self.part,
            field,
            length,
        })?;
        if self.rest.len() < n {
            return Err(self.truncated(field, n));
        }
        let (bytes, tail) = self.rest.split_at(n);
        let s = std::str::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8 {
            kind: self.kind,
            part: self.part,
            field,
        })?;
        self.rest = tail;
        Ok(s)
    }

    fn finish(self) -> Result<(), DecodeError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes {
                kind: self.kind,
                part: self.part,
                count: self.rest.len(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_borrowed_offset_sync_decodes_as_the_owned_one() {
        let sync = OffsetSync {
            topic_partition: TopicPartition::new("orders", 7),
            upstream_offset: 100,
            downstream_offset: 42,
        };
        let (key, value) = (sync.encode_key().unwrap(), sync.encode_value());
        let borrowed = OffsetSyncRef::decode(Some(&key), Some(&value)).unwrap();
        assert_eq!(borrowed.topic, "orders");
        assert_eq!(borrowed.partition, 7);
        assert_eq!(borrowed.to_owned(), sync);
        assert_eq!(
            OffsetSyncRef::decode(Some(&key[..key.len() - 1]), Some(&value)).unwrap_err(),
            OffsetSync::decode(Some(&key[..key.len() - 1]), Some(&value)).unwrap_err()
        );
    }

    /// Parses the hex notation of docs/behaviour.md A.6 (`00 02 | 67 31 ...`), ignoring `|` and spaces.
    fn hex(s: &str) -> Vec<u8> {
        let digits: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..digits.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap())
            .collect()
    }

    fn checkpoint(group: &str, topic: &str, p: i32, up: i64, down: i64, md: &str) -> Checkpoint {
        Checkpoint {
            key: CheckpointKey {
                group: group.into(),
                topic_partition: TopicPartition::new(topic, p),
            },
            upstream_offset: up,
            downstream_offset: down,
            metadata: md.into(),
        }
    }

    fn assert_checkpoint_bytes(cp: &Checkpoint, key: &str, value: &str) {
        let (key, value) = (hex(key), hex(value));
        assert_eq!(cp.encode_key().unwrap(), key);
        assert_eq!(cp.encode_value().unwrap(), value);
        assert_eq!(Checkpoint::decode(Some(&key), Some(&value)).unwrap(), *cp);
        // The appending forms write the same bytes after what the buffer holds.
        let mut buf = b"before".to_vec();
        cp.encode_key_into(&mut buf).unwrap();
        cp.encode_value_into(&mut buf).unwrap();
        assert_eq!(buf, [&b"before"[..], &key, &value].concat());
        assert_eq!(cp.encoded_len(), Ok(key.len() + value.len()));
    }

    #[test]
    fn a6_1_checkpoint_with_empty_metadata() {
        let cp = checkpoint("g1", "src.t", 3, 100, 42, "");
        assert_checkpoint_bytes(
            &cp,
            "00 02 67 31 | 00 05 73 72 63 2e 74 | 00 00 00 03",
            "00 00 | 00 00 00 00 00 00 00 64 | 00 00 00 00 00 00 00 2a | 00 00",
        );
    }

    #[test]
    fn a6_2_offset_sync_from_offset_sync_test() {
        let sync = OffsetSync {
            topic_partition: TopicPartition::new("topic-1", 2),
            upstream_offset: 3,
            downstream_offset: 4,
        };
        let key = hex("00 07 74 6f 70 69 63 2d 31 | 00 00 00 02");
        let value = hex("00 00 00 00 00 00 00 03 | 00 00 00 00 00 00 00 04");
        assert_eq!(sync.encode_key().unwrap(), key);
        assert_eq!(sync.encode_value(), value);
        assert_eq!(OffsetSync::decode(Some(&key), Some(&value)).unwrap(), sync);
    }

    #[test]
    fn a6_3_checkpoint_from_checkpoint_test() {
        let cp = checkpoint("group-1", "topic-2", 3, 4, 5, "metadata-6");
        assert_checkpoint_bytes(
            &cp,
            "00 07 67 72 6f 75 70 2d 31 | 00 07 74 6f 70 69 63 2d 32 | 00 00 00 03",
            "00 00 | 00 00 00 00 00 00 00 04 | 00 00 00 00 00 00 00 05 |
             00 0a 6d 65 74 61 64 61 74 61 2d 36",
        );
    }

    #[test]
    fn a6_4_heartbeat_from_heartbeat_test() {
        let hb = Heartbeat {
            source_alias: "source-1".into(),
            target_alias: "target-2".into(),
            timestamp_ms: 1_234_567_890,
        };
        let key = hex("00 08 73 6f 75 72 63 65 2d 31 | 00 08 74 61 72 67 65 74 2d 32");
        let value = hex("00 00 | 00 00 00 00 49 96 02 d2");
        assert_eq!(hb.encode_key().unwrap(), key);
        assert_eq!(hb.encode_value(), value);
        assert_eq!(Heartbeat::decode(Some(&key), Some(&value)).unwrap(), hb);
    }

    #[test]
    fn a6_5_offset_sync_t1() {
        let sync = OffsetSync {
            topic_partition: TopicPartition::new("t1", 0),
            upstream_offset: 250,
            downstream_offset: 201,
        };
        assert_eq!(sync.encode_key().unwrap(), hex("00 02 74 31 00 00 00 00"));
        assert_eq!(
            sync.encode_value(),
            hex("00 00 00 00 00 00 00 fa 00 00 00 00 00 00 00 c9")
        );
    }

    #[test]
    fn a6_6_string_length_counts_utf8_bytes_not_characters() {
        let cp = checkpoint("g", "t", 0, 1, 1, "é");
        let value = cp.encode_value().unwrap();
        assert_eq!(value[18..], hex("00 02 c3 a9"));
        let key = cp.encode_key().unwrap();
        assert_eq!(Checkpoint::decode(Some(&key), Some(&value)).unwrap(), cp);
    }

    #[test]
    fn checkpoint_value_always_written_with_version_zero() {
        let value = checkpoint("g", "t", 0, 7, 8, "m").encode_value().unwrap();
        assert_eq!(value[..2], [0, 0]);
    }

    #[test]
    fn string_longer_than_32767_bytes_is_an_encode_error() {
        let cp = checkpoint("g", "t", 0, 1, 1, &"x".repeat(32_768));
        assert_eq!(
            cp.encode_value(),
            Err(EncodeError::StringTooLong {
                kind: RecordKind::Checkpoint,
                field: "metadata",
                length: 32_768
            })
        );
        let ok = checkpoint("g", "t", 0, 1, 1, &"x".repeat(32_767));
        assert!(ok.encode_value().is_ok());
        // The appending forms fail alike and leave the buffer as it was.
        let mut buf = b"kept".to_vec();
        assert!(cp.encode_value_into(&mut buf).is_err());
        let long_topic = checkpoint("g", &"t".repeat(40_000), 0, 1, 1, "");
        assert_eq!(
            long_topic.encode_key_into(&mut buf),
            Err(EncodeError::StringTooLong {
                kind: RecordKind::Checkpoint,
                field: "topic",
                length: 40_000
            })
        );
        assert_eq!(buf, b"kept");
        assert_eq!(cp.encoded_len(), cp.encode_value().map(|v| v.len()));
        assert_eq!(
            long_topic.encoded_len().unwrap_err(),
            long_topic.encode_key().unwrap_err()
        );
    }

    #[test]
    fn null_key_or_value_is_a_typed_tombstone_error() {
        let cp = checkpoint("g", "t", 0, 1, 1, "");
        let key = cp.encode_key().unwrap();
        let value = cp.encode_value().unwrap();
        assert_eq!(
            Checkpoint::decode(Some(&key), None),
            Err(DecodeError::Null {
                kind: RecordKind::Checkpoint,
                part: RecordPart::Value
            })
        );
        assert_eq!(
            Checkpoint::decode(None, Some(&value)),
            Err(DecodeError::Null {
                kind: RecordKind::Checkpoint,
                part: RecordPart::Key
            })
        );
        assert!(matches!(
            OffsetSync::decode(Some(&hex("00 01 74 00 00 00 00")), None),
            Err(DecodeError::Null { .. })
        ));
    }

    #[test]
    fn short_value_is_truncated_error_naming_the_field() {
        let key = hex("00 01 74 00 00 00 00");
        let err = OffsetSync::decode(Some(&key), Some(&[0; 12])).unwrap_err();
        assert_eq!(
            err,
            DecodeError::Truncated {
                kind: RecordKind::OffsetSync,
                part: RecordPart::Value,
                field: "offset",
                needed: 8,
                remaining: 4
            }
        );
    }

    #[test]
    fn string_length_beyond_remaining_bytes_is_truncated_error() {
        let err = CheckpointKey::decode(Some(&hex("00 05 67 31"))).unwrap_err();
        assert_eq!(
            err,
            DecodeError::Truncated {
                kind: RecordKind::Checkpoint,
                part: RecordPart::Key,
                field: "group",
                needed: 5,
                remaining: 2
            }
        );
    }

    #[test]
    fn negative_string_length_is_rejected() {
        let err = CheckpointKey::decode(Some(&hex("ff ff 00 00 00 00 00 00"))).unwrap_err();
        assert!(matches!(
            err,
            DecodeError::NegativeStringLength {
                field: "group",
                length: -1,
                ..
            }
        ));
    }

    #[test]
    fn invalid_utf8_is_rejected() {
        let err = CheckpointKey::decode(Some(&hex("00 01 ff 00 01 74 00 00 00 00"))).unwrap_err();
        assert!(matches!(
            err,
            DecodeError::InvalidUtf8 { field: "group", .. }
        ));
    }

    #[test]
    fn negative_partition_is_rejected() {
        let err = CheckpointKey::decode(Some(&hex("00 01 67 00 01 74 ff ff ff ff"))).unwrap_err();
        assert_eq!(
            err,
            DecodeError::NegativePartition {
                kind: RecordKind::Checkpoint,
                partition: -1
            }
        );
    }

    /// Quirk H.5: MM2 reads any version as v0. We reject it, so a future v1 value is
    /// never misread.
    #[test]
    fn h5_unknown_checkpoint_version_is_rejected_not_read_as_v0() {
        let cp = checkpoint("g1", "src.t", 3, 100, 42, "");
        let key = cp.encode_key().unwrap();
        let mut value = cp.encode_value().unwrap();
        value[1] = 1; // version 1, otherwise a well-formed v0 body
        // MM2 would return `cp` here; we must not.
        assert_eq!(
            Checkpoint::decode(Some(&key), Some(&value)),
            Err(DecodeError::UnsupportedVersion {
                kind: RecordKind::Checkpoint,
                version: 1
            })
        );
    }

    /// MM2 ignores trailing bytes; we reject them (see the module docs).
    #[test]
    fn trailing_bytes_are_rejected_in_key_and_value() {
        let cp = checkpoint("g1", "src.t", 3, 100, 42, "");
        let mut key = cp.encode_key().unwrap();
        let mut value = cp.encode_value().unwrap();
        value.push(0);
        assert_eq!(
            Checkpoint::decode(Some(&key), Some(&value)),
            Err(DecodeError::TrailingBytes {
                kind: RecordKind::Checkpoint,
                part: RecordPart::Value,
                count: 1
            })
        );
        value.pop();
        key.extend_from_slice(&[1, 2]);
        assert_eq!(
            Checkpoint::decode(Some(&key), Some(&value)),
            Err(DecodeError::TrailingBytes {
                kind: RecordKind::Checkpoint,
                part: RecordPart::Key,
                count: 2
            })
        );
    }

    #[test]
    fn decode_errors_display_kind_part_and_field() {
        let err = DecodeError::Truncated {
            kind: RecordKind::Checkpoint,
            part: RecordPart::Value,
            field: "metadata",
            needed: 3,
            remaining: 1,
        };
        assert_eq!(
            err.to_string(),
            "checkpoint record value is truncated in field `metadata`: needed 3 bytes, 1 left"
        );
    }

    proptest! {
        #[test]
        fn checkpoint_round_trips(
            group in ".{0,40}", topic in "[a-zA-Z0-9._-]{1,60}", p in 0..i32::MAX,
            up in any::<i64>(), down in any::<i64>(), md in ".{0,40}",
        ) {
            let cp = checkpoint(&group, &topic, p, up, down, &md);
            let key = cp.encode_key().unwrap();
            let value = cp.encode_value().unwrap();
            prop_assert_eq!(Checkpoint::decode(Some(&key), Some(&value)).unwrap(), cp);
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(
            key in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..48)),
            value in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..48)),
        ) {
            let _ = Checkpoint::decode(key.as_deref(), value.as_deref());
            let _ = OffsetSync::decode(key.as_deref(), value.as_deref());
            let _ = Heartbeat::decode(key.as_deref(), value.as_deref());
        }
    }
}
