//! Target group offset sync decisions (docs/behaviour.md D.5, with quirk H.2 fixed).
//!
//! With `sync.group.offsets.enabled=true`, translated offsets are also committed to
//! the consumer groups on the target cluster, so consumers can fail over without
//! reading checkpoints themselves. The driver refreshes the target groups' states
//! (and, for empty groups, their committed offsets), then asks [`plan_group_sync`]
//! what to commit.
//!
//! Rules:
//! * only groups with at least one checkpoint in the [`CheckpointStore`] are
//!   considered; a group without one is [`GroupSyncDecision::NothingToDo`];
//! * if the refresh failed this round, **nothing** is committed
//!   ([`GroupSyncDecision::SkippedUnknownState`] for every group);
//! * a group that does not exist on the target (`Dead`) gets all its checkpoints;
//! * an `Empty` group gets, per partition, the checkpoint unless the target is
//!   already at or past it (never rewind): absent or `-1` target offset → commit;
//!   target offset `>=` checkpoint → skip; lower → commit;
//! * a group with members or rebalancing (`Stable`, `PreparingRebalance`,
//!   `CompletingRebalance`, `Assigning`, `Reconciling`) is never written
//!   ([`GroupSyncDecision::SkippedActive`]);
//! * a group whose state is unknown, or whose describe/listing failed, is never
//!   written ([`GroupSyncDecision::SkippedUnknownState`]);
//! * no commit is ever empty; checkpoints with a negative downstream offset are never
//!   written.
//!
//! **Differs from MM2** (H.2): MM2 writes *all* checkpoints to every group that was
//! not `EMPTY` at the last refresh: active and rebalancing groups (relying on the
//! broker to reject the commit, which is racy and can rewind live consumers),
//! groups whose describe failed, and every group after a failed refresh. It also
//! issues empty commits for groups without checkpoints.
//!
//! A race remains by nature: a group can become active between the refresh and the
//! commit. The broker then rejects the commit for a group with members.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::checkpoint_store::{CheckpointStore, GroupCheckpoints, StoredCheckpoint};
use super::types::{CommittedOffset, TopicPartition};

/// A consumer group's state on the target, as `DescribeGroups` /
/// `ConsumerGroupDescribe` report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetGroupState {
    /// No members; offsets may be committed by an admin.
    Empty,
    /// The group does not exist (or is being removed).
    Dead,
    /// Members are consuming.
    Stable,
    /// A classic-protocol rebalance is starting.
    PreparingRebalance,
    /// A classic-protocol rebalance is finishing.
    CompletingRebalance,
    /// KIP-848 group assigning partitions.
    Assigning,
    /// KIP-848 group reconciling assignments.
    Reconciling,
    /// Any other state, or none reported.
    Unknown,
}

/// An `Empty` target group's committed offsets, per partition (`None` =
/// committed at -1).
pub type TargetOffsets = BTreeMap<TopicPartition, Option<i64>>;

/// What the refresh learned about one target group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetGroup {
    /// The group is `Empty` and its committed offsets were listed (`None` = committed
    /// at -1).
    Empty(TargetOffsets),
    /// The group does not exist on the target (`Dead`).
    Absent,
    /// The group has members or is rebalancing.
    Active(TargetGroupState),
    /// The describe or the offset listing failed, or the state is unknown.
    Unknown,
}

impl TargetGroup {
    /// Classifies a described group. `committed` is the listing of its offsets,
    /// needed only for `Empty` groups; an `Empty` group without a listing is
    /// [`TargetGroup::Unknown`].
    pub fn from_state(state: TargetGroupState, committed: Option<TargetOffsets>) -> Self {
        match state {
            TargetGroupState::Empty => committed.map_or(TargetGroup::Unknown, TargetGroup::Empty),
            TargetGroupState::Dead => TargetGroup::Absent,
            TargetGroupState::Unknown => TargetGroup::Unknown,
            active => TargetGroup::Active(active),
        }
    }
}

/// The result of this round's refresh of the target groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetRefresh {
    /// The refresh as a whole failed: nothing may be committed this round.
    Failed,
    /// Per-group results; a group missing from the map is treated as unknown.
    Done(BTreeMap<String, TargetGroup>),
}

/// Offsets to commit to one target group, per downstream partition; never empty.
pub type GroupCommit = BTreeMap<TopicPartition, CommittedOffset>;

