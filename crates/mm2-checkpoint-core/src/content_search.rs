//! Content search inside the sync bracket (docs/translation.md, "Content search"):
//! the exact downstream position of a committed upstream offset, found by
//! comparing the records the group consumed since the chosen sync with the
//! records that follow the sync on the remote partition.
//!
//! Pure: the driver reads the records ([`SideRead`]) and this module decides.
//! Used only with precise translation and only where the precise answer is
//! `s.downstream + 1` for a sync `s` with `s.upstream < u - 1` (a re-read of up
//! to the sync spacing); anything not proven keeps that answer.
//!
//! The rule, for a committed offset `u`, the sync `s` answering it and the next
//! held sync `t` above `u` (if any):
//! 1. the source records in `(s.up, u)` that exist (compaction may have removed
//!    some) are the `n` records the group consumed since `s`;
//! 2. the remote partition must hold data records at exactly `s.down + 1 ..=
//!    s.down + n`, each equal to the matching consumed record (key, value,
//!    headers byte for byte, and timestamp);
//! 3. `t.down > s.down + n` (the bracket is not exceeded);
//! 4. no source record in `[u, t.up)` (or `[u, high watermark)` without `t`)
//!    has the content of a consumed record, so none of the `n` remote records
//!    can be the mirror of a record the group has not consumed;
//! 5. no transactional or control batch overlaps the source range
//!    `(s.up, t.up)` or the remote range `(s.down, s.down + n]`: the group's
//!    isolation level is unknown, so what it consumed is not known there.
//!
//! Then the answer is `s.down + n + 1`. Otherwise the sync answer is kept, with
//! the reason ([`Fallback`]).

use std::collections::{HashMap, HashSet};

use super::sync_store::{OffsetSync, OffsetSyncStore};
use super::types::{OffsetTranslator, TopicPartition, Translation};

/// Where a search is needed: the committed offset `upstream` of a source
/// partition is answered by `sync` (`sync.upstream < upstream - 1`), and `next`
/// is the next held sync above `upstream`, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bracket {
    /// The group's committed offset `u`.
    pub upstream: i64,
    /// The sync the precise answer comes from (`s`).
    pub sync: OffsetSync,
    /// The next held sync with an upstream offset above `u` (`t`).
    pub next: Option<OffsetSync>,
}

impl Bracket {
    /// The precise (sync) answer: `s.down + 1`.
    pub fn sync_answer(&self) -> i64 {
        self.sync.downstream + 1
    }

    /// The first source offset to read: `s.up + 1`.
    pub fn source_from(&self) -> i64 {
        self.sync.upstream + 1
    }

    /// The end (exclusive) of the source range [`decide`] needs read, for a
    /// partition whose high watermark is `high_watermark`: the next sync's
    /// upstream offset, or the high watermark without one (at least `u`).
    pub fn source_end(&self, high_watermark: i64) -> i64 {
        let end = match self.next {
            Some(t) => t.upstream.min(high_watermark),
            None => high_watermark,
        };
        end.max(self.upstream)
    }

    /// The end (exclusive) of the remote range [`decide`] compares, given the
    /// source read: `s.down + n + 1`.
    pub fn remote_end(&self, source: &SideRead) -> i64 {
        let n = source
            .records
            .iter()
            .filter(|r| r.offset > self.sync.upstream && r.offset < self.upstream)
            .count();
        self.sync.downstream + n as i64 + 1
    }

    /// The first remote offset to read: `s.down + 1`.
    pub fn remote_from(&self) -> i64 {
        self.sync.downstream + 1
    }
}

/// The sync answering `upstream` of `tp` through the precise history, when a
/// content search could improve on it: `None` with `mm2` precision, when the
/// answer is not `s.down + 1` for the history's floor sync `s`, or when it is
/// already exact (`u = s.up` or `u = s.up + 1`).
pub fn bracket_sync(
    store: &OffsetSyncStore,
    tp: &TopicPartition,
    upstream: i64,
) -> Option<OffsetSync> {
    let history = store.precise_history(&tp.topic, tp.partition)?;
    let s = history.floor(upstream)?;
    if upstream <= s.upstream.saturating_add(1) {
        return None;
    }
    match store.translate_offset(&tp.topic, tp.partition, upstream) {
        Translation::Translated(d) if d == s.downstream + 1 => Some(s),
        _ => None,
    }
}

