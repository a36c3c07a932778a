//! A planned cutover both ways with the real MirrorMaker 2 and Kafka's own
//! Java consumer, while producers keep writing (docs/operations.md, "Planned
//! cutover" and its runbook, whose steps this test takes in order).
//!
//! MM2 4.1.1 mirrors a fresh two-partition topic from `source` to `target`
//! with `offset.lag.max = 10` (so most commits fall between two syncs and
//! get a re-read bound) and its checkpoint connector refused. A producer
//! thread writes to both partitions all along; every record names its
//! partition and source offset (`value-<p>-<i>`).
//!
//! Forward: a consumer group reads some records on the source, commits and
//! leaves (the runbook's "stop the consumers"). `cutover --to target` as a
//! dry run commits nothing; with `--execute` it commits the group on the
//! remote topic. The group then resumes on the target with
//! `auto.offset.reset=none` (so it reads from the committed positions or
//! fails): per partition, no record from its source commit on is missing and
//! it reads again at most the printed bound (none where printed exact).
//!
//! Back: the group leaves the target in turn, `cutover --to source
//! --execute` carries its commits on the remote topic back through the same
//! offset syncs, and it resumes on the source: nothing missing after the
//! last record it read on the target, re-reads within the printed bound.
//!
//! The `cutover` commands of the forward and back steps are the runbook's,
//! read from docs/operations.md and run as written there (with this test's
//! file, flow, clusters and group put in), their tables parsed. A second
//! group goes forward with precise translation and content search on, as
//! JSON: content search proves every position exact except a commit just
//! past a sync, which the syncs alone answer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use e2e::binary::mm2;
use e2e::interop::{ok, our_config, test_dir};
use e2e::java::helpers;
use e2e::mm2::{Mm2Config, Mm2Process, SOURCE_ALIAS, TARGET_ALIAS, remote_topic};
use e2e::{Listener, clusters, unique_name};
use kafka_lite::ProduceOptions;
use kafka_lite::records::ProducerRecord;
use mm2_checkpoint::driver::FlowCluster;

const PARTITIONS: i32 = 2;
const STARTUP_BUDGET: Duration = Duration::from_secs(120);

/// Writes `value-<p>-<i>` (i = the source offset) to every partition of
/// `topic`, a few records at a time, until stopped.
struct Producer {
    stop: Arc<AtomicBool>,
    /// Records written to each partition so far (the lowest of the two).
    written: Arc<AtomicI64>,
    thread: Option<JoinHandle<()>>,
}

