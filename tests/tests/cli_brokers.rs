//! The binary's operator-facing behaviour against the real test clusters:
//! SIGTERM while it talks to brokers, and the errors for a TLS client on a
//! plaintext listener and the reverse (issue 15).

use e2e::binary::{Daemon, SIGTERM_BOUND};
use e2e::world::{World, rt};
use e2e::{Listener, clusters};

fn bin() -> std::process::Command {
    let mut cmd = std::process::Command::new(e2e::binary::mm2_checkpoint());
    cmd.env_remove("MM2_LOG");
    cmd
}

/// SIGTERM while the daemon starts against reachable clusters (creating the
/// checkpoints topic, reading the internal topics), and again once it emits:
/// exit 0 within the bound each time.
#[test]
fn sigterm_during_startup_and_while_emitting_ends_the_daemon_with_0() {
    let rt = rt();
    let w = World::new(&rt, "sigterm", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let config = w.properties(&group, "");
    let config = config.to_str().expect("utf-8 path");
    for phase in ["mm2-checkpoint starting", "emission round done"] {
        let mut daemon = Daemon::spawn(bin().args(["run", config]));
        daemon.wait_for(phase);
        let (code, took, stderr) = daemon.terminate();
        eprintln!("SIGTERM to exit after `{phase}`: {took:?}");
        assert_eq!(code, Some(0), "{phase}: {stderr}");
        assert!(took < SIGTERM_BOUND, "{phase}: took {took:?}");
    }
}

/// An mm2.properties whose flow A->B targets `bootstrap` with `target_tls`
/// lines for B; translate only talks to the target.
fn translate_against(dir: &std::path::Path, bootstrap: &str, target_tls: &str) -> String {
    let path = dir.join("mm2.properties");
    std::fs::write(
        &path,
        format!(
            "clusters = A, B\nA.bootstrap.servers = {bootstrap}\nB.bootstrap.servers = {bootstrap}\n\
             A->B.enabled = true\nadmin.timeout.ms = 3000\n{target_tls}\n"
        ),
    )
    .expect("write mm2.properties");
    let out = bin()
        .args([
            "translate",
            path.to_str().expect("utf-8 path"),
            "--flow",
            "A->B",
            "--group",
            "g",
        ])
        .output()
        .expect("run translate");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    stderr
}

fn test_dir(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(e2e::unique_name(name));
    std::fs::create_dir_all(&dir).expect("test dir");
    dir
}

/// A plaintext client on the TLS listener reads the TLS record header as a
/// frame length: the error says these bytes look like TLS.
#[test]
fn plaintext_client_on_a_tls_listener_is_told_to_configure_tls() {
    let ssl = clusters().target().bootstrap.get(Listener::Ssl).to_string();
    let stderr = translate_against(&test_dir("plain-on-tls"), &ssl, "");
    assert!(
        stderr.contains(&format!("broker {ssl} sent a frame of"))
            && stderr.contains("these bytes look like TLS: is this an SSL listener? configure TLS"),
        "{stderr}"
    );
}

/// A TLS client on the plaintext listener: the broker closes the handshake,
/// and the error says a plaintext listener does that.
#[test]
fn tls_client_on_a_plaintext_listener_is_told_it_may_be_plaintext() {
    let c = clusters().target();
    let plain = c.bootstrap.get(Listener::Plaintext).to_string();
    let tls = format!(
        "B.security.protocol = SSL\nB.ssl.truststore.type = PEM\nB.ssl.truststore.location = {}",
        c.tls.ca_pem.display()
    );
    let stderr = translate_against(&test_dir("tls-on-plain"), &plain, &tls);
    assert!(
        stderr.contains(&format!("TLS error with broker {plain}"))
            && stderr.contains("A plaintext Kafka listener closes a TLS handshake like this"),
        "{stderr}"
    );
    // Not retried: it cannot get better (and the deadline is not waited out).
    assert!(!stderr.contains("cannot reach cluster"), "{stderr}");
}
