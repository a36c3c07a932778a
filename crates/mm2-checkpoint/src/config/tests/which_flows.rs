//! Which flows run.

use super::*;

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
