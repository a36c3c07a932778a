//! `kafka up`, `kafka down` and `kafka status`.

use std::collections::BTreeMap;
use std::fs;
use std::thread;

use anyhow::{Context, Result, bail};

use super::config::ClusterPlan;
use super::health::report;
use super::layout::{CLUSTER_NAMES, Layout, read_clusters_file};
use super::oauth;
use super::process::stop_all;
use super::start::{free_ports, start_cluster, start_legacy};
use super::{ClusterInfo, ClustersFile, LegacyClusterInfo};
use crate::certs;
use crate::maven::{KAFKA_VERSION, KafkaRuntime};

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
