//! Behaviour tests for turning `mm2.properties` into flows.

use super::providers::tests::FakeEnvironment;
use super::*;
use crate::config::security::TokenEndpoint;
use crate::core::filter::{DEFAULT_GROUPS_EXCLUDE, DEFAULT_TOPICS_EXCLUDE};
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;

/// Two clusters, flow A->B enabled.
const BASE: &str = "clusters = A, B\n\
    A.bootstrap.servers = a1:9092, a2:9092\n\
    B.bootstrap.servers = b1:9092\n\
    A->B.enabled = true\n";

/// A throwaway self-signed test certificate and its unencrypted key.
const TEST_CERT: &str = include_str!("../../tests/data/test_cert.pem");
const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgoF5FsyDV4ZuUiaQp
+D9hA5Jnu593wKVDsCMCknSaEJWhRANCAAT/fPD99SZx/67BurtuD8MkAgIGxn+4
vsQTsKdWi0RBn8OBo/t/nT+rIwB2MgXLVJX5xz0/0kECMcn26G/J3J/D
-----END PRIVATE KEY-----
";

const SCRAM_JAAS: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required \
    username=\"alice\" password=\"alice-secret\";";

fn load_with(text: &str, env: &FakeEnvironment) -> Result<MirrorConfig, ConfigError> {
    MirrorConfig::from_properties(&Properties::parse(text)?, env)
}

fn load(text: &str) -> MirrorConfig {
    load_with(text, &FakeEnvironment::default()).unwrap_or_else(|e| panic!("config rejected: {e}"))
}

fn error(text: &str) -> ConfigError {
    match load_with(text, &FakeEnvironment::default()) {
        Ok(_) => panic!("config accepted but should be rejected"),
        Err(e) => e,
    }
}

fn error_with(text: &str, env: &FakeEnvironment) -> ConfigError {
    match load_with(text, env) {
        Ok(_) => panic!("config accepted but should be rejected"),
        Err(e) => e,
    }
}

/// Asserts `text` is rejected with an error naming `key` whose message
/// mentions each of `mentions`.
#[track_caller]
fn assert_rejected(text: &str, key: &str, mentions: &[&str]) {
    assert_rejected_in(text, &FakeEnvironment::default(), key, mentions);
}

/// [`assert_rejected`] with the test certificate files of [`tls_env`].
#[track_caller]
fn assert_rejected_with_tls(text: &str, key: &str, mentions: &[&str]) {
    assert_rejected_in(text, &tls_env(), key, mentions);
}

#[track_caller]
fn assert_rejected_in(text: &str, env: &FakeEnvironment, key: &str, mentions: &[&str]) {
    let e = error_with(text, env);
    assert_eq!(e.key(), Some(key), "{e}");
    for m in mentions {
        assert!(
            e.message().contains(m),
            "the error does not mention {m:?}: {e}"
        );
    }
}

/// The only flow of a config that enables exactly one.
fn only_flow(text: &str) -> FlowConfig {
    let mut config = load(text);
    assert_eq!(config.flows.len(), 1, "expected one flow");
    config.flows.remove(0)
}

fn with(extra: &str) -> String {
    format!("{BASE}{extra}\n")
}

fn names(config: &MirrorConfig) -> Vec<String> {
    config.flows.iter().map(FlowConfig::name).collect()
}

fn tls_env() -> FakeEnvironment {
    FakeEnvironment::default()
        .with_file("/etc/kafka/ca.pem", TEST_CERT)
        .with_file("/etc/kafka/client.pem", &format!("{TEST_KEY}{TEST_CERT}"))
}

// ---- which flows run ----

#[test]
fn only_flows_with_enabled_true_run() {
    let config = load(BASE);
    assert_eq!(config.clusters, vec!["A", "B"]);
    assert_eq!(names(&config), vec!["A->B"]);
}

#[test]
fn flow_enabled_is_case_insensitive() {
    let text = BASE.replace("A->B.enabled = true", "A->B.enabled = TRUE");
    assert_eq!(names(&load(&text)), vec!["A->B"]);
}

#[test]
fn both_directions_can_be_enabled() {
    let config = load(&with("B->A.enabled = true"));
    assert_eq!(names(&config), vec!["A->B", "B->A"]);
    assert_eq!(config.flows[1].source.alias, "B");
    assert_eq!(config.flows[1].target.alias, "A");
}

#[test]
fn three_clusters_yield_flows_in_clusters_order() {
    let config = load(
        "clusters = C, A, B\n\
         A.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nC.bootstrap.servers = c:1\n\
         A->B.enabled = true\nC->A.enabled = true\nA->C.enabled = true\n",
    );
    assert_eq!(names(&config), vec!["C->A", "A->C", "A->B"]);
}

#[test]
fn disabled_flow_stays_off() {
    assert_eq!(names(&load(&with("B->A.enabled = false"))), vec!["A->B"]);
}

#[test]
fn top_level_enabled_enables_every_pair_with_a_warning() {
    let config = load(
        "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nenabled = true\n",
    );
    assert_eq!(names(&config), vec!["A->B", "B->A"]);
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.message().contains("top-level `enabled=true`"))
    );
}

#[test]
fn flow_enabled_false_overrides_top_level_enabled() {
    let config = load(
        "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n\
         enabled = true\nB->A.enabled = false\n",
    );
    assert_eq!(names(&config), vec!["A->B"]);
}

#[test]
fn top_level_enabled_needs_a_heartbeat_herder_like_mm2() {
    // With heartbeats off, MM2 creates no herder for B->A, so top-level
    // `enabled=true` does not start it; A->B has its own `enabled=true`.
    let config = load(&with("enabled = true\nemit.heartbeats.enabled = false"));
    assert_eq!(names(&config), vec!["A->B"]);
}

#[test]
fn non_boolean_flow_enabled_is_an_error_naming_key_and_value() {
    let e = error(&BASE.replace("A->B.enabled = true", "A->B.enabled = yes"));
    assert_eq!(e.key(), Some("A->B.enabled"));
    assert_eq!(e.line(), Some(4));
    assert!(e.message().contains("yes"), "{e}");
}

#[test]
fn missing_clusters_is_an_error() {
    assert_rejected(
        "A.bootstrap.servers = a:1\nA->B.enabled = true\n",
        "clusters",
        &[],
    );
}

#[test]
fn single_cluster_is_an_error() {
    assert_rejected("clusters = A\nA.bootstrap.servers = a:1\n", "clusters", &[]);
}

#[test]
fn empty_alias_is_an_error() {
    assert_rejected(
        &BASE.replace("clusters = A, B", "clusters = A,,B"),
        "clusters",
        &[],
    );
}

#[test]
fn duplicate_aliases_are_listed_once() {
    let config = load(&BASE.replace("clusters = A, B", "clusters = A, B, A"));
    assert_eq!(config.clusters, vec!["A", "B"]);
}

#[test]
fn no_enabled_flow_is_an_error() {
    let e = error("clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n");
    assert!(e.message().contains("no flow is enabled"), "{e}");
}

