//! Black-box tests of the `mm2-checkpoint` binary: arguments, exit codes and
//! what it prints. None of them needs a broker (those that do are in
//! cli_brokers.rs).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use e2e::files::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_mm2-checkpoint");

/// A throwaway self-signed certificate (the same one the config tests use).
const TEST_CERT: &str = include_str!("data/test_cert.pem");

const PRIMARY_PASSWORD: &str = "pw-primary-Zq81";
const BACKUP_PASSWORD: &str = "pw-backup-Kx42";

fn mm2(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("MM2_LOG")
        .env_remove("MM2_TLS_PROVIDER")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC");
    cmd
}

fn run(cmd: &mut Command) -> (Option<i32>, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run mm2-checkpoint");
    (
        status.code(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// docs/examples/mm2.properties with its /etc paths moved into `dir`, plus the
/// CA and secrets files it refers to.
fn example_config(dir: &TempDir) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/mm2.properties");
    let text = std::fs::read_to_string(example).expect("read the example config");
    let ca = dir.write("ca.pem", TEST_CERT);
    dir.write(
        "secrets.properties",
        &format!("backup.password = {BACKUP_PASSWORD}\n"),
    );
    let root = dir.0.display().to_string();
    let text = text
        .replace("/etc/kafka/ca.pem", &ca.display().to_string())
        .replace("/etc/mm2", &root);
    dir.write("mm2.properties", &text)
}

/// A minimal valid config, with `extra` lines appended.
fn config_with(dir: &TempDir, extra: &str) -> PathBuf {
    dir.write(
        "mm2.properties",
        &format!(
            "clusters = A, B\n\
             A.bootstrap.servers = 127.0.0.1:1\n\
             B.bootstrap.servers = 127.0.0.1:1\n\
             A->B.enabled = true\n\
             {extra}\n"
        ),
    )
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

#[test]
fn validate_prints_effective_settings_of_the_example() {
    let dir = TempDir::new("cli", "validate-example");
    let config = example_config(&dir);
    let (code, stdout, stderr) =
        run(mm2(&["validate", "--config", path(&config)])
            .env("MM2_PRIMARY_PASSWORD", PRIMARY_PASSWORD));
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(stdout.contains("[flow primary->backup]"), "{stdout}");
    assert!(stdout.contains("[flow backup->primary]"), "{stdout}");
    assert!(
        stdout.contains("emit.checkpoints.interval.seconds = 30"),
        "{stdout}"
    );
    assert!(stdout.contains("sasl username = mm2-primary"), "{stdout}");
}

#[test]
fn validate_masks_passwords() {
    let dir = TempDir::new("cli", "validate-masks");
    let config = example_config(&dir);
    let (code, stdout, stderr) =
        run(mm2(&["validate", path(&config)]).env("MM2_PRIMARY_PASSWORD", PRIMARY_PASSWORD));
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(stdout.contains("sasl password = [redacted]"), "{stdout}");
    for secret in [PRIMARY_PASSWORD, BACKUP_PASSWORD] {
        assert!(!stdout.contains(secret), "{secret} printed:\n{stdout}");
        assert!(!stderr.contains(secret), "{secret} printed:\n{stderr}");
    }
}

#[test]
fn validate_prints_warnings() {
    let dir = TempDir::new("cli", "validate-warnings");
    let config = config_with(&dir, "consumer.security.protocol = SSL");
    let (code, stdout, _) = run(&mut mm2(&["validate", path(&config)]));
    assert_eq!(code, Some(0));
    assert!(stdout.contains("warnings:"), "{stdout}");
    assert!(
        stdout.contains("`consumer.security.protocol` is ignored"),
        "{stdout}"
    );
}

/// A misspelt key is named with the closest real one; `--strict` turns it into a
/// failure (exit 2) while plain `validate` only warns.
#[test]
fn validate_names_keys_nothing_reads_and_strict_fails_on_them() {
    let dir = TempDir::new("cli", "validate-unknown");
    let config = config_with(
        &dir,
        "A->B.emit.checkpoint.interval.seconds = 5\ntotally.unknown.key = 1",
    );
    let (code, stdout, stderr) = run(&mut mm2(&["validate", path(&config)]));
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(
        stdout.contains(
            "`A->B.emit.checkpoint.interval.seconds` (line 5) is read by neither MirrorMaker 2 nor \
             mm2-checkpoint and has no effect; did you mean `A->B.emit.checkpoints.interval.seconds`?"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("`totally.unknown.key` (line 6)"),
        "{stdout}"
    );

    let (code, stdout, stderr) = run(&mut mm2(&["validate", "--strict", path(&config)]));
    assert_eq!(code, Some(2), "stdout: {stdout}");
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            "error: --strict: the configuration has 2 warnings (--strict fails on every warning):",
            "  - `A->B.emit.checkpoint.interval.seconds` (line 5) is read by neither MirrorMaker 2 \
             nor mm2-checkpoint and has no effect; did you mean \
             `A->B.emit.checkpoints.interval.seconds`?",
            "  - `totally.unknown.key` (line 6) is read by neither MirrorMaker 2 nor \
             mm2-checkpoint and has no effect",
        ]
    );

    let clean_dir = TempDir::new("cli", "validate-strict-clean");
    let clean = config_with(&clean_dir, "");
    let (code, _, stderr) = run(&mut mm2(&["validate", "--strict", path(&clean)]));
    assert_eq!(code, Some(0), "stderr: {stderr}");
}

/// Runs `validate` on `text` and returns the exit code and stderr.
fn validate_error(name: &str, text: &str) -> (Option<i32>, String) {
    let dir = TempDir::new("cli", name);
    let config = dir.write("mm2.properties", text);
    let (code, stdout, stderr) = run(&mut mm2(&["validate", path(&config)]));
    assert_eq!(stdout, "", "nothing on stdout for a rejected config");
    (code, stderr)
}

#[test]
fn missing_required_key_exits_2_naming_it() {
    let (code, stderr) = validate_error("missing-key", "A->B.enabled = true\n");
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with("error: clusters: "), "{stderr}");
}

#[test]
fn invalid_value_exits_2_naming_key_and_line() {
    let (code, stderr) = validate_error(
        "invalid-value",
        "clusters = A, B\n\
         A.bootstrap.servers = a:9092\n\
         B.bootstrap.servers = b:9092\n\
         A->B.enabled = true\n\
         emit.checkpoints.interval.seconds = soon\n",
    );
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with("error: emit.checkpoints.interval.seconds: "),
        "{stderr}"
    );
    assert!(stderr.trim_end().ends_with("(line 5)"), "{stderr}");
}

