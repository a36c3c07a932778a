//! The daemon under faults (`faults_*.rs`, and the `daemon_*.rs` tests that
//! watch a running daemon): the daemon as a child process with its log in a
//! file, plain-HTTP probes of its metrics endpoint, bounded waits, and the
//! checks every fault test makes on the checkpoints topic.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mm2_checkpoint::core::Checkpoint;

use crate::world::World;

/// Settings under which only the commit follower acts after startup
/// (docs/commit-follower.md): the periodic round and group sync run once at
/// the start, then only after an hour.
pub const SLOW_ROUNDS: &str = "emit.checkpoints.interval.seconds = 3600\n\
     sync.group.offsets.interval.seconds = 3600";

/// Makes sure the source cluster has `__consumer_offsets`: a fresh cluster
/// has none until a group first commits, and a daemon started before that
/// polls (mode `auto`) or retries its startup (mode `follow`,
/// docs/commit-follower.md section 4). Commits offset 0 of the world's topic
/// for the group `warmup-<topic>`, which no test's group filter accepts.
pub fn ensure_consumer_offsets(rt: &tokio::runtime::Runtime, w: &World) {
    w.commit_source(rt, &format!("warmup-{}", w.topic), &[(0, 0)]);
}

/// `group_offsets_mode{flow, mode}` of the world's flow: 1 for the mode
/// that runs.
pub fn mode_metric(w: &World, mode: &str) -> String {
    format!(
        "mm2_checkpoint_group_offsets_mode{{flow=\"{}->{}\",mode=\"{mode}\"}}",
        w.s, w.t
    )
}

/// A running `mm2-checkpoint run` daemon; killed (SIGKILL) on drop.
pub struct Daemon {
    /// The child process.
    pub child: Child,
    /// Its metrics address.
    pub addr: String,
    /// The file its stderr (the log) goes to.
    pub log: PathBuf,
}

impl Daemon {
    /// Starts `run --config <config> --metrics-addr <free port>`, appending
    /// its log to `log`.
    pub fn start(config: &Path, log: &Path) -> Daemon {
        Daemon::start_at(config, log, &format!("127.0.0.1:{}", free_port()))
    }

    /// [`Daemon::start`] with the metrics on `addr`, e.g. to restart a
    /// daemon where a scraper looks for it.
    pub fn start_at(config: &Path, log: &Path, addr: &str) -> Daemon {
        let addr = addr.to_string();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("open the daemon log");
        let child = Command::new(crate::binary::mm2_checkpoint())
            .args([
                "run",
                "--config",
                config.to_str().expect("utf-8 path"),
                "--metrics-addr",
                &addr,
            ])
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("spawn the daemon");
        Daemon {
            child,
            addr,
            log: log.to_path_buf(),
        }
    }

    /// SIGKILL, then reap.
    pub fn kill9(mut self) {
        self.child.kill().expect("SIGKILL the daemon");
        self.child.wait().expect("reap the daemon");
    }

    /// SIGTERM, then waits up to 20 s for the exit; its status.
    pub fn sigterm(mut self) -> std::process::ExitStatus {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success(), "kill -TERM failed");
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Asserts the daemon is still running.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().expect("try_wait") {
            panic!("the daemon exited ({status}); log:\n{}", self.log_text());
        }
    }

    /// The whole log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The value of the first metrics line starting with `prefix`.
    pub fn metric(&self, prefix: &str) -> Option<f64> {
        get(&self.addr, "/metrics").and_then(|(_, body)| metric(&body, prefix))
    }

    /// The sum of every metrics sample starting with `prefix`.
    pub fn metric_sum(&self, prefix: &str) -> f64 {
        get(&self.addr, "/metrics")
            .map(|(_, body)| {
                body.lines()
                    .filter(|l| l.starts_with(prefix))
                    .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                    .sum()
            })
            .unwrap_or(0.0)
    }

    /// `/readyz`'s status, if it answered.
    pub fn ready(&self) -> Option<u16> {
        get(&self.addr, "/readyz").map(|(s, _)| s)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 GET: (status, body).
pub fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let status = buf.split_whitespace().nth(1)?.parse().ok()?;
    let (head, body) = buf.split_once("\r\n\r\n")?;
    // `/metrics` is streamed: chunked for an HTTP/1.1 request.
    let body = if head.contains("\r\nTransfer-Encoding: chunked\r\n") {
        crate::http::dechunk(body)?
    } else {
        body.to_string()
    };
    Some((status, body))
}

