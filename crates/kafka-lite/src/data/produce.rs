//! Produce: append one record batch to one partition, on its leader.

use std::time::Duration;

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;

use super::common::partition_context;
use crate::records::{self, Codec, ProducerRecord};
use crate::{BrokerConnection, Error};

const API: &str = "Produce";

/// How to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceOptions {
    /// Compression of the batch. Default none.
    pub codec: Codec,
    /// How long the leader waits for the in-sync replicas to acknowledge
    /// (the request's `timeout_ms`). Default 30 s. Keep the connection's
    /// `request_timeout` longer than this.
    pub timeout: Duration,
}

impl Default for ProduceOptions {
    fn default() -> Self {
        ProduceOptions {
            codec: Codec::None,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Appends `records` as one batch to `topic`/`partition` on the broker
/// behind `connection`, which must lead the partition, and returns the
/// offset of the first record (the others follow it consecutively).
///
/// The write is acknowledged by all in-sync replicas (`acks=all`). The
/// producer is neither idempotent nor transactional: if a request fails
/// after reaching the broker (a timeout, a closed connection) and is sent
/// again, the records may be appended twice.
///
/// Errors: [`Error::Encode`] for records that cannot be encoded (none at
/// all, a negative timestamp, a repeated header key); the partition's Kafka
/// error as [`Error::Kafka`], with the broker's message in its context.
pub(super) async fn produce_on(
    connection: &BrokerConnection,
    topic: &str,
    partition: i32,
    records: &[ProducerRecord],
    options: &ProduceOptions,
) -> Result<i64, Error> {
    produce_as(connection, topic, partition, records, options, None).await
}

/// [`produce_on`] as a transactional producer: the batch carries the
/// producer's id, epoch and sequence, and the request its transactional id.
pub(crate) async fn produce_as(
    connection: &BrokerConnection,
    topic: &str,
    partition: i32,
    records: &[ProducerRecord],
    options: &ProduceOptions,
    producer: Option<(&str, records::BatchProducer)>,
) -> Result<i64, Error> {
    let version = connection.version_for::<ProduceRequest>()?;
    let batch = records::encode_batch_as(records, options.codec, producer.map(|(_, p)| p))
        .map_err(|e| encode_error(version, topic, partition, e))?;
    produce_encoded(
        connection,
        topic,
        partition,
        batch,
        options,
        producer.map(|(id, _)| id),
    )
    .await
}

/// The [`Error::Encode`] of a batch that could not be encoded for `topic`-`partition`.
pub(crate) fn encode_error(
    version: i16,
    topic: &str,
    partition: i32,
    e: records::RecordsError,
) -> Error {
    Error::Encode {
        api: API,
        version,
        detail: format!("{}: {e}", partition_context(topic, partition)),
    }
}

/// The Produce request's version `connection` uses.
pub(crate) fn produce_version(connection: &BrokerConnection) -> Result<i16, Error> {
    connection.version_for::<ProduceRequest>()
}

/// Sends `batch`, an encoded v2 record batch (see [`records::BatchBuilder`]),
/// as [`produce_as`] sends the batch it encodes; `transactional_id` is the
/// transactional producer's id when the batch is stamped with its producer.
pub(crate) async fn produce_encoded(
    connection: &BrokerConnection,
    topic: &str,
    partition: i32,
    batch: bytes::Bytes,
    options: &ProduceOptions,
    transactional_id: Option<&str>,
) -> Result<i64, Error> {
    let version = connection.version_for::<ProduceRequest>()?;
    let timeout_ms = i32::try_from(options.timeout.as_millis()).unwrap_or(i32::MAX);
    let request = ProduceRequest::default()
        .with_transactional_id(
            transactional_id.map(|id| TransactionalId(StrBytes::from_string(id.to_owned()))),
        )
        .with_acks(-1)
        .with_timeout_ms(timeout_ms)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(batch)),
                ]),
        ]);
    let response = connection.send_with_version(request, version).await?;
    let answer = response
        .responses
        .iter()
        .filter(|t| t.name.0.as_str() == topic)
        .flat_map(|t| t.partition_responses.iter())
        .find(|p| p.index == partition)
        .ok_or_else(|| Error::MalformedResponse {
            broker: connection.address().to_string(),
            api: API,
            version,
            detail: format!("no answer for {}", partition_context(topic, partition)),
        })?;
    let mut context = partition_context(topic, partition);
    if let Some(message) = answer.error_message.as_ref().filter(|m| !m.is_empty()) {
        context.push_str(&format!(" (broker says: {})", message.as_str()));
    }
    for record_error in &answer.record_errors {
        if let Some(message) = &record_error.batch_index_error_message {
            context.push_str(&format!(
                " (record {}: {})",
                record_error.batch_index,
                message.as_str()
            ));
        }
    }
    Error::check_code(API, answer.error_code, context)?;
    Ok(answer.base_offset)
}
