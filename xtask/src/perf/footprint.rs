//! `cargo xtask footprint [--groups N]`: the static x86_64 release binary's
//! memory and start-up figures against the test clusters, for
//! docs/benchmarks.md.
//!
//! It reuses `dist-test`'s seeded rounds ([`crate::dist::run`]) for its flow
//! and [`crate::dist::artefact::Package`] to find the artefact `cargo xtask
//! dist` built.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::demo::{PARTITIONS, SYNC_POINTS};
use crate::dist::artefact::{Arch, Package, Variant};
use crate::dist::run::{Protocol, Testbed};
use crate::kafka::Layout;
use crate::{probe, procfs};

/// `cargo xtask footprint [--groups N]`: runtime figures of the static x86_64
/// binary (default variant) against the test clusters, for docs/benchmarks.md.
///
/// Seeds one flow with `N` committed source groups (default 300), then
/// measures the peak RSS of `run --once` (`/usr/bin/time -v`), and in daemon
/// mode with `--metrics-addr` the time from process start to `/readyz` 200 and
/// `VmRSS` after the first round.
pub fn run(workspace: &Path, args: &[&str]) -> Result<()> {
    let mut groups = 300usize;
    let mut rest = args.iter();
    while let Some(&arg) = rest.next() {
        match arg {
            "--groups" => {
                groups = rest
                    .next()
                    .context("`--groups` needs a value")?
                    .parse()
                    .context("`--groups` takes a number")?
            }
            _ => bail!("unknown argument `{arg}` to `cargo xtask footprint`"),
        }
    }
    let package = Package::load(workspace)?;
    let binary = package.artefact(Arch::X86_64, Variant::Default);
    if !binary.is_file() {
        bail!("{} missing: run `cargo xtask dist` first", binary.display());
    }
    let clusters = Testbed::up(&Layout::new(workspace))?;
    let round = clusters.prepare("footprint")?;
    let latest = SYNC_POINTS.last().copied().unwrap_or(0);
    let names: Vec<String> = (0..groups)
        .map(|i| format!("{}_{i:04}", round.group))
        .collect();
    clusters.commit_groups(&round, &names, latest)?;
    let dir = package.dist_dir().join("footprint");
    fs::create_dir_all(&dir)?;
    let config = dir.join("mm2.properties");
    let text = clusters.properties(&round, Protocol::Plaintext).replace(
        &format!("groups = {}\n", round.group),
        &format!("groups = {}_.*\n", round.group),
    ) + "emit.checkpoints.interval.seconds = 10\nsync.group.offsets.interval.seconds = 10\n";
    fs::write(&config, text)?;
    let config_arg = config.to_str().context("non-UTF-8 path")?;

    // One round, measured by GNU time.
    let out = std::process::Command::new("/usr/bin/time")
        .arg("-v")
        .arg(&binary)
        .args(["run", "--config", config_arg, "--once"])
        .output()
        .context("running /usr/bin/time -v")?;
    let report = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("run --once failed: {report}");
    }
    let field = |key: &str| {
        report
            .lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    println!(
        "run --once, {groups} groups x {PARTITIONS} partitions: max RSS {} KiB, wall {}, user {} s, sys {} s",
        field("Maximum resident set size (kbytes):"),
        field("Elapsed (wall clock) time (h:mm:ss or m:ss):"),
        field("User time (seconds):"),
        field("System time (seconds):")
    );
    let checkpoints = clusters.checkpoints(&round)?;
    println!(
        "  checkpoints written: {} (expected {})",
        checkpoints.len(),
        groups * PARTITIONS as usize
    );

    // Daemon mode: start → /readyz 200, then VmRSS between rounds.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let addr = format!("127.0.0.1:{port}");
    let started = std::time::Instant::now();
    let mut child = std::process::Command::new(&binary)
        .args(["run", "--config", config_arg, "--metrics-addr", &addr])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting the daemon")?;
    let result = (|| -> Result<()> {
        let ready = loop {
            if started.elapsed() > std::time::Duration::from_secs(60) {
                bail!("not ready after 60 s");
            }
            if probe::http_status(&addr, "/readyz") == Some(200) {
                break started.elapsed();
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        println!("daemon: start to /readyz 200 in {} ms", ready.as_millis());
        // First round is done with readiness; sample while idle before the next.
        std::thread::sleep(std::time::Duration::from_secs(3));
        let status = procfs::status(child.id())?;
        for key in ["VmRSS:", "VmHWM:"] {
            let value = procfs::status_value(&status, key).unwrap_or("?");
            println!("daemon idle after the first round: {key} {value}");
        }
        Ok(())
    })();
    let _ = child.kill();
    let _ = child.wait();
    result
}
