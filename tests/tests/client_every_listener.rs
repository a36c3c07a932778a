//! Every kafka-lite operation the checkpointer uses, over every way of reaching a
//! broker: PLAINTEXT, SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512,
//! SSL with the test CA, mTLS with the test client certificate, and SASL_SSL
//! (SCRAM-SHA-512, and PLAIN with the portable provider); SSL and
//! mTLS once more with the portable crypto provider forced for the client
//! (`TlsConfig::provider`, docs/tls-providers.md).
//!
//! The deeper behaviour of each operation is tested over PLAINTEXT in
//! `client_data.rs`, `client_groups.rs` and `client_topics.rs`; this file shows that
//! none of them depends on the transport or the authentication underneath.

use std::time::Duration;

use e2e::access::Access;
use e2e::clusters;
use kafka_lite::{
    Client, ClientCertConfig, ConnectionConfig, Pem, PemBytes, SaslMechanismKind, TlsConfig,
    TlsProviderRequest,
};

/// The connection settings for `access` to the source cluster.
fn config(access: Access) -> ConnectionConfig {
    let base = ConnectionConfig {
        client_id: "e2e-every-listener".into(),
        request_timeout: Duration::from_secs(30),
        ..ConnectionConfig::default()
    };
    access.config(clusters().source(), base)
}

/// Every operation over `access`, against the source cluster.
async fn every_operation_over(access: Access) {
    every_operation_with(access, None).await;
}

/// Every operation over `access` with the TLS crypto provider `provider`
/// (`None`: the process-wide choice).
async fn every_operation_with(access: Access, provider: Option<TlsProviderRequest>) {
    let bootstrap = clusters()
        .source()
        .bootstrap
        .get(access.listener())
        .to_string();
    let mut config = config(access);
    if let Some(tls) = &mut config.tls {
        tls.provider = provider;
    }
    let client = Client::connect(vec![bootstrap], config)
        .await
        .unwrap_or_else(|e| panic!("connect over {access:?} with {provider:?}: {e}"));
    let what = match provider {
        None => format!("{access:?}"),
        Some(p) => format!("{access:?}{}", p.name()),
    };
    e2e::operations::every_operation(&client, &what, "every-listener").await;
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

#[tokio::test]
async fn every_operation_over_sasl_ssl_scram_sha_512() {
    every_operation_over(Access::SaslSsl(SaslMechanismKind::ScramSha512)).await;
}

/// SASL_SSL with PLAIN (the password travels inside TLS) and the portable
/// provider.
#[tokio::test]
async fn every_operation_over_sasl_ssl_plain_with_the_portable_provider() {
    every_operation_with(
        Access::SaslSsl(SaslMechanismKind::Plain),
        Some(TlsProviderRequest::Portable),
    )
    .await;
}

/// SSL with the portable provider: the test CA's RSA-2048 chain verified by
/// the `rsa` crate, the broker's (JDK) TLS 1.3 record layer.
#[tokio::test]
async fn every_operation_over_ssl_with_the_portable_provider() {
    every_operation_with(Access::Ssl, Some(TlsProviderRequest::Portable)).await;
}

/// mTLS with the portable provider: the RSA client key signs (PSS).
#[tokio::test]
async fn every_operation_over_mtls_with_the_portable_provider() {
    every_operation_with(Access::Mtls, Some(TlsProviderRequest::Portable)).await;
}

/// mTLS with the CA, the client certificate and its key given as PEM bytes in
/// memory instead of file paths.
#[tokio::test]
async fn every_operation_over_mtls_with_pem_in_memory() {
    let cluster = clusters().source();
    let read = |path: &std::path::Path| PemBytes::new(std::fs::read(path).expect("test PEM"));
    let tls = TlsConfig {
        ca_pem: Some(read(&cluster.tls.ca_pem)),
        client_cert: Some(ClientCertConfig {
            cert: Pem::Bytes(read(&cluster.tls.client_cert_pem)),
            key: Pem::Bytes(read(&cluster.tls.client_key_pem)),
        }),
        ..TlsConfig::default()
    };
    let config = ConnectionConfig {
        tls: Some(tls),
        ..config(Access::Plaintext)
    };
    let bootstrap = cluster.bootstrap.get(Access::Mtls.listener()).to_string();
    let client = Client::connect(vec![bootstrap], config)
        .await
        .unwrap_or_else(|e| panic!("connect over mTLS with in-memory PEM: {e}"));
    e2e::operations::every_operation(&client, "MtlsInMemory", "every-listener").await;
}
