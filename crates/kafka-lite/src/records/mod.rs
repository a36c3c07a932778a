//! Record batches (message format v2, "magic 2"): encoding for Produce requests,
//! decoding of Fetch responses, and the read_committed filter.
//!
//! Encoding is kafka-protocol's [`RecordBatchEncoder`], fed through its custom
//! compression hook so that all five codecs work without C code (see the `compression`
//! submodule). Decoding is this module's own, for robustness: kafka-protocol 0.18's
//! `RecordBatchDecoder` trusts the data it reads. It reserves memory for the declared
//! record count and for each record's declared header count (fuzzing found a 3-byte
//! header count asking for 36 GiB), adds timestamp deltas without overflow checks, and
//! keeps headers in a map, losing repeated header keys, which Kafka allows. Here:
//!
//! * each complete batch's header is checked (magic, CRC-32C, codec id, offset range,
//!   record count against the bytes present) before anything is allocated for it;
//! * decompression is bounded by [`MAX_DECOMPRESSED_BATCH_BYTES`];
//! * records are parsed with the Java client's rules (fields fill the declared sizes
//!   exactly, no bytes left over), every length and count bounded by the bytes left,
//!   so corrupt or hostile input yields a [`RecordsError`], never a panic, an abort on
//!   allocation or a wrapped number;
//! * a Fetch response may end in a partial batch (see [`decode_batches`]);
//! * [`read_committed`] drops aborted transactional records and control batches the way
//!   the Java consumer does for `isolation.level=read_committed`.
//!
//! Limitations: only magic v2 is read (brokers from 0.11 write it; Kafka 4 accepts
//! nothing else). Encoding goes through kafka-protocol's header map, so it refuses a
//! record that repeats a header key rather than drop one silently; decoding keeps
//! repeated keys.

mod compression;

use std::fmt;
use std::str::FromStr;

use bytes::{Buf, Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, Record,
    RecordBatchEncoder, RecordEncodeOptions, TimestampType as KpTimestampType,
};

use self::compression::DecompressError;

/// The most bytes one batch's records may decompress to (64 MiB).
///
/// Kafka itself sets no such bound, but a few compressed bytes can expand to gigabytes,
/// and a hostile or broken peer must not be able to exhaust memory. Kafka's default
/// `max.message.bytes` is 1 MiB of *compressed* batch, so real batches stay far below this.
pub const MAX_DECOMPRESSED_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// Bytes before a batch's `batchLength` field ends: base offset (8) + batch length (4).
const LOG_OVERHEAD: usize = 12;
/// Size of the whole v2 batch header, from the base offset to the record count.
const BATCH_HEADER_LEN: usize = 61;
/// The smallest encoded record: seven one-byte fields (length, attributes, timestamp
/// delta, offset delta, key length, value length, header count).
const MIN_RECORD_LEN: usize = 7;

// Byte positions of the v2 batch header fields.
const BASE_OFFSET_AT: usize = 0;
const BATCH_LENGTH_AT: usize = 8;
const LEADER_EPOCH_AT: usize = 12;
const MAGIC_AT: usize = 16;
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;
const FIRST_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;
const RECORD_COUNT_AT: usize = 57;

const ATTR_CODEC_MASK: i16 = 0x07;
const ATTR_LOG_APPEND_TIME: i16 = 1 << 3;
const ATTR_TRANSACTIONAL: i16 = 1 << 4;
const ATTR_CONTROL: i16 = 1 << 5;

/// A compression codec for record batches, named as in Kafka's `compression.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Codec {
    /// No compression (`none`).
    #[default]
    None,
    /// gzip (`gzip`).
    Gzip,
    /// Snappy with snappy-java's stream framing (`snappy`).
    Snappy,
    /// The LZ4 frame format (`lz4`).
    Lz4,
    /// Zstandard (`zstd`).
    Zstd,
}

impl Codec {
    /// Every codec, in the order of their ids in the batch attributes.
    pub const ALL: [Codec; 5] = [
        Codec::None,
        Codec::Gzip,
        Codec::Snappy,
        Codec::Lz4,
        Codec::Zstd,
    ];

