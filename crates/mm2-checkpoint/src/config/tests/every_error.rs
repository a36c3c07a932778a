//! Every error in one check (check.rs).

use super::*;

const SECRET_A: &str = "Sekret-A-4471";
const SECRET_B: &str = "Sekret-B-9013";

#[test]
fn every_independent_error_is_reported_in_one_check_in_file_order() {
    let text = format!(
        "clusters = A, B\n\
         A.bootstrap.servers = a:9092\n\
         B.bootstrap.servers = b:90x2\n\
         A->B.enabled = true\n\
         emit.checkpoints.interval.seconds = soon\n\
         sync.group.offsets.enabled = yes\n\
         offset-syncs.topic.location = Source\n\
         replication.policy.class = com.example.Policy\n\
         A.security.protocol = SASL_SSL\n\
         A.sasl.mechanism = SCRAM-SHA-512\n\
         A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \
             username=\"u\" password=\"{SECRET_A}\";\n\
         A.ssl.truststore.type = BCFKS\n\
         A.ssl.truststore.location = /etc/kafka/ts.jks\n\
         B.security.protocol = SSL\n\
         B.ssl.keystore.type = PKCS12\n\
         B.ssl.keystore.location = /etc/kafka/ks.p12\n\
         B.ssl.endpoint.identification.algorithm = http\n\
         mm2-checkpoint.metrics.latency.granularity = topic\n\
         A.ssl.keystore.password = {SECRET_B}\n"
    );
    let v = check(&text, &tls_env(), Secrets::Read);
    assert_eq!(
        error_keys(&v),
        [
            "B.bootstrap.servers (3)",
            "emit.checkpoints.interval.seconds (5)",
            "sync.group.offsets.enabled (6)",
            "offset-syncs.topic.location (7)",
            "replication.policy.class (8)",
            "A.sasl.jaas.config (11)",
            "A.ssl.truststore.type (12)",
            "B.ssl.endpoint.identification.algorithm (17)",
            "mm2-checkpoint.metrics.latency.granularity (18)",
            "B.ssl.keystore.password",
        ]
    );
    assert!(!v.is_ok());
    assert!(v.config.is_none());
    // The messages are the ones a single error would have.
    assert!(v.errors[1].message().contains("`soon` is not an integer"));
    assert!(
        v.errors[9]
            .message()
            .contains("is required for a PKCS12 key store")
    );
    let all = everything(&v);
    assert!(!all.contains(SECRET_A) && !all.contains(SECRET_B), "{all}");
    // The first error is what `from_properties` fails with.
    let first =
        MirrorConfig::from_properties(&Properties::parse(&text).unwrap(), &tls_env()).unwrap_err();
    assert_eq!(first, v.errors[0]);
}

#[test]
fn a_cluster_shared_by_two_flows_reports_its_errors_once() {
    let v = check(
        "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b\n\
         A->B.enabled = true\nB->A.enabled = true\nadmin.timeout.ms = 0\n",
        &FakeEnvironment::default(),
        Secrets::Read,
    );
    assert_eq!(
        error_keys(&v),
        ["B.bootstrap.servers (3)", "admin.timeout.ms (6)"]
    );
}

#[test]
fn what_depends_on_an_error_is_skipped_and_said_so() {
    // A flow whose `enabled` is no boolean is not checked; the other one is.
    let v = check(
        &with(
            "B->A.enabled = ture\nA.security.protocol = SASL_SSL\nA.sasl.mechanism = PLAN\n\
               A.sasl.jaas.config = x required;",
        ),
        &FakeEnvironment::default(),
        Secrets::Read,
    );
    assert_eq!(error_keys(&v), ["B->A.enabled (5)", "A.sasl.mechanism (7)"]);
    let notes: Vec<String> = v.not_checked.iter().map(ToString::to_string).collect();
    assert_eq!(
        notes,
        [
            "A.sasl.jaas.config (line 8) (its login module must match sasl.mechanism, which has \
             an error or was not read)",
            "flow B->A: its `enabled` setting has an error or was not read, so it is not known \
             whether the flow is enabled",
        ]
    );
    // `clusters` itself: nothing that needs the aliases is checked, the rest is.
    let v = check(
        "clusters = A\nA.bootstrap.servers = x\nmm2-checkpoint.metrics.mm2.names.enabled = 1\n",
        &FakeEnvironment::default(),
        Secrets::Read,
    );
    assert_eq!(
        error_keys(&v),
        [
            "clusters (1)",
            "mm2-checkpoint.metrics.mm2.names.enabled (3)"
        ]
    );
    assert_eq!(v.not_checked[0].key(), Some("clusters"));
    assert!(v.flows.is_empty());
}

