//! Validation of checkpoint keys.

use super::*;

#[test]
fn emit_checkpoints_disabled_hands_the_flow_over() {
    let config = load(&with("A->B.emit.checkpoints.enabled = false"));
    assert_eq!(names(&config), vec!["A->B"]);
    assert_eq!(
        config.ownership,
        Ownership::Shared {
            handed_over: vec![(
                "A->B".to_string(),
                "A->B.emit.checkpoints.enabled (line 5)".to_string()
            )],
            left_to_mm2: vec![],
        }
    );
    assert!(config.ownership.reason("A->B").contains("line 5"));
}

#[test]
fn emit_checkpoints_disabled_in_any_case_hands_the_flow_over() {
    let config = load(&with("emit.checkpoints.enabled = FALSE"));
    assert_eq!(names(&config), vec!["A->B"]);
    assert!(config.ownership.checkpoints("A->B"));
}

#[test]
fn a_shared_file_leaves_the_flows_mm2_still_checkpoints_to_mm2() {
    let config = load(&with(
        "B->A.enabled = true
A->B.emit.checkpoints.enabled = false
         B->A.replication.policy.class = com.example.NotOurs",
    ));
    assert_eq!(names(&config), vec!["A->B"]);
    assert_eq!(config.ownership.left_to_mm2(), ["B->A".to_string()]);
    assert!(!config.ownership.checkpoints("B->A"));
    assert!(
        config
            .ownership
            .reason("B->A")
            .contains("left to MirrorMaker 2")
    );
    // MM2's flow is not ours to validate: its keys only have no effect here.
    assert!(
        config
            .no_effect_keys
            .iter()
            .any(|k| k.starts_with("B->A.replication.policy.class")),
        "{:?}",
        config.no_effect_keys
    );
    let text = render_effective_settings(&config);
    assert!(text.contains("checkpointed flows = A->B\n"), "{text}");
    assert!(text.contains("left to MirrorMaker 2 = B->A"), "{text}");
}

#[test]
fn a_file_without_hand_over_is_ours_for_every_enabled_flow() {
    let config = load(&with(
        "B->A.enabled = true
A->B.emit.checkpoints.enabled = true",
    ));
    assert_eq!(names(&config), vec!["A->B", "B->A"]);
    assert_eq!(config.ownership, Ownership::OwnFile);
    let text = render_effective_settings(&config);
    assert!(text.contains("file is mm2-checkpoint's own"), "{text}");
}

#[test]
fn emit_checkpoints_that_is_not_a_boolean_is_an_error() {
    assert_rejected(
        &with("A->B.emit.checkpoints.enabled = off"),
        "A->B.emit.checkpoints.enabled",
        &["`off`"],
    );
}

#[test]
fn emit_offset_syncs_disabled_is_an_error() {
    assert_rejected(
        &with("emit.offset-syncs.enabled = false"),
        "emit.offset-syncs.enabled",
        &[],
    );
}

#[test]
fn checkpoint_keys_of_disabled_flows_are_not_validated() {
    assert_eq!(
        names(&load(&with("B->A.emit.checkpoints.enabled = false"))),
        vec!["A->B"]
    );
}

#[test]
fn invalid_boolean_is_an_error_naming_key_and_value() {
    assert_rejected(
        &with("sync.group.offsets.enabled = on"),
        "sync.group.offsets.enabled",
        &["`on`"],
    );
}

#[test]
fn non_integer_interval_is_an_error() {
    assert_rejected(
        &with("emit.checkpoints.interval.seconds = 1m"),
        "emit.checkpoints.interval.seconds",
        &[],
    );
}

#[test]
fn zero_interval_is_an_error() {
    assert_rejected(
        &with("sync.group.offsets.interval.seconds = 0"),
        "sync.group.offsets.interval.seconds",
        &[],
    );
}

#[test]
fn negative_timeout_is_an_error() {
    assert_rejected(&with("admin.timeout.ms = -1"), "admin.timeout.ms", &[]);
}

