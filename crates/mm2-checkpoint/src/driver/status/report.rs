//! The status document: one schema for the `status` command's JSON and the
//! daemon's `GET /status` (docs/operations.md, "status"), and the table the
//! command prints.

use std::fmt::Write as _;

use serde::Serialize;

use crate::core::cutover::{GroupDecision, GroupPlan};
use crate::core::status::{FlowSummary, GroupStatus, Readiness};

use super::super::cutover::output::{refusal_text, status as partition_status, wait_text};

/// The whole document.
#[derive(Clone, Debug, Serialize)]
pub struct StatusDoc {
    /// When it was made, in milliseconds since the Unix epoch.
    pub generated_ms: i64,
    /// One entry per flow.
    pub flows: Vec<FlowReport>,
}

/// One flow.
#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    /// `S->T`.
    pub flow: String,
    /// The flow's source cluster alias.
    pub source: String,
    /// The flow's target cluster alias.
    pub target: String,
    /// Which way the groups would move: `forward` (from the source to the
    /// target) or `back` (from the target to the source, `status --to S`).
    pub direction: &'static str,
    /// The cluster the groups would go to.
    pub to: String,
    /// The membership group and its members; `None` (JSON `null`) when the
    /// flow runs without membership.
    pub membership: Option<MembershipReport>,
    /// What the daemon serving `/status` knows of the flow from running it;
    /// `None` (JSON `null`) from the `status` command.
    pub daemon: Option<DaemonReport>,
    /// The checkpoints topic a move follows: forward the flow's on the
    /// target, back the reverse checkpoints on the source.
    pub checkpoints: TopicReport,
    /// The offset-syncs topic.
    pub offset_syncs: TopicReport,
    /// The groups summed up.
    pub summary: SummaryReport,
    /// One entry per selected group.
    pub groups: Vec<GroupReport>,
}

/// What a daemon knows of a flow it runs.
#[derive(Clone, Debug, Serialize)]
pub struct DaemonReport {
    /// When this instance's last emission round of the flow succeeded, in
    /// milliseconds since the Unix epoch; `None` before the first (or while
    /// this instance is a standby under membership).
    pub last_round_ms: Option<i64>,
    /// Milliseconds from then to the document's `generated_ms`.
    pub last_round_age_ms: Option<i64>,
}

/// The flow's membership group on the target cluster.
#[derive(Clone, Debug, Serialize)]
pub struct MembershipReport {
    /// The group id.
    pub group: String,
    /// Its state as the coordinator reports it (`Stable`, `Empty`, ...), or
    /// the error that kept it from being described.
    pub state: String,
    /// The owner's `client_id@host` (the member whose assignment gives it
    /// the flow), `None` when no member holds it (joining, rebalancing, or
    /// no member at all).
    pub owner: Option<String>,
    /// Its members: the instances running the flow.
    pub members: Vec<MemberReport>,
}

/// One instance in the membership group.
#[derive(Clone, Debug, Serialize)]
pub struct MemberReport {
    /// The coordinator's member id.
    pub member_id: String,
    /// The static `group.instance.id`, if set.
    pub instance_id: Option<String>,
    /// The instance's client id.
    pub client_id: String,
    /// The host it connected from.
    pub host: String,
    /// Whether its assignment gives it the flow.
    pub owner: bool,
}

/// A state topic (checkpoints or offset syncs): its end offset and the time
/// of its newest record.
#[derive(Clone, Debug, Serialize)]
pub struct TopicReport {
    /// The topic name.
    pub topic: String,
    /// The end offset of partition 0 (the next offset to be written).
    pub end_offset: i64,
    /// The record time of the newest record, if any.
    pub newest_ms: Option<i64>,
    /// Milliseconds from that time to `generated_ms` (never negative).
    pub newest_age_ms: Option<i64>,
}

/// [`FlowSummary`] as printed.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SummaryReport {
    /// Groups ready, every partition exact.
    pub exact: usize,
    /// Groups ready with a re-read bound somewhere.
    pub bounded: usize,
    /// Groups waiting for the mirror or the syncs.
    pub waiting: usize,
    /// Groups that cannot move now.
    pub not_ready: usize,
    /// The largest re-read bound of the ready groups.
    pub max_reread: i64,
    /// The oldest of the groups' newest checkpoints, in milliseconds.
    pub max_checkpoint_age_ms: Option<i64>,
}

impl From<FlowSummary> for SummaryReport {
    fn from(s: FlowSummary) -> Self {
        SummaryReport {
            exact: s.exact,
            bounded: s.bounded,
            waiting: s.waiting,
            not_ready: s.not_ready,
            max_reread: s.max_reread,
            max_checkpoint_age_ms: s.max_checkpoint_age_ms,
        }
    }
}

