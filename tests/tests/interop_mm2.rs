//! Drop-in test against the real thing: Apache Kafka 4.1.1's MirrorMaker 2
//! replicates and writes offset syncs (its checkpoint connector refused), our
//! binary writes the checkpoints, and Kafka's own Java code reads them back:
//! MM2's `Checkpoint.deserializeRecord` and `RemoteClusterUtils.translateOffsets`.

use std::collections::BTreeMap;
use std::time::Duration;

use e2e::interop::{commit, logged_number, ok, our_config, run_once, test_dir};
use e2e::java::{CommitMode, GroupOffset, helpers};
use e2e::mm2::{
    CHECKPOINTS_TOPIC, Mm2Config, Mm2Process, OFFSET_SYNCS_TOPIC, SOURCE_ALIAS, TARGET_ALIAS,
    remote_topic,
};
use e2e::{Listener, clusters, unique_name};

const PARTITIONS: u32 = 2;
const RECORDS: u32 = 20;
const STARTUP_BUDGET: Duration = Duration::from_secs(120);

/// The reference harness (package `e2e`, below this crate) states the names of
/// the topics the real MM2 writes on its own; they must be the ones the core's
/// naming rules give, or the interop tests would read the wrong topics.
#[test]
fn the_reference_topic_names_are_the_ones_the_core_gives() {
    use mm2_checkpoint::core::{Flow, OffsetSyncsLocation, ReplicationPolicy};
    let policy = ReplicationPolicy::default();
    let flow = Flow::new(SOURCE_ALIAS, TARGET_ALIAS);
    assert_eq!(
        OffsetSyncsLocation::Source.topic(&policy, &flow),
        OFFSET_SYNCS_TOPIC
    );
    assert_eq!(policy.checkpoints_topic(SOURCE_ALIAS), CHECKPOINTS_TOPIC);
    assert_eq!(
        policy.format_remote_topic(SOURCE_ALIAS, "orders"),
        remote_topic("orders")
    );
}

#[test]
fn checkpoints_written_after_real_mm2_replication_are_read_by_mm2s_own_java_code() {
    let c = clusters();
    let java = helpers();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("interop");
    let group = unique_name("interop-group");
    let remote = remote_topic(&topic);

    ok(
        java.produce(source, &topic, PARTITIONS, RECORDS),
        "producing to the source",
    );
    let committed: Vec<GroupOffset> = (0..PARTITIONS as i32)
        .map(|p| GroupOffset {
            topic: topic.clone(),
            partition: p,
            offset: i64::from(RECORDS),
            metadata: format!("meta-{p}"),
        })
        .collect();
    ok(
        java.commit_offsets(source, &group, CommitMode::Classic, &committed),
        "committing the source group",
    );

    let config = Mm2Config::new(&topic, &group).without_checkpoints();
    let mut mm2 = ok(
        Mm2Process::start_replicating(c, &config, STARTUP_BUDGET),
        "starting MirrorMaker 2 and its replication task",
    );
    let last = i64::from(RECORDS) - 1;
    ok(
        mm2.wait_for_offset_syncs(&topic, PARTITIONS, last, STARTUP_BUDGET),
        "waiting for MM2's offset syncs up to the last record",
    );

    run_once(&our_config(&test_dir(&group), &topic, &group, ""));

    let mut ours: Vec<(String, i32, i64, i64, String)> = ok(
        java.checkpoints(target, CHECKPOINTS_TOPIC),
        "reading the checkpoints with MM2's decoder",
    )
    .into_iter()
    .filter(|cp| cp.group == group)
    .map(|cp| {
        (
            cp.topic,
            cp.partition,
            cp.upstream,
            cp.downstream,
            cp.metadata,
        )
    })
    .collect();
    ours.sort();
    let expected: Vec<(String, i32, i64, i64, String)> = (0..PARTITIONS as i32)
        .map(|p| {
            (
                remote.clone(),
                p,
                i64::from(RECORDS),
                i64::from(RECORDS),
                format!("meta-{p}"),
            )
        })
        .collect();
    assert_eq!(ours, expected);

    let translated = ok(
        java.translate_offsets(target, SOURCE_ALIAS, &group, Duration::from_secs(20)),
        "RemoteClusterUtils.translateOffsets",
    );
    let expected: BTreeMap<(String, i32), i64> = (0..PARTITIONS as i32)
        .map(|p| ((remote.clone(), p), i64::from(RECORDS)))
        .collect();
    assert_eq!(translated, expected);
    drop(mm2);
}

