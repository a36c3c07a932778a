//! The reference: Apache Kafka's own MirrorMaker 2, run in dedicated mode
//! (`org.apache.kafka.connect.mirror.MirrorMaker`) from the cached jars
//! against the `source` and `target` test clusters.
//!
//! [`Mm2Config`] renders an `mm2.properties` for one `source->target` flow
//! tuned for tests (replication factor 1, one-second intervals, dense offset
//! syncs, a topic pattern of the test's own), optionally with the checkpoint
//! connector switched off ([`Checkpoints`]) so our checkpointer can take its
//! place.
//! [`Mm2Process`] runs it as a child JVM that is killed when the guard drops.
//!
//! Each configuration gets its own Connect worker group and internal topics
//! ([`Mm2Config::instance`]), so tests running MM2 side by side on the shared
//! clusters never join each other's worker group. The MM2 topics that matter
//! for checkpointing keep their standard names ([`OFFSET_SYNCS_TOPIC`],
//! [`CHECKPOINTS_TOPIC`]) and are shared; records in them are keyed by topic
//! and group, which tests keep unique.

use std::fmt;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::java::{CheckpointRecord, JavaError, OffsetSyncRecord, helpers};
use crate::{Clusters, Listener};

/// The source cluster's alias in every generated configuration.
pub const SOURCE_ALIAS: &str = "source";
/// The target cluster's alias in every generated configuration.
pub const TARGET_ALIAS: &str = "target";
/// Where MM2 writes offset syncs for `source->target`: on the **source** cluster
/// (default `offset-syncs.topic.location=source`).
pub const OFFSET_SYNCS_TOPIC: &str = "mm2-offset-syncs.target.internal";
/// Where checkpoints for `source->target` go: on the **target** cluster.
pub const CHECKPOINTS_TOPIC: &str = "source.checkpoints.internal";
/// MirrorMaker 2's dedicated-mode entry point.
pub const MAIN_CLASS: &str = "org.apache.kafka.connect.mirror.MirrorMaker";
/// JVM options for the MM2 process: small heap, serial GC, quick start.
pub const JVM_OPTS: &[&str] = &[
    "-Xms64m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
];
/// The line MM2 4.1.1 logs (at ERROR) when it refuses the checkpoint connector
/// because `emit.checkpoints.enabled=false`.
pub const CHECKPOINTS_REFUSED_LOG: &str =
    "MirrorCheckpointConnector can't run with emit.checkpoints.enabled set to false";

/// How MM2's checkpoint connector is configured. In every mode the source
/// connector replicates and writes offset syncs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkpoints {
    /// The connector runs and checkpoints the groups matched by `groups`.
    Emit,
    /// `source->target.emit.checkpoints.enabled=false`: MM2 rejects the
    /// connector's configuration (logging [`CHECKPOINTS_REFUSED_LOG`]), so a
    /// fresh deployment never creates it, nor the checkpoints topic. The same
    /// line hands the flow to mm2-checkpoint when it reads the same file. A
    /// connector stored by an earlier run in the same Connect config topic
    /// keeps running with its old configuration.
    Refused,
    /// `source->target.groups.exclude=.*`: the connector runs (and creates the
    /// checkpoints topic) but selects no group, so it has no tasks and writes
    /// nothing. Being a valid configuration, it also replaces a connector
    /// stored by an earlier run (logging [`NO_GROUPS_LOG`]).
    NoGroups,
}

/// What MM2 4.1.1 logs when its checkpoint connector starts without groups.
pub const NO_GROUPS_LOG: &str = "Started MirrorCheckpointConnector with 0 consumer groups";
/// Logged each time MM2's replication task has started.
pub const SOURCE_TASK_READY_LOG: &str =
    "WorkerSourceTask{id=MirrorSourceConnector-0} Source task finished initialization and start";
/// Logged each time MM2's (first) checkpoint task has started.
pub const CHECKPOINT_TASK_READY_LOG: &str = "WorkerSourceTask{id=MirrorCheckpointConnector-0} Source task finished initialization and start";
/// Logged by Connect's `Worker` each time it creates the checkpoint task.
const CHECKPOINT_TASK_CREATED_LOG: &str = "Creating task MirrorCheckpointConnector-0 ";
/// Logged once the checkpoint task's producer is closed: from then on that
/// task generation can write no checkpoint.
const CHECKPOINT_TASK_PRODUCER_CLOSED_LOG: &str =
    "App info kafka.producer for connector-producer-MirrorCheckpointConnector-0 unregistered";
