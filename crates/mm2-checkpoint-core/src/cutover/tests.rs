use super::*;
use crate::reverse::{ReversePosition, translate_back};
use crate::sync_store::{InitMode, OffsetSyncStore, Precision};
use proptest::prelude::*;

fn sync(upstream: i64, downstream: i64) -> OffsetSync {
    OffsetSync::new(upstream, downstream)
}

fn forward(syncs: &[(i64, i64)], committed: i64, end_there: Option<i64>) -> PartitionDecision {
    let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
    store.finish_initial_read();
    for &(u, d) in syncs {
        store.apply("t", 0, u, d);
    }
    let known = store.known_syncs("t", 0).unwrap_or_default();
    decide_forward(&ForwardFacts {
        committed,
        translation: store.translate_offset("t", 0, committed),
        syncs: &known,
        end_there,
        proven: None,
    })
}

#[test]
fn a_sync_at_the_commit_is_exact() {
    assert_eq!(
        forward(&[(0, 100), (50, 150)], 50, Some(200)),
        PartitionDecision::Exact {
            position: 150,
            through: sync(50, 150)
        }
    );
}

#[test]
fn a_sync_at_the_record_read_last_is_exact_while_nothing_follows_it() {
    assert_eq!(
        forward(&[(0, 100), (49, 149)], 50, Some(150)),
        PartitionDecision::Exact {
            position: 150,
            through: sync(49, 149)
        }
    );
    // Records follow: a restarted mirror may have copied 49 again at 150.
    assert_eq!(
        forward(&[(0, 100), (49, 149), (60, 160)], 50, Some(170)),
        PartitionDecision::Bounded {
            position: 150,
            through: sync(49, 149),
            reread: 10
        }
    );
}

#[test]
fn a_commit_between_syncs_is_bounded_by_the_next_sync() {
    // Records 11..=19 were read on S; their copies lie at 111..=119, before
    // the sync at 20, which is where the bound stops.
    assert_eq!(
        forward(&[(10, 110), (20, 120)], 15, Some(130)),
        PartitionDecision::Bounded {
            position: 111,
            through: sync(10, 110),
            reread: 9
        }
    );
}

#[test]
fn a_commit_past_the_newest_sync_waits_until_a_sync_covers_it() {
    assert_eq!(
        forward(&[(10, 110)], 15, Some(130)),
        PartitionDecision::Wait(WaitReason::NotCovered {
            newest: Some(sync(10, 110))
        })
    );
}

#[test]
fn a_position_content_search_proved_is_exact_even_before_a_sync_covers_it() {
    let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
    store.finish_initial_read();
    store.apply("t", 0, 10, 110);
    let known = store.known_syncs("t", 0).unwrap_or_default();
    let facts = |proven, end_there| ForwardFacts {
        committed: 15,
        translation: store.translate_offset("t", 0, 15),
        syncs: &known,
        end_there,
        proven,
    };
    assert_eq!(
        decide_forward(&facts(Some(115), Some(130))),
        PartitionDecision::Exact {
            position: 115,
            through: sync(10, 110)
        }
    );
    // Never below the sync answer, never past the end.
    assert_eq!(
        decide_forward(&facts(Some(100), Some(130))),
        PartitionDecision::Wait(WaitReason::NotCovered {
            newest: Some(sync(10, 110))
        })
    );
    assert_eq!(
        decide_forward(&facts(Some(115), Some(112))),
        PartitionDecision::Refused(Refusal::PastEnd {
            position: 115,
            end: 112
        })
    );
}

#[test]
fn a_partition_without_syncs_waits_and_one_before_every_sync_is_refused() {
    assert_eq!(
        forward(&[], 15, Some(130)),
        PartitionDecision::Wait(WaitReason::NoSync)
    );
    assert_eq!(
        forward(&[(10, 110)], 5, Some(130)),
        PartitionDecision::Refused(Refusal::TooOld)
    );
    let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
    store.apply("t", 0, 1, 1);
    assert_eq!(
        decide_forward(&ForwardFacts {
            committed: 1,
            translation: store.translate_offset("t", 0, 1),
            syncs: &[],
            end_there: Some(5),
            proven: None,
        }),
        PartitionDecision::Wait(WaitReason::NotReady)
    );
}

