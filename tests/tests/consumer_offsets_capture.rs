//! Golden vectors of `__consumer_offsets` from real brokers (docs/commit-follower.md,
//! "Test vectors").
//!
//! Each test drives a workload with Kafka's own Java clients on fresh groups of one
//! cluster (Kafka 4.1.1 `source`, Kafka 3.9.1 `legacy`): a classic group commit with
//! metadata, a KIP-848 group commit (4.1 only), a standalone commit, an Admin
//! `alterConsumerGroupOffsets`, transactional commits (`sendOffsetsToTransaction`)
//! committed and aborted, `deleteConsumerGroupOffsets` and `deleteConsumerGroups`.
//! It then reads the raw record batches appended to every partition of
//! `__consumer_offsets` during the workload (read_uncommitted, so aborted records and
//! transaction markers are there too) and keeps those of its groups. It checks that
//!
//! * every record of its groups decodes with `core::consumer_offsets::decode`, as
//!   what the workload did, commit by commit and tombstone by tombstone;
//! * the state the records give (the latest commit per group and partition, after
//!   tombstones), read a second time with kafka-lite's read_committed filter, is what
//!   Kafka's Admin `listConsumerGroupOffsets` reports for every group;
//! * the aborted commit is in the log but not in the read_committed view.
//!
//! With `MM2_UPDATE_OFFSETS_VECTORS=1` it also (re)writes the checked-in vectors,
//! `crates/mm2-checkpoint/tests/data/consumer_offsets/kafka-<version>.txt` (format at
//! the top of each file; decoded offline by that crate's `consumer_offsets_vectors`
//! test), and the fuzz seeds `crates/mm2-checkpoint/fuzz/seeds/consumer_offsets/`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use e2e::java::{CommitMode, GroupOffset, JavaHelpers, TxnStep, helpers};
use e2e::{clusters, unique_name};
use kafka_lite::records::{self, ControlRecordType, DecodedBatch};
use kafka_lite::{
    BrokerConnection, Client, ConnectionConfig, FetchOptions, IsolationLevel, PartitionReader,
    StartOffset,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use mm2_checkpoint::core::consumer_offsets::{OffsetsRecord, decode};

const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Set to `1` to rewrite the checked-in vector files and fuzz seeds.
const UPDATE_ENV: &str = "MM2_UPDATE_OFFSETS_VECTORS";

#[test]
fn kafka_4_1_vectors_decode_to_what_the_admin_client_reports() {
    let clusters = clusters();
    let bootstrap = clusters.source().bootstrap.plaintext.clone();
    capture(&bootstrap, &clusters.kafka_version, true);
}

#[test]
fn kafka_3_9_vectors_decode_to_what_the_admin_client_reports() {
    let legacy = clusters().legacy();
    let bootstrap = legacy.bootstrap.plaintext.clone();
    // Kafka 3.9 enables the KIP-848 protocol only on request; the legacy cluster does not.
    capture(&bootstrap, &legacy.kafka_version, false);
}

/// What the workload expects one record of a group-partition to be, in log order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expected {
    Commit { offset: i64, metadata: String },
    Tombstone,
}

/// The workload's record of what it did.
#[derive(Default)]
struct Workload {
    /// Scenario label of each group.
    scenario: BTreeMap<String, &'static str>,
    /// Every commit or removal, per (group, topic, partition), in order.
    expected: BTreeMap<(String, String, i32), Vec<Expected>>,
}

impl Workload {
    fn group(&mut self, scenario: &'static str) -> String {
        let group = unique_name(&format!("cov-{scenario}"));
        self.scenario.insert(group.clone(), scenario);
        group
    }

    fn committed(&mut self, group: &str, offsets: &[GroupOffset]) {
        for o in offsets {
            self.expected
                .entry((group.to_owned(), o.topic.clone(), o.partition))
                .or_default()
                .push(Expected::Commit {
                    offset: o.offset,
                    metadata: o.metadata.clone(),
                });
        }
    }

    fn removed(&mut self, group: &str, topic: &str, partition: i32) {
        self.expected
            .entry((group.to_owned(), topic.to_owned(), partition))
            .or_default()
            .push(Expected::Tombstone);
    }

