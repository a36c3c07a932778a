//! Decoding the batches of a Fetch response: the header checks, bounded decompression
//! and the record parser.

use bytes::Bytes;

use super::codec::Codec;
use super::compression::{self, DecompressError};
use super::layout::{
    ATTR_CODEC_MASK, ATTR_CONTROL, ATTR_LOG_APPEND_TIME, ATTR_TRANSACTIONAL, ATTRIBUTES_AT,
    BASE_OFFSET_AT, BASE_SEQUENCE_AT, BATCH_HEADER_LEN, BATCH_LENGTH_AT, CRC_AT,
    FIRST_TIMESTAMP_AT, LAST_OFFSET_DELTA_AT, LEADER_EPOCH_AT, LOG_OVERHEAD, MAGIC_AT,
    MAX_DECOMPRESSED_BATCH_BYTES, MAX_TIMESTAMP_AT, MIN_RECORD_LEN, PRODUCER_EPOCH_AT,
    PRODUCER_ID_AT, RECORD_COUNT_AT, read_i16, read_i32, read_i64,
};
use super::{ConsumerRecord, DecodedBatch, Header, RecordsError, TimestampType};

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
        let batch = decode_batch(&bytes.slice(..batch_len), None)?;
        let _ = bytes.split_to(batch_len);
        batches.push(batch);
    }
    Ok(batches)
}

/// [`decode_batches`], with the records of every data (non-control) batch
/// appended to `records` instead of kept in their batch, whose `records` is then
/// empty; a control batch keeps its own. With the same checks and errors; on
/// error `records` is as it was before the call. For a reader that wants a
/// fetch's records in one vector: no vector per batch, and no second copy of
/// every record when gathering them.
pub fn decode_batches_into(
    bytes: &mut Bytes,
    records: &mut Vec<ConsumerRecord>,
) -> Result<Vec<DecodedBatch>, RecordsError> {
    let before = records.len();
    let mut batches = Vec::new();
    let mut decode = || {
        while let Some(batch_len) = complete_batch_len(bytes)? {
            let batch = decode_batch(&bytes.slice(..batch_len), Some(&mut *records))?;
            let _ = bytes.split_to(batch_len);
            batches.push(batch);
        }
        Ok(())
    };
    match decode() {
        Ok(()) => Ok(batches),
        Err(e) => {
            records.truncate(before);
            Err(e)
        }
    }
}

/// What the whole batches at the front of `bytes` hold, read from their headers
/// alone (no CRC check, no decompression, no record parsed): the bytes they take,
/// the records their headers count, and the offset after the last one. A partial
/// trailing batch is left out as [`decode_batches`] leaves it; a length field that
/// cannot be a batch is an error. For measuring what the broker serves without the
/// cost of decoding it, never for reading data.
pub fn batch_spans(bytes: &[u8]) -> Result<BatchSpans, RecordsError> {
    let mut spans = BatchSpans::default();
    let mut rest = bytes;
    while let Some(len) = complete_batch_len(rest)? {
        let base_offset = read_i64(rest, BASE_OFFSET_AT).unwrap_or_default();
        let last_delta = read_i32(rest, LAST_OFFSET_DELTA_AT).unwrap_or_default();
        let count = read_i32(rest, RECORD_COUNT_AT).unwrap_or_default();
        spans.bytes += len;
        spans.records += u64::try_from(count).unwrap_or(0);
        spans.next_offset = Some(
            base_offset
                .saturating_add(i64::from(last_delta))
                .saturating_add(1),
        );
        rest = &rest[len..];
    }
    Ok(spans)
}

