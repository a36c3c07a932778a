//! OAuth bearer tokens for SASL OAUTHBEARER, the way Kafka's Java client
//! gets them (KIP-768): from an OIDC token endpoint with the client
//! credentials grant, or from a file holding a JWT (Kafka 4.1's
//! `file://` token endpoint). [`OAuthBearerTokens`] is the
//! [`CredentialProvider`] that connections ask at each (re-)authentication:
//! it keeps the current token and fetches a new one once the refresh point
//! is reached.
//!
//! The token request is what Kafka's `ClientCredentialsJwtRetriever` sends:
//! `POST` with `Authorization: Basic base64(clientId:clientSecret)`, a form
//! body `grant_type=client_credentials[&scope=...]`, `Accept:
//! application/json`. Failures are retried with exponential backoff from
//! `retry_backoff` for at most `retry_backoff_max` in all, except for
//! answers that say the request itself is wrong (400, 401, 403, ...). The
//! JWT is not verified (the broker does that); its `exp` and subject claims
//! are read, as Kafka's client-side validator requires them.
//!
//! The refresh point follows Kafka's `sasl.login.refresh.*` settings: at
//! `window_factor` of the token's lifetime plus up to `window_jitter` of it
//! at random; then not sooner than `min_period` from now and not later
//! than `buffer` before expiry, both ignored when together they exceed the
//! token's remaining lifetime. A failed refresh keeps the current token while
//! it is valid.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD as BASE64, URL_SAFE_NO_PAD as BASE64URL};
use tokio::sync::Mutex;

use crate::credentials::{BearerToken, BoxFuture, CredentialError, CredentialProvider, Secret};
use crate::http::{HttpClient, HttpRequest, HttpUrl};

/// Where tokens come from.
#[derive(Debug, Clone)]
pub enum TokenSource {
    /// An OIDC token endpoint, with the client credentials grant.
    ClientCredentials {
        /// The token endpoint (`https://`, or `http://`).
        url: HttpUrl,
        /// The client id.
        client_id: String,
        /// The client secret (redacted in `Debug`).
        client_secret: Secret,
        /// The `scope` parameter, if any.
        scope: Option<String>,
        /// URL-encode the client id and secret before they are joined for
        /// the Basic header (Kafka's `sasl.oauthbearer.header.urlencode`,
        /// RFC 6749 section 2.3.1); Kafka's default is `false`.
        urlencode_header: bool,
        /// The HTTP client (its timeouts and TLS trust).
        http: HttpClient,
    },
    /// A file holding a JWT, read again at each refresh.
    File(PathBuf),
}

/// When to refresh a token; Kafka's `sasl.login.refresh.*` settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefreshConfig {
    /// Fraction of the lifetime after which to refresh (0.5–1.0; Kafka's
    /// default 0.8).
    pub window_factor: f64,
    /// Up to this fraction of the lifetime is added at random (0–0.25;
    /// default 0.05).
    pub window_jitter: f64,
    /// Refresh no sooner than this after the token was fetched (default 60 s).
    pub min_period: Duration,
    /// Refresh at least this long before expiry (default 300 s).
    pub buffer: Duration,
}

impl Default for RefreshConfig {
    fn default() -> Self {
        RefreshConfig {
            window_factor: 0.8,
            window_jitter: 0.05,
            min_period: Duration::from_secs(60),
            buffer: Duration::from_secs(300),
        }
    }
}

/// Settings of an [`OAuthBearerTokens`] provider.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// Where tokens come from.
    pub source: TokenSource,
    /// The claim that names the principal (`sub` by default); it must be
    /// present and a non-empty string.
    pub sub_claim_name: String,
    /// The claim holding the scope (`scope` by default); read, not required.
    pub scope_claim_name: String,
    /// First wait between attempts of one fetch (Kafka's default 100 ms).
    pub retry_backoff: Duration,
    /// How long one fetch keeps retrying in all (Kafka's default 10 s).
    pub retry_backoff_max: Duration,
    /// When to refresh.
    pub refresh: RefreshConfig,
    /// SASL extensions to send with every token.
    pub extensions: Vec<(String, String)>,
}

/// A token and when to replace it.
struct Current {
    token: BearerToken,
    refresh_at: SystemTime,
}

/// The [`CredentialProvider`] of OAuth bearer tokens; see the module
/// documentation.
pub struct OAuthBearerTokens {
    config: OAuthConfig,
    current: Mutex<Option<Current>>,
}

impl fmt::Debug for OAuthBearerTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthBearerTokens")
            .field("source", &self.source_name())
            .finish()
    }
}

