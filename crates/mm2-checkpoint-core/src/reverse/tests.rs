use super::*;
use crate::sync_store::{InitMode, Precision};
use crate::types::Translation;
use proptest::prelude::*;

fn sync(upstream: i64, downstream: i64) -> OffsetSync {
    OffsetSync::new(upstream, downstream)
}

fn back(syncs: &[(i64, i64)], downstream: i64) -> ReverseTranslation {
    let mut syncs: Vec<OffsetSync> = syncs.iter().map(|&(u, d)| sync(u, d)).collect();
    translate_through(&mut syncs, downstream)
}

fn position(upstream: i64, through: (i64, i64), exact: bool) -> ReverseTranslation {
    ReverseTranslation::Translated(ReversePosition {
        upstream,
        through: sync(through.0, through.1),
        exact,
    })
}

#[test]
fn a_commit_at_a_sync_resumes_at_its_record() {
    assert_eq!(
        back(&[(0, 0), (100, 100)], 100),
        position(100, (100, 100), true)
    );
    assert_eq!(back(&[(0, 0), (100, 100)], 0), position(0, (0, 0), true));
}

#[test]
fn a_commit_past_a_sync_resumes_after_its_record() {
    assert_eq!(back(&[(0, 0), (100, 100)], 50), position(1, (0, 0), false));
}

#[test]
fn a_commit_past_the_last_sync_resumes_after_it() {
    assert_eq!(
        back(&[(0, 0), (100, 100)], 150),
        position(101, (100, 100), false)
    );
}

#[test]
fn a_commit_before_every_sync_is_not_translated() {
    assert_eq!(
        back(&[(100, 200), (300, 400)], 150),
        ReverseTranslation::TooOld
    );
    assert_eq!(back(&[], 150), ReverseTranslation::NoSync);
}

#[test]
fn offsets_are_never_extrapolated_across_markers() {
    // Source records 10..=14 were written on the target at 20, 22, 24, 26, 28
    // (a transaction marker after each); only the first has a sync. A commit
    // at 25 has read the copies of 10, 11 and 12, but extrapolating
    // 10 + (25 - 20) = 15 would skip 13 and 14.
    assert_eq!(back(&[(10, 20)], 25), position(11, (10, 20), false));
}

#[test]
fn order_and_repeats_of_the_syncs_do_not_matter() {
    assert_eq!(
        back(&[(100, 100), (0, 0), (100, 100), (50, 50), (0, 0)], 75),
        position(51, (50, 50), false)
    );
}

#[test]
fn a_record_mirrored_twice_resumes_at_the_copy_read() {
    // Record 7 was written at 7 and, after a restart, again at 12.
    assert_eq!(
        back(&[(7, 7), (7, 12), (9, 14)], 12),
        position(7, (7, 12), true)
    );
    assert_eq!(
        back(&[(7, 7), (7, 12), (9, 14)], 10),
        position(8, (7, 7), false)
    );
}

#[test]
fn a_restarted_mirror_is_bounded_only_by_the_partition_end() {
    // Records 0..=6 were copied at 0..=6; the mirror restarted and copied 5
    // again at 7 (a sync), then 6, 7 and 8. A commit at 6 has read 0..=5;
    // the next sync's upstream offset (5) does not bound the true position (6).
    let syncs = [(0, 0), (5, 7)];
    let Some(p) = translated(back(&syncs, 6)) else {
        panic!("not translated");
    };
    assert_eq!(
        p,
        ReversePosition {
            upstream: 1,
            through: sync(0, 0),
            exact: false
        }
    );
    assert_eq!(p.reread_bound(9), 8);
    assert!(p.fits(9));
    assert!(!p.fits(0));
    let Some(exact) = translated(back(&syncs, 7)) else {
        panic!("not translated");
    };
    assert_eq!(exact.reread_bound(9), 0);
}

fn translated(t: ReverseTranslation) -> Option<ReversePosition> {
    match t {
        ReverseTranslation::Translated(p) => Some(p),
        _ => None,
    }
}

