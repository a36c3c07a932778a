//! The offset-sync store: a bounded history of offset syncs per source partition,
//! and the translation of upstream offsets to downstream offsets (docs/behaviour.md C.2–C.5).
//!
//! MirrorMaker 2's source connector writes an *offset sync* `(upstream, downstream)`
//! for a source partition every so often. The checkpoint task reads them all and keeps,
//! per source partition, 64 slots of history: dense near the newest sync and
//! exponentially sparser further back. A consumer group's upstream offset is then
//! translated through the newest stored sync at or before it.
//!
//! The slot-update algorithm reproduces MM2's `OffsetSyncStore` step by step, because
//! the checkpoints we emit must match the ones MM2 would emit. Where MM2 compares syncs
//! by object identity, we compare by *entry*: each partition keeps its syncs in a small
//! fixed ring of 65 entries, and the 64 slots are one-byte indexes into it. A ring
//! entry is reused only once no slot refers to it, so two slots hold "the same sync"
//! exactly when they hold the same index, even when two different syncs carry equal
//! values. Nothing here allocates per sync; a partition costs one fixed-size box.
//!
//! The store is owned by one driver task and updated in place, so MM2's copy-on-write
//! publishing has no counterpart here. It is pure: the driver decodes offset-sync
//! records and feeds the values in with [`OffsetSyncStore::apply`].

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use super::sync_history::{Pushed, SyncHistory};
// OffsetSync lives in types.rs (sync_history.rs takes it too); named here as well,
// where the rest of the workspace imports it.
pub use super::types::OffsetSync;
use super::types::{OffsetTranslator, TopicPartition, Translation};

/// Number of history slots kept per source partition (MM2's `Long.SIZE`).
pub const SLOTS_PER_PARTITION: usize = 64;

/// Ring entries per partition: after an update the slots refer to at most 64 distinct
/// syncs, and the incoming sync needs one more entry while the algorithm still reads
/// the previous layout.
const RING_ENTRIES: usize = SLOTS_PER_PARTITION + 1;

/// Index of the last slot, the "generation floor".
const LAST_SLOT: usize = SLOTS_PER_PARTITION - 1;

/// How the syncs read before the end of the offset-syncs topic are used (docs/behaviour.md C.4).
///
/// MM2 chooses with `start(mustReadToEnd)`: it must read to the end, keeping only the
/// last sync per partition, when the previous checkpoints could not be loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitMode {
    /// MM2's `start(true)`, used when loading the checkpoints topic failed. During the
    /// initial read each sync replaces the whole history of its partition, so after it
    /// every partition holds only its last sync. Groups behind that sync are not
    /// translated until they pass it, so no checkpoint can go backwards relative to
    /// one an earlier task generation may have written.
    MustReadToEnd,
    /// MM2's `start(false)`, used when the checkpoints were loaded. Every historical
    /// sync goes through the normal algorithm, exactly as if it arrived live, so older
    /// offsets can be translated right after a restart.
    LoadAllHistory,
}

/// The 64 history slots of one source partition.
///
/// `slots[i]` indexes into `syncs`. Equal indexes mean the same sync (MM2's `==` on
/// `OffsetSync` objects); an entry not referenced by any slot is free.
#[derive(Clone, Debug)]
struct PartitionHistory {
    slots: [u8; SLOTS_PER_PARTITION],
    syncs: [OffsetSync; RING_ENTRIES],
}

impl PartitionHistory {
    /// A history whose every slot holds `first`.
    fn new(first: OffsetSync) -> Self {
        let mut syncs = [OffsetSync::default(); RING_ENTRIES];
        syncs[0] = first;
        Self {
            slots: [0; SLOTS_PER_PARTITION],
            syncs,
        }
    }

    #[inline(always)]
    fn sync(&self, entry: u8) -> OffsetSync {
        self.syncs[usize::from(entry)]
    }

    #[inline(always)]
    fn up(&self, entry: u8) -> i64 {
        self.sync(entry).upstream
    }

    /// A ring entry that no slot refers to. The slots name at most 64 of the 65
    /// entries, so there is always one. Tried from the entry after `after` (the
    /// newest sync's, round the ring): the entries written longest ago come first,
    /// and they are the ones the slots have most likely let go of, so the first or
    /// second try usually succeeds. Which free entry is taken is not observable:
    /// slots compare entries only for equality.
    fn free_entry(&self, after: u8) -> u8 {
        let mut entry = after;
        for _ in 0..RING_ENTRIES {
            entry = if usize::from(entry) + 1 >= RING_ENTRIES {
                0
            } else {
                entry + 1
            };
            if !self.refers_to(entry) {
                return entry;
            }
        }
        // Unreachable: 64 slots cannot name all 65 entries.
        after
    }

    /// Whether any slot holds `entry`: the 64 slots as eight words, each tested
    /// for a zero byte after XOR with `entry` in every byte (no branch per slot).
    fn refers_to(&self, entry: u8) -> bool {
        const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
        const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
        let pattern = ONES.wrapping_mul(u64::from(entry));
        let mut found = 0u64;
        for chunk in self.slots.chunks_exact(8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let x = u64::from_ne_bytes(word) ^ pattern;
            // Non-zero exactly when some byte of `x` is zero (exact as a whole,
            // only the position of the flag may be off).
            found |= x.wrapping_sub(ONES) & !x & HIGHS;
        }
        found != 0
    }

    /// MM2's invariant B between the sync in entry `a` at slot `i` and entry `b` at slot
    /// `j`: `a` is at most `2^j - 2^i` ahead of `b`, with a bound that overflows counting
    /// as satisfied. Wrapping arithmetic on purpose, as in Java.
    // Always inlined, like `up` and `invariant_c`: at the release build's opt-level
    // "s" they were calls in the slot update's loop, ~14 % of a catch-up's CPU
    // (docs/benchmarks.md, "Measurements behind the design").
    #[inline(always)]
    fn invariant_b(&self, a: u8, b: u8, i: usize, j: usize) -> bool {
        let bound = self
            .up(b)
            .wrapping_add(1i64.wrapping_shl(j as u32))
            .wrapping_sub(1i64.wrapping_shl(i as u32));
        a == b || bound < 0 || self.up(a) <= bound
    }

    /// MM2's invariant C between entry `a` at slot `i` and an older entry `b`: `a` is at
    /// least `2^max(i-2,0)` ahead of `b`; an overflowing bound fails.
    #[inline(always)]
    fn invariant_c(&self, a: u8, b: u8, i: usize) -> bool {
        let bound = self
            .up(b)
            .wrapping_add(1i64.wrapping_shl(i.saturating_sub(2) as u32));
        a == b || (bound >= 0 && self.up(a) >= bound)
    }

