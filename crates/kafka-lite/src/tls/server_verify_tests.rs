//! The verifier against certificates made with `openssl` at test time, the
//! way Kafka's security documentation makes them (`openssl x509 -req`, which
//! OpenSSL 3.0 writes as X.509 v1) and the usual v3 forms, on every crypto
//! provider this build and CPU can run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;

use super::*;
use crate::tls::{TlsProviderRequest, crypto_provider_for, tls_provider_for};

struct Pki {
    dir: PathBuf,
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

/// The `-newkey` algorithm and its `-pkeyopt` for `openssl req`.
fn key_args(rsa: bool) -> (&'static str, &'static str) {
    if rsa {
        ("rsa", "rsa_keygen_bits:2048")
    } else {
        ("ec", "ec_paramgen_curve:P-256")
    }
}

/// A self-signed v3 CA `name` (`name.pem`, `name.key`).
fn make_ca(dir: &Path, name: &str, rsa: bool) {
    let (kind, value) = key_args(rsa);
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            kind,
            "-pkeyopt",
            value,
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
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

/// A key and CSR `name.key`, `name.csr` with subject `subject`.
fn make_csr(dir: &Path, name: &str, subject: &str, rsa: bool) {
    let (kind, value) = key_args(rsa);
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            kind,
            "-pkeyopt",
            value,
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            subject,
        ],
    );
}

