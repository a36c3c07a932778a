//! Record protection: AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305 from
//! the RustCrypto `aes-gcm` and `chacha20poly1305` crates, framed the way
//! TLS 1.2 (RFC 5288, RFC 7905) and TLS 1.3 (RFC 8446 §5.2) want it.
//!
//! A cipher that cannot be keyed (impossible with the key lengths rustls
//! derives) fails every record with an error instead of panicking.

use std::marker::PhantomData;

use aes_gcm::aead::consts::{U12, U16};
use aes_gcm::aead::{AeadCore, AeadInOut, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use rustls::crypto::cipher::{
    AeadKey, InboundOpaqueMessage, InboundPlainMessage, Iv, KeyBlockShape, MessageDecrypter,
    MessageEncrypter, NONCE_LEN, Nonce, OutboundOpaqueMessage, OutboundPlainMessage,
    PrefixedPayload, Tls12AeadAlgorithm, Tls13AeadAlgorithm, UnsupportedOperationError,
    make_tls12_aad, make_tls13_aad,
};
use rustls::{ConnectionTrafficSecrets, ContentType, ProtocolVersion};

use kafka_lite_aead::{Refused, TAG_LEN};
/// TLS 1.2 AES-GCM: the 8 explicit nonce bytes sent before each record.
const GCM_EXPLICIT_NONCE_LEN: usize = 8;
/// The largest plaintext a record may carry (RFC 8446 §5.1).
const MAX_FRAGMENT_LEN: usize = 16384;

/// One of the three AEADs, as TLS uses it.
pub(super) trait TlsAead:
    AeadInOut + AeadCore<NonceSize = U12, TagSize = U16> + KeyInit + Send + Sync + 'static
{
    /// Key length in bytes.
    const KEY_LEN: usize;
    /// TLS 1.2 framing: AES-GCM has a 4-byte implicit salt plus an 8-byte
    /// explicit nonce; ChaCha20-Poly1305 a 12-byte implicit IV only.
    const TLS12_GCM: bool;
    /// The secrets in rustls' export form.
    fn secrets(key: AeadKey, iv: Iv) -> ConnectionTrafficSecrets;
    /// Seals `buf` in place, returning the tag (`kafka_lite_aead`, compiled
    /// for speed).
    fn seal_record(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut [u8],
    ) -> Result<[u8; TAG_LEN], Refused>;
    /// Opens `buf` in place after checking `tag` (`kafka_lite_aead`).
    fn open_record(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), Refused>;
}

/// The two record calls of [`TlsAead`] for one cipher, by name in
/// `kafka_lite_aead`.
macro_rules! record_calls {
    ($seal:ident, $open:ident) => {
        fn seal_record(
            &self,
            nonce: &[u8; NONCE_LEN],
            aad: &[u8],
            buf: &mut [u8],
        ) -> Result<[u8; TAG_LEN], Refused> {
            kafka_lite_aead::$seal(self, nonce, aad, buf)
        }
        fn open_record(
            &self,
            nonce: &[u8; NONCE_LEN],
            aad: &[u8],
            buf: &mut [u8],
            tag: &[u8; TAG_LEN],
        ) -> Result<(), Refused> {
            kafka_lite_aead::$open(self, nonce, aad, buf, tag)
        }
    };
}

impl TlsAead for Aes128Gcm {
    const KEY_LEN: usize = 16;
    const TLS12_GCM: bool = true;
    fn secrets(key: AeadKey, iv: Iv) -> ConnectionTrafficSecrets {
        ConnectionTrafficSecrets::Aes128Gcm { key, iv }
    }
    record_calls!(seal_aes128_gcm, open_aes128_gcm);
}

impl TlsAead for Aes256Gcm {
    const KEY_LEN: usize = 32;
    const TLS12_GCM: bool = true;
    fn secrets(key: AeadKey, iv: Iv) -> ConnectionTrafficSecrets {
        ConnectionTrafficSecrets::Aes256Gcm { key, iv }
    }
    record_calls!(seal_aes256_gcm, open_aes256_gcm);
}

impl TlsAead for ChaCha20Poly1305 {
    const KEY_LEN: usize = 32;
    const TLS12_GCM: bool = false;
    fn secrets(key: AeadKey, iv: Iv) -> ConnectionTrafficSecrets {
        ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv }
    }
    record_calls!(seal_chacha20_poly1305, open_chacha20_poly1305);
}

/// The rustls algorithm object for AEAD `A`.
pub(super) struct Algorithm<A>(PhantomData<fn() -> A>);

