//! Key and trust stores as MM2 estates hold them, against the target
//! cluster's real mTLS listener: PKCS12 and JKS stores written by the JDK's
//! own `keytool` (the JKS key with a password of its own), legacy PKCS12
//! (3DES/RC2, SHA-1) from `openssl pkcs12 -legacy`, and encrypted PKCS#8
//! keys opened with `ssl.key.password` (PBES2, and PBES1 `PBE-SHA1-3DES`
//! beside an X.509 v1 client certificate, which the listener requires like
//! any client certificate). `run --once`
//! must write the checkpoint through them; wrong passwords and a store without
//! a key must fail at `validate` (exit 2) naming the key, with no secret in
//! the output. A trust store without the brokers' CA can only be found by a
//! handshake: against the source cluster's real SSL listener, `run` must name
//! the key that set the trusted CAs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use e2e::binary::{Daemon, mm2, run_once};
use e2e::world::{World, rt};
use e2e::{Listener, clusters};

const STORE_PASSWORD: &str = "store-Pw-7731";
const KEY_PASSWORD: &str = "key-Pw-5520";

use e2e::scratch::{path_str as s, tool};

/// The stores of one test, made from the target cluster's test CA and client
/// certificate.
struct Stores {
    /// PEM key store: the client key encrypted with `openssl pkcs8 -v1
    /// PBE-SHA1-3DES`, then its X.509 v1 certificate.
    v1_pbes1_pem: PathBuf,
    /// keytool PKCS12 trust store with the CA as a trusted entry.
    truststore: PathBuf,
    /// keytool PKCS12 key store (JDK defaults: PBES2/AES-256, HMAC-SHA256).
    keystore: PathBuf,
    /// `openssl pkcs12 -legacy` key store (3DES/RC2, SHA-1 MAC).
    legacy_keystore: PathBuf,
    /// PEM: the encrypted client key, then the chain.
    encrypted_pem: PathBuf,
    /// keytool JKS trust store with the CA as a trusted certificate entry.
    jks_truststore: PathBuf,
    /// keytool JKS key store; its key is protected by `KEY_PASSWORD`.
    jks_keystore: PathBuf,
}

