//! Every kafka-lite operation the checkpointer uses, over every way of reaching a
//! broker: PLAINTEXT, SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512,
//! SSL with the test CA, and mTLS with the test client certificate.
//!
//! The deeper behaviour of each operation is tested over PLAINTEXT in
//! `client_data.rs`, `client_groups.rs` and `client_topics.rs`; this file shows that
//! none of them depends on the transport or the authentication underneath.

mod common;

use std::time::Duration;

use e2e::{Listener, clusters};
use kafka_lite::{
    Client, ClientCertConfig, ConnectionConfig, SaslConfig, SaslMechanismKind, Secret, TlsConfig,
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

/// Every operation over `access`, against the source cluster.
async fn every_operation_over(access: Access) {
    let bootstrap = clusters()
        .source()
        .bootstrap
        .get(access.listener())
        .to_string();
    let client = Client::connect(vec![bootstrap], access.config())
        .await
        .unwrap_or_else(|e| panic!("connect over {access:?}: {e}"));
    common::every_operation(&client, &format!("{access:?}"), "every-listener").await;
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
