//! The full sync history of one source partition, kept beside MM2's 64 slots for
//! precise translation (docs/translation.md, "Precise translation").
//!
//! A [`SyncHistory`] holds the syncs of the partition's current *generation* (every
//! sync since the store last discarded the partition's older syncs, docs/behaviour.md
//! C.2 invariant D), oldest first. Within a generation the upstream offsets never
//! decrease (a lower one is a rewind and starts a new generation), so the history is
//! sorted by upstream offset and a lookup is a binary search.
//!
//! Memory: while every sync of the history lies within 2^32 offsets (upstream and
//! downstream) of a base sync, an entry is two `u32` relative to that base, 8 bytes;
//! otherwise 16 bytes (two `i64`). Past a budget of entries the oldest ones are
//! dropped; the store then answers offsets older than the oldest kept sync from
//! MM2's slots.

use std::collections::VecDeque;

use super::types::OffsetSync;

/// Largest span (upstream or downstream) a rebase may leave between the new base
/// and the newest sync. Half the `u32` range, so a partition that rebased has at
/// least 2^31 offsets of progress before it needs to rebase again: rebasing costs a
/// pass over the history, and this keeps it rare.
const REBASE_SPAN: i128 = (u32::MAX / 2) as i128;

/// Smallest capacity step, in entries, when the history grows.
const MIN_GROWTH: usize = 8;

/// The offsets of the history.
#[derive(Clone, Debug)]
enum Entries {
    /// `[upstream - base.upstream, downstream - base.downstream]`, both in `0..=u32::MAX`.
    Narrow {
        base: OffsetSync,
        items: VecDeque<[u32; 2]>,
    },
    /// Absolute offsets: some sync did not fit the narrow form.
    Wide(VecDeque<OffsetSync>),
}

/// `value - base` if it fits in a `u32`.
fn relative(value: i64, base: i64) -> Option<u32> {
    u32::try_from(i128::from(value) - i128::from(base)).ok()
}

/// The absolute sync of a narrow entry. The sum is exact: the entry was made from a
/// sync by subtracting `base`.
fn absolute(base: OffsetSync, item: [u32; 2]) -> OffsetSync {
    OffsetSync::new(
        base.upstream.wrapping_add(i64::from(item[0])),
        base.downstream.wrapping_add(i64::from(item[1])),
    )
}

impl Entries {
    fn len(&self) -> usize {
        match self {
            Entries::Narrow { items, .. } => items.len(),
            Entries::Wide(items) => items.len(),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Entries::Narrow { items, .. } => items.capacity() * std::mem::size_of::<[u32; 2]>(),
            Entries::Wide(items) => items.capacity() * std::mem::size_of::<OffsetSync>(),
        }
    }

    fn pop_front(&mut self) {
        match self {
            Entries::Narrow { items, .. } => {
                items.pop_front();
            }
            Entries::Wide(items) => {
                items.pop_front();
            }
        }
    }

    fn front(&self) -> Option<OffsetSync> {
        match self {
            Entries::Narrow { base, items } => items.front().map(|&item| absolute(*base, item)),
            Entries::Wide(items) => items.front().copied(),
        }
    }

    fn back(&self) -> Option<OffsetSync> {
        match self {
            Entries::Narrow { base, items } => items.back().map(|&item| absolute(*base, item)),
            Entries::Wide(items) => items.back().copied(),
        }
    }

