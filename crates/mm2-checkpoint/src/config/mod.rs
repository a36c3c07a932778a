//! Reading MM2's own `mm2.properties` into typed, validated per-flow settings.
//!
//! The daemon is a drop-in for MM2's checkpointing, so it reads the file MM2
//! reads and derives, for every enabled flow `S->T`, the settings that MM2's
//! `MirrorCheckpointConnector` for that flow would see:
//!
//! * [`properties`] parses the Java-properties text;
//! * [`providers`] resolves `${env:NAME}` and `${file:path:key}` references;
//! * this module decides which flows are enabled and layers keys the way
//!   `MirrorMakerConfig` does (top-level `k` < `S->T.k` for connector keys);
//! * [`security`] assembles one connection per cluster per flow from the
//!   `bootstrap.servers`, `security.protocol`, `ssl.*` and `sasl.*` keys;
//! * [`render_effective_settings`] prints the result for `mm2-checkpoint validate`.
//!
//! Everything here is checked up front and reported as a [`ConfigError`] naming
//! the key (and line) to fix. Secrets stay inside [`Secret`]. The user-facing
//! description of every key is `docs/configuration.md`.

pub mod error;
mod jaas;
pub mod known_keys;
mod lookup;
pub mod metrics;
pub mod properties;
pub mod providers;
mod render;
pub mod secret;
pub mod security;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

pub use error::ConfigError;
pub use properties::Properties;
pub use providers::{Environment, ProcessEnvironment};
pub use render::render_effective_settings;
pub use secret::Secret;
pub use security::{
    BrokerAddress, ClientIdentity, ClusterConnection, PemSource, SaslCredentials, SaslMechanism,
    SecurityProtocol, TlsMaterial, TlsSettings, TrustRoots,
};

use crate::core::policy::ClusterSide;
use crate::core::{Flow, OffsetSyncsLocation, ReplicationPolicy};
use lookup::{Lookup, java_parse_boolean};
use providers::Providers;
use security::is_connection_key;

const MIRROR_PACKAGE: &str = "org.apache.kafka.connect.mirror.";

/// A value read from the file: the (provider-resolved) text and where it came from.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Setting {
    /// The value, with `${...}` references resolved.
    pub(crate) value: String,
    /// The key as written in the file, e.g. `A->B.topics`.
    pub(crate) origin: String,
    /// The line that key is on.
    pub(crate) line: Option<usize>,
}

impl Setting {
    pub(crate) fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::for_key(self.origin.clone(), message).at_line(self.line)
    }

    fn describe_origin(&self) -> String {
        match self.line {
            Some(line) => format!("{} (line {line})", self.origin),
            None => self.origin.clone(),
        }
    }
}

/// The key choosing how a flow learns the source groups' commits (ours: MM2
/// ignores it).
pub const GROUP_OFFSETS_MODE_KEY: &str = "mm2-checkpoint.group.offsets.mode";

/// The key of the commit follower's coalescing window (ours).
pub const FOLLOW_COALESCE_KEY: &str = "mm2-checkpoint.group.offsets.coalesce.ms";

/// How a flow learns the source groups' committed offsets
/// (docs/commit-follower.md section 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GroupOffsetsMode {
    /// Follow `__consumer_offsets` where the principal may read it, else poll.
    #[default]
    Auto,
    /// Follow `__consumer_offsets`; a flow that cannot read it fails.
    Follow,
    /// Ask for every group's offsets once per emission interval, as MM2 does.
    Poll,
}

impl GroupOffsetsMode {
    /// The setting's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupOffsetsMode::Auto => "auto",
            GroupOffsetsMode::Follow => "follow",
            GroupOffsetsMode::Poll => "poll",
        }
    }
}

/// The raw topic and group filter lists of one flow (compiled by the core).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterSettings {
    /// `topics`: include list.
    pub topics: String,
    /// `topics.exclude`.
    pub topics_exclude: String,
    /// `groups`: include list.
    pub groups: String,
    /// `groups.exclude`.
    pub groups_exclude: String,
}

