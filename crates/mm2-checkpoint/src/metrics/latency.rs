//! The checkpoint-latency series: ours (`mm2_checkpoint_checkpoint_latency_ms`)
//! and, when enabled, MirrorMaker 2's names as Strimzi's metrics rules export
//! them (`kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms`
//! and its `_max`, `_min`, `_avg`) and/or KIP-1280's new names as the JMX
//! exporter renders them (`kafka_connect_plugins_checkpoint_latency_ms` and its
//! `_max`, `_min`, `_avg`), at the configured granularity (docs/operations.md,
//! Metrics).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabel, EncodeLabelSet, LabelSetEncoder,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::config::metrics::{LatencyGranularity, MetricsSettings, Mm2NameFormats};
use crate::core::name::{Name, NameKey, by_name};
use crate::core::topic_ids::TopicIds;

/// Prefix of the MM2-compatible names: what Strimzi's JMX exporter rules (and
/// its metrics reporter) make of `kafka.connect.mirror:type=MirrorCheckpointConnector`.
pub const MM2_PREFIX: &str = "kafka_connect_mirror_mirrorcheckpointconnector";

/// Prefix of KIP-1280's new names (MM2 4.3, `metric.names.formats = new`):
/// what the JMX exporter makes of `kafka.connect:type=plugins,...`, the MBeans
/// Connect registers a task's plugin metrics under (docs/operations.md,
/// "MirrorMaker 2's names").
pub const MM2_NEW_PREFIX: &str = "kafka_connect_plugins";

/// The `connector` tag of the new names: the connector's name, which MM2's
/// dedicated mode sets to the connector class's simple name.
const MM2_CONNECTOR: &str = "MirrorCheckpointConnector";

/// The `task` tag of the new names: one process checkpoints all of a flow's
/// groups, as MM2's task 0 does with `tasks.max = 1`.
const MM2_TASK: &str = "0";

/// Kafka's default `metrics.sample.window.ms`: one sample of max, min and avg.
const SAMPLE_WINDOW: Duration = Duration::from_secs(30);

/// Kafka's default `metrics.num.samples`: max, min and avg cover this many
/// windows.
const SAMPLES: usize = 2;

/// One latency series: the flow and, depending on the granularity, the group,
/// topic and partition. The names are interned (see [`LatencyIndex`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct LatencyKey {
    flow: Arc<str>,
    group: Option<Arc<str>>,
    topic: Option<Arc<str>>,
    partition: Option<i32>,
}

impl LatencyKey {
    /// The labels after `first`: group, topic and partition, when present.
    fn encode_rest(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        if let Some(group) = &self.group {
            ("group", &**group).encode(encoder.encode_label())?;
        }
        if let Some(topic) = &self.topic {
            ("topic", &**topic).encode(encoder.encode_label())?;
        }
        if let Some(partition) = self.partition {
            ("partition", partition).encode(encoder.encode_label())?;
        }
        Ok(())
    }
}

/// The labels of one of our series as the collector writes them: the same as
/// its [`LatencyKey`]'s, borrowed from the index.
struct SeriesLabels<'a> {
    flow: &'a str,
    group: Option<&'a str>,
    topic: Option<&'a str>,
    partition: Option<i32>,
}

impl EncodeLabelSet for SeriesLabels<'_> {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        ("flow", self.flow).encode(encoder.encode_label())?;
        if let Some(group) = self.group {
            ("group", group).encode(encoder.encode_label())?;
        }
        if let Some(topic) = self.topic {
            ("topic", topic).encode(encoder.encode_label())?;
        }
        if let Some(partition) = self.partition {
            ("partition", partition).encode(encoder.encode_label())?;
        }
        Ok(())
    }
}

impl EncodeLabelSet for LatencyKey {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        ("flow", &*self.flow).encode(encoder.encode_label())?;
        self.encode_rest(encoder)
    }
}

/// The labels of an MM2-compatible series: MM2 tags its sensors with the
/// connector's `source` and `target` aliases instead of a flow.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Mm2Labels {
    source: Arc<str>,
    target: Arc<str>,
    key: LatencyKey,
}

