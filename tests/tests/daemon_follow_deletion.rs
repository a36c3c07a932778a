//! Offset deletion and group deletion under the commit follower
//! (docs/commit-follower.md sections 2 and 3). Admin
//! `deleteConsumerGroupOffsets` and `deleteConsumerGroups`
//! (`tests/java/GroupAdmin.java`) make the coordinator write a tombstone per
//! removed offset to `__consumer_offsets`, the same record it writes when an
//! offset expires. The same history is played into two flows, one following
//! (periodic round and sync at an hour, so only the follower acts after
//! startup) and one polling every second, and both must write exactly the
//! same checkpoints and leave the target group in the same state.

use std::time::Duration;

use e2e::faults::{Daemon, SLOW_ROUNDS, wait_for};
use e2e::java::{CommitMode, GroupOffset, helpers};
use e2e::world::{World, rt};
use e2e::{Listener, clusters};

/// Checkpoints of a world: (partition, upstream, downstream), in log order.
fn checkpoints(rt: &tokio::runtime::Runtime, w: &World) -> Vec<(i32, i64, i64)> {
    w.checkpoints(rt)
        .iter()
        .map(|c| {
            (
                c.key.topic_partition.partition,
                c.upstream_offset,
                c.downstream_offset,
            )
        })
        .collect()
}

