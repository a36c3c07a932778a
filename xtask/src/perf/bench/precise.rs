//! `cargo xtask bench precise`: the daemon's memory and start-up in precise
//! and mm2 translation modes with a long offset-sync history (issue 21 item 2,
//! docs/benchmarks.md "Precise translation at 1,000 and 10,000 partitions").
//!
//! Per size P × S: a fresh source topic of P partitions; a fresh offset-syncs
//! topic holding S identity syncs per partition (upstream 0, 100, …; the
//! mirror's offset = upstream + [`SHIFT`]) written partition after partition
//! for each step, as MM2's source tasks interleave them; one group per lag
//! (10^3 … 10^6 records behind the source log end S·100, those that fit)
//! committed on every partition 37 records past a sync. Then the release
//! binary runs (`mm2-checkpoint run`), each run with its own source alias (a
//! fresh checkpoints topic): `mm2` mode, `precise` mode, and `precise` again
//! with the same alias after the groups moved by one sync (100 records), so that it
//! restores the sync-history topic the first precise run wrote and emits
//! every checkpoint anew. Each run is timed from spawn (first and last
//! expected checkpoint, the offset-syncs topic's initial read from our log),
//! sampled from `/proc` (RSS; peak = `VmHWM`), and its checkpoints compared
//! with the truth (re-read = true downstream position − checkpoint) and with
//! the core's answer for the same syncs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kafka_lite::{PartitionReader, StartOffset};
use mm2_checkpoint::core::format::Checkpoint;
use mm2_checkpoint::core::{
    CommittedOffset, InitMode, OffsetSyncStore, Precision, TopicPartition, Translation,
};
use mm2_checkpoint::driver::FlowCluster;

use super::env::lite;
use super::process::{Guard, sample};
use super::seed::{SHIFT, SYNC_STEP, sync_record};
use super::side_by_side::{Bench, Flow, git_head};
use crate::{procfs, topics};

/// Records a group's commit lies past the sync below it.
const INSIDE: i64 = 37;
const LAGS: [i64; 4] = [1_000, 10_000, 100_000, 1_000_000];
/// Syncs per produce request (~60 bytes each: one request stays under 1 MB).
const PRODUCE_BATCH: usize = 12_000;
/// How long a run may take to write every expected checkpoint.
const RUN_TIMEOUT: Duration = Duration::from_secs(900);
/// Sampled after the last checkpoint, for the steady RSS.
const SETTLE: Duration = Duration::from_secs(5);

/// The options of `bench precise`.
pub(super) struct PreciseArgs {
    /// (partitions, syncs per partition).
    sizes: Vec<(i32, i64)>,
    /// `mm2-checkpoint.offset.translation.max.syncs.per.partition`, if set.
    max_syncs: Option<u64>,
    out: Option<PathBuf>,
}

impl PreciseArgs {
    pub(super) fn parse(args: &[&str]) -> Result<PreciseArgs> {
        let mut out = PreciseArgs {
            sizes: vec![(1_000, 10_000), (10_000, 1_000)],
            max_syncs: None,
            out: None,
        };
        let mut it = args.iter();
        while let Some(&a) = it.next() {
            let mut value = || {
                it.next()
                    .copied()
                    .with_context(|| format!("{a} needs a value\n\n{}", super::args::USAGE))
            };
            match a {
                "--sizes" => {
                    out.sizes = value()?
                        .split(',')
                        .map(|s| {
                            let (p, n) = s.split_once('x').with_context(|| {
                                format!("--sizes: {s:?} is not PARTITIONSxSYNCS")
                            })?;
                            let p: i32 = p.parse().with_context(|| format!("--sizes: {s:?}"))?;
                            let n: i64 = n.parse().with_context(|| format!("--sizes: {s:?}"))?;
                            if p < 1 || n < 2 {
                                bail!("--sizes: {s:?}: at least 1 partition and 2 syncs");
                            }
                            Ok((p, n))
                        })
                        .collect::<Result<_>>()?;
                }
                "--max-syncs" => {
                    let v = value()?;
                    out.max_syncs = Some(
                        v.parse()
                            .with_context(|| format!("--max-syncs: {v:?} is not a number"))?,
                    );
                }
                "--out" => out.out = Some(PathBuf::from(value()?)),
                other => bail!(
                    "bench precise: unknown option {other:?}\n\n{}",
                    super::args::USAGE
                ),
            }
        }
        Ok(out)
    }
}