/// What group sync decided for one group; a commit carries its offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupSyncDecision {
    /// Commit `offsets` (one per partition written); `target_ahead` partitions
    /// were left alone because the target was already at or past the checkpoint.
    Commit {
        /// The offsets to commit; never empty.
        offsets: GroupCommit,
        /// Partitions skipped because the target is at or ahead of the checkpoint.
        target_ahead: usize,
    },
    /// The group has members or is rebalancing.
    SkippedActive(TargetGroupState),
    /// The target is at or ahead of every checkpoint (an empty group is never
    /// rewound).
    SkippedTargetAhead {
        /// Partitions checked.
        partitions: usize,
    },
    /// The group's state is unknown or the refresh failed.
    SkippedUnknownState,
    /// The group has no checkpoint yet.
    NothingToDo,
}

impl GroupSyncDecision {
    /// The offsets to commit, if this decision commits.
    pub fn commit(&self) -> Option<&GroupCommit> {
        match self {
            GroupSyncDecision::Commit { offsets, .. } => Some(offsets),
            _ => None,
        }
    }
}

/// What to commit to target groups this round.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupSyncPlan {
    /// The decision for each group, sorted by group.
    pub decisions: BTreeMap<String, GroupSyncDecision>,
}

impl GroupSyncPlan {
    /// The commits to issue, by group.
    pub fn commits(&self) -> impl Iterator<Item = (&str, &GroupCommit)> {
        self.decisions
            .iter()
            .filter_map(|(g, d)| d.commit().map(|c| (g.as_str(), c)))
    }
}

/// The groups the daemon's group sync has synced, and at which
/// [`CheckpointStore::version`]: the rule that it reads and writes only the
/// groups whose checkpoints are new since (docs/translation.md, "Group
/// sync", "Only new checkpoints").
///
/// MirrorMaker 2 describes every target group and fetches every idle one's
/// offsets each interval, only to find nearly all of them at their
/// checkpoints already. The daemon reads a group on the target only while
/// it is *unsynced*: it has a checkpoint that changed since the group was
/// last synced, or it was never synced (held in memory: after a restart
/// every group is unsynced once). A group is synced when its plan settled
/// it: its commit landed, the target was at or ahead of every checkpoint, or
/// it had nothing to write. A group that had members, whose state was
/// unknown, whose commit failed or was refused stays unsynced and is read
/// again at the next sync. So an idle target group an operator rewound stays
/// where it was put until its source group commits again (a new checkpoint);
/// the safety rules of [`plan_group_sync`] are unchanged.
#[derive(Clone, Debug, Default)]
pub struct SyncedGroups {
    synced: HashMap<Box<str>, u64>,
}

impl SyncedGroups {
    /// Of `groups` (every group of `store` with a checkpoint when `None`),
    /// those whose checkpoints changed since they were last synced, sorted;
    /// groups without a checkpoint have nothing to sync and are left out.
    pub fn unsynced(
        &self,
        store: &CheckpointStore,
        groups: Option<&BTreeSet<String>>,
    ) -> Vec<String> {
        let is_unsynced = |group: &str, checkpoints: GroupCheckpoints<'_>| {
            self.synced
                .get(group)
                .is_none_or(|synced| *synced < checkpoints.version())
        };
        match groups {
            Some(groups) => groups
                .iter()
                .filter(|g| store.group(g).is_some_and(|cps| is_unsynced(g, cps)))
                .cloned()
                .collect(),
            None => store
                .groups()
                .filter(|(g, cps)| is_unsynced(g, *cps))
                .map(|(g, _)| g.to_owned())
                .collect(),
        }
    }

    /// Takes in `plan`, made from `store` as it is now: every group the plan
    /// settles without a commit (the target at or ahead, nothing to write)
    /// is synced at its version now. Returns the version of each group the
    /// plan commits into, for [`committed`](Self::committed) once the
    /// commit landed.
    pub fn planned(&mut self, plan: &GroupSyncPlan, store: &CheckpointStore) -> PlannedCommits {
        let mut commits = PlannedCommits::default();
        for (group, decision) in &plan.decisions {
            let Some(version) = store.group(group).map(|cps| cps.version()) else {
                continue;
            };
            match decision {
                GroupSyncDecision::SkippedTargetAhead { .. } | GroupSyncDecision::NothingToDo => {
                    self.synced.insert(group.as_str().into(), version);
                }
                GroupSyncDecision::Commit { .. } => {
                    commits.versions.insert(group.clone(), version);
                }
                // Tried again at the next sync.
                GroupSyncDecision::SkippedActive(_) | GroupSyncDecision::SkippedUnknownState => {}
            }
        }
        commits
    }

    /// The commit `planned` made into `group` landed: the group is synced at
    /// the version it was planned from (a checkpoint made since keeps it
    /// unsynced).
    pub fn committed(&mut self, planned: &PlannedCommits, group: &str) {
        if let Some(version) = planned.versions.get(group) {
            let synced = self.synced.entry(group.into()).or_default();
            *synced = (*synced).max(*version);
        }
    }
}

