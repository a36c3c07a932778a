//! The reference side of the interop tests: Apache Kafka's own MirrorMaker 2
//! (4.1.1, dedicated mode) on the real test clusters, observed through
//! MirrorMaker 2's own Java decoders and `RemoteClusterUtils`.
//!
//! These prove the reference works the way the differential tests will rely
//! on: with its checkpoint connector disabled it still replicates and writes
//! offset syncs (so our checkpointer can take over), and with it enabled it
//! writes checkpoints that Java's `translateOffsets` reads back.
//!
//! Fails (never skips) when no clusters run. Each MM2 start is bounded: MM2
//! needs about 10 s to start on the development machine; waits give it 90 s.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::time::Duration;

use e2e::java::{CheckpointRecord, CommitMode, GroupOffset, JavaError, helpers};
use e2e::mm2::{
    CHECKPOINT_TASK_READY_LOG, CHECKPOINTS_REFUSED_LOG, CHECKPOINTS_TOPIC, Checkpoints, Mm2Config,
    Mm2Process, OFFSET_SYNCS_TOPIC, SOURCE_ALIAS, remote_topic,
};
use e2e::{Listener, clusters, unique_name};

/// How long MM2 gets from spawn to the first thing a test waits for.
const STARTUP_BUDGET: Duration = Duration::from_secs(90);
/// How long later steps get once MM2 is working.
const STEP_BUDGET: Duration = Duration::from_secs(30);
const PARTITIONS: u32 = 2;
const RECORDS_PER_PARTITION: u32 = 20;

fn ok<T, E: Display>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn end_offsets(topic: &str, metadata: impl Fn(i32) -> String) -> Vec<GroupOffset> {
    (0..PARTITIONS as i32)
        .map(|partition| GroupOffset {
            topic: topic.to_owned(),
            partition,
            offset: i64::from(RECORDS_PER_PARTITION),
            metadata: metadata(partition),
        })
        .collect()
}

#[test]
fn mm2_without_its_checkpoint_connector_replicates_and_writes_offset_syncs_but_no_checkpoints() {
    let c = clusters();
    let java = helpers();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("mm2ref-nocp");
    let group = unique_name("mm2ref-nocp-group");
    let last = i64::from(RECORDS_PER_PARTITION) - 1;

    ok(
        java.produce(source, &topic, PARTITIONS, RECORDS_PER_PARTITION),
        "producing to the source",
    );
    // A committed group MM2 would checkpoint if its checkpoint connector ran.
    ok(
        java.commit_offsets(
            source,
            &group,
            CommitMode::Classic,
            &end_offsets(&topic, |_| String::new()),
        ),
        "committing the source group",
    );

    let config = Mm2Config::new(&topic, &group).without_checkpoints();
    // The replication task's start is a cheap gate before the (JVM-per-probe)
    // polling below.
    let mut mm2 = ok(
        Mm2Process::start_replicating(c, &config, STARTUP_BUDGET),
        "starting MirrorMaker 2 and its replication task",
    );

    let ours = |syncs: Result<Vec<e2e::java::OffsetSyncRecord>, JavaError>| {
        syncs.map(|all| {
            all.into_iter()
                .filter(|s| s.topic == topic)
                .collect::<Vec<_>>()
        })
    };
    let (_, first_sync) = ok(
        mm2.wait_until("offset sync for the test topic", STARTUP_BUDGET, |_| {
            ours(java.offset_syncs(source, OFFSET_SYNCS_TOPIC))
                .map(|s| (!s.is_empty()).then_some(()))
        }),
        "waiting for the first offset sync",
    );
    eprintln!(
        "mm2_reference: MM2 spawn to first offset sync seen: {:.1}s (pid {})",
        first_sync.as_secs_f64(),
        mm2.pid()
    );
    let syncs = ok(
        mm2.wait_for_offset_syncs(&topic, PARTITIONS, last, STEP_BUDGET),
        "waiting for offset syncs of every partition's last record",
    );
    for sync in &syncs {
        // A fresh remote topic holds exactly the source records, so offsets match.
        assert_eq!(sync.upstream, sync.downstream, "sync {sync:?}");
        assert!(
            (0..PARTITIONS as i32).contains(&sync.partition),
            "sync {sync:?}"
        );
    }
    for p in 0..PARTITIONS as i32 {
        let ups: Vec<i64> = syncs
            .iter()
            .filter(|s| s.partition == p)
            .map(|s| s.upstream)
            .collect();
        assert!(
            ups.windows(2).all(|w| w[0] < w[1]),
            "partition {p}: upstream offsets of syncs must rise in log order: {ups:?}"
        );
    }

    let upstream = ok(
        java.read_records(source, &topic),
        "reading the source topic",
    );
    let downstream = ok(
        java.read_records(target, &remote_topic(&topic)),
        "reading the replicated topic",
    );
    assert_eq!(
        upstream.len(),
        (PARTITIONS * RECORDS_PER_PARTITION) as usize
    );
    assert_eq!(
        downstream,
        upstream,
        "target's {} must equal the source topic",
        remote_topic(&topic)
    );

    assert!(
        mm2.log_text().contains(CHECKPOINTS_REFUSED_LOG),
        "MM2 must refuse its checkpoint connector; end of its log:\n{}",
        mm2.log_tail(60)
    );
    // Three emission intervals in which a running checkpoint task would have
    // checkpointed the committed group.
    std::thread::sleep(Duration::from_secs(3));
    let checkpoints: Vec<CheckpointRecord> = ok(
        java.checkpoints(target, CHECKPOINTS_TOPIC),
        "reading the checkpoints topic",
    )
    .into_iter()
    .filter(|cp| cp.group == group)
    .collect();
    assert!(
        checkpoints.is_empty(),
        "MM2 without its checkpoint connector wrote checkpoints: {checkpoints:?}"
    );
    ok(mm2.check_running(), "MirrorMaker 2 must still run");
    eprintln!(
        "mm2_reference: MM2 JVM RSS when idle: {} KiB",
        mm2.rss_kib().map_or("?".to_owned(), |k| k.to_string())
    );
}