fn make_stores(dir: &Path) -> Stores {
    let tls = &clusters().target().tls;
    let (ca, cert, key) = (
        s(&tls.ca_pem),
        s(&tls.client_cert_pem),
        s(&tls.client_key_pem),
    );
    let p = |name: &str| dir.join(name);
    let truststore = p("truststore.p12");
    tool(
        "keytool",
        &[
            "-importcert",
            "-noprompt",
            "-storetype",
            "PKCS12",
            "-alias",
            "ca",
            "-file",
            ca,
            "-keystore",
            s(&truststore),
            "-storepass",
            STORE_PASSWORD,
        ],
    );
    // keytool cannot import a PEM key: openssl makes a first store, keytool
    // rewrites it with the JDK's own algorithms.
    let openssl_store = p("openssl.p12");
    let pass = format!("pass:{STORE_PASSWORD}");
    tool(
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-in",
            cert,
            "-inkey",
            key,
            "-certfile",
            ca,
            "-name",
            "client",
            "-out",
            s(&openssl_store),
            "-passout",
            &pass,
        ],
    );
    let keystore = p("keystore.p12");
    tool(
        "keytool",
        &[
            "-importkeystore",
            "-noprompt",
            "-srckeystore",
            s(&openssl_store),
            "-srcstoretype",
            "PKCS12",
            "-srcstorepass",
            STORE_PASSWORD,
            "-destkeystore",
            s(&keystore),
            "-deststoretype",
            "PKCS12",
            "-deststorepass",
            STORE_PASSWORD,
        ],
    );
    let legacy_keystore = p("legacy.p12");
    tool(
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-legacy",
            "-in",
            cert,
            "-inkey",
            key,
            "-name",
            "client",
            "-out",
            s(&legacy_keystore),
            "-passout",
            &pass,
        ],
    );
    let encrypted_key = p("client-encrypted.key");
    tool(
        "openssl",
        &[
            "pkcs8",
            "-topk8",
            "-v2",
            "aes-256-cbc",
            "-in",
            key,
            "-out",
            s(&encrypted_key),
            "-passout",
            &format!("pass:{KEY_PASSWORD}"),
        ],
    );
    let encrypted_pem = p("client-encrypted.pem");
    let mut pem = std::fs::read_to_string(&encrypted_key).expect("encrypted key");
    pem.push_str(&std::fs::read_to_string(cert).expect("client cert"));
    std::fs::write(&encrypted_pem, pem).expect("write encrypted PEM");
    // Kafka's own PEM tests' form (`-v1 PBE-SHA1-3DES`) beside the client
    // key's X.509 v1 certificate, as Kafka's security docs make them.
    let pbes1_key = p("client-pbes1.key");
    tool(
        "openssl",
        &[
            "pkcs8",
            "-topk8",
            "-v1",
            "PBE-SHA1-3DES",
            "-in",
            key,
            "-out",
            s(&pbes1_key),
            "-passout",
            &format!("pass:{KEY_PASSWORD}"),
        ],
    );
    let v1_pbes1_pem = p("client-v1-pbes1.pem");
    let mut pem = std::fs::read_to_string(&pbes1_key).expect("PBES1 key");
    pem.push_str(&std::fs::read_to_string(&tls.client_v1_cert_pem).expect("client v1 cert"));
    std::fs::write(&v1_pbes1_pem, pem).expect("write PBES1 PEM");
    let jks_truststore = p("truststore.jks");
    tool(
        "keytool",
        &[
            "-importcert",
            "-noprompt",
            "-storetype",
            "JKS",
            "-alias",
            "ca",
            "-file",
            ca,
            "-keystore",
            s(&jks_truststore),
            "-storepass",
            STORE_PASSWORD,
        ],
    );
    let jks_keystore = p("keystore.jks");
    tool(
        "keytool",
        &[
            "-importkeystore",
            "-noprompt",
            "-srckeystore",
            s(&openssl_store),
            "-srcstoretype",
            "PKCS12",
            "-srcstorepass",
            STORE_PASSWORD,
            "-srcalias",
            "client",
            "-destkeystore",
            s(&jks_keystore),
            "-deststoretype",
            "JKS",
            "-deststorepass",
            STORE_PASSWORD,
            "-destkeypass",
            KEY_PASSWORD,
        ],
    );
    for jks in [&jks_truststore, &jks_keystore] {
        let bytes = std::fs::read(jks).expect("read JKS store");
        assert!(
            bytes.starts_with(&[0xFE, 0xED, 0xFE, 0xED]),
            "keytool wrote no JKS"
        );
    }
    Stores {
        v1_pbes1_pem,
        truststore,
        keystore,
        legacy_keystore,
        encrypted_pem,
        jks_truststore,
        jks_keystore,
    }
}

fn assert_no_secret(out: &std::process::Output) {
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for secret in [STORE_PASSWORD, KEY_PASSWORD] {
        assert!(!all.contains(secret), "a password was printed:\n{all}");
    }
}

