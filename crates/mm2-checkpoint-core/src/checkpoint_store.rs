//! The checkpoint store (docs/behaviour.md D.4): the last checkpoint produced per
//! (group, downstream topic-partition).
//!
//! It serves two purposes: the "last" checkpoint the monotonicity rule of an
//! emission round compares against (D.3), and the source of offsets for target group
//! sync (D.5).
//!
//! It is filled in two ways:
//! * **restore**: at start the driver feeds every record of the checkpoints topic,
//!   oldest first, to [`CheckpointStore::restore_record`]. The last record per key
//!   wins; records of groups this task is not assigned are ignored; tombstones and
//!   records that fail to decode are skipped and counted in [`RestoreStats`], never
//!   fatal (MM2 aborts its load on a tombstone, quirk H.6).
//! * **production results**: after an emission round the driver reports which
//!   checkpoints the broker acknowledged with [`CheckpointStore::on_produced`].
//!   Only those become "last". MM2 records a checkpoint *before* producing it, so a
//!   lost checkpoint is later suppressed as a repeat (quirk H.3); here a failed
//!   produce simply leaves the previous value in place and the next round retries.
//!
//! A tombstone (a valid key with a null value) is skipped, not applied as a delete:
//! MM2 never writes tombstones to this topic, so one can only come from an operator
//! or another tool, and keeping the last real checkpoint keeps the monotonicity
//! guarantee.

use std::collections::BTreeMap;

use super::filter::GroupFilter;
use super::format::{Checkpoint, CheckpointKey, DecodeError};
use super::name::{Name, by_name};
use super::topic_ids::TopicIds;
use super::types::TopicPartition;

/// Which groups a store is for.
#[derive(Clone, Debug, Default)]
enum Assignment {
    /// A fixed list (`task.assigned.groups`, the polling mode's discovery).
    #[default]
    Listed,
    /// Every group a filter accepts (the commit follower learns groups as they
    /// commit, so the store restores them all up front).
    Filter(GroupFilter),
}

/// The part of a checkpoint the store keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredCheckpoint {
    /// The group's committed offset on the source.
    pub upstream_offset: i64,
    /// The translated offset on the target.
    pub downstream_offset: i64,
    /// The group's commit metadata (8 bytes, and an empty one, the usual
    /// case, allocates nothing).
    pub metadata: Metadata,
}

/// Commit metadata as the store keeps it: one pointer, null when empty (as it
/// nearly always is), so that an entry takes 32 bytes instead of 40 (a
/// `Box<str>` is a pointer and a length). Reads as a `str`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Metadata(Option<Box<Box<str>>>);

impl Metadata {
    /// The metadata as a string slice ("" when empty).
    pub fn as_str(&self) -> &str {
        self.0.as_deref().map_or("", |s| &**s)
    }
}

impl From<&str> for Metadata {
    fn from(s: &str) -> Self {
        Metadata((!s.is_empty()).then(|| Box::new(Box::from(s))))
    }
}

impl std::ops::Deref for Metadata {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&Checkpoint> for StoredCheckpoint {
    fn from(cp: &Checkpoint) -> Self {
        StoredCheckpoint {
            upstream_offset: cp.upstream_offset,
            downstream_offset: cp.downstream_offset,
            metadata: cp.metadata.as_str().into(),
        }
    }
}

/// What [`CheckpointStore::restore_record`] did with one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// The checkpoint was stored (replacing any earlier one for its key).
    Restored,
    /// The checkpoint belongs to a group this task is not assigned; ignored.
    NotAssigned,
    /// The record was skipped because it could not be decoded (or was a tombstone).
    Skipped(DecodeError),
}

/// Counts of what a restore saw, by kind, for logs and metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreStats {
    /// Checkpoints stored.
    pub restored: u64,
    /// Checkpoints of groups not assigned to this task.
    pub not_assigned: u64,
    /// Records with a null key or value.
    pub tombstones: u64,
    /// Records with a checkpoint version other than 0.
    pub unsupported_version: u64,
    /// Records with bytes after the last field.
    pub trailing_bytes: u64,
    /// Records that are otherwise malformed (truncated, bad length, bad UTF-8,
    /// negative partition).
    pub malformed: u64,
}