impl EncodeLabelSet for Mm2Labels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        ("source", &*self.source).encode(encoder.encode_label())?;
        ("target", &*self.target).encode(encoder.encode_label())?;
        self.key.encode_rest(encoder)
    }
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// The labels of a series under KIP-1280's new names: Connect's plugin tags
/// (`connector`, `task`) first, then MM2's own, the order of the MBean's keys.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct PluginLabels(Mm2Labels);

impl EncodeLabelSet for PluginLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        ("connector", MM2_CONNECTOR).encode(encoder.encode_label())?;
        ("task", MM2_TASK).encode(encoder.encode_label())?;
        self.0.encode(encoder)
    }
}

/// MM2's `checkpoint-latency-ms` sensor under one name format, labelled `L`.
struct Mm2Families<L> {
    value: Family<L, FloatGauge>,
    max: Family<L, FloatGauge>,
    min: Family<L, FloatGauge>,
    avg: Family<L, FloatGauge>,
}

impl<L: Clone + std::hash::Hash + Eq> Mm2Families<L> {
    fn new() -> Self {
        Mm2Families {
            value: Family::default(),
            max: Family::default(),
            min: Family::default(),
            avg: Family::default(),
        }
    }

    fn each(&self) -> [&Family<L, FloatGauge>; 4] {
        [&self.value, &self.max, &self.min, &self.avg]
    }

    /// Sets the series of `labels` to the latest value and the statistics.
    fn set(&self, labels: &L, value: f64, (max, min, avg): (f64, f64, f64)) {
        self.value.get_or_create(labels).set(value);
        self.max.get_or_create(labels).set(max);
        self.min.get_or_create(labels).set(min);
        self.avg.get_or_create(labels).set(avg);
    }

    /// Removes the series of `labels`.
    fn remove(&self, labels: &L) {
        for family in self.each() {
            family.remove(labels);
        }
    }
}

/// MM2's sensor under the name formats enabled: the legacy names, KIP-1280's
/// new names, or both (at least one).
struct Mm2Export {
    legacy: Option<Mm2Families<Mm2Labels>>,
    new: Option<Mm2Families<PluginLabels>>,
}

impl Mm2Export {
    fn new(formats: Mm2NameFormats) -> Self {
        Mm2Export {
            legacy: formats.legacy().then(Mm2Families::new),
            new: formats.new_names().then(Mm2Families::new),
        }
    }

    /// Sets the series of `labels` under every enabled format.
    fn set(&self, labels: Mm2Labels, value: f64, stats: (f64, f64, f64)) {
        if let Some(legacy) = &self.legacy {
            legacy.set(&labels, value, stats);
        }
        if let Some(new) = &self.new {
            new.set(&PluginLabels(labels), value, stats);
        }
    }

    /// Removes the series of `labels` under every enabled format.
    fn remove(&self, labels: Mm2Labels) {
        if let Some(legacy) = &self.legacy {
            legacy.remove(&labels);
        }
        if let Some(new) = &self.new {
            new.remove(&PluginLabels(labels));
        }
    }
}

/// One window of a sampled statistic, as Kafka's `SampledStat` keeps it.
#[derive(Clone, Copy, Debug)]
struct Sample {
    start: Instant,
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
}

/// Max, min and average of the values recorded in the last [`SAMPLES`]
/// windows of [`SAMPLE_WINDOW`], computed as Kafka's `Max`, `Min` and `Avg`
/// stats do with their default configuration.
#[derive(Clone, Debug, Default)]
pub(super) struct SampledLatency {
    samples: [Option<Sample>; SAMPLES],
    current: usize,
}

impl SampledLatency {
    /// Records `value` at `now`; returns (max, min, avg) over the live windows.
    fn record(&mut self, now: Instant, value: f64) -> (f64, f64, f64) {
        let fresh = Sample {
            start: now,
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        };
        let expired = |s: &Sample| now.saturating_duration_since(s.start) >= SAMPLE_WINDOW;
        match &self.samples[self.current] {
            Some(s) if !expired(s) => {}
            Some(_) => {
                self.current = (self.current + 1) % SAMPLES;
                self.samples[self.current] = Some(fresh);
            }
            None => self.samples[self.current] = Some(fresh),
        }
        if let Some(s) = &mut self.samples[self.current] {
            s.count += 1;
            s.sum += value;
            s.min = s.min.min(value);
            s.max = s.max.max(value);
        }
        let horizon = SAMPLE_WINDOW * SAMPLES as u32;
        let live = self
            .samples
            .iter()
            .flatten()
            .filter(|s| now.saturating_duration_since(s.start) < horizon);
        let (mut count, mut sum, mut min, mut max) = (0u64, 0.0, f64::INFINITY, f64::NEG_INFINITY);
        for s in live {
            count += s.count;
            sum += s.sum;
            min = min.min(s.min);
            max = max.max(s.max);
        }
        (max, min, sum / count.max(1) as f64)
    }
}