#[test]
fn unsupported_security_setting_exits_2_naming_the_key() {
    let (code, stderr) = validate_error(
        "unsupported",
        "clusters = A, B\n\
         A.bootstrap.servers = a:9092\n\
         B.bootstrap.servers = b:9092\n\
         A->B.enabled = true\n\
         A.security.protocol = SSL\n\
         A.ssl.truststore.type = JCEKS\n\
         A.ssl.truststore.location = /tmp/x.jceks\n",
    );
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with("error: A.ssl.truststore.type: "),
        "{stderr}"
    );
}

#[test]
fn unresolvable_provider_reference_exits_2_without_leaking_secrets() {
    let (code, stderr) = validate_error(
        "provider",
        "clusters = A, B\n\
         A.bootstrap.servers = a:9092\n\
         B.bootstrap.servers = b:9092\n\
         A->B.enabled = true\n\
         config.providers = env\n\
         config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
         A.security.protocol = SASL_PLAINTEXT\n\
         A.sasl.mechanism = PLAIN\n\
         A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"u\" password=\"${env:MM2_CLI_TEST_UNSET_VARIABLE}\";\n",
    );
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with("error: A.sasl.jaas.config: "),
        "{stderr}"
    );
    assert!(stderr.contains("MM2_CLI_TEST_UNSET_VARIABLE"), "{stderr}");
}

#[test]
fn file_that_is_not_utf8_exits_2_naming_the_line() {
    let dir = TempDir::new("cli", "not-utf8");
    let config = dir.0.join("mm2.properties");
    std::fs::write(
        &config,
        b"clusters = A, B\nA.bootstrap.servers = \xff\xfe\n",
    )
    .expect("write");
    let (code, _, stderr) = run(&mut mm2(&["validate", path(&config)]));
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.trim_end().ends_with("(line 2)"), "{stderr}");
}

#[test]
fn missing_file_exits_2_naming_it() {
    let (code, _, stderr) = run(&mut mm2(&["validate", "/nonexistent/mm2.properties"]));
    assert_eq!(code, Some(2));
    assert!(stderr.contains("/nonexistent/mm2.properties"), "{stderr}");
}

#[test]
fn run_with_a_config_error_exits_2_before_any_network_io() {
    let dir = TempDir::new("cli", "run-bad-config");
    // Brokers on 127.0.0.1:1 would refuse or hang; the error must come first.
    let config = config_with(&dir, "refresh.groups.interval.seconds = -5");
    let started = Instant::now();
    let (code, stdout, stderr) = run(&mut mm2(&["run", "--config", path(&config)]));
    assert_eq!(code, Some(2), "stderr: {stderr}");
    assert!(
        stderr.starts_with("error: refresh.groups.interval.seconds: "),
        "{stderr}"
    );
    assert_eq!(stdout, "");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

/// A bad `MM2_TLS_PROVIDER`, or one naming a provider this build lacks, is
/// a configuration error when a cluster uses TLS: exit 2 before any network
/// I/O, naming the variable; without TLS it is only a warning.
#[test]
fn a_bad_tls_provider_setting_exits_2_before_any_network_io_when_tls_is_used() {
    let dir = TempDir::new("cli", "run-bad-provider");
    let tls = config_with(&dir, "security.protocol = SSL");
    let lacking = if cfg!(feature = "ring") {
        "bogus"
    } else {
        "ring"
    };
    for value in ["bogus", lacking] {
        let started = Instant::now();
        let (code, stdout, stderr) =
            run(mm2(&["run", "--once", "--config", path(&tls)]).env("MM2_TLS_PROVIDER", value));
        assert_eq!(code, Some(2), "{value}: stderr: {stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains("MM2_TLS_PROVIDER"), "{stderr}");
        assert!(stderr.contains(value), "{stderr}");
        assert_eq!(stdout, "");
        assert!(started.elapsed() < Duration::from_secs(5), "{value}");
    }
}

#[test]
fn translate_with_an_unknown_flow_exits_2() {
    let dir = TempDir::new("cli", "translate-flow");
    let config = config_with(&dir, "");
    let (code, _, stderr) = run(&mut mm2(&[
        "translate",
        path(&config),
        "--flow",
        "B->A",
        "--group",
        "g",
    ]));
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--flow: `B->A` is not an enabled flow"),
        "{stderr}"
    );
    assert!(stderr.contains("A->B"), "{stderr}");
}

#[test]
fn invalid_log_level_exits_2() {
    let dir = TempDir::new("cli", "log-level");
    let config = config_with(&dir, "");
    let (code, _, stderr) = run(&mut mm2(&["run", path(&config), "--log-level", "mm2=loud"]));
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--log-level: `mm2=loud` is not a valid log filter"),
        "{stderr}"
    );
}

#[test]
fn invalid_log_filter_in_the_environment_exits_2() {
    let dir = TempDir::new("cli", "log-env");
    let config = config_with(&dir, "");
    let (code, _, stderr) = run(mm2(&["run", path(&config)]).env("MM2_LOG", "x=y=z"));
    assert_eq!(code, Some(2));
    assert!(stderr.contains("MM2_LOG: `x=y=z`"), "{stderr}");
}

#[test]
fn malformed_metrics_addr_exits_2() {
    let dir = TempDir::new("cli", "metrics-addr");
    let config = config_with(&dir, "");
    let (code, _, stderr) = run(&mut mm2(&["run", path(&config), "--metrics-addr", "9464"]));
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with("error: --metrics-addr: "), "{stderr}");
}

