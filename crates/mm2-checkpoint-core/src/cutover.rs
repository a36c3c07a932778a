//! Planned cutover: moving consumer groups from one side of a flow `S->T` to
//! the other on purpose (docs/operations.md, "Planned cutover";
//! docs/translation.md, "Cutover decisions").
//!
//! A cutover goes either way. **Forward** (groups leave S for T) carries each
//! group's final commit on S through the flow's offset syncs, as a checkpoint
//! does, and commits the result on T's remote topics. **Back** (groups leave
//! T for S, failing back) carries the final commit on T's remote topics back
//! through the same syncs ([`crate::reverse`]) and commits on S.
//!
//! These are the decisions, made from facts the driver gathered: per
//! group-partition the translation of the final commit, the partition's syncs
//! and the end offsets of both sides; per group its state on the side left
//! and on the side gone to. Each group-partition ends in one of four places:
//!
//! * **exact**: the consumer resumes where it stopped and reads nothing twice;
//!   a sync is at the commit, or (forward) at the record just before it;
//! * **bounded**: a safe position (nothing is skipped) and how many records
//!   the consumer may read a second time;
//! * **wait**: the mirrored data or the syncs do not cover the commit yet;
//! * **refused**: nothing that waiting can change makes it safe.
//!
//! A group is committed only when every one of its partitions is exact or
//! bounded, it has no members on the side it leaves and none on the side it
//! goes to, and no partition there is ahead of the position (a cutover never
//! lowers a group, and a group ahead of the position would skip records).

use std::collections::BTreeMap;

use crate::format::{Checkpoint, CheckpointKey};
use crate::group_sync::TargetGroupState;
use crate::reverse::ReverseTranslation;
use crate::sync_store::{OffsetSync, Precision};
use crate::types::{TopicPartition, Translation};

/// How a cutover keeps the offset syncs it reads, whatever the flow's own
/// translation: every sync of each partition's current generation, up to
/// `max_syncs` per partition (the flow's precise budget), besides the 64
/// slots (docs/translation.md, "Cutover decisions"). `status`, which asks
/// the cutover's questions, reads the same way.
///
/// A cutover reads the offset-syncs topic once, when it runs, and that is
/// usually long after the final commits it translates. MirrorMaker 2's slots
/// alone keep only a few syncs far behind the newest one, so a commit made
/// when its sync was the newest would be translated through a sync far
/// below it (a commit at 2,150 on T back to 1 on S, through the first sync
/// of the partition) while the daemon, which translated the commit when it
/// was new, had found the sync just before it: the cutover was needlessly
/// behind the daemon, and refused the group as ahead of its position where
/// the daemon's group sync had raised it. Past the budget a partition's
/// oldest syncs are dropped, and commits older than the oldest kept sync are
/// answered from the slots again.
pub fn reading_precision(max_syncs: usize) -> Precision {
    Precision::Precise {
        max_syncs: max_syncs.max(1),
    }
}

/// Which way the groups move across the flow `S->T`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From S to T: forward translation, commit on T's remote topics.
    Forward,
    /// From T back to S: reverse translation, commit on S.
    Back,
}

/// Why a group-partition is not decided yet; the wait may end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitReason {
    /// The offset-syncs topic has not been read to its end.
    NotReady,
    /// No offset sync of the partition is known yet.
    NoSync,
    /// The syncs do not reach past the final commit yet: the records the group
    /// read are not all known to be mirrored.
    NotCovered {
        /// The newest sync of the partition.
        newest: Option<OffsetSync>,
    },
}

/// Why a group-partition or a group cannot be cut over; waiting changes
/// nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Every sync of the partition is past the final commit: the syncs no
    /// longer say where the group stopped.
    TooOld,
    /// The translated position is past the end of the partition on the side
    /// gone to: it is not the partition the syncs describe.
    PastEnd {
        /// The translated position.
        position: i64,
        /// The partition's end offset there.
        end: i64,
    },
    /// The partition does not exist on the side gone to (or its end offset
    /// could not be listed).
    MissingThere,
    /// The group there has committed past the position: committing would
    /// lower it, and leaving it would skip the records between.
    AheadThere {
        /// The translated position.
        position: i64,
        /// The group's committed offset there.
        committed: i64,
    },
    /// The group has members (or is rebalancing) on the side it leaves.
    ActiveOnLeft(TargetGroupState),
    /// The group has members (or is rebalancing) on the side it goes to.
    ActiveThere(TargetGroupState),
    /// The group's state on one side is not known (the describe failed).
    UnknownState,
    /// The group has no committed offset on the flow's topics on the side it
    /// leaves.
    NothingCommitted,
    /// The deadline passed while the partition was still waiting.
    TimedOut(WaitReason),
}

