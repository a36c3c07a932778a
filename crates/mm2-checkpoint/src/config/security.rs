//! Client connection settings for one cluster: brokers, TLS and SASL.
//!
//! MM2 hands each Kafka client a map of `bootstrap.servers`, `security.protocol`,
//! `ssl.*` and `sasl.*` keys (how that map is layered is in the parent module).
//! This module turns that map into a typed [`ClusterConnection`], supporting what
//! a small pure-Rust client can do and refusing, by key name, what it cannot:
//!
//! * TLS stores must be PEM (files or inline). JKS and PKCS12 are refused with a
//!   conversion hint; encrypted private keys are refused.
//! * SASL mechanisms PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 with credentials in
//!   `sasl.jaas.config`. GSSAPI (Kafka's default mechanism!) and OAUTHBEARER are
//!   refused.
//! * Pluggable classes (`ssl.engine.factory.class`, SASL callback handlers,
//!   `security.providers`) are refused, because ignoring them would change
//!   behaviour silently.
//!
//! PEM files are read and parsed while the configuration is validated, so a wrong
//! path or a corrupt certificate shows up in `mm2-checkpoint validate`, not at the
//! first connection.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::Setting;
use super::error::ConfigError;
use super::jaas;
use super::providers::Environment;
use super::secret::Secret;

const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// Whether `key` (without any alias or client prefix) is a client-connection key:
/// one that MM2 copies into every client of a cluster.
pub(crate) fn is_connection_key(key: &str) -> bool {
    key == "bootstrap.servers"
        || key == "security.protocol"
        || key == "security.providers"
        || key.starts_with("ssl.")
        || key.starts_with("sasl.")
}

/// One broker address from `bootstrap.servers`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerAddress {
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl fmt::Display for BrokerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Kafka's `security.protocol`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecurityProtocol {
    /// No TLS, no SASL (Kafka's default).
    Plaintext,
    /// TLS without SASL.
    Ssl,
    /// SASL over a plain TCP connection.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// The name as written in Kafka configs (`SASL_SSL`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }

    /// Whether connections use TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    /// Whether connections authenticate with SASL.
    pub fn uses_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }
}

/// A supported SASL mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaslMechanism {
    /// `PLAIN` (only sensible over TLS).
    Plain,
    /// `SCRAM-SHA-256`.
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
}

impl SaslMechanism {
    /// The mechanism name as Kafka spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

/// SASL mechanism and credentials, from `sasl.mechanism` and `sasl.jaas.config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaslCredentials {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// The `username` option of the JAAS entry.
    pub username: String,
    /// The `password` option of the JAAS entry.
    pub password: Secret,
}

/// Where PEM text comes from: a file, or the config value itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PemSource {
    /// A PEM file on the local file system.
    File(PathBuf),
    /// PEM text given inline in the config (redacted in `Debug`: it may be a key).
    Inline(Secret),
}

impl PemSource {
    fn read(&self, env: &dyn Environment, key: &str) -> Result<Vec<u8>, ConfigError> {
        match self {
            Self::File(path) => env.read_file(path).map_err(|e| {
                ConfigError::for_key(key, format!("cannot read `{}`: {e}", path.display()))
            }),
            Self::Inline(text) => Ok(text.expose().as_bytes().to_vec()),
        }
    }

    /// Reads the PEM text and puts each section into canonical line layout.
    fn read_normalized(&self, env: &dyn Environment, key: &str) -> Result<Vec<u8>, ConfigError> {
        let bytes = self.read(env, key)?;
        Ok(normalize_pem(&String::from_utf8_lossy(&bytes)).into_bytes())
    }

    fn describe(&self) -> String {
        match self {
            Self::File(path) => format!("PEM file {}", path.display()),
            Self::Inline(_) => "inline PEM".to_string(),
        }
    }
}

/// Which certificates the client trusts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustRoots {
    /// No trust store configured. The JVM would use its default `cacerts`; the
    /// driver uses its default root certificates.
    Default,
    /// CA certificates in PEM (`ssl.truststore.type=PEM`).
    Pem {
        /// The certificates.
        source: PemSource,
        /// The config key they came from, for error messages.
        key: String,
    },
}

