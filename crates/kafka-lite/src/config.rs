//! Connection settings: timeouts, frame limit, TLS and SASL.
//!
//! These are plain data; [`crate::Connector::new`] validates them (reads PEM
//! files, builds the rustls configuration) once, so connecting to each
//! broker afterwards does no file I/O. PEM can also be given in memory
//! ([`PemBytes`]), so that key material never has to be written to disk.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::credentials::{BearerToken, CredentialProvider, Secret};

/// Default limit on a single response frame: 100 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 100 * 1024 * 1024;

/// How to connect to (every broker of) one Kafka cluster.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    /// The `client.id` sent in every request header.
    pub client_id: String,
    /// Timeout for TCP connect plus the TLS handshake.
    pub connect_timeout: Duration,
    /// Timeout for one request/response round trip (and for each SASL and
    /// ApiVersions step while connecting).
    pub request_timeout: Duration,
    /// Largest response frame accepted; a larger announced length fails the
    /// connection before anything is allocated.
    pub max_frame_bytes: usize,
    /// TLS settings; `None` means a plaintext connection.
    pub tls: Option<TlsConfig>,
    /// SASL settings; `None` means no authentication.
    pub sasl: Option<SaslConfig>,
    /// What log lines call the cluster (an alias, say); empty for nothing.
    pub cluster_name: String,
    /// Connections to a group coordinator for the requests of single groups
    /// ([`Client::coordinator_connection`](crate::Client::coordinator_connection):
    /// OffsetCommit and the like). A broker serves one connection's requests
    /// one at a time, so one connection commits to one group after another;
    /// with several, commits to different groups run side by side. A group
    /// always uses the same one (chosen by a hash of its id), so its own
    /// requests stay in order. Default 1; 0 counts as 1.
    pub coordinator_connections: usize,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            client_id: "kafka-lite".to_string(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            tls: None,
            sasl: None,
            cluster_name: String::new(),
            coordinator_connections: 1,
        }
    }
}

/// TLS settings (Kafka's `SSL` and `SASL_SSL` security protocols).
///
/// The SNI name and the name verified against the certificate are the host
/// part of each broker address.
#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// PEM file with the CA certificate(s) to trust; `None` (and no
    /// [`ca_pem`](Self::ca_pem)) trusts the built-in Mozilla roots
    /// (webpki-roots).
    pub ca_pem_file: Option<PathBuf>,
    /// The CA certificate(s) to trust as PEM text in memory, instead of
    /// [`ca_pem_file`](Self::ca_pem_file); setting both is an
    /// [`Error::TlsConfig`](crate::Error::TlsConfig).
    pub ca_pem: Option<PemBytes>,
    /// Client certificate and key for mutual TLS.
    pub client_cert: Option<ClientCertConfig>,
    /// Check that the broker certificate is valid for the broker's host name
    /// (Kafka's `ssl.endpoint.identification.algorithm=https`). Default `true`.
    /// When `false` the chain is still verified against the CA.
    pub verify_hostname: bool,
    /// Accept ANY broker certificate without verification. Dangerous: only for
    /// tests; a warning is logged whenever it is used. Default `false`.
    pub insecure_skip_verify: bool,
    /// The crypto provider for this client's connections, as the caller
    /// chose it (kafka-lite reads no environment for it); `None` (the
    /// default) is the automatic choice ([`crate::tls_provider`]: graviola
    /// where the CPU can run it, the portable provider elsewhere).
    pub provider: Option<crate::TlsProviderRequest>,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            ca_pem_file: None,
            ca_pem: None,
            client_cert: None,
            verify_hostname: true,
            insecure_skip_verify: false,
            provider: None,
        }
    }
}

/// A client certificate chain and its private key, each a PEM file or PEM
/// text in memory, for mutual TLS. The key must be unencrypted (PKCS#8,
/// PKCS#1 or SEC1).
#[derive(Debug, Clone)]
pub struct ClientCertConfig {
    /// The client certificate, then any intermediates.
    pub cert: Pem,
    /// The private key.
    pub key: Pem,
}