    /// The name Kafka uses in `compression.type`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    fn from_attributes(attributes: i16) -> Option<Codec> {
        match attributes & ATTR_CODEC_MASK {
            0 => Some(Codec::None),
            1 => Some(Codec::Gzip),
            2 => Some(Codec::Snappy),
            3 => Some(Codec::Lz4),
            4 => Some(Codec::Zstd),
            _ => None,
        }
    }

    fn to_protocol(self) -> Compression {
        match self {
            Codec::None => Compression::None,
            Codec::Gzip => Compression::Gzip,
            Codec::Snappy => Compression::Snappy,
            Codec::Lz4 => Compression::Lz4,
            Codec::Zstd => Compression::Zstd,
        }
    }

    fn from_protocol(compression: Compression) -> Codec {
        match compression {
            Compression::None => Codec::None,
            Compression::Gzip => Codec::Gzip,
            Compression::Snappy => Codec::Snappy,
            Compression::Lz4 => Codec::Lz4,
            Compression::Zstd => Codec::Zstd,
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `compression.type` value that names no codec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCodec(pub String);

impl fmt::Display for UnknownCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown compression type {:?} (expected one of none, gzip, snappy, lz4, zstd)",
            self.0
        )
    }
}

impl std::error::Error for UnknownCodec {}

impl FromStr for Codec {
    type Err = UnknownCodec;

    /// Parses a Kafka `compression.type` value; like Kafka, names are lower case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Codec::ALL
            .into_iter()
            .find(|codec| codec.name() == s)
            .ok_or_else(|| UnknownCodec(s.to_owned()))
    }
}

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
        let key = self.records.first()?.key.as_ref()?;
        // Key layout: version (int16), then type (int16).
        let kind = key.get(2..4)?;
        Some(match i16::from_be_bytes([kind[0], kind[1]]) {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            other => ControlRecordType::Unknown(other),
        })
    }
}

/// An aborted transaction as listed in a Fetch response partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AbortedTransaction {
    /// The producer that aborted.
    pub producer_id: i64,
    /// The first offset the aborted transaction wrote in this partition.
    pub first_offset: i64,
}

impl From<&kafka_protocol::messages::fetch_response::AbortedTransaction> for AbortedTransaction {
    fn from(aborted: &kafka_protocol::messages::fetch_response::AbortedTransaction) -> Self {
        AbortedTransaction {
            producer_id: aborted.producer_id.0,
            first_offset: aborted.first_offset,
        }
    }
}