/// One group.
#[derive(Clone, Debug, Serialize)]
pub struct GroupReport {
    /// The group.
    pub group: String,
    /// Whether it may be cut over from the source to the target now.
    pub ready: bool,
    /// `exact`, `bounded`, `waiting` or `not_ready`.
    pub status: &'static str,
    /// Why it is not ready, in words.
    pub reason: Option<String>,
    /// The largest re-read bound of its decided partitions.
    pub worst_reread: Option<i64>,
    /// Milliseconds since its newest checkpoint record.
    pub checkpoint_age_ms: Option<i64>,
    /// Its partitions with a commit on the source.
    pub partitions: Vec<PartitionReport>,
}

/// One partition of a group.
#[derive(Clone, Debug, Serialize)]
pub struct PartitionReport {
    /// The topic on the source.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The group's committed offset on the source.
    pub committed: i64,
    /// The remote topic on the target.
    pub remote_topic: String,
    /// The position a cutover would commit on the target, when decided.
    pub position: Option<i64>,
    /// `exact`, `bounded`, `waiting` or `refused`.
    pub status: &'static str,
    /// How many records may be read again (0 when exact).
    pub reread: Option<i64>,
    /// Why it waits or is refused, in words.
    pub reason: Option<String>,
}

/// The report of one group: its plan (the cutover's decisions) and status,
/// the group leaving cluster `from` for cluster `to`.
pub fn group_report(plan: &GroupPlan, status: &GroupStatus, from: &str, to: &str) -> GroupReport {
    let reason = match &status.readiness {
        Readiness::Exact | Readiness::Bounded { .. } => None,
        Readiness::Waiting { partitions, first } => Some(format!(
            "{partitions} partition(s) waiting: {}",
            wait_text(*first)
        )),
        Readiness::NotReady(why) => Some(match plan.decision {
            GroupDecision::Refused(Some(_)) => refusal_text(why, from, to),
            _ => format!("a partition is refused: {}", refusal_text(why, from, to)),
        }),
    };
    GroupReport {
        group: plan.group.clone(),
        ready: status.readiness.ready(),
        status: status.readiness.name(),
        reason,
        worst_reread: status.worst_reread,
        checkpoint_age_ms: status.checkpoint_age_ms,
        partitions: plan
            .partitions
            .iter()
            .map(|p| {
                let (s, reason) = partition_status(&p.decision, from, to);
                PartitionReport {
                    topic: p.left.topic.clone(),
                    partition: p.left.partition,
                    committed: p.committed,
                    remote_topic: p.there.topic.clone(),
                    position: p.decision.position(),
                    status: s,
                    reread: p.decision.reread(),
                    reason,
                }
            })
            .collect(),
    }
}