/// Signs `name.csr` with `ca` into `name.pem`: with the extensions `ext`
/// (openssl extension-file lines) as v3, or without any (`None`), which
/// OpenSSL 3.0 writes as v1, as in Kafka's documentation.
fn sign(dir: &Path, name: &str, ca: &str, ext: Option<&str>) {
    let mut args: Vec<String> = [
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
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(ext) = ext {
        std::fs::write(dir.join(format!("{name}.ext")), ext).expect("write ext file");
        args.extend(["-extfile".to_string(), format!("{name}.ext")]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    openssl(dir, &args);
}

/// A leaf `name` with subject `subject` signed by `ca`.
fn leaf(dir: &Path, name: &str, subject: &str, ca: &str, rsa: bool, ext: Option<&str>) {
    make_csr(dir, name, subject, rsa);
    sign(dir, name, ca, ext);
}

const SERVER: &str = "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";

fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kafka-lite-verify-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create pki dir");
        let d = dir.as_path();
        make_ca(d, "ca", false);
        make_ca(d, "rsaca", true);
        // An RSA root with the EC root's name.
        openssl(
            d,
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-nodes",
                "-keyout",
                "rsaca-as-ca.key",
                "-out",
                "rsaca-as-ca.pem",
                "-days",
                "30",
                "-subj",
                "/CN=ca",
            ],
        );
        make_ca(d, "untrusted", false);
        // A CA limited to names under corp.example, and an intermediate so
        // limited under the unconstrained CA.
        make_csr(d, "ncca", "/CN=ncca", false);
        std::fs::write(
            d.join("ncca.ext"),
            "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n\
             nameConstraints=critical,permitted;DNS:corp.example\n",
        )
        .expect("write ext");
        openssl(
            d,
            &[
                "x509", "-req", "-in", "ncca.csr", "-signkey", "ncca.key", "-days", "30",
                "-extfile", "ncca.ext", "-out", "ncca.pem",
            ],
        );
        leaf(
            d,
            "ncint",
            "/CN=ncint",
            "ca",
            false,
            Some(
                "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n\
                 nameConstraints=critical,permitted;DNS:corp.example\n",
            ),
        );
        let san = |names: &str| format!("{SERVER}subjectAltName={names}\n");
        leaf(d, "nccn", "/CN=b.corp.example", "ncca", false, Some(SERVER));
        leaf(d, "nccnout", "/CN=localhost", "ncca", false, Some(SERVER));
        leaf(
            d,
            "ncsan",
            "/CN=x",
            "ncca",
            false,
            Some(&san("DNS:b.corp.example")),
        );
        leaf(
            d,
            "ncsanout",
            "/CN=x",
            "ncca",
            false,
            Some(&san("DNS:localhost")),
        );
        leaf(
            d,
            "underncint",
            "/CN=localhost",
            "ncint",
            false,
            Some(SERVER),
        );
        leaf(d, "v1underncca", "/CN=b.corp.example", "ncca", false, None);
        // A v1 root, self-signed with `openssl x509 -req -signkey`.
        make_csr(d, "v1ca", "/CN=v1ca", false);
        openssl(
            d,
            &[
                "x509", "-req", "-in", "v1ca.csr", "-signkey", "v1ca.key", "-days", "30", "-out",
                "v1ca.pem",
            ],
        );
        leaf(d, "v1", "/O=kafka/CN=localhost", "ca", false, None);
        leaf(d, "v1rsa", "/CN=localhost", "rsaca", true, None);

        leaf(d, "v1untrusted", "/CN=localhost", "untrusted", false, None);
        leaf(d, "v1underv1", "/CN=localhost", "v1ca", false, None);
        // The most specific CN is the last one.
        leaf(
            d,
            "v1twocn",
            "/CN=localhost/CN=broker.example",
            "ca",
            false,
            None,
        );
        leaf(d, "nosan", "/CN=localhost", "ca", false, Some(SERVER));
        leaf(d, "nosanrsa", "/CN=localhost", "rsaca", true, Some(SERVER));
        leaf(
            d,
            "sanother",
            "/CN=localhost",
            "ca",
            false,
            Some(&san("DNS:broker.example")),
        );
        leaf(
            d,
            "wildsan",
            "/CN=localhost",
            "ca",
            false,
            Some(&san("DNS:*.kafka.example")),
        );
        leaf(
            d,
            "partialcn",
            "/CN=b*.kafka.example",
            "ca",
            false,
            Some(SERVER),
        );
        leaf(
            d,
            "kucertsign",
            "/CN=localhost",
            "ca",
            false,
            Some(&format!("{SERVER}keyUsage=critical,keyCertSign\n")),
        );
        leaf(
            d,
            "kusig",
            "/CN=localhost",
            "ca",
            false,
            Some(&format!("{SERVER}keyUsage=critical,digitalSignature\n")),
        );
        leaf(
            d,
            "kuenc",
            "/CN=localhost",
            "ca",
            false,
            Some(&format!("{SERVER}keyUsage=critical,keyEncipherment\n")),
        );
        leaf(
            d,
            "nsclient",
            "/CN=localhost",
            "ca",
            false,
            Some(&format!("{SERVER}nsCertType=client\n")),
        );
        leaf(
            d,
            "nsserver",
            "/CN=localhost",
            "ca",
            false,
            Some(&format!("{SERVER}nsCertType=client,server\n")),
        );
        // A v1 certificate signed with SHA-1.
        make_csr(d, "v1sha1", "/CN=localhost", false);
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-sha1",
                "-in",
                "v1sha1.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "30",
                "-out",
                "v1sha1.pem",
            ],
        );
        leaf(d, "v1wildcn", "/CN=*.kafka.example", "ca", false, None);
        leaf(d, "v1tldwild", "/CN=*.example", "ca", false, None);
        leaf(
            d,
            "ipsan",
            "/CN=localhost",
            "ca",
            false,
            Some(&san("IP:127.0.0.1,IP:::1")),
        );
        // An IP SAN only: no DNS entry, so Java still reads the CN for a host name.
        leaf(
            d,
            "iponly",
            "/CN=localhost",
            "ca",
            false,
            Some(&san("IP:10.0.0.1")),
        );
        leaf(d, "ipcn", "/CN=127.0.0.1", "ca", false, None);
        leaf(
            d,
            "underv1",
            "/CN=localhost",
            "v1ca",
            false,
            Some(&san("DNS:localhost")),
        );
        // Intermediates: a v1 one (no basicConstraints) and a proper v3 one.
        leaf(d, "v1int", "/CN=v1int", "ca", false, None);
        leaf(
            d,
            "v3int",
            "/CN=v3int",
            "ca",
            false,
            Some("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n"),
        );
        leaf(
            d,
            "underv1int",
            "/CN=localhost",
            "v1int",
            false,
            Some(&san("DNS:localhost")),
        );
        leaf(
            d,
            "underv3int",
            "/CN=localhost",
            "v3int",
            false,
            Some(&san("DNS:localhost")),
        );
        leaf(d, "v1underv3int", "/CN=localhost", "v3int", false, None);
        Pki { dir }
    })
}

