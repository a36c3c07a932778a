//! The cluster operations the driver needs, on kafka-lite's [`Client`].
//!
//! One [`ClusterClient`] per cluster of a flow. It connects lazily (the first
//! operation connects; a failed connect is tried again by the next operation),
//! so a flow can start while a cluster is down. Routing, coordinator lookup and
//! retries of retriable errors up to the request deadline are kafka-lite's;
//! what is left here is the mapping between kafka-lite's types and the shapes
//! the driver and the core use.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_lite::kafka_error_name;
use kafka_lite::records::{BatchBuilder, Codec, ConsumerRecord, RecordRef};
use kafka_lite::{
    AheadFetch, Client, ConnectionConfig, CreateTopicOutcome, Error, FetchOptions, GroupState,
    IsolationLevel, OffsetFetchOptions, OffsetSpec, OffsetToCommit, PartitionReader,
    ProduceOptions, RetryPolicy, SendWindow, StartOffset, TopicPoll, TopicReader,
    TransactionalProducer,
};
use kafka_protocol::error::ResponseError;
use tokio::sync::OnceCell;

use crate::core::content_search::SideRead;
use crate::core::{
    CommittedOffset, GroupCommits, GroupOffsets, TargetGroupState, TargetOffsets, TopicPartition,
};

use super::flow::cluster::{
    CommitOutcome, CreateOutcome, DescribedGroup, FetchedCommits, FlowCluster,
};

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

/// Connections to one cluster and the operations the driver sends to it.
#[derive(Clone, Debug)]
pub struct ClusterClient {
    alias: String,
    bootstrap: Vec<String>,
    config: ConnectionConfig,
    retry: RetryPolicy,
    client: std::sync::Arc<OnceCell<Client>>,
    /// How writes are guarded while this instance owns a flow under
    /// membership (docs/membership.md); unguarded without it.
    owner: std::sync::Arc<OwnerWrites>,
}

/// The owner's guards on its writes to the target: checkpoints in
/// transactions of the flow's transactional id, group commits within the
/// membership lease. Counts the writes refused for want of ownership.
#[derive(Debug)]
pub struct OwnerWrites {
    producer: tokio::sync::Mutex<Option<TransactionalProducer>>,
    lease: std::sync::Mutex<Option<SendWindow>>,
    refused: tokio::sync::watch::Sender<Refusals>,
}

impl Default for OwnerWrites {
    fn default() -> Self {
        OwnerWrites {
            producer: tokio::sync::Mutex::default(),
            lease: std::sync::Mutex::default(),
            refused: tokio::sync::watch::Sender::new(Refusals::default()),
        }
    }
}

/// Writes refused because this instance no longer owned the flow, so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Checkpoint batches refused: another instance's producer fenced ours.
    pub fenced: u64,
    /// Group commits not sent: the membership lease had lapsed.
    pub lease_lapsed: u64,
}

impl OwnerWrites {
    fn lease(&self) -> Option<SendWindow> {
        self.lease.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn note(&self, e: &Error) {
        if e.is_fenced() {
            self.refused.send_modify(|r| r.fenced += 1);
        } else if matches!(e, Error::SendWindowClosed { .. }) {
            self.refused.send_modify(|r| r.lease_lapsed += 1);
        }
    }
}

/// The core's name for a group state kafka-lite reported: the one place the
/// two vocabularies meet. kafka-lite already parsed Kafka's state name (either
/// spelling, any case); a state it did not know stays unknown.
pub fn target_group_state(state: &GroupState) -> TargetGroupState {
    match state {
        GroupState::Empty => TargetGroupState::Empty,
        GroupState::Stable => TargetGroupState::Stable,
        GroupState::PreparingRebalance => TargetGroupState::PreparingRebalance,
        GroupState::CompletingRebalance => TargetGroupState::CompletingRebalance,
        GroupState::Dead => TargetGroupState::Dead,
        GroupState::Assigning => TargetGroupState::Assigning,
        GroupState::Reconciling => TargetGroupState::Reconciling,
        GroupState::Unknown(_) => TargetGroupState::Unknown,
    }
}

impl ClusterClient {
    /// A cluster reached through `bootstrap` with `config`. Fails on an unusable
    /// TLS configuration; does no network I/O. Each operation retries retriable
    /// errors for up to `config.request_timeout`.
    pub fn new(
        alias: &str,
        bootstrap: Vec<String>,
        config: ConnectionConfig,
    ) -> Result<Self, Error> {
        // Validate TLS material now, so a bad configuration fails at startup.
        kafka_lite::Connector::new(config.clone())?;
        let retry = RetryPolicy {
            deadline: config.request_timeout.max(Duration::from_secs(1)),
            ..RetryPolicy::default()
        };
        Ok(ClusterClient {
            alias: alias.to_owned(),
            bootstrap,
            config,
            retry,
            client: std::sync::Arc::default(),
            owner: std::sync::Arc::default(),
        })
    }

