//! The flow's orchestration on an in-memory cluster ([`MemCluster`]): no broker.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_lite::records::{BatchBuilder, Codec, ConsumerRecord, decode_batches};
use kafka_lite::{Error, PartitionReader, StartOffset};
use kafka_protocol::error::ResponseError;

use super::archive::SyncHistory;
use super::checkpoints::{Checkpoints, ProduceLimits};
use super::cluster::{CommitOutcome, CreateOutcome, DescribedGroup};
use super::content::ContentSearch;
use super::groups::{discover_groups, plain_names};
use super::offset_syncs::OffsetSyncs;
use super::topics::ensure_checkpoints_topic;
use super::{FlowCluster, FlowContext, FlowState, StepCause};
use crate::config::{FlowConfig, MirrorConfig, ProcessEnvironment, Properties};
use crate::core::format::OffsetSync;
use crate::core::{
    Checkpoint, CheckpointKey, CheckpointStore, CommittedOffset, GroupOffsets, InitMode,
    OffsetSyncStore, TargetGroupState, TopicPartition,
};
use crate::driver::kafka::{OutRecord, fetch_options};
use crate::metrics::Metrics;

/// One partition-0 log.
#[derive(Default)]
struct Log {
    /// The log start offset.
    start: i64,
    records: Vec<ConsumerRecord>,
}

impl Log {
    fn end(&self) -> i64 {
        self.records.last().map_or(self.start, |r| r.offset + 1)
    }
}

#[derive(Default)]
struct Mem {
    topics: BTreeMap<String, Log>,
    /// Committed offsets of the groups that exist.
    groups: BTreeMap<String, GroupOffsets>,
    /// Groups whose OffsetFetch is refused by an ACL.
    denied: BTreeSet<String>,
    /// DescribeGroups fails with this.
    describe_error: Option<ResponseError>,
    /// OffsetCommits in flight now, and the most seen at once.
    commits_in_flight: usize,
    most_commits_in_flight: usize,
    /// Produce requests in flight now, and the most seen at once.
    produces_in_flight: usize,
    most_produces_in_flight: usize,
    /// The record count of every produce request, as they ended.
    produce_sizes: Vec<usize>,
    /// A produce request with a checkpoint of this partition fails.
    fail_produce_of_partition: Option<i32>,
    /// A produce request with a checkpoint of this group fails.
    fail_produce_of_group: Option<String>,
    /// What `produce_in_flight` answers (none: no limit).
    produce_in_flight: Option<usize>,
    /// The end offsets of data partitions (reverse rounds check against them).
    ends: BTreeMap<TopicPartition, i64>,
    /// ListOffsets fails with this.
    list_offsets_error: Option<ResponseError>,
    /// Groups with members (described as Stable; an admin commit is refused).
    active: BTreeSet<String>,
    /// Every group described, in order.
    described: Vec<String>,
    /// An OffsetCommit into this group fails.
    fail_commit_of: Option<String>,
}

/// A cluster in memory; clones share it.
#[derive(Clone)]
struct MemCluster {
    alias: String,
    mem: Arc<Mutex<Mem>>,
}

fn kafka(api: &'static str, error: ResponseError) -> Error {
    Error::Kafka {
        api,
        error,
        context: String::new(),
    }
}

impl MemCluster {
    fn new(alias: &str) -> Self {
        MemCluster {
            alias: alias.to_owned(),
            mem: Arc::default(),
        }
    }

    fn mem(&self) -> std::sync::MutexGuard<'_, Mem> {
        self.mem.lock().unwrap()
    }

    fn append(&self, topic: &str, records: Vec<(Vec<u8>, Vec<u8>)>) {
        self.append_nullable(
            topic,
            records.into_iter().map(|(k, v)| (k, Some(v))).collect(),
        );
    }

    fn append_nullable(&self, topic: &str, records: Vec<(Vec<u8>, Option<Vec<u8>>)>) {
        let mut mem = self.mem();
        let log = mem.topics.entry(topic.to_owned()).or_default();
        for (key, value) in records {
            let offset = log.end();
            log.records.push(ConsumerRecord {
                offset,
                timestamp: 0,
                key: Some(Bytes::from(key)),
                value: value.map(Bytes::from),
                headers: Vec::new(),
            });
        }
    }

    fn records(&self, topic: &str) -> Vec<ConsumerRecord> {
        self.mem()
            .topics
            .get(topic)
            .map(|l| l.records.clone())
            .unwrap_or_default()
    }
}

impl FlowCluster for MemCluster {
    fn alias(&self) -> &str {
        &self.alias
    }

    async fn broker_count(&self) -> Result<usize, Error> {
        Ok(1)
    }

    async fn topic_exists(&self, topic: &str) -> Result<bool, Error> {
        Ok(self.mem().topics.contains_key(topic))
    }

    async fn create_topic(
        &self,
        name: &str,
        _partitions: i32,
        _replication_factor: i16,
        _configs: &[(&str, &str)],
    ) -> Result<CreateOutcome, Error> {
        let mut mem = self.mem();
        if mem.topics.contains_key(name) {
            return Ok(CreateOutcome::AlreadyExisted);
        }
        mem.topics.insert(name.to_owned(), Log::default());
        Ok(CreateOutcome::Created)
    }

    async fn list_groups(&self) -> Result<Vec<String>, Error> {
        let mem = self.mem();
        Ok(mem.groups.keys().chain(&mem.denied).cloned().collect())
    }

    async fn describe_groups(
        &self,
        groups: &[String],
    ) -> Result<BTreeMap<String, DescribedGroup>, Error> {
        let mut mem = self.mem();
        mem.described.extend(groups.iter().cloned());
        if let Some(e) = mem.describe_error {
            return Err(kafka("DescribeGroups", e));
        }
        Ok(groups
            .iter()
            .map(|g| {
                let state = if mem.active.contains(g) {
                    TargetGroupState::Stable
                } else if mem.groups.contains_key(g) {
                    TargetGroupState::Empty
                } else {
                    TargetGroupState::Dead
                };
                (g.clone(), DescribedGroup { state, members: 0 })
            })
            .collect())
    }

    async fn fetch_group_offsets(
        &self,
        groups: &[String],
    ) -> Result<BTreeMap<String, Result<GroupOffsets, Error>>, Error> {
        let mem = self.mem();
        Ok(groups
            .iter()
            .map(|g| {
                let r = if mem.denied.contains(g) {
                    Err(kafka(
                        "OffsetFetch",
                        ResponseError::GroupAuthorizationFailed,
                    ))
                } else {
                    Ok(mem.groups.get(g).cloned().unwrap_or_default())
                };
                (g.clone(), r)
            })
            .collect())
    }

    async fn commit_group_offsets(
        &self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, CommittedOffset>,
    ) -> Result<CommitOutcome, Error> {
        {
            let mut mem = self.mem();
            mem.commits_in_flight += 1;
            mem.most_commits_in_flight = mem.most_commits_in_flight.max(mem.commits_in_flight);
        }
        // A request takes a while: let other commits start meanwhile.
        tokio::task::yield_now().await;
        let mut mem = self.mem();
        mem.commits_in_flight -= 1;
        if mem.active.contains(group) {
            return Ok(CommitOutcome::GroupActive);
        }
        if mem.fail_commit_of.as_deref() == Some(group) {
            return Err(kafka(
                "OffsetCommit",
                ResponseError::CoordinatorNotAvailable,
            ));
        }
        let committed = mem.groups.entry(group.to_owned()).or_default();
        for (tp, o) in offsets {
            committed.insert(tp.clone(), Some(o.clone()));
        }
        Ok(CommitOutcome::Committed)
    }

    fn produce_in_flight(&self) -> usize {
        self.mem().produce_in_flight.unwrap_or(usize::MAX)
    }

