//! The monitoring kit against real software (docs/operations.md, Metrics and
//! Dashboard and alerts): every metric family docs/operations.md documents is
//! served from start-up and nothing undocumented is; Prometheus's `promtool`
//! checks and unit-tests `deploy/monitoring/alerts.yml`; and a real Prometheus
//! (Debian's `prometheus` package) scraping a running daemon answers every
//! query of `deploy/monitoring/grafana-dashboard.json` with data, loads the
//! alert rules and serves the MirrorMaker 2-compatible latency names (the
//! legacy ones and KIP-1280's).

use std::collections::BTreeSet;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use e2e::faults::{Daemon, free_port, get, wait_for};
use e2e::world::{World, rt};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn monitoring_dir() -> PathBuf {
    repo().join("deploy/monitoring")
}

/// `name` on `PATH`; fails the test, saying how to install it, if absent.
fn prometheus_tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{name}` is not on PATH: install Debian's `prometheus` package \
                 (`apt-get install prometheus`; `cargo xtask test` and `cargo xtask kafka up` \
                 install it with the cluster tools)"
            )
        })
}

/// The metric families of docs/operations.md's Metrics section: the first
/// column of its `metric` tables, with our prefix where the table leaves it
/// out.
fn documented_families() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(repo().join("docs/operations.md")).expect("operations.md");
    let start = doc.find("\n## Metrics\n").expect("a Metrics section");
    let section = &doc[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    // Rows of the tables whose first column is `metric`.
    let mut in_metric_table = false;
    section[..end]
        .lines()
        .filter(|l| {
            if l.starts_with("| metric |") {
                in_metric_table = true;
            } else if !l.starts_with('|') {
                in_metric_table = false;
            }
            in_metric_table
        })
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(|name| {
            // MM2's names (legacy and KIP-1280's) and the standard process
            // metrics carry no prefix.
            if name.starts_with("kafka_connect_") || name.starts_with("process_") {
                name.to_string()
            } else {
                format!("mm2_checkpoint_{name}")
            }
        })
        .collect()
}

/// The family names of an exposition's sample lines (histogram and counter
/// suffixes folded back into their family's documented name).
fn families_with_samples(body: &str) -> BTreeSet<String> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(|name| {
            ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|base| base.ends_with("_seconds"))
                .unwrap_or(name)
                .to_string()
        })
        .collect()
}

/// The families an exposition declares (`# TYPE` lines), counters with the
/// `_total` suffix their samples carry.
fn declared_families(body: &str) -> BTreeSet<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| {
            let mut parts = l.split(' ');
            let name = parts.next()?;
            Some(match parts.next() {
                Some("counter") if !name.ends_with("_total") => format!("{name}_total"),
                _ => name.to_string(),
            })
        })
        .collect()
}

