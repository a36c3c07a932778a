//! Key material that is not plain PEM: PKCS12, JKS and JCEKS key and trust
//! stores (`ssl.*.type=PKCS12`, `JKS` or `JCEKS`) and encrypted PKCS#8 private keys opened with
//! `ssl.key.password`. Everything is decoded in memory, in pure Rust, when the
//! configuration is loaded; the results are DER, which [`super::tls`] checks
//! like PEM material and the driver hands to the TLS library. The formats are
//! parsed by [`super::pkcs12`], [`super::jks`] and [`super::pbe`]; this file
//! opens stores and turns their errors into messages naming the keys. Messages
//! never contain key material or passwords. See docs/configuration.md, "TLS".

use std::path::Path;

use base64::Engine as _;
use kafka_lite::Secret;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::jks::{self, JksEntry, JksError};
use super::pbe;
use super::pkcs12::{self, Pkcs12Error};
use crate::config::check::ConfigWarning;
use crate::config::error::ConfigError;
use crate::config::providers::Environment;
use crate::config::setting::Setting;

/// The Java store formats mm2-checkpoint reads (`ssl.*store.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// PKCS12 (`.p12`, `.pfx`): what `keytool` writes by default.
    Pkcs12,
    /// Java KeyStore, the JDK's proprietary format and Kafka's default type.
    Jks,
    /// JCEKS, the JDK's other proprietary format (the JKS layout, keys under
    /// `PBEWithMD5AndTripleDES`).
    Jceks,
}

impl StoreKind {
    /// The type as Kafka spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pkcs12 => "PKCS12",
            Self::Jks => "JKS",
            Self::Jceks => "JCEKS",
        }
    }

    /// The kind a file's content is, whatever type was configured: like the
    /// JDK (`keystore.type.compat`), a store of either type is opened in
    /// the format it was written in.
    fn of_content(bytes: &[u8]) -> Self {
        if bytes.starts_with(&jks::JKS_MAGIC) {
            Self::Jks
        } else if bytes.starts_with(&jks::JCEKS_MAGIC) {
            Self::Jceks
        } else {
            Self::Pkcs12
        }
    }
}

/// A store file and its password, with the keys they were set by.
pub(super) struct StoreFile<'a> {
    /// The configured type (`ssl.*store.type`).
    pub(super) kind: StoreKind,
    pub(super) path: &'a Path,
    /// `None`: a trust store given without password, read as Java reads it
    /// (certificates only, integrity not checked).
    pub(super) password: Option<&'a Secret>,
    /// The location key (`ssl.*store.location`).
    pub(super) key: &'a KeyOrigin,
    /// The password key, named when the password is wrong or needed.
    pub(super) password_key: &'a KeyOrigin,
}

