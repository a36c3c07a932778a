//! Committed offsets: OffsetFetch for many groups at once and OffsetCommit for one,
//! and the types they take and return.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    OffsetCommitRequest, OffsetFetchRequest, OffsetFetchResponse,
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
    offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    },
};
use kafka_protocol::protocol::StrBytes;

use super::names::{group_id, topic_name};
use crate::admin::{TopicPartition, is_coordinator_error};
use crate::client::{BrokerInfo, Client};
use crate::connection::BrokerConnection;
use crate::error::Error;

/// Most groups put in one batched (v8+) OffsetFetch request by default.
pub(crate) const DEFAULT_GROUPS_PER_OFFSET_FETCH: usize = 200;

/// A committed offset of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// The committed offset; `None` when nothing is committed (Kafka's -1).
    pub offset: Option<i64>,
    /// The leader epoch committed with it; `None` when unknown (-1).
    pub leader_epoch: Option<i32>,
    /// The commit's metadata string (`""` when null).
    pub metadata: String,
}

/// A group's committed offsets, one result per partition.
pub type GroupOffsets = BTreeMap<TopicPartition, Result<CommittedOffset, Error>>;

/// One partition of a group's OffsetFetch answer, borrowed from the response:
/// what [`Client::fetch_group_offsets_as`] hands its builder.
#[derive(Debug)]
pub struct FetchedOffset<'a> {
    /// The topic.
    pub topic: &'a str,
    /// The partition index.
    pub partition: i32,
    /// The committed offset, or the partition's error.
    pub committed: Result<CommittedRef<'a>, Error>,
}

/// A committed offset borrowed from an OffsetFetch response (see
/// [`CommittedOffset`], its owned form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommittedRef<'a> {
    /// The committed offset; `None` when nothing is committed (Kafka's -1).
    pub offset: Option<i64>,
    /// The leader epoch committed with it; `None` when unknown (-1).
    pub leader_epoch: Option<i32>,
    /// The commit's metadata string (`""` when null).
    pub metadata: &'a str,
}

/// Options of [`Client::fetch_group_offsets_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchOptions {
    /// Partitions to fetch for every group; `None` (the default) fetches
    /// every partition the group has committed offsets for.
    pub partitions: Option<Vec<TopicPartition>>,
    /// Ask for stable offsets only (KIP-447, v7+): partitions with pending
    /// transactional commits answer UNSTABLE_OFFSET_COMMIT.
    pub require_stable: bool,
    /// Most groups per OffsetFetch request (v8+). `1` sends one request per
    /// group. Default 200.
    pub max_groups_per_request: usize,
}

impl Default for OffsetFetchOptions {
    fn default() -> Self {
        OffsetFetchOptions {
            partitions: None,
            require_stable: false,
            max_groups_per_request: DEFAULT_GROUPS_PER_OFFSET_FETCH,
        }
    }
}

/// An offset to commit for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetToCommit {
    /// The offset (the next record to consume, by Kafka's convention).
    pub offset: i64,
    /// The leader epoch of the record before `offset`, if known (sent with
    /// OffsetCommit v6+).
    pub leader_epoch: Option<i32>,
    /// The metadata string to store with it.
    pub metadata: String,
}

impl OffsetToCommit {
    /// An offset with no leader epoch and empty metadata.
    pub fn new(offset: i64) -> Self {
        OffsetToCommit {
            offset,
            leader_epoch: None,
            metadata: String::new(),
        }
    }
}

/// Per-partition results of a commit that reached the coordinator.
pub type CommitResults = BTreeMap<TopicPartition, Result<(), Error>>;

fn optional(value: i32) -> Option<i32> {
    (value >= 0).then_some(value)
}

impl Client {
    /// Fetches the committed offsets of every partition of many groups at
    /// once (see [`fetch_group_offsets_with`](Self::fetch_group_offsets_with)).
    pub async fn fetch_group_offsets(
        &self,
        groups: &[String],
    ) -> IndexMap<String, Result<GroupOffsets, Error>> {
        self.fetch_group_offsets_with(groups, &OffsetFetchOptions::default())
            .await
    }

