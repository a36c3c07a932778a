//! kafka-lite's group operations against the real clusters: committing,
//! fetching, describing and listing groups — idle ones made by kafka-lite's
//! own commits, and groups kept ACTIVE by Kafka's own console consumer
//! (classic and KIP-848).

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use e2e::access::Access;
use e2e::{Listener, clusters, unique_name};
use kafka_lite::{
    Client, ConnectionConfig, GroupDescription, GroupState, GroupType, OffsetFetchOptions,
    OffsetToCommit, SaslMechanismKind, TopicPartition, TransactionalProducer,
};

fn config(listener: Listener) -> ConnectionConfig {
    let access = match listener {
        Listener::Plaintext => Access::Plaintext,
        Listener::SaslPlaintext => Access::Sasl(SaslMechanismKind::ScramSha512),
        Listener::Ssl => Access::Ssl,
        Listener::Mtls => Access::Mtls,
        Listener::SaslSsl => Access::SaslSsl(SaslMechanismKind::ScramSha512),
    };
    let base = ConnectionConfig {
        client_id: "e2e-client-groups".into(),
        request_timeout: Duration::from_secs(20),
        ..ConnectionConfig::default()
    };
    access.config(clusters().source(), base)
}

async fn client(listener: Listener) -> Client {
    let bootstrap = clusters().source().bootstrap.get(listener).to_string();
    Client::connect(vec![bootstrap], config(listener))
        .await
        .unwrap_or_else(|e| panic!("connect over {listener}: {e}"))
}

async fn topic(client: &Client, partitions: i32) -> String {
    let name = unique_name("groups-topic");
    client
        .create_topic(&name, partitions, 1, &[])
        .await
        .expect("create topic");
    name
}

fn offsets(topic: &str, values: &[(i32, i64)]) -> BTreeMap<TopicPartition, OffsetToCommit> {
    values
        .iter()
        .map(|(p, o)| (TopicPartition::new(topic, *p), OffsetToCommit::new(*o)))
        .collect()
}

async fn describe_one(client: &Client, group: &str) -> GroupDescription {
    let mut described = client.describe_groups(&[group.to_string()]).await;
    described
        .swap_remove(group)
        .expect("a result for the group")
        .expect("describe succeeds")
}

/// Committed offset per partition of `group` (partitions with an error panic).
async fn committed(client: &Client, group: &str) -> BTreeMap<TopicPartition, Option<i64>> {
    let mut fetched = client.fetch_group_offsets(&[group.to_string()]).await;
    let offsets = fetched
        .swap_remove(group)
        .expect("a result for the group")
        .expect("fetch succeeds");
    offsets
        .into_iter()
        .map(|(tp, r)| (tp, r.expect("partition fetched").offset))
        .collect()
}

/// Commit, describe, fetch and list one idle group over `listener`.
async fn idle_group_round_trip(listener: Listener) {
    let client = client(listener).await;
    let topic = topic(&client, 3).await;
    let group = unique_name("idle-group");
    assert_eq!(describe_one(&client, &group).await.state, GroupState::Dead);

    let mut to_commit = offsets(&topic, &[(0, 10), (2, 30)]);
    to_commit.insert(
        TopicPartition::new(&topic, 1),
        OffsetToCommit {
            offset: 20,
            leader_epoch: Some(0),
            metadata: "from kafka-lite".into(),
        },
    );
    let results = client
        .commit_group_offsets(&group, &to_commit)
        .await
        .expect("commit to a dead group");
    assert_eq!(results.len(), 3);
    assert!(results.values().all(Result::is_ok), "{results:?}");

    let described = describe_one(&client, &group).await;
    assert_eq!(described.state, GroupState::Empty);
    assert_eq!(described.member_count(), 0);

    let mut fetched = client
        .fetch_group_offsets(std::slice::from_ref(&group))
        .await;
    let offsets = fetched.swap_remove(&group).expect("result").expect("fetch");
    let p1 = offsets[&TopicPartition::new(&topic, 1)]
        .as_ref()
        .expect("partition 1");
    assert_eq!(p1.offset, Some(20));
    assert_eq!(p1.leader_epoch, Some(0));
    assert_eq!(p1.metadata, "from kafka-lite");
    let p0 = offsets[&TopicPartition::new(&topic, 0)]
        .as_ref()
        .expect("partition 0");
    assert_eq!(
        (p0.offset, p0.leader_epoch, p0.metadata.as_str()),
        (Some(10), None, "")
    );

    let listed = client.list_groups().await.expect("list groups");
    assert!(
        listed.broker_errors.is_empty(),
        "{:?}",
        listed.broker_errors
    );
    let entry = listed
        .groups
        .iter()
        .find(|g| g.group_id == group)
        .expect("group listed");
    assert_eq!(entry.state, Some(GroupState::Empty));
    assert_eq!(entry.group_type, Some(GroupType::Classic));
}

