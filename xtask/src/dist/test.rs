//! `cargo xtask dist-test`: each built artefact in an empty root
//! (`chroot`; qemu-user for foreign architectures, with the oldest CPU model
//! the artefact must run on), `--version`, `--help`, real `run --once` rounds
//! over PLAINTEXT, SSL, mTLS and SASL_SSL/SCRAM ([`super::run`]) that check
//! which TLS provider ran, and the CPU check on an emulated old x86_64.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::artefact::{
    Arch, BINARY, Package, RUN_AS, Variant, check_static, has_interp, tool_output, which,
};
use super::run::{CONFIG_IN_ROOT, Protocol, Testbed};

/// A file placed into the empty root.
#[derive(Debug, Clone)]
struct RootFile {
    source: PathBuf,
    /// Path inside the root, without the leading `/`.
    dest: String,
    mode: u32,
}

/// One run of the binary inside the empty root.
#[derive(Debug, Clone, Copy)]
struct RunCase {
    args: &'static [&'static str],
    /// Whether the run must exit 0 (otherwise it only has to have run by
    /// itself, see [`ran_by_itself`]).
    must_succeed: bool,
}

/// What `dist-test` runs in each empty root.
const RUN_CASES: &[RunCase] = &[
    RunCase {
        args: &["--version"],
        must_succeed: true,
    },
    RunCase {
        args: &["--help"],
        must_succeed: true,
    },
];

/// The files that make up the empty root for one artefact.
fn root_files(binary: &Path, arch: Arch) -> Result<Vec<RootFile>> {
    let mut files = vec![RootFile {
        source: binary.to_path_buf(),
        dest: BINARY.to_owned(),
        mode: 0o755,
    }];
    if let Some(emulator) = arch.emulator() {
        let path = which(emulator).with_context(|| {
            format!(
                "`{emulator}` is needed to run {} binaries here (Debian: apt-get install qemu-user-static)",
                arch.name()
            )
        })?;
        files.push(RootFile {
            source: path,
            dest: emulator.to_owned(),
            mode: 0o755,
        });
    }
    Ok(files)
}

/// Makes `dir` an otherwise empty root holding exactly `files`.
fn make_root(dir: &Path, files: &[RootFile]) -> Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
    for file in files {
        let dest = dir.join(&file.dest);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::copy(&file.source, &dest)
            .with_context(|| format!("copying {} to {}", file.source.display(), dest.display()))?;
        fs::set_permissions(&dest, fs::Permissions::from_mode(file.mode))?;
    }
    Ok(())
}

/// How a program is started inside a root directory.
pub enum Jail {
    /// We are root: `chroot --userspec=65532:65532`, as the image runs.
    Chroot,
    /// Not root: a user namespace with `unshare --map-root-user --root`.
    Unshare,
}

impl Jail {
    /// `Chroot` as root, else `Unshare`.
    pub fn detect() -> Jail {
        let uid = Command::new("id")
            .arg("-u")
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .unwrap_or_default();
        if uid == "0" {
            Jail::Chroot
        } else {
            Jail::Unshare
        }
    }