#[test]
fn a_value_whose_reference_fails_is_not_also_reported_as_missing_or_invalid() {
    let v = check(
        "clusters = A, B\nA.bootstrap.servers = ${env:NO_SUCH_BOOTSTRAP}\n\
             B.bootstrap.servers = b:9092\nA->B.enabled = true\n\
             config.providers = env\n\
             config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
             A.security.protocol = ${env:NO_SUCH_PROTOCOL}\n\
             A.sasl.mechanism = PLAIN\n",
        &FakeEnvironment::default(),
        Secrets::Read,
    );
    assert_eq!(
        error_keys(&v),
        ["A.bootstrap.servers (2)", "A.security.protocol (7)"]
    );
    assert!(v.errors[0].message().contains("NO_SUCH_BOOTSTRAP"));
}

#[test]
fn clients_that_disagree_are_one_error_not_a_missing_key_as_well() {
    let v = check(
        &with("A.consumer.bootstrap.servers = a2:9092\nA.admin.bootstrap.servers = a3:9092"),
        &FakeEnvironment::default(),
        Secrets::Read,
    );
    assert_eq!(v.errors.len(), 1, "{:?}", v.errors);
    assert!(
        v.errors[0]
            .message()
            .contains("conflicting `bootstrap.servers`")
    );
}

#[test]
fn errors_of_provider_declarations_and_properties_lines_are_all_reported() {
    let v = check(
        &with(
            "config.providers = a, b\nconfig.providers.a.class = x.A\n\
             config.providers.b.class = x.B\nA.sasl.jaas.config = ${a:k}",
        ),
        &FakeEnvironment::default(),
        Secrets::Read,
    );
    assert_eq!(
        error_keys(&v),
        [
            "config.providers.a.class (6)",
            "config.providers.b.class (7)"
        ]
    );
    let v = MirrorConfig::validate_text(
        "a = \\u12\nb = 1\nc = \\uZZZZ\n",
        ConfigFormat::Mm2,
        &FakeEnvironment::default(),
        Secrets::Read,
    );
    let lines: Vec<_> = v.errors.iter().map(ConfigError::line).collect();
    assert_eq!(lines, [Some(1), Some(3)]);
    assert!(v.not_checked[0].why().contains("cannot be read"));
}

#[test]
fn a_clean_config_has_the_same_result_either_way() {
    let v = check(&with(""), &FakeEnvironment::default(), Secrets::Read);
    assert!(v.is_ok() && v.not_checked.is_empty());
    assert_eq!(v.config, Some(load(&with(""))));
    assert_eq!(v.flows.len(), 1);
    assert!(v.flows[0].checkpointed && v.flows[0].settings.is_some());
}

/// A config whose secrets live in files and variables this test environment
/// does not have: stores, a PEM key file and provider values.
fn secrets_elsewhere(extra: &str) -> String {
    format!(
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
         A.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \
             username=\"mm2\" password=\"${{env:MM2_A_PASSWORD}}\";\n\
         A.ssl.truststore.type = PKCS12\n\
         A.ssl.truststore.location = /run/secrets/a/truststore.p12\n\
         A.ssl.truststore.password = ${{dir:/run/secrets/a:truststore.password}}\n\
         B.security.protocol = SSL\n\
         B.ssl.truststore.type = PEM\n\
         B.ssl.truststore.location = /run/secrets/b/ca.crt\n\
         B.ssl.keystore.type = PEM\n\
         B.ssl.keystore.certificate.chain = /run/secrets/b/user.crt\n\
         B.ssl.keystore.key = /run/secrets/b/user.key\n\
         B.ssl.key.password = ${{file:/run/secrets/b.properties:key.password}}\n\
         {extra}\n"
    )
}

