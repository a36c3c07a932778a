//! `cargo xtask bench [-- ARGS]` and `cargo xtask bench mm2 [...]`.
//!
//! The first runs the workspace's criterion benches (`cargo bench --workspace
//! ARGS`) with the test clusters up (the OffsetFetch bench needs them).
//!
//! The second measures MirrorMaker 2's checkpoint connector and our release
//! binary side by side, on the same clusters and the same input, one after the
//! other (never both at once):
//!
//! * **MM2** runs as a Kafka Connect *standalone* worker
//!   (`org.apache.kafka.connect.cli.ConnectStandalone`) with only
//!   `MirrorCheckpointConnector`: what a user replaces with our binary.
//! * **ours** runs as `mm2-checkpoint run --metrics-addr ... --log-format json`.
//!
//! Per group count N, one workload: a fresh topic of P partitions on the
//! source, a fresh offset-syncs topic (`mm2-offset-syncs.<target alias>.internal`)
//! holding syncs written with the core's encoder, and N groups committed (admin
//! commit) on every partition at the newest sync. Both implementations read the
//! same syncs topic and the same groups; each gets its own source alias, so
//! each writes to its own, fresh `<alias>.checkpoints.internal` on the target.
//!
//! The catch-up run fills another fresh offset-syncs topic with `--syncs`
//! syncs and measures how long each implementation takes to read it, against
//! a run with an empty one.
//!
//! Every process started here is killed when its guard drops, also on errors.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use mm2_checkpoint::core::format::{Checkpoint, OffsetSync};
use mm2_checkpoint::core::{CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::kafka::{ClusterClient, OutRecord};
use serde::Serialize;

use crate::kafka::{self, ClustersFile, ClustersGuard, GuardNotes, Layout};
use crate::{probe, procfs, topics};

const USAGE: &str = "\
usage: cargo xtask bench [-- CRITERION ARGS]
       cargo xtask bench mm2 [--groups 10,100,1000] [--partitions 10]
                             [--syncs 1000000] [--window 30] [--out FILE]";

/// Upstream offsets get a sync every `SYNC_STEP` records, `SYNCS_PER_PARTITION`
/// times; groups commit at the newest one, which both sides translate exactly.
const SYNC_STEP: i64 = 100;
const SYNCS_PER_PARTITION: i64 = 11;
/// The mirror's offset = upstream + `SHIFT`.
const SHIFT: i64 = 7;
/// Partitions of the catch-up run's topic; the syncs are spread over them.
const CATCH_UP_PARTITIONS: i32 = 100;
/// Records per produce request when filling a syncs topic.
const PRODUCE_BATCH: usize = 5_000;
/// `emit.checkpoints.interval.seconds` on both sides.
const EMIT_INTERVAL_S: u64 = 1;
/// How long either side may take to write every checkpoint of a workload.
const FIRST_ROUND_TIMEOUT: Duration = Duration::from_secs(600);
/// Wait after the first round before the steady window starts.
const SETTLE: Duration = Duration::from_secs(10);
/// JVM options of the Connect worker: the same as the MM2 of the e2e tests.
const JVM_OPTS: &[&str] = e2e::mm2::JVM_OPTS;
/// Connect's standalone entry point.
const CONNECT_STANDALONE: &str = "org.apache.kafka.connect.cli.ConnectStandalone";
/// What Connect logs when it creates the checkpoint task (MM2 4.1.1).
const MM2_TASK_CREATED: &str = "INFO Creating task ";
/// What MM2's scheduler logs once the task's checkpoint and offset-sync
/// stores are loaded (asynchronously, after the task's `start()`).
const MM2_STORES_LOADED: &str = "starting checkpoint and offset sync stores took";
/// Connect's KafkaBasedLog around the initial read of the offset-syncs topic.
const MM2_SYNCS_READ_START: &str = "Starting KafkaBasedLog with topic mm2-offset-syncs.";
const MM2_SYNCS_READ_DONE: &str = "Finished reading KafkaBasedLog for topic mm2-offset-syncs.";

/// Entry point of `cargo xtask bench ...`.
pub fn run(root: &Path, args: &[&str]) -> Result<ExitCode> {
    match args {
        ["mm2", rest @ ..] => {
            let args = Mm2Args::parse(rest)?;
            mm2(root, &args)?;
            Ok(ExitCode::SUCCESS)
        }
        [] => criterion(root, &[]),
        ["--", extra @ ..] => criterion(root, extra),
        _ => bail!(
            "unknown arguments `{}` for `bench`\n\n{USAGE}",
            args.join(" ")
        ),
    }
}

/// The test clusters for a bench: those of `$MM2_CLUSTERS_FILE` (never started
/// or stopped here), or this worktree's, started if needed and stopped on drop
/// only if this started them.
struct ClusterEnv {
    file: ClustersFile,
    path: PathBuf,
    /// This worktree's clusters, stopped on drop if started here; `None`
    /// for `$MM2_CLUSTERS_FILE`'s.
    _clusters: Option<ClustersGuard>,
}

impl ClusterEnv {
    fn acquire(root: &Path) -> Result<ClusterEnv> {
        if let Some(path) = std::env::var_os("MM2_CLUSTERS_FILE") {
            let path = PathBuf::from(path);
            let text = fs::read_to_string(&path)
                .with_context(|| format!("reading $MM2_CLUSTERS_FILE {}", path.display()))?;
            let file = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", path.display()))?;
            eprintln!("bench: using the clusters of {}", path.display());
            return Ok(ClusterEnv {
                file,
                path,
                _clusters: None,
            });
        }
        let layout = Layout::new(root);
        let clusters = ClustersGuard::up(
            &layout,
            GuardNotes {
                prefix: "bench",
                leaving: None,
                timed: false,
            },
        )?;
        // An error here drops `clusters`, which stops what it started.
        let file = kafka::read_clusters_file(&layout)?;
        Ok(ClusterEnv {
            file,
            path: layout.clusters_file(),
            _clusters: Some(clusters),
        })
    }

    fn bootstrap(&self, name: &str) -> Result<String> {
        Ok(self
            .file
            .clusters
            .get(name)
            .with_context(|| format!("cluster `{name}` missing from {}", self.path.display()))?
            .bootstrap
            .plaintext
            .clone())
    }
}

fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// `cargo xtask bench [-- ARGS]`.
fn criterion(root: &Path, extra: &[&str]) -> Result<ExitCode> {
    let env = ClusterEnv::acquire(root)?;
    // `-p NAME` narrows the run; `--workspace` would override it.
    let narrowed = extra
        .iter()
        .take_while(|a| **a != "--")
        .any(|a| *a == "--package" || a.starts_with("-p") || a.starts_with("--package="));
    let status = Command::new(cargo())
        .arg("bench")
        .args((!narrowed).then_some("--workspace"))
        .args(extra)
        .env("MM2_CLUSTERS_FILE", &env.path)
        .current_dir(root)
        .status()
        .context("running `cargo bench --workspace`")?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        eprintln!("bench: `cargo bench --workspace` failed ({status})");
        ExitCode::FAILURE
    })
}