    /// The launcher's program name.
    pub fn launcher(&self) -> &'static str {
        match self {
            Jail::Chroot => "chroot",
            Jail::Unshare => "unshare",
        }
    }

    /// Runs `/<program> args` inside `root`, through `emulation` if given.
    fn run(&self, root: &Path, emulation: Option<Emulation>, args: &[&str]) -> Result<Output> {
        self.run_with(root, emulation, &[], args, RUN_TIMEOUT)
    }

    /// Like [`Jail::run`], with `env` as the program's only environment and
    /// the run killed (and reported as an error) after `timeout`.
    fn run_with(
        &self,
        root: &Path,
        emulation: Option<Emulation>,
        env: &[(&str, &str)],
        args: &[&str],
        timeout: Duration,
    ) -> Result<Output> {
        let mut argv = Vec::new();
        if let Some(emulation) = emulation {
            argv.push(format!("/{}", emulation.program));
            if let Some(cpu) = emulation.cpu {
                argv.extend(["-cpu".to_owned(), cpu.to_owned()]);
            }
        }
        argv.push(format!("/{BINARY}"));
        argv.extend(args.iter().map(|a| a.to_string()));
        let mut cmd = self.command(root, &argv)?;
        cmd.envs(env.iter().copied());
        output_within(cmd, timeout).with_context(|| format!("running `{}`", self.launcher()))
    }

    /// The command that runs `argv` (program path inside `root` first) in
    /// `root` as [`RUN_AS`], with an empty environment.
    pub fn command(&self, root: &Path, argv: &[String]) -> Result<Command> {
        // Resolved here: the child's environment is cleared below, and a
        // cleared PATH would also hide the launcher itself.
        let launcher = which(self.launcher())
            .with_context(|| format!("`{}` is not on PATH", self.launcher()))?;
        let mut cmd = Command::new(&launcher);
        match self {
            Jail::Chroot => cmd.arg(format!("--userspec={RUN_AS}")).arg(root),
            Jail::Unshare => cmd.args(["--user", "--map-root-user", "--root"]).arg(root),
        };
        cmd.args(argv).env_clear();
        Ok(cmd)
    }
}

/// A qemu-user emulator (its program name, which is also its path inside the
/// root) and the CPU model it emulates (`None`: qemu's default, `max`).
#[derive(Debug, Clone, Copy)]
struct Emulation {
    program: &'static str,
    cpu: Option<&'static str>,
}

impl Emulation {
    /// How `arch`'s binaries run here: natively, or through its emulator
    /// with its oldest supported CPU model ([`Arch::test_cpu`]).
    fn of(arch: Arch) -> Option<Emulation> {
        arch.emulator().map(|program| Emulation {
            program,
            cpu: arch.test_cpu(),
        })
    }

    /// ` + qemu-arm-static -cpu cortex-a7`, for the logs.
    fn shown(emulation: Option<Emulation>) -> String {
        match emulation {
            None => String::new(),
            Some(Emulation { program, cpu: None }) => format!(" + {program}"),
            Some(Emulation {
                program,
                cpu: Some(cpu),
            }) => format!(" + {program} -cpu {cpu}"),
        }
    }
}

/// How long one run in an empty root may take (a `run --once` round under
/// qemu included).
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs `cmd` to completion, capturing its output; kills it after `timeout`.
fn output_within(mut cmd: Command, timeout: Duration) -> Result<Output> {
    let run = e2e::process::output_within(&mut cmd, timeout)?;
    let Some(status) = run.status else {
        bail!("still running after {}s; killed", timeout.as_secs());
    };
    Ok(Output {
        status,
        stdout: run.stdout,
        stderr: run.stderr,
    })
}

