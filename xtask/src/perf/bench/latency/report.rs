//! What `bench latency` measured ([`LatencyReport`]) and how it is shown.

use serde::Serialize;

use super::super::process::ProcSample;
use super::super::report::secs;
use super::stats::Percentiles;

/// The commit follower's start-up replay of `__consumer_offsets`, from its log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Replay {
    /// Records read (the whole topic, every group of the cluster).
    pub records: u64,
    /// Milliseconds the replay took.
    pub elapsed_ms: u64,
}

impl Replay {
    /// Records per second, if the replay took measurable time.
    pub fn records_per_s(&self) -> Option<f64> {
        (self.elapsed_ms > 0).then(|| self.records as f64 * 1e3 / self.elapsed_ms as f64)
    }
}

/// One side on one workload.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SideResult {
    /// `ours-follow`, `ours-poll`, `mm2-<interval>s`.
    pub side: String,
    /// Groups committing.
    pub groups: usize,
    /// Partitions each group commits.
    pub partitions: i32,
    /// `emit.checkpoints.interval.seconds` (and the group sync interval, except
    /// for ours in follow mode, whose sync follows its checkpoints).
    pub interval_s: u64,
    /// Load average (1, 5, 15 min) before and after.
    pub loadavg_before: String,
    /// Load average after the commit phase.
    pub loadavg_after: String,
    /// Spawn → every seeded (round 0) checkpoint visible.
    pub start_to_ready_s: f64,
    /// Commit rounds (one commit per group per round, once a second).
    pub rounds: usize,
    /// Offsets committed (groups × partitions × rounds).
    pub offsets: usize,
    /// Wall time of the commit phase (s).
    pub commit_phase_s: f64,
    /// The latest a commit slice started after its due time (ms).
    pub max_slice_late_ms: f64,
    /// Commit (acknowledged) → a checkpoint covering it readable on the target.
    pub checkpoint: Option<Percentiles>,
    /// Commits no checkpoint covered before the bench stopped waiting.
    pub checkpoint_uncovered: usize,
    /// Commit → the target group's offset covering it written.
    pub group_sync: Option<Percentiles>,
    /// Commits no target group offset covered before the bench stopped waiting.
    pub group_sync_uncovered: usize,
    /// Seconds waited after the last commit for the rest to be covered.
    pub drain_s: f64,
    /// CPU seconds per second over the commit phase.
    pub cpu_per_s: Option<f64>,
    /// RSS at the end of the commit phase (KiB).
    pub rss_kib: u64,
    /// Peak RSS since start (KiB).
    pub hwm_kib: u64,
    /// Ours in follow mode: the start-up replay of `__consumer_offsets`.
    pub replay: Option<Replay>,
    /// Samples at the start and end of the commit phase.
    pub samples: Vec<ProcSample>,
}

impl SideResult {
    /// Offsets committed per second over the commit phase.
    pub fn offsets_per_s(&self) -> f64 {
        if self.commit_phase_s > 0.0 {
            self.offsets as f64 / self.commit_phase_s
        } else {
            0.0
        }
    }
}

/// Everything one `bench latency` measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LatencyReport {
    /// Unix seconds at the start.
    pub started_unix: u64,
    /// Kafka version of the clusters.
    pub kafka_version: String,
    /// `git rev-parse --short HEAD`.
    pub commit: String,
    /// JVM options of MM2's Connect worker.
    pub jvm_opts: Vec<String>,
    /// One per run, in the order run.
    pub runs: Vec<SideResult>,
}

fn ms(v: f64) -> String {
    secs(Some(v / 1e3))
}

fn triple(p: &Option<Percentiles>) -> String {
    match p {
        Some(p) => format!("{} / {} / {}", ms(p.p50_ms), ms(p.p99_ms), ms(p.max_ms)),
        None => "—".into(),
    }
}

/// Commits not covered; "—" where nothing was measured (no group sync).
fn uncovered(p: &Option<Percentiles>, n: usize, total: usize) -> String {
    if n == 0 && p.is_none() {
        "—".into()
    } else if n == 0 {
        "0".into()
    } else {
        format!("{n} of {total}")
    }
}

/// The markdown table: one row per run.
pub fn render_table(r: &LatencyReport) -> String {
    let mut t = String::from(
        "| side | groups × partitions | offsets/s driven | commit → checkpoint p50 / p99 / max | \
         not covered | commit → target group p50 / p99 / max | not covered | CPU s/s | RSS |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for s in &r.runs {
        t.push_str(&format!(
            "| {} | {} × {} | {:.0} | {} | {} | {} | {} | {} | {:.1} MiB |\n",
            s.side,
            s.groups,
            s.partitions,
            s.offsets_per_s(),
            triple(&s.checkpoint),
            uncovered(&s.checkpoint, s.checkpoint_uncovered, s.offsets),
            triple(&s.group_sync),
            uncovered(&s.group_sync, s.group_sync_uncovered, s.offsets),
            s.cpu_per_s.map_or("—".into(), |c| format!("{c:.3}")),
            s.rss_kib as f64 / 1024.0,
        ));
    }
    t
}

/// One line of raw numbers per run.
pub fn render_raw(r: &LatencyReport) -> String {
    let mut t = String::new();
    for s in &r.runs {
        let count = |p: &Option<Percentiles>| p.map_or(0, |p| p.count);
        t.push_str(&format!(
            "- {} {} × {}: interval {} s, ready {:.2} s after spawn, {} rounds, {} offsets in \
             {:.1} s ({:.0}/s, slices up to {:.0} ms late), {} checkpoint and {} group-sync \
             delays, drain {:.1} s, CPU {} s/s, RSS {} KiB (peak {} KiB)",
            s.side,
            s.groups,
            s.partitions,
            s.interval_s,
            s.start_to_ready_s,
            s.rounds,
            s.offsets,
            s.commit_phase_s,
            s.offsets_per_s(),
            s.max_slice_late_ms,
            count(&s.checkpoint),
            count(&s.group_sync),
            s.drain_s,
            s.cpu_per_s.map_or("—".into(), |c| format!("{c:.3}")),
            s.rss_kib,
            s.hwm_kib,
        ));
        if let Some(rp) = &s.replay {
            t.push_str(&format!(
                ", replay of __consumer_offsets {} records in {} ms ({})",
                rp.records,
                rp.elapsed_ms,
                rp.records_per_s()
                    .map_or("—".into(), |v| format!("{v:.0} records/s")),
            ));
        }
        t.push_str(&format!(
            "; load {} → {}\n",
            s.loadavg_before, s.loadavg_after
        ));
    }
    t
}
