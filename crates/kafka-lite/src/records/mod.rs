//! Record batches (message format v2, "magic 2"): encoding for Produce requests,
//! decoding of Fetch responses, and the read_committed filter.
//!
//! Encoding is kafka-protocol's [`RecordBatchEncoder`], fed through its custom
//! compression hook so that all five codecs work without C code (see the `compression`
//! submodule); [`BatchBuilder`] writes the same bytes record by record into one buffer,
//! for producers that encode many records (no allocation per record). Decoding is this
//! module's own, for robustness: kafka-protocol 0.18's
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
mod decode;
mod encode;
mod error;
mod transactions;
mod types;

use std::fmt;
use std::str::FromStr;

use kafka_protocol::records::Compression;
#[cfg(doc)]
use kafka_protocol::records::RecordBatchEncoder;

pub(crate) use self::decode::visit_batches_where;
pub use self::decode::{
    BatchSpans, RecordHeaders, RecordRef, Visited, batch_spans, decode_batches,
    decode_batches_into, visit_batches,
};
pub use self::encode::{BatchBuilder, BatchProducer, encode_batch, encode_batch_as};
pub use self::error::RecordsError;
pub(crate) use self::transactions::CommittedFilter;
pub use self::transactions::{AbortedTransaction, read_committed};
pub use self::types::{
    ConsumerRecord, ControlRecordType, DecodedBatch, Header, ProducerRecord, TimestampType,
};

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
