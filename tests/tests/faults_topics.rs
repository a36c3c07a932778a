//! Topics changing under a running daemon: the offset-syncs topic deleted and
//! recreated (so its log offsets go back to 0), and partitions added to the
//! source topic. No checkpoint goes past what the current syncs justify, none
//! rewinds, and the daemon follows the new topic layout.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use e2e::faults::{
    Daemon, assert_logged, assert_sound, assert_sound_across, latest, start_checkpointed, wait_for,
};
use e2e::world::{World, rt};
use e2e::{Cluster as TestCluster, Listener, clusters};
use mm2_checkpoint::driver::ClusterClient;
use mm2_checkpoint::driver::FlowCluster;

/// Runs `kafka-topics` with `args` against `cluster`; asserts success and
/// returns its standard output.
fn kafka_topics(cluster: &TestCluster, args: &[&str]) -> String {
    let out = Command::new(clusters().tool("kafka-topics"))
        .arg("--bootstrap-server")
        .arg(cluster.bootstrap.get(Listener::Plaintext))
        .args(args)
        .output()
        .expect("run kafka-topics");
    assert!(
        out.status.success(),
        "kafka-topics {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Deletes `topic` with `kafka-topics` and waits until `client` no longer sees it.
fn delete_topic(
    rt: &tokio::runtime::Runtime,
    cluster: &TestCluster,
    client: &ClusterClient,
    topic: &str,
) {
    kafka_topics(cluster, &["--delete", "--topic", topic]);
    wait_for(
        &format!("{topic} to be gone"),
        Duration::from_secs(60),
        || !rt.block_on(client.topic_exists(topic)).expect("metadata"),
    );
}

#[test]
fn a_recreated_offset_syncs_topic_is_reread_and_never_translates_from_stale_syncs() {
    let rt = rt();
    let w = World::new(&rt, "syncsrecreated", 1);
    // Old generation: 30 syncs records, so the topic's end offset is 30.
    let old: Vec<(i32, i64, i64)> = (0..30).map(|i| (0, 10 * i, 10 * i + 3)).collect();
    let (group, mut daemon) = start_checkpointed(&rt, &w, &old, 290, (290, 293));
    // The topic is deleted and recreated (an operator reset, say): its log
    // offsets start at 0 again, below the daemon's position (30), and the
    // new syncs map upstream offsets to new downstream positions (the
    // remote topic was re-seeded further on).
    delete_topic(&rt, clusters().source(), &w.source, &w.syncs_topic());
    let before = w.checkpoints(&rt).len();
    let new = [(0, 290, 1000), (0, 300, 1100)];
    // The topic may linger in the broker's metadata for a moment: retry.
    wait_for(
        "the offset-syncs topic to be recreated",
        Duration::from_secs(60),
        || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                w.write_syncs(&rt, &w.source, &w.syncs_topic(), &new)
            }))
            .is_ok()
        },
    );
    w.commit_source(&rt, &group, &[(0, 300)]);
    wait_for(
        "the checkpoint translated by the new syncs",
        Duration::from_secs(60),
        || latest(&w.checkpoints(&rt)).get(&(group.clone(), 0)) == Some(&(300, 1100)),
    );
    daemon.assert_running();
    let cps = w.checkpoints(&rt);
    // Before the recreation: sound against the old syncs; after: against the
    // new ones only (a stale translation of 300 would be 294).
    assert_sound_across(&cps, before, &old, &new, 293);
    assert_logged(
        &daemon,
        "the offset-syncs topic went backwards",
        "the recreation",
    );
}

