//! Switch-over with one `mm2.properties` for both programs
//! (docs/operations.md, "Switching over from MM2's checkpointing"): the real
//! MirrorMaker 2 4.1.1 in dedicated mode and our daemon read the SAME file, in
//! which `source->target.emit.checkpoints.enabled = false` hands the flow's
//! checkpointing to us. MM2 replicates the topic and writes offset syncs but
//! creates no checkpoint task and writes no checkpoint; our daemon writes the
//! checkpoints and syncs the target group; a consumer failing over to the
//! target resumes with no record lost. The checkpoint connector configuration
//! MM2 builds from that file, read as connector-style input (Connect REST JSON),
//! translates the group to the same offsets.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use e2e::faults::Daemon;
use e2e::interop::{commit, ok, test_dir};
use e2e::java::{CheckpointRecord, GroupOffset, helpers};
use e2e::mm2::{
    CHECKPOINTS_REFUSED_LOG, CHECKPOINTS_TOPIC, Mm2Config, Mm2Process, SOURCE_ALIAS, remote_topic,
};
use e2e::{Listener, clusters, unique_name};

const PARTITIONS: u32 = 2;
/// Records per partition before the group's commit, and again after it.
const RECORDS: u32 = 20;
/// Where the source group stands on each partition when the source fails: it
/// has consumed the first batch, not the second.
const COMMITTED: [(i32, i64); 2] = [(0, 20), (1, 20)];
const STARTUP_BUDGET: Duration = Duration::from_secs(120);

