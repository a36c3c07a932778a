//! Precise translation (docs/translation.md, "Precise translation"): a store with
//! [`Precision::Precise`] checked against the same syncs in a store with MM2's
//! precision, and against the true positions of a simulated mirror.

use proptest::prelude::*;

use super::*;

const TOPIC: &str = "topic";

/// A store started like the golden vectors (must-read mode, empty topic), then fed live.
fn live(precision: Precision) -> OffsetSyncStore {
    let mut store = OffsetSyncStore::with_precision(InitMode::MustReadToEnd, precision);
    store.finish_initial_read();
    store
}

fn precise(max_syncs: usize) -> Precision {
    Precision::Precise { max_syncs }
}

fn feed(store: &mut OffsetSyncStore, syncs: &[(i64, i64)]) {
    for &(up, down) in syncs {
        store.apply(TOPIC, 0, up, down);
    }
}

fn translate(store: &OffsetSyncStore, upstream: i64) -> Translation {
    store.translate_offset(TOPIC, 0, upstream)
}

fn translated(store: &OffsetSyncStore, upstream: i64) -> i64 {
    match translate(store, upstream) {
        Translation::Translated(d) => d,
        other => panic!("translate({upstream}) = {other:?}"),
    }
}

/// An identity mirror of `records` records (offsets `0..records`) with a sync every
/// `spacing` records, as MM2's source task writes them with `offset.lag.max = spacing`.
fn identity(records: i64, spacing: i64) -> Vec<(i64, i64)> {
    (0..records)
        .step_by(spacing as usize)
        .map(|o| (o, o))
        .collect()
}

fn held(store: &OffsetSyncStore) -> Vec<(i64, i64)> {
    store
        .precise_history(TOPIC, 0)
        .expect("a precise history")
        .syncs()
        .map(|s| (s.upstream, s.downstream))
        .collect()
}

#[test]
fn mm2_precision_keeps_no_history_and_reports_its_precision() {
    let mut store = live(Precision::Mm2);
    feed(&mut store, &identity(1_000, 10));
    assert_eq!(store.precision(), Precision::Mm2);
    assert!(store.precise_history(TOPIC, 0).is_none());
    assert_eq!(store.precise_syncs(), 0);
    assert_eq!(store.fallen_back_partitions(), 0);
    let store = live(precise(0));
    assert_eq!(store.precision(), precise(1));
}

#[test]
fn an_identity_mirror_of_a_million_records_rereads_less_than_the_sync_spacing_at_every_lag() {
    // The numbers: 1,000,000 records, a sync every 100, groups lagging the
    // log end (offset 1,000,000) by 1,000 ... 900,000 records.
    let syncs = identity(1_000_000, 100);
    assert_eq!(syncs.len(), 10_000);
    let mut mm2 = live(Precision::Mm2);
    let mut exact = live(precise(10_000));
    feed(&mut mm2, &syncs);
    feed(&mut exact, &syncs);
    assert_eq!(exact.fallen_back_partitions(), 0);
    for (lag, mm2_rereads) in [
        (150, 49),
        (1_000, 599),
        (10_000, 4_399),
        (100_000, 80_799),
        // MM2 restarts the group at offset 1: everything it had read is read again.
        (900_000, 99_999),
    ] {
        let committed = 1_000_000 - lag;
        assert_eq!(
            committed - translated(&mm2, committed),
            mm2_rereads,
            "MM2 at lag {lag}"
        );
        let rereads = committed - translated(&exact, committed);
        assert!(
            (0..100).contains(&rereads),
            "precise at lag {lag}: {rereads}"
        );
    }
    // A group at a sync is translated exactly.
    assert_eq!(translated(&exact, 900_000), 900_000);
}

#[test]
fn precise_answers_equal_mm2_at_the_head() {
    let mut mm2 = live(Precision::Mm2);
    let mut exact = live(precise(50));
    let mut up = 0;
    for n in 0..2_000i64 {
        // Uneven steps, and a sync repeating the previous upstream offset now and then.
        up += [1, 0, 7, 100, 3][(n % 5) as usize];
        let down = up * 2 + n;
        mm2.apply(TOPIC, 0, up, down);
        exact.apply(TOPIC, 0, up, down);
        for u in [up, up + 1, up + 1_000] {
            assert_eq!(translate(&exact, u), translate(&mm2, u), "after {n}, u {u}");
        }
    }
}

