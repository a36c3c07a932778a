//! The offset-syncs stage ([`OffsetSyncs`]): the offset-sync store, read
//! from the offset-syncs topic to its end at start and followed from there
//! on, with the sync-history writer fed every applied sync.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use kafka_lite::PartitionReader;
use kafka_lite::records::{ConsumerRecord, RecordRef};

use crate::core::format::OffsetSyncRef;
use crate::core::sync_archive::ArchiveRestore;
use crate::core::{DecodeError, InitMode, OffsetSync, OffsetSyncStore, Precision, TopicPartition};
use crate::metrics::TopicKind;

use super::super::kafka::fetch_options;
use super::archive::SyncHistory;
use super::cluster::FlowCluster;
use super::context::{FlowContext, StepError};
use super::read::{Prepare, note_skipped, read_to_end_prepared};

/// The offset-syncs stage: the offset-sync store and where its reading of
/// the offset-syncs topic stands.
pub struct OffsetSyncs {
    /// The offset-sync store.
    store: OffsetSyncStore,
    /// Next offset of the offset-syncs topic to read.
    position: i64,
    /// With the commit follower: the upstream partitions new offset syncs
    /// arrived for since the follower last looked (`None` when polling).
    synced: Option<BTreeSet<TopicPartition>>,
    /// The kinds of undecodable records already warned about.
    logged: BTreeSet<&'static str>,
    /// Partitions already warned about as past their precise-translation budget.
    fallback_warned: Fallbacks,
}

/// The partitions already logged as past their precise-translation budget,
/// and at which level.
#[derive(Default)]
struct Fallbacks {
    warned: BTreeSet<TopicPartition>,
    /// A one-off read: at DEBUG, not WARN.
    quiet: bool,
}

impl OffsetSyncs {
    /// The stage on `store` (not read yet), at the topic's offset 0; with
    /// `following`, new syncs are noted per partition for the commit
    /// follower.
    pub fn new(store: OffsetSyncStore, following: bool) -> Self {
        OffsetSyncs {
            store,
            position: 0,
            synced: following.then(BTreeSet::new),
            logged: BTreeSet::new(),
            fallback_warned: Fallbacks::default(),
        }
    }

    /// For a one-off read (`cutover`, `status`): a partition past the precise
    /// budget is logged at DEBUG instead of WARN. Such a read keeps every
    /// sync of every partition of the topic (`core::cutover::reading_precision`),
    /// not only of those it translates, and the daemon's status pass reads
    /// the topic again every interval.
    pub fn quiet_fallbacks(mut self) -> Self {
        self.fallback_warned.quiet = true;
        self
    }

    /// The offset-sync store.
    pub fn store(&self) -> &OffsetSyncStore {
        &self.store
    }

    /// Next offset of the offset-syncs topic to read.
    pub fn position(&self) -> i64 {
        self.position
    }

    /// Moves the read position (what a test does to play a recreated topic).
    #[cfg(test)]
    pub(super) fn set_position(&mut self, position: i64) {
        self.position = position;
    }

    /// Whether `tp` was warned about as past its precise-translation budget.
    #[cfg(test)]
    pub(super) fn fallback_warned(&self, tp: &TopicPartition) -> bool {
        self.fallback_warned.warned.contains(tp)
    }

    /// Whether partitions got new offset syncs since the follower last took
    /// them (always `false` when polling).
    pub fn has_new_syncs(&self) -> bool {
        self.synced.as_ref().is_some_and(|s| !s.is_empty())
    }

    /// The partitions that got new offset syncs since the last call (empty
    /// when polling).
    pub fn take_new_syncs(&mut self) -> BTreeSet<TopicPartition> {
        self.synced.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The flow polls from now on: new offset syncs are no longer noted per
    /// partition.
    pub fn stop_following(&mut self) {
        self.synced = None;
    }

    /// The initial read: with precise translation, opens the sync-history
    /// topic (`history`), reads the offset-syncs topic to its end through
    /// its restore, and then hands the restore decision's outcome to the
    /// store (read in `mode`). Returns the number of syncs applied.
    pub async fn load<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        history: &mut SyncHistory,
        mode: InitMode,
    ) -> Result<u64, StepError> {
        let mut restore = history.open(ctx, self.store.precision()).await;
        let applied = self.read_all(ctx, history, restore.as_mut()).await?;
        if let Some(restore) = restore {
            let fell_back = history.finish(ctx, restore, self.position, mode, &mut self.store);
            self.fallback_warned.warned.extend(fell_back);
        }
        Ok(applied)
    }

