//! The daemon with no broker to reach: its JSON log lines, a metrics address
//! in use, SIGTERM and SIGHUP, retries against refused and silent ports or
//! an HTTP server, closed pipes, and systemd's notifications.

use super::*;
use e2e::binary::SIGTERM_BOUND;

#[test]
fn run_logs_json_lines_and_warns_when_host_names_are_not_verified() {
    let dir = TempDir::new("cli", "run-json");
    let ca = dir.write("ca.pem", TEST_CERT);
    let config = config_with(
        &dir,
        &format!(
            "A.security.protocol = SSL\n\
             A.ssl.truststore.type = PEM\n\
             A.ssl.truststore.location = {}\n\
             A.ssl.endpoint.identification.algorithm =\n\
             admin.timeout.ms = 1000\n",
            ca.display()
        ),
    );
    // --once with a short admin timeout: the unreachable clusters end the run.
    let (_, _, stderr) = run(&mut mm2(&[
        "run",
        path(&config),
        "--once",
        "--log-format",
        "json",
    ]));
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(!lines.is_empty(), "no logs");
    for line in &lines {
        assert!(
            line.starts_with('{') && line.ends_with('}'),
            "not JSON: {line}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains(r#""level":"WARN""#)
            && l.contains("TLS HOST NAME VERIFICATION IS DISABLED")
            && l.contains(r#""cluster":"A""#)),
        "{stderr}"
    );
}

#[test]
fn metrics_address_in_use_exits_1_naming_it() {
    let dir = TempDir::new("cli", "metrics-busy");
    let config = config_with(&dir, "");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = busy.local_addr().expect("local addr").to_string();
    let (code, _, stderr) = run(&mut mm2(&["run", path(&config), "--metrics-addr", &addr]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot listen for the metrics endpoint"),
        "{stderr}"
    );
    assert!(stderr.contains(&addr), "{stderr}");
}

/// A TCP port that accepts connections and never answers: a request sent
/// there waits for its timeout.
fn silent_port() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    (listener, addr)
}

/// Start-up and retries against a refused port: SIGTERM ends the daemon
/// (exit 0) within the bound.
#[test]
fn sigterm_during_startup_retries_ends_the_daemon_with_0() {
    let dir = TempDir::new("cli", "sigterm-retry");
    let config = config_with(&dir, "");
    let mut daemon = e2e::binary::Daemon::spawn(&mut mm2(&["run", path(&config)]));
    daemon.wait_for("cannot reach cluster");
    let (code, took, stderr) = daemon.terminate();
    eprintln!("SIGTERM to exit during connection retries: {took:?}");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < SIGTERM_BOUND, "took {took:?}");
}

/// A broker that accepts and never answers holds a request in flight for its
/// whole timeout: SIGTERM still ends the daemon within the bound.
#[test]
fn sigterm_with_a_request_in_flight_ends_the_daemon_with_0() {
    let dir = TempDir::new("cli", "sigterm-silent");
    let (_listener, addr) = silent_port();
    let config = dir.write(
        "mm2.properties",
        &format!(
            "clusters = A, B\nA.bootstrap.servers = {addr}\nB.bootstrap.servers = {addr}\n\
             A->B.enabled = true\n"
        ),
    );
    let mut daemon = e2e::binary::Daemon::spawn(&mut mm2(&["run", path(&config)]));
    daemon.wait_for("mm2-checkpoint starting");
    std::thread::sleep(Duration::from_millis(500));
    let (code, took, stderr) = daemon.terminate();
    eprintln!("SIGTERM to exit with a request in flight: {took:?}");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < SIGTERM_BOUND, "took {took:?}");
}

/// `run --once`, `translate` and `cutover` stopped by SIGTERM before they
/// finished exit 1 and say so.
#[test]
fn sigterm_before_once_or_translate_finished_exits_1() {
    let dir = TempDir::new("cli", "sigterm-once");
    let config = config_with(&dir, "");
    for args in [
        &["run", "--once", path(&config)][..],
        &["translate", path(&config), "--flow", "A->B", "--group", "g"],
        &[
            "cutover",
            path(&config),
            "--flow",
            "A->B",
            "--to",
            "B",
            "--group",
            "g",
            "--execute",
        ],
    ] {
        let mut daemon = e2e::binary::Daemon::spawn(&mut mm2(args));
        daemon.wait_for("cannot reach cluster");
        let (code, took, stderr) = daemon.terminate();
        eprintln!("SIGTERM to exit of {}: {took:?}", args[0]);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(took < SIGTERM_BOUND, "{args:?} took {took:?}");
        assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    }
}

