//! Every kafka-lite operation the checkpointer uses, over every way of reaching a
//! broker: PLAINTEXT, SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512,
//! SSL with the test CA, and mTLS with the test client certificate.
//!
//! The deeper behaviour of each operation is tested over PLAINTEXT in
//! `client_data.rs`, `client_groups.rs` and `client_topics.rs`; this file shows that
//! none of them depends on the transport or the authentication underneath.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use e2e::{Listener, clusters, unique_name};
use kafka_lite::records::{Codec, ProducerRecord};
use kafka_lite::{
    Client, ClientCertConfig, ConnectionConfig, CreateTopicOutcome, FetchOptions, GroupState,
    IsolationLevel, OffsetSpec, OffsetToCommit, ProduceOptions, SaslConfig, SaslMechanismKind,
    Secret, StartOffset, TlsConfig, TopicPartition,
};

/// One way of reaching the source cluster.
#[derive(Clone, Copy, Debug)]
enum Access {
    Plaintext,
    Sasl(SaslMechanismKind),
    Ssl,
    Mtls,
}

impl Access {
    fn listener(self) -> Listener {
        match self {
            Access::Plaintext => Listener::Plaintext,
            Access::Sasl(_) => Listener::SaslPlaintext,
            Access::Ssl => Listener::Ssl,
            Access::Mtls => Listener::Mtls,
        }
    }

