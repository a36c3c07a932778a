//! The one support library of the end-to-end tests in `tests/tests/` (and of
//! `crates/mm2-checkpoint/tests/cli/`): here the cluster file written by
//! `cargo xtask kafka up`; in the modules, by subject, the binary
//! ([`binary`]), one test's world on the clusters ([`world`]), the daemon under
//! faults ([`faults`]), the real MirrorMaker 2 ([`mm2`], [`interop`]), Kafka's
//! Java code ([`java`]) and the rest (docs/testing.md lists them).
//!
//! Every end-to-end test runs against two real Apache Kafka clusters,
//! `source` and `target`, that xtask starts once for the whole test run. This
//! crate reads the cluster file xtask writes (`target/kafka/clusters.json`,
//! or the path in `MM2_CLUSTERS_FILE`) into typed structs, and hands out
//! unique topic and group names so tests can share the clusters in parallel.
//!
//! There is deliberately no "skip if Kafka is missing": a test that cannot
//! reach its brokers fails loudly, with a message saying how to start them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub mod access;
pub mod binary;
pub mod faults;
pub mod http;
pub mod interop;
pub mod java;
pub mod mm2;
pub mod oauth;
pub mod operations;
pub mod process;
pub mod scratch;
pub mod stored;
pub mod world;

/// Environment variable naming the cluster file; `cargo xtask test` sets it.
pub const CLUSTERS_FILE_ENV: &str = "MM2_CLUSTERS_FILE";

/// Everything `cargo xtask kafka up` started, as recorded in `clusters.json`
/// (xtask writes the file with these same types).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Clusters {
    /// Apache Kafka version the brokers run, e.g. `4.1.1`.
    pub kafka_version: String,
    /// Java classpath of the cached Kafka jars (a `.../libs/*` wildcard).
    pub kafka_libs: String,
    /// Launcher script: `kafka-run-class <main class> [args...]`.
    pub kafka_run_class: PathBuf,
    /// Directory with `kafka-topics`, `kafka-console-consumer`,
    /// `kafka-console-producer`, `kafka-consumer-groups` and `kafka-storage`.
    pub kafka_bin: PathBuf,
    /// The clusters by name.
    pub clusters: BTreeMap<String, Cluster>,
    /// The older-Kafka cluster (absent from cluster files of older xtasks
    /// and of soak runs); use [`Clusters::legacy`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legacy: Option<LegacyCluster>,
    /// Java classpath of Amazon MSK's IAM library (`aws-msk-iam-auth`) and
    /// its AWS SDK jars, for the AWS_MSK_IAM differential test (absent from
    /// cluster files of older xtasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msk_iam_libs: Option<String>,
}

/// The `legacy` cluster: one KRaft node on an older Apache Kafka (3.9),
/// PLAINTEXT only, for version-negotiation tests.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LegacyCluster {
    /// Always `legacy`.
    pub name: String,
    /// Apache Kafka version the broker runs, e.g. `3.9.1`.
    pub kafka_version: String,
    /// KRaft cluster id.
    pub cluster_id: String,
    /// PID of the broker JVM.
    pub pid: u32,
    /// Bootstrap address of the only client listener.
    pub bootstrap: PlaintextListener,
    /// The controller listener; not for clients.
    pub controller: String,
    /// The broker's `server.properties`.
    pub config_file: PathBuf,
    /// Directory of the broker's logs.
    pub log_dir: PathBuf,
    /// The broker log.
    pub log_file: PathBuf,
    /// The broker's `log.dirs`.
    pub data_dir: PathBuf,
}

/// Bootstrap address of a PLAINTEXT-only cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlaintextListener {
    /// PLAINTEXT listener (`127.0.0.1:port`).
    pub plaintext: String,
}

