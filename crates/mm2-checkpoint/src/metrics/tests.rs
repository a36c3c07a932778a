//! What the exposition says after the driver records through [`Metrics`].

use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A registry with per-partition latency series (the finest; the default is
/// per flow, see `the_default_is_one_latency_series_per_flow`).
fn metrics() -> Metrics {
    Metrics::with_settings(
        "1.2.3",
        "rustls+test",
        MetricsSettings {
            latency_granularity: LatencyGranularity::Partition,
            mm2_names: false,
            status_interval: None,
            ..MetricsSettings::default()
        },
    )
}

#[test]
fn the_default_is_one_latency_series_per_flow() {
    let m = Metrics::new("1.2.3", "rustls+test");
    for g in 0..100 {
        m.set_checkpoint_latency(
            "A->B",
            &format!("g{g}"),
            "t",
            g % 10,
            Duration::from_millis(5),
        );
    }
    m.set_checkpoint_latency("B->A", "g", "t", 0, Duration::from_millis(9));
    assert_eq!(
        samples(&m, "mm2_checkpoint_checkpoint_latency_ms{"),
        [
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\"} 5",
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"B->A\"} 9",
        ]
    );
}

fn exposition(m: &Metrics) -> String {
    m.encode_prometheus().expect("encodes")
}

/// The sample lines (not `# HELP`/`# TYPE`) whose name starts with `name`.
fn samples(m: &Metrics, name: &str) -> Vec<String> {
    exposition(m)
        .lines()
        .filter(|l| l.starts_with(name))
        .map(str::to_string)
        .collect()
}

/// Records one value in every family (empty families are not exposed).
fn record_everything(m: &Metrics) {
    m.checkpoints_emitted("A->B", 1);
    m.set_checkpoint_latency("A->B", "g", "t", 0, Duration::from_millis(1));
    m.observe_round_duration("A->B", Duration::from_millis(1));
    m.offset_syncs_read("A->B", 1);
    m.set_untranslatable_partitions("A->B", UntranslatableReason::TooOld, 1);
    m.group_synced("A->B", GroupSyncOutcome::Committed);
    m.request_error("A", "Fetch", "timeout");
    m.record_skipped("A->B", TopicKind::Checkpoints, RecordSkipReason::Corrupt);
    m.set_initial_read_progress("A->B", "t", 0.5);
}

#[test]
fn every_metric_is_declared_with_the_prefix() {
    let m = metrics();
    record_everything(&m);
    let text = exposition(&m);
    for (name, kind) in [
        ("mm2_checkpoint_checkpoints_emitted_total", "counter"),
        ("mm2_checkpoint_checkpoint_latency_ms", "gauge"),
        ("mm2_checkpoint_round_duration_seconds", "histogram"),
        ("mm2_checkpoint_offset_syncs_read_total", "counter"),
        ("mm2_checkpoint_untranslatable_partitions", "gauge"),
        ("mm2_checkpoint_group_syncs_total", "counter"),
        ("mm2_checkpoint_request_errors_total", "counter"),
        ("mm2_checkpoint_records_skipped_total", "counter"),
        ("mm2_checkpoint_initial_read_progress_ratio", "gauge"),
        ("mm2_checkpoint_ready", "gauge"),
        ("mm2_checkpoint_build_info", "gauge"),
    ] {
        assert!(
            text.contains(&format!("# TYPE {name} {kind}\n")),
            "{name} missing in\n{text}"
        );
    }
}

#[test]
fn build_info_is_one_with_version_and_tls_provider() {
    let m = metrics();
    assert_eq!(
        samples(&m, "mm2_checkpoint_build_info"),
        ["mm2_checkpoint_build_info{version=\"1.2.3\",tls_provider=\"rustls+test\"} 1"]
    );
}

#[test]
fn counters_add_per_flow() {
    let m = metrics();
    m.checkpoints_emitted("A->B", 2);
    m.checkpoints_emitted("A->B", 3);
    m.checkpoints_emitted("B->A", 1);
    m.offset_syncs_read("A->B", 7);
    let emitted = samples(&m, "mm2_checkpoint_checkpoints_emitted_total");
    assert!(
        emitted.contains(&"mm2_checkpoint_checkpoints_emitted_total{flow=\"A->B\"} 5".to_string()),
        "{emitted:?}"
    );
    assert!(
        emitted.contains(&"mm2_checkpoint_checkpoints_emitted_total{flow=\"B->A\"} 1".to_string()),
        "{emitted:?}"
    );
    assert_eq!(
        samples(&m, "mm2_checkpoint_offset_syncs_read_total"),
        ["mm2_checkpoint_offset_syncs_read_total{flow=\"A->B\"} 7"]
    );
}

#[test]
fn checkpoint_latency_has_one_series_per_group_partition() {
    let m = metrics();
    m.set_checkpoint_latency("A->B", "g1", "orders", 0, Duration::from_millis(1500));
    m.set_checkpoint_latency("A->B", "g1", "orders", 1, Duration::from_millis(20));
    m.set_checkpoint_latency("A->B", "g2", "orders", 0, Duration::from_millis(7));
    m.set_checkpoint_latency("A->B", "g1", "orders", 0, Duration::from_millis(900));
    let mut lines = samples(&m, "mm2_checkpoint_checkpoint_latency_ms{");
    lines.sort();
    assert_eq!(
        lines,
        [
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g1\",topic=\"orders\",partition=\"0\"} 900",
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g1\",topic=\"orders\",partition=\"1\"} 20",
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g2\",topic=\"orders\",partition=\"0\"} 7",
        ]
    );
}

/// The series of a group are listed by topic name then partition, whatever
/// order their topics were first seen in (the index holds topics by id), and
/// a value too large for the compact entry (over 49.7 days) shows exactly.
#[test]
fn checkpoint_latency_series_are_listed_by_topic_name_and_show_any_value() {
    let m = metrics();
    let huge = Duration::from_millis(u64::from(u32::MAX) + 5);
    m.set_checkpoint_latency("A->B", "g", "zeta", 1, Duration::from_millis(3));
    m.set_checkpoint_latency("A->B", "g", "alpha", 2, huge);
    m.set_checkpoint_latency(
        "A->B",
        "g",
        "zeta",
        0,
        Duration::from_millis(u64::from(u32::MAX)),
    );
    m.set_checkpoint_latency("A->B", "g", "alpha", 10, Duration::from_millis(0));
    m.set_checkpoint_latency("A->B", "g", "mid", 0, huge);
    m.set_checkpoint_latency("A->B", "g", "mid", 0, Duration::from_millis(4));
    assert_eq!(
        samples(&m, "mm2_checkpoint_checkpoint_latency_ms{"),
        [
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g\",topic=\"alpha\",partition=\"2\"} 4294967300",
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g\",topic=\"alpha\",partition=\"10\"} 0",
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g\",topic=\"mid\",partition=\"0\"} 4",
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g\",topic=\"zeta\",partition=\"0\"} 4294967295",
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g\",topic=\"zeta\",partition=\"1\"} 3",
        ]
    );
}

/// The interned names of the latency series, sorted.
fn interned_names(m: &Metrics) -> Vec<String> {
    let index = m.latency_index();
    let mut names: Vec<String> = index.names.iter().map(|n| n.to_string()).collect();
    names.extend(index.topics.names().map(str::to_owned));
    names.sort();
    names.dedup();
    names
}

#[test]
fn latency_series_share_one_copy_of_each_name() {
    let m = metrics();
    for group in ["g1", "g2"] {
        for partition in 0..10 {
            m.set_checkpoint_latency("A->B", group, "orders", partition, Duration::from_millis(1));
        }
    }
    assert_eq!(interned_names(&m), ["A->B", "g1", "g2", "orders"]);
    let index = m.latency_index();
    let orders = index.topics.id("orders").expect("held");
    let topics: Vec<u32> = index
        .series
        .values()
        .flat_map(|groups| groups.values())
        .flat_map(|series| series.entries.iter().map(|e| e.topic))
        .collect();
    assert_eq!(topics.len(), 20);
    assert!(topics.iter().all(|&t| t == orders));
    assert_eq!(index.topics.names().count(), 1);
}

#[test]
fn removing_a_group_forgets_names_no_series_uses() {
    let m = metrics();
    for (group, topic) in [
        ("gone", "only-gone"),
        ("gone", "shared"),
        ("kept", "shared"),
    ] {
        m.set_checkpoint_latency("A->B", group, topic, 0, Duration::from_millis(1));
    }
    m.remove_checkpoint_latency_group("A->B", "gone");
    assert_eq!(interned_names(&m), ["A->B", "kept", "shared"]);
    m.retain_checkpoint_latency_groups("A->B", |_| false);
    assert!(interned_names(&m).is_empty());
}

#[test]
fn removing_a_group_removes_only_its_latency_series() {
    let m = metrics();
    m.set_checkpoint_latency("A->B", "gone", "t", 0, Duration::from_millis(1));
    m.set_checkpoint_latency("A->B", "gone", "t", 1, Duration::from_millis(1));
    m.set_checkpoint_latency("A->B", "kept", "t", 0, Duration::from_millis(2));
    m.set_checkpoint_latency("B->A", "gone", "t", 0, Duration::from_millis(3));
    m.remove_checkpoint_latency_group("A->B", "gone");
    let mut lines = samples(&m, "mm2_checkpoint_checkpoint_latency_ms{");
    lines.sort();
    assert_eq!(
        lines,
        [
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"kept\",topic=\"t\",partition=\"0\"} 2",
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"B->A\",group=\"gone\",topic=\"t\",partition=\"0\"} 3",
        ]
    );
}

#[test]
fn retain_drops_latency_series_of_groups_not_kept_in_that_flow() {
    let m = metrics();
    for group in ["a", "b", "c"] {
        m.set_checkpoint_latency("A->B", group, "t", 0, Duration::from_millis(1));
    }
    m.set_checkpoint_latency("B->A", "b", "t", 0, Duration::from_millis(1));
    m.retain_checkpoint_latency_groups("A->B", |g| g == "a");
    let mut lines = samples(&m, "mm2_checkpoint_checkpoint_latency_ms{");
    lines.sort();
    assert_eq!(
        lines,
        [
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"a\",topic=\"t\",partition=\"0\"} 1",
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"B->A\",group=\"b\",topic=\"t\",partition=\"0\"} 1",
        ]
    );
}

#[test]
fn untranslatable_partitions_is_set_not_accumulated() {
    let m = metrics();
    m.set_untranslatable_partitions("A->B", UntranslatableReason::NoSync, 5);
    m.set_untranslatable_partitions("A->B", UntranslatableReason::NoSync, 2);
    m.set_untranslatable_partitions("A->B", UntranslatableReason::NullOffset, 1);
    let mut lines = samples(&m, "mm2_checkpoint_untranslatable_partitions{");
    lines.sort();
    assert_eq!(
        lines,
        [
            "mm2_checkpoint_untranslatable_partitions{flow=\"A->B\",reason=\"no_sync\"} 2",
            "mm2_checkpoint_untranslatable_partitions{flow=\"A->B\",reason=\"null_offset\"} 1",
        ]
    );
}

#[test]
fn label_values_use_snake_case_names() {
    let reasons: Vec<&str> = UntranslatableReason::ALL
        .iter()
        .map(|r| r.as_str())
        .collect();
    assert_eq!(
        reasons,
        [
            "not_ready",
            "no_sync",
            "too_old",
            "filtered",
            "null_offset",
            "suppressed",
            "conflict"
        ]
    );
    let m = metrics();
    m.group_synced("A->B", GroupSyncOutcome::SkippedTargetAhead);
    m.group_synced("A->B", GroupSyncOutcome::SkippedTargetAhead);
    m.record_skipped(
        "A->B",
        TopicKind::OffsetSyncs,
        RecordSkipReason::UnknownVersion,
    );
    m.request_error("primary", "OffsetCommit", "REBALANCE_IN_PROGRESS");
    assert_eq!(
        samples(&m, "mm2_checkpoint_group_syncs_total{"),
        ["mm2_checkpoint_group_syncs_total{flow=\"A->B\",outcome=\"skipped_target_ahead\"} 2"]
    );
    assert_eq!(
        samples(&m, "mm2_checkpoint_records_skipped_total{"),
        [
            "mm2_checkpoint_records_skipped_total{flow=\"A->B\",topic_kind=\"offset_syncs\",reason=\"unknown_version\"} 1"
        ]
    );
    assert_eq!(
        samples(&m, "mm2_checkpoint_request_errors_total{"),
        [
            "mm2_checkpoint_request_errors_total{cluster=\"primary\",api=\"OffsetCommit\",error=\"REBALANCE_IN_PROGRESS\"} 1"
        ]
    );
}

#[test]
fn round_duration_is_a_histogram_per_flow() {
    let m = metrics();
    m.observe_round_duration("A->B", Duration::from_millis(30));
    m.observe_round_duration("A->B", Duration::from_secs(3));
    let text = exposition(&m);
    assert!(
        text.contains("mm2_checkpoint_round_duration_seconds_count{flow=\"A->B\"} 2\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "mm2_checkpoint_round_duration_seconds_bucket{flow=\"A->B\",le=\"0.05\"} 1\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("mm2_checkpoint_round_duration_seconds_bucket{flow=\"A->B\",le=\"5\"} 2\n"),
        "{text}"
    );
}

#[test]
fn initial_read_progress_is_clamped_to_a_ratio() {
    let m = metrics();
    m.set_initial_read_progress("A->B", "mm2-offset-syncs.B.internal", 0.25);
    m.set_initial_read_progress("A->B", "B.checkpoints.internal", 7.0);
    m.set_initial_read_progress("B->A", "x", f64::NAN);
    let mut lines = samples(&m, "mm2_checkpoint_initial_read_progress_ratio{");
    lines.sort();
    assert_eq!(
        lines,
        [
            "mm2_checkpoint_initial_read_progress_ratio{flow=\"A->B\",topic=\"B.checkpoints.internal\"} 1.0",
            "mm2_checkpoint_initial_read_progress_ratio{flow=\"A->B\",topic=\"mm2-offset-syncs.B.internal\"} 0.25",
            "mm2_checkpoint_initial_read_progress_ratio{flow=\"B->A\",topic=\"x\"} 0.0",
        ]
    );
}

#[test]
fn ready_gauge_follows_readiness() {
    let m = metrics();
    assert_eq!(
        samples(&m, "mm2_checkpoint_ready "),
        ["mm2_checkpoint_ready 0"]
    );
    m.readiness().set_ready(readiness::STARTUP);
    assert_eq!(
        samples(&m, "mm2_checkpoint_ready "),
        ["mm2_checkpoint_ready 1"]
    );
    m.readiness()
        .set_not_ready("cluster primary", "unreachable");
    assert_eq!(
        samples(&m, "mm2_checkpoint_ready "),
        ["mm2_checkpoint_ready 0"]
    );
}

#[test]
fn odd_group_names_are_escaped_on_one_line() {
    let m = metrics();
    m.set_checkpoint_latency("A->B", "we\"ird\ngroup\\", "t", 0, Duration::from_millis(1));
    assert_eq!(
        samples(&m, "mm2_checkpoint_checkpoint_latency_ms{"),
        [
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"we\\\"ird\\ngroup\\\\\",topic=\"t\",partition=\"0\"} 1"
        ]
    );
}

fn with(granularity: LatencyGranularity, mm2_names: bool) -> Metrics {
    with_formats(granularity, mm2_names, Mm2NameFormats::Legacy)
}

fn with_formats(
    granularity: LatencyGranularity,
    mm2_names: bool,
    mm2_name_formats: Mm2NameFormats,
) -> Metrics {
    Metrics::with_settings(
        "1.2.3",
        "rustls+test",
        MetricsSettings {
            latency_granularity: granularity,
            mm2_names,
            mm2_name_formats,
            status_interval: None,
        },
    )
}

fn sorted_samples(m: &Metrics, name: &str) -> Vec<String> {
    let mut lines = samples(m, name);
    lines.sort();
    lines
}

/// Flow `A->B` whose connector names its clusters `us` and `eu`, as MM2's
/// `source` and `target` tags show them.
const US_TO_EU: FlowIdentity<'static> = FlowIdentity {
    name: "A->B",
    source: "A",
    target: "B",
    connector_source: "us",
    connector_target: "eu",
    offset_syncs_topic: "mm2-offset-syncs.eu.internal",
};

#[test]
fn mm2_names_carry_source_target_group_topic_partition_with_max_min_avg() {
    let m = with(LatencyGranularity::Partition, true);
    m.register_flow(&US_TO_EU);
    let t0 = std::time::Instant::now();
    for (after, ms) in [(0, 40), (10, 10), (20, 25)] {
        let at = t0 + Duration::from_secs(after);
        m.set_checkpoint_latency_at(at, "A->B", "g", "us.orders", 3, Duration::from_millis(ms));
    }
    let labels = "{source=\"us\",target=\"eu\",group=\"g\",topic=\"us.orders\",partition=\"3\"}";
    let p = "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms";
    assert_eq!(
        sorted_samples(&m, p),
        [
            format!("{p}_avg{labels} 25.0"),
            format!("{p}_max{labels} 40.0"),
            format!("{p}_min{labels} 10.0"),
            format!("{p}{labels} 25.0"),
        ]
    );
    // At 70 s the window that began at 0 s is older than two windows (60 s):
    // only the new value counts.
    m.set_checkpoint_latency_at(
        t0 + Duration::from_secs(70),
        "A->B",
        "g",
        "us.orders",
        3,
        Duration::from_millis(5),
    );
    assert_eq!(
        sorted_samples(&m, &format!("{p}_max")),
        [format!("{p}_max{labels} 5.0")],
        "at 70 s the window that began at 0 s has expired"
    );
    // Removing the group removes the MM2 series too.
    m.remove_checkpoint_latency_group("A->B", "g");
    assert!(samples(&m, p).is_empty());
    assert!(interned_names(&m).is_empty());
}

/// KIP-1280's names: MBean `kafka.connect:type=plugins,connector=..,task=..,
/// source=..,target=..,group=..,topic=..,partition=..` as the JMX exporter
/// renders it by default (domain, first key's value, attribute; the other
/// keys as labels in order).
#[test]
fn new_names_carry_connector_and_task_before_mm2_tags_beside_or_instead_of_legacy() {
    let identity = US_TO_EU;
    let legacy = "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms";
    let new = "kafka_connect_plugins_checkpoint_latency_ms";
    let labels = "{connector=\"MirrorCheckpointConnector\",task=\"0\",\
                  source=\"us\",target=\"eu\",group=\"g\",topic=\"us.orders\",partition=\"3\"}";
    for (formats, want_legacy, want_new) in [
        (Mm2NameFormats::Legacy, true, false),
        (Mm2NameFormats::New, false, true),
        (Mm2NameFormats::Both, true, true),
    ] {
        let m = with_formats(LatencyGranularity::Partition, true, formats);
        m.register_flow(&identity);
        let t0 = std::time::Instant::now();
        for (after, ms) in [(0, 40), (10, 10)] {
            let at = t0 + Duration::from_secs(after);
            m.set_checkpoint_latency_at(at, "A->B", "g", "us.orders", 3, Duration::from_millis(ms));
        }
        let expected_new: Vec<String> = match want_new {
            true => vec![
                format!("{new}_avg{labels} 25.0"),
                format!("{new}_max{labels} 40.0"),
                format!("{new}_min{labels} 10.0"),
                format!("{new}{labels} 10.0"),
            ],
            false => vec![],
        };
        assert_eq!(sorted_samples(&m, new), expected_new, "{formats:?}");
        assert_eq!(
            sorted_samples(&m, legacy).len(),
            if want_legacy { 4 } else { 0 },
            "{formats:?}"
        );
        let text = exposition(&m);
        assert_eq!(
            text.contains(&format!("# TYPE {new} gauge")),
            want_new,
            "{formats:?}: {text}"
        );
        // A group's removal removes its series under every format.
        m.remove_checkpoint_latency_group("A->B", "g");
        assert!(samples(&m, new).is_empty(), "{formats:?}");
        assert!(samples(&m, legacy).is_empty(), "{formats:?}");
    }
    // The MM2 names off, no format is exported.
    let off = with_formats(LatencyGranularity::Partition, false, Mm2NameFormats::Both);
    off.set_checkpoint_latency("A->B", "g", "t", 0, Duration::from_millis(1));
    let text = exposition(&off);
    assert!(!text.contains("kafka_connect_"), "{text}");
}

#[test]
fn mm2_names_can_be_turned_off() {
    let m = with(LatencyGranularity::Partition, false);
    m.set_checkpoint_latency("A->B", "g", "t", 0, Duration::from_millis(1));
    let text = exposition(&m);
    assert!(!text.contains("kafka_connect_mirror"), "{text}");
    assert!(
        text.contains("mm2_checkpoint_checkpoint_latency_ms{"),
        "{text}"
    );
}

#[test]
fn group_granularity_has_one_series_per_group_and_drops_it_with_the_group() {
    let m = with(LatencyGranularity::Group, true);
    m.set_checkpoint_latency("A->B", "g1", "t", 0, Duration::from_millis(7));
    m.set_checkpoint_latency("A->B", "g1", "t", 1, Duration::from_millis(9));
    m.set_checkpoint_latency("A->B", "g2", "t", 0, Duration::from_millis(3));
    assert_eq!(
        sorted_samples(&m, "mm2_checkpoint_checkpoint_latency_ms{"),
        [
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g1\"} 9",
            "mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g2\"} 3",
        ]
    );
    assert_eq!(
        sorted_samples(
            &m,
            "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms{"
        ),
        [
            "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms{source=\"A\",target=\"B\",group=\"g1\"} 9.0",
            "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms{source=\"A\",target=\"B\",group=\"g2\"} 3.0",
        ]
    );
    m.retain_checkpoint_latency_groups("A->B", |g| g == "g2");
    assert_eq!(
        sorted_samples(&m, "mm2_checkpoint_checkpoint_latency_ms{"),
        ["mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g2\"} 3"]
    );
}

#[test]
fn flow_granularity_has_one_series_per_flow_that_outlives_its_groups() {
    let m = with(LatencyGranularity::Flow, false);
    m.set_checkpoint_latency("A->B", "g1", "t", 0, Duration::from_millis(7));
    m.set_checkpoint_latency("A->B", "g2", "t", 5, Duration::from_millis(4));
    m.retain_checkpoint_latency_groups("A->B", |_| false);
    assert_eq!(
        samples(&m, "mm2_checkpoint_checkpoint_latency_ms{"),
        ["mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\"} 4"]
    );
}

#[test]
fn flow_granularity_keeps_no_group_name() {
    let m = with(LatencyGranularity::Flow, false);
    for group in ["g1", "g2", "g3"] {
        m.set_checkpoint_latency("A->B", group, "t", 0, Duration::from_millis(2));
    }
    m.set_checkpoint_latencies(
        "A->B",
        [("g4", "t", 0), ("g5", "t", 1)],
        Duration::from_millis(3),
    );
    assert_eq!(interned_names(&m), ["A->B"]);
}

#[test]
fn a_registered_flow_has_a_zero_series_in_every_family_but_latency() {
    let m = metrics();
    m.register_flow(&FlowIdentity {
        name: "A->B",
        source: "A",
        target: "B",
        connector_source: "A",
        connector_target: "B",
        offset_syncs_topic: "mm2-offset-syncs.B.internal",
    });
    let text = exposition(&m);
    let with_samples: BTreeSet<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    for family in [
        "mm2_checkpoint_checkpoints_emitted_total",
        "mm2_checkpoint_flow_owned",
        "mm2_checkpoint_round_duration_seconds_count",
        "mm2_checkpoint_offset_syncs_read_total",
        "mm2_checkpoint_untranslatable_partitions",
        "mm2_checkpoint_group_syncs_total",
        "mm2_checkpoint_request_errors_total",
        "mm2_checkpoint_records_skipped_total",
        "mm2_checkpoint_initial_read_progress_ratio",
        "mm2_checkpoint_precise_fallback_partitions",
        "mm2_checkpoint_content_searches_total",
        "mm2_checkpoint_group_offsets_mode",
        "mm2_checkpoint_followed_commits_total",
        "mm2_checkpoint_follower_corrections_total",
        "mm2_checkpoint_ready",
        "mm2_checkpoint_build_info",
    ] {
        assert!(
            with_samples.contains(family),
            "{family} has no sample in\n{text}"
        );
    }
    // The process metrics are the process's, not a flow's.
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("process_"))
    {
        let value = line.rsplit(' ').next().unwrap_or_default();
        let zero = value == "0" || value == "0.0";
        assert!(
            zero || line.starts_with("mm2_checkpoint_build_info")
                || line.contains("_bucket{") && line.contains("le=\"+Inf\"") && value == "0",
            "not zero: {line}"
        );
    }
    assert!(
        text.contains("mm2_checkpoint_request_errors_total{cluster=\"B\",api=\"\",error=\"\"} 0"),
        "{text}"
    );
}

#[test]
fn requests_are_read_from_the_clients_at_each_scrape_and_summed_per_cluster() {
    let m = metrics();
    assert!(samples(&m, "mm2_checkpoint_requests_total").is_empty());
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(2));
    let s = sent.clone();
    m.count_requests(
        "A",
        Box::new(move || vec![("OffsetFetch", s.load(std::sync::atomic::Ordering::Relaxed))]),
    );
    m.count_requests("A", Box::new(|| vec![("Fetch", 5), ("OffsetFetch", 1)]));
    m.count_requests("B", Box::new(|| vec![("Produce", 4)]));
    sent.store(7, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        samples(&m, "mm2_checkpoint_requests_total"),
        [
            r#"mm2_checkpoint_requests_total{cluster="A",api="Fetch"} 5"#,
            r#"mm2_checkpoint_requests_total{cluster="A",api="OffsetFetch"} 8"#,
            r#"mm2_checkpoint_requests_total{cluster="B",api="Produce"} 4"#,
        ]
    );
}

