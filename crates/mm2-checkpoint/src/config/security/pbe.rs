//! PKCS#12 password-based encryption (RFC 7292, appendices B and C) of
//! PKCS#8 private keys: the "PBES1" form `openssl pkcs8 -topk8 -v1
//! PBE-SHA1-3DES` writes and Kafka's own PEM tests use, which the `pkcs8`
//! crate does not read (it knows PBES2 only).
//!
//! The schemes are the ones Java's `EncryptedPrivateKeyInfo` opens
//! (SunJCE's `PBEWithSHA1AndDESede`, `PBEWithSHA1AndRC2_128` and
//! `PBEWithSHA1AndRC2_40`): the key and IV come from the RFC 7292 key
//! derivation over SHA-1 with the password as a BMPString, the cipher is
//! CBC with PKCS#7 padding. Every step is a RustCrypto crate already built
//! for PKCS12 stores (`pkcs12`'s key derivation, `cbc`, `des`, `rc2`).
//! Errors never carry the password or key bytes. See docs/configuration.md,
//! "TLS".

use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockCipherDecrypt, BlockModeDecrypt, KeyInit, KeyIvInit};
use pkcs12::kdf::{Pkcs12KeyType, derive_key_utf8};
use sha1::Sha1;
use x509_cert::der::asn1::{ObjectIdentifier, OctetStringRef};
use x509_cert::der::{Decode, Reader, SliceReader};
use x509_cert::spki::AlgorithmIdentifierRef;

/// The most iterations accepted (here and for PKCS12 stores' MACs and
/// PBKDF2): the JDK's PKCS12 key store refuses more
/// (`PKCS12KeyStore.MAX_ITERATION_COUNT`), and a hostile file must not make
/// `validate` spin.
pub(super) const MAX_ITERATIONS: u64 = 5_000_000;

/// A PKCS#12 password-based encryption scheme Java reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pkcs12Pbe {
    /// `pbeWithSHAAnd3-KeyTripleDES-CBC` (1.2.840.113549.1.12.1.3).
    Sha1TripleDes,
    /// `pbeWithSHAAnd128BitRC2-CBC` (1.2.840.113549.1.12.1.5).
    Sha1Rc2With128BitKey,
    /// `pbeWithSHAAnd40BitRC2-CBC` (1.2.840.113549.1.12.1.6).
    Sha1Rc2With40BitKey,
}

/// The arc every PKCS#12 PBE scheme sits under (`pkcs-12PbeIds`).
const PKCS12_PBE_IDS: &str = "1.2.840.113549.1.12.1.";

impl Pkcs12Pbe {
    /// The scheme `oid` names. `Ok(None)`: not a PKCS#12 PBE scheme at all;
    /// `Err(name)`: one not read here (RC4, which needs a cipher nothing else
    /// in the build uses, and two-key 3DES, which Java does not read).
    pub(super) fn of(oid: &ObjectIdentifier) -> Result<Option<Self>, &'static str> {
        let text = oid.to_string();
        let Some(arc) = text.strip_prefix(PKCS12_PBE_IDS) else {
            return Ok(None);
        };
        match arc {
            "3" => Ok(Some(Self::Sha1TripleDes)),
            "5" => Ok(Some(Self::Sha1Rc2With128BitKey)),
            "6" => Ok(Some(Self::Sha1Rc2With40BitKey)),
            "1" => Err("pbeWithSHAAnd128BitRC4"),
            "2" => Err("pbeWithSHAAnd40BitRC4"),
            "4" => Err("pbeWithSHAAnd2-KeyTripleDES-CBC"),
            _ => Err("an unknown PKCS#12 PBE scheme"),
        }
    }

    /// The name Java gives the scheme, for messages.
    pub(super) fn java_name(self) -> &'static str {
        match self {
            Self::Sha1TripleDes => "PBEWithSHA1AndDESede",
            Self::Sha1Rc2With128BitKey => "PBEWithSHA1AndRC2_128",
            Self::Sha1Rc2With40BitKey => "PBEWithSHA1AndRC2_40",
        }
    }

    fn key_len(self) -> usize {
        match self {
            Self::Sha1TripleDes => 24,
            Self::Sha1Rc2With128BitKey => 16,
            Self::Sha1Rc2With40BitKey => 5,
        }
    }
}