/// Why record batches could not be encoded or decoded.
///
/// Decoding errors name the batch by its base offset as written in the data.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordsError {
    /// `encode_batch` was given no records; Kafka has no empty produced batch.
    EmptyBatch,
    /// A record to produce has a negative timestamp.
    NegativeTimestamp {
        /// Index of the record in the input.
        index: usize,
        /// The timestamp given.
        timestamp: i64,
    },
    /// A record to produce repeats a header key, which this encoder cannot represent.
    DuplicateHeaderKey {
        /// Index of the record in the input.
        index: usize,
        /// The repeated key.
        key: String,
    },
    /// Compressing or encoding a batch failed.
    Encode {
        /// The codec in use.
        codec: Codec,
        /// What went wrong.
        reason: String,
    },
    /// A batch's length field is negative or shorter than a batch header.
    InvalidBatchLength {
        /// Base offset of the batch.
        base_offset: i64,
        /// The length field's value.
        length: i32,
    },
    /// A batch uses a message format other than v2.
    UnsupportedMagic {
        /// Base offset of the batch.
        base_offset: i64,
        /// The magic byte found.
        magic: i8,
    },
    /// A batch's CRC-32C does not match its content.
    CrcMismatch {
        /// Base offset of the batch.
        base_offset: i64,
        /// The checksum stored in the batch.
        stored: u32,
        /// The checksum of the bytes received.
        computed: u32,
    },
    /// A batch's attributes name a codec id that does not exist.
    UnknownCodecId {
        /// Base offset of the batch.
        base_offset: i64,
        /// The codec id (the low three attribute bits).
        id: i16,
    },
    /// A batch's offsets are negative or overflow.
    InvalidOffsets {
        /// Base offset of the batch.
        base_offset: i64,
        /// The `lastOffsetDelta` field.
        last_offset_delta: i32,
    },
    /// A batch claims more records than its bytes can hold.
    InvalidRecordCount {
        /// Base offset of the batch.
        base_offset: i64,
        /// The record count field.
        count: i32,
        /// Bytes of (decompressed) record data present.
        bytes: usize,
    },
    /// A batch's record data could not be decompressed.
    Decompress {
        /// Base offset of the batch.
        base_offset: i64,
        /// The batch's codec.
        codec: Codec,
        /// What the codec reported.
        reason: String,
    },
    /// A batch's record data decompresses to more than [`MAX_DECOMPRESSED_BATCH_BYTES`].
    DecompressedTooLarge {
        /// Base offset of the batch.
        base_offset: i64,
        /// The batch's codec.
        codec: Codec,
        /// The limit in bytes.
        limit: usize,
    },
    /// A record inside a batch is malformed.
    InvalidRecord {
        /// Base offset of the batch.
        base_offset: i64,
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for RecordsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordsError::EmptyBatch => f.write_str("cannot encode a record batch with no records"),
            RecordsError::NegativeTimestamp { index, timestamp } => write!(
                f,
                "record {index} to produce has negative timestamp {timestamp}"
            ),
            RecordsError::DuplicateHeaderKey { index, key } => {
                write!(f, "record {index} to produce repeats header key {key:?}")
            }
            RecordsError::Encode { codec, reason } => {
                write!(f, "encoding a {codec} record batch failed: {reason}")
            }
            RecordsError::InvalidBatchLength {
                base_offset,
                length,
            } => write!(
                f,
                "record batch at offset {base_offset}: invalid batch length {length}"
            ),
            RecordsError::UnsupportedMagic { base_offset, magic } => write!(
                f,
                "record batch at offset {base_offset}: unsupported message format (magic {magic}, only 2 is supported)"
            ),
            RecordsError::CrcMismatch {
                base_offset,
                stored,
                computed,
            } => write!(
                f,
                "record batch at offset {base_offset}: CRC-32C mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ),
            RecordsError::UnknownCodecId { base_offset, id } => write!(
                f,
                "record batch at offset {base_offset}: unknown compression codec id {id}"
            ),
            RecordsError::InvalidOffsets {
                base_offset,
                last_offset_delta,
            } => write!(
                f,
                "record batch at offset {base_offset}: invalid offsets (last offset delta {last_offset_delta})"
            ),
            RecordsError::InvalidRecordCount {
                base_offset,
                count,
                bytes,
            } => write!(
                f,
                "record batch at offset {base_offset}: record count {count} does not fit in {bytes} bytes of records"
            ),
            RecordsError::Decompress {
                base_offset,
                codec,
                reason,
            } => write!(
                f,
                "record batch at offset {base_offset}: {codec} decompression failed: {reason}"
            ),
            RecordsError::DecompressedTooLarge {
                base_offset,
                codec,
                limit,
            } => write!(
                f,
                "record batch at offset {base_offset}: {codec} data decompresses to more than {limit} bytes"
            ),
            RecordsError::InvalidRecord {
                base_offset,
                reason,
            } => write!(
                f,
                "record batch at offset {base_offset}: malformed record: {reason}"
            ),
        }
    }
}

impl std::error::Error for RecordsError {}