    async fn produce_batch(
        &self,
        topic: &str,
        _partition: i32,
        batch: BatchBuilder,
    ) -> Result<i64, Error> {
        // The batch's bytes as a broker would read them.
        let mut bytes = batch.finish(Codec::None, None).unwrap();
        let batches = decode_batches(&mut bytes).unwrap();
        assert_eq!(batches.len(), 1);
        let records: Vec<OutRecord> = batches[0]
            .records
            .iter()
            .map(|r| OutRecord {
                key: r.key.as_deref().unwrap().to_vec(),
                value: r.value.as_deref().unwrap().to_vec(),
                timestamp: r.timestamp,
            })
            .collect();
        {
            let mut mem = self.mem();
            mem.produces_in_flight += 1;
            mem.most_produces_in_flight = mem.most_produces_in_flight.max(mem.produces_in_flight);
        }
        // A request takes a while: let other produce requests start meanwhile.
        tokio::task::yield_now().await;
        let fail = {
            let mut mem = self.mem();
            mem.produces_in_flight -= 1;
            mem.produce_sizes.push(records.len());
            mem.fail_produce_of_partition
                .is_some_and(|p| records.iter().any(|r| out_partition(r) == p))
                || mem.fail_produce_of_group.as_ref().is_some_and(|g| {
                    records.iter().any(|r| {
                        Checkpoint::decode(Some(&r.key), Some(&r.value))
                            .unwrap()
                            .key
                            .group
                            == *g
                    })
                })
        };
        if fail {
            return Err(kafka("Produce", ResponseError::NotEnoughReplicas));
        }
        let base = match self.mem().topics.get(topic) {
            Some(log) => log.end(),
            None => return Err(kafka("Produce", ResponseError::UnknownTopicOrPartition)),
        };
        self.append(
            topic,
            records
                .iter()
                .map(|r| (r.key.clone(), r.value.clone()))
                .collect(),
        );
        Ok(base)
    }

    async fn produce_nullable(
        &self,
        topic: &str,
        _partition: i32,
        records: &[(Vec<u8>, Option<Vec<u8>>)],
        _timestamp: i64,
    ) -> Result<i64, Error> {
        let base = match self.mem().topics.get(topic) {
            Some(log) => log.end(),
            None => return Err(kafka("Produce", ResponseError::UnknownTopicOrPartition)),
        };
        self.append_nullable(topic, records.to_vec());
        Ok(base)
    }

    async fn open_reader(
        &self,
        topic: &str,
        partition: i32,
        start: StartOffset,
        fetch_wait: Duration,
    ) -> Result<PartitionReader, Error> {
        let mem = self.mem();
        let log = mem
            .topics
            .get(topic)
            .ok_or_else(|| kafka("ListOffsets", ResponseError::UnknownTopicOrPartition))?;
        let position = match start {
            StartOffset::Earliest => log.start,
            StartOffset::Latest => log.end(),
            StartOffset::Offset(o) => o,
        };
        let options = fetch_options(fetch_wait);
        Ok(PartitionReader::new(
            topic,
            partition,
            position,
            log.end(),
            options,
        ))
    }

    async fn read(
        &self,
        reader: &mut PartitionReader,
    ) -> Result<Option<Vec<ConsumerRecord>>, Error> {
        if reader.is_caught_up() {
            return Ok(None);
        }
        let (records, _) = self.follow(reader).await?;
        Ok(Some(records))
    }

    async fn follow(
        &self,
        reader: &mut PartitionReader,
    ) -> Result<(Vec<ConsumerRecord>, i64), Error> {
        let mem = self.mem();
        let log = mem
            .topics
            .get(reader.topic())
            .ok_or_else(|| kafka("Fetch", ResponseError::UnknownTopicOrPartition))?;
        let pos = reader.position();
        if pos > log.end() || pos < log.start {
            return Err(kafka("Fetch", ResponseError::OffsetOutOfRange));
        }
        let records: Vec<ConsumerRecord> = log
            .records
            .iter()
            .filter(|r| r.offset >= pos)
            .cloned()
            .collect();
        reader.seek(log.end());
        Ok((records, log.end()))
    }

    async fn end_offsets(
        &self,
        partitions: &[TopicPartition],
    ) -> Result<BTreeMap<TopicPartition, i64>, Error> {
        let mem = self.mem();
        if let Some(e) = mem.list_offsets_error {
            return Err(kafka("ListOffsets", e));
        }
        Ok(partitions
            .iter()
            .filter_map(|tp| mem.ends.get(tp).map(|&end| (tp.clone(), end)))
            .collect())
    }

    async fn fetch_side(
        &self,
        topic: &str,
        _partition: i32,
        offset: i64,
        _max_bytes: i32,
    ) -> Result<crate::core::content_search::SideRead, Error> {
        let mem = self.mem();
        let log = mem
            .topics
            .get(topic)
            .ok_or_else(|| kafka("Fetch", ResponseError::UnknownTopicOrPartition))?;
        if offset > log.end() || offset < log.start {
            return Err(kafka("Fetch", ResponseError::OffsetOutOfRange));
        }
        Ok(crate::core::content_search::SideRead {
            records: log
                .records
                .iter()
                .filter(|r| r.offset >= offset)
                .cloned()
                .map(crate::driver::seam::record)
                .collect(),
            read_to: log.end(),
            high_watermark: log.end(),
            transactional: Vec::new(),
        })
    }
}

/// A flow `A->B` on in-memory clusters (offset syncs on the source).
fn flow(extra: &str) -> (FlowContext<MemCluster>, MemCluster, MemCluster) {
    let text = format!(
        "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n\
         A->B.enabled = true\n{extra}"
    );
    let props = Properties::parse(&text).unwrap();
    let config = MirrorConfig::from_properties(&props, &ProcessEnvironment).unwrap();
    let cfg: FlowConfig = config.flows.into_iter().next().unwrap();
    let (source, target) = (MemCluster::new("A"), MemCluster::new("B"));
    let metrics = Metrics::new("test", "n/a");
    let ctx = FlowContext::with_clusters(cfg, metrics, source.clone(), target.clone(), Vec::new())
        .unwrap_or_else(|e| panic!("{e}"));
    (ctx, source, target)
}

fn state(checkpoints: CheckpointStore) -> FlowState {
    FlowState {
        syncs: OffsetSyncs::new(OffsetSyncStore::new(InitMode::LoadAllHistory), false),
        checkpoints: Checkpoints::new(checkpoints, vec!["g".to_owned()]),
        history: SyncHistory::default(),
        content: ContentSearch::default(),
    }
}

fn checkpoint(partition: i32, downstream: i64) -> Checkpoint {
    Checkpoint {
        key: CheckpointKey {
            group: "g".to_owned(),
            topic_partition: TopicPartition::new("A.t", partition),
        },
        upstream_offset: downstream + 100,
        downstream_offset: downstream,
        metadata: String::new(),
    }
}

fn sync_record(upstream: i64, downstream: i64) -> (Vec<u8>, Vec<u8>) {
    let s = OffsetSync {
        topic_partition: TopicPartition::new("t", 0),
        upstream_offset: upstream,
        downstream_offset: downstream,
    };
    (s.encode_key().unwrap(), s.encode_value())
}

fn checkpoint_partitions(target: &MemCluster, topic: &str) -> Vec<i32> {
    target
        .records(topic)
        .iter()
        .map(|r| {
            let cp = Checkpoint::decode(r.key.as_deref(), r.value.as_deref()).unwrap();
            cp.key.topic_partition.partition
        })
        .collect()
}

#[test]
fn plain_names_keeps_literal_group_names_and_drops_patterns() {
    let names: Vec<&str> = plain_names(" billing, app-.*,ops.audit_1,,[a-z]+ ,x").collect();
    assert_eq!(names, ["billing", "ops.audit_1", "x"]);
}

