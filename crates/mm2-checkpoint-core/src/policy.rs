//! Topic naming: MM2's replication policies (docs/behaviour.md B.1–B.4).
//!
//! A replication policy decides how a topic replicated from cluster `S` is named on
//! the target (`S.topic` by default), how to walk such a name back to its source, and
//! what MM2's internal topics are called. The checkpoint engine needs it for three
//! things: the name of the checkpoints and offset-syncs topics, telling internal
//! topics apart, and renaming a source group's topic-partitions to the downstream
//! names its checkpoints are keyed by ([`ReplicationPolicy::checkpoint_topic`]).
//!
//! Two policies exist, mirroring MM2's `DefaultReplicationPolicy` and
//! `IdentityReplicationPolicy`. Every function reproduces the Java behaviour,
//! including its quirks (an alias containing the separator, a topic starting with
//! the separator having source `""`, the identity policy's "ends with `heartbeats`"
//! test), with one deliberate exception: the checkpoint rename for a topic that came
//! back from the target (quirk H.4, see [`ReplicationPolicy::checkpoint_topic`]).

use std::fmt;
use std::str::FromStr;

/// Name of the heartbeats topic; no separator setting ever changes it.
pub const HEARTBEATS_TOPIC: &str = "heartbeats";

/// Fully-qualified Java class name of MM2's default policy.
pub const DEFAULT_POLICY_CLASS: &str = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy";

/// Fully-qualified Java class name of MM2's identity policy.
pub const IDENTITY_POLICY_CLASS: &str = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy";

/// A replication flow `S->T`: one direction of mirroring between two cluster aliases.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Flow {
    /// The source (upstream) cluster alias, `S`.
    pub source: String,
    /// The target (downstream) cluster alias, `T`.
    pub target: String,
}

impl Flow {
    /// Builds the flow `source->target`.
    pub fn new(source: impl Into<String>, target: impl Into<String>) -> Self {
        Flow {
            source: source.into(),
            target: target.into(),
        }
    }
}

impl fmt::Display for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}->{}", self.source, self.target)
    }
}

/// Why a replication policy could not be built from configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyError {
    /// `replication.policy.class` names a class we do not implement.
    UnknownClass(String),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::UnknownClass(class) => write!(
                f,
                "replication.policy.class `{class}` is not supported; use \
                 {DEFAULT_POLICY_CLASS} or {IDENTITY_POLICY_CLASS}"
            ),
        }
    }
}

impl std::error::Error for PolicyError {}

/// The replication policy of a flow (`replication.policy.class`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplicationPolicy {
    /// `DefaultReplicationPolicy`: remote topics are `alias + separator + topic`.
    Default {
        /// `replication.policy.separator`, a literal string (never a regex).
        separator: String,
        /// The separator used in internal topic names (B.1).
        internal_separator: String,
    },
    /// `IdentityReplicationPolicy`: topics keep their names; only heartbeat-like
    /// topics are prefixed.
    Identity {
        /// `replication.policy.separator`.
        separator: String,
        /// The separator used in internal topic names (B.1).
        internal_separator: String,
        /// `source.cluster.alias`, reported as every non-heartbeat topic's source.
        source_alias: Option<String>,
    },
}

impl Default for ReplicationPolicy {
    /// `DefaultReplicationPolicy` with separator `.`.
    fn default() -> Self {
        ReplicationPolicy::Default {
            separator: ".".into(),
            internal_separator: ".".into(),
        }
    }
}

/// Works out `(separator, internal separator)` from the two config keys (B.1).
///
/// `replication.policy.internal.topic.separator.enabled` is only looked at when
/// `replication.policy.separator` is present; when it is `false` internal topic
/// names use `.`. An empty separator is accepted as MM2 accepts it: remote names
/// are then `alias + topic`, and a name's source is its first character (see
/// [`ReplicationPolicy::topic_source`]).
fn separators(
    separator: Option<&str>,
    internal_separator_enabled: Option<bool>,
) -> Result<(String, String), PolicyError> {
    let sep = separator.unwrap_or(".");
    let internal = match (separator, internal_separator_enabled) {
        (Some(_), Some(false)) => ".",
        _ => sep,
    };
    Ok((sep.to_owned(), internal.to_owned()))
}

