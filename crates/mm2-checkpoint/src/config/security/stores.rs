//! Key material that is not plain PEM: PKCS12 key and trust stores
//! (`ssl.*.type=PKCS12`) and encrypted PKCS#8 private keys opened with
//! `ssl.key.password`. Everything is decoded in memory, in pure Rust, when the
//! configuration is loaded; the results are DER, which [`super::tls`] checks
//! like PEM material and the driver hands to the TLS library. Messages never
//! contain key material or passwords. See docs/configuration.md, "TLS".

use std::path::Path;

use base64::Engine as _;
use p12_keystore::{KeyStore, KeyStoreEntry, Pkcs12ImportPolicy};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::tls::KeyOrigin;
use crate::config::error::ConfigError;
use crate::config::providers::Environment;
use crate::config::secret::Secret;

/// A PKCS12 store file and its password, with the keys they were set by.
pub(super) struct Pkcs12Store<'a> {
    pub(super) path: &'a Path,
    pub(super) password: &'a Secret,
    /// The location key (`ssl.*store.location`).
    pub(super) key: &'a KeyOrigin,
    /// The password key, named when the password is wrong.
    pub(super) password_key: &'a KeyOrigin,
}

/// Reads and opens a PKCS12 store.
fn open_pkcs12(env: &dyn Environment, store: &Pkcs12Store<'_>) -> Result<KeyStore, ConfigError> {
    let Pkcs12Store {
        path,
        password,
        key,
        password_key,
    } = store;
    let bytes = env
        .read_file(path)
        .map_err(|e| key.error(format!("cannot read `{}`: {e}", path.display())))?;
    KeyStore::from_pkcs12(&bytes, password.expose(), Pkcs12ImportPolicy::Strict).map_err(|e| {
        use p12_keystore::error::Error as P12;
        let why = match e {
            // The integrity MAC is keyed by the store password.
            P12::MacError(_) => {
                return password_key.error(format!(
                    "is wrong for PKCS12 store {} (its integrity check failed)",
                    path.display()
                ));
            }
            P12::UnpadError | P12::Pkcs5Error(_) => {
                "a protected entry cannot be decrypted with the store password".to_string()
            }
            P12::DerError(_) | P12::InvalidVersion | P12::InvalidData | P12::InvalidLength => {
                "the file is not a PKCS12 store (or it is damaged)".to_string()
            }
            other => format!("the store cannot be opened: {other}"),
        };
        key.error(format!("PKCS12 store {}: {why}", path.display()))
    })
}

/// The trusted certificates of a PKCS12 trust store, in file order. Like
/// Java, only certificate entries that carry the "trusted" attribute (what
/// `keytool -importcert` writes) count; a store without any is an error that
/// says so.
pub(super) fn pkcs12_trusted_certificates(
    env: &dyn Environment,
    store: &Pkcs12Store<'_>,
) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let (path, key) = (store.path, store.key);
    let store = open_pkcs12(env, store)?;
    let certs: Vec<CertificateDer<'static>> = store
        .entries()
        .filter_map(|(_, entry)| match entry {
            KeyStoreEntry::Certificate(c) => Some(CertificateDer::from(c.as_der().to_vec())),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(key.error(format!(
            "PKCS12 store {} holds no trusted certificate entry (Java, too, ignores \
             certificates that were not imported as trusted: add the CA with `keytool \
             -importcert -storetype PKCS12 -alias ca -file ca.pem -keystore {}`)",
            path.display(),
            path.display()
        )));
    }
    Ok(certs)
}

/// The one private key of a PKCS12 key store and its certificate chain (leaf
/// first). A store without a key, or with several, is an error naming it.
pub(super) fn pkcs12_key_chain(
    env: &dyn Environment,
    store: &Pkcs12Store<'_>,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ConfigError> {
    let (path, key) = (store.path, store.key);
    let store = open_pkcs12(env, store)?;
    let chains: Vec<_> = store
        .entries()
        .filter_map(|(alias, entry)| match entry {
            KeyStoreEntry::PrivateKeyChain(chain) => Some((alias.to_owned(), chain)),
            _ => None,
        })
        .collect();
    let (alias, chain) = match chains.as_slice() {
        [] => {
            return Err(key.error(format!(
                "PKCS12 store {} holds no private key with its certificate (a trust store \
                 given as the key store?)",
                path.display()
            )));
        }
        [one] => one,
        many => {
            let aliases: Vec<&str> = many.iter().map(|(a, _)| a.as_str()).collect();
            return Err(key.error(format!(
                "PKCS12 store {} holds {} private keys ({}); mm2-checkpoint needs exactly one \
                 (Kafka's `ssl.keystore.alias` is not supported): export the one to use",
                path.display(),
                many.len(),
                aliases.join(", ")
            )));
        }
    };
    if chain.certs().is_empty() {
        return Err(key.error(format!(
            "PKCS12 store {}: the private key `{alias}` has no certificate",
            path.display()
        )));
    }
    let certs = chain
        .certs()
        .iter()
        .map(|c| CertificateDer::from(c.as_der().to_vec()))
        .collect();
    let private_key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
    Ok((certs, private_key))
}

/// Decrypts an `ENCRYPTED PRIVATE KEY` (PKCS#8 with PBES2: AES or 3DES, PBKDF2
/// or scrypt), the form `openssl pkcs8 -topk8` and KIP-651 use. `der` is the
/// section's body; `password_key` names `ssl.key.password` in errors.
pub(super) fn decrypt_pkcs8(
    der: &[u8],
    password: &Secret,
    key: &KeyOrigin,
    password_key: &KeyOrigin,
) -> Result<PrivateKeyDer<'static>, ConfigError> {
    use pkcs8::der::Decode as _;
    let info = pkcs8::EncryptedPrivateKeyInfoRef::from_der(der).map_err(|e| {
        key.error(format!(
            "the ENCRYPTED PRIVATE KEY section is not an encrypted PKCS#8 key ({e})"
        ))
    })?;
    let plain = info.decrypt(password.expose().as_bytes()).map_err(|e| {
        let why = match e {
            pkcs8::Error::EncryptedPrivateKey(pkcs5::Error::DecryptFailed)
            | pkcs8::Error::Asn1(_) => "the password is wrong".to_string(),
            pkcs8::Error::EncryptedPrivateKey(pkcs5::Error::UnsupportedAlgorithm { .. }) => {
                "its encryption scheme is not supported (PBES2 with AES or 3DES and PBKDF2 \
                 or scrypt are; re-encrypt with `openssl pkcs8 -topk8 -v2 aes-256-cbc`)"
                    .to_string()
            }
            other => other.to_string(),
        };
        password_key.error(format!(
            "cannot decrypt the private key of `{}`: {why}",
            key.key
        ))
    })?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        plain.as_bytes().to_vec(),
    )))
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

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::pem::PemObject;

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
