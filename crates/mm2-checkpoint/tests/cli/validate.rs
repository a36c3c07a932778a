//! `validate`: the effective settings of a good file with its secrets masked,
//! warnings, keys nothing reads, every error of a bad file in one run,
//! `--format json`, `--strict` and `--no-secrets`.

use super::*;

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
            "no-secrets-bcfks",
            "B.ssl.keystore.type = BCFKS",
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

/// Three clusters and a flow into each of two of them.
fn three_cluster_config(dir: &TempDir) -> PathBuf {
    dir.write(
        "mm2.properties",
        "clusters = west, east, edge\n\
         west.bootstrap.servers = 127.0.0.1:1\n\
         east.bootstrap.servers = 127.0.0.1:1\n\
         edge.bootstrap.servers = 127.0.0.1:1\n\
         west->east.enabled = true\n\
         east->west.enabled = true\n\
         edge->east.enabled = true\n",
    )
}

#[test]
fn clusters_keeps_the_flows_into_the_listed_targets() {
    let dir = TempDir::new("cli", "clusters-validate");
    let config = three_cluster_config(&dir);
    let (code, stdout, stderr) = run(&mut mm2(&["validate", path(&config)]));
    assert_eq!(code, Some(0), "stderr: {stderr}");
    for flow in ["west->east", "east->west", "edge->east"] {
        assert!(stdout.contains(&format!("[flow {flow}]")), "{stdout}");
    }
    let (code, stdout, stderr) = run(&mut mm2(&[
        "validate",
        "--clusters",
        "east",
        "--config",
        path(&config),
    ]));
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(stdout.contains("[flow west->east]"), "{stdout}");
    assert!(stdout.contains("[flow edge->east]"), "{stdout}");
    assert!(!stdout.contains("[flow east->west]"), "{stdout}");
    let (code, stdout, _) = run(&mut mm2(&[
        "validate",
        path(&config),
        "--clusters",
        "east",
        "west",
    ]));
    assert_eq!(code, Some(0));
    assert!(stdout.contains("[flow east->west]"), "{stdout}");
    let (code, stdout, _) = run(&mut mm2(&[
        "validate",
        "--clusters",
        "west,east",
        "--config",
        path(&config),
    ]));
    assert_eq!(code, Some(0));
    assert!(stdout.contains("[flow east->west]"), "{stdout}");
}

#[test]
fn clusters_naming_an_unknown_alias_exits_2_before_any_network_io() {
    let dir = TempDir::new("cli", "clusters-unknown");
    let config = three_cluster_config(&dir);
    for command in ["validate", "run"] {
        let (code, _, stderr) = run(&mut mm2(&[command, path(&config), "--clusters", "north"]));
        assert_eq!(code, Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains(
                "--clusters: no cluster `north` in `clusters` (it lists west, east, edge)"
            ),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn run_with_clusters_that_no_flow_targets_has_nothing_to_do() {
    let dir = TempDir::new("cli", "clusters-none");
    let config = three_cluster_config(&dir);
    // No flow goes into `edge`: nothing is started and nothing is dialled
    // (the brokers' address refuses every connection).
    let (code, _, stderr) = run(&mut mm2(&[
        "run",
        "--once",
        path(&config),
        "--clusters",
        "edge",
    ]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("no enabled flow"), "{stderr}");
}
