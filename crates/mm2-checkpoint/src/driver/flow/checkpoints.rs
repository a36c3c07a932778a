//! The checkpoints stage ([`Checkpoints`]): the checkpoint store and the
//! groups it covers, restored from the checkpoints topic at start and when
//! the groups change; emission rounds (plan with the core, produce the
//! checkpoints, record what the broker acknowledged); re-creating a deleted
//! checkpoints topic.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use kafka_lite::Error;
use kafka_lite::records::{BatchBuilder, RecordsError};
use kafka_protocol::error::ResponseError;

use crate::core::content_search::ContentTranslator;
use crate::core::format::EncodeError;
use crate::core::{
    Checkpoint, CheckpointRound, CheckpointStore, FollowedOffsets, GroupOffsets, OffsetSyncStore,
    OffsetsWindow, RestoreOutcome, SkipCounts, SkipReason,
};
use crate::metrics::{TopicKind, UntranslatableReason};

use super::super::kafka::error_label;
use super::cluster::{FetchedCommits, FlowCluster};
use super::content::ContentSearch;
use super::context::{FlowContext, StepError, is_group_denied, now_ms};
use super::groups::discover_groups;
use super::read::{note_skipped, read_to_end};
use super::topics::ensure_checkpoints_topic;

/// What an emission round did.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundSummary {
    /// Checkpoints produced.
    pub emitted: usize,
    /// Partitions skipped.
    pub skipped: usize,
    /// From the round's start to its end (the same time
    /// `mm2_checkpoint_round_duration_seconds` observes).
    pub elapsed: Duration,
}

/// The checkpoints stage: the checkpoint store (the last checkpoint of every
/// group and partition, as the checkpoints topic holds it) and the groups
/// the periodic round covers.
pub struct Checkpoints {
    /// The checkpoint store.
    store: CheckpointStore,
    /// The groups this flow checkpoints.
    groups: Vec<String>,
}

/// Groups planned together in a periodic round: the OffsetFetch answers of
/// 10 requests of 200 groups. A round plans and produces each window as its
/// answers arrive, while the next window's requests are in flight, so it holds
/// two windows of answers at most instead of every group-partition of the flow
/// (at 100,000 groups x 10 partitions, all answers at once were ~120 MB live and
/// the allocator kept that peak; docs/benchmarks.md, issue 18).
pub(super) const ROUND_WINDOW_GROUPS: usize = 2_000;

/// What planning and producing one window of groups did.
#[derive(Default)]
struct WindowDone {
    counts: SkipCounts,
    emitted: usize,
}

impl WindowDone {
    fn add(&mut self, other: WindowDone) {
        self.counts.merge(&other.counts);
        self.emitted += other.emitted;
    }

    fn skipped(&self) -> usize {
        let c = &self.counts;
        (c.filtered
            + c.conflict
            + c.null_offset
            + c.not_ready
            + c.no_sync
            + c.too_old
            + c.not_more_recent) as usize
    }
}

impl Checkpoints {
    /// The stage with `store` (restored already, or empty) covering `groups`.
    pub fn new(store: CheckpointStore, groups: Vec<String>) -> Self {
        Checkpoints { store, groups }
    }

    /// Restores the empty `store` from the checkpoints topic; the stage
    /// covers `groups`. Returns it and whether the read succeeded (with an
    /// empty store like `store` when not).
    pub async fn restore<C: FlowCluster>(
        ctx: &FlowContext<C>,
        store: CheckpointStore,
        groups: Vec<String>,
    ) -> (Self, bool) {
        let (store, restored) = restore_store(ctx, store).await;
        (Checkpoints::new(store, groups), restored)
    }

    /// The checkpoint store.
    pub fn store(&self) -> &CheckpointStore {
        &self.store
    }

    /// How many groups the flow checkpoints.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// The groups the periodic round covers from now on.
    pub fn set_groups(&mut self, groups: Vec<String>) {
        self.groups = groups;
    }

    /// Assigns `group` to the checkpoint store (its checkpoints are
    /// emitted and remembered from now on).
    pub fn assign(&mut self, group: &str) {
        self.store.assign(group);
    }

