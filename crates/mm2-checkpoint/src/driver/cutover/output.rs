//! What `cutover` prints: a table or a JSON document, per group and
//! partition, with the reasons in words.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::core::GroupSyncDecision;
use crate::core::cutover::{
    Direction, GroupDecision, GroupPlan, Outcome, PartitionDecision, Refusal, WaitReason,
};

use crate::driver::columns::write_columns;

/// The printed result of a cutover.
pub(super) struct Output<'a> {
    pub(super) flow: &'a str,
    pub(super) direction: Direction,
    /// The cluster the groups leave.
    pub(super) from: &'a str,
    /// The cluster the groups go to.
    pub(super) to: &'a str,
    pub(super) execute: bool,
    pub(super) outcome: Outcome,
    pub(super) plans: &'a [GroupPlan],
    /// Per group: whether it was (or would be) committed, and the words.
    pub(super) results: &'a BTreeMap<String, (bool, String)>,
}

/// Why a partition waits, in words.
pub(in crate::driver) fn wait_text(why: WaitReason) -> String {
    match why {
        WaitReason::NotReady => "the offset-syncs topic is not read to its end".into(),
        WaitReason::NoSync => "no offset sync of the partition yet".into(),
        WaitReason::NotCovered { newest: Some(s) } => format!(
            "no offset sync at or past the commit yet (newest {}:{})",
            s.upstream, s.downstream
        ),
        WaitReason::NotCovered { newest: None } => {
            "no offset sync at or past the commit yet".into()
        }
    }
}

/// Why a partition or group is refused, in words.
pub(in crate::driver) fn refusal_text(why: &Refusal, from: &str, to: &str) -> String {
    match why {
        Refusal::TooOld => "every offset sync is past the commit (too old to translate)".into(),
        Refusal::PastEnd { position, end } => format!(
            "the position {position} is past the end {end} of the partition on {to} (recreated?)"
        ),
        Refusal::MissingThere => format!("the partition does not exist on {to}"),
        Refusal::AheadThere {
            position,
            committed,
        } => format!(
            "the group on {to} is at {committed}, past the position {position} (never lowered)"
        ),
        Refusal::ActiveOnLeft(state) => {
            format!("the group has active members on {from} ({state:?}): stop its consumers first")
        }
        Refusal::ActiveThere(state) => {
            format!("the group has active members on {to} ({state:?})")
        }
        Refusal::UnknownState => "the group's state could not be described".into(),
        Refusal::NothingCommitted => {
            format!("the group has no committed offset on {from} for the flow's topics")
        }
        Refusal::TimedOut(why) => format!("timed out: {}", wait_text(*why)),
    }
}

/// What the group sync decided when it did not commit, in words.
pub(super) fn sync_text(decision: &GroupSyncDecision) -> String {
    match decision {
        GroupSyncDecision::SkippedActive(state) => format!("the group is active ({state:?})"),
        GroupSyncDecision::SkippedTargetAhead { .. } => "the group is at or ahead".into(),
        GroupSyncDecision::SkippedUnknownState => "the group's state is unknown".into(),
        GroupSyncDecision::NothingToDo | GroupSyncDecision::Commit { .. } => {
            "nothing to commit".into()
        }
    }
}

/// The result of a group that was not carried out: a dry run, or a group
/// not ready.
pub(super) fn commit_text(plan: &GroupPlan, execute: bool) -> String {
    match &plan.decision {
        GroupDecision::Ready if execute => "not committed".into(),
        GroupDecision::Ready => "dry run: would be committed (run again with --execute)".into(),
        GroupDecision::Wait => "not committed: still waiting".into(),
        GroupDecision::Refused(_) => "refused: not committed".into(),
    }
}

/// One partition's cells: status and reason.
pub(in crate::driver) fn status(
    d: &PartitionDecision,
    from: &str,
    to: &str,
) -> (&'static str, Option<String>) {
    match d {
        PartitionDecision::Exact { .. } => ("exact", None),
        PartitionDecision::Bounded { .. } => ("bounded", None),
        PartitionDecision::Wait(why) => ("waiting", Some(wait_text(*why))),
        PartitionDecision::Refused(why) => ("refused", Some(refusal_text(why, from, to))),
    }
}

