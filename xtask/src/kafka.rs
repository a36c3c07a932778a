//! `cargo xtask kafka up | down | status`: two real single-node KRaft clusters,
//! plus two more: one on an older Kafka and one that enforces ACLs.
//!
//! The end-to-end tests need a *source* and a *target* cluster, like MM2
//! itself. Each is one JVM running Apache Kafka in combined mode (broker and
//! controller in one process) on free loopback ports, with one listener per
//! way our client must be able to connect: PLAINTEXT, SASL_PLAINTEXT (PLAIN and
//! SCRAM-SHA-256/512), SSL, and SSL with a required client certificate (mTLS).
//!
//! The third cluster, `legacy`, runs Apache Kafka 3.9 with a PLAINTEXT
//! listener only: it exists to prove the client negotiates API versions down
//! to a 3.x broker. It is recorded under its own `legacy` key of
//! `clusters.json`, so readers that only know `source` and `target` are
//! unaffected. `cargo xtask soak` (which uses [`Layout::at`]) does not start it.
//!
//! A fourth cluster, `secure`, has the same listeners but enforces ACLs
//! (`StandardAuthorizer`, nothing allowed without an ACL). Its super user
//! `admin` is also the controller and inter-broker principal (SASL/PLAIN);
//! `mm2-source` and `mm2-target` are SCRAM-SHA-512 users with no grants, for
//! least-privilege tests.
//!
//! Everything lives under `<workspace>/target/kafka/`:
//!
//! ```text
//! clusters.json            what the tests read (schema: docs/testing.md)
//! tls/                     the throwaway CA, server and client certificates
//! <name>/server.properties broker configuration
//! <name>/pid               the broker JVM we started
//! <name>/data/             KRaft metadata and topic data (removed by `down`)
//! <name>/logs/broker.log   broker stdout/stderr (kept by `down`)
//! <name>/client-*.properties  ready-made configs for Kafka's Java CLI tools
//! ```
//!
//! Only processes recorded in our own pid files, whose command line names our
//! own `server.properties`, are ever signalled: other worktrees may run their
//! own clusters on the same machine.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::certs::{self, TestPki};
use crate::maven::{KAFKA_VERSION, KafkaRuntime};

/// Name (and directory) of the older-Kafka cluster.
const LEGACY_NAME: &str = "legacy";
use crate::probe;
use crate::procfs::{self, is_running};

/// The clusters we run, in start order.
const CLUSTER_NAMES: [&str; 3] = ["source", "target", SECURE_CLUSTER];
/// The cluster that enforces ACLs.
const SECURE_CLUSTER: &str = "secure";
/// How long a broker may take from launch to answering ApiVersions.
const START_TIMEOUT: Duration = Duration::from_secs(180);
/// How long a broker may take to stop after SIGTERM before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// Broker JVM options: small heap, serial GC; the machine has two cores.
const BROKER_JVM_OPTS: &[&str] = &[
    "-Xmx512m",
    "-Xms256m",
    "-XX:+UseSerialGC",
    "-Djava.awt.headless=true",
];
/// JVM options for the one-shot storage format tool.
const TOOL_JVM_OPTS: &[&str] = &["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"];

// The clusters.json model is the `e2e` crate's: the tests read what this
// writes. The xtask names stay as aliases.
pub use e2e::{
    AclUsers, Cluster as ClusterInfo, Clusters as ClustersFile, Credentials,
    LegacyCluster as LegacyClusterInfo, Listeners, Password, PlaintextListener, SaslUsers,
    TlsFiles,
};

fn acl_users() -> AclUsers {
    let user = |name: &str| Credentials {
        user: name.to_owned(),
        password: Password::new(format!("secure-{name}-secret")),
    };
    AclUsers {
        admin: user("admin"),
        mm2_source: user("mm2-source"),
        mm2_target: user("mm2-target"),
    }
}

fn users(cluster: &str) -> SaslUsers {
    let user = |kind: &str| Credentials {
        user: format!("{kind}-user"),
        password: Password::new(format!("{cluster}-{kind}-secret")),
    };
    SaslUsers {
        plain: user("plain"),
        scram_sha_256: user("scram256"),
        scram_sha_512: user("scram512"),
    }
}

/// Paths under `<workspace>/target/kafka`.
#[derive(Debug, Clone)]
pub struct Layout {
    /// `<workspace>/target/kafka`.
    pub root: PathBuf,
    /// Whether `up` also starts the `legacy` cluster.
    pub legacy: bool,
}

impl Layout {
    /// The layout for this workspace.
    pub fn new(workspace: &Path) -> Self {
        Self {
            root: workspace.join("target").join("kafka"),
            legacy: true,
        }
    }