fn cert(name: &str) -> CertificateDer<'static> {
    let path = pki().dir.join(format!("{name}.pem"));
    CertificateDer::from_pem_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Whether `der` is an X.509 v1 certificate (no version field).
fn is_v1(der: &CertificateDer<'_>) -> bool {
    RawCertificate::parse(der).expect("parse").version == Version::V1
}

/// Every crypto provider this build can run here.
fn providers() -> Vec<(TlsProviderRequest, Arc<CryptoProvider>)> {
    [
        TlsProviderRequest::Portable,
        TlsProviderRequest::Graviola,
        TlsProviderRequest::Ring,
    ]
    .into_iter()
    .filter_map(|request| {
        tls_provider_for(Some(request))
            .ok()
            .map(|choice| (request, crypto_provider_for(&choice)))
    })
    .collect()
}

fn roots(cas: &[&str]) -> Arc<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for ca in cas {
        roots.add(cert(ca)).expect("add trust anchor");
    }
    Arc::new(roots)
}

/// Now, as the certificates (valid from now for 30 days) see it: after
/// they are made, which the first call does.
fn now() -> UnixTime {
    pki();
    UnixTime::now()
}

fn days(n: u64) -> Duration {
    Duration::from_secs(n * 86_400)
}

/// The verdict on `leaf` (with `chain` as intermediates) for `host`, with
/// `cas` trusted, the host name check as `check_hostname`, at `at`, on
/// every provider; they must all agree.
fn verify_at(
    leaf: &str,
    chain: &[&str],
    host: &str,
    cas: &[&str],
    check_hostname: bool,
    at: UnixTime,
) -> Result<(), rustls::Error> {
    let end_entity = cert(leaf);
    let intermediates: Vec<_> = chain.iter().map(|c| cert(c)).collect();
    let server_name = ServerName::try_from(host.to_string()).expect("server name");
    let mut verdicts = providers().into_iter().map(|(request, provider)| {
        let verifier = JavaRulesVerifier::new(roots(cas), provider, check_hostname);
        let verdict = verifier
            .verify_server_cert(&end_entity, &intermediates, &server_name, &[], at)
            .map(|_| ());
        (request, verdict)
    });
    let (first_request, first) = verdicts.next().expect("at least one provider");
    for (request, verdict) in verdicts {
        assert_eq!(
            comparable(&verdict),
            comparable(&first),
            "{request:?} and {first_request:?} disagree on {leaf} for {host}"
        );
    }
    first
}

/// A verdict as providers must agree on it: the whole of it, except the
/// list of algorithms a provider supports, which differs between them.
fn comparable(verdict: &Result<(), rustls::Error>) -> String {
    let text = format!("{verdict:?}");
    match text.find("supported_algorithms") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn verify(leaf: &str, host: &str, cas: &[&str]) -> Result<(), rustls::Error> {
    verify_at(leaf, &[], host, cas, true, now())
}

fn accepted(leaf: &str, host: &str, cas: &[&str]) {
    if let Err(e) = verify(leaf, host, cas) {
        panic!("{leaf} for {host} refused: {e}");
    }
}

fn refused(leaf: &str, host: &str, cas: &[&str]) -> rustls::Error {
    match verify(leaf, host, cas) {
        Ok(()) => panic!("{leaf} for {host} accepted"),
        Err(e) => e,
    }
}

fn is_name_error(e: &rustls::Error) -> bool {
    matches!(
        e,
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
        )
    )
}

#[test]
fn openssl_x509_req_without_extensions_makes_v1_certificates() {
    for name in ["v1", "v1rsa", "v1ca", "v1int", "v1underv3int"] {
        assert!(is_v1(&cert(name)), "{name} is not v1");
    }
    for name in ["nosan", "ca", "underv1int"] {
        assert!(!is_v1(&cert(name)), "{name} is v1");
    }
    assert!(!providers().is_empty());
}

#[test]
fn v1_leaf_from_a_trusted_ca_is_accepted_by_its_cn() {
    accepted("v1", "localhost", &["ca"]);
    accepted("v1", "LocalHost", &["ca"]);
    accepted("v1rsa", "localhost", &["rsaca"]);
    // Also with the CA among others, and a v1 trust anchor.
    accepted("v1", "localhost", &["untrusted", "rsaca", "ca"]);
    accepted("v1underv1", "localhost", &["v1ca"]);
}

