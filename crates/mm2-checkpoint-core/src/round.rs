//! Emission round decisions (docs/behaviour.md D.2, D.3): which checkpoints to produce.
//!
//! Input: the committed offsets of each source group (as the driver listed them),
//! an [`OffsetTranslator`], the topic filter, the replication policy and the flow,
//! and the [`CheckpointStore`] holding the last produced checkpoints. Output: a
//! [`RoundPlan`] with the checkpoints to produce and, for every partition that got
//! no checkpoint, the reason (for metrics and logs).
//!
//! Per group and upstream partition, in order:
//! 1. the topic filter is applied to the **upstream** topic name ([`SkipReason::Filtered`]);
//! 2. the partition is renamed to its downstream name (B.4, H.4 fixed). If two
//!    upstream partitions of the group rename to the same downstream partition, all
//!    of them are skipped with [`SkipReason::Conflict`];
//! 3. a partition committed at -1 is skipped ([`SkipReason::NullOffset`]);
//! 4. the offset is translated; [`Translation::NotReady`], [`Translation::NoSync`] and
//!    [`Translation::TooOld`] are skipped with the matching reason;
//! 5. the checkpoint is kept iff [`checkpoint_is_more_recent`] (D.3), otherwise
//!    [`SkipReason::NotMoreRecent`].
//!
//! Differences from MM2, on purpose:
//! * **Conflicts (D.2.5)**: MM2 collects a group's checkpoints into a map keyed by
//!   downstream partition, which throws on a duplicate; the exception drops the
//!   *whole round* for every group. Here only the ambiguous partitions are skipped,
//!   and they are skipped every time (not "first wins"), so the checkpointed value
//!   cannot flip between two sources from one round to the next. Conflicts are found
//!   among all partitions that pass the topic filter, whatever their offsets, for the
//!   same reason.
//! * **Deterministic order**: groups, checkpoints and skips come out sorted (MM2
//!   uses hash order).
//! * **Nothing is recorded here** (H.3): planning does not change the store; the
//!   driver reports produced checkpoints with [`CheckpointStore::on_produced`].

use std::collections::{BTreeMap, HashMap};

use super::checkpoint_store::{CheckpointStore, StoredCheckpoint};
use super::filter::TopicFilter;
use super::format::{Checkpoint, CheckpointKey};
use super::policy::{Flow, ReplicationPolicy};
use super::types::{OffsetTranslator, TopicPartition, Translation};
// The round's input types live in types.rs (window.rs takes them too); named here
// as well, where the benches and examples import them.
pub use super::types::{CommittedOffset, GroupOffsets};
use super::window::OffsetsWindow;

/// Why a partition got no checkpoint this round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// The topic filter rejects the upstream topic.
    Filtered,
    /// Another upstream partition of the same group renames to the same downstream
    /// partition.
    Conflict {
        /// The downstream partition both rename to.
        downstream: TopicPartition,
    },
    /// The group's commit for this partition is -1.
    NullOffset,
    /// The offset-sync store has not been read to its end yet.
    NotReady,
    /// No offset sync was ever seen for this partition.
    NoSync,
    /// The offset is older than the earliest usable sync (or translated negative).
    TooOld,
    /// Suppressed by the monotonicity rule (D.3): not more recent than the last
    /// produced checkpoint.
    NotMoreRecent,
}

/// A partition that got no checkpoint, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedPartition {
    /// The group.
    pub group: String,
    /// The upstream (source) partition.
    pub upstream: TopicPartition,
    /// Why.
    pub reason: SkipReason,
}

/// Number of skipped partitions per reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SkipCounts {
    /// [`SkipReason::Filtered`].
    pub filtered: u64,
    /// [`SkipReason::Conflict`].
    pub conflict: u64,
    /// [`SkipReason::NullOffset`].
    pub null_offset: u64,
    /// [`SkipReason::NotReady`].
    pub not_ready: u64,
    /// [`SkipReason::NoSync`].
    pub no_sync: u64,
    /// [`SkipReason::TooOld`].
    pub too_old: u64,
    /// [`SkipReason::NotMoreRecent`].
    pub not_more_recent: u64,
}

/// What an emission round should produce.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundPlan {
    /// Checkpoints to produce to the checkpoints topic, sorted by group then
    /// downstream partition.
    pub checkpoints: Vec<Checkpoint>,
    /// Partitions with no checkpoint, sorted by group then upstream partition.
    pub skipped: Vec<SkippedPartition>,
}