#[test]
fn partitions_added_to_the_source_topic_are_checkpointed_once_synced() {
    let rt = rt();
    let w = World::new(&rt, "partsadded", 1);
    let mut syncs: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    let (group, mut daemon) = start_checkpointed(&rt, &w, &[(0, 0, 3), (0, 10, 13)], 10, (10, 13));
    syncs.insert(0, vec![(0, 3), (10, 13)]);
    let c = clusters();
    kafka_topics(
        c.source(),
        &["--alter", "--topic", &w.topic, "--partitions", "3"],
    );
    kafka_topics(
        c.target(),
        &["--alter", "--topic", &w.remote_topic(), "--partitions", "3"],
    );
    // The group commits on a new partition before any sync of it exists:
    // nothing may be emitted for it (there is nothing to translate with).
    w.commit_source(&rt, &group, &[(0, 10), (2, 7)]);
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        latest(&w.checkpoints(&rt)).get(&(group.clone(), 2)),
        None,
        "a checkpoint for a partition without syncs"
    );
    // MM2 starts replicating the new partitions: their syncs arrive.
    w.write_syncs(
        &rt,
        &w.source,
        &w.syncs_topic(),
        &[(1, 0, 0), (2, 0, 0), (2, 5, 6)],
    );
    syncs.insert(1, vec![(0, 0)]);
    syncs.insert(2, vec![(0, 0), (5, 6)]);
    w.commit_source(&rt, &group, &[(0, 10), (1, 0), (2, 7)]);
    let want: BTreeMap<(String, i32), (i64, i64)> = [
        ((group.clone(), 0), (10, 13)),
        ((group.clone(), 1), (0, 0)),
        ((group.clone(), 2), (7, 7)),
    ]
    .into();
    wait_for(
        "checkpoints of the new partitions",
        Duration::from_secs(60),
        || latest(&w.checkpoints(&rt)) == want,
    );
    daemon.assert_running();
    assert_sound(&w.checkpoints(&rt), &syncs);
    assert_eq!(daemon.log_text().matches("panicked").count(), 0);
}

#[test]
fn a_recreated_source_topic_is_translated_by_its_new_syncs_only() {
    let rt = rt();
    let w = World::new(&rt, "srcrecreated", 1);
    let old = [(0, 0, 3), (0, 100, 103)];
    let (group, mut daemon) = start_checkpointed(&rt, &w, &old, 100, (100, 103));
    // The source topic is deleted and recreated: its offsets restart at 0
    // (an upstream rewind); MM2 keeps appending to the remote topic, so the
    // new syncs map the new upstream offsets to downstream 200 onwards.
    delete_topic(&rt, clusters().source(), &w.source, &w.topic);
    wait_for(
        "the source topic to be recreated",
        Duration::from_secs(60),
        || {
            rt.block_on(w.source.create_topic(&w.topic, 1, 1, &[]))
                .is_ok()
        },
    );
    let before = w.checkpoints(&rt).len();
    let new = [(0, 0, 200)];
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &new);
    w.commit_source(&rt, &group, &[(0, 5)]);
    wait_for(
        "the checkpoint translated by the new syncs",
        Duration::from_secs(60),
        || latest(&w.checkpoints(&rt)).get(&(group.clone(), 0)) == Some(&(5, 201)),
    );
    daemon.assert_running();
    let cps = w.checkpoints(&rt);
    // After the recreation upstream rewound once (100 -> 5), so only the new
    // records are checked for monotony, and against the new syncs only; the
    // downstream side never went back (the remote topic was not recreated).
    assert_sound_across(&cps, before, &old, &new, 103);
    assert_logged(
        &daemon,
        "upstream offset went backwards",
        "the upstream rewind",
    );
}

#[test]
fn a_deleted_checkpoints_topic_is_recreated_compacted_with_the_checkpoints_held() {
    let rt = rt();
    let w = World::new(&rt, "cpdeleted", 2);
    let syncs = [(0, 0, 3), (0, 10, 13), (1, 0, 4), (1, 20, 24)];
    let group = w.seed(&rt, &syncs, &[(0, 10), (1, 20)]);
    let config = w.properties(&group, "checkpoints.topic.replication.factor = 1");
    let mut daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    let checkpoints = |p0: (i64, i64)| -> BTreeMap<(String, i32), (i64, i64)> {
        [((group.clone(), 0), p0), ((group.clone(), 1), (20, 24))].into()
    };
    wait_for("the first checkpoints", Duration::from_secs(60), || {
        latest(&w.checkpoints(&rt)) == checkpoints((10, 13))
    });
    let c = clusters();
    delete_topic(&rt, c.target(), &w.target, &w.checkpoints_topic());
    // Only partition 0 moves on: partition 1's checkpoint must come back
    // from the daemon's memory, not from a new translation.
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 30, 33)]);
    w.commit_source(&rt, &group, &[(0, 30), (1, 20)]);
    wait_for(
        "the recreated checkpoints topic with every checkpoint",
        Duration::from_secs(90),
        || latest(&w.checkpoints(&rt)) == checkpoints((30, 33)),
    );
    daemon.assert_running();
    let described = kafka_topics(
        c.target(),
        &["--describe", "--topic", &w.checkpoints_topic()],
    );
    assert!(
        described.contains("cleanup.policy=compact") && described.contains("PartitionCount: 1"),
        "the topic was not recreated compacted with one partition:\n{described}"
    );
    assert_logged(
        &daemon,
        "the checkpoints topic is missing",
        "the recreation",
    );
}
