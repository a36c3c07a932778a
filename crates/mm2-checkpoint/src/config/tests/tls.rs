//! TLS.

use super::*;

fn tls_of(text: &str) -> TlsSettings {
    let config = load_with(text, &tls_env()).unwrap_or_else(|e| panic!("config rejected: {e}"));
    config.flows[0].target.tls.clone().unwrap()
}

#[test]
fn ssl_without_trust_store_uses_default_roots_and_verifies_host_names() {
    let tls = tls_of(&ssl(""));
    assert_eq!(tls.trust, TrustRoots::Default);
    assert!(tls.identity.is_none());
    assert!(tls.verify_hostname);
}

#[test]
fn pem_trust_store_file_is_read_and_parsed() {
    let tls = tls_of(&ssl(
        "B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem",
    ));
    assert_eq!(
        tls.trust,
        TrustRoots::Pem {
            source: PemSource::File("/etc/kafka/ca.pem".into()),
            key: KeyOrigin {
                key: "B.ssl.truststore.location".into(),
                line: Some(7)
            }
        }
    );
    assert_eq!(tls.load(&tls_env()).unwrap().roots.len(), 1);
}

#[test]
fn inline_pem_certificates_are_accepted() {
    let inline = TEST_CERT.replace('\n', "\\n");
    let tls = tls_of(&ssl(&format!(
        "B.ssl.truststore.type = PEM\nB.ssl.truststore.certificates = {inline}"
    )));
    assert_eq!(tls.load(&tls_env()).unwrap().roots.len(), 1);
}

#[test]
fn inline_pem_joined_by_continuation_lines_is_accepted_like_kafka() {
    // Continuation lines drop the newlines, so the PEM arrives on one line.
    let body: Vec<&str> = TEST_CERT.lines().collect();
    let joined = body.join(" \\\n    ");
    let tls = tls_of(&ssl(&format!(
        "B.ssl.truststore.type = PEM\nB.ssl.truststore.certificates = {joined}"
    )));
    assert_eq!(tls.load(&tls_env()).unwrap().roots.len(), 1);
}

#[test]
fn missing_trust_store_file_is_an_error_naming_the_key() {
    assert_rejected(
        &ssl("B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /nope.pem"),
        "B.ssl.truststore.location",
        &["/nope.pem"],
    );
}

#[test]
fn trust_store_without_certificates_is_an_error() {
    let env = tls_env().with_file("/etc/kafka/empty.pem", "nothing here\n");
    let e = error_with(
        &ssl("B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/empty.pem"),
        &env,
    );
    assert_eq!(e.key(), Some("B.ssl.truststore.location"));
    assert!(e.message().contains("CERTIFICATE"), "{e}");
}

#[test]
fn a_store_type_java_reads_only_with_another_provider_is_an_error_naming_the_types_read() {
    assert_rejected(
        &ssl("B.ssl.truststore.type = BCFKS\nB.ssl.truststore.location = /etc/kafka/ca.bcfks"),
        "B.ssl.truststore.type",
        &["`BCFKS` is not supported", "PKCS12, JKS, JCEKS or PEM"],
    );
}

#[test]
fn store_types_default_to_jks_like_kafka() {
    assert_rejected(
        &ssl("B.ssl.keystore.location = /etc/kafka/client.jks"),
        "B.ssl.keystore.password",
        &["required for a JKS key store"],
    );
}

#[test]
fn pkcs12_key_stores_need_their_password_trust_stores_may_go_without() {
    // Whether the trust store can be read without it is known when it is
    // opened (tests/validate_material.rs, with keytool's stores).
    let v = check(
        &ssl("B.ssl.truststore.type = PKCS12\nB.ssl.truststore.location = /etc/kafka/ca.p12"),
        &FakeEnvironment::default(),
        Secrets::Skip,
    );
    assert!(v.is_ok(), "{:?}", v.errors);
    assert_rejected(
        &ssl("B.ssl.keystore.type = PKCS12\nB.ssl.keystore.location = /etc/kafka/client.p12"),
        "B.ssl.keystore.password",
        &["PKCS12"],
    );
}

#[test]
fn pkcs12_stores_are_described_and_their_passwords_kept_secret() {
    let text = ssl(
        "B.ssl.truststore.type = PKCS12\nB.ssl.truststore.location = /etc/kafka/ca.p12\n\
         B.ssl.truststore.password = trust-Pw-91\n\
         B.ssl.keystore.type = PKCS12\nB.ssl.keystore.location = /etc/kafka/client.p12\n\
         B.ssl.keystore.password = key-Pw-92\nB.ssl.key.password = key-Pw-92",
    );
    let config = MirrorConfig::from_properties(
        &Properties::parse(&text).unwrap(),
        &tls_env().with_file("/etc/kafka/ca.p12", "not a store"),
    );
    // The fake file is no PKCS12 store: the error names the key and says so.
    let e = config.unwrap_err();
    assert_eq!(e.key(), Some("B.ssl.truststore.location"), "{e}");
    assert!(e.message().contains("not a PKCS12 store"), "{e}");
    assert!(!e.to_string().contains("trust-Pw-91"), "{e}");
}