    /// The cluster's alias.
    pub fn alias(&self) -> &str {
        &self.alias
    }

    /// The requests this client sent so far, per API (none before its first
    /// request).
    pub fn requests_by_api(&self) -> Vec<(&'static str, u64)> {
        self.client
            .get()
            .map(|c| c.request_counts().by_api())
            .unwrap_or_default()
    }

    /// kafka-lite's client of this cluster (connecting on first use).
    pub async fn kafka(&self) -> Result<&Client, Error> {
        self.client().await
    }

    /// The high watermarks of `partitions` by ListOffsets (latest,
    /// read_uncommitted); UNKNOWN_TOPIC_OR_PARTITION leaves a partition out,
    /// any other error fails the call. Used by the reverse rounds (through
    /// [`FlowCluster`]) and by `cutover`.
    pub async fn end_offsets(
        &self,
        partitions: &[TopicPartition],
    ) -> Result<BTreeMap<TopicPartition, i64>, Error> {
        let client = self.client().await?;
        let queries: Vec<(&str, i32, OffsetSpec)> = partitions
            .iter()
            .map(|tp| (tp.topic.as_str(), tp.partition, OffsetSpec::Latest))
            .collect();
        let mut ends = BTreeMap::new();
        for answer in client
            .list_offsets(&queries, IsolationLevel::ReadUncommitted)
            .await
        {
            match answer.result {
                Ok(found) => {
                    if let Some(end) = found.offset {
                        ends.insert(TopicPartition::new(answer.topic, answer.partition), end);
                    }
                }
                Err(e) if e.kafka_error() == Some(ResponseError::UnknownTopicOrPartition) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(ends)
    }

    /// Starts writing as a flow's owner: takes `transactional_id` over
    /// (fencing its previous holder), then produces every batch in a
    /// transaction of its own under it, and sends group commits only within
    /// `lease`.
    pub async fn begin_owner_writes(
        &self,
        transactional_id: &str,
        transaction_timeout: Duration,
        lease: SendWindow,
    ) -> Result<(i64, i16), Error> {
        let client = self.client().await?;
        let producer =
            TransactionalProducer::init(client, transactional_id, transaction_timeout).await?;
        let id = producer.producer();
        *self.owner.producer.lock().await = Some(producer);
        *self.owner.lease.lock().unwrap_or_else(|e| e.into_inner()) = Some(lease);
        Ok(id)
    }

    /// Ends writing as an owner: the producer is dropped, and no write is
    /// guarded any more.
    pub async fn end_owner_writes(&self) {
        *self.owner.producer.lock().await = None;
        *self.owner.lease.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The writes refused so far for want of ownership, as they happen.
    pub fn refusals(&self) -> tokio::sync::watch::Receiver<Refusals> {
        self.owner.refused.subscribe()
    }

    async fn client(&self) -> Result<&Client, Error> {
        self.client
            .get_or_try_init(|| {
                Client::connect_with_retry(self.bootstrap.clone(), self.config.clone(), self.retry)
            })
            .await
    }

    /// Opens a [`TopicReader`] on every partition of `topic` at `start`.
    pub async fn topic_reader(
        &self,
        topic: &str,
        start: StartOffset,
        options: FetchOptions,
    ) -> Result<TopicReader, Error> {
        self.client()
            .await?
            .topic_reader(topic, start, options)
            .await
    }

    /// One fetch per leader of `reader`'s partitions (see [`TopicReader::poll`]).
    pub async fn poll_topic(&self, reader: &mut TopicReader) -> Result<TopicPoll, Error> {
        reader.poll(self.client().await?).await
    }

    /// The next Fetch before `reader`'s end with its records left undecoded
    /// (a reference for the broker's rate, see [`kafka_lite::RawFetch`]);
    /// `Ok(None)` at the end.
    pub async fn read_raw(
        &self,
        reader: &mut PartitionReader,
    ) -> Result<Option<kafka_lite::RawFetch>, Error> {
        reader.read_raw(self.client().await?).await
    }

    /// Every record of `topic`-`partition` from its start to the end it had
    /// when the read began.
    pub async fn read_to_end(
        &self,
        topic: &str,
        partition: i32,
    ) -> Result<Vec<ConsumerRecord>, Error> {
        let wait = Duration::from_millis(200);
        let mut reader = self
            .open_reader(topic, partition, StartOffset::Earliest, wait)
            .await?;
        let mut out = Vec::new();
        while let Some(records) = self.read(&mut reader).await? {
            out.extend(records);
        }
        Ok(out)
    }

    /// Produces `records` to `topic`-`partition` with acks=all, uncompressed, in
    /// one batch. Returns the base offset.
    pub async fn produce(
        &self,
        topic: &str,
        partition: i32,
        records: &[OutRecord],
    ) -> Result<i64, Error> {
        let size: usize = records.iter().map(|r| r.key.len() + r.value.len()).sum();
        let mut batch = BatchBuilder::with_capacity(size + 24 * records.len());
        for r in records {
            push(&mut batch, r.timestamp, &r.key, Some(&r.value))?;
        }
        self.produce_batch(topic, partition, batch).await
    }
}

impl FlowCluster for ClusterClient {
    fn alias(&self) -> &str {
        &self.alias
    }

    /// Number of brokers in the cluster.
    async fn broker_count(&self) -> Result<usize, Error> {
        let client = self.client().await?;
        Ok(client.refresh_metadata(Some(&[])).await?.brokers.len())
    }

    /// Whether `topic` exists.
    async fn topic_exists(&self, topic: &str) -> Result<bool, Error> {
        let client = self.client().await?;
        client.invalidate_metadata();
        match client.topic_metadata(topic).await {
            Ok(_) => Ok(true),
            Err(e) if e.kafka_error() == Some(ResponseError::UnknownTopicOrPartition) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Creates `name` (already existing counts as success).
    async fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(&str, &str)],
    ) -> Result<CreateOutcome, Error> {
        let configs: Vec<(String, String)> = configs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let client = self.client().await?;
        let outcome = client
            .create_topic(name, partitions, replication_factor, &configs)
            .await?;
        client.invalidate_metadata();
        Ok(match outcome {
            CreateTopicOutcome::Created => CreateOutcome::Created,
            CreateTopicOutcome::AlreadyExisted => CreateOutcome::AlreadyExisted,
        })
    }

    /// Every consumer group (classic protocol type `consumer` or consumer-protocol
    /// groups). Fails if any broker could not be asked.
    async fn list_groups(&self) -> Result<Vec<String>, Error> {
        let listed = self.client().await?.list_groups().await?;
        if let Some((_, e)) = listed.broker_errors.into_iter().next() {
            return Err(e);
        }
        let mut groups: Vec<String> = listed
            .groups
            .into_iter()
            .filter(|g| g.protocol_type.is_empty() || g.protocol_type == "consumer")
            .map(|g| g.group_id)
            .collect();
        groups.sort();
        groups.dedup();
        Ok(groups)
    }

    /// Describes `groups`. Fails if any group could not be described.
    async fn describe_groups(
        &self,
        groups: &[String],
    ) -> Result<BTreeMap<String, DescribedGroup>, Error> {
        let described = self.client().await?.describe_groups(groups).await;
        let mut out = BTreeMap::new();
        for (group, result) in described {
            let d = result?;
            out.insert(
                group,
                DescribedGroup {
                    state: target_group_state(&d.state),
                    members: d.members.len(),
                },
            );
        }
        Ok(out)
    }

    /// Committed offsets of `groups` (batched per coordinator). A group whose
    /// listing failed is an `Err` entry; partitions with an error are left out.
    async fn fetch_group_offsets(
        &self,
        groups: &[String],
    ) -> Result<BTreeMap<String, Result<GroupOffsets, Error>>, Error> {
        // Each group's answer goes straight into the core's shape as it is
        // decoded: no kafka-lite map of it in between (a periodic round at
        // 100,000 groups x 10 partitions converts 1,000,000 of these).
        let fetched = self
            .client()
            .await?
            .fetch_group_offsets_as(groups, &OffsetFetchOptions::default(), |partitions| {
                let mut offsets = GroupOffsets::new();
                for p in partitions {
                    // Partitions with an error are left out.
                    let Ok(c) = p.committed else { continue };
                    let committed = c.offset.map(|offset| CommittedOffset {
                        offset,
                        metadata: c.metadata.to_owned(),
                    });
                    offsets.insert(TopicPartition::new(p.topic, p.partition), committed);
                }
                offsets
            })
            .await;
        Ok(fetched.into_iter().collect())
    }

    /// Committed offsets of `groups` (batched per coordinator) as a group
    /// sync compares them: each answer is decoded straight into a
    /// [`TargetOffsets`], without the metadata, which the sync does not read.
    /// Partitions with an error are left out.
    async fn fetch_target_offsets(
        &self,
        groups: &[String],
    ) -> Result<BTreeMap<String, Result<TargetOffsets, Error>>, Error> {
        let fetched = self
            .client()
            .await?
            .fetch_group_offsets_as(groups, &OffsetFetchOptions::default(), |partitions| {
                let mut offsets = TargetOffsets::new();
                for p in partitions {
                    // Partitions with an error are left out.
                    let Ok(c) = p.committed else { continue };
                    offsets.insert(TopicPartition::new(p.topic, p.partition), c.offset);
                }
                offsets
            })
            .await;
        Ok(fetched.into_iter().collect())
    }

    /// Committed offsets of `groups` (batched per coordinator) in the shape a
    /// round's window is built from ([`GroupCommits`]), one result per group
    /// in the order of `groups`: each answer is decoded straight into it, a
    /// topic name shared by the partitions that follow it, so nothing but the
    /// entry is allocated per group-partition (docs/benchmarks.md, "Round
    /// planning at 100,000 groups"). Partitions with an error are left out.
    async fn fetch_group_commits(&self, groups: &[String]) -> Result<FetchedCommits, Error> {
        let fetched = self
            .client()
            .await?
            .fetch_group_offsets_as(groups, &OffsetFetchOptions::default(), |partitions| {
                let mut commits = GroupCommits::with_capacity(partitions.size_hint().0.max(16));
                let mut topic: Option<Arc<str>> = None;
                for p in partitions {
                    // Partitions with an error are left out.
                    let Ok(c) = p.committed else { continue };
                    let name = match &topic {
                        Some(t) if **t == *p.topic => Arc::clone(t),
                        _ => {
                            let t: Arc<str> = Arc::from(p.topic);
                            topic = Some(Arc::clone(&t));
                            t
                        }
                    };
                    let committed = c.offset.map(|offset| CommittedOffset {
                        offset,
                        metadata: c.metadata.to_owned(),
                    });
                    commits.push((name, p.partition, committed));
                }
                commits
            })
            .await;
        Ok(fetched.into_iter().collect())
    }

    /// Commits `offsets` to `group` as an admin client does (generation -1, no
    /// member), which the broker accepts only for a group without members.
    async fn commit_group_offsets(
        &self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, CommittedOffset>,
    ) -> Result<CommitOutcome, Error> {
        let to_commit: BTreeMap<kafka_lite::TopicPartition, OffsetToCommit> = offsets
            .iter()
            .map(|(tp, o)| {
                let mut c = OffsetToCommit::new(o.offset);
                c.metadata = o.metadata.clone();
                (super::seam::to_client(tp), c)
            })
            .collect();
        let client = self.client().await?;
        let commit = client.commit_group_offsets(group, &to_commit);
        let committed = match self.owner.lease() {
            Some(lease) => lease.scope(commit).await,
            None => commit.await,
        };
        if let Err(e) = &committed {
            self.owner.note(e);
        }
        match committed {
            Ok(results) => {
                for (_, r) in results {
                    r?;
                }
                Ok(CommitOutcome::Committed)
            }
            Err(e) if e.is_group_active() => Ok(CommitOutcome::GroupActive),
            Err(e) => Err(e),
        }
    }

    /// Produces `batch` (written record by record, no copy of each record
    /// made here) to `topic`-`partition` with acks=all, uncompressed, as one
    /// batch: in a transaction of its own while this instance writes as an
    /// owner under membership. Returns the base offset.
    async fn produce_batch(
        &self,
        topic: &str,
        partition: i32,
        batch: BatchBuilder,
    ) -> Result<i64, Error> {
        let options = ProduceOptions {
            codec: Codec::None,
            timeout: self
                .config
                .request_timeout
                .saturating_sub(Duration::from_secs(1))
                .max(Duration::from_secs(1)),
        };
        let mut txn = self.owner.producer.lock().await;
        if let Some(producer) = txn.as_mut() {
            // One transaction per batch: it lands whole or not at all, and a
            // fenced producer lands nothing.
            let r: Result<i64, Error> = async {
                let base = producer
                    .produce_built(topic, partition, batch, &options)
                    .await?;
                producer.commit().await?;
                Ok(base)
            }
            .await;
            if let Err(e) = &r {
                self.owner.note(e);
                if !e.is_fenced() && producer.in_transaction() {
                    let _ = producer.abort().await;
                }
            }
            return r;
        }
        drop(txn);
        self.client()
            .await?
            .produce_built(topic, partition, batch, &options)
            .await
    }

    /// One while this client writes as a flow's owner (between
    /// [`begin_owner_writes`](ClusterClient::begin_owner_writes) and
    /// [`end_owner_writes`](ClusterClient::end_owner_writes)): checkpoint
    /// batches in transactions, one after the other.
    fn produce_in_flight(&self) -> usize {
        if self.owner.lease().is_some() {
            1
        } else {
            usize::MAX
        }
    }

    /// Produces `records` (key, value; `None` is a tombstone) with `timestamp`
    /// to `topic`-`partition` as [`produce`](Self::produce) does: one batch,
    /// in the owner's transaction under membership. Returns the base offset.
    async fn produce_nullable(
        &self,
        topic: &str,
        partition: i32,
        records: &[(Vec<u8>, Option<Vec<u8>>)],
        timestamp: i64,
    ) -> Result<i64, Error> {
        let mut batch = BatchBuilder::default();
        for (k, v) in records {
            push(&mut batch, timestamp, k, v.as_deref())?;
        }
        self.produce_batch(topic, partition, batch).await
    }

    /// Opens a [`PartitionReader`] of `topic`-`partition` at `start`, reading
    /// up to the end offset it has now; each fetch waits up to `fetch_wait`.
    async fn open_reader(
        &self,
        topic: &str,
        partition: i32,
        start: StartOffset,
        fetch_wait: Duration,
    ) -> Result<PartitionReader, Error> {
        self.client()
            .await?
            .partition_reader(topic, partition, start, fetch_options(fetch_wait))
            .await
    }

    /// The next records of `reader` before its end; `None` once it is reached.
    async fn read(
        &self,
        reader: &mut PartitionReader,
    ) -> Result<Option<Vec<ConsumerRecord>>, Error> {
        reader.read(self.client().await?).await
    }

    /// [`read`](Self::read), each record handed to `visit` borrowed from the
    /// response (no [`ConsumerRecord`] built): `None` once the end is reached,
    /// else the number of records visited.
    async fn read_visit<F: FnMut(RecordRef<'_>) + Send>(
        &self,
        reader: &mut PartitionReader,
        visit: F,
    ) -> Result<Option<usize>, Error> {
        reader.read_visit(self.client().await?, visit).await
    }

    /// [`ClusterClient::end_offsets`].
    async fn end_offsets(
        &self,
        partitions: &[TopicPartition],
    ) -> Result<BTreeMap<TopicPartition, i64>, Error> {
        ClusterClient::end_offsets(self, partitions).await
    }

    /// The Fetch [`read_visit`](Self::read_visit) would make next, made now
    /// (kafka-lite's `PartitionReader::fetch_ahead`).
    async fn fetch_ahead(&self, reader: &PartitionReader) -> Result<Option<AheadFetch>, Error> {
        reader.fetch_ahead(self.client().await?).await
    }

    /// [`read_visit`](Self::read_visit) with its Fetch made beforehand by
    /// [`fetch_ahead`](Self::fetch_ahead).
    async fn read_visit_fetched<F: FnMut(RecordRef<'_>) + Send>(
        &self,
        reader: &mut PartitionReader,
        fetched: Option<AheadFetch>,
        visit: F,
    ) -> Result<Option<usize>, Error> {
        let client = self.client().await?;
        reader.read_visit_fetched(client, fetched, visit).await
    }

    /// Whatever follows `reader`'s position, with the partition's high watermark.
    async fn follow(
        &self,
        reader: &mut PartitionReader,
    ) -> Result<(Vec<ConsumerRecord>, i64), Error> {
        reader.follow_with_watermark(self.client().await?).await
    }

    /// One Fetch (read_uncommitted, no wait) of `topic`-`partition` from
    /// `offset`, of at most about `max_bytes`.
    async fn fetch_side(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
    ) -> Result<SideRead, Error> {
        let options = FetchOptions {
            max_bytes,
            fetch_wait: Duration::from_millis(1),
            isolation: IsolationLevel::ReadUncommitted,
        };
        let f = self
            .client()
            .await?
            .fetch(topic, partition, offset, &options)
            .await?;
        Ok(SideRead {
            records: f.records.into_iter().map(super::seam::record).collect(),
            read_to: f.next_offset,
            high_watermark: f.high_watermark,
            transactional: f.transactional_batches,
        })
    }
}

/// Adds one record to `batch`, its timestamp clamped at 0 (a clock before
/// 1970 must not fail a produce).
fn push(
    batch: &mut BatchBuilder,
    timestamp: i64,
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<(), Error> {
    batch
        .push(timestamp.max(0), Some(key), value)
        .map_err(|e| Error::Encode {
            api: "Produce",
            version: -1,
            detail: e.to_string(),
        })
}

/// The driver's fetches: up to 4 MiB, read uncommitted, waiting up to `fetch_wait`.
pub fn fetch_options(fetch_wait: Duration) -> FetchOptions {
    FetchOptions {
        max_bytes: 4 * 1024 * 1024,
        fetch_wait,
        isolation: IsolationLevel::ReadUncommitted,
    }
}

/// A short name of an error for metrics labels (Kafka error names, `io`, `timeout`, ...).
pub fn error_label(e: &Error) -> String {
    match e {
        Error::Kafka { error, .. } | Error::Virtual { error, .. } => kafka_error_name(error),
        Error::Io { .. } | Error::ConnectionClosed { .. } => "io".into(),
        Error::ConnectTimeout { .. } | Error::RequestTimeout { .. } => "timeout".into(),
        Error::Tls { .. } | Error::TlsConfig { .. } => "tls".into(),
        Error::Authentication { .. } | Error::Credentials { .. } => "authentication".into(),
        _ => "other".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_state_names_map_case_insensitively() {
        let state = |name: &str| target_group_state(&GroupState::parse(name));
        assert_eq!(state("Empty"), TargetGroupState::Empty);
        assert_eq!(state("STABLE"), TargetGroupState::Stable);
        assert_eq!(state("Reconciling"), TargetGroupState::Reconciling);
        assert_eq!(
            state("preparing_rebalance"),
            TargetGroupState::PreparingRebalance
        );
        assert_eq!(state("Weird"), TargetGroupState::Unknown);
    }
}
