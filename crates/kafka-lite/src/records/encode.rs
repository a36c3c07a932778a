//! Encoding records to produce as one v2 batch, through kafka-protocol's encoder and this
//! crate's compression.

use bytes::{BufMut, Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, Record,
    RecordBatchEncoder, RecordEncodeOptions, TimestampType as KpTimestampType,
};

use super::codec::Codec;
use super::{ProducerRecord, RecordsError, compression};

/// Encodes `records` as one v2 record batch compressed with `codec`, ready to be the
/// `records` field of a Produce request partition.
///
/// The batch is what a producer without idempotence writes: base offset 0 (the broker
/// assigns offsets), producer id, epoch, base sequence and partition leader epoch all -1,
/// `CreateTime` timestamps taken from the records.
pub fn encode_batch(records: &[ProducerRecord], codec: Codec) -> Result<Bytes, RecordsError> {
    encode_batch_as(records, codec, None)
}

/// The producer a batch is written by: an idempotent or transactional
/// producer's id and epoch, the sequence number of the batch's first record,
/// and whether the batch belongs to a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchProducer {
    /// The producer id (from InitProducerId).
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// The sequence number of the first record; the others follow it.
    pub base_sequence: i32,
    /// Whether the batch is part of a transaction.
    pub transactional: bool,
}

