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
use providers::Providers;
use security::{ConnectionSettings, build_connection, is_connection_key};

const MIRROR_PACKAGE: &str = "org.apache.kafka.connect.mirror.";
const DEFAULT_TOPICS: &str = ".*";
const DEFAULT_TOPICS_EXCLUDE: &str = ".*[\\-\\.]internal, .*\\.replica, __.*";
const DEFAULT_GROUPS: &str = ".*";
const DEFAULT_GROUPS_EXCLUDE: &str = "console-consumer-.*, connect-.*, __.*";

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

/// The raw topic and group filter lists of one flow (compiled by the core).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterSettings {
    /// `topics`: include list.
    pub topics: String,
    /// `topics.exclude` (or the deprecated `topics.blacklist`).
    pub topics_exclude: String,
    /// `groups`: include list.
    pub groups: String,
    /// `groups.exclude` (or the deprecated `groups.blacklist`).
    pub groups_exclude: String,
}

/// Everything the checkpoint engine needs for one enabled flow `S->T`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowConfig {
    /// Connection to the source cluster S.
    pub source: ClusterConnection,
    /// Connection to the target cluster T.
    pub target: ClusterConnection,
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
    /// Where each setting came from: logical key → `file key (line N)` or `default`.
    /// Connection keys are listed as `source.<key>` and `target.<key>`.
    pub origins: BTreeMap<String, String>,
}

impl FlowConfig {
    /// The flow's name, `S->T`.
    pub fn name(&self) -> String {
        format!("{}->{}", self.source.alias, self.target.alias)
    }

    /// The flow as the core names it.
    pub fn flow(&self) -> Flow {
        Flow::new(self.source.alias.clone(), self.target.alias.clone())
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
            .checkpoints_topic(&self.source.alias)
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
    /// keys, deprecated names). The driver logs them at startup.
    pub warnings: Vec<String>,
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
        let lookup = Lookup {
            props,
            providers: Providers::declare(props, env)?,
        };
        let clusters = lookup.clusters()?;
        let mut warnings = Vec::new();
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
        let global_heartbeats = props
            .get("emit.heartbeats.enabled")
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
        Ok(Self {
            clusters,
            flows,
            warnings,
        })
    }
}

/// Java's `Boolean.parseBoolean`: `true` in any case is true, anything else false.
fn java_parse_boolean(value: &str) -> bool {
    value.eq_ignore_ascii_case("true")
}

/// Strips a known package from a class name, accepting the simple name too.
fn simple_class_name<'v>(value: &'v str, package: &str) -> &'v str {
    value.strip_prefix(package).unwrap_or(value)
}

struct Lookup<'a> {
    props: &'a Properties,
    providers: Providers<'a>,
}

/// The clients of a cluster that mm2-checkpoint replaces with one connection.
const SOURCE_CLIENTS: &[&str] = &["consumer", "admin"];
const TARGET_CLIENTS: &[&str] = &["consumer", "producer", "admin"];

