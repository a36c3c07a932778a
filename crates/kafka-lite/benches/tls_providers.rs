//! The portable rustls crypto provider against graviola on this machine
//! (docs/benchmarks.md, "TLS crypto providers"): a full TLS 1.3 handshake
//! (client and server in this process, in-memory pipe, X25519) with an
//! ECDSA P-256 and an RSA-2048 server certificate, and bulk records (16 KiB
//! of application data encrypted by one side and decrypted by the other)
//! with each TLS 1.3 AEAD. Certificates are made with the `openssl`
//! command when the bench starts.
//!
//! `cargo bench -p kafka-lite --bench tls_providers`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_main};
use kafka_lite::portable;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{
    ClientConfig, ClientConnection, Connection, RootCertStore, ServerConfig, ServerConnection,
};

const RECORD: usize = 16 * 1024;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a `localhost` server certificate signed by it, both with keys
/// made by `newkey` (openssl's `-newkey` arguments), in `dir/<name>-*`.
fn make_pki(dir: &Path, name: &str, newkey: &[&str]) {
    let ca_key = format!("{name}-ca.key");
    let ca = format!("{name}-ca.pem");
    let mut args = vec!["req", "-x509"];
    args.extend(newkey);
    args.extend([
        "-nodes",
        "-keyout",
        &ca_key,
        "-out",
        &ca,
        "-days",
        "2",
        "-subj",
        "/CN=bench-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign",
    ]);
    openssl(dir, &args);
    let (key, csr, pem, ext) = (
        format!("{name}-server.key"),
        format!("{name}-server.csr"),
        format!("{name}-server.pem"),
        format!("{name}-server.ext"),
    );
    std::fs::write(
        dir.join(&ext),
        "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost\n",
    )
    .unwrap();
    let mut args = vec!["req", "-new"];
    args.extend(newkey);
    args.extend([
        "-nodes",
        "-keyout",
        &key,
        "-out",
        &csr,
        "-subj",
        "/CN=localhost",
    ]);
    openssl(dir, &args);
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &pem,
            "-extfile",
            &ext,
        ],
    );
}

struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn new() -> Pki {
        let dir = std::env::temp_dir().join(format!("kafka-lite-bench-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        make_pki(
            &dir,
            "ecdsa",
            &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
        );
        make_pki(&dir, "rsa", &["-newkey", "rsa:2048"]);
        Pki { dir }
    }

    fn certs(&self, file: &str) -> Vec<CertificateDer<'static>> {
        CertificateDer::pem_file_iter(self.dir.join(file))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn configs(
        &self,
        name: &str,
        provider: &CryptoProvider,
    ) -> (Arc<ClientConfig>, Arc<ServerConfig>) {
        let provider = Arc::new(provider.clone());
        let mut roots = RootCertStore::empty();
        for cert in self.certs(&format!("{name}-ca.pem")) {
            roots.add(cert).unwrap();
        }
        let client = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let key =
            PrivateKeyDer::from_pem_file(self.dir.join(format!("{name}-server.key"))).unwrap();
        let server = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(self.certs(&format!("{name}-server.pem")), key)
            .unwrap();
        (Arc::new(client), Arc::new(server))
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn transfer(from: &mut Connection, to: &mut Connection, buf: &mut Vec<u8>) {
    buf.clear();
    while from.wants_write() {
        from.write_tls(buf).unwrap();
    }
    let mut rest = &buf[..];
    while !rest.is_empty() {
        to.read_tls(&mut rest).unwrap();
        to.process_new_packets().unwrap();
    }
}

fn connect(client: &Arc<ClientConfig>, server: &Arc<ServerConfig>) -> (Connection, Connection) {
    let mut c = Connection::from(
        ClientConnection::new(client.clone(), ServerName::try_from("localhost").unwrap()).unwrap(),
    );
    let mut s = Connection::from(ServerConnection::new(server.clone()).unwrap());
    let mut buf = Vec::new();
    while c.is_handshaking() || s.is_handshaking() {
        transfer(&mut c, &mut s, &mut buf);
        transfer(&mut s, &mut c, &mut buf);
    }
    (c, s)
}

/// The providers to compare: portable (the suite is fixed per bench, so
/// its offer order does not matter) and graviola where it is built and runs.
fn providers() -> Vec<(&'static str, CryptoProvider)> {
    #[allow(unused_mut)]
    let mut out = vec![("portable", portable::provider(false))];
    #[cfg(all(
        feature = "graviola",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    if kafka_lite::graviola_cpu_support().is_ok() {
        out.push(("graviola", rustls_graviola::default_provider()));
    }
    out
}

fn handshakes(c: &mut Criterion) {
    let pki = Pki::new();
    let mut group = c.benchmark_group("tls13_handshake");
    group.sample_size(20);
    for (name, provider) in providers() {
        // X25519 only, like a client on either provider would pick first.
        let provider = CryptoProvider {
            kx_groups: provider
                .kx_groups
                .iter()
                .copied()
                .filter(|g| g.name() == rustls::NamedGroup::X25519)
                .collect(),
            ..provider
        };
        for cert in ["ecdsa", "rsa"] {
            let (client, server) = pki.configs(cert, &provider);
            group.bench_function(format!("{name}/{cert}"), |b| {
                b.iter(|| connect(&client, &server))
            });
        }
    }
    group.finish();
}

fn records(c: &mut Criterion) {
    let pki = Pki::new();
    let mut group = c.benchmark_group("tls13_records_16k");
    group.throughput(Throughput::Bytes(RECORD as u64));
    let data = vec![0x5au8; RECORD];
    for (name, provider) in providers() {
        for suite in [
            rustls::CipherSuite::TLS13_AES_128_GCM_SHA256,
            rustls::CipherSuite::TLS13_AES_256_GCM_SHA384,
            rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
        ] {
            let provider = CryptoProvider {
                cipher_suites: provider
                    .cipher_suites
                    .iter()
                    .copied()
                    .filter(|s| s.suite() == suite)
                    .collect(),
                ..provider.clone()
            };
            let (client, server) = pki.configs("ecdsa", &provider);
            let (mut c, mut s) = connect(&client, &server);
            let mut buf = Vec::with_capacity(2 * RECORD);
            let mut got = vec![0u8; RECORD];
            let suite_name = format!("{suite:?}").trim_start_matches("TLS13_").to_owned();
            group.bench_function(format!("{name}/{suite_name}"), |b| {
                b.iter(|| {
                    std::io::Write::write_all(&mut c.writer(), &data).unwrap();
                    transfer(&mut c, &mut s, &mut buf);
                    std::io::Read::read_exact(&mut s.reader(), &mut got).unwrap();
                })
            });
        }
    }
    group.finish();
}

// The macro generates an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::handshakes, super::records);
}

criterion_main!(group::benches);
