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
//! * [`keys`] is the table of the checkpoint keys (names, defaults, accepted
//!   values, how `validate` shows them) that the readers and the report use;
//! * [`render_effective_settings`] prints the result for `mm2-checkpoint validate`.
//!
//! Everything here is checked up front and reported as a [`ConfigError`] naming
//! the key (and line) to fix; [`MirrorConfig::validate_text`] reports every
//! independent error of a file in one go ([`check`]). Secrets stay inside
//! [`Secret`]. The user-facing description of every key is
//! `docs/configuration.md`.

pub mod check;
pub mod connector;
pub mod error;
mod jaas;
pub mod keys;
pub mod known_keys;
mod lookup;
pub mod metrics;
pub mod properties;
pub mod providers;
mod render;
pub mod security;
mod spelling;

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

pub use check::{ConfigWarning, FlowReport, NotChecked, Secrets, Validation};
pub use connector::{CONNECTOR_FLOW, ConfigFormat};
pub use error::ConfigError;
/// Secrets are kafka-lite's [`kafka_lite::Secret`]: `Debug` and `Display`
/// print `[redacted]`.
pub use kafka_lite::Secret;
pub use properties::Properties;
pub use providers::{Environment, ProcessEnvironment};
pub use render::{render_effective_settings, render_validation_json, render_validation_text};
pub use security::{
    BrokerAddress, ClientIdentity, ClusterConnection, EXPIRY_WARNING, KeyOrigin, PemSource,
    SaslCredentials, SaslMechanism, SecurityProtocol, TlsMaterial, TlsSettings, TrustRoots,
};
pub use spelling::UnknownSpelling;

use crate::core::policy::ClusterSide;
use crate::core::{Flow, OffsetSyncsLocation, Precision, ReplicationPolicy};
use check::{Checker, Unknown};
use lookup::{Lookup, java_parse_boolean};
use providers::{Providers, Resolution};
use security::is_connection_key;

const MIRROR_PACKAGE: &str = "org.apache.kafka.connect.mirror.";

/// A value read from the file: the (provider-resolved) text and where it came from.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Setting {
    /// The value, with `${...}` references resolved; when they were not
    /// (see `resolution`), the text as written.
    pub(crate) value: String,
    /// The key as written in the file, e.g. `A->B.topics`.
    pub(crate) origin: String,
    /// The line that key is on.
    pub(crate) line: Option<usize>,
    /// Whether `value` is the real value.
    pub(crate) resolution: Resolution,
}

impl Setting {
    /// The value, or [`Unknown`] when it is not the real one: a reference in
    /// it failed (that error is recorded) or was not read (`--no-secrets`).
    /// Checks of a value's content go through this; presence checks need not.
    pub(crate) fn text(&self) -> Result<&str, Unknown> {
        match self.resolution {
            Resolution::Resolved => Ok(&self.value),
            Resolution::Failed | Resolution::NotRead => Err(Unknown),
        }
    }