#[test]
fn a_position_past_the_end_there_is_refused() {
    assert_eq!(
        forward(&[(50, 150)], 50, Some(140)),
        PartitionDecision::Refused(Refusal::PastEnd {
            position: 150,
            end: 140
        })
    );
    assert_eq!(
        forward(&[(50, 150)], 50, None),
        PartitionDecision::Refused(Refusal::MissingThere)
    );
}

fn back(syncs: &[(i64, i64)], committed: i64, end_left: i64, end_there: i64) -> PartitionDecision {
    let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
    store.finish_initial_read();
    for &(u, d) in syncs {
        store.apply("t", 0, u, d);
    }
    let known = store.known_syncs("t", 0).unwrap_or_default();
    decide_back(&BackFacts {
        committed,
        translation: translate_back(&store, "t", 0, committed),
        syncs: &known,
        end_left: Some(end_left),
        end_there: Some(end_there),
    })
}

#[test]
fn back_a_sync_at_the_commit_is_exact() {
    assert_eq!(
        back(&[(0, 100), (50, 150)], 150, 160, 60),
        PartitionDecision::Exact {
            position: 50,
            through: sync(50, 150)
        }
    );
}

#[test]
fn back_a_commit_between_syncs_is_bounded_by_the_end_on_s() {
    assert_eq!(
        back(&[(10, 110), (20, 120)], 115, 130, 40),
        PartitionDecision::Bounded {
            position: 11,
            through: sync(10, 110),
            reread: 29
        }
    );
}

#[test]
fn back_waits_until_a_sync_reaches_the_commit_or_the_group_read_everything() {
    assert_eq!(
        back(&[(10, 110)], 115, 130, 40),
        PartitionDecision::Wait(WaitReason::NotCovered {
            newest: Some(sync(10, 110))
        })
    );
    // The sync is at the last record of T's partition and the group read it.
    assert_eq!(
        back(&[(10, 110)], 111, 111, 11),
        PartitionDecision::Bounded {
            position: 11,
            through: sync(10, 110),
            reread: 0
        }
    );
}

#[test]
fn back_a_position_past_the_end_on_s_is_refused() {
    assert_eq!(
        back(&[(50, 150)], 150, 160, 40),
        PartitionDecision::Refused(Refusal::PastEnd {
            position: 50,
            end: 40
        })
    );
    let decided = decide_back(&BackFacts {
        committed: 150,
        translation: ReverseTranslation::Translated(ReversePosition {
            upstream: 50,
            through: sync(50, 150),
            exact: true,
        }),
        syncs: &[],
        end_left: Some(160),
        end_there: None,
    });
    assert_eq!(decided, PartitionDecision::Refused(Refusal::MissingThere));
}

/// Offset syncs as (upstream, downstream), in the order written.
type Syncs = Vec<(i64, i64)>;

/// The offset syncs MirrorMaker 2 4.1.1 wrote in the failback runbook's test
/// (`tests/tests/runbooks.rs`, `offset.lag.max = 10`, an identity mirror of a
/// fresh topic): one every 11 records while the producer writes, and the
/// last record's when it stops at 2,150 (the source lost); then, S back,
/// the producer writes again up to 5,050.
fn runbook_syncs() -> (Syncs, Syncs) {
    let before: Syncs = (0..=2145)
        .step_by(11)
        .chain([2149])
        .map(|o| (o, o))
        .collect();
    let after: Syncs = (2156..=5049).step_by(11).map(|o| (o, o)).collect();
    (before, after)
}

/// A reverse translation of `committed` by a store of `precision` that has
/// read `syncs`, and the partition's syncs it holds.
fn read_back(
    syncs: &[(i64, i64)],
    precision: Precision,
    committed: i64,
) -> (ReverseTranslation, Vec<OffsetSync>) {
    let mut store = OffsetSyncStore::with_precision(InitMode::LoadAllHistory, precision);
    for &(u, d) in syncs {
        store.apply("t", 0, u, d);
    }
    store.finish_initial_read();
    let known = store.known_syncs("t", 0).unwrap_or_default();
    (translate_back(&store, "t", 0, committed), known)
}

