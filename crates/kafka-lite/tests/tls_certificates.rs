//! TLS verification against real certificates made with `openssl` in the
//! test: a trusted one for `localhost`, one for another host, an expired
//! one, and one from a CA the client does not trust. The server side is a
//! rustls acceptor in the test process (same crypto provider as the
//! client) followed by the fake broker's ApiVersions answer.

mod fake_broker;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use fake_broker::{FakeBroker, answer_api_versions, serve, stall};
use kafka_lite::{ConnectionConfig, Connector, Error, PemBytes, TlsConfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// The certificates of this test run, made once.
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        output.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn write(dir: &Path, name: &str, content: &str) {
    std::fs::File::create(dir.join(name))
        .and_then(|mut f| f.write_all(content.as_bytes()))
        .expect("write file");
}

/// `openssl req <mode>` with a new P-256 key `name.key`, writing
/// `name.<out>`, then the arguments `rest`.
fn req_with_new_key(dir: &Path, mode: &str, name: &str, out: &str, rest: &[&str]) {
    let key = format!("{name}.key");
    let out = format!("{name}.{out}");
    let mut args = vec![
        "req",
        mode,
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        &key,
        "-out",
        &out,
    ];
    args.extend_from_slice(rest);
    openssl(dir, &args);
}

/// A self-signed CA `name` (`name.pem`, `name.key`).
fn make_ca(dir: &Path, name: &str) {
    req_with_new_key(
        dir,
        "-x509",
        name,
        "pem",
        &[
            "-days",
            "30",
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// A key and CSR `name.key`, `name.csr`.
fn make_csr(dir: &Path, name: &str, cn: &str) {
    req_with_new_key(dir, "-new", name, "csr", &["-subj", &format!("/CN={cn}")]);
}

/// Signs `name.csr` with `ca` for 30 days with the given SAN.
fn sign(dir: &Path, name: &str, ca: &str, san: &str) {
    write(
        dir,
        &format!("{name}.ext"),
        &format!("subjectAltName={san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"),
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-days",
            "30",
            "-out",
            &format!("{name}.pem"),
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
}

/// Signs `name.csr` with `ca` as Kafka's security documentation does
/// (`openssl x509 -req` without an extension file), which OpenSSL 3.0 writes
/// as an X.509 v1 certificate: no extensions, the host name only in the CN.
fn sign_as_kafka_docs(dir: &Path, name: &str, ca: &str) {
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-in",
            &format!("{name}.csr"),
            "-out",
            &format!("{name}.pem"),
            "-days",
            "30",
            "-CAcreateserial",
        ],
    );
}

/// Signs `name.csr` with `ca` as a v3 server certificate without
/// subjectAltName (the host name only in the CN).
fn sign_without_san(dir: &Path, name: &str, ca: &str) {
    write(
        dir,
        &format!("{name}.ext"),
        "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-days",
            "30",
            "-out",
            &format!("{name}.pem"),
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
}

/// Signs `name.csr` with `ca`, valid only on 1-2 January 2020 (`openssl ca`
/// takes explicit dates; `openssl x509` in OpenSSL 3.0 cannot backdate).
fn sign_expired(dir: &Path, name: &str, ca: &str) {
    std::fs::create_dir_all(dir.join("newcerts")).expect("mkdir");
    write(dir, "index.txt", "");
    write(dir, "serial", "1000\n");
    write(
        dir,
        "ca.cnf",
        &format!(
            "[ca]\ndefault_ca = test\n\
             [test]\ndir = {dir}\ndatabase = {dir}/index.txt\nnew_certs_dir = {dir}/newcerts\n\
             serial = {dir}/serial\ndefault_md = sha256\npolicy = any\nunique_subject = no\n\
             [any]\ncommonName = supplied\n\
             [leaf]\nsubjectAltName = DNS:localhost,IP:127.0.0.1\nbasicConstraints = CA:FALSE\n\
             extendedKeyUsage = serverAuth\n",
            dir = dir.display()
        ),
    );
    openssl(
        dir,
        &[
            "ca",
            "-batch",
            "-config",
            "ca.cnf",
            "-cert",
            &format!("{ca}.pem"),
            "-keyfile",
            &format!("{ca}.key"),
            "-in",
            &format!("{name}.csr"),
            "-out",
            &format!("{name}.pem"),
            "-startdate",
            "20200101000000Z",
            "-enddate",
            "20200102000000Z",
            "-extensions",
            "leaf",
            "-notext",
        ],
    );
}

fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("kafka-lite-tls-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        make_ca(&dir, "ca");
        make_ca(&dir, "other-ca");
        make_csr(&dir, "good", "localhost");
        sign(&dir, "good", "ca", "DNS:localhost,IP:127.0.0.1");
        make_csr(&dir, "wrong-host", "wrong.example");
        sign(&dir, "wrong-host", "ca", "DNS:wrong.example");
        make_csr(&dir, "untrusted", "localhost");
        sign(&dir, "untrusted", "other-ca", "DNS:localhost,IP:127.0.0.1");
        make_csr(&dir, "v1", "localhost");
        sign_as_kafka_docs(&dir, "v1", "ca");
        make_csr(&dir, "v1-untrusted", "localhost");
        sign_as_kafka_docs(&dir, "v1-untrusted", "other-ca");
        make_csr(&dir, "no-san", "localhost");
        sign_without_san(&dir, "no-san", "ca");
        make_csr(&dir, "expired", "localhost");
        sign_expired(&dir, "expired", "ca");
        Pki { dir }
    })
}

/// Presents the one certificate and key it holds.
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

/// A TLS fake broker presenting `leaf.pem` / `leaf.key`.
async fn tls_broker(leaf: &str) -> FakeBroker {
    let pki = pki();
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(pki.path(&format!("{leaf}.pem")))
            .expect("read cert")
            .collect::<Result<_, _>>()
            .expect("parse cert");
    let key = PrivateKeyDer::from_pem_file(pki.path(&format!("{leaf}.key"))).expect("key");
    let provider = kafka_lite::crypto_provider().expect("provider");
    let provider_for_keys = provider.clone();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(Always(Arc::new(
            // Not `with_single_cert`: its key check cannot read a v1 certificate.
            rustls::sign::CertifiedKey::new(
                certs,
                provider_for_keys
                    .key_provider
                    .load_private_key(key)
                    .expect("server key"),
            ),
        ))));
    let acceptor = TlsAcceptor::from(Arc::new(config));
    serve(move |tcp| {
        let acceptor = acceptor.clone();
        async move {
            // A refused handshake ends here; the client reports why.
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                return;
            };
            answer_api_versions(&mut tls).await;
            stall(tls).await;
        }
    })
    .await
}