impl RestoreStats {
    /// Records skipped for any decoding reason (tombstones included).
    pub fn skipped(&self) -> u64 {
        self.tombstones + self.unsupported_version + self.trailing_bytes + self.malformed
    }
}

/// One stored checkpoint: its downstream partition (the topic as the store's
/// id of its name) and the checkpoint; 32 bytes.
#[derive(Clone, Debug)]
struct Entry {
    topic: u32,
    partition: i32,
    checkpoint: StoredCheckpoint,
}

/// The last checkpoints of one group, sorted by downstream topic name then
/// partition.
///
/// A sorted vector rather than a map: a store holds one entry per group and
/// partition (a million at 100,000 groups × 10 partitions), and a vector of
/// compact entries that name their topic by a 4-byte id costs a fraction of a
/// tree of entries that each hold their topic name.
#[derive(Clone, Debug, Default)]
struct Group {
    entries: Vec<Entry>,
    /// The store's [`CheckpointStore::version`] when a checkpoint of this
    /// group last changed (0: never).
    version: u64,
}

impl Group {
    fn position(&self, topics: &TopicIds, topic: &str, partition: i32) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|e| (topics.name(e.topic), e.partition).cmp(&(topic, partition)))
    }

    /// Stores `checkpoint` for `tp`, holding a new entry's topic name in
    /// `topics`. `held` is the id of the topic the previous call held, if
    /// any: the same topic is then counted by id, without hashing its name.
    /// Whether the group changed (a new partition or another checkpoint).
    fn insert(
        &mut self,
        topics: &mut TopicIds,
        tp: &TopicPartition,
        checkpoint: StoredCheckpoint,
        held: &mut Option<u32>,
    ) -> bool {
        match self.position(topics, &tp.topic, tp.partition) {
            Ok(i) => {
                let changed = self.entries[i].checkpoint != checkpoint;
                self.entries[i].checkpoint = checkpoint;
                changed
            }
            Err(i) => {
                // Grow by an eighth, not double: most groups stop growing after
                // the first round, and doubling would leave up to half unused.
                if self.entries.len() == self.entries.capacity() {
                    self.entries.reserve_exact((self.entries.len() / 8).max(1));
                }
                let topic = match *held {
                    Some(id) if topics.name(id) == tp.topic => {
                        topics.hold_id(id);
                        id
                    }
                    _ => topics.hold(&tp.topic),
                };
                *held = Some(topic);
                let entry = Entry {
                    topic,
                    partition: tp.partition,
                    checkpoint,
                };
                self.entries.insert(i, entry);
                true
            }
        }
    }
}

/// The last checkpoints of one group, by downstream partition, as
/// [`CheckpointStore::group`] shows them.
#[derive(Clone, Copy, Debug)]
pub struct GroupCheckpoints<'a> {
    group: &'a Group,
    topics: &'a TopicIds,
}