/// Steps, after each of which both flows must hold exactly these
/// checkpoints and target offsets:
/// 1. the group commits 30 on partition 0 and 10 on partition 1;
/// 2. its offset of partition 1 is deleted: nothing is emitted (what is left
///    is already checkpointed);
/// 3. it commits 15 on partition 1 again: checkpointed, and synced forward;
/// 4. the group is deleted: nothing is emitted; then a new sync of partition
///    1 is written, which would translate a stale commit of 15 higher;
/// 5. a group of the same name commits 20 on partition 0 only, below the
///    deleted group's 30. As polling does (and MM2: an upstream rewind is
///    checkpointed, docs/behaviour.md D.3) the lower offset is checkpointed;
///    the target group is never rewound; partition 1, which the new group
///    never committed, gets nothing.
#[test]
fn deleted_offsets_and_groups_leave_no_stale_state() {
    let rt = rt();
    let follow = World::new(&rt, "delfollow", 2);
    let poll = World::new(&rt, "delpoll", 2);
    let worlds = [&follow, &poll];
    let group = |w: &World| format!("g-{}", w.topic);
    let initial = [(0, 0, 3), (0, 30, 33), (1, 0, 103), (1, 10, 113)];
    let daemons: Vec<Daemon> = [
        (
            &follow,
            format!(
                "mm2-checkpoint.group.offsets.mode = follow\n{SLOW_ROUNDS}\n\
                 sync.group.offsets.enabled = true"
            ),
        ),
        (
            &poll,
            "mm2-checkpoint.group.offsets.mode = poll\n\
             refresh.groups.interval.seconds = 1\n\
             sync.group.offsets.enabled = true"
                .to_owned(),
        ),
    ]
    .into_iter()
    .map(|(w, settings)| {
        w.write_syncs(&rt, &w.source, &w.syncs_topic(), &initial);
        e2e::faults::ensure_consumer_offsets(&rt, w);
        let config = w.properties(&group(w), &settings);
        let d = Daemon::start(&config, &w.dir.join("daemon.log"));
        wait_for("readiness", Duration::from_secs(60), || {
            d.ready() == Some(200)
        });
        d
    })
    .collect();
    let (follower, poller) = (&daemons[0], &daemons[1]);
    let flow = |w: &World| format!("{{flow=\"{}->{}\"}}", w.s, w.t);
    let followed = || {
        follower
            .metric(&format!(
                "mm2_checkpoint_followed_commits_total{}",
                flow(&follow)
            ))
            .unwrap_or(0.0)
    };
    let rounds = || {
        poller
            .metric(&format!(
                "mm2_checkpoint_round_duration_seconds_count{}",
                flow(&poll)
            ))
            .unwrap_or(0.0)
    };
    // Waits until the follower has applied `commits` commits and removals
    // and the poller has run two more rounds (each sees the source as it is
    // now), then until both flows hold `want` and the target `target`.
    let step = |what: &str, commits: f64, want: &[(i32, i64, i64)], target: [(i32, i64); 2]| {
        let since = rounds();
        wait_for(
            &format!("{what}: followed"),
            Duration::from_secs(20),
            || followed() >= commits,
        );
        assert_eq!(followed(), commits, "{what}: commits and removals followed");
        wait_for(
            &format!("{what}: two rounds"),
            Duration::from_secs(20),
            || rounds() >= since + 2.0,
        );
        for w in worlds {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            loop {
                let (got, on_target) = (checkpoints(&rt, w), w.target_offsets(&rt, &group(w)));
                if got == want && on_target == target.into() {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{what}, {}: checkpoints {got:?} (want {want:?}), target group \
                     {on_target:?} (want {target:?})",
                    w.s
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    let java = helpers();
    let bootstrap = clusters().source().bootstrap.get(Listener::Plaintext);

    for w in worlds {
        w.commit_source(&rt, &group(w), &[(0, 30), (1, 10)]);
    }
    let mut want = vec![(0, 30, 33), (1, 10, 113)];
    step("the first commits", 2.0, &want, [(0, 33), (1, 113)]);

    for w in worlds {
        java.delete_group_offsets(bootstrap, &group(w), &[(&w.topic, 1)])
            .expect("deleteConsumerGroupOffsets");
    }
    step("the offset deletion", 3.0, &want, [(0, 33), (1, 113)]);

    for w in worlds {
        w.commit_source(&rt, &group(w), &[(1, 15)]);
    }
    want.push((1, 15, 114));
    step(
        "the commit after the deletion",
        4.0,
        &want,
        [(0, 33), (1, 114)],
    );

    for w in worlds {
        java.delete_group(bootstrap, &group(w))
            .expect("deleteConsumerGroups");
    }
    step("the group deletion", 6.0, &want, [(0, 33), (1, 114)]);
    for w in worlds {
        w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(1, 15, 118)]);
    }

    for w in worlds {
        w.commit_source(&rt, &group(w), &[(0, 20)]);
    }
    want.push((0, 20, 4));
    step("the re-created group", 7.0, &want, [(0, 33), (1, 114)]);
    // Once the follower has read the sync of partition 1, a stale commit of
    // partition 1 would be checkpointed within a coalescing window (200 ms).
    wait_for("the follower's syncs", Duration::from_secs(20), || {
        follower
            .metric(&format!(
                "mm2_checkpoint_offset_syncs_read_total{}",
                flow(&follow)
            ))
            .unwrap_or(0.0)
            >= 5.0
    });
    std::thread::sleep(Duration::from_secs(1));
    for w in worlds {
        assert_eq!(checkpoints(&rt, w), want, "{}: the final checkpoints", w.s);
    }
    assert_eq!(
        follower
            .metric(&format!(
                "mm2_checkpoint_follower_corrections_total{}",
                flow(&follow)
            ))
            .unwrap_or(0.0),
        0.0
    );
    for d in daemons {
        assert_eq!(d.sigterm().code(), Some(0));
    }
}

/// A group created by a member of `mode`'s protocol commits 30 and leaves,
/// then is deleted: its coordinator writes, next to the offset tombstone, the
/// tombstones of its protocol's own records (group metadata for a classic
/// group, records of types 3 and up for a KIP-848 group), which the follower
/// reads past. A group of the same name then commits 20 without membership:
/// checkpointed as an upstream rewind, and the target group is not rewound.
fn a_deleted_member_group_is_followed_when_recreated(name: &str, mode: CommitMode) {
    let rt = rt();
    let w = World::new(&rt, name, 1);
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 0, 3), (0, 30, 33)]);
    let group = format!("g-{}", w.topic);
    let config = w.properties(
        &group,
        &format!(
            "mm2-checkpoint.group.offsets.mode = follow\n{SLOW_ROUNDS}\n\
             sync.group.offsets.enabled = true"
        ),
    );
    e2e::faults::ensure_consumer_offsets(&rt, &w);
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for("readiness", Duration::from_secs(60), || {
        daemon.ready() == Some(200)
    });
    let flow = format!("{{flow=\"{}->{}\"}}", w.s, w.t);
    let followed = || {
        daemon
            .metric(&format!("mm2_checkpoint_followed_commits_total{flow}"))
            .unwrap_or(0.0)
    };
    let java = helpers();
    let bootstrap = clusters().source().bootstrap.get(Listener::Plaintext);
    let expect = |what: &str, want: &[(i32, i64, i64)]| {
        wait_for(what, Duration::from_secs(20), || {
            checkpoints(&rt, &w) == want && w.target_offsets(&rt, &group) == [(0, 33)].into()
        });
    };

    let offsets = [GroupOffset {
        topic: w.topic.clone(),
        partition: 0,
        offset: 30,
        metadata: String::new(),
    }];
    java.commit_offsets(bootstrap, &group, mode, &offsets)
        .expect("a member's commit");
    expect("the member's commit", &[(0, 30, 33)]);
    java.delete_group(bootstrap, &group)
        .expect("deleteConsumerGroups");
    wait_for("the offset tombstone", Duration::from_secs(20), || {
        followed() >= 2.0
    });
    w.commit_source(&rt, &group, &[(0, 20)]);
    expect("the re-created group's commit", &[(0, 30, 33), (0, 20, 4)]);
    assert_eq!(followed(), 3.0, "the commit, its tombstone, the new commit");
    assert_eq!(daemon.sigterm().code(), Some(0));
}

#[test]
fn a_deleted_classic_group_is_followed_when_recreated() {
    a_deleted_member_group_is_followed_when_recreated("delclassic", CommitMode::Classic);
}

#[test]
fn a_deleted_kip848_group_is_followed_when_recreated() {
    a_deleted_member_group_is_followed_when_recreated("delkip848", CommitMode::Consumer);
}
