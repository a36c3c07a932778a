//! [`Metrics`]: the registry of every series, its families and the typed methods
//! the driver records through; the commit follower's, membership and latency
//! families are in their own files, and [`Metrics`] delegates to them.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
#[cfg(test)]
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::follower::FollowerMetrics;
use super::labels::{FlowLabels, flow_labels};
#[cfg(test)]
use super::latency::LatencyIndex;
use super::latency::LatencyMetrics;
use super::membership::{MemberRole, MembershipMetrics};
use super::readiness::Readiness;
use super::requests::{RequestCounters, RequestSource};
use super::status::StatusBoard;
use crate::config::metrics::MetricsSettings;

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
    /// Every outcome, for the zero-valued series of a new flow.
    pub const ALL: [GroupSyncOutcome; 5] = [
        GroupSyncOutcome::Committed,
        GroupSyncOutcome::SkippedActive,
        GroupSyncOutcome::SkippedTargetAhead,
        GroupSyncOutcome::SkippedUnknownState,
        GroupSyncOutcome::Failed,
    ];

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
    /// Our sync-history topic on the target (precise translation; not in
    /// [`TopicKind::ALL`]: its skipped records are logged, not counted).
    SyncHistory,
}

impl TopicKind {
    /// Every internal topic, for the zero-valued series of a new flow.
    pub const ALL: [TopicKind; 3] = [
        TopicKind::OffsetSyncs,
        TopicKind::Checkpoints,
        TopicKind::ConsumerOffsets,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            TopicKind::OffsetSyncs => "offset_syncs",
            TopicKind::Checkpoints => "checkpoints",
            TopicKind::ConsumerOffsets => "consumer_offsets",
            TopicKind::SyncHistory => "sync_history",
        }
    }

    /// The topic's name in log lines: `offset-syncs` or `checkpoints`.
    pub fn log_name(self) -> &'static str {
        match self {
            TopicKind::OffsetSyncs => "offset-syncs",
            TopicKind::Checkpoints => "checkpoints",
            TopicKind::ConsumerOffsets => "__consumer_offsets",
            TopicKind::SyncHistory => "sync-history",
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
    /// Every reason, for the zero-valued series of a new flow.
    pub const ALL: [RecordSkipReason; 3] = [
        RecordSkipReason::Corrupt,
        RecordSkipReason::Tombstone,
        RecordSkipReason::UnknownVersion,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordSkipReason::Corrupt => "corrupt",
            RecordSkipReason::Tombstone => "tombstone",
            RecordSkipReason::UnknownVersion => "unknown_version",
        }
    }
}

/// The outcomes of `content_searches_total`: `exact`, or why the sync answer
/// was kept (docs/translation.md, "Content search").
pub const CONTENT_SEARCH_OUTCOMES: [&str; 8] = [
    "exact",
    "too_large",
    "transaction",
    "gap",
    "mismatch",
    "bracket_exceeded",
    "ambiguous",
    "unreadable",
];

/// The names [`Metrics::register_flow`] labels a new flow's series with.
#[derive(Clone, Copy, Debug)]
pub struct FlowIdentity<'a> {
    /// The flow's name, `S->T`.
    pub name: &'a str,
    /// The source cluster's alias in `clusters`.
    pub source: &'a str,
    /// The target cluster's alias in `clusters`.
    pub target: &'a str,
    /// `source.cluster.alias` (MM2's `source` tag).
    pub connector_source: &'a str,
    /// `target.cluster.alias` (MM2's `target` tag).
    pub connector_target: &'a str,
    /// The offset-syncs topic (label `topic` of `initial_read_progress_ratio`).
    pub offset_syncs_topic: &'a str,
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