    /// Every partition of `group` with a commit so far that was not removed.
    fn live_partitions(&self, group: &str) -> Vec<(String, i32)> {
        self.expected
            .iter()
            .filter(|((g, _, _), e)| g == group && e.last() != Some(&Expected::Tombstone))
            .map(|((_, t, p), _)| (t.clone(), *p))
            .collect()
    }
}

fn offset(topic: &str, partition: i32, offset: i64, metadata: &str) -> GroupOffset {
    GroupOffset {
        topic: topic.to_owned(),
        partition,
        offset,
        metadata: metadata.to_owned(),
    }
}

fn java<T>(what: &str, result: Result<T, e2e::java::JavaError>) -> T {
    result.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Runs the workload on the cluster at `bootstrap`; returns what it did.
fn run_workload(java_helpers: &JavaHelpers, bootstrap: &str, kip848: bool) -> Workload {
    let mut w = Workload::default();
    let topic = unique_name("cov-topic");
    java("produce", java_helpers.produce(bootstrap, &topic, 3, 5));
    let t = topic.as_str();

    let group = w.group("classic");
    let offsets = [offset(t, 0, 3, "classic-meta"), offset(t, 1, 4, "")];
    java(
        "classic commit",
        java_helpers.commit_offsets(bootstrap, &group, CommitMode::Classic, &offsets),
    );
    w.committed(&group, &offsets);

    if kip848 {
        let group = w.group("kip848");
        let offsets = [offset(t, 0, 2, "kip848-meta")];
        java(
            "KIP-848 commit",
            java_helpers.commit_offsets(bootstrap, &group, CommitMode::Consumer, &offsets),
        );
        w.committed(&group, &offsets);
    }

    let group = w.group("standalone");
    let offsets = [offset(t, 2, 5, "standalone-meta")];
    java(
        "standalone commit",
        java_helpers.commit_offsets(bootstrap, &group, CommitMode::Standalone, &offsets),
    );
    w.committed(&group, &offsets);

    let group = w.group("admin");
    let offsets = [offset(t, 0, 1, "admin-meta"), offset(t, 1, 2, "")];
    java(
        "alterConsumerGroupOffsets",
        java_helpers.alter_group_offsets(bootstrap, &group, &offsets),
    );
    w.committed(&group, &offsets);

    let group = w.group("txn");
    let first = vec![offset(t, 0, 1, "txn-1"), offset(t, 1, 1, "txn-1")];
    let aborted = vec![offset(t, 0, 4, "txn-aborted")];
    let last = vec![offset(t, 1, 3, "txn-2")];
    java(
        "transactional commits",
        java_helpers.txn_offsets(
            bootstrap,
            &group,
            &unique_name("cov-txn-id"),
            Some(t),
            &[
                TxnStep::Commit(first.clone()),
                TxnStep::Abort(aborted.clone()),
                TxnStep::Commit(last.clone()),
            ],
        ),
    );
    // The log holds the aborted commit too, between the two committed ones.
    w.committed(&group, &first);
    w.committed(&group, &aborted);
    w.committed(&group, &last);

    let group = w.group("delete-offsets");
    let offsets = [offset(t, 0, 2, ""), offset(t, 1, 3, "kept")];
    java(
        "standalone commit before deleteConsumerGroupOffsets",
        java_helpers.commit_offsets(bootstrap, &group, CommitMode::Standalone, &offsets),
    );
    w.committed(&group, &offsets);
    java(
        "deleteConsumerGroupOffsets",
        java_helpers.delete_group_offsets(bootstrap, &group, &[(t, 0)]),
    );
    w.removed(&group, t, 0);

    let group = w.group("delete-group");
    let offsets = [offset(t, 0, 4, "doomed"), offset(t, 2, 1, "")];
    java(
        "classic commit before deleteConsumerGroups",
        java_helpers.commit_offsets(bootstrap, &group, CommitMode::Classic, &offsets),
    );
    w.committed(&group, &offsets);
    java(
        "deleteConsumerGroups",
        java_helpers.delete_group(bootstrap, &group),
    );
    for (topic, partition) in w.live_partitions(&group) {
        w.removed(&group, &topic, partition);
    }
    w
}

/// One record of `__consumer_offsets` as it is in the log.
#[derive(Debug, Clone)]
struct RawRecord {
    partition: i32,
    offset: i64,
    producer_id: i64,
    transactional: bool,
    control: Option<ControlRecordType>,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

fn config() -> ConnectionConfig {
    ConnectionConfig {
        client_id: "e2e-consumer-offsets-vectors".into(),
        request_timeout: Duration::from_secs(40),
        ..ConnectionConfig::default()
    }
}

/// One Fetch of `partition` at `offset`, returning the decoded batches as they are
/// (control batches and aborted records included) and the high watermark.
async fn fetch_raw(
    connection: &BrokerConnection,
    partition: i32,
    offset: i64,
) -> (Vec<DecodedBatch>, i64) {
    let request = FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(100)
        .with_min_bytes(1)
        .with_max_bytes(4 * 1024 * 1024)
        .with_isolation_level(0)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str(OFFSETS_TOPIC)))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_current_leader_epoch(-1)
                        .with_fetch_offset(offset)
                        .with_last_fetched_epoch(-1)
                        .with_log_start_offset(-1)
                        .with_partition_max_bytes(4 * 1024 * 1024),
                ]),
        ]);
    let response = connection
        .send(request)
        .await
        .unwrap_or_else(|e| panic!("fetch {OFFSETS_TOPIC}-{partition} at {offset}: {e}"));
    assert_eq!(response.error_code, 0, "Fetch error");
    let data = response
        .responses
        .into_iter()
        .flat_map(|t| t.partitions)
        .find(|p| p.partition_index == partition)
        .expect("an answer for the partition");
    assert_eq!(
        data.error_code, 0,
        "Fetch error on {OFFSETS_TOPIC}-{partition} at {offset}"
    );
    let mut bytes = data.records.unwrap_or_default();
    let batches = records::decode_batches(&mut bytes).expect("decodable batches");
    (batches, data.high_watermark)
}