#[test]
fn missing_bootstrap_servers_of_an_enabled_flow_names_the_key() {
    assert_rejected(
        "clusters = A, B\nA.bootstrap.servers = a:1\nA->B.enabled = true\n",
        "B.bootstrap.servers",
        &[],
    );
}

#[test]
fn cluster_used_only_by_disabled_flows_needs_no_bootstrap_servers() {
    let config = load(&BASE.replace("clusters = A, B", "clusters = A, B, C"));
    assert_eq!(names(&config), vec!["A->B"]);
}

#[test]
fn invalid_bootstrap_servers_is_an_error_with_line() {
    let e = error(&BASE.replace("b1:9092", "b1"));
    assert_eq!(e.key(), Some("B.bootstrap.servers"));
    assert_eq!(e.line(), Some(3));
}

#[test]
fn bootstrap_servers_are_parsed_in_order() {
    let f = only_flow(BASE);
    let servers: Vec<String> = f
        .source
        .bootstrap_servers
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(servers, vec!["a1:9092", "a2:9092"]);
}

// ---- defaults ----

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

// ---- layering of connector keys ----

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

// ---- validation of checkpoint keys ----

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
            "  mm2-checkpoint.offset.translation.max.syncs.per.partition = 500 (unused: translation is mm2)"
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

// ---- config providers in flows ----

const PROVIDERS: &str = "config.providers = env,file\n\
    config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
    config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n";

fn sasl_scram(jaas: &str) -> String {
    format!(
        "{BASE}{PROVIDERS}A.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = SCRAM-SHA-512\n\
         A.sasl.jaas.config = {jaas}\n"
    )
}

#[test]
fn env_reference_fills_a_password() {
    let env = FakeEnvironment::default().with_var("A_PASSWORD", "from-env");
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"${env:A_PASSWORD}\";";
    let config = load_with(&sasl_scram(jaas), &env).unwrap();
    let sasl = config.flows[0].source.sasl.clone().unwrap();
    assert_eq!(sasl.password.expose(), "from-env");
}

#[test]
fn file_reference_fills_a_value() {
    let env = FakeEnvironment::default()
        .with_file("/etc/mm2/secrets.properties", "a.servers = fromfile:9092\n");
    let text = format!(
        "{}{PROVIDERS}",
        BASE.replace(
            "a1:9092, a2:9092",
            "${file:/etc/mm2/secrets.properties:a.servers}"
        )
    );
    let config = load_with(&text, &env).unwrap();
    assert_eq!(config.flows[0].source.bootstrap_servers[0].host, "fromfile");
}

#[test]
fn missing_env_var_is_an_error_naming_the_config_key_and_line() {
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"${env:NOPE}\";";
    let e = error(&sasl_scram(jaas));
    assert_eq!(e.key(), Some("A.sasl.jaas.config"));
    assert_eq!(e.line(), Some(10));
    assert!(e.message().contains("NOPE"));
}

#[test]
fn reference_without_declared_provider_is_an_error() {
    assert_rejected(
        &BASE.replace("a1:9092, a2:9092", "${env:SERVERS}"),
        "A.bootstrap.servers",
        &["not declared"],
    );
}

#[test]
fn unused_keys_with_broken_references_are_ignored() {
    only_flow(&with(&format!(
        "{PROVIDERS}some.unknown.key = ${{env:NOT_SET}}"
    )));
}

// ---- SASL ----

#[test]
fn scram_credentials_come_from_the_jaas_config() {
    let f = only_flow(&sasl_scram(SCRAM_JAAS));
    let sasl = f.source.sasl.unwrap();
    assert_eq!(f.source.security_protocol, SecurityProtocol::SaslPlaintext);
    assert_eq!(sasl.mechanism, SaslMechanism::ScramSha512);
    assert_eq!(sasl.username, "alice");
    assert_eq!(sasl.password.expose(), "alice-secret");
    assert!(f.target.sasl.is_none());
}

#[test]
fn scram_sha_256_is_supported() {
    let f = only_flow(&sasl_scram(SCRAM_JAAS).replace("SCRAM-SHA-512", "SCRAM-SHA-256"));
    assert_eq!(f.source.sasl.unwrap().mechanism, SaslMechanism::ScramSha256);
}

#[test]
fn plain_uses_the_plain_login_module() {
    let text = sasl_scram("org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p\";")
        .replace("SCRAM-SHA-512", "PLAIN");
    let config = load(&text);
    assert_eq!(
        config.flows[0].source.sasl.clone().unwrap().mechanism,
        SaslMechanism::Plain
    );
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.message().contains("unencrypted"))
    );
}

#[test]
fn security_protocol_is_case_insensitive() {
    let text = sasl_scram(SCRAM_JAAS).replace("SASL_PLAINTEXT", "sasl_plaintext");
    assert_eq!(
        only_flow(&text).source.security_protocol,
        SecurityProtocol::SaslPlaintext
    );
}

#[test]
fn unknown_security_protocol_is_an_error() {
    assert_rejected(
        &with("A.security.protocol = TLS"),
        "A.security.protocol",
        &[],
    );
}

#[test]
fn empty_security_protocol_is_an_error_not_plaintext() {
    assert_rejected(
        &with("security.protocol = SSL\nA.security.protocol ="),
        "A.security.protocol",
        &[],
    );
}

#[test]
fn login_module_must_match_the_mechanism() {
    let text = sasl_scram(SCRAM_JAAS).replace("SCRAM-SHA-512", "PLAIN");
    let e = error(&text);
    assert_eq!(e.key(), Some("A.sasl.jaas.config"));
    assert!(e.message().contains("PlainLoginModule"), "{e}");
}

#[test]
fn gssapi_is_an_error_saying_what_to_use() {
    assert_rejected(
        &sasl_scram(SCRAM_JAAS).replace("SCRAM-SHA-512", "GSSAPI"),
        "A.sasl.mechanism",
        &[
            "does not support Kerberos",
            "SCRAM-SHA-512",
            "client certificate",
        ],
    );
}

const OAUTH_JAAS: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
    required clientId=\"mm2\" clientSecret=\"oauth-secret-value\" scope=\"kafka\" \
    extension_logicalCluster=\"lkc-1\";";

/// An OAUTHBEARER cluster A with `extra` lines.
fn oauth(extra: &str) -> String {
    format!(
        "{BASE}A.security.protocol = SASL_SSL\nA.sasl.mechanism = OAUTHBEARER\n\
         A.sasl.login.callback.handler.class = \
         org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n\
         A.sasl.oauthbearer.token.endpoint.url = https://idp.example/oauth2/token\n\
         A.sasl.jaas.config = {OAUTH_JAAS}\n{extra}"
    )
}

