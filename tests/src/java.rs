//! Small Java programs (in `tests/java/`) that let the tests ask Apache Kafka's
//! own Java code what it sees: MirrorMaker 2's record decoders,
//! `RemoteClusterUtils.translateOffsets`, and plain producer / consumer / admin
//! calls.
//!
//! The sources are compiled with `javac` against the cached Kafka jars the
//! first time a test needs them, into `target/java-helpers/<hash>/`, where the
//! hash covers the sources and the classpath: unchanged sources are never
//! recompiled, and concurrent test processes never see a half-written
//! directory (each compiles into a private directory and renames it into
//! place).
//!
//! Every helper prints plain `space separated` lines on stdout; the typed
//! wrappers below parse them and fail with a [`JavaError`] naming the program
//! and the offending line.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::Clusters;

/// JVM options for the short-lived helper programs: small heap, quick start.
const HELPER_JVM_OPTS: &[&str] = &["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"];

/// How long one helper run may take before it is killed. Kafka's own client
/// timeouts (30 to 60 s) end a stuck helper sooner in practice.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a Java helper could not be built or run, or printed something unexpected.
#[derive(Debug)]
pub enum JavaError {
    /// An I/O error around `what` (reading sources, creating directories, spawning).
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// `javac` rejected the sources.
    Compile {
        /// javac's diagnostics.
        stderr: String,
    },
    /// A helper exited unsuccessfully.
    Failed {
        /// The helper's class name.
        class: String,
        /// Its arguments.
        args: Vec<String>,
        /// Exit status as text.
        status: String,
        /// Its stderr (Kafka's warnings and the Java exception, if any).
        stderr: String,
    },
    /// A helper printed a line the wrapper could not parse.
    BadOutput {
        /// The helper's class name.
        class: String,
        /// The line.
        line: String,
    },
}

impl fmt::Display for JavaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { what, source } => write!(f, "{what}: {source}"),
            Self::Compile { stderr } => write!(f, "javac failed on tests/java:\n{stderr}"),
            Self::Failed {
                class,
                args,
                status,
                stderr,
            } => write!(
                f,
                "Java helper `{class} {}` failed ({status}):\n{stderr}",
                args.join(" ")
            ),
            Self::BadOutput { class, line } => {
                write!(
                    f,
                    "Java helper `{class}` printed an unexpected line: {line:?}"
                )
            }
        }
    }
}

impl std::error::Error for JavaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> JavaError {
    let what = what.into();
    move |source| JavaError::Io { what, source }
}

/// The compiled helpers, ready to run against the cached Kafka jars.
#[derive(Debug, Clone)]
pub struct JavaHelpers {
    classes: PathBuf,
    kafka_libs: String,
    log4j: PathBuf,
}

/// The helpers for this test run, compiled once per test binary.
///
/// # Panics
///
/// If there are no clusters (see [`crate::clusters`]) or `javac` fails: the
/// tests that need Java cannot run without it.
pub fn helpers() -> &'static JavaHelpers {
    static HELPERS: OnceLock<JavaHelpers> = OnceLock::new();
    HELPERS.get_or_init(|| match JavaHelpers::build(crate::clusters()) {
        Ok(helpers) => helpers,
        Err(e) => panic!("cannot build the Java test helpers: {e}"),
    })
}

/// Which group protocol [`JavaHelpers::commit_offsets`] commits with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitMode {
    /// Join as a member with the classic protocol (`group.protocol=classic`).
    Classic,
    /// Join as a member with the KIP-848 protocol (`group.protocol=consumer`).
    Consumer,
    /// No membership: `assign()` and commit (a "simple" classic group).
    Standalone,
}

impl CommitMode {
    fn as_arg(self) -> &'static str {
        match self {
            Self::Classic => "classic",
            Self::Consumer => "consumer",
            Self::Standalone => "standalone",
        }
    }
}

/// One offset to commit, or one committed offset read back.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GroupOffset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset (the next record to consume).
    pub offset: i64,
    /// Commit metadata (empty if none).
    pub metadata: String,
}

