//! Several instances of one configuration with membership on
//! (docs/membership.md), as real processes on the real test clusters: one
//! owner writes, the others stand by ready; SIGKILL of the owner hands the
//! flow over; an owner paused (SIGSTOP) past its session timeout is replaced
//! and, woken up (SIGCONT), writes nothing and rejoins as a standby. Across
//! it all the checkpoints never go backwards nor past what the syncs justify,
//! and the target group is never rewound.

mod common;
mod fault_support;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{World, rt};
use fault_support::{Daemon, assert_sound, ensure_consumer_offsets, latest, translate, wait_for};

const SESSION_MS: u64 = 6000;

/// The metric of `role` of the world's flow.
fn role(w: &World, role: &str) -> String {
    format!(
        "mm2_checkpoint_membership_role{{flow=\"{}->{}\",role=\"{role}\"}}",
        w.s, w.t
    )
}

fn is(d: &Daemon, w: &World, r: &str) -> bool {
    d.metric(&role(w, r)) == Some(1.0)
}

/// The index of the one owner among `daemons` once every one of them is
/// either the owner or a standby; panics after `timeout`.
fn settled_owner(daemons: &[&Daemon], w: &World, timeout: Duration) -> usize {
    let mut owner = None;
    wait_for("one owner, the others standing by", timeout, || {
        let owners: Vec<usize> = (0..daemons.len())
            .filter(|&i| is(daemons[i], w, "owner"))
            .collect();
        let standbys = (0..daemons.len())
            .filter(|&i| is(daemons[i], w, "standby"))
            .count();
        owner = owners.first().copied();
        owners.len() == 1 && standbys == daemons.len() - 1
    });
    owner.expect("an owner")
}

fn signal(d: &Daemon, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &d.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(ok.success(), "kill {sig} failed");
}

