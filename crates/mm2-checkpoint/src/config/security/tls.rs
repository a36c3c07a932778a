//! TLS settings of a cluster connection: trust roots and client identity from
//! PEM files or inline PEM, read and checked while the configuration is
//! validated: every certificate must be X.509, the private key must be usable
//! and belong to the first certificate of its chain (errors), and certificates
//! outside their validity period are reported (warnings). See
//! docs/configuration.md, "Certificates and keys are checked".

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use x509_cert::Certificate;
use x509_cert::der::Decode;

use kafka_lite::Secret;
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::cluster::Keys;
use super::stores::{self, KeyOrigin, StoreKind};
use crate::config::check::{ConfigWarning, Unknown};
use crate::config::error::ConfigError;
use crate::config::providers::Environment;
use crate::config::setting::Setting;

/// Where certificates or a key come from: a PEM file, PEM text in the config
/// value itself, or a PKCS12, JKS or JCEKS store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PemSource {
    /// A PEM file on the local file system.
    File(PathBuf),
    /// PEM text given inline in the config (redacted in `Debug`: it may be a key).
    Inline(Secret),
    /// A PKCS12, JKS or JCEKS store (`ssl.*.type`) and its password; decoded into
    /// DER by [`TlsSettings::load`].
    Store {
        /// The configured type (a file of the other type is opened all the
        /// same, as the JDK does).
        kind: StoreKind,
        /// The store file.
        path: PathBuf,
        /// Its password (redacted in `Debug`); `None` for a trust store
        /// given without one, which Java reads without checking integrity.
        password: Option<Secret>,
        /// The key the password was set by (or, without a password, the
        /// key that would set it).
        password_key: KeyOrigin,
    },
}

impl PemSource {
    fn read(&self, env: &dyn Environment, key: &KeyOrigin) -> Result<Vec<u8>, ConfigError> {
        match self {
            Self::File(path) => env
                .read_file(path)
                .map_err(|e| key.error(format!("cannot read `{}`: {e}", path.display()))),
            Self::Inline(text) => Ok(text.expose().as_bytes().to_vec()),
            Self::Store { kind, path, .. } => Err(key.error(format!(
                "{} store {} is not PEM text",
                kind.name(),
                path.display()
            ))),
        }
    }

    /// Reads the PEM text and puts each section into canonical line layout.
    fn read_normalized(
        &self,
        env: &dyn Environment,
        key: &KeyOrigin,
    ) -> Result<Vec<u8>, ConfigError> {
        let bytes = self.read(env, key)?;
        Ok(normalize_pem(&String::from_utf8_lossy(&bytes)).into_bytes())
    }

    /// `PEM file <path>`, `inline PEM` or `PKCS12 store <path>` (`JKS
    /// store <path>`).
    pub fn describe(&self) -> String {
        match self {
            Self::File(path) => format!("PEM file {}", path.display()),
            Self::Inline(_) => "inline PEM".to_string(),
            Self::Store { kind, path, .. } => format!("{} store {}", kind.name(), path.display()),
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
        key: KeyOrigin,
    },
}

/// The client's own certificate chain and private key (mutual TLS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate chain, leaf first.
    pub certificate_chain: PemSource,
    /// The unencrypted private key.
    pub private_key: PemSource,
    /// The config key the chain came from, for error messages.
    pub chain_key: KeyOrigin,
    /// The config key the private key came from (the same key as `chain_key`
    /// when one file holds both).
    pub key: KeyOrigin,
    /// `ssl.key.password` and where it was set: opens an encrypted PEM key.
    pub key_password: Option<(Secret, KeyOrigin)>,
}

impl ClientIdentity {
    /// Whether the TLS library can be given the files or inline PEM as they
    /// are; otherwise it gets the decoded material ([`TlsMaterial`]).
    pub fn is_plain_pem(&self) -> bool {
        self.key_password.is_none()
            && !matches!(self.certificate_chain, PemSource::Store { .. })
            && !matches!(self.private_key, PemSource::Store { .. })
    }
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
    /// Why the private key could not be compared with its certificate, when
    /// this build's crypto provider could not tell (reported as a warning).
    pub key_not_compared: Option<String>,
}