#[test]
fn v1_leaf_for_another_host_is_refused() {
    let e = refused("v1", "broker.example", &["ca"]);
    assert!(is_name_error(&e), "{e}");
    assert!(e.to_string().contains("CN=localhost"), "{e}");
    refused("v1rsa", "localhost.example", &["rsaca"]);
    // An IP address never matches a CN.
    let e = refused("ipcn", "127.0.0.1", &["ca"]);
    assert!(is_name_error(&e), "{e}");
}

#[test]
fn the_most_specific_cn_is_the_one_checked() {
    accepted("v1twocn", "broker.example", &["ca"]);
    refused("v1twocn", "localhost", &["ca"]);
}

#[test]
fn v3_without_subject_alt_name_is_accepted_by_its_cn() {
    accepted("nosan", "localhost", &["ca"]);
    accepted("nosanrsa", "localhost", &["rsaca"]);
    refused("nosan", "broker.example", &["ca"]);
    // An IP-only subjectAltName has no DNS entry: the CN still names the host.
    accepted("iponly", "localhost", &["ca"]);
    refused("iponly", "127.0.0.1", &["ca"]);
    accepted("iponly", "10.0.0.1", &["ca"]);
}

#[test]
fn with_a_dns_subject_alt_name_the_cn_is_ignored() {
    let e = refused("sanother", "localhost", &["ca"]);
    assert!(is_name_error(&e), "{e}");
    // The message lists what counts: the DNS entry, not the ignored CN.
    assert!(e.to_string().contains("DNS:broker.example"), "{e}");
    assert!(!e.to_string().contains("CN=localhost"), "{e}");
    accepted("sanother", "broker.example", &["ca"]);
}

#[test]
fn wildcards_match_one_leftmost_label() {
    accepted("wildsan", "a.kafka.example", &["ca"]);
    accepted("wildsan", "Broker-1.Kafka.Example", &["ca"]);
    refused("wildsan", "a.b.kafka.example", &["ca"]);
    refused("wildsan", "kafka.example", &["ca"]);
    accepted("v1wildcn", "broker.kafka.example", &["ca"]);
    refused("v1wildcn", "kafka.example", &["ca"]);
    refused("v1wildcn", "a.broker.kafka.example", &["ca"]);
    // Java's partial wildcard in the leftmost label.
    accepted("partialcn", "broker.kafka.example", &["ca"]);
    accepted("partialcn", "b.kafka.example", &["ca"]);
    refused("partialcn", "roker.kafka.example", &["ca"]);
    // Stricter than Java: no wildcard over a single label.
    refused("v1tldwild", "a.example", &["ca"]);
}

#[test]
fn ip_subject_alt_names_match_ip_addresses_exactly() {
    accepted("ipsan", "127.0.0.1", &["ca"]);
    accepted("ipsan", "::1", &["ca"]);
    accepted("ipsan", "0:0:0:0:0:0:0:1", &["ca"]);
    refused("ipsan", "127.0.0.2", &["ca"]);
    // The CN does not count once a host name is checked against IP entries
    // only... and "localhost" has no DNS entry here, so the CN does count.
    accepted("ipsan", "localhost", &["ca"]);
}

#[test]
fn hostname_check_off_accepts_another_host_but_not_an_untrusted_ca() {
    for leaf in ["v1", "nosan", "sanother"] {
        verify_at(leaf, &[], "wrong.example", &["ca"], false, now())
            .unwrap_or_else(|e| panic!("{leaf}: {e}"));
        assert!(verify_at(leaf, &[], "wrong.example", &["ca"], true, now()).is_err());
    }
    let e = verify_at("v1untrusted", &[], "localhost", &["ca"], false, now()).unwrap_err();
    assert_eq!(
        e,
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
    );
}

#[test]
fn untrusted_ca_is_refused() {
    for leaf in ["v1", "nosan"] {
        let e = refused(leaf, "localhost", &["untrusted", "rsaca"]);
        assert_eq!(
            e,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
            "{leaf}"
        );
    }
    refused("v1untrusted", "localhost", &["ca"]);
}