impl<A> Algorithm<A> {
    pub(super) const NEW: Self = Algorithm(PhantomData);
}

pub(super) static AES_128_GCM: Algorithm<Aes128Gcm> = Algorithm::NEW;
pub(super) static AES_256_GCM: Algorithm<Aes256Gcm> = Algorithm::NEW;
pub(super) static CHACHA20_POLY1305: Algorithm<ChaCha20Poly1305> = Algorithm::NEW;

fn keyed<A: TlsAead>(key: &AeadKey) -> Option<A> {
    A::new_from_slice(key.as_ref()).ok()
}

impl<A: TlsAead> Tls13AeadAlgorithm for Algorithm<A> {
    fn encrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageEncrypter> {
        Box::new(Tls13Cipher::<A>(keyed(&key), iv))
    }

    fn decrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageDecrypter> {
        Box::new(Tls13Cipher::<A>(keyed(&key), iv))
    }

    fn key_len(&self) -> usize {
        A::KEY_LEN
    }

    fn extract_keys(
        &self,
        key: AeadKey,
        iv: Iv,
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        Ok(A::secrets(key, iv))
    }
}

impl<A: TlsAead> Tls12AeadAlgorithm for Algorithm<A> {
    fn encrypter(&self, key: AeadKey, iv: &[u8], explicit: &[u8]) -> Box<dyn MessageEncrypter> {
        if A::TLS12_GCM {
            Box::new(Tls12GcmEncrypter::<A>(keyed(&key), gcm_iv(iv, explicit)))
        } else {
            Box::new(Tls12ChaCha::<A>(keyed(&key), iv_of(iv)))
        }
    }

    fn decrypter(&self, key: AeadKey, iv: &[u8]) -> Box<dyn MessageDecrypter> {
        if A::TLS12_GCM {
            let mut salt = [0u8; 4];
            if iv.len() == salt.len() {
                salt.copy_from_slice(iv);
            }
            Box::new(Tls12GcmDecrypter::<A>(keyed(&key), salt))
        } else {
            Box::new(Tls12ChaCha::<A>(keyed(&key), iv_of(iv)))
        }
    }

    fn key_block_shape(&self) -> KeyBlockShape {
        if A::TLS12_GCM {
            KeyBlockShape {
                enc_key_len: A::KEY_LEN,
                fixed_iv_len: 4,
                explicit_nonce_len: GCM_EXPLICIT_NONCE_LEN,
            }
        } else {
            KeyBlockShape {
                enc_key_len: A::KEY_LEN,
                fixed_iv_len: NONCE_LEN,
                explicit_nonce_len: 0,
            }
        }
    }

    fn extract_keys(
        &self,
        key: AeadKey,
        iv: &[u8],
        explicit: &[u8],
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        let iv = if A::TLS12_GCM {
            gcm_iv(iv, explicit)
        } else {
            iv_of(iv)
        };
        Ok(A::secrets(key, iv))
    }
}

/// A 12-byte IV from `iv` (zero-padded or cut if rustls ever gave another
/// length, which its key block shapes rule out).
fn iv_of(iv: &[u8]) -> Iv {
    let mut out = [0u8; NONCE_LEN];
    let n = iv.len().min(NONCE_LEN);
    out[..n].copy_from_slice(&iv[..n]);
    Iv::new(out)
}

/// TLS 1.2 AES-GCM nonce: the 4-byte salt from the key block, then the
/// 8-byte explicit part; we XOR the sequence number into it like TLS 1.3
/// does (as rustls' own providers do), so nonces never repeat.
fn gcm_iv(salt: &[u8], explicit: &[u8]) -> Iv {
    let mut iv = [0u8; NONCE_LEN];
    let s = salt.len().min(4);
    iv[..s].copy_from_slice(&salt[..s]);
    let e = explicit.len().min(GCM_EXPLICIT_NONCE_LEN);
    iv[4..4 + e].copy_from_slice(&explicit[..e]);
    Iv::new(iv)
}

fn tag_of(bytes: &[u8]) -> Result<[u8; TAG_LEN], rustls::Error> {
    bytes.try_into().map_err(|_| rustls::Error::DecryptError)
}

/// Seals `buf` in place and returns the tag.
fn seal<A: TlsAead>(
    cipher: &Option<A>,
    nonce: [u8; NONCE_LEN],
    aad: &[u8],
    buf: &mut [u8],
) -> Result<[u8; TAG_LEN], rustls::Error> {
    let cipher = cipher.as_ref().ok_or(rustls::Error::EncryptError)?;
    cipher
        .seal_record(&nonce, aad, buf)
        .map_err(|_| rustls::Error::EncryptError)
}