#[test]
fn pkcs12_jks_and_encrypted_pem_stores_write_checkpoints_over_mtls() {
    let rt = rt();
    let w = World::new(&rt, "stores", 1);
    let stores = make_stores(&w.dir);
    let trust_p12 = format!(
        "{{t}}.ssl.truststore.type = PKCS12\n\
         {{t}}.ssl.truststore.location = {}\n\
         {{t}}.ssl.truststore.password = {STORE_PASSWORD}",
        s(&stores.truststore)
    );
    let keystore = |path: &Path| {
        format!(
            "{{t}}.ssl.keystore.type = PKCS12\n\
             {{t}}.ssl.keystore.location = {}\n\
             {{t}}.ssl.keystore.password = {STORE_PASSWORD}",
            s(path)
        )
    };
    let encrypted = format!(
        "{{t}}.ssl.keystore.type = PEM\n\
         {{t}}.ssl.keystore.location = {}\n\
         {{t}}.ssl.key.password = {KEY_PASSWORD}",
        s(&stores.encrypted_pem)
    );
    let v1_pbes1 = format!(
        "{{t}}.ssl.keystore.type = PEM\n\
         {{t}}.ssl.keystore.location = {}\n\
         {{t}}.ssl.key.password = {KEY_PASSWORD}",
        s(&stores.v1_pbes1_pem)
    );
    // Kafka's default type is JKS: the trust store leaves it unset.
    let trust_jks = format!(
        "{{t}}.ssl.truststore.location = {}\n\
         {{t}}.ssl.truststore.password = {STORE_PASSWORD}",
        s(&stores.jks_truststore)
    );
    let trust_jks_without_password = format!(
        "{{t}}.ssl.truststore.location = {}",
        s(&stores.jks_truststore)
    );
    let jks = format!(
        "{{t}}.ssl.keystore.type = JKS\n\
         {{t}}.ssl.keystore.location = {}\n\
         {{t}}.ssl.keystore.password = {STORE_PASSWORD}\n\
         {{t}}.ssl.key.password = {KEY_PASSWORD}",
        s(&stores.jks_keystore)
    );
    let cases = [
        (
            "keytool",
            &trust_p12,
            keystore(&stores.keystore),
            "PKCS12 store",
        ),
        (
            "legacy",
            &trust_p12,
            keystore(&stores.legacy_keystore),
            "PKCS12 store",
        ),
        ("encrypted-pem", &trust_p12, encrypted, "PKCS12 store"),
        (
            "v1-certificate-pbes1-key",
            &trust_p12,
            v1_pbes1,
            "PKCS12 store",
        ),
        ("jks", &trust_jks, jks.clone(), "JKS store"),
        // Java reads a trust store without its password (MSK's documentation
        // names its cacerts copy so): no integrity check, same certificates.
        (
            "jks-trust-without-password",
            &trust_jks_without_password,
            jks,
            "JKS store",
        ),
    ];
    // Each case commits further, so each run is seen to have reached the
    // target through its own store by writing the next checkpoint.
    for (i, (name, trust, identity, described)) in cases.iter().enumerate() {
        let upstream = 10 * (i as i64 + 1);
        let group = w.seed(&rt, &[(0, upstream, upstream + 3)], &[(0, upstream)]);
        let cfg = w.mtls_target_properties(
            &group,
            &format!("{name}.properties"),
            &format!("{trust}\n{identity}"),
        );
        let validated = mm2(&["validate", s(&cfg)], Duration::from_secs(30));
        assert_eq!(
            validated.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&validated.stderr)
        );
        assert!(
            String::from_utf8_lossy(&validated.stdout).contains(described),
            "{name}: validate does not describe the store"
        );
        assert_no_secret(&validated);
        let out = run_once(&cfg);
        assert_no_secret(&out);
        let latest = w.checkpoints(&rt).last().map(e2e::world::tuple);
        assert_eq!(
            latest,
            Some((group.clone(), w.remote_topic(), 0, upstream, upstream + 3)),
            "{name}"
        );
    }
}