#[test]
fn expired_and_not_yet_valid_are_refused() {
    for leaf in ["v1", "v1rsa", "nosan"] {
        let cas: &[&str] = if leaf == "v1rsa" { &["rsaca"] } else { &["ca"] };
        let later = UnixTime::since_unix_epoch(Duration::from_secs(now().as_secs()) + days(31));
        let e = verify_at(leaf, &[], "localhost", cas, true, later).unwrap_err();
        assert!(
            matches!(
                e,
                rustls::Error::InvalidCertificate(
                    CertificateError::Expired | CertificateError::ExpiredContext { .. }
                )
            ),
            "{leaf}: {e}"
        );
        let earlier = UnixTime::since_unix_epoch(Duration::from_secs(now().as_secs()) - days(1));
        let e = verify_at(leaf, &[], "localhost", cas, false, earlier).unwrap_err();
        assert!(
            matches!(
                e,
                rustls::Error::InvalidCertificate(
                    CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. }
                )
            ),
            "{leaf}: {e}"
        );
        // And within the validity, on its last day.
        let last_day = UnixTime::since_unix_epoch(Duration::from_secs(now().as_secs()) + days(29));
        verify_at(leaf, &[], "localhost", cas, true, last_day).unwrap();
    }
}

/// `name`'s certificate with one byte of its signature changed.
fn with_broken_signature(name: &str) -> CertificateDer<'static> {
    let mut der = cert(name).to_vec();
    let last = der.len() - 1;
    der[last] ^= 0x01;
    CertificateDer::from(der)
}

/// `name`'s certificate with one byte of its subject changed.
fn with_changed_subject(name: &str) -> CertificateDer<'static> {
    let der = cert(name).to_vec();
    let at = der
        .windows(9)
        .position(|w| w == b"localhost")
        .expect("subject names localhost");
    let mut der = der;
    der[at] = b'L';
    CertificateDer::from(der)
}

#[test]
fn broken_signature_is_refused() {
    let server_name = ServerName::try_from("localhost").expect("name");
    for (leaf, ca) in [("v1", "ca"), ("v1rsa", "rsaca"), ("nosan", "ca")] {
        for broken in [with_broken_signature(leaf), with_changed_subject(leaf)] {
            for (request, provider) in providers() {
                let verifier = JavaRulesVerifier::new(roots(&[ca]), provider, false);
                let e = verifier
                    .verify_server_cert(&broken, &[], &server_name, &[], now())
                    .map(|_| ())
                    .unwrap_err();
                assert!(
                    matches!(
                        e,
                        rustls::Error::InvalidCertificate(
                            CertificateError::BadSignature | CertificateError::BadEncoding
                        )
                    ),
                    "{leaf} on {request:?}: {e}"
                );
            }
        }
    }
}

#[test]
fn v1_signature_algorithms_are_the_providers_only() {
    let e = refused("v1sha1", "localhost", &["ca"]);
    assert!(
        matches!(
            e,
            rustls::Error::InvalidCertificate(
                CertificateError::UnsupportedSignatureAlgorithmContext { .. }
            )
        ),
        "{e}"
    );
    // An ECDSA signature under an RSA root: the key does not fit.
    let e = refused("v1", "localhost", &["rsaca-as-ca"]);
    assert!(
        matches!(
            e,
            rustls::Error::InvalidCertificate(
                CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext { .. }
            )
        ),
        "{e}"
    );
}

#[test]
fn v1_is_never_an_intermediate() {
    // Control: the same chain through a v3 intermediate is accepted.
    verify_at("underv3int", &["v3int"], "localhost", &["ca"], true, now()).unwrap();
    let e = verify_at("underv1int", &["v1int"], "localhost", &["ca"], true, now()).unwrap_err();
    assert!(matches!(e, rustls::Error::InvalidCertificate(_)), "{e}");
    let e = verify_at("underv1int", &["v1int"], "localhost", &["ca"], false, now()).unwrap_err();
    assert!(matches!(e, rustls::Error::InvalidCertificate(_)), "{e}");
    // A v1 leaf is accepted only directly under a trust anchor.
    let e = verify_at(
        "v1underv3int",
        &["v3int"],
        "localhost",
        &["ca"],
        true,
        now(),
    )
    .unwrap_err();
    assert_eq!(
        e,
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
    );
}