/// One transaction of [`JavaHelpers::txn_offsets`]: what happens to it after
/// its `sendOffsetsToTransaction`, and the offsets it sends (each `metadata`
/// must not contain a comma).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnStep {
    /// Commit the transaction.
    Commit(Vec<GroupOffset>),
    /// Abort the transaction.
    Abort(Vec<GroupOffset>),
    /// Leave the transaction open and halt the producer; the broker aborts it
    /// after the transaction timeout (60 s). Only as the last step.
    Open(Vec<GroupOffset>),
}

impl TxnStep {
    fn as_arg(&self) -> String {
        let (kind, offsets) = match self {
            Self::Commit(o) => ("commit", o),
            Self::Abort(o) => ("abort", o),
            Self::Open(o) => ("open", o),
        };
        let specs: Vec<String> = offsets
            .iter()
            .map(|o| format!("{}:{}={}:{}", o.topic, o.partition, o.offset, o.metadata))
            .collect();
        format!("{kind}:{}", specs.join(","))
    }
}

/// A transaction of [`JavaHelpers::hold_txn_offsets`] whose offsets are in
/// `__consumer_offsets` but which is neither committed nor aborted yet. Dropped
/// without [`commit`](Self::commit) or [`abort`](Self::abort), it is aborted
/// (the helper is killed if it does not end within 10 s; the broker then
/// aborts the transaction after its timeout, 60 s).
#[derive(Debug)]
pub struct HeldTxn {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    args: Vec<String>,
}

impl HeldTxn {
    /// Commits the transaction; returns once the broker acknowledged it.
    pub fn commit(mut self) -> Result<(), JavaError> {
        self.end("commit")
    }

    /// Aborts the transaction; returns once the broker acknowledged it.
    pub fn abort(mut self) -> Result<(), JavaError> {
        self.end("abort")
    }

    fn end(&mut self, word: &str) -> Result<(), JavaError> {
        use std::io::Write;
        if let Some(mut stdin) = self.stdin.take() {
            // A helper that already died shows up in its exit status below.
            let _ = writeln!(stdin, "{word}");
        }
        match self.wait(HELPER_TIMEOUT) {
            Some(status) if status.success() => Ok(()),
            status => Err(self.finish(status)),
        }
    }

    /// Closes stdin and waits up to `timeout` for the helper to exit; kills
    /// it after that (`None`).
    fn wait(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        self.stdin = None;
        let deadline = std::time::Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return None;
                }
            }
        }
    }

    /// The error for a helper that ended with `status` (or was killed).
    fn finish(&mut self, status: Option<std::process::ExitStatus>) -> JavaError {
        let status = status.or_else(|| self.wait(HELPER_TIMEOUT));
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        JavaError::Failed {
            class: "TxnOffsets".to_owned(),
            args: self.args.clone(),
            status: status.map_or_else(|| "killed".to_owned(), |s| s.to_string()),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

impl Drop for HeldTxn {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            self.wait(Duration::from_secs(10));
        }
    }
}

/// One offset-sync record, decoded by MM2's `OffsetSync.deserializeRecord`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetSyncRecord {
    /// Upstream (source) topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Upstream offset.
    pub upstream: i64,
    /// Downstream offset.
    pub downstream: i64,
}

/// One checkpoint record, decoded by MM2's `Checkpoint.deserializeRecord`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// Consumer group.
    pub group: String,
    /// Downstream (renamed) topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Upstream offset.
    pub upstream: i64,
    /// Downstream offset.
    pub downstream: i64,
    /// Commit metadata.
    pub metadata: String,
}

/// One record of a topic, as [`JavaHelpers::read_records`] prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRecord {
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Key as UTF-8 (`-` for null).
    pub key: String,
    /// Value as UTF-8 (`-` for null).
    pub value: String,
}