    /// Every sync, oldest first.
    fn iter(&self) -> Box<dyn Iterator<Item = OffsetSync> + '_> {
        match self {
            Entries::Narrow { base, items } => {
                Box::new(items.iter().map(move |&item| absolute(*base, item)))
            }
            Entries::Wide(items) => Box::new(items.iter().copied()),
        }
    }

    /// Appends `sync`, growing the capacity by an eighth (not doubling) so at most
    /// about 12 % of it is unused, and never beyond `max` entries.
    fn push(&mut self, sync: OffsetSync, max: usize) {
        fn grow<T>(items: &mut VecDeque<T>, max: usize) {
            if items.len() == items.capacity() {
                let len = items.len();
                let step = (len / 8)
                    .max(MIN_GROWTH)
                    .min(max.saturating_sub(len))
                    .max(1);
                items.reserve_exact(step);
            }
        }
        match self {
            Entries::Narrow { base, items } => {
                if let (Some(up), Some(down)) = (
                    relative(sync.upstream, base.upstream),
                    relative(sync.downstream, base.downstream),
                ) {
                    grow(items, max);
                    items.push_back([up, down]);
                    return;
                }
                let capacity = items.capacity().max(items.len() + 1);
                *self = Self::rebased(*base, items, sync, capacity).unwrap_or_else(|| {
                    let mut wide = VecDeque::with_capacity(capacity);
                    wide.extend(items.iter().map(|&item| absolute(*base, item)));
                    wide.push_back(sync);
                    Entries::Wide(wide)
                });
            }
            Entries::Wide(items) => {
                grow(items, max);
                items.push_back(sync);
            }
        }
    }

    /// The narrow entries followed by `sync`, re-expressed relative to the oldest of
    /// them, if every one lies within [`REBASE_SPAN`] above it.
    fn rebased(
        base: OffsetSync,
        items: &VecDeque<[u32; 2]>,
        sync: OffsetSync,
        capacity: usize,
    ) -> Option<Self> {
        let new_base = items.front().map_or(sync, |&item| absolute(base, item));
        let fits = |s: OffsetSync| {
            let up = i128::from(s.upstream) - i128::from(new_base.upstream);
            let down = i128::from(s.downstream) - i128::from(new_base.downstream);
            (0..=REBASE_SPAN).contains(&up) && (0..=REBASE_SPAN).contains(&down)
        };
        let all = items
            .iter()
            .map(|&item| absolute(base, item))
            .chain(std::iter::once(sync));
        if !all.clone().all(fits) {
            return None;
        }
        let mut rebased = VecDeque::with_capacity(capacity);
        for s in all {
            // `fits` checked both differences, so these conversions succeed.
            let up = relative(s.upstream, new_base.upstream)?;
            let down = relative(s.downstream, new_base.downstream)?;
            rebased.push_back([up, down]);
        }
        Some(Entries::Narrow {
            base: new_base,
            items: rebased,
        })
    }

    /// The newest sync with the greatest upstream offset at or below `upstream`.
    fn floor(&self, upstream: i64) -> Option<OffsetSync> {
        // Most groups are at or past the newest sync: no search for them.
        if let Some(newest) = self.back().filter(|s| s.upstream <= upstream) {
            return Some(newest);
        }
        match self {
            Entries::Narrow { base, items } => {
                let rel = i128::from(upstream) - i128::from(base.upstream);
                let at = items.partition_point(|item| i128::from(item[0]) <= rel);
                at.checked_sub(1).map(|i| absolute(*base, items[i]))
            }
            Entries::Wide(items) => {
                let at = items.partition_point(|sync| sync.upstream <= upstream);
                at.checked_sub(1).map(|i| items[i])
            }
        }
    }
}

/// What [`SyncHistory::push`] did to the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// The sync was appended; nothing was dropped, or syncs were already dropped
    /// earlier in this generation.
    Appended,
    /// The history was at its budget: its oldest sync was dropped, the first time
    /// since the generation began. Offsets older than the oldest kept sync are from
    /// now on translated with MM2's precision.
    FirstDrop,
}

/// Every sync of one source partition's current generation, oldest first, up to a
/// budget of entries (see the module documentation).
#[derive(Clone, Debug)]
pub struct SyncHistory {
    entries: Entries,
    /// Whether the oldest sync of the generation is still held (nothing dropped).
    complete: bool,
}

impl SyncHistory {
    /// A history holding only `first`, the first sync of a generation.
    pub fn new(first: OffsetSync) -> Self {
        let mut items = VecDeque::with_capacity(1);
        items.push_back([0, 0]);
        Self {
            entries: Entries::Narrow { base: first, items },
            complete: true,
        }
    }

    /// Starts a new generation with `first`: every older sync is forgotten.
    pub fn restart(&mut self, first: OffsetSync) {
        match &mut self.entries {
            Entries::Narrow { base, items } => {
                items.clear();
                items.push_back([0, 0]);
                *base = first;
            }
            Entries::Wide(_) => *self = Self::new(first),
        }
        self.complete = true;
    }