impl TlsMaterial {
    /// Material of trust roots `roots` and, if configured, a client identity
    /// (chain, key, and why the key could not be compared with the chain).
    pub(super) fn new(
        roots: Vec<CertificateDer<'static>>,
        identity: Option<LoadedIdentity>,
    ) -> Self {
        let (identity, key_not_compared) = match identity {
            Some((chain, key, why)) => (Some((chain, key)), why),
            None => (None, None),
        };
        TlsMaterial {
            roots,
            identity,
            key_not_compared,
        }
    }
}

/// A client identity as loaded: the chain, the key, and why the key could not
/// be compared with the chain (if it could not).
pub(super) type LoadedIdentity = (
    Vec<CertificateDer<'static>>,
    PrivateKeyDer<'static>,
    Option<String>,
);

impl TlsSettings {
    /// Reads and parses the PEM files and inline PEM text, parses every
    /// certificate as X.509 and checks that the private key is usable and
    /// belongs to the first certificate of its chain.
    ///
    /// Errors name the config key and line; they never contain key material.
    pub fn load(&self, env: &dyn Environment) -> Result<TlsMaterial, ConfigError> {
        let roots = self.load_trust(env)?;
        let identity = self.load_identity(env)?;
        Ok(TlsMaterial::new(roots, identity))
    }

    /// The trusted CA certificates (empty for [`TrustRoots::Default`]).
    pub(super) fn load_trust(
        &self,
        env: &dyn Environment,
    ) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
        match &self.trust {
            TrustRoots::Default => Ok(Vec::new()),
            TrustRoots::Pem {
                source:
                    source @ PemSource::Store {
                        kind,
                        path,
                        password,
                        password_key,
                    },
                key,
            } => {
                let store = stores::StoreFile {
                    kind: *kind,
                    path,
                    password: password.as_ref(),
                    key,
                    password_key,
                };
                let certs = stores::trusted_certificates(env, &store)?;
                check_x509(&certs, key, source)?;
                Ok(certs)
            }
            TrustRoots::Pem { source, key } => {
                let bytes = source.read_normalized(env, key)?;
                certificates(&bytes, key, source)
            }
        }
    }

    /// The client certificate chain and private key, checked as a pair, if
    /// an identity is configured.
    pub(super) fn load_identity(
        &self,
        env: &dyn Environment,
    ) -> Result<Option<LoadedIdentity>, ConfigError> {
        let Some(id) = &self.identity else {
            return Ok(None);
        };
        let (chain, key) = match &id.certificate_chain {
            source @ PemSource::Store {
                kind,
                path,
                password,
                password_key,
            } => {
                let store = stores::StoreFile {
                    kind: *kind,
                    path,
                    password: password.as_ref(),
                    key: &id.chain_key,
                    password_key,
                };
                let (chain, key) = stores::key_chain(env, &store, id.key_password.as_ref())?;
                check_x509(&chain, &id.chain_key, source)?;
                (chain, key)
            }
            _ => pem_key_chain(id, env)?,
        };
        let not_compared = check_key_belongs_to_chain(id, &chain, &key)?;
        Ok(Some((chain, key, not_compared)))
    }

    /// Every key that names material, with where that material is: the trust
    /// store, then the client chain and key (once when one key gives both).
    pub(super) fn material_sources(&self) -> Vec<(&KeyOrigin, &PemSource)> {
        let mut out = Vec::new();
        if let TrustRoots::Pem { source, key } = &self.trust {
            out.push((key, source));
        }
        if let Some(id) = &self.identity {
            out.push((&id.chain_key, &id.certificate_chain));
            if id.key != id.chain_key {
                out.push((&id.key, &id.private_key));
            }
        }
        out
    }

    /// What to tell the operator when a broker of cluster `alias` presented
    /// a certificate that no trusted CA signed (found only by a TLS
    /// handshake): which key sets the trusted CAs, and what to do.
    pub fn untrusted_certificate_hint(&self, alias: &str) -> String {
        match &self.trust {
            TrustRoots::Pem { source, key } => format!(
                "the broker's certificate is not signed by a CA that cluster `{alias}` trusts: \
                 {} gives {}, which lacks the CA that signed the brokers' certificates; add \
                 that CA to it",
                key.describe(),
                source.describe()
            ),
            TrustRoots::Default => format!(
                "the broker's certificate is not signed by a CA that cluster `{alias}` trusts: \
                 neither `{alias}.ssl.truststore.location` nor \
                 `{alias}.ssl.truststore.certificates` is set, so only the default root \
                 certificates are trusted; set one of them to the CA that signed the brokers' \
                 certificates"
            ),
        }
    }

    /// Whether the trust roots need no file: the defaults, or inline PEM.
    pub(super) fn trust_is_inline(&self) -> bool {
        match &self.trust {
            TrustRoots::Default => true,
            TrustRoots::Pem { source, .. } => matches!(source, PemSource::Inline(_)),
        }
    }

    /// Whether the client identity needs no file: none, or inline PEM.
    pub(super) fn identity_is_inline(&self) -> bool {
        self.identity.as_ref().is_none_or(|id| {
            matches!(id.certificate_chain, PemSource::Inline(_))
                && matches!(id.private_key, PemSource::Inline(_))
        })
    }

    /// Warnings about `material` (loaded from these settings) at time `now`:
    /// certificates not yet valid, expired or expiring within
    /// [`EXPIRY_WARNING`], and a key that could not be compared with its
    /// certificate. Each names the config key and line and the certificate's
    /// subject; a TLS handshake with an expired certificate fails, so these are
    /// worth fixing before they stop the daemon.
    pub fn warnings(
        &self,
        alias: &str,
        material: &TlsMaterial,
        now: SystemTime,
    ) -> Vec<ConfigWarning> {
        let mut out = Vec::new();
        if let TrustRoots::Pem { source, key } = &self.trust {
            validity_warnings(alias, key, source, &material.roots, now, &mut out);
        }
        if let (Some(id), Some((chain, _))) = (&self.identity, &material.identity) {
            validity_warnings(
                alias,
                &id.chain_key,
                &id.certificate_chain,
                chain,
                now,
                &mut out,
            );
            if let Some(why) = &material.key_not_compared {
                out.push(id.key.warning(format!(
                    "cluster `{alias}`: {}: the private key was not compared with its \
                     certificate ({why}); the TLS handshake will tell",
                    id.key.describe()
                )));
            }
        }
        out
    }
}