    /// Applies one sync (docs/behaviour.md C.3). `reset` forces the "fill all slots" branch, used
    /// during the initial read in [`InitMode::MustReadToEnd`]. Returns whether every
    /// older sync was discarded, so `sync` begins a new generation (invariant D):
    /// the one place that decides it, which the precise history follows.
    fn apply(&mut self, sync: OffsetSync, reset: bool) -> bool {
        if reset || sync.upstream < self.up(self.slots[0]) {
            // Upstream rewind (or load-only-last): all older history is invalid.
            // Nothing reads the old layout, so any entry will do: no search for
            // a free one (every slot holds the same entry, as before).
            self.syncs[0] = sync;
            self.slots = [0; SLOTS_PER_PARTITION];
            return true;
        }
        let fresh = self.free_entry(self.slots[0]);
        self.syncs[usize::from(fresh)] = sync;

        let old = self.slots;
        // `candidate` always satisfies the invariants at the current slot; `cursor`
        // walks `old` looking for an older sync worth keeping, never past `current`.
        let mut candidate = fresh;
        let mut cursor = 0usize;
        self.slots[0] = fresh;
        for current in 1..SLOTS_PER_PARTITION {
            let previous = current - 1;
            loop {
                let old_value = old[cursor];
                let prev_value = self.slots[previous];
                let recent = self.invariant_b(prev_value, old_value, previous, current);
                let separated_from_previous = self.invariant_c(prev_value, old_value, previous);
                // `self.slots[current + 1]` is still the old value here.
                let separated_from_next = current == LAST_SLOT
                    || self.invariant_c(old_value, self.slots[current + 1], current);
                let duplicate = cursor < LAST_SLOT && old[cursor + 1] == old_value;
                let promote = recent && separated_from_previous && separated_from_next;
                if promote {
                    candidate = old_value;
                }
                let skip = duplicate || !separated_from_previous;
                if promote || skip {
                    cursor += 1;
                }
                if !(cursor < current && skip) {
                    break;
                }
            }
            if self.invariant_b(self.slots[previous], self.slots[current], previous, current) {
                // Slot `current` is still recent enough, and then so are all later ones.
                break;
            }
            self.slots[current] = candidate;
        }
        false
    }

    /// docs/behaviour.md C.5, steps 3–5.
    fn translate(&self, upstream: i64) -> Translation {
        let sync = self
            .slots
            .iter()
            .map(|&entry| self.sync(entry))
            .find(|sync| sync.upstream <= upstream)
            .unwrap_or_else(|| self.sync(self.slots[LAST_SLOT]));
        translate_through(sync, upstream)
    }

    fn layout(&self) -> SlotLayout {
        SlotLayout {
            syncs: self.slots.map(|entry| self.sync(entry)),
            entries: self.slots,
        }
    }
}

/// Translates `upstream` through `sync`, the sync chosen for it (docs/behaviour.md C.5,
/// steps 4–5): the one rule both precisions share.
fn translate_through(sync: OffsetSync, upstream: i64) -> Translation {
    if sync.upstream > upstream {
        Translation::TooOld
    } else if sync.upstream == upstream {
        Translation::Translated(sync.downstream)
    } else {
        // Past the sync we only know the next record lands at or after
        // `downstream + 1`; anything more could skip records. Wrapping like Java.
        Translation::Translated(sync.downstream.wrapping_add(1))
    }
}

/// A snapshot of one partition's 64 slots, for tests, invariant checks and debug dumps.
///
/// Its `Display` form lists each run of slots holding the same sync as
/// `[first_slot..]=upstream:downstream`, e.g. `[0..]=16:16,[1..]=15:15,[2..]=0:0`.
/// Two layouts are equal when their slots hold equal values grouped in the same runs.
#[derive(Clone, Debug)]
pub struct SlotLayout {
    syncs: [OffsetSync; SLOTS_PER_PARTITION],
    entries: [u8; SLOTS_PER_PARTITION],
}

/// A run of adjacent slots that hold the same sync (see [`SlotLayout::runs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotRun {
    /// The first slot of the run.
    pub first_slot: usize,
    /// The sync every slot of the run holds.
    pub sync: OffsetSync,
}

impl SlotLayout {
    /// The sync in slot `slot`, or `None` if `slot >= 64`.
    pub fn slot(&self, slot: usize) -> Option<OffsetSync> {
        self.syncs.get(slot).copied()
    }

    /// All 64 slots, newest first.
    pub fn slots(&self) -> &[OffsetSync; SLOTS_PER_PARTITION] {
        &self.syncs
    }

    /// Whether slots `a` and `b` hold the same received sync (identity, not value:
    /// two syncs with equal offsets are still different syncs). `false` if either is
    /// out of range.
    pub fn same_sync(&self, a: usize, b: usize) -> bool {
        match (self.entries.get(a), self.entries.get(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }

    /// The runs of equal slots, newest first. Each run is one stored sync, since a sync
    /// that left the slots never comes back.
    pub fn runs(&self) -> Vec<SlotRun> {
        let mut runs: Vec<SlotRun> = Vec::new();
        for (slot, (&entry, &sync)) in self.entries.iter().zip(&self.syncs).enumerate() {
            if slot == 0 || self.entries[slot - 1] != entry {
                runs.push(SlotRun {
                    first_slot: slot,
                    sync,
                });
            }
        }
        runs
    }
}

impl PartialEq for SlotLayout {
    fn eq(&self, other: &Self) -> bool {
        // Ring indexes differ between stores; what matters is where the runs break.
        self.syncs == other.syncs
            && (1..SLOTS_PER_PARTITION)
                .all(|slot| self.same_sync(slot - 1, slot) == other.same_sync(slot - 1, slot))
    }
}

impl Eq for SlotLayout {}

impl fmt::Display for SlotLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, run) in self.runs().iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            write!(f, "[{}..]={}", run.first_slot, run.sync)?;
        }
        Ok(())
    }
}

/// How precisely the store translates (docs/translation.md, "Precise translation").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// MirrorMaker 2's 64 slots only: every answer is the one MM2 gives.
    Mm2,
    /// Besides the slots, every sync of each partition's current generation, up to
    /// `max_syncs` per partition: an offset is translated through the sync with the
    /// greatest upstream offset at or below it. Past the budget a partition drops its
    /// oldest syncs and answers offsets older than the oldest kept one from the slots.
    Precise {
        /// Syncs kept per source partition (at least 1).
        max_syncs: usize,
    },
}

/// What [`OffsetSyncStore::apply`] did besides storing the sync.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncApplied {
    /// The sync began a new generation of its partition: every older sync was
    /// discarded (first sync, upstream rewind, or the must-read-to-end initial read).
    pub restarted: bool,
    /// [`Precision::Precise`] only: the partition's history reached its budget and
    /// dropped its oldest sync, the first time since the generation began. Offsets
    /// older than the oldest kept sync are now translated with MM2's precision.
    pub fell_back: bool,
}

/// The precise histories of every partition (only with [`Precision::Precise`]).
#[derive(Debug)]
struct PreciseHistories {
    max_syncs: usize,
    /// Source topic → partition → history, the same partitions as the slots.
    topics: HashMap<Box<str>, HashMap<i32, SyncHistory>>,
    /// Partitions whose history dropped syncs for the budget.
    fallen_back: usize,
}

impl PreciseHistories {
    fn get(&self, topic: &str, partition: i32) -> Option<&SyncHistory> {
        self.topics.get(topic)?.get(&partition)
    }

    /// Follows the slots' decision for `sync`: a restart begins a new history.
    /// Returns whether the partition fell back (first drop of this generation).
    fn apply(&mut self, topic: &str, partition: i32, sync: OffsetSync, restarted: bool) -> bool {
        let partitions = match self.topics.get_mut(topic) {
            Some(partitions) => partitions,
            None => self.topics.entry(topic.into()).or_default(),
        };
        match partitions.entry(partition) {
            Entry::Vacant(slot) => {
                slot.insert(SyncHistory::new(sync));
                false
            }
            Entry::Occupied(mut history) => {
                let history = history.get_mut();
                if restarted {
                    if !history.is_complete() {
                        self.fallen_back -= 1;
                    }
                    history.restart(sync);
                    false
                } else if history.push(sync, self.max_syncs) == Pushed::FirstDrop {
                    self.fallen_back += 1;
                    true
                } else {
                    false
                }
            }
        }
    }

