//! Encoding records to produce as one v2 batch, through kafka-protocol's encoder and this
//! crate's compression.

use bytes::{Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, Record,
    RecordBatchEncoder, RecordEncodeOptions, TimestampType as KpTimestampType,
};

use super::{Codec, ProducerRecord, RecordsError, compression};

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