impl Producer {
    fn start(topic: &str) -> Producer {
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicI64::new(0));
        let (topic, stop2, written2) = (topic.to_owned(), stop.clone(), written.clone());
        let thread = std::thread::spawn(move || {
            let rt = e2e::world::rt();
            let client = e2e::world::client(clusters().source());
            let kafka = ok(rt.block_on(client.kafka()), "source client");
            let mut next = 0i64;
            while !stop2.load(Ordering::Relaxed) {
                for p in 0..PARTITIONS {
                    // Now: a timestamp far in the past would let retention
                    // delete the records under the consumers.
                    let timestamp = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
                    let records: Vec<ProducerRecord> = (next..next + 5)
                        .map(|i| ProducerRecord {
                            timestamp,
                            key: None,
                            value: Some(Bytes::from(format!("value-{p}-{i}"))),
                            headers: Vec::new(),
                        })
                        .collect();
                    let base = ok(
                        rt.block_on(kafka.produce(&topic, p, &records, &ProduceOptions::default())),
                        "producing to the source",
                    );
                    assert_eq!(base, next, "source offsets are the record numbers");
                }
                next += 5;
                written2.store(next, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Producer {
            stop,
            written,
            thread: Some(thread),
        }
    }

    fn wait_for(&self, records: i64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while self.written.load(Ordering::Relaxed) < records {
            assert!(
                std::time::Instant::now() < deadline,
                "the producer is stuck"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a group member read of one partition: the offset it started at, and
/// the source offsets the records named.
#[derive(Debug, Default, Clone)]
struct Read {
    from: Option<i64>,
    indexes: Vec<i64>,
}

/// Consumes as group member (`tests/java/GroupConsume.java`); returns what
/// it read, per partition.
fn consume(
    bootstrap: &str,
    group: &str,
    topic: &str,
    count: u32,
    reset: &str,
) -> BTreeMap<i32, Read> {
    let out = ok(
        helpers().run(
            "GroupConsume",
            &[bootstrap, group, topic, &count.to_string(), reset],
        ),
        "GroupConsume",
    );
    let mut read: BTreeMap<i32, Read> = BTreeMap::new();
    for line in out.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let ["record", partition, offset, value] = fields.as_slice() else {
            panic!("unexpected GroupConsume line: {line}");
        };
        let partition: i32 = partition.parse().expect("partition");
        let index = value
            .strip_prefix(&format!("value-{partition}-"))
            .and_then(|i| i.parse().ok())
            .unwrap_or_else(|| panic!("a record not from the source topic: {line}"));
        let r = read.entry(partition).or_default();
        r.from.get_or_insert(offset.parse().expect("offset"));
        r.indexes.push(index);
    }
    read
}

/// One partition of a cutover's JSON.
#[derive(Debug)]
struct Planned {
    committed: i64,
    translated: i64,
    reread: i64,
    status: String,
}

/// The `mm2-checkpoint cutover` command lines of the planned cutover
/// runbook in docs/operations.md, in order: the dry run, then the execution.
fn runbook_commands() -> Vec<String> {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/operations.md"),
    )
    .expect("docs/operations.md");
    let section = page
        .split("\n## Planned cutover runbook\n")
        .nth(1)
        .expect("the runbook section")
        .split("\n## ")
        .next()
        .unwrap_or_default();
    let commands: Vec<String> = section
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("mm2-checkpoint cutover "))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        commands.len(),
        2,
        "the runbook's dry run and execution: {commands:?}"
    );
    assert!(!commands[0].contains("--execute") && commands[1].ends_with("--execute"));
    commands
}

/// Runs a runbook command line as written, with this test's file, flow,
/// cluster and group in place of the runbook's, and parses its table:
/// the exit code and the partitions by number.
fn run_runbook(line: &str, props: &Path, to: &str, group: &str) -> (i32, BTreeMap<i32, Planned>) {
    let line = line
        .replace(
            "--config mm2.properties",
            &format!("--config {}", props.display()),
        )
        .replace("--flow 'S->T'", "--flow source->target")
        .replace("--to T", &format!("--to {to}"))
        .replace("--group G", &format!("--group {group}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&words[..2], ["mm2-checkpoint", "cutover"], "{line}");
    assert!(
        !line.contains('\'') && !line.contains("S->T"),
        "substituted: {line}"
    );
    let execute = line.contains("--execute");
    let out = mm2(&words[1..], Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code().expect("an exit code");
    let mut rows = stdout
        .lines()
        .skip_while(|l| !l.starts_with("GROUP "))
        .skip(1);
    let mut parts = BTreeMap::new();
    for row in rows.by_ref().take_while(|l| *l != "# groups:") {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let [
            g,
            _topic,
            partition,
            committed,
            _to_topic,
            translated,
            reread,
            status,
            ..,
        ] = cells[..]
        else {
            panic!("a short row: {row}\n{stdout}");
        };
        assert_eq!(g, group, "{stdout}");
        assert!(
            status == "exact" || status == "bounded",
            "{stdout}\n{stderr}"
        );
        parts.insert(
            partition.parse().expect("partition"),
            Planned {
                committed: committed.parse().expect("committed"),
                translated: translated.parse().expect("translated"),
                reread: reread.parse().expect("re-read"),
                status: status.to_owned(),
            },
        );
    }
    let result = rows.next().unwrap_or_default();
    let expected = if execute {
        format!("{group}: committed {PARTITIONS} partitions on {to}")
    } else {
        format!("{group}: dry run: would be committed")
    };
    assert!(
        result.starts_with(&expected),
        "{result:?}, not {expected:?}:\n{stdout}\n{stderr}"
    );
    assert_eq!(parts.len(), PARTITIONS as usize, "{stdout}");
    let all_exact = parts.values().all(|p| p.status == "exact");
    assert_eq!(code, if all_exact { 0 } else { 4 }, "{stdout}\n{stderr}");
    println!("runbook: {line}: exit {code}, {parts:?}");
    (code, parts)
}

/// Runs `cutover --format json` and returns its exit code and its partitions
/// by partition number with the sync each was translated through, checking
/// the JSON's frame.
fn cutover_json(
    props: &Path,
    to: &str,
    group: &str,
    execute: bool,
) -> (i32, BTreeMap<i32, (Planned, i64)>) {
    let mut args = vec![
        "cutover",
        "--config",
        props.to_str().expect("utf-8"),
        "--flow",
        "source->target",
        "--to",
        to,
        "--group",
        group,
        "--timeout",
        "60s",
        "--format",
        "json",
    ];
    if execute {
        args.push("--execute");
    }
    let out = mm2(&args, Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code().expect("an exit code");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("cutover printed no JSON ({e}), exit {code}:\n{stdout}\n{stderr}")
    });
    assert_eq!(doc["to"], to, "{doc}");
    assert_eq!(doc["execute"], execute, "{doc}");
    let g = &doc["groups"][0];
    assert_eq!(g["group"], group, "{doc}");
    assert_eq!(g["decision"], "ready", "{doc}\n{stderr}");
    assert_eq!(g["committed"], execute, "{doc}\n{stderr}");
    let mut parts = BTreeMap::new();
    for p in g["partitions"].as_array().expect("partitions") {
        let status = p["status"].as_str().expect("status").to_owned();
        assert!(status == "exact" || status == "bounded", "{doc}");
        parts.insert(
            i32::try_from(p["partition"].as_i64().expect("partition")).expect("i32"),
            (
                Planned {
                    committed: p["committed_offset"].as_i64().expect("committed"),
                    translated: p["translated_offset"].as_i64().expect("translated"),
                    reread: p["reread_bound"].as_i64().expect("bound"),
                    status,
                },
                p["sync"]["source_offset"].as_i64().expect("sync"),
            ),
        );
    }
    assert_eq!(parts.len(), PARTITIONS as usize, "{doc}");
    let all_exact = parts.values().all(|(p, _)| p.status == "exact");
    assert_eq!(code, if all_exact { 0 } else { 4 }, "{doc}\n{stderr}");
    println!("cutover --to {to} (execute: {execute}): exit {code}, {parts:?}");
    (code, parts)
}

/// Checks a resumed group: from `position` (the first source offset it had
/// not read) on, nothing up to the last record it read is missing, and it
/// read again at most `bound` records below `position`.
fn check_resumed(what: &str, position: i64, bound: i64, read: &[i64]) {
    let seen: BTreeSet<i64> = read.iter().copied().collect();
    let last = *seen
        .last()
        .unwrap_or_else(|| panic!("{what}: read nothing"));
    let lost: Vec<i64> = (position..=last).filter(|i| !seen.contains(i)).collect();
    assert!(
        lost.is_empty(),
        "{what}: lost {lost:?} (resumed from {position})"
    );
    let again = read.iter().filter(|&&i| i < position).count() as i64;
    assert!(
        again <= bound,
        "{what}: read {again} again, above the printed bound {bound}"
    );
    println!(
        "{what}: resumed at {position}, read {} records, {again} again (bound {bound})",
        read.len()
    );
}

/// What the runbook's step 2 warns of: a group with members on the side it
/// goes to is refused at once, and a group whose commit no offset sync
/// reaches waits with progress on stderr and is refused when the timeout
/// passes; exit 5, nothing committed.
fn refusals(props: &Path, topic: &str, remote: &str) {
    let c = clusters();
    let rt = e2e::world::rt();
    let source_client = e2e::world::client(c.source());
    let target_client = e2e::world::client(c.target());
    let busy = format!("{topic}-busy");
    let late = format!("{topic}-late");
    for (group, offset) in [(&busy, 10), (&late, 1_000_000)] {
        let offsets = BTreeMap::from([(
            mm2_checkpoint::core::TopicPartition::new(topic, 0),
            mm2_checkpoint::core::CommittedOffset::new(offset, ""),
        )]);
        ok(
            rt.block_on(source_client.commit_group_offsets(group, &offsets)),
            "committing on the source",
        );
    }
    // A member of `busy` on the target.
    let mut member = std::process::Command::new(c.tool("kafka-console-consumer"))
        .args([
            "--bootstrap-server",
            c.target().bootstrap.get(Listener::Plaintext),
        ])
        .args(["--topic", remote, "--group", &busy])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn kafka-console-consumer");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let described = rt.block_on(target_client.describe_groups(std::slice::from_ref(&busy)));
        if described.is_ok_and(|d| d.get(&busy).is_some_and(|g| g.members > 0)) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the console consumer never joined"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = mm2(
        &[
            "cutover",
            "--config",
            props.to_str().expect("utf-8"),
            "--flow",
            "source->target",
            "--to",
            TARGET_ALIAS,
            "--group",
            &busy,
            "--group",
            &late,
            "--timeout",
            "3s",
            "--execute",
        ],
        Duration::from_secs(60),
    );
    let _ = member.kill();
    let _ = member.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "{busy}: refused: not committed: the group has active members on {TARGET_ALIAS}"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("refused: timed out: no offset sync at or past the commit yet"),
        "{stdout}"
    );
    assert!(
        stderr.contains("cutover: waiting "),
        "progress on stderr: {stderr}"
    );
    assert!(
        stderr.contains(&format!("cutover: group {late}: ")),
        "{stderr}"
    );
    let committed = ok(
        rt.block_on(target_client.fetch_group_offsets(std::slice::from_ref(&late))),
        "listing the group on the target",
    );
    assert!(
        committed
            .get(&late)
            .is_none_or(|o| o.as_ref().is_ok_and(|o| o.is_empty())),
        "a refused group was committed: {committed:?}"
    );
}

/// Checks a group that resumed on the other side against its plan.
fn check_plan(what: &str, plan: &Planned, position: i64, read: Option<&Read>) -> i64 {
    let read = read.cloned().unwrap_or_default();
    assert_eq!(
        read.from,
        Some(plan.translated),
        "{what}: resumed where cutover printed"
    );
    let bound = if plan.status == "exact" {
        0
    } else {
        plan.reread
    };
    check_resumed(what, position, bound, &read.indexes);
    *read.indexes.iter().max().expect("read something")
}

#[test]
fn planned_cutover_both_ways_with_producers_writing_loses_nothing_and_rereads_within_the_bound() {
    let runbook = runbook_commands();
    let c = clusters();
    let rt = e2e::world::rt();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("cutover");
    let remote = remote_topic(&topic);
    let group = format!("{topic}-app");
    let precise_group = format!("{topic}-precise");
    let source_client = e2e::world::client(c.source());
    let target_client = e2e::world::client(c.target());
    ok(
        rt.block_on(source_client.create_topic(&topic, PARTITIONS, 1, &[])),
        "creating the source topic",
    );
    let mut config = Mm2Config::new(&topic, "none").without_checkpoints();
    config.offset_lag_max = 10;
    let mm2_process = ok(
        Mm2Process::start_replicating(c, &config, STARTUP_BUDGET),
        "starting MirrorMaker 2 and its replication task",
    );
    let producer = Producer::start(&topic);
    producer.wait_for(200);
    let dir = test_dir(&topic);
    let props = our_config(&dir, &topic, ".*", "");
    let precise_dir = dir.join("precise");
    std::fs::create_dir_all(&precise_dir).expect("dir");
    let precise_props = our_config(
        &precise_dir,
        &topic,
        ".*",
        "mm2-checkpoint.offset.translation = precise\n\
         mm2-checkpoint.offset.translation.content.search = true\n",
    );

    refusals(&props, &topic, &remote);

    // Runbook step 1: the application's consumers stop on the source. Here
    // each group reads part of what is there, commits and leaves.
    let on_source = consume(source, &group, &topic, 150, "earliest");
    let precise_on_source = consume(source, &precise_group, &topic, 150, "earliest");

    // Step 2: the dry run commits nothing.
    let (_, planned) = run_runbook(&runbook[0], &props, TARGET_ALIAS, &group);
    let on_target = ok(
        rt.block_on(target_client.fetch_group_offsets(std::slice::from_ref(&group))),
        "listing the group on the target",
    );
    assert!(
        on_target
            .get(&group)
            .is_none_or(|o| o.as_ref().is_ok_and(|o| o.is_empty())),
        "a dry run committed: {on_target:?}"
    );
    for (p, plan) in &planned {
        let read_on_source = on_source
            .get(p)
            .and_then(|r| r.indexes.iter().max())
            .map_or(0, |m| m + 1);
        assert_eq!(
            plan.committed, read_on_source,
            "partition {p}: the group's final commit"
        );
    }

    // Step 3: execute, while the producer keeps writing.
    let (_, forward) = run_runbook(&runbook[1], &props, TARGET_ALIAS, &group);
    // Step 4: the group's offsets on the target are the printed ones.
    let committed = ok(
        rt.block_on(target_client.fetch_group_offsets(std::slice::from_ref(&group))),
        "listing the group on the target",
    );
    let committed = ok(
        committed[&group].clone(),
        "the group's offsets on the target",
    );
    for (p, plan) in &forward {
        let tp = mm2_checkpoint::core::TopicPartition::new(&remote, *p);
        let offset = committed
            .get(&tp)
            .and_then(|c| c.as_ref())
            .map(|c| c.offset);
        assert_eq!(offset, Some(plan.translated), "partition {p}");
    }
    // With precise translation and content search, as JSON.
    let (_, precise) = cutover_json(&precise_props, TARGET_ALIAS, &precise_group, true);
    for (p, (plan, sync_upstream)) in &precise {
        assert!(
            plan.status == "exact" || plan.committed == sync_upstream + 1,
            "partition {p}: content search proves a position between two syncs: {plan:?}"
        );
    }
    producer.wait_for(producer.written.load(Ordering::Relaxed) + 100);

    // Step 5: the consumers start on the target, from the committed positions.
    let on_target = consume(target, &group, &remote, 0, "none");
    let precise_on_target = consume(target, &precise_group, &remote, 0, "none");
    let mut read_on_target = BTreeMap::new();
    for p in 0..PARTITIONS {
        let plan = &forward[&p];
        let last = check_plan(
            &format!("forward, partition {p}"),
            plan,
            plan.committed,
            on_target.get(&p),
        );
        read_on_target.insert(p, last);
        let plan = &precise[&p].0;
        let read_before = precise_on_source
            .get(&p)
            .and_then(|r| r.indexes.iter().max())
            .map_or(0, |m| m + 1);
        assert_eq!(plan.committed, read_before, "partition {p}");
        check_plan(
            &format!("forward, precise, partition {p}"),
            plan,
            plan.committed,
            precise_on_target.get(&p),
        );
    }

    // The way back, by the same runbook: the group has left the target (step
    // 1); it goes back to the source through the same flow's offset syncs.
    producer.wait_for(producer.written.load(Ordering::Relaxed) + 100);
    let (_, back) = run_runbook(&runbook[1], &props, SOURCE_ALIAS, &group);
    producer.wait_for(producer.written.load(Ordering::Relaxed) + 100);
    let on_source_again = consume(source, &group, &topic, 0, "none");
    for p in 0..PARTITIONS {
        check_plan(
            &format!("back, partition {p}"),
            &back[&p],
            read_on_target[&p] + 1,
            on_source_again.get(&p),
        );
    }
    drop(producer);
    drop(mm2_process);
}