/// Each retry against a refused port is a WARN naming the cluster, the
/// address, the cause and the deadline; for `run --once` and `translate`.
#[test]
fn retries_against_a_refused_port_are_warned_with_cluster_address_cause_and_deadline() {
    let dir = TempDir::new("cli", "retry-warn");
    let config = config_with(&dir, "admin.timeout.ms = 2000");
    // `run` reaches both clusters of the flow, `translate` only the target.
    for (args, clusters) in [
        (&["run", "--once", path(&config)][..], &["A", "B"][..]),
        (
            &["translate", path(&config), "--flow", "A->B", "--group", "g"],
            &["B"],
        ),
    ] {
        let (code, _, stderr) = run(&mut mm2(args));
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        let warns: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("WARN") && l.contains("cannot reach cluster"))
            .collect();
        assert!(warns.len() >= 2, "{args:?}: one WARN per retry:\n{stderr}");
        for line in warns {
            assert!(
                clusters
                    .iter()
                    .any(|c| line.contains(&format!("cannot reach cluster {c}: ")))
                    && line.contains("127.0.0.1:1")
                    && line.contains("Connection refused")
                    && line.contains("until the deadline in "),
                "{line}"
            );
        }
    }
}

/// A tiny HTTP server on the port: the error says an HTTP server answered.
#[test]
fn an_http_server_instead_of_a_broker_is_named_as_such() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let dir = TempDir::new("cli", "http-port");
    let config = dir.write(
        "mm2.properties",
        &format!(
            "clusters = A, B\nA.bootstrap.servers = {addr}\nB.bootstrap.servers = {addr}\n\
             A->B.enabled = true\nadmin.timeout.ms = 2000\n"
        ),
    );
    let (code, _, stderr) = run(&mut mm2(&[
        "translate",
        path(&config),
        "--flow",
        "A->B",
        "--group",
        "g",
    ]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("broker {addr}"))
            && stderr.contains("an HTTP server answered, not a Kafka broker"),
        "{stderr}"
    );
}

/// stdout or stderr closed by the reader (`validate | head -1`,
/// `run ... 2>&1 | head -1`): the output is lost, the exit code is the
/// command's, never an abort.
#[test]
fn a_closed_stdout_or_stderr_does_not_crash() {
    let dir = TempDir::new("cli", "closed-pipe");
    let config = config_with(&dir, "admin.timeout.ms = 1500");
    let closed = || {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        writer
    };
    let status = mm2(&["validate", path(&config)])
        .stdout(closed())
        .status()
        .expect("run validate");
    assert_eq!(status.code(), Some(0), "validate: {status:?}");
    let status = mm2(&["run", "--once", path(&config)])
        .stderr(closed())
        .status()
        .expect("run --once");
    assert_eq!(status.code(), Some(1), "run --once: {status:?}");
    let status = mm2(&["man"]).stdout(closed()).status().expect("man");
    assert_eq!(status.code(), Some(0), "man: {status:?}");
}