/// Everything the checkpoint engine needs for one enabled flow `S->T`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowConfig {
    /// Connection to the source cluster S.
    pub source: ClusterConnection,
    /// Connection to the target cluster T.
    pub target: ClusterConnection,
    /// `source.cluster.alias` (default: S): the alias MM2's connector for this
    /// flow uses in topic names (the checkpoints topic, remote topics, the
    /// offset-syncs topic with location=target).
    pub source_alias: String,
    /// `target.cluster.alias` (default: T): the alias used in the offset-syncs
    /// topic's name with location=source, and to recognise topics that came
    /// back from the target.
    pub target_alias: String,
    /// `emit.checkpoints.interval.seconds` (default 60).
    pub emit_checkpoints_interval: Duration,
    /// `sync.group.offsets.enabled` (default false).
    pub sync_group_offsets_enabled: bool,
    /// `sync.group.offsets.interval.seconds` (default 60).
    pub sync_group_offsets_interval: Duration,
    /// `refresh.groups.enabled` (default true).
    pub refresh_groups_enabled: bool,
    /// `refresh.groups.interval.seconds` (default 600).
    pub refresh_groups_interval: Duration,
    /// Topic and group filters.
    pub filters: FilterSettings,
    /// The replication policy (`replication.policy.class` and its separators),
    /// which names every topic of the flow.
    pub replication_policy: ReplicationPolicy,
    /// `offset-syncs.topic.location` (default source).
    pub offset_syncs_topic_location: OffsetSyncsLocation,
    /// `checkpoints.topic.replication.factor` (default 3; -1 = broker default).
    pub checkpoints_topic_replication_factor: i16,
    /// `consumer.poll.timeout.ms` (default 1000).
    pub consumer_poll_timeout: Duration,
    /// `admin.timeout.ms` (default 60000).
    pub admin_timeout: Duration,
    /// `offset.lag.max` (default 100). Informational: the source side uses it.
    pub offset_lag_max: i64,
    /// `mm2-checkpoint.group.offsets.mode` (ours; default `auto`): how the source
    /// groups' commits are learnt (docs/commit-follower.md section 4).
    pub group_offsets_mode: GroupOffsetsMode,
    /// `mm2-checkpoint.group.offsets.coalesce.ms` (ours; default 200): how long
    /// the commit follower gathers commits before emitting their checkpoints.
    pub follow_coalesce: Duration,
    /// Where each setting came from: logical key → `file key (line N)` or `default`.
    /// Connection keys are listed as `source.<key>` and `target.<key>`.
    pub origins: BTreeMap<String, String>,
}

impl FlowConfig {
    /// The flow's name, `S->T`.
    pub fn name(&self) -> String {
        format!("{}->{}", self.source.alias, self.target.alias)
    }

    /// The flow as its topic names see it: the (possibly overridden) aliases
    /// `source.cluster.alias -> target.cluster.alias`.
    pub fn flow(&self) -> Flow {
        Flow::new(self.source_alias.clone(), self.target_alias.clone())
    }

    /// The offset-syncs topic, as the replication policy names it for the
    /// configured location (see `docs/behaviour.md` B.2).
    pub fn offset_syncs_topic(&self) -> String {
        self.offset_syncs_topic_location
            .topic(&self.replication_policy, &self.flow())
    }

    /// The cluster holding the offset-syncs topic.
    pub fn offset_syncs_cluster(&self) -> &ClusterConnection {
        match self.offset_syncs_topic_location.cluster() {
            ClusterSide::Source => &self.source,
            ClusterSide::Target => &self.target,
        }
    }

    /// The checkpoints topic on the target, as the replication policy names it.
    pub fn checkpoints_topic(&self) -> String {
        self.replication_policy
            .checkpoints_topic(&self.source_alias)
    }
}

/// The whole file: clusters, enabled flows, and warnings worth logging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorConfig {
    /// The aliases from `clusters`, in file order, duplicates removed.
    pub clusters: Vec<String>,
    /// Every enabled flow, in `clusters` order (source, then target).
    pub flows: Vec<FlowConfig>,
    /// Accepted but dubious settings (disabled host name verification, ignored
    /// keys, deprecated names, keys nothing reads). The driver logs them at
    /// startup.
    pub warnings: Vec<String>,
    /// The keys of the file that neither MirrorMaker 2 nor mm2-checkpoint reads
    /// (each also has a warning); `validate --strict` fails on them.
    pub unknown_keys: Vec<known_keys::UnknownKey>,
    /// The keys MirrorMaker 2 reads but that have no effect on checkpointing
    /// (`producer.acks`, `tasks.max`, the settings of disabled flows, ...), as
    /// `key (line N)`; `validate` lists them.
    pub no_effect_keys: Vec<String>,
    /// The process-wide metrics settings (`mm2-checkpoint.metrics.*`).
    pub metrics: metrics::MetricsSettings,
}

