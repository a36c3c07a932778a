//! Feeds arbitrary bytes as the content of a trust store or a key store
//! (`ssl.*store.location`, type JKS, Kafka's default: the content decides
//! between the JKS reader and PKCS12, as in the JDK) to
//! `MirrorConfig::from_properties`. The first byte chooses which (even: the
//! key store, odd: the trust store); the rest is the file. Content that starts like a JKS store gets
//! its integrity digest computed for the configured password first, so the
//! fuzzer reaches the entries and the private key's own protection, not only
//! the digest check. Every input must give `Ok` or a `ConfigError`, never a
//! panic, and no error may show the passwords.
#![no_main]

use std::io;
use std::path::Path;

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

fuzz_target!(|data: &[u8]| {
    let Some((&selector, data)) = data.split_first() else {
        return;
    };
    let store = if selector & 1 == 0 {
        KEY_STORE
    } else {
        TRUST_STORE
    };
    let mut content = data.to_vec();
    if content.starts_with(&[0xFE, 0xED, 0xFE, 0xED]) {
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
    let props = Properties::parse(&format!("{BASE}{store}")).expect("the fixed config parses");
    if let Err(error) = MirrorConfig::from_properties(&props, &OneFile(content)) {
        let shown = error.to_string();
        assert!(!shown.contains(STORE_PASSWORD) && !shown.contains(KEY_PASSWORD));
    }
});
