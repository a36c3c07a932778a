//! What `bench mm2` measured ([`Report`]) and how it is shown: the markdown
//! table and the raw numbers behind it.

use std::time::Duration;

use serde::Serialize;

use super::process::{ProcSample, cpu_per_round};
use crate::dist::size::group_digits;

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
    /// Set when not every checkpoint was written in time: the run is a lower
    /// bound and nothing after the first round was measured.
    pub incomplete: Option<Incomplete>,
    /// Set when the run failed; nothing else is measured.
    pub error: Option<String>,
    /// Ours following `__consumer_offsets`: its start-up replay (records, ms).
    pub offsets_replay: Option<(u64, u64)>,
    /// With group sync: spawn → every target group holds the translated
    /// offsets of every partition.
    pub start_to_groups_synced_s: Option<f64>,
    /// Ours: requests sent per steady round, by API ("cluster API"), from
    /// `requests_total` at the start and end of the window.
    pub requests_per_round: Vec<(String, f64)>,
}

/// How far a run that did not finish its first round got.
#[derive(Debug, Clone, Serialize)]
pub struct Incomplete {
    /// Checkpoints seen.
    pub seen: usize,
    /// Checkpoints expected (N × P).
    pub total: usize,
    /// Seconds from spawn until the bench gave up.
    pub after_s: f64,
}

impl RunResult {
    /// A run that failed with `error`.
    pub fn failed(error: &anyhow::Error) -> RunResult {
        RunResult {
            error: Some(format!("{error:#}")),
            ..RunResult::default()
        }
    }

    /// A run whose first round did not finish in time.
    pub fn incomplete(first: Option<Duration>, incomplete: Incomplete) -> RunResult {
        RunResult {
            start_to_first_s: first.map_or(f64::NAN, |d| d.as_secs_f64()),
            start_to_all_s: f64::NAN,
            checkpoints: incomplete.seen,
            incomplete: Some(incomplete),
            ..RunResult::default()
        }
    }

    /// Whether the run finished its first round and was measured.
    pub fn finished(&self) -> bool {
        self.incomplete.is_none() && self.error.is_none()
    }

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
    /// The variant's label (group sync, SASL_SSL + SCRAM); `None` for the
    /// plain workload.
    pub variant: Option<String>,
    /// Load average (1, 5, 15 min) before the workload.
    pub loadavg: String,
    /// MirrorMaker 2, per JVM setting (name, result); empty for a size run
    /// with ours alone.
    pub mm2: Vec<(String, RunResult)>,
    /// mm2-checkpoint.
    pub ours: RunResult,
    /// The target broker's produce rate for as many records of the same
    /// size as the first round writes (Kafka's `ProducerPerformance`);
    /// measured for the sizes run with ours alone.
    pub kafka_producer: Option<KafkaProducerRate>,
}

/// What Kafka's `ProducerPerformance` reported for one run.
#[derive(Debug, Clone, Serialize)]
pub struct KafkaProducerRate {
    /// Records sent.
    pub records: u64,
    /// Bytes of each record's value (the key is null).
    pub record_size: usize,
    /// Records a second, acknowledged (`records/sec`).
    pub records_per_s: f64,
    /// The producer settings given besides the bootstrap address.
    pub settings: String,
}

impl KafkaProducerRate {
    /// The time the run took at its rate.
    pub fn secs(&self) -> f64 {
        self.records as f64 / self.records_per_s
    }
}

