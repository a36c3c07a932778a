//! `bench mm2`: the [`Bench`] over the source and target clusters, one
//! workload per group count and the catch-up run, MM2 and ours in turn on each,
//! and the report it writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use kafka_lite::{PartitionReader, StartOffset};
use mm2_checkpoint::core::format::Checkpoint;
use mm2_checkpoint::driver::ClusterClient;
use mm2_checkpoint::driver::FlowCluster;

use super::args::Mm2Args;
use super::args::{Mm2Jvm, OursBuild, Variant};
use super::env::ClusterEnv;
use super::process::{Guard, ProcSample, cargo, clock_ticks, sample};
use super::report::{
    CatchUp, Incomplete, KafkaConsumerRate, KafkaProducerRate, RawFetchRate, Report, RunResult,
    SizeResult, render_raw, render_table,
};
use crate::kafka::ClusterInfo;
use crate::{procfs, topics};

/// Partitions of the catch-up run's topic; the syncs are spread over them.
const CATCH_UP_PARTITIONS: i32 = 100;
/// `emit.checkpoints.interval.seconds` on both sides.
pub(super) const EMIT_INTERVAL_S: u64 = 1;
/// How long either side may take to write every checkpoint of a workload.
pub(super) const FIRST_ROUND_TIMEOUT: Duration = Duration::from_secs(600);
/// Wait after the first round before the steady window starts.
pub(super) const SETTLE: Duration = Duration::from_secs(10);

/// What [`Bench::await_checkpoints`] saw: (first, all, record timestamps),
/// or, if the first round did not finish in time, (first, how far it got).
pub(super) type Awaited =
    std::result::Result<(Duration, Duration, Vec<i64>), (Option<Duration>, Incomplete)>;

pub(super) struct Bench {
    pub(super) rt: tokio::runtime::Runtime,
    pub(super) source: ClusterClient,
    pub(super) target: ClusterClient,
    pub(super) source_addr: String,
    pub(super) target_addr: String,
    pub(super) kafka_libs: String,
    pub(super) bin: PathBuf,
    /// The emulator that runs `bin` (`--build armv7-qemu`), if any.
    pub(super) launcher: Option<PathBuf>,
    pub(super) dir: PathBuf,
    pub(super) ticks: u64,
    pub(super) window: Duration,
    /// The source and target clusters' listeners, users and TLS files.
    pub(super) clusters: (ClusterInfo, ClusterInfo),
}

/// Where a run writes its checkpoints and which groups it checkpoints.
#[derive(Clone)]
pub(super) struct Flow {
    pub(super) source_alias: String,
    pub(super) target_alias: String,
    pub(super) topic: String,
    pub(super) groups: Vec<String>,
    pub(super) group_regex: String,
    pub(super) partitions: i32,
    /// `emit.checkpoints.interval.seconds` ([`EMIT_INTERVAL_S`] in `bench mm2`).
    pub(super) emit_interval_s: u64,
    /// More `key = value` lines for both implementations (each ends in `\n`).
    pub(super) extra: String,
    /// Both sides sync offsets into the target groups: the run also waits
    /// for every target group to hold the translated offsets.
    pub(super) group_sync: bool,
    /// How both sides reach the clusters when not over PLAINTEXT.
    pub(super) security: Option<FlowSecurity>,
}

/// How a flow reaches its two clusters when not over PLAINTEXT.
#[derive(Clone)]
pub(super) struct FlowSecurity {
    pub(super) source: ClientSide,
    pub(super) target: ClientSide,
}

/// One cluster's bootstrap address and client settings (unprefixed
/// `key = value` lines, each ending in `\n`).
#[derive(Clone)]
pub(super) struct ClientSide {
    pub(super) addr: String,
    pub(super) lines: String,
}