/// Opens `buf` in place, checking `tag`.
fn open<A: TlsAead>(
    cipher: &Option<A>,
    nonce: [u8; NONCE_LEN],
    aad: &[u8],
    buf: &mut [u8],
    tag: &[u8],
) -> Result<(), rustls::Error> {
    let cipher = cipher.as_ref().ok_or(rustls::Error::DecryptError)?;
    cipher
        .open_record(&nonce, aad, buf, &tag_of(tag)?)
        .map_err(|_| rustls::Error::DecryptError)
}

/// TLS 1.3 record protection (both directions).
struct Tls13Cipher<A>(Option<A>, Iv);

impl<A: TlsAead> MessageEncrypter for Tls13Cipher<A> {
    fn encrypt(
        &mut self,
        m: OutboundPlainMessage<'_>,
        seq: u64,
    ) -> Result<OutboundOpaqueMessage, rustls::Error> {
        let total_len = self.encrypted_payload_len(m.payload.len());
        let mut payload = PrefixedPayload::with_capacity(total_len);
        payload.extend_from_chunks(&m.payload);
        payload.extend_from_slice(&m.typ.to_array());
        let nonce = Nonce::new(&self.1, seq).0;
        let aad = make_tls13_aad(total_len);
        let tag = seal(&self.0, nonce, &aad, payload.as_mut())?;
        payload.extend_from_slice(&tag);
        Ok(OutboundOpaqueMessage::new(
            ContentType::ApplicationData,
            // TLS 1.3 records claim to be TLS 1.2 (RFC 8446 §5.1).
            ProtocolVersion::TLSv1_2,
            payload,
        ))
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        payload_len + 1 + TAG_LEN
    }
}

impl<A: TlsAead> MessageDecrypter for Tls13Cipher<A> {
    fn decrypt<'a>(
        &mut self,
        mut m: InboundOpaqueMessage<'a>,
        seq: u64,
    ) -> Result<InboundPlainMessage<'a>, rustls::Error> {
        let payload = &mut m.payload;
        if payload.len() < TAG_LEN {
            return Err(rustls::Error::DecryptError);
        }
        let nonce = Nonce::new(&self.1, seq).0;
        let aad = make_tls13_aad(payload.len());
        let plain_len = payload.len() - TAG_LEN;
        let (cipher, tag) = payload.split_at_mut(plain_len);
        open(&self.0, nonce, &aad, cipher, tag)?;
        payload.truncate(plain_len);
        m.into_tls13_unpadded_message()
    }
}

/// TLS 1.2 ChaCha20-Poly1305 (RFC 7905): 12-byte implicit IV, no explicit
/// nonce.
struct Tls12ChaCha<A>(Option<A>, Iv);

impl<A: TlsAead> MessageEncrypter for Tls12ChaCha<A> {
    fn encrypt(
        &mut self,
        m: OutboundPlainMessage<'_>,
        seq: u64,
    ) -> Result<OutboundOpaqueMessage, rustls::Error> {
        let total_len = self.encrypted_payload_len(m.payload.len());
        let mut payload = PrefixedPayload::with_capacity(total_len);
        payload.extend_from_chunks(&m.payload);
        let nonce = Nonce::new(&self.1, seq).0;
        let aad = make_tls12_aad(seq, m.typ, m.version, m.payload.len());
        let tag = seal(&self.0, nonce, &aad, payload.as_mut())?;
        payload.extend_from_slice(&tag);
        Ok(OutboundOpaqueMessage::new(m.typ, m.version, payload))
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        payload_len + TAG_LEN
    }
}

impl<A: TlsAead> MessageDecrypter for Tls12ChaCha<A> {
    fn decrypt<'a>(
        &mut self,
        mut m: InboundOpaqueMessage<'a>,
        seq: u64,
    ) -> Result<InboundPlainMessage<'a>, rustls::Error> {
        if m.payload.len() < TAG_LEN {
            return Err(rustls::Error::DecryptError);
        }
        let nonce = Nonce::new(&self.1, seq).0;
        let plain_len = m.payload.len() - TAG_LEN;
        let aad = make_tls12_aad(seq, m.typ, m.version, plain_len);
        let (cipher, tag) = m.payload.split_at_mut(plain_len);
        open(&self.0, nonce, &aad, cipher, tag)?;
        m.payload.truncate(plain_len);
        Ok(m.into_plain_message())
    }
}

/// TLS 1.2 AES-GCM sealing (RFC 5288): the explicit nonce goes first.
struct Tls12GcmEncrypter<A>(Option<A>, Iv);