impl RoundPlan {
    /// Counts the skipped partitions per reason.
    pub fn skip_counts(&self) -> SkipCounts {
        let mut c = SkipCounts::default();
        for s in &self.skipped {
            c.add(&s.reason);
        }
        c
    }
}

impl SkipCounts {
    /// Adds `other`'s counts to these (a round planned in windows of groups
    /// sums its windows' counts).
    pub fn merge(&mut self, other: &SkipCounts) {
        self.filtered += other.filtered;
        self.conflict += other.conflict;
        self.null_offset += other.null_offset;
        self.not_ready += other.not_ready;
        self.no_sync += other.no_sync;
        self.too_old += other.too_old;
        self.not_more_recent += other.not_more_recent;
    }

    /// Counts one partition skipped for `reason`.
    fn add(&mut self, reason: &SkipReason) {
        let n = match reason {
            SkipReason::Filtered => &mut self.filtered,
            SkipReason::Conflict { .. } => &mut self.conflict,
            SkipReason::NullOffset => &mut self.null_offset,
            SkipReason::NotReady => &mut self.not_ready,
            SkipReason::NoSync => &mut self.no_sync,
            SkipReason::TooOld => &mut self.too_old,
            SkipReason::NotMoreRecent => &mut self.not_more_recent,
        };
        *n += 1;
    }
}

/// D.3 `checkpointIsMoreRecent`: emit iff there is no last checkpoint, or the
/// upstream group rewound (`cp.up < last.up`; the checkpoint may then go backwards
/// downstream), or the downstream offset advanced (`cp.down > last.down`).
pub fn checkpoint_is_more_recent(last: Option<&StoredCheckpoint>, cp: &Checkpoint) -> bool {
    is_more_recent(last, cp.upstream_offset, cp.downstream_offset)
}

/// What one group-partition with a downstream partition of its own gets
/// (docs/behaviour.md D.2, D.3): its commit and the offset to
/// checkpoint it at, or why it gets no checkpoint. `last` (the stored
/// checkpoint of that downstream partition) is asked only once the commit
/// translates. Both plans ([`CheckpointRound::plan`] and the window plan)
/// decide through it.
fn decide<'c, 's, T: OffsetTranslator + ?Sized>(
    translator: &T,
    upstream: &TopicPartition,
    committed: Option<&'c CommittedOffset>,
    last: impl FnOnce() -> Option<&'s StoredCheckpoint>,
) -> Result<(&'c CommittedOffset, i64), SkipReason> {
    let committed = committed.ok_or(SkipReason::NullOffset)?;
    let downstream = match translator.translate(upstream, committed.offset) {
        Translation::Translated(d) if d >= 0 => d,
        Translation::Translated(_) | Translation::TooOld => return Err(SkipReason::TooOld),
        Translation::NotReady => return Err(SkipReason::NotReady),
        Translation::NoSync => return Err(SkipReason::NoSync),
    };
    if is_more_recent(last(), committed.offset, downstream) {
        Ok((committed, downstream))
    } else {
        Err(SkipReason::NotMoreRecent)
    }
}

/// [`checkpoint_is_more_recent`] for a checkpoint of `upstream` and `downstream`
/// offsets, without building it.
fn is_more_recent(last: Option<&StoredCheckpoint>, upstream: i64, downstream: i64) -> bool {
    match last {
        None => true,
        Some(last) => upstream < last.upstream_offset || downstream > last.downstream_offset,
    }
}

/// The fixed context of a task's emission rounds.
#[derive(Clone, Debug)]
pub struct CheckpointRound<'a> {
    /// The flow `S->T`.
    pub flow: &'a Flow,
    /// The flow's replication policy.
    pub policy: &'a ReplicationPolicy,
    /// The flow's topic filter.
    pub topic_filter: &'a TopicFilter,
}

