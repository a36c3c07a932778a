//! One flow `S->T`: startup, emission rounds, group sync and the offset-syncs
//! follow loop. Every decision is the core's; this module only moves facts
//! between the clusters and the core.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_lite::Error;
use kafka_protocol::error::ResponseError;

use crate::config::{FlowConfig, OffsetSyncsTopicLocation, ReplicationPolicyKind};
use crate::core::format::OffsetSync as OffsetSyncRecord;
use crate::core::{
    Checkpoint, CheckpointRound, CheckpointStore, DecodeError, Flow, GroupFilter, GroupOffsets,
    GroupSyncDecision, GroupSyncPlan, InitMode, OffsetSyncStore, ReplicationPolicy, SkipReason,
    TargetGroup, TargetGroupState, TargetRefresh, TopicFilter, plan_group_sync,
};
use crate::metrics::{self, Metrics, TopicKind, UntranslatableReason};

use super::connect::{self, Connection};
use kafka_lite::records::ConsumerRecord;
use kafka_lite::{PartitionReader, StartOffset};

use super::kafka::{
    ClusterClient, CommitOutcome, CreateOutcome, OutRecord, error_label, fetch_options,
};

/// How long a fetch of the initial read waits for records.
const READ_WAIT: Duration = Duration::from_millis(500);

/// A failed cluster operation: which cluster, which operation, what error.
#[derive(Debug)]
pub struct StepError {
    /// Cluster alias.
    pub cluster: String,
    /// The operation, e.g. `ListGroups`.
    pub op: &'static str,
    /// What went wrong.
    pub error: StepCause,
}

/// Why a step failed: an error kafka-lite returned, or a failure the driver
/// found itself (no broker reported it).
#[derive(Debug)]
pub enum StepCause {
    /// An error kafka-lite returned (a broker's answer or a client failure).
    Client(Error),
    /// The driver's own finding, e.g. a topic that must exist does not;
    /// `cause` is the client error behind it, if there is one.
    Driver {
        /// What the driver found.
        what: String,
        /// The client error that led to it.
        cause: Option<Box<Error>>,
    },
}

impl fmt::Display for StepCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepCause::Client(e) => write!(f, "{e}"),
            StepCause::Driver { what, cause: None } => f.write_str(what),
            StepCause::Driver {
                what,
                cause: Some(e),
            } => write!(f, "{what}: {e}"),
        }
    }
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cluster {}: {} failed: {}",
            self.cluster, self.op, self.error
        )
    }
}

/// Failures that stop a flow before it can run.
#[derive(Debug)]
pub enum SetupError {
    /// The connection settings are unusable.
    Connect(connect::ConnectError),
    /// The TLS configuration could not be built.
    Client(String, Error),
    /// A filter or policy could not be built.
    Invalid(String),
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::Connect(e) => write!(f, "{e}"),
            SetupError::Client(alias, e) => write!(f, "cluster {alias}: {e}"),
            SetupError::Invalid(msg) => f.write_str(msg),
        }
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The fixed parts of one flow.
pub struct FlowContext {
    /// `S->T`.
    pub name: String,
    /// The flow's settings.
    pub cfg: FlowConfig,
    /// The core's flow.
    pub flow: Flow,
    /// The replication policy.
    pub policy: ReplicationPolicy,
    /// The topic filter.
    pub topic_filter: TopicFilter,
    /// The group filter.
    pub group_filter: GroupFilter,
    /// The source cluster.
    pub source: ClusterClient,
    /// The target cluster.
    pub target: ClusterClient,
    /// The cluster holding the offset-syncs topic.
    pub syncs_cluster: ClusterClient,
    /// The offset-syncs topic.
    pub syncs_topic: String,
    /// The checkpoints topic (on the target).
    pub checkpoints_topic: String,
    /// Metrics.
    pub metrics: Metrics,
    /// (group, operation) pairs already warned about as refused by an ACL.
    denied: std::sync::Mutex<BTreeSet<(String, &'static str)>>,
    _connections: (Connection, Connection),
}

impl FlowContext {
    /// Builds the flow's clients, filters and policy (no network I/O).
    pub fn new(cfg: FlowConfig, metrics: Metrics) -> Result<Self, SetupError> {
        let name = cfg.name();
        let client_id = format!("mm2-checkpoint-{name}");
        let source_conn = connect::connection(
            &cfg.source,
            &client_id,
            cfg.admin_timeout.min(Duration::from_secs(30)),
        )
        .map_err(SetupError::Connect)?;
        let target_conn = connect::connection(
            &cfg.target,
            &client_id,
            cfg.admin_timeout.min(Duration::from_secs(30)),
        )
        .map_err(SetupError::Connect)?;
        let source = ClusterClient::new(
            &cfg.source.alias,
            source_conn.bootstrap.clone(),
            source_conn.config.clone(),
        )
        .map_err(|e| SetupError::Client(cfg.source.alias.clone(), e))?;
        let target = ClusterClient::new(
            &cfg.target.alias,
            target_conn.bootstrap.clone(),
            target_conn.config.clone(),
        )
        .map_err(|e| SetupError::Client(cfg.target.alias.clone(), e))?;
        let rp = &cfg.replication_policy;
        let policy = match rp.kind {
            ReplicationPolicyKind::Default => ReplicationPolicy::Default {
                separator: rp.separator.clone(),
                internal_separator: rp.internal_separator.clone(),
            },
            ReplicationPolicyKind::Identity => ReplicationPolicy::Identity {
                separator: rp.separator.clone(),
                internal_separator: rp.internal_separator.clone(),
                source_alias: Some(cfg.source.alias.clone()),
            },
        };
        let opt = |s: &str| (!s.trim().is_empty()).then(|| s.to_owned());
        let f = &cfg.filters;
        let topic_filter =
            TopicFilter::new(opt(&f.topics).as_deref(), opt(&f.topics_exclude).as_deref())
                .map_err(|e| SetupError::Invalid(format!("flow {name}: topics filter: {e}")))?;
        let group_filter =
            GroupFilter::new(opt(&f.groups).as_deref(), opt(&f.groups_exclude).as_deref())
                .map_err(|e| SetupError::Invalid(format!("flow {name}: groups filter: {e}")))?;
        let syncs_cluster = match cfg.offset_syncs_topic_location {
            OffsetSyncsTopicLocation::Source => source.clone(),
            OffsetSyncsTopicLocation::Target => target.clone(),
        };
        Ok(FlowContext {
            flow: Flow::new(cfg.source.alias.clone(), cfg.target.alias.clone()),
            syncs_topic: cfg.offset_syncs_topic(),
            checkpoints_topic: cfg.checkpoints_topic(),
            name,
            cfg,
            policy,
            topic_filter,
            group_filter,
            source,
            target,
            syncs_cluster,
            metrics,
            denied: std::sync::Mutex::new(BTreeSet::new()),
            _connections: (source_conn, target_conn),
        })
    }