/// Our series and their values, the MM2 statistics.
///
/// There can be one series per (group, partition) (a million at 100,000
/// groups × 10 partitions), so they are not a metric family (a hash map entry
/// with its own label set and a shared gauge each) but 12-byte entries in a
/// sorted vector per group, written out by [`OursCollector`] at each scrape;
/// the flow and group names are interned (every series shares one `Arc<str>`
/// per distinct name) and the topic names held as counted `u32` ids.
#[derive(Debug, Default)]
pub(super) struct LatencyIndex {
    /// Every flow and group name in use by a series (and the topic names of
    /// the MM2 statistics' keys).
    pub(super) names: HashSet<Arc<str>>,
    /// The topic names the series entries hold, by id.
    pub(super) topics: TopicIds,
    /// flow → group → the series that group's checkpoints set, with their
    /// latest value in ms.
    pub(super) series: BTreeMap<Arc<str>, BTreeMap<Name, GroupSeries>>,
    /// flow → the value of its series at flow granularity (it belongs to no
    /// group).
    flow_series: BTreeMap<Arc<str>, i64>,
    /// The MM2 statistics of each series (when MM2 names are enabled).
    stats: HashMap<LatencyKey, SampledLatency>,
    /// flow → the connector's (source, target) aliases, for MM2's tags.
    aliases: HashMap<String, (Arc<str>, Arc<str>)>,
}

/// The shared copy of `name` in `names`, added if new.
fn intern_in(names: &mut HashSet<Arc<str>>, name: &str) -> Arc<str> {
    if let Some(shared) = names.get(name) {
        return Arc::clone(shared);
    }
    let shared: Arc<str> = Arc::from(name);
    names.insert(Arc::clone(&shared));
    shared
}

/// [`SeriesEntry::topic`] of the one series of a group at group granularity
/// (no topic or partition label).
const NO_TOPIC: u32 = u32::MAX;

/// [`SeriesEntry::ms`] of a value too large for a `u32` (49.7 days), kept in
/// [`GroupSeries::wide`] instead.
const WIDE: u32 = u32::MAX;

/// One series of a group: its topic (an id in [`LatencyIndex::topics`], or
/// [`NO_TOPIC`]), its partition (unused without a topic) and its latest value
/// in ms; 12 bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct SeriesEntry {
    pub(super) topic: u32,
    partition: i32,
    ms: u32,
}

/// The series a group's checkpoints set, sorted by their (topic, partition)
/// labels as the exposition lists them: by topic name, then partition.
#[derive(Debug, Default)]
pub(super) struct GroupSeries {
    pub(super) entries: Vec<SeriesEntry>,
    /// The values of the entries marked [`WIDE`], by (topic, partition).
    wide: Option<Box<WideValues>>,
}

/// Values too large for a [`SeriesEntry`], by (topic, partition); boxed in
/// [`GroupSeries`] so a group without any (every group, in practice) pays
/// 8 bytes for the field, not a map's 24.
#[derive(Debug, Default)]
struct WideValues(BTreeMap<(u32, i32), i64>);