impl StatusDoc {
    /// The document as JSON, pretty-printed.
    pub fn json(&self) -> String {
        // Only strings, numbers and options: serialising cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The document as text: per flow a header, then one line per group.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let age =
            |ms: Option<i64>| ms.map_or_else(|| "-".to_owned(), |ms| format!("{}s", ms / 1000));
        for f in &self.flows {
            if f.direction == "forward" {
                let _ = writeln!(out, "flow {}", f.flow);
            } else {
                let _ = writeln!(out, "flow {} ({}: groups to {})", f.flow, f.direction, f.to);
            }
            match &f.membership {
                None => {
                    let _ = writeln!(out, "  owner: no membership");
                }
                Some(m) => {
                    let members: Vec<String> = m
                        .members
                        .iter()
                        .map(|x| format!("{}@{}", x.client_id, x.host))
                        .collect();
                    let _ = writeln!(
                        out,
                        "  owner: {} (membership group {}, {}), members: {}",
                        m.owner.as_deref().unwrap_or("none"),
                        m.group,
                        m.state,
                        if members.is_empty() {
                            "none".to_owned()
                        } else {
                            members.join(", ")
                        }
                    );
                }
            }
            for (name, t) in [
                ("checkpoints", &f.checkpoints),
                ("offset syncs", &f.offset_syncs),
            ] {
                let _ = writeln!(
                    out,
                    "  {name}: {} end {}, newest record {} old",
                    t.topic,
                    t.end_offset,
                    age(t.newest_age_ms)
                );
            }
            let s = &f.summary;
            let _ = writeln!(
                out,
                "  groups: {} exact, {} bounded (max re-read {}), {} waiting, {} not ready",
                s.exact, s.bounded, s.max_reread, s.waiting, s.not_ready
            );
            if f.groups.is_empty() {
                continue;
            }
            let width = f
                .groups
                .iter()
                .map(|g| g.group.len())
                .max()
                .unwrap_or(5)
                .max(5);
            let _ = writeln!(
                out,
                "  {:<width$}  {:<9}  {:>6}  {:>10}  REASON",
                "GROUP", "STATUS", "REREAD", "CHECKPOINT"
            );
            for g in &f.groups {
                let _ = writeln!(
                    out,
                    "  {:<width$}  {:<9}  {:>6}  {:>10}  {}",
                    g.group,
                    g.status,
                    g.worst_reread
                        .map_or_else(|| "-".to_owned(), |r| r.to_string()),
                    age(g.checkpoint_age_ms),
                    g.reason.as_deref().unwrap_or("")
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::TopicPartition;
    use crate::core::cutover::{PartitionDecision, PartitionPlan, Refusal};
    use crate::core::group_sync::TargetGroupState;
    use crate::core::status::group_status;
    use crate::core::sync_store::OffsetSync;

    fn doc() -> StatusDoc {
        let ready = GroupPlan {
            group: "billing".into(),
            partitions: vec![PartitionPlan {
                left: TopicPartition::new("orders", 0),
                there: TopicPartition::new("S.orders", 0),
                committed: 50,
                metadata: String::new(),
                decision: PartitionDecision::Bounded {
                    position: 48,
                    through: OffsetSync::new(40, 47),
                    reread: 3,
                },
            }],
            decision: GroupDecision::Ready,
        };
        let busy = GroupPlan {
            group: "busy".into(),
            partitions: Vec::new(),
            decision: GroupDecision::Refused(Some(Refusal::ActiveOnLeft(TargetGroupState::Stable))),
        };
        let groups = [(&ready, Some(1_000)), (&busy, None)]
            .into_iter()
            .map(|(plan, at)| group_report(plan, &group_status(plan, at, 4_000), "S", "T"))
            .collect();
        let topic = |name: &str| TopicReport {
            topic: name.into(),
            end_offset: 7,
            newest_ms: Some(2_000),
            newest_age_ms: Some(2_000),
        };
        StatusDoc {
            generated_ms: 4_000,
            flows: vec![FlowReport {
                flow: "S->T".into(),
                source: "S".into(),
                target: "T".into(),
                direction: "forward",
                to: "T".into(),
                membership: None,
                daemon: None,
                checkpoints: topic("S.checkpoints.internal"),
                offset_syncs: topic("mm2-offset-syncs.T.internal"),
                summary: SummaryReport {
                    exact: 0,
                    bounded: 1,
                    waiting: 0,
                    not_ready: 1,
                    max_reread: 3,
                    max_checkpoint_age_ms: Some(3_000),
                },
                groups,
            }],
        }
    }

    #[test]
    fn json_gives_each_group_its_readiness_bound_age_and_partitions() {
        let v: serde_json::Value = serde_json::from_str(&doc().json()).expect("JSON");
        let g = &v["flows"][0]["groups"];
        assert_eq!(g[0]["group"], "billing");
        assert_eq!(g[0]["ready"], true);
        assert_eq!(g[0]["status"], "bounded");
        assert_eq!(g[0]["worst_reread"], 3);
        assert_eq!(g[0]["checkpoint_age_ms"], 3_000);
        let p = &g[0]["partitions"][0];
        assert_eq!(p["committed"], 50);
        assert_eq!(p["position"], 48);
        assert_eq!(p["remote_topic"], "S.orders");
        assert_eq!(p["reread"], 3);
        assert_eq!(g[1]["ready"], false);
        assert_eq!(g[1]["status"], "not_ready");
        assert_eq!(
            g[1]["reason"],
            "the group has active members on S (Stable): stop its consumers first"
        );
        assert!(v["flows"][0]["membership"].is_null());
        assert!(v["flows"][0]["daemon"].is_null());
    }

    #[test]
    fn a_status_back_names_its_direction_in_the_json_and_the_table() {
        let mut back = doc();
        back.flows[0].direction = "back";
        back.flows[0].to = "S".into();
        let v: serde_json::Value = serde_json::from_str(&back.json()).expect("JSON");
        assert_eq!(v["flows"][0]["direction"], "back");
        assert_eq!(v["flows"][0]["to"], "S");
        let t = back.table();
        assert!(t.starts_with("flow S->T (back: groups to S)\n"), "{t}");
        let v: serde_json::Value = serde_json::from_str(&doc().json()).expect("JSON");
        assert_eq!(v["flows"][0]["direction"], "forward");
        assert!(doc().table().starts_with("flow S->T\n"));
    }

    #[test]
    fn the_table_has_the_owner_the_topics_the_summary_and_a_row_per_group() {
        let t = doc().table();
        assert!(t.contains("flow S->T\n  owner: no membership\n"), "{t}");
        assert!(
            t.contains("  offset syncs: mm2-offset-syncs.T.internal end 7, newest record 2s old\n"),
            "{t}"
        );
        assert!(
            t.contains("  groups: 0 exact, 1 bounded (max re-read 3), 0 waiting, 1 not ready\n"),
            "{t}"
        );
        let rows: Vec<Vec<&str>> = t
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("GROUP"))
            .skip(1)
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[0][..4], ["billing", "bounded", "3", "3s"], "{t}");
        assert_eq!(rows[1][..4], ["busy", "not_ready", "-", "-"], "{t}");
    }
}
