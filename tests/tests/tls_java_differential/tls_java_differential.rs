//! Differential test of server certificate verification against Java's own
//! TLS stack (JSSE with the PKIX trust manager, as Kafka's Java client uses
//! it). A matrix of server certificates made with `openssl` at test time
//! (v1 and v3; subjectAltName DNS, IP or none; common name match and
//! mismatch; wildcard forms; expired and not yet valid; untrusted CA;
//! intermediate chains, one through a v1 intermediate; key usage, extended
//! key usage and basic constraints variants; RSA and ECDSA) is served on
//! loopback TLS servers, once limited to TLS 1.3 and once to TLS 1.2, to
//! kafka-lite's client configuration and to `tests/java-tls/TlsVerdict.java`
//! (run by the JDK's `java`, which must be on PATH). Their verdicts must
//! match, except in the cases listed in [`DIVERGENCES`], where Java accepts
//! and we refuse (docs/client.md lists them with their reasons).

mod pki;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use e2e::scratch::{openssl, write};
use kafka_lite::TlsConfig;
use pki::{Identity, make_pki};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// The cases: identity, host name checked, whether the host name check is
/// on (`https`) or off (empty).
const CASES: &[(&str, &str, bool)] = &[
    ("v1", "localhost", true),
    ("v1", "LOCALHOST", true),
    ("v1", "broker.example", true),
    ("v1", "127.0.0.1", true),
    ("v1", "broker.example", false),
    ("v1rsa", "localhost", true),
    ("v1rsa", "broker.example", true),
    ("v1twocn", "broker.example", true),
    ("v1twocn", "localhost", true),
    ("nosan", "localhost", true),
    ("nosan", "broker.example", true),
    ("nosan", "broker.example", false),
    ("nosanrsa", "localhost", true),
    ("sanother", "localhost", true),
    ("sanother", "broker.example", true),
    ("wildsan", "a.kafka.example", true),
    ("wildsan", "a.b.kafka.example", true),
    ("wildsan", "kafka.example", true),
    ("partialcn", "broker.kafka.example", true),
    ("partialcn", "roker.kafka.example", true),
    ("midwild", "a.b.kafka.example", true),
    ("sha1v1", "localhost", true),
    ("sha1v3", "localhost", true),
    ("nsclient", "localhost", true),
    ("nsserver", "localhost", true),
    ("anyeku", "localhost", true),
    ("partialsan", "broker.kafka.example", true),
    ("partialsan", "roker.kafka.example", true),
    ("ipsan6", "::1", true),
    ("ipsan6", "0:0:0:0:0:0:0:1", true),
    ("ipsan6", "127.0.0.1", true),
    ("nccn", "b.corp.example", true),
    ("nccn", "b.corp.example", false),
    ("nccnout", "localhost", true),
    ("ncsan", "b.corp.example", true),
    ("ncsanout", "localhost", true),
    ("ncsanout", "localhost", false),
    ("ncintcn", "b.corp.example", true),
    ("ncintcnout", "localhost", true),
    ("ncintsan", "b.corp.example", true),
    ("ncintsanout", "localhost", true),
    ("ncintsanout", "localhost", false),
    ("tldwild", "a.example", true),
    ("ipsan", "127.0.0.1", true),
    ("ipsan", "localhost", true),
    ("iponly", "localhost", true),
    ("ipcn", "127.0.0.1", true),
    ("ipcn", "127.0.0.1", false),
    ("v1untrusted", "localhost", true),
    ("v1untrusted", "localhost", false),
    ("untrusted3", "localhost", true),
    ("underv1", "localhost", true),
    ("v1underv1", "localhost", true),
    ("underv1int", "localhost", true),
    ("underv1int", "localhost", false),
    ("underv3int", "localhost", true),
    ("v1underv3int", "localhost", true),
    ("ekuclient", "localhost", true),
    ("noeku", "localhost", true),
    ("kucertsign", "localhost", true),
    ("kursaenc", "localhost", true),
    ("kusig", "localhost", true),
    ("caleaf", "localhost", true),
    ("expired", "localhost", true),
    ("expired", "localhost", false),
    ("expiredv1", "localhost", true),
    ("notyet", "localhost", true),
    ("notyetv1", "localhost", false),
];

/// Where Java accepts and we refuse, on purpose (case name as printed:
/// `identity@host/https|none`, without the TLS version), with the reason.
const DIVERGENCES: &[(&str, &str)] = &[
    (
        "midwild@a.b.kafka.example/https",
        "a wildcard outside the leftmost label",
    ),
    (
        "tldwild@a.example/https",
        "a wildcard with a single label after it",
    ),
    (
        "v1underv3int@localhost/https",
        "a v1 server certificate under an intermediate",
    ),
    (
        "nccn@b.corp.example/https",
        "a common-name match under name constraints (here a root's)",
    ),
    (
        "ncintcn@b.corp.example/https",
        "a common-name match under name constraints (an intermediate's)",
    ),
    (
        "nccnout@localhost/https",
        "name constraints of a trusted root, which Java ignores",
    ),
    (
        "ncsanout@localhost/https",
        "name constraints of a trusted root, which Java ignores",
    ),
    (
        "ncsanout@localhost/none",
        "name constraints of a trusted root, which Java ignores",
    ),
    (
        "anyeku@localhost/https",
        "anyExtendedKeyUsage without serverAuth, which webpki does not take for serverAuth",
    ),
    (
        "sha1v1@localhost/https",
        "a SHA-1 signature, outside the crypto provider's algorithms",
    ),
    (
        "sha1v3@localhost/https",
        "a SHA-1 signature, outside the crypto provider's algorithms",
    ),
    (
        "caleaf@localhost/https",
        "a CA certificate (basicConstraints CA:TRUE) as the server's certificate",
    ),
];

