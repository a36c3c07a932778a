//! Signature verification for certificates and handshakes: ECDSA on P-256
//! and P-384 (`p256`, `p384`), RSA PKCS#1 v1.5 and RSA-PSS (`rsa`), Ed25519
//! (`ed25519-dalek`), with SHA-2 from `sha2`. The same set, and the same
//! scheme-to-algorithm mapping, as rustls' own providers.

use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::signature::Verifier;
use rsa::traits::PublicKeyParts;
use rustls::SignatureScheme;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{
    AlgorithmIdentifier, InvalidSignature, SignatureVerificationAlgorithm, alg_id,
};
use sha2::{Digest, Sha256, Sha384, Sha512};

pub(super) static ALGORITHMS: WebPkiSupportedAlgorithms = WebPkiSupportedAlgorithms {
    all: &[
        ECDSA_P256_SHA256,
        ECDSA_P256_SHA384,
        ECDSA_P384_SHA256,
        ECDSA_P384_SHA384,
        ED25519,
        RSA_PSS_SHA256,
        RSA_PSS_SHA384,
        RSA_PSS_SHA512,
        RSA_PKCS1_SHA256,
        RSA_PKCS1_SHA384,
        RSA_PKCS1_SHA512,
    ],
    mapping: &[
        (
            SignatureScheme::ECDSA_NISTP384_SHA384,
            &[ECDSA_P384_SHA384, ECDSA_P256_SHA384],
        ),
        (
            SignatureScheme::ECDSA_NISTP256_SHA256,
            &[ECDSA_P256_SHA256, ECDSA_P384_SHA256],
        ),
        (SignatureScheme::ED25519, &[ED25519]),
        (SignatureScheme::RSA_PSS_SHA512, &[RSA_PSS_SHA512]),
        (SignatureScheme::RSA_PSS_SHA384, &[RSA_PSS_SHA384]),
        (SignatureScheme::RSA_PSS_SHA256, &[RSA_PSS_SHA256]),
        (SignatureScheme::RSA_PKCS1_SHA512, &[RSA_PKCS1_SHA512]),
        (SignatureScheme::RSA_PKCS1_SHA384, &[RSA_PKCS1_SHA384]),
        (SignatureScheme::RSA_PKCS1_SHA256, &[RSA_PKCS1_SHA256]),
    ],
};

/// The hash an algorithm signs.
#[derive(Debug, Clone, Copy)]
enum Hash {
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    fn digest(self, message: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha256 => Sha256::digest(message).to_vec(),
            Hash::Sha384 => Sha384::digest(message).to_vec(),
            Hash::Sha512 => Sha512::digest(message).to_vec(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Curve {
    P256,
    P384,
}

#[derive(Debug)]
struct Ecdsa {
    curve: Curve,
    hash: Hash,
    signature_alg_id: AlgorithmIdentifier,
}

static ECDSA_P256_SHA256: &dyn SignatureVerificationAlgorithm = &Ecdsa {
    curve: Curve::P256,
    hash: Hash::Sha256,
    signature_alg_id: alg_id::ECDSA_SHA256,
};
static ECDSA_P256_SHA384: &dyn SignatureVerificationAlgorithm = &Ecdsa {
    curve: Curve::P256,
    hash: Hash::Sha384,
    signature_alg_id: alg_id::ECDSA_SHA384,
};
static ECDSA_P384_SHA256: &dyn SignatureVerificationAlgorithm = &Ecdsa {
    curve: Curve::P384,
    hash: Hash::Sha256,
    signature_alg_id: alg_id::ECDSA_SHA256,
};
static ECDSA_P384_SHA384: &dyn SignatureVerificationAlgorithm = &Ecdsa {
    curve: Curve::P384,
    hash: Hash::Sha384,
    signature_alg_id: alg_id::ECDSA_SHA384,
};

impl SignatureVerificationAlgorithm for Ecdsa {
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        match self.curve {
            Curve::P256 => alg_id::ECDSA_P256,
            Curve::P384 => alg_id::ECDSA_P384,
        }
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature_alg_id
    }

    /// `public_key` is the SEC1 point, `signature` the ASN.1 DER
    /// `Ecdsa-Sig-Value`.
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        use p256::ecdsa::signature::hazmat::PrehashVerifier;
        let prehash = self.hash.digest(message);
        match self.curve {
            Curve::P256 => {
                let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                    .map_err(|_| InvalidSignature)?;
                let sig =
                    p256::ecdsa::Signature::from_der(signature).map_err(|_| InvalidSignature)?;
                key.verify_prehash(&prehash, &sig)
            }
            Curve::P384 => {
                let key = p384::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                    .map_err(|_| InvalidSignature)?;
                let sig =
                    p384::ecdsa::Signature::from_der(signature).map_err(|_| InvalidSignature)?;
                key.verify_prehash(&prehash, &sig)
            }
        }
        .map_err(|_| InvalidSignature)
    }
}

#[derive(Debug)]
struct Ed25519;

static ED25519: &dyn SignatureVerificationAlgorithm = &Ed25519;

impl SignatureVerificationAlgorithm for Ed25519 {
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ED25519
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ED25519
    }

    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        let key: &[u8; 32] = public_key.try_into().map_err(|_| InvalidSignature)?;
        let key = ed25519_dalek::VerifyingKey::from_bytes(key).map_err(|_| InvalidSignature)?;
        let sig = ed25519_dalek::Signature::from_slice(signature).map_err(|_| InvalidSignature)?;
        key.verify_strict(message, &sig)
            .map_err(|_| InvalidSignature)
    }
}