#[tokio::test]
async fn a_deleted_checkpoints_topic_is_recreated_with_the_held_checkpoints() {
    let (ctx, _, target) = flow("");
    ensure_checkpoints_topic(&ctx).await.unwrap();
    let mut store = CheckpointStore::new(["g"]);
    store.on_produced(&[checkpoint(0, 10)]);
    let mut state = state(store);
    // Deleted while running.
    target.mem().topics.remove(&ctx.checkpoints_topic);
    state
        .checkpoints
        .produce(&ctx, &[checkpoint(1, 20)])
        .await
        .unwrap();
    // The held checkpoint (partition 0) is written again, then the new one.
    assert_eq!(
        checkpoint_partitions(&target, &ctx.checkpoints_topic),
        [0, 1]
    );
    assert_eq!(state.checkpoints.store().checkpoints().count(), 2);
}

#[tokio::test]
async fn offset_out_of_range_rereads_the_offset_syncs_from_the_start() {
    let (ctx, source, _) = flow("");
    source.append(
        &ctx.syncs_topic,
        vec![sync_record(0, 5), sync_record(10, 15)],
    );
    let mut state = state(CheckpointStore::new(["g"]));
    // The topic was recreated shorter than our position.
    state.syncs.set_position(7);
    let applied = state.poll_syncs(&ctx).await.unwrap();
    assert_eq!(applied, 2);
    assert_eq!(state.syncs.position(), 2);
    assert_eq!(state.syncs.store().partition_count(), 1);
    // Following again reads nothing new.
    assert_eq!(state.poll_syncs(&ctx).await.unwrap(), 0);
    source.append(&ctx.syncs_topic, vec![sync_record(20, 25)]);
    assert_eq!(state.poll_syncs(&ctx).await.unwrap(), 1);
    assert_eq!(state.syncs.position(), 3);
}

#[tokio::test]
async fn a_group_refused_by_an_acl_is_warned_about_once() {
    let (ctx, source, _) = flow("");
    source.mem().denied.insert("g".to_owned());
    let e = kafka("OffsetFetch", ResponseError::GroupAuthorizationFailed);
    assert!(discover_groups(&ctx).await.unwrap().is_empty());
    // The discovery above warned; later refusals of the same group only count.
    assert!(!ctx.note_group_denied(&source, "OffsetFetch", "g", &e));
    assert!(discover_groups(&ctx).await.unwrap().is_empty());
    // Another operation on the same group is warned about on its own.
    assert!(ctx.note_group_denied(&source, "ListGroups", "g", &e));
    let metrics = ctx.metrics.encode_prometheus().unwrap();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("mm2_checkpoint_request_errors_total") && l.contains("OffsetFetch"))
        .unwrap_or_else(|| panic!("no request error counted:\n{metrics}"));
    assert!(line.ends_with(" 4"), "{line}");
}

#[tokio::test]
async fn group_sync_commits_many_groups_concurrently_but_bounded() {
    use super::group_sync::GROUP_SYNC_CONCURRENCY;
    let (ctx, _, target) = flow("");
    let groups: Vec<String> = (0..100).map(|i| format!("g{i:03}")).collect();
    let mut store = CheckpointStore::new(groups.iter().map(String::as_str));
    let checkpoints: Vec<Checkpoint> = groups
        .iter()
        .map(|g| {
            let mut c = checkpoint(0, 10);
            c.key.group = g.clone();
            c
        })
        .collect();
    store.on_produced(&checkpoints);
    let summary = super::group_sync::sync_groups(&ctx, &store).await.unwrap();
    assert_eq!(summary.committed, 100);
    let mem = target.mem();
    assert_eq!(mem.groups.len(), 100);
    assert!(
        mem.most_commits_in_flight > 1 && mem.most_commits_in_flight <= GROUP_SYNC_CONCURRENCY,
        "{} commits were in flight at once",
        mem.most_commits_in_flight
    );
    assert_eq!(mem.commits_in_flight, 0);
}

#[tokio::test]
async fn group_sync_commits_an_absent_group_and_keeps_a_describe_error() {
    let (ctx, _, target) = flow("");
    let mut store = CheckpointStore::new(["g"]);
    store.on_produced(&[checkpoint(0, 10)]);
    let summary = super::group_sync::sync_groups(&ctx, &store).await.unwrap();
    assert_eq!(summary.committed, 1);
    let committed = target.mem().groups["g"].clone();
    assert_eq!(
        committed[&TopicPartition::new("A.t", 0)],
        Some(CommittedOffset::new(10, ""))
    );
    target.mem().describe_error = Some(ResponseError::CoordinatorNotAvailable);
    let e = super::group_sync::sync_groups(&ctx, &store)
        .await
        .unwrap_err();
    assert_eq!(e.op, "DescribeGroups");
    let StepCause::Driver {
        cause: Some(cause), ..
    } = &e.error
    else {
        panic!("not a driver failure with its cause: {e}");
    };
    assert_eq!(
        cause.kafka_error(),
        Some(ResponseError::CoordinatorNotAvailable)
    );
    assert!(
        e.to_string()
            .contains("the target groups could not be described"),
        "{e}"
    );
}

fn checkpoint_of(group: &str, partition: i32, downstream: i64) -> Checkpoint {
    let mut c = checkpoint(partition, downstream);
    c.key.group = group.to_owned();
    c
}

fn target_offset(target: &MemCluster, group: &str) -> Option<i64> {
    let mem = target.mem();
    let offsets = mem.groups.get(group)?;
    offsets[&TopicPartition::new("A.t", 0)]
        .as_ref()
        .map(|o| o.offset)
}

#[tokio::test]
async fn the_run_loops_group_sync_runs_one_at_a_time_plans_late_and_coalesces() {
    use super::sync_runner::GroupSyncRunner;
    let (ctx, _, target) = flow("");
    let mut store = CheckpointStore::new(["g", "h"]);
    store.on_produced(&[checkpoint_of("g", 0, 10)]);
    let mut runner = GroupSyncRunner::new(&ctx);
    assert!(runner.is_idle());
    runner.want_groups(["g".to_owned()]);
    runner.start(&store);
    let described = runner.next_step().await;
    // While the target was described, g was checkpointed higher and h got
    // its first checkpoint; both want a sync, which waits for this one.
    store.on_produced(&[checkpoint_of("g", 0, 20), checkpoint_of("h", 0, 5)]);
    runner.want_groups(["g".to_owned(), "h".to_owned()]);
    runner.start(&store);
    assert!(!runner.is_committing());
    // The plan is made now, from the store as it is: g's newest checkpoint.
    assert!(runner.advance(described, &store).is_none());
    assert!(runner.is_committing());
    let committed = runner.next_step().await;
    let done = runner.advance(committed, &store).expect("the sync ended");
    assert!(!done.full);
    assert_eq!(done.groups, 1);
    assert_eq!(done.result.unwrap().committed, 1);
    assert_eq!(target_offset(&target, "g"), Some(20));
    assert_eq!(target_offset(&target, "h"), None);
    // Its end started the next one, of both groups, coalesced; g was
    // synced at its newest checkpoint already and is not read again.
    assert!(!runner.is_idle());
    target.mem().described.clear();
    let described = runner.next_step().await;
    assert!(runner.advance(described, &store).is_none());
    let committed = runner.next_step().await;
    let done = runner.advance(committed, &store).expect("the sync ended");
    assert_eq!(done.groups, 1);
    assert_eq!(target.mem().described, ["h"]);
    let summary = done.result.unwrap();
    assert_eq!((summary.committed, summary.skipped_target_ahead), (1, 0));
    assert_eq!(target_offset(&target, "h"), Some(5));
    assert!(runner.is_idle());
    assert_eq!(target.mem().most_commits_in_flight, 1);
}

