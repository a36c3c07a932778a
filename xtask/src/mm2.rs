//! `cargo xtask mm2 config|start|stop|status`: the real Apache Kafka
//! MirrorMaker 2, for manual side-by-side runs against the test clusters.
//!
//! The configuration generator and the java command line live in the `e2e`
//! crate (`e2e::mm2`), which the tests use; this module only adds what a
//! long-lived, detached process needs:
//!
//! ```text
//! target/mm2/<name>/mm2.properties     the configuration it runs
//! target/mm2/<name>/log4j2.properties  INFO to stdout
//! target/mm2/<name>/mm2.log            stdout, stderr and Log4j output
//! target/mm2/<name>/pid                the JVM we started (removed by `stop`)
//! ```
//!
//! `stop` signals only a PID from our own pid file, and only if that process's
//! command line is MirrorMaker 2 running this directory's `mm2.properties`.

use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use e2e::mm2::{Checkpoints, MAIN_CLASS, Mm2Config, prepare};

use crate::kafka::{Layout, signal};
use crate::procfs::{self, is_running};

/// Name used when `--name` is not given.
pub const DEFAULT_NAME: &str = "manual";

fn root(layout: &Layout) -> PathBuf {
    layout.root.parent().unwrap_or(&layout.root).join("mm2")
}

fn clusters(layout: &Layout) -> Result<e2e::Clusters> {
    let path = layout.clusters_file();
    e2e::Clusters::from_file(&path)
        .with_context(|| "no test clusters: run `cargo xtask kafka up` first".to_owned())
}

/// Options of `mm2 config`.
#[derive(Debug, Default)]
pub struct ConfigArgs {
    /// `--topics`.
    pub topics: Option<String>,
    /// `--groups`.
    pub groups: Option<String>,
    /// `--offset-lag-max`.
    pub offset_lag_max: Option<u64>,
    /// `--no-checkpoints`.
    pub no_checkpoints: bool,
    /// `--no-checkpoint-groups`.
    pub no_checkpoint_groups: bool,
    /// `--isolated`.
    pub isolated: bool,
}

/// `mm2 config`: prints an mm2.properties for the running test clusters.
pub fn config(layout: &Layout, args: &ConfigArgs) -> Result<()> {
    let clusters = clusters(layout)?;
    let mut config = Mm2Config::new(
        args.topics.as_deref().unwrap_or(".*"),
        args.groups.as_deref().unwrap_or(".*"),
    );
    // By default manual runs use MM2's standard Connect worker group and
    // internal topics, like a real deployment of this flow.
    if !args.isolated {
        config.instance = None;
    }
    if let Some(lag) = args.offset_lag_max {
        config.offset_lag_max = lag;
    }
    match (args.no_checkpoints, args.no_checkpoint_groups) {
        (true, true) => bail!("--no-checkpoints and --no-checkpoint-groups exclude each other"),
        (true, false) => config = config.with_checkpoints(Checkpoints::Refused),
        (false, true) => config = config.with_checkpoints(Checkpoints::NoGroups),
        (false, false) => {}
    }
    print!("{}", config.render_for(&clusters));
    Ok(())
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        || name.starts_with('.')
    {
        bail!("bad --name {name:?}: use letters, digits, `-`, `_` and `.`");
    }
    Ok(())
}

/// True if `pid` is a live MirrorMaker 2 JVM running `props`.
fn is_our_mm2(pid: u32, props: &Path) -> bool {
    if !is_running(pid) {
        return false;
    }
    let Some(args) = procfs::cmdline(pid) else {
        return false;
    };
    let has = |arg: &[u8]| args.iter().any(|a| a == arg);
    has(MAIN_CLASS.as_bytes()) && has(props.as_os_str().as_encoded_bytes())
}

fn read_pid(pid_file: &Path) -> Option<u32> {
    fs::read_to_string(pid_file).ok()?.trim().parse().ok()
}