#[test]
fn an_upstream_rewind_discards_the_precise_history_so_no_older_sync_comes_back() {
    let mut exact = live(precise(1_000));
    feed(&mut exact, &identity(1_001, 10));
    assert_eq!(translated(&exact, 400), 400);
    // The source topic was recreated: upstream starts again, downstream goes on.
    let applied = exact.apply(TOPIC, 0, 5, 1_003);
    assert!(applied.restarted && !applied.fell_back);
    exact.apply(TOPIC, 0, 500, 1_600);
    assert_eq!(held(&exact), [(5, 1_003), (500, 1_600)]);
    assert_eq!(translate(&exact, 4), Translation::TooOld);
    // Not 400: the sync (400, 400) described the old topic.
    assert_eq!(translated(&exact, 400), 1_004);
    assert_eq!(translated(&exact, 500), 1_600);
}

#[test]
fn must_read_to_end_initial_read_keeps_only_the_last_sync_in_the_precise_history() {
    let mut exact = OffsetSyncStore::with_precision(InitMode::MustReadToEnd, precise(100));
    feed(&mut exact, &[(100, 1000), (50, 500), (200, 2000)]);
    exact.finish_initial_read();
    assert_eq!(held(&exact), [(200, 2000)]);
    assert_eq!(translate(&exact, 150), Translation::TooOld);
    feed(&mut exact, &[(300, 3000), (400, 4000)]);
    assert_eq!(held(&exact), [(200, 2000), (300, 3000), (400, 4000)]);
    assert_eq!(translated(&exact, 350), 3001);
}

#[test]
fn load_all_history_initial_read_keeps_every_sync_since_the_last_rewind() {
    let mut exact = OffsetSyncStore::with_precision(InitMode::LoadAllHistory, precise(100));
    feed(
        &mut exact,
        &[(100, 1000), (50, 500), (60, 600), (200, 2000)],
    );
    exact.finish_initial_read();
    // 50 is a rewind, so 100 is gone; 60 is kept although MM2's slots may drop it.
    assert_eq!(held(&exact), [(50, 500), (60, 600), (200, 2000)]);
    assert_eq!(translate(&exact, 49), Translation::TooOld);
    assert_eq!(translated(&exact, 150), 601);
}

#[test]
fn a_downstream_decrease_keeps_the_older_syncs_as_mm2_does() {
    // docs/behaviour.md H.8: not a rewind, for either precision.
    let mut exact = live(precise(100));
    feed(&mut exact, &[(100, 200), (150, 251), (200, 10)]);
    assert_eq!(translated(&exact, 150), 251);
    assert_eq!(translated(&exact, 200), 10);
}

#[test]
fn a_sync_evicted_from_the_slots_still_translates_precisely() {
    // The golden "evicted sync" vector: MM2 lost (10, 5) and answers 1 for 10..=19.
    let syncs = [(0, 0), (10, 5), (20, 9), (30, 30)];
    let mut mm2 = live(Precision::Mm2);
    let mut exact = live(precise(100));
    feed(&mut mm2, &syncs);
    feed(&mut exact, &syncs);
    assert_eq!(translated(&mm2, 15), 1);
    assert_eq!(translated(&exact, 10), 5);
    assert_eq!(translated(&exact, 15), 6);
}

#[test]
fn a_partition_over_its_budget_falls_back_to_mm2_precision_for_older_offsets_only() {
    let syncs = identity(100_000, 100);
    let mut mm2 = live(Precision::Mm2);
    let mut exact = live(precise(100));
    let mut fell_back = Vec::new();
    for (n, &(up, down)) in syncs.iter().enumerate() {
        mm2.apply(TOPIC, 0, up, down);
        if exact.apply(TOPIC, 0, up, down).fell_back {
            fell_back.push(n);
        }
    }
    // Reported once, when the 101st sync pushed out the first.
    assert_eq!(fell_back, [100]);
    assert_eq!(exact.fallen_back_partitions(), 1);
    assert_eq!(exact.precise_syncs(), 100);
    // The window holds the newest 100 syncs (offsets 90,000 to 99,900).
    assert_eq!(held(&exact).first(), Some(&(90_000, 90_000)));
    for committed in [95_050, 90_000, 90_001] {
        assert!(committed - translated(&exact, committed) < 100);
    }
    // Older offsets get exactly MM2's answer.
    for committed in [89_999, 50_000, 1_000, 0] {
        assert_eq!(translate(&exact, committed), translate(&mm2, committed));
    }
    // A rewind starts a complete history again.
    exact.apply(TOPIC, 0, 0, 200_000);
    assert_eq!(exact.fallen_back_partitions(), 0);
    exact.apply(TOPIC, 0, 10, 200_010);
    assert_eq!(held(&exact), [(0, 200_000), (10, 200_010)]);
}

