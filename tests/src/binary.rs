//! The `mm2-checkpoint` binary for the tests that run it: found in the target
//! directory the running test executable was built in, built there once per
//! test process, and run as a child (once, or as a daemon whose log lines a
//! test waits for).
//!
//! Cargo hands `CARGO_BIN_EXE_<name>` only to a package's own integration
//! tests, so this crate locates the binary itself (docs/testing.md).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

/// The `mm2-checkpoint` binary of this build, up to date with its sources.
///
/// A test executable lives at `<target>/[<triple>/]<profile-dir>/deps/<name>`;
/// the binary is `<target>/[<triple>/]<profile-dir>/mm2-checkpoint`, so the
/// target directory (`CARGO_TARGET_DIR` or not), the triple and the profile are
/// those of the running test. A workspace run (`cargo xtask test`) has cargo
/// build it already, for the crate's own tests; when it is missing or older
/// than any of its sources ([`SOURCES`]), the first call in a process runs
/// `$CARGO build -p mm2-checkpoint --bin mm2-checkpoint` for that target
/// directory, triple and profile, and cargo's lock on the build directory
/// makes concurrent test processes wait for one another.
///
/// # Panics
///
/// If the test executable's path has no such shape or the build fails.
pub fn mm2_checkpoint() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let layout = BuildLayout::of_current_exe();
        let bin = layout
            .profile_dir
            .join(format!("mm2-checkpoint{}", std::env::consts::EXE_SUFFIX));
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let built = std::fs::metadata(&bin).and_then(|m| m.modified()).ok();
        let newest = SOURCES
            .iter()
            .filter_map(|source| newest_modification(&workspace.join(source)))
            .max();
        if built.is_none() || newest > built {
            layout.build(&workspace);
        }
        assert!(
            bin.is_file(),
            "cargo built mm2-checkpoint but {} is missing",
            bin.display()
        );
        bin
    })
}

/// What the binary is built from, relative to the workspace root: the
/// workspace manifest and lock file, the three crates it is made of (sources,
/// manifests, the build script, and the fuzz regressions kafka-lite embeds)
/// and the vendored crates.
pub const SOURCES: [&str; 10] = [
    "Cargo.toml",
    "Cargo.lock",
    "crates/mm2-checkpoint/Cargo.toml",
    "crates/mm2-checkpoint/build.rs",
    "crates/mm2-checkpoint/src",
    "crates/mm2-checkpoint-core",
    "crates/kafka-lite/Cargo.toml",
    "crates/kafka-lite/src",
    "crates/kafka-lite/fuzz/regressions",
    "vendor",
];

/// The latest modification time of `path` or, for a directory, of anything
/// below it; `None` if it does not exist.
fn newest_modification(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    let own = meta.modified().ok();
    if !meta.is_dir() {
        return own;
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| newest_modification(&entry.path()))
        .chain(own)
        .max()
}

/// The directory cargo names `CARGO_TARGET_TMPDIR` to integration tests,
/// `<target>/tmp`, for this crate's library: scratch space that outlives the
/// test, under the running test executable's target directory.
pub fn target_tmp_dir() -> PathBuf {
    BuildLayout::of_current_exe().target_dir.join("tmp")
}

/// Where the running test executable was built.
#[derive(Debug, PartialEq, Eq)]
struct BuildLayout {
    /// The target directory (holds `CACHEDIR.TAG`).
    target_dir: PathBuf,
    /// `--target <triple>` if the build was a cross build.
    triple: Option<String>,
    /// `<target>/[<triple>/]<profile-dir>`.
    profile_dir: PathBuf,
    /// The cargo profile whose output directory that is.
    profile: String,
}

impl BuildLayout {
    fn of_current_exe() -> BuildLayout {
        let exe = std::env::current_exe().expect("the test executable's path");
        BuildLayout::of(&exe)
            .unwrap_or_else(|| panic!("{} is not in <target>/<profile>/deps/", exe.display()))
    }

    /// The layout of the test executable `exe`, if it sits in a `deps/`
    /// directory of a cargo target directory.
    fn of(exe: &Path) -> Option<BuildLayout> {
        let deps = exe.parent()?;
        if deps.file_name()? != "deps" {
            return None;
        }
        let profile_dir = deps.parent()?.to_path_buf();
        let dir_name = profile_dir.file_name()?.to_str()?;
        // `debug` holds the dev and test profiles (cargo test builds with
        // `test`), `release` the release and bench profiles; a custom profile
        // has a directory of its own name.
        let profile = match dir_name {
            "debug" => "test",
            other => other,
        }
        .to_string();
        let above = profile_dir.parent()?;
        let (target_dir, triple) = if above.join("CACHEDIR.TAG").is_file() {
            (above.to_path_buf(), None)
        } else {
            let triple = above.file_name()?.to_str()?.to_string();
            (above.parent()?.to_path_buf(), Some(triple))
        };
        Some(BuildLayout {
            target_dir,
            triple,
            profile_dir,
            profile,
        })
    }

