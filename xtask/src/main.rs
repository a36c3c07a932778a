//! Developer and CI tasks. Run `cargo xtask help`.
//!
//! - `cargo xtask kafka up|down|status|classpath`: real Apache Kafka test clusters
//!   (see [`kafka`]).
//! - `cargo xtask test [-- <cargo test args>]`: the whole test suite against
//!   those clusters, starting and stopping them as needed.
//! - `cargo xtask mm2 config|start|stop|status`: Apache Kafka's MirrorMaker 2
//!   against those clusters, for manual side-by-side runs (see [`mm2`]).
//! - `cargo xtask dist`, `dist-test`: static musl release binaries (see [`dist`]).
//! - `cargo xtask image`: a `FROM scratch` OCI image of them (see [`oci`]).
//! - `cargo xtask bench [mm2]`: criterion benches, and the side-by-side
//!   benchmark against MirrorMaker 2, `bench latency`, commit → checkpoint
//!   delays, and `bench reread`, the re-read after a failover against lag
//!   (see [`perf::bench`]).
//! - `cargo xtask soak`, `footprint`: the fault soak and the release
//!   binary's memory and start-up figures (see [`perf`]).
//! - `cargo xtask fuzz [--seconds N] [TARGET...]`: every cargo-fuzz target for
//!   N seconds each (see [`fuzz`]).

