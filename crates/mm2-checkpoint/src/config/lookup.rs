//! How one flow's settings are looked up in `mm2.properties`: the layering of
//! connector keys (`S->T.<key>` over top-level `<key>`), the rule that enables a
//! flow, each connector key's parsing, and the merge of a cluster's connection
//! keys over its clients (see `docs/configuration.md`).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::error::ConfigError;
use super::properties::Properties;
use super::providers::{Environment, Providers};
use super::security::{ConnectionSettings, build_connection, is_connection_key};
use super::{
    FilterSettings, FlowConfig, GroupOffsetsMode, MIRROR_PACKAGE, OffsetTranslation, Setting,
};
use crate::core::filter::{
    DEFAULT_GROUPS, DEFAULT_GROUPS_EXCLUDE, DEFAULT_TOPICS, DEFAULT_TOPICS_EXCLUDE,
};
use crate::core::{OffsetSyncsLocation, ReplicationPolicy};

/// Java's `Boolean.parseBoolean`: `true` in any case is true, anything else false.
pub(super) fn java_parse_boolean(value: &str) -> bool {
    value.eq_ignore_ascii_case("true")
}

/// Strips a known package from a class name, accepting the simple name too.
fn simple_class_name<'v>(value: &'v str, package: &str) -> &'v str {
    value.strip_prefix(package).unwrap_or(value)
}

pub(super) struct Lookup<'a> {
    pub(super) props: &'a Properties,
    pub(super) providers: Providers<'a>,
    /// Every key a setting was taken from, so the keys read by nothing here
    /// can be listed afterwards.
    read: RefCell<BTreeSet<String>>,
}

/// The clients of a cluster that mm2-checkpoint replaces with one connection.
const SOURCE_CLIENTS: &[&str] = &["consumer", "admin"];
const TARGET_CLIENTS: &[&str] = &["consumer", "producer", "admin"];

impl<'a> Lookup<'a> {
    /// Looks keys up in `props`, resolving references with `providers`.
    pub(super) fn new(props: &'a Properties, providers: Providers<'a>) -> Self {
        Lookup {
            props,
            providers,
            read: RefCell::default(),
        }
    }