impl<A: TlsAead> MessageEncrypter for Tls12GcmEncrypter<A> {
    fn encrypt(
        &mut self,
        m: OutboundPlainMessage<'_>,
        seq: u64,
    ) -> Result<OutboundOpaqueMessage, rustls::Error> {
        let total_len = self.encrypted_payload_len(m.payload.len());
        let mut payload = PrefixedPayload::with_capacity(total_len);
        let nonce = Nonce::new(&self.1, seq).0;
        let aad = make_tls12_aad(seq, m.typ, m.version, m.payload.len());
        payload.extend_from_slice(&nonce[4..]);
        payload.extend_from_chunks(&m.payload);
        let tag = seal(
            &self.0,
            nonce,
            &aad,
            &mut payload.as_mut()[GCM_EXPLICIT_NONCE_LEN..],
        )?;
        payload.extend_from_slice(&tag);
        Ok(OutboundOpaqueMessage::new(m.typ, m.version, payload))
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        payload_len + GCM_EXPLICIT_NONCE_LEN + TAG_LEN
    }
}

/// TLS 1.2 AES-GCM opening: the nonce is the salt plus the record's
/// explicit part.
struct Tls12GcmDecrypter<A>(Option<A>, [u8; 4]);

impl<A: TlsAead> MessageDecrypter for Tls12GcmDecrypter<A> {
    fn decrypt<'a>(
        &mut self,
        mut m: InboundOpaqueMessage<'a>,
        seq: u64,
    ) -> Result<InboundPlainMessage<'a>, rustls::Error> {
        if m.payload.len() < GCM_EXPLICIT_NONCE_LEN + TAG_LEN {
            return Err(rustls::Error::DecryptError);
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce[..4].copy_from_slice(&self.1);
        nonce[4..].copy_from_slice(&m.payload[..GCM_EXPLICIT_NONCE_LEN]);
        let plain_len = m.payload.len() - GCM_EXPLICIT_NONCE_LEN - TAG_LEN;
        let aad = make_tls12_aad(seq, m.typ, m.version, plain_len);
        let (_explicit, rest) = m.payload.split_at_mut(GCM_EXPLICIT_NONCE_LEN);
        let (cipher, tag) = rest.split_at_mut(plain_len);
        open(&self.0, nonce, &aad, cipher, tag)?;
        if plain_len > MAX_FRAGMENT_LEN {
            return Err(rustls::Error::PeerSentOversizedRecord);
        }
        Ok(m.into_plain_message_range(GCM_EXPLICIT_NONCE_LEN..GCM_EXPLICIT_NONCE_LEN + plain_len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8439 §2.8.2: the ChaCha20-Poly1305 AEAD test vector, through the
    /// same `seal`/`open` the records use.
    #[test]
    fn chacha20_poly1305_matches_rfc8439() {
        let key: Vec<u8> = (0x80u8..=0x9f).collect();
        let nonce = [
            0x07, 0x00, 0x00, 0x00, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,
        ];
        let aad = [
            0x50, 0x51, 0x52, 0x53, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,
        ];
        let plain = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
        let cipher = ChaCha20Poly1305::new_from_slice(&key).ok();
        let mut buf = plain.to_vec();
        let tag = seal(&cipher, nonce, &aad, &mut buf).unwrap();
        assert_eq!(&buf[..4], &[0xd3, 0x1a, 0x8d, 0x34]);
        assert_eq!(
            tag.as_slice(),
            &[
                0x1a, 0xe1, 0x0b, 0x59, 0x4f, 0x09, 0xe2, 0x6a, 0x7e, 0x90, 0x2e, 0xcb, 0xd0, 0x60,
                0x06, 0x91
            ]
        );
        open(&cipher, nonce, &aad, &mut buf, &tag).unwrap();
        assert_eq!(buf, plain);
        let mut bad = tag;
        bad[0] ^= 1;
        assert!(open(&cipher, nonce, &aad, &mut buf, &bad).is_err());
    }

    #[test]
    fn a_cipher_without_a_key_fails_records_instead_of_panicking() {
        let mut buf = [0u8; 4];
        assert!(seal::<Aes128Gcm>(&None, [0; 12], &[], &mut buf).is_err());
        assert!(open::<Aes128Gcm>(&None, [0; 12], &[], &mut buf, &[0; 16]).is_err());
        assert!(
            open(
                &Aes128Gcm::new_from_slice(&[0; 16]).ok(),
                [0; 12],
                &[],
                &mut buf,
                &[0; 3]
            )
            .is_err()
        );
    }
}
