//! `status`: whether consumer groups may move across a flow now, and how the
//! flow itself stands (docs/operations.md, "status").
//!
//! One pass, read-only: it writes nothing, creates no topic and never joins a
//! group. Per flow it describes the membership group on the target, reads
//! the checkpoints topic (the newest record's time, overall and per group),
//! reads the offset-syncs topic into a store and looks at its newest record,
//! then asks the cutover's fact-gathering and decisions
//! (`super::cutover::gather`, `core::cutover`) what a forward cutover of each
//! selected group would do right now, without waiting. The core's
//! `status` module turns each plan into a status and sums the flow up.

mod report;

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_lite::PartitionReader;

use crate::config::{FlowConfig, MirrorConfig};
use crate::core::cutover::{Direction, reading_precision};
use crate::core::format::CheckpointKey;
use crate::core::ownership::owns_by_assignment;
use crate::core::status::{group_status, summarize};
use crate::core::{GroupFilter, InitMode, OffsetSyncStore};
use crate::metrics::{FlowStatusCounts, Metrics, TopicKind};
use crate::shutdown::ShutdownSignal;

use super::api::{DriverError, TranslateFormat, check_cpu};
use super::cutover::{Proofs, gather, select_groups, sides};
use super::flow::archive::SyncHistory;
use super::flow::context::now_ms;
use super::flow::offset_syncs::OffsetSyncs;
use super::flow::read::read_to_end;
use super::flow::{FlowCluster, FlowContext};
use super::kafka::{ClusterClient, fetch_options};

pub use report::{
    DaemonReport, FlowReport, GroupReport, MemberReport, MembershipReport, PartitionReport,
    StatusDoc, SummaryReport, TopicReport,
};

/// What `mm2-checkpoint status` asks for.
#[derive(Clone, Debug)]
pub struct StatusOptions {
    /// One flow, `S->T`; every enabled flow when `None`.
    pub flow: Option<String>,
    /// Which way the groups would move: forward (from S to T, the default)
    /// or back (from T to S, failing back: `status --to S`).
    pub direction: Direction,
    /// Groups by name.
    pub groups: Vec<String>,
    /// Also every group on the source that this filter accepts. With no
    /// group named and no filter, the flow's own `groups` filter is used.
    pub matching: Option<GroupFilter>,
    /// How to print the document on stdout.
    pub format: TranslateFormat,
}

impl Default for StatusOptions {
    /// Every enabled flow, forward, the groups of each flow's filter, as a
    /// table (the daemon's status pass).
    fn default() -> Self {
        StatusOptions {
            flow: None,
            direction: Direction::Forward,
            groups: Vec::new(),
            matching: None,
            format: TranslateFormat::default(),
        }
    }
}

pub(super) async fn status(
    config: MirrorConfig,
    options: StatusOptions,
    shutdown: ShutdownSignal,
) -> Result<StatusDoc, DriverError> {
    check_cpu(&config)?;
    if let Some(name) = &options.flow
        && !config.flows.iter().any(|f| f.name() == *name)
    {
        return Err(DriverError::Translate(format!(
            "flow {name} is not an enabled flow of the configuration"
        )));
    }
    // Reading changes nothing, so a signal stops it at once.
    let doc = tokio::select! {
        reason = shutdown.triggered() => {
            return Err(DriverError::Interrupted(reason.to_string()));
        }
        r = collect(&config.flows, &options) => r?,
    };
    crate::console::out(&match options.format {
        TranslateFormat::Table => doc.table(),
        TranslateFormat::Json => doc.json(),
    });
    Ok(doc)
}

/// The daemon's status pass: every `interval`
/// (`mm2-checkpoint.status.interval.ms`), the status of every
/// enabled flow (its groups as the flow's `groups` filter selects them),
/// published on `metrics`' status board for `GET /status` and its gauges,
/// until `shutdown`. A pass that fails keeps the previous document and logs
/// a WARN.
pub(super) async fn publish(
    config: MirrorConfig,
    interval: Duration,
    metrics: Metrics,
    shutdown: ShutdownSignal,
) {
    let board = metrics.status_board();
    let options = StatusOptions::default();
    loop {
        let pass = tokio::select! {
            _ = shutdown.triggered() => return,
            r = collect(&config.flows, &options) => r,
        };
        match pass {
            Ok(mut doc) => {
                for f in &mut doc.flows {
                    let last = metrics.last_round_ms(&f.flow);
                    f.daemon = Some(DaemonReport {
                        last_round_ms: last,
                        last_round_age_ms: age(last, doc.generated_ms),
                    });
                }
                for f in &doc.flows {
                    let s = &f.summary;
                    board.set_flow(
                        &f.flow,
                        &FlowStatusCounts {
                            exact: s.exact,
                            bounded: s.bounded,
                            waiting: s.waiting,
                            not_ready: s.not_ready,
                            max_reread: s.max_reread,
                            max_checkpoint_age_ms: s.max_checkpoint_age_ms,
                        },
                    );
                }
                board.publish(doc.json());
            }
            Err(e) => {
                tracing::warn!(error = %e, "status pass failed; /status keeps the previous document")
            }
        }
        tokio::select! {
            _ = shutdown.triggered() => return,
            () = tokio::time::sleep(interval) => {}
        }
    }
}