impl<'a> GroupCheckpoints<'a> {
    /// The last checkpoint of downstream `topic` `partition`.
    pub fn get(&self, topic: &str, partition: i32) -> Option<&'a StoredCheckpoint> {
        let i = self.group.position(self.topics, topic, partition).ok()?;
        Some(&self.group.entries[i].checkpoint)
    }

    /// [`get`](Self::get) with the store's id of `topic`
    /// ([`CheckpointStore::topic_id`]): entries of that topic are compared
    /// by partition only, not by name.
    pub fn get_with_id(
        &self,
        topic: &str,
        id: u32,
        partition: i32,
    ) -> Option<&'a StoredCheckpoint> {
        let topics = self.topics;
        let i = self
            .group
            .entries
            .binary_search_by(|e| {
                if e.topic == id {
                    e.partition.cmp(&partition)
                } else {
                    (topics.name(e.topic), e.partition).cmp(&(topic, partition))
                }
            })
            .ok()?;
        Some(&self.group.entries[i].checkpoint)
    }

    /// Every checkpoint as (downstream topic, partition, checkpoint), sorted by
    /// topic then partition.
    pub fn iter(self) -> impl Iterator<Item = (&'a str, i32, &'a StoredCheckpoint)> + 'a {
        let topics = self.topics;
        self.group
            .entries
            .iter()
            .map(move |e| (topics.name(e.topic), e.partition, &e.checkpoint))
    }

    /// Number of checkpoints.
    pub fn len(&self) -> usize {
        self.group.entries.len()
    }

    /// True if the group has no checkpoint.
    pub fn is_empty(&self) -> bool {
        self.group.entries.is_empty()
    }

    /// The store's [`version`](CheckpointStore::version) when a checkpoint
    /// of this group last changed: a higher one later means it changed
    /// since.
    pub fn version(&self) -> u64 {
        self.group.version
    }
}

/// A group the store holds: whether it is assigned, and its checkpoints
/// (none yet for an assigned group not checkpointed).
#[derive(Clone, Debug, Default)]
struct Held {
    assigned: bool,
    group: Group,
}

impl Held {
    fn assigned() -> Self {
        Held {
            assigned: true,
            group: Group::default(),
        }
    }
}

/// Last produced checkpoint per (group, downstream topic-partition) for the groups a
/// task is assigned.
#[derive(Clone, Debug, Default)]
pub struct CheckpointStore {
    assignment: Assignment,
    /// Each assigned group, and each group holding a checkpoint, with its
    /// checkpoints: one map, so recording a group's checkpoints searches it
    /// once (docs/benchmarks.md, "Measurements behind the design").
    groups: BTreeMap<Name, Held>,
    /// The downstream topic names the entries hold, by id. Entries are never
    /// removed, so no id is ever released.
    topics: TopicIds,
    restore_stats: RestoreStats,
    produce_failures: u64,
    /// Counts the recordings that changed a group (restored or produced
    /// checkpoints that differ from the stored ones).
    version: u64,
}

impl CheckpointStore {
    /// An empty store for a task assigned `groups` (`task.assigned.groups`).
    pub fn new<G: Into<String>>(groups: impl IntoIterator<Item = G>) -> Self {
        CheckpointStore {
            groups: groups
                .into_iter()
                .map(|g| (Name::new(&g.into()), Held::assigned()))
                .collect(),
            ..CheckpointStore::default()
        }
    }

    /// An empty store for every group `filter` accepts (the commit follower's,
    /// docs/commit-follower.md section 2). Its assigned groups are the groups
    /// named by [`assign`](Self::assign) or restored from the checkpoints
    /// topic ([`restore_record`](Self::restore_record)); a group only
    /// produced for is held, not assigned.
    pub fn for_filter(filter: GroupFilter) -> Self {
        CheckpointStore {
            assignment: Assignment::Filter(filter),
            ..CheckpointStore::default()
        }
    }

    /// Adds `group` to the assigned groups of a store made by
    /// [`for_filter`](Self::for_filter), if the filter accepts it; a listed
    /// store's assignment is fixed and this does nothing.
    pub fn assign(&mut self, group: &str) {
        if let Assignment::Filter(f) = &self.assignment
            && f.should_replicate_group(group)
        {
            self.mark_assigned(group);
        }
    }

    /// Adds `group` to the assigned groups.
    fn mark_assigned(&mut self, group: &str) {
        match self.groups.get_mut(by_name(&group)) {
            Some(held) => held.assigned = true,
            None => {
                self.groups.insert(Name::new(group), Held::assigned());
            }
        }
    }

