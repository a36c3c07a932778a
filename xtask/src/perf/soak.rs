//! `cargo xtask soak [--seconds N] [--mode follow|poll]`: broker faults under
//! a running daemon, on the soak's own pair of clusters (`target/kafka-soak/`,
//! never the shared test clusters).
//!
//! In mode `follow` (the default) the daemon follows `__consumer_offsets` and
//! its periodic round runs only once an hour, so every checkpoint after the
//! first round, recoveries included, comes from the commit follower. In mode
//! `poll` it polls every second, as MirrorMaker 2 does at its lowest setting.
//!
//! Cycles until the time is up (at least one full cycle): SIGKILL + restart of
//! the source broker, of the target broker, then SIGSTOP of the target broker
//! for longer than the daemon's request timeout and SIGCONT. Meanwhile offset
//! syncs are written and source groups committed every 500 ms (attempts that
//! fail during an outage are retried). After each fault: `/readyz` must have
//! gone 503 and come back to 200, and every group's newest checkpoint must be
//! the translation of its newest commit. At the end: the checkpoints topic
//! never rewound nor went past a written sync's translation, the log has no
//! panic, and SIGTERM during a SIGSTOPped target still exits within 30 s.
//!
//! Offset expiry, on the same run: the source cluster keeps committed offsets
//! for one minute (`offsets.retention.minutes = 1`, checked every 2 s). A
//! group that commits once before the faults and then goes quiet must have
//! its offsets expired by the coordinator (a tombstone in
//! `__consumer_offsets`), after which an offset sync that would move its old
//! commit emits nothing, and a new commit of the group is checkpointed
//! (docs/commit-follower.md, section 7).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mm2_checkpoint::core::format::OffsetSync;
use mm2_checkpoint::core::{Checkpoint, CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::FlowCluster;
use mm2_checkpoint::driver::{ClusterClient, OutRecord};

use crate::kafka::{self, Layout};
use crate::{probe, topics};

const PARTITIONS: i32 = 2;
const GROUPS: [&str; 3] = ["soak-g0", "soak-g1", "soak-g2"];
const TOPIC: &str = "orders";
/// The daemon's request timeout (admin.timeout.ms); the SIGSTOP lasts longer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const STOP_FOR: Duration = Duration::from_secs(15);
const RECOVERY: Duration = Duration::from_secs(120);
/// The group whose offsets expire, and its own topic (one partition).
const EXPIRING_GROUP: &str = "soak-expiring";
const EXPIRING_TOPIC: &str = "expiring";
/// The source cluster's offset retention and how often it is enforced.
const RETENTION_OVERRIDES: [(&str, &str); 2] = [
    ("offsets.retention.minutes", "1"),
    ("offsets.retention.check.interval.ms", "2000"),
];

/// Entry point.
pub fn run(root: &Path, args: &[&str]) -> Result<ExitCode> {
    let usage = "usage: cargo xtask soak [--seconds N] [--mode follow|poll]";
    let mut seconds = 300;
    let mut follow = true;
    let mut rest = args;
    while !rest.is_empty() {
        match rest {
            ["--seconds", n, tail @ ..] => {
                seconds = n.parse().with_context(|| format!("--seconds {n:?}"))?;
                rest = tail;
            }
            ["--mode", m, tail @ ..] => {
                follow = match *m {
                    "follow" => true,
                    "poll" => false,
                    _ => bail!("{usage}"),
                };
                rest = tail;
            }
            _ => bail!("{usage}"),
        }
    }
    let mut layout = Layout::at(root.join("target").join("kafka-soak"));
    layout.broker_overrides = RETENTION_OVERRIDES.to_vec();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "-p", "mm2-checkpoint", "--bin", "mm2-checkpoint"])
        .current_dir(root)
        .status()
        .context("building mm2-checkpoint")?;
    if !status.success() {
        bail!("building mm2-checkpoint failed");
    }
    // Cargo's target directory, so a CARGO_TARGET_DIR is honoured.
    let bin = crate::dist::artefact::Package::load(root)?
        .target_dir
        .join("debug")
        .join("mm2-checkpoint");
    kafka::up(&layout)?;
    let result = soak(&layout, &bin, Duration::from_secs(seconds), follow).and_then(|summary| {
        let members = membership_phase(root, &layout)?;
        Ok(format!("{summary}\n{members}"))
    });
    // Whatever happened, no broker stays stopped or running.
    let _ = kafka::pause_broker(&layout, "target", false);
    if let Err(e) = kafka::down(&layout) {
        eprintln!("soak: warning: stopping the soak clusters failed: {e:#}");
    }
    match result {
        Ok(summary) => {
            println!("{summary}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("soak: FAILED: {e:#}");
            Ok(ExitCode::FAILURE)
        }
    }
}

struct Daemon {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    fn alive(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("the daemon exited ({status}); see {}", self.log.display());
        }
        Ok(())
    }

    fn ready(&self) -> Option<u16> {
        probe::http_status(&self.addr, "/readyz")
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// The soak's world: clients, the syncs written, the newest confirmed step.
struct World {
    rt: tokio::runtime::Runtime,
    source: ClusterClient,
    target: ClusterClient,
    syncs: BTreeMap<i32, Vec<(i64, i64)>>,
    /// Newest step whose syncs and commits all succeeded.
    done: i64,
    next: i64,
    failed_steps: u64,
}

/// The offset-syncs topic of the soak's flow, `source->target`.
fn syncs_topic() -> String {
    topics::offset_syncs("target")
}

/// The checkpoints topic of the soak's flow.
fn checkpoints_topic() -> String {
    topics::checkpoints("source")
}

fn timeout<T>(
    rt: &tokio::runtime::Runtime,
    f: impl std::future::Future<Output = Result<T, kafka_lite::Error>>,
) -> Result<T> {
    match rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), f).await }) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(anyhow::anyhow!("{e}")),
        Err(_) => bail!("timed out"),
    }
}

