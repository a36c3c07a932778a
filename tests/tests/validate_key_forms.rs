//! Every form of client key and key store that Java's Kafka client reads,
//! made at test time by the real `openssl` and `keytool`, passes `validate`
//! with an X.509 v1 client certificate (what `openssl x509 -req` without an
//! extension file writes, as Kafka's security docs do): PEM keys encrypted
//! with PKCS#12's PBES1 schemes (`openssl pkcs8 -v1 PBE-SHA1-3DES`, as in
//! Kafka's own PEM tests, and RC2) and with PBES2 (PBKDF2 with HMAC-SHA1,
//! SHA-256 or SHA-512; AES-128/256-CBC or DES-EDE3-CBC), PKCS12 stores with
//! current and legacy protection, and keytool's PKCS12, JKS and JCEKS stores
//! (JCEKS keys under the JDK's `PBEWithMD5AndTripleDES`). A
//! wrong password, a damaged key and an unsupported scheme exit 2 naming the
//! key and the reason, and never print the password. No broker is needed:
//! the bootstrap address refuses connections.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use e2e::binary::mm2;
use e2e::scratch::{TempDir, path_str as s};

const KEY_PASSWORD: &str = "kEy-Pw-30517";
const STORE_PASSWORD: &str = "sTore-Pw-88231";

fn run(dir: &TempDir, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(&dir.0)
        .output()
        .unwrap_or_else(|e| panic!("run {program} (xtask installs a JDK; openssl from apt): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA `ca.pem`/`ca.key` and a client key `client.key` with an X.509 v1
/// certificate `client.pem` it signed, as Kafka's security docs make them.
fn v1_identity(dir: &TempDir) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend(["-subj", "/CN=key forms CA", "-days", "30"]);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    run(dir, "openssl", &ca);
    let mut csr = vec!["req"];
    csr.extend(ec);
    csr.extend(["-subj", "/CN=key-forms-client"]);
    csr.extend(["-keyout", "client.key", "-out", "client.csr"]);
    run(dir, "openssl", &csr);
    run(
        dir,
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            "client.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-days",
            "30",
            "-CAcreateserial",
            "-out",
            "client.pem",
        ],
    );
    let text = Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(dir.path("client.pem"))
        .output()
        .expect("openssl x509 -text");
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("Version: 1 (0x0)"),
        "openssl made no v1 certificate"
    );
}

/// A config whose target cluster `B` uses SSL with `tls` lines.
fn config(dir: &TempDir, tls: &str) -> PathBuf {
    dir.write(
        "mm2.properties",
        &format!(
            "clusters = A, B\n\
             A.bootstrap.servers = 127.0.0.1:1\n\
             B.bootstrap.servers = 127.0.0.1:1\n\
             A->B.enabled = true\n\
             B.security.protocol = SSL\n\
             B.ssl.truststore.type = PEM\n\
             B.ssl.truststore.location = {}\n\
             {tls}\n",
            s(&dir.path("ca.pem"))
        ),
    )
}

fn validate(cfg: &Path) -> Output {
    mm2(&["validate", s(cfg)], Duration::from_secs(30))
}

/// Exit 0, and no password in what was printed.
fn assert_valid(out: &Output, what: &str) {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{what}: {stderr}");
    assert_no_password(&stdout, &stderr);
}

fn assert_no_password(stdout: &str, stderr: &str) {
    for secret in [KEY_PASSWORD, STORE_PASSWORD] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "a password was printed:\n{stdout}\n{stderr}"
        );
    }
}

/// Exit 2 with an error containing each of `wanted`, no password printed.
fn assert_error(out: &Output, wanted: &[&str]) {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    for w in wanted {
        assert!(stderr.contains(w), "wanted `{w}` in:\n{stderr}");
    }
    assert_no_password(&stdout, &stderr);
}

/// `client.key` encrypted by `openssl pkcs8 -topk8` with `form`, written to
/// `name` followed by the v1 certificate (a PEM key store file).
fn encrypted_pem(dir: &TempDir, name: &str, form: &[&str]) -> PathBuf {
    let key = format!("{name}.key");
    let pass = format!("pass:{KEY_PASSWORD}");
    let mut args = vec!["pkcs8", "-topk8"];
    args.extend(form);
    // RC2 lives in OpenSSL 3's legacy provider.
    args.extend(["-provider", "legacy", "-provider", "default"]);
    args.extend(["-in", "client.key", "-out", &key, "-passout", &pass]);
    run(dir, "openssl", &args);
    dir.write(
        name,
        &format!("{}{}", dir.read(&key), dir.read("client.pem")),
    )
}

fn pem_store_config(dir: &TempDir, store: &Path) -> PathBuf {
    config(
        dir,
        &format!(
            "B.ssl.keystore.type = PEM\n\
             B.ssl.keystore.location = {}\n\
             B.ssl.key.password = {KEY_PASSWORD}",
            s(store)
        ),
    )
}