#[test]
fn oauthbearer_reads_the_endpoint_jaas_options_and_login_keys() {
    let config = load(&oauth(
        "A.sasl.login.refresh.window.factor = 0.9\nA.sasl.login.retry.backoff.max.ms = 2000\n\
         A.sasl.oauthbearer.sub.claim.name = client_id\n",
    ));
    let sasl = config.flows[0].source.sasl.as_ref().unwrap();
    assert_eq!(sasl.mechanism, SaslMechanism::OAuthBearer);
    let oauth = sasl.oauth.as_ref().unwrap();
    assert_eq!(
        oauth.token_endpoint,
        TokenEndpoint::Url("https://idp.example/oauth2/token".into())
    );
    assert_eq!(oauth.client_id, "mm2");
    assert_eq!(oauth.client_secret.expose(), "oauth-secret-value");
    assert_eq!(oauth.scope.as_deref(), Some("kafka"));
    assert_eq!(oauth.refresh_window_factor, 0.9);
    assert_eq!(oauth.retry_backoff_max, Duration::from_millis(2000));
    assert_eq!(oauth.sub_claim_name, "client_id");
    assert_eq!(
        oauth.extensions,
        [("logicalCluster".to_string(), "lkc-1".to_string())]
    );
    let shown = format!("{config:?} {}", render_effective_settings(&config));
    assert!(!shown.contains("oauth-secret-value"), "{shown}");
    assert!(
        shown.contains("oauth client secret = [redacted]"),
        "{shown}"
    );
    assert!(
        shown.contains("sasl.oauthbearer.token.endpoint.url = https://idp.example/oauth2/token"),
        "{shown}"
    );
}

#[test]
fn oauthbearer_header_urlencode_is_read_as_a_boolean_defaulting_to_false() {
    let urlencode = |extra: &str| {
        let config = load(&oauth(extra));
        let oauth = config.flows[0].source.sasl.as_ref().unwrap().oauth.clone();
        let shown = render_effective_settings(&config);
        (oauth.unwrap().header_urlencode, shown)
    };
    let (off, shown) = urlencode("");
    assert!(!off);
    assert!(
        shown.contains("sasl.oauthbearer.header.urlencode = false"),
        "{shown}"
    );
    let (on, shown) = urlencode("A.sasl.oauthbearer.header.urlencode = TRUE \n");
    assert!(on);
    assert!(
        shown.contains("sasl.oauthbearer.header.urlencode = true"),
        "{shown}"
    );
    assert_rejected(
        &oauth("A.sasl.oauthbearer.header.urlencode = yes\n"),
        "A.sasl.oauthbearer.header.urlencode",
        &["`yes` is not a boolean"],
    );
}

#[test]
fn the_jwt_bearer_grant_is_refused_naming_each_of_its_keys() {
    let v = check(
        &oauth(
            "A.sasl.oauthbearer.jwt.retriever.class = \
             org.apache.kafka.common.security.oauthbearer.JwtBearerJwtRetriever\n\
             A.sasl.oauthbearer.assertion.private.key.file = /etc/mm2/assertion.key\n\
             A.sasl.oauthbearer.assertion.private.key.passphrase = key-pass-77\n",
        )
        .replace("clientId=\"mm2\" clientSecret=\"oauth-secret-value\" ", ""),
        &FakeEnvironment::default(),
        Secrets::Read,
    );
    assert_eq!(
        error_keys(&v),
        [
            "A.sasl.oauthbearer.jwt.retriever.class (10)",
            "A.sasl.oauthbearer.assertion.private.key.file (11)",
            "A.sasl.oauthbearer.assertion.private.key.passphrase (12)",
        ]
    );
    assert!(
        v.errors.iter().all(|e| e
            .message()
            .contains("JWT bearer grant (Kafka 4.1, KIP-1139")
            && e.message().contains("client credentials grant")),
        "{:?}",
        v.errors
    );
    assert!(!everything(&v).contains("key-pass-77"));
}

#[test]
fn oauthbearer_over_plain_http_is_accepted_with_a_warning() {
    let config = load(&oauth("").replace("https://idp", "http://idp"));
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.message().contains("plain http://")),
        "{:?}",
        config.warnings
    );
}

#[test]
fn oauthbearer_older_handler_name_and_file_tokens_are_accepted() {
    let text = oauth("")
        .replace(
            ".oauthbearer.OAuthBearerLoginCallbackHandler",
            ".oauthbearer.secured.OAuthBearerLoginCallbackHandler",
        )
        .replace(
            "https://idp.example/oauth2/token",
            "file:///var/run/secrets/token.jwt",
        )
        .replace("clientId=\"mm2\" clientSecret=\"oauth-secret-value\" ", "");
    let config = load(&text);
    let oauth = config.flows[0]
        .source
        .sasl
        .as_ref()
        .unwrap()
        .oauth
        .clone()
        .unwrap();
    assert_eq!(
        oauth.token_endpoint,
        TokenEndpoint::File("/var/run/secrets/token.jwt".into())
    );
}

#[test]
fn oauthbearer_errors_name_their_keys_without_the_secret() {
    let no_handler = oauth("").replace(
        "A.sasl.login.callback.handler.class = \
         org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n",
        "",
    );
    assert_rejected(
        &no_handler,
        "A.sasl.login.callback.handler.class",
        &["unsecured", "OAuthBearerLoginCallbackHandler"],
    );
    let custom = oauth("").replace(
        "oauthbearer.OAuthBearerLoginCallbackHandler",
        "example.MyHandler",
    );
    assert_rejected(
        &custom,
        "A.sasl.login.callback.handler.class",
        &["not supported"],
    );
    let no_url = oauth("").replace(
        "A.sasl.oauthbearer.token.endpoint.url = https://idp.example/oauth2/token\n",
        "",
    );
    assert_rejected(
        &no_url,
        "A.sasl.oauthbearer.token.endpoint.url",
        &["required"],
    );
    let bad_url = oauth("").replace("https://idp.example/oauth2/token", "ldap://idp");
    assert_rejected(
        &bad_url,
        "A.sasl.oauthbearer.token.endpoint.url",
        &["ldap://idp"],
    );
    let no_id = oauth("").replace("clientId=\"mm2\" ", "");
    assert_rejected(&no_id, "A.sasl.jaas.config", &["clientId"]);
    assert_rejected(
        &oauth("A.sasl.login.refresh.window.factor = 1.5\n"),
        "A.sasl.login.refresh.window.factor",
        &["between 0.5 and 1"],
    );
    assert_rejected(
        &oauth("A.sasl.login.connect.timeout.ms = soon\n"),
        "A.sasl.login.connect.timeout.ms",
        &["not a number"],
    );
    let wrong_module = oauth("").replace(
        "oauthbearer.OAuthBearerLoginModule",
        "plain.PlainLoginModule",
    );
    assert_rejected(
        &wrong_module,
        "A.sasl.jaas.config",
        &["OAuthBearerLoginModule"],
    );
    for text in [no_id, oauth("A.sasl.login.refresh.window.factor = 1.5\n")] {
        let e = error(&text);
        assert!(!e.to_string().contains("oauth-secret-value"), "{e}");
    }
    // The OAuth handler with another mechanism is an error too.
    assert_rejected(
        &format!(
            "{}A.sasl.login.callback.handler.class = \
             org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n",
            sasl_scram(SCRAM_JAAS)
        ),
        "A.sasl.login.callback.handler.class",
        &["OAUTHBEARER"],
    );
}

