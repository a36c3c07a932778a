//! SASL OAUTHBEARER settings (KIP-768, OIDC client credentials; Kafka 4.1's
//! `file://` token): what Kafka's `OAuthBearerLoginCallbackHandler` reads
//! from the client config and from the `OAuthBearerLoginModule` JAAS entry.
//! See docs/configuration.md, "OAUTHBEARER / OIDC".

use std::cell::Cell;
use std::path::PathBuf;
use std::time::Duration;

use kafka_lite::Secret;

use super::cluster::Keys;
use crate::config::check::{ConfigWarning, Unknown};
use crate::config::error::ConfigError;
use crate::config::jaas::JaasEntry;
use crate::config::setting::Setting;
use crate::config::setting::parse_bool;

/// The login module OAUTHBEARER takes.
pub(super) const OAUTH_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

/// The login callback handler class names that mean "fetch tokens from
/// `sasl.oauthbearer.token.endpoint.url`": Kafka's current name and the
/// name before Kafka 3.4.
pub(super) const OAUTH_LOGIN_HANDLERS: [&str; 2] = [
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
];

/// The client keys of Kafka 4.1's JWT bearer grant (KIP-1139).
const JWT_BEARER_KEYS: [&str; 11] = [
    "sasl.oauthbearer.assertion.algorithm",
    "sasl.oauthbearer.assertion.claim.aud",
    "sasl.oauthbearer.assertion.claim.exp.seconds",
    "sasl.oauthbearer.assertion.claim.iss",
    "sasl.oauthbearer.assertion.claim.jti.include",
    "sasl.oauthbearer.assertion.claim.nbf.seconds",
    "sasl.oauthbearer.assertion.claim.sub",
    "sasl.oauthbearer.assertion.file",
    "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.template.file",
];

/// Why the JWT bearer grant's keys are refused, and what to use instead.
const JWT_BEARER_REFUSAL: &str = "belongs to the JWT bearer grant (Kafka 4.1, KIP-1139, \
    JwtBearerJwtRetriever), which mm2-checkpoint does not support; use the client credentials \
    grant (clientId and clientSecret in sasl.jaas.config) or a file:// token endpoint";

/// Where tokens come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenEndpoint {
    /// An OIDC token endpoint (`https://`, or `http://` as Kafka allows).
    Url(String),
    /// A file holding a JWT (`file://`), re-read at each refresh.
    File(PathBuf),
}

/// OAUTHBEARER settings of a cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct OAuthSettings {
    /// `sasl.oauthbearer.token.endpoint.url`.
    pub token_endpoint: TokenEndpoint,
    /// `clientId` (JAAS) or `sasl.oauthbearer.client.credentials.client.id`;
    /// empty for a `file://` endpoint.
    pub client_id: String,
    /// `clientSecret` (JAAS) or `sasl.oauthbearer.client.credentials.client.secret`.
    pub client_secret: Secret,
    /// `scope` (JAAS) or `sasl.oauthbearer.scope`.
    pub scope: Option<String>,
    /// `sasl.oauthbearer.header.urlencode` (default false): URL-encode the
    /// client id and secret in the token request's Basic header.
    pub header_urlencode: bool,
    /// `sasl.oauthbearer.sub.claim.name` (default `sub`).
    pub sub_claim_name: String,
    /// `sasl.oauthbearer.scope.claim.name` (default `scope`).
    pub scope_claim_name: String,
    /// `sasl.login.retry.backoff.ms` (default 100 ms).
    pub retry_backoff: Duration,
    /// `sasl.login.retry.backoff.max.ms` (default 10 s).
    pub retry_backoff_max: Duration,
    /// `sasl.login.refresh.window.factor` (0.5–1.0, default 0.8).
    pub refresh_window_factor: f64,
    /// `sasl.login.refresh.window.jitter` (0–0.25, default 0.05).
    pub refresh_window_jitter: f64,
    /// `sasl.login.refresh.min.period.seconds` (0–900, default 60).
    pub refresh_min_period: Duration,
    /// `sasl.login.refresh.buffer.seconds` (0–3600, default 300).
    pub refresh_buffer: Duration,
    /// `sasl.login.connect.timeout.ms` (default 10 s here; Kafka leaves it
    /// to the JDK).
    pub connect_timeout: Duration,
    /// `sasl.login.read.timeout.ms` (default 10 s here).
    pub read_timeout: Duration,
    /// SASL extensions from the JAAS options `extension_<name>`.
    pub extensions: Vec<(String, String)>,
    /// The CA to trust for the token endpoint: the JAAS option
    /// `ssl.truststore.location` (a PEM file, `ssl.truststore.type=PEM`);
    /// `None` trusts the built-in roots.
    pub trust_pem: Option<PathBuf>,
    /// JAAS `ssl.endpoint.identification.algorithm` (empty turns off host
    /// name verification for the token endpoint).
    pub verify_hostname: bool,
}