#[test]
fn offset_translation_defaults_to_mm2_with_the_measured_budget() {
    let f = only_flow(BASE);
    assert_eq!(f.offset_translation, OffsetTranslation::Mm2);
    assert_eq!(f.translation_max_syncs, DEFAULT_TRANSLATION_MAX_SYNCS);
    assert_eq!(DEFAULT_TRANSLATION_MAX_SYNCS, 1_000);
    assert_eq!(f.sync_precision(), Precision::Mm2);
    assert_eq!(f.origins[OFFSET_TRANSLATION_KEY], "default");
}

#[test]
fn offset_translation_precise_is_read_per_flow_with_its_budget() {
    let config = load(&with(
        "B->A.enabled = true
         mm2-checkpoint.offset.translation.max.syncs.per.partition = 500
         A->B.mm2-checkpoint.offset.translation = precise",
    ));
    let (ab, ba) = (&config.flows[0], &config.flows[1]);
    assert_eq!(ab.sync_precision(), Precision::Precise { max_syncs: 500 });
    assert_eq!(ba.offset_translation, OffsetTranslation::Mm2);
    assert_eq!(ba.translation_max_syncs, 500);
    // Precise mode keeps its history in a topic of its own on the target.
    assert_eq!(
        ab.sync_history_topic().as_deref(),
        Some("mm2-checkpoint.A.sync-history.internal")
    );
    assert_eq!(ba.sync_history_topic(), None);
    let text = render_effective_settings(&config);
    assert!(
        text.contains("sync-history topic = mm2-checkpoint.A.sync-history.internal on B"),
        "{text}"
    );
    assert!(
        text.contains("sync-history topic = (unused: mm2-checkpoint.offset.translation = mm2)"),
        "{text}"
    );
    assert!(
        text.contains(
            "  mm2-checkpoint.offset.translation = precise    # A->B.mm2-checkpoint.offset.translation (line 7)\n\
             \x20 mm2-checkpoint.offset.translation.max.syncs.per.partition = 500    # \
             mm2-checkpoint.offset.translation.max.syncs.per.partition (line 6)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "  mm2-checkpoint.offset.translation.max.syncs.per.partition = 500 (cutover and status only: translation is mm2)"
        ),
        "{text}"
    );
}

#[test]
fn an_unknown_offset_translation_is_an_error_naming_the_key_and_the_choices() {
    assert_rejected(
        &with("A->B.mm2-checkpoint.offset.translation = exact"),
        "A->B.mm2-checkpoint.offset.translation",
        &["`exact`", "`mm2`", "`precise`"],
    );
}

#[test]
fn content_search_is_off_by_default_and_read_with_precise_translation() {
    assert!(!only_flow(BASE).content_search);
    let config = load(&with(
        "mm2-checkpoint.offset.translation = precise
         mm2-checkpoint.offset.translation.content.search = true",
    ));
    assert!(config.flows[0].content_search);
    let text = render_effective_settings(&config);
    assert!(
        text.contains("  mm2-checkpoint.offset.translation.content.search = true    # "),
        "{text}"
    );
    let text = render_effective_settings(&load(BASE));
    assert!(
        text.contains("  mm2-checkpoint.offset.translation.content.search = false    # default"),
        "{text}"
    );
}

#[test]
fn content_search_without_precise_translation_is_an_error_naming_the_key() {
    assert_rejected(
        &with("A->B.mm2-checkpoint.offset.translation.content.search = true"),
        "A->B.mm2-checkpoint.offset.translation.content.search",
        &["needs `mm2-checkpoint.offset.translation = precise`"],
    );
    assert_rejected(
        &with(
            "mm2-checkpoint.offset.translation = precise
             mm2-checkpoint.offset.translation.content.search = maybe",
        ),
        "mm2-checkpoint.offset.translation.content.search",
        &["maybe"],
    );
}

#[test]
fn a_translation_budget_below_one_or_too_large_is_an_error_naming_the_key() {
    for (value, mentions) in [
        ("0", "at least 1"),
        ("-5", "at least 1"),
        ("lots", "`lots` is not an integer"),
        ("100000001", "at most 100000000"),
    ] {
        assert_rejected(
            &with(&format!(
                "mm2-checkpoint.offset.translation.max.syncs.per.partition = {value}"
            )),
            "mm2-checkpoint.offset.translation.max.syncs.per.partition",
            &[mentions],
        );
    }
}