/// Whether the program itself ran (as opposed to the launcher failing to
/// start it): it exited on its own with a code other than the launcher's
/// 126/127 ("cannot execute"/"not found", which is what the kernel's ENOENT
/// for a missing dynamic loader becomes), and wrote a line mentioning
/// `mm2-checkpoint` that the launcher or emulator did not write.
fn ran_by_itself(output: &Output, launchers: &[&str]) -> bool {
    let Some(code) = output.status.code() else {
        return false; // killed by a signal
    };
    if code == 126 || code == 127 {
        return false;
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    text.lines().any(|line| {
        line.contains(BINARY)
            && !launchers
                .iter()
                .any(|launcher| line.starts_with(&format!("{launcher}:")))
    })
}

fn describe(output: &Output) -> String {
    format!(
        "{}; stdout: {:?}; stderr: {:?}",
        output.status,
        String::from_utf8_lossy(&output.stdout).trim(),
        String::from_utf8_lossy(&output.stderr).trim()
    )
}

/// `cargo xtask dist-test [--target ...] [--variant ...]`: runs every built
/// artefact inside an empty root directory.
pub fn dist_test(root: &Path, args: &[&str]) -> Result<()> {
    let mut arches = Arch::ALL.to_vec();
    let mut variants = Variant::ALL.to_vec();
    let mut rest = args.iter();
    while let Some(&arg) = rest.next() {
        match arg {
            "--target" => arches = Arch::parse(rest.next().context("`--target` needs a value")?)?,
            "--variant" => {
                variants = Variant::parse(rest.next().context("`--variant` needs a value")?)?
            }
            _ => bail!("unknown argument `{arg}` to `cargo xtask dist-test`"),
        }
    }
    let package = Package::load(root)?;
    // The release directory first: cheap, and needs no cluster.
    super::release::check_release_dir(root, &package)?;
    eprintln!(
        "xtask: {} is complete: each binary's .dep-v0 and SBOM match cargo's resolution, \
         THIRD-PARTY-LICENSES lists every linked crate, SHA256SUMS matches",
        package.dist_dir().display()
    );
    let roots = package.dist_dir().join("test-root");
    let jail = Jail::detect();

    control_dynamic_binary_fails(&roots, &jail)?;
    let clusters = Testbed::up(&crate::kafka::Layout::new(root))?;
    // Control: a seeded round that no binary ran must fail verification.
    let unrun = clusters.prepare("control")?;
    if clusters.verify(&unrun).is_ok() {
        bail!("control: a round no binary ran passed verification, so verification proves nothing");
    }
    eprintln!("xtask: control: a round no binary ran fails verification as expected");

    let mut tested = 0;
    for &variant in &variants {
        for &arch in &arches {
            let binary = package.artefact(arch, variant);
            if !binary.is_file() {
                continue;
            }
            check_static(&binary, arch)?;
            let name = package.artefact_name(arch, variant);
            let dir = roots.join(&name);
            make_root(&dir, &root_files(&binary, arch)?)?;
            let mut launchers = vec![jail.launcher()];
            launchers.extend(arch.emulator());
            let emulation = Emulation::of(arch);

            if let Some(emulation) = emulation {
                // Outside any root first: the emulator itself works.
                let mut cmd = Command::new(emulation.program);
                if let Some(cpu) = emulation.cpu {
                    cmd.args(["-cpu", cpu]);
                }
                let out = cmd
                    .arg(&binary)
                    .arg("--version")
                    .output()
                    .with_context(|| format!("running `{}`", emulation.program))?;
                if !ran_by_itself(&out, &launchers) {
                    bail!(
                        "{name} did not run under{}: {}",
                        Emulation::shown(Some(emulation)),
                        describe(&out)
                    );
                }
            }
            for case in RUN_CASES {
                let out = jail.run(&dir, emulation, case.args)?;
                let ok = if case.must_succeed {
                    out.status.success()
                } else {
                    ran_by_itself(&out, &launchers)
                };
                if !ok {
                    bail!(
                        "{name} `{}` in an empty root ({}): {}",
                        case.args.join(" "),
                        jail.launcher(),
                        describe(&out)
                    );
                }
                eprintln!(
                    "xtask: {name} `{}` ran in an empty root via {}{} as {RUN_AS}: {}",
                    case.args.join(" "),
                    jail.launcher(),
                    Emulation::shown(emulation),
                    out.status
                );
            }
            let test = ArtefactTest {
                clusters: &clusters,
                jail: &jail,
                dir: &dir,
                name: &name,
                arch,
                variant,
            };
            for protocol in Protocol::ALL {
                test.round(protocol, emulation, &[])?;
            }
            match (arch, variant) {
                (Arch::X86_64, _) => cpu_check(&test)?,
                (Arch::Aarch64, Variant::Default) => {
                    test.round(Protocol::Ssl, emulation, &[FORCE_PORTABLE])?;
                    graviola_refused(&test, emulation)?;
                }
                _ => {}
            }
            tested += 1;
        }
    }
    if tested == 0 {
        bail!(
            "no artefacts in {} for the chosen targets and variants: run `cargo xtask dist` first",
            package.dist_dir().display()
        );
    }
    eprintln!("xtask: dist-test passed for {tested} artefact(s)");
    Ok(())
}

/// One artefact under test in its empty root `dir`.
struct ArtefactTest<'a> {
    clusters: &'a Testbed,
    jail: &'a Jail,
    dir: &'a Path,
    name: &'a str,
    arch: Arch,
    variant: Variant,
}

