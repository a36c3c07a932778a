//! What kafka-lite's server certificate verifier (docs/client.md, "Server
//! certificates") costs in a TLS 1.3 handshake (client and server in this
//! process, in-memory pipe, ECDSA P-256 certificates, the automatic crypto
//! provider), beside rustls's own webpki verifier: a v3 certificate with a
//! subjectAltName (webpki's path, plus the key usage read), a v3 certificate
//! named only in its common name (webpki, then Java's host name rule) and a
//! v1 certificate (the v1 path: our signature, date and name checks, and
//! the handshake signature by its raw key). Certificates are made with the
//! `openssl` command when the bench starts.
//!
//! `cargo bench -p kafka-lite --bench server_verify`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use criterion::{Criterion, criterion_main};
use kafka_lite::TlsConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, Connection, RootCertStore, ServerConnection};

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

const EC: [&str; 4] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"];

/// `dir/ca.pem` and three `localhost` server certificates signed by it:
/// `san` (v3, subjectAltName), `cn` (v3, common name only), `v1`.
fn make_pki(dir: &Path) {
    let mut args = vec!["req", "-x509"];
    args.extend(EC);
    args.extend([
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
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
    for (name, ext) in [
        (
            "san",
            Some("basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost\n"),
        ),
        ("cn", Some("basicConstraints=CA:FALSE\n")),
        ("v1", None),
    ] {
        let (key, csr, pem) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        let mut args = vec!["req", "-new"];
        args.extend(EC);
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
        let ext_file = format!("{name}.ext");
        let mut args = vec![
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &pem,
        ];
        if let Some(ext) = ext {
            std::fs::write(dir.join(&ext_file), ext).unwrap();
            args.extend(["-extfile", &ext_file]);
        }
        openssl(dir, &args);
    }
}

/// Presents the one certificate and key it holds (`with_single_cert`
/// cannot read a v1 certificate).
#[derive(Debug)]
struct Always(Arc<rustls::sign::CertifiedKey>);

impl rustls::server::ResolvesServerCert for Always {
    fn resolve(
        &self,
        _client_hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
}

struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn new() -> Pki {
        let dir =
            std::env::temp_dir().join(format!("kafka-lite-bench-verify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        make_pki(&dir);
        Pki { dir }
    }

    fn server(&self, name: &str) -> Arc<rustls::ServerConfig> {
        let provider = kafka_lite::crypto_provider().unwrap();
        let cert = CertificateDer::from_pem_file(self.dir.join(format!("{name}.pem"))).unwrap();
        let key = PrivateKeyDer::from_pem_file(self.dir.join(format!("{name}.key"))).unwrap();
        let key = provider.key_provider.load_private_key(key).unwrap();
        Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_protocol_versions(&[&rustls::version::TLS13])
                .unwrap()
                .with_no_client_auth()
                .with_cert_resolver(Arc::new(Always(Arc::new(rustls::sign::CertifiedKey::new(
                    vec![cert],
                    key,
                ))))),
        )
    }

    /// kafka-lite's client configuration, trusting the bench CA.
    fn ours(&self) -> Arc<ClientConfig> {
        kafka_lite::tls_client_config(&TlsConfig {
            ca_pem_file: Some(self.dir.join("ca.pem")),
            ..TlsConfig::default()
        })
        .unwrap()
    }

    /// rustls's stock configuration (webpki's verifier), the same provider.
    fn webpki(&self) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(self.dir.join("ca.pem")).unwrap())
            .unwrap();
        Arc::new(
            ClientConfig::builder_with_provider(kafka_lite::crypto_provider().unwrap())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth(),
        )
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

fn connect(client: &Arc<ClientConfig>, server: &Arc<rustls::ServerConfig>) {
    let mut c = Connection::from(
        ClientConnection::new(client.clone(), ServerName::try_from("localhost").unwrap()).unwrap(),
    );
    let mut s = Connection::from(ServerConnection::new(server.clone()).unwrap());
    let mut buf = Vec::new();
    while c.is_handshaking() || s.is_handshaking() {
        transfer(&mut c, &mut s, &mut buf);
        transfer(&mut s, &mut c, &mut buf);
    }
}

fn handshakes(c: &mut Criterion) {
    let pki = Pki::new();
    let (ours, webpki) = (pki.ours(), pki.webpki());
    let mut group = c.benchmark_group("tls13_handshake_verify");
    group.sample_size(30);
    let san = pki.server("san");
    group.bench_function("webpki/v3_san", |b| b.iter(|| connect(&webpki, &san)));
    group.bench_function("ours/v3_san", |b| b.iter(|| connect(&ours, &san)));
    let cn = pki.server("cn");
    group.bench_function("ours/v3_cn_only", |b| b.iter(|| connect(&ours, &cn)));
    let v1 = pki.server("v1");
    group.bench_function("ours/v1", |b| b.iter(|| connect(&ours, &v1)));
    group.finish();
}

// The macro generates an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::handshakes);
}

criterion_main!(group::benches);