/// A store's entries as both formats give them.
enum Entry {
    /// A trusted certificate (PKCS12: one with the trusted attribute).
    Trusted(CertificateDer<'static>),
    /// A private key and its chain, leaf first.
    Key {
        alias: String,
        chain: Vec<CertificateDer<'static>>,
        key: ProtectedKey,
    },
}

/// A private key as the store holds it.
enum ProtectedKey {
    /// Already opened with the store password (PKCS12: one password).
    Open(Vec<u8>),
    /// JKS or JCEKS: protected by its own password.
    Jks(StoreKind, Vec<u8>),
}

/// Reads and opens a store in the format its content is in.
fn open(
    env: &dyn Environment,
    store: &StoreFile<'_>,
) -> Result<(StoreKind, Vec<Entry>), ConfigError> {
    let StoreFile {
        kind, path, key, ..
    } = store;
    let bytes = env
        .read_file(path)
        .map_err(|e| key.error(format!("cannot read `{}`: {e}", path.display())))?;
    let found = StoreKind::of_content(&bytes);
    let entries = match found {
        StoreKind::Jks | StoreKind::Jceks => open_jks(&bytes, found, store)?,
        StoreKind::Pkcs12 => open_pkcs12(&bytes, *kind, store)?,
    };
    Ok((found, entries))
}

fn open_jks(
    bytes: &[u8],
    found: StoreKind,
    store: &StoreFile<'_>,
) -> Result<Vec<Entry>, ConfigError> {
    let StoreFile {
        path,
        password,
        key,
        password_key,
        ..
    } = store;
    let entries = jks::parse(bytes, password.map(Secret::expose)).map_err(|e| match e {
        JksError::WrongStorePassword => password_key.error(format!(
            "is wrong for {} store {} (its integrity check failed)",
            found.name(),
            path.display()
        )),
        other => key.error(format!(
            "{} store {}: {}",
            found.name(),
            path.display(),
            jks_problem(&other)
        )),
    })?;
    Ok(entries
        .into_iter()
        .map(|entry| match entry {
            JksEntry::TrustedCertificate { certificate, .. } => {
                Entry::Trusted(CertificateDer::from(certificate))
            }
            JksEntry::PrivateKey {
                alias,
                protected_key,
                chain,
            } => Entry::Key {
                alias,
                chain: chain.into_iter().map(CertificateDer::from).collect(),
                key: ProtectedKey::Jks(found, protected_key),
            },
        })
        .collect())
}

/// What is wrong with a JKS store, for messages.
fn jks_problem(e: &JksError) -> String {
    match e {
        JksError::NotJks => "the file is not a JKS or JCEKS store".to_string(),
        JksError::Damaged(why) => format!("the file is damaged: {why}"),
        JksError::WrongStorePassword => "the store password is wrong".to_string(),
        JksError::WrongKeyPassword => "the key password is wrong".to_string(),
        JksError::UnsupportedKeyProtection(oid) => format!(
            "its private key is protected by algorithm {oid}, not the JDK's JKS or JCEKS \
             key protection; convert the store to PKCS12"
        ),
        JksError::SecretKeyEntry(alias) => format!(
            "entry `{alias}` is a secret key, which mm2-checkpoint cannot read past; keep \
             only the private key and certificates in the store (or convert it to PKCS12)"
        ),
        JksError::PasswordNotAscii => "the key password has a character that is not \
             printable ASCII, which JCEKS key protection (the JDK's PBEWithMD5AndTripleDES) \
             cannot use"
            .to_string(),
    }
}

fn open_pkcs12(
    bytes: &[u8],
    configured: StoreKind,
    store: &StoreFile<'_>,
) -> Result<Vec<Entry>, ConfigError> {
    let StoreFile {
        path,
        password,
        key,
        password_key,
        ..
    } = store;
    let stripped;
    let needed = || {
        password_key.error(format!(
            "is needed to read PKCS12 store {}: its certificates are encrypted with \
             it (Java would read no certificate from it without the password)",
            path.display()
        ))
    };
    let (bytes, password_text) = match password {
        Some(password) => (bytes, password.expose()),
        None => match pkcs12_without_password(bytes) {
            Some(Ok(readable)) => {
                stripped = readable;
                (&stripped[..], "")
            }
            Some(Err(())) => return Err(needed()),
            // Not PKCS12 (or not DER): the attempt below says so.
            None => (bytes, ""),
        },
    };
    let contents = pkcs12::parse(bytes, password_text).map_err(|e| {
        let why = match e {
            Pkcs12Error::WrongPassword | Pkcs12Error::Undecryptable if password.is_none() => {
                return needed();
            }
            // The integrity MAC is keyed by the store password.
            Pkcs12Error::WrongPassword => {
                return password_key.error(format!(
                    "is wrong for PKCS12 store {} (its integrity check failed)",
                    path.display()
                ));
            }
            Pkcs12Error::PasswordNotBmp => {
                return password_key.error(format!(
                    "has a character outside Unicode's basic plane, which PKCS12 store {} \
                     cannot use (its key derivation takes the password as a BMPString)",
                    path.display()
                ));
            }
            Pkcs12Error::Undecryptable => {
                "a protected entry cannot be decrypted with the store password".to_string()
            }
            Pkcs12Error::NotPkcs12(detail) => match configured {
                StoreKind::Pkcs12 => {
                    format!("the file is not a PKCS12 store (or it is damaged: {detail})")
                }
                StoreKind::Jks | StoreKind::Jceks => format!(
                    "the file is neither a JKS, JCEKS nor a PKCS12 store (or it is damaged: \
                     {detail})"
                ),
            },
            Pkcs12Error::Unsupported(what) => format!("the store cannot be opened: {what}"),
        };
        key.error(format!(
            "{} store {}: {why}",
            configured.name(),
            path.display()
        ))
    })?;
    let keys = contents.keys.into_iter().map(|entry| Entry::Key {
        alias: entry.alias,
        chain: entry.chain.into_iter().map(CertificateDer::from).collect(),
        key: ProtectedKey::Open(entry.key),
    });
    let trusted = contents
        .trusted
        .into_iter()
        .map(|c| Entry::Trusted(CertificateDer::from(c)));
    Ok(keys.chain(trusted).collect())
}

/// A PKCS12 file as Java reads it without a password: its integrity MAC is
/// not checked, so it is removed, and only safes that are not encrypted can
/// be read. `Some(Ok(pfx))`: the file without its MAC, all its safes plain;
/// `Some(Err(()))`: some safe is encrypted, so the password is needed;
/// `None`: the file is not a PKCS12 PFX.
fn pkcs12_without_password(bytes: &[u8]) -> Option<Result<Vec<u8>, ()>> {
    use x509_cert::der::asn1::{Any, ObjectIdentifier};
    use x509_cert::der::{Decode, Encode, Reader, SliceReader, Tag, TagNumber, Tagged};
    // PKCS#7 content types (RFC 2315): data, encryptedData.
    const DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.1");
    const ENCRYPTED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.6");
    // PFX ::= SEQUENCE { version INTEGER, authSafe ContentInfo, macData OPTIONAL }
    let pfx = Any::from_der(bytes)
        .ok()
        .filter(|a| a.tag() == Tag::Sequence)?;
    let mut fields = SliceReader::new(pfx.value()).ok()?;
    let version = Any::decode(&mut fields).ok()?;
    let auth_safe = Any::decode(&mut fields).ok()?;
    // ContentInfo ::= SEQUENCE { contentType OID, content [0] EXPLICIT ANY }
    let content_info = |info: &Any| -> Option<(ObjectIdentifier, Option<Any>)> {
        if info.tag() != Tag::Sequence {
            return None;
        }
        let mut r = SliceReader::new(info.value()).ok()?;
        let kind = ObjectIdentifier::decode(&mut r).ok()?;
        let content = if r.is_finished() {
            None
        } else {
            let explicit = Any::decode(&mut r).ok()?;
            (explicit.tag().number() == TagNumber(0)).then_some(())?;
            Some(Any::from_der(explicit.value()).ok()?)
        };
        Some((kind, content))
    };
    let (kind, content) = content_info(&auth_safe)?;
    if kind != DATA {
        return None;
    }
    let safes = content.filter(|c| c.tag() == Tag::OctetString)?;
    let safes = Any::from_der(safes.value()).ok()?;
    let mut r = SliceReader::new(safes.value()).ok()?;
    while !r.is_finished() {
        let (kind, _) = content_info(&Any::decode(&mut r).ok()?)?;
        if kind == ENCRYPTED_DATA {
            return Some(Err(()));
        }
    }
    let mut body = version.to_der().ok()?;
    body.extend(auth_safe.to_der().ok()?);
    Some(Ok(Any::new(Tag::Sequence, body).ok()?.to_der().ok()?))
}

/// The trusted certificates of a trust store, in file order. Like Java,
/// only trusted-certificate entries count (in PKCS12, certificates with the
/// "trusted" attribute `keytool -importcert` writes); a store without any is
/// an error that says so.
pub(super) fn trusted_certificates(
    env: &dyn Environment,
    store: &StoreFile<'_>,
) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let (path, key) = (store.path, store.key);
    let (found, entries) = open(env, store)?;
    let certs: Vec<CertificateDer<'static>> = entries
        .into_iter()
        .filter_map(|entry| match entry {
            Entry::Trusted(c) => Some(c),
            Entry::Key { .. } => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(key.error(format!(
            "{kind} store {p} holds no trusted certificate entry (Java, too, ignores \
             certificates that were not imported as trusted: add the CA with `keytool \
             -importcert -storetype {kind} -alias ca -file ca.pem -keystore {p}`)",
            kind = found.name(),
            p = path.display(),
        )));
    }
    Ok(certs)
}

/// The one private key of a key store and its certificate chain (leaf
/// first). A store without a key, or with several, is an error naming it.
/// A JKS key is opened with `key_password` (`ssl.key.password`) if set,
/// else with the store password, as Kafka does.
pub(super) fn key_chain(
    env: &dyn Environment,
    store: &StoreFile<'_>,
    key_password: Option<&(Secret, KeyOrigin)>,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ConfigError> {
    let (path, key) = (store.path, store.key);
    let (found, entries) = open(env, store)?;
    let mut keys: Vec<_> = entries
        .into_iter()
        .filter_map(|entry| match entry {
            Entry::Key { alias, chain, key } => Some((alias, chain, key)),
            Entry::Trusted(_) => None,
        })
        .collect();
    let kind = found.name();
    let (alias, chain, protected) = match keys.len() {
        0 => {
            return Err(key.error(format!(
                "{kind} store {} holds no private key with its certificate (a trust store \
                 given as the key store?)",
                path.display()
            )));
        }
        1 => keys.remove(0),
        n => {
            let aliases: Vec<&str> = keys.iter().map(|(a, _, _)| a.as_str()).collect();
            return Err(key.error(format!(
                "{kind} store {} holds {n} private keys ({}); mm2-checkpoint needs exactly one \
                 (Kafka's `ssl.keystore.alias` is not supported): export the one to use",
                path.display(),
                aliases.join(", ")
            )));
        }
    };
    if chain.is_empty() {
        return Err(key.error(format!(
            "{kind} store {}: the private key `{alias}` has no certificate",
            path.display()
        )));
    }
    let Some(store_password) = store.password else {
        return Err(store
            .password_key
            .error("is required for a key store (it opens the store and its private key)"));
    };
    let der = match protected {
        ProtectedKey::Open(der) => {
            if let Some((password, origin)) = key_password
                && password != store_password
            {
                return Err(origin.error(format!(
                    "differs from {}, but {} is a PKCS12 store, which has one password for \
                     the store and its key; remove it or set it to the store password",
                    store.password_key.key,
                    path.display()
                )));
            }
            der
        }
        ProtectedKey::Jks(found, protected) => {
            let (password, origin) = match key_password {
                Some((password, origin)) => (password, origin),
                None => (store_password, store.password_key),
            };
            jks::recover_key(&protected, password.expose()).map_err(|e| match e {
                JksError::WrongKeyPassword if key_password.is_some() => origin.error(format!(
                    "is wrong for the private key `{alias}` of {} store {}",
                    found.name(),
                    path.display()
                )),
                JksError::WrongKeyPassword => origin.error(format!(
                    "opens {} store {} but not its private key `{alias}`, which has a \
                     password of its own: set ssl.key.password",
                    found.name(),
                    path.display()
                )),
                other => key.error(format!(
                    "{} store {}: {}",
                    found.name(),
                    path.display(),
                    jks_problem(&other)
                )),
            })?
        }
    };
    Ok((chain, PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der))))
}