#[test]
fn removing_a_partition_or_topic_forgets_its_history_and_its_fallback() {
    let mut exact = live(precise(2));
    for p in 0..3 {
        for (up, down) in identity(50, 10) {
            exact.apply(TOPIC, p, up, down);
        }
    }
    exact.apply("other", 0, 1, 1);
    assert_eq!(exact.fallen_back_partitions(), 3);
    assert!(exact.remove_partition(TOPIC, 1));
    assert_eq!(exact.fallen_back_partitions(), 2);
    assert!(exact.precise_history(TOPIC, 1).is_none());
    assert_eq!(exact.remove_topic(TOPIC), 2);
    assert_eq!(exact.fallen_back_partitions(), 0);
    assert_eq!(exact.precise_syncs(), 1);
    // A new sync for a removed partition starts a fresh, complete history.
    exact.apply(TOPIC, 0, 7, 7);
    assert_eq!(held(&exact), [(7, 7)]);
}

#[test]
fn a_million_syncs_take_about_eight_bytes_each() {
    let mut exact = live(precise(1_000_000));
    let before = exact.approx_heap_bytes();
    feed(&mut exact, &identity(100_000_000, 100));
    assert_eq!(exact.precise_syncs(), 1_000_000);
    let bytes = exact.approx_heap_bytes() - before;
    let per_sync = exact
        .precise_history(TOPIC, 0)
        .map(SyncHistory::bytes_per_sync);
    assert_eq!(per_sync, Some(8));
    // Capacity grows by an eighth, so at most ~12.5 % is unused.
    assert!((8_000_000..=9_100_000).contains(&bytes), "{bytes} B");
}

// ----- a simulated mirror: the true positions that translation must not pass -----

/// What happens next on the simulated source partition.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// The next record, `gap` offsets after the previous one (compaction,
    /// transaction markers), mirrored unless `filtered` (a transformation dropped it).
    Record { gap: i64, filtered: bool },
    /// Connect's offset flush: the delayed sync, if any, is written.
    Flush,
    /// The source topic is deleted and recreated: offsets start again at
    /// `start_permille` ‰ of the previous last offset; the remote topic keeps growing.
    Recreate { start_permille: i64 },
}

/// One source partition mirrored by MM2's source task, writing offset syncs by the
/// rule of docs/behaviour.md C.1.
struct Mirror {
    lag: i64,
    next_up: i64,
    next_down: i64,
    /// The current source topic's records: (upstream, downstream if mirrored).
    records: Vec<(i64, Option<i64>)>,
    prev_up: i64,
    prev_down: i64,
    last_sync_down: i64,
    delayed: Option<(i64, i64)>,
}

impl Mirror {
    fn new(lag: i64) -> Self {
        Mirror {
            lag,
            next_up: 0,
            next_down: 0,
            records: Vec::new(),
            prev_up: -1,
            prev_down: -1,
            last_sync_down: -1,
            delayed: None,
        }
    }

    /// Carries out `step`; returns the offset sync written, if any.
    fn step(&mut self, step: Step) -> Option<(i64, i64)> {
        match step {
            Step::Record { gap, filtered } => {
                let u = self.next_up + gap;
                self.next_up = u + 1;
                if filtered {
                    self.records.push((u, None));
                    return None;
                }
                let d = self.next_down;
                self.next_down += 1;
                self.records.push((u, Some(d)));
                let trigger = self.last_sync_down == -1
                    || d - (self.last_sync_down + 1) >= self.lag
                    || u - self.prev_up != 1
                    || d < self.prev_down;
                self.prev_up = u;
                self.prev_down = d;
                if trigger {
                    self.last_sync_down = d;
                    self.delayed = None;
                    Some((u, d))
                } else {
                    self.delayed = Some((u, d));
                    None
                }
            }
            Step::Flush => self.delayed.take(),
            Step::Recreate { start_permille } => {
                // Only below the last mirrored record, so the first new record is a
                // gap for the task and writes a sync.
                if self.prev_up >= 1 {
                    self.next_up = self.prev_up * start_permille / 1000;
                    self.records.clear();
                    self.delayed = None;
                }
                None
            }
        }
    }

    /// Where a group that committed `u` (of the current source topic) resumes on the
    /// target: the first mirrored record at or after `u`, else the remote log end.
    fn true_position(&self, u: i64) -> i64 {
        let from = self.records.partition_point(|r| r.0 < u);
        self.records[from..]
            .iter()
            .find_map(|r| r.1)
            .unwrap_or(self.next_down)
    }

    /// The first mirrored record of the current source topic.
    fn first_mirrored(&self) -> Option<i64> {
        self.records.iter().find(|r| r.1.is_some()).map(|r| r.0)
    }
}