    /// A layout rooted at `root` instead (`cargo xtask soak` uses
    /// `target/kafka-soak`, so it never touches the shared test clusters).
    /// Such a layout runs no `legacy` cluster.
    pub fn at(root: PathBuf) -> Self {
        Self {
            root,
            legacy: false,
        }
    }

    /// `clusters.json`.
    pub fn clusters_file(&self) -> PathBuf {
        self.root.join("clusters.json")
    }

    fn cluster_dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn pid_file(&self, name: &str) -> PathBuf {
        self.cluster_dir(name).join("pid")
    }

    fn config_file(&self, name: &str) -> PathBuf {
        self.cluster_dir(name).join("server.properties")
    }
}

/// `kafka up`. Returns true if this call started the clusters, false if they
/// were already up and healthy.
pub fn up(layout: &Layout) -> Result<bool> {
    crate::prereqs::ensure_cluster_tools()?;
    let runtime = KafkaRuntime::locate()?;
    runtime.ensure()?;
    let legacy_runtime = if layout.legacy {
        let legacy = KafkaRuntime::locate_legacy()?;
        legacy.ensure()?;
        Some(legacy)
    } else {
        None
    };

    if let Ok(file) = read_clusters_file(layout) {
        if report(layout, &file, true) {
            println!(
                "kafka: clusters already up ({})",
                layout.clusters_file().display()
            );
            return Ok(false);
        }
        eprintln!("kafka: clusters.json is stale; restarting the clusters");
    }
    // Leftovers of an earlier run (crashed `up`, stale file): stop and clean.
    stop_all(layout)?;

    fs::create_dir_all(&layout.root)
        .with_context(|| format!("creating {}", layout.root.display()))?;
    let pki = certs::generate(&layout.root.join("tls"))?;

    // All ports are reserved at once so the two clusters cannot collide.
    let mut ports = free_ports(CLUSTER_NAMES.len() * 5 + 2)?.into_iter();
    let mut plans = Vec::new();
    for name in CLUSTER_NAMES {
        let mut next = || ports.next().context("ran out of reserved ports");
        plans.push(ClusterPlan {
            name,
            plaintext: next()?,
            sasl_plaintext: next()?,
            ssl: next()?,
            mtls: next()?,
            controller: next()?,
        });
    }
    let legacy_ports = (
        ports.next().context("ran out of reserved ports")?,
        ports.next().context("ran out of reserved ports")?,
    );

    // All JVMs start in parallel, the legacy one included.
    let (results, legacy_result): (Vec<Result<ClusterInfo>>, Option<Result<LegacyClusterInfo>>) =
        thread::scope(|s| {
            let handles: Vec<_> = plans
                .iter()
                .map(|plan| s.spawn(|| start_cluster(layout, &runtime, &pki, plan)))
                .collect();
            let legacy_handle = legacy_runtime
                .as_ref()
                .map(|rt| s.spawn(move || start_legacy(layout, rt, legacy_ports)));
            let results = handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("cluster start thread panicked")))
                })
                .collect();
            let legacy = legacy_handle.map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(anyhow::anyhow!("legacy cluster start thread panicked"))
                })
            });
            (results, legacy)
        });

    let mut clusters = BTreeMap::new();
    let mut failures = Vec::new();
    for result in results {
        match result {
            Ok(info) => {
                clusters.insert(info.name.clone(), info);
            }
            Err(e) => failures.push(format!("{e:#}")),
        }
    }
    let legacy = match legacy_result {
        Some(Ok(info)) => Some(info),
        Some(Err(e)) => {
            failures.push(format!("{e:#}"));
            None
        }
        None => None,
    };
    if !failures.is_empty() {
        // Never leave half a harness running.
        if let Err(e) = stop_all(layout) {
            eprintln!("kafka: cleanup after failed start also failed: {e:#}");
        }
        bail!(
            "starting the Kafka test clusters failed:\n{}",
            failures.join("\n\n")
        );
    }

    let file = ClustersFile {
        kafka_version: KAFKA_VERSION.to_owned(),
        kafka_libs: runtime.classpath(),
        kafka_run_class: runtime.run_class(),
        kafka_bin: runtime.bin(),
        clusters,
        legacy,
    };
    let json = serde_json::to_string_pretty(&file)?;
    fs::write(layout.clusters_file(), json + "\n")
        .with_context(|| format!("writing {}", layout.clusters_file().display()))?;
    report(layout, &file, true);
    println!(
        "kafka: clusters up; details in {}",
        layout.clusters_file().display()
    );
    Ok(true)
}

/// `kafka down`: stops the brokers we started, removes their data and `clusters.json`.
pub fn down(layout: &Layout) -> Result<()> {
    stop_all(layout)?;
    println!(
        "kafka: clusters down (broker logs kept under {})",
        layout.root.display()
    );
    Ok(())
}