/// Every record of `partition` from `start` up to its high watermark now.
async fn read_raw(connection: &BrokerConnection, partition: i32, start: i64) -> Vec<RawRecord> {
    let mut out = Vec::new();
    let mut position = start;
    let (_, end) = fetch_raw(connection, partition, position).await;
    while position < end {
        let (batches, _) = fetch_raw(connection, partition, position).await;
        assert!(
            !batches.is_empty(),
            "no batch at {position} below the high watermark {end}"
        );
        for batch in &batches {
            let control = batch.control_type();
            for r in &batch.records {
                if r.offset >= position && r.offset < end {
                    out.push(RawRecord {
                        partition,
                        offset: r.offset,
                        producer_id: batch.producer_id,
                        transactional: batch.is_transactional,
                        control: batch.is_control.then_some(control).flatten(),
                        key: r.key.clone(),
                        value: r.value.clone(),
                    });
                }
            }
        }
        position = batches.last().map_or(position, DecodedBatch::next_offset);
    }
    out
}

/// The records of `groups` among `raw`, and the transaction markers of the
/// producers that wrote transactional ones.
fn keep_ours(raw: Vec<RawRecord>, groups: &BTreeSet<String>) -> Vec<RawRecord> {
    let ours = |r: &RawRecord| {
        r.control.is_none()
            && r.key
                .as_deref()
                .and_then(key_group)
                .is_some_and(|g| groups.contains(g))
    };
    let producers: BTreeSet<(i32, i64)> = raw
        .iter()
        .filter(|r| r.transactional && ours(r))
        .map(|r| (r.partition, r.producer_id))
        .collect();
    raw.into_iter()
        .filter(|r| {
            ours(r) || (r.control.is_some() && producers.contains(&(r.partition, r.producer_id)))
        })
        .collect()
}

/// The first transaction marker after the transactional record `r` by its producer.
fn marker_after<'a>(kept: &'a [RawRecord], r: &RawRecord) -> Option<&'a RawRecord> {
    kept.iter().find(|m| {
        m.control.is_some()
            && m.partition == r.partition
            && m.producer_id == r.producer_id
            && m.offset > r.offset
    })
}

