//! Starting a cluster: formatting its storage (with its SCRAM users), launching
//! its broker JVM in a process group of its own, and waiting until every
//! listener serves.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::config::{
    BROKER_LOG4J, ClusterPlan, acl_users, legacy_server_properties, server_properties, users,
    write_client_configs,
};
use super::layout::{LEGACY_NAME, Layout, SECURE_CLUSTER};
use super::oauth::{self, OAuthFiles};
use super::{
    AclUsers, ClusterInfo, Credentials, LegacyClusterInfo, Listeners, PlaintextListener, SaslUsers,
    TlsFiles,
};
use crate::certs::TestPki;
use crate::maven::{KAFKA_VERSION, KafkaRuntime};
use crate::probe;
use crate::procfs::is_running;

/// How long a broker may take from launch to answering ApiVersions.
const START_TIMEOUT: Duration = Duration::from_secs(180);
/// Broker JVM options besides the heap's maximum ([`broker_heap`]): serial
/// GC; the machine has two cores.
const BROKER_JVM_OPTS: &[&str] = &["-Xms256m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"];
/// JVM options for the one-shot storage format tool.
const TOOL_JVM_OPTS: &[&str] = &["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"];

/// The brokers' `-Xmx` when `MM2_BROKER_HEAP` is not set, if not 512 MiB:
/// see [`raise_default_broker_heap`].
static DEFAULT_HEAP: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Makes `heap` (a JVM size such as `2g`) the brokers' maximum heap for the
/// clusters this process starts while `MM2_BROKER_HEAP` is not set. `bench
/// mm2` does so for its 100,000-group size. The first call wins.
pub fn raise_default_broker_heap(heap: &'static str) {
    let _ = DEFAULT_HEAP.set(heap);
}

/// The brokers' `-Xmx`: 512 MiB (or what [`raise_default_broker_heap`] set), or `MM2_BROKER_HEAP` (a JVM size such as
/// `2g`). At 100,000 groups x 10 partitions the source broker's committed
/// offsets fill 512 MiB and it spends a quarter of its time in full GCs
/// (docs/benchmarks.md, "Measurements behind the design"); the bench at that size asks for more.
fn broker_heap() -> Result<String> {
    match std::env::var("MM2_BROKER_HEAP") {
        Err(_) => Ok(format!(
            "-Xmx{}",
            DEFAULT_HEAP.get().copied().unwrap_or("512m")
        )),
        Ok(v) => {
            let digits = v.strip_suffix(['k', 'm', 'g', 'K', 'M', 'G']).unwrap_or(&v);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                bail!("MM2_BROKER_HEAP={v:?}: expected a JVM heap size such as 2g or 1536m");
            }
            Ok(format!("-Xmx{v}"))
        }
    }
}

pub(super) fn start_cluster(
    layout: &Layout,
    runtime: &KafkaRuntime,
    pki: &TestPki,
    oauth: &OAuthFiles,
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

    let mut properties = server_properties(plan, &data_dir, pki, oauth, &users, acl.as_ref())?;
    if !layout.broker_overrides.is_empty() {
        properties.push_str("\n# Overrides of this layout.\n");
        for (key, value) in &layout.broker_overrides {
            properties.push_str(&format!("{key}={value}\n"));
        }
    }
    fs::write(&config_file, properties)
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
        sasl_ssl: addr(plan.sasl_ssl),
    };
    let oauth_address = addr(plan.oauth);
    let mut listeners = bootstrap.all().to_vec();
    listeners.push(("oauth", &oauth_address));
    wait_until_serving(name, pid, &listeners, &log_file)?;
    eprintln!(
        "kafka: {name}: serving after {:.1}s (pid {pid})",
        started.elapsed().as_secs_f64()
    );

    let tls = TlsFiles {
        ca_pem: pki.ca_pem.clone(),
        client_cert_pem: pki.client_cert_pem.clone(),
        client_key_pem: pki.client_key_pem.clone(),
        client_v1_cert_pem: pki.client_v1_cert_pem.clone(),
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
        oauth: Some(oauth::listener_info(oauth, oauth_address)),
    })
}

/// Starts the `legacy` cluster: the older Kafka of `runtime`, PLAINTEXT only,
/// on the `(plaintext, controller)` ports.
pub(super) fn start_legacy(
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

/// Launches the broker JVM of cluster `name` with its existing configuration
/// and records its pid file; returns the pid.
pub(super) fn launch(
    layout: &Layout,
    runtime: &KafkaRuntime,
    name: &str,
    what: &str,
) -> Result<u32> {
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
        .arg(broker_heap()?)
        .args(BROKER_JVM_OPTS)
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            log4j_file.display()
        ))
        .arg(format!("-Dkafka.logs.dir={}", log_dir.display()))
        .arg(oauth::allowed_urls_property(layout))
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
pub(super) fn wait_until_serving(
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

/// Reserves `n` distinct free loopback ports (bound together, then released).
pub(super) fn free_ports(n: usize) -> Result<Vec<u16>> {
    let sockets = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").context("binding a free loopback port"))
        .collect::<Result<Vec<_>>>()?;
    sockets.iter().map(|s| Ok(s.local_addr()?.port())).collect()
}

/// A fresh KRaft cluster id: 16 random bytes, URL-safe base64 without padding.
pub(super) fn random_cluster_id() -> Result<String> {
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