    /// Re-discovers the groups; if the set changed, rebuilds the checkpoint store
    /// for the new set from the checkpoints topic.
    pub async fn refresh_groups<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
    ) -> Result<(), StepError> {
        let groups = discover_groups(ctx).await?;
        if groups != self.groups {
            tracing::info!(flow = %ctx.name, before = self.groups.len(), after = groups.len(), "the set of consumer groups changed");
            // Versions go on from the old store's: the group sync reads
            // each group of the new one again once (docs/translation.md,
            // "Only new checkpoints").
            let fresh = CheckpointStore::new(groups.iter().cloned())
                .with_versions_after(self.store.version());
            let (store, ok) = restore_store(ctx, fresh).await;
            if ok {
                self.store = store;
                self.groups = groups;
                let keep: BTreeSet<String> = self.groups.iter().cloned().collect();
                ctx.metrics
                    .retain_checkpoint_latency_groups(&ctx.name, |g| keep.contains(g));
            }
        }
        Ok(())
    }

    /// One emission round over every group of the stage, translated with
    /// `syncs` and the decided searches of `content`: OffsetFetch in
    /// windows of `ROUND_WINDOW_GROUPS` (2,000 groups), each window planned and produced
    /// while the next one's answers come. Planning is per group, so windows
    /// decide what one plan of all groups would (a core property test checks
    /// it); the skip gauges get the sum over windows, once, at the end. A group
    /// whose OffsetFetch failed is skipped this round; a failed request for a
    /// whole window (no connection to the source) fails the round, as a failed
    /// produce does, after the windows before it were produced.
    pub async fn emit_round<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        syncs: &OffsetSyncStore,
        content: &mut ContentSearch,
    ) -> Result<RoundSummary, StepError> {
        let started = Instant::now();
        if self.groups.is_empty() {
            ctx.metrics
                .observe_round_duration(&ctx.name, started.elapsed());
            ctx.metrics.round_succeeded(&ctx.name);
            return Ok(RoundSummary::default());
        }
        let s = &ctx.source;
        let n = self.groups.len();
        let mut from = ROUND_WINDOW_GROUPS.min(n);
        let first = self.groups[..from].to_vec();
        let mut fetched = ctx.step(s, "OffsetFetch", s.fetch_group_commits(&first).await)?;
        drop(first);
        let mut done = WindowDone::default();
        loop {
            let answers = answered_groups(ctx, fetched);
            if from >= n {
                done.add(self.plan_window(ctx, syncs, content, answers, true).await?);
                break;
            }
            let to = (from + ROUND_WINDOW_GROUPS).min(n);
            let next = self.groups[from..to].to_vec();
            from = to;
            let (next_fetched, window) = tokio::join!(
                s.fetch_group_commits(&next),
                self.plan_window(ctx, syncs, content, answers, true)
            );
            done.add(window?);
            fetched = ctx.step(s, "OffsetFetch", next_fetched)?;
        }
        content.end_round();
        Ok(finish_round(ctx, &done, started))
    }

    /// One emission round over every group of the stage, planned from
    /// the commit follower's view instead of OffsetFetch: the first round after
    /// the follower's initial replay (docs/commit-follower.md section 3, "The
    /// first round"). The same windows, plan, produce, gauges and metrics as
    /// [`emit_round`](Self::emit_round).
    pub async fn emit_round_from_view<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        syncs: &OffsetSyncStore,
        content: &mut ContentSearch,
        view: &FollowedOffsets,
    ) -> Result<RoundSummary, StepError> {
        let started = Instant::now();
        let mut done = WindowDone::default();
        let n = self.groups.len();
        let mut from = 0;
        // Three windows at a time: while the last one planned is sent, the
        // one before it (acknowledged) is recorded in the store and the next
        // one is planned. So the broker writes one window while this task
        // records and plans, and windows are still sent one after another
        // (each send ends with none in flight). Windows are disjoint sets of
        // groups, so a plan never reads what is being sent or recorded, and
        // a window is recorded before the window after the next is planned.
        // A window with a failed chunk is recorded, and its failure handled,
        // before anything more is sent.
        let mut planned: Vec<Checkpoint> = Vec::new();
        let mut answered: Option<(Vec<Checkpoint>, Sent)> = None;
        loop {
            if let Some((cps, sent)) = answered.take_if(|(_, sent)| sent.failed()) {
                let r = self.record_chunks(ctx, &cps, sent);
                self.after_produce(ctx, &cps, r).await?;
            }
            let next = (from < n).then(|| {
                let to = (from + ROUND_WINDOW_GROUPS).min(n);
                let window = view.window_of(self.groups[from..to].iter().map(String::as_str));
                from = to;
                window
            });
            let last = next.is_none();
            let (sent, (recorded, next)) =
                tokio::join!(send_chunks(ctx, &planned, PRODUCE_LIMITS), async {
                    let recorded = answered.take().map(|(cps, sent)| {
                        let r = self.record_chunks(ctx, &cps, sent);
                        (cps, r)
                    });
                    let next = match next {
                        Some(window) => {
                            Some(self.plan_only(ctx, syncs, content, window, true).await)
                        }
                        None => None,
                    };
                    (recorded, next)
                });
            if let Some((cps, r)) = recorded {
                // Nothing failed in it (checked above): no error to handle.
                self.after_produce(ctx, &cps, r).await?;
            }
            let sent_cps = std::mem::take(&mut planned);
            if last {
                let r = self.record_chunks(ctx, &sent_cps, sent);
                self.after_produce(ctx, &sent_cps, r).await?;
                break;
            }
            answered = Some((sent_cps, sent));
            if let Some((window_done, cps)) = next {
                done.add(window_done);
                planned = cps;
            }
        }
        content.end_round();
        Ok(finish_round(ctx, &done, started))
    }

    /// Plans checkpoints for `groups` (their committed offsets, from OffsetFetch
    /// or the commit follower) and produces them. `whole` says whether `groups`
    /// is every group of the flow, so the skip gauges describe the whole flow.
    pub async fn emit_offsets<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        syncs: &OffsetSyncStore,
        content: &mut ContentSearch,
        groups: BTreeMap<String, GroupOffsets>,
        started: Instant,
        whole: bool,
    ) -> Result<RoundSummary, StepError> {
        let done = self
            .plan_window(ctx, syncs, content, OffsetsWindow::from_map(groups), whole)
            .await?;
        if !whole {
            return Ok(RoundSummary {
                emitted: done.emitted,
                skipped: done.skipped(),
                elapsed: started.elapsed(),
            });
        }
        Ok(finish_round(ctx, &done, started))
    }

    /// Plans `groups` and produces their checkpoints; logs conflicts if asked
    /// (a periodic round does, the follower's windows do not).
    async fn plan_window<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        syncs: &OffsetSyncStore,
        content: &mut ContentSearch,
        groups: OffsetsWindow,
        log_conflicts: bool,
    ) -> Result<WindowDone, StepError> {
        let (done, checkpoints) = self
            .plan_only(ctx, syncs, content, groups, log_conflicts)
            .await;
        if !checkpoints.is_empty() {
            self.produce(ctx, &checkpoints).await?;
        }
        Ok(done)
    }

    /// Plans `groups`: what [`plan_window`](Self::plan_window) counts and the
    /// checkpoints it would produce.
    async fn plan_only<C: FlowCluster>(
        &self,
        ctx: &FlowContext<C>,
        syncs: &OffsetSyncStore,
        content: &mut ContentSearch,
        groups: OffsetsWindow,
        log_conflicts: bool,
    ) -> (WindowDone, Vec<Checkpoint>) {
        let round = CheckpointRound {
            flow: &ctx.flow,
            policy: &ctx.policy,
            topic_filter: &ctx.topic_filter,
        };
        // Counted, not listed: a round where nothing moved skips every
        // group-partition, and listing them cost ~200 B each.
        // Content search (docs/translation.md): exact answers where found.
        content.search(ctx, syncs, &groups).await;
        let translator = ContentTranslator {
            store: syncs,
            cache: content.cache(),
        };
        let plan = round.plan_window(&translator, &self.store, &groups);
        // The plan owns what it needs; free the OffsetFetch answers before
        // producing.
        drop(groups);
        if log_conflicts {
            for sk in &plan.conflicts {
                if let SkipReason::Conflict { downstream } = &sk.reason {
                    tracing::warn!(flow = %ctx.name, group = sk.group, upstream = %sk.upstream, %downstream, "two upstream partitions map to one downstream partition; skipped");
                }
            }
        }
        let done = WindowDone {
            counts: plan.counts,
            emitted: plan.checkpoints.len(),
        };
        (done, plan.checkpoints)
    }

    /// Produces `cps` to the checkpoints topic. If the topic is gone (deleted
    /// while the daemon runs), re-creates it, writes every checkpoint held in
    /// memory again and then `cps`; the store itself is kept as it is.
    pub(super) async fn produce<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        cps: &[Checkpoint],
    ) -> Result<(), StepError> {
        let r = self.produce_chunks(ctx, cps).await;
        self.after_produce(ctx, cps, r).await
    }

    /// What follows producing `cps` with outcome `r`: a missing checkpoints
    /// topic is re-created and `cps` produced again (see
    /// [`produce`](Self::produce)); an error is the
    /// step's.
    async fn after_produce<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        cps: &[Checkpoint],
        r: Result<(), Error>,
    ) -> Result<(), StepError> {
        let t = &ctx.target;
        match r {
            Err(e) if e.kafka_error() == Some(ResponseError::UnknownTopicOrPartition) => {
                let cause = ctx.step::<()>(t, "Produce", Err(e)).err();
                self.recreate_topic(ctx, cause).await?;
                let r = self.produce_chunks(ctx, cps).await;
                ctx.step(t, "Produce", r)
            }
            r => ctx.step(t, "Produce", r),
        }
    }

    /// The checkpoints topic is missing: creates it as at startup and writes
    /// the checkpoints held in memory, so it again holds the last checkpoint of
    /// every group and partition (nothing is rewound or forgotten).
    async fn recreate_topic<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        cause: Option<StepError>,
    ) -> Result<(), StepError> {
        let t = &ctx.target;
        let held: Vec<Checkpoint> = self.store.checkpoints().collect();
        let error = cause.map(|e| e.to_string()).unwrap_or_default();
        tracing::warn!(
            flow = %ctx.name, cluster = t.alias(), topic = %ctx.checkpoints_topic, %error,
            held = held.len(),
            "the checkpoints topic is missing on cluster {} (deleted while running?); re-creating it \
             and writing the {} checkpoints held in memory again",
            t.alias(),
            held.len()
        );
        ensure_checkpoints_topic(ctx).await?;
        let r = self.produce_chunks(ctx, &held).await;
        ctx.step(t, "Produce", r)
    }

    /// Encodes `cps` and produces them in chunks of [`PRODUCE_LIMITS`], several
    /// requests in flight at once; each acknowledged chunk is recorded in the
    /// store and the metrics.
    pub(super) async fn produce_chunks<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        cps: &[Checkpoint],
    ) -> Result<(), Error> {
        self.produce_chunks_with(ctx, cps, PRODUCE_LIMITS).await
    }

    /// [`produce_chunks`](Self::produce_chunks) with `limits`: the chunks are
    /// sent ([`send_chunks`]), then what the broker
    /// acknowledged is recorded ([`record_chunks`](Self::record_chunks)).
    pub(super) async fn produce_chunks_with<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        cps: &[Checkpoint],
        limits: ProduceLimits,
    ) -> Result<(), Error> {
        let sent = send_chunks(ctx, cps, limits).await;
        self.record_chunks(ctx, cps, sent)
    }

    /// Records what [`send_chunks`] sent of `cps`: each
    /// acknowledged chunk in the store and the metrics (emitted count, latency
    /// series); a failed one is not recorded but counted (`on_produce_failed`),
    /// and the call fails with the first error. A chunk is recorded only once
    /// acknowledged.
    pub(super) fn record_chunks<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        cps: &[Checkpoint],
        sent: Sent,
    ) -> Result<(), Error> {
        let mut failed: Option<Error> = None;
        for chunk in sent.chunks {
            let parts = encoded_parts(&cps[chunk.start..chunk.end], chunk.start, &chunk.skipped);
            match chunk.result {
                Ok(_) if !chunk.sent => {}
                Ok(acked) => {
                    let elapsed = u64::try_from(acked.saturating_sub(sent.timestamp)).unwrap_or(0);
                    let latency = Duration::from_millis(elapsed);
                    for part in parts {
                        self.store.on_produced(part);
                        ctx.metrics
                            .checkpoints_emitted(&ctx.name, part.len() as u64);
                        ctx.metrics.set_checkpoint_latencies(
                            &ctx.name,
                            part.iter().map(|cp| {
                                let tp = &cp.key.topic_partition;
                                (cp.key.group.as_str(), tp.topic.as_str(), tp.partition)
                            }),
                            latency,
                        );
                    }
                }
                Err(e) => {
                    for part in parts {
                        self.store.on_produce_failed(part);
                    }
                    failed.get_or_insert(e);
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Restores the empty `store` from the checkpoints topic. Returns it and
/// whether the read succeeded (an empty store like it when not).
async fn restore_store<C: FlowCluster>(
    ctx: &FlowContext<C>,
    mut store: CheckpointStore,
) -> (CheckpointStore, bool) {
    let empty = store.clone();
    let mut logged = BTreeSet::new();
    let metrics = ctx.metrics.clone();
    let name = ctx.name.clone();
    let r = read_to_end(
        ctx,
        &ctx.target,
        &ctx.checkpoints_topic,
        TopicKind::Checkpoints,
        |rec| {
            if let RestoreOutcome::Skipped(e) =
                store.restore_record(rec.key.as_deref(), rec.value.as_deref())
            {
                note_skipped(
                    &metrics,
                    &name,
                    TopicKind::Checkpoints,
                    &e,
                    rec.offset,
                    &mut logged,
                );
            }
        },
    )
    .await;
    match r {
        Ok(_) => {
            let stats = store.restore_stats();
            tracing::info!(
                flow = %ctx.name, restored = stats.restored, other_groups = stats.not_assigned,
                skipped = stats.skipped(), "restored checkpoints"
            );
            (store, true)
        }
        Err(e) => {
            tracing::warn!(
                flow = %ctx.name, error = %e,
                "cannot read the checkpoints topic; offset syncs will be read in must-read-to-end mode"
            );
            (empty, false)
        }
    }
}

/// The groups OffsetFetch answered, as the window a round plans; a
/// group it refused or failed is logged and counted, and skipped this
/// round.
fn answered_groups<C: FlowCluster>(ctx: &FlowContext<C>, fetched: FetchedCommits) -> OffsetsWindow {
    let s = &ctx.source;
    let mut groups = OffsetsWindow::new();
    for (group, result) in fetched {
        match result {
            Ok(commits) => groups.push_group(group, commits),
            Err(e) if is_group_denied(&e) => {
                ctx.note_group_denied(s, "OffsetFetch", &group, &e);
            }
            Err(e) => {
                ctx.metrics
                    .request_error(s.alias(), "OffsetFetch", &error_label(&e));
                tracing::warn!(flow = %ctx.name, cluster = s.alias(), group, error = %e, "OffsetFetch failed for a group; skipped this round");
            }
        }
    }
    groups
}

/// Ends a round over every group: the skip gauges (summed over its
/// windows), the round's duration, its success.
fn finish_round<C: FlowCluster>(
    ctx: &FlowContext<C>,
    done: &WindowDone,
    started: Instant,
) -> RoundSummary {
    let counts = done.counts;
    for (reason, n) in [
        (UntranslatableReason::NotReady, counts.not_ready),
        (UntranslatableReason::NoSync, counts.no_sync),
        (UntranslatableReason::TooOld, counts.too_old),
        (UntranslatableReason::Filtered, counts.filtered),
        (UntranslatableReason::NullOffset, counts.null_offset),
        (UntranslatableReason::Suppressed, counts.not_more_recent),
        (UntranslatableReason::Conflict, counts.conflict),
    ] {
        ctx.metrics
            .set_untranslatable_partitions(&ctx.name, reason, n);
    }
    let summary = RoundSummary {
        emitted: done.emitted,
        skipped: done.skipped(),
        elapsed: started.elapsed(),
    };
    ctx.metrics
        .observe_round_duration(&ctx.name, summary.elapsed);
    ctx.metrics.round_succeeded(&ctx.name);
    tracing::debug!(flow = %ctx.name, emitted = summary.emitted, skipped = summary.skipped, "emission round done");
    summary
}

/// Encodes `cps` into produce requests and sends them, touching nothing
/// of the flow's state, so the next window can be planned meanwhile
/// ([`Checkpoints::emit_round_from_view`]).
///
/// The checkpoints of one call have distinct keys (one per group and
/// downstream partition: a plan, or the store's checkpoints), so the order
/// in which its chunks land does not matter and up to `limits.in_flight`
/// of them are sent at once (at most what the target allows:
/// one at a time under membership, where each batch is a transaction of
/// its own; `FlowCluster::produce_in_flight`). The call returns only when
/// none is in flight any more, so chunks of successive calls (the
/// follower's, which may carry the same key again) are never reordered.
///
/// After a failed chunk no further chunk is sent; those in flight are
/// awaited. Each chunk is encoded just before it is sent, straight into
/// its request's record batch (one buffer per chunk), so at most
/// `limits.in_flight` chunks of records are held at a time.
pub(super) async fn send_chunks<C: FlowCluster>(
    ctx: &FlowContext<C>,
    cps: &[Checkpoint],
    limits: ProduceLimits,
) -> Sent {
    let ts = now_ms();
    let t = &ctx.target;
    let topic = ctx.checkpoints_topic.as_str();
    let in_flight = limits.in_flight.min(t.produce_in_flight()).max(1);
    let mut pending = FuturesUnordered::new();
    let mut next = 0;
    let mut sent = Sent {
        timestamp: ts,
        chunks: Vec::new(),
    };
    let mut failed = false;
    loop {
        while !failed && pending.len() < in_flight && next < cps.len() {
            let chunk = encode_chunk(&ctx.name, cps, next, ts, &limits);
            next = chunk.end;
            if chunk.batch.is_empty() {
                // Nothing encodable: nothing to send, the rest is skipped.
                sent.chunks.push(SentChunk {
                    start: chunk.start,
                    end: chunk.end,
                    skipped: chunk.skipped,
                    result: Ok(ts),
                    sent: false,
                });
                continue;
            }
            pending.push(async move {
                let r = t.produce_batch(topic, 0, chunk.batch).await;
                // MM2's checkpoint-latency-ms is the acknowledgement time
                // minus the record's timestamp.
                let r = r.map(|_| now_ms());
                SentChunk {
                    start: chunk.start,
                    end: chunk.end,
                    skipped: chunk.skipped,
                    result: r,
                    sent: true,
                }
            });
        }
        let Some(chunk) = pending.next().await else {
            break;
        };
        failed |= chunk.result.is_err();
        sent.chunks.push(chunk);
    }
    sent
}

/// Encodes the next chunk of `cps` from index `from` into one record
/// batch: up to `limits.records` records and `limits.bytes` bytes (at
/// least one record). A checkpoint that cannot be encoded is logged and
/// skipped.
fn encode_chunk(
    flow: &str,
    cps: &[Checkpoint],
    from: usize,
    ts: i64,
    limits: &ProduceLimits,
) -> EncodedChunk {
    // Sized for the whole chunk at once, so the buffer does not grow as
    // it fills: the sizes of the checkpoints that fit, counted first.
    let mut capacity = 0;
    let sizes = cps[from..].iter().filter_map(|cp| cp.encoded_len().ok());
    for (records, size) in sizes.enumerate() {
        let size = size + RECORD_OVERHEAD;
        if records >= limits.records || (records > 0 && capacity + size > limits.bytes) {
            break;
        }
        capacity += size;
    }
    let mut batch = BatchBuilder::with_capacity(capacity);
    let mut skipped = Vec::new();
    let mut bytes = 0;
    let mut end = from;
    for cp in &cps[from..] {
        if batch.len() >= limits.records {
            break;
        }
        let encoded = cp
            .encoded_len()
            .map_err(EncodeFailure::Checkpoint)
            .and_then(|len| {
                let size = len + RECORD_OVERHEAD;
                if !batch.is_empty() && bytes + size > limits.bytes {
                    return Ok(false);
                }
                batch.push_with(
                    ts,
                    |buf| cp.encode_key_into(buf).map_err(EncodeFailure::Checkpoint),
                    |buf| cp.encode_value_into(buf).map_err(EncodeFailure::Checkpoint),
                )?;
                bytes += size;
                Ok(true)
            });
        match encoded {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                tracing::warn!(flow = %flow, group = cp.key.group, tp = %cp.key.topic_partition, error = %e, "cannot encode a checkpoint; skipped");
                skipped.push(end);
            }
        }
        end += 1;
    }
    EncodedChunk {
        start: from,
        end,
        skipped,
        batch,
    }
}

/// Why a checkpoint could not be encoded into a chunk's batch.
#[derive(Debug)]
enum EncodeFailure {
    Checkpoint(EncodeError),
    Batch(RecordsError),
}

impl From<RecordsError> for EncodeFailure {
    fn from(e: RecordsError) -> Self {
        EncodeFailure::Batch(e)
    }
}

impl std::fmt::Display for EncodeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeFailure::Checkpoint(e) => e.fmt(f),
            EncodeFailure::Batch(e) => e.fmt(f),
        }
    }
}