    /// Fetches committed offsets of many groups: groups are sorted by
    /// coordinator and each coordinator gets multi-group OffsetFetch
    /// requests (v8+, up to `max_groups_per_request` groups each), or one
    /// request per group from brokers before v8. Each group has its own
    /// result, each partition too. A group that does not exist (or has no
    /// commits) has an empty map. Results keep the order of `groups`.
    pub async fn fetch_group_offsets_with(
        &self,
        groups: &[String],
        options: &OffsetFetchOptions,
    ) -> IndexMap<String, Result<GroupOffsets, Error>> {
        self.fetch_group_offsets_as(groups, options, owned_offsets)
            .await
    }

    /// [`fetch_group_offsets_with`](Self::fetch_group_offsets_with), each
    /// group's answer handed to `build` as it is decoded, borrowed from the
    /// response, so the caller builds the shape it keeps (no [`GroupOffsets`]
    /// map in between). `build` sees the partitions of one group that
    /// answered without a group-level error, in the response's order; a
    /// partition's error is in its [`FetchedOffset::committed`].
    ///
    /// The requests to one coordinator go round its
    /// `coordinator_connections` (lanes): a broker handles the requests of one
    /// connection one at a time, so with several lanes it works on several
    /// batches at once.
    pub async fn fetch_group_offsets_as<T, F>(
        &self,
        groups: &[String],
        options: &OffsetFetchOptions,
        build: F,
    ) -> IndexMap<String, Result<T, Error>>
    where
        T: Send + 'static,
        F: Fn(&mut dyn Iterator<Item = FetchedOffset<'_>>) -> T + Send + Sync + 'static,
    {
        let options = std::sync::Arc::new(options.clone());
        let build = std::sync::Arc::new(build);
        self.per_coordinator("OffsetFetch", groups, move |client, broker, bucket| {
            let options = options.clone();
            let build = build.clone();
            async move {
                client
                    .fetch_offsets_on(&broker, bucket, &options, build)
                    .await
            }
        })
        .await
    }

    async fn fetch_offsets_on<T, F>(
        &self,
        broker: &BrokerInfo,
        groups: Vec<String>,
        options: &OffsetFetchOptions,
        build: std::sync::Arc<F>,
    ) -> Result<Vec<(String, Result<T, Error>)>, Error>
    where
        T: Send + 'static,
        F: Fn(&mut dyn Iterator<Item = FetchedOffset<'_>>) -> T + Send + Sync + 'static,
    {
        let connection = self.connection_to(broker).await?;
        let version = connection.version_for::<OffsetFetchRequest>()?;
        let topics = options.partitions.as_ref().map(|parts| {
            let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
            for tp in parts {
                by_topic.entry(&tp.topic).or_default().push(tp.partition);
            }
            by_topic
        });
        let require_stable = options.require_stable && version >= 7;
        let batch = if version >= 8 {
            options.max_groups_per_request.max(1)
        } else {
            1
        };
        let requests = groups.len().div_ceil(batch);
        let connections = self.coordinator_lanes(broker, connection, requests).await;
        let mut tasks = tokio::task::JoinSet::new();
        for (i, chunk) in groups.chunks(batch).enumerate() {
            let mut request = OffsetFetchRequest::default().with_require_stable(require_stable);
            if version >= 8 {
                request.groups = chunk
                    .iter()
                    .map(|g| {
                        OffsetFetchRequestGroup::default()
                            .with_group_id(group_id(g))
                            .with_topics(topics.as_ref().map(|t| {
                                t.iter()
                                    .map(|(name, parts)| {
                                        OffsetFetchRequestTopics::default()
                                            .with_name(topic_name(name))
                                            .with_partition_indexes(parts.clone())
                                    })
                                    .collect()
                            }))
                    })
                    .collect();
            } else {
                let Some(group) = chunk.first() else { continue };
                request.group_id = group_id(group);
                request.topics = topics.as_ref().map(|t| {
                    t.iter()
                        .map(|(name, parts)| {
                            OffsetFetchRequestTopic::default()
                                .with_name(topic_name(name))
                                .with_partition_indexes(parts.clone())
                        })
                        .collect()
                });
            }
            let connection = connections[i % connections.len()].clone();
            let chunk = chunk.to_vec();
            let build = build.clone();
            tasks.spawn(async move {
                match connection.send_with_version(request, version).await {
                    // Converted in the task: the answers of several requests
                    // are decoded side by side.
                    Ok(response) => offsets_from_response(&chunk, &response, version, &*build),
                    Err(e) => chunk.into_iter().map(|g| (g, Err(e.clone()))).collect(),
                }
            });
        }
        let mut out = Vec::with_capacity(groups.len());
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(answers) => out.extend(answers),
                // Its groups are reported missing by per_coordinator.
                Err(_) => tracing::error!("OffsetFetch task ended unexpectedly"),
            }
        }
        Ok(out)
    }

