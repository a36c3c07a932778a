//! Target group sync: refresh the target groups, plan with the core, carry
//! the plan out. It holds no state of its own (the run loop's syncs are
//! `GroupSyncRunner`'s, in sync_runner.rs), so its steps are functions of
//! the flow's context. [`carry_out_group_sync`] is also `translate --apply`'s.

use std::collections::{BTreeMap, BTreeSet};

use kafka_lite::Error;

use crate::core::{
    CheckpointStore, GroupSyncDecision, GroupSyncPlan, TargetGroup, TargetGroupState,
    TargetRefresh, plan_group_sync, plan_group_sync_for,
};
use crate::metrics;

use super::super::kafka::error_label;
use super::cluster::{CommitOutcome, FlowCluster};
use super::context::{FlowContext, StepCause, StepError};

/// What a group sync did, per outcome.
#[derive(Clone, Copy, Debug, Default)]
pub struct SyncSummary {
    /// Groups committed.
    pub committed: usize,
    /// Groups skipped as active (also when the broker refused).
    pub skipped_active: usize,
    /// Groups already at or ahead of the checkpoints.
    pub skipped_target_ahead: usize,
    /// Groups in an unknown state.
    pub skipped_unknown_state: usize,
    /// Failed commits.
    pub failed: usize,
}

/// One target group sync of every group of the store, its steps awaited
/// one after the other (`run --once`); the run loop's
/// `GroupSyncRunner` (sync_runner.rs) runs the same
/// steps beside the loop.
pub async fn sync_groups<C: FlowCluster>(
    ctx: &FlowContext<C>,
    store: &CheckpointStore,
) -> Result<SyncSummary, StepError> {
    let refreshed = refresh_for_sync(ctx, sync_group_names(store, None)).await;
    let plan = refreshed.plan(store, None);
    let summary = carry_out_sync(ctx, plan).await;
    refreshed.finish(summary)
}

/// The first step of a group sync: describes `groups` on the target and
/// reads the offsets of the idle ones. Reads the store not at all, so it
/// can run while the flow emits.
pub(super) async fn refresh_for_sync<C: FlowCluster>(
    ctx: &FlowContext<C>,
    groups: Vec<String>,
) -> Refreshed {
    match refresh_target(ctx, &groups).await {
        Ok(groups) => Refreshed {
            refresh: TargetRefresh::Done(groups),
            failed: None,
        },
        Err(e) => Refreshed {
            refresh: TargetRefresh::Failed,
            failed: Some(describe_failed(ctx, e)),
        },
    }
}

/// The error a group sync reports when describing the target failed.
fn describe_failed<C: FlowCluster>(ctx: &FlowContext<C>, failed: StepError) -> StepError {
    StepError {
        cluster: ctx.target.alias().to_owned(),
        op: "DescribeGroups",
        error: StepCause::Driver {
            what: "the target groups could not be described; no sync this round".into(),
            cause: match failed.error {
                StepCause::Client(e) => Some(Box::new(e)),
                StepCause::Driver { cause, .. } => cause,
            },
        },
    }
}

/// The last step of a group sync: carries out `plan`, logging and counting
/// every group's outcome.
pub(super) async fn carry_out_sync<C: FlowCluster>(
    ctx: &FlowContext<C>,
    plan: GroupSyncPlan,
) -> SyncSummary {
    carry_out_sync_with(ctx, plan, |_, _| {}).await
}