    fn remove_partition(&mut self, topic: &str, partition: i32) {
        if let Some(parts) = self.topics.get_mut(topic) {
            if let Some(h) = parts.remove(&partition)
                && !h.is_complete()
            {
                self.fallen_back -= 1;
            }
            if parts.is_empty() {
                self.topics.remove(topic);
            }
        }
    }

    fn remove_topic(&mut self, topic: &str) {
        if let Some(parts) = self.topics.remove(topic) {
            self.fallen_back -= parts.values().filter(|h| !h.is_complete()).count();
        }
    }
}

/// Partitions numbered below this may be found by number in a vector (Kafka numbers a
/// topic's partitions from 0 without gaps), others in a map.
const DENSE_PARTITIONS: usize = 4096;

/// How far past the vector's end a new partition may be and still extend it. The
/// vector grows by at most this many entries per partition stored, so it costs at most
/// 512 B more per history (of ~1.1 KiB) whatever numbers a broken or hostile writer
/// uses; a partition further out goes to the map, and moves into the vector once the
/// vector reaches it.
const DENSE_GAP: usize = 64;

/// The slot histories of one source topic's partitions.
#[derive(Debug)]
struct TopicHistories {
    name: Box<str>,
    /// Partition `p` at index `p`, for `0 <= p < dense.len()`.
    dense: Vec<Option<Box<PartitionHistory>>>,
    /// Every other partition: negative ones, those past the vector's end. Ordered,
    /// so those the vector reaches when it grows are found by range.
    sparse: BTreeMap<i32, Box<PartitionHistory>>,
    len: usize,
}

impl TopicHistories {
    fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            dense: Vec::new(),
            sparse: BTreeMap::new(),
            len: 0,
        }
    }

    /// `partition`'s index in `dense`, if it is kept there.
    fn dense_index(&self, partition: i32) -> Option<usize> {
        usize::try_from(partition)
            .ok()
            .filter(|&i| i < self.dense.len())
    }

    fn get(&self, partition: i32) -> Option<&PartitionHistory> {
        match self.dense_index(partition) {
            Some(i) => self.dense[i].as_deref(),
            None => self.sparse.get(&partition).map(|h| &**h),
        }
    }

    fn get_mut(&mut self, partition: i32) -> Option<&mut PartitionHistory> {
        match self.dense_index(partition) {
            Some(i) => self.dense[i].as_deref_mut(),
            None => self.sparse.get_mut(&partition).map(|h| &mut **h),
        }
    }

    /// Stores the first history of a partition that has none.
    fn insert(&mut self, partition: i32, history: PartitionHistory) {
        let history = Box::new(history);
        self.len += 1;
        if let Some(i) = self.dense_index(partition) {
            self.dense[i] = Some(history);
            return;
        }
        let old_len = self.dense.len();
        let extends = usize::try_from(partition)
            .ok()
            .filter(|&i| i < DENSE_PARTITIONS && i < old_len + DENSE_GAP);
        let Some(i) = extends else {
            self.sparse.insert(partition, history);
            return;
        };
        self.dense.resize_with(i + 1, || None);
        // Partitions kept in the map that the vector now reaches move into it
        // (`old_len..=i` fits in i32: `i` is below DENSE_PARTITIONS).
        let reached: Vec<i32> = self
            .sparse
            .range(old_len as i32..=i as i32)
            .map(|(&p, _)| p)
            .collect();
        for p in reached {
            self.dense[p as usize] = self.sparse.remove(&p);
        }
        self.dense[i] = Some(history);
    }

    fn remove(&mut self, partition: i32) -> bool {
        let removed = match self.dense_index(partition) {
            Some(i) => self.dense[i].take().is_some(),
            None => self.sparse.remove(&partition).is_some(),
        };
        if removed {
            self.len -= 1;
        }
        removed
    }

    fn partitions(&self) -> impl Iterator<Item = i32> + '_ {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter(|(_, h)| h.is_some())
            // Below DENSE_PARTITIONS, so it fits.
            .map(|(i, _)| i as i32);
        dense.chain(self.sparse.keys().copied())
    }
}

/// The offset syncs of every source partition seen on the offset-syncs topic, and the
/// translation of upstream offsets through them (docs/behaviour.md C.2–C.5).
///
/// Lifecycle: create it with [`new`](Self::new) (or
/// [`with_precision`](Self::with_precision)), [`apply`](Self::apply) every sync of
/// the initial read of the offset-syncs topic (from the beginning up to the end offsets
/// captured at start), call [`finish_initial_read`](Self::finish_initial_read), then keep
/// applying live syncs. Until the initial read is finished every translation is
/// [`Translation::NotReady`].
///
/// With [`Precision::Precise`] the store also keeps each partition's [`SyncHistory`].
/// It restarts exactly when the slots discard their older syncs (the slots decide,
/// the history follows), so it never holds a sync from before a rewind.
#[derive(Debug)]
pub struct OffsetSyncStore {
    mode: InitMode,
    initial_read_done: bool,
    /// Source topic → its index in `tables`. Looked up with the borrowed `&str`, so a
    /// sync for a known topic never allocates.
    topic_ids: HashMap<Box<str>, usize>,
    /// Each topic's partitions; `None` is a removed topic's index, free for reuse.
    tables: Vec<Option<TopicHistories>>,
    /// Indexes of `tables` that are `None`.
    free_tables: Vec<usize>,
    /// The index of the topic of the last sync applied: the syncs of one topic tend
    /// to come in runs, and a run needs no hashing.
    last_topic: usize,
    partitions: usize,
    precise: Option<PreciseHistories>,
}

impl OffsetSyncStore {
    /// An empty store whose initial read has not finished, translating with MM2's
    /// precision ([`Precision::Mm2`]).
    pub fn new(mode: InitMode) -> Self {
        Self::with_precision(mode, Precision::Mm2)
    }

    /// An empty store whose initial read has not finished, translating with
    /// `precision`. A `max_syncs` of 0 is taken as 1.
    pub fn with_precision(mode: InitMode, precision: Precision) -> Self {
        Self {
            mode,
            initial_read_done: false,
            topic_ids: HashMap::new(),
            tables: Vec::new(),
            free_tables: Vec::new(),
            last_topic: 0,
            partitions: 0,
            precise: match precision {
                Precision::Mm2 => None,
                Precision::Precise { max_syncs } => Some(PreciseHistories {
                    max_syncs: max_syncs.max(1),
                    topics: HashMap::new(),
                    fallen_back: 0,
                }),
            },
        }
    }

    /// The initialisation mode this store was created with.
    pub fn mode(&self) -> InitMode {
        self.mode
    }

    /// The precision this store translates with.
    pub fn precision(&self) -> Precision {
        match &self.precise {
            None => Precision::Mm2,
            Some(p) => Precision::Precise {
                max_syncs: p.max_syncs,
            },
        }
    }

    /// Marks the initial read of the offset-syncs topic as complete (MM2 sets
    /// `readToEnd`). From now on translations are answered and, in
    /// [`InitMode::MustReadToEnd`], syncs update the history instead of replacing it.
    /// Calling it again has no effect.
    pub fn finish_initial_read(&mut self) {
        self.initial_read_done = true;
    }

    /// Whether [`finish_initial_read`](Self::finish_initial_read) has been called.
    pub fn is_ready(&self) -> bool {
        self.initial_read_done
    }

