//! Client-certificate keys: ECDSA P-256/P-384 (`p256`, `p384`; RFC 6979
//! deterministic nonces) and RSA with PKCS#1 v1.5 or PSS padding (`rsa`,
//! blinded with fresh randomness), loaded from PKCS#8, PKCS#1 or SEC1 DER.
//!
//! The `rsa` crate's private-key operation is not constant time
//! (RUSTSEC-2023-0071, "Marvin"); docs/reliability.md says what that means
//! for a client certificate and why ECDSA keys are preferable.

use std::fmt;
use std::sync::Arc;

use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::signature::{RandomizedSigner, SignatureEncoding};
use rustls::pki_types::{PrivateKeyDer, SubjectPublicKeyInfoDer};
use rustls::sign::{Signer, SigningKey};
use rustls::{SignatureAlgorithm, SignatureScheme};
use sha2::{Sha256, Sha384, Sha512};

#[derive(Debug)]
pub(super) struct Provider;

fn unusable(what: &str) -> rustls::Error {
    rustls::Error::General(format!(
        "the portable TLS provider cannot use this private key: {what}"
    ))
}

impl rustls::crypto::KeyProvider for Provider {
    fn load_private_key(
        &self,
        key: PrivateKeyDer<'static>,
    ) -> Result<Arc<dyn SigningKey>, rustls::Error> {
        match key {
            PrivateKeyDer::Pkcs8(der) => {
                let der = der.secret_pkcs8_der();
                if let Ok(key) =
                    <rsa::PrivateKey as rsa::pkcs8::DecodePrivateKey>::from_pkcs8_der(der)
                {
                    return Ok(Arc::new(RsaKey(Arc::new(key))));
                }
                if let Ok(key) =
                    <p256::ecdsa::SigningKey as p256::pkcs8::DecodePrivateKey>::from_pkcs8_der(der)
                {
                    return Ok(Arc::new(EcdsaKey::P256(Arc::new(key))));
                }
                if let Ok(key) =
                    <p384::ecdsa::SigningKey as p384::pkcs8::DecodePrivateKey>::from_pkcs8_der(der)
                {
                    return Ok(Arc::new(EcdsaKey::P384(Arc::new(key))));
                }
                Err(unusable(
                    "a PKCS#8 key that is neither RSA nor ECDSA on P-256 or P-384",
                ))
            }
            PrivateKeyDer::Pkcs1(der) => rsa::PrivateKey::from_pkcs1_der(der.secret_pkcs1_der())
                .map(|key| Arc::new(RsaKey(Arc::new(key))) as Arc<dyn SigningKey>)
                .map_err(|_| unusable("a PKCS#1 RSA key that does not parse")),
            PrivateKeyDer::Sec1(der) => {
                let der = der.secret_sec1_der();
                if let Ok(key) = p256::SecretKey::from_sec1_der(der) {
                    return Ok(Arc::new(EcdsaKey::P256(Arc::new(key.into()))));
                }
                if let Ok(key) = p384::SecretKey::from_sec1_der(der) {
                    return Ok(Arc::new(EcdsaKey::P384(Arc::new(key.into()))));
                }
                Err(unusable("a SEC1 key on a curve other than P-256 or P-384"))
            }
            _ => Err(unusable("an unknown key format")),
        }
    }
}

/// An ECDSA key; TLS ties each curve to one hash.
#[derive(Clone)]
enum EcdsaKey {
    P256(Arc<p256::ecdsa::SigningKey>),
    P384(Arc<p384::ecdsa::SigningKey>),
}

impl fmt::Debug for EcdsaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EcdsaKey::P256(_) => "EcdsaKey::P256",
            EcdsaKey::P384(_) => "EcdsaKey::P384",
        })
    }
}

impl EcdsaKey {
    fn scheme(&self) -> SignatureScheme {
        match self {
            EcdsaKey::P256(_) => SignatureScheme::ECDSA_NISTP256_SHA256,
            EcdsaKey::P384(_) => SignatureScheme::ECDSA_NISTP384_SHA384,
        }
    }
}

impl SigningKey for EcdsaKey {
    fn choose_scheme(&self, offered: &[SignatureScheme]) -> Option<Box<dyn Signer>> {
        offered
            .contains(&self.scheme())
            .then(|| Box::new(self.clone()) as Box<dyn Signer>)
    }