/// The client's own certificate chain and private key (mutual TLS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate chain, leaf first.
    pub certificate_chain: PemSource,
    /// The unencrypted private key.
    pub private_key: PemSource,
    /// The config key they came from, for error messages.
    pub key: String,
}

/// TLS settings for one cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// Trusted CA certificates.
    pub trust: TrustRoots,
    /// Client certificate and key, if the brokers require client authentication.
    pub identity: Option<ClientIdentity>,
    /// `false` when `ssl.endpoint.identification.algorithm` is empty: broker
    /// certificates are then not checked against the host name. The driver must
    /// log this loudly.
    pub verify_hostname: bool,
}

/// Certificates and key loaded from [`TlsSettings`], ready for a TLS library.
#[derive(Debug)]
pub struct TlsMaterial {
    /// CA certificates to trust; empty for [`TrustRoots::Default`].
    pub roots: Vec<CertificateDer<'static>>,
    /// Client certificate chain and private key, if configured.
    pub identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
}

impl TlsSettings {
    /// Reads and parses the PEM files and inline PEM text.
    ///
    /// Errors name the config key; they never contain key material.
    pub fn load(&self, env: &dyn Environment) -> Result<TlsMaterial, ConfigError> {
        let roots = match &self.trust {
            TrustRoots::Default => Vec::new(),
            TrustRoots::Pem { source, key } => {
                let bytes = source.read_normalized(env, key)?;
                certificates(&bytes, key, source)?
            }
        };
        let identity = match &self.identity {
            None => None,
            Some(id) => {
                let chain_bytes = id.certificate_chain.read_normalized(env, &id.key)?;
                let chain = certificates(&chain_bytes, &id.key, &id.certificate_chain)?;
                let key_bytes = id.private_key.read(env, &id.key)?;
                if contains(&key_bytes, b"ENCRYPTED PRIVATE KEY")
                    || contains(&key_bytes, b"Proc-Type: 4,ENCRYPTED")
                {
                    return Err(ConfigError::for_key(
                        id.key.as_str(),
                        "the private key is encrypted, which mm2-checkpoint does not support; \
                         decrypt it (`openssl pkcs8 -topk8 -nocrypt`) and protect the file instead",
                    ));
                }
                let key_bytes = normalize_pem(&String::from_utf8_lossy(&key_bytes)).into_bytes();
                let key = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| {
                    ConfigError::for_key(
                        id.key.as_str(),
                        format!(
                            "no usable private key in {}: {}",
                            id.private_key.describe(),
                            pem_problem(&e, "PRIVATE KEY")
                        ),
                    )
                })?;
                Some((chain, key))
            }
        };
        Ok(TlsMaterial { roots, identity })
    }
}

/// Rewrites every `-----BEGIN X----- … -----END X-----` section with the markers
/// on their own lines and the base64 body without whitespace.
///
/// Kafka's PEM reader finds sections with a regular expression and ignores line
/// breaks, so inline values written on one line (or joined by `\` continuation
/// lines, which drop the newlines) work there; this makes them work here too.
/// Text outside sections is dropped. Without any complete section the text is
/// returned unchanged, so the parser reports what is missing.
fn normalize_pem(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(begin) = rest.find("-----BEGIN ") {
        let after_begin = &rest[begin + "-----BEGIN ".len()..];
        let Some(label_len) = after_begin.find("-----") else {
            break;
        };
        let label = &after_begin[..label_len];
        let body_and_rest = &after_begin[label_len + "-----".len()..];
        let end_marker = format!("-----END {label}-----");
        let Some(body_len) = body_and_rest.find(&end_marker) else {
            break;
        };
        let body: String = body_and_rest[..body_len]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        out.push_str(&format!("-----BEGIN {label}-----\n{body}\n{end_marker}\n"));
        rest = &body_and_rest[body_len + end_marker.len()..];
    }
    if out.is_empty() {
        text.to_string()
    } else {
        out
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn certificates(
    bytes: &[u8],
    key: &str,
    source: &PemSource,
) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            ConfigError::for_key(
                key,
                format!(
                    "invalid PEM in {}: {}",
                    source.describe(),
                    pem_problem(&e, "CERTIFICATE")
                ),
            )
        })?;
    if certs.is_empty() {
        return Err(ConfigError::for_key(
            key,
            format!("no `BEGIN CERTIFICATE` section in {}", source.describe()),
        ));
    }
    Ok(certs)
}