/// How a [`ClustersGuard`] talks about stopping (or keeping) the clusters.
#[derive(Debug, Clone, Copy)]
pub struct GuardNotes {
    /// What its messages start with (`xtask`, `bench`).
    pub prefix: &'static str,
    /// Printed after `<prefix>: ` when the clusters were up before and stay
    /// up; `None` says nothing.
    pub leaving: Option<&'static str>,
    /// Whether to report how long `kafka down` took (as a phase of `xtask test`).
    pub timed: bool,
}

/// The test clusters of `layout` for the length of one command: [`up`] when
/// made, [`down`] when dropped, but only if this guard started them (clusters
/// that were running before stay running). Dropping also stops them on every
/// error path after `up`.
#[derive(Debug)]
pub struct ClustersGuard {
    layout: Layout,
    started_here: bool,
    notes: GuardNotes,
}

impl ClustersGuard {
    /// Brings the clusters up if they are not.
    pub fn up(layout: &Layout, notes: GuardNotes) -> Result<ClustersGuard> {
        let started_here = up(layout)?;
        Ok(ClustersGuard {
            layout: layout.clone(),
            started_here,
            notes,
        })
    }
}

impl Drop for ClustersGuard {
    fn drop(&mut self) {
        let GuardNotes {
            prefix,
            leaving,
            timed,
        } = self.notes;
        if self.started_here {
            let phase = Instant::now();
            if let Err(e) = down(&self.layout) {
                eprintln!("{prefix}: warning: stopping the clusters failed: {e:#}");
            }
            if timed {
                eprintln!(
                    "{prefix}: phase `kafka down` took {:.1}s",
                    phase.elapsed().as_secs_f64()
                );
            }
        } else if let Some(note) = leaving {
            eprintln!("{prefix}: {note}");
        }
    }
}

/// `kafka status`: prints every cluster and listener; Ok(false) if anything is unhealthy.
pub fn status(layout: &Layout) -> Result<bool> {
    let file = match read_clusters_file(layout) {
        Ok(file) => file,
        Err(e) => {
            println!("kafka: no clusters ({e:#}); run `cargo xtask kafka up`");
            return Ok(false);
        }
    };
    Ok(report(layout, &file, true))
}

