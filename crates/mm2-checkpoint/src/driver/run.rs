//! `run`: one task per flow, each a single loop over its timers.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use crate::config::MirrorConfig;
use crate::core::schedule::{
    self, Action, Backoff, FlowSchedule, Next, Reachability, RetryUntil, RoundDone,
    ScheduleSettings,
};
use crate::metrics::Metrics;

use crate::shutdown::ShutdownSignal;

use super::api::{DriverError, RunOptions, check_cpu};
use super::flow::group_sync::sync_groups;
use super::flow::sync_runner::{GroupSyncRunner, SyncDone, SyncStep};
use super::flow::{
    CommitFollower, FlowContext, FlowState, ReverseCheckpoints, StepCause, StepError,
};
use super::kafka::ClusterClient;
use super::membership::Role;

/// The current time as the core's schedule takes it (tokio's clock, so that
/// tests with a paused runtime see their own time).
fn now() -> std::time::Instant {
    Instant::now().into_std()
}

/// The wait `d` from now as a tokio sleep.
async fn pause(d: Duration) {
    tokio::time::sleep(d).await
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
    ctx.metrics.flow_running(&ctx.name);
    let mut retry = RetryUntil::new(
        schedule::ONCE_BACKOFF_CAP,
        schedule::after(now(), ctx.cfg.admin_timeout),
    );
    let mut state = loop {
        let started = tokio::select! {
            reason = shutdown.triggered() => return Err(StepError {
                cluster: ctx.source.alias().to_owned(),
                op: "startup",
                error: StepCause::Driver { what: format!("interrupted by {reason}"), cause: None },
            }),
            r = FlowState::start(ctx) => r,
        };
        match started {
            Ok(state) => break state,
            Err(e) => {
                let Some(wait) = retry.failed(now()).filter(|_| !shutdown.is_triggered()) else {
                    return Err(e);
                };
                let left = retry.left(now());
                tracing::warn!(
                    flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64,
                    gives_up_in_ms = left.as_millis() as u64,
                    "startup failed; retrying until admin.timeout.ms ({} s) runs out in {:.1} s",
                    ctx.cfg.admin_timeout.as_secs(), left.as_secs_f64()
                );
                tokio::select! {
                    _ = shutdown.triggered() => return Err(e),
                    _ = pause(wait) => {}
                }
            }
        }
    };
    let summary = state.emit_round(ctx).await?;
    tracing::info!(flow = %ctx.name, groups = state.checkpoints.group_count(), emitted = summary.emitted, skipped = summary.skipped, elapsed_ms = summary.elapsed.as_millis() as u64, "emission round done");
    if ctx.cfg.sync_group_offsets_enabled {
        let s = sync_groups(ctx, state.checkpoints.store()).await?;
        tracing::info!(
            flow = %ctx.name, committed = s.committed, skipped_active = s.skipped_active,
            skipped_target_ahead = s.skipped_target_ahead, skipped_unknown_state = s.skipped_unknown_state,
            failed = s.failed, "group sync done"
        );
    }
    if ctx.cfg.reverse_checkpoints_enabled {
        let mut reverse = ReverseCheckpoints::new(ctx);
        let summary = reverse.round(ctx, state.syncs.store()).await?;
        log_reverse(ctx, &summary);
    }
    Ok(())
}

/// Logs a finished reverse round.
fn log_reverse(ctx: &FlowContext, s: &super::flow::reverse::ReverseSummary) {
    tracing::info!(
        flow = %ctx.name, groups = s.groups, emitted = s.emitted, skipped = s.skipped,
        past_end = s.past_end, "reverse round done"
    );
    if let Some(synced) = s.synced {
        tracing::info!(
            flow = %ctx.name, committed = synced.committed, skipped_active = synced.skipped_active,
            skipped_source_ahead = synced.skipped_target_ahead,
            skipped_unknown_state = synced.skipped_unknown_state, failed = synced.failed,
            "group sync into the source done"
        );
    }
}