impl Lookup<'_> {
    /// The setting stored under exactly `key`, with providers resolved.
    fn setting(&self, key: &str) -> Result<Option<Setting>, ConfigError> {
        let Some(raw) = self.props.get(key) else {
            return Ok(None);
        };
        let line = self.props.line(key);
        Ok(Some(Setting {
            value: self.providers.resolve(key, line, raw)?,
            origin: key.to_string(),
            line,
        }))
    }

    /// The first of `keys` present in the file.
    fn first(&self, keys: &[String]) -> Result<Option<Setting>, ConfigError> {
        match keys.iter().find(|k| self.props.contains(k)) {
            Some(k) => self.setting(k),
            None => Ok(None),
        }
    }

    /// A connector-level key of `flow`: `S->T.<key>`, else top-level `<key>`.
    fn flow_key(&self, flow: &str, key: &str) -> Result<Option<Setting>, ConfigError> {
        self.first(&[format!("{flow}.{key}"), key.to_string()])
    }

    fn clusters(&self) -> Result<Vec<String>, ConfigError> {
        let setting = self.setting("clusters")?.ok_or_else(|| {
            ConfigError::for_key(
                "clusters",
                "is required: list the cluster aliases, e.g. `clusters = A, B`",
            )
        })?;
        let mut out: Vec<String> = Vec::new();
        for alias in setting.value.split(',').map(str::trim) {
            if alias.is_empty() {
                return Err(setting.error("contains an empty alias"));
            }
            if !out.iter().any(|a| a == alias) {
                out.push(alias.to_string());
            }
        }
        if out.len() < 2 {
            return Err(setting.error("must list at least two cluster aliases"));
        }
        Ok(out)
    }

    /// MM2's rule: a herder exists for `S->T` if `S->T.enabled` is `true`
    /// (any case) or heartbeats are enabled for the pair; the flow's connectors
    /// are enabled if its `enabled` (flow key, else top-level) is true.
    fn flow_enabled(
        &self,
        flow: &str,
        global_heartbeats: bool,
        warnings: &mut Vec<String>,
    ) -> Result<bool, ConfigError> {
        let pair_flag = self
            .props
            .get(&format!("{flow}.enabled"))
            .is_some_and(java_parse_boolean);
        let heartbeats = self
            .props
            .get(&format!("{flow}.emit.heartbeats.enabled"))
            .map_or(global_heartbeats, java_parse_boolean);
        if !pair_flag && !heartbeats {
            return Ok(false);
        }
        let Some(setting) = self.flow_key(flow, "enabled")? else {
            return Ok(false);
        };
        let enabled = parse_bool(&setting)?;
        if enabled && setting.origin == "enabled" {
            warnings.push(format!(
                "flow {flow} is enabled by the top-level `enabled=true`, which (as in MM2) enables \
                 every pair of clusters; set `{flow}.enabled=false` to exclude it"
            ));
        }
        Ok(enabled)
    }

    fn flow(
        &self,
        flow: &str,
        source: &str,
        target: &str,
        env: &dyn Environment,
        warnings: &mut Vec<String>,
    ) -> Result<FlowConfig, ConfigError> {
        let mut origins = BTreeMap::new();
        let mut get = |key: &str| -> Result<Option<Setting>, ConfigError> {
            let s = self.flow_key(flow, key)?;
            origins.insert(
                key.to_string(),
                s.as_ref()
                    .map_or_else(|| "default".to_string(), Setting::describe_origin),
            );
            Ok(s)
        };

        for key in ["emit.checkpoints.enabled", "emit.offset-syncs.enabled"] {
            if let Some(s) = get(key)?
                && !parse_bool(&s)?
            {
                return Err(s.error(format!(
                    "is false, so flow {flow} would emit no checkpoints (MM2 rejects this \
                     connector config too); disable the flow with `{flow}.enabled=false` instead"
                )));
            }
        }
        let bool_or = |s: Option<Setting>, default: bool| s.map_or(Ok(default), |s| parse_bool(&s));
        let seconds = |s: Option<Setting>, default: u64| -> Result<Duration, ConfigError> {
            Ok(Duration::from_secs(
                s.map_or(Ok(default), |s| parse_positive(&s))?,
            ))
        };
        let millis = |s: Option<Setting>, default: u64| -> Result<Duration, ConfigError> {
            Ok(Duration::from_millis(
                s.map_or(Ok(default), |s| parse_positive(&s))?,
            ))
        };

        let emit_checkpoints_interval = seconds(get("emit.checkpoints.interval.seconds")?, 60)?;
        let sync_group_offsets_enabled = bool_or(get("sync.group.offsets.enabled")?, false)?;
        let sync_group_offsets_interval = seconds(get("sync.group.offsets.interval.seconds")?, 60)?;
        let refresh_groups_enabled = bool_or(get("refresh.groups.enabled")?, true)?;
        let refresh_groups_interval = seconds(get("refresh.groups.interval.seconds")?, 600)?;
        let consumer_poll_timeout = millis(get("consumer.poll.timeout.ms")?, 1000)?;
        let admin_timeout = millis(get("admin.timeout.ms")?, 60_000)?;
        let offset_lag_max = match get("offset.lag.max")? {
            None => 100,
            Some(s) => parse_i64(&s)?,
        };
        let checkpoints_topic_replication_factor =
            match get("checkpoints.topic.replication.factor")? {
                None => 3,
                Some(s) => match parse_i64(&s)? {
                    v @ (-1 | 1..=32767) => v as i16,
                    _ => return Err(s.error("must be -1 (broker default) or between 1 and 32767")),
                },
            };
        let offset_syncs_topic_location = match get("offset-syncs.topic.location")? {
            None => OffsetSyncsLocation::default(),
            Some(s) => s.value.trim().parse().map_err(|_| {
                s.error(format!(
                    "`{}` is not valid; use `source` or `target` (lower case)",
                    s.value.trim()
                ))
            })?,
        };

        let mut filter =
            |key: &str, deprecated: Option<&str>, default: &str| -> Result<String, ConfigError> {
                if let Some(s) = get(key)? {
                    return Ok(s.value);
                }
                if let Some(old) = deprecated
                    && let Some(s) = get(old)?
                {
                    warnings.push(format!(
                        "`{}` is deprecated (removed in Kafka 4.0); use `{key}`",
                        s.origin
                    ));
                    return Ok(s.value);
                }
                Ok(default.to_string())
            };
        let filters = FilterSettings {
            topics: filter("topics", None, DEFAULT_TOPICS)?,
            topics_exclude: filter(
                "topics.exclude",
                Some("topics.blacklist"),
                DEFAULT_TOPICS_EXCLUDE,
            )?,
            groups: filter("groups", None, DEFAULT_GROUPS)?,
            groups_exclude: filter(
                "groups.exclude",
                Some("groups.blacklist"),
                DEFAULT_GROUPS_EXCLUDE,
            )?,
        };

        for (key, default) in [
            ("topic.filter.class", "DefaultTopicFilter"),
            ("group.filter.class", "DefaultGroupFilter"),
        ] {
            if let Some(s) = get(key)?
                && simple_class_name(s.value.trim(), MIRROR_PACKAGE) != default
            {
                return Err(s.error(format!(
                    "custom filter classes are not supported by mm2-checkpoint; remove the key to \
                     use {MIRROR_PACKAGE}{default} and express the filter with topics/groups \
                     include and exclude lists"
                )));
            }
        }
        if let Some(s) = get("forwarding.admin.class")?
            && simple_class_name(s.value.trim(), "org.apache.kafka.clients.admin.")
                != "ForwardingAdmin"
        {
            return Err(s.error(
                "custom forwarding admin classes are not supported by mm2-checkpoint; remove the key",
            ));
        }

        let class = get("replication.policy.class")?;
        if let Some(s) = &class {
            let name = simple_class_name(s.value.trim(), MIRROR_PACKAGE);
            if ReplicationPolicy::from_class(Some(name), None, None, None).is_err() {
                return Err(s.error(format!(
                    "replication policy `{name}` is not supported; only \
                     {MIRROR_PACKAGE}DefaultReplicationPolicy and \
                     {MIRROR_PACKAGE}IdentityReplicationPolicy are"
                )));
            }
        }
        let internal_flag = get("replication.policy.internal.topic.separator.enabled")?;
        let separator = get("replication.policy.separator")?;
        // The internal-separator flag is only read (and checked) when a separator
        // is set, as MM2 does (docs/behaviour.md B.1).
        let internal_enabled = match &separator {
            Some(s) if s.value.is_empty() => return Err(s.error("must not be empty")),
            Some(_) => internal_flag.map(|s| parse_bool(&s)).transpose()?,
            None => None,
        };
        let replication_policy = ReplicationPolicy::from_class(
            class.as_ref().map(|s| s.value.as_str()),
            separator.as_ref().map(|s| s.value.as_str()),
            internal_enabled,
            Some(source),
        )
        .map_err(|e| ConfigError::for_key("replication.policy.class", e.to_string()))?;

        let source_settings = self.connection_settings(flow, source, "source", SOURCE_CLIENTS)?;
        let target_settings = self.connection_settings(flow, target, "target", TARGET_CLIENTS)?;
        for (role, settings) in [("source", &source_settings), ("target", &target_settings)] {
            for (k, s) in settings {
                origins.insert(format!("{role}.{k}"), s.describe_origin());
            }
        }
        let source_conn = build_connection(source, &source_settings, env, warnings)?;
        let target_conn = build_connection(target, &target_settings, env, warnings)?;

        Ok(FlowConfig {
            source: source_conn,
            target: target_conn,
            emit_checkpoints_interval,
            sync_group_offsets_enabled,
            sync_group_offsets_interval,
            refresh_groups_enabled,
            refresh_groups_interval,
            filters,
            replication_policy,
            offset_syncs_topic_location,
            checkpoints_topic_replication_factor,
            consumer_poll_timeout,
            admin_timeout,
            offset_lag_max,
            origins,
        })
    }

    /// Merges the connection keys cluster `alias` gets in the role `role`
    /// (`source`/`target`) of `flow`, for each client in `clients`, in MM2's
    /// precedence (highest first):
    ///
    /// 1. `S->T.<role>.<client>.<k>`
    /// 2. `<alias>.<client>.<k>`
    /// 3. `<alias>.<k>`
    /// 4. top-level `<k>`
    /// 5. `S->T.<client>.<k>`
    /// 6. `S->T.<role>.cluster.<k>`
    ///
    /// The clients must agree, because mm2-checkpoint opens one connection.
    fn connection_settings(
        &self,
        flow: &str,
        alias: &str,
        role: &str,
        clients: &[&str],
    ) -> Result<ConnectionSettings, ConfigError> {
        let prefixes = |client: &str| {
            [
                format!("{flow}.{role}.{client}."),
                format!("{alias}.{client}."),
                format!("{alias}."),
                String::new(),
                format!("{flow}.{client}."),
                format!("{flow}.{role}.cluster."),
            ]
        };
        let mut candidates: Vec<String> = Vec::new();
        for client in clients {
            for prefix in prefixes(client) {
                for key in self.props.keys() {
                    if let Some(rest) = key.strip_prefix(prefix.as_str())
                        && is_connection_key(rest)
                        && !candidates.iter().any(|c| c == rest)
                    {
                        candidates.push(rest.to_string());
                    }
                }
            }
        }
        let mut merged = ConnectionSettings::new();
        for key in candidates {
            let mut chosen: Vec<(&str, Option<Setting>)> = Vec::new();
            for client in clients {
                let names: Vec<String> = prefixes(client)
                    .iter()
                    .map(|p| format!("{p}{key}"))
                    .collect();
                chosen.push((client, self.first(&names)?));
            }
            let values: Vec<Option<&str>> = chosen
                .iter()
                .map(|(_, s)| s.as_ref().map(|s| s.value.as_str()))
                .collect();
            if values.windows(2).any(|w| w[0] != w[1]) {
                let detail: Vec<String> = chosen
                    .iter()
                    .map(|(client, s)| match s {
                        Some(s) => format!("{client} uses `{}`", s.describe_origin()),
                        None => format!("{client} has none"),
                    })
                    .collect();
                return Err(ConfigError::for_key(
                    format!("{alias}.{key}"),
                    format!(
                        "cluster `{alias}` ({role} of flow {flow}) has conflicting `{key}` \
                         settings for its clients ({}); mm2-checkpoint uses one connection per \
                         cluster, so set it once as `{alias}.{key}`",
                        detail.join(", ")
                    ),
                ));
            }
            if let Some((_, Some(setting))) = chosen.into_iter().next() {
                merged.insert(key, setting);
            }
        }
        Ok(merged)
    }
}

fn parse_bool(s: &Setting) -> Result<bool, ConfigError> {
    let v = s.value.trim();
    if v.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(s.error(format!("`{v}` is not a boolean; use `true` or `false`")))
    }
}

fn parse_i64(s: &Setting) -> Result<i64, ConfigError> {
    let v = s.value.trim();
    v.parse::<i64>()
        .map_err(|_| s.error(format!("`{v}` is not an integer")))
}

fn parse_positive(s: &Setting) -> Result<u64, ConfigError> {
    match parse_i64(s)? {
        v if v >= 1 => Ok(v.unsigned_abs()),
        v => Err(s.error(format!("must be at least 1, got {v}"))),
    }
}

#[cfg(test)]
mod tests;
