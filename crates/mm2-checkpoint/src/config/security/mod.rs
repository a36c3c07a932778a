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

mod sasl;
mod stores;
mod tls;

use std::collections::BTreeMap;
use std::fmt;

use super::Setting;
use super::error::ConfigError;
use super::providers::Environment;

use sasl::build_sasl;
pub use sasl::{SaslCredentials, SaslMechanism};
pub use stores::{certificates_pem, private_key_pem};
use tls::build_tls;
pub use tls::{
    ClientIdentity, EXPIRY_WARNING, KeyOrigin, PemSource, TlsMaterial, TlsSettings, TrustRoots,
};

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

pub(super) struct Keys<'a> {
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
        // Check the material now, so `validate` and start-up report it before
        // any network I/O; the material itself is loaded again when connecting.
        let material = tls.load(env)?;
        warnings.extend(tls.warnings(alias, &material, std::time::SystemTime::now()));
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
