//! `run`: one task per flow, each a single loop over its timers.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use crate::config::MirrorConfig;
use crate::metrics::Metrics;

use crate::shutdown::ShutdownSignal;

use super::flow::follow::CommitFollower;
use super::flow::sync_runner::{GroupSyncRunner, SyncDone, SyncStep};
use super::flow::{FlowContext, FlowState, StepCause, StepError};
use super::kafka::ClusterClient;
use super::membership::Role;
use super::{DriverError, RunOptions, check_cpu};

/// `now + d`, saturating far in the future for absurdly long configured intervals.
fn after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(60 * 60 * 24 * 365 * 30))
}

/// The wait after consecutive failures of a flow step: 1 s doubling up to
/// `cap`, no jitter, no deadline (kafka-lite's `Backoff` is a per-request retry
/// with jitter under a deadline; this one paces whole rounds).
struct FailureBackoff {
    failures: u32,
    cap: Duration,
}

impl FailureBackoff {
    fn new(cap: Duration) -> Self {
        FailureBackoff { failures: 0, cap }
    }

    fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let secs = 1u64 << self.failures.saturating_sub(1).min(6);
        Duration::from_secs(secs).min(self.cap.max(Duration::from_secs(1)))
    }

    fn succeeded(&mut self) {
        self.failures = 0;
    }
}

