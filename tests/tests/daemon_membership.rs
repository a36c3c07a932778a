//! Several instances of one configuration with membership on
//! (docs/membership.md), as real processes on the real test clusters: one
//! owner writes, the others stand by ready; SIGKILL of the owner hands the
//! flow over; an owner paused (SIGSTOP) past its session timeout is replaced
//! and, woken up (SIGCONT), writes nothing and rejoins as a standby. Across
//! it all the checkpoints never go backwards nor past what the syncs justify,
//! and the target group is never rewound.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use e2e::faults::{Daemon, assert_sound, ensure_consumer_offsets, latest, translate, wait_for};
use e2e::world::{World, rt};
use mm2_checkpoint::driver::FlowCluster;

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
    // One writer at a time, from the log itself: three owners wrote, and
    // nothing of an older producer epoch (the killed or the paused owner)
    // landed after a newer one had written.
    let epochs = assert_one_writer_at_a_time(&rt, &w);
    assert_eq!(epochs, 3, "three owners, three producer epochs");
}

/// Checks the checkpoints topic's batches: every data batch transactional,
/// and once a newer producer epoch wrote, no older one again. Returns the
/// number of producer epochs that wrote.
fn assert_one_writer_at_a_time(rt: &tokio::runtime::Runtime, w: &World) -> usize {
    let batches = stored_batches(rt, w, &w.checkpoints_topic());
    let data: Vec<&StoredBatch> = batches.iter().filter(|b| !b.3).collect();
    assert!(
        data.iter().all(|b| b.2),
        "a non-transactional checkpoint batch"
    );
    let mut newest = (i64::MIN, i16::MIN);
    let mut epochs = std::collections::BTreeSet::new();
    for b in &data {
        let id = (b.0, b.1);
        assert!(
            id >= newest,
            "producer {id:?} wrote after {newest:?} had taken over"
        );
        newest = id;
        epochs.insert(id);
    }
    epochs.len()
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

/// One batch of the checkpoints topic as stored: (producer id, epoch,
/// transactional, control).
type StoredBatch = (i64, i16, bool, bool);

/// Every batch of partition 0 of `topic` as stored (producer ids and
/// epochs, which our readers drop).
fn stored_batches(rt: &tokio::runtime::Runtime, w: &World, topic: &str) -> Vec<StoredBatch> {
    rt.block_on(async {
        let client = w.target.kafka().await.expect("target client");
        e2e::stored::stored_batches(client, topic, 0)
            .await
            .iter()
            .map(|b| {
                (
                    b.producer_id,
                    b.producer_epoch,
                    b.is_transactional,
                    b.is_control,
                )
            })
            .collect()
    })
}

/// Checks what Java's consumer reads from the checkpoints topic with
/// `isolation`: per group and partition never backwards, never past the
/// translation of the syncs; returns the number of records.
fn java_reads_sound(w: &World, isolation: &str, syncs: &[(i64, i64)]) -> usize {
    let c = e2e::clusters();
    let bootstrap = c.target().bootstrap.get(e2e::Listener::Plaintext);
    let records = e2e::java::helpers()
        .checkpoints_as(bootstrap, &w.checkpoints_topic(), isolation)
        .expect("Java reads the checkpoints topic");
    let mut last: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for r in &records {
        let key = (r.group.clone(), r.partition);
        if let Some(prev) = last.get(&key) {
            assert!(
                r.downstream >= *prev,
                "{isolation}: checkpoint of {key:?} went back from {prev} to {}",
                r.downstream
            );
        }
        let bound = translate(syncs, r.upstream).expect("a sync at or below");
        assert!(
            r.downstream <= bound,
            "{isolation}: {r:?} past the syncs' {bound}"
        );
        last.insert(key, r.downstream);
    }
    records.len()
}

/// A Deployment's rolling update, again and again, while the group commits
/// continuously: two replicas; each step starts a third, waits until it is a
/// ready member, then stops the oldest with SIGTERM. `MM2_ROLLING_RESTARTS`
/// sets the number of steps (5 by default; `cargo xtask soak` runs more).
#[test]
fn rolling_restarts_keep_checkpoints_monotonic_for_both_isolations_and_one_writer_at_a_time() {
    let restarts: usize = std::env::var("MM2_ROLLING_RESTARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let rt = rt();
    let w = World::new(&rt, "rolling", 1);
    ensure_consumer_offsets(&rt, &w);
    let group = format!("g-{}", w.topic);
    // A group with a member on the target (Kafka's console consumer, not
    // committing): checkpointed, never synced, whoever owns the flow.
    let active = format!("a-{}", w.topic);
    let _member = e2e::world::ConsoleConsumer::join(
        &w,
        &active,
        &["enable.auto.commit=false", "session.timeout.ms=6000"],
    );
    let config = w.properties(
        &format!("{group}, {active}"),
        &format!(
            "sync.group.offsets.enabled = true\n\
             mm2-checkpoint.membership.enabled = true\n\
             mm2-checkpoint.membership.session.timeout.ms = {SESSION_MS}\n\
             mm2-checkpoint.membership.heartbeat.interval.ms = 1000\n"
        ),
    );
    wait_for(
        "the target group to have its member",
        Duration::from_secs(60),
        || {
            rt.block_on(w.target.describe_groups(std::slice::from_ref(&active)))
                .ok()
                .and_then(|d| d.get(&active).map(|g| g.members))
                == Some(1)
        },
    );
    let syncs = std::sync::Mutex::new(vec![(0, 3)]);
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 0, 3)]);
    w.commit_source(&rt, &group, &[(0, 0)]);
    let done = std::sync::atomic::AtomicBool::new(false);
    let last_commit = std::thread::scope(|scope| {
        let committer = scope.spawn(|| {
            // Its own runtime and client: the world's clients run their
            // connections on the test's (current-thread) runtime.
            let rt = e2e::world::rt();
            let source = e2e::world::client(e2e::clusters().source());
            let mut k = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                k += 1;
                w.write_syncs(&rt, &source, &w.syncs_topic(), &[(0, 10 * k, 10 * k + 3)]);
                syncs.lock().unwrap().push((10 * k, 10 * k + 3));
                let offsets = BTreeMap::from([(
                    mm2_checkpoint::core::TopicPartition::new(&w.topic, 0),
                    mm2_checkpoint::core::CommittedOffset::new(10 * k, format!("md-{}", 10 * k)),
                )]);
                for g in [&group, &active] {
                    rt.block_on(source.commit_group_offsets(g, &offsets))
                        .expect("commit the source groups");
                }
                std::thread::sleep(Duration::from_millis(300));
            }
            10 * k
        });
        let mut instances: std::collections::VecDeque<Daemon> = (0..2)
            .map(|i| Daemon::start(&config, &w.dir.join(format!("rolling-{i}.log"))))
            .collect();
        let mut target_offset = -1;
        for step in 0..restarts {
            let new = Daemon::start(&config, &w.dir.join(format!("rolling-{}.log", step + 2)));
            wait_for(
                "the new instance to be a ready member",
                Duration::from_secs(60),
                || (is(&new, &w, "standby") || is(&new, &w, "owner")) && new.ready() == Some(200),
            );
            instances.push_back(new);
            let oldest = instances.pop_front().expect("an instance");
            let status = oldest.sigterm();
            assert!(status.success(), "SIGTERM exit: {status}");
            // The target group never moves back (not checked while the
            // target is unreachable: the soak restarts its broker meanwhile).
            let fetched = rt.block_on(w.target.fetch_group_offsets(std::slice::from_ref(&group)));
            let now = fetched.ok().and_then(|all| {
                let offsets = all.get(&group)?.as_ref().ok()?;
                offsets
                    .iter()
                    .find(|(tp, _)| tp.topic == w.remote_topic() && tp.partition == 0)
                    .and_then(|(_, o)| o.as_ref().map(|o| o.offset))
            });
            if let Some(now) = now {
                assert!(
                    now >= target_offset,
                    "target group rewound from {target_offset} to {now}"
                );
                target_offset = now;
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let last = committer.join().expect("committer");
        let syncs = syncs.lock().unwrap().clone();
        let want = (last, translate(&syncs, last).expect("translation"));
        wait_for(
            "the last commit's checkpoint",
            Duration::from_secs(60),
            || latest(&w.checkpoints(&rt)).get(&(group.clone(), 0)) == Some(&want),
        );
        wait_for("the target group synced", Duration::from_secs(60), || {
            w.target_offsets(&rt, &group).get(&0) == Some(&want.1)
        });
        for d in instances.iter_mut() {
            d.assert_running();
        }
        // Checkpointed like the other group, never committed into. Its last
        // commit lands just after the other group's, possibly while the flow
        // changes hands (the last step stops the owner), so it is awaited too.
        wait_for(
            "the active group's last checkpoint",
            Duration::from_secs(60),
            || latest(&w.checkpoints(&rt)).get(&(active.clone(), 0)) == Some(&want),
        );
        assert_eq!(
            w.target_offsets(&rt, &active),
            BTreeMap::new(),
            "a commit into the target group with a member"
        );
        last
    });
    let syncs = syncs.into_inner().unwrap();
    assert!(last_commit > 0);

    // Our reader (read_uncommitted, aborted records included).
    let cps = w.checkpoints(&rt);
    assert_sound(&cps, &BTreeMap::from([(0, syncs.clone())]));
    // Java's consumer, both isolation levels.
    let uncommitted = java_reads_sound(&w, "read_uncommitted", &syncs);
    let committed = java_reads_sound(&w, "read_committed", &syncs);
    assert!(committed > 0 && uncommitted >= committed);
    // One writer at a time: every data batch is transactional, and once a
    // newer producer epoch has written, no older one writes again.
    let epochs = assert_one_writer_at_a_time(&rt, &w);
    let takeovers: usize = (0..restarts + 2)
        .map(|i| {
            std::fs::read_to_string(w.dir.join(format!("rolling-{i}.log")))
                .unwrap_or_default()
                .matches("took the flow over")
                .count()
        })
        .sum();
    eprintln!(
        "{restarts} rolling restarts: {takeovers} takeovers, {} producer epochs wrote, {} records (read_uncommitted) / {committed} (read_committed), target group at {}",
        epochs,
        uncommitted,
        w.target_offsets(&rt, &group).get(&0).copied().unwrap_or(-1)
    );
    assert!(
        takeovers >= 2,
        "the first two instances were both stopped: at least one handover"
    );
}