/// Options of `bench mm2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mm2Args {
    /// Group counts, one workload each.
    pub groups: Vec<usize>,
    /// Partitions per workload topic.
    pub partitions: i32,
    /// Offset syncs in the catch-up run (0 skips it).
    pub syncs: u64,
    /// Seconds of steady state sampled per run.
    pub window: u64,
    /// Where to write the markdown table (besides stdout).
    pub out: Option<PathBuf>,
}

impl Default for Mm2Args {
    fn default() -> Self {
        Self {
            groups: vec![10, 100, 1000],
            partitions: 10,
            syncs: 1_000_000,
            window: 30,
            out: None,
        }
    }
}

impl Mm2Args {
    /// Parses the words after `bench mm2`.
    pub fn parse(words: &[&str]) -> Result<Mm2Args> {
        let mut args = Mm2Args::default();
        let mut it = words.iter();
        while let Some(flag) = it.next() {
            let mut value = || {
                it.next()
                    .copied()
                    .with_context(|| format!("option `{flag}` needs a value\n\n{USAGE}"))
            };
            match *flag {
                "--groups" => {
                    let v = value()?;
                    args.groups = v
                        .split(',')
                        .map(|n| positive(flag, n.trim()))
                        .collect::<Result<_>>()?;
                    if args.groups.is_empty() {
                        bail!("--groups wants a comma-separated list of group counts");
                    }
                }
                "--partitions" => {
                    let v = positive(flag, value()?)?;
                    args.partitions = i32::try_from(v)
                        .ok()
                        .filter(|p| *p <= 10_000)
                        .with_context(|| format!("--partitions {v}: at most 10000"))?;
                }
                "--syncs" => {
                    let v = value()?;
                    args.syncs = v.parse().with_context(|| {
                        format!("--syncs wants a non-negative integer, not {v:?}")
                    })?;
                }
                "--window" => args.window = positive(flag, value()?)? as u64,
                "--out" => args.out = Some(PathBuf::from(value()?)),
                other => bail!("unknown option `{other}` for `bench mm2`\n\n{USAGE}"),
            }
        }
        Ok(args)
    }
}

fn positive(flag: &str, v: &str) -> Result<usize> {
    match v.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => bail!("{flag} wants a positive integer, not {v:?}"),
    }
}

// ---------------------------------------------------------------------------
// Process sampling

/// One reading of a process's memory and CPU time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProcSample {
    /// Seconds since the process was spawned.
    pub at_s: f64,
    /// `VmRSS` (KiB).
    pub rss_kib: u64,
    /// `VmHWM`, the peak RSS so far (KiB).
    pub hwm_kib: u64,
    /// `utime + stime` in clock ticks (whole process, exited threads included).
    pub cpu_ticks: u64,
    /// Sum of the live threads' `se.sum_exec_runtime` (ms, `/proc/PID/task/*/sched`).
    pub threads_cpu_ms: f64,
    /// Per live thread: `se.sum_exec_runtime` (ms).
    #[serde(skip)]
    pub threads: BTreeMap<u32, f64>,
}

/// CPU milliseconds the threads alive at `last` spent since `first` (a thread
/// new since `first` counts whole; threads that exited in between are lost).
pub fn threads_cpu_delta_ms(first: &ProcSample, last: &ProcSample) -> f64 {
    last.threads
        .iter()
        .map(|(tid, ms)| ms - first.threads.get(tid).copied().unwrap_or(0.0))
        .filter(|d| *d > 0.0)
        .sum()
}

fn sample(pid: u32, spawned: Instant) -> Result<ProcSample> {
    let status = procfs::status(pid)?;
    let stat = procfs::stat(pid)?;
    let (rss_kib, hwm_kib) = procfs::parse_status(&status)
        .with_context(|| format!("no VmRSS/VmHWM in /proc/{pid}/status"))?;
    let cpu_ticks = procfs::parse_stat_cpu(&stat)
        .with_context(|| format!("no utime/stime in /proc/{pid}/stat"))?;
    let threads = procfs::threads_cpu_ms(pid);
    Ok(ProcSample {
        at_s: spawned.elapsed().as_secs_f64(),
        rss_kib,
        hwm_kib,
        cpu_ticks,
        threads_cpu_ms: threads.values().sum(),
        threads,
    })
}

fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// CPU seconds per round between two samples, `rounds` rounds apart.
pub fn cpu_per_round(
    first: &ProcSample,
    last: &ProcSample,
    rounds: f64,
    ticks: u64,
) -> Option<f64> {
    if rounds <= 0.0 || ticks == 0 || last.cpu_ticks < first.cpu_ticks {
        return None;
    }
    // The threads' runtimes are precise; the ticks also count threads that
    // exited in between. Whichever shows more is the better estimate.
    let by_ticks = (last.cpu_ticks - first.cpu_ticks) as f64 / ticks as f64;
    let by_threads = threads_cpu_delta_ms(first, last) / 1e3;
    Some(by_ticks.max(by_threads) / rounds)
}

/// `sum` and `count` of `mm2_checkpoint_round_duration_seconds` in a
/// Prometheus text exposition (summed over flows).
pub fn parse_round_metrics(text: &str) -> Option<(f64, u64)> {
    let mut sum = None;
    let mut count = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let value = |name: &str| -> Option<f64> {
            let rest = line.strip_prefix(name)?;
            let rest = rest.strip_prefix(' ').or_else(|| {
                let close = rest.strip_prefix('{')?.find('}')?;
                rest.get(close + 2..)
            })?;
            rest.split_whitespace().next()?.parse().ok()
        };
        if let Some(v) = value("mm2_checkpoint_round_duration_seconds_sum") {
            *sum.get_or_insert(0.0) += v;
        }
        if let Some(v) = value("mm2_checkpoint_round_duration_seconds_count") {
            *count.get_or_insert(0u64) += v as u64;
        }
    }
    Some((sum?, count?))
}

fn scrape(addr: &str) -> Option<(f64, u64)> {
    parse_round_metrics(&probe::http_get(addr, "/metrics")?)
}

/// A child process killed (and reaped) when dropped.
struct Guard {
    child: Child,
    what: String,
    log: PathBuf,
    spawned: Instant,
}