impl ReplicationPolicy {
    /// `DefaultReplicationPolicy` from the values of `replication.policy.separator`
    /// and `replication.policy.internal.topic.separator.enabled` (absent = `None`).
    pub fn new_default(
        separator: Option<&str>,
        internal_separator_enabled: Option<bool>,
    ) -> Result<Self, PolicyError> {
        let (separator, internal_separator) = separators(separator, internal_separator_enabled)?;
        Ok(ReplicationPolicy::Default {
            separator,
            internal_separator,
        })
    }

    /// `IdentityReplicationPolicy`, which also reads `source.cluster.alias`.
    pub fn new_identity(
        separator: Option<&str>,
        internal_separator_enabled: Option<bool>,
        source_alias: Option<&str>,
    ) -> Result<Self, PolicyError> {
        let (separator, internal_separator) = separators(separator, internal_separator_enabled)?;
        Ok(ReplicationPolicy::Identity {
            separator,
            internal_separator,
            source_alias: source_alias.map(str::to_owned),
        })
    }

    /// Builds the policy named by `replication.policy.class` (`None` = the default
    /// policy). Both the fully-qualified names and the simple class names are accepted.
    pub fn from_class(
        class: Option<&str>,
        separator: Option<&str>,
        internal_separator_enabled: Option<bool>,
        source_alias: Option<&str>,
    ) -> Result<Self, PolicyError> {
        match class.map(str::trim) {
            None | Some(DEFAULT_POLICY_CLASS) | Some("DefaultReplicationPolicy") => {
                Self::new_default(separator, internal_separator_enabled)
            }
            Some(IDENTITY_POLICY_CLASS) | Some("IdentityReplicationPolicy") => {
                Self::new_identity(separator, internal_separator_enabled, source_alias)
            }
            Some(other) => Err(PolicyError::UnknownClass(other.to_owned())),
        }
    }

