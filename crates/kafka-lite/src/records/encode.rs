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
