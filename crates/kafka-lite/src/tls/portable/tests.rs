//! Handshakes of the portable provider with rustls servers in this process
//! over an in-memory pipe: every cipher suite, key-exchange group and
//! signature scheme, against a server on the portable provider itself and
//! (where graviola is compiled and the CPU runs it) against graviola, and
//! with graviola's client against the portable server. Certificates and
//! keys are made with the `openssl` command at test time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    ClientConfig, ClientConnection, Connection, NamedGroup, ProtocolVersion, RootCertStore,
    ServerConfig, ServerConnection, SupportedCipherSuite,
};

use super::*;

/// The key types certificates are made with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyType {
    P256,
    P384,
    Rsa2048,
    Ed25519,
}

impl KeyType {
    const ALL: [KeyType; 4] = [
        KeyType::P256,
        KeyType::P384,
        KeyType::Rsa2048,
        KeyType::Ed25519,
    ];

    fn name(self) -> &'static str {
        match self {
            KeyType::P256 => "p256",
            KeyType::P384 => "p384",
            KeyType::Rsa2048 => "rsa",
            KeyType::Ed25519 => "ed25519",
        }
    }

    fn newkey_args(self) -> &'static [&'static str] {
        match self {
            KeyType::P256 => &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
            KeyType::P384 => &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"],
            KeyType::Rsa2048 => &["-newkey", "rsa:2048"],
            KeyType::Ed25519 => &["-newkey", "ed25519"],
        }
    }
}

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

/// A directory of certificates: per key type a CA (`<t>-ca.pem`), a server
/// certificate for `localhost` and a client certificate, each signed by the
/// CA of its type, with PKCS#8 keys; plus the client keys as PKCS#1 (RSA)
/// and SEC1 (ECDSA).
fn pki() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kafka-lite-portable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for t in KeyType::ALL {
            let n = t.name();
            let ca = format!("{n}-ca");
            let mut args = vec!["req", "-x509"];
            args.extend(t.newkey_args());
            let (ca_key, ca_pem, ca_subj) = (
                format!("{ca}.key"),
                format!("{ca}.pem"),
                format!("/CN={ca}"),
            );
            args.extend([
                "-nodes",
                "-keyout",
                &ca_key,
                "-out",
                &ca_pem,
                "-days",
                "30",
                "-subj",
                &ca_subj,
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign",
            ]);
            openssl(&dir, &args);
            for (who, ext) in [
                (
                    "server",
                    "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n",
                ),
                ("client", "extendedKeyUsage=clientAuth\n"),
            ] {
                let leaf = format!("{n}-{who}");
                let (key, csr, pem, extfile, subj) = (
                    format!("{leaf}.key"),
                    format!("{leaf}.csr"),
                    format!("{leaf}.pem"),
                    format!("{leaf}.ext"),
                    format!("/CN={leaf}"),
                );
                std::fs::write(
                    dir.join(&extfile),
                    format!("basicConstraints=CA:FALSE\n{ext}"),
                )
                .unwrap();
                let mut args = vec!["req", "-new"];
                args.extend(t.newkey_args());
                args.extend(["-nodes", "-keyout", &key, "-out", &csr, "-subj", &subj]);
                openssl(&dir, &args);
                openssl(
                    &dir,
                    &[
                        "x509",
                        "-req",
                        "-in",
                        &csr,
                        "-CA",
                        &ca_pem,
                        "-CAkey",
                        &ca_key,
                        "-CAcreateserial",
                        "-days",
                        "30",
                        "-out",
                        &pem,
                        "-extfile",
                        &extfile,
                    ],
                );
            }
            let client_key = format!("{n}-client.key");
            match t {
                KeyType::Rsa2048 => openssl(
                    &dir,
                    &[
                        "rsa",
                        "-in",
                        &client_key,
                        "-traditional",
                        "-out",
                        "rsa-client.pkcs1",
                    ],
                ),
                KeyType::P256 | KeyType::P384 => openssl(
                    &dir,
                    &[
                        "ec",
                        "-in",
                        &client_key,
                        "-out",
                        &format!("{n}-client.sec1"),
                    ],
                ),
                KeyType::Ed25519 => {}
            }
        }
        dir
    })
}

fn certs(name: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(pki().join(name))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn key(name: &str) -> PrivateKeyDer<'static> {
    PrivateKeyDer::from_pem_file(pki().join(name)).unwrap()
}

