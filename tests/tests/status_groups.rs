//! `mm2-checkpoint status` against the real clusters with the real
//! MirrorMaker 2 (docs/operations.md, "Status").
//!
//! MM2 4.1.1 mirrors a fresh one-partition topic from `source` to `target`
//! with `offset.lag.max = 0` and its checkpoint connector refused. Group
//! `…-idle` commits at offset 100 on the source (it read all 100 records)
//! and has no member; group
//! `…-busy` has a member (Kafka's console consumer) on the source.
//! `run --once` writes their checkpoints. Then `status`, read-only, must say
//! (polled until the offset syncs cover the idle group's commit): the busy
//! group is not ready because of its members on the source, the idle group
//! is ready and exact at 100 (the offset sync of the record it read last,
//! 99, with nothing after its copy on the target),
//! each with the age of its newest checkpoint; the flow has no membership
//! and the offset-syncs and checkpoints topics have records. The table says
//! the same. Nothing is committed on the target. Then `run` with
//! `--metrics-addr` and membership on serves the same document on
//! `GET /status` and counts the idle group in
//! `status_groups{status="exact"}`, and `status` names its member as the
//! flow's owner.
//!
//! `status --to source` (the way back, failing back): a group committed at
//! 100 on the target's remote topic (it read all of it), idle, is ready at
//! 100 on the source, its partition bounded with nothing to read again
//! (through the offset sync of record 99, at the end of both partitions), so
//! the group counts as exact, read on the target; the
//! checkpoints it reports are the reverse ones on the source (none
//! written); nothing is committed on the source.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use e2e::binary::mm2;
use e2e::faults::{Daemon, get};
use e2e::interop::{ok, our_config, run_once, test_dir};
use e2e::mm2::{Mm2Config, Mm2Process, SOURCE_ALIAS, TARGET_ALIAS, remote_topic};
use e2e::{Listener, clusters, unique_name};
use kafka_lite::ProduceOptions;
use kafka_lite::records::ProducerRecord;
use mm2_checkpoint::driver::FlowCluster;

const STARTUP_BUDGET: Duration = Duration::from_secs(120);

/// Runs `status --format json` for `groups`; returns the document.
fn status_json(props: &std::path::Path, groups: &[&str]) -> serde_json::Value {
    status_json_with(props, &[], groups)
}

/// [`status_json`] with the arguments `extra` too (e.g. `--to source`).
fn status_json_with(props: &std::path::Path, extra: &[&str], groups: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "status",
        "--config",
        props.to_str().expect("utf-8"),
        "--flow",
        "source->target",
        "--format",
        "json",
    ];
    args.extend(extra);
    for g in groups {
        args.extend(["--group", g]);
    }
    let out = mm2(&args, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("status printed no JSON ({e}):\n{stdout}\n{stderr}"))
}

/// A fresh one-partition topic named after `prefix` with 100 records on the
/// source, mirrored to the target by the real MM2 (its checkpoint connector
/// refused), and our properties for it in the test's directory.
struct Mirrored {
    topic: String,
    remote: String,
    dir: PathBuf,
    props: PathBuf,
    _mm2: Mm2Process,
}

fn mirrored(prefix: &str) -> Mirrored {
    let c = clusters();
    let rt = e2e::world::rt();
    let topic = unique_name(prefix);
    let remote = remote_topic(&topic);
    let source_client = e2e::world::client(c.source());
    ok(
        rt.block_on(source_client.create_topic(&topic, 1, 1, &[])),
        "creating the source topic",
    );
    let kafka = ok(rt.block_on(source_client.kafka()), "source client");
    // Now: a timestamp far in the past would let retention delete the records.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let records: Vec<ProducerRecord> = (0..100)
        .map(|i| ProducerRecord {
            timestamp: now,
            key: None,
            value: Some(Bytes::from(format!("value-{i}"))),
            headers: Vec::new(),
        })
        .collect();
    ok(
        rt.block_on(kafka.produce(&topic, 0, &records, &ProduceOptions::default())),
        "producing to the source",
    );
    let config = Mm2Config::new(&topic, "none").without_checkpoints();
    let mm2 = ok(
        Mm2Process::start_replicating(c, &config, STARTUP_BUDGET),
        "starting MirrorMaker 2 and its replication task",
    );
    let dir = test_dir(&topic);
    let props = our_config(&dir, &topic, ".*", "");
    Mirrored {
        topic,
        remote,
        dir,
        props,
        _mm2: mm2,
    }
}

/// The group named `name` in the flow's report.
fn group<'a>(flow: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    flow["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["group"] == name)
        .unwrap_or_else(|| panic!("no group {name} in {flow}"))
}

