//! A reader for PKCS12 key and trust stores (RFC 7292), what `keytool` and
//! `openssl pkcs12 -export` write, on the RustCrypto ASN.1 types the rest of
//! the build already uses (`pkcs12`, `cms`, `der`, `x509-cert`, `pkcs8`,
//! `pkcs5`).
//!
//! A store is a `PFX`: an "authenticated safe" (a `data` content holding a
//! sequence of safes), and usually a MAC over it. Reading goes:
//!
//! 1. The MAC, when there is one, is checked first, before anything in the
//!    file is trusted: HMAC with SHA-1, SHA-224, SHA-256, SHA-384, SHA-512,
//!    SHA-512/224 or SHA-512/256, keyed by the RFC 7292 key derivation (appendix
//!    B) over the password. A mismatch is a wrong password. PBMAC1 (RFC 9579)
//!    is refused, naming it.
//! 2. Each safe is a plain `data` content or an `encryptedData` one, the
//!    latter under PBES2 (PBKDF2 with HMAC-SHA1/SHA-2, or scrypt; AES-CBC or
//!    DES-EDE3-CBC, through `pkcs5`) or PKCS#12's PBES1 schemes (3DES and RC2
//!    over SHA-1, [`super::pbe`]).
//! 3. Each safe holds bags: `keyBag` (a plain PKCS#8 key),
//!    `pkcs8ShroudedKeyBag` (an encrypted one, same schemes) and `certBag`
//!    (X.509 certificates). Other bags (CRLs, secrets, nested safes) are
//!    skipped, as Java skips them.
//!
//! Keys are paired with their certificate by the `localKeyId` attribute; the
//! chain then follows issuer to subject among the other certificates (not
//! the trusted ones), leaf first, stopping at a self-signed certificate or
//! one already taken. A certificate with Java's trusted-usage attribute
//! (what `keytool -importcert` writes) and no `localKeyId` is a trusted
//! certificate; other certificates without a key are ignored, as Java
//! ignores them.
//!
//! Work is bounded: iteration counts above the JDK's limit and scrypt
//! parameters above 1 GiB or parallelism 16 are refused before any
//! derivation. A damaged or hostile file is an error, never a panic. Errors
//! never carry the password or key material. See docs/configuration.md,
//! "TLS".

use hmac::digest::{Digest, FixedOutputReset, block_api::BlockSizeUser};
use hmac::{EagerHash, Hmac, KeyInit, Mac};
use pkcs12::cms::content_info::ContentInfo;
use pkcs12::cms::encrypted_data::EncryptedData;
use pkcs12::kdf::{Pkcs12KeyType, derive_key_utf8};
use pkcs12::pbe_params::EncryptedPrivateKeyInfo;
use pkcs12::pfx::Pfx;
use pkcs12::{CertBag, MacData, SafeBag};
use sha1::Sha1;
use sha2::{Sha224, Sha256, Sha384, Sha512, Sha512_224, Sha512_256};
use x509_cert::Certificate;
use x509_cert::der::asn1::{Any, BmpString, ContextSpecific, ObjectIdentifier, OctetString};
use x509_cert::der::{Decode, Encode as _, Tag, TagNumber, Tagged as _};
use x509_cert::name::Name;
use x509_cert::spki::AlgorithmIdentifierOwned;

use super::pbe::{self, MAX_ITERATIONS, Pkcs12Pbe};

/// The OIDs a store is read by.
mod oid {
    use super::ObjectIdentifier;

    const fn oid(text: &str) -> ObjectIdentifier {
        ObjectIdentifier::new_unwrap(text)
    }