impl Guard {
    fn spawn(mut cmd: Command, what: &str, log: &Path) -> Result<Guard> {
        let out = fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone().context("duplicating a log file handle")?;
        let spawned = Instant::now();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("starting {what}"))?;
        Ok(Guard {
            child,
            what: what.to_owned(),
            log: log.to_owned(),
            spawned,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn alive(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "{} exited ({status}); see {}",
                self.what,
                self.log.display()
            );
        }
        Ok(())
    }

    fn log_text(&self) -> String {
        fs::read(&self.log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// Results

/// What one implementation did on one workload.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunResult {
    /// Spawn → the first checkpoint of the workload's groups visible on the target.
    pub start_to_first_s: f64,
    /// Spawn → all N×P checkpoints visible.
    pub start_to_all_s: f64,
    /// The first (emitting) round: for MM2 the spread of the round's record
    /// timestamps (first → last group polled), for ours the round's measured
    /// duration (OffsetFetch → produce acknowledged).
    pub first_round_s: Option<f64>,
    /// Mean wall time of a steady (non-emitting) round, where known (ours).
    pub steady_round_s: Option<f64>,
    /// Rounds counted in the steady window.
    pub steady_rounds: f64,
    /// CPU seconds per steady round.
    pub cpu_per_round_s: Option<f64>,
    /// RSS at the end of the window (KiB).
    pub steady_rss_kib: u64,
    /// Peak RSS over the whole run (KiB).
    pub peak_rss_kib: u64,
    /// Checkpoints seen (must be N×P).
    pub checkpoints: usize,
    /// MM2 only: Connect creates the task → its stores are loaded (log timestamps).
    pub task_start_to_loaded_s: Option<f64>,
    /// Samples at the start and end of the steady window.
    pub samples: Vec<ProcSample>,
}

impl RunResult {
    /// The common part: `seen` = (first checkpoint, all checkpoints, how
    /// many), and the steady window from `a` to `b` holding `rounds` rounds.
    fn measured(
        seen: (Duration, Duration, usize),
        a: ProcSample,
        b: ProcSample,
        rounds: f64,
        ticks: u64,
    ) -> RunResult {
        RunResult {
            start_to_first_s: seen.0.as_secs_f64(),
            start_to_all_s: seen.1.as_secs_f64(),
            checkpoints: seen.2,
            steady_rounds: rounds,
            cpu_per_round_s: cpu_per_round(&a, &b, rounds, ticks),
            steady_rss_kib: b.rss_kib,
            peak_rss_kib: b.hwm_kib,
            samples: vec![a, b],
            ..RunResult::default()
        }
    }
}

/// One workload's results.
#[derive(Debug, Clone, Serialize)]
pub struct SizeResult {
    /// Groups.
    pub groups: usize,
    /// Partitions per group.
    pub partitions: i32,
    /// Load average (1, 5, 15 min) before the workload.
    pub loadavg: String,
    /// MirrorMaker 2.
    pub mm2: RunResult,
    /// mm2-checkpoint.
    pub ours: RunResult,
}

/// The offset-sync catch-up run.
#[derive(Debug, Clone, Serialize)]
pub struct CatchUp {
    /// Syncs in the full topic.
    pub syncs: u64,
    /// MM2: KafkaBasedLog start → finished reading the offset-syncs topic, full topic.
    pub mm2_full_s: f64,
    /// The same with an empty syncs topic.
    pub mm2_empty_s: f64,
    /// Ours: `read the offset-syncs topic to its end` elapsed_ms, full topic.
    pub ours_full_s: f64,
    /// The same with an empty syncs topic.
    pub ours_empty_s: f64,
    /// Ours: `run --once` wall time (spawn → exit), full topic.
    pub ours_once_full_s: f64,
    /// The same with an empty syncs topic.
    pub ours_once_empty_s: f64,
    /// MM2: spawn → the offset-syncs topic read, full topic.
    pub mm2_spawn_to_loaded_full_s: f64,
    /// Load average before the run.
    pub loadavg: String,
}

/// Everything one `bench mm2` measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Unix seconds at the start.
    pub started_unix: u64,
    /// Kafka version of the clusters.
    pub kafka_version: String,
    /// `git rev-parse --short HEAD`.
    pub commit: String,
    /// JVM options of the Connect worker.
    pub jvm_opts: Vec<String>,
    /// One per group count.
    pub sizes: Vec<SizeResult>,
    /// The catch-up run, unless `--syncs 0`.
    pub catch_up: Option<CatchUp>,
}

/// `a / b` as `"12×"` (one decimal below 10), or `"—"`.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => {
            let r = a / b;
            if r >= 10.0 {
                format!("{r:.0}×")
            } else {
                format!("{r:.1}×")
            }
        }
        _ => "—".to_owned(),
    }
}

/// Seconds, with a unit that keeps 2-3 significant digits.
pub fn secs(v: Option<f64>) -> String {
    match v {
        None => "—".to_owned(),
        Some(s) if s >= 10.0 => format!("{s:.1} s"),
        Some(s) if s >= 1.0 => format!("{s:.2} s"),
        Some(s) if s >= 0.001 => format!("{:.1} ms", s * 1e3),
        Some(s) => format!("{:.0} µs", s * 1e6),
    }
}

fn mib(kib: Option<f64>) -> String {
    kib.map_or_else(|| "—".to_owned(), |k| format!("{:.1} MiB", k / 1024.0))
}

/// The markdown table of a report: one row per metric and group count, the
/// ratio being MM2 ÷ ours (above 1: we use less / are faster).
pub fn render_table(r: &Report) -> String {
    type Cell = fn(Option<f64>) -> String;
    let mut t = String::from(
        "| metric | groups × partitions | MirrorMaker 2 | mm2-checkpoint | MM2 ÷ ours |\n|---|---:|---:|---:|---:|\n",
    );
    let mut row = |metric: &str, size: &str, mm2: Option<f64>, ours: Option<f64>, cell: Cell| {
        t.push_str(&format!(
            "| {metric} | {size} | {} | {} | {} |\n",
            cell(mm2),
            cell(ours),
            ratio(mm2, ours)
        ));
    };
    for s in &r.sizes {
        let size = format!("{} × {}", s.groups, s.partitions);
        let (m, o) = (&s.mm2, &s.ours);
        let kib = |v: u64| Some(v as f64);
        let rows: [(&str, Option<f64>, Option<f64>, Cell); 6] = [
            (
                "start → first checkpoint",
                Some(m.start_to_first_s),
                Some(o.start_to_first_s),
                secs,
            ),
            (
                "start → all checkpoints",
                Some(m.start_to_all_s),
                Some(o.start_to_all_s),
                secs,
            ),
            (
                "first (emitting) round",
                m.first_round_s,
                o.first_round_s,
                secs,
            ),
            (
                "CPU per steady round",
                m.cpu_per_round_s,
                o.cpu_per_round_s,
                secs,
            ),
            (
                "steady RSS",
                kib(m.steady_rss_kib),
                kib(o.steady_rss_kib),
                mib,
            ),
            ("peak RSS", kib(m.peak_rss_kib), kib(o.peak_rss_kib), mib),
        ];
        for (metric, mm2, ours, cell) in rows {
            row(metric, &size, mm2, ours, cell);
        }
    }
    if let Some(c) = &r.catch_up {
        row(
            "offset-sync catch-up (full − empty)",
            &format!("{} syncs", c.syncs),
            Some(c.mm2_full_s - c.mm2_empty_s),
            Some(c.ours_full_s - c.ours_empty_s),
            secs,
        );
    }
    t
}