/// Reads and parses `clusters.json`.
pub fn read_clusters_file(layout: &Layout) -> Result<ClustersFile> {
    let path = layout.clusters_file();
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Checks every cluster; prints the findings if `print`. True if all healthy.
fn report(layout: &Layout, file: &ClustersFile, print: bool) -> bool {
    let mut healthy = true;
    if layout.legacy {
        healthy &= report_legacy(file.legacy.as_ref(), print);
    }
    for name in CLUSTER_NAMES {
        let Some(info) = file.clusters.get(name) else {
            if print {
                println!("{name}: missing from clusters.json");
            }
            healthy = false;
            continue;
        };
        let alive = is_our_broker(info.pid, &info.config_file);
        healthy &= alive;
        if print {
            println!(
                "{name}: pid {} {}  (cluster id {}, log {})",
                info.pid,
                if alive { "running" } else { "NOT RUNNING" },
                info.cluster_id,
                info.log_file.display()
            );
        }
        for (kind, addr) in info.bootstrap.all() {
            let (ok, detail) = if kind == "plaintext" {
                match probe::api_versions(addr) {
                    Ok(n) => (true, format!("ApiVersions ok, {n} APIs")),
                    Err(e) => (false, format!("ApiVersions FAILED: {e:#}")),
                }
            } else if probe::port_open(addr) {
                (true, "port open".to_owned())
            } else {
                (false, "port CLOSED".to_owned())
            };
            healthy &= ok;
            if print {
                println!("  {kind:<15} {addr:<21} {detail}");
            }
        }
    }
    healthy
}

/// The `legacy` part of [`report`].
fn report_legacy(legacy: Option<&LegacyClusterInfo>, print: bool) -> bool {
    let Some(info) = legacy else {
        if print {
            println!("{LEGACY_NAME}: missing from clusters.json");
        }
        return false;
    };
    let alive = is_our_broker(info.pid, &info.config_file);
    let (ok, detail) = match probe::api_versions(&info.bootstrap.plaintext) {
        Ok(n) => (true, format!("ApiVersions ok, {n} APIs")),
        Err(e) => (false, format!("ApiVersions FAILED: {e:#}")),
    };
    if print {
        println!(
            "{LEGACY_NAME}: pid {} {}  (Kafka {}, cluster id {}, log {})",
            info.pid,
            if alive { "running" } else { "NOT RUNNING" },
            info.kafka_version,
            info.cluster_id,
            info.log_file.display()
        );
        println!(
            "  {:<15} {:<21} {detail}",
            "plaintext", info.bootstrap.plaintext
        );
    }
    alive && ok
}

struct ClusterPlan {
    name: &'static str,
    plaintext: u16,
    sasl_plaintext: u16,
    ssl: u16,
    mtls: u16,
    controller: u16,
}

fn start_cluster(
    layout: &Layout,
    runtime: &KafkaRuntime,
    pki: &TestPki,
    plan: &ClusterPlan,
) -> Result<ClusterInfo> {
    let name = plan.name;
    let dir = layout.cluster_dir(name);
    let data_dir = dir.join("data");
    let log_dir = dir.join("logs");
    for d in [&data_dir, &log_dir] {
        fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let log_file = log_dir.join("broker.log");
    let config_file = layout.config_file(name);
    let log4j_file = dir.join("log4j2.properties");
    let users = users(name);
    let acl = (name == SECURE_CLUSTER).then(acl_users);
    let addr = |port: u16| format!("127.0.0.1:{port}");

    fs::write(
        &config_file,
        server_properties(plan, &data_dir, pki, &users, acl.as_ref())?,
    )
    .with_context(|| format!("writing {}", config_file.display()))?;
    fs::write(&log4j_file, BROKER_LOG4J)
        .with_context(|| format!("writing {}", log4j_file.display()))?;

    let cluster_id = random_cluster_id()?;
    let started = Instant::now();
    format_storage(
        runtime,
        &config_file,
        &cluster_id,
        Some(&users),
        acl.as_ref(),
        &log_dir,
    )
    .with_context(|| format!("cluster {name}: formatting {}", data_dir.display()))?;
    eprintln!(
        "kafka: {name}: storage formatted in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    let pid = launch(
        layout,
        runtime,
        name,
        &format!("Kafka {KAFKA_VERSION}, cluster id {cluster_id}"),
    )?;

    let bootstrap = Listeners {
        plaintext: addr(plan.plaintext),
        sasl_plaintext: addr(plan.sasl_plaintext),
        ssl: addr(plan.ssl),
        mtls: addr(plan.mtls),
    };
    wait_until_serving(name, pid, &bootstrap.all(), &log_file)?;
    eprintln!(
        "kafka: {name}: serving after {:.1}s (pid {pid})",
        started.elapsed().as_secs_f64()
    );

    let tls = TlsFiles {
        ca_pem: pki.ca_pem.clone(),
        client_cert_pem: pki.client_cert_pem.clone(),
        client_key_pem: pki.client_key_pem.clone(),
    };
    let client_configs = write_client_configs(&dir, pki, &users, acl.as_ref())?;
    Ok(ClusterInfo {
        name: name.to_owned(),
        cluster_id,
        pid,
        bootstrap,
        controller: addr(plan.controller),
        sasl_users: users,
        tls,
        client_configs,
        config_file,
        acl_users: acl,
        log_dir,
        log_file,
        data_dir,
    })
}

/// Starts the `legacy` cluster: the older Kafka of `runtime`, PLAINTEXT only,
/// on the `(plaintext, controller)` ports.
fn start_legacy(
    layout: &Layout,
    runtime: &KafkaRuntime,
    (plaintext, controller): (u16, u16),
) -> Result<LegacyClusterInfo> {
    let name = LEGACY_NAME;
    let dir = layout.cluster_dir(name);
    let data_dir = dir.join("data");
    let log_dir = dir.join("logs");
    for d in [&data_dir, &log_dir] {
        fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let log_file = log_dir.join("broker.log");
    let config_file = layout.config_file(name);
    let log4j_file = dir.join("log4j2.properties");
    let addr = |port: u16| format!("127.0.0.1:{port}");
    let version = runtime.version();

    fs::write(
        &config_file,
        legacy_server_properties(plaintext, controller, &data_dir, version),
    )
    .with_context(|| format!("writing {}", config_file.display()))?;
    fs::write(&log4j_file, BROKER_LOG4J)
        .with_context(|| format!("writing {}", log4j_file.display()))?;

    let cluster_id = random_cluster_id()?;
    let started = Instant::now();
    format_storage(runtime, &config_file, &cluster_id, None, None, &log_dir)
        .with_context(|| format!("cluster {name}: formatting {}", data_dir.display()))?;
    let pid = launch(
        layout,
        runtime,
        name,
        &format!("Kafka {version}, cluster id {cluster_id}"),
    )?;
    let bootstrap = PlaintextListener {
        plaintext: addr(plaintext),
    };
    wait_until_serving(
        name,
        pid,
        &[("plaintext", bootstrap.plaintext.as_str())],
        &log_file,
    )?;
    eprintln!(
        "kafka: {name}: Kafka {version} serving after {:.1}s (pid {pid})",
        started.elapsed().as_secs_f64()
    );
    Ok(LegacyClusterInfo {
        name: name.to_owned(),
        kafka_version: version.to_owned(),
        cluster_id,
        pid,
        bootstrap,
        controller: addr(controller),
        config_file,
        log_dir,
        log_file,
        data_dir,
    })
}

/// `server.properties` of the `legacy` cluster: combined mode, a static
/// one-voter quorum, PLAINTEXT only.
fn legacy_server_properties(
    plaintext: u16,
    controller: u16,
    data_dir: &Path,
    version: &str,
) -> String {
    format!(
        "# Generated by `cargo xtask kafka up` for the legacy (Kafka {version}) test cluster.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller}
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:{plaintext},CONTROLLER://127.0.0.1:{controller}
advertised.listeners=PLAINTEXT://127.0.0.1:{plaintext}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs={data}

# One node: every internal topic has a single replica.
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
",
        data = data_dir.display(),
    )
}

/// Launches the broker JVM of cluster `name` with its existing configuration
/// and records its pid file; returns the pid.
fn launch(layout: &Layout, runtime: &KafkaRuntime, name: &str, what: &str) -> Result<u32> {
    let dir = layout.cluster_dir(name);
    let log_dir = dir.join("logs");
    let log_file = log_dir.join("broker.log");
    let config_file = layout.config_file(name);
    let log4j_file = dir.join("log4j2.properties");
    // Append, so the log of an earlier run of this cluster survives a restart.
    let mut log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_file)
        .with_context(|| format!("opening {}", log_file.display()))?;
    writeln!(log, "==== xtask: starting cluster {name} ({what}) ====")?;
    let log_err = log.try_clone()?;
    let child = Command::new("java")
        .args(BROKER_JVM_OPTS)
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            log4j_file.display()
        ))
        .arg(format!("-Dkafka.logs.dir={}", log_dir.display()))
        .arg("-cp")
        .arg(runtime.classpath())
        .arg("kafka.Kafka")
        .arg(&config_file)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        // Own process group: a Ctrl-C aimed at xtask or cargo does not reach the broker.
        .process_group(0)
        .spawn()
        .context("launching `java` (is a JDK 17+ installed?)")?;
    let pid = child.id();
    // The JVM outlives xtask by design; we track it through the pid file.
    drop(child);
    let pid_file = layout.pid_file(name);
    fs::write(&pid_file, format!("{pid}\n"))
        .with_context(|| format!("writing {}", pid_file.display()))?;

    Ok(pid)
}