#[test]
fn run_logs_json_lines_and_warns_when_host_names_are_not_verified() {
    let dir = TempDir::new("cli", "run-json");
    let ca = dir.write("ca.pem", TEST_CERT);
    let config = config_with(
        &dir,
        &format!(
            "A.security.protocol = SSL\n\
             A.ssl.truststore.type = PEM\n\
             A.ssl.truststore.location = {}\n\
             A.ssl.endpoint.identification.algorithm =\n\
             admin.timeout.ms = 1000\n",
            ca.display()
        ),
    );
    // --once with a short admin timeout: the unreachable clusters end the run.
    let (_, _, stderr) = run(&mut mm2(&[
        "run",
        path(&config),
        "--once",
        "--log-format",
        "json",
    ]));
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(!lines.is_empty(), "no logs");
    for line in &lines {
        assert!(
            line.starts_with('{') && line.ends_with('}'),
            "not JSON: {line}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains(r#""level":"WARN""#)
            && l.contains("TLS HOST NAME VERIFICATION IS DISABLED")
            && l.contains(r#""cluster":"A""#)),
        "{stderr}"
    );
}

#[test]
fn version_names_target_and_tls_provider() {
    let (code, stdout, _) = run(&mut mm2(&["--version"]));
    assert_eq!(code, Some(0));
    assert!(
        stdout.starts_with(&format!("mm2-checkpoint {}\n", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(stdout.contains("target: "), "{stdout}");
    assert!(
        ["graviola", "portable", "ring"]
            .iter()
            .any(|p| stdout.contains(&format!("tls provider: rustls with {p} ("))),
        "{stdout}"
    );
    // Forced, with the reason.
    let (code, stdout, _) = run(mm2(&["--version"]).env("MM2_TLS_PROVIDER", "portable"));
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("tls provider: rustls with portable (MM2_TLS_PROVIDER=portable; "),
        "{stdout}"
    );
}

#[test]
fn help_lists_subcommands_and_exit_codes() {
    let (code, stdout, _) = run(&mut mm2(&["--help"]));
    assert_eq!(code, Some(0));
    for word in ["validate", "run", "translate", "Exit codes:"] {
        assert!(stdout.contains(word), "{word} missing:\n{stdout}");
    }
}

#[test]
fn unknown_subcommand_exits_2() {
    let (code, stdout, stderr) = run(&mut mm2(&["frobnicate"]));
    assert_eq!(code, Some(2));
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("unrecognized subcommand 'frobnicate'"),
        "{stderr}"
    );
}

#[test]
fn no_subcommand_exits_2() {
    let (code, _, stderr) = run(&mut mm2(&[]));
    assert_eq!(code, Some(2));
    assert!(stderr.contains("Usage:"), "{stderr}");
}

#[test]
fn metrics_address_in_use_exits_1_naming_it() {
    let dir = TempDir::new("cli", "metrics-busy");
    let config = config_with(&dir, "");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = busy.local_addr().expect("local addr").to_string();
    let (code, _, stderr) = run(&mut mm2(&["run", path(&config), "--metrics-addr", &addr]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot listen for the metrics endpoint"),
        "{stderr}"
    );
    assert!(stderr.contains(&addr), "{stderr}");
}

/// One rejected config: extra lines on top of a valid two-cluster file (or
/// a whole file when `whole` is set) and the key the error must start with.
struct BadConfig {
    name: &'static str,
    lines: &'static str,
    key: &'static str,
    whole: bool,
}

const BASE: &str = "clusters = A, B\n\
                    A.bootstrap.servers = a:9092\n\
                    B.bootstrap.servers = b:9092\n\
                    A->B.enabled = true\n";

/// A password in the rejected configs that must never be echoed back.
const TABLE_PASSWORD: &str = "tbl-pw-Vh93";

const BAD_CONFIGS: &[BadConfig] = &[
    BadConfig {
        name: "jks-truststore-by-default-type",
        lines: "A.security.protocol = SSL\nA.ssl.truststore.location = /etc/kafka/truststore.jks\n",
        key: "A.ssl.truststore",
        whole: false,
    },
    BadConfig {
        name: "jks-keystore-that-does-not-exist",
        lines: "A.security.protocol = SSL\nA.ssl.keystore.type = JKS\n\
                A.ssl.keystore.location = /etc/kafka/keystore.jks\n\
                A.ssl.keystore.password = tbl-pw-Vh93\n",
        key: "A.ssl.keystore",
        whole: false,
    },
    BadConfig {
        name: "pkcs12-truststore-that-does-not-exist",
        lines: "A.security.protocol = SSL\nA.ssl.truststore.type = PKCS12\n\
                A.ssl.truststore.location = /etc/kafka/no-such-truststore.p12\n\
                A.ssl.truststore.password = tbl-pw-Vh93\n",
        key: "A.ssl.truststore.location",
        whole: false,
    },
    BadConfig {
        name: "custom-replication-policy",
        lines: "replication.policy.class = com.example.MyReplicationPolicy\n",
        key: "replication.policy.class",
        whole: false,
    },
    BadConfig {
        name: "custom-topic-filter",
        lines: "topic.filter.class = com.example.MyTopicFilter\n",
        key: "topic.filter.class",
        whole: false,
    },
    BadConfig {
        name: "gssapi-explicit",
        lines: "A.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = GSSAPI\n",
        key: "A.sasl.mechanism",
        whole: false,
    },
    BadConfig {
        name: "gssapi-by-default",
        lines: "A.security.protocol = SASL_SSL\n",
        key: "A.sasl.mechanism",
        whole: false,
    },
    BadConfig {
        name: "oauthbearer-custom-login-handler",
        lines: "A.security.protocol = SASL_SSL\nA.sasl.mechanism = OAUTHBEARER\n\
                A.sasl.login.callback.handler.class = com.example.MyLoginHandler\n\
                A.sasl.oauthbearer.token.endpoint.url = https://idp.example/token\n\
                A.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.\
                OAuthBearerLoginModule required clientId=\"c\" clientSecret=\"tbl-oauth-9Qx\";\n",
        key: "A.sasl.login.callback.handler.class",
        whole: false,
    },
    BadConfig {
        name: "unknown-security-protocol",
        lines: "A.security.protocol = TLS\n",
        key: "A.security.protocol",
        whole: false,
    },
    BadConfig {
        name: "malformed-jaas-unterminated-quote",
        lines: "A.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = PLAIN\n\
                A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule \
                required username=\"u\" password=\"tbl-pw-Vh93;\n",
        key: "A.sasl.jaas.config",
        whole: false,
    },
    BadConfig {
        name: "malformed-jaas-no-password",
        lines: "A.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = SCRAM-SHA-512\n\
                A.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule \
                required username=\"u\";\n",
        key: "A.sasl.jaas.config",
        whole: false,
    },
    BadConfig {
        name: "missing-bootstrap",
        lines: "clusters = A, B\nA.bootstrap.servers = a:9092\nA->B.enabled = true\n",
        key: "B.bootstrap.servers",
        whole: true,
    },
    BadConfig {
        name: "bad-boolean",
        lines: "sync.group.offsets.enabled = yes\n",
        key: "sync.group.offsets.enabled",
        whole: false,
    },
    BadConfig {
        name: "bad-flow-boolean",
        lines: "B->A.enabled = ture\n",
        key: "B->A.enabled",
        whole: false,
    },
    BadConfig {
        name: "bad-offset-translation",
        lines: "A->B.mm2-checkpoint.offset.translation = exact\n",
        key: "A->B.mm2-checkpoint.offset.translation",
        whole: false,
    },
    BadConfig {
        name: "content-search-without-precise",
        lines: "mm2-checkpoint.offset.translation.content.search = true\n",
        key: "mm2-checkpoint.offset.translation.content.search",
        whole: false,
    },
    BadConfig {
        name: "zero-translation-budget",
        lines: "mm2-checkpoint.offset.translation.max.syncs.per.partition = 0\n",
        key: "mm2-checkpoint.offset.translation.max.syncs.per.partition",
        whole: false,
    },
    BadConfig {
        name: "bad-integer-overflow",
        lines: "refresh.groups.interval.seconds = 99999999999999999999999\n",
        key: "refresh.groups.interval.seconds",
        whole: false,
    },
    BadConfig {
        name: "bad-integer-fraction",
        lines: "A->B.emit.checkpoints.interval.seconds = 1.5\n",
        key: "A->B.emit.checkpoints.interval.seconds",
        whole: false,
    },
    BadConfig {
        name: "custom-config-provider",
        lines: "config.providers = vault\n\
                config.providers.vault.class = com.example.VaultConfigProvider\n",
        key: "config.providers.vault.class",
        whole: false,
    },
    BadConfig {
        name: "ssl-engine-factory",
        lines: "A.security.protocol = SSL\nA.ssl.engine.factory.class = com.example.Engine\n",
        key: "A.ssl.engine.factory.class",
        whole: false,
    },
];

#[test]
fn every_kind_of_bad_config_exits_2_naming_the_key_and_never_the_password() {
    let mut failures = Vec::new();
    for case in BAD_CONFIGS {
        let text = if case.whole {
            case.lines.to_string()
        } else {
            format!("{BASE}{}", case.lines)
        };
        let (code, stderr) = validate_error(case.name, &text);
        let expected = format!("error: {}", case.key);
        if code != Some(2) || !stderr.starts_with(&expected) || stderr.contains(TABLE_PASSWORD) {
            failures.push(format!(
                "{}: exit {code:?}, expected 2 and `{expected}...`, got: {stderr}",
                case.name
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn file_provider_reference_to_a_missing_key_exits_2_naming_the_key_without_the_file_contents() {
    let dir = TempDir::new("cli", "file-provider-missing-key");
    let secrets = dir.write(
        "secrets.properties",
        &format!("other.password = {TABLE_PASSWORD}\n"),
    );
    let config = dir.write(
        "mm2.properties",
        &format!(
            "{BASE}config.providers = file\n\
             config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n\
             A.security.protocol = SASL_PLAINTEXT\n\
             A.sasl.mechanism = PLAIN\n\
             A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \
             username=\"u\" password=\"${{file:{}:a.password}}\";\n",
            secrets.display()
        ),
    );
    let (code, stdout, stderr) = run(&mut mm2(&["validate", path(&config)]));
    assert_eq!(code, Some(2), "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stderr.starts_with("error: A.sasl.jaas.config: "),
        "{stderr}"
    );
    assert!(stderr.contains("a.password"), "{stderr}");
    assert!(
        !stderr.contains(TABLE_PASSWORD),
        "secret file content leaked: {stderr}"
    );
}

// ---- Behaviour an operator trips over (issue 15) ----

/// A mistyped level exits 2 at once, naming the value and the accepted forms,
/// from the option and from the environment alike.
#[test]
fn mistyped_log_level_exits_2_at_once_naming_value_and_accepted_forms() {
    let dir = TempDir::new("cli", "log-typo");
    let config = config_with(&dir, "");
    for (flag, env, source, value) in [
        (Some("warning"), None, "--log-level", "warning"),
        (Some("bogus"), None, "--log-level", "bogus"),
        (None, Some("bogus"), "MM2_LOG", "bogus"),
    ] {
        let mut cmd = mm2(&["run", path(&config)]);
        if let Some(level) = flag {
            cmd.args(["--log-level", level]);
        }
        if let Some(level) = env {
            cmd.env("MM2_LOG", level);
        }
        let started = Instant::now();
        let (code, _, stderr) = run(&mut cmd);
        assert_eq!(code, Some(2), "{source} {value}: {stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
        assert!(
            stderr.starts_with(&format!(
                "error: {source}: `{value}` is not a valid log filter"
            )),
            "{stderr}"
        );
        assert!(
            stderr.contains("(off, error, warn, info, debug, trace)")
                && stderr.contains("info,kafka_lite=debug"),
            "{stderr}"
        );
    }
    let (_, _, stderr) = run(&mut mm2(&["run", path(&config), "--log-level", "warning"]));
    assert!(stderr.contains("did you mean `warn`?"), "{stderr}");
}

use e2e::binary::SIGTERM_BOUND;

/// A TCP port that accepts connections and never answers: a request sent
/// there waits for its timeout.
fn silent_port() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    (listener, addr)
}

/// Start-up and retries against a refused port: SIGTERM ends the daemon
/// (exit 0) within the bound.
#[test]
fn sigterm_during_startup_retries_ends_the_daemon_with_0() {
    let dir = TempDir::new("cli", "sigterm-retry");
    let config = config_with(&dir, "");
    let mut daemon = e2e::binary::Daemon::spawn(&mut mm2(&["run", path(&config)]));
    daemon.wait_for("cannot reach cluster");
    let (code, took, stderr) = daemon.terminate();
    eprintln!("SIGTERM to exit during connection retries: {took:?}");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < SIGTERM_BOUND, "took {took:?}");
}

/// A broker that accepts and never answers holds a request in flight for its
/// whole timeout: SIGTERM still ends the daemon within the bound.
#[test]
fn sigterm_with_a_request_in_flight_ends_the_daemon_with_0() {
    let dir = TempDir::new("cli", "sigterm-silent");
    let (_listener, addr) = silent_port();
    let config = dir.write(
        "mm2.properties",
        &format!(
            "clusters = A, B\nA.bootstrap.servers = {addr}\nB.bootstrap.servers = {addr}\n\
             A->B.enabled = true\n"
        ),
    );
    let mut daemon = e2e::binary::Daemon::spawn(&mut mm2(&["run", path(&config)]));
    daemon.wait_for("mm2-checkpoint starting");
    std::thread::sleep(Duration::from_millis(500));
    let (code, took, stderr) = daemon.terminate();
    eprintln!("SIGTERM to exit with a request in flight: {took:?}");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < SIGTERM_BOUND, "took {took:?}");
}

/// `run --once` and `translate` stopped by SIGTERM before they finished exit
/// 1 and say so.
#[test]
fn sigterm_before_once_or_translate_finished_exits_1() {
    let dir = TempDir::new("cli", "sigterm-once");
    let config = config_with(&dir, "");
    for args in [
        &["run", "--once", path(&config)][..],
        &["translate", path(&config), "--flow", "A->B", "--group", "g"],
    ] {
        let mut daemon = e2e::binary::Daemon::spawn(&mut mm2(args));
        daemon.wait_for("cannot reach cluster");
        let (code, took, stderr) = daemon.terminate();
        eprintln!("SIGTERM to exit of {}: {took:?}", args[0]);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(took < SIGTERM_BOUND, "{args:?} took {took:?}");
        assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    }
}

/// Each retry against a refused port is a WARN naming the cluster, the
/// address, the cause and the deadline; for `run --once` and `translate`.
#[test]
fn retries_against_a_refused_port_are_warned_with_cluster_address_cause_and_deadline() {
    let dir = TempDir::new("cli", "retry-warn");
    let config = config_with(&dir, "admin.timeout.ms = 2000");
    // `run` reaches both clusters of the flow, `translate` only the target.
    for (args, clusters) in [
        (&["run", "--once", path(&config)][..], &["A", "B"][..]),
        (
            &["translate", path(&config), "--flow", "A->B", "--group", "g"],
            &["B"],
        ),
    ] {
        let (code, _, stderr) = run(&mut mm2(args));
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        let warns: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("WARN") && l.contains("cannot reach cluster"))
            .collect();
        assert!(warns.len() >= 2, "{args:?}: one WARN per retry:\n{stderr}");
        for line in warns {
            assert!(
                clusters
                    .iter()
                    .any(|c| line.contains(&format!("cannot reach cluster {c}: ")))
                    && line.contains("127.0.0.1:1")
                    && line.contains("Connection refused")
                    && line.contains("until the deadline in "),
                "{line}"
            );
        }
    }
}

/// A tiny HTTP server on the port: the error says an HTTP server answered.
#[test]
fn an_http_server_instead_of_a_broker_is_named_as_such() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let dir = TempDir::new("cli", "http-port");
    let config = dir.write(
        "mm2.properties",
        &format!(
            "clusters = A, B\nA.bootstrap.servers = {addr}\nB.bootstrap.servers = {addr}\n\
             A->B.enabled = true\nadmin.timeout.ms = 2000\n"
        ),
    );
    let (code, _, stderr) = run(&mut mm2(&[
        "translate",
        path(&config),
        "--flow",
        "A->B",
        "--group",
        "g",
    ]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("broker {addr}"))
            && stderr.contains("an HTTP server answered, not a Kafka broker"),
        "{stderr}"
    );
}

/// stdout or stderr closed by the reader (`validate | head -1`,
/// `run ... 2>&1 | head -1`): the output is lost, the exit code is the
/// command's, never an abort.
#[test]
fn a_closed_stdout_or_stderr_does_not_crash() {
    let dir = TempDir::new("cli", "closed-pipe");
    let config = config_with(&dir, "admin.timeout.ms = 1500");
    let closed = || {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        writer
    };
    let status = mm2(&["validate", path(&config)])
        .stdout(closed())
        .status()
        .expect("run validate");
    assert_eq!(status.code(), Some(0), "validate: {status:?}");
    let status = mm2(&["run", "--once", path(&config)])
        .stderr(closed())
        .status()
        .expect("run --once");
    assert_eq!(status.code(), Some(1), "run --once: {status:?}");
    let status = mm2(&["man"]).stdout(closed()).status().expect("man");
    assert_eq!(status.code(), Some(0), "man: {status:?}");
}

#[test]
fn help_subcommand_prints_a_subcommands_help() {
    let (code, stdout, _) = run(&mut mm2(&["help", "translate"]));
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("Usage: mm2-checkpoint translate") && stdout.contains("--all-groups"),
        "{stdout}"
    );
}

/// Completion scripts come from the command definition: every subcommand
/// and option is in them; bash's parses.
#[test]
fn completions_cover_every_subcommand_and_option() {
    for shell in ["bash", "zsh", "fish"] {
        let (code, stdout, stderr) = run(&mut mm2(&["completions", shell]));
        assert_eq!(code, Some(0), "{shell}: {stderr}");
        for word in [
            "translate",
            "validate",
            "completions",
            "all-groups",
            "log-level",
        ] {
            assert!(stdout.contains(word), "{shell}: {word} missing");
        }
    }
    let (_, script, _) = run(&mut mm2(&["completions", "bash"]));
    let dir = TempDir::new("cli", "completions");
    let file = dir.write("mm2-checkpoint.bash", &script);
    let status = Command::new("bash")
        .args(["-n", path(&file)])
        .status()
        .expect("bash -n");
    assert!(status.success(), "bash rejects the script");
    let (code, _, stderr) = run(&mut mm2(&["completions", "tcsh"]));
    assert_eq!(code, Some(2), "{stderr}");
}

/// The man page: a roff page with every subcommand's options and the exit codes.
#[test]
fn man_page_documents_every_subcommand_and_the_exit_codes() {
    let (code, page, _) = run(&mut mm2(&["man"]));
    assert_eq!(code, Some(0));
    assert!(
        page.starts_with(".ie \\n(.g .ds Aq") || page.contains(".TH mm2-checkpoint 1"),
        "{page}"
    );
    for section in [
        "MM2-CHECKPOINT VALIDATE",
        "MM2-CHECKPOINT RUN",
        "MM2-CHECKPOINT TRANSLATE",
        "EXIT STATUS",
    ] {
        assert!(
            page.contains(&format!(".SH \"{section}\"")),
            "{section} missing"
        );
    }
    assert!(page.contains("group\\-regex"), "--group-regex missing");
    assert!(
        page.contains("translate \\-\\-apply"),
        "exit code 3 missing"
    );
}

/// `--groups-file` that cannot be read, or a `--group-regex` the Java-compatible
/// filter refuses, exits 2 before any network I/O; no selection at all too.
#[test]
fn translate_group_selection_errors_exit_2() {
    let dir = TempDir::new("cli", "translate-select");
    let config = config_with(&dir, "");
    let base = ["translate", path(&config), "--flow", "A->B"];
    let missing = dir.0.join("nope.txt");
    for (extra, expect) in [
        (
            vec!["--groups-file", path(&missing)],
            "--groups-file: cannot read",
        ),
        (vec!["--group-regex", "(?<=a)b"], "--group-regex"),
        (vec![], "required"),
    ] {
        let mut args = base.to_vec();
        args.extend(extra);
        let started = Instant::now();
        let (code, _, stderr) = run(&mut mm2(&args));
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

// ---- validate: every error, --format json, --strict, --no-secrets (issue 14) ----

/// Distinctive secrets of the configs below: none may ever be printed.
const SECRETS: [&str; 4] = [
    "jaas-Secret-5812",
    "store-Secret-7734",
    "env-Secret-2290",
    "file-Secret-6605",
];

/// Asserts that no secret of [`SECRETS`] is in `text`.
#[track_caller]
fn assert_no_secrets(text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} printed:\n{text}");
    }
}

/// Seven independent errors, each on its own line; secrets around them.
fn seven_errors(dir: &TempDir) -> PathBuf {
    dir.write(
        "mm2.properties",
        &format!(
            "clusters = A, B\n\
             A.bootstrap.servers = a:9092\n\
             B.bootstrap.servers = b:port\n\
             A->B.enabled = true\n\
             emit.checkpoints.interval.seconds = 0\n\
             sync.group.offsets.enabled = maybe\n\
             A.security.protocol = SASL_SSL\n\
             A.sasl.mechanism = SCRAM-SHA-512\n\
             A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule \
             required username=\"u\" password=\"{}\";\n\
             A.ssl.truststore.type = PKCS12\n\
             A.ssl.truststore.location = {}\n\
             A.ssl.truststore.password = {}\n\
             topic.filter.class = com.example.Filter\n\
             mm2-checkpoint.group.offsets.mode = sometimes\n",
            SECRETS[0],
            dir.0.join("no-such-truststore.p12").display(),
            SECRETS[1],
        ),
    )
}

/// `(key, line)` of the seven errors, in file order.
const SEVEN: [(&str, usize); 7] = [
    ("B.bootstrap.servers", 3),
    ("emit.checkpoints.interval.seconds", 5),
    ("sync.group.offsets.enabled", 6),
    ("A.sasl.jaas.config", 9),
    ("A.ssl.truststore.location", 11),
    ("topic.filter.class", 13),
    ("mm2-checkpoint.group.offsets.mode", 14),
];

#[test]
fn validate_reports_every_independent_error_in_one_run() {
    let dir = TempDir::new("cli", "every-error");
    let config = seven_errors(&dir);
    let (code, stdout, stderr) = run(&mut mm2(&["validate", path(&config)]));
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stdout, "", "nothing on stdout for a rejected config");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), SEVEN.len() + 1, "{stderr}");
    for ((key, line), text) in SEVEN.iter().zip(&lines) {
        assert!(
            text.starts_with(&format!("error: {key}: "))
                && text.ends_with(&format!("(line {line})")),
            "expected {key} (line {line}): {text}"
        );
    }
    assert_eq!(
        lines[SEVEN.len()],
        "error: the configuration has 7 errors (each is listed above)"
    );
    // Each message is the one a single error has.
    assert!(lines[1].contains("must be at least 1, got 0"), "{stderr}");
    assert!(
        lines[3].contains("does not match sasl.mechanism=SCRAM-SHA-512"),
        "{stderr}"
    );
    assert_no_secrets(&stderr);

    // `run` reports the same, before any network I/O.
    let started = Instant::now();
    let (code, stdout, run_stderr) = run(&mut mm2(&["run", "--once", path(&config)]));
    assert_eq!(code, Some(2), "{run_stderr}");
    assert_eq!(
        (stdout.as_str(), run_stderr.as_str()),
        ("", stderr.as_str())
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Parses `validate --format json`'s standard output.
fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

#[test]
fn validate_format_json_lists_every_error_with_key_and_line() {
    let dir = TempDir::new("cli", "every-error-json");
    let config = seven_errors(&dir);
    let (code, stdout, stderr) = run(&mut mm2(&["validate", "--format", "json", path(&config)]));
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr, "", "everything is in the document");
    assert_no_secrets(&stdout);
    let doc = json(&stdout);
    assert_eq!(doc["ok"], false);
    let errors = doc["errors"].as_array().expect("errors");
    let found: Vec<(&str, u64)> = errors
        .iter()
        .map(|e| {
            (
                e["key"].as_str().expect("key"),
                e["line"].as_u64().expect("line"),
            )
        })
        .collect();
    let want: Vec<(&str, u64)> = SEVEN.iter().map(|&(k, l)| (k, l as u64)).collect();
    assert_eq!(found, want);
    assert!(errors.iter().all(|e| e["message"].is_string()));
    // The flow is known and taken, but its settings have errors.
    assert_eq!(doc["flows"][0]["name"], "A->B");
    assert_eq!(doc["flows"][0]["checkpointed"], true);
    assert!(doc["flows"][0]["settings"].is_null());
    for field in ["warnings", "not_checked", "clusters"] {
        assert!(doc[field].is_array(), "{field}: {doc}");
    }
}

#[test]
fn validate_format_json_of_a_good_config_has_its_settings_and_masks_secrets() {
    let dir = TempDir::new("cli", "json-ok");
    let config = config_with(
        &dir,
        &format!(
            "A.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = SCRAM-SHA-256\n\
             A.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule \
             required username=\"mm2\" password=\"{}\";\ntasks.max = 2",
            SECRETS[0]
        ),
    );
    let (code, stdout, stderr) = run(&mut mm2(&["validate", "--format", "json", path(&config)]));
    assert_eq!(code, Some(0), "{stderr}");
    assert_no_secrets(&stdout);
    let doc = json(&stdout);
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["strict"], false);
    assert_eq!(doc["secrets_checked"], true);
    assert_eq!(doc["clusters"], serde_json::json!(["A", "B"]));
    assert_eq!(doc["errors"], serde_json::json!([]));
    let flow = &doc["flows"][0];
    assert!(
        flow["reason"]
            .as_str()
            .is_some_and(|r| r.contains("mm2-checkpoint's own")),
        "{flow}"
    );
    let rows = flow["settings"]["source"]["settings"]
        .as_array()
        .expect("source settings");
    let row = |key: &str| rows.iter().find(|r| r["key"] == key).expect(key);
    assert_eq!(row("sasl username")["value"], "mm2");
    assert_eq!(row("sasl password")["value"], "[redacted]");
    assert_eq!(
        row("security.protocol")["origin"],
        "A.security.protocol (line 5)"
    );
    let interval = flow["settings"]["flow"]
        .as_array()
        .and_then(|r| {
            r.iter()
                .find(|r| r["key"] == "emit.checkpoints.interval.seconds")
        })
        .expect("interval");
    assert_eq!(interval["value"], "60");
    assert_eq!(interval["origin"], "default");
    assert_eq!(
        doc["no_effect_keys"],
        serde_json::json!(["tasks.max (line 8)"])
    );
    // SASL PLAIN-less SCRAM over plaintext: no warning; the text form agrees.
    let (_, text, _) = run(&mut mm2(&["validate", path(&config)]));
    assert!(text.contains("sasl password = [redacted]"), "{text}");
}

#[test]
fn strict_fails_on_any_warning_and_plain_validate_does_not() {
    let dir = TempDir::new("cli", "strict-warning");
    // No unknown key: an ignored one (MM2 drops top-level client keys).
    let config = config_with(&dir, "consumer.security.protocol = SSL");
    let (code, stdout, stderr) = run(&mut mm2(&["validate", path(&config)]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("warnings:\n  - `consumer.security.protocol` is ignored"),
        "{stdout}"
    );

    let (code, stdout, stderr) = run(&mut mm2(&["validate", "--strict", path(&config)]));
    assert_eq!(code, Some(2), "{stdout}");
    assert!(
        stdout.contains("[flow A->B]"),
        "the settings are still printed"
    );
    assert!(
        stderr.starts_with("error: --strict: the configuration has 1 warning (")
            && stderr.contains("  - `consumer.security.protocol` is ignored"),
        "{stderr}"
    );

    let (code, stdout, _) = run(&mut mm2(&[
        "validate",
        "--strict",
        "--format",
        "json",
        path(&config),
    ]));
    assert_eq!(code, Some(2));
    let doc = json(&stdout);
    assert_eq!(
        (&doc["ok"], &doc["strict"]),
        (&serde_json::json!(false), &serde_json::json!(true))
    );
    assert_eq!(doc["warnings"][0]["key"], "consumer.security.protocol");
    assert_eq!(doc["warnings"][0]["line"], 5);

    let (code, stdout, _) = run(&mut mm2(&["validate", "--format", "json", path(&config)]));
    assert_eq!(code, Some(0));
    assert_eq!(json(&stdout)["ok"], true);
}

/// A config whose secrets are all elsewhere: provider values and store files
/// that this host does not have, plus `extra` lines.
fn secrets_elsewhere(dir: &TempDir, extra: &str) -> PathBuf {
    let absent = dir.0.join("secrets");
    dir.write(
        "mm2.properties",
        &format!(
            "clusters = A, B\n\
             A.bootstrap.servers = a:9092\n\
             B.bootstrap.servers = b:9093\n\
             A->B.enabled = true\n\
             config.providers = env, file, dir\n\
             config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
             config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n\
             config.providers.dir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider\n\
             A.security.protocol = SASL_SSL\n\
             A.sasl.mechanism = SCRAM-SHA-512\n\
             A.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule \
             required username=\"mm2\" password=\"${{env:MM2_CLI_A_PASSWORD}}\";\n\
             A.ssl.truststore.type = PKCS12\n\
             A.ssl.truststore.location = {absent}/a/truststore.p12\n\
             A.ssl.truststore.password = ${{dir:{absent}/a:truststore.password}}\n\
             B.security.protocol = SSL\n\
             B.ssl.keystore.type = PKCS12\n\
             B.ssl.keystore.location = {absent}/b/keystore.p12\n\
             B.ssl.keystore.password = ${{file:{absent}/b.properties:keystore.password}}\n\
             {extra}\n",
            absent = absent.display()
        ),
    )
}

#[test]
fn no_secrets_passes_a_config_whose_secrets_are_absent_and_says_what_it_did_not_check() {
    let dir = TempDir::new("cli", "no-secrets-ok");
    let config = secrets_elsewhere(&dir, "");
    // Set or not, a provider value is never read with --no-secrets.
    let with_env = |cmd: &mut Command| {
        cmd.env("MM2_CLI_A_PASSWORD", SECRETS[2]);
    };
    let mut plain = mm2(&["validate", path(&config)]);
    with_env(&mut plain);
    let (code, _, stderr) = run(&mut plain);
    assert_eq!(
        code,
        Some(2),
        "the absent files are errors with secrets: {stderr}"
    );
    assert!(stderr.contains("A.ssl.truststore.password"), "{stderr}");

    let mut cmd = mm2(&["validate", "--no-secrets", path(&config)]);
    with_env(&mut cmd);
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, Some(0), "{stderr}");
    assert_no_secrets(&format!("{stdout}{stderr}"));
    for want in [
        "[flow A->B]",
        "sasl username = mm2",
        "not checked:\n",
        "  - A.sasl.jaas.config (line 11) (its value comes from ${env:MM2_CLI_A_PASSWORD}, \
         which --no-secrets does not read)",
        "  - A.ssl.truststore.location (line 13) (PKCS12 store ",
        "  - B.ssl.keystore.password (line 18) (its value comes from ${file:",
        "structure only (--no-secrets): config provider values were not read and key and trust \
         material (stores, PEM files) was not opened, so passwords, certificates and keys were \
         NOT checked",
    ] {
        assert!(stdout.contains(want), "missing {want:?}:\n{stdout}");
    }

    let mut cmd = mm2(&[
        "validate",
        "--no-secrets",
        "--format",
        "json",
        path(&config),
    ]);
    with_env(&mut cmd);
    let (code, stdout, _) = run(&mut cmd);
    assert_eq!(code, Some(0));
    assert_no_secrets(&stdout);
    let doc = json(&stdout);
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["secrets_checked"], false);
    let not_checked = doc["not_checked"].as_array().expect("not_checked");
    assert!(
        not_checked
            .iter()
            .any(|n| n["key"] == "B.ssl.keystore.location" && n["line"] == 17),
        "{doc}"
    );
}