impl SizeResult {
    /// `groups × partitions`, and the variant if any.
    pub fn label(&self) -> String {
        match &self.variant {
            Some(v) => format!("{} × {}, {v}", self.groups, self.partitions),
            None => format!("{} × {}", self.groups, self.partitions),
        }
    }
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
    /// Kafka's own consumer on the full topic (`ConsumerPerformance`).
    pub kafka_consumer: Option<KafkaConsumerRate>,
    /// The same tuned for throughput (64 MiB fetches).
    pub kafka_consumer_tuned: Option<KafkaConsumerRate>,
    /// kafka-lite Fetches of the same topic, records not decoded.
    pub raw_fetch: Option<RawFetchRate>,
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
    /// MM2's JVM settings: name and options.
    pub mm2_jvm: Vec<(String, Vec<String>)>,
    /// The build of ours measured.
    pub ours_build: String,
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

/// A run's value for the table: `value` of a finished run; for a run that
/// did not finish, its lower bound where `bound` is set, else "—".
fn cell_of(
    run: &RunResult,
    value: Option<f64>,
    bound: bool,
    cell: fn(Option<f64>) -> String,
) -> String {
    if let Some(e) = &run.error {
        let first = e.lines().next().unwrap_or_default();
        let short: String = first.chars().take(60).collect();
        return format!("failed ({short})");
    }
    match (&run.incomplete, bound) {
        (Some(i), true) => format!(
            "> {:.0} s ({} of {} checkpoints)",
            i.after_s,
            group_digits(i.seen as u64),
            group_digits(i.total as u64)
        ),
        (Some(_), false) => "—".to_owned(),
        (None, _) => cell(value),
    }
}

/// The markdown table of a report: one row per metric and group count, the
/// ratio being MM2 ÷ ours (above 1: we use less / are faster). A size run
/// with several MM2 JVM settings gets one MM2 column value per setting, the
/// first (stock) in the main rows, the others in rows of their own.
pub fn render_table(r: &Report) -> String {
    type Cell = fn(Option<f64>) -> String;
    let mut t = String::from(
        "| metric | groups × partitions | MirrorMaker 2 | mm2-checkpoint | MM2 ÷ ours |\n|---|---:|---:|---:|---:|\n",
    );
    let none = RunResult::default();
    for s in &r.sizes {
        let size = s.label();
        let o = &s.ours;
        type Pick = fn(&RunResult) -> Option<f64>;
        let mut metrics: Vec<(&str, Pick, bool, Cell)> = vec![
            (
                "start → first checkpoint",
                |x| Some(x.start_to_first_s),
                false,
                secs,
            ),
            (
                "start → all checkpoints",
                |x| Some(x.start_to_all_s),
                true,
                secs,
            ),
            ("first (emitting) round", |x| x.first_round_s, false, secs),
            ("steady round (wall)", |x| x.steady_round_s, false, secs),
            ("CPU per steady round", |x| x.cpu_per_round_s, false, secs),
            ("steady RSS", |x| Some(x.steady_rss_kib as f64), false, mib),
            ("peak RSS", |x| Some(x.peak_rss_kib as f64), false, mib),
        ];
        let synced = |x: &RunResult| x.start_to_groups_synced_s.is_some();
        if synced(o) || s.mm2.iter().any(|(_, m)| synced(m)) {
            metrics.insert(
                2,
                (
                    "start → all target groups synced",
                    |x| x.start_to_groups_synced_s,
                    false,
                    secs,
                ),
            );
        }
        let mut mm2_runs: Vec<(&str, &RunResult)> =
            s.mm2.iter().map(|(n, x)| (n.as_str(), x)).collect();
        if mm2_runs.is_empty() {
            mm2_runs.push(("", &none));
        }
        for (k, (jvm, m)) in mm2_runs.iter().enumerate() {
            for &(metric, pick, bound, cell) in &metrics {
                // The other JVM settings: only the rows they change.
                if k > 0 && metric == "first (emitting) round" {
                    continue;
                }
                let metric = if k == 0 {
                    metric.to_owned()
                } else {
                    format!("{metric} (MM2 JVM: {jvm})")
                };
                let mm2_cell = if s.mm2.is_empty() {
                    "not run".to_owned()
                } else {
                    cell_of(m, pick(m), bound, cell)
                };
                let ratio_cell = if m.finished() && o.finished() && !s.mm2.is_empty() {
                    ratio(pick(m), pick(o))
                } else {
                    "—".to_owned()
                };
                t.push_str(&format!(
                    "| {metric} | {size} | {mm2_cell} | {} | {ratio_cell} |\n",
                    cell_of(o, pick(o), bound, cell)
                ));
            }
        }
        if o.finished() && !o.requests_per_round.is_empty() {
            let list: Vec<String> = o
                .requests_per_round
                .iter()
                .map(|(what, n)| format!("{what} {n:.1}"))
                .collect();
            t.push_str(&format!(
                "| requests per steady round (ours) | {size} | | {} | |\n",
                list.join(", ")
            ));
        }
        if let (Some(k), Some(first)) = (&s.kafka_producer, o.first_round_s) {
            t.push_str(&format!(
                "| first round ÷ Kafka's ProducerPerformance ({} records of {} B in {:.2} s) | {size} | | {:.0} % | |\n",
                k.records,
                k.record_size,
                k.secs(),
                100.0 * first / k.secs()
            ));
        }
        if o.finished() && o.steady_rss_kib > 0 {
            let per = o.steady_rss_kib as f64 * 1024.0 / (s.groups as f64 * s.partitions as f64);
            t.push_str(&format!(
                "| RSS per group-partition (ours) | {size} | | {per:.0} B | |\n"
            ));
        }
    }
    if let Some(c) = &r.catch_up {
        let rate = |s: f64| (s > 0.0).then(|| c.syncs as f64 / s);
        let (mm2_rate, ours_rate) = (
            rate(c.mm2_full_s - c.mm2_empty_s),
            rate(c.ours_full_s - c.ours_empty_s),
        );
        let per_s = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{:.2} M/s", v / 1e6));
        t.push_str(&format!(
            "| offset-sync catch-up rate | {} syncs | {} | {} | {} |\n",
            c.syncs,
            per_s(mm2_rate),
            per_s(ours_rate),
            ratio(ours_rate, mm2_rate),
        ));
        // Each side's rate as a share of a reference rate, one row each.
        let mut share_row = |what: &str, reference: f64| {
            let share = |v: Option<f64>| {
                v.map_or("—".to_owned(), |v| {
                    format!("{:.0} %", 100.0 * v / reference)
                })
            };
            t.push_str(&format!(
                "| catch-up rate ÷ {what} ({:.2} M/s) | {} syncs | {} | {} | |\n",
                reference / 1e6,
                c.syncs,
                share(mm2_rate),
                share(ours_rate),
            ));
        };
        if let Some(k) = &c.kafka_consumer {
            share_row("Kafka's own consumer", k.fetch_records_per_s);
        }
        if let Some(k) = &c.kafka_consumer_tuned {
            share_row(
                "Kafka's own consumer, 64 MiB fetches",
                k.fetch_records_per_s,
            );
        }
        if let Some(r) = &c.raw_fetch {
            share_row("raw Fetch, records not decoded", r.records_per_s);
        }
        t.push_str(&format!(
            "| offset-sync catch-up (full − empty) | {} syncs | {} | {} | {} |\n",
            c.syncs,
            secs(Some(c.mm2_full_s - c.mm2_empty_s)),
            secs(Some(c.ours_full_s - c.ours_empty_s)),
            ratio(
                Some(c.mm2_full_s - c.mm2_empty_s),
                Some(c.ours_full_s - c.ours_empty_s)
            )
        ));
    }
    t
}

/// The raw numbers behind the table, one line per run.
pub fn render_raw(r: &Report) -> String {
    let mut t = String::new();
    for s in &r.sizes {
        let mut runs: Vec<(String, &RunResult)> = s
            .mm2
            .iter()
            .map(|(jvm, x)| (format!("MM2 ({jvm} JVM)"), x))
            .collect();
        runs.push(("ours".to_owned(), &s.ours));
        let size = s.label();
        for (name, x) in runs {
            if let Some(e) = &x.error {
                t.push_str(&format!(
                    "- {size} {name}: FAILED: {e}; load {}\n",
                    s.loadavg
                ));
                continue;
            }
            if let Some(i) = &x.incomplete {
                t.push_str(&format!(
                    "- {size} {name}: did not finish: {} of {} checkpoints after {:.0} s \
                     (first after {}); load {}\n",
                    i.seen,
                    i.total,
                    i.after_s,
                    secs(Some(x.start_to_first_s).filter(|v| v.is_finite())),
                    s.loadavg
                ));
                continue;
            }
            t.push_str(&format!(
                "- {size} {name}: first {:.3} s, all {:.3} s ({} checkpoints){}, first round {}, \
                 steady round {}, {:.0} rounds in the window, CPU/round {}, RSS {} KiB, HWM {} KiB{}; \
                 samples (s, RSS KiB, HWM KiB, CPU ticks, threads' CPU ms): {}; load {}\n",
                x.start_to_first_s,
                x.start_to_all_s,
                x.checkpoints,
                x.start_to_groups_synced_s
                    .map(|v| format!(", target groups synced {v:.3} s"))
                    .unwrap_or_default(),
                secs(x.first_round_s),
                secs(x.steady_round_s),
                x.steady_rounds,
                secs(x.cpu_per_round_s),
                x.steady_rss_kib,
                x.peak_rss_kib,
                x.task_start_to_loaded_s
                    .map(|v| format!(", task created → stores loaded {v:.3} s"))
                    .or_else(|| x.offsets_replay.map(|(records, ms)| format!(
                        ", replay of __consumer_offsets {records} records in {ms} ms"
                    )))
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
    for s in &r.sizes {
        if let Some(k) = &s.kafka_producer {
            t.push_str(&format!(
                "- {} Kafka's ProducerPerformance on the target: {} records of {} B (null keys) to a \
                 new 1-partition topic, {:.0} records/s ({:.2} s), {}\n",
                s.label(),
                k.records,
                k.record_size,
                k.records_per_s,
                k.secs(),
                k.settings
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
        if let Some(k) = &c.kafka_consumer {
            t.push_str(&format!(
                "- catch-up, Kafka's ConsumerPerformance on the same topic: {} records, \
                 {:.0} records/s overall, {:.0} records/s fetching (group join excluded)\n",
                k.records, k.records_per_s, k.fetch_records_per_s
            ));
        }
        if let Some(k) = &c.kafka_consumer_tuned {
            t.push_str(&format!(
                "- catch-up, Kafka's ConsumerPerformance tuned (64 MiB fetches): {} records, \
                 {:.0} records/s overall, {:.0} records/s fetching (group join excluded)\n",
                k.records, k.records_per_s, k.fetch_records_per_s
            ));
        }
        if let Some(r) = &c.raw_fetch {
            t.push_str(&format!(
                "- catch-up, raw kafka-lite Fetch (records not decoded): {} records to offset {}, \
                 {} bytes in {} fetches of {} bytes max, {:.3} s, {:.0} records/s\n",
                r.records, r.end, r.bytes, r.fetches, r.max_bytes, r.secs, r.records_per_s
            ));
        }
    }
    t
}

/// What Kafka's `ConsumerPerformance` reported.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct KafkaConsumerRate {
    /// Records consumed.
    pub records: u64,
    /// Records a second over the whole run (`nMsg.sec`).
    pub records_per_s: f64,
    /// Records a second over the fetch time, group join excluded
    /// (`fetch.nMsg.sec`).
    pub fetch_records_per_s: f64,
}

/// kafka-lite's Fetches of the catch-up topic with the records left undecoded.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct RawFetchRate {
    /// Records the batch headers counted.
    pub records: u64,
    /// Bytes of the batches.
    pub bytes: u64,
    /// Fetch requests.
    pub fetches: u64,
    /// The end offset read to.
    pub end: i64,
    /// `max_bytes` of each Fetch.
    pub max_bytes: i32,
    /// Wall time of the Fetches.
    pub secs: f64,
    /// Records a second.
    pub records_per_s: f64,
}