/// `cargo xtask soak` only: SIGKILLs the broker of cluster `name` of
/// `layout` (ours, by pid file and command line) and waits until it is gone.
pub fn kill_broker(layout: &Layout, name: &str) -> Result<()> {
    let pid = our_pid(layout, name)?;
    signal(pid, "KILL")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while is_our_broker(pid, &layout.config_file(name)) {
        if Instant::now() >= deadline {
            bail!("cluster {name}: broker pid {pid} survived SIGKILL");
        }
        thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// `cargo xtask soak` only: SIGSTOP (`pause`) or SIGCONT of our broker `name`.
pub fn pause_broker(layout: &Layout, name: &str, pause: bool) -> Result<()> {
    let pid = our_pid(layout, name)?;
    signal(pid, if pause { "STOP" } else { "CONT" })
}

/// `cargo xtask soak` only: starts the (killed) broker `name` again on its
/// data and ports, waits until it serves, and updates the pid in the pid file
/// and `clusters.json`.
pub fn restart_broker(layout: &Layout, name: &str) -> Result<()> {
    let runtime = KafkaRuntime::locate()?;
    let mut file = read_clusters_file(layout)?;
    let info = file
        .clusters
        .get_mut(name)
        .with_context(|| format!("no cluster {name} in {}", layout.clusters_file().display()))?;
    let pid = launch(layout, &runtime, name, "restart")?;
    wait_until_serving(name, pid, &info.bootstrap.all(), &info.log_file)?;
    info.pid = pid;
    let text = serde_json::to_string_pretty(&file)?;
    fs::write(layout.clusters_file(), text)
        .with_context(|| format!("writing {}", layout.clusters_file().display()))?;
    Ok(())
}

fn our_pid(layout: &Layout, name: &str) -> Result<u32> {
    let pid_file = layout.pid_file(name);
    let pid: u32 = fs::read_to_string(&pid_file)
        .with_context(|| format!("reading {}", pid_file.display()))?
        .trim()
        .parse()
        .with_context(|| format!("parsing {}", pid_file.display()))?;
    if !is_our_broker(pid, &layout.config_file(name)) {
        bail!("cluster {name}: pid {pid} is not our broker");
    }
    Ok(pid)
}

fn server_properties(
    plan: &ClusterPlan,
    data_dir: &Path,
    pki: &TestPki,
    users: &SaslUsers,
    acl: Option<&AclUsers>,
) -> Result<String> {
    let listener = |name: &str, port: u16| format!("{name}://127.0.0.1:{port}");
    let listeners = [
        listener("PLAINTEXT", plan.plaintext),
        listener("SASL_PLAINTEXT", plan.sasl_plaintext),
        listener("SSL", plan.ssl),
        listener("MTLS", plan.mtls),
    ]
    .join(",");
    let server_cert = read_pem(&pki.server_cert_pem)?;
    let server_key = read_pem(&pki.server_key_pem)?;
    let plain = &users.plain;
    let (controller_protocol, inter_broker, plain_admin, authorizer) = match acl {
        None => ("PLAINTEXT", "PLAINTEXT", String::new(), String::new()),
        Some(acl) => secure_properties(&acl.admin),
    };
    Ok(format!(
        "# Generated by `cargo xtask kafka up` for the {name} test cluster.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller}
controller.listener.names=CONTROLLER
listeners={listeners},CONTROLLER://127.0.0.1:{controller}
advertised.listeners={listeners}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,MTLS:SSL,CONTROLLER:{controller_protocol}
inter.broker.listener.name={inter_broker}
log.dirs={data}

# One node: every internal topic has a single replica.
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=10
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false

# SASL_PLAINTEXT: PLAIN users are listed here; SCRAM users were added at format time.
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required{plain_admin} user_{plain_user}=\"{plain_password}\";
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;

# SSL and MTLS share the test CA's server certificate; MTLS also demands a client certificate.
ssl.keystore.type=PEM
ssl.keystore.certificate.chain={server_cert}
ssl.keystore.key={server_key}
ssl.truststore.type=PEM
ssl.truststore.location={ca}
ssl.client.auth=none
listener.name.mtls.ssl.client.auth=required
{authorizer}",
        name = plan.name,
        controller = plan.controller,
        data = data_dir.display(),
        plain_user = plain.user,
        plain_password = plain.password.expose(),
        ca = pki.ca_pem.display(),
    ))
}

/// What makes the `secure` cluster enforce ACLs: the controller listener
/// protocol, the inter-broker listener, the `admin` part of the PLAIN JAAS line
/// of the SASL_PLAINTEXT listener, and the extra properties.
fn secure_properties(admin: &Credentials) -> (&'static str, &'static str, String, String) {
    let (user, password) = (&admin.user, admin.password.expose());
    let plain_admin =
        format!(" username=\"{user}\" password=\"{password}\" user_{user}=\"{password}\"");
    let extra = format!(
        "
# ACLs: nothing is allowed without a grant. `{user}` is the super user and the
# principal of controller and inter-broker connections (SASL/PLAIN).
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:{user}
sasl.mechanism.inter.broker.protocol=PLAIN
sasl.mechanism.controller.protocol=PLAIN
listener.name.controller.sasl.enabled.mechanisms=PLAIN
listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required{plain_admin};
"
    );
    ("SASL_PLAINTEXT", "SASL_PLAINTEXT", plain_admin, extra)
}

/// A PEM file as a one-line Java properties value (newlines escaped as `\n`).
fn read_pem(path: &Path) -> Result<String> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text.trim().replace('\n', "\\n"))
}