    /// The simple Java class name of the policy, as `validate` prints it.
    pub fn class_name(&self) -> &'static str {
        match self {
            ReplicationPolicy::Default { .. } => "DefaultReplicationPolicy",
            ReplicationPolicy::Identity { .. } => "IdentityReplicationPolicy",
        }
    }

    /// The separator between an alias and a topic in remote topic names.
    pub fn separator(&self) -> &str {
        match self {
            ReplicationPolicy::Default { separator, .. }
            | ReplicationPolicy::Identity { separator, .. } => separator,
        }
    }

    /// The separator used in MM2's internal topic names.
    pub fn internal_separator(&self) -> &str {
        match self {
            ReplicationPolicy::Default {
                internal_separator, ..
            }
            | ReplicationPolicy::Identity {
                internal_separator, ..
            } => internal_separator,
        }
    }

    /// Identity policy: does `topic` "look like a heartbeat" (ends with `heartbeats`,
    /// a plain suffix test, so `myheartbeats` matches: quirk H.12)?
    fn identity_treats_as_heartbeat(&self, topic: &str) -> bool {
        matches!(self, ReplicationPolicy::Identity { .. }) && topic.ends_with(HEARTBEATS_TOPIC)
    }

    /// `formatRemoteTopic(alias, topic)`: the name `topic` from cluster `alias` gets
    /// on the target. Default: `alias + sep + topic`. Identity: `topic` unchanged
    /// unless it looks like a heartbeat.
    pub fn format_remote_topic(&self, source_alias: &str, topic: &str) -> String {
        match self {
            ReplicationPolicy::Identity { .. } if !self.identity_treats_as_heartbeat(topic) => {
                topic.to_owned()
            }
            _ => format!("{source_alias}{}{topic}", self.separator()),
        }
    }

    /// The default rule of `topicSource`: Java `topic.split(quote(sep))` (trailing
    /// empty pieces dropped, a leading empty piece kept), then the first piece if at
    /// least two remain.
    ///
    /// At least two pieces remain exactly when the separator occurs and some piece
    /// after the first is non-empty, which is checked without allocating.
    ///
    /// An empty separator matches between every two characters (Java drops the
    /// empty piece a zero-width match at the start would give), so a name of two
    /// or more characters has its first character as source: `orders` → `o`.
    fn default_topic_source<'t>(&self, topic: &'t str) -> Option<&'t str> {
        let sep = self.separator();
        if sep.is_empty() {
            let mut chars = topic.char_indices();
            chars.next()?;
            let (second, _) = chars.next()?;
            return Some(&topic[..second]);
        }
        let (first, rest) = topic.split_once(sep)?;
        rest.split(sep).any(|p| !p.is_empty()).then_some(first)
    }

    /// `topicSource(topic)`: the alias of the cluster `topic` was replicated from, or
    /// `None` if it is not a remote topic. With the default policy and `sep="."`:
    /// `a.b.c` → `a`, `abc` → none, `a.` → none, `.b` → `""` (quirk), `a..b` → `a`.
    /// The identity policy answers its configured source alias for every topic that
    /// does not look like a heartbeat.
    pub fn topic_source<'a>(&'a self, topic: &'a str) -> Option<&'a str> {
        match self {
            ReplicationPolicy::Identity { source_alias, .. }
                if !self.identity_treats_as_heartbeat(topic) =>
            {
                source_alias.as_deref()
            }
            _ => self.default_topic_source(topic),
        }
    }

    /// `upstreamTopic(topic)`: the name one hop up (`a.b.c` → `b.c`), or `None` if
    /// the topic is not remote. The identity policy returns non-heartbeat topics
    /// unchanged.
    pub fn upstream_topic<'t>(&self, topic: &'t str) -> Option<&'t str> {
        if matches!(self, ReplicationPolicy::Identity { .. })
            && !self.identity_treats_as_heartbeat(topic)
        {
            return Some(topic);
        }
        let source = self.default_topic_source(topic)?;
        // `topic` starts with `source + sep` because `source` is its first piece.
        topic.get(source.len() + self.separator().len()..)
    }

    /// `originalTopic(topic)`: follow `upstreamTopic` until it ends or stops changing;
    /// `s3.s2.s1.topic` → `topic`, `topic` → `topic`.
    pub fn original_topic<'t>(&self, topic: &'t str) -> &'t str {
        let mut current = topic;
        while let Some(up) = self.upstream_topic(current) {
            if up == current {
                break;
            }
            current = up;
        }
        current
    }

    /// `heartbeatsTopic()`: always `heartbeats`.
    pub fn heartbeats_topic(&self) -> &'static str {
        HEARTBEATS_TOPIC
    }

    /// `isHeartbeatsTopic(t)`: `originalTopic(t) == "heartbeats"`.
    pub fn is_heartbeats_topic(&self, topic: &str) -> bool {
        self.original_topic(topic) == HEARTBEATS_TOPIC
    }

    /// `offsetSyncsTopic(alias)`: `mm2-offset-syncs<isep><alias><isep>internal`.
    pub fn offset_syncs_topic(&self, cluster_alias: &str) -> String {
        let isep = self.internal_separator();
        format!("mm2-offset-syncs{isep}{cluster_alias}{isep}internal")
    }

    /// `checkpointsTopic(alias)`: `<alias><isep>checkpoints<isep>internal`.
    pub fn checkpoints_topic(&self, cluster_alias: &str) -> String {
        let isep = self.internal_separator();
        format!("{cluster_alias}{isep}checkpoints{isep}internal")
    }

    /// `isCheckpointsTopic(t)`: ends with `<isep>checkpoints<isep>internal`.
    pub fn is_checkpoints_topic(&self, topic: &str) -> bool {
        let isep = self.internal_separator();
        topic.ends_with(&format!("{isep}checkpoints{isep}internal"))
    }

    /// `isMM2InternalTopic(t)`: ends with `<isep>internal`.
    pub fn is_mm2_internal_topic(&self, topic: &str) -> bool {
        topic.ends_with(&format!("{}internal", self.internal_separator()))
    }

    /// `isInternalTopic(t)`: an MM2 internal topic, or a name starting with `__` or
    /// `.`, or ending with `-internal` or `.internal`.
    pub fn is_internal_topic(&self, topic: &str) -> bool {
        self.is_mm2_internal_topic(topic)
            || topic.starts_with("__")
            || topic.starts_with('.')
            || topic.ends_with("-internal")
            || topic.ends_with(".internal")
    }

    /// The downstream topic a checkpoint of flow `flow` is keyed by, for a source
    /// group's upstream topic `topic` (docs/behaviour.md B.4, with quirk H.4 fixed).
    ///
    /// * A topic that came from the target (`topicSource(topic) == T`) is renamed to
    ///   its name **one hop up**: `T.topic3` → `topic3`, `T.X.topic7` → `X.topic7`.
    ///   That is the topic the records actually came from on `T`.
    /// * Any other topic gets `formatRemoteTopic(S, topic)`: `topic3` → `S.topic3`,
    ///   `X.topic7` → `S.X.topic7`; with the identity policy, `topic3` → `topic3`.
    ///
    /// **Differs from MM2**, which uses `originalTopic` in the first case and strips
    /// *all* hops, so `T.X.topic7` becomes `topic7` (a different topic on `T`, or
    /// one that does not exist) and can collide with the checkpoint for `T.topic7`.
    pub fn checkpoint_topic(&self, flow: &Flow, topic: &str) -> String {
        if self.topic_source(topic) == Some(flow.target.as_str())
            && let Some(up) = self.upstream_topic(topic)
        {
            return up.to_owned();
        }
        self.format_remote_topic(&flow.source, topic)
    }
}