    /// Wraps a cluster result: counts and returns the error with its context.
    pub fn step<T>(
        &self,
        cluster: &ClusterClient,
        op: &'static str,
        r: Result<T, Error>,
    ) -> Result<T, StepError> {
        r.map_err(|error| {
            self.metrics
                .request_error(cluster.alias(), op, &error_label(&error));
            StepError {
                cluster: cluster.alias().to_owned(),
                op,
                error: StepCause::Client(error),
            }
        })
    }

    fn ready_condition(&self) -> String {
        format!("flow {} initial read", self.name)
    }

    fn cluster_condition(&self) -> String {
        format!("flow {} clusters", self.name)
    }

    /// Creates the checkpoints topic on the target if missing (1 partition,
    /// compacted, the configured replication factor, falling back to the broker
    /// count when the factor is invalid for this cluster).
    pub async fn ensure_checkpoints_topic(&self) -> Result<(), StepError> {
        let t = &self.target;
        let topic = &self.checkpoints_topic;
        let exists = self.step(t, "Metadata", t.topic_exists(topic).await)?;
        if exists {
            return Ok(());
        }
        let configs = [("cleanup.policy", "compact")];
        let rf = self.cfg.checkpoints_topic_replication_factor;
        match t.create_topic(topic, 1, rf, &configs).await {
            Ok(CreateOutcome::Created) => {
                tracing::info!(flow = %self.name, topic, replication_factor = rf, "created the checkpoints topic");
                Ok(())
            }
            Ok(CreateOutcome::AlreadyExisted) => Ok(()),
            Err(Error::Kafka {
                error: ResponseError::InvalidReplicationFactor,
                ..
            }) => {
                let brokers = self.step(t, "Metadata", t.broker_count().await)?;
                let fallback = i16::try_from(brokers.max(1)).unwrap_or(i16::MAX);
                tracing::warn!(
                    flow = %self.name,
                    topic,
                    "checkpoints.topic.replication.factor={rf} is invalid on cluster {} \
                     ({brokers} brokers); creating the topic with replication factor {fallback}",
                    t.alias()
                );
                let r = t.create_topic(topic, 1, fallback, &configs).await;
                self.step(t, "CreateTopics", r).map(|_| ())
            }
            Err(e) => self.step(t, "CreateTopics", Err(e)),
        }
    }