/// The status of `flows` (the one `options.flow` names, or all).
async fn collect(flows: &[FlowConfig], options: &StatusOptions) -> Result<StatusDoc, DriverError> {
    let now = now_ms();
    let mut reports = Vec::new();
    for flow in flows
        .iter()
        .filter(|f| options.flow.as_ref().is_none_or(|n| *n == f.name()))
    {
        reports.push(flow_status(flow.clone(), options, now).await?);
    }
    Ok(StatusDoc {
        generated_ms: now,
        flows: reports,
    })
}

/// The status of one flow at time `now`.
async fn flow_status(
    cfg: FlowConfig,
    options: &StatusOptions,
    now: i64,
) -> Result<FlowReport, DriverError> {
    let metrics = Metrics::new(env!("CARGO_PKG_VERSION"), "n/a");
    let mut ctx = FlowContext::new(cfg, metrics).map_err(|e| DriverError::Setup(e.to_string()))?;
    // Reading only: the sync-history topic is neither created nor restored.
    ctx.sync_history_topic = None;
    let membership = match &ctx.cfg.membership {
        Some(m) => Some(describe_membership(&ctx.target, &m.group).await),
        None => None,
    };
    let direction = options.direction;
    // The checkpoints a move would follow: forward the flow's on T; back the
    // reverse checkpoints on S, in the checkpoints topic of the flow T->S
    // (docs/translation.md, "Reverse checkpoints").
    let (checkpoints, newest_per_group) = match direction {
        Direction::Forward => read_checkpoints(&ctx, now).await?,
        Direction::Back => read_checkpoints(&ctx.reversed(), now).await?,
    };
    let (offset_syncs, syncs) = read_syncs(&ctx, now).await?;

    let (left, there) = sides(&ctx, direction);
    let matching = match (&options.matching, options.groups.is_empty()) {
        (Some(filter), _) => Some(filter.clone()),
        (None, true) => Some(ctx.group_filter.clone()),
        (None, false) => None,
    };
    let groups = select_groups(&ctx, left, &options.groups, matching.as_ref()).await?;
    let plans = gather(
        &ctx,
        direction,
        &groups,
        syncs.store(),
        &mut Proofs::default(),
    )
    .await?;
    let statuses: Vec<_> = plans
        .iter()
        .map(|plan| group_status(plan, newest_per_group.get(&plan.group).copied(), now))
        .collect();
    let summary = summarize(&statuses).into();
    let groups = plans
        .iter()
        .zip(&statuses)
        .map(|(plan, status)| report::group_report(plan, status, left.alias(), there.alias()))
        .collect();
    Ok(FlowReport {
        flow: ctx.name.clone(),
        source: ctx.flow.source.clone(),
        target: ctx.flow.target.clone(),
        direction: match direction {
            Direction::Forward => "forward",
            Direction::Back => "back",
        },
        to: there.alias().to_owned(),
        membership,
        daemon: None,
        checkpoints,
        offset_syncs,
        summary,
        groups,
    })
}

/// The membership group `group` on the target: its state and members. A
/// failed describe is reported in `state`, not as an error: the rest of the
/// status is still worth printing.
async fn describe_membership(target: &ClusterClient, group: &str) -> MembershipReport {
    let unknown = |e: String| MembershipReport {
        group: group.to_owned(),
        state: format!("unknown: {e}"),
        owner: None,
        members: Vec::new(),
    };
    let client = match target.kafka().await {
        Ok(c) => c,
        Err(e) => return unknown(e.to_string()),
    };
    let described = client.describe_groups(&[group.to_owned()]).await;
    match described.into_iter().next() {
        Some((_, Ok(d))) => {
            let members: Vec<MemberReport> = d
                .members
                .into_iter()
                .map(|m| MemberReport {
                    owner: owns_by_assignment(&m.assignment),
                    member_id: m.member_id,
                    instance_id: m.instance_id,
                    client_id: m.client_id,
                    host: m.client_host,
                })
                .collect();
            MembershipReport {
                group: group.to_owned(),
                state: d.state.to_string(),
                owner: members
                    .iter()
                    .find(|m| m.owner)
                    .map(|m| format!("{}@{}", m.client_id, m.host)),
                members,
            }
        }
        Some((_, Err(e))) => unknown(e.to_string()),
        None => unknown("no answer for the group".to_owned()),
    }
}