fn translated(t: ReverseTranslation) -> ReversePosition {
    match t {
        ReverseTranslation::Translated(p) => p,
        other => panic!("not translated: {other:?}"),
    }
}

#[test]
fn a_cutover_back_read_later_agrees_with_the_daemon_that_translated_the_commit_when_new() {
    // The group stopped on T at 2,150 while the newest sync was (2149, 2149):
    // the daemon's reverse round (MM2's slots) put it on S at 2,150, and its
    // group sync raised the idle group on S there.
    let (before, after) = runbook_syncs();
    let daemon = translated(read_back(&before, Precision::Mm2, 2150).0);
    assert_eq!((daemon.upstream, daemon.through), (2150, sync(2149, 2149)));
    // `cutover --to S` runs after S is back and 2,900 more records are
    // mirrored. Read as the cutover reads, the commit goes back through the
    // same sync, and the group already there is ready (nothing to lower).
    let all: Syncs = before.iter().chain(&after).copied().collect();
    let (translation, known) = read_back(&all, reading_precision(1000), 2150);
    let decided = decide_back(&BackFacts {
        committed: 2150,
        translation,
        syncs: &known,
        end_left: Some(5050),
        end_there: Some(5050),
    });
    assert_eq!(
        decided,
        PartitionDecision::Bounded {
            position: 2150,
            through: sync(2149, 2149),
            reread: 5050 - 2150
        }
    );
    let plan = |decision| {
        let there = Side::Idle(BTreeMap::from([(tp("orders"), 2150)]));
        let part = PartitionPlan {
            left: tp("S.orders"),
            there: tp("orders"),
            committed: 2150,
            metadata: String::new(),
            decision,
        };
        decide_group("g", &Side::Absent, &there, vec![part])
    };
    assert_eq!(plan(decided).decision, GroupDecision::Ready);
    // MirrorMaker 2's 64 slots alone (how the cutover read before) keep no
    // sync between 2,874 and the partition's first one by then: the commit
    // went back to 1, and the group, raised to the true position, was
    // refused as ahead of it.
    let slots_only = translated(read_back(&all, Precision::Mm2, 2150).0);
    assert_eq!((slots_only.upstream, slots_only.through), (1, sync(0, 0)));
}

#[test]
fn a_cutover_reads_with_precise_translation_whatever_the_flow_translates_with() {
    assert_eq!(
        reading_precision(1000),
        Precision::Precise { max_syncs: 1000 }
    );
    assert_eq!(reading_precision(0), Precision::Precise { max_syncs: 1 });
}

fn tp(topic: &str) -> TopicPartition {
    TopicPartition::new(topic, 0)
}

fn part(decision: PartitionDecision) -> PartitionPlan {
    PartitionPlan {
        left: tp("orders"),
        there: tp("S.orders"),
        committed: 15,
        metadata: "m".into(),
        decision,
    }
}

fn exact(position: i64) -> PartitionDecision {
    PartitionDecision::Exact {
        position,
        through: sync(15, position),
    }
}

#[test]
fn a_group_with_members_on_either_side_is_refused() {
    let idle = Side::Idle(BTreeMap::new());
    let plan = decide_group(
        "g",
        &Side::Active(TargetGroupState::Stable),
        &idle,
        vec![part(exact(115))],
    );
    assert_eq!(
        plan.decision,
        GroupDecision::Refused(Some(Refusal::ActiveOnLeft(TargetGroupState::Stable)))
    );
    assert!(plan.checkpoints().is_empty());
    let plan = decide_group(
        "g",
        &idle,
        &Side::Active(TargetGroupState::Reconciling),
        vec![part(exact(115))],
    );
    assert_eq!(
        plan.decision,
        GroupDecision::Refused(Some(Refusal::ActiveThere(TargetGroupState::Reconciling)))
    );
    let plan = decide_group("g", &Side::Unknown, &idle, vec![part(exact(115))]);
    assert_eq!(
        plan.decision,
        GroupDecision::Refused(Some(Refusal::UnknownState))
    );
    let plan = decide_group("g", &idle, &Side::Absent, vec![]);
    assert_eq!(
        plan.decision,
        GroupDecision::Refused(Some(Refusal::NothingCommitted))
    );
}