/// The store versions of the groups a plan commits into
/// ([`SyncedGroups::planned`]).
#[derive(Clone, Debug, Default)]
pub struct PlannedCommits {
    versions: BTreeMap<String, u64>,
}

/// The checkpoints a running flow's group sync has already decided upon, per
/// group and target partition: the rule of the newer commit when both
/// directions sync (docs/translation.md, "Group sync into the source").
///
/// [`SyncedGroups`] reads a group again once one of its checkpoints is new;
/// with reverse checkpoints on, the flow's syncs then also keep only the
/// partitions whose checkpoint is new since this sync last decided upon it:
/// a checkpoint is written at most once, so a rewind on the target of one
/// partition stays until the group commits that partition again on the
/// source, a newer commit. A group whose state was unknown, or whose commit
/// failed ([`forget`](Self::forget)), is decided again next time. Held in
/// memory: after a restart every checkpoint is new once.
#[derive(Clone, Debug, Default)]
pub struct DecidedCheckpoints {
    decided: BTreeMap<String, BTreeMap<TopicPartition, (i64, i64)>>,
}

impl DecidedCheckpoints {
    /// Takes out of `plan`'s commits every partition whose checkpoint in
    /// `store` was decided upon by an earlier plan (a group left with nothing
    /// becomes [`GroupSyncDecision::NothingToDo`]), and remembers the
    /// checkpoints of every group this plan decides (all but unknown ones).
    pub fn keep_new(&mut self, plan: &mut GroupSyncPlan, store: &CheckpointStore) {
        for (group, decision) in plan.decisions.iter_mut() {
            if matches!(
                decision,
                GroupSyncDecision::SkippedUnknownState | GroupSyncDecision::NothingToDo
            ) {
                continue;
            }
            let Some(checkpoints) = store.group(group) else {
                continue;
            };
            let current: BTreeMap<TopicPartition, (i64, i64)> = checkpoints
                .iter()
                .map(|(topic, partition, cp)| {
                    (
                        TopicPartition::new(topic, partition),
                        (cp.upstream_offset, cp.downstream_offset),
                    )
                })
                .collect();
            let decided = self.decided.entry(group.clone()).or_default();
            if let GroupSyncDecision::Commit { offsets, .. } = decision {
                offsets.retain(|tp, _| decided.get(tp) != current.get(tp));
                if offsets.is_empty() {
                    *decision = GroupSyncDecision::NothingToDo;
                }
            }
            decided.extend(current);
        }
    }

    /// The commit into `group` failed: its checkpoints are decided upon
    /// again by the next plan.
    pub fn forget(&mut self, group: &str) {
        self.decided.remove(group);
    }
}

/// Decides the target group commits of one sync round from the checkpoint store
/// and this round's refresh. Covers the store's assigned groups and every group
/// with checkpoints ([`CheckpointStore::sync_groups`]).
pub fn plan_group_sync(store: &CheckpointStore, refresh: &TargetRefresh) -> GroupSyncPlan {
    let decisions = store
        .sync_groups()
        .map(|(group, checkpoints)| (group.to_owned(), decide_group(checkpoints, group, refresh)))
        .collect();
    GroupSyncPlan { decisions }
}

/// [`plan_group_sync`] for `groups` only (the groups whose checkpoints the
/// commit follower just emitted), with the same rules.
pub fn plan_group_sync_for<'a>(
    store: &CheckpointStore,
    groups: impl IntoIterator<Item = &'a str>,
    refresh: &TargetRefresh,
) -> GroupSyncPlan {
    let decisions = groups
        .into_iter()
        .map(|group| {
            let decision = decide_group(store.group(group), group, refresh);
            (group.to_owned(), decision)
        })
        .collect();
    GroupSyncPlan { decisions }
}

