//! Differential test of the configuration against MirrorMaker 2's own code: for
//! each `mm2.properties` of [`CASES`], Kafka 4.1.1's `MirrorMakerConfig` builds
//! every flow's checkpoint-connector configuration and `MirrorCheckpointConfig`
//! reads it (`tests/java/CheckpointSettings.java`), and the settings it prints
//! must be the ones `MirrorConfig` derives: the same enabled flows, aliases,
//! topic names and locations, policy, filters, intervals, group-sync settings,
//! timeouts and `offset.lag.max`. The flows we checkpoint must be the ones MM2
//! runs no checkpoint task for, when the file hands any over with
//! `emit.checkpoints.enabled=false`, else all of them (docs/configuration.md,
//! "Sharing mm2.properties with MirrorMaker 2"). A case where the two may differ says so, and
//! why (docs/configuration.md, "Differences from MM2").

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use e2e::java::helpers;
use e2e::process::output_within;
use mm2_checkpoint::config::{Environment, FlowConfig, MirrorConfig};

/// The value the tests give `${env:CHECKPOINT_INTERVAL}` on both sides.
const INTERVAL_VAR: (&str, &str) = ("CHECKPOINT_INTERVAL", "17");

/// What a case expects of the two readings.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Both accept the file and agree on every setting of every flow.
    Same,
    /// Both refuse it (MM2 fails on the flow or the file, we with an error on `key`).
    BothRefuse(&'static str),
    /// MM2 runs it, we refuse it with an error on `key`, on purpose.
    WeRefuse(&'static str),
    /// MM2 refuses it, we run it, on purpose (a harmless leniency).
    WeAccept,
}

/// One configuration: a name, what is expected, and the file after the common
/// `clusters`/`bootstrap.servers` lines of [`HEADER`] (unless it starts with
/// `clusters`).
struct Case {
    name: &'static str,
    expect: Expect,
    text: &'static str,
}

const HEADER: &str =
    "clusters = A, B\nA.bootstrap.servers = a1:9092\nB.bootstrap.servers = b1:9092\n";

const CASES: &[Case] = &[
    Case {
        name: "one flow, all defaults",
        expect: Expect::Same,
        text: "A->B.enabled = true",
    },
    Case {
        name: "Apache Kafka's sample: both directions, replication factors 1",
        expect: Expect::Same,
        text: "A->B.enabled = true\nA->B.topics = .*\nB->A.enabled = true\nB->A.topics = .*\n\
               replication.factor = 1\ncheckpoints.topic.replication.factor = 1\n\
               heartbeats.topic.replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n\
               offset.storage.replication.factor = 1\nstatus.storage.replication.factor = 1\n\
               config.storage.replication.factor = 1",
    },
    Case {
        name: "per-flow intervals over top-level ones",
        expect: Expect::Same,
        text: "A->B.enabled = true\nB->A.enabled = true\nemit.checkpoints.interval.seconds = 30\n\
               B->A.emit.checkpoints.interval.seconds = 5\nrefresh.groups.interval.seconds = 120",
    },
    Case {
        name: "top-level enabled=true enables every pair of three clusters",
        expect: Expect::Same,
        text: "clusters = A, B, C\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n\
               C.bootstrap.servers = c:9092\nenabled = true",
    },
    Case {
        name: "top-level enabled=true with heartbeats off: only explicit pairs",
        expect: Expect::Same,
        text: "enabled = true\nemit.heartbeats.enabled = false\nA->B.enabled = true",
    },
    Case {
        name: "flow enabled in upper case",
        expect: Expect::Same,
        text: "A->B.enabled = TRUE",
    },
    Case {
        name: "an explicitly disabled reverse flow",
        expect: Expect::Same,
        text: "A->B.enabled = true\nB->A.enabled = false",
    },
    Case {
        name: "group offset sync on, with its interval",
        expect: Expect::Same,
        text: "A->B.enabled = true\nsync.group.offsets.enabled = true\n\
               A->B.sync.group.offsets.interval.seconds = 10",
    },
    Case {
        name: "group refresh off",
        expect: Expect::Same,
        text: "A->B.enabled = true\nrefresh.groups.enabled = false",
    },
    Case {
        name: "topic and group filters, top level and per flow",
        expect: Expect::Same,
        text: "A->B.enabled = true\ntopics = orders.*, payments\ntopics.exclude = .*-tmp\n\
               A->B.groups = billing.*, audit\nA->B.groups.exclude = billing-test",
    },
    Case {
        name: "filters with odd whitespace and empty items",
        expect: Expect::Same,
        text: "A->B.enabled = true\ntopics =  a ,b,, c \ngroups.exclude =",
    },
    Case {
        name: "identity policy by simple name: MM2 cannot load the class, we accept the name",
        expect: Expect::WeAccept,
        text: "A->B.enabled = true\nreplication.policy.class = IdentityReplicationPolicy",
    },
    Case {
        name: "identity policy by full name, per flow",
        expect: Expect::Same,
        text: "A->B.enabled = true\n\
               A->B.replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
    },
    Case {
        name: "default policy by full name",
        expect: Expect::Same,
        text: "A->B.enabled = true\n\
               replication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    },
    Case {
        name: "separator underscore",
        expect: Expect::Same,
        text: "A->B.enabled = true\nreplication.policy.separator = _",
    },
    Case {
        name: "separator __ with the internal separator kept as a dot",
        expect: Expect::Same,
        text: "A->B.enabled = true\nreplication.policy.separator = __\n\
               replication.policy.internal.topic.separator.enabled = false",
    },
    Case {
        name: "separator per flow",
        expect: Expect::Same,
        text: "A->B.enabled = true\nB->A.enabled = true\nreplication.policy.separator = -\n\
               B->A.replication.policy.separator = _",
    },
    Case {
        name: "Confluent Cloud template: empty separator and empty source alias",
        expect: Expect::Same,
        text: "A->B.enabled = true\nsource.cluster.alias =\nreplication.policy.separator =",
    },
    Case {
        name: "top-level source.cluster.alias renames every flow's source",
        expect: Expect::Same,
        text: "A->B.enabled = true\nB->A.enabled = true\nsource.cluster.alias = X",
    },
    Case {
        name: "per-flow source and target aliases",
        expect: Expect::Same,
        text: "A->B.enabled = true\nA->B.source.cluster.alias = Z\nA->B.target.cluster.alias = Y",
    },
    Case {
        name: "offset syncs on the target",
        expect: Expect::Same,
        text: "A->B.enabled = true\noffset-syncs.topic.location = target",
    },
    Case {
        name: "offset syncs on the target with alias overrides and identity policy",
        expect: Expect::Same,
        text: "A->B.enabled = true\nA->B.offset-syncs.topic.location = target\n\
               A->B.source.cluster.alias = Z\n\
               replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
    },
    Case {
        name: "checkpoints topic replication factor: broker default",
        expect: Expect::Same,
        text: "A->B.enabled = true\ncheckpoints.topic.replication.factor = -1",
    },
    Case {
        name: "timeouts and offset.lag.max",
        expect: Expect::Same,
        text: "A->B.enabled = true\nconsumer.poll.timeout.ms = 250\nadmin.timeout.ms = 5000\n\
               A->B.offset.lag.max = 0",
    },
    Case {
        name: "values with trailing whitespace",
        expect: Expect::Same,
        text: "A->B.enabled = true \nemit.checkpoints.interval.seconds = 5 \n\
               sync.group.offsets.enabled = true ",
    },
    Case {
        name: "env config provider in an interval",
        expect: Expect::Same,
        text: "A->B.enabled = true\nconfig.providers = env\n\
               config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
               emit.checkpoints.interval.seconds = ${env:CHECKPOINT_INTERVAL}",
    },
    Case {
        name: "client-role and worker keys of a dedicated-mode deployment",
        expect: Expect::Same,
        text: "A->B.enabled = true\nA.consumer.max.poll.records = 100\nB.producer.acks = all\n\
               B.admin.request.timeout.ms = 20000\nA->B.source.admin.request.timeout.ms = 30000\n\
               B.offset.flush.interval.ms = 1000\ntasks.max = 4\nB.group.id = mm2-b",
    },
    Case {
        name: "three clusters, two explicit flows into one target",
        expect: Expect::Same,
        text: "clusters = east, west, central\neast.bootstrap.servers = e:9092\n\
               west.bootstrap.servers = w:9092\ncentral.bootstrap.servers = c:9092\n\
               east->central.enabled = true\nwest->central.enabled = true\n\
               west->central.groups = west-.*\nemit.heartbeats.enabled = false",
    },
    Case {
        name: "aliases with dots",
        expect: Expect::Same,
        text: "clusters = us.east, eu.west\nus.east.bootstrap.servers = e:9092\n\
               eu.west.bootstrap.servers = w:9092\nus.east->eu.west.enabled = true",
    },
    Case {
        name: "filter keys removed in Kafka 4.0 are ignored by both",
        expect: Expect::Same,
        text: "A->B.enabled = true\ntopics.blacklist = secret.*\nA->B.groups.blacklist = test-.*",
    },
    Case {
        name: "emit.checkpoints.enabled=false: MM2 rejects its connector, we take the flow over",
        expect: Expect::Same,
        text: "A->B.enabled = true\nA->B.emit.checkpoints.enabled = false",
    },
    Case {
        name: "a shared file: one flow handed over, the other stays MM2's",
        expect: Expect::Same,
        text: "A->B.enabled = true\nB->A.enabled = true\nA->B.emit.checkpoints.enabled = false\n\
               A->B.sync.group.offsets.enabled = true\nemit.checkpoints.interval.seconds = 5",
    },
    Case {
        name: "top-level emit.checkpoints.enabled=false hands over every flow but one",
        expect: Expect::Same,
        text: "A->B.enabled = true\nB->A.enabled = true\nemit.checkpoints.enabled = false\n\
               B->A.emit.checkpoints.enabled = true",
    },
    Case {
        name: "handing over with group offset sync off: MM2 validates only emit.checkpoints",
        expect: Expect::Same,
        text: "A->B.enabled = true\nA->B.emit.checkpoints.enabled = false\n\
               A->B.sync.group.offsets.enabled = false",
    },
    Case {
        name: "emit.checkpoints.enabled explicitly true on both flows: our own file",
        expect: Expect::Same,
        text: "A->B.enabled = true\nB->A.enabled = true\nemit.checkpoints.enabled = true",
    },
    Case {
        name: "a custom replication policy class",
        expect: Expect::BothRefuse("replication.policy.class"),
        text: "A->B.enabled = true\nreplication.policy.class = com.example.MyPolicy",
    },
    Case {
        name: "FALSE in upper case: MM2 runs a connector without tasks (quirk H.15), we take over",
        expect: Expect::Same,
        text: "A->B.enabled = true\nemit.checkpoints.enabled = FALSE",
    },
    Case {
        name: "an interval of 0: MM2 takes it, we refuse values below 1",
        expect: Expect::WeRefuse("emit.checkpoints.interval.seconds"),
        text: "A->B.enabled = true\nemit.checkpoints.interval.seconds = 0",
    },
];

/// `${env:...}` values for our side, the same the Java side gets.
struct CaseEnvironment;

impl Environment for CaseEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        (name == INTERVAL_VAR.0).then(|| INTERVAL_VAR.1.to_string())
    }

    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
}