/// Describes a PEM error without quoting file content.
fn pem_problem(e: &pem::Error, wanted: &str) -> String {
    match e {
        pem::Error::MissingSectionEnd { .. } => "a section has no END line".into(),
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed".into(),
        pem::Error::Base64Decode(_) => "a section is not valid base64".into(),
        pem::Error::NoItemsFound => format!("no `BEGIN {wanted}` section found"),
        pem::Error::SectionTooLarge => "a section is larger than 256 MB".into(),
        other => format!("{other}"),
    }
}

/// Connection settings of one cluster, as used by all clients of one flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConnection {
    /// The cluster alias from `clusters`.
    pub alias: String,
    /// `bootstrap.servers`, in order.
    pub bootstrap_servers: Vec<BrokerAddress>,
    /// `security.protocol`.
    pub security_protocol: SecurityProtocol,
    /// Present iff the protocol uses TLS.
    pub tls: Option<TlsSettings>,
    /// Present iff the protocol uses SASL.
    pub sasl: Option<SaslCredentials>,
}

/// The merged client-connection keys of one cluster (un-prefixed key → setting).
pub(crate) type ConnectionSettings = BTreeMap<String, Setting>;

struct Keys<'a> {
    alias: &'a str,
    settings: &'a ConnectionSettings,
}

impl Keys<'_> {
    /// The setting, treating an all-whitespace value as absent.
    fn get(&self, key: &str) -> Option<&Setting> {
        self.settings
            .get(key)
            .filter(|s| !s.value.trim().is_empty())
    }

    fn raw(&self, key: &str) -> Option<&Setting> {
        self.settings.get(key)
    }

    /// The key to name when a setting is missing.
    fn missing(&self, key: &str) -> String {
        format!("{}.{key}", self.alias)
    }

    fn error(&self, key: &str, message: impl Into<String>) -> ConfigError {
        match self.raw(key) {
            Some(s) => s.error(message),
            None => ConfigError::for_key(self.missing(key), message),
        }
    }
}

/// Builds and validates the connection of cluster `alias` (PEM files are read).
pub(crate) fn build_connection(
    alias: &str,
    settings: &ConnectionSettings,
    env: &dyn Environment,
    warnings: &mut Vec<String>,
) -> Result<ClusterConnection, ConfigError> {
    let keys = Keys { alias, settings };
    let bootstrap = keys.get("bootstrap.servers").ok_or_else(|| {
        ConfigError::for_key(
            keys.missing("bootstrap.servers"),
            format!("is required: cluster `{alias}` is used by an enabled flow"),
        )
    })?;
    let bootstrap_servers =
        parse_bootstrap_servers(&bootstrap.value).map_err(|m| bootstrap.error(m))?;

    // An empty value is an error here (as in Kafka), not a fallback to PLAINTEXT.
    let security_protocol = match keys.raw("security.protocol") {
        None => SecurityProtocol::Plaintext,
        Some(s) => match s.value.trim().to_ascii_uppercase().as_str() {
            "PLAINTEXT" => SecurityProtocol::Plaintext,
            "SSL" => SecurityProtocol::Ssl,
            "SASL_PLAINTEXT" => SecurityProtocol::SaslPlaintext,
            "SASL_SSL" => SecurityProtocol::SaslSsl,
            _ => {
                return Err(s.error(format!(
                    "`{}` is not a security protocol; use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
                    s.value.trim()
                )));
            }
        },
    };

    if let Some(s) = keys.get("security.providers") {
        return Err(s.error(
            "custom security providers are not supported by mm2-checkpoint; remove the key",
        ));
    }

    let tls = if security_protocol.uses_tls() {
        Some(build_tls(&keys, warnings)?)
    } else {
        if settings.keys().any(|k| k.starts_with("ssl.")) {
            warnings.push(format!(
                "cluster `{alias}`: ssl.* settings are ignored because security.protocol is {}",
                security_protocol.name()
            ));
        }
        None
    };
    if let Some(tls) = &tls {
        // Validate files now, so `validate` reports them; the result is dropped.
        tls.load(env)?;
    }

    let sasl = if security_protocol.uses_sasl() {
        Some(build_sasl(&keys)?)
    } else {
        if settings.keys().any(|k| k.starts_with("sasl.")) {
            warnings.push(format!(
                "cluster `{alias}`: sasl.* settings are ignored because security.protocol is {}",
                security_protocol.name()
            ));
        }
        None
    };
    if security_protocol == SecurityProtocol::SaslPlaintext
        && sasl
            .as_ref()
            .is_some_and(|s| s.mechanism == SaslMechanism::Plain)
    {
        warnings.push(format!(
            "cluster `{alias}`: SASL PLAIN over SASL_PLAINTEXT sends the password unencrypted"
        ));
    }

    Ok(ClusterConnection {
        alias: alias.to_string(),
        bootstrap_servers,
        security_protocol,
        tls,
        sasl,
    })
}

