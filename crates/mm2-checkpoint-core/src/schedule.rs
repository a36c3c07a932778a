//! A flow's timing rules as a pure timer table.
//!
//! The daemon loop of a flow asks [`FlowSchedule::next`] "what now?" with the
//! current time, carries out the answer and reports how it went, again with
//! the current time. Every rule about *when* something runs lives here: the
//! emission, refresh, offset-sync poll and group-sync intervals, the failure
//! backoffs, the follower's coalescing window, the first round from the
//! follower's view, re-opening a follower that keeps failing, and which
//! failures make the flow report its clusters unreachable (readiness). The
//! driver owns the clock and the sockets and decides none of these.
//!
//! Time is a plain [`Instant`] value handed in by the caller; nothing here
//! reads a clock, so the rules are unit-tested with a fake one. The rules are
//! described for operators in docs/operations.md and docs/commit-follower.md.

use std::time::{Duration, Instant};

/// The longest wait after consecutive failures of a round (emission or
/// startup of a daemon flow).
pub const ROUND_BACKOFF_CAP: Duration = Duration::from_secs(30);

/// The longest wait after consecutive failures of the commit follower.
pub const FOLLOW_BACKOFF_CAP: Duration = Duration::from_secs(10);

/// The longest wait between start attempts of `run --once`.
pub const ONCE_BACKOFF_CAP: Duration = Duration::from_secs(5);

/// Consecutive failures of the commit follower after which it is opened again
/// and `__consumer_offsets` replayed from its start.
pub const REOPEN_AFTER_FAILURES: u32 = 5;

/// The shortest pause between two reads of new offset syncs, whatever
/// `consumer.poll.timeout.ms` says.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The longest wait before a failed group refresh is tried again.
pub const REFRESH_RETRY: Duration = Duration::from_secs(5);

/// How far in the future "never" is: a configured interval so long that
/// `now + interval` overflows lands here instead.
const FAR_FUTURE: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 30);

/// `now + d`, saturating about 30 years ahead for absurdly long intervals.
pub fn after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .or_else(|| now.checked_add(FAR_FUTURE))
        .unwrap_or(now)
}

/// The wait after consecutive failures of one kind of step: a first wait
/// (1 s unless said otherwise) doubling up to a cap (never below the first
/// wait), reset by a success. Whole rounds, starts and the membership's joins
/// are paced with it; kafka-lite's per-request retries have their own,
/// shorter one with jitter.
#[derive(Debug, Clone)]
pub struct Backoff {
    failures: u32,
    first: Duration,
    cap: Duration,
}

impl Backoff {
    /// A backoff from 1 s that waits at most `cap` (at least 1 s).
    pub fn new(cap: Duration) -> Self {
        Backoff::starting(Duration::from_secs(1), cap)
    }

    /// A backoff from `first` that waits at most `cap` (at least `first`).
    pub fn starting(first: Duration, cap: Duration) -> Self {
        Backoff {
            failures: 0,
            first,
            cap,
        }
    }

    /// One more failure: how long to wait before the next attempt.
    pub fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let factor = 1u32 << self.failures.saturating_sub(1).min(6);
        self.first
            .saturating_mul(factor)
            .min(self.cap.max(self.first))
    }

    /// A success: the next failure waits the first wait again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
    }
}

/// Retries of a start that must succeed before a deadline (`run --once`
/// gives up when `admin.timeout.ms` runs out).
#[derive(Debug, Clone)]
pub struct RetryUntil {
    backoff: Backoff,
    deadline: Instant,
}

impl RetryUntil {
    /// Retries paced by a backoff capped at `cap`, until `deadline`.
    pub fn new(cap: Duration, deadline: Instant) -> Self {
        RetryUntil {
            backoff: Backoff::new(cap),
            deadline,
        }
    }

    /// An attempt failed at `now`: the wait before the next one, or `None`
    /// when that wait would reach the deadline (give up).
    pub fn failed(&mut self, now: Instant) -> Option<Duration> {
        let wait = self.backoff.failed();
        (after(now, wait) < self.deadline).then_some(wait)
    }

    /// How long is left before the deadline, seen at `now`.
    pub fn left(&self, now: Instant) -> Duration {
        self.deadline.saturating_duration_since(now)
    }
}