#[test]
fn no_secrets_still_fails_on_structural_errors() {
    for (name, extra, key) in [
        (
            "no-secrets-jceks",
            "B.ssl.keystore.type = JCEKS",
            "B.ssl.keystore.type",
        ),
        (
            "no-secrets-interval",
            "admin.timeout.ms = -1",
            "admin.timeout.ms",
        ),
        (
            "no-secrets-module",
            "A.sasl.mechanism = PLAIN",
            "A.sasl.jaas.config",
        ),
        (
            "no-secrets-provider",
            "B.ssl.keystore.password = ${vault:keystore.password}",
            "B.ssl.keystore.password",
        ),
    ] {
        let dir = TempDir::new("cli", name);
        let config = secrets_elsewhere(&dir, extra);
        let (code, stdout, stderr) = run(&mut mm2(&["validate", "--no-secrets", path(&config)]));
        assert_eq!(code, Some(2), "{name}: {stdout}");
        assert!(
            stderr.starts_with(&format!("error: {key}: ")),
            "{name}: {stderr}"
        );
        assert_no_secrets(&stderr);
    }
}

#[test]
fn validate_help_says_what_strict_and_no_secrets_cover() {
    let (code, stdout, _) = run(&mut mm2(&["validate", "--help"]));
    assert_eq!(code, Some(0));
    for word in [
        "--strict",
        "keys that nothing reads",
        "certificates expired",
        "--no-secrets",
        "not checked",
        "--format <FORMAT>",
    ] {
        assert!(stdout.contains(word), "{word} missing:\n{stdout}");
    }
}