impl Output<'_> {
    fn outcome_text(&self) -> &'static str {
        match self.outcome {
            Outcome::AllExact => "all exact",
            Outcome::Bounded => "with re-read bounds",
            Outcome::Refused => "refused or incomplete",
        }
    }

    fn direction_text(&self) -> &'static str {
        match self.direction {
            Direction::Forward => "forward",
            Direction::Back => "back",
        }
    }

    /// The group-level refusal, if the group as a whole was refused.
    fn group_reason(&self, plan: &GroupPlan) -> Option<String> {
        match &plan.decision {
            GroupDecision::Refused(Some(why)) => Some(refusal_text(why, self.from, self.to)),
            _ => None,
        }
    }

    pub(super) fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# cutover {} on flow {}: groups from {} to {} ({})",
            self.direction_text(),
            self.flow,
            self.from,
            self.to,
            if self.execute { "execute" } else { "dry run" }
        );
        let headers = [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "COMMITTED",
            "TO TOPIC",
            "TRANSLATED",
            "RE-READ",
            "STATUS",
        ];
        let mut cells: Vec<[String; 8]> = Vec::new();
        for plan in self.plans {
            for p in &plan.partitions {
                let (st, why) = status(&p.decision, self.from, self.to);
                cells.push([
                    plan.group.clone(),
                    p.left.topic.clone(),
                    p.left.partition.to_string(),
                    p.committed.to_string(),
                    p.there.topic.clone(),
                    p.decision
                        .position()
                        .map_or_else(|| "-".into(), |o| o.to_string()),
                    p.decision
                        .reread()
                        .map_or_else(|| "-".into(), |o| o.to_string()),
                    why.map_or_else(|| st.to_string(), |w| format!("{st}: {w}")),
                ]);
            }
        }
        write_columns(&mut out, headers, &cells, |i| matches!(i, 2 | 3 | 5 | 6));
        let _ = writeln!(out, "# groups:");
        for plan in self.plans {
            let result = self.results.get(&plan.group).map_or("", |r| r.1.as_str());
            match self.group_reason(plan) {
                Some(why) => {
                    let _ = writeln!(out, "{}: {result}: {why}", plan.group);
                }
                None => {
                    let _ = writeln!(out, "{}: {result}", plan.group);
                }
            }
        }
        let _ = writeln!(out, "# outcome: {}", self.outcome_text());
        out
    }

    pub(super) fn json(&self) -> String {
        let groups = self
            .plans
            .iter()
            .map(|plan| {
                let (committed, result) = self
                    .results
                    .get(&plan.group)
                    .map_or((false, ""), |(c, t)| (*c, t.as_str()));
                JsonGroup {
                    group: &plan.group,
                    decision: match plan.decision {
                        GroupDecision::Ready => "ready",
                        GroupDecision::Wait => "waiting",
                        GroupDecision::Refused(_) => "refused",
                    },
                    reason: self.group_reason(plan),
                    committed,
                    result,
                    partitions: plan
                        .partitions
                        .iter()
                        .map(|p| {
                            let (st, why) = status(&p.decision, self.from, self.to);
                            JsonPartition {
                                topic: &p.left.topic,
                                partition: p.left.partition,
                                committed_offset: p.committed,
                                to_topic: &p.there.topic,
                                translated_offset: p.decision.position(),
                                reread_bound: p.decision.reread(),
                                sync: p.decision.through().map(|s| JsonSync {
                                    source_offset: s.upstream,
                                    target_offset: s.downstream,
                                }),
                                status: st,
                                reason: why,
                            }
                        })
                        .collect(),
                }
            })
            .collect();
        let doc = JsonDoc {
            flow: self.flow,
            direction: self.direction_text(),
            from: self.from,
            to: self.to,
            execute: self.execute,
            outcome: match self.outcome {
                Outcome::AllExact => "all_exact",
                Outcome::Bounded => "bounded",
                Outcome::Refused => "refused",
            },
            groups,
        };
        let mut out = serde_json::to_string(&doc).unwrap_or_else(|_| "{}".to_string());
        out.push('\n');
        out
    }
}

/// `cutover --format json`. Fields are written in declaration order.
#[derive(Serialize)]
struct JsonDoc<'a> {
    flow: &'a str,
    direction: &'a str,
    from: &'a str,
    to: &'a str,
    execute: bool,
    outcome: &'a str,
    groups: Vec<JsonGroup<'a>>,
}

