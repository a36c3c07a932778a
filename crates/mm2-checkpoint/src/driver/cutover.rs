//! `cutover`: moves consumer groups from one side of a flow to the other on
//! purpose (docs/operations.md, "Planned cutover").
//!
//! It gathers facts and hands them to the core (`core::cutover`), which
//! decides every group-partition: the groups' states and final commits on the
//! side they leave, their states and commits on the side they go to, the end
//! offsets of both sides' partitions and the flow's offset syncs. While some
//! partition waits for the mirror and the syncs to cover its commit, it reads
//! new syncs once a second and reports progress on stderr, up to the
//! timeout. Then it prints the plan (a dry run) or, with `--execute`, commits
//! the ready groups through the group sync's decisions and carry-out, the
//! same as the daemon and `translate --apply` (idle groups only, never
//! lowering).

pub(super) mod output;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::config::MirrorConfig;
use crate::core::content_search::{Bracket, bracket};
use crate::core::cutover::{
    BackFacts, Direction, ForwardFacts, GroupDecision, GroupPlan, Outcome, PartitionDecision,
    PartitionPlan, Side, WaitReason, decide_back, decide_forward, decide_group, outcome,
    reading_precision, time_out, wait_over,
};
use crate::core::reverse::translate_back;
use crate::core::{
    CheckpointStore, GroupOffsets, GroupSyncDecision, InitMode, OffsetSyncStore, TargetGroup,
    TargetGroupState, TargetRefresh, TopicPartition, plan_group_sync,
};
use crate::metrics::Metrics;
use crate::shutdown::ShutdownSignal;

use super::api::{CutoverOptions, CutoverReport, DriverError, TranslateFormat, check_cpu};
use super::flow::archive::SyncHistory;
use super::flow::content::ContentSearch;
use super::flow::group_sync::refresh_groups;
use super::flow::offset_syncs::OffsetSyncs;
use super::flow::{FlowCluster, FlowContext, GroupSyncResult, carry_out_group_sync};
use super::kafka::ClusterClient;
use output::{Output, commit_text};

/// How often new offset syncs are read while waiting.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

