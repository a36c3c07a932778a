//! `cargo xtask bench [-- ARGS]`, `cargo xtask bench mm2 [...]`, `cargo xtask bench latency [...]`
//! and `cargo xtask bench reread [...]`.
//!
//! The first runs the workspace's criterion benches (`cargo bench --workspace
//! ARGS`) with the test clusters up (the OffsetFetch bench needs them).
//!
//! The second measures MirrorMaker 2's checkpoint connector and our release
//! binary side by side, on the same clusters and the same input, one after the
//! other (never both at once):
//!
//! * **MM2** runs as a Kafka Connect *standalone* worker
//!   (`org.apache.kafka.connect.cli.ConnectStandalone`) with only
//!   `MirrorCheckpointConnector`: what a user replaces with our binary. By
//!   default with the JVM settings of Kafka's own start scripts
//!   ([`args::Mm2Jvm::Stock`]); `--mm2-jvm stock,small` adds a labelled run
//!   with the e2e tests' small heap.
//! * **ours** runs as `mm2-checkpoint run --metrics-addr ... --log-format json`,
//!   by default the static musl artefact of `cargo xtask dist`.
//!
//! Sizes in `--ours-only-groups` run ours alone. A side that has not written
//! every checkpoint after 10 minutes is kept as a lower bound, a side that
//! fails is recorded as failed, and the other side still runs; the JSON and
//! the markdown report are rewritten after every size.
//!
//! Per group count N, one workload: a fresh topic of P partitions on the
//! source, a fresh offset-syncs topic (`mm2-offset-syncs.<target alias>.internal`)
//! holding syncs written with the core's encoder, and N groups committed (admin
//! commit) on every partition at the newest sync. Both implementations read the
//! same syncs topic and the same groups; each gets its own source alias, so
//! each writes to its own, fresh `<alias>.checkpoints.internal` on the target.
//!
//! The third, `bench latency` ([`latency`]), measures commit → checkpoint and
//! commit → target group offset delays for ours (following commits, and
//! polling) and MM2, the commit follower's start-up replay, its RSS and CPU.
//!
//! The fourth, `bench precise` ([`precise`]), measures the daemon's start-up
//! and memory in precise and mm2 translation modes with a long offset-sync
//! history at 1,000 and 10,000 source partitions, and the restore of the
//! sync-history topic (issue 21).
//!
//! The catch-up run fills another fresh offset-syncs topic with `--syncs`
//! syncs and measures how long each implementation takes to read it, against
//! a run with an empty one.
//!
//! The fourth, `bench reread`, runs the ignored integration test
//! `tests/tests/reread_real_mm2.rs` against the bench's
//! clusters: the real MirrorMaker 2 mirrors about a million records and
//! checkpoints groups at lags 100 to 10^6 beside ours in both modes.
//!
//! Every process started here is killed when its guard drops, also on errors.

mod args;
mod env;
mod latency;
mod logs;
mod mm2;
mod ours;
mod precise;
mod process;
mod report;
mod seed;
mod side_by_side;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

use args::{Mm2Args, USAGE};
use env::ClusterEnv;
use process::cargo;

/// Entry point of `cargo xtask bench ...`.
pub fn run(root: &Path, args: &[&str]) -> Result<ExitCode> {
    match args {
        ["mm2", rest @ ..] => {
            let args = Mm2Args::parse(rest)?;
            side_by_side::mm2(root, &args)?;
            Ok(ExitCode::SUCCESS)
        }
        ["latency", rest @ ..] => {
            let args = latency::LatencyArgs::parse(rest)?;
            latency::run(root, &args)?;
            Ok(ExitCode::SUCCESS)
        }
        ["reread", rest @ ..] => reread(root, rest),
        ["precise", rest @ ..] => {
            let args = precise::PreciseArgs::parse(rest)?;
            precise::run(root, &args)?;
            Ok(ExitCode::SUCCESS)
        }
        [] => criterion(root, &[]),
        ["--", extra @ ..] => criterion(root, extra),
        _ => bail!(
            "unknown arguments `{}` for `bench`\n\n{USAGE}",
            args.join(" ")
        ),
    }
}

/// `cargo xtask bench [-- ARGS]`.
fn criterion(root: &Path, extra: &[&str]) -> Result<ExitCode> {
    let env = ClusterEnv::acquire(root)?;
    // `-p NAME` narrows the run; `--workspace` would override it.
    let narrowed = extra
        .iter()
        .take_while(|a| **a != "--")
        .any(|a| *a == "--package" || a.starts_with("-p") || a.starts_with("--package="));
    let status = Command::new(cargo())
        .arg("bench")
        .args((!narrowed).then_some("--workspace"))
        .args(extra)
        .env("MM2_CLUSTERS_FILE", &env.path)
        .current_dir(root)
        .status()
        .context("running `cargo bench --workspace`")?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        eprintln!("bench: `cargo bench --workspace` failed ({status})");
        ExitCode::FAILURE
    })
}

/// `cargo xtask bench reread [--records N] [--pace R]`: the ignored test
/// `reread_real_mm2` with `REREAD_RECORDS` and `REREAD_PACE` set from the
/// options.
fn reread(root: &Path, args: &[&str]) -> Result<ExitCode> {
    let mut env_vars: Vec<(&str, String)> = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let name = match *arg {
            "--records" => "REREAD_RECORDS",
            "--pace" => "REREAD_PACE",
            other => bail!("unknown argument `{other}` for `bench reread`\n\n{USAGE}"),
        };
        let value = rest
            .next()
            .with_context(|| format!("`bench reread {arg}` needs a number"))?;
        let n: u64 = value
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .with_context(|| format!("`bench reread {arg} {value}`: not a positive number"))?;
        env_vars.push((name, n.to_string()));
    }
    let env = ClusterEnv::acquire(root)?;
    let status = Command::new(cargo())
        .args(["test", "-p", "e2e", "--test", "reread_real_mm2"])
        .args(["--", "--ignored", "--nocapture"])
        .envs(env_vars)
        .env("MM2_CLUSTERS_FILE", &env.path)
        .current_dir(root)
        .status()
        .context("running the reread_real_mm2 test")?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        eprintln!("bench: reread_real_mm2 failed ({status})");
        ExitCode::FAILURE
    })
}