#[test]
fn missing_mechanism_means_gssapi_and_is_an_error() {
    assert_rejected(
        &sasl_scram(SCRAM_JAAS).replace("A.sasl.mechanism = SCRAM-SHA-512\n", ""),
        "A.sasl.mechanism",
        &["MirrorMaker 2 would use", "GSSAPI", "SCRAM-SHA-512"],
    );
}

#[test]
fn missing_jaas_config_is_an_error() {
    let text = format!("{BASE}A.security.protocol = SASL_SSL\nA.sasl.mechanism = PLAIN\n");
    assert_eq!(error(&text).key(), Some("A.sasl.jaas.config"));
}

#[test]
fn jaas_without_password_is_an_error() {
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\";";
    assert!(error(&sasl_scram(jaas)).message().contains("password"));
}

#[test]
fn malformed_jaas_error_does_not_leak_the_password() {
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"leaky";
    let e = error(&sasl_scram(jaas));
    assert_eq!(e.key(), Some("A.sasl.jaas.config"));
    assert!(!e.to_string().contains("leaky"), "{e}");
}

#[test]
fn sasl_callback_handler_is_an_error() {
    let text = format!(
        "{}A.sasl.login.callback.handler.class = com.example.H\n",
        sasl_scram(SCRAM_JAAS)
    );
    assert_eq!(
        error(&text).key(),
        Some("A.sasl.login.callback.handler.class")
    );
}

#[test]
fn a_custom_sasl_class_is_refused_naming_key_and_class() {
    for key in ["sasl.client.callback.handler.class", "sasl.login.class"] {
        assert_rejected(
            &format!(
                "{}A.{key} = com.example.kafka.auth.VaultScramCallbackHandler\n",
                sasl_scram(SCRAM_JAAS)
            ),
            &format!("A.{key}"),
            &[
                "class `com.example.kafka.auth.VaultScramCallbackHandler` is not supported",
                "runs no Java",
            ],
        );
    }
}

#[test]
fn sasl_keys_without_a_sasl_protocol_are_ignored_with_a_warning() {
    let config = load(&with("A.sasl.mechanism = GSSAPI"));
    assert!(config.flows[0].source.sasl.is_none());
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.message().contains("sasl.* settings are ignored"))
    );
}

#[test]
fn scram_delegation_tokens_are_an_error() {
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"p\" tokenauth=\"true\";";
    assert!(error(&sasl_scram(jaas)).message().contains("tokenauth"));
}

// ---- TLS ----

fn ssl(extra: &str) -> String {
    format!("{BASE}B.security.protocol = SSL\n{extra}\n")
}

fn tls_of(text: &str) -> TlsSettings {
    let config = load_with(text, &tls_env()).unwrap_or_else(|e| panic!("config rejected: {e}"));
    config.flows[0].target.tls.clone().unwrap()
}

#[test]
fn ssl_without_trust_store_uses_default_roots_and_verifies_host_names() {
    let tls = tls_of(&ssl(""));
    assert_eq!(tls.trust, TrustRoots::Default);
    assert!(tls.identity.is_none());
    assert!(tls.verify_hostname);
}

#[test]
fn pem_trust_store_file_is_read_and_parsed() {
    let tls = tls_of(&ssl(
        "B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem",
    ));
    assert_eq!(
        tls.trust,
        TrustRoots::Pem {
            source: PemSource::File("/etc/kafka/ca.pem".into()),
            key: KeyOrigin {
                key: "B.ssl.truststore.location".into(),
                line: Some(7)
            }
        }
    );
    assert_eq!(tls.load(&tls_env()).unwrap().roots.len(), 1);
}

#[test]
fn inline_pem_certificates_are_accepted() {
    let inline = TEST_CERT.replace('\n', "\\n");
    let tls = tls_of(&ssl(&format!(
        "B.ssl.truststore.type = PEM\nB.ssl.truststore.certificates = {inline}"
    )));
    assert_eq!(tls.load(&tls_env()).unwrap().roots.len(), 1);
}

#[test]
fn inline_pem_joined_by_continuation_lines_is_accepted_like_kafka() {
    // Continuation lines drop the newlines, so the PEM arrives on one line.
    let body: Vec<&str> = TEST_CERT.lines().collect();
    let joined = body.join(" \\\n    ");
    let tls = tls_of(&ssl(&format!(
        "B.ssl.truststore.type = PEM\nB.ssl.truststore.certificates = {joined}"
    )));
    assert_eq!(tls.load(&tls_env()).unwrap().roots.len(), 1);
}

#[test]
fn missing_trust_store_file_is_an_error_naming_the_key() {
    assert_rejected(
        &ssl("B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /nope.pem"),
        "B.ssl.truststore.location",
        &["/nope.pem"],
    );
}

#[test]
fn trust_store_without_certificates_is_an_error() {
    let env = tls_env().with_file("/etc/kafka/empty.pem", "nothing here\n");
    let e = error_with(
        &ssl("B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/empty.pem"),
        &env,
    );
    assert_eq!(e.key(), Some("B.ssl.truststore.location"));
    assert!(e.message().contains("CERTIFICATE"), "{e}");
}

#[test]
fn jceks_trust_store_is_an_error_saying_to_convert_to_pkcs12() {
    assert_rejected(
        &ssl("B.ssl.truststore.type = JCEKS\nB.ssl.truststore.location = /etc/kafka/ca.jceks"),
        "B.ssl.truststore.type",
        &["PKCS12", "JCEKS", "keytool -importkeystore"],
    );
}

#[test]
fn store_types_default_to_jks_like_kafka() {
    assert_rejected(
        &ssl("B.ssl.keystore.location = /etc/kafka/client.jks"),
        "B.ssl.keystore.password",
        &["required for a JKS key store"],
    );
}

#[test]
fn pkcs12_key_stores_need_their_password_trust_stores_may_go_without() {
    // Whether the trust store can be read without it is known when it is
    // opened (tests/validate_material.rs, with keytool's stores).
    let v = check(
        &ssl("B.ssl.truststore.type = PKCS12\nB.ssl.truststore.location = /etc/kafka/ca.p12"),
        &FakeEnvironment::default(),
        Secrets::Skip,
    );
    assert!(v.is_ok(), "{:?}", v.errors);
    assert_rejected(
        &ssl("B.ssl.keystore.type = PKCS12\nB.ssl.keystore.location = /etc/kafka/client.p12"),
        "B.ssl.keystore.password",
        &["PKCS12"],
    );
}

