use std::collections::BTreeMap;

use super::*;
use crate::cutover::{ForwardFacts, PartitionPlan, Side, decide_forward, decide_group};
use crate::group_sync::TargetGroupState;
use crate::sync_store::{InitMode, OffsetSyncStore};
use crate::types::TopicPartition;

/// A partition of topic `t` committed at `committed`, decided by the cutover
/// rules from `syncs` with the target's partition ending at `end`.
fn partition(p: i32, syncs: &[(i64, i64)], committed: i64, end: i64) -> PartitionPlan {
    let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
    store.finish_initial_read();
    for &(u, d) in syncs {
        store.apply("t", p, u, d);
    }
    let known = store.known_syncs("t", p).unwrap_or_default();
    PartitionPlan {
        left: TopicPartition::new("t", p),
        there: TopicPartition::new("S.t", p),
        committed,
        metadata: String::new(),
        decision: decide_forward(&ForwardFacts {
            committed,
            translation: store.translate_offset("t", p, committed),
            syncs: &known,
            end_there: Some(end),
            proven: None,
        }),
    }
}

fn idle() -> Side {
    Side::Idle(BTreeMap::new())
}

#[test]
fn an_idle_group_with_a_sync_at_its_commit_is_ready_and_exact() {
    let plan = decide_group(
        "g",
        &idle(),
        &Side::Absent,
        vec![partition(0, &[(0, 100), (50, 150)], 50, 200)],
    );
    let s = group_status(&plan, Some(1_000), 4_000);
    assert_eq!(s.readiness, Readiness::Exact);
    assert!(s.readiness.ready());
    assert_eq!(s.worst_reread, Some(0));
    assert_eq!(s.decided, (1, 1));
    assert_eq!(s.checkpoint_age_ms, Some(3_000));
}

#[test]
fn a_group_with_members_on_the_side_it_leaves_is_not_ready() {
    let plan = decide_group(
        "g",
        &Side::Active(TargetGroupState::Stable),
        &Side::Absent,
        vec![partition(0, &[(0, 100), (50, 150)], 50, 200)],
    );
    let s = group_status(&plan, None, 0);
    assert_eq!(
        s.readiness,
        Readiness::NotReady(Refusal::ActiveOnLeft(TargetGroupState::Stable))
    );
    assert!(!s.readiness.ready());
    assert_eq!(s.checkpoint_age_ms, None);
}

#[test]
fn the_worst_bound_of_the_partitions_is_the_groups() {
    // Partition 0 exact; partition 1 committed at 30 between syncs at 20 and
    // 40: bounded by the copies between the position and the covering sync.
    let plan = decide_group(
        "g",
        &idle(),
        &Side::Absent,
        vec![
            partition(0, &[(0, 100), (50, 150)], 50, 200),
            partition(1, &[(0, 100), (20, 120), (40, 140)], 30, 200),
        ],
    );
    let s = group_status(&plan, Some(5), 5);
    let Readiness::Bounded { reread } = s.readiness else {
        panic!("not bounded: {:?}", s.readiness);
    };
    assert!(reread > 0);
    assert_eq!(s.worst_reread, Some(reread));
    assert_eq!(s.checkpoint_age_ms, Some(0));
}

#[test]
fn a_commit_past_the_newest_sync_waits() {
    let plan = decide_group(
        "g",
        &idle(),
        &Side::Absent,
        vec![partition(0, &[(0, 100), (20, 120)], 30, 200)],
    );
    let s = group_status(&plan, None, 0);
    assert!(matches!(
        s.readiness,
        Readiness::Waiting { partitions: 1, .. }
    ));
    assert_eq!(s.worst_reread, None);
    assert_eq!(s.decided, (0, 1));
}

#[test]
fn a_refused_partition_names_why() {
    // Every sync past the commit: too old.
    let plan = decide_group(
        "g",
        &idle(),
        &Side::Absent,
        vec![partition(0, &[(100, 200)], 10, 300)],
    );
    let s = group_status(&plan, None, 0);
    assert_eq!(s.readiness, Readiness::NotReady(Refusal::TooOld));
}

#[test]
fn a_checkpoint_stamped_in_the_future_is_zero_old() {
    let plan = decide_group("g", &idle(), &Side::Absent, Vec::new());
    let s = group_status(&plan, Some(10_000), 1_000);
    assert_eq!(s.checkpoint_age_ms, Some(0));
    assert_eq!(s.readiness, Readiness::NotReady(Refusal::NothingCommitted));
}

#[test]
fn a_summary_counts_each_kind_and_keeps_the_worst() {
    let mk = |readiness, age| GroupStatus {
        group: "g".into(),
        readiness,
        worst_reread: None,
        decided: (0, 0),
        checkpoint_age_ms: age,
    };
    let s = summarize(&[
        mk(Readiness::Exact, Some(10)),
        mk(Readiness::Bounded { reread: 7 }, None),
        mk(Readiness::Bounded { reread: 3 }, Some(50)),
        mk(Readiness::NotReady(Refusal::TooOld), Some(20)),
        mk(
            Readiness::Waiting {
                partitions: 2,
                first: WaitReason::NoSync,
            },
            None,
        ),
    ]);
    assert_eq!(
        s,
        FlowSummary {
            exact: 1,
            bounded: 2,
            waiting: 1,
            not_ready: 1,
            max_reread: 7,
            max_checkpoint_age_ms: Some(50),
        }
    );
    assert_eq!(summarize(&[]), FlowSummary::default());
}