/// One single-node KRaft cluster (broker and controller in one JVM).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cluster {
    /// `source` or `target`.
    pub name: String,
    /// KRaft cluster id.
    pub cluster_id: String,
    /// PID of the broker JVM.
    pub pid: u32,
    /// Bootstrap address (`127.0.0.1:port`) per listener.
    pub bootstrap: Listeners,
    /// The controller listener; not for clients.
    pub controller: String,
    /// One user per SASL mechanism, accepted on the SASL_PLAINTEXT and SASL_SSL
    /// listeners.
    pub sasl_users: SaslUsers,
    /// PEM files for the SSL, mTLS and SASL_SSL listeners.
    pub tls: TlsFiles,
    /// Java client `.properties` files for Kafka's CLI tools (`--command-config`),
    /// keyed `plaintext`, `sasl_plain`, `sasl_scram_sha_256`,
    /// `sasl_scram_sha_512`, `ssl`, `mtls`.
    pub client_configs: BTreeMap<String, PathBuf>,
    /// The broker's `server.properties`.
    pub config_file: PathBuf,
    /// Only on the ACL-enforcing `secure` cluster: its SCRAM-SHA-512 users
    /// (absent from older cluster files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl_users: Option<AclUsers>,
    /// Directory of the broker's logs.
    pub log_dir: PathBuf,
    /// The broker log: look here when a test fails oddly.
    pub log_file: PathBuf,
    /// The broker's `log.dirs`.
    pub data_dir: PathBuf,
    /// The SASL OAUTHBEARER listener and what tokens it accepts (absent from
    /// older cluster files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthListener>,
}

/// The `OAUTH` listener of a test cluster: SASL_PLAINTEXT with OAUTHBEARER
/// (JWTs validated by Kafka's `OAuthBearerValidatorCallbackHandler` against
/// a JWKS file) and SCRAM-SHA-512 (the cluster's [`SaslUsers::scram_sha_512`]),
/// with a short `connections.max.reauth.ms` so tests see re-authentication.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OAuthListener {
    /// Bootstrap address (`127.0.0.1:port`).
    pub bootstrap: String,
    /// The JWKS file the broker validates signatures with (`file://` URL
    /// in the broker config).
    pub jwks: PathBuf,
    /// The RSA private key (PKCS#8 PEM) whose public half is in the JWKS:
    /// tests sign their RS256 tokens with it.
    pub signing_key_pem: PathBuf,
    /// The `kid` of that key in the JWKS; put it in the token header.
    pub key_id: String,
    /// The `iss` claim the broker expects.
    pub issuer: String,
    /// The `aud` claim the broker expects.
    pub audience: String,
    /// The listener's `connections.max.reauth.ms`.
    pub reauth_ms: u64,
}

/// The ways a client can connect to a test cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Listener {
    /// No TLS, no authentication.
    Plaintext,
    /// SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) over plain TCP.
    SaslPlaintext,
    /// TLS; the broker presents a certificate signed by [`TlsFiles::ca_pem`].
    Ssl,
    /// TLS with a required client certificate ([`TlsFiles::client_cert_pem`]).
    Mtls,
    /// SASL (the same mechanisms and users as [`Listener::SaslPlaintext`])
    /// over TLS, with the [`Listener::Ssl`] listener's server certificate.
    SaslSsl,
}

impl Listener {
    /// Every listener, in a fixed order.
    pub const ALL: [Listener; 5] = [
        Listener::Plaintext,
        Listener::SaslPlaintext,
        Listener::Ssl,
        Listener::Mtls,
        Listener::SaslSsl,
    ];

    /// The key used for this listener in `clusters.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Listener::Plaintext => "plaintext",
            Listener::SaslPlaintext => "sasl_plaintext",
            Listener::Ssl => "ssl",
            Listener::Mtls => "mtls",
            Listener::SaslSsl => "sasl_ssl",
        }
    }
}

impl fmt::Display for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Bootstrap addresses of one cluster, one per listener.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Listeners {
    /// PLAINTEXT listener.
    pub plaintext: String,
    /// SASL_PLAINTEXT listener.
    pub sasl_plaintext: String,
    /// SSL listener (server authentication only).
    pub ssl: String,
    /// SSL listener that requires a client certificate.
    pub mtls: String,
    /// SASL_SSL listener (SASL over TLS).
    pub sasl_ssl: String,
}