    /// Applies one decoded offset sync for source partition `topic`-`partition`: the
    /// record at `upstream` was written at `downstream` on the target.
    ///
    /// Every call is a new sync, even if its values equal an earlier one. Any values
    /// are accepted (offsets are taken as MM2 takes them, with wrapping arithmetic);
    /// a smaller upstream offset than the newest sync's discards the partition's
    /// history. With [`Precision::Mm2`] it allocates only for the first sync of a
    /// partition; with [`Precision::Precise`] the history grows by an eighth at a time.
    pub fn apply(
        &mut self,
        topic: &str,
        partition: i32,
        upstream: i64,
        downstream: i64,
    ) -> SyncApplied {
        let sync = OffsetSync::new(upstream, downstream);
        let restarted = self.apply_slots(topic, partition, sync);
        let fell_back = self
            .precise
            .as_mut()
            .is_some_and(|p| p.apply(topic, partition, sync, restarted));
        SyncApplied {
            restarted,
            fell_back,
        }
    }

    /// MM2's update of the slots; returns whether `sync` began a new generation.
    fn apply_slots(&mut self, topic: &str, partition: i32, sync: OffsetSync) -> bool {
        let reset = !self.initial_read_done && self.mode == InitMode::MustReadToEnd;
        let table = self.table_for(topic);
        if let Some(history) = table.get_mut(partition) {
            return history.apply(sync, reset);
        }
        table.insert(partition, PartitionHistory::new(sync));
        self.partitions += 1;
        true
    }

    /// The partitions of `topic`, created empty for a new topic (the only time
    /// its name is allocated). Remembers it for the next sync.
    fn table_for(&mut self, topic: &str) -> &mut TopicHistories {
        let cached = self
            .tables
            .get(self.last_topic)
            .and_then(Option::as_ref)
            .is_some_and(|t| *t.name == *topic);
        if !cached {
            self.last_topic = match self.topic_ids.get(topic) {
                Some(&id) => id,
                None => {
                    let table = Some(TopicHistories::new(topic));
                    let id = match self.free_tables.pop() {
                        Some(id) => {
                            self.tables[id] = table;
                            id
                        }
                        None => {
                            self.tables.push(table);
                            self.tables.len() - 1
                        }
                    };
                    self.topic_ids.insert(topic.into(), id);
                    id
                }
            };
        }
        self.tables[self.last_topic].get_or_insert_with(|| TopicHistories::new(topic))
    }

    fn table(&self, topic: &str) -> Option<&TopicHistories> {
        self.tables.get(*self.topic_ids.get(topic)?)?.as_ref()
    }

    /// [`apply`](Self::apply) for a [`TopicPartition`].
    pub fn apply_sync(&mut self, tp: &TopicPartition, sync: OffsetSync) -> SyncApplied {
        self.apply(&tp.topic, tp.partition, sync.upstream, sync.downstream)
    }

    /// Translates upstream offset `upstream` of source partition `topic`-`partition`
    /// (docs/behaviour.md C.5):
    /// * [`Translation::NotReady`] before [`finish_initial_read`](Self::finish_initial_read);
    /// * [`Translation::NoSync`] if no sync was ever applied for the partition (or it
    ///   was removed);
    /// * [`Translation::TooOld`] if `upstream` is older than every stored sync (MM2's -1);
    /// * otherwise [`Translation::Translated`] through the newest sync at or before
    ///   `upstream`: its downstream offset if `upstream` equals the sync's, else that
    ///   plus one.
    ///
    /// With [`Precision::Precise`] the stored syncs are the partition's history, and
    /// the slots for an offset older than the oldest sync the history kept.
    pub fn translate_offset(&self, topic: &str, partition: i32, upstream: i64) -> Translation {
        if !self.initial_read_done {
            return Translation::NotReady;
        }
        let Some(history) = self.history(topic, partition) else {
            return Translation::NoSync;
        };
        let precise = self
            .precise
            .as_ref()
            .and_then(|p| p.get(topic, partition))
            .and_then(|h| h.floor(upstream));
        match precise {
            Some(sync) => translate_through(sync, upstream),
            None => history.translate(upstream),
        }
    }

    /// With [`Precision::Precise`], after the initial read: replaces the history
    /// of `topic`-`partition` with `syncs` (oldest first, one generation: upstream
    /// offsets never decrease), keeping the newest within the budget. `complete`
    /// says whether `syncs` begin with the generation's first sync. Used to
    /// restore a history kept in the sync-history topic (docs/translation.md,
    /// "Restarts and compaction"); whether that is safe is
    /// [`ArchiveRestore`](super::sync_archive::ArchiveRestore)'s decision.
    ///
    /// Refused (`None`, nothing changed) with [`Precision::Mm2`], before the
    /// initial read ends, for a partition without slots, for empty or
    /// disordered `syncs`, or when their newest is not the slots' newest sync.
    /// Otherwise returns whether the partition is now past its budget.
    pub fn restore_history(
        &mut self,
        topic: &str,
        partition: i32,
        syncs: &[OffsetSync],
        complete: bool,
    ) -> Option<bool> {
        if !self.initial_read_done {
            return None;
        }
        let newest = self.history(topic, partition)?.layout().slot(0)?;
        let precise = self.precise.as_mut()?;
        let (first, rest) = syncs.split_first()?;
        if syncs.last() != Some(&newest) || syncs.windows(2).any(|w| w[1].upstream < w[0].upstream)
        {
            return None;
        }
        let mut history = SyncHistory::new(*first);
        for s in rest {
            history.push(*s, precise.max_syncs);
        }
        if !complete {
            history.mark_incomplete();
        }
        let fell_back = !history.is_complete();
        let parts = precise.topics.entry(topic.into()).or_default();
        if let Some(old) = parts.insert(partition, history)
            && !old.is_complete()
        {
            precise.fallen_back -= 1;
        }
        if fell_back {
            precise.fallen_back += 1;
        }
        Some(fell_back)
    }

    /// With [`Precision::Precise`]: the syncs held for `topic`-`partition`, oldest
    /// first (`None` with [`Precision::Mm2`] or for an unknown partition).
    pub fn precise_history(&self, topic: &str, partition: i32) -> Option<&SyncHistory> {
        self.precise.as_ref()?.get(topic, partition)
    }

    /// Number of partitions whose precise history reached its budget and dropped
    /// syncs since their generation began (0 with [`Precision::Mm2`]).
    pub fn fallen_back_partitions(&self) -> usize {
        self.precise.as_ref().map_or(0, |p| p.fallen_back)
    }

    /// Number of syncs held in precise histories, over every partition.
    pub fn precise_syncs(&self) -> usize {
        self.precise.as_ref().map_or(0, |p| {
            p.topics
                .values()
                .flat_map(HashMap::values)
                .map(SyncHistory::len)
                .sum()
        })
    }

    /// Number of source partitions that have a history.
    pub fn partition_count(&self) -> usize {
        self.partitions
    }