pub(super) async fn cutover(
    config: MirrorConfig,
    options: CutoverOptions,
    shutdown: ShutdownSignal,
) -> Result<CutoverReport, DriverError> {
    check_cpu(&config)?;
    let Some(flow) = config.flows.into_iter().find(|f| f.name() == options.flow) else {
        return Err(DriverError::Translate(format!(
            "flow {} is not an enabled flow of the configuration",
            options.flow
        )));
    };
    let metrics = Metrics::new(env!("CARGO_PKG_VERSION"), "n/a");
    let mut ctx = FlowContext::new(flow, metrics).map_err(|e| DriverError::Setup(e.to_string()))?;
    // Reading only: precise translation's history topic is neither created
    // nor restored; the store keeps what the offset-syncs topic holds, every
    // sync of it within the budget, whatever the flow translates with
    // (`core::cutover::reading_precision`).
    ctx.sync_history_topic = None;
    let direction = options.direction;
    let (left, there) = sides(&ctx, direction);
    let groups = select_groups(&ctx, left, &options.groups, options.matching.as_ref()).await?;

    let syncs_topic_exists = ctx
        .syncs_cluster
        .topic_exists(&ctx.syncs_topic)
        .await
        .map_err(|e| fail(&ctx.syncs_cluster, "Metadata", &e))?;
    if !syncs_topic_exists {
        return Err(DriverError::Translate(format!(
            "cluster {}: the offset-syncs topic {} does not exist (is MM2's source connector running for {}?)",
            ctx.syncs_cluster.alias(),
            ctx.syncs_topic,
            ctx.name
        )));
    }
    let mode = InitMode::LoadAllHistory;
    let mut syncs = OffsetSyncs::new(
        OffsetSyncStore::with_precision(mode, reading_precision(ctx.cfg.translation_max_syncs)),
        false,
    )
    .quiet_fallbacks();
    let mut history = SyncHistory::default();
    syncs
        .load(&ctx, &mut history, mode)
        .await
        .map_err(|e| DriverError::Translate(e.to_string()))?;

    let started = Instant::now();
    let deadline = started + options.timeout;
    let mut proofs = Proofs::default();
    let mut plans = loop {
        let mut plans = gather(&ctx, direction, &groups, syncs.store(), &mut proofs).await?;
        if wait_over(&plans) {
            break plans;
        }
        if Instant::now() >= deadline {
            time_out(&mut plans);
            break plans;
        }
        crate::console::err_line(&progress(&plans, started.elapsed(), options.timeout));
        tokio::select! {
            reason = shutdown.triggered() => {
                return Err(DriverError::Interrupted(reason.to_string()));
            }
            () = tokio::time::sleep(POLL_INTERVAL) => {}
        }
        syncs
            .poll(&ctx, &mut history)
            .await
            .map_err(|e| DriverError::Translate(e.to_string()))?;
    };

    let mut results: BTreeMap<String, (bool, String)> = BTreeMap::new();
    if options.execute {
        execute(&ctx, direction, &mut plans, &mut results).await?;
    }
    let mut not_committed = Vec::new();
    for plan in &plans {
        let (committed, text) = results
            .get(&plan.group)
            .cloned()
            .unwrap_or_else(|| (false, commit_text(plan, options.execute)));
        // A dry run commits nothing: only the groups it would not commit.
        let would = !options.execute && plan.decision == GroupDecision::Ready;
        if !committed && !would {
            not_committed.push((plan.group.clone(), text.clone()));
        }
        results.insert(plan.group.clone(), (committed, text));
    }
    let mut outcome = outcome(&plans);
    if options.execute && !not_committed.is_empty() {
        outcome = Outcome::Refused;
    }
    let out = Output {
        flow: &ctx.name,
        direction,
        from: left.alias(),
        to: there.alias(),
        execute: options.execute,
        outcome,
        plans: &plans,
        results: &results,
    };
    crate::console::out(&match options.format {
        TranslateFormat::Table => out.table(),
        TranslateFormat::Json => out.json(),
    });
    Ok(CutoverReport {
        outcome,
        not_committed,
    })
}

/// The side the groups leave and the side they go to.
pub(super) fn sides<C>(ctx: &FlowContext<C>, direction: Direction) -> (&C, &C) {
    match direction {
        Direction::Forward => (&ctx.source, &ctx.target),
        Direction::Back => (&ctx.target, &ctx.source),
    }
}

/// A failed cluster operation as the command's error.
fn fail(cluster: &ClusterClient, op: &str, e: &kafka_lite::Error) -> DriverError {
    DriverError::Translate(format!(
        "cluster {}: {op} failed: {e}; nothing committed",
        cluster.alias()
    ))
}

/// The named groups in the order given (once each), then the groups of the
/// side left that the filter accepts, sorted.
pub(super) async fn select_groups(
    ctx: &FlowContext,
    left: &ClusterClient,
    named: &[String],
    matching: Option<&crate::core::GroupFilter>,
) -> Result<Vec<String>, DriverError> {
    let mut seen = BTreeSet::new();
    let mut groups: Vec<String> = named
        .iter()
        .filter(|g| seen.insert((*g).clone()))
        .cloned()
        .collect();
    if let Some(filter) = matching {
        let listed = left
            .list_groups()
            .await
            .map_err(|e| fail(left, "ListGroups", &e))?;
        groups.extend(
            listed
                .into_iter()
                .filter(|g| filter.should_replicate_group(g) && seen.insert(g.clone())),
        );
    }
    if groups.is_empty() {
        tracing::warn!(flow = %ctx.name, cluster = left.alias(), "no group selected: no group there matches");
    }
    Ok(groups)
}