#[test]
fn wrong_passwords_and_a_store_without_a_key_fail_validate_naming_the_key() {
    let rt = rt();
    let w = World::new(&rt, "stores-bad", 1);
    let stores = make_stores(&w.dir);
    let cases = [
        (
            "wrong-store-password",
            format!(
                "{{t}}.ssl.keystore.type = PKCS12\n\
                 {{t}}.ssl.keystore.location = {}\n\
                 {{t}}.ssl.keystore.password = not-{STORE_PASSWORD}",
                s(&stores.keystore)
            ),
            "ssl.keystore.password",
            "is wrong",
        ),
        (
            "wrong-key-password",
            format!(
                "{{t}}.ssl.keystore.type = PEM\n\
                 {{t}}.ssl.keystore.location = {}\n\
                 {{t}}.ssl.key.password = not-{KEY_PASSWORD}",
                s(&stores.encrypted_pem)
            ),
            "ssl.key.password",
            "password is wrong",
        ),
        (
            "trust-store-as-key-store",
            format!(
                "{{t}}.ssl.keystore.type = PKCS12\n\
                 {{t}}.ssl.keystore.location = {}\n\
                 {{t}}.ssl.keystore.password = {STORE_PASSWORD}",
                s(&stores.truststore)
            ),
            "ssl.keystore.location",
            "holds no private key",
        ),
        (
            "key-store-as-trust-store",
            format!(
                "{{t}}.ssl.truststore.type = PKCS12\n\
                 {{t}}.ssl.truststore.location = {}\n\
                 {{t}}.ssl.truststore.password = {STORE_PASSWORD}",
                s(&stores.keystore)
            ),
            "ssl.truststore.location",
            "no trusted certificate entry",
        ),
        (
            "jks-wrong-store-password",
            format!(
                "{{t}}.ssl.keystore.type = JKS\n\
                 {{t}}.ssl.keystore.location = {}\n\
                 {{t}}.ssl.keystore.password = not-{STORE_PASSWORD}\n\
                 {{t}}.ssl.key.password = {KEY_PASSWORD}",
                s(&stores.jks_keystore)
            ),
            "ssl.keystore.password",
            "is wrong for JKS store",
        ),
        (
            "jks-wrong-key-password",
            format!(
                "{{t}}.ssl.keystore.type = JKS\n\
                 {{t}}.ssl.keystore.location = {}\n\
                 {{t}}.ssl.keystore.password = {STORE_PASSWORD}\n\
                 {{t}}.ssl.key.password = not-{KEY_PASSWORD}",
                s(&stores.jks_keystore)
            ),
            "ssl.key.password",
            "is wrong for the private key `client`",
        ),
        (
            "jks-key-password-missing",
            format!(
                "{{t}}.ssl.keystore.type = JKS\n\
                 {{t}}.ssl.keystore.location = {}\n\
                 {{t}}.ssl.keystore.password = {STORE_PASSWORD}",
                s(&stores.jks_keystore)
            ),
            "ssl.keystore.password",
            "set ssl.key.password",
        ),
        (
            "jks-trust-store-as-key-store",
            format!(
                "{{t}}.ssl.keystore.location = {}\n\
                 {{t}}.ssl.keystore.password = {STORE_PASSWORD}",
                s(&stores.jks_truststore)
            ),
            "ssl.keystore.location",
            "holds no private key",
        ),
        (
            "jks-key-store-as-trust-store",
            format!(
                "{{t}}.ssl.truststore.type = JKS\n\
                 {{t}}.ssl.truststore.location = {}\n\
                 {{t}}.ssl.truststore.password = {STORE_PASSWORD}",
                s(&stores.jks_keystore)
            ),
            "ssl.truststore.location",
            "no trusted certificate entry",
        ),
    ];
    for (name, tls, key, says) in cases {
        let cfg = w.mtls_target_properties("unused", &format!("{name}.properties"), &tls);
        for args in [
            vec!["validate", s(&cfg)],
            vec!["run", "--once", "--config", s(&cfg)],
        ] {
            let out = mm2(&args, Duration::from_secs(30));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {stderr}");
            assert!(
                stderr.contains(&format!("{}.{key}", w.t)) && stderr.contains(says),
                "{name} {args:?}: {stderr}"
            );
            assert_no_secret(&out);
        }
    }
}

/// A CA made by the test, which signed nothing the test clusters present:
/// `<dir>/other-ca.pem`, and a keytool PKCS12 trust store holding it.
fn other_ca(dir: &Path) -> (PathBuf, PathBuf) {
    let pem = dir.join("other-ca.pem");
    tool(
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            "/CN=mm2-checkpoint other test CA",
            "-days",
            "365",
            "-keyout",
            s(&dir.join("other-ca.key")),
            "-out",
            s(&pem),
        ],
    );
    let store = dir.join("other-truststore.p12");
    tool(
        "keytool",
        &[
            "-importcert",
            "-noprompt",
            "-storetype",
            "PKCS12",
            "-alias",
            "other-ca",
            "-file",
            s(&pem),
            "-keystore",
            s(&store),
            "-storepass",
            STORE_PASSWORD,
        ],
    );
    (pem, store)
}

