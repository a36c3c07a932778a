//! The sync-history topic's format, writer and restore decision
//! (docs/translation.md, "Restarts and compaction").

use proptest::prelude::*;

use super::*;
use crate::{OffsetSyncStore, Precision, Translation};

const TOPIC: &str = "topic";

/// A simulated offset-syncs topic (partition 0): `(offset, partition, up, down)`.
type SyncLog = Vec<(i64, i32, i64, i64)>;

/// Identity syncs of partition `p` for upstream offsets `from..to` every `step`,
/// at offsets from `first_offset` on.
fn identity(p: i32, from: i64, to: i64, step: i64, first_offset: i64) -> SyncLog {
    (from..to)
        .step_by(step as usize)
        .enumerate()
        .map(|(i, u)| (first_offset + i as i64, p, u, u))
        .collect()
}

/// A precise store that read `log` (load-all-history mode), and a writer fed the
/// same syncs; the archive holds what the writer wrote, with the mark at `end`.
struct Run {
    store: OffsetSyncStore,
    writer: ArchiveWriter,
    archive: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

fn precise_store(max: usize) -> OffsetSyncStore {
    OffsetSyncStore::with_precision(
        InitMode::LoadAllHistory,
        Precision::Precise { max_syncs: max },
    )
}

impl Run {
    fn new(max: usize) -> Self {
        Run {
            store: precise_store(max),
            writer: ArchiveWriter::new(max, 0),
            archive: Vec::new(),
        }
    }

    fn feed(&mut self, log: &[(i64, i32, i64, i64)]) {
        for &(o, p, u, d) in log {
            let applied = self.store.apply(TOPIC, p, u, d);
            self.writer
                .on_sync(TOPIC, p, o, OffsetSync::new(u, d), applied.restarted);
        }
    }

