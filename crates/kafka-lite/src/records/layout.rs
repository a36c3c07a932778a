//! The v2 batch header's layout: field positions and sizes, attribute bits, the
//! decompression bound, and big-endian readers for the header's fields.

/// The most bytes one batch's records may decompress to (64 MiB).
///
/// Kafka itself sets no such bound, but a few compressed bytes can expand to gigabytes,
/// and a hostile or broken peer must not be able to exhaust memory. Kafka's default
/// `max.message.bytes` is 1 MiB of *compressed* batch, so real batches stay far below this.
pub const MAX_DECOMPRESSED_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// Bytes before a batch's `batchLength` field ends: base offset (8) + batch length (4).
pub(super) const LOG_OVERHEAD: usize = 12;
/// Size of the whole v2 batch header, from the base offset to the record count.
pub(super) const BATCH_HEADER_LEN: usize = 61;
/// The smallest encoded record: seven one-byte fields (length, attributes, timestamp
/// delta, offset delta, key length, value length, header count).
pub(super) const MIN_RECORD_LEN: usize = 7;

// Byte positions of the v2 batch header fields.
pub(super) const BASE_OFFSET_AT: usize = 0;
pub(super) const BATCH_LENGTH_AT: usize = 8;
pub(super) const LEADER_EPOCH_AT: usize = 12;
pub(super) const MAGIC_AT: usize = 16;
pub(super) const CRC_AT: usize = 17;
pub(super) const ATTRIBUTES_AT: usize = 21;
pub(super) const LAST_OFFSET_DELTA_AT: usize = 23;
pub(super) const FIRST_TIMESTAMP_AT: usize = 27;
pub(super) const MAX_TIMESTAMP_AT: usize = 35;
pub(super) const PRODUCER_ID_AT: usize = 43;
pub(super) const PRODUCER_EPOCH_AT: usize = 51;
pub(super) const BASE_SEQUENCE_AT: usize = 53;
pub(super) const RECORD_COUNT_AT: usize = 57;

pub(super) const ATTR_CODEC_MASK: i16 = 0x07;
pub(super) const ATTR_LOG_APPEND_TIME: i16 = 1 << 3;
pub(super) const ATTR_TRANSACTIONAL: i16 = 1 << 4;
pub(super) const ATTR_CONTROL: i16 = 1 << 5;

pub(super) fn read_i64(bytes: &[u8], at: usize) -> Option<i64> {
    let field = bytes.get(at..at.checked_add(8)?)?;
    Some(i64::from_be_bytes(field.try_into().ok()?))
}

pub(super) fn read_i32(bytes: &[u8], at: usize) -> Option<i32> {
    let field = bytes.get(at..at.checked_add(4)?)?;
    Some(i32::from_be_bytes(field.try_into().ok()?))
}

pub(super) fn read_i16(bytes: &[u8], at: usize) -> Option<i16> {
    let field = bytes.get(at..at.checked_add(2)?)?;
    Some(i16::from_be_bytes(field.try_into().ok()?))
}