/// What [`batch_spans`] read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchSpans {
    /// Bytes of the whole batches.
    pub bytes: usize,
    /// Records their headers count.
    pub records: u64,
    /// The offset after the last whole batch, if there was one.
    pub next_offset: Option<i64>,
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
fn complete_batch_len(bytes: &[u8]) -> Result<Option<usize>, RecordsError> {
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

/// A whole batch's header checked and its records decompressed: what the record
/// parser reads. Shared by [`decode_batches`] and [`visit_batches`].
struct OpenBatch {
    header: BatchHeader,
    /// The records, decompressed.
    data: Bytes,
    /// The record count, checked against the bytes of `data`.
    count: usize,
}

impl OpenBatch {
    fn is_control(&self) -> bool {
        self.header.attributes & ATTR_CONTROL != 0
    }

    /// Runs the record parser over the batch's records, its errors named by the batch.
    fn parse<'a>(&'a self, each: impl FnMut(RecordRef<'a>)) -> Result<(), RecordsError> {
        parse_records(&self.header, self.count, &self.data, each).map_err(|reason| {
            RecordsError::InvalidRecord {
                base_offset: self.header.base_offset,
                reason,
            }
        })
    }
}

/// Checks one whole batch (exactly its bytes) and decompresses its records: the
/// header, the codec data (bounded), and the record count against the bytes.
fn open_batch(batch: &Bytes) -> Result<OpenBatch, RecordsError> {
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
    Ok(OpenBatch {
        header,
        data,
        count,
    })
}

/// Checks and decodes one whole batch (exactly its bytes). With `into`, a data
/// batch's records are appended there (see [`decode_batches_into`]).
fn decode_batch(
    batch: &Bytes,
    into: Option<&mut Vec<ConsumerRecord>>,
) -> Result<DecodedBatch, RecordsError> {
    let open = open_batch(batch)?;
    let is_control = open.is_control();
    let mut own = Vec::new();
    let into = match into {
        Some(into) if !is_control => into,
        _ => &mut own,
    };
    decode_records(&open, into)?;
    let header = &open.header;
    let timestamp_type = if header.attributes & ATTR_LOG_APPEND_TIME != 0 {
        TimestampType::LogAppendTime
    } else {
        TimestampType::CreateTime
    };
    Ok(DecodedBatch {
        base_offset: header.base_offset,
        last_offset: header.last_offset,
        partition_leader_epoch: header.partition_leader_epoch,
        producer_id: header.producer_id,
        producer_epoch: header.producer_epoch,
        base_sequence: header.base_sequence,
        is_transactional: header.attributes & ATTR_TRANSACTIONAL != 0,
        is_control,
        codec: header.codec,
        timestamp_type,
        first_timestamp: header.first_timestamp,
        max_timestamp: header.max_timestamp,
        records: own,
    })
}

/// The records of `open` as [`ConsumerRecord`]s appended to `records`: the
/// record parser's records, keys, values and header values made slices of the
/// batch's data (one reference count each, no copy). On error some may have
/// been appended.
fn decode_records(open: &OpenBatch, records: &mut Vec<ConsumerRecord>) -> Result<(), RecordsError> {
    let data = &open.data;
    records.reserve(open.count);
    open.parse(|r| {
        records.push(ConsumerRecord {
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key.map(|k| data.slice_ref(k)),
            value: r.value.map(|v| data.slice_ref(v)),
            headers: r
                .headers
                .iter()
                .map(|(key, value)| Header {
                    key: key.to_owned(),
                    value: value.map(|v| data.slice_ref(v)),
                })
                .collect(),
        });
    })
}

/// Visits the records of the whole batches at the front of `bytes` (the
/// `records` field of a Fetch response partition) in offset order, borrowed
/// from the fetched (or decompressed) bytes: no [`ConsumerRecord`], no
/// reference count, no allocation per record. Control batches (transaction
/// markers) are checked but not visited, as a reader skips them.
///
/// The checks and errors are [`decode_batches`]' (CRC-32C, magic, codec, bounded
/// decompression, offsets, record count, record framing), and a partial trailing
/// batch is left out as it leaves it ([`Visited::bytes`] says how far the whole
/// batches went). Records are visited as they are parsed: on error `visit` may
/// have seen records before the bad one (of the failing batch too), so a caller
/// that must see all or nothing keeps what it gathered until the call returns `Ok`.
pub fn visit_batches(
    bytes: &Bytes,
    visit: impl FnMut(RecordRef<'_>),
) -> Result<Visited, RecordsError> {
    visit_batches_where(bytes, |_| true, visit)
}

/// [`visit_batches`], visiting only the records of the data batches `keep`
/// accepts; `keep` sees every whole batch, control batches included, in order
/// (what the read_committed filter needs), after its header is checked and, for
/// a control batch, after its records are.
pub(crate) fn visit_batches_where(
    bytes: &Bytes,
    mut keep: impl FnMut(&BatchMeta) -> bool,
    mut visit: impl FnMut(RecordRef<'_>),
) -> Result<Visited, RecordsError> {
    let mut visited = Visited::default();
    while let Some(batch_len) = complete_batch_len(&bytes[visited.bytes..])? {
        let batch = bytes.slice(visited.bytes..visited.bytes + batch_len);
        let open = open_batch(&batch)?;
        let header = &open.header;
        let mut meta = BatchMeta {
            last_offset: header.last_offset,
            producer_id: header.producer_id,
            is_transactional: header.attributes & ATTR_TRANSACTIONAL != 0,
            is_control: open.is_control(),
            control_type: None,
        };
        if meta.is_control {
            // Checked whole, never visited; its marker type read from the first key.
            let mut first_key = None;
            open.parse(|r| {
                first_key.get_or_insert(r.key);
            })?;
            meta.control_type = first_key.and_then(super::types::control_type_of);
            keep(&meta);
        } else if keep(&meta) {
            open.parse(&mut visit)?;
        } else {
            open.parse(|_| {})?;
        }
        visited.bytes += batch_len;
        visited.batches += 1;
        visited.next_offset = Some(header.last_offset.saturating_add(1));
    }
    Ok(visited)
}

/// What [`visit_batches`] went through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Visited {
    /// Bytes of the whole batches (a partial trailing batch is not counted).
    pub bytes: usize,
    /// Whole batches, control batches included.
    pub batches: usize,
    /// The offset after the last whole batch, if there was one: where the next
    /// fetch starts.
    pub next_offset: Option<i64>,
}

/// What the read_committed filter needs of a batch ([`visit_batches_where`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchMeta {
    pub(crate) last_offset: i64,
    pub(crate) producer_id: i64,
    pub(crate) is_transactional: bool,
    pub(crate) is_control: bool,
    /// A control batch's marker type, read from its first record's key.
    pub(crate) control_type: Option<super::ControlRecordType>,
}

/// One record of a batch, borrowed from the batch's bytes (see [`visit_batches`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// The record's offset in its partition.
    pub offset: i64,
    /// The record's timestamp in milliseconds (a `LogAppendTime` batch's max
    /// timestamp, as [`ConsumerRecord::timestamp`]).
    pub timestamp: i64,
    /// Key; `None` is a null key.
    pub key: Option<&'a [u8]>,
    /// Value; `None` is a null value.
    pub value: Option<&'a [u8]>,
    /// Headers, in order.
    pub headers: RecordHeaders<'a>,
}