/// Encodes `records` as one v2 record batch compressed with `codec`, ready to be the
/// `records` field of a Produce request partition.
///
/// The batch is what a producer without idempotence writes: base offset 0 (the broker
/// assigns offsets), producer id, epoch, base sequence and partition leader epoch all -1,
/// `CreateTime` timestamps taken from the records.
pub fn encode_batch(records: &[ProducerRecord], codec: Codec) -> Result<Bytes, RecordsError> {
    if records.is_empty() {
        return Err(RecordsError::EmptyBatch);
    }
    let mut protocol_records = Vec::with_capacity(records.len());
    for (index, record) in records.iter().enumerate() {
        if record.timestamp < 0 {
            return Err(RecordsError::NegativeTimestamp {
                index,
                timestamp: record.timestamp,
            });
        }
        let mut headers = IndexMap::with_capacity(record.headers.len());
        for header in &record.headers {
            let key = StrBytes::from_string(header.key.clone());
            if headers.insert(key, header.value.clone()).is_some() {
                return Err(RecordsError::DuplicateHeaderKey {
                    index,
                    key: header.key.clone(),
                });
            }
        }
        let offset = i64::try_from(index).map_err(|_| RecordsError::Encode {
            codec,
            reason: "too many records".to_owned(),
        })?;
        protocol_records.push(Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            timestamp_type: KpTimestampType::Creation,
            offset,
            // kafka-protocol starts a new batch whenever `offset - sequence` changes and
            // writes base sequence = first record's sequence; this keeps one batch with
            // base sequence -1 (NO_SEQUENCE).
            sequence: (offset as i32).wrapping_sub(1),
            timestamp: record.timestamp,
            key: record.key.clone(),
            value: record.value.clone(),
            headers,
        });
    }

    let options = RecordEncodeOptions {
        version: 2,
        compression: codec.to_protocol(),
    };
    let compressor = |uncompressed: &mut BytesMut, out: &mut BytesMut, compression: Compression| {
        compression::compress(Codec::from_protocol(compression), uncompressed, out)
            .map_err(anyhow::Error::msg)
    };
    let mut out = BytesMut::new();
    RecordBatchEncoder::encode_with_custom_compression(
        &mut out,
        &protocol_records,
        &options,
        Some(compressor),
    )
    .map_err(|e| RecordsError::Encode {
        codec,
        reason: format!("{e:#}"),
    })?;
    Ok(out.freeze())
}

/// Decodes the record batches at the front of `bytes` (the `records` field of a Fetch
/// response partition), consuming them.
///
/// **Partial trailing batch.** A broker fills a Fetch response up to its size limit and
/// may cut the last batch short. A batch whose bytes do not all fit in `bytes` is
/// therefore not an error: decoding stops before it and leaves it in `bytes`, so after
/// the call `bytes` is empty unless such a tail was dropped. Fetching again from the last
/// batch's [`DecodedBatch::next_offset`] gets it whole. If even the *first* batch is cut
/// short the result is empty and `bytes` is unchanged: the caller must then fetch with a
/// larger size limit (brokers since 0.10.1 always return at least one whole batch, so
/// this means a broken or very old broker).
///
/// Every complete batch must be valid: a wrong CRC-32C, a magic other than 2, an unknown
/// codec, bad offsets, a record count its data cannot hold, data that fails to
/// decompress (or exceeds [`MAX_DECOMPRESSED_BATCH_BYTES`]) or a malformed record is a
/// [`RecordsError`] for the whole call. On error `bytes` is left at the failing batch.
pub fn decode_batches(bytes: &mut Bytes) -> Result<Vec<DecodedBatch>, RecordsError> {
    let mut batches = Vec::new();
    while let Some(batch_len) = complete_batch_len(bytes)? {
        let batch = decode_batch(&bytes.slice(..batch_len))?;
        let _ = bytes.split_to(batch_len);
        batches.push(batch);
    }
    Ok(batches)
}

/// Keeps the records a `read_committed` consumer returns: drops control batches and the
/// transactional batches of aborted transactions, given the partition's list of aborted
/// transactions from the same Fetch response.
///
/// This follows the Java consumer: an aborted transaction applies to the batches of its
/// producer from its `first_offset` up to that producer's abort marker. Compute the next
/// fetch offset from the batches *before* filtering (a fetch may end in batches that are
/// all dropped).
pub fn read_committed(
    batches: Vec<DecodedBatch>,
    aborted_transactions: &[AbortedTransaction],
) -> Vec<DecodedBatch> {
    let mut pending: Vec<AbortedTransaction> = aborted_transactions.to_vec();
    pending.sort_by_key(|aborted| std::cmp::Reverse(aborted.first_offset));
    let mut aborting: Vec<i64> = Vec::new();
    let mut kept = Vec::with_capacity(batches.len());
    for batch in batches {
        // Transactions that started at or before this batch's end are now in effect.
        while pending
            .last()
            .is_some_and(|aborted| aborted.first_offset <= batch.last_offset)
        {
            if let Some(aborted) = pending.pop() {
                aborting.push(aborted.producer_id);
            }
        }
        if batch.is_control {
            if batch.control_type() == Some(ControlRecordType::Abort) {
                aborting.retain(|producer| *producer != batch.producer_id);
            }
            continue;
        }
        if batch.is_transactional && aborting.contains(&batch.producer_id) {
            continue;
        }
        kept.push(batch);
    }
    kept
}