    /// Lists the source's groups, applies the group filter and keeps the groups
    /// with at least one committed partition the topic filter accepts (spec E).
    ///
    /// ListGroups silently leaves out groups the principal may not describe, so
    /// the plain group names of `groups` that were not listed are asked for
    /// too: a GROUP_AUTHORIZATION_FAILED answer for one is warned about.
    pub async fn discover_groups(&self) -> Result<Vec<String>, StepError> {
        let s = &self.source;
        let listed = self.step(s, "ListGroups", s.list_groups().await)?;
        let mut candidates: BTreeSet<String> = listed
            .into_iter()
            .filter(|g| self.group_filter.should_replicate_group(g))
            .collect();
        let unlisted: BTreeSet<String> = plain_names(&self.cfg.filters.groups)
            .filter(|g| self.group_filter.should_replicate_group(g) && !candidates.contains(*g))
            .map(str::to_owned)
            .collect();
        candidates.extend(unlisted.iter().cloned());
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let candidates: Vec<String> = candidates.into_iter().collect();
        let offsets = self.step(s, "OffsetFetch", s.fetch_group_offsets(&candidates).await)?;
        let mut kept = Vec::new();
        for (group, result) in offsets {
            match result {
                Ok(tps) => {
                    if tps
                        .keys()
                        .any(|tp| self.topic_filter.should_replicate_topic(&tp.topic))
                    {
                        kept.push(group);
                    }
                }
                Err(e) if is_group_denied(&e) => {
                    let op = if unlisted.contains(&group) {
                        "ListGroups"
                    } else {
                        "OffsetFetch"
                    };
                    self.note_group_denied(s, op, &group, &e);
                }
                Err(e) => {
                    tracing::warn!(flow = %self.name, group, error = %e, "cannot list the group's offsets; left out");
                }
            }
        }
        Ok(kept)
    }

    /// A group operation on `cluster` was refused by an ACL: counts it in
    /// `request_errors_total` and warns once per group and operation, naming
    /// the ACL the cluster's principal lacks.
    fn note_group_denied(&self, cluster: &ClusterClient, op: &'static str, group: &str, e: &Error) {
        let api = if op == "ListGroups" {
            "OffsetFetch"
        } else {
            op
        };
        self.metrics
            .request_error(cluster.alias(), api, &error_label(e));
        let first = self
            .denied
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((group.to_owned(), op));
        if !first {
            return;
        }
        let what = if op == "ListGroups" {
            "is named in `groups` but not listed by ListGroups, and OffsetFetch of it is refused"
        } else {
            "cannot be read: OffsetFetch is refused"
        };
        tracing::warn!(
            flow = %self.name, cluster = cluster.alias(), op, group, error = %e,
            "group {group} on cluster {} {what} (GROUP_AUTHORIZATION_FAILED); it is not \
             checkpointed until the principal of alias {} is granted Describe on Group:{group} \
             (logged once; see request_errors_total)",
            cluster.alias(),
            cluster.alias()
        );
    }

    /// Reads partition 0 of `topic` on `cluster` from the earliest offset to the end
    /// captured at start, handing each record to `apply`. Logs progress every 5 s.
    pub async fn read_to_end(
        &self,
        cluster: &ClusterClient,
        topic: &str,
        kind: TopicKind,
        mut apply: impl FnMut(&ConsumerRecord),
    ) -> Result<i64, StepError> {
        let r = cluster
            .open_reader(topic, 0, StartOffset::Earliest, READ_WAIT)
            .await;
        let mut reader = self.step(cluster, "ListOffsets", r)?;
        let (start, end) = (reader.position(), reader.end());
        let mut last_log = Instant::now();
        let began = Instant::now();
        let total = end.saturating_sub(start).max(1) as f64;
        let name = kind.log_name();
        // The reader stops at the captured end, or lower if the log was
        // truncated below it meanwhile.
        while let Some(records) = self.step(cluster, "Fetch", cluster.read(&mut reader).await)? {
            records.iter().for_each(&mut apply);
            let pos = reader.position();
            if kind == TopicKind::OffsetSyncs {
                self.metrics.set_initial_read_progress(
                    &self.name,
                    topic,
                    pos.saturating_sub(start) as f64 / total,
                );
            }
            if last_log.elapsed() >= Duration::from_secs(5) {
                last_log = Instant::now();
                tracing::info!(flow = %self.name, topic, position = pos, end, "reading the {name} topic");
            }
        }
        if kind == TopicKind::OffsetSyncs {
            self.metrics
                .set_initial_read_progress(&self.name, topic, 1.0);
        }
        tracing::info!(
            flow = %self.name, topic, records = end.saturating_sub(start),
            elapsed_ms = began.elapsed().as_millis() as u64,
            "read the {name} topic to its end"
        );
        Ok(reader.position())
    }