#[test]
fn without_secrets_a_config_whose_secrets_are_absent_passes_and_says_what_was_not_checked() {
    let text = secrets_elsewhere("");
    let env = FakeEnvironment::default();
    // With the secrets read, their absence is an error per secret.
    let read = check(&text, &env, Secrets::Read);
    assert_eq!(
        error_keys(&read),
        [
            "A.sasl.jaas.config (11)",
            "A.ssl.truststore.password (14)",
            "B.ssl.key.password (21)"
        ]
    );
    let v = check(&text, &env, Secrets::Skip);
    assert!(v.is_ok(), "{:?}", v.errors);
    assert!(v.config.is_none(), "never runnable without the secrets");
    assert!(v.clone().into_config().is_err());
    let notes: Vec<String> = v.not_checked.iter().map(ToString::to_string).collect();
    for want in [
        "A.sasl.jaas.config (line 11) (its value comes from ${env:MM2_A_PASSWORD}, which \
         --no-secrets does not read)",
        "A.ssl.truststore.password (line 14) (its value comes from \
         ${dir:/run/secrets/a:truststore.password}, which --no-secrets does not read)",
        "B.ssl.key.password (line 21) (its value comes from \
         ${file:/run/secrets/b.properties:key.password}, which --no-secrets does not read)",
        "B.ssl.truststore.location (line 17) (PEM file /run/secrets/b/ca.crt is not opened \
         with --no-secrets)",
        "B.ssl.keystore.key (line 20) (PEM file /run/secrets/b/user.key is not opened with \
         --no-secrets)",
    ] {
        assert!(notes.iter().any(|n| n == want), "{want}\n{notes:#?}");
    }
    // The structure of the JAAS entry was checked around its reference.
    let flow = v.flows[0].settings.as_ref().expect("settings shown");
    let sasl = flow.source.sasl.as_ref().expect("sasl");
    assert_eq!(sasl.username, "mm2");
    let text = render_validation_text(&v);
    assert!(text.contains("structure only (--no-secrets)"), "{text}");
    assert!(text.contains("not checked:\n  - "), "{text}");
}

#[test]
fn without_secrets_store_files_that_are_absent_are_listed_not_opened() {
    let text = format!(
        "{BASE}B.security.protocol = SSL\nB.ssl.truststore.type = PKCS12\n\
         B.ssl.truststore.location = /nowhere/ts.p12\nB.ssl.truststore.password = {SECRET_A}\n\
         B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /nowhere/client.pem\n"
    );
    let v = check(&text, &FakeEnvironment::default(), Secrets::Skip);
    assert!(v.is_ok(), "{:?}", v.errors);
    let notes: Vec<String> = v.not_checked.iter().map(ToString::to_string).collect();
    assert_eq!(
        notes,
        [
            "B.ssl.truststore.location (line 7) (PKCS12 store /nowhere/ts.p12 is not opened \
             with --no-secrets)",
            "B.ssl.keystore.location (line 10) (PEM file /nowhere/client.pem is not opened with \
             --no-secrets)",
        ]
    );
    assert!(!everything(&v).contains(SECRET_A));
    // Inline material is in the file itself: it is still checked.
    let inline = |cert: &str| {
        format!(
            "{BASE}B.security.protocol = SSL\nB.ssl.truststore.type = PEM\n\
             B.ssl.truststore.certificates = {}\n",
            cert.trim_end().replace('\n', "\\n")
        )
    };
    assert!(
        check(
            &inline(TEST_CERT),
            &FakeEnvironment::default(),
            Secrets::Skip
        )
        .is_ok()
    );
    let broken = TEST_CERT.replace("MII", "MIJ");
    let v = check(&inline(&broken), &FakeEnvironment::default(), Secrets::Skip);
    assert_eq!(error_keys(&v), ["B.ssl.truststore.certificates (7)"]);
}

#[test]
fn without_secrets_structural_errors_still_fail() {
    let env = FakeEnvironment::default();
    for (extra, key) in [
        ("B.ssl.keystore.type = BCFKS", "B.ssl.keystore.type (22)"),
        (
            "sync.group.offsets.enabled = yes",
            "sync.group.offsets.enabled (22)",
        ),
        (
            "A.ssl.keystore.location = /run/secrets/a/keystore.jks",
            "A.ssl.keystore.password",
        ),
        (
            "B.ssl.keystore.password = x",
            "B.ssl.keystore.password (22)",
        ),
        ("A->B.enabled = maybe", "A->B.enabled (22)"),
        ("A.sasl.mechanism = GSSAPI", "A.sasl.mechanism (22)"),
        ("A.security.providers = x.Y", "A.security.providers (22)"),
        (
            "A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule \
             required username=\"mm2\" password=\"${env:MM2_A_PASSWORD}\";",
            "A.sasl.jaas.config (22)",
        ),
        (
            "A.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule \
             required username=\"mm2\";",
            "A.sasl.jaas.config (22)",
        ),
        (
            "A.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule \
             required username=\"mm2\" password=\"${vault:pw}\";",
            "A.sasl.jaas.config (22)",
        ),
    ] {
        let text = secrets_elsewhere(extra);
        let v = check(&text, &env, Secrets::Skip);
        assert_eq!(error_keys(&v), [key], "{extra}");
    }
}