mod certs;
mod demo;
mod deploy;
mod dist;
mod fuzz;
mod kafka;
mod maven;
mod mm2;
mod oci;
mod perf;
mod prereqs;
mod probe;
mod procfs;
mod topics;

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
  demo              the main job end to end on the local clusters: seed a
                    mirrored topic, offset syncs and groups, `run --once` with
                    group sync, then `translate` and the target groups' offsets
  mm2 config [--topics RE] [--groups RE] [--offset-lag-max N]
             [--no-checkpoints | --no-checkpoint-groups] [--isolated]
                    print an mm2.properties for the running clusters (source->target,
                    RF 1, 1 s intervals). Replication and offset syncs always run;
                    --no-checkpoints: emit.checkpoints.enabled=false (MM2 refuses
                    its checkpoint connector; an earlier stored one keeps running);
                    --no-checkpoint-groups: groups.exclude=.* (connector runs
                    without tasks; replaces a stored one); --isolated: own Connect
                    worker group and internal topics instead of MM2's defaults
  mm2 start --config FILE [--name NAME]
                    run MirrorMaker 2 (dedicated mode) detached, files in
                    target/mm2/NAME/ (default NAME: manual)
  mm2 stop [--name NAME]
                    stop the MirrorMaker 2 that `mm2 start` started
  mm2 status        list the MirrorMaker 2 processes `mm2 start` started
  test [-- ARGS]    clusters up, `cargo test --workspace --all-targets` and
                    `cargo test --workspace --doc` (ARGS passed to both), clusters
                    down again if this command started them. With `-p NAME` in ARGS
                    `--workspace` is left out; with target options (`--test NAME`,
                    `--lib`, ...) only one `cargo test ARGS` runs
  dist [--target x86_64|aarch64|armv7|all] [--variant default|ring|all] [--allow-c]
                    static release binaries into target/dist/ with SHA256SUMS
                    (default: x86_64 and aarch64, default variant, C compilers poisoned)
  size-report [--target x86_64|aarch64|armv7|all] [--variant default|ring|all] [--top N]
                    where the bytes of the last `dist` build go: loaded sections
                    and code per crate, from the unstripped build dist keeps in
                    target/size-report/ (dist fails when an artefact grows past
                    its limit; the budget: 6 MiB, armv7 5 MiB). See
                    docs/benchmarks.md, section Binary and image size
  dist-test [--target T] [--variant V]
                    run each built binary in an empty root (chroot; qemu for
                    foreign architectures): --version, --help, and a real
                    `run --once` over PLAINTEXT and TLS against the test
                    clusters (started if needed), checkpoints verified; on
                    x86_64 also the CPU check under `qemu-x86_64-static -cpu
                    Nehalem`
  footprint [--groups N]
                    peak RSS of `run --once` with N groups (default 300), daemon
                    start-to-ready time and idle RSS, for the x86_64 binary
  image [--variant default|ring] [--check]
                    FROM-scratch OCI image layout target/dist/oci/ and its tar;
                    --check validates it with skopeo and umoci, then runs the
                    image's own entrypoint and command in its unpacked rootfs
                    against the test clusters until /readyz answers 200
  check-deploy      check the Dockerfile against the image, deploy/kubernetes/
                    with kubernetes-validate --strict (PyPI), the systemd unit
                    with systemd-analyze verify, and the Helm chart in
                    deploy/helm/ (helm lint and template, kubernetes-validate,
                    the prometheus-operator CRD schemas via the Go module proxy)
  fuzz [--seconds N] [TARGET...]
                    build and run each cargo-fuzz target (all by default) for
                    N seconds (default 60) after replaying its regressions;
                    fails on any crash (needs nightly and cargo-fuzz)
  soak [--seconds N] [--mode follow|poll]
                    fault soak on its own clusters (target/kafka-soak/): kill -9
                    and restart each broker, SIGSTOP the target, while a daemon
                    runs; checks checkpoints and readiness (default 300 s)
  bench [-- ARGS]   clusters up if needed, `cargo bench --workspace ARGS`, clusters
                    down again if this command started them
  bench mm2 [--groups 10,100,1000] [--partitions 10] [--syncs 1000000]
            [--window 30] [--out FILE]
                    side by side with MirrorMaker 2's checkpoint connector (a
                    Connect standalone worker), one after the other on the same
                    workload: start-up, first round, CPU per round, RSS, and the
                    offset-sync catch-up; table on stdout (and FILE), raw JSON in
                    target/bench/. See docs/benchmarks.md
  bench latency [--quick] [--groups 1000] [--partitions 10] [--seconds 60]
            [--sides follow,poll,mm2-1s,mm2-60s] [--heavy-groups 2000]
            [--big-groups 10000] [--big-seconds 20] [--keep-topics] [--out FILE]
                    commit → checkpoint and commit → target group offset delays
                    (p50/p99/max) with every group committing once a second: ours
                    following __consumer_offsets, ours polling, MM2 at 1 s and
                    60 s, one after the other; replay speed, RSS and CPU of the
                    follower; raw JSON in target/bench/. See docs/benchmarks.md
  bench reread [--records 1000010] [--pace RECORDS_PER_SECOND]
                    the re-read after a failover against lag with the real
                    MirrorMaker 2's own checkpoints beside ours in both modes
                    (the ignored test tests/tests/reread_real_mm2.rs; without --pace
                    MM2 mirrors a backlog); table on stdout. See docs/benchmarks.md
  bench precise [--sizes 1000x10000,10000x1000] [--max-syncs N] [--out FILE]
                    the release daemon in mm2 and precise translation modes
                    (and precise restarted, restoring its sync-history topic)
                    over P partitions x S offset syncs each, groups lagging
                    10^3 to 10^6 records: start-up, initial read, RSS, re-read
                    per lag (budget S syncs per partition unless --max-syncs);
                    table in target/bench/precise-*.md. See
                    docs/benchmarks.md
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
        ["demo"] => {
            demo::demo(&workspace_root(), &layout)?;
            Ok(ExitCode::SUCCESS)
        }
        ["mm2", "config", rest @ ..] => {
            let mut args = mm2::ConfigArgs::default();
            let mut rest = rest.iter();
            while let Some(flag) = rest.next() {
                match *flag {
                    "--topics" => args.topics = Some(value(flag, rest.next())?.to_owned()),
                    "--groups" => args.groups = Some(value(flag, rest.next())?.to_owned()),
                    "--offset-lag-max" => {
                        let v = value(flag, rest.next())?;
                        args.offset_lag_max = Some(v.parse().with_context(|| {
                            format!("--offset-lag-max wants a non-negative integer, not {v:?}")
                        })?);
                    }
                    "--no-checkpoints" => args.no_checkpoints = true,
                    "--no-checkpoint-groups" => args.no_checkpoint_groups = true,
                    "--isolated" => args.isolated = true,
                    other => bail!("unknown option `{other}` for `mm2 config`\n\n{USAGE}"),
                }
            }
            mm2::config(&layout, &args)?;
            Ok(ExitCode::SUCCESS)
        }
        ["mm2", "start", rest @ ..] => {
            let (mut config, mut name) = (None, mm2::DEFAULT_NAME);
            let mut rest = rest.iter();
            while let Some(flag) = rest.next() {
                match *flag {
                    "--config" => config = Some(value(flag, rest.next())?),
                    "--name" => name = value(flag, rest.next())?,
                    other => bail!("unknown option `{other}` for `mm2 start`\n\n{USAGE}"),
                }
            }
            let Some(config) = config else {
                bail!("`mm2 start` needs --config FILE (see `cargo xtask mm2 config`)\n\n{USAGE}");
            };
            mm2::start(&layout, Path::new(config), name)?;
            Ok(ExitCode::SUCCESS)
        }
        ["mm2", "stop"] => {
            mm2::stop(&layout, mm2::DEFAULT_NAME)?;
            Ok(ExitCode::SUCCESS)
        }
        ["mm2", "stop", "--name", name] => {
            mm2::stop(&layout, name)?;
            Ok(ExitCode::SUCCESS)
        }
        ["mm2", "status"] => Ok(if mm2::status(&layout)? {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }),
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
        ["dist", rest @ ..] => {
            dist::build::dist(&workspace_root(), rest)?;
            Ok(ExitCode::SUCCESS)
        }
        ["size-report", rest @ ..] => {
            dist::size::size_report(&workspace_root(), rest)?;
            Ok(ExitCode::SUCCESS)
        }
        ["dist-test", rest @ ..] => {
            dist::test::dist_test(&workspace_root(), rest)?;
            Ok(ExitCode::SUCCESS)
        }
        ["footprint", rest @ ..] => {
            perf::footprint::run(&workspace_root(), rest)?;
            Ok(ExitCode::SUCCESS)
        }
        ["image", rest @ ..] => {
            oci::image(&workspace_root(), rest)?;
            Ok(ExitCode::SUCCESS)
        }
        ["check-deploy", rest @ ..] => {
            deploy::check_deploy(&workspace_root(), rest)?;
            Ok(ExitCode::SUCCESS)
        }
        ["fuzz", rest @ ..] => fuzz::run(&workspace_root(), rest),
        ["soak", rest @ ..] => perf::soak::run(&workspace_root(), rest),
        ["bench", rest @ ..] => perf::bench::run(&workspace_root(), rest),
        [] | ["help"] | ["--help"] | ["-h"] => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        _ => bail!("unknown command `{}`\n\n{USAGE}", words.join(" ")),
    }
}

