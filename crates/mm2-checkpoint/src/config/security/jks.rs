//! A reader for Java KeyStore files (`JKS`, what `keytool -storetype JKS`
//! writes and what Kafka's `ssl.*store.type` defaults to).
//!
//! The format (big-endian throughout):
//!
//! ```text
//! u32 magic 0xFEEDFEED, u32 version (1 or 2), u32 entry count
//! per entry: u32 tag, UTF alias, u64 creation time (ms), then
//!   tag 1 (private key): u32 length + EncryptedPrivateKeyInfo (DER),
//!                        u32 chain length, per certificate: [v2: UTF type] u32 length + DER
//!   tag 2 (trusted certificate): [v2: UTF type] u32 length + DER
//! 20 bytes: SHA-1(password as UTF-16BE || "Mighty Aphrodite" || every byte before)
//! ```
//!
//! (`UTF` is Java's `DataOutput.writeUTF`: u16 length, then modified UTF-8.)
//! A private key is protected by the JDK's own scheme (OID
//! 1.3.6.1.4.1.42.2.17.1.1): `salt(20) || key XOR keystream || check(20)`,
//! where the keystream is `d1 || d2 || ...` with `d1 = SHA-1(password ||
//! salt)`, `di = SHA-1(password || d(i-1))`, and `check = SHA-1(password ||
//! key)`; the key is PKCS#8 DER.
//!
//! JCEKS (`keytool -storetype JCEKS`, the JDK's other proprietary format) is
//! the same layout under magic 0xCECECECE, version 2, plus secret-key entries
//! (tag 3, a serialized Java object this reader cannot step over, so they are
//! an error). Its private keys are protected by the JDK's
//! `PBEWithMD5AndTripleDES` (OID 1.3.6.1.4.1.42.2.19.1, parameters a salt of
//! 8 bytes and an iteration count): each half of the salt (the first half
//! reversed if both are equal) is hashed with the password, MD5 repeated
//! `iterations` times over `previous || password`, giving 32 bytes, the
//! 3DES key (24) and IV (8) for CBC with PKCS#5 padding. The password is
//! taken as printable ASCII bytes, as the JDK's `PBEKey` takes it. A JCEKS
//! store may also hold keys under the JKS protection.
//!
//! Everything is bounds-checked: a damaged or hostile file is an error, never
//! a panic or an allocation larger than the file. Errors never contain key
//! material or passwords. See docs/configuration.md, "TLS".

use sha1::{Digest, Sha1};
use x509_cert::der::asn1::OctetStringRef;
use x509_cert::der::{Decode, Encode as _, Reader, SliceReader};
use x509_cert::spki::AlgorithmIdentifierRef;

/// The first four bytes of a JKS file.
pub(super) const JKS_MAGIC: [u8; 4] = [0xFE, 0xED, 0xFE, 0xED];
/// The first four bytes of a JCEKS file (the JDK's other proprietary format).
pub(super) const JCEKS_MAGIC: [u8; 4] = [0xCE, 0xCE, 0xCE, 0xCE];
/// The text the store's integrity digest mixes in after the password.
const DIGEST_WHITENER: &[u8] = b"Mighty Aphrodite";
/// The JDK's proprietary key protection algorithm.
const KEY_PROTECTOR_OID: &str = "1.3.6.1.4.1.42.2.17.1.1";
/// The JDK's `PBEWithMD5AndTripleDES`, JCEKS's key protection.
const JCEKS_KEY_PROTECTOR_OID: &str = "1.3.6.1.4.1.42.2.19.1";
/// The most iterations the JDK's JCEKS key protector accepts.
const JCEKS_MAX_ITERATIONS: u64 = 5_000_000;
const SHA1_LEN: usize = 20;

/// Why a JKS file could not be read. Never carries a secret.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum JksError {
    /// The file does not start with the JKS magic number.
    NotJks,
    /// The file is damaged or not a store this reader understands (what is
    /// wrong, without content).
    Damaged(String),
    /// The integrity digest, keyed by the store password, does not match.
    WrongStorePassword,
    /// The key's check digest, keyed by the key password, does not match.
    WrongKeyPassword,
    /// The key is protected by an algorithm other than the JDK's JKS or
    /// JCEKS one.
    UnsupportedKeyProtection(String),
    /// A JCEKS secret-key entry (its alias), which cannot be read past.
    SecretKeyEntry(String),
    /// A JCEKS key password with a character that is not printable ASCII,
    /// which the JDK refuses for this protection too.
    PasswordNotAscii,
}

