//! Secrets and rendering.

use super::*;

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