    /// Appends `sync`, the newest of the generation (its upstream offset is at least
    /// the newest held), dropping the oldest sync first if `max` are already held.
    pub fn push(&mut self, sync: OffsetSync, max: usize) -> Pushed {
        debug_assert!(
            self.entries
                .back()
                .is_none_or(|b| b.upstream <= sync.upstream)
        );
        let mut dropped = false;
        while self.entries.len() >= max.max(1) {
            self.entries.pop_front();
            dropped = true;
        }
        self.entries.push(sync, max.max(1));
        if dropped && self.complete {
            self.complete = false;
            Pushed::FirstDrop
        } else {
            Pushed::Appended
        }
    }

    /// The newest held sync whose upstream offset is the greatest at or below
    /// `upstream`, or `None` if `upstream` is below the oldest held sync.
    pub fn floor(&self, upstream: i64) -> Option<OffsetSync> {
        self.entries.floor(upstream)
    }

    /// Records that the generation's first syncs are not held (a history
    /// restored without them): offsets below the oldest held sync are
    /// translated from the slots, as after a drop for the budget.
    pub fn mark_incomplete(&mut self) {
        self.complete = false;
    }

    /// Whether every sync of the generation is still held (none was dropped for the
    /// budget).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Number of syncs held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no sync is held (never true: a history always holds its newest sync).
    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// The oldest sync held.
    pub fn oldest(&self) -> Option<OffsetSync> {
        self.entries.front()
    }

