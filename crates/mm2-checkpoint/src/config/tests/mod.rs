//! Behaviour tests for turning `mm2.properties` into flows, one file per
//! subject; the helpers they share are here.

mod checkpoint_keys;
mod connection_layering;
mod connector_input;
mod connector_layering;
mod defaults;
mod every_error;
mod files;
mod msk_iam;
mod providers_in_flows;
mod sasl;
mod secrets_and_rendering;
mod tls;
mod which_flows;

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
const TEST_CERT: &str = include_str!("../../../tests/data/test_cert.pem");
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

const PROVIDERS: &str = "config.providers = env,file\n\
    config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
    config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n";

fn sasl_scram(jaas: &str) -> String {
    format!(
        "{BASE}{PROVIDERS}A.security.protocol = SASL_PLAINTEXT\nA.sasl.mechanism = SCRAM-SHA-512\n\
         A.sasl.jaas.config = {jaas}\n"
    )
}

fn ssl(extra: &str) -> String {
    format!("{BASE}B.security.protocol = SSL\n{extra}\n")
}

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