fn roots(t: KeyType) -> Arc<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in certs(&format!("{}-ca.pem", t.name())) {
        roots.add(cert).unwrap();
    }
    Arc::new(roots)
}

/// The graviola provider, where this build has it and this CPU runs it.
fn graviola() -> Option<CryptoProvider> {
    #[cfg(all(
        feature = "graviola",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    if crate::tls::graviola_cpu_support().is_ok() {
        return Some(rustls_graviola::default_provider());
    }
    None
}

/// One handshake's set-up.
#[derive(Clone, Copy)]
struct Case {
    server_key: KeyType,
    /// The only suite the client offers.
    suite: SupportedCipherSuite,
    /// The only group the client offers.
    group: NamedGroup,
    /// A client certificate of this type (PEM key file name) for mTLS.
    client_key: Option<(KeyType, &'static str)>,
}

/// A client config on `provider` restricted to `suite` and `group`.
fn client_config(provider: &CryptoProvider, case: &Case) -> ClientConfig {
    let group = find_group(provider, case.group);
    let suite = find_suite(provider, case.suite);
    let version = match suite {
        SupportedCipherSuite::Tls12(_) => &rustls::version::TLS12,
        SupportedCipherSuite::Tls13(_) => &rustls::version::TLS13,
    };
    let provider = CryptoProvider {
        cipher_suites: vec![suite],
        kx_groups: vec![group],
        ..provider.clone()
    };
    let builder = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots(case.server_key));
    match case.client_key {
        None => builder.with_no_client_auth(),
        Some((t, key_file)) => builder
            .with_client_auth_cert(certs(&format!("{}-client.pem", t.name())), key(key_file))
            .unwrap(),
    }
}

fn server_config(provider: &CryptoProvider, case: &Case) -> ServerConfig {
    let provider = Arc::new(provider.clone());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match case.client_key {
        None => builder.with_no_client_auth(),
        Some((t, _)) => builder.with_client_cert_verifier(
            WebPkiClientVerifier::builder_with_provider(roots(t), provider)
                .build()
                .unwrap(),
        ),
    };
    let n = case.server_key.name();
    builder
        .with_single_cert(
            certs(&format!("{n}-server.pem")),
            key(&format!("{n}-server.key")),
        )
        .unwrap()
}

/// The same suite from `provider`'s list (the one to use on its side).
fn find_suite(provider: &CryptoProvider, suite: SupportedCipherSuite) -> SupportedCipherSuite {
    *provider
        .cipher_suites
        .iter()
        .find(|s| s.suite() == suite.suite())
        .unwrap_or_else(|| panic!("{:?} not in the provider", suite.suite()))
}

fn find_group(provider: &CryptoProvider, group: NamedGroup) -> &'static dyn SupportedKxGroup {
    *provider
        .kx_groups
        .iter()
        .find(|g| g.name() == group)
        .unwrap_or_else(|| panic!("{group:?} not in the provider"))
}

/// Moves every pending TLS byte from `from` to `to`.
fn transfer(from: &mut Connection, to: &mut Connection) -> Result<usize, rustls::Error> {
    let mut buf = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut buf).unwrap();
    }
    let mut rest = &buf[..];
    while !rest.is_empty() {
        to.read_tls(&mut rest).unwrap();
        to.process_new_packets()?;
    }
    Ok(buf.len())
}

/// Runs the handshake between `client` and `server`.
fn connect(client: ClientConfig, server: ServerConfig) -> Result<(Connection, Connection), String> {
    let mut c = Connection::from(
        ClientConnection::new(Arc::new(client), ServerName::try_from("localhost").unwrap())
            .unwrap(),
    );
    let mut s = Connection::from(ServerConnection::new(Arc::new(server)).unwrap());
    let mut rounds = 0;
    while c.is_handshaking() || s.is_handshaking() {
        let moved = transfer(&mut c, &mut s).map_err(|e| format!("server: {e}"))?
            + transfer(&mut s, &mut c).map_err(|e| format!("client: {e}"))?;
        rounds += 1;
        if moved == 0 || rounds > 10 {
            return Err("handshake stalled".into());
        }
    }
    Ok((c, s))
}

