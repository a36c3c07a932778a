//! kafka-lite's transactional producer against the real source cluster:
//! committed records and group offsets become visible together, aborted ones
//! never, and a second producer initializing the same transactional id fences
//! the first (its open transaction aborted, its later writes refused).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use e2e::{Listener, clusters, unique_name};
use kafka_lite::records::ProducerRecord;
use kafka_lite::{
    Client, ConnectionConfig, FetchOptions, IsolationLevel, OffsetFetchOptions, ProduceOptions,
    StartOffset, TopicPartition, TransactionalProducer,
};

const TXN_TIMEOUT: Duration = Duration::from_secs(30);

async fn client() -> Client {
    client_of(clusters().source().bootstrap.get(Listener::Plaintext)).await
}

async fn client_of(bootstrap: &str) -> Client {
    let config = ConnectionConfig {
        client_id: "e2e-client-transactions".into(),
        request_timeout: Duration::from_secs(20),
        ..ConnectionConfig::default()
    };
    Client::connect(vec![bootstrap.to_string()], config)
        .await
        .expect("connect")
}

fn records(values: &[&str]) -> Vec<ProducerRecord> {
    values
        .iter()
        .map(|v| ProducerRecord {
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(Bytes::from(v.to_string())),
            headers: Vec::new(),
        })
        .collect()
}