/// Logged by Connect's herder when a connector's new task list is empty; in
/// the configurations of this module only a checkpoint connector without
/// groups has no task.
const NO_TASKS_LOG: &str = "Tasks [] configs updated";

/// The name `topic` gets on the target under MM2's default replication policy.
pub fn remote_topic(topic: &str) -> String {
    format!("{SOURCE_ALIAS}.{topic}")
}

/// An `mm2.properties` for the `source->target` flow of the test clusters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mm2Config {
    /// `topics`: which source topics to replicate (a comma-separated regex list).
    pub topics: String,
    /// `groups`: which source groups to checkpoint.
    pub groups: String,
    /// `offset.lag.max`: 0 makes every replicated record produce an offset sync.
    pub offset_lag_max: u64,
    /// Whether MM2's own checkpoint connector does its job.
    pub checkpoints: Checkpoints,
    /// Isolates the Connect worker: group `<instance>` and internal topics
    /// `<instance>-{offsets,status,configs}.internal` on the target. `None`
    /// keeps MM2's defaults (`source-mm2`, `mm2-offsets.source.internal`, ...),
    /// which any other MM2 for the same flow would join.
    pub instance: Option<String>,
    /// Further `key = value` lines, appended last (so they win).
    pub extra: Vec<(String, String)>,
}

impl Mm2Config {
    /// A configuration replicating `topics` and checkpointing `groups`, with
    /// `offset.lag.max=0`, checkpoints on and a fresh unique instance.
    pub fn new(topics: &str, groups: &str) -> Self {
        Self {
            topics: topics.to_owned(),
            groups: groups.to_owned(),
            offset_lag_max: 0,
            checkpoints: Checkpoints::Emit,
            instance: Some(crate::unique_name("mm2-worker")),
            extra: Vec::new(),
        }
    }

    /// The same configuration with MM2's checkpoint connector refused
    /// ([`Checkpoints::Refused`]).
    pub fn without_checkpoints(self) -> Self {
        self.with_checkpoints(Checkpoints::Refused)
    }

    /// The same configuration with the given checkpoint mode.
    pub fn with_checkpoints(mut self, checkpoints: Checkpoints) -> Self {
        self.checkpoints = checkpoints;
        self
    }

    /// A name for this configuration's run directory: the instance, or `default`.
    pub fn name(&self) -> &str {
        self.instance.as_deref().unwrap_or("default")
    }

    /// The `mm2.properties` text for the given PLAINTEXT bootstrap addresses.
    pub fn render(&self, source_bootstrap: &str, target_bootstrap: &str) -> String {
        let mut lines: Vec<(String, String)> = Vec::new();
        let mut put = |k: &str, v: &str| lines.push((k.to_owned(), v.to_owned()));
        put("clusters", &format!("{SOURCE_ALIAS}, {TARGET_ALIAS}"));
        put(
            &format!("{SOURCE_ALIAS}.bootstrap.servers"),
            source_bootstrap,
        );
        put(
            &format!("{TARGET_ALIAS}.bootstrap.servers"),
            target_bootstrap,
        );
        put(&format!("{SOURCE_ALIAS}->{TARGET_ALIAS}.enabled"), "true");
        put(&format!("{TARGET_ALIAS}->{SOURCE_ALIAS}.enabled"), "false");
        put(
            &format!("{SOURCE_ALIAS}->{TARGET_ALIAS}.topics"),
            &self.topics,
        );
        put(
            &format!("{SOURCE_ALIAS}->{TARGET_ALIAS}.groups"),
            &self.groups,
        );
        let flow = format!("{SOURCE_ALIAS}->{TARGET_ALIAS}");
        match self.checkpoints {
            Checkpoints::Emit => put(&format!("{flow}.emit.checkpoints.enabled"), "true"),
            Checkpoints::Refused => put(&format!("{flow}.emit.checkpoints.enabled"), "false"),
            Checkpoints::NoGroups => put(&format!("{flow}.groups.exclude"), ".*"),
        }
        put("offset.lag.max", &self.offset_lag_max.to_string());
        // One broker per cluster: every topic MM2 or Connect creates gets RF 1.
        for key in [
            "replication.factor",
            "offset-syncs.topic.replication.factor",
            "checkpoints.topic.replication.factor",
            "heartbeats.topic.replication.factor",
            "offset.storage.replication.factor",
            "status.storage.replication.factor",
            "config.storage.replication.factor",
        ] {
            put(key, "1");
        }
        // Short intervals so tests see syncs and checkpoints within seconds.
        for key in [
            "emit.checkpoints.interval.seconds",
            "sync.group.offsets.interval.seconds",
            "refresh.topics.interval.seconds",
            "refresh.groups.interval.seconds",
            "emit.heartbeats.interval.seconds",
        ] {
            put(key, "1");
        }
        // Worker settings: MM2 builds the flow's worker config from the target's
        // cluster-level keys (`target.<key>`) and only a few top-level prefixes
        // (`offset.storage`, `config.storage`, `status.storage`, converters,
        // `task`, `worker`); a top-level `offset.flush.interval.ms` is dropped.
        // The flush interval also paces the offset syncs held back by the source
        // task's 10 in-flight permits: at the default 60 s the last syncs of a
        // burst arrive a minute late.
        put(&format!("{TARGET_ALIAS}.offset.flush.interval.ms"), "1000");
        if let Some(instance) = &self.instance {
            put(&format!("{TARGET_ALIAS}.group.id"), instance);
            for kind in ["offset", "status", "config"] {
                put(
                    &format!("{kind}.storage.topic"),
                    &format!("{instance}-{kind}s.internal"),
                );
            }
        }
        for (k, v) in &self.extra {
            put(k, v);
        }
        let mut text = String::from(
            "# MirrorMaker 2 (dedicated mode) for the mm2-checkpoint test clusters.\n",
        );
        for (k, v) in lines {
            text.push_str(&format!("{k} = {v}\n"));
        }
        text
    }