    /// The raw value of `key`, noted as read.
    pub(super) fn raw(&self, key: &str) -> Option<&'a str> {
        let value = self.props.get(key)?;
        self.read.borrow_mut().insert(key.to_owned());
        Some(value)
    }

    /// Whether a setting was taken from `key`.
    pub(super) fn was_read(&self, key: &str) -> bool {
        self.read.borrow().contains(key)
    }

    /// The setting stored under exactly `key`, with providers resolved.
    pub(super) fn setting(&self, key: &str) -> Result<Option<Setting>, ConfigError> {
        let Some(raw) = self.raw(key) else {
            return Ok(None);
        };
        let line = self.props.line(key);
        let origin = self.props.written_as(key);
        Ok(Some(Setting {
            value: self.providers.resolve(origin, line, raw)?,
            origin: origin.to_string(),
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
    pub(super) fn flow_key(&self, flow: &str, key: &str) -> Result<Option<Setting>, ConfigError> {
        self.first(&[format!("{flow}.{key}"), key.to_string()])
    }

    pub(super) fn clusters(&self) -> Result<Vec<String>, ConfigError> {
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
    pub(super) fn flow_enabled(
        &self,
        flow: &str,
        global_heartbeats: bool,
        warnings: &mut Vec<String>,
    ) -> Result<bool, ConfigError> {
        let pair_flag = self
            .raw(&format!("{flow}.enabled"))
            .is_some_and(java_parse_boolean);
        let heartbeats = self
            .raw(&format!("{flow}.emit.heartbeats.enabled"))
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

    /// The flow's `emit.checkpoints.enabled` (flow key, else top-level), if
    /// set: `Some(false)` hands the flow's checkpointing from MM2 to
    /// mm2-checkpoint (docs/configuration.md, "Sharing mm2.properties with
    /// MirrorMaker 2").
    pub(super) fn emit_checkpoints(
        &self,
        flow: &str,
    ) -> Result<Option<(bool, Setting)>, ConfigError> {
        match self.flow_key(flow, "emit.checkpoints.enabled")? {
            None => Ok(None),
            Some(s) => Ok(Some((parse_bool(&s)?, s))),
        }
    }

    pub(super) fn flow(
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

        // `emit.checkpoints.enabled` decided whether the flow is ours before it
        // was built (`Lookup::checkpointing`); it is listed with its origin.
        get("emit.checkpoints.enabled")?;
        if let Some(s) = get("emit.offset-syncs.enabled")?
            && !parse_bool(&s)?
        {
            return Err(s.error(format!(
                "is false, so flow {flow} has no offset syncs to translate with (MM2 rejects this \
                 connector config too); let MM2's source connector write offset syncs, or \
                 disable the flow with `{flow}.enabled=false`"
            )));
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
        let group_offsets_mode = match get(super::GROUP_OFFSETS_MODE_KEY)? {
            None => GroupOffsetsMode::default(),
            Some(s) => match s.value.trim() {
                "auto" => GroupOffsetsMode::Auto,
                "follow" => GroupOffsetsMode::Follow,
                "poll" => GroupOffsetsMode::Poll,
                other => {
                    return Err(s.error(format!(
                        "`{other}` is not valid; use `auto`, `follow` or `poll`"
                    )));
                }
            },
        };
        let follow_coalesce = millis(get(super::FOLLOW_COALESCE_KEY)?, 200)?;
        let offset_translation = match get(super::OFFSET_TRANSLATION_KEY)? {
            None => OffsetTranslation::default(),
            Some(s) => match s.value.trim() {
                "mm2" => OffsetTranslation::Mm2,
                "precise" => OffsetTranslation::Precise,
                other => {
                    return Err(s.error(format!("`{other}` is not valid; use `mm2` or `precise`")));
                }
            },
        };
        let translation_max_syncs = match get(super::TRANSLATION_MAX_SYNCS_KEY)? {
            None => super::DEFAULT_TRANSLATION_MAX_SYNCS,
            Some(s) => match usize::try_from(parse_positive(&s)?) {
                Ok(v) if v <= super::MAX_TRANSLATION_MAX_SYNCS => v,
                _ => {
                    return Err(s.error(format!(
                        "must be at most {} (8 bytes per sync and partition)",
                        super::MAX_TRANSLATION_MAX_SYNCS
                    )));
                }
            },
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

        // The deprecated `topics.blacklist`/`groups.blacklist` were removed in
        // Kafka 4.0 and MM2 4.x ignores them; so do we (known_keys warns).
        let mut filter = |key: &str, default: &str| -> Result<String, ConfigError> {
            Ok(get(key)?.map_or_else(|| default.to_string(), |s| s.value))
        };
        let filters = FilterSettings {
            topics: filter("topics", DEFAULT_TOPICS)?,
            topics_exclude: filter("topics.exclude", DEFAULT_TOPICS_EXCLUDE)?,
            groups: filter("groups", DEFAULT_GROUPS)?,
            groups_exclude: filter("groups.exclude", DEFAULT_GROUPS_EXCLUDE)?,
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
            Some(_) => internal_flag.map(|s| parse_bool(&s)).transpose()?,
            None => None,
        };
        // MM2 puts the flow's aliases into each connector's config only if
        // absent, so a top-level `source.cluster.alias` renames every flow's
        // source and `S->T.source.cluster.alias` one flow's (docs/behaviour.md F.2).
        let source_alias =
            get("source.cluster.alias")?.map_or_else(|| source.to_string(), |s| s.value);
        let target_alias =
            get("target.cluster.alias")?.map_or_else(|| target.to_string(), |s| s.value);
        let replication_policy = ReplicationPolicy::from_class(
            class.as_ref().map(|s| s.value.as_str()),
            separator.as_ref().map(|s| s.value.as_str()),
            internal_enabled,
            Some(&source_alias),
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
            source_alias,
            target_alias,
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
            group_offsets_mode,
            follow_coalesce,
            offset_translation,
            translation_max_syncs,
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

pub(super) fn parse_bool(s: &Setting) -> Result<bool, ConfigError> {
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