/// Java client configs for Kafka's CLI tools, one per way of connecting.
fn write_client_configs(
    dir: &Path,
    pki: &TestPki,
    users: &SaslUsers,
    acl: Option<&AclUsers>,
) -> Result<BTreeMap<String, PathBuf>> {
    let ca = pki.ca_pem.display();
    let sasl = |mechanism: &str, module: &str, c: &Credentials| {
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\nsasl.jaas.config={module} required username=\"{}\" password=\"{}\";\n",
            c.user,
            c.password.expose()
        )
    };
    let plain_module = "org.apache.kafka.common.security.plain.PlainLoginModule";
    let scram_module = "org.apache.kafka.common.security.scram.ScramLoginModule";
    let mut configs = vec![
        ("plaintext", "security.protocol=PLAINTEXT\n".to_owned()),
        ("sasl_plain", sasl("PLAIN", plain_module, &users.plain)),
        (
            "sasl_scram_sha_256",
            sasl("SCRAM-SHA-256", scram_module, &users.scram_sha_256),
        ),
        (
            "sasl_scram_sha_512",
            sasl("SCRAM-SHA-512", scram_module, &users.scram_sha_512),
        ),
        (
            "ssl",
            format!(
                "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={ca}\n"
            ),
        ),
        (
            "mtls",
            format!(
                "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={ca}\nssl.keystore.type=PEM\nssl.keystore.certificate.chain={}\nssl.keystore.key={}\n",
                read_pem(&pki.client_cert_pem)?,
                read_pem(&pki.client_key_pem)?
            ),
        ),
    ];
    if let Some(acl) = acl {
        configs.push((
            "sasl_admin",
            sasl("SCRAM-SHA-512", scram_module, &acl.admin),
        ));
    }
    let mut out = BTreeMap::new();
    for (kind, text) in configs {
        let path = dir.join(format!("client-{kind}.properties"));
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        out.insert(kind.to_owned(), path);
    }
    Ok(out)
}