/// A config whose source `w.s` is reached on its SSL listener with the trust
/// lines `trust` (line 4 on), the target over PLAINTEXT.
fn ssl_source_config(w: &World, name: &str, trust: &str) -> PathBuf {
    let c = clusters();
    let text = format!(
        "clusters = {s}, {t}\n\
         {s}.bootstrap.servers = {sb}\n\
         {s}.security.protocol = SSL\n\
         {trust}\n\
         {t}.bootstrap.servers = {tb}\n\
         {s}->{t}.enabled = true\n\
         admin.timeout.ms = 5000\n",
        s = w.s,
        t = w.t,
        sb = c.source().bootstrap.get(Listener::Ssl),
        tb = c.target().bootstrap.get(Listener::Plaintext),
        trust = trust.replace("{s}", &w.s),
    );
    let path = w.dir.join(name);
    std::fs::write(&path, text).expect("write config");
    path
}

/// The broker's certificate is signed by the test clusters' CA, the trust
/// store holds another one: `validate` cannot know (exit 0), `run --once`
/// fails its round (exit 1) naming the cluster and the trust key with its
/// line, and the daemon says the same while it retries.
#[test]
fn a_trust_store_without_the_brokers_ca_is_named_at_run() {
    let rt = rt();
    let w = World::new(&rt, "stores-untrusted", 1);
    let (pem, store) = other_ca(&w.dir);
    let inline = std::fs::read_to_string(&pem)
        .expect("read CA")
        .trim_end()
        .replace('\n', "\\n");
    let cases = [
        (
            "pkcs12",
            format!(
                "{{s}}.ssl.truststore.type = PKCS12\n\
                 {{s}}.ssl.truststore.location = {}\n\
                 {{s}}.ssl.truststore.password = {STORE_PASSWORD}",
                s(&store)
            ),
            format!("`{}.ssl.truststore.location` (line 5)", w.s),
        ),
        (
            "inline-pem",
            format!(
                "{{s}}.ssl.truststore.type = PEM\n{{s}}.ssl.truststore.certificates = {inline}"
            ),
            format!("`{}.ssl.truststore.certificates` (line 5)", w.s),
        ),
    ];
    for (name, trust, key) in cases {
        let cfg = ssl_source_config(&w, &format!("{name}.properties"), &trust);
        let validated = mm2(&["validate", s(&cfg)], Duration::from_secs(30));
        assert_eq!(
            validated.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&validated.stderr)
        );
        let out = mm2(
            &["run", "--once", "--config", s(&cfg)],
            Duration::from_secs(60),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        let failure = stderr
            .lines()
            .find(|l| l.contains("ERROR") && l.contains("stopped on error"))
            .unwrap_or_else(|| panic!("{name}: no final error:\n{stderr}"));
        assert!(
            failure.contains(&format!(
                "the broker's certificate is not signed by a CA that cluster `{}` trusts: {key}",
                w.s
            )) && failure.contains("lacks the CA that signed the brokers' certificates")
                && failure.contains("UnknownIssuer"),
            "{name}: {failure}"
        );
        assert_no_secret(&out);
    }

    // The daemon keeps retrying (the brokers may get a certificate the
    // store trusts) and says why each time; SIGTERM stops it.
    let cfg = ssl_source_config(
        &w,
        "daemon.properties",
        &format!(
            "{{s}}.ssl.truststore.type = PEM\n{{s}}.ssl.truststore.location = {}",
            s(&pem)
        ),
    );
    let mut daemon = Daemon::spawn(Command::new(e2e::binary::mm2_checkpoint()).args([
        "run",
        "--config",
        s(&cfg),
    ]));
    let line = daemon.wait_for("startup failed; retrying");
    assert!(
        line.contains(&format!("`{}.ssl.truststore.location` (line 5)", w.s))
            && line.contains("lacks the CA"),
        "{line}"
    );
    let (code, _, stderr) = daemon.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}