    /// A warning about this setting's key.
    pub(crate) fn warning(&self, message: impl Into<String>) -> ConfigWarning {
        ConfigWarning::new(Some(self.origin.clone()), self.line, message)
    }

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
pub const GROUP_OFFSETS_MODE_KEY: &str = keys::GROUP_OFFSETS_MODE.name;

/// The key of the commit follower's coalescing window (ours).
pub const FOLLOW_COALESCE_KEY: &str = keys::FOLLOW_COALESCE.name;

/// The key choosing how precisely a flow translates offsets (ours: MM2 ignores it).
pub const OFFSET_TRANSLATION_KEY: &str = keys::OFFSET_TRANSLATION.name;

/// The key of the precise translation's budget: offset syncs kept per source
/// partition (ours).
pub const TRANSLATION_MAX_SYNCS_KEY: &str = keys::TRANSLATION_MAX_SYNCS.name;

/// The key turning on the content search inside the sync bracket (ours; only
/// with precise translation; docs/translation.md, "Content search").
pub const CONTENT_SEARCH_KEY: &str = keys::CONTENT_SEARCH.name;

/// Most records one content search compares (the group's records since the
/// sync; about `offset.lag.max` where MM2 wrote every sync).
pub const CONTENT_SEARCH_MAX_RECORDS: usize = 1000;

/// Most bytes one content search fetches from each side (one Fetch each).
pub const CONTENT_SEARCH_MAX_BYTES: i32 = 1024 * 1024;

/// The key turning membership on: instances sharing a flow elect one owner
/// of it through a group on its target cluster (ours; docs/membership.md).
pub const MEMBERSHIP_ENABLED_KEY: &str = keys::MEMBERSHIP_ENABLED.name;

/// The key of the flow's membership group id (ours; default
/// `mm2-checkpoint.<source>.<target>`: [`FlowConfig::default_membership_group`]).
pub const MEMBERSHIP_GROUP_KEY: &str = keys::MEMBERSHIP_GROUP.name;

/// The key of the static member id, `group.instance.id` (ours; e.g. the pod name).
pub const MEMBERSHIP_INSTANCE_KEY: &str = keys::MEMBERSHIP_INSTANCE.name;

/// The key of the membership session timeout (ours).
pub const MEMBERSHIP_SESSION_TIMEOUT_KEY: &str = keys::MEMBERSHIP_SESSION_TIMEOUT.name;

/// The key of the membership heartbeat interval (ours).
pub const MEMBERSHIP_HEARTBEAT_KEY: &str = keys::MEMBERSHIP_HEARTBEAT.name;

/// How the instances sharing a flow elect its one writer (docs/membership.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MembershipConfig {
    /// The group on the target cluster; also the transactional id of the
    /// flow's checkpoint producer (one unit of work, one writer).
    pub group: String,
    /// `group.instance.id` for static membership.
    pub instance_id: Option<String>,
    /// The coordinator drops a member silent for this long.
    pub session_timeout: Duration,
    /// How often a member heartbeats.
    pub heartbeat_interval: Duration,
}

/// The default of [`TRANSLATION_MAX_SYNCS_KEY`], set from the daemon measured at
/// 1,000 and 10,000 partitions (docs/translation.md, "Budget and fallback"): it covers
/// a lag of 1,000 × `offset.lag.max` records (10^5 at the default spacing), and a flow
/// of 10,000 partitions all at the budget (10^7 syncs) measured about 250 MiB of RSS
/// after a first start, about 750 MiB at the peak of a restart restoring them.
pub const DEFAULT_TRANSLATION_MAX_SYNCS: usize = 1_000;

/// The largest accepted [`TRANSLATION_MAX_SYNCS_KEY`]: 100,000,000 syncs are about
/// 800 MB for one partition, beyond any sensible budget (a guard against typos).
pub const MAX_TRANSLATION_MAX_SYNCS: usize = 100_000_000;

/// How precisely a flow translates offsets (docs/translation.md, "Precise translation").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OffsetTranslation {
    /// MirrorMaker 2's algorithm: the checkpoints MM2 would write.
    #[default]
    Mm2,
    /// Through the nearest offset sync at or below the group's offset, from every
    /// sync kept since the partition's last rewind.
    Precise,
}

impl OffsetTranslation {
    /// Every value.
    pub const ALL: [Self; 2] = [OffsetTranslation::Mm2, OffsetTranslation::Precise];

    /// The setting's spelling (the only one: [`FromStr`] reads it back).
    pub fn as_str(self) -> &'static str {
        match self {
            OffsetTranslation::Mm2 => "mm2",
            OffsetTranslation::Precise => "precise",
        }
    }
}

impl FromStr for OffsetTranslation {
    type Err = UnknownSpelling;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        spelling::parse_spelling(&Self::ALL, Self::as_str, s)
    }
}

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
    /// Every value.
    pub const ALL: [Self; 3] = [
        GroupOffsetsMode::Auto,
        GroupOffsetsMode::Follow,
        GroupOffsetsMode::Poll,
    ];

    /// The setting's spelling (the only one: [`FromStr`] reads it back).
    pub fn as_str(self) -> &'static str {
        match self {
            GroupOffsetsMode::Auto => "auto",
            GroupOffsetsMode::Follow => "follow",
            GroupOffsetsMode::Poll => "poll",
        }
    }
}