impl World {
    /// One step: a sync at upstream 10k per partition, then every group
    /// commits 10k. Failures (outages) leave `done` behind; retried later.
    fn step(&mut self) {
        let k = self.next;
        let records: Vec<OutRecord> = (0..PARTITIONS)
            .filter_map(|p| {
                let sync = OffsetSync {
                    topic_partition: TopicPartition::new(TOPIC, p),
                    upstream_offset: 10 * k,
                    downstream_offset: 10 * k + 3,
                };
                Some(OutRecord {
                    key: sync.encode_key().ok()?,
                    value: sync.encode_value(),
                    timestamp: 0,
                })
            })
            .collect();
        // Recorded before producing: a produce that fails may still land.
        for p in 0..PARTITIONS {
            let s = self.syncs.entry(p).or_default();
            if !s.contains(&(10 * k, 10 * k + 3)) {
                s.push((10 * k, 10 * k + 3));
            }
        }
        let ok = timeout(&self.rt, self.source.produce(&syncs_topic(), 0, &records)).is_ok()
            && GROUPS.iter().all(|g| {
                let map = (0..PARTITIONS)
                    .map(|p| {
                        (
                            TopicPartition::new(TOPIC, p),
                            CommittedOffset::new(10 * k, ""),
                        )
                    })
                    .collect();
                timeout(&self.rt, self.source.commit_group_offsets(g, &map)).is_ok()
            });
        if ok {
            self.done = k;
            self.next = k + 1;
        } else {
            self.failed_steps += 1;
        }
    }

    fn checkpoints(&self) -> Result<Vec<Checkpoint>> {
        let t = &self.target;
        let topic = checkpoints_topic();
        let mut out = Vec::new();
        for r in timeout(&self.rt, t.read_to_end(&topic, 0))? {
            out.push(
                Checkpoint::decode(r.key.as_deref(), r.value.as_deref())
                    .map_err(|e| anyhow::anyhow!("checkpoint at {}: {e}", r.offset))?,
            );
        }
        Ok(out)
    }