/// Checks the precise store against MM2's and the mirror's true positions for every
/// offset around the current source topic's records.
fn check(mirror: &Mirror, mm2: &OffsetSyncStore, exact: &OffsetSyncStore) -> Result<(), String> {
    let Some(first_mirrored) = mirror.first_mirrored() else {
        return Ok(());
    };
    let complete = exact
        .precise_history(TOPIC, 0)
        .is_some_and(SyncHistory::is_complete);
    let newest = mm2.layout(TOPIC, 0).and_then(|l| l.slot(0));
    let mut queries: Vec<i64> = mirror
        .records
        .iter()
        .flat_map(|r| [r.0 - 1, r.0, r.0 + 1])
        .chain([mirror.next_up, mirror.next_up + 5])
        .filter(|&u| u >= mirror.records[0].0)
        .collect();
    queries.sort_unstable();
    queries.dedup();
    for u in queries {
        let (m, p) = (translate(mm2, u), translate(exact, u));
        if let Translation::Translated(m) = m {
            match p {
                Translation::Translated(p) if p >= m => {}
                _ => return Err(format!("u {u}: precise {p:?} below MM2's {m}")),
            }
        }
        if newest.is_some_and(|n| u >= n.upstream) && p != m {
            return Err(format!("u {u} at the head: precise {p:?}, MM2 {m:?}"));
        }
        if let Translation::Translated(p) = p {
            let truth = mirror.true_position(u);
            if p > truth {
                return Err(format!("u {u}: precise {p} past the true position {truth}"));
            }
            if complete && u >= first_mirrored && truth - p > mirror.lag {
                return Err(format!(
                    "u {u}: precise {p} re-reads {} > offset.lag.max {}",
                    truth - p,
                    mirror.lag
                ));
            }
        }
    }
    Ok(())
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        20 => (prop_oneof![8 => Just(0i64), 1 => 1i64..=5, 1 => 6i64..=500], prop::bool::weighted(0.15))
            .prop_map(|(gap, filtered)| Step::Record { gap, filtered }),
        1 => Just(Step::Flush),
        1 => (0i64..=999).prop_map(|start_permille| Step::Recreate { start_permille }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random mirrors (gaps, filtered records, delayed syncs, recreated topics):
    /// precise is at least MM2's answer whenever MM2 has one, equal at the head,
    /// never past the true position, and re-reads at most `offset.lag.max` while
    /// the history is complete; the history restarts exactly when the slots do.
    #[test]
    fn precise_lies_between_mm2_and_the_true_position_for_random_mirrors_with_rewinds(
        lag in 0i64..=20,
        max_syncs in prop_oneof![Just(1_000_000usize), 1usize..=40],
        steps in prop::collection::vec(step(), 1..1_500),
    ) {
        let mut mirror = Mirror::new(lag);
        let mut mm2 = live(Precision::Mm2);
        let mut exact = live(precise(max_syncs));
        for (n, &s) in steps.iter().enumerate() {
            if let Some((up, down)) = mirror.step(s) {
                let before = mm2.layout(TOPIC, 0).and_then(|l| l.slot(0));
                mm2.apply(TOPIC, 0, up, down);
                let applied = exact.apply(TOPIC, 0, up, down);
                let rewind = before.is_none_or(|b| up < b.upstream);
                prop_assert_eq!(applied.restarted, rewind);
                let history = exact.precise_history(TOPIC, 0).expect("history");
                prop_assert!(history.len() <= max_syncs);
                if history.is_complete() {
                    // The oldest sync held is the generation's floor, slot 63.
                    let floor = mm2.layout(TOPIC, 0).and_then(|l| l.slot(LAST_SLOT));
                    prop_assert_eq!(history.oldest(), floor);
                }
            }
            if n % 100 == 99 {
                check(&mirror, &mm2, &exact).map_err(TestCaseError::fail)?;
            }
        }
        check(&mirror, &mm2, &exact).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn a_filtered_and_compacted_mirror_is_never_translated_past_the_true_position() {
    // Every 997th record filtered, a compaction gap of 3 after every 500th, syncs
    // by MM2's rule with offset.lag.max = 100; then every offset is checked.
    let mut mirror = Mirror::new(100);
    let mut mm2 = live(Precision::Mm2);
    let mut exact = live(precise(1_000_000));
    for n in 0..20_000i64 {
        let gap = if n % 500 == 499 { 3 } else { 0 };
        let step = Step::Record {
            gap,
            filtered: n % 997 == 3,
        };
        if let Some((up, down)) = mirror.step(step) {
            mm2.apply(TOPIC, 0, up, down);
            exact.apply(TOPIC, 0, up, down);
        }
    }
    check(&mirror, &mm2, &exact).unwrap_or_else(|e| panic!("{e}"));
    // And it is far more precise than MM2 for old offsets.
    let u = mirror.records[10_000].0;
    let truth = mirror.true_position(u);
    assert!(truth - translated(&exact, u) <= 100);
    let mm2_rereads = truth - translated(&mm2, u);
    assert!(mm2_rereads > 1_000, "MM2 re-reads {mm2_rereads}");
}