#[test]
fn a_group_ahead_there_is_never_lowered() {
    let there = Side::Idle(BTreeMap::from([(tp("S.orders"), 120)]));
    let plan = decide_group("g", &Side::Absent, &there, vec![part(exact(115))]);
    assert_eq!(plan.decision, GroupDecision::Refused(None));
    assert_eq!(
        plan.partitions[0].decision,
        PartitionDecision::Refused(Refusal::AheadThere {
            position: 115,
            committed: 120
        })
    );
    // At the position already: nothing is lowered, the group is ready.
    let there = Side::Idle(BTreeMap::from([(tp("S.orders"), 115)]));
    let plan = decide_group("g", &Side::Absent, &there, vec![part(exact(115))]);
    assert_eq!(plan.decision, GroupDecision::Ready);
}

#[test]
fn a_ready_group_commits_its_positions_keyed_by_the_names_there() {
    let plan = decide_group(
        "g",
        &Side::Idle(BTreeMap::new()),
        &Side::Absent,
        vec![part(exact(115))],
    );
    assert_eq!(plan.decision, GroupDecision::Ready);
    let cps = plan.checkpoints();
    assert_eq!(cps.len(), 1);
    assert_eq!(cps[0].key.topic_partition, tp("S.orders"));
    assert_eq!(
        (cps[0].upstream_offset, cps[0].downstream_offset),
        (15, 115)
    );
    assert_eq!(cps[0].metadata, "m");
}

#[test]
fn the_wait_ends_when_no_group_waits_and_a_timeout_refuses_the_rest() {
    let idle = Side::Idle(BTreeMap::new());
    let waiting = PartitionDecision::Wait(WaitReason::NoSync);
    let mut plans = vec![
        decide_group("a", &idle, &Side::Absent, vec![part(exact(115))]),
        decide_group("b", &idle, &Side::Absent, vec![part(waiting)]),
    ];
    assert_eq!(plans[1].decision, GroupDecision::Wait);
    assert!(!wait_over(&plans));
    assert_eq!(outcome(&plans), Outcome::Refused);
    time_out(&mut plans);
    assert!(wait_over(&plans));
    assert_eq!(plans[0].decision, GroupDecision::Ready);
    assert_eq!(
        plans[1].partitions[0].decision,
        PartitionDecision::Refused(Refusal::TimedOut(WaitReason::NoSync))
    );
}

#[test]
fn the_outcome_tells_all_exact_from_bounded_from_refused() {
    let idle = Side::Idle(BTreeMap::new());
    let bounded = PartitionDecision::Bounded {
        position: 111,
        through: sync(10, 110),
        reread: 4,
    };
    let a = decide_group("a", &idle, &Side::Absent, vec![part(exact(115))]);
    let b = decide_group("b", &idle, &Side::Absent, vec![part(bounded)]);
    let c = decide_group("c", &Side::Unknown, &Side::Absent, vec![part(exact(1))]);
    assert_eq!(outcome(std::slice::from_ref(&a)), Outcome::AllExact);
    assert_eq!(outcome(&[a.clone(), b.clone()]), Outcome::Bounded);
    assert_eq!(outcome(&[a, b, c]), Outcome::Refused);
    assert_eq!(outcome(&[]), Outcome::Refused);
}

/// One simulated mirroring of a source partition: the copy's offset on the
/// remote partition for each source record (with markers between copies),
/// restarts that copy some records again, and the syncs written.
#[derive(Debug)]
struct Mirrored {
    /// Source offsets, increasing (gaps are the source's own markers).
    source: Vec<i64>,
    /// The remote partition: a copy of a source record (its offset) or a
    /// marker.
    target: Vec<Option<i64>>,
    /// The syncs, in the order written.
    syncs: Vec<OffsetSync>,
}

