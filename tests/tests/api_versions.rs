//! kafka-lite connects to real brokers over every listener kind, negotiates
//! ApiVersions and authenticates; misconfigurations fail with clear errors.

use std::time::Duration;

use e2e::access::{Access, sasl_login, tls};
use e2e::{Cluster, Listener, clusters};
use kafka_lite::{
    BrokerConnection, ConnectionConfig, Connector, Error, SaslConfig, SaslMechanismKind, Secret,
    TlsConfig,
};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, MetadataRequest, OffsetFetchRequest};
use kafka_protocol::protocol::StrBytes;

fn source() -> &'static Cluster {
    clusters().source()
}

fn base_config() -> ConnectionConfig {
    ConnectionConfig {
        client_id: "e2e-api-versions".into(),
        connect_timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(10),
        ..ConnectionConfig::default()
    }
}

fn sasl(mechanism: SaslMechanismKind) -> SaslConfig {
    sasl_login(source(), mechanism)
}

async fn connect(config: ConnectionConfig, listener: Listener) -> Result<BrokerConnection, Error> {
    let connector = Connector::new(config)?;
    connector.connect(source().bootstrap.get(listener)).await
}

/// Connects with `config` over `listener`, which must fail (`why` not);
/// the error, also printed.
async fn connect_err(config: ConnectionConfig, listener: Listener, why: &str) -> Error {
    let err = connect(config, listener).await.expect_err(why);
    eprintln!("{err}");
    err
}

/// Sends an ApiVersions request (kafka-protocol encoded) on an established
/// connection and checks the broker's answer.
async fn assert_api_versions_answered(connection: &BrokerConnection) {
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("e2e"))
        .with_client_software_version(StrBytes::from_static_str("1.0"));
    let response = connection
        .send(request)
        .await
        .expect("ApiVersions answered");
    assert_eq!(response.error_code, 0);
    let keys: Vec<i16> = response.api_keys.iter().map(|k| k.api_key).collect();
    for api in [ApiKey::OffsetFetch, ApiKey::Metadata, ApiKey::ApiVersions] {
        assert!(
            keys.contains(&(api as i16)),
            "{api:?} missing from {keys:?}"
        );
    }
    // The negotiated versions are usable for real requests.
    let version = connection
        .version_for::<OffsetFetchRequest>()
        .expect("OffsetFetch version");
    assert!((1..=9).contains(&version), "OffsetFetch v{version}");
    let metadata = connection
        .send(MetadataRequest::default().with_topics(Some(vec![])))
        .await;
    assert!(metadata.expect("Metadata answered").brokers.len() == 1);
}

/// Connects over `access` to the source cluster and checks the broker's
/// ApiVersions answer.
async fn assert_access_answers_api_versions(access: Access) {
    let config = access.config(source(), base_config());
    let connection = connect(config, access.listener())
        .await
        .unwrap_or_else(|e| panic!("connect over {access:?}: {e}"));
    assert_api_versions_answered(&connection).await;
}

#[tokio::test]
async fn plaintext_listener_answers_api_versions() {
    assert_access_answers_api_versions(Access::Plaintext).await;
}

#[tokio::test]
async fn sasl_scram_sha_512_listener_answers_api_versions() {
    assert_access_answers_api_versions(Access::Sasl(SaslMechanismKind::ScramSha512)).await;
}

#[tokio::test]
async fn sasl_scram_sha_256_listener_answers_api_versions() {
    assert_access_answers_api_versions(Access::Sasl(SaslMechanismKind::ScramSha256)).await;
}

#[tokio::test]
async fn sasl_plain_listener_answers_api_versions() {
    assert_access_answers_api_versions(Access::Sasl(SaslMechanismKind::Plain)).await;
}

#[tokio::test]
async fn ssl_listener_with_the_test_ca_answers_api_versions() {
    assert_access_answers_api_versions(Access::Ssl).await;
}

#[tokio::test]
async fn mtls_listener_with_the_client_certificate_answers_api_versions() {
    assert_access_answers_api_versions(Access::Mtls).await;
}

