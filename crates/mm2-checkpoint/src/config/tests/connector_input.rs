//! Connector-style input (connector.rs).

use super::*;

fn connector_config(text: &str) -> Result<MirrorConfig, ConfigError> {
    MirrorConfig::from_text(text, ConfigFormat::Auto, &FakeEnvironment::default())
}

#[test]
fn a_connector_config_gives_its_one_flow_with_its_aliases_and_clients() {
    let config = connector_config(
        r#"{"name": "cp", "config": {
            "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
            "source.cluster.alias": "us", "target.cluster.alias": "eu",
            "source.cluster.bootstrap.servers": "us1:9092",
            "target.cluster.bootstrap.servers": "eu1:9092",
            "source.admin.request.timeout.ms": "5000",
            "emit.checkpoints.interval.seconds": 30, "groups": "billing.*"}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.ownership, Ownership::Connector);
    let flow = &config.flows[0];
    assert_eq!(flow.name(), CONNECTOR_FLOW);
    assert_eq!(flow.checkpoints_topic(), "us.checkpoints.internal");
    assert_eq!(flow.offset_syncs_topic(), "mm2-offset-syncs.eu.internal");
    assert_eq!(flow.emit_checkpoints_interval, Duration::from_secs(30));
    assert_eq!(flow.filters.groups, "billing.*");
    assert_eq!(
        flow.origins
            .get("source.bootstrap.servers")
            .map(String::as_str),
        Some("config[\"source.cluster.bootstrap.servers\"]")
    );
}

#[test]
fn connector_errors_and_warnings_name_the_keys_as_written() {
    let e = connector_config(
        "connector.class = MirrorCheckpointConnector\n\
         source.cluster.bootstrap.servers = a:9092\n\
         target.cluster.bootstrap.servers = b:9092\n\
         sync.group.offsets.enabled = yes\n",
    )
    .err()
    .unwrap_or_else(|| panic!("accepted"));
    assert_eq!(e.key(), Some("sync.group.offsets.enabled"));
    assert_eq!(e.line(), Some(4));
    let config = connector_config(
        "connector.class = MirrorCheckpointConnector\n\
         source.cluster.bootstrap.servers = a:9092\n\
         target.cluster.bootstrap.servers = b:9092\n\
         grups = x\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.unknown_keys.len(), 1);
    assert_eq!(config.unknown_keys[0].key, "grups");
    assert_eq!(config.unknown_keys[0].suggestion.as_deref(), Some("groups"));
}

#[test]
fn a_connector_config_needs_both_clusters_bootstrap_servers() {
    let e = connector_config(
        "connector.class = MirrorCheckpointConnector\nsource.cluster.bootstrap.servers = a:9092\n",
    )
    .err()
    .unwrap_or_else(|| panic!("accepted"));
    assert_eq!(e.key(), Some("target.cluster.bootstrap.servers"), "{e}");
}

#[test]
fn example_connector_config_in_docs_is_valid() {
    let env = tls_env()
        .with_var("MM2_PRIMARY_PASSWORD", "pw-1")
        .with_file("/etc/mm2/secrets.properties", "backup.password = pw-2\n");
    let text = include_str!("../../../../../docs/examples/checkpoint-connector.json");
    let config = MirrorConfig::from_text(text, ConfigFormat::Auto, &env)
        .unwrap_or_else(|e| panic!("example rejected: {e}"));
    assert_eq!(config.ownership, Ownership::Connector);
    let f = &config.flows[0];
    assert_eq!(f.checkpoints_topic(), "primary.checkpoints.internal");
    assert_eq!(f.source.sasl.clone().unwrap().password.expose(), "pw-1");
    assert_eq!(f.target.sasl.clone().unwrap().password.expose(), "pw-2");
    assert!(f.sync_group_offsets_enabled);
    assert!(config.unknown_keys.is_empty(), "{:?}", config.unknown_keys);
}
