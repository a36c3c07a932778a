//! The faults `cargo xtask soak` injects into its own clusters: killing,
//! pausing and restarting one broker.

use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::layout::{Layout, read_clusters_file};
use super::process::{is_our_broker, signal};
use super::start::{launch, wait_until_serving};
use crate::maven::KafkaRuntime;

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
