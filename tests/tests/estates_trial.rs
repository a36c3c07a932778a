//! The estate trial: fifteen `mm2.properties` files in the shapes vendors'
//! public documentation gives MirrorMaker 2 users (tests/data/estates/, one
//! header comment per file naming the estate) go through `validate`. Every
//! file must be accepted except the two GSSAPI estates and the one with
//! custom Java classes, which must be refused (exit 2) for exactly those
//! reasons, in plain words. No secret of any file may appear in any output.
//!
//! The stores, PEM files and mounted secrets the files name are made at test
//! time where `validate` opens them (`@ESTATE@` in the files), by the JDK's
//! `keytool` and by `openssl`. No file needs `--no-secrets` to pass: every
//! secret it references is created here. Each file is also run with
//! `--no-secrets` (the CI gate) and with `--format json`, with the same
//! verdict. No broker is needed: `validate` does no network I/O, and the
//! bootstrap addresses are the vendors' made-up host names.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use e2e::binary::mm2_with_env;

/// Password of the PKCS12 trust stores Strimzi builds, given to the file
/// through the environment variable `CERTS_STORE_PASSWORD`.
const STRIMZI_STORE_PASSWORD: &str = "strimzi-Store-Pw-19Ka";
/// The source user's SCRAM password in the Strimzi secret mount.
const STRIMZI_SCRAM_PASSWORD: &str = "strimzi-Scram-Pw-55Tx";
/// The password of the JDK cacerts copy MSK's documentation uses; the file
/// does not give it.
const CACERTS_PASSWORD: &str = "changeit";
/// The password of the encrypted PKCS#8 key of estate 12.
const PEM_KEY_PASSWORD: &str = "pem-Key-Pw-7741";

/// What `validate` must say about a file.
enum Verdict {
    /// Exit 0.
    Accepted,
    /// Exit 2, and every error line contains all fragments of one of these.
    Refused(&'static [&'static [&'static str]]),
}

struct Estate {
    file: &'static str,
    /// Secret values written in the file (or given to it through its
    /// providers) that no output may contain.
    secrets: &'static [&'static str],
    verdict: Verdict,
}

const GSSAPI_SET: &[&str] = &[
    "sasl.mechanism: GSSAPI (Kerberos): mm2-checkpoint does not support Kerberos",
    "SCRAM-SHA-512",
    "set sasl.mechanism accordingly",
];
const GSSAPI_DEFAULT: &[&str] = &[
    ".sasl.mechanism: is not set, so MirrorMaker 2 would use Kafka's default, GSSAPI (Kerberos)",
    "does not support Kerberos",
    "SCRAM-SHA-512",
];
const CUSTOM_POLICY: &[&str] = &[
    "replication.policy.class: ",
    "com.example.mirror.TaggedReplicationPolicy",
    "is not supported",
];
const CUSTOM_HANDLER: &[&str] = &[
    "sasl.client.callback.handler.class: ",
    "com.example.kafka.auth.VaultScramCallbackHandler",
    "is not supported",
];

const ESTATES: [Estate; 15] = [
    Estate {
        file: "01-apache-sample.properties",
        secrets: &[],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "02-confluent-cloud.properties",
        secrets: &["cflt+Api/Secret-9QpLrT0zX2wVkYh3sB7nMeRtY5uI8oP1aS4dF6gH"],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "03-azure-event-hubs.properties",
        secrets: &[
            "SharedAccessKey=",
            "Ev3ntHubsTrialKey0c2Vjcm90LXNoYXJlZA8QmGn=",
        ],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "04-msk-iam.properties",
        secrets: &[],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "05-msk-scram.properties",
        secrets: &["msk-Scram-Primary-4471", "msk-Scram-Dr-8812"],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "06-msk-mtls.properties",
        secrets: &["mtls-Trust-Pw-2207", "mtls-Key-Pw-6130"],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "07-strimzi.properties",
        secrets: &[],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "08-ibm-event-streams.properties",
        secrets: &["esCaPw7Qk2LmX9", "es-Scram-Pw-qW3rTy8UiO"],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "09-aiven.properties",
        secrets: &["aiven-Ks-Pw-5148", "aiven-Ts-Pw-0392"],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "10-oidc.properties",
        secrets: &["kc:S3cr3t/With+Chars=Oidc41"],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "11-redpanda-scram256.properties",
        secrets: &["rp-Scram256-Pw-Zx81Qe", "up-Scram256-Pw-Lm02Vb"],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "12-pem-encrypted-inline.properties",
        secrets: &[PEM_KEY_PASSWORD],
        verdict: Verdict::Accepted,
    },
    Estate {
        file: "13-kerberos.properties",
        secrets: &[],
        verdict: Verdict::Refused(&[GSSAPI_SET]),
    },
    Estate {
        file: "14-custom-classes.properties",
        secrets: &["vault-placeholder"],
        verdict: Verdict::Refused(&[CUSTOM_POLICY, CUSTOM_HANDLER]),
    },
    Estate {
        file: "15-no-mechanism.properties",
        secrets: &["corp-Ts-Pw-6604"],
        verdict: Verdict::Refused(&[GSSAPI_DEFAULT]),
    },
];

use e2e::scratch::{TempDir, path_str as s, tool};

/// A self-signed P-256 certificate and its key.
fn self_signed(cert: &Path, key: &Path, cn: &str) {
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
            &format!("/CN={cn}"),
            "-days",
            "365",
            "-keyout",
            s(key),
            "-out",
            s(cert),
        ],
    );
}