/// The [`Bracket`] of `upstream` of `tp` (see [`bracket_sync`]).
pub fn bracket(store: &OffsetSyncStore, tp: &TopicPartition, upstream: i64) -> Option<Bracket> {
    let sync = bracket_sync(store, tp, upstream)?;
    let next = store
        .precise_history(&tp.topic, tp.partition)?
        .syncs()
        .find(|t| t.upstream > upstream);
    Some(Bracket {
        upstream,
        sync,
        next,
    })
}

/// One record as content search compares it: its offset and what a mirror
/// preserves (timestamp, key, value, headers). The driver fills it from the
/// records its client decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Record {
    /// The record's offset in its partition.
    pub offset: i64,
    /// The record's timestamp in milliseconds.
    pub timestamp: i64,
    /// Key; `None` is a null key.
    pub key: Option<bytes::Bytes>,
    /// Value; `None` is a null value.
    pub value: Option<bytes::Bytes>,
    /// Headers, in order.
    pub headers: Vec<RecordHeader>,
}

/// A record header: key and value (`None` is a null value).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RecordHeader {
    /// Header key.
    pub key: String,
    /// Header value; `None` is a null value.
    pub value: Option<bytes::Bytes>,
}

impl RecordHeader {
    /// A header with a non-null value.
    pub fn new(key: impl Into<String>, value: impl Into<bytes::Bytes>) -> Self {
        RecordHeader {
            key: key.into(),
            value: Some(value.into()),
        }
    }
}

/// What the driver read of one partition from the bracket's first offset, in
/// one bounded fetch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SideRead {
    /// The data records read, in offset order (control records excluded).
    pub records: Vec<Record>,
    /// Every offset below this one was covered by the read (the offset after
    /// the last batch returned).
    pub read_to: i64,
    /// The partition's high watermark.
    pub high_watermark: i64,
    /// The offset ranges (first, last, inclusive) of the transactional and
    /// control batches returned.
    pub transactional: Vec<(i64, i64)>,
}

impl SideRead {
    /// Whether a transactional or control batch overlaps `[from, to)`.
    fn transactional_in(&self, from: i64, to: i64) -> bool {
        self.transactional
            .iter()
            .any(|&(first, last)| first < to && last >= from)
    }
}

/// Why a search kept the sync answer. Each is a metric label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fallback {
    /// The ranges to compare do not fit the per-search bounds (records, bytes),
    /// or the one fetch did not cover them.
    TooLarge,
    /// A transactional or control batch in either range.
    Transaction,
    /// The remote partition lacks a record at an offset of `(s.down, s.down + n]`
    /// (truncated, compacted, or not mirrored yet).
    Gap,
    /// A remote record differs from the consumed record it should mirror
    /// (a filtered, transformed or duplicated record).
    Mismatch,
    /// `s.down + n` reaches the next sync's downstream offset.
    BracketExceeded,
    /// A record the group has not consumed has the content of one it has.
    Ambiguous,
    /// The driver could not read a side (denied, error); decided there.
    Unreadable,
}

impl Fallback {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Fallback::TooLarge => "too_large",
            Fallback::Transaction => "transaction",
            Fallback::Gap => "gap",
            Fallback::Mismatch => "mismatch",
            Fallback::BracketExceeded => "bracket_exceeded",
            Fallback::Ambiguous => "ambiguous",
            Fallback::Unreadable => "unreadable",
        }
    }

    /// Every reason, for the metric's label set.
    pub const ALL: [Fallback; 7] = [
        Fallback::TooLarge,
        Fallback::Transaction,
        Fallback::Gap,
        Fallback::Mismatch,
        Fallback::BracketExceeded,
        Fallback::Ambiguous,
        Fallback::Unreadable,
    ];
}

/// Per-search bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchLimits {
    /// Most consumed records compared (`n`).
    pub max_records: usize,
}

/// A record's content: what a mirror preserves.
type Content<'a> = (
    i64,
    &'a Option<bytes::Bytes>,
    &'a Option<bytes::Bytes>,
    &'a [RecordHeader],
);

fn content(r: &Record) -> Content<'_> {
    (r.timestamp, &r.key, &r.value, &r.headers)
}

