//! Content search decisions (docs/translation.md, "Content search").

use bytes::Bytes;

use super::*;
use crate::sync_store::{InitMode, Precision};

const TOPIC: &str = "topic";

/// The source record at `offset`: distinct content per offset.
fn source_record(offset: i64) -> Record {
    Record {
        offset,
        timestamp: 1_700_000_000_000 + offset,
        key: Some(Bytes::from(format!("k{offset}"))),
        value: Some(Bytes::from(format!("v{offset}"))),
        headers: vec![RecordHeader::new("h", format!("{offset}"))],
    }
}

/// `records` placed at consecutive offsets from `from` (as a mirror writes them).
fn placed(from: i64, records: &[Record]) -> Vec<Record> {
    records
        .iter()
        .zip(from..)
        .map(|(r, offset)| Record {
            offset,
            ..r.clone()
        })
        .collect()
}

fn read(records: Vec<Record>, read_to: i64) -> SideRead {
    SideRead {
        records,
        read_to,
        high_watermark: read_to,
        transactional: Vec::new(),
    }
}

/// Source offsets `from..to` that exist (not in `missing`).
fn source(from: i64, to: i64, missing: &[i64]) -> Vec<Record> {
    (from..to)
        .filter(|o| !missing.contains(o))
        .map(source_record)
        .collect()
}

fn store(syncs: &[(i64, i64)]) -> OffsetSyncStore {
    let mut store = OffsetSyncStore::with_precision(
        InitMode::MustReadToEnd,
        Precision::Precise { max_syncs: 100 },
    );
    store.finish_initial_read();
    for &(up, down) in syncs {
        store.apply(TOPIC, 0, up, down);
    }
    store
}

fn tp() -> TopicPartition {
    TopicPartition::new(TOPIC, 0)
}

const LIMITS: SearchLimits = SearchLimits { max_records: 1000 };

/// An identity mirror of offsets 0..300, syncs every 100; the group at 150.
fn identity_case() -> (Bracket, SideRead, SideRead) {
    let b = bracket(&store(&[(0, 0), (100, 100), (200, 200)]), &tp(), 150).expect("bracket");
    let src = read(source(101, 300, &[]), 300);
    let remote = read(source(101, 300, &[]), 300);
    (b, src, remote)
}

#[test]
fn equal_sequences_give_the_position_of_the_committed_offset() {
    let (b, src, remote) = identity_case();
    assert_eq!(b.sync, OffsetSync::new(100, 100));
    assert_eq!(b.next, Some(OffsetSync::new(200, 200)));
    assert_eq!(decide(&b, &src, &remote, LIMITS), Ok(150));
}

#[test]
fn records_compacted_away_on_the_source_are_not_counted() {
    // Source offsets 120..130 compacted before mirroring: the remote holds the
    // others consecutively, so source 150 is at 150 - 10.
    let missing: Vec<i64> = (120..130).collect();
    let existing = source(101, 300, &missing);
    let b = bracket(&store(&[(100, 100), (200, 190)]), &tp(), 150).expect("bracket");
    let src = read(existing.clone(), 300);
    let remote = read(placed(101, &existing), 300);
    assert_eq!(decide(&b, &src, &remote, LIMITS), Ok(140));
    assert_eq!(remote.records[39].offset, 140);
    assert_eq!(remote.records[39].value, source_record(150).value);
}

#[test]
fn a_filtered_record_keeps_the_sync_answer() {
    let (b, src, _) = identity_case();
    let mirrored = source(101, 300, &[120]);
    let remote = read(placed(101, &mirrored), 299);
    assert_eq!(decide(&b, &src, &remote, LIMITS), Err(Fallback::Mismatch));
}

#[test]
fn the_last_consumed_record_filtered_keeps_the_sync_answer() {
    let (b, src, _) = identity_case();
    let mirrored = source(101, 300, &[149]);
    let remote = read(placed(101, &mirrored), 299);
    assert_eq!(decide(&b, &src, &remote, LIMITS), Err(Fallback::Mismatch));
}

#[test]
fn a_duplicate_on_the_remote_keeps_the_sync_answer() {
    let (b, src, _) = identity_case();
    let mut mirrored = source(101, 300, &[]);
    mirrored.insert(10, source_record(110));
    let remote = read(placed(101, &mirrored), 301);
    assert_eq!(decide(&b, &src, &remote, LIMITS), Err(Fallback::Mismatch));
}

#[test]
fn a_changed_header_keeps_the_sync_answer() {
    let (b, src, mut remote) = identity_case();
    remote.records[30].headers = vec![RecordHeader::new("h", "changed")];
    assert_eq!(decide(&b, &src, &remote, LIMITS), Err(Fallback::Mismatch));
}

#[test]
fn a_changed_timestamp_keeps_the_sync_answer() {
    let (b, src, mut remote) = identity_case();
    remote.records[5].timestamp += 1;
    assert_eq!(decide(&b, &src, &remote, LIMITS), Err(Fallback::Mismatch));
}

#[test]
fn a_transaction_on_either_side_keeps_the_sync_answer() {
    let (b, mut src, remote) = identity_case();
    src.transactional = vec![(130, 131)];
    assert_eq!(
        decide(&b, &src, &remote, LIMITS),
        Err(Fallback::Transaction)
    );
    // A marker after u but before the next sync: the group may or may not
    // have read past it.
    src.transactional = vec![(170, 170)];
    assert_eq!(
        decide(&b, &src, &remote, LIMITS),
        Err(Fallback::Transaction)
    );
    let (b, src, mut remote) = identity_case();
    remote.transactional = vec![(149, 149)];
    assert_eq!(
        decide(&b, &src, &remote, LIMITS),
        Err(Fallback::Transaction)
    );
    // Beyond what is compared on the remote: no effect.
    remote.transactional = vec![(150, 150)];
    assert_eq!(decide(&b, &src, &remote, LIMITS), Ok(150));
}