impl MirrorConfig {
    /// Reads and validates an `mm2.properties` file (UTF-8). Reads referenced
    /// provider and PEM files; does no network I/O.
    pub fn load(path: &Path, env: &dyn Environment) -> Result<Self, ConfigError> {
        let bytes = env
            .read_file(path)
            .map_err(|e| ConfigError::new(format!("cannot read `{}`: {e}", path.display())))?;
        Self::from_properties(&Properties::parse_bytes(&bytes)?, env)
    }

    /// Validates parsed properties and derives the enabled flows.
    pub fn from_properties(props: &Properties, env: &dyn Environment) -> Result<Self, ConfigError> {
        let lookup = Lookup::new(props, Providers::declare(props, env)?);
        let clusters = lookup.clusters()?;
        let mut warnings = Vec::new();
        let metrics = metrics::MetricsSettings::read(&lookup)?;
        let unknown_keys = known_keys::unknown_keys(props.keys(), &clusters);
        for unknown in &unknown_keys {
            let at = props
                .line(&unknown.key)
                .map_or_else(String::new, |line| format!(" (line {line})"));
            let mut text = format!(
                "`{}`{at} is read by neither MirrorMaker 2 nor mm2-checkpoint and has no effect",
                unknown.key
            );
            match (&unknown.suggestion, unknown.note) {
                (Some(suggestion), Some(note)) => {
                    text.push_str(&format!("; {note}: use `{suggestion}`"));
                }
                (Some(suggestion), None) => {
                    text.push_str(&format!("; did you mean `{suggestion}`?"));
                }
                (None, Some(note)) => text.push_str(&format!("; {note}")),
                (None, None) => {}
            }
            warnings.push(text);
        }
        for key in props.keys() {
            let client_key = ["consumer.", "producer.", "admin."]
                .iter()
                .find_map(|p| key.strip_prefix(p));
            if client_key.is_some_and(is_connection_key) {
                warnings.push(format!(
                    "`{key}` is ignored (MM2 drops top-level client keys too); put it on a \
                     cluster, e.g. `<alias>.{key}`"
                ));
            }
        }
        let global_heartbeats = lookup
            .raw("emit.heartbeats.enabled")
            .is_none_or(java_parse_boolean);
        let mut flows = Vec::new();
        for source in &clusters {
            for target in &clusters {
                if source == target {
                    continue;
                }
                let flow = format!("{source}->{target}");
                if !lookup.flow_enabled(&flow, global_heartbeats, &mut warnings)? {
                    continue;
                }
                let prefix = format!("{flow}.");
                for key in props.keys() {
                    if key.strip_prefix(&prefix).is_some_and(is_connection_key) {
                        warnings.push(format!(
                            "`{key}` is ignored (as in MM2, a flow-level connection key reaches no \
                             client); use `{source}.<key>`/`{target}.<key>` or \
                             `{flow}.source.admin.<key>`-style keys"
                        ));
                    }
                }
                flows.push(lookup.flow(&flow, source, target, env, &mut warnings)?);
            }
        }
        if flows.is_empty() {
            return Err(ConfigError::for_key(
                "clusters",
                format!(
                    "no flow is enabled; enable one with e.g. `{}.enabled = true`",
                    match clusters.as_slice() {
                        [a, b, ..] => format!("{a}->{b}"),
                        _ => "<source>-><target>".to_string(),
                    }
                ),
            )
            .at_line(props.line("clusters")));
        }
        // What MM2 reads but checkpointing does not use: every key that is
        // neither unknown nor read above (the providers' own keys are read
        // when they are declared).
        let no_effect_keys = props
            .keys()
            .filter(|k| {
                *k != "clusters"
                    && !k.starts_with("config.providers")
                    && !lookup.was_read(k)
                    && !unknown_keys.iter().any(|u| u.key == *k)
            })
            .map(|k| match props.line(k) {
                Some(line) => format!("{k} (line {line})"),
                None => k.to_string(),
            })
            .collect();
        Ok(Self {
            clusters,
            flows,
            warnings,
            unknown_keys,
            no_effect_keys,
            metrics,
        })
    }
}

#[cfg(test)]
mod tests;
