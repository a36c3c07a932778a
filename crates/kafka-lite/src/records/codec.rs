//! The compression codecs of record batches, by their `compression.type` names.

use std::fmt;
use std::str::FromStr;

use kafka_protocol::records::Compression;

use super::layout::ATTR_CODEC_MASK;

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

    pub(super) fn from_attributes(attributes: i16) -> Option<Codec> {
        match attributes & ATTR_CODEC_MASK {
            0 => Some(Codec::None),
            1 => Some(Codec::Gzip),
            2 => Some(Codec::Snappy),
            3 => Some(Codec::Lz4),
            4 => Some(Codec::Zstd),
            _ => None,
        }
    }

    pub(super) fn to_protocol(self) -> Compression {
        match self {
            Codec::None => Compression::None,
            Codec::Gzip => Compression::Gzip,
            Codec::Snappy => Compression::Snappy,
            Codec::Lz4 => Compression::Lz4,
            Codec::Zstd => Compression::Zstd,
        }
    }

    pub(super) fn from_protocol(compression: Compression) -> Codec {
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
