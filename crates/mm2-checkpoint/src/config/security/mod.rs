//! Client connection settings for one cluster: brokers, TLS and SASL.
//!
//! MM2 hands each Kafka client a map of `bootstrap.servers`, `security.protocol`,
//! `ssl.*` and `sasl.*` keys (how that map is layered is in the parent module).
//! This module turns that map into a typed [`ClusterConnection`], supporting what
//! a small pure-Rust client can do and refusing, by key name, what it cannot:
//!
//! * TLS stores are PEM (files or inline, KIP-651), PKCS12, JKS or JCEKS;
//!   encrypted PKCS#8 keys (PBES2, or PKCS#12's PBES1 schemes) are opened
//!   with `ssl.key.password`.
//! * SASL mechanisms PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 with credentials in
//!   `sasl.jaas.config`, and OAUTHBEARER with Kafka's OIDC login callback handler
//!   (token endpoint or `file://` token). GSSAPI (Kafka's default mechanism!) is
//!   refused.
//! * Pluggable classes (`ssl.engine.factory.class`, SASL callback handlers,
//!   `security.providers`) are refused, because ignoring them would change
//!   behaviour silently.
//!
//! PEM files are read and parsed while the configuration is validated, so a wrong
//! path or a corrupt certificate shows up in `mm2-checkpoint validate`, not at the
//! first connection.

mod cluster;
mod jks;
mod oauth;
mod pbe;
mod pkcs12;
mod sasl;
mod stores;
mod tls;

use std::fmt;

use super::check::{Checker, ConfigWarning, NotChecked, Unknown};
use super::error::ConfigError;
use super::providers::Environment;

pub(crate) use cluster::ConnectionSettings;
use cluster::Keys;

pub use oauth::{OAuthSettings, TokenEndpoint};
#[cfg(test)]
pub use sasl::NOT_READ as SASL_NOT_READ;
use sasl::build_sasl;
pub use sasl::{AwsIamLogin, SaslCredentials, SaslMechanism};
pub use stores::{KeyOrigin, certificates_pem, private_key_pem};
use tls::build_tls;
pub use tls::{ClientIdentity, EXPIRY_WARNING, PemSource, TlsMaterial, TlsSettings, TrustRoots};

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

/// The keys that name key or trust material.
const MATERIAL_KEYS: [&str; 5] = [
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.keystore.location",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
];

