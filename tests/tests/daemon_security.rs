//! A flow whose source is reached over SASL/SCRAM-SHA-512 and whose target is
//! reached over TLS (PEM trust store): checkpoints and group sync still work.
//! Each TLS test runs twice: with the provider chosen for this CPU, and with
//! the portable provider forced (`MM2_TLS_PROVIDER=portable`,
//! docs/tls-providers.md).

use e2e::binary::run_once_with_env;
use e2e::world::{World, rt};
use e2e::{Listener, clusters};

/// The environment of a run with the provider chosen automatically.
const AUTO: &[(&str, &str)] = &[];
/// The environment of a run with the portable provider forced.
const PORTABLE: &[(&str, &str)] = &[("MM2_TLS_PROVIDER", "portable")];

/// Asserts the run's log names the provider `env` asks for (the automatic
/// choice names one too).
fn assert_provider_logged(stderr: &str, env: &[(&str, &str)]) {
    let wanted = if env.is_empty() {
        "TLS crypto provider: "
    } else {
        "TLS crypto provider: portable"
    };
    assert!(
        stderr.contains(wanted),
        "no `{wanted}` in the log:\n{stderr}"
    );
}

#[test]
fn scram_source_and_tls_target_emit_and_sync() {
    scram_source_and_tls_target(AUTO);
}

#[test]
fn scram_source_and_tls_target_with_the_portable_provider() {
    scram_source_and_tls_target(PORTABLE);
}

#[test]
fn a_target_requiring_a_client_certificate_gets_the_pem_keystore() {
    client_certificate_target(AUTO);
}

#[test]
fn a_client_certificate_with_the_portable_provider() {
    client_certificate_target(PORTABLE);
}

fn scram_source_and_tls_target(env: &[(&str, &str)]) {
    let rt = rt();
    let w = World::new(&rt, "security", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let c = clusters();
    let scram = &c.source().sasl_users.scram_sha_512;
    let text = format!(
        "clusters = {s}, {t}\n\
         {s}.bootstrap.servers = {sb}\n\
         {s}.security.protocol = SASL_PLAINTEXT\n\
         {s}.sasl.mechanism = SCRAM-SHA-512\n\
         {s}.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{user}\" password=\"{password}\";\n\
         {t}.bootstrap.servers = {tb}\n\
         {t}.security.protocol = SSL\n\
         {t}.ssl.truststore.type = PEM\n\
         {t}.ssl.truststore.location = {ca}\n\
         {s}->{t}.enabled = true\n\
         groups = {group}\n\
         sync.group.offsets.enabled = true\n\
         admin.timeout.ms = 20000\n",
        s = w.s,
        t = w.t,
        sb = c.source().bootstrap.get(Listener::SaslPlaintext),
        tb = c.target().bootstrap.get(Listener::Ssl),
        user = scram.user,
        password = scram.password.expose(),
        ca = c.target().tls.ca_pem.display(),
    );
    let config = w.dir.join("mm2-secure.properties");
    std::fs::write(&config, text).expect("write config");
    let out = run_once_with_env(&config, env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains(scram.password.expose()),
        "the password was logged"
    );
    assert_provider_logged(&stderr, env);
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(group.clone(), w.remote_topic(), 0, 10, 13)]);
    assert_eq!(w.target_offsets(&rt, &group), [(0, 13)].into());
}

fn client_certificate_target(env: &[(&str, &str)]) {
    let rt = rt();
    let w = World::new(&rt, "mtls", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let c = clusters();
    let tls = &c.target().tls;
    // One PEM file with the private key and the certificate chain, as Kafka's
    // `ssl.keystore.type=PEM` with `ssl.keystore.location` expects.
    let keystore = w.dir.join("client-keystore.pem");
    let mut pem = std::fs::read_to_string(&tls.client_key_pem).expect("client key");
    pem.push_str(&std::fs::read_to_string(&tls.client_cert_pem).expect("client cert"));
    std::fs::write(&keystore, pem).expect("write keystore");
    let config = w.mtls_target_properties(
        &group,
        "mm2-mtls.properties",
        &format!(
            "{{t}}.ssl.truststore.type = PEM\n\
             {{t}}.ssl.truststore.location = {ca}\n\
             {{t}}.ssl.keystore.type = PEM\n\
             {{t}}.ssl.keystore.location = {ks}",
            ca = tls.ca_pem.display(),
            ks = keystore.display(),
        ),
    );
    let out = run_once_with_env(&config, env);
    assert_provider_logged(&String::from_utf8_lossy(&out.stderr), env);
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(group, w.remote_topic(), 0, 10, 13)]);
}