#[test]
fn every_encrypted_pkcs8_form_opens_with_the_key_password_beside_a_v1_certificate() {
    let dir = TempDir::new("key-forms", "pkcs8");
    v1_identity(&dir);
    let plain = dir.write(
        "plain.pem",
        &format!("{}{}", dir.read("client.key"), dir.read("client.pem")),
    );
    let cfg = config(
        &dir,
        &format!(
            "B.ssl.keystore.type = PEM\nB.ssl.keystore.location = {}",
            s(&plain)
        ),
    );
    assert_valid(&validate(&cfg), "unencrypted key, v1 certificate");
    let forms: &[(&str, &[&str])] = &[
        ("pbe-sha1-3des.pem", &["-v1", "PBE-SHA1-3DES"]),
        ("pbe-sha1-rc2-40.pem", &["-v1", "PBE-SHA1-RC2-40"]),
        ("pbe-sha1-rc2-128.pem", &["-v1", "PBE-SHA1-RC2-128"]),
        (
            "aes-128-sha1.pem",
            &["-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"],
        ),
        ("aes-256-sha256.pem", &["-v2", "aes-256-cbc"]),
        (
            "aes-256-sha512.pem",
            &["-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA512"],
        ),
        ("des3-sha256.pem", &["-v2", "des3"]),
    ];
    for (name, form) in forms {
        let store = encrypted_pem(&dir, name, form);
        assert_valid(&validate(&pem_store_config(&dir, &store)), name);
    }
    // Inline (KIP-651), as Kafka's own PEM tests give it.
    let inline = |name: &str| dir.read(name).trim_end().replace('\n', "\\n");
    let cfg = config(
        &dir,
        &format!(
            "B.ssl.keystore.type = PEM\n\
             B.ssl.keystore.certificate.chain = {}\n\
             B.ssl.keystore.key = {}\n\
             B.ssl.key.password = {KEY_PASSWORD}",
            inline("client.pem"),
            inline("pbe-sha1-3des.pem.key"),
        ),
    );
    assert_valid(&validate(&cfg), "inline PBE-SHA1-3DES key");
}

#[test]
fn a_wrong_password_or_damaged_encrypted_key_names_the_key_and_the_reason() {
    let dir = TempDir::new("key-forms", "bad-pkcs8");
    v1_identity(&dir);
    for (name, form) in [
        ("pbes1.pem", &["-v1", "PBE-SHA1-3DES"][..]),
        ("pbes2.pem", &["-v2", "aes-256-cbc"][..]),
    ] {
        let store = encrypted_pem(&dir, name, form);
        let wrong = config(
            &dir,
            &format!(
                "B.ssl.keystore.type = PEM\n\
                 B.ssl.keystore.location = {}\n\
                 B.ssl.key.password = not-{KEY_PASSWORD}",
                s(&store)
            ),
        );
        let out = validate(&wrong);
        assert_error(
            &out,
            &[
                "B.ssl.key.password",
                "cannot decrypt the private key of `B.ssl.keystore.location`",
                "the password is wrong",
            ],
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains(&format!("not-{KEY_PASSWORD}")));
    }

    // A character of the salt changed (bytes 21 to 28 of the DER, base64
    // characters 28 to 37 of the first line): the derived key is another,
    // so the decrypted padding or key no longer checks out, as with a
    // wrong password.
    let key = dir.read("pbes1.pem.key");
    let mut lines: Vec<String> = key.lines().map(str::to_owned).collect();
    let salt_char = |c: char| if c == 'A' { 'B' } else { 'A' };
    lines[1] = lines[1]
        .char_indices()
        .map(|(i, c)| if i == 32 { salt_char(c) } else { c })
        .collect();
    let damaged = dir.write(
        "damaged.pem",
        &format!("{}\n{}", lines.join("\n"), dir.read("client.pem")),
    );
    assert_error(
        &validate(&pem_store_config(&dir, &damaged)),
        &["B.ssl.key.password", "the password is wrong"],
    );

    // The last body line dropped: the structure itself is cut short.
    let mut lines: Vec<&str> = key.lines().collect();
    lines.remove(lines.len() - 2);
    let truncated = dir.write(
        "truncated.pem",
        &format!("{}\n{}", lines.join("\n"), dir.read("client.pem")),
    );
    assert_error(
        &validate(&pem_store_config(&dir, &truncated)),
        &[
            "B.ssl.keystore.location",
            "the ENCRYPTED PRIVATE KEY section is not an encrypted PKCS#8 key",
        ],
    );
}

