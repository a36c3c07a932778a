//! A whole failover and failback with the real MirrorMaker 2 (docs/operations.md,
//! "Failing back"): MM2 4.1.1 mirrors a fresh one-partition topic S->T while
//! records are produced (its checkpoint connector refused, so the offset syncs
//! are its own and every checkpoint is ours). A group consumes part of the
//! topic on S; mm2-checkpoint (group sync and reverse checkpoints on) fails it
//! over to T, where a consumer reads on from the synced offset and commits;
//! mm2-checkpoint writes the reverse checkpoint to
//! `target.checkpoints.internal` on S and raises the group there (with
//! `run --once` twice, or the daemon running throughout); then the
//! group fails back the way an application does, with
//! `RemoteClusterUtils.translateOffsets` on S (remote alias `target`) and a
//! consumer reading on to the end. Every record names its source offset, so
//! the test counts the records lost (never read in any phase: must be 0) and
//! those read twice (only the failback's, at most the distance to the
//! offset sync it was translated through). Once with MM2's default
//! replication policy and translation and `run --once`, once with the
//! identity policy (the remote topic has the source's name), precise
//! translation and the daemon, where the failback resumes right after the
//! newest of MM2's syncs at or below the commit on T.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use e2e::binary::Daemon;
use e2e::interop::{ok, our_config, run_once, test_dir};
use e2e::java::helpers;
use e2e::mm2::{Mm2Config, Mm2Process, SOURCE_ALIAS, TARGET_ALIAS};
use e2e::{Listener, clusters, unique_name};
use kafka_lite::ProduceOptions;
use kafka_lite::records::ProducerRecord;
use mm2_checkpoint::core::{CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::FlowCluster;

/// MM2's `offset.lag.max`.
const SPACING: i64 = 10;
/// Records produced, in two bursts while MM2 runs.
const RECORDS: i64 = 1_000;
/// Where the group stands on S before the failover.
const READ_ON_S: i64 = 300;
/// Where it commits on T before failing back (T's offsets: an identity
/// mirror of a fresh topic).
const READ_ON_T: i64 = 800;
const BUDGET: Duration = Duration::from_secs(120);
const IDENTITY: &str = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy";

/// Produces records `from..to` to partition 0 of `topic` (value `value-0-<i>`
/// at offset `i`) as a live stream: batches of 25, 50 ms apart, so that MM2
/// writes its offset syncs at about its spacing (a burst makes it drop most
/// of them: docs/behaviour.md, C.1).
fn produce(rt: &tokio::runtime::Runtime, topic: &str, from: i64, to: i64) {
    let source = e2e::world::client(clusters().source());
    let kafka = ok(rt.block_on(source.kafka()), "source client");
    let mut next = from;
    while next < to {
        let upto = (next + 25).min(to);
        let records: Vec<ProducerRecord> = (next..upto)
            .map(|i| ProducerRecord {
                timestamp: e2e::now_ms(),
                key: Some(Bytes::from(format!("key-0-{i}"))),
                value: Some(Bytes::from(format!("value-0-{i}"))),
                headers: Vec::new(),
            })
            .collect();
        let base = ok(
            rt.block_on(kafka.produce(topic, 0, &records, &ProduceOptions::default())),
            "producing to the source",
        );
        assert_eq!(base, next, "offsets are the record numbers");
        next = upto;
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The source offset a record's value names.
fn source_offset(value: &str) -> i64 {
    value
        .strip_prefix("value-0-")
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("a record not from the source topic: {value}"))
}

/// `group`'s committed offset of `topic`-0 on `cluster`.
fn committed(
    rt: &tokio::runtime::Runtime,
    cluster: &e2e::Cluster,
    group: &str,
    topic: &str,
) -> Option<i64> {
    let client = e2e::world::client(cluster);
    let fetched = ok(
        rt.block_on(client.fetch_group_offsets(&[group.to_owned()])),
        "OffsetFetch",
    );
    let offsets = ok(fetched[group].clone(), "OffsetFetch of the group");
    offsets
        .get(&TopicPartition::new(topic, 0))
        .cloned()
        .flatten()
        .map(|c| c.offset)
}

/// Commits `offset` of `topic`-0 for the idle `group` on `cluster`.
fn commit(
    rt: &tokio::runtime::Runtime,
    cluster: &e2e::Cluster,
    group: &str,
    topic: &str,
    offset: i64,
) {
    let client = e2e::world::client(cluster);
    let offsets = BTreeMap::from([(
        TopicPartition::new(topic, 0),
        CommittedOffset::new(offset, "consumed"),
    )]);
    ok(
        rt.block_on(client.commit_group_offsets(group, &offsets)),
        "committing a group",
    );
}

/// Polls `group`'s committed offset of `topic`-0 on `cluster` until `done`
/// holds (at most [`BUDGET`]); returns it and how long it took.
fn wait_committed(
    rt: &tokio::runtime::Runtime,
    cluster: &e2e::Cluster,
    group: &str,
    topic: &str,
    done: impl Fn(Option<i64>) -> bool,
) -> (Option<i64>, Duration) {
    let t0 = Instant::now();
    loop {
        let now = committed(rt, cluster, group, topic);
        if done(now) {
            return (now, t0.elapsed());
        }
        assert!(
            t0.elapsed() < BUDGET,
            "group {group} on {}: still at {now:?}",
            cluster.name
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The lifecycle under the identity policy or MM2's default one, with
/// `precise` translation or the default (`mm2`), with `run --once` for the
/// failover and the failback or with the daemon running throughout.
fn lifecycle(identity: bool, precise: bool, daemon: bool) {
    let started = Instant::now();
    let c = clusters();
    let rt = e2e::world::rt();
    let java = helpers();
    let s_bootstrap = c.source().bootstrap.get(Listener::Plaintext);
    let t_bootstrap = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("failback");
    let remote = if identity {
        topic.clone()
    } else {
        format!("{SOURCE_ALIAS}.{topic}")
    };
    let group = format!("{topic}-app");
    let mut policy = if identity {
        format!("replication.policy.class = {IDENTITY}\n")
    } else {
        String::new()
    };
    if precise {
        policy.push_str("mm2-checkpoint.offset.translation = precise\n");
    }

    // MM2 mirrors S->T while the records are produced.
    let source = e2e::world::client(c.source());
    ok(
        rt.block_on(source.create_topic(&topic, 1, 1, &[])),
        "creating the source topic",
    );
    let mut config = Mm2Config::new(&topic, &format!("{topic}-.*")).without_checkpoints();
    config.offset_lag_max = SPACING as u64;
    if identity {
        config
            .extra
            .push(("replication.policy.class".to_owned(), IDENTITY.to_owned()));
    }
    let mut mm2 = ok(
        Mm2Process::start_replicating(c, &config, BUDGET),
        "starting MirrorMaker 2 and its replication task",
    );
    produce(&rt, &topic, 0, RECORDS / 2);
    // The application consumes part of the topic on S.
    commit(&rt, c.source(), &group, &topic, READ_ON_S);
    produce(&rt, &topic, RECORDS / 2, RECORDS);
    e2e::world::wait_for_mirrored_end(&rt, &mut mm2, &remote, RECORDS, BUDGET);
    let syncs = ok(
        mm2.wait_for_offset_syncs(&topic, 1, READ_ON_T, BUDGET),
        "waiting for MM2's offset syncs past the group's position on T",
    );
    let history = e2e::world::identity_sync_history(&syncs);

    // Failover: checkpoints and group sync into T.
    let dir = test_dir(&topic);
    let properties = our_config(
        &dir,
        &topic,
        &format!("{topic}-.*"),
        &format!(
            "{policy}sync.group.offsets.enabled = true\n\
             sync.group.offsets.interval.seconds = 1\n\
             mm2-checkpoint.emit.reverse.checkpoints.enabled = true\n"
        ),
    );
    let mut running = daemon.then(|| {
        Daemon::spawn(
            std::process::Command::new(e2e::binary::mm2_checkpoint())
                .args(["run", "--config"])
                .arg(&properties),
        )
    });
    if running.is_none() {
        run_once(&properties);
    }
    let (on_t, took) = wait_committed(&rt, c.target(), &group, &remote, |o| o.is_some());
    let on_t = on_t.expect("synced into T");
    if daemon {
        eprintln!("failback: the daemon synced the group into T in {took:?}");
    }
    assert!(on_t <= READ_ON_S, "synced into T past its position: {on_t}");

    // The application consumes on T from there up to READ_ON_T and commits.
    let on_target = ok(java.read_records(t_bootstrap, &remote), "reading T");
    let mut read: Vec<i64> = (0..READ_ON_S).collect();
    read.extend(
        on_target
            .iter()
            .filter(|r| (on_t..READ_ON_T).contains(&r.offset))
            .map(|r| source_offset(&r.value)),
    );
    commit(&rt, c.target(), &group, &remote, READ_ON_T);

    // Failback: the reverse checkpoint on S, and the group raised there.
    let log = match running.take() {
        None => run_once(&properties),
        Some(d) => {
            let (_, took) = wait_committed(&rt, c.source(), &group, &topic, |o| {
                o.is_some_and(|o| o > READ_ON_S)
            });
            eprintln!("failback: the daemon raised the group on S in {took:?}");
            let (code, _, log) = d.terminate();
            assert_eq!(code, Some(0), "the daemon's exit\n{log}");
            log
        }
    };
    let back_topic = format!("{TARGET_ALIAS}.checkpoints.internal");
    let reverse: Vec<_> = ok(java.checkpoints(s_bootstrap, &back_topic), "reading S")
        .into_iter()
        .filter(|cp| cp.group == group)
        .collect();
    // The first run wrote one too, for the offset the failover had synced
    // into T (it did not lower the group on S); the last is the failback's.
    let cp = reverse
        .last()
        .unwrap_or_else(|| panic!("no reverse checkpoint of {group} on S\n{log}"));
    assert!(
        reverse
            .windows(2)
            .all(|w| w[0].downstream <= w[1].downstream),
        "{reverse:?}"
    );
    assert_eq!(
        (
            cp.topic.as_str(),
            cp.partition,
            cp.upstream,
            cp.metadata.as_str()
        ),
        (topic.as_str(), 0, READ_ON_T, "consumed"),
        "{cp:?}"
    );
    let position = cp.downstream;
    // Never past the commit on T, and through one of MM2's syncs: right
    // after its record, or at it when the commit is exactly there. With
    // precise translation (below) through the newest one at or below the
    // commit; the default keeps MM2's sparser slots of older syncs.
    let through = *history
        .iter()
        .filter(|&&s| s <= READ_ON_T)
        .max()
        .expect("a sync at or below the commit");
    assert!(
        position <= READ_ON_T
            && (history.contains(&(position - 1))
                || (position == READ_ON_T && history.contains(&position))),
        "reverse position {position}, commit on T {READ_ON_T}, MM2's syncs {history:?}"
    );
    assert_eq!(
        committed(&rt, c.source(), &group, &topic),
        Some(position),
        "the group on S is not at its reverse position"
    );

    // The application fails back with MM2's client library.
    let out = ok(
        java.run("FailOver", &[s_bootstrap, TARGET_ALIAS, "20000", &group]),
        "FailOver on S",
    );
    let mut from = None;
    for line in out.lines() {
        match line.split(' ').collect::<Vec<_>>().as_slice() {
            ["from", g, t, "0", offset] if *g == group && *t == topic => {
                from = Some(offset.parse::<i64>().expect("offset"));
            }
            ["record", g, "0", _offset, value] if *g == group => read.push(source_offset(value)),
            _ => panic!("unexpected FailOver line: {line}"),
        }
    }
    assert_eq!(from, Some(position), "translateOffsets on S");

    let seen: BTreeSet<i64> = read.iter().copied().collect();
    let lost = (0..RECORDS).filter(|o| !seen.contains(o)).count();
    let reread = read.len() - seen.len();
    eprintln!(
        "failback ({}{}{}): on T from {on_t}, back on S from {position} (commit on T {READ_ON_T}, \
         sync {through}); lost {lost}, read again {reread}; {:.1} s",
        if identity { "identity" } else { "default" },
        if precise { ", precise" } else { "" },
        if daemon { ", daemon" } else { ", run --once" },
        started.elapsed().as_secs_f64()
    );
    assert_eq!(lost, 0, "records lost");
    // Read twice: the failover's (a position at or below the truth) and the
    // failback's, which is within the bracket of the sync it went through.
    assert!(
        reread as i64 <= (READ_ON_S - on_t) + (READ_ON_T - position),
        "read again {reread}"
    );
    if precise {
        // Precise translation keeps every sync: the newest one of MM2's at or
        // below the commit is the one translated through.
        let exact = if through == READ_ON_T {
            through
        } else {
            through + 1
        };
        assert_eq!(position, exact, "precise reverse position");
    }
    ok(mm2.stop(Duration::from_secs(10)), "stopping MM2");
}

#[test]
fn failover_and_failback_with_the_default_policy_lose_nothing() {
    lifecycle(false, false, false);
}

#[test]
fn failover_and_failback_with_the_identity_policy_and_precise_translation_in_the_daemon_lose_nothing()
 {
    lifecycle(true, true, true);
}