struct Inner {
    registry: Registry,
    checkpoints_emitted: Family<FlowLabels, Counter>,
    latency: LatencyMetrics,
    last_round: Family<FlowLabels, RatioGauge>,
    flow_owned: Family<FlowLabels, Gauge>,
    round_duration: Family<FlowLabels, Histogram, fn() -> Histogram>,
    offset_syncs_read: Family<FlowLabels, Counter>,
    untranslatable: Family<UntranslatableLabels, Gauge>,
    group_syncs: Family<OutcomeLabels, Counter>,
    request_errors: Family<RequestErrorLabels, Counter>,
    records_skipped: Family<SkippedLabels, Counter>,
    initial_read_progress: Family<TopicLabels, RatioGauge>,
    precise_fallback: Family<FlowLabels, Gauge>,
    content_searches: Family<OutcomeLabels, Counter>,
    follower: FollowerMetrics,
    membership: MembershipMetrics,
    requests: RequestCounters,
    readiness: Readiness,
    status: StatusBoard,
    /// Length of the last exposition, to size the next one's buffer.
    last_len: std::sync::atomic::AtomicUsize,
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
    /// A fresh registry with the default settings. `version` and
    /// `tls_provider` go into `mm2_checkpoint_build_info` (value 1). Readiness
    /// starts as not ready.
    pub fn new(version: &'static str, tls_provider: &'static str) -> Self {
        Self::with_settings(version, tls_provider, MetricsSettings::default())
    }