/// The group named at the start of a key: types 0 to 2 and the KIP-848, share and
/// streams group records all begin with the group id as a `STRING`.
fn key_group(key: &[u8]) -> Option<&str> {
    let len = usize::try_from(i16::from_be_bytes([*key.get(2)?, *key.get(3)?])).ok()?;
    std::str::from_utf8(key.get(4..4 + len)?).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The state the records give: the latest commit per (group, topic, partition).
fn final_state<'a>(
    records: impl IntoIterator<Item = (&'a Option<Bytes>, &'a Option<Bytes>)>,
    groups: &BTreeSet<String>,
) -> BTreeMap<String, BTreeSet<GroupOffset>> {
    let mut state: BTreeMap<(String, String, i32), GroupOffset> = BTreeMap::new();
    for (key, value) in records {
        let Ok(OffsetsRecord::OffsetCommit {
            group,
            topic_partition,
            value,
        }) = decode(key.as_deref(), value.as_deref())
        else {
            continue;
        };
        if !groups.contains(&group) {
            continue;
        }
        let id = (
            group,
            topic_partition.topic.clone(),
            topic_partition.partition,
        );
        match value {
            Some(v) => {
                state.insert(
                    id,
                    offset(
                        &topic_partition.topic,
                        topic_partition.partition,
                        v.offset,
                        &v.metadata,
                    ),
                );
            }
            None => {
                state.remove(&id);
            }
        }
    }
    let mut by_group: BTreeMap<String, BTreeSet<GroupOffset>> = groups
        .iter()
        .map(|g| (g.clone(), BTreeSet::new()))
        .collect();
    for ((group, _, _), o) in state {
        by_group.entry(group).or_default().insert(o);
    }
    by_group
}

