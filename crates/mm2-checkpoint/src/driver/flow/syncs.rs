//! Reading the state topics: the initial read of the offset-syncs and
//! checkpoints topics to their end, and following the offset-syncs topic.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use kafka_lite::records::{ConsumerRecord, RecordRef};
use kafka_lite::{AheadFetch, PartitionReader, StartOffset};

use crate::core::format::OffsetSyncRef;
use crate::core::sync_archive::ArchiveRestore;
use crate::core::{DecodeError, InitMode, OffsetSync, OffsetSyncStore, Precision, TopicPartition};
use crate::metrics::{self, Metrics, TopicKind};

use super::super::kafka::fetch_options;
use super::{Archive, FlowCluster, FlowContext, FlowState, StepError};

/// How long a fetch of the initial read waits for records.
const READ_WAIT: Duration = Duration::from_millis(500);

impl<C: FlowCluster> FlowContext<C> {
    /// Reads partition 0 of `topic` on `cluster` from the earliest offset to the end
    /// captured at start, handing each record to `apply`. Logs progress every 5 s.
    pub async fn read_to_end(
        &self,
        cluster: &C,
        topic: &str,
        kind: TopicKind,
        mut apply: impl FnMut(&ConsumerRecord),
    ) -> Result<i64, StepError> {
        let keep = Prepare::Records(|records, _| records);
        self.read_to_end_prepared(cluster, topic, kind, keep, |records| {
            records.iter().for_each(&mut apply);
            None
        })
        .await
    }

