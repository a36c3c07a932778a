//! A window of groups' committed offsets in the form an emission round plans
//! from (docs/benchmarks.md, "Measurements behind the design"): each
//! upstream topic and topic-partition held once, each group's commits as
//! compact entries that name their partition by an index.
//!
//! A map of `TopicPartition` keys per group (the [`GroupOffsets`] shape) cost
//! a topic name and a tree node per group-partition, and planning it looked
//! each topic up by name per group-partition; at 100,000 groups × 10
//! partitions that was most of a round's allocations. Here the answers of
//! OffsetFetch (or the commit follower's view) go straight into a window: a
//! name is compared with the previous entry's, and looked up in a map only
//! when the topic changes; nothing is allocated per group-partition besides
//! the entry itself (and a non-empty commit metadata).
//!
//! A window decides what the map it replaces decides: its groups are planned
//! in name order, each group's partitions in upstream order, and a partition
//! (or group) given twice keeps the last one, as a map's insertion would.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use super::types::{CommittedOffset, GroupOffsets, TopicPartition};

/// A group's commits as OffsetFetch answered them: (upstream topic, partition,
/// commit), in the answer's order; the topic name shared by consecutive
/// entries of the same topic.
pub type GroupCommits = Vec<(Arc<str>, i32, Option<CommittedOffset>)>;

/// [`GroupCommits`] of a group's [`GroupOffsets`].
pub fn group_commits(offsets: GroupOffsets) -> GroupCommits {
    let mut out = Vec::with_capacity(offsets.len());
    let mut last: Option<Arc<str>> = None;
    for (tp, committed) in offsets {
        let topic = match &last {
            Some(t) if **t == *tp.topic => Arc::clone(t),
            _ => {
                let t: Arc<str> = Arc::from(tp.topic);
                last = Some(Arc::clone(&t));
                t
            }
        };
        out.push((topic, tp.partition, committed));
    }
    out
}

/// Partitions below this index may be found by a vector index, others by a map.
const DENSE_PARTITIONS: usize = 4_096;

/// How far past the vector's end a new partition may be and still extend it
/// (at most 256 B more per partition named, whatever numbers the answers
/// carry); one further out goes to the map until the vector reaches it.
const DENSE_GAP: usize = 64;

/// One group-partition's commit; the upstream partition by its index in
/// [`OffsetsWindow::partitions`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) tp: u32,
    pub(crate) committed: Option<CommittedOffset>,
}

/// An upstream topic of the window and where its partitions are.
#[derive(Clone, Debug, Default)]
struct TopicSlot {
    name: Box<str>,
    /// The index in `tps` of partition `p` for `0 <= p < dense.len()`
    /// (`u32::MAX`: none yet).
    dense: Vec<u32>,
    /// The others.
    sparse: BTreeMap<i32, u32>,
}

/// The committed offsets of a window of groups, as a round plans them.
#[derive(Clone, Debug, Default)]
pub struct OffsetsWindow {
    /// Each upstream partition the window's commits name, once.
    tps: Vec<TopicPartition>,
    /// The topic (index in `topics`) of each of `tps`.
    tp_topics: Vec<u32>,
    topics: Vec<TopicSlot>,
    topic_ids: HashMap<Box<str>, u32>,
    /// Each group and its entries in `parts`, in the order given.
    groups: Vec<(String, Range<usize>)>,
    parts: Vec<Part>,
    /// Whether `groups` are strictly ascending by name (the usual case: the
    /// flow's groups are sorted).
    sorted: bool,
    /// The topic of the last entry pushed: the next group's first entry is
    /// usually of the same topic, found without hashing its name.
    last_topic: Option<u32>,
}

impl OffsetsWindow {
    /// An empty window.
    pub fn new() -> Self {
        OffsetsWindow {
            sorted: true,
            ..OffsetsWindow::default()
        }
    }