/// `kafka-storage format`, creating the SCRAM users (if any) in the same step.
fn format_storage(
    runtime: &KafkaRuntime,
    config: &Path,
    cluster_id: &str,
    users: Option<&SaslUsers>,
    acl: Option<&AclUsers>,
    log_dir: &Path,
) -> Result<()> {
    let scram = |mechanism: &str, c: &Credentials| {
        format!(
            "{mechanism}=[name={},password={}]",
            c.user,
            c.password.expose()
        )
    };
    let mut scram_args = Vec::new();
    if let Some(users) = users {
        for (mechanism, c) in [
            ("SCRAM-SHA-256", &users.scram_sha_256),
            ("SCRAM-SHA-512", &users.scram_sha_512),
        ] {
            scram_args.push("--add-scram".to_owned());
            scram_args.push(scram(mechanism, c));
        }
    }
    if let Some(acl) = acl {
        for c in [&acl.admin, &acl.mm2_source, &acl.mm2_target] {
            scram_args.push("--add-scram".to_owned());
            scram_args.push(scram("SCRAM-SHA-512", c));
        }
    }
    let out = Command::new("java")
        .args(TOOL_JVM_OPTS)
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            runtime.tools_log4j().display()
        ))
        .arg("-cp")
        .arg(runtime.classpath())
        .arg("kafka.tools.StorageTool")
        .arg("format")
        .arg("--cluster-id")
        .arg(cluster_id)
        .arg("--config")
        .arg(config)
        .args(&scram_args)
        .stdin(Stdio::null())
        .output()
        .context("running `java kafka.tools.StorageTool` (is a JDK 17+ installed?)")?;
    let mut transcript = out.stdout.clone();
    transcript.extend_from_slice(&out.stderr);
    let path = log_dir.join("format.log");
    fs::write(&path, &transcript).with_context(|| format!("writing {}", path.display()))?;
    if !out.status.success() {
        bail!(
            "kafka-storage format failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&transcript).trim()
        );
    }
    Ok(())
}

/// Polls until the broker answers ApiVersions on PLAINTEXT (the first of
/// `listeners`) and every other listener accepts connections, or fails with
/// the tail of the broker log.
fn wait_until_serving(
    name: &str,
    pid: u32,
    listeners: &[(&'static str, &str)],
    log_file: &Path,
) -> Result<()> {
    let Some((_, plaintext)) = listeners.first() else {
        bail!("cluster {name}: no listener to wait for");
    };
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        // Not `is_our_broker`: right after exec the command line can briefly read empty.
        if !is_running(pid) {
            bail!(
                "cluster {name}: broker (pid {pid}) exited during startup; last lines of {}:\n{}",
                log_file.display(),
                tail(log_file, 40)
            );
        }
        let last_problem = match probe::api_versions(plaintext) {
            Ok(_) => {
                let closed: Vec<_> = listeners
                    .iter()
                    .filter(|(_, addr)| !probe::port_open(addr))
                    .map(|(kind, addr)| format!("{kind} {addr}"))
                    .collect();
                if closed.is_empty() {
                    return Ok(());
                }
                format!("listeners not accepting: {}", closed.join(", "))
            }
            Err(e) => format!("{e:#}"),
        };
        if Instant::now() >= deadline {
            bail!(
                "cluster {name}: broker (pid {pid}) not serving after {}s ({last_problem}); last lines of {}:\n{}",
                START_TIMEOUT.as_secs(),
                log_file.display(),
                tail(log_file, 40)
            );
        }
        thread::sleep(Duration::from_millis(250));
    }
}

/// Stops every broker named by a pid file, then removes data dirs, pid files
/// and `clusters.json`. Logs stay.
fn stop_all(layout: &Layout) -> Result<()> {
    // Always includes `legacy`: a layout that runs none has no pid file for it.
    for name in CLUSTER_NAMES.into_iter().chain([LEGACY_NAME]) {
        let pid_file = layout.pid_file(name);
        if let Ok(text) = fs::read_to_string(&pid_file) {
            match text.trim().parse::<u32>() {
                Ok(pid) => stop_broker(name, pid, &layout.config_file(name))?,
                Err(_) => eprintln!(
                    "kafka: {name}: ignoring unreadable pid file {}",
                    pid_file.display()
                ),
            }
            fs::remove_file(&pid_file)
                .with_context(|| format!("removing {}", pid_file.display()))?;
        }
        let data = layout.cluster_dir(name).join("data");
        if data.exists() {
            fs::remove_dir_all(&data).with_context(|| format!("removing {}", data.display()))?;
        }
    }
    let file = layout.clusters_file();
    if file.exists() {
        fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))?;
    }
    Ok(())
}