impl FromStr for GroupOffsetsMode {
    type Err = UnknownSpelling;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        spelling::parse_spelling(&Self::ALL, Self::as_str, s)
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
    /// `mm2-checkpoint.offset.translation` (ours; default `mm2`): how precisely
    /// offsets are translated.
    pub offset_translation: OffsetTranslation,
    /// `mm2-checkpoint.offset.translation.max.syncs.per.partition` (ours; default
    /// [`DEFAULT_TRANSLATION_MAX_SYNCS`]): the precise mode's budget per partition.
    pub translation_max_syncs: usize,
    /// `mm2-checkpoint.offset.translation.content.search` (ours; default false):
    /// find the exact position inside the sync bracket by reading records.
    pub content_search: bool,
    /// `mm2-checkpoint.membership.*` (ours; off by default): the flow's
    /// owner election among instances; `None` when off.
    pub membership: Option<MembershipConfig>,
    /// Where each setting came from: logical key → `file key (line N)` or `default`.
    /// Connection keys are listed as `source.<key>` and `target.<key>`.
    pub origins: BTreeMap<String, String>,
}

impl FlowConfig {
    /// The flow's name, `S->T`.
    pub fn name(&self) -> String {
        format!("{}->{}", self.source.alias, self.target.alias)
    }

    /// The membership group of a flow when [`MEMBERSHIP_GROUP_KEY`] does not
    /// name one: `mm2-checkpoint.<source>.<target>`, the same for every
    /// instance started with the same configuration.
    pub fn default_membership_group(source: &str, target: &str) -> String {
        format!("mm2-checkpoint.{source}.{target}")
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

    /// The offset-sync store's precision for this flow's settings.
    pub fn sync_precision(&self) -> Precision {
        match self.offset_translation {
            OffsetTranslation::Mm2 => Precision::Mm2,
            OffsetTranslation::Precise => Precision::Precise {
                max_syncs: self.translation_max_syncs,
            },
        }
    }

    /// The checkpoints topic on the target, as the replication policy names it.
    pub fn checkpoints_topic(&self) -> String {
        self.replication_policy
            .checkpoints_topic(&self.source_alias)
    }

    /// The sync-history topic on the target, where precise translation keeps
    /// its history (docs/translation.md, "Restarts and compaction"):
    /// `mm2-checkpoint<isep><source alias><isep>sync-history<isep>internal`,
    /// with the policy's internal separator (so MM2 never mirrors it). `None`
    /// with `mm2` translation, which keeps no history.
    pub fn sync_history_topic(&self) -> Option<String> {
        match self.offset_translation {
            OffsetTranslation::Mm2 => None,
            OffsetTranslation::Precise => {
                let isep = self.replication_policy.internal_separator();
                Some(format!(
                    "mm2-checkpoint{isep}{}{isep}sync-history{isep}internal",
                    self.source_alias
                ))
            }
        }
    }
}

/// Which enabled flows mm2-checkpoint checkpoints, and why
/// (docs/configuration.md, "Sharing mm2.properties with MirrorMaker 2").
///
/// MM2 runs no checkpoint task for a flow whose `emit.checkpoints.enabled` is
/// false, so that is the flag that hands a flow's checkpointing to us. One file
/// can then serve both programs without any flow having two checkpointers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// The input is one MirrorCheckpointConnector's configuration
    /// (docs/configuration.md, "Connector-style input"): mm2-checkpoint
    /// replaces that connector and checkpoints its flow.
    Connector,
    /// No enabled flow sets `emit.checkpoints.enabled=false`: the file is
    /// mm2-checkpoint's own and every enabled flow is checkpointed. MM2 must
    /// not run its checkpoint connector on this file.
    OwnFile,
    /// Some enabled flows set `emit.checkpoints.enabled=false`: the file is
    /// shared with MM2 and mm2-checkpoint checkpoints exactly those.
    Shared {
        /// Each handed-over flow and the key (with its line) that hands it over.
        handed_over: Vec<(String, String)>,
        /// The enabled flows whose checkpointing MM2 keeps.
        left_to_mm2: Vec<String>,
    },
}