    /// Restores a checkpoint store for `groups` from the checkpoints topic.
    /// Returns the store and whether the read succeeded.
    pub async fn restore_checkpoints(&self, groups: &[String]) -> (CheckpointStore, bool) {
        let mut store = CheckpointStore::new(groups.iter().cloned());
        let mut logged = BTreeSet::new();
        let metrics = self.metrics.clone();
        let name = self.name.clone();
        let r = self
            .read_to_end(
                &self.target,
                &self.checkpoints_topic,
                TopicKind::Checkpoints,
                |rec| {
                    if let crate::core::RestoreOutcome::Skipped(e) =
                        store.restore_record(rec.key.as_deref(), rec.value.as_deref())
                    {
                        note_skipped(
                            &metrics,
                            &name,
                            TopicKind::Checkpoints,
                            &e,
                            rec.offset,
                            &mut logged,
                        );
                    }
                },
            )
            .await;
        match r {
            Ok(_) => {
                let stats = store.restore_stats();
                tracing::info!(
                    flow = %self.name, restored = stats.restored, other_groups = stats.not_assigned,
                    skipped = stats.skipped(), "restored checkpoints"
                );
                (store, true)
            }
            Err(e) => {
                tracing::warn!(
                    flow = %self.name, error = %e,
                    "cannot read the checkpoints topic; offset syncs will be read in must-read-to-end mode"
                );
                (CheckpointStore::new(groups.iter().cloned()), false)
            }
        }
    }
}

/// What carrying out one group's [`GroupSyncDecision`] did.
#[derive(Debug)]
pub enum GroupSyncResult {
    /// The offsets were committed.
    Committed {
        /// Partitions written.
        partitions: usize,
        /// Partitions left alone because the target was at or ahead.
        target_ahead: usize,
    },
    /// The broker refused the commit: the group has active members.
    GroupActive,
    /// The commit failed.
    CommitFailed(Error),
    /// Nothing was committed, as decided (never [`GroupSyncDecision::Commit`]).
    NotCommitted(GroupSyncDecision),
}

/// Carries out a group-sync plan on `target`: issues each decided commit, one
/// group after another in group order, and hands every group's result to
/// `report` as soon as it is known. The run loop's group sync and `translate
/// --apply` both go through here.
pub async fn carry_out_group_sync(
    target: &ClusterClient,
    plan: GroupSyncPlan,
    mut report: impl FnMut(&str, GroupSyncResult),
) {
    for (group, decision) in plan.decisions {
        let result = match decision {
            GroupSyncDecision::Commit {
                offsets,
                target_ahead,
            } => match target.commit_group_offsets(&group, &offsets).await {
                Ok(CommitOutcome::Committed) => GroupSyncResult::Committed {
                    partitions: offsets.len(),
                    target_ahead,
                },
                Ok(CommitOutcome::GroupActive) => GroupSyncResult::GroupActive,
                Err(e) => GroupSyncResult::CommitFailed(e),
            },
            other => GroupSyncResult::NotCommitted(other),
        };
        report(&group, result);
    }
}

/// Whether `e` is an ACL refusal on a group.
fn is_group_denied(e: &Error) -> bool {
    e.kafka_error() == Some(ResponseError::GroupAuthorizationFailed)
}

/// The entries of a `groups` list that are plain group names (no regular
/// expression syntax besides `.`, which matches itself too).
fn plain_names(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|name| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    })
}

fn note_skipped(
    metrics: &Metrics,
    flow: &str,
    kind: TopicKind,
    e: &DecodeError,
    offset: i64,
    logged: &mut BTreeSet<&'static str>,
) {
    let (reason, label) = match e {
        DecodeError::Null { .. } => (metrics::RecordSkipReason::Tombstone, "tombstone"),
        DecodeError::UnsupportedVersion { .. } => {
            (metrics::RecordSkipReason::UnknownVersion, "unknown_version")
        }
        _ => (metrics::RecordSkipReason::Corrupt, "corrupt"),
    };
    metrics.record_skipped(flow, kind, reason);
    if logged.insert(label) {
        tracing::warn!(
            flow, topic_kind = kind.as_str(), offset, error = %e,
            "skipping a {label} record (logged once per kind; see records_skipped_total)"
        );
    }
}

/// The changing state of a running flow.
pub struct FlowState {
    /// The offset-sync store.
    pub syncs: OffsetSyncStore,
    /// Next offset of the offset-syncs topic to read.
    pub syncs_pos: i64,
    /// The checkpoint store.
    pub checkpoints: CheckpointStore,
    /// The groups this flow checkpoints.
    pub groups: Vec<String>,
    logged: BTreeSet<&'static str>,
}

/// What an emission round did.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundSummary {
    /// Checkpoints produced.
    pub emitted: usize,
    /// Partitions skipped.
    pub skipped: usize,
}