impl Listeners {
    /// Every listener's name (as in the file) and address.
    pub fn all(&self) -> [(&'static str, &str); 5] {
        Listener::ALL.map(|listener| (listener.as_str(), self.get(listener)))
    }

    /// The address of `listener`.
    pub fn get(&self, listener: Listener) -> &str {
        match listener {
            Listener::Plaintext => &self.plaintext,
            Listener::SaslPlaintext => &self.sasl_plaintext,
            Listener::Ssl => &self.ssl,
            Listener::Mtls => &self.mtls,
            Listener::SaslSsl => &self.sasl_ssl,
        }
    }
}

/// One test user per SASL mechanism.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SaslUsers {
    /// SASL/PLAIN.
    pub plain: Credentials,
    /// SCRAM-SHA-256.
    pub scram_sha_256: Credentials,
    /// SCRAM-SHA-512.
    pub scram_sha_512: Credentials,
}

/// The SCRAM-SHA-512 users of the ACL-enforcing `secure` cluster. Its
/// `client_configs` also has `sasl_admin`, a CLI config logging in as `admin`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AclUsers {
    /// Super user.
    pub admin: Credentials,
    /// A user with no ACLs until a test grants some.
    pub mm2_source: Credentials,
    /// Another user with no ACLs until a test grants some.
    pub mm2_target: Credentials,
}

/// A user name and password.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Credentials {
    /// User name.
    pub user: String,
    /// Password; redacted in `Debug` output.
    pub password: Password,
}

/// A password that never shows up in `Debug` output or panic messages.
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Password(String);

impl Password {
    /// Wraps `password`.
    pub fn new(password: impl Into<String>) -> Self {
        Password(password.into())
    }

    /// The password itself, for handing to a client.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

/// TLS material a client needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TlsFiles {
    /// The test CA: trust anchor for the broker certificate.
    pub ca_pem: PathBuf,
    /// Client certificate for the mTLS listener, signed by the same CA.
    pub client_cert_pem: PathBuf,
    /// Client private key (unencrypted PKCS#8 PEM).
    pub client_key_pem: PathBuf,
    /// An X.509 v1 certificate (no extensions) of the same client key,
    /// signed by the same CA, as Kafka's security documentation makes them.
    pub client_v1_cert_pem: PathBuf,
}

/// Why the cluster file could not be read.
#[derive(Debug)]
pub enum ClustersFileError {
    /// The file is missing or unreadable.
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid cluster JSON.
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong, and where.
        source: serde_json::Error,
    },
    /// A cluster the tests need is not in the file.
    MissingCluster {
        /// The file.
        path: PathBuf,
        /// The missing cluster's name.
        name: &'static str,
    },
}

impl fmt::Display for ClustersFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Read { path, source } => {
                write!(f, "cannot read cluster file {}: {source}", path.display())
            }
            Self::Parse { path, source } => {
                write!(f, "cluster file {} is malformed: {source}", path.display())
            }
            Self::MissingCluster { path, name } => {
                write!(f, "cluster file {} has no `{name}` cluster", path.display())
            }
        }
    }
}

impl std::error::Error for ClustersFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Read { source, .. } => Some(source),
            Self::Parse { source, .. } => Some(source),
            Self::MissingCluster { .. } => None,
        }
    }
}

impl Clusters {
    /// Where the cluster file is: `$MM2_CLUSTERS_FILE`, else
    /// `<workspace>/target/kafka/clusters.json`.
    pub fn default_path() -> PathBuf {
        match std::env::var_os(CLUSTERS_FILE_ENV).filter(|p| !p.is_empty()) {
            Some(path) => PathBuf::from(path),
            None => Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
                .join("kafka")
                .join("clusters.json"),
        }
    }