/// Parses `bootstrap.servers` like Kafka's `ClientUtils`: comma list of
/// `host:port` or `[ipv6]:port`, an optional `scheme://` prefix, empty entries skipped.
pub(crate) fn parse_bootstrap_servers(value: &str) -> Result<Vec<BrokerAddress>, String> {
    let mut out = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let invalid = || format!("`{entry}` is not a valid host:port address");
        let address = entry.split_once("://").map_or(entry, |(_, rest)| rest);
        let (host, port) = if let Some(bracketed) = address.strip_prefix('[') {
            let (host, rest) = bracketed.split_once(']').ok_or_else(invalid)?;
            (host, rest.strip_prefix(':').ok_or_else(invalid)?)
        } else {
            address.rsplit_once(':').ok_or_else(invalid)?
        };
        let host_ok = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '%' | '.' | '_' | ':'));
        let port = port.parse::<u16>().ok().filter(|&p| p != 0);
        match (host_ok, port) {
            (true, Some(port)) => out.push(BrokerAddress {
                host: host.to_string(),
                port,
            }),
            _ => return Err(invalid()),
        }
    }
    if out.is_empty() {
        return Err("lists no broker addresses".into());
    }
    Ok(out)
}

/// Fails unless the store type key `type_key` is `PEM` (Kafka's default is
/// JKS, so an absent key fails too), telling how to convert the store.
fn require_pem(
    keys: &Keys<'_>,
    type_key: &str,
    what: &str,
    how_to_convert: &str,
) -> Result<(), ConfigError> {
    let store_type = keys.get(type_key).map(|s| s.value.trim());
    if store_type.is_some_and(|t| t.eq_ignore_ascii_case("PEM")) {
        return Ok(());
    }
    let t = store_type.unwrap_or("JKS");
    let shown = if store_type.is_none() {
        " (Kafka's default)"
    } else {
        ""
    };
    Err(keys.error(
        type_key,
        format!("{what} type {t}{shown} is not supported; {how_to_convert}"),
    ))
}