    /// The `mm2.properties` text for the PLAINTEXT listeners of `clusters`.
    pub fn render_for(&self, clusters: &Clusters) -> String {
        self.render(
            clusters.source().bootstrap.get(Listener::Plaintext),
            clusters.target().bootstrap.get(Listener::Plaintext),
        )
    }
}

/// Log4j 2 configuration for MM2: INFO to stdout (which goes to the log file).
const MM2_LOG4J: &str = "\
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
";

/// Writes `mm2.properties` and `log4j2.properties` into `dir` and returns the
/// `java` command that runs MirrorMaker 2 on them (stdio not yet redirected).
///
/// Shared by [`Mm2Process`] and `cargo xtask mm2 start`.
pub fn prepare(dir: &Path, kafka_libs: &str, properties: &str) -> Result<Command, Mm2Error> {
    fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
    let props = dir.join("mm2.properties");
    fs::write(&props, properties).map_err(io_err(format!("writing {}", props.display())))?;
    let log4j = dir.join("log4j2.properties");
    fs::write(&log4j, MM2_LOG4J).map_err(io_err(format!("writing {}", log4j.display())))?;
    let mut cmd = Command::new("java");
    cmd.args(JVM_OPTS)
        .arg(format!("-Dlog4j2.configurationFile={}", log4j.display()))
        .arg("-cp")
        .arg(kafka_libs)
        .arg(MAIN_CLASS)
        .arg(&props)
        .args(["--clusters", TARGET_ALIAS])
        .current_dir(dir)
        .stdin(Stdio::null());
    Ok(cmd)
}

/// Why MM2 could not be started, or did not do what a test waited for.
#[derive(Debug)]
pub enum Mm2Error {
    /// An I/O error around `what`.
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// The MM2 JVM exited while a test waited on it.
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// The end of its log.
        log_tail: String,
    },
    /// A wait ran out of time.
    Timeout {
        /// What was awaited.
        what: String,
        /// How long it waited.
        waited: Duration,
        /// The end of MM2's log.
        log_tail: String,
    },
}

impl fmt::Display for Mm2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { what, source } => write!(f, "{what}: {source}"),
            Self::Exited { status, log_tail } => {
                write!(
                    f,
                    "MirrorMaker 2 exited ({status}); end of its log:\n{log_tail}"
                )
            }
            Self::Timeout {
                what,
                waited,
                log_tail,
            } => write!(
                f,
                "MirrorMaker 2: no {what} after {:.0}s; end of its log:\n{log_tail}",
                waited.as_secs_f64()
            ),
        }
    }
}

impl std::error::Error for Mm2Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Mm2Error {
    let what = what.into();
    move |source| Mm2Error::Io { what, source }
}