/// Our latency series are written by a collector, not a registered family;
/// their help, type and samples read as the family's did.
#[test]
fn latency_series_keep_the_help_type_and_samples_of_a_family() {
    let m = metrics();
    m.set_checkpoint_latency("A->B", "g", "t", 0, Duration::from_millis(5));
    let text = exposition(&m);
    assert!(
        text.contains(
            "# HELP mm2_checkpoint_checkpoint_latency_ms Milliseconds from a checkpoint \
             record's timestamp to the broker's acknowledgement, for the latest checkpoint \
             of each series.\n\
             # TYPE mm2_checkpoint_checkpoint_latency_ms gauge\n\
             mm2_checkpoint_checkpoint_latency_ms{flow=\"A->B\",group=\"g\",topic=\"t\",partition=\"0\"} 5\n"
        ),
        "{text}"
    );
}

#[test]
fn content_search_outcomes_are_exact_and_every_fallback_label() {
    use crate::core::content_search::Fallback;
    let labels: Vec<&str> = Fallback::ALL.iter().map(|f| f.label()).collect();
    assert_eq!(CONTENT_SEARCH_OUTCOMES[0], "exact");
    assert_eq!(CONTENT_SEARCH_OUTCOMES[1..], labels[..]);
}

#[test]
fn latencies_set_together_are_the_latencies_set_one_by_one() {
    for granularity in [
        LatencyGranularity::Partition,
        LatencyGranularity::Group,
        LatencyGranularity::Flow,
    ] {
        for mm2 in [true, false] {
            let (one, all) = (with(granularity, mm2), with(granularity, mm2));
            let cps = [("g1", "orders", 0), ("g1", "orders", 1), ("g2", "t", 3)];
            for (g, t, p) in cps {
                one.set_checkpoint_latency("A->B", g, t, p, Duration::from_millis(40));
            }
            all.set_checkpoint_latencies("A->B", cps, Duration::from_millis(40));
            assert_eq!(
                samples(&one, "mm2_checkpoint_checkpoint_latency_ms"),
                samples(&all, "mm2_checkpoint_checkpoint_latency_ms"),
                "{granularity:?} {mm2}"
            );
            // The MM2 families' order is their hash map's, so compared sorted.
            let sorted = |m: &Metrics| {
                let text = super::process::without_process_metrics(&exposition(m));
                let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
                lines.sort();
                lines
            };
            assert_eq!(sorted(&one), sorted(&all), "{granularity:?} {mm2}");
        }
    }
}