/// `mm2 start --config FILE [--name NAME]`: MM2 as a detached JVM.
pub fn start(layout: &Layout, config_file: &Path, name: &str) -> Result<()> {
    check_name(name)?;
    let clusters = clusters(layout)?;
    let properties = fs::read_to_string(config_file)
        .with_context(|| format!("reading {}", config_file.display()))?;
    let dir = root(layout).join(name);
    let pid_file = dir.join("pid");
    let props = dir.join("mm2.properties");
    if let Some(pid) = read_pid(&pid_file)
        && is_our_mm2(pid, &props)
    {
        bail!(
            "MirrorMaker 2 `{name}` already runs (pid {pid}); `cargo xtask mm2 stop --name {name}` first"
        );
    }
    let mut cmd = prepare(&dir, &clusters.kafka_libs, &properties)?;
    let log = dir.join("mm2.log");
    let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone().context("duplicating the log file handle")?;
    // Own process group: the JVM outlives xtask and ignores its Ctrl-C.
    let child = cmd
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .context("launching `java` (is a JDK 17+ installed?)")?;
    let pid = child.id();
    fs::write(&pid_file, format!("{pid}\n"))
        .with_context(|| format!("writing {}", pid_file.display()))?;
    // Fail fast on a JVM that dies at once (bad config, missing jars).
    thread::sleep(Duration::from_secs(2));
    if !is_our_mm2(pid, &props) {
        let _ = fs::remove_file(&pid_file);
        bail!(
            "MirrorMaker 2 `{name}` exited at once; see {}",
            log.display()
        );
    }
    eprintln!("mm2: `{name}` started (pid {pid}); log {}", log.display());
    Ok(())
}

/// `mm2 stop [--name NAME]`: SIGTERM, then SIGKILL after 20 s.
pub fn stop(layout: &Layout, name: &str) -> Result<()> {
    check_name(name)?;
    let dir = root(layout).join(name);
    let pid_file = dir.join("pid");
    let props = dir.join("mm2.properties");
    let Some(pid) = read_pid(&pid_file) else {
        eprintln!(
            "mm2: `{name}` is not running (no pid file in {})",
            dir.display()
        );
        return Ok(());
    };
    if is_our_mm2(pid, &props) {
        signal(pid, "TERM")?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while is_our_mm2(pid, &props) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(100));
        }
        if is_our_mm2(pid, &props) {
            eprintln!("mm2: `{name}` (pid {pid}) ignored SIGTERM for 20 s; sending SIGKILL");
            signal(pid, "KILL")?;
        }
        eprintln!("mm2: `{name}` (pid {pid}) stopped");
    } else {
        eprintln!("mm2: `{name}` (pid {pid}) was no longer running");
    }
    fs::remove_file(&pid_file).with_context(|| format!("removing {}", pid_file.display()))?;
    Ok(())
}

/// `mm2 status`: every MM2 started by `mm2 start`; false if any died.
pub fn status(layout: &Layout) -> Result<bool> {
    let root = root(layout);
    let mut healthy = true;
    let mut any = false;
    let Ok(entries) = fs::read_dir(&root) else {
        eprintln!("mm2: none started");
        return Ok(true);
    };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    for dir in dirs {
        let Some(pid) = read_pid(&dir.join("pid")) else {
            continue;
        };
        any = true;
        let name = dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let props = dir.join("mm2.properties");
        if is_our_mm2(pid, &props) {
            let rss = procfs::status(pid)
                .ok()
                .and_then(|s| procfs::status_value(&s, "VmRSS:").map(str::to_owned))
                .unwrap_or_else(|| "?".into());
            println!(
                "{name}: pid {pid} running, RSS {rss}, log {}",
                dir.join("mm2.log").display()
            );
        } else {
            healthy = false;
            println!(
                "{name}: pid {pid} NOT running; log {}",
                dir.join("mm2.log").display()
            );
        }
    }
    if !any {
        eprintln!("mm2: none started");
    }
    Ok(healthy)
}