    /// The source partitions that have a history, in no particular order.
    pub fn partitions(&self) -> impl Iterator<Item = (&str, i32)> + '_ {
        self.tables
            .iter()
            .flatten()
            .flat_map(|t| t.partitions().map(move |p| (&*t.name, p)))
    }

    /// A snapshot of the 64 slots of `topic`-`partition`, or `None` if it has no history.
    pub fn layout(&self, topic: &str, partition: i32) -> Option<SlotLayout> {
        self.history(topic, partition).map(PartitionHistory::layout)
    }

    /// Every sync held for `topic`-`partition`: its slots and, with
    /// [`Precision::Precise`], its history, unordered and with repeats; `None`
    /// if it has no history. What reverse translation and the cutover
    /// decisions read (docs/translation.md, "Reverse translation").
    pub fn known_syncs(&self, topic: &str, partition: i32) -> Option<Vec<OffsetSync>> {
        let layout = self.layout(topic, partition)?;
        let mut syncs: Vec<OffsetSync> = layout.slots().to_vec();
        if let Some(history) = self.precise_history(topic, partition) {
            syncs.extend(history.syncs());
        }
        Some(syncs)
    }

    /// Forgets the history of `topic`-`partition`, e.g. when the partition no longer
    /// exists upstream. Later translations give [`Translation::NoSync`] until a new
    /// sync arrives, which then starts a fresh history. Returns whether it had one.
    pub fn remove_partition(&mut self, topic: &str, partition: i32) -> bool {
        let Some(&id) = self.topic_ids.get(topic) else {
            return false;
        };
        let Some(parts) = self.tables.get_mut(id).and_then(Option::as_mut) else {
            return false;
        };
        let removed = parts.remove(partition);
        if removed {
            self.partitions -= 1;
        }
        if parts.len == 0 {
            self.drop_table(topic);
        }
        if let Some(p) = &mut self.precise {
            p.remove_partition(topic, partition);
        }
        removed
    }

    /// Forgets the history of every partition of `topic`, e.g. when the source topic
    /// was deleted. Returns how many partitions were dropped.
    pub fn remove_topic(&mut self, topic: &str) -> usize {
        let removed = self.drop_table(topic);
        self.partitions -= removed;
        if let Some(p) = &mut self.precise {
            p.remove_topic(topic);
        }
        removed
    }

    /// Heap bytes a single partition's history takes, excluding map overhead.
    pub const fn history_bytes() -> usize {
        std::mem::size_of::<PartitionHistory>()
    }

    /// Rough estimate of the heap bytes this store holds: histories (slots and, with
    /// [`Precision::Precise`], the syncs' allocated capacity), hash-table
    /// buckets (taken as capacity × 8/7, hashbrown's load factor, plus one control byte
    /// each) and topic names. Allocator overhead is not included.
    pub fn approx_heap_bytes(&self) -> usize {
        fn table<K, V>(capacity: usize) -> usize {
            let buckets = capacity.saturating_mul(8) / 7;
            buckets.saturating_mul(std::mem::size_of::<(K, V)>() + 1)
        }
        let mut bytes = table::<Box<str>, usize>(self.topic_ids.capacity())
            + self.tables.capacity() * std::mem::size_of::<Option<TopicHistories>>()
            + self.free_tables.capacity() * std::mem::size_of::<usize>();
        for parts in self.tables.iter().flatten() {
            // The name is kept twice: as the key of `topic_ids` and in the table.
            bytes += 2 * parts.name.len();
            bytes += parts.dense.capacity() * std::mem::size_of::<Option<Box<PartitionHistory>>>();
            // The B-tree's entries (its nodes' overhead is not counted).
            bytes += parts.sparse.len() * std::mem::size_of::<(i32, Box<PartitionHistory>)>();
            bytes += parts.len * Self::history_bytes();
        }
        if let Some(p) = &self.precise {
            bytes += table::<Box<str>, HashMap<i32, SyncHistory>>(p.topics.capacity());
            for (topic, parts) in &p.topics {
                bytes += topic.len();
                bytes += table::<i32, SyncHistory>(parts.capacity());
                bytes += parts.values().map(SyncHistory::heap_bytes).sum::<usize>();
            }
        }
        bytes
    }

    fn history(&self, topic: &str, partition: i32) -> Option<&PartitionHistory> {
        self.table(topic)?.get(partition)
    }

    /// Drops `topic`'s table (its index is reused by a later topic); returns how
    /// many partitions it had.
    fn drop_table(&mut self, topic: &str) -> usize {
        let Some(id) = self.topic_ids.remove(topic) else {
            return 0;
        };
        self.free_tables.push(id);
        self.tables
            .get_mut(id)
            .and_then(Option::take)
            .map_or(0, |t| t.len)
    }
}

impl OffsetTranslator for OffsetSyncStore {
    fn translate(&self, tp: &TopicPartition, upstream: i64) -> Translation {
        self.translate_offset(&tp.topic, tp.partition, upstream)
    }
}