#[test]
fn a_pkcs12_key_password_other_than_the_store_password_is_an_error() {
    assert_rejected(
        &ssl(
            "B.ssl.keystore.type = PKCS12\nB.ssl.keystore.location = /etc/kafka/client.p12\n\
             B.ssl.keystore.password = a\nB.ssl.key.password = b",
        ),
        "B.ssl.key.password",
        &["one password"],
    );
}

#[test]
fn pem_chain_and_key_values_without_pem_text_are_file_paths() {
    let env = tls_env()
        .with_file("/etc/user/user.crt", TEST_CERT)
        .with_file("/etc/user/user.key", TEST_KEY);
    let config = load_with(
        &ssl(
            "B.ssl.keystore.type = PEM\nB.ssl.keystore.certificate.chain = /etc/user/user.crt\n\
             B.ssl.keystore.key = /etc/user/user.key",
        ),
        &env,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let tls = config.flows[0].target.tls.clone().unwrap();
    let id = tls.identity.as_ref().unwrap();
    assert_eq!(
        id.certificate_chain,
        PemSource::File("/etc/user/user.crt".into())
    );
    assert_eq!(id.private_key, PemSource::File("/etc/user/user.key".into()));
    assert!(tls.load(&env).unwrap().identity.is_some());
}

#[test]
fn trust_store_location_and_inline_certificates_together_are_an_error() {
    assert_rejected_with_tls(
        &ssl(
            "B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem\nB.ssl.truststore.certificates = x",
        ),
        "B.ssl.truststore.certificates",
        &[],
    );
}

#[test]
fn trust_store_password_with_pem_is_an_error() {
    let e = error_with(
        &ssl(
            "B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem\nB.ssl.truststore.password = pw",
        ),
        &tls_env(),
    );
    assert_eq!(e.key(), Some("B.ssl.truststore.password"));
    assert!(!e.to_string().contains("pw\n"));
}

#[test]
fn pem_key_store_file_gives_a_client_identity() {
    let tls = tls_of(&ssl(
        "B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/client.pem",
    ));
    let material = tls.load(&tls_env()).unwrap();
    let (chain, _key) = material.identity.unwrap();
    assert_eq!(chain.len(), 1);
}

#[test]
fn inline_key_store_needs_chain_and_key() {
    let key = TEST_KEY.replace('\n', "\\n");
    let chain = TEST_CERT.replace('\n', "\\n");
    let tls = tls_of(&ssl(&format!(
        "B.ssl.keystore.type = PEM\nB.ssl.keystore.key = {key}\nB.ssl.keystore.certificate.chain = {chain}"
    )));
    assert!(tls.load(&tls_env()).unwrap().identity.is_some());
    let e = error(&ssl(&format!(
        "B.ssl.keystore.type = PEM\nB.ssl.keystore.key = {key}"
    )));
    assert_eq!(e.key(), Some("B.ssl.keystore.certificate.chain"));
}

/// A P-256 key that belongs to no certificate of these tests.
const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgzPT90dXZ+H6RRwZY
g4KFuGyuBY1Zl0ZQusJKEaj1SoOhRANCAASftYCRO9AM56m45F4fN1HXkdevncJN
mhzBXulwnhe/filqvvfh1IYblbkszRgs0WWQooF+pBeTLLYawKV8OK2Y
-----END PRIVATE KEY-----
";

#[test]
fn a_key_that_belongs_to_another_certificate_is_an_error_naming_key_and_line() {
    let key = OTHER_KEY.replace('\n', "\\n");
    let chain = TEST_CERT.replace('\n', "\\n");
    let e = error(&ssl(&format!(
        "B.ssl.keystore.type = PEM\nB.ssl.keystore.certificate.chain = {chain}\nB.ssl.keystore.key = {key}"
    )));
    assert_eq!(e.key(), Some("B.ssl.keystore.key"), "{e}");
    assert!(e.line().is_some(), "{e}");
    assert!(e.message().contains("does not belong"), "{e}");
    assert!(e.message().contains("CN=mm2-checkpoint test"), "{e}");
    for secret_line in OTHER_KEY.lines().filter(|l| !l.starts_with("-----")) {
        assert!(!e.to_string().contains(secret_line), "{e}");
    }

    // The same mismatch in one file names the location key.
    let env = tls_env().with_file("/etc/kafka/wrong.pem", &format!("{OTHER_KEY}{TEST_CERT}"));
    let e = error_with(
        &ssl("B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/wrong.pem"),
        &env,
    );
    assert_eq!(e.key(), Some("B.ssl.keystore.location"), "{e}");
    assert!(e.message().contains("does not belong"), "{e}");
}

#[test]
fn a_certificate_with_a_garbage_body_is_an_error_naming_key_and_line() {
    // Valid PEM and base64, but not DER: passed the old shape-only check.
    let garbage = "-----BEGIN CERTIFICATE-----\\nAAECAwQFBgcICQ==\\n-----END CERTIFICATE-----";
    let e = error(&ssl(&format!(
        "B.ssl.truststore.type = PEM\nB.ssl.truststore.certificates = {garbage}"
    )));
    assert_eq!(e.key(), Some("B.ssl.truststore.certificates"), "{e}");
    assert!(e.line().is_some(), "{e}");
    assert!(
        e.message().contains("certificate 1 of 1") && e.message().contains("not a valid X.509"),
        "{e}"
    );

    // The second certificate of a chain file is checked too.
    let env = tls_env().with_file(
        "/etc/kafka/chain.pem",
        &format!(
            "{TEST_CERT}-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n"
        ),
    );
    let e = error_with(
        &ssl("B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/chain.pem"),
        &env,
    );
    assert!(e.message().contains("certificate 2 of 2"), "{e}");
}

#[test]
fn a_private_key_with_a_garbage_body_is_an_error() {
    let env = tls_env().with_file(
        "/etc/kafka/badkey.pem",
        &format!(
            "-----BEGIN PRIVATE KEY-----\nAAECAwQFBgcICQ==\n-----END PRIVATE KEY-----\n{TEST_CERT}"
        ),
    );
    let e = error_with(
        &ssl("B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/badkey.pem"),
        &env,
    );
    assert_eq!(e.key(), Some("B.ssl.keystore.location"), "{e}");
    assert!(e.message().contains("cannot be used"), "{e}");
    assert!(!e.to_string().contains("AAECAwQFBgcICQ"), "{e}");
}

#[test]
fn certificates_outside_their_validity_are_warnings_with_key_line_and_subject() {
    use std::time::{Duration, SystemTime};
    // The test certificate is valid from 2026-12-02 12:22:18 UTC for 100 years.
    let not_before = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_214_138);
    let not_after = SystemTime::UNIX_EPOCH + Duration::from_secs(4_949_814_138);
    let text = ssl(
        "B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem\n\
         B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/client.pem",
    );
    let tls = tls_of(&text);
    let material = tls.load(&tls_env()).unwrap();
    let at = |now| tls.warnings("B", &material, now);

    assert!(at(not_before + Duration::from_secs(3600)).is_empty());
    assert!(at(not_after - EXPIRY_WARNING - Duration::from_secs(1)).is_empty());

    let early = at(not_before - Duration::from_secs(60));
    assert_eq!(early.len(), 2, "{early:?}");
    assert!(
        early[0].message().contains("`B.ssl.truststore.location`"),
        "{early:?}"
    );
    assert!(
        early[1].message().contains("`B.ssl.keystore.location`"),
        "{early:?}"
    );
    assert!(early.iter().all(|w| {
        w.message().contains("(line ")
            && w.message().contains("subject `CN=mm2-checkpoint test`")
            && w.message()
                .contains("is not valid before 2026-12-02T12:22:18Z")
    }));

    let soon = at(not_after - Duration::from_secs(10 * 86_400 + 60));
    assert!(
        soon[0]
            .message()
            .contains("expires on 2126-11-08T12:22:18Z (in 10 days)"),
        "{soon:?}"
    );

    let expired = at(not_after + Duration::from_secs(1));
    assert_eq!(expired.len(), 2, "{expired:?}");
    assert!(
        expired[0]
            .message()
            .contains("EXPIRED on 2126-11-08T12:22:18Z"),
        "{expired:?}"
    );
}