/// How long before a certificate's end of validity `validate` and start-up
/// warn about it.
pub const EXPIRY_WARNING: Duration = Duration::from_secs(30 * 24 * 3600);

/// The certificate chain and private key of a PEM identity, decrypting an
/// encrypted PKCS#8 key with `ssl.key.password`.
fn pem_key_chain(
    id: &ClientIdentity,
    env: &dyn Environment,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ConfigError> {
    let chain_bytes = id.certificate_chain.read_normalized(env, &id.chain_key)?;
    let chain = certificates(&chain_bytes, &id.chain_key, &id.certificate_chain)?;
    let key_bytes = id.private_key.read(env, &id.key)?;
    if contains(&key_bytes, b"Proc-Type: 4,ENCRYPTED") {
        return Err(id.key.error(
            "the private key is encrypted in OpenSSL's legacy format (`Proc-Type: 4,ENCRYPTED`), \
             which mm2-checkpoint does not read; convert it to encrypted PKCS#8 with \
             `openssl pkcs8 -topk8 -v2 aes-256-cbc` and keep ssl.key.password",
        ));
    }
    let key_bytes = normalize_pem(&String::from_utf8_lossy(&key_bytes)).into_bytes();
    let encrypted = encrypted_key_section(&key_bytes, &id.key)?;
    let key = match (encrypted, &id.key_password) {
        (Some(section), Some((password, password_key))) => {
            stores::decrypt_pkcs8(&section, password, &id.key, password_key)?
        }
        (Some(_), None) => {
            return Err(id.key.error(
                "the private key is encrypted (`BEGIN ENCRYPTED PRIVATE KEY`): set \
                 ssl.key.password to its password",
            ));
        }
        (None, Some((_, password_key))) => {
            return Err(password_key.error(format!(
                "is set, but the private key in {} is not encrypted (Kafka refuses this too); \
                 remove ssl.key.password or encrypt the key",
                id.private_key.describe()
            )));
        }
        (None, None) => PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| {
            id.key.error(format!(
                "no usable private key in {}: {}",
                id.private_key.describe(),
                pem_problem(&e, "PRIVATE KEY")
            ))
        })?,
    };
    Ok((chain, key))
}