/// Where the offset-syncs topic of a flow lives (`offset-syncs.topic.location`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OffsetSyncsLocation {
    /// On the source cluster, named after the target (`mm2-offset-syncs.T.internal`).
    #[default]
    Source,
    /// On the target cluster, named after the source (`mm2-offset-syncs.S.internal`).
    Target,
}

/// A value of `offset-syncs.topic.location` that is not exactly `source` or `target`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidOffsetSyncsLocation(pub String);

impl fmt::Display for InvalidOffsetSyncsLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "offset-syncs.topic.location must be `source` or `target` (case-sensitive), got `{}`",
            self.0
        )
    }
}

impl std::error::Error for InvalidOffsetSyncsLocation {}

impl FromStr for OffsetSyncsLocation {
    type Err = InvalidOffsetSyncsLocation;

    /// Parses `source` or `target` (the spellings of [`Self::as_str`]),
    /// case-sensitively like MM2's validator.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| InvalidOffsetSyncsLocation(s.to_owned()))
    }
}

/// Which side of a flow a topic lives on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterSide {
    /// The flow's source cluster `S`.
    Source,
    /// The flow's target cluster `T`.
    Target,
}

impl OffsetSyncsLocation {
    /// Every value.
    pub const ALL: [Self; 2] = [OffsetSyncsLocation::Source, OffsetSyncsLocation::Target];