/// The value of the first line of `body` starting with `prefix`.
pub fn metric(body: &str, prefix: &str) -> Option<f64> {
    body.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Polls `f` every 200 ms until it holds; fails naming `what` after `timeout`.
pub fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let started = Instant::now();
    while !f() {
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// MM2's translation of upstream offset `u` given every sync `(upstream,
/// downstream)` of one partition (any order): the newest sync at or below `u`
/// gives its downstream offset if exact, else downstream + 1; `None` below
/// the first sync.
pub fn translate(syncs: &[(i64, i64)], u: i64) -> Option<i64> {
    syncs
        .iter()
        .filter(|(up, _)| *up <= u)
        .max_by_key(|(up, _)| *up)
        .map(|&(up, down)| if up == u { down } else { down + 1 })
}

/// Checks the checkpoints topic's records, in order: per (group, partition)
/// neither offset ever goes down (no rewind — these tests never rewind
/// upstream), and no downstream offset is past the translation of its
/// upstream offset from `syncs` (partition → syncs ever written), i.e. no
/// data is skipped. Returns the number of records checked.
pub fn assert_sound(cps: &[Checkpoint], syncs: &BTreeMap<i32, Vec<(i64, i64)>>) -> usize {
    let mut last: BTreeMap<(String, i32), (i64, i64)> = BTreeMap::new();
    for (i, c) in cps.iter().enumerate() {
        let p = c.key.topic_partition.partition;
        let key = (c.key.group.clone(), p);
        let now = (c.upstream_offset, c.downstream_offset);
        if let Some(prev) = last.get(&key) {
            assert!(
                now.0 >= prev.0 && now.1 >= prev.1,
                "checkpoint #{i} of {key:?} rewound: {prev:?} -> {now:?}"
            );
        }
        let ceiling = syncs
            .get(&p)
            .and_then(|s| translate(s, c.upstream_offset))
            .unwrap_or_else(|| panic!("checkpoint #{i} {now:?} of {key:?} has no sync below it"));
        assert!(
            c.downstream_offset <= ceiling,
            "checkpoint #{i} of {key:?} skips data: downstream {} > translation {ceiling} of upstream {}",
            c.downstream_offset,
            c.upstream_offset
        );
        last.insert(key, now);
    }
    cps.len()
}

/// The newest checkpoint per (group, partition): (upstream, downstream).
pub fn latest(cps: &[Checkpoint]) -> BTreeMap<(String, i32), (i64, i64)> {
    cps.iter()
        .map(|c| {
            (
                (c.key.group.clone(), c.key.topic_partition.partition),
                (c.upstream_offset, c.downstream_offset),
            )
        })
        .collect()
}

/// Syncs `(partition, upstream, downstream)` by partition, as
/// [`assert_sound`] takes them.
pub fn by_partition(syncs: &[(i32, i64, i64)]) -> BTreeMap<i32, Vec<(i64, i64)>> {
    let mut out: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for &(p, up, down) in syncs {
        out.entry(p).or_default().push((up, down));
    }
    out
}

/// Writes `syncs` and commits `upstream` on partition 0 for the group
/// `g-<topic>`, starts the daemon (log `daemon.log` in the world's
/// directory) and waits for its checkpoint `want` (upstream, downstream) of
/// partition 0. Returns the group and the daemon.
pub fn start_checkpointed(
    rt: &tokio::runtime::Runtime,
    w: &World,
    syncs: &[(i32, i64, i64)],
    upstream: i64,
    want: (i64, i64),
) -> (String, Daemon) {
    let group = w.seed(rt, syncs, &[(0, upstream)]);
    let config = w.properties(&group, "");
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for("the first checkpoint", Duration::from_secs(60), || {
        latest(&w.checkpoints(rt)).get(&(group.clone(), 0)) == Some(&want)
    });
    (group, daemon)
}

/// Checks the checkpoints across a change of sync generation at record
/// `before`: the earlier ones sound against the `old` syncs, the later ones
/// against the `new` syncs only, and none of the later ones with a downstream
/// offset below `floor` (the last one before the change).
pub fn assert_sound_across(
    cps: &[Checkpoint],
    before: usize,
    old: &[(i32, i64, i64)],
    new: &[(i32, i64, i64)],
    floor: i64,
) {
    assert_sound(&cps[..before], &by_partition(old));
    assert_sound(&cps[before..], &by_partition(new));
    for c in &cps[before..] {
        assert!(
            c.downstream_offset >= floor,
            "a checkpoint after the change rewound below {floor}: {c:?}"
        );
    }
}

/// Asserts the daemon logged `needle` (naming `what` if not) and never panicked.
pub fn assert_logged(daemon: &Daemon, needle: &str, what: &str) {
    let text = daemon.log_text();
    assert!(text.contains(needle), "{what} was not logged:\n{text}");
    assert_eq!(text.matches("panicked").count(), 0, "{text}");
}