#[test]
fn syncs_before_a_downstream_step_back_are_not_used() {
    // The remote topic was created again on the target: its offsets began at
    // 0 while the source went on from 150.
    let syncs = [(100, 900), (150, 950), (200, 0), (300, 100)];
    assert_eq!(back(&syncs, 920), position(301, (300, 100), false));
    assert_eq!(back(&syncs, 50), position(201, (200, 0), false));
    // Below the new partition's first sync nothing is known, although the
    // old partition's syncs are below the commit.
    assert_eq!(
        back(&[(100, 900), (200, 1000), (300, 100)], 950),
        position(301, (300, 100), false)
    );
    assert_eq!(
        back(&[(100, 900), (200, 1000), (300, 100)], 50),
        ReverseTranslation::TooOld
    );
}

#[test]
fn the_store_answers_only_after_its_initial_read() {
    let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
    store.apply("orders", 0, 10, 20);
    assert_eq!(
        translate_back(&store, "orders", 0, 20),
        ReverseTranslation::NotReady
    );
    store.finish_initial_read();
    assert_eq!(
        translate_back(&store, "orders", 0, 20),
        position(10, (10, 20), true)
    );
    assert_eq!(
        translate_back(&store, "orders", 1, 20),
        ReverseTranslation::NoSync
    );
    assert_eq!(
        translate_back(&store, "payments", 0, 20),
        ReverseTranslation::NoSync
    );
}

#[test]
fn the_store_forgets_syncs_from_before_an_upstream_rewind() {
    let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
    store.finish_initial_read();
    store.apply("orders", 0, 500, 500);
    store.apply("orders", 0, 600, 600);
    // The source partition was rewound (created again): a new generation.
    store.apply("orders", 0, 0, 700);
    assert_eq!(
        translate_back(&store, "orders", 0, 650),
        ReverseTranslation::TooOld
    );
    assert_eq!(
        translate_back(&store, "orders", 0, 710),
        position(1, (0, 700), false)
    );
}

#[test]
fn precise_translation_keeps_syncs_the_slots_dropped() {
    let mut mm2 = OffsetSyncStore::new(InitMode::LoadAllHistory);
    let mut precise = OffsetSyncStore::with_precision(
        InitMode::LoadAllHistory,
        Precision::Precise { max_syncs: 10_000 },
    );
    for store in [&mut mm2, &mut precise] {
        store.finish_initial_read();
        for u in 0..5_000 {
            store.apply("orders", 0, u * 10, u * 20);
        }
    }
    // An old commit past a sync only the precise history still holds.
    assert_eq!(
        translate_back(&precise, "orders", 0, 20_002),
        position(10_001, (10_000, 20_000), false)
    );
    match translate_back(&mm2, "orders", 0, 20_002) {
        ReverseTranslation::Translated(p) => {
            assert!(p.upstream <= 10_001, "{p:?}");
            assert!(!p.exact);
        }
        other => panic!("{other:?}"),
    }
}

/// One simulated mirroring of a source partition onto its remote partition.
#[derive(Debug)]
struct Mirrored {
    /// The source partition's record offsets, increasing (gaps are markers).
    source: Vec<i64>,
    /// The remote partition: each offset holds a copy of a source record
    /// (its offset) or a marker (`None`).
    target: Vec<Option<i64>>,
    /// The offset syncs, in the order they were written.
    syncs: Vec<OffsetSync>,
}

