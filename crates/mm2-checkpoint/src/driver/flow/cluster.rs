//! [`FlowCluster`]: the cluster operations a flow uses, so the orchestration
//! can run on kafka-lite (`ClusterClient`) or, in unit tests, in memory.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use kafka_lite::records::{BatchBuilder, ConsumerRecord, RecordRef};
use kafka_lite::{AheadFetch, Error, PartitionReader, StartOffset};

use crate::core::content_search::SideRead;
use crate::core::{
    CommittedOffset, GroupCommits, GroupOffsets, TargetGroupState, TargetOffsets, TopicPartition,
    group_commits,
};

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

/// A described group: its state and member count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedGroup {
    /// The group's state, in the core's terms.
    pub state: TargetGroupState,
    /// Number of members.
    pub members: usize,
}

/// One result per group of an OffsetFetch, in the shape a round's window is
/// built from.
pub type FetchedCommits = Vec<(String, Result<GroupCommits, Error>)>;

/// The operations a flow sends to one cluster, in the core's types.
/// `ClusterClient` implements it on kafka-lite (its implementation, in
/// `driver/kafka.rs`, documents what each method sends).
pub trait FlowCluster: Clone + Send + Sync + 'static {
    /// The cluster's alias.
    fn alias(&self) -> &str;

    /// Number of brokers in the cluster.
    fn broker_count(&self) -> impl Future<Output = Result<usize, Error>> + Send;

    /// Whether `topic` exists.
    fn topic_exists(&self, topic: &str) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Creates `name` (already existing counts as success).
    fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(&str, &str)],
    ) -> impl Future<Output = Result<CreateOutcome, Error>> + Send;

    /// Every consumer group.
    fn list_groups(&self) -> impl Future<Output = Result<Vec<String>, Error>> + Send;

    /// Describes `groups`.
    fn describe_groups(
        &self,
        groups: &[String],
    ) -> impl Future<Output = Result<BTreeMap<String, DescribedGroup>, Error>> + Send;

    /// Committed offsets of `groups`.
    fn fetch_group_offsets(
        &self,
        groups: &[String],
    ) -> impl Future<Output = Result<BTreeMap<String, Result<GroupOffsets, Error>>, Error>> + Send;

    /// Committed offsets of `groups` in the shape a round's window is built
    /// from, one result per group in the order of `groups`. By default
    /// [`fetch_group_offsets`](Self::fetch_group_offsets), converted;
    /// `ClusterClient` decodes the answers straight into this shape.
    fn fetch_group_commits(
        &self,
        groups: &[String],
    ) -> impl Future<Output = Result<FetchedCommits, Error>> + Send {
        async move {
            let fetched = self.fetch_group_offsets(groups).await?;
            Ok(fetched
                .into_iter()
                .map(|(g, r)| (g, r.map(group_commits)))
                .collect())
        }
    }

    /// Committed offsets of `groups` as a group sync compares them with the
    /// checkpoints: the offset only, no metadata ([`TargetOffsets`]). By
    /// default [`fetch_group_offsets`](Self::fetch_group_offsets), converted;
    /// `ClusterClient` decodes the answers straight into this shape.
    fn fetch_target_offsets(
        &self,
        groups: &[String],
    ) -> impl Future<Output = Result<BTreeMap<String, Result<TargetOffsets, Error>>, Error>> + Send
    {
        async move {
            let fetched = self.fetch_group_offsets(groups).await?;
            Ok(fetched
                .into_iter()
                .map(|(g, r)| {
                    let offsets = r.map(|o| {
                        o.into_iter()
                            .map(|(tp, c)| (tp, c.map(|c| c.offset)))
                            .collect()
                    });
                    (g, offsets)
                })
                .collect())
        }
    }

    /// Commits `offsets` to `group` as an admin client does.
    fn commit_group_offsets(
        &self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, CommittedOffset>,
    ) -> impl Future<Output = Result<CommitOutcome, Error>> + Send;

    /// The end offsets (high watermarks) of `partitions`; a partition the
    /// cluster does not have (its topic deleted, or fewer partitions) is left
    /// out of the answer. Reverse rounds check their positions against them.
    fn end_offsets(
        &self,
        partitions: &[TopicPartition],
    ) -> impl Future<Output = Result<BTreeMap<TopicPartition, i64>, Error>> + Send;

    /// Produces `batch` to `topic`-`partition` as one batch; returns the base
    /// offset.
    fn produce_batch(
        &self,
        topic: &str,
        partition: i32,
        batch: BatchBuilder,
    ) -> impl Future<Output = Result<i64, Error>> + Send;

    /// How many [`produce_batch`](Self::produce_batch) requests a flow may have in flight
    /// at once: one while this instance writes as a flow's owner under
    /// membership (each batch is then a transaction of its own, produced and
    /// committed in turn: docs/membership.md), otherwise no limit of the
    /// cluster's own.
    fn produce_in_flight(&self) -> usize {
        usize::MAX
    }

    /// Produces `records` (key, value; `None` is a tombstone) with `timestamp`
    /// to `topic`-`partition`; returns the base offset.
    fn produce_nullable(
        &self,
        topic: &str,
        partition: i32,
        records: &[(Vec<u8>, Option<Vec<u8>>)],
        timestamp: i64,
    ) -> impl Future<Output = Result<i64, Error>> + Send;

    /// Opens a reader of `topic`-`partition` at `start`, up to the end it has now.
    fn open_reader(
        &self,
        topic: &str,
        partition: i32,
        start: StartOffset,
        fetch_wait: Duration,
    ) -> impl Future<Output = Result<PartitionReader, Error>> + Send;

    /// The next records of `reader` before its end; `None` once it is reached.
    fn read(
        &self,
        reader: &mut PartitionReader,
    ) -> impl Future<Output = Result<Option<Vec<ConsumerRecord>>, Error>> + Send;

    /// [`read`](Self::read), each record handed to `visit` borrowed instead
    /// of returned (a cluster that can builds no [`ConsumerRecord`]): `None`
    /// once the end is reached, else the number of records visited, the
    /// records `read` returns in its order. On error `visit` may have seen
    /// some records.
    fn read_visit<F: FnMut(RecordRef<'_>) + Send>(
        &self,
        reader: &mut PartitionReader,
        mut visit: F,
    ) -> impl Future<Output = Result<Option<usize>, Error>> + Send {
        async move {
            let records = self.read(reader).await?;
            Ok(records.map(|records| {
                records.iter().for_each(|r| visit(r.as_record_ref()));
                records.len()
            }))
        }
    }

    /// The Fetch [`read_visit`](Self::read_visit) of `reader` would make next,
    /// made now, its records left unread (kafka-lite's
    /// `PartitionReader::fetch_ahead`): `None` once the end is reached, or
    /// always for a cluster that makes no fetch ahead (the default).
    fn fetch_ahead(
        &self,
        reader: &PartitionReader,
    ) -> impl Future<Output = Result<Option<AheadFetch>, Error>> + Send {
        let _ = reader;
        async { Ok(None) }
    }

    /// [`read_visit`](Self::read_visit) with its Fetch made beforehand by
    /// [`fetch_ahead`](Self::fetch_ahead) (made again if it was made at
    /// another position). The default ignores `fetched`.
    fn read_visit_fetched<F: FnMut(RecordRef<'_>) + Send>(
        &self,
        reader: &mut PartitionReader,
        fetched: Option<AheadFetch>,
        visit: F,
    ) -> impl Future<Output = Result<Option<usize>, Error>> + Send {
        drop(fetched);
        self.read_visit(reader, visit)
    }

    /// Whatever follows `reader`'s position, with the partition's high watermark.
    fn follow(
        &self,
        reader: &mut PartitionReader,
    ) -> impl Future<Output = Result<(Vec<ConsumerRecord>, i64), Error>> + Send;

    /// One Fetch (read_uncommitted) of `topic`-`partition` from `offset`, of at
    /// most about `max_bytes`: what a content search compares.
    fn fetch_side(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
    ) -> impl Future<Output = Result<SideRead, Error>> + Send;
}
