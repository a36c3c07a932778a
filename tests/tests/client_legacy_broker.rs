//! kafka-lite against a real Apache Kafka 3.9 broker (the `legacy` cluster):
//! every operation the checkpointer uses works through ApiVersions
//! negotiation, and that broker really advertises other version ranges than
//! the Kafka 4 clusters.

use std::time::Duration;

use e2e::clusters;
use kafka_lite::{BrokerConnection, Client, ConnectionConfig, Connector};
use kafka_protocol::messages::{
    CreateTopicsRequest, DescribeGroupsRequest, FetchRequest, FindCoordinatorRequest,
    ListGroupsRequest, ListOffsetsRequest, MetadataRequest, OffsetCommitRequest,
    OffsetFetchRequest, ProduceRequest,
};
use kafka_protocol::protocol::{Request, VersionRange};

fn config() -> ConnectionConfig {
    ConnectionConfig {
        client_id: "e2e-legacy-broker".into(),
        request_timeout: Duration::from_secs(30),
        ..ConnectionConfig::default()
    }
}

async fn connect(bootstrap: &str) -> BrokerConnection {
    let connector = Connector::new(config()).expect("a plain connector");
    connector
        .connect(bootstrap)
        .await
        .unwrap_or_else(|e| panic!("connect to {bootstrap}: {e}"))
}

/// For one API the checkpointer sends: its name, what the broker at `conn`
/// advertises and the version kafka-lite negotiates with it.
fn negotiated<R: kafka_lite::ApiRequest>(
    conn: &BrokerConnection,
) -> (&'static str, Option<VersionRange>, Result<i16, String>) {
    (
        R::NAME,
        conn.broker_versions(<R as Request>::KEY),
        conn.version_for::<R>().map_err(|e| e.to_string()),
    )
}

fn our_apis(
    conn: &BrokerConnection,
) -> Vec<(&'static str, Option<VersionRange>, Result<i16, String>)> {
    vec![
        negotiated::<MetadataRequest>(conn),
        negotiated::<CreateTopicsRequest>(conn),
        negotiated::<ProduceRequest>(conn),
        negotiated::<ListOffsetsRequest>(conn),
        negotiated::<FetchRequest>(conn),
        negotiated::<FindCoordinatorRequest>(conn),
        negotiated::<OffsetCommitRequest>(conn),
        negotiated::<OffsetFetchRequest>(conn),
        negotiated::<DescribeGroupsRequest>(conn),
        negotiated::<ListGroupsRequest>(conn),
    ]
}

#[tokio::test]
async fn every_operation_works_against_a_kafka_3_9_broker() {
    let legacy = clusters().legacy();
    assert!(
        legacy.kafka_version.starts_with("3.9."),
        "the legacy cluster runs Kafka {}",
        legacy.kafka_version
    );
    let client = Client::connect(vec![legacy.bootstrap.plaintext.clone()], config())
        .await
        .unwrap_or_else(|e| panic!("connect to the legacy cluster: {e}"));
    e2e::operations::every_operation(
        &client,
        &format!("Kafka {} PLAINTEXT", legacy.kafka_version),
        "legacy-broker",
    )
    .await;
}

#[tokio::test]
async fn every_api_we_send_negotiates_a_version_with_kafka_3_9() {
    let conn = connect(&clusters().legacy().bootstrap.plaintext).await;
    for (name, broker, version) in our_apis(&conn) {
        let version =
            version.unwrap_or_else(|e| panic!("{name}: no common version with 3.9 ({e})"));
        let broker = broker.unwrap_or_else(|| panic!("{name}: not advertised by 3.9"));
        assert!(
            broker.min <= version && version <= broker.max,
            "{name}: negotiated v{version} outside the broker's {broker}"
        );
    }
}

/// The APIs of [`our_apis`] on the legacy and on the source cluster, side by side.
async fn both_brokers() -> Vec<(
    &'static str,
    (Option<VersionRange>, Result<i16, String>),
    (Option<VersionRange>, Result<i16, String>),
)> {
    let legacy = connect(&clusters().legacy().bootstrap.plaintext).await;
    let current = connect(&clusters().source().bootstrap.plaintext).await;
    our_apis(&legacy)
        .into_iter()
        .zip(our_apis(&current))
        .map(|((name, old, old_v), (_, new, new_v))| (name, (old, old_v), (new, new_v)))
        .collect()
}

#[tokio::test]
async fn kafka_3_9_caps_produce_fetch_and_list_offsets_lower_than_kafka_4() {
    // Kafka 3.9.1 advertises Produce up to v11, Fetch up to v17 and
    // ListOffsets up to v9; Kafka 4.1.1 goes higher on each.
    let lower: Vec<&str> = both_brokers()
        .await
        .into_iter()
        .filter_map(|(name, (old, _), (new, _))| match (old, new) {
            (Some(old), Some(new)) if old.max < new.max => Some(name),
            _ => None,
        })
        .collect();
    for name in ["Produce", "Fetch", "ListOffsets"] {
        assert!(
            lower.contains(&name),
            "{name}: the legacy broker's maximum is not below Kafka 4's (lower: {lower:?})"
        );
    }
}

#[tokio::test]
async fn kafka_lite_negotiates_the_same_versions_with_kafka_3_9_as_with_kafka_4() {
    // kafka-lite's own maxima are all within what 3.9 supports, so the lower
    // caps of 3.9 never bind: the versions sent are identical.
    for (name, (old, old_version), (new, new_version)) in both_brokers().await {
        assert_eq!(
            old_version, new_version,
            "{name}: 3.9 advertises {old:?}, 4.x advertises {new:?}"
        );
    }
}
