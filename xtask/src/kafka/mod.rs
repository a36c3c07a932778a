//! `cargo xtask kafka up | down | status`: two real single-node KRaft clusters,
//! plus two more: one on an older Kafka and one that enforces ACLs.
//!
//! The end-to-end tests need a *source* and a *target* cluster, like MM2
//! itself. Each is one JVM running Apache Kafka in combined mode (broker and
//! controller in one process) on free loopback ports, with one listener per
//! way our client must be able to connect: PLAINTEXT, SASL_PLAINTEXT (PLAIN and
//! SCRAM-SHA-256/512), SSL, SSL with a required client certificate (mTLS), and
//! SASL_SSL (the SASL_PLAINTEXT mechanisms and users over TLS).
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
//! oauth/                   the OAUTH listeners' JWKS and the key tests sign tokens with
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

mod config;
mod faults;
mod guard;
mod health;
mod oauth;
mod process;
mod start;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::thread;

use anyhow::{Context, Result, bail};

use crate::certs;
use crate::maven::{KAFKA_VERSION, KafkaRuntime};
use health::report;
use process::stop_all;
use start::{ClusterPlan, free_ports, start_cluster, start_legacy};

pub use faults::{kill_broker, pause_broker, restart_broker};
pub use guard::{ClustersGuard, GuardNotes};
pub(crate) use process::signal;
pub use start::raise_default_broker_heap;

/// Name (and directory) of the older-Kafka cluster.
const LEGACY_NAME: &str = "legacy";

/// The clusters we run, in start order.
const CLUSTER_NAMES: [&str; 3] = ["source", "target", SECURE_CLUSTER];
/// The cluster that enforces ACLs.
const SECURE_CLUSTER: &str = "secure";

// The clusters.json model is the `e2e` crate's: the tests read what this
// writes. The xtask names stay as aliases.
pub use e2e::{
    AclUsers, Cluster as ClusterInfo, Clusters as ClustersFile, Credentials,
    LegacyCluster as LegacyClusterInfo, Listener, Listeners, Password, PlaintextListener,
    SaslUsers, TlsFiles,
};

/// Paths under `<workspace>/target/kafka`.
#[derive(Debug, Clone)]
pub struct Layout {
    /// `<workspace>/target/kafka`.
    pub root: PathBuf,
    /// Whether `up` also starts the `legacy` cluster.
    pub legacy: bool,
    /// Broker properties appended to every cluster's `server.properties`
    /// (the soak shortens the offset retention; the shared clusters have none).
    pub broker_overrides: Vec<(&'static str, &'static str)>,
}

impl Layout {
    /// The layout for this workspace.
    pub fn new(workspace: &Path) -> Self {
        Self {
            root: workspace.join("target").join("kafka"),
            legacy: true,
            broker_overrides: Vec::new(),
        }
    }

    /// A layout rooted at `root` instead (`cargo xtask soak` uses
    /// `target/kafka-soak`, so it never touches the shared test clusters).
    /// Such a layout runs no `legacy` cluster.
    pub fn at(root: PathBuf) -> Self {
        Self {
            root,
            legacy: false,
            broker_overrides: Vec::new(),
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
    // The jars of the AWS_MSK_IAM differential test (no broker runs them).
    let msk_iam = KafkaRuntime::locate_msk_iam()?;
    msk_iam.ensure()?;
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
    let oauth = oauth::generate(layout)?;

    // All ports are reserved at once so the two clusters cannot collide.
    let mut ports = free_ports(CLUSTER_NAMES.len() * 7 + 2)?.into_iter();
    let mut plans = Vec::new();
    for name in CLUSTER_NAMES {
        let mut next = || ports.next().context("ran out of reserved ports");
        plans.push(ClusterPlan {
            name,
            plaintext: next()?,
            sasl_plaintext: next()?,
            ssl: next()?,
            mtls: next()?,
            oauth: next()?,
            sasl_ssl: next()?,
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
                .map(|plan| s.spawn(|| start_cluster(layout, &runtime, &pki, &oauth, plan)))
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
        msk_iam_libs: Some(msk_iam.classpath()),
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
