//! `translate`: what `RemoteClusterUtils.translateOffsets` returns for a few
//! groups, read from the checkpoints topic on the target; `--apply` commits it
//! to the target groups through the core's group-sync decision.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::config::MirrorConfig;
use crate::core::{
    CheckpointStore, GroupFilter, GroupSyncDecision, TargetRefresh, plan_group_sync,
};
use crate::metrics::{Metrics, TopicKind};
use crate::shutdown::ShutdownSignal;

use super::api::{DriverError, TranslateFormat, TranslateOptions, TranslateReport, check_cpu};
use super::columns::write_columns;
use super::flow::group_sync::refresh_target;
use super::flow::read::read_to_end;
use super::flow::{FlowContext, GroupSyncResult, carry_out_group_sync};

/// One translated partition.
struct Row<'a> {
    group: &'a str,
    topic: &'a str,
    partition: i32,
    upstream: i64,
    downstream: i64,
}

pub(super) async fn translate(
    config: MirrorConfig,
    options: TranslateOptions,
    shutdown: ShutdownSignal,
) -> Result<TranslateReport, DriverError> {
    check_cpu(&config)?;
    let Some(flow) = config.flows.into_iter().find(|f| f.name() == options.flow) else {
        return Err(DriverError::Translate(format!(
            "flow {} is not an enabled flow of the configuration",
            options.flow
        )));
    };
    for cluster in [&flow.source, &flow.target] {
        if cluster.tls.as_ref().is_some_and(|t| !t.verify_hostname) {
            tracing::warn!(
                cluster = %cluster.alias,
                "TLS host name verification is disabled for cluster `{}` \
                 (ssl.endpoint.identification.algorithm is empty)",
                cluster.alias
            );
        }
    }
    let metrics = Metrics::new(env!("CARGO_PKG_VERSION"), "n/a");
    let ctx = FlowContext::new(flow, metrics).map_err(|e| DriverError::Setup(e.to_string()))?;
    // Selecting by filter needs every group's checkpoints first.
    let mut store = match &options.matching {
        Some(_) => CheckpointStore::for_filter(every_group()?),
        None => CheckpointStore::new(options.groups.iter().cloned()),
    };
    let read = read_to_end(
        &ctx,
        &ctx.target,
        &ctx.checkpoints_topic,
        TopicKind::Checkpoints,
        |rec| {
            store.restore_record(rec.key.as_deref(), rec.value.as_deref());
        },
    );
    // Reading changes nothing, so a signal stops it at once (the binary gives
    // the commits of --apply a grace period instead).
    tokio::select! {
        reason = shutdown.triggered() => {
            return Err(DriverError::Interrupted(reason.to_string()));
        }
        r = read => {
            r.map_err(|e| {
                DriverError::Translate(format!("reading {}: {e}", ctx.checkpoints_topic))
            })?;
        }
    }
    // Named groups in the order given (once each), then the matching ones, sorted.
    let mut selected: BTreeSet<String> = BTreeSet::new();
    let mut groups: Vec<String> = Vec::new();
    for g in &options.groups {
        if selected.insert(g.clone()) {
            groups.push(g.clone());
        }
    }
    if let Some(filter) = &options.matching {
        let matched: Vec<String> = store
            .groups()
            .map(|(g, _)| g)
            .filter(|g| filter.should_replicate_group(g) && !selected.contains(*g))
            .map(str::to_owned)
            .collect();
        selected.extend(matched.iter().cloned());
        groups.extend(matched);
        // From here on (and for --apply) the store holds the selected groups only.
        let picked: Vec<_> = store
            .checkpoints()
            .filter(|cp| selected.contains(&cp.key.group))
            .collect();
        store = CheckpointStore::new(groups.iter().cloned());
        store.on_produced(&picked);
    }
    if groups.is_empty() {
        tracing::warn!(topic = %ctx.checkpoints_topic, "no group selected: no checkpointed group matches");
    }
    let mut rows = Vec::new();
    for group in &groups {
        if let Some(cps) = store.group(group) {
            for (topic, partition, cp) in cps.iter() {
                rows.push(Row {
                    group,
                    topic,
                    partition,
                    upstream: cp.upstream_offset,
                    downstream: cp.downstream_offset,
                });
            }
        }
    }
    let mut report = TranslateReport::default();
    let applied = if options.apply {
        let Ok(described) = refresh_target(&ctx, &groups).await else {
            return Err(DriverError::Translate(format!(
                "cluster {}: the target groups could not be described; nothing committed",
                ctx.target.alias()
            )));
        };
        let refresh = TargetRefresh::Done(described);
        let plan = plan_group_sync(&store, &refresh);
        let mut results = BTreeMap::new();
        carry_out_group_sync(&ctx.target, plan, |group, result| {
            // (what happened, whether the group now has its checkpoints)
            let (text, applied) = match result {
                GroupSyncResult::Committed {
                    partitions,
                    target_ahead,
                } if target_ahead > 0 => (
                    format!(
                        "committed {partitions} partitions ({target_ahead} already at or ahead, left alone)"
                    ),
                    true,
                ),
                GroupSyncResult::Committed { partitions, .. } => {
                    (format!("committed {partitions} partitions"), true)
                }
                GroupSyncResult::GroupActive => {
                    ("refused: the group has active members".to_string(), false)
                }
                GroupSyncResult::CommitFailed(e) => (format!("failed: {e}"), false),
                GroupSyncResult::NotCommitted(decision) => match decision {
                    GroupSyncDecision::SkippedActive(state) => (
                        format!("refused: the group is active on the target ({state:?})"),
                        false,
                    ),
                    GroupSyncDecision::SkippedTargetAhead { partitions } => (
                        format!(
                            "not committed: the target group is at or ahead on all {partitions} partitions (never rewound)"
                        ),
                        false,
                    ),
                    GroupSyncDecision::SkippedUnknownState => (
                        "not committed: the target group's state is unknown".to_string(),
                        false,
                    ),
                    GroupSyncDecision::NothingToDo | GroupSyncDecision::Commit { .. } => {
                        ("nothing to commit: no checkpoint".to_string(), false)
                    }
                },
            };
            if !applied {
                report.not_applied.push((group.to_owned(), text.clone()));
            }
            results.insert(group.to_owned(), text);
        })
        .await;
        Some(results)
    } else {
        None
    };
    let output = Output {
        flow: &ctx.name,
        groups: &groups,
        rows: &rows,
        applied: applied.as_ref(),
    };
    let out = match options.format {
        TranslateFormat::Table => output.table(),
        TranslateFormat::Json => output.json(),
    };
    crate::console::out(&out);
    Ok(report)
}