impl OAuthBearerTokens {
    /// A provider with no token yet; the first [`credential`](CredentialProvider::credential)
    /// call fetches one.
    pub fn new(config: OAuthConfig) -> Self {
        OAuthBearerTokens {
            config,
            current: Mutex::new(None),
        }
    }

    /// Where tokens come from, for messages: `token endpoint <url>` or
    /// `token file <path>`.
    pub fn source_name(&self) -> String {
        match &self.config.source {
            TokenSource::ClientCredentials { url, .. } => format!("token endpoint {url}"),
            TokenSource::File(path) => format!("token file {}", path.display()),
        }
    }

    fn error(&self, detail: String, retriable: bool) -> CredentialError {
        CredentialError {
            source_name: self.source_name(),
            detail,
            retriable,
        }
    }

    /// The current token, fetching a new one when due.
    async fn token(&self) -> Result<BearerToken, CredentialError> {
        let mut current = self.current.lock().await;
        let now = SystemTime::now();
        if let Some(c) = current.as_ref()
            && now < c.refresh_at
        {
            return Ok(c.token.clone());
        }
        match self.fetch_with_retries().await {
            Ok((token, fetched_at)) => {
                let refresh_at = refresh_time(
                    &self.config.refresh,
                    fetched_at,
                    token.expires_at.unwrap_or(fetched_at),
                    SystemTime::now(),
                    jitter_fraction(),
                );
                tracing::info!(
                    source = %self.source_name(),
                    expires_in_s = token.expires_at.and_then(|e| e.duration_since(SystemTime::now()).ok()).map(|d| d.as_secs()),
                    refresh_in_s = refresh_at.duration_since(SystemTime::now()).map(|d| d.as_secs()).unwrap_or(0),
                    "fetched an OAuth token"
                );
                *current = Some(Current {
                    token: token.clone(),
                    refresh_at,
                });
                Ok(token)
            }
            Err(e) => match current.as_ref() {
                Some(c)
                    if c.token
                        .expires_at
                        .is_some_and(|exp| SystemTime::now() < exp) =>
                {
                    tracing::warn!(error = %e, "refreshing the OAuth token failed; the current one is still valid");
                    Ok(c.token.clone())
                }
                _ => Err(e),
            },
        }
    }

