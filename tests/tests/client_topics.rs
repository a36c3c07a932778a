//! kafka-lite's `Client` against the real clusters: bootstrap, metadata,
//! leader routing, and topic creation.

use std::time::Duration;

use e2e::{Listener, clusters, unique_name};
use kafka_lite::{Client, ConnectionConfig, CreateTopicOutcome, Error, RetryPolicy};
use kafka_protocol::error::ResponseError;

fn config() -> ConnectionConfig {
    ConnectionConfig {
        client_id: "e2e-client-topics".into(),
        request_timeout: Duration::from_secs(20),
        ..ConnectionConfig::default()
    }
}

async fn client() -> Client {
    let bootstrap = clusters().source().bootstrap.get(Listener::Plaintext);
    Client::connect(vec![bootstrap.to_string()], config())
        .await
        .expect("connect to the source cluster")
}

#[tokio::test]
async fn connect_learns_the_single_broker_from_metadata() {
    let client = client().await;
    let brokers = client.brokers();
    assert_eq!(brokers.len(), 1, "{brokers:?}");
    assert_eq!(
        brokers[0].address(),
        clusters().source().bootstrap.get(Listener::Plaintext)
    );
}

#[tokio::test]
async fn connect_skips_a_dead_bootstrap_address() {
    let live = clusters().source().bootstrap.get(Listener::Plaintext);
    // Port 1 on loopback refuses connections.
    let client = Client::connect(vec!["127.0.0.1:1".into(), live.to_string()], config())
        .await
        .expect("second address works");
    assert_eq!(client.brokers().len(), 1);
}

#[tokio::test]
async fn connect_to_only_dead_addresses_fails_after_the_deadline() {
    let policy = RetryPolicy {
        deadline: Duration::from_millis(500),
        ..RetryPolicy::default()
    };
    let err = Client::connect_with_retry(vec!["127.0.0.1:1".into()], config(), policy)
        .await
        .expect_err("nothing listens on port 1");
    assert!(err.is_retriable(), "{err}");
    assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
}

#[tokio::test]
async fn leader_of_an_internal_topic_partition_is_the_broker() {
    let client = client().await;
    // A coordinator lookup makes the broker create __consumer_offsets.
    client
        .group_coordinator(&unique_name("creates-offsets-topic"))
        .await
        .expect("coordinator");
    let leader = client
        .leader("__consumer_offsets", 0)
        .await
        .expect("__consumer_offsets exists");
    assert_eq!(
        leader.address(),
        clusters().source().bootstrap.get(Listener::Plaintext)
    );
    let connection = client
        .leader_connection("__consumer_offsets", 0)
        .await
        .expect("leader connection");
    assert!(!connection.is_closed());
}

#[tokio::test]
async fn leader_of_a_missing_topic_is_unknown_topic_or_partition() {
    let client = client().await;
    let err = client
        .leader(&unique_name("no-such-topic"), 0)
        .await
        .expect_err("topic does not exist");
    assert_eq!(
        err.kafka_error(),
        Some(ResponseError::UnknownTopicOrPartition),
        "{err}"
    );
    assert!(matches!(err, Error::Kafka { .. }));
}

#[tokio::test]
async fn a_missing_topic_is_the_brokers_error_and_a_missing_partition_a_virtual_one() {
    let client = client().await;
    let missing = client
        .leader(&unique_name("no-such-topic"), 0)
        .await
        .expect_err("topic does not exist");
    assert!(
        !missing.is_virtual(),
        "the broker answered for the topic: {missing}"
    );

    let topic = unique_name("one-partition");
    client
        .create_topic(&topic, 1, 1, &[])
        .await
        .expect("create topic");
    let err = client
        .leader(&topic, 7)
        .await
        .expect_err("partition 7 does not exist");
    assert_eq!(
        err.kafka_error(),
        Some(ResponseError::UnknownTopicOrPartition),
        "{err}"
    );
    assert!(err.is_virtual(), "no broker named partition 7: {err}");
    assert_eq!(
        err.to_string(),
        format!(
            "Metadata failed for topic-partition {topic}-7: UNKNOWN_TOPIC_OR_PARTITION \
             (Kafka error code 3)"
        )
    );
}

#[tokio::test]
async fn group_coordinator_is_found_and_cached() {
    let client = client().await;
    let group = unique_name("coordinated");
    let coordinator = client.group_coordinator(&group).await.expect("coordinator");
    assert_eq!(coordinator.node_id, client.brokers()[0].node_id);
    let before = client.requests_sent();
    client.group_coordinator(&group).await.expect("cached");
    assert_eq!(
        client.requests_sent(),
        before,
        "second lookup hit the cache"
    );
}

#[tokio::test]
async fn creating_a_topic_twice_reports_already_existed() {
    let client = client().await;
    let topic = unique_name("created");
    let configs = [("cleanup.policy".to_string(), "compact".to_string())];
    let first = client.create_topic(&topic, 3, 1, &configs).await;
    assert_eq!(first.expect("create"), CreateTopicOutcome::Created);
    let second = client.create_topic(&topic, 3, 1, &configs).await;
    assert_eq!(
        second.expect("create again"),
        CreateTopicOutcome::AlreadyExisted
    );
    let metadata = client.topic_metadata(&topic).await.expect("metadata");
    assert_eq!(metadata.partitions.len(), 3);
    let leader = client
        .leader(&topic, 2)
        .await
        .expect("leader of partition 2");
    assert_eq!(leader.node_id, client.brokers()[0].node_id);
}

#[tokio::test]
async fn replication_factor_above_the_broker_count_is_invalid_replication_factor() {
    let client = client().await;
    let topic = unique_name("rf3");
    let err = client
        .create_topic(&topic, 1, 3, &[])
        .await
        .expect_err("one broker cannot hold three replicas");
    assert_eq!(
        err.kafka_error(),
        Some(ResponseError::InvalidReplicationFactor),
        "{err}"
    );
    assert!(!err.is_retriable());
    assert!(
        err.to_string().contains("INVALID_REPLICATION_FACTOR"),
        "{err}"
    );
}