impl ClientSide {
    /// SASL_SSL with SCRAM-SHA-512 as the cluster's test user, trusting the
    /// cluster's test CA (a PEM trust store, which both sides read).
    fn sasl_ssl_scram(cluster: &ClusterInfo) -> ClientSide {
        let user = &cluster.sasl_users.scram_sha_512;
        ClientSide {
            addr: cluster.bootstrap.sasl_ssl.clone(),
            lines: format!(
                "security.protocol = SASL_SSL\n\
                 sasl.mechanism = SCRAM-SHA-512\n\
                 sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule \
                 required username=\"{}\" password=\"{}\";\n\
                 ssl.truststore.type = PEM\n\
                 ssl.truststore.location = {}\n",
                user.user,
                user.password.expose(),
                cluster.tls.ca_pem.display()
            ),
        }
    }

    /// The lines with `prefix` before each key.
    pub(super) fn prefixed(&self, prefix: &str) -> String {
        self.lines
            .lines()
            .map(|l| format!("{prefix}{l}\n"))
            .collect()
    }
}

impl Flow {
    /// A flow of `groups` named `<prefix>-g<i>` on topic `<prefix>`, writing to
    /// the checkpoints topic of `source_alias` (empty until
    /// [`Flow::with_source_alias`]), at `bench mm2`'s emit interval.
    pub(super) fn new(prefix: &str, target_alias: String, groups: usize, partitions: i32) -> Flow {
        Flow {
            source_alias: String::new(),
            target_alias,
            topic: prefix.to_owned(),
            groups: (0..groups).map(|i| format!("{prefix}-g{i}")).collect(),
            group_regex: format!("{prefix}-g.*"),
            partitions,
            emit_interval_s: EMIT_INTERVAL_S,
            extra: String::new(),
            group_sync: false,
            security: None,
        }
    }

    /// The flow changed for `variant`: group sync every second, or both
    /// clusters over SASL_SSL + SCRAM (`clusters`: source's, target's).
    pub(super) fn with_variant(
        mut self,
        variant: Variant,
        clusters: (&ClusterInfo, &ClusterInfo),
    ) -> Flow {
        match variant {
            Variant::GroupSync => {
                self.group_sync = true;
                self.extra.push_str(
                    "sync.group.offsets.enabled = true\n\
                     sync.group.offsets.interval.seconds = 1\n",
                );
            }
            Variant::TlsScram => {
                self.security = Some(FlowSecurity {
                    source: ClientSide::sasl_ssl_scram(clusters.0),
                    target: ClientSide::sasl_ssl_scram(clusters.1),
                });
            }
        }
        self
    }

    /// The properties both implementations get alike.
    fn common_properties(&self) -> String {
        format!(
            "topics = {}\ngroups = {}\nemit.checkpoints.interval.seconds = {}\n\
             checkpoints.topic.replication.factor = 1\n{}",
            self.topic, self.group_regex, self.emit_interval_s, self.extra
        )
    }

    pub(super) fn checkpoints_topic(&self) -> String {
        topics::checkpoints(&self.source_alias)
    }

    pub(super) fn with_source_alias(&self, alias: &str) -> Flow {
        Flow {
            source_alias: alias.to_owned(),
            ..self.clone()
        }
    }
}