    /// Up to `wanted` connections to `broker` for requests about many groups:
    /// `first` (lane 0) and the further lanes of `coordinator_connections`. A
    /// lane that cannot connect is left out (its requests go to the others).
    async fn coordinator_lanes(
        &self,
        broker: &BrokerInfo,
        first: BrokerConnection,
        wanted: usize,
    ) -> Vec<BrokerConnection> {
        let lanes = self
            .pool()
            .connector()
            .config()
            .coordinator_connections
            .clamp(1, wanted.max(1));
        let mut connections = Vec::with_capacity(lanes);
        connections.push(first);
        for lane in 1..lanes {
            match self.pool().get_lane(&broker.address(), lane).await {
                Ok(c) => connections.push(c),
                Err(e) => {
                    tracing::debug!(broker = %broker.address(), lane, error = %e, "coordinator lane unavailable; using the others");
                    break;
                }
            }
        }
        connections
    }

    /// Commits offsets for `group` the way an admin does (Java's
    /// `alterConsumerGroupOffsets`): OffsetCommit with no member id and
    /// generation (member epoch) -1, which the coordinator accepts only
    /// while the group has no members.
    ///
    /// `Err` when nothing was committed: the group is active
    /// ([`Error::is_group_active`]; never retried — nothing is changed),
    /// the coordinator stayed unavailable until the deadline, or a
    /// non-retriable group error (authorization, ...). `Ok` holds one
    /// result per partition (e.g. OFFSET_METADATA_TOO_LARGE for one of
    /// them). Committing to a group that does not exist creates it (state
    /// `Empty`).
    pub async fn commit_group_offsets(
        &self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, OffsetToCommit>,
    ) -> Result<CommitResults, Error> {
        self.retry("OffsetCommit", || async {
            let result = self.commit_once(group, offsets).await;
            self.note_coordinator(group, result)
        })
        .await
    }