impl Ownership {
    /// Whether mm2-checkpoint checkpoints the enabled flow `flow` (`S->T`).
    pub fn checkpoints(&self, flow: &str) -> bool {
        match self {
            Ownership::OwnFile | Ownership::Connector => true,
            Ownership::Shared { handed_over, .. } => handed_over.iter().any(|(f, _)| f == flow),
        }
    }

    /// The enabled flows left to MirrorMaker 2's checkpoint connector.
    pub fn left_to_mm2(&self) -> &[String] {
        match self {
            Ownership::OwnFile | Ownership::Connector => &[],
            Ownership::Shared { left_to_mm2, .. } => left_to_mm2,
        }
    }

    /// Why mm2-checkpoint checkpoints `flow`, one line for `validate`.
    pub fn reason(&self, flow: &str) -> String {
        match self {
            Ownership::Connector => "a MirrorCheckpointConnector configuration: mm2-checkpoint \
                 replaces that connector (delete it from Connect before starting)"
                .to_string(),
            Ownership::OwnFile => {
                "no flow of the file sets emit.checkpoints.enabled=false, so the \
                 file is mm2-checkpoint's own and every enabled flow is checkpointed (do not run \
                 MM2's checkpoint connector on it)"
                    .to_string()
            }
            Ownership::Shared { handed_over, .. } => {
                match handed_over.iter().find(|(f, _)| f == flow) {
                    Some((_, origin)) => format!(
                        "handed over by {origin} = false: MM2 runs no checkpoint task for it"
                    ),
                    None => "left to MirrorMaker 2 (its emit.checkpoints.enabled is true)".into(),
                }
            }
        }
    }
}

