//! From a cluster's configured connection to kafka-lite's [`ConnectionConfig`].
//!
//! PEM given as a file path stays a file path (kafka-lite reads it, and its
//! errors name the file). Inline PEM from the config
//! (`ssl.truststore.certificates`, `ssl.keystore.key`, ...) is handed to
//! kafka-lite as bytes in memory; it is never written to disk.

use std::sync::Arc;
use std::time::Duration;

use kafka_lite::aws::{
    self, AwsCredentials,
    credentials::{ChainOptions, CredentialChain},
};
use kafka_lite::{
    AwsMskIamSettings, ClientCertConfig, ConnectionConfig, HttpClient, HttpClientConfig, HttpUrl,
    OAuthBearerTokens, OAuthConfig, Pem, PemBytes, RefreshConfig, SaslConfig, SaslMechanismKind,
    TlsConfig, TokenSource,
};

use crate::config::security::{
    AwsIamLogin, OAuthSettings, PemSource, SaslMechanism, TokenEndpoint, TrustRoots,
    certificates_pem, private_key_pem,
};
use crate::config::{ClusterConnection, ProcessEnvironment};

/// A cluster's bootstrap list and connection settings, ready for kafka-lite.
#[derive(Debug)]
pub struct Connection {
    /// `host:port` per bootstrap server, in order.
    pub bootstrap: Vec<String>,
    /// Client settings.
    pub config: ConnectionConfig,
}

/// Why a connection could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cluster {alias}: {detail}")]
pub struct ConnectError {
    /// The cluster alias.
    pub alias: String,
    /// What went wrong (never contains key material).
    pub detail: String,
}

/// Maps `cluster` to kafka-lite settings. `client_id` names this process to the
/// brokers; `request_timeout` bounds every request.
pub fn connection(
    cluster: &ClusterConnection,
    client_id: &str,
    request_timeout: Duration,
) -> Result<Connection, ConnectError> {
    let err = |detail: String| ConnectError {
        alias: cluster.alias.clone(),
        detail,
    };
    let bootstrap = cluster
        .bootstrap_servers
        .iter()
        .map(|b| {
            if b.host.contains(':') {
                format!("[{}]:{}", b.host, b.port)
            } else {
                format!("{}:{}", b.host, b.port)
            }
        })
        .collect();
    let tls = match &cluster.tls {
        None => None,
        Some(settings) => {
            // Parse and check the material here too, so config errors name the
            // config key; stores and encrypted keys are handed over decoded.
            let material = settings
                .load(&ProcessEnvironment)
                .map_err(|e| err(e.to_string()))?;
            let (ca_pem_file, ca_pem) = match &settings.trust {
                TrustRoots::Default => (None, None),
                TrustRoots::Pem { source, .. } => match source {
                    PemSource::File(path) => (Some(path.clone()), None),
                    PemSource::Inline(text) => (None, Some(PemBytes::from(text.expose()))),
                    PemSource::Store { .. } => (
                        None,
                        Some(PemBytes::from(certificates_pem(&material.roots).expose())),
                    ),
                },
            };
            let client_cert = match (&settings.identity, &material.identity) {
                (Some(id), _) if id.is_plain_pem() => {
                    let pem = |source: &PemSource| match source {
                        PemSource::Inline(text) => Pem::Bytes(PemBytes::from(text.expose())),
                        PemSource::File(path) | PemSource::Store { path, .. } => {
                            Pem::File(path.clone())
                        }
                    };
                    Some(ClientCertConfig {
                        cert: pem(&id.certificate_chain),
                        key: pem(&id.private_key),
                    })
                }
                (Some(_), Some((chain, key))) => Some(ClientCertConfig {
                    cert: Pem::Bytes(PemBytes::from(certificates_pem(chain).expose())),
                    key: Pem::Bytes(PemBytes::from(private_key_pem(key).expose())),
                }),
                _ => None,
            };
            Some(TlsConfig {
                ca_pem_file,
                ca_pem,
                client_cert,
                verify_hostname: settings.verify_hostname,
                insecure_skip_verify: false,
                // The process-wide choice (MM2_TLS_PROVIDER or automatic),
                // which main.rs checked and logged before any network I/O.
                provider: crate::tls_provider::for_clients().map_err(err)?,
            })
        }
    };
    let sasl = match &cluster.sasl {
        None => None,
        Some(s) => {
            let password =
                |kind| SaslConfig::with_password(kind, s.username.clone(), s.password.clone());
            Some(match (s.mechanism, &s.oauth, &s.aws_iam) {
                (SaslMechanism::Plain, _, _) => password(SaslMechanismKind::Plain),
                (SaslMechanism::ScramSha256, _, _) => password(SaslMechanismKind::ScramSha256),
                (SaslMechanism::ScramSha512, _, _) => password(SaslMechanismKind::ScramSha512),
                (SaslMechanism::OAuthBearer, Some(oauth), _) => SaslConfig::oauth_bearer(Arc::new(
                    OAuthBearerTokens::new(oauth_config(oauth).map_err(err)?),
                )),
                (SaslMechanism::OAuthBearer, None, Some(login)) => {
                    msk_iam_oauth_bearer(login).map_err(err)?
                }
                (SaslMechanism::OAuthBearer, None, None) => {
                    return Err(err("OAUTHBEARER without its settings".into()));
                }
                (SaslMechanism::AwsMskIam, _, Some(login)) => aws_msk_iam(login).map_err(err)?,
                (SaslMechanism::AwsMskIam, _, None) => {
                    return Err(err("AWS_MSK_IAM without its login options".into()));
                }
            })
        }
    };
    let config = ConnectionConfig {
        client_id: client_id.to_owned(),
        request_timeout,
        tls,
        sasl,
        cluster_name: cluster.alias.clone(),
        ..ConnectionConfig::default()
    };
    Ok(Connection { bootstrap, config })
}