/// SIGHUP (sent by supervisors and log rotators) neither ends nor reloads
/// the daemon: one WARN line says so, and SIGTERM still ends it with 0.
#[test]
fn sighup_is_logged_and_the_daemon_carries_on() {
    let dir = TempDir::new("cli", "sighup");
    let config = config_with(&dir, "");
    let mut daemon = e2e::binary::Daemon::spawn(&mut mm2(&["run", path(&config)]));
    daemon.wait_for("mm2-checkpoint starting");
    for _ in 0..2 {
        daemon.signal("HUP");
        let line = daemon.wait_for("SIGHUP");
        assert!(
            line.contains("WARN") && line.contains("carrying on"),
            "{line}"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(daemon.is_running(), "the daemon ended after SIGHUP");
    // Two HUPs counted as no first signal: one TERM is a graceful stop.
    let (code, took, stderr) = daemon.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < SIGTERM_BOUND, "took {took:?}");
    assert!(!stderr.contains("second signal"), "{stderr}");
}

/// Under a systemd `Type=notify` unit: `READY=1` (with the readiness as
/// `STATUS=`) once the daemon has started, `STOPPING=1` at SIGTERM, sent to
/// the socket `NOTIFY_SOCKET` names.
#[test]
fn the_daemon_tells_systemd_it_started_and_is_stopping() {
    use std::os::unix::net::UnixDatagram;
    let dir = TempDir::new("cli", "notify");
    let config = config_with(&dir, "");
    let socket_path = dir.0.join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let recv = || {
        let mut buf = [0u8; 4096];
        let n = socket.recv(&mut buf).expect("a notification within 30 s");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let mut daemon =
        e2e::binary::Daemon::spawn(mm2(&["run", path(&config)]).env("NOTIFY_SOCKET", &socket_path));
    let ready = recv();
    assert!(ready.starts_with("READY=1\nSTATUS="), "{ready}");
    daemon.wait_for("cannot reach cluster");
    let (code, _, stderr) = daemon.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    let mut last = recv();
    while last.starts_with("STATUS=") {
        last = recv();
    }
    assert_eq!(last, "STOPPING=1\nSTATUS=stopping");
    // `run --once` is not a service: it notifies nothing.
    let once_config = config_with(&dir, "admin.timeout.ms = 500");
    let mut once = mm2(&["run", "--once", path(&once_config)]);
    let (code, _, _) = run(once.env("NOTIFY_SOCKET", &socket_path));
    assert_eq!(code, Some(1));
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let mut buf = [0u8; 64];
    assert!(
        socket.recv(&mut buf).is_err(),
        "run --once notified systemd"
    );
}
