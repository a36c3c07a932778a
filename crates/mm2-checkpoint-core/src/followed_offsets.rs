//! The source groups' committed offsets as the commit follower learns them from
//! `__consumer_offsets` (docs/commit-follower.md section 2).
//!
//! Facts in: decoded records, in log order per partition of `__consumer_offsets`
//! (the driver reads it read_committed, so a transactional commit arrives only
//! once committed, and never if aborted). Out: each group's committed offsets in
//! the shape an emission round takes ([`GroupOffsets`]), and which groups changed
//! since the driver last asked.
//!
//! Only groups the group filter accepts and partitions of topics the topic filter
//! accepts are kept, so memory follows what is checkpointed, not the cluster's
//! group count. A group whose classic metadata names a protocol type other than
//! `consumer` (Kafka Connect workers, for example) is left out, as ListGroups
//! would leave it out of the polling mode's discovery.
//!
//! The latest record per group and partition wins, as in the coordinator: a
//! commit replaces the previous one, a tombstone (expiry, offset deletion, group
//! deletion) removes it. A group metadata tombstone removes nothing by itself:
//! the coordinator tombstones each offset of a deleted group, and a classic group
//! converted to a KIP-848 group loses its metadata record but keeps its offsets.

use std::collections::{BTreeMap, BTreeSet};

use super::consumer_offsets::OffsetsRecord;
use super::filter::{GroupFilter, TopicFilter};
use super::name::{Name, by_name};
use super::topic_ids::TopicIds;
use super::types::{CommittedOffset, GroupOffsets, TopicPartition};
use super::window::OffsetsWindow;

/// What [`FollowedOffsets::apply`] did with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// A commit was stored, or a stored one replaced by a different one.
    Committed,
    /// The same commit as the one stored (nothing changed).
    Unchanged,
    /// A stored commit was removed by a tombstone.
    Removed,
    /// The record concerns a group or topic the filters leave out, or a group that
    /// is not a consumer group; or it is a tombstone for nothing stored.
    Ignored,
    /// Group metadata: the group's protocol type was noted.
    GroupMetadata,
    /// A record type that carries no committed offset.
    Other,
}

/// A commit as the view keeps it: the metadata boxed (no capacity word, and
/// no allocation when empty, as it nearly always is).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stored {
    offset: i64,
    metadata: Box<str>,
}

/// One group's commit for one partition: 32 bytes, the topic by its id in
/// the view's [`Topics`].
#[derive(Clone, Debug)]
struct Commit {
    topic: u32,
    partition: i32,
    commit: Option<Stored>,
}

/// A group's commits, sorted by topic id then partition. A vector of compact
/// entries rather than a map with a topic name per entry: the view holds one
/// per group and partition.
type Commits = Vec<Commit>;

fn position(commits: &Commits, topic: u32, partition: i32) -> Result<usize, usize> {
    commits.binary_search_by(|c| (c.topic, c.partition).cmp(&(topic, partition)))
}

/// The topic names the view's commits hold, each once, by id, counted.
type Topics = TopicIds;

fn to_group_offsets(commits: &Commits, topics: &Topics) -> GroupOffsets {
    commits
        .iter()
        .map(|c| {
            let commit = c.commit.as_ref().map(|s| CommittedOffset {
                offset: s.offset,
                metadata: s.metadata.to_string(),
            });
            (
                TopicPartition::new(topics.name(c.topic), c.partition),
                commit,
            )
        })
        .collect()
}

