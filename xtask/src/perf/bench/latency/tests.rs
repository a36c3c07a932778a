//! Unit tests of `bench latency`'s pure parts: options, rounds of offsets,
//! matching commits to what was seen, percentiles and the rendered table.

use super::args::{LatencyArgs, Side};
use super::report::{LatencyReport, Replay, SideResult, render_raw, render_table};
use super::stats::{
    BASE, Percentiles, Seen, coverage_delays, percentiles, round_of_downstream, round_of_upstream,
    upstream_of_round,
};
use super::{Obs, delays, group_index, max_rounds};
use crate::perf::bench::seed::{SHIFT, SYNC_STEP};

#[test]
fn defaults_are_the_issue_workload_and_quick_is_small() {
    let a = LatencyArgs::parse(&[]).unwrap();
    assert_eq!((a.groups, a.partitions, a.seconds), (1000, 10, 60));
    assert_eq!(
        a.sides,
        vec![
            Side::Follow,
            Side::FollowNoSync,
            Side::Poll,
            Side::Mm2(1),
            Side::Mm2(60)
        ]
    );
    assert!(!Side::FollowNoSync.syncs_groups() && Side::Mm2(1).syncs_groups());
    assert_eq!((a.heavy_groups, a.big_groups), (Some(2000), Some(10_000)));
    let q = LatencyArgs::parse(&["--quick", "--seconds", "5"]).unwrap();
    assert_eq!((q.groups, q.seconds, q.big_groups), (100, 5, None));
    let s =
        LatencyArgs::parse(&["--sides", "poll,mm2-default,mm2-5s", "--big-groups", "0"]).unwrap();
    assert_eq!(s.sides, vec![Side::Poll, Side::Mm2(60), Side::Mm2(5)]);
    assert_eq!(s.big_groups, None);
    assert!(LatencyArgs::parse(&["--sides", "mm2-0s"]).is_err());
    assert!(LatencyArgs::parse(&["--groups", "0"]).is_err());
    assert!(LatencyArgs::parse(&["--groups"]).is_err());
    assert!(LatencyArgs::parse(&["--nope"]).is_err());
    assert_eq!(Side::Mm2(60).name(), "mm2-60s");
}

#[test]
fn offsets_map_to_the_round_they_cover() {
    assert_eq!(upstream_of_round(0), BASE);
    for k in [0, 1, 7, 60] {
        assert_eq!(round_of_upstream(upstream_of_round(k)), Some(k));
        // An exact translation on the target.
        assert_eq!(round_of_downstream(upstream_of_round(k) + SHIFT), Some(k));
    }
    // Between two rounds counts for the later one: a translation made from
    // the previous sync (its downstream + 1).
    assert_eq!(
        round_of_downstream(upstream_of_round(4) + SHIFT + 1),
        Some(5)
    );
    assert_eq!(round_of_upstream(BASE + SYNC_STEP - 1), Some(1));
    // Below the seeded commit: not the bench's.
    assert_eq!(round_of_upstream(BASE - 1), None);
    assert_eq!(round_of_downstream(0), None);
}

#[test]
fn a_commit_is_covered_by_the_first_sighting_of_its_round_or_a_later_one() {
    let seen = |round, at_ms| Seen { round, at_ms };
    // Rounds 1..=4 committed at 1000, 2000, 3000, 4000 ms.
    let commits = [1000.0, 2000.0, 3000.0, 4000.0];
    // Out of order on purpose; round 0 (seeded) covers nothing measured; round
    // 2 is never seen by itself, round 3 covers it; a later sighting of round
    // 1 changes nothing; round 4 never comes.
    let (d, missing) = coverage_delays(
        &commits,
        &[
            seen(3, 3300.0),
            seen(1, 1150.0),
            seen(0, 500.0),
            seen(1, 3400.0),
        ],
    );
    assert_eq!(d, vec![150.0, 1300.0, 300.0]);
    assert_eq!(missing, 1);
    // Nothing seen: all missing.
    assert_eq!(coverage_delays(&commits, &[]), (vec![], 4));
    // One late sighting of the last round covers every commit.
    let (d, missing) = coverage_delays(&commits, &[seen(4, 61_000.0)]);
    assert_eq!(d, vec![60_000.0, 59_000.0, 58_000.0, 57_000.0]);
    assert_eq!(missing, 0);
}