#[test]
fn a_jaas_entry_that_is_one_reference_is_listed_as_not_checked() {
    let text = secrets_elsewhere("A.sasl.jaas.config = ${file:/run/secrets/a.properties:jaas}");
    let v = check(&text, &FakeEnvironment::default(), Secrets::Skip);
    assert!(v.is_ok(), "{:?}", v.errors);
    let flow = v.flows[0].settings.as_ref().expect("settings shown");
    assert_eq!(
        flow.source.sasl.as_ref().map(|s| s.username.as_str()),
        Some(security::SASL_NOT_READ)
    );
    assert!(
        v.not_checked
            .iter()
            .any(|n| n.key() == Some("A.sasl.jaas.config") && n.why().contains("${file:")),
        "{:?}",
        v.not_checked
    );
}

#[test]
fn the_json_report_has_every_part_and_no_secret() {
    let text = format!(
        "{BASE}A.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = PLAIN\n\
         A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"u\" password=\"{SECRET_A}\";\ntasks.max = 3\ngrups = x\n"
    );
    let v = check(&text, &FakeEnvironment::default(), Secrets::Read);
    let doc: serde_json::Value =
        serde_json::from_str(&render_validation_json(&v, false)).expect("valid JSON");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["secrets_checked"], true);
    assert_eq!(doc["clusters"], serde_json::json!(["A", "B"]));
    assert_eq!(doc["flows"][0]["name"], "A->B");
    assert_eq!(doc["flows"][0]["checkpointed"], true);
    let source = &doc["flows"][0]["settings"]["source"]["settings"];
    let row = |key: &str| {
        source
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["key"] == key))
            .cloned()
            .unwrap_or_else(|| panic!("no {key} in {source}"))
    };
    assert_eq!(row("sasl password")["value"], "[redacted]");
    assert_eq!(row("sasl.mechanism")["origin"], "A.sasl.mechanism (line 6)");
    assert_eq!(
        doc["no_effect_keys"],
        serde_json::json!(["tasks.max (line 8)"])
    );
    let warnings = doc["warnings"].as_array().expect("warnings");
    assert!(
        warnings
            .iter()
            .any(|w| w["key"] == "grups" && w["line"] == 9)
    );
    assert!(warnings.iter().any(|w| w["key"] == "A.sasl.mechanism"));
    assert_eq!(doc["errors"], serde_json::json!([]));
    // --strict: the same warnings fail the check.
    let strict: serde_json::Value =
        serde_json::from_str(&render_validation_json(&v, true)).expect("valid JSON");
    assert_eq!(strict["ok"], false);
    assert!(!everything(&v).contains(SECRET_A));
}

#[test]
fn material_is_not_read_when_the_tls_settings_have_an_error_and_that_is_said() {
    let v = check(
        &ssl(
            "B.ssl.truststore.location = /etc/kafka/ca.pem\nB.ssl.keystore.type = PEM\n\
              B.ssl.keystore.location = /nowhere/client.pem\nB.ssl.keystore.password = x",
        ),
        &tls_env(),
        Secrets::Read,
    );
    // The PEM key store's password is the error (a JKS trust store, the
    // default type, may come without its password); no file is read, and
    // both keys say why.
    assert_eq!(error_keys(&v), ["B.ssl.keystore.password (9)"]);
    let notes: Vec<_> = v.not_checked.iter().filter_map(NotChecked::key).collect();
    assert_eq!(
        notes,
        ["B.ssl.truststore.location", "B.ssl.keystore.location"]
    );
    assert!(
        v.not_checked[0]
            .why()
            .contains("TLS settings of cluster `B` have an error")
    );
}