#[tokio::test]
async fn a_full_group_sync_absorbs_the_wanted_groups_and_shutdown_lets_its_commits_land() {
    use super::sync_runner::GroupSyncRunner;
    let (ctx, _, target) = flow("");
    let mut store = CheckpointStore::new(["g", "h"]);
    store.on_produced(&[checkpoint_of("g", 0, 10), checkpoint_of("h", 0, 7)]);
    let mut runner = GroupSyncRunner::new(&ctx);
    runner.want_groups(["g".to_owned()]);
    runner.want_full();
    runner.want_groups(["h".to_owned()]);
    runner.start(&store);
    let described = runner.next_step().await;
    assert!(runner.advance(described, &store).is_none());
    // A change after the full sync started wants a sync of its own, but a
    // shutdown only lets the commits in flight land.
    runner.want_groups(["g".to_owned()]);
    let done = runner
        .finish_commits(&store)
        .await
        .expect("the full sync ended");
    assert!(done.full);
    assert_eq!(done.groups, 2);
    assert_eq!(done.result.unwrap().committed, 2);
    assert_eq!(target_offset(&target, "g"), Some(10));
    assert_eq!(target_offset(&target, "h"), Some(7));
    assert!(runner.is_idle());
    // A sync still describing the target is dropped: nothing reached it.
    runner.want_groups(["g".to_owned()]);
    runner.start(&store);
    assert!(runner.finish_commits(&store).await.is_none());
    assert!(runner.is_idle());
}

/// The checkpoints of `topic` on `target`: (group, partition, upstream, downstream).
fn checkpoints_written(target: &MemCluster, topic: &str) -> Vec<(String, i32, i64, i64)> {
    target
        .records(topic)
        .iter()
        .map(|r| {
            let cp = Checkpoint::decode(r.key.as_deref(), r.value.as_deref()).unwrap();
            (
                cp.key.group,
                cp.key.topic_partition.partition,
                cp.upstream_offset,
                cp.downstream_offset,
            )
        })
        .collect()
}

/// The flow takes its precision from the configuration: in precise mode a lagging
/// group is translated through the nearest sync, a group older than the budget's
/// window gets MM2's answer, the partition past its budget is counted (and warned
/// about once), and rereading the offset-syncs topic keeps the precision.
#[tokio::test]
async fn a_precise_flow_translates_lagging_groups_through_the_nearest_sync() {
    let (ctx, source, target) = flow(
        "A->B.mm2-checkpoint.offset.translation = precise\n\
         mm2-checkpoint.offset.translation.max.syncs.per.partition = 50",
    );
    // An identity mirror of partition 0 of `t`, a sync every 100 records to 9,900.
    source.append(
        &ctx.syncs_topic,
        (0..100).map(|n| sync_record(n * 100, n * 100)).collect(),
    );
    let commit = |group: &str, offset: i64| {
        let offsets = BTreeMap::from([(
            TopicPartition::new("t", 0),
            Some(CommittedOffset::new(offset, "")),
        )]);
        source.mem().groups.insert(group.to_owned(), offsets);
    };
    commit("lagging", 6_050);
    commit("older", 2_050);
    let mut state = FlowState::start(&ctx)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        state.syncs.store().precision(),
        crate::core::Precision::Precise { max_syncs: 50 }
    );
    state.emit_round(&ctx).await.unwrap();
    // MM2's store restarts the group at 6,050 from offset 1; for 2,050 (older than the 50
    // syncs kept, 5,000 to 9,900) the precise store gives MM2's answer.
    let mut mm2 = OffsetSyncStore::new(InitMode::LoadAllHistory);
    (0..100).for_each(|n| {
        mm2.apply("t", 0, n * 100, n * 100);
    });
    mm2.finish_initial_read();
    let mm2_older = match mm2.translate_offset("t", 0, 2_050) {
        crate::core::Translation::Translated(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        mm2.translate_offset("t", 0, 6_050),
        crate::core::Translation::Translated(1)
    );
    assert_eq!(
        checkpoints_written(&target, &ctx.checkpoints_topic),
        [
            ("lagging".to_owned(), 0, 6_050, 6_001),
            ("older".to_owned(), 0, 2_050, mm2_older),
        ]
    );
    let metrics = ctx.metrics.encode_prometheus().unwrap();
    assert!(
        metrics.contains("mm2_checkpoint_precise_fallback_partitions{flow=\"A->B\"} 1"),
        "{metrics}"
    );
    assert!(state.syncs.fallback_warned(&TopicPartition::new("t", 0)));
    // The topic was recreated shorter than our position: reread, still precise.
    state.syncs.set_position(1_000);
    state.poll_syncs(&ctx).await.unwrap();
    assert_eq!(
        state.syncs.store().precision(),
        crate::core::Precision::Precise { max_syncs: 50 }
    );
}

#[tokio::test]
async fn a_precise_flow_keeps_its_history_in_the_sync_history_topic_across_compaction() {
    let (ctx, source, target) = flow("A->B.mm2-checkpoint.offset.translation = precise");
    source.append(
        &ctx.syncs_topic,
        (0..100).map(|n| sync_record(n * 100, n * 100)).collect(),
    );
    let commit = |offset: i64| {
        let offsets = BTreeMap::from([(
            TopicPartition::new("t", 0),
            Some(CommittedOffset::new(offset, "")),
        )]);
        source.mem().groups.insert("lagging".to_owned(), offsets);
    };
    commit(6_050);
    let mut state = FlowState::start(&ctx)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    state.emit_round(&ctx).await.unwrap();
    let history = ctx
        .sync_history_topic
        .clone()
        .expect("precise mode names it");
    // 100 syncs: 3 sealed chunks, the open one, the mark.
    assert_eq!(target.records(&history).len(), 5);
    // A round without new syncs writes nothing.
    state.emit_round(&ctx).await.unwrap();
    assert_eq!(target.records(&history).len(), 5);

    // Compaction leaves the newest sync only; a restart still translates the
    // lagging group (moved on by one sync) precisely.
    source
        .mem()
        .topics
        .get_mut(&ctx.syncs_topic)
        .unwrap()
        .records
        .retain(|r| r.offset == 99);
    commit(6_150);
    let mut state = FlowState::start(&ctx)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(state.syncs.store().precise_syncs(), 100);
    state.emit_round(&ctx).await.unwrap();
    assert_eq!(
        checkpoints_written(&target, &ctx.checkpoints_topic).last(),
        Some(&("lagging".to_owned(), 0, 6_150, 6_101))
    );
}