/// The base64-decoded body of the `ENCRYPTED PRIVATE KEY` section of
/// `text` (already in [`normalize_pem`]'s layout), if there is one.
fn encrypted_key_section(text: &[u8], key: &KeyOrigin) -> Result<Option<Vec<u8>>, ConfigError> {
    use base64::Engine as _;
    const BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----\n";
    let text = String::from_utf8_lossy(text);
    let Some(start) = text.find(BEGIN) else {
        return Ok(None);
    };
    let body = text[start + BEGIN.len()..]
        .lines()
        .next()
        .unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map(Some)
        .map_err(|_| key.error("the ENCRYPTED PRIVATE KEY section is not valid base64"))
}

/// Runs the crypto provider's own check that `key` is usable and belongs to
/// `chain`'s first certificate. `Ok(Some(why))` when the provider could not
/// compare them (the handshake will then tell).
fn check_key_belongs_to_chain(
    id: &ClientIdentity,
    chain: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
) -> Result<Option<String>, ConfigError> {
    use kafka_lite::{ClientIdentityCheck, ClientIdentityError};
    match kafka_lite::check_client_identity(chain, key, crate::tls_provider::requested().ok()) {
        Ok(ClientIdentityCheck::Matches) => Ok(None),
        Ok(ClientIdentityCheck::Unknown) => Ok(Some(
            "the crypto provider cannot derive the key's public half".to_string(),
        )),
        Err(ClientIdentityError::Provider(e)) => Ok(Some(e.to_string())),
        Err(ClientIdentityError::KeyMismatch) => Err(id.key.error(format!(
            "the private key in {} does not belong to the first certificate in {} ({}); \
             the key and the certificate must be a pair",
            id.private_key.describe(),
            id.certificate_chain.describe(),
            first_subject(chain)
        ))),
        Err(ClientIdentityError::UnusableKey(why)) => Err(id.key.error(format!(
            "the private key in {} cannot be used: {why} (RSA, ECDSA P-256/P-384 and \
             Ed25519 keys in PKCS#8, PKCS#1 or SEC1 form are supported)",
            id.private_key.describe()
        ))),
        Err(e) => Err(id.chain_key.error(format!(
            "the certificate chain in {} cannot be used: {e}",
            id.certificate_chain.describe()
        ))),
    }
}