/// The whole file: clusters, enabled flows, and warnings worth logging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorConfig {
    /// The aliases from `clusters`, in file order, duplicates removed.
    pub clusters: Vec<String>,
    /// Every enabled flow mm2-checkpoint checkpoints, in `clusters` order
    /// (source, then target).
    pub flows: Vec<FlowConfig>,
    /// Which enabled flows are ours and why; the others are left to MM2.
    pub ownership: Ownership,
    /// Accepted but dubious settings (disabled host name verification, ignored
    /// keys, deprecated names, keys nothing reads, certificates near their end
    /// of validity). The driver logs them at startup; `validate --strict`
    /// fails on them.
    pub warnings: Vec<ConfigWarning>,
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
    /// Reads and validates a configuration file (UTF-8): an `mm2.properties`
    /// or a MirrorCheckpointConnector configuration, told apart by content
    /// ([`ConfigFormat::Auto`]). Reads referenced provider and PEM files; does
    /// no network I/O. Fails with the first error ([`Self::validate_file`]
    /// reports them all).
    pub fn load(path: &Path, env: &dyn Environment) -> Result<Self, ConfigError> {
        Self::load_as(path, ConfigFormat::Auto, env)
    }

    /// [`load`](Self::load) with the format given.
    pub fn load_as(
        path: &Path,
        format: ConfigFormat,
        env: &dyn Environment,
    ) -> Result<Self, ConfigError> {
        first_error(Self::validate_file(path, format, env, Secrets::Read))
    }

    /// Validates configuration text in `format` and derives the enabled flows;
    /// fails with the first error.
    pub fn from_text(
        text: &str,
        format: ConfigFormat,
        env: &dyn Environment,
    ) -> Result<Self, ConfigError> {
        first_error(Self::validate_text(text, format, env, Secrets::Read))
    }

    /// Validates parsed `mm2.properties` entries and derives the enabled
    /// flows; fails with the first error.
    pub fn from_properties(props: &Properties, env: &dyn Environment) -> Result<Self, ConfigError> {
        first_error(Self::validate_entries(props, env, false, Secrets::Read))
    }

    /// Checks a configuration file completely: every independent error, every
    /// warning, and (with [`Secrets::Skip`]) what was not read. Does no
    /// network I/O.
    pub fn validate_file(
        path: &Path,
        format: ConfigFormat,
        env: &dyn Environment,
        secrets: Secrets,
    ) -> Validation {
        let bytes = match env.read_file(path) {
            Ok(bytes) => bytes,
            Err(e) => {
                return Validation::failed(
                    secrets,
                    vec![ConfigError::new(format!(
                        "cannot read `{}`: {e}",
                        path.display()
                    ))],
                    Vec::new(),
                );
            }
        };
        match std::str::from_utf8(&bytes) {
            Ok(text) => Self::validate_text(text, format, env, secrets),
            // The properties reader names the line of the first bad byte.
            Err(_) => Validation::failed(
                secrets,
                vec![
                    Properties::parse_bytes(&bytes)
                        .err()
                        .unwrap_or_else(|| ConfigError::new("the file is not valid UTF-8")),
                ],
                Vec::new(),
            ),
        }
    }

    /// [`validate_file`](Self::validate_file) for configuration text.
    pub fn validate_text(
        text: &str,
        format: ConfigFormat,
        env: &dyn Environment,
        secrets: Secrets,
    ) -> Validation {
        let (props, is_connector) = match connector::read_all(text, format) {
            Ok(read) => read,
            Err(errors) => {
                let rest = NotChecked::new(
                    None,
                    None,
                    "the settings: the file has entries that cannot be read",
                );
                return Validation::failed(secrets, errors, vec![rest]);
            }
        };
        let mut validation = Self::validate_entries(&props, env, is_connector, secrets);
        if is_connector {
            // A missing cluster setting is named by its cluster (`target.<k>`);
            // in a connector configuration that is `target.cluster.<k>`.
            for e in &mut validation.errors {
                if let Some(key) = e.key()
                    && e.line().is_none()
                    && let Some(written) = connector::cluster_key(key)
                {
                    *e = ConfigError::for_key(written, e.message());
                }
            }
        }
        validation
    }

    /// Checks parsed entries that may stand for a connector configuration
    /// (`connector.rs`), whose keys are then reported as the user wrote them.
    ///
    /// Every independent part is checked even after an error: the provider
    /// declarations, the metrics settings, `clusters`, each flow's `enabled`
    /// and `emit.checkpoints.enabled`, and each checkpointed flow's keys and
    /// clusters. What depends on a part with an error is skipped (a flow whose
    /// `enabled` is invalid; everything but the metrics and providers when
    /// `clusters` is), and a [`NotChecked`] entry says so.
    fn validate_entries(
        props: &Properties,
        env: &dyn Environment,
        is_connector: bool,
        secrets: Secrets,
    ) -> Validation {
        let checker = Checker::new(secrets);
        let found = {
            let lookup = Lookup::new(props, Providers::declare(props, env, &checker), &checker);
            check_entries(&lookup, props, env, is_connector)
        };
        let (mut errors, warnings, mut not_checked) = checker.into_findings();
        // In file order; what has no line (a missing key, a flow) last.
        errors.sort_by_key(|e| (e.line().is_none(), e.line()));
        not_checked.sort_by_key(|n| (n.line().is_none(), n.line()));
        let Some(found) = found else {
            return Validation {
                warnings,
                not_checked,
                ..Validation::failed(secrets, errors, Vec::new())
            };
        };
        let ownership = if is_connector {
            Ownership::Connector
        } else {
            found.ownership
        };
        let flows = Validation::flow_reports(&found.enabled, &ownership, found.built);
        let config = match (errors.is_empty(), secrets, found.metrics) {
            (true, Secrets::Read, Some(metrics))
                if flows
                    .iter()
                    .all(|f| !f.checkpointed || f.settings.is_some()) =>
            {
                Some(MirrorConfig {
                    clusters: found.clusters.clone(),
                    flows: flows.iter().filter_map(|f| f.settings.clone()).collect(),
                    ownership,
                    warnings: warnings.clone(),
                    unknown_keys: found.unknown_keys,
                    no_effect_keys: found.no_effect_keys.clone(),
                    metrics,
                })
            }
            _ => None,
        };
        Validation {
            config,
            secrets,
            clusters: found.clusters,
            flows,
            metrics: found.metrics,
            no_effect_keys: found.no_effect_keys,
            errors,
            warnings,
            not_checked,
        }
    }
}

