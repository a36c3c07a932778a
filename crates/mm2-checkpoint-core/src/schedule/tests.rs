//! The timing rules of a flow, on a fake clock: `t(ms)` is a point on it.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::*;

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn t(ms: u64) -> Instant {
    epoch() + Duration::from_millis(ms)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn settings() -> ScheduleSettings {
    ScheduleSettings {
        emit_every: secs(60),
        sync_every: None,
        refresh_every: Some(secs(600)),
        poll_every: secs(1),
        coalesce: Duration::from_millis(200),
        reverse_every: None,
    }
}

/// Takes every action due at `now`, reporting each as a success at `now`,
/// and returns them in order with what the loop should do next.
fn drain(s: &mut FlowSchedule, now: Instant) -> (Vec<Action>, Next) {
    let mut actions = Vec::new();
    loop {
        match s.next(now) {
            Next::Act(a) => {
                actions.push(a);
                match a {
                    Action::PollSyncs => {
                        s.polled(now, Ok(()), false);
                    }
                    Action::EmitFollowed => {
                        s.emitted_followed(Ok(()));
                    }
                    Action::RefreshGroups => s.refreshed(now, true),
                    Action::Emit { .. } => {
                        s.emitted(now, Ok(RoundDone { emitted: 0 }));
                    }
                    Action::FullSync => {
                        s.full_sync_done(now, true);
                    }
                    Action::Reverse => {
                        s.reversed(now, true);
                    }
                }
            }
            other => return (actions, other),
        }
    }
}

#[test]
fn the_first_round_is_due_at_once_and_the_next_after_the_emit_interval() {
    let mut s = FlowSchedule::new(settings(), t(0), false);
    assert_eq!(s.next(t(0)), Next::Act(Action::Emit { from_view: false }));
    // Handed out: not due again until reported.
    assert_ne!(s.next(t(0)), Next::Act(Action::Emit { from_view: false }));
    s.emitted(t(500), Ok(RoundDone { emitted: 3 }));
    // Polls every second meanwhile; the round is due 60 s after the last ended.
    let (_, next) = drain(&mut s, t(59_000));
    assert_eq!(next, Next::WaitUntil(t(60_000)));
    let (actions, _) = drain(&mut s, t(60_499));
    assert_eq!(actions, [Action::PollSyncs]);
    let (actions, _) = drain(&mut s, t(60_500));
    assert_eq!(actions, [Action::Emit { from_view: false }]);
}

#[test]
fn the_first_round_of_a_follower_plans_from_its_view_until_one_succeeds() {
    let mut s = FlowSchedule::new(settings(), t(0), true);
    assert_eq!(s.next(t(0)), Next::Act(Action::Emit { from_view: true }));
    let report = s.emitted(t(10), Err("broker down".into()));
    assert_eq!(report.retry_in, Some(secs(1)));
    assert_eq!(
        report.reachability,
        Reachability::Failing("broker down".into())
    );
    let (actions, _) = drain(&mut s, t(1_010));
    assert_eq!(
        actions,
        [Action::PollSyncs, Action::Emit { from_view: true }]
    );
    let (actions, _) = drain(&mut s, t(61_010));
    assert!(actions.contains(&Action::Emit { from_view: false }));
}

#[test]
fn a_failed_round_backs_off_from_one_second_doubling_to_thirty_and_resets_on_success() {
    let mut cfg = settings();
    cfg.emit_every = secs(3600);
    let mut s = FlowSchedule::new(cfg, t(0), false);
    let mut now = t(0);
    let mut waits = Vec::new();
    for _ in 0..8 {
        assert_eq!(drain_emit(&mut s, now), Some(()));
        let r = s.emitted(now, Err("x".into()));
        let wait = r.retry_in.unwrap();
        waits.push(wait.as_secs());
        // Not a moment earlier.
        assert_eq!(
            drain_emit(&mut s, now + wait - Duration::from_millis(1)),
            None
        );
        now += wait;
    }
    assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
    assert_eq!(drain_emit(&mut s, now), Some(()));
    assert_eq!(s.emitted(now, Ok(RoundDone { emitted: 0 })).retry_in, None);
    let later = now + secs(3600);
    assert_eq!(drain_emit(&mut s, later), Some(()));
    assert_eq!(s.emitted(later, Err("x".into())).retry_in, Some(secs(1)));
}

/// Takes the actions due at `now` other than the round (reported as
/// successes) and returns `Some` when the round is among them, left
/// unreported.
fn drain_emit(s: &mut FlowSchedule, now: Instant) -> Option<()> {
    loop {
        match s.next(now) {
            Next::Act(Action::Emit { .. }) => return Some(()),
            Next::Act(Action::PollSyncs) => {
                s.polled(now, Ok(()), false);
            }
            Next::Act(Action::RefreshGroups) => s.refreshed(now, true),
            Next::Act(other) => panic!("unexpected {other:?}"),
            _ => return None,
        }
    }
}

#[test]
fn a_failed_round_is_retried_no_later_than_its_interval() {
    let mut cfg = settings();
    cfg.emit_every = Duration::from_millis(1500);
    let mut s = FlowSchedule::new(cfg, t(0), false);
    assert_eq!(drain_emit(&mut s, t(0)), Some(()));
    s.emitted(t(0), Err("x".into()));
    assert_eq!(drain_emit(&mut s, t(1000)), Some(()));
    assert_eq!(
        s.emitted(t(1000), Err("x".into())).retry_in,
        Some(Duration::from_millis(1500))
    );
}

#[test]
fn offset_syncs_are_polled_at_their_interval_but_never_more_often_than_every_100_ms() {
    let mut cfg = settings();
    cfg.poll_every = Duration::from_millis(10);
    let mut s = FlowSchedule::new(cfg, t(0), false);
    drain(&mut s, t(0));
    assert_eq!(s.next(t(99)), Next::WaitUntil(t(100)));
    assert_eq!(s.next(t(100)), Next::Act(Action::PollSyncs));
    // While the poll runs, it is not handed out again: the next deadline is
    // the round's.
    assert_eq!(s.next(t(180)), Next::WaitUntil(t(60_000)));
    s.polled(t(180), Ok(()), false);
    assert_eq!(s.next(t(200)), Next::WaitUntil(t(280)));
}

#[test]
fn new_offset_syncs_come_before_every_other_due_action() {
    let mut cfg = settings();
    cfg.sync_every = Some(secs(60));
    let mut s = FlowSchedule::new(cfg, t(0), false);
    drain(&mut s, t(0));
    // At 600 s everything is due at once: syncs, refresh, round, full sync.
    let (actions, _) = drain(&mut s, t(600_000));
    assert_eq!(
        actions,
        [
            Action::PollSyncs,
            Action::RefreshGroups,
            Action::Emit { from_view: false },
            Action::FullSync
        ]
    );
}

#[test]
fn a_follower_emits_changes_once_their_coalescing_window_has_passed() {
    let mut s = FlowSchedule::new(settings(), t(0), true);
    drain(&mut s, t(0));
    assert_eq!(s.next(t(10)), Next::Follow);
    // A step that found nothing opens no window.
    assert_eq!(s.followed(t(20), false), Reachability::Ok);
    assert_eq!(s.next(t(30)), Next::Follow);
    // The first change opens it; later changes do not move it.
    s.followed(t(40), true);
    s.followed(t(150), true);
    assert_eq!(s.deadline(), t(240));
    assert_eq!(s.next(t(239)), Next::Follow);
    assert_eq!(s.next(t(240)), Next::Act(Action::EmitFollowed));
    // Taken: closed until the next change.
    assert_eq!(s.next(t(241)), Next::Follow);
    assert_eq!(s.emitted_followed(Ok(())), Reachability::Ok);
    s.followed(t(300), true);
    assert_eq!(s.next(t(500)), Next::Act(Action::EmitFollowed));
}

#[test]
fn new_offset_syncs_open_the_followers_window_too() {
    let mut s = FlowSchedule::new(settings(), t(0), true);
    drain(&mut s, t(0));
    assert_eq!(s.next(t(1000)), Next::Act(Action::PollSyncs));
    s.polled(t(1000), Ok(()), true);
    assert_eq!(s.next(t(1199)), Next::Follow);
    assert_eq!(s.next(t(1200)), Next::Act(Action::EmitFollowed));
    // Without a follower, new syncs wait for the periodic round.
    let mut p = FlowSchedule::new(settings(), t(0), false);
    drain(&mut p, t(0));
    assert_eq!(p.next(t(1000)), Next::Act(Action::PollSyncs));
    assert_eq!(p.polled(t(1000), Ok(()), true), None);
    assert_eq!(p.next(t(1200)), Next::WaitUntil(t(2000)));
}

#[test]
fn groups_are_discovered_again_only_when_no_follower_runs() {
    let mut cfg = settings();
    cfg.refresh_every = Some(secs(10));
    let mut s = FlowSchedule::new(cfg.clone(), t(0), true);
    drain(&mut s, t(0));
    let (actions, _) = drain(&mut s, t(10_000));
    assert_eq!(actions, [Action::PollSyncs]);

    let mut p = FlowSchedule::new(cfg.clone(), t(0), false);
    drain(&mut p, t(0));
    assert_eq!(p.next(t(10_000)), Next::Act(Action::PollSyncs));
    p.polled(t(10_000), Ok(()), false);
    assert_eq!(p.next(t(10_000)), Next::Act(Action::RefreshGroups));
    // A failed refresh is retried after 5 s, not the whole interval.
    p.refreshed(t(10_000), false);
    let (actions, _) = drain(&mut p, t(14_999));
    assert_eq!(actions, [Action::PollSyncs]);
    drain_until(&mut p, t(15_000), Action::RefreshGroups);
    // A good one waits the whole interval again.
    p.refreshed(t(15_000), true);
    let (actions, _) = drain(&mut p, t(24_999));
    assert_eq!(actions, [Action::PollSyncs]);
    drain_until(&mut p, t(25_000), Action::RefreshGroups);

    // Refresh off: never.
    cfg.refresh_every = None;
    let mut off = FlowSchedule::new(cfg, t(0), false);
    drain(&mut off, t(0));
    let (actions, _) = drain(&mut off, t(700_000));
    assert!(!actions.contains(&Action::RefreshGroups));
}

#[test]
fn a_failed_refresh_with_a_short_interval_waits_only_the_interval() {
    let mut cfg = settings();
    cfg.refresh_every = Some(secs(2));
    let mut p = FlowSchedule::new(cfg, t(0), false);
    drain(&mut p, t(0));
    drain_until(&mut p, t(2_000), Action::RefreshGroups);
    p.refreshed(t(2_000), false);
    let (actions, _) = drain(&mut p, t(3_999));
    assert!(!actions.contains(&Action::RefreshGroups));
    drain_until(&mut p, t(4_000), Action::RefreshGroups);
}

/// Takes due actions (reported as successes) until `wanted`, which it
/// leaves unreported; fails if it is not due at `now`.
fn drain_until(s: &mut FlowSchedule, now: Instant, wanted: Action) {
    loop {
        match s.next(now) {
            Next::Act(a) if a == wanted => return,
            Next::Act(Action::PollSyncs) => {
                s.polled(now, Ok(()), false);
            }
            Next::Act(Action::Emit { .. }) => {
                s.emitted(now, Ok(RoundDone { emitted: 0 }));
            }
            Next::Act(Action::FullSync) => {
                s.full_sync_done(now, true);
            }
            Next::Act(Action::RefreshGroups) => s.refreshed(now, true),
            Next::Act(Action::EmitFollowed) => {
                s.emitted_followed(Ok(()));
            }
            other => panic!("{wanted:?} is not due at {now:?}: {other:?}"),
        }
    }
}

#[test]
fn the_full_group_sync_runs_at_its_interval_and_a_failed_one_sooner() {
    let mut cfg = settings();
    cfg.sync_every = Some(secs(20));
    let mut s = FlowSchedule::new(cfg, t(0), false);
    drain(&mut s, t(0));
    drain_until(&mut s, t(20_000), Action::FullSync);
    // Asked for at 20 s: the next is due at 40 s whatever the sync does.
    assert_eq!(s.full_sync_done(t(25_000), true), None);
    drain_until(&mut s, t(40_000), Action::FullSync);
    assert_eq!(s.full_sync_done(t(41_000), false), Some(secs(1)));
    drain_until(&mut s, t(42_000), Action::FullSync);
    assert_eq!(s.full_sync_done(t(42_000), false), Some(secs(2)));
    drain_until(&mut s, t(44_000), Action::FullSync);
    // Never waits longer than the interval.
    for _ in 0..5 {
        s.full_sync_done(t(44_000), false);
    }
    assert_eq!(s.full_sync_done(t(44_000), false), Some(secs(20)));
    // Group sync off: never.
    let mut off = FlowSchedule::new(settings(), t(0), false);
    drain(&mut off, t(0));
    let (actions, _) = drain(&mut off, t(10_000_000));
    assert!(!actions.contains(&Action::FullSync));
}

#[test]
fn a_failing_follower_pauses_up_to_ten_seconds_and_is_reopened_after_five_failures() {
    let mut s = FlowSchedule::new(settings(), t(0), true);
    drain(&mut s, t(0));
    let failures: Vec<FollowFailure> = (0..7).map(|i| s.follow_failed(format!("e{i}"))).collect();
    let pauses: Vec<u64> = failures.iter().map(|f| f.pause.as_secs()).collect();
    assert_eq!(pauses, [1, 2, 4, 8, 10, 10, 10]);
    let reopens: Vec<bool> = failures.iter().map(|f| f.reopen).collect();
    assert_eq!(reopens, [false, false, false, false, true, false, false]);
    assert_eq!(s.follow_health(), Reachability::Failing("e6".into()));
    // A success resets both the pause and the count.
    assert_eq!(s.followed(t(1), false), Reachability::Ok);
    let again: Vec<FollowFailure> = (0..5).map(|_| s.follow_failed("e".into())).collect();
    assert_eq!(again[0].pause, secs(1));
    assert!(again[..4].iter().all(|f| !f.reopen) && again[4].reopen);
}

#[test]
fn a_follower_is_reachable_only_when_following_polling_and_emitting_all_last_succeeded() {
    let mut s = FlowSchedule::new(settings(), t(0), true);
    drain(&mut s, t(0));
    s.follow_failed("fetch failed".into());
    assert_eq!(s.next(t(1000)), Next::Act(Action::PollSyncs));
    assert_eq!(
        s.polled(t(1000), Err("syncs failed".into()), false),
        Some(Reachability::Failing("syncs failed".into()))
    );
    // The follower recovers; the syncs still fail.
    assert_eq!(
        s.followed(t(1100), false),
        Reachability::Failing("syncs failed".into())
    );
    assert_eq!(s.next(t(2000)), Next::Act(Action::PollSyncs));
    assert_eq!(s.polled(t(2000), Ok(()), true), Some(Reachability::Ok));
    assert_eq!(s.next(t(2200)), Next::Act(Action::EmitFollowed));
    assert_eq!(
        s.emitted_followed(Err("produce failed".into())),
        Reachability::Failing("produce failed".into())
    );
    // A good periodic round clears every remembered failure.
    s.follow_failed("fetch failed".into());
    drain_until(&mut s, t(61_000), Action::Emit { from_view: false });
    let report = s.emitted(t(61_000), Ok(RoundDone { emitted: 0 }));
    assert_eq!(report.reachability, Reachability::Ok);
    assert_eq!(s.follow_health(), Reachability::Ok);
}

#[test]
fn without_a_follower_only_failures_of_polls_are_reported() {
    let mut s = FlowSchedule::new(settings(), t(0), false);
    drain(&mut s, t(0));
    assert_eq!(s.next(t(1000)), Next::Act(Action::PollSyncs));
    assert_eq!(s.polled(t(1000), Ok(()), false), None);
    assert_eq!(s.next(t(2000)), Next::Act(Action::PollSyncs));
    assert_eq!(
        s.polled(t(2000), Err("e".into()), false),
        Some(Reachability::Failing("e".into()))
    );
}

#[test]
fn checkpoints_of_a_later_periodic_round_count_as_the_followers_corrections() {
    let mut s = FlowSchedule::new(settings(), t(0), true);
    assert_eq!(s.next(t(0)), Next::Act(Action::Emit { from_view: true }));
    assert_eq!(
        s.emitted(t(0), Ok(RoundDone { emitted: 5 })).corrections,
        None
    );
    drain_until(&mut s, t(60_000), Action::Emit { from_view: false });
    assert_eq!(
        s.emitted(t(60_000), Ok(RoundDone { emitted: 2 }))
            .corrections,
        Some(2)
    );
    drain_until(&mut s, t(120_000), Action::Emit { from_view: false });
    assert_eq!(
        s.emitted(t(120_000), Ok(RoundDone { emitted: 0 }))
            .corrections,
        None
    );
    // Without a follower there is nothing to correct.
    let mut p = FlowSchedule::new(settings(), t(0), false);
    drain_until(&mut p, t(0), Action::Emit { from_view: false });
    p.emitted(t(0), Ok(RoundDone { emitted: 5 }));
    drain_until(&mut p, t(60_000), Action::Emit { from_view: false });
    assert_eq!(
        p.emitted(t(60_000), Ok(RoundDone { emitted: 2 }))
            .corrections,
        None
    );
}

#[test]
fn a_flow_that_stops_following_drops_its_open_window_and_discovers_groups_again() {
    let mut cfg = settings();
    cfg.refresh_every = Some(secs(10));
    let mut s = FlowSchedule::new(cfg, t(0), true);
    drain(&mut s, t(0));
    s.followed(t(100), true);
    s.stop_following();
    assert!(!s.is_following());
    // The window is gone (the periodic round covers those groups); the loop
    // sleeps instead of spinning on a window nobody can take.
    assert_eq!(s.next(t(300)), Next::WaitUntil(t(1000)));
    drain(&mut s, t(1000));
    drain_until(&mut s, t(10_000), Action::RefreshGroups);
    // Changes seen without a follower open nothing.
    s.changes_seen(t(10_001), true);
    assert_eq!(s.deadline(), t(11_000));
}

#[test]
fn failure_backoff_doubles_from_one_second_up_to_its_cap_and_never_below_one_second() {
    let mut b = Backoff::new(secs(30));
    let waits: Vec<u64> = (0..8).map(|_| b.failed().as_secs()).collect();
    assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
    b.succeeded();
    assert_eq!(b.failed(), secs(1));
    let mut short = Backoff::new(Duration::from_millis(100));
    assert_eq!(short.failed(), secs(1));
    assert_eq!(short.failed(), secs(1));
    // Many failures do not overflow.
    let mut long = Backoff::new(Duration::MAX);
    for _ in 0..100 {
        long.failed();
    }
    assert_eq!(long.failed(), secs(64));
    // The membership's joins: from 500 ms up to 10 s.
    let mut joins = Backoff::starting(Duration::from_millis(500), secs(10));
    let waits: Vec<u128> = (0..7).map(|_| joins.failed().as_millis()).collect();
    assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
    joins.succeeded();
    assert_eq!(joins.failed(), Duration::from_millis(500));
}

#[test]
fn a_start_with_a_deadline_gives_up_when_the_next_wait_would_reach_it() {
    let mut r = RetryUntil::new(ONCE_BACKOFF_CAP, t(10_000));
    assert_eq!(r.failed(t(0)), Some(secs(1)));
    assert_eq!(r.failed(t(1_000)), Some(secs(2)));
    assert_eq!(r.failed(t(3_000)), Some(secs(4)));
    assert_eq!(r.left(t(7_000)), secs(3));
    // 7 s + 5 s is past the deadline.
    assert_eq!(r.failed(t(7_000)), None);
    assert_eq!(r.left(t(20_000)), Duration::ZERO);
}

#[test]
fn absurdly_long_intervals_saturate_instead_of_overflowing() {
    let mut cfg = settings();
    cfg.emit_every = Duration::MAX;
    cfg.sync_every = Some(Duration::MAX);
    cfg.poll_every = Duration::MAX;
    cfg.refresh_every = None;
    let mut s = FlowSchedule::new(cfg, t(0), false);
    assert_eq!(s.next(t(0)), Next::Act(Action::Emit { from_view: false }));
    s.emitted(t(0), Ok(RoundDone { emitted: 0 }));
    match s.next(t(1)) {
        Next::WaitUntil(at) => assert!(at > t(0) + secs(60 * 60 * 24 * 365)),
        other => panic!("{other:?}"),
    }
    assert!(after(t(0), Duration::MAX) > t(0));
}

#[test]
fn reverse_rounds_come_after_the_first_forward_round_and_then_every_interval() {
    let settings = ScheduleSettings {
        reverse_every: Some(secs(1)),
        ..settings()
    };
    let mut s = FlowSchedule::new(settings, t(0), false);
    let (actions, _) = drain(&mut s, t(0));
    assert_eq!(
        actions,
        [Action::Emit { from_view: false }, Action::Reverse]
    );
    // Handed out: not due again until reported.
    let mut s2 = FlowSchedule::new(s.settings.clone(), t(0), false);
    assert_eq!(s2.next(t(0)), Next::Act(Action::Emit { from_view: false }));
    assert_eq!(s2.next(t(0)), Next::Act(Action::Reverse));
    assert_eq!(s2.next(t(0)), Next::WaitUntil(t(1_000)));
    // Every second after the last one ended, beside the polls.
    let (actions, _) = drain(&mut s, t(999));
    assert!(!actions.contains(&Action::Reverse));
    let (actions, _) = drain(&mut s, t(1_000));
    assert_eq!(actions, [Action::PollSyncs, Action::Reverse]);
}

#[test]
fn a_failed_reverse_round_backs_off_and_leaves_the_forward_round_alone() {
    let settings = ScheduleSettings {
        reverse_every: Some(secs(60)),
        emit_every: secs(10),
        ..settings()
    };
    let mut s = FlowSchedule::new(settings, t(0), false);
    assert_eq!(s.next(t(0)), Next::Act(Action::Emit { from_view: false }));
    s.emitted(t(0), Ok(RoundDone { emitted: 0 }));
    assert_eq!(s.next(t(0)), Next::Act(Action::Reverse));
    // The source is down: 1 s, 2 s, 4 s, ... up to the round cap of 30 s,
    // never later than the interval.
    let mut now = 0;
    for expected in [1, 2, 4, 8, 16, 30, 30] {
        assert_eq!(s.reversed(t(now), false), Some(secs(expected)));
        now += expected * 1_000;
        // Due again then, after the polls and forward rounds due meanwhile,
        // which keep their own interval.
        loop {
            match s.next(t(now)) {
                Next::Act(Action::Reverse) => break,
                Next::Act(Action::PollSyncs) => {
                    s.polled(t(now), Ok(()), false);
                }
                Next::Act(Action::Emit { .. }) => {
                    s.emitted(t(now), Ok(RoundDone { emitted: 0 }));
                }
                other => panic!("{other:?} at {now}"),
            }
        }
    }
    // A success resets the backoff; the next round comes after the interval.
    assert_eq!(s.reversed(t(now), true), None);
    assert_eq!(s.reversed(t(now), false), Some(secs(1)));
}

#[test]
fn without_reverse_checkpoints_no_reverse_round_is_due() {
    let mut s = FlowSchedule::new(settings(), t(0), false);
    for at in [0, 1_000, 60_000, 600_000] {
        let (actions, _) = drain(&mut s, t(at));
        assert!(!actions.contains(&Action::Reverse));
    }
}