impl CheckpointRound<'_> {
    /// Decides one round for `groups` (each group's committed offsets on the source).
    /// Groups whose listing failed are simply left out by the driver.
    pub fn plan<T: OffsetTranslator + ?Sized>(
        &self,
        translator: &T,
        store: &CheckpointStore,
        groups: &BTreeMap<String, GroupOffsets>,
    ) -> RoundPlan {
        let topics = self.plan_topics(groups);
        let mut plan = RoundPlan::default();
        let mut skipped: Vec<SkippedPartition> = Vec::new();
        for (group, offsets) in groups {
            let mut skip = |upstream: &TopicPartition, reason| {
                skipped.push(SkippedPartition {
                    group: group.clone(),
                    upstream: upstream.clone(),
                    reason,
                });
            };
            self.plan_group(
                translator,
                store,
                &topics,
                group,
                offsets,
                &mut plan.checkpoints,
                &mut skip,
            );
            skipped.sort_by(|a, b| a.upstream.cmp(&b.upstream));
            plan.skipped.append(&mut skipped);
        }
        plan
    }

    /// The same decisions as [`plan`](Self::plan), with the skipped partitions
    /// counted by reason instead of listed; only conflicts are listed (the
    /// driver logs them). A round where nothing moved skips every partition, so
    /// this keeps the round's memory and time proportional to what it emits,
    /// not to every group-partition.
    pub fn plan_counted<T: OffsetTranslator + ?Sized>(
        &self,
        translator: &T,
        store: &CheckpointStore,
        groups: &BTreeMap<String, GroupOffsets>,
    ) -> CountedPlan {
        self.plan_window(translator, store, &OffsetsWindow::from_map_ref(groups))
    }

    /// [`plan_counted`](Self::plan_counted) of a window of groups in the
    /// form the driver builds from OffsetFetch's answers or the commit
    /// follower's view ([`OffsetsWindow`]): each upstream topic's filter
    /// decision, downstream name and rank are computed once per window, and
    /// a group-partition costs no lookup by name and no allocation unless it
    /// gets a checkpoint. The decisions are those of [`plan`](Self::plan)
    /// (property tests below compare the two).
    pub fn plan_window<T: OffsetTranslator + ?Sized>(
        &self,
        translator: &T,
        store: &CheckpointStore,
        window: &OffsetsWindow,
    ) -> CountedPlan {
        // Per upstream topic of the window: `None` if filtered out, else its
        // downstream name and that name's rank in sorted order.
        let mut topics: Vec<Option<(String, u32)>> = window
            .topic_names()
            .map(|t| {
                self.topic_filter
                    .should_replicate_topic(t)
                    .then(|| (self.policy.checkpoint_topic(self.flow, t), 0))
            })
            .collect();
        let mut names: Vec<String> = topics.iter().flatten().map(|(n, _)| n.clone()).collect();
        names.sort_unstable();
        names.dedup();
        for (name, rank) in topics.iter_mut().flatten() {
            *rank = names
                .binary_search(name)
                .map_or(u32::MAX, |i| u32::try_from(i).unwrap_or(u32::MAX));
        }
        // The store's id of each downstream name, once per window (`None`:
        // no checkpoint of that topic is stored).
        let stored: Vec<Option<u32>> = topics
            .iter()
            .map(|d| d.as_ref().and_then(|(name, _)| store.topic_id(name)))
            .collect();
        let mut plan = CountedPlan::default();
        // (downstream rank, partition, downstream name, upstream, commit,
        // the store's topic id), to be sorted by downstream partition; one
        // vector for every group.
        #[allow(clippy::type_complexity)]
        let mut candidates: Vec<(
            u32,
            i32,
            &str,
            &TopicPartition,
            &Option<CommittedOffset>,
            Option<u32>,
        )> = Vec::new();
        let mut conflicts: Vec<SkippedPartition> = Vec::new();
        for (group, parts) in window.ordered() {
            candidates.clear();
            for part in parts {
                let upstream = window.partition(part.tp);
                let topic = window.topic_of(part.tp);
                match &topics[topic] {
                    Some((name, rank)) => candidates.push((
                        *rank,
                        upstream.partition,
                        name.as_str(),
                        upstream,
                        &part.committed,
                        stored[topic],
                    )),
                    None => plan.counts.add(&SkipReason::Filtered),
                }
            }
            // Stable and adaptive, as in `plan_group`.
            candidates.sort_by_key(|c| (c.0, c.1));
            let last_of_group = store.group(group);
            // Runs of candidates for one downstream partition: more than one
            // is a conflict.
            for run in candidates.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
                let first = &run[0];
                let &[(_, partition, name, upstream, committed, stored_id)] = run else {
                    let downstream = TopicPartition::new(first.2, first.1);
                    for (_, _, _, upstream, _, _) in run {
                        let reason = SkipReason::Conflict {
                            downstream: downstream.clone(),
                        };
                        plan.counts.add(&reason);
                        conflicts.push(SkippedPartition {
                            group: group.to_owned(),
                            upstream: (*upstream).clone(),
                            reason,
                        });
                    }
                    continue;
                };
                let last = || match (last_of_group, stored_id) {
                    (Some(cps), Some(id)) => cps.get_with_id(name, id, partition),
                    _ => None,
                };
                match decide(translator, upstream, committed.as_ref(), last) {
                    Ok((committed, downstream_offset)) => plan.checkpoints.push(Checkpoint {
                        key: CheckpointKey {
                            group: group.to_owned(),
                            topic_partition: TopicPartition::new(name, partition),
                        },
                        upstream_offset: committed.offset,
                        downstream_offset,
                        metadata: committed.metadata.clone(),
                    }),
                    Err(reason) => plan.counts.add(&reason),
                }
            }
            conflicts.sort_by(|a, b| a.upstream.cmp(&b.upstream));
            plan.conflicts.append(&mut conflicts);
        }
        plan
    }

    /// The filter decision and downstream name of every upstream topic in the round.
    ///
    /// Both depend on the topic name only, so they are computed once per topic
    /// rather than once per group-partition. Each downstream name also gets its rank
    /// in sorted order, so groups can be sorted by downstream partition with integer
    /// comparisons.
    fn plan_topics<'g>(&self, groups: &'g BTreeMap<String, GroupOffsets>) -> TopicPlans<'g> {
        let mut topics: HashMap<&'g str, Option<(String, u32)>> = HashMap::new();
        for tp in groups.values().flat_map(BTreeMap::keys) {
            if !topics.contains_key(tp.topic.as_str()) {
                let downstream = self
                    .topic_filter
                    .should_replicate_topic(&tp.topic)
                    .then(|| (self.policy.checkpoint_topic(self.flow, &tp.topic), 0));
                topics.insert(&tp.topic, downstream);
            }
        }
        let mut names: Vec<&str> = topics
            .values()
            .filter_map(|d| d.as_ref().map(|(name, _)| name.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        let ranks: HashMap<String, u32> = names
            .iter()
            .zip(0u32..)
            .map(|(name, rank)| ((*name).to_owned(), rank))
            .collect();
        for (name, rank) in topics.values_mut().flatten() {
            *rank = ranks.get(name.as_str()).copied().unwrap_or(u32::MAX);
        }
        topics
    }

    /// Plans one group: its checkpoints go to `checkpoints` (by downstream
    /// partition), every partition without one to `skip`.
    #[allow(clippy::too_many_arguments)]
    fn plan_group<T: OffsetTranslator + ?Sized>(
        &self,
        translator: &T,
        store: &CheckpointStore,
        topics: &TopicPlans<'_>,
        group: &str,
        offsets: &GroupOffsets,
        checkpoints: &mut Vec<Checkpoint>,
        skip: &mut impl FnMut(&TopicPartition, SkipReason),
    ) {
        // (downstream rank, partition, downstream name, upstream, commit), to be
        // sorted by downstream partition.
        let mut candidates = Vec::with_capacity(offsets.len());
        for (upstream, committed) in offsets {
            match topics.get(upstream.topic.as_str()).and_then(Option::as_ref) {
                Some((name, rank)) => {
                    candidates.push((*rank, upstream.partition, name, upstream, committed))
                }
                None => skip(upstream, SkipReason::Filtered),
            }
        }
        // Stable and adaptive: usually already sorted, since renaming tends to keep
        // the order.
        candidates.sort_by_key(|c| (c.0, c.1));
        let last_of_group = store.group(group);
        // Runs of candidates for one downstream partition: more than one
        // is a conflict.
        for run in candidates.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            let first = &run[0];
            let &[(_, partition, name, upstream, committed)] = run else {
                let downstream = TopicPartition::new(first.2.as_str(), first.1);
                for (_, _, _, upstream, _) in run {
                    let reason = SkipReason::Conflict {
                        downstream: downstream.clone(),
                    };
                    skip(upstream, reason);
                }
                continue;
            };
            // The last checkpoint is looked up only for a partition that
            // translates: a suppressed one (every partition of a round where
            // nothing moved) allocates nothing.
            let last = || last_of_group.and_then(|cps| cps.get(name, partition));
            match decide(translator, upstream, committed.as_ref(), last) {
                Ok((committed, downstream_offset)) => checkpoints.push(Checkpoint {
                    key: CheckpointKey {
                        group: group.to_owned(),
                        topic_partition: TopicPartition::new(name.as_str(), partition),
                    },
                    upstream_offset: committed.offset,
                    downstream_offset,
                    metadata: committed.metadata.clone(),
                }),
                Err(reason) => skip(upstream, reason),
            }
        }
    }
}

