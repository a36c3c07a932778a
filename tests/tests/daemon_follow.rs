//! The commit follower end to end (docs/commit-follower.md): with an emission
//! interval of an hour, only the follower can checkpoint a commit made after
//! the first round, so each checkpoint seen here came from
//! `__consumer_offsets`.

use std::time::Duration;

use e2e::faults::{Daemon, SLOW_ROUNDS, mode_metric, wait_for};
use e2e::world::{World, rt};

#[test]
fn a_commit_is_checkpointed_and_synced_without_waiting_for_the_round() {
    let rt = rt();
    let w = World::new(&rt, "follow", 2);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13), (1, 0, 5)], &[(0, 10)]);
    let config = w.properties(
        &group,
        &format!("{SLOW_ROUNDS}\nsync.group.offsets.enabled = true"),
    );
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for(
        "the first round's checkpoint",
        Duration::from_secs(60),
        || w.checkpoints(&rt).len() == 1,
    );
    assert_eq!(daemon.metric(&mode_metric(&w, "follow")), Some(1.0));
    assert_eq!(daemon.metric(&mode_metric(&w, "poll")), Some(0.0));

    // A new commit, and a new sync with a commit on another partition.
    w.commit_source(&rt, &group, &[(0, 12)]);
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(1, 7, 40)]);
    w.commit_source(&rt, &group, &[(1, 7)]);
    wait_for("the followed checkpoints", Duration::from_secs(20), || {
        let latest = e2e::faults::latest(&w.checkpoints(&rt));
        latest.get(&(group.clone(), 0)) == Some(&(12, 14))
            && latest.get(&(group.clone(), 1)) == Some(&(7, 40))
    });
    wait_for("the followed group sync", Duration::from_secs(20), || {
        w.target_offsets(&rt, &group) == [(0, 14), (1, 40)].into()
    });
    // Nothing the core would not have emitted: each checkpoint is a
    // translation of a commit, in order, per partition. The commit on
    // partition 1 may be seen before the new sync is read: then it is first
    // translated through the older sync (1, 0, 5) and again once the sync
    // arrives, which the follower notices without a new commit.
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    let remote = w.remote_topic();
    let mut want = vec![
        (group.clone(), remote.clone(), 0, 10, 13),
        (group.clone(), remote.clone(), 0, 12, 14),
        (group.clone(), remote.clone(), 1, 7, 6),
        (group.clone(), remote, 1, 7, 40),
    ];
    if got.len() == 3 {
        want.remove(2);
    }
    assert_eq!(got, want);
    let corrections = format!(
        "mm2_checkpoint_follower_corrections_total{{flow=\"{}->{}\"}}",
        w.s, w.t
    );
    assert_eq!(daemon.metric(&corrections).unwrap_or(0.0), 0.0);
    assert_eq!(daemon.sigterm().code(), Some(0));
}

#[test]
fn a_new_group_is_followed_from_its_first_commit() {
    let rt = rt();
    let w = World::new(&rt, "follownew", 1);
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 0, 3), (0, 10, 13)]);
    let group = format!("g-{}", w.topic);
    let config = w.properties(&format!("{group}.*"), SLOW_ROUNDS);
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for("readiness", Duration::from_secs(60), || {
        daemon.ready() == Some(200)
    });
    // Neither group existed at startup.
    let late = format!("{group}-late");
    w.commit_source(&rt, &late, &[(0, 10)]);
    wait_for(
        "the new group's checkpoint",
        Duration::from_secs(20),
        || !w.checkpoints(&rt).is_empty(),
    );
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(late, w.remote_topic(), 0, 10, 13)]);
    assert_eq!(daemon.sigterm().code(), Some(0));
}