impl Bench {
    /// Waits for the checkpoints of `flow.groups` in the flow's checkpoints
    /// topic, checking that `proc` lives: when the first and the last were
    /// seen (since spawn) and every record timestamp. If not all are there
    /// after [`FIRST_ROUND_TIMEOUT`], `Err` with when the first was seen and
    /// how far it got: a lower bound, not a failure.
    pub(super) fn await_checkpoints(&self, flow: &Flow, proc: &mut Guard) -> Result<Awaited> {
        let topic = flow.checkpoints_topic();
        let want: BTreeSet<&str> = flow.groups.iter().map(String::as_str).collect();
        let total = want.len() * flow.partitions as usize;
        let mut seen: BTreeMap<(String, i32), i64> = BTreeMap::new();
        let mut first = None;
        // Opened once the topic exists, then followed from its start.
        let mut reader: Option<PartitionReader> = None;
        loop {
            proc.alive()?;
            let fetched = self
                .rt
                .block_on(async {
                    tokio::time::timeout(Duration::from_secs(5), async {
                        if reader.is_none() {
                            let wait = Duration::from_millis(100);
                            reader = Some(
                                self.target
                                    .open_reader(&topic, 0, StartOffset::Earliest, wait)
                                    .await?,
                            );
                        }
                        match reader.as_mut() {
                            Some(r) => self.target.follow(r).await.map(|(records, _)| records),
                            None => Ok(Vec::new()),
                        }
                    })
                    .await
                })
                .ok()
                .and_then(Result::ok);
            if let Some(records) = fetched {
                for r in &records {
                    let cp = Checkpoint::decode(r.key.as_deref(), r.value.as_deref())
                        .map_err(|e| anyhow::anyhow!("checkpoint at {topic}@{}: {e}", r.offset))?;
                    if want.contains(cp.key.group.as_str()) {
                        seen.entry((cp.key.group, cp.key.topic_partition.partition))
                            .or_insert(r.timestamp);
                        first.get_or_insert_with(|| proc.spawned.elapsed());
                    }
                }
            } else {
                std::thread::sleep(Duration::from_millis(50));
            }
            if seen.len() >= total {
                let all = proc.spawned.elapsed();
                return Ok(Ok((
                    first.unwrap_or(all),
                    all,
                    seen.into_values().collect(),
                )));
            }
            if proc.spawned.elapsed() > FIRST_ROUND_TIMEOUT {
                eprintln!(
                    "bench: {}: only {} of {total} checkpoints in {topic} after {:?}; \
                     kept as a lower bound (see {})",
                    proc.what,
                    seen.len(),
                    FIRST_ROUND_TIMEOUT,
                    proc.log.display()
                );
                return Ok(Err((
                    first,
                    Incomplete {
                        seen: seen.len(),
                        total,
                        after_s: proc.spawned.elapsed().as_secs_f64(),
                    },
                )));
            }
        }
    }