/// [`encode_batch`], written by `producer` (`None`: the plain producer of
/// [`encode_batch`]).
pub fn encode_batch_as(
    records: &[ProducerRecord],
    codec: Codec,
    producer: Option<BatchProducer>,
) -> Result<Bytes, RecordsError> {
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
        // kafka-protocol starts a new batch whenever `offset - sequence` changes and
        // writes base sequence = first record's sequence: consecutive sequences from
        // the producer's base, or from -1 (NO_SEQUENCE) without a producer, keep one
        // batch.
        let base_sequence = producer.map_or(-1, |p| p.base_sequence);
        protocol_records.push(Record {
            transactional: producer.is_some_and(|p| p.transactional),
            control: false,
            delete_horizon: false,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: producer.map_or(NO_PRODUCER_ID, |p| p.producer_id),
            producer_epoch: producer.map_or(NO_PRODUCER_EPOCH, |p| p.producer_epoch),
            timestamp_type: KpTimestampType::Creation,
            offset,
            sequence: (offset as i32).wrapping_add(base_sequence),
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

/// A v2 record batch written record by record into one growing buffer: no
/// per-record allocation, no copy of the records into an intermediate
/// structure, and the CRC computed once, when the batch is finished.
///
/// The bytes are those [`encode_batch_as`] writes for the same records
/// (records without headers, timestamps not decreasing) and those the Java
/// producer writes: the first timestamp is the first record's, the max
/// timestamp the largest, record timestamps are deltas from the first.
/// Keys and values are written through a scratch buffer that is reused from
/// record to record, so a caller that encodes its records itself (see
/// [`push_with`](Self::push_with)) needs no buffer of its own per record.
#[derive(Debug)]
pub struct BatchBuilder {
    /// The batch header's room (filled by `finish`), then the records.
    buf: BytesMut,
    records: i32,
    first_timestamp: i64,
    max_timestamp: i64,
    scratch: Vec<u8>,
}

impl Default for BatchBuilder {
    fn default() -> Self {
        BatchBuilder::with_capacity(0)
    }
}

impl BatchBuilder {
    /// An empty batch whose buffer first holds `capacity` bytes of records
    /// (it grows as needed).
    pub fn with_capacity(capacity: usize) -> Self {
        let mut buf = BytesMut::with_capacity(super::layout::BATCH_HEADER_LEN + capacity);
        buf.resize(super::layout::BATCH_HEADER_LEN, 0);
        BatchBuilder {
            buf,
            records: 0,
            first_timestamp: 0,
            max_timestamp: 0,
            scratch: Vec::new(),
        }
    }

    /// Records in the batch so far.
    pub fn len(&self) -> usize {
        self.records as usize
    }

    /// Whether no record was added yet.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Bytes of the batch so far, header included (uncompressed).
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// Adds a record without headers (`None`: a null key or value).
    ///
    /// Errors: [`RecordsError::NegativeTimestamp`]; [`RecordsError::Encode`]
    /// past `i32::MAX` records or a key or value longer than `i32::MAX`.
    /// Nothing is added on error.
    pub fn push(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<(), RecordsError> {
        self.check(timestamp)?;
        let key_len = field_len(key)?;
        let value_len = field_len(value)?;
        self.write(timestamp, key, key_len, value, value_len);
        Ok(())
    }

    /// Adds a record whose key and value `key` and `value` append to the
    /// buffer they are given (which arrives empty). An error of either (`E`,
    /// which must take the batch's own errors) adds nothing.
    pub fn push_with<E: From<RecordsError>>(
        &mut self,
        timestamp: i64,
        key: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
        value: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.check(timestamp)?;
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let r = (|| {
            key(&mut scratch)?;
            let key_end = scratch.len();
            value(&mut scratch)?;
            let (k, v) = scratch.split_at(key_end);
            let key_len = field_len(Some(k))?;
            let value_len = field_len(Some(v))?;
            self.write(timestamp, Some(k), key_len, Some(v), value_len);
            Ok(())
        })();
        self.scratch = scratch;
        r
    }

    fn check(&self, timestamp: i64) -> Result<(), RecordsError> {
        let index = self.records as usize;
        if timestamp < 0 {
            return Err(RecordsError::NegativeTimestamp { index, timestamp });
        }
        if self.records == i32::MAX {
            return Err(RecordsError::Encode {
                codec: Codec::None,
                reason: "too many records".to_owned(),
            });
        }
        Ok(())
    }

    fn write(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        key_len: i32,
        value: Option<&[u8]>,
        value_len: i32,
    ) {
        if self.records == 0 {
            self.first_timestamp = timestamp;
            self.max_timestamp = timestamp;
        }
        self.max_timestamp = self.max_timestamp.max(timestamp);
        let delta = timestamp - self.first_timestamp;
        let offset_delta = self.records;
        // The record's length: attributes, deltas, key, value, header count.
        let body = 1
            + varlong_len(delta)
            + varlong_len(i64::from(offset_delta))
            + varlong_len(i64::from(key_len))
            + key.map_or(0, <[u8]>::len)
            + varlong_len(i64::from(value_len))
            + value.map_or(0, <[u8]>::len)
            + 1;
        let buf = &mut self.buf;
        buf.reserve(body + 5);
        put_varlong(buf, body as i64);
        buf.put_u8(0);
        put_varlong(buf, delta);
        put_varlong(buf, i64::from(offset_delta));
        put_varlong(buf, i64::from(key_len));
        if let Some(k) = key {
            buf.put_slice(k);
        }
        put_varlong(buf, i64::from(value_len));
        if let Some(v) = value {
            buf.put_slice(v);
        }
        buf.put_u8(0);
        self.records += 1;
    }

    /// The finished batch, compressed with `codec` and written by `producer`
    /// (`None`: the plain producer of [`encode_batch`]): the header filled in
    /// and the CRC-32C computed over it once.
    ///
    /// Errors: [`RecordsError::EmptyBatch`]; [`RecordsError::Encode`] if
    /// compression fails or the batch exceeds `i32::MAX` bytes.
    pub fn finish(
        self,
        codec: Codec,
        producer: Option<BatchProducer>,
    ) -> Result<Bytes, RecordsError> {
        use super::layout::{
            ATTR_TRANSACTIONAL, ATTRIBUTES_AT, BASE_OFFSET_AT, BASE_SEQUENCE_AT, BATCH_HEADER_LEN,
            BATCH_LENGTH_AT, CRC_AT, FIRST_TIMESTAMP_AT, LAST_OFFSET_DELTA_AT, LEADER_EPOCH_AT,
            LOG_OVERHEAD, MAGIC_AT, MAX_TIMESTAMP_AT, PRODUCER_EPOCH_AT, PRODUCER_ID_AT,
            RECORD_COUNT_AT,
        };
        if self.records == 0 {
            return Err(RecordsError::EmptyBatch);
        }
        let mut buf = self.buf;
        if codec != Codec::None {
            let mut records = buf.split_off(BATCH_HEADER_LEN);
            compression::compress(codec, &mut records, &mut buf)
                .map_err(|reason| RecordsError::Encode { codec, reason })?;
        }
        let length = i32::try_from(buf.len() - LOG_OVERHEAD).map_err(|_| RecordsError::Encode {
            codec,
            reason: format!("the batch is too large ({} bytes)", buf.len()),
        })?;
        let mut attributes = codec.to_protocol() as i16;
        if producer.is_some_and(|p| p.transactional) {
            attributes |= ATTR_TRANSACTIONAL;
        }
        let header = &mut buf[..BATCH_HEADER_LEN];
        header[BASE_OFFSET_AT..BATCH_LENGTH_AT].copy_from_slice(&0i64.to_be_bytes());
        header[BATCH_LENGTH_AT..LEADER_EPOCH_AT].copy_from_slice(&length.to_be_bytes());
        header[LEADER_EPOCH_AT..MAGIC_AT].copy_from_slice(&NO_PARTITION_LEADER_EPOCH.to_be_bytes());
        header[MAGIC_AT] = 2;
        header[ATTRIBUTES_AT..LAST_OFFSET_DELTA_AT].copy_from_slice(&attributes.to_be_bytes());
        header[LAST_OFFSET_DELTA_AT..FIRST_TIMESTAMP_AT]
            .copy_from_slice(&(self.records - 1).to_be_bytes());
        header[FIRST_TIMESTAMP_AT..MAX_TIMESTAMP_AT]
            .copy_from_slice(&self.first_timestamp.to_be_bytes());
        header[MAX_TIMESTAMP_AT..PRODUCER_ID_AT].copy_from_slice(&self.max_timestamp.to_be_bytes());
        header[PRODUCER_ID_AT..PRODUCER_EPOCH_AT].copy_from_slice(
            &producer
                .map_or(NO_PRODUCER_ID, |p| p.producer_id)
                .to_be_bytes(),
        );
        header[PRODUCER_EPOCH_AT..BASE_SEQUENCE_AT].copy_from_slice(
            &producer
                .map_or(NO_PRODUCER_EPOCH, |p| p.producer_epoch)
                .to_be_bytes(),
        );
        header[BASE_SEQUENCE_AT..RECORD_COUNT_AT]
            .copy_from_slice(&producer.map_or(-1, |p| p.base_sequence).to_be_bytes());
        header[RECORD_COUNT_AT..BATCH_HEADER_LEN].copy_from_slice(&self.records.to_be_bytes());
        let crc = crc32c::crc32c(&buf[ATTRIBUTES_AT..]);
        buf[CRC_AT..ATTRIBUTES_AT].copy_from_slice(&crc.to_be_bytes());
        Ok(buf.freeze())
    }
}

/// A key's or value's length field: -1 for null.
fn field_len(field: Option<&[u8]>) -> Result<i32, RecordsError> {
    match field {
        None => Ok(-1),
        Some(f) => i32::try_from(f.len()).map_err(|_| RecordsError::Encode {
            codec: Codec::None,
            reason: format!("a key or value of {} bytes is too large", f.len()),
        }),
    }
}

/// Bytes of `v` as a zigzag varint (Kafka's varint and varlong).
fn varlong_len(v: i64) -> usize {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while z >= 0x80 {
        z >>= 7;
        n += 1;
    }
    n
}

/// Appends `v` as a zigzag varint.
fn put_varlong(buf: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.put_u8((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    buf.put_u8(z as u8);
}