/// A keytool trust store of `kind` holding `ca` as a trusted certificate.
fn trust_store(ca: &Path, store: &Path, kind: &str, password: &str) {
    tool(
        "keytool",
        &[
            "-importcert",
            "-noprompt",
            "-storetype",
            kind,
            "-alias",
            "ca",
            "-file",
            s(ca),
            "-keystore",
            s(store),
            "-storepass",
            password,
        ],
    );
}

/// A PKCS12 key store with `cert` and `key`: keytool's own format, or
/// `openssl pkcs12 -legacy` (3DES/RC2, SHA-1) with `legacy`.
fn key_store(cert: &Path, key: &Path, store: &Path, password: &str, legacy: bool) {
    let pass = format!("pass:{password}");
    let first = if legacy {
        store.to_path_buf()
    } else {
        store.with_extension("openssl.p12")
    };
    let mut args = vec!["pkcs12", "-export"];
    if legacy {
        args.push("-legacy");
    }
    args.extend([
        "-in",
        s(cert),
        "-inkey",
        s(key),
        "-name",
        "client",
        "-out",
        s(&first),
        "-passout",
        &pass,
    ]);
    tool("openssl", &args);
    if !legacy {
        tool(
            "keytool",
            &[
                "-importkeystore",
                "-noprompt",
                "-srckeystore",
                s(&first),
                "-srcstoretype",
                "PKCS12",
                "-srcstorepass",
                password,
                "-destkeystore",
                s(store),
                "-deststoretype",
                "PKCS12",
                "-deststorepass",
                password,
            ],
        );
    }
}

/// PEM text as a properties value over `\` continuation lines, the way
/// KIP-651's examples write inline PEM.
fn inline_pem(pem: &str) -> String {
    pem.trim_end().lines().collect::<Vec<_>>().join(" \\\n    ")
}

/// The base64 lines of a PEM private key: what must never be printed.
fn key_lines(pem: &str) -> Vec<String> {
    pem.lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
        .map(str::to_owned)
        .collect()
}

