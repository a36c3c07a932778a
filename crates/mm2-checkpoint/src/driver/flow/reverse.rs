//! The reverse stage ([`ReverseCheckpoints`]): a flow S->T's reverse rounds
//! for failing back (docs/operations.md, "Failing back"; docs/translation.md,
//! "Reverse checkpoints"). Each round discovers the groups on T, reads their
//! committed offsets there, has the core translate them back to S through
//! the flow's own offset syncs (`ReverseRound::plan`), leaves out positions
//! past the end of their S partition, writes the rest to MirrorMaker 2's
//! checkpoints topic of the flow T->S on S and, with
//! `sync.group.offsets.enabled`, commits them into the idle groups on S.
//!
//! It runs on the flow's reversed context ([`FlowContext::reversed`]), so
//! the checkpoints stage (restore, monotonic store, produce, re-creating the
//! topic), group discovery and group sync are the forward ones, the other
//! way round. It decides nothing itself.

use std::collections::{BTreeMap, BTreeSet};

use crate::core::reverse::{ReverseRound, keep_within_ends, plan_reverse_sync};
use crate::core::{
    Checkpoint, CheckpointStore, GroupOffsets, OffsetSyncStore, TargetRefresh, TopicPartition,
};
use crate::metrics::GroupSyncOutcome;

use super::checkpoints::Checkpoints;
use super::cluster::FlowCluster;
use super::context::{FlowContext, StepCause, StepError, is_group_denied};
use super::group_sync::{SyncSummary, carry_out_sync_with, refresh_target};
use super::groups::discover_groups;
use super::topics::ensure_checkpoints_topic;

/// What a reverse round did.
#[derive(Clone, Debug, Default)]
pub struct ReverseSummary {
    /// Groups committed on the target that the round read.
    pub groups: usize,
    /// Reverse checkpoints written.
    pub emitted: usize,
    /// Partitions that got no reverse checkpoint (no sync, filtered, not
    /// more recent, ...), past-the-end ones aside.
    pub skipped: usize,
    /// Reverse checkpoints left out because their position lies past the end
    /// of the source partition (or the partition is gone).
    pub past_end: usize,
    /// The group sync into the source, when it ran.
    pub synced: Option<SyncSummary>,
}

/// The reverse stage of a flow: its reversed context, the store of the
/// reverse checkpoints written (restored from the back checkpoints topic on
/// the source before the first round) and the checkpoints whose group sync
/// into the source is to be tried again.
pub struct ReverseCheckpoints<C: FlowCluster> {
    back: FlowContext<C>,
    /// `None` until the back checkpoints topic has been read.
    checkpoints: Option<Checkpoints>,
    /// Fresh checkpoints whose sync into the source failed (the group's state
    /// unknown, or the commit failed): tried again with the next round's.
    retry: BTreeMap<(String, TopicPartition), Checkpoint>,
}

impl<C: FlowCluster> ReverseCheckpoints<C> {
    /// The stage of flow `ctx`; nothing is read before the first round.
    pub fn new(ctx: &FlowContext<C>) -> Self {
        ReverseCheckpoints {
            back: ctx.reversed(),
            checkpoints: None,
            retry: BTreeMap::new(),
        }
    }