fn stop_broker(name: &str, pid: u32, config: &Path) -> Result<()> {
    if !is_our_broker(pid, config) {
        // Already gone, or the pid now belongs to someone else: leave it alone.
        return Ok(());
    }
    signal(pid, "TERM")?;
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        if !is_our_broker(pid, config) {
            eprintln!("kafka: {name}: broker (pid {pid}) stopped");
            return Ok(());
        }
        thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "kafka: {name}: broker (pid {pid}) ignored SIGTERM for {}s; sending SIGKILL",
        STOP_TIMEOUT.as_secs()
    );
    signal(pid, "KILL")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while is_our_broker(pid, config) {
        if Instant::now() >= deadline {
            bail!("cluster {name}: broker pid {pid} survived SIGKILL");
        }
        thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

pub(crate) fn signal(pid: u32, sig: &str) -> Result<()> {
    // Failure is fine if the process exited in between; the caller re-checks.
    Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status()
        .context("running `kill`")?;
    Ok(())
}

/// True if `pid` is a live (non-zombie) Kafka JVM started with our `config`.
/// Guards against pid reuse and against other worktrees' brokers.
fn is_our_broker(pid: u32, config: &Path) -> bool {
    let Some(args) = procfs::cmdline(pid) else {
        return false;
    };
    let has = |arg: &[u8]| args.iter().any(|a| a == arg);
    has(b"kafka.Kafka") && has(config.as_os_str().as_encoded_bytes())
}

/// Reserves `n` distinct free loopback ports (bound together, then released).
fn free_ports(n: usize) -> Result<Vec<u16>> {
    let sockets = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").context("binding a free loopback port"))
        .collect::<Result<Vec<_>>>()?;
    sockets.iter().map(|s| Ok(s.local_addr()?.port())).collect()
}

/// A fresh KRaft cluster id: 16 random bytes, URL-safe base64 without padding.
fn random_cluster_id() -> Result<String> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut urandom = fs::File::open("/dev/urandom").context("opening /dev/urandom")?;
    loop {
        let mut bytes = [0u8; 16];
        urandom
            .read_exact(&mut bytes)
            .context("reading /dev/urandom")?;
        let value = u128::from_be_bytes(bytes);
        // 22 digits of 6 bits cover 132 bits: the last digit holds the final
        // 2 bits followed by 4 zero bits, as in unpadded base64.
        let out: String = (0..22i32)
            .map(|i| {
                let shift = 122 - 6 * i;
                let index = if shift >= 0 {
                    (value >> shift) & 0x3f
                } else {
                    (value << -shift) & 0x3f
                };
                char::from(ALPHABET[index as usize])
            })
            .collect();
        // Kafka's own generator avoids ids starting with '-' (they read like CLI flags).
        if !out.starts_with('-') {
            return Ok(out);
        }
    }
}

/// The last `lines` lines of a log file, for error messages.
fn tail(path: &Path, lines: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

const BROKER_LOG4J: &str = "\
# Test broker logging: everything at INFO into stdout, which xtask sends to logs/broker.log.
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_ids_are_22_url_safe_base64_digits_not_starting_with_a_dash() {
        for _ in 0..100 {
            let id = random_cluster_id().expect("urandom is readable");
            assert_eq!(id.len(), 22, "{id}");
            assert!(!id.starts_with('-'), "{id}");
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{id}"
            );
        }
    }

    #[test]
    fn reserved_ports_are_distinct() {
        let mut ports = free_ports(10).expect("loopback ports are available");
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 10);
    }

    #[test]
    fn a_missing_pid_is_neither_running_nor_our_broker() {
        // PIDs above the kernel maximum (4194304) never exist.
        assert!(!is_running(u32::MAX));
        assert!(!is_our_broker(u32::MAX, Path::new("/x/server.properties")));
    }

    #[test]
    fn pem_values_become_one_properties_line() {
        let dir = std::env::temp_dir().join(format!("xtask-pem-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("a.pem");
        fs::write(&path, "-----BEGIN X-----\nAAAA\n-----END X-----\n").expect("write");
        let value = read_pem(&path).expect("read");
        fs::remove_dir_all(&dir).ok();
        assert_eq!(value, "-----BEGIN X-----\\nAAAA\\n-----END X-----");
    }
}
