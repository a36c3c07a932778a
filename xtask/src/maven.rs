//! The pinned Apache Kafka runtime, fetched once from Maven Central.
//!
//! The test clusters run the real broker jars. Rather than downloading a
//! release tarball (an extra mirror and an extra format), we ask Maven for the
//! `kafka_2.13` broker and the `kafka-tools` CLI artifacts with their runtime
//! dependencies and copy the jars into a cache outside the repository. Once the
//! cache is complete (marked by a stamp file) no later run touches the network.
//!
//! The cache also holds small launcher scripts (`bin/kafka-run-class`,
//! `bin/kafka-topics`, ...) so tests and humans can run Kafka's own CLI tools
//! against the clusters without a Kafka installation.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The Apache Kafka version every test cluster runs.
pub const KAFKA_VERSION: &str = "4.1.1";

/// The older Apache Kafka version of the `legacy` cluster, which proves the
/// client negotiates versions down to a 3.x broker.
pub const LEGACY_KAFKA_VERSION: &str = "3.9.1";

/// Artifacts fetched from Maven Central, with their runtime dependencies.
///
/// `kafka_2.13` is the broker (`kafka.Kafka`, `kafka.tools.StorageTool`);
/// `kafka-tools` holds the console consumer/producer, `kafka-topics` and
/// `kafka-consumer-groups`. `connect-mirror` is MirrorMaker 2 itself (the
/// reference the interop tests run next to ours, with the Connect runtime as a
/// dependency) and `connect-mirror-client` holds `RemoteClusterUtils`. The
/// SLF4J 2 API plus the Log4j 2 binding make the broker actually write its log
/// (the broker pom leaves logging to the distribution).
const ARTIFACTS: &[(&str, &str, &str)] = &[
    ("org.apache.kafka", "kafka_2.13", KAFKA_VERSION),
    ("org.apache.kafka", "kafka-tools", KAFKA_VERSION),
    ("org.apache.kafka", "connect-mirror", KAFKA_VERSION),
    ("org.apache.kafka", "connect-mirror-client", KAFKA_VERSION),
    ("org.slf4j", "slf4j-api", "2.0.17"),
    ("org.apache.logging.log4j", "log4j-slf4j2-impl", "2.24.3"),
];

/// The `legacy` cluster needs only the broker (its `kafka.tools.StorageTool`
/// formats the storage), with the same logging setup as [`ARTIFACTS`].
const LEGACY_ARTIFACTS: &[(&str, &str, &str)] = &[
    ("org.apache.kafka", "kafka_2.13", LEGACY_KAFKA_VERSION),
    ("org.slf4j", "slf4j-api", "2.0.17"),
    ("org.apache.logging.log4j", "log4j-slf4j2-impl", "2.24.3"),
];

/// The version of Amazon MSK's IAM library (`software.amazon.msk:aws-msk-iam-auth`)
/// whose authentication payload the AWS_MSK_IAM differential test compares
/// with kafka-lite's.
pub const MSK_IAM_VERSION: &str = "2.4.0";

/// The MSK IAM library with its runtime dependencies (the AWS SDK v2 signer,
/// STS, regions); a cache of its own, so the Kafka runtime's classpath is not
/// changed by it.
const MSK_IAM_ARTIFACTS: &[(&str, &str, &str)] =
    &[("software.amazon.msk", "aws-msk-iam-auth", MSK_IAM_VERSION)];

/// The stamp of the MSK IAM cache; change it whenever [`MSK_IAM_ARTIFACTS`] changes.
const MSK_IAM_STAMP_CONTENTS: &str = "aws-msk-iam-auth 2.4.0";

/// Command-line tools that get a launcher script in `bin/`: name and main class.
pub const TOOLS: &[(&str, &str)] = &[
    ("kafka-storage", "kafka.tools.StorageTool"),
    ("kafka-topics", "org.apache.kafka.tools.TopicCommand"),
    (
        "kafka-console-consumer",
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
    ),
    (
        "kafka-console-producer",
        "org.apache.kafka.tools.ConsoleProducer",
    ),
    (
        "kafka-consumer-groups",
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    ),
];

/// Written last, after every jar and script is in place.
const STAMP: &str = ".complete";

/// What the stamp holds. Change it whenever [`ARTIFACTS`] changes, so caches
/// filled by an older xtask are fetched again (a stamp with other contents
/// counts as incomplete).
const STAMP_CONTENTS: &str = "4.1.1 +connect-mirror";

/// The stamp of the legacy cache; change it whenever [`LEGACY_ARTIFACTS`] changes.
const LEGACY_STAMP_CONTENTS: &str = "3.9.1 broker";