/// A running MirrorMaker 2 JVM, killed when dropped.
///
/// Its files are in `target/mm2/<name>/`: `mm2.properties`,
/// `log4j2.properties` and `mm2.log` (stdout, stderr and Log4j output). A
/// restart in the same directory keeps the earlier logs as `mm2.1.log`,
/// `mm2.2.log`, ...
#[derive(Debug)]
pub struct Mm2Process {
    child: Child,
    dir: PathBuf,
    log: PathBuf,
    started: Instant,
    /// PLAINTEXT bootstrap of the source cluster (where the offset syncs are).
    source: String,
    /// PLAINTEXT bootstrap of the target cluster (where the checkpoints are).
    target: String,
}

impl Mm2Process {
    /// Starts MM2 with `config` against `clusters`, in `target/mm2/<config.name()>/`.
    pub fn start(clusters: &Clusters, config: &Mm2Config) -> Result<Self, Mm2Error> {
        Self::start_with(clusters, config.name(), &config.render_for(clusters))
    }

    /// Starts MM2 with the given `mm2.properties` text, in `target/mm2/<name>/`.
    pub fn start_with(clusters: &Clusters, name: &str, properties: &str) -> Result<Self, Mm2Error> {
        let dir = crate::target_dir().join("mm2").join(name);
        let mut cmd = prepare(&dir, &clusters.kafka_libs, properties)?;
        let log = dir.join("mm2.log");
        if log.exists() {
            let kept = (1..)
                .map(|n| dir.join(format!("mm2.{n}.log")))
                .find(|p| !p.exists())
                .unwrap_or_else(|| dir.join("mm2.old.log"));
            fs::rename(&log, &kept).map_err(io_err(format!(
                "keeping the earlier log as {}",
                kept.display()
            )))?;
        }
        let out = File::create(&log).map_err(io_err(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(io_err(format!("opening {} twice", log.display())))?;
        let started = Instant::now();
        let child = cmd.stdout(out).stderr(err).spawn().map_err(io_err(
            "starting `java` for MirrorMaker 2 (is a JDK installed?)",
        ))?;
        Ok(Self {
            child,
            dir,
            log,
            started,
            source: clusters
                .source()
                .bootstrap
                .get(Listener::Plaintext)
                .to_owned(),
            target: clusters
                .target()
                .bootstrap
                .get(Listener::Plaintext)
                .to_owned(),
        })
    }

    /// Starts MM2 with `config` and waits (up to `timeout`) until its
    /// replication task runs.
    pub fn start_replicating(
        clusters: &Clusters,
        config: &Mm2Config,
        timeout: Duration,
    ) -> Result<Self, Mm2Error> {
        let mut mm2 = Self::start(clusters, config)?;
        mm2.wait_for_log(SOURCE_TASK_READY_LOG, timeout)?;
        Ok(mm2)
    }

    /// The JVM's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log file.
    pub fn log_file(&self) -> &Path {
        &self.log
    }

    /// When the JVM was spawned.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The whole log so far (lossily decoded; empty if unreadable).
    pub fn log_text(&self) -> String {
        fs::read(&self.log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// The last `n` lines of the log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Fails if the JVM has exited.
    pub fn check_running(&mut self) -> Result<(), Mm2Error> {
        match self.child.try_wait() {
            Ok(Some(status)) => Err(Mm2Error::Exited {
                status,
                log_tail: self.log_tail(60),
            }),
            Ok(None) => Ok(()),
            Err(e) => Err(Mm2Error::Io {
                what: "checking the MirrorMaker 2 process".into(),
                source: e,
            }),
        }
    }

    /// Waits until a log line contains `needle`; returns the time since spawn.
    pub fn wait_for_log(&mut self, needle: &str, timeout: Duration) -> Result<Duration, Mm2Error> {
        self.wait_until(&format!("log line containing {needle:?}"), timeout, |p| {
            Ok::<_, std::convert::Infallible>(p.log_text().contains(needle).then_some(()))
        })
        .map(|((), at)| at)
    }

    /// Calls `probe` about once a second until it returns `Some`, MM2 exits, or
    /// `timeout` passes. Returns the value and the time since MM2 was spawned.
    /// An error from `probe` is retried until the timeout (its last message is
    /// reported then).
    pub fn wait_until<T, E: fmt::Display>(
        &mut self,
        what: &str,
        timeout: Duration,
        mut probe: impl FnMut(&Self) -> Result<Option<T>, E>,
    ) -> Result<(T, Duration), Mm2Error> {
        let deadline = Instant::now() + timeout;
        let mut last_error = String::new();
        loop {
            self.check_running()?;
            match probe(self) {
                Ok(Some(value)) => return Ok((value, self.started.elapsed())),
                Ok(None) => {}
                Err(e) => last_error = e.to_string(),
            }
            if Instant::now() >= deadline {
                let what = if last_error.is_empty() {
                    what.to_owned()
                } else {
                    format!("{what} (last probe error: {last_error})")
                };
                return Err(Mm2Error::Timeout {
                    what,
                    waited: timeout,
                    log_tail: self.log_tail(60),
                });
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// Waits until every partition `0..partitions` of the source topic `topic`
    /// has an offset sync for upstream offset `from` or later, and returns
    /// the topic's syncs in log order.
    ///
    /// With `from` the last record's offset this waits for "every record
    /// replicated and synced". After a restart, wait for the first new record
    /// instead: a task restarted by a connector reconfiguration drops the
    /// newest sync it was holding back, so the last record's may never come.
    pub fn wait_for_offset_syncs(
        &mut self,
        topic: &str,
        partitions: u32,
        from: i64,
        timeout: Duration,
    ) -> Result<Vec<OffsetSyncRecord>, Mm2Error> {
        let source = self.source.clone();
        self.wait_for_records(
            &format!("offset syncs of {topic} from upstream offset {from} on"),
            timeout,
            || helpers().offset_syncs(&source, OFFSET_SYNCS_TOPIC),
            |s| s.topic == topic,
            |syncs| {
                (0..partitions)
                    .filter_map(|p| i32::try_from(p).ok())
                    .all(|p| syncs.iter().any(|s| s.partition == p && s.upstream >= from))
            },
        )
    }

    /// Waits until the checkpoints of `group` on the target's checkpoints
    /// topic satisfy `done` (called with them in log order), and returns them.
    pub fn wait_for_checkpoints(
        &mut self,
        group: &str,
        timeout: Duration,
        done: impl Fn(&[CheckpointRecord]) -> bool,
    ) -> Result<Vec<CheckpointRecord>, Mm2Error> {
        let target = self.target.clone();
        self.wait_for_records(
            &format!("checkpoints of {group}"),
            timeout,
            || helpers().checkpoints(&target, CHECKPOINTS_TOPIC),
            |cp| cp.group == group,
            done,
        )
    }

    /// Polls `read` until the records it returns that `keep` selects satisfy
    /// `done`; returns those records.
    fn wait_for_records<R>(
        &mut self,
        what: &str,
        timeout: Duration,
        read: impl Fn() -> Result<Vec<R>, JavaError>,
        keep: impl Fn(&R) -> bool,
        done: impl Fn(&[R]) -> bool,
    ) -> Result<Vec<R>, Mm2Error> {
        self.wait_until(what, timeout, |_| {
            read().map(|all| {
                let kept: Vec<R> = all.into_iter().filter(|r| keep(r)).collect();
                done(&kept).then_some(kept)
            })
        })
        .map(|(records, _)| records)
    }

    /// After a restart from [`Checkpoints::Emit`] to [`Checkpoints::NoGroups`]
    /// in the same worker group: waits until no checkpoint task of MM2 can
    /// write any more.
    ///
    /// The restarted worker first starts the connector and task stored in its
    /// config topic, with the old groups, and only then replaces the
    /// connector ([`NO_GROUPS_LOG`]), writes its empty task list and stops
    /// the old task in the following rebalance. Until then the old task keeps
    /// checkpointing; on a loaded machine that lasts seconds. Done once the
    /// empty task list is logged and every checkpoint task created in this
    /// run has closed its producer.
    pub fn wait_for_checkpoint_tasks_gone(
        &mut self,
        timeout: Duration,
    ) -> Result<Duration, Mm2Error> {
        self.wait_until("MM2's checkpoint tasks stopped", timeout, |p| {
            let log = p.log_text();
            let created = log.matches(CHECKPOINT_TASK_CREATED_LOG).count();
            let closed = log.matches(CHECKPOINT_TASK_PRODUCER_CLOSED_LOG).count();
            let gone =
                log.contains(NO_GROUPS_LOG) && log.contains(NO_TASKS_LOG) && created == closed;
            Ok::<_, std::convert::Infallible>(gone.then_some(()))
        })
        .map(|((), at)| at)
    }

    /// How many checkpoint tasks MM2 has created in this run (Connect's
    /// `Worker` logs each creation): 0 means it cannot have written a
    /// checkpoint.
    pub fn checkpoint_tasks_created(&self) -> usize {
        self.log_text().matches(CHECKPOINT_TASK_CREATED_LOG).count()
    }

    /// The `mm2.properties` this process was started with.
    pub fn properties_file(&self) -> PathBuf {
        self.dir.join("mm2.properties")
    }

    /// The JVM's resident set size in KiB (`VmRSS` in `/proc/<pid>/status`).
    pub fn rss_kib(&self) -> Option<u64> {
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// Stops MM2 gracefully (SIGTERM, then SIGKILL after `grace`) and waits for it.
    pub fn stop(mut self, grace: Duration) -> Result<ExitStatus, Mm2Error> {
        let pid = self.pid().to_string();
        // `kill` the command: std offers only SIGKILL, and MM2 should shut down cleanly.
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                _ => {
                    let _ = self.child.kill();
                    return self
                        .child
                        .wait()
                        .map_err(io_err("waiting for MirrorMaker 2 to exit"));
                }
            }
        }
    }
}

impl Drop for Mm2Process {
    fn drop(&mut self) {
        // Only our own child; SIGKILL is immediate and tests need nothing graceful.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.trim_start().strip_prefix('='))
            .map(str::trim)
    }

    #[test]
    fn rendered_config_points_the_flow_at_both_clusters() {
        let text = Mm2Config::new("t1", "g1").render("s:1", "t:2");
        assert_eq!(value(&text, "source.bootstrap.servers"), Some("s:1"));
        assert_eq!(value(&text, "target.bootstrap.servers"), Some("t:2"));
        assert_eq!(value(&text, "source->target.enabled"), Some("true"));
        assert_eq!(value(&text, "target->source.enabled"), Some("false"));
        assert_eq!(value(&text, "source->target.topics"), Some("t1"));
        assert_eq!(value(&text, "source->target.groups"), Some("g1"));
    }

    #[test]
    fn without_checkpoints_sets_emit_checkpoints_false() {
        let on = Mm2Config::new("t", "g").render("s", "t");
        let off = Mm2Config::new("t", "g")
            .without_checkpoints()
            .render("s", "t");
        assert_eq!(
            value(&on, "source->target.emit.checkpoints.enabled"),
            Some("true")
        );
        assert_eq!(
            value(&off, "source->target.emit.checkpoints.enabled"),
            Some("false")
        );
    }

    #[test]
    fn no_groups_mode_excludes_every_group() {
        let text = Mm2Config::new("t", "g")
            .with_checkpoints(Checkpoints::NoGroups)
            .render("s", "t");
        assert_eq!(value(&text, "source->target.groups.exclude"), Some(".*"));
        assert_eq!(
            value(&text, "source->target.emit.checkpoints.enabled"),
            None
        );
    }

    #[test]
    fn every_internal_topic_gets_replication_factor_one() {
        let text = Mm2Config::new("t", "g").render("s", "t");
        for key in [
            "offset-syncs.topic.replication.factor",
            "checkpoints.topic.replication.factor",
            "heartbeats.topic.replication.factor",
            "offset.storage.replication.factor",
            "status.storage.replication.factor",
            "config.storage.replication.factor",
        ] {
            assert_eq!(value(&text, key), Some("1"), "{key}");
        }
    }

    #[test]
    fn instances_get_their_own_connect_group_and_topics() {
        let mut config = Mm2Config::new("t", "g");
        config.instance = Some("abc".into());
        let text = config.render("s", "t");
        assert_eq!(value(&text, "target.group.id"), Some("abc"));
        assert_eq!(
            value(&text, "offset.storage.topic"),
            Some("abc-offsets.internal")
        );
        config.instance = None;
        assert_eq!(value(&config.render("s", "t"), "target.group.id"), None);
    }

    #[test]
    fn extra_lines_come_last() {
        let mut config = Mm2Config::new("t", "g");
        config.extra.push(("offset.lag.max".into(), "7".into()));
        let text = config.render("s", "t");
        let last = text.lines().last().unwrap_or_default();
        assert_eq!(last, "offset.lag.max = 7");
    }
}