impl JavaHelpers {
    /// Compiles `tests/java/*.java` against the Kafka jars of `clusters` unless
    /// an up-to-date build exists.
    pub fn build(clusters: &Clusters) -> Result<Self, JavaError> {
        let sources_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("java");
        let classes = compile(&sources_dir, &clusters.kafka_libs)?;
        Ok(Self {
            classes,
            kafka_libs: clusters.kafka_libs.clone(),
            log4j: clusters
                .kafka_bin
                .join("..")
                .join("config")
                .join("tools-log4j2.properties"),
        })
    }

    /// A `java` command running `class` from the helpers with the Kafka jars
    /// on the classpath and Kafka's logging sent to stderr at WARN.
    pub fn command(&self, class: &str) -> Command {
        let mut cmd = Command::new("java");
        cmd.args(HELPER_JVM_OPTS)
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                self.log4j.display()
            ))
            .arg("-cp")
            .arg(format!("{}:{}", self.classes.display(), self.kafka_libs))
            .arg(class);
        cmd
    }

    /// Runs `class` with `args`; returns its stdout, or an error with its stderr.
    /// A helper still running after [`HELPER_TIMEOUT`] is killed and reported
    /// as failed.
    pub fn run(&self, class: &str, args: &[&str]) -> Result<String, JavaError> {
        let run = crate::process::output_within(self.command(class).args(args), HELPER_TIMEOUT)
            .map_err(io_err(format!("running java {class}")))?;
        let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        let status = run.status;
        match status {
            Some(status) if status.success() => Ok(stdout),
            other => Err(JavaError::Failed {
                class: class.to_owned(),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
                status: other.map_or_else(
                    || format!("killed after {}s", HELPER_TIMEOUT.as_secs()),
                    |s| s.to_string(),
                ),
                stderr,
            }),
        }
    }

    /// Creates `topic` with `partitions` partitions (if absent) and writes
    /// `per_partition` records to each partition (`key-<p>-<i>` / `value-<p>-<i>`).
    pub fn produce(
        &self,
        bootstrap: &str,
        topic: &str,
        partitions: u32,
        per_partition: u32,
    ) -> Result<(), JavaError> {
        self.run(
            "ProduceRecords",
            &[
                bootstrap,
                topic,
                &partitions.to_string(),
                &per_partition.to_string(),
            ],
        )
        .map(drop)
    }

    /// Commits `offsets` for `group`, joining the group as `mode` says.
    pub fn commit_offsets(
        &self,
        bootstrap: &str,
        group: &str,
        mode: CommitMode,
        offsets: &[GroupOffset],
    ) -> Result<(), JavaError> {
        let specs: Vec<String> = offsets
            .iter()
            .map(|o| format!("{}:{}={}:{}", o.topic, o.partition, o.offset, o.metadata))
            .collect();
        let mut args = vec![bootstrap, group, mode.as_arg()];
        args.extend(specs.iter().map(String::as_str));
        self.run("CommitOffsets", &args).map(drop)
    }

    /// Commits offsets for `group` in transactions of a transactional producer
    /// with id `transactional_id` (`tests/java/TxnOffsets.java`): per step,
    /// `beginTransaction`, one record to partition 0 of `output_topic` if
    /// given, `sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group))`,
    /// then commit, abort or (for [`TxnStep::Open`], last) halt with the
    /// transaction open. `group` must have no active members.
    pub fn txn_offsets(
        &self,
        bootstrap: &str,
        group: &str,
        transactional_id: &str,
        output_topic: Option<&str>,
        steps: &[TxnStep],
    ) -> Result<(), JavaError> {
        let steps: Vec<String> = steps.iter().map(TxnStep::as_arg).collect();
        let mut args = vec![
            bootstrap,
            group,
            transactional_id,
            output_topic.unwrap_or("-"),
        ];
        args.extend(steps.iter().map(String::as_str));
        self.run("TxnOffsets", &args).map(drop)
    }

    /// Starts one transaction of a transactional producer with id
    /// `transactional_id` (`tests/java/TxnOffsets.java`, step `hold`):
    /// `beginTransaction`, one record to partition 0 of `output_topic` if
    /// given, `sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group))`
    /// (which returns once the broker has written the offsets to
    /// `__consumer_offsets`), and returns with the transaction still open.
    /// [`HeldTxn::commit`] or [`HeldTxn::abort`] ends it; dropping the
    /// [`HeldTxn`] aborts it. `group` must have no active members.
    pub fn hold_txn_offsets(
        &self,
        bootstrap: &str,
        group: &str,
        transactional_id: &str,
        output_topic: Option<&str>,
        offsets: Vec<GroupOffset>,
    ) -> Result<HeldTxn, JavaError> {
        use std::io::BufRead;
        let class = "TxnOffsets";
        let step = TxnStep::Commit(offsets)
            .as_arg()
            .replacen("commit:", "hold:", 1);
        let args: Vec<String> = [
            bootstrap,
            group,
            transactional_id,
            output_topic.unwrap_or("-"),
            &step,
        ]
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
        let mut child = self
            .command(class)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io_err(format!("running java {class}")))?;
        let stderr = crate::process::drain(child.stderr.take());
        let stdout = child.stdout.take();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let Some(stdout) = stdout else { return };
            let mut lines = std::io::BufReader::new(stdout).lines();
            let _ = tx.send(lines.next().and_then(Result::ok));
            // Keep draining, so the helper never blocks on a full pipe.
            lines.for_each(drop);
        });
        let mut held = HeldTxn {
            stdin: child.stdin.take(),
            child,
            stderr: Some(stderr),
            args,
        };
        match rx.recv_timeout(HELPER_TIMEOUT) {
            Ok(Some(line)) if line == "held" => Ok(held),
            Ok(Some(line)) => Err(JavaError::BadOutput {
                class: class.to_owned(),
                line,
            }),
            // No line: the helper failed before the transaction was open.
            _ => Err(held.finish(None)),
        }
    }

    /// Admin `alterConsumerGroupOffsets`: commits `offsets` for `group`
    /// without membership (the group must have no active members).
    pub fn alter_group_offsets(
        &self,
        bootstrap: &str,
        group: &str,
        offsets: &[GroupOffset],
    ) -> Result<(), JavaError> {
        let specs: Vec<String> = offsets
            .iter()
            .map(|o| format!("{}:{}={}:{}", o.topic, o.partition, o.offset, o.metadata))
            .collect();
        let mut args = vec![bootstrap, "alter", group];
        args.extend(specs.iter().map(String::as_str));
        self.run("GroupAdmin", &args).map(drop)
    }

    /// Admin `deleteConsumerGroupOffsets`: removes `group`'s commits of
    /// `partitions` (topic, partition).
    pub fn delete_group_offsets(
        &self,
        bootstrap: &str,
        group: &str,
        partitions: &[(&str, i32)],
    ) -> Result<(), JavaError> {
        let specs: Vec<String> = partitions
            .iter()
            .map(|(topic, partition)| format!("{topic}:{partition}"))
            .collect();
        let mut args = vec![bootstrap, "delete-offsets", group];
        args.extend(specs.iter().map(String::as_str));
        self.run("GroupAdmin", &args).map(drop)
    }

    /// Admin `deleteConsumerGroups`: deletes `group` and its commits, retrying
    /// for up to 30 s while the broker reports it non-empty (as right after
    /// its last member left).
    pub fn delete_group(&self, bootstrap: &str, group: &str) -> Result<(), JavaError> {
        self.run("GroupAdmin", &[bootstrap, "delete-group", group])
            .map(drop)
    }

    /// The committed offsets of `group`, sorted (Admin `listConsumerGroupOffsets`).
    pub fn group_offsets(
        &self,
        bootstrap: &str,
        group: &str,
    ) -> Result<Vec<GroupOffset>, JavaError> {
        let class = "GroupOffsets";
        let out = self.run(class, &[bootstrap, group])?;
        parse_lines(class, &out, |f| {
            let [topic, partition, offset, metadata @ ..] = f else {
                return None;
            };
            Some(GroupOffset {
                topic: (*topic).to_owned(),
                partition: partition.parse().ok()?,
                offset: offset.parse().ok()?,
                metadata: metadata.join(" "),
            })
        })
    }

    /// Every record of the offset-syncs topic `topic` (partition 0), in log order.
    pub fn offset_syncs(
        &self,
        bootstrap: &str,
        topic: &str,
    ) -> Result<Vec<OffsetSyncRecord>, JavaError> {
        let class = "DumpOffsetSyncs";
        let out = self.run(class, &[bootstrap, topic])?;
        parse_lines(class, &out, |f| {
            let [topic, partition, upstream, downstream] = f else {
                return None;
            };
            Some(OffsetSyncRecord {
                topic: (*topic).to_owned(),
                partition: partition.parse().ok()?,
                upstream: upstream.parse().ok()?,
                downstream: downstream.parse().ok()?,
            })
        })
    }

    /// Every record of the checkpoints topic `topic` (partition 0), in log
    /// order, as Java's default consumer (`read_uncommitted`) reads it.
    pub fn checkpoints(
        &self,
        bootstrap: &str,
        topic: &str,
    ) -> Result<Vec<CheckpointRecord>, JavaError> {
        self.checkpoints_as(bootstrap, topic, "read_uncommitted")
    }

    /// [`checkpoints`](Self::checkpoints) read with `isolation`
    /// (`read_committed` or `read_uncommitted`).
    pub fn checkpoints_as(
        &self,
        bootstrap: &str,
        topic: &str,
        isolation: &str,
    ) -> Result<Vec<CheckpointRecord>, JavaError> {
        let class = "DumpCheckpoints";
        let out = self.run(class, &[bootstrap, topic, isolation])?;
        parse_lines(class, &out, |f| {
            let [group, topic, partition, upstream, downstream, metadata @ ..] = f else {
                return None;
            };
            Some(CheckpointRecord {
                group: (*group).to_owned(),
                topic: (*topic).to_owned(),
                partition: partition.parse().ok()?,
                upstream: upstream.parse().ok()?,
                downstream: downstream.parse().ok()?,
                metadata: metadata.join(" "),
            })
        })
    }

    /// Every record of every partition of `topic`, by partition then offset.
    pub fn read_records(
        &self,
        bootstrap: &str,
        topic: &str,
    ) -> Result<Vec<TopicRecord>, JavaError> {
        let class = "ReadRecords";
        let out = self.run(class, &[bootstrap, topic])?;
        parse_lines(class, &out, |f| {
            let [partition, offset, key, value] = f else {
                return None;
            };
            Some(TopicRecord {
                partition: partition.parse().ok()?,
                offset: offset.parse().ok()?,
                key: (*key).to_owned(),
                value: (*value).to_owned(),
            })
        })
    }

    /// `RemoteClusterUtils.translateOffsets(target, source_alias, group)`: the
    /// offsets `group` should use on the target cluster, keyed by
    /// (downstream topic, partition).
    pub fn translate_offsets(
        &self,
        target_bootstrap: &str,
        source_alias: &str,
        group: &str,
        timeout: Duration,
    ) -> Result<BTreeMap<(String, i32), i64>, JavaError> {
        let class = "TranslateOffsets";
        let out = self.run(
            class,
            &[
                target_bootstrap,
                source_alias,
                group,
                &timeout.as_millis().to_string(),
            ],
        )?;
        let rows = parse_lines(class, &out, |f| {
            let [topic, partition, offset] = f else {
                return None;
            };
            Some((
                ((*topic).to_owned(), partition.parse().ok()?),
                offset.parse().ok()?,
            ))
        })?;
        Ok(rows.into_iter().collect())
    }
}