    /// PKCS#7 `data` (RFC 2315).
    pub(super) const DATA: ObjectIdentifier = oid("1.2.840.113549.1.7.1");
    /// PKCS#7 `encryptedData` (RFC 2315).
    pub(super) const ENCRYPTED_DATA: ObjectIdentifier = oid("1.2.840.113549.1.7.6");
    /// PKCS#7 `envelopedData` (RFC 2315), public-key protection.
    pub(super) const ENVELOPED_DATA: ObjectIdentifier = oid("1.2.840.113549.1.7.3");
    /// PKCS#5 PBES2 (RFC 8018).
    pub(super) const PBES2: ObjectIdentifier = oid("1.2.840.113549.1.5.13");
    /// PKCS#5 PBMAC1 (RFC 8018), the MAC of RFC 9579.
    pub(super) const PBMAC1: ObjectIdentifier = oid("1.2.840.113549.1.5.14");
    /// `keyBag` (RFC 7292).
    pub(super) const KEY_BAG: ObjectIdentifier = oid("1.2.840.113549.1.12.10.1.1");
    /// `pkcs8ShroudedKeyBag` (RFC 7292).
    pub(super) const SHROUDED_KEY_BAG: ObjectIdentifier = oid("1.2.840.113549.1.12.10.1.2");
    /// `certBag` (RFC 7292).
    pub(super) const CERT_BAG: ObjectIdentifier = oid("1.2.840.113549.1.12.10.1.3");
    /// `x509Certificate`, the certificate type of a `certBag` (RFC 7292).
    pub(super) const X509_CERTIFICATE: ObjectIdentifier = oid("1.2.840.113549.1.9.22.1");
    /// `friendlyName` (PKCS#9): the alias.
    pub(super) const FRIENDLY_NAME: ObjectIdentifier = oid("1.2.840.113549.1.9.20");
    /// `localKeyId` (PKCS#9): pairs a key with its certificate.
    pub(super) const LOCAL_KEY_ID: ObjectIdentifier = oid("1.2.840.113549.1.9.21");
    /// Oracle's trusted key usage: the JDK's mark of a trusted certificate.
    pub(super) const TRUSTED_KEY_USAGE: ObjectIdentifier = oid("2.16.840.1.113894.746875.1.1");
    /// The MAC digests (NIST and OIW arcs).
    pub(super) const SHA1: ObjectIdentifier = oid("1.3.14.3.2.26");
    pub(super) const SHA224: ObjectIdentifier = oid("2.16.840.1.101.3.4.2.4");
    pub(super) const SHA256: ObjectIdentifier = oid("2.16.840.1.101.3.4.2.1");
    pub(super) const SHA384: ObjectIdentifier = oid("2.16.840.1.101.3.4.2.2");
    pub(super) const SHA512: ObjectIdentifier = oid("2.16.840.1.101.3.4.2.3");
    pub(super) const SHA512_224: ObjectIdentifier = oid("2.16.840.1.101.3.4.2.5");
    pub(super) const SHA512_256: ObjectIdentifier = oid("2.16.840.1.101.3.4.2.6");
}

/// The most memory scrypt may use (128 · N · r bytes).
const MAX_SCRYPT_MEMORY: u64 = 1 << 30;
/// The most scrypt parallelism accepted.
const MAX_SCRYPT_PARALLELISM: u16 = 16;

/// Why a PKCS12 store could not be read. Never carries a secret.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Pkcs12Error {
    /// Not DER, or not a PFX (what is wrong, without content).
    NotPkcs12(String),
    /// The MAC, keyed by the password, does not match.
    WrongPassword,
    /// A protected safe or key does not decrypt with the password.
    Undecryptable,
    /// The password has a character outside Unicode's basic plane, which the
    /// PKCS#12 key derivation (a BMPString) cannot take.
    PasswordNotBmp,
    /// A valid store using something not read here, or parameters outside
    /// the bounds (what, for the message).
    Unsupported(String),
}

/// What a store holds, in file order.
#[derive(Debug, Default)]
pub(super) struct Pkcs12Contents {
    /// Private keys with their chains.
    pub(super) keys: Vec<KeyEntry>,
    /// Trusted certificates (DER).
    pub(super) trusted: Vec<Vec<u8>>,
}

/// A private key and its certificate chain.
#[derive(Debug)]
pub(super) struct KeyEntry {
    /// The `friendlyName`, else the leaf's subject.
    pub(super) alias: String,
    /// Certificates (DER), leaf first; never empty.
    pub(super) chain: Vec<Vec<u8>>,
    /// The private key, PKCS#8 DER, decrypted.
    pub(super) key: Vec<u8>,
}

/// A certificate bag, decoded.
struct CertificateBag {
    der: Vec<u8>,
    subject: Name,
    issuer: Name,
    local_key_id: Option<Vec<u8>>,
    trusted: bool,
}

/// A key bag, decrypted.
struct KeyBag {
    key: Vec<u8>,
    alias: Option<String>,
    local_key_id: Option<Vec<u8>>,
}

fn damaged(what: &str, e: impl std::fmt::Display) -> Pkcs12Error {
    Pkcs12Error::NotPkcs12(format!("{what} is not valid DER ({e})"))
}

