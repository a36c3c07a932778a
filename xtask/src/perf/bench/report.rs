//! What `bench mm2` measured ([`Report`]) and how it is shown: the markdown
//! table and the raw numbers behind it.

use std::time::Duration;

use serde::Serialize;

use super::process::{ProcSample, cpu_per_round};

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
    pub(super) fn measured(
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