/// Why PKCS#12 PBE data could not be decrypted. Never carries a secret.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PbeError {
    /// The parameters are not a `PBEParameter` (what is wrong, no content).
    BadParameters(String),
    /// The padding of the decrypted data is wrong: the password is wrong
    /// (or the data damaged).
    WrongPassword,
    /// The password has a character outside Unicode's basic plane, which a
    /// BMPString cannot hold.
    PasswordNotBmp,
}

/// `PBEParameter ::= SEQUENCE { salt OCTET STRING, iterations INTEGER }`.
fn parameters(params: &[u8]) -> Result<(&[u8], i32), PbeError> {
    let bad = |e: x509_cert::der::Error| PbeError::BadParameters(format!("not DER ({e})"));
    let mut reader = SliceReader::new(params).map_err(bad)?;
    let (salt, iterations) = reader
        .sequence(|r| {
            let salt = <&OctetStringRef>::decode(r)?.as_bytes();
            let iterations = u64::decode(r)?;
            Ok((salt, iterations))
        })
        .map_err(bad)?;
    reader.finish().map_err(bad)?;
    if iterations == 0 || iterations > MAX_ITERATIONS {
        return Err(PbeError::BadParameters(format!(
            "{iterations} iterations (1 to {MAX_ITERATIONS} are accepted, as by the JDK)"
        )));
    }
    let iterations = i32::try_from(iterations)
        .map_err(|_| PbeError::BadParameters("too many iterations".to_string()))?;
    Ok((salt, iterations))
}

/// Decrypts `data` under `scheme` with the DER of its `PBEParameter`
/// (`params`) and `password`.
pub(super) fn decrypt(
    scheme: Pkcs12Pbe,
    params: &[u8],
    data: &[u8],
    password: &str,
) -> Result<Vec<u8>, PbeError> {
    let (salt, iterations) = parameters(params)?;
    let derive = |kind, len| {
        derive_key_utf8::<Sha1>(password, salt, kind, iterations, len)
            .map_err(|_| PbeError::PasswordNotBmp)
    };
    let key = derive(Pkcs12KeyType::EncryptionKey, scheme.key_len())?;
    let iv = derive(Pkcs12KeyType::Iv, 8)?;
    match scheme {
        Pkcs12Pbe::Sha1TripleDes => cbc_decrypt::<des::TdesEde3>(&key, &iv, data),
        Pkcs12Pbe::Sha1Rc2With128BitKey | Pkcs12Pbe::Sha1Rc2With40BitKey => {
            cbc_decrypt::<rc2::Rc2>(&key, &iv, data)
        }
    }
}

fn cbc_decrypt<C>(key: &[u8], iv: &[u8], data: &[u8]) -> Result<Vec<u8>, PbeError>
where
    C: BlockCipherDecrypt + KeyInit,
{
    // RC2's effective key length is its key's length, as RFC 7292 wants.
    let cipher = cbc::Decryptor::<C>::new_from_slices(key, iv)
        .map_err(|_| PbeError::BadParameters("a key or IV of the wrong length".to_string()))?;
    cipher
        .decrypt_padded_vec::<Pkcs7>(data)
        .map_err(|_| PbeError::WrongPassword)
}

/// The scheme, its parameters' DER and the encrypted data of an
/// `EncryptedPrivateKeyInfo` under a PKCS#12 scheme.
pub(super) type Pkcs12Encrypted<'a> = (Pkcs12Pbe, Vec<u8>, &'a [u8]);