/// Reads a PKCS12 store with `password` (`""`: none given, which reads a
/// store without MAC and encryption).
pub(super) fn parse(bytes: &[u8], password: &str) -> Result<Pkcs12Contents, Pkcs12Error> {
    let pfx = Pfx::from_der(bytes).map_err(|e| damaged("the PFX structure", e))?;
    if pfx.auth_safe.content_type != oid::DATA {
        return Err(Pkcs12Error::Unsupported(format!(
            "its content is of type {}, not `data` (public-key integrity is not read)",
            pfx.auth_safe.content_type
        )));
    }
    let content = &pfx.auth_safe.content;
    if content.tag() != Tag::OctetString {
        return Err(Pkcs12Error::NotPkcs12(
            "the authenticated safe is not an OCTET STRING".to_string(),
        ));
    }
    if let Some(mac) = &pfx.mac_data {
        check_mac(mac, password, content.value())?;
    }
    let safes = Vec::<ContentInfo>::from_der(content.value())
        .map_err(|e| damaged("the authenticated safe", e))?;
    let mut keys = Vec::new();
    let mut certificates = Vec::new();
    for safe in &safes {
        let plain = open_safe(safe, password)?;
        let bags = Vec::<SafeBag>::from_der(&plain).map_err(|e| damaged("a safe", e))?;
        for bag in &bags {
            read_bag(bag, password, &mut keys, &mut certificates)?;
        }
    }
    Ok(pair(keys, &certificates))
}

/// Checks the MAC over the authenticated safe's octets.
fn check_mac(mac: &MacData, password: &str, data: &[u8]) -> Result<(), Pkcs12Error> {
    let algorithm = mac.mac.algorithm.oid;
    let iterations = iterations(i64::from(mac.iterations), "the integrity check")?;
    let salt = mac.mac_salt.as_bytes();
    let expected = mac.mac.digest.as_bytes();
    match algorithm {
        oid::SHA1 => hmac_matches::<Sha1>(password, salt, iterations, data, expected),
        oid::SHA224 => hmac_matches::<Sha224>(password, salt, iterations, data, expected),
        oid::SHA256 => hmac_matches::<Sha256>(password, salt, iterations, data, expected),
        oid::SHA384 => hmac_matches::<Sha384>(password, salt, iterations, data, expected),
        oid::SHA512 => hmac_matches::<Sha512>(password, salt, iterations, data, expected),
        oid::SHA512_224 => hmac_matches::<Sha512_224>(password, salt, iterations, data, expected),
        oid::SHA512_256 => hmac_matches::<Sha512_256>(password, salt, iterations, data, expected),
        oid::PBMAC1 => Err(Pkcs12Error::Unsupported(
            "its integrity check is PBMAC1 (RFC 9579), which mm2-checkpoint does not read; \
             write the store with an HMAC integrity check (`openssl pkcs12 -export -macalg \
             sha256`, or keytool with `-J-Dkeystore.pkcs12.macAlgorithm=HmacPBESHA256`)"
                .to_string(),
        )),
        other => Err(Pkcs12Error::Unsupported(format!(
            "its integrity check uses digest {other}, which mm2-checkpoint does not read \
             (SHA-1 and SHA-2 are read)"
        ))),
    }
}

/// An iteration count within 1 and the JDK's limit, for `what`.
fn iterations(n: i64, what: &str) -> Result<i32, Pkcs12Error> {
    u64::try_from(n)
        .ok()
        .filter(|n| (1..=MAX_ITERATIONS).contains(n))
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| {
            Pkcs12Error::Unsupported(format!(
                "{what} has {n} iterations (1 to {MAX_ITERATIONS} are read, as by the JDK)"
            ))
        })
}

/// Whether HMAC-`D` of `data`, keyed by the RFC 7292 derivation of
/// `password`, is `expected` (compared in constant time).
fn hmac_matches<D>(
    password: &str,
    salt: &[u8],
    iterations: i32,
    data: &[u8],
    expected: &[u8],
) -> Result<(), Pkcs12Error>
where
    D: Digest + FixedOutputReset + BlockSizeUser + EagerHash,
{
    let key = derive_key_utf8::<D>(
        password,
        salt,
        Pkcs12KeyType::Mac,
        iterations,
        <D as Digest>::output_size(),
    )
    .map_err(|_| Pkcs12Error::PasswordNotBmp)?;
    let mut mac = <Hmac<D> as KeyInit>::new_from_slice(&key)
        .map_err(|_| Pkcs12Error::Unsupported("an HMAC key of the wrong length".to_string()))?;
    mac.update(data);
    mac.verify_slice(expected)
        .map_err(|_| Pkcs12Error::WrongPassword)
}

/// The plain `SafeContents` DER of one safe.
fn open_safe(safe: &ContentInfo, password: &str) -> Result<Vec<u8>, Pkcs12Error> {
    let content = safe.content.to_der().map_err(|e| damaged("a safe", e))?;
    match safe.content_type {
        oid::DATA => Ok(OctetString::from_der(&content)
            .map_err(|e| damaged("a plain safe", e))?
            .into_bytes()
            .into()),
        oid::ENCRYPTED_DATA => {
            let encrypted =
                EncryptedData::from_der(&content).map_err(|e| damaged("an encrypted safe", e))?;
            let info = encrypted.enc_content_info;
            match &info.encrypted_content {
                Some(data) => decrypt(&info.content_enc_alg, data.as_bytes(), password),
                None => Ok(Vec::new()),
            }
        }
        oid::ENVELOPED_DATA => Err(Pkcs12Error::Unsupported(
            "a safe is protected by a public key (envelopedData), which mm2-checkpoint (like \
             Java) does not read"
                .to_string(),
        )),
        other => Err(Pkcs12Error::Unsupported(format!(
            "a safe has content type {other}, which mm2-checkpoint does not read"
        ))),
    }
}