/// Locations inside a jar cache: the Kafka runtime (and its legacy version),
/// or the MSK IAM library of the AWS_MSK_IAM differential test.
#[derive(Debug, Clone)]
pub struct KafkaRuntime {
    /// `<cache>/kafka-<version>`.
    pub home: PathBuf,
    /// What the cache holds, for messages: `Apache Kafka`, `aws-msk-iam-auth`.
    name: &'static str,
    /// The version cached here.
    version: &'static str,
    /// What to fetch.
    artifacts: &'static [(&'static str, &'static str, &'static str)],
    /// Contents of a complete cache's stamp.
    stamp: &'static str,
    /// Whether to write the CLI launchers of [`TOOLS`].
    tools: bool,
}

impl KafkaRuntime {
    /// The cache for the pinned version: `$MM2_KAFKA_CACHE` if set, else
    /// `$XDG_CACHE_HOME/mm2-checkpoint/kafka-<v>`, else `~/.cache/mm2-checkpoint/kafka-<v>`.
    pub fn locate() -> Result<Self> {
        let home = match std::env::var_os("MM2_KAFKA_CACHE").filter(|d| !d.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => cache_base()?.join(format!("kafka-{KAFKA_VERSION}")),
        };
        Ok(Self {
            home,
            name: "Apache Kafka",
            version: KAFKA_VERSION,
            artifacts: ARTIFACTS,
            stamp: STAMP_CONTENTS,
            tools: true,
        })
    }

    /// The broker-only cache of [`LEGACY_KAFKA_VERSION`] for the `legacy`
    /// cluster: `$MM2_LEGACY_KAFKA_CACHE` if set, else `kafka-<v>` next to
    /// the default cache of [`KafkaRuntime::locate`].
    pub fn locate_legacy() -> Result<Self> {
        let home = match std::env::var_os("MM2_LEGACY_KAFKA_CACHE").filter(|d| !d.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => cache_base()?.join(format!("kafka-{LEGACY_KAFKA_VERSION}")),
        };
        Ok(Self {
            home,
            name: "Apache Kafka",
            version: LEGACY_KAFKA_VERSION,
            artifacts: LEGACY_ARTIFACTS,
            stamp: LEGACY_STAMP_CONTENTS,
            tools: false,
        })
    }

    /// The Kafka version of this cache.
    /// The cache of Amazon MSK's IAM library and the AWS SDK jars it needs
    /// (`$MM2_MSK_IAM_CACHE`, else next to the Kafka cache): no broker, no
    /// tools, only `libs/`.
    pub fn locate_msk_iam() -> Result<Self> {
        let home = match std::env::var_os("MM2_MSK_IAM_CACHE").filter(|d| !d.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => cache_base()?.join(format!("aws-msk-iam-auth-{MSK_IAM_VERSION}")),
        };
        Ok(Self {
            home,
            name: "aws-msk-iam-auth",
            version: MSK_IAM_VERSION,
            artifacts: MSK_IAM_ARTIFACTS,
            stamp: MSK_IAM_STAMP_CONTENTS,
            tools: false,
        })
    }

