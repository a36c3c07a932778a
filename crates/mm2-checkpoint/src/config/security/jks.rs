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
//! Everything is bounds-checked: a damaged or hostile file is an error, never
//! a panic or an allocation larger than the file. Errors never contain key
//! material or passwords. See docs/configuration.md, "TLS".

use sha1::{Digest, Sha1};
use x509_cert::der::asn1::OctetStringRef;
use x509_cert::der::{Decode, Reader, SliceReader};
use x509_cert::spki::AlgorithmIdentifierRef;

/// The first four bytes of a JKS file.
pub(super) const JKS_MAGIC: [u8; 4] = [0xFE, 0xED, 0xFE, 0xED];
/// The first four bytes of a JCEKS file (the JDK's other proprietary format).
pub(super) const JCEKS_MAGIC: [u8; 4] = [0xCE, 0xCE, 0xCE, 0xCE];
/// The text the store's integrity digest mixes in after the password.
const DIGEST_WHITENER: &[u8] = b"Mighty Aphrodite";
/// The JDK's proprietary key protection algorithm.
const KEY_PROTECTOR_OID: &str = "1.3.6.1.4.1.42.2.17.1.1";
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
    /// The key is protected by an algorithm other than the JDK's JKS one.
    UnsupportedKeyProtection(String),
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
    if c.take(4, "the magic number").ok() != Some(&JKS_MAGIC[..]) {
        return Err(JksError::NotJks);
    }
    let version = c.u32("the version")?;
    if version != 1 && version != 2 {
        return Err(JksError::Damaged(format!("unknown JKS version {version}")));
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
    let (algorithm, data) = reader
        .sequence(|r| {
            let algorithm = AlgorithmIdentifierRef::decode(r)?;
            let data = <&OctetStringRef>::decode(r)?;
            Ok((algorithm.oid.to_string(), data.as_bytes()))
        })
        .map_err(damaged)?;
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
}
