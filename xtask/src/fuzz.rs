//! `cargo xtask fuzz [--seconds N] [TARGET...]`: build and run every
//! cargo-fuzz target of the workspace for a fixed time each.
//!
//! Fuzz projects are the `fuzz/` directories of the crates in
//! [`FUZZ_CRATES`] that have one; each is its own Cargo workspace, built with
//! `cargo +nightly fuzz` (libFuzzer with AddressSanitizer). Before fuzzing,
//! every file under the project's `regressions/` is replayed against each of
//! its targets. A target with a `seeds/<target>/` directory starts from those
//! seeds as well as from its `corpus/<target>/`. Any crash, leak, timeout or
//! out-of-memory fails the command; libFuzzer writes the input to
//! `fuzz/artifacts/<target>/`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// Crates (relative to the workspace root) whose `fuzz/` directory is fuzzed.
const FUZZ_CRATES: &[&str] = &["crates/kafka-lite", "crates/mm2-checkpoint"];

/// Seconds per target when `--seconds` is not given.
const DEFAULT_SECONDS: u64 = 60;

/// libFuzzer limits: RSS per run (the machine is shared) and seconds per input.
const RSS_LIMIT_MB: u32 = 2048;
const INPUT_TIMEOUT_SECS: u32 = 10;

/// One fuzz target: the crate whose `fuzz/` directory holds it, and its name.
struct Target {
    crate_dir: PathBuf,
    name: String,
}

/// The result of fuzzing one target.
struct Outcome {
    label: String,
    executions: Option<u64>,
    seconds: f64,
    passed: bool,
}