/// Plans of a mirroring: per source record, markers before its copy, whether
/// its copy gets a sync, and whether the mirror restarts before it (going back
/// some records and copying them again, with a sync at the first copy, as
/// MirrorMaker 2's task does after a restart).
fn mirrored() -> impl Strategy<Value = Mirrored> {
    (
        prop::collection::vec((0u8..3, 0u8..4, any::<bool>(), 0u8..30), 1..120),
        prop::collection::vec(0u8..3, 1..120),
    )
        .prop_map(|(plan, gaps)| {
            let mut source = Vec::new();
            let mut offset = 0i64;
            for (i, _) in plan.iter().enumerate() {
                offset += i64::from(gaps[i % gaps.len()]);
                source.push(offset);
                offset += 1;
            }
            let mut target = Vec::new();
            let mut syncs = Vec::new();
            let mut at = 0usize;
            let mut restarts = 0;
            let mut step = 0usize;
            while at < source.len() {
                let (markers, sync_roll, restart, back) = plan[step % plan.len()];
                step += 1;
                let restarting = restart && sync_roll == 0 && restarts < 3 && at > 0;
                if restarting {
                    restarts += 1;
                    at = at.saturating_sub(usize::from(back) % (at + 1));
                }
                for _ in 0..markers {
                    target.push(None);
                }
                let d = target.len() as i64;
                target.push(Some(source[at]));
                if restarting || sync_roll == 1 || at == 0 {
                    syncs.push(OffsetSync::new(source[at], d));
                }
                at += 1;
            }
            Mirrored {
                source,
                target,
                syncs,
            }
        })
}

fn store_of(m: &Mirrored, precision: Precision) -> OffsetSyncStore {
    let mut store = OffsetSyncStore::with_precision(InitMode::LoadAllHistory, precision);
    store.finish_initial_read();
    for s in &m.syncs {
        store.apply("t", 0, s.upstream, s.downstream);
    }
    store
}

/// Checks one reverse translation of a commit at `d` against the mirroring.
fn check(m: &Mirrored, d: i64, answer: ReverseTranslation) -> Result<(), TestCaseError> {
    let ReverseTranslation::Translated(p) = answer else {
        return Ok(());
    };
    // Nothing skipped: every source record before the position was read on
    // the target (a copy of it is below the commit).
    let read: std::collections::BTreeSet<i64> = m.target
        [..d.clamp(0, m.target.len() as i64) as usize]
        .iter()
        .flatten()
        .copied()
        .collect();
    for &x in m.source.iter().filter(|&&x| x < p.upstream) {
        prop_assert!(
            read.contains(&x),
            "record {x} skipped: commit {d}, {p:?}, {m:?}"
        );
    }
    // The true position: the record of the first copy at or after the commit,
    // else one past the last source record.
    let truth = m.target[(d.max(0) as usize).min(m.target.len())..]
        .iter()
        .flatten()
        .next()
        .copied()
        .unwrap_or(m.source.last().map_or(0, |l| l + 1));
    if p.exact {
        prop_assert_eq!(p.upstream, truth, "commit {}, {:?}", d, m);
    }
    // The bound against the partition's end holds.
    let end = m.source.last().map_or(0, |l| l + 1);
    prop_assert!(p.fits(end), "{p:?} past the end {end}");
    prop_assert!(
        truth - p.upstream <= p.reread_bound(end),
        "commit {d}: truth {truth}, {p:?}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reverse_translation_never_skips_and_keeps_its_bound(m in mirrored(), max in 1usize..8) {
        for precision in [Precision::Mm2, Precision::Precise { max_syncs: max }] {
            let store = store_of(&m, precision);
            for d in 0..=m.target.len() as i64 + 1 {
                check(&m, d, translate_back(&store, "t", 0, d))?;
            }
        }
    }

    #[test]
    fn reverse_of_forward_is_never_past_the_first_record_at_or_after(m in mirrored()) {
        let store = store_of(&m, Precision::Mm2);
        let end = m.source.last().map_or(0, |l| l + 1);
        for u in 0..=end {
            let Translation::Translated(d) = store.translate_offset("t", 0, u) else {
                continue;
            };
            if let ReverseTranslation::Translated(p) = translate_back(&store, "t", 0, d) {
                let first = m.source.iter().copied().find(|&x| x >= u).unwrap_or(end);
                prop_assert!(p.upstream <= first, "u {u} -> {d} -> {p:?}: {m:?}");
            }
        }
    }
}