    /// Source alias, target alias, their bootstrap addresses, and the
    /// properties both implementations share, for a config file.
    pub(super) fn names<'a>(
        &'a self,
        flow: &'a Flow,
    ) -> (&'a str, &'a str, &'a str, &'a str, String) {
        let (source_addr, target_addr) = match &flow.security {
            Some(sec) => (sec.source.addr.as_str(), sec.target.addr.as_str()),
            None => (self.source_addr.as_str(), self.target_addr.as_str()),
        };
        (
            &flow.source_alias,
            &flow.target_alias,
            source_addr,
            target_addr,
            flow.common_properties(),
        )
    }

    /// With group sync: creates the remote topic of `flow` on the target, so
    /// that the target groups can hold offsets for it. Call before the run.
    pub(super) fn prepare_target(&self, flow: &Flow) -> Result<()> {
        if !flow.group_sync {
            return Ok(());
        }
        let remote = topics::remote(&flow.source_alias, &flow.topic);
        self.rt.block_on(async {
            super::env::lite(
                &format!("creating {remote} on the target"),
                self.target
                    .create_topic(&remote, flow.partitions, 1, &[])
                    .await,
            )
            .map(|_| ())
        })
    }

    /// With group sync: waits until every group of `flow` holds an offset on
    /// the target for every partition of the remote topic, checking that
    /// `proc` lives; seconds since spawn, or `None` (logged) if that did not
    /// happen within [`FIRST_ROUND_TIMEOUT`] of the spawn.
    pub(super) fn await_group_sync(&self, flow: &Flow, proc: &mut Guard) -> Result<Option<f64>> {
        if !flow.group_sync {
            return Ok(None);
        }
        let remote = topics::remote(&flow.source_alias, &flow.topic);
        let mut pending: Vec<String> = flow.groups.clone();
        loop {
            proc.alive()?;
            let fetched = self
                .rt
                .block_on(self.target.fetch_group_offsets(&pending))
                .map_err(|e| anyhow::anyhow!("fetching target group offsets: {e}"))?;
            pending.retain(|g| {
                let synced = fetched
                    .get(g)
                    .and_then(|r| r.as_ref().ok())
                    .is_some_and(|o| {
                        (0..flow.partitions).all(|p| {
                            o.get(&mm2_checkpoint::core::TopicPartition::new(&remote, p))
                                .is_some_and(|c| c.is_some())
                        })
                    });
                !synced
            });
            if pending.is_empty() {
                return Ok(Some(proc.spawned.elapsed().as_secs_f64()));
            }
            if proc.spawned.elapsed() > FIRST_ROUND_TIMEOUT {
                eprintln!(
                    "bench: {}: {} of {} target groups not synced after {:?}",
                    proc.what,
                    pending.len(),
                    flow.groups.len(),
                    FIRST_ROUND_TIMEOUT
                );
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Samples `proc` at the start and end of the steady window.
    /// Call after [`SETTLE`] has passed since the first round.
    pub(super) fn window(&self, proc: &mut Guard) -> Result<(ProcSample, ProcSample)> {
        proc.alive()?;
        let a = sample(proc.pid(), proc.spawned)?;
        std::thread::sleep(self.window);
        proc.alive()?;
        let b = sample(proc.pid(), proc.spawned)?;
        Ok((a, b))
    }

    /// One workload: seeded, then MM2 once per JVM setting in `jvms` (none:
    /// ours alone), then ours. A side that fails is recorded as failed and
    /// the others still run; one that does not finish in time is a lower bound.
    fn size(
        &self,
        stamp: u64,
        groups: usize,
        partitions: i32,
        jvms: &[Mm2Jvm],
        variant: Option<Variant>,
    ) -> Result<SizeResult> {
        // Variants get names of their own: "s" for group sync, "t" for TLS.
        let tag = variant.map_or("", |v| &v.name()[..1]);
        let label = match variant {
            Some(v) => format!("g{groups}-{}", v.name()),
            None => format!("g{groups}"),
        };
        let id = format!("{stamp}n{groups}{tag}");
        let mut base = Flow::new(
            &format!("bench-{id}"),
            format!("bt{id}"),
            groups,
            partitions,
        );
        if let Some(v) = variant {
            base = base.with_variant(v, (&self.clusters.0, &self.clusters.1));
        }
        let loadavg = procfs::loadavg();
        eprintln!(
            "bench: {label}: seeding {groups} groups × {partitions} partitions (load {loadavg})"
        );
        self.seed(&base, None)?;
        let mut mm2 = Vec::new();
        for &jvm in jvms {
            let alias = format!("bm{}{id}", &jvm.name()[..2]);
            let run = self
                .run_mm2(&base.with_source_alias(&alias), &label, jvm)
                .with_context(|| format!("MM2 ({} JVM) with {groups} groups", jvm.name()))
                .unwrap_or_else(|e| {
                    eprintln!("bench: {label}: MM2 ({} JVM) failed: {e:#}", jvm.name());
                    RunResult::failed(&e)
                });
            mm2.push((jvm.name().to_owned(), run));
        }
        let ours = self
            .run_ours(&base.with_source_alias(&format!("bo{id}")), &label)
            .with_context(|| format!("mm2-checkpoint with {groups} groups"))
            .unwrap_or_else(|e| {
                eprintln!("bench: {label}: mm2-checkpoint failed: {e:#}");
                RunResult::failed(&e)
            });
        // The broker's own limit for the first round's writes, where ours
        // runs alone (the largest sizes): as many records of the same size.
        let kafka_producer = if jvms.is_empty() && variant.is_none() && ours.finished() {
            self.producer_performance(&base.with_source_alias(&format!("bo{id}")), &id)
                .unwrap_or_else(|e| {
                    eprintln!("bench: {label}: Kafka's ProducerPerformance failed: {e:#}");
                    None
                })
        } else {
            None
        };
        Ok(SizeResult {
            groups,
            partitions,
            variant: variant.map(|v| v.label().to_owned()),
            loadavg,
            mm2,
            ours,
            kafka_producer,
        })
    }

    fn catch_up(&self, stamp: u64, syncs: u64) -> Result<CatchUp> {
        let loadavg = procfs::loadavg();
        let flow = |kind: &str| {
            Flow::new(
                &format!("benchcu-{kind}{stamp}"),
                format!("b{kind}{stamp}"),
                1,
                CATCH_UP_PARTITIONS,
            )
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
        let syncs_topic = topics::offset_syncs(&full.target_alias);
        let consumer = |tuned: bool| {
            self.consumer_performance(&syncs_topic, syncs, tuned)
                .unwrap_or_else(|e| {
                    eprintln!("bench: catch-up: Kafka's ConsumerPerformance failed: {e:#}");
                    None
                })
        };
        let kafka_consumer = consumer(false);
        let kafka_consumer_tuned = consumer(true);
        let raw_fetch = self.raw_fetch_rate(&syncs_topic).unwrap_or_else(|e| {
            eprintln!("bench: catch-up: the raw Fetch reference failed: {e:#}");
            None
        });
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
            kafka_consumer,
            kafka_consumer_tuned,
            raw_fetch,
            loadavg,
        })
    }

    /// The broker's rate without a consumer's work: kafka-lite Fetches of
    /// partition 0 of `topic` from its start to its end, one after the other
    /// on one connection, of the size ours asks for (the driver's
    /// `fetch_options`), their records left undecoded (batch headers only).
    fn raw_fetch_rate(&self, topic: &str) -> Result<Option<RawFetchRate>> {
        self.rt.block_on(async {
            let wait = Duration::from_millis(500);
            let max_bytes = mm2_checkpoint::driver::fetch_options(wait).max_bytes;
            let mut reader = self
                .source
                .open_reader(topic, 0, StartOffset::Earliest, wait)
                .await
                .with_context(|| format!("opening {topic}"))?;
            let end = reader.end();
            let (mut records, mut bytes, mut fetches) = (0u64, 0u64, 0u64);
            let t = Instant::now();
            while let Some(raw) = self
                .source
                .read_raw(&mut reader)
                .await
                .with_context(|| format!("fetching {topic}"))?
            {
                records += raw.records;
                bytes += raw.bytes as u64;
                fetches += 1;
            }
            let secs = t.elapsed().as_secs_f64();
            Ok((records > 0 && secs > 0.0).then(|| RawFetchRate {
                records,
                bytes,
                fetches,
                end,
                max_bytes,
                secs,
                records_per_s: records as f64 / secs,
            }))
        })
    }

    /// Kafka's own producer writing as many records as `flow`'s first round
    /// writes checkpoints, each as large as a checkpoint's key and value on
    /// average, to a new one-partition topic on the target
    /// (`org.apache.kafka.tools.ProducerPerformance`, acks=all, 512 KiB
    /// batches as ours): what the broker accepts here, the floor for the
    /// first round's wall time. Its keys are null, so the topic is not
    /// compacted (the checkpoints topic is).
    fn producer_performance(&self, flow: &Flow, id: &str) -> Result<Option<KafkaProducerRate>> {
        let remote = topics::remote(&flow.source_alias, &flow.topic);
        let count = flow.groups.len() * flow.partitions as usize;
        if count == 0 {
            return Ok(None);
        }
        // Key: group and topic as INT16-length strings and an INT32
        // partition; value: version, two offsets and an empty metadata string.
        let key_bytes: usize = flow
            .groups
            .iter()
            .map(|g| 2 + g.len() + 2 + remote.len() + 4)
            .sum();
        let record_size = key_bytes / flow.groups.len() + 2 + 8 + 8 + 2;
        let topic = format!("bench-produce-ref-{id}");
        self.rt.block_on(async {
            super::env::lite(
                &format!("creating {topic} on the target"),
                self.target.create_topic(&topic, 1, 1, &[]).await,
            )
            .map(|_| ())
        })?;
        let settings = "acks=all batch.size=524288 linger.ms=5 max.request.size=1048576 \
                        buffer.memory=67108864 compression.type=none";
        let out = Command::new("java")
            .arg("-cp")
            .arg(&self.kafka_libs)
            .arg("org.apache.kafka.tools.ProducerPerformance")
            .args(["--topic", &topic, "--num-records", &count.to_string()])
            .args([
                "--record-size",
                &record_size.to_string(),
                "--throughput",
                "-1",
            ])
            .arg("--producer-props")
            .arg(format!("bootstrap.servers={}", self.target_addr))
            .args(settings.split_whitespace())
            .output()
            .context("running ProducerPerformance")?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!(
                "ProducerPerformance exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(parse_producer_performance(
            &text,
            record_size,
            settings.to_owned(),
        ))
    }

    /// Kafka's own consumer reading `count` records of `topic` from its start
    /// (`org.apache.kafka.tools.ConsumerPerformance` from the clusters' Kafka
    /// jars): what the broker and Kafka's client manage, the ceiling for any
    /// reader of that topic here.
    /// With `tuned`, the consumer is set for throughput: 64 MiB per
    /// partition and per fetch (`--fetch-size`, `fetch.max.bytes`), an 8 MiB
    /// socket receive buffer and `max.poll.records` 100,000; otherwise
    /// Kafka's defaults (1 MiB per partition).
    fn consumer_performance(
        &self,
        topic: &str,
        count: u64,
        tuned: bool,
    ) -> Result<Option<KafkaConsumerRate>> {
        let mut cmd = Command::new("java");
        cmd.arg("-cp")
            .arg(&self.kafka_libs)
            .arg("org.apache.kafka.tools.ConsumerPerformance")
            .args(["--bootstrap-server", &self.source_addr, "--topic", topic])
            .args(["--messages", &count.to_string(), "--timeout", "120000"]);
        if tuned {
            let config = self.dir.join("consumer-perf-tuned.properties");
            fs::create_dir_all(&self.dir)?;
            fs::write(
                &config,
                "fetch.max.bytes=67108864\nmax.poll.records=100000\n",
            )
            .with_context(|| format!("writing {}", config.display()))?;
            cmd.args([
                "--fetch-size",
                "67108864",
                "--socket-buffer-size",
                "8388608",
            ])
            .arg("--consumer.config")
            .arg(&config)
            .args(["--group", &format!("bench-perf-tuned-{topic}")]);
        } else {
            cmd.args(["--group", &format!("bench-perf-{topic}")]);
        }
        let out = cmd.output().context("running ConsumerPerformance")?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!(
                "ConsumerPerformance exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(parse_consumer_performance(&text))
    }
}

/// The last (whole-run) line of Kafka's `ProducerPerformance` output,
/// `N records sent, R records/sec (…), … 50th, …`, as a rate of `record_size`-byte
/// records sent with `settings`.
pub(super) fn parse_producer_performance(
    out: &str,
    record_size: usize,
    settings: String,
) -> Option<KafkaProducerRate> {
    let line = out.lines().rev().find(|l| l.contains("records sent"))?;
    let mut words = line.split_whitespace();
    let records = words.next()?.parse().ok()?;
    let per_s = line.split(", ").nth(1)?.split_whitespace().next()?;
    Some(KafkaProducerRate {
        records,
        record_size,
        records_per_s: per_s.parse().ok().filter(|r: &f64| *r > 0.0)?,
        settings,
    })
}

/// The numbers of `ConsumerPerformance`'s data line (after the header
/// `start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg,
/// nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec`).
pub(super) fn parse_consumer_performance(out: &str) -> Option<KafkaConsumerRate> {
    let line = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("start.time"))
        .nth(1)?;
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    Some(KafkaConsumerRate {
        records: num(4)? as u64,
        records_per_s: num(5)?,
        fetch_records_per_s: num(9)?,
    })
}