    /// Whether `group` is assigned to this task.
    pub fn is_assigned(&self, group: &str) -> bool {
        match &self.assignment {
            Assignment::Listed => self
                .groups
                .get(by_name(&group))
                .is_some_and(|held| held.assigned),
            Assignment::Filter(f) => f.should_replicate_group(group),
        }
    }

    /// The assigned groups, sorted.
    pub fn assigned_groups(&self) -> impl Iterator<Item = &str> {
        self.groups
            .iter()
            .filter(|(_, held)| held.assigned)
            .map(|(g, _)| &**g)
    }

    /// The groups a full group sync covers, sorted: every assigned group and
    /// every group holding a checkpoint, each with its checkpoints (`None`
    /// when it has none). One walk of the store, nothing allocated.
    pub fn sync_groups(&self) -> impl Iterator<Item = (&str, Option<GroupCheckpoints<'_>>)> {
        self.groups
            .iter()
            .filter(|(_, held)| held.assigned || !held.group.entries.is_empty())
            .map(|(g, Held { group, .. })| {
                let cps = (!group.entries.is_empty()).then_some(GroupCheckpoints {
                    group,
                    topics: &self.topics,
                });
                (&**g, cps)
            })
    }

    /// Applies one record of the checkpoints topic, read oldest first. Never fails:
    /// bad records are skipped and counted (see [`CheckpointStore::restore_stats`]).
    pub fn restore_record(&mut self, key: Option<&[u8]>, value: Option<&[u8]>) -> RestoreOutcome {
        let cp = match Checkpoint::decode(key, value) {
            Ok(cp) => cp,
            Err(err) => {
                let stats = &mut self.restore_stats;
                match err {
                    DecodeError::Null { .. } => stats.tombstones += 1,
                    DecodeError::UnsupportedVersion { .. } => stats.unsupported_version += 1,
                    DecodeError::TrailingBytes { .. } => stats.trailing_bytes += 1,
                    DecodeError::Truncated { .. }
                    | DecodeError::NegativeStringLength { .. }
                    | DecodeError::InvalidUtf8 { .. }
                    | DecodeError::NegativePartition { .. } => stats.malformed += 1,
                }
                return RestoreOutcome::Skipped(err);
            }
        };
        if !self.is_assigned(&cp.key.group) {
            self.restore_stats.not_assigned += 1;
            return RestoreOutcome::NotAssigned;
        }
        self.restore_stats.restored += 1;
        if matches!(self.assignment, Assignment::Filter(_)) {
            self.mark_assigned(&cp.key.group);
        }
        self.record_run(std::slice::from_ref(&cp));
        RestoreOutcome::Restored
    }

    /// What the restore has seen so far.
    pub fn restore_stats(&self) -> &RestoreStats {
        &self.restore_stats
    }

    /// Records `run`, checkpoints of one group: the group is looked up once
    /// for all of them.
    fn record_run(&mut self, run: &[Checkpoint]) {
        let Some(first) = run.first() else {
            return;
        };
        let group_name = first.key.group.as_str();
        let group = match self.groups.get_mut(by_name(&group_name)) {
            Some(held) => &mut held.group,
            // A group the store holds without being assigned it.
            None => {
                let held = self.groups.entry(Name::new(group_name)).or_default();
                &mut held.group
            }
        };
        if group.entries.is_empty() {
            // A group's first checkpoints (a first round): one allocation.
            group.entries.reserve_exact(run.len());
        }
        let mut held = None;
        let mut changed = false;
        for cp in run {
            changed |= group.insert(
                &mut self.topics,
                &cp.key.topic_partition,
                StoredCheckpoint::from(cp),
                &mut held,
            );
        }
        if changed {
            self.version += 1;
            group.version = self.version;
        }
    }

    /// This store, its versions counted on from `earlier` (the
    /// [`version`](Self::version) of a store it replaces): every group it
    /// records gets a version above the replaced store's, so a group sync
    /// that remembers versions of the replaced store reads each group of this
    /// one again once, and misses none of its changes.
    pub fn with_versions_after(mut self, earlier: u64) -> Self {
        self.version = self.version.max(earlier);
        self
    }