    /// One fetch with Kafka's retries; returns the token and when it was
    /// fetched.
    async fn fetch_with_retries(&self) -> Result<(BearerToken, SystemTime), CredentialError> {
        let started = tokio::time::Instant::now();
        let deadline = started + self.config.retry_backoff_max;
        let mut attempt: u32 = 0;
        loop {
            let fetched_at = SystemTime::now();
            match self.fetch_once().await {
                Ok(token) => return Ok((token, fetched_at)),
                Err(e) if !e.retriable => return Err(e),
                Err(e) => {
                    attempt += 1;
                    let now = tokio::time::Instant::now();
                    if now >= deadline {
                        return Err(self.error(
                            format!("{} (gave up after {attempt} attempts)", e.detail),
                            true,
                        ));
                    }
                    let wait = self
                        .config
                        .retry_backoff
                        .saturating_mul(1u32 << (attempt - 1).min(20))
                        .min(deadline - now);
                    tracing::debug!(error = %e, wait_ms = wait.as_millis() as u64, "token fetch failed; retrying");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn fetch_once(&self) -> Result<BearerToken, CredentialError> {
        let jwt = match &self.config.source {
            TokenSource::File(path) => {
                let owned = path.clone();
                let text = tokio::task::spawn_blocking(move || std::fs::read_to_string(owned))
                    .await
                    .map_err(|e| self.error(format!("reading it was interrupted: {e}"), true))?
                    .map_err(|e| self.error(format!("cannot read it: {e}"), true))?;
                text.trim().to_string()
            }
            TokenSource::ClientCredentials {
                url,
                client_id,
                client_secret,
                scope,
                urlencode_header,
                http,
            } => {
                let authorization =
                    basic_authorization(client_id, client_secret, *urlencode_header);
                let mut body = "grant_type=client_credentials".to_string();
                if let Some(scope) = scope.as_deref().filter(|s| !s.trim().is_empty()) {
                    body.push_str("&scope=");
                    body.push_str(&form_encode(scope));
                }
                let response = http
                    .send(HttpRequest {
                        method: "POST",
                        url,
                        headers: vec![
                            ("Accept", "application/json".into()),
                            ("Authorization", authorization),
                            ("Cache-Control", "no-cache".into()),
                            ("Content-Type", "application/x-www-form-urlencoded".into()),
                        ],
                        body: body.into_bytes(),
                    })
                    .await
                    .map_err(|e| self.error(e.detail, e.retriable))?;
                if !matches!(response.status, 200 | 201) {
                    return Err(self.error(
                        format!(
                            "answered HTTP {}: {}",
                            response.status,
                            describe_error_body(&response.body)
                        ),
                        !UNRETRIABLE_STATUS.contains(&response.status),
                    ));
                }
                access_token(&response.body).map_err(|detail| self.error(detail, false))?
            }
        };
        let claims = read_claims(
            &jwt,
            &self.config.sub_claim_name,
            &self.config.scope_claim_name,
        )
        .map_err(|detail| self.error(detail, false))?;
        tracing::debug!(principal = %claims.subject, scope = ?claims.scope, "token claims");
        Ok(BearerToken {
            value: Secret::new(jwt),
            expires_at: Some(claims.expires_at),
            extensions: self.config.extensions.clone(),
        })
    }
}

impl CredentialProvider<BearerToken> for OAuthBearerTokens {
    fn credential(&self) -> BoxFuture<'_, Result<BearerToken, CredentialError>> {
        Box::pin(self.token())
    }
}

/// HTTP answers that retrying will not change (Kafka's list).
const UNRETRIABLE_STATUS: [u16; 17] = [
    400, 401, 402, 403, 404, 405, 406, 407, 409, 410, 411, 412, 413, 414, 415, 501, 505,
];

/// The `Authorization` header of a token request: `Basic` and the standard
/// (not URL-safe) base64 of `client_id:client_secret`, each part first
/// form-encoded when `urlencode` is set, as Kafka's
/// `ClientCredentialsJwtRetriever` does.
fn basic_authorization(client_id: &str, client_secret: &Secret, urlencode: bool) -> String {
    let joined = if urlencode {
        format!(
            "{}:{}",
            form_encode(client_id),
            form_encode(client_secret.expose())
        )
    } else {
        format!("{client_id}:{}", client_secret.expose())
    };
    format!("Basic {}", BASE64.encode(joined))
}

/// `application/x-www-form-urlencoded` encoding of one value, as Java's
/// `URLEncoder` with UTF-8 does it.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The token endpoint's error answer (RFC 6749 section 5.2) for messages:
/// `error - error_description` when it is such a document, else the start
/// of the body. It is the endpoint's text, not ours: no secret of ours.
fn describe_error_body(body: &[u8]) -> String {
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(body)
        && let Some(error) = map.get("error").and_then(|e| e.as_str())
    {
        return match map.get("error_description").and_then(|d| d.as_str()) {
            Some(description) => format!("{error} - {description}"),
            None => error.to_string(),
        };
    }
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]);
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.trim().is_empty() {
        "(empty body)".to_string()
    } else {
        text
    }
}

/// The `access_token` of a token endpoint's answer.
fn access_token(body: &[u8]) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("its answer is not JSON ({e}); expected an access_token"))?;
    match value.get("access_token") {
        Some(serde_json::Value::String(token)) if !token.trim().is_empty() => {
            Ok(token.trim().to_string())
        }
        Some(_) => Err("its answer's access_token is not a non-empty string".into()),
        None => Err("its answer has no access_token".into()),
    }
}

/// What the client reads from a JWT.
#[derive(Debug, PartialEq)]
struct Claims {
    expires_at: SystemTime,
    subject: String,
    scope: Vec<String>,
}