/// Decrypts `data` under password-based encryption `algorithm`.
fn decrypt(
    algorithm: &AlgorithmIdentifierOwned,
    data: &[u8],
    password: &str,
) -> Result<Vec<u8>, Pkcs12Error> {
    let params = algorithm
        .parameters
        .as_ref()
        .map(|p| p.to_der())
        .transpose()
        .map_err(|e| damaged("encryption parameters", e))?
        .ok_or_else(|| {
            Pkcs12Error::NotPkcs12(format!("encryption {} has no parameters", algorithm.oid))
        })?;
    if algorithm.oid == oid::PBES2 {
        let params = pkcs5::pbes2::Parameters::from_der(&params).map_err(|e| {
            Pkcs12Error::Unsupported(format!(
                "an entry is encrypted with PBES2 under parameters not read here ({e}); PBKDF2 \
                 with HMAC-SHA1 or SHA-2, or scrypt, and AES-CBC or DES-EDE3-CBC are read"
            ))
        })?;
        match &params.kdf {
            pkcs5::pbes2::Kdf::Pbkdf2(p) => {
                iterations(i64::from(p.iteration_count), "the PBKDF2 key derivation")?;
            }
            pkcs5::pbes2::Kdf::Scrypt(p) => {
                let memory = 128u64
                    .checked_mul(p.cost_parameter)
                    .and_then(|m| m.checked_mul(u64::from(p.block_size)));
                if p.parallelization > MAX_SCRYPT_PARALLELISM
                    || memory.is_none_or(|m| m > MAX_SCRYPT_MEMORY)
                {
                    return Err(Pkcs12Error::Unsupported(format!(
                        "an entry is encrypted under scrypt with N={}, r={}, p={} (at most 1 \
                         GiB of memory and p=16 are read)",
                        p.cost_parameter, p.block_size, p.parallelization
                    )));
                }
            }
            // A derivation newer than this code: its cost is unknown, so refuse.
            _ => {
                return Err(Pkcs12Error::Unsupported(
                    "an entry is encrypted with PBES2 under a key derivation other than \
                     PBKDF2 and scrypt"
                        .to_string(),
                ));
            }
        }
        return params
            .decrypt(password.as_bytes(), data)
            .map_err(|e| match e {
                pkcs5::Error::DecryptFailed => Pkcs12Error::Undecryptable,
                other => Pkcs12Error::Unsupported(format!(
                    "an entry is encrypted with PBES2 in a form not read here ({other})"
                )),
            });
    }
    let scheme = match Pkcs12Pbe::of(&algorithm.oid) {
        Ok(Some(scheme)) => scheme,
        Ok(None) => {
            return Err(Pkcs12Error::Unsupported(format!(
                "an entry is encrypted with algorithm {}, which mm2-checkpoint does not read \
                 (PBES2 and PKCS#12's 3DES and RC2 schemes are read)",
                algorithm.oid
            )));
        }
        Err(name) => {
            return Err(Pkcs12Error::Unsupported(format!(
                "an entry is encrypted with {name} ({}), which mm2-checkpoint does not read",
                algorithm.oid
            )));
        }
    };
    pbe::decrypt(scheme, &params, data, password).map_err(|e| match e {
        pbe::PbeError::WrongPassword => Pkcs12Error::Undecryptable,
        pbe::PbeError::PasswordNotBmp => Pkcs12Error::PasswordNotBmp,
        pbe::PbeError::BadParameters(why) => Pkcs12Error::Unsupported(format!(
            "an entry is encrypted with {} under parameters not read here: {why}",
            scheme.java_name()
        )),
    })
}

/// The first value of attribute `oid` of `bag`.
fn attribute<'a>(bag: &'a SafeBag, oid: &ObjectIdentifier) -> Option<&'a Any> {
    bag.bag_attributes
        .as_ref()?
        .iter()
        .find(|a| a.oid == *oid)?
        .values
        .iter()
        .next()
}

/// The `[0] EXPLICIT` value of a bag, as `T`.
fn bag_value<'a, T: Decode<'a>>(bag: &'a SafeBag, what: &str) -> Result<T, Pkcs12Error> {
    let value = ContextSpecific::<T>::from_der(&bag.bag_value).map_err(|e| damaged(what, e))?;
    if value.tag_number != TagNumber(0) {
        return Err(Pkcs12Error::NotPkcs12(format!("{what} is not tagged [0]")));
    }
    Ok(value.value)
}