fn build_tls(keys: &Keys<'_>, warnings: &mut Vec<String>) -> Result<TlsSettings, ConfigError> {
    if let Some(s) = keys.get("ssl.engine.factory.class") {
        return Err(s.error(
            "custom SSL engine factories are not supported by mm2-checkpoint; configure PEM \
             trust and key stores instead",
        ));
    }

    let trust = {
        let location = keys.get("ssl.truststore.location");
        let inline = keys.get("ssl.truststore.certificates");
        if location.is_none() && inline.is_none() {
            TrustRoots::Default
        } else {
            require_pem(
                keys,
                "ssl.truststore.type",
                "trust store",
                "convert the trust store to PEM (e.g. `keytool -exportcert -rfc -alias <ca> \
                 -keystore <store> > ca.pem`, or `openssl pkcs12 -in <store.p12> -nokeys -out \
                 ca.pem`) and set ssl.truststore.type=PEM with ssl.truststore.location=ca.pem",
            )?;
            if let Some(s) = keys.get("ssl.truststore.password") {
                return Err(s.error(
                    "a trust store password cannot be used with PEM trust stores; remove it",
                ));
            }
            match (location, inline) {
                (Some(loc), None) => TrustRoots::Pem {
                    source: PemSource::File(PathBuf::from(loc.value.trim())),
                    key: loc.origin.clone(),
                },
                (None, Some(certs)) => TrustRoots::Pem {
                    source: PemSource::Inline(Secret::new(certs.value.clone())),
                    key: certs.origin.clone(),
                },
                (Some(_), Some(certs)) => {
                    return Err(certs.error(
                        "set either ssl.truststore.location or ssl.truststore.certificates, not both",
                    ));
                }
                (None, None) => TrustRoots::Default,
            }
        }
    };

    let identity = {
        let location = keys.get("ssl.keystore.location");
        let chain = keys.get("ssl.keystore.certificate.chain");
        let key = keys.get("ssl.keystore.key");
        if location.is_none() && chain.is_none() && key.is_none() {
            None
        } else {
            require_pem(
                keys,
                "ssl.keystore.type",
                "key store",
                "convert it to one PEM file holding the unencrypted private key and the \
                 certificate chain (e.g. `openssl pkcs12 -in <store.p12> -nodes -out client.pem`) \
                 and set ssl.keystore.type=PEM with ssl.keystore.location=client.pem",
            )?;
            if let Some(s) = keys.get("ssl.keystore.password") {
                return Err(s.error(
                    "a key store password cannot be used with PEM key stores (Kafka refuses it too); remove it",
                ));
            }
            if let Some(s) = keys.get("ssl.key.password") {
                return Err(s.error(
                    "encrypted private keys are not supported by mm2-checkpoint; decrypt the key \
                     (`openssl pkcs8 -topk8 -nocrypt`) and remove ssl.key.password",
                ));
            }
            match (location, chain, key) {
                (Some(loc), None, None) => {
                    let path = PathBuf::from(loc.value.trim());
                    Some(ClientIdentity {
                        certificate_chain: PemSource::File(path.clone()),
                        private_key: PemSource::File(path),
                        key: loc.origin.clone(),
                    })
                }
                (None, Some(chain), Some(key)) => Some(ClientIdentity {
                    certificate_chain: PemSource::Inline(Secret::new(chain.value.clone())),
                    private_key: PemSource::Inline(Secret::new(key.value.clone())),
                    key: key.origin.clone(),
                }),
                (Some(loc), _, _) => {
                    return Err(loc.error(
                        "set either ssl.keystore.location or ssl.keystore.certificate.chain with \
                         ssl.keystore.key, not both",
                    ));
                }
                (None, Some(_), None) => {
                    return Err(keys.error(
                        "ssl.keystore.key",
                        "is required when ssl.keystore.certificate.chain is set",
                    ));
                }
                (None, _, _) => {
                    return Err(keys.error(
                        "ssl.keystore.certificate.chain",
                        "is required when ssl.keystore.key is set",
                    ));
                }
            }
        }
    };

    let verify_hostname = match keys.raw("ssl.endpoint.identification.algorithm") {
        None => true,
        Some(s) if s.value.trim().is_empty() => {
            warnings.push(format!(
                "cluster `{}`: TLS host name verification is DISABLED ({} is empty)",
                keys.alias, s.origin
            ));
            false
        }
        Some(s) if s.value.trim().eq_ignore_ascii_case("https") => true,
        Some(s) => {
            return Err(s.error(format!(
                "`{}` is not supported; use `https` (verify host names, the default) or an empty \
                 value (do not verify)",
                s.value.trim()
            )));
        }
    };

    Ok(TlsSettings {
        trust,
        identity,
        verify_hostname,
    })
}

