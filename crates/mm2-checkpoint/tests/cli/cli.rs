//! Black-box tests of the `mm2-checkpoint` binary: arguments, exit codes and
//! what it prints, by subject in this directory's modules. None of them needs
//! a broker (those that do are in tests/tests/cli_brokers.rs).

mod commands;
mod config_errors;
mod daemon;
mod validate;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use e2e::scratch::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_mm2-checkpoint");

/// A throwaway self-signed certificate (the same one the config tests use).
const TEST_CERT: &str = include_str!("../data/test_cert.pem");

const PRIMARY_PASSWORD: &str = "pw-primary-Zq81";
const BACKUP_PASSWORD: &str = "pw-backup-Kx42";

fn mm2(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("MM2_LOG")
        .env_remove("MM2_LOG_FORMAT")
        .env_remove("MM2_TLS_PROVIDER")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC");
    cmd
}

fn run(cmd: &mut Command) -> (Option<i32>, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run mm2-checkpoint");
    (
        status.code(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// docs/examples/mm2.properties with its /etc paths moved into `dir`, plus the
/// CA and secrets files it refers to.
fn example_config(dir: &TempDir) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/mm2.properties");
    let text = std::fs::read_to_string(example).expect("read the example config");
    let ca = dir.write("ca.pem", TEST_CERT);
    dir.write(
        "secrets.properties",
        &format!("backup.password = {BACKUP_PASSWORD}\n"),
    );
    let root = dir.0.display().to_string();
    let text = text
        .replace("/etc/kafka/ca.pem", &ca.display().to_string())
        .replace("/etc/mm2", &root);
    dir.write("mm2.properties", &text)
}

/// A minimal valid config, with `extra` lines appended.
fn config_with(dir: &TempDir, extra: &str) -> PathBuf {
    dir.write(
        "mm2.properties",
        &format!(
            "clusters = A, B\n\
             A.bootstrap.servers = 127.0.0.1:1\n\
             B.bootstrap.servers = 127.0.0.1:1\n\
             A->B.enabled = true\n\
             {extra}\n"
        ),
    )
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}
