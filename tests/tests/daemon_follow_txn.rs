//! Transactional offset commits followed end to end (docs/commit-follower.md
//! section 2): Kafka's own transactional producer commits a group's offsets
//! with `sendOffsetsToTransaction` (`tests/java/TxnOffsets.java`), as a
//! read-process-write application does. With the periodic round and group
//! sync at an hour, only the follower can checkpoint or sync what is
//! committed after startup, so each checkpoint and target commit seen here
//! came from `__consumer_offsets` read read_committed.

use std::time::Duration;

use e2e::faults::{Daemon, SLOW_ROUNDS, wait_for};
use e2e::java::{CommitMode, GroupOffset, TxnStep, helpers};
use e2e::world::{World, rt};
use e2e::{Listener, clusters, unique_name};

/// Offset syncs of partition 0, (upstream, downstream): upstream `u` is
/// downstream `u + 3`. Each is written just before the commit of its
/// upstream offset, so it is the newest sync when that commit is translated
/// (the sync store thins older syncs out, as MM2's does) and every
/// checkpoint here is exactly `(u, u + 3)`.
const SYNCS: &[(i32, i64, i64)] = &[
    (0, 0, 3),
    (0, 5, 8),
    (0, 10, 13),
    (0, 20, 23),
    (0, 30, 33),
    (0, 35, 38),
];

/// How long an open transaction is watched for anything emitted too early:
/// many coalescing windows (200 ms) and follower fetches (100 ms).
const HOLD: Duration = Duration::from_secs(2);