/// AWS_MSK_IAM: the IAMLoginModule options as kafka-lite's credential chain
/// (reading this process's environment and files), with the fallback
/// region of the AWS SDK's region chain.
fn aws_msk_iam(login: &AwsIamLogin) -> Result<SaslConfig, String> {
    let (chain, region) = aws_credentials(login)?;
    Ok(SaslConfig::aws_msk_iam(AwsMskIamSettings {
        credentials: chain,
        region,
        user_agent: user_agent(),
    }))
}

/// MSK's OAUTHBEARER form (`IAMOAuthBearerLoginCallbackHandler`): tokens
/// signed for the region of the AWS SDK's region chain, which must be set
/// (a token provider does not know the broker's host name).
fn msk_iam_oauth_bearer(login: &AwsIamLogin) -> Result<SaslConfig, String> {
    let (chain, region) = aws_credentials(login)?;
    let region = region.ok_or(
        "OAUTHBEARER with the MSK IAM handler needs the cluster's AWS region: set AWS_REGION \
         (or the profile's region), or use sasl.mechanism=AWS_MSK_IAM, which takes it from \
         the broker host name",
    )?;
    Ok(SaslConfig::oauth_bearer(Arc::new(
        aws::MskIamBearerTokens {
            credentials: chain,
            region,
            user_agent: user_agent(),
        },
    )))
}

/// What this client calls itself in MSK IAM payloads and tokens.
fn user_agent() -> String {
    format!("mm2-checkpoint/{}", env!("CARGO_PKG_VERSION"))
}

/// The AWS credential chain of the IAM login options, and the fallback
/// region.
#[allow(clippy::type_complexity)]
fn aws_credentials(
    login: &AwsIamLogin,
) -> Result<
    (
        Arc<dyn kafka_lite::CredentialProvider<AwsCredentials>>,
        Option<String>,
    ),
    String,
> {
    let options = ChainOptions {
        profile: login.profile.clone(),
        role_arn: login.role_arn.clone(),
        role_session_name: login.role_session_name.clone(),
        role_external_id: login.role_external_id.clone(),
        role_credentials: login
            .role_keys
            .as_ref()
            .map(|(id, secret, token)| AwsCredentials {
                access_key_id: id.clone(),
                secret_access_key: secret.clone(),
                session_token: token.clone(),
                expires_at: None,
            }),
        sts_region: login.sts_region.clone(),
        refresh_before: None,
        no_default_providers: !login.default_providers,
        // Audit logs (CloudTrail) show web-identity sessions as ours.
        web_identity_session_prefix: Some("mm2-checkpoint".to_owned()),
    };
    let env = Arc::new(aws::credentials::ProcessEnvironment);
    let http = HttpClientConfig {
        tls: TlsConfig {
            provider: crate::tls_provider::for_clients()?,
            ..TlsConfig::default()
        },
        ..HttpClientConfig::default()
    };
    let chain = CredentialChain::new(options, env.clone(), http)
        .map_err(|e| format!("AWS credential chain: {e}"))?;
    Ok((
        Arc::new(chain),
        aws::credentials::default_region(env.as_ref()),
    ))
}