    /// A fresh registry shaped by `settings` (latency granularity, MM2 names).
    pub fn with_settings(
        version: &'static str,
        tls_provider: &'static str,
        settings: MetricsSettings,
    ) -> Self {
        let mut root = Registry::default();
        root.register_collector(Box::new(super::process::ProcessCollector));
        let latency = LatencyMetrics::new(settings);
        latency.register_mm2(&mut root);
        let registry = root.sub_registry_with_prefix(PREFIX);
        let checkpoints_emitted = Family::<FlowLabels, Counter>::default();
        registry.register(
            "checkpoints_emitted",
            "Checkpoint records written to the target's checkpoints topic",
            checkpoints_emitted.clone(),
        );
        latency.register(registry);
        let last_round = Family::<FlowLabels, RatioGauge>::default();
        registry.register(
            "last_round_timestamp_seconds",
            "Unix time at which the flow's last emission round on this instance succeeded (0 before the first); only while this instance writes the flow",
            last_round.clone(),
        );
        let flow_owned = Family::<FlowLabels, Gauge>::default();
        registry.register(
            "flow_owned",
            "1 while this instance writes the flow (always without membership; as its owner with it), else 0; sum by flow over the instances is the number of writers",
            flow_owned.clone(),
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
        let precise_fallback = Family::<FlowLabels, Gauge>::default();
        registry.register(
            "precise_fallback_partitions",
            "Source partitions whose precise-translation history reached its budget: offsets older than its oldest kept sync are translated with MirrorMaker 2's precision (0 in mm2 mode)",
            precise_fallback.clone(),
        );
        let content_searches = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "content_searches",
            "Content searches inside the sync bracket (precise translation), by outcome: `exact`, or the reason the sync answer was kept",
            content_searches.clone(),
        );
        let follower = FollowerMetrics::register(registry);
        let membership = MembershipMetrics::register(registry);
        let requests = RequestCounters::default();
        registry.register_collector(Box::new(requests.clone()));
        let status = StatusBoard::register(registry);
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
                registry: root,
                checkpoints_emitted,
                latency,
                last_round,
                flow_owned,
                round_duration,
                offset_syncs_read,
                untranslatable,
                group_syncs,
                request_errors,
                records_skipped,
                initial_read_progress,
                precise_fallback,
                content_searches,
                follower,
                membership,
                requests,
                readiness: Readiness::with_gauge(ready),
                status,
                last_len: std::sync::atomic::AtomicUsize::new(0),
            }),
        }
    }

    /// Exports the requests a client of `cluster` sends, read from `source`
    /// at each scrape, in `requests_total{cluster,api}` (summed with the
    /// cluster's other clients).
    pub fn count_requests(&self, cluster: &str, source: RequestSource) {
        self.inner.requests.add(cluster, source);
    }

    /// The status document `/status` serves and its gauges.
    pub fn status_board(&self) -> StatusBoard {
        self.inner.status.clone()
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

    /// Creates the zero-valued series of a new flow, so that every family
    /// has its series from start-up: the counters at 0, the gauges at 0 and
    /// `request_errors_total{cluster}` (with empty `api` and `error`) for
    /// both clusters. `source` and `target` are the clusters' aliases in
    /// `clusters` (label `cluster`); `connector_source` and
    /// `connector_target` are `source.cluster.alias` and
    /// `target.cluster.alias`, MM2's `source` and `target` tags.
    pub fn register_flow(&self, flow: &FlowIdentity<'_>) {
        let i = &self.inner;
        let name = flow.name;
        let labels = flow_labels(name);
        let _ = i.checkpoints_emitted.get_or_create(&labels);
        let _ = i.round_duration.get_or_create(&labels);
        let _ = i.offset_syncs_read.get_or_create(&labels);
        // 0 until the flow runs here: without membership at once, with it
        // while this instance owns the flow (`flow_running`).
        i.flow_owned.get_or_create(&labels).set(0);
        for reason in UntranslatableReason::ALL {
            self.set_untranslatable_partitions(name, reason, 0);
        }
        for outcome in GroupSyncOutcome::ALL {
            let _ = i.group_syncs.get_or_create(&OutcomeLabels {
                flow: name.to_string(),
                outcome: outcome.as_str(),
            });
        }
        for cluster in [flow.source, flow.target] {
            let _ = i.request_errors.get_or_create(&RequestErrorLabels {
                cluster: cluster.to_string(),
                api: String::new(),
                error: String::new(),
            });
        }
        for topic_kind in TopicKind::ALL {
            for reason in RecordSkipReason::ALL {
                let _ = i.records_skipped.get_or_create(&SkippedLabels {
                    flow: name.to_string(),
                    topic_kind: topic_kind.as_str(),
                    reason: reason.as_str(),
                });
            }
        }
        self.set_initial_read_progress(name, flow.offset_syncs_topic, 0.0);
        self.set_precise_fallback_partitions(name, 0);
        for outcome in CONTENT_SEARCH_OUTCOMES {
            let _ = i.content_searches.get_or_create(&OutcomeLabels {
                flow: name.to_string(),
                outcome,
            });
        }
        self.register_follower_flow(name);
        self.set_latency_aliases(name, flow.connector_source, flow.connector_target);
    }

    /// This instance starts writing `flow` (the flow's loop starts: at
    /// once without membership, at each takeover with it):
    /// `flow_owned{flow}` becomes 1 and `last_round_timestamp_seconds{flow}`
    /// appears, at 0 until the first round succeeds. The series of the
    /// writer's work are only ever exported by the writer, so an instance
    /// that does not run a flow exports no timestamp for it
    /// (docs/operations.md, Metrics on owners and standbys).
    pub fn flow_running(&self, flow: &str) {
        let labels = flow_labels(flow);
        self.inner.flow_owned.get_or_create(&labels).set(1);
        let _ = self.inner.last_round.get_or_create(&labels);
    }

    /// This instance stopped writing `flow` (its ownership ended, or the
    /// process stops): `flow_owned{flow}` becomes 0, and the flow's
    /// `last_round_timestamp_seconds` and checkpoint-latency series go
    /// away and its `untranslatable_partitions` and
    /// `precise_fallback_partitions` return to 0, so a former owner reports
    /// neither a stale timestamp nor figures of work that is now another
    /// instance's.
    pub fn flow_stopped(&self, flow: &str) {
        let labels = flow_labels(flow);
        self.inner.flow_owned.get_or_create(&labels).set(0);
        self.inner.last_round.remove(&labels);
        self.inner.latency.remove_latency_flow(flow);
        // What the last round found is the writer's to report now.
        for reason in UntranslatableReason::ALL {
            self.set_untranslatable_partitions(flow, reason, 0);
        }
        self.set_precise_fallback_partitions(flow, 0);
    }

    /// Sets `last_round_timestamp_seconds{flow}` to now: an emission round
    /// of `flow` succeeded.
    pub fn round_succeeded(&self, flow: &str) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.inner
            .last_round
            .get_or_create(&flow_labels(flow))
            .set(now);
    }

    /// When `flow`'s last emission round succeeded, in milliseconds since the
    /// Unix epoch; `None` before the first (what
    /// `last_round_timestamp_seconds{flow}` shows).
    pub fn last_round_ms(&self, flow: &str) -> Option<i64> {
        let seconds = self.inner.last_round.get(&flow_labels(flow))?.get();
        (seconds > 0.0).then_some((seconds * 1000.0) as i64)
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
        self.groups_synced(flow, outcome, 1);
    }

    /// Adds `groups` to `group_syncs_total{flow,outcome}`: a sync counts each
    /// outcome once at its end, not once per group (at 1,000 groups a
    /// label lookup per group was a visible part of a sync's CPU).
    pub fn groups_synced(&self, flow: &str, outcome: GroupSyncOutcome, groups: u64) {
        if groups == 0 {
            return;
        }
        self.inner
            .group_syncs
            .get_or_create(&OutcomeLabels {
                flow: flow.to_string(),
                outcome: outcome.as_str(),
            })
            .inc_by(groups);
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

    /// Sets `precise_fallback_partitions{flow}` to `count`: the source partitions
    /// whose precise-translation history reached its budget.
    pub fn set_precise_fallback_partitions(&self, flow: &str, count: usize) {
        self.inner
            .precise_fallback
            .get_or_create(&flow_labels(flow))
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Counts one content search of `flow` ending with `outcome` (`exact` or a
    /// fallback reason, one of [`CONTENT_SEARCH_OUTCOMES`]).
    pub fn content_search(&self, flow: &str, outcome: &'static str) {
        self.inner
            .content_searches
            .get_or_create(&OutcomeLabels {
                flow: flow.to_string(),
                outcome,
            })
            .inc();
    }

    /// The Prometheus text format (version 0.0.4) of every metric.
    pub fn encode_prometheus(&self) -> Result<String, std::fmt::Error> {
        let mut out = self.exposition_buffer();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.inner.registry)?;
        self.note_exposition_len(&out);
        Ok(out)
    }

    /// The OpenMetrics text format of every metric, `# EOF` included.
    pub fn encode_openmetrics(&self) -> Result<String, std::fmt::Error> {
        let mut out = self.exposition_buffer();
        prometheus_client::encoding::text::encode(&mut out, &self.inner.registry)?;
        self.note_exposition_len(&out);
        Ok(out)
    }

    /// Sends the exposition (OpenMetrics if `openmetrics`, else Prometheus
    /// text 0.0.4), byte for byte the text [`Self::encode_prometheus`] or
    /// [`Self::encode_openmetrics`] would return, to `tx` in pieces of about
    /// 64 KB (see the `stream` module). Blocks the thread until the last piece is
    /// taken: run it on a blocking thread. An error means the text was not
    /// sent whole (`tx`'s receiver went away).
    pub fn stream_exposition(
        &self,
        openmetrics: bool,
        tx: tokio::sync::mpsc::Sender<String>,
    ) -> Result<(), std::fmt::Error> {
        let registry = &self.inner.registry;
        super::stream::stream(tx, |writer| {
            if openmetrics {
                prometheus_client::encoding::text::encode(writer, registry)
            } else {
                prometheus_client::encoding::prometheus_text::encode(writer, registry)
            }
        })
    }

    /// A buffer a little larger than the last exposition. With one latency
    /// series per group-partition the text reaches ~150 MB at 1,000,000
    /// group-partitions; grown by doubling from empty it would end in a
    /// 256 MiB buffer after holding 128 + 256 MiB at once while copying.
    fn exposition_buffer(&self) -> String {
        let last = self
            .inner
            .last_len
            .load(std::sync::atomic::Ordering::Relaxed);
        String::with_capacity(last + last / 16)
    }

    fn note_exposition_len(&self, out: &str) {
        self.inner
            .last_len
            .store(out.len(), std::sync::atomic::Ordering::Relaxed);
    }
}

/// The families kept in their own files (follower.rs, membership.rs, latency.rs).
impl Metrics {
    /// Creates `flow`'s follower series at 0 (both modes 0 until the flow
    /// decides).
    pub(super) fn register_follower_flow(&self, flow: &str) {
        self.inner.follower.register_follower_flow(flow)
    }

    /// Sets `group_offsets_mode{flow,mode}`: 1 for `following` (follow) or not
    /// (poll), 0 for the other mode.
    pub fn set_group_offsets_mode(&self, flow: &str, following: bool) {
        self.inner.follower.set_group_offsets_mode(flow, following)
    }

    /// Adds `count` to `followed_commits_total{flow}`.
    pub fn followed_commits(&self, flow: &str, count: u64) {
        self.inner.follower.followed_commits(flow, count)
    }

    /// Adds `count` to `follower_corrections_total{flow}`.
    pub fn follower_corrections(&self, flow: &str, count: u64) {
        self.inner.follower.follower_corrections(flow, count)
    }

    /// Sets `membership_role{flow,role}` to 1 for `role`, 0 for the others.
    pub fn set_member_role(&self, flow: &str, role: MemberRole) {
        self.inner.membership.set_member_role(flow, role)
    }

    /// A (re)join of `flow`'s group completed at `generation`.
    pub fn member_joined(&self, flow: &str, generation: i32) {
        self.inner.membership.member_joined(flow, generation)
    }

    /// This instance took `flow` over.
    pub fn member_took_over(&self, flow: &str) {
        self.inner.membership.member_took_over(flow)
    }

    /// A write of `flow` was refused: this instance no longer owns it.
    pub fn fenced_write(&self, flow: &str) {
        self.inner.membership.fenced_write(flow)
    }

    /// Sets the checkpoint latency of `group`'s checkpoint of `topic`
    /// `partition` in `flow`: the time from the checkpoint record's timestamp
    /// to the broker's acknowledgement (MM2's `checkpoint-latency-ms`). At a
    /// coarser granularity the series of the group or flow takes the value.
    pub fn set_checkpoint_latency(
        &self,
        flow: &str,
        group: &str,
        topic: &str,
        partition: i32,
        latency: Duration,
    ) {
        self.inner
            .latency
            .set_checkpoint_latency(flow, group, topic, partition, latency)
    }

    /// [`set_checkpoint_latency`](Self::set_checkpoint_latency) of every
    /// (group, topic, partition) of `checkpoints`, all acknowledged with the
    /// same `latency`: the series' index is locked once for them all.
    pub fn set_checkpoint_latencies<'a>(
        &self,
        flow: &str,
        checkpoints: impl IntoIterator<Item = (&'a str, &'a str, i32)>,
        latency: Duration,
    ) {
        self.inner
            .latency
            .set_checkpoint_latencies(flow, checkpoints, latency)
    }

    /// [`set_checkpoint_latency`](Self::set_checkpoint_latency) as if acknowledged at `now`.
    #[cfg(test)]
    pub(super) fn set_checkpoint_latency_at(
        &self,
        now: Instant,
        flow: &str,
        group: &str,
        topic: &str,
        partition: i32,
        latency: Duration,
    ) {
        self.inner
            .latency
            .set_checkpoint_latency_at(now, flow, group, topic, partition, latency)
    }

    /// Removes every checkpoint-latency series of `group` in `flow` (the
    /// group was deleted or is no longer checkpointed).
    pub fn remove_checkpoint_latency_group(&self, flow: &str, group: &str) {
        self.inner
            .latency
            .remove_checkpoint_latency_group(flow, group)
    }

    /// Removes the checkpoint-latency series of every group of `flow` for
    /// which `keep` returns false. Call it after each round with the set of
    /// groups still checkpointed.
    pub fn retain_checkpoint_latency_groups(&self, flow: &str, keep: impl Fn(&str) -> bool) {
        self.inner
            .latency
            .retain_checkpoint_latency_groups(flow, keep)
    }

    /// Records the connector aliases MM2 would tag `flow`'s series with.
    pub(super) fn set_latency_aliases(&self, flow: &str, source: &str, target: &str) {
        self.inner.latency.set_latency_aliases(flow, source, target)
    }

    /// The latency series' index, locked.
    #[cfg(test)]
    pub(super) fn latency_index(&self) -> std::sync::MutexGuard<'_, LatencyIndex> {
        self.inner.latency.latency_index()
    }
}