/// [`carry_out_sync`], also handing every group's outcome to `outcome` (the
/// reverse round keeps the groups to try again, the run loop's runner the
/// groups it synced). `group_syncs_total` gets each outcome's count when the
/// sync ends.
pub(super) async fn carry_out_sync_with<C: FlowCluster>(
    ctx: &FlowContext<C>,
    plan: GroupSyncPlan,
    mut outcome: impl FnMut(&str, metrics::GroupSyncOutcome),
) -> SyncSummary {
    let t = &ctx.target;
    let mut summary = SyncSummary::default();
    let mut counts = [0u64; metrics::GroupSyncOutcome::ALL.len()];
    carry_out_group_sync(t, plan, |group, result| {
        let m = match result {
            GroupSyncResult::Committed { partitions, .. } => {
                tracing::info!(flow = %ctx.name, group, partitions, "synced the target group's offsets");
                summary.committed += 1;
                metrics::GroupSyncOutcome::Committed
            }
            GroupSyncResult::GroupActive => {
                tracing::info!(flow = %ctx.name, group, "the target group became active; not synced");
                summary.skipped_active += 1;
                metrics::GroupSyncOutcome::SkippedActive
            }
            GroupSyncResult::CommitFailed(e) => {
                ctx.metrics
                    .request_error(t.alias(), "OffsetCommit", &error_label(&e));
                tracing::warn!(flow = %ctx.name, cluster = t.alias(), group, error = %e, "OffsetCommit failed");
                summary.failed += 1;
                metrics::GroupSyncOutcome::Failed
            }
            GroupSyncResult::NotCommitted(decision) => match decision {
                GroupSyncDecision::SkippedActive(_) => {
                    summary.skipped_active += 1;
                    metrics::GroupSyncOutcome::SkippedActive
                }
                GroupSyncDecision::SkippedTargetAhead { .. } => {
                    summary.skipped_target_ahead += 1;
                    metrics::GroupSyncOutcome::SkippedTargetAhead
                }
                GroupSyncDecision::SkippedUnknownState => {
                    summary.skipped_unknown_state += 1;
                    metrics::GroupSyncOutcome::SkippedUnknownState
                }
                GroupSyncDecision::NothingToDo | GroupSyncDecision::Commit { .. } => return,
            },
        };
        if let Some(i) = metrics::GroupSyncOutcome::ALL.iter().position(|o| *o == m) {
            counts[i] += 1;
        }
        outcome(group, m);
    })
    .await;
    for (o, n) in metrics::GroupSyncOutcome::ALL.into_iter().zip(counts) {
        ctx.metrics.groups_synced(&ctx.name, o, n);
    }
    summary
}

/// Describes `groups` on the target and lists the offsets of the Empty
/// ones. A failed describe fails the whole refresh (counted and logged).
pub async fn refresh_target<C: FlowCluster>(
    ctx: &FlowContext<C>,
    groups: &[String],
) -> Result<BTreeMap<String, TargetGroup>, StepError> {
    refresh_groups(ctx, &ctx.target, groups).await
}

/// [`refresh_target`] on cluster `t` of the flow (`cutover` back to the
/// source commits there).
pub async fn refresh_groups<C: FlowCluster>(
    ctx: &FlowContext<C>,
    t: &C,
    groups: &[String],
) -> Result<BTreeMap<String, TargetGroup>, StepError> {
    if groups.is_empty() {
        return Ok(BTreeMap::new());
    }
    let described = match t.describe_groups(groups).await {
        Ok(d) => d,
        Err(e) => {
            let e = ctx.step::<()>(t, "DescribeGroups", Err(e)).unwrap_err();
            tracing::warn!(flow = %ctx.name, error = %e, "target refresh failed; no group sync this round");
            return Err(e);
        }
    };
    let empty: Vec<String> = described
        .iter()
        .filter(|(_, d)| d.state == TargetGroupState::Empty)
        .map(|(g, _)| g.clone())
        .collect();
    let mut offsets = if empty.is_empty() {
        BTreeMap::new()
    } else {
        match t.fetch_target_offsets(&empty).await {
            Ok(o) => o,
            Err(e) => {
                ctx.metrics
                    .request_error(t.alias(), "OffsetFetch", &error_label(&e));
                tracing::warn!(flow = %ctx.name, cluster = t.alias(), error = %e, "OffsetFetch of target groups failed");
                BTreeMap::new()
            }
        }
    };
    let mut out = BTreeMap::new();
    for (group, d) in described {
        let committed = offsets.remove(&group).and_then(Result::ok);
        out.insert(group, TargetGroup::from_state(d.state, committed));
    }
    Ok(out)
}