    /// How many recordings changed a group so far: each such recording
    /// gives its group this number as its
    /// [`GroupCheckpoints::version`], so the group sync can tell which
    /// groups changed since it last synced them (docs/translation.md,
    /// "Group sync").
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Records checkpoints the broker acknowledged. Call it in produce order: the
    /// last one reported per key becomes that key's "last" checkpoint.
    pub fn on_produced(&mut self, produced: &[Checkpoint]) {
        // A plan lists each group's checkpoints together: one run per group.
        let mut rest = produced;
        while let Some(first) = rest.first() {
            let group = first.key.group.as_str();
            let n = rest.iter().take_while(|cp| cp.key.group == group).count();
            let (run, tail) = rest.split_at(n);
            self.record_run(run);
            rest = tail;
        }
    }

    /// Notes checkpoints whose produce failed. Nothing is recorded for them, so the
    /// next emission round computes and emits them again.
    pub fn on_produce_failed(&mut self, failed: &[Checkpoint]) {
        self.produce_failures += failed.len() as u64;
    }

    /// Checkpoints reported through [`CheckpointStore::on_produce_failed`] so far.
    pub fn produce_failures(&self) -> u64 {
        self.produce_failures
    }

    /// The last checkpoint of `group` for downstream partition `tp`.
    pub fn get(&self, group: &str, tp: &TopicPartition) -> Option<&StoredCheckpoint> {
        self.group(group)?.get(&tp.topic, tp.partition)
    }

    /// The last checkpoint for `key`.
    pub fn last(&self, key: &CheckpointKey) -> Option<&StoredCheckpoint> {
        self.get(&key.group, &key.topic_partition)
    }

    /// The store's id of downstream topic `topic`, `None` if no checkpoint
    /// of it is stored (for [`GroupCheckpoints::get_with_id`]).
    pub fn topic_id(&self, topic: &str) -> Option<u32> {
        self.topics.id(topic)
    }