/// Decrypts an `ENCRYPTED PRIVATE KEY` (PKCS#8), in every form Java's
/// `EncryptedPrivateKeyInfo` opens: PBES2 (AES or 3DES, PBKDF2 with
/// HMAC-SHA1/SHA-2, or scrypt), what `openssl pkcs8 -topk8 -v2` and KIP-651
/// use, or PKCS#12's PBES1 schemes (3DES, RC2), what `-v1 PBE-SHA1-3DES`
/// writes. `der` is the section's body; `key` names where the key is,
/// `password_key` names `ssl.key.password` in errors.
pub(super) fn decrypt_pkcs8(
    der: &[u8],
    password: &Secret,
    key: &KeyOrigin,
    password_key: &KeyOrigin,
) -> Result<PrivateKeyDer<'static>, ConfigError> {
    use pkcs8::der::Decode as _;
    let cannot = |why: &str| {
        password_key.error(format!(
            "cannot decrypt the private key of `{}`: {why}",
            key.key
        ))
    };
    let not_pkcs8 = |why: &str| key.error(format!("the ENCRYPTED PRIVATE KEY section is {why}"));
    match pbe::pkcs12_encrypted(der).map_err(|why| not_pkcs8(&why))? {
        Some((scheme, params, data)) => {
            let plain = pbe::decrypt(scheme, &params, data, password.expose()).map_err(|e| {
                match e {
                    pbe::PbeError::BadParameters(why) => not_pkcs8(&format!(
                        "encrypted with {} under malformed parameters: {why}",
                        scheme.java_name()
                    )),
                    pbe::PbeError::WrongPassword => cannot("the password is wrong"),
                    pbe::PbeError::PasswordNotBmp => cannot(
                        "the password has a character outside Unicode's basic plane, which                          PKCS#12 encryption cannot use",
                    ),
                }
            })?;
            // A wrong password passes the padding check once in ~256 tries;
            // what it yields is then not a key.
            if pkcs8::PrivateKeyInfoRef::from_der(&plain).is_err() {
                return Err(cannot("the password is wrong"));
            }
            Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(plain)))
        }
        None => {
            let info = pkcs8::EncryptedPrivateKeyInfoRef::from_der(der)
                .map_err(|e| not_pkcs8(&format!("not an encrypted PKCS#8 key ({e})")))?;
            let plain = info.decrypt(password.expose().as_bytes()).map_err(|e| {
                cannot(&match e {
                    pkcs8::Error::EncryptedPrivateKey(pkcs5::Error::DecryptFailed)
                    | pkcs8::Error::Asn1(_) => "the password is wrong".to_string(),
                    pkcs8::Error::EncryptedPrivateKey(
                        pkcs5::Error::UnsupportedAlgorithm { .. }
                        | pkcs5::Error::NoPbes1CryptSupport,
                    ) => "its encryption scheme is not supported (PBES2 with AES or 3DES and                           PBKDF2 or scrypt, and PKCS#12's PBE-SHA1-3DES and PBE-SHA1-RC2 are;                           re-encrypt with `openssl pkcs8 -topk8 -v2 aes-256-cbc`)"
                        .to_string(),
                    other => other.to_string(),
                })
            })?;
            Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
                plain.as_bytes().to_vec(),
            )))
        }
    }
}