/// Partitions per source topic: a broker creates at most 10,000 partition
/// records in one request (`max.records.per.user.op`), and real sources have many topics.
const TOPIC_PARTITIONS: i32 = 1_000;

/// One size's workload.
struct Workload {
    partitions: i32,
    /// The source topics and their partition counts.
    topics: Vec<(String, i32)>,
    syncs: i64,
    /// (group, lag behind the log end, committed offset).
    groups: Vec<(String, i64, i64)>,
    base: Flow,
}

/// What one run of the daemon showed.
#[derive(Default)]
struct RunNumbers {
    /// Seconds from spawn.
    first_s: Option<f64>,
    all_s: Option<f64>,
    /// (records, ms) of the offset-syncs topic's initial read, and when it ended.
    syncs_read: Option<(u64, u64, f64)>,
    /// The sync-history topic's read and the restore line (seconds from spawn).
    history_read: Option<(u64, u64)>,
    restored: Option<(f64, String)>,
    seen: usize,
    expected: usize,
    rss_steady_kib: u64,
    rss_peak_kib: u64,
    /// Per group: (min, max) re-read over its partitions.
    reread: BTreeMap<String, (i64, i64)>,
    /// Checkpoints that differ from the core's answer.
    mismatches: usize,
    load_before: String,
    load_after: String,
}

