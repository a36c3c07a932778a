//! The settings a configuration yields: [`MirrorConfig`] and one
//! [`FlowConfig`] per checkpointed flow, with the values they take. They are
//! read by `read.rs` and `lookup.rs`; this file imports no reader.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use super::check::ConfigWarning;
use super::security::ClusterConnection;
use super::spelling::{self, UnknownSpelling, parse_spelling};
use crate::core::policy::ClusterSide;
use crate::core::{Flow, OffsetSyncsLocation, Precision, ReplicationPolicy};

/// Most records one content search compares (the group's records since the
/// sync; about `offset.lag.max` where MM2 wrote every sync).
pub const CONTENT_SEARCH_MAX_RECORDS: usize = 1000;

/// Most bytes one content search fetches from each side (one Fetch each).
pub const CONTENT_SEARCH_MAX_BYTES: i32 = 1024 * 1024;

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

/// The largest accepted
/// [`TRANSLATION_MAX_SYNCS_KEY`](super::TRANSLATION_MAX_SYNCS_KEY):
/// 100,000,000 syncs are about 800 MB for one partition, beyond any sensible
/// budget (a guard against typos).
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
    /// [`DEFAULT_TRANSLATION_MAX_SYNCS`](super::DEFAULT_TRANSLATION_MAX_SYNCS)):
    /// the precise mode's budget per partition.
    pub translation_max_syncs: usize,
    /// `mm2-checkpoint.offset.translation.content.search` (ours; default false):
    /// find the exact position inside the sync bracket by reading records.
    pub content_search: bool,
    /// `mm2-checkpoint.emit.reverse.checkpoints.enabled` (ours; default
    /// false): reverse checkpoints, and with `sync.group.offsets.enabled`
    /// the group sync into the source, for failing back (docs/operations.md,
    /// "Failing back").
    pub reverse_checkpoints_enabled: bool,
    /// `mm2-checkpoint.emit.reverse.checkpoints.interval.ms` (ours; default
    /// 1 s): the time between reverse rounds.
    pub reverse_checkpoints_interval: Duration,
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

    /// The membership group of a flow when
    /// [`MEMBERSHIP_GROUP_KEY`](super::MEMBERSHIP_GROUP_KEY) does not name one:
    /// `mm2-checkpoint.<source>.<target>`, the same for every instance started
    /// with the same configuration.
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
    pub unknown_keys: Vec<UnknownKey>,
    /// The keys MirrorMaker 2 reads but that have no effect on checkpointing
    /// (`producer.acks`, `tasks.max`, the settings of disabled flows, ...), as
    /// `key (line N)`; `validate` lists them.
    pub no_effect_keys: Vec<String>,
    /// The process-wide metrics settings (`mm2-checkpoint.metrics.*`).
    pub metrics: MetricsSettings,
}

/// A key of the file that nothing reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownKey {
    /// The key as written.
    pub key: String,
    /// The closest key that would be read, when one is close enough to be a
    /// likely typo.
    pub suggestion: Option<String>,
    /// Why the key is not read when that is more useful than a suggestion.
    pub note: Option<&'static str>,
}

/// How finely the checkpoint-latency series are labelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LatencyGranularity {
    /// One series per flow, group, topic and partition (as MM2; opt-in: a
    /// million series at 100,000 groups of 10 partitions).
    Partition,
    /// One series per flow and group.
    Group,
    /// One series per flow (the default: bounded whatever the estate).
    #[default]
    Flow,
}

impl LatencyGranularity {
    /// Every value.
    pub const ALL: [Self; 3] = [
        LatencyGranularity::Partition,
        LatencyGranularity::Group,
        LatencyGranularity::Flow,
    ];

    /// The setting's spelling (the only one: [`FromStr`] reads it back).
    pub fn as_str(self) -> &'static str {
        match self {
            LatencyGranularity::Partition => "partition",
            LatencyGranularity::Group => "group",
            LatencyGranularity::Flow => "flow",
        }
    }
}

impl FromStr for LatencyGranularity {
    type Err = UnknownSpelling;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_spelling(&Self::ALL, Self::as_str, s)
    }
}

/// Which of MirrorMaker 2's metric name formats the MM2 names follow: MM2
/// 4.3's `metric.names.formats` (KIP-1280; docs/operations.md, "MirrorMaker
/// 2's names").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mm2NameFormats {
    /// `kafka.connect.mirror:type=MirrorCheckpointConnector,...` only (MM2's
    /// default, deprecated by MM2 4.3).
    #[default]
    Legacy,
    /// `kafka.connect:type=plugins,connector=...,task=...,...` only.
    New,
    /// Both: every MM2 series twice.
    Both,
}

impl Mm2NameFormats {
    /// Every value.
    pub const ALL: [Self; 3] = [
        Mm2NameFormats::Legacy,
        Mm2NameFormats::New,
        Mm2NameFormats::Both,
    ];

    /// The setting's canonical spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Mm2NameFormats::Legacy => "legacy",
            Mm2NameFormats::New => "new",
            Mm2NameFormats::Both => "legacy,new",
        }
    }

    /// Whether the legacy names are exported.
    pub fn legacy(self) -> bool {
        matches!(self, Mm2NameFormats::Legacy | Mm2NameFormats::Both)
    }

    /// Whether KIP-1280's new names are exported.
    pub fn new_names(self) -> bool {
        matches!(self, Mm2NameFormats::New | Mm2NameFormats::Both)
    }
}

impl FromStr for Mm2NameFormats {
    type Err = UnknownSpelling;

    /// A comma-separated list of `legacy` and `new`, as MM2's
    /// `metric.names.formats` (a list: spaces around the commas are allowed,
    /// the order does not matter).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || UnknownSpelling {
            given: s.to_string(),
            expected: "`legacy`, `new` or `legacy,new`".to_string(),
        };
        let (mut legacy, mut new) = (false, false);
        for item in s.split(',').map(str::trim) {
            match item {
                "legacy" => legacy = true,
                "new" => new = true,
                _ => return Err(unknown()),
            }
        }
        match (legacy, new) {
            (true, false) => Ok(Mm2NameFormats::Legacy),
            (false, true) => Ok(Mm2NameFormats::New),
            (true, true) => Ok(Mm2NameFormats::Both),
            (false, false) => Err(unknown()),
        }
    }
}

/// The metrics settings of the whole process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetricsSettings {
    /// `mm2-checkpoint.metrics.latency.granularity` (default `flow`).
    pub latency_granularity: LatencyGranularity,
    /// `mm2-checkpoint.metrics.mm2.names.enabled` (default false): also export
    /// the checkpoint latency under the names Strimzi's rules give MM2's
    /// `MirrorCheckpointConnector` metrics.
    pub mm2_names: bool,
    /// `mm2-checkpoint.metrics.mm2.names.formats` (default `legacy`): which
    /// of MM2's name formats the MM2 names follow when they are enabled.
    pub mm2_name_formats: Mm2NameFormats,
    /// `mm2-checkpoint.status.interval.ms` (default 0, off): how often the
    /// daemon's read-only status pass runs for `GET /status` and the status
    /// gauges (docs/operations.md, "status").
    pub status_interval: Option<std::time::Duration>,
}