#[test]
fn pkcs12_stores_are_described_and_their_passwords_kept_secret() {
    let text = ssl(
        "B.ssl.truststore.type = PKCS12\nB.ssl.truststore.location = /etc/kafka/ca.p12\n\
         B.ssl.truststore.password = trust-Pw-91\n\
         B.ssl.keystore.type = PKCS12\nB.ssl.keystore.location = /etc/kafka/client.p12\n\
         B.ssl.keystore.password = key-Pw-92\nB.ssl.key.password = key-Pw-92",
    );
    let config = MirrorConfig::from_properties(
        &Properties::parse(&text).unwrap(),
        &tls_env().with_file("/etc/kafka/ca.p12", "not a store"),
    );
    // The fake file is no PKCS12 store: the error names the key and says so.
    let e = config.unwrap_err();
    assert_eq!(e.key(), Some("B.ssl.truststore.location"), "{e}");
    assert!(e.message().contains("not a PKCS12 store"), "{e}");
    assert!(!e.to_string().contains("trust-Pw-91"), "{e}");
}

#[test]
fn a_pkcs12_key_password_other_than_the_store_password_is_an_error() {
    assert_rejected(
        &ssl(
            "B.ssl.keystore.type = PKCS12\nB.ssl.keystore.location = /etc/kafka/client.p12\n\
             B.ssl.keystore.password = a\nB.ssl.key.password = b",
        ),
        "B.ssl.key.password",
        &["one password"],
    );
}

#[test]
fn pem_chain_and_key_values_without_pem_text_are_file_paths() {
    let env = tls_env()
        .with_file("/etc/user/user.crt", TEST_CERT)
        .with_file("/etc/user/user.key", TEST_KEY);
    let config = load_with(
        &ssl(
            "B.ssl.keystore.type = PEM\nB.ssl.keystore.certificate.chain = /etc/user/user.crt\n\
             B.ssl.keystore.key = /etc/user/user.key",
        ),
        &env,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let tls = config.flows[0].target.tls.clone().unwrap();
    let id = tls.identity.as_ref().unwrap();
    assert_eq!(
        id.certificate_chain,
        PemSource::File("/etc/user/user.crt".into())
    );
    assert_eq!(id.private_key, PemSource::File("/etc/user/user.key".into()));
    assert!(tls.load(&env).unwrap().identity.is_some());
}

#[test]
fn trust_store_location_and_inline_certificates_together_are_an_error() {
    assert_rejected_with_tls(
        &ssl(
            "B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem\nB.ssl.truststore.certificates = x",
        ),
        "B.ssl.truststore.certificates",
        &[],
    );
}

#[test]
fn trust_store_password_with_pem_is_an_error() {
    let e = error_with(
        &ssl(
            "B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem\nB.ssl.truststore.password = pw",
        ),
        &tls_env(),
    );
    assert_eq!(e.key(), Some("B.ssl.truststore.password"));
    assert!(!e.to_string().contains("pw\n"));
}

#[test]
fn pem_key_store_file_gives_a_client_identity() {
    let tls = tls_of(&ssl(
        "B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/client.pem",
    ));
    let material = tls.load(&tls_env()).unwrap();
    let (chain, _key) = material.identity.unwrap();
    assert_eq!(chain.len(), 1);
}

#[test]
fn inline_key_store_needs_chain_and_key() {
    let key = TEST_KEY.replace('\n', "\\n");
    let chain = TEST_CERT.replace('\n', "\\n");
    let tls = tls_of(&ssl(&format!(
        "B.ssl.keystore.type = PEM\nB.ssl.keystore.key = {key}\nB.ssl.keystore.certificate.chain = {chain}"
    )));
    assert!(tls.load(&tls_env()).unwrap().identity.is_some());
    let e = error(&ssl(&format!(
        "B.ssl.keystore.type = PEM\nB.ssl.keystore.key = {key}"
    )));
    assert_eq!(e.key(), Some("B.ssl.keystore.certificate.chain"));
}

/// A P-256 key that belongs to no certificate of these tests.
const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgzPT90dXZ+H6RRwZY
g4KFuGyuBY1Zl0ZQusJKEaj1SoOhRANCAASftYCRO9AM56m45F4fN1HXkdevncJN
mhzBXulwnhe/filqvvfh1IYblbkszRgs0WWQooF+pBeTLLYawKV8OK2Y
-----END PRIVATE KEY-----
";

#[test]
fn a_key_that_belongs_to_another_certificate_is_an_error_naming_key_and_line() {
    let key = OTHER_KEY.replace('\n', "\\n");
    let chain = TEST_CERT.replace('\n', "\\n");
    let e = error(&ssl(&format!(
        "B.ssl.keystore.type = PEM\nB.ssl.keystore.certificate.chain = {chain}\nB.ssl.keystore.key = {key}"
    )));
    assert_eq!(e.key(), Some("B.ssl.keystore.key"), "{e}");
    assert!(e.line().is_some(), "{e}");
    assert!(e.message().contains("does not belong"), "{e}");
    assert!(e.message().contains("CN=mm2-checkpoint test"), "{e}");
    for secret_line in OTHER_KEY.lines().filter(|l| !l.starts_with("-----")) {
        assert!(!e.to_string().contains(secret_line), "{e}");
    }

    // The same mismatch in one file names the location key.
    let env = tls_env().with_file("/etc/kafka/wrong.pem", &format!("{OTHER_KEY}{TEST_CERT}"));
    let e = error_with(
        &ssl("B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/wrong.pem"),
        &env,
    );
    assert_eq!(e.key(), Some("B.ssl.keystore.location"), "{e}");
    assert!(e.message().contains("does not belong"), "{e}");
}

#[test]
fn a_certificate_with_a_garbage_body_is_an_error_naming_key_and_line() {
    // Valid PEM and base64, but not DER: passed the old shape-only check.
    let garbage = "-----BEGIN CERTIFICATE-----\\nAAECAwQFBgcICQ==\\n-----END CERTIFICATE-----";
    let e = error(&ssl(&format!(
        "B.ssl.truststore.type = PEM\nB.ssl.truststore.certificates = {garbage}"
    )));
    assert_eq!(e.key(), Some("B.ssl.truststore.certificates"), "{e}");
    assert!(e.line().is_some(), "{e}");
    assert!(
        e.message().contains("certificate 1 of 1") && e.message().contains("not a valid X.509"),
        "{e}"
    );

    // The second certificate of a chain file is checked too.
    let env = tls_env().with_file(
        "/etc/kafka/chain.pem",
        &format!(
            "{TEST_CERT}-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n"
        ),
    );
    let e = error_with(
        &ssl("B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/chain.pem"),
        &env,
    );
    assert!(e.message().contains("certificate 2 of 2"), "{e}");
}

#[test]
fn a_private_key_with_a_garbage_body_is_an_error() {
    let env = tls_env().with_file(
        "/etc/kafka/badkey.pem",
        &format!(
            "-----BEGIN PRIVATE KEY-----\nAAECAwQFBgcICQ==\n-----END PRIVATE KEY-----\n{TEST_CERT}"
        ),
    );
    let e = error_with(
        &ssl("B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/badkey.pem"),
        &env,
    );
    assert_eq!(e.key(), Some("B.ssl.keystore.location"), "{e}");
    assert!(e.message().contains("cannot be used"), "{e}");
    assert!(!e.to_string().contains("AAECAwQFBgcICQ"), "{e}");
}

#[test]
fn certificates_outside_their_validity_are_warnings_with_key_line_and_subject() {
    use std::time::{Duration, SystemTime};
    // The test certificate is valid from 2026-12-02 12:22:18 UTC for 100 years.
    let not_before = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_214_138);
    let not_after = SystemTime::UNIX_EPOCH + Duration::from_secs(4_949_814_138);
    let text = ssl(
        "B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem\n\
         B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/client.pem",
    );
    let tls = tls_of(&text);
    let material = tls.load(&tls_env()).unwrap();
    let at = |now| tls.warnings("B", &material, now);

    assert!(at(not_before + Duration::from_secs(3600)).is_empty());
    assert!(at(not_after - EXPIRY_WARNING - Duration::from_secs(1)).is_empty());

    let early = at(not_before - Duration::from_secs(60));
    assert_eq!(early.len(), 2, "{early:?}");
    assert!(
        early[0].message().contains("`B.ssl.truststore.location`"),
        "{early:?}"
    );
    assert!(
        early[1].message().contains("`B.ssl.keystore.location`"),
        "{early:?}"
    );
    assert!(early.iter().all(|w| {
        w.message().contains("(line ")
            && w.message().contains("subject `CN=mm2-checkpoint test`")
            && w.message()
                .contains("is not valid before 2026-12-02T12:22:18Z")
    }));

    let soon = at(not_after - Duration::from_secs(10 * 86_400 + 60));
    assert!(
        soon[0]
            .message()
            .contains("expires on 2126-11-08T12:22:18Z (in 10 days)"),
        "{soon:?}"
    );

    let expired = at(not_after + Duration::from_secs(1));
    assert_eq!(expired.len(), 2, "{expired:?}");
    assert!(
        expired[0]
            .message()
            .contains("EXPIRED on 2126-11-08T12:22:18Z"),
        "{expired:?}"
    );
}