/// Builds `build` of ours and returns its path, and the emulator that must
/// run it, if any.
fn ours_binary(root: &Path, build: OursBuild) -> Result<(PathBuf, Option<PathBuf>)> {
    use crate::dist::artefact::{Arch, Package, which};
    match build {
        OursBuild::Release => {
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
            // Cargo's target directory, so a CARGO_TARGET_DIR is honoured.
            let target = Package::load(root)?.target_dir;
            Ok((target.join("release").join("mm2-checkpoint"), None))
        }
        OursBuild::Dist => Ok((dist_artefact(root, Arch::X86_64)?, None)),
        OursBuild::Armv7Qemu => {
            let qemu = which("qemu-arm-static").context(
                "`--build armv7-qemu` needs qemu-arm-static (Debian: apt-get install \
                 qemu-user-static)",
            )?;
            Ok((dist_artefact(root, Arch::Armv7)?, Some(qemu)))
        }
    }
}

/// Builds the default artefact of `arch` with `cargo xtask dist` and returns
/// its path.
fn dist_artefact(root: &Path, arch: crate::dist::artefact::Arch) -> Result<PathBuf> {
    use crate::dist::artefact::{Package, Variant};
    eprintln!(
        "bench: building the static musl artefact (cargo xtask dist --target {})",
        arch.name()
    );
    crate::dist::build::dist(root, &["--target", arch.name(), "--variant", "default"])?;
    let bin = Package::load(root)?.artefact(arch, Variant::Default);
    if !bin.is_file() {
        bail!("{} missing after `cargo xtask dist`", bin.display());
    }
    Ok(bin)
}