/// What a group sync did, per outcome.
#[derive(Clone, Copy, Debug, Default)]
pub struct SyncSummary {
    /// Groups committed.
    pub committed: usize,
    /// Groups skipped as active (also when the broker refused).
    pub skipped_active: usize,
    /// Groups already at or ahead of the checkpoints.
    pub skipped_target_ahead: usize,
    /// Groups in an unknown state.
    pub skipped_unknown_state: usize,
    /// Failed commits.
    pub failed: usize,
}

impl FlowContext {
    /// Startup: topic, groups, restore, initial read of the offset syncs.
    pub async fn start(&self) -> Result<FlowState, StepError> {
        let readiness = self.metrics.readiness();
        readiness.set_not_ready(
            self.ready_condition(),
            "the offset-syncs topic has not been read to its end",
        );
        self.ensure_checkpoints_topic().await?;
        let groups = self.discover_groups().await?;
        tracing::info!(flow = %self.name, groups = groups.len(), "discovered consumer groups");
        let (checkpoints, restored) = self.restore_checkpoints(&groups).await;
        let mode = if restored {
            InitMode::LoadAllHistory
        } else {
            InitMode::MustReadToEnd
        };
        let mut state = FlowState {
            syncs: OffsetSyncStore::new(mode),
            syncs_pos: 0,
            checkpoints,
            groups,
            logged: BTreeSet::new(),
        };
        let c = &self.syncs_cluster;
        let exists = self.step(c, "Metadata", c.topic_exists(&self.syncs_topic).await)?;
        if !exists {
            return Err(StepError {
                cluster: c.alias().to_owned(),
                op: "Metadata",
                error: StepCause::Driver {
                    what: format!(
                        "the offset-syncs topic {} does not exist yet (is MM2's source connector running?)",
                        self.syncs_topic
                    ),
                    cause: None,
                },
            });
        }
        let applied = self.read_all_syncs(&mut state).await?;
        self.metrics.offset_syncs_read(&self.name, applied);
        readiness.set_ready(&self.ready_condition());
        tracing::info!(
            flow = %self.name, syncs = applied, partitions = state.syncs.partition_count(),
            mode = ?mode, "offset syncs loaded; translation is ready"
        );
        Ok(state)
    }

    /// Reads new offset syncs (non-blocking) up to the current end.
    pub async fn poll_syncs(&self, state: &mut FlowState) -> Result<u64, StepError> {
        let c = &self.syncs_cluster;
        let mut applied = 0u64;
        loop {
            let pos = state.syncs_pos;
            let mut reader = PartitionReader::new(
                &self.syncs_topic,
                0,
                pos,
                pos,
                fetch_options(Duration::ZERO),
            );
            let (records, high_watermark) = match c.follow(&mut reader).await {
                // Our position is past the log end: the topic was deleted and
                // recreated (or truncated). The syncs we hold may describe a
                // log that no longer exists, so start over from the new log.
                Err(e) if e.is_offset_out_of_range() => {
                    applied += self.reread_syncs(state).await?;
                    break;
                }
                r => self.step(c, "Fetch", r)?,
            };
            for rec in &records {
                if self.apply_sync_record(&mut state.syncs, &mut state.logged, rec, true) {
                    applied += 1;
                }
            }
            let advanced = reader.position() > pos;
            state.syncs_pos = reader.position();
            if !advanced || state.syncs_pos >= high_watermark {
                break;
            }
        }
        if applied > 0 {
            self.metrics.offset_syncs_read(&self.name, applied);
        }
        Ok(applied)
    }

    /// Decodes one record of the offset-syncs topic into `syncs`; an
    /// undecodable one is counted and warned about once per kind. With
    /// `following` (reading what was appended after the initial read), an
    /// upstream offset going backwards is warned about. Returns whether a
    /// sync was applied.
    fn apply_sync_record(
        &self,
        syncs: &mut OffsetSyncStore,
        logged: &mut BTreeSet<&'static str>,
        rec: &ConsumerRecord,
        following: bool,
    ) -> bool {
        let s = match OffsetSyncRecord::decode(rec.key.as_deref(), rec.value.as_deref()) {
            Ok(s) => s,
            Err(e) => {
                let kind = TopicKind::OffsetSyncs;
                note_skipped(&self.metrics, &self.name, kind, &e, rec.offset, logged);
                return false;
            }
        };
        let tp = &s.topic_partition;
        if following {
            let newest = syncs
                .layout(&tp.topic, tp.partition)
                .and_then(|l| l.slot(0));
            if let Some(newest) = newest.filter(|n| s.upstream_offset < n.upstream) {
                // The store discards the partition's history (as
                // MM2 does); say so, it is rare and worth knowing.
                tracing::warn!(
                    flow = %self.name, topic = %tp.topic, partition = tp.partition,
                    from = newest.upstream, to = s.upstream_offset,
                    "an offset sync's upstream offset went backwards (source topic recreated or truncated, or MirrorMaker replaying after a restart); translating from the new syncs only"
                );
            }
        }
        syncs.apply(
            &tp.topic,
            tp.partition,
            s.upstream_offset,
            s.downstream_offset,
        );
        true
    }

