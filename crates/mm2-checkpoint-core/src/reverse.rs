//! Reverse translation, the first step of failing back (docs/translation.md,
//! "Reverse translation").
//!
//! After a failover from S to T the consumers commit on T's remote topics
//! (`S.orders`, or `orders` under the identity policy). To return them to S,
//! each committed offset D of a remote partition must become an offset of the
//! source partition on S from which the consumer misses nothing. The flow
//! S->T's own offset syncs say, for some records, where the record at source
//! offset u was written on T (offset d); nothing else is known of the mapping.
//!
//! The rule: among the syncs of the partition's current generation whose
//! downstream offset is at or below D, take the one furthest upstream, (u, d).
//! The consumer has read the copy of u at d when D > d, so it resumes at u + 1;
//! when D = d it had not yet read it and resumes at u. No such sync: nothing is
//! known of what the consumer read, and no position is given. The offset is
//! never extrapolated as u + (D - d): T's remote partition can hold offsets
//! that mirror no source record (an exactly-once MirrorMaker 2's transaction
//! markers), so counting across them would land past the true position and
//! skip records on S.
//!
//! Within a generation the syncs go up in both offsets. When they do not (a
//! remote topic deleted and created again on T restarts the downstream offsets
//! but not the source's), the syncs before the last downstream step back are
//! not used, as forward translation uses no sync from before an upstream
//! rewind: they describe a partition that no longer exists.

use std::collections::BTreeMap;

use crate::checkpoint_store::CheckpointStore;
use crate::filter::TopicFilter;
use crate::format::Checkpoint;
use crate::group_sync::{GroupSyncPlan, TargetRefresh, plan_group_sync_for};
use crate::policy::{Flow, ReplicationPolicy};
use crate::round::{CheckpointRound, GroupOffsets, RoundPlan, SkipReason, SkippedPartition};
use crate::sync_store::{OffsetSync, OffsetSyncStore};
use crate::types::{OffsetTranslator, TopicPartition, Translation};

/// Where a consumer that committed a remote partition's offset on the target
/// resumes on the source partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReverseTranslation {
    /// The offset-syncs topic has not been read to its end yet.
    NotReady,
    /// No offset sync is known for the source partition.
    NoSync,
    /// Every known sync of the partition's current generation is past the
    /// committed offset: nothing is known of what the consumer read.
    TooOld,
    /// The consumer resumes at this position.
    Translated(ReversePosition),
}

/// A reverse-translated position (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReversePosition {
    /// The offset of the source partition to resume from.
    pub upstream: i64,
    /// The sync it was translated through.
    pub through: OffsetSync,
    /// Whether the position is the true one: the committed offset is the
    /// sync's downstream offset. Otherwise the consumer may read again some of
    /// the records from the position on.
    pub exact: bool,
}

impl ReversePosition {
    /// How many offsets of the source partition the consumer may read a second
    /// time when it resumes here, given the partition's end offset `end`: none
    /// when exact, else everything up to the end. The syncs alone bound it no
    /// tighter: a mirror that restarted copies records again from an earlier
    /// position, so the records between two syncs can reach past the later
    /// sync's upstream offset.
    pub fn reread_bound(&self, end: i64) -> i64 {
        if self.exact {
            0
        } else {
            end.saturating_sub(self.upstream).max(0)
        }
    }

    /// Whether the position lies within a source partition ending at `end`. A
    /// position past the end means the partition is not the one the syncs
    /// describe (deleted and created again since): nothing may be committed.
    pub fn fits(&self, end: i64) -> bool {
        self.upstream <= end
    }
}

/// Translates offset `downstream`, committed on the remote partition of source
/// partition `topic`-`partition`, back to the source partition through the
/// syncs `store` holds for it (the slots, and with precise translation every
/// sync of its history).
pub fn translate_back(
    store: &OffsetSyncStore,
    topic: &str,
    partition: i32,
    downstream: i64,
) -> ReverseTranslation {
    if !store.is_ready() {
        return ReverseTranslation::NotReady;
    }
    let Some(mut syncs) = store.known_syncs(topic, partition) else {
        return ReverseTranslation::NoSync;
    };
    translate_through(&mut syncs, downstream)
}