/// Reads the claims of an (unverified) JWT: `exp` and the subject claim are
/// required, the scope claim is a string of space-separated scopes or a
/// list. Errors never show the token.
fn read_claims(jwt: &str, sub_claim: &str, scope_claim: &str) -> Result<Claims, String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    if parts.len() != 3 {
        return Err(format!(
            "the token is not a JWT (expected 3 dot-separated parts, found {})",
            parts.len()
        ));
    }
    let payload = BASE64URL
        .decode(parts[1].trim_end_matches('='))
        .map_err(|_| "the token's payload is not base64url".to_string())?;
    let claims: serde_json::Value = serde_json::from_slice(&payload)
        .map_err(|_| "the token's payload is not a JSON object".to_string())?;
    let exp = claims
        .get("exp")
        .and_then(|e| e.as_f64())
        .ok_or("the token has no numeric `exp` claim")?;
    if !(0.0..=1e11).contains(&exp) {
        return Err(format!("the token's `exp` claim {exp} is out of range"));
    }
    let subject = claims
        .get(sub_claim)
        .and_then(|s| s.as_str())
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| format!("the token has no `{sub_claim}` claim (the subject claim)"))?
        .to_string();
    let scope = match claims.get(scope_claim) {
        Some(serde_json::Value::String(s)) => s.split_whitespace().map(String::from).collect(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    Ok(Claims {
        expires_at: UNIX_EPOCH + Duration::from_secs_f64(exp),
        subject,
        scope,
    })
}

/// A random fraction in [0, 1] for the refresh jitter.
fn jitter_fraction() -> f64 {
    let mut random = [0u8; 2];
    match getrandom::fill(&mut random) {
        Ok(()) => f64::from(u16::from_le_bytes(random)) / f64::from(u16::MAX),
        Err(_) => 0.5,
    }
}

/// When to refresh a token fetched at `fetched_at` that expires at
/// `expires_at`, seen at `now`, with `random` in [0, 1] for the jitter.
fn refresh_time(
    refresh: &RefreshConfig,
    fetched_at: SystemTime,
    expires_at: SystemTime,
    now: SystemTime,
    random: f64,
) -> SystemTime {
    let lifetime = expires_at.duration_since(fetched_at).unwrap_or_default();
    let mut at =
        fetched_at + lifetime.mul_f64(refresh.window_factor + random * refresh.window_jitter);
    let remaining = expires_at.duration_since(now).unwrap_or_default();
    if refresh.min_period + refresh.buffer <= remaining {
        at = at
            .min(expires_at - refresh.buffer)
            .max(now + refresh.min_period);
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        format!(
            "{}.{}.c2ln",
            BASE64URL.encode(r#"{"alg":"RS256"}"#),
            BASE64URL.encode(claims)
        )
    }

    #[test]
    fn claims_are_read_and_required() {
        let c = read_claims(
            &jwt(r#"{"exp":1700000000,"sub":"mm2","scope":"a b"}"#),
            "sub",
            "scope",
        )
        .unwrap();
        assert_eq!(
            c.expires_at,
            UNIX_EPOCH + Duration::from_secs(1_700_000_000)
        );
        assert_eq!((c.subject.as_str(), c.scope.len()), ("mm2", 2));
        let c = read_claims(
            &jwt(r#"{"exp":1,"client":"x","scp":["a"]}"#),
            "client",
            "scp",
        )
        .unwrap();
        assert_eq!((c.subject.as_str(), c.scope), ("x", vec!["a".to_string()]));
        for (token, expected) in [
            (jwt(r#"{"sub":"x"}"#), "no numeric `exp`"),
            (jwt(r#"{"exp":1}"#), "no `sub` claim"),
            ("a.b".to_string(), "not a JWT"),
            ("a.!!!.c".to_string(), "not base64url"),
        ] {
            let err = read_claims(&token, "sub", "scope").unwrap_err();
            assert!(err.contains(expected), "{err}");
        }
    }

    #[test]
    fn refresh_follows_kafkas_window_and_bounds() {
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let r = RefreshConfig::default();
        // One hour: 80 % + up to 5 %, inside [min period, expiry - buffer].
        let at = refresh_time(&r, t0, t0 + Duration::from_secs(3600), t0, 0.0);
        assert_eq!(at, t0 + Duration::from_secs(2880));
        let at = refresh_time(&r, t0, t0 + Duration::from_secs(3600), t0, 1.0);
        assert_eq!(at, t0 + Duration::from_secs(3060));
        // Ten minutes: 80 % is 8 min, but the buffer keeps 5 min before expiry.
        let at = refresh_time(&r, t0, t0 + Duration::from_secs(600), t0, 0.0);
        assert_eq!(at, t0 + Duration::from_secs(300));
        // 15 s: min period + buffer exceed the lifetime, so the window alone.
        let at = refresh_time(&r, t0, t0 + Duration::from_secs(15), t0, 0.0);
        assert_eq!(at, t0 + Duration::from_secs(12));
    }

    #[test]
    fn form_encoding_and_error_bodies() {
        assert_eq!(
            form_encode("api://x/.default read"),
            "api%3A%2F%2Fx%2F.default+read"
        );
        assert_eq!(
            describe_error_body(br#"{"error":"invalid_client","error_description":"bad secret"}"#),
            "invalid_client - bad secret"
        );
        assert_eq!(describe_error_body(b"nope\n"), "nope ");
        assert_eq!(describe_error_body(b""), "(empty body)");
        assert!(
            access_token(br#"{"token_type":"bearer"}"#)
                .unwrap_err()
                .contains("no access_token")
        );
        assert_eq!(access_token(br#"{"access_token":" t "}"#).unwrap(), "t");
    }

    /// A token endpoint on plain HTTP answering each connection with the
    /// next of `answers` (status, body); returns its URL and the requests.
    async fn endpoint(
        answers: Vec<(u16, String)>,
    ) -> (HttpUrl, tokio::task::JoinHandle<Vec<String>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url =
            HttpUrl::parse(&format!("http://{}/token", listener.local_addr().unwrap())).unwrap();
        let server = tokio::spawn(async move {
            let mut seen = Vec::new();
            for (status, body) in answers {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut request = Vec::new();
                let mut chunk = [0u8; 4096];
                while !String::from_utf8_lossy(&request).contains("grant_type") {
                    let n = socket.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&chunk[..n]);
                }
                seen.push(String::from_utf8_lossy(&request).into_owned());
                let answer = format!(
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                socket.write_all(answer.as_bytes()).await.unwrap();
            }
            seen
        });
        (url, server)
    }

    fn provider(url: HttpUrl) -> OAuthBearerTokens {
        OAuthBearerTokens::new(OAuthConfig {
            source: TokenSource::ClientCredentials {
                url,
                client_id: "mm2".into(),
                client_secret: Secret::new("s3cret"),
                scope: Some("kafka read".into()),
                urlencode_header: false,
                http: HttpClient::new(crate::http::HttpClientConfig::default()).unwrap(),
            },
            sub_claim_name: "sub".into(),
            scope_claim_name: "scope".into(),
            retry_backoff: Duration::from_millis(10),
            retry_backoff_max: Duration::from_secs(5),
            refresh: RefreshConfig::default(),
            extensions: vec![],
        })
    }

    #[tokio::test]
    async fn client_credentials_request_retries_and_caches() {
        let exp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 3600;
        let token = jwt(&format!(r#"{{"exp":{exp},"sub":"mm2"}}"#));
        let (url, server) = endpoint(vec![
            (503, "busy".into()),
            (
                200,
                format!(r#"{{"access_token":"{token}","expires_in":3600}}"#),
            ),
        ])
        .await;
        let tokens = provider(url);
        let first = tokens.credential().await.unwrap();
        assert_eq!(first.value.expose(), token);
        // Cached: the endpoint (which answers twice only) is not asked again.
        assert_eq!(tokens.credential().await.unwrap(), first);
        let seen = server.await.unwrap();
        assert_eq!(seen.len(), 2);
        let request = &seen[1];
        assert!(request.starts_with("POST /token HTTP/1.1\r\n"), "{request}");
        // base64("mm2:s3cret")
        assert!(
            request.contains("Authorization: Basic bW0yOnMzY3JldA==\r\n"),
            "{request}"
        );
        assert!(request.contains("Content-Type: application/x-www-form-urlencoded\r\n"));
        assert!(
            request.ends_with("grant_type=client_credentials&scope=kafka+read"),
            "{request}"
        );
    }

    #[test]
    fn the_basic_header_url_encodes_id_and_secret_only_when_asked() {
        let secret = Secret::new("s:e/c+r=t é");
        // base64("mm2 client:s:e/c+r=t é") and, encoded as Java's
        // URLEncoder does, base64("mm2+client:s%3Ae%2Fc%2Br%3Dt+%C3%A9").
        assert_eq!(
            basic_authorization("mm2 client", &secret, false),
            format!("Basic {}", BASE64.encode("mm2 client:s:e/c+r=t é"))
        );
        assert_eq!(
            basic_authorization("mm2 client", &secret, true),
            format!(
                "Basic {}",
                BASE64.encode("mm2+client:s%3Ae%2Fc%2Br%3Dt+%C3%A9")
            )
        );
        // Characters URLEncoder keeps stay as they are.
        assert_eq!(
            basic_authorization("a-b_c.d*e", &Secret::new("Z09"), true),
            basic_authorization("a-b_c.d*e", &Secret::new("Z09"), false)
        );
    }

    #[tokio::test]
    async fn refusal_is_not_retried_and_shows_the_answer_not_the_secret() {
        let (url, server) = endpoint(vec![(
            401,
            r#"{"error":"invalid_client","error_description":"Client authentication failed"}"#
                .into(),
        )])
        .await;
        let err = provider(url.clone()).credential().await.unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(!err.retriable);
        assert!(shown.contains(&format!("token endpoint {url}")), "{shown}");
        assert!(
            shown.contains("HTTP 401: invalid_client - Client authentication failed"),
            "{shown}"
        );
        assert!(
            !shown.contains("s3cret") && !shown.contains("bW0yOnMzY3JldA"),
            "{shown}"
        );
        assert_eq!(server.await.unwrap().len(), 1);
    }
}