#[test]
fn certificate_warnings_reach_the_config_warnings() {
    // Loading the config runs the same checks at the real time: the test
    // certificate is valid now, so nothing is added.
    let config = load_with(
        &ssl("B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem"),
        &tls_env(),
    )
    .unwrap();
    assert!(
        !config
            .warnings
            .iter()
            .any(|w| w.message().contains("certificate")),
        "{:?}",
        config.warnings
    );
}

/// TEST_KEY encrypted with `openssl pkcs8 -topk8 -v2 aes-256-cbc`, password
/// `test-key-pw`.
const TEST_KEY_ENCRYPTED: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----
MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAi+yMh52PcDFAICCAAw
DAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEJUFr1INg4FH6StvPcNel4QEgZA7
E/Hlfmh8DCccBgIE05LvqbvVFBgrNSYPcmYuZtlNh7SwZy8tGCNztCJxjvnUA/e0
KggeSOCvkS/DpKAluJUBRDg03S3lpFm/soI8OKp13/UmPBGS4R4vArxRNk8OKehd
RYVpjO7KPSHu7c+l1HcrYvUM4y6NdIydDSBE1cneMvjcYyvFffGWimA/7HpoaTE=
-----END ENCRYPTED PRIVATE KEY-----
";

fn encrypted_env() -> FakeEnvironment {
    tls_env().with_file(
        "/etc/kafka/enc.pem",
        &format!("{TEST_KEY_ENCRYPTED}{TEST_CERT}"),
    )
}

const ENCRYPTED_STORE: &str =
    "B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/enc.pem";

#[test]
fn an_encrypted_pkcs8_key_is_opened_with_the_key_password() {
    let text = ssl(&format!(
        "{ENCRYPTED_STORE}\nB.ssl.key.password = test-key-pw"
    ));
    let config = load_with(&text, &encrypted_env()).unwrap_or_else(|e| panic!("{e}"));
    let tls = config.flows[0].target.tls.clone().unwrap();
    assert!(!tls.identity.as_ref().unwrap().is_plain_pem());
    let (_, key) = tls.load(&encrypted_env()).unwrap().identity.unwrap();
    let plain = PrivateKeyDer::from_pem_slice(TEST_KEY.as_bytes()).unwrap();
    assert_eq!(key.secret_der(), plain.secret_der());
    assert!(!format!("{tls:?}").contains("test-key-pw"));
}

#[test]
fn an_encrypted_key_without_or_with_a_wrong_password_is_an_error() {
    let e = error_with(&ssl(ENCRYPTED_STORE), &encrypted_env());
    assert_eq!(e.key(), Some("B.ssl.keystore.location"));
    assert!(e.message().contains("set ssl.key.password"), "{e}");

    let e = error_with(
        &ssl(&format!("{ENCRYPTED_STORE}\nB.ssl.key.password = wrong-pw")),
        &encrypted_env(),
    );
    assert_eq!(e.key(), Some("B.ssl.key.password"), "{e}");
    assert!(e.message().contains("password is wrong"), "{e}");
    assert!(!e.to_string().contains("wrong-pw"), "{e}");
}

#[test]
fn a_key_password_for_a_key_that_is_not_encrypted_is_an_error() {
    assert_rejected_with_tls(
        &ssl(
            "B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/client.pem\nB.ssl.key.password = pw",
        ),
        "B.ssl.key.password",
        &["not encrypted"],
    );
}

#[test]
fn a_jks_key_store_that_is_no_store_is_an_error_naming_its_location() {
    // No type: Kafka's default, JKS; the content decides the format (as in
    // the JDK), and this content is neither.
    let config = MirrorConfig::from_properties(
        &Properties::parse(&ssl(
            "B.ssl.keystore.location = /etc/kafka/client.jks\nB.ssl.keystore.password = pw-77",
        ))
        .unwrap(),
        &tls_env().with_file("/etc/kafka/client.jks", "not a store"),
    );
    let e = config.unwrap_err();
    assert_eq!(e.key(), Some("B.ssl.keystore.location"), "{e}");
    assert!(
        e.message().contains("neither a JKS nor a PKCS12 store"),
        "{e}"
    );
    assert!(!e.to_string().contains("pw-77"), "{e}");
}

#[test]
fn empty_endpoint_identification_turns_host_name_checks_off_loudly() {
    let text = ssl("B.ssl.endpoint.identification.algorithm =");
    let config = load_with(&text, &tls_env()).unwrap();
    assert!(!config.flows[0].target.tls.clone().unwrap().verify_hostname);
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.message().contains("DISABLED"))
    );
}

#[test]
fn https_endpoint_identification_verifies_host_names() {
    assert!(tls_of(&ssl("B.ssl.endpoint.identification.algorithm = HTTPS")).verify_hostname);
}

#[test]
fn unknown_endpoint_identification_is_an_error() {
    assert_rejected(
        &ssl("B.ssl.endpoint.identification.algorithm = ldaps"),
        "B.ssl.endpoint.identification.algorithm",
        &[],
    );
}