/// What [`CheckpointRound::plan_counted`] decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CountedPlan {
    /// Checkpoints to produce, as [`RoundPlan::checkpoints`].
    pub checkpoints: Vec<Checkpoint>,
    /// Skipped partitions per reason, as [`RoundPlan::skip_counts`].
    pub counts: SkipCounts,
    /// The partitions skipped as [`SkipReason::Conflict`], sorted by group then
    /// upstream partition.
    pub conflicts: Vec<SkippedPartition>,
}

impl CountedPlan {
    /// Number of skipped partitions, whatever the reason.
    pub fn skipped(&self) -> u64 {
        let c = &self.counts;
        c.filtered
            + c.conflict
            + c.null_offset
            + c.not_ready
            + c.no_sync
            + c.too_old
            + c.not_more_recent
    }
}

/// Per upstream topic: `None` if filtered out, else its downstream name and the
/// name's rank in sorted order.
type TopicPlans<'g> = HashMap<&'g str, Option<(String, u32)>>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A translator with fixed answers per (topic-partition, upstream offset), and a
    /// default answer for everything else.
    struct Table {
        answers: HashMap<(TopicPartition, i64), Translation>,
        default: Translation,
    }

    impl OffsetTranslator for Table {
        fn translate(&self, tp: &TopicPartition, upstream: i64) -> Translation {
            *self
                .answers
                .get(&(tp.clone(), upstream))
                .unwrap_or(&self.default)
        }
    }

    /// Translates every offset `u` to `u - by`.
    struct ShiftBy(i64);

    impl OffsetTranslator for ShiftBy {
        fn translate(&self, _: &TopicPartition, upstream: i64) -> Translation {
            Translation::Translated(upstream - self.0)
        }
    }

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    fn committed(offset: i64) -> Option<CommittedOffset> {
        Some(CommittedOffset {
            offset,
            metadata: format!("md{offset}"),
        })
    }

    /// (topic, partition, commit) of one upstream partition.
    type Part = (&'static str, i32, Option<CommittedOffset>);

    fn groups(entries: &[(&str, &[Part])]) -> BTreeMap<String, GroupOffsets> {
        entries
            .iter()
            .map(|(g, parts)| {
                let offsets = parts
                    .iter()
                    .map(|(t, p, c)| (tp(t, *p), c.clone()))
                    .collect();
                (g.to_string(), offsets)
            })
            .collect()
    }

    struct Fixture {
        flow: Flow,
        policy: ReplicationPolicy,
        filter: TopicFilter,
    }

    impl Fixture {
        fn new() -> Self {
            Fixture {
                flow: Flow::new("S", "T"),
                policy: ReplicationPolicy::default(),
                filter: TopicFilter::default(),
            }
        }

        fn round(&self) -> CheckpointRound<'_> {
            CheckpointRound {
                flow: &self.flow,
                policy: &self.policy,
                topic_filter: &self.filter,
            }
        }
    }

    fn only_reason(plan: &RoundPlan) -> &SkipReason {
        assert_eq!(plan.skipped.len(), 1, "{plan:?}");
        &plan.skipped[0].reason
    }

    #[test]
    fn d2_translated_offset_becomes_checkpoint_with_downstream_name_and_metadata() {
        let f = Fixture::new();
        let store = CheckpointStore::new(["g"]);
        let plan = f.round().plan(
            &ShiftBy(10),
            &store,
            &groups(&[("g", &[("orders", 3, committed(100))])]),
        );
        assert_eq!(
            plan.checkpoints,
            vec![Checkpoint {
                key: CheckpointKey {
                    group: "g".into(),
                    topic_partition: tp("S.orders", 3)
                },
                upstream_offset: 100,
                downstream_offset: 90,
                metadata: "md100".into(),
            }]
        );
        assert!(plan.skipped.is_empty());
    }

    #[test]
    fn d2_filter_applies_to_upstream_topic_name() {
        let mut f = Fixture::new();
        f.filter = TopicFilter::new(Some("orders"), Some("")).unwrap();
        let store = CheckpointStore::new(["g"]);
        let g = groups(&[(
            "g",
            &[("orders", 0, committed(5)), ("S.orders", 0, committed(5))],
        )]);
        let plan = f.round().plan(&ShiftBy(0), &store, &g);
        assert_eq!(plan.checkpoints.len(), 1);
        assert_eq!(plan.checkpoints[0].key.topic_partition, tp("S.orders", 0));
        assert_eq!(plan.skipped[0].upstream, tp("S.orders", 0));
        assert_eq!(plan.skipped[0].reason, SkipReason::Filtered);
    }

    #[test]
    fn d2_partition_committed_at_minus_one_is_skipped() {
        let f = Fixture::new();
        let store = CheckpointStore::new(["g"]);
        let plan = f
            .round()
            .plan(&ShiftBy(0), &store, &groups(&[("g", &[("t", 0, None)])]));
        assert!(plan.checkpoints.is_empty());
        assert_eq!(only_reason(&plan), &SkipReason::NullOffset);
    }

    #[test]
    fn d2_untranslatable_offsets_are_skipped_with_their_reason() {
        let f = Fixture::new();
        let store = CheckpointStore::new(["g"]);
        for (answer, reason) in [
            (Translation::NotReady, SkipReason::NotReady),
            (Translation::NoSync, SkipReason::NoSync),
            (Translation::TooOld, SkipReason::TooOld),
            (Translation::Translated(-1), SkipReason::TooOld),
        ] {
            let t = Table {
                answers: HashMap::new(),
                default: answer,
            };
            let plan = f
                .round()
                .plan(&t, &store, &groups(&[("g", &[("t", 0, committed(5))])]));
            assert!(plan.checkpoints.is_empty());
            assert_eq!(only_reason(&plan), &reason);
        }
    }

    fn store_with(up: i64, down: i64) -> CheckpointStore {
        let mut store = CheckpointStore::new(["g"]);
        store.on_produced(&[Checkpoint {
            key: CheckpointKey {
                group: "g".into(),
                topic_partition: tp("S.t", 0),
            },
            upstream_offset: up,
            downstream_offset: down,
            metadata: String::new(),
        }]);
        store
    }

    fn plan_one(store: &CheckpointStore, up: i64, down: i64) -> RoundPlan {
        let t = Table {
            answers: HashMap::from([((tp("t", 0), up), Translation::Translated(down))]),
            default: Translation::NoSync,
        };
        Fixture::new()
            .round()
            .plan(&t, store, &groups(&[("g", &[("t", 0, committed(up))])]))
    }

    #[test]
    fn d3_first_checkpoint_is_emitted() {
        let plan = plan_one(&CheckpointStore::new(["g"]), 100, 50);
        assert_eq!(plan.checkpoints.len(), 1);
    }

    #[test]
    fn d3_downstream_advance_is_emitted() {
        assert_eq!(plan_one(&store_with(100, 50), 110, 51).checkpoints.len(), 1);
    }

    #[test]
    fn d3_upstream_rewind_is_emitted_even_if_downstream_goes_back() {
        let plan = plan_one(&store_with(100, 50), 90, 40);
        assert_eq!(plan.checkpoints[0].downstream_offset, 40);
    }

    #[test]
    fn d3_equal_downstream_is_suppressed_as_repeat() {
        let plan = plan_one(&store_with(100, 50), 105, 50);
        assert!(plan.checkpoints.is_empty());
        assert_eq!(only_reason(&plan), &SkipReason::NotMoreRecent);
    }

    #[test]
    fn d3_lower_downstream_without_upstream_rewind_is_suppressed() {
        let plan = plan_one(&store_with(100, 50), 100, 49);
        assert_eq!(only_reason(&plan), &SkipReason::NotMoreRecent);
    }

    #[test]
    fn b4_topic_from_target_is_checkpointed_under_its_name_one_hop_up() {
        let f = Fixture::new();
        let store = CheckpointStore::new(["g"]);
        let g = groups(&[(
            "g",
            &[
                ("T.topic3", 0, committed(5)),
                ("T.X.topic7", 1, committed(6)),
            ],
        )]);
        let plan = f.round().plan(&ShiftBy(0), &store, &g);
        let names: Vec<_> = plan
            .checkpoints
            .iter()
            .map(|c| c.key.topic_partition.to_string())
            .collect();
        assert_eq!(names, ["X.topic7-1", "topic3-0"]);
    }

    /// Quirk D.2.5: in MM2 two upstream partitions renaming to the same downstream
    /// partition throw, and the whole round is lost for every group. Here only the
    /// ambiguous partitions are skipped, and other partitions and groups proceed.
    #[test]
    fn d2_5_rename_conflict_skips_only_the_conflicting_partitions() {
        let f = Fixture::new();
        let store = CheckpointStore::new(["a", "g"]);
        // `T.S.x` goes one hop up to `S.x`; local `x` is named `S.x` too.
        let g = groups(&[
            ("a", &[("y", 0, committed(1))]),
            (
                "g",
                &[
                    ("x", 0, committed(5)),
                    ("T.S.x", 0, committed(9)),
                    ("z", 0, committed(3)),
                ],
            ),
        ]);
        let plan = f.round().plan(&ShiftBy(0), &store, &g);
        let emitted: Vec<_> = plan
            .checkpoints
            .iter()
            .map(|c| (c.key.group.as_str(), c.key.topic_partition.to_string()))
            .collect();
        assert_eq!(
            emitted,
            [("a", "S.y-0".to_string()), ("g", "S.z-0".to_string())]
        );
        let conflict = SkipReason::Conflict {
            downstream: tp("S.x", 0),
        };
        assert_eq!(plan.skipped.len(), 2);
        assert!(plan.skipped.iter().all(|s| s.reason == conflict));
        assert_eq!(plan.skip_counts().conflict, 2);
    }

    /// Quirk H.3: the plan does not touch the store. A checkpoint whose produce failed
    /// is planned again next round; MM2 would suppress it as a repeat.
    #[test]
    fn h3_checkpoint_lost_in_production_is_emitted_again_next_round() {
        let mut store = store_with(100, 50);
        let round1 = plan_one(&store, 120, 70);
        assert_eq!(round1.checkpoints.len(), 1);
        store.on_produce_failed(&round1.checkpoints);
        let round2 = plan_one(&store, 120, 70);
        assert_eq!(round2.checkpoints, round1.checkpoints);
        store.on_produced(&round2.checkpoints);
        assert!(plan_one(&store, 120, 70).checkpoints.is_empty());
    }

    #[test]
    fn output_is_sorted_by_group_then_downstream_partition() {
        let f = Fixture::new();
        let store = CheckpointStore::new(["a", "b"]);
        let g = groups(&[
            ("b", &[("t", 1, committed(1)), ("t", 0, committed(1))]),
            ("a", &[("u", 0, committed(1)), ("t", 2, committed(1))]),
        ]);
        let plan = f.round().plan(&ShiftBy(0), &store, &g);
        let keys: Vec<_> = plan.checkpoints.iter().map(|c| c.key.clone()).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), 4);
    }

    #[test]
    fn skip_counts_tally_every_reason() {
        let f = Fixture::new();
        let store = CheckpointStore::new(["g"]);
        let t = Table {
            answers: HashMap::from([((tp("b", 0), 1), Translation::TooOld)]),
            default: Translation::NoSync,
        };
        let g = groups(&[(
            "g",
            &[
                ("__x", 0, committed(1)),
                ("a", 0, None),
                ("b", 0, committed(1)),
                ("c", 0, committed(1)),
            ],
        )]);
        let counts = f.round().plan(&t, &store, &g).skip_counts();
        assert_eq!(
            counts,
            SkipCounts {
                filtered: 1,
                null_offset: 1,
                too_old: 1,
                no_sync: 1,
                ..SkipCounts::default()
            }
        );
    }

    use proptest::prelude::*;

    proptest! {
        /// Whatever the input, every upstream partition is accounted for exactly once
        /// (a checkpoint or a skip), and both lists come out sorted.
        #[test]
        fn every_partition_is_accounted_for_once_and_output_is_sorted(
            input in proptest::collection::btree_map(
                "g[ab]",
                proptest::collection::btree_map(
                    (proptest::sample::select(vec!["x", "S.x", "T.x", "T.S.x", "a", "__c", "T.a"]), 0..3i32)
                        .prop_map(|(t, p)| TopicPartition::new(t, p)),
                    proptest::option::of((0..50i64).prop_map(|o| CommittedOffset { offset: o, metadata: String::new() })),
                    0..8,
                ),
                0..3,
            ),
            shift in -5..5i64,
        ) {
            let f = Fixture::new();
            let store = store_with(20, 10);
            let plan = f.round().plan(&ShiftBy(shift), &store, &input);
            let total: usize = input.values().map(BTreeMap::len).sum();
            prop_assert_eq!(plan.checkpoints.len() + plan.skipped.len(), total);
            let keys: Vec<_> = plan.checkpoints.iter().map(|c| c.key.clone()).collect();
            prop_assert!(keys.windows(2).all(|w| w[0] < w[1]));
            let skips: Vec<_> = plan.skipped.iter().map(|s| (s.group.clone(), s.upstream.clone())).collect();
            prop_assert!(skips.windows(2).all(|w| w[0] < w[1]));
        }

        /// The counted plan the driver uses decides exactly what the listed plan
        /// decides: the same checkpoints, the same counts per reason and the same
        /// conflicts.
        #[test]
        fn the_counted_plan_matches_the_listed_plan(
            input in proptest::collection::btree_map(
                "g[ab]",
                proptest::collection::btree_map(
                    (proptest::sample::select(vec!["x", "S.x", "T.x", "T.S.x", "a", "__c", "T.a"]), 0..3i32)
                        .prop_map(|(t, p)| TopicPartition::new(t, p)),
                    proptest::option::of((0..50i64).prop_map(|o| CommittedOffset { offset: o, metadata: String::new() })),
                    0..8,
                ),
                0..3,
            ),
            shift in -5..5i64,
        ) {
            let f = Fixture::new();
            let store = store_with(20, 10);
            let listed = f.round().plan(&ShiftBy(shift), &store, &input);
            let counted = f.round().plan_counted(&ShiftBy(shift), &store, &input);
            prop_assert_eq!(&counted.checkpoints, &listed.checkpoints);
            prop_assert_eq!(counted.counts, listed.skip_counts());
            prop_assert_eq!(counted.skipped(), listed.skipped.len() as u64);
            let conflicts: Vec<_> = listed
                .skipped
                .iter()
                .filter(|s| matches!(s.reason, SkipReason::Conflict { .. }))
                .cloned()
                .collect();
            prop_assert_eq!(counted.conflicts, conflicts);
        }

        /// Planning the groups in windows (as the driver's periodic round does,
        /// one window per few OffsetFetch answers) decides what planning them
        /// at once does: the windows' checkpoints and conflicts in order, and
        /// their counts summed.
        #[test]
        fn planning_in_windows_matches_planning_at_once(
            input in proptest::collection::btree_map(
                "g[a-e]",
                proptest::collection::btree_map(
                    (proptest::sample::select(vec!["x", "S.x", "T.x", "T.S.x", "a", "__c", "T.a"]), 0..3i32)
                        .prop_map(|(t, p)| TopicPartition::new(t, p)),
                    proptest::option::of((0..50i64).prop_map(|o| CommittedOffset { offset: o, metadata: String::new() })),
                    0..8,
                ),
                0..6,
            ),
            window in 1..4usize,
            shift in -5..5i64,
        ) {
            let f = Fixture::new();
            let store = store_with(20, 10);
            let whole = f.round().plan_counted(&ShiftBy(shift), &store, &input);
            let entries: Vec<_> = input.into_iter().collect();
            let mut windowed = CountedPlan::default();
            for chunk in entries.chunks(window) {
                let part: BTreeMap<_, _> = chunk.iter().cloned().collect();
                let mut plan = f.round().plan_counted(&ShiftBy(shift), &store, &part);
                windowed.checkpoints.append(&mut plan.checkpoints);
                windowed.conflicts.append(&mut plan.conflicts);
                windowed.counts.merge(&plan.counts);
            }
            prop_assert_eq!(windowed, whole);
        }
    }
}