    fn config(self) -> ConnectionConfig {
        let source = clusters().source();
        let mut config = ConnectionConfig {
            client_id: "e2e-every-listener".into(),
            request_timeout: Duration::from_secs(30),
            ..ConnectionConfig::default()
        };
        match self {
            Access::Plaintext => {}
            Access::Sasl(mechanism) => {
                let users = &source.sasl_users;
                let user = match mechanism {
                    SaslMechanismKind::Plain => &users.plain,
                    SaslMechanismKind::ScramSha256 => &users.scram_sha_256,
                    SaslMechanismKind::ScramSha512 => &users.scram_sha_512,
                };
                config.sasl = Some(SaslConfig {
                    mechanism,
                    username: user.user.clone(),
                    password: Secret::new(user.password.expose()),
                });
            }
            Access::Ssl | Access::Mtls => {
                config.tls = Some(TlsConfig {
                    ca_pem_file: Some(source.tls.ca_pem.clone()),
                    client_cert: matches!(self, Access::Mtls).then(|| ClientCertConfig {
                        cert_pem_file: source.tls.client_cert_pem.clone(),
                        key_pem_file: source.tls.client_key_pem.clone(),
                    }),
                    ..TlsConfig::default()
                });
            }
        }
        config
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// Creates a topic, produces, lists offsets, fetches, reads to the end, commits and
/// fetches group offsets, describes and lists the group: all over `access`.
async fn every_operation_over(access: Access) {
    let bootstrap = clusters()
        .source()
        .bootstrap
        .get(access.listener())
        .to_string();
    let client = Client::connect(vec![bootstrap], access.config())
        .await
        .unwrap_or_else(|e| panic!("connect over {access:?}: {e}"));

    let topic = unique_name("every-listener");
    let created = client
        .create_topic(&topic, 1, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("create_topic over {access:?}: {e}"));
    assert_eq!(created, CreateTopicOutcome::Created);

    let ts = now_ms();
    let records: Vec<ProducerRecord> = (0..5)
        .map(|i| ProducerRecord {
            timestamp: ts,
            key: Some(Bytes::from(format!("key-{i}"))),
            value: Some(Bytes::from(format!("value-{i}"))),
            headers: Vec::new(),
        })
        .collect();
    let options = ProduceOptions {
        codec: Codec::Lz4,
        ..ProduceOptions::default()
    };
    let base = client
        .produce(&topic, 0, &records, &options)
        .await
        .unwrap_or_else(|e| panic!("produce over {access:?}: {e}"));
    assert_eq!(base, 0);

    let listed = client
        .list_offsets(
            &[
                (&topic, 0, OffsetSpec::Earliest),
                (&topic, 0, OffsetSpec::Latest),
            ],
            IsolationLevel::ReadUncommitted,
        )
        .await;
    let offsets: Vec<Option<i64>> = listed
        .iter()
        .map(|l| {
            l.result
                .as_ref()
                .unwrap_or_else(|e| panic!("list_offsets over {access:?}: {e}"))
                .offset
        })
        .collect();
    assert_eq!(offsets, vec![Some(0), Some(5)]);

    let fetched = client
        .fetch(&topic, 0, 2, &FetchOptions::default())
        .await
        .unwrap_or_else(|e| panic!("fetch over {access:?}: {e}"));
    let values: Vec<Option<Bytes>> = fetched.records.iter().map(|r| r.value.clone()).collect();
    assert_eq!(
        values,
        vec![
            Some(Bytes::from("value-2")),
            Some(Bytes::from("value-3")),
            Some(Bytes::from("value-4"))
        ]
    );
    assert_eq!(fetched.high_watermark, 5);

    let mut reader = client
        .partition_reader(&topic, 0, StartOffset::Earliest, FetchOptions::default())
        .await
        .unwrap_or_else(|e| panic!("partition_reader over {access:?}: {e}"));
    let mut read = 0;
    while let Some(batch) = reader
        .read(&client)
        .await
        .unwrap_or_else(|e| panic!("reader over {access:?}: {e}"))
    {
        read += batch.len();
    }
    assert_eq!(read, 5);
    assert!(reader.is_caught_up());

    let group = unique_name("every-listener-group");
    let mut commit = BTreeMap::new();
    commit.insert(TopicPartition::new(&topic, 0), OffsetToCommit::new(3));
    let results = client
        .commit_group_offsets(&group, &commit)
        .await
        .unwrap_or_else(|e| panic!("commit_group_offsets over {access:?}: {e}"));
    assert!(results.values().all(Result::is_ok), "{results:?}");

    let mut fetched = client
        .fetch_group_offsets(std::slice::from_ref(&group))
        .await;
    let group_offsets = fetched
        .swap_remove(&group)
        .expect("a result for the group")
        .unwrap_or_else(|e| panic!("fetch_group_offsets over {access:?}: {e}"));
    let committed: Vec<Option<i64>> = group_offsets
        .values()
        .map(|r| r.as_ref().expect("partition fetched").offset)
        .collect();
    assert_eq!(committed, vec![Some(3)]);

    let mut described = client.describe_groups(std::slice::from_ref(&group)).await;
    let description = described
        .swap_remove(&group)
        .expect("a result for the group")
        .unwrap_or_else(|e| panic!("describe_groups over {access:?}: {e}"));
    assert_eq!(description.state, GroupState::Empty);

    let listed = client
        .list_groups()
        .await
        .unwrap_or_else(|e| panic!("list_groups over {access:?}: {e}"));
    assert!(
        listed.groups.iter().any(|g| g.group_id == group),
        "group {group} missing from list_groups over {access:?}"
    );
}

#[tokio::test]
async fn every_operation_over_plaintext() {
    every_operation_over(Access::Plaintext).await;
}

#[tokio::test]
async fn every_operation_over_sasl_plain() {
    every_operation_over(Access::Sasl(SaslMechanismKind::Plain)).await;
}

#[tokio::test]
async fn every_operation_over_sasl_scram_sha_256() {
    every_operation_over(Access::Sasl(SaslMechanismKind::ScramSha256)).await;
}

#[tokio::test]
async fn every_operation_over_sasl_scram_sha_512() {
    every_operation_over(Access::Sasl(SaslMechanismKind::ScramSha512)).await;
}

#[tokio::test]
async fn every_operation_over_ssl() {
    every_operation_over(Access::Ssl).await;
}

#[tokio::test]
async fn every_operation_over_mtls() {
    every_operation_over(Access::Mtls).await;
}