fn tls_config(tls: TlsConfig) -> ConnectionConfig {
    ConnectionConfig {
        connect_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
        tls: Some(tls),
        ..ConnectionConfig::default()
    }
}

fn trusting_test_ca() -> TlsConfig {
    TlsConfig {
        ca_pem_file: Some(pki().path("ca.pem")),
        ..TlsConfig::default()
    }
}

/// `localhost:<port>` of the broker, so the name checked is `localhost`.
fn localhost(broker: &FakeBroker) -> String {
    broker.address.replace("127.0.0.1", "localhost")
}

async fn connect(config: ConnectionConfig, address: &str) -> Result<(), Error> {
    Connector::new(config)?.connect(address).await.map(|_| ())
}

fn tls_detail(err: &Error) -> &str {
    match err {
        Error::Tls { detail, .. } => detail,
        other => panic!("expected a TLS error, got {other:?}"),
    }
}

#[tokio::test]
async fn certificate_for_localhost_from_the_trusted_ca_is_accepted() {
    let broker = tls_broker("good").await;
    connect(tls_config(trusting_test_ca()), &localhost(&broker))
        .await
        .expect("valid certificate");
}

/// The certificate's version field: `None` for v1 (the field is absent).
fn has_version_field(leaf: &str) -> bool {
    let der = CertificateDer::from_pem_file(pki().path(&format!("{leaf}.pem"))).expect("cert");
    // SEQUENCE { SEQUENCE (tbs) { [0] version ... } }: skip the two headers.
    let skip_header = |at: usize| -> usize {
        match der[at + 1] {
            len if len < 0x80 => at + 2,
            len => at + 2 + usize::from(len & 0x7f),
        }
    };
    der[skip_header(skip_header(0))] == 0xa0
}

