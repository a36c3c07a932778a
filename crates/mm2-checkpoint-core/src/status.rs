//! Whether a group may move now, and how a flow's groups stand as a whole
//! (docs/operations.md, "status").
//!
//! `status` asks the same question a planned cutover asks, without waiting
//! and without committing: the cutover's decisions ([`crate::cutover`]) are
//! the one owner of "exact, bounded, wait or refused"; this module only
//! reads a [`GroupPlan`] and adds time. It adds the age of the group's
//! newest checkpoint (how old the translation a failover would use is) from
//! the checkpoint's record time and a current time handed in, and sums the
//! groups of a flow into a few counts whose number does not grow with the
//! groups (for metrics).

use crate::cutover::{GroupDecision, GroupPlan, PartitionDecision, Refusal, WaitReason};

/// Whether a group may be cut over now, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Every partition exact: the consumers read nothing twice.
    Exact,
    /// Every partition decided, some with a re-read bound above 0.
    Bounded {
        /// The largest bound of its partitions.
        reread: i64,
    },
    /// Some partition waits for the mirror or the offset syncs (none is
    /// refused): ask again later.
    Waiting {
        /// How many partitions wait.
        partitions: usize,
        /// The first partition's reason.
        first: WaitReason,
    },
    /// The group cannot move now: members on a side, nothing committed, or
    /// some partition refused.
    NotReady(Refusal),
}

impl Readiness {
    /// Whether the group may be cut over now.
    pub fn ready(&self) -> bool {
        matches!(self, Readiness::Exact | Readiness::Bounded { .. })
    }

    /// The short name used in the JSON and the table: `exact`, `bounded`,
    /// `waiting` or `not_ready`.
    pub fn name(&self) -> &'static str {
        match self {
            Readiness::Exact => "exact",
            Readiness::Bounded { .. } => "bounded",
            Readiness::Waiting { .. } => "waiting",
            Readiness::NotReady(_) => "not_ready",
        }
    }
}

/// One group's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupStatus {
    /// The group.
    pub group: String,
    /// Whether it may move now.
    pub readiness: Readiness,
    /// The largest re-read bound of its decided partitions (0 when all are
    /// exact), `None` when none is decided.
    pub worst_reread: Option<i64>,
    /// How many of its partitions are decided (exact or bounded), and of how
    /// many.
    pub decided: (usize, usize),
    /// Milliseconds since the time of its newest checkpoint record, `None`
    /// when it has no checkpoint. Never negative: a record stamped after
    /// `now` (clock skew) is 0 old.
    pub checkpoint_age_ms: Option<i64>,
}

/// The status of the group `plan` decides, its newest checkpoint stamped
/// `newest_checkpoint_ms` (a record time, if it has one), at time `now_ms`.
pub fn group_status(
    plan: &GroupPlan,
    newest_checkpoint_ms: Option<i64>,
    now_ms: i64,
) -> GroupStatus {
    let rereads: Vec<i64> = plan
        .partitions
        .iter()
        .filter_map(|p| p.decision.reread())
        .collect();
    let worst_reread = rereads.iter().copied().max();
    let readiness = match &plan.decision {
        GroupDecision::Ready => match worst_reread {
            Some(r) if r > 0 => Readiness::Bounded { reread: r },
            _ => Readiness::Exact,
        },
        GroupDecision::Wait => {
            let waits: Vec<WaitReason> = plan
                .partitions
                .iter()
                .filter_map(|p| match p.decision {
                    PartitionDecision::Wait(why) => Some(why),
                    _ => None,
                })
                .collect();
            match waits.first() {
                Some(&first) => Readiness::Waiting {
                    partitions: waits.len(),
                    first,
                },
                // A plan waits only with a waiting partition; a plan built
                // otherwise is not trusted to be ready.
                None => Readiness::NotReady(Refusal::UnknownState),
            }
        }
        GroupDecision::Refused(Some(why)) => Readiness::NotReady(why.clone()),
        GroupDecision::Refused(None) => Readiness::NotReady(
            plan.partitions
                .iter()
                .find_map(|p| match &p.decision {
                    PartitionDecision::Refused(why) => Some(why.clone()),
                    _ => None,
                })
                .unwrap_or(Refusal::UnknownState),
        ),
    };
    GroupStatus {
        group: plan.group.clone(),
        readiness,
        worst_reread,
        decided: (rereads.len(), plan.partitions.len()),
        checkpoint_age_ms: newest_checkpoint_ms.map(|t| now_ms.saturating_sub(t).max(0)),
    }
}

/// A flow's groups summed up: a fixed set of numbers whatever the number of
/// groups, for metrics and the top of the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowSummary {
    /// Groups ready with every partition exact.
    pub exact: usize,
    /// Groups ready with a re-read bound somewhere.
    pub bounded: usize,
    /// Groups waiting for the mirror or the syncs.
    pub waiting: usize,
    /// Groups that cannot move now.
    pub not_ready: usize,
    /// The largest re-read bound of any ready group (0 when none is bounded).
    pub max_reread: i64,
    /// The oldest newest-checkpoint among the groups, in milliseconds.
    pub max_checkpoint_age_ms: Option<i64>,
}

/// Sums `groups` up.
pub fn summarize(groups: &[GroupStatus]) -> FlowSummary {
    let mut s = FlowSummary::default();
    for g in groups {
        match g.readiness {
            Readiness::Exact => s.exact += 1,
            Readiness::Bounded { reread } => {
                s.bounded += 1;
                s.max_reread = s.max_reread.max(reread);
            }
            Readiness::Waiting { .. } => s.waiting += 1,
            Readiness::NotReady(_) => s.not_ready += 1,
        }
        s.max_checkpoint_age_ms = s.max_checkpoint_age_ms.max(g.checkpoint_age_ms);
    }
    s
}

#[cfg(test)]
mod tests;
