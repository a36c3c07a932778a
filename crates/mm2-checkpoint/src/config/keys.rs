//! The table of every checkpoint key the daemon reads by name: the per-flow
//! connector keys and the process-wide keys of ours.
//!
//! Each [`Key`] says once what is known about a key: its name, its default,
//! the values it accepts, whether MirrorMaker 2 knows it, a one-line
//! description and how `validate` shows its value. The reader (`lookup.rs`,
//! `metrics.rs`) takes names and defaults from here, `validate`'s report
//! (`render.rs`) takes its rows and their order from here, the unknown-key
//! check (`known_keys.rs`) takes our own keys from here, and a unit test holds
//! docs/configuration.md's key tables equal to this one.
//!
//! The connection keys (`bootstrap.servers`, `ssl.*`, `sasl.*`, ...) are not
//! here: they are Kafka's client keys, read per cluster by `security`.

use super::settings::{
    FlowConfig, GroupOffsetsMode, LatencyGranularity, MetricsSettings, OffsetTranslation,
};
use crate::core::OffsetSyncsLocation;
use crate::core::filter::{
    DEFAULT_GROUPS, DEFAULT_GROUPS_EXCLUDE, DEFAULT_TOPICS, DEFAULT_TOPICS_EXCLUDE,
};

/// Who defines a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// MirrorMaker 2 reads it too; it means what it means there.
    Mm2,
    /// mm2-checkpoint's own; MirrorMaker 2 ignores it.
    Ours,
}

/// Where a key is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Per flow: `S->T.<key>`, else the top-level `<key>`.
    Flow,
    /// Once for the process, at the top level only.
    Process,
}