/// The groups a sync of `only` (all of the store's when `None`) describes.
fn sync_group_names(store: &CheckpointStore, only: Option<&BTreeSet<String>>) -> Vec<String> {
    match only {
        Some(only) => only.iter().cloned().collect(),
        None => store.sync_groups().map(|(g, _)| g.to_owned()).collect(),
    }
}

/// What the first step of a group sync found on the target.
pub(super) struct Refreshed {
    refresh: TargetRefresh,
    /// Why the describe failed: the sync still carries out its plan (which
    /// then commits nothing) and reports this.
    failed: Option<StepError>,
}

impl Refreshed {
    /// The core's plan for `only` (all groups when `None`) from the store as
    /// it is now.
    pub(super) fn plan(
        &self,
        store: &CheckpointStore,
        only: Option<&BTreeSet<String>>,
    ) -> GroupSyncPlan {
        match only {
            Some(only) => {
                plan_group_sync_for(store, only.iter().map(String::as_str), &self.refresh)
            }
            None => plan_group_sync(store, &self.refresh),
        }
    }

    pub(super) fn finish(self, summary: SyncSummary) -> Result<SyncSummary, StepError> {
        self.failed.map_or(Ok(summary), Err)
    }
}

/// What carrying out one group's [`GroupSyncDecision`] did.
#[derive(Debug)]
pub enum GroupSyncResult {
    /// The offsets were committed.
    Committed {
        /// Partitions written.
        partitions: usize,
        /// Partitions left alone because the target was at or ahead.
        target_ahead: usize,
    },
    /// The broker refused the commit: the group has active members.
    GroupActive,
    /// The commit failed.
    CommitFailed(Error),
    /// Nothing was committed, as decided (never [`GroupSyncDecision::Commit`]).
    NotCommitted(GroupSyncDecision),
}

/// How many target groups' OffsetCommits a group sync has in flight at once.
/// Each group is committed by its own request to its coordinator; one after
/// another, a sync of 1,000 groups took about 20 s under load and held the
/// commit follower's next checkpoints back behind it (docs/benchmarks.md,
/// "Commit → checkpoint latency"). The decisions do not depend on each other,
/// so they are carried out concurrently; each keeps its own safety check (the
/// broker refuses an admin commit into a group with members).
pub const GROUP_SYNC_CONCURRENCY: usize = 64;

/// Carries out a group-sync plan on `target`: issues the decided commits, up
/// to [`GROUP_SYNC_CONCURRENCY`] at a time, and hands every group's result to
/// `report` in group order as soon as it and those before it are known. The
/// run loop's group sync and `translate --apply` both go through here.
pub async fn carry_out_group_sync<C: FlowCluster>(
    target: &C,
    plan: GroupSyncPlan,
    mut report: impl FnMut(&str, GroupSyncResult),
) {
    use futures_util::stream::{self, StreamExt};
    // The steady case, every group idle at its checkpoints: nothing to
    // commit, so every result is known now, reported without a future per
    // group.
    if plan.commits().next().is_none() {
        for (group, decision) in plan.decisions {
            report(&group, GroupSyncResult::NotCommitted(decision));
        }
        return;
    }
    let mut results = stream::iter(plan.decisions.into_iter().map(
        |(group, decision)| async move {
            let result = match decision {
                GroupSyncDecision::Commit {
                    offsets,
                    target_ahead,
                } => match target.commit_group_offsets(&group, &offsets).await {
                    Ok(CommitOutcome::Committed) => GroupSyncResult::Committed {
                        partitions: offsets.len(),
                        target_ahead,
                    },
                    Ok(CommitOutcome::GroupActive) => GroupSyncResult::GroupActive,
                    Err(e) => GroupSyncResult::CommitFailed(e),
                },
                other => GroupSyncResult::NotCommitted(other),
            };
            (group, result)
        },
    ))
    .buffered(GROUP_SYNC_CONCURRENCY);
    while let Some((group, result)) = results.next().await {
        report(&group, result);
    }
}