/// What [`send_chunks`] did with the chunks of one call.
pub(super) struct Sent {
    /// The records' timestamp (ms).
    timestamp: i64,
    /// The chunks sent or skipped, in the order they ended.
    chunks: Vec<SentChunk>,
}

impl Sent {
    /// Whether a chunk failed.
    fn failed(&self) -> bool {
        self.chunks.iter().any(|c| c.result.is_err())
    }
}

/// One chunk of a call: `cps[start..end]` less `skipped` (not encodable),
/// acknowledged at `result`'s time (ms) or failed.
struct SentChunk {
    start: usize,
    end: usize,
    skipped: Vec<usize>,
    result: Result<i64, Error>,
    /// Whether a request was sent (a chunk of nothing encodable is not).
    sent: bool,
}

/// How [`Checkpoints::produce_chunks_with`] cuts checkpoints into produce
/// requests and how many it sends at once.
#[derive(Clone, Copy, Debug)]
pub(super) struct ProduceLimits {
    /// Records per produce request, at most.
    pub records: usize,
    /// Bytes per produce request, at most: keys, values and
    /// [`RECORD_OVERHEAD`] per record (a single larger record is sent alone).
    pub bytes: usize,
    /// Produce requests in flight at once, at most.
    pub in_flight: usize,
}