impl ClientCertConfig {
    /// A certificate chain and a key read from PEM files.
    pub fn from_files(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        ClientCertConfig {
            cert: Pem::File(cert.into()),
            key: Pem::File(key.into()),
        }
    }
}

/// Where PEM text comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pem {
    /// A file, read when the [`Connector`](crate::Connector) is built; errors
    /// name it.
    File(PathBuf),
    /// PEM text already in memory.
    Bytes(PemBytes),
}

/// PEM text held in memory (certificates or a private key). Its `Debug`
/// output shows only the length, never the content.
#[derive(Clone, PartialEq, Eq)]
pub struct PemBytes(Vec<u8>);

impl PemBytes {
    /// Wraps PEM text.
    pub fn new(pem: impl Into<Vec<u8>>) -> Self {
        PemBytes(pem.into())
    }

    /// The PEM text. Never log it: it may be a private key.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl From<Vec<u8>> for PemBytes {
    fn from(pem: Vec<u8>) -> Self {
        PemBytes(pem)
    }
}

impl From<String> for PemBytes {
    fn from(pem: String) -> Self {
        PemBytes(pem.into_bytes())
    }
}

impl From<&str> for PemBytes {
    fn from(pem: &str) -> Self {
        PemBytes(pem.as_bytes().to_vec())
    }
}

impl fmt::Debug for PemBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PemBytes(<{} bytes, redacted>)", self.0.len())
    }
}

/// The SASL mechanisms kafka-lite implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanismKind {
    /// `PLAIN` (RFC 4616). Send only over TLS in production.
    Plain,
    /// `SCRAM-SHA-256` (RFC 5802, RFC 7677).
    ScramSha256,
    /// `SCRAM-SHA-512` (RFC 5802).
    ScramSha512,
    /// `OAUTHBEARER` (RFC 7628, KIP-255): a bearer token from
    /// [`SaslConfig::credentials`] ([`DynamicCredentials::BearerToken`]).
    OAuthBearer,
    /// `AWS_MSK_IAM`: Amazon MSK's IAM authentication, a SigV4-signed
    /// payload made with AWS credentials from [`SaslConfig::credentials`]
    /// ([`DynamicCredentials::AwsMskIam`]).
    AwsMskIam,
}

impl SaslMechanismKind {
    /// The mechanism's name on the wire, e.g. `SCRAM-SHA-512`.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanismKind::Plain => "PLAIN",
            SaslMechanismKind::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanismKind::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanismKind::OAuthBearer => "OAUTHBEARER",
            SaslMechanismKind::AwsMskIam => "AWS_MSK_IAM",
        }
    }

    /// Parses a mechanism name as written in Kafka configs (`sasl.mechanism`),
    /// case-insensitively. Returns `None` for mechanisms not implemented.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_uppercase().as_str() {
            "PLAIN" => Some(SaslMechanismKind::Plain),
            "SCRAM-SHA-256" => Some(SaslMechanismKind::ScramSha256),
            "SCRAM-SHA-512" => Some(SaslMechanismKind::ScramSha512),
            "OAUTHBEARER" => Some(SaslMechanismKind::OAuthBearer),
            "AWS_MSK_IAM" => Some(SaslMechanismKind::AwsMskIam),
            _ => None,
        }
    }
}

impl fmt::Display for SaslMechanismKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// SASL authentication: a mechanism and its credentials.
///
/// PLAIN and SCRAM use [`username`](Self::username) and
/// [`password`](Self::password); mechanisms whose credentials change over
/// time (OAUTHBEARER's token) fetch them from [`credentials`](Self::credentials)
/// each time a connection authenticates or re-authenticates.
#[derive(Debug, Clone)]
pub struct SaslConfig {
    /// Which mechanism to use.
    pub mechanism: SaslMechanismKind,
    /// The user name (PLAIN, SCRAM).
    pub username: String,
    /// The password (PLAIN, SCRAM; redacted in `Debug`).
    pub password: Secret,
    /// Where a mechanism with changing credentials gets them; `None` for
    /// PLAIN and SCRAM.
    pub credentials: Option<DynamicCredentials>,
}

