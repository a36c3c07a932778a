//! How one flow's settings are looked up in `mm2.properties`: the layering of
//! connector keys (`S->T.<key>` over top-level `<key>`), the rule that enables a
//! flow, each connector key's parsing, and the merge of a cluster's connection
//! keys over its clients (see `docs/configuration.md`).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::check::{Checker, ConfigWarning, Unknown};
use super::error::ConfigError;
use super::keys::{self, Default, Key};
use super::metrics::MetricsSettings;
use super::properties::Properties;
use super::providers::{Environment, Providers, Resolution};
use super::security::{ConnectionSettings, build_connection, is_connection_key};
use super::setting::{Setting, java_parse_boolean, parse_bool, parse_i64, parse_positive};
use super::settings::{
    FilterSettings, FlowConfig, GroupOffsetsMode, MAX_TRANSLATION_MAX_SYNCS, MembershipConfig,
    OffsetTranslation,
};
use super::spelling::UnknownSpelling;
use crate::core::{OffsetSyncsLocation, ReplicationPolicy};

/// The package of MirrorMaker 2's classes, which class names may leave out.
const MIRROR_PACKAGE: &str = "org.apache.kafka.connect.mirror.";

/// Strips a known package from a class name, accepting the simple name too.
fn simple_class_name<'v>(value: &'v str, package: &str) -> &'v str {
    value.strip_prefix(package).unwrap_or(value)
}

pub(super) struct Lookup<'a> {
    pub(super) props: &'a Properties,
    pub(super) providers: Providers<'a>,
    /// Where every problem found is recorded.
    pub(super) checker: &'a Checker,
    /// Every key a setting was taken from, so the keys read by nothing here
    /// can be listed afterwards.
    read: RefCell<BTreeSet<String>>,
}

/// The clients of a cluster that mm2-checkpoint replaces with one connection.
const SOURCE_CLIENTS: &[&str] = &["consumer", "admin"];
const TARGET_CLIENTS: &[&str] = &["consumer", "producer", "admin"];