pub(super) async fn run(
    config: MirrorConfig,
    options: RunOptions,
    shutdown: ShutdownSignal,
    metrics: Metrics,
) -> Result<(), DriverError> {
    check_cpu(&config)?;
    if options.once
        && let Some(flow) = config.flows.iter().find(|f| f.membership.is_some())
    {
        // A one-shot writer outside the group would write beside the owner.
        return Err(DriverError::Setup(format!(
            "flow {}: `run --once` does not take part in membership ({} = true); run it with \
             membership off, or run the daemon",
            flow.name(),
            crate::config::MEMBERSHIP_ENABLED_KEY
        )));
    }
    let mut contexts = Vec::new();
    for flow in config.flows {
        let ctx = FlowContext::new(flow, metrics.clone())
            .map_err(|e| DriverError::Setup(e.to_string()))?;
        ctx.set_initial_read_pending(true);
        contexts.push(ctx);
    }
    metrics.readiness().set_ready("startup");
    if contexts.is_empty() {
        tracing::warn!("no enabled flow in the configuration; nothing to do");
        if !options.once {
            shutdown.triggered().await;
        }
        return Ok(());
    }
    let mut tasks = tokio::task::JoinSet::new();
    for ctx in contexts {
        let shutdown = shutdown.clone();
        let once = options.once;
        tasks.spawn(async move {
            let name = ctx.name.clone();
            let r = if once {
                run_once(&ctx, &shutdown).await
            } else {
                match ctx.cfg.membership.clone() {
                    Some(m) => run_as_member(&ctx, &shutdown, &m).await,
                    None => run_forever(&ctx, &shutdown).await,
                }
                Ok(())
            };
            (name, r)
        });
    }
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((_, Ok(()))) => {}
            Ok((flow, Err(error))) => {
                tracing::error!(flow, %error, "the round could not complete");
                first_error.get_or_insert(DriverError::Once {
                    flow,
                    error: error.to_string(),
                });
            }
            Err(e) => {
                first_error.get_or_insert(DriverError::Task(e.to_string()));
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// `--once`: start (retrying until `admin.timeout.ms`), one emission round, one
/// group sync if enabled.
async fn run_once(ctx: &FlowContext, shutdown: &ShutdownSignal) -> Result<(), StepError> {
    let deadline = after(ctx.cfg.admin_timeout);
    let mut backoff = FailureBackoff::new(Duration::from_secs(5));
    let mut state = loop {
        let started = tokio::select! {
            reason = shutdown.triggered() => return Err(StepError {
                cluster: ctx.source.alias().to_owned(),
                op: "startup",
                error: StepCause::Driver { what: format!("interrupted by {reason}"), cause: None },
            }),
            r = ctx.start() => r,
        };
        match started {
            Ok(state) => break state,
            Err(e) => {
                let wait = backoff.failed();
                if after(wait) >= deadline || shutdown.is_triggered() {
                    return Err(e);
                }
                let left = deadline.saturating_duration_since(Instant::now());
                tracing::warn!(
                    flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64,
                    gives_up_in_ms = left.as_millis() as u64,
                    "startup failed; retrying until admin.timeout.ms ({} s) runs out in {:.1} s",
                    ctx.cfg.admin_timeout.as_secs(), left.as_secs_f64()
                );
                tokio::select! {
                    _ = shutdown.triggered() => return Err(e),
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    };
    let summary = ctx.emit_round(&mut state).await?;
    tracing::info!(flow = %ctx.name, groups = state.groups.len(), emitted = summary.emitted, skipped = summary.skipped, elapsed_ms = summary.elapsed.as_millis() as u64, "emission round done");
    if ctx.cfg.sync_group_offsets_enabled {
        let s = ctx.sync_groups(&state.checkpoints).await?;
        tracing::info!(
            flow = %ctx.name, committed = s.committed, skipped_active = s.skipped_active,
            skipped_target_ahead = s.skipped_target_ahead, skipped_unknown_state = s.skipped_unknown_state,
            failed = s.failed, "group sync done"
        );
    }
    Ok(())
}

/// The daemon loop of one flow. Returns when `shutdown` fires; an operation in
/// flight (a produce or a group sync's commits) finishes first.
async fn run_forever(ctx: &FlowContext, shutdown: &ShutdownSignal) {
    let Some((mut follower, mut state)) = start_flow(ctx, shutdown).await else {
        return;
    };
    let mut syncer = GroupSyncRunner::new(ctx);
    let mut timer = SyncTimer::new(ctx);
    run_loop(
        ctx,
        shutdown,
        &mut follower,
        &mut state,
        &mut syncer,
        &mut timer,
    )
    .await;
    if let Some(done) = syncer.finish_commits(&state.checkpoints).await {
        report_sync(ctx, done, &mut timer);
    }
}

/// How long the transaction coordinator lets one of our transactions stay
/// open (each is one produce and its commit; a paused owner's open
/// transaction is aborted by the next owner's takeover long before).
const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(60);

/// The daemon loop of a flow with membership on (docs/membership.md): stand
/// by until this instance owns the flow, take it over (fence the previous
/// writer, then restore from the checkpoints topic), run it as
/// [`run_forever`] does until the ownership ends, and stand by again.
async fn run_as_member(
    ctx: &FlowContext,
    shutdown: &ShutdownSignal,
    cfg: &crate::config::MembershipConfig,
) {
    let mut backoff = FailureBackoff::new(Duration::from_secs(30));
    let client = loop {
        match ctx.target.kafka().await {
            Ok(c) => break c.clone(),
            Err(e) => {
                ctx.set_clusters_ok(false, &e.to_string());
                let wait = backoff.failed();
                tracing::warn!(flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64, "cannot reach the target to join the membership group; retrying");
                tokio::select! {
                    _ = shutdown.triggered() => return,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    };
    // A standby has nothing to read: it is ready once it is a member.
    ctx.set_initial_read_pending(false);
    let mut membership = super::membership::start(
        ctx.name.clone(),
        client,
        cfg.clone(),
        ctx.metrics.clone(),
        shutdown.clone(),
    );
    let mut last_tenure = 0;
    loop {
        let tenure = loop {
            if let Role::Owner { tenure } = *membership.role.borrow_and_update()
                && tenure != last_tenure
            {
                break tenure;
            }
            tokio::select! {
                _ = shutdown.triggered() => return,
                r = membership.role.changed() => if r.is_err() { return },
            }
        };
        last_tenure = tenure;
        // This tenure ends when the process stops, the member no longer owns
        // the flow with this tenure, or a write of ours was fenced.
        let stop = ShutdownSignal::new();
        let watcher = tokio::spawn(watch_tenure(
            ctx.name.clone(),
            membership.role.clone(),
            tenure,
            ctx.target.refusals(),
            ctx.metrics.clone(),
            shutdown.clone(),
            stop.clone(),
        ));
        let took_over = tokio::select! {
            _ = stop.triggered() => None,
            r = ctx.target.begin_owner_writes(&cfg.group, TRANSACTION_TIMEOUT, membership.lease.clone()) => Some(r),
        };
        match took_over {
            Some(Ok((producer_id, epoch))) => {
                ctx.metrics.member_took_over(&ctx.name);
                ctx.set_initial_read_pending(true);
                tracing::info!(flow = %ctx.name, transactional_id = %cfg.group, producer_id, epoch, "took the flow over: the previous writer is fenced; restoring from the checkpoints topic");
                run_forever(ctx, &stop).await;
            }
            Some(Err(e)) => {
                ctx.set_clusters_ok(false, &e.to_string());
                tracing::warn!(flow = %ctx.name, error = %e, "taking the flow over failed (InitProducerId); trying again");
                // The same tenure may try again after a pause.
                last_tenure = 0;
                tokio::select! {
                    _ = stop.triggered() => {}
                    _ = tokio::time::sleep(backoff.failed()) => {}
                }
            }
            None => {}
        }
        watcher.abort();
        ctx.target.end_owner_writes().await;
        ctx.set_initial_read_pending(false);
        ctx.set_clusters_ok(true, "");
        if shutdown.is_triggered() {
            return;
        }
        tracing::info!(flow = %ctx.name, "this instance no longer writes the flow");
    }
}

/// Triggers `stop` when `shutdown` fires, the member's role leaves
/// `Owner { tenure }`, or a checkpoint write was fenced; counts refused writes.
async fn watch_tenure(
    flow: String,
    mut role: tokio::sync::watch::Receiver<Role>,
    tenure: u64,
    mut refusals: tokio::sync::watch::Receiver<super::kafka::Refusals>,
    metrics: crate::metrics::Metrics,
    shutdown: ShutdownSignal,
    stop: ShutdownSignal,
) {
    let mut seen = *refusals.borrow_and_update();
    loop {
        let owner = match *role.borrow_and_update() {
            Role::Owner { tenure: t } => t == tenure,
            // A rebalance: the lease is closed meanwhile; the tenure goes on
            // if this member keeps the flow.
            Role::Joining => true,
            Role::Standby => false,
        };
        if !owner {
            stop.trigger(crate::shutdown::ShutdownReason::Requested);
            return;
        }
        tokio::select! {
            reason = shutdown.triggered() => {
                stop.trigger(reason);
                return;
            }
            r = role.changed() => if r.is_err() {
                stop.trigger(crate::shutdown::ShutdownReason::Requested);
                return;
            },
            r = refusals.changed() => {
                if r.is_err() {
                    return;
                }
                let now = *refusals.borrow_and_update();
                for _ in 0..(now.fenced + now.lease_lapsed).saturating_sub(seen.fenced + seen.lease_lapsed) {
                    metrics.fenced_write(&flow);
                }
                if now.fenced > seen.fenced {
                    tracing::warn!(flow = %flow, "a checkpoint write was fenced: another instance took the flow over");
                    stop.trigger(crate::shutdown::ShutdownReason::Requested);
                    return;
                }
                seen = now;
            }
        }
    }
}

/// Starts the flow (and its commit follower), retrying until it works;
/// `None` when `shutdown` fires first.
async fn start_flow(
    ctx: &FlowContext,
    shutdown: &ShutdownSignal,
) -> Option<(Option<CommitFollower>, FlowState)> {
    let mut backoff = FailureBackoff::new(Duration::from_secs(30));
    loop {
        let started = async {
            let follower = ctx.open_follower().await?;
            let state = ctx.start_with(follower.as_ref().map(|f| &f.view)).await?;
            Ok::<_, StepError>((follower, state))
        };
        let started = tokio::select! {
            _ = shutdown.triggered() => return None,
            r = started => r,
        };
        match started {
            Ok(started) => {
                ctx.set_clusters_ok(true, "");
                return Some(started);
            }
            Err(e) => {
                ctx.set_clusters_ok(false, &e.to_string());
                let wait = backoff.failed();
                tracing::warn!(flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64, "startup failed; retrying");
                tokio::select! {
                    _ = shutdown.triggered() => return None,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

/// When the next periodic (full) group sync is due, and its failure backoff.
struct SyncTimer {
    next: Instant,
    every: Duration,
    backoff: FailureBackoff,
}

impl SyncTimer {
    fn new(ctx: &FlowContext) -> Self {
        let every = ctx.cfg.sync_group_offsets_interval;
        SyncTimer {
            next: after(every),
            every,
            backoff: FailureBackoff::new(every),
        }
    }
}

/// Logs a finished group sync; a failed periodic sync is retried sooner.
fn report_sync(ctx: &FlowContext, done: SyncDone, timer: &mut SyncTimer) {
    match (done.full, done.result) {
        (true, Ok(s)) => {
            timer.backoff.succeeded();
            tracing::info!(
                flow = %ctx.name, committed = s.committed, skipped_active = s.skipped_active,
                skipped_target_ahead = s.skipped_target_ahead, failed = s.failed, "group sync done"
            );
        }
        (true, Err(e)) => {
            let wait = timer.backoff.failed().min(timer.every);
            tracing::warn!(flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64, "group sync failed; retrying");
            timer.next = after(wait);
        }
        (false, Ok(s)) => {
            tracing::debug!(flow = %ctx.name, groups = done.groups, committed = s.committed, "synced the target groups of followed commits");
        }
        (false, Err(e)) => {
            tracing::warn!(flow = %ctx.name, error = %e, "syncing the target groups of followed commits failed; the periodic group sync retries");
        }
    }
}

/// Hands a group sync's step to the runner and reports the sync if it ended.
fn sync_stepped(
    ctx: &FlowContext,
    syncer: &mut GroupSyncRunner<'_, ClusterClient>,
    step: SyncStep,
    state: &FlowState,
    timer: &mut SyncTimer,
) {
    if let Some(done) = syncer.advance(step, &state.checkpoints) {
        report_sync(ctx, done, timer);
    }
}

/// [`run_forever`]'s loop over its timers, the follower and the group syncs;
/// returns when `shutdown` fires.
async fn run_loop<'a>(
    ctx: &'a FlowContext,
    shutdown: &ShutdownSignal,
    follower: &mut Option<CommitFollower>,
    state: &mut FlowState,
    syncer: &mut GroupSyncRunner<'a, ClusterClient>,
    timer: &mut SyncTimer,
) {
    let sync_enabled = ctx.cfg.sync_group_offsets_enabled;
    let mut backoff = FailureBackoff::new(Duration::from_secs(30));
    let emit_every = ctx.cfg.emit_checkpoints_interval;
    let refresh_every = ctx.cfg.refresh_groups_interval;
    let poll_every = ctx
        .cfg
        .consumer_poll_timeout
        .max(Duration::from_millis(100));
    // The first round runs right away (the startup just read everything).
    let mut next_emit = Instant::now();
    let mut next_refresh = after(refresh_every);
    let mut next_poll = after(poll_every);
    // The follower's coalescing window: when the first unemitted change came.
    let mut first_change: Option<Instant> = None;
    let mut first_round = true;
    let mut follow_backoff = FailureBackoff::new(Duration::from_secs(10));
    let mut follow_failures = 0u32;
    let mut health = FollowHealth::default();
    loop {
        // A wanted group sync starts as soon as the previous one ended.
        syncer.start(&state.checkpoints);
        let mut next = next_emit.min(next_poll);
        if sync_enabled {
            next = next.min(timer.next);
        }
        // The follower knows the groups as they commit; discovery is for polling.
        if ctx.cfg.refresh_groups_enabled && follower.is_none() {
            next = next.min(next_refresh);
        }
        if let Some(t0) = first_change {
            next = next.min(t0 + ctx.cfg.follow_coalesce);
        }
        if let Some(f) = follower.as_mut()
            && Instant::now() < next
        {
            // The fetch runs to its end (it is not cancel-safe); a group sync
            // moves on meanwhile.
            let r = {
                let step = ctx.follow_step(f);
                tokio::pin!(step);
                loop {
                    tokio::select! {
                        _ = shutdown.triggered() => return,
                        r = &mut step => break r,
                        s = syncer.next_step() => sync_stepped(ctx, syncer, s, state, timer),
                    }
                }
            };
            match r {
                Ok(_) => {
                    follow_failures = 0;
                    follow_backoff.succeeded();
                    health.follow = None;
                    health.report(ctx);
                }
                Err(e) => {
                    follow_failures += 1;
                    let wait = follow_backoff.failed();
                    tracing::warn!(flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64, "following the group commits failed; retrying");
                    health.follow = Some(e.to_string());
                    health.report(ctx);
                    let pause = tokio::time::sleep(wait);
                    tokio::pin!(pause);
                    loop {
                        tokio::select! {
                            _ = shutdown.triggered() => return,
                            _ = &mut pause => break,
                            s = syncer.next_step() => sync_stepped(ctx, syncer, s, state, timer),
                        }
                    }
                }
            }
            if follow_failures >= REOPEN_AFTER_FAILURES {
                // Something a retry does not cure (a partition's log moved
                // away from our position, the topic recreated): read it
                // again from its start into a fresh view.
                follow_failures = 0;
                reopen_follower(ctx, follower, state).await;
            } else if let Some(f) = follower.as_ref()
                && first_change.is_none()
                && f.view.has_changes()
            {
                first_change = Some(Instant::now());
            }
            continue;
        }
        tokio::select! {
            _ = shutdown.triggered() => return,
            _ = sleep_until(next) => {}
            s = syncer.next_step() => {
                sync_stepped(ctx, syncer, s, state, timer);
                continue;
            }
        }
        let now = Instant::now();
        if now >= next_poll {
            match ctx.poll_syncs(state).await {
                Err(e) => {
                    tracing::warn!(flow = %ctx.name, error = %e, "reading new offset syncs failed");
                    health.syncs = Some(e.to_string());
                    ctx.set_clusters_ok(false, &e.to_string());
                }
                Ok(_) if follower.is_some() => {
                    health.syncs = None;
                    health.report(ctx);
                }
                Ok(_) => {}
            }
            next_poll = after(poll_every);
            if state.synced.as_ref().is_some_and(|s| !s.is_empty()) {
                first_change.get_or_insert(now);
            }
        }
        if let Some(f) = follower.as_mut()
            && first_change.is_some_and(|t0| now >= t0 + ctx.cfg.follow_coalesce)
        {
            first_change = None;
            health.emit = match emit_followed(ctx, f, state).await {
                Ok(groups) => {
                    if sync_enabled {
                        syncer.want_groups(groups);
                    }
                    None
                }
                Err(e) => Some(e),
            };
            health.report(ctx);
        }
        if ctx.cfg.refresh_groups_enabled && follower.is_none() && now >= next_refresh {
            match ctx.refresh_groups(state).await {
                Ok(()) => next_refresh = after(refresh_every),
                Err(e) => {
                    tracing::warn!(flow = %ctx.name, error = %e, "group refresh failed; retrying");
                    next_refresh = after(Duration::from_secs(5).min(refresh_every));
                }
            }
        }
        if now >= next_emit {
            if let Some(f) = follower.as_ref() {
                // The safety net: every group the follower knows, by OffsetFetch.
                state.groups = f.view.group_names().map(str::to_owned).collect();
            }
            // Catch up with the offset syncs before translating.
            let r = match ctx.poll_syncs(state).await {
                // The first round after the replay plans from the view, which
                // holds every group's committed offsets; OffsetFetch stays the
                // periodic safety net (docs/commit-follower.md section 3).
                Ok(_) => match follower.as_ref() {
                    Some(f) if first_round => ctx.emit_round_from_view(state, &f.view).await,
                    _ => ctx.emit_round(state).await,
                },
                Err(e) => Err(e),
            };
            match r {
                Ok(summary) => {
                    backoff.succeeded();
                    ctx.set_clusters_ok(true, "");
                    health = FollowHealth::default();
                    if follower.is_some() && !first_round && summary.emitted > 0 {
                        ctx.metrics
                            .follower_corrections(&ctx.name, summary.emitted as u64);
                        tracing::info!(flow = %ctx.name, emitted = summary.emitted, "the periodic round emitted checkpoints the commit follower had not (yet) emitted");
                    }
                    first_round = false;
                    tracing::info!(flow = %ctx.name, emitted = summary.emitted, skipped = summary.skipped, elapsed_ms = summary.elapsed.as_millis() as u64, "emission round done");
                    next_emit = after(emit_every);
                }
                Err(e) => {
                    ctx.set_clusters_ok(false, &e.to_string());
                    let wait = backoff.failed().min(emit_every);
                    tracing::warn!(flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64, "emission round failed; retrying");
                    next_emit = after(wait);
                }
            }
        }
        if sync_enabled && now >= timer.next {
            // The full sync runs once the one in flight (if any) has ended.
            syncer.want_full();
            timer.next = after(timer.every);
        }
    }
}

/// What the follower's last steps found, for readiness while following: the
/// clusters count as reachable when following, reading the offset syncs and
/// producing the followed checkpoints last succeeded.
#[derive(Default)]
struct FollowHealth {
    follow: Option<String>,
    syncs: Option<String>,
    emit: Option<String>,
}

impl FollowHealth {
    fn report(&self, ctx: &FlowContext) {
        match [&self.follow, &self.syncs, &self.emit]
            .into_iter()
            .flatten()
            .next()
        {
            None => ctx.set_clusters_ok(true, ""),
            Some(e) => ctx.set_clusters_ok(false, e),
        }
    }
}

/// Consecutive failures of the follower after which it is opened again.
const REOPEN_AFTER_FAILURES: u32 = 5;

/// Opens the follower again and replays `__consumer_offsets` from its start.
/// Every group it then knows counts as changed, so the next window emits
/// whatever moved meanwhile (the monotonicity rule drops the rest). If it
/// cannot be opened (mode `auto` without the grant any more), the flow polls.
async fn reopen_follower(
    ctx: &FlowContext,
    follower: &mut Option<CommitFollower>,
    state: &mut FlowState,
) {
    tracing::warn!(flow = %ctx.name, "the commit follower keeps failing; reading __consumer_offsets again from its start");
    match ctx.open_follower().await {
        Ok(Some(mut f)) => {
            let groups: Vec<String> = f.view.group_names().map(str::to_owned).collect();
            f.view.mark_changed(&groups);
            state.groups = groups;
            *follower = Some(f);
        }
        Ok(None) => {
            *follower = None;
            state.synced = None;
        }
        Err(e) => {
            tracing::warn!(flow = %ctx.name, error = %e, "reopening the commit follower failed; retrying later");
        }
    }
}

/// Emits the checkpoints of the groups the follower saw change (and of the
/// groups whose partitions got new offset syncs) and returns those groups, for
/// the group sync. A failure to read the syncs leaves the changes for the next
/// window; a failed produce marks the groups changed again; the periodic round
/// covers them too.
async fn emit_followed(
    ctx: &FlowContext,
    f: &mut CommitFollower,
    state: &mut FlowState,
) -> Result<BTreeSet<String>, String> {
    // Catch up with the offset syncs first, as a polled round does: a sync
    // written before a commit must translate it (after an upstream rewind,
    // a commit translated by the older syncs would land far too low).
    if let Err(e) = ctx.poll_syncs(state).await {
        tracing::warn!(flow = %ctx.name, error = %e, "reading new offset syncs failed; emitting the followed commits later");
        return Err(e.to_string());
    }
    if let Some(synced) = state.synced.as_mut() {
        let synced = std::mem::take(synced);
        f.view.partitions_synced(&synced);
    }
    let changed = f.view.take_changed();
    if changed.is_empty() {
        return Ok(BTreeSet::new());
    }
    let names: BTreeSet<String> = changed.keys().cloned().collect();
    for g in &names {
        state.checkpoints.assign(g);
    }
    match ctx
        .emit_offsets(state, changed, Instant::now().into_std(), false)
        .await
    {
        Ok(summary) => {
            tracing::debug!(flow = %ctx.name, groups = names.len(), emitted = summary.emitted, "emitted the checkpoints of followed commits");
        }
        Err(e) => {
            f.view.mark_changed(&names);
            tracing::warn!(flow = %ctx.name, error = %e, "producing the checkpoints of followed commits failed; retrying");
            return Err(e.to_string());
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_backoff_doubles_from_one_second_up_to_its_cap_and_resets() {
        let mut b = FailureBackoff::new(Duration::from_secs(30));
        let waits: Vec<u64> = (0..8).map(|_| b.failed().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
        b.succeeded();
        assert_eq!(b.failed(), Duration::from_secs(1));
    }

    #[test]
    fn failure_backoff_never_waits_less_than_a_second() {
        let mut b = FailureBackoff::new(Duration::from_millis(100));
        assert_eq!(b.failed(), Duration::from_secs(1));
        assert_eq!(b.failed(), Duration::from_secs(1));
    }
}
