//! Sealing and opening TLS records with the portable provider's three AEADs.
//!
//! This is the one hot loop of kafka-lite's portable TLS provider: every byte
//! a TLS connection moves goes through it. It lives in its own crate so the
//! release profile can compile it at `opt-level = 3` (workspace `Cargo.toml`)
//! while the rest of the binary is compiled for size: at the size levels the
//! AES-NI, PCLMULQDQ and NEON code paths of the RustCrypto ciphers are left
//! un-inlined and run about ten times slower (docs/benchmarks.md, "TLS crypto
//! providers"). The functions are not generic, so their machine code is made
//! here, at this crate's level, and not in the calling crate.
//!
//! Each function takes the cipher already keyed, a 12-byte nonce, the
//! additional data and the buffer to transform in place; sealing returns the
//! 16-byte tag. An error means the input was refused (too long for the
//! cipher, or a tag that does not match); it carries no detail, as an AEAD
//! must not say why a record failed.

use aes_gcm::aead::AeadInOut;
use aes_gcm::aead::array::Array;
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;

/// Length of an AEAD tag, for all three ciphers.
pub const TAG_LEN: usize = 16;
/// Length of a nonce, for all three ciphers.
pub const NONCE_LEN: usize = 12;

/// A record was refused: too long to seal, or its tag does not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused;

fn seal_with<
    A: AeadInOut<NonceSize = aes_gcm::aead::consts::U12, TagSize = aes_gcm::aead::consts::U16>,
>(
    cipher: &A,
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    buf: &mut [u8],
) -> Result<[u8; TAG_LEN], Refused> {
    cipher
        .encrypt_inout_detached(&Array::from(*nonce), aad, buf.into())
        .map(Into::into)
        .map_err(|_| Refused)
}

fn open_with<
    A: AeadInOut<NonceSize = aes_gcm::aead::consts::U12, TagSize = aes_gcm::aead::consts::U16>,
>(
    cipher: &A,
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    buf: &mut [u8],
    tag: &[u8; TAG_LEN],
) -> Result<(), Refused> {
    cipher
        .decrypt_inout_detached(&Array::from(*nonce), aad, buf.into(), &Array::from(*tag))
        .map_err(|_| Refused)
}

/// A sealing and an opening function for one cipher: non-generic, so their
/// machine code is made here, at this crate's optimisation level.
macro_rules! record_functions {
    ($cipher:ty, $name:literal, $seal:ident, $open:ident) => {
        #[doc = concat!("Encrypts `buf` in place with ", $name, " and returns the tag.")]
        #[inline(never)]
        pub fn $seal(
            cipher: &$cipher,
            nonce: &[u8; NONCE_LEN],
            aad: &[u8],
            buf: &mut [u8],
        ) -> Result<[u8; TAG_LEN], Refused> {
            seal_with(cipher, nonce, aad, buf)
        }

        #[doc = concat!("Decrypts `buf` in place with ", $name, " after checking `tag`.")]
        #[inline(never)]
        pub fn $open(
            cipher: &$cipher,
            nonce: &[u8; NONCE_LEN],
            aad: &[u8],
            buf: &mut [u8],
            tag: &[u8; TAG_LEN],
        ) -> Result<(), Refused> {
            open_with(cipher, nonce, aad, buf, tag)
        }
    };
}

record_functions!(Aes128Gcm, "AES-128-GCM", seal_aes128_gcm, open_aes128_gcm);
record_functions!(Aes256Gcm, "AES-256-GCM", seal_aes256_gcm, open_aes256_gcm);
record_functions!(
    ChaCha20Poly1305,
    "ChaCha20-Poly1305",
    seal_chacha20_poly1305,
    open_chacha20_poly1305
);

#[cfg(test)]
mod tests {
    use aes_gcm::aead::{Aead, KeyInit, Payload};

    use super::*;

    const NONCE: [u8; NONCE_LEN] = [7; NONCE_LEN];
    const AAD: &[u8] = b"\x17\x03\x03\x00\x30";

    type Seal<A> = fn(&A, &[u8; NONCE_LEN], &[u8], &mut [u8]) -> Result<[u8; TAG_LEN], Refused>;
    type Open<A> =
        fn(&A, &[u8; NONCE_LEN], &[u8], &mut [u8], &[u8; TAG_LEN]) -> Result<(), Refused>;

    /// Seals with our function, compares with the crate's own combined
    /// encryption, opens again, and refuses a changed byte or tag.
    fn round_trip<A: Aead<NonceSize = aes_gcm::aead::consts::U12>>(
        cipher: &A,
        seal: Seal<A>,
        open: Open<A>,
    ) {
        let plain: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut buf = plain.clone();
        let tag = seal(cipher, &NONCE, AAD, &mut buf).expect("sealed");
        let reference = cipher
            .encrypt(
                &Array::from(NONCE),
                Payload {
                    msg: &plain,
                    aad: AAD,
                },
            )
            .expect("reference");
        assert_eq!(&reference[..plain.len()], &buf[..]);
        assert_eq!(&reference[plain.len()..], &tag[..]);

        let mut opened = buf.clone();
        open(cipher, &NONCE, AAD, &mut opened, &tag).expect("opened");
        assert_eq!(opened, plain);

        let mut changed = buf.clone();
        changed[500] ^= 1;
        assert_eq!(open(cipher, &NONCE, AAD, &mut changed, &tag), Err(Refused));
        let mut bad_tag = tag;
        bad_tag[0] ^= 0x80;
        let mut again = buf.clone();
        assert_eq!(
            open(cipher, &NONCE, AAD, &mut again, &bad_tag),
            Err(Refused)
        );
        let mut other_aad = buf;
        assert_eq!(
            open(cipher, &NONCE, b"other", &mut other_aad, &tag),
            Err(Refused)
        );
    }

    #[test]
    fn aes128_gcm_matches_the_crate_and_refuses_changes() {
        round_trip(
            &Aes128Gcm::new(&Array::from([1u8; 16])),
            seal_aes128_gcm,
            open_aes128_gcm,
        );
    }

    #[test]
    fn aes256_gcm_matches_the_crate_and_refuses_changes() {
        round_trip(
            &Aes256Gcm::new(&Array::from([2u8; 32])),
            seal_aes256_gcm,
            open_aes256_gcm,
        );
    }

    #[test]
    fn chacha20_poly1305_matches_the_crate_and_refuses_changes() {
        round_trip(
            &ChaCha20Poly1305::new(&Array::from([3u8; 32])),
            seal_chacha20_poly1305,
            open_chacha20_poly1305,
        );
    }
}