/// PEM text for DER items under `label`, for handing decoded material to the
/// TLS library in memory.
fn pem(label: &str, items: impl IntoIterator<Item = impl AsRef<[u8]>>) -> String {
    let mut out = String::new();
    for der in items {
        let body = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        out.push_str(&format!("-----BEGIN {label}-----\n"));
        for line in body.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(line).unwrap_or_default());
            out.push('\n');
        }
        out.push_str(&format!("-----END {label}-----\n"));
    }
    out
}

/// Certificates as PEM text.
pub fn certificates_pem(certs: &[CertificateDer<'static>]) -> Secret {
    Secret::new(pem("CERTIFICATE", certs.iter().map(|c| c.as_ref())))
}

/// A private key as PEM text (kept secret).
pub fn private_key_pem(key: &PrivateKeyDer<'static>) -> Secret {
    let label = match key {
        PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
        PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
        _ => "PRIVATE KEY",
    };
    Secret::new(pem(label, [key.secret_der()]))
}

/// A config key and the line of `mm2.properties` it was read from, so that a
/// problem found in the material it names points back at the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyOrigin {
    /// The key as written in the file, e.g. `B.ssl.truststore.location`.
    pub key: String,
    /// Its 1-based line, if it came from the file.
    pub line: Option<usize>,
}