/// Builds and validates the connection of cluster `alias`, recording every
/// problem in `checker`: the bootstrap list, the protocol, the TLS settings
/// and material (PEM files and stores are read unless `--no-secrets`) and the
/// SASL settings are checked independently of each other; TLS and SASL are
/// skipped (and said so) when the protocol itself has an error.
pub(crate) fn build_connection(
    alias: &str,
    settings: &ConnectionSettings,
    env: &dyn Environment,
    checker: &Checker,
) -> Result<ClusterConnection, Unknown> {
    let keys = Keys {
        alias,
        settings,
        checker,
    };
    let bootstrap_servers = match keys.get("bootstrap.servers") {
        None => Err(keys.fail(ConfigError::for_key(
            keys.missing("bootstrap.servers"),
            format!("is required: cluster `{alias}` is used by an enabled flow"),
        ))),
        Some(s) => {
            let value = s.text();
            value.and_then(|v| parse_bootstrap_servers(v).map_err(|m| keys.fail(s.error(m))))
        }
    };

    // An empty value is an error here (as in Kafka), not a fallback to PLAINTEXT.
    let security_protocol = match keys.raw("security.protocol") {
        None => Ok(SecurityProtocol::Plaintext),
        Some(s) => s
            .text()
            .and_then(|v| match v.trim().to_ascii_uppercase().as_str() {
                "PLAINTEXT" => Ok(SecurityProtocol::Plaintext),
                "SSL" => Ok(SecurityProtocol::Ssl),
                "SASL_PLAINTEXT" => Ok(SecurityProtocol::SaslPlaintext),
                "SASL_SSL" => Ok(SecurityProtocol::SaslSsl),
                _ => Err(keys.fail(s.error(format!(
                    "`{}` is not a security protocol; use PLAINTEXT, SSL, SASL_PLAINTEXT or \
                     SASL_SSL",
                    v.trim()
                )))),
            }),
    };

    let providers = match keys.get("security.providers") {
        Some(s) => Err(keys.fail(s.error(
            "custom security providers are not supported by mm2-checkpoint; remove the key",
        ))),
        None => Ok(()),
    };

    let Ok(security_protocol) = security_protocol else {
        if settings
            .keys()
            .any(|k| k.starts_with("ssl.") || k.starts_with("sasl."))
        {
            checker.not_checked(NotChecked::new(
                None,
                None,
                format!(
                    "the ssl.* and sasl.* settings of cluster `{alias}`: whether they apply \
                     depends on its security.protocol, which has an error or was not read"
                ),
            ));
        }
        return Err(Unknown);
    };

    let tls = if security_protocol.uses_tls() {
        let tls = build_tls(&keys);
        match &tls {
            Ok(tls) => check_material(&keys, tls, env),
            Err(Unknown) => {
                for s in MATERIAL_KEYS.iter().filter_map(|k| keys.get(k)) {
                    checker.not_checked(NotChecked::new(
                        Some(s.origin.clone()),
                        s.line,
                        format!(
                            "the material it names: the TLS settings of cluster `{alias}` have \
                             an error or were not read"
                        ),
                    ));
                }
            }
        }
        Some(tls)
    } else {
        if let Some((_, s)) = settings.iter().find(|(k, _)| k.starts_with("ssl.")) {
            checker.warn(ConfigWarning::new(
                Some(s.origin.clone()),
                s.line,
                format!(
                    "cluster `{alias}`: ssl.* settings are ignored because security.protocol is {}",
                    security_protocol.name()
                ),
            ));
        }
        None
    };

    let sasl = if security_protocol.uses_sasl() {
        Some(build_sasl(&keys))
    } else {
        if let Some((_, s)) = settings.iter().find(|(k, _)| k.starts_with("sasl.")) {
            checker.warn(ConfigWarning::new(
                Some(s.origin.clone()),
                s.line,
                format!(
                    "cluster `{alias}`: sasl.* settings are ignored because security.protocol \
                     is {}",
                    security_protocol.name()
                ),
            ));
        }
        None
    };
    if security_protocol == SecurityProtocol::SaslPlaintext
        && let Some(Ok(sasl)) = &sasl
        && sasl.mechanism == SaslMechanism::Plain
    {
        let mechanism = keys.raw("sasl.mechanism");
        checker.warn(ConfigWarning::new(
            mechanism.map(|s| s.origin.clone()),
            mechanism.and_then(|s| s.line),
            format!(
                "cluster `{alias}`: SASL PLAIN over SASL_PLAINTEXT sends the password unencrypted"
            ),
        ));
    }

    providers?;
    Ok(ClusterConnection {
        alias: alias.to_string(),
        bootstrap_servers: bootstrap_servers?,
        security_protocol,
        tls: tls.transpose()?,
        sasl: sasl.transpose()?,
    })
}

/// Checks the TLS material of `tls` now, so that `validate` and start-up
/// report it before any network I/O (the driver loads it again when
/// connecting): the trust roots and the client identity independently, then
/// the validity warnings. Without the secrets (`--no-secrets`) only material
/// written inline in the file is checked; every file and store is listed as
/// not checked. Material whose settings have errors is not checked either.
fn check_material(keys: &Keys<'_>, tls: &TlsSettings, env: &dyn Environment) {
    let checker = keys.checker;
    let note = |origin: &KeyOrigin, why: String| {
        checker.not_checked(NotChecked::new(Some(origin.key.clone()), origin.line, why));
    };
    let sources = tls.material_sources();
    let all_known = keys.all_known("ssl.");
    let (check_trust, check_identity) = if checker.reads_secrets() {
        if !all_known {
            for (origin, _) in &sources {
                note(
                    origin,
                    format!(
                        "the material it names: an ssl.* setting of cluster `{}` has an error",
                        keys.alias
                    ),
                );
            }
            return;
        }
        (true, true)
    } else {
        for (origin, source) in &sources {
            if !matches!(source, PemSource::Inline(_)) {
                note(
                    origin,
                    format!("{} is not opened with --no-secrets", source.describe()),
                );
            } else if !all_known {
                note(
                    origin,
                    format!(
                        "its inline PEM: an ssl.* setting of cluster `{}` comes from a config \
                         provider, which --no-secrets does not read",
                        keys.alias
                    ),
                );
            }
        }
        if !all_known {
            return;
        }
        (tls.trust_is_inline(), tls.identity_is_inline())
    };
    let trust = check_trust.then(|| tls.load_trust(env).map_err(|e| checker.error(e)));
    let identity = check_identity.then(|| tls.load_identity(env).map_err(|e| checker.error(e)));
    if let (Some(Ok(roots)), Some(Ok(identity))) = (trust, identity) {
        let material = TlsMaterial::new(roots, identity);
        for warning in tls.warnings(keys.alias, &material, std::time::SystemTime::now()) {
            checker.warn(warning);
        }
    }
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
