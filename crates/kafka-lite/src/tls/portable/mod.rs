//! The portable rustls crypto provider: pure Rust, no assembly that needs a
//! particular CPU, no C. Composed from RustCrypto crates (`aes-gcm`,
//! `chacha20poly1305`, `x25519-dalek`, `p256`, `p384`, `rsa`,
//! `ed25519-dalek`, `sha2`, `hmac`), with rustls' own HKDF (TLS 1.3) and PRF
//! (TLS 1.2) built over HMAC, and `getrandom` for randomness.
//!
//! It is what runs where graviola cannot (docs/tls-providers.md): CPUs
//! without AES/AVX2/ADX (x86_64) or without the crypto extensions
//! (aarch64), and every other architecture. The `aes` crate still uses
//! AES-NI/ARMv8 AES when the CPU has them; without them AES-GCM is a slow
//! bitsliced software version, so [`provider`] can put ChaCha20-Poly1305
//! first.
//!
//! Cipher suites: TLS 1.3 AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305; TLS
//! 1.2 ECDHE-ECDSA and ECDHE-RSA with the same three AEADs. Key exchange:
//! X25519, secp256r1, secp384r1. Verification: ECDSA P-256/P-384,
//! RSA PKCS#1 and PSS with SHA-256/384/512, Ed25519. Signing (client
//! certificates): ECDSA P-256/P-384 and RSA.

mod aead;
mod kx;
mod sign;
mod verify;

use rustls::crypto::tls12::PrfUsingHmac;
use rustls::crypto::tls13::HkdfUsingHmac;
use rustls::crypto::{CipherSuiteCommon, CryptoProvider, KeyExchangeAlgorithm, hash, hmac};
use rustls::{
    CipherSuite, SignatureScheme, SupportedCipherSuite, Tls12CipherSuite, Tls13CipherSuite,
};

/// The portable provider. With `chacha_first` (a CPU without AES
/// hardware) the ChaCha20-Poly1305 suites are offered before the AES-GCM
/// ones of the same TLS version.
pub fn provider(chacha_first: bool) -> CryptoProvider {
    CryptoProvider {
        cipher_suites: cipher_suites(chacha_first),
        kx_groups: kx::ALL_KX_GROUPS.to_vec(),
        signature_verification_algorithms: verify::ALGORITHMS,
        secure_random: &Random,
        key_provider: &sign::Provider,
    }
}

/// The suites in offer order.
pub fn cipher_suites(chacha_first: bool) -> Vec<SupportedCipherSuite> {
    if chacha_first {
        vec![
            TLS13_CHACHA20_POLY1305_SHA256,
            TLS13_AES_128_GCM_SHA256,
            TLS13_AES_256_GCM_SHA384,
            TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
            TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        ]
    } else {
        vec![
            TLS13_AES_128_GCM_SHA256,
            TLS13_AES_256_GCM_SHA384,
            TLS13_CHACHA20_POLY1305_SHA256,
            TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ]
    }
}

#[derive(Debug)]
struct Random;

impl rustls::crypto::SecureRandom for Random {
    fn fill(&self, buf: &mut [u8]) -> Result<(), rustls::crypto::GetRandomFailed> {
        getrandom::fill(buf).map_err(|_| rustls::crypto::GetRandomFailed)
    }
}

/// SHA-256 and SHA-384 for the handshake transcript.
macro_rules! hash_impl {
    ($name:ident, $context:ident, $digest:ty, $algorithm:expr) => {
        struct $name;

        impl hash::Hash for $name {
            fn start(&self) -> Box<dyn hash::Context> {
                Box::new($context(<$digest as sha2::Digest>::new()))
            }

            fn hash(&self, data: &[u8]) -> hash::Output {
                hash::Output::new(&<$digest as sha2::Digest>::digest(data))
            }

            fn algorithm(&self) -> hash::HashAlgorithm {
                $algorithm
            }

            fn output_len(&self) -> usize {
                <$digest as sha2::Digest>::output_size()
            }
        }

        struct $context($digest);

        impl hash::Context for $context {
            fn fork_finish(&self) -> hash::Output {
                hash::Output::new(&sha2::Digest::finalize(self.0.clone()))
            }

            fn fork(&self) -> Box<dyn hash::Context> {
                Box::new($context(self.0.clone()))
            }

            fn finish(self: Box<Self>) -> hash::Output {
                hash::Output::new(&sha2::Digest::finalize(self.0))
            }

            fn update(&mut self, data: &[u8]) {
                sha2::Digest::update(&mut self.0, data);
            }
        }
    };
}

hash_impl!(
    Sha256,
    Sha256Context,
    sha2::Sha256,
    hash::HashAlgorithm::SHA256
);
hash_impl!(
    Sha384,
    Sha384Context,
    sha2::Sha384,
    hash::HashAlgorithm::SHA384
);