    /// Number of groups given (a group given twice counts twice).
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// True if no group was given.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    fn topic_id(&mut self, topic: &str) -> u32 {
        if let Some(&id) = self.topic_ids.get(topic) {
            return id;
        }
        let id = u32::try_from(self.topics.len()).unwrap_or(u32::MAX);
        self.topics.push(TopicSlot {
            name: topic.into(),
            ..TopicSlot::default()
        });
        self.topic_ids.insert(topic.into(), id);
        id
    }

    fn tp_id(&mut self, topic: u32, partition: i32) -> u32 {
        let next = u32::try_from(self.tps.len()).unwrap_or(u32::MAX);
        let slot = &mut self.topics[topic as usize];
        let in_dense = usize::try_from(partition).ok().filter(|&p| {
            p < slot.dense.len() || (p < DENSE_PARTITIONS && p < slot.dense.len() + DENSE_GAP)
        });
        let found = match in_dense {
            Some(p) => {
                if slot.dense.len() <= p {
                    let old_len = slot.dense.len();
                    slot.dense.resize(p + 1, u32::MAX);
                    // Partitions kept in the map that the vector now reaches
                    // move into it (`p` is below DENSE_PARTITIONS: fits i32).
                    let reached: Vec<(i32, u32)> = slot
                        .sparse
                        .range(old_len as i32..=p as i32)
                        .map(|(&q, &id)| (q, id))
                        .collect();
                    for (q, id) in reached {
                        slot.sparse.remove(&q);
                        slot.dense[q as usize] = id;
                    }
                }
                if slot.dense[p] == u32::MAX {
                    slot.dense[p] = next;
                    None
                } else {
                    Some(slot.dense[p])
                }
            }
            None => match slot.sparse.get(&partition) {
                Some(&id) => Some(id),
                None => {
                    slot.sparse.insert(partition, next);
                    None
                }
            },
        };
        match found {
            Some(id) => id,
            None => {
                self.tps.push(TopicPartition::new(&*slot.name, partition));
                self.tp_topics.push(topic);
                next
            }
        }
    }

    /// Adds `group` with its commits: (upstream topic, partition, commit), in
    /// any order. A partition given twice keeps the last commit.
    pub fn push_group<S: AsRef<str>>(
        &mut self,
        group: String,
        commits: impl IntoIterator<Item = (S, i32, Option<CommittedOffset>)>,
    ) {
        let start = self.parts.len();
        let mut last = self.last_topic;
        for (topic, partition, committed) in commits {
            let topic = topic.as_ref();
            let t = match last {
                Some(t) if *self.topics[t as usize].name == *topic => t,
                _ => self.topic_id(topic),
            };
            last = Some(t);
            let tp = self.tp_id(t, partition);
            self.parts.push(Part { tp, committed });
        }
        self.last_topic = last;
        let (tps, tp_topics) = (&self.tps, &self.tp_topics);
        // Upstream order: partitions of one topic by number, without
        // comparing the (equal) names.
        let order = |a: u32, b: u32| {
            let (a, b) = (a as usize, b as usize);
            if tp_topics[a] == tp_topics[b] {
                tps[a].partition.cmp(&tps[b].partition)
            } else {
                tps[a].cmp(&tps[b])
            }
        };
        let ascending = self.parts[start..]
            .windows(2)
            .all(|w| order(w[0].tp, w[1].tp).is_lt());
        if !ascending {
            let mut own = self.parts.split_off(start);
            own.sort_by(|a, b| order(a.tp, b.tp));
            // Equal partitions are adjacent in the order given: keep the last.
            own.dedup_by(|later, kept| {
                let same = later.tp == kept.tp;
                if same {
                    std::mem::swap(later, kept);
                }
                same
            });
            self.parts.append(&mut own);
        }
        if let Some((previous, _)) = self.groups.last()
            && previous.as_str() >= group.as_str()
        {
            self.sorted = false;
        }
        self.groups.push((group, start..self.parts.len()));
    }

    /// The window of `groups` (the [`GroupOffsets`] shape).
    pub fn from_map(groups: BTreeMap<String, GroupOffsets>) -> Self {
        let mut window = OffsetsWindow::new();
        for (group, offsets) in groups {
            window.push_group(
                group,
                offsets
                    .into_iter()
                    .map(|(tp, committed)| (tp.topic, tp.partition, committed)),
            );
        }
        window
    }

    /// The window of `groups`, copied.
    pub fn from_map_ref(groups: &BTreeMap<String, GroupOffsets>) -> Self {
        let mut window = OffsetsWindow::new();
        for (group, offsets) in groups {
            window.push_group(
                group.clone(),
                offsets
                    .iter()
                    .map(|(tp, committed)| (tp.topic.as_str(), tp.partition, committed.clone())),
            );
        }
        window
    }

    /// The groups in name order (a group given twice: its last), each with
    /// its entries in upstream partition order.
    pub(crate) fn ordered(&self) -> Vec<(&str, &[Part])> {
        let mut out: Vec<(&str, &[Part])> = self
            .groups
            .iter()
            .map(|(g, range)| (g.as_str(), &self.parts[range.clone()]))
            .collect();
        if !self.sorted {
            out.sort_by(|a, b| a.0.cmp(b.0));
            out.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    std::mem::swap(later, kept);
                }
                same
            });
        }
        out
    }

    /// The upstream partition of index `tp`.
    pub(crate) fn partition(&self, tp: u32) -> &TopicPartition {
        &self.tps[tp as usize]
    }

    /// The topic (index into [`topic_names`](Self::topic_names)) of partition `tp`.
    pub(crate) fn topic_of(&self, tp: u32) -> usize {
        self.tp_topics[tp as usize] as usize
    }

    /// The window's upstream topic names, by index.
    pub(crate) fn topic_names(&self) -> impl Iterator<Item = &str> {
        self.topics.iter().map(|t| &*t.name)
    }

    /// Every group-partition's upstream partition and commit, by group (in
    /// name order) then partition.
    pub fn commits(&self) -> impl Iterator<Item = (&TopicPartition, Option<&CommittedOffset>)> {
        self.ordered().into_iter().flat_map(move |(_, parts)| {
            parts
                .iter()
                .map(move |p| (self.partition(p.tp), p.committed.as_ref()))
        })
    }

    /// The group names, in name order, each once.
    pub fn group_names(&self) -> impl Iterator<Item = &str> {
        self.ordered().into_iter().map(|(g, _)| g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint_store::CheckpointStore;
    use crate::filter::TopicFilter;
    use crate::policy::{Flow, ReplicationPolicy};
    use crate::round::CheckpointRound;
    use crate::types::{OffsetTranslator, Translation};
    use proptest::prelude::*;

    /// What the window holds, in the map shape.
    fn as_map(window: &OffsetsWindow) -> BTreeMap<String, GroupOffsets> {
        window
            .ordered()
            .into_iter()
            .map(|(g, parts)| {
                let offsets = parts
                    .iter()
                    .map(|p| (window.partition(p.tp).clone(), p.committed.clone()))
                    .collect();
                (g.to_owned(), offsets)
            })
            .collect()
    }

    struct ShiftBy(i64);

    impl OffsetTranslator for ShiftBy {
        fn translate(&self, _: &TopicPartition, upstream: i64) -> Translation {
            Translation::Translated(upstream - self.0)
        }
    }

    #[test]
    fn partitions_and_groups_given_twice_keep_the_last() {
        let c = |o: i64| Some(CommittedOffset::new(o, format!("m{o}")));
        let mut w = OffsetsWindow::new();
        w.push_group("b".into(), [("t", 1, c(1)), ("s", 0, c(2)), ("t", 1, c(3))]);
        w.push_group("a".into(), [("t", 0, None)]);
        w.push_group("b".into(), [("t", 2, c(4)), ("t", 0, c(5))]);
        let map = as_map(&w);
        let expected: BTreeMap<String, GroupOffsets> = BTreeMap::from([
            (
                "a".to_owned(),
                BTreeMap::from([(TopicPartition::new("t", 0), None)]),
            ),
            (
                "b".to_owned(),
                BTreeMap::from([
                    (TopicPartition::new("t", 0), c(5)),
                    (TopicPartition::new("t", 2), c(4)),
                ]),
            ),
        ]);
        assert_eq!(map, expected);
        let mut w = OffsetsWindow::new();
        w.push_group("g".into(), [("t", 1, c(1)), ("s", 0, c(2)), ("t", 1, c(3))]);
        let offsets = &as_map(&w)["g"];
        let order: Vec<_> = offsets
            .iter()
            .map(|(tp, c)| (tp.to_string(), c.clone()))
            .collect();
        assert_eq!(order, [("s-0".to_owned(), c(2)), ("t-1".to_owned(), c(3))]);
    }

    #[test]
    fn partitions_far_apart_or_out_of_order_are_kept_once_with_no_large_vector() {
        let c = |o: i64| Some(CommittedOffset::new(o, String::new()));
        // From the top down with gaps, then all: the vector grows past
        // partitions first kept in the map, which move into it.
        let order: Vec<i32> = (0..300).rev().step_by(3).chain(0..300).collect();
        let mut w = OffsetsWindow::new();
        for g in ["a", "b"] {
            w.push_group(g.into(), order.iter().map(|&p| ("t", p, c(i64::from(p)))));
        }
        w.push_group("c".into(), [("far", 4095, c(1)), ("far", -1, c(2))]);
        let map = as_map(&w);
        for g in ["a", "b"] {
            let expected: GroupOffsets = (0..300)
                .map(|p| (TopicPartition::new("t", p), c(i64::from(p))))
                .collect();
            assert_eq!(map[g], expected, "group {g}");
        }
        assert_eq!(w.tps.len(), 302, "each partition once");
        // A partition far out does not extend the vector to it.
        let far = &w.topics[w.topic_ids["far"] as usize];
        assert!(far.dense.is_empty() && far.sparse.len() == 2);
        assert_eq!(map["c"].len(), 2);
    }

    proptest! {
        /// Groups and partitions given in any order, some twice, hold and
        /// plan what a map built from the same answers (the later one
        /// replacing the earlier) holds and plans.
        #[test]
        fn a_window_plans_what_the_map_of_the_same_answers_plans(
            answers in proptest::collection::vec(
                (
                    "g[a-d]",
                    proptest::collection::vec(
                        (
                            proptest::sample::select(vec!["x", "S.x", "T.x", "T.S.x", "a", "__c"]),
                            prop_oneof![0..3i32, Just(5_000i32), Just(-1i32)],
                            proptest::option::of(0..50i64),
                        ),
                        0..8,
                    ),
                ),
                0..8,
            ),
            shift in -5..5i64,
        ) {
            let mut window = OffsetsWindow::new();
            let mut map: BTreeMap<String, GroupOffsets> = BTreeMap::new();
            for (group, parts) in &answers {
                let commits: Vec<_> = parts
                    .iter()
                    .map(|(t, p, o)| (*t, *p, o.map(|o| CommittedOffset::new(o, ""))))
                    .collect();
                let offsets: GroupOffsets = commits
                    .iter()
                    .map(|(t, p, c)| (TopicPartition::new(*t, *p), c.clone()))
                    .collect();
                map.insert(group.clone(), offsets);
                window.push_group(group.clone(), commits);
            }
            prop_assert_eq!(&as_map(&window), &map);
            let names: Vec<_> = window.group_names().collect();
            prop_assert!(names.windows(2).all(|w| w[0] < w[1]));
            let (flow, policy, filter) =
                (Flow::new("S", "T"), ReplicationPolicy::default(), TopicFilter::default());
            let round = CheckpointRound { flow: &flow, policy: &policy, topic_filter: &filter };
            let mut store = CheckpointStore::new(["ga", "gb"]);
            let listed = round.plan(&ShiftBy(shift), &store, &map);
            let planned = round.plan_window(&ShiftBy(shift), &store, &window);
            prop_assert_eq!(&planned.checkpoints, &listed.checkpoints);
            prop_assert_eq!(planned.counts, listed.skip_counts());
            // Again against the checkpoints stored: some suppressed, some
            // emitted again (translated further back or forward).
            store.on_produced(&listed.checkpoints);
            for again in [shift, shift + 3, shift - 3] {
                let listed = round.plan(&ShiftBy(again), &store, &map);
                let planned = round.plan_window(&ShiftBy(again), &store, &window);
                prop_assert_eq!(&planned.checkpoints, &listed.checkpoints);
                prop_assert_eq!(planned.counts, listed.skip_counts());
            }
        }
    }
}
