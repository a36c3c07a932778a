//! `validate` and start-up check the TLS material itself, not only its PEM
//! shape: a private key that belongs to another certificate, or a certificate
//! whose body is not X.509, is an error naming the key and line (exit 2, before
//! any network I/O); a certificate near or past the end of its validity is a
//! warning. Keys and certificates are made by `openssl` at test time. No broker
//! is needed: the bootstrap address refuses connections.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use e2e::binary::mm2;

use e2e::scratch::{TempDir, path_str as s};

/// A self-signed P-256 certificate `<name>.crt` with its key `<name>.key`,
/// valid for `days` days from now.
fn self_signed(dir: &TempDir, name: &str, days: u32) {
    let status = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .arg("ec_paramgen_curve:P-256")
        .args(["-nodes", "-subj", &format!("/CN={name}"), "-days"])
        .arg(days.to_string())
        .args(["-keyout", s(&dir.path(&format!("{name}.key")))])
        .args(["-out", s(&dir.path(&format!("{name}.crt")))])
        .output()
        .expect("run openssl (apt-get install openssl)");
    assert!(
        status.status.success(),
        "openssl failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// A config whose target cluster `B` uses SSL with `tls` lines; line 6 is the
/// first of them.
fn config(dir: &TempDir, tls: &str) -> PathBuf {
    let path = dir.path("mm2.properties");
    std::fs::write(
        &path,
        format!(
            "clusters = A, B\n\
             A.bootstrap.servers = 127.0.0.1:1\n\
             B.bootstrap.servers = 127.0.0.1:1\n\
             A->B.enabled = true\n\
             B.security.protocol = SSL\n\
             {tls}\n"
        ),
    )
    .expect("write config");
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The base64 lines of a PEM private key: what must never be printed.
fn secret_lines(pem: &str) -> Vec<String> {
    pem.lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_key_of_another_certificate_fails_validate_and_start_up_naming_key_and_line() {
    let dir = TempDir::new("material", "mismatch");
    self_signed(&dir, "client", 365);
    self_signed(&dir, "other", 365);
    // Inline PEM, as MM2 users give the chain and key (KIP-651).
    let inline = |name: &str| dir.read(name).trim_end().replace('\n', "\\n");
    let cfg = config(
        &dir,
        &format!(
            "B.ssl.truststore.type = PEM\n\
             B.ssl.truststore.location = {}\n\
             B.ssl.keystore.type = PEM\n\
             B.ssl.keystore.certificate.chain = {}\n\
             B.ssl.keystore.key = {}",
            s(&dir.path("client.crt")),
            inline("client.crt"),
            inline("other.key"),
        ),
    );

    let secrets = secret_lines(&dir.read("other.key"));
    for args in [
        vec!["validate", s(&cfg)],
        vec!["run", "--once", "--config", s(&cfg)],
    ] {
        let out = mm2(&args, Duration::from_secs(20));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{args:?}\n{stdout}\n{stderr}");
        assert!(
            stderr.contains("B.ssl.keystore.key: ")
                && stderr.contains("(line 10)")
                && stderr.contains("does not belong to the first certificate")
                && stderr.contains("CN=client"),
            "{args:?}: {stderr}"
        );
        for secret in &secrets {
            assert!(
                !stdout.contains(secret) && !stderr.contains(secret),
                "{args:?} printed key material"
            );
        }
    }

    // The matching key passes.
    let fixed = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace(&inline("other.key"), &inline("client.key"));
    std::fs::write(&cfg, fixed).unwrap();
    let out = mm2(&["validate", s(&cfg)], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_certificate_file_whose_body_is_not_x509_fails_naming_key_and_line() {
    let dir = TempDir::new("material", "garbage");
    let bad = dir.path("ca.pem");
    // Well-formed PEM and base64, but no certificate inside.
    std::fs::write(
        &bad,
        "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGUgYXQgYWxs\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let cfg = config(
        &dir,
        &format!(
            "B.ssl.truststore.type = PEM\nB.ssl.truststore.location = {}",
            s(&bad)
        ),
    );
    let out = mm2(&["validate", s(&cfg)], Duration::from_secs(20));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("B.ssl.truststore.location: ")
            && stderr.contains("(line 7)")
            && stderr.contains("certificate 1 of 1")
            && stderr.contains("not a valid X.509 certificate"),
        "{stderr}"
    );
}

#[test]
fn a_certificate_about_to_expire_is_a_warning_with_key_line_and_subject() {
    let dir = TempDir::new("material", "expiring");
    self_signed(&dir, "short-lived", 1);
    let both = dir.path("client.pem");
    std::fs::write(
        &both,
        format!(
            "{}{}",
            dir.read("short-lived.key"),
            dir.read("short-lived.crt")
        ),
    )
    .unwrap();
    let cfg = config(
        &dir,
        &format!(
            "B.ssl.truststore.type = PEM\n\
             B.ssl.truststore.location = {}\n\
             B.ssl.keystore.type = PEM\n\
             B.ssl.keystore.location = {}",
            s(&dir.path("short-lived.crt")),
            s(&both)
        ),
    );
    let out = mm2(&["validate", s(&cfg)], Duration::from_secs(20));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for (line, key) in [
        (7, "B.ssl.truststore.location"),
        (9, "B.ssl.keystore.location"),
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(&format!("`{key}` (line {line})"))
                    && l.contains("subject `CN=short-lived`")
                    && l.contains("expires on")
                    && l.contains("(in 0 days)")),
            "no expiry warning for {key}:\n{stdout}"
        );
    }
    let secrets = secret_lines(&dir.read("short-lived.key"));
    assert!(secrets.iter().all(|l| !stdout.contains(l)));

    // A warning like any other: `--strict` fails on it.
    let out = mm2(&["validate", "--strict", s(&cfg)], Duration::from_secs(20));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: --strict: the configuration has 2 warnings")
            && stderr.contains("(in 0 days)"),
        "{stderr}"
    );
}

/// A keytool trust store `<name>` of `kind` holding `ca.crt`, written with
/// the extra JVM options `jvm` (PKCS12 protection settings).
fn keytool_trust_store(dir: &TempDir, name: &str, kind: &str, jvm: &[&str]) -> PathBuf {
    let store = dir.path(name);
    let out = Command::new("keytool")
        .args(jvm)
        .args([
            "-importcert",
            "-noprompt",
            "-storetype",
            kind,
            "-alias",
            "ca",
        ])
        .args(["-file", s(&dir.path("ca.crt")), "-keystore", s(&store)])
        .args(["-storepass", "trust-Pw-4410"])
        .output()
        .expect("run keytool (cargo xtask installs a JDK)");
    assert!(
        out.status.success(),
        "keytool failed: {}",
        text(&out.stderr)
    );
    store
}

#[test]
fn a_trust_store_without_its_password_is_read_as_java_reads_it() {
    let dir = TempDir::new("material", "no-password");
    self_signed(&dir, "ca", 365);
    let jks = keytool_trust_store(&dir, "trust.jks", "JKS", &[]);
    // keytool's PKCS12 default: certificates encrypted with the password.
    let encrypted = keytool_trust_store(&dir, "encrypted.p12", "PKCS12", &[]);
    // Plain certificate bags, with and without the integrity MAC.
    let plain_cert_protection = "-J-Dkeystore.pkcs12.certProtectionAlgorithm=NONE";
    let with_mac = keytool_trust_store(&dir, "mac.p12", "PKCS12", &[plain_cert_protection]);
    let without_mac = keytool_trust_store(
        &dir,
        "nomac.p12",
        "PKCS12",
        &[
            plain_cert_protection,
            "-J-Dkeystore.pkcs12.macAlgorithm=NONE",
        ],
    );
    let validate = |kind: &str, store: &Path| {
        let cfg = config(
            &dir,
            &format!(
                "B.ssl.truststore.type = {kind}\nB.ssl.truststore.location = {}",
                s(store)
            ),
        );
        let out = mm2(&["validate", s(&cfg)], Duration::from_secs(20));
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    for (kind, store) in [
        ("JKS", &jks),
        ("PKCS12", &with_mac),
        ("PKCS12", &without_mac),
    ] {
        let (code, stdout, stderr) = validate(kind, store);
        assert_eq!(code, Some(0), "{store:?}: {stderr}");
        assert!(
            stdout.contains(&format!(
                "trust = {kind} store {} (no password: certificates read without an \
                 integrity check",
                s(store)
            )),
            "{stdout}"
        );
    }
    let (code, _, stderr) = validate("PKCS12", &encrypted);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: B.ssl.truststore.password: is needed to read PKCS12 store {}: its \
             certificates are encrypted with it",
            s(&encrypted)
        )),
        "{stderr}"
    );
    // With the password all of them open.
    let cfg = config(
        &dir,
        &format!(
            "B.ssl.truststore.type = PKCS12\nB.ssl.truststore.location = {}\n\
             B.ssl.truststore.password = trust-Pw-4410",
            s(&encrypted)
        ),
    );
    let out = mm2(&["validate", s(&cfg)], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // A key store still needs its password.
    let cfg = config(
        &dir,
        &format!(
            "B.ssl.keystore.type = JKS\nB.ssl.keystore.location = {}",
            s(&jks)
        ),
    );
    let out = mm2(&["validate", s(&cfg)], Duration::from_secs(20));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("B.ssl.keystore.password: is required for a JKS key store"),
        "{stderr}"
    );
}