fn build_sasl(keys: &Keys<'_>) -> Result<SaslCredentials, ConfigError> {
    for handler in [
        "sasl.login.callback.handler.class",
        "sasl.client.callback.handler.class",
        "sasl.login.class",
    ] {
        if let Some(s) = keys.get(handler) {
            return Err(s.error(
                "custom SASL login and callback classes are not supported by mm2-checkpoint; \
                 use sasl.mechanism PLAIN or SCRAM-SHA-256/512 with username and password in \
                 sasl.jaas.config",
            ));
        }
    }
    let (mechanism, module) = match keys.get("sasl.mechanism").map(|s| s.value.trim()) {
        Some("PLAIN") => (SaslMechanism::Plain, PLAIN_LOGIN_MODULE),
        Some("SCRAM-SHA-256") => (SaslMechanism::ScramSha256, SCRAM_LOGIN_MODULE),
        Some("SCRAM-SHA-512") => (SaslMechanism::ScramSha512, SCRAM_LOGIN_MODULE),
        None => {
            return Err(ConfigError::for_key(
                keys.missing("sasl.mechanism"),
                "is not set, and Kafka's default (GSSAPI/Kerberos) is not supported by \
                 mm2-checkpoint; set it to SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN",
            ));
        }
        Some(m @ ("GSSAPI" | "OAUTHBEARER")) => {
            return Err(keys.error(
                "sasl.mechanism",
                format!(
                    "{m} is not supported by mm2-checkpoint; use SCRAM-SHA-512, SCRAM-SHA-256 or \
                     PLAIN (over SASL_SSL)"
                ),
            ));
        }
        Some(other) => {
            return Err(keys.error(
                "sasl.mechanism",
                format!("unknown mechanism `{other}`; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
            ));
        }
    };
    let jaas_setting = keys.get("sasl.jaas.config").ok_or_else(|| {
        ConfigError::for_key(
            keys.missing("sasl.jaas.config"),
            format!(
                "is required for SASL (JAAS files given with java.security.auth.login.config are \
                 not read); e.g. `{module} required username=\"...\" password=\"...\";`"
            ),
        )
    })?;
    let entry = jaas::parse(&jaas_setting.value).map_err(|m| jaas_setting.error(m))?;
    if entry.module != module {
        return Err(jaas_setting.error(format!(
            "login module `{}` does not match sasl.mechanism={}; use {module}",
            entry.module,
            mechanism.name()
        )));
    }
    if entry
        .options
        .get("tokenauth")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return Err(jaas_setting.error(
            "delegation-token authentication (tokenauth=true) is not supported by mm2-checkpoint",
        ));
    }
    let username = entry
        .options
        .get("username")
        .cloned()
        .ok_or_else(|| jaas_setting.error("has no `username` option"))?;
    let password = entry
        .options
        .get("password")
        .cloned()
        .ok_or_else(|| jaas_setting.error("has no `password` option"))?;
    Ok(SaslCredentials {
        mechanism,
        username,
        password: Secret::new(password),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_servers_parse_hosts_ports_and_ipv6() {
        let b = parse_bootstrap_servers(" a1:9092, ,[::1]:9093,SASL_SSL://b.example:9094").unwrap();
        assert_eq!(
            b,
            vec![
                BrokerAddress {
                    host: "a1".into(),
                    port: 9092
                },
                BrokerAddress {
                    host: "::1".into(),
                    port: 9093
                },
                BrokerAddress {
                    host: "b.example".into(),
                    port: 9094
                },
            ]
        );
        assert_eq!(b[1].to_string(), "[::1]:9093");
    }

    #[test]
    fn bootstrap_server_without_port_is_an_error() {
        assert!(parse_bootstrap_servers("a1").unwrap_err().contains("a1"));
    }

    #[test]
    fn bootstrap_server_with_bad_port_is_an_error() {
        assert!(parse_bootstrap_servers("a1:99999").is_err());
        assert!(parse_bootstrap_servers("a1:0").is_err());
        assert!(parse_bootstrap_servers("a1:x").is_err());
    }

    #[test]
    fn bootstrap_server_with_bad_host_is_an_error() {
        assert!(parse_bootstrap_servers(":9092").is_err());
        assert!(parse_bootstrap_servers("a b:9092").is_err());
    }

    #[test]
    fn empty_bootstrap_list_is_an_error() {
        assert!(parse_bootstrap_servers(" , ").is_err());
    }
}