/// Reads one bag into `keys` or `certificates`; other bags are skipped.
fn read_bag(
    bag: &SafeBag,
    password: &str,
    keys: &mut Vec<KeyBag>,
    certificates: &mut Vec<CertificateBag>,
) -> Result<(), Pkcs12Error> {
    let local_key_id = attribute(bag, &oid::LOCAL_KEY_ID)
        .and_then(|v| v.decode_as::<OctetString>().ok())
        .map(|id| id.into_bytes().into_vec());
    let alias = attribute(bag, &oid::FRIENDLY_NAME)
        .and_then(|v| v.decode_as::<BmpString>().ok())
        .map(|name| name.to_string());
    match bag.bag_id {
        oid::KEY_BAG => {
            let value: Any = bag_value(bag, "a key bag")?;
            let key = value.to_der().map_err(|e| damaged("a key bag", e))?;
            check_private_key(&key)?;
            keys.push(KeyBag {
                key,
                alias,
                local_key_id,
            });
        }
        oid::SHROUDED_KEY_BAG => {
            let shrouded: EncryptedPrivateKeyInfo = bag_value(bag, "an encrypted key bag")?;
            let key = decrypt(
                &shrouded.encryption_algorithm,
                shrouded.encrypted_data.as_bytes(),
                password,
            )?;
            // A wrong password passes the padding check once in ~256 tries
            // (no MAC, or an entry under a password of its own).
            check_private_key(&key).map_err(|_| Pkcs12Error::Undecryptable)?;
            keys.push(KeyBag {
                key,
                alias,
                local_key_id,
            });
        }
        oid::CERT_BAG => {
            let cert: CertBag = bag_value(bag, "a certificate bag")?;
            if cert.cert_id != oid::X509_CERTIFICATE {
                // SDSI certificates: nothing TLS can use.
                return Ok(());
            }
            let der = cert.cert_value.into_bytes().into_vec();
            let parsed = Certificate::from_der(&der).map_err(|e| {
                Pkcs12Error::NotPkcs12(format!(
                    "a certificate bag holds no valid X.509 certificate ({e})"
                ))
            })?;
            let tbs = parsed.tbs_certificate();
            certificates.push(CertificateBag {
                subject: tbs.subject().clone(),
                issuer: tbs.issuer().clone(),
                der,
                local_key_id,
                trusted: attribute(bag, &oid::TRUSTED_KEY_USAGE).is_some(),
            });
        }
        _ => {}
    }
    Ok(())
}

/// Whether `der` is a PKCS#8 private key.
fn check_private_key(der: &[u8]) -> Result<(), Pkcs12Error> {
    pkcs8::PrivateKeyInfoRef::from_der(der)
        .map(|_| ())
        .map_err(|e| Pkcs12Error::NotPkcs12(format!("a key bag holds no PKCS#8 key ({e})")))
}

/// Pairs keys with their chains and picks the trusted certificates. A key
/// without `localKeyId`, or without a certificate of the same one, is left
/// out (as p12 readers in strict mode and Java, which needs its certificate).
fn pair(keys: Vec<KeyBag>, certificates: &[CertificateBag]) -> Pkcs12Contents {
    let mut contents = Pkcs12Contents::default();
    for key in keys {
        let Some(id) = key.local_key_id.as_deref() else {
            continue;
        };
        let Some(leaf) = certificates
            .iter()
            .find(|c| c.local_key_id.as_deref() == Some(id))
        else {
            continue;
        };
        contents.keys.push(KeyEntry {
            alias: key.alias.unwrap_or_else(|| leaf.subject.to_string()),
            chain: chain(leaf, certificates),
            key: key.key,
        });
    }
    contents.trusted = certificates
        .iter()
        .filter(|c| c.trusted && c.local_key_id.is_none())
        .map(|c| c.der.clone())
        .collect();
    contents
}

/// `leaf` and its issuers among the untrusted `certificates`, leaf first.
fn chain(leaf: &CertificateBag, certificates: &[CertificateBag]) -> Vec<Vec<u8>> {
    let mut chain = vec![leaf.der.clone()];
    let mut current = leaf;
    // Each step adds a certificate not yet in the chain, so this ends.
    while current.subject != current.issuer {
        let Some(issuer) = certificates
            .iter()
            .find(|c| !c.trusted && c.subject == current.issuer && !chain.contains(&c.der))
        else {
            break;
        };
        chain.push(issuer.der.clone());
        current = issuer;
    }
    chain
}