#[test]
fn integers_allow_surrounding_whitespace_like_kafka() {
    assert_eq!(
        only_flow(&with("refresh.groups.interval.seconds =  30  ")).refresh_groups_interval,
        Duration::from_secs(30)
    );
}

#[test]
fn replication_factor_minus_one_means_broker_default() {
    assert_eq!(
        only_flow(&with("checkpoints.topic.replication.factor = -1"))
            .checkpoints_topic_replication_factor,
        -1
    );
}

#[test]
fn replication_factor_zero_is_an_error() {
    assert_rejected(
        &with("checkpoints.topic.replication.factor = 0"),
        "checkpoints.topic.replication.factor",
        &[],
    );
}

#[test]
fn offset_syncs_location_is_case_sensitive() {
    assert_rejected(
        &with("offset-syncs.topic.location = Target"),
        "offset-syncs.topic.location",
        &[],
    );
}

#[test]
fn identity_policy_is_accepted_by_simple_and_full_name() {
    for name in [
        "IdentityReplicationPolicy",
        "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
    ] {
        let f = only_flow(&with(&format!("replication.policy.class = {name}")));
        assert_eq!(
            f.replication_policy.class_name(),
            "IdentityReplicationPolicy"
        );
    }
}

#[test]
fn default_policy_is_accepted_by_full_name() {
    let f = only_flow(&with(
        "replication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    ));
    assert_eq!(
        f.replication_policy.class_name(),
        "DefaultReplicationPolicy"
    );
}

#[test]
fn custom_replication_policy_is_an_error_naming_the_supported_ones() {
    assert_rejected(
        &with("replication.policy.class = com.example.MyPolicy"),
        "replication.policy.class",
        &["IdentityReplicationPolicy", "com.example.MyPolicy"],
    );
}

#[test]
fn custom_separator_is_used_for_internal_topics_by_default() {
    let f = only_flow(&with("replication.policy.separator = __"));
    assert_eq!(f.replication_policy.separator(), "__");
    assert_eq!(f.replication_policy.internal_separator(), "__");
    assert_eq!(f.offset_syncs_topic(), "mm2-offset-syncs__B__internal");
    assert_eq!(f.checkpoints_topic(), "A__checkpoints__internal");
}

#[test]
fn internal_separator_can_stay_a_dot() {
    let f = only_flow(&with(
        "replication.policy.separator = __\nreplication.policy.internal.topic.separator.enabled = false",
    ));
    assert_eq!(f.replication_policy.separator(), "__");
    assert_eq!(f.replication_policy.internal_separator(), ".");
    assert_eq!(f.checkpoints_topic(), "A.checkpoints.internal");
}

#[test]
fn internal_separator_flag_alone_changes_nothing() {
    let f = only_flow(&with(
        "replication.policy.internal.topic.separator.enabled = false",
    ));
    assert_eq!(f.replication_policy.internal_separator(), ".");
}

#[test]
fn separator_can_be_set_per_flow() {
    let f = only_flow(&with(
        "replication.policy.separator = _\nA->B.replication.policy.separator = -",
    ));
    assert_eq!(f.replication_policy.separator(), "-");
}

/// MM2 accepts an empty separator; with an empty `source.cluster.alias` (a
/// public Confluent Cloud template sets both) remote topics keep their names.
#[test]
fn empty_separator_and_source_alias_keep_topic_names_as_in_mm2() {
    let f = only_flow(&with(
        "source.cluster.alias =\nreplication.policy.separator =",
    ));
    assert_eq!(f.replication_policy.separator(), "");
    assert_eq!(f.source_alias, "");
    assert_eq!(
        f.replication_policy
            .format_remote_topic(&f.flow().source, "orders"),
        "orders"
    );
    assert_eq!(f.checkpoints_topic(), "checkpointsinternal");
    assert_eq!(f.offset_syncs_topic(), "mm2-offset-syncsBinternal");
    assert_eq!(f.name(), "A->B");
}

/// A top-level `source.cluster.alias` renames the source of every flow (MM2
/// adds the flow's own alias only if the key is absent); a flow-level one wins.
#[test]
fn cluster_alias_overrides_name_the_topics_as_in_mm2() {
    let f = only_flow(&with("source.cluster.alias = X"));
    assert_eq!(f.source_alias, "X");
    assert_eq!(f.target_alias, "B");
    assert_eq!(f.checkpoints_topic(), "X.checkpoints.internal");
    assert_eq!(f.offset_syncs_topic(), "mm2-offset-syncs.B.internal");
    assert_eq!(f.offset_syncs_cluster().alias, "A");
    assert_eq!(
        f.origins["source.cluster.alias"],
        "source.cluster.alias (line 5)"
    );

    let f = only_flow(&with(
        "source.cluster.alias = X\nA->B.source.cluster.alias = Z\n\
         A->B.target.cluster.alias = Y\noffset-syncs.topic.location = target",
    ));
    assert_eq!(
        (f.source_alias.as_str(), f.target_alias.as_str()),
        ("Z", "Y")
    );
    assert_eq!(f.checkpoints_topic(), "Z.checkpoints.internal");
    assert_eq!(f.offset_syncs_topic(), "mm2-offset-syncs.Z.internal");
    assert_eq!(f.offset_syncs_cluster().alias, "B");
    assert_eq!(f.flow().to_string(), "Z->Y");
    assert_eq!(f.name(), "A->B");

    let f = only_flow(&with(
        "A->B.target.cluster.alias = Y\nreplication.policy.class = IdentityReplicationPolicy\n\
         A->B.source.cluster.alias = Z",
    ));
    assert_eq!(f.replication_policy.topic_source("orders"), Some("Z"));
    assert_eq!(f.offset_syncs_topic(), "mm2-offset-syncs.Y.internal");
}

#[test]
fn default_filter_classes_are_accepted() {
    only_flow(&with(
        "topic.filter.class = org.apache.kafka.connect.mirror.DefaultTopicFilter\n\
         group.filter.class = org.apache.kafka.connect.mirror.DefaultGroupFilter",
    ));
}

#[test]
fn custom_topic_filter_class_is_an_error() {
    assert_rejected(
        &with("topic.filter.class = com.example.F"),
        "topic.filter.class",
        &[],
    );
}

#[test]
fn custom_group_filter_class_is_an_error() {
    assert_rejected(
        &with("A->B.group.filter.class = com.example.G"),
        "A->B.group.filter.class",
        &[],
    );
}

#[test]
fn custom_forwarding_admin_is_an_error() {
    assert_rejected(
        &with("forwarding.admin.class = com.example.Admin"),
        "forwarding.admin.class",
        &[],
    );
}

#[test]
fn default_forwarding_admin_is_accepted() {
    only_flow(&with(
        "forwarding.admin.class = org.apache.kafka.clients.admin.ForwardingAdmin",
    ));
}

/// Kafka 4.0 removed `topics.blacklist`/`groups.blacklist` and MM2 4.x ignores
/// them; so do we, with a warning naming the key to use.
#[test]
fn removed_blacklist_keys_are_ignored_with_a_warning() {
    let config = load(&with(
        "topics.blacklist = old-.*\nA->B.groups.blacklist = oldg-.*",
    ));
    assert_eq!(
        config.flows[0].filters.topics_exclude,
        DEFAULT_TOPICS_EXCLUDE
    );
    assert_eq!(
        config.flows[0].filters.groups_exclude,
        DEFAULT_GROUPS_EXCLUDE
    );
    for (old, line, new) in [
        ("topics.blacklist", 5, "topics.exclude"),
        ("A->B.groups.blacklist", 6, "A->B.groups.exclude"),
    ] {
        let want = format!(
            "`{old}` (line {line}) is read by neither MirrorMaker 2 nor mm2-checkpoint and has \
             no effect; removed in Kafka 4.0; MirrorMaker 2 4.x ignores it too: use `{new}`"
        );
        assert!(
            config.warnings.iter().any(|w| w.message() == want),
            "{want}\n{:?}",
            config.warnings
        );
    }
}