#[test]
fn ssl_engine_factory_is_an_error() {
    assert_rejected(
        &ssl("B.ssl.engine.factory.class = com.example.E"),
        "B.ssl.engine.factory.class",
        &[],
    );
}

#[test]
fn security_providers_is_an_error() {
    assert_rejected(
        &with("security.providers = com.example.P"),
        "security.providers",
        &[],
    );
}

#[test]
fn ssl_keys_without_tls_are_ignored_with_a_warning() {
    let config = load(&with("A.ssl.truststore.location = /x.jks"));
    assert!(config.flows[0].source.tls.is_none());
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.message().contains("ssl.* settings are ignored"))
    );
}

// ---- layering of connection keys ----

#[test]
fn top_level_connection_key_applies_to_every_cluster() {
    let f = only_flow(&with("security.protocol = SSL"));
    assert_eq!(f.source.security_protocol, SecurityProtocol::Ssl);
    assert_eq!(f.target.security_protocol, SecurityProtocol::Ssl);
}

#[test]
fn cluster_connection_key_overrides_top_level() {
    let f = only_flow(&with(
        "security.protocol = SSL\nA.security.protocol = PLAINTEXT",
    ));
    assert_eq!(f.source.security_protocol, SecurityProtocol::Plaintext);
    assert_eq!(f.target.security_protocol, SecurityProtocol::Ssl);
}

#[test]
fn agreeing_client_prefixed_keys_are_accepted() {
    let f = only_flow(&with(
        "A.consumer.security.protocol = SSL\nA.admin.security.protocol = SSL",
    ));
    assert_eq!(f.source.security_protocol, SecurityProtocol::Ssl);
}

#[test]
fn client_prefixed_key_on_one_client_only_is_a_conflict() {
    assert_rejected(
        &with("A.consumer.security.protocol = SSL"),
        "A.security.protocol",
        &["A.consumer.security.protocol", "one connection"],
    );
}

#[test]
fn target_producer_counts_for_conflicts() {
    assert_rejected(
        &with(
            "B.producer.security.protocol = SSL\nB.consumer.security.protocol = SSL\nB.admin.security.protocol = PLAINTEXT",
        ),
        "B.security.protocol",
        &[],
    );
}

#[test]
fn source_producer_settings_are_not_used() {
    let f = only_flow(&with("A.producer.security.protocol = SSL"));
    assert_eq!(f.source.security_protocol, SecurityProtocol::Plaintext);
}

#[test]
fn flow_role_client_keys_override_cluster_keys() {
    let f = only_flow(&with(
        "A.security.protocol = SSL\nA->B.source.consumer.security.protocol = PLAINTEXT\n\
         A->B.source.admin.security.protocol = PLAINTEXT",
    ));
    assert_eq!(f.source.security_protocol, SecurityProtocol::Plaintext);
}

#[test]
fn flow_client_keys_lose_to_cluster_keys_like_mm2() {
    // `A->B.admin.k` becomes connector `admin.k`, which MM2 ranks below `source.admin.k`.
    let f = only_flow(&with(
        "A.security.protocol = SSL\nA->B.consumer.security.protocol = PLAINTEXT\n\
         A->B.admin.security.protocol = PLAINTEXT\nA->B.producer.security.protocol = PLAINTEXT",
    ));
    assert_eq!(f.source.security_protocol, SecurityProtocol::Ssl);
    // B has no cluster-level key, so the flow's client keys decide.
    assert_eq!(f.target.security_protocol, SecurityProtocol::Plaintext);
}

#[test]
fn flow_client_keys_apply_when_nothing_else_is_set() {
    let f = only_flow(&with(
        "A->B.consumer.security.protocol = SSL\nA->B.admin.security.protocol = SSL\nA->B.producer.security.protocol = SSL",
    ));
    assert_eq!(f.source.security_protocol, SecurityProtocol::Ssl);
    assert_eq!(f.target.security_protocol, SecurityProtocol::Ssl);
}

#[test]
fn same_cluster_gets_its_own_connection_in_each_flow() {
    let config = load(&with(
        "B->A.enabled = true\nA.security.protocol = SSL\n\
         B->A.target.consumer.security.protocol = PLAINTEXT\nB->A.target.producer.security.protocol = PLAINTEXT\n\
         B->A.target.admin.security.protocol = PLAINTEXT",
    ));
    assert_eq!(
        config.flows[0].source.security_protocol,
        SecurityProtocol::Ssl
    );
    assert_eq!(
        config.flows[1].target.security_protocol,
        SecurityProtocol::Plaintext
    );
}

#[test]
fn conflict_on_a_secret_key_does_not_show_values() {
    let text = format!(
        "{}A.consumer.sasl.jaas.config = other-secret-jaas\n",
        sasl_scram(SCRAM_JAAS)
    );
    let e = error(&text);
    assert_eq!(e.key(), Some("A.sasl.jaas.config"));
    assert!(!e.to_string().contains("secret"), "{e}");
}

// ---- secrets and rendering ----

fn rich_config() -> MirrorConfig {
    let text = format!(
        "{}B.security.protocol = SASL_SSL\nB.sasl.mechanism = SCRAM-SHA-256\nB.sasl.jaas.config = {SCRAM_JAAS}\n\
         B.ssl.truststore.type = PEM\nB.ssl.truststore.location = /etc/kafka/ca.pem\n\
         B.ssl.keystore.type = PEM\nB.ssl.keystore.location = /etc/kafka/client.pem\n",
        sasl_scram(SCRAM_JAAS)
    );
    load_with(&text, &tls_env()).unwrap_or_else(|e| panic!("config rejected: {e}"))
}

#[test]
fn debug_output_of_a_config_has_no_passwords() {
    let dbg = format!("{:?}", rich_config());
    assert!(!dbg.contains("alice-secret"), "{dbg}");
    assert!(dbg.contains("[redacted]"));
}

#[test]
fn rendered_settings_mask_secrets_and_show_values_and_origins() {
    let text = render_effective_settings(&rich_config());
    assert!(!text.contains("alice-secret"), "{text}");
    assert!(text.contains("sasl password = [redacted]"), "{text}");
    assert!(text.contains("[flow A->B]"), "{text}");
    assert!(
        text.contains("bootstrap.servers = a1:9092,a2:9092    # A.bootstrap.servers (line 2)"),
        "{text}"
    );
    assert!(
        text.contains("emit.checkpoints.interval.seconds = 60    # default"),
        "{text}"
    );
    assert!(
        text.contains("offset-syncs topic = mm2-offset-syncs.B.internal on A"),
        "{text}"
    );
    assert!(
        text.contains("checkpoints topic = A.checkpoints.internal on B"),
        "{text}"
    );
    assert!(
        text.contains("trust = PEM file /etc/kafka/ca.pem"),
        "{text}"
    );
}