/// Presents the one certificate chain and key it holds.
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

/// A loopback TLS server of `version` presenting `identity`; its port.
async fn serve(
    dir: &Path,
    identity: &Identity,
    version: &'static rustls::SupportedProtocolVersion,
) -> u16 {
    let provider = kafka_lite::crypto_provider().expect("provider");
    let mut certs = vec![
        CertificateDer::from_pem_file(dir.join(format!("{}.pem", identity.name))).expect("cert"),
    ];
    for intermediate in identity.chain {
        certs.push(
            CertificateDer::from_pem_file(dir.join(format!("{intermediate}.pem")))
                .expect("intermediate"),
        );
    }
    let key =
        PrivateKeyDer::from_pem_file(dir.join(format!("{}.key", identity.name))).expect("key");
    let key = provider
        .key_provider
        .load_private_key(key)
        .expect("load key");
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[version])
        .expect("versions")
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(Always(Arc::new(rustls::sign::CertifiedKey::new(
            certs, key,
        )))));
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    let mut buf = [0u8; 64];
                    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read(&mut buf)).await;
                }
            });
        }
    });
    port
}

/// Our verdict: a handshake with kafka-lite's client configuration.
async fn ours(trust: &Path, host: &str, port: u16, https: bool) -> Result<(), String> {
    let config = kafka_lite::tls_client_config(&TlsConfig {
        ca_pem_file: Some(trust.to_path_buf()),
        verify_hostname: https,
        ..TlsConfig::default()
    })
    .map_err(|e| e.to_string())?;
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    tokio::time::timeout(
        Duration::from_secs(10),
        TlsConnector::from(config).connect(name, tcp),
    )
    .await
    .map_err(|_| "handshake timed out".to_string())?
    .map(|_| ())
    .map_err(|e| e.to_string())
}

fn case_name(identity: &str, host: &str, https: bool) -> String {
    format!("{identity}@{host}/{}", if https { "https" } else { "none" })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verdicts_match_javas_tls_stack() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("kafka-lite-tls-java-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (identities, trust) = make_pki(&dir);
    for v1 in ["v1", "v1rsa", "v1ca", "v1int", "expiredv1", "notyetv1"] {
        let der = CertificateDer::from_pem_file(dir.join(format!("{v1}.pem"))).expect("cert");
        // TBSCertificate's first field is the [0] version unless v1.
        let tbs_first = {
            let skip = |at: usize| match der[at + 1] {
                len if len < 0x80 => at + 2,
                len => at + 2 + usize::from(len & 0x7f),
            };
            der[skip(skip(0))]
        };
        assert_ne!(tbs_first, 0xa0, "openssl made {v1} as v3");
    }

    let mut ports = BTreeMap::new();
    for (label, version) in [
        ("TLS1.3", &rustls::version::TLS13),
        ("TLS1.2", &rustls::version::TLS12),
    ] {
        for identity in &identities {
            ports.insert((label, identity.name), serve(&dir, identity, version).await);
        }
    }

    // Java first, all cases in one JVM.
    let java_source = Path::new(env!("CARGO_MANIFEST_DIR")).join("java-tls/TlsVerdict.java");
    let mut args = vec![
        java_source.display().to_string(),
        trust.display().to_string(),
    ];
    for ((label, identity), port) in &ports {
        for (case_identity, host, https) in CASES {
            if case_identity == identity {
                let name = format!("{label}:{}", case_name(identity, host, *https));
                let check = if *https { "https" } else { "none" };
                args.push(format!("{name},{host},{port},{check}"));
            }
        }
    }
    let output = tokio::task::spawn_blocking(move || {
        Command::new("java")
            .args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .args(&args)
            .output()
    })
    .await
    .expect("join")
    .expect("run java (a JDK 11 or later must be on PATH)");
    assert!(
        output.status.success(),
        "TlsVerdict failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let java: BTreeMap<String, String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            line.split_once(' ')
                .map(|(name, verdict)| (name.to_string(), verdict.to_string()))
        })
        .collect();

    let mut report = String::new();
    let mut mismatches = Vec::new();
    let mut divergences_seen = 0;
    for ((label, identity), port) in &ports {
        for (case_identity, host, https) in CASES {
            if case_identity != identity {
                continue;
            }
            let case = case_name(identity, host, *https);
            let name = format!("{label}:{case}");
            let theirs = java
                .get(&name)
                .unwrap_or_else(|| panic!("no Java verdict for {name}"));
            let java_accepts = theirs == "ACCEPT";
            let ours = ours(&trust, host, *port, *https).await;
            let divergence = DIVERGENCES.iter().find(|(c, _)| *c == case);
            report.push_str(&format!(
                "{name}: java {theirs} | ours {}\n",
                match &ours {
                    Ok(()) => "ACCEPT".to_string(),
                    Err(e) => format!("REFUSE {e}"),
                }
            ));
            match (divergence, java_accepts, ours.is_ok()) {
                (None, j, o) if j == o => {}
                (Some(_), true, false) => divergences_seen += 1,
                _ => mismatches.push(name),
            }
        }
    }
    eprintln!("{report}");
    assert!(mismatches.is_empty(), "verdicts differ: {mismatches:?}");
    // Every listed divergence shows, on both TLS versions.
    assert_eq!(divergences_seen, 2 * DIVERGENCES.len());
}