/// Compiles the `.java` files of `sources_dir` against `classpath` into
/// `target/java-helpers/<hash>/` unless an up-to-date build is there; the
/// hash covers the sources and the classpath.
fn compile(sources_dir: &Path, classpath: &str) -> Result<PathBuf, JavaError> {
    let mut sources: Vec<PathBuf> = std::fs::read_dir(sources_dir)
        .map_err(io_err(format!("listing {}", sources_dir.display())))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "java"))
        .collect();
    sources.sort();

    let mut hasher = DefaultHasher::new();
    classpath.hash(&mut hasher);
    for source in &sources {
        source.file_name().hash(&mut hasher);
        std::fs::read(source)
            .map_err(io_err(format!("reading {}", source.display())))?
            .hash(&mut hasher);
    }
    let root = crate::target_dir().join("java-helpers");
    let classes = root.join(format!("{:016x}", hasher.finish()));
    if classes.join(".complete").is_file() {
        return Ok(classes);
    }

    let scratch = root.join(format!(
        "tmp-{}-{}",
        std::process::id(),
        crate::unique_name("javac")
    ));
    std::fs::create_dir_all(&scratch).map_err(io_err(format!("creating {}", scratch.display())))?;
    let output = Command::new("javac")
        .arg("-Xlint:all")
        .arg("-d")
        .arg(&scratch)
        .arg("-cp")
        .arg(classpath)
        .args(&sources)
        .output()
        .map_err(io_err("running `javac` (is a JDK installed?)"))?;
    if !output.status.success() {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(JavaError::Compile {
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    std::fs::write(scratch.join(".complete"), "").map_err(io_err(format!(
        "writing the stamp in {}",
        scratch.display()
    )))?;
    // Another process may have won the race; its build is as good as ours.
    if std::fs::rename(&scratch, &classes).is_err() {
        let _ = std::fs::remove_dir_all(&scratch);
        if !classes.join(".complete").is_file() {
            return Err(JavaError::Io {
                what: format!("moving {} to {}", scratch.display(), classes.display()),
                source: std::io::Error::other("rename failed and no finished build is there"),
            });
        }
    }
    Ok(classes)
}

/// A `java` command running `class` of `tests/java-msk-iam/`, compiled
/// against the MSK IAM library's jars and Kafka's (its OAUTHBEARER handler
/// implements Kafka's callback interfaces); the MSK jars come first.
fn msk_iam_command(clusters: &Clusters, class: &str) -> Result<Command, JavaError> {
    let libs = clusters
        .msk_iam_libs
        .as_deref()
        .ok_or_else(|| JavaError::Io {
            what: "locating the aws-msk-iam-auth jars".into(),
            source: std::io::Error::other(
                "clusters.json has no msk_iam_libs: restart the clusters with this xtask \
             (`cargo xtask kafka down && cargo xtask kafka up`)",
            ),
        })?;
    let classpath = format!("{libs}:{}", clusters.kafka_libs);
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("java-msk-iam");
    let classes = compile(&sources, &classpath)?;
    let mut cmd = Command::new("java");
    cmd.args(HELPER_JVM_OPTS)
        .arg("-cp")
        .arg(format!("{}:{classpath}", classes.display()))
        .arg(class);
    Ok(cmd)
}

/// The OAUTHBEARER token (and its lifetime, ms since the epoch) that the MSK
/// IAM library's `IAMOAuthBearerLoginCallbackHandler` makes for these
/// credentials and region, given to it the way its default chains read
/// them: environment variables only (no profile files, no instance
/// metadata).
pub fn msk_iam_oauth_token(
    clusters: &Clusters,
    region: &str,
    access_key_id: &str,
    secret_access_key: &str,
    session_token: Option<&str>,
) -> Result<(String, i64), JavaError> {
    let mut cmd = msk_iam_command(clusters, "MskIamOAuthToken")?;
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", region)
        .env("AWS_ACCESS_KEY_ID", access_key_id)
        .env("AWS_SECRET_ACCESS_KEY", secret_access_key);
    if let Some(token) = session_token {
        cmd.env("AWS_SESSION_TOKEN", token);
    }
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        cmd.env("JAVA_HOME", home);
    }
    let run = crate::process::output_within(&mut cmd, HELPER_TIMEOUT)
        .map_err(io_err("running java MskIamOAuthToken"))?;
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let failed = |status: String| JavaError::Failed {
        class: "MskIamOAuthToken".into(),
        args: vec![region.into()],
        status,
        stderr: String::from_utf8_lossy(&run.stderr).into_owned(),
    };
    match run.status {
        Some(status) if status.success() => {
            let mut lines = stdout.lines();
            match (
                lines.next(),
                lines.next().and_then(|l| l.trim().parse().ok()),
            ) {
                (Some(token), Some(lifetime)) => Ok((token.trim().to_string(), lifetime)),
                _ => Err(failed("printed no token and lifetime".into())),
            }
        }
        other => Err(failed(
            other.map_or_else(|| "killed".to_string(), |s| s.to_string()),
        )),
    }
}

/// The AWS_MSK_IAM authentication payload that Amazon MSK's own Java
/// library (`aws-msk-iam-auth`, cached by `cargo xtask kafka up`) makes for
/// broker `host` with these credentials (`session_token` `-` for none), at
/// the current time: one JSON document.
pub fn msk_iam_payload(
    clusters: &Clusters,
    host: &str,
    access_key_id: &str,
    secret_access_key: &str,
    session_token: &str,
    user_agent: &str,
) -> Result<String, JavaError> {
    let mut cmd = msk_iam_command(clusters, "MskIamPayload")?;
    cmd.args([
        host,
        access_key_id,
        secret_access_key,
        session_token,
        user_agent,
    ]);
    let run = crate::process::output_within(&mut cmd, HELPER_TIMEOUT)
        .map_err(io_err("running java MskIamPayload"))?;
    match run.status {
        Some(status) if status.success() => Ok(String::from_utf8_lossy(&run.stdout).into_owned()),
        other => Err(JavaError::Failed {
            class: "MskIamPayload".into(),
            args: vec![host.into(), access_key_id.into(), "<secret>".into()],
            status: other.map_or_else(|| "killed".to_string(), |s| s.to_string()),
            stderr: String::from_utf8_lossy(&run.stderr).into_owned(),
        }),
    }
}

/// Splits `out` into lines of space-separated fields and parses each with `parse`.
fn parse_lines<T>(
    class: &str,
    out: &str,
    parse: impl Fn(&[&str]) -> Option<T>,
) -> Result<Vec<T>, JavaError> {
    out.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            parse(&fields).ok_or_else(|| JavaError::BadOutput {
                class: class.to_owned(),
                line: line.to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_helper_line_is_an_error_naming_the_line() {
        let err = parse_lines("DumpOffsetSyncs", "t 0 1 2\nt zero 1 2\n", |f| {
            let [_, p, ..] = f else { return None };
            p.parse::<i32>().ok()
        })
        .expect_err("second line is malformed");
        assert!(err.to_string().contains("t zero 1 2"), "{err}");
    }

    #[test]
    fn a_txn_step_is_one_comma_separated_argument() {
        let offset = |partition, offset, metadata: &str| GroupOffset {
            topic: "t".into(),
            partition,
            offset,
            metadata: metadata.into(),
        };
        let step = TxnStep::Abort(vec![offset(0, 5, ""), offset(1, 7, "m:x")]);
        assert_eq!(step.as_arg(), "abort:t:0=5:,t:1=7:m:x");
    }

    #[test]
    fn metadata_with_spaces_survives_parsing() {
        let rows = parse_lines("GroupOffsets", "t 0 5 a b\n", |f| {
            let [_, _, _, metadata @ ..] = f else {
                return None;
            };
            Some(metadata.join(" "))
        })
        .expect("well-formed");
        assert_eq!(rows, vec!["a b".to_owned()]);
    }
}