#[derive(Serialize)]
struct JsonGroup<'a> {
    group: &'a str,
    decision: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    committed: bool,
    result: &'a str,
    partitions: Vec<JsonPartition<'a>>,
}

#[derive(Serialize)]
struct JsonPartition<'a> {
    topic: &'a str,
    partition: i32,
    committed_offset: i64,
    to_topic: &'a str,
    translated_offset: Option<i64>,
    reread_bound: Option<i64>,
    /// The offset sync translated through.
    #[serde(skip_serializing_if = "Option::is_none")]
    sync: Option<JsonSync>,
    status: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// An offset sync: the record at `source_offset` on S was copied to
/// `target_offset` on T.
#[derive(Serialize)]
struct JsonSync {
    source_offset: i64,
    target_offset: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::cutover::{PartitionPlan, Side, decide_group};
    use crate::core::{OffsetSync, TopicPartition};

    fn plans() -> Vec<GroupPlan> {
        let part = |decision| PartitionPlan {
            left: TopicPartition::new("orders", 0),
            there: TopicPartition::new("S.orders", 0),
            committed: 15,
            metadata: String::new(),
            decision,
        };
        let idle = Side::Idle(BTreeMap::new());
        vec![
            decide_group(
                "billing",
                &idle,
                &Side::Absent,
                vec![part(PartitionDecision::Bounded {
                    position: 111,
                    through: OffsetSync::new(10, 110),
                    reread: 9,
                })],
            ),
            decide_group(
                "live",
                &Side::Active(crate::core::TargetGroupState::Stable),
                &Side::Absent,
                vec![part(PartitionDecision::Wait(WaitReason::NoSync))],
            ),
        ]
    }

    #[test]
    fn table_lists_partitions_with_bounds_and_groups_with_reasons() {
        let plans = plans();
        let results = BTreeMap::from([
            (
                "billing".to_string(),
                (false, "dry run: would be committed".to_string()),
            ),
            (
                "live".to_string(),
                (false, "refused: not committed".to_string()),
            ),
        ]);
        let out = Output {
            flow: "S->T",
            direction: Direction::Forward,
            from: "S",
            to: "T",
            execute: false,
            outcome: Outcome::Refused,
            plans: &plans,
            results: &results,
        }
        .table();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "# cutover forward on flow S->T: groups from S to T (dry run)"
        );
        assert!(
            lines[1].starts_with(
                "GROUP    TOPIC   PARTITION  COMMITTED  TO TOPIC  TRANSLATED  RE-READ  STATUS"
            ),
            "{out}"
        );
        assert!(
            lines[2].starts_with(
                "billing  orders          0         15  S.orders         111        9  bounded"
            ),
            "{out}"
        );
        assert!(out.contains("live: refused: not committed: the group has active members on S (Stable): stop its consumers first"), "{out}");
        assert!(out.ends_with("# outcome: refused or incomplete\n"), "{out}");
    }

    #[test]
    fn json_gives_every_partition_its_bound_and_status() {
        let plans = plans();
        let results = BTreeMap::from([(
            "billing".to_string(),
            (true, "committed 1 partitions on T".to_string()),
        )]);
        let out = Output {
            flow: "S->T",
            direction: Direction::Back,
            from: "T",
            to: "S",
            execute: true,
            outcome: Outcome::Refused,
            plans: &plans[..1],
            results: &results,
        }
        .json();
        assert_eq!(
            out,
            "{\"flow\":\"S->T\",\"direction\":\"back\",\"from\":\"T\",\"to\":\"S\",\"execute\":true,\
             \"outcome\":\"refused\",\"groups\":[{\"group\":\"billing\",\"decision\":\"ready\",\
             \"committed\":true,\"result\":\"committed 1 partitions on T\",\"partitions\":[{\"topic\":\"orders\",\
             \"partition\":0,\"committed_offset\":15,\"to_topic\":\"S.orders\",\"translated_offset\":111,\
             \"reread_bound\":9,\"sync\":{\"source_offset\":10,\"target_offset\":110},\"status\":\"bounded\"}]}]}\n"
        );
    }
}