/// The header fields of one v2 batch, read before any record.
struct BatchHeader {
    base_offset: i64,
    last_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    attributes: i16,
    codec: Codec,
    first_timestamp: i64,
    max_timestamp: i64,
    record_count: i32,
}

/// If `bytes` starts with a whole batch, its length in bytes; `None` if the batch is cut
/// short (or `bytes` is empty).
fn complete_batch_len(bytes: &Bytes) -> Result<Option<usize>, RecordsError> {
    let (Some(base_offset), Some(length)) = (
        read_i64(bytes, BASE_OFFSET_AT),
        read_i32(bytes, BATCH_LENGTH_AT),
    ) else {
        return Ok(None);
    };
    let invalid = RecordsError::InvalidBatchLength {
        base_offset,
        length,
    };
    let length = usize::try_from(length).map_err(|_| invalid.clone())?;
    let total = length.saturating_add(LOG_OVERHEAD);
    if total < BATCH_HEADER_LEN {
        return Err(invalid);
    }
    Ok((bytes.len() >= total).then_some(total))
}

/// Checks and decodes one whole batch (exactly its bytes).
fn decode_batch(batch: &Bytes) -> Result<DecodedBatch, RecordsError> {
    let header = read_header(batch)?;
    let base_offset = header.base_offset;
    let payload = batch.slice(BATCH_HEADER_LEN.min(batch.len())..);
    let data = if header.record_count == 0 && payload.is_empty() {
        // An empty batch (compaction keeps them for producer state) has no codec data.
        payload
    } else {
        compression::decompress(header.codec, &payload, MAX_DECOMPRESSED_BATCH_BYTES).map_err(
            |e| match e {
                DecompressError::Malformed(reason) => RecordsError::Decompress {
                    base_offset,
                    codec: header.codec,
                    reason,
                },
                DecompressError::TooLarge(limit) => RecordsError::DecompressedTooLarge {
                    base_offset,
                    codec: header.codec,
                    limit,
                },
            },
        )?
    };
    // Refuse a count the data cannot hold before reserving room for it.
    let count = usize::try_from(header.record_count)
        .ok()
        .filter(|count| {
            count
                .checked_mul(MIN_RECORD_LEN)
                .is_some_and(|needed| needed <= data.len())
        })
        .ok_or(RecordsError::InvalidRecordCount {
            base_offset,
            count: header.record_count,
            bytes: data.len(),
        })?;
    let records =
        decode_records(&header, count, data).map_err(|reason| RecordsError::InvalidRecord {
            base_offset,
            reason,
        })?;
    let timestamp_type = if header.attributes & ATTR_LOG_APPEND_TIME != 0 {
        TimestampType::LogAppendTime
    } else {
        TimestampType::CreateTime
    };
    Ok(DecodedBatch {
        base_offset,
        last_offset: header.last_offset,
        partition_leader_epoch: header.partition_leader_epoch,
        producer_id: header.producer_id,
        producer_epoch: header.producer_epoch,
        base_sequence: header.base_sequence,
        is_transactional: header.attributes & ATTR_TRANSACTIONAL != 0,
        is_control: header.attributes & ATTR_CONTROL != 0,
        codec: header.codec,
        timestamp_type,
        first_timestamp: header.first_timestamp,
        max_timestamp: header.max_timestamp,
        records,
    })
}

