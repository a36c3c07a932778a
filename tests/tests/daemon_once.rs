//! `run --once` end to end: checkpoints emitted with MM2's bytes, monotonic
//! across restarts, none before offset syncs exist, and both directions of a
//! bidirectional pair in one process.

use e2e::binary::run_once;
use e2e::world::{World, policy, rt};
use mm2_checkpoint::driver::FlowCluster;

#[test]
fn run_once_emits_translated_checkpoints_with_mm2_bytes() {
    let rt = rt();
    let w = World::new(&rt, "emit", 2);
    // Downstream offsets lag upstream by 3 on partition 0, by 10 on partition 1.
    let group = w.seed(
        &rt,
        &[(0, 0, 3), (0, 10, 13), (1, 0, 10), (1, 50, 60)],
        &[(0, 10), (1, 50)],
    );
    let config = w.properties(&group, "");
    run_once(&config);
    let cps = w.checkpoints(&rt);
    let mut got: Vec<_> = cps
        .iter()
        .map(|c| {
            (
                c.key.group.clone(),
                c.key.topic_partition.topic.clone(),
                c.key.topic_partition.partition,
                c.upstream_offset,
                c.downstream_offset,
                c.metadata.clone(),
            )
        })
        .collect();
    got.sort();
    let remote = w.remote_topic();
    assert_eq!(
        got,
        vec![
            (
                group.clone(),
                remote.clone(),
                0,
                10,
                13,
                "md-10".to_string()
            ),
            (
                group.clone(),
                remote.clone(),
                1,
                50,
                60,
                "md-50".to_string()
            ),
        ]
    );
}

#[test]
fn a_second_run_restores_the_store_and_never_repeats_or_rewinds() {
    let rt = rt();
    let w = World::new(&rt, "restart", 1);
    let group = w.seed(&rt, &[(0, 0, 5), (0, 100, 105)], &[(0, 100)]);
    let config = w.properties(&group, "");
    run_once(&config);
    assert_eq!(w.checkpoints(&rt).len(), 1);
    // Same commit: the restored checkpoint suppresses a repeat.
    run_once(&config);
    let cps = w.checkpoints(&rt);
    assert_eq!(cps.len(), 1, "a restart repeated a checkpoint: {cps:?}");
    // The group moves on: the next checkpoint is higher downstream.
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 200, 205)]);
    w.commit_source(&rt, &group, &[(0, 200)]);
    run_once(&config);
    let downs: Vec<i64> = w
        .checkpoints(&rt)
        .iter()
        .map(|c| c.downstream_offset)
        .collect();
    assert_eq!(downs, vec![105, 205]);
}

#[test]
fn without_an_offset_syncs_topic_run_once_fails_and_emits_nothing() {
    let rt = rt();
    let w = World::new(&rt, "nosyncs", 1);
    let group = format!("g-{}", w.topic);
    w.commit_source(&rt, &group, &[(0, 10)]);
    let config = w.properties(&group, "admin.timeout.ms = 3000");
    let out = e2e::binary::mm2(
        &["run", "--once", "--config", config.to_str().unwrap()],
        std::time::Duration::from_secs(60),
    );
    assert!(
        !out.status.success(),
        "run --once succeeded without offset syncs"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&w.syncs_topic()),
        "the error does not name the offset-syncs topic:\n{stderr}"
    );
    assert!(w.checkpoints(&rt).is_empty());
}

#[test]
fn offset_syncs_on_the_target_cluster_are_read_there() {
    let rt = rt();
    let w = World::new(&rt, "loctarget", 1);
    let topic = policy().offset_syncs_topic(&w.s);
    w.write_syncs(&rt, &w.target, &topic, &[(0, 0, 7), (0, 20, 27)]);
    let group = format!("g-{}", w.topic);
    w.commit_source(&rt, &group, &[(0, 20)]);
    let config = w.properties(&group, "offset-syncs.topic.location = target");
    run_once(&config);
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(group, w.remote_topic(), 0, 20, 27)]);
}

#[test]
fn identity_policy_checkpoints_keep_the_topic_name() {
    let rt = rt();
    let w = World::identity(&rt, "identity", 1);
    let group = w.seed(&rt, &[(0, 0, 1), (0, 40, 41)], &[(0, 40)]);
    let config = w.properties(
        &group,
        "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
    );
    run_once(&config);
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(group, w.topic.clone(), 0, 40, 41)]);
}

