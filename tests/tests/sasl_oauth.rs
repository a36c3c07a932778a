//! SASL on the clusters' `OAUTH` listener (connections.max.reauth.ms = 10 s):
//! KIP-368 re-authentication with SCRAM and with OAUTHBEARER while requests
//! keep flowing, OAUTHBEARER tokens from a real HTTPS token endpoint in the
//! test process, and the failures an operator must be able to read.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use e2e::access::sasl_login;
use e2e::oauth::{EndpointSettings, TokenClaims, TokenEndpoint, sign_token};
use e2e::{Cluster, OAuthListener, clusters, unique_name};
use kafka_lite::{
    BearerToken, BoxFuture, BrokerConnection, ConnectionConfig, Connector, CredentialError,
    CredentialProvider, Error, HttpClient, HttpClientConfig, HttpUrl, OAuthBearerTokens,
    OAuthConfig, RefreshConfig, SaslConfig, SaslMechanismKind, Secret, TlsConfig, TokenSource,
};
use kafka_protocol::messages::MetadataRequest;

fn source() -> &'static Cluster {
    clusters().source()
}

fn oauth() -> &'static OAuthListener {
    source().oauth.as_ref().expect(
        "clusters.json has no OAUTH listener: restart the clusters with `cargo xtask kafka up`",
    )
}

fn config(sasl: SaslConfig) -> ConnectionConfig {
    ConnectionConfig {
        client_id: "e2e-sasl-oauth".into(),
        request_timeout: Duration::from_secs(10),
        sasl: Some(sasl),
        ..ConnectionConfig::default()
    }
}

async fn connect(sasl: SaslConfig) -> Result<BrokerConnection, Error> {
    Connector::new(config(sasl))?
        .connect(&oauth().bootstrap)
        .await
}

