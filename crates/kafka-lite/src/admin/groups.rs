//! Consumer group operations: list, describe, fetch and commit offsets.
//!
//! # Classic and KIP-848 groups
//!
//! Kafka 4.x has two kinds of consumer groups: *classic* ones (the
//! JoinGroup/SyncGroup protocol; DescribeGroups describes them) and
//! *consumer* ones (KIP-848; ConsumerGroupDescribe describes them).
//! Measured against Kafka 4.1.1: DescribeGroups (v5) reports a KIP-848
//! group exactly like a group that does not exist (state `Dead`, empty
//! protocol type, no error), and ConsumerGroupDescribe answers
//! GROUP_ID_NOT_FOUND both for classic groups and for groups that do not
//! exist. So [`Client::describe_groups`] sends DescribeGroups for every
//! group, then ConsumerGroupDescribe for those reported `Dead`; a group
//! neither describes is `Dead` (it does not exist).

use std::collections::BTreeMap;
use std::fmt;

use indexmap::IndexMap;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_describe_response::Member as ConsumerGroupMember;
use kafka_protocol::messages::describe_groups_response::DescribedGroupMember;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, DescribeGroupsRequest, GroupId, ListGroupsRequest,
    OffsetCommitRequest, OffsetFetchRequest, OffsetFetchResponse, TopicName,
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
    offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    },
};
use kafka_protocol::protocol::StrBytes;

use super::{TopicPartition, is_coordinator_error};
use crate::client::{BrokerInfo, Client};
use crate::error::Error;

/// Most groups put in one batched (v8+) OffsetFetch request by default.
pub(crate) const DEFAULT_GROUPS_PER_OFFSET_FETCH: usize = 200;

/// The state of a consumer group, as the coordinator reports it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GroupState {
    /// No members (offsets may be committed).
    Empty,
    /// Members joined and have their assignment.
    Stable,
    /// Classic: a rebalance started; members must rejoin.
    PreparingRebalance,
    /// Classic: waiting for the leader's assignment.
    CompletingRebalance,
    /// The group does not exist (or is being removed).
    Dead,
    /// KIP-848: the coordinator is computing a new assignment.
    Assigning,
    /// KIP-848: members are moving to a new assignment.
    Reconciling,
    /// A state this version of kafka-lite does not know.
    Unknown(String),
}

impl GroupState {
    /// Parses the state name Kafka sends (either spelling Kafka uses:
    /// `PreparingRebalance` or `preparing_rebalance`, case-insensitive).
    pub fn parse(name: &str) -> GroupState {
        let normal: String = name
            .chars()
            .filter(|c| *c != '_')
            .map(|c| c.to_ascii_lowercase())
            .collect();
        match normal.as_str() {
            "empty" => GroupState::Empty,
            "stable" => GroupState::Stable,
            "preparingrebalance" => GroupState::PreparingRebalance,
            "completingrebalance" => GroupState::CompletingRebalance,
            "dead" => GroupState::Dead,
            "assigning" => GroupState::Assigning,
            "reconciling" => GroupState::Reconciling,
            _ => GroupState::Unknown(name.to_string()),
        }
    }

    /// Whether the group has (or is getting) members, i.e. is neither
    /// `Empty` nor `Dead`.
    pub fn is_active(&self) -> bool {
        !matches!(self, GroupState::Empty | GroupState::Dead)
    }
}

impl fmt::Display for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupState::Empty => f.write_str("Empty"),
            GroupState::Stable => f.write_str("Stable"),
            GroupState::PreparingRebalance => f.write_str("PreparingRebalance"),
            GroupState::CompletingRebalance => f.write_str("CompletingRebalance"),
            GroupState::Dead => f.write_str("Dead"),
            GroupState::Assigning => f.write_str("Assigning"),
            GroupState::Reconciling => f.write_str("Reconciling"),
            GroupState::Unknown(s) => f.write_str(s),
        }
    }
}

/// The kind of group (ListGroups v5 `group_type`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GroupType {
    /// The classic JoinGroup/SyncGroup protocol.
    Classic,
    /// The KIP-848 consumer protocol.
    Consumer,
    /// Another type (`share`, `streams`, ...).
    Other(String),
}

impl GroupType {
    /// Parses Kafka's type name (case-insensitive).
    pub fn parse(name: &str) -> GroupType {
        match name.to_ascii_lowercase().as_str() {
            "classic" => GroupType::Classic,
            "consumer" => GroupType::Consumer,
            _ => GroupType::Other(name.to_string()),
        }
    }
}

impl fmt::Display for GroupType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupType::Classic => f.write_str("classic"),
            GroupType::Consumer => f.write_str("consumer"),
            GroupType::Other(s) => f.write_str(s),
        }
    }
}

