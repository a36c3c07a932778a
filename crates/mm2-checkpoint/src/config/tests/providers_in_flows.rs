//! Config providers in flows.

use super::*;

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