/// The value after `flag`, or an error naming the flag.
fn value<'a>(flag: &str, next: Option<&&'a str>) -> Result<&'a str> {
    next.copied()
        .with_context(|| format!("option `{flag}` needs a value"))
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
    let clusters = kafka::ClustersGuard::up(
        layout,
        kafka::GuardNotes {
            prefix: "xtask",
            leaving: Some("leaving the clusters running (they were up before this command)"),
            timed: true,
        },
    )?;
    eprintln!(
        "xtask: phase `kafka up` took {:.1}s",
        phase.elapsed().as_secs_f64()
    );

    let result = run_cargo_tests(layout, extra);

    drop(clusters);
    eprintln!("xtask: test total {:.1}s", total.elapsed().as_secs_f64());
    result
}

fn run_cargo_tests(layout: &kafka::Layout, extra: &[&str]) -> Result<ExitCode> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let clusters_file = layout.clusters_file();
    let mut failed = Vec::new();
    // Only cargo's own options count, not the test binary's (after `--`).
    let cargo_args = || extra.iter().take_while(|a| **a != "--");
    // `-p NAME` narrows the run to packages: `--workspace` would override it.
    let packages = cargo_args()
        .any(|a| *a == "--package" || a.starts_with("-p") || a.starts_with("--package="));
    // Cargo refuses `--doc` next to other target selections (`--test NAME`, ...).
    let targets = cargo_args().any(|a| {
        [
            "--lib",
            "--bin",
            "--bins",
            "--test",
            "--tests",
            "--example",
            "--examples",
            "--bench",
            "--benches",
        ]
        .iter()
        .any(|t| a == t || a.starts_with(&format!("{t}=")))
    });
    let scope: &[&str] = if packages { &[] } else { &["--workspace"] };
    // Explicit targets replace `--all-targets` (which would add every other
    // target) and rule out the doc-test run.
    let phases: &[&str] = if targets {
        &[""]
    } else {
        &["--all-targets", "--doc"]
    };
    for mode in phases {
        // `--no-fail-fast`: one failing test binary must not hide the others'
        // results.
        let args: Vec<&str> = ["test", "--no-fail-fast"]
            .into_iter()
            .chain(scope.iter().copied())
            .chain((!mode.is_empty()).then_some(*mode))
            .chain(extra.iter().copied())
            .collect();
        let label = format!("cargo {}", args.join(" "));
        let phase = Instant::now();
        eprintln!("xtask: running `{label}`");
        let status = Command::new(&cargo)
            .args(&args)
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
