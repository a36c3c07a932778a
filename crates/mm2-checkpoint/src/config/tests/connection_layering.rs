//! Layering of connection keys.

use super::*;

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