type Settings = BTreeMap<String, String>;

/// The helper's line saying whether MM2 runs checkpoint tasks for a flow.
const TASKS_SETTING: &str = "mm2 checkpoint tasks";

/// MM2's reading: per file, per flow, its settings, or an error.
type Mm2Reading = BTreeMap<String, BTreeMap<String, Result<Settings, String>>>;

fn mm2_reading(paths: &[PathBuf]) -> Mm2Reading {
    let class = "org.apache.kafka.connect.mirror.CheckpointSettings";
    let mut cmd = helpers().command(class);
    cmd.args(paths).env(INTERVAL_VAR.0, INTERVAL_VAR.1);
    let run = output_within(&mut cmd, Duration::from_secs(120)).expect("run CheckpointSettings");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.is_some_and(|s| s.success()),
        "CheckpointSettings failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut out = Mm2Reading::new();
    for line in stdout.lines() {
        let mut fields = line.splitn(4, '\t');
        let (Some(file), Some(flow), Some(setting), Some(value)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            panic!("unexpected CheckpointSettings line: {line:?}");
        };
        let flows = out.entry(file.to_string()).or_default();
        if setting == "error" {
            flows.insert(flow.to_string(), Err(value.to_string()));
        } else if let Ok(settings) = flows.entry(flow.to_string()).or_insert(Ok(Settings::new())) {
            settings.insert(setting.to_string(), value.to_string());
        }
    }
    out
}

