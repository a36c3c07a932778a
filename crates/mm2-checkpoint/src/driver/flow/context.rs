//! The fixed parts of a flow ([`FlowContext`]: its clusters, filters,
//! policy, topics and metrics) and what every stage shares: a failed step's
//! error with its cause, the readiness flags, the warnings about groups an
//! ACL refuses. The flow's changing state is its stages'
//! (docs/architecture.md, "driver and binary").

use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_lite::Error;
use kafka_protocol::error::ResponseError;

use crate::config::{FlowConfig, GroupOffsetsMode};
use crate::core::policy::ClusterSide;
use crate::core::reverse::ReverseRound;
use crate::core::{Flow, GroupFilter, ReplicationPolicy, TopicFilter};
use crate::metrics::{FlowIdentity, Metrics};

use super::super::connect::{self, Connection};
use super::super::kafka::{ClusterClient, error_label};
use super::cluster::FlowCluster;

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

/// Connections to a source group coordinator that a periodic round's
/// OffsetFetch requests share.
pub const OFFSET_FETCH_CONNECTIONS: usize = 4;

/// Connections to each target group coordinator that the commits of a group
/// sync are spread over (kafka-lite's `coordinator_connections`). A broker
/// serves one connection's requests one at a time, and the group coordinator
/// of Kafka 4 lingers a few milliseconds on each offset write, so on one
/// connection a sync of 1,000 groups took about 6 s however many commits were
/// in flight (docs/benchmarks.md, "Commit → checkpoint latency"). A group
/// keeps its connection, so its commits stay in order.
pub const GROUP_SYNC_CONNECTIONS: usize = 16;

/// The fixed parts of one flow.
pub struct FlowContext<C = ClusterClient> {
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
    pub source: C,
    /// The target cluster.
    pub target: C,
    /// The cluster holding the offset-syncs topic.
    pub syncs_cluster: C,
    /// The offset-syncs topic.
    pub syncs_topic: String,
    /// The checkpoints topic (on the target).
    pub checkpoints_topic: String,
    /// The sync-history topic (on the target), with precise translation.
    pub sync_history_topic: Option<String>,
    /// Metrics.
    pub metrics: Metrics,
    /// The commit follower's own connections to the source (so its
    /// long-polling fetches never queue the flow's other requests); `None`
    /// when the flow polls or runs on test clusters.
    pub commits_client: Option<ClusterClient>,
    /// (group, operation) pairs already warned about as refused by an ACL.
    denied: std::sync::Mutex<BTreeSet<(String, &'static str)>>,
    _connections: Vec<Connection>,
}

impl FlowContext<ClusterClient> {
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
        let mut target_conn = connect::connection(
            &cfg.target,
            &client_id,
            cfg.admin_timeout.min(Duration::from_secs(30)),
        )
        .map_err(SetupError::Connect)?;
        // The target groups' commits run side by side (group sync).
        target_conn.config.coordinator_connections = GROUP_SYNC_CONNECTIONS;
        // A periodic round's OffsetFetch requests go round this many
        // connections to the source coordinator (kafka-lite's lanes): a broker
        // answers one request of a connection at a time (docs/benchmarks.md,
        // "Measurements behind the design").
        let mut source_config = source_conn.config.clone();
        source_config.coordinator_connections = OFFSET_FETCH_CONNECTIONS;
        let source = ClusterClient::new(
            &cfg.source.alias,
            source_conn.bootstrap.clone(),
            source_config,
        )
        .map_err(|e| SetupError::Client(cfg.source.alias.clone(), e))?;
        let target = ClusterClient::new(
            &cfg.target.alias,
            target_conn.bootstrap.clone(),
            target_conn.config.clone(),
        )
        .map_err(|e| SetupError::Client(cfg.target.alias.clone(), e))?;
        let commits_client = match cfg.group_offsets_mode {
            GroupOffsetsMode::Poll => None,
            GroupOffsetsMode::Auto | GroupOffsetsMode::Follow => Some(
                ClusterClient::new(
                    &cfg.source.alias,
                    source_conn.bootstrap.clone(),
                    source_conn.config.clone(),
                )
                .map_err(|e| SetupError::Client(cfg.source.alias.clone(), e))?,
            ),
        };
        for client in [Some(&source), Some(&target), commits_client.as_ref()]
            .into_iter()
            .flatten()
        {
            let c = client.clone();
            metrics.count_requests(client.alias(), Box::new(move || c.requests_by_api()));
        }
        let mut ctx = FlowContext::with_clusters(
            cfg,
            metrics,
            source,
            target,
            vec![source_conn, target_conn],
        )?;
        ctx.commits_client = commits_client;
        Ok(ctx)
    }
}

