//! The system tools the test clusters and the tests need — a JDK 17+, Maven,
//! openssl, and Prometheus (`prometheus` and `promtool`, for the monitoring
//! tests of `deploy/monitoring/`) — checked before `kafka up` and, when
//! missing, installed with Debian's `apt-get` (directly as root, else through
//! `sudo`), so that `cargo xtask test` and `cargo xtask demo` set up a fresh
//! machine by themselves.
//!
//! `cargo xtask dist` also installs, the same way, the foreign-architecture
//! Debian libraries it links the 32-bit ARM build against
//! ([`ensure_debian_libraries`]).
//!
//! `MM2_NO_INSTALL=1` turns the installing off: the check then fails with the
//! list of packages to install by hand.

use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// Set to `1` to never install anything.
const NO_INSTALL_ENV: &str = "MM2_NO_INSTALL";

/// One tool: how to tell it is usable, and the Debian package that provides it.
struct Tool {
    what: &'static str,
    package: &'static str,
    usable: fn() -> bool,
}

const CLUSTER_TOOLS: &[Tool] = &[
    Tool {
        what: "a JDK 17 or newer (`java`)",
        package: "openjdk-17-jdk-headless",
        usable: java_usable,
    },
    Tool {
        what: "Maven (`mvn`)",
        package: "maven",
        usable: || runs("mvn", &["--version"]),
    },
    Tool {
        what: "openssl",
        package: "openssl",
        usable: || runs("openssl", &["version"]),
    },
    Tool {
        what: "Prometheus (`prometheus` and `promtool`, for the monitoring tests)",
        package: "prometheus",
        usable: || runs("prometheus", &["--version"]) && runs("promtool", &["--version"]),
    },
];