/// The intervals of one flow, from its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleSettings {
    /// `emit.checkpoints.interval.seconds`: the periodic (full) round.
    pub emit_every: Duration,
    /// `sync.group.offsets.interval.seconds`, or `None` when group sync is off.
    pub sync_every: Option<Duration>,
    /// `refresh.groups.interval.seconds`, or `None` when refresh is off.
    pub refresh_every: Option<Duration>,
    /// `consumer.poll.timeout.ms`: how often new offset syncs are read.
    pub poll_every: Duration,
    /// The follower's coalescing window: how long after the first unemitted
    /// change its checkpoints are emitted.
    pub coalesce: Duration,
    /// `emit.reverse.checkpoints.enabled`: the reverse round's interval
    /// (docs/operations.md, "Failing back"), or `None` when it is off.
    pub reverse_every: Option<Duration>,
}

/// What the loop should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Carry out this action now, then report its outcome.
    Act(Action),
    /// Nothing is due: take one step of the commit follower (then report it
    /// with [`FlowSchedule::followed`] or [`FlowSchedule::follow_failed`]).
    Follow,
    /// Nothing is due and nothing is followed: sleep until this time (or until
    /// something else, such as a group sync's step, wakes the loop).
    WaitUntil(Instant),
}

/// A timed action of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read new offset syncs; report with [`FlowSchedule::polled`].
    PollSyncs,
    /// Emit the checkpoints of the groups the follower saw change (their
    /// coalescing window has passed); report with
    /// [`FlowSchedule::emitted_followed`].
    EmitFollowed,
    /// Discover the source groups again; report with
    /// [`FlowSchedule::refreshed`].
    RefreshGroups,
    /// The periodic round over every group; report with
    /// [`FlowSchedule::emitted`].
    Emit {
        /// The first round after a follower's replay plans from the
        /// follower's view (it holds every group's committed offsets);
        /// later rounds fetch the offsets (the safety net).
        from_view: bool,
    },
    /// Ask for a full group sync (it starts once the one in flight ended);
    /// report the sync's end with [`FlowSchedule::full_sync_done`].
    FullSync,
    /// The reverse round: reverse checkpoints (and the group sync into the
    /// source) for the groups committed on the target; report with
    /// [`FlowSchedule::reversed`].
    Reverse,
}

/// What the driver should do after a follower step failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowFailure {
    /// Pause this long before the next step.
    pub pause: Duration,
    /// After the pause, open the follower again and replay
    /// `__consumer_offsets` from its start.
    pub reopen: bool,
}

/// What the flow should report about its clusters (readiness), when an
/// outcome changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reachability {
    /// The clusters answered.
    Ok,
    /// A step failed; the message says which and why.
    Failing(String),
}

/// Failures of the follower's steps, kept while following so that the flow
/// reports its clusters reachable only when following, reading the offset
/// syncs and producing the followed checkpoints all last succeeded.
#[derive(Debug, Default, Clone)]
struct FollowHealth {
    follow: Option<String>,
    syncs: Option<String>,
    emit: Option<String>,
}

impl FollowHealth {
    fn reachability(&self) -> Reachability {
        match [&self.follow, &self.syncs, &self.emit]
            .into_iter()
            .flatten()
            .next()
        {
            None => Reachability::Ok,
            Some(e) => Reachability::Failing(e.clone()),
        }
    }
}

/// The timer table of one running flow (the daemon loop, after startup).
#[derive(Debug, Clone)]
pub struct FlowSchedule {
    settings: ScheduleSettings,
    following: bool,
    next_emit: Instant,
    next_poll: Instant,
    next_refresh: Instant,
    next_sync: Instant,
    next_reverse: Instant,
    /// The follower's coalescing window: when the first unemitted change came.
    first_change: Option<Instant>,
    first_round: bool,
    round_backoff: Backoff,
    follow_backoff: Backoff,
    sync_backoff: Backoff,
    reverse_backoff: Backoff,
    follow_failures: u32,
    health: FollowHealth,
}

impl FlowSchedule {
    /// The schedule of a flow that has just started at `now` (its startup read
    /// everything, so the first round is due at once); `following` when a
    /// commit follower runs.
    pub fn new(settings: ScheduleSettings, now: Instant, following: bool) -> Self {
        let poll_every = settings.poll_every.max(MIN_POLL_INTERVAL);
        let refresh_every = settings.refresh_every.unwrap_or(FAR_FUTURE);
        let sync_every = settings.sync_every.unwrap_or(FAR_FUTURE);
        FlowSchedule {
            following,
            next_emit: now,
            next_poll: after(now, poll_every),
            next_refresh: after(now, refresh_every),
            next_sync: after(now, sync_every),
            // The first reverse round follows the first forward one (due at
            // once), which it never holds up.
            next_reverse: now,
            first_change: None,
            first_round: true,
            round_backoff: Backoff::new(ROUND_BACKOFF_CAP),
            follow_backoff: Backoff::new(FOLLOW_BACKOFF_CAP),
            sync_backoff: Backoff::new(sync_every),
            reverse_backoff: Backoff::new(ROUND_BACKOFF_CAP),
            follow_failures: 0,
            health: FollowHealth::default(),
            settings,
        }
    }