/// The decision for one group-partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartitionDecision {
    /// The consumer resumes at `position` and reads nothing twice.
    Exact {
        /// The offset to commit on the side gone to.
        position: i64,
        /// The sync that proves it.
        through: OffsetSync,
    },
    /// The consumer resumes at `position`, skipping nothing, and may read up
    /// to `reread` records a second time.
    Bounded {
        /// The offset to commit on the side gone to.
        position: i64,
        /// The sync the position was translated through.
        through: OffsetSync,
        /// At most this many records are read again.
        reread: i64,
    },
    /// Not decided yet.
    Wait(WaitReason),
    /// Cannot be cut over.
    Refused(Refusal),
}

impl PartitionDecision {
    /// The position to commit, when decided.
    pub fn position(&self) -> Option<i64> {
        match self {
            PartitionDecision::Exact { position, .. }
            | PartitionDecision::Bounded { position, .. } => Some(*position),
            _ => None,
        }
    }

    /// The offset sync the position was translated through, when decided.
    pub fn through(&self) -> Option<OffsetSync> {
        match self {
            PartitionDecision::Exact { through, .. }
            | PartitionDecision::Bounded { through, .. } => Some(*through),
            _ => None,
        }
    }

    /// How many records may be read again: 0 when exact, `None` when undecided.
    pub fn reread(&self) -> Option<i64> {
        match self {
            PartitionDecision::Exact { .. } => Some(0),
            PartitionDecision::Bounded { reread, .. } => Some(*reread),
            _ => None,
        }
    }
}

/// What the driver knows of one group-partition of a forward cutover.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForwardFacts<'a> {
    /// The final commit on S.
    pub committed: i64,
    /// The offset-sync store's translation of `committed` (the one rule of
    /// forward translation, docs/behaviour.md C.5).
    pub translation: Translation,
    /// The partition's syncs the store holds, in any order.
    pub syncs: &'a [OffsetSync],
    /// The end offset of the remote partition on T, if listed.
    pub end_there: Option<i64>,
    /// The position content search proved for the commit, if it ran and
    /// proved one ([`crate::content_search::decide`]: the records the group
    /// read since the sync, found copied one for one right after the sync's
    /// copy).
    pub proven: Option<i64>,
}

/// Decides one group-partition of a forward cutover.
///
/// Exact when a sync is at the commit U, or at U - 1 (the record the group
/// read last: the position is the offset after its copy) while the target's
/// partition ends at the position, and no sync of a record below U lies at
/// or past the position (a mirror that restarted there copied records the
/// group read once more). Otherwise the
/// position is the offset after the copy of the sync's record u, and the
/// group reads again the copies of the records before U that lie between the
/// position and the first sync at or past U (at or past the position); past
/// that sync the mirror has copied only records from there on, or the
/// offset-sync store would have seen a rewind and started a new generation
/// (docs/translation.md, "Cutover decisions"). The bound counts those offsets,
/// not U - u - 1: a mirror that restarted between two syncs copied some
/// records twice. Until such a sync is known the partition waits. A
/// position content search proved is exact, covered or not.
pub fn decide_forward(facts: &ForwardFacts<'_>) -> PartitionDecision {
    let committed = facts.committed;
    let position = match facts.translation {
        Translation::NotReady => return PartitionDecision::Wait(WaitReason::NotReady),
        Translation::NoSync => return PartitionDecision::Wait(WaitReason::NoSync),
        Translation::TooOld => return PartitionDecision::Refused(Refusal::TooOld),
        Translation::Translated(position) => position,
    };
    let find = |u: i64, d: i64| {
        facts
            .syncs
            .iter()
            .copied()
            .find(|s| s.upstream == u && s.downstream == d)
    };
    // A sync of an earlier record at or past the position: the mirror
    // restarted and copied records the group read again after it.
    let copied_again = facts
        .syncs
        .iter()
        .any(|s| s.upstream < committed && s.downstream >= position);
    // At U - 1 the sync says where the group's last record was copied, but
    // not that the mirror did not copy it again right after (the store keeps
    // one of two syncs at one upstream offset): exact only while nothing
    // follows the position on the target.
    let caught_up = facts.end_there == Some(position);
    let exact = find(committed, position)
        .or_else(|| {
            find(committed.saturating_sub(1), position.saturating_sub(1)).filter(|_| caught_up)
        })
        .filter(|_| !copied_again);
    // Content search answers from the sync the position came through, and
    // never below it.
    let proven = facts.proven.filter(|&d| d >= position).and_then(|d| {
        let through = facts
            .syncs
            .iter()
            .copied()
            .find(|s| s.upstream < committed && s.downstream == position.saturating_sub(1))?;
        Some((d, through))
    });
    if let Some((position, through)) = proven {
        return check_fits(
            PartitionDecision::Exact { position, through },
            position,
            facts.end_there,
        );
    }
    let decided = if let Some(through) = exact {
        PartitionDecision::Exact { position, through }
    } else {
        // The sync translated through: the newest at or below the commit
        // whose copy is just before the position (or at it).
        let through = facts
            .syncs
            .iter()
            .copied()
            .filter(|s| {
                s.upstream <= committed
                    && (s.downstream == position.saturating_sub(1) || s.downstream == position)
            })
            .max_by_key(|s| (s.upstream, s.downstream));
        let covering = facts
            .syncs
            .iter()
            .copied()
            .filter(|s| s.upstream >= committed && s.downstream >= position)
            .min_by_key(|s| s.downstream);
        match (through, covering) {
            (Some(through), Some(covering)) => PartitionDecision::Bounded {
                position,
                through,
                reread: covering.downstream - position,
            },
            _ => {
                return PartitionDecision::Wait(WaitReason::NotCovered {
                    newest: newest(facts.syncs),
                });
            }
        }
    };
    check_fits(decided, position, facts.end_there)
}

