//! The record and batch types: the records to produce, and the batches, records and
//! headers that decoding returns.

use bytes::Bytes;

use super::codec::Codec;

/// How the timestamps of a batch were assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// The producer set each record's timestamp (`CreateTime`).
    CreateTime,
    /// The broker stamped the batch when appending it (`LogAppendTime`); every record
    /// then carries the batch's max timestamp, as the Java client reports it.
    LogAppendTime,
}

/// One record header. Kafka header keys are strings; values are bytes or null.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// Header key.
    pub key: String,
    /// Header value; `None` is a null value.
    pub value: Option<Bytes>,
}

impl Header {
    /// A header with a non-null value.
    pub fn new(key: impl Into<String>, value: impl Into<Bytes>) -> Header {
        Header {
            key: key.into(),
            value: Some(value.into()),
        }
    }
}

/// A record to produce. The broker assigns its offset.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProducerRecord {
    /// Creation time in milliseconds since the Unix epoch; must not be negative.
    pub timestamp: i64,
    /// Key; `None` is a null key.
    pub key: Option<Bytes>,
    /// Value; `None` is a null value (a tombstone on compacted topics).
    pub value: Option<Bytes>,
    /// Headers, in order; keys must be distinct.
    pub headers: Vec<Header>,
}

/// A record read from a Fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerRecord {
    /// The record's offset in its partition.
    pub offset: i64,
    /// The record's timestamp in milliseconds; see [`DecodedBatch::timestamp_type`].
    pub timestamp: i64,
    /// Key; `None` is a null key.
    pub key: Option<Bytes>,
    /// Value; `None` is a null value.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
}

/// One decoded record batch: its header fields and its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedBatch {
    /// Offset of the first record the batch was written with.
    pub base_offset: i64,
    /// Offset of the last record the batch was written with. Compaction may have removed
    /// records, so the records present can end earlier; the next fetch still starts after
    /// this offset.
    pub last_offset: i64,
    /// Leader epoch of the partition when the batch was appended (-1 if unknown).
    pub partition_leader_epoch: i32,
    /// Producer id (-1 for a producer that is neither idempotent nor transactional).
    pub producer_id: i64,
    /// Producer epoch (-1 when there is no producer id).
    pub producer_epoch: i16,
    /// Sequence number of the first record (-1 when there is no producer id).
    pub base_sequence: i32,
    /// Whether the batch belongs to a transaction.
    pub is_transactional: bool,
    /// Whether the batch holds control records (transaction markers), which are never
    /// application data.
    pub is_control: bool,
    /// The codec the batch was compressed with.
    pub codec: Codec,
    /// How the timestamps were assigned.
    pub timestamp_type: TimestampType,
    /// Timestamp in the batch header's `baseTimestamp` field.
    pub first_timestamp: i64,
    /// Timestamp in the batch header's `maxTimestamp` field.
    pub max_timestamp: i64,
    /// The records, in offset order.
    pub records: Vec<ConsumerRecord>,
}

/// The kind of a transaction marker (control record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// The transaction was aborted.
    Abort,
    /// The transaction was committed.
    Commit,
    /// A control record type this client does not know, with its number.
    Unknown(i16),
}

impl DecodedBatch {
    /// The offset to fetch next to continue after this batch.
    pub fn next_offset(&self) -> i64 {
        // `last_offset` was checked on decode to leave room for this addition.
        self.last_offset.saturating_add(1)
    }

    /// For a control batch, the type of its marker (read from the first record's key);
    /// `None` for a data batch or a control batch without a readable key.
    pub fn control_type(&self) -> Option<ControlRecordType> {
        if !self.is_control {
            return None;
        }
        control_type_of(self.records.first()?.key.as_deref())
    }
}

/// The marker type a control record's key holds; `None` for a key too short.
pub(super) fn control_type_of(key: Option<&[u8]>) -> Option<ControlRecordType> {
    // Key layout: version (int16), then type (int16).
    let kind = key?.get(2..4)?;
    Some(match i16::from_be_bytes([kind[0], kind[1]]) {
        0 => ControlRecordType::Abort,
        1 => ControlRecordType::Commit,
        other => ControlRecordType::Unknown(other),
    })
}