    /// Whether a commit follower runs.
    pub fn is_following(&self) -> bool {
        self.following
    }

    /// The follower could not be opened again and the flow polls from now
    /// on: group discovery takes over, and changes waiting for their window
    /// are left to the periodic round.
    pub fn stop_following(&mut self) {
        self.following = false;
    }

    fn poll_every(&self) -> Duration {
        self.settings.poll_every.max(MIN_POLL_INTERVAL)
    }

    fn refreshes(&self) -> bool {
        self.settings.refresh_every.is_some() && !self.following
    }

    fn followed_due(&self) -> Option<Instant> {
        if !self.following {
            return None;
        }
        self.first_change
            .map(|t0| after(t0, self.settings.coalesce))
    }

    /// The earliest time at which a timed action is due.
    pub fn deadline(&self) -> Instant {
        let mut next = self.next_emit.min(self.next_poll);
        if self.settings.sync_every.is_some() {
            next = next.min(self.next_sync);
        }
        if self.settings.reverse_every.is_some() {
            next = next.min(self.next_reverse);
        }
        if self.refreshes() {
            next = next.min(self.next_refresh);
        }
        if let Some(t) = self.followed_due() {
            next = next.min(t);
        }
        next
    }

    /// What to do at `now`. Due actions come in a fixed order: new offset
    /// syncs first (a checkpoint must be translated by every sync written
    /// before its commit), then the followed groups, the group refresh, the
    /// periodic round, the full group sync, and the reverse round. An action that is handed out
    /// is not due again until its outcome is reported (or, for
    /// [`Action::EmitFollowed`] and [`Action::FullSync`], at once is no
    /// longer due).
    pub fn next(&mut self, now: Instant) -> Next {
        if now >= self.next_poll {
            // Not due again until the poll is reported.
            self.next_poll = after(now, FAR_FUTURE);
            return Next::Act(Action::PollSyncs);
        }
        if self.followed_due().is_some_and(|t| now >= t) {
            self.first_change = None;
            return Next::Act(Action::EmitFollowed);
        }
        if self.refreshes() && now >= self.next_refresh {
            self.next_refresh = after(now, FAR_FUTURE);
            return Next::Act(Action::RefreshGroups);
        }
        if now >= self.next_emit {
            self.next_emit = after(now, FAR_FUTURE);
            return Next::Act(Action::Emit {
                from_view: self.following && self.first_round,
            });
        }
        if let Some(every) = self.settings.sync_every
            && now >= self.next_sync
        {
            self.next_sync = after(now, every);
            return Next::Act(Action::FullSync);
        }
        if self.settings.reverse_every.is_some() && now >= self.next_reverse {
            self.next_reverse = after(now, FAR_FUTURE);
            return Next::Act(Action::Reverse);
        }
        if self.following {
            Next::Follow
        } else {
            Next::WaitUntil(self.deadline())
        }
    }

    /// New offset syncs were read (or not) at `now`. `new_syncs`: partitions
    /// got new syncs, whose groups the follower emits again (their coalescing
    /// window opens). Returns what to report about the clusters, if anything.
    pub fn polled(
        &mut self,
        now: Instant,
        outcome: Result<(), String>,
        new_syncs: bool,
    ) -> Option<Reachability> {
        self.next_poll = after(now, self.poll_every());
        self.changes_seen(now, new_syncs);
        match outcome {
            Err(e) => {
                if self.following {
                    self.health.syncs = Some(e.clone());
                }
                Some(Reachability::Failing(e))
            }
            Ok(()) if self.following => {
                self.health.syncs = None;
                Some(self.health.reachability())
            }
            Ok(()) => None,
        }
    }

    /// The followed groups' checkpoints were emitted (or not). A failure
    /// leaves its groups changed in the follower's view; their window opens
    /// again with the follower's next step.
    pub fn emitted_followed(&mut self, outcome: Result<(), String>) -> Reachability {
        self.health.emit = outcome.err();
        self.health.reachability()
    }

    /// The group refresh ended at `now`: the next one after the interval, or
    /// a failed one again after at most [`REFRESH_RETRY`].
    pub fn refreshed(&mut self, now: Instant, ok: bool) {
        let every = self.settings.refresh_every.unwrap_or(FAR_FUTURE);
        let wait = if ok { every } else { REFRESH_RETRY.min(every) };
        self.next_refresh = after(now, wait);
    }