#[tokio::test]
async fn v1_certificate_made_as_the_kafka_docs_do_is_accepted_by_its_cn() {
    assert!(!has_version_field("v1"), "openssl made a v3 certificate");
    assert!(has_version_field("no-san"));
    let broker = tls_broker("v1").await;
    connect(tls_config(trusting_test_ca()), &localhost(&broker))
        .await
        .expect("v1 certificate for localhost from the trusted CA");
    // The CN names localhost, not the IP address.
    let err = connect(tls_config(trusting_test_ca()), &broker.address)
        .await
        .expect_err("an IP address never matches a CN");
    assert!(
        tls_detail(&err).contains("does not name the broker host"),
        "{err}"
    );
    // Without the host name check, still only from a trusted CA.
    let relaxed = || TlsConfig {
        verify_hostname: false,
        ..trusting_test_ca()
    };
    connect(tls_config(relaxed()), &broker.address)
        .await
        .expect("host name check off");
    let untrusted = tls_broker("v1-untrusted").await;
    let err = connect(tls_config(relaxed()), &localhost(&untrusted))
        .await
        .expect_err("untrusted CA");
    assert!(err.is_untrusted_certificate(), "{err:?}");
}

#[tokio::test]
async fn v3_certificate_without_subject_alt_name_is_accepted_by_its_cn() {
    let broker = tls_broker("no-san").await;
    connect(tls_config(trusting_test_ca()), &localhost(&broker))
        .await
        .expect("CN names localhost");
    let err = connect(tls_config(trusting_test_ca()), &broker.address)
        .await
        .expect_err("an IP address never matches a CN");
    assert!(
        tls_detail(&err).contains("does not name the broker host"),
        "{err}"
    );
}

#[tokio::test]
async fn the_ca_can_be_given_as_pem_bytes_in_memory() {
    let broker = tls_broker("good").await;
    let pem = std::fs::read(pki().path("ca.pem")).expect("CA PEM");
    let tls = TlsConfig {
        ca_pem: Some(PemBytes::new(pem)),
        ..TlsConfig::default()
    };
    connect(tls_config(tls), &localhost(&broker))
        .await
        .expect("valid certificate");
}

#[tokio::test]
async fn hostname_verification_is_on_by_default_and_refuses_a_certificate_for_another_host() {
    assert!(TlsConfig::default().verify_hostname);
    assert!(!TlsConfig::default().insecure_skip_verify);
    let broker = tls_broker("wrong-host").await;
    let address = localhost(&broker);
    let err = connect(tls_config(trusting_test_ca()), &address)
        .await
        .expect_err("name mismatch");
    eprintln!("{err}");
    let detail = tls_detail(&err).to_ascii_lowercase();
    assert!(detail.contains("not valid for name"), "{detail}");
    assert!(detail.contains("does not name the broker host"), "{detail}");
    assert!(err.to_string().contains(&address), "{err}");
    assert!(!err.is_retriable());
}

#[tokio::test]
async fn expired_certificate_is_refused() {
    let broker = tls_broker("expired").await;
    let err = connect(tls_config(trusting_test_ca()), &localhost(&broker))
        .await
        .expect_err("expired");
    eprintln!("{err}");
    assert!(
        tls_detail(&err).to_ascii_lowercase().contains("expired"),
        "{err}"
    );
    assert!(!err.is_untrusted_certificate(), "{err:?}");
}

#[tokio::test]
async fn certificate_from_an_untrusted_ca_is_refused_as_unknown_issuer() {
    let broker = tls_broker("untrusted").await;
    let err = connect(tls_config(trusting_test_ca()), &localhost(&broker))
        .await
        .expect_err("untrusted");
    eprintln!("{err}");
    let detail = tls_detail(&err).to_ascii_lowercase();
    assert!(
        detail.contains("unknownissuer") || detail.contains("unknown issuer"),
        "{detail}"
    );
    assert!(detail.contains("ca_pem_file"), "{detail}");
    assert!(err.is_untrusted_certificate(), "{err:?}");
}

/// Runs `f` with a tracing subscriber that records WARN and above.
fn capture_warnings<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let result = tracing::subscriber::with_default(subscriber, f);
    let logged =
        String::from_utf8_lossy(&buffer.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
    (result, logged)
}