/// The committed offsets of the groups a flow checkpoints, as followed from
/// `__consumer_offsets`.
#[derive(Clone, Debug)]
pub struct FollowedOffsets {
    group_filter: GroupFilter,
    topic_filter: TopicFilter,
    /// Each group's commits; the key is the one shared copy of the group's name.
    groups: BTreeMap<Name, Commits>,
    /// Each topic name a commit holds, once, by id.
    topics: Topics,
    /// Groups whose classic metadata names a protocol type other than `consumer`.
    not_consumer: BTreeSet<String>,
    /// Groups changed since [`FollowedOffsets::take_changed`].
    changed: Changed,
    /// The group of the last commit applied: `__consumer_offsets` holds a
    /// group's commits one after the other, so its name is searched once
    /// per run of them, not once per record.
    last_committed: Option<Name>,
    /// The filters' last decisions, by name: `__consumer_offsets` holds a
    /// group's commits (and a topic's partitions) one after the other, so
    /// each filter runs about once per name instead of once per record.
    last_group: Option<(String, bool)>,
    last_topic: Option<(String, bool)>,
}

/// `filter`'s decision for `name`, from `last` when it was the last name
/// asked about.
fn memo(last: &mut Option<(String, bool)>, name: &str, filter: impl Fn(&str) -> bool) -> bool {
    match last {
        Some((n, keep)) if n == name => *keep,
        Some((n, keep)) => {
            *keep = filter(name);
            n.clear();
            n.push_str(name);
            *keep
        }
        None => {
            let keep = filter(name);
            *last = Some((name.to_owned(), keep));
            keep
        }
    }
}

/// The groups changed since they were last taken, and the last one marked:
/// a run of one group's records marks it once.
#[derive(Clone, Debug, Default)]
struct Changed {
    groups: BTreeSet<Name>,
    last: Option<Name>,
}

impl Changed {
    fn insert(&mut self, name: Name) {
        if self.last.as_ref() != Some(&name) {
            self.groups.insert(name.clone());
            self.last = Some(name);
        }
    }

    fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    fn take(&mut self) -> BTreeSet<Name> {
        self.last = None;
        std::mem::take(&mut self.groups)
    }

    fn clear(&mut self) {
        self.last = None;
        self.groups.clear();
    }
}

impl FollowedOffsets {
    /// An empty view keeping what `group_filter` and `topic_filter` accept.
    pub fn new(group_filter: GroupFilter, topic_filter: TopicFilter) -> Self {
        FollowedOffsets {
            group_filter,
            topic_filter,
            groups: BTreeMap::new(),
            topics: Topics::default(),
            not_consumer: BTreeSet::new(),
            changed: Changed::default(),
            last_committed: None,
            last_group: None,
            last_topic: None,
        }
    }

    /// The shared copy of `group`'s name: the one the view holds, or a new one.
    fn group_name(&self, group: &str) -> Name {
        match self.groups.get_key_value(by_name(&group)) {
            Some((name, _)) => name.clone(),
            None => Name::new(group),
        }
    }