impl<'a> Lookup<'a> {
    /// Looks keys up in `props`, resolving references with `providers` and
    /// recording problems in `checker`.
    pub(super) fn new(
        props: &'a Properties,
        providers: Providers<'a>,
        checker: &'a Checker,
    ) -> Self {
        Lookup {
            props,
            providers,
            checker,
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

    /// The setting stored under exactly `key`, with providers resolved (a
    /// reference that fails is recorded and leaves the value unknown).
    pub(super) fn setting(&self, key: &str) -> Option<Setting> {
        let raw = self.raw(key)?;
        let line = self.props.line(key);
        let origin = self.props.written_as(key);
        let (value, resolution) = self.providers.resolve(origin, line, raw, self.checker);
        Some(Setting {
            value,
            origin: origin.to_string(),
            line,
            resolution,
        })
    }

    /// `parse` of setting `s`, or [`Unknown`] if its value is unknown or
    /// `parse` fails (the error is recorded).
    pub(super) fn parse<T>(
        &self,
        s: &Setting,
        parse: impl FnOnce(&Setting) -> Result<T, ConfigError>,
    ) -> Result<T, Unknown> {
        s.text()?;
        self.checker.check(parse(s))
    }

    /// `parse` of the setting `get` finds for `key`, else of `key`'s default
    /// from the table (parsed as if written, so that the table is the one
    /// place it is stated); an error or an unknown value is recorded as by
    /// [`parse`](Self::parse).
    pub(super) fn value_of<T>(
        &self,
        get: &dyn Fn(&str) -> Option<Setting>,
        key: &Key,
        parse: impl FnOnce(&Setting) -> Result<T, ConfigError>,
    ) -> Result<T, Unknown> {
        match get(key.name) {
            Some(s) => self.parse(&s, parse),
            None => self.parse(&self.checker.check(default_setting(key))?, parse),
        }
    }

    /// The first of `keys` present in the file.
    fn first(&self, keys: &[String]) -> Option<Setting> {
        keys.iter()
            .find(|k| self.props.contains(k))
            .and_then(|k| self.setting(k))
    }

    /// A connector-level key of `flow`: `S->T.<key>`, else top-level `<key>`.
    pub(super) fn flow_key(&self, flow: &str, key: &str) -> Option<Setting> {
        self.first(&[format!("{flow}.{key}"), key.to_string()])
    }

    pub(super) fn clusters(&self) -> Result<Vec<String>, Unknown> {
        let setting = self.setting("clusters").ok_or_else(|| {
            self.checker.error(ConfigError::for_key(
                "clusters",
                "is required: list the cluster aliases, e.g. `clusters = A, B`",
            ))
        })?;
        let mut out: Vec<String> = Vec::new();
        for alias in setting.text()?.split(',').map(str::trim) {
            if alias.is_empty() {
                return Err(self.checker.error(setting.error("contains an empty alias")));
            }
            if !out.iter().any(|a| a == alias) {
                out.push(alias.to_string());
            }
        }
        if out.len() < 2 {
            return Err(self
                .checker
                .error(setting.error("must list at least two cluster aliases")));
        }
        Ok(out)
    }

    /// The process-wide metrics settings, read from the top level of the
    /// file only, each key checked on its own.
    pub(super) fn metrics_settings(&self) -> Result<MetricsSettings, Unknown> {
        let top_level = |key: &str| self.setting(key);
        let granularity = &keys::LATENCY_GRANULARITY;
        let latency_granularity = self.value_of(&top_level, granularity, |s| {
            s.value.trim().parse().map_err(|e: UnknownSpelling| {
                s.error(format!(
                    "`{}` is not a granularity; use {}",
                    e.given, e.expected
                ))
            })
        });
        let mm2_names = self.value_of(&top_level, &keys::MM2_NAMES, parse_bool);
        let mm2_name_formats = self.value_of(&top_level, &keys::MM2_NAME_FORMATS, |s| {
            s.value.trim().parse().map_err(|e: UnknownSpelling| {
                s.error(format!(
                    "`{}` is not a list of name formats; use {}",
                    e.given, e.expected
                ))
            })
        });
        let status_interval =
            self.value_of(&top_level, &keys::STATUS_INTERVAL, |s| {
                match parse_i64(s)? {
                    0 => Ok(None),
                    v if v > 0 => Ok(Some(std::time::Duration::from_millis(v.unsigned_abs()))),
                    v => Err(s.error(format!(
                        "must be 0 (off) or a number of milliseconds, got {v}"
                    ))),
                }
            });
        Ok(MetricsSettings {
            latency_granularity: latency_granularity?,
            mm2_names: mm2_names?,
            mm2_name_formats: mm2_name_formats?,
            status_interval: status_interval?,
        })
    }

    /// MM2's rule: a herder exists for `S->T` if `S->T.enabled` is `true`
    /// (any case) or heartbeats are enabled for the pair; the flow's connectors
    /// are enabled if its `enabled` (flow key, else top-level) is true.
    pub(super) fn flow_enabled(
        &self,
        flow: &str,
        global_heartbeats: bool,
    ) -> Result<bool, Unknown> {
        let pair_flag = self
            .raw(&format!("{flow}.enabled"))
            .is_some_and(java_parse_boolean);
        let heartbeats = self
            .raw(&format!("{flow}.emit.heartbeats.enabled"))
            .map_or(global_heartbeats, java_parse_boolean);
        if !pair_flag && !heartbeats {
            return Ok(false);
        }
        let Some(setting) = self.flow_key(flow, "enabled") else {
            return Ok(false);
        };
        let enabled = self.parse(&setting, parse_bool)?;
        if enabled && setting.origin == "enabled" {
            self.checker.warn(ConfigWarning::new(
                Some(setting.origin.clone()),
                setting.line,
                format!(
                    "flow {flow} is enabled by the top-level `enabled=true`, which (as in MM2) \
                     enables every pair of clusters; set `{flow}.enabled=false` to exclude it"
                ),
            ));
        }
        Ok(enabled)
    }

    /// The flow's `emit.checkpoints.enabled` (flow key, else top-level), if
    /// set: `Some(false)` hands the flow's checkpointing from MM2 to
    /// mm2-checkpoint (docs/configuration.md, "Sharing mm2.properties with
    /// MirrorMaker 2").
    pub(super) fn emit_checkpoints(&self, flow: &str) -> Result<Option<(bool, Setting)>, Unknown> {
        match self.flow_key(flow, keys::EMIT_CHECKPOINTS_ENABLED.name) {
            None => Ok(None),
            Some(s) => Ok(Some((self.parse(&s, parse_bool)?, s))),
        }
    }

    /// Every setting of `flow` (source `source`, target `target`), checking
    /// each independently: every problem is recorded, and the flow is
    /// [`Unknown`] if any was found.
    pub(super) fn flow(
        &self,
        flow: &str,
        source: &str,
        target: &str,
        env: &dyn Environment,
    ) -> Result<FlowConfig, Unknown> {
        let origins = RefCell::new(BTreeMap::new());
        let get = |key: &str| -> Option<Setting> {
            let s = self.flow_key(flow, key);
            origins.borrow_mut().insert(
                key.to_string(),
                s.as_ref()
                    .map_or_else(|| "default".to_string(), Setting::describe_origin),
            );
            s
        };

        // `emit.checkpoints.enabled` decided whether the flow is ours before it
        // was built (`Lookup::checkpointing`); it is listed with its origin.
        get(keys::EMIT_CHECKPOINTS_ENABLED.name);
        let offset_syncs =
            self.value_of(
                &get,
                &keys::EMIT_OFFSET_SYNCS_ENABLED,
                |s| match parse_bool(s)? {
                    true => Ok(()),
                    false => Err(s.error(format!(
                        "is false, so flow {flow} has no offset syncs to translate with (MM2 \
                     rejects this connector config too); let MM2's source connector write \
                     offset syncs, or disable the flow with `{flow}.enabled=false`"
                    ))),
                },
            );
        let boolean = |key: &Key| self.value_of(&get, key, parse_bool);
        let positive = |key: &Key| self.value_of(&get, key, parse_positive);
        let seconds = |key: &Key| positive(key).map(Duration::from_secs);
        let millis = |key: &Key| positive(key).map(Duration::from_millis);

        let emit_checkpoints_interval = seconds(&keys::EMIT_CHECKPOINTS_INTERVAL);
        let sync_group_offsets_enabled = boolean(&keys::SYNC_GROUP_OFFSETS_ENABLED);
        let sync_group_offsets_interval = seconds(&keys::SYNC_GROUP_OFFSETS_INTERVAL);
        let refresh_groups_enabled = boolean(&keys::REFRESH_GROUPS_ENABLED);
        let refresh_groups_interval = seconds(&keys::REFRESH_GROUPS_INTERVAL);
        let consumer_poll_timeout = millis(&keys::CONSUMER_POLL_TIMEOUT);
        let admin_timeout = millis(&keys::ADMIN_TIMEOUT);
        let offset_lag_max = self.value_of(&get, &keys::OFFSET_LAG_MAX, parse_i64);
        let group_offsets_mode = self.value_of(
            &get,
            &keys::GROUP_OFFSETS_MODE,
            parse_word::<GroupOffsetsMode>,
        );
        let follow_coalesce = millis(&keys::FOLLOW_COALESCE);
        let offset_translation = self.value_of(
            &get,
            &keys::OFFSET_TRANSLATION,
            parse_word::<OffsetTranslation>,
        );
        let translation_max_syncs =
            self.value_of(
                &get,
                &keys::TRANSLATION_MAX_SYNCS,
                |s| match usize::try_from(parse_positive(s)?) {
                    Ok(v) if v <= MAX_TRANSLATION_MAX_SYNCS => Ok(v),
                    _ => Err(s.error(format!(
                        "must be at most {} (8 bytes per sync and partition)",
                        MAX_TRANSLATION_MAX_SYNCS
                    ))),
                },
            );
        let content_search = self.value_of(&get, &keys::CONTENT_SEARCH, |s| match parse_bool(s)? {
            true if matches!(offset_translation, Ok(OffsetTranslation::Mm2)) => {
                Err(s.error(format!(
                    "content search needs `{} = precise`",
                    keys::OFFSET_TRANSLATION.name
                )))
            }
            v => Ok(v),
        });
        let reverse_checkpoints_enabled = boolean(&keys::REVERSE_CHECKPOINTS_ENABLED);
        let reverse_checkpoints_interval = millis(&keys::REVERSE_CHECKPOINTS_INTERVAL);
        let membership = self.membership(&get, &boolean, &millis, source, target);
        let checkpoints_topic_replication_factor = self.value_of(
            &get,
            &keys::CHECKPOINTS_TOPIC_REPLICATION_FACTOR,
            |s| match parse_i64(s)? {
                v @ (-1 | 1..=32767) => Ok(v as i16),
                _ => Err(s.error("must be -1 (broker default) or between 1 and 32767")),
            },
        );
        let offset_syncs_topic_location =
            self.value_of(&get, &keys::OFFSET_SYNCS_TOPIC_LOCATION, |s| {
                s.value.trim().parse::<OffsetSyncsLocation>().map_err(|_| {
                    s.error(format!(
                        "`{}` is not valid; use `source` or `target` (lower case)",
                        s.value.trim()
                    ))
                })
            });

        // The deprecated `topics.blacklist`/`groups.blacklist` were removed in
        // Kafka 4.0 and MM2 4.x ignores them; so do we (known_keys warns).
        let filter = |key: &Key| -> Result<String, Unknown> {
            self.value_of(&get, key, |s| Ok(s.value.clone()))
        };
        let (topics, topics_exclude, groups, groups_exclude) = (
            filter(&keys::TOPICS),
            filter(&keys::TOPICS_EXCLUDE),
            filter(&keys::GROUPS),
            filter(&keys::GROUPS_EXCLUDE),
        );

        let mut classes = Ok(());
        for key in [&keys::TOPIC_FILTER_CLASS, &keys::GROUP_FILTER_CLASS] {
            let default = key.default_value();
            let checked = self.value_of(&get, key, |s| {
                if Some(simple_class_name(s.value.trim(), MIRROR_PACKAGE)) == default {
                    return Ok(());
                }
                Err(s.error(format!(
                    "custom filter classes are not supported by mm2-checkpoint; remove the \
                     key to use {MIRROR_PACKAGE}{} and express the filter with \
                     topics/groups include and exclude lists",
                    default.unwrap_or_default()
                )))
            });
            classes = classes.and(checked);
        }
        let forwarding = &keys::FORWARDING_ADMIN_CLASS;
        let checked = self.value_of(&get, forwarding, |s| {
            let name = simple_class_name(s.value.trim(), "org.apache.kafka.clients.admin.");
            if Some(name) == forwarding.default_value() {
                return Ok(());
            }
            Err(s.error(
                "custom forwarding admin classes are not supported by mm2-checkpoint; remove \
                 the key",
            ))
        });
        classes = classes.and(checked);

        let replication_policy = self.replication_policy(&get, source, target);

        let source_settings = self.connection_settings(flow, source, "source", SOURCE_CLIENTS);
        let target_settings = self.connection_settings(flow, target, "target", TARGET_CLIENTS);
        for (role, settings) in [("source", &source_settings), ("target", &target_settings)] {
            for (k, s) in settings {
                origins
                    .borrow_mut()
                    .insert(format!("{role}.{k}"), s.describe_origin());
            }
        }
        let source_conn = build_connection(source, &source_settings, env, self.checker);
        let target_conn = build_connection(target, &target_settings, env, self.checker);

        offset_syncs?;
        classes?;
        let (policy, source_alias, target_alias) = replication_policy?;
        Ok(FlowConfig {
            source: source_conn?,
            target: target_conn?,
            source_alias,
            target_alias,
            emit_checkpoints_interval: emit_checkpoints_interval?,
            sync_group_offsets_enabled: sync_group_offsets_enabled?,
            sync_group_offsets_interval: sync_group_offsets_interval?,
            refresh_groups_enabled: refresh_groups_enabled?,
            refresh_groups_interval: refresh_groups_interval?,
            filters: FilterSettings {
                topics: topics?,
                topics_exclude: topics_exclude?,
                groups: groups?,
                groups_exclude: groups_exclude?,
            },
            replication_policy: policy,
            offset_syncs_topic_location: offset_syncs_topic_location?,
            checkpoints_topic_replication_factor: checkpoints_topic_replication_factor?,
            consumer_poll_timeout: consumer_poll_timeout?,
            admin_timeout: admin_timeout?,
            offset_lag_max: offset_lag_max?,
            group_offsets_mode: group_offsets_mode?,
            follow_coalesce: follow_coalesce?,
            offset_translation: offset_translation?,
            translation_max_syncs: translation_max_syncs?,
            content_search: content_search?,
            reverse_checkpoints_enabled: reverse_checkpoints_enabled?,
            reverse_checkpoints_interval: reverse_checkpoints_interval?,
            membership: membership?,
            origins: origins.into_inner(),
        })
    }

    /// The flow's `mm2-checkpoint.membership.*` settings; `None` when off.
    /// The other keys are read (and checked) whether or not it is on.
    fn membership(
        &self,
        get: &dyn Fn(&str) -> Option<Setting>,
        boolean: &dyn Fn(&Key) -> Result<bool, Unknown>,
        millis: &dyn Fn(&Key) -> Result<Duration, Unknown>,
        source: &str,
        target: &str,
    ) -> Result<Option<MembershipConfig>, Unknown> {
        let enabled = boolean(&keys::MEMBERSHIP_ENABLED);
        // The group's default depends on the flow and the instance id has
        // none: a name is `None` when unset.
        let name = |key: &Key| -> Result<Option<String>, Unknown> {
            match get(key.name) {
                None => Ok(None),
                Some(s) => {
                    let text = s.text()?.trim().to_string();
                    // Kafka's limit for group ids and transactional ids alike
                    // is the 16-bit string length of the protocol.
                    if text.is_empty() || text.len() > 249 {
                        return self.checker.check(Err(s.error(
                            "must be between 1 and 249 characters (a Kafka group and transactional id)",
                        )));
                    }
                    Ok(Some(text))
                }
            }
        };
        let group = name(&keys::MEMBERSHIP_GROUP);
        let instance_id = name(&keys::MEMBERSHIP_INSTANCE);
        let session_timeout = millis(&keys::MEMBERSHIP_SESSION_TIMEOUT);
        let heartbeat_interval = millis(&keys::MEMBERSHIP_HEARTBEAT);
        let (enabled, group, instance_id, session_timeout, heartbeat_interval) = (
            enabled?,
            group?,
            instance_id?,
            session_timeout?,
            heartbeat_interval?,
        );
        if heartbeat_interval.saturating_mul(2) >= session_timeout {
            let s = get(keys::MEMBERSHIP_HEARTBEAT.name)
                .or_else(|| get(keys::MEMBERSHIP_SESSION_TIMEOUT.name));
            let message = format!(
                "the heartbeat interval ({} ms) must be under half the session timeout ({} ms): \
                 an owner renews its right to write with each heartbeat",
                heartbeat_interval.as_millis(),
                session_timeout.as_millis()
            );
            return self.checker.check(Err(match s {
                Some(s) => s.error(message),
                None => ConfigError::new(message),
            }));
        }
        Ok(enabled.then(|| MembershipConfig {
            group: group.unwrap_or_else(|| FlowConfig::default_membership_group(source, target)),
            instance_id,
            session_timeout,
            heartbeat_interval,
        }))
    }

    /// The flow's replication policy and its (possibly overridden) source and
    /// target aliases; `get` looks a connector key of the flow up.
    fn replication_policy(
        &self,
        get: &dyn Fn(&str) -> Option<Setting>,
        source: &str,
        target: &str,
    ) -> Result<(ReplicationPolicy, String, String), Unknown> {
        let class = get(keys::REPLICATION_POLICY_CLASS.name);
        let class_checked = match &class {
            Some(s) => self.parse(s, |s| {
                let name = simple_class_name(s.value.trim(), MIRROR_PACKAGE);
                match ReplicationPolicy::from_class(Some(name), None, None, None) {
                    Ok(_) => Ok(()),
                    Err(_) => Err(s.error(format!(
                        "replication policy `{name}` is not supported; only \
                         {MIRROR_PACKAGE}DefaultReplicationPolicy and \
                         {MIRROR_PACKAGE}IdentityReplicationPolicy are"
                    ))),
                }
            }),
            None => Ok(()),
        };
        let internal_flag = get(keys::INTERNAL_TOPIC_SEPARATOR_ENABLED.name);
        let separator = get(keys::REPLICATION_POLICY_SEPARATOR.name);
        // The internal-separator flag is only read (and checked) when a separator
        // is set, as MM2 does (docs/behaviour.md B.1).
        let internal_enabled = match (&separator, &internal_flag) {
            (Some(_), Some(flag)) => self.parse(flag, parse_bool).map(Some),
            _ => Ok(None),
        };
        // MM2 puts the flow's aliases into each connector's config only if
        // absent, so a top-level `source.cluster.alias` renames every flow's
        // source and `S->T.source.cluster.alias` one flow's (docs/behaviour.md F.2).
        let alias = |key: &Key, default: &str| -> Result<String, Unknown> {
            get(key.name).map_or_else(|| Ok(default.to_string()), |s| s.text().map(str::to_string))
        };
        let source_alias = alias(&keys::SOURCE_CLUSTER_ALIAS, source);
        let target_alias = alias(&keys::TARGET_CLUSTER_ALIAS, target);
        class_checked?;
        let separator = separator.as_ref().map(Setting::text).transpose();
        let class = class.as_ref().map(Setting::text).transpose()?;
        let (internal_enabled, source_alias, target_alias) =
            (internal_enabled?, source_alias?, target_alias?);
        let policy =
            ReplicationPolicy::from_class(class, separator?, internal_enabled, Some(&source_alias))
                .map_err(|e| {
                    self.checker.error(ConfigError::for_key(
                        keys::REPLICATION_POLICY_CLASS.name,
                        e.to_string(),
                    ))
                })?;
        Ok((policy, source_alias, target_alias))
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
    /// The clients must agree, because mm2-checkpoint opens one connection: a
    /// key they disagree on is an error, and stays in the result with an
    /// unknown value (so that nothing reports it missing as well).
    fn connection_settings(
        &self,
        flow: &str,
        alias: &str,
        role: &str,
        clients: &[&str],
    ) -> ConnectionSettings {
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
                chosen.push((client, self.first(&names)));
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
                let written = format!("{alias}.{key}");
                self.checker.error(ConfigError::for_key(
                    written.clone(),
                    format!(
                        "cluster `{alias}` ({role} of flow {flow}) has conflicting `{key}` \
                         settings for its clients ({}); mm2-checkpoint uses one connection per \
                         cluster, so set it once as `{alias}.{key}`",
                        detail.join(", ")
                    ),
                ));
                let first = chosen.into_iter().find_map(|(_, s)| s);
                let (origin, line) = first.map_or((written, None), |s| (s.origin, s.line));
                merged.insert(
                    key,
                    Setting {
                        value: String::new(),
                        origin,
                        line,
                        resolution: Resolution::Failed,
                    },
                );
                continue;
            }
            if let Some((_, Some(setting))) = chosen.into_iter().next() {
                merged.insert(key, setting);
            }
        }
        merged
    }
}

/// A setting whose value is one of an enum's spellings ([`FromStr`](std::str::FromStr)).
fn parse_word<T: std::str::FromStr<Err = UnknownSpelling>>(s: &Setting) -> Result<T, ConfigError> {
    s.value
        .trim()
        .parse::<T>()
        .map_err(|e| s.error(e.to_string()))
}

/// `key`'s default from the table as a setting written under its name, or
/// an error if the table gives it no value (the caller's mistake: such a key
/// is read without a default).
fn default_setting(key: &Key) -> Result<Setting, ConfigError> {
    match key.default {
        Default::Value(value) => Ok(Setting {
            value: value.to_string(),
            origin: key.name.to_string(),
            line: None,
            resolution: Resolution::Resolved,
        }),
        Default::Derived(_) | Default::Unset => Err(ConfigError::for_key(
            key.name,
            "has no default value of its own (an mm2-checkpoint defect)",
        )),
    }
}