    /// Reads new offset syncs (non-blocking) up to the current end.
    pub async fn poll<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        history: &mut SyncHistory,
    ) -> Result<u64, StepError> {
        let c = &ctx.syncs_cluster;
        let mut applied = 0u64;
        loop {
            let pos = self.position;
            let mut reader =
                PartitionReader::new(&ctx.syncs_topic, 0, pos, pos, fetch_options(Duration::ZERO));
            let (records, high_watermark) = match c.follow(&mut reader).await {
                // Our position is past the log end: the topic was deleted and
                // recreated (or truncated). The syncs we hold may describe a
                // log that no longer exists, so start over from the new log.
                Err(e) if e.is_offset_out_of_range() => {
                    applied += self.reread(ctx, history).await?;
                    break;
                }
                r => ctx.step(c, "Fetch", r)?,
            };
            for rec in &records {
                if let Some((topic, partition, _)) = apply_sync_record(
                    ctx,
                    &mut self.store,
                    &mut self.logged,
                    &mut self.fallback_warned,
                    history,
                    rec,
                    true,
                ) {
                    applied += 1;
                    if let Some(synced) = &mut self.synced {
                        synced.insert(TopicPartition::new(topic, partition));
                    }
                }
            }
            let advanced = reader.position() > pos;
            self.position = reader.position();
            if !advanced || self.position >= high_watermark {
                break;
            }
        }
        if applied > 0 {
            ctx.metrics.offset_syncs_read(&ctx.name, applied);
            self.note_fallbacks(ctx);
        }
        Ok(applied)
    }

    /// Sets `precise_fallback_partitions{flow}` from the store.
    fn note_fallbacks<C: FlowCluster>(&self, ctx: &FlowContext<C>) {
        ctx.metrics
            .set_precise_fallback_partitions(&ctx.name, self.store.fallen_back_partitions());
    }

    /// The offset-syncs topic went backwards (its end is below our position):
    /// logs it, drops every sync held and reads the topic again from its start
    /// in must-read-to-end mode, so no translation uses a sync of the old log.
    async fn reread<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        history: &mut SyncHistory,
    ) -> Result<u64, StepError> {
        let c = &ctx.syncs_cluster;
        tracing::warn!(
            flow = %ctx.name, cluster = c.alias(), topic = %ctx.syncs_topic, position = self.position,
            "the offset-syncs topic went backwards (deleted and recreated, or truncated); dropping the syncs held and rereading it from its start"
        );
        self.store =
            OffsetSyncStore::with_precision(InitMode::MustReadToEnd, self.store.precision());
        self.read_all(ctx, history, None).await
    }

    /// Reads the offset-syncs topic from its start to the end captured now into
    /// the store, then ends the store's initial read; returns the number of
    /// syncs applied. Undecodable records are skipped and counted. `restore`,
    /// if given, observes every record (docs/translation.md, "Restarts and
    /// compaction").
    async fn read_all<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        history: &mut SyncHistory,
        mut restore: Option<&mut ArchiveRestore>,
    ) -> Result<u64, StepError> {
        let mut applied = 0u64;
        let OffsetSyncs {
            store,
            logged,
            fallback_warned,
            ..
        } = self;
        // Each fetch's records are decoded into syncs on the fetch's task
        // (another worker thread), straight from the response's bytes (no
        // ConsumerRecord built), so this one only applies them.
        let pos = read_to_end_prepared(
            ctx,
            &ctx.syncs_cluster,
            &ctx.syncs_topic,
            TopicKind::OffsetSyncs,
            Prepare::Visit {
                begin: PreparedSyncs::begin,
                record: PreparedSyncs::push,
            },
            |prepared| {
                for rec in &prepared.records {
                    let (offset, got) = match rec {
                        &PreparedSync::Sync {
                            offset,
                            topic,
                            partition,
                            upstream,
                            downstream,
                        } => {
                            let s = OffsetSyncRef {
                                topic: prepared.topic(topic),
                                partition,
                                upstream_offset: upstream,
                                downstream_offset: downstream,
                            };
                            let got = apply_sync(
                                &ctx.name,
                                store,
                                fallback_warned,
                                history,
                                offset,
                                s,
                                false,
                            );
                            (offset, Some(got))
                        }
                        PreparedSync::Skipped(skipped) => {
                            let (offset, e) = &**skipped;
                            let kind = TopicKind::OffsetSyncs;
                            note_skipped(&ctx.metrics, &ctx.name, kind, e, *offset, logged);
                            (*offset, None)
                        }
                    };
                    if got.is_some() {
                        applied += 1;
                    }
                    if let Some(r) = restore.as_deref_mut() {
                        r.observe(offset, got);
                    }
                }
                Some(prepared)
            },
        )
        .await?;
        self.position = pos;
        self.store.finish_initial_read();
        self.note_fallbacks(ctx);
        Ok(applied)
    }
}