    /// [`read_to_end`](Self::read_to_end), each fetch's records first turned
    /// into a `T` by `prepare` on the fetch's own task (another worker thread,
    /// while the previous fetch is applied here), then handed to `apply` here,
    /// one fetch after the other in log order. What `apply` gives back is
    /// handed to a later `prepare` to fill again (its allocations reused: a
    /// fresh multi-MB buffer per fetch costs a page fault per 4 KiB).
    pub async fn read_to_end_prepared<T: Send + 'static>(
        &self,
        cluster: &C,
        topic: &str,
        kind: TopicKind,
        prepare: Prepare<T>,
        mut apply: impl FnMut(T) -> Option<T>,
    ) -> Result<i64, StepError> {
        let r = cluster
            .open_reader(topic, 0, StartOffset::Earliest, READ_WAIT)
            .await;
        let reader = self.step(cluster, "ListOffsets", r)?;
        let (start, end) = (reader.position(), reader.end());
        let mut last_log = Instant::now();
        let began = Instant::now();
        let total = end.saturating_sub(start).max(1) as f64;
        let name = kind.log_name();
        // The reader stops at the captured end, or lower if the log was
        // truncated below it meanwhile. Each fetch runs as a task of its own,
        // the next one started before the last one's records are applied
        // here, so the broker's and the network's time, the decoding of its
        // records and `prepare` (on another worker thread) overlap applying
        // them; records are still applied in log order, one fetch after the
        // other.
        // Under `Prepare::Visit` each fetch task also starts the Fetch after
        // its own (where it will end is in its batch headers) before visiting
        // its records, so the broker's time for the next fetch overlaps the
        // decoding of this one; the next task uses it if the reader did end
        // there, else fetches again.
        let (mut reader, first, mut ahead) =
            NextFetch::spawn(cluster, reader.clone(), prepare, None, None)
                .join(cluster, &reader)
                .await;
        let mut fetched = self.step(cluster, "Fetch", first)?;
        let mut spare = None;
        while let Some(prepared) = fetched {
            let next = NextFetch::spawn(cluster, reader.clone(), prepare, spare.take(), ahead);
            spare = apply(prepared);
            let (r, next, next_ahead) = next.join(cluster, &reader).await;
            reader = r;
            ahead = next_ahead;
            fetched = self.step(cluster, "Fetch", next)?;
            let pos = reader.position();
            if kind == TopicKind::OffsetSyncs {
                self.metrics.set_initial_read_progress(
                    &self.name,
                    topic,
                    pos.saturating_sub(start) as f64 / total,
                );
            }
            if last_log.elapsed() >= Duration::from_secs(5) {
                last_log = Instant::now();
                tracing::info!(flow = %self.name, topic, position = pos, end, "reading the {name} topic");
            }
        }
        if kind == TopicKind::OffsetSyncs {
            self.metrics
                .set_initial_read_progress(&self.name, topic, 1.0);
        }
        tracing::info!(
            flow = %self.name, topic, records = end.saturating_sub(start),
            elapsed_ms = began.elapsed().as_millis() as u64,
            "read the {name} topic to its end"
        );
        Ok(reader.position())
    }

    /// Reads new offset syncs (non-blocking) up to the current end.
    pub async fn poll_syncs(&self, state: &mut FlowState) -> Result<u64, StepError> {
        let c = &self.syncs_cluster;
        let mut applied = 0u64;
        loop {
            let pos = state.syncs_pos;
            let mut reader = PartitionReader::new(
                &self.syncs_topic,
                0,
                pos,
                pos,
                fetch_options(Duration::ZERO),
            );
            let (records, high_watermark) = match c.follow(&mut reader).await {
                // Our position is past the log end: the topic was deleted and
                // recreated (or truncated). The syncs we hold may describe a
                // log that no longer exists, so start over from the new log.
                Err(e) if e.is_offset_out_of_range() => {
                    applied += self.reread_syncs(state).await?;
                    break;
                }
                r => self.step(c, "Fetch", r)?,
            };
            for rec in &records {
                if let Some((topic, partition, _)) = self.apply_sync_record(
                    &mut state.syncs,
                    &mut state.logged,
                    &mut state.fallback_warned,
                    state.archive.as_mut(),
                    rec,
                    true,
                ) {
                    applied += 1;
                    if let Some(synced) = &mut state.synced {
                        synced.insert(TopicPartition::new(topic, partition));
                    }
                }
            }
            let advanced = reader.position() > pos;
            state.syncs_pos = reader.position();
            if !advanced || state.syncs_pos >= high_watermark {
                break;
            }
        }
        if applied > 0 {
            self.metrics.offset_syncs_read(&self.name, applied);
            self.note_fallbacks(&state.syncs);
        }
        Ok(applied)
    }

    /// Sets `precise_fallback_partitions{flow}` from the store.
    fn note_fallbacks(&self, syncs: &OffsetSyncStore) {
        self.metrics
            .set_precise_fallback_partitions(&self.name, syncs.fallen_back_partitions());
    }

    /// Decodes one record of the offset-syncs topic into `syncs`; an
    /// undecodable one is counted and warned about once per kind. The rest is
    /// [`apply_sync`](Self::apply_sync)'s. Returns the partition (its topic
    /// borrowed from the record) and the sync applied, if one was.
    fn apply_sync_record<'r>(
        &self,
        syncs: &mut OffsetSyncStore,
        logged: &mut BTreeSet<&'static str>,
        warned: &mut BTreeSet<TopicPartition>,
        archive: Option<&mut Archive>,
        rec: &'r ConsumerRecord,
        following: bool,
    ) -> Option<(&'r str, i32, OffsetSync)> {
        match OffsetSyncRef::decode(rec.key.as_deref(), rec.value.as_deref()) {
            Ok(s) => Some(self.apply_sync(syncs, warned, archive, rec.offset, s, following)),
            Err(e) => {
                let kind = TopicKind::OffsetSyncs;
                note_skipped(&self.metrics, &self.name, kind, &e, rec.offset, logged);
                None
            }
        }
    }

    /// Applies the sync `s` decoded from the record at `offset` of the
    /// offset-syncs topic to `syncs`. With `following` (reading what was
    /// appended after the initial read), an upstream offset going backwards is
    /// warned about. A partition whose precise history reached its budget is
    /// warned about once (`warned`). The sync-history writer (`archive`)
    /// follows every applied sync. Returns the partition and the sync applied.
    /// Nothing is allocated per sync: the topic is looked up by `&str` (the
    /// store allocates it once, for its first sync).
    fn apply_sync<'r>(
        &self,
        syncs: &mut OffsetSyncStore,
        warned: &mut BTreeSet<TopicPartition>,
        archive: Option<&mut Archive>,
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
                    flow = %self.name, topic, partition,
                    from = newest.upstream, to = s.upstream_offset,
                    "an offset sync's upstream offset went backwards (source topic recreated or truncated, or MirrorMaker replaying after a restart); translating from the new syncs only"
                );
            }
        }
        let applied = syncs.apply(topic, partition, s.upstream_offset, s.downstream_offset);
        let sync = OffsetSync::new(s.upstream_offset, s.downstream_offset);
        if let Some(archive) = archive {
            archive
                .writer
                .on_sync(topic, partition, offset, sync, applied.restarted);
        }
        if applied.fell_back && !warned.contains(&TopicPartition::new(topic, partition)) {
            let tp = TopicPartition::new(topic, partition);
            let oldest = syncs
                .precise_history(topic, partition)
                .and_then(|h| h.oldest())
                .map_or(s.upstream_offset, |o| o.upstream);
            let budget = match syncs.precision() {
                Precision::Precise { max_syncs } => max_syncs,
                Precision::Mm2 => 0,
            };
            tracing::warn!(
                flow = %self.name, topic, partition, budget, oldest_kept = oldest,
                "source partition {tp} has more offset syncs than {} = {budget}: offsets below {oldest} \
                 are now translated with MirrorMaker 2's precision (logged once per partition; see \
                 precise_fallback_partitions)",
                crate::config::TRANSLATION_MAX_SYNCS_KEY
            );
            warned.insert(tp);
        }
        (topic, partition, sync)
    }

    /// The offset-syncs topic went backwards (its end is below our position):
    /// logs it, drops every sync held and reads the topic again from its start
    /// in must-read-to-end mode, so no translation uses a sync of the old log.
    async fn reread_syncs(&self, state: &mut FlowState) -> Result<u64, StepError> {
        let c = &self.syncs_cluster;
        tracing::warn!(
            flow = %self.name, cluster = c.alias(), topic = %self.syncs_topic, position = state.syncs_pos,
            "the offset-syncs topic went backwards (deleted and recreated, or truncated); dropping the syncs held and rereading it from its start"
        );
        state.syncs =
            OffsetSyncStore::with_precision(InitMode::MustReadToEnd, state.syncs.precision());
        self.read_all_syncs(state, None).await
    }

    /// Reads the offset-syncs topic from its start to the end captured now into
    /// `state.syncs`, then ends the store's initial read; returns the number of
    /// syncs applied. Undecodable records are skipped and counted. `restore`,
    /// if given, observes every record (docs/translation.md, "Restarts and
    /// compaction").
    pub(super) async fn read_all_syncs(
        &self,
        state: &mut FlowState,
        mut restore: Option<&mut ArchiveRestore>,
    ) -> Result<u64, StepError> {
        let mut applied = 0u64;
        let FlowState {
            syncs,
            logged,
            fallback_warned,
            archive,
            ..
        } = state;
        // Each fetch's records are decoded into syncs on the fetch's task
        // (another worker thread), straight from the response's bytes (no
        // ConsumerRecord built), so this one only applies them.
        let pos = self
            .read_to_end_prepared(
                &self.syncs_cluster,
                &self.syncs_topic,
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
                                let got = self.apply_sync(
                                    syncs,
                                    fallback_warned,
                                    archive.as_mut(),
                                    offset,
                                    s,
                                    false,
                                );
                                (offset, Some(got))
                            }
                            PreparedSync::Skipped(skipped) => {
                                let (offset, e) = &**skipped;
                                let kind = TopicKind::OffsetSyncs;
                                note_skipped(&self.metrics, &self.name, kind, e, *offset, logged);
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
        state.syncs_pos = pos;
        state.syncs.finish_initial_read();
        self.note_fallbacks(&state.syncs);
        Ok(applied)
    }
}

