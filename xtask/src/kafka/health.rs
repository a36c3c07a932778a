//! The health check behind `kafka status` and `kafka up`'s "already up": every
//! broker alive and ours, every listener answering.

use super::layout::{CLUSTER_NAMES, LEGACY_NAME, Layout};
use super::process::is_our_broker;
use super::{ClustersFile, LegacyClusterInfo};
use crate::probe;

/// Checks every cluster; prints the findings if `print`. True if all healthy.
pub(super) fn report(layout: &Layout, file: &ClustersFile, print: bool) -> bool {
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
        let oauth = info.oauth.as_ref().map(|o| ("oauth", o.bootstrap.as_str()));
        for (kind, addr) in info.bootstrap.all().into_iter().chain(oauth) {
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