#[tokio::test]
async fn idle_group_round_trip_over_plaintext() {
    idle_group_round_trip(Listener::Plaintext).await;
}

#[tokio::test]
async fn idle_group_round_trip_over_sasl_scram_sha_512() {
    idle_group_round_trip(Listener::SaslPlaintext).await;
}

#[tokio::test]
async fn idle_group_round_trip_over_mtls() {
    idle_group_round_trip(Listener::Mtls).await;
}

#[tokio::test]
async fn idle_group_round_trip_over_sasl_ssl_scram_sha_512() {
    idle_group_round_trip(Listener::SaslSsl).await;
}

#[tokio::test]
async fn nonexistent_group_is_dead_with_no_offsets() {
    let client = client(Listener::Plaintext).await;
    let group = unique_name("never-used");
    assert_eq!(committed(&client, &group).await, BTreeMap::new());
    let described = describe_one(&client, &group).await;
    assert_eq!(described.state, GroupState::Dead);
    assert_eq!(described.member_count(), 0);
}

#[tokio::test]
async fn uncommitted_partition_fetched_explicitly_has_no_offset() {
    let client = client(Listener::Plaintext).await;
    let topic = topic(&client, 2).await;
    let group = unique_name("partial");
    client
        .commit_group_offsets(&group, &offsets(&topic, &[(0, 7)]))
        .await
        .expect("commit");
    let options = OffsetFetchOptions {
        partitions: Some(vec![
            TopicPartition::new(&topic, 0),
            TopicPartition::new(&topic, 1),
        ]),
        ..OffsetFetchOptions::default()
    };
    let mut fetched = client
        .fetch_group_offsets_with(std::slice::from_ref(&group), &options)
        .await;
    let offsets = fetched.swap_remove(&group).expect("result").expect("fetch");
    let offset_of = |p| {
        offsets[&TopicPartition::new(&topic, p)]
            .as_ref()
            .expect("no partition error")
            .offset
    };
    assert_eq!(offset_of(0), Some(7));
    assert_eq!(offset_of(1), None, "-1 from the broker is None");
}

#[tokio::test]
async fn fetch_offsets_of_fifty_groups_in_one_call_with_few_requests() {
    let client = client(Listener::Plaintext).await;
    let topic = topic(&client, 2).await;
    let groups: Vec<String> = (0..50).map(|_| unique_name("fifty")).collect();
    for (i, group) in groups.iter().enumerate() {
        let i = i as i64;
        client
            .commit_group_offsets(group, &offsets(&topic, &[(0, i), (1, 100 + i)]))
            .await
            .expect("commit");
    }
    let mut asked: Vec<String> = groups.clone();
    let missing = unique_name("fifty-missing");
    asked.push(missing.clone());

    let before = client.requests_sent();
    let fetched = client.fetch_group_offsets(&asked).await;
    let requests = client.requests_sent() - before;
    // Coordinators are cached from the commits; the one missing group costs
    // at most one FindCoordinator. All 51 groups share one OffsetFetch.
    assert!(requests <= 2, "{requests} requests for 51 groups");

    assert_eq!(
        fetched.keys().cloned().collect::<Vec<_>>(),
        asked,
        "one result per group, in order"
    );
    for (i, group) in groups.iter().enumerate() {
        let offsets = fetched[group].as_ref().expect("group fetched");
        let i = i as i64;
        let got: Vec<Option<i64>> = offsets
            .values()
            .map(|r| r.as_ref().expect("partition").offset)
            .collect();
        assert_eq!(got, vec![Some(i), Some(100 + i)], "group {group}");
    }
    assert!(fetched[&missing].as_ref().expect("no error").is_empty());
}