/// A group of a membership protocol goes through, in order: a Java consumer
/// of that protocol commits 5 and leaves; a transaction commits 10; a
/// transaction commits 40 and aborts, nothing happens for [`HOLD`], and the
/// next transaction commits 20; a transaction commits 30 and stays open for
/// [`HOLD`], then commits; a transaction commits 40 and stays open while a
/// plain commit of 35 is made, then commits. After
/// each step the checkpoints and the (idle) target group are exactly the
/// translation of what the coordinator holds: 40 is never checkpointed, 30
/// only once its transaction committed; no checkpoint skips data.
fn transactional_commits_are_followed_only_once_committed(name: &str, mode: CommitMode) {
    let rt = rt();
    let w = World::new(&rt, name, 1);
    let sync = |upstream: i64| {
        let s = SYNCS
            .iter()
            .filter(|s| s.1 == upstream)
            .copied()
            .collect::<Vec<_>>();
        w.write_syncs(&rt, &w.source, &w.syncs_topic(), &s);
    };
    sync(0);
    let group = format!("g-{}", w.topic);
    let config = w.properties(
        &group,
        &format!("{SLOW_ROUNDS}\nsync.group.offsets.enabled = true"),
    );
    e2e::faults::ensure_consumer_offsets(&rt, &w);
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for("readiness", Duration::from_secs(60), || {
        daemon.ready() == Some(200)
    });
    assert_eq!(
        daemon.metric(&e2e::faults::mode_metric(&w, "follow")),
        Some(1.0)
    );
    let java = helpers();
    let bootstrap = clusters().source().bootstrap.get(Listener::Plaintext);
    let offsets = |offset: i64| {
        vec![GroupOffset {
            topic: w.topic.clone(),
            partition: 0,
            offset,
            metadata: format!("txn-{offset}"),
        }]
    };
    let txn_id = unique_name("txn");
    // The upstream offsets of the checkpoints of partition 0, in log order.
    let upstream = || -> Vec<i64> {
        w.checkpoints(&rt)
            .iter()
            .map(|c| c.upstream_offset)
            .collect()
    };
    // Waits until the checkpoints' upstream offsets are `want`, each
    // translated to `u + 3`, and the target group is at the last one.
    let expect = |what: &str, want: &[i64]| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let synced = Some([(0, want[want.len() - 1] + 3)].into());
        loop {
            let cps = w.checkpoints(&rt);
            let got: Vec<i64> = cps.iter().map(|c| c.upstream_offset).collect();
            let target = w.target_offsets(&rt, &group);
            if got == want
                && cps
                    .iter()
                    .all(|c| c.downstream_offset == c.upstream_offset + 3)
                && Some(&target) == synced.as_ref()
            {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: checkpoints {cps:?} (want upstream {want:?}), target group \
                 {target:?} (want {synced:?})"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        e2e::faults::assert_sound(&w.checkpoints(&rt), &e2e::faults::by_partition(SYNCS));
    };

    // Checks for [`HOLD`] that nothing more is checkpointed or synced than
    // `want`, the checkpoints so far.
    let unchanged = |what: &str, want: &[i64]| {
        let synced = w.target_offsets(&rt, &group);
        let until = std::time::Instant::now() + HOLD;
        while std::time::Instant::now() < until {
            assert_eq!(upstream(), want, "a checkpoint of {what}");
            assert_eq!(
                w.target_offsets(&rt, &group),
                synced,
                "a target commit of {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };

    // The group is created by a member of the protocol under test, which
    // then leaves: transactions commit into an empty group of that kind.
    sync(5);
    java.commit_offsets(bootstrap, &group, mode, &offsets(5))
        .expect("a Java consumer's commit");
    expect("the member's commit", &[5]);

    sync(10);
    java.txn_offsets(
        bootstrap,
        &group,
        &txn_id,
        Some(&w.topic),
        &[TxnStep::Commit(offsets(10))],
    )
    .expect("a committed transaction");
    expect("the committed transaction's checkpoint", &[5, 10]);

    // An aborted transaction emits nothing, neither while nothing follows it
    // nor once a committed one does.
    java.txn_offsets(
        bootstrap,
        &group,
        &txn_id,
        Some(&w.topic),
        &[TxnStep::Abort(offsets(40))],
    )
    .expect("an aborted transaction");
    unchanged("an aborted transaction", &[5, 10]);
    sync(20);
    java.txn_offsets(
        bootstrap,
        &group,
        &txn_id,
        Some(&w.topic),
        &[TxnStep::Commit(offsets(20))],
    )
    .expect("a committed transaction after an aborted one");
    expect("the checkpoint after an aborted transaction", &[5, 10, 20]);

    sync(30);
    let held = java
        .hold_txn_offsets(bootstrap, &group, &txn_id, Some(&w.topic), offsets(30))
        .expect("an open transaction");
    unchanged("a transaction that is still open", &[5, 10, 20]);
    held.commit().expect("committing the open transaction");
    expect(
        "the checkpoint of the transaction once committed",
        &[5, 10, 20, 30],
    );

    // A plain commit made while a transaction of the same group is open
    // comes after the transaction's offsets in the log: once the transaction
    // commits, the coordinator keeps the plain commit (the later record),
    // and so must the follower. Until then the open transaction holds the
    // plain commit back too.
    sync(35);
    let held = java
        .hold_txn_offsets(bootstrap, &group, &txn_id, Some(&w.topic), offsets(40))
        .expect("an open transaction");
    w.commit_source(&rt, &group, &[(0, 35)]);
    unchanged("commits behind an open transaction", &[5, 10, 20, 30]);
    held.commit().expect("committing the open transaction");
    expect(
        "the checkpoint of the later plain commit",
        &[5, 10, 20, 30, 35],
    );
    let coordinator = java
        .group_offsets(bootstrap, &group)
        .expect("the group's offsets");
    assert_eq!(
        coordinator.iter().map(|o| o.offset).collect::<Vec<_>>(),
        [35],
        "the coordinator's offset"
    );

    let metadata: Vec<String> = w
        .checkpoints(&rt)
        .iter()
        .map(|c| c.metadata.clone())
        .collect();
    assert_eq!(metadata[1..], ["txn-10", "txn-20", "txn-30", "md-35"]);
    let flow = format!("{{flow=\"{}->{}\"}}", w.s, w.t);
    assert_eq!(
        daemon
            .metric(&format!("mm2_checkpoint_follower_corrections_total{flow}"))
            .unwrap_or(0.0),
        0.0
    );
    // The member's commit, three committed transactions, then the last
    // transaction's and the plain commit: the aborted one is never read.
    assert_eq!(
        daemon.metric(&format!("mm2_checkpoint_followed_commits_total{flow}")),
        Some(6.0)
    );
    assert_eq!(daemon.sigterm().code(), Some(0));
}

#[test]
fn transactional_commits_of_a_classic_group() {
    transactional_commits_are_followed_only_once_committed("txnclassic", CommitMode::Classic);
}

#[test]
fn transactional_commits_of_a_kip848_group() {
    transactional_commits_are_followed_only_once_committed("txnkip848", CommitMode::Consumer);
}