#[test]
fn key_usage_must_allow_digital_signatures_as_java_requires() {
    accepted("kusig", "localhost", &["ca"]);
    for leaf in ["kucertsign", "kuenc"] {
        let e = refused(leaf, "localhost", &["ca"]);
        assert!(
            e.to_string()
                .contains("key usage does not allow digital signatures"),
            "{leaf}: {e}"
        );
    }
    // Also with the host name check off.
    verify_at("kucertsign", &[], "localhost", &["ca"], false, now()).unwrap_err();
}

#[test]
fn a_netscape_certificate_type_must_allow_ssl_servers_as_java_requires() {
    accepted("nsserver", "localhost", &["ca"]);
    let e = refused("nsclient", "localhost", &["ca"]);
    assert!(e.to_string().contains("does not allow SSL servers"), "{e}");
}

#[test]
fn a_common_name_does_not_escape_name_constraints() {
    // subjectAltName entries are checked against the constraints by webpki.
    accepted("ncsan", "b.corp.example", &["ncca"]);
    refused("ncsanout", "localhost", &["ncca"]);
    // A common name is not accepted under constraints, inside or outside.
    for (leaf, host) in [("nccn", "b.corp.example"), ("nccnout", "localhost")] {
        let e = refused(leaf, host, &["ncca"]);
        assert!(e.to_string().contains("name constraints"), "{leaf}: {e}");
        // With the host name check off, nothing is matched: accepted.
        verify_at(leaf, &[], host, &["ncca"], false, now()).unwrap();
    }
    let e = verify_at("underncint", &["ncint"], "localhost", &["ca"], true, now()).unwrap_err();
    assert!(e.to_string().contains("name constraints"), "{e}");
    let e = refused("v1underncca", "b.corp.example", &["ncca"]);
    assert!(e.to_string().contains("name constraints"), "{e}");
}

#[test]
fn v1_trust_anchor_issues_v3_leaves() {
    accepted("underv1", "localhost", &["v1ca"]);
    refused("underv1", "localhost", &["ca"]);
}

#[test]
fn name_templates_follow_java_with_the_documented_restrictions() {
    let yes = [
        ("localhost", "localhost"),
        ("LOCALHOST", "localhost"),
        ("a.b.c", "*.b.c"),
        ("foo.b.c", "f*.b.c"),
        ("foo.b.c", "*o.b.c"),
        ("foo.b.c", "f*o.b.c"),
        ("fo.b.c", "f*o.b.c"),
        ("f.b.c", "f*.b.c"),
        ("localhost.", "localhost"),
    ];
    for (host, template) in yes {
        assert!(
            name_matches_template(host, template),
            "{host} vs {template}"
        );
    }
    let no = [
        ("localhost", "localhost."),
        ("a.b.c", "*"),
        ("a", "*"),
        ("a.", "*."),
        ("a.b.c", "a.*.c"),
        ("a.b.c", "*.*.c"),
        ("ab.b.c", "a**.b.c"),
        ("a.b", "*.b"),
        ("b.c", "*.b.c"),
        ("x.a.b.c", "*.b.c"),
        ("f.b.c", "f*o.b.c"),
        ("a.b.c", "*a"),
        ("a_b.c.d", "a_b.c.d"),
        ("a.b.c", "-*.b.c"),
        ("héllo.b.c", "*.b.c"),
        ("a..c", "a..c"),
        ("", ""),
    ];
    for (host, template) in no {
        assert!(
            !name_matches_template(host, template),
            "{host} vs {template}"
        );
    }
}