#[test]
fn certificate_warnings_reach_the_config_warnings() {
    // Loading the config runs the same checks at the real time: the test
    // certificate is valid now, so nothing is added.
    let config = load_with(
        &ssl("B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem"),
        &tls_env(),
    )
    .unwrap();
    assert!(
        !config
            .warnings
            .iter()
            .any(|w| w.message().contains("certificate")),
        "{:?}",
        config.warnings
    );
}

/// TEST_KEY encrypted with `openssl pkcs8 -topk8 -v2 aes-256-cbc`, password
/// `test-key-pw`.
const TEST_KEY_ENCRYPTED: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----
MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAi+yMh52PcDFAICCAAw
DAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEJUFr1INg4FH6StvPcNel4QEgZA7
E/Hlfmh8DCccBgIE05LvqbvVFBgrNSYPcmYuZtlNh7SwZy8tGCNztCJxjvnUA/e0
KggeSOCvkS/DpKAluJUBRDg03S3lpFm/soI8OKp13/UmPBGS4R4vArxRNk8OKehd
RYVpjO7KPSHu7c+l1HcrYvUM4y6NdIydDSBE1cneMvjcYyvFffGWimA/7HpoaTE=
-----END ENCRYPTED PRIVATE KEY-----
";

fn encrypted_env() -> FakeEnvironment {
    tls_env().with_file(
        "/etc/kafka/enc.pem",
        &format!("{TEST_KEY_ENCRYPTED}{TEST_CERT}"),
    )
}