#[test]
fn one_owner_writes_and_the_flow_survives_kill_and_pause_of_its_owner() {
    let rt = rt();
    let w = World::new(&rt, "members", 1);
    ensure_consumer_offsets(&rt, &w);
    let group = format!("g-{}", w.topic);
    let mut syncs: Vec<(i64, i64)> = Vec::new();
    // A sync at 10k (downstream 10k + 3), then the group commits on it.
    let step = |syncs: &mut Vec<(i64, i64)>, k: i64| {
        w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 10 * k, 10 * k + 3)]);
        syncs.push((10 * k, 10 * k + 3));
        w.commit_source(&rt, &group, &[(0, 10 * k)]);
        (10 * k, 10 * k + 3)
    };
    let config = w.properties(
        &group,
        &format!(
            "sync.group.offsets.enabled = true\n\
             mm2-checkpoint.membership.enabled = true\n\
             mm2-checkpoint.membership.session.timeout.ms = {SESSION_MS}\n\
             mm2-checkpoint.membership.heartbeat.interval.ms = 1000\n"
        ),
    );
    let mut want = step(&mut syncs, 1);
    let logs: Vec<_> = (0..3)
        .map(|i| w.dir.join(format!("member-{i}.log")))
        .collect();
    let mut daemons: Vec<Option<Daemon>> = logs
        .iter()
        .map(|l| Some(Daemon::start(&config, l)))
        .collect();
    let live = |ds: &[Option<Daemon>]| -> Vec<usize> {
        (0..ds.len()).filter(|&i| ds[i].is_some()).collect()
    };

    // 1. Three instances: one owner, two ready standbys, the checkpoint lands.
    let all: Vec<&Daemon> = daemons.iter().flatten().collect();
    let first = settled_owner(&all, &w, Duration::from_secs(60));
    for d in &all {
        wait_for("every instance ready", Duration::from_secs(30), || {
            d.ready() == Some(200)
        });
    }
    wait_for("the first checkpoint", Duration::from_secs(60), || {
        latest(&w.checkpoints(&rt)).get(&(group.clone(), 0)) == Some(&want)
    });
    for (i, d) in all.iter().enumerate() {
        let took = d.metric_sum(&format!(
            "mm2_checkpoint_membership_takeovers_total{{flow=\"{}->{}\"}}",
            w.s, w.t
        ));
        assert_eq!(
            took,
            if i == first { 1.0 } else { 0.0 },
            "takeovers of instance {i}"
        );
    }

    // 2. SIGKILL the owner: another takes over; time to the next checkpoint.
    daemons[first].take().expect("owner").kill9();
    let killed = Instant::now();
    want = step(&mut syncs, 2);
    wait_for(
        "a checkpoint after the owner was killed",
        Duration::from_secs(60),
        || latest(&w.checkpoints(&rt)).get(&(group.clone(), 0)) == Some(&want),
    );
    let takeover = killed.elapsed();
    eprintln!(
        "SIGKILL of the owner to the next checkpoint: {takeover:?} (session timeout {SESSION_MS} ms)"
    );
    let alive = live(&daemons);
    let remaining: Vec<&Daemon> = alive
        .iter()
        .map(|&i| daemons[i].as_ref().unwrap())
        .collect();
    let second = alive[settled_owner(&remaining, &w, Duration::from_secs(60))];

    // 3. SIGSTOP the owner past its session timeout: the last one takes over.
    let paused = daemons[second].as_ref().unwrap();
    signal(paused, "-STOP");
    want = step(&mut syncs, 3);
    let third = *alive.iter().find(|&&i| i != second).unwrap();
    wait_for(
        "the third instance to take over",
        Duration::from_secs(60),
        || is(daemons[third].as_ref().unwrap(), &w, "owner"),
    );
    wait_for(
        "a checkpoint after the owner was paused",
        Duration::from_secs(60),
        || latest(&w.checkpoints(&rt)).get(&(group.clone(), 0)) == Some(&want),
    );
    // Wake it up: it must not write, and it rejoins as a standby.
    let before_wake = w.checkpoints(&rt).len();
    signal(daemons[second].as_ref().unwrap(), "-CONT");
    let woken = daemons[second].as_ref().unwrap();
    wait_for(
        "the woken instance to stand by",
        Duration::from_secs(60),
        || is(woken, &w, "standby"),
    );
    assert!(is(daemons[third].as_ref().unwrap(), &w, "owner"));
    want = step(&mut syncs, 4);
    wait_for(
        "a checkpoint after the wake-up",
        Duration::from_secs(60),
        || latest(&w.checkpoints(&rt)).get(&(group.clone(), 0)) == Some(&want),
    );
    let woken_log = std::fs::read_to_string(&logs[second]).unwrap_or_default();
    assert!(!woken_log.contains("panicked"), "{woken_log}");

    // 4. Across it all: never backwards, never past the syncs, and the
    //    target group (no members) synced without a rewind.
    let cps = w.checkpoints(&rt);
    assert!(cps.len() > before_wake);
    let by_partition = BTreeMap::from([(0, syncs.clone())]);
    assert_sound(&cps, &by_partition);
    wait_for("the target group synced", Duration::from_secs(60), || {
        w.target_offsets(&rt, &group).get(&0) == Some(&want.1)
    });
    assert_eq!(translate(&syncs, want.0), Some(want.1));
    for d in daemons.iter_mut().flatten() {
        d.assert_running();
    }
}

/// What membership costs one instance at start-up: the time from start to
/// the first checkpoint without and with it (printed for docs/benchmarks.md,
/// not asserted; the test clusters run `group.initial.rebalance.delay.ms=0`).
#[test]
fn a_single_instance_with_membership_owns_the_flow_and_checkpoints() {
    let rt = rt();
    for membership in [false, true] {
        let w = World::new(&rt, "single", 1);
        ensure_consumer_offsets(&rt, &w);
        let group = format!("g-{}", w.topic);
        w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 10, 13)]);
        w.commit_source(&rt, &group, &[(0, 10)]);
        let config = w.properties(
            &group,
            &format!("mm2-checkpoint.membership.enabled = {membership}\n"),
        );
        let started = Instant::now();
        let d = Daemon::start(&config, &w.dir.join("daemon.log"));
        wait_for("the first checkpoint", Duration::from_secs(60), || {
            latest(&w.checkpoints(&rt)).get(&(group.clone(), 0)) == Some(&(10, 13))
        });
        eprintln!(
            "membership {membership}: start to first checkpoint {:?}",
            started.elapsed()
        );
        if membership {
            assert!(is(&d, &w, "owner"));
        } else {
            assert_eq!(d.metric(&role(&w, "owner")), None, "no membership series");
        }
    }
}
