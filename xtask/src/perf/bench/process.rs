//! The processes a bench starts, each killed when its [`Guard`] drops, and
//! what is read from them: memory and CPU time from `/proc`, round durations
//! from our `/metrics`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::{probe, procfs};

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

pub(super) fn sample(pid: u32, spawned: Instant) -> Result<ProcSample> {
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

pub(super) fn clock_ticks() -> u64 {
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

pub(super) fn scrape(addr: &str) -> Option<(f64, u64)> {
    parse_round_metrics(&probe::http_get(addr, "/metrics")?)
}

/// One `/metrics` scrape read twice: the round histogram's (sum, count) and
/// the requests sent so far by (cluster, api). At 1,000,000 latency series a
/// scrape is ~150 MB of text, so the bench asks once for both.
pub(super) type Scraped = (Option<(f64, u64)>, BTreeMap<(String, String), u64>);

/// See [`Scraped`].
pub(super) fn scrape_rounds_and_requests(addr: &str) -> Scraped {
    match probe::http_get(addr, "/metrics") {
        Some(text) => (parse_round_metrics(&text), parse_request_counts(&text)),
        None => (None, BTreeMap::new()),
    }
}

/// `mm2_checkpoint_requests_total` per (cluster, api) from a `/metrics` text.
pub fn parse_request_counts(text: &str) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("mm2_checkpoint_requests_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix("=\""))
                .map(|v| v.trim_end_matches('"').to_owned())
        };
        if let (Some(cluster), Some(api), Ok(n)) =
            (label("cluster"), label("api"), value.trim().parse::<u64>())
        {
            out.insert((cluster, api), n);
        }
    }
    out
}

/// A child process killed (and reaped) when dropped.
pub(super) struct Guard {
    pub(super) child: Child,
    pub(super) what: String,
    pub(super) log: PathBuf,
    pub(super) spawned: Instant,
}

impl Guard {
    pub(super) fn spawn(mut cmd: Command, what: &str, log: &Path) -> Result<Guard> {
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

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(super) fn alive(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "{} exited ({status}); see {}",
                self.what,
                self.log.display()
            );
        }
        Ok(())
    }

    pub(super) fn log_text(&self) -> String {
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

/// The cargo that runs this xtask (`$CARGO`), for the builds a bench starts.
pub(super) fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}