impl GroupSeries {
    /// The (topic, partition) labels of `e`.
    fn labels<'a>(topics: &'a TopicIds, e: &SeriesEntry) -> (Option<&'a str>, Option<i32>) {
        match e.topic {
            NO_TOPIC => (None, None),
            id => (Some(topics.name(id)), Some(e.partition)),
        }
    }

    /// The latest value of `e`, in ms.
    fn ms(&self, e: &SeriesEntry) -> i64 {
        match e.ms {
            WIDE => self
                .wide
                .as_ref()
                .and_then(|w| w.0.get(&(e.topic, e.partition)))
                .copied()
                .unwrap_or(i64::from(WIDE)),
            ms => i64::from(ms),
        }
    }

    /// Sets the series labelled `topic` `partition` (both `None` at group
    /// granularity) to `ms`, holding a new series' topic in `topics`.
    fn set(&mut self, topics: &mut TopicIds, topic: Option<&str>, partition: Option<i32>, ms: i64) {
        let i = self.find_or_insert(topics, topic, partition);
        self.write(i, ms);
    }

    /// [`set`](Self::set) for the next checkpoint of a run of the group's
    /// checkpoints, `run` saying where the last one's series was. A plan
    /// lists a group's checkpoints in the order the series are sorted in, so
    /// this one's series is usually the entry after the last one (a round
    /// that updates them) or a new entry after the last (the first round):
    /// both are recognised by topic id and partition, without comparing topic
    /// names. Anything else takes the search of [`set`](Self::set).
    fn set_next<'a>(
        &mut self,
        topics: &mut TopicIds,
        (topic, partition): (Option<&'a str>, Option<i32>),
        ms: i64,
        run: &mut RunHint<'a>,
    ) {
        let id = match (topic, run.topic) {
            (None, _) => Some(NO_TOPIC),
            (Some(t), Some((last, id))) if last == t => Some(id),
            (Some(t), _) => topics.id(t),
        };
        let p = partition.unwrap_or(0);
        let at_hint = self.entries.get(run.next);
        let i = match (id, at_hint, self.entries.last()) {
            (Some(id), Some(e), _) if e.topic == id && e.partition == p => run.next,
            (Some(id), None, Some(last))
                if id != NO_TOPIC && last.topic == id && last.partition < p =>
            {
                // After the last series of the same topic: appended, the
                // entries stay sorted.
                topics.hold_id(id);
                self.push_entry(SeriesEntry {
                    topic: id,
                    partition: p,
                    ms: 0,
                })
            }
            _ => self.find_or_insert(topics, topic, partition),
        };
        self.write(i, ms);
        run.next = i + 1;
        run.topic = topic.map(|t| (t, self.entries[i].topic));
    }

    /// The index of the series labelled `topic` `partition`, inserted (its
    /// topic held in `topics`) where the order wants it if there is none.
    fn find_or_insert(
        &mut self,
        topics: &mut TopicIds,
        topic: Option<&str>,
        partition: Option<i32>,
    ) -> usize {
        let found = self
            .entries
            .binary_search_by(|e| Self::labels(topics, e).cmp(&(topic, partition)));
        match found {
            Ok(i) => i,
            Err(i) => {
                self.reserve_one();
                let entry = SeriesEntry {
                    topic: topic.map_or(NO_TOPIC, |t| topics.hold(t)),
                    partition: partition.unwrap_or(0),
                    ms: 0,
                };
                self.entries.insert(i, entry);
                i
            }
        }
    }

    /// Appends `entry`; its index.
    fn push_entry(&mut self, entry: SeriesEntry) -> usize {
        self.reserve_one();
        self.entries.push(entry);
        self.entries.len() - 1
    }

    /// Room for one more entry. Grows by an eighth, not double: most groups
    /// stop growing after the first round.
    fn reserve_one(&mut self) {
        if self.entries.len() == self.entries.capacity() {
            self.entries.reserve_exact((self.entries.len() / 8).max(1));
        }
    }

    /// Sets entry `i`'s value to `ms`.
    fn write(&mut self, i: usize, ms: i64) {
        let e = &mut self.entries[i];
        let wide_key = (e.topic, e.partition);
        match u32::try_from(ms) {
            Ok(small) if small != WIDE => {
                e.ms = small;
                if let Some(wide) = &mut self.wide {
                    wide.0.remove(&wide_key);
                    if wide.0.is_empty() {
                        self.wide = None;
                    }
                }
            }
            _ => {
                e.ms = WIDE;
                self.wide.get_or_insert_default().0.insert(wide_key, ms);
            }
        }
    }
}

/// Where the last checkpoint of a run of one group's checkpoints found its
/// series ([`GroupSeries::set_next`]): the index after its entry, and its
/// topic's name and id.
#[derive(Default)]
struct RunHint<'a> {
    next: usize,
    topic: Option<(&'a str, u32)>,
}