    /// The periodic round ended at `now`. On success the next one is due
    /// after `emit.checkpoints.interval.seconds`; a failed one is retried
    /// after the backoff (never later than the interval).
    pub fn emitted(&mut self, now: Instant, outcome: Result<RoundDone, String>) -> EmitReport {
        match outcome {
            Ok(done) => {
                self.round_backoff.succeeded();
                self.health = FollowHealth::default();
                // Checkpoints that the periodic round emitted although a
                // follower runs are ones the follower had not (yet) emitted.
                let corrections = (self.following && !self.first_round && done.emitted > 0)
                    .then_some(done.emitted);
                self.first_round = false;
                self.next_emit = after(now, self.settings.emit_every);
                EmitReport {
                    reachability: Reachability::Ok,
                    retry_in: None,
                    corrections,
                }
            }
            Err(e) => {
                let wait = self.round_backoff.failed().min(self.settings.emit_every);
                self.next_emit = after(now, wait);
                EmitReport {
                    reachability: Reachability::Failing(e),
                    retry_in: Some(wait),
                    corrections: None,
                }
            }
        }
    }

    /// A full group sync ended at `now`. A failed one is tried again after
    /// the backoff (never later than the sync interval); returns that wait.
    pub fn full_sync_done(&mut self, now: Instant, ok: bool) -> Option<Duration> {
        let every = self.settings.sync_every.unwrap_or(FAR_FUTURE);
        if ok {
            self.sync_backoff.succeeded();
            return None;
        }
        let wait = self.sync_backoff.failed().min(every);
        self.next_sync = after(now, wait);
        Some(wait)
    }

    /// The reverse round ended at `now`. On success the next one is due after
    /// its interval; a failed one (the source unreachable, as while it is
    /// down after a failover) is tried again after the backoff, 1 s doubling
    /// to [`ROUND_BACKOFF_CAP`] (never later than the interval); returns that
    /// wait. Its failures are the reverse round's own: they do not make the
    /// flow report its clusters unreachable, since the forward round reports
    /// on the same clusters.
    pub fn reversed(&mut self, now: Instant, ok: bool) -> Option<Duration> {
        let every = self.settings.reverse_every.unwrap_or(FAR_FUTURE);
        if ok {
            self.reverse_backoff.succeeded();
            self.next_reverse = after(now, every);
            return None;
        }
        let wait = self.reverse_backoff.failed().min(every);
        self.next_reverse = after(now, wait);
        Some(wait)
    }

    /// A follower step succeeded at `now`; `changes`: its view holds changes
    /// not emitted yet (their coalescing window opens if none is open).
    pub fn followed(&mut self, now: Instant, changes: bool) -> Reachability {
        self.follow_failures = 0;
        self.follow_backoff.succeeded();
        self.health.follow = None;
        self.changes_seen(now, changes);
        self.health.reachability()
    }

    /// A follower step failed: how long to pause, and whether to open the
    /// follower again after the pause. Report the reachability returned by
    /// [`FlowSchedule::follow_health`], and after the pause (if the follower
    /// is not re-opened) call [`FlowSchedule::changes_seen`].
    pub fn follow_failed(&mut self, error: String) -> FollowFailure {
        self.follow_failures += 1;
        self.health.follow = Some(error);
        let pause = self.follow_backoff.failed();
        let reopen = self.follow_failures >= REOPEN_AFTER_FAILURES;
        if reopen {
            self.follow_failures = 0;
        }
        FollowFailure { pause, reopen }
    }

    /// What the follower's steps say about the clusters.
    pub fn follow_health(&self) -> Reachability {
        self.health.reachability()
    }

    /// The follower's view holds changes not emitted yet (`changes`), seen at
    /// `now`: the coalescing window opens if none is open.
    pub fn changes_seen(&mut self, now: Instant, changes: bool) {
        if changes && self.following {
            self.first_change.get_or_insert(now);
        }
    }
}

/// A successful periodic round, as the schedule needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundDone {
    /// Checkpoints the round emitted.
    pub emitted: usize,
}

/// What the driver reports after a periodic round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmitReport {
    /// What to report about the clusters.
    pub reachability: Reachability,
    /// After a failure: when the round is tried again.
    pub retry_in: Option<Duration>,
    /// Checkpoints the periodic round emitted that the commit follower had
    /// not (yet) emitted, counted as corrections.
    pub corrections: Option<usize>,
}

#[cfg(test)]
mod tests;