/// What the driver knows of one group-partition of a cutover back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackFacts<'a> {
    /// The final commit on T's remote partition.
    pub committed: i64,
    /// Its reverse translation ([`crate::reverse::translate_back`]).
    pub translation: ReverseTranslation,
    /// The partition's syncs the store holds, in any order.
    pub syncs: &'a [OffsetSync],
    /// The end offset of the remote partition on T (the side left), if listed.
    pub end_left: Option<i64>,
    /// The end offset of the partition on S, if listed.
    pub end_there: Option<i64>,
}

/// Decides one group-partition of a cutover back.
///
/// Exact when a sync is at the commit. Otherwise the position is the reverse
/// translation's, decided once no later sync can change it: a sync at or past
/// the commit is known, or the sync is at the record just before the commit
/// and that is the end of T's partition (the group read all of it). The
/// re-read bound is [`crate::reverse::ReversePosition::reread_bound`] at S's
/// end offset.
pub fn decide_back(facts: &BackFacts<'_>) -> PartitionDecision {
    let p = match facts.translation {
        ReverseTranslation::NotReady => return PartitionDecision::Wait(WaitReason::NotReady),
        ReverseTranslation::NoSync => return PartitionDecision::Wait(WaitReason::NoSync),
        ReverseTranslation::TooOld => return PartitionDecision::Refused(Refusal::TooOld),
        ReverseTranslation::Translated(p) => p,
    };
    let Some(end) = facts.end_there else {
        return PartitionDecision::Refused(Refusal::MissingThere);
    };
    let decided = if p.exact {
        PartitionDecision::Exact {
            position: p.upstream,
            through: p.through,
        }
    } else {
        let covered = facts.syncs.iter().any(|s| s.downstream >= facts.committed)
            || (p.through.downstream == facts.committed - 1
                && facts.end_left == Some(facts.committed));
        if !covered {
            return PartitionDecision::Wait(WaitReason::NotCovered {
                newest: newest(facts.syncs),
            });
        }
        PartitionDecision::Bounded {
            position: p.upstream,
            through: p.through,
            reread: p.reread_bound(end),
        }
    };
    if !p.fits(end) {
        return PartitionDecision::Refused(Refusal::PastEnd {
            position: p.upstream,
            end,
        });
    }
    decided
}

/// The newest sync (furthest downstream) of `syncs`.
fn newest(syncs: &[OffsetSync]) -> Option<OffsetSync> {
    syncs
        .iter()
        .copied()
        .max_by_key(|s| (s.downstream, s.upstream))
}

/// Refuses `decided` when `position` is past the partition's end `end`.
fn check_fits(decided: PartitionDecision, position: i64, end: Option<i64>) -> PartitionDecision {
    match end {
        None => PartitionDecision::Refused(Refusal::MissingThere),
        Some(end) if position > end => {
            PartitionDecision::Refused(Refusal::PastEnd { position, end })
        }
        Some(_) => decided,
    }
}

/// A group's state on one side, as the driver described it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Side {
    /// No members: offsets may be committed by an admin. The map holds its
    /// committed offsets there (the side gone to only; empty on the side left).
    Idle(BTreeMap<TopicPartition, i64>),
    /// The group does not exist there.
    Absent,
    /// Members, or a rebalance.
    Active(TargetGroupState),
    /// The describe or the offset listing failed.
    Unknown,
}

/// One partition of a group: its name on the side left, its name on the side
/// gone to, the final commit and its decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionPlan {
    /// The partition on the side left.
    pub left: TopicPartition,
    /// The partition on the side gone to.
    pub there: TopicPartition,
    /// The final commit on the side left.
    pub committed: i64,
    /// The group's commit metadata there, carried over.
    pub metadata: String,
    /// The decision.
    pub decision: PartitionDecision,
}