    /// Applies one decoded record.
    pub fn apply(&mut self, record: OffsetsRecord) -> Applied {
        match record {
            OffsetsRecord::Other { .. } => Applied::Other,
            OffsetsRecord::GroupMetadata { group, value } => {
                match value {
                    Some(v) if !v.protocol_type.is_empty() && v.protocol_type != "consumer" => {
                        if self.not_consumer.insert(group.clone()) {
                            self.remove_group(&group);
                        }
                    }
                    _ => {
                        self.not_consumer.remove(&group);
                    }
                }
                Applied::GroupMetadata
            }
            OffsetsRecord::OffsetCommit {
                group,
                topic_partition,
                value,
            } => {
                let (groups, topics) = (&self.group_filter, &self.topic_filter);
                if self.not_consumer.contains(&group)
                    || !memo(&mut self.last_group, &group, |g| {
                        groups.should_replicate_group(g)
                    })
                    || !memo(&mut self.last_topic, &topic_partition.topic, |t| {
                        topics.should_replicate_topic(t)
                    })
                {
                    return Applied::Ignored;
                }
                match value {
                    Some(v) => {
                        // Kafka's OffsetFetch answers -1 as "no offset"; the round
                        // takes that as `None` (a null offset).
                        let commit = (v.offset >= 0).then(|| Stored {
                            offset: v.offset,
                            metadata: v.metadata.into_boxed_str(),
                        });
                        let name = match &self.last_committed {
                            Some(last) if last.is(&group) => last.clone(),
                            _ => {
                                let name = self.group_name(&group);
                                self.last_committed = Some(name.clone());
                                name
                            }
                        };
                        let commits = self.groups.entry(name.clone()).or_default();
                        let partition = topic_partition.partition;
                        let found = self
                            .topics
                            .id(&topic_partition.topic)
                            .map(|t| position(commits, t, partition));
                        match found {
                            Some(Ok(i)) if commits[i].commit == commit => {
                                return Applied::Unchanged;
                            }
                            Some(Ok(i)) => commits[i].commit = commit,
                            _ => {
                                let topic = self.topics.hold(&topic_partition.topic);
                                let i = match position(commits, topic, partition) {
                                    Ok(i) | Err(i) => i,
                                };
                                // Grow by an eighth, not double: groups stop
                                // growing soon, and doubling leaves up to half unused.
                                if commits.len() == commits.capacity() {
                                    commits.reserve_exact((commits.len() / 8).max(1));
                                }
                                commits.insert(
                                    i,
                                    Commit {
                                        topic,
                                        partition,
                                        commit,
                                    },
                                );
                            }
                        }
                        self.changed.insert(name);
                        Applied::Committed
                    }
                    None => {
                        let Some(topic) = self.topics.id(&topic_partition.topic) else {
                            return Applied::Ignored;
                        };
                        let Some((name, commits)) =
                            self.groups.get_key_value(by_name(&group.as_str()))
                        else {
                            return Applied::Ignored;
                        };
                        let Ok(i) = position(commits, topic, topic_partition.partition) else {
                            return Applied::Ignored;
                        };
                        let name = name.clone();
                        if let Some(commits) = self.groups.get_mut(&name) {
                            commits.remove(i);
                            if commits.is_empty() {
                                self.groups.remove(&name);
                            }
                        }
                        self.topics.release(topic);
                        self.changed.insert(name);
                        Applied::Removed
                    }
                }
            }
        }
    }

    fn remove_group(&mut self, group: &str) {
        if let Some((name, commits)) = self.groups.remove_entry(by_name(&group)) {
            for c in &commits {
                self.topics.release(c.topic);
            }
            self.changed.insert(name);
        }
    }