/// The decision for one group from its checkpoints and the refresh.
///
/// Runs for every group of every sync, most of them idle groups already at
/// their checkpoints: a group that commits nothing allocates nothing. Its
/// checkpoints and an `Empty` group's offsets are both sorted by topic then
/// partition, so they are compared in one walk side by side, and only the
/// offsets to write are copied out (docs/benchmarks.md, "Group sync CPU").
fn decide_group(
    checkpoints: Option<GroupCheckpoints<'_>>,
    group: &str,
    refresh: &TargetRefresh,
) -> GroupSyncDecision {
    let Some(checkpoints) = checkpoints else {
        return GroupSyncDecision::NothingToDo;
    };
    // Offsets we could write: every checkpoint with a valid downstream offset.
    let mut writable = checkpoints
        .iter()
        .filter(|(_, _, cp)| cp.downstream_offset >= 0)
        .peekable();
    if writable.peek().is_none() {
        return GroupSyncDecision::NothingToDo;
    }
    let target = match refresh {
        TargetRefresh::Failed => None,
        TargetRefresh::Done(groups) => groups.get(group),
    };
    let to_commit = |topic: &str, partition: i32, cp: &StoredCheckpoint| {
        let offset = CommittedOffset {
            offset: cp.downstream_offset,
            metadata: cp.metadata.to_string(),
        };
        (TopicPartition::new(topic, partition), offset)
    };
    match target {
        None | Some(TargetGroup::Unknown) => GroupSyncDecision::SkippedUnknownState,
        Some(TargetGroup::Active(state)) => GroupSyncDecision::SkippedActive(*state),
        Some(TargetGroup::Absent) => GroupSyncDecision::Commit {
            offsets: writable
                .map(|(topic, partition, cp)| to_commit(topic, partition, cp))
                .collect(),
            target_ahead: 0,
        },
        Some(TargetGroup::Empty(committed)) => {
            let mut total = 0;
            let mut to_write = GroupCommit::new();
            let mut on_target = committed.iter().peekable();
            for (topic, partition, cp) in writable {
                total += 1;
                // The target's offset of this partition: skip the target's
                // partitions before it; `None` if it has none or it is -1.
                let current = loop {
                    let Some((tp, _)) = on_target.peek() else {
                        break None;
                    };
                    match (tp.topic.as_str(), tp.partition).cmp(&(topic, partition)) {
                        Ordering::Less => {
                            on_target.next();
                        }
                        Ordering::Equal => break on_target.next().and_then(|(_, o)| *o),
                        Ordering::Greater => break None,
                    }
                };
                // Never rewind: written only where the target is behind.
                if current.is_none_or(|c| c < cp.downstream_offset) {
                    let (tp, offset) = to_commit(topic, partition, cp);
                    to_write.insert(tp, offset);
                }
            }
            if to_write.is_empty() {
                return GroupSyncDecision::SkippedTargetAhead { partitions: total };
            }
            GroupSyncDecision::Commit {
                target_ahead: total - to_write.len(),
                offsets: to_write,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Checkpoint, CheckpointKey};

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    fn store(entries: &[(&str, &str, i32, i64)]) -> CheckpointStore {
        let mut groups: Vec<&str> = entries.iter().map(|e| e.0).collect();
        groups.push("idle");
        let mut store = CheckpointStore::new(groups);
        let cps: Vec<Checkpoint> = entries
            .iter()
            .map(|(g, t, p, down)| Checkpoint {
                key: CheckpointKey {
                    group: g.to_string(),
                    topic_partition: tp(t, *p),
                },
                upstream_offset: down + 100,
                downstream_offset: *down,
                metadata: format!("md{down}"),
            })
            .collect();
        store.on_produced(&cps);
        store
    }

    fn refresh(groups: &[(&str, TargetGroup)]) -> TargetRefresh {
        TargetRefresh::Done(
            groups
                .iter()
                .map(|(g, t)| (g.to_string(), t.clone()))
                .collect(),
        )
    }

    fn offsets(plan: &GroupSyncPlan, group: &str) -> Option<Vec<(String, i64)>> {
        plan.commits()
            .find(|(g, _)| *g == group)
            .map(|(_, c)| c.iter().map(|(tp, o)| (tp.to_string(), o.offset)).collect())
    }

    /// A commit decision's (partitions written, partitions left alone).
    fn committed(plan: &GroupSyncPlan, group: &str) -> Option<(usize, usize)> {
        match &plan.decisions[group] {
            GroupSyncDecision::Commit {
                offsets,
                target_ahead,
            } => Some((offsets.len(), *target_ahead)),
            _ => None,
        }
    }

    #[test]
    fn d5_group_absent_on_target_gets_all_checkpoints() {
        let s = store(&[("g", "S.t", 0, 10), ("g", "S.t", 1, 20)]);
        let plan = plan_group_sync(&s, &refresh(&[("g", TargetGroup::Absent)]));
        assert_eq!(
            offsets(&plan, "g").unwrap(),
            [("S.t-0".to_string(), 10), ("S.t-1".to_string(), 20)]
        );
        let (_, commit) = plan.commits().next().unwrap();
        assert_eq!(commit[&tp("S.t", 0)].metadata, "md10");
        assert_eq!(committed(&plan, "g"), Some((2, 0)));
    }

    #[test]
    fn d5_empty_group_is_never_rewound() {
        let s = store(&[
            ("g", "S.t", 0, 10),
            ("g", "S.t", 1, 20),
            ("g", "S.t", 2, 30),
            ("g", "S.t", 3, 40),
        ]);
        let target = TargetGroup::Empty(BTreeMap::from([
            (tp("S.t", 0), Some(15)), // ahead: skip
            (tp("S.t", 1), Some(20)), // equal: skip
            (tp("S.t", 2), Some(5)),  // behind: write
            (tp("S.t", 3), None),     // committed -1: write
        ]));
        let plan = plan_group_sync(&s, &refresh(&[("g", target)]));
        assert_eq!(
            offsets(&plan, "g").unwrap(),
            [("S.t-2".to_string(), 30), ("S.t-3".to_string(), 40)]
        );
        assert_eq!(committed(&plan, "g"), Some((2, 2)));
    }

    /// The checkpoints and the target's offsets are compared side by side
    /// in one walk: the target's extra partitions and topics, before, between
    /// and after the checkpointed ones, must not shift which offset is
    /// compared with which checkpoint.
    #[test]
    fn d5_empty_group_compares_each_partition_with_its_own_target_offset() {
        let s = store(&[
            ("g", "S.b", 0, 10),
            ("g", "S.b", 2, 20),
            ("g", "S.b", 10, 30),
            ("g", "S.d", 1, 40),
            ("g", "S.f", 0, 50),
        ]);
        let target = TargetGroup::Empty(BTreeMap::from([
            (tp("S.a", 0), Some(1_000)), // not checkpointed
            (tp("S.b", 0), Some(10)),    // equal: skip
            (tp("S.b", 1), Some(1_000)), // not checkpointed
            (tp("S.b", 2), Some(19)),    // behind: write
            (tp("S.b", 3), Some(1_000)), // not checkpointed
            (tp("S.c", 0), None),        // not checkpointed
            (tp("S.d", 1), Some(41)),    // ahead: skip
            (tp("S.e", 0), Some(0)),     // not checkpointed
            (tp("S.z", 0), Some(1_000)), // not checkpointed
        ]));
        // S.b-10 comes after S.b-3 (by partition number); S.f is missing.
        let plan = plan_group_sync(&s, &refresh(&[("g", target)]));
        assert_eq!(
            offsets(&plan, "g").unwrap(),
            [
                ("S.b-2".to_string(), 20),
                ("S.b-10".to_string(), 30),
                ("S.f-0".to_string(), 50)
            ]
        );
        assert_eq!(committed(&plan, "g"), Some((3, 2)));
    }

    #[test]
    fn d5_empty_group_missing_partition_is_written() {
        let s = store(&[("g", "S.t", 0, 10)]);
        let plan = plan_group_sync(&s, &refresh(&[("g", TargetGroup::Empty(BTreeMap::new()))]));
        assert_eq!(offsets(&plan, "g").unwrap(), [("S.t-0".to_string(), 10)]);
    }

    #[test]
    fn d5_empty_group_ahead_everywhere_gets_no_empty_commit() {
        let s = store(&[("g", "S.t", 0, 10)]);
        let target = TargetGroup::Empty(BTreeMap::from([(tp("S.t", 0), Some(11))]));
        let plan = plan_group_sync(&s, &refresh(&[("g", target)]));
        assert!(plan.commits().next().is_none());
        assert_eq!(
            plan.decisions["g"],
            GroupSyncDecision::SkippedTargetAhead { partitions: 1 }
        );
    }

    #[test]
    fn d5_group_without_checkpoints_gets_nothing() {
        let s = store(&[("g", "S.t", 0, 10)]);
        let plan = plan_group_sync(&s, &refresh(&[("idle", TargetGroup::Absent)]));
        assert!(offsets(&plan, "idle").is_none());
        assert_eq!(plan.decisions["idle"], GroupSyncDecision::NothingToDo);
    }

    #[test]
    fn d5_negative_downstream_checkpoint_is_never_written() {
        let s = store(&[("g", "S.t", 0, -1)]);
        let plan = plan_group_sync(&s, &refresh(&[("g", TargetGroup::Absent)]));
        assert!(plan.commits().next().is_none());
        assert_eq!(plan.decisions["g"], GroupSyncDecision::NothingToDo);
    }

    /// Quirk H.2: MM2 writes every checkpoint to any group that was not EMPTY,
    /// including active and rebalancing ones. We never touch them.
    #[test]
    fn h2_active_or_rebalancing_group_is_never_written() {
        let s = store(&[("g", "S.t", 0, 10)]);
        for state in [
            TargetGroupState::Stable,
            TargetGroupState::PreparingRebalance,
            TargetGroupState::CompletingRebalance,
            TargetGroupState::Assigning,
            TargetGroupState::Reconciling,
        ] {
            let target = TargetGroup::from_state(state, None);
            let plan = plan_group_sync(&s, &refresh(&[("g", target)]));
            assert!(
                plan.commits().next().is_none(),
                "{state:?}: MM2 would commit here"
            );
            assert_eq!(plan.decisions["g"], GroupSyncDecision::SkippedActive(state));
        }
    }

    /// Quirk H.2: MM2 fully writes a group whose describe failed.
    #[test]
    fn h2_group_in_unknown_state_is_never_written() {
        let s = store(&[
            ("g", "S.t", 0, 10),
            ("h", "S.t", 0, 10),
            ("e", "S.t", 0, 10),
        ]);
        let plan = plan_group_sync(
            &s,
            &refresh(&[
                ("g", TargetGroup::Unknown),
                // An empty group whose offsets could not be listed.
                ("e", TargetGroup::from_state(TargetGroupState::Empty, None)),
            ]),
        );
        assert!(plan.commits().next().is_none());
        for g in ["g", "h", "e"] {
            assert_eq!(
                plan.decisions[g],
                GroupSyncDecision::SkippedUnknownState,
                "{g}"
            );
        }
    }

    /// Quirk H.2: after a failed refresh MM2 treats every group as new and may rewind
    /// empty groups. We commit nothing that round.
    #[test]
    fn h2_failed_refresh_means_no_sync_that_round() {
        let s = store(&[("g", "S.t", 0, 10)]);
        let plan = plan_group_sync(&s, &TargetRefresh::Failed);
        assert!(plan.commits().next().is_none());
        assert_eq!(plan.decisions["g"], GroupSyncDecision::SkippedUnknownState);
    }

    #[test]
    fn a_checkpoint_decided_upon_is_not_synced_again() {
        let mut s = store(&[("g", "S.t", 0, 10), ("g", "S.t", 1, 20)]);
        let mut decided = DecidedCheckpoints::default();
        let behind = |a, b| {
            refresh(&[(
                "g",
                TargetGroup::Empty(BTreeMap::from([
                    (tp("S.t", 0), Some(a)),
                    (tp("S.t", 1), Some(b)),
                ])),
            )])
        };
        let mut plan = plan_group_sync(&s, &behind(0, 0));
        decided.keep_new(&mut plan, &s);
        assert_eq!(
            offsets(&plan, "g").unwrap(),
            [("S.t-0".to_string(), 10), ("S.t-1".to_string(), 20)]
        );
        // An operator rewinds the idle group on the target: the same
        // checkpoints are not written again.
        let mut plan = plan_group_sync(&s, &behind(3, 4));
        decided.keep_new(&mut plan, &s);
        assert!(plan.commits().next().is_none());
        assert_eq!(plan.decisions["g"], GroupSyncDecision::NothingToDo);
        // The group commits again on the source: its new checkpoint is.
        let mut cp = Checkpoint {
            key: CheckpointKey {
                group: "g".to_string(),
                topic_partition: tp("S.t", 1),
            },
            upstream_offset: 130,
            downstream_offset: 30,
            metadata: String::new(),
        };
        s.on_produced(std::slice::from_ref(&cp));
        let mut plan = plan_group_sync(&s, &behind(3, 4));
        decided.keep_new(&mut plan, &s);
        assert_eq!(offsets(&plan, "g").unwrap(), [("S.t-1".to_string(), 30)]);
        // A group whose state was unknown is decided again next time.
        cp.downstream_offset = 40;
        cp.upstream_offset = 140;
        s.on_produced(std::slice::from_ref(&cp));
        let mut plan = plan_group_sync(&s, &TargetRefresh::Failed);
        decided.keep_new(&mut plan, &s);
        let mut plan = plan_group_sync(&s, &behind(3, 4));
        decided.keep_new(&mut plan, &s);
        assert_eq!(offsets(&plan, "g").unwrap(), [("S.t-1".to_string(), 40)]);
    }

    /// One sync of the daemon's: the unsynced groups of `s` are read (as
    /// `target` says), planned and the commits all land, except those
    /// into `failing`. Returns the groups read and the plan.
    fn sync_unsynced(
        synced: &mut SyncedGroups,
        s: &CheckpointStore,
        target: &[(&str, TargetGroup)],
        failing: &[&str],
    ) -> (Vec<String>, GroupSyncPlan) {
        let read = synced.unsynced(s, None);
        let found = TargetRefresh::Done(
            target
                .iter()
                .filter(|(g, _)| read.iter().any(|r| r == g))
                .map(|(g, t)| (g.to_string(), t.clone()))
                .collect(),
        );
        let plan = plan_group_sync_for(s, read.iter().map(String::as_str), &found);
        let planned = synced.planned(&plan, s);
        for (group, _) in plan.commits() {
            if !failing.contains(&group) {
                synced.committed(&planned, group);
            }
        }
        (read, plan)
    }

    fn produce(s: &mut CheckpointStore, group: &str, partition: i32, down: i64) {
        s.on_produced(&[Checkpoint {
            key: CheckpointKey {
                group: group.to_string(),
                topic_partition: tp("S.t", partition),
            },
            upstream_offset: down + 100,
            downstream_offset: down,
            metadata: format!("md{down}"),
        }]);
    }

    #[test]
    fn only_groups_whose_checkpoints_moved_are_read_again() {
        let mut s = store(&[("g", "S.t", 0, 10), ("h", "S.t", 0, 20)]);
        let mut synced = SyncedGroups::default();
        let absent = [("g", TargetGroup::Absent), ("h", TargetGroup::Absent)];
        // First: every group with a checkpoint ("idle" has none).
        let (read, plan) = sync_unsynced(&mut synced, &s, &absent, &[]);
        assert_eq!(read, ["g", "h"]);
        assert_eq!(plan.commits().count(), 2);
        // Nothing moved: nothing read.
        let (read, _) = sync_unsynced(&mut synced, &s, &absent, &[]);
        assert!(read.is_empty());
        // The same checkpoint again is no move.
        produce(&mut s, "h", 0, 20);
        assert!(synced.unsynced(&s, None).is_empty());
        // h moved: h alone.
        produce(&mut s, "h", 0, 25);
        let (read, plan) = sync_unsynced(&mut synced, &s, &absent, &[]);
        assert_eq!(read, ["h"]);
        assert_eq!(offsets(&plan, "h").unwrap(), [("S.t-0".to_string(), 25)]);
        assert!(synced.unsynced(&s, None).is_empty());
        // Of a set of wanted groups, likewise; a group without checkpoints
        // is never read.
        produce(&mut s, "g", 1, 5);
        let wanted = BTreeSet::from(["g".to_string(), "h".to_string(), "idle".to_string()]);
        assert_eq!(synced.unsynced(&s, Some(&wanted)), ["g"]);
    }

    #[test]
    fn a_group_found_ahead_or_with_nothing_to_write_is_synced() {
        let s = store(&[("g", "S.t", 0, 10), ("n", "S.t", 0, -1)]);
        let mut synced = SyncedGroups::default();
        let ahead = TargetGroup::Empty(BTreeMap::from([(tp("S.t", 0), Some(11))]));
        let (read, plan) = sync_unsynced(
            &mut synced,
            &s,
            &[("g", ahead), ("n", TargetGroup::Absent)],
            &[],
        );
        assert_eq!(read, ["g", "n"]);
        assert_eq!(
            plan.decisions["g"],
            GroupSyncDecision::SkippedTargetAhead { partitions: 1 }
        );
        assert_eq!(plan.decisions["n"], GroupSyncDecision::NothingToDo);
        // An operator rewinds g on the target: not read, so not raised.
        assert!(synced.unsynced(&s, None).is_empty());
    }

    #[test]
    fn a_group_with_members_unknown_or_whose_commit_failed_is_read_again() {
        let s = store(&[
            ("a", "S.t", 0, 10),
            ("f", "S.t", 0, 10),
            ("u", "S.t", 0, 10),
        ]);
        let mut synced = SyncedGroups::default();
        let first = [
            ("a", TargetGroup::Active(TargetGroupState::Stable)),
            ("f", TargetGroup::Absent),
            ("u", TargetGroup::Unknown),
        ];
        let (read, plan) = sync_unsynced(&mut synced, &s, &first, &["f"]);
        assert_eq!(read, ["a", "f", "u"]);
        assert_eq!(plan.commits().count(), 1);
        // None settled: all read again, until each is.
        let then = [
            ("a", TargetGroup::Absent),
            ("f", TargetGroup::Absent),
            ("u", TargetGroup::Absent),
        ];
        let (read, plan) = sync_unsynced(&mut synced, &s, &then, &[]);
        assert_eq!(read, ["a", "f", "u"]);
        assert_eq!(plan.commits().count(), 3);
        assert!(synced.unsynced(&s, None).is_empty());
        // After a failed describe, likewise.
        let mut s = s;
        produce(&mut s, "a", 0, 11);
        let read = synced.unsynced(&s, None);
        let plan = plan_group_sync_for(&s, read.iter().map(String::as_str), &TargetRefresh::Failed);
        let _ = synced.planned(&plan, &s);
        assert_eq!(synced.unsynced(&s, None), ["a"]);
    }

    #[test]
    fn a_checkpoint_made_while_its_commit_was_in_flight_keeps_the_group_unsynced() {
        let mut s = store(&[("g", "S.t", 0, 10)]);
        let mut synced = SyncedGroups::default();
        let read = synced.unsynced(&s, None);
        let refresh = refresh(&[("g", TargetGroup::Absent)]);
        let plan = plan_group_sync_for(&s, read.iter().map(String::as_str), &refresh);
        let planned = synced.planned(&plan, &s);
        produce(&mut s, "g", 0, 12);
        synced.committed(&planned, "g");
        assert_eq!(synced.unsynced(&s, None), ["g"]);
    }

    #[test]
    fn after_a_restart_every_group_is_read_once() {
        let s = store(&[("g", "S.t", 0, 10), ("h", "S.t", 0, 20)]);
        let mut synced = SyncedGroups::default();
        let absent = [("g", TargetGroup::Absent), ("h", TargetGroup::Absent)];
        sync_unsynced(&mut synced, &s, &absent, &[]);
        assert!(synced.unsynced(&s, None).is_empty());
        // The memory is the running daemon's: a new one reads everything.
        let mut synced = SyncedGroups::default();
        let (read, _) = sync_unsynced(&mut synced, &s, &absent, &[]);
        assert_eq!(read, ["g", "h"]);
    }

    #[test]
    fn a_store_rebuilt_in_place_of_another_is_read_again_and_its_changes_seen() {
        let old = store(&[("g", "S.t", 0, 10), ("h", "S.t", 0, 20)]);
        let mut synced = SyncedGroups::default();
        let absent = [("g", TargetGroup::Absent), ("h", TargetGroup::Absent)];
        sync_unsynced(&mut synced, &old, &absent, &[]);
        // The groups changed: the store is rebuilt from the checkpoints.
        let mut s = CheckpointStore::new(["g", "h"]).with_versions_after(old.version());
        for cp in old.checkpoints() {
            s.on_produced(&[cp]);
        }
        let (read, _) = sync_unsynced(&mut synced, &s, &absent, &[]);
        assert_eq!(read, ["g", "h"]);
        produce(&mut s, "g", 0, 11);
        assert_eq!(synced.unsynced(&s, None), ["g"]);
    }

    #[test]
    fn a_failed_commit_is_decided_again() {
        let s = store(&[("g", "S.t", 0, 10)]);
        let mut decided = DecidedCheckpoints::default();
        let absent = refresh(&[("g", TargetGroup::Absent)]);
        let mut plan = plan_group_sync(&s, &absent);
        decided.keep_new(&mut plan, &s);
        assert_eq!(plan.commits().count(), 1);
        decided.forget("g");
        let mut plan = plan_group_sync(&s, &absent);
        decided.keep_new(&mut plan, &s);
        assert_eq!(offsets(&plan, "g").unwrap(), [("S.t-0".to_string(), 10)]);
    }

    #[test]
    fn a_dead_target_group_is_absent() {
        assert_eq!(
            TargetGroup::from_state(TargetGroupState::Dead, None),
            TargetGroup::Absent
        );
    }
}