#[test]
fn rendered_settings_list_warnings() {
    let config = load_with(
        &ssl("B.ssl.endpoint.identification.algorithm ="),
        &tls_env(),
    )
    .unwrap();
    let text = render_effective_settings(&config);
    assert!(text.contains("host name verification = OFF"), "{text}");
    assert!(text.contains("warnings:"), "{text}");
}

// ---- files ----

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
    let text = include_str!("../../../../docs/examples/mm2.properties");
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

// ---- connector-style input (connector.rs) ----

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
    let text = include_str!("../../../../docs/examples/checkpoint-connector.json");
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

// ---- every error in one check (check.rs) ----

/// Checks `text` (an mm2.properties) in `env` with or without the secrets.
fn check(text: &str, env: &FakeEnvironment, secrets: Secrets) -> Validation {
    MirrorConfig::validate_text(text, ConfigFormat::Mm2, env, secrets)
}

/// `key (line N)` of every error, in order.
fn error_keys(v: &Validation) -> Vec<String> {
    v.errors
        .iter()
        .map(|e| match e.line() {
            Some(line) => format!("{} ({line})", e.key().unwrap_or("-")),
            None => e.key().unwrap_or("-").to_string(),
        })
        .collect()
}

/// Everything a check says, for leak checks.
fn everything(v: &Validation) -> String {
    format!(
        "{:?}\n{}\n{}",
        v,
        render_validation_json(v, true),
        render_validation_text(v)
    )
}

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
         A.ssl.truststore.type = JCEKS\n\
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
        ("B.ssl.keystore.type = JCEKS", "B.ssl.keystore.type (22)"),
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

// ---- AWS MSK IAM ----

/// Cluster B as the MSK documentation configures an IAM client.
fn msk_iam(jaas_options: &str, extra: &str) -> String {
    format!(
        "{BASE}B.security.protocol = SASL_SSL\n\
         B.sasl.mechanism = AWS_MSK_IAM\n\
         B.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required{jaas_options};\n\
         B.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n\
         {extra}"
    )
}

#[test]
fn aws_msk_iam_takes_the_iam_login_module_and_its_options() {
    let config = load(&msk_iam("", ""));
    let sasl = config.flows[0].target.sasl.clone().unwrap();
    assert_eq!(sasl.mechanism, security::SaslMechanism::AwsMskIam);
    let login = sasl.aws_iam.unwrap();
    assert!(login.default_providers && login.profile.is_none() && login.role_arn.is_none());

    let config = load(&msk_iam(
        " awsProfileName=\"prod\" awsRoleArn=\"arn:aws:iam::123456789012:role/mm2\" \
         awsRoleSessionName=\"mm2\" awsStsRegion=\"eu-west-1\" awsDebugCreds=true \
         awsRoleAccessKeyId=\"AKIDROLE\" awsRoleSecretAccessKey=\"role-Secret-81\"",
        "",
    ));
    let login = config.flows[0]
        .target
        .sasl
        .clone()
        .unwrap()
        .aws_iam
        .unwrap();
    assert_eq!(login.profile.as_deref(), Some("prod"));
    assert_eq!(
        login.role_arn.as_deref(),
        Some("arn:aws:iam::123456789012:role/mm2")
    );
    assert_eq!(login.role_session_name.as_deref(), Some("mm2"));
    assert_eq!(login.sts_region.as_deref(), Some("eu-west-1"));
    let text = render_effective_settings(&config);
    assert!(
        text.contains("profile `prod`, then role arn:aws:iam::123456789012:role/mm2 via STS"),
        "{text}"
    );
    assert!(!text.contains("role-Secret-81"), "{text}");
    assert!(!format!("{config:?}").contains("role-Secret-81"));
}

#[test]
fn aws_msk_iam_refuses_what_it_cannot_honour_naming_the_key() {
    for (options, says) in [
        (
            " awsRoleArn=\"r\" awsShouldUseFips=true",
            "awsShouldUseFips",
        ),
        (" awsMskRegionProvider=\"com.example.P\"", "Java class"),
        (" awsRoleARN=\"r\"", "`awsRoleARN` is not an option"),
        (" awsRoleSessionName=\"s\"", "need awsRoleArn"),
        (
            " awsRoleArn=\"r\" awsRoleAccessKeyId=\"AKID\"",
            "go together",
        ),
        (" awsDebugCreds=maybe", "true or false"),
    ] {
        assert_rejected(&msk_iam(options, ""), "B.sasl.jaas.config", &[says]);
    }
    // The login module must match the mechanism.
    assert_rejected(
        &msk_iam("", "").replace(
            "software.amazon.msk.auth.iam.IAMLoginModule required",
            SCRAM_JAAS.trim_end_matches(';'),
        ),
        "B.sasl.jaas.config",
        &["IAMLoginModule"],
    );
    // The IAM callback handler belongs to AWS_MSK_IAM only.
    assert_rejected(
        &format!(
            "{BASE}B.security.protocol = SASL_SSL\nB.sasl.mechanism = SCRAM-SHA-512\n\
             B.sasl.jaas.config = {SCRAM_JAAS}\n\
             B.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n"
        ),
        "B.sasl.client.callback.handler.class",
        &["AWS_MSK_IAM"],
    );
    // The library's OAUTHBEARER form: say to use AWS_MSK_IAM.
    assert_rejected(
        &format!(
            "{BASE}B.security.protocol = SASL_SSL\nB.sasl.mechanism = AWS_MSK_IAM\n\
             B.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required;\n\
             B.sasl.login.callback.handler.class = software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n"
        ),
        "B.sasl.login.callback.handler.class",
        &["AWS_MSK_IAM"],
    );
}

#[test]
fn msk_iams_oauthbearer_form_takes_the_iam_options_instead_of_a_token_endpoint() {
    let text = format!(
        "{BASE}B.security.protocol = SASL_SSL\n\
         B.sasl.mechanism = OAUTHBEARER\n\
         B.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
         required awsRoleArn=\"arn:aws:iam::123456789012:role/mm2\";\n\
         B.sasl.login.callback.handler.class = software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n\
         B.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n"
    );
    // The library's README sets the same class as the client callback
    // handler too: accepted, with OAUTHBEARER only.
    assert_rejected(
        &format!(
            "{BASE}B.security.protocol = SASL_SSL\nB.sasl.mechanism = SCRAM-SHA-512\n\
             B.sasl.jaas.config = {SCRAM_JAAS}\n\
             B.sasl.client.callback.handler.class = \
             software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n"
        ),
        "B.sasl.client.callback.handler.class",
        &["OAUTHBEARER"],
    );
    let config = load(&text);
    let sasl = config.flows[0].target.sasl.clone().unwrap();
    assert_eq!(sasl.mechanism, security::SaslMechanism::OAuthBearer);
    assert!(sasl.oauth.is_none());
    assert_eq!(
        sasl.aws_iam.unwrap().role_arn.as_deref(),
        Some("arn:aws:iam::123456789012:role/mm2")
    );
    let rendered = render_effective_settings(&config);
    assert!(rendered.contains("via STS"), "{rendered}");
}
