//! Files.

use super::*;

#[test]
fn load_reads_a_real_file() {
    let path = std::env::temp_dir().join(format!(
        "mm2-checkpoint-config-test-{}.properties",
        std::process::id()
    ));
    std::fs::write(&path, BASE).unwrap();
    let config = MirrorConfig::load(&path, &ProcessEnvironment);
    let _ = std::fs::remove_file(&path);
    assert_eq!(names(&config.unwrap()), vec!["A->B"]);
}

#[test]
fn load_of_a_missing_file_is_an_error_naming_it() {
    let e = MirrorConfig::load(
        Path::new("/nonexistent/mm2.properties"),
        &ProcessEnvironment,
    )
    .unwrap_err();
    assert!(e.message().contains("/nonexistent/mm2.properties"), "{e}");
}

#[test]
fn example_config_in_docs_is_valid() {
    let env = tls_env()
        .with_var("MM2_PRIMARY_PASSWORD", "pw-1")
        .with_file("/etc/mm2/secrets.properties", "backup.password = pw-2\n");
    let text = include_str!("../../../../../docs/examples/mm2.properties");
    let config = load_with(text, &env).unwrap_or_else(|e| panic!("example rejected: {e}"));
    assert_eq!(names(&config), vec!["primary->backup", "backup->primary"]);
    let f = &config.flows[0];
    assert_eq!(f.source.sasl.clone().unwrap().password.expose(), "pw-1");
    assert_eq!(f.target.sasl.clone().unwrap().password.expose(), "pw-2");
    assert!(f.sync_group_offsets_enabled);
}
#[test]
fn flow_level_connection_key_is_ignored_with_a_warning() {
    let config = load(&with("A->B.security.protocol = SSL"));
    assert_eq!(
        config.flows[0].source.security_protocol,
        SecurityProtocol::Plaintext
    );
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.message().contains("`A->B.security.protocol` is ignored"))
    );
}

#[test]
fn top_level_client_prefixed_key_is_ignored_with_a_warning() {
    let config = load(&with("consumer.security.protocol = SSL"));
    assert_eq!(
        config.flows[0].source.security_protocol,
        SecurityProtocol::Plaintext
    );
    assert!(config.warnings.iter().any(|w| {
        w.message()
            .contains("`consumer.security.protocol` is ignored")
    }));
}

/// `validate` lists what MM2 reads but checkpointing does not use: client and
/// worker settings, other connectors' keys, the keys of disabled flows.
#[test]
fn keys_read_by_mm2_but_of_no_effect_are_listed_with_their_lines() {
    let config = load(&with(
        "tasks.max = 4\nB.producer.acks = all\nB->A.enabled = false\nB->A.topics = x\n\
         emit.checkpoints.interval.seconds = 5\nreplication.factor = 1\nA.consumer.max.poll.records = 9",
    ));
    assert_eq!(
        config.no_effect_keys,
        [
            "A.consumer.max.poll.records (line 11)",
            "B->A.topics (line 8)",
            "B.producer.acks (line 6)",
            "replication.factor (line 10)",
            "tasks.max (line 5)",
        ]
    );
    let text = render_effective_settings(&config);
    assert!(
        text.contains(
            "\nread by MirrorMaker 2, no effect on checkpointing:\n  - A.consumer.max.poll.records (line 11)\n"
        ),
        "{text}"
    );
}

/// `metric.names.formats`, a connector key of MM2 4.3 (KIP-1280, after the
/// 4.1.1 key list), is read by MM2 and of no effect here, not unknown.
#[test]
fn mm2_4_3s_metric_names_formats_is_known_and_of_no_effect() {
    let config = load(&with(
        "metric.names.formats = legacy,new\nA->B.metric.names.formats = new",
    ));
    assert!(config.unknown_keys.is_empty(), "{:?}", config.unknown_keys);
    assert_eq!(
        config.no_effect_keys,
        [
            "A->B.metric.names.formats (line 6)",
            "metric.names.formats (line 5)",
        ]
    );
}

/// Every key the checkpointing reads is left off that list, the connection
/// keys and the config providers' own keys included.
#[test]
fn keys_that_are_used_are_not_listed_as_of_no_effect() {
    let config = load(&with(
        "A->B.emit.checkpoints.interval.seconds = 5\nsecurity.protocol = PLAINTEXT\n\
         A.security.protocol = PLAINTEXT\nemit.heartbeats.enabled = true\n\
         source.cluster.alias = A\nreplication.policy.separator = .",
    ));
    assert_eq!(config.no_effect_keys, Vec::<String>::new());
}
