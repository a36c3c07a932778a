//! The cluster operations the driver needs, on kafka-lite's connection layer.
//!
//! One [`Cluster`] per cluster of a flow: a pool of broker connections plus the
//! few requests the checkpoint engine sends (metadata, group listing and
//! description, batched offset fetch, admin-style offset commit, topic creation,
//! list offsets, fetch and produce of partition 0 of an internal topic). Routing
//! is looked up per call (metadata for partition leaders, FindCoordinator for
//! groups); a failed call invalidates the connection it used, and the driver
//! retries the whole round on its next interval.
//!
//! Requests are filled for the version kafka-lite negotiates with the broker.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use kafka_lite::error::kafka_error_name;
use kafka_lite::{BrokerConnection, BrokerPool, ConnectionConfig, Connector, Error};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, DescribeGroupsRequest, FetchRequest, FindCoordinatorRequest,
    GroupId, ListGroupsRequest, ListOffsetsRequest, MetadataRequest, MetadataResponse,
    OffsetCommitRequest, OffsetFetchRequest, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::core::TopicPartition;

/// A group's committed offsets: `None` = no offset (committed at -1); the
/// string is the commit metadata (`""` for null).
pub type CommittedOffsets = BTreeMap<TopicPartition, Option<(i64, String)>>;

/// One record read from a partition.
#[derive(Clone, Debug)]
pub struct FetchedRecord {
    /// Its offset.
    pub offset: i64,
    /// Its timestamp (ms).
    pub timestamp: i64,
    /// Key bytes (`None` = null).
    pub key: Option<Bytes>,
    /// Value bytes (`None` = null, a tombstone).
    pub value: Option<Bytes>,
}

/// One fetch of one partition.
#[derive(Clone, Debug)]
pub struct Fetched {
    /// Records at or after the requested offset, in order (control records left out).
    pub records: Vec<FetchedRecord>,
    /// The partition's high watermark.
    pub high_watermark: i64,
    /// Where the next fetch starts.
    pub next_offset: i64,
}

/// A record to produce.
#[derive(Clone, Debug)]
pub struct OutRecord {
    /// Key bytes.
    pub key: Vec<u8>,
    /// Value bytes.
    pub value: Vec<u8>,
    /// Timestamp (ms).
    pub timestamp: i64,
}

/// What `create_topic` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The topic was created.
    Created,
    /// It already existed.
    AlreadyExisted,
}

/// What an admin-style offset commit did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Every partition was committed.
    Committed,
    /// The broker refused: the group has active members (UNKNOWN_MEMBER_ID,
    /// ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS).
    GroupActive,
}

/// A described group: its state name and member count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedGroup {
    /// Kafka's state name (`Empty`, `Stable`, `Dead`, ...).
    pub state: String,
    /// Number of members.
    pub members: usize,
}

/// Connections to one cluster and the operations the driver sends to it.
#[derive(Clone, Debug)]
pub struct Cluster {
    alias: String,
    bootstrap: Vec<String>,
    pool: BrokerPool,
    timeout_ms: i32,
}

fn kafka_err(api: &'static str, code: i16, context: impl Into<String>) -> Result<(), Error> {
    Error::check_code(api, code, context)
}

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

impl Cluster {
    /// A cluster reached through `bootstrap` with `config`. Fails on an unusable
    /// TLS configuration; does no network I/O.
    pub fn new(
        alias: &str,
        bootstrap: Vec<String>,
        config: ConnectionConfig,
    ) -> Result<Self, Error> {
        let timeout_ms = i32::try_from(config.request_timeout.as_millis()).unwrap_or(i32::MAX);
        let connector = Connector::new(config)?;
        Ok(Cluster {
            alias: alias.to_owned(),
            bootstrap,
            pool: BrokerPool::new(connector),
            timeout_ms,
        })
    }

    /// The cluster's alias.
    pub fn alias(&self) -> &str {
        &self.alias
    }

