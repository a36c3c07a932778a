//! Record-level interop against the real MirrorMaker 2 4.1.1 (issue 7, tests 1
//! and 4).
//!
//! * MM2's source connector replicates (its checkpoint connector refused) and
//!   our binary checkpoints: every checkpoint must point at the same record as
//!   the committed upstream offset, or an earlier one, never a later one; the
//!   group offsets we sync to the target must do the same, so a failover
//!   consumer skips nothing.
//! * MM2 checkpoints first, then its checkpoint connector is switched off
//!   (`groups.exclude=.*`) and, once MM2's last checkpoint task has stopped,
//!   our binary takes over the same checkpoints topic: it restores MM2's
//!   checkpoints and no checkpoint on the topic ever goes backwards.
//!
//! The upstream topic's first records are deleted before MM2 replicates, so
//! downstream offsets are upstream offsets minus that count: a checkpoint that
//! copied the upstream offset would point at a different record and fail.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use e2e::interop::{commit, logged_number, ok, our_config, run_once, test_dir};
use e2e::java::{CheckpointRecord, TopicRecord, helpers};
use e2e::mm2::{CHECKPOINTS_TOPIC, Checkpoints, Mm2Config, Mm2Process, remote_topic};
use e2e::{Clusters, Listener, clusters, unique_name};

const PARTITIONS: u32 = 3;
const RECORDS: u32 = 40;
/// Records deleted from the start of every upstream partition before MM2 runs.
const DELETED: i64 = 10;
const STARTUP_BUDGET: Duration = Duration::from_secs(120);
/// How long MM2 gets to shut down cleanly before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(60);