#[tokio::test]
async fn skipping_verification_needs_the_explicit_flag_and_logs_a_warning() {
    let broker = tls_broker("untrusted").await;
    let address = localhost(&broker);

    // Default settings: refused, and nothing warns.
    let (connector, logged) = capture_warnings(|| Connector::new(tls_config(trusting_test_ca())));
    assert!(logged.is_empty(), "unexpected warning: {logged}");
    assert!(
        connector
            .expect("connector")
            .connect(&address)
            .await
            .is_err()
    );

    let insecure = TlsConfig {
        insecure_skip_verify: true,
        ..trusting_test_ca()
    };
    let (connector, logged) = capture_warnings(|| Connector::new(tls_config(insecure)));
    assert!(logged.contains("WARN"), "{logged}");
    assert!(logged.contains("insecure_skip_verify"), "{logged}");
    connector
        .expect("connector")
        .connect(&address)
        .await
        .expect("verification skipped");
}

#[tokio::test]
async fn disabling_only_hostname_verification_warns_and_still_checks_the_chain() {
    let wrong_host = tls_broker("wrong-host").await;
    let untrusted = tls_broker("untrusted").await;
    let config = TlsConfig {
        verify_hostname: false,
        ..trusting_test_ca()
    };
    let (connector, logged) = capture_warnings(|| Connector::new(tls_config(config)));
    assert!(
        logged.contains("WARN") && logged.contains("host name verification"),
        "{logged}"
    );
    let connector = connector.expect("connector");
    connector
        .connect(&localhost(&wrong_host))
        .await
        .expect("name not checked");
    let err = connector
        .connect(&localhost(&untrusted))
        .await
        .expect_err("chain still checked");
    assert!(matches!(err, Error::Tls { .. }), "{err:?}");
}

#[tokio::test]
async fn tls_broker_that_never_finishes_the_handshake_hits_the_connect_timeout() {
    let broker = serve(stall).await;
    let config = ConnectionConfig {
        connect_timeout: Duration::from_millis(500),
        ..tls_config(trusting_test_ca())
    };
    let started = std::time::Instant::now();
    let err = connect(config, &localhost(&broker))
        .await
        .expect_err("silent TLS server");
    assert!(matches!(err, Error::ConnectTimeout { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

fn pem_chain(leaf: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(pki().path(&format!("{leaf}.pem")))
        .expect("read cert")
        .collect::<Result<_, _>>()
        .expect("parse cert")
}

fn pem_key(leaf: &str) -> PrivateKeyDer<'static> {
    PrivateKeyDer::from_pem_file(pki().path(&format!("{leaf}.key"))).expect("key")
}

#[test]
fn a_v1_client_certificate_passes_the_identity_check_with_its_own_key_only() {
    assert!(!has_version_field("v1"), "openssl made a v3 certificate");
    assert_eq!(
        kafka_lite::check_client_identity(&pem_chain("v1"), &pem_key("v1"), None)
            .expect("Java presents v1 client certificates"),
        kafka_lite::ClientIdentityCheck::Matches
    );
    let err = kafka_lite::check_client_identity(&pem_chain("v1"), &pem_key("good"), None)
        .expect_err("another certificate's key");
    assert!(
        matches!(err, kafka_lite::ClientIdentityError::KeyMismatch),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_v1_client_certificate_is_installed_and_a_foreign_key_is_refused() {
    let broker = tls_broker("good").await;
    let with_client = |key: &str| TlsConfig {
        client_cert: Some(kafka_lite::ClientCertConfig::from_files(
            pki().path("v1.pem"),
            pki().path(&format!("{key}.key")),
        )),
        ..trusting_test_ca()
    };
    // The fake broker asks for no client certificate; what counts is that
    // the client configuration with a v1 certificate is built and connects.
    connect(tls_config(with_client("v1")), &localhost(&broker))
        .await
        .expect("v1 client certificate installed");
    let Err(err) = Connector::new(tls_config(with_client("good"))) else {
        panic!("the key of another certificate was installed");
    };
    assert!(
        err.to_string()
            .contains("does not belong to the first certificate"),
        "{err}"
    );
}