impl<C: FlowCluster> FlowContext<C> {
    /// A flow on `source` and `target` (kept alive: `connections`); builds the
    /// filters and the replication policy.
    pub fn with_clusters(
        cfg: FlowConfig,
        metrics: Metrics,
        source: C,
        target: C,
        connections: Vec<Connection>,
    ) -> Result<Self, SetupError> {
        let name = cfg.name();
        let policy = cfg.replication_policy.clone();
        let opt = |s: &str| (!s.trim().is_empty()).then(|| s.to_owned());
        let f = &cfg.filters;
        let topic_filter =
            TopicFilter::new(opt(&f.topics).as_deref(), opt(&f.topics_exclude).as_deref())
                .map_err(|e| SetupError::Invalid(format!("flow {name}: topics filter: {e}")))?;
        let group_filter =
            GroupFilter::new(opt(&f.groups).as_deref(), opt(&f.groups_exclude).as_deref())
                .map_err(|e| SetupError::Invalid(format!("flow {name}: groups filter: {e}")))?;
        let syncs_topic = cfg.offset_syncs_topic();
        metrics.register_flow(&FlowIdentity {
            name: &name,
            source: &cfg.source.alias,
            target: &cfg.target.alias,
            connector_source: &cfg.source_alias,
            connector_target: &cfg.target_alias,
            offset_syncs_topic: &syncs_topic,
        });
        let syncs_cluster = match cfg.offset_syncs_topic_location.cluster() {
            ClusterSide::Source => source.clone(),
            ClusterSide::Target => target.clone(),
        };
        Ok(FlowContext {
            flow: cfg.flow(),
            syncs_topic,
            checkpoints_topic: cfg.checkpoints_topic(),
            sync_history_topic: cfg.sync_history_topic(),
            name,
            cfg,
            policy,
            topic_filter,
            group_filter,
            source,
            target,
            syncs_cluster,
            metrics,
            commits_client: None,
            denied: std::sync::Mutex::new(BTreeSet::new()),
            _connections: connections,
        })
    }

    /// The context of the flow's reverse rounds (docs/operations.md,
    /// "Failing back"): the same clusters the other way round, so that the
    /// stateless steps and the checkpoints stage run on it unchanged: groups
    /// are discovered and read on the target (its `source`), checkpoints are
    /// written to and groups synced into the source (its `target`), in
    /// MirrorMaker 2's checkpoints topic of the flow T->S
    /// ([`ReverseRound::checkpoints_topic`]). Its topic filter accepts every
    /// topic: the reverse round applies the flow's filter to the topics'
    /// names on the source itself. It is named `S->T reverse` in logs and
    /// metrics, and has no commit follower and no sync history.
    pub fn reversed(&self) -> FlowContext<C> {
        let round = ReverseRound {
            flow: &self.flow,
            policy: &self.policy,
            topic_filter: &self.topic_filter,
        };
        FlowContext {
            name: format!("{} reverse", self.name),
            cfg: self.cfg.clone(),
            flow: round.back_flow(),
            policy: self.policy.clone(),
            topic_filter: TopicFilter::accepting_all(),
            group_filter: self.group_filter.clone(),
            source: self.target.clone(),
            target: self.source.clone(),
            syncs_cluster: self.syncs_cluster.clone(),
            syncs_topic: self.syncs_topic.clone(),
            checkpoints_topic: round.checkpoints_topic(),
            sync_history_topic: None,
            metrics: self.metrics.clone(),
            commits_client: None,
            denied: std::sync::Mutex::new(BTreeSet::new()),
            _connections: Vec::new(),
        }
    }

    /// Wraps a cluster result: counts and returns the error with its context.
    pub fn step<T>(
        &self,
        cluster: &C,
        op: &'static str,
        r: Result<T, Error>,
    ) -> Result<T, StepError> {
        r.map_err(|error| {
            self.metrics
                .request_error(cluster.alias(), op, &error_label(&error));
            StepError {
                cluster: cluster.alias().to_owned(),
                op,
                error: self.cause(cluster.alias(), error),
            }
        })
    }

    /// A group operation on `cluster` was refused by an ACL: counts it in
    /// `request_errors_total` and warns once per group and operation, naming
    /// the ACL the cluster's principal lacks.
    /// Returns whether it warned (the first time for this group and operation).
    pub(super) fn note_group_denied(
        &self,
        cluster: &C,
        op: &'static str,
        group: &str,
        e: &Error,
    ) -> bool {
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
            return false;
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
        true
    }

    /// The cause of a failed step on cluster `alias`. A broker certificate
    /// that no trusted CA signed is found only by a TLS handshake, so the
    /// configuration could not report it; the cause then names the key that
    /// sets the cluster's trusted CAs (the configuration says which).
    fn cause(&self, alias: &str, error: Error) -> StepCause {
        let tls = [&self.cfg.source, &self.cfg.target]
            .into_iter()
            .find(|c| c.alias == alias)
            .and_then(|c| c.tls.as_ref());
        match tls {
            Some(tls) if error.is_untrusted_certificate() => StepCause::Driver {
                what: tls.untrusted_certificate_hint(alias),
                cause: Some(Box::new(error)),
            },
            _ => StepCause::Client(error),
        }
    }

    pub(super) fn ready_condition(&self) -> String {
        format!("flow {} initial read", self.name)
    }

    /// Marks the flow's initial read pending (not ready until the startup
    /// finishes it) or not pending (done, or not this instance's to do: a
    /// standby under membership).
    pub fn set_initial_read_pending(&self, pending: bool) {
        let readiness = self.metrics.readiness();
        if pending {
            readiness.set_not_ready(self.ready_condition(), "starting".to_string());
        } else {
            readiness.set_ready(&self.ready_condition());
        }
    }

    fn cluster_condition(&self) -> String {
        format!("flow {} clusters", self.name)
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

/// Whether `e` is an ACL refusal on a group.
pub(super) fn is_group_denied(e: &Error) -> bool {
    e.kafka_error() == Some(ResponseError::GroupAuthorizationFailed)
}