/// Milliseconds from `at` to `now`, never negative.
fn age(at: Option<i64>, now: i64) -> Option<i64> {
    at.map(|t| now.saturating_sub(t).max(0))
}

/// Reads the checkpoints topic on `ctx`'s target (for the reversed context,
/// the reverse checkpoints on the source): its end, its newest record's
/// time and, per group, the time of the group's newest checkpoint (a
/// tombstone forgets the group's partition's record). A topic that does not
/// exist yet has no checkpoint.
async fn read_checkpoints(
    ctx: &FlowContext,
    now: i64,
) -> Result<(TopicReport, BTreeMap<String, i64>), DriverError> {
    let topic = &ctx.checkpoints_topic;
    let fail = |e: String| DriverError::Translate(format!("reading {topic}: {e}"));
    let exists = ctx
        .target
        .topic_exists(topic)
        .await
        .map_err(|e| fail(e.to_string()))?;
    // The newest time of every checkpoint key, then per group.
    let mut per_key: BTreeMap<CheckpointKey, i64> = BTreeMap::new();
    let mut newest: Option<i64> = None;
    let end = if exists {
        read_to_end(ctx, &ctx.target, topic, TopicKind::Checkpoints, |rec| {
            newest = newest.max(Some(rec.timestamp));
            let Ok(key) = CheckpointKey::decode(rec.key.as_deref()) else {
                return;
            };
            if rec.value.is_some() {
                per_key.insert(key, rec.timestamp);
            } else {
                per_key.remove(&key);
            }
        })
        .await
        .map_err(|e| fail(e.to_string()))?
    } else {
        0
    };
    let mut per_group: BTreeMap<String, i64> = BTreeMap::new();
    for (key, t) in per_key {
        let e = per_group.entry(key.group).or_insert(t);
        *e = (*e).max(t);
    }
    Ok((
        TopicReport {
            topic: topic.clone(),
            end_offset: end,
            newest_ms: newest,
            newest_age_ms: age(newest, now),
        },
        per_group,
    ))
}

/// Reads the offset-syncs topic into a store (as `cutover` does) and looks at
/// its newest record. A topic that does not exist gives an empty store whose
/// initial read is over: every partition then has no sync.
async fn read_syncs(
    ctx: &FlowContext,
    now: i64,
) -> Result<(TopicReport, OffsetSyncs), DriverError> {
    let topic = &ctx.syncs_topic;
    let cluster = &ctx.syncs_cluster;
    let fail = |e: String| {
        DriverError::Translate(format!("cluster {}: reading {topic}: {e}", cluster.alias()))
    };
    let mode = InitMode::LoadAllHistory;
    let precision = reading_precision(ctx.cfg.translation_max_syncs);
    let mut store = OffsetSyncStore::with_precision(mode, precision);
    let exists = cluster
        .topic_exists(topic)
        .await
        .map_err(|e| fail(e.to_string()))?;
    if !exists {
        store.finish_initial_read();
        return Ok((
            TopicReport {
                topic: topic.clone(),
                end_offset: 0,
                newest_ms: None,
                newest_age_ms: None,
            },
            OffsetSyncs::new(store, false).quiet_fallbacks(),
        ));
    }
    let mut syncs = OffsetSyncs::new(store, false).quiet_fallbacks();
    syncs
        .load(ctx, &mut SyncHistory::default(), mode)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let end = syncs.position();
    let mut newest = None;
    if end > 0 {
        let mut reader = PartitionReader::new(
            topic.as_str(),
            0,
            end - 1,
            end,
            fetch_options(Duration::ZERO),
        );
        let (records, _) = cluster
            .follow(&mut reader)
            .await
            .map_err(|e| fail(e.to_string()))?;
        newest = records.iter().map(|r| r.timestamp).max();
    }
    Ok((
        TopicReport {
            topic: topic.clone(),
            end_offset: end,
            newest_ms: newest,
            newest_age_ms: age(newest, now),
        },
        syncs,
    ))
}