/// Entry point for `cargo xtask fuzz ARGS`.
pub fn run(root: &Path, args: &[&str]) -> Result<ExitCode> {
    let (seconds, wanted) = parse_args(args)?;
    check_toolchain()?;

    let mut targets = Vec::new();
    for crate_dir in FUZZ_CRATES.iter().map(|c| root.join(c)) {
        if !crate_dir.join("fuzz").join("Cargo.toml").is_file() {
            continue;
        }
        let names = list_targets(&crate_dir)?;
        targets.extend(names.into_iter().map(|name| Target {
            crate_dir: crate_dir.clone(),
            name,
        }));
    }
    for name in &wanted {
        if !targets.iter().any(|t| &t.name == name) {
            let known: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
            bail!(
                "no fuzz target `{name}` (known: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        }
    }
    targets.retain(|t| wanted.is_empty() || wanted.contains(&t.name));
    if targets.is_empty() {
        bail!("no fuzz targets found under {}", FUZZ_CRATES.join(", "));
    }

    let total = Instant::now();
    let mut built: Vec<&Path> = Vec::new();
    let mut outcomes = Vec::new();
    for target in &targets {
        if !built.contains(&target.crate_dir.as_path()) {
            build(&target.crate_dir)?;
            built.push(&target.crate_dir);
        }
        outcomes.push(fuzz_one(root, target, seconds)?);
    }

    eprintln!("xtask: fuzz summary ({seconds} s per target):");
    for o in &outcomes {
        let execs = o
            .executions
            .map_or_else(|| "? executions".to_string(), |n| format!("{n} executions"));
        eprintln!(
            "xtask:   {:<40} {} in {:.0}s, {}",
            o.label,
            execs,
            o.seconds,
            if o.passed { "no crash" } else { "CRASHED" }
        );
    }
    eprintln!("xtask: fuzz total {:.1}s", total.elapsed().as_secs_f64());
    Ok(if outcomes.iter().all(|o| o.passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `[--seconds N] [TARGET...]`.
fn parse_args(args: &[&str]) -> Result<(u64, Vec<String>)> {
    let mut seconds = DEFAULT_SECONDS;
    let mut wanted = Vec::new();
    let mut rest = args.iter();
    while let Some(&arg) = rest.next() {
        let value = match arg {
            "--seconds" => Some(
                *rest
                    .next()
                    .context("`--seconds` needs a value (whole seconds per target)")?,
            ),
            _ => arg.strip_prefix("--seconds="),
        };
        match value {
            Some(v) => {
                seconds = v
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .with_context(|| format!("`--seconds {v}`: expected a positive integer"))?;
            }
            None if arg.starts_with('-') => bail!("`cargo xtask fuzz`: unknown option `{arg}`"),
            None => wanted.push(arg.to_string()),
        }
    }
    Ok((seconds, wanted))
}

/// A `cargo +nightly …` command with the caller's toolchain selection removed,
/// so the nightly toolchain is used throughout.
fn nightly_cargo() -> Command {
    let mut cmd = Command::new("cargo");
    cmd.arg("+nightly")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC");
    cmd
}

fn check_toolchain() -> Result<()> {
    let ok = nightly_cargo()
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        bail!(
            "`cargo +nightly fuzz` is not available; install it with\n  \
             rustup toolchain install nightly --profile minimal\n  \
             cargo install cargo-fuzz --locked"
        );
    }
    Ok(())
}

fn list_targets(crate_dir: &Path) -> Result<Vec<String>> {
    let out = nightly_cargo()
        .args(["fuzz", "list"])
        .current_dir(crate_dir)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running `cargo fuzz list` in {}", crate_dir.display()))?;
    if !out.status.success() {
        bail!("`cargo fuzz list` failed in {}", crate_dir.display());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

fn build(crate_dir: &Path) -> Result<()> {
    let started = Instant::now();
    eprintln!("xtask: building fuzz targets in {}", crate_dir.display());
    let status = nightly_cargo()
        .args(["fuzz", "build"])
        .current_dir(crate_dir)
        .status()
        .context("running `cargo +nightly fuzz build`")?;
    if !status.success() {
        bail!(
            "`cargo +nightly fuzz build` failed in {}",
            crate_dir.display()
        );
    }
    eprintln!(
        "xtask: phase `fuzz build` took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Replays the project's regression inputs, then fuzzes for `seconds`.
fn fuzz_one(root: &Path, target: &Target, seconds: u64) -> Result<Outcome> {
    let crate_name = target
        .crate_dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let label = format!("{crate_name}/{}", target.name);
    let log_dir = root.join("target").join("xtask-fuzz");
    std::fs::create_dir_all(&log_dir).with_context(|| format!("creating {}", log_dir.display()))?;

    let regressions = regression_inputs(&target.crate_dir.join("fuzz").join("regressions"))?;
    if !regressions.is_empty() {
        let log = log_dir.join(format!("{crate_name}-{}-regressions.log", target.name));
        // Files (not directories) as the corpus: libFuzzer runs each once.
        let status = libfuzzer(target, &log)
            .args(&regressions)
            .args(["--", &format!("-rss_limit_mb={RSS_LIMIT_MB}")])
            .status()
            .with_context(|| format!("replaying regressions for {label}"))?;
        if !status.success() {
            report_failure(&label, &log);
            return Ok(Outcome {
                label,
                executions: None,
                seconds: 0.0,
                passed: false,
            });
        }
        eprintln!(
            "xtask: {label}: {} regression input(s) replayed, no crash",
            regressions.len()
        );
    }

    let log = log_dir.join(format!("{crate_name}-{}.log", target.name));
    eprintln!(
        "xtask: fuzzing {label} for {seconds}s (log: {})",
        log.display()
    );
    let started = Instant::now();
    let mut command = libfuzzer(target, &log);
    // Seeds (`fuzz/seeds/<target>/`, checked in) are read as a second corpus
    // directory; new inputs go to the first, `fuzz/corpus/<target>/` (ignored).
    let fuzz_dir = target.crate_dir.join("fuzz");
    let seeds = fuzz_dir.join("seeds").join(&target.name);
    if seeds.is_dir() {
        let corpus = fuzz_dir.join("corpus").join(&target.name);
        std::fs::create_dir_all(&corpus)
            .with_context(|| format!("creating {}", corpus.display()))?;
        command.arg(&corpus).arg(&seeds);
    }
    let status = command
        .args([
            "--".to_string(),
            format!("-max_total_time={seconds}"),
            format!("-rss_limit_mb={RSS_LIMIT_MB}"),
            format!("-timeout={INPUT_TIMEOUT_SECS}"),
            "-print_final_stats=1".to_string(),
        ])
        .status()
        .with_context(|| format!("running `cargo fuzz run {}`", target.name))?;
    let elapsed = started.elapsed().as_secs_f64();
    let executions = std::fs::read_to_string(&log)
        .ok()
        .and_then(|text| executed_units(&text));
    if !status.success() {
        report_failure(&label, &log);
    } else if let Some(n) = executions {
        eprintln!("xtask: {label}: {n} executions in {elapsed:.0}s, no crash");
    }
    Ok(Outcome {
        label,
        executions,
        seconds: elapsed,
        passed: status.success(),
    })
}

/// `cargo +nightly fuzz run TARGET` with stdout and stderr going to `log`.
fn libfuzzer(target: &Target, log: &Path) -> Command {
    let mut cmd = nightly_cargo();
    cmd.args(["fuzz", "run", &target.name])
        .current_dir(&target.crate_dir);
    match File::create(log).and_then(|f| Ok((f.try_clone()?, f))) {
        Ok((out, err)) => {
            cmd.stdout(out).stderr(err);
        }
        Err(e) => eprintln!("xtask: warning: cannot write {}: {e}", log.display()),
    }
    cmd
}

/// Every regular file below `dir` (none if it does not exist), sorted.
fn regression_inputs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if !dir.is_dir() {
        return Ok(files);
    }
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// libFuzzer's `stat::number_of_executed_units: N` line.
fn executed_units(log: &str) -> Option<u64> {
    log.lines()
        .rev()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|n| n.trim().parse().ok())
}

fn report_failure(label: &str, log: &Path) {
    eprintln!("xtask: {label}: FAILED; last lines of {}:", log.display());
    if let Ok(text) = std::fs::read_to_string(log) {
        let lines: Vec<&str> = text.lines().collect();
        for line in &lines[lines.len().saturating_sub(40)..] {
            eprintln!("    {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_targets_are_parsed() {
        let (s, t) = parse_args(&["--seconds", "20", "a", "b"]).unwrap();
        assert_eq!((s, t), (20, vec!["a".to_string(), "b".to_string()]));
        let (s, t) = parse_args(&["--seconds=5"]).unwrap();
        assert_eq!((s, t), (5, Vec::<String>::new()));
        assert_eq!(parse_args(&[]).unwrap().0, DEFAULT_SECONDS);
    }

    #[test]
    fn bad_seconds_and_unknown_options_are_rejected() {
        assert!(parse_args(&["--seconds"]).is_err());
        assert!(parse_args(&["--seconds", "0"]).is_err());
        assert!(parse_args(&["--seconds", "x"]).is_err());
        assert!(parse_args(&["--time", "3"]).is_err());
    }

    #[test]
    fn executions_come_from_the_final_stats() {
        let log = "#1024 pulse cov: 10\nstat::number_of_executed_units: 123456\n\
                   stat::average_exec_per_sec:     2057\n";
        assert_eq!(executed_units(log), Some(123_456));
        assert_eq!(executed_units("Done 5 runs"), None);
    }
}