#[test]
fn groups_excluded_by_the_filter_get_no_checkpoint() {
    let rt = rt();
    let w = World::new(&rt, "filter", 1);
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 0, 2), (0, 30, 32)]);
    let kept = format!("keep-{}", w.topic);
    let dropped = format!("drop-{}", w.topic);
    w.commit_source(&rt, &kept, &[(0, 30)]);
    w.commit_source(&rt, &dropped, &[(0, 30)]);
    let config = w.properties(
        &format!("{kept}, {dropped}"),
        &format!("groups.exclude = {dropped}"),
    );
    run_once(&config);
    let groups: Vec<String> = w
        .checkpoints(&rt)
        .iter()
        .map(|c| c.key.group.clone())
        .collect();
    assert_eq!(groups, vec![kept]);
}

#[test]
fn malformed_offset_sync_records_are_skipped_and_logged_once() {
    let rt = rt();
    let w = World::new(&rt, "malformed", 1);
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 0, 3)]);
    // Two truncated values and a value with trailing bytes, between good syncs.
    w.write_raw(
        &rt,
        &w.source,
        &w.syncs_topic(),
        &[(b"\x00\x01t", b"\x00"), (b"\x00\x01t", b"\x01\x02")],
    );
    let group = w.seed(&rt, &[(0, 10, 13)], &[(0, 10)]);
    let out = run_once(&w.properties(&group, ""));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("skipping a corrupt record").count(),
        1,
        "expected one log line for two corrupt records:\n{stderr}"
    );
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(group, w.remote_topic(), 0, 10, 13)]);
}

#[test]
fn a_group_behind_every_sync_gets_no_checkpoint() {
    let rt = rt();
    let w = World::new(&rt, "tooold", 1);
    let group = w.seed(&rt, &[(0, 50, 53)], &[(0, 10)]);
    run_once(&w.properties(&group, ""));
    assert!(w.checkpoints(&rt).is_empty());
}

#[test]
fn one_process_runs_both_directions_of_a_bidirectional_pair() {
    use mm2_checkpoint::core::{CommittedOffset, TopicPartition};

    let rt = rt();
    // Forward flow s->t: the world's topic on the source cluster, mirrored on the target.
    let w = World::new(&rt, "bidi", 1);
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 0, 2), (0, 40, 42)]);
    let forward_group = format!("fwd-{}", w.topic);
    w.commit_source(&rt, &forward_group, &[(0, 40)]);

    // Reverse flow t->s: a topic that lives on the target cluster, mirrored on the
    // source as `<t>.<topic>`, with its offset syncs on the target (location=source
    // of that flow) and a group committed on the target.
    let back = format!("back_{}", w.topic);
    let back_remote = policy().format_remote_topic(&w.t, &back);
    let back_syncs = policy().offset_syncs_topic(&w.s);
    let back_group = format!("rev-{}", w.topic);
    rt.block_on(async {
        w.target
            .create_topic(&back, 1, 1, &[])
            .await
            .expect("create reverse topic");
        w.source
            .create_topic(&back_remote, 1, 1, &[])
            .await
            .expect("create reverse mirror");
        w.target
            .create_topic(&back_syncs, 1, 1, &[("cleanup.policy", "compact")])
            .await
            .expect("create reverse syncs topic");
        let records = e2e::world::sync_records(&back, &[(0, 0, 7), (0, 25, 32)]);
        w.target
            .produce(&back_syncs, 0, &records)
            .await
            .expect("produce reverse syncs");
        let mut commit = std::collections::BTreeMap::new();
        commit.insert(TopicPartition::new(&back, 0), CommittedOffset::new(25, ""));
        w.target
            .commit_group_offsets(&back_group, &commit)
            .await
            .expect("commit reverse group");
    });

    let config = w.properties(
        &format!("{forward_group}, {back_group}"),
        &format!("{t}->{s}.enabled = true", t = w.t, s = w.s),
    );
    run_once(&config);

    // Forward checkpoints land on the target, reverse ones on the source.
    let forward: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(
        forward,
        vec![(forward_group.clone(), w.remote_topic(), 0, 40, 42)]
    );
    let reverse_topic = policy().checkpoints_topic(&w.t);
    let reverse: Vec<_> = e2e::world::checkpoints_in(&rt, &w.source, &reverse_topic)
        .iter()
        .map(e2e::world::tuple)
        .collect();
    assert_eq!(reverse, vec![(back_group, back_remote, 0, 25, 32)]);
}
