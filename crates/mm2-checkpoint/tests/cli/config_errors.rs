//! Configuration errors: each kind exits 2 before any network I/O, naming
//! the key and line and never a secret; bad log levels and filters, metrics
//! addresses, flows and group selections too.

use super::*;

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
         A.ssl.truststore.type = BCFKS\n\
         A.ssl.truststore.location = /tmp/x.bcfks\n",
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
        name: "bad-reverse-checkpoints",
        lines: "A->B.mm2-checkpoint.emit.reverse.checkpoints.enabled = on\n",
        key: "A->B.mm2-checkpoint.emit.reverse.checkpoints.enabled",
        whole: false,
    },
    BadConfig {
        name: "zero-reverse-interval",
        lines: "mm2-checkpoint.emit.reverse.checkpoints.interval.ms = 0\n",
        key: "mm2-checkpoint.emit.reverse.checkpoints.interval.ms",
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

/// `cutover`'s argument errors exit 2 before any network I/O: an unknown
/// flow, a `--to` that is neither side of it, a bad timeout, a bad group
/// selection, or none.
#[test]
fn cutover_argument_errors_exit_2_before_any_network_io() {
    let dir = TempDir::new("cli", "cutover-args");
    let config = config_with(&dir, "");
    let missing = dir.0.join("nope.txt");
    let empty = dir.write("empty.txt", "# nobody\n\n");
    let base = ["cutover", path(&config)];
    for (extra, expect) in [
        (
            vec!["--flow", "B->A", "--to", "A", "--group", "g"],
            "--flow: `B->A` is not an enabled flow",
        ),
        (
            vec!["--flow", "A->B", "--to", "C", "--group", "g"],
            "--to: `C` is neither side of flow A->B",
        ),
        (
            vec![
                "--flow",
                "A->B",
                "--to",
                "B",
                "--group",
                "g",
                "--timeout",
                "5",
            ],
            "no unit",
        ),
        (
            vec![
                "--flow",
                "A->B",
                "--to",
                "B",
                "--groups-file",
                path(&missing),
            ],
            "--groups-file: cannot read",
        ),
        (
            vec!["--flow", "A->B", "--to", "B", "--groups-file", path(&empty)],
            "--groups-file: the file names no group",
        ),
        (
            vec!["--flow", "A->B", "--to", "B", "--group-regex", "(?<=a)b"],
            "--group-regex",
        ),
        (vec!["--flow", "A->B", "--to", "B"], "required"),
        (vec!["--flow", "A->B", "--group", "g"], "--to"),
    ] {
        let mut args = base.to_vec();
        args.extend(extra);
        let started = Instant::now();
        let (code, stdout, stderr) = run(&mut mm2(&args));
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "{args:?}");
    }
}

#[test]
fn status_argument_errors_exit_2_before_any_network_io() {
    let dir = TempDir::new("cli", "status-args");
    let config = config_with(&dir, "");
    let missing = dir.0.join("nope.txt");
    let empty = dir.write("empty.txt", "# nobody\n\n");
    let base = ["status", path(&config)];
    for (extra, expect) in [
        (
            vec!["--flow", "B->A"],
            "--flow: `B->A` is not an enabled flow",
        ),
        (vec!["--group", ""], "--group: a group name cannot be empty"),
        (
            vec!["--groups-file", path(&missing)],
            "--groups-file: cannot read",
        ),
        (
            vec!["--groups-file", path(&empty)],
            "--groups-file: the file names no group",
        ),
        (vec!["--group-regex", "(?<=a)b"], "--group-regex"),
        (
            vec!["--flow", "A->B", "--to", "C"],
            "--to: `C` is neither side of flow A->B",
        ),
        (vec!["--to", "A"], "--flow"),
        (
            vec!["--group-regex", "a.*", "--all-groups"],
            "cannot be used with",
        ),
        (vec!["--format", "yaml"], "--format"),
    ] {
        let mut args = base.to_vec();
        args.extend(extra);
        let (code, stdout, stderr) = run(&mut mm2(&args));
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
    }
}