/// Decodes exactly `count` records filling all of `data` (a batch's decompressed
/// records), with the same rules as the Java client's `DefaultRecord`: each record's
/// fields fill its declared size, lengths are -1 (null) or non-negative, offsets stay
/// inside the batch. Every allocation is bounded by the bytes present.
fn decode_records(
    header: &BatchHeader,
    count: usize,
    data: Bytes,
) -> Result<Vec<ConsumerRecord>, String> {
    let log_append = header.attributes & ATTR_LOG_APPEND_TIME != 0;
    let last_delta = header.last_offset - header.base_offset;
    let mut batch = Cursor(data);
    let mut records = Vec::with_capacity(count);
    for index in 0..count {
        let size = batch.varint()?;
        let size =
            usize::try_from(size).map_err(|_| format!("record {index}: negative size {size}"))?;
        let mut rec = Cursor(batch.take(size).ok_or_else(|| {
            format!(
                "record {index}: size {size} exceeds the {} bytes left",
                batch.0.len()
            )
        })?);
        let _attributes = rec.take(1).ok_or("record attributes missing")?;
        let timestamp_delta = rec.varlong()?;
        let offset_delta = i64::from(rec.varint()?);
        if !(0..=last_delta).contains(&offset_delta) {
            return Err(format!(
                "record {index}: offset delta {offset_delta} outside the batch (last offset delta {last_delta})"
            ));
        }
        let timestamp = if log_append {
            header.max_timestamp
        } else {
            header
                .first_timestamp
                .checked_add(timestamp_delta)
                .ok_or_else(|| {
                    format!("record {index}: timestamp delta {timestamp_delta} overflows")
                })?
        };
        let key = rec.nullable_bytes("key")?;
        let value = rec.nullable_bytes("value")?;
        let header_count = rec.varint()?;
        // Each header takes at least two bytes (key length, value length).
        let header_count = usize::try_from(header_count)
            .ok()
            .filter(|n| n.saturating_mul(2) <= rec.0.len())
            .ok_or_else(|| format!("record {index}: invalid header count {header_count}"))?;
        let mut headers = Vec::with_capacity(header_count);
        for _ in 0..header_count {
            let key = rec.nullable_bytes("header key")?.ok_or("null header key")?;
            let key = String::from_utf8(key.to_vec())
                .map_err(|_| format!("record {index}: header key is not UTF-8"))?;
            let value = rec.nullable_bytes("header value")?;
            headers.push(Header { key, value });
        }
        if !rec.0.is_empty() {
            return Err(format!(
                "record {index}: {} bytes left over inside its declared size {size}",
                rec.0.len()
            ));
        }
        records.push(ConsumerRecord {
            // Cannot overflow: the header check left room for any i32 delta.
            offset: header.base_offset + offset_delta,
            timestamp,
            key,
            value,
            headers,
        });
    }
    if !batch.0.is_empty() {
        return Err(format!(
            "{} bytes left over after the declared {count} records",
            batch.0.len()
        ));
    }
    Ok(records)
}

/// Reads Kafka's record fields from the front of a buffer, slicing without copying.
struct Cursor(Bytes);

impl Cursor {
    fn take(&mut self, len: usize) -> Option<Bytes> {
        (len <= self.0.len()).then(|| self.0.split_to(len))
    }

    /// An unsigned LEB128 number of at most `max_bytes` bytes.
    fn unsigned(&mut self, max_bytes: usize) -> Result<u64, String> {
        let mut value = 0u64;
        for i in 0..max_bytes {
            let byte = *self.0.first().ok_or("varint cut short")?;
            // `advance` only moves the start; `slice` would touch the reference count.
            self.0.advance(1);
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("varint longer than {max_bytes} bytes"))
    }

    /// A zigzag varint (int32).
    fn varint(&mut self) -> Result<i32, String> {
        let raw = self.unsigned(5)?;
        let raw = u32::try_from(raw).map_err(|_| "varint exceeds 32 bits".to_owned())?;
        Ok((raw >> 1) as i32 ^ -((raw & 1) as i32))
    }

    /// A zigzag varlong (int64).
    fn varlong(&mut self) -> Result<i64, String> {
        let raw = self.unsigned(10)?;
        Ok((raw >> 1) as i64 ^ -((raw & 1) as i64))
    }