impl KeyOrigin {
    /// The key and line `setting` was read from.
    pub(crate) fn of(setting: &Setting) -> Self {
        Self {
            key: setting.origin.clone(),
            line: setting.line,
        }
    }

    pub(super) fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::for_key(self.key.as_str(), message).at_line(self.line)
    }

    /// A warning about this key.
    pub(super) fn warning(&self, message: String) -> ConfigWarning {
        ConfigWarning::new(Some(self.key.clone()), self.line, message)
    }

    /// `` `key` (line N) `` for warnings.
    pub(super) fn describe(&self) -> String {
        match self.line {
            Some(line) => format!("`{}` (line {line})", self.key),
            None => format!("`{}`", self.key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::pem::PemObject;

    #[test]
    fn what_is_not_a_pfx_is_left_to_the_pkcs12_reader() {
        // tests/validate_material.rs reads keytool's stores without password.
        for junk in [
            &b""[..],
            b"\x30\x03\x02\x01\x03",
            b"\xFE\xED\xFE\xED",
            b"PK\x03\x04",
        ] {
            assert_eq!(pkcs12_without_password(junk), None);
        }
    }

    #[test]
    fn pem_round_trips_through_the_parser() {
        let certs = vec![
            CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x01]),
            CertificateDer::from((0..200u8).collect::<Vec<_>>()),
        ];
        let text = certificates_pem(&certs);
        let back: Vec<_> = CertificateDer::pem_slice_iter(text.expose().as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, certs);
        assert!(text.expose().lines().all(|l| l.len() <= 64));

        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(vec![7u8; 100]));
        let text = private_key_pem(&key);
        let back = PrivateKeyDer::from_pem_slice(text.expose().as_bytes()).unwrap();
        assert_eq!(back.secret_der(), key.secret_der());
    }
}