/// [`translate_back`] over the syncs of one generation, in any order and with
/// repeats.
pub fn translate_through(syncs: &mut [OffsetSync], downstream: i64) -> ReverseTranslation {
    if syncs.is_empty() {
        return ReverseTranslation::NoSync;
    }
    syncs.sort_unstable_by_key(|s| (s.upstream, s.downstream));
    // Only the syncs since the last downstream step back (see the module
    // documentation).
    let from = (1..syncs.len())
        .rev()
        .find(|&i| syncs[i].downstream < syncs[i - 1].downstream)
        .unwrap_or(0);
    let syncs = &syncs[from..];
    // The sync furthest upstream whose downstream offset is at or below the
    // committed one; among equal upstream offsets the one nearest to it.
    let Some(at) = syncs.iter().rposition(|s| s.downstream <= downstream) else {
        return ReverseTranslation::TooOld;
    };
    let through = syncs[at];
    let exact = through.downstream == downstream;
    ReverseTranslation::Translated(ReversePosition {
        upstream: if exact {
            through.upstream
        } else {
            through.upstream.saturating_add(1)
        },
        through,
        exact,
    })
}

/// The fixed context of a flow's reverse rounds: checkpoints, for groups
/// committed on the target T, of the positions on the source S they resume at
/// (docs/translation.md, "Reverse checkpoints").
///
/// They are the checkpoints MirrorMaker 2's flow T->S would write if it had
/// offset syncs for T's remote topics: in T->S's checkpoints topic on S
/// (`T.checkpoints.internal` under the default policy), keyed by the group,
/// the topic's name on S and the partition, with the offset committed on T
/// as the upstream offset and the translated one on S as the downstream
/// offset. `RemoteClusterUtils.translateOffsets` on S with remote alias T
/// reads them.
#[derive(Clone, Debug)]
pub struct ReverseRound<'a> {
    /// The flow S->T whose offset syncs are read backwards.
    pub flow: &'a Flow,
    /// The flow's replication policy.
    pub policy: &'a ReplicationPolicy,
    /// The flow's topic filter, applied to the topics' names on S.
    pub topic_filter: &'a TopicFilter,
}

impl ReverseRound<'_> {
    /// The flow the reverse checkpoints belong to: T->S.
    pub fn back_flow(&self) -> Flow {
        Flow::new(self.flow.target.clone(), self.flow.source.clone())
    }

    /// The checkpoints topic on S the reverse checkpoints are written to: the
    /// one MirrorMaker 2's flow T->S uses.
    pub fn checkpoints_topic(&self) -> String {
        self.policy.checkpoints_topic(&self.flow.target)
    }

    /// The name on S of topic `topic` on T: the policy's checkpoint rename of
    /// the flow T->S (`S.orders` → `orders`; `orders` → `orders` under the
    /// identity policy). A topic of T's own gets a name (`T.orders`) for which
    /// the flow has no syncs.
    pub fn source_topic(&self, topic: &str) -> String {
        self.policy.checkpoint_topic(&self.back_flow(), topic)
    }

    /// Decides one reverse round for `groups` (each group's committed offsets
    /// on T, by T's topic names), through the flow's offset syncs `syncs`;
    /// `store` holds the reverse checkpoints already written (monotonic as
    /// forward). The same steps as a forward round (docs/translation.md,
    /// "Checkpoint decisions"), with the topic filter applied to the name on S
    /// and the offset translated by [`translate_back`].
    pub fn plan(
        &self,
        syncs: &OffsetSyncStore,
        store: &CheckpointStore,
        groups: &BTreeMap<String, GroupOffsets>,
    ) -> RoundPlan {
        let mut filtered = Vec::new();
        let kept: BTreeMap<String, GroupOffsets> = groups
            .iter()
            .map(|(group, offsets)| {
                let offsets = offsets
                    .iter()
                    .filter(|(tp, _)| {
                        let keep = self
                            .topic_filter
                            .should_replicate_topic(&self.source_topic(&tp.topic));
                        if !keep {
                            filtered.push(SkippedPartition {
                                group: group.clone(),
                                upstream: (*tp).clone(),
                                reason: SkipReason::Filtered,
                            });
                        }
                        keep
                    })
                    .map(|(tp, c)| (tp.clone(), c.clone()))
                    .collect();
                (group.clone(), offsets)
            })
            .collect();
        let back = self.back_flow();
        let all = TopicFilter::accepting_all();
        let round = CheckpointRound {
            flow: &back,
            policy: self.policy,
            topic_filter: &all,
        };
        let mut plan = round.plan(&Backward { round: self, syncs }, store, &kept);
        plan.skipped.append(&mut filtered);
        plan.skipped
            .sort_by(|a, b| (&a.group, &a.upstream).cmp(&(&b.group, &b.upstream)));
        plan
    }
}

