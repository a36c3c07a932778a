//! Wrong SASL credentials against the real brokers fail fast (well under the
//! request timeout), name the mechanism, are not retriable, and never show
//! the password — for every mechanism kafka-lite implements.
//! (`api_versions.rs` covers an unknown PLAIN user and a wrong SCRAM-SHA-512
//! password without the timing bound.)

use std::time::{Duration, Instant};

use e2e::access::sasl_login;
use e2e::{Listener, clusters};
use kafka_lite::{ConnectionConfig, Connector, Error, SaslMechanismKind, Secret};

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Kafka delays a failed authentication by `connection.failed.authentication.delay.ms`
/// (100 ms by default); a debug-build PBKDF2 adds a little more.
const FAST: Duration = Duration::from_secs(3);
const WRONG_PASSWORD: &str = "wrong-password-Jq7-never-printed";

async fn wrong_password(mechanism: SaslMechanismKind) {
    let source = clusters().source();
    let mut login = sasl_login(source, mechanism);
    login.password = Secret::new(WRONG_PASSWORD);
    let config = ConnectionConfig {
        client_id: "e2e-sasl-failures".into(),
        connect_timeout: Duration::from_secs(10),
        request_timeout: REQUEST_TIMEOUT,
        sasl: Some(login),
        ..ConnectionConfig::default()
    };
    let started = Instant::now();
    let err = Connector::new(config)
        .expect("connector")
        .connect(source.bootstrap.get(Listener::SaslPlaintext))
        .await
        .expect_err("wrong password must not authenticate");
    let elapsed = started.elapsed();
    eprintln!("{mechanism}: {err} (after {elapsed:?})");
    assert!(elapsed < FAST, "{mechanism}: took {elapsed:?}");
    match &err {
        Error::Authentication { mechanism: m, .. } => assert_eq!(m, mechanism.name()),
        other => panic!("{mechanism}: expected Authentication, got {other:?}"),
    }
    assert!(!err.is_retriable(), "{err}");
    let shown = format!("{err} | {err:?}");
    assert!(!shown.contains(WRONG_PASSWORD), "password leaked: {shown}");
}

#[tokio::test]
async fn wrong_plain_password_fails_fast_naming_plain() {
    wrong_password(SaslMechanismKind::Plain).await;
}

#[tokio::test]
async fn wrong_scram_sha_256_password_fails_fast_naming_the_mechanism() {
    wrong_password(SaslMechanismKind::ScramSha256).await;
}

#[tokio::test]
async fn wrong_scram_sha_512_password_fails_fast_naming_the_mechanism() {
    wrong_password(SaslMechanismKind::ScramSha512).await;
}

/// A host environment with only static AWS keys.
#[derive(Debug)]
struct StaticAwsKeys;

impl kafka_lite::aws::credentials::AwsEnvironment for StaticAwsKeys {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "AWS_ACCESS_KEY_ID" => Some("AKIDEXAMPLE".into()),
            "AWS_SECRET_ACCESS_KEY" => Some(WRONG_PASSWORD.into()),
            "AWS_EC2_METADATA_DISABLED" => Some("true".into()),
            _ => None,
        }
    }

    fn read_file(&self, _: &std::path::Path) -> std::io::Result<Vec<u8>> {
        Err(std::io::ErrorKind::NotFound.into())
    }
}

/// No MSK broker is reachable here; a real Kafka broker that does not enable
/// AWS_MSK_IAM must refuse the mechanism at the handshake, and the error must
/// say so and which mechanisms it enables. A broker address without a region
/// and no fallback region is a clear error before any credential is used.
#[tokio::test]
async fn aws_msk_iam_against_a_broker_without_it_names_what_the_broker_enables() {
    use kafka_lite::aws::credentials::{ChainOptions, CredentialChain};
    use kafka_lite::{AwsMskIamSettings, HttpClientConfig, SaslConfig};
    use std::sync::Arc;

    let source = clusters().source();
    for region in [Some("us-east-1".to_string()), None] {
        let chain = CredentialChain::new(
            ChainOptions::default(),
            Arc::new(StaticAwsKeys),
            HttpClientConfig::default(),
        )
        .expect("chain");
        let config = ConnectionConfig {
            client_id: "e2e-sasl-failures".into(),
            request_timeout: REQUEST_TIMEOUT,
            sasl: Some(SaslConfig::aws_msk_iam(AwsMskIamSettings {
                credentials: Arc::new(chain),
                region: region.clone(),
                user_agent: "e2e".into(),
            })),
            ..ConnectionConfig::default()
        };
        let err = Connector::new(config)
            .expect("connector")
            .connect(source.bootstrap.get(Listener::SaslPlaintext))
            .await
            .expect_err("Kafka does not speak AWS_MSK_IAM");
        let shown = format!("{err} | {err:?}");
        match (&err, &region) {
            (
                Error::Authentication {
                    mechanism, detail, ..
                },
                Some(_),
            ) => {
                assert_eq!(mechanism, "AWS_MSK_IAM");
                assert!(
                    detail.contains("broker rejected the mechanism") && detail.contains("PLAIN"),
                    "{detail}"
                );
            }
            (Error::Authentication { detail, .. }, None) => {
                assert!(detail.contains("names no AWS region"), "{detail}");
            }
            (other, _) => panic!("expected Authentication, got {other:?}"),
        }
        assert!(!shown.contains(WRONG_PASSWORD), "secret leaked: {shown}");
    }
}