/// HMAC-SHA-256 and HMAC-SHA-384, under rustls' HKDF and PRF.
macro_rules! hmac_impl {
    ($name:ident, $key:ident, $digest:ty) => {
        struct $name;

        impl hmac::Hmac for $name {
            fn with_key(&self, key: &[u8]) -> Box<dyn hmac::Key> {
                // HMAC takes keys of any length (RFC 2104 §3).
                Box::new($key(
                    <::hmac::Hmac<$digest> as ::hmac::KeyInit>::new_from_slice(key)
                        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length")),
                ))
            }

            fn hash_output_len(&self) -> usize {
                <$digest as sha2::Digest>::output_size()
            }
        }

        struct $key(::hmac::Hmac<$digest>);

        impl hmac::Key for $key {
            fn sign_concat(&self, first: &[u8], middle: &[&[u8]], last: &[u8]) -> hmac::Tag {
                use ::hmac::Mac;
                let mut mac = self.0.clone();
                mac.update(first);
                for part in middle {
                    mac.update(part);
                }
                mac.update(last);
                hmac::Tag::new(&mac.finalize().into_bytes())
            }

            fn tag_len(&self) -> usize {
                <$digest as sha2::Digest>::output_size()
            }
        }
    };
}

hmac_impl!(HmacSha256, HmacSha256Key, sha2::Sha256);
hmac_impl!(HmacSha384, HmacSha384Key, sha2::Sha384);

/// AES-GCM may encrypt 2^24.5 full records per key (RFC 8446 §5.5); rustls
/// rekeys before that.
const AES_GCM_LIMIT: u64 = 1 << 24;

/// TLS 1.3 `TLS_AES_128_GCM_SHA256`.
pub static TLS13_AES_128_GCM_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls13(&Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: CipherSuite::TLS13_AES_128_GCM_SHA256,
            hash_provider: &Sha256,
            confidentiality_limit: AES_GCM_LIMIT,
        },
        hkdf_provider: &HkdfUsingHmac(&HmacSha256),
        aead_alg: &aead::AES_128_GCM,
        quic: None,
    });

/// TLS 1.3 `TLS_AES_256_GCM_SHA384`.
pub static TLS13_AES_256_GCM_SHA384: SupportedCipherSuite =
    SupportedCipherSuite::Tls13(&Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: CipherSuite::TLS13_AES_256_GCM_SHA384,
            hash_provider: &Sha384,
            confidentiality_limit: AES_GCM_LIMIT,
        },
        hkdf_provider: &HkdfUsingHmac(&HmacSha384),
        aead_alg: &aead::AES_256_GCM,
        quic: None,
    });

/// TLS 1.3 `TLS_CHACHA20_POLY1305_SHA256`.
pub static TLS13_CHACHA20_POLY1305_SHA256: SupportedCipherSuite =
    SupportedCipherSuite::Tls13(&Tls13CipherSuite {
        common: CipherSuiteCommon {
            suite: CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
            hash_provider: &Sha256,
            confidentiality_limit: u64::MAX,
        },
        hkdf_provider: &HkdfUsingHmac(&HmacSha256),
        aead_alg: &aead::CHACHA20_POLY1305,
        quic: None,
    });

macro_rules! tls12_suite {
    ($(#[$doc:meta])* $name:ident, $hash:expr, $hmac:expr, $limit:expr, $sign:expr, $aead:expr) => {
        $(#[$doc])*
        pub static $name: SupportedCipherSuite = SupportedCipherSuite::Tls12(&Tls12CipherSuite {
            common: CipherSuiteCommon {
                suite: CipherSuite::$name,
                hash_provider: $hash,
                confidentiality_limit: $limit,
            },
            kx: KeyExchangeAlgorithm::ECDHE,
            sign: $sign,
            aead_alg: $aead,
            prf_provider: &PrfUsingHmac($hmac),
        });
    };
}

tls12_suite!(
    /// TLS 1.2 `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`.
    TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    &Sha256,
    &HmacSha256,
    AES_GCM_LIMIT,
    TLS12_ECDSA_SCHEMES,
    &aead::AES_128_GCM
);
tls12_suite!(
    /// TLS 1.2 `TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384`.
    TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    &Sha384,
    &HmacSha384,
    AES_GCM_LIMIT,
    TLS12_ECDSA_SCHEMES,
    &aead::AES_256_GCM
);
tls12_suite!(
    /// TLS 1.2 `TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256`.
    TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    &Sha256,
    &HmacSha256,
    u64::MAX,
    TLS12_ECDSA_SCHEMES,
    &aead::CHACHA20_POLY1305
);
tls12_suite!(
    /// TLS 1.2 `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`.
    TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    &Sha256,
    &HmacSha256,
    AES_GCM_LIMIT,
    TLS12_RSA_SCHEMES,
    &aead::AES_128_GCM
);
tls12_suite!(
    /// TLS 1.2 `TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`.
    TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    &Sha384,
    &HmacSha384,
    AES_GCM_LIMIT,
    TLS12_RSA_SCHEMES,
    &aead::AES_256_GCM
);
tls12_suite!(
    /// TLS 1.2 `TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256`.
    TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    &Sha256,
    &HmacSha256,
    u64::MAX,
    TLS12_RSA_SCHEMES,
    &aead::CHACHA20_POLY1305
);

static TLS12_ECDSA_SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::ECDSA_NISTP384_SHA384,
    SignatureScheme::ECDSA_NISTP256_SHA256,
    SignatureScheme::ED25519,
];

static TLS12_RSA_SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::RSA_PSS_SHA512,
    SignatureScheme::RSA_PSS_SHA384,
    SignatureScheme::RSA_PSS_SHA256,
    SignatureScheme::RSA_PKCS1_SHA512,
    SignatureScheme::RSA_PKCS1_SHA384,
    SignatureScheme::RSA_PKCS1_SHA256,
];

#[cfg(test)]
mod tests;