/// How the fetch task of an initial read turns a fetch's records into what
/// is applied.
pub enum Prepare<T> {
    /// The records as [`ConsumerRecord`]s, turned into a `T` (given the spare
    /// `T` handed back by an earlier apply).
    Records(fn(Vec<ConsumerRecord>, Option<T>) -> T),
    /// A `T` begun (from the spare, if any), then each record visited into it
    /// borrowed from the fetch response (see [`FlowCluster::read_visit`]).
    Visit {
        /// Starts a fetch's `T` (from the spare, if any).
        begin: fn(Option<T>) -> T,
        /// Adds one record to it.
        record: fn(&mut T, RecordRef<'_>),
    },
}

impl<T> Clone for Prepare<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Prepare<T> {}

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

/// The next fetch of an initial read, running as a task, its records prepared
/// there; aborted if dropped before it is joined (the read was given up).
struct NextFetch<T>(tokio::task::JoinHandle<(PartitionReader, ReadResult<T>, Option<Ahead>)>);

type ReadResult<T> = Result<Option<T>, kafka_lite::Error>;

impl<T: Send + 'static> NextFetch<T> {
    /// `ahead`: the Fetch after the last one, started by its task.
    fn spawn<C: FlowCluster>(
        cluster: &C,
        mut reader: PartitionReader,
        prepare: Prepare<T>,
        spare: Option<T>,
        ahead: Option<Ahead>,
    ) -> Self {
        let cluster = cluster.clone();
        NextFetch(tokio::spawn(async move {
            match prepare {
                Prepare::Records(prepare) => {
                    drop(ahead);
                    let r = cluster.read(&mut reader).await;
                    let r = r.map(|records| records.map(|r| prepare(r, spare)));
                    (reader, r, None)
                }
                Prepare::Visit { begin, record } => {
                    // The Fetch made ahead, if it was made at the position
                    // the reader did reach (else it is dropped, and so
                    // aborted); its failure is this fetch's.
                    let made = match ahead {
                        Some(ahead) if ahead.at == reader.position() => ahead.take().await,
                        _ => Ok(None),
                    };
                    let this = match made {
                        Ok(Some(f)) if f.made_for(&reader) => Ok(Some(f)),
                        Ok(_) => cluster.fetch_ahead(&reader).await,
                        Err(e) => Err(e),
                    };
                    let this = match this {
                        Ok(this) => this,
                        Err(e) => return (reader, Err(e), None),
                    };
                    let next = this
                        .as_ref()
                        .map(|f| reader.after(f))
                        .filter(|next| !next.is_caught_up())
                        .map(|next| Ahead::spawn(&cluster, next));
                    let mut prepared = begin(spare);
                    let r = cluster
                        .read_visit_fetched(&mut reader, this, |rec| record(&mut prepared, rec))
                        .await;
                    (reader, r.map(|read| read.map(|_| prepared)), next)
                }
            }
        }))
    }