/// Writes our `checkpoint_latency_ms` series from the index at each scrape.
#[derive(Debug)]
struct OursCollector {
    index: Arc<Mutex<LatencyIndex>>,
}

/// Series the collector copies out of the index per lock: it holds the lock
/// only while copying them (whole groups, so a batch may hold more), and
/// writes them with the lock released, so a round that sets a latency waits at
/// most for one batch's copy, never for a slow scraper.
const BATCH_SERIES: usize = 256;

/// One series copied out of the index: what the text of its sample needs.
struct CopiedSeries {
    flow: Arc<str>,
    group: Arc<str>,
    topic: Option<Arc<str>>,
    partition: Option<i32>,
    ms: i64,
}

impl LatencyIndex {
    /// Copies the series of whole groups after `after` (flow, group), in the
    /// exposition's order, into `batch` until it holds [`BATCH_SERIES`] or
    /// every group was copied.
    fn copy_batch(&self, after: Option<&(Arc<str>, Arc<str>)>, batch: &mut Vec<CopiedSeries>) {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let flows = match after {
            Some((flow, _)) => self.series.range::<str, _>((Included(&**flow), Unbounded)),
            None => self.series.range::<str, _>(..),
        };
        for (flow, groups) in flows {
            let groups = match after {
                Some((after_flow, group)) if after_flow == flow => {
                    let group: &str = group;
                    groups.range::<dyn NameKey, _>((Excluded(by_name(&group)), Unbounded))
                }
                _ => groups.range::<dyn NameKey, _>(..),
            };
            for (group, series) in groups {
                for e in &series.entries {
                    let (topic, partition) = match e.topic {
                        NO_TOPIC => (None, None),
                        // "" for an id no entry holds, as `GroupSeries::labels`.
                        id => (
                            Some(
                                self.topics
                                    .shared_name(id)
                                    .map_or_else(|| Arc::from(""), Arc::clone),
                            ),
                            Some(e.partition),
                        ),
                    };
                    batch.push(CopiedSeries {
                        flow: Arc::clone(flow),
                        group: Arc::clone(group.shared()),
                        topic,
                        partition,
                        ms: series.ms(e),
                    });
                }
                if batch.len() >= BATCH_SERIES {
                    return;
                }
            }
        }
    }
}

impl Collector for OursCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let lock = || self.index.lock().unwrap_or_else(PoisonError::into_inner);
        let mut family = encoder.encode_descriptor(
            "checkpoint_latency_ms",
            // A registered family's help gets a final "." from the registry;
            // a collector writes its own, so the text stays the same.
            "Milliseconds from a checkpoint record's timestamp to the broker's \
             acknowledgement, for the latest checkpoint of each series.",
            None,
            MetricType::Gauge,
        )?;
        // One series per flow at most: copied at once.
        let flow_series: Vec<(Arc<str>, i64)> = lock()
            .flow_series
            .iter()
            .map(|(flow, ms)| (Arc::clone(flow), *ms))
            .collect();
        for (flow, ms) in &flow_series {
            let labels = SeriesLabels {
                flow,
                group: None,
                topic: None,
                partition: None,
            };
            family.encode_family(&labels)?.encode_gauge(ms)?;
        }
        drop(flow_series);
        // The groups' series, a batch per lock. A group added or removed
        // between two batches is listed or not depending on where it sorts;
        // every series is written at most once, in the order of one text.
        let mut batch = Vec::with_capacity(BATCH_SERIES);
        let mut after: Option<(Arc<str>, Arc<str>)> = None;
        loop {
            batch.clear();
            lock().copy_batch(after.as_ref(), &mut batch);
            let Some(last) = batch.last() else {
                return Ok(());
            };
            after = Some((Arc::clone(&last.flow), Arc::clone(&last.group)));
            for s in &batch {
                let labels = SeriesLabels {
                    flow: &s.flow,
                    group: Some(&s.group),
                    topic: s.topic.as_deref(),
                    partition: s.partition,
                };
                family.encode_family(&labels)?.encode_gauge(&s.ms)?;
            }
            super::stream::yield_point()?;
        }
    }
}