/// Takes out of `plan` the reverse checkpoints whose position on S lies past
/// the end of their S partition, or whose partition S does not have (`ends`
/// holds the end offset of every S partition that exists), and returns them.
/// Such a partition is not the one the flow's offset syncs describe: its
/// topic was deleted and created again on S since (docs/translation.md,
/// "Reverse checkpoints"). Nothing may be written for it: a consumer given
/// that position would skip the records the new topic gets up to it.
pub fn keep_within_ends(
    plan: &mut RoundPlan,
    ends: &BTreeMap<TopicPartition, i64>,
) -> Vec<Checkpoint> {
    let (kept, past): (Vec<Checkpoint>, Vec<Checkpoint>) = std::mem::take(&mut plan.checkpoints)
        .into_iter()
        .partition(|cp| {
            ends.get(&cp.key.topic_partition)
                .is_some_and(|&end| cp.downstream_offset <= end)
        });
    plan.checkpoints = kept;
    past
}

/// The group sync into S of one reverse round (docs/translation.md, "Group
/// sync into the source"): the checkpoints the round has just written
/// (`fresh`, each acknowledged by S) and nothing else, into groups that have
/// no members, never lowering a committed offset (the forward rules of
/// [`plan_group_sync_for`]).
///
/// Only fresh checkpoints are written, so a group's offset on S is raised
/// once per commit on T that moved it, never again afterwards: the side with
/// the newer commit wins. An operator who rewinds an idle group on S (to
/// process again) keeps that position until the group commits again on T;
/// a sync that repeated the last reverse checkpoint every round would undo
/// the rewind.
pub fn plan_reverse_sync(fresh: &[Checkpoint], refresh: &TargetRefresh) -> GroupSyncPlan {
    let groups: std::collections::BTreeSet<&str> =
        fresh.iter().map(|cp| cp.key.group.as_str()).collect();
    let mut store = CheckpointStore::new(groups.iter().copied());
    store.on_produced(fresh);
    plan_group_sync_for(&store, groups, refresh)
}

/// Forward translation's interface over [`translate_back`]: a partition of T
/// and an offset committed there in, the offset on S out.
struct Backward<'a> {
    round: &'a ReverseRound<'a>,
    syncs: &'a OffsetSyncStore,
}

impl OffsetTranslator for Backward<'_> {
    fn translate(&self, tp: &TopicPartition, upstream: i64) -> Translation {
        let topic = self.round.source_topic(&tp.topic);
        match translate_back(self.syncs, &topic, tp.partition, upstream) {
            ReverseTranslation::NotReady => Translation::NotReady,
            ReverseTranslation::NoSync => Translation::NoSync,
            ReverseTranslation::TooOld => Translation::TooOld,
            ReverseTranslation::Translated(p) => Translation::Translated(p.upstream),
        }
    }
}

#[cfg(test)]
mod tests;