/// Polls `read` about once a second until it returns `Some`, for at most `budget`.
fn wait_for<T>(what: &str, budget: Duration, mut read: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = read() {
            return value;
        }
        assert!(started.elapsed() < budget, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn mm2_and_mm2_checkpoint_on_one_file_checkpoint_once_and_a_failed_over_consumer_loses_nothing() {
    let c = clusters();
    let java = helpers();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("switchover");
    let group = unique_name("switchover-group");
    let remote = remote_topic(&topic);

    ok(
        java.produce(source, &topic, PARTITIONS, RECORDS),
        "producing to the source",
    );

    // The one file: MM2's test configuration with its checkpointing handed
    // over, and group offset sync on (which only we act on now).
    let mut config = Mm2Config::new(&topic, &group).without_checkpoints();
    config.extra.push((
        "source->target.sync.group.offsets.enabled".into(),
        "true".into(),
    ));
    let mut mm2 = ok(
        Mm2Process::start_replicating(c, &config, STARTUP_BUDGET),
        "starting MirrorMaker 2 and its replication task",
    );
    let file = mm2.properties_file();
    ok(
        mm2.wait_for_offset_syncs(&topic, PARTITIONS, i64::from(RECORDS) - 1, STARTUP_BUDGET),
        "waiting for MM2's offset syncs up to the last record",
    );
    // The group consumed the first batch; a second one is still unread when
    // the source is lost. MM2 replicates it too.
    commit(&group, &topic, &COMMITTED);
    ok(
        java.produce(source, &topic, PARTITIONS, RECORDS),
        "producing the unread batch",
    );
    ok(
        mm2.wait_for_offset_syncs(
            &topic,
            PARTITIONS,
            2 * i64::from(RECORDS) - 1,
            STARTUP_BUDGET,
        ),
        "waiting for MM2's offset syncs up to the unread batch's last record",
    );

    // `validate` on the same file says the flow is ours, and why.
    let validate = e2e::binary::mm2(
        &["validate", "--config", file.to_str().expect("utf-8 path")],
        Duration::from_secs(30),
    );
    let report = String::from_utf8_lossy(&validate.stdout);
    assert!(validate.status.success(), "validate failed: {report}");
    assert!(
        report.contains("checkpointed flows = source->target")
            && report.contains("source->target.emit.checkpoints.enabled (line"),
        "validate must name the flow and the key handing it over:\n{report}"
    );

    // MM2 refused its checkpoint connector and, three emission intervals
    // after the syncs, has written no checkpoint for the committed group.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        mm2.log_text().contains(CHECKPOINTS_REFUSED_LOG),
        "MM2 must refuse its checkpoint connector; end of its log:\n{}",
        mm2.log_tail(60)
    );
    let ours_only = |cps: Vec<CheckpointRecord>| -> Vec<CheckpointRecord> {
        cps.into_iter().filter(|cp| cp.group == group).collect()
    };
    // The checkpoints topic may not exist yet (MM2 did not create it): no
    // record then either.
    let before = java
        .checkpoints(target, CHECKPOINTS_TOPIC)
        .map(ours_only)
        .unwrap_or_default();
    assert!(before.is_empty(), "MM2 wrote checkpoints: {before:?}");

    // Our daemon on the same file.
    let dir = test_dir(&group);
    let mut daemon = Daemon::start(&file, &dir.join("daemon.log"));
    let synced: BTreeMap<i32, i64> = wait_for(
        "the target group's offsets synced by mm2-checkpoint",
        Duration::from_secs(60),
        || {
            daemon.assert_running();
            let offsets: Vec<GroupOffset> = java.group_offsets(target, &group).ok()?;
            let by_partition: BTreeMap<i32, i64> = offsets
                .into_iter()
                .filter(|o| o.topic == remote)
                .map(|o| (o.partition, o.offset))
                .collect();
            (by_partition.len() == PARTITIONS as usize).then_some(by_partition)
        },
    );
    let checkpoints = ours_only(ok(
        java.checkpoints(target, CHECKPOINTS_TOPIC),
        "reading the checkpoints with MM2's decoder",
    ));
    let status = daemon.sigterm();
    assert!(status.success(), "the daemon exited with {status}");

    // Still no checkpoint task in MM2: every checkpoint is ours.
    assert_eq!(
        mm2.checkpoint_tasks_created(),
        0,
        "MM2 created a checkpoint task; end of its log:\n{}",
        mm2.log_tail(60)
    );
    let checkpointed: BTreeMap<i32, i64> = checkpoints
        .iter()
        .map(|cp| (cp.partition, cp.upstream))
        .collect();
    assert_eq!(
        checkpointed,
        COMMITTED.into_iter().collect::<BTreeMap<_, _>>(),
        "our checkpoints carry the source group's commits: {checkpoints:?}"
    );

    // The failed-over consumer: Kafka's own RemoteClusterUtils and the synced
    // target group must agree, and from that position on the target holds
    // every source record the group had not consumed yet.
    let translated: BTreeMap<i32, i64> = ok(
        java.translate_offsets(target, SOURCE_ALIAS, &group, Duration::from_secs(20)),
        "RemoteClusterUtils.translateOffsets",
    )
    .into_iter()
    .map(|((t, p), offset)| {
        assert_eq!(t, remote);
        (p, offset)
    })
    .collect();
    assert_eq!(translated, synced, "translateOffsets vs the synced group");
    let upstream = ok(
        java.read_records(source, &topic),
        "reading the source topic",
    );
    let replicated = ok(
        java.read_records(target, &remote),
        "reading the replicated topic",
    );
    for (partition, committed) in COMMITTED {
        let resume_at = synced[&partition];
        let unread: Vec<(&str, &str)> = upstream
            .iter()
            .filter(|r| r.partition == partition && r.offset >= committed)
            .map(|r| (r.key.as_str(), r.value.as_str()))
            .collect();
        let resumed: Vec<(&str, &str)> = replicated
            .iter()
            .filter(|r| r.partition == partition && r.offset >= resume_at)
            .map(|r| (r.key.as_str(), r.value.as_str()))
            .collect();
        assert_eq!(unread.len(), RECORDS as usize);
        // Every unread source record, in order, from the resume position on
        // (a replayed duplicate in between would be allowed).
        let mut rest = resumed.iter();
        for record in &unread {
            assert!(
                rest.any(|r| r == record),
                "partition {partition}: resuming at target offset {resume_at} loses {record:?}"
            );
        }
        eprintln!(
            "switchover: partition {partition}: source commit {committed}, target resume \
             {resume_at}, {} records from there, {} unread on the source",
            resumed.len(),
            unread.len()
        );
    }

    // The same flow as a connector-style configuration: the checkpoint
    // connector configuration MM2's own MirrorMakerConfig builds from the file,
    // as Connect REST JSON, gives the same offsets through `translate`.
    let mut dump = java.command("org.apache.kafka.connect.mirror.CheckpointSettings");
    dump.arg("--connector").arg(&file);
    let dumped = e2e::process::output_within(&mut dump, Duration::from_secs(60))
        .expect("run CheckpointSettings");
    let prefix = format!("{}\tsource->target\tconnector\t", file.display());
    let connector: BTreeMap<String, String> = String::from_utf8_lossy(&dumped.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix)?.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert!(
        connector.contains_key("source.cluster.bootstrap.servers"),
        "no connector configuration: {}",
        String::from_utf8_lossy(&dumped.stderr)
    );
    let json = dir.join("checkpoint-connector.json");
    std::fs::write(
        &json,
        serde_json::json!({"name": "MirrorCheckpointConnector", "config": connector}).to_string(),
    )
    .expect("write the connector JSON");
    let translate = e2e::binary::mm2(
        &[
            "translate",
            "--config-format",
            "connector",
            "--flow",
            "source->target",
            "--group",
            &group,
            "--format",
            "json",
            json.to_str().expect("utf-8 path"),
        ],
        Duration::from_secs(60),
    );
    assert!(
        translate.status.success(),
        "translate on the connector JSON failed: {}",
        String::from_utf8_lossy(&translate.stderr)
    );
    let out: serde_json::Value =
        serde_json::from_slice(&translate.stdout).expect("translate prints JSON");
    let from_connector: BTreeMap<i32, i64> = out["groups"][0]["offsets"]
        .as_array()
        .expect("offsets")
        .iter()
        .map(|o| {
            (
                o["partition"].as_i64().expect("partition") as i32,
                o["target_offset"].as_i64().expect("target offset"),
            )
        })
        .collect();
    assert_eq!(from_connector, synced, "translate on the connector config");

    let elapsed = mm2.started().elapsed();
    eprintln!("switchover: MM2 start to the end of the checks: {elapsed:?}");
    drop(mm2);
}