/// The headers of a [`RecordRef`], already checked (keys are UTF-8, the fields
/// fill the record); iterate them with [`iter`](Self::iter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeaders<'a>(HeadersRepr<'a>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeadersRepr<'a> {
    /// `count` headers encoded in `raw`, checked by the record parser.
    Encoded { raw: &'a [u8], count: usize },
    /// Headers already decoded.
    Decoded(&'a [Header]),
}

impl<'a> RecordHeaders<'a> {
    /// Number of headers.
    pub fn len(&self) -> usize {
        match self.0 {
            HeadersRepr::Encoded { count, .. } => count,
            HeadersRepr::Decoded(headers) => headers.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each header's key and value (`None` is a null value), in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        let (mut raw, count, decoded) = match self.0 {
            HeadersRepr::Encoded { raw, count } => (Cursor::new(raw), count, &[][..]),
            HeadersRepr::Decoded(headers) => (Cursor::new(&[]), 0, headers),
        };
        let encoded = (0..count).map_while(move |_| {
            // Checked by the parser: cannot fail (and stops if it ever did).
            let key = raw.nullable_bytes("header key").ok()??;
            let key = std::str::from_utf8(key).ok()?;
            let value = raw.nullable_bytes("header value").ok()?;
            Some((key, value))
        });
        encoded.chain(decoded.iter().map(|h| (h.key.as_str(), h.value.as_deref())))
    }
}

impl ConsumerRecord {
    /// The record as a [`RecordRef`] borrowing from it, as
    /// [`visit_batches`] hands records over.
    pub fn as_record_ref(&self) -> RecordRef<'_> {
        RecordRef {
            offset: self.offset,
            timestamp: self.timestamp,
            key: self.key.as_deref(),
            value: self.value.as_deref(),
            headers: RecordHeaders(HeadersRepr::Decoded(&self.headers)),
        }
    }
}