/// The decision for one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupDecision {
    /// Every partition is exact or bounded: commit the positions.
    Ready,
    /// At least one partition is waiting (none refused).
    Wait,
    /// The group cannot be cut over; the partitions say which and why, or
    /// the group as a whole is refused for this reason.
    Refused(Option<Refusal>),
}

/// A group's plan: its partitions and the decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPlan {
    /// The group.
    pub group: String,
    /// Its partitions, in the order of the side left's names.
    pub partitions: Vec<PartitionPlan>,
    /// What to do with it.
    pub decision: GroupDecision,
}

impl GroupPlan {
    /// Whether every partition is exact.
    pub fn all_exact(&self) -> bool {
        self.partitions
            .iter()
            .all(|p| matches!(p.decision, PartitionDecision::Exact { .. }))
    }

    /// The checkpoints to commit on the side gone to, when ready: keyed by
    /// the name there, the final commit as the upstream offset. The group
    /// sync decisions ([`crate::group_sync`]) carry them out, so their rules
    /// (idle groups only, never lowering) hold at the commit too.
    pub fn checkpoints(&self) -> Vec<Checkpoint> {
        if self.decision != GroupDecision::Ready {
            return Vec::new();
        }
        self.partitions
            .iter()
            .filter_map(|p| {
                Some(Checkpoint {
                    key: CheckpointKey {
                        group: self.group.clone(),
                        topic_partition: p.there.clone(),
                    },
                    upstream_offset: p.committed,
                    downstream_offset: p.decision.position()?,
                    metadata: p.metadata.clone(),
                })
            })
            .collect()
    }
}

/// Decides one group from its states on both sides and its partitions'
/// decisions: refuses it when it is active (or unknown) on either side, has
/// nothing committed, or has a refused partition; checks every decided
/// position against the group's commits there (never lowering); else it is
/// ready once no partition waits.
pub fn decide_group(
    group: &str,
    left: &Side,
    there: &Side,
    mut partitions: Vec<PartitionPlan>,
) -> GroupPlan {
    let refuse = |partitions, why| GroupPlan {
        group: group.to_owned(),
        partitions,
        decision: GroupDecision::Refused(Some(why)),
    };
    match left {
        Side::Active(state) => return refuse(partitions, Refusal::ActiveOnLeft(*state)),
        Side::Unknown => return refuse(partitions, Refusal::UnknownState),
        Side::Idle(_) | Side::Absent => {}
    }
    if partitions.is_empty() {
        return refuse(partitions, Refusal::NothingCommitted);
    }
    let committed_there = match there {
        Side::Active(state) => return refuse(partitions, Refusal::ActiveThere(*state)),
        Side::Unknown => return refuse(partitions, Refusal::UnknownState),
        Side::Idle(committed) => Some(committed),
        Side::Absent => None,
    };
    for p in &mut partitions {
        let Some(position) = p.decision.position() else {
            continue;
        };
        if let Some(&committed) = committed_there.and_then(|c| c.get(&p.there))
            && committed > position
        {
            p.decision = PartitionDecision::Refused(Refusal::AheadThere {
                position,
                committed,
            });
        }
    }
    let decision = if partitions
        .iter()
        .any(|p| matches!(p.decision, PartitionDecision::Refused(_)))
    {
        GroupDecision::Refused(None)
    } else if partitions
        .iter()
        .any(|p| matches!(p.decision, PartitionDecision::Wait(_)))
    {
        GroupDecision::Wait
    } else {
        GroupDecision::Ready
    };
    GroupPlan {
        group: group.to_owned(),
        partitions,
        decision,
    }
}

/// Whether the wait is over: no group waits any more.
pub fn wait_over(plans: &[GroupPlan]) -> bool {
    plans.iter().all(|p| p.decision != GroupDecision::Wait)
}

/// Turns every wait left into a refusal once the deadline has passed.
pub fn time_out(plans: &mut [GroupPlan]) {
    for plan in plans.iter_mut() {
        if plan.decision != GroupDecision::Wait {
            continue;
        }
        for p in &mut plan.partitions {
            if let PartitionDecision::Wait(why) = p.decision {
                p.decision = PartitionDecision::Refused(Refusal::TimedOut(why));
            }
        }
        plan.decision = GroupDecision::Refused(None);
    }
}

/// The cutover's outcome as a whole, which the exit code tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every group is ready and every partition exact.
    AllExact,
    /// Every group is ready, some partition with a re-read bound.
    Bounded,
    /// Some group is refused (or still waits), or there is no group.
    Refused,
}

/// The outcome of `plans`.
pub fn outcome(plans: &[GroupPlan]) -> Outcome {
    if plans.is_empty() || plans.iter().any(|p| p.decision != GroupDecision::Ready) {
        Outcome::Refused
    } else if plans.iter().all(GroupPlan::all_exact) {
        Outcome::AllExact
    } else {
        Outcome::Bounded
    }
}

#[cfg(test)]
mod tests;