    /// The offset-syncs topic went backwards (its end is below our position):
    /// logs it, drops every sync held and reads the topic again from its start
    /// in must-read-to-end mode, so no translation uses a sync of the old log.
    async fn reread_syncs(&self, state: &mut FlowState) -> Result<u64, StepError> {
        let c = &self.syncs_cluster;
        tracing::warn!(
            flow = %self.name, cluster = c.alias(), topic = %self.syncs_topic, position = state.syncs_pos,
            "the offset-syncs topic went backwards (deleted and recreated, or truncated); dropping the syncs held and rereading it from its start"
        );
        state.syncs = OffsetSyncStore::new(InitMode::MustReadToEnd);
        self.read_all_syncs(state).await
    }

    /// Reads the offset-syncs topic from its start to the end captured now into
    /// `state.syncs`, then ends the store's initial read; returns the number of
    /// syncs applied. Undecodable records are skipped and counted.
    async fn read_all_syncs(&self, state: &mut FlowState) -> Result<u64, StepError> {
        let mut applied = 0u64;
        let FlowState { syncs, logged, .. } = state;
        let pos = self
            .read_to_end(
                &self.syncs_cluster,
                &self.syncs_topic,
                TopicKind::OffsetSyncs,
                |rec| {
                    if self.apply_sync_record(syncs, logged, rec, false) {
                        applied += 1;
                    }
                },
            )
            .await?;
        state.syncs_pos = pos;
        state.syncs.finish_initial_read();
        Ok(applied)
    }

    /// Re-discovers the groups; if the set changed, rebuilds the checkpoint store
    /// for the new set from the checkpoints topic.
    pub async fn refresh_groups(&self, state: &mut FlowState) -> Result<(), StepError> {
        let groups = self.discover_groups().await?;
        if groups != state.groups {
            tracing::info!(flow = %self.name, before = state.groups.len(), after = groups.len(), "the set of consumer groups changed");
            let (store, ok) = self.restore_checkpoints(&groups).await;
            if ok {
                state.checkpoints = store;
                state.groups = groups;
                let keep: BTreeSet<String> = state.groups.iter().cloned().collect();
                self.metrics
                    .retain_checkpoint_latency_groups(&self.name, |g| keep.contains(g));
            }
        }
        Ok(())
    }

    /// One emission round.
    pub async fn emit_round(&self, state: &mut FlowState) -> Result<RoundSummary, StepError> {
        let started = Instant::now();
        if state.groups.is_empty() {
            self.metrics
                .observe_round_duration(&self.name, started.elapsed());
            return Ok(RoundSummary::default());
        }
        let s = &self.source;
        let fetched = self.step(s, "OffsetFetch", s.fetch_group_offsets(&state.groups).await)?;
        let mut groups: BTreeMap<String, GroupOffsets> = BTreeMap::new();
        for (group, result) in fetched {
            match result {
                Ok(offsets) => {
                    groups.insert(group, offsets);
                }
                Err(e) if is_group_denied(&e) => {
                    self.note_group_denied(s, "OffsetFetch", &group, &e);
                }
                Err(e) => {
                    self.metrics
                        .request_error(s.alias(), "OffsetFetch", &error_label(&e));
                    tracing::warn!(flow = %self.name, cluster = s.alias(), group, error = %e, "OffsetFetch failed for a group; skipped this round");
                }
            }
        }
        let round = CheckpointRound {
            flow: &self.flow,
            policy: &self.policy,
            topic_filter: &self.topic_filter,
        };
        let plan = round.plan(&state.syncs, &state.checkpoints, &groups);
        // The plan owns what it needs; free the OffsetFetch answers (~1 MB at
        // 10,000 group-partitions) before producing.
        drop(groups);
        let counts = plan.skip_counts();
        for (reason, n) in [
            (UntranslatableReason::NotReady, counts.not_ready),
            (UntranslatableReason::NoSync, counts.no_sync),
            (UntranslatableReason::TooOld, counts.too_old),
            (UntranslatableReason::Filtered, counts.filtered),
            (UntranslatableReason::NullOffset, counts.null_offset),
            (UntranslatableReason::Suppressed, counts.not_more_recent),
            (UntranslatableReason::Conflict, counts.conflict),
        ] {
            self.metrics
                .set_untranslatable_partitions(&self.name, reason, n);
        }
        for sk in &plan.skipped {
            if let SkipReason::Conflict { downstream } = &sk.reason {
                tracing::warn!(flow = %self.name, group = sk.group, upstream = %sk.upstream, %downstream, "two upstream partitions map to one downstream partition; skipped");
            }
        }
        let summary = RoundSummary {
            emitted: plan.checkpoints.len(),
            skipped: plan.skipped.len(),
        };
        if !plan.checkpoints.is_empty() {
            self.produce_checkpoints(state, &plan.checkpoints).await?;
        }
        self.metrics
            .observe_round_duration(&self.name, started.elapsed());
        tracing::debug!(flow = %self.name, emitted = summary.emitted, skipped = summary.skipped, "emission round done");
        Ok(summary)
    }