/// Decodes one record of the offset-syncs topic into `syncs`; an
/// undecodable one is counted and warned about once per kind. The rest is
/// [`apply_sync`]'s. Returns the partition (its topic
/// borrowed from the record) and the sync applied, if one was.
fn apply_sync_record<'r, C: FlowCluster>(
    ctx: &FlowContext<C>,
    syncs: &mut OffsetSyncStore,
    logged: &mut BTreeSet<&'static str>,
    warned: &mut Fallbacks,
    history: &mut SyncHistory,
    rec: &'r ConsumerRecord,
    following: bool,
) -> Option<(&'r str, i32, OffsetSync)> {
    match OffsetSyncRef::decode(rec.key.as_deref(), rec.value.as_deref()) {
        Ok(s) => Some(apply_sync(
            &ctx.name, syncs, warned, history, rec.offset, s, following,
        )),
        Err(e) => {
            let kind = TopicKind::OffsetSyncs;
            note_skipped(&ctx.metrics, &ctx.name, kind, &e, rec.offset, logged);
            None
        }
    }
}

/// Applies the sync `s` decoded from the record at `offset` of the
/// offset-syncs topic to `syncs`. With `following` (reading what was
/// appended after the initial read), an upstream offset going backwards is
/// warned about. A partition whose precise history reached its budget is
/// warned about once (`warned`). The sync-history writer (`history`)
/// follows every applied sync. Returns the partition and the sync applied.
/// Nothing is allocated per sync: the topic is looked up by `&str` (the
/// store allocates it once, for its first sync).
fn apply_sync<'r>(
    flow: &str,
    syncs: &mut OffsetSyncStore,
    warned: &mut Fallbacks,
    history: &mut SyncHistory,
    offset: i64,
    s: OffsetSyncRef<'r>,
    following: bool,
) -> (&'r str, i32, OffsetSync) {
    let (topic, partition) = (s.topic, s.partition);
    if following {
        let newest = syncs.layout(topic, partition).and_then(|l| l.slot(0));
        if let Some(newest) = newest.filter(|n| s.upstream_offset < n.upstream) {
            // The store discards the partition's history (as
            // MM2 does); say so, it is rare and worth knowing.
            tracing::warn!(
                flow = %flow,
                topic,
                partition,
                from = newest.upstream,
                to = s.upstream_offset,
                "an offset sync's upstream offset went backwards (source topic recreated or truncated, or MirrorMaker replaying after a restart); translating from the new syncs only"
            );
        }
    }
    let applied = syncs.apply(topic, partition, s.upstream_offset, s.downstream_offset);
    let sync = OffsetSync::new(s.upstream_offset, s.downstream_offset);
    history.on_sync(topic, partition, offset, sync, applied.restarted);
    if applied.fell_back
        && !warned
            .warned
            .contains(&TopicPartition::new(topic, partition))
    {
        let tp = TopicPartition::new(topic, partition);
        let oldest = syncs
            .precise_history(topic, partition)
            .and_then(|h| h.oldest())
            .map_or(s.upstream_offset, |o| o.upstream);
        let budget = match syncs.precision() {
            Precision::Precise { max_syncs } => max_syncs,
            Precision::Mm2 => 0,
        };
        let text = format!(
            "source partition {tp} has more offset syncs than {} = {budget}: offsets below {oldest} \
             are now translated with MirrorMaker 2's precision (logged once per partition; see \
             precise_fallback_partitions)",
            crate::config::TRANSLATION_MAX_SYNCS_KEY
        );
        if warned.quiet {
            tracing::debug!(flow = %flow, topic, partition, budget, oldest_kept = oldest, "{text}");
        } else {
            tracing::warn!(flow = %flow, topic, partition, budget, oldest_kept = oldest, "{text}");
        }
        warned.warned.insert(tp);
    }
    (topic, partition, sync)
}