/// The config of `validation`, or its first error.
fn first_error(validation: Validation) -> Result<MirrorConfig, ConfigError> {
    validation
        .into_config()
        .map_err(|mut errors| errors.remove(0))
}

/// What [`check_entries`] derived (its problems are in the checker).
struct Found {
    clusters: Vec<String>,
    metrics: Option<metrics::MetricsSettings>,
    /// Every enabled flow whose hand-over setting is valid, in `clusters` order.
    enabled: Vec<String>,
    ownership: Ownership,
    /// The checkpointed flows that were derived without problems.
    built: Vec<FlowConfig>,
    unknown_keys: Vec<known_keys::UnknownKey>,
    no_effect_keys: Vec<String>,
}

/// Checks every part of `props` through `lookup`; `None` when `clusters`
/// itself has errors, so that no flow can be named.
fn check_entries(
    lookup: &Lookup<'_>,
    props: &Properties,
    env: &dyn Environment,
    is_connector: bool,
) -> Option<Found> {
    let checker = lookup.checker;
    let connector_key = |key: &str| -> String {
        key.strip_prefix(CONNECTOR_FLOW)
            .and_then(|k| k.strip_prefix('.'))
            .filter(|_| is_connector)
            .unwrap_or(key)
            .to_string()
    };
    let metrics = metrics::MetricsSettings::read(lookup).ok();
    let Ok(clusters) = lookup.clusters() else {
        checker.not_checked(NotChecked::new(
            Some("clusters".to_string()),
            props.line("clusters"),
            "the flows, the cluster settings and the key names: they all depend on the cluster \
             aliases",
        ));
        return None;
    };
    let unknown_keys = known_keys::unknown_keys(props.keys(), &clusters);
    let mut unknown_as_written = Vec::new();
    for unknown in &unknown_keys {
        let line = props.line(&unknown.key);
        let at = line.map_or_else(String::new, |line| format!(" (line {line})"));
        let unknown_written = known_keys::UnknownKey {
            key: props.written_as(&unknown.key).to_string(),
            suggestion: unknown.suggestion.as_deref().map(connector_key),
            note: unknown.note,
        };
        let unknown = &unknown_written;
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
        checker.warn(ConfigWarning::new(Some(unknown.key.clone()), line, text));
        unknown_as_written.push(unknown_written);
    }
    for key in props.keys() {
        let client_key = ["consumer.", "producer.", "admin."]
            .iter()
            .find_map(|p| key.strip_prefix(p));
        if client_key.is_some_and(is_connection_key) {
            checker.warn(ConfigWarning::new(
                Some(key.to_string()),
                props.line(key),
                format!(
                    "`{key}` is ignored (MM2 drops top-level client keys too); put it on a \
                     cluster, e.g. `<alias>.{key}`"
                ),
            ));
        }
    }
    let global_heartbeats = lookup
        .raw("emit.heartbeats.enabled")
        .is_none_or(java_parse_boolean);
    let mut enabled = Vec::new();
    let mut undecided = false;
    for source in &clusters {
        for target in &clusters {
            if source == target {
                continue;
            }
            let flow = format!("{source}->{target}");
            match lookup.flow_enabled(&flow, global_heartbeats) {
                Ok(false) => {}
                Ok(true) => match lookup.emit_checkpoints(&flow) {
                    Ok(emit) => enabled.push((flow, source.clone(), target.clone(), emit)),
                    Err(Unknown) => {
                        undecided = true;
                        checker.not_checked(NotChecked::new(
                            None,
                            None,
                            format!(
                                "flow {flow}: its emit.checkpoints.enabled has an error or was \
                                 not read, so it is not known whether mm2-checkpoint or \
                                 MirrorMaker 2 checkpoints it"
                            ),
                        ));
                    }
                },
                Err(Unknown) => {
                    undecided = true;
                    checker.not_checked(NotChecked::new(
                        None,
                        None,
                        format!(
                            "flow {flow}: its `enabled` setting has an error or was not read, \
                             so it is not known whether the flow is enabled"
                        ),
                    ));
                }
            }
        }
    }
    // A flow with `emit.checkpoints.enabled=false` is handed over to us;
    // once one is, the file is shared with MM2 and the others stay MM2's.
    let handed_over: Vec<(String, String)> = enabled
        .iter()
        .filter_map(|(flow, _, _, emit)| match emit {
            Some((false, s)) => Some((flow.clone(), s.describe_origin())),
            _ => None,
        })
        .collect();
    let ownership = if handed_over.is_empty() {
        Ownership::OwnFile
    } else {
        Ownership::Shared {
            left_to_mm2: enabled
                .iter()
                .filter(|(flow, ..)| !handed_over.iter().any(|(f, _)| f == flow))
                .map(|(flow, ..)| flow.clone())
                .collect(),
            handed_over,
        }
    };
    let mut built = Vec::new();
    for (flow, source, target, _) in &enabled {
        if !ownership.checkpoints(flow) {
            continue;
        }
        let prefix = format!("{flow}.");
        for key in props.keys() {
            let Some(rest) = key.strip_prefix(&prefix) else {
                continue;
            };
            let line = props.line(key);
            if is_connector && is_connection_key(rest) {
                let at = line.map_or_else(String::new, |line| format!(" (line {line})"));
                let written = props.written_as(key);
                checker.warn(ConfigWarning::new(
                    Some(written.to_string()),
                    line,
                    format!(
                        "`{written}`{at} is ignored (as in MirrorConnectorConfig, a bare \
                         connection key reaches no client); use `source.cluster.{rest}` and \
                         `target.cluster.{rest}`"
                    ),
                ));
            } else if is_connection_key(rest) {
                checker.warn(ConfigWarning::new(
                    Some(key.to_string()),
                    line,
                    format!(
                        "`{key}` is ignored (as in MM2, a flow-level connection key reaches no \
                         client); use `{source}.<key>`/`{target}.<key>` or \
                         `{flow}.source.admin.<key>`-style keys"
                    ),
                ));
            }
        }
        if let Ok(config) = lookup.flow(flow, source, target, env) {
            built.push(config);
        }
    }
    if enabled.is_empty() && !undecided {
        checker.error(
            ConfigError::for_key(
                "clusters",
                format!(
                    "no flow is enabled; enable one with e.g. `{}.enabled = true`",
                    match clusters.as_slice() {
                        [a, b, ..] => format!("{a}->{b}"),
                        _ => "<source>-><target>".to_string(),
                    }
                ),
            )
            .at_line(props.line("clusters")),
        );
    }
    // What MM2 reads but checkpointing does not use: every key that is
    // neither unknown nor read above (the providers' own keys are read when
    // they are declared). Only when nothing failed: a key an error kept from
    // being read would be listed wrongly.
    let no_effect_keys = if checker.error_count() > 0 {
        Vec::new()
    } else {
        props
            .keys()
            .filter(|k| {
                *k != "clusters"
                    && !k.starts_with("config.providers")
                    && !lookup.was_read(k)
                    && !unknown_keys.iter().any(|u| u.key == *k)
            })
            .map(|k| match props.line(k) {
                Some(line) => format!("{} (line {line})", props.written_as(k)),
                None => props.written_as(k).to_string(),
            })
            .collect()
    };
    Some(Found {
        clusters,
        metrics,
        enabled: enabled.into_iter().map(|(flow, ..)| flow).collect(),
        ownership,
        built,
        unknown_keys: unknown_as_written,
        no_effect_keys,
    })
}

#[cfg(test)]
mod tests;