    /// Produces `cps` to the checkpoints topic. If the topic is gone (deleted
    /// while the daemon runs), re-creates it, writes every checkpoint held in
    /// memory again and then `cps`; the store itself is kept as it is.
    async fn produce_checkpoints(
        &self,
        state: &mut FlowState,
        cps: &[Checkpoint],
    ) -> Result<(), StepError> {
        let t = &self.target;
        match self.produce_chunks(state, cps).await {
            Err(e) if e.kafka_error() == Some(ResponseError::UnknownTopicOrPartition) => {
                let cause = self.step::<()>(t, "Produce", Err(e)).err();
                self.recreate_checkpoints_topic(state, cause).await?;
                let r = self.produce_chunks(state, cps).await;
                self.step(t, "Produce", r)
            }
            r => self.step(t, "Produce", r),
        }
    }

    /// The checkpoints topic is missing: creates it as at startup and writes
    /// the checkpoints held in memory, so it again holds the last checkpoint of
    /// every group and partition (nothing is rewound or forgotten).
    async fn recreate_checkpoints_topic(
        &self,
        state: &mut FlowState,
        cause: Option<StepError>,
    ) -> Result<(), StepError> {
        let t = &self.target;
        let held: Vec<Checkpoint> = state.checkpoints.checkpoints().collect();
        let error = cause.map(|e| e.to_string()).unwrap_or_default();
        tracing::warn!(
            flow = %self.name, cluster = t.alias(), topic = %self.checkpoints_topic, %error,
            held = held.len(),
            "the checkpoints topic is missing on cluster {} (deleted while running?); re-creating it \
             and writing the {} checkpoints held in memory again",
            t.alias(),
            held.len()
        );
        self.ensure_checkpoints_topic().await?;
        let r = self.produce_chunks(state, &held).await;
        self.step(t, "Produce", r)
    }