mod rounds {
    use super::super::*;
    use crate::checkpoint_store::CheckpointStore;
    use crate::format::{Checkpoint, CheckpointKey};
    use crate::round::{CommittedOffset, GroupOffsets, SkipReason};
    use crate::sync_store::InitMode;
    use std::collections::BTreeMap;

    fn syncs() -> OffsetSyncStore {
        let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
        store.finish_initial_read();
        for topic in ["orders", "payments"] {
            store.apply(topic, 0, 0, 0);
            store.apply(topic, 0, 100, 140);
        }
        store
    }

    fn commits(entries: &[(&str, i64)]) -> BTreeMap<String, GroupOffsets> {
        let offsets: GroupOffsets = entries
            .iter()
            .map(|&(topic, d)| {
                (
                    TopicPartition::new(topic, 0),
                    Some(CommittedOffset::new(d, "meta")),
                )
            })
            .collect();
        BTreeMap::from([("g".to_string(), offsets)])
    }

    fn checkpoint(topic: &str, upstream: i64, downstream: i64) -> Checkpoint {
        Checkpoint {
            key: CheckpointKey {
                group: "g".to_string(),
                topic_partition: TopicPartition::new(topic, 0),
            },
            upstream_offset: upstream,
            downstream_offset: downstream,
            metadata: "meta".to_string(),
        }
    }

    fn skips(plan: &RoundPlan) -> Vec<(String, SkipReason)> {
        plan.skipped
            .iter()
            .map(|s| (s.upstream.topic.clone(), s.reason.clone()))
            .collect()
    }

    #[test]
    fn remote_topics_go_back_to_their_source_names() {
        let flow = Flow::new("S", "T");
        let policy = ReplicationPolicy::new_default(None, None).unwrap();
        let filter = TopicFilter::new(None, Some("payments")).unwrap();
        let round = ReverseRound {
            flow: &flow,
            policy: &policy,
            topic_filter: &filter,
        };
        assert_eq!(round.checkpoints_topic(), "T.checkpoints.internal");
        assert_eq!(round.back_flow(), Flow::new("T", "S"));
        let store = CheckpointStore::new(["g"]);
        let plan = round.plan(
            &syncs(),
            &store,
            &commits(&[
                ("S.orders", 140),
                ("orders", 5),
                ("S.payments", 140),
                ("S.missing", 3),
            ]),
        );
        assert_eq!(plan.checkpoints, vec![checkpoint("orders", 140, 100)]);
        assert_eq!(
            skips(&plan),
            vec![
                ("S.missing".to_string(), SkipReason::NoSync),
                ("S.payments".to_string(), SkipReason::Filtered),
                // T's own topic: its name on S is T.orders, which has no syncs.
                ("orders".to_string(), SkipReason::NoSync),
            ]
        );
    }

    #[test]
    fn the_identity_policy_keeps_the_names() {
        let flow = Flow::new("S", "T");
        let policy = ReplicationPolicy::new_identity(None, None, None).unwrap();
        let filter = TopicFilter::default();
        let round = ReverseRound {
            flow: &flow,
            policy: &policy,
            topic_filter: &filter,
        };
        let plan = round.plan(
            &syncs(),
            &CheckpointStore::new(["g"]),
            &commits(&[("orders", 120), ("payments", 0)]),
        );
        assert_eq!(
            plan.checkpoints,
            vec![checkpoint("orders", 120, 1), checkpoint("payments", 0, 0)]
        );
    }

    #[test]
    fn reverse_checkpoints_are_monotonic_as_forward() {
        let flow = Flow::new("S", "T");
        let policy = ReplicationPolicy::new_default(None, None).unwrap();
        let filter = TopicFilter::default();
        let round = ReverseRound {
            flow: &flow,
            policy: &policy,
            topic_filter: &filter,
        };
        let mut store = CheckpointStore::new(["g"]);
        store.on_produced(&[checkpoint("orders", 140, 100)]);
        let again = round.plan(&syncs(), &store, &commits(&[("S.orders", 140)]));
        assert!(again.checkpoints.is_empty());
        assert_eq!(
            skips(&again),
            vec![("S.orders".to_string(), SkipReason::NotMoreRecent)]
        );
        // A group rewound on T gets its earlier position.
        let rewound = round.plan(&syncs(), &store, &commits(&[("S.orders", 0)]));
        assert_eq!(rewound.checkpoints, vec![checkpoint("orders", 0, 0)]);
    }