    /// One reverse round of flow `ctx`, translating through its offset-sync
    /// store `syncs` (the flow's own: nothing is read twice). Fails, having
    /// written nothing of the round, when the target's groups cannot be read
    /// or the source cannot be reached (as while it is down after a
    /// failover); a failed produce fails it after the chunks before it.
    pub async fn round(
        &mut self,
        ctx: &FlowContext<C>,
        syncs: &OffsetSyncStore,
    ) -> Result<ReverseSummary, StepError> {
        let back = &self.back;
        if self.checkpoints.is_none() {
            // The store first: without the checkpoints already written,
            // nothing could be kept monotonic.
            ensure_checkpoints_topic(back).await?;
            let store = CheckpointStore::for_filter(back.group_filter.clone());
            let (restored, ok) = Checkpoints::restore(back, store, Vec::new()).await;
            if !ok {
                return Err(StepError {
                    cluster: back.target.alias().to_owned(),
                    op: "Fetch",
                    error: StepCause::Driver {
                        what: format!(
                            "the reverse checkpoints topic {} could not be read; no reverse \
                             checkpoint is written before it is",
                            back.checkpoints_topic
                        ),
                        cause: None,
                    },
                });
            }
            self.checkpoints = Some(restored);
        }
        let Some(checkpoints) = self.checkpoints.as_mut() else {
            return Ok(ReverseSummary::default());
        };
        let groups = discover_groups(back).await?;
        let t = &back.source;
        let fetched = if groups.is_empty() {
            BTreeMap::new()
        } else {
            back.step(t, "OffsetFetch", t.fetch_group_offsets(&groups).await)?
        };
        let mut offsets: BTreeMap<String, GroupOffsets> = BTreeMap::new();
        for (group, result) in fetched {
            match result {
                Ok(o) => {
                    offsets.insert(group, o);
                }
                Err(e) if is_group_denied(&e) => {
                    back.note_group_denied(t, "OffsetFetch", &group, &e);
                }
                Err(e) => {
                    tracing::warn!(flow = %back.name, cluster = t.alias(), group, error = %e, "OffsetFetch failed for a group; skipped this reverse round");
                }
            }
        }
        let round = ReverseRound {
            flow: &ctx.flow,
            policy: &ctx.policy,
            topic_filter: &ctx.topic_filter,
        };
        let mut plan = round.plan(syncs, checkpoints.store(), &offsets);
        let s = &back.target;
        let partitions: Vec<TopicPartition> = plan
            .checkpoints
            .iter()
            .map(|cp| cp.key.topic_partition.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let ends = if partitions.is_empty() {
            BTreeMap::new()
        } else {
            back.step(s, "ListOffsets", s.end_offsets(&partitions).await)?
        };
        let past = keep_within_ends(&mut plan, &ends);
        for cp in &past {
            let tp = &cp.key.topic_partition;
            match ends.get(tp) {
                Some(end) => tracing::warn!(
                    flow = %back.name, cluster = s.alias(), group = cp.key.group, %tp,
                    position = cp.downstream_offset, end,
                    "the reverse position of group {} on {tp} is past the partition's end on \
                     cluster {} ({} > {end}): the topic was deleted and created again since its \
                     offset syncs; nothing is written for it",
                    cp.key.group, s.alias(), cp.downstream_offset
                ),
                None => tracing::warn!(
                    flow = %back.name, cluster = s.alias(), group = cp.key.group, %tp,
                    "partition {tp} does not exist on cluster {}; no reverse checkpoint is \
                     written for group {}",
                    s.alias(), cp.key.group
                ),
            }
        }
        checkpoints.produce(back, &plan.checkpoints).await?;
        let mut summary = ReverseSummary {
            groups: offsets.len(),
            emitted: plan.checkpoints.len(),
            skipped: plan.skipped.len(),
            past_end: past.len(),
            synced: None,
        };
        if ctx.cfg.sync_group_offsets_enabled {
            summary.synced = self.sync_into_source(plan.checkpoints).await;
        }
        Ok(summary)
    }

    /// The group sync into the source of the checkpoints `fresh` just
    /// written, with those to try again (`core::reverse::plan_reverse_sync`):
    /// `None` when there was nothing to sync.
    async fn sync_into_source(&mut self, fresh: Vec<Checkpoint>) -> Option<SyncSummary> {
        let back = &self.back;
        for cp in fresh {
            let key = (cp.key.group.clone(), cp.key.topic_partition.clone());
            self.retry.insert(key, cp);
        }
        if self.retry.is_empty() {
            return None;
        }
        let cps: Vec<Checkpoint> = self.retry.values().cloned().collect();
        let groups: Vec<String> = cps
            .iter()
            .map(|cp| cp.key.group.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let refresh = match refresh_target(back, &groups).await {
            Ok(found) => TargetRefresh::Done(found),
            Err(_) => TargetRefresh::Failed,
        };
        let plan = plan_reverse_sync(&cps, &refresh);
        let mut again = BTreeSet::new();
        let summary = carry_out_sync_with(back, plan, |group, outcome| {
            if matches!(
                outcome,
                GroupSyncOutcome::SkippedUnknownState | GroupSyncOutcome::Failed
            ) {
                again.insert(group.to_owned());
            }
        })
        .await;
        self.retry.retain(|(group, _), _| again.contains(group));
        Some(summary)
    }
}
