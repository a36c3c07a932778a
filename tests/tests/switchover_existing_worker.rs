//! The switch-over runbook's path for an MM2 worker that has run its checkpoint
//! connector (docs/operations.md, "Switching over from MM2's checkpointing",
//! steps 2a, 2b and 3), against the real MirrorMaker 2 4.1.1 in dedicated mode:
//! MM2 checkpoints a group; it is restarted with `groups.exclude=.*` until its
//! stored checkpoint task is gone; then restarted on the shared file, which
//! hands the flow over with `emit.checkpoints.enabled=false`; it must start no
//! checkpoint task, and our daemon on that file continues the checkpoints.

use std::time::Duration;

use e2e::interop::{commit, ok, run_once};
use e2e::java::helpers;
use e2e::mm2::{
    CHECKPOINTS_REFUSED_LOG, CHECKPOINTS_TOPIC, Checkpoints, Mm2Config, Mm2Process,
    SOURCE_TASK_READY_LOG,
};
use e2e::{Listener, clusters, unique_name};

const PARTITIONS: u32 = 2;
const RECORDS: u32 = 20;
const BUDGET: Duration = Duration::from_secs(120);
const GRACE: Duration = Duration::from_secs(30);

#[test]
fn a_worker_that_ran_mm2s_checkpoints_hands_over_by_the_runbook_with_no_second_writer() {
    let c = clusters();
    let java = helpers();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("handover");
    let group = unique_name("handover-group");

    ok(
        java.produce(source, &topic, PARTITIONS, RECORDS),
        "producing to the source",
    );
    commit(&group, &topic, &[(0, 10), (1, 10)]);

    // Before: MM2 checkpoints the group itself.
    let config = Mm2Config::new(&topic, &group);
    let mut mm2 = ok(
        Mm2Process::start_replicating(c, &config, BUDGET),
        "starting MirrorMaker 2 with its checkpoint connector",
    );
    ok(
        mm2.wait_for_checkpoints(&group, BUDGET, |cps| !cps.is_empty()),
        "waiting for MM2's own checkpoints",
    );
    ok(mm2.stop(GRACE), "stopping MM2");

    // Step 2a: a valid configuration without tasks replaces the stored one.
    let mut mm2 = ok(
        Mm2Process::start(c, &config.clone().with_checkpoints(Checkpoints::NoGroups)),
        "restarting MM2 with groups.exclude=.*",
    );
    ok(
        mm2.wait_for_checkpoint_tasks_gone(BUDGET),
        "waiting for MM2's stored checkpoint task to stop",
    );
    ok(mm2.stop(GRACE), "stopping MM2");

    // Step 2b: the shared file; MM2 refuses the checkpoint configuration and
    // keeps the stored one, which has no tasks.
    let mut mm2 = ok(
        Mm2Process::start(c, &config.clone().with_checkpoints(Checkpoints::Refused)),
        "restarting MM2 on the shared file",
    );
    ok(
        mm2.wait_for_log(SOURCE_TASK_READY_LOG, BUDGET),
        "waiting for MM2's replication task",
    );
    ok(
        mm2.wait_for_log(CHECKPOINTS_REFUSED_LOG, BUDGET),
        "waiting for MM2 to refuse its checkpoint connector",
    );
    // Three emission intervals in which a checkpoint task would have started.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        mm2.checkpoint_tasks_created(),
        0,
        "MM2 started a checkpoint task on the shared file; end of its log:\n{}",
        mm2.log_tail(80)
    );

    // Step 3: ours on the same file continues from MM2's checkpoints.
    commit(&group, &topic, &[(0, 20), (1, 20)]);
    let log = run_once(&mm2.properties_file());
    assert!(log.contains("restored checkpoints"), "{log}");
    let latest: std::collections::BTreeMap<i32, i64> = ok(
        java.checkpoints(target, CHECKPOINTS_TOPIC),
        "reading the checkpoints",
    )
    .into_iter()
    .filter(|cp| cp.group == group)
    .map(|cp| (cp.partition, cp.upstream))
    .collect();
    assert_eq!(
        latest,
        [(0, 20), (1, 20)].into_iter().collect(),
        "our checkpoints follow the new commits"
    );
    assert_eq!(
        mm2.checkpoint_tasks_created(),
        0,
        "MM2 started a checkpoint task; end of its log:\n{}",
        mm2.log_tail(80)
    );
    ok(mm2.check_running(), "MM2 must still run");
}