/// One fetch of the offset-syncs topic decoded into syncs (on the fetch's
/// task): each record's offset and its sync, or why it is not one. A fetch's
/// topic names are kept once each, the syncs refer to them by index.
struct PreparedSyncs {
    topics: Vec<Box<str>>,
    /// The index of each name of `topics`.
    ids: HashMap<Box<str>, u32>,
    /// The topic of the last sync (the syncs of one topic usually come in runs).
    last: Option<u32>,
    records: Vec<PreparedSync>,
}

/// One record of [`PreparedSyncs`]: 40 bytes for a sync (a fetch of 4 MiB holds
/// about 85,000), the rare record that is not one boxed.
enum PreparedSync {
    /// The record at `offset` is a sync: an [`OffsetSyncRef`] whose topic is an
    /// index into [`PreparedSyncs::topics`].
    Sync {
        offset: i64,
        topic: u32,
        partition: i32,
        upstream: i64,
        downstream: i64,
    },
    /// The record at the offset cannot be decoded as a sync.
    Skipped(Box<(i64, DecodeError)>),
}

impl PreparedSyncs {
    /// An empty fetch's worth, reusing `spare`'s allocations if given.
    fn begin(spare: Option<Self>) -> Self {
        match spare {
            Some(mut spare) => {
                spare.topics.clear();
                spare.ids.clear();
                spare.last = None;
                spare.records.clear();
                spare
            }
            None => PreparedSyncs {
                topics: Vec::new(),
                ids: HashMap::new(),
                last: None,
                records: Vec::new(),
            },
        }
    }

    /// Decodes the next record of the fetch, with [`OffsetSyncRef::decode`]'s
    /// checks, borrowed from the fetch response.
    fn push(&mut self, rec: RecordRef<'_>) {
        let offset = rec.offset;
        let prepared = match OffsetSyncRef::decode(rec.key, rec.value) {
            Ok(s) => PreparedSync::Sync {
                offset,
                topic: self.topic_id(s.topic),
                partition: s.partition,
                upstream: s.upstream_offset,
                downstream: s.downstream_offset,
            },
            Err(e) => PreparedSync::Skipped(Box::new((offset, e))),
        };
        self.records.push(prepared);
    }

    /// The index of `topic` in `self.topics`, added if new.
    fn topic_id(&mut self, topic: &str) -> u32 {
        if let Some(id) = self.last.filter(|&id| self.topic(id) == topic) {
            return id;
        }
        let id = match self.ids.get(topic) {
            Some(&id) => id,
            None => {
                // A fetch holds far fewer than 2^32 records.
                let id = u32::try_from(self.topics.len()).unwrap_or(u32::MAX);
                self.topics.push(topic.into());
                self.ids.insert(topic.into(), id);
                id
            }
        };
        self.last = Some(id);
        id
    }

    /// The name of topic `id` (of one of `self.records`).
    fn topic(&self, id: u32) -> &str {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.topics.get(i))
            .map_or("", |t| t)
    }
}