impl ArtefactTest<'_> {
    /// One real `run --once` of the binary over `protocol`, through
    /// `emulation` (whose program must be in the root) with `env`, then a
    /// check from outside that its checkpoints were written and, over TLS,
    /// that the crypto provider it logged is the one [`expected_provider`]
    /// names.
    fn round(
        &self,
        protocol: Protocol,
        emulation: Option<Emulation>,
        env: &[(&str, &str)],
    ) -> Result<()> {
        let name = self.name;
        let label = format!(
            "{}_{}_{}_{}",
            self.arch.name(),
            self.variant.name(),
            protocol.name(),
            emulation.and_then(|e| e.cpu).unwrap_or("")
        );
        let round = self.clusters.prepare(&label)?;
        self.clusters.install(self.dir, &round, protocol)?;
        let args = ["run", "--config", CONFIG_IN_ROOT, "--once"];
        let started = Instant::now();
        let out = self
            .jail
            .run_with(self.dir, emulation, env, &args, RUN_TIMEOUT)?;
        let how = format!(
            "`{}` over {} in an empty root via {}{}{} as {RUN_AS}",
            args.join(" "),
            protocol.name(),
            self.jail.launcher(),
            Emulation::shown(emulation),
            env.iter()
                .map(|(k, v)| format!(" with {k}={v}"))
                .collect::<String>(),
        );
        if !out.status.success() {
            bail!("{name} {how}: {}", describe(&out));
        }
        self.clusters
            .verify(&round)
            .with_context(|| format!("{name} {how} exited 0, but"))?;
        let provider = if protocol.uses_tls() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let logged = logged_provider(&stderr)
                .with_context(|| format!("{name} {how} logged no TLS provider: {stderr}"))?;
            let expected = expected_provider(self.variant);
            if logged != expected {
                bail!("{name} {how} ran the `{logged}` TLS provider, expected `{expected}`");
            }
            match provider_reason(&stderr) {
                Some(reason) => format!(", TLS provider {logged} ({reason})"),
                None => format!(", TLS provider {logged}"),
            }
        } else {
            String::new()
        };
        eprintln!(
            "xtask: {name} {how}: exit 0 in {:.1}s, checkpoints for {} verified on the target{provider}",
            started.elapsed().as_secs_f64(),
            round.group
        );
        Ok(())
    }
}

/// The reason the binary logged for its choice of TLS provider (its
/// `TLS crypto provider:` line, from the message on).
fn provider_reason(log: &str) -> Option<&str> {
    log.lines().find_map(|line| {
        line.split_once("TLS crypto provider: ")
            .map(|(_, rest)| rest.trim())
    })
}

/// The value of the first `tls_provider=` field in the binary's log (its
/// start-up line), without quotes.
fn logged_provider(log: &str) -> Option<String> {
    log.lines().find_map(|line| {
        let (_, rest) = line.split_once("tls_provider=")?;
        let value = rest.split_whitespace().next()?.trim_matches('"');
        (!value.is_empty()).then(|| value.to_owned())
    })
}

/// The environment variable that forces the TLS provider, and its value
/// for the portable one (docs/deploy.md).
const FORCE_PORTABLE: (&str, &str) = ("MM2_TLS_PROVIDER", "portable");

/// The TLS provider a build of `variant` must choose, on every CPU and
/// whether or not `MM2_TLS_PROVIDER=portable` forces it: ring in a ring
/// build, else the portable provider (graviola is an opt-in cargo feature
/// that no artefact has; docs/tls-providers.md).
fn expected_provider(variant: Variant) -> &'static str {
    match variant {
        Variant::Ring => "ring",
        Variant::Default => "portable",
    }
}

/// How long the image's daemon may take to answer `/readyz` with 200, and
/// then to write its first checkpoints.
const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// How long the daemon gets to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the value after `flag` is in `argv`.
fn flag_value(argv: &[String], flag: &str) -> Option<usize> {
    let at = argv.iter().position(|a| a == flag)? + 1;
    (at < argv.len()).then_some(at)
}