proptest::proptest! {
    /// Several calls of [`Metrics::set_checkpoint_latencies`] (its runs of a
    /// group found by topic id and partition) leave the series one call per
    /// checkpoint of the plain search leaves: in order or not, groups
    /// interleaved, series updated, topics new and old, huge values, groups
    /// removed between calls (and the topic names held, counted, the same).
    #[test]
    fn latencies_set_in_runs_match_the_plain_search(
        calls in proptest::collection::vec(
            (
                proptest::collection::vec(
                    (0..3usize, proptest::collection::vec((0..3usize, -1..6i32), 0..8)),
                    0..5,
                ),
                proptest::prop_oneof![0..50u64, proptest::strategy::Just(u64::from(u32::MAX) + 7)],
                proptest::option::of(0..3usize),
            ),
            1..6,
        ),
        by_group in proptest::bool::ANY,
    ) {
        let granularity = if by_group {
            LatencyGranularity::Group
        } else {
            LatencyGranularity::Partition
        };
        let (one, all) = (with(granularity, false), with(granularity, false));
        let groups = ["g-a", "g-b", "g-c"];
        let topics = ["src.orders", "src.orders-x", "other"];
        // The topic names the series hold, with how many series hold each.
        let held = |m: &Metrics| -> BTreeMap<String, usize> {
            let index = m.latency_index();
            index.topics.held().map(|(n, c)| (n.to_owned(), c)).collect()
        };
        for (cps, ms, removed) in &calls {
            let cps: Vec<(&str, &str, i32)> = cps
                .iter()
                .flat_map(|(g, run)| run.iter().map(|&(t, p)| (groups[*g], topics[t], p)))
                .collect();
            let latency = Duration::from_millis(*ms);
            for &(g, t, p) in &cps {
                one.set_checkpoint_latency("A->B", g, t, p, latency);
            }
            all.set_checkpoint_latencies("A->B", cps.iter().copied(), latency);
            if let Some(g) = removed {
                one.remove_checkpoint_latency_group("A->B", groups[*g]);
                all.remove_checkpoint_latency_group("A->B", groups[*g]);
            }
            let series = |m: &Metrics| samples(m, "mm2_checkpoint_checkpoint_latency_ms{");
            proptest::prop_assert_eq!(series(&one), series(&all));
            proptest::prop_assert_eq!(held(&one), held(&all));
        }
    }
}

