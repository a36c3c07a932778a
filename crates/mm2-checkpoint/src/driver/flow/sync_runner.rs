//! [`GroupSyncRunner`]: the run loop's target group sync, carried out beside
//! the loop instead of inside it.
//!
//! A group sync describes the target groups, reads their offsets and commits
//! into the idle ones: for 1,000 groups several seconds under load. Awaited in
//! the loop, it held the commit follower's next checkpoints back for that long
//! (docs/benchmarks.md, "Commit → checkpoint latency"). The runner keeps the
//! sync as a future the loop polls while it follows and emits:
//!
//! * **One sync at a time.** Two syncs in flight could commit into one group
//!   out of order; one at a time, every group's commits land in the order
//!   their plans were made, and each plan reads the target group's offset
//!   after the previous sync's commits landed.
//! * **Coalesced.** Groups the follower checkpoints while a sync runs wait
//!   for the next one, once each, however often they changed; a periodic
//!   (full) sync wanted meanwhile covers them.
//! * **Planned late.** The target is described first (no store needed); the
//!   core plans from the checkpoint store as it is when that answer arrives,
//!   so the commits carry the newest checkpoints. The safety rules are the
//!   core's, unchanged: never into a group with members, never a rewind
//!   (docs/behaviour.md, group sync).
//! * **Only unsynced groups.** A sync reads on the target only the groups
//!   whose checkpoints changed since they were last synced, or whose last
//!   sync did not settle them (`core::SyncedGroups`; docs/translation.md,
//!   "Only new checkpoints"): a steady flow's periodic sync reads nothing.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;

use crate::core::{CheckpointStore, DecidedCheckpoints, PlannedCommits, SyncedGroups};
use crate::metrics::GroupSyncOutcome;

use super::cluster::FlowCluster;
use super::context::{FlowContext, StepError};
use super::group_sync::{Refreshed, SyncSummary, carry_out_sync_with, refresh_for_sync};

/// What a finished sync reports to the loop.
#[derive(Debug)]
pub struct SyncDone {
    /// Whether it was a full (periodic) sync rather than the follower's sync
    /// of the groups it checkpointed.
    pub full: bool,
    /// How many groups it covered.
    pub groups: usize,
    /// Its outcome, as [`sync_groups`](super::group_sync::sync_groups) reports it.
    pub result: Result<SyncSummary, StepError>,
}

/// The step a running sync reached; handed to [`GroupSyncRunner::advance`].
pub struct SyncStep(Step);

enum Step {
    Refreshed {
        full: bool,
        groups: BTreeSet<String>,
        refreshed: Refreshed,
    },
    Done {
        done: SyncDone,
        planned: PlannedCommits,
        /// The groups whose commit landed.
        committed: Vec<String>,
        /// The groups whose commit failed.
        failed: Vec<String>,
    },
}

type StepFuture<'a> = Pin<Box<dyn Future<Output = Step> + Send + 'a>>;

enum Running<'a> {
    /// Describing the target groups and reading their offsets.
    Refreshing(StepFuture<'a>),
    /// Committing.
    Committing(StepFuture<'a>),
    /// A step was handed out by [`GroupSyncRunner::next_step`] and not yet
    /// to [`GroupSyncRunner::advance`]: no other sync may start meanwhile.
    Stepped,
}

/// A flow's target group syncs, one at a time, beside its run loop.
pub struct GroupSyncRunner<'a, C: FlowCluster> {
    ctx: &'a FlowContext<C>,
    want_full: bool,
    want_groups: BTreeSet<String>,
    running: Option<Running<'a>>,
    /// The groups synced, and at which store version: a sync reads only
    /// the others.
    synced: SyncedGroups,
    /// With reverse checkpoints on: the checkpoints already decided upon,
    /// never synced again (the newer commit wins).
    decided: Option<DecidedCheckpoints>,
}

