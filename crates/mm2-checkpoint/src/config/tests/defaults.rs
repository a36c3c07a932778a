//! Defaults.

use super::*;

#[test]
fn emit_checkpoints_interval_defaults_to_60_seconds() {
    assert_eq!(
        only_flow(BASE).emit_checkpoints_interval,
        Duration::from_secs(60)
    );
}

#[test]
fn sync_group_offsets_is_off_by_default() {
    assert!(!only_flow(BASE).sync_group_offsets_enabled);
}

#[test]
fn sync_group_offsets_interval_defaults_to_60_seconds() {
    assert_eq!(
        only_flow(BASE).sync_group_offsets_interval,
        Duration::from_secs(60)
    );
}

#[test]
fn refresh_groups_is_on_by_default() {
    assert!(only_flow(BASE).refresh_groups_enabled);
}

#[test]
fn refresh_groups_interval_defaults_to_600_seconds() {
    assert_eq!(
        only_flow(BASE).refresh_groups_interval,
        Duration::from_secs(600)
    );
}

#[test]
fn filters_default_to_mm2_lists() {
    let f = only_flow(BASE).filters;
    assert_eq!(f.topics, ".*");
    assert_eq!(f.topics_exclude, "mm2.*\\.internal, .*\\.replica, __.*");
    assert_eq!(f.groups, ".*");
    assert_eq!(f.groups_exclude, "console-consumer-.*, connect-.*, __.*");
}

#[test]
fn replication_policy_defaults_to_default_policy_with_dots() {
    let p = only_flow(BASE).replication_policy;
    assert_eq!(p.class_name(), "DefaultReplicationPolicy");
    assert_eq!(p.separator(), ".");
    assert_eq!(p.internal_separator(), ".");
}

#[test]
fn offset_syncs_topic_lives_on_the_source_by_default() {
    let f = only_flow(BASE);
    assert_eq!(f.offset_syncs_topic_location, OffsetSyncsLocation::Source);
    assert_eq!(f.offset_syncs_topic(), "mm2-offset-syncs.B.internal");
    assert_eq!(f.offset_syncs_cluster().alias, "A");
    assert_eq!(f.checkpoints_topic(), "A.checkpoints.internal");
}

#[test]
fn checkpoints_topic_replication_factor_defaults_to_3() {
    assert_eq!(only_flow(BASE).checkpoints_topic_replication_factor, 3);
}

#[test]
fn consumer_poll_timeout_defaults_to_1000_ms() {
    assert_eq!(
        only_flow(BASE).consumer_poll_timeout,
        Duration::from_millis(1000)
    );
}

#[test]
fn admin_timeout_defaults_to_60000_ms() {
    assert_eq!(only_flow(BASE).admin_timeout, Duration::from_millis(60_000));
}

#[test]
fn offset_lag_max_defaults_to_100() {
    assert_eq!(only_flow(BASE).offset_lag_max, 100);
}

#[test]
fn security_protocol_defaults_to_plaintext() {
    let f = only_flow(BASE);
    assert_eq!(f.source.security_protocol, SecurityProtocol::Plaintext);
    assert!(f.source.tls.is_none() && f.source.sasl.is_none());
}