/// Keeps `parallel` request loops busy on `connection` for `duration`;
/// returns (requests answered, first failure).
async fn keep_busy(
    connection: &BrokerConnection,
    parallel: usize,
    duration: Duration,
) -> (u64, Option<Error>) {
    let answered = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + duration;
    let mut loops = tokio::task::JoinSet::new();
    for _ in 0..parallel {
        let connection = connection.clone();
        let answered = answered.clone();
        loops.spawn(async move {
            while Instant::now() < deadline {
                connection.send(MetadataRequest::default()).await?;
                answered.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok::<_, Error>(())
        });
    }
    let mut failure = None;
    while let Some(result) = loops.join_next().await {
        if let Ok(Err(e)) = result {
            failure.get_or_insert(e);
        }
    }
    (answered.load(Ordering::Relaxed), failure)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_connection_reauthenticates_while_requests_keep_flowing() {
    let connection = connect(sasl_login(source(), SaslMechanismKind::ScramSha512))
        .await
        .expect("SCRAM-SHA-512 on the OAUTH listener");
    // 10 s sessions: 25 s of traffic spans at least two re-authentications.
    let (answered, failure) = keep_busy(&connection, 4, Duration::from_secs(25)).await;
    assert!(failure.is_none(), "a request failed: {failure:?}");
    println!(
        "SCRAM: {answered} requests answered, {} re-authentications",
        connection.reauthentications()
    );
    assert!(
        connection.reauthentications() >= 2,
        "{}",
        connection.reauthentications()
    );
    assert!(answered > 100, "{answered}");
    assert!(!connection.is_closed());
}

/// A provider that hands out tokens signed on the spot.
#[derive(Debug)]
struct Signed {
    claims: TokenClaims,
}

impl CredentialProvider<BearerToken> for Signed {
    fn credential(&self) -> BoxFuture<'_, Result<BearerToken, CredentialError>> {
        Box::pin(async move {
            Ok(BearerToken {
                value: Secret::new(sign_token(oauth(), &self.claims)),
                expires_at: None,
                extensions: vec![],
            })
        })
    }
}

#[tokio::test]
async fn token_for_another_audience_is_refused_with_the_brokers_reason() {
    let provider = Signed {
        claims: TokenClaims {
            subject: "mm2".into(),
            lifetime: Duration::from_secs(300),
            audience: "someone-else".into(),
        },
    };
    let err = connect(SaslConfig::oauth_bearer(Arc::new(provider)))
        .await
        .expect_err("wrong audience");
    let shown = err.to_string();
    println!("{shown}");
    assert!(matches!(err, Error::Authentication { .. }), "{err:?}");
    assert!(shown.contains("OAUTHBEARER"), "{shown}");
    assert!(shown.contains("invalid_token"), "{shown}");
}

fn endpoint_provider(endpoint: &TokenEndpoint, secret: &str) -> OAuthBearerTokens {
    let http = HttpClient::new(HttpClientConfig {
        tls: TlsConfig {
            ca_pem_file: Some(endpoint.ca_pem.clone()),
            ..TlsConfig::default()
        },
        ..HttpClientConfig::default()
    })
    .expect("http client");
    OAuthBearerTokens::new(OAuthConfig {
        source: TokenSource::ClientCredentials {
            url: HttpUrl::parse(&endpoint.url()).expect("url"),
            client_id: "mm2-e2e".into(),
            client_secret: Secret::new(secret),
            scope: Some("kafka".into()),
            urlencode_header: false,
            http,
        },
        sub_claim_name: "sub".into(),
        scope_claim_name: "scope".into(),
        retry_backoff: Duration::from_millis(100),
        retry_backoff_max: Duration::from_secs(2),
        refresh: RefreshConfig::default(),
        extensions: vec![],
    })
}

fn start_endpoint(lifetime: Duration) -> TokenEndpoint {
    let dir = e2e::target_dir()
        .join("e2e-oauth")
        .join(unique_name("endpoint"));
    TokenEndpoint::start(
        oauth(),
        EndpointSettings {
            client_id: "mm2-e2e".into(),
            client_secret: "right-secret-7Hq".into(),
            token_lifetime: lifetime,
        },
        &dir,
        SocketAddr::from(([127, 0, 0, 1], 0)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_lived_tokens_from_an_https_endpoint_are_refreshed_and_reauthenticated() {
    let endpoint = start_endpoint(Duration::from_secs(15));
    let provider = endpoint_provider(&endpoint, "right-secret-7Hq");
    let connection = connect(SaslConfig::oauth_bearer(Arc::new(provider)))
        .await
        .expect("OAUTHBEARER with a token from the endpoint");
    let (answered, failure) = keep_busy(&connection, 4, Duration::from_secs(35)).await;
    assert!(failure.is_none(), "a request failed: {failure:?}");
    println!(
        "OAUTHBEARER: {answered} requests, {} re-authentications, {} tokens issued",
        connection.reauthentications(),
        endpoint.issued()
    );
    // Sessions end with the token (15 s) or after 10 s, whichever is first;
    // tokens are refreshed at 80-85 % of their lifetime.
    assert!(
        connection.reauthentications() >= 3,
        "{}",
        connection.reauthentications()
    );
    assert!(endpoint.issued() >= 3, "{}", endpoint.issued());
    assert!(!connection.is_closed());
}

#[tokio::test]
async fn wrong_client_secret_is_refused_naming_the_endpoint_answer_not_the_secret() {
    let endpoint = start_endpoint(Duration::from_secs(300));
    let provider = endpoint_provider(&endpoint, "wrong-secret-Zk4");
    let err = connect(SaslConfig::oauth_bearer(Arc::new(provider)))
        .await
        .expect_err("wrong secret");
    let shown = format!("{err} | {err:?}");
    println!("{err}");
    assert!(matches!(err, Error::Credentials { .. }), "{err:?}");
    assert!(!err.is_retriable(), "{err:?}");
    assert!(shown.contains(&endpoint.url()), "{shown}");
    assert!(shown.contains("HTTP 401: invalid_client"), "{shown}");
    assert!(!shown.contains("wrong-secret-Zk4"), "{shown}");
    assert_eq!(endpoint.refused(), 1, "a refusal is not retried");
}
