//! From a cluster's configured connection to kafka-lite's [`ConnectionConfig`].
//!
//! PEM given as a file path stays a file path (kafka-lite reads it, and its
//! errors name the file). Inline PEM from the config
//! (`ssl.truststore.certificates`, `ssl.keystore.key`, ...) is handed to
//! kafka-lite as bytes in memory; it is never written to disk.

use std::time::Duration;

use kafka_lite::{
    ClientCertConfig, ConnectionConfig, Pem, PemBytes, SaslConfig, SaslMechanismKind, TlsConfig,
};

use crate::config::security::{
    PemSource, SaslMechanism, TrustRoots, certificates_pem, private_key_pem,
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
                    PemSource::Pkcs12 { .. } => (
                        None,
                        Some(PemBytes::from(certificates_pem(&material.roots).expose())),
                    ),
                },
            };
            let client_cert = match (&settings.identity, &material.identity) {
                (Some(id), _) if id.is_plain_pem() => {
                    let pem = |source: &PemSource| match source {
                        PemSource::Inline(text) => Pem::Bytes(PemBytes::from(text.expose())),
                        PemSource::File(path) | PemSource::Pkcs12 { path, .. } => {
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
                provider: None,
            })
        }
    };
    let sasl = cluster.sasl.as_ref().map(|s| SaslConfig {
        mechanism: match s.mechanism {
            SaslMechanism::Plain => SaslMechanismKind::Plain,
            SaslMechanism::ScramSha256 => SaslMechanismKind::ScramSha256,
            SaslMechanism::ScramSha512 => SaslMechanismKind::ScramSha512,
        },
        username: s.username.clone(),
        password: kafka_lite::Secret::new(s.password.expose()),
    });
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
