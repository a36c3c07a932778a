//! TLS settings of a cluster connection: trust roots and client identity from
//! PEM files or inline PEM, read and parsed while the configuration is validated.

use std::path::PathBuf;

use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::Keys;
use crate::config::error::ConfigError;
use crate::config::providers::Environment;
use crate::config::secret::Secret;

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

pub(super) fn build_tls(
    keys: &Keys<'_>,
    warnings: &mut Vec<String>,
) -> Result<TlsSettings, ConfigError> {
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
