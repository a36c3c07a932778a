//! SASL.

use super::*;

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