    async fn with_conn<T, F, Fut>(&self, address: &str, op: F) -> Result<T, Error>
    where
        F: FnOnce(BrokerConnection) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let conn = self.pool.get(address).await?;
        let result = op(conn).await;
        if let Err(e) = &result
            && e.kafka_error().is_none()
        {
            self.pool.invalidate(address);
        }
        result
    }

    /// Any live broker: the bootstrap addresses in order.
    async fn any_broker(&self) -> Result<(String, BrokerConnection), Error> {
        let mut last = None;
        for address in &self.bootstrap {
            match self.pool.get(address).await {
                Ok(conn) => return Ok((address.clone(), conn)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::InvalidAddress {
            broker: String::new(),
            detail: "no bootstrap servers".into(),
        }))
    }

    async fn metadata(&self, topics: Option<&[&str]>) -> Result<MetadataResponse, Error> {
        let (address, conn) = self.any_broker().await?;
        let mut req = MetadataRequest::default();
        req.topics = topics.map(|ts| {
            ts.iter()
                .map(|t| {
                    let mut mt = MetadataRequestTopic::default();
                    mt.name = Some(TopicName(str_bytes(t)));
                    mt
                })
                .collect()
        });
        req.allow_auto_topic_creation = false;
        let result = conn.send(req).await;
        if result.is_err() {
            self.pool.invalidate(&address);
        }
        result
    }

    fn broker_address(meta: &MetadataResponse, node: BrokerId) -> Option<String> {
        meta.brokers
            .iter()
            .find(|b| b.node_id == node)
            .map(|b| format!("{}:{}", b.host.as_str(), b.port))
    }

    /// Number of brokers in the cluster.
    pub async fn broker_count(&self) -> Result<usize, Error> {
        Ok(self.metadata(Some(&[])).await?.brokers.len())
    }

    /// The leader address of `topic` partition `partition`, waiting up to a few
    /// seconds for a just-created topic to get a leader.
    async fn leader(&self, topic: &str, partition: i32) -> Result<String, Error> {
        let mut attempt = 0u32;
        loop {
            match self.leader_once(topic, partition).await {
                Err(Error::Kafka {
                    error:
                        ResponseError::UnknownTopicOrPartition
                        | ResponseError::LeaderNotAvailable
                        | ResponseError::NotLeaderOrFollower,
                    ..
                }) if attempt < 20 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                other => return other,
            }
        }
    }

    async fn leader_once(&self, topic: &str, partition: i32) -> Result<String, Error> {
        let meta = self.metadata(Some(&[topic])).await?;
        let t = meta
            .topics
            .iter()
            .find(|t| t.name.as_ref().is_some_and(|n| n.as_str() == topic))
            .ok_or_else(|| Error::Kafka {
                api: "Metadata",
                error: ResponseError::UnknownTopicOrPartition,
                context: format!("topic {topic}"),
            })?;
        kafka_err("Metadata", t.error_code, format!("topic {topic}"))?;
        let p = t
            .partitions
            .iter()
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| Error::Kafka {
                api: "Metadata",
                error: ResponseError::UnknownTopicOrPartition,
                context: format!("topic-partition {topic}-{partition}"),
            })?;
        kafka_err("Metadata", p.error_code, format!("{topic}-{partition}"))?;
        Self::broker_address(&meta, p.leader_id).ok_or_else(|| Error::Kafka {
            api: "Metadata",
            error: ResponseError::LeaderNotAvailable,
            context: format!("{topic}-{partition}"),
        })
    }

    /// Whether `topic` exists.
    pub async fn topic_exists(&self, topic: &str) -> Result<bool, Error> {
        let meta = self.metadata(Some(&[topic])).await?;
        match meta
            .topics
            .iter()
            .find(|t| t.name.as_ref().is_some_and(|n| n.as_str() == topic))
        {
            None => Ok(false),
            Some(t) if t.error_code == ResponseError::UnknownTopicOrPartition.code() => Ok(false),
            Some(t) => kafka_err("Metadata", t.error_code, format!("topic {topic}")).map(|()| true),
        }
    }

    /// The coordinator address of each group, retrying for up to ~10 s while
    /// the coordinator is not available (e.g. `__consumer_offsets` being created).
    async fn coordinators(&self, groups: &[String]) -> Result<BTreeMap<String, String>, Error> {
        let mut attempt = 0u32;
        loop {
            match self.coordinators_once(groups).await {
                Err(Error::Kafka {
                    error:
                        ResponseError::CoordinatorNotAvailable
                        | ResponseError::CoordinatorLoadInProgress
                        | ResponseError::NotCoordinator,
                    ..
                }) if attempt < 50 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                other => return other,
            }
        }
    }

    async fn coordinators_once(
        &self,
        groups: &[String],
    ) -> Result<BTreeMap<String, String>, Error> {
        let (address, conn) = self.any_broker().await?;
        let version = conn.version_for::<FindCoordinatorRequest>()?;
        let mut out = BTreeMap::new();
        if version >= 4 {
            for chunk in groups.chunks(100) {
                let mut req = FindCoordinatorRequest::default();
                req.key_type = 0;
                req.coordinator_keys = chunk.iter().map(|g| str_bytes(g)).collect();
                let resp = match conn.send(req).await {
                    Ok(r) => r,
                    Err(e) => {
                        self.pool.invalidate(&address);
                        return Err(e);
                    }
                };
                for c in resp.coordinators {
                    let group = c.key.as_str().to_owned();
                    kafka_err("FindCoordinator", c.error_code, format!("group {group:?}"))?;
                    out.insert(group, format!("{}:{}", c.host.as_str(), c.port));
                }
            }
        } else {
            for group in groups {
                let mut req = FindCoordinatorRequest::default();
                req.key = str_bytes(group);
                let resp = conn.send(req).await?;
                kafka_err(
                    "FindCoordinator",
                    resp.error_code,
                    format!("group {group:?}"),
                )?;
                out.insert(
                    group.clone(),
                    format!("{}:{}", resp.host.as_str(), resp.port),
                );
            }
        }
        Ok(out)
    }

    /// Every consumer group on every broker (classic and consumer protocol groups).
    pub async fn list_groups(&self) -> Result<Vec<String>, Error> {
        let meta = self.metadata(Some(&[])).await?;
        let mut groups = Vec::new();
        for broker in &meta.brokers {
            let address = format!("{}:{}", broker.host.as_str(), broker.port);
            let resp = self
                .with_conn(&address, |conn| async move {
                    conn.send(ListGroupsRequest::default()).await
                })
                .await?;
            kafka_err("ListGroups", resp.error_code, format!("broker {address}"))?;
            groups.extend(resp.groups.into_iter().filter_map(|g| {
                let pt = g.protocol_type.as_str();
                (pt.is_empty() || pt == "consumer").then(|| g.group_id.0.as_str().to_owned())
            }));
        }
        groups.sort();
        groups.dedup();
        Ok(groups)
    }

    /// Describes `groups` (one request per coordinator).
    pub async fn describe_groups(
        &self,
        groups: &[String],
    ) -> Result<BTreeMap<String, DescribedGroup>, Error> {
        let mut by_coord: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (group, coord) in self.coordinators(groups).await? {
            by_coord.entry(coord).or_default().push(group);
        }
        let mut out = BTreeMap::new();
        for (address, gs) in by_coord {
            let resp = self
                .with_conn(&address, |conn| async move {
                    let mut req = DescribeGroupsRequest::default();
                    req.groups = gs.iter().map(|g| GroupId(str_bytes(g))).collect();
                    conn.send(req).await
                })
                .await?;
            for g in resp.groups {
                let name = g.group_id.0.as_str().to_owned();
                kafka_err("DescribeGroups", g.error_code, format!("group {name:?}"))?;
                out.insert(
                    name,
                    DescribedGroup {
                        state: g.group_state.as_str().to_owned(),
                        members: g.members.len(),
                    },
                );
            }
        }
        Ok(out)
    }

    /// Committed offsets of `groups` (one batched request per coordinator when
    /// the broker supports it). A group whose listing failed is an `Err` entry.
    pub async fn fetch_group_offsets(
        &self,
        groups: &[String],
    ) -> Result<BTreeMap<String, Result<CommittedOffsets, Error>>, Error> {
        let mut by_coord: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (group, coord) in self.coordinators(groups).await? {
            by_coord.entry(coord).or_default().push(group);
        }
        let mut out = BTreeMap::new();
        for (address, gs) in by_coord {
            let conn = self.pool.get(&address).await?;
            let version = conn.version_for::<OffsetFetchRequest>()?;
            if version >= 8 {
                let mut req = OffsetFetchRequest::default();
                req.groups = gs
                    .iter()
                    .map(|g| {
                        let mut rg = OffsetFetchRequestGroup::default();
                        rg.group_id = GroupId(str_bytes(g));
                        rg.topics = None;
                        rg
                    })
                    .collect();
                let resp = match conn.send(req).await {
                    Ok(r) => r,
                    Err(e) => {
                        self.pool.invalidate(&address);
                        return Err(e);
                    }
                };
                for g in resp.groups {
                    let name = g.group_id.0.as_str().to_owned();
                    let entry = kafka_err("OffsetFetch", g.error_code, format!("group {name:?}"))
                        .map(|()| {
                            let mut offsets = CommittedOffsets::new();
                            for t in &g.topics {
                                for p in &t.partitions {
                                    if p.error_code != 0 {
                                        continue;
                                    }
                                    let tp =
                                        TopicPartition::new(t.name.0.as_str(), p.partition_index);
                                    let value = (p.committed_offset >= 0).then(|| {
                                        let md = p.metadata.as_deref().unwrap_or("").to_owned();
                                        (p.committed_offset, md)
                                    });
                                    offsets.insert(tp, value);
                                }
                            }
                            offsets
                        });
                    out.insert(name, entry);
                }
            } else {
                for g in gs {
                    let mut req = OffsetFetchRequest::default();
                    req.group_id = GroupId(str_bytes(&g));
                    req.topics = None;
                    let resp = conn.send(req).await?;
                    let entry = kafka_err("OffsetFetch", resp.error_code, format!("group {g:?}"))
                        .map(|()| {
                            let mut offsets = CommittedOffsets::new();
                            for t in &resp.topics {
                                for p in &t.partitions {
                                    if p.error_code != 0 {
                                        continue;
                                    }
                                    let tp =
                                        TopicPartition::new(t.name.0.as_str(), p.partition_index);
                                    let value = (p.committed_offset >= 0).then(|| {
                                        let md = p.metadata.as_deref().unwrap_or("").to_owned();
                                        (p.committed_offset, md)
                                    });
                                    offsets.insert(tp, value);
                                }
                            }
                            offsets
                        });
                    out.insert(g, entry);
                }
            }
        }
        Ok(out)
    }

    /// Commits `offsets` to `group` as an admin client does (generation -1, no
    /// member), which the broker accepts only for a group without members.
    pub async fn commit_group_offsets(
        &self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, (i64, String)>,
    ) -> Result<CommitOutcome, Error> {
        let mut attempt = 0u32;
        loop {
            match self.commit_once(group, offsets).await {
                Err(Error::Kafka {
                    error:
                        ResponseError::CoordinatorNotAvailable
                        | ResponseError::CoordinatorLoadInProgress
                        | ResponseError::NotCoordinator,
                    ..
                }) if attempt < 50 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                other => return other,
            }
        }
    }

    async fn commit_once(
        &self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, (i64, String)>,
    ) -> Result<CommitOutcome, Error> {
        let coords = self.coordinators(&[group.to_owned()]).await?;
        let Some(address) = coords.get(group) else {
            return Err(Error::Kafka {
                api: "FindCoordinator",
                error: ResponseError::CoordinatorNotAvailable,
                context: format!("group {group:?}"),
            });
        };
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for (tp, (offset, metadata)) in offsets {
            let mut p = OffsetCommitRequestPartition::default();
            p.partition_index = tp.partition;
            p.committed_offset = *offset;
            p.committed_leader_epoch = -1;
            p.committed_metadata = Some(str_bytes(metadata));
            topics.entry(tp.topic.as_str()).or_default().push(p);
        }
        let mut req = OffsetCommitRequest::default();
        req.group_id = GroupId(str_bytes(group));
        req.generation_id_or_member_epoch = -1;
        req.member_id = StrBytes::from_static_str("");
        req.retention_time_ms = -1;
        req.topics = topics
            .into_iter()
            .map(|(name, partitions)| {
                let mut t = OffsetCommitRequestTopic::default();
                t.name = TopicName(str_bytes(name));
                t.partitions = partitions;
                t
            })
            .collect();
        let resp = self
            .with_conn(address, |conn| async move { conn.send(req).await })
            .await?;
        for t in &resp.topics {
            for p in &t.partitions {
                match ResponseError::try_from_code(p.error_code) {
                    None => {}
                    Some(
                        ResponseError::UnknownMemberId
                        | ResponseError::IllegalGeneration
                        | ResponseError::RebalanceInProgress
                        | ResponseError::FencedMemberEpoch
                        | ResponseError::StaleMemberEpoch,
                    ) => return Ok(CommitOutcome::GroupActive),
                    Some(error) => {
                        return Err(Error::Kafka {
                            api: "OffsetCommit",
                            error,
                            context: format!(
                                "group {group:?} {}-{}",
                                t.name.0.as_str(),
                                p.partition_index
                            ),
                        });
                    }
                }
            }
        }
        Ok(CommitOutcome::Committed)
    }

    /// Creates `name` (already existing counts as success).
    pub async fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(&str, &str)],
    ) -> Result<CreateOutcome, Error> {
        let meta = self.metadata(Some(&[])).await?;
        let controller = Self::broker_address(&meta, meta.controller_id);
        let address = match controller {
            Some(a) => a,
            None => self.any_broker().await?.0,
        };
        let mut topic = CreatableTopic::default();
        topic.name = TopicName(str_bytes(name));
        topic.num_partitions = partitions;
        topic.replication_factor = replication_factor;
        topic.configs = configs
            .iter()
            .map(|(k, v)| {
                let mut c = CreatableTopicConfig::default();
                c.name = str_bytes(k);
                c.value = Some(str_bytes(v));
                c
            })
            .collect();
        let mut req = CreateTopicsRequest::default();
        req.topics = vec![topic];
        req.timeout_ms = self.timeout_ms;
        let resp = self
            .with_conn(&address, |conn| async move { conn.send(req).await })
            .await?;
        let Some(t) = resp.topics.iter().find(|t| t.name.0.as_str() == name) else {
            return Err(Error::Kafka {
                api: "CreateTopics",
                error: ResponseError::UnknownServerError,
                context: format!("topic {name}: missing from the response"),
            });
        };
        match ResponseError::try_from_code(t.error_code) {
            None => Ok(CreateOutcome::Created),
            Some(ResponseError::TopicAlreadyExists) => Ok(CreateOutcome::AlreadyExisted),
            Some(error) => Err(Error::Kafka {
                api: "CreateTopics",
                error,
                context: format!(
                    "topic {name}{}",
                    t.error_message
                        .as_ref()
                        .map(|m| format!(": {}", m.as_str()))
                        .unwrap_or_default()
                ),
            }),
        }
    }

    /// The earliest (`timestamp = -2`) or latest (`-1`) offset of a partition.
    pub async fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> Result<i64, Error> {
        let address = self.leader(topic, partition).await?;
        let mut p = ListOffsetsPartition::default();
        p.partition_index = partition;
        p.current_leader_epoch = -1;
        p.timestamp = timestamp;
        let mut t = ListOffsetsTopic::default();
        t.name = TopicName(str_bytes(topic));
        t.partitions = vec![p];
        let mut req = ListOffsetsRequest::default();
        req.replica_id = BrokerId(-1);
        req.topics = vec![t];
        req.timeout_ms = self.timeout_ms;
        let resp = self
            .with_conn(&address, |conn| async move { conn.send(req).await })
            .await?;
        let part = resp
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| Error::Kafka {
                api: "ListOffsets",
                error: ResponseError::UnknownTopicOrPartition,
                context: format!("{topic}-{partition}: missing from the response"),
            })?;
        kafka_err(
            "ListOffsets",
            part.error_code,
            format!("{topic}-{partition}"),
        )?;
        Ok(part.offset)
    }

    /// Fetches `topic`-`partition` from `offset`, waiting up to `max_wait_ms` for data.
    pub async fn fetch(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_wait_ms: i32,
    ) -> Result<Fetched, Error> {
        let address = self.leader(topic, partition).await?;
        let mut fp = FetchPartition::default();
        fp.partition = partition;
        fp.current_leader_epoch = -1;
        fp.fetch_offset = offset;
        fp.last_fetched_epoch = -1;
        fp.log_start_offset = -1;
        fp.partition_max_bytes = 4 * 1024 * 1024;
        let mut ft = FetchTopic::default();
        ft.topic = TopicName(str_bytes(topic));
        ft.partitions = vec![fp];
        let mut req = FetchRequest::default();
        req.replica_id = BrokerId(-1);
        req.max_wait_ms = max_wait_ms;
        req.min_bytes = 1;
        req.max_bytes = 16 * 1024 * 1024;
        req.isolation_level = 0;
        req.session_id = 0;
        req.session_epoch = -1;
        req.topics = vec![ft];
        let resp = self
            .with_conn(&address, |conn| async move { conn.send(req).await })
            .await?;
        kafka_err("Fetch", resp.error_code, format!("{topic}-{partition}"))?;
        let data = resp
            .responses
            .into_iter()
            .flat_map(|t| t.partitions)
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| Error::Kafka {
                api: "Fetch",
                error: ResponseError::UnknownTopicOrPartition,
                context: format!("{topic}-{partition}: missing from the response"),
            })?;
        kafka_err("Fetch", data.error_code, format!("{topic}-{partition}"))?;
        let mut fetched = Fetched {
            records: Vec::new(),
            high_watermark: data.high_watermark,
            next_offset: offset,
        };
        if let Some(bytes) = data.records {
            decode_batches(bytes, offset, &mut fetched).map_err(|detail| {
                Error::MalformedResponse {
                    broker: address.clone(),
                    api: "Fetch",
                    version: -1,
                    detail: format!("{topic}-{partition}: {detail}"),
                }
            })?;
        }
        Ok(fetched)
    }

    /// Produces `records` to `topic`-`partition` with acks=all, uncompressed, in
    /// one batch. Returns the base offset.
    pub async fn produce(
        &self,
        topic: &str,
        partition: i32,
        records: &[OutRecord],
    ) -> Result<i64, Error> {
        let address = self.leader(topic, partition).await?;
        let recs: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(i, r)| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i64::try_from(i).unwrap_or(i64::MAX),
                // kafka-protocol keeps records in one batch while
                // `offset - sequence` is constant; the batch's base sequence is
                // the first record's, so -1 (no idempotence) with this choice.
                sequence: i32::try_from(i).unwrap_or(i32::MAX).wrapping_sub(1),
                timestamp: r.timestamp,
                key: Some(Bytes::copy_from_slice(&r.key)),
                value: Some(Bytes::copy_from_slice(&r.value)),
                headers: Default::default(),
            })
            .collect();
        let mut buf = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        RecordBatchEncoder::encode(&mut buf, recs.iter(), &options).map_err(|e| Error::Encode {
            api: "Produce",
            version: -1,
            detail: format!("record batch: {e}"),
        })?;
        let mut pd = PartitionProduceData::default();
        pd.index = partition;
        pd.records = Some(buf.freeze());
        let mut td = TopicProduceData::default();
        td.name = TopicName(str_bytes(topic));
        td.partition_data = vec![pd];
        let mut req = ProduceRequest::default();
        req.transactional_id = None;
        req.acks = -1;
        req.timeout_ms = self.timeout_ms;
        req.topic_data = vec![td];
        let resp = self
            .with_conn(&address, |conn| async move { conn.send(req).await })
            .await?;
        let part = resp
            .responses
            .iter()
            .flat_map(|t| t.partition_responses.iter())
            .find(|p| p.index == partition)
            .ok_or_else(|| Error::Kafka {
                api: "Produce",
                error: ResponseError::UnknownTopicOrPartition,
                context: format!("{topic}-{partition}: missing from the response"),
            })?;
        kafka_err("Produce", part.error_code, format!("{topic}-{partition}"))?;
        Ok(part.base_offset)
    }
}