/// Reads `EncryptedPrivateKeyInfo ::= SEQUENCE { AlgorithmIdentifier,
/// OCTET STRING }` far enough to tell a PKCS#12 scheme. `Ok(None)`: a
/// valid structure under another scheme (PBES2), for the `pkcs8` crate;
/// `Err(why)`: not such a structure, or a PKCS#12 scheme not read here.
pub(super) fn pkcs12_encrypted(der: &[u8]) -> Result<Option<Pkcs12Encrypted<'_>>, String> {
    use x509_cert::der::Encode as _;
    let bad = |e: x509_cert::der::Error| format!("not an encrypted PKCS#8 key ({e})");
    let mut reader = SliceReader::new(der).map_err(bad)?;
    let (oid, params, data) = reader
        .sequence(|r| {
            let algorithm = AlgorithmIdentifierRef::decode(r)?;
            let data = <&OctetStringRef>::decode(r)?.as_bytes();
            Ok((algorithm.oid, algorithm.parameters, data))
        })
        .map_err(bad)?;
    reader.finish().map_err(bad)?;
    let scheme = match Pkcs12Pbe::of(&oid) {
        Ok(None) => return Ok(None),
        Ok(Some(scheme)) => scheme,
        Err(name) => {
            return Err(format!(
                "encrypted with {name} ({oid}), which mm2-checkpoint does not read; \
                 re-encrypt it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`"
            ));
        }
    };
    let params = params
        .ok_or_else(|| {
            format!(
                "encrypted with {} but without its parameters",
                scheme.java_name()
            )
        })?
        .to_der()
        .map_err(bad)?;
    Ok(Some((scheme, params, data)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `PBEParameter` with `salt` and `iterations` (short forms only).
    fn pbe_parameter(salt: &[u8], iterations: u16) -> Vec<u8> {
        let mut body = vec![0x04, salt.len() as u8];
        body.extend(salt);
        body.extend([0x02, 0x03, 0x00]);
        body.extend(iterations.to_be_bytes());
        let mut der = vec![0x30, body.len() as u8];
        der.extend(body);
        der
    }

    #[test]
    fn the_schemes_java_reads_are_known_and_the_others_are_named() {
        let oid = |s: &str| ObjectIdentifier::new_unwrap(s);
        assert_eq!(
            Pkcs12Pbe::of(&oid("1.2.840.113549.1.12.1.3")),
            Ok(Some(Pkcs12Pbe::Sha1TripleDes))
        );
        assert_eq!(
            Pkcs12Pbe::of(&oid("1.2.840.113549.1.12.1.6")),
            Ok(Some(Pkcs12Pbe::Sha1Rc2With40BitKey))
        );
        assert_eq!(
            Pkcs12Pbe::of(&oid("1.2.840.113549.1.12.1.1")),
            Err("pbeWithSHAAnd128BitRC4")
        );
        assert_eq!(Pkcs12Pbe::of(&oid("1.2.840.113549.1.5.13")), Ok(None));
    }

    #[test]
    fn bad_parameters_are_errors_not_panics() {
        let data = [0u8; 16];
        for params in [
            &b""[..],
            b"\x30\x00",
            b"\x30\x03\x04\x01\x00",
            b"\x04\x01\x00\x02\x01\x01",
        ] {
            assert!(matches!(
                decrypt(Pkcs12Pbe::Sha1TripleDes, params, &data, "pw"),
                Err(PbeError::BadParameters(_))
            ));
        }
        let too_many = [
            0x30, 0x09, 0x04, 0x01, 0x00, 0x02, 0x04, 0x7F, 0xFF, 0xFF, 0xFF,
        ];
        assert!(matches!(
            decrypt(Pkcs12Pbe::Sha1TripleDes, &too_many, &data, "pw"),
            Err(PbeError::BadParameters(why)) if why.contains("iterations")
        ));
        // Not a whole number of blocks: never a panic.
        let params = pbe_parameter(&[1; 8], 1);
        for n in 0..20 {
            let _ = decrypt(Pkcs12Pbe::Sha1Rc2With40BitKey, &params, &vec![0; n], "pw");
        }
    }

    #[test]
    fn every_truncation_of_the_structure_is_an_error_not_a_panic() {
        // SEQUENCE { SEQUENCE { OID 1.2.840.113549.1.12.1.3, PBEParameter }, OCTET STRING }
        let params = pbe_parameter(&[9; 8], 2048);
        let oid = [
            0x06, 0x0A, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x0C, 0x01, 0x03,
        ];
        let mut alg = oid.to_vec();
        alg.extend(&params);
        let mut body = vec![0x30, alg.len() as u8];
        body.extend(alg);
        body.extend([0x04, 0x08, 1, 2, 3, 4, 5, 6, 7, 8]);
        let mut der = vec![0x30, body.len() as u8];
        der.extend(body);
        let (scheme, found, data) = pkcs12_encrypted(&der).unwrap().unwrap();
        assert_eq!(scheme, Pkcs12Pbe::Sha1TripleDes);
        assert_eq!(found, params);
        assert_eq!(data, &[1, 2, 3, 4, 5, 6, 7, 8]);
        for n in 0..der.len() {
            assert!(pkcs12_encrypted(&der[..n]).is_err(), "truncated at {n}");
        }
    }
}