    /// Runs `$CARGO build` for the binary of the workspace at `workspace`
    /// into this layout; panics with cargo's output if it fails.
    fn build(&self, workspace: &Path) {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let manifest = workspace.join("Cargo.toml");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "mm2-checkpoint", "--bin", "mm2-checkpoint"])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&self.target_dir)
            .args(["--profile", &self.profile]);
        if let Some(triple) = &self.triple {
            cmd.args(["--target", triple]);
        }
        let out = cmd.output().expect("run cargo to build mm2-checkpoint");
        assert!(
            out.status.success(),
            "building mm2-checkpoint failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Runs the binary with `args`, failing the test after `timeout`.
pub fn mm2(args: &[&str], timeout: Duration) -> Output {
    mm2_with_env(args, &[], timeout)
}

/// [`mm2`] with the environment variables `env` set for the child.
pub fn mm2_with_env(args: &[&str], env: &[(&str, &str)], timeout: Duration) -> Output {
    let mut child = Command::new(mm2_checkpoint())
        .args(args)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mm2-checkpoint");
    let started = std::time::Instant::now();
    loop {
        if let Some(_status) = child.try_wait().expect("wait") {
            return child.wait_with_output().expect("output");
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "mm2-checkpoint {args:?} did not finish in {timeout:?}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `run --once` with `config`; asserts exit 0.
pub fn run_once(config: &std::path::Path) -> Output {
    run_once_with_env(config, &[])
}

/// [`run_once`] with the environment variables `env` set for the child.
pub fn run_once_with_env(config: &std::path::Path, env: &[(&str, &str)]) -> Output {
    let out = mm2_with_env(
        &[
            "run",
            "--once",
            "--config",
            config.to_str().expect("utf-8 path"),
        ],
        env,
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "run --once failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The bound the SIGTERM tests assert; the goal of 1 s is measured (and
/// printed with `--nocapture`), not asserted.
pub const SIGTERM_BOUND: Duration = Duration::from_secs(5);

/// A child whose stderr lines are collected by a thread, so a test can wait
/// for a line and then signal the process.
pub struct Daemon {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Daemon {
    /// Spawns `cmd` (stdout discarded, stderr collected line by line).
    pub fn spawn(cmd: &mut Command) -> Daemon {
        use std::io::BufRead;
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn mm2-checkpoint");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Daemon {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (at most 60 s) for a stderr line containing `text`.
    pub fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = self.child.kill();
        panic!("no line with `{text}`:\n{}", self.seen.join("\n"));
    }

    /// Sends the signal named `name` (`HUP`, `TERM`, ...) without waiting.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name}");
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("wait").is_none()
    }

    /// Sends SIGTERM and waits for the exit: (code, time from signal to exit,
    /// the rest of stderr).
    pub fn terminate(mut self) -> (Option<i32>, Duration, String) {
        let pid = self.child.id().to_string();
        let sent = Instant::now();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(status.success());
        let code = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status.code();
            }
            if sent.elapsed() > Duration::from_secs(30) {
                let _ = self.child.kill();
                panic!("still running 30 s after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let took = sent.elapsed();
        // The reader thread ends with the pipe.
        let rest: Vec<String> = self.lines.iter().collect();
        self.seen.extend(rest);
        (code, took, self.seen.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::BuildLayout;
    use std::path::Path;

    #[test]
    fn the_layout_follows_the_test_executable() {
        let root = std::env::temp_dir().join(format!("e2e-layout-{}", std::process::id()));
        std::fs::create_dir_all(root.join("x86_64-unknown-linux-musl")).expect("dirs");
        std::fs::write(root.join("CACHEDIR.TAG"), "").expect("tag");
        let plain = BuildLayout::of(&root.join("debug/deps/daemon_once-0123")).expect("plain");
        assert_eq!(plain.target_dir, root);
        assert_eq!(plain.profile, "test");
        assert_eq!(plain.triple, None);
        assert_eq!(plain.profile_dir, root.join("debug"));
        let cross = BuildLayout::of(&root.join("x86_64-unknown-linux-musl/release/deps/t-1"))
            .expect("cross");
        assert_eq!(cross.target_dir, root);
        assert_eq!(cross.profile, "release");
        assert_eq!(cross.triple.as_deref(), Some("x86_64-unknown-linux-musl"));
        assert_eq!(BuildLayout::of(Path::new("/usr/bin/true")), None);
        let _ = std::fs::remove_dir_all(&root);
    }
}