/// The token provider settings of an OAUTHBEARER cluster. One provider
/// serves every connection of the cluster, so they share its token.
fn oauth_config(oauth: &OAuthSettings) -> Result<OAuthConfig, String> {
    let source = match &oauth.token_endpoint {
        TokenEndpoint::File(path) => TokenSource::File(path.clone()),
        TokenEndpoint::Url(url) => {
            let url = HttpUrl::parse(url)?;
            let http = HttpClient::new(HttpClientConfig {
                tls: TlsConfig {
                    ca_pem_file: oauth.trust_pem.clone(),
                    verify_hostname: oauth.verify_hostname,
                    provider: crate::tls_provider::for_clients()?,
                    ..TlsConfig::default()
                },
                connect_timeout: oauth.connect_timeout,
                read_timeout: oauth.read_timeout,
                ..HttpClientConfig::default()
            })
            .map_err(|e| format!("the token endpoint's TLS settings: {e}"))?;
            TokenSource::ClientCredentials {
                url,
                client_id: oauth.client_id.clone(),
                client_secret: oauth.client_secret.clone(),
                scope: oauth.scope.clone(),
                urlencode_header: oauth.header_urlencode,
                http,
            }
        }
    };
    Ok(OAuthConfig {
        source,
        sub_claim_name: oauth.sub_claim_name.clone(),
        scope_claim_name: oauth.scope_claim_name.clone(),
        retry_backoff: oauth.retry_backoff,
        retry_backoff_max: oauth.retry_backoff_max,
        refresh: RefreshConfig {
            window_factor: oauth.refresh_window_factor,
            window_jitter: oauth.refresh_window_jitter,
            min_period: oauth.refresh_min_period,
            buffer: oauth.refresh_buffer,
        },
        extensions: oauth.extensions.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::security::{
        ClientIdentity, KeyOrigin, SaslCredentials, SecurityProtocol, TlsSettings,
    };
    use crate::config::{BrokerAddress, Secret};

    fn cluster() -> ClusterConnection {
        ClusterConnection {
            alias: "A".into(),
            bootstrap_servers: vec![
                BrokerAddress {
                    host: "kafka-1".into(),
                    port: 9093,
                },
                BrokerAddress {
                    host: "::1".into(),
                    port: 9094,
                },
            ],
            security_protocol: SecurityProtocol::Plaintext,
            tls: None,
            sasl: None,
        }
    }

    #[test]
    fn bootstrap_servers_keep_their_order_and_bracket_ipv6() {
        let c = connection(&cluster(), "id", Duration::from_secs(5)).unwrap();
        assert_eq!(c.bootstrap, vec!["kafka-1:9093", "[::1]:9094"]);
        assert_eq!(c.config.client_id, "id");
        assert_eq!(c.config.request_timeout, Duration::from_secs(5));
        assert!(c.config.tls.is_none() && c.config.sasl.is_none());
    }

    #[test]
    fn sasl_mechanism_and_credentials_are_passed_and_the_password_stays_redacted() {
        let mut a = cluster();
        a.security_protocol = SecurityProtocol::SaslPlaintext;
        a.sasl = Some(SaslCredentials {
            mechanism: SaslMechanism::ScramSha256,
            username: "alice".into(),
            password: Secret::new("hunter2"),
            oauth: None,
            aws_iam: None,
        });
        let c = connection(&a, "id", Duration::from_secs(5)).unwrap();
        let sasl = c.config.sasl.as_ref().unwrap();
        assert_eq!(sasl.mechanism, SaslMechanismKind::ScramSha256);
        assert_eq!(sasl.username, "alice");
        assert_eq!(sasl.password.expose(), "hunter2");
        assert!(!format!("{c:?}").contains("hunter2"));
    }

    #[test]
    fn inline_pem_is_passed_in_memory_and_file_pem_as_a_path() {
        let mut a = cluster();
        a.security_protocol = SecurityProtocol::Ssl;
        // Parsed and checked here, but no TLS handshake.
        let ca = include_str!("../../tests/data/test_cert.pem").to_string();
        let body_line = ca.lines().nth(1).unwrap().to_string();
        a.tls = Some(TlsSettings {
            trust: TrustRoots::Pem {
                source: PemSource::Inline(Secret::new(ca.clone())),
                key: KeyOrigin {
                    key: "ssl.truststore.certificates".into(),
                    line: None,
                },
            },
            identity: None::<ClientIdentity>,
            verify_hostname: false,
        });
        let c = connection(&a, "id", Duration::from_secs(5)).unwrap();
        let tls = c.config.tls.as_ref().unwrap();
        assert!(!tls.verify_hostname);
        // kafka-lite is told the provider MM2_TLS_PROVIDER asks for.
        assert_eq!(
            tls.provider,
            Some(crate::tls_provider::requested().unwrap())
        );
        assert_eq!(tls.ca_pem_file, None);
        assert_eq!(tls.ca_pem.as_ref().unwrap().expose(), ca.as_bytes());
        assert!(!format!("{c:?}").contains(&body_line));

        let dir = std::env::temp_dir().join(format!("mm2-connect-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ca.pem");
        std::fs::write(&path, &ca).unwrap();
        a.tls = Some(TlsSettings {
            trust: TrustRoots::Pem {
                source: PemSource::File(path.clone()),
                key: KeyOrigin {
                    key: "ssl.truststore.location".into(),
                    line: None,
                },
            },
            identity: None::<ClientIdentity>,
            verify_hostname: true,
        });
        let c = connection(&a, "id", Duration::from_secs(5)).unwrap();
        let tls = c.config.tls.as_ref().unwrap();
        assert_eq!(tls.ca_pem_file.as_deref(), Some(path.as_path()));
        assert!(tls.ca_pem.is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