#[cfg(test)]
mod precise_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TOPIC: &str = "topic";

    /// A store started like the golden vectors of docs/behaviour.md C.6: `start(true)`, then fed live.
    fn live_store() -> OffsetSyncStore {
        let mut store = OffsetSyncStore::new(InitMode::MustReadToEnd);
        store.finish_initial_read();
        store
    }

    fn feed(store: &mut OffsetSyncStore, syncs: &[(i64, i64)]) {
        for &(up, down) in syncs {
            store.apply(TOPIC, 0, up, down);
        }
    }

    fn layout(store: &OffsetSyncStore) -> SlotLayout {
        store.layout(TOPIC, 0).expect("partition has a history")
    }

    /// The notation of docs/behaviour.md C.6: `[k..]=U` when downstream equals upstream, else `U:D`.
    fn spec_notation(layout: &SlotLayout) -> String {
        layout
            .runs()
            .iter()
            .map(|run| {
                let sync = run.sync;
                if sync.upstream == sync.downstream {
                    format!("[{}..]={}", run.first_slot, sync.upstream)
                } else {
                    format!(
                        "[{}..]={}:{}",
                        run.first_slot, sync.upstream, sync.downstream
                    )
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    fn translate(store: &OffsetSyncStore, upstream: i64) -> Translation {
        store.translate(&TopicPartition::new(TOPIC, 0), upstream)
    }

    /// Asserts `translate(u) == Translated(d)` for every `(u, d)`; `d == -1` means TooOld.
    fn assert_translations(store: &OffsetSyncStore, table: &[(i64, i64)]) {
        for &(u, d) in table {
            let expected = if d == -1 {
                Translation::TooOld
            } else {
                Translation::Translated(d)
            };
            assert_eq!(translate(store, u), expected, "translate({u})");
        }
    }

    #[test]
    fn first_sync_fills_all_slots() {
        let mut store = live_store();
        feed(&mut store, &[(42, 7)]);
        let layout = layout(&store);
        assert_eq!(layout.to_string(), "[0..]=42:7");
        assert!(layout.same_sync(0, 63));
        assert_eq!(store.partition_count(), 1);
    }

    #[test]
    fn consecutive_syncs_produce_the_golden_layouts() {
        let expected: &[(i64, &str)] = &[
            (0, "[0..]=0"),
            (1, "[0..]=1,[1..]=0"),
            (2, "[0..]=2,[1..]=1,[2..]=0"),
            (3, "[0..]=3,[1..]=2,[2..]=0"),
            (4, "[0..]=4,[1..]=3,[2..]=2,[3..]=0"),
            (5, "[0..]=5,[1..]=4,[2..]=2,[3..]=0"),
            (6, "[0..]=6,[1..]=5,[2..]=4,[3..]=0"),
            (7, "[0..]=7,[1..]=6,[2..]=4,[3..]=0"),
            (8, "[0..]=8,[1..]=7,[2..]=6,[3..]=4,[4..]=0"),
            (12, "[0..]=12,[1..]=11,[2..]=10,[3..]=8,[4..]=0"),
            (16, "[0..]=16,[1..]=15,[2..]=14,[3..]=12,[4..]=8,[5..]=0"),
        ];
        let mut store = live_store();
        let mut checked = 0;
        for offset in 0..=16 {
            feed(&mut store, &[(offset, offset)]);
            if let Some((_, want)) = expected.iter().find(|(at, _)| *at == offset) {
                assert_eq!(spec_notation(&layout(&store)), *want, "after sync {offset}");
                checked += 1;
            }
        }
        assert_eq!(checked, expected.len());
    }

    const SPACED_BY_10: &str =
        "[0..]=1000,[5..]=990,[6..]=960,[7..]=900,[8..]=840,[9..]=720,[10..]=480,[11..]=0";

    fn spaced(step: i64, last: i64) -> Vec<(i64, i64)> {
        (0..=last / step).map(|n| (n * step, n * step)).collect()
    }

    #[test]
    fn syncs_spaced_by_10_fed_live_produce_the_golden_layout() {
        let mut store = live_store();
        feed(&mut store, &spaced(10, 1000));
        assert_eq!(spec_notation(&layout(&store)), SPACED_BY_10);
    }

    #[test]
    fn load_all_history_initial_read_equals_live_feeding() {
        let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
        feed(&mut store, &spaced(10, 1000));
        store.finish_initial_read();
        assert_eq!(spec_notation(&layout(&store)), SPACED_BY_10);
    }

    #[test]
    fn syncs_spaced_by_100_fed_live_produce_the_golden_layout() {
        let mut store = live_store();
        feed(&mut store, &spaced(100, 100_000));
        assert_eq!(
            spec_notation(&layout(&store)),
            "[0..]=100000,[8..]=99900,[9..]=99800,[10..]=99600,[11..]=99200,[12..]=97600,\
             [13..]=96000,[14..]=89600,[15..]=76800,[16..]=51200,[17..]=0"
        );
    }

    #[test]
    fn evicted_sync_is_not_used_for_translation() {
        let mut store = live_store();
        feed(&mut store, &[(0, 0), (10, 5), (20, 9), (30, 30)]);
        assert_eq!(
            spec_notation(&layout(&store)),
            "[0..]=30,[5..]=20:9,[6..]=0"
        );
        assert_translations(
            &store,
            &[
                (0, 0),
                (1, 1),
                (9, 1),
                (10, 1),
                (11, 1),
                (19, 1),
                (20, 9),
                (21, 10),
                (29, 10),
                (30, 30),
                (31, 31),
                (100, 31),
            ],
        );
    }

    const INITIAL_READ: &[(i64, i64)] = &[(100, 1000), (50, 500), (200, 2000)];

    #[test]
    fn must_read_to_end_keeps_only_the_last_sync_of_the_initial_read() {
        let mut store = OffsetSyncStore::new(InitMode::MustReadToEnd);
        feed(&mut store, INITIAL_READ);
        store.finish_initial_read();
        assert_eq!(layout(&store).to_string(), "[0..]=200:2000");
        assert_translations(&store, &[(150, -1), (200, 2000), (250, 2001)]);
    }

    #[test]
    fn load_all_history_treats_a_smaller_upstream_offset_as_a_rewind() {
        let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
        feed(&mut store, INITIAL_READ);
        store.finish_initial_read();
        assert_eq!(layout(&store).to_string(), "[0..]=200:2000,[9..]=50:500");
        assert_translations(
            &store,
            &[(49, -1), (50, 500), (150, 501), (200, 2000), (250, 2001)],
        );
    }

    #[test]
    fn syncs_with_equal_values_are_distinct_syncs() {
        let mut store = live_store();
        feed(
            &mut store,
            &[(0, 0), (4, 4), (4, 4), (8, 8), (8, 9), (9, 10)],
        );
        assert_eq!(
            spec_notation(&layout(&store)),
            "[0..]=9:10,[1..]=8,[3..]=4,[4..]=0"
        );
        assert_translations(
            &store,
            &[(0, 0), (3, 1), (4, 4), (5, 5), (8, 8), (9, 10), (10, 11)],
        );
    }

    #[test]
    fn downstream_truncation_is_not_a_reset() {
        // MM2 behaviour kept on purpose (docs/behaviour.md H.8): older syncs still point into the
        // truncated downstream log.
        let mut store = live_store();
        feed(&mut store, &[(100, 200), (150, 251), (200, 10)]);
        assert_translations(&store, &[(150, 251), (200, 10)]);
    }

    #[test]
    fn upstream_rewind_after_start_discards_all_history() {
        let mut store = live_store();
        feed(&mut store, &spaced(10, 1000));
        feed(&mut store, &[(5, 3)]);
        assert_eq!(layout(&store).to_string(), "[0..]=5:3");
        assert_translations(&store, &[(4, -1), (5, 3), (990, 4)]);
    }

    #[test]
    fn must_read_to_end_uses_the_normal_algorithm_after_the_initial_read() {
        let mut store = OffsetSyncStore::new(InitMode::MustReadToEnd);
        feed(&mut store, &[(0, 0)]);
        store.finish_initial_read();
        feed(&mut store, &spaced(10, 1000)[1..]);
        assert_eq!(spec_notation(&layout(&store)), SPACED_BY_10);
    }

    #[test]
    fn translations_are_not_ready_until_the_initial_read_finishes() {
        for mode in [InitMode::MustReadToEnd, InitMode::LoadAllHistory] {
            let mut store = OffsetSyncStore::new(mode);
            feed(&mut store, &[(10, 20)]);
            assert!(!store.is_ready());
            assert_eq!(translate(&store, 10), Translation::NotReady, "{mode:?}");
            assert_eq!(
                store.translate(&TopicPartition::new("unknown", 3), 10),
                Translation::NotReady,
                "{mode:?}"
            );
            store.finish_initial_read();
            assert!(store.is_ready());
            assert_eq!(
                translate(&store, 10),
                Translation::Translated(20),
                "{mode:?}"
            );
        }
    }

    #[test]
    fn partition_without_syncs_is_no_sync() {
        let mut store = live_store();
        feed(&mut store, &[(10, 20)]);
        assert_eq!(
            store.translate(&TopicPartition::new(TOPIC, 1), 10),
            Translation::NoSync
        );
        assert_eq!(
            store.translate(&TopicPartition::new("other", 0), 10),
            Translation::NoSync
        );
    }

    #[test]
    fn offset_before_the_oldest_sync_is_too_old() {
        let mut store = live_store();
        feed(&mut store, &[(10, 20)]);
        assert_eq!(translate(&store, 9), Translation::TooOld);
    }

    #[test]
    fn offset_at_a_sync_translates_exactly_and_past_it_plus_one() {
        let mut store = live_store();
        feed(&mut store, &[(10, 20)]);
        assert_eq!(translate(&store, 10), Translation::Translated(20));
        assert_eq!(translate(&store, 11), Translation::Translated(21));
        assert_eq!(translate(&store, 1_000_000), Translation::Translated(21));
    }

    #[test]
    fn translation_works_through_the_trait_object() {
        let mut store = live_store();
        feed(&mut store, &[(10, 20)]);
        let translator: &dyn OffsetTranslator = &store;
        assert_eq!(
            translator.translate(&TopicPartition::new(TOPIC, 0), 12),
            Translation::Translated(21)
        );
    }

    #[test]
    fn partitions_are_tracked_independently() {
        let mut store = live_store();
        store.apply("a", 0, 10, 100);
        store.apply("a", 1, 20, 200);
        store.apply_sync(&TopicPartition::new("b", 0), OffsetSync::new(30, 300));
        assert_eq!(store.partition_count(), 3);
        let mut seen: Vec<(String, i32)> =
            store.partitions().map(|(t, p)| (t.to_owned(), p)).collect();
        seen.sort();
        assert_eq!(seen, [("a".into(), 0), ("a".into(), 1), ("b".into(), 0)]);
        assert_eq!(
            store.translate_offset("a", 1, 20),
            Translation::Translated(200)
        );
        assert_eq!(
            store.translate_offset("b", 0, 31),
            Translation::Translated(301)
        );
    }

    #[test]
    fn removed_partition_has_no_sync_and_restarts_fresh() {
        let mut store = live_store();
        store.apply("a", 0, 10, 100);
        store.apply("a", 1, 20, 200);
        assert!(store.remove_partition("a", 0));
        assert!(!store.remove_partition("a", 0));
        assert_eq!(store.partition_count(), 1);
        assert_eq!(store.translate_offset("a", 0, 10), Translation::NoSync);
        // A new sync with a lower offset is a fresh start, not compared to the old one.
        store.apply("a", 0, 5, 50);
        assert_eq!(
            store.layout("a", 0).map(|l| l.to_string()).as_deref(),
            Some("[0..]=5:50")
        );
        assert_eq!(store.partition_count(), 2);
    }

    #[test]
    fn removed_topic_drops_all_its_partitions() {
        let mut store = live_store();
        store.apply("a", 0, 10, 100);
        store.apply("a", 1, 20, 200);
        store.apply("b", 0, 30, 300);
        assert_eq!(store.remove_topic("a"), 2);
        assert_eq!(store.remove_topic("a"), 0);
        assert_eq!(store.partition_count(), 1);
        assert_eq!(store.translate_offset("a", 1, 20), Translation::NoSync);
        assert_eq!(
            store.translate_offset("b", 0, 30),
            Translation::Translated(300)
        );
    }

    #[test]
    fn partitions_far_apart_or_out_of_order_are_found_and_cost_no_large_vector() {
        // One sync each for partition 4095 of 1,000 topics (a broken or hostile
        // writer): no 32 KiB vector per topic.
        let mut store = live_store();
        for t in 0..1_000 {
            store.apply(&format!("t{t}"), 4095, 5, 50);
        }
        let per_topic = store.approx_heap_bytes() / 1_000;
        assert!(
            per_topic < OffsetSyncStore::history_bytes() + 1_024,
            "{per_topic} B per topic"
        );
        assert_eq!(
            store.translate_offset("t999", 4095, 5),
            Translation::Translated(50)
        );
        // Partitions arriving from the top down, with gaps: each keeps its own
        // history, wherever it is kept, as the vector grows past those kept
        // in the map.
        let order: Vec<i32> = (0..300).rev().step_by(3).chain(0..300).collect();
        let mut store = live_store();
        for &p in &order {
            if store.translate_offset("x", p, 0) == Translation::NoSync {
                store.apply("x", p, i64::from(p), 1_000 + i64::from(p));
            }
        }
        assert_eq!(store.partition_count(), 300);
        for p in 0..300 {
            assert_eq!(
                store.translate_offset("x", p, i64::from(p)),
                Translation::Translated(1_000 + i64::from(p)),
                "partition {p}"
            );
        }
        for p in (0..300).step_by(7) {
            assert!(store.remove_partition("x", p));
            assert_eq!(
                store.translate_offset("x", p, i64::from(p)),
                Translation::NoSync
            );
        }
    }

    #[test]
    fn any_partition_number_and_a_removed_topics_reused_table_keep_their_own_histories() {
        let mut store = live_store();
        // Dense, beyond the dense range, negative and the extremes.
        let parts = [0, 3, 4095, 4096, 1_000_000, -1, i32::MIN, i32::MAX];
        for (n, &p) in parts.iter().enumerate() {
            store.apply("a", p, 10 + n as i64, 100 + n as i64);
            store.apply("b", p, 20 + n as i64, 200 + n as i64);
        }
        assert_eq!(store.partition_count(), 2 * parts.len());
        let mut listed: Vec<(String, i32)> =
            store.partitions().map(|(t, p)| (t.to_owned(), p)).collect();
        listed.sort();
        let mut expected: Vec<(String, i32)> = ["a", "b"]
            .iter()
            .flat_map(|t| parts.iter().map(|&p| (t.to_string(), p)))
            .collect();
        expected.sort();
        assert_eq!(listed, expected);
        // "a" goes; "c" takes its table, and starts empty.
        assert_eq!(store.remove_topic("a"), parts.len());
        store.apply("c", 3, 5, 50);
        assert_eq!(store.partition_count(), parts.len() + 1);
        assert_eq!(
            store.translate_offset("c", 3, 5),
            Translation::Translated(50)
        );
        assert_eq!(store.translate_offset("c", 0, 5), Translation::NoSync);
        assert_eq!(store.translate_offset("a", 3, 11), Translation::NoSync);
        for (n, &p) in parts.iter().enumerate() {
            let up = 20 + n as i64;
            assert_eq!(
                store.translate_offset("b", p, up),
                Translation::Translated(200 + n as i64)
            );
        }
        // Removing the last partition of a topic drops the topic; a sync brings it back.
        assert!(store.remove_partition("c", 3));
        assert!(!store.remove_partition("c", 3));
        assert_eq!(store.translate_offset("c", 3, 5), Translation::NoSync);
        store.apply("c", 3, 7, 70);
        assert_eq!(
            store.translate_offset("c", 3, 7),
            Translation::Translated(70)
        );
        assert!(store.remove_partition("b", i32::MIN));
        assert_eq!(
            store.translate_offset("b", i32::MIN, 26),
            Translation::NoSync
        );
        assert_eq!(store.partition_count(), parts.len());
    }

    #[test]
    fn extreme_offsets_wrap_like_java_instead_of_panicking() {
        let mut store = live_store();
        feed(
            &mut store,
            &[
                (i64::MIN, i64::MIN),
                (-1, 0),
                (i64::MAX - 1, i64::MAX),
                (i64::MAX, 0),
            ],
        );
        assert_eq!(translate(&store, i64::MAX), Translation::Translated(0));
        let mut store = live_store();
        feed(&mut store, &[(0, i64::MAX)]);
        assert_eq!(translate(&store, 1), Translation::Translated(i64::MIN));
    }

    #[test]
    fn ten_thousand_partitions_fit_in_about_twelve_megabytes() {
        let mut store = live_store();
        for topic in 0..100 {
            let name = format!("source-topic-{topic}");
            for partition in 0..100 {
                store.apply(&name, partition, 1_000, 2_000);
            }
        }
        assert_eq!(store.partition_count(), 10_000);
        let bytes = store.approx_heap_bytes();
        println!(
            "history {} B/partition; approx heap {} B for 10,000 partitions ({} B/partition)",
            OffsetSyncStore::history_bytes(),
            bytes,
            bytes / 10_000
        );
        assert_eq!(OffsetSyncStore::history_bytes(), 1104);
        assert!(bytes < 12_500_000, "{bytes} bytes");
    }

    // ----- invariants (docs/behaviour.md C.2) as a checker used by the property tests -----

    /// Checks invariants B and C over every pair of slots whose upstream offsets
    /// differ, with the overflow rules of docs/behaviour.md C.2.
    fn check_spacing(layout: &SlotLayout) -> Result<(), String> {
        let slots = layout.slots();
        for j in 1..SLOTS_PER_PARTITION {
            for i in 0..j {
                let (a, b) = (slots[i].upstream, slots[j].upstream);
                if a == b {
                    continue;
                }
                let bound_b = b
                    .wrapping_add(1i64.wrapping_shl(j as u32))
                    .wrapping_sub(1i64.wrapping_shl(i as u32));
                if bound_b >= 0 && a > bound_b {
                    return Err(format!("invariant B fails for slots {i},{j}: {layout}"));
                }
                let bound_c = b.wrapping_add(1i64.wrapping_shl(i.saturating_sub(2) as u32));
                if bound_c < 0 || a < bound_c {
                    return Err(format!("invariant C fails for slots {i},{j}: {layout}"));
                }
            }
        }
        Ok(())
    }

    /// Invariants A–D after applying `sync` to a store whose previous layout was
    /// `before` (`None` for the first sync). `floor` is the generation's first sync.
    fn check_invariants(
        before: Option<&SlotLayout>,
        after: &SlotLayout,
        sync: OffsetSync,
        floor: OffsetSync,
    ) -> Result<(), String> {
        if after.slot(0) != Some(sync) {
            return Err(format!("invariant A: slot 0 is not {sync}: {after}"));
        }
        check_spacing(after)?;
        if after.slot(LAST_SLOT) != Some(floor) {
            return Err(format!(
                "invariant D: slot 63 is not the floor {floor}: {after}"
            ));
        }
        if let Some(before) = before {
            let rewind = before
                .slot(0)
                .is_some_and(|head| sync.upstream < head.upstream);
            if !rewind && before.entries[LAST_SLOT] != after.entries[LAST_SLOT] {
                return Err(format!(
                    "invariant D: slot 63 changed without a rewind: {after}"
                ));
            }
        }
        Ok(())
    }

    /// Translation is monotone in the queried offset for a fixed state, given syncs
    /// from real replication (downstream advances when upstream does).
    fn check_monotone(store: &OffsetSyncStore, layout: &SlotLayout) -> Result<(), String> {
        let mut queries: Vec<i64> = layout
            .slots()
            .iter()
            .flat_map(|s| [s.upstream - 1, s.upstream, s.upstream + 1])
            .collect();
        queries.sort_unstable();
        let mut previous: Option<(i64, Translation)> = None;
        for u in queries {
            let now = translate(store, u);
            if let Some((pu, before)) = previous {
                let ordered = match (before, now) {
                    (Translation::TooOld, _) => true,
                    (Translation::Translated(x), Translation::Translated(y)) => x <= y,
                    _ => false,
                };
                if !ordered {
                    return Err(format!(
                        "translate({pu})={before:?} > translate({u})={now:?}"
                    ));
                }
            }
            previous = Some((u, now));
        }
        Ok(())
    }

    /// Upstream steps (downstream follows, see `sequence`): mostly +1 and small gaps, some repeats, large gaps and rewinds.
    fn step() -> impl Strategy<Value = i64> {
        prop_oneof![
            6 => Just(1i64),
            4 => 0i64..=200,
            1 => 1i64..=1_000_000_000,
            1 => -5_000i64..=-1,
        ]
    }

    fn sequence(rewinds: bool) -> impl Strategy<Value = Vec<(i64, i64)>> {
        let steps = prop::collection::vec((step(), 0i64..=300), 1..300);
        (0i64..=1_000_000_000_000, 0i64..=1_000_000_000_000, steps).prop_map(
            move |(mut up, mut down, steps)| {
                steps
                    .into_iter()
                    .map(|(du, dd)| {
                        let du = if rewinds { du } else { du.max(0) };
                        let next = (up + du).max(0);
                        // A replicated record advances the downstream log: syncs for
                        // later upstream offsets land at least one offset further.
                        down += if next > up { dd.max(1) } else { dd };
                        up = next;
                        (up, down)
                    })
                    .collect()
            },
        )
    }

    fn run_checked(syncs: &[(i64, i64)]) -> Result<(), TestCaseError> {
        let mut store = live_store();
        let mut before: Option<SlotLayout> = None;
        let mut floor = OffsetSync::default();
        for &(up, down) in syncs {
            let sync = OffsetSync::new(up, down);
            let rewind = before.as_ref().is_none_or(|l| l.slots()[0].upstream > up);
            if rewind {
                floor = sync;
            }
            store.apply(TOPIC, 0, up, down);
            let after = layout(&store);
            check_invariants(before.as_ref(), &after, sync, floor).map_err(TestCaseError::fail)?;
            check_monotone(&store, &after).map_err(TestCaseError::fail)?;
            before = Some(after);
        }
        Ok(())
    }

    proptest! {
        // Each case checks every pair of slots after each of up to 300 updates, which
        // is slow in debug builds: 64 cases still check thousands of updates.
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn invariants_hold_for_increasing_syncs_with_gaps(syncs in sequence(false)) {
            run_checked(&syncs)?;
        }

        #[test]
        fn invariants_hold_for_syncs_with_rewinds(syncs in sequence(true)) {
            run_checked(&syncs)?;
        }

    }

    proptest! {
        #[test]
        fn slot_63_stays_constant_during_steady_progress(
            start in 0i64..=1_000_000_000, spacing in 1i64..=1_000, count in 1usize..2_000,
        ) {
            let mut store = live_store();
            store.apply(TOPIC, 0, start, start);
            let floor = layout(&store).slots()[LAST_SLOT];
            for n in 1..count as i64 {
                let up = start + n * spacing;
                store.apply(TOPIC, 0, up, up);
                prop_assert_eq!(layout(&store).slots()[LAST_SLOT], floor);
            }
        }

        #[test]
        fn load_all_history_initial_read_matches_live_feeding(syncs in sequence(true)) {
            let mut live = live_store();
            let mut loaded = OffsetSyncStore::new(InitMode::LoadAllHistory);
            feed(&mut live, &syncs);
            feed(&mut loaded, &syncs);
            loaded.finish_initial_read();
            prop_assert_eq!(layout(&live), layout(&loaded));
        }

        #[test]
        fn must_read_to_end_initial_read_leaves_each_partitions_last_sync(
            syncs in prop::collection::vec((0i32..4, any::<i64>(), any::<i64>()), 1..200),
        ) {
            let mut store = OffsetSyncStore::new(InitMode::MustReadToEnd);
            for &(partition, up, down) in &syncs {
                store.apply(TOPIC, partition, up, down);
            }
            store.finish_initial_read();
            for partition in 0..4 {
                let last = syncs.iter().rev().find(|s| s.0 == partition);
                let layout = store.layout(TOPIC, partition);
                match (last, layout) {
                    (Some(&(_, up, down)), Some(layout)) => {
                        prop_assert_eq!(layout.runs().len(), 1);
                        prop_assert_eq!(layout.slot(0), Some(OffsetSync::new(up, down)));
                    }
                    (None, None) => {}
                    (last, layout) => {
                        prop_assert!(false, "partition {}: last {:?}, layout {:?}", partition, last, layout);
                    }
                }
            }
        }

        #[test]
        fn arbitrary_offsets_never_panic_and_keep_the_newest_sync_in_slot_0(
            syncs in prop::collection::vec((any::<i64>(), any::<i64>()), 1..200),
            query in any::<i64>(),
        ) {
            let mut store = live_store();
            for &(up, down) in &syncs {
                store.apply(TOPIC, 0, up, down);
                let (up0, down0) = (up, down);
                prop_assert_eq!(layout(&store).slot(0), Some(OffsetSync::new(up0, down0)));
            }
            let _ = translate(&store, query);
        }
    }
}