/// The name on the side gone to of partition `tp` of the side left, if the
/// flow carries it: forward, the topics the flow mirrors (by the policy's
/// checkpoint rename, docs/behaviour.md B.4); back, the flow's remote topics
/// on T, by the name they came from on S.
fn name_there<C>(
    ctx: &FlowContext<C>,
    direction: Direction,
    tp: &TopicPartition,
) -> Option<TopicPartition> {
    let topic = &tp.topic;
    let name = match direction {
        Direction::Forward => {
            let mirrored = ctx.topic_filter.should_replicate_topic(topic)
                && !ctx.policy.is_internal_topic(topic)
                && ctx.policy.topic_source(topic) != Some(ctx.flow.target.as_str());
            mirrored.then(|| ctx.policy.checkpoint_topic(&ctx.flow, topic))?
        }
        Direction::Back => {
            if ctx.policy.topic_source(topic) != Some(ctx.flow.source.as_str())
                || ctx.policy.is_internal_topic(topic)
            {
                return None;
            }
            let back = crate::core::Flow::new(ctx.flow.target.clone(), ctx.flow.source.clone());
            let name = ctx.policy.checkpoint_topic(&back, topic);
            ctx.topic_filter
                .should_replicate_topic(&name)
                .then_some(name)?
        }
    };
    Some(TopicPartition::new(name, tp.partition))
}

/// One pass over the facts: describes the groups on both sides, lists their
/// commits and the partitions' end offsets, and asks the core for the plans.
pub(super) async fn gather(
    ctx: &FlowContext,
    direction: Direction,
    groups: &[String],
    store: &OffsetSyncStore,
    proofs: &mut Proofs,
) -> Result<Vec<GroupPlan>, DriverError> {
    let (left, there) = sides(ctx, direction);
    if groups.is_empty() {
        return Ok(Vec::new());
    }
    let described = left
        .describe_groups(groups)
        .await
        .map_err(|e| fail(left, "DescribeGroups", &e))?;
    let mut commits = left
        .fetch_group_offsets(groups)
        .await
        .map_err(|e| fail(left, "OffsetFetch", &e))?;
    let refreshed = refresh_groups(ctx, there, groups)
        .await
        .map_err(|e| DriverError::Translate(format!("{e}; nothing committed")))?;

    // The partitions of every group, as (group, side left's state, partitions).
    let mut skeletons = Vec::new();
    let mut left_ends = BTreeSet::new();
    let mut there_ends = BTreeSet::new();
    for group in groups {
        let state = described
            .get(group)
            .map_or(TargetGroupState::Unknown, |d| d.state);
        let offsets: Option<GroupOffsets> = commits.remove(group).and_then(Result::ok);
        let left_side = match (state, &offsets) {
            (TargetGroupState::Empty, Some(_)) => Side::Idle(BTreeMap::new()),
            (TargetGroupState::Dead, _) => Side::Absent,
            (TargetGroupState::Empty | TargetGroupState::Unknown, _) => Side::Unknown,
            (active, _) => Side::Active(active),
        };
        let mut partitions = Vec::new();
        for (tp, committed) in offsets.into_iter().flatten() {
            let Some(committed) = committed.filter(|c| c.offset >= 0) else {
                continue;
            };
            let Some(there_tp) = name_there(ctx, direction, &tp) else {
                continue;
            };
            left_ends.insert(tp.clone());
            there_ends.insert(there_tp.clone());
            partitions.push(PartitionPlan {
                left: tp,
                there: there_tp,
                committed: committed.offset,
                metadata: committed.metadata,
                decision: PartitionDecision::Wait(WaitReason::NotReady),
            });
        }
        skeletons.push((group, left_side, partitions));
    }
    let there_ends = end_offsets(there, &there_ends).await?;
    let left_ends = match direction {
        Direction::Back => end_offsets(left, &left_ends).await?,
        Direction::Forward => BTreeMap::new(),
    };

    let mut plans = Vec::with_capacity(skeletons.len());
    for (group, left_side, mut partitions) in skeletons {
        for p in &mut partitions {
            let proven = match direction {
                Direction::Forward => proofs.proven(ctx, store, &p.left, p.committed).await,
                Direction::Back => None,
            };
            p.decision = decide(store, direction, p, proven, &left_ends, &there_ends);
        }
        let there_side = match refreshed.get(group) {
            Some(TargetGroup::Empty(committed)) => Side::Idle(
                committed
                    .iter()
                    .filter_map(|(tp, o)| Some((tp.clone(), (*o)?)))
                    .collect(),
            ),
            Some(TargetGroup::Absent) => Side::Absent,
            Some(TargetGroup::Active(state)) => Side::Active(*state),
            Some(TargetGroup::Unknown) | None => Side::Unknown,
        };
        plans.push(decide_group(group, &left_side, &there_side, partitions));
    }
    Ok(plans)
}