#[cfg(test)]
mod tests {
    //! Stores written by the real tools at test time: `openssl pkcs12
    //! -export` with each protection it offers, and `keytool` (trust stores,
    //! secret keys, and the JDK's PBES2 and MAC choices).

    use super::*;
    use e2e::scratch::{TempDir, openssl, tool};
    use pkcs12::pfx::Pfx;

    const PASSWORD: &str = "store-pw";

    /// A root CA, an intermediate CA it signed and a client certificate the
    /// intermediate signed, with EC P-256 keys; `client.key.der` is the
    /// client key as PKCS#8 DER, `*.der` the certificates.
    fn identity(dir: &TempDir) {
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"];
        let mut root = vec!["req", "-x509", "-nodes", "-days", "2"];
        root.extend(ec);
        root.extend([
            "-keyout",
            "root.key",
            "-out",
            "root.pem",
            "-subj",
            "/CN=test root",
        ]);
        openssl(&dir.0, &root);
        dir.write("ca.ext", "basicConstraints=critical,CA:TRUE\n");
        for (name, issuer, ext) in [
            ("inter", "root", &["-extfile", "ca.ext"][..]),
            ("client", "inter", &[][..]),
        ] {
            let subj = format!("/CN=test {name}");
            let (key, csr, pem) = (
                format!("{name}.key"),
                format!("{name}.csr"),
                format!("{name}.pem"),
            );
            let mut req = vec!["req", "-nodes"];
            req.extend(ec);
            req.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
            openssl(&dir.0, &req);
            let (ca, ca_key) = (format!("{issuer}.pem"), format!("{issuer}.key"));
            let mut sign = vec![
                "x509",
                "-req",
                "-days",
                "2",
                "-in",
                &csr,
                "-CA",
                &ca,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-out",
                &pem,
            ];
            sign.extend(ext);
            openssl(&dir.0, &sign);
        }
        for name in ["root", "inter", "client"] {
            let (pem, der) = (format!("{name}.pem"), format!("{name}.der"));
            openssl(
                &dir.0,
                &["x509", "-in", &pem, "-outform", "DER", "-out", &der],
            );
        }
        openssl(
            &dir.0,
            &[
                "pkcs8",
                "-topk8",
                "-nocrypt",
                "-in",
                "client.key",
                "-outform",
                "DER",
                "-out",
                "client.key.der",
            ],
        );
        // The CAs in the wrong order: the reader must order the chain.
        let cas = format!("{}{}", dir.read("root.pem"), dir.read("inter.pem"));
        dir.write("cas.pem", &cas);
    }

    fn der(dir: &TempDir, name: &str) -> Vec<u8> {
        std::fs::read(dir.0.join(name)).expect("read DER")
    }

    /// The client's key store written by `openssl pkcs12 -export` with
    /// `protection`.
    fn openssl_store(dir: &TempDir, name: &str, protection: &[&str]) -> Vec<u8> {
        let pass = format!("pass:{PASSWORD}");
        let mut args = vec!["pkcs12", "-export"];
        args.extend(protection);
        args.extend([
            "-in",
            "client.pem",
            "-inkey",
            "client.key",
            "-certfile",
            "cas.pem",
            "-name",
            "client",
            "-out",
            name,
            "-passout",
            &pass,
        ]);
        openssl(&dir.0, &args);
        der(dir, name)
    }

    /// Runs keytool with `args` and the store password.
    fn keytool(args: &[&str]) {
        let mut all = args.to_vec();
        all.extend(["-storepass", PASSWORD, "-noprompt"]);
        tool("keytool", &all);
    }

    fn assert_client_chain(dir: &TempDir, contents: &Pkcs12Contents, what: &str) {
        assert_eq!(contents.keys.len(), 1, "{what}");
        let entry = &contents.keys[0];
        assert_eq!(entry.alias, "client", "{what}");
        assert_eq!(
            entry.chain,
            [
                der(dir, "client.der"),
                der(dir, "inter.der"),
                der(dir, "root.der")
            ],
            "{what}: the chain, leaf first"
        );
        assert!(
            pkcs8::PrivateKeyInfoRef::from_der(&entry.key).is_ok(),
            "{what}"
        );
    }