    /// All last checkpoints of `group`, by downstream partition.
    pub fn group(&self, group: &str) -> Option<GroupCheckpoints<'_>> {
        let group = &self.groups.get(by_name(&group))?.group;
        if group.entries.is_empty() {
            return None;
        }
        Some(GroupCheckpoints {
            group,
            topics: &self.topics,
        })
    }

    /// Every group with at least one checkpoint, sorted, with its checkpoints.
    pub fn groups(&self) -> impl Iterator<Item = (&str, GroupCheckpoints<'_>)> {
        let held = self.groups.iter();
        let with_checkpoints = held.filter(|(_, held)| !held.group.entries.is_empty());
        with_checkpoints.map(|(g, Held { group, .. })| {
            let cps = GroupCheckpoints {
                group,
                topics: &self.topics,
            };
            (&**g, cps)
        })
    }

    /// Every stored checkpoint as a record to produce again, by group then
    /// downstream partition (to rebuild a checkpoints topic that was lost).
    pub fn checkpoints(&self) -> impl Iterator<Item = Checkpoint> + '_ {
        self.groups().flat_map(|(group, cps)| {
            cps.iter().map(move |(topic, partition, cp)| Checkpoint {
                key: CheckpointKey {
                    group: group.to_owned(),
                    topic_partition: TopicPartition::new(topic, partition),
                },
                upstream_offset: cp.upstream_offset,
                downstream_offset: cp.downstream_offset,
                metadata: cp.metadata.to_string(),
            })
        })
    }

    /// Number of stored checkpoints.
    pub fn len(&self) -> usize {
        self.groups.values().map(|h| h.group.entries.len()).sum()
    }

    /// True if no checkpoint is stored.
    pub fn is_empty(&self) -> bool {
        self.groups.values().all(|h| h.group.entries.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(group: &str, topic: &str, p: i32, up: i64, down: i64) -> Checkpoint {
        Checkpoint {
            key: CheckpointKey {
                group: group.into(),
                topic_partition: TopicPartition::new(topic, p),
            },
            upstream_offset: up,
            downstream_offset: down,
            metadata: format!("m{up}"),
        }
    }

    fn restore(store: &mut CheckpointStore, cp: &Checkpoint) -> RestoreOutcome {
        let key = cp.encode_key().unwrap();
        let value = cp.encode_value().unwrap();
        store.restore_record(Some(&key), Some(&value))
    }

    #[test]
    fn d4_last_record_per_group_and_partition_wins() {
        let mut store = CheckpointStore::new(["g"]);
        restore(&mut store, &cp("g", "S.t", 0, 10, 5));
        restore(&mut store, &cp("g", "S.t", 1, 7, 7));
        restore(&mut store, &cp("g", "S.t", 0, 20, 15));
        let last = store.get("g", &TopicPartition::new("S.t", 0)).unwrap();
        assert_eq!((last.upstream_offset, last.downstream_offset), (20, 15));
        assert_eq!(&*last.metadata, "m20");
        assert_eq!(store.len(), 2);
        assert_eq!(store.restore_stats().restored, 3);
    }

    #[test]
    fn d4_only_assigned_groups_are_restored() {
        let mut store = CheckpointStore::new(["mine"]);
        assert_eq!(
            restore(&mut store, &cp("other", "t", 0, 1, 1)),
            RestoreOutcome::NotAssigned
        );
        assert_eq!(
            restore(&mut store, &cp("mine", "t", 0, 1, 1)),
            RestoreOutcome::Restored
        );
        assert!(store.group("other").is_none());
        assert_eq!(store.restore_stats().not_assigned, 1);
    }

    #[test]
    fn assigned_groups_and_groups_with_checkpoints_are_told_apart() {
        let names =
            |it: &mut dyn Iterator<Item = &str>| -> Vec<String> { it.map(str::to_owned).collect() };
        let mut listed = CheckpointStore::new(["b", "a"]);
        assert!(listed.group("a").is_none(), "assigned, no checkpoint yet");
        assert_eq!(listed.groups().count(), 0);
        assert!(listed.is_empty());
        listed.on_produced(&[cp("a", "t", 0, 1, 1), cp("c", "t", 0, 2, 2)]);
        assert_eq!(names(&mut listed.assigned_groups()), ["a", "b"]);
        assert!(listed.is_assigned("a") && listed.is_assigned("b"));
        assert!(!listed.is_assigned("c"), "held, not assigned");
        let with_checkpoints: Vec<&str> = listed.groups().map(|(g, _)| g).collect();
        assert_eq!(with_checkpoints, ["a", "c"]);
        assert_eq!(listed.len(), 2);
        listed.assign("d");
        assert!(
            !listed.is_assigned("d"),
            "a listed store's assignment is fixed"
        );

        let mut filtered =
            CheckpointStore::for_filter(GroupFilter::new(None, Some("x.*")).unwrap());
        filtered.on_produced(&[cp("c", "t", 0, 2, 2)]);
        assert_eq!(names(&mut filtered.assigned_groups()), Vec::<String>::new());
        filtered.assign("c");
        filtered.assign("a");
        filtered.assign("x1");
        restore(&mut filtered, &cp("e", "t", 0, 3, 3));
        assert_eq!(names(&mut filtered.assigned_groups()), ["a", "c", "e"]);
        let with_checkpoints: Vec<&str> = filtered.groups().map(|(g, _)| g).collect();
        assert_eq!(with_checkpoints, ["c", "e"]);
    }

    /// Quirk H.6: a tombstone aborts MM2's load. Here it is skipped and counted, and
    /// later records still load.
    #[test]
    fn h6_tombstones_are_skipped_and_counted_not_fatal() {
        let mut store = CheckpointStore::new(["g"]);
        let good = cp("g", "t", 0, 10, 5);
        let key = good.encode_key().unwrap();
        restore(&mut store, &good);
        assert!(matches!(
            store.restore_record(Some(&key), None),
            RestoreOutcome::Skipped(_)
        ));
        assert!(matches!(
            store.restore_record(None, None),
            RestoreOutcome::Skipped(_)
        ));
        restore(&mut store, &cp("g", "t", 1, 3, 3));
        assert_eq!(store.restore_stats().tombstones, 2);
        assert_eq!(
            store.len(),
            2,
            "tombstone did not delete and did not stop the load"
        );
    }

    #[test]
    fn d4_malformed_records_are_skipped_and_counted_by_kind() {
        let mut store = CheckpointStore::new(["g"]);
        let good = cp("g", "t", 0, 10, 5);
        let key = good.encode_key().unwrap();
        let value = good.encode_value().unwrap();
        let mut v1 = value.clone();
        v1[1] = 1;
        let mut trailing = value.clone();
        trailing.push(9);
        store.restore_record(Some(&key), Some(&v1));
        store.restore_record(Some(&key), Some(&trailing));
        store.restore_record(Some(&key), Some(&value[..5]));
        store.restore_record(Some(&[0xff, 0xff]), Some(&value));
        let stats = store.restore_stats();
        assert_eq!(stats.unsupported_version, 1);
        assert_eq!(stats.trailing_bytes, 1);
        assert_eq!(stats.malformed, 2);
        assert_eq!(stats.skipped(), 4);
        assert!(store.is_empty());
    }

    /// The store holds topics by id in the order it first sees them, yet
    /// lists a group's checkpoints (and the records to produce again) by topic
    /// name then partition, and finds each by name.
    #[test]
    fn d4_checkpoints_are_listed_by_topic_name_then_partition() {
        let mut store = CheckpointStore::new(["g", "h"]);
        store.on_produced(&[
            cp("h", "zeta", 1, 1, 1),
            cp("g", "zeta", 0, 2, 2),
            cp("g", "alpha", 10, 3, 3),
            cp("g", "alpha", 2, 4, 4),
            cp("g", "mid", 0, 5, 5),
        ]);
        let listed: Vec<(String, String, i32, i64)> = store
            .checkpoints()
            .map(|c| {
                let tp = c.key.topic_partition;
                (c.key.group, tp.topic, tp.partition, c.upstream_offset)
            })
            .collect();
        let expected = [
            ("g", "alpha", 2, 4),
            ("g", "alpha", 10, 3),
            ("g", "mid", 0, 5),
            ("g", "zeta", 0, 2),
            ("h", "zeta", 1, 1),
        ];
        let expected: Vec<(String, String, i32, i64)> = expected
            .iter()
            .map(|&(g, t, p, u)| (g.to_owned(), t.to_owned(), p, u))
            .collect();
        assert_eq!(listed, expected);
        for (g, t, p, u) in &expected {
            let last = store.get(g, &TopicPartition::new(t.as_str(), *p)).unwrap();
            assert_eq!(last.upstream_offset, *u);
            assert_eq!(&*last.metadata, format!("m{u}"));
        }
        assert!(store.get("g", &TopicPartition::new("beta", 0)).is_none());
        assert_eq!(store.group("g").map(|cps| cps.len()), Some(4));
    }

    /// Quirk H.3: MM2 stores a checkpoint before producing it. Here only an
    /// acknowledged produce moves "last".
    #[test]
    fn h3_only_produced_checkpoints_become_last() {
        let mut store = CheckpointStore::new(["g"]);
        let first = cp("g", "S.t", 0, 10, 5);
        store.on_produced(std::slice::from_ref(&first));
        let failed = cp("g", "S.t", 0, 20, 15);
        store.on_produce_failed(std::slice::from_ref(&failed));
        let last = store.get("g", &TopicPartition::new("S.t", 0)).unwrap();
        assert_eq!(
            last.downstream_offset, 5,
            "the failed checkpoint must not be last"
        );
        assert_eq!(store.produce_failures(), 1);
    }
}