/// The driver's limits. 512 KiB stays well under the 1 MiB a broker accepts
/// in one batch by default (`message.max.bytes` 1048588, the topic's
/// `max.message.bytes`; the checkpoints topic is created without its own
/// value, as MirrorMaker 2 creates it). Four requests in flight let encoding,
/// the round trip and the broker's append of successive chunks overlap
/// (docs/benchmarks.md, "Measurements behind the design").
pub(super) const PRODUCE_LIMITS: ProduceLimits = ProduceLimits {
    records: 8_000,
    bytes: 512 * 1024,
    in_flight: 4,
};

/// A record's bytes besides its key and value in a v2 batch, at most: length,
/// attributes, timestamp and offset deltas, key and value lengths, header
/// count (varints).
const RECORD_OVERHEAD: usize = 21;

/// One chunk of a produce call: `cps[start..end]` less the indexes in
/// `skipped` (not encodable), encoded as `batch`.
struct EncodedChunk {
    start: usize,
    end: usize,
    skipped: Vec<usize>,
    batch: BatchBuilder,
}

/// The encodable runs of `chunk` (the checkpoints from index `start`), given
/// the indexes `skipped` (ascending) that could not be encoded: the whole
/// chunk when none was skipped, which is the usual case.
pub(super) fn encoded_parts<'a>(
    chunk: &'a [Checkpoint],
    start: usize,
    skipped: &[usize],
) -> Vec<&'a [Checkpoint]> {
    let mut parts = Vec::with_capacity(skipped.len() + 1);
    let mut from = 0;
    for &s in skipped {
        let at = s - start;
        if at > from {
            parts.push(&chunk[from..at]);
        }
        from = at + 1;
    }
    if from < chunk.len() {
        parts.push(&chunk[from..]);
    }
    parts
}
