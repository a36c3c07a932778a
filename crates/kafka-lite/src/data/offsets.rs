//! ListOffsets: the earliest, latest or first-at-a-timestamp offset of
//! partitions, on one broker.

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::common::{IsolationLevel, partition_context};
use crate::{BrokerConnection, Error};

const API: &str = "ListOffsets";

/// Which offset of a partition to look up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OffsetSpec {
    /// The log start offset (the first offset still stored).
    Earliest,
    /// The log end: the high watermark under
    /// [`IsolationLevel::ReadUncommitted`], the last stable offset under
    /// [`IsolationLevel::ReadCommitted`]. This is the offset the next
    /// record will get (or, for the LSO, the first offset not yet readable).
    Latest,
    /// The record with the largest timestamp (ListOffsets v7+, Kafka 3.0+).
    MaxTimestamp,
    /// The first record whose timestamp is at or after this time, in
    /// milliseconds since the Unix epoch.
    Timestamp(i64),
}

impl OffsetSpec {
    /// The protocol's `timestamp` field for this spec.
    fn to_protocol(self) -> i64 {
        match self {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
            OffsetSpec::MaxTimestamp => -3,
            OffsetSpec::Timestamp(ms) => ms,
        }
    }
}

/// The answer for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartitionOffset {
    /// The offset; `None` when a [`OffsetSpec::Timestamp`] lookup found no
    /// record at or after the time (or [`OffsetSpec::MaxTimestamp`] an empty
    /// partition).
    pub offset: Option<i64>,
    /// The timestamp of the record found, for timestamp lookups; `None` for
    /// [`OffsetSpec::Earliest`] and [`OffsetSpec::Latest`].
    pub timestamp: Option<i64>,
    /// The leader epoch of the record found, when the broker knows it.
    pub leader_epoch: Option<i32>,
}

/// One line of a ListOffsets result: the question and its answer.
#[derive(Debug)]
pub struct ListedOffset {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// What was asked.
    pub spec: OffsetSpec,
    /// The offset, or the partition's own error (e.g.
    /// NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION).
    pub result: Result<PartitionOffset, Error>,
}

/// Looks up offsets of partitions led by the broker behind `connection`.
///
/// Answers come back in the order of `queries`, each with its own result.
/// Kafka allows a partition only once per request, so asking about the
/// same partition several times costs one request per repetition. A failed
/// request (connection, timeout, version) fails the whole call.
pub(super) async fn list_offsets_on(
    connection: &BrokerConnection,
    queries: &[(&str, i32, OffsetSpec)],
    isolation: IsolationLevel,
) -> Result<Vec<ListedOffset>, Error> {
    let version = connection.version_for::<ListOffsetsRequest>()?;
    if version < 7 && queries.iter().any(|q| q.2 == OffsetSpec::MaxTimestamp) {
        return Err(Error::UnsupportedVersion {
            broker: connection.address().to_string(),
            api: "ListOffsets (MaxTimestamp needs v7+)",
            broker_range: connection
                .broker_versions(<ListOffsetsRequest as kafka_protocol::protocol::Request>::KEY),
            supported_range: kafka_protocol::protocol::VersionRange { min: 7, max: 8 },
        });
    }

    let mut answers: Vec<Option<ListedOffset>> = queries.iter().map(|_| None).collect();
    for round in rounds(queries) {
        let mut request = ListOffsetsRequest::default()
            .with_replica_id((-1).into())
            .with_isolation_level(isolation.to_protocol());
        for &index in &round {
            let Some(&(topic, partition, spec)) = queries.get(index) else {
                continue;
            };
            let partition = ListOffsetsPartition::default()
                .with_partition_index(partition)
                .with_current_leader_epoch(-1)
                .with_timestamp(spec.to_protocol());
            match request
                .topics
                .iter_mut()
                .find(|t| t.name.0.as_str() == topic)
            {
                Some(existing) => existing.partitions.push(partition),
                None => request.topics.push(
                    ListOffsetsTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                        .with_partitions(vec![partition]),
                ),
            }
        }
        let response = connection.send_with_version(request, version).await?;
        for &index in &round {
            let Some(&(topic, partition, spec)) = queries.get(index) else {
                continue;
            };
            let found = response
                .topics
                .iter()
                .filter(|t| t.name.0.as_str() == topic)
                .flat_map(|t| t.partitions.iter())
                .find(|p| p.partition_index == partition);
            let result = match found {
                None => Err(Error::MalformedResponse {
                    broker: connection.address().to_string(),
                    api: API,
                    version,
                    detail: format!("no answer for {}", partition_context(topic, partition)),
                }),
                Some(p) => {
                    Error::check_code(API, p.error_code, partition_context(topic, partition)).map(
                        |()| PartitionOffset {
                            offset: (p.offset >= 0).then_some(p.offset),
                            timestamp: (p.offset >= 0 && p.timestamp >= 0).then_some(p.timestamp),
                            leader_epoch: (p.leader_epoch >= 0).then_some(p.leader_epoch),
                        },
                    )
                }
            };
            if let Some(slot) = answers.get_mut(index) {
                *slot = Some(ListedOffset {
                    topic: topic.to_string(),
                    partition,
                    spec,
                    result,
                });
            }
        }
    }
    Ok(answers.into_iter().flatten().collect())
}

/// Splits query indexes into requests in which each partition appears once.
fn rounds(queries: &[(&str, i32, OffsetSpec)]) -> Vec<Vec<usize>> {
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (index, &(topic, partition, _)) in queries.iter().enumerate() {
        let free = rounds.iter_mut().find(|round| {
            !round.iter().any(|&other| {
                queries
                    .get(other)
                    .is_some_and(|q| q.0 == topic && q.1 == partition)
            })
        });
        match free {
            Some(round) => round.push(index),
            None => rounds.push(vec![index]),
        }
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_partition_goes_to_a_second_request() {
        let queries = [
            ("a", 0, OffsetSpec::Earliest),
            ("a", 1, OffsetSpec::Earliest),
            ("a", 0, OffsetSpec::Latest),
            ("b", 0, OffsetSpec::Latest),
        ];
        assert_eq!(rounds(&queries), vec![vec![0, 1, 3], vec![2]]);
    }

    #[test]
    fn specs_use_kafkas_sentinel_timestamps() {
        assert_eq!(OffsetSpec::Earliest.to_protocol(), -2);
        assert_eq!(OffsetSpec::Latest.to_protocol(), -1);
        assert_eq!(OffsetSpec::MaxTimestamp.to_protocol(), -3);
        assert_eq!(
            OffsetSpec::Timestamp(1_700_000_000_000).to_protocol(),
            1_700_000_000_000
        );
    }
}