    fn public_key(&self) -> Option<SubjectPublicKeyInfoDer<'static>> {
        use p256::pkcs8::EncodePublicKey;
        let der = match self {
            EcdsaKey::P256(key) => key.verifying_key().to_public_key_der().ok()?,
            EcdsaKey::P384(key) => key.verifying_key().to_public_key_der().ok()?,
        };
        Some(SubjectPublicKeyInfoDer::from(der.as_bytes().to_vec()))
    }

    fn algorithm(&self) -> SignatureAlgorithm {
        SignatureAlgorithm::ECDSA
    }
}

impl Signer for EcdsaKey {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, rustls::Error> {
        use p256::ecdsa::signature::Signer as _;
        let failed = |_| rustls::Error::General("ECDSA signing failed".into());
        Ok(match self {
            EcdsaKey::P256(key) => {
                let sig: p256::ecdsa::Signature = key.try_sign(message).map_err(failed)?;
                sig.to_der().as_bytes().to_vec()
            }
            EcdsaKey::P384(key) => {
                let sig: p384::ecdsa::Signature = key.try_sign(message).map_err(failed)?;
                sig.to_der().as_bytes().to_vec()
            }
        })
    }

    fn scheme(&self) -> SignatureScheme {
        EcdsaKey::scheme(self)
    }
}

/// An RSA key (never printed).
struct RsaKey(Arc<rsa::PrivateKey>);

impl fmt::Debug for RsaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RsaKey")
    }
}

/// What an RSA key can sign, best first (PSS before PKCS#1 v1.5; TLS 1.3
/// only offers PSS).
const RSA_SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::RSA_PSS_SHA256,
    SignatureScheme::RSA_PSS_SHA384,
    SignatureScheme::RSA_PSS_SHA512,
    SignatureScheme::RSA_PKCS1_SHA256,
    SignatureScheme::RSA_PKCS1_SHA384,
    SignatureScheme::RSA_PKCS1_SHA512,
];

impl SigningKey for RsaKey {
    fn choose_scheme(&self, offered: &[SignatureScheme]) -> Option<Box<dyn Signer>> {
        let scheme = RSA_SCHEMES.iter().find(|s| offered.contains(s))?;
        Some(Box::new(RsaSigner {
            key: self.0.clone(),
            scheme: *scheme,
        }))
    }

    fn public_key(&self) -> Option<SubjectPublicKeyInfoDer<'static>> {
        use rsa::pkcs8::EncodePublicKey;
        let der = self.0.to_public_key().to_public_key_der().ok()?;
        Some(SubjectPublicKeyInfoDer::from(der.as_bytes().to_vec()))
    }

    fn algorithm(&self) -> SignatureAlgorithm {
        SignatureAlgorithm::RSA
    }
}

struct RsaSigner {
    key: Arc<rsa::PrivateKey>,
    scheme: SignatureScheme,
}

impl fmt::Debug for RsaSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RsaSigner({:?})", self.scheme)
    }
}

impl Signer for RsaSigner {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, rustls::Error> {
        let key = (*self.key).clone();
        let rng = &mut getrandom::SysRng;
        macro_rules! sign {
            ($module:ident, $hash:ty) => {
                rsa::$module::SigningKey::<$hash>::new(key)
                    .try_sign_with_rng(rng, message)
                    .map(|sig| sig.to_vec())
            };
        }
        match self.scheme {
            SignatureScheme::RSA_PSS_SHA256 => sign!(pss, Sha256),
            SignatureScheme::RSA_PSS_SHA384 => sign!(pss, Sha384),
            SignatureScheme::RSA_PSS_SHA512 => sign!(pss, Sha512),
            SignatureScheme::RSA_PKCS1_SHA256 => sign!(pkcs1v15, Sha256),
            SignatureScheme::RSA_PKCS1_SHA384 => sign!(pkcs1v15, Sha384),
            SignatureScheme::RSA_PKCS1_SHA512 => sign!(pkcs1v15, Sha512),
            other => {
                return Err(rustls::Error::General(format!(
                    "RSA cannot sign with {other:?}"
                )));
            }
        }
        .map_err(|_| rustls::Error::General("RSA signing failed".into()))
    }

    fn scheme(&self) -> SignatureScheme {
        self.scheme
    }
}