    /// Every sync held, oldest first.
    pub fn syncs(&self) -> impl Iterator<Item = OffsetSync> + '_ {
        self.entries.iter()
    }

    /// Bytes per held sync: 8 while the narrow form holds, else 16.
    pub fn bytes_per_sync(&self) -> usize {
        match self.entries {
            Entries::Narrow { .. } => std::mem::size_of::<[u32; 2]>(),
            Entries::Wide(_) => std::mem::size_of::<OffsetSync>(),
        }
    }

    /// Heap bytes of the entries (their allocated capacity).
    pub fn heap_bytes(&self) -> usize {
        self.entries.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn history(syncs: &[(i64, i64)], max: usize) -> SyncHistory {
        let mut h = SyncHistory::new(OffsetSync::new(syncs[0].0, syncs[0].1));
        for &(up, down) in &syncs[1..] {
            h.push(OffsetSync::new(up, down), max);
        }
        h
    }

    fn pairs(h: &SyncHistory) -> Vec<(i64, i64)> {
        h.syncs().map(|s| (s.upstream, s.downstream)).collect()
    }

    #[test]
    fn floor_takes_the_newest_sync_at_or_below_the_offset() {
        let h = history(&[(10, 100), (20, 200), (20, 205), (30, 300)], 100);
        assert_eq!(h.floor(9), None);
        assert_eq!(h.floor(10), Some(OffsetSync::new(10, 100)));
        assert_eq!(h.floor(19), Some(OffsetSync::new(10, 100)));
        assert_eq!(h.floor(20), Some(OffsetSync::new(20, 205)));
        assert_eq!(h.floor(29), Some(OffsetSync::new(20, 205)));
        assert_eq!(h.floor(i64::MAX), Some(OffsetSync::new(30, 300)));
        assert_eq!(h.floor(i64::MIN), None);
        assert_eq!(h.bytes_per_sync(), 8);
    }

    #[test]
    fn the_budget_drops_the_oldest_sync_and_reports_the_first_drop_once() {
        let mut h = history(&[(0, 0), (10, 10)], 3);
        assert_eq!(h.push(OffsetSync::new(20, 20), 3), Pushed::Appended);
        assert!(h.is_complete());
        assert_eq!(h.push(OffsetSync::new(30, 30), 3), Pushed::FirstDrop);
        assert_eq!(h.push(OffsetSync::new(40, 40), 3), Pushed::Appended);
        assert!(!h.is_complete());
        assert_eq!(pairs(&h), [(20, 20), (30, 30), (40, 40)]);
        assert_eq!(h.floor(19), None);
        h.restart(OffsetSync::new(5, 5));
        assert!(h.is_complete());
        assert_eq!(pairs(&h), [(5, 5)]);
        h.push(OffsetSync::new(6, 6), 2);
        assert_eq!(h.push(OffsetSync::new(7, 7), 2), Pushed::FirstDrop);
    }

    #[test]
    fn a_downstream_decrease_switches_to_wide_entries() {
        let h = history(&[(100, 200), (150, 251), (200, 10), (250, 60)], 100);
        assert_eq!(h.bytes_per_sync(), 16);
        assert_eq!(pairs(&h), [(100, 200), (150, 251), (200, 10), (250, 60)]);
        assert_eq!(h.floor(170), Some(OffsetSync::new(150, 251)));
    }

    #[test]
    fn progress_beyond_32_bits_rebases_onto_the_oldest_kept_sync() {
        let step = 1i64 << 29;
        let mut h = history(&[(0, 0)], 4);
        for n in 1..=40 {
            h.push(OffsetSync::new(n * step, n * step), 4);
        }
        // The four kept syncs span 3 × 2^29 offsets: each time the newest no longer
        // fits 32 bits above the base, the base moves up to the oldest kept sync.
        assert_eq!(h.bytes_per_sync(), 8);
        assert_eq!(
            pairs(&h),
            (37..=40).map(|n| (n * step, n * step)).collect::<Vec<_>>()
        );
        assert_eq!(
            h.floor(38 * step + 1),
            Some(OffsetSync::new(38 * step, 38 * step))
        );
    }

    #[test]
    fn a_window_wider_than_32_bits_uses_wide_entries() {
        let h = history(&[(0, 0), (1, 1), (1 << 40, 1 << 40)], 100);
        assert_eq!(h.bytes_per_sync(), 16);
        assert_eq!(pairs(&h), [(0, 0), (1, 1), (1 << 40, 1 << 40)]);
        assert_eq!(h.floor((1 << 40) - 1), Some(OffsetSync::new(1, 1)));
    }

    #[test]
    fn capacity_grows_by_an_eighth_and_never_past_the_budget() {
        let mut h = history(&[(0, 0)], 1000);
        for n in 1..10_000 {
            h.push(OffsetSync::new(n, n), 1000);
            assert!(h.heap_bytes() <= 1000 * 8, "{} B at {n}", h.heap_bytes());
        }
        let mut h = history(&[(0, 0)], 1_000_000);
        for n in 1..100_000 {
            h.push(OffsetSync::new(n, n), 1_000_000);
        }
        assert!(
            h.heap_bytes() <= 100_000 * 8 * 9 / 8 + 8 * MIN_GROWTH,
            "{} B",
            h.heap_bytes()
        );
    }

    /// Non-decreasing upstream offsets with any steps, downstream anything.
    fn stream() -> impl Strategy<Value = (i64, Vec<(i64, i64)>)> {
        let step = prop_oneof![
            4 => 0i64..=3,
            2 => 0i64..=1_000,
            1 => 0i64..=(1 << 33),
        ];
        let down = prop_oneof![
            4 => 0i64..=3,
            1 => -100i64..=100,
            1 => 0i64..=(1 << 33),
        ];
        (
            any::<i64>().prop_map(|v| v >> 2),
            prop::collection::vec((step, down), 1..200),
            1usize..50,
        )
            .prop_map(|(start, steps, max)| {
                let (mut up, mut down) = (start, start);
                let syncs = steps
                    .into_iter()
                    .map(|(du, dd)| {
                        up = up.saturating_add(du);
                        down = down.saturating_add(dd);
                        (up, down)
                    })
                    .collect();
                (max as i64, syncs)
            })
    }

    proptest! {
        #[test]
        fn the_history_is_the_newest_syncs_within_the_budget((max, syncs) in stream(), query in any::<i64>()) {
            let max = max as usize;
            let h = history(&syncs, max);
            let kept = &syncs[syncs.len().saturating_sub(max)..];
            prop_assert_eq!(pairs(&h), kept.to_vec());
            prop_assert_eq!(h.is_complete(), syncs.len() <= max);
            let expected = kept
                .iter()
                .rev()
                .find(|s| s.0 <= query)
                .map(|&(u, d)| OffsetSync::new(u, d));
            prop_assert_eq!(h.floor(query), expected);
            for &(u, _) in kept {
                let expected = kept.iter().rev().find(|s| s.0 <= u).map(|&(u, d)| OffsetSync::new(u, d));
                prop_assert_eq!(h.floor(u), expected);
            }
        }
    }
}
