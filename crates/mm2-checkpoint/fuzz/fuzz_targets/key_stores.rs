//! Feeds arbitrary bytes as the content of a trust store or a key store
//! (`ssl.*store.location`, type JKS, Kafka's default: the content decides
//! between the JKS reader and PKCS12, as in the JDK) to
//! `MirrorConfig::from_properties`, or as the body of an `ENCRYPTED PRIVATE
//! KEY` in a PEM key store beside a fixed certificate (PKCS#8 under PBES2 or
//! PKCS#12's PBES1 schemes, opened with `ssl.key.password`). The first byte
//! chooses which (modulo 3: 0 the key store, 1 the trust store, 2 the
//! encrypted PEM key); the rest is the file or the key's DER. Content that starts like a JKS store gets
//! its integrity digest computed for the configured password first (JCEKS too), so the
//! fuzzer reaches the entries and the private key's own protection, not only
//! the digest check. Every input must give `Ok` or a `ConfigError`, never a
//! panic, and no error may show the passwords.
#![no_main]

use std::io;
use std::path::Path;

use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use mm2_checkpoint::config::{Environment, MirrorConfig, Properties};
use sha1::{Digest, Sha1};

const STORE_PASSWORD: &str = "fuzz-store-pw";
const KEY_PASSWORD: &str = "fuzz-key-pw";
const BASE: &str = "clusters = A, B\n\
    A.bootstrap.servers = a:9092\n\
    B.bootstrap.servers = b:9092\n\
    A->B.enabled = true\n\
    B.security.protocol = SSL\n";
const KEY_STORE: &str = "B.ssl.keystore.location = /store\n\
    B.ssl.keystore.password = fuzz-store-pw\n\
    B.ssl.key.password = fuzz-key-pw\n";
const PEM_KEY_STORE: &str = "B.ssl.keystore.type = PEM\n\
    B.ssl.keystore.location = /store\n\
    B.ssl.key.password = fuzz-key-pw\n";
/// The certificate the seeds' keys belong to, so that a decrypted key
/// reaches the key-certificate check.
const CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----\n\
MIIBbTCCAROgAwIBAgIUPI9QPjKhqqul/7MKN5YxyDGUuEIwCgYIKoZIzj0EAwIw\n\
DDEKMAgGA1UEAwwBdDAeFw0yNjEyMDcwMzM0MDhaFw0yNjEyMTAwMzM0MDhaMAwx\n\
CjAIBgNVBAMMAXQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARtSQAVuc2njKhf\n\
+TIrwS0yuEaihBUgAVbOSOaVGPXjmfo4Keu2pZXiiGLh/N0pHvt57P1h4LkfWHAd\n\
kIKz6bp0o1MwUTAdBgNVHQ4EFgQU9XwA0kvTcJ1fSA2BV97mX9DeyEwwHwYDVR0j\n\
BBgwFoAU9XwA0kvTcJ1fSA2BV97mX9DeyEwwDwYDVR0TAQH/BAUwAwEB/zAKBggq\n\
hkjOPQQDAgNIADBFAiEA5q3UVqymDeckoFeluqEVdtVudBX/X37C7rf0AAHLVm0C\n\
IHyc/HkadAlXeHIcIaJOyayhhBbCJHeyDpA/nXsLRSqO\n\
-----END CERTIFICATE-----\n";
const TRUST_STORE: &str = "B.ssl.truststore.location = /store\n\
    B.ssl.truststore.password = fuzz-store-pw\n";

/// A host whose only file is `/store`.
struct OneFile(Vec<u8>);

impl Environment for OneFile {
    fn var(&self, _name: &str) -> Option<String> {
        None
    }

    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        if path == Path::new("/store") {
            Ok(self.0.clone())
        } else {
            Err(io::Error::new(io::ErrorKind::NotFound, "no such file"))
        }
    }
}

/// `data` with the JKS integrity digest for the store password appended, if
/// it starts like a JKS or JCEKS store (both have the same digest).
fn with_jks_digest(data: &[u8]) -> Vec<u8> {
    let mut content = data.to_vec();
    if content.starts_with(&[0xFE, 0xED, 0xFE, 0xED]) || content.starts_with(&[0xCE; 4]) {
        let password: Vec<u8> = STORE_PASSWORD
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        let digest = Sha1::new()
            .chain_update(password)
            .chain_update(b"Mighty Aphrodite")
            .chain_update(&content)
            .finalize();
        content.extend_from_slice(&digest);
    }
    content
}

/// The certificate, then `der` as an `ENCRYPTED PRIVATE KEY` section.
fn encrypted_pem(der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = format!("{CERTIFICATE}-----BEGIN ENCRYPTED PRIVATE KEY-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str("-----END ENCRYPTED PRIVATE KEY-----\n");
    pem
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, data)) = data.split_first() else {
        return;
    };
    let (store, content) = match selector % 3 {
        0 => (KEY_STORE, with_jks_digest(data)),
        1 => (TRUST_STORE, with_jks_digest(data)),
        _ => (PEM_KEY_STORE, encrypted_pem(data).into_bytes()),
    };
    let props = Properties::parse(&format!("{BASE}{store}")).expect("the fixed config parses");
    if let Err(error) = MirrorConfig::from_properties(&props, &OneFile(content)) {
        let shown = error.to_string();
        assert!(!shown.contains(STORE_PASSWORD) && !shown.contains(KEY_PASSWORD));
    }
});