    pub fn version(&self) -> &'static str {
        self.version
    }

    /// Directory holding every jar.
    pub fn libs(&self) -> PathBuf {
        self.home.join("libs")
    }

    /// The Java classpath: a wildcard over `libs/`.
    pub fn classpath(&self) -> String {
        format!("{}/*", self.libs().display())
    }

    /// `bin/kafka-run-class`: `kafka-run-class <main class> [args...]`.
    pub fn run_class(&self) -> PathBuf {
        self.home.join("bin").join("kafka-run-class")
    }

    /// Directory of the launcher scripts.
    pub fn bin(&self) -> PathBuf {
        self.home.join("bin")
    }

    /// Log4j 2 configuration for command-line tools (warnings to stderr).
    pub fn tools_log4j(&self) -> PathBuf {
        self.home.join("config").join("tools-log4j2.properties")
    }

    /// True once a previous fetch finished.
    pub fn is_complete(&self) -> bool {
        fs::read_to_string(self.home.join(STAMP)).is_ok_and(|s| s == self.stamp)
    }

    /// Fetches the jars unless the cache is already complete.
    pub fn ensure(&self) -> Result<()> {
        if self.is_complete() {
            return Ok(());
        }
        let version = self.version;
        eprintln!(
            "xtask: fetching {} {version} jars from Maven Central into {}",
            self.name,
            self.home.display()
        );
        let work = self.home.join("maven");
        fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
        let pom = work.join("pom.xml");
        fs::write(&pom, pom_xml(version, self.artifacts))
            .with_context(|| format!("writing {}", pom.display()))?;

        // Fetch into a fresh side directory, so a half-finished earlier attempt
        // leaves no stray jars, and an older complete `libs/` (which brokers of
        // other worktrees may be running from) stays whole until the swap below.
        let libs = self.libs();
        let fresh = self.home.join("libs.new");
        if fresh.exists() {
            fs::remove_dir_all(&fresh).with_context(|| format!("removing {}", fresh.display()))?;
        }
        let status = Command::new("mvn")
            .arg("-q")
            .arg("-B")
            .arg("-Dstyle.color=never")
            .arg("-f")
            .arg(&pom)
            .arg(format!(
                "-Dmaven.repo.local={}",
                self.home.join("m2").display()
            ))
            .arg("dependency:copy-dependencies")
            .arg(format!("-DoutputDirectory={}", fresh.display()))
            .arg("-DincludeScope=runtime")
            .status()
            .context("running `mvn` (is Maven installed? `apt-get install maven`)")?;
        if !status.success() {
            bail!(
                "`mvn dependency:copy-dependencies` failed ({status}) fetching {} {version}; see the Maven output above",
                self.name
            );
        }
        for (_, artifact, artifact_version) in self.artifacts {
            let jar = fresh.join(format!("{artifact}-{artifact_version}.jar"));
            if !jar.is_file() {
                bail!("Maven finished but {} is missing", jar.display());
            }
        }
        if libs.exists() {
            fs::remove_dir_all(&libs).with_context(|| format!("removing {}", libs.display()))?;
        }
        fs::rename(&fresh, &libs)
            .with_context(|| format!("moving {} to {}", fresh.display(), libs.display()))?;
        self.write_scripts()?;
        fs::write(self.home.join(STAMP), self.stamp)
            .with_context(|| format!("writing the stamp in {}", self.home.display()))?;
        Ok(())
    }

    fn write_scripts(&self) -> Result<()> {
        let config = self.home.join("config");
        fs::create_dir_all(&config).with_context(|| format!("creating {}", config.display()))?;
        fs::write(self.tools_log4j(), TOOLS_LOG4J)
            .with_context(|| format!("writing {}", self.tools_log4j().display()))?;

        let bin = self.bin();
        fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
        write_executable(&self.run_class(), RUN_CLASS)?;
        if !self.tools {
            return Ok(());
        }
        let version = self.version;
        for (tool, class) in TOOLS {
            let script = format!(
                "#!/bin/sh\n# Apache Kafka {version} `{tool}`, from the jars cached by `cargo xtask kafka up`.\nexec \"$(dirname \"$0\")/kafka-run-class\" {class} \"$@\"\n"
            );
            write_executable(&bin.join(tool), &script)?;
        }
        Ok(())
    }
}

/// `$XDG_CACHE_HOME/mm2-checkpoint`, else `~/.cache/mm2-checkpoint`.
fn cache_base() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = std::env::var_os("HOME")
                .filter(|d| !d.is_empty())
                .context("neither MM2_KAFKA_CACHE, XDG_CACHE_HOME nor HOME is set: cannot place the Kafka jar cache")?;
            PathBuf::from(home).join(".cache")
        }
    };
    Ok(base.join("mm2-checkpoint"))
}

fn write_executable(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", path.display()))
}

fn pom_xml(version: &str, artifacts: &[(&str, &str, &str)]) -> String {
    let deps: String = artifacts
        .iter()
        .map(|(group, artifact, artifact_version)| {
            format!(
                "    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{artifact_version}</version></dependency>\n"
            )
        })
        .collect();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by `cargo xtask kafka up`: the Apache Kafka runtime for mm2-checkpoint's tests. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.mm2-checkpoint</groupId>
  <artifactId>kafka-test-runtime</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}  </dependencies>
</project>
"#
    )
}

/// `kafka-run-class <main class> [args...]`: runs a class from the cached jars.
/// `KAFKA_HEAP_OPTS` and `KAFKA_OPTS` work as in Kafka's own script.
const RUN_CLASS: &str = r#"#!/bin/sh
# Runs a main class from the Apache Kafka jars cached by `cargo xtask kafka up`.
# Usage: kafka-run-class <main class> [args...]
home=$(cd "$(dirname "$0")/.." && pwd)
exec java ${KAFKA_HEAP_OPTS:--Xmx256m} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Dlog4j2.configurationFile="$home/config/tools-log4j2.properties" \
  ${KAFKA_OPTS:-} -cp "$home/libs/*" "$@"
"#;

const TOOLS_LOG4J: &str = "\
# Kafka command-line tools: warnings and errors to stderr, so stdout stays data.
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
";