// The two fractions are validated numbers in fixed ranges, never NaN.
impl Eq for OAuthSettings {}

/// Reads the OAUTHBEARER settings from the client keys and the JAAS entry
/// (`None`: the entry is one unread provider reference, `--no-secrets`).
pub(super) fn build_oauth(
    keys: &Keys<'_>,
    jaas: Option<(&JaasEntry, &Setting)>,
    not_read: &str,
) -> Result<OAuthSettings, Unknown> {
    let failed = Cell::new(false);
    let fail = |e: ConfigError| {
        keys.fail(e);
        failed.set(true);
    };

    let handler = match keys.get("sasl.login.callback.handler.class") {
        None => {
            fail(ConfigError::for_key(
                keys.missing("sasl.login.callback.handler.class"),
                format!(
                    "is not set, so Kafka would use its unsecured test handler for OAUTHBEARER \
                     (OAuthBearerUnsecuredLoginCallbackHandler), which mm2-checkpoint does not \
                     support; set it to {} and sasl.oauthbearer.token.endpoint.url",
                    OAUTH_LOGIN_HANDLERS[0]
                ),
            ));
            None
        }
        Some(s) => s.text().ok().map(|v| (s, v.trim())),
    };
    if let Some((s, name)) = handler
        && !OAUTH_LOGIN_HANDLERS.contains(&name)
    {
        fail(s.error(format!(
            "custom login callback handler `{name}` is not supported by mm2-checkpoint; use {} \
             (built in: tokens from sasl.oauthbearer.token.endpoint.url)",
            OAUTH_LOGIN_HANDLERS[0]
        )));
    }

    let endpoint = match keys.get("sasl.oauthbearer.token.endpoint.url") {
        None => {
            fail(ConfigError::for_key(
                keys.missing("sasl.oauthbearer.token.endpoint.url"),
                "is required for OAUTHBEARER: the OIDC token endpoint (https://...) or a file \
                 holding a JWT (file:///path)",
            ));
            None
        }
        Some(s) => match s.text() {
            Err(Unknown) => None,
            Ok(v) => match parse_endpoint(v.trim()) {
                Ok(e) => {
                    if v.trim().starts_with("http://") {
                        keys.checker.warn(ConfigWarning::new(
                            Some(s.origin.clone()),
                            s.line,
                            format!(
                                "cluster `{}`: the token endpoint is plain http://, so the client \
                                 secret and the tokens travel unencrypted",
                                keys.alias
                            ),
                        ));
                    }
                    Some(e)
                }
                Err(m) => {
                    fail(s.error(m));
                    None
                }
            },
        },
    };

    // Kafka 4.1's JWT bearer grant (KIP-1139) is not built in: say so rather
    // than ask for client credentials the file deliberately does not have.
    let mut jwt_bearer = false;
    if let Some(s) = keys.get("sasl.oauthbearer.jwt.retriever.class")
        && s.text()
            .is_ok_and(|v| v.trim().ends_with(".JwtBearerJwtRetriever"))
    {
        fail(s.error(JWT_BEARER_REFUSAL));
        jwt_bearer = true;
    }
    for key in JWT_BEARER_KEYS {
        if let Some(s) = keys.get(key) {
            fail(s.error(JWT_BEARER_REFUSAL));
            jwt_bearer = true;
        }
    }
    if jwt_bearer {
        return Err(Unknown);
    }

    // Client config first, then the JAAS option, as Kafka's retriever does.
    let option = |config_key: &str, jaas_name: &str| -> Option<String> {
        if let Some(s) = keys.get(config_key) {
            return Some(
                s.text()
                    .map(str::to_string)
                    .unwrap_or_else(|_| not_read.into()),
            );
        }
        match jaas {
            Some((entry, _)) => entry.options.get(jaas_name).cloned(),
            None => Some(not_read.into()),
        }
    };
    let client_id = option("sasl.oauthbearer.client.credentials.client.id", "clientId");
    let client_secret = option(
        "sasl.oauthbearer.client.credentials.client.secret",
        "clientSecret",
    );
    let scope = option("sasl.oauthbearer.scope", "scope").filter(|s| !s.trim().is_empty());
    let (client_id, client_secret) = match &endpoint {
        Some(TokenEndpoint::Url(_)) => {
            let need = |value: Option<String>, config_key: &str, jaas_name: &str| {
                value.unwrap_or_else(|| {
                    let message = format!(
                        "has no `{jaas_name}` option (nor is {config_key} set): the token \
                         endpoint needs the client credentials"
                    );
                    fail(match jaas {
                        Some((_, s)) => s.error(message),
                        None => keys.error("sasl.jaas.config", message),
                    });
                    String::new()
                })
            };
            let id = need(
                client_id,
                "sasl.oauthbearer.client.credentials.client.id",
                "clientId",
            );
            let secret = need(
                client_secret,
                "sasl.oauthbearer.client.credentials.client.secret",
                "clientSecret",
            );
            (id, secret)
        }
        _ => (
            client_id.unwrap_or_default(),
            client_secret.unwrap_or_default(),
        ),
    };

    let mut extensions = Vec::new();
    let mut trust_pem = None;
    let mut verify_hostname = true;
    if let Some((entry, setting)) = jaas {
        for (name, value) in &entry.options {
            if let Some(ext) = name.strip_prefix("extension_") {
                if ext.is_empty() || !ext.bytes().all(|b| b.is_ascii_alphabetic()) || ext == "auth"
                {
                    fail(setting.error(format!(
                        "option `{name}`: a SASL extension name must be letters only and not \
                         `auth` (RFC 7628)"
                    )));
                } else {
                    extensions.push((ext.to_string(), value.clone()));
                }
            }
        }
        let ssl = |n: &str| entry.options.get(n).map(|v| v.trim().to_string());
        if let Some(kind) = ssl("ssl.truststore.type")
            && !kind.eq_ignore_ascii_case("PEM")
        {
            fail(setting.error(format!(
                "option ssl.truststore.type={kind}: the token endpoint's trust store must be a \
                 PEM file here"
            )));
        }
        trust_pem = ssl("ssl.truststore.location").map(PathBuf::from);
        if let Some(algorithm) = ssl("ssl.endpoint.identification.algorithm") {
            verify_hostname = !algorithm.is_empty();
        }
        for refused in [
            "ssl.truststore.certificates",
            "ssl.keystore.location",
            "ssl.keystore.type",
        ] {
            if entry.options.contains_key(refused) {
                fail(setting.error(format!(
                    "option {refused} is not supported for the token endpoint; give its CA as \
                     a PEM file in ssl.truststore.location"
                )));
            }
        }
    }

    let number = |key: &str, default: f64, min: f64, max: f64| -> f64 {
        let Some(s) = keys.get(key) else {
            return default;
        };
        let Ok(text) = s.text() else {
            return default;
        };
        match text.trim().parse::<f64>() {
            Ok(v) if (min..=max).contains(&v) => v,
            _ => {
                fail(s.error(format!(
                    "`{}` is not a number between {min} and {max}",
                    text.trim()
                )));
                default
            }
        }
    };
    let retry_backoff = number("sasl.login.retry.backoff.ms", 100.0, 0.0, 3_600_000.0);
    let retry_backoff_max = number(
        "sasl.login.retry.backoff.max.ms",
        10_000.0,
        0.0,
        3_600_000.0,
    );
    let refresh_window_factor = number("sasl.login.refresh.window.factor", 0.8, 0.5, 1.0);
    let refresh_window_jitter = number("sasl.login.refresh.window.jitter", 0.05, 0.0, 0.25);
    let refresh_min_period = number("sasl.login.refresh.min.period.seconds", 60.0, 0.0, 900.0);
    let refresh_buffer = number("sasl.login.refresh.buffer.seconds", 300.0, 0.0, 3600.0);
    let connect_timeout = number("sasl.login.connect.timeout.ms", 10_000.0, 1.0, 3_600_000.0);
    let read_timeout = number("sasl.login.read.timeout.ms", 10_000.0, 1.0, 3_600_000.0);
    let claim = |key: &str, default: &str| {
        keys.get(key)
            .and_then(|s| s.text().ok())
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| default.to_string())
    };
    let sub_claim_name = claim("sasl.oauthbearer.sub.claim.name", "sub");
    let scope_claim_name = claim("sasl.oauthbearer.scope.claim.name", "scope");
    // Kafka 3.9+ (KIP-1025): URL-encode the client id and secret in the
    // token request's Basic header.
    let header_urlencode = match keys.get("sasl.oauthbearer.header.urlencode") {
        Some(s) if s.text().is_ok() => parse_bool(s).unwrap_or_else(|e| {
            fail(e);
            false
        }),
        _ => false,
    };
    if let Some(s) = keys.get("sasl.oauthbearer.jwt.retriever.class")
        && s.text().is_ok_and(|v| {
            !v.trim()
                .starts_with("org.apache.kafka.common.security.oauthbearer.")
        })
    {
        fail(s.error(
            "custom JWT retriever classes are not supported by mm2-checkpoint; remove the key \
             (the token endpoint URL's scheme chooses the built-in retriever)",
        ));
    }

    let ms = |v: f64| Duration::from_millis(v as u64);
    let secs = |v: f64| Duration::from_secs(v as u64);
    if failed.get() {
        return Err(Unknown);
    }
    let token_endpoint = endpoint.ok_or(Unknown)?;
    Ok(OAuthSettings {
        token_endpoint,
        client_id,
        client_secret: Secret::new(client_secret),
        scope,
        header_urlencode,
        sub_claim_name,
        scope_claim_name,
        retry_backoff: ms(retry_backoff),
        retry_backoff_max: ms(retry_backoff_max),
        refresh_window_factor,
        refresh_window_jitter,
        refresh_min_period: secs(refresh_min_period),
        refresh_buffer: secs(refresh_buffer),
        connect_timeout: ms(connect_timeout),
        read_timeout: ms(read_timeout),
        extensions,
        trust_pem,
        verify_hostname,
    })
}

/// Parses `sasl.oauthbearer.token.endpoint.url`.
fn parse_endpoint(url: &str) -> Result<TokenEndpoint, String> {
    if let Some(path) = url.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err(format!(
                "`{url}`: a file URL needs an absolute path (file:///path/to/token.jwt)"
            ));
        }
        return Ok(TokenEndpoint::File(PathBuf::from(path)));
    }
    kafka_lite::HttpUrl::parse(url)?;
    Ok(TokenEndpoint::Url(url.to_string()))
}

#[cfg(test)]
mod tests {
    use super::TokenEndpoint;
    use super::parse_endpoint;

    #[test]
    fn endpoints_are_https_http_or_absolute_files() {
        assert_eq!(
            parse_endpoint("https://idp/token").unwrap(),
            TokenEndpoint::Url("https://idp/token".into())
        );
        assert_eq!(
            parse_endpoint("file:///var/run/token.jwt").unwrap(),
            TokenEndpoint::File("/var/run/token.jwt".into())
        );
        assert!(parse_endpoint("file://relative").is_err());
        assert!(parse_endpoint("ldap://x").is_err());
        assert!(
            !parse_endpoint("https://u:pw@idp/")
                .unwrap_err()
                .contains("pw")
        );
    }
}