const ENCRYPTED_STORE: &str =
    "B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/enc.pem";

#[test]
fn an_encrypted_pkcs8_key_is_opened_with_the_key_password() {
    let text = ssl(&format!(
        "{ENCRYPTED_STORE}\nB.ssl.key.password = test-key-pw"
    ));
    let config = load_with(&text, &encrypted_env()).unwrap_or_else(|e| panic!("{e}"));
    let tls = config.flows[0].target.tls.clone().unwrap();
    assert!(!tls.identity.as_ref().unwrap().is_plain_pem());
    let (_, key) = tls.load(&encrypted_env()).unwrap().identity.unwrap();
    let plain = PrivateKeyDer::from_pem_slice(TEST_KEY.as_bytes()).unwrap();
    assert_eq!(key.secret_der(), plain.secret_der());
    assert!(!format!("{tls:?}").contains("test-key-pw"));
}

#[test]
fn an_encrypted_key_without_or_with_a_wrong_password_is_an_error() {
    let e = error_with(&ssl(ENCRYPTED_STORE), &encrypted_env());
    assert_eq!(e.key(), Some("B.ssl.keystore.location"));
    assert!(e.message().contains("set ssl.key.password"), "{e}");

    let e = error_with(
        &ssl(&format!("{ENCRYPTED_STORE}\nB.ssl.key.password = wrong-pw")),
        &encrypted_env(),
    );
    assert_eq!(e.key(), Some("B.ssl.key.password"), "{e}");
    assert!(e.message().contains("password is wrong"), "{e}");
    assert!(!e.to_string().contains("wrong-pw"), "{e}");
}

#[test]
fn a_key_password_for_a_key_that_is_not_encrypted_is_an_error() {
    assert_rejected_with_tls(
        &ssl(
            "B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/client.pem\nB.ssl.key.password = pw",
        ),
        "B.ssl.key.password",
        &["not encrypted"],
    );
}

#[test]
fn a_jks_key_store_that_is_no_store_is_an_error_naming_its_location() {
    // No type: Kafka's default, JKS; the content decides the format (as in
    // the JDK), and this content is neither.
    let config = MirrorConfig::from_properties(
        &Properties::parse(&ssl(
            "B.ssl.keystore.location = /etc/kafka/client.jks\nB.ssl.keystore.password = pw-77",
        ))
        .unwrap(),
        &tls_env().with_file("/etc/kafka/client.jks", "not a store"),
    );
    let e = config.unwrap_err();
    assert_eq!(e.key(), Some("B.ssl.keystore.location"), "{e}");
    assert!(
        e.message()
            .contains("neither a JKS, JCEKS nor a PKCS12 store"),
        "{e}"
    );
    assert!(!e.to_string().contains("pw-77"), "{e}");
}

#[test]
fn empty_endpoint_identification_turns_host_name_checks_off_loudly() {
    let text = ssl("B.ssl.endpoint.identification.algorithm =");
    let config = load_with(&text, &tls_env()).unwrap();
    assert!(!config.flows[0].target.tls.clone().unwrap().verify_hostname);
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.message().contains("DISABLED"))
    );
}

#[test]
fn https_endpoint_identification_verifies_host_names() {
    assert!(tls_of(&ssl("B.ssl.endpoint.identification.algorithm = HTTPS")).verify_hostname);
}

#[test]
fn unknown_endpoint_identification_is_an_error() {
    assert_rejected(
        &ssl("B.ssl.endpoint.identification.algorithm = ldaps"),
        "B.ssl.endpoint.identification.algorithm",
        &[],
    );
}

#[test]
fn ssl_engine_factory_is_an_error() {
    assert_rejected(
        &ssl("B.ssl.engine.factory.class = com.example.E"),
        "B.ssl.engine.factory.class",
        &[],
    );
}

#[test]
fn security_providers_is_an_error() {
    assert_rejected(
        &with("security.providers = com.example.P"),
        "security.providers",
        &[],
    );
}

#[test]
fn ssl_keys_without_tls_are_ignored_with_a_warning() {
    let config = load(&with("A.ssl.truststore.location = /x.jks"));
    assert!(config.flows[0].source.tls.is_none());
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.message().contains("ssl.* settings are ignored"))
    );
}