/// A batched OffsetFetch over several connections to the coordinator (lanes):
/// every group's answer comes back, whichever lane carried its request, and
/// the caller's builder sees each group's partitions as decoded.
#[tokio::test]
async fn fetch_offsets_over_coordinator_lanes() {
    let bootstrap = clusters()
        .source()
        .bootstrap
        .get(Listener::Plaintext)
        .to_string();
    let config = ConnectionConfig {
        coordinator_connections: 4,
        ..config(Listener::Plaintext)
    };
    let client = Client::connect(vec![bootstrap], config)
        .await
        .expect("connect");
    let topic = topic(&client, 3).await;
    let groups: Vec<String> = (0..40).map(|_| unique_name("lanes")).collect();
    for (i, group) in groups.iter().enumerate() {
        let i = i as i64;
        client
            .commit_group_offsets(group, &offsets(&topic, &[(0, i), (2, 1000 + i)]))
            .await
            .expect("commit");
    }
    // 40 groups, 3 per request: 14 requests, round 4 lanes, several times
    // over; the rounds follow each other so that the lanes are reused.
    let options = OffsetFetchOptions {
        max_groups_per_request: 3,
        ..OffsetFetchOptions::default()
    };
    for round in 0..3 {
        let before = client.requests_sent();
        let fetched = client
            .fetch_group_offsets_as(&groups, &options, |partitions| {
                partitions
                    .map(|p| {
                        let c = p.committed.expect("no partition error");
                        (
                            p.topic.to_owned(),
                            p.partition,
                            c.offset,
                            c.metadata.to_owned(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .await;
        let requests = client.requests_sent() - before;
        assert_eq!(requests, 14, "round {round}: one OffsetFetch per 3 groups");
        assert_eq!(
            fetched.keys().cloned().collect::<Vec<_>>(),
            groups,
            "round {round}: one result per group, in order"
        );
        for (i, group) in groups.iter().enumerate() {
            let mut got = fetched[group].as_ref().expect("group fetched").clone();
            got.sort();
            let i = i as i64;
            assert_eq!(
                got,
                vec![
                    (topic.clone(), 0, Some(i), String::new()),
                    (topic.clone(), 2, Some(1000 + i), String::new()),
                ],
                "round {round}, group {group}"
            );
        }
    }
    // The same answers as the owned form.
    let owned = client.fetch_group_offsets_with(&groups, &options).await;
    for (i, group) in groups.iter().enumerate() {
        let offsets: Vec<Option<i64>> = owned[group]
            .as_ref()
            .expect("group fetched")
            .values()
            .map(|r| r.as_ref().expect("partition").offset)
            .collect();
        assert_eq!(offsets, vec![Some(i as i64), Some(1000 + i as i64)]);
    }
}

/// A Kafka console consumer in group `group`, killed on drop.
struct ConsoleConsumer {
    child: Child,
}

impl ConsoleConsumer {
    fn start(group: &str, topic: &str, kip848: bool) -> Self {
        let clusters = clusters();
        let mut command = Command::new(clusters.tool("kafka-console-consumer"));
        command
            .arg("--bootstrap-server")
            .arg(clusters.source().bootstrap.get(Listener::Plaintext))
            .args(["--group", group, "--topic", topic])
            .args(["--consumer-property", "enable.auto.commit=false"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if kip848 {
            command.args(["--consumer-property", "group.protocol=consumer"]);
        }
        let child = command.spawn().expect("spawn kafka-console-consumer");
        ConsoleConsumer { child }
    }
}

impl Drop for ConsoleConsumer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls describe until the group is Stable with members, or panics.
async fn wait_until_stable(client: &Client, group: &str) -> GroupDescription {
    let start = Instant::now();
    loop {
        let described = describe_one(client, group).await;
        if described.state == GroupState::Stable && described.member_count() > 0 {
            return described;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "group {group} never became Stable: {described:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn active_group_refuses_admin_commit(kip848: bool) {
    let client = client(Listener::Plaintext).await;
    let topic = topic(&client, 2).await;
    let group = unique_name(if kip848 {
        "active-848"
    } else {
        "active-classic"
    });
    client
        .commit_group_offsets(&group, &offsets(&topic, &[(0, 0), (1, 0)]))
        .await
        .expect("commit while idle");

    let _consumer = ConsoleConsumer::start(&group, &topic, kip848);
    let described = wait_until_stable(&client, &group).await;
    let expected_type = if kip848 {
        GroupType::Consumer
    } else {
        GroupType::Classic
    };
    assert_eq!(described.group_type, expected_type);
    assert_eq!(described.protocol_type, "consumer");

    let listed = client.list_groups().await.expect("list groups");
    let entry = listed
        .groups
        .iter()
        .find(|g| g.group_id == group)
        .expect("active group listed");
    assert_eq!(entry.group_type, Some(expected_type));
    assert_eq!(entry.state, Some(GroupState::Stable));

    // The baseline is read once the group is active: a KIP-848 member joining an
    // offsets-only classic group may convert it, so what matters is that the refused
    // commit below changes nothing from here on.
    let before = committed(&client, &group).await;
    assert!(
        before.values().all(|o| *o != Some(42)),
        "baseline must differ from the commit attempted below: {before:?}"
    );

    let started = Instant::now();
    let err = client
        .commit_group_offsets(&group, &offsets(&topic, &[(0, 42), (1, 42)]))
        .await
        .expect_err("an active group refuses admin commits");
    assert!(err.is_group_active(), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "group-active was retried"
    );
    let after = committed(&client, &group).await;
    assert_eq!(after, before, "offsets untouched by the refused commit");

    // Measured for issue 16: unlike the admin commit above, a transactional
    // offset commit with generation -1 and no member id is NOT refused for an
    // active group (Kafka 4.1.1, classic and KIP-848): the coordinator checks
    // membership only for a commit that names a member. So target group
    // sync must never go through TxnOffsetCommit (docs/client.md,
    // Transactions). Aborted, it leaves the offsets as they were.
    let mut producer =
        TransactionalProducer::init(&client, &unique_name("active-txn"), Duration::from_secs(30))
            .await
            .expect("init a transactional producer");
    let txn_offsets: BTreeMap<TopicPartition, i64> = [0, 1]
        .into_iter()
        .map(|p| (TopicPartition::new(&topic, p), 43))
        .collect();
    let results = producer
        .commit_offsets(&group, &txn_offsets)
        .await
        .expect("the coordinator takes it");
    assert!(results.values().all(Result::is_ok), "{results:?}");
    producer.abort().await.expect("abort");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        committed(&client, &group).await,
        before,
        "offsets untouched by the aborted transactional commit"
    );
}

#[tokio::test]
async fn active_classic_group_is_stable_listed_and_refuses_admin_commit() {
    active_group_refuses_admin_commit(false).await;
}

#[tokio::test]
async fn active_kip848_group_is_stable_listed_and_refuses_admin_commit() {
    active_group_refuses_admin_commit(true).await;
}