fn capture(bootstrap: &str, kafka_version: &str, kip848: bool) {
    let java_helpers = helpers();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let client = runtime
        .block_on(Client::connect(vec![bootstrap.to_owned()], config()))
        .unwrap_or_else(|e| panic!("connect to {bootstrap}: {e}"));
    // A fresh cluster has no __consumer_offsets until the first group
    // coordinator lookup: commit once for a group the test does not keep.
    let topic = unique_name("cov-warmup");
    java("produce", java_helpers.produce(bootstrap, &topic, 1, 1));
    java(
        "warm-up commit",
        java_helpers.commit_offsets(
            bootstrap,
            &unique_name("cov-warmup"),
            CommitMode::Standalone,
            &[offset(&topic, 0, 1, "")],
        ),
    );
    let partitions: Vec<i32> = runtime
        .block_on(client.topic_metadata(OFFSETS_TOPIC))
        .unwrap_or_else(|e| panic!("metadata of {OFFSETS_TOPIC}: {e}"))
        .partitions
        .into_keys()
        .collect();
    assert!(!partitions.is_empty(), "{OFFSETS_TOPIC} has no partitions");
    // Where every partition ended before the workload: only what follows is read.
    let starts: Vec<(i32, i64)> = partitions
        .iter()
        .map(|&p| {
            let reader = runtime
                .block_on(client.partition_reader(
                    OFFSETS_TOPIC,
                    p,
                    StartOffset::Latest,
                    FetchOptions::default(),
                ))
                .unwrap_or_else(|e| panic!("end of {OFFSETS_TOPIC}-{p}: {e}"));
            (p, reader.end())
        })
        .collect();
    let started_ms = now_ms();

    let workload = run_workload(java_helpers, bootstrap, kip848);
    let groups: BTreeSet<String> = workload.scenario.keys().cloned().collect();

    // Everything appended since, as it is in the log. commitTransaction returns
    // once the transaction coordinator has decided; the markers reach
    // __consumer_offsets a moment later, so read until every transactional record
    // of ours has its marker.
    let deadline = Instant::now() + Duration::from_secs(60);
    let kept = loop {
        let mut raw: Vec<RawRecord> = Vec::new();
        for &(p, start) in &starts {
            let connection = runtime
                .block_on(client.leader_connection(OFFSETS_TOPIC, p))
                .unwrap_or_else(|e| panic!("leader of {OFFSETS_TOPIC}-{p}: {e}"));
            raw.extend(runtime.block_on(read_raw(&connection, p, start)));
        }
        let kept = keep_ours(raw, &groups);
        let unfinished = kept
            .iter()
            .filter(|r| r.transactional && r.control.is_none())
            .find(|r| marker_after(&kept, r).is_none());
        match unfinished {
            None => break kept,
            Some(r) => assert!(
                Instant::now() < deadline,
                "no transaction marker after {r:?} within 60 s"
            ),
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(
        kept.iter().any(|r| r.transactional),
        "no transactional record of ours"
    );

    // The outcome of each transactional record: the next marker of its producer.
    let outcome = |r: &RawRecord| -> Option<ControlRecordType> {
        if !r.transactional || r.control.is_some() {
            return None;
        }
        marker_after(&kept, r).and_then(|m| m.control)
    };

    // (a) Every record decodes, as what the workload did.
    let mut pending: HashMap<(String, String, i32), std::vec::IntoIter<Expected>> = workload
        .expected
        .clone()
        .into_iter()
        .map(|(k, v)| (k, v.into_iter()))
        .collect();
    let mut lines = Vec::new();
    let mut seen_types = BTreeSet::new();
    for r in &kept {
        let key = r.key.as_deref();
        let value = r.value.as_deref();
        let key_hex = key.map_or_else(|| "null".to_owned(), hex);
        let value_hex = value.map_or_else(|| "null".to_owned(), hex);
        if let Some(control) = r.control {
            let kind = match control {
                ControlRecordType::Commit => "commit",
                ControlRecordType::Abort => "abort",
                ControlRecordType::Unknown(n) => panic!("unknown control record type {n}"),
            };
            // A marker is no record of the coordinator: the follower never sees one
            // (kafka-lite drops control batches), and decoding it fails.
            assert!(
                decode(key, value).is_err(),
                "a transaction marker decoded: {r:?}"
            );
            lines.push(format!(
                "txn marker control={kind} key={key_hex} value={value_hex}"
            ));
            continue;
        }
        let group = key
            .and_then(key_group)
            .expect("a group in the key")
            .to_owned();
        let scenario = workload.scenario[&group];
        let record_type = key.map_or(-1, |k| i16::from_be_bytes([k[0], k[1]]));
        seen_types.insert(record_type);
        let decoded = decode(key, value)
            .unwrap_or_else(|e| panic!("record {r:?} of group {group} does not decode: {e}"));
        let txn = match outcome(r) {
            None => "none",
            Some(ControlRecordType::Commit) => "committed",
            Some(_) => "aborted",
        };
        let line = match decoded {
            OffsetsRecord::OffsetCommit {
                group: g,
                topic_partition: tp,
                value: v,
            } => {
                assert_eq!(g, group);
                let id = (g.clone(), tp.topic.clone(), tp.partition);
                let expected = pending
                    .get_mut(&id)
                    .and_then(Iterator::next)
                    .unwrap_or_else(|| panic!("an unexpected record for {id:?}: {v:?}"));
                let common = format!(
                    "txn={txn} type={record_type} group={g} topic={} partition={}",
                    tp.topic, tp.partition
                );
                match v {
                    Some(v) => {
                        assert_eq!(
                            expected,
                            Expected::Commit {
                                offset: v.offset,
                                metadata: v.metadata.clone()
                            },
                            "commit record of {id:?}"
                        );
                        assert!(
                            (started_ms - 60_000..now_ms() + 60_000).contains(&v.commit_timestamp),
                            "commit timestamp {} of {id:?}",
                            v.commit_timestamp
                        );
                        assert!(!v.metadata.contains(char::is_whitespace));
                        let value = value.expect("a commit has a value");
                        let version = i16::from_be_bytes([value[0], value[1]]);
                        let epoch = v.leader_epoch.map_or("none".to_owned(), |e| e.to_string());
                        let expire = v
                            .expire_timestamp
                            .map_or("none".to_owned(), |e| e.to_string());
                        format!(
                            "{scenario} commit {common} version={version} offset={} leader_epoch={epoch} metadata={} commit_timestamp={} expire_timestamp={expire}",
                            v.offset, v.metadata, v.commit_timestamp
                        )
                    }
                    None => {
                        assert_eq!(expected, Expected::Tombstone, "tombstone of {id:?}");
                        format!("{scenario} commit-tombstone {common}")
                    }
                }
            }
            OffsetsRecord::GroupMetadata { group: g, value: v } => match v {
                Some(v) => {
                    assert!(!v.protocol_type.contains(char::is_whitespace), "{v:?}");
                    let version = value.map_or(-1, |b| i16::from_be_bytes([b[0], b[1]]));
                    format!(
                        "{scenario} group txn={txn} group={g} version={version} protocol_type={} generation={}",
                        v.protocol_type, v.generation
                    )
                }
                None => format!("{scenario} group-tombstone txn={txn} group={g}"),
            },
            OffsetsRecord::Other { record_type: t } => {
                format!("{scenario} other txn={txn} type={t} group={group}")
            }
        };
        lines.push(format!("{line} key={key_hex} value={value_hex}"));
    }
    for (id, mut rest) in pending {
        assert!(
            rest.next().is_none(),
            "records missing from the log for {id:?}"
        );
    }
    assert!(seen_types.contains(&1), "no offset commit record of type 1");
    let groups_with_metadata: BTreeSet<&str> = lines
        .iter()
        .filter(|l| l.split(' ').nth(1) == Some("group"))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert!(
        groups_with_metadata.contains("classic"),
        "no group metadata record of the classic group:\n{}",
        lines.join("\n")
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("delete-group group-tombstone ")),
        "no group tombstone for the deleted classic group"
    );

    // (b) The read_committed view gives what the Admin client reports.
    let mut committed: Vec<(Option<Bytes>, Option<Bytes>)> = Vec::new();
    for &(p, start) in &starts {
        let last_ours = kept
            .iter()
            .filter(|r| r.partition == p)
            .map(|r| r.offset + 1)
            .max()
            .unwrap_or(start);
        // Another test's open transaction can hold the last stable offset back
        // for up to its transaction timeout (60 s); wait until ours are stable.
        let deadline = Instant::now() + Duration::from_secs(90);
        let options = FetchOptions {
            isolation: IsolationLevel::ReadCommitted,
            ..FetchOptions::default()
        };
        let mut reader = loop {
            let reader: PartitionReader = runtime
                .block_on(client.partition_reader(
                    OFFSETS_TOPIC,
                    p,
                    StartOffset::Offset(start),
                    options,
                ))
                .unwrap_or_else(|e| panic!("read_committed reader of {OFFSETS_TOPIC}-{p}: {e}"));
            if reader.end() >= last_ours {
                break reader;
            }
            assert!(
                Instant::now() < deadline,
                "{OFFSETS_TOPIC}-{p}: last stable offset {} stays below {last_ours}",
                reader.end()
            );
            std::thread::sleep(Duration::from_millis(500));
        };
        while let Some(batch) = runtime
            .block_on(reader.read(&client))
            .unwrap_or_else(|e| panic!("read_committed {OFFSETS_TOPIC}-{p}: {e}"))
        {
            committed.extend(batch.into_iter().map(|r| (r.key, r.value)));
        }
    }
    let from_log = final_state(committed.iter().map(|(k, v)| (k, v)), &groups);
    let mut from_admin = BTreeMap::new();
    for group in &groups {
        let offsets = java(
            "listConsumerGroupOffsets",
            java_helpers.group_offsets(bootstrap, group),
        );
        from_admin.insert(group.clone(), offsets.into_iter().collect::<BTreeSet<_>>());
    }
    assert_eq!(
        from_log, from_admin,
        "the read_committed log state differs from listConsumerGroupOffsets"
    );
    let aborted_in_log = kept.iter().any(|r| {
        r.value
            .as_deref()
            .is_some_and(|v| v.windows(11).any(|w| w == b"txn-aborted"))
    });
    let aborted_committed = committed.iter().any(|(_, v)| {
        v.as_deref()
            .is_some_and(|v| v.windows(11).any(|w| w == b"txn-aborted"))
    });
    assert!(aborted_in_log, "the aborted commit is not in the log");
    assert!(
        !aborted_committed,
        "read_committed returned the aborted commit"
    );

    if std::env::var(UPDATE_ENV).is_ok_and(|v| v == "1") {
        write_vectors(kafka_version, &lines);
    }
}

fn mm2_checkpoint_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("crates")
        .join("mm2-checkpoint")
}