#[test]
fn observations_are_matched_per_group_and_partition() {
    let obs = |group, partition, round, at_ms| Obs {
        group,
        partition,
        seen: Seen { round, at_ms },
    };
    // 2 groups × 2 partitions, 2 rounds.
    let acks = vec![vec![100.0, 1100.0], vec![200.0, 1200.0]];
    let seen = [
        obs(0, 0, 2, 1300.0),
        obs(0, 1, 1, 150.0),
        obs(0, 1, 2, 1150.0),
        obs(1, 0, 1, 250.0),
        obs(1, 1, 2, 1500.0),
        // Not the bench's group or partition: ignored.
        obs(7, 0, 2, 10.0),
        obs(1, 9, 2, 10.0),
    ];
    let (mut d, missing) = delays(&acks, &seen, 2);
    d.sort_by(f64::total_cmp);
    // g0p0: 1200, 200; g0p1: 50, 50; g1p0: 50 and round 2 missing; g1p1: 1300, 300.
    assert_eq!(d, vec![50.0, 50.0, 50.0, 200.0, 300.0, 1200.0, 1300.0]);
    assert_eq!(missing, 1);
    assert_eq!(max_rounds(&seen, 2, 2), vec![2, 2, 1, 2]);
    assert_eq!(group_index("lat-1f100", "lat-1f100-g42"), Some(42));
    assert_eq!(group_index("lat-1f100", "lat-1f1000-g42"), None);
    assert_eq!(group_index("lat-1f100", "other"), None);
}

#[test]
fn percentiles_are_nearest_rank() {
    assert_eq!(percentiles(&[]), None);
    let one = percentiles(&[5.0]).unwrap();
    assert_eq!(
        (one.p50_ms, one.p99_ms, one.max_ms, one.count),
        (5.0, 5.0, 5.0, 1)
    );
    // 1..=100 shuffled: p50 is the 50th value, p99 the 99th.
    let v: Vec<f64> = (1..=100).map(|i| ((i * 37) % 100 + 1) as f64).collect();
    let p = percentiles(&v).unwrap();
    assert_eq!(
        (p.p50_ms, p.p99_ms, p.max_ms, p.count),
        (50.0, 99.0, 100.0, 100)
    );
    // 1,000 values: p99 is the 990th.
    let v: Vec<f64> = (1..=1000).map(f64::from).collect();
    assert_eq!(percentiles(&v).unwrap().p99_ms, 990.0);
}

#[test]
fn the_table_has_a_row_per_run_and_the_raw_lines_the_replay() {
    let p = |p50, p99, max| {
        Some(Percentiles {
            count: 600_000,
            p50_ms: p50,
            p99_ms: p99,
            max_ms: max,
        })
    };
    let mut report = LatencyReport {
        runs: vec![
            SideResult {
                side: "ours-follow".into(),
                groups: 1000,
                partitions: 10,
                interval_s: 60,
                rounds: 60,
                offsets: 600_000,
                commit_phase_s: 60.0,
                checkpoint: p(250.0, 640.0, 1200.0),
                group_sync: p(300.0, 700.0, 1500.0),
                cpu_per_s: Some(0.123),
                rss_kib: 30 * 1024,
                replay: Some(Replay {
                    records: 1_000_000,
                    elapsed_ms: 2000,
                }),
                loadavg_before: "1 2 3".into(),
                loadavg_after: "4 5 6".into(),
                ..SideResult::default()
            },
            SideResult {
                side: "mm2-60s".into(),
                groups: 1000,
                partitions: 10,
                offsets: 1_300_000,
                commit_phase_s: 130.0,
                checkpoint: p(30_000.0, 59_000.0, 61_000.0),
                group_sync_uncovered: 10,
                ..SideResult::default()
            },
        ],
        ..LatencyReport::default()
    };
    let mut nosync = report.runs[0].clone();
    nosync.side = "ours-follow-nosync".into();
    nosync.group_sync = None;
    report.runs.push(nosync);
    let t = render_table(&report);
    assert_eq!(t.lines().count(), 2 + 3, "{t}");
    // No group sync: nothing measured, nothing uncovered.
    assert!(
        t.contains(
            "| ours-follow-nosync | 1000 × 10 | 10000 | 250.0 ms / 640.0 ms / 1.20 s | 0 | — | — |"
        ),
        "{t}"
    );
    assert!(
        t.contains(
            "| ours-follow | 1000 × 10 | 10000 | 250.0 ms / 640.0 ms / 1.20 s | 0 | \
             300.0 ms / 700.0 ms / 1.50 s | 0 | 0.123 | 30.0 MiB |"
        ),
        "{t}"
    );
    assert!(
        t.contains(
            "| mm2-60s | 1000 × 10 | 10000 | 30.0 s / 59.0 s / 61.0 s | 0 | — | 10 of 1300000 | — |"
        ),
        "{t}"
    );
    let raw = render_raw(&report);
    assert!(
        raw.contains("replay of __consumer_offsets 1000000 records in 2000 ms (500000 records/s)"),
        "{raw}"
    );
    assert!(raw.contains("load 1 2 3 → 4 5 6"), "{raw}");
}