/// The core's decision for one partition from the store and the end offsets.
fn decide(
    store: &OffsetSyncStore,
    direction: Direction,
    p: &PartitionPlan,
    proven: Option<i64>,
    left_ends: &BTreeMap<TopicPartition, i64>,
    there_ends: &BTreeMap<TopicPartition, i64>,
) -> PartitionDecision {
    let end_there = there_ends.get(&p.there).copied();
    match direction {
        Direction::Forward => {
            let (topic, partition) = (&p.left.topic, p.left.partition);
            let known = store.known_syncs(topic, partition).unwrap_or_default();
            decide_forward(&ForwardFacts {
                committed: p.committed,
                translation: store.translate_offset(topic, partition, p.committed),
                syncs: &known,
                end_there,
                proven,
            })
        }
        Direction::Back => {
            let (topic, partition) = (&p.there.topic, p.there.partition);
            let known = store.known_syncs(topic, partition).unwrap_or_default();
            decide_back(&BackFacts {
                committed: p.committed,
                translation: translate_back(store, topic, partition, p.committed),
                syncs: &known,
                end_left: left_ends.get(&p.left).copied(),
                end_there,
            })
        }
    }
}

/// Content search for a forward cutover, when the flow enables it
/// (`mm2-checkpoint.offset.translation.content.search`, with precise
/// translation): it can prove the exact position of a commit between two
/// syncs (docs/translation.md, "Content search"). Each bracket is searched
/// once; a new sync above the commit makes a new bracket, searched again.
#[derive(Default)]
pub(super) struct Proofs {
    search: ContentSearch,
    decided: BTreeMap<(TopicPartition, i64), (Bracket, Option<i64>)>,
}

impl Proofs {
    /// The position content search proves for commit `upstream` of `tp`, if any.
    async fn proven(
        &mut self,
        ctx: &FlowContext,
        store: &OffsetSyncStore,
        tp: &TopicPartition,
        upstream: i64,
    ) -> Option<i64> {
        if !ctx.cfg.content_search {
            return None;
        }
        let b = bracket(store, tp, upstream)?;
        let key = (tp.clone(), upstream);
        if let Some((seen, proven)) = self.decided.get(&key)
            && *seen == b
        {
            return *proven;
        }
        // `None`: a transient read error, searched again on the next pass.
        let proven = self.search.search_one(ctx, tp, &b).await?.ok();
        self.decided.insert(key, (b, proven));
        proven
    }
}

/// The end offsets of `partitions` on `cluster`.
async fn end_offsets(
    cluster: &ClusterClient,
    partitions: &BTreeSet<TopicPartition>,
) -> Result<BTreeMap<TopicPartition, i64>, DriverError> {
    if partitions.is_empty() {
        return Ok(BTreeMap::new());
    }
    let partitions: Vec<TopicPartition> = partitions.iter().cloned().collect();
    cluster
        .end_offsets(&partitions)
        .await
        .map_err(|e| fail(cluster, "ListOffsets", &e))
}

