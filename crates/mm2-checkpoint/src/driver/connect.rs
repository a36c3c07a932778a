//! From a cluster's configured connection to kafka-lite's [`ConnectionConfig`].
//!
//! kafka-lite reads PEM from files. Inline PEM from the config
//! (`ssl.truststore.certificates`, `ssl.keystore.key`, ...) is written to a
//! private file (mode 0600 on Unix) in a per-process temporary directory, which
//! is removed when the [`Connection`] is dropped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kafka_lite::{ClientCertConfig, ConnectionConfig, SaslConfig, SaslMechanismKind, TlsConfig};

use crate::config::security::{PemSource, SaslMechanism, TrustRoots};
use crate::config::{ClusterConnection, ProcessEnvironment};

/// A cluster's bootstrap list and connection settings, ready for kafka-lite.
#[derive(Debug)]
pub struct Connection {
    /// `host:port` per bootstrap server, in order.
    pub bootstrap: Vec<String>,
    /// Client settings.
    pub config: ConnectionConfig,
    /// Holds the temporary files of inline PEM.
    _inline: Option<InlineDir>,
}

#[derive(Debug)]
struct InlineDir(PathBuf);

impl Drop for InlineDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
    let mut inline: Option<InlineDir> = None;
    let tls = match &cluster.tls {
        None => None,
        Some(settings) => {
            let mut file_for = |source: &PemSource, name: &str| -> Result<PathBuf, ConnectError> {
                match source {
                    PemSource::File(path) => Ok(path.clone()),
                    PemSource::Inline(text) => {
                        let dir = match &inline {
                            Some(d) => d.0.clone(),
                            None => {
                                let d = make_private_dir(&cluster.alias).map_err(|e| {
                                    err(format!("cannot create a directory for inline PEM: {e}"))
                                })?;
                                inline = Some(InlineDir(d.clone()));
                                d
                            }
                        };
                        let path = dir.join(name);
                        write_private(&path, text.expose().as_bytes()).map_err(|e| {
                            err(format!(
                                "cannot write inline PEM to {}: {e}",
                                path.display()
                            ))
                        })?;
                        Ok(path)
                    }
                }
            };
            let ca_pem_file = match &settings.trust {
                TrustRoots::Default => None,
                TrustRoots::Pem { source, .. } => Some(file_for(source, "ca.pem")?),
            };
            let client_cert = match &settings.identity {
                None => None,
                Some(id) => Some(ClientCertConfig {
                    cert_pem_file: file_for(&id.certificate_chain, "cert.pem")?,
                    key_pem_file: file_for(&id.private_key, "key.pem")?,
                }),
            };
            // Parse the PEM once here too, so config errors name the config key.
            settings
                .load(&ProcessEnvironment)
                .map_err(|e| err(e.to_string()))?;
            Some(TlsConfig {
                ca_pem_file,
                client_cert,
                verify_hostname: settings.verify_hostname,
                insecure_skip_verify: false,
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
        ..ConnectionConfig::default()
    };
    Ok(Connection {
        bootstrap,
        config,
        _inline: inline,
    })
}

fn make_private_dir(alias: &str) -> std::io::Result<PathBuf> {
    let safe: String = alias
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let dir = std::env::temp_dir().join(format!(
        "mm2-checkpoint-{}-{safe}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(&dir)?;
    Ok(dir)
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)?.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::security::{ClientIdentity, SaslCredentials, SecurityProtocol, TlsSettings};
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
    fn inline_pem_goes_to_a_private_file_removed_on_drop() {
        let mut a = cluster();
        a.security_protocol = SecurityProtocol::Ssl;
        // Only parsed as PEM here (no TLS handshake), so any base64 body will do.
        let ca = "-----BEGIN CERTIFICATE-----\nAAECAwQF\n-----END CERTIFICATE-----\n".to_string();
        a.tls = Some(TlsSettings {
            trust: TrustRoots::Pem {
                source: PemSource::Inline(Secret::new(ca.clone())),
                key: "ssl.truststore.certificates".into(),
            },
            identity: None::<ClientIdentity>,
            verify_hostname: false,
        });
        let c = connection(&a, "id", Duration::from_secs(5)).unwrap();
        let tls = c.config.tls.as_ref().unwrap();
        assert!(!tls.verify_hostname);
        let path = tls.ca_pem_file.clone().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), ca);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        drop(c);
        assert!(!path.exists());
    }
}
