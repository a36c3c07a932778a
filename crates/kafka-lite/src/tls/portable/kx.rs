//! Key exchange: X25519 (`x25519-dalek`), secp256r1 and secp384r1 (`p256`,
//! `p384`), ephemeral keys from the operating system's random source.

use p256::elliptic_curve::Generate;
use rustls::crypto::{ActiveKeyExchange, GetRandomFailed, SharedSecret, SupportedKxGroup};
use rustls::{NamedGroup, PeerMisbehaved};

/// X25519 first (fast everywhere, constant time), then the NIST curves.
pub(super) static ALL_KX_GROUPS: &[&dyn SupportedKxGroup] = &[&X25519, &P256, &P384];

fn invalid_share() -> rustls::Error {
    rustls::Error::from(PeerMisbehaved::InvalidKeyShare)
}

/// X25519 (RFC 7748).
#[derive(Debug)]
pub(super) struct X25519;

impl SupportedKxGroup for X25519 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, rustls::Error> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|_| GetRandomFailed)?;
        let secret = x25519_dalek::StaticSecret::from(seed);
        seed.fill(0);
        let public = x25519_dalek::PublicKey::from(&secret).to_bytes();
        Ok(Box::new(ActiveX25519 { secret, public }))
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

struct ActiveX25519 {
    secret: x25519_dalek::StaticSecret,
    public: [u8; 32],
}

impl ActiveKeyExchange for ActiveX25519 {
    fn complete(self: Box<Self>, peer: &[u8]) -> Result<SharedSecret, rustls::Error> {
        let peer: [u8; 32] = peer.try_into().map_err(|_| invalid_share())?;
        let shared = self
            .secret
            .diffie_hellman(&x25519_dalek::PublicKey::from(peer));
        // An all-zero result means the peer sent a low-order point
        // (RFC 7748 §6.1; RFC 8446 §7.4.2 asks to abort).
        if !shared.was_contributory() {
            return Err(invalid_share());
        }
        Ok(SharedSecret::from(&shared.as_bytes()[..]))
    }

    fn pub_key(&self) -> &[u8] {
        &self.public
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

macro_rules! nist_group {
    ($group:ident, $active:ident, $curve:ident, $name:expr, $point_len:expr) => {
        #[derive(Debug)]
        pub(super) struct $group;

        impl SupportedKxGroup for $group {
            fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, rustls::Error> {
                let secret = $curve::SecretKey::try_generate_from_rng(&mut getrandom::SysRng)
                    .map_err(|_| GetRandomFailed)?;
                // SEC1 uncompressed form (0x04 || x || y), the only one TLS
                // 1.3 allows (RFC 8446 §4.2.8.2).
                let public = secret.public_key().to_sec1_bytes().into_vec();
                Ok(Box::new($active { secret, public }))
            }

            fn name(&self) -> NamedGroup {
                $name
            }
        }

        struct $active {
            secret: $curve::SecretKey,
            public: Vec<u8>,
        }

        impl ActiveKeyExchange for $active {
            fn complete(self: Box<Self>, peer: &[u8]) -> Result<SharedSecret, rustls::Error> {
                if peer.len() != $point_len || peer[0] != 0x04 {
                    return Err(invalid_share());
                }
                let peer = $curve::PublicKey::from_sec1_bytes(peer).map_err(|_| invalid_share())?;
                let shared =
                    $curve::ecdh::diffie_hellman(self.secret.to_nonzero_scalar(), peer.as_affine());
                Ok(SharedSecret::from(&shared.raw_secret_bytes()[..]))
            }

            fn pub_key(&self) -> &[u8] {
                &self.public
            }

            fn group(&self) -> NamedGroup {
                $name
            }
        }
    };
}

nist_group!(P256, ActiveP256, p256, NamedGroup::secp256r1, 65);
nist_group!(P384, ActiveP384, p384, NamedGroup::secp384r1, 97);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_agrees_with_itself_and_rejects_bad_shares() {
        for group in ALL_KX_GROUPS {
            let a = group.start().unwrap();
            let b = group.start().unwrap();
            let b_pub = b.pub_key().to_vec();
            let ab = a.complete(&b_pub).unwrap();
            let a2 = group.start().unwrap();
            let a2_pub = a2.pub_key().to_vec();
            let ba2 = b.complete(&a2_pub).unwrap();
            assert_ne!(ab.secret_bytes(), ba2.secret_bytes(), "{:?}", group.name());

            let c = group.start().unwrap();
            let d = group.start().unwrap();
            let (c_pub, d_pub) = (c.pub_key().to_vec(), d.pub_key().to_vec());
            assert_eq!(
                c.complete(&d_pub).unwrap().secret_bytes(),
                d.complete(&c_pub).unwrap().secret_bytes(),
                "{:?}",
                group.name()
            );

            let short = &b_pub[..b_pub.len() - 1];
            assert!(group.start().unwrap().complete(short).is_err());
        }
        // The all-zero X25519 point is of low order.
        assert!(X25519.start().unwrap().complete(&[0u8; 32]).is_err());
        // A P-256 share that is not on the curve.
        let mut off_curve = vec![0x04];
        off_curve.extend([0x01u8; 64]);
        assert!(P256.start().unwrap().complete(&off_curve).is_err());
    }
}