/// One entry of a JKS store.
#[derive(Debug)]
pub(super) enum JksEntry {
    /// A private key (still protected) and its certificate chain, leaf first.
    PrivateKey {
        /// The entry's alias.
        alias: String,
        /// The `EncryptedPrivateKeyInfo` DER; see [`recover_key`].
        protected_key: Vec<u8>,
        /// The certificates (DER), leaf first.
        chain: Vec<Vec<u8>>,
    },
    /// A trusted certificate (DER).
    TrustedCertificate {
        /// The certificate.
        certificate: Vec<u8>,
    },
}

/// A bounds-checked big-endian cursor.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], JksError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| {
                JksError::Damaged(format!("the file ends inside {what} (at byte {})", self.at))
            })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u16(&mut self, what: &str) -> Result<u16, JksError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, JksError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A `u32`-length-prefixed byte string.
    fn bytes(&mut self, what: &str) -> Result<&'a [u8], JksError> {
        let n = self.u32(what)?;
        let n = usize::try_from(n)
            .map_err(|_| JksError::Damaged(format!("{what} is longer than memory")))?;
        self.take(n, what)
    }

    /// A `writeUTF` string, decoded leniently (aliases and types are only
    /// shown or compared).
    fn utf(&mut self, what: &str) -> Result<String, JksError> {
        let n = self.u16(what)?;
        Ok(String::from_utf8_lossy(self.take(usize::from(n), what)?).into_owned())
    }

    /// A certificate, with its type name in version 2 stores.
    fn certificate(&mut self, version: u32) -> Result<Vec<u8>, JksError> {
        if version == 2 {
            let kind = self.utf("a certificate type")?;
            if kind != "X.509" {
                return Err(JksError::Damaged(format!(
                    "a certificate of type `{kind}` (only X.509 is supported)"
                )));
            }
        }
        Ok(self.bytes("a certificate")?.to_vec())
    }
}

