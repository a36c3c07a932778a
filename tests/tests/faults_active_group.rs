//! A target group turning active between the daemon's group-state check and
//! its commit: under a loop of joins and leaves of a real Kafka consumer, no
//! commit ever lands while the group has members, and refused commits are
//! counted.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use e2e::faults::{Daemon, wait_for};
use e2e::world::{ConsoleConsumer, World, rt};
use mm2_checkpoint::driver::FlowCluster;

/// Kafka's console consumer in `group` on the target, not committing, with
/// a 6 s session timeout; SIGKILLed on drop.
fn join(w: &World, group: &str) -> ConsoleConsumer {
    ConsoleConsumer::join(
        w,
        group,
        &["enable.auto.commit=false", "session.timeout.ms=6000"],
    )
}

fn state(rt: &tokio::runtime::Runtime, w: &World, group: &str) -> (String, usize) {
    let d = rt
        .block_on(w.target.describe_groups(&[group.to_string()]))
        .expect("describe the target group");
    d.get(group)
        .map(|g| (format!("{:?}", g.state), g.members))
        .unwrap_or_default()
}

#[test]
fn no_commit_lands_in_an_active_target_group_under_joins_and_leaves() {
    let rt = rt();
    let w = World::new(&rt, "activeloop", 1);
    let group = format!("g-{}", w.topic);
    // The group is first committed after the daemon starts, so it must be
    // rediscovered quickly (the default refresh is every 600 s).
    let config = w.properties(
        &group,
        "sync.group.offsets.enabled = true\nrefresh.groups.interval.seconds = 1",
    );
    let log = w.dir.join("daemon.log");
    let mut up = 10_i64;
    let mut syncs = vec![(0, 0, 3)];
    let mut daemon = Daemon::start(&config, &log);
    let mut snapshots_checked = 0;
    let mut moved_while_empty = 0;
    let mut last_seen: BTreeMap<i32, i64> = BTreeMap::new();
    const ROUNDS: usize = 6;
    for round in 0..ROUNDS {
        // Upstream moves on: the daemon wants to commit a new offset.
        syncs.push((0, up, up + 3));
        w.write_syncs(&rt, &w.source, &w.syncs_topic(), &syncs);
        w.commit_source(&rt, &group, &[(0, up)]);
        // Join at a varying delay after the commit, so the join races the
        // daemon's 1 s describe/commit cycle at different phases.
        std::thread::sleep(Duration::from_millis(150 * round as u64));
        let member = join(&w, &group);
        wait_for(
            &format!("round {round}: the consumer to join {group}"),
            Duration::from_secs(120),
            || state(&rt, &w, &group) == ("Stable".to_string(), 1),
        );
        // The group has a member from now until we kill it: its committed
        // offsets must not change meanwhile (the console consumer never
        // commits, so any change is the daemon's).
        let held = w.target_offsets(&rt, &group);
        // Upstream moves on again while the member is there: every round
        // from now on the daemon wants to commit into an active group.
        up += 10;
        syncs.push((0, up, up + 3));
        w.write_syncs(&rt, &w.source, &w.syncs_topic(), &syncs);
        w.commit_source(&rt, &group, &[(0, up)]);
        let watched = Instant::now();
        while watched.elapsed() < Duration::from_secs(4) {
            let (s, members) = state(&rt, &w, &group);
            assert_eq!(members, 1, "round {round}: the member left early ({s})");
            let now = w.target_offsets(&rt, &group);
            assert_eq!(
                now, held,
                "round {round}: a commit landed in {group} while it had a member"
            );
            snapshots_checked += 1;
            std::thread::sleep(Duration::from_millis(250));
        }
        member.leave();
        // The member left: the group is Empty and the
        // daemon may (and should) sync it to the newest translation.
        wait_for(
            &format!("round {round}: {group} to be synced once empty"),
            Duration::from_secs(120),
            || w.target_offsets(&rt, &group).get(&0) == Some(&(up + 3)),
        );
        if w.target_offsets(&rt, &group) != last_seen {
            moved_while_empty += 1;
        }
        last_seen = w.target_offsets(&rt, &group);
        daemon.assert_running();
        up += 10;
    }
    let flow = format!("{}->{}", w.s, w.t);
    let refused = daemon.metric(&format!(
        "mm2_checkpoint_group_syncs_total{{flow=\"{flow}\",outcome=\"skipped_active\"}}"
    ));
    let committed = daemon.metric(&format!(
        "mm2_checkpoint_group_syncs_total{{flow=\"{flow}\",outcome=\"committed\"}}"
    ));
    let raced = daemon
        .log_text()
        .matches("the target group became active; not synced")
        .count();
    eprintln!(
        "active group: {ROUNDS} joins, {snapshots_checked} snapshots while active, \
         {moved_while_empty} syncs while empty, metrics committed={committed:?} \
         skipped_active={refused:?}, commits refused by the broker (raced) = {raced}"
    );
    assert_eq!(
        moved_while_empty, ROUNDS,
        "the daemon did not sync every empty phase"
    );
    assert!(
        refused.unwrap_or(0.0) >= ROUNDS as f64,
        "expected at least one refusal per active phase, got {refused:?}"
    );
}