    /// Encodes `cps` and produces them in chunks; each acknowledged chunk is
    /// recorded in the store and the metrics. Each chunk is encoded just before
    /// it is produced, so at most one chunk of records is held at a time (at
    /// 10,000 checkpoints, encoding all first held ~3 MB more at the peak).
    async fn produce_chunks(&self, state: &mut FlowState, cps: &[Checkpoint]) -> Result<(), Error> {
        const CHUNK: usize = 2000;
        let ts = now_ms();
        let t = &self.target;
        for chunk in cps.chunks(CHUNK) {
            let mut recs = Vec::with_capacity(chunk.len());
            let mut encodable = Vec::with_capacity(chunk.len());
            for cp in chunk {
                match (cp.encode_key(), cp.encode_value()) {
                    (Ok(key), Ok(value)) => {
                        recs.push(OutRecord {
                            key,
                            value,
                            timestamp: ts,
                        });
                        encodable.push(cp.clone());
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        tracing::warn!(flow = %self.name, group = cp.key.group, tp = %cp.key.topic_partition, error = %e, "cannot encode a checkpoint; skipped");
                    }
                }
            }
            if recs.is_empty() {
                continue;
            }
            let cps = &encodable[..];
            match t.produce(&self.checkpoints_topic, 0, &recs).await {
                Ok(_) => {
                    state.checkpoints.on_produced(cps);
                    self.metrics
                        .checkpoints_emitted(&self.name, cps.len() as u64);
                    // MM2's checkpoint-latency-ms: acknowledgement time minus the
                    // record's timestamp, per group and downstream partition.
                    let elapsed = u64::try_from(now_ms().saturating_sub(ts)).unwrap_or(0);
                    let latency = Duration::from_millis(elapsed);
                    for cp in cps {
                        let tp = &cp.key.topic_partition;
                        self.metrics.set_checkpoint_latency(
                            &self.name,
                            &cp.key.group,
                            &tp.topic,
                            tp.partition,
                            latency,
                        );
                    }
                }
                Err(e) => {
                    state.checkpoints.on_produce_failed(cps);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// One target group sync.
    pub async fn sync_groups(&self, store: &CheckpointStore) -> Result<SyncSummary, StepError> {
        let t = &self.target;
        let groups: Vec<String> = store
            .assigned_groups()
            .map(str::to_owned)
            .chain(store.groups().map(|(g, _)| g.to_owned()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let (refresh, failed) = match self.refresh_target(&groups).await {
            Ok(groups) => (TargetRefresh::Done(groups), None),
            Err(e) => (TargetRefresh::Failed, Some(e)),
        };
        let plan = plan_group_sync(store, &refresh);
        let mut summary = SyncSummary::default();
        carry_out_group_sync(t, plan, |group, result| {
            let m = match result {
                GroupSyncResult::Committed { partitions, .. } => {
                    tracing::info!(flow = %self.name, group, partitions, "synced the target group's offsets");
                    summary.committed += 1;
                    metrics::GroupSyncOutcome::Committed
                }
                GroupSyncResult::GroupActive => {
                    tracing::info!(flow = %self.name, group, "the target group became active; not synced");
                    summary.skipped_active += 1;
                    metrics::GroupSyncOutcome::SkippedActive
                }
                GroupSyncResult::CommitFailed(e) => {
                    self.metrics
                        .request_error(t.alias(), "OffsetCommit", &error_label(&e));
                    tracing::warn!(flow = %self.name, cluster = t.alias(), group, error = %e, "OffsetCommit failed");
                    summary.failed += 1;
                    metrics::GroupSyncOutcome::Failed
                }
                GroupSyncResult::NotCommitted(decision) => match decision {
                    GroupSyncDecision::SkippedActive(_) => {
                        summary.skipped_active += 1;
                        metrics::GroupSyncOutcome::SkippedActive
                    }
                    GroupSyncDecision::SkippedTargetAhead { .. } => {
                        summary.skipped_target_ahead += 1;
                        metrics::GroupSyncOutcome::SkippedTargetAhead
                    }
                    GroupSyncDecision::SkippedUnknownState => {
                        summary.skipped_unknown_state += 1;
                        metrics::GroupSyncOutcome::SkippedUnknownState
                    }
                    GroupSyncDecision::NothingToDo | GroupSyncDecision::Commit { .. } => return,
                },
            };
            self.metrics.group_synced(&self.name, m);
        })
        .await;
        if let Some(failed) = failed {
            return Err(StepError {
                cluster: t.alias().to_owned(),
                op: "DescribeGroups",
                error: StepCause::Driver {
                    what: "the target groups could not be described; no sync this round".into(),
                    cause: match failed.error {
                        StepCause::Client(e) => Some(Box::new(e)),
                        StepCause::Driver { cause, .. } => cause,
                    },
                },
            });
        }
        Ok(summary)
    }

    /// Describes `groups` on the target and lists the offsets of the Empty
    /// ones. A failed describe fails the whole refresh (counted and logged).
    pub async fn refresh_target(
        &self,
        groups: &[String],
    ) -> Result<BTreeMap<String, TargetGroup>, StepError> {
        let t = &self.target;
        if groups.is_empty() {
            return Ok(BTreeMap::new());
        }
        let described = match t.describe_groups(groups).await {
            Ok(d) => d,
            Err(e) => {
                let e = self.step::<()>(t, "DescribeGroups", Err(e)).unwrap_err();
                tracing::warn!(flow = %self.name, error = %e, "target refresh failed; no group sync this round");
                return Err(e);
            }
        };
        let empty: Vec<String> = described
            .iter()
            .filter(|(_, d)| d.state == TargetGroupState::Empty)
            .map(|(g, _)| g.clone())
            .collect();
        let mut offsets = if empty.is_empty() {
            BTreeMap::new()
        } else {
            match t.fetch_group_offsets(&empty).await {
                Ok(o) => o,
                Err(e) => {
                    self.metrics
                        .request_error(t.alias(), "OffsetFetch", &error_label(&e));
                    tracing::warn!(flow = %self.name, cluster = t.alias(), error = %e, "OffsetFetch of target groups failed");
                    BTreeMap::new()
                }
            }
        };
        let mut out = BTreeMap::new();
        for (group, d) in described {
            let committed = offsets.remove(&group).and_then(Result::ok).map(|o| {
                o.into_iter()
                    .map(|(tp, v)| (tp, v.map(|c| c.offset)))
                    .collect()
            });
            out.insert(group, TargetGroup::from_state(d.state, committed));
        }
        Ok(out)
    }

    /// Marks the flow's clusters reachable or not in the readiness flag.
    pub fn set_clusters_ok(&self, ok: bool, reason: &str) {
        let readiness = self.metrics.readiness();
        if ok {
            readiness.set_ready(&self.cluster_condition());
        } else {
            readiness.set_not_ready(self.cluster_condition(), reason.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::plain_names;

    #[test]
    fn plain_names_keeps_literal_group_names_and_drops_patterns() {
        let names: Vec<&str> = plain_names(" billing, app-.*,ops.audit_1,,[a-z]+ ,x").collect();
        assert_eq!(names, ["billing", "ops.audit_1", "x"]);
    }
}