/// Runs the handshake, checks what was negotiated, then sends 64 KiB each
/// way and checks it arrives.
fn handshake(client: &CryptoProvider, server: &CryptoProvider, case: &Case) {
    let what = format!(
        "{:?} {:?} {:?} client cert {:?}",
        case.server_key,
        case.suite.suite(),
        case.group,
        case.client_key
    );
    let (mut c, mut s) = connect(client_config(client, case), server_config(server, case))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        c.negotiated_cipher_suite().map(|s| s.suite()),
        Some(case.suite.suite()),
        "{what}"
    );
    assert_eq!(
        c.negotiated_key_exchange_group().map(|g| g.name()),
        Some(case.group),
        "{what}"
    );
    assert_eq!(
        c.protocol_version(),
        Some(match case.suite {
            SupportedCipherSuite::Tls12(_) => ProtocolVersion::TLSv1_2,
            SupportedCipherSuite::Tls13(_) => ProtocolVersion::TLSv1_3,
        }),
        "{what}"
    );
    if case.client_key.is_some() {
        assert!(
            s.peer_certificates().is_some(),
            "{what}: no client certificate"
        );
    }
    send_and_check(&mut c, &mut s, &what);
    send_and_check(&mut s, &mut c, &what);
}

/// Sends 64 KiB from `a` to `b` and checks it arrives intact.
fn send_and_check(a: &mut Connection, b: &mut Connection, what: &str) {
    let data: Vec<u8> = (0..64 * 1024).map(|i| (i % 251) as u8).collect();
    let mut got = Vec::new();
    // In pieces: the receiver buffers at most 16 KiB of unread plaintext.
    for piece in data.chunks(8 * 1024) {
        std::io::Write::write_all(&mut a.writer(), piece).unwrap();
        transfer(a, b).unwrap_or_else(|e| panic!("{what}: data: {e}"));
        let mut chunk = [0u8; 4096];
        let start = got.len();
        while got.len() < start + piece.len() {
            let n = std::io::Read::read(&mut b.reader(), &mut chunk).unwrap();
            assert!(n > 0, "{what}: data ended early");
            got.extend_from_slice(&chunk[..n]);
        }
    }
    assert_eq!(got, data, "{what}");
}

/// The servers to shake hands with: the portable provider itself, then
/// graviola where it runs here.
fn servers() -> Vec<(&'static str, CryptoProvider)> {
    let mut servers = vec![("portable", provider(false))];
    servers.extend(graviola().map(|g| ("graviola", g)));
    servers
}

fn tls12_suites_for(t: KeyType) -> Vec<SupportedCipherSuite> {
    match t {
        KeyType::Rsa2048 => vec![
            TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ],
        _ => vec![
            TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ],
    }
}

const TLS13_SUITES: [SupportedCipherSuite; 3] = [
    TLS13_AES_128_GCM_SHA256,
    TLS13_AES_256_GCM_SHA384,
    TLS13_CHACHA20_POLY1305_SHA256,
];

/// Every suite with every kind of server certificate (so every
/// verification scheme: ECDSA P-256/P-384, RSA PSS in TLS 1.3 and the
/// TLS 1.2 RSA schemes, Ed25519), X25519. The portable provider does not
/// sign with Ed25519 keys, so only graviola serves the Ed25519 certificate.
#[test]
fn every_suite_and_server_certificate() {
    for (server_name, server) in servers() {
        for t in KeyType::ALL {
            if t == KeyType::Ed25519 && server_name == "portable" {
                continue;
            }
            let mut suites = TLS13_SUITES.to_vec();
            if t != KeyType::Ed25519 {
                // graviola's TLS 1.2 suites do not sign with Ed25519.
                suites.extend(tls12_suites_for(t));
            }
            for suite in suites {
                let case = Case {
                    server_key: t,
                    suite,
                    group: NamedGroup::X25519,
                    client_key: None,
                };
                handshake(&provider(false), &server, &case);
            }
        }
    }
}

/// Every key-exchange group in TLS 1.3 and TLS 1.2.
#[test]
fn every_key_exchange_group() {
    for (_, server) in servers() {
        for group in [
            NamedGroup::X25519,
            NamedGroup::secp256r1,
            NamedGroup::secp384r1,
        ] {
            for suite in [
                TLS13_AES_128_GCM_SHA256,
                TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            ] {
                let case = Case {
                    server_key: KeyType::P256,
                    suite,
                    group,
                    client_key: None,
                };
                handshake(&provider(false), &server, &case);
            }
        }
    }
}