    async fn commit_once(
        &self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, OffsetToCommit>,
    ) -> Result<CommitResults, Error> {
        let connection = self.coordinator_connection(group).await?;
        let version = connection.version_for::<OffsetCommitRequest>()?;
        let mut by_topic: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for (tp, commit) in offsets {
            let mut partition = OffsetCommitRequestPartition::default()
                .with_partition_index(tp.partition)
                .with_committed_offset(commit.offset)
                .with_committed_metadata(Some(StrBytes::from_string(commit.metadata.clone())));
            if version >= 6 {
                partition.committed_leader_epoch = commit.leader_epoch.unwrap_or(-1);
            }
            by_topic.entry(&tp.topic).or_default().push(partition);
        }
        let request = OffsetCommitRequest::default()
            .with_group_id(group_id(group))
            .with_generation_id_or_member_epoch(-1)
            .with_member_id(StrBytes::default())
            .with_topics(
                by_topic
                    .into_iter()
                    .map(|(name, partitions)| {
                        OffsetCommitRequestTopic::default()
                            .with_name(topic_name(name))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        let response = connection.send_with_version(request, version).await?;
        let mut results = CommitResults::new();
        for topic in &response.topics {
            for p in &topic.partitions {
                let tp = TopicPartition::new(topic.name.0.to_string(), p.partition_index);
                let context = format!("group {group:?}, topic-partition {tp}");
                let result = Error::check_code("OffsetCommit", p.error_code, context);
                // Group-level errors come once per partition: the whole
                // commit failed.
                if let Err(e) = &result
                    && (e.is_group_active()
                        || is_coordinator_error(e)
                        || matches!(
                            e.kafka_error(),
                            Some(
                                ResponseError::GroupAuthorizationFailed
                                    | ResponseError::InvalidGroupId
                                    | ResponseError::GroupIdNotFound
                            )
                        ))
                {
                    return Err(e.clone());
                }
                results.insert(tp, result);
            }
        }
        for tp in offsets.keys() {
            if !results.contains_key(tp) {
                results.insert(
                    tp.clone(),
                    Err(Error::MalformedResponse {
                        broker: connection.address().to_string(),
                        api: "OffsetCommit",
                        version,
                        detail: format!("no result for topic-partition {tp} of group {group:?}"),
                    }),
                );
            }
        }
        Ok(results)
    }
}

/// A group's answer as [`GroupOffsets`].
fn owned_offsets(partitions: &mut dyn Iterator<Item = FetchedOffset<'_>>) -> GroupOffsets {
    partitions
        .map(|p| {
            let tp = TopicPartition::new(p.topic, p.partition);
            let committed = p.committed.map(|c| CommittedOffset {
                offset: c.offset,
                leader_epoch: c.leader_epoch,
                metadata: c.metadata.to_owned(),
            });
            (tp, committed)
        })
        .collect()
}

/// The partitions of one group's answer, as [`FetchedOffset`]s.
fn fetched<'a>(
    group: &'a str,
    topic: &'a str,
    partitions: impl Iterator<Item = (i32, i64, i32, &'a Option<StrBytes>, i16)> + 'a,
) -> impl Iterator<Item = FetchedOffset<'a>> + 'a {
    partitions.map(move |(index, offset, epoch, metadata, code)| {
        // The error's context only for an error: formatting it for every
        // partition cost an allocation per group-partition of the answer.
        let checked = if code == 0 {
            Ok(())
        } else {
            let tp = TopicPartition::new(topic, index);
            let context = format!("group {group:?}, topic-partition {tp}");
            Error::check_code("OffsetFetch", code, context)
        };
        FetchedOffset {
            topic,
            partition: index,
            committed: checked.map(|()| CommittedRef {
                offset: (offset >= 0).then_some(offset),
                leader_epoch: optional(epoch),
                metadata: metadata.as_deref().unwrap_or(""),
            }),
        }
    })
}

/// A group's result from its error code and, when there is none, `build`'s
/// shape of its partitions.
fn group_result<'a, T>(
    group: &str,
    code: i16,
    partitions: impl Iterator<Item = FetchedOffset<'a>>,
    build: &impl Fn(&mut dyn Iterator<Item = FetchedOffset<'_>>) -> T,
) -> Result<T, Error> {
    match ResponseError::try_from_code(code) {
        // No such group: no committed offsets.
        Some(ResponseError::GroupIdNotFound) => {
            Ok(build(&mut std::iter::empty::<FetchedOffset<'_>>()))
        }
        _ => Error::check_code("OffsetFetch", code, format!("group {group:?}"))
            .map(|()| build(&mut partitions.into_iter())),
    }
}

/// Turns an OffsetFetch response into one result per group of `groups`, each
/// group's partitions shaped by `build`.
fn offsets_from_response<T>(
    groups: &[String],
    response: &OffsetFetchResponse,
    version: i16,
    build: &impl Fn(&mut dyn Iterator<Item = FetchedOffset<'_>>) -> T,
) -> Vec<(String, Result<T, Error>)> {
    if version >= 8 {
        let mut out: Vec<(String, Result<T, Error>)> = Vec::with_capacity(groups.len());
        // Groups asked for and not answered yet: a group the broker did not
        // answer is an error, a group it answered twice or did not ask about
        // is kept as the broker sent it (no quadratic search either way).
        let mut asked: std::collections::HashSet<&str> =
            groups.iter().map(String::as_str).collect();
        for g in &response.groups {
            let id: &str = &g.group_id.0;
            asked.remove(id);
            let partitions = g.topics.iter().flat_map(|t| {
                fetched(
                    id,
                    &t.name.0,
                    t.partitions.iter().map(|p| {
                        (
                            p.partition_index,
                            p.committed_offset,
                            p.committed_leader_epoch,
                            &p.metadata,
                            p.error_code,
                        )
                    }),
                )
            });
            let result = group_result(id, g.error_code, partitions, build);
            out.push((id.to_owned(), result));
        }
        for group in groups.iter().filter(|g| asked.contains(g.as_str())) {
            out.push((
                group.clone(),
                Err(Error::made_up(
                    "OffsetFetch",
                    ResponseError::UnknownServerError,
                    format!("group {group:?} missing from the response"),
                )),
            ));
        }
        out
    } else {
        let Some(group) = groups.first() else {
            return Vec::new();
        };
        let partitions = response.topics.iter().flat_map(|t| {
            fetched(
                group,
                &t.name.0,
                t.partitions.iter().map(|p| {
                    (
                        p.partition_index,
                        p.committed_offset,
                        p.committed_leader_epoch,
                        &p.metadata,
                        p.error_code,
                    )
                }),
            )
        });
        vec![(
            group.clone(),
            group_result(group, response.error_code, partitions, build),
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::offset_fetch_response::{
        OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
    };

    fn partition(index: i32, offset: i64, code: i16) -> OffsetFetchResponsePartitions {
        OffsetFetchResponsePartitions::default()
            .with_partition_index(index)
            .with_committed_offset(offset)
            .with_committed_leader_epoch(-1)
            .with_metadata(None)
            .with_error_code(code)
    }

    #[test]
    fn multi_group_response_keeps_group_and_partition_errors_apart() {
        let response = OffsetFetchResponse::default().with_groups(vec![
            OffsetFetchResponseGroup::default()
                .with_group_id(group_id("a"))
                .with_topics(vec![
                    OffsetFetchResponseTopics::default()
                        .with_name(topic_name("t"))
                        .with_partitions(vec![
                            partition(0, 5, 0),
                            partition(1, -1, 0),
                            partition(2, -1, 88),
                        ]),
                ]),
            OffsetFetchResponseGroup::default()
                .with_group_id(group_id("b"))
                .with_error_code(16),
            OffsetFetchResponseGroup::default()
                .with_group_id(group_id("c"))
                .with_error_code(69),
        ]);
        let groups = ["a", "b", "c", "d"].map(String::from);
        let out: BTreeMap<_, _> = offsets_from_response(&groups, &response, 9, &owned_offsets)
            .into_iter()
            .collect();
        let a = out["a"].as_ref().expect("group a");
        let p0 = a[&TopicPartition::new("t", 0)].as_ref().expect("p0");
        assert_eq!(
            (p0.offset, p0.leader_epoch, p0.metadata.as_str()),
            (Some(5), None, "")
        );
        assert_eq!(
            a[&TopicPartition::new("t", 1)].as_ref().expect("p1").offset,
            None
        );
        let p2 = a[&TopicPartition::new("t", 2)]
            .as_ref()
            .expect_err("p2 failed");
        assert_eq!(p2.kafka_error(), Some(ResponseError::UnstableOffsetCommit));
        let b = out["b"].as_ref().expect_err("group b failed");
        assert_eq!(b.kafka_error(), Some(ResponseError::NotCoordinator));
        assert!(out["c"].as_ref().expect("not found is empty").is_empty());
        assert!(
            out["d"].is_err(),
            "a group missing from the response is an error"
        );
    }
}