mod process_metrics {
    use super::super::process::{ProcessSample, boot_time, max_open_files, stat_fields, status_kb};
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        // A command name with a space and a parenthesis in it.
        let stat = "4242 (mm2 (x) y) S 1 4242 4242 0 -1 4194560 2000 0 0 0 \
                    150 25 0 0 20 0 9 0 123456 20000000 5000 18446744073709551615";
        let f = stat_fields(stat).expect("parsed");
        assert_eq!(f.cpu_ticks, 175);
        assert_eq!(f.start_ticks, 123_456);
        assert_eq!(stat_fields("no parenthesis"), None);
        assert_eq!(stat_fields("1 (x) S 1 2"), None);
    }

    #[test]
    fn status_limits_and_boot_time_are_read() {
        let status =
            "Name:\tmm2-checkpoint\nVmSize:\t   20480 kB\nVmRSS:\t    9000 kB\nThreads:\t9\n";
        assert_eq!(status_kb(status, "VmRSS:"), Some(9000.0 * 1024.0));
        assert_eq!(status_kb(status, "VmSize:"), Some(20480.0 * 1024.0));
        assert_eq!(status_kb(status, "VmHWM:"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max open files            1048576              1048576              files     \n";
        assert_eq!(max_open_files(limits), Some(1_048_576.0));
        let unlimited =
            "Max open files            unlimited            unlimited            files     \n";
        assert_eq!(max_open_files(unlimited), None);
        assert_eq!(
            boot_time("cpu  1 2 3\nbtime 1796600000\n"),
            Some(1_796_600_000)
        );
        assert_eq!(boot_time("cpu  1 2 3\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_scrape_carries_the_process_metrics_on_linux() {
        let sample = ProcessSample::read();
        assert!(sample.cpu_seconds.is_some_and(|v| v >= 0.0), "{sample:?}");
        assert!(sample.resident_bytes.is_some_and(|v| v > 0.0), "{sample:?}");
        assert!(sample.open_fds.is_some_and(|v| v >= 3.0), "{sample:?}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs_f64();
        let start = sample.start_time_seconds.expect("start time");
        assert!(
            start <= now + 1.0 && start > now - 86_400.0,
            "{start} vs {now}"
        );
        let text = Metrics::new("test", "none")
            .encode_prometheus()
            .expect("encoded");
        for name in [
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_virtual_memory_bytes ",
            "process_open_fds ",
            "process_start_time_seconds ",
            "process_threads ",
            "# TYPE process_cpu_seconds_total counter",
        ] {
            assert!(text.contains(name), "{name} missing:\n{text}");
        }
    }
}

fn register_a_to_b(m: &Metrics) {
    m.register_flow(&FlowIdentity {
        name: "A->B",
        source: "A",
        target: "B",
        connector_source: "A",
        connector_target: "B",
        offset_syncs_topic: "mm2-offset-syncs.B.internal",
    });
}

#[test]
fn a_flow_this_instance_does_not_run_exports_no_round_timestamp_and_owned_0() {
    let m = metrics();
    register_a_to_b(&m);
    assert!(samples(&m, "mm2_checkpoint_last_round_timestamp_seconds").is_empty());
    assert_eq!(
        samples(&m, "mm2_checkpoint_flow_owned"),
        ["mm2_checkpoint_flow_owned{flow=\"A->B\"} 0"]
    );
}

#[test]
fn a_running_flow_exports_owned_1_and_a_timestamp_from_0_to_its_last_round() {
    let m = metrics();
    register_a_to_b(&m);
    m.flow_running("A->B");
    assert_eq!(
        samples(&m, "mm2_checkpoint_flow_owned"),
        ["mm2_checkpoint_flow_owned{flow=\"A->B\"} 1"]
    );
    assert_eq!(
        samples(&m, "mm2_checkpoint_last_round_timestamp_seconds"),
        ["mm2_checkpoint_last_round_timestamp_seconds{flow=\"A->B\"} 0.0"]
    );
    m.round_succeeded("A->B");
    let line = samples(&m, "mm2_checkpoint_last_round_timestamp_seconds").concat();
    let value: f64 = line
        .rsplit(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .expect("a value");
    assert!(value > 1.7e9, "{line}");
}

#[test]
fn a_stopped_flow_drops_its_timestamp_and_latency_and_exports_owned_0() {
    for granularity in [
        LatencyGranularity::Partition,
        LatencyGranularity::Group,
        LatencyGranularity::Flow,
    ] {
        let m = with(granularity, true);
        register_a_to_b(&m);
        m.flow_running("A->B");
        m.round_succeeded("A->B");
        m.set_checkpoint_latency("A->B", "g", "t", 0, Duration::from_millis(3));
        m.set_untranslatable_partitions("A->B", UntranslatableReason::NoSync, 4);
        m.set_precise_fallback_partitions("A->B", 2);
        assert!(!samples(&m, "mm2_checkpoint_checkpoint_latency_ms{").is_empty());
        m.flow_stopped("A->B");
        for line in samples(&m, "mm2_checkpoint_untranslatable_partitions{")
            .iter()
            .chain(&samples(&m, "mm2_checkpoint_precise_fallback_partitions{"))
        {
            assert!(line.ends_with(" 0"), "{granularity:?}: {line}");
        }
        assert_eq!(
            samples(&m, "mm2_checkpoint_flow_owned"),
            ["mm2_checkpoint_flow_owned{flow=\"A->B\"} 0"],
            "{granularity:?}"
        );
        let text = exposition(&m);
        for gone in [
            "mm2_checkpoint_last_round_timestamp_seconds{",
            "mm2_checkpoint_checkpoint_latency_ms{",
            "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms",
        ] {
            assert!(
                !text.lines().any(|l| l.starts_with(gone)),
                "{granularity:?}: {gone} left in\n{text}"
            );
        }
        // Owning it again starts from 0, not from the former tenure's round.
        m.flow_running("A->B");
        assert_eq!(
            samples(&m, "mm2_checkpoint_last_round_timestamp_seconds"),
            ["mm2_checkpoint_last_round_timestamp_seconds{flow=\"A->B\"} 0.0"]
        );
    }
}

#[test]
fn a_member_exports_its_fenced_writes_and_takeovers_at_0_from_its_start() {
    let m = metrics();
    assert!(samples(&m, "mm2_checkpoint_fenced_writes_total").is_empty());
    m.set_member_role("A->B", MemberRole::Joining);
    assert_eq!(
        samples(&m, "mm2_checkpoint_fenced_writes_total"),
        ["mm2_checkpoint_fenced_writes_total{flow=\"A->B\"} 0"]
    );
    assert_eq!(
        samples(&m, "mm2_checkpoint_membership_takeovers_total"),
        ["mm2_checkpoint_membership_takeovers_total{flow=\"A->B\"} 0"]
    );
    m.fenced_write("A->B");
    assert_eq!(
        samples(&m, "mm2_checkpoint_fenced_writes_total"),
        ["mm2_checkpoint_fenced_writes_total{flow=\"A->B\"} 1"]
    );
}

#[test]
fn last_round_ms_is_none_before_the_first_round_then_its_time() {
    let m = metrics();
    register_a_to_b(&m);
    // Registered at 0: no round yet.
    assert_eq!(m.last_round_ms("A->B"), None);
    assert_eq!(m.last_round_ms("X->Y"), None);
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    m.round_succeeded("A->B");
    let at = m.last_round_ms("A->B").expect("a round");
    assert!(at >= before - 1, "{at} < {before}");
}