/// Runs an image's own `argv` (its OCI `Entrypoint` followed by its `Cmd`) in
/// `rootfs`, the unpacked image, as [`RUN_AS`] against the test clusters (of
/// `$MM2_CLUSTERS_FILE`, or this worktree's, started if needed). A freshly
/// seeded round's config is written to the path the arguments give after
/// `--config`. The daemon must answer `/readyz` with 200 on the address
/// given after `--metrics-addr` and then write the round's checkpoints; it
/// is stopped with SIGTERM afterwards. If that port is already taken on this
/// machine, a free one is put in its place (and said). Its output goes to
/// `log`.
pub fn image_ready(workspace: &Path, rootfs: &Path, argv: &[String], log: &Path) -> Result<()> {
    let shown = argv.join(" ");
    let config = flag_value(argv, "--config")
        .map(|at| argv[at].clone())
        .with_context(|| format!("the image's arguments `{shown}` give no --config"))?;
    let metrics_at = flag_value(argv, "--metrics-addr").with_context(|| {
        format!(
            "the image's arguments `{shown}` give no --metrics-addr: nothing would answer \
             the probes"
        )
    })?;
    let metrics = &argv[metrics_at];
    let wanted: std::net::SocketAddr = metrics
        .parse()
        .with_context(|| format!("--metrics-addr {metrics:?} in the image's arguments"))?;
    let mut argv = argv.to_vec();
    // `[::]` on a host without IPv6: the daemon listens on every IPv4
    // address instead (docs/operations.md, "HTTP endpoint"), so the port is
    // checked there.
    let no_ipv6 = wanted.is_ipv6()
        && wanted.ip().is_unspecified()
        && std::net::TcpListener::bind((std::net::Ipv6Addr::UNSPECIFIED, 0)).is_err();
    let check = match no_ipv6 {
        true => std::net::SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), wanted.port()),
        false => wanted,
    };
    let port = match std::net::TcpListener::bind(check) {
        Ok(_) => wanted.port(),
        Err(e) => {
            let free = std::net::TcpListener::bind((check.ip(), 0))?
                .local_addr()?
                .port();
            argv[metrics_at] = std::net::SocketAddr::new(wanted.ip(), free).to_string();
            eprintln!(
                "xtask: {wanted} is taken on this machine ({e}); the image's daemon gets {} instead",
                argv[metrics_at]
            );
            free
        }
    };
    let host = if wanted.ip().is_unspecified() {
        "127.0.0.1".to_owned()
    } else {
        wanted.ip().to_string()
    };
    let probe_addr = std::net::SocketAddr::new(host.parse()?, port).to_string();

    let clusters = Testbed::up(&crate::kafka::Layout::new(workspace))?;
    let round = clusters.prepare("image")?;
    clusters.install_at(rootfs, &config, &round, Protocol::Plaintext)?;
    let jail = Jail::detect();
    let mut cmd = jail.command(rootfs, &argv)?;
    let out = fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    cmd.stdout(out.try_clone()?).stderr(out);
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting `{}` in {}", argv.join(" "), rootfs.display()))?;
    let how = format!(
        "the image's `{}` in its unpacked rootfs via {} as {RUN_AS}",
        argv.join(" "),
        jail.launcher()
    );
    let log_text = || fs::read_to_string(log).unwrap_or_default();

    let result = (|| -> Result<(Duration, Duration)> {
        let ready = loop {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "{how} exited ({status}) before /readyz answered 200: {}",
                    log_text()
                );
            }
            if crate::probe::http_status(&probe_addr, "/readyz") == Some(200) {
                break started.elapsed();
            }
            if started.elapsed() > READY_TIMEOUT {
                bail!(
                    "{how}: /readyz on {probe_addr} did not answer 200 within {}s \
                     (last: {:?}): {}",
                    READY_TIMEOUT.as_secs(),
                    crate::probe::http_get(&probe_addr, "/readyz"),
                    log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let checkpoints = loop {
            match clusters.verify(&round) {
                Ok(()) => break started.elapsed(),
                Err(e) if started.elapsed() > ready + READY_TIMEOUT => {
                    return Err(e.context(format!("{how} was ready, but")));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(500)),
            }
        };
        Ok((ready, checkpoints))
    })();

    // Stop it whatever happened: SIGTERM, then SIGKILL.
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let stop = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if stop.elapsed() > STOP_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (ready, checkpoints) = result?;
    eprintln!(
        "xtask: {how}: /readyz 200 on {probe_addr} after {:.1}s, checkpoints for {} verified \
         after {:.1}s; {}",
        ready.as_secs_f64(),
        round.group,
        checkpoints.as_secs_f64(),
        match status {
            Some(status) => format!("after SIGTERM: {status}"),
            None => format!(
                "still running {}s after SIGTERM; killed",
                STOP_TIMEOUT.as_secs()
            ),
        }
    );
    Ok(())
}