#[derive(Debug, Clone, Copy)]
enum Padding {
    Pkcs1,
    Pss,
}

#[derive(Debug)]
struct Rsa {
    padding: Padding,
    hash: Hash,
    signature_alg_id: AlgorithmIdentifier,
}

static RSA_PKCS1_SHA256: &dyn SignatureVerificationAlgorithm = &Rsa {
    padding: Padding::Pkcs1,
    hash: Hash::Sha256,
    signature_alg_id: alg_id::RSA_PKCS1_SHA256,
};
static RSA_PKCS1_SHA384: &dyn SignatureVerificationAlgorithm = &Rsa {
    padding: Padding::Pkcs1,
    hash: Hash::Sha384,
    signature_alg_id: alg_id::RSA_PKCS1_SHA384,
};
static RSA_PKCS1_SHA512: &dyn SignatureVerificationAlgorithm = &Rsa {
    padding: Padding::Pkcs1,
    hash: Hash::Sha512,
    signature_alg_id: alg_id::RSA_PKCS1_SHA512,
};
static RSA_PSS_SHA256: &dyn SignatureVerificationAlgorithm = &Rsa {
    padding: Padding::Pss,
    hash: Hash::Sha256,
    signature_alg_id: alg_id::RSA_PSS_SHA256,
};
static RSA_PSS_SHA384: &dyn SignatureVerificationAlgorithm = &Rsa {
    padding: Padding::Pss,
    hash: Hash::Sha384,
    signature_alg_id: alg_id::RSA_PSS_SHA384,
};
static RSA_PSS_SHA512: &dyn SignatureVerificationAlgorithm = &Rsa {
    padding: Padding::Pss,
    hash: Hash::Sha512,
    signature_alg_id: alg_id::RSA_PSS_SHA512,
};

/// Like ring's `RSA_*_2048_8192_*`: smaller moduli are refused.
const RSA_MIN_BITS: usize = 2048;

impl SignatureVerificationAlgorithm for Rsa {
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::RSA_ENCRYPTION
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature_alg_id
    }

    /// `public_key` is the PKCS#1 `RSAPublicKey` DER.
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        let key = rsa::PublicKey::from_pkcs1_der(public_key).map_err(|_| InvalidSignature)?;
        if key.size() * 8 < RSA_MIN_BITS {
            return Err(InvalidSignature);
        }
        macro_rules! verify {
            ($module:ident, $hash:ty) => {{
                let sig =
                    rsa::$module::Signature::try_from(signature).map_err(|_| InvalidSignature)?;
                rsa::$module::VerifyingKey::<$hash>::new(key).verify(message, &sig)
            }};
        }
        match (self.padding, self.hash) {
            (Padding::Pkcs1, Hash::Sha256) => verify!(pkcs1v15, Sha256),
            (Padding::Pkcs1, Hash::Sha384) => verify!(pkcs1v15, Sha384),
            (Padding::Pkcs1, Hash::Sha512) => verify!(pkcs1v15, Sha512),
            // PSS with a salt as long as the hash, as TLS 1.3 requires
            // (RFC 8446 §4.2.3) and ring checks.
            (Padding::Pss, Hash::Sha256) => verify!(pss, Sha256),
            (Padding::Pss, Hash::Sha384) => verify!(pss, Sha384),
            (Padding::Pss, Hash::Sha512) => verify!(pss, Sha512),
        }
        .map_err(|_| InvalidSignature)
    }
}