#[tokio::test]
async fn wrong_scram_password_is_an_authentication_error_naming_the_mechanism() {
    let wrong_password = "definitely-not-the-password-4711";
    let mut config = sasl(SaslMechanismKind::ScramSha512);
    config.password = Secret::new(wrong_password);
    let config = ConnectionConfig {
        sasl: Some(config),
        ..base_config()
    };
    let err = connect_err(config, Listener::SaslPlaintext, "must not authenticate").await;
    assert!(matches!(err, Error::Authentication { .. }), "{err:?}");
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("SCRAM-SHA-512"), "{shown}");
    assert!(!shown.contains(wrong_password), "password leaked: {shown}");
    assert!(!err.is_retriable());
}

#[tokio::test]
async fn unknown_sasl_user_is_an_authentication_error() {
    let mut config = sasl(SaslMechanismKind::Plain);
    config.username = "no-such-user".into();
    let config = ConnectionConfig {
        sasl: Some(config),
        ..base_config()
    };
    let err = connect_err(config, Listener::SaslPlaintext, "must not authenticate").await;
    assert!(
        matches!(err, Error::Authentication { ref mechanism, .. } if mechanism == "PLAIN"),
        "{err:?}"
    );
}

#[tokio::test]
async fn ssl_without_the_test_ca_is_a_tls_error() {
    // Only the built-in public roots: the test CA is unknown.
    let config = ConnectionConfig {
        tls: Some(TlsConfig::default()),
        ..base_config()
    };
    let err = connect_err(config, Listener::Ssl, "must not trust the broker").await;
    assert!(matches!(err, Error::Tls { .. }), "{err:?}");
    assert!(err.to_string().contains("ca_pem_file"), "{err}");
}

#[tokio::test]
async fn mtls_listener_without_a_client_certificate_is_a_tls_error_saying_so() {
    let config = ConnectionConfig {
        tls: Some(tls(source(), false)),
        ..base_config()
    };
    let err = connect_err(config, Listener::Mtls, "broker must refuse").await;
    assert!(matches!(err, Error::Tls { .. }), "{err:?}");
    assert!(err.to_string().contains("client certificate"), "{err}");
}

#[tokio::test]
async fn plaintext_client_on_the_ssl_listener_is_told_it_looks_like_tls() {
    let err = connect_err(
        base_config(),
        Listener::Ssl,
        "a TLS listener cannot speak plaintext",
    )
    .await;
    assert!(matches!(err, Error::FrameTooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains("look like TLS"), "{err}");
    assert!(!err.is_retriable(), "reconnecting cannot help");
}

#[tokio::test]
async fn pipelined_requests_on_one_connection_all_succeed() {
    let connection = connect(base_config(), Listener::Plaintext)
        .await
        .expect("connect");
    let requests = (0..20).map(|_| {
        let connection = connection.clone();
        async move {
            connection
                .send(MetadataRequest::default().with_topics(Some(vec![])))
                .await
        }
    });
    let mut handles = Vec::new();
    for request in requests {
        handles.push(tokio::spawn(request));
    }
    for handle in handles {
        handle.await.expect("task").expect("Metadata answered");
    }
}

#[tokio::test]
async fn broker_pool_shares_a_connection_and_replaces_a_closed_one() {
    let pool = kafka_lite::BrokerPool::new(Connector::new(base_config()).expect("connector"));
    let address = source().bootstrap.get(Listener::Plaintext);
    let first = pool.get(address).await.expect("connect");
    let again = pool.get(address).await.expect("cached");
    assert!(
        first.same_connection(&again),
        "the pool reuses an open connection"
    );

    first.close();
    let err = again
        .send(MetadataRequest::default().with_topics(Some(vec![])))
        .await
        .expect_err("closed connection");
    assert!(
        matches!(err, Error::ConnectionClosed { .. }) && err.is_retriable(),
        "{err:?}"
    );

    let fresh = pool.get(address).await.expect("reconnect");
    assert!(
        !fresh.same_connection(&first),
        "a closed connection is replaced"
    );
    fresh
        .send(MetadataRequest::default().with_topics(Some(vec![])))
        .await
        .expect("the new connection works");
}