/// A key's value when the file does not set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Default {
    /// This value, as it would be written in the file; the reader parses it
    /// like a written one.
    Value(&'static str),
    /// A value derived from the flow, described in Markdown.
    Derived(&'static str),
    /// No value.
    Unset,
}

impl Default {
    /// The default as docs/configuration.md's tables show it.
    pub fn describe(self) -> String {
        match self {
            Default::Value(v) => format!("`{v}`"),
            Default::Derived(text) => text.to_string(),
            Default::Unset => "none".to_string(),
        }
    }
}

/// The values a key accepts; the reader's parser for the key is the one of
/// this kind (a unit test holds them to each other).
#[derive(Clone, Copy, Debug)]
pub enum Accepted {
    /// `true` or `false`, in any case.
    Boolean,
    /// A whole number of at least 1.
    Positive,
    /// Any whole number.
    Integer,
    /// One of an enum's spellings, exactly.
    Words(fn() -> Vec<&'static str>),
    /// Anything else, described in Markdown.
    Described(&'static str),
}

impl Accepted {
    /// The accepted values as docs/configuration.md's tables show them.
    pub fn describe(self) -> String {
        match self {
            Accepted::Boolean => "boolean".to_string(),
            Accepted::Positive => "integer ≥ 1".to_string(),
            Accepted::Integer => "integer".to_string(),
            Accepted::Words(words) => words()
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", "),
            Accepted::Described(text) => text.to_string(),
        }
    }
}

/// How `validate` shows a key's effective value.
#[derive(Clone, Copy)]
pub enum Shown {
    /// Not a row of its own: the key only decides or checks something (whose
    /// outcome `validate` shows elsewhere, or which can only have one value).
    Not,
    /// A row of the flow's settings, `name = value    # origin`.
    Flow(fn(&FlowConfig) -> String),
    /// A row derived from the key and others, under a label of its own and
    /// without an origin.
    FlowDerived(&'static str, fn(&FlowConfig) -> String),
    /// A row of the process-wide settings, `name = value`.
    Process(fn(&MetricsSettings) -> String),
}

/// One key of the table.
#[derive(Clone, Copy)]
pub struct Key {
    /// The key as written after `S->T.` (or at the top level).
    pub name: &'static str,
    /// Its value when unset.
    pub default: Default,
    /// The values it accepts.
    pub accepted: Accepted,
    /// Whether MirrorMaker 2 knows it.
    pub owner: Owner,
    /// Whether it is read per flow or once.
    pub scope: Scope,
    /// What it does, in one line.
    pub doc: &'static str,
    /// How `validate` shows its value.
    pub shown: Shown,
}

impl Key {
    /// The default value as written in a file, when the key has one of its own.
    pub fn default_value(&self) -> Option<&'static str> {
        match self.default {
            Default::Value(v) => Some(v),
            Default::Derived(_) | Default::Unset => None,
        }
    }
}

fn seconds(d: std::time::Duration) -> String {
    d.as_secs().to_string()
}

fn millis(d: std::time::Duration) -> String {
    d.as_millis().to_string()
}

/// Declares every key as a constant of its own and [`ALL`] in this order,
/// which is the order of `validate`'s rows and of the docs' tables.
macro_rules! keys {
    ($($(#[$doc:meta])* $name:ident = $key:expr;)*) => {
        $($(#[$doc])* pub const $name: Key = $key;)*
        /// Every key, in `validate`'s and the docs' order.
        pub const ALL: &[Key] = &[$($name),*];
    };
}

keys! {
    /// Hands a flow from MM2's checkpointing to ours when false.
    EMIT_CHECKPOINTS_ENABLED = Key {
        name: "emit.checkpoints.enabled",
        default: Default::Value("true"),
        accepted: Accepted::Boolean,
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "false hands the flow's checkpointing from MirrorMaker 2 to mm2-checkpoint",
        shown: Shown::Not,
    };
    /// The time between emission rounds.
    EMIT_CHECKPOINTS_INTERVAL = Key {
        name: "emit.checkpoints.interval.seconds",
        default: Default::Value("60"),
        accepted: Accepted::Positive,
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the time between emission rounds",
        shown: Shown::Flow(|f| seconds(f.emit_checkpoints_interval)),
    };
    /// Whether translated offsets are written into the target groups.
    SYNC_GROUP_OFFSETS_ENABLED = Key {
        name: "sync.group.offsets.enabled",
        default: Default::Value("false"),
        accepted: Accepted::Boolean,
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "write translated offsets into the target groups",
        shown: Shown::Flow(|f| f.sync_group_offsets_enabled.to_string()),
    };
    /// The time between group offset syncs.
    SYNC_GROUP_OFFSETS_INTERVAL = Key {
        name: "sync.group.offsets.interval.seconds",
        default: Default::Value("60"),
        accepted: Accepted::Positive,
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the time between group offset syncs",
        shown: Shown::Flow(|f| seconds(f.sync_group_offsets_interval)),
    };
    /// Whether the groups are discovered again periodically.
    REFRESH_GROUPS_ENABLED = Key {
        name: "refresh.groups.enabled",
        default: Default::Value("true"),
        accepted: Accepted::Boolean,
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "discover the groups again periodically",
        shown: Shown::Flow(|f| f.refresh_groups_enabled.to_string()),
    };
    /// The time between group discoveries.
    REFRESH_GROUPS_INTERVAL = Key {
        name: "refresh.groups.interval.seconds",
        default: Default::Value("600"),
        accepted: Accepted::Positive,
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the time between group discoveries",
        shown: Shown::Flow(|f| seconds(f.refresh_groups_interval)),
    };
    /// The topics checkpointed.
    TOPICS = Key {
        name: "topics",
        default: Default::Value(DEFAULT_TOPICS),
        accepted: Accepted::Described("regex list"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the topics checkpointed",
        shown: Shown::Flow(|f| f.filters.topics.clone()),
    };
    /// The topics left out.
    TOPICS_EXCLUDE = Key {
        name: "topics.exclude",
        default: Default::Value(DEFAULT_TOPICS_EXCLUDE),
        accepted: Accepted::Described("regex list"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the topics left out",
        shown: Shown::Flow(|f| f.filters.topics_exclude.clone()),
    };
    /// The groups checkpointed.
    GROUPS = Key {
        name: "groups",
        default: Default::Value(DEFAULT_GROUPS),
        accepted: Accepted::Described("regex list"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the groups checkpointed",
        shown: Shown::Flow(|f| f.filters.groups.clone()),
    };
    /// The groups left out.
    GROUPS_EXCLUDE = Key {
        name: "groups.exclude",
        default: Default::Value(DEFAULT_GROUPS_EXCLUDE),
        accepted: Accepted::Described("regex list"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the groups left out",
        shown: Shown::Flow(|f| f.filters.groups_exclude.clone()),
    };
    /// The source alias in topic names.
    SOURCE_CLUSTER_ALIAS = Key {
        name: "source.cluster.alias",
        default: Default::Derived("the flow's source `S`"),
        accepted: Accepted::Described("any string, empty too"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the source alias in topic names",
        shown: Shown::Flow(|f| format!("{:?}", f.source_alias)),
    };
    /// The target alias in topic names.
    TARGET_CLUSTER_ALIAS = Key {
        name: "target.cluster.alias",
        default: Default::Derived("the flow's target `T`"),
        accepted: Accepted::Described("any string, empty too"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the target alias in topic names",
        shown: Shown::Flow(|f| format!("{:?}", f.target_alias)),
    };
    /// The replication policy naming the flow's topics.
    REPLICATION_POLICY_CLASS = Key {
        name: "replication.policy.class",
        default: Default::Value("DefaultReplicationPolicy"),
        accepted: Accepted::Described("`DefaultReplicationPolicy`, `IdentityReplicationPolicy`"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the replication policy naming the flow's topics",
        shown: Shown::Flow(|f| f.replication_policy.class_name().to_string()),
    };
    /// The separator between an alias and a topic.
    REPLICATION_POLICY_SEPARATOR = Key {
        name: "replication.policy.separator",
        default: Default::Value("."),
        accepted: Accepted::Described("any string, empty too"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the separator between an alias and a topic",
        shown: Shown::Flow(|f| format!("{:?}", f.replication_policy.separator())),
    };
    /// Whether internal topic names use the separator too.
    INTERNAL_TOPIC_SEPARATOR_ENABLED = Key {
        name: "replication.policy.internal.topic.separator.enabled",
        default: Default::Value("true"),
        accepted: Accepted::Boolean,
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "whether internal topic names use the separator too",
        shown: Shown::FlowDerived("internal topic separator", |f| {
            format!("{:?}", f.replication_policy.internal_separator())
        }),
    };
    /// The cluster of the offset-syncs topic.
    OFFSET_SYNCS_TOPIC_LOCATION = Key {
        name: "offset-syncs.topic.location",
        default: Default::Value("source"),
        accepted: Accepted::Words(|| {
            OffsetSyncsLocation::ALL.map(OffsetSyncsLocation::as_str).to_vec()
        }),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the cluster of the offset-syncs topic",
        shown: Shown::Flow(|f| f.offset_syncs_topic_location.as_str().to_string()),
    };
    /// The replication factor of the topics created on the target.
    CHECKPOINTS_TOPIC_REPLICATION_FACTOR = Key {
        name: "checkpoints.topic.replication.factor",
        default: Default::Value("3"),
        accepted: Accepted::Described("`-1` (broker default) or 1–32767"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the replication factor of the topics created on the target",
        shown: Shown::Flow(|f| f.checkpoints_topic_replication_factor.to_string()),
    };
    /// How often new offset syncs are read.
    CONSUMER_POLL_TIMEOUT = Key {
        name: "consumer.poll.timeout.ms",
        default: Default::Value("1000"),
        accepted: Accepted::Positive,
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "how often new offset syncs are read",
        shown: Shown::Flow(|f| millis(f.consumer_poll_timeout)),
    };
    /// The bound of each request.
    ADMIN_TIMEOUT = Key {
        name: "admin.timeout.ms",
        default: Default::Value("60000"),
        accepted: Accepted::Positive,
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the bound of each request, and of startup with --once",
        shown: Shown::Flow(|f| millis(f.admin_timeout)),
    };
    /// Must stay true: offset syncs are what is translated with.
    EMIT_OFFSET_SYNCS_ENABLED = Key {
        name: "emit.offset-syncs.enabled",
        default: Default::Value("true"),
        accepted: Accepted::Described("`true`"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "must stay true: offset syncs are what offsets are translated with",
        shown: Shown::Not,
    };
    /// The spacing of offset syncs (the source side's setting).
    OFFSET_LAG_MAX = Key {
        name: "offset.lag.max",
        default: Default::Value("100"),
        accepted: Accepted::Integer,
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "the spacing of offset syncs; informational, the source side uses it",
        shown: Shown::Flow(|f| f.offset_lag_max.to_string()),
    };
    /// Only MM2's default topic filter.
    TOPIC_FILTER_CLASS = Key {
        name: "topic.filter.class",
        default: Default::Value("DefaultTopicFilter"),
        accepted: Accepted::Described("only the default"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "only MirrorMaker 2's default topic filter",
        shown: Shown::Not,
    };
    /// Only MM2's default group filter.
    GROUP_FILTER_CLASS = Key {
        name: "group.filter.class",
        default: Default::Value("DefaultGroupFilter"),
        accepted: Accepted::Described("only the default"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "only MirrorMaker 2's default group filter",
        shown: Shown::Not,
    };
    /// Only Kafka's forwarding admin.
    FORWARDING_ADMIN_CLASS = Key {
        name: "forwarding.admin.class",
        default: Default::Value("ForwardingAdmin"),
        accepted: Accepted::Described("only the default"),
        owner: Owner::Mm2,
        scope: Scope::Flow,
        doc: "only Kafka's forwarding admin",
        shown: Shown::Not,
    };
    /// How the source groups' commits are learnt.
    GROUP_OFFSETS_MODE = Key {
        name: "mm2-checkpoint.group.offsets.mode",
        default: Default::Value("auto"),
        accepted: Accepted::Words(|| GroupOffsetsMode::ALL.map(GroupOffsetsMode::as_str).to_vec()),
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "how the source groups' commits are learnt",
        shown: Shown::Flow(|f| f.group_offsets_mode.as_str().to_string()),
    };
    /// The commit follower's coalescing window.
    FOLLOW_COALESCE = Key {
        name: "mm2-checkpoint.group.offsets.coalesce.ms",
        default: Default::Value("200"),
        accepted: Accepted::Positive,
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "how long the commit follower gathers commits before checkpointing them",
        shown: Shown::Flow(|f| millis(f.follow_coalesce)),
    };
    /// How precisely offsets are translated.
    OFFSET_TRANSLATION = Key {
        name: "mm2-checkpoint.offset.translation",
        default: Default::Value("mm2"),
        accepted: Accepted::Words(|| {
            OffsetTranslation::ALL.map(OffsetTranslation::as_str).to_vec()
        }),
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "how precisely offsets are translated",
        shown: Shown::Flow(|f| f.offset_translation.as_str().to_string()),
    };
    /// The precise translation's budget: offset syncs kept per source partition.
    TRANSLATION_MAX_SYNCS = Key {
        name: "mm2-checkpoint.offset.translation.max.syncs.per.partition",
        default: Default::Value("1000"),
        accepted: Accepted::Described("integer 1–100,000,000"),
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "the offset syncs precise translation keeps per source partition",
        shown: Shown::Flow(|f| match f.offset_translation {
            OffsetTranslation::Precise => f.translation_max_syncs.to_string(),
            OffsetTranslation::Mm2 => {
                format!(
                    "{} (cutover and status only: translation is mm2)",
                    f.translation_max_syncs
                )
            }
        }),
    };
    /// The content search inside the sync bracket.
    CONTENT_SEARCH = Key {
        name: "mm2-checkpoint.offset.translation.content.search",
        default: Default::Value("false"),
        accepted: Accepted::Boolean,
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "find a group's exact position inside the sync bracket by comparing records",
        shown: Shown::Flow(|f| f.content_search.to_string()),
    };
    /// Reverse checkpoints (and group sync into the source) for failing back.
    REVERSE_CHECKPOINTS_ENABLED = Key {
        name: "mm2-checkpoint.emit.reverse.checkpoints.enabled",
        default: Default::Value("false"),
        accepted: Accepted::Boolean,
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "also checkpoint the groups committed on the target back to the source, for failing back",
        shown: Shown::Flow(|f| f.reverse_checkpoints_enabled.to_string()),
    };
    /// The time between reverse rounds.
    REVERSE_CHECKPOINTS_INTERVAL = Key {
        name: "mm2-checkpoint.emit.reverse.checkpoints.interval.ms",
        default: Default::Value("1000"),
        accepted: Accepted::Positive,
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "the time between reverse rounds",
        shown: Shown::Flow(|f| {
            if f.reverse_checkpoints_enabled {
                millis(f.reverse_checkpoints_interval)
            } else {
                format!("{} (unused: reverse checkpoints are off)", millis(f.reverse_checkpoints_interval))
            }
        }),
    };
    /// Whether instances sharing a flow elect one owner of it.
    MEMBERSHIP_ENABLED = Key {
        name: "mm2-checkpoint.membership.enabled",
        default: Default::Value("false"),
        accepted: Accepted::Boolean,
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "instances sharing a flow elect one owner of it on the target",
        shown: Shown::Flow(|f| f.membership.is_some().to_string()),
    };
    /// The flow's membership group id.
    MEMBERSHIP_GROUP = Key {
        name: "mm2-checkpoint.membership.group.id",
        default: Default::Derived("`mm2-checkpoint.<S>.<T>`"),
        accepted: Accepted::Described("1–249 characters"),
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "the flow's membership group, also its checkpoint producer's transactional id",
        shown: Shown::Flow(|f| match &f.membership {
            Some(m) => m.group.clone(),
            None => "(unused: membership is off)".to_string(),
        }),
    };
    /// The static member id.
    MEMBERSHIP_INSTANCE = Key {
        name: "mm2-checkpoint.membership.instance.id",
        default: Default::Unset,
        accepted: Accepted::Described("text"),
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "the static member id (`group.instance.id`)",
        shown: Shown::Flow(|f| {
            f.membership
                .as_ref()
                .and_then(|m| m.instance_id.clone())
                .unwrap_or_else(|| "(none: a dynamic member)".to_string())
        }),
    };
    /// The membership session timeout.
    MEMBERSHIP_SESSION_TIMEOUT = Key {
        name: "mm2-checkpoint.membership.session.timeout.ms",
        default: Default::Value("10000"),
        accepted: Accepted::Positive,
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "how long the coordinator waits for a silent member",
        shown: Shown::Flow(|f| {
            f.membership
                .as_ref()
                .map_or_else(|| "(unused)".to_string(), |m| millis(m.session_timeout))
        }),
    };
    /// The membership heartbeat interval.
    MEMBERSHIP_HEARTBEAT = Key {
        name: "mm2-checkpoint.membership.heartbeat.interval.ms",
        default: Default::Value("1000"),
        accepted: Accepted::Described("integer, under half the session timeout"),
        owner: Owner::Ours,
        scope: Scope::Flow,
        doc: "how often members heartbeat, each renewing the owner's lease",
        shown: Shown::Flow(|f| {
            f.membership
                .as_ref()
                .map_or_else(|| "(unused)".to_string(), |m| millis(m.heartbeat_interval))
        }),
    };
    /// The labels of the checkpoint-latency series.
    LATENCY_GRANULARITY = Key {
        name: "mm2-checkpoint.metrics.latency.granularity",
        default: Default::Value("flow"),
        accepted: Accepted::Words(|| {
            LatencyGranularity::ALL.map(LatencyGranularity::as_str).to_vec()
        }),
        owner: Owner::Ours,
        scope: Scope::Process,
        doc: "how finely the checkpoint-latency series are labelled",
        shown: Shown::Process(|m| m.latency_granularity.as_str().to_string()),
    };
    /// How often the daemon's status pass runs for `GET /status` (off at 0).
    STATUS_INTERVAL = Key {
        name: "mm2-checkpoint.status.interval.ms",
        default: Default::Value("0"),
        accepted: Accepted::Described("integer ≥ 0 (0: off)"),
        owner: Owner::Ours,
        scope: Scope::Process,
        doc: "how often the daemon reads the clusters for `GET /status` and the status gauges; 0 turns the pass off",
        shown: Shown::Process(|m| match m.status_interval {
            Some(d) => millis(d),
            None => "0".to_string(),
        }),
    };
    /// Whether the checkpoint latency is also exported under MM2's names.
    MM2_NAMES = Key {
        name: "mm2-checkpoint.metrics.mm2.names.enabled",
        default: Default::Value("false"),
        accepted: Accepted::Boolean,
        owner: Owner::Ours,
        scope: Scope::Process,
        doc: "also export the checkpoint latency under the names MirrorMaker 2's metrics get",
        shown: Shown::Process(|m| m.mm2_names.to_string()),
    };
    /// Which of MM2's metric name formats (MM2 4.3's `metric.names.formats`)
    /// the MM2 names follow.
    MM2_NAME_FORMATS = Key {
        name: "mm2-checkpoint.metrics.mm2.names.formats",
        default: Default::Value("legacy"),
        accepted: Accepted::Described("`legacy`, `new` or `legacy,new`"),
        owner: Owner::Ours,
        scope: Scope::Process,
        doc: "with the MM2 names on, which of MirrorMaker 2's name formats they follow: the legacy `kafka.connect.mirror` names, KIP-1280's `kafka.connect:type=plugins` names (MM2 4.3's `metric.names.formats`), or both",
        shown: Shown::Process(|m| m.mm2_name_formats.as_str().to_string()),
    };
}

/// The key choosing how a flow learns the source groups' commits (ours: MM2
/// ignores it).
pub const GROUP_OFFSETS_MODE_KEY: &str = GROUP_OFFSETS_MODE.name;

/// The key of the commit follower's coalescing window (ours).
pub const FOLLOW_COALESCE_KEY: &str = FOLLOW_COALESCE.name;

/// The key choosing how precisely a flow translates offsets (ours: MM2 ignores it).
pub const OFFSET_TRANSLATION_KEY: &str = OFFSET_TRANSLATION.name;

/// The key of the precise translation's budget: offset syncs kept per source
/// partition (ours).
pub const TRANSLATION_MAX_SYNCS_KEY: &str = TRANSLATION_MAX_SYNCS.name;

/// The key turning on the content search inside the sync bracket (ours; only
/// with precise translation; docs/translation.md, "Content search").
pub const CONTENT_SEARCH_KEY: &str = CONTENT_SEARCH.name;

/// The key turning reverse checkpoints on (ours; docs/operations.md,
/// "Failing back").
pub const REVERSE_CHECKPOINTS_ENABLED_KEY: &str = REVERSE_CHECKPOINTS_ENABLED.name;

/// The key turning membership on: instances sharing a flow elect one owner
/// of it through a group on its target cluster (ours; docs/membership.md).
pub const MEMBERSHIP_ENABLED_KEY: &str = MEMBERSHIP_ENABLED.name;

/// The key of the flow's membership group id (ours; default
/// `mm2-checkpoint.<source>.<target>`: [`FlowConfig::default_membership_group`]).
pub const MEMBERSHIP_GROUP_KEY: &str = MEMBERSHIP_GROUP.name;

/// The key of the static member id, `group.instance.id` (ours; e.g. the pod name).
pub const MEMBERSHIP_INSTANCE_KEY: &str = MEMBERSHIP_INSTANCE.name;

/// The key of the membership session timeout (ours).
pub const MEMBERSHIP_SESSION_TIMEOUT_KEY: &str = MEMBERSHIP_SESSION_TIMEOUT.name;

/// The key of the membership heartbeat interval (ours).
pub const MEMBERSHIP_HEARTBEAT_KEY: &str = MEMBERSHIP_HEARTBEAT.name;

/// The default of [`TRANSLATION_MAX_SYNCS`] as a number (the table's text,
/// read when the crate is built), set from the daemon measured at 1,000 and
/// 10,000 partitions (docs/translation.md, "Budget and fallback"): it covers a
/// lag of 1,000 × `offset.lag.max` records (10^5 at the default spacing), and
/// a flow of 10,000 partitions all at the budget (10^7 syncs) measured about
/// 250 MiB of RSS after a first start, about 750 MiB at the peak of a restart
/// restoring them.
pub const DEFAULT_TRANSLATION_MAX_SYNCS: usize = whole_number_default(&TRANSLATION_MAX_SYNCS);

/// `key`'s default value as a whole number, at compile time: the build fails
/// when the table gives it none or another kind of value.
const fn whole_number_default(key: &Key) -> usize {
    let Default::Value(text) = key.default else {
        panic!("the key has no default value");
    };
    let digits = text.as_bytes();
    assert!(!digits.is_empty(), "the default is empty");
    let mut number: usize = 0;
    let mut i = 0;
    while i < digits.len() {
        assert!(
            digits[i].is_ascii_digit(),
            "the default is not a whole number"
        );
        number = number * 10 + (digits[i] - b'0') as usize;
        i += 1;
    }
    number
}

/// The keys of ours read in `scope`.
pub(crate) fn ours(scope: Scope) -> impl Iterator<Item = &'static str> {
    ALL.iter()
        .filter(move |k| k.owner == Owner::Ours && k.scope == scope)
        .map(|k| k.name)
}

#[cfg(test)]
mod tests;