/// Deletes the records before `before` in every partition of `topic`, with
/// Kafka's own `kafka-delete-records` tool (`DeleteRecordsCommand`).
fn delete_records(c: &Clusters, dir: &Path, topic: &str, before: i64) {
    let partitions: Vec<String> = (0..PARTITIONS)
        .map(|p| format!(r#"{{"topic":"{topic}","partition":{p},"offset":{before}}}"#))
        .collect();
    let file = dir.join("delete-records.json");
    std::fs::write(
        &file,
        format!(r#"{{"version":1,"partitions":[{}]}}"#, partitions.join(",")),
    )
    .expect("write delete-records.json");
    let out = Command::new(&c.kafka_run_class)
        .arg("org.apache.kafka.tools.DeleteRecordsCommand")
        .arg("--bootstrap-server")
        .arg(c.source().bootstrap.get(Listener::Plaintext))
        .arg("--offset-json-file")
        .arg(&file)
        .output()
        .expect("run kafka-delete-records");
    assert!(
        out.status.success(),
        "kafka-delete-records failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts MM2 with `config` and waits until it has replicated and synced the
/// last record of every partition of `topic`.
fn start_mm2_synced(c: &Clusters, config: &Mm2Config, topic: &str) -> Mm2Process {
    let mut mm2 = ok(
        Mm2Process::start_replicating(c, config, STARTUP_BUDGET),
        "starting MirrorMaker 2 and its replication task",
    );
    ok(
        mm2.wait_for_offset_syncs(topic, PARTITIONS, i64::from(RECORDS) - 1, STARTUP_BUDGET),
        "waiting for MM2's offset syncs up to the last record",
    );
    mm2
}

/// Records of one topic by (partition, offset): (key, value).
type Records = BTreeMap<(i32, i64), (String, String)>;

/// Records of one topic by (partition, offset).
fn by_position(records: Vec<TopicRecord>) -> Records {
    records
        .into_iter()
        .map(|r| ((r.partition, r.offset), (r.key, r.value)))
        .collect()
}

/// The records of the source topic `topic` and of its replica on the target,
/// by (partition, offset).
fn both_sides(topic: &str) -> (Records, Records) {
    let c = clusters();
    let read = |bootstrap, topic: &str, what| {
        by_position(ok(helpers().read_records(bootstrap, topic), what))
    };
    (
        read(
            c.source().bootstrap.get(Listener::Plaintext),
            topic,
            "reading the source topic",
        ),
        read(
            c.target().bootstrap.get(Listener::Plaintext),
            &remote_topic(topic),
            "reading the replicated topic",
        ),
    )
}

/// The upstream offset of the downstream record at `downstream` in `partition`:
/// the record's key is `key-<p>-<upstream offset>`. The end of the downstream
/// log maps to the end of the upstream log.
fn upstream_of(downstream: &Records, upstream: &Records, partition: i32, offset: i64) -> i64 {
    match downstream.get(&(partition, offset)) {
        Some(record) => {
            let found = upstream
                .iter()
                .find(|((p, _), r)| *p == partition && *r == record);
            match found {
                Some(((_, o), _)) => *o,
                None => panic!("downstream record {record:?} has no upstream twin"),
            }
        }
        None => {
            let end = downstream
                .keys()
                .filter(|(p, _)| *p == partition)
                .map(|(_, o)| o + 1)
                .max()
                .unwrap_or(0);
            assert_eq!(
                offset, end,
                "downstream offset {offset} of partition {partition} is neither a record nor the end"
            );
            i64::from(RECORDS)
        }
    }
}

#[test]
fn every_checkpoint_and_synced_offset_points_at_the_committed_record_or_earlier() {
    let c = clusters();
    let java = helpers();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("records");
    let remote = remote_topic(&topic);
    let dir = test_dir(&topic);
    let caught_up = format!("{topic}-caught-up");
    let lagging = format!("{topic}-lagging");
    let partial = format!("{topic}-partial");
    let rewound = format!("{topic}-rewound");

    ok(
        java.produce(source, &topic, PARTITIONS, RECORDS),
        "producing to the source",
    );
    delete_records(c, &dir, &topic, DELETED);

    let config = Mm2Config::new(&topic, &format!("{topic}-.*")).without_checkpoints();
    let mm2 = start_mm2_synced(c, &config, &topic);

    let end = i64::from(RECORDS);
    let before_rewind = [35, 38, 30];
    let all: Vec<(i32, i64)> = (0..PARTITIONS as i32).map(|p| (p, end)).collect();
    commit(&caught_up, &topic, &all);
    commit(&lagging, &topic, &[(0, 11), (1, 12), (2, 13)]);
    // Partitions 1 and 2 never committed.
    commit(&partial, &topic, &[(0, 25)]);
    commit(
        &rewound,
        &topic,
        &[
            (0, before_rewind[0]),
            (1, before_rewind[1]),
            (2, before_rewind[2]),
        ],
    );
    let properties = our_config(
        &dir,
        &topic,
        &format!("{topic}-.*"),
        "sync.group.offsets.enabled = true\n",
    );
    run_once(&properties);
    commit(&rewound, &topic, &[(0, 14), (1, 20), (2, 29)]);
    run_once(&properties);
    drop(mm2);

    let (upstream, downstream) = both_sides(&topic);
    let committed: BTreeMap<(&str, i32), i64> = [
        (caught_up.as_str(), [end, end, end]),
        (lagging.as_str(), [11, 12, 13]),
        (rewound.as_str(), [14, 20, 29]),
    ]
    .into_iter()
    .flat_map(|(g, offsets)| (0..).zip(offsets).map(move |(p, o)| ((g, p), o)))
    .chain([((partial.as_str(), 0), 25)])
    .collect();

    let checkpoints: Vec<_> = ok(
        java.checkpoints(target, CHECKPOINTS_TOPIC),
        "reading the checkpoints",
    )
    .into_iter()
    .filter(|cp| cp.topic == remote)
    .collect();
    // Every checkpoint ever written: its downstream record is the upstream one or earlier.
    for cp in &checkpoints {
        let points_at = upstream_of(&downstream, &upstream, cp.partition, cp.downstream);
        assert!(
            points_at <= cp.upstream,
            "checkpoint {cp:?} points at upstream offset {points_at}, past the committed {}",
            cp.upstream
        );
    }
    // The latest checkpoint per (group, partition) is for the latest commit.
    // A commit older than the oldest offset sync MM2 kept (the offset-syncs
    // topic is compacted) cannot be translated and gets no checkpoint; a
    // partition never committed gets none either.
    let mut latest: BTreeMap<(&str, i32), (i64, i64)> = BTreeMap::new();
    // The checkpoint with the highest downstream offset: group sync never
    // rewinds a target group, so after a rewind the target keeps this one.
    let mut highest: BTreeMap<(&str, i32), (i64, i64)> = BTreeMap::new();
    for cp in &checkpoints {
        let Some((&(group, _), _)) = committed.get_key_value(&(cp.group.as_str(), cp.partition))
        else {
            panic!("checkpoint for an uncommitted (group, partition): {cp:?}");
        };
        latest.insert((group, cp.partition), (cp.upstream, cp.downstream));
        let top = highest
            .entry((group, cp.partition))
            .or_insert((cp.upstream, cp.downstream));
        if cp.downstream > top.1 {
            *top = (cp.upstream, cp.downstream);
        }
    }
    // A rewind to an untranslatable offset leaves the checkpoint of the
    // commit before it.
    for (key, (upstream, _)) in &latest {
        let earlier = (key.0 == rewound.as_str())
            .then(|| before_rewind.get(key.1 as usize).copied())
            .flatten();
        assert!(
            *upstream == committed[key] || Some(*upstream) == earlier,
            "{key:?}: latest checkpoint {upstream}, committed {}",
            committed[key]
        );
    }
    for p in 0..PARTITIONS as i32 {
        assert!(
            latest.contains_key(&(caught_up.as_str(), p)),
            "caught-up group, partition {p}"
        );
    }
    eprintln!("records: {} checkpoints checked", checkpoints.len());

    // Failover consumers on the target start at the synced offsets: the first
    // record each gets is the checkpointed upstream record or an earlier one.
    for group in [&caught_up, &lagging, &partial, &rewound] {
        let synced: BTreeMap<i32, i64> = ok(
            java.group_offsets(target, group),
            "reading the synced group offsets",
        )
        .into_iter()
        .map(|o| {
            assert_eq!(o.topic, remote);
            (o.partition, o.offset)
        })
        .collect();
        // Each run syncs after it emits and never rewinds the target group,
        // so the target holds the highest checkpoint emitted (for a rewound
        // group that is the one before the rewind).
        let expected: BTreeMap<i32, i64> = highest
            .iter()
            .filter(|((g, _), _)| *g == group.as_str())
            .map(|(&(_, p), &(_, downstream))| (p, downstream))
            .collect();
        assert_eq!(
            synced, expected,
            "{group}: synced offsets vs the highest checkpoints"
        );
        for (partition, offset) in synced {
            let points_at = upstream_of(&downstream, &upstream, partition, offset);
            // Against the commit the synced checkpoint was made for: the
            // target is never rewound, and a rewind to an untranslatable
            // offset gets no checkpoint (as in MM2).
            let want = highest[&(group.as_str(), partition)].0;
            assert!(
                points_at <= want,
                "{group} {partition}: synced offset {offset} starts at upstream {points_at}, past the committed {want}"
            );
        }
    }
}

/// Java MM2 checkpoints a group, then is switched to `groups.exclude=.*` in
/// the same deployment, and our binary continues on the same checkpoints
/// topic after a commit that rewinds one partition, advances one and keeps
/// one.
#[test]
fn taking_over_mm2s_checkpoints_topic_never_moves_a_checkpoint_backwards() {
    let c = clusters();
    let java = helpers();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("takeover");
    let remote = remote_topic(&topic);
    let group = format!("{topic}-group");
    let dir = test_dir(&topic);
    let last = i64::from(RECORDS) - 1;
    let end = i64::from(RECORDS);

    ok(
        java.produce(source, &topic, PARTITIONS, RECORDS),
        "producing to the source",
    );
    let config = Mm2Config::new(&topic, &group);
    let mut mm2 = start_mm2_synced(c, &config, &topic);
    commit(&group, &topic, &[(0, 30), (1, 35), (2, last)]);
    // Partition 2's commit is at the last record, whose sync is the newest one
    // (compaction keeps it): MM2 always translates it. 30 and 35 may be
    // untranslatable once the offset-syncs topic is compacted.
    ok(
        mm2.wait_for_checkpoints(&group, STARTUP_BUDGET, |cps| {
            cps.iter()
                .any(|cp| cp.partition == 2 && cp.upstream == last)
        }),
        "waiting for MM2's checkpoint of partition 2",
    );

    // Switch MM2's checkpointing off in the running deployment: same worker
    // group and config topic, every group excluded. The restarted worker
    // first runs the checkpoint task stored by the first run, with the group
    // still in it; an operator (and this test) waits for it to stop before
    // starting ours.
    ok(mm2.stop(STOP_GRACE), "stopping MirrorMaker 2");
    let mut mm2 = ok(
        Mm2Process::start(c, &config.clone().with_checkpoints(Checkpoints::NoGroups)),
        "restarting MirrorMaker 2 without checkpoint groups",
    );
    ok(
        mm2.wait_for_checkpoint_tasks_gone(STARTUP_BUDGET),
        "waiting for MM2's stored checkpoint task to stop",
    );
    let read_group_checkpoints = || -> Vec<CheckpointRecord> {
        ok(
            java.checkpoints(target, CHECKPOINTS_TOPIC),
            "reading the checkpoints",
        )
        .into_iter()
        .filter(|cp| cp.group == group)
        .collect()
    };
    let by_mm2 = read_group_checkpoints();

    // A rewound partition, an advanced one, an unchanged one.
    commit(&group, &topic, &[(0, 20), (1, end), (2, last)]);
    let properties = our_config(&dir, &topic, &group, "");
    let first_run = run_once(&properties);
    let second_run = run_once(&properties);
    let all = read_group_checkpoints();
    drop(mm2);
    let (upstream, downstream) = both_sides(&topic);

    let context = format!(
        "MM2's checkpoints: {by_mm2:?}\nall checkpoints: {all:?}\n\
         first run --once:\n{first_run}\nsecond run --once:\n{second_run}"
    );
    // Both topics are compacted (the checkpoints by group and partition), so
    // what is read is a subsequence of what was written, ending with the
    // latest checkpoint of every partition.
    let mut latest: BTreeMap<i32, &CheckpointRecord> = BTreeMap::new();
    for cp in &all {
        assert_eq!(cp.topic, remote, "{context}");
        // Every checkpoint points at the committed record or an earlier one.
        let points_at = upstream_of(&downstream, &upstream, cp.partition, cp.downstream);
        assert!(
            points_at <= cp.upstream,
            "checkpoint {cp:?} points at upstream offset {points_at}\n{context}"
        );
        if let Some(prev) = latest.get(&cp.partition) {
            // A rewind (lower upstream) may lower the checkpoint; otherwise the
            // downstream offset never goes back.
            assert!(
                cp.upstream < prev.upstream || cp.downstream >= prev.downstream,
                "checkpoint {cp:?} went backwards from {prev:?}\n{context}"
            );
        }
        latest.insert(cp.partition, cp);
    }
    let mm2_latest: BTreeMap<i32, &CheckpointRecord> =
        by_mm2.iter().map(|cp| (cp.partition, cp)).collect();
    let changed = latest
        .iter()
        .filter(|(p, cp)| mm2_latest.get(p) != Some(cp))
        .count();
    eprintln!(
        "takeover: MM2's latest {:?}, latest {:?}",
        mm2_latest
            .iter()
            .map(|(p, cp)| (*p, (cp.upstream, cp.downstream)))
            .collect::<BTreeMap<_, _>>(),
        latest
            .iter()
            .map(|(p, cp)| (*p, (cp.upstream, cp.downstream)))
            .collect::<BTreeMap<_, _>>()
    );
    // Ours restored MM2's checkpoints: the first run wrote exactly the
    // partitions whose latest checkpoint changed (an unchanged commit
    // translated the same way is not written again), and the second run,
    // which restored the first run's, wrote nothing.
    let restored = logged_number(&first_run, "restored checkpoints", "restored");
    assert!(
        restored >= Some(mm2_latest.len() as u64),
        "first run restored {restored:?} checkpoints\n{context}"
    );
    let emitted = |log: &str| logged_number(log, "emission round done", "emitted");
    assert_eq!(
        emitted(&first_run),
        Some(changed as u64),
        "first run: checkpoints written vs partitions whose latest changed\n{context}"
    );
    assert_eq!(emitted(&second_run), Some(0), "second run\n{context}");
    let latest_upstream = |p: i32| latest.get(&p).map(|cp| cp.upstream);
    // Partition 1 advanced to the end, which the newest sync (kept by
    // compaction) always translates: our checkpoint for it is the latest.
    assert_eq!(latest_upstream(1), Some(end), "partition 1\n{context}");
    // Partition 0 rewound: ours for 20 if 20 is still translatable, else
    // MM2's for 30 stays (if it had one); None if neither was.
    assert!(
        matches!(latest_upstream(0), Some(20 | 30) | None),
        "partition 0 after the rewind\n{context}"
    );
    // Partition 2's commit is unchanged: its latest checkpoint is still for it.
    assert_eq!(latest_upstream(2), Some(last), "partition 2\n{context}");
}