const HEADER: &str = "\
# Records of __consumer_offsets written by a real Apache Kafka {VERSION} broker,
# captured by tests/tests/consumer_offsets_capture.rs (regenerate with
# MM2_UPDATE_OFFSETS_VECTORS=1; see docs/commit-follower.md, \"Test vectors\") and
# decoded offline by crates/mm2-checkpoint/tests/consumer_offsets_vectors.rs.
#
# One record per line, in log order per partition, fields separated by one space:
#   <scenario> <kind> <name>=<value>... key=<hex> value=<hex or null>
# <scenario> is the workload step that wrote it: classic (classic group commit with
# metadata), kip848 (KIP-848 consumer group commit), standalone (assign() and commit,
# no membership), admin (Admin alterConsumerGroupOffsets), txn
# (sendOffsetsToTransaction: commit, abort, commit), delete-offsets (commit, then
# Admin deleteConsumerGroupOffsets of partition 0), delete-group (classic commit, then
# Admin deleteConsumerGroups). <kind> is what the record is:
#   commit            an offset commit: txn (none, committed or aborted: the record's
#                     transaction outcome, from the marker), type (key record type),
#                     group, topic, partition, version (value version), offset,
#                     leader_epoch (none before version 3), metadata (may be empty),
#                     commit_timestamp, expire_timestamp (none except version 1)
#   commit-tombstone  a null value removing a commit: txn, type, group, topic, partition
#   group             classic group metadata: txn, group, version, protocol_type
#                     (may be empty), generation
#   group-tombstone   a null value deleting the group: txn, group
#   other             a newer record type (KIP-848 group state): txn, type, group
#   marker            a transaction marker (control record) of the txn producer:
#                     control (commit or abort); no coordinator record, not decodable
# Offsets, metadata and tombstones were checked against what the workload did, and the
# read_committed state against Admin listConsumerGroupOffsets, when this was captured.
";