    #[test]
    fn positions_past_the_end_of_the_source_partition_are_taken_out() {
        let mut plan = RoundPlan {
            checkpoints: vec![
                checkpoint("orders", 140, 101),
                checkpoint("payments", 140, 101),
                checkpoint("gone", 140, 101),
            ],
            ..RoundPlan::default()
        };
        // `payments` was created again on S and holds 7 records; `gone` was
        // deleted; `orders` ends exactly at the position.
        let ends = BTreeMap::from([
            (TopicPartition::new("orders", 0), 101),
            (TopicPartition::new("payments", 0), 7),
        ]);
        let past = keep_within_ends(&mut plan, &ends);
        assert_eq!(plan.checkpoints, vec![checkpoint("orders", 140, 101)]);
        assert_eq!(
            past,
            vec![
                checkpoint("payments", 140, 101),
                checkpoint("gone", 140, 101)
            ]
        );
    }

    fn group_state(offset: Option<i64>) -> crate::group_sync::TargetGroup {
        crate::group_sync::TargetGroup::Empty(
            offset
                .map(|o| (TopicPartition::new("orders", 0), Some(o)))
                .into_iter()
                .collect(),
        )
    }

    fn refresh(state: crate::group_sync::TargetGroup) -> TargetRefresh {
        TargetRefresh::Done(BTreeMap::from([("g".to_string(), state)]))
    }

    fn sync_commit(plan: &GroupSyncPlan) -> Option<i64> {
        plan.commits()
            .next()
            .map(|(_, c)| c[&TopicPartition::new("orders", 0)].offset)
    }

    #[test]
    fn the_sync_into_the_source_raises_an_idle_group_and_never_lowers_one() {
        let fresh = [checkpoint("orders", 140, 101)];
        // Still at its pre-failover offset: raised.
        let plan = plan_reverse_sync(&fresh, &refresh(group_state(Some(60))));
        assert_eq!(sync_commit(&plan), Some(101));
        // Never committed on S, or gone: raised.
        let plan = plan_reverse_sync(&fresh, &refresh(group_state(None)));
        assert_eq!(sync_commit(&plan), Some(101));
        let plan = plan_reverse_sync(&fresh, &refresh(crate::group_sync::TargetGroup::Absent));
        assert_eq!(sync_commit(&plan), Some(101));
        // Ahead: never lowered.
        let plan = plan_reverse_sync(&fresh, &refresh(group_state(Some(120))));
        assert_eq!(sync_commit(&plan), None);
        // Members: never written.
        let plan = plan_reverse_sync(
            &fresh,
            &refresh(crate::group_sync::TargetGroup::Active(
                crate::group_sync::TargetGroupState::Stable,
            )),
        );
        assert_eq!(sync_commit(&plan), None);
        // Unknown state or a failed refresh: nothing.
        assert_eq!(
            sync_commit(&plan_reverse_sync(&fresh, &TargetRefresh::Failed)),
            None
        );
    }

    #[test]
    fn a_rewind_on_the_source_is_kept_until_the_target_commits_again() {
        // The rule of the newer commit: a sync writes only the checkpoints the
        // round has just written, so an idle group an operator rewound on S
        // after its last sync is left alone by every later round...
        let rewound = refresh(group_state(Some(10)));
        assert_eq!(sync_commit(&plan_reverse_sync(&[], &rewound)), None);
        assert!(plan_reverse_sync(&[], &rewound).decisions.is_empty());
        // ... until the group commits on T again: that commit is newer.
        let fresh = [checkpoint("orders", 150, 101)];
        assert_eq!(sync_commit(&plan_reverse_sync(&fresh, &rewound)), Some(101));
    }
}
