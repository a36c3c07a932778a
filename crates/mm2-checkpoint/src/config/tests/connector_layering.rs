//! Layering of connector keys.

use super::*;

#[test]
fn top_level_key_applies_to_every_flow() {
    let config = load(&with("B->A.enabled = true\ngroups = app-.*"));
    assert!(config.flows.iter().all(|f| f.filters.groups == "app-.*"));
}

#[test]
fn flow_key_overrides_top_level_key() {
    let config = load(&with(
        "B->A.enabled = true\ngroups = app-.*\nB->A.groups = other-.*",
    ));
    assert_eq!(config.flows[0].filters.groups, "app-.*");
    assert_eq!(config.flows[1].filters.groups, "other-.*");
}

#[test]
fn cluster_prefixed_connector_key_is_ignored_like_mm2() {
    // MM2 turns `A.groups` into `source.cluster.groups`, which nothing reads.
    assert_eq!(only_flow(&with("A.groups = app-.*")).filters.groups, ".*");
}

#[test]
fn origins_name_the_key_and_line_or_default() {
    let f = only_flow(&with("A->B.topics = orders.*"));
    assert_eq!(
        f.origins.get("topics").map(String::as_str),
        Some("A->B.topics (line 5)")
    );
    assert_eq!(f.origins.get("groups").map(String::as_str), Some("default"));
    assert_eq!(
        f.origins
            .get("source.bootstrap.servers")
            .map(String::as_str),
        Some("A.bootstrap.servers (line 2)")
    );
}

#[test]
fn hash_inside_a_value_is_kept() {
    assert_eq!(only_flow(&with("topics = a#b")).filters.topics, "a#b");
}

#[test]
fn all_settings_are_read() {
    let f = only_flow(&with(
        "emit.checkpoints.interval.seconds = 5\nsync.group.offsets.enabled = True\n\
         sync.group.offsets.interval.seconds = 7\nrefresh.groups.enabled = false\n\
         refresh.groups.interval.seconds = 9\nconsumer.poll.timeout.ms = 250\n\
         admin.timeout.ms = 3000\noffset.lag.max = 0\ncheckpoints.topic.replication.factor = 1\n\
         offset-syncs.topic.location = target\ntopics.exclude = x\ngroups.exclude = y",
    ));
    assert_eq!(f.emit_checkpoints_interval, Duration::from_secs(5));
    assert!(f.sync_group_offsets_enabled);
    assert_eq!(f.sync_group_offsets_interval, Duration::from_secs(7));
    assert!(!f.refresh_groups_enabled);
    assert_eq!(f.refresh_groups_interval, Duration::from_secs(9));
    assert_eq!(f.consumer_poll_timeout, Duration::from_millis(250));
    assert_eq!(f.admin_timeout, Duration::from_millis(3000));
    assert_eq!(f.offset_lag_max, 0);
    assert_eq!(f.checkpoints_topic_replication_factor, 1);
    assert_eq!(f.offset_syncs_topic_location, OffsetSyncsLocation::Target);
    assert_eq!(f.filters.topics_exclude, "x");
    assert_eq!(f.filters.groups_exclude, "y");
}

#[test]
fn offset_syncs_location_target_names_the_topic_after_the_source() {
    let f = only_flow(&with("A->B.offset-syncs.topic.location = target"));
    assert_eq!(f.offset_syncs_topic(), "mm2-offset-syncs.A.internal");
    assert_eq!(f.offset_syncs_cluster().alias, "B");
}