/// A PKCS12 store of the v1 identity written by `openssl pkcs12 -export`
/// with `protection`.
fn openssl_pkcs12(dir: &TempDir, name: &str, protection: &[&str]) -> PathBuf {
    let pass = format!("pass:{STORE_PASSWORD}");
    let mut args = vec!["pkcs12", "-export"];
    args.extend(protection);
    args.extend([
        "-in",
        "client.pem",
        "-inkey",
        "client.key",
        "-certfile",
        "ca.pem",
    ]);
    args.extend(["-name", "client", "-out", name, "-passout", &pass]);
    run(dir, "openssl", &args);
    dir.path(name)
}

/// `source` (PKCS12) rewritten by keytool as a `kind` store, with the JDK's
/// own protection for that type; `extra` are further keytool arguments.
fn keytool_store(dir: &TempDir, source: &Path, name: &str, kind: &str, extra: &[&str]) -> PathBuf {
    let store = dir.path(name);
    let mut args = vec![
        "-importkeystore",
        "-noprompt",
        "-srckeystore",
        s(source),
        "-srcstoretype",
        "PKCS12",
        "-srcstorepass",
        STORE_PASSWORD,
        "-destkeystore",
        s(&store),
        "-deststoretype",
        kind,
        "-deststorepass",
        STORE_PASSWORD,
    ];
    args.extend(extra);
    run(dir, "keytool", &args);
    store
}

#[test]
fn pkcs12_and_jks_stores_of_every_protection_hold_a_usable_v1_certificate() {
    let dir = TempDir::new("key-forms", "stores");
    v1_identity(&dir);
    let current = openssl_pkcs12(&dir, "aes.p12", &[]);
    let legacy = openssl_pkcs12(&dir, "legacy.p12", &["-legacy"]);
    let triple_des = openssl_pkcs12(
        &dir,
        "3des.p12",
        &[
            "-certpbe",
            "PBE-SHA1-3DES",
            "-keypbe",
            "PBE-SHA1-3DES",
            "-macalg",
            "sha1",
        ],
    );
    let keytool_pkcs12 = keytool_store(&dir, &current, "keytool.p12", "PKCS12", &[]);
    let keytool_jks = keytool_store(&dir, &current, "keytool.jks", "JKS", &[]);
    let keytool_jceks = keytool_store(&dir, &current, "keytool.jceks", "JCEKS", &[]);
    assert!(
        std::fs::read(&keytool_jceks)
            .expect("read JCEKS")
            .starts_with(&[0xCE, 0xCE, 0xCE, 0xCE]),
        "keytool wrote no JCEKS"
    );
    for (kind, store) in [
        ("PKCS12", &current),
        ("PKCS12", &legacy),
        ("PKCS12", &triple_des),
        ("PKCS12", &keytool_pkcs12),
        ("JKS", &keytool_jks),
        ("JCEKS", &keytool_jceks),
    ] {
        let cfg = config(
            &dir,
            &format!(
                "B.ssl.keystore.type = {kind}\n\
                 B.ssl.keystore.location = {}\n\
                 B.ssl.keystore.password = {STORE_PASSWORD}",
                s(store)
            ),
        );
        assert_valid(&validate(&cfg), s(store));
    }
}

#[test]
fn a_jceks_key_with_its_own_password_opens_with_the_key_password_only() {
    let dir = TempDir::new("key-forms", "jceks");
    v1_identity(&dir);
    let source = openssl_pkcs12(&dir, "source.p12", &[]);
    let jceks = keytool_store(
        &dir,
        &source,
        "own-key-password.jceks",
        "JCEKS",
        &["-srcalias", "client", "-destkeypass", KEY_PASSWORD],
    );
    let with = |key_password: Option<&str>| {
        config(
            &dir,
            &format!(
                "B.ssl.keystore.type = JCEKS\n\
                 B.ssl.keystore.location = {}\n\
                 B.ssl.keystore.password = {STORE_PASSWORD}{}",
                s(&jceks),
                key_password.map_or_else(String::new, |p| format!("\nB.ssl.key.password = {p}"))
            ),
        )
    };
    assert_valid(&validate(&with(Some(KEY_PASSWORD))), "JCEKS, key password");
    assert_error(
        &validate(&with(None)),
        &[
            "B.ssl.keystore.password",
            "opens JCEKS store",
            "but not its private key `client`",
        ],
    );
    let wrong = format!("not-{KEY_PASSWORD}");
    assert_error(
        &validate(&with(Some(&wrong))),
        &[
            "B.ssl.key.password",
            "is wrong for the private key `client` of JCEKS store",
        ],
    );
    // The store's own integrity digest still guards the file.
    let mut bytes = std::fs::read(&jceks).expect("read JCEKS");
    // A bit of the last certificate's signature, just before the 20-byte
    // digest.
    let in_last_certificate = bytes.len() - 30;
    bytes[in_last_certificate] ^= 0x01;
    std::fs::write(&jceks, bytes).expect("write damaged JCEKS");
    assert_error(
        &validate(&with(Some(KEY_PASSWORD))),
        &["B.ssl.keystore.password", "is wrong for JCEKS store"],
    );
}