    #[test]
    fn every_protection_openssl_writes_reads_with_the_chain_in_order() {
        let dir = TempDir::new("pkcs12", "openssl");
        identity(&dir);
        let key = der(&dir, "client.key.der");
        for (name, protection) in [
            // OpenSSL 3's default: PBES2 (PBKDF2-HMAC-SHA256, AES-256-CBC), HMAC-SHA256.
            ("default.p12", &[][..]),
            // RC2-40 certificates, 3DES key, HMAC-SHA1.
            ("legacy.p12", &["-legacy"][..]),
            (
                "3des.p12",
                &[
                    "-certpbe",
                    "PBE-SHA1-3DES",
                    "-keypbe",
                    "PBE-SHA1-3DES",
                    "-macalg",
                    "sha1",
                ][..],
            ),
            (
                "rc2-128.p12",
                &[
                    "-legacy",
                    "-certpbe",
                    "PBE-SHA1-RC2-128",
                    "-keypbe",
                    "PBE-SHA1-RC2-128",
                ][..],
            ),
            (
                "aes128.p12",
                &[
                    "-certpbe",
                    "AES-128-CBC",
                    "-keypbe",
                    "AES-192-CBC",
                    "-macalg",
                    "sha384",
                ][..],
            ),
            (
                "des-ede3.p12",
                &[
                    "-certpbe",
                    "DES-EDE3-CBC",
                    "-keypbe",
                    "AES-256-CBC",
                    "-macalg",
                    "sha512",
                ][..],
            ),
            ("sha224.p12", &["-macalg", "sha224", "-iter", "1"][..]),
            // A plain key bag and plain safes, with and without MAC.
            ("plain.p12", &["-keypbe", "NONE", "-certpbe", "NONE"][..]),
            (
                "plain-nomac.p12",
                &["-keypbe", "NONE", "-certpbe", "NONE", "-nomac"][..],
            ),
        ] {
            let bytes = openssl_store(&dir, name, protection);
            let contents = parse(&bytes, PASSWORD).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert_client_chain(&dir, &contents, name);
            assert_eq!(contents.keys[0].key, key, "{name}: the key as written");
            // A certificate that came with a key is not trusted.
            assert!(contents.trusted.is_empty(), "{name}");
        }
    }

    #[test]
    fn a_wrong_password_fails_the_mac_or_the_decryption() {
        let dir = TempDir::new("pkcs12", "wrong");
        identity(&dir);
        for protection in [&[][..], &["-legacy"][..], &["-macalg", "sha1"][..]] {
            let bytes = openssl_store(&dir, "mac.p12", protection);
            assert_eq!(
                parse(&bytes, "not-the-pw").map(|_| ()),
                Err(Pkcs12Error::WrongPassword),
                "{protection:?}"
            );
        }
        // Without MAC, the encrypted safes are what the password fails on.
        for protection in [&["-nomac"][..], &["-nomac", "-legacy"][..]] {
            let bytes = openssl_store(&dir, "nomac.p12", protection);
            assert_eq!(
                parse(&bytes, "not-the-pw").map(|_| ()),
                Err(Pkcs12Error::Undecryptable),
                "{protection:?}"
            );
        }
        // Password-less reading (stores.rs strips the MAC): plain safes read.
        let plain = openssl_store(
            &dir,
            "plain.p12",
            &["-keypbe", "NONE", "-certpbe", "NONE", "-nomac"],
        );
        assert_eq!(parse(&plain, "").map(|c| c.keys.len()), Ok(1));
    }

    #[test]
    fn keytool_stores_give_trusted_certificates_keys_and_skip_secret_keys() {
        let dir = TempDir::new("pkcs12", "keytool");
        identity(&dir);
        openssl_store(&dir, "source.p12", &[]);
        let path = |n: &str| dir.0.join(n).to_str().expect("utf-8").to_string();

        // A trust store as `keytool -importcert` writes it, with a secret
        // key beside (a bag mm2-checkpoint skips, as Java's TLS does).
        let ts = path("trust.p12");
        for (alias, file) in [("root", "root.pem"), ("inter", "inter.pem")] {
            let file = path(file);
            keytool(&[
                "-importcert",
                "-storetype",
                "PKCS12",
                "-keystore",
                &ts,
                "-alias",
                alias,
                "-file",
                &file,
            ]);
        }
        keytool(&[
            "-genseckey",
            "-storetype",
            "PKCS12",
            "-keystore",
            &ts,
            "-alias",
            "secret",
            "-keyalg",
            "AES",
            "-keysize",
            "128",
        ]);
        let contents = parse(&der(&dir, "trust.p12"), PASSWORD).expect("keytool trust store");
        assert!(contents.keys.is_empty());
        let mut trusted = contents.trusted.clone();
        trusted.sort();
        let mut wanted = vec![der(&dir, "root.der"), der(&dir, "inter.der")];
        wanted.sort();
        assert_eq!(trusted, wanted);

        // Key stores rewritten by keytool under the JDK's PBES2 and MAC
        // choices (PBKDF2 with HMAC-SHA1 and SHA-512, AES-128 and AES-256,
        // HMAC-SHA512 and SHA-1 MACs).
        let src = path("source.p12");
        for (name, props) in [
            ("jdk-default.p12", &[][..]),
            (
                "jdk-sha512.p12",
                &[
                    "-J-Dkeystore.pkcs12.keyProtectionAlgorithm=PBEWithHmacSHA512AndAES_128",
                    "-J-Dkeystore.pkcs12.certProtectionAlgorithm=PBEWithHmacSHA1AndAES_256",
                    "-J-Dkeystore.pkcs12.macAlgorithm=HmacPBESHA512",
                ][..],
            ),
            ("jdk-legacy.p12", &["-J-Dkeystore.pkcs12.legacy"][..]),
        ] {
            let dest = path(name);
            let mut args = props.to_vec();
            args.extend([
                "-importkeystore",
                "-srckeystore",
                &src,
                "-srcstoretype",
                "PKCS12",
                "-srcstorepass",
                PASSWORD,
                "-destkeystore",
                &dest,
                "-deststoretype",
                "PKCS12",
            ]);
            keytool(&args);
            let contents =
                parse(&der(&dir, name), PASSWORD).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert_client_chain(&dir, &contents, name);
            assert_eq!(
                parse(&der(&dir, name), "not-the-pw").map(|_| ()),
                Err(Pkcs12Error::WrongPassword),
                "{name}"
            );
        }
    }

