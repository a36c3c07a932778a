//! The MirrorMaker 2 side: a Connect standalone worker running only
//! `MirrorCheckpointConnector`, its configuration, and the log lines it is
//! timed by.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::args::Mm2Jvm;
use super::logs::log_span;
use super::process::Guard;
use super::report::RunResult;
use super::side_by_side::{Bench, EMIT_INTERVAL_S, FIRST_ROUND_TIMEOUT, Flow, SETTLE};

/// JVM options of `bench latency`'s Connect worker: the same as the MM2 of
/// the e2e tests ([`Mm2Jvm::Small`]).
pub(super) const JVM_OPTS: &[&str] = e2e::mm2::JVM_OPTS;
/// Connect's standalone entry point.
const CONNECT_STANDALONE: &str = "org.apache.kafka.connect.cli.ConnectStandalone";
/// What Connect logs when it creates the checkpoint task (MM2 4.1.1).
pub(super) const MM2_TASK_CREATED: &str = "INFO Creating task ";
/// What MM2's scheduler logs once the task's checkpoint and offset-sync
/// stores are loaded (asynchronously, after the task's `start()`).
pub(super) const MM2_STORES_LOADED: &str = "starting checkpoint and offset sync stores took";
/// Connect's KafkaBasedLog around the initial read of the offset-syncs topic.
pub(super) const MM2_SYNCS_READ_START: &str = "Starting KafkaBasedLog with topic mm2-offset-syncs.";
pub(super) const MM2_SYNCS_READ_DONE: &str =
    "Finished reading KafkaBasedLog for topic mm2-offset-syncs.";

impl Bench {
    fn connect_command(&self, dir: &Path, flow: &Flow, jvm: Mm2Jvm) -> Result<Command> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let write = |name: &str, text: String| -> Result<PathBuf> {
            let p = dir.join(name);
            fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
            Ok(p)
        };
        let (s, t, sb, tb, common) = self.names(flow);
        // The worker's own clients (its producer writes the checkpoints) reach
        // the target as the connector's target clients do.
        let worker_security = match &flow.security {
            Some(sec) => format!(
                "{}{}",
                sec.target.prefixed(""),
                sec.target.prefixed("producer.")
            ),
            None => String::new(),
        };
        let worker = write(
            "worker.properties",
            format!(
                "bootstrap.servers = {tb}\n\
                 key.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n\
                 value.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n\
                 offset.storage.file.filename = {offsets}\n\
                 offset.flush.interval.ms = 10000\n\
                 listeners = http://127.0.0.1:0\n\
                 {worker_security}",
                offsets = dir.join("connect.offsets").display(),
            ),
        )?;
        let cluster_security = match &flow.security {
            Some(sec) => format!(
                "{}{}",
                sec.source.prefixed("source.cluster."),
                sec.target.prefixed("target.cluster.")
            ),
            None => String::new(),
        };
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
                 {cluster_security}\
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
        cmd.args(jvm.options())
            .arg(format!("-Dlog4j2.configurationFile={}", log4j.display()))
            .arg("-cp")
            .arg(&self.kafka_libs)
            .arg(CONNECT_STANDALONE)
            .arg(&worker)
            .arg(&connector)
            .current_dir(dir);
        Ok(cmd)
    }

    /// The Connect worker running MirrorCheckpointConnector for `flow`,
    /// files and log in `dir`.
    pub(super) fn spawn_connect(&self, dir: &Path, flow: &Flow, jvm: Mm2Jvm) -> Result<Guard> {
        let cmd = self.connect_command(dir, flow, jvm)?;
        Guard::spawn(
            cmd,
            "the Connect worker running MirrorCheckpointConnector",
            &dir.join("connect.log"),
        )
    }

    pub(super) fn run_mm2(&self, flow: &Flow, label: &str, jvm: Mm2Jvm) -> Result<RunResult> {
        let dir = self.dir.join(label).join(format!("mm2-{}", jvm.name()));
        self.prepare_target(flow)?;
        let mut proc = self.spawn_connect(&dir, flow, jvm)?;
        eprintln!(
            "bench: {label}: MM2 checkpoint connector started, {} JVM (pid {})",
            jvm.name(),
            proc.pid()
        );
        let (first, all, stamps) = match self.await_checkpoints(flow, &mut proc)? {
            Ok(seen) => seen,
            Err((first, incomplete)) => return Ok(RunResult::incomplete(first, incomplete)),
        };
        let synced = self.await_group_sync(flow, &mut proc)?;
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
            start_to_groups_synced_s: synced,
            ..RunResult::measured((first, all, stamps.len()), a, b, rounds, self.ticks)
        })
    }

    /// MM2: the initial read of the offset-syncs topic (Connect's log
    /// timestamps), and spawn → that read done.
    pub(super) fn mm2_load_time(&self, flow: &Flow, label: &str) -> Result<(f64, f64)> {
        let mut proc = self.spawn_connect(&self.dir.join(label), flow, Mm2Jvm::Stock)?;
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
}