/// The gauge line of `reason` in `metrics`, as its value.
fn untranslatable(metrics: &str, reason: &str) -> u64 {
    let label = format!("reason=\"{reason}\"");
    let line = metrics
        .lines()
        .find(|l| l.starts_with("mm2_checkpoint_untranslatable_partitions") && l.contains(&label))
        .unwrap_or_else(|| panic!("no {reason} gauge:\n{metrics}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// A periodic round over more groups than one window plans and produces every
/// window (each group once, in group order), skips only the refused group, and
/// sets the skip gauges to the sum over all windows, once.
#[tokio::test]
async fn a_round_over_several_windows_emits_every_group_and_sums_the_skips() {
    use super::checkpoints::ROUND_WINDOW_GROUPS;
    let (ctx, source, target) = flow("");
    source.append(&ctx.syncs_topic, vec![sync_record(0, 0)]);
    let n = 2 * ROUND_WINDOW_GROUPS + 7;
    let names: Vec<String> = (0..n).map(|i| format!("g{i:05}")).collect();
    for name in &names {
        // Partition 0 translates (a sync at 0), partition 1 has no sync.
        let offsets = BTreeMap::from([
            (
                TopicPartition::new("t", 0),
                Some(CommittedOffset::new(0, "")),
            ),
            (
                TopicPartition::new("t", 1),
                Some(CommittedOffset::new(5, "")),
            ),
        ]);
        source.mem().groups.insert(name.clone(), offsets);
    }
    let refused = names[ROUND_WINDOW_GROUPS + 3].clone();
    source.mem().groups.remove(&refused);
    source.mem().denied.insert(refused.clone());
    let mut state = FlowState::start(&ctx)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    state.checkpoints.set_groups(names.clone());
    let summary = state.emit_round(&ctx).await.unwrap();
    assert_eq!((summary.emitted, summary.skipped), (n - 1, n - 1));
    let written: Vec<String> = checkpoints_written(&target, &ctx.checkpoints_topic)
        .into_iter()
        .map(|(group, partition, _, _)| {
            assert_eq!(partition, 0);
            group
        })
        .collect();
    let expected: Vec<String> = names.iter().filter(|g| **g != refused).cloned().collect();
    assert_eq!(written, expected);
    let metrics = ctx.metrics.encode_prometheus().unwrap();
    assert_eq!(untranslatable(&metrics, "no_sync"), (n - 1) as u64);
    assert_eq!(untranslatable(&metrics, "suppressed"), 0);
    // Nothing moved: the next round writes nothing, and the gauges move over
    // to "not more recent" for every window.
    let summary = state.emit_round(&ctx).await.unwrap();
    assert_eq!((summary.emitted, summary.skipped), (0, 2 * (n - 1)));
    let metrics = ctx.metrics.encode_prometheus().unwrap();
    assert_eq!(untranslatable(&metrics, "no_sync"), (n - 1) as u64);
    assert_eq!(untranslatable(&metrics, "suppressed"), (n - 1) as u64);
    assert_eq!(
        checkpoints_written(&target, &ctx.checkpoints_topic).len(),
        n - 1
    );
}

/// The first round of a following flow plans from the follower's view: over
/// several windows it writes what a round by OffsetFetch of the same committed
/// offsets writes, with the same summary and gauges.
#[tokio::test]
async fn a_round_from_the_followers_view_writes_what_offset_fetch_would() {
    use super::checkpoints::ROUND_WINDOW_GROUPS;
    use crate::core::FollowedOffsets;
    use crate::core::consumer_offsets::{OffsetCommitValue, OffsetsRecord};
    let n = 2 * ROUND_WINDOW_GROUPS + 11;
    let names: Vec<String> = (0..n).map(|i| format!("g{i:05}")).collect();
    let mut outcomes = Vec::new();
    for from_view in [false, true] {
        let (ctx, source, target) = flow("");
        source.append(
            &ctx.syncs_topic,
            vec![sync_record(0, 0), sync_record(50, 40)],
        );
        let mut view = FollowedOffsets::new(ctx.group_filter.clone(), ctx.topic_filter.clone());
        for (i, name) in names.iter().enumerate() {
            let offset = (i % 3) as i64 * 30;
            for partition in [0, 1] {
                view.apply(OffsetsRecord::OffsetCommit {
                    group: name.clone(),
                    topic_partition: TopicPartition::new("t", partition),
                    value: Some(OffsetCommitValue {
                        offset,
                        leader_epoch: None,
                        metadata: format!("m{i}"),
                        commit_timestamp: 0,
                        expire_timestamp: None,
                    }),
                });
            }
        }
        view.clear_changed();
        source.mem().groups = view.groups();
        let mut state = FlowState::start(&ctx)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        state
            .checkpoints
            .set_groups(view.group_names().map(str::to_owned).collect());
        let summary = if from_view {
            state.emit_round_from_view(&ctx, &view).await.unwrap()
        } else {
            state.emit_round(&ctx).await.unwrap()
        };
        let metrics = ctx.metrics.encode_prometheus().unwrap();
        // Every window's checkpoints are recorded once acknowledged, the
        // last window's too.
        let recorded: BTreeSet<String> = state
            .checkpoints
            .store()
            .checkpoints()
            .map(|cp| cp.key.group)
            .collect();
        let written = checkpoints_written(&target, &ctx.checkpoints_topic);
        assert_eq!(
            state.checkpoints.store().len(),
            written.len(),
            "from view: {from_view}"
        );
        assert_eq!(
            recorded,
            written
                .iter()
                .map(|(g, ..)| g.clone())
                .collect::<BTreeSet<_>>()
        );
        outcomes.push((
            (summary.emitted, summary.skipped),
            written,
            untranslatable(&metrics, "no_sync"),
        ));
    }
    // Partition 0 translates, partition 1 has no sync.
    assert_eq!(outcomes[0].0, (n, n));
    assert_eq!(outcomes[0], outcomes[1]);
}

/// The first round from the view plans a window while the last one's
/// produce requests are in flight; a failed produce fails the round after
/// the windows before it were produced and recorded, and no window after
/// it is produced. The store records exactly what the broker acknowledged.
#[tokio::test]
async fn a_failed_window_of_the_round_from_the_view_stops_it_after_the_earlier_windows() {
    use super::checkpoints::ROUND_WINDOW_GROUPS;
    use crate::core::FollowedOffsets;
    use crate::core::consumer_offsets::{OffsetCommitValue, OffsetsRecord};
    let n = 3 * ROUND_WINDOW_GROUPS + 5;
    let names: Vec<String> = (0..n).map(|i| format!("g{i:05}")).collect();
    let (ctx, source, target) = flow("");
    source.append(
        &ctx.syncs_topic,
        vec![sync_record(0, 0), sync_record(50, 40)],
    );
    let mut view = FollowedOffsets::new(ctx.group_filter.clone(), ctx.topic_filter.clone());
    for name in &names {
        view.apply(OffsetsRecord::OffsetCommit {
            group: name.clone(),
            topic_partition: TopicPartition::new("t", 0),
            value: Some(OffsetCommitValue {
                offset: 60,
                leader_epoch: None,
                metadata: String::new(),
                commit_timestamp: 0,
                expire_timestamp: None,
            }),
        });
    }
    view.clear_changed();
    source.mem().groups = view.groups();
    let mut state = FlowState::start(&ctx)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    state
        .checkpoints
        .set_groups(view.group_names().map(str::to_owned).collect());
    // A group of the second window.
    let failing = names[ROUND_WINDOW_GROUPS + 7].clone();
    target.mem().fail_produce_of_group = Some(failing.clone());
    let e = state.emit_round_from_view(&ctx, &view).await.unwrap_err();
    assert!(
        e.to_string().contains("NOT_ENOUGH_REPLICAS") || e.to_string().contains("replicas"),
        "{e}"
    );
    let written: BTreeSet<String> = checkpoints_written(&target, &ctx.checkpoints_topic)
        .into_iter()
        .map(|(g, ..)| g)
        .collect();
    // Every group of the first window, none of the failing one's request,
    // nothing of the windows after it.
    assert!(
        names[..ROUND_WINDOW_GROUPS]
            .iter()
            .all(|g| written.contains(g))
    );
    assert!(!written.contains(&failing));
    assert!(
        names[2 * ROUND_WINDOW_GROUPS..]
            .iter()
            .all(|g| !written.contains(g))
    );
    // Recorded exactly when acknowledged.
    let recorded: BTreeSet<String> = state
        .checkpoints
        .store()
        .checkpoints()
        .map(|cp| cp.key.group)
        .collect();
    assert_eq!(recorded, written);
    assert!(state.checkpoints.store().produce_failures() > 0);
}

/// Content search (docs/translation.md, "Content search"): the flow reads the
/// records since the sync on both clusters and writes the exact position; a
/// group that did not move is not searched again.
#[tokio::test]
async fn content_search_writes_the_exact_position_and_searches_a_bracket_once() {
    let (ctx, source, target) = flow(
        "A->B.mm2-checkpoint.offset.translation = precise\n\
         A->B.mm2-checkpoint.offset.translation.content.search = true",
    );
    source.append(
        &ctx.syncs_topic,
        (0..10).map(|n| sync_record(n * 100, n * 100)).collect(),
    );
    let records: Vec<(Vec<u8>, Vec<u8>)> = (0..1_000)
        .map(|o| (format!("k{o}").into_bytes(), format!("v{o}").into_bytes()))
        .collect();
    source.append("t", records.clone());
    target.append("A.t", records);
    let offsets = BTreeMap::from([(
        TopicPartition::new("t", 0),
        Some(CommittedOffset::new(450, "")),
    )]);
    source.mem().groups.insert("g".to_owned(), offsets);
    let mut state = FlowState::start(&ctx)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    state.emit_round(&ctx).await.unwrap();
    state.emit_round(&ctx).await.unwrap();
    assert_eq!(
        checkpoints_written(&target, &ctx.checkpoints_topic),
        [("g".to_owned(), 0, 450, 450)]
    );
    let metrics = ctx.metrics.encode_prometheus().unwrap();
    assert!(
        metrics
            .contains("mm2_checkpoint_content_searches_total{flow=\"A->B\",outcome=\"exact\"} 1\n"),
        "{metrics}"
    );
}

fn out_partition(r: &OutRecord) -> i32 {
    Checkpoint::decode(Some(&r.key), Some(&r.value))
        .unwrap()
        .key
        .topic_partition
        .partition
}

fn partitions(n: i32) -> Vec<Checkpoint> {
    (0..n).map(|p| checkpoint(p, 10 + i64::from(p))).collect()
}

fn recorded(state: &FlowState) -> BTreeSet<i32> {
    state
        .checkpoints
        .store()
        .checkpoints()
        .map(|cp| cp.key.topic_partition.partition)
        .collect()
}

/// Several produce requests of one call are in flight at once, within the
/// limits; every checkpoint lands once and is recorded.
#[tokio::test]
async fn chunks_of_one_call_are_produced_concurrently_within_the_limits() {
    let (ctx, _, target) = flow("");
    ensure_checkpoints_topic(&ctx).await.unwrap();
    let mut state = state(CheckpointStore::new(["g"]));
    let cps = partitions(10);
    let limits = ProduceLimits {
        records: 3,
        bytes: 1 << 20,
        in_flight: 2,
    };
    state
        .checkpoints
        .produce_chunks_with(&ctx, &cps, limits)
        .await
        .unwrap();
    let mem = target.mem();
    assert_eq!(mem.produce_sizes.iter().sum::<usize>(), 10);
    assert!(
        mem.produce_sizes.iter().all(|&n| n <= 3),
        "{:?}",
        mem.produce_sizes
    );
    assert_eq!(mem.most_produces_in_flight, 2);
    drop(mem);
    let mut landed = checkpoint_partitions(&target, &ctx.checkpoints_topic);
    landed.sort_unstable();
    assert_eq!(landed, (0..10).collect::<Vec<_>>());
    assert_eq!(recorded(&state), (0..10).collect());
    assert_eq!(state.checkpoints.store().produce_failures(), 0);
}

/// A chunk holds at most `limits.bytes` (keys, values and the per-record
/// allowance), and at least one record.
#[tokio::test]
async fn chunks_are_bounded_by_bytes() {
    let (ctx, _, target) = flow("");
    ensure_checkpoints_topic(&ctx).await.unwrap();
    let mut state = state(CheckpointStore::new(["g"]));
    let cps = partitions(7);
    let one = cps[0].encode_key().unwrap().len() + cps[0].encode_value().unwrap().len() + 21;
    let limits = ProduceLimits {
        records: 100,
        bytes: 2 * one + 1,
        in_flight: 4,
    };
    state
        .checkpoints
        .produce_chunks_with(&ctx, &cps, limits)
        .await
        .unwrap();
    assert_eq!(target.mem().produce_sizes.iter().sum::<usize>(), 7);
    assert!(target.mem().produce_sizes.iter().all(|&n| n == 2 || n == 1));
    assert_eq!(target.mem().produce_sizes.len(), 4);
    // Smaller than one record: one record per request.
    target.mem().produce_sizes.clear();
    let limits = ProduceLimits { bytes: 1, ..limits };
    state
        .checkpoints
        .produce_chunks_with(&ctx, &cps, limits)
        .await
        .unwrap();
    assert_eq!(target.mem().produce_sizes, vec![1; 7]);
}

/// One chunk fails among several in flight: the acknowledged ones are
/// recorded, the failed one is not (counted as a produce failure), no chunk
/// is sent after the failure, and the call fails.
#[tokio::test]
async fn a_failed_chunk_among_several_in_flight_fails_the_call_and_is_not_recorded() {
    let (ctx, _, target) = flow("");
    ensure_checkpoints_topic(&ctx).await.unwrap();
    let mut state = state(CheckpointStore::new(["g"]));
    // Chunks [0, 1], [2, 3], ... [18, 19]; the one with partition 2 fails.
    target.mem().fail_produce_of_partition = Some(2);
    let cps = partitions(20);
    let limits = ProduceLimits {
        records: 2,
        bytes: 1 << 20,
        in_flight: 4,
    };
    let e = state
        .checkpoints
        .produce_chunks_with(&ctx, &cps, limits)
        .await
        .unwrap_err();
    assert_eq!(e.kafka_error(), Some(ResponseError::NotEnoughReplicas));
    let mem = target.mem();
    assert!(mem.most_produces_in_flight > 1);
    // The failed chunk was sent, then at most the in-flight ones beside it.
    let sent = mem.produce_sizes.len();
    assert!((2..=6).contains(&sent), "{sent} requests");
    drop(mem);
    let landed: BTreeSet<i32> = checkpoint_partitions(&target, &ctx.checkpoints_topic)
        .into_iter()
        .collect();
    assert!(!landed.contains(&2) && !landed.contains(&3));
    assert!(landed.contains(&0) && landed.contains(&1));
    // Recorded exactly when acknowledged.
    assert_eq!(recorded(&state), landed);
    assert!(landed.len() < 20 - 2, "chunks after the failure were sent");
    assert_eq!(state.checkpoints.store().produce_failures(), 2);
}

/// A target that allows one produce in flight (an owner's transactions
/// under membership) gets one at a time.
#[tokio::test]
async fn one_produce_at_a_time_when_the_target_allows_one() {
    let (ctx, _, target) = flow("");
    ensure_checkpoints_topic(&ctx).await.unwrap();
    target.mem().produce_in_flight = Some(1);
    let mut state = state(CheckpointStore::new(["g"]));
    let cps = partitions(10);
    let limits = ProduceLimits {
        records: 2,
        bytes: 1 << 20,
        in_flight: 4,
    };
    state
        .checkpoints
        .produce_chunks_with(&ctx, &cps, limits)
        .await
        .unwrap();
    assert_eq!(target.mem().most_produces_in_flight, 1);
    assert_eq!(
        checkpoint_partitions(&target, &ctx.checkpoints_topic),
        (0..10).collect::<Vec<_>>()
    );
    assert_eq!(recorded(&state), (0..10).collect());
}

/// A checkpoint that cannot be encoded (metadata over 32,767 bytes) is
/// skipped; the others of its chunk are produced and recorded.
#[tokio::test]
async fn an_unencodable_checkpoint_is_skipped_and_its_neighbours_recorded() {
    let (ctx, _, target) = flow("");
    ensure_checkpoints_topic(&ctx).await.unwrap();
    let mut state = state(CheckpointStore::new(["g"]));
    let mut cps = partitions(6);
    cps[1].metadata = "m".repeat(40_000);
    cps[4].metadata = "m".repeat(40_000);
    let limits = ProduceLimits {
        records: 3,
        bytes: 1 << 20,
        in_flight: 4,
    };
    state
        .checkpoints
        .produce_chunks_with(&ctx, &cps, limits)
        .await
        .unwrap();
    let mut landed = checkpoint_partitions(&target, &ctx.checkpoints_topic);
    landed.sort_unstable();
    assert_eq!(landed, [0, 2, 3, 5]);
    assert_eq!(recorded(&state), [0, 2, 3, 5].into_iter().collect());
}

#[test]
fn encoded_parts_leave_out_the_skipped_indexes() {
    let cps = partitions(6);
    let parts = |skipped: &[usize]| -> Vec<Vec<i32>> {
        super::checkpoints::encoded_parts(&cps[2..6], 2, skipped)
            .into_iter()
            .map(|p| p.iter().map(|c| c.key.topic_partition.partition).collect())
            .collect()
    };
    assert_eq!(parts(&[]), [vec![2, 3, 4, 5]]);
    assert_eq!(parts(&[2]), [vec![3, 4, 5]]);
    assert_eq!(parts(&[3, 4]), [vec![2], vec![5]]);
    assert_eq!(parts(&[5]), [vec![2, 3, 4]]);
    assert_eq!(parts(&[2, 3, 4, 5]), Vec::<Vec<i32>>::new());
}

/// A flow `A->B` with reverse checkpoints and group sync, the flow's offset
/// syncs for `t`-0 (upstream, downstream), and source partition `t`-0 ending
/// at `end`.
fn reverse_flow(
    syncs: &[(i64, i64)],
    end: i64,
) -> (
    FlowContext<MemCluster>,
    MemCluster,
    MemCluster,
    OffsetSyncStore,
) {
    let (ctx, source, target) = flow(
        "sync.group.offsets.enabled = true\n\
         A->B.mm2-checkpoint.emit.reverse.checkpoints.enabled = true\n",
    );
    let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
    store.finish_initial_read();
    for &(u, d) in syncs {
        store.apply("t", 0, u, d);
    }
    source.mem().ends.insert(TopicPartition::new("t", 0), end);
    (ctx, source, target, store)
}

/// Commits `offset` for group `g` on `cluster`'s partition `topic`-0.
fn commit(cluster: &MemCluster, topic: &str, offset: i64) {
    cluster
        .mem()
        .groups
        .entry("g".to_owned())
        .or_default()
        .insert(
            TopicPartition::new(topic, 0),
            Some(CommittedOffset::new(offset, "m")),
        );
}

/// Group `g`'s committed offset of `topic`-0 on `cluster`.
fn committed_at(cluster: &MemCluster, topic: &str) -> Option<i64> {
    cluster
        .mem()
        .groups
        .get("g")
        .and_then(|o| o.get(&TopicPartition::new(topic, 0)).cloned().flatten())
        .map(|c| c.offset)
}

#[tokio::test]
async fn a_reverse_round_writes_t_to_s_checkpoints_on_the_source_and_raises_the_idle_group() {
    let (ctx, source, target, syncs) = reverse_flow(&[(0, 0), (100, 140)], 500);
    // Before the failover the group read 60 records on A; after it, 150 on B.
    commit(&source, "t", 60);
    commit(&target, "A.t", 150);
    let mut reverse = super::ReverseCheckpoints::new(&ctx);
    assert_eq!(ctx.reversed().checkpoints_topic, "B.checkpoints.internal");
    let summary = reverse.round(&ctx, &syncs).await.unwrap();
    assert_eq!((summary.emitted, summary.past_end), (1, 0));
    // MM2's T->S flow's checkpoints topic, on the source: key (g, t-0),
    // upstream the offset committed on B, downstream the position on A.
    assert_eq!(
        checkpoints_written(&source, "B.checkpoints.internal"),
        [("g".to_owned(), 0, 150, 101)]
    );
    assert!(target.records("B.checkpoints.internal").is_empty());
    assert_eq!(summary.synced.map(|s| s.committed), Some(1));
    assert_eq!(committed_at(&source, "t"), Some(101));
    // A restarted stage restores the store: nothing is written again.
    let mut restarted = super::ReverseCheckpoints::new(&ctx);
    let summary = restarted.round(&ctx, &syncs).await.unwrap();
    assert_eq!(summary.emitted, 0);
    assert_eq!(source.records("B.checkpoints.internal").len(), 1);
}

#[tokio::test]
async fn no_reverse_checkpoint_past_the_end_of_a_recreated_source_topic() {
    // `t` was deleted and created again on A: 20 records, the syncs say 100.
    let (ctx, source, target, syncs) = reverse_flow(&[(0, 0), (100, 140)], 20);
    commit(&source, "t", 5);
    commit(&target, "A.t", 150);
    let mut reverse = super::ReverseCheckpoints::new(&ctx);
    let summary = reverse.round(&ctx, &syncs).await.unwrap();
    assert_eq!((summary.emitted, summary.past_end), (0, 1));
    assert!(checkpoints_written(&source, "B.checkpoints.internal").is_empty());
    assert_eq!(committed_at(&source, "t"), Some(5));
    // Deleted and not created again: the same.
    source.mem().ends.clear();
    let summary = reverse.round(&ctx, &syncs).await.unwrap();
    assert_eq!((summary.emitted, summary.past_end), (0, 1));
    assert_eq!(committed_at(&source, "t"), Some(5));
}

#[tokio::test]
async fn a_rewind_on_the_source_is_not_undone_until_the_target_commits_again() {
    let (ctx, source, target, syncs) = reverse_flow(&[(0, 0), (100, 140), (200, 260)], 500);
    commit(&target, "A.t", 150);
    let mut reverse = super::ReverseCheckpoints::new(&ctx);
    reverse.round(&ctx, &syncs).await.unwrap();
    assert_eq!(committed_at(&source, "t"), Some(101));
    // An operator rewinds the idle group on A to process again.
    commit(&source, "t", 10);
    for _ in 0..3 {
        let summary = reverse.round(&ctx, &syncs).await.unwrap();
        assert_eq!(summary.emitted, 0);
        assert!(summary.synced.is_none());
    }
    assert_eq!(committed_at(&source, "t"), Some(10));
    // The group commits again on B: that commit is newer, and wins.
    commit(&target, "A.t", 270);
    reverse.round(&ctx, &syncs).await.unwrap();
    assert_eq!(committed_at(&source, "t"), Some(201));
}

#[tokio::test]
async fn the_sync_into_the_source_leaves_active_and_ahead_groups_alone_and_retries_unknown_ones() {
    let (ctx, source, target, syncs) = reverse_flow(
        &[(0, 0), (100, 140), (110, 150), (120, 160), (130, 170)],
        500,
    );
    commit(&target, "A.t", 150);
    // Ahead on A: never lowered.
    commit(&source, "t", 300);
    let mut reverse = super::ReverseCheckpoints::new(&ctx);
    let s = reverse.round(&ctx, &syncs).await.unwrap().synced.unwrap();
    assert_eq!((s.committed, s.skipped_target_ahead), (0, 1));
    assert_eq!(committed_at(&source, "t"), Some(300));
    // Members on A: never written.
    commit(&source, "t", 50);
    source.mem().active.insert("g".to_owned());
    commit(&target, "A.t", 160);
    let s = reverse.round(&ctx, &syncs).await.unwrap().synced.unwrap();
    assert_eq!((s.committed, s.skipped_active), (0, 1));
    assert_eq!(committed_at(&source, "t"), Some(50));
    // The group's state unknown (DescribeGroups fails): tried again next
    // round, when it is known, though nothing new was committed on B.
    source.mem().active.clear();
    source.mem().describe_error = Some(ResponseError::CoordinatorNotAvailable);
    commit(&target, "A.t", 170);
    let s = reverse.round(&ctx, &syncs).await.unwrap().synced.unwrap();
    assert_eq!((s.committed, s.skipped_unknown_state), (0, 1));
    source.mem().describe_error = None;
    let s = reverse.round(&ctx, &syncs).await.unwrap().synced.unwrap();
    assert_eq!(s.committed, 1);
    assert_eq!(committed_at(&source, "t"), Some(130));
}

#[tokio::test]
async fn an_unreachable_source_fails_the_reverse_round_with_nothing_written() {
    let (ctx, source, target, syncs) = reverse_flow(&[(0, 0), (100, 140)], 500);
    commit(&source, "t", 60);
    commit(&target, "A.t", 150);
    source.mem().list_offsets_error = Some(ResponseError::LeaderNotAvailable);
    let mut reverse = super::ReverseCheckpoints::new(&ctx);
    let e = reverse.round(&ctx, &syncs).await.unwrap_err();
    assert_eq!((e.cluster.as_str(), e.op), ("A", "ListOffsets"));
    assert!(checkpoints_written(&source, "B.checkpoints.internal").is_empty());
    assert_eq!(committed_at(&source, "t"), Some(60));
    source.mem().list_offsets_error = None;
    assert_eq!(reverse.round(&ctx, &syncs).await.unwrap().emitted, 1);
    assert_eq!(committed_at(&source, "t"), Some(101));
}

#[tokio::test]
async fn a_group_that_never_committed_on_the_target_gets_nothing() {
    let (ctx, source, _target, syncs) = reverse_flow(&[(0, 0), (100, 140)], 500);
    commit(&source, "t", 60);
    let mut reverse = super::ReverseCheckpoints::new(&ctx);
    let summary = reverse.round(&ctx, &syncs).await.unwrap();
    assert_eq!((summary.groups, summary.emitted), (0, 0));
    assert!(summary.synced.is_none());
    assert_eq!(committed_at(&source, "t"), Some(60));
}

/// One full sync of the run loop's runner, to its end.
async fn full_sync_done(
    runner: &mut super::sync_runner::GroupSyncRunner<'_, MemCluster>,
    store: &CheckpointStore,
) -> super::sync_runner::SyncDone {
    runner.want_full();
    runner.start(store);
    let described = runner.next_step().await;
    assert!(runner.advance(described, store).is_none());
    let committed = runner.next_step().await;
    runner.advance(committed, store).expect("the sync ended")
}

/// [`full_sync_done`]'s summary of a sync that succeeded.
async fn full_sync(
    runner: &mut super::sync_runner::GroupSyncRunner<'_, MemCluster>,
    store: &CheckpointStore,
) -> super::group_sync::SyncSummary {
    full_sync_done(runner, store).await.result.unwrap()
}

#[tokio::test]
async fn the_forward_sync_does_not_undo_a_rewind_on_the_target() {
    use super::sync_runner::GroupSyncRunner;
    for reverse in [false, true] {
        let (ctx, _, target) = flow(&format!(
            "A->B.mm2-checkpoint.emit.reverse.checkpoints.enabled = {reverse}\n"
        ));
        let mut store = CheckpointStore::new(["g"]);
        store.on_produced(&[checkpoint_of("g", 0, 10)]);
        let mut runner = GroupSyncRunner::new(&ctx);
        assert_eq!(full_sync(&mut runner, &store).await.committed, 1);
        assert_eq!(target_offset(&target, "g"), Some(10));
        // An operator rewinds the idle group on B to process again: the
        // older commit on A does not win (MM2 would raise it again).
        commit(&target, "A.t", 2);
        let s = full_sync(&mut runner, &store).await;
        assert_eq!(s.committed, 0, "reverse {reverse}");
        assert_eq!(target_offset(&target, "g"), Some(2));
        // The group commits again on A: that checkpoint is newer, and wins.
        store.on_produced(&[checkpoint_of("g", 0, 12)]);
        assert_eq!(full_sync(&mut runner, &store).await.committed, 1);
        assert_eq!(target_offset(&target, "g"), Some(12));
    }
}

#[tokio::test]
async fn the_run_loops_sync_reads_only_the_groups_whose_checkpoints_moved() {
    use super::sync_runner::GroupSyncRunner;
    let (ctx, _, target) = flow("");
    let mut store = CheckpointStore::new(["g", "h", "idle"]);
    store.on_produced(&[checkpoint_of("g", 0, 10), checkpoint_of("h", 0, 7)]);
    let mut runner = GroupSyncRunner::new(&ctx);
    // First: every group with a checkpoint is read (none without one).
    assert_eq!(full_sync(&mut runner, &store).await.committed, 2);
    assert_eq!(target.mem().described, ["g", "h"]);
    // Nothing moved: nothing is read, nothing written.
    target.mem().described.clear();
    let s = full_sync(&mut runner, &store).await;
    assert_eq!((s.committed, s.skipped_target_ahead), (0, 0));
    assert!(target.mem().described.is_empty());
    // The same checkpoint produced again is no change.
    store.on_produced(&[checkpoint_of("h", 0, 7)]);
    assert_eq!(full_sync(&mut runner, &store).await.committed, 0);
    assert!(target.mem().described.is_empty());
    // g moved: g alone is read and written.
    store.on_produced(&[checkpoint_of("g", 0, 15)]);
    assert_eq!(full_sync(&mut runner, &store).await.committed, 1);
    assert_eq!(target.mem().described, ["g"]);
    assert_eq!(target_offset(&target, "g"), Some(15));
    assert_eq!(target_offset(&target, "h"), Some(7));
    // A group found ahead on the target is settled too.
    store.on_produced(&[checkpoint_of("h", 0, 9)]);
    target.mem().described.clear();
    commit_of(&target, "h", 20);
    let s = full_sync(&mut runner, &store).await;
    assert_eq!((s.committed, s.skipped_target_ahead), (0, 1));
    assert_eq!(full_sync(&mut runner, &store).await.skipped_target_ahead, 0);
    assert_eq!(target.mem().described, ["h"]);
    // A new runner (a restart) reads every group once.
    target.mem().described.clear();
    let mut runner = GroupSyncRunner::new(&ctx);
    let s = full_sync(&mut runner, &store).await;
    assert_eq!((s.committed, s.skipped_target_ahead), (0, 2));
    assert_eq!(target.mem().described, ["g", "h"]);
}

#[tokio::test]
async fn a_group_with_members_a_failed_commit_or_an_unknown_state_is_read_again() {
    use super::sync_runner::GroupSyncRunner;
    for reverse in [false, true] {
        let (ctx, _, target) = flow(&format!(
            "A->B.mm2-checkpoint.emit.reverse.checkpoints.enabled = {reverse}\n"
        ));
        let mut store = CheckpointStore::new(["g", "h"]);
        store.on_produced(&[checkpoint_of("g", 0, 10), checkpoint_of("h", 0, 7)]);
        let mut runner = GroupSyncRunner::new(&ctx);
        // g has members, the commit into h fails.
        target.mem().active.insert("g".to_owned());
        target.mem().fail_commit_of = Some("h".to_owned());
        let s = full_sync(&mut runner, &store).await;
        assert_eq!((s.committed, s.skipped_active, s.failed), (0, 1, 1));
        // Both are read again though their checkpoints did not move; the
        // describe fails this time.
        target.mem().described.clear();
        target.mem().describe_error = Some(ResponseError::CoordinatorNotAvailable);
        assert!(full_sync_done(&mut runner, &store).await.result.is_err());
        assert_eq!(target.mem().described, ["g", "h"]);
        // Read again: h commits now; g still has members.
        target.mem().describe_error = None;
        target.mem().fail_commit_of = None;
        target.mem().described.clear();
        let s = full_sync(&mut runner, &store).await;
        assert_eq!((s.committed, s.skipped_active), (1, 1), "reverse {reverse}");
        assert_eq!(target.mem().described, ["g", "h"]);
        assert_eq!(target_offset(&target, "h"), Some(7));
        // g's members leave: with reverse checkpoints on, members on B made
        // the newer commits and g is left alone (docs/translation.md, "Group
        // sync into the source"); without, g gets its checkpoint now.
        target.mem().active.clear();
        target.mem().described.clear();
        let s = full_sync(&mut runner, &store).await;
        assert_eq!(target.mem().described, ["g"]);
        if reverse {
            assert_eq!(s.committed, 0);
            assert_eq!(target_offset(&target, "g"), None);
        } else {
            assert_eq!(s.committed, 1);
            assert_eq!(target_offset(&target, "g"), Some(10));
        }
        // Settled either way: not read again.
        target.mem().described.clear();
        assert_eq!(full_sync_done(&mut runner, &store).await.groups, 0);
        assert!(target.mem().described.is_empty());
    }
}

/// Commits `offset` of `A.t`-0 into `group` on `cluster`.
fn commit_of(cluster: &MemCluster, group: &str, offset: i64) {
    cluster
        .mem()
        .groups
        .entry(group.to_owned())
        .or_default()
        .insert(
            TopicPartition::new("A.t", 0),
            Some(CommittedOffset::new(offset, "m")),
        );
}