/// `cargo xtask bench precise ...`.
pub(super) fn run(root: &Path, args: &PreciseArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let (bench, env, stamp) = Bench::start(root, Duration::from_secs(1), rt)?;
    let md = root
        .join("target")
        .join("bench")
        .join(format!("precise-{stamp}.md"));
    let mut text = format!(
        "`cargo xtask bench precise` at {} (unix {stamp}), Kafka {}, `cargo build --release` \
         (host, glibc), `nproc` = {}\n\n\
         | P × S | mode | initial read of the offset-syncs topic | sync-history read | \
         spawn → first checkpoint | spawn → all | RSS steady / peak | re-read per group (lag: min–max) | \
         checkpoints (≠ core) | load before → after |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
        git_head(root),
        env.file.kafka_version,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    for &(partitions, syncs) in &args.sizes {
        let w = bench.seed_precise(stamp, partitions, syncs)?;
        // The budget holds every sync of the size unless `--max-syncs` says
        // otherwise: what is measured is the memory of S syncs held, and the
        // restarted run expects every group's checkpoint to move one sync on,
        // which a group below the budget's window (MM2's answer) may not.
        let max_syncs = args.max_syncs.map_or(syncs as usize, |n| n as usize);
        let precise_extra = format!(
            "mm2-checkpoint.offset.translation = precise\n\
             mm2-checkpoint.offset.translation.max.syncs.per.partition = {max_syncs}\n"
        );
        let runs: [(&str, &str, Precision, &str); 3] = [
            ("mm2", "mm2", Precision::Mm2, ""),
            (
                "precise",
                "precise",
                Precision::Precise { max_syncs },
                &precise_extra,
            ),
            (
                "precise",
                "precise, restart (sync-history restore)",
                Precision::Precise { max_syncs },
                &precise_extra,
            ),
        ];
        for (i, (mode, label, precision, extra)) in runs.into_iter().enumerate() {
            let restart = i == 2;
            if restart {
                // Every group one sync on: the restarted daemon emits every
                // checkpoint again, translated through the restored history.
                bench.commit_groups(&w, SYNC_STEP)?;
            }
            let alias = format!("bp{}{stamp}p{partitions}", &mode[..1]);
            let mut flow = w.base.with_source_alias(&alias);
            flow.extra.push_str(extra);
            let moved = if restart { SYNC_STEP } else { 0 };
            let r = bench
                .run_precise(&w, &flow, precision, moved, restart)
                .with_context(|| format!("{partitions} × {syncs}, {label}"))?;
            let row = row(&w, label, &r);
            eprintln!("bench precise: {row}");
            text.push_str(&row);
            fs::write(&md, &text).with_context(|| format!("writing {}", md.display()))?;
        }
    }
    text.push_str(&format!("\nRun files: {}\n", bench.dir.display()));
    fs::write(&md, &text).with_context(|| format!("writing {}", md.display()))?;
    println!("{text}");
    if let Some(out) = &args.out {
        fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}

/// `partitions` as topics `<prefix>t<i>` of at most [`TOPIC_PARTITIONS`] each.
fn split_topics(prefix: &str, partitions: i32) -> Vec<(String, i32)> {
    (0..(partitions + TOPIC_PARTITIONS - 1) / TOPIC_PARTITIONS)
        .map(|i| {
            let n = (partitions - i * TOPIC_PARTITIONS).min(TOPIC_PARTITIONS);
            (format!("{prefix}t{i}"), n)
        })
        .collect()
}

impl Workload {
    /// Every source partition, topic by topic.
    fn partitions_iter(&self) -> impl Iterator<Item = (&str, i32)> {
        self.topics
            .iter()
            .flat_map(|(t, n)| (0..*n).map(move |p| (t.as_str(), p)))
    }
}

fn row(w: &Workload, label: &str, r: &RunNumbers) -> String {
    let secs = |s: Option<f64>| s.map_or("—".to_owned(), |s| format!("{s:.2} s"));
    let read = r.syncs_read.map_or("—".to_owned(), |(n, ms, _)| {
        format!(
            "{n} syncs in {ms} ms ({:.2} M/s)",
            n as f64 / (ms.max(1) as f64 * 1e3)
        )
    });
    let history = match (&r.history_read, &r.restored) {
        (Some((n, ms)), Some((at, what))) => {
            format!("{n} records in {ms} ms; restored at {at:.2} s: {what}")
        }
        (Some((n, ms)), None) => format!("{n} records in {ms} ms"),
        _ => "—".to_owned(),
    };
    let mut reread = String::new();
    for (g, lag, _) in &w.groups {
        match r.reread.get(g) {
            Some((lo, hi)) if lo == hi => {
                let _ = write!(reread, "{lag}: {lo}; ");
            }
            Some((lo, hi)) => {
                let _ = write!(reread, "{lag}: {lo}–{hi}; ");
            }
            None => {
                let _ = write!(reread, "{lag}: none; ");
            }
        }
    }
    let all = match r.all_s {
        Some(s) => format!("{s:.2} s"),
        None => format!("{} of {} (timeout)", r.seen, r.expected),
    };
    format!(
        "| {} × {} | {label} | {read} | {history} | {} | {all} | {:.1} / {:.1} MiB | {} | {} ({}) | {} → {} |\n",
        w.partitions,
        w.syncs,
        secs(r.first_s),
        r.rss_steady_kib as f64 / 1024.0,
        r.rss_peak_kib as f64 / 1024.0,
        reread.trim_end_matches("; "),
        r.seen,
        r.mismatches,
        r.load_before,
        r.load_after,
    )
}

impl Bench {
    /// The source topic, its syncs and the groups of one size.
    fn seed_precise(&self, stamp: u64, partitions: i32, syncs: i64) -> Result<Workload> {
        let prefix = format!("bp{stamp}p{partitions}");
        let target_alias = format!("bpt{stamp}p{partitions}");
        let end = syncs * SYNC_STEP;
        let groups: Vec<(String, i64, i64)> = LAGS
            .iter()
            .filter(|&&lag| lag <= end)
            .map(|&lag| {
                let u = end - lag + INSIDE;
                (format!("{prefix}-g{lag}"), end - u, u)
            })
            .collect();
        let topics = split_topics(&prefix, partitions);
        let mut base = Flow::new(&prefix, target_alias.clone(), 0, partitions);
        // The `topics` filter: every topic of the workload.
        base.topic = format!("{prefix}t[0-9]+");
        base.groups = groups.iter().map(|(g, _, _)| g.clone()).collect();
        let w = Workload {
            partitions,
            topics,
            syncs,
            groups,
            base,
        };
        let topic = topics::offset_syncs(&target_alias);
        let s = &self.source;
        eprintln!(
            "bench precise: {partitions} × {syncs}: writing {} syncs (load {})",
            partitions as i64 * syncs,
            procfs::loadavg()
        );
        let t = Instant::now();
        self.rt.block_on(async {
            for (t, n) in &w.topics {
                lite(
                    &format!("creating {t}"),
                    s.create_topic(t, *n, 1, &[]).await,
                )?;
            }
            lite(
                &format!("creating {topic}"),
                s.create_topic(&topic, 1, 1, &[("cleanup.policy", "compact")])
                    .await,
            )?;
            let mut batch = Vec::with_capacity(PRODUCE_BATCH);
            for k in 0..syncs {
                for (t, p) in w.partitions_iter() {
                    batch.push(sync_record(t, p, k * SYNC_STEP)?);
                    if batch.len() == PRODUCE_BATCH {
                        lite("producing syncs", s.produce(&topic, 0, &batch).await)?;
                        batch.clear();
                    }
                }
            }
            if !batch.is_empty() {
                lite("producing syncs", s.produce(&topic, 0, &batch).await)?;
            }
            anyhow::Ok(())
        })?;
        eprintln!(
            "bench precise: {partitions} × {syncs}: syncs written in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        self.commit_groups(&w, 0)?;
        Ok(w)
    }

    /// Commits every group of `w` on every partition, `moved` records past its offset.
    fn commit_groups(&self, w: &Workload, moved: i64) -> Result<()> {
        self.rt.block_on(async {
            for (g, _, u) in &w.groups {
                let offsets: BTreeMap<TopicPartition, CommittedOffset> = w
                    .partitions_iter()
                    .map(|(t, p)| {
                        (
                            TopicPartition::new(t, p),
                            CommittedOffset::new(u + moved, ""),
                        )
                    })
                    .collect();
                lite(
                    &format!("committing group {g}"),
                    self.source.commit_group_offsets(g, &offsets).await,
                )?;
            }
            anyhow::Ok(())
        })
    }

    /// One run of the daemon on `flow`: the expected checkpoints are those the
    /// core's store with `precision` translates, for the groups at `moved`
    /// records past their offsets.
    fn run_precise(
        &self,
        w: &Workload,
        flow: &Flow,
        precision: Precision,
        moved: i64,
        restart: bool,
    ) -> Result<RunNumbers> {
        // The core's answers: every partition has the same syncs.
        let mut store = OffsetSyncStore::with_precision(InitMode::LoadAllHistory, precision);
        for k in 0..w.syncs {
            store.apply("t", 0, k * SYNC_STEP, k * SYNC_STEP + SHIFT);
        }
        store.finish_initial_read();
        let answers: BTreeMap<&str, i64> = w
            .groups
            .iter()
            .filter_map(
                |(g, _, u)| match store.translate_offset("t", 0, u + moved) {
                    Translation::Translated(d) => Some((g.as_str(), d)),
                    _ => None,
                },
            )
            .collect();
        drop(store);
        let expected = answers.len() * w.partitions as usize;
        let topic = flow.checkpoints_topic();
        // A restart reads only what the run writes.
        let start = if restart {
            let reader = self
                .rt
                .block_on(
                    self.target
                        .open_reader(&topic, 0, StartOffset::Latest, Duration::ZERO),
                )
                .map_err(|e| anyhow::anyhow!("opening {topic}: {e}"))?;
            StartOffset::Offset(reader.position())
        } else {
            StartOffset::Earliest
        };
        let dir = self.dir.join(format!(
            "precise-p{}-s{}-{}{}",
            w.partitions,
            w.syncs,
            if matches!(precision, Precision::Mm2) {
                "mm2"
            } else {
                "precise"
            },
            if restart { "-restart" } else { "" }
        ));
        let mut r = RunNumbers {
            expected,
            load_before: procfs::loadavg(),
            ..RunNumbers::default()
        };
        let (mut proc, _addr) = self.spawn_ours(flow, &dir)?;
        eprintln!(
            "bench precise: {} × {}: {} started (pid {}), expecting {expected} checkpoints",
            w.partitions,
            w.syncs,
            dir.display(),
            proc.pid()
        );
        let mut reader: Option<PartitionReader> = None;
        let mut latest: BTreeMap<(String, String, i32), i64> = BTreeMap::new();
        let mut seen_lines = 0usize;
        loop {
            proc.alive()?;
            let s = sample(proc.pid(), proc.spawned)?;
            r.rss_peak_kib = r.rss_peak_kib.max(s.hwm_kib);
            self.scan_log(&proc, &mut seen_lines, &mut r);
            let fetched = self
                .rt
                .block_on(async {
                    tokio::time::timeout(Duration::from_secs(5), async {
                        if reader.is_none() {
                            reader = Some(
                                self.target
                                    .open_reader(&topic, 0, start, Duration::from_millis(100))
                                    .await?,
                            );
                        }
                        match reader.as_mut() {
                            Some(rd) => self.target.follow(rd).await.map(|(records, _)| records),
                            None => Ok(Vec::new()),
                        }
                    })
                    .await
                })
                .ok()
                .and_then(Result::ok);
            match fetched {
                Some(records) if !records.is_empty() => {
                    for rec in &records {
                        let cp = Checkpoint::decode(rec.key.as_deref(), rec.value.as_deref())
                            .map_err(|e| {
                                anyhow::anyhow!("checkpoint at {topic}@{}: {e}", rec.offset)
                            })?;
                        r.first_s
                            .get_or_insert_with(|| proc.spawned.elapsed().as_secs_f64());
                        latest.insert(
                            (
                                cp.key.group,
                                cp.key.topic_partition.topic,
                                cp.key.topic_partition.partition,
                            ),
                            cp.downstream_offset,
                        );
                    }
                }
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
            r.seen = latest.len();
            if r.seen >= expected {
                r.all_s = Some(proc.spawned.elapsed().as_secs_f64());
                // Lines written since this iteration's first look: stamped now,
                // not after the settling below (the stamps are the times lines
                // were first seen, polled every ~50 ms).
                self.scan_log(&proc, &mut seen_lines, &mut r);
                break;
            }
            if proc.spawned.elapsed() > RUN_TIMEOUT {
                eprintln!(
                    "bench precise: only {} of {expected} checkpoints after {RUN_TIMEOUT:?}",
                    r.seen
                );
                break;
            }
        }
        // Steady: after the last checkpoint, rounds keep running.
        let settle = Instant::now();
        while settle.elapsed() < SETTLE {
            proc.alive()?;
            let s = sample(proc.pid(), proc.spawned)?;
            r.rss_peak_kib = r.rss_peak_kib.max(s.hwm_kib);
            std::thread::sleep(Duration::from_millis(200));
        }
        let s = sample(proc.pid(), proc.spawned)?;
        r.rss_steady_kib = s.rss_kib;
        r.rss_peak_kib = r.rss_peak_kib.max(s.hwm_kib);
        self.scan_log(&proc, &mut seen_lines, &mut r);
        if !restart && !matches!(precision, Precision::Mm2) {
            // Let the sync-history topic be written before the restart reads it.
            self.await_history(flow, w, &mut proc)?;
        }
        r.load_after = procfs::loadavg();
        drop(proc);
        for (g, lag, u) in &w.groups {
            let truth = u + moved + SHIFT;
            let answer = answers.get(g.as_str()).copied();
            for (t, p) in w.partitions_iter() {
                // Checkpoints name the remote topic, as MM2's do.
                let remote = topics::remote(&flow.source_alias, t);
                let Some(&down) = latest.get(&(g.clone(), remote, p)) else {
                    continue;
                };
                if answer != Some(down) {
                    r.mismatches += 1;
                }
                let reread = truth - down;
                let e = r.reread.entry(g.clone()).or_insert((reread, reread));
                e.0 = e.0.min(reread);
                e.1 = e.1.max(reread);
            }
            let _ = lag;
        }
        Ok(r)
    }

    /// Reads our JSON log's new lines for the initial reads and the restore.
    fn scan_log(&self, proc: &Guard, seen: &mut usize, r: &mut RunNumbers) {
        let text = proc.log_text();
        let at = proc.spawned.elapsed().as_secs_f64();
        for line in text.lines().skip(*seen) {
            *seen += 1;
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let Some(f) = v.get("fields") else { continue };
            let msg = f.get("message").and_then(|m| m.as_str()).unwrap_or("");
            let num = |k: &str| f.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
            if msg == "read the offset-syncs topic to its end" && r.syncs_read.is_none() {
                r.syncs_read = Some((num("records"), num("elapsed_ms"), at));
            } else if msg == "read the sync-history topic to its end" && r.history_read.is_none() {
                r.history_read = Some((num("records"), num("elapsed_ms")));
            } else if msg.starts_with("restored the precise history")
                || msg.starts_with("not using the")
            {
                r.restored.get_or_insert((at, msg.to_owned()));
            }
        }
    }

    /// Waits (at most two minutes) until the flow's sync-history topic holds a
    /// record per chunk of every partition and a mark, and stops growing.
    fn await_history(&self, flow: &Flow, w: &Workload, proc: &mut Guard) -> Result<()> {
        let topic = format!("mm2-checkpoint.{}.sync-history.internal", flow.source_alias);
        let want = w.partitions as i64 * ((w.syncs + 31) / 32) + 1;
        let began = Instant::now();
        let mut last = -1;
        loop {
            proc.alive()?;
            let end = self
                .rt
                .block_on(
                    self.target
                        .open_reader(&topic, 0, StartOffset::Latest, Duration::ZERO),
                )
                .map(|rd| rd.position())
                .unwrap_or(0);
            if end >= want && end == last {
                return Ok(());
            }
            if began.elapsed() > Duration::from_secs(120) {
                eprintln!("bench precise: {topic} holds {end} records after 120 s (want ≥ {want})");
                return Ok(());
            }
            last = end;
            std::thread::sleep(Duration::from_secs(2));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_budget_are_parsed_and_bad_ones_named() {
        let a = PreciseArgs::parse(&[]).unwrap();
        assert_eq!(a.sizes, vec![(1_000, 10_000), (10_000, 1_000)]);
        assert_eq!(a.max_syncs, None);
        let a = PreciseArgs::parse(&["--sizes", "10x20,3x4", "--max-syncs", "500"]).unwrap();
        assert_eq!(a.sizes, vec![(10, 20), (3, 4)]);
        assert_eq!(a.max_syncs, Some(500));
        for (bad, named) in [
            (&["--sizes", "10"][..], "PARTITIONSxSYNCS"),
            (&["--sizes", "0x10"][..], "at least 1 partition"),
            (&["--sizes", "ax10"][..], "\"ax10\""),
            (&["--max-syncs", "x"][..], "--max-syncs"),
            (&["--sizes"][..], "needs a value"),
            (&["--what"][..], "unknown option"),
        ] {
            let e = format!("{:#}", PreciseArgs::parse(bad).err().unwrap());
            assert!(e.contains(named), "{bad:?}: {e}");
        }
    }

    #[test]
    fn workloads_split_partitions_into_topics_of_at_most_a_thousand() {
        let w = |partitions: i32| {
            let topics = split_topics("x", partitions);
            Workload {
                partitions,
                topics,
                syncs: 1,
                groups: Vec::new(),
                base: Flow::new("x", "y".into(), 0, partitions),
            }
        };
        assert_eq!(w(10_000).topics.len(), 10);
        assert_eq!(w(1_000).topics, vec![("xt0".to_owned(), 1_000)]);
        assert_eq!(w(2_500).partitions_iter().count(), 2_500);
        assert_eq!(w(2_500).topics.last().map(|t| t.1), Some(500));
    }
}
