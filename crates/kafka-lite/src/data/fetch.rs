//! Fetch: the records of one partition from an offset, on its leader.

use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::{IsolationLevel, partition_context, send};
use crate::records::{self, AbortedTransaction, ConsumerRecord};
use crate::{BrokerConnection, Client, Error};

const API: &str = "Fetch";

/// How to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchOptions {
    /// Most record bytes to return for the partition (and for the whole
    /// response). The broker still returns a first batch larger than this
    /// whole (KIP-74). Default 1 MiB, Kafka's `max.partition.fetch.bytes`.
    pub max_bytes: i32,
    /// How long the broker may wait for new records when there are none
    /// (`fetch.max.wait.ms`). Default 500 ms. Must stay well below the
    /// connection's `request_timeout`.
    pub fetch_wait: Duration,
    /// Which records are visible. Default read_uncommitted.
    pub isolation: IsolationLevel,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            max_bytes: 1024 * 1024,
            fetch_wait: Duration::from_millis(500),
            isolation: IsolationLevel::ReadUncommitted,
        }
    }
}

/// What one fetch of one partition returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPartition {
    /// Data records at or after the requested offset, in offset order:
    /// control records (transaction markers) are never included, nor under
    /// read_committed the records of aborted transactions. Offsets may have
    /// gaps (compaction, transaction markers, aborted records).
    pub records: Vec<ConsumerRecord>,
    /// The partition's high watermark: the offset after the last record
    /// replicated to all in-sync replicas.
    pub high_watermark: i64,
    /// The last stable offset: the first offset of a still-open
    /// transaction, or the high watermark when none is open (-1 if the
    /// broker did not say).
    pub last_stable_offset: i64,
    /// The first offset still in the log (-1 if the broker did not say;
    /// Fetch v5+ always does).
    pub log_start_offset: i64,
    /// Where the next fetch should start: after the last batch returned,
    /// even when its records were all filtered out or compacted away; the
    /// requested offset when nothing was returned.
    pub next_offset: i64,
}

/// Fetches records of `topic`/`partition` from `offset` on the broker behind
/// `connection`, which must lead the partition.
///
/// The broker answers as soon as it has any record at `offset` or later, or
/// after `options.fetch_wait`. No fetch session is used (every request is a
/// full fetch) and topics are named, not identified by id (Fetch v4–12).
///
/// Errors: the partition's Kafka error as [`Error::Kafka`] —
/// OFFSET_OUT_OF_RANGE (see [`Error::is_offset_out_of_range`]) when `offset`
/// is before the log start or after the log end; NOT_LEADER_OR_FOLLOWER and
/// similar retriable codes when leadership moved. Undecodable record data is
/// [`Error::MalformedResponse`].
pub async fn fetch_on(
    connection: &BrokerConnection,
    topic: &str,
    partition: i32,
    offset: i64,
    options: &FetchOptions,
) -> Result<FetchedPartition, Error> {
    fetch_via(None, connection, topic, partition, offset, options).await
}

/// [`fetch_on`], counting the request on `client` if given.
pub(super) async fn fetch_via(
    client: Option<&Client>,
    connection: &BrokerConnection,
    topic: &str,
    partition: i32,
    offset: i64,
    options: &FetchOptions,
) -> Result<FetchedPartition, Error> {
    let version = connection.version_for::<FetchRequest>()?;
    let wait_ms = i32::try_from(options.fetch_wait.as_millis()).unwrap_or(i32::MAX);
    let max_bytes = options.max_bytes.max(1);
    let request = FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(max_bytes)
        .with_isolation_level(options.isolation.to_protocol())
        // Session id 0 with epoch -1: a full fetch that opens no session.
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_current_leader_epoch(-1)
                        .with_fetch_offset(offset)
                        .with_last_fetched_epoch(-1)
                        .with_log_start_offset(-1)
                        .with_partition_max_bytes(max_bytes),
                ]),
        ]);
    let response = send(client, connection, request, version).await?;
    let context = || format!("{} at offset {offset}", partition_context(topic, partition));
    Error::check_code(API, response.error_code, context())?;
    let malformed = |detail: String| Error::MalformedResponse {
        broker: connection.address().to_string(),
        api: API,
        version,
        detail,
    };
    let data = response
        .responses
        .into_iter()
        .filter(|t| t.topic.0.as_str() == topic)
        .flat_map(|t| t.partitions)
        .find(|p| p.partition_index == partition)
        .ok_or_else(|| {
            malformed(format!(
                "no answer for {}",
                partition_context(topic, partition)
            ))
        })?;
    Error::check_code(API, data.error_code, context())?;

    let mut bytes = data.records.unwrap_or_default();
    let batches = records::decode_batches(&mut bytes)
        .map_err(|e| malformed(format!("{}: {e}", context())))?;
    if batches.is_empty() && !bytes.is_empty() {
        // Brokers since 0.10.1 return at least one whole batch however small
        // the limit; only a cut-off first batch ends up here.
        return Err(malformed(format!(
            "{}: the first record batch is cut short ({} bytes returned, limit {max_bytes})",
            context(),
            bytes.len()
        )));
    }
    // The next fetch starts after the last batch, whatever filtering keeps.
    let next_offset = batches
        .last()
        .map_or(offset, |b| b.next_offset())
        .max(offset);
    let batches = match options.isolation {
        IsolationLevel::ReadUncommitted => batches,
        IsolationLevel::ReadCommitted => {
            let aborted: Vec<AbortedTransaction> = data
                .aborted_transactions
                .unwrap_or_default()
                .iter()
                .map(AbortedTransaction::from)
                .collect();
            records::read_committed(batches, &aborted)
        }
    };
    let records = batches
        .into_iter()
        .filter(|batch| !batch.is_control)
        .flat_map(|batch| batch.records)
        // A batch that starts before `offset` is returned whole.
        .filter(|record| record.offset >= offset)
        .collect();
    Ok(FetchedPartition {
        records,
        high_watermark: data.high_watermark,
        last_stable_offset: data.last_stable_offset,
        log_start_offset: data.log_start_offset,
        next_offset,
    })
}