impl LatencyIndex {
    /// The series of `group` in `flow` (created, their names interned, if
    /// new) and the topic ids their entries hold.
    fn group_series(&mut self, flow: &str, group: &str) -> (&mut GroupSeries, &mut TopicIds) {
        let LatencyIndex {
            names,
            series,
            topics,
            ..
        } = self;
        // The names are interned first (a hash lookup) so one search of each
        // map finds or creates the entry.
        let groups = series.entry(intern_in(names, flow)).or_default();
        let group_series = groups
            .entry(Name::from(intern_in(names, group)))
            .or_default();
        (group_series, topics)
    }

    /// The shared copy of `name`, added if new.
    fn intern(&mut self, name: &str) -> Arc<str> {
        intern_in(&mut self.names, name)
    }

    /// Drops the names no series uses any more.
    fn forget_unused_names(&mut self) {
        self.names.retain(|name| Arc::strong_count(name) > 1);
    }

    /// MM2's `source` and `target` tags of `flow`: the aliases given to
    /// [`Metrics::register_flow`], else the two sides of the flow's name.
    fn aliases(&self, flow: &str) -> (Arc<str>, Arc<str>) {
        if let Some((s, t)) = self.aliases.get(flow) {
            return (Arc::clone(s), Arc::clone(t));
        }
        let (s, t) = flow.split_once("->").unwrap_or((flow, ""));
        (Arc::from(s), Arc::from(t))
    }
}

/// The latency families and their index.
pub(super) struct LatencyMetrics {
    granularity: LatencyGranularity,
    mm2: Option<Mm2Export>,
    index: Arc<Mutex<LatencyIndex>>,
}

impl LatencyMetrics {
    /// The families for `settings`, not registered yet.
    pub(super) fn new(settings: MetricsSettings) -> Self {
        let mm2 = settings
            .mm2_names
            .then(|| Mm2Export::new(settings.mm2_name_formats));
        LatencyMetrics {
            granularity: settings.latency_granularity,
            mm2,
            index: Arc::new(Mutex::new(LatencyIndex::default())),
        }
    }

    /// Registers our series in `prefixed` (the `mm2_checkpoint` registry).
    pub(super) fn register(&self, prefixed: &mut Registry) {
        prefixed.register_collector(Box::new(OursCollector {
            index: Arc::clone(&self.index),
        }));
    }

    /// Registers the MM2-compatible families, if enabled, in `root` (the
    /// registry without a prefix).
    pub(super) fn register_mm2(&self, root: &mut Registry) {
        let Some(export) = &self.mm2 else {
            return;
        };
        if let Some(families) = &export.legacy {
            register_mm2_families(root.sub_registry_with_prefix(MM2_PREFIX), families);
        }
        if let Some(families) = &export.new {
            register_mm2_families(root.sub_registry_with_prefix(MM2_NEW_PREFIX), families);
        }
    }
}

/// Registers MM2's four checkpoint-latency attributes of `families` in `sub`
/// (the registry of one name format's prefix).
fn register_mm2_families<L>(sub: &mut Registry, families: &Mm2Families<L>)
where
    L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
{
    for (name, help, family) in [
        (
            "checkpoint_latency_ms",
            "MM2 checkpoint-latency-ms: milliseconds from a checkpoint record's \
                 timestamp to the broker's acknowledgement (the latest)",
            &families.value,
        ),
        (
            "checkpoint_latency_ms_max",
            "MM2 checkpoint-latency-ms-max: the largest latency of the last 60 s",
            &families.max,
        ),
        (
            "checkpoint_latency_ms_min",
            "MM2 checkpoint-latency-ms-min: the smallest latency of the last 60 s",
            &families.min,
        ),
        (
            "checkpoint_latency_ms_avg",
            "MM2 checkpoint-latency-ms-avg: the average latency of the last 60 s",
            &families.avg,
        ),
    ] {
        sub.register(name, help, family.clone());
    }
}

impl LatencyMetrics {
    /// Sets the checkpoint latency of `group`'s checkpoint of `topic`
    /// `partition` in `flow`: the time from the checkpoint record's timestamp
    /// to the broker's acknowledgement (MM2's `checkpoint-latency-ms`). At a
    /// coarser granularity the series of the group or flow takes the value.
    pub(super) fn set_checkpoint_latency(
        &self,
        flow: &str,
        group: &str,
        topic: &str,
        partition: i32,
        latency: Duration,
    ) {
        self.set_checkpoint_latency_at(Instant::now(), flow, group, topic, partition, latency);
    }