/// Differential: the same commits in three groups, one checkpointed by MM2's
/// own checkpoint connector, one by our polling round (`run --once`), one by
/// our daemon following `__consumer_offsets` (its periodic round an hour
/// away, so only the follower can emit), over the same offset syncs. The
/// translated offsets must be equal, including offsets between syncs.
#[test]
fn our_translation_equals_mm2s_for_the_same_commits_over_the_same_offset_syncs() {
    let c = clusters();
    let java = helpers();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("differential");
    let theirs = unique_name("diff-mm2");
    let ours = unique_name("diff-ours");
    let followed = unique_name("diff-follow");
    let records: u32 = 40;

    ok(
        java.produce(source, &topic, PARTITIONS, records),
        "producing to the source",
    );
    let config = Mm2Config::new(&topic, &theirs);
    let mut mm2 = ok(
        Mm2Process::start_replicating(c, &config, STARTUP_BUDGET),
        "starting MirrorMaker 2 and its replication task",
    );
    let last = i64::from(records) - 1;
    ok(
        mm2.wait_for_offset_syncs(&topic, PARTITIONS, last, STARTUP_BUDGET),
        "waiting for MM2's offset syncs up to the last record",
    );
    // The follower starts before the commits (MM2's worker has created
    // `__consumer_offsets` by now), so its first round finds nothing.
    let mut follower = FollowingDaemon::start(&topic, &followed);
    // Commit only now, so every side translates with every sync already written.
    let commits: Vec<(i32, i64)> = (0..PARTITIONS as i32).zip([7, 33]).collect();
    for group in [&theirs, &ours, &followed] {
        commit(group, &topic, &commits);
    }
    let latest = |group: &str| -> Result<BTreeMap<i32, (i64, i64)>, e2e::java::JavaError> {
        let mut by_partition = BTreeMap::new();
        for cp in java.checkpoints(target, CHECKPOINTS_TOPIC)? {
            if cp.group == group {
                by_partition.insert(cp.partition, (cp.upstream, cp.downstream));
            }
        }
        Ok(by_partition)
    };
    // MM2 may leave a partition without a checkpoint (an offset its sync store
    // cannot translate); wait for its first one, then for a few more rounds.
    ok(
        mm2.wait_for_checkpoints(&theirs, STARTUP_BUDGET, |cps| !cps.is_empty()),
        "waiting for MM2's first checkpoint",
    );
    std::thread::sleep(Duration::from_secs(4));
    let mm2_checkpoints = ok(latest(&theirs), "reading MM2's checkpoints");

    run_once(&our_config(&test_dir(&ours), &topic, &ours, ""));
    let our_checkpoints = ok(latest(&ours), "reading our checkpoints");
    eprintln!(
        "differential: partition -> (upstream, downstream): MM2 {mm2_checkpoints:?}, ours {our_checkpoints:?}"
    );
    assert_eq!(
        our_checkpoints, mm2_checkpoints,
        "(partition -> (upstream, downstream)): ours vs MM2's"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let followed_checkpoints = loop {
        let got = ok(latest(&followed), "reading the follower's checkpoints");
        if got == mm2_checkpoints || std::time::Instant::now() > deadline {
            break got;
        }
        follower.alive();
        std::thread::sleep(Duration::from_millis(200));
    };
    let log = follower.stop();
    assert_eq!(
        followed_checkpoints, mm2_checkpoints,
        "(partition -> (upstream, downstream)): the follower's vs MM2's; its log:\n{log}"
    );
    assert_eq!(
        (
            log.matches("emission round done").count(),
            logged_number(&log, "emission round done", "emitted")
        ),
        (1, Some(0)),
        "the periodic round runs once, at start, before the commits:\n{log}"
    );
    let translate = |group: &str| {
        ok(
            java.translate_offsets(target, SOURCE_ALIAS, group, Duration::from_secs(20)),
            "RemoteClusterUtils.translateOffsets",
        )
        .into_values()
        .collect::<Vec<i64>>()
    };
    assert_eq!(translate(&ours), translate(&theirs));
    assert_eq!(translate(&followed), translate(&theirs));
    drop(mm2);
}

/// Our daemon in follow mode for one group, its log in a file.
struct FollowingDaemon {
    child: std::process::Child,
    log: std::path::PathBuf,
}

impl FollowingDaemon {
    /// Starts it and waits for its first (periodic) round.
    fn start(topic: &str, group: &str) -> FollowingDaemon {
        let dir = test_dir(group);
        let config = our_config(
            &dir,
            topic,
            group,
            "mm2-checkpoint.group.offsets.mode = follow\n\
             emit.checkpoints.interval.seconds = 3600\n",
        );
        let log = dir.join("daemon.log");
        let child = std::process::Command::new(e2e::binary::mm2_checkpoint())
            .args(["run", "--log-format", "json", "--config"])
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("daemon log"))
            .spawn()
            .expect("spawn mm2-checkpoint run");
        let mut daemon = FollowingDaemon { child, log };
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !daemon.log_text().contains("emission round done") {
            daemon.alive();
            assert!(
                std::time::Instant::now() < deadline,
                "no first round within 60 s:\n{}",
                daemon.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            daemon.log_text().contains("following"),
            "the daemon does not follow __consumer_offsets:\n{}",
            daemon.log_text()
        );
        daemon
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("the daemon exited ({status}):\n{}", self.log_text());
        }
    }

    /// Stops it; returns its log.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.log_text()
    }
}

impl Drop for FollowingDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