/// Makes every file's material under `dir`; returns the substitutions for
/// the files' placeholders and the private key lines no output may show.
fn make_material(dir: &TempDir) -> (Vec<(&'static str, String)>, Vec<String>) {
    let (ca, ca_key) = (dir.path("pki/ca.crt"), dir.path("pki/ca.key"));
    let (cert, key) = (dir.path("pki/client.crt"), dir.path("pki/client.key"));
    self_signed(&ca, &ca_key, "estate-trial-ca");
    self_signed(&cert, &key, "estate-trial-client");
    let encrypted_key = dir.path("pki/client-encrypted.key");
    tool(
        "openssl",
        &[
            "pkcs8",
            "-topk8",
            "-v2",
            "aes-256-cbc",
            "-in",
            s(&key),
            "-out",
            s(&encrypted_key),
            "-passout",
            &format!("pass:{PEM_KEY_PASSWORD}"),
        ],
    );

    // 05: a copy of the JDK's cacerts, a JKS store, named without password.
    trust_store(
        &ca,
        &dir.path("tmp/kafka.client.truststore.jks"),
        "JKS",
        CACERTS_PASSWORD,
    );
    // 06: keytool PKCS12 trust and key stores.
    trust_store(
        &ca,
        &dir.path("etc/kafka/msk/truststore.p12"),
        "PKCS12",
        "mtls-Trust-Pw-2207",
    );
    key_store(
        &cert,
        &key,
        &dir.path("etc/kafka/msk/client.p12"),
        "mtls-Key-Pw-6130",
        false,
    );
    // 07: Strimzi's trust stores, the KafkaUser secrets as mounted.
    for cluster in ["my-source-cluster", "my-target-cluster"] {
        trust_store(
            &ca,
            &dir.path(&format!("tmp/kafka/clusters/{cluster}.truststore.p12")),
            "PKCS12",
            STRIMZI_STORE_PASSWORD,
        );
    }
    std::fs::write(
        dir.path("opt/kafka/mm2-password/my-source-cluster/my-source-user/password"),
        STRIMZI_SCRAM_PASSWORD,
    )
    .expect("write mounted password");
    let user = "opt/kafka/mm2-certs/my-target-cluster/my-target-user";
    std::fs::copy(&cert, dir.path(&format!("{user}/user.crt"))).expect("mount user.crt");
    std::fs::copy(&key, dir.path(&format!("{user}/user.key"))).expect("mount user.key");
    // 08: IBM Event Streams' es-cert.p12.
    trust_store(
        &ca,
        &dir.path("opt/mm2/es-cert.p12"),
        "PKCS12",
        "esCaPw7Qk2LmX9",
    );
    // 09: Aiven: legacy openssl PKCS12 key store, keytool JKS trust store.
    key_store(
        &cert,
        &key,
        &dir.path("etc/aiven/client.keystore.p12"),
        "aiven-Ks-Pw-5148",
        true,
    );
    trust_store(
        &ca,
        &dir.path("etc/aiven/client.truststore.jks"),
        "JKS",
        "aiven-Ts-Pw-0392",
    );
    // 10: the OIDC provider's CA as PEM.
    std::fs::copy(&ca, dir.path("etc/kafka/oidc-ca.pem")).expect("copy CA");
    // 15: the company's JKS trust store.
    trust_store(
        &ca,
        &dir.path("etc/pki/kafka/truststore.jks"),
        "JKS",
        "corp-Ts-Pw-6604",
    );

    let read = |p: &Path| std::fs::read_to_string(p).expect("read PEM");
    let substitutions = vec![
        ("@ESTATE@", s(&dir.0).to_string()),
        ("@CA_PEM@", inline_pem(&read(&ca))),
        ("@CLIENT_CHAIN_PEM@", inline_pem(&read(&cert))),
        ("@CLIENT_KEY_PEM@", inline_pem(&read(&encrypted_key))),
    ];
    let mut keys = key_lines(&read(&key));
    keys.extend(key_lines(&read(&encrypted_key)));
    (substitutions, keys)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn twelve_of_fifteen_estates_are_accepted_and_the_rest_refused_in_plain_words() {
    let dir = TempDir::new("estates", "trial");
    let (substitutions, key_lines) = make_material(&dir);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/estates");
    let env = [("CERTS_STORE_PASSWORD", STRIMZI_STORE_PASSWORD)];
    let mut accepted = Vec::new();
    let mut failures = Vec::new();
    for estate in &ESTATES {
        let written = std::fs::read_to_string(source.join(estate.file)).expect("read estate");
        assert!(
            written.starts_with("# Estate "),
            "{}: no header comment",
            estate.file
        );
        // A secret the file does not hold would make its check vacuous.
        for secret in estate.secrets {
            assert!(
                written.contains(secret) || *secret == PEM_KEY_PASSWORD,
                "{}: `{secret}` is not in the file",
                estate.file
            );
        }
        let mut content = written.clone();
        for (placeholder, value) in &substitutions {
            content = content.replace(placeholder, value);
        }
        for (placeholder, _) in &substitutions {
            assert!(
                !content.contains(placeholder),
                "{}: {placeholder} is left",
                estate.file
            );
        }
        let cfg = dir.path(&format!("cfg/{}", estate.file));
        std::fs::write(&cfg, &content).expect("write config");

        let mut secrets: Vec<&str> = estate.secrets.to_vec();
        secrets.extend([STRIMZI_STORE_PASSWORD, STRIMZI_SCRAM_PASSWORD]);
        secrets.extend(key_lines.iter().map(String::as_str));

        for mode in [&[][..], &["--no-secrets"], &["--format", "json"]] {
            let mut args = vec!["validate"];
            args.extend_from_slice(mode);
            args.push(s(&cfg));
            let out = mm2_with_env(&args, &env, Duration::from_secs(30));
            let (stdout, stderr) = text(&out);
            let what = format!(
                "{} {mode:?}:\nstdout:\n{stdout}\nstderr:\n{stderr}",
                estate.file
            );
            for secret in &secrets {
                if stdout.contains(secret) || stderr.contains(secret) {
                    failures.push(format!("a secret was printed: {what}"));
                }
            }
            let json = mode.contains(&"json");
            let errors: Vec<String> = if json {
                let doc: serde_json::Value = serde_json::from_str(&stdout).expect("JSON output");
                doc["errors"]
                    .as_array()
                    .expect("errors list")
                    .iter()
                    .map(|e| {
                        let field = |k: &str| e[k].as_str().unwrap_or("").to_string();
                        format!("{}: {}", field("key"), field("message"))
                    })
                    .collect()
            } else {
                stderr
                    .lines()
                    .filter_map(|l| l.strip_prefix("error: "))
                    .filter(|l| !l.starts_with("the configuration has "))
                    .map(str::to_owned)
                    .collect()
            };
            if let Some(problem) = judge(&estate.verdict, out.status.code(), &errors) {
                failures.push(format!("{problem}: {what}"));
            }
        }
        if matches!(estate.verdict, Verdict::Accepted) {
            accepted.push(estate.file);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert_eq!(accepted.len(), 12, "{accepted:?}");
}

/// What is wrong with `validate`'s answer (exit code and error lines) for a
/// file whose verdict should be `verdict`, if anything.
fn judge(verdict: &Verdict, code: Option<i32>, errors: &[String]) -> Option<String> {
    match verdict {
        Verdict::Accepted if code != Some(0) || !errors.is_empty() => {
            Some(format!("refused (exit {code:?})"))
        }
        Verdict::Accepted => None,
        Verdict::Refused(_) if code != Some(2) || errors.is_empty() => {
            Some(format!("not refused (exit {code:?})"))
        }
        Verdict::Refused(expected) => {
            let matches = |error: &String, parts: &[&str]| parts.iter().all(|p| error.contains(p));
            if let Some(error) = errors
                .iter()
                .find(|e| !expected.iter().any(|parts| matches(e, parts)))
            {
                return Some(format!("unexpected error `{error}`"));
            }
            expected
                .iter()
                .find(|parts| !errors.iter().any(|e| matches(e, parts)))
                .map(|parts| format!("no error with {parts:?}"))
        }
    }
}