#[test]
fn poll_mode_does_not_follow() {
    let rt = rt();
    let w = World::new(&rt, "followpoll", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let config = w.properties(
        &group,
        &format!("{SLOW_ROUNDS}\nmm2-checkpoint.group.offsets.mode = poll"),
    );
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for(
        "the first round's checkpoint",
        Duration::from_secs(60),
        || w.checkpoints(&rt).len() == 1,
    );
    assert_eq!(daemon.metric(&mode_metric(&w, "poll")), Some(1.0));
    assert_eq!(daemon.metric(&mode_metric(&w, "follow")), Some(0.0));
    assert_eq!(daemon.sigterm().code(), Some(0));
}

#[test]
fn commits_of_classic_and_kip848_consumers_are_followed() {
    use e2e::java::{CommitMode, GroupOffset, helpers};
    use e2e::{Listener, clusters};
    let rt = rt();
    let w = World::new(&rt, "followjava", 1);
    w.write_syncs(
        &rt,
        &w.source,
        &w.syncs_topic(),
        &[(0, 0, 3), (0, 10, 13), (0, 20, 23)],
    );
    let base = format!("g-{}", w.topic);
    let config = w.properties(&format!("{base}.*"), SLOW_ROUNDS);
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for("readiness", Duration::from_secs(60), || {
        daemon.ready() == Some(200)
    });
    let java = helpers();
    let bootstrap = clusters().source().bootstrap.get(Listener::Plaintext);
    let commit = |group: &str, mode: CommitMode, offset: i64| {
        let offsets = [GroupOffset {
            topic: w.topic.clone(),
            partition: 0,
            offset,
            metadata: format!("{mode:?}"),
        }];
        java.commit_offsets(bootstrap, group, mode, &offsets)
            .expect("a Java consumer's commit");
    };
    let classic = format!("{base}-classic");
    let kip848 = format!("{base}-kip848");
    commit(&classic, CommitMode::Classic, 10);
    commit(&kip848, CommitMode::Consumer, 20);
    wait_for("both groups' checkpoints", Duration::from_secs(30), || {
        w.checkpoints(&rt).len() == 2
    });
    let mut got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    got.sort();
    let remote = w.remote_topic();
    assert_eq!(
        got,
        vec![
            (classic, remote.clone(), 0, 10, 13),
            (kip848, remote, 0, 20, 23)
        ]
    );
    let metadata: Vec<String> = w
        .checkpoints(&rt)
        .iter()
        .map(|c| c.metadata.clone())
        .collect();
    assert!(metadata.contains(&"Consumer".to_string()), "{metadata:?}");
    assert_eq!(daemon.sigterm().code(), Some(0));
}

/// The same history of syncs and commits, played into two flows: one
/// following, one polling every second. After quiescence both hold the same
/// latest checkpoint for every group and partition, the translation of its
/// last commit through every sync written, and neither ever wrote a
/// checkpoint that rewinds or skips data.
#[test]
fn following_and_polling_end_with_the_same_checkpoints() {
    use std::collections::BTreeMap;
    let rt = rt();
    let follow = World::new(&rt, "difffollow", 2);
    let poll = World::new(&rt, "diffpoll", 2);
    let groups =
        |w: &World| -> Vec<String> { (0..3).map(|i| format!("g-{}-{i}", w.topic)).collect() };
    let daemons: Vec<Daemon> = [
        (&follow, "mm2-checkpoint.group.offsets.mode = follow"),
        (
            &poll,
            "mm2-checkpoint.group.offsets.mode = poll\nrefresh.groups.interval.seconds = 1",
        ),
    ]
    .into_iter()
    .map(|(w, mode)| {
        w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 0, 3), (1, 0, 103)]);
        let config = w.properties(&format!("g-{}-.*", w.topic), mode);
        let d = Daemon::start(&config, &w.dir.join("daemon.log"));
        wait_for("readiness", Duration::from_secs(60), || {
            d.ready() == Some(200)
        });
        d
    })
    .collect();
    let mut syncs = vec![(0, 0, 3), (1, 0, 103)];
    let mut last: BTreeMap<(usize, i32), i64> = BTreeMap::new();
    for round in 1..=6i64 {
        let new = [
            (0, 10 * round, 10 * round + 3),
            (1, 7 * round, 7 * round + 103),
        ];
        syncs.extend(new);
        for w in [&follow, &poll] {
            w.write_syncs(&rt, &w.source, &w.syncs_topic(), &new);
        }
        for g in 0..3usize {
            // Group 0 commits at the syncs, group 1 between them, group 2
            // only every other round.
            if g == 2 && round % 2 == 1 {
                continue;
            }
            let offsets = [(0, 10 * round + g as i64 * 3), (1, 7 * round + g as i64)];
            for w in [&follow, &poll] {
                w.commit_source(&rt, &groups(w)[g], &offsets);
            }
            for (p, o) in offsets {
                last.insert((g, p), o);
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let by_p = e2e::faults::by_partition(&syncs);
    let want: BTreeMap<(usize, i32), (i64, i64)> = last
        .iter()
        .map(|(&(g, p), &u)| {
            let down = e2e::faults::translate(&by_p[&p], u).expect("a sync below");
            ((g, p), (u, down))
        })
        .collect();
    let latest_of = |w: &World| -> BTreeMap<(usize, i32), (i64, i64)> {
        let names = groups(w);
        e2e::faults::latest(&w.checkpoints(&rt))
            .into_iter()
            .map(|((group, p), v)| {
                let g = names
                    .iter()
                    .position(|n| *n == group)
                    .expect("a known group");
                ((g, p), v)
            })
            .collect()
    };
    for w in [&follow, &poll] {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while latest_of(w) != want {
            assert!(
                std::time::Instant::now() < deadline,
                "{}: the final checkpoints {:?} are not {want:?}",
                w.s,
                latest_of(w)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        e2e::faults::assert_sound(&w.checkpoints(&rt), &by_p);
    }
    assert_eq!(latest_of(&follow), latest_of(&poll));
    for d in daemons {
        assert_eq!(d.sigterm().code(), Some(0));
    }
}
