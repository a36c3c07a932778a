//! `cargo xtask bench latency`: how long after a group commits on the source
//! its checkpoint is readable on the target, and its offset is in the target
//! group, for ours following `__consumer_offsets`, ours polling every second,
//! and MirrorMaker 2's checkpoint connector (at 1 s and at its 60 s default).
//!
//! Each side gets a fresh workload (a topic of P partitions, its offset syncs
//! and N groups committed at the newest sync, seeded as `bench mm2` seeds, and
//! the remote topic on the target so target groups can be committed), and runs
//! alone. Once every seeded checkpoint is visible, every group commits once a
//! second with kafka-lite's admin commit (no members), the groups spread over
//! ten slices of 100 ms, at an offset one sync step further each round; the
//! sync of the next round is written a round ahead, so every commit
//! translates exactly. Two watchers on the target record when each
//! checkpoint arrives (the checkpoints topic) and when each target group
//! offset is written (the target's `__consumer_offsets`, read as the commit
//! follower reads the source's). A commit counts as covered by the first
//! checkpoint (or target offset) of its round or a later one: what a consumer
//! failing over then would resume from. See docs/benchmarks.md.

mod args;
mod report;
mod stats;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kafka_lite::StartOffset;
use mm2_checkpoint::core::consumer_offsets::{self, OffsetsRecord};
use mm2_checkpoint::core::format::Checkpoint;
use mm2_checkpoint::core::{CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::FlowCluster;
use mm2_checkpoint::driver::{ClusterClient, fetch_options};

use super::env::lite;
use super::logs::ours_offsets_replay;
use super::mm2::JVM_OPTS;
use super::process::{Guard, cpu_per_round, sample};
use super::seed::sync_record;
use super::side_by_side::{Bench, FIRST_ROUND_TIMEOUT, Flow, git_head};
use crate::{procfs, topics};

pub use args::{LatencyArgs, Side};
use report::{LatencyReport, Replay, SideResult, render_raw, render_table};
use stats::{Seen, coverage_delays, percentiles, round_of_downstream, round_of_upstream};

/// The commit slices of a second: group `i` of `N` commits in slice `i·S/N`.
const SLICES: usize = 10;
/// Most commit requests in flight at once.
const IN_FLIGHT: usize = 200;
/// Connections the commits are spread over: a broker serves one
/// connection's requests one at a time, so one connection drives only
/// 1 ÷ (commit latency) commits a second.
const COMMIT_CONNECTIONS: usize = 16;
/// The follower's and the watchers' fetch wait.
const FETCH_WAIT: Duration = Duration::from_millis(100);
/// After the last commit, how long to wait beyond two emit intervals for the
/// rest to be covered.
const DRAIN_EXTRA: Duration = Duration::from_secs(10);

/// One observation of a group-partition on the target.
#[derive(Debug, Clone, Copy)]
struct Obs {
    group: usize,
    partition: i32,
    seen: Seen,
}

/// What the two watchers saw so far.
#[derive(Default)]
struct Observed {
    checkpoints: Vec<Obs>,
    target: Vec<Obs>,
}

/// The index of a bench group named `<prefix>-g<i>`.
fn group_index(prefix: &str, group: &str) -> Option<usize> {
    group.strip_prefix(prefix)?.strip_prefix("-g")?.parse().ok()
}

fn now_ms(origin: Instant) -> f64 {
    origin.elapsed().as_secs_f64() * 1e3
}

/// Follows the flow's checkpoints topic from its start (once it exists).
async fn watch_checkpoints(
    client: ClusterClient,
    topic: String,
    prefix: String,
    origin: Instant,
    out: Arc<Mutex<Observed>>,
) {
    let mut reader = loop {
        if matches!(client.topic_exists(&topic).await, Ok(true))
            && let Ok(r) = client
                .topic_reader(&topic, StartOffset::Earliest, fetch_options(FETCH_WAIT))
                .await
        {
            break r;
        }
        tokio::time::sleep(FETCH_WAIT).await;
    };
    loop {
        let Ok(poll) = client.poll_topic(&mut reader).await else {
            tokio::time::sleep(FETCH_WAIT).await;
            continue;
        };
        let at_ms = now_ms(origin);
        let mut seen = Vec::new();
        for part in poll.records {
            for r in part.records {
                let Ok(cp) = Checkpoint::decode(r.key.as_deref(), r.value.as_deref()) else {
                    continue;
                };
                if let (Some(group), Some(round)) = (
                    group_index(&prefix, &cp.key.group),
                    round_of_upstream(cp.upstream_offset),
                ) {
                    let partition = cp.key.topic_partition.partition;
                    seen.push(Obs {
                        group,
                        partition,
                        seen: Seen { round, at_ms },
                    });
                }
            }
        }
        if let Ok(mut o) = out.lock() {
            o.checkpoints.extend(seen);
        }
    }
}

/// Follows the target's `__consumer_offsets` from `reader`'s position for
/// commits of the bench's groups to `remote_topic`.
async fn watch_target(
    client: ClusterClient,
    mut reader: kafka_lite::TopicReader,
    remote_topic: String,
    prefix: String,
    origin: Instant,
    out: Arc<Mutex<Observed>>,
) {
    loop {
        let Ok(poll) = client.poll_topic(&mut reader).await else {
            tokio::time::sleep(FETCH_WAIT).await;
            continue;
        };
        let at_ms = now_ms(origin);
        let mut seen = Vec::new();
        for part in poll.records {
            for r in part.records {
                let Ok(OffsetsRecord::OffsetCommit {
                    group,
                    topic_partition,
                    value: Some(v),
                }) = consumer_offsets::decode(r.key.as_deref(), r.value.as_deref())
                else {
                    continue;
                };
                if topic_partition.topic != remote_topic {
                    continue;
                }
                if let (Some(group), Some(round)) =
                    (group_index(&prefix, &group), round_of_downstream(v.offset))
                {
                    seen.push(Obs {
                        group,
                        partition: topic_partition.partition,
                        seen: Seen { round, at_ms },
                    });
                }
            }
        }
        if let Ok(mut o) = out.lock() {
            o.target.extend(seen);
        }
    }
}

/// The highest round seen per group-partition (`groups × partitions`, -1 = none).
fn max_rounds(obs: &[Obs], groups: usize, partitions: i32) -> Vec<i64> {
    let mut max = vec![-1i64; groups * partitions as usize];
    for o in obs {
        if o.group < groups && (0..partitions).contains(&o.partition) {
            let i = o.group * partitions as usize + o.partition as usize;
            max[i] = max[i].max(o.seen.round);
        }
    }
    max
}

/// Per group-partition delays from `commits[group][round - 1]` to coverage.
fn delays(commits: &[Vec<f64>], obs: &[Obs], partitions: i32) -> (Vec<f64>, usize) {
    let mut by_gp: BTreeMap<(usize, i32), Vec<Seen>> = BTreeMap::new();
    for o in obs {
        by_gp
            .entry((o.group, o.partition))
            .or_default()
            .push(o.seen);
    }
    let mut all = Vec::new();
    let mut missing = 0;
    for (g, times) in commits.iter().enumerate() {
        for p in 0..partitions {
            let seen = by_gp.get(&(g, p)).map(Vec::as_slice).unwrap_or(&[]);
            let (d, m) = coverage_delays(times, seen);
            all.extend(d);
            missing += m;
        }
    }
    (all, missing)
}

impl Bench {
    /// The flow of one side: its own aliases, topic and groups, and the
    /// side's settings.
    fn latency_flow(&self, id: &str, side: Side, groups: usize, partitions: i32) -> Flow {
        let mut flow = Flow::new(&format!("lat-{id}"), format!("lt{id}"), groups, partitions)
            .with_source_alias(&format!("ls{id}"));
        let (interval, extra) = match side {
            // Follow mode with the default intervals: its checkpoints and
            // group sync follow the commits.
            Side::Follow => (
                60,
                "mm2-checkpoint.group.offsets.mode = follow\n\
                 sync.group.offsets.enabled = true\n"
                    .to_owned(),
            ),
            Side::FollowNoSync => (
                60,
                "mm2-checkpoint.group.offsets.mode = follow\n".to_owned(),
            ),
            Side::Poll => (
                1,
                "mm2-checkpoint.group.offsets.mode = poll\n\
                 sync.group.offsets.enabled = true\n\
                 sync.group.offsets.interval.seconds = 1\n"
                    .to_owned(),
            ),
            Side::Mm2(s) => (
                s,
                format!(
                    "sync.group.offsets.enabled = true\n\
                     sync.group.offsets.interval.seconds = {s}\n"
                ),
            ),
        };
        flow.emit_interval_s = interval;
        flow.extra = extra;
        flow
    }

    /// Commits round `k` (upstream offset [`stats::upstream_of_round`]) for
    /// `groups` (indexes into `flow.groups`), spread over `clients`; returns
    /// each group's acknowledgement time (ms since `origin`).
    fn commit_round(
        &self,
        clients: &[ClusterClient],
        flow: &Flow,
        k: i64,
        groups: std::ops::Range<usize>,
        origin: Instant,
    ) -> Result<Vec<(usize, f64)>> {
        let offsets: Arc<BTreeMap<TopicPartition, CommittedOffset>> = Arc::new(
            (0..flow.partitions)
                .map(|p| {
                    (
                        TopicPartition::new(&flow.topic, p),
                        CommittedOffset::new(stats::upstream_of_round(k), ""),
                    )
                })
                .collect(),
        );
        let idx: Vec<usize> = groups.collect();
        let mut acks = Vec::with_capacity(idx.len());
        self.rt.block_on(async {
            for chunk in idx.chunks(IN_FLIGHT) {
                let mut set = tokio::task::JoinSet::new();
                for &g in chunk {
                    let s = clients[g % clients.len()].clone();
                    let (name, offsets) = (flow.groups[g].clone(), offsets.clone());
                    set.spawn(async move {
                        let r = s.commit_group_offsets(&name, &offsets).await;
                        (g, now_ms(origin), name, r)
                    });
                }
                while let Some(joined) = set.join_next().await {
                    let (g, at, name, r) = joined.context("a commit task panicked")?;
                    match r {
                        Ok(mm2_checkpoint::driver::CommitOutcome::Committed) => {}
                        Ok(other) => bail!("committing group {name}: {other:?}"),
                        Err(e) => bail!("committing group {name}: {e}"),
                    }
                    acks.push((g, at));
                }
            }
            Ok(())
        })?;
        Ok(acks)
    }

    /// Writes the offset sync of round `k` for every partition.
    fn write_round_syncs(&self, flow: &Flow, k: i64) -> Result<()> {
        let syncs = topics::offset_syncs(&flow.target_alias);
        let records = (0..flow.partitions)
            .map(|p| sync_record(&flow.topic, p, stats::upstream_of_round(k)))
            .collect::<Result<Vec<_>>>()?;
        self.rt.block_on(async {
            lite(
                &format!("producing syncs to {syncs}"),
                self.source.produce(&syncs, 0, &records).await,
            )
        })?;
        Ok(())
    }

    fn spawn_side(&self, side: Side, flow: &Flow, dir: &Path) -> Result<Guard> {
        Ok(match side {
            Side::Follow | Side::FollowNoSync | Side::Poll => self.spawn_ours(flow, dir)?.0,
            Side::Mm2(_) => self.spawn_connect(dir, flow, super::args::Mm2Jvm::Small)?,
        })
    }

    /// One side on a fresh workload of `groups` × `partitions`, committing
    /// for `seconds`.
    fn latency_side(
        &self,
        stamp: u64,
        side: Side,
        groups: usize,
        partitions: i32,
        seconds: u64,
    ) -> Result<SideResult> {
        let tag = match side {
            Side::Follow => "f".to_owned(),
            Side::FollowNoSync => "n".to_owned(),
            Side::Poll => "p".to_owned(),
            Side::Mm2(s) => format!("m{s}-"),
        };
        let id = format!("{stamp}{tag}{groups}");
        let label = format!("latency-{}-{groups}", side.name());
        let dir = self.dir.join(&label);
        let flow = self.latency_flow(&id, side, groups, partitions);
        let loadavg_before = procfs::loadavg();
        eprintln!(
            "bench: {label}: seeding {groups} groups × {partitions} partitions (load {loadavg_before})"
        );
        // The topic and its syncs as `bench mm2` seeds them; round 0 committed
        // here, over many connections.
        let clients = (0..COMMIT_CONNECTIONS)
            .map(|i| {
                ClusterClient::new(
                    &format!("source-{i}"),
                    vec![self.source_addr.clone()],
                    kafka_lite::ConnectionConfig::default(),
                )
                .map_err(|e| anyhow::anyhow!("client for the source: {e}"))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut topic_only = flow.with_source_alias(&flow.source_alias);
        topic_only.groups.clear();
        self.seed(&topic_only, None)?;
        self.commit_round(&clients, &flow, 0, 0..groups, Instant::now())?;
        self.write_round_syncs(&flow, 1)?;
        let remote = topics::remote(&flow.source_alias, &flow.topic);
        self.rt.block_on(async {
            lite(
                &format!("creating {remote} on the target"),
                self.target.create_topic(&remote, partitions, 1, &[]).await,
            )
        })?;

        // The watchers, on connections of their own.
        let target_addr = vec![self.target_addr.clone()];
        let new_client = |what: &str| {
            ClusterClient::new(
                what,
                target_addr.clone(),
                kafka_lite::ConnectionConfig::default(),
            )
            .map_err(|e| anyhow::anyhow!("client for the target: {e}"))
        };
        // A commit of a group outside the bench's names on the remote topic, so
        // the target's `__consumer_offsets` exists (a fresh cluster has none).
        let probe: BTreeMap<TopicPartition, CommittedOffset> =
            [(TopicPartition::new(&remote, 0), CommittedOffset::new(0, ""))].into();
        self.rt.block_on(async {
            lite(
                "committing a probe group on the target",
                self.target
                    .commit_group_offsets(&format!("{}-probe", flow.topic), &probe)
                    .await,
            )
        })?;
        let origin = Instant::now();
        let observed = Arc::new(Mutex::new(Observed::default()));
        let offsets_client = new_client("target")?;
        let reader = self.rt.block_on(async {
            lite(
                "opening the target's __consumer_offsets",
                offsets_client
                    .topic_reader(
                        "__consumer_offsets",
                        StartOffset::Latest,
                        fetch_options(FETCH_WAIT),
                    )
                    .await,
            )
        })?;
        let watchers = [
            self.rt.spawn(watch_target(
                offsets_client,
                reader,
                remote.clone(),
                flow.topic.clone(),
                origin,
                observed.clone(),
            )),
            self.rt.spawn(watch_checkpoints(
                new_client("target")?,
                flow.checkpoints_topic(),
                flow.topic.clone(),
                origin,
                observed.clone(),
            )),
        ];
        let result = self.latency_measure(&clients, side, &flow, &dir, origin, &observed, seconds);
        for w in watchers {
            w.abort();
        }
        let mut r = result?;
        r.loadavg_before = loadavg_before;
        Ok(r)
    }

    #[allow(clippy::too_many_arguments)]
    fn latency_measure(
        &self,
        clients: &[ClusterClient],
        side: Side,
        flow: &Flow,
        dir: &Path,
        origin: Instant,
        observed: &Arc<Mutex<Observed>>,
        seconds: u64,
    ) -> Result<SideResult> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let (groups, partitions) = (flow.groups.len(), flow.partitions);
        let total = groups * partitions as usize;
        let mut proc = self.spawn_side(side, flow, dir)?;
        eprintln!(
            "bench: {}: started (pid {}), waiting for the seeded checkpoints",
            side.name(),
            proc.pid()
        );
        let snapshot = |f: &dyn Fn(&Observed) -> Vec<i64>| -> Vec<i64> {
            observed.lock().map(|o| f(&o)).unwrap_or_default()
        };
        // Ready: every seeded (round 0) checkpoint is readable.
        loop {
            proc.alive()?;
            let max = snapshot(&|o| max_rounds(&o.checkpoints, groups, partitions));
            if max.iter().all(|r| *r >= 0) {
                break;
            }
            if proc.spawned.elapsed() > FIRST_ROUND_TIMEOUT {
                let n = max.iter().filter(|r| **r >= 0).count();
                bail!(
                    "{}: only {n} of {total} seeded checkpoints after {:?}; see {}",
                    proc.what,
                    FIRST_ROUND_TIMEOUT,
                    proc.log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let start_to_ready_s = proc.spawned.elapsed().as_secs_f64();
        let replay = match side {
            Side::Follow | Side::FollowNoSync => {
                let (records, elapsed_ms) =
                    ours_offsets_replay(&proc.log_text()).with_context(|| {
                        format!(
                            "no end-of-replay line for __consumer_offsets in {}",
                            proc.log.display()
                        )
                    })?;
                Some(Replay {
                    records,
                    elapsed_ms,
                })
            }
            _ => None,
        };
        eprintln!(
            "bench: {}: ready after {start_to_ready_s:.1} s; committing for {seconds} s",
            side.name()
        );

        // The commit phase: rounds once a second (late ones start at once)
        // until `seconds` have passed; the last round is always completed.
        let mut acks = vec![Vec::new(); groups];
        let a = sample(proc.pid(), proc.spawned)?;
        let phase = Instant::now();
        let slices = SLICES.min(groups);
        let mut late_ms = 0f64;
        let mut k = 0i64;
        while phase.elapsed() < Duration::from_secs(seconds) {
            k += 1;
            self.write_round_syncs(flow, k + 1)?;
            for row in acks.iter_mut() {
                row.push(f64::NAN);
            }
            for s in 0..slices {
                let due = phase
                    + Duration::from_millis(((k as u64 - 1) * 1000) + (s * 1000 / slices) as u64);
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                } else {
                    late_ms = late_ms.max((now - due).as_secs_f64() * 1e3);
                }
                let range = s * groups / slices..(s + 1) * groups / slices;
                for (g, at) in self.commit_round(clients, flow, k, range, origin)? {
                    acks[g][k as usize - 1] = at;
                }
            }
            proc.alive()?;
        }
        let rounds = k as usize;
        let commit_phase_s = phase.elapsed().as_secs_f64();
        let b = sample(proc.pid(), proc.spawned)?;
        let loadavg_after = procfs::loadavg();

        // Drain: until every commit is covered on both, or the time is up.
        let last = rounds as i64;
        let limit = Duration::from_secs(2 * flow.emit_interval_s) + DRAIN_EXTRA;
        let drain = Instant::now();
        while drain.elapsed() < limit {
            proc.alive()?;
            let cp = snapshot(&|o| max_rounds(&o.checkpoints, groups, partitions));
            let tg = snapshot(&|o| max_rounds(&o.target, groups, partitions));
            let tg = if side.syncs_groups() { tg } else { Vec::new() };
            if cp.iter().chain(&tg).all(|r| *r >= last) {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let drain_s = drain.elapsed().as_secs_f64();
        drop(proc);

        let o = observed
            .lock()
            .map_err(|_| anyhow::anyhow!("a watcher panicked"))?;
        let (cp_delays, cp_missing) = delays(&acks, &o.checkpoints, partitions);
        let (tg_delays, tg_missing) = if side.syncs_groups() {
            delays(&acks, &o.target, partitions)
        } else {
            (Vec::new(), 0)
        };
        let wall = b.at_s - a.at_s;
        Ok(SideResult {
            side: side.name(),
            groups,
            partitions,
            interval_s: flow.emit_interval_s,
            loadavg_before: String::new(),
            loadavg_after,
            start_to_ready_s,
            rounds,
            offsets: rounds * total,
            commit_phase_s,
            max_slice_late_ms: late_ms,
            checkpoint: percentiles(&cp_delays),
            checkpoint_uncovered: cp_missing,
            group_sync: percentiles(&tg_delays),
            group_sync_uncovered: tg_missing,
            drain_s,
            cpu_per_s: cpu_per_round(&a, &b, wall, self.ticks),
            rss_kib: b.rss_kib,
            hwm_kib: b.hwm_kib,
            replay,
            samples: vec![a, b],
        })
    }

    /// Deletes the bench's topics (names starting with the run's stamp) with
    /// Kafka's `kafka-topics` tool; failures are reported, not fatal.
    fn delete_latency_topics(&self, kafka_bin: &Path, stamp: u64) {
        for (addr, regex) in [
            (
                &self.source_addr,
                format!("lat-{stamp}.*|mm2-offset-syncs\\.lt{stamp}.*"),
            ),
            (&self.target_addr, format!("ls{stamp}.*")),
        ] {
            let status = Command::new(kafka_bin.join("kafka-topics"))
                .args(["--bootstrap-server", addr, "--delete", "--topic", &regex])
                .stdout(std::process::Stdio::null())
                .status();
            match status {
                Ok(s) if s.success() => eprintln!("bench: deleted topics /{regex}/ on {addr}"),
                other => eprintln!("bench: could not delete topics /{regex}/ on {addr}: {other:?}"),
            }
        }
    }
}

/// `cargo xtask bench latency ...`.
pub fn run(root: &Path, args: &LatencyArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let (bench, env, stamp) = Bench::start(root, Duration::ZERO, rt)?;
    let mut report = LatencyReport {
        started_unix: stamp,
        kafka_version: env.file.kafka_version.clone(),
        commit: git_head(root),
        jvm_opts: JVM_OPTS.iter().map(|s| (*s).to_owned()).collect(),
        runs: Vec::new(),
    };
    let json: PathBuf = root
        .join("target")
        .join("bench")
        .join(format!("latency-{stamp}.json"));
    let save = |report: &LatencyReport| -> Result<()> {
        std::fs::write(&json, serde_json::to_string_pretty(report)? + "\n")
            .with_context(|| format!("writing {}", json.display()))
    };
    let mut plan: Vec<(Side, usize, u64)> = args
        .sides
        .iter()
        .map(|&side| {
            let seconds = match side {
                // Two of MM2's rounds at least.
                Side::Mm2(s) => args.seconds.max(2 * s + 10),
                _ => args.seconds,
            };
            (side, args.groups, seconds)
        })
        .collect();
    if let Some(n) = args.heavy_groups {
        plan.push((Side::FollowNoSync, n, args.seconds));
    }
    if let Some(n) = args.big_groups {
        plan.push((Side::FollowNoSync, n, args.big_seconds));
    }
    let mut outcome = Ok(());
    for (side, groups, seconds) in plan {
        match bench.latency_side(stamp, side, groups, args.partitions, seconds) {
            Ok(r) => {
                eprint!(
                    "{}",
                    render_raw(&LatencyReport {
                        runs: vec![r.clone()],
                        ..LatencyReport::default()
                    })
                );
                report.runs.push(r);
                save(&report)?;
            }
            Err(e) => {
                outcome = Err(e.context(format!("{} with {groups} groups", side.name())));
                break;
            }
        }
    }
    if !args.keep_topics {
        bench.delete_latency_topics(&env.file.kafka_bin, stamp);
    }
    save(&report)?;
    // What was measured is shown even if a later run failed.
    let text = format!(
        "{}\nRaw numbers:\n\n{}\nRaw JSON: {}; run files: {}\n",
        render_table(&report),
        render_raw(&report),
        json.display(),
        bench.dir.display()
    );
    println!("{text}");
    if let Some(out) = &args.out {
        std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
    }
    outcome?;
    Ok(())
}