#[test]
fn status_says_an_idle_group_at_a_sync_is_ready_and_exact_and_a_group_with_members_is_not() {
    let c = clusters();
    let rt = e2e::world::rt();
    let Mirrored {
        topic,
        remote,
        dir,
        props,
        _mm2,
    } = mirrored("status");
    let idle = format!("{topic}-idle");
    let busy = format!("{topic}-busy");
    let source_client = e2e::world::client(c.source());
    let target_client = e2e::world::client(c.target());

    let offsets = BTreeMap::from([(
        mm2_checkpoint::core::TopicPartition::new(topic.as_str(), 0),
        mm2_checkpoint::core::CommittedOffset::new(100, ""),
    )]);
    ok(
        rt.block_on(source_client.commit_group_offsets(&idle, &offsets)),
        "committing the idle group on the source",
    );
    // A member of `busy` on the source, reading from the start.
    let mut member = std::process::Command::new(c.tool("kafka-console-consumer"))
        .args([
            "--bootstrap-server",
            c.source().bootstrap.get(Listener::Plaintext),
        ])
        .args(["--topic", &topic, "--group", &busy, "--from-beginning"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn kafka-console-consumer");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let described = rt.block_on(source_client.describe_groups(std::slice::from_ref(&busy)));
        let committed = rt.block_on(source_client.fetch_group_offsets(std::slice::from_ref(&busy)));
        let joined = described.is_ok_and(|d| d.get(&busy).is_some_and(|g| g.members > 0));
        let has_commit = committed.is_ok_and(|c| {
            c.get(&busy)
                .is_some_and(|o| o.as_ref().is_ok_and(|o| !o.is_empty()))
        });
        if joined && has_commit {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the console consumer never joined and committed"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // The idle group waits until the syncs cover its commit; then it is exact.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let doc = status_json(&props, &[&idle, &busy]);
        if group(&doc["flows"][0], &idle)["status"] == "exact" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the idle group never became ready: {doc:#}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    // Checkpoints for both groups, then the status to check.
    run_once(&props);
    let doc = status_json(&props, &[&idle, &busy]);
    let _ = member.kill();
    let _ = member.wait();
    println!("{doc:#}");
    let flow = &doc["flows"][0];
    assert_eq!(flow["flow"], "source->target", "{doc}");
    assert!(flow["membership"].is_null(), "no membership: {doc}");
    assert!(flow["daemon"].is_null(), "not a daemon: {doc}");
    assert!(
        flow["offset_syncs"]["end_offset"].as_i64() > Some(0),
        "{doc}"
    );
    assert!(
        flow["offset_syncs"]["newest_ms"].as_i64().is_some(),
        "{doc}"
    );
    assert!(
        flow["checkpoints"]["end_offset"].as_i64() > Some(0),
        "{doc}"
    );

    let i = group(flow, &idle);
    assert_eq!(i["ready"], true, "{doc}");
    assert_eq!(i["worst_reread"], 0, "{doc}");
    assert!(i["checkpoint_age_ms"].as_i64().is_some(), "{doc}");
    let p = &i["partitions"][0];
    assert_eq!(p["committed"], 100, "{doc}");
    assert_eq!(p["remote_topic"], remote.as_str(), "{doc}");
    assert_eq!(p["status"], "exact", "{doc}");
    // A fresh remote topic: the copy of record 99 is at offset 99.
    assert_eq!(p["position"], 100, "{doc}");

    let b = group(flow, &busy);
    assert_eq!(b["ready"], false, "{doc}");
    assert_eq!(b["status"], "not_ready", "{doc}");
    let reason = b["reason"].as_str().expect("a reason");
    assert!(
        reason.contains(&format!("active members on {SOURCE_ALIAS}")),
        "{doc}"
    );
    assert_eq!(flow["summary"]["exact"], 1, "{doc}");
    assert_eq!(flow["summary"]["not_ready"], 1, "{doc}");

    // The table says the same.
    let out = mm2(
        &[
            "status",
            "--config",
            props.to_str().expect("utf-8"),
            "--group",
            &idle,
        ],
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("owner: no membership"), "{stdout}");
    let row: Vec<&str> = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(&idle))
        .unwrap_or_else(|| panic!("no row for {idle}:\n{stdout}"))
        .split_whitespace()
        .collect();
    assert_eq!(&row[1..3], ["exact", "0"], "{stdout}");

    // Read-only: nothing was committed on the target.
    let committed = ok(
        rt.block_on(target_client.fetch_group_offsets(&[idle.clone(), busy.clone()])),
        "listing the groups on the target",
    );
    for g in [&idle, &busy] {
        assert!(
            committed
                .get(g)
                .is_none_or(|o| o.as_ref().is_ok_and(|o| o.is_empty())),
            "status committed {g} on the target: {committed:?}"
        );
    }

    // The daemon, with membership on, serves the same document on /status,
    // and its gauges; `status` names it as the flow's owner.
    let member_dir = dir.join("member");
    std::fs::create_dir_all(&member_dir).expect("dir");
    let instance = format!("{topic}-instance");
    let member_props = our_config(
        &member_dir,
        &topic,
        ".*",
        &format!(
            "mm2-checkpoint.membership.enabled = true\n\
             mm2-checkpoint.membership.group.id = {topic}-membership\n\
             mm2-checkpoint.membership.instance.id = {instance}\n\
             mm2-checkpoint.status.interval.ms = 60000\n"
        ),
    );
    let daemon = Daemon::start(&member_props, &dir.join("daemon.log"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let served = loop {
        if let Some((200, body)) = get(&daemon.addr, "/status") {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "no /status from the daemon; log:\n{}",
            daemon.log_text()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let served: serde_json::Value = serde_json::from_str(&served)
        .unwrap_or_else(|e| panic!("/status is not JSON ({e}): {served}"));
    let flow = &served["flows"][0];
    assert_eq!(flow["flow"], "source->target", "{served}");
    assert!(
        flow["daemon"]
            .as_object()
            .is_some_and(|d| d.contains_key("last_round_ms")),
        "{served}"
    );
    let i = group(flow, &idle);
    assert_eq!(i["status"], "exact", "{served}");
    assert_eq!(i["partitions"][0]["position"], 100, "{served}");
    let exact = daemon
        .metric("mm2_checkpoint_status_groups{flow=\"source->target\",status=\"exact\"}")
        .unwrap_or_else(|| panic!("no status_groups gauge; log:\n{}", daemon.log_text()));
    assert!(exact >= 1.0, "{exact}");

    let deadline = Instant::now() + Duration::from_secs(60);
    let membership = loop {
        let doc = status_json(&member_props, &[&idle]);
        let m = doc["flows"][0]["membership"].clone();
        if m["owner"].is_string() {
            break m;
        }
        assert!(
            Instant::now() < deadline,
            "status never named an owner: {doc:#}\nlog:\n{}",
            daemon.log_text()
        );
        std::thread::sleep(Duration::from_secs(1));
    };
    assert_eq!(
        membership["group"],
        format!("{topic}-membership"),
        "{membership}"
    );
    assert_eq!(membership["state"], "Stable", "{membership}");
    let members = membership["members"].as_array().expect("members");
    assert_eq!(members.len(), 1, "{membership}");
    assert_eq!(members[0]["owner"], true, "{membership}");
    assert_eq!(members[0]["instance_id"], instance.as_str(), "{membership}");
}

#[test]
fn status_to_the_source_says_a_group_idle_on_the_target_is_ready_to_fail_back() {
    let c = clusters();
    let rt = e2e::world::rt();
    let Mirrored {
        topic,
        remote,
        props,
        _mm2,
        ..
    } = mirrored("status-back");
    let back = format!("{topic}-back");
    let source_client = e2e::world::client(c.source());
    let target_client = e2e::world::client(c.target());
    // The group failed over and read the whole remote topic on the target.
    let offsets = BTreeMap::from([(
        mm2_checkpoint::core::TopicPartition::new(remote.as_str(), 0),
        mm2_checkpoint::core::CommittedOffset::new(100, ""),
    )]);
    ok(
        rt.block_on(target_client.commit_group_offsets(&back, &offsets)),
        "committing the group on the target",
    );

    let to_source = ["--to", SOURCE_ALIAS];
    let deadline = Instant::now() + Duration::from_secs(60);
    let doc = loop {
        let doc = status_json_with(&props, &to_source, &[&back]);
        if group(&doc["flows"][0], &back)["ready"] == true {
            break doc;
        }
        assert!(
            Instant::now() < deadline,
            "the group never became ready to fail back: {doc:#}"
        );
        std::thread::sleep(Duration::from_secs(1));
    };
    println!("{doc:#}");
    let flow = &doc["flows"][0];
    assert_eq!(flow["direction"], "back", "{doc}");
    assert_eq!(flow["to"], SOURCE_ALIAS, "{doc}");
    // The reverse checkpoints' topic on the source: none written.
    assert_eq!(
        flow["checkpoints"]["topic"],
        format!("{TARGET_ALIAS}.checkpoints.internal"),
        "{doc}"
    );
    let g = group(flow, &back);
    // Nothing to read again: the group counts as exact.
    assert_eq!(g["status"], "exact", "{doc}");
    assert_eq!(g["worst_reread"], 0, "{doc}");
    assert!(g["checkpoint_age_ms"].is_null(), "{doc}");
    let p = &g["partitions"][0];
    assert_eq!(p["topic"], remote.as_str(), "{doc}");
    assert_eq!(p["committed"], 100, "{doc}");
    assert_eq!(p["remote_topic"], topic.as_str(), "{doc}");
    // A fresh remote topic: record 99's copy is at offset 99, with a sync;
    // the group read it, and nothing follows on either side.
    assert_eq!(p["position"], 100, "{doc}");
    assert_eq!(p["status"], "bounded", "{doc}");
    assert_eq!(p["reread"], 0, "{doc}");

    // The table names the direction.
    let out = mm2(
        &[
            "status",
            "--config",
            props.to_str().expect("utf-8"),
            "--flow",
            "source->target",
            "--to",
            SOURCE_ALIAS,
            "--group",
            &back,
        ],
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "flow source->target (back: groups to {SOURCE_ALIAS})\n"
        )),
        "{stdout}"
    );

    // Read-only: nothing was committed on the source.
    let committed = ok(
        rt.block_on(source_client.fetch_group_offsets(std::slice::from_ref(&back))),
        "listing the group on the source",
    );
    assert!(
        committed
            .get(&back)
            .is_none_or(|o| o.as_ref().is_ok_and(|o| o.is_empty())),
        "status committed {back} on the source: {committed:?}"
    );
}