#[test]
fn every_documented_family_is_served_from_start_up_and_nothing_else() {
    let documented = documented_families();
    assert!(documented.len() > 15, "{documented:?}");
    let rt = rt();
    let w = World::new(&rt, "families", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let config = w.properties(
        &group,
        "mm2-checkpoint.metrics.mm2.names.enabled = true\n\
         mm2-checkpoint.metrics.mm2.names.formats = legacy,new\n\
         mm2-checkpoint.status.interval.ms = 60000",
    );
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    let mut first = None;
    wait_for("the first scrape", Duration::from_secs(30), || {
        first = get(&daemon.addr, "/metrics").filter(|(status, _)| *status == 200);
        first.is_some()
    });
    let (_, body) = first.expect("scraped");
    // The latency families have a series per checkpointed group, so they
    // appear with the first checkpoint, and the status gauges with the
    // status pass's first document; every other family has its series from
    // the first scrape on.
    let later = |f: &&String| f.contains("checkpoint_latency_ms") || f.contains("_status_");
    let served = families_with_samples(&body);
    let missing: Vec<&String> = documented
        .iter()
        .filter(|f| !later(f) && !served.contains(*f))
        .collect();
    assert!(
        missing.is_empty(),
        "no sample of {missing:?} at start-up in\n{body}"
    );
    let emitted = format!(
        "mm2_checkpoint_checkpoints_emitted_total{{flow=\"{}->{}\"}}",
        w.s, w.t
    );
    wait_for("the first checkpoint", Duration::from_secs(60), || {
        daemon.metric(&emitted) == Some(1.0)
    });
    wait_for("the first status pass", Duration::from_secs(60), || {
        get(&daemon.addr, "/status").is_some_and(|(status, _)| status == 200)
    });
    let (_, body) = get(&daemon.addr, "/metrics").expect("metrics");
    let served = families_with_samples(&body);
    let missing: Vec<&String> = documented.difference(&served).collect();
    assert!(missing.is_empty(), "no sample of {missing:?} in\n{body}");
    let undocumented: Vec<String> = declared_families(&body)
        .difference(&documented)
        .cloned()
        .collect();
    assert!(
        undocumented.is_empty(),
        "served but not in docs/operations.md: {undocumented:?}"
    );
    assert_eq!(daemon.sigterm().code(), Some(0));
}

#[test]
fn promtool_checks_and_unit_tests_the_alert_rules() {
    let promtool = prometheus_tool("promtool");
    for args in [
        ["check", "rules", "alerts.yml"],
        ["test", "rules", "alerts.test.yml"],
    ] {
        let out = Command::new(&promtool)
            .args(args)
            .current_dir(monitoring_dir())
            .output()
            .expect("run promtool");
        assert!(
            out.status.success(),
            "promtool {}: {}\n{}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A Prometheus server started for one test, killed when dropped.
struct Prometheus {
    child: Child,
    addr: String,
}

impl Prometheus {
    /// Starts Prometheus on a free loopback port, scraping `targets` (job
    /// `mm2-checkpoint`) every second and evaluating
    /// `deploy/monitoring/alerts.yml` every second; waits until it is ready.
    fn start(dir: &Path, targets: &[&str]) -> Prometheus {
        let targets = targets
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let binary = prometheus_tool("prometheus");
        let addr = format!("127.0.0.1:{}", free_port());
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 rule_files:\n  - {rules}\n\
                 scrape_configs:\n  - job_name: mm2-checkpoint\n    static_configs:\n      \
                 - targets: [{targets}]\n",
                rules = monitoring_dir().join("alerts.yml").display()
            ),
        )
        .expect("write prometheus.yml");
        let log = std::fs::File::create(dir.join("prometheus.log")).expect("prometheus log");
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("prometheus-data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let prometheus = Prometheus { child, addr };
        wait_for("Prometheus to be ready", Duration::from_secs(60), || {
            http_get(&prometheus.addr, "/-/ready").is_some_and(|(status, _)| status == 200)
        });
        prometheus
    }

    /// The `data` of an API answer for `path`, if the call succeeded.
    fn api(&self, path: &str) -> Option<serde_json::Value> {
        let (status, body) = http_get(&self.addr, path)?;
        let json: serde_json::Value = serde_json::from_str(&body).ok()?;
        (status == 200 && json["status"] == "success").then(|| json["data"].clone())
    }

    /// The active alerts (pending or firing): (name, state, labels).
    fn active_alerts(&self) -> Vec<(String, String, serde_json::Value)> {
        self.api("/api/v1/alerts")
            .and_then(|data| data["alerts"].as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .map(|a| {
                let name = a["labels"]["alertname"].as_str().unwrap_or("").to_string();
                let state = a["state"].as_str().unwrap_or("").to_string();
                (name, state, a["labels"].clone())
            })
            .collect()
    }

    /// The result vector of the instant query `expr`.
    fn query(&self, expr: &str) -> Vec<serde_json::Value> {
        self.api(&format!("/api/v1/query?query={}", url_encode(expr)))
            .and_then(|data| data["result"].as_array().cloned())
            .unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.0 GET (so the answer is never chunked): status and body.
fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let status = buf.split_whitespace().nth(1)?.parse().ok()?;
    let body = buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every (panel title, query) of the dashboard, with its variables set as
/// Grafana would for "All" flows and a 1-minute rate interval.
fn dashboard_queries() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(monitoring_dir().join("grafana-dashboard.json"))
        .expect("read the dashboard");
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("dashboard JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut queries = Vec::new();
    for panel in panels {
        let title = panel["title"].as_str().expect("panel title");
        let targets = panel["targets"].as_array().expect("panel targets");
        assert!(!targets.is_empty(), "panel {title} has no query");
        for target in targets {
            let expr = target["expr"].as_str().expect("a PromQL expr");
            let expr = expr
                .replace("$flow", ".*")
                .replace("$__rate_interval", "1m");
            queries.push((title.to_string(), expr));
        }
    }
    queries
}

/// Every alert rule of `deploy/monitoring/alerts.yml`.
const ALERTS: [&str; 11] = [
    "MM2CheckpointAbsent",
    "MM2CheckpointFencedWrites",
    "MM2CheckpointInstanceDown",
    "MM2CheckpointLatencyHigh",
    "MM2CheckpointNoOwner",
    "MM2CheckpointNotReady",
    "MM2CheckpointPreciseFallback",
    "MM2CheckpointRequestErrors",
    "MM2CheckpointSeveralOwners",
    "MM2CheckpointStale",
    "MM2CheckpointUntranslatablePartitions",
];

/// A dashboard query that reads series only instances with membership on
/// export (checked by the HA test instead of the single daemon's).
fn membership_only(expr: &str) -> bool {
    expr.contains("mm2_checkpoint_membership_") || expr.contains("mm2_checkpoint_fenced_writes")
}

#[test]
fn prometheus_scrapes_the_daemon_and_every_dashboard_query_returns_data() {
    let queries: Vec<(String, String)> = dashboard_queries()
        .into_iter()
        .filter(|(_, expr)| !membership_only(expr))
        .collect();
    assert!(queries.len() >= 10, "{queries:?}");
    let rt = rt();
    let w = World::new(&rt, "prometheus", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let config = w.properties(
        &group,
        "sync.group.offsets.enabled = true\nmm2-checkpoint.metrics.mm2.names.enabled = true\n\
         mm2-checkpoint.metrics.mm2.names.formats = legacy,new\n\
         mm2-checkpoint.metrics.latency.granularity = partition",
    );
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    let emitted = format!(
        "mm2_checkpoint_checkpoints_emitted_total{{flow=\"{}->{}\"}}",
        w.s, w.t
    );
    wait_for("the first checkpoint", Duration::from_secs(60), || {
        daemon.metric(&emitted) == Some(1.0)
    });
    let prometheus = Prometheus::start(&w.dir, &[&daemon.addr]);
    let mut empty: Vec<(String, String)> = queries.clone();
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for(
            "data for every dashboard query",
            Duration::from_secs(90),
            || {
                empty.retain(|(_, expr)| prometheus.query(expr).is_empty());
                empty.is_empty()
            },
        );
    }));
    assert!(
        waited.is_ok(),
        "dashboard queries without data after 90 s: {empty:#?}"
    );
    // The series the panels read are this daemon's.
    let flow = format!("{}->{}", w.s, w.t);
    let emitted = prometheus.query("mm2_checkpoint_checkpoints_emitted_total");
    assert!(
        emitted
            .iter()
            .any(|s| s["metric"]["flow"] == flow.as_str() && s["value"][1] == "1"),
        "{emitted:?}"
    );
    // A dashboard built on MM2's names (Strimzi's rules) finds our series.
    let mm2 = prometheus.query(&format!(
        "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms_max\
         {{source=\"{}\",target=\"{}\",group=\"{group}\",topic=\"{}\",partition=\"0\"}}",
        w.s,
        w.t,
        w.remote_topic()
    ));
    assert_eq!(mm2.len(), 1, "{mm2:?}");
    // And one built on MM2 4.3's new names (KIP-1280, the JMX exporter's
    // default rendering of `kafka.connect:type=plugins,...`).
    let new = prometheus.query(&format!(
        "kafka_connect_plugins_checkpoint_latency_ms_max\
         {{connector=\"MirrorCheckpointConnector\",task=\"0\",source=\"{}\",target=\"{}\",\
         group=\"{group}\",topic=\"{}\",partition=\"0\"}}",
        w.s,
        w.t,
        w.remote_topic()
    ));
    assert_eq!(new.len(), 1, "{new:?}");
    // Prometheus loaded and evaluates every alert rule.
    let mut rules = Vec::new();
    wait_for("the alert rules evaluated", Duration::from_secs(30), || {
        rules = prometheus
            .api("/api/v1/rules")
            .and_then(|d| d["groups"][0]["rules"].as_array().cloned())
            .unwrap_or_default();
        rules.len() == ALERTS.len() && rules.iter().all(|r| r["health"] == "ok")
    });
    let names: BTreeSet<&str> = rules.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, BTreeSet::from(ALERTS));
    // A healthy daemon fires none of them, nor has one pending.
    let active = prometheus.query("ALERTS");
    assert!(active.is_empty(), "{active:?}");
    drop(prometheus);
    assert_eq!(daemon.sigterm().code(), Some(0));
}

/// The metric `name` of the world's flow.
fn flow_metric(w: &World, name: &str) -> String {
    format!("{name}{{flow=\"{}->{}\"}}", w.s, w.t)
}

/// The index of the daemon that owns the world's flow, once one of `daemons`
/// owns it and every other stands by.
fn settled_owner(daemons: &[&Daemon], w: &World) -> usize {
    let role = |d: &Daemon, r: &str| {
        d.metric(&format!(
            "mm2_checkpoint_membership_role{{flow=\"{}->{}\",role=\"{r}\"}}",
            w.s, w.t
        )) == Some(1.0)
    };
    let mut owner = None;
    wait_for(
        "one owner, the others standing by",
        Duration::from_secs(60),
        || {
            let owners: Vec<usize> = (0..daemons.len())
                .filter(|&i| role(daemons[i], "owner"))
                .collect();
            let standbys = daemons.iter().filter(|d| role(d, "standby")).count();
            owner = owners.first().copied();
            owners.len() == 1 && standbys == daemons.len() - 1
        },
    );
    owner.expect("an owner")
}

/// An alert as this test names it: its name and the label that says where
/// (`instance` or `flow`).
fn alert_key(name: &str, labels: &serde_json::Value) -> String {
    let place = labels["instance"]
        .as_str()
        .or(labels["flow"].as_str())
        .unwrap_or("");
    format!("{name} {place}")
}

/// Two daemons with membership on, scraped by a real Prometheus that
/// evaluates the shipped rules (docs/operations.md, Dashboard and alerts):
/// while both run (a SIGHUP included) no rule is even pending, and only the
/// owner exports a round timestamp; SIGKILL of the owner makes the
/// instance-down and no-owner rules pending (their `for` is minutes; the
/// expression being true is what this checks) and nothing else but the new
/// owner's short not-ready while it restores; the standby takes over and
/// no-owner resolves; restarted with a configuration error the killed
/// daemon exits 2 and instance-down stays the only alert; restarted with
/// the right one, as a standby, it resolves that too.
#[test]
fn prometheus_sees_a_handover_of_an_ha_pair_and_nothing_on_the_standby() {
    let rt = rt();
    let w = World::new(&rt, "ha-alerts", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let config = w.properties(
        &group,
        "mm2-checkpoint.membership.enabled = true\n\
         mm2-checkpoint.membership.session.timeout.ms = 6000\n\
         mm2-checkpoint.membership.heartbeat.interval.ms = 1000\n",
    );
    let flow = format!("{}->{}", w.s, w.t);
    let logs: Vec<PathBuf> = (0..2)
        .map(|i| w.dir.join(format!("member-{i}.log")))
        .collect();
    let mut daemons: Vec<Option<Daemon>> = logs
        .iter()
        .map(|l| Some(Daemon::start(&config, l)))
        .collect();
    let addrs: Vec<String> = daemons.iter().flatten().map(|d| d.addr.clone()).collect();
    let both: Vec<&Daemon> = daemons.iter().flatten().collect();
    let owner = settled_owner(&both, &w);
    let standby = 1 - owner;
    wait_for("the first checkpoint", Duration::from_secs(60), || {
        both[owner].metric(&flow_metric(&w, "mm2_checkpoint_checkpoints_emitted_total"))
            == Some(1.0)
    });
    for d in &both {
        wait_for("both ready", Duration::from_secs(30), || {
            d.ready() == Some(200)
        });
    }
    // The standby exports no round timestamp and flow_owned 0.
    assert_eq!(
        both[standby].metric(&flow_metric(
            &w,
            "mm2_checkpoint_last_round_timestamp_seconds"
        )),
        None
    );
    assert_eq!(
        both[standby].metric(&flow_metric(&w, "mm2_checkpoint_flow_owned")),
        Some(0.0)
    );
    let prometheus = Prometheus::start(&w.dir, &[&addrs[0], &addrs[1]]);
    let owned_by = |p: &Prometheus| -> Vec<String> {
        p.query("mm2_checkpoint_flow_owned == 1")
            .iter()
            .filter(|s| s["metric"]["flow"] == flow.as_str())
            .filter_map(|s| s["metric"]["instance"].as_str().map(str::to_string))
            .collect()
    };
    wait_for(
        "Prometheus to see the owner",
        Duration::from_secs(30),
        || {
            owned_by(&prometheus) == [addrs[owner].clone()]
                && prometheus.query("up == 1").len() == 2
        },
    );
    // Prometheus evaluates the rules from its start, before its first scrape
    // answered: `MM2CheckpointAbsent` may be pending from that evaluation
    // until the next one.
    wait_for(
        "an evaluation with both instances scraped",
        Duration::from_secs(30),
        || prometheus.active_alerts().is_empty(),
    );
    // Healthy, with a SIGHUP to each (logged, ignored): over ten
    // evaluations no rule becomes even pending.
    for d in &both {
        let hup = std::process::Command::new("kill")
            .args(["-HUP", &d.child.id().to_string()])
            .status()
            .expect("kill -HUP");
        assert!(hup.success());
    }
    for _ in 0..10 {
        let active = prometheus.active_alerts();
        assert!(active.is_empty(), "active on a healthy pair: {active:?}");
        std::thread::sleep(Duration::from_secs(1));
    }
    let stamps = prometheus.query("mm2_checkpoint_last_round_timestamp_seconds");
    assert_eq!(stamps.len(), 1, "only the owner's: {stamps:?}");
    assert_eq!(stamps[0]["metric"]["instance"], addrs[owner].as_str());
    // The dashboard's HA panels have data; one writer per flow.
    let mut empty: Vec<(String, String)> = dashboard_queries();
    assert!(empty.iter().filter(|(_, e)| membership_only(e)).count() >= 3);
    wait_for(
        "data for every dashboard query",
        Duration::from_secs(60),
        || {
            empty.retain(|(_, expr)| prometheus.query(expr).is_empty());
            empty.is_empty()
        },
    );
    let writers = prometheus.query(&format!(
        "sum by (flow) (mm2_checkpoint_flow_owned{{flow=\"{flow}\"}})"
    ));
    assert_eq!(writers.len(), 1, "{writers:?}");
    assert_eq!(writers[0]["value"][1], "1", "{writers:?}");

    // SIGKILL the owner.
    daemons[owner].take().expect("the owner").kill9();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let down = format!("MM2CheckpointInstanceDown {}", addrs[owner]);
    let no_owner = format!("MM2CheckpointNoOwner {flow}");
    wait_for(
        "instance-down and no-owner pending, then the standby owning the flow",
        Duration::from_secs(60),
        || {
            for (name, _, labels) in prometheus.active_alerts() {
                seen.insert(alert_key(&name, &labels));
            }
            seen.contains(&down)
                && seen.contains(&no_owner)
                && owned_by(&prometheus) == [addrs[standby].clone()]
        },
    );
    wait_for("no-owner to resolve", Duration::from_secs(30), || {
        let active = prometheus.active_alerts();
        for (name, _, labels) in &active {
            seen.insert(alert_key(name, labels));
        }
        !active
            .iter()
            .any(|(name, _, _)| name == "MM2CheckpointNoOwner")
    });
    let allowed = BTreeSet::from([
        down.clone(),
        no_owner.clone(),
        // The new owner restores from the checkpoints topic first.
        format!("MM2CheckpointNotReady {}", addrs[standby]),
    ]);
    let unexpected: Vec<&String> = seen.difference(&allowed).collect();
    assert!(
        unexpected.is_empty(),
        "unexpected alerts in the handover: {unexpected:?}"
    );
    wait_for(
        "a round of the new owner in Prometheus",
        Duration::from_secs(60),
        || {
            prometheus
                .query("mm2_checkpoint_last_round_timestamp_seconds > 0")
                .iter()
                .any(|s| s["metric"]["instance"] == addrs[standby].as_str())
        },
    );

    // Restarted with a configuration error, it exits 2 before serving
    // anything: the instance stays down, and that is the only alert.
    let broken = w.dir.join("broken.properties");
    let text = std::fs::read_to_string(&config).expect("read the config");
    std::fs::write(
        &broken,
        format!("{text}\nmm2-checkpoint.metrics.latency.granularity = topic\n"),
    )
    .expect("write the broken config");
    let mut refused = Daemon::start_at(&broken, &logs[owner], &addrs[owner]);
    assert_eq!(refused.child.wait().expect("wait").code(), Some(2));
    let only_down = |p: &Prometheus| -> Vec<String> {
        p.active_alerts()
            .iter()
            .map(|(name, _, labels)| alert_key(name, labels))
            .collect()
    };
    wait_for(
        "instance-down the only active alert",
        Duration::from_secs(60),
        || only_down(&prometheus) == [down.clone()],
    );
    for _ in 0..5 {
        assert_eq!(only_down(&prometheus), std::slice::from_ref(&down));
        std::thread::sleep(Duration::from_secs(1));
    }
    drop(refused);

    // The killed daemon comes back where Prometheus looks for it, as a
    // standby: every alert resolves.
    let back = Daemon::start_at(&config, &logs[owner], &addrs[owner]);
    wait_for("every alert resolved", Duration::from_secs(60), || {
        back.metric(&flow_metric(&w, "mm2_checkpoint_flow_owned")) == Some(0.0)
            && prometheus.query("up == 1").len() == 2
            && prometheus.active_alerts().is_empty()
    });
    assert_eq!(owned_by(&prometheus), [addrs[standby].clone()]);
    drop(prometheus);
    assert_eq!(back.sigterm().code(), Some(0));
    let last = daemons[standby].take().expect("the new owner");
    assert_eq!(last.sigterm().code(), Some(0));
}