/// Client certificates (mTLS) with every key the key provider loads:
/// ECDSA P-256/P-384 as PKCS#8 and SEC1, RSA as PKCS#8 and PKCS#1 (signing
/// PSS in TLS 1.3, PSS or PKCS#1 in TLS 1.2).
#[test]
fn every_client_key_type_and_format() {
    let keys: [(KeyType, &str); 6] = [
        (KeyType::P256, "p256-client.key"),
        (KeyType::P256, "p256-client.sec1"),
        (KeyType::P384, "p384-client.key"),
        (KeyType::P384, "p384-client.sec1"),
        (KeyType::Rsa2048, "rsa-client.key"),
        (KeyType::Rsa2048, "rsa-client.pkcs1"),
    ];
    for (_, server) in servers() {
        for client_key in keys {
            for suite in [
                TLS13_CHACHA20_POLY1305_SHA256,
                TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            ] {
                let case = Case {
                    server_key: KeyType::P256,
                    suite,
                    group: NamedGroup::secp256r1,
                    client_key: Some(client_key),
                };
                handshake(&provider(false), &server, &case);
            }
        }
    }
}

/// graviola's client against the portable server: the portable provider's
/// server-side signing (ECDSA and RSA-PSS) and record layer as seen by
/// another implementation.
#[test]
fn graviola_client_with_portable_server() {
    let Some(graviola) = graviola() else {
        return;
    };
    for t in [KeyType::P256, KeyType::P384, KeyType::Rsa2048] {
        let mut suites = TLS13_SUITES.to_vec();
        suites.extend(tls12_suites_for(t));
        for suite in suites {
            let case = Case {
                server_key: t,
                suite,
                group: NamedGroup::X25519,
                client_key: Some((KeyType::P256, "p256-client.key")),
            };
            handshake(&graviola, &provider(false), &case);
        }
    }
}

/// Negative controls: the checks above can fail. A server whose CA the
/// client does not trust, and a client certificate from a CA the server
/// does not trust, are refused.
#[test]
fn untrusted_certificates_are_refused() {
    let case = Case {
        server_key: KeyType::P256,
        suite: TLS13_AES_128_GCM_SHA256,
        group: NamedGroup::X25519,
        client_key: None,
    };
    let trusting_p384 = Case {
        server_key: KeyType::P384,
        ..case
    };
    let e = connect(
        client_config(&provider(false), &trusting_p384),
        server_config(&provider(false), &case),
    )
    .map(|_| ())
    .expect_err("a server certificate from an untrusted CA must be refused");
    assert!(e.contains("UnknownIssuer"), "{e}");

    let with_client = Case {
        client_key: Some((KeyType::P256, "p256-client.key")),
        ..case
    };
    let server_trusting_p384 = Case {
        client_key: Some((KeyType::P384, "p384-client.key")),
        ..case
    };
    let e = connect(
        client_config(&provider(false), &with_client),
        server_config(&provider(false), &server_trusting_p384),
    )
    .map(|_| ())
    .expect_err("a client certificate from an untrusted CA must be refused");
    assert!(e.contains("UnknownIssuer") || e.contains("alert"), "{e}");
}

#[test]
fn chacha_first_reorders_the_offer_only() {
    let aes = provider(false);
    let chacha = provider(true);
    assert_eq!(
        aes.cipher_suites[0].suite(),
        rustls::CipherSuite::TLS13_AES_128_GCM_SHA256
    );
    assert_eq!(
        chacha.cipher_suites[0].suite(),
        rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
    );
    let mut a: Vec<_> = aes
        .cipher_suites
        .iter()
        .map(|s| u16::from(s.suite()))
        .collect();
    let mut c: Vec<_> = chacha
        .cipher_suites
        .iter()
        .map(|s| u16::from(s.suite()))
        .collect();
    a.sort();
    c.sort();
    assert_eq!(a, c);
}

#[test]
fn unusable_keys_are_errors_without_key_material() {
    use rustls::crypto::KeyProvider;
    let ed = key("ed25519-client.key");
    let e = sign::Provider.load_private_key(ed).unwrap_err().to_string();
    assert!(
        e.contains("portable TLS provider cannot use this private key"),
        "{e}"
    );
    let junk = PrivateKeyDer::Pkcs1(vec![0x30, 0x03, 0x02, 0x01, 0x00].into());
    let e = sign::Provider
        .load_private_key(junk)
        .unwrap_err()
        .to_string();
    assert!(e.contains("PKCS#1"), "{e}");
    assert!(!e.contains("30"), "{e}");
}
