//! Prometheus metrics and the HTTP endpoint that serves them.
//!
//! [`Metrics`] owns one registry with every series the daemon exports, all named
//! `mm2_checkpoint_*` and labelled by `flow` (`"A->B"`). The driver records
//! through typed methods (`checkpoints_emitted`, `set_checkpoint_latency`, ...)
//! so metric names and label spellings live only here. [`Readiness`] is the flag
//! behind `/readyz` and the `mm2_checkpoint_ready` gauge. [`MetricsServer`]
//! answers `/metrics`, `/healthz` and `/readyz`.
//!
//! `checkpoint_latency_ms` differs from MM2's sensor of the same name on
//! purpose: MM2 keeps one sensor per connector task whose value is whatever
//! partition was recorded last. Here every (group, topic, partition) has its own
//! series, and series of groups that stop being checkpointed are removed.
//!
//! Exposition uses the `prometheus-client` crate (the Prometheus project's own
//! pure-Rust client): it handles text-format escaping, both the Prometheus 0.0.4
//! and OpenMetrics formats, and lock-free counters.

mod follower;
mod readiness;
mod server;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

pub use readiness::Readiness;
pub use server::{MetricsServer, ServerLimits};

/// Prefix of every metric name.
pub const PREFIX: &str = "mm2_checkpoint";

/// Bucket bounds of `round_duration_seconds`: a round is a few requests, from
/// milliseconds on a quiet pair of clusters to minutes behind a slow broker.
const ROUND_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Why a partition of a group got no checkpoint this round (label `reason` of
/// `untranslatable_partitions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UntranslatableReason {
    /// The offset-syncs topic has not been read to its end yet.
    NotReady,
    /// No offset sync is known for the partition.
    NoSync,
    /// The group's offset is older than every offset sync kept.
    TooOld,
    /// The topic or group is excluded by the filters.
    Filtered,
    /// The group has no committed offset for the partition.
    NullOffset,
    /// A checkpoint was held back to keep offsets monotonic.
    Suppressed,
    /// Conflicting information (e.g. a checkpoint from another upstream).
    Conflict,
}

impl UntranslatableReason {
    /// Every reason, for resetting all of a flow's series at once.
    pub const ALL: [UntranslatableReason; 7] = [
        UntranslatableReason::NotReady,
        UntranslatableReason::NoSync,
        UntranslatableReason::TooOld,
        UntranslatableReason::Filtered,
        UntranslatableReason::NullOffset,
        UntranslatableReason::Suppressed,
        UntranslatableReason::Conflict,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            UntranslatableReason::NotReady => "not_ready",
            UntranslatableReason::NoSync => "no_sync",
            UntranslatableReason::TooOld => "too_old",
            UntranslatableReason::Filtered => "filtered",
            UntranslatableReason::NullOffset => "null_offset",
            UntranslatableReason::Suppressed => "suppressed",
            UntranslatableReason::Conflict => "conflict",
        }
    }
}

/// What happened to one consumer group in a group-offset sync (label `outcome`
/// of `group_syncs_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupSyncOutcome {
    /// Translated offsets were committed to the target group.
    Committed,
    /// Skipped: the target group has active members.
    SkippedActive,
    /// Skipped: the target group is already ahead of the translation.
    SkippedTargetAhead,
    /// Skipped: the target group's state could not be determined.
    SkippedUnknownState,
    /// The commit failed.
    Failed,
}

impl GroupSyncOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupSyncOutcome::Committed => "committed",
            GroupSyncOutcome::SkippedActive => "skipped_active",
            GroupSyncOutcome::SkippedTargetAhead => "skipped_target_ahead",
            GroupSyncOutcome::SkippedUnknownState => "skipped_unknown_state",
            GroupSyncOutcome::Failed => "failed",
        }
    }
}

/// Which internal topic a skipped record came from (label `topic_kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TopicKind {
    /// `mm2-offset-syncs.<alias>.internal`.
    OffsetSyncs,
    /// `<source>.checkpoints.internal`.
    Checkpoints,
    /// The source's `__consumer_offsets` (the commit follower).
    ConsumerOffsets,
}

impl TopicKind {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            TopicKind::OffsetSyncs => "offset_syncs",
            TopicKind::Checkpoints => "checkpoints",
            TopicKind::ConsumerOffsets => "consumer_offsets",
        }
    }

    /// The topic's name in log lines: `offset-syncs` or `checkpoints`.
    pub fn log_name(self) -> &'static str {
        match self {
            TopicKind::OffsetSyncs => "offset-syncs",
            TopicKind::Checkpoints => "checkpoints",
            TopicKind::ConsumerOffsets => "__consumer_offsets",
        }
    }
}