    /// The configuration value naming this location: `source` or `target`.
    pub fn as_str(self) -> &'static str {
        match self {
            OffsetSyncsLocation::Source => "source",
            OffsetSyncsLocation::Target => "target",
        }
    }

    /// The cluster holding the offset-syncs topic.
    pub fn cluster(self) -> ClusterSide {
        match self {
            OffsetSyncsLocation::Source => ClusterSide::Source,
            OffsetSyncsLocation::Target => ClusterSide::Target,
        }
    }

    /// The offset-syncs topic name of `flow` (B.2): named after the *other* cluster.
    pub fn topic(self, policy: &ReplicationPolicy, flow: &Flow) -> String {
        match self {
            OffsetSyncsLocation::Source => policy.offset_syncs_topic(&flow.target),
            OffsetSyncsLocation::Target => policy.offset_syncs_topic(&flow.source),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dot() -> ReplicationPolicy {
        ReplicationPolicy::default()
    }

    fn underscores(internal_enabled: Option<bool>) -> ReplicationPolicy {
        ReplicationPolicy::new_default(Some("__"), internal_enabled).unwrap()
    }

    fn identity(alias: Option<&str>) -> ReplicationPolicy {
        ReplicationPolicy::new_identity(None, None, alias).unwrap()
    }

    #[test]
    fn b1_format_remote_topic_prefixes_alias_and_separator() {
        assert_eq!(dot().format_remote_topic("S", "topic3"), "S.topic3");
        assert_eq!(underscores(None).format_remote_topic("S", "t"), "S__t");
    }

    #[test]
    fn b1_topic_source_follows_java_split_table() {
        let p = dot();
        assert_eq!(p.topic_source("a.b.c"), Some("a"));
        assert_eq!(p.topic_source("abc"), None);
        assert_eq!(p.topic_source("a."), None);
        assert_eq!(p.topic_source(".b"), Some(""), "quirk: leading empty piece");
        assert_eq!(p.topic_source("a..b"), Some("a"));
        assert_eq!(p.topic_source(""), None);
        assert_eq!(p.topic_source("."), None);
        assert_eq!(
            p.topic_source("a.b.."),
            Some("a"),
            "trailing empties dropped"
        );
    }

    #[test]
    fn b1_separator_is_literal_not_regex() {
        let p = ReplicationPolicy::new_default(Some("|"), None).unwrap();
        assert_eq!(p.topic_source("a|b"), Some("a"));
        assert_eq!(p.topic_source("a.b"), None);
    }

    #[test]
    fn b1_topic_source_with_double_underscore_separator() {
        let p = underscores(None);
        assert_eq!(p.topic_source("a__b__c"), Some("a"));
        assert_eq!(p.topic_source("a.b"), None);
        assert_eq!(p.topic_source("a___b"), Some("a"));
        assert_eq!(p.upstream_topic("a___b"), Some("_b"));
    }

    #[test]
    fn b1_alias_containing_separator_breaks_topic_source() {
        assert_eq!(dot().topic_source("us.west.foo"), Some("us"));
    }

    #[test]
    fn b1_upstream_topic_strips_one_hop() {
        let p = dot();
        assert_eq!(p.upstream_topic("a.b.c"), Some("b.c"));
        assert_eq!(p.upstream_topic("abc"), None);
        assert_eq!(p.upstream_topic(".b"), Some("b"));
    }

    #[test]
    fn b1_original_topic_strips_every_hop() {
        let p = dot();
        assert_eq!(p.original_topic("source3.source2.source1.topic"), "topic");
        assert_eq!(p.original_topic("topic"), "topic");
    }

    #[test]
    fn b1_heartbeats_topic_detection() {
        let p = dot();
        assert_eq!(p.heartbeats_topic(), "heartbeats");
        assert!(p.is_heartbeats_topic("heartbeats"));
        assert!(p.is_heartbeats_topic("A.B.heartbeats"));
        assert!(!p.is_heartbeats_topic("myheartbeats"));
        assert_eq!(underscores(None).heartbeats_topic(), "heartbeats");
    }

    #[test]
    fn b1_internal_topic_names_and_predicates() {
        let p = dot();
        assert_eq!(p.offset_syncs_topic("T"), "mm2-offset-syncs.T.internal");
        assert_eq!(p.checkpoints_topic("S"), "S.checkpoints.internal");
        assert!(p.is_checkpoints_topic("S.checkpoints.internal"));
        assert!(!p.is_checkpoints_topic("S.checkpoints"));
        assert!(p.is_mm2_internal_topic("mm2-offsets.S.internal"));
        assert!(!p.is_mm2_internal_topic("x-internal"));
        for t in ["__consumer_offsets", ".hidden", "x-internal", "x.internal"] {
            assert!(p.is_internal_topic(t), "{t}");
        }
        assert!(!p.is_internal_topic("orders"));
    }

    #[test]
    fn b2_internal_separator_follows_separator_by_default() {
        let p = underscores(None);
        assert_eq!(
            p.offset_syncs_topic("CLUSTER"),
            "mm2-offset-syncs__CLUSTER__internal"
        );
        assert_eq!(
            p.checkpoints_topic("CLUSTER"),
            "CLUSTER__checkpoints__internal"
        );
        assert!(p.is_checkpoints_topic("CLUSTER__checkpoints__internal"));
        let p = underscores(Some(true));
        assert_eq!(
            p.checkpoints_topic("CLUSTER"),
            "CLUSTER__checkpoints__internal"
        );
    }

    #[test]
    fn b2_internal_separator_disabled_uses_dot() {
        let p = underscores(Some(false));
        assert_eq!(
            p.offset_syncs_topic("CLUSTER"),
            "mm2-offset-syncs.CLUSTER.internal"
        );
        assert_eq!(
            p.checkpoints_topic("CLUSTER"),
            "CLUSTER.checkpoints.internal"
        );
        assert_eq!(p.heartbeats_topic(), "heartbeats");
        assert_eq!(p.format_remote_topic("A", "t"), "A__t");
    }

    #[test]
    fn b1_internal_separator_flag_ignored_without_separator_key() {
        let p = ReplicationPolicy::new_default(None, Some(false)).unwrap();
        assert_eq!(p.internal_separator(), ".");
        assert_eq!(p.separator(), ".");
    }

    #[test]
    fn b2_offset_syncs_location_decides_name_and_cluster() {
        let p = dot();
        let flow = Flow::new("primary", "backup");
        let source: OffsetSyncsLocation = "source".parse().unwrap();
        assert_eq!(source.topic(&p, &flow), "mm2-offset-syncs.backup.internal");
        assert_eq!(source.cluster(), ClusterSide::Source);
        let target: OffsetSyncsLocation = "target".parse().unwrap();
        assert_eq!(target.topic(&p, &flow), "mm2-offset-syncs.primary.internal");
        assert_eq!(target.cluster(), ClusterSide::Target);
        assert_eq!(OffsetSyncsLocation::default(), OffsetSyncsLocation::Source);
    }

    #[test]
    fn b2_offset_syncs_location_is_case_sensitive() {
        assert!("Source".parse::<OffsetSyncsLocation>().is_err());
        assert!("TARGET".parse::<OffsetSyncsLocation>().is_err());
    }

    #[test]
    fn b3_identity_keeps_topic_names() {
        let p = identity(Some("primary"));
        assert_eq!(p.format_remote_topic("primary", "orders"), "orders");
        assert_eq!(p.topic_source("orders"), Some("primary"));
        assert_eq!(p.upstream_topic("orders"), Some("orders"));
        assert_eq!(p.original_topic("orders"), "orders");
    }

    #[test]
    fn b3_identity_without_source_alias_has_no_source() {
        assert_eq!(identity(None).topic_source("orders"), None);
    }

    #[test]
    fn b3_identity_prefixes_heartbeats() {
        let p = identity(Some("primary"));
        assert_eq!(
            p.format_remote_topic("primary", "heartbeats"),
            "primary.heartbeats"
        );
        assert_eq!(p.topic_source("primary.heartbeats"), Some("primary"));
        assert_eq!(p.upstream_topic("primary.heartbeats"), Some("heartbeats"));
        assert!(p.is_heartbeats_topic("backup.primary.heartbeats"));
    }

    #[test]
    fn h12_identity_treats_any_heartbeats_suffix_as_heartbeat() {
        let p = identity(Some("primary"));
        assert_eq!(
            p.format_remote_topic("primary", "myheartbeats"),
            "primary.myheartbeats"
        );
        assert_eq!(p.topic_source("myheartbeats"), None);
        assert!(!p.is_heartbeats_topic("myheartbeats"));
    }

    #[test]
    fn b3_identity_internal_topics_same_as_default() {
        let p = identity(Some("primary"));
        assert_eq!(
            p.offset_syncs_topic("backup"),
            "mm2-offset-syncs.backup.internal"
        );
        assert_eq!(
            p.checkpoints_topic("primary"),
            "primary.checkpoints.internal"
        );
    }

    #[test]
    fn b4_local_topic_gets_source_prefix() {
        let flow = Flow::new("S", "T");
        assert_eq!(dot().checkpoint_topic(&flow, "topic3"), "S.topic3");
        assert_eq!(dot().checkpoint_topic(&flow, "X.topic7"), "S.X.topic7");
    }

    #[test]
    fn b4_topic_from_target_renamed_back() {
        let flow = Flow::new("S", "T");
        assert_eq!(dot().checkpoint_topic(&flow, "T.topic3"), "topic3");
    }

    /// Quirk H.4: MM2 applies `originalTopic` and strips every hop (`topic7`). We go up
    /// exactly one hop, to the topic the records came from on `T`.
    #[test]
    fn h4_topic_from_target_renamed_one_hop_not_all_hops() {
        let p = dot();
        let flow = Flow::new("S", "T");
        let ours = p.checkpoint_topic(&flow, "T.X.topic7");
        assert_eq!(ours, "X.topic7");
        let mm2 = p.original_topic("T.X.topic7");
        assert_ne!(mm2, ours, "MM2's rule gives {mm2}, which this test rejects");
    }

    #[test]
    fn b4_identity_policy_keeps_the_name() {
        let flow = Flow::new("S", "T");
        assert_eq!(
            identity(Some("S")).checkpoint_topic(&flow, "topic3"),
            "topic3"
        );
    }

    #[test]
    fn policy_from_class_names() {
        assert_eq!(
            ReplicationPolicy::from_class(None, None, None, None).unwrap(),
            dot()
        );
        assert!(matches!(
            ReplicationPolicy::from_class(Some(IDENTITY_POLICY_CLASS), None, None, Some("S")),
            Ok(ReplicationPolicy::Identity { .. })
        ));
        assert_eq!(
            ReplicationPolicy::from_class(Some("com.example.Custom"), None, None, None),
            Err(PolicyError::UnknownClass("com.example.Custom".into()))
        );
    }

    /// MM2 accepts an empty separator (a public Confluent Cloud template sets it,
    /// with an empty `source.cluster.alias`, to keep topic names unchanged).
    /// Java's `split` on an empty pattern cuts between every character, so
    /// `topicSource` is a name's first character and `upstreamTopic` the rest.
    #[test]
    fn an_empty_separator_behaves_as_in_mm2() {
        let p = ReplicationPolicy::new_default(Some(""), None).unwrap();
        assert_eq!(p.format_remote_topic("", "orders"), "orders");
        assert_eq!(p.format_remote_topic("A", "orders"), "Aorders");
        assert_eq!(p.topic_source("orders"), Some("o"));
        assert_eq!(p.topic_source("o"), None);
        assert_eq!(p.topic_source(""), None);
        assert_eq!(p.topic_source("éa"), Some("é"));
        assert_eq!(p.upstream_topic("orders"), Some("rders"));
        assert_eq!(p.original_topic("orders"), "s");
        assert_eq!(p.checkpoints_topic(""), "checkpointsinternal");
        assert_eq!(p.checkpoints_topic("A"), "Acheckpointsinternal");
        assert_eq!(p.offset_syncs_topic("B"), "mm2-offset-syncsBinternal");
        assert!(p.is_checkpoints_topic("Acheckpointsinternal"));
        let flow = Flow::new("", "target");
        assert_eq!(p.checkpoint_topic(&flow, "orders"), "orders");
        let dotted = ReplicationPolicy::new_default(Some(""), Some(false)).unwrap();
        assert_eq!(dotted.checkpoints_topic(""), ".checkpoints.internal");
    }

    /// Reference model of Java's `topic.split(Pattern.quote(sep))` + "first piece if
    /// at least two". An empty pattern matches at every position, and Java keeps no
    /// leading empty piece for a zero-width match at the start: one piece per
    /// character.
    fn java_split_source<'t>(topic: &'t str, sep: &str) -> Option<&'t str> {
        let mut pieces: Vec<&str> = if sep.is_empty() {
            topic
                .char_indices()
                .map(|(i, c)| &topic[i..i + c.len_utf8()])
                .collect()
        } else {
            topic.split(sep).collect()
        };
        while pieces.last().is_some_and(|p| p.is_empty()) {
            pieces.pop();
        }
        if pieces.len() < 2 {
            None
        } else {
            pieces.first().copied()
        }
    }

    proptest! {
        #[test]
        fn topic_source_matches_java_split_model(topic in "[ab._]{0,12}", sep in prop_oneof![Just("."), Just("__"), Just("a."), Just("")]) {
            let p = ReplicationPolicy::new_default(Some(sep), None).unwrap();
            prop_assert_eq!(p.topic_source(&topic), java_split_source(&topic, sep));
        }

        /// A topic named by `formatRemoteTopic` walks back to its alias and name, as
        /// long as the alias is non-empty and free of the separator.
        #[test]
        fn remote_name_walks_back(alias in "[a-zA-Z0-9_-]{1,12}", topic in "[a-zA-Z0-9._-]{1,30}") {
            prop_assume!(!topic.ends_with('.'));
            let p = dot();
            let remote = p.format_remote_topic(&alias, &topic);
            prop_assert_eq!(p.topic_source(&remote), Some(alias.as_str()));
            prop_assert_eq!(p.upstream_topic(&remote), Some(topic.as_str()));
        }
    }
}