    /// The (upstream, downstream) pairs of the expiring group's checkpoints.
    fn expiring_checkpoints(&self) -> Result<Vec<(i64, i64)>> {
        Ok(self
            .checkpoints()?
            .iter()
            .filter(|c| c.key.group == EXPIRING_GROUP)
            .map(|c| (c.upstream_offset, c.downstream_offset))
            .collect())
    }

    /// Writes the offset sync `upstream → downstream` of the expiring topic.
    fn expiring_sync(&self, upstream: i64, downstream: i64) -> Result<()> {
        let sync = OffsetSync {
            topic_partition: TopicPartition::new(EXPIRING_TOPIC, 0),
            upstream_offset: upstream,
            downstream_offset: downstream,
        };
        let record = OutRecord {
            key: sync
                .encode_key()
                .map_err(|e| anyhow::anyhow!("offset sync key: {e}"))?,
            value: sync.encode_value(),
            timestamp: 0,
        };
        timeout(&self.rt, self.source.produce(&syncs_topic(), 0, &[record]))?;
        Ok(())
    }

    /// Commits `offset` of the expiring topic for the expiring group.
    fn expiring_commit(&self, offset: i64) -> Result<()> {
        let map = [(
            TopicPartition::new(EXPIRING_TOPIC, 0),
            CommittedOffset::new(offset, ""),
        )]
        .into_iter()
        .collect();
        timeout(
            &self.rt,
            self.source.commit_group_offsets(EXPIRING_GROUP, &map),
        )?;
        Ok(())
    }

    /// Whether the source still holds offsets of the expiring group.
    fn expiring_has_offsets(&self) -> Result<bool> {
        let fetched = timeout(
            &self.rt,
            self.source
                .fetch_group_offsets(&[EXPIRING_GROUP.to_owned()]),
        )?;
        Ok(match fetched.get(EXPIRING_GROUP) {
            Some(Ok(offsets)) => offsets.values().any(Option::is_some),
            Some(Err(e)) => bail!("OffsetFetch of {EXPIRING_GROUP}: {e}"),
            None => false,
        })
    }

    /// Whether every group's newest checkpoint is (10·done, 10·done + 3).
    fn caught_up(&self) -> bool {
        let Ok(cps) = self.checkpoints() else {
            return false;
        };
        let latest: BTreeMap<(String, i32), (i64, i64)> = cps
            .iter()
            .map(|c| {
                (
                    (c.key.group.clone(), c.key.topic_partition.partition),
                    (c.upstream_offset, c.downstream_offset),
                )
            })
            .collect();
        GROUPS.iter().all(|g| {
            (0..PARTITIONS).all(|p| {
                latest.get(&(g.to_string(), p)) == Some(&(10 * self.done, 10 * self.done + 3))
            })
        })
    }
}