/// A filter accepting every group name.
fn every_group() -> Result<GroupFilter, DriverError> {
    GroupFilter::new(Some(".*"), Some("")).map_err(|e| DriverError::Setup(e.to_string()))
}

/// What `translate` prints: the requested groups, their translated
/// partitions and, with `--apply`, what happened per group.
struct Output<'a> {
    flow: &'a str,
    groups: &'a [String],
    rows: &'a [Row<'a>],
    applied: Option<&'a BTreeMap<String, String>>,
}

impl Output<'_> {
    fn table(&self) -> String {
        let (flow, groups, rows, applied) = (self.flow, self.groups, self.rows, self.applied);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# flow {flow}: offsets on the target (from the checkpoints topic)"
        );
        let headers = [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "SOURCE OFFSET",
            "TARGET OFFSET",
        ];
        let cells: Vec<[String; 5]> = rows
            .iter()
            .map(|r| {
                [
                    r.group.to_string(),
                    r.topic.to_string(),
                    r.partition.to_string(),
                    r.upstream.to_string(),
                    r.downstream.to_string(),
                ]
            })
            .collect();
        write_columns(&mut out, headers, &cells, |i| i >= 2);
        for g in groups {
            if !rows.iter().any(|r| r.group == g) {
                let _ = writeln!(out, "# {g}: no checkpoint");
            }
        }
        if let Some(applied) = applied {
            let _ = writeln!(out, "# --apply:");
            for (g, text) in applied {
                let _ = writeln!(out, "{g}: {text}");
            }
        }
        out
    }

    fn json(&self) -> String {
        let (rows, applied) = (self.rows, self.applied);
        let doc = JsonDoc {
            flow: self.flow,
            groups: self
                .groups
                .iter()
                .map(|g| JsonGroup {
                    group: g,
                    offsets: rows
                        .iter()
                        .filter(|r| r.group == g)
                        .map(|r| JsonOffset {
                            topic: r.topic,
                            partition: r.partition,
                            source_offset: r.upstream,
                            target_offset: r.downstream,
                        })
                        .collect(),
                    apply: applied.and_then(|a| a.get(g)).map(String::as_str),
                })
                .collect(),
        };
        let mut out = serde_json::to_string(&doc).unwrap_or_else(|_| "{}".to_string());
        out.push('\n');
        out
    }
}

/// `translate --format json`: the flow and, for every requested group, its
/// translated offsets and (with `--apply`) what applying them did. Fields
/// are written in declaration order.
#[derive(Serialize)]
struct JsonDoc<'a> {
    flow: &'a str,
    groups: Vec<JsonGroup<'a>>,
}

#[derive(Serialize)]
struct JsonGroup<'a> {
    group: &'a str,
    offsets: Vec<JsonOffset<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    apply: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonOffset<'a> {
    topic: &'a str,
    partition: i32,
    source_offset: i64,
    target_offset: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Row<'static>> {
        vec![Row {
            group: "billing",
            topic: "A.orders",
            partition: 3,
            upstream: 90,
            downstream: 1097,
        }]
    }

    #[test]
    fn json_lists_every_requested_group_with_escaped_names() {
        let groups = vec!["billing".to_string(), "we\"ird\\g".to_string()];
        let applied =
            BTreeMap::from([("billing".to_string(), "committed 1 partitions".to_string())]);
        let rows = rows();
        let out = Output {
            flow: "A->B",
            groups: &groups,
            rows: &rows,
            applied: Some(&applied),
        }
        .json();
        assert_eq!(
            out,
            "{\"flow\":\"A->B\",\"groups\":[{\"group\":\"billing\",\"offsets\":[{\"topic\":\"A.orders\",\
             \"partition\":3,\"source_offset\":90,\"target_offset\":1097}],\"apply\":\"committed 1 partitions\"},\
             {\"group\":\"we\\\"ird\\\\g\",\"offsets\":[]}]}\n"
        );
    }

    #[test]
    fn table_aligns_columns_and_names_groups_without_checkpoints() {
        let groups = vec!["billing".to_string(), "other".to_string()];
        let rows = rows();
        let out = Output {
            flow: "A->B",
            groups: &groups,
            rows: &rows,
            applied: None,
        }
        .table();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[1],
            "GROUP    TOPIC     PARTITION  SOURCE OFFSET  TARGET OFFSET"
        );
        assert_eq!(
            lines[2],
            "billing  A.orders          3             90           1097"
        );
        assert_eq!(lines[3], "# other: no checkpoint");
    }
}