/// Makes sure `java`, `mvn`, `openssl`, `prometheus` and `promtool` are
/// there, installing the missing ones with apt-get unless `MM2_NO_INSTALL=1`.
pub fn ensure_cluster_tools() -> Result<()> {
    let missing: Vec<&Tool> = CLUSTER_TOOLS.iter().filter(|t| !(t.usable)()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let packages: Vec<&str> = missing.iter().map(|t| t.package).collect();
    let names: Vec<&str> = missing.iter().map(|t| t.what).collect();
    let by_hand = format!("apt-get install {}", packages.join(" "));
    if std::env::var(NO_INSTALL_ENV).is_ok_and(|v| v == "1") {
        bail!(
            "the test clusters and tests need {} ({NO_INSTALL_ENV}=1, so not installing): run `{by_hand}`",
            names.join(", ")
        );
    }
    if !runs("apt-get", &["--version"]) {
        bail!(
            "the test clusters and tests need {}, and this machine has no apt-get to install \
             them; install the equivalent of `{by_hand}`",
            names.join(", ")
        );
    }
    let sudo: &[&str] = if is_root() { &[] } else { &["sudo"] };
    eprintln!(
        "xtask: installing {} for the test clusters and tests ({}apt-get install {})",
        names.join(", "),
        sudo.iter().map(|s| format!("{s} ")).collect::<String>(),
        packages.join(" ")
    );
    let stale = apt_update(sudo);
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend(&packages);
    apt_install(sudo, &install, stale)?;
    let still: Vec<&str> = missing
        .iter()
        .filter(|t| !(t.usable)())
        .map(|t| t.what)
        .collect();
    if !still.is_empty() {
        bail!("after `{by_hand}`, still not usable: {}", still.join(", "));
    }
    Ok(())
}

/// Makes sure the foreign-architecture Debian library packages `packages`
/// (`name:arch`, for example `musl-dev:armhf`) are installed once `present`
/// says they are not: adds each architecture with `dpkg --add-architecture`,
/// then `apt-get update` and `apt-get install`, unless `MM2_NO_INSTALL=1`.
/// `cargo xtask dist` links the targets without a prebuilt Rust standard
/// library against them.
pub fn ensure_debian_libraries(packages: &[String], present: impl Fn() -> bool) -> Result<()> {
    if packages.is_empty() || present() {
        return Ok(());
    }
    let by_hand = format!("apt-get install {}", packages.join(" "));
    if std::env::var(NO_INSTALL_ENV).is_ok_and(|v| v == "1") {
        bail!(
            "the static build links against {} ({NO_INSTALL_ENV}=1, so not installing): run \
             `dpkg --add-architecture ARCH`, `apt-get update` and `{by_hand}`",
            packages.join(", ")
        );
    }
    if !runs("dpkg", &["--version"]) || !runs("apt-get", &["--version"]) {
        bail!(
            "the static build links against {}, and this machine has no dpkg/apt-get to \
             install them; install the equivalent of `{by_hand}`",
            packages.join(", ")
        );
    }
    let sudo: &[&str] = if is_root() { &[] } else { &["sudo"] };
    let mut arches: Vec<&str> = packages
        .iter()
        .filter_map(|p| p.split_once(':').map(|(_, arch)| arch))
        .collect();
    arches.dedup();
    for arch in arches {
        let mut argv: Vec<&str> = sudo.to_vec();
        argv.extend(["dpkg", "--add-architecture", arch]);
        eprintln!("xtask: {}", argv.join(" "));
        let status = Command::new(argv[0])
            .args(&argv[1..])
            .status()
            .with_context(|| format!("running `{}`", argv.join(" ")))?;
        if !status.success() {
            bail!("`{}` failed ({status})", argv.join(" "));
        }
    }
    eprintln!(
        "xtask: installing {} for the static build",
        packages.join(" ")
    );
    let stale = apt_update(sudo);
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend(packages.iter().map(String::as_str));
    apt_install(sudo, &install, stale)?;
    if !present() {
        bail!("after `{by_hand}`, the libraries the static build needs are still missing");
    }
    Ok(())
}

/// Times `apt-get update` is tried before going on without it.
const APT_UPDATE_TRIES: u32 = 3;

/// `apt-get update`, tried again after a pause when it fails (a Debian
/// mirror mid-sync serves an index of the wrong size for a while). If every
/// try fails, the error is returned for [`apt_install`] to report: the
/// install goes on with the package lists apt-get did fetch, which often
/// hold the packages wanted.
fn apt_update(sudo: &[&str]) -> Option<anyhow::Error> {
    let mut last = None;
    for attempt in 1..=APT_UPDATE_TRIES {
        match apt(sudo, &["update"]) {
            Ok(()) => return None,
            Err(e) => {
                eprintln!("xtask: {e:#} (try {attempt} of {APT_UPDATE_TRIES})");
                last = Some(e);
                if attempt < APT_UPDATE_TRIES {
                    std::thread::sleep(std::time::Duration::from_secs(15));
                }
            }
        }
    }
    if let Some(e) = &last {
        eprintln!("xtask: going on with the package lists apt-get has: {e:#}");
    }
    last
}

/// `apt-get install ...`; a failure names the failed update too, if any.
fn apt_install(sudo: &[&str], args: &[&str], stale: Option<anyhow::Error>) -> Result<()> {
    let r = apt(sudo, args);
    match stale {
        Some(update) => r.with_context(|| format!("the package lists may be stale: {update:#}")),
        None => r,
    }
}

fn apt(sudo: &[&str], args: &[&str]) -> Result<()> {
    let mut argv: Vec<&str> = sudo.to_vec();
    argv.push("apt-get");
    argv.extend(args);
    let status = Command::new(argv[0])
        .args(&argv[1..])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .with_context(|| format!("running `{}`", argv.join(" ")))?;
    if !status.success() {
        bail!("`{}` failed ({status})", argv.join(" "));
    }
    Ok(())
}

/// True if `program args` starts and exits successfully.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn java_usable() -> bool {
    let Ok(out) = Command::new("java").arg("-version").output() else {
        return false;
    };
    // `java -version` prints to stderr.
    let text = String::from_utf8_lossy(&out.stderr);
    out.status.success() && java_major(&text).is_some_and(|major| major >= 17)
}

/// The major version in `java -version` output: `"17.0.15"` → 17,
/// `"1.8.0_392"` → 8, `"21"` → 21.
fn java_major(version_output: &str) -> Option<u32> {
    let quoted = version_output.split('"').nth(1)?;
    let mut parts = quoted.split(['.', '_', '-', '+']);
    let first: u32 = parts.next()?.parse().ok()?;
    if first == 1 {
        parts.next()?.parse().ok()
    } else {
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::java_major;

    #[test]
    fn java_major_versions_are_read_from_every_version_scheme() {
        for (output, major) in [
            (
                "openjdk version \"17.0.15\" 2025-04-15\nOpenJDK Runtime",
                Some(17),
            ),
            ("java version \"1.8.0_392\"\nJava(TM) SE", Some(8)),
            ("openjdk version \"21\" 2023-09-19", Some(21)),
            ("openjdk version \"25-ea\" 2025-09-16", Some(25)),
            ("no version here", None),
            ("openjdk version \"x.y\"", None),
        ] {
            assert_eq!(java_major(output), major, "{output:?}");
        }
    }
}