/// Steps while waiting for `cond`; fails after `limit`.
fn step_until(
    w: &mut World,
    d: &mut Daemon,
    what: &str,
    limit: Duration,
    mut cond: impl FnMut(&mut World, &Daemon) -> bool,
) -> Result<Duration> {
    let started = Instant::now();
    loop {
        d.alive()?;
        if cond(w, d) {
            return Ok(started.elapsed());
        }
        if started.elapsed() > limit {
            bail!("timed out after {limit:?} waiting for {what}");
        }
        w.step();
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn soak(layout: &Layout, bin: &Path, duration: Duration, follow: bool) -> Result<String> {
    let file = kafka::read_clusters_file(layout)?;
    let boot = |name: &str| -> Result<String> {
        Ok(file
            .clusters
            .get(name)
            .with_context(|| format!("no cluster {name}"))?
            .bootstrap
            .plaintext
            .clone())
    };
    let (sb, tb) = (boot("source")?, boot("target")?);
    let client = |alias: &str, b: &str| {
        ClusterClient::new(
            alias,
            vec![b.to_string()],
            kafka_lite::ConnectionConfig::default(),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut w = World {
        source: client("source", &sb)?,
        target: client("target", &tb)?,
        rt,
        syncs: BTreeMap::new(),
        done: -1,
        next: 0,
        failed_steps: 0,
    };
    timeout(&w.rt, w.source.create_topic(TOPIC, PARTITIONS, 1, &[]))?;
    timeout(
        &w.rt,
        w.target
            .create_topic(&topics::remote("source", TOPIC), PARTITIONS, 1, &[]),
    )?;
    timeout(
        &w.rt,
        w.source
            .create_topic(&syncs_topic(), 1, 1, &[("cleanup.policy", "compact")]),
    )?;
    timeout(&w.rt, w.source.create_topic(EXPIRING_TOPIC, 1, 1, &[]))?;
    timeout(
        &w.rt,
        w.target
            .create_topic(&topics::remote("source", EXPIRING_TOPIC), 1, 1, &[]),
    )?;
    w.step();
    if w.done != 0 {
        bail!("the first step failed on healthy clusters");
    }
    let dir = layout.root.join("daemon");
    std::fs::create_dir_all(&dir)?;
    let config = dir.join("mm2.properties");
    std::fs::write(
        &config,
        format!(
            "clusters = source, target\n\
             source.bootstrap.servers = {sb}\n\
             target.bootstrap.servers = {tb}\n\
             source->target.enabled = true\n\
             groups = soak-.*\n\
             {mode}\n\
             admin.timeout.ms = {}\n",
            REQUEST_TIMEOUT.as_millis(),
            mode = if follow {
                "mm2-checkpoint.group.offsets.mode = follow\nemit.checkpoints.interval.seconds = 3600"
            } else {
                "mm2-checkpoint.group.offsets.mode = poll\nemit.checkpoints.interval.seconds = 1"
            },
        ),
    )?;
    let log = dir.join("daemon.log");
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(bin)
        .args(["run", "--config"])
        .arg(&config)
        .args(["--metrics-addr", &addr])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()
        .context("spawning the daemon")?;
    let mut d = Daemon { child, addr, log };
    step_until(&mut w, &mut d, "the first checkpoints", RECOVERY, |w, d| {
        d.ready() == Some(200) && w.caught_up()
    })?;
    // The expiring group: one commit at 5 over the sync 0 → 0, checkpointed
    // as (5, 1); then it stays quiet while the faults run.
    w.expiring_sync(0, 0)?;
    w.expiring_commit(5)?;
    let committed_at = Instant::now();
    step_until(
        &mut w,
        &mut d,
        "the expiring group's checkpoint",
        RECOVERY,
        |w, _| {
            w.expiring_checkpoints()
                .is_ok_and(|c| c.last() == Some(&(5, 1)))
        },
    )?;

    let started = Instant::now();
    let mut outages = Vec::new();
    let mut checks = 0u64;
    loop {
        for fault in ["kill -9 source", "kill -9 target", "SIGSTOP target"] {
            let warns_before = d.log_text().matches(" WARN ").count();
            let t0 = Instant::now();
            let mut saw_503 = false;
            match fault {
                "kill -9 source" | "kill -9 target" => {
                    let name = if fault.ends_with("source") {
                        "source"
                    } else {
                        "target"
                    };
                    // Kill at a varying phase of the daemon's 1 s round.
                    std::thread::sleep(Duration::from_millis(200 * (outages.len() as u64 % 5)));
                    kafka::kill_broker(layout, name)?;
                    step_until(
                        &mut w,
                        &mut d,
                        &format!("/readyz 503 after {fault}"),
                        RECOVERY,
                        |_, d| {
                            saw_503 |= d.ready() == Some(503);
                            saw_503
                        },
                    )?;
                    kafka::restart_broker(layout, name)?;
                }
                _ => {
                    kafka::pause_broker(layout, "target", true)?;
                    let r = step_until(
                        &mut w,
                        &mut d,
                        "/readyz 503 while the target is stopped",
                        STOP_FOR + RECOVERY,
                        |_, d| {
                            saw_503 |= d.ready() == Some(503);
                            saw_503 && t0.elapsed() >= STOP_FOR
                        },
                    );
                    kafka::pause_broker(layout, "target", false)?;
                    r?;
                }
            }
            let recovered = step_until(
                &mut w,
                &mut d,
                &format!("recovery from {fault}"),
                RECOVERY,
                |w, d| d.ready() == Some(200) && w.caught_up(),
            )?;
            checks += (GROUPS.len() as u64) * PARTITIONS as u64;
            let warns = d.log_text().matches(" WARN ").count() - warns_before;
            if warns == 0 {
                bail!("{fault}: the daemon logged no warning");
            }
            let line = format!(
                "{fault}: outage {:.1}s, back to ready and correct {:.1}s after recovery, {warns} warnings logged",
                (t0.elapsed() - recovered).as_secs_f64(),
                recovered.as_secs_f64()
            );
            eprintln!("soak: {line}");
            outages.push(line);
        }
        if started.elapsed() >= duration {
            break;
        }
    }

    let expiry = expiry_phase(&mut w, &mut d, committed_at)?;

    // Soundness of the soak topic's checkpoints (the expiring topic has its
    // own checks above). A checkpoint names the remote topic.
    let remote = topics::remote("source", TOPIC);
    let cps: Vec<Checkpoint> = w
        .checkpoints()?
        .into_iter()
        .filter(|c| c.key.topic_partition.topic == remote)
        .collect();
    if cps.is_empty() {
        bail!("no checkpoint of {remote} to check for soundness");
    }
    let mut last: BTreeMap<(String, i32), (i64, i64)> = BTreeMap::new();
    let mut rewinds = 0;
    let mut past = 0;
    for c in &cps {
        let key = (c.key.group.clone(), c.key.topic_partition.partition);
        let now = (c.upstream_offset, c.downstream_offset);
        if let Some(prev) = last.get(&key)
            && (now.0 < prev.0 || now.1 < prev.1)
        {
            rewinds += 1;
        }
        let ceiling = w.syncs.get(&key.1).and_then(|s| {
            s.iter()
                .filter(|(u, _)| *u <= now.0)
                .max_by_key(|(u, _)| *u)
                .map(|&(u, dn)| if u == now.0 { dn } else { dn + 1 })
        });
        if ceiling.is_none_or(|c| now.1 > c) {
            past += 1;
        }
        last.insert(key, now);
    }
    let panics = d.log_text().matches("panicked").count();

    // SIGTERM while the target is stopped: shutdown is still bounded.
    kafka::pause_broker(layout, "target", true)?;
    std::thread::sleep(Duration::from_secs(2));
    let pid = d.child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status()?;
    let t = Instant::now();
    let exit = loop {
        if let Some(s) = d.child.try_wait()? {
            break s;
        }
        if t.elapsed() > Duration::from_secs(30) {
            kafka::pause_broker(layout, "target", false)?;
            bail!("no exit within 30 s of SIGTERM while the target broker was stopped");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let shutdown = t.elapsed();
    kafka::pause_broker(layout, "target", false)?;
    if rewinds + past + panics > 0 {
        bail!(
            "checkpoints: {rewinds} rewinds, {past} past the translation; {panics} panics in the log"
        );
    }
    Ok(format!(
        "soak: {} outages survived in {:.0}s\n  {}\n\
         checkpoints checked after recovery: {checks}; records checked: {}; \
         steps: {} ({} attempts failed during outages)\n\
         rewinds: 0, lost: 0, past the translation: 0, panics: 0\n\
         {expiry}\n\
         SIGTERM with the target stopped: {exit} after {:.1}s",
        outages.len(),
        started.elapsed().as_secs_f64(),
        outages.join("\n  "),
        cps.len(),
        w.done + 1,
        w.failed_steps,
        shutdown.as_secs_f64()
    ))
}

/// Rolling restarts of several instances with membership on
/// (docs/membership.md), many more than `cargo xtask test` runs, with the
/// target broker (group and transaction coordinator) killed and restarted in
/// the middle: the test `rolling_restarts_...` of `daemon_membership.rs`, on
/// the soak's clusters.
fn membership_phase(root: &Path, layout: &Layout) -> Result<String> {
    const RESTARTS: usize = 20;
    const TEST: &str =
        "rolling_restarts_keep_checkpoints_monotonic_for_both_isolations_and_one_writer_at_a_time";
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut child = Command::new(cargo)
        .args(["test", "-p", "e2e", "--test", "daemon_membership", TEST])
        .args(["--", "--exact", "--nocapture"])
        .env(e2e::CLUSTERS_FILE_ENV, layout.clusters_file())
        .env("MM2_ROLLING_RESTARTS", RESTARTS.to_string())
        .current_dir(root)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("running the rolling-restart test")?;
    let stderr = child.stderr.take().context("the test's stderr")?;
    let lines = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .inspect(|l| eprintln!("soak: membership: {l}"))
            .collect::<Vec<String>>()
    });
    // Once the instances roll, take the target broker away and back.
    std::thread::sleep(Duration::from_secs(30));
    let restart =
        kafka::kill_broker(layout, "target").and_then(|()| kafka::restart_broker(layout, "target"));
    let status = child.wait()?;
    let lines = lines.join().unwrap_or_default();
    restart.context("restarting the target broker during the rolling restarts")?;
    if !status.success() {
        bail!("the rolling-restart test failed ({status}); its output is above");
    }
    let summary = lines
        .iter()
        .find(|l| l.contains("rolling restarts:"))
        .cloned()
        .unwrap_or_default();
    Ok(format!(
        "membership: {summary} (the target broker killed and restarted during them); \
         checkpoints backwards 0, past the syncs 0, target group rewinds 0, for read_committed and read_uncommitted readers"
    ))
}

/// Waits for the coordinator to expire the quiet group's offsets, then checks
/// that the daemon kept nothing of them: a sync 5 → 100, which would
/// translate the expired commit (5) to 100, emits nothing for the group, and
/// a new commit (7) is checkpointed over that sync as (7, 101).
fn expiry_phase(w: &mut World, d: &mut Daemon, committed_at: Instant) -> Result<String> {
    step_until(
        w,
        d,
        "the coordinator to expire the quiet group's offsets",
        RECOVERY,
        |w, _| w.expiring_has_offsets().is_ok_and(|has| !has),
    )?;
    let expired_after = committed_at.elapsed();
    let before = w.expiring_checkpoints()?;
    w.expiring_sync(5, 100)?;
    // Long enough for the follower's window and for a polled round.
    let settle = Instant::now();
    step_until(w, d, "a settle period", Duration::from_secs(10), |_, _| {
        settle.elapsed() >= Duration::from_secs(5)
    })?;
    let after = w.expiring_checkpoints()?;
    if after != before {
        bail!(
            "offset expiry: checkpoints of {EXPIRING_GROUP} emitted after its offsets expired: \
             {:?}",
            &after[before.len().min(after.len())..]
        );
    }
    w.expiring_commit(7)?;
    step_until(
        w,
        d,
        "the re-committed group's checkpoint",
        RECOVERY,
        |w, _| {
            w.expiring_checkpoints()
                .is_ok_and(|c| c.last() == Some(&(7, 101)))
        },
    )?;
    let line = format!(
        "offset expiry: {EXPIRING_GROUP}'s offsets expired {:.0}s after its only commit; \
         nothing emitted for it afterwards over a sync that would have moved its old \
         commit; its next commit checkpointed",
        expired_after.as_secs_f64()
    );
    eprintln!("soak: {line}");
    Ok(line)
}