/// The raw numbers behind the table, one line per run.
pub fn render_raw(r: &Report) -> String {
    let mut t = String::new();
    for s in &r.sizes {
        for (name, x) in [("MM2", &s.mm2), ("ours", &s.ours)] {
            t.push_str(&format!(
                "- {} × {} {name}: first {:.3} s, all {:.3} s ({} checkpoints), first round {}, \
                 steady round {}, {:.0} rounds in the window, CPU/round {}, RSS {} KiB, HWM {} KiB{}; \
                 samples (s, RSS KiB, HWM KiB, CPU ticks, threads' CPU ms): {}; load {}\n",
                s.groups,
                s.partitions,
                x.start_to_first_s,
                x.start_to_all_s,
                x.checkpoints,
                secs(x.first_round_s),
                secs(x.steady_round_s),
                x.steady_rounds,
                secs(x.cpu_per_round_s),
                x.steady_rss_kib,
                x.peak_rss_kib,
                x.task_start_to_loaded_s
                    .map(|v| format!(", task created → stores loaded {v:.3} s"))
                    .unwrap_or_default(),
                x.samples
                    .iter()
                    .map(|p| format!(
                        "({:.1}, {}, {}, {}, {:.1})",
                        p.at_s, p.rss_kib, p.hwm_kib, p.cpu_ticks, p.threads_cpu_ms
                    ))
                    .collect::<Vec<_>>()
                    .join(" → "),
                s.loadavg,
            ));
        }
    }
    if let Some(c) = &r.catch_up {
        t.push_str(&format!(
            "- catch-up, {} syncs: MM2 initial offset-syncs read {:.3} s (empty topic {:.3} s; \
             spawn → read done {:.3} s); ours initial read {:.3} s (empty {:.3} s), \
             `run --once` wall {:.3} s (empty {:.3} s); load {}\n",
            c.syncs,
            c.mm2_full_s,
            c.mm2_empty_s,
            c.mm2_spawn_to_loaded_full_s,
            c.ours_full_s,
            c.ours_empty_s,
            c.ours_once_full_s,
            c.ours_once_empty_s,
            c.loadavg
        ));
    }
    t
}

// ---------------------------------------------------------------------------
// Log parsing

/// Milliseconds since midnight of a Log4j `[yyyy-MM-ddTHH:mm:ss,SSS]` or
/// `[yyyy-MM-dd HH:mm:ss,SSS]` line prefix.
pub fn log4j_millis(line: &str) -> Option<i64> {
    let ts = line.strip_prefix('[')?.get(11..23)?;
    let (hms, ms) = ts.split_once([',', '.'])?;
    let mut parts = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    Some(((h * 60 + m) * 60 + s) * 1000 + ms.parse::<i64>().ok()?)
}

/// Seconds between the first line containing `from` and the first later line
/// containing all of `to` (Log4j timestamps; a day wrap is allowed).
pub fn log_span(text: &str, from: &str, to: &[&str]) -> Option<f64> {
    let mut lines = text.lines();
    let start = lines.by_ref().find(|l| l.contains(from))?;
    let end = lines.find(|l| to.iter().all(|t| l.contains(t)))?;
    let mut d = log4j_millis(end)? - log4j_millis(start)?;
    if d < 0 {
        d += 86_400_000;
    }
    Some(d as f64 / 1e3)
}

/// `elapsed_ms` of our JSON log's `read the offset-syncs topic to its end` line.
pub fn ours_sync_read_ms(log: &str) -> Option<u64> {
    log.lines().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l).ok()?;
        let fields = v.get("fields")?;
        if fields.get("message")?.as_str()? != "read the offset-syncs topic to its end" {
            return None;
        }
        fields.get("elapsed_ms")?.as_u64()
    })
}

// ---------------------------------------------------------------------------
// The side-by-side bench

struct Bench {
    rt: tokio::runtime::Runtime,
    source: ClusterClient,
    target: ClusterClient,
    source_addr: String,
    target_addr: String,
    kafka_libs: String,
    bin: PathBuf,
    dir: PathBuf,
    ticks: u64,
    window: Duration,
}

fn lite<T>(what: &str, r: Result<T, kafka_lite::Error>) -> Result<T> {
    r.map_err(|e| anyhow::anyhow!("{what}: {e}"))
}

fn sync_record(topic: &str, partition: i32, upstream: i64) -> Result<OutRecord> {
    let sync = OffsetSync {
        topic_partition: TopicPartition::new(topic, partition),
        upstream_offset: upstream,
        downstream_offset: upstream + SHIFT,
    };
    Ok(OutRecord {
        key: sync
            .encode_key()
            .with_context(|| format!("encoding a sync key for {topic}"))?,
        value: sync.encode_value(),
        timestamp: 0,
    })
}

/// Where a run writes its checkpoints and which groups it checkpoints.
struct Flow {
    source_alias: String,
    target_alias: String,
    topic: String,
    groups: Vec<String>,
    group_regex: String,
    partitions: i32,
}

impl Flow {
    /// The properties both implementations get alike.
    fn common_properties(&self) -> String {
        format!(
            "topics = {}\ngroups = {}\nemit.checkpoints.interval.seconds = {EMIT_INTERVAL_S}\n\
             checkpoints.topic.replication.factor = 1\n",
            self.topic, self.group_regex
        )
    }

    fn checkpoints_topic(&self) -> String {
        topics::checkpoints(&self.source_alias)
    }

    fn with_source_alias(&self, alias: &str) -> Flow {
        Flow {
            source_alias: alias.to_owned(),
            target_alias: self.target_alias.clone(),
            topic: self.topic.clone(),
            groups: self.groups.clone(),
            group_regex: self.group_regex.clone(),
            partitions: self.partitions,
        }
    }
}