/// A group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    /// The group id.
    pub group_id: String,
    /// The protocol type (`consumer` for consumer groups, empty for groups
    /// that only commit offsets).
    pub protocol_type: String,
    /// The state; `None` from brokers older than ListGroups v4.
    pub state: Option<GroupState>,
    /// The type; `None` from brokers older than ListGroups v5.
    pub group_type: Option<GroupType>,
    /// The broker that listed it (its coordinator).
    pub coordinator: BrokerInfo,
}

/// The answer of [`Client::list_groups`]: the groups of every broker that
/// answered, and an error for each broker that did not.
#[derive(Debug, Default)]
pub struct ListedGroups {
    /// Groups, sorted by id.
    pub groups: Vec<ListedGroup>,
    /// Brokers whose ListGroups failed (after retries), with the error.
    pub broker_errors: Vec<(BrokerInfo, Error)>,
}

/// One member of a described group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The member id.
    pub member_id: String,
    /// The static membership id, if any.
    pub instance_id: Option<String>,
    /// The member's `client.id`.
    pub client_id: String,
    /// The member's host.
    pub client_host: String,
}

impl GroupMember {
    fn new(
        member_id: &StrBytes,
        instance_id: Option<&StrBytes>,
        client_id: &StrBytes,
        client_host: &StrBytes,
    ) -> Self {
        GroupMember {
            member_id: member_id.to_string(),
            instance_id: instance_id.map(|s| s.to_string()),
            client_id: client_id.to_string(),
            client_host: client_host.to_string(),
        }
    }
}

impl From<&DescribedGroupMember> for GroupMember {
    fn from(m: &DescribedGroupMember) -> Self {
        let instance = m.group_instance_id.as_ref();
        GroupMember::new(&m.member_id, instance, &m.client_id, &m.client_host)
    }
}

impl From<&ConsumerGroupMember> for GroupMember {
    fn from(m: &ConsumerGroupMember) -> Self {
        let instance = m.instance_id.as_ref();
        GroupMember::new(&m.member_id, instance, &m.client_id, &m.client_host)
    }
}

/// A group as DescribeGroups or ConsumerGroupDescribe reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// The group id.
    pub group_id: String,
    /// The state (`Dead` for a group that does not exist).
    pub state: GroupState,
    /// Classic or KIP-848 consumer group. A group that does not exist is
    /// reported as `Classic` with state `Dead`.
    pub group_type: GroupType,
    /// Classic groups: the protocol type (`consumer`, or empty for a group
    /// that only has committed offsets). KIP-848 groups: `consumer`.
    pub protocol_type: String,
    /// Classic groups: the chosen assignment protocol (`range`, ...).
    /// KIP-848 groups: the server-side assignor (`uniform`, ...).
    pub protocol: String,
    /// The members.
    pub members: Vec<GroupMember>,
    /// The coordinator that described it.
    pub coordinator: BrokerInfo,
}

impl GroupDescription {
    /// Number of members.
    pub fn member_count(&self) -> usize {
        self.members.len()
    }
}

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