    /// Reads and checks a cluster file.
    pub fn from_file(path: &Path) -> Result<Self, ClustersFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ClustersFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let clusters: Clusters =
            serde_json::from_str(&text).map_err(|source| ClustersFileError::Parse {
                path: path.to_path_buf(),
                source,
            })?;
        for name in ["source", "target"] {
            if !clusters.clusters.contains_key(name) {
                return Err(ClustersFileError::MissingCluster {
                    path: path.to_path_buf(),
                    name,
                });
            }
        }
        Ok(clusters)
    }

    /// Loads the cluster file from [`Clusters::default_path`].
    ///
    /// # Panics
    ///
    /// If there is no usable cluster file: end-to-end tests must fail, not
    /// skip, when Kafka is not running.
    pub fn load() -> Self {
        let path = Self::default_path();
        match Self::from_file(&path) {
            Ok(clusters) => clusters,
            Err(e) => panic!(
                "\n\n*** no Kafka test clusters: run `cargo xtask kafka up` or `cargo xtask test` ***\n({e})\n\n"
            ),
        }
    }

    /// The cluster MM2 replicates from.
    pub fn source(&self) -> &Cluster {
        self.named("source")
    }

    /// The cluster MM2 replicates to.
    pub fn target(&self) -> &Cluster {
        self.named("target")
    }

    /// The older-Kafka cluster.
    ///
    /// # Panics
    ///
    /// If the cluster file has none (written by an older xtask): restart the
    /// clusters with `cargo xtask kafka down && cargo xtask kafka up`.
    pub fn legacy(&self) -> &LegacyCluster {
        match &self.legacy {
            Some(legacy) => legacy,
            None => panic!(
                "cluster file has no `legacy` cluster: run `cargo xtask kafka down && cargo xtask kafka up`"
            ),
        }
    }

    /// The cluster that enforces ACLs (`StandardAuthorizer`, deny by default).
    ///
    /// # Panics
    ///
    /// If the cluster file predates it: restart the clusters with
    /// `cargo xtask kafka down && cargo xtask kafka up`.
    pub fn secure(&self) -> &Cluster {
        match self.clusters.get("secure") {
            Some(cluster) if cluster.acl_users.is_some() => cluster,
            _ => panic!(
                "cluster file has no ACL-enforcing `secure` cluster: run `cargo xtask kafka down && cargo xtask kafka up`"
            ),
        }
    }

    /// Every cluster of the current Kafka version (`source`, `target` and the
    /// ACL-enforcing `secure`; not [`Clusters::legacy`]), by name.
    pub fn all(&self) -> impl Iterator<Item = &Cluster> {
        self.clusters.values()
    }

    /// Path of a Kafka CLI launcher, e.g. `tool("kafka-consumer-groups")`.
    pub fn tool(&self, name: &str) -> PathBuf {
        self.kafka_bin.join(name)
    }

    fn named(&self, name: &str) -> &Cluster {
        // `from_file` guarantees both clusters exist.
        match self.clusters.get(name) {
            Some(cluster) => cluster,
            None => panic!("cluster file has no `{name}` cluster"),
        }
    }
}

/// The clusters of this test run, loaded once per test binary.
///
/// # Panics
///
/// As [`Clusters::load`], if no clusters are running.
pub fn clusters() -> &'static Clusters {
    static CLUSTERS: OnceLock<Clusters> = OnceLock::new();
    CLUSTERS.get_or_init(Clusters::load)
}

/// The workspace's `target/` directory, where tests keep their scratch files
/// (`target/mm2/`, `target/java-helpers/`).
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
}

/// Milliseconds since the Unix epoch, for record timestamps.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// A name no other test (in this process or a concurrent one) uses:
/// `<prefix>-<pid>-<millis>-<counter>`. Use it for topics and groups on the
/// shared clusters.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("{prefix}-{}-{millis}-{n}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_differ_within_a_process() {
        assert_ne!(unique_name("t"), unique_name("t"));
    }

    #[test]
    fn unique_name_starts_with_the_prefix() {
        assert!(unique_name("offset-syncs").starts_with("offset-syncs-"));
    }

    #[test]
    fn a_missing_cluster_file_is_an_error_naming_the_path() {
        let path = Path::new("/nonexistent/mm2/clusters.json");
        let err = Clusters::from_file(path).expect_err("file does not exist");
        assert!(matches!(err, ClustersFileError::Read { .. }));
        assert!(err.to_string().contains("/nonexistent/mm2/clusters.json"));
    }

    #[test]
    fn password_debug_output_is_redacted() {
        let creds = Credentials {
            user: "alice".into(),
            password: Password("hunter2".into()),
        };
        let shown = format!("{creds:?}");
        assert!(shown.contains("alice"));
        assert!(!shown.contains("hunter2"));
    }
}
