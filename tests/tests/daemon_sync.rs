//! Group offset sync end to end: dead and empty target groups get the
//! translated offsets, an active group is refused, nothing is ever rewound,
//! and the daemon leaves a rewound idle group until its source group
//! commits again.

use std::time::{Duration, Instant};

use e2e::binary::run_once;
use e2e::world::{ConsoleConsumer, World, rt};
use mm2_checkpoint::core::TargetGroupState;
use mm2_checkpoint::driver::FlowCluster;

fn sync_config(w: &World, groups: &str) -> std::path::PathBuf {
    w.properties(groups, "sync.group.offsets.enabled = true")
}

#[test]
fn a_group_absent_on_the_target_gets_the_translated_offsets() {
    let rt = rt();
    let w = World::new(&rt, "syncdead", 2);
    let group = w.seed(
        &rt,
        &[(0, 0, 3), (0, 10, 13), (1, 0, 4), (1, 20, 24)],
        &[(0, 10), (1, 20)],
    );
    run_once(&sync_config(&w, &group));
    assert_eq!(w.target_offsets(&rt, &group), [(0, 13), (1, 24)].into());
}

#[test]
fn an_empty_target_group_behind_is_moved_forward() {
    let rt = rt();
    let w = World::new(&rt, "syncempty", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    w.commit_target(&rt, &group, &[(0, 5)]);
    run_once(&sync_config(&w, &group));
    assert_eq!(w.target_offsets(&rt, &group), [(0, 13)].into());
}

#[test]
fn an_empty_target_group_ahead_is_never_rewound() {
    let rt = rt();
    let w = World::new(&rt, "syncahead", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    w.commit_target(&rt, &group, &[(0, 50)]);
    run_once(&sync_config(&w, &group));
    assert_eq!(w.target_offsets(&rt, &group), [(0, 50)].into());
}

/// Kafka's console consumer as an active member of `group` on the target,
/// once the group is Stable.
fn active_member(rt: &tokio::runtime::Runtime, w: &World, group: &str) -> ConsoleConsumer {
    let member = ConsoleConsumer::join(w, group, &[]);
    let started = Instant::now();
    loop {
        let described = rt
            .block_on(w.target.describe_groups(&[group.to_string()]))
            .expect("describe");
        if described
            .get(group)
            .is_some_and(|d| d.state == TargetGroupState::Stable)
        {
            return member;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the console consumer never joined {group}: {described:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_target_group_with_active_members_is_refused() {
    let rt = rt();
    let w = World::new(&rt, "syncactive", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    w.commit_target(&rt, &group, &[(0, 1)]);
    let _member = active_member(&rt, &w, &group);
    let out = run_once(&sync_config(&w, &group));
    let offsets = w.target_offsets(&rt, &group);
    assert_ne!(offsets.get(&0), Some(&13), "an active group was synced");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("skipped_active=1"), "{stderr}");
}

/// The daemon syncs a group only when it has a new checkpoint
/// (docs/translation.md, "Only new checkpoints"): an idle target group an
/// operator rewound stays where it was put, over later syncs, until the
/// source group commits again. MirrorMaker 2 raises it at its next sync.
#[test]
fn the_daemon_leaves_a_rewound_idle_target_group_until_the_source_commits_again() {
    use e2e::faults::{Daemon, wait_for};
    let rt = rt();
    let w = World::new(&rt, "syncrewind", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let daemon = Daemon::start(&sync_config(&w, &group), &w.dir.join("daemon.log"));
    wait_for("the first sync", Duration::from_secs(60), || {
        w.target_offsets(&rt, &group) == [(0, 13)].into()
    });
    // An operator rewinds the idle group on the target to process again.
    w.commit_target(&rt, &group, &[(0, 5)]);
    let syncs_done = || daemon.log_text().matches("group sync done").count();
    let before = syncs_done();
    wait_for("three more group syncs", Duration::from_secs(60), || {
        syncs_done() >= before + 3
    });
    assert_eq!(
        w.target_offsets(&rt, &group),
        [(0, 5)].into(),
        "a group sync undid the rewind"
    );
    // The source group commits again: its new checkpoint is synced.
    w.commit_source(&rt, &group, &[(0, 12)]);
    wait_for("the new checkpoint's sync", Duration::from_secs(60), || {
        w.target_offsets(&rt, &group) == [(0, 14)].into()
    });
    assert_eq!(daemon.sigterm().code(), Some(0));
}
