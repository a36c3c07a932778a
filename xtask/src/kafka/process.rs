//! Our broker processes: telling them from other worktrees' (pid file and
//! command line), signalling them, and stopping every one a layout started.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::layout::{CLUSTER_NAMES, LEGACY_NAME, Layout};
use crate::procfs;

/// How long a broker may take to stop after SIGTERM before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Stops every broker named by a pid file, then removes data dirs, pid files
/// and `clusters.json`. Logs stay.
pub(super) fn stop_all(layout: &Layout) -> Result<()> {
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
pub(super) fn is_our_broker(pid: u32, config: &Path) -> bool {
    let Some(args) = procfs::cmdline(pid) else {
        return false;
    };
    let has = |arg: &[u8]| args.iter().any(|a| a == arg);
    has(b"kafka.Kafka") && has(config.as_os_str().as_encoded_bytes())
}