/// Why a record of an internal topic was skipped (label `reason` of
/// `records_skipped_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordSkipReason {
    /// The key or value does not decode.
    Corrupt,
    /// A record with a null value.
    Tombstone,
    /// A schema version this program does not know.
    UnknownVersion,
}

impl RecordSkipReason {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordSkipReason::Corrupt => "corrupt",
            RecordSkipReason::Tombstone => "tombstone",
            RecordSkipReason::UnknownVersion => "unknown_version",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FlowLabels {
    flow: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    flow: Arc<str>,
    group: Arc<str>,
    topic: Arc<str>,
    partition: i32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UntranslatableLabels {
    flow: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    flow: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestErrorLabels {
    cluster: String,
    api: String,
    error: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SkippedLabels {
    flow: String,
    topic_kind: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabels {
    flow: String,
    topic: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildInfoLabels {
    version: &'static str,
    tls_provider: &'static str,
}

type RatioGauge = Gauge<f64, AtomicU64>;

fn round_histogram() -> Histogram {
    Histogram::new(ROUND_BUCKETS)
}

/// The label sets of `checkpoint_latency_ms`, kept so a whole group's series
/// can be removed (the metric family cannot list its own label sets).
///
/// There is one series per (group, partition), so the flow, group and topic
/// names are interned: every series and index entry shares one `Arc<str>` per
/// distinct name instead of holding three copies of its own.
#[derive(Default)]
struct LatencyIndex {
    /// Every flow, group and topic name in use by a series.
    names: HashSet<Arc<str>>,
    /// flow → group → the (topic, partition) of each series.
    series: BTreeMap<Arc<str>, GroupSeries>,
}

/// group → the (topic, partition) of each of its `checkpoint_latency_ms` series.
type GroupSeries = BTreeMap<Arc<str>, BTreeSet<(Arc<str>, i32)>>;

impl LatencyIndex {
    /// The shared copy of `name`, added if new.
    fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(shared) = self.names.get(name) {
            return Arc::clone(shared);
        }
        let shared: Arc<str> = Arc::from(name);
        self.names.insert(Arc::clone(&shared));
        shared
    }

    /// Drops the names no series uses any more.
    fn forget_unused_names(&mut self) {
        self.names.retain(|name| Arc::strong_count(name) > 1);
    }
}

struct Inner {
    registry: Registry,
    checkpoints_emitted: Family<FlowLabels, Counter>,
    checkpoint_latency: Family<LatencyLabels, Gauge>,
    latency_index: Mutex<LatencyIndex>,
    round_duration: Family<FlowLabels, Histogram, fn() -> Histogram>,
    offset_syncs_read: Family<FlowLabels, Counter>,
    untranslatable: Family<UntranslatableLabels, Gauge>,
    group_syncs: Family<OutcomeLabels, Counter>,
    request_errors: Family<RequestErrorLabels, Counter>,
    records_skipped: Family<SkippedLabels, Counter>,
    initial_read_progress: Family<TopicLabels, RatioGauge>,
    follower: follower::FollowerMetrics,
    readiness: Readiness,
}

/// Every metric of the daemon. Cheap to clone (one `Arc`); all methods take
/// `&self` and are safe to call from any task.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// A fresh registry. `version` and `tls_provider` go into
    /// `mm2_checkpoint_build_info` (value 1). Readiness starts as not ready.
    pub fn new(version: &'static str, tls_provider: &'static str) -> Self {
        let mut registry = Registry::with_prefix(PREFIX);
        let checkpoints_emitted = Family::<FlowLabels, Counter>::default();
        registry.register(
            "checkpoints_emitted",
            "Checkpoint records written to the target's checkpoints topic",
            checkpoints_emitted.clone(),
        );
        let checkpoint_latency = Family::<LatencyLabels, Gauge>::default();
        registry.register(
            "checkpoint_latency_ms",
            "Milliseconds between the upstream group's offset and the checkpoint that \
             carries it, per group and partition",
            checkpoint_latency.clone(),
        );
        let round_duration: Family<FlowLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(round_histogram);
        registry.register(
            "round_duration_seconds",
            "Time taken by one checkpoint round of a flow",
            round_duration.clone(),
        );
        let offset_syncs_read = Family::<FlowLabels, Counter>::default();
        registry.register(
            "offset_syncs_read",
            "Offset-sync records read from the offset-syncs topic",
            offset_syncs_read.clone(),
        );
        let untranslatable = Family::<UntranslatableLabels, Gauge>::default();
        registry.register(
            "untranslatable_partitions",
            "Group partitions that got no checkpoint in the last round, by reason",
            untranslatable.clone(),
        );
        let group_syncs = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "group_syncs",
            "Consumer-group offset syncs on the target, by outcome",
            group_syncs.clone(),
        );
        let request_errors = Family::<RequestErrorLabels, Counter>::default();
        registry.register(
            "request_errors",
            "Failed Kafka requests, by cluster, API and error",
            request_errors.clone(),
        );
        let records_skipped = Family::<SkippedLabels, Counter>::default();
        registry.register(
            "records_skipped",
            "Records of the offset-syncs or checkpoints topic that were skipped, by reason",
            records_skipped.clone(),
        );
        let initial_read_progress = Family::<TopicLabels, RatioGauge>::default();
        registry.register(
            "initial_read_progress_ratio",
            "Share (0 to 1) of an internal topic read at startup",
            initial_read_progress.clone(),
        );
        let follower = follower::FollowerMetrics::register(&mut registry);
        let ready = Gauge::<i64>::default();
        registry.register(
            "ready",
            "1 when initial reads are done and the clusters are reachable, else 0",
            ready.clone(),
        );
        let build_info = Family::<BuildInfoLabels, Gauge>::default();
        build_info
            .get_or_create(&BuildInfoLabels {
                version,
                tls_provider,
            })
            .set(1);
        registry.register(
            "build_info",
            "Version and TLS provider of this binary (value 1)",
            build_info,
        );
        Self {
            inner: Arc::new(Inner {
                registry,
                checkpoints_emitted,
                checkpoint_latency,
                latency_index: Mutex::new(LatencyIndex::default()),
                round_duration,
                offset_syncs_read,
                untranslatable,
                group_syncs,
                request_errors,
                records_skipped,
                initial_read_progress,
                follower,
                readiness: Readiness::with_gauge(ready),
            }),
        }
    }

    /// The readiness flag tied to this registry's `ready` gauge.
    pub fn readiness(&self) -> Readiness {
        self.inner.readiness.clone()
    }

    /// Adds `count` to `checkpoints_emitted_total{flow}`.
    pub fn checkpoints_emitted(&self, flow: &str, count: u64) {
        self.inner
            .checkpoints_emitted
            .get_or_create(&flow_labels(flow))
            .inc_by(count);
    }

    /// Sets `checkpoint_latency_ms{flow,group,topic,partition}`: the age of the
    /// upstream offset this round's checkpoint carries (now minus the upstream
    /// commit or record time; compute it with `saturating_sub` so clock skew
    /// gives 0).
    pub fn set_checkpoint_latency(
        &self,
        flow: &str,
        group: &str,
        topic: &str,
        partition: i32,
        latency: Duration,
    ) {
        let ms = i64::try_from(latency.as_millis()).unwrap_or(i64::MAX);
        let mut index = self.latency_index();
        let labels = LatencyLabels {
            flow: index.intern(flow),
            group: index.intern(group),
            topic: index.intern(topic),
            partition,
        };
        self.inner.checkpoint_latency.get_or_create(&labels).set(ms);
        index
            .series
            .entry(labels.flow)
            .or_default()
            .entry(labels.group)
            .or_default()
            .insert((labels.topic, partition));
    }

    /// Removes every `checkpoint_latency_ms` series of `group` in `flow` (the
    /// group was deleted or is no longer checkpointed).
    pub fn remove_checkpoint_latency_group(&self, flow: &str, group: &str) {
        let mut index = self.latency_index();
        self.remove_latency_group(&mut index, flow, group);
        index.forget_unused_names();
    }

    /// Removes the series of `group` in `flow` from the family and `index`,
    /// leaving their names interned.
    fn remove_latency_group(&self, index: &mut LatencyIndex, flow: &str, group: &str) {
        let Some(groups) = index.series.get_mut(flow) else {
            return;
        };
        let Some((group, series)) = groups.remove_entry(group) else {
            return;
        };
        let Some((flow, _)) = index.series.get_key_value(flow) else {
            return;
        };
        let flow = Arc::clone(flow);
        for (topic, partition) in series {
            self.inner.checkpoint_latency.remove(&LatencyLabels {
                flow: Arc::clone(&flow),
                group: Arc::clone(&group),
                topic,
                partition,
            });
        }
        if index.series.get(&flow).is_some_and(BTreeMap::is_empty) {
            index.series.remove(&flow);
        }
    }

    /// Removes the `checkpoint_latency_ms` series of every group of `flow` for
    /// which `keep` returns false. Call it after each round with the set of
    /// groups still checkpointed.
    pub fn retain_checkpoint_latency_groups(&self, flow: &str, keep: impl Fn(&str) -> bool) {
        let mut index = self.latency_index();
        let gone: Vec<Arc<str>> = index
            .series
            .get(flow)
            .into_iter()
            .flat_map(BTreeMap::keys)
            .filter(|g| !keep(g))
            .cloned()
            .collect();
        if gone.is_empty() {
            return;
        }
        for group in gone {
            self.remove_latency_group(&mut index, flow, &group);
        }
        index.forget_unused_names();
    }

    /// Records one round of `flow` in `round_duration_seconds`.
    pub fn observe_round_duration(&self, flow: &str, duration: Duration) {
        self.inner
            .round_duration
            .get_or_create(&flow_labels(flow))
            .observe(duration.as_secs_f64());
    }

    /// Adds `count` to `offset_syncs_read_total{flow}`.
    pub fn offset_syncs_read(&self, flow: &str, count: u64) {
        self.inner
            .offset_syncs_read
            .get_or_create(&flow_labels(flow))
            .inc_by(count);
    }

    /// Sets `untranslatable_partitions{flow,reason}` to `count` (the number
    /// after the latest round, not a running total).
    pub fn set_untranslatable_partitions(
        &self,
        flow: &str,
        reason: UntranslatableReason,
        count: u64,
    ) {
        self.inner
            .untranslatable
            .get_or_create(&UntranslatableLabels {
                flow: flow.to_string(),
                reason: reason.as_str(),
            })
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Adds one to `group_syncs_total{flow,outcome}`.
    pub fn group_synced(&self, flow: &str, outcome: GroupSyncOutcome) {
        self.inner
            .group_syncs
            .get_or_create(&OutcomeLabels {
                flow: flow.to_string(),
                outcome: outcome.as_str(),
            })
            .inc();
    }

    /// Adds one to `request_errors_total{cluster,api,error}`, e.g.
    /// `("primary", "OffsetCommit", "REBALANCE_IN_PROGRESS")`. Keep `error` to a
    /// small set (Kafka error names, `timeout`, `io`): every value is a series.
    pub fn request_error(&self, cluster: &str, api: &str, error: &str) {
        self.inner
            .request_errors
            .get_or_create(&RequestErrorLabels {
                cluster: cluster.to_string(),
                api: api.to_string(),
                error: error.to_string(),
            })
            .inc();
    }

    /// Adds one to `records_skipped_total{flow,topic_kind,reason}`.
    pub fn record_skipped(&self, flow: &str, topic_kind: TopicKind, reason: RecordSkipReason) {
        self.inner
            .records_skipped
            .get_or_create(&SkippedLabels {
                flow: flow.to_string(),
                topic_kind: topic_kind.as_str(),
                reason: reason.as_str(),
            })
            .inc();
    }

    /// Sets `initial_read_progress_ratio{flow,topic}`, clamped to 0..=1 (NaN
    /// counts as 0).
    pub fn set_initial_read_progress(&self, flow: &str, topic: &str, ratio: f64) {
        let ratio = if ratio.is_nan() {
            0.0
        } else {
            ratio.clamp(0.0, 1.0)
        };
        self.inner
            .initial_read_progress
            .get_or_create(&TopicLabels {
                flow: flow.to_string(),
                topic: topic.to_string(),
            })
            .set(ratio);
    }

    /// The Prometheus text format (version 0.0.4) of every metric.
    pub fn encode_prometheus(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.inner.registry)?;
        Ok(out)
    }

    /// The OpenMetrics text format of every metric, `# EOF` included.
    pub fn encode_openmetrics(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.inner.registry)?;
        Ok(out)
    }

    fn latency_index(&self) -> std::sync::MutexGuard<'_, LatencyIndex> {
        // The index holds no invariant a panicking holder could break halfway.
        self.inner
            .latency_index
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn flow_labels(flow: &str) -> FlowLabels {
    FlowLabels {
        flow: flow.to_string(),
    }
}

#[cfg(test)]
mod tests;