/// `subject CN=...` of the first certificate, for messages.
fn first_subject(chain: &[CertificateDer<'static>]) -> String {
    chain
        .first()
        .and_then(|c| Certificate::from_der(c.as_ref()).ok())
        .map_or_else(
            || "unknown subject".to_string(),
            |c| format!("subject `{}`", c.tbs_certificate().subject()),
        )
}

/// Appends a warning for each certificate of `certs` (from `source`, named by
/// `key`) that is not valid at `now` or stops being valid within
/// [`EXPIRY_WARNING`]. The certificates were parsed by [`certificates`]; one
/// that no longer parses is skipped.
fn validity_warnings(
    alias: &str,
    key: &KeyOrigin,
    source: &PemSource,
    certs: &[CertificateDer<'static>],
    now: SystemTime,
    out: &mut Vec<ConfigWarning>,
) {
    let total = certs.len();
    for (i, der) in certs.iter().enumerate() {
        let Ok(cert) = Certificate::from_der(der.as_ref()) else {
            continue;
        };
        let validity = cert.tbs_certificate().validity();
        let not_before = SystemTime::UNIX_EPOCH + validity.not_before.to_unix_duration();
        let not_after = SystemTime::UNIX_EPOCH + validity.not_after.to_unix_duration();
        let which = format!(
            "certificate {} of {total} in {} (subject `{}`)",
            i + 1,
            source.describe(),
            cert.tbs_certificate().subject()
        );
        let problem = if now < not_before {
            format!("is not valid before {}", validity.not_before)
        } else if now > not_after {
            format!(
                "EXPIRED on {}; TLS handshakes that present or rely on it fail",
                validity.not_after
            )
        } else if not_after.duration_since(now).unwrap_or_default() < EXPIRY_WARNING {
            let days = not_after.duration_since(now).unwrap_or_default().as_secs() / 86_400;
            format!("expires on {} (in {days} days)", validity.not_after)
        } else {
            continue;
        };
        out.push(key.warning(format!(
            "cluster `{alias}`: {}: {which} {problem}",
            key.describe()
        )));
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
    key: &KeyOrigin,
    source: &PemSource,
) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            key.error(format!(
                "invalid PEM in {}: {}",
                source.describe(),
                pem_problem(&e, "CERTIFICATE")
            ))
        })?;
    if certs.is_empty() {
        return Err(key.error(format!(
            "no `BEGIN CERTIFICATE` section in {}",
            source.describe()
        )));
    }
    check_x509(&certs, key, source)?;
    Ok(certs)
}