/// The password as Java hands it to the digests: each UTF-16 code unit as
/// two big-endian bytes.
fn password_bytes(password: &str) -> Vec<u8> {
    password.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

/// Parses a JKS store and checks its integrity digest with `password`;
/// without a password the digest is not checked, as Java's `KeyStore.load`
/// with a null password does (trust stores are read so). Private keys stay
/// protected until [`recover_key`].
pub(super) fn parse(bytes: &[u8], password: Option<&str>) -> Result<Vec<JksEntry>, JksError> {
    let mut c = Cursor { bytes, at: 0 };
    let magic = c
        .take(4, "the magic number")
        .map_err(|_| JksError::NotJks)?;
    let jceks = magic == JCEKS_MAGIC;
    if magic != JKS_MAGIC && !jceks {
        return Err(JksError::NotJks);
    }
    let version = c.u32("the version")?;
    if !(version == 2 || version == 1 && !jceks) {
        return Err(JksError::Damaged(format!(
            "unknown store version {version}"
        )));
    }
    let count = c.u32("the entry count")?;
    // Each iteration consumes bytes or fails, so a hostile count costs nothing.
    let mut entries = Vec::new();
    for _ in 0..count {
        let tag = c.u32("an entry tag")?;
        let alias = c.utf("an alias")?;
        c.take(8, "a creation date")?;
        entries.push(match tag {
            1 => {
                let protected_key = c.bytes("a protected private key")?.to_vec();
                let n = c.u32("a certificate chain length")?;
                let mut chain = Vec::new();
                for _ in 0..n {
                    chain.push(c.certificate(version)?);
                }
                JksEntry::PrivateKey {
                    alias,
                    protected_key,
                    chain,
                }
            }
            2 => JksEntry::TrustedCertificate {
                certificate: c.certificate(version)?,
            },
            3 if jceks => return Err(JksError::SecretKeyEntry(alias)),
            other => {
                return Err(JksError::Damaged(format!(
                    "entry `{alias}` has unknown tag {other}"
                )));
            }
        });
    }
    let signed = c.at;
    let digest = c.take(SHA1_LEN, "the integrity digest")?;
    if c.at != bytes.len() {
        return Err(JksError::Damaged(format!(
            "{} bytes follow the integrity digest",
            bytes.len() - c.at
        )));
    }
    let Some(password) = password else {
        return Ok(entries);
    };
    let expected = Sha1::new()
        .chain_update(password_bytes(password))
        .chain_update(DIGEST_WHITENER)
        .chain_update(&bytes[..signed])
        .finalize();
    if expected.as_slice() != digest {
        return Err(JksError::WrongStorePassword);
    }
    Ok(entries)
}

/// Opens a private key protected by the JDK's JKS key protector with
/// `password`, returning its PKCS#8 DER.
pub(super) fn recover_key(protected_key: &[u8], password: &str) -> Result<Vec<u8>, JksError> {
    let damaged = |e: x509_cert::der::Error| {
        JksError::Damaged(format!("a protected private key is not valid DER ({e})"))
    };
    let mut reader = SliceReader::new(protected_key).map_err(damaged)?;
    let (algorithm, parameters, data) = reader
        .sequence(|r| {
            let algorithm = AlgorithmIdentifierRef::decode(r)?;
            let data = <&OctetStringRef>::decode(r)?;
            let parameters = algorithm.parameters.map(|p| p.to_der()).transpose()?;
            Ok((algorithm.oid.to_string(), parameters, data.as_bytes()))
        })
        .map_err(damaged)?;
    if algorithm == JCEKS_KEY_PROTECTOR_OID {
        return recover_jceks_key(parameters.as_deref().unwrap_or_default(), data, password);
    }
    if algorithm != KEY_PROTECTOR_OID {
        return Err(JksError::UnsupportedKeyProtection(algorithm));
    }
    if data.len() < 2 * SHA1_LEN {
        return Err(JksError::Damaged(
            "a protected private key is too short".to_string(),
        ));
    }
    let (salt, rest) = data.split_at(SHA1_LEN);
    let (encrypted, check) = rest.split_at(rest.len() - SHA1_LEN);
    let password = password_bytes(password);
    let mut key = Vec::with_capacity(encrypted.len());
    let mut block = Sha1::new()
        .chain_update(&password)
        .chain_update(salt)
        .finalize();
    for chunk in encrypted.chunks(SHA1_LEN) {
        key.extend(chunk.iter().zip(block.iter()).map(|(c, k)| c ^ k));
        block = Sha1::new()
            .chain_update(&password)
            .chain_update(block)
            .finalize();
    }
    let expected = Sha1::new()
        .chain_update(&password)
        .chain_update(&key)
        .finalize();
    if expected.as_slice() != check {
        return Err(JksError::WrongKeyPassword);
    }
    Ok(key)
}

/// Opens a key under `PBEWithMD5AndTripleDES` (see the module doc) with
/// the DER of its `PBEParameter`.
fn recover_jceks_key(
    parameters: &[u8],
    encrypted: &[u8],
    password: &str,
) -> Result<Vec<u8>, JksError> {
    use cbc::cipher::block_padding::Pkcs7;
    use cbc::cipher::{BlockModeDecrypt, KeyIvInit};
    use md5::Md5;
    let damaged = |e: x509_cert::der::Error| {
        JksError::Damaged(format!(
            "the JCEKS key protection's parameters are not valid ({e})"
        ))
    };
    let mut reader = SliceReader::new(parameters).map_err(damaged)?;
    let (salt, iterations) = reader
        .sequence(|r| {
            let salt = <&OctetStringRef>::decode(r)?.as_bytes();
            Ok((salt, u64::decode(r)?))
        })
        .map_err(damaged)?;
    if salt.len() != 8 || iterations == 0 || iterations > JCEKS_MAX_ITERATIONS {
        return Err(JksError::Damaged(format!(
            "the JCEKS key protection has a {}-byte salt and {iterations} iterations (8 \
             bytes and 1 to {JCEKS_MAX_ITERATIONS} are read, as by the JDK)",
            salt.len()
        )));
    }
    if !password.chars().all(|c| (' '..='~').contains(&c)) {
        return Err(JksError::PasswordNotAscii);
    }
    let mut salt: [u8; 8] = salt.try_into().unwrap_or_default();
    if salt[..4] == salt[4..] {
        salt[..4].reverse();
    }
    let mut derived = [0u8; 32];
    for (half, out) in salt.chunks(4).zip(derived.chunks_mut(16)) {
        let mut block = half.to_vec();
        for _ in 0..iterations {
            block = Md5::new()
                .chain_update(&block)
                .chain_update(password.as_bytes())
                .finalize()
                .to_vec();
        }
        out.copy_from_slice(&block);
    }
    let (key, iv) = derived.split_at(24);
    let cipher = cbc::Decryptor::<des::TdesEde3>::new_from_slices(key, iv)
        .map_err(|_| JksError::Damaged("a 3DES key of the wrong length".to_string()))?;
    let plain = cipher
        .decrypt_padded_vec::<Pkcs7>(encrypted)
        .map_err(|_| JksError::WrongKeyPassword)?;
    // A wrong password passes the padding check once in ~256 tries; what it
    // yields is then not a key.
    if pkcs8::PrivateKeyInfoRef::from_der(&plain).is_err() {
        return Err(JksError::WrongKeyPassword);
    }
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a JKS store the way the JDK does, for round trips.
    fn protect(key: &[u8], password: &str, salt: [u8; 20]) -> Vec<u8> {
        let pw = password_bytes(password);
        let mut out = salt.to_vec();
        let mut block = Sha1::new().chain_update(&pw).chain_update(salt).finalize();
        for chunk in key.chunks(SHA1_LEN) {
            out.extend(chunk.iter().zip(block.iter()).map(|(c, k)| c ^ k));
            block = Sha1::new().chain_update(&pw).chain_update(block).finalize();
        }
        out.extend(Sha1::new().chain_update(&pw).chain_update(key).finalize());
        // SEQUENCE { SEQUENCE { OID 1.3.6.1.4.1.42.2.17.1.1, NULL }, OCTET STRING }
        let alg = [
            0x30, 0x0E, 0x06, 0x0A, 0x2B, 0x06, 0x01, 0x04, 0x01, 0x2A, 0x02, 0x11, 0x01, 0x01,
            0x05, 0x00,
        ];
        let tlv = |tag: u8, body: &[u8]| {
            let mut v = vec![tag];
            if body.len() >= 0x80 {
                v.push(0x81);
            }
            v.push(body.len() as u8);
            v.extend(body);
            v
        };
        let mut body = alg.to_vec();
        body.extend(tlv(0x04, &out));
        tlv(0x30, &body)
    }

    fn utf(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u16).to_be_bytes());
        out.extend(s.as_bytes());
    }

    fn store(password: &str, key_password: &str) -> Vec<u8> {
        let mut out = JKS_MAGIC.to_vec();
        out.extend(2u32.to_be_bytes());
        out.extend(2u32.to_be_bytes());
        out.extend(1u32.to_be_bytes());
        utf(&mut out, "client");
        out.extend(0u64.to_be_bytes());
        let key = protect(&[7u8; 45], key_password, [3u8; 20]);
        out.extend((key.len() as u32).to_be_bytes());
        out.extend(key);
        out.extend(1u32.to_be_bytes());
        utf(&mut out, "X.509");
        out.extend(3u32.to_be_bytes());
        out.extend([0x30, 0x01, 0x00]);
        out.extend(2u32.to_be_bytes());
        utf(&mut out, "ca");
        out.extend(0u64.to_be_bytes());
        utf(&mut out, "X.509");
        out.extend(2u32.to_be_bytes());
        out.extend([0x30, 0x00]);
        let digest = Sha1::new()
            .chain_update(password_bytes(password))
            .chain_update(DIGEST_WHITENER)
            .chain_update(&out)
            .finalize();
        out.extend(digest);
        out
    }

    #[test]
    fn a_store_round_trips_and_passwords_are_checked() {
        let bytes = store("störe", "kéy");
        let entries = parse(&bytes, Some("störe")).unwrap();
        let [
            JksEntry::PrivateKey {
                alias,
                protected_key,
                chain,
            },
            JksEntry::TrustedCertificate { certificate, .. },
        ] = entries.as_slice()
        else {
            panic!("{entries:?}");
        };
        assert_eq!(alias, "client");
        assert_eq!(chain, &[vec![0x30, 0x01, 0x00]]);
        assert_eq!(certificate, &[0x30, 0x00]);
        assert_eq!(recover_key(protected_key, "kéy").unwrap(), vec![7u8; 45]);
        assert_eq!(
            recover_key(protected_key, "key"),
            Err(JksError::WrongKeyPassword)
        );
        assert_eq!(
            parse(&bytes, Some("store")).unwrap_err(),
            JksError::WrongStorePassword
        );
        // Without a password the entries are read and the digest is not
        // checked, as Java reads trust stores.
        let unchecked = parse(&bytes, None).unwrap();
        assert_eq!(format!("{unchecked:?}"), format!("{entries:?}"));
        let mut tampered = bytes.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert!(parse(&tampered, None).is_ok());
        assert_eq!(
            parse(&tampered, Some("störe")).unwrap_err(),
            JksError::WrongStorePassword
        );
    }

    #[test]
    fn every_truncation_and_a_flipped_byte_are_errors_not_panics() {
        let bytes = store("pw", "pw");
        for n in 0..bytes.len() {
            assert!(parse(&bytes[..n], Some("pw")).is_err(), "truncated at {n}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x55;
            if let Ok(entries) = parse(&b, Some("pw")) {
                panic!("byte {i} flipped still verifies: {entries:?}");
            }
        }
        for junk in [
            &b""[..],
            b"\xFE\xED\xFE\xED\0\0\0\x02\xFF\xFF\xFF\xFF",
            b"PK\x03\x04",
        ] {
            assert!(parse(junk, Some("pw")).is_err());
        }
        for n in 0..60 {
            let _ = recover_key(&vec![0x30; n], "pw");
        }
    }

    #[test]
    fn a_jceks_store_is_read_and_its_secret_key_entries_are_named() {
        let mut jceks = store("pw", "pw");
        jceks[..4].copy_from_slice(&JCEKS_MAGIC);
        let signed = jceks.len() - SHA1_LEN;
        jceks.truncate(signed);
        let digest = Sha1::new()
            .chain_update(password_bytes("pw"))
            .chain_update(DIGEST_WHITENER)
            .chain_update(&jceks)
            .finalize();
        jceks.extend(digest);
        assert_eq!(parse(&jceks, Some("pw")).unwrap().len(), 2);
        // Version 1 is JKS only.
        let mut v1 = jceks.clone();
        v1[4..8].copy_from_slice(&1u32.to_be_bytes());
        assert!(matches!(parse(&v1, None), Err(JksError::Damaged(_))));
        // Tag 3: a secret key, a serialized Java object.
        let mut secret = JCEKS_MAGIC.to_vec();
        secret.extend(2u32.to_be_bytes());
        secret.extend(1u32.to_be_bytes());
        secret.extend(3u32.to_be_bytes());
        utf(&mut secret, "aes");
        secret.extend(0u64.to_be_bytes());
        secret.extend([0xAC, 0xED, 0x00, 0x05]);
        assert_eq!(
            parse(&secret, None).unwrap_err(),
            JksError::SecretKeyEntry("aes".to_string())
        );
    }

    #[test]
    fn jceks_key_protection_with_bad_parameters_is_an_error_not_a_panic() {
        // SEQUENCE { SEQUENCE { OID 1.3.6.1.4.1.42.2.19.1, params }, OCTET STRING }
        let protected = |params: &[u8], data: &[u8]| {
            let oid = [
                0x06, 0x09, 0x2B, 0x06, 0x01, 0x04, 0x01, 0x2A, 0x02, 0x13, 0x01,
            ];
            let mut alg = oid.to_vec();
            alg.extend(params);
            let mut body = vec![0x30, alg.len() as u8];
            body.extend(alg);
            body.extend([0x04, data.len() as u8]);
            body.extend(data);
            let mut der = vec![0x30, body.len() as u8];
            der.extend(body);
            der
        };
        let salt8 = [
            0x30, 0x0D, 0x04, 0x08, 1, 2, 3, 4, 5, 6, 7, 8, 0x02, 0x01, 0x01,
        ];
        let salt4 = [0x30, 0x09, 0x04, 0x04, 1, 2, 3, 4, 0x02, 0x01, 0x01];
        let zero_iterations = [
            0x30, 0x0D, 0x04, 0x08, 1, 2, 3, 4, 5, 6, 7, 8, 0x02, 0x01, 0x00,
        ];
        for params in [&salt4[..], &zero_iterations, b"\x05\x00", b""] {
            let r = recover_key(&protected(params, &[0; 16]), "pw");
            assert!(matches!(r, Err(JksError::Damaged(_))), "{params:?}: {r:?}");
        }
        for n in 0..40 {
            let r = recover_key(&protected(&salt8, &vec![0; n]), "pw");
            assert!(matches!(r, Err(JksError::WrongKeyPassword)), "{n}: {r:?}");
        }
        assert_eq!(
            recover_key(&protected(&salt8, &[0; 16]), "pässword"),
            Err(JksError::PasswordNotAscii)
        );
    }
}