/// Decodes the complete record batches of a fetch response (a trailing partial
/// batch is left for the next fetch), keeping records at or after `from`.
fn decode_batches(mut bytes: Bytes, from: i64, out: &mut Fetched) -> Result<(), String> {
    // Batch header: baseOffset i64, batchLength i32, partitionLeaderEpoch i32,
    // magic i8, crc u32, attributes i16, lastOffsetDelta i32 (bytes 23..27).
    const HEADER: usize = 27;
    while bytes.len() >= HEADER {
        let be_i64 = |b: &[u8]| b.try_into().map(i64::from_be_bytes);
        let be_i32 = |b: &[u8]| b.try_into().map(i32::from_be_bytes);
        let base = be_i64(&bytes[0..8]).map_err(|_| "short batch header")?;
        let len = be_i32(&bytes[8..12]).map_err(|_| "short batch header")?;
        let last_delta = be_i32(&bytes[23..27]).map_err(|_| "short batch header")?;
        let total = usize::try_from(len)
            .map_err(|_| format!("negative batch length {len} at offset {base}"))?
            .saturating_add(12);
        if bytes.len() < total {
            break;
        }
        let mut batch = bytes.split_to(total);
        let set = RecordBatchDecoder::decode(&mut batch)
            .map_err(|e| format!("batch at offset {base}: {e}"))?;
        for r in set.records {
            if r.control || r.offset < from {
                continue;
            }
            out.records.push(FetchedRecord {
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key,
                value: r.value,
            });
        }
        let last = base.saturating_add(i64::from(last_delta));
        out.next_offset = out.next_offset.max(last.saturating_add(1));
    }
    Ok(())
}

/// A short name of an error for metrics labels (Kafka error names, `io`, `timeout`, ...).
pub fn error_label(e: &Error) -> String {
    match e {
        Error::Kafka { error, .. } => kafka_error_name(error),
        Error::Io { .. } | Error::ConnectionClosed { .. } => "io".into(),
        Error::ConnectTimeout { .. } | Error::RequestTimeout { .. } => "timeout".into(),
        Error::Tls { .. } | Error::TlsConfig { .. } => "tls".into(),
        Error::Authentication { .. } => "authentication".into(),
        _ => "other".into(),
    }
}