fn write_vectors(kafka_version: &str, lines: &[String]) {
    let dir = mm2_checkpoint_dir()
        .join("tests")
        .join("data")
        .join("consumer_offsets");
    std::fs::create_dir_all(&dir).expect("create the vectors directory");
    let mut text = HEADER.replace("{VERSION}", kafka_version);
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    let file = dir.join(format!("kafka-{kafka_version}.txt"));
    std::fs::write(&file, text).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));

    // Fuzz seeds: one file per record, in the fuzz target's input layout.
    let seeds = mm2_checkpoint_dir()
        .join("fuzz")
        .join("seeds")
        .join("consumer_offsets");
    std::fs::create_dir_all(&seeds).expect("create the seeds directory");
    let prefix = format!("kafka-{kafka_version}-");
    for entry in std::fs::read_dir(&seeds).expect("list the seeds") {
        let path = entry.expect("a seed").path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        {
            std::fs::remove_file(&path).expect("remove an old seed");
        }
    }
    for (i, line) in lines.iter().enumerate() {
        let field = |name: &str| {
            let text = line
                .rsplit(' ')
                .find_map(|f| f.strip_prefix(name))
                .expect("key= and value= fields");
            (text != "null").then(|| unhex(text))
        };
        let seed = fuzz_input(field("key=").as_deref(), field("value=").as_deref());
        std::fs::write(seeds.join(format!("{prefix}{i:03}")), seed).expect("write a seed");
    }
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// The fuzz target's input layout (crates/mm2-checkpoint/fuzz/fuzz_targets/
/// consumer_offsets.rs): a flags byte (bit 0: key present, bit 1: value present), the
/// key length as a big-endian `u16`, the key, then the value.
fn fuzz_input(key: Option<&[u8]>, value: Option<&[u8]>) -> Vec<u8> {
    let flags = u8::from(key.is_some()) | (u8::from(value.is_some()) << 1);
    let key = key.unwrap_or_default();
    let mut out = vec![flags];
    out.extend_from_slice(&u16::try_from(key.len()).expect("short key").to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(value.unwrap_or_default());
    out
}