/// The daemon loop of one flow. Returns when `shutdown` fires; an operation in
/// flight (a produce or a group sync's commits) finishes first.
async fn run_forever(ctx: &FlowContext, shutdown: &ShutdownSignal) {
    ctx.metrics.flow_running(&ctx.name);
    run_flow(ctx, shutdown).await;
    ctx.metrics.flow_stopped(&ctx.name);
}

/// [`run_forever`]'s work, between the metrics of this instance starting and
/// stopping to write the flow.
async fn run_flow(ctx: &FlowContext, shutdown: &ShutdownSignal) {
    let Some((mut follower, mut state)) = start_flow(ctx, shutdown).await else {
        return;
    };
    let mut syncer = GroupSyncRunner::new(ctx);
    let mut schedule = FlowSchedule::new(schedule_settings(ctx), now(), follower.is_some());
    let mut reverse = ctx
        .cfg
        .reverse_checkpoints_enabled
        .then(|| ReverseCheckpoints::new(ctx));
    run_loop(
        ctx,
        shutdown,
        &mut follower,
        &mut state,
        &mut syncer,
        &mut schedule,
        &mut reverse,
    )
    .await;
    if let Some(done) = syncer.finish_commits(state.checkpoints.store()).await {
        report_sync(ctx, done, &mut schedule);
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
    let mut backoff = Backoff::new(schedule::ROUND_BACKOFF_CAP);
    let client = loop {
        match ctx.target.kafka().await {
            Ok(c) => break c.clone(),
            Err(e) => {
                ctx.set_clusters_ok(false, &e.to_string());
                let wait = backoff.failed();
                tracing::warn!(flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64, "cannot reach the target to join the membership group; retrying");
                tokio::select! {
                    _ = shutdown.triggered() => return,
                    _ = pause(wait) => {}
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
                    _ = pause(backoff.failed()) => {}
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
    let mut backoff = Backoff::new(schedule::ROUND_BACKOFF_CAP);
    loop {
        let started = async {
            let follower = CommitFollower::open(ctx).await?;
            let state = FlowState::start_with(ctx, follower.as_ref().map(|f| &f.view)).await?;
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
                    _ = pause(wait) => {}
                }
            }
        }
    }
}

/// Reports what the schedule says about the flow's clusters (readiness).
fn report(ctx: &FlowContext, reachability: Reachability) {
    match reachability {
        Reachability::Ok => ctx.set_clusters_ok(true, ""),
        Reachability::Failing(e) => ctx.set_clusters_ok(false, &e),
    }
}

/// The flow's intervals as its schedule takes them.
fn schedule_settings(ctx: &FlowContext) -> ScheduleSettings {
    let cfg = &ctx.cfg;
    ScheduleSettings {
        emit_every: cfg.emit_checkpoints_interval,
        sync_every: cfg
            .sync_group_offsets_enabled
            .then_some(cfg.sync_group_offsets_interval),
        refresh_every: cfg
            .refresh_groups_enabled
            .then_some(cfg.refresh_groups_interval),
        poll_every: cfg.consumer_poll_timeout,
        coalesce: cfg.follow_coalesce,
        reverse_every: cfg
            .reverse_checkpoints_enabled
            .then_some(cfg.reverse_checkpoints_interval),
    }
}

/// Logs a finished group sync and tells the schedule (a failed periodic sync
/// is retried sooner).
fn report_sync(ctx: &FlowContext, done: SyncDone, schedule: &mut FlowSchedule) {
    match (done.full, done.result) {
        (true, Ok(s)) => {
            schedule.full_sync_done(now(), true);
            tracing::info!(
                flow = %ctx.name, committed = s.committed, skipped_active = s.skipped_active,
                skipped_target_ahead = s.skipped_target_ahead, failed = s.failed, "group sync done"
            );
        }
        (true, Err(e)) => {
            let wait = schedule.full_sync_done(now(), false).unwrap_or_default();
            tracing::warn!(flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64, "group sync failed; retrying");
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
    schedule: &mut FlowSchedule,
) {
    if let Some(done) = syncer.advance(step, state.checkpoints.store()) {
        report_sync(ctx, done, schedule);
    }
}

/// [`run_forever`]'s loop: asks the flow's schedule what to do next, does
/// it, and tells the schedule how it went. Group syncs move on beside it.
/// Returns when `shutdown` fires.
async fn run_loop<'a>(
    ctx: &'a FlowContext,
    shutdown: &ShutdownSignal,
    follower: &mut Option<CommitFollower>,
    state: &mut FlowState,
    syncer: &mut GroupSyncRunner<'a, ClusterClient>,
    schedule: &mut FlowSchedule,
    reverse: &mut Option<ReverseCheckpoints<ClusterClient>>,
) {
    let sync_enabled = ctx.cfg.sync_group_offsets_enabled;
    loop {
        // A wanted group sync starts as soon as the previous one ended.
        syncer.start(state.checkpoints.store());
        match schedule.next(now()) {
            Next::Follow => {
                let Some(f) = follower.as_mut() else {
                    schedule.stop_following();
                    continue;
                };
                // The fetch runs to its end (it is not cancel-safe); a group
                // sync moves on meanwhile.
                let r = {
                    let step = f.step(ctx);
                    tokio::pin!(step);
                    loop {
                        tokio::select! {
                            _ = shutdown.triggered() => return,
                            r = &mut step => break r,
                            s = syncer.next_step() => sync_stepped(ctx, syncer, s, state, schedule),
                        }
                    }
                };
                match r {
                    Ok(_) => report(ctx, schedule.followed(now(), f.view.has_changes())),
                    Err(e) => {
                        let failure = schedule.follow_failed(e.to_string());
                        tracing::warn!(flow = %ctx.name, error = %e, retry_in_ms = failure.pause.as_millis() as u64, "following the group commits failed; retrying");
                        report(ctx, schedule.follow_health());
                        let wait = pause(failure.pause);
                        tokio::pin!(wait);
                        loop {
                            tokio::select! {
                                _ = shutdown.triggered() => return,
                                _ = &mut wait => break,
                                s = syncer.next_step() => sync_stepped(ctx, syncer, s, state, schedule),
                            }
                        }
                        if failure.reopen {
                            // Something a retry does not cure (a partition's
                            // log moved away from our position, the topic
                            // recreated): read it again from its start.
                            reopen_follower(ctx, follower, state).await;
                            if follower.is_none() {
                                schedule.stop_following();
                            }
                        } else if let Some(f) = follower.as_ref() {
                            schedule.changes_seen(now(), f.view.has_changes());
                        }
                    }
                }
            }
            Next::WaitUntil(at) => {
                tokio::select! {
                    _ = shutdown.triggered() => return,
                    _ = sleep_until(Instant::from_std(at)) => {}
                    s = syncer.next_step() => sync_stepped(ctx, syncer, s, state, schedule),
                }
            }
            Next::Act(Action::PollSyncs) => {
                let r = state.poll_syncs(ctx).await.map(|_| ()).map_err(|e| {
                    tracing::warn!(flow = %ctx.name, error = %e, "reading new offset syncs failed");
                    e.to_string()
                });
                let new_syncs = state.syncs.has_new_syncs();
                if let Some(r) = schedule.polled(now(), r, new_syncs) {
                    report(ctx, r);
                }
            }
            Next::Act(Action::EmitFollowed) => {
                let Some(f) = follower.as_mut() else {
                    schedule.stop_following();
                    continue;
                };
                let r = emit_followed(ctx, f, state).await.map(|groups| {
                    if sync_enabled {
                        syncer.want_groups(groups);
                    }
                });
                report(ctx, schedule.emitted_followed(r));
            }
            Next::Act(Action::RefreshGroups) => {
                let r = state.checkpoints.refresh_groups(ctx).await;
                if let Err(e) = &r {
                    tracing::warn!(flow = %ctx.name, error = %e, "group refresh failed; retrying");
                }
                schedule.refreshed(now(), r.is_ok());
            }
            Next::Act(Action::Emit { from_view }) => {
                if let Some(f) = follower.as_ref() {
                    // The safety net: every group the follower knows, by OffsetFetch.
                    state
                        .checkpoints
                        .set_groups(f.view.group_names().map(str::to_owned).collect());
                }
                // Catch up with the offset syncs before translating.
                let r = match state.poll_syncs(ctx).await {
                    // The first round after the replay plans from the view,
                    // which holds every group's committed offsets; OffsetFetch
                    // stays the periodic safety net (docs/commit-follower.md
                    // section 3).
                    Ok(_) => match follower.as_ref() {
                        Some(f) if from_view => state.emit_round_from_view(ctx, &f.view).await,
                        _ => state.emit_round(ctx).await,
                    },
                    Err(e) => Err(e),
                };
                let done = r
                    .as_ref()
                    .map(|s| RoundDone { emitted: s.emitted })
                    .map_err(ToString::to_string);
                let outcome = schedule.emitted(now(), done);
                report(ctx, outcome.reachability);
                match r {
                    Ok(summary) => {
                        if let Some(n) = outcome.corrections {
                            ctx.metrics.follower_corrections(&ctx.name, n as u64);
                            tracing::info!(flow = %ctx.name, emitted = n, "the periodic round emitted checkpoints the commit follower had not (yet) emitted");
                        }
                        tracing::info!(flow = %ctx.name, emitted = summary.emitted, skipped = summary.skipped, elapsed_ms = summary.elapsed.as_millis() as u64, "emission round done");
                    }
                    Err(e) => {
                        let wait = outcome.retry_in.unwrap_or_default();
                        tracing::warn!(flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64, "emission round failed; retrying");
                    }
                }
            }
            // The full sync runs once the one in flight (if any) has ended.
            Next::Act(Action::FullSync) => syncer.want_full(),
            Next::Act(Action::Reverse) => {
                let Some(reverse) = reverse.as_mut() else {
                    schedule.reversed(now(), true);
                    continue;
                };
                // Catch up with the offset syncs first, as a forward round
                // does; then the round, with a group sync moving on beside it.
                let r = match state.poll_syncs(ctx).await {
                    Ok(_) => {
                        let round = reverse.round(ctx, state.syncs.store());
                        tokio::pin!(round);
                        loop {
                            tokio::select! {
                                r = &mut round => break r,
                                s = syncer.next_step() => sync_stepped(ctx, syncer, s, state, schedule),
                            }
                        }
                    }
                    Err(e) => Err(e),
                };
                match r {
                    Ok(summary) => {
                        schedule.reversed(now(), true);
                        if summary.emitted > 0 || summary.past_end > 0 {
                            log_reverse(ctx, &summary);
                        }
                    }
                    Err(e) => {
                        let wait = schedule.reversed(now(), false).unwrap_or_default();
                        tracing::warn!(flow = %ctx.name, error = %e, retry_in_ms = wait.as_millis() as u64, "reverse round failed; retrying");
                    }
                }
            }
        }
    }
}

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
    match CommitFollower::open(ctx).await {
        Ok(Some(mut f)) => {
            let groups: Vec<String> = f.view.group_names().map(str::to_owned).collect();
            f.view.mark_changed(&groups);
            state.checkpoints.set_groups(groups);
            *follower = Some(f);
        }
        Ok(None) => {
            *follower = None;
            state.syncs.stop_following();
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
    if let Err(e) = state.poll_syncs(ctx).await {
        tracing::warn!(flow = %ctx.name, error = %e, "reading new offset syncs failed; emitting the followed commits later");
        return Err(e.to_string());
    }
    f.view.partitions_synced(&state.syncs.take_new_syncs());
    let changed = f.view.take_changed();
    if changed.is_empty() {
        return Ok(BTreeSet::new());
    }
    let names: BTreeSet<String> = changed.keys().cloned().collect();
    for g in &names {
        state.checkpoints.assign(g);
    }
    match state
        .emit_offsets(ctx, changed, Instant::now().into_std(), false)
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