impl<'a, C: FlowCluster + 'a> GroupSyncRunner<'a, C> {
    /// A runner with nothing to do.
    pub fn new(ctx: &'a FlowContext<C>) -> Self {
        GroupSyncRunner {
            ctx,
            want_full: false,
            want_groups: BTreeSet::new(),
            running: None,
            synced: SyncedGroups::default(),
            decided: ctx
                .cfg
                .reverse_checkpoints_enabled
                .then(DecidedCheckpoints::default),
        }
    }

    /// Asks for a sync of `groups` (the groups the follower just checkpointed).
    pub fn want_groups(&mut self, groups: impl IntoIterator<Item = String>) {
        if !self.want_full {
            self.want_groups.extend(groups);
        }
    }

    /// Asks for a sync of every group of the store (the periodic sync).
    pub fn want_full(&mut self) {
        self.want_full = true;
        self.want_groups.clear();
    }

    /// Whether no sync runs and none is wanted (what the tests check).
    #[cfg(test)]
    pub fn is_idle(&self) -> bool {
        self.running.is_none() && !self.want_full && self.want_groups.is_empty()
    }

    /// Whether a sync is committing now (what shutdown waits for).
    pub fn is_committing(&self) -> bool {
        matches!(self.running, Some(Running::Committing(_)))
    }

    /// Starts the wanted sync unless one runs: of the wanted groups (all of
    /// `store`'s for a full sync), those not synced since their checkpoints
    /// last changed.
    pub fn start(&mut self, store: &CheckpointStore) {
        if self.running.is_some() {
            return;
        }
        let only = if self.want_full {
            self.want_full = false;
            None
        } else if self.want_groups.is_empty() {
            return;
        } else {
            Some(std::mem::take(&mut self.want_groups))
        };
        let ctx = self.ctx;
        let full = only.is_none();
        let groups = self.synced.unsynced(store, only.as_ref());
        self.running = Some(Running::Refreshing(Box::pin(async move {
            let refreshed = refresh_for_sync(ctx, groups.clone()).await;
            Step::Refreshed {
                full,
                groups: groups.into_iter().collect(),
                refreshed,
            }
        })));
    }

    /// Resolves when the running sync reaches its next step, to be handed to
    /// [`advance`](Self::advance) before anything else; never while no sync
    /// runs. Cancel-safe: the sync stays in the runner until it resolves.
    pub async fn next_step(&mut self) -> SyncStep {
        let step = match self.running.as_mut() {
            Some(Running::Refreshing(f) | Running::Committing(f)) => f.await,
            None | Some(Running::Stepped) => return std::future::pending().await,
        };
        self.running = Some(Running::Stepped);
        SyncStep(step)
    }

    /// Moves the sync on from `step`: plans the commits from `store` as it is
    /// now and starts them, or reports the finished sync and starts the next
    /// wanted one.
    pub fn advance(&mut self, step: SyncStep, store: &CheckpointStore) -> Option<SyncDone> {
        self.running = None;
        match step.0 {
            Step::Refreshed {
                full,
                groups,
                refreshed,
            } => {
                let mut plan = refreshed.plan(store, Some(&groups));
                if let Some(decided) = self.decided.as_mut() {
                    decided.keep_new(&mut plan, store);
                }
                let planned = self.synced.planned(&plan, store);
                let ctx = self.ctx;
                let groups = plan.decisions.len();
                self.running = Some(Running::Committing(Box::pin(async move {
                    let (mut committed, mut failed) = (Vec::new(), Vec::new());
                    let summary = carry_out_sync_with(ctx, plan, |group, outcome| match outcome {
                        GroupSyncOutcome::Committed => committed.push(group.to_owned()),
                        GroupSyncOutcome::Failed => failed.push(group.to_owned()),
                        _ => {}
                    })
                    .await;
                    Step::Done {
                        done: SyncDone {
                            full,
                            groups,
                            result: refreshed.finish(summary),
                        },
                        planned,
                        committed,
                        failed,
                    }
                })));
                None
            }
            Step::Done {
                done,
                planned,
                committed,
                failed,
            } => {
                for group in &committed {
                    self.synced.committed(&planned, group);
                }
                if let Some(decided) = self.decided.as_mut() {
                    for group in &failed {
                        decided.forget(group);
                    }
                }
                self.start(store);
                Some(done)
            }
        }
    }

    /// Carries the running sync to its end if it is committing (a shutdown
    /// lets the commits in flight land); a sync still describing is dropped,
    /// as nothing of it reached the target.
    pub async fn finish_commits(&mut self, store: &CheckpointStore) -> Option<SyncDone> {
        if !self.is_committing() {
            self.running = None;
            return None;
        }
        let step = self.next_step().await;
        self.want_full = false;
        self.want_groups.clear();
        self.advance(step, store)
    }
}