    /// Writes what the writer has, with the mark at `position`; returns how
    /// many records that was.
    fn flush(&mut self, position: i64) -> usize {
        let records = self.writer.take_records(position);
        let n = records.len();
        for (k, v) in records {
            self.archive.push((k.encode().expect("key"), v));
        }
        n
    }
}

/// A restart: a fresh store reads `topic` (the surviving records), the restore
/// decides from `archive`, and the accepted histories are put in the store.
fn restart(
    archive: &[(Vec<u8>, Option<Vec<u8>>)],
    topic: &[(i64, i32, i64, i64)],
    end: i64,
    max: usize,
    mode: InitMode,
) -> (OffsetSyncStore, RestoreDecision) {
    let mut restore = ArchiveRestore::new();
    for (k, v) in archive {
        let _ = restore.record(Some(k), v.as_deref());
    }
    let mut store = OffsetSyncStore::with_precision(mode, Precision::Precise { max_syncs: max });
    for &(o, p, u, d) in topic {
        store.apply(TOPIC, p, u, d);
        restore.observe(o, Some((TOPIC, p, OffsetSync::new(u, d))));
    }
    store.finish_initial_read();
    let decision = restore.finish(end, mode);
    for r in &decision.accepted {
        let syncs: Vec<OffsetSync> = r.syncs.iter().map(|s| s.sync).collect();
        store
            .restore_history(&r.topic, r.partition, &syncs, r.complete)
            .expect("the store takes an accepted history");
    }
    (store, decision)
}

/// What compaction leaves of `log`: the newest record of each partition.
fn compacted(log: &[(i64, i32, i64, i64)]) -> SyncLog {
    let mut newest: BTreeMap<i32, (i64, i32, i64, i64)> = BTreeMap::new();
    for &r in log {
        newest.insert(r.1, r);
    }
    let mut out: SyncLog = newest.into_values().collect();
    out.sort();
    out
}

fn translated(store: &OffsetSyncStore, p: i32, u: i64) -> Translation {
    store.translate_offset(TOPIC, p, u)
}

#[test]
fn chunks_marks_and_keys_round_trip_through_their_bytes() {
    let chunk = Chunk {
        generation: 7,
        syncs: vec![
            ArchivedSync::new(0, i64::MIN / 4, -5),
            ArchivedSync::new(1, i64::MIN / 4, 3),
            // A downstream decrease (docs/behaviour.md H.8) is kept as it is.
            ArchivedSync::new(1_000_000, 1 << 40, -(1 << 50)),
        ],
    };
    assert_eq!(Chunk::decode(&chunk.encode()), Ok(chunk));
    for position in [0, 1, -1, i64::MAX, i64::MIN] {
        let mark = Mark { position };
        assert_eq!(Mark::decode(&mark.encode()), Ok(mark));
    }
    for key in [
        ArchiveKey::Mark,
        ArchiveKey::Chunk {
            topic: "orders.é".into(),
            partition: 0,
            chunk: u32::MAX,
        },
    ] {
        assert_eq!(
            ArchiveKey::decode(&key.encode().expect("encodable")),
            Ok(key)
        );
    }
    // An identity history every 100 offsets, interleaved with 10 partitions:
    // about 4 bytes a sync.
    let syncs: Vec<ArchivedSync> = (0..CHUNK_SYNCS as i64)
        .map(|i| ArchivedSync::new(5_000 + 10 * i, 1_000_000 + 100 * i, 2_000_000 + 100 * i))
        .collect();
    let bytes = Chunk {
        generation: 3,
        syncs,
    }
    .encode();
    assert!(bytes.len() <= 4 * CHUNK_SYNCS + 16, "{} bytes", bytes.len());
}

#[test]
fn malformed_records_are_clear_errors() {
    let good = Chunk {
        generation: 1,
        syncs: vec![ArchivedSync::new(4, 10, 10), ArchivedSync::new(5, 20, 20)],
    }
    .encode();
    assert_eq!(
        Chunk::decode(&good[..good.len() - 1]),
        Err(ArchiveError::Truncated("downstream delta"))
    );
    let mut trailing = good.clone();
    trailing.push(0);
    assert_eq!(
        Chunk::decode(&trailing),
        Err(ArchiveError::TrailingBytes(1))
    );
    let mut version = good.clone();
    version[0] = 9;
    assert_eq!(
        Chunk::decode(&version),
        Err(ArchiveError::UnsupportedVersion(9))
    );
    // Offsets that do not increase.
    let same_offset = [0u8, 1, 2, 8, 20, 20, 0, 20, 0];
    assert_eq!(
        Chunk::decode(&same_offset),
        Err(ArchiveError::Disordered(1))
    );
    assert_eq!(Chunk::decode(&[0, 1, 0]), Err(ArchiveError::BadCount(0)));
    assert_eq!(Chunk::decode(&[0, 1, 33]), Err(ArchiveError::BadCount(33)));
    assert_eq!(
        Chunk::decode(&[
            0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f
        ]),
        Err(ArchiveError::BadVarint("generation"))
    );
    assert_eq!(ArchiveKey::decode(&[]), Err(ArchiveError::UnknownKey(None)));
    assert_eq!(
        ArchiveKey::decode(&[9]),
        Err(ArchiveError::UnknownKey(Some(9)))
    );
    assert_eq!(
        ArchiveKey::decode(&[2, 0]),
        Err(ArchiveError::TrailingBytes(1))
    );
    let negative = [1u8, 0, 1, b't', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
    assert_eq!(
        ArchiveKey::decode(&negative),
        Err(ArchiveError::NegativePartition(-1))
    );
    assert_eq!(
        ArchiveKey::decode(&[1, 0, 1, 0xff, 0, 0, 0, 0, 0, 0, 0, 0]),
        Err(ArchiveError::BadTopic)
    );
    // Every error names what was wrong.
    assert!(
        ArchiveError::Truncated("offset")
            .to_string()
            .contains("offset")
    );
}

proptest! {
    #[test]
    fn decoding_any_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
        let _ = Chunk::decode(&bytes);
        let _ = Mark::decode(&bytes);
        let _ = ArchiveKey::decode(&bytes);
    }

    #[test]
    fn any_ordered_chunk_round_trips(
        first in (any::<i64>(), any::<i64>(), any::<i64>()),
        steps in prop::collection::vec((1i64..1_000_000, 0i64..1_000_000, -1_000_000i64..1_000_000), 0..31),
        generation in any::<u64>(),
    ) {
        let mut syncs = vec![ArchivedSync::new(first.0 >> 2, first.1 >> 2, first.2 >> 2)];
        for (o, u, d) in steps {
            let p = *syncs.last().unwrap();
            syncs.push(ArchivedSync::new(p.offset + o, p.sync.upstream + u, p.sync.downstream + d));
        }
        let chunk = Chunk { generation, syncs };
        prop_assert_eq!(Chunk::decode(&chunk.encode()), Ok(chunk));
    }
}

#[test]
fn a_malformed_chunk_is_skipped_and_refuses_only_its_partition() {
    let mut run = Run::new(10_000);
    let mut log = identity(0, 0, 10_000, 100, 0);
    log.extend(identity(1, 0, 10_000, 100, 100));
    run.feed(&log);
    run.flush(200);
    // Chunk 1 of partition 1 is replaced by garbage.
    let key = ArchiveKey::Chunk {
        topic: TOPIC.into(),
        partition: 1,
        chunk: 1,
    };
    run.archive
        .push((key.encode().unwrap(), Some(vec![0, 1, 1, 0xff])));
    let (store, d) = restart(
        &run.archive,
        &compacted(&log),
        200,
        10_000,
        InitMode::LoadAllHistory,
    );
    assert_eq!(d.skipped, 1);
    assert_eq!(d.accepted.len(), 1);
    assert_eq!(
        d.refused,
        vec![((TOPIC.to_owned(), 1), Refusal::BrokenChunks)]
    );
    assert_eq!(translated(&store, 0, 5_050), Translation::Translated(5_001));
    assert_eq!(translated(&store, 1, 5_050), Translation::TooOld);
}

#[test]
fn after_compaction_the_archived_history_is_restored_when_the_topic_holds_everything_after_the_mark()
 {
    let mut run = Run::new(10_000);
    let log = identity(0, 0, 100_000, 100, 0);
    run.feed(&log);
    run.flush(1_000);
    // MM2 goes on while we are stopped: 10 more syncs after the mark.
    let after = identity(0, 100_000, 101_000, 100, 1_000);
    let mut topic = compacted(&log);
    topic.extend(&after);
    let (store, d) = restart(
        &run.archive,
        &topic,
        1_010,
        10_000,
        InitMode::LoadAllHistory,
    );
    assert_eq!(d.refused_all, None);
    assert!(d.refused.is_empty(), "{:?}", d.refused);
    assert_eq!(d.accepted.len(), 1);
    assert_eq!(d.accepted[0].syncs.len(), 1_010);
    assert!(d.accepted[0].complete);
    // Precise at any lag, as before the restart.
    for u in [150, 10_050, 99_999, 100_550] {
        assert_eq!(
            translated(&store, 0, u),
            Translation::Translated(u - u % 100 + 1)
        );
    }
    assert_eq!(store.fallen_back_partitions(), 0);

    // The restored history is written on: the open chunk, then the next mark.
    let mut writer = ArchiveWriter::new(10_000, d.next_generation);
    writer.tombstone(d.stale.iter().cloned());
    for r in &d.accepted {
        writer.adopt(r);
    }
    let records = writer.take_records(1_010);
    // 1,010 syncs: chunk 31 (syncs 992..) is open and rewritten, nothing else.
    assert_eq!(records.len(), 2, "{records:?}");
    let mut archive = run.archive.clone();
    archive.extend(records.into_iter().map(|(k, v)| (k.encode().unwrap(), v)));
    let (_, again) = restart(
        &archive,
        &compacted(&topic),
        1_010,
        10_000,
        InitMode::LoadAllHistory,
    );
    assert_eq!(again.accepted.len(), 1);
    assert_eq!(again.accepted[0].syncs, d.accepted[0].syncs);
}

#[test]
fn a_gap_after_the_mark_refuses_every_archived_history() {
    let mut run = Run::new(10_000);
    let log = identity(0, 0, 10_000, 100, 0);
    run.feed(&log);
    run.flush(100);
    // Syncs written after the mark, compacted away but for the newest.
    let after = identity(0, 10_000, 11_000, 100, 100);
    let mut topic = compacted(&log);
    topic.extend(compacted(&after));
    let (store, d) = restart(&run.archive, &topic, 110, 10_000, InitMode::LoadAllHistory);
    assert_eq!(
        d.refused_all,
        Some(Refusal::GapAfterMark {
            expected: 100,
            found: 109
        })
    );
    assert!(d.accepted.is_empty());
    // The topic's precision: the last sync only.
    assert_eq!(translated(&store, 0, 5_050), Translation::TooOld);
    // Every archived chunk is to be tombstoned.
    assert_eq!(d.stale.len(), 4);
    // The topic ending before the mark (recreated) refuses too.
    let (_, d) = restart(&run.archive, &[], 0, 10_000, InitMode::LoadAllHistory);
    assert_eq!(
        d.refused_all,
        Some(Refusal::TopicBehindMark { mark: 100, end: 0 })
    );
}

#[test]
fn a_rewind_after_the_mark_refuses_that_partitions_history() {
    let mut run = Run::new(10_000);
    let mut log = identity(0, 0, 10_000, 100, 0);
    log.extend(identity(1, 0, 10_000, 100, 100));
    run.feed(&log);
    run.flush(200);
    // Partition 0's source topic is recreated: its syncs start again at 0,
    // landing after the old ones downstream; partition 1 goes on.
    let mut topic = compacted(&log);
    topic.push((200, 0, 0, 20_000));
    topic.push((201, 0, 100, 20_100));
    topic.push((202, 1, 10_000, 10_000));
    let (store, d) = restart(&run.archive, &topic, 203, 10_000, InitMode::LoadAllHistory);
    assert_eq!(d.refused, vec![((TOPIC.to_owned(), 0), Refusal::Rewound)]);
    assert_eq!(d.accepted.len(), 1);
    assert_eq!(d.accepted[0].partition, 1);
    // Nothing from before the rewind: offset 50 is the new topic's.
    assert_eq!(translated(&store, 0, 50), Translation::Translated(20_001));
    assert_eq!(translated(&store, 1, 5_050), Translation::Translated(5_001));
}

#[test]
fn a_surviving_sync_that_is_not_the_archived_one_refuses_that_partition() {
    let mut run = Run::new(10_000);
    let log = identity(0, 0, 10_000, 100, 0);
    run.feed(&log);
    run.flush(100);
    // The offset-syncs topic was recreated and refilled: other syncs, same offsets.
    let topic: SyncLog = identity(0, 0, 10_000, 100, 0)
        .into_iter()
        .map(|(o, p, u, d)| (o, p, u, d + 7))
        .collect();
    let (_, d) = restart(&run.archive, &topic, 100, 10_000, InitMode::LoadAllHistory);
    assert_eq!(d.refused, vec![((TOPIC.to_owned(), 0), Refusal::Differs)]);
    // A partition whose newest archived sync is gone, with nothing newer.
    let (_, d) = restart(
        &run.archive,
        &[(50, 1, 0, 0)],
        100,
        10_000,
        InitMode::LoadAllHistory,
    );
    assert_eq!(
        d.refused,
        vec![((TOPIC.to_owned(), 0), Refusal::NewestGone)]
    );
}

#[test]
fn must_read_to_end_uses_no_archived_history() {
    let mut run = Run::new(10_000);
    let log = identity(0, 0, 10_000, 100, 0);
    run.feed(&log);
    run.flush(100);
    let (store, d) = restart(
        &run.archive,
        &compacted(&log),
        100,
        10_000,
        InitMode::MustReadToEnd,
    );
    assert_eq!(d.refused_all, Some(Refusal::MustReadToEnd));
    assert!(d.accepted.is_empty());
    assert_eq!(d.next_generation, 1);
    assert_eq!(translated(&store, 0, 5_050), Translation::TooOld);
}

#[test]
fn a_restored_history_respects_the_budget() {
    let mut run = Run::new(10_000);
    let log = identity(0, 0, 10_000, 100, 0);
    run.feed(&log);
    run.flush(100);
    let (store, d) = restart(
        &run.archive,
        &compacted(&log),
        100,
        30,
        InitMode::LoadAllHistory,
    );
    assert_eq!(d.accepted.len(), 1);
    let held = store.precise_history(TOPIC, 0).expect("history");
    assert_eq!(held.len(), 30);
    assert_eq!(held.oldest(), Some(OffsetSync::new(7_000, 7_000)));
    assert_eq!(store.fallen_back_partitions(), 1);
    assert_eq!(translated(&store, 0, 7_050), Translation::Translated(7_001));
}

#[test]
fn the_writer_writes_each_sealed_chunk_once_and_drops_chunks_outside_the_budget() {
    let mut run = Run::new(100);
    let mut written = 0;
    // 1,000 syncs, flushed every 10: 31 sealed chunks written once each, the
    // open one at each flush, and the chunks below the budget tombstoned.
    for n in 0..100 {
        let from = n * 1_000;
        run.feed(&identity(0, from, from + 1_000, 100, n * 10));
        written += run.flush(n * 10 + 10);
    }
    let sealed = 1_000 / CHUNK_SYNCS;
    let tombstones = run.archive.iter().filter(|(_, v)| v.is_none()).count();
    assert_eq!(tombstones, (1_000 - 100) / CHUNK_SYNCS);
    assert!(
        written <= sealed + tombstones + 2 * 100,
        "{written} records"
    );
    let (store, d) = restart(
        &run.archive,
        &compacted(&identity(0, 0, 100_000, 100, 0)),
        1_000,
        100,
        InitMode::LoadAllHistory,
    );
    assert_eq!(d.accepted.len(), 1, "{:?}", d.refused);
    // Chunks from 28 on (syncs 896..) are kept: the newest 100 syncs and more.
    assert_eq!(d.accepted[0].first_chunk, 28);
    assert!(!d.accepted[0].complete);
    assert_eq!(store.precise_history(TOPIC, 0).unwrap().len(), 100);
    assert_eq!(
        translated(&store, 0, 95_050),
        Translation::Translated(95_001)
    );
}

#[test]
fn a_rewind_seen_while_running_starts_a_new_generation_that_the_restore_keeps() {
    let mut run = Run::new(10_000);
    run.feed(&identity(0, 0, 10_000, 100, 0));
    run.flush(100);
    // Rewind: the old generation's chunks are tombstoned, the new one written.
    let rewound = identity(0, 0, 500, 100, 100);
    run.feed(&rewound);
    run.flush(105);
    let mut topic = compacted(&identity(0, 0, 10_000, 100, 0));
    topic.extend(&rewound);
    let (store, d) = restart(&run.archive, &topic, 105, 10_000, InitMode::LoadAllHistory);
    assert_eq!(d.accepted.len(), 1, "{:?}", d.refused);
    assert_eq!(d.accepted[0].syncs.len(), 5);
    assert_eq!(translated(&store, 0, 250), Translation::Translated(201));
    assert_eq!(translated(&store, 0, 5_050), Translation::Translated(401));
}
