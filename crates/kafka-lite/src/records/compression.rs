//! The five Kafka compression codecs, in pure Rust, with a hard cap on output size.
//!
//! kafka-protocol ships gzip and snappy (enabled as its cargo features), but its
//! decompressors allocate whatever length the compressed stream claims. Data from the
//! network must not be able to ask for gigabytes, so decompression here goes through
//! bounded readers for every codec, and kafka-protocol's own compressors are used only
//! on the producing side, where the input is ours:
//!
//! | codec  | compress                         | decompress                              |
//! |--------|----------------------------------|-----------------------------------------|
//! | gzip   | kafka-protocol (flate2, level 6) | `flate2` multi-member reader, bounded   |
//! | snappy | kafka-protocol (xerial framing)  | `snap` raw blocks, xerial or bare       |
//! | lz4    | `lz4_flex` frame, 64 KiB blocks  | `lz4_flex` frame reader, bounded        |
//! | zstd   | `ruzstd` "fastest" level         | `ruzstd` streaming decoder, all frames  |
//!
//! Kafka's LZ4 is the standard LZ4 *frame* format with independent blocks (what the
//! Java client's `KafkaLZ4BlockOutputStream` writes for magic v2), and its snappy is
//! the xerial "snappy-java" stream framing; bare snappy blocks (as some non-Java clients
//! write) are accepted too.

use std::io::{self, Read};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::compression::{Compressor, Gzip, Snappy};

use super::codec::Codec;

/// Why a compressed record payload could not be turned back into records bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum DecompressError {
    /// The stream is malformed; the text comes from the codec library.
    Malformed(String),
    /// The output would exceed the limit (in bytes).
    TooLarge(usize),
}

/// Appends `uncompressed` (the encoded records of one batch) to `out`, compressed with
/// `codec`. `uncompressed` may be left empty.
pub(super) fn compress(
    codec: Codec,
    uncompressed: &mut BytesMut,
    out: &mut BytesMut,
) -> Result<(), String> {
    match codec {
        Codec::None => {
            out.extend_from_slice(uncompressed);
            Ok(())
        }
        Codec::Gzip => Gzip::compress(out, |buf: &mut BytesMut| {
            std::mem::swap(buf, uncompressed);
            Ok(())
        })
        .map_err(|e| format!("{e:#}")),
        Codec::Snappy => Snappy::compress(out, |buf: &mut BytesMut| {
            std::mem::swap(buf, uncompressed);
            Ok(())
        })
        .map_err(|e| format!("{e:#}")),
        Codec::Lz4 => {
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(info, out.writer());
            io::Write::write_all(&mut encoder, uncompressed).map_err(|e| e.to_string())?;
            encoder.finish().map_err(|e| e.to_string())?;
            Ok(())
        }
        Codec::Zstd => {
            ruzstd::encoding::compress(
                &uncompressed[..],
                out.writer(),
                ruzstd::encoding::CompressionLevel::Fastest,
            );
            Ok(())
        }
    }
}

/// Decompresses one batch's record payload, refusing to produce more than `limit` bytes.
pub(super) fn decompress(
    codec: Codec,
    input: &Bytes,
    limit: usize,
) -> Result<Bytes, DecompressError> {
    match codec {
        Codec::None => Ok(input.clone()),
        Codec::Gzip => read_bounded(flate2::read::MultiGzDecoder::new(&input[..]), limit),
        Codec::Snappy => snappy_decompress(input, limit),
        Codec::Lz4 => read_bounded(lz4_flex::frame::FrameDecoder::new(&input[..]), limit),
        Codec::Zstd => zstd_decompress(input, limit),
    }
}

/// Reads `reader` to its end, failing as soon as more than `limit` bytes come out.
fn read_bounded(reader: impl Read, limit: usize) -> Result<Bytes, DecompressError> {
    let mut out = Vec::new();
    append_bounded(reader, limit, &mut out)?;
    Ok(Bytes::from(out))
}

/// Appends the output of `reader` to `out`, keeping `out` within `limit` bytes.
fn append_bounded(
    reader: impl Read,
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(), DecompressError> {
    let room = limit.saturating_sub(out.len());
    // One byte past the room tells "exactly at the limit" from "over it".
    let cap = u64::try_from(room).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(cap)
        .read_to_end(out)
        .map_err(|e| DecompressError::Malformed(e.to_string()))?;
    if out.len() > limit {
        return Err(DecompressError::TooLarge(limit));
    }
    Ok(())
}

/// The xerial snappy-java stream header: magic, then version and compatible version.
const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER_LEN: usize = 16;

fn snappy_decompress(input: &Bytes, limit: usize) -> Result<Bytes, DecompressError> {
    let Some(mut blocks) = input
        .strip_prefix(XERIAL_MAGIC)
        .and_then(|_| input.get(XERIAL_HEADER_LEN..))
    else {
        // Not xerial framing: a single bare snappy block.
        let mut out = Vec::new();
        snappy_block(input, limit, &mut out)?;
        return Ok(Bytes::from(out));
    };
    let mut out = Vec::new();
    while !blocks.is_empty() {
        let (len, rest) = blocks
            .split_first_chunk::<4>()
            .ok_or_else(|| malformed("xerial snappy block length is cut short"))?;
        let len = usize::try_from(u32::from_be_bytes(*len))
            .map_err(|_| malformed("xerial snappy block length does not fit in memory"))?;
        let block = rest
            .get(..len)
            .ok_or_else(|| malformed("xerial snappy block is cut short"))?;
        snappy_block(block, limit, &mut out)?;
        blocks = rest.get(len..).unwrap_or_default();
    }
    Ok(Bytes::from(out))
}

/// Appends one raw snappy block to `out`, checking its declared length against `limit`
/// before allocating.
fn snappy_block(block: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), DecompressError> {
    let len = snap::raw::decompress_len(block).map_err(|e| malformed(&e.to_string()))?;
    let start = out.len();
    let end = start
        .checked_add(len)
        .filter(|end| *end <= limit)
        .ok_or(DecompressError::TooLarge(limit))?;
    out.resize(end, 0);
    let dest = out.get_mut(start..).unwrap_or_default();
    let written = snap::raw::Decoder::new()
        .decompress(block, dest)
        .map_err(|e| malformed(&e.to_string()))?;
    out.truncate(start + written);
    Ok(())
}

/// Decodes every zstd frame in `input` (producers may concatenate frames).
fn zstd_decompress(input: &Bytes, limit: usize) -> Result<Bytes, DecompressError> {
    let mut src: &[u8] = input;
    let mut out = Vec::new();
    loop {
        let window = u64::try_from(limit).unwrap_or(u64::MAX).max(1 << 20);
        let decoder =
            ruzstd::decoding::StreamingDecoder::new_with_max_window_size(&mut src, window)
                .map_err(|e| malformed(&e.to_string()))?;
        append_bounded(decoder, limit, &mut out)?;
        if src.is_empty() {
            return Ok(Bytes::from(out));
        }
    }
}

fn malformed(reason: &str) -> DecompressError {
    DecompressError::Malformed(reason.to_owned())
}