    /// The reader moved past the fetch, what it read, and the Fetch after it
    /// if one was started. A panic in the task goes on here; a task cancelled
    /// by the runtime's shutdown is an error.
    async fn join<C: FlowCluster>(
        mut self,
        cluster: &C,
        reader: &PartitionReader,
    ) -> (PartitionReader, ReadResult<T>, Option<Ahead>) {
        match (&mut self.0).await {
            Ok(done) => done,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => {
                let cancelled = std::io::Error::other(
                    "the fetch task was cancelled (the runtime is shutting down)",
                );
                let error = kafka_lite::Error::Io {
                    broker: cluster.alias().to_owned(),
                    source: std::sync::Arc::new(cancelled),
                };
                (reader.clone(), Err(error), None)
            }
        }
    }
}

/// A Fetch made ahead of its turn at offset `at`, running as a task; aborted
/// if dropped.
struct Ahead {
    at: i64,
    task: tokio::task::JoinHandle<Result<Option<AheadFetch>, kafka_lite::Error>>,
}

impl Ahead {
    /// Starts the Fetch `reader` would make next.
    fn spawn<C: FlowCluster>(cluster: &C, reader: PartitionReader) -> Self {
        let cluster = cluster.clone();
        Ahead {
            at: reader.position(),
            task: tokio::spawn(async move { cluster.fetch_ahead(&reader).await }),
        }
    }

    /// What the Fetch got (its retries are over: its error is final); `None`
    /// if it made none or was cancelled by the runtime's shutdown.
    async fn take(mut self) -> Result<Option<AheadFetch>, kafka_lite::Error> {
        match (&mut self.task).await {
            Ok(fetched) => fetched,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Ok(None),
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<T> Drop for NextFetch<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Counts a skipped record of a state topic and warns once per kind.
pub(super) fn note_skipped(
    metrics: &Metrics,
    flow: &str,
    kind: TopicKind,
    e: &DecodeError,
    offset: i64,
    logged: &mut BTreeSet<&'static str>,
) {
    let (reason, label) = match e {
        DecodeError::Null { .. } => (metrics::RecordSkipReason::Tombstone, "tombstone"),
        DecodeError::UnsupportedVersion { .. } => {
            (metrics::RecordSkipReason::UnknownVersion, "unknown_version")
        }
        _ => (metrics::RecordSkipReason::Corrupt, "corrupt"),
    };
    metrics.record_skipped(flow, kind, reason);
    if logged.insert(label) {
        tracing::warn!(
            flow, topic_kind = kind.as_str(), offset, error = %e,
            "skipping a {label} record (logged once per kind; see records_skipped_total)"
        );
    }
}