/// How the report names `build`.
fn build_label(build: OursBuild) -> &'static str {
    match build {
        OursBuild::Dist => "static musl artefact of `cargo xtask dist` (x86_64, default features)",
        OursBuild::Release => "`cargo build --release` for the host (glibc)",
        OursBuild::Armv7Qemu => {
            "armv7 static musl artefact of `cargo xtask dist`, run by qemu-arm-static: RSS is \
             the emulator process's (the program's memory plus qemu's own), times and CPU are \
             emulated and mean nothing"
        }
    }
}

pub(super) fn git_head(root: &Path) -> String {
    Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(root)
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "?".into())
}

impl Bench {
    /// Builds the release binary, finds (or starts) the clusters and makes a
    /// run directory `target/bench/<unix seconds>/`. Returns the bench, the
    /// clusters (keep them until the end: dropping stops what was started
    /// here) and the start time in unix seconds.
    pub(super) fn start(
        root: &Path,
        window: Duration,
        rt: tokio::runtime::Runtime,
    ) -> Result<(Bench, ClusterEnv, u64)> {
        Self::start_with(root, window, rt, OursBuild::Release)
    }

    /// [`start`](Self::start) measuring `build` of ours.
    pub(super) fn start_with(
        root: &Path,
        window: Duration,
        rt: tokio::runtime::Runtime,
        build: OursBuild,
    ) -> Result<(Bench, ClusterEnv, u64)> {
        let (bin, launcher) = ours_binary(root, build)?;
        let env = ClusterEnv::acquire(root)?;
        let started_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let (source_addr, target_addr) = (env.bootstrap("source")?, env.bootstrap("target")?);
        let cluster =
            |name: &str| -> Result<ClusterInfo> {
                env.file.clusters.get(name).cloned().with_context(|| {
                    format!("cluster `{name}` missing from {}", env.path.display())
                })
            };
        let clusters = (cluster("source")?, cluster("target")?);
        // Seeding commits into thousands of groups: over several connections
        // per coordinator, as a broker serves one connection's requests one
        // at a time.
        let client = |alias: &str, addr: &str| {
            ClusterClient::new(
                alias,
                vec![addr.to_owned()],
                kafka_lite::ConnectionConfig {
                    coordinator_connections: 16,
                    ..kafka_lite::ConnectionConfig::default()
                },
            )
            .map_err(|e| anyhow::anyhow!("client for {alias} ({addr}): {e}"))
        };
        let dir = root
            .join("target")
            .join("bench")
            .join(started_unix.to_string());
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let bench = Bench {
            rt,
            source: client("source", &source_addr)?,
            target: client("target", &target_addr)?,
            source_addr,
            target_addr,
            kafka_libs: env.file.kafka_libs.clone(),
            bin,
            launcher,
            dir,
            ticks: clock_ticks(),
            window,
            clusters,
        };
        Ok((bench, env, started_unix))
    }
}