/// SIGHUP (sent by supervisors and log rotators) neither ends nor reloads
/// the daemon: one WARN line says so, and SIGTERM still ends it with 0.
#[test]
fn sighup_is_logged_and_the_daemon_carries_on() {
    let dir = TempDir::new("cli", "sighup");
    let config = config_with(&dir, "");
    let mut daemon = e2e::binary::Daemon::spawn(&mut mm2(&["run", path(&config)]));
    daemon.wait_for("mm2-checkpoint starting");
    for _ in 0..2 {
        daemon.signal("HUP");
        let line = daemon.wait_for("SIGHUP");
        assert!(
            line.contains("WARN") && line.contains("carrying on"),
            "{line}"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(daemon.is_running(), "the daemon ended after SIGHUP");
    // Two HUPs counted as no first signal: one TERM is a graceful stop.
    let (code, took, stderr) = daemon.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < SIGTERM_BOUND, "took {took:?}");
    assert!(!stderr.contains("second signal"), "{stderr}");
}

/// Under a systemd `Type=notify` unit: `READY=1` (with the readiness as
/// `STATUS=`) once the daemon has started, `STOPPING=1` at SIGTERM, sent to
/// the socket `NOTIFY_SOCKET` names.
#[test]
fn the_daemon_tells_systemd_it_started_and_is_stopping() {
    use std::os::unix::net::UnixDatagram;
    let dir = TempDir::new("cli", "notify");
    let config = config_with(&dir, "");
    let socket_path = dir.0.join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let recv = || {
        let mut buf = [0u8; 4096];
        let n = socket.recv(&mut buf).expect("a notification within 30 s");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let mut daemon =
        e2e::binary::Daemon::spawn(mm2(&["run", path(&config)]).env("NOTIFY_SOCKET", &socket_path));
    let ready = recv();
    assert!(ready.starts_with("READY=1\nSTATUS="), "{ready}");
    daemon.wait_for("cannot reach cluster");
    let (code, _, stderr) = daemon.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    let mut last = recv();
    while last.starts_with("STATUS=") {
        last = recv();
    }
    assert_eq!(last, "STOPPING=1\nSTATUS=stopping");
    // `run --once` is not a service: it notifies nothing.
    let once_config = config_with(&dir, "admin.timeout.ms = 500");
    let mut once = mm2(&["run", "--once", path(&once_config)]);
    let (code, _, _) = run(once.env("NOTIFY_SOCKET", &socket_path));
    assert_eq!(code, Some(1));
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let mut buf = [0u8; 64];
    assert!(
        socket.recv(&mut buf).is_err(),
        "run --once notified systemd"
    );
}

/// `MM2_LOG_FORMAT` picks the log format when `--log-format` is not given;
/// the flag wins over it; a value that is no format is a usage error (exit 2)
/// before any network I/O.
#[test]
fn the_log_format_comes_from_the_flag_else_mm2_log_format() {
    let dir = TempDir::new("cli", "log-format-env");
    let config = config_with(&dir, "admin.timeout.ms = 500");
    let is_json = |stderr: &str| {
        !stderr.is_empty()
            && stderr
                .lines()
                .all(|l| l.starts_with('{') && l.ends_with('}'))
    };
    let once = |env: Option<&str>, flag: Option<&str>| {
        let mut args = vec!["run", "--once", path(&config)];
        if let Some(flag) = flag {
            args.extend(["--log-format", flag]);
        }
        let mut cmd = mm2(&args);
        if let Some(env) = env {
            cmd.env("MM2_LOG_FORMAT", env);
        }
        run(&mut cmd)
    };
    let (_, _, stderr) = once(Some("json"), None);
    assert!(is_json(&stderr), "{stderr}");
    let (_, _, stderr) = once(Some("JSON"), Some("text"));
    assert!(!stderr.is_empty() && !is_json(&stderr), "{stderr}");
    let (_, _, stderr) = once(Some("text"), Some("json"));
    assert!(is_json(&stderr), "{stderr}");
    let (_, _, stderr) = once(Some(""), None);
    assert!(!stderr.is_empty() && !is_json(&stderr), "{stderr}");
    let (code, _, stderr) = once(Some("yaml"), None);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "error: MM2_LOG_FORMAT: `yaml` is not a log format; use `text` or `json`"
    );
    // The flag wins, so a bad variable is not even read.
    let (code, _, stderr) = once(Some("yaml"), Some("json"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(is_json(&stderr), "{stderr}");
}

/// `GET /healthz` on `addr`: the status line.
fn healthz(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.lines().next().unwrap_or_default().to_owned()
}

/// `--metrics-addr [::]:PORT` (what the image, the manifests and the systemd
/// unit pass) serves both IPv4 and IPv6 clients.
#[test]
fn the_ipv6_wildcard_serves_ipv4_and_ipv6_clients() {
    let dir = TempDir::new("cli", "dual-stack");
    let config = config_with(&dir, "");
    let mut daemon = e2e::binary::Daemon::spawn(&mut mm2(&[
        "run",
        path(&config),
        "--metrics-addr",
        "[::]:0",
    ]));
    let line = daemon.wait_for("serving /metrics");
    let bound = line
        .split("addr=")
        .nth(1)
        .and_then(|a| a.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line}"))
        .to_owned();
    let port = bound.rsplit_once(':').map(|(_, p)| p).expect("a port");
    if std::net::TcpListener::bind("[::]:0").is_ok() {
        assert_eq!(bound, format!("[::]:{port}"), "{line}");
        if std::net::TcpListener::bind("[::1]:0").is_ok() {
            assert_eq!(healthz(&format!("[::1]:{port}")), "HTTP/1.1 200 OK");
        }
    } else {
        // No IPv6 on this host: the daemon fell back to IPv4 and said so.
        assert_eq!(bound, format!("0.0.0.0:{port}"), "{line}");
    }
    assert_eq!(healthz(&format!("127.0.0.1:{port}")), "HTTP/1.1 200 OK");
    let (code, _, stderr) = daemon.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}
