//! Developer and CI tasks. Run `cargo xtask help`.
//!
//! - `cargo xtask kafka up|down|status|classpath`: real Apache Kafka test clusters
//!   (see [`kafka`]).
//! - `cargo xtask test [-- <cargo test args>]`: the whole test suite against
//!   those clusters, starting and stopping them as needed.
//! - `cargo xtask fuzz [--seconds N] [TARGET...]`: every cargo-fuzz target for
//!   N seconds each (see [`fuzz`]).

mod certs;
mod fuzz;
mod kafka;
mod maven;
mod probe;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  kafka up          start the `source` and `target` Kafka test clusters
                    (fetches Apache Kafka jars into the cache on first use)
  kafka down        stop the clusters this worktree started; keep their logs
  kafka status      show each cluster and listener; non-zero exit if unhealthy
  kafka classpath   print the Java classpath of the cached Kafka jars
  test [-- ARGS]    clusters up, `cargo test --workspace --all-targets` and
                    `cargo test --workspace --doc` (ARGS passed to both), clusters
                    down again if this command started them
  fuzz [--seconds N] [TARGET...]
                    build and run each cargo-fuzz target (all by default) for
                    N seconds (default 60) after replaying its regressions;
                    fails on any crash (needs nightly and cargo-fuzz)
  help              this text

environment:
  MM2_KAFKA_CACHE   where the Kafka jars are cached
                    (default: ${XDG_CACHE_HOME:-~/.cache}/mm2-checkpoint/kafka-<version>)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<ExitCode> {
    let layout = kafka::Layout::new(&workspace_root());
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["kafka", "up"] => {
            let started = Instant::now();
            kafka::up(&layout)?;
            eprintln!(
                "xtask: kafka up took {:.1}s",
                started.elapsed().as_secs_f64()
            );
            Ok(ExitCode::SUCCESS)
        }
        ["kafka", "down"] => {
            kafka::down(&layout)?;
            Ok(ExitCode::SUCCESS)
        }
        ["kafka", "status"] => Ok(if kafka::status(&layout)? {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }),
        ["kafka", "classpath"] => {
            let runtime = maven::KafkaRuntime::locate()?;
            runtime.ensure()?;
            println!("{}", runtime.classpath());
            Ok(ExitCode::SUCCESS)
        }
        ["test", rest @ ..] => {
            let extra = match rest {
                [] => &[][..],
                ["--", extra @ ..] => extra,
                _ => bail!(
                    "`cargo xtask test` takes extra cargo arguments only after `--`\n\n{USAGE}"
                ),
            };
            test(&layout, extra)
        }
        ["fuzz", rest @ ..] => fuzz::run(&workspace_root(), rest),
        [] | ["help"] | ["--help"] | ["-h"] => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        _ => bail!("unknown command `{}`\n\n{USAGE}", words.join(" ")),
    }
}

/// The workspace root: xtask's manifest lives one level below it.
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// `cargo xtask test`: the full test suite against real clusters.
fn test(layout: &kafka::Layout, extra: &[&str]) -> Result<ExitCode> {
    let total = Instant::now();
    let phase = Instant::now();
    let started_here = kafka::up(layout)?;
    eprintln!(
        "xtask: phase `kafka up` took {:.1}s",
        phase.elapsed().as_secs_f64()
    );

    let result = run_cargo_tests(layout, extra);

    if started_here {
        let phase = Instant::now();
        if let Err(e) = kafka::down(layout) {
            eprintln!("xtask: warning: stopping the clusters failed: {e:#}");
        }
        eprintln!(
            "xtask: phase `kafka down` took {:.1}s",
            phase.elapsed().as_secs_f64()
        );
    } else {
        eprintln!("xtask: leaving the clusters running (they were up before this command)");
    }
    eprintln!("xtask: test total {:.1}s", total.elapsed().as_secs_f64());
    result
}

fn run_cargo_tests(layout: &kafka::Layout, extra: &[&str]) -> Result<ExitCode> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let clusters_file = layout.clusters_file();
    let mut failed = Vec::new();
    for (label, mode) in [
        ("cargo test --workspace --all-targets", "--all-targets"),
        ("cargo test --workspace --doc", "--doc"),
    ] {
        let phase = Instant::now();
        eprintln!("xtask: running `{label}`");
        let status = Command::new(&cargo)
            .args(["test", "--workspace", mode])
            .args(extra)
            .env("MM2_CLUSTERS_FILE", &clusters_file)
            .current_dir(workspace_root())
            .status()
            .with_context(|| format!("running `{label}`"))?;
        eprintln!(
            "xtask: phase `{label}` {} in {:.1}s",
            if status.success() { "passed" } else { "FAILED" },
            phase.elapsed().as_secs_f64()
        );
        if !status.success() {
            failed.push(label);
        }
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("xtask: failed: {}", failed.join("; "));
        Ok(ExitCode::FAILURE)
    }
}
