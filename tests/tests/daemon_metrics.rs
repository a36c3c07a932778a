//! Daemon mode: follows new offset syncs, serves metrics and readiness, and
//! exits 0 on SIGTERM.

use std::time::Duration;

use e2e::faults::{Daemon, free_port, get, metric, wait_for};
use e2e::world::{World, rt};

#[test]
fn the_daemon_follows_new_syncs_serves_metrics_and_exits_0_on_sigterm() {
    let rt = rt();
    let w = World::new(&rt, "daemon", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let config = w.properties(&group, "");
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    let addr = daemon.addr.clone();
    let flow = format!("{}->{}", w.s, w.t);
    let emitted = format!("mm2_checkpoint_checkpoints_emitted_total{{flow=\"{flow}\"}}");
    wait_for("the first checkpoint", Duration::from_secs(60), || {
        daemon.metric(&emitted) == Some(1.0)
    });
    assert_eq!(daemon.ready(), Some(200));
    // A new sync and a new commit arrive while running: followed, emitted.
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 20, 23)]);
    w.commit_source(&rt, &group, &[(0, 20)]);
    // The commit follower may see the commit before the new sync is read:
    // then it checkpoints 14 (through the older sync) and 23 once the sync
    // arrives.
    wait_for(
        "the checkpoint of the new sync",
        Duration::from_secs(60),
        || w.checkpoints(&rt).last().map(|c| c.downstream_offset) == Some(23),
    );
    let (_, body) = get(&addr, "/metrics").expect("metrics");
    let syncs_read = format!("mm2_checkpoint_offset_syncs_read_total{{flow=\"{flow}\"}}");
    assert_eq!(metric(&body, &syncs_read), Some(3.0), "{body}");
    assert!(
        body.contains("mm2_checkpoint_round_duration_seconds_count"),
        "{body}"
    );
    // One latency series for the flow (the default granularity).
    let latency = format!("mm2_checkpoint_checkpoint_latency_ms{{flow=\"{flow}\"}} ");
    assert!(body.contains(&latency), "no {latency} in\n{body}");
    assert_eq!(
        body.lines()
            .filter(|l| l.starts_with("mm2_checkpoint_checkpoint_latency_ms{"))
            .count(),
        1,
        "{body}"
    );
    let downs: Vec<i64> = w
        .checkpoints(&rt)
        .iter()
        .map(|c| c.downstream_offset)
        .collect();
    assert!(downs == [13, 23] || downs == [13, 14, 23], "{downs:?}");
    assert_eq!(daemon.metric(&emitted), Some(downs.len() as f64));
    assert_eq!(daemon.sigterm().code(), Some(0));
}

#[test]
fn the_daemon_waits_for_a_missing_offset_syncs_topic_and_is_not_ready_meanwhile() {
    let rt = rt();
    let w = World::new(&rt, "waitsyncs", 1);
    let group = format!("g-{}", w.topic);
    w.commit_source(&rt, &group, &[(0, 10)]);
    let config = w.properties(&group, "");
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    let addr = daemon.addr.clone();
    wait_for("the metrics endpoint", Duration::from_secs(30), || {
        get(&addr, "/healthz").is_some()
    });
    // A few startup attempts fail: not ready, and nothing is emitted.
    std::thread::sleep(Duration::from_secs(3));
    let (status, body) = get(&addr, "/readyz").expect("readyz");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("initial read"), "{body}");
    assert!(w.checkpoints(&rt).is_empty());
    // MM2's source connector starts writing syncs: the daemon picks them up.
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 0, 3), (0, 10, 13)]);
    wait_for("readiness", Duration::from_secs(60), || {
        daemon.ready() == Some(200)
    });
    wait_for("a checkpoint", Duration::from_secs(30), || {
        !w.checkpoints(&rt).is_empty()
    });
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(group, w.remote_topic(), 0, 10, 13)]);
}

#[test]
fn an_unreachable_target_keeps_the_daemon_up_but_not_ready_and_sigterm_still_exits_0() {
    let rt = rt();
    let w = World::new(&rt, "unreachable", 1);
    let dead = free_port();
    let text = format!(
        "clusters = {s}, {t}\n\
         {s}.bootstrap.servers = {sb}\n\
         {t}.bootstrap.servers = 127.0.0.1:{dead}\n\
         {s}->{t}.enabled = true\n\
         admin.timeout.ms = 1000\n",
        s = w.s,
        t = w.t,
        sb = e2e::clusters()
            .source()
            .bootstrap
            .get(e2e::Listener::Plaintext),
    );
    let config = w.dir.join("mm2-unreachable.properties");
    std::fs::write(&config, text).expect("write config");
    let mut daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    let addr = daemon.addr.clone();
    wait_for("the metrics endpoint", Duration::from_secs(30), || {
        get(&addr, "/healthz").is_some()
    });
    std::thread::sleep(Duration::from_secs(4));
    daemon.assert_running();
    assert_eq!(get(&addr, "/healthz").map(|(s, _)| s), Some(200));
    let (status, body) = get(&addr, "/readyz").expect("readyz");
    assert_eq!(status, 503);
    assert!(body.contains(&format!("cluster {}", w.t)), "{body}");
    // The family has a zero series per cluster from start-up: the errors are
    // the other series of the target's cluster.
    let errors = format!("mm2_checkpoint_request_errors_total{{cluster=\"{}\"", w.t);
    assert!(
        daemon.metric_sum(&errors) > 0.0,
        "{:?}",
        get(&addr, "/metrics")
    );
    assert_eq!(daemon.sigterm().code(), Some(0));
}

#[test]
fn a_group_created_while_running_is_picked_up_at_the_next_refresh() {
    let rt = rt();
    let w = World::new(&rt, "refresh", 1);
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 0, 3), (0, 10, 13)]);
    let first = format!("a-{}", w.topic);
    let later = format!("b-{}", w.topic);
    w.commit_source(&rt, &first, &[(0, 10)]);
    let config = w.properties(
        &format!("{first}, {later}"),
        "refresh.groups.interval.seconds = 1",
    );
    let _daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for(
        "the first group's checkpoint",
        Duration::from_secs(60),
        || w.checkpoints(&rt).len() == 1,
    );
    w.commit_source(&rt, &later, &[(0, 10)]);
    wait_for(
        "the new group's checkpoint",
        Duration::from_secs(60),
        || w.checkpoints(&rt).len() == 2,
    );
    // The rebuilt store still knows the first group's checkpoint: no repeat.
    std::thread::sleep(Duration::from_secs(3));
    let groups: Vec<String> = w
        .checkpoints(&rt)
        .iter()
        .map(|c| c.key.group.clone())
        .collect();
    assert_eq!(groups, vec![first, later]);
}