/// The record parser: parses exactly `count` records filling all of `data` (a
/// batch's decompressed records) and hands each to `each`, with the same rules as
/// the Java client's `DefaultRecord`: each record's fields fill its declared size,
/// lengths are -1 (null) or non-negative, offsets stay inside the batch, header
/// keys are UTF-8. Nothing is allocated; keys, values and headers are slices of
/// `data`. On error `each` has seen the records before the bad one.
fn parse_records<'a>(
    header: &BatchHeader,
    count: usize,
    data: &'a [u8],
    mut each: impl FnMut(RecordRef<'a>),
) -> Result<(), String> {
    let log_append = header.attributes & ATTR_LOG_APPEND_TIME != 0;
    let last_delta = header.last_offset - header.base_offset;
    let mut batch = Cursor::new(data);
    for index in 0..count {
        let size = batch.varint()?;
        let size =
            usize::try_from(size).map_err(|_| format!("record {index}: negative size {size}"))?;
        let mut rec = batch.sub(size).ok_or_else(|| {
            format!(
                "record {index}: size {size} exceeds the {} bytes left",
                batch.len()
            )
        })?;
        rec.take(1).ok_or("record attributes missing")?;
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
            .filter(|n| n.saturating_mul(2) <= rec.len())
            .ok_or_else(|| format!("record {index}: invalid header count {header_count}"))?;
        let headers_raw = rec.rest();
        for _ in 0..header_count {
            let key = rec.nullable_bytes("header key")?.ok_or("null header key")?;
            std::str::from_utf8(key)
                .map_err(|_| format!("record {index}: header key is not UTF-8"))?;
            rec.nullable_bytes("header value")?;
        }
        if !rec.is_empty() {
            return Err(format!(
                "record {index}: {} bytes left over inside its declared size {size}",
                rec.len()
            ));
        }
        each(RecordRef {
            // Cannot overflow: the header check left room for any i32 delta.
            offset: header.base_offset + offset_delta,
            timestamp,
            key,
            value,
            headers: RecordHeaders(HeadersRepr::Encoded {
                raw: headers_raw,
                count: header_count,
            }),
        });
    }
    if !batch.is_empty() {
        return Err(format!(
            "{} bytes left over after the declared {count} records",
            batch.len()
        ));
    }
    Ok(())
}

/// Reads Kafka's record fields from `data[pos..end]`, moving `pos`; byte fields are
/// returned as slices of `data` without copying.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Cursor<'a> {
    fn new(data: &'a [u8]) -> Self {
        Cursor {
            data,
            pos: 0,
            end: data.len(),
        }
    }

    /// Bytes left.
    fn len(&self) -> usize {
        self.end - self.pos
    }

    fn is_empty(&self) -> bool {
        self.pos >= self.end
    }

    /// The bytes left, without moving.
    fn rest(&self) -> &'a [u8] {
        self.data.get(self.pos..self.end).unwrap_or_default()
    }

    /// The next `len` bytes as a range of `data`.
    fn take(&mut self, len: usize) -> Option<std::ops::Range<usize>> {
        (len <= self.len()).then(|| {
            let start = self.pos;
            self.pos += len;
            start..self.pos
        })
    }

    /// A cursor over the next `len` bytes.
    fn sub(&mut self, len: usize) -> Option<Cursor<'a>> {
        let range = self.take(len)?;
        Some(Cursor {
            data: self.data,
            pos: range.start,
            end: range.end,
        })
    }

    /// An unsigned LEB128 number of at most `max_bytes` bytes.
    fn unsigned(&mut self, max_bytes: usize) -> Result<u64, String> {
        let mut value = 0u64;
        for i in 0..max_bytes {
            if self.pos >= self.end {
                return Err("varint cut short".to_owned());
            }
            let byte = self.data[self.pos];
            self.pos += 1;
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
    fn nullable_bytes(&mut self, what: &str) -> Result<Option<&'a [u8]>, String> {
        let len = self.varint()?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| format!("negative {what} length {len}"))?;
        let left = self.len();
        let data = self.data;
        self.take(len)
            .map(|range| Some(&data[range]))
            .ok_or_else(|| format!("{what} length {len} exceeds the {left} bytes left"))
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