/// Decides one search: `Ok(d)` is the exact downstream offset of `bracket`'s
/// committed offset, never past the truth; `Err` keeps the sync answer.
pub fn decide(
    bracket: &Bracket,
    source: &SideRead,
    remote: &SideRead,
    limits: SearchLimits,
) -> Result<i64, Fallback> {
    let s = bracket.sync;
    let u = bracket.upstream;
    // The source window that matters: consumed records (s.up, u), and the
    // records that could land before the next sync, [u, t.up).
    let window_end = bracket.source_end(source.high_watermark);
    if u > source.high_watermark || source.read_to < window_end {
        return Err(Fallback::TooLarge);
    }
    if source.transactional_in(s.upstream + 1, window_end) {
        return Err(Fallback::Transaction);
    }
    let consumed: Vec<&Record> = source
        .records
        .iter()
        .filter(|r| r.offset > s.upstream && r.offset < u)
        .collect();
    let n = consumed.len();
    if n > limits.max_records {
        return Err(Fallback::TooLarge);
    }
    let n64 = n as i64;
    if bracket
        .next
        .is_some_and(|t| t.downstream <= s.downstream + n64)
    {
        return Err(Fallback::BracketExceeded);
    }
    let remote_end = s.downstream + n64 + 1;
    if remote.transactional_in(s.downstream + 1, remote_end) {
        return Err(Fallback::Transaction);
    }
    let mirrored: Vec<&Record> = remote
        .records
        .iter()
        .filter(|r| r.offset > s.downstream && r.offset < remote_end)
        .collect();
    if mirrored.len() != n {
        if remote.read_to < remote_end && remote.high_watermark >= remote_end {
            return Err(Fallback::TooLarge);
        }
        return Err(Fallback::Gap);
    }
    for (i, (c, m)) in consumed.iter().zip(&mirrored).enumerate() {
        if m.offset != s.downstream + 1 + i as i64 {
            return Err(Fallback::Gap);
        }
        if content(c) != content(m) {
            return Err(Fallback::Mismatch);
        }
    }
    let seen: HashSet<Content<'_>> = consumed.iter().map(|r| content(r)).collect();
    let ambiguous = source
        .records
        .iter()
        .filter(|r| r.offset >= u && r.offset < window_end)
        .any(|r| seen.contains(&content(r)));
    if ambiguous {
        return Err(Fallback::Ambiguous);
    }
    Ok(remote_end)
}

/// The decided searches, by source partition and committed offset, each with
/// the sync it was made for and the round that last saw its offset held.
#[derive(Clone, Debug, Default)]
pub struct ContentCache {
    entries: HashMap<(TopicPartition, i64), Decided>,
    round: u64,
}

#[derive(Clone, Copy, Debug)]
struct Decided {
    sync: OffsetSync,
    exact: Option<i64>,
    seen: u64,
}

impl ContentCache {
    /// Whether `(tp, upstream)` was decided for `sync`; if so, marks it held
    /// this round.
    pub fn touch(&mut self, tp: &TopicPartition, upstream: i64, sync: OffsetSync) -> bool {
        let round = self.round;
        match self.entries.get_mut(&(tp.clone(), upstream)) {
            Some(d) if d.sync == sync => {
                d.seen = round;
                true
            }
            _ => false,
        }
    }

    /// Records a decision: `exact` is the search's answer, `None` a fallback.
    pub fn insert(
        &mut self,
        tp: TopicPartition,
        upstream: i64,
        sync: OffsetSync,
        exact: Option<i64>,
    ) {
        let seen = self.round;
        self.entries
            .insert((tp, upstream), Decided { sync, exact, seen });
    }

    /// At the end of a round over every group: drops the decisions whose
    /// offset no group held during the round, so the cache stays bounded by
    /// the group-partitions.
    pub fn end_round(&mut self) {
        let round = self.round;
        self.entries.retain(|_, d| d.seen == round);
        self.round += 1;
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The exact answer for `upstream` of `tp`, if one was found for the sync
    /// answering it now.
    fn exact(&self, store: &OffsetSyncStore, tp: &TopicPartition, upstream: i64) -> Option<i64> {
        if self.entries.is_empty() {
            return None;
        }
        let d = self.entries.get(&(tp.clone(), upstream))?;
        let exact = d.exact?;
        (bracket_sync(store, tp, upstream)? == d.sync).then_some(exact)
    }
}

/// The store's translation, with the exact answers of `cache` where they were
/// found for the sync the store answers with now.
pub struct ContentTranslator<'a> {
    /// The offset-sync store.
    pub store: &'a OffsetSyncStore,
    /// The decided searches.
    pub cache: &'a ContentCache,
}

impl OffsetTranslator for ContentTranslator<'_> {
    fn translate(&self, tp: &TopicPartition, upstream: i64) -> Translation {
        if let Some(exact) = self.cache.exact(self.store, tp, upstream) {
            return Translation::Translated(exact);
        }
        self.store
            .translate_offset(&tp.topic, tp.partition, upstream)
    }
}

#[cfg(test)]
#[path = "content_search_tests.rs"]
mod tests;