/// A checkpoint a previous owner wrote in a transaction that was then
/// aborted is what `read_uncommitted` readers (Java's default) have seen: a
/// new owner restores it as the floor, so it never writes a lower one for
/// the group (here its own translation would be lower: the sync that
/// justified the aborted value is not in the offset-syncs topic), and its
/// next checkpoint is above it. `read_committed` readers never see it.
#[test]
fn a_new_owner_never_writes_below_an_aborted_checkpoint_readers_saw() {
    use kafka_lite::records::ProducerRecord;
    use mm2_checkpoint::core::{Checkpoint, CheckpointKey, TopicPartition};
    let rt = rt();
    let w = World::new(&rt, "aborted", 1);
    ensure_consumer_offsets(&rt, &w);
    let group = format!("g-{}", w.topic);
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 0, 3)]);
    w.commit_source(&rt, &group, &[(0, 10)]);
    // The previous owner's aborted checkpoint (10, 13), under the flow's
    // transactional id.
    let txn_id = mm2_checkpoint::config::FlowConfig::default_membership_group(&w.s, &w.t);
    let aborted = Checkpoint {
        key: CheckpointKey {
            group: group.clone(),
            topic_partition: TopicPartition::new(w.remote_topic(), 0),
        },
        upstream_offset: 10,
        downstream_offset: 13,
        metadata: String::new(),
    };
    rt.block_on(async {
        w.target
            .create_topic(
                &w.checkpoints_topic(),
                1,
                1,
                &[("cleanup.policy", "compact")],
            )
            .await
            .expect("create the checkpoints topic");
        let client = w.target.kafka().await.expect("target client");
        let mut producer =
            kafka_lite::TransactionalProducer::init(client, &txn_id, Duration::from_secs(60))
                .await
                .expect("init the previous owner's producer");
        let record = ProducerRecord {
            timestamp: 0,
            key: Some(aborted.encode_key().unwrap().into()),
            value: Some(aborted.encode_value().unwrap().into()),
            headers: Vec::new(),
        };
        producer
            .produce(&w.checkpoints_topic(), 0, &[record], &Default::default())
            .await
            .expect("produce in the transaction");
        producer.abort().await.expect("abort");
    });
    let config = w.properties(
        &group,
        "mm2-checkpoint.membership.enabled = true\n\
         mm2-checkpoint.membership.session.timeout.ms = 6000\n",
    );
    let d = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for("the takeover and a round", Duration::from_secs(60), || {
        let log = d.log_text();
        log.contains("took the flow over") && log.contains("emission round done")
    });
    // The restore read the aborted record (nothing else was in the topic).
    assert!(d.log_text().contains("restored=1"), "{}", d.log_text());
    // The group moves on: (20, 23) is above the floor and written.
    w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, 20, 23)]);
    w.commit_source(&rt, &group, &[(0, 20)]);
    wait_for("the next checkpoint", Duration::from_secs(60), || {
        latest(&w.checkpoints(&rt)).get(&(group.clone(), 0)) == Some(&(20, 23))
    });
    let c = e2e::clusters();
    let bootstrap = c.target().bootstrap.get(e2e::Listener::Plaintext);
    let java = e2e::java::helpers();
    let seen = |isolation: &str| -> Vec<(i64, i64)> {
        java.checkpoints_as(bootstrap, &w.checkpoints_topic(), isolation)
            .expect("Java reads the checkpoints")
            .into_iter()
            .filter(|r| r.group == group)
            .map(|r| (r.upstream, r.downstream))
            .collect()
    };
    // Never the lower (10, 4) its own syncs would give. The log cleaner of
    // the compacted topic may already have removed the aborted record.
    let uncommitted = seen("read_uncommitted");
    assert!(
        uncommitted == [(10, 13), (20, 23)] || uncommitted == [(20, 23)],
        "read_uncommitted: {uncommitted:?}"
    );
    assert_eq!(seen("read_committed"), vec![(20, 23)]);
}