/// `cargo xtask bench mm2 ...`.
pub(super) fn mm2(root: &Path, args: &Mm2Args) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    // At 100,000 groups x 10 partitions the source broker's committed offsets
    // fill the test clusters' 512 MiB heap and it spends its time in full GCs
    // (docs/benchmarks.md, "Measurements behind the design"): clusters started here get 2 GiB.
    let group_partitions = |g: &usize| g * args.partitions as usize;
    if args
        .ours_only
        .iter()
        .chain(&args.groups)
        .map(group_partitions)
        .max()
        >= Some(500_000)
    {
        crate::kafka::raise_default_broker_heap("2g");
        if std::env::var_os("MM2_BROKER_HEAP").is_none() {
            eprintln!(
                "bench: brokers started for this run get a 2 GiB heap; clusters already up keep \
                 theirs (start them with MM2_BROKER_HEAP=2g for the largest sizes)"
            );
        }
    }
    let (bench, env, started_unix) =
        Bench::start_with(root, Duration::from_secs(args.window), rt, args.build)?;
    let dir = bench.dir.clone();
    let mut report = Report {
        started_unix,
        kafka_version: env.file.kafka_version.clone(),
        commit: git_head(root),
        mm2_jvm: args
            .mm2_jvm
            .iter()
            .map(|j| {
                let opts = j.options().iter().map(|s| (*s).to_owned()).collect();
                (j.name().to_owned(), opts)
            })
            .collect(),
        ours_build: build_label(args.build).to_owned(),
        sizes: Vec::new(),
        catch_up: None,
    };
    let base = root.join("target").join("bench");
    let json = base.join(format!("mm2-{started_unix}.json"));
    let markdown = base.join(format!("mm2-{started_unix}.md"));
    // Every result is written as soon as it is known: an interrupted run
    // keeps the sizes it finished.
    let save = |report: &Report| -> Result<String> {
        fs::write(&json, serde_json::to_string_pretty(report)? + "\n")
            .with_context(|| format!("writing {}", json.display()))?;
        let text = format!(
            "{}\nRaw numbers:\n\n{}\nRaw JSON: {}; run files: {}\n",
            render_table(report),
            render_raw(report),
            json.display(),
            dir.display()
        );
        fs::write(&markdown, &text).with_context(|| format!("writing {}", markdown.display()))?;
        Ok(text)
    };
    let sizes = args
        .groups
        .iter()
        .map(|&g| (g, args.mm2_jvm.as_slice(), None))
        .chain(
            args.variants
                .iter()
                .map(|&v| (args.variant_groups, args.mm2_jvm.as_slice(), Some(v))),
        )
        .chain(args.ours_only.iter().map(|&g| (g, &[][..], None)));
    for (groups, jvms, variant) in sizes {
        let r = bench.size(started_unix, groups, args.partitions, jvms, variant)?;
        report.sizes.push(r);
        save(&report)?;
    }
    if args.syncs > 0 {
        match bench.catch_up(started_unix, args.syncs) {
            Ok(c) => report.catch_up = Some(c),
            Err(e) => eprintln!("bench: catch-up failed: {e:#}"),
        }
    }
    let text = save(&report)?;
    println!("{text}");
    if let Some(out) = &args.out {
        fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}