    /// [`set_checkpoint_latency`](Self::set_checkpoint_latency) of every
    /// (group, topic, partition) of `checkpoints`, all acknowledged with the
    /// same `latency`: the series' index is locked once for them all.
    pub(super) fn set_checkpoint_latencies<'a>(
        &self,
        flow: &str,
        checkpoints: impl IntoIterator<Item = (&'a str, &'a str, i32)>,
        latency: Duration,
    ) {
        let now = Instant::now();
        let ms = i64::try_from(latency.as_millis()).unwrap_or(i64::MAX);
        let mut index = self.latency_index();
        let lat = self;
        let by_partition = match lat.granularity {
            _ if lat.mm2.is_some() => None,
            LatencyGranularity::Flow => None,
            LatencyGranularity::Partition => Some(true),
            LatencyGranularity::Group => Some(false),
        };
        let Some(by_partition) = by_partition else {
            for (group, topic, partition) in checkpoints {
                self.set_latency_in(&mut index, now, flow, group, topic, partition, ms);
            }
            return;
        };
        // Our series only: a group's checkpoints come one after the other (a
        // plan lists them by group), so the group's series are looked up once
        // per run of its checkpoints, and within it each series is found by
        // its topic id and partition where it can be ([`GroupSeries::set_next`]).
        // A million checkpoints cost ~0.7 s one lookup of names each
        // (docs/benchmarks.md, issue 18).
        let mut checkpoints = checkpoints.into_iter().peekable();
        while let Some((group, topic, partition)) = checkpoints.next() {
            let (series, topics) = index.group_series(flow, group);
            let mut run = RunHint::default();
            let mut next = Some((topic, partition));
            while let Some((topic, partition)) = next {
                let labels = match by_partition {
                    true => (Some(topic), Some(partition)),
                    false => (None, None),
                };
                series.set_next(topics, labels, ms, &mut run);
                next = checkpoints
                    .next_if(|(g, _, _)| *g == group)
                    .map(|(_, t, p)| (t, p));
            }
        }
    }

    pub(super) fn set_checkpoint_latency_at(
        &self,
        now: Instant,
        flow: &str,
        group: &str,
        topic: &str,
        partition: i32,
        latency: Duration,
    ) {
        let ms = i64::try_from(latency.as_millis()).unwrap_or(i64::MAX);
        let mut index = self.latency_index();
        self.set_latency_in(&mut index, now, flow, group, topic, partition, ms);
    }

    /// Sets one checkpoint's latency (`ms`) in `index`, held locked.
    #[allow(clippy::too_many_arguments)]
    fn set_latency_in(
        &self,
        index: &mut LatencyIndex,
        now: Instant,
        flow: &str,
        group: &str,
        topic: &str,
        partition: i32,
        ms: i64,
    ) {
        let lat = self;
        let flow_name = index.intern(flow);
        let (series_topic, series_partition) = match lat.granularity {
            LatencyGranularity::Partition => (Some(topic), Some(partition)),
            LatencyGranularity::Group | LatencyGranularity::Flow => (None, None),
        };
        // At flow granularity no series names the group, so its name is not
        // kept (100,000 names would be ~6 MB held for nothing).
        let group_name = match lat.granularity {
            LatencyGranularity::Flow => None,
            LatencyGranularity::Group | LatencyGranularity::Partition => Some(index.intern(group)),
        };
        if let Some(mm2) = &lat.mm2 {
            let key = LatencyKey {
                flow: Arc::clone(&flow_name),
                group: group_name.clone(),
                topic: series_topic.map(|t| index.intern(t)),
                partition: series_partition,
            };
            let stats = index
                .stats
                .entry(key.clone())
                .or_default()
                .record(now, ms as f64);
            let (source, target) = index.aliases(flow);
            let labels = Mm2Labels {
                source,
                target,
                key,
            };
            mm2.set(labels, ms as f64, stats);
        }
        let Some(group_name) = group_name else {
            index.flow_series.insert(flow_name, ms);
            return;
        };
        // Looked up before inserting, so updating an existing series
        // allocates nothing.
        let LatencyIndex { series, topics, .. } = index;
        let groups = match series.get_mut(flow) {
            Some(groups) => groups,
            None => series.entry(flow_name).or_default(),
        };
        let group_series = match groups.get_mut(by_name(&group)) {
            Some(series) => series,
            None => groups.entry(Name::from(group_name)).or_default(),
        };
        group_series.set(topics, series_topic, series_partition, ms);
    }

    /// Removes every checkpoint-latency series of `group` in `flow` (the
    /// group was deleted or is no longer checkpointed).
    pub(super) fn remove_checkpoint_latency_group(&self, flow: &str, group: &str) {
        let mut index = self.latency_index();
        self.remove_latency_group(&mut index, flow, group);
        index.forget_unused_names();
    }

    /// Removes the series of `group` in `flow` from the families and `index`,
    /// leaving their names interned.
    fn remove_latency_group(&self, index: &mut LatencyIndex, flow: &str, group: &str) {
        let Some((flow_name, groups)) = index.series.get_key_value(flow) else {
            return;
        };
        let flow_name = Arc::clone(flow_name);
        let Some((group_name, _)) = groups.get_key_value(by_name(&group)) else {
            return;
        };
        let group_name = Arc::clone(group_name.shared());
        let Some(groups) = index.series.get_mut(flow) else {
            return;
        };
        let series = groups.remove(by_name(&group)).unwrap_or_default();
        if groups.is_empty() {
            index.series.remove(flow);
        }
        let lat = self;
        let Some(mm2) = &lat.mm2 else {
            // No MM2 statistics or families to remove.
            for e in &series.entries {
                if e.topic != NO_TOPIC {
                    index.topics.release(e.topic);
                }
            }
            return;
        };
        let (source, target) = index.aliases(flow);
        for e in &series.entries {
            let (topic, partition) = GroupSeries::labels(&index.topics, e);
            // The MM2 statistics' keys hold the topic names interned.
            let topic = topic.map(|t| index.names.get(t).cloned().unwrap_or_else(|| Arc::from(t)));
            let key = LatencyKey {
                flow: Arc::clone(&flow_name),
                group: Some(Arc::clone(&group_name)),
                topic,
                partition,
            };
            if e.topic != NO_TOPIC {
                index.topics.release(e.topic);
            }
            index.stats.remove(&key);
            mm2.remove(Mm2Labels {
                source: Arc::clone(&source),
                target: Arc::clone(&target),
                key,
            });
        }
    }

    /// Removes the checkpoint-latency series of every group of `flow` for
    /// which `keep` returns false. Call it after each round with the set of
    /// groups still checkpointed.
    pub(super) fn retain_checkpoint_latency_groups(&self, flow: &str, keep: impl Fn(&str) -> bool) {
        let mut index = self.latency_index();
        let gone: Vec<Name> = index
            .series
            .get(flow)
            .into_iter()
            .flat_map(BTreeMap::keys)
            .filter(|g| !keep(g))
            .cloned()
            .collect();
        if gone.is_empty() {
            return;
        }
        for group in gone {
            self.remove_latency_group(&mut index, flow, &group);
        }
        index.forget_unused_names();
    }

    /// Removes every checkpoint-latency series of `flow`, its flow-level
    /// series too: this instance stopped writing the flow, so the figures
    /// are another instance's to report now.
    pub(super) fn remove_latency_flow(&self, flow: &str) {
        self.retain_checkpoint_latency_groups(flow, |_| false);
        let mut index = self.latency_index();
        let Some((flow_name, _)) = index.flow_series.remove_entry(flow) else {
            return;
        };
        if let Some(mm2) = &self.mm2 {
            let key = LatencyKey {
                flow: flow_name,
                group: None,
                topic: None,
                partition: None,
            };
            index.stats.remove(&key);
            let (source, target) = index.aliases(flow);
            mm2.remove(Mm2Labels {
                source,
                target,
                key,
            });
        }
        index.forget_unused_names();
    }

    /// Records the connector aliases MM2 would tag `flow`'s series with.
    pub(super) fn set_latency_aliases(&self, flow: &str, source: &str, target: &str) {
        let mut index = self.latency_index();
        let aliases = (Arc::from(source), Arc::from(target));
        index.aliases.insert(flow.to_string(), aliases);
    }

    pub(super) fn latency_index(&self) -> std::sync::MutexGuard<'_, LatencyIndex> {
        // The index holds no invariant a panicking holder could break halfway.
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