/// What `probe` returns once it is `want` (commit markers, and with them a
/// transaction's records and offsets, land shortly after EndTxn returns), or
/// its last answer after 10 s.
async fn settled<T: PartialEq, F, Fut>(want: T, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let got = probe().await;
        if got == want || std::time::Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The values a reader with `isolation` sees, once they are `want`.
async fn eventually(
    client: &Client,
    topic: &str,
    isolation: IsolationLevel,
    want: &[&str],
) -> Vec<String> {
    let want: Vec<String> = want.iter().map(|v| v.to_string()).collect();
    settled(want, || values(client, topic, isolation)).await
}

/// The values of `topic`-0 a reader with `isolation` sees from the start.
async fn values(client: &Client, topic: &str, isolation: IsolationLevel) -> Vec<String> {
    let options = FetchOptions {
        isolation,
        fetch_wait: Duration::from_millis(100),
        ..FetchOptions::default()
    };
    let mut reader = client
        .partition_reader(topic, 0, StartOffset::Earliest, options)
        .await
        .expect("open a reader");
    let mut out = Vec::new();
    while let Some(batch) = reader.read(client).await.expect("read") {
        out.extend(
            batch
                .into_iter()
                .filter_map(|r| r.value.map(|v| String::from_utf8_lossy(&v).into_owned())),
        );
    }
    out
}

/// [`committed`] once it is `want`.
async fn committed_eventually(
    client: &Client,
    group: &str,
    topic: &str,
    want: Option<i64>,
) -> Option<i64> {
    settled(want, || committed(client, group, topic)).await
}

async fn committed(client: &Client, group: &str, topic: &str) -> Option<i64> {
    let mut fetched = client
        .fetch_group_offsets_with(&[group.to_owned()], &OffsetFetchOptions::default())
        .await;
    let offsets = fetched
        .swap_remove(group)
        .expect("a result")
        .expect("fetched");
    offsets
        .get(&TopicPartition::new(topic, 0))
        .and_then(|r| r.as_ref().ok())
        .and_then(|c| c.offset)
}

#[tokio::test]
async fn committed_records_and_offsets_appear_together_and_aborted_ones_never() {
    let c = client().await;
    let topic = unique_name("txn-topic");
    let group = unique_name("txn-group");
    c.create_topic(&topic, 1, 1, &[]).await.expect("topic");
    let mut p = TransactionalProducer::init(&c, &unique_name("txn-id"), TXN_TIMEOUT)
        .await
        .expect("init");
    let options = ProduceOptions::default();
    let offsets = |o: i64| BTreeMap::from([(TopicPartition::new(&topic, 0), o)]);

    p.produce(&topic, 0, &records(&["a1", "a2"]), &options)
        .await
        .expect("produce");
    let results = p
        .commit_offsets(&group, &offsets(2))
        .await
        .expect("offsets");
    assert!(results.values().all(Result::is_ok), "{results:?}");
    // Open: read_committed sees nothing yet, and the offset is not committed.
    assert!(
        values(&c, &topic, IsolationLevel::ReadCommitted)
            .await
            .is_empty()
    );
    assert_eq!(committed(&c, &group, &topic).await, None);
    p.commit().await.expect("commit");
    assert_eq!(
        eventually(&c, &topic, IsolationLevel::ReadCommitted, &["a1", "a2"]).await,
        ["a1", "a2"]
    );
    assert_eq!(
        committed_eventually(&c, &group, &topic, Some(2)).await,
        Some(2)
    );

    // Aborted: neither the records nor the offset.
    p.produce(&topic, 0, &records(&["b1"]), &options)
        .await
        .expect("produce");
    p.commit_offsets(&group, &offsets(9))
        .await
        .expect("offsets");
    p.abort().await.expect("abort");
    // A third, committed, after it.
    p.produce(&topic, 0, &records(&["c1"]), &options)
        .await
        .expect("produce");
    p.commit().await.expect("commit");
    assert_eq!(
        eventually(
            &c,
            &topic,
            IsolationLevel::ReadCommitted,
            &["a1", "a2", "c1"]
        )
        .await,
        ["a1", "a2", "c1"]
    );
    assert_eq!(committed(&c, &group, &topic).await, Some(2));
    // read_uncommitted readers also see the aborted record (docs/client.md).
    assert_eq!(
        eventually(
            &c,
            &topic,
            IsolationLevel::ReadUncommitted,
            &["a1", "a2", "b1", "c1"]
        )
        .await,
        ["a1", "a2", "b1", "c1"]
    );
}

#[tokio::test]
async fn a_new_producer_with_the_same_transactional_id_fences_the_old_one() {
    let c = client().await;
    let topic = unique_name("txn-fence");
    let group = unique_name("txn-fence-group");
    c.create_topic(&topic, 1, 1, &[]).await.expect("topic");
    let id = unique_name("txn-fence-id");
    let options = ProduceOptions::default();
    let mut old = TransactionalProducer::init(&c, &id, TXN_TIMEOUT)
        .await
        .expect("init the old one");
    old.produce(&topic, 0, &records(&["zombie"]), &options)
        .await
        .expect("the old one writes in an open transaction");

    // The new owner takes the id over: the old transaction is aborted.
    let other = client().await;
    let mut new = TransactionalProducer::init(&other, &id, TXN_TIMEOUT)
        .await
        .expect("init the new one");
    assert_eq!(new.producer().0, old.producer().0, "same producer id");
    assert!(new.producer().1 > old.producer().1, "a newer epoch");

    // Nothing the old one sends is accepted any more.
    let e = old
        .produce(&topic, 0, &records(&["late"]), &options)
        .await
        .expect_err("the old one's produce is refused");
    assert!(e.is_fenced(), "{e}");
    let offsets = BTreeMap::from([(TopicPartition::new(&topic, 0), 5)]);
    let e = old
        .commit_offsets(&group, &offsets)
        .await
        .expect_err("the old one's offsets are refused");
    assert!(e.is_fenced(), "{e}");
    let e = old.commit().await.expect_err("the old one cannot commit");
    assert!(e.is_fenced(), "{e}");

    new.produce(&topic, 0, &records(&["owner"]), &options)
        .await
        .expect("the new one writes");
    new.commit_offsets(&group, &offsets).await.expect("offsets");
    new.commit().await.expect("commit");
    assert_eq!(
        eventually(&c, &topic, IsolationLevel::ReadCommitted, &["owner"]).await,
        ["owner"]
    );
    assert_eq!(
        committed_eventually(&c, &group, &topic, Some(5)).await,
        Some(5)
    );
}

/// Issue 16's question: does the group coordinator accept a transactional
/// offset commit of an admin-style producer (generation -1, no member) into a
/// group that has no members, whatever made the group: a classic consumer
/// that left, a KIP-848 consumer that left (4.1 only: the 3.9 cluster does not
/// enable that protocol), an `assign()` consumer, or nothing yet. Measured on
/// Kafka 4.1.1 and 3.9.
#[tokio::test]
async fn transactional_offsets_land_in_member_less_groups_on_kafka_4_1_and_3_9() {
    use e2e::java::{CommitMode, GroupOffset, helpers};
    let legacy = clusters().legacy().bootstrap.plaintext.clone();
    let source = clusters()
        .source()
        .bootstrap
        .get(Listener::Plaintext)
        .to_owned();
    for (bootstrap, modes) in [
        (
            source,
            vec![
                Some(CommitMode::Classic),
                Some(CommitMode::Consumer),
                Some(CommitMode::Standalone),
                None,
            ],
        ),
        (
            legacy,
            vec![
                Some(CommitMode::Classic),
                Some(CommitMode::Standalone),
                None,
            ],
        ),
    ] {
        let c = client_of(&bootstrap).await;
        let topic = unique_name("txn-groups");
        c.create_topic(&topic, 1, 1, &[]).await.expect("topic");
        for mode in modes {
            let group = unique_name("txn-member-less");
            if let Some(mode) = mode {
                // A member joins, commits 1 and leaves: the group is empty.
                helpers()
                    .commit_offsets(
                        &bootstrap,
                        &group,
                        mode,
                        &[GroupOffset {
                            topic: topic.clone(),
                            partition: 0,
                            offset: 1,
                            metadata: String::new(),
                        }],
                    )
                    .unwrap_or_else(|e| panic!("{mode:?} commit on {bootstrap}: {e}"));
                assert_eq!(committed(&c, &group, &topic).await, Some(1));
            }
            let mut p = TransactionalProducer::init(&c, &unique_name("txn-groups-id"), TXN_TIMEOUT)
                .await
                .expect("init");
            let offsets = BTreeMap::from([(TopicPartition::new(&topic, 0), 7)]);
            let results = p
                .commit_offsets(&group, &offsets)
                .await
                .unwrap_or_else(|e| panic!("{mode:?} group on {bootstrap}: {e}"));
            assert!(results.values().all(Result::is_ok), "{mode:?}: {results:?}");
            p.commit().await.expect("commit");
            assert_eq!(
                committed_eventually(&c, &group, &topic, Some(7)).await,
                Some(7),
                "{mode:?} group on {bootstrap}"
            );
        }
    }
}
