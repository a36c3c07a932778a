//! SIGKILL (not SIGTERM) of a working daemon, three times at different
//! moments, with source groups committing in between: the checkpoints topic
//! never rewinds, never points past the translation the written syncs
//! justify, and ends correct.

use std::collections::BTreeMap;
use std::time::Duration;

use e2e::faults::{Daemon, assert_sound, latest, translate, wait_for};
use e2e::world::{World, rt};

/// Offset syncs written so far: partition → (upstream, downstream).
type Syncs = BTreeMap<i32, Vec<(i64, i64)>>;

const PARTITIONS: i32 = 2;

/// Step `k`: a sync at upstream `10k` of each partition, then group `exact`
/// committed on the sync and group `between` 5 offsets before it (translated
/// through the previous sync, plus one).
fn step(rt: &tokio::runtime::Runtime, w: &World, syncs: &mut Syncs, k: i64, groups: [&str; 2]) {
    let new: Vec<(i32, i64, i64)> = (0..PARTITIONS)
        .map(|p| (p, 10 * k, 10 * k + 3 + i64::from(p)))
        .collect();
    w.write_syncs(rt, &w.source, &w.syncs_topic(), &new);
    for &(p, up, down) in &new {
        syncs.entry(p).or_default().push((up, down));
    }
    let exact: Vec<(i32, i64)> = (0..PARTITIONS).map(|p| (p, 10 * k)).collect();
    w.commit_source(rt, groups[0], &exact);
    if k > 0 {
        let between: Vec<(i32, i64)> = (0..PARTITIONS).map(|p| (p, 10 * k - 5)).collect();
        w.commit_source(rt, groups[1], &between);
    }
}

#[test]
fn sigkill_and_restart_three_times_never_rewinds_nor_skips_and_ends_correct() {
    let rt = rt();
    let w = World::new(&rt, "sigkill", PARTITIONS);
    let exact = format!("g1-{}", w.topic);
    let between = format!("g2-{}", w.topic);
    let groups = [exact.as_str(), between.as_str()];
    let config = w.properties(&format!("{exact}, {between}"), "");
    let log = w.dir.join("daemon.log");
    let mut syncs = Syncs::new();
    let mut k = 0;
    step(&rt, &w, &mut syncs, k, groups);
    // Kill moments after each start: during startup / the initial read of
    // the syncs, around the first rounds, and well into steady state.
    let moments = [
        Duration::from_millis(300),
        Duration::from_millis(2500),
        Duration::from_millis(6000),
    ];
    let mut emitted_before_kill = Vec::new();
    for moment in moments {
        let mut daemon = Daemon::start(&config, &log);
        let started = std::time::Instant::now();
        // Keep committing while the daemon works, up to the kill moment.
        while started.elapsed() < moment {
            std::thread::sleep(Duration::from_millis(400).min(moment));
            k += 1;
            step(&rt, &w, &mut syncs, k, groups);
        }
        daemon.assert_running();
        daemon.kill9();
        emitted_before_kill.push(w.checkpoints(&rt).len());
        // Another step while no daemon runs.
        k += 1;
        step(&rt, &w, &mut syncs, k, groups);
    }
    // The fourth start runs to the end.
    let mut daemon = Daemon::start(&config, &log);
    k += 1;
    step(&rt, &w, &mut syncs, k, groups);
    let want: BTreeMap<(String, i32), (i64, i64)> = (0..PARTITIONS)
        .flat_map(|p| {
            let s = &syncs[&p];
            let e = 10 * k;
            let b = 10 * k - 5;
            [
                ((exact.clone(), p), (e, translate(s, e).expect("exact"))),
                ((between.clone(), p), (b, translate(s, b).expect("between"))),
            ]
        })
        .collect();
    wait_for("the final checkpoints", Duration::from_secs(60), || {
        latest(&w.checkpoints(&rt)) == want
    });
    daemon.assert_running();
    let cps = w.checkpoints(&rt);
    let checked = assert_sound(&cps, &syncs);
    // The kills landed while work was being done: checkpoints were emitted
    // by the killed daemons too (the test would otherwise only test startup).
    assert!(
        emitted_before_kill.last().copied().unwrap_or(0) > 0,
        "no checkpoint before the last kill: {emitted_before_kill:?}"
    );
    let panics = daemon.log_text().matches("panicked").count();
    assert_eq!(panics, 0, "{}", daemon.log_text());
    eprintln!(
        "sigkill: {} steps, {checked} checkpoint records checked, emitted before each kill: {emitted_before_kill:?}",
        k
    );
}