    /// `bytes` with its PFX changed by `edit`, re-encoded.
    fn edited(bytes: &[u8], edit: impl FnOnce(&mut Pfx)) -> Vec<u8> {
        let mut pfx = Pfx::from_der(bytes).expect("a PFX");
        edit(&mut pfx);
        pfx.to_der().expect("re-encode")
    }

    #[test]
    fn pbmac1_unknown_digests_and_hostile_counts_are_refused_by_name() {
        let dir = TempDir::new("pkcs12", "refused");
        identity(&dir);
        let bytes = openssl_store(&dir, "store.p12", &[]);
        let pbmac1 = edited(&bytes, |pfx| {
            pfx.mac_data.as_mut().expect("a MAC").mac.algorithm.oid = oid::PBMAC1;
        });
        assert!(matches!(
            parse(&pbmac1, PASSWORD),
            Err(Pkcs12Error::Unsupported(why)) if why.contains("PBMAC1 (RFC 9579)")
        ));
        let md5 = edited(&bytes, |pfx| {
            pfx.mac_data.as_mut().expect("a MAC").mac.algorithm.oid =
                ObjectIdentifier::new_unwrap("1.2.840.113549.2.5");
        });
        assert!(matches!(
            parse(&md5, PASSWORD),
            Err(Pkcs12Error::Unsupported(why)) if why.contains("1.2.840.113549.2.5")
        ));
        for count in [0, -1, i32::MAX] {
            let hostile = edited(&bytes, |pfx| {
                pfx.mac_data.as_mut().expect("a MAC").iterations = count;
            });
            assert!(
                matches!(
                    parse(&hostile, PASSWORD),
                    Err(Pkcs12Error::Unsupported(why)) if why.contains("iterations")
                ),
                "{count}"
            );
        }
        // A PBKDF2 count above the limit, in a store without MAC (a MAC would
        // have to be forged first): refused before any derivation.
        openssl(
            &dir.0,
            &[
                "pkcs12",
                "-export",
                "-in",
                "client.pem",
                "-inkey",
                "client.key",
                "-nomac",
                "-iter",
                "5000001",
                "-certpbe",
                "NONE",
                "-keypbe",
                "AES-256-CBC",
                "-out",
                "many.p12",
                "-passout",
                "pass:store-pw",
            ],
        );
        assert!(matches!(
            parse(&der(&dir, "many.p12"), PASSWORD),
            Err(Pkcs12Error::Unsupported(why)) if why.contains("5000001 iterations")
        ));
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error_not_a_panic() {
        let dir = TempDir::new("pkcs12", "truncated");
        identity(&dir);
        let bytes = openssl_store(&dir, "store.p12", &["-legacy", "-iter", "1", "-maciter"]);
        assert!(parse(&bytes, PASSWORD).is_ok());
        for n in 0..bytes.len() {
            assert!(parse(&bytes[..n], PASSWORD).is_err(), "truncated at {n}");
        }
        for at in (0..bytes.len()).step_by(7) {
            let mut bad = bytes.clone();
            bad[at] ^= 0x5A;
            let _ = parse(&bad, PASSWORD);
            let _ = parse(&bad, "");
        }
    }

    #[test]
    fn a_file_that_is_not_a_pfx_says_so() {
        for junk in [
            &b""[..],
            b"\x30\x03\x02\x01\x03",
            b"PK\x03\x04",
            b"not a store",
        ] {
            assert!(
                matches!(parse(junk, PASSWORD), Err(Pkcs12Error::NotPkcs12(_))),
                "{junk:?}"
            );
        }
    }
}