/// The baseline the differential tests compare against: MM2 checkpoints a
/// classic and a KIP-848 group, and Java's `RemoteClusterUtils` translates
/// them. Then the migration path to our checkpointer: restarted with
/// `groups.exclude=.*`, the same MM2 stops checkpointing.
#[test]
fn mm2_checkpoints_are_read_by_java_and_stop_once_all_groups_are_excluded() {
    let c = clusters();
    let java = helpers();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("mm2ref-cp");
    let classic = unique_name("mm2ref-cp-classic");
    let consumer = unique_name("mm2ref-cp-consumer");
    let remote = remote_topic(&topic);

    ok(
        java.produce(source, &topic, PARTITIONS, RECORDS_PER_PARTITION),
        "producing to the source",
    );
    let first_offsets = end_offsets(&topic, |p| format!("meta-{p}"));
    ok(
        java.commit_offsets(source, &classic, CommitMode::Classic, &first_offsets),
        "committing the classic-protocol group",
    );
    ok(
        java.commit_offsets(
            source,
            &consumer,
            CommitMode::Consumer,
            &end_offsets(&topic, |_| String::new()),
        ),
        "committing the consumer-protocol group",
    );

    let config = Mm2Config::new(&topic, &format!("{classic}, {consumer}"));
    let mut mm2 = ok(Mm2Process::start(c, &config), "starting MirrorMaker 2");
    // Cheap gate before the (JVM-per-probe) polling below.
    ok(
        mm2.wait_for_log(CHECKPOINT_TASK_READY_LOG, STARTUP_BUDGET),
        "waiting for MM2's checkpoint task",
    );

    let expected: BTreeMap<(String, i32), i64> = (0..PARTITIONS as i32)
        .map(|p| ((remote.clone(), p), i64::from(RECORDS_PER_PARTITION)))
        .collect();
    for (group, budget) in [(&classic, STARTUP_BUDGET), (&consumer, STEP_BUDGET)] {
        let (_, at) = ok(
            mm2.wait_until(
                &format!("translated offsets {expected:?} for {group}"),
                budget,
                |_| {
                    java.translate_offsets(target, SOURCE_ALIAS, group, Duration::from_secs(10))
                        .map(|t| (t == expected).then_some(()))
                },
            ),
            "waiting for RemoteClusterUtils.translateOffsets",
        );
        eprintln!(
            "mm2_reference: MM2 spawn to translated offsets for {group}: {:.1}s",
            at.as_secs_f64()
        );
    }

    let checkpoints = ok(
        java.checkpoints(target, CHECKPOINTS_TOPIC),
        "reading the checkpoints topic",
    );
    for p in 0..PARTITIONS as i32 {
        let latest = checkpoints
            .iter()
            .rev()
            .find(|cp| cp.group == classic && cp.topic == remote && cp.partition == p);
        assert_eq!(
            latest,
            Some(&CheckpointRecord {
                group: classic.clone(),
                topic: remote.clone(),
                partition: p,
                upstream: i64::from(RECORDS_PER_PARTITION),
                downstream: i64::from(RECORDS_PER_PARTITION),
                metadata: format!("meta-{p}"),
            }),
            "latest checkpoint of {classic} for {remote}-{p}"
        );
    }

    // The migration path: restart the same Connect worker (whose config topic
    // now holds a checkpoint connector with tasks) with `groups.exclude=.*`.
    // The stored connector is replaced by one without groups, and once the
    // task it had is stopped (it first runs again with its old groups), a
    // later commit is no longer checkpointed.
    ok(mm2.stop(Duration::from_secs(20)), "stopping MirrorMaker 2");
    let mut mm2 = ok(
        Mm2Process::start(c, &config.clone().with_checkpoints(Checkpoints::NoGroups)),
        "restarting MirrorMaker 2 without checkpoint groups",
    );
    ok(
        mm2.wait_for_checkpoint_tasks_gone(STARTUP_BUDGET),
        "waiting for the checkpoint connector to restart without groups and tasks",
    );
    ok(
        java.produce(source, &topic, PARTITIONS, RECORDS_PER_PARTITION),
        "producing more to the source",
    );
    let second: Vec<GroupOffset> = first_offsets
        .iter()
        .map(|o| GroupOffset {
            offset: 2 * o.offset,
            ..o.clone()
        })
        .collect();
    ok(
        java.commit_offsets(source, &classic, CommitMode::Classic, &second),
        "committing the group again",
    );
    // Any sync of a new record proves the restarted flow replicates, and with
    // it a surviving checkpoint task could translate the new commit. Not the
    // sync of the last record: MM2 holds the newest sync of a partition back
    // until its task commits, and a task restarted by a connector
    // reconfiguration (which the restart triggers) drops it.
    let first_new = i64::from(RECORDS_PER_PARTITION);
    ok(
        mm2.wait_for_offset_syncs(&topic, PARTITIONS, first_new, STARTUP_BUDGET),
        "waiting for MM2 to replicate the new records",
    );
    // Three emission intervals in which a surviving checkpoint task would
    // have checkpointed the new commit.
    std::thread::sleep(Duration::from_secs(3));
    let late: Vec<CheckpointRecord> = ok(
        java.checkpoints(target, CHECKPOINTS_TOPIC),
        "reading the checkpoints topic",
    )
    .into_iter()
    .filter(|cp| cp.group == classic && cp.upstream > i64::from(RECORDS_PER_PARTITION))
    .collect();
    assert!(
        late.is_empty(),
        "MM2 with groups.exclude=.* still checkpointed: {late:?}"
    );
    ok(mm2.check_running(), "MirrorMaker 2 must still run");
}

#[test]
fn offsets_committed_by_the_helper_read_back_exactly_with_every_group_protocol() {
    let c = clusters();
    let java = helpers();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("mm2ref-commit");
    ok(
        java.produce(source, &topic, 2, 5),
        "producing to the source",
    );
    for mode in [
        CommitMode::Classic,
        CommitMode::Consumer,
        CommitMode::Standalone,
    ] {
        let group = unique_name("mm2ref-commit-group");
        let offsets = vec![
            GroupOffset {
                topic: topic.clone(),
                partition: 0,
                offset: 3,
                metadata: "first one".into(),
            },
            GroupOffset {
                topic: topic.clone(),
                partition: 1,
                offset: 5,
                metadata: String::new(),
            },
        ];
        ok(
            java.commit_offsets(source, &group, mode, &offsets),
            &format!("committing with {mode:?}"),
        );
        let read = ok(java.group_offsets(source, &group), "reading the group back");
        assert_eq!(read, offsets, "{mode:?}");
    }
}