/// Per step: markers before the copy, whether it gets a sync, whether the
/// mirror restarts (going back some records; the first copy after a restart
/// always gets a sync, as MirrorMaker 2's task does).
fn mirrored() -> impl Strategy<Value = Mirrored> {
    (
        prop::collection::vec((0u8..3, 0u8..4, any::<bool>(), 0u8..30), 1..100),
        prop::collection::vec(0u8..3, 1..100),
    )
        .prop_map(|(plan, gaps)| {
            let mut source = Vec::new();
            let mut offset = 0i64;
            for i in 0..plan.len() {
                offset += i64::from(gaps[i % gaps.len()]);
                source.push(offset);
                offset += 1;
            }
            let (mut target, mut syncs) = (Vec::new(), Vec::new());
            let (mut at, mut restarts, mut step) = (0usize, 0, 0usize);
            while at < source.len() {
                let (markers, roll, restart, back) = plan[step % plan.len()];
                step += 1;
                let restarting = restart && roll == 0 && restarts < 3 && at > 0;
                if restarting {
                    restarts += 1;
                    at = at.saturating_sub(usize::from(back) % (at + 1));
                }
                target.extend(std::iter::repeat_n(None, usize::from(markers)));
                let d = target.len() as i64;
                target.push(Some(source[at]));
                if restarting || roll == 1 || at == 0 {
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A group that read every source record below U and resumes at the
    /// position on the target skips nothing, and reads again at most the
    /// bound (none when exact) of the copies of records it had read before
    /// the first copy of a record it had not.
    #[test]
    fn forward_decisions_never_skip_and_keep_their_bound(m in mirrored(), max in 1usize..8) {
        let end = m.target.len() as i64;
        for precision in [Precision::Mm2, Precision::Precise { max_syncs: max }] {
            let store = store_of(&m, precision);
            let known = store.known_syncs("t", 0).unwrap_or_default();
            for &u in &m.source {
                let decided = decide_forward(&ForwardFacts {
                    committed: u,
                    translation: store.translate_offset("t", 0, u),
                    syncs: &known,
                    end_there: Some(end),
                    proven: None,
                });
                let (Some(position), Some(reread)) = (decided.position(), decided.reread()) else {
                    continue;
                };
                let after = &m.target[position.clamp(0, end) as usize..];
                // Nothing skipped: the newest copy of every record from U on
                // (what a reader of the target sees last) is at or after the
                // position.
                for &x in m.source.iter().filter(|&&x| x >= u) {
                    prop_assert!(after.contains(&Some(x)), "record {x} skipped: {decided:?}, {m:?}");
                }
                // Read again: the copies before the first copy of a record
                // the group had not read. Copies of earlier records past
                // that one were written twice by a restarted mirror, and
                // every reader of the target reads them twice.
                let again = after
                    .iter()
                    .take_while(|c| c.is_none_or(|x| x < u))
                    .flatten()
                    .count() as i64;
                prop_assert!(again <= reread, "commit {u}: read again {again} > {decided:?}, {m:?}");
            }
        }
    }

    /// The same for a cutover back, with the group having read the target
    /// below D: nothing skipped on the source, re-reads within the bound.
    #[test]
    fn back_decisions_never_skip_and_keep_their_bound(m in mirrored()) {
        let store = store_of(&m, Precision::Mm2);
        let known = store.known_syncs("t", 0).unwrap_or_default();
        let (end_left, end_there) = (m.target.len() as i64, m.source.last().map_or(0, |l| l + 1));
        for d in 0..=end_left {
            let decided = decide_back(&BackFacts {
                committed: d,
                translation: translate_back(&store, "t", 0, d),
                syncs: &known,
                end_left: Some(end_left),
                end_there: Some(end_there),
            });
            let (Some(position), Some(reread)) = (decided.position(), decided.reread()) else {
                continue;
            };
            let read: std::collections::BTreeSet<i64> =
                m.target[..d as usize].iter().flatten().copied().collect();
            for &x in m.source.iter().filter(|&&x| x < position) {
                prop_assert!(read.contains(&x), "record {x} skipped: {decided:?}, {m:?}");
            }
            // Read again: what the group reads on S that it would not have
            // read had it stayed on T (the reverse translation's measure, in
            // which a copy the mirror made twice counts as T's own).
            let later: std::collections::BTreeSet<i64> =
                m.target[d as usize..].iter().flatten().copied().collect();
            let again = m.source.iter().filter(|&&x| x >= position && !later.contains(&x)).count() as i64;
            prop_assert!(again <= reread, "commit {d}: read again {again} > {decided:?}, {m:?}");
        }
    }
}