#[test]
fn a_gap_on_the_remote_keeps_the_sync_answer() {
    let (b, src, mut remote) = identity_case();
    remote.records.retain(|r| r.offset != 140);
    assert_eq!(decide(&b, &src, &remote, LIMITS), Err(Fallback::Gap));
    // Truncated: the remote ends before s.down + n.
    let (b, src, mut remote) = identity_case();
    remote.records.retain(|r| r.offset < 130);
    remote.read_to = 130;
    remote.high_watermark = 130;
    assert_eq!(decide(&b, &src, &remote, LIMITS), Err(Fallback::Gap));
}

#[test]
fn the_bracket_exceeded_keeps_the_sync_answer() {
    let b = bracket(&store(&[(100, 100), (200, 140)]), &tp(), 150).expect("bracket");
    let (_, src, remote) = identity_case();
    assert_eq!(
        decide(&b, &src, &remote, LIMITS),
        Err(Fallback::BracketExceeded)
    );
}

#[test]
fn repeated_content_that_could_be_an_unconsumed_record_keeps_the_sync_answer() {
    // Every record has the same content; record 101 was filtered, so remote
    // 101..=149 holds source 102..=150, and 150 is not consumed: equal
    // sequences, but accepting would skip it.
    let same = |offset| Record {
        offset,
        timestamp: 5,
        key: None,
        value: Some(Bytes::from_static(b"x")),
        headers: Vec::new(),
    };
    let b = bracket(&store(&[(100, 100), (200, 199)]), &tp(), 150).expect("bracket");
    let src = read((101..300).map(same).collect(), 300);
    let remote = read((101..299).map(same).collect(), 299);
    assert_eq!(decide(&b, &src, &remote, LIMITS), Err(Fallback::Ambiguous));
}

#[test]
fn a_range_beyond_the_bounds_or_the_fetch_keeps_the_sync_answer() {
    let (b, src, remote) = identity_case();
    let small = SearchLimits { max_records: 48 };
    assert_eq!(decide(&b, &src, &remote, small), Err(Fallback::TooLarge));
    // The source fetch stopped before the next sync (byte limit).
    let (b, mut src, remote) = identity_case();
    src.records.retain(|r| r.offset < 180);
    src.read_to = 180;
    assert_eq!(decide(&b, &src, &remote, LIMITS), Err(Fallback::TooLarge));
    // The remote fetch stopped before s.down + n.
    let (b, src, mut remote) = identity_case();
    remote.records.retain(|r| r.offset < 140);
    remote.read_to = 140;
    assert_eq!(decide(&b, &src, &remote, LIMITS), Err(Fallback::TooLarge));
}

#[test]
fn no_search_where_the_answer_is_already_exact() {
    let store = store(&[(100, 100), (200, 200)]);
    // n = 0: u = s.up + 1 gets s.down + 1, exact.
    assert_eq!(bracket(&store, &tp(), 101), None);
    // u = s.up gets s.down.
    assert_eq!(bracket(&store, &tp(), 100), None);
    assert_eq!(bracket(&store, &tp(), 200), None);
    assert!(bracket(&store, &tp(), 102).is_some());
    // The newest sync: no next one.
    assert_eq!(bracket(&store, &tp(), 250).and_then(|b| b.next), None);
}

#[test]
fn no_search_with_mm2_precision() {
    let mut store = OffsetSyncStore::with_precision(InitMode::MustReadToEnd, Precision::Mm2);
    store.finish_initial_read();
    store.apply(TOPIC, 0, 100, 100);
    assert_eq!(bracket(&store, &tp(), 150), None);
}

#[test]
fn the_translator_uses_an_exact_answer_only_for_the_sync_it_was_found_with() {
    let mut syncs = store(&[(0, 0), (100, 100), (200, 200)]);
    let mut cache = ContentCache::default();
    let s = OffsetSync::new(100, 100);
    cache.insert(tp(), 150, s, Some(150));
    cache.insert(tp(), 160, s, None);
    assert!(cache.touch(&tp(), 150, s));
    assert!(!cache.touch(&tp(), 150, OffsetSync::new(0, 0)));
    let t = ContentTranslator {
        store: &syncs,
        cache: &cache,
    };
    assert_eq!(t.translate(&tp(), 150), Translation::Translated(150));
    assert_eq!(t.translate(&tp(), 160), Translation::Translated(101));
    assert_eq!(t.translate(&tp(), 170), Translation::Translated(101));
    // A rewind (the source topic recreated): the entry no longer applies.
    syncs.apply(TOPIC, 0, 10, 500);
    let t = ContentTranslator {
        store: &syncs,
        cache: &cache,
    };
    assert_eq!(t.translate(&tp(), 150), Translation::Translated(501));
    // Offsets no group held during a round are dropped at its end.
    cache.end_round();
    assert_eq!(cache.len(), 2);
    assert!(cache.touch(&tp(), 150, s));
    cache.end_round();
    assert_eq!(cache.len(), 1);
    assert!(!cache.touch(&tp(), 160, s));
}