/// One line of progress while some group waits.
fn progress(plans: &[GroupPlan], elapsed: Duration, timeout: Duration) -> String {
    let ready = plans
        .iter()
        .filter(|p| p.decision == GroupDecision::Ready)
        .count();
    let waiting: Vec<String> = plans
        .iter()
        .flat_map(|plan| {
            plan.partitions
                .iter()
                .filter_map(move |p| match p.decision {
                    PartitionDecision::Wait(why) => Some(format!(
                        "{} {} at {}: {}",
                        plan.group,
                        p.left,
                        p.committed,
                        output::wait_text(why)
                    )),
                    _ => None,
                })
        })
        .collect();
    let shown = waiting
        .iter()
        .take(3)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    let more = waiting.len().saturating_sub(3);
    format!(
        "cutover: waiting {}s of {}s: {ready} of {} groups ready, {} partitions waiting: {shown}{}",
        elapsed.as_secs(),
        timeout.as_secs(),
        plans.len(),
        waiting.len(),
        if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        }
    )
}

/// Commits the ready groups on the side gone to. Just before, the side left
/// is described again: a group that gained members or committed again since
/// the plan is not committed. The commits go through the group sync's plan
/// and carry-out, which describe the side gone to once more.
async fn execute(
    ctx: &FlowContext,
    direction: Direction,
    plans: &mut [GroupPlan],
    results: &mut BTreeMap<String, (bool, String)>,
) -> Result<(), DriverError> {
    let (left, there) = sides(ctx, direction);
    let ready: Vec<String> = plans
        .iter()
        .filter(|p| p.decision == GroupDecision::Ready)
        .map(|p| p.group.clone())
        .collect();
    if ready.is_empty() {
        return Ok(());
    }
    let described = left
        .describe_groups(&ready)
        .await
        .map_err(|e| fail(left, "DescribeGroups", &e))?;
    let mut commits = left
        .fetch_group_offsets(&ready)
        .await
        .map_err(|e| fail(left, "OffsetFetch", &e))?;
    let mut store = CheckpointStore::new(std::iter::empty::<String>());
    let mut chosen = Vec::new();
    for plan in plans.iter().filter(|p| p.decision == GroupDecision::Ready) {
        let state = described.get(&plan.group).map(|d| d.state);
        let now: Option<GroupOffsets> = commits.remove(&plan.group).and_then(Result::ok);
        let unchanged = now.as_ref().is_some_and(|now| {
            plan.partitions.iter().all(|p| {
                now.get(&p.left)
                    .and_then(|c| c.as_ref())
                    .is_some_and(|c| c.offset == p.committed)
            })
        });
        if !matches!(state, Some(TargetGroupState::Empty)) || !unchanged {
            results.insert(
                plan.group.clone(),
                (
                    false,
                    format!(
                        "not committed: on {} the group gained members or committed again since the plan",
                        left.alias()
                    ),
                ),
            );
            continue;
        }
        store.on_produced(&plan.checkpoints());
        chosen.push(plan.group.clone());
    }
    if chosen.is_empty() {
        return Ok(());
    }
    let refresh = match refresh_groups(ctx, there, &chosen).await {
        Ok(described) => TargetRefresh::Done(described),
        Err(_) => TargetRefresh::Failed,
    };
    let plan = plan_group_sync(&store, &refresh);
    carry_out_group_sync(there, plan, |group, result| {
        let text = match result {
            GroupSyncResult::Committed {
                partitions,
                target_ahead,
            } => (
                true,
                format!(
                    "committed {partitions} partitions on {}{}",
                    there.alias(),
                    if target_ahead > 0 {
                        format!(" ({target_ahead} already at the position)")
                    } else {
                        String::new()
                    }
                ),
            ),
            GroupSyncResult::GroupActive => (
                false,
                format!("refused: the group has active members on {}", there.alias()),
            ),
            GroupSyncResult::CommitFailed(e) => (false, format!("failed: {e}")),
            // The core let no partition there be past its position: at or
            // ahead on every one means at it.
            GroupSyncResult::NotCommitted(GroupSyncDecision::SkippedTargetAhead { .. }) => (
                true,
                format!(
                    "nothing to commit: already at the positions on {}",
                    there.alias()
                ),
            ),
            GroupSyncResult::NotCommitted(decision) => (
                false,
                format!("not committed: {}", output::sync_text(&decision)),
            ),
        };
        results.insert(group.to_owned(), text);
    })
    .await;
    Ok(())
}