/// The x86_64 emulator, used to run x86_64 binaries on an older CPU model.
const QEMU_X86_64: &str = "qemu-x86_64-static";

/// A CPU model without AES-NI, PCLMULQDQ, BMI1, ADX, AVX and AVX2: graviola
/// cannot run, the portable provider must (with ChaCha20-Poly1305 first).
const OLD_CPU: &str = "Nehalem";

/// qemu's model with every feature it emulates (AVX2 and ADX included).
const FULL_CPU: &str = "max";

/// x86_64 on an emulated CPU without AES-NI and AVX ([`OLD_CPU`]) and on
/// one with every feature ([`FULL_CPU`]), whatever this machine's CPU is:
/// the default build completes its TLS rounds on both with the portable
/// provider (ChaCha20-Poly1305 offered first on the old one) and refuses a
/// forced graviola, which it does not have; the ring build completes the TLS
/// rounds on the old CPU with ring.
fn cpu_check(test: &ArtefactTest<'_>) -> Result<()> {
    let Some(qemu) = which(QEMU_X86_64) else {
        bail!(
            "`{QEMU_X86_64}` is needed for the CPU check (Debian: apt-get install qemu-user-static)"
        );
    };
    let dest = test.dir.join(QEMU_X86_64);
    fs::copy(&qemu, &dest).with_context(|| format!("copying {}", qemu.display()))?;
    fs::set_permissions(&dest, fs::Permissions::from_mode(0o755))?;
    let on = |cpu| {
        Some(Emulation {
            program: QEMU_X86_64,
            cpu: Some(cpu),
        })
    };
    let old = on(OLD_CPU);
    for protocol in Protocol::TLS {
        test.round(protocol, old, &[])?;
    }
    if test.variant == Variant::Default {
        graviola_refused(test, old)?;
        test.round(Protocol::Ssl, on(FULL_CPU), &[])?;
    }
    Ok(())
}

/// The default build has no graviola provider: forcing it must exit 2
/// before any network I/O, saying so and naming the alternatives.
fn graviola_refused(test: &ArtefactTest<'_>, emulation: Option<Emulation>) -> Result<()> {
    let name = test.name;
    let round = test
        .clusters
        .prepare(&format!("{}_forced_graviola", test.arch.name()))?;
    test.clusters.install(test.dir, &round, Protocol::Ssl)?;
    let args = ["run", "--config", CONFIG_IN_ROOT, "--once"];
    let force = [(FORCE_PORTABLE.0, "graviola")];
    let out = test
        .jail
        .run_with(test.dir, emulation, &force, &args, RUN_TIMEOUT)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Exit 2 is the binary's own (launchers fail with 126/127, the
    // emulator with 1 or a signal), and so is the message.
    if out.status.code() != Some(2)
        || !stderr.contains("=graviola, but this build")
        || !stderr.contains("has no graviola provider")
        || !stderr.contains("portable")
    {
        bail!(
            "{name} with a TLS config and {}=graviola must exit 2 saying the build has no \
             graviola provider: {}",
            FORCE_PORTABLE.0,
            describe(&out)
        );
    }
    eprintln!(
        "xtask: {name} `{}` over SSL{} with {}=graviola: {} with {:?}",
        args.join(" "),
        Emulation::shown(emulation),
        FORCE_PORTABLE.0,
        out.status,
        stderr.trim()
    );
    Ok(())
}