#[test]
fn malformed_certificates_are_refused_with_an_error_not_a_panic() {
    let server_name = ServerName::try_from("localhost").expect("name");
    let good = cert("v1").to_vec();
    let mut inputs: Vec<Vec<u8>> = vec![vec![], vec![0x30], vec![0x30, 0x00], good.clone()];
    // Every truncation and a byte flip at every position of the v1 certificate.
    for len in 0..good.len() {
        inputs.push(good[..len].to_vec());
    }
    for at in 0..good.len() {
        let mut flipped = good.clone();
        flipped[at] ^= 0x80;
        inputs.push(flipped);
    }
    let (_, provider) = providers().remove(0);
    let verifier = JavaRulesVerifier::new(roots(&["ca"]), provider, true);
    let mut accepted = 0;
    for input in &inputs {
        let der = CertificateDer::from(input.clone());
        if verifier
            .verify_server_cert(&der, &[], &server_name, &[], now())
            .is_ok()
        {
            accepted += 1;
        }
    }
    // Only the intact certificate: every changed byte breaks the structure or
    // the signature.
    assert_eq!(accepted, 1);
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

/// An in-memory handshake of `version` with a server presenting
/// `leaf.pem` and signing with `key.key`, the client trusting `ca`; the
/// first error either side reports.
fn handshake(
    leaf: &str,
    key: &str,
    ca: &str,
    version: &'static rustls::SupportedProtocolVersion,
    provider: Arc<CryptoProvider>,
) -> Result<(), rustls::Error> {
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(pki().dir.join(format!("{key}.key")))
        .expect("key");
    let signing_key = provider
        .key_provider
        .load_private_key(key)
        .expect("load key");
    let certified = rustls::sign::CertifiedKey::new(vec![cert(leaf)], signing_key);
    let server_config = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[version])
        .expect("server versions")
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(Always(Arc::new(certified))));
    let verifier = JavaRulesVerifier::new(roots(&[ca]), provider.clone(), true);
    let client_config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[version])
        .expect("client versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    let mut client = rustls::ClientConnection::new(
        Arc::new(client_config),
        ServerName::try_from("localhost").expect("name"),
    )?;
    let mut server = rustls::ServerConnection::new(Arc::new(server_config))?;
    for _ in 0..20 {
        let mut wire = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut wire).expect("client write");
        }
        let mut input = &wire[..];
        while !input.is_empty() {
            server.read_tls(&mut input).expect("server read");
        }
        server.process_new_packets()?;
        let mut wire = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut wire).expect("server write");
        }
        let mut input = &wire[..];
        while !input.is_empty() {
            client.read_tls(&mut input).expect("client read");
        }
        client.process_new_packets()?;
        if !client.is_handshaking() && !server.is_handshaking() {
            return Ok(());
        }
    }
    panic!("handshake of {leaf} did not finish");
}

#[test]
fn handshake_signatures_of_v1_certificates_are_checked_in_tls12_and_tls13() {
    for (request, provider) in providers() {
        for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
            for (leaf, ca) in [("v1", "ca"), ("v1rsa", "rsaca"), ("nosan", "ca")] {
                handshake(leaf, leaf, ca, version, provider.clone()).unwrap_or_else(|e| {
                    panic!("{leaf} with {version:?} on {request:?}: {e}");
                });
            }
            // The server signs with a key that is not its certificate's.
            for (leaf, key, ca) in [("v1", "nosan", "ca"), ("v1rsa", "nosanrsa", "rsaca")] {
                let e = handshake(leaf, key, ca, version, provider.clone()).unwrap_err();
                assert_eq!(
                    e,
                    rustls::Error::InvalidCertificate(CertificateError::BadSignature),
                    "{leaf} with {version:?} on {request:?}"
                );
            }
        }
    }
}

#[test]
fn extensions_are_found_also_with_an_explicit_critical_false() {
    // Extensions { keyUsage, critical FALSE (explicit, as some CAs write it),
    // digitalSignature } then subjectAltName without the critical field.
    let der = [
        0x30, 0x1d, // Extensions
        0x30, 0x0e, 0x06, 0x03, 0x55, 0x1d, 0x0f, 0x01, 0x01, 0x00, 0x04, 0x04, 0x03, 0x02, 0x07,
        0x80, // keyUsage
        0x30, 0x0b, 0x06, 0x03, 0x55, 0x1d, 0x11, 0x04, 0x04, 0x30, 0x02, 0x82, 0x00, // SAN
    ];
    assert_eq!(
        find_extension(&der, KEY_USAGE).unwrap(),
        Some(&[0x03, 0x02, 0x07, 0x80][..])
    );
    assert_eq!(
        find_extension(&der, SUBJECT_ALT_NAME).unwrap(),
        Some(&[0x30, 0x02, 0x82, 0x00][..])
    );
    assert_eq!(find_extension(&der, COMMON_NAME).unwrap(), None);
    // Malformed: a value that is not an OCTET STRING, a truncated list.
    let mut bad = der;
    bad[12] = 0x05;
    assert!(find_extension(&bad, SUBJECT_ALT_NAME).is_err());
    assert!(find_extension(&der[..20], SUBJECT_ALT_NAME).is_err());
}