impl SaslConfig {
    /// PLAIN or SCRAM with a user name and a password.
    pub fn with_password(
        mechanism: SaslMechanismKind,
        username: impl Into<String>,
        password: Secret,
    ) -> Self {
        SaslConfig {
            mechanism,
            username: username.into(),
            password,
            credentials: None,
        }
    }

    /// AWS_MSK_IAM with credentials from `settings.credentials`.
    pub fn aws_msk_iam(settings: AwsMskIamSettings) -> Self {
        SaslConfig {
            mechanism: SaslMechanismKind::AwsMskIam,
            username: String::new(),
            password: Secret::new(""),
            credentials: Some(DynamicCredentials::AwsMskIam(settings)),
        }
    }

    /// OAUTHBEARER with tokens from `provider`.
    pub fn oauth_bearer(provider: Arc<dyn CredentialProvider<BearerToken>>) -> Self {
        SaslConfig {
            mechanism: SaslMechanismKind::OAuthBearer,
            username: String::new(),
            password: Secret::new(""),
            credentials: Some(DynamicCredentials::BearerToken(provider)),
        }
    }
}

/// The changing credentials a mechanism authenticates with.
#[derive(Debug, Clone)]
pub enum DynamicCredentials {
    /// OAUTHBEARER's bearer token.
    BearerToken(Arc<dyn CredentialProvider<BearerToken>>),
    /// AWS_MSK_IAM's AWS credentials and signing settings.
    AwsMskIam(AwsMskIamSettings),
}

/// How `AWS_MSK_IAM` signs: where the AWS credentials come from, and the
/// region to sign for when a broker's host name does not contain one.
#[derive(Debug, Clone)]
pub struct AwsMskIamSettings {
    /// The credentials (the standard chain:
    /// [`crate::aws::credentials::CredentialChain`]).
    pub credentials: Arc<dyn CredentialProvider<crate::aws::AwsCredentials>>,
    /// The region for brokers whose host name names none (MSK's own names
    /// do: `b-1.<cluster>.<id>.c2.kafka.<region>.amazonaws.com`).
    pub region: Option<String>,
    /// The `user-agent` field of the payload.
    pub user_agent: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_are_redacted() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "[redacted]");
        assert_eq!(format!("{s}"), "[redacted]");
        assert_eq!(format!("{:?}", Some(s.clone())), "Some([redacted])");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn debug_of_sasl_config_hides_password() {
        let config = SaslConfig::with_password(
            SaslMechanismKind::ScramSha512,
            "alice",
            Secret::new("hunter2"),
        );
        let shown = format!("{config:?}");
        assert!(shown.contains("alice"));
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn debug_of_in_memory_pem_hides_it() {
        let key = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n";
        let config = TlsConfig {
            ca_pem: Some(PemBytes::from(key)),
            client_cert: Some(ClientCertConfig {
                cert: Pem::File("/etc/cert.pem".into()),
                key: Pem::Bytes(key.into()),
            }),
            ..TlsConfig::default()
        };
        let shown = format!("{config:?}");
        assert!(shown.contains("/etc/cert.pem"), "{shown}");
        assert!(!shown.contains("c2VjcmV0"), "{shown}");
        assert!(!shown.contains("PRIVATE"), "{shown}");
    }

    #[test]
    fn mechanism_names_round_trip() {
        for kind in [
            SaslMechanismKind::Plain,
            SaslMechanismKind::ScramSha256,
            SaslMechanismKind::ScramSha512,
            SaslMechanismKind::OAuthBearer,
            SaslMechanismKind::AwsMskIam,
        ] {
            assert_eq!(SaslMechanismKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(
            SaslMechanismKind::from_name("scram-sha-512"),
            Some(SaslMechanismKind::ScramSha512)
        );
        assert_eq!(SaslMechanismKind::from_name("GSSAPI"), None);
    }
}