/// A list value as Java's `ConfigDef` parses it (`\s*,\s*`), joined by commas.
fn list(value: &str) -> String {
    let value = value.trim();
    if value.is_empty() {
        return String::new();
    }
    value
        .split(',')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(",")
}

/// Our reading of one flow, in the helper's setting names.
fn our_settings(f: &FlowConfig) -> Settings {
    let policy = &f.replication_policy;
    let came_back = format!("{}.orders", f.target_alias);
    [
        ("source.cluster.alias", f.source_alias.clone()),
        ("target.cluster.alias", f.target_alias.clone()),
        ("checkpoints.topic", f.checkpoints_topic()),
        ("offset-syncs.topic", f.offset_syncs_topic()),
        (
            "offset-syncs.topic.location",
            f.offset_syncs_topic_location.as_str().to_string(),
        ),
        ("replication.policy.class", policy.class_name().to_string()),
        (
            "remote topic of orders",
            policy.format_remote_topic(&f.source_alias, "orders"),
        ),
        (
            "source of <target>.orders",
            policy
                .topic_source(&came_back)
                .unwrap_or("null")
                .to_string(),
        ),
        (
            "emit.checkpoints.interval.seconds",
            f.emit_checkpoints_interval.as_secs().to_string(),
        ),
        (
            "sync.group.offsets.enabled",
            f.sync_group_offsets_enabled.to_string(),
        ),
        (
            "sync.group.offsets.interval.seconds",
            f.sync_group_offsets_interval.as_secs().to_string(),
        ),
        (
            "refresh.groups.enabled",
            f.refresh_groups_enabled.to_string(),
        ),
        (
            "refresh.groups.interval.seconds",
            f.refresh_groups_interval.as_secs().to_string(),
        ),
        ("topics", list(&f.filters.topics)),
        ("topics.exclude", list(&f.filters.topics_exclude)),
        ("groups", list(&f.filters.groups)),
        ("groups.exclude", list(&f.filters.groups_exclude)),
        (
            "checkpoints.topic.replication.factor",
            f.checkpoints_topic_replication_factor.to_string(),
        ),
        (
            "consumer.poll.timeout.ms",
            f.consumer_poll_timeout.as_millis().to_string(),
        ),
        ("admin.timeout.ms", f.admin_timeout.as_millis().to_string()),
        ("offset.lag.max", f.offset_lag_max.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The helper names the "came back" probe after the target alias; ours uses a
/// placeholder key.
fn normalise(mut settings: Settings) -> Settings {
    let key = settings
        .keys()
        .find(|k| k.starts_with("source of "))
        .cloned();
    if let Some(key) = key
        && let Some(v) = settings.remove(&key)
    {
        settings.insert("source of <target>.orders".to_string(), v);
    }
    settings
}

/// The flows and settings where two readings differ, as `flow setting: MM2's / ours`.
fn differences(theirs: &BTreeMap<String, Settings>, ours: &BTreeMap<String, Settings>) -> String {
    let empty = Settings::new();
    let mut out = Vec::new();
    for flow in theirs
        .keys()
        .chain(ours.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let (t, o) = (theirs.get(flow), ours.get(flow));
        if t.is_none() || o.is_none() {
            out.push(format!(
                "flow {flow} is enabled only by {}",
                if t.is_some() { "MM2" } else { "us" }
            ));
            continue;
        }
        let (t, o) = (t.unwrap_or(&empty), o.unwrap_or(&empty));
        for key in t
            .keys()
            .chain(o.keys())
            .collect::<std::collections::BTreeSet<_>>()
        {
            if t.get(key) != o.get(key) {
                out.push(format!(
                    "{flow} {key}: MM2 {:?} / ours {:?}",
                    t.get(key),
                    o.get(key)
                ));
            }
        }
    }
    out.join("; ")
}

#[test]
fn our_reading_of_each_config_is_mm2s() {
    assert!(CASES.len() >= 30, "the table must hold at least 30 configs");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("config-differential");
    std::fs::create_dir_all(&dir).expect("create the case directory");
    let paths: Vec<PathBuf> = CASES
        .iter()
        .enumerate()
        .map(|(i, case)| {
            let text = if case.text.starts_with("clusters") {
                format!("{}\n", case.text)
            } else {
                format!("{HEADER}{}\n", case.text)
            };
            let path = dir.join(format!("case-{i:02}.properties"));
            std::fs::write(&path, text).expect("write a case");
            path
        })
        .collect();
    let mm2 = mm2_reading(&paths);
    let mut failures = Vec::new();
    for (case, path) in CASES.iter().zip(&paths) {
        let theirs = mm2
            .get(path.to_str().expect("utf-8 path"))
            .cloned()
            .unwrap_or_default();
        let ours = MirrorConfig::load(path, &CaseEnvironment);
        let mm2_refuses = theirs.values().any(Result::is_err);
        match (case.expect, ours) {
            (Expect::Same, Ok(config)) => {
                let ours: BTreeMap<String, Settings> = config
                    .flows
                    .iter()
                    .map(|f| (f.name(), our_settings(f)))
                    .collect();
                let mut theirs: BTreeMap<String, Settings> = theirs
                    .into_iter()
                    .map(|(flow, r)| match r {
                        Ok(s) => (flow, normalise(s)),
                        Err(e) => (flow, Settings::from([("error".to_string(), e)])),
                    })
                    .collect();
                // Which flows MM2 checkpoints itself: if it leaves any to us, we
                // take exactly those and leave it the rest (never both on one
                // flow); otherwise the file is ours and we take them all.
                let mm2_runs_tasks: BTreeMap<String, bool> = theirs
                    .iter_mut()
                    .map(|(flow, s)| {
                        let tasks = s.remove(TASKS_SETTING);
                        (flow.clone(), tasks.as_deref() != Some("no"))
                    })
                    .collect();
                let shared = mm2_runs_tasks.values().any(|runs| !runs);
                let left_to_mm2: Vec<String> = mm2_runs_tasks
                    .iter()
                    .filter(|(_, runs)| shared && **runs)
                    .map(|(flow, _)| flow.clone())
                    .collect();
                if config.ownership.left_to_mm2() != left_to_mm2.as_slice() {
                    failures.push(format!(
                        "{}: we leave {:?} to MM2, MM2 keeps checkpointing {left_to_mm2:?}",
                        case.name,
                        config.ownership.left_to_mm2()
                    ));
                }
                theirs.retain(|flow, _| !left_to_mm2.contains(flow));
                if ours != theirs {
                    failures.push(format!("{}: {}", case.name, differences(&theirs, &ours)));
                }
            }
            (Expect::Same, Err(e)) => {
                failures.push(format!("{}: we refuse it: {e}", case.name));
            }
            (Expect::WeAccept, ours) => {
                if let Err(e) = ours {
                    failures.push(format!("{}: we refuse it: {e}", case.name));
                }
                if !mm2_refuses {
                    failures.push(format!("{}: MM2 accepts it: {theirs:?}", case.name));
                }
            }
            (Expect::BothRefuse(key) | Expect::WeRefuse(key), Ok(_)) => {
                failures.push(format!(
                    "{}: we accept it, expected an error on {key}",
                    case.name
                ));
            }
            (Expect::BothRefuse(key) | Expect::WeRefuse(key), Err(e)) => {
                if !e.key().is_some_and(|k| k.ends_with(key)) {
                    failures.push(format!(
                        "{}: error on {:?}, expected {key}: {e}",
                        case.name,
                        e.key()
                    ));
                }
                let both = matches!(case.expect, Expect::BothRefuse(_));
                if both != mm2_refuses {
                    failures.push(format!(
                        "{}: MM2 {} it: {theirs:?}",
                        case.name,
                        if mm2_refuses { "refuses" } else { "accepts" }
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The checkpoint connector configurations MM2 itself builds (with
/// `MirrorMakerConfig.connectorBaseConfig`) from the `mm2.properties` files the
/// interop tests run MM2 with (`e2e::mm2::Mm2Config`, so they cannot drift):
/// read as connector-style input, as properties and as Connect REST JSON, each
/// must give the flow the file gives.
#[test]
fn the_connector_configs_mm2_builds_read_like_the_file_they_came_from() {
    use e2e::mm2::{Checkpoints, Mm2Config};
    use mm2_checkpoint::config::{CONNECTOR_FLOW, ConfigFormat};

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("connector-differential");
    std::fs::create_dir_all(&dir).expect("create the case directory");
    let mut with_extras = Mm2Config::new("orders.*", "billing.*");
    with_extras.extra = vec![
        (
            "source->target.sync.group.offsets.enabled".into(),
            "true".into(),
        ),
        ("source.consumer.request.timeout.ms".into(), "20000".into()),
        ("replication.policy.separator".into(), "_".into()),
        (
            "source->target.offset-syncs.topic.location".into(),
            "target".into(),
        ),
    ];
    let configs = [
        Mm2Config::new("orders", "billing"),
        Mm2Config::new("orders", "billing").with_checkpoints(Checkpoints::Refused),
        Mm2Config::new("orders", "billing").with_checkpoints(Checkpoints::NoGroups),
        with_extras,
    ];
    let paths: Vec<PathBuf> = configs
        .iter()
        .enumerate()
        .map(|(i, config)| {
            let path = dir.join(format!("mm2-{i}.properties"));
            std::fs::write(&path, config.render("a1:9092", "b1:9092")).expect("write a case");
            path
        })
        .collect();
    let class = "org.apache.kafka.connect.mirror.CheckpointSettings";
    let mut cmd = helpers().command(class);
    cmd.arg("--connector").args(&paths);
    let run = output_within(&mut cmd, Duration::from_secs(120)).expect("run CheckpointSettings");
    assert!(
        run.status.is_some_and(|s| s.success()),
        "CheckpointSettings failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let mut failures = Vec::new();
    for path in &paths {
        let file = path.to_str().expect("utf-8 path");
        let connector: Vec<(String, String)> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{file}\t{CONNECTOR_FLOW}\tconnector\t")))
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert!(
            connector.iter().any(|(k, _)| k == "connector.class"),
            "no connector config for {file}: {stdout}"
        );
        let from_file = MirrorConfig::load(path, &CaseEnvironment).expect("the file is accepted");
        let expected = our_settings(&from_file.flows[0]);
        // As properties, escaped the way java.util.Properties reads them.
        let escape = |s: &str, in_key: bool| -> String {
            let mut out = String::new();
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '=' | ':' | ' ' if in_key => {
                        out.push('\\');
                        out.push(c);
                    }
                    _ => out.push(c),
                }
            }
            out
        };
        let properties: String = connector
            .iter()
            .map(|(k, v)| format!("{} = {}\n", escape(k, true), escape(v, false)))
            .collect();
        let json = serde_json::json!({
            "name": "mirror-checkpoint",
            "config": connector.iter().cloned().collect::<BTreeMap<String, String>>(),
        })
        .to_string();
        for (what, text) in [("properties", properties), ("JSON", json)] {
            match MirrorConfig::from_text(&text, ConfigFormat::Auto, &CaseEnvironment) {
                Err(e) => failures.push(format!("{file} as {what}: refused: {e}")),
                Ok(ours) => {
                    let flow = &ours.flows[0];
                    if our_settings(flow) != expected
                        || flow.source != from_file.flows[0].source
                        || flow.target != from_file.flows[0].target
                    {
                        failures.push(format!(
                            "{file} as {what}: {:?} / the file's {:?}",
                            flow, from_file.flows[0]
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