    /// Marks the groups with a commit on any of `partitions` (upstream) as
    /// changed: new offset syncs for a partition can change their translation.
    pub fn partitions_synced<'a>(
        &mut self,
        partitions: impl IntoIterator<Item = &'a TopicPartition>,
    ) {
        // A scan of every commit rather than an index of the groups of each
        // partition: the index cost 34 bytes per group-partition at 100,000
        // groups × 10 partitions; the scan costs 7-8 ms of CPU per million
        // commits, only when new syncs arrived (docs/benchmarks.md, issue 18).
        let mut synced: Vec<(u32, i32)> = partitions
            .into_iter()
            .filter_map(|tp| Some((self.topics.id(&tp.topic)?, tp.partition)))
            .collect();
        if synced.is_empty() {
            return;
        }
        synced.sort_unstable();
        for (name, commits) in &self.groups {
            let on_synced = commits
                .iter()
                .any(|c| synced.binary_search(&(c.topic, c.partition)).is_ok());
            if on_synced {
                self.changed.insert(name.clone());
            }
        }
    }

    /// Marks `groups` as changed again (their checkpoints could not be
    /// produced, so the next emission tries them again).
    pub fn mark_changed<'a>(&mut self, groups: impl IntoIterator<Item = &'a String>) {
        for g in groups {
            let name = self.group_name(g);
            self.changed.insert(name);
        }
    }

    /// Whether any group changed since the last [`take_changed`](Self::take_changed).
    pub fn has_changes(&self) -> bool {
        !self.changed.is_empty()
    }

    /// The offsets of the groups that changed since the last call (a group whose
    /// offsets are all gone is left out: it has nothing to checkpoint), and
    /// forgets the changes.
    pub fn take_changed(&mut self) -> BTreeMap<String, GroupOffsets> {
        self.changed
            .take()
            .into_iter()
            .filter_map(|g| {
                let commits = self.groups.get(&g)?;
                Some((g.to_string(), to_group_offsets(commits, &self.topics)))
            })
            .collect()
    }

    /// Forgets the changes without building their offsets (after the initial
    /// replay every group counts as changed; copying them all to drop the copy
    /// cost ~150 B per group-partition at the peak).
    pub fn clear_changed(&mut self) {
        self.changed.clear();
    }

    /// The offsets of `names` that the view keeps (a name it does not keep is
    /// left out), in the shape an emission round takes: a window of a round
    /// planned from the view.
    pub fn offsets_of<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> BTreeMap<String, GroupOffsets> {
        names
            .into_iter()
            .filter_map(|g| {
                let commits = self.groups.get(by_name(&g))?;
                Some((g.to_owned(), to_group_offsets(commits, &self.topics)))
            })
            .collect()
    }

    /// [`offsets_of`](Self::offsets_of) as the window a round plans from:
    /// each group's commits copied as compact entries, no topic name copied
    /// per group-partition.
    pub fn window_of<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> OffsetsWindow {
        let mut window = OffsetsWindow::new();
        for g in names {
            let Some(commits) = self.groups.get(by_name(&g)) else {
                continue;
            };
            window.push_group(
                g.to_owned(),
                commits.iter().map(|c| {
                    let commit = c.commit.as_ref().map(|s| CommittedOffset {
                        offset: s.offset,
                        metadata: s.metadata.to_string(),
                    });
                    (self.topics.name(c.topic), c.partition, commit)
                }),
            );
        }
        window
    }

    /// Every group kept, with its committed offsets: a copy built on each
    /// call (for tests and tools; the run loop asks for
    /// [`group_names`](Self::group_names) or [`take_changed`](Self::take_changed)).
    pub fn groups(&self) -> BTreeMap<String, GroupOffsets> {
        self.groups
            .iter()
            .map(|(g, commits)| (g.to_string(), to_group_offsets(commits, &self.topics)))
            .collect()
    }

    /// The names of the groups kept, sorted.
    pub fn group_names(&self) -> impl Iterator<Item = &str> {
        self.groups.keys().map(|g| &**g)
    }

    /// Number of groups kept.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Number of group-partitions kept.
    pub fn partition_count(&self) -> usize {
        self.groups.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer_offsets::{GroupMetadataValue, OffsetCommitValue};

    fn view() -> FollowedOffsets {
        FollowedOffsets::new(
            GroupFilter::new(None, Some("ignored.*")).unwrap(),
            TopicFilter::new(None, Some("__.*")).unwrap(),
        )
    }

    fn commit(group: &str, topic: &str, p: i32, offset: Option<i64>) -> OffsetsRecord {
        OffsetsRecord::OffsetCommit {
            group: group.into(),
            topic_partition: TopicPartition::new(topic, p),
            value: offset.map(|offset| OffsetCommitValue {
                offset,
                leader_epoch: None,
                metadata: String::new(),
                commit_timestamp: 0,
                expire_timestamp: None,
            }),
        }
    }

    fn metadata(group: &str, protocol_type: Option<&str>) -> OffsetsRecord {
        OffsetsRecord::GroupMetadata {
            group: group.into(),
            value: protocol_type.map(|t| GroupMetadataValue {
                protocol_type: t.into(),
                generation: 1,
            }),
        }
    }

    #[test]
    fn a_group_committing_again_after_its_change_was_taken_or_cleared_is_changed_again() {
        let mut v = view();
        let changed =
            |v: &mut FollowedOffsets| -> Vec<String> { v.take_changed().into_keys().collect() };
        v.apply(commit("a", "t", 0, Some(1)));
        v.apply(commit("a", "t", 1, Some(1)));
        assert_eq!(changed(&mut v), ["a"]);
        v.apply(commit("a", "t", 0, Some(2)));
        assert_eq!(changed(&mut v), ["a"], "the same group right after a take");
        v.apply(commit("a", "t", 0, Some(3)));
        v.clear_changed();
        v.apply(commit("a", "t", 1, Some(3)));
        assert_eq!(changed(&mut v), ["a"], "the same group right after a clear");
        v.apply(commit("a", "t", 0, Some(4)));
        v.apply(commit("b", "t", 0, Some(4)));
        v.apply(commit("a", "t", 1, Some(4)));
        v.apply(commit("ab", "t", 1, Some(4)));
        assert_eq!(changed(&mut v), ["a", "ab", "b"]);
        // A run of one group's commits after a tombstone emptied it.
        v.apply(commit("b", "t", 0, None));
        assert_eq!(changed(&mut v), Vec::<String>::new());
        v.apply(commit("b", "t", 0, Some(5)));
        v.apply(commit("b", "t", 1, Some(5)));
        let offsets = v.take_changed();
        assert_eq!(offsets.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(offsets["b"].len(), 2);
    }

    #[test]
    fn the_latest_commit_wins_and_a_tombstone_removes_it() {
        let mut v = view();
        assert_eq!(v.apply(commit("g", "t", 0, Some(5))), Applied::Committed);
        assert_eq!(v.apply(commit("g", "t", 0, Some(9))), Applied::Committed);
        assert_eq!(v.apply(commit("g", "t", 0, Some(9))), Applied::Unchanged);
        let changed = v.take_changed();
        assert_eq!(
            changed["g"][&TopicPartition::new("t", 0)],
            Some(CommittedOffset::new(9, ""))
        );
        assert!(!v.has_changes());
        assert_eq!(v.apply(commit("g", "t", 0, None)), Applied::Removed);
        assert!(v.has_changes());
        assert!(
            v.take_changed().is_empty(),
            "a group with nothing left has nothing to emit"
        );
        assert!(v.groups().is_empty());
        assert_eq!(v.apply(commit("g", "t", 0, None)), Applied::Ignored);
    }

    #[test]
    fn offsets_of_a_window_are_what_the_view_keeps_and_clearing_builds_nothing() {
        let mut v = view();
        v.apply(commit("a", "t", 1, Some(7)));
        v.apply(commit("a", "t", 0, Some(5)));
        v.apply(commit("b", "u", 0, Some(3)));
        v.apply(commit("c", "t", 0, None));
        assert!(v.has_changes());
        v.clear_changed();
        assert!(!v.has_changes());
        assert!(v.take_changed().is_empty());
        let all = v.groups();
        let window = v.offsets_of(["a", "b", "c", "unknown"]);
        assert_eq!(window, all, "a group the view does not keep is left out");
        let one = v.offsets_of(["b"]);
        assert_eq!(one.len(), 1);
        assert_eq!(one["b"], all["b"]);
    }

    #[test]
    fn topic_ids_are_shared_forgotten_with_their_last_commit_and_reused() {
        assert_eq!(
            std::mem::size_of::<Commit>(),
            32,
            "one entry per group-partition"
        );
        let mut v = view();
        v.apply(commit("a", "t", 0, Some(1)));
        v.apply(commit("b", "t", 1, Some(2)));
        v.apply(commit("a", "u", 0, Some(3)));
        assert_eq!(v.topics.ids.len(), 2);
        assert_eq!(v.apply(commit("a", "t", 0, None)), Applied::Removed);
        assert_eq!(v.topics.ids.len(), 2, "b still commits on t");
        assert_eq!(v.apply(commit("b", "t", 1, None)), Applied::Removed);
        assert_eq!(v.topics.id("t"), None, "no commit holds t any more");
        assert_eq!(
            v.apply(commit("b", "t", 1, None)),
            Applied::Ignored,
            "a tombstone for a forgotten topic"
        );
        // t's id is reused by w; u keeps its own.
        v.apply(commit("c", "w", 4, Some(5)));
        v.apply(commit("a", "t", 2, Some(6)));
        assert_eq!(v.topics.names.len(), 3);
        let groups = v.groups();
        assert_eq!(
            groups["a"].keys().cloned().collect::<Vec<_>>(),
            [TopicPartition::new("t", 2), TopicPartition::new("u", 0)]
        );
        assert_eq!(
            groups["c"][&TopicPartition::new("w", 4)],
            Some(CommittedOffset::new(5, ""))
        );
        assert!(!groups.contains_key("b"));
        v.apply(metadata("a", Some("connect")));
        assert_eq!(
            v.topics.id("u"),
            None,
            "a group left out releases its topics"
        );
        assert_eq!(v.groups().len(), 1);
    }

    #[test]
    fn filters_bound_what_is_kept() {
        let mut v = view();
        assert_eq!(
            v.apply(commit("ignored-1", "t", 0, Some(1))),
            Applied::Ignored
        );
        assert_eq!(
            v.apply(commit("g", "__internal", 0, Some(1))),
            Applied::Ignored
        );
        assert_eq!(v.partition_count(), 0);
    }

    #[test]
    fn groups_that_are_not_consumer_groups_are_left_out() {
        let mut v = view();
        v.apply(commit("w", "t", 0, Some(1)));
        v.take_changed();
        assert_eq!(
            v.apply(metadata("w", Some("connect"))),
            Applied::GroupMetadata
        );
        assert!(v.groups().is_empty());
        assert_eq!(v.apply(commit("w", "t", 0, Some(2))), Applied::Ignored);
        // A consumer group of the same name later (deleted and re-created).
        v.apply(metadata("w", None));
        assert_eq!(v.apply(commit("w", "t", 0, Some(3))), Applied::Committed);
        v.apply(metadata("w", Some("consumer")));
        assert_eq!(v.partition_count(), 1);
    }

    #[test]
    fn a_metadata_tombstone_keeps_the_offsets() {
        let mut v = view();
        v.apply(commit("g", "t", 0, Some(4)));
        v.apply(metadata("g", None));
        assert_eq!(v.partition_count(), 1);
    }

    #[test]
    fn new_syncs_mark_the_groups_of_their_partitions() {
        let mut v = view();
        v.apply(commit("a", "t", 0, Some(1)));
        v.apply(commit("b", "t", 1, Some(1)));
        v.take_changed();
        v.partitions_synced([&TopicPartition::new("t", 1), &TopicPartition::new("x", 0)]);
        let changed: Vec<String> = v.take_changed().into_keys().collect();
        assert_eq!(changed, ["b"]);
    }

    #[test]
    fn new_syncs_do_not_mark_groups_whose_commit_there_is_gone() {
        let mut v = view();
        v.apply(commit("a", "t", 0, Some(1)));
        v.apply(commit("a", "t", 1, Some(1)));
        v.apply(commit("b", "t", 1, Some(1)));
        v.apply(commit("c", "t", 1, Some(-1)));
        v.apply(commit("b", "t", 1, None));
        v.take_changed();
        v.partitions_synced([&TopicPartition::new("t", 1)]);
        let changed: Vec<String> = v.take_changed().into_keys().collect();
        // c's null offset is a commit held as ever (the round skips it).
        assert_eq!(changed, ["a", "c"], "b's commit was removed");
        v.partitions_synced([&TopicPartition::new("t", 2), &TopicPartition::new("u", 1)]);
        assert!(!v.has_changes());
    }

    #[test]
    fn a_negative_offset_is_a_null_offset() {
        let mut v = view();
        v.apply(commit("g", "t", 0, Some(-1)));
        assert_eq!(v.groups()["g"][&TopicPartition::new("t", 0)], None);
    }
}