fn group_id(name: &str) -> GroupId {
    GroupId(StrBytes::from_string(name.to_string()))
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

fn optional(value: i32) -> Option<i32> {
    (value >= 0).then_some(value)
}

impl Client {
    /// Lists the groups of every broker (each coordinates its own groups),
    /// asking all brokers in parallel. Fills state (ListGroups v4+) and type
    /// (v5+). A broker that fails (after retries) is reported in
    /// [`ListedGroups::broker_errors`]; the others' groups are still listed.
    pub async fn list_groups(&self) -> Result<ListedGroups, Error> {
        let snapshot = self.refresh_metadata(Some(&[])).await?;
        let mut tasks = tokio::task::JoinSet::new();
        for broker in snapshot.brokers.values().cloned() {
            let client = self.clone();
            tasks.spawn(async move {
                let result = client
                    .retry("ListGroups", || client.list_groups_of(&broker))
                    .await;
                (broker, result)
            });
        }
        let mut listed = ListedGroups::default();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((_, Ok(groups))) => listed.groups.extend(groups),
                Ok((broker, Err(e))) => listed.broker_errors.push((broker, e)),
                Err(e) => tracing::error!(error = %e, "ListGroups task ended unexpectedly"),
            }
        }
        listed.groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        listed
            .broker_errors
            .sort_by_key(|(broker, _)| broker.node_id);
        Ok(listed)
    }

    async fn list_groups_of(&self, broker: &BrokerInfo) -> Result<Vec<ListedGroup>, Error> {
        let connection = self.connection_to(broker).await?;
        let version = connection.version_for::<ListGroupsRequest>()?;
        let response = connection
            .send_with_version(ListGroupsRequest::default(), version)
            .await?;
        Error::check_code("ListGroups", response.error_code, broker.to_string())?;
        Ok(response
            .groups
            .iter()
            .map(|g| ListedGroup {
                group_id: g.group_id.0.to_string(),
                protocol_type: g.protocol_type.to_string(),
                state: (version >= 4).then(|| GroupState::parse(&g.group_state)),
                group_type: (version >= 5).then(|| GroupType::parse(&g.group_type)),
                coordinator: broker.clone(),
            })
            .collect())
    }

    /// Describes many groups, classic and KIP-848 alike (see the module
    /// documentation), with one DescribeGroups (plus at most one
    /// ConsumerGroupDescribe) per coordinator. A group that does not exist
    /// is `Ok` with state [`GroupState::Dead`]. Results keep the order of
    /// `groups`.
    pub async fn describe_groups(
        &self,
        groups: &[String],
    ) -> IndexMap<String, Result<GroupDescription, Error>> {
        self.per_coordinator(
            "DescribeGroups",
            groups,
            |client, broker, bucket| async move { client.describe_on(&broker, &bucket).await },
        )
        .await
    }

    async fn describe_on(
        &self,
        broker: &BrokerInfo,
        groups: &[String],
    ) -> Result<Vec<(String, Result<GroupDescription, Error>)>, Error> {
        let connection = self.connection_to(broker).await?;
        let version = connection.version_for::<DescribeGroupsRequest>()?;
        let request = DescribeGroupsRequest::default()
            .with_groups(groups.iter().map(|g| group_id(g)).collect());
        let response = connection.send_with_version(request, version).await?;
        let mut out = Vec::with_capacity(groups.len());
        let mut maybe_consumer = Vec::new();
        // A classic group that does not exist; the base of every description.
        let absent = |id: &str| GroupDescription {
            group_id: id.to_string(),
            state: GroupState::Dead,
            group_type: GroupType::Classic,
            protocol_type: String::new(),
            protocol: String::new(),
            members: Vec::new(),
            coordinator: broker.clone(),
        };
        for g in &response.groups {
            let id = g.group_id.0.to_string();
            let context = format!("group {id:?}");
            let error = ResponseError::try_from_code(g.error_code);
            let state = GroupState::parse(&g.group_state);
            // v6+ answers GROUP_ID_NOT_FOUND where v5 answers Dead.
            let dead = error == Some(ResponseError::GroupIdNotFound)
                || (error.is_none() && state == GroupState::Dead);
            if dead {
                maybe_consumer.push(id);
                continue;
            }
            let result = Error::check_code("DescribeGroups", g.error_code, context).map(|()| {
                GroupDescription {
                    state,
                    protocol_type: g.protocol_type.to_string(),
                    protocol: g.protocol_data.to_string(),
                    members: g.members.iter().map(GroupMember::from).collect(),
                    ..absent(&id)
                }
            });
            out.push((id, result));
        }
        if maybe_consumer.is_empty() {
            return Ok(out);
        }
        let Ok(cgd_version) = connection.version_for::<ConsumerGroupDescribeRequest>() else {
            // A broker without KIP-848 has no consumer groups.
            out.extend(maybe_consumer.iter().map(|id| (id.clone(), Ok(absent(id)))));
            return Ok(out);
        };
        let request = ConsumerGroupDescribeRequest::default()
            .with_group_ids(maybe_consumer.iter().map(|g| group_id(g)).collect());
        let response = connection.send_with_version(request, cgd_version).await?;
        for g in &response.groups {
            let id = g.group_id.0.to_string();
            let error = ResponseError::try_from_code(g.error_code);
            let result = match error {
                // Not a consumer group either: it does not exist.
                Some(ResponseError::GroupIdNotFound) => Ok(absent(&id)),
                _ => Error::check_code(
                    "ConsumerGroupDescribe",
                    g.error_code,
                    format!("group {id:?}"),
                )
                .map(|()| GroupDescription {
                    state: GroupState::parse(&g.group_state),
                    group_type: GroupType::Consumer,
                    protocol_type: "consumer".to_string(),
                    protocol: g.assignor_name.to_string(),
                    members: g.members.iter().map(GroupMember::from).collect(),
                    ..absent(&id)
                }),
            };
            out.push((id, result));
        }
        Ok(out)
    }

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
        let options = std::sync::Arc::new(options.clone());
        self.per_coordinator("OffsetFetch", groups, move |client, broker, bucket| {
            let options = options.clone();
            async move { client.fetch_offsets_on(&broker, bucket, &options).await }
        })
        .await
    }

    async fn fetch_offsets_on(
        &self,
        broker: &BrokerInfo,
        groups: Vec<String>,
        options: &OffsetFetchOptions,
    ) -> Result<Vec<(String, Result<GroupOffsets, Error>)>, Error> {
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
        let mut tasks = tokio::task::JoinSet::new();
        for chunk in groups.chunks(batch) {
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
            let connection = connection.clone();
            let chunk = chunk.to_vec();
            tasks.spawn(async move {
                let result = connection.send_with_version(request, version).await;
                (chunk, result)
            });
        }
        let mut out = Vec::with_capacity(groups.len());
        while let Some(joined) = tasks.join_next().await {
            let Ok((chunk, result)) = joined else {
                tracing::error!("OffsetFetch task ended unexpectedly");
                continue;
            };
            match result {
                Ok(response) => out.extend(offsets_from_response(&chunk, &response, version)),
                Err(e) => out.extend(chunk.iter().map(|g| (g.clone(), Err(e.clone())))),
            }
        }
        Ok(out)
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
            if let Err(e) = &result
                && is_coordinator_error(e)
            {
                self.invalidate_coordinator(group);
            }
            result
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

/// Turns an OffsetFetch response into one result per group of `groups`.
fn offsets_from_response(
    groups: &[String],
    response: &OffsetFetchResponse,
    version: i16,
) -> Vec<(String, Result<GroupOffsets, Error>)> {
    let partition =
        |group: &str, topic: &str, index, offset, epoch, metadata: &Option<StrBytes>, code| {
            let tp = TopicPartition::new(topic, index);
            let context = format!("group {group:?}, topic-partition {tp}");
            let result =
                Error::check_code("OffsetFetch", code, context).map(|()| CommittedOffset {
                    offset: (offset >= 0).then_some(offset),
                    leader_epoch: optional(epoch),
                    metadata: metadata.as_ref().map(|m| m.to_string()).unwrap_or_default(),
                });
            (tp, result)
        };
    let group_result = |group: &str, code: i16, offsets: GroupOffsets| {
        match ResponseError::try_from_code(code) {
            // No such group: no committed offsets.
            Some(ResponseError::GroupIdNotFound) => Ok(GroupOffsets::new()),
            _ => {
                Error::check_code("OffsetFetch", code, format!("group {group:?}")).map(|()| offsets)
            }
        }
    };
    if version >= 8 {
        let mut out: Vec<(String, Result<GroupOffsets, Error>)> = Vec::with_capacity(groups.len());
        for g in &response.groups {
            let id = g.group_id.0.to_string();
            let offsets = g
                .topics
                .iter()
                .flat_map(|t| {
                    let id = &id;
                    t.partitions.iter().map(move |p| {
                        partition(
                            id,
                            &t.name.0,
                            p.partition_index,
                            p.committed_offset,
                            p.committed_leader_epoch,
                            &p.metadata,
                            p.error_code,
                        )
                    })
                })
                .collect();
            let result = group_result(&id, g.error_code, offsets);
            out.push((id, result));
        }
        for group in groups {
            if !out.iter().any(|(id, _)| id == group) {
                out.push((
                    group.clone(),
                    Err(Error::made_up(
                        "OffsetFetch",
                        ResponseError::UnknownServerError,
                        format!("group {group:?} missing from the response"),
                    )),
                ));
            }
        }
        out
    } else {
        let Some(group) = groups.first() else {
            return Vec::new();
        };
        let offsets = response
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    partition(
                        group,
                        &t.name.0,
                        p.partition_index,
                        p.committed_offset,
                        p.committed_leader_epoch,
                        &p.metadata,
                        p.error_code,
                    )
                })
            })
            .collect();
        vec![(
            group.clone(),
            group_result(group, response.error_code, offsets),
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::offset_fetch_response::{
        OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
    };

    #[test]
    fn group_states_parse_both_spellings() {
        assert_eq!(GroupState::parse("Stable"), GroupState::Stable);
        assert_eq!(
            GroupState::parse("PreparingRebalance"),
            GroupState::PreparingRebalance
        );
        assert_eq!(
            GroupState::parse("completing_rebalance"),
            GroupState::CompletingRebalance
        );
        assert_eq!(GroupState::parse("ASSIGNING"), GroupState::Assigning);
        assert_eq!(
            GroupState::parse("Frozen"),
            GroupState::Unknown("Frozen".into())
        );
        assert!(GroupState::Reconciling.is_active());
        assert!(!GroupState::Empty.is_active());
    }

    #[test]
    fn group_types_parse() {
        assert_eq!(GroupType::parse("classic"), GroupType::Classic);
        assert_eq!(GroupType::parse("consumer"), GroupType::Consumer);
        assert_eq!(GroupType::parse("share"), GroupType::Other("share".into()));
    }

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
        let out: BTreeMap<_, _> = offsets_from_response(&groups, &response, 9)
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