    /// A varint length, then that many bytes; length -1 is null.
    fn nullable_bytes(&mut self, what: &str) -> Result<Option<Bytes>, String> {
        let len = self.varint()?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| format!("negative {what} length {len}"))?;
        self.take(len).map(Some).ok_or_else(|| {
            format!(
                "{what} length {len} exceeds the {} bytes left",
                self.0.len()
            )
        })
    }
}

/// Reads and checks the header of a whole batch (`batch` is exactly the batch's bytes,
/// at least [`BATCH_HEADER_LEN`] long).
fn read_header(batch: &[u8]) -> Result<BatchHeader, RecordsError> {
    let field = |value: Option<i64>| value.unwrap_or_default();
    let base_offset = field(read_i64(batch, BASE_OFFSET_AT));
    let too_short = || RecordsError::InvalidBatchLength {
        base_offset,
        length: read_i32(batch, BATCH_LENGTH_AT).unwrap_or_default(),
    };
    if batch.len() < BATCH_HEADER_LEN {
        return Err(too_short());
    }
    let magic = batch.get(MAGIC_AT).map_or(0, |m| *m as i8);
    if magic != 2 {
        return Err(RecordsError::UnsupportedMagic { base_offset, magic });
    }
    let stored = read_i32(batch, CRC_AT).ok_or_else(too_short)? as u32;
    let computed = crc32c::crc32c(batch.get(ATTRIBUTES_AT..).unwrap_or_default());
    if stored != computed {
        return Err(RecordsError::CrcMismatch {
            base_offset,
            stored,
            computed,
        });
    }
    let attributes = read_i16(batch, ATTRIBUTES_AT).ok_or_else(too_short)?;
    let codec = Codec::from_attributes(attributes).ok_or(RecordsError::UnknownCodecId {
        base_offset,
        id: attributes & ATTR_CODEC_MASK,
    })?;
    let last_offset_delta = read_i32(batch, LAST_OFFSET_DELTA_AT).ok_or_else(too_short)?;
    // The base offset must leave room for any i32 record delta and for `next_offset`.
    let last_offset = (base_offset >= 0 && last_offset_delta >= 0)
        .then(|| base_offset.checked_add(i64::from(i32::MAX) + 1))
        .flatten()
        .map(|_| base_offset + i64::from(last_offset_delta))
        .ok_or(RecordsError::InvalidOffsets {
            base_offset,
            last_offset_delta,
        })?;
    Ok(BatchHeader {
        base_offset,
        last_offset,
        partition_leader_epoch: read_i32(batch, LEADER_EPOCH_AT).ok_or_else(too_short)?,
        producer_id: read_i64(batch, PRODUCER_ID_AT).ok_or_else(too_short)?,
        producer_epoch: read_i16(batch, PRODUCER_EPOCH_AT).ok_or_else(too_short)?,
        base_sequence: read_i32(batch, BASE_SEQUENCE_AT).ok_or_else(too_short)?,
        attributes,
        codec,
        first_timestamp: read_i64(batch, FIRST_TIMESTAMP_AT).ok_or_else(too_short)?,
        max_timestamp: read_i64(batch, MAX_TIMESTAMP_AT).ok_or_else(too_short)?,
        record_count: read_i32(batch, RECORD_COUNT_AT).ok_or_else(too_short)?,
    })
}

fn read_i64(bytes: &[u8], at: usize) -> Option<i64> {
    let field = bytes.get(at..at.checked_add(8)?)?;
    Some(i64::from_be_bytes(field.try_into().ok()?))
}

fn read_i32(bytes: &[u8], at: usize) -> Option<i32> {
    let field = bytes.get(at..at.checked_add(4)?)?;
    Some(i32::from_be_bytes(field.try_into().ok()?))
}

fn read_i16(bytes: &[u8], at: usize) -> Option<i16> {
    let field = bytes.get(at..at.checked_add(2)?)?;
    Some(i16::from_be_bytes(field.try_into().ok()?))
}

#[cfg(test)]
mod java_vectors;
#[cfg(test)]
mod tests;