/// Fails, naming `key`, on the first of `certs` that is not X.509.
fn check_x509(
    certs: &[CertificateDer<'static>],
    key: &KeyOrigin,
    source: &PemSource,
) -> Result<(), ConfigError> {
    let total = certs.len();
    for (i, cert) in certs.iter().enumerate() {
        if let Err(e) = Certificate::from_der(cert.as_ref()) {
            return Err(key.error(format!(
                "certificate {} of {total} in {} is not a valid X.509 certificate ({e})",
                i + 1,
                source.describe()
            )));
        }
    }
    Ok(())
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

/// The key and trust store formats mm2-checkpoint reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StoreType {
    Pem,
    Store(StoreKind),
}

/// The store type set by `type_key`; an absent key means JKS, Kafka's
/// default.
fn store_type(keys: &Keys<'_>, type_key: &str, what: &str) -> Result<StoreType, Unknown> {
    let store_type = match keys.get(type_key) {
        Some(s) => Some(s.text()?.trim()),
        None => None,
    };
    match store_type {
        None => Ok(StoreType::Store(StoreKind::Jks)),
        Some(t) if t.eq_ignore_ascii_case("PEM") => Ok(StoreType::Pem),
        Some(t) if t.eq_ignore_ascii_case("PKCS12") => Ok(StoreType::Store(StoreKind::Pkcs12)),
        Some(t) if t.eq_ignore_ascii_case("JKS") => Ok(StoreType::Store(StoreKind::Jks)),
        Some(t) if t.eq_ignore_ascii_case("JCEKS") => Ok(StoreType::Store(StoreKind::Jceks)),
        Some(t) => Err(keys.fail(keys.error(
            type_key,
            format!("{what} type `{t}` is not supported; use PKCS12, JKS, JCEKS or PEM"),
        ))),
    }
}

/// The password of a PKCS12, JKS or JCEKS key store (required: the store's
/// integrity check, and its key's encryption, are keyed by it). The password
/// may be unread (`--no-secrets`): only its presence is checked here.
fn store_password(
    keys: &Keys<'_>,
    password_key: &str,
    kind: StoreKind,
) -> Result<(Secret, KeyOrigin), Unknown> {
    match keys.get(password_key) {
        Some(s) => Ok((Secret::new(s.value.clone()), KeyOrigin::of(s))),
        None => Err(keys.fail(ConfigError::for_key(
            keys.missing(password_key),
            format!(
                "is required for a {} key store (it opens the store and its private key)",
                kind.name()
            ),
        ))),
    }
}

/// The TLS settings of a cluster. The trust store, the client identity, the
/// host name check and the engine factory are checked independently; every
/// problem is recorded.
pub(super) fn build_tls(keys: &Keys<'_>) -> Result<TlsSettings, Unknown> {
    let engine = match keys.get("ssl.engine.factory.class") {
        Some(s) => Err(keys.fail(s.error(
            "custom SSL engine factories are not supported by mm2-checkpoint; configure PEM \
             or PKCS12 trust and key stores instead",
        ))),
        None => Ok(()),
    };
    let trust = build_trust(keys);
    let identity = build_identity(keys);
    let verify_hostname = match keys.raw("ssl.endpoint.identification.algorithm") {
        None => Ok(true),
        Some(s) => s.text().and_then(|value| match value.trim() {
            "" => {
                keys.checker.warn(s.warning(format!(
                    "cluster `{}`: TLS host name verification is DISABLED ({} is empty)",
                    keys.alias, s.origin
                )));
                Ok(false)
            }
            v if v.eq_ignore_ascii_case("https") => Ok(true),
            v => Err(keys.fail(s.error(format!(
                "`{v}` is not supported; use `https` (verify host names, the default) or an \
                 empty value (do not verify)"
            )))),
        }),
    };
    engine?;
    Ok(TlsSettings {
        trust: trust?,
        identity: identity?,
        verify_hostname: verify_hostname?,
    })
}

fn build_trust(keys: &Keys<'_>) -> Result<TrustRoots, Unknown> {
    let location = keys.get("ssl.truststore.location");
    let inline = keys.get("ssl.truststore.certificates");
    if location.is_none() && inline.is_none() {
        return Ok(TrustRoots::Default);
    }
    let kind = store_type(keys, "ssl.truststore.type", "trust store")?;
    match (location, inline) {
        (Some(_), Some(certs)) => {
            Err(keys.fail(certs.error(
                "set either ssl.truststore.location or ssl.truststore.certificates, not both",
            )))
        }
        (Some(loc), None) if let StoreType::Store(kind) = kind => {
            // Java reads a trust store without its password (no integrity
            // check); whether this one can be read so is known when it is
            // opened.
            let (password, password_key) = match keys.get("ssl.truststore.password") {
                Some(s) => (Some(Secret::new(s.value.clone())), KeyOrigin::of(s)),
                None => (
                    None,
                    KeyOrigin {
                        key: keys.missing("ssl.truststore.password"),
                        line: None,
                    },
                ),
            };
            Ok(TrustRoots::Pem {
                source: PemSource::Store {
                    kind,
                    path: PathBuf::from(loc.value.trim()),
                    password,
                    password_key,
                },
                key: KeyOrigin::of(loc),
            })
        }
        (None, Some(certs)) if let StoreType::Store(kind) = kind => {
            Err(keys.fail(certs.error(format!(
                "inline certificates are PEM: set ssl.truststore.type=PEM, or give the {} \
                 store as ssl.truststore.location",
                kind.name()
            ))))
        }
        (location, inline) => {
            if let Some(s) = keys.get("ssl.truststore.password") {
                return Err(keys.fail(s.error(
                    "a trust store password cannot be used with PEM trust stores; remove it",
                )));
            }
            Ok(match (location, inline) {
                (Some(loc), _) => TrustRoots::Pem {
                    source: PemSource::File(PathBuf::from(loc.value.trim())),
                    key: KeyOrigin::of(loc),
                },
                (None, Some(certs)) => TrustRoots::Pem {
                    source: PemSource::Inline(Secret::new(certs.value.clone())),
                    key: KeyOrigin::of(certs),
                },
                (None, None) => TrustRoots::Default,
            })
        }
    }
}

fn build_identity(keys: &Keys<'_>) -> Result<Option<ClientIdentity>, Unknown> {
    let location = keys.get("ssl.keystore.location");
    let chain = keys.get("ssl.keystore.certificate.chain");
    let key = keys.get("ssl.keystore.key");
    if location.is_none() && chain.is_none() && key.is_none() {
        return Ok(None);
    }
    let kind = store_type(keys, "ssl.keystore.type", "key store")?;
    let key_password_setting = keys.get("ssl.key.password");
    let key_password =
        key_password_setting.map(|s| (Secret::new(s.value.clone()), KeyOrigin::of(s)));
    if let StoreType::Store(kind) = kind {
        let Some(loc) = location else {
            return Err(keys.fail(keys.error(
                "ssl.keystore.location",
                format!(
                    "is required for a {} key store (ssl.keystore.certificate.chain and \
                     ssl.keystore.key are PEM)",
                    kind.name()
                ),
            )));
        };
        if let Some(s) = chain.or(key) {
            return Err(keys.fail(s.error(format!(
                "is PEM: it cannot be combined with a {} key store",
                kind.name()
            ))));
        }
        let (password, password_key) = store_password(keys, "ssl.keystore.password", kind)?;
        // keytool writes PKCS12 stores with one password for the store and its
        // keys, and refuses a different key password; so do we. Passwords not
        // read (`--no-secrets`) cannot be compared. A JKS key has its own
        // password.
        let store_password = keys.get("ssl.keystore.password").map(Setting::text);
        if let (StoreKind::Pkcs12, Some(key_setting), Some(Ok(store_password))) =
            (kind, key_password_setting, store_password)
            && let Ok(key_pw) = key_setting.text()
            && key_pw != store_password
        {
            return Err(keys.fail(key_setting.error(
                "differs from ssl.keystore.password; a PKCS12 store has one password for \
                 the store and its key (keytool enforces this), so remove ssl.key.password \
                 or set it to the store password",
            )));
        }
        let source = PemSource::Store {
            kind,
            path: PathBuf::from(loc.value.trim()),
            password: Some(password),
            password_key,
        };
        return Ok(Some(ClientIdentity {
            certificate_chain: source.clone(),
            private_key: source,
            chain_key: KeyOrigin::of(loc),
            key: KeyOrigin::of(loc),
            key_password,
        }));
    }
    if let Some(s) = keys.get("ssl.keystore.password") {
        return Err(keys.fail(s.error(
            "a key store password cannot be used with PEM key stores (Kafka refuses it too); \
             remove it (an encrypted private key takes ssl.key.password)",
        )));
    }
    match (location, chain, key) {
        (Some(loc), None, None) => {
            let path = PathBuf::from(loc.value.trim());
            Ok(Some(ClientIdentity {
                certificate_chain: PemSource::File(path.clone()),
                private_key: PemSource::File(path),
                chain_key: KeyOrigin::of(loc),
                key: KeyOrigin::of(loc),
                key_password,
            }))
        }
        (None, Some(chain), Some(key)) => Ok(Some(ClientIdentity {
            certificate_chain: pem_value(chain),
            private_key: pem_value(key),
            chain_key: KeyOrigin::of(chain),
            key: KeyOrigin::of(key),
            key_password,
        })),
        (Some(loc), _, _) => Err(keys.fail(loc.error(
            "set either ssl.keystore.location or ssl.keystore.certificate.chain with \
             ssl.keystore.key, not both",
        ))),
        (None, Some(_), None) => Err(keys.fail(keys.error(
            "ssl.keystore.key",
            "is required when ssl.keystore.certificate.chain is set",
        ))),
        (None, _, _) => Err(keys.fail(keys.error(
            "ssl.keystore.certificate.chain",
            "is required when ssl.keystore.key is set",
        ))),
    }
}

/// `ssl.keystore.certificate.chain` and `ssl.keystore.key` hold PEM text
/// (KIP-651). A value without a PEM BEGIN line is taken as the path of a PEM
/// file, so that separately mounted `user.crt` and `user.key` files (a
/// Strimzi KafkaUser secret) can be used without joining them.
fn pem_value(setting: &Setting) -> PemSource {
    let value = setting.value.trim();
    if value.contains("-----BEGIN ") {
        PemSource::Inline(Secret::new(setting.value.clone()))
    } else {
        PemSource::File(PathBuf::from(value))
    }
}
