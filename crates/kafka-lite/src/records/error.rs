//! [`RecordsError`], why record batches could not be encoded or decoded.

use std::fmt;

use super::codec::Codec;
#[cfg(doc)]
use super::layout::MAX_DECOMPRESSED_BATCH_BYTES;

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