/// The test's negative control: the host's own dynamically linked `true`,
/// put where the binary would be, must NOT run in an empty root. This proves
/// the empty-root runs above would catch a dynamic binary.
fn control_dynamic_binary_fails(roots: &Path, jail: &Jail) -> Result<()> {
    let dynamic = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .context("no /usr/bin/true for the negative control")?;
    if !has_interp(&tool_output("readelf", &["-lW"], &dynamic)?) {
        eprintln!(
            "xtask: {} is static on this machine; skipping the negative control",
            dynamic.display()
        );
        return Ok(());
    }
    let dir = roots.join("control-dynamic");
    make_root(
        &dir,
        &[RootFile {
            source: dynamic.clone(),
            dest: BINARY.to_owned(),
            mode: 0o755,
        }],
    )?;
    let out = jail.run(&dir, None, &["--version"])?;
    if out.status.success() || ran_by_itself(&out, &[jail.launcher()]) {
        bail!(
            "negative control: the dynamically linked {} ran in an empty root, so the \
             empty-root test proves nothing: {}",
            dynamic.display(),
            describe(&out)
        );
    }
    eprintln!(
        "xtask: negative control: dynamically linked {} fails in an empty root as expected ({})",
        dynamic.display(),
        out.status
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(code: i32, stdout: &str, stderr: &str) -> Output {
        use std::os::unix::process::ExitStatusExt;
        Output {
            status: std::process::ExitStatus::from_raw(code << 8),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        }
    }

    #[test]
    fn flag_values_are_found_after_their_flag() {
        let argv: Vec<String> = ["/mm2-checkpoint", "run", "--config", "/c", "--metrics-addr"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(flag_value(&argv, "--config"), Some(3));
        assert_eq!(flag_value(&argv, "--metrics-addr"), None);
        assert_eq!(flag_value(&argv, "--once"), None);
    }

    #[test]
    fn the_provider_and_its_reason_are_read_from_the_log() {
        let log = "2026-12-04T21:55:34Z  INFO mm2_checkpoint: mm2-checkpoint starting \
                   version=\"0.1.0\" tls_provider=\"portable\" flows=a->b\n\
                   2026-12-04T21:55:34Z  INFO mm2_checkpoint: TLS crypto provider: portable \
                   tls_provider=\"portable\" reason=the x86_64 CPU lacks avx2\n";
        assert_eq!(logged_provider(log).as_deref(), Some("portable"));
        assert!(provider_reason(log).unwrap().starts_with("portable"));
        assert_eq!(logged_provider("no provider here\n"), None);
    }

    #[test]
    fn the_expected_provider_follows_the_build() {
        assert_eq!(expected_provider(Variant::Default), "portable");
        assert_eq!(expected_provider(Variant::Ring), "ring");
    }

    #[test]
    fn a_launcher_failure_is_not_a_run() {
        let out = output(
            127,
            "",
            "chroot: failed to run command '/mm2-checkpoint': No such file or directory\n",
        );
        assert!(!ran_by_itself(&out, &["chroot"]));
    }

    #[test]
    fn an_emulator_error_is_not_a_run() {
        let out = output(
            255,
            "",
            "qemu-aarch64-static: /mm2-checkpoint: Could not open '/lib/ld-linux-aarch64.so.1'\n",
        );
        assert!(!ran_by_itself(&out, &["chroot", "qemu-aarch64-static"]));
    }

    #[test]
    fn the_program_speaking_for_itself_is_a_run_whatever_its_exit_code() {
        let placeholder = output(2, "", "mm2-checkpoint: the daemon is not built yet\n");
        let version = output(0, "mm2-checkpoint 0.1.0\n", "");
        assert!(ran_by_itself(&placeholder, &["chroot"]));
        assert!(ran_by_itself(&version, &["chroot"]));
    }
}