impl Bench {
    /// A fresh topic, its syncs (SYNCS_PER_PARTITION per partition, or
    /// `total_syncs` spread over the partitions), and `groups` committed at the
    /// newest sync of every partition.
    fn seed(&self, flow: &Flow, total_syncs: Option<u64>) -> Result<()> {
        let s = &self.source;
        let syncs = topics::offset_syncs(&flow.target_alias);
        self.rt.block_on(async {
            lite(
                &format!("creating {}", flow.topic),
                s.create_topic(&flow.topic, flow.partitions, 1, &[]).await,
            )?;
            lite(
                &format!("creating {syncs}"),
                s.create_topic(&syncs, 1, 1, &[("cleanup.policy", "compact")])
                    .await,
            )?;
            let per_partition = match total_syncs {
                Some(n) => n.div_ceil(flow.partitions as u64) as i64,
                None => SYNCS_PER_PARTITION,
            };
            let mut batch = Vec::with_capacity(PRODUCE_BATCH);
            let mut written = 0u64;
            let limit = total_syncs.unwrap_or(u64::MAX);
            'outer: for k in 0..per_partition {
                for p in 0..flow.partitions {
                    if written == limit {
                        break 'outer;
                    }
                    batch.push(sync_record(&flow.topic, p, k * SYNC_STEP)?);
                    written += 1;
                    if batch.len() == PRODUCE_BATCH {
                        lite(
                            &format!("producing syncs to {syncs}"),
                            s.produce(&syncs, 0, &batch).await,
                        )?;
                        batch.clear();
                    }
                }
            }
            if !batch.is_empty() {
                lite(
                    &format!("producing syncs to {syncs}"),
                    s.produce(&syncs, 0, &batch).await,
                )?;
            }
            // Commit at the newest sync every partition got.
            let newest = (per_partition.max(1) - 1) * SYNC_STEP;
            let offsets: BTreeMap<TopicPartition, CommittedOffset> = (0..flow.partitions)
                .map(|p| {
                    (
                        TopicPartition::new(&flow.topic, p),
                        CommittedOffset::new(newest, ""),
                    )
                })
                .collect();
            for chunk in flow.groups.chunks(50) {
                let mut set = tokio::task::JoinSet::new();
                for g in chunk {
                    let (s, g, offsets) = (s.clone(), g.clone(), offsets.clone());
                    set.spawn(async move {
                        let r = s.commit_group_offsets(&g, &offsets).await;
                        (g, r)
                    });
                }
                while let Some(joined) = set.join_next().await {
                    let (g, r) = joined.context("a commit task panicked")?;
                    lite(&format!("committing group {g}"), r)?;
                }
            }
            Ok(())
        })
    }

    /// Checkpoints of `flow.groups` read so far from the flow's checkpoints
    /// topic: (group, partition) → record timestamp; plus when each was first
    /// seen. Polls until all are there (or `timeout`), checking `proc` lives.
    fn await_checkpoints(
        &self,
        flow: &Flow,
        proc: &mut Guard,
        mut on_poll: impl FnMut(),
    ) -> Result<(Duration, Duration, Vec<i64>)> {
        let topic = flow.checkpoints_topic();
        let want: BTreeSet<&str> = flow.groups.iter().map(String::as_str).collect();
        let total = want.len() * flow.partitions as usize;
        let mut seen: BTreeMap<(String, i32), i64> = BTreeMap::new();
        let mut first = None;
        let mut pos = 0i64;
        loop {
            proc.alive()?;
            on_poll();
            let fetched = self
                .rt
                .block_on(async {
                    tokio::time::timeout(
                        Duration::from_secs(5),
                        self.target.fetch(&topic, 0, pos, 100),
                    )
                    .await
                })
                .ok()
                .and_then(Result::ok);
            if let Some(f) = fetched {
                for r in &f.records {
                    let cp = Checkpoint::decode(r.key.as_deref(), r.value.as_deref())
                        .map_err(|e| anyhow::anyhow!("checkpoint at {topic}@{}: {e}", r.offset))?;
                    if want.contains(cp.key.group.as_str()) {
                        seen.entry((cp.key.group, cp.key.topic_partition.partition))
                            .or_insert(r.timestamp);
                        first.get_or_insert_with(|| proc.spawned.elapsed());
                    }
                }
                pos = f.next_offset.max(pos);
            } else {
                std::thread::sleep(Duration::from_millis(50));
            }
            if seen.len() >= total {
                let all = proc.spawned.elapsed();
                return Ok((first.unwrap_or(all), all, seen.into_values().collect()));
            }
            if proc.spawned.elapsed() > FIRST_ROUND_TIMEOUT {
                bail!(
                    "{}: only {} of {total} checkpoints in {topic} after {:?}; see {}",
                    proc.what,
                    seen.len(),
                    FIRST_ROUND_TIMEOUT,
                    proc.log.display()
                );
            }
        }
    }

    /// Source alias, target alias, their bootstrap addresses, and the
    /// properties both implementations share, for a config file.
    fn names<'a>(&'a self, flow: &'a Flow) -> (&'a str, &'a str, &'a str, &'a str, String) {
        (
            &flow.source_alias,
            &flow.target_alias,
            &self.source_addr,
            &self.target_addr,
            flow.common_properties(),
        )
    }

    fn connect_command(&self, dir: &Path, flow: &Flow) -> Result<Command> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let write = |name: &str, text: String| -> Result<PathBuf> {
            let p = dir.join(name);
            fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
            Ok(p)
        };
        let worker = write(
            "worker.properties",
            format!(
                "bootstrap.servers = {t}\n\
                 key.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n\
                 value.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n\
                 offset.storage.file.filename = {offsets}\n\
                 offset.flush.interval.ms = 10000\n\
                 listeners = http://127.0.0.1:0\n",
                t = self.target_addr,
                offsets = dir.join("connect.offsets").display(),
            ),
        )?;
        let (s, t, sb, tb, common) = self.names(flow);
        let connector = write(
            "checkpoint-connector.properties",
            format!(
                "name = bench-checkpoints-{s}\n\
                 connector.class = org.apache.kafka.connect.mirror.MirrorCheckpointConnector\n\
                 tasks.max = 1\n\
                 source.cluster.alias = {s}\n\
                 target.cluster.alias = {t}\n\
                 source.cluster.bootstrap.servers = {sb}\n\
                 target.cluster.bootstrap.servers = {tb}\n\
                 sync.group.offsets.enabled = false\n\
                 key.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n\
                 value.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n\
                 {common}",
            ),
        )?;
        let log4j = write(
            "log4j2.properties",
            "appender.out.type = Console\n\
             appender.out.name = OUT\n\
             appender.out.layout.type = PatternLayout\n\
             appender.out.layout.pattern = [%d{ISO8601}] %p %m (%c)%n\n\
             rootLogger.level = INFO\n\
             rootLogger.appenderRef.out.ref = OUT\n"
                .to_owned(),
        )?;
        let mut cmd = Command::new("java");
        cmd.args(JVM_OPTS)
            .arg(format!("-Dlog4j2.configurationFile={}", log4j.display()))
            .arg("-cp")
            .arg(&self.kafka_libs)
            .arg(CONNECT_STANDALONE)
            .arg(&worker)
            .arg(&connector)
            .current_dir(dir);
        Ok(cmd)
    }

    fn ours_config(&self, dir: &Path, flow: &Flow) -> Result<PathBuf> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("mm2.properties");
        let (s, t, sb, tb, common) = self.names(flow);
        fs::write(
            &path,
            format!(
                "clusters = {s}, {t}\n\
                 {s}.bootstrap.servers = {sb}\n\
                 {t}.bootstrap.servers = {tb}\n\
                 {s}->{t}.enabled = true\n\
                 {common}",
            ),
        )
        .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// Samples `proc` at the start and end of the steady window.
    /// Call after [`SETTLE`] has passed since the first round.
    fn window(&self, proc: &mut Guard) -> Result<(ProcSample, ProcSample)> {
        proc.alive()?;
        let a = sample(proc.pid(), proc.spawned)?;
        std::thread::sleep(self.window);
        proc.alive()?;
        let b = sample(proc.pid(), proc.spawned)?;
        Ok((a, b))
    }

    /// The Connect worker running MirrorCheckpointConnector for `flow`,
    /// files and log in `dir`.
    fn spawn_connect(&self, dir: &Path, flow: &Flow) -> Result<Guard> {
        let cmd = self.connect_command(dir, flow)?;
        Guard::spawn(
            cmd,
            "the Connect worker running MirrorCheckpointConnector",
            &dir.join("connect.log"),
        )
    }

    fn run_mm2(&self, flow: &Flow, label: &str) -> Result<RunResult> {
        let mut proc = self.spawn_connect(&self.dir.join(label).join("mm2"), flow)?;
        eprintln!(
            "bench: {label}: MM2 checkpoint connector started (pid {})",
            proc.pid()
        );
        let (first, all, stamps) = self.await_checkpoints(flow, &mut proc, || {})?;
        let spread = match (stamps.iter().min(), stamps.iter().max()) {
            (Some(a), Some(b)) => Some((b - a) as f64 / 1e3),
            _ => None,
        };
        std::thread::sleep(SETTLE);
        let (a, b) = self.window(&mut proc)?;
        let rounds = self.window.as_secs_f64() / EMIT_INTERVAL_S as f64;
        let text = proc.log_text();
        let loaded = log_span(&text, MM2_TASK_CREATED, &[MM2_STORES_LOADED]);
        Ok(RunResult {
            first_round_s: spread,
            task_start_to_loaded_s: loaded,
            ..RunResult::measured((first, all, stamps.len()), a, b, rounds, self.ticks)
        })
    }

    fn run_ours(&self, flow: &Flow, label: &str) -> Result<RunResult> {
        let dir = self.dir.join(label).join("ours");
        let config = self.ours_config(&dir, flow)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .context("picking a free port for the metrics server")?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let mut cmd = Command::new(&self.bin);
        cmd.args([
            "run",
            "--log-format",
            "json",
            "--metrics-addr",
            &addr,
            "--config",
        ])
        .arg(&config);
        let mut proc = Guard::spawn(cmd, "mm2-checkpoint run", &dir.join("daemon.log"))?;
        eprintln!(
            "bench: {label}: mm2-checkpoint started (pid {})",
            proc.pid()
        );
        // The first round's duration: the histogram when it holds one round.
        let mut first_round = None;
        let (first, all, stamps) = self.await_checkpoints(flow, &mut proc, || {
            if first_round.is_none()
                && let Some((sum, count)) = scrape(&addr)
                && count == 1
            {
                first_round = Some(sum);
            }
        })?;
        if first_round.is_none()
            && let Some((sum, 1)) = scrape(&addr)
        {
            first_round = Some(sum);
        }
        std::thread::sleep(SETTLE);
        let m0 = scrape(&addr);
        let (a, b) = self.window(&mut proc)?;
        let m1 = scrape(&addr);
        let (rounds, steady) = match (m0, m1) {
            (Some((s0, c0)), Some((s1, c1))) if c1 > c0 => {
                let n = (c1 - c0) as f64;
                (n, Some((s1 - s0) / n))
            }
            _ => (0.0, None),
        };
        Ok(RunResult {
            first_round_s: first_round,
            steady_round_s: steady,
            ..RunResult::measured((first, all, stamps.len()), a, b, rounds, self.ticks)
        })
    }

    fn size(&self, stamp: u64, groups: usize, partitions: i32) -> Result<SizeResult> {
        let label = format!("g{groups}");
        let id = format!("{stamp}n{groups}");
        let base = Flow {
            source_alias: String::new(),
            target_alias: format!("bt{id}"),
            topic: format!("bench-{id}"),
            groups: (0..groups).map(|i| format!("bench-{id}-g{i}")).collect(),
            group_regex: format!("bench-{id}-g.*"),
            partitions,
        };
        let loadavg = procfs::loadavg();
        eprintln!(
            "bench: {label}: seeding {groups} groups × {partitions} partitions (load {loadavg})"
        );
        self.seed(&base, None)?;
        let mm2 = self
            .run_mm2(&base.with_source_alias(&format!("bm{id}")), &label)
            .with_context(|| format!("MM2 with {groups} groups"))?;
        let ours = self
            .run_ours(&base.with_source_alias(&format!("bo{id}")), &label)
            .with_context(|| format!("mm2-checkpoint with {groups} groups"))?;
        Ok(SizeResult {
            groups,
            partitions,
            loadavg,
            mm2,
            ours,
        })
    }

    /// MM2: the initial read of the offset-syncs topic (Connect's log
    /// timestamps), and spawn → that read done.
    fn mm2_load_time(&self, flow: &Flow, label: &str) -> Result<(f64, f64)> {
        let mut proc = self.spawn_connect(&self.dir.join(label), flow)?;
        loop {
            proc.alive()?;
            let text = proc.log_text();
            if let Some(span) = log_span(&text, MM2_SYNCS_READ_START, &[MM2_SYNCS_READ_DONE]) {
                return Ok((span, proc.spawned.elapsed().as_secs_f64()));
            }
            if proc.spawned.elapsed() > FIRST_ROUND_TIMEOUT {
                bail!(
                    "MM2 catch-up: the offset-syncs topic was not read after {:?}; see {}",
                    FIRST_ROUND_TIMEOUT,
                    proc.log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Ours: `run --once`; (initial sync read, whole process) in seconds.
    fn ours_load_time(&self, flow: &Flow, label: &str) -> Result<(f64, f64)> {
        let dir = self.dir.join(label);
        let config = self.ours_config(&dir, flow)?;
        let mut cmd = Command::new(&self.bin);
        cmd.args(["run", "--once", "--log-format", "json", "--config"])
            .arg(&config);
        let log = dir.join("once.log");
        let mut proc = Guard::spawn(cmd, "mm2-checkpoint run --once (catch-up)", &log)?;
        let status = proc.child.wait().context("waiting for run --once")?;
        let wall = proc.spawned.elapsed().as_secs_f64();
        if !status.success() {
            bail!("run --once exited with {status}; see {}", log.display());
        }
        let ms = ours_sync_read_ms(&proc.log_text()).with_context(|| {
            format!(
                "no `read the offset-syncs topic to its end` line in {}",
                log.display()
            )
        })?;
        Ok((ms as f64 / 1e3, wall))
    }

    fn catch_up(&self, stamp: u64, syncs: u64) -> Result<CatchUp> {
        let loadavg = procfs::loadavg();
        let flow = |kind: &str| Flow {
            source_alias: String::new(),
            target_alias: format!("b{kind}{stamp}"),
            topic: format!("benchcu-{kind}{stamp}"),
            groups: vec![format!("benchcu-{kind}{stamp}-g0")],
            group_regex: format!("benchcu-{kind}{stamp}-g.*"),
            partitions: CATCH_UP_PARTITIONS,
        };
        let (full, empty) = (flow("f"), flow("e"));
        eprintln!("bench: catch-up: writing {syncs} offset syncs (load {loadavg})");
        let t = Instant::now();
        self.seed(&full, Some(syncs))?;
        eprintln!(
            "bench: catch-up: {syncs} syncs written in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        self.seed(&empty, Some(0))?;
        // (read time, whole time) for MM2 and ours, full and empty topic.
        let mut times = Vec::with_capacity(4);
        for (mm2, flow, kind) in [
            (true, &full, "full"),
            (true, &empty, "empty"),
            (false, &full, "full"),
            (false, &empty, "empty"),
        ] {
            let who = if mm2 { "mm2" } else { "ours" };
            // A fresh source alias: a fresh checkpoints topic per run.
            let flow = flow.with_source_alias(&format!("b{who}{kind}{stamp}"));
            let label = format!("catchup-{who}-{kind}");
            times.push(if mm2 {
                self.mm2_load_time(&flow, &label)?
            } else {
                self.ours_load_time(&flow, &label)?
            });
        }
        let [
            (mm2_full_s, mm2_spawn_to_loaded_full_s),
            (mm2_empty_s, _),
            (ours_full_s, ours_once_full_s),
            (ours_empty_s, ours_once_empty_s),
        ] = times[..]
        else {
            bail!("catch-up: expected 4 runs, got {}", times.len());
        };
        Ok(CatchUp {
            syncs,
            mm2_full_s,
            mm2_empty_s,
            ours_full_s,
            ours_empty_s,
            ours_once_full_s,
            ours_once_empty_s,
            mm2_spawn_to_loaded_full_s,
            loadavg,
        })
    }
}

fn git_head(root: &Path) -> String {
    Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(root)
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "?".into())
}

/// `cargo xtask bench mm2 ...`.
fn mm2(root: &Path, args: &Mm2Args) -> Result<()> {
    eprintln!("bench: building the release binary");
    let status = Command::new(cargo())
        .args([
            "build",
            "--release",
            "-p",
            "mm2-checkpoint",
            "--bin",
            "mm2-checkpoint",
        ])
        .current_dir(root)
        .status()
        .context("running `cargo build --release -p mm2-checkpoint`")?;
    if !status.success() {
        bail!("`cargo build --release -p mm2-checkpoint` failed ({status})");
    }
    let env = ClusterEnv::acquire(root)?;
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (source_addr, target_addr) = (env.bootstrap("source")?, env.bootstrap("target")?);
    let client = |alias: &str, addr: &str| {
        ClusterClient::new(
            alias,
            vec![addr.to_owned()],
            kafka_lite::ConnectionConfig::default(),
        )
        .map_err(|e| anyhow::anyhow!("client for {alias} ({addr}): {e}"))
    };
    let dir = root
        .join("target")
        .join("bench")
        .join(started_unix.to_string());
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let bench = Bench {
        rt: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("tokio runtime")?,
        source: client("source", &source_addr)?,
        target: client("target", &target_addr)?,
        source_addr,
        target_addr,
        kafka_libs: env.file.kafka_libs.clone(),
        bin: root.join("target").join("release").join("mm2-checkpoint"),
        dir: dir.clone(),
        ticks: clock_ticks(),
        window: Duration::from_secs(args.window),
    };
    let mut report = Report {
        started_unix,
        kafka_version: env.file.kafka_version.clone(),
        commit: git_head(root),
        jvm_opts: JVM_OPTS.iter().map(|s| (*s).to_owned()).collect(),
        sizes: Vec::new(),
        catch_up: None,
    };
    let save = |report: &Report| -> Result<PathBuf> {
        let path = root
            .join("target")
            .join("bench")
            .join(format!("mm2-{started_unix}.json"));
        fs::write(&path, serde_json::to_string_pretty(report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };
    for &groups in &args.groups {
        let r = bench.size(started_unix, groups, args.partitions)?;
        report.sizes.push(r);
        save(&report)?;
    }
    if args.syncs > 0 {
        report.catch_up = Some(bench.catch_up(started_unix, args.syncs)?);
    }
    let json = save(&report)?;
    let text = format!(
        "{}\nRaw numbers:\n\n{}\nRaw JSON: {}; run files: {}\n",
        render_table(&report),
        render_raw(&report),
        json.display(),
        dir.display()
    );
    println!("{text}");
    if let Some(out) = &args.out {
        fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_defaults_match_the_issue() {
        let a = Mm2Args::parse(&[]).unwrap();
        assert_eq!(a.groups, vec![10, 100, 1000]);
        assert_eq!((a.partitions, a.syncs, a.window), (10, 1_000_000, 30));
    }

    #[test]
    fn parse_reads_every_option() {
        let a = Mm2Args::parse(&[
            "--groups",
            "5, 50",
            "--partitions",
            "3",
            "--syncs",
            "0",
            "--window",
            "7",
            "--out",
            "x.md",
        ])
        .unwrap();
        assert_eq!(a.groups, vec![5, 50]);
        assert_eq!((a.partitions, a.syncs, a.window), (3, 0, 7));
        assert_eq!(a.out, Some(PathBuf::from("x.md")));
    }

    #[test]
    fn parse_refuses_bad_values_naming_the_option() {
        for (args, needle) in [
            (&["--groups", "10,x"][..], "--groups"),
            (&["--groups", "0"][..], "--groups"),
            (&["--partitions"][..], "--partitions"),
            (&["--syncs", "-1"][..], "--syncs"),
            (&["--frobnicate"][..], "--frobnicate"),
        ] {
            let e = Mm2Args::parse(args).unwrap_err().to_string();
            assert!(e.contains(needle), "{args:?}: {e}");
        }
    }

    #[test]
    fn cpu_per_round_divides_ticks_by_rounds() {
        let s = |t, threads: &[(u32, f64)]| ProcSample {
            cpu_ticks: t,
            threads: threads.iter().copied().collect(),
            ..ProcSample::default()
        };
        assert_eq!(
            cpu_per_round(&s(100, &[]), &s(160, &[]), 30.0, 100),
            Some(0.02)
        );
        assert_eq!(cpu_per_round(&s(100, &[]), &s(160, &[]), 0.0, 100), None);
        assert_eq!(cpu_per_round(&s(160, &[]), &s(100, &[]), 3.0, 100), None);
        // Below one tick, the threads' runtimes tell: thread 2 is new, 3 exited.
        let a = s(5, &[(1, 10.0), (3, 50.0)]);
        let b = s(5, &[(1, 12.5), (2, 1.5)]);
        assert_eq!(threads_cpu_delta_ms(&a, &b), 4.0);
        assert_eq!(cpu_per_round(&a, &b, 4.0, 100), Some(0.001));
    }

    #[test]
    fn round_metrics_are_summed_over_flows() {
        let text = "# HELP x\n\
            mm2_checkpoint_round_duration_seconds_sum{flow=\"a->b\"} 0.5\n\
            mm2_checkpoint_round_duration_seconds_count{flow=\"a->b\"} 4\n\
            mm2_checkpoint_round_duration_seconds_bucket{flow=\"a->b\",le=\"0.1\"} 4\n\
            mm2_checkpoint_round_duration_seconds_sum{flow=\"c->d\"} 0.25\n\
            mm2_checkpoint_round_duration_seconds_count{flow=\"c->d\"} 1\n";
        assert_eq!(parse_round_metrics(text), Some((0.75, 5)));
        assert_eq!(parse_round_metrics("# nothing\n"), None);
    }

    #[test]
    fn log_span_uses_log4j_timestamps() {
        let log = "[2026-12-02T15:30:01,250] INFO Creating task x-0 (W)\n\
            [2026-12-02T15:30:02,000] INFO Starting KafkaBasedLog with topic mm2-offset-syncs.t.internal reportErrorsToCallback=false (K)\n\
            [2026-12-02T15:30:04,500] INFO Finished reading KafkaBasedLog for topic mm2-offset-syncs.t.internal (K)\n\
            [2026-12-02T15:30:04,501] INFO starting checkpoint and offset sync stores took 3000 ms (S)\n";
        assert_eq!(
            log_span(log, MM2_SYNCS_READ_START, &[MM2_SYNCS_READ_DONE]),
            Some(2.5)
        );
        assert_eq!(
            log_span(log, MM2_TASK_CREATED, &[MM2_STORES_LOADED]),
            Some(3.251)
        );
        assert_eq!(log_span(log, "never logged", &["x"]), None);
        assert_eq!(log4j_millis("[2026-12-02 00:00:01,007] x"), Some(1_007));
    }

    #[test]
    fn our_sync_read_time_comes_from_the_json_log() {
        let log = "{\"level\":\"INFO\",\"fields\":{\"message\":\"read the checkpoints topic to its end\",\"elapsed_ms\":3}}\n\
            {\"level\":\"INFO\",\"fields\":{\"message\":\"read the offset-syncs topic to its end\",\"records\":10,\"elapsed_ms\":412}}\n";
        assert_eq!(ours_sync_read_ms(log), Some(412));
        assert_eq!(ours_sync_read_ms("not json\n"), None);
    }

    #[test]
    fn ratio_and_units_render_readably() {
        assert_eq!(ratio(Some(450.0), Some(8.0)), "56×");
        assert_eq!(ratio(Some(3.0), Some(2.0)), "1.5×");
        assert_eq!(ratio(None, Some(2.0)), "—");
        assert_eq!(secs(Some(12.34)), "12.3 s");
        assert_eq!(secs(Some(0.0123)), "12.3 ms");
        assert_eq!(secs(Some(0.000_5)), "500 µs");
    }

    #[test]
    fn table_has_a_row_per_metric_and_size_and_the_catch_up() {
        let run = |first: f64, rss: u64| RunResult {
            start_to_first_s: first,
            start_to_all_s: first,
            first_round_s: Some(0.1),
            cpu_per_round_s: Some(0.01),
            steady_rss_kib: rss,
            peak_rss_kib: rss,
            ..RunResult::default()
        };
        let report = Report {
            started_unix: 0,
            kafka_version: "4.1.1".into(),
            commit: "abc".into(),
            jvm_opts: vec![],
            sizes: vec![SizeResult {
                groups: 10,
                partitions: 10,
                loadavg: "1 1 1".into(),
                mm2: run(10.0, 460 * 1024),
                ours: run(0.05, 8 * 1024),
            }],
            catch_up: Some(CatchUp {
                syncs: 1_000_000,
                mm2_full_s: 12.0,
                mm2_empty_s: 2.0,
                ours_full_s: 1.1,
                ours_empty_s: 0.1,
                ours_once_full_s: 1.3,
                ours_once_empty_s: 0.2,
                mm2_spawn_to_loaded_full_s: 20.0,
                loadavg: "1 1 1".into(),
            }),
        };
        let t = render_table(&report);
        assert!(
            t.contains("| start → first checkpoint | 10 × 10 | 10.0 s | 50.0 ms | 200× |"),
            "{t}"
        );
        assert!(
            t.contains("| steady RSS | 10 × 10 | 460.0 MiB | 8.0 MiB | 58× |"),
            "{t}"
        );
        assert!(
            t.contains(
                "| offset-sync catch-up (full − empty) | 1000000 syncs | 10.0 s | 1.00 s | 10× |"
            ),
            "{t}"
        );
        assert_eq!(t.lines().count(), 2 + 6 + 1);
        assert!(render_raw(&report).contains("catch-up, 1000000 syncs"));
    }
}
