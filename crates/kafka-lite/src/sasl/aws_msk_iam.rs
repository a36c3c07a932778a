//! SASL `AWS_MSK_IAM`, Amazon MSK's IAM authentication, as the official
//! Java library (`software.amazon.msk:aws-msk-iam-auth`) speaks it.
//!
//! The client's one message is a JSON object: a SigV4 presigned
//! `GET https://<broker host>/?Action=kafka-cluster:Connect` for the service
//! `kafka-cluster`, valid 15 minutes, flattened into keys: `version`
//! (`2020_10_22`), `host`, `user-agent`, `action`, and the lowercased query
//! parameters `x-amz-algorithm`, `x-amz-credential`, `x-amz-date`,
//! `x-amz-expires`, `x-amz-signedheaders`, `x-amz-signature` and, with
//! temporary credentials, `x-amz-security-token`; values are not URL-encoded.
//! A broker that accepts it answers with a non-empty JSON object holding
//! `version` and `request-id`; one that refuses fails the SaslAuthenticate
//! exchange. See docs/configuration.md, "AWS MSK IAM".

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::mechanism::{SaslError, SaslMechanism, SaslStep};
use crate::aws::AwsCredentials;
use crate::aws::sigv4::{self, AmzDate, Scope};

/// The payload format version, also the one the broker answers with.
pub const VERSION: &str = "2020_10_22";
/// The service name MSK signs for.
const SERVICE: &str = "kafka-cluster";
/// The action the payload asks for.
const ACTION: &str = "kafka-cluster:Connect";
/// How long the presigned request is valid.
const EXPIRES: Duration = Duration::from_secs(15 * 60);

/// The query parameters of the SigV4-presigned `GET https://<host>/?Action=
/// kafka-cluster:Connect` in `region` at `now`, valid 15 minutes: what both
/// the `AWS_MSK_IAM` payload and MSK's OAUTHBEARER token carry.
fn presign_connect(
    host: &str,
    region: &str,
    credentials: &AwsCredentials,
    now: SystemTime,
) -> Vec<(String, String)> {
    let date = AmzDate::of(now);
    let scope = Scope {
        region,
        service: SERVICE,
        date: &date,
    };
    let request = sigv4::Request {
        method: "GET",
        path: "/",
        query: vec![("Action".to_string(), ACTION.to_string())],
        headers: vec![("host".to_string(), host.to_string())],
        payload_hash: sigv4::sha256_hex(b""),
    };
    sigv4::presign(request, &scope, credentials, EXPIRES).0
}

/// The authentication payload for `host` in `region` at `now`: the JSON
/// bytes the client sends. Keys are written in sorted order (JSON object
/// order carries no meaning; the Java library's follows a hash map).
pub fn payload(
    host: &str,
    region: &str,
    credentials: &AwsCredentials,
    user_agent: &str,
    now: SystemTime,
) -> Vec<u8> {
    let query = presign_connect(host, region, credentials, now);
    let mut fields = serde_json::Map::new();
    fields.insert("version".into(), VERSION.into());
    fields.insert("host".into(), host.into());
    fields.insert("user-agent".into(), user_agent.into());
    for (key, value) in query {
        fields.insert(key.to_ascii_lowercase(), value.into());
    }
    serde_json::to_vec(&serde_json::Value::Object(fields)).unwrap_or_default()
}

/// The OAUTHBEARER token MSK also accepts for IAM (what the library's
/// `IAMOAuthBearerLoginCallbackHandler` and `aws-msk-iam-sasl-signer`
/// make): the same presigned `kafka-cluster:Connect` request, for host
/// `kafka.<region>.amazonaws.com`, as a URL with a `User-Agent` parameter
/// after the signature, base64url-encoded without padding. Returns the token
/// and when it expires (its signing time plus 15 minutes).
pub fn oauth_token(
    region: &str,
    credentials: &AwsCredentials,
    user_agent: &str,
    now: SystemTime,
) -> (String, SystemTime) {
    use base64::Engine as _;
    let host = format!("kafka.{region}.amazonaws.com");
    let query = presign_connect(&host, region, credentials, now);
    // In the order the Java library's URL has them (the broker reads them
    // by name; the order only makes the tokens byte-for-byte comparable).
    const ORDER: [&str; 8] = [
        "Action",
        "X-Amz-Security-Token",
        "X-Amz-Algorithm",
        "X-Amz-Date",
        "X-Amz-SignedHeaders",
        "X-Amz-Expires",
        "X-Amz-Credential",
        "X-Amz-Signature",
    ];
    let mut ordered: Vec<(&str, &str)> = ORDER
        .iter()
        .filter_map(|name| {
            query
                .iter()
                .find(|(k, _)| k == name)
                .map(|(k, v)| (k.as_str(), v.as_str()))
        })
        .collect();
    ordered.push(("User-Agent", user_agent));
    let query = sigv4::encode_pairs(ordered);
    let url = format!("https://{host}?{query}");
    // The signature carries whole seconds; the token expires 15 minutes
    // after that signing time.
    let whole_seconds = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let signed_at = UNIX_EPOCH + Duration::from_secs(whole_seconds);
    (
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(url),
        signed_at + EXPIRES,
    )
}

/// OAUTHBEARER tokens for MSK IAM: [`oauth_token`] with credentials from
/// `credentials`, for `region`, made afresh at each authentication.
#[derive(Debug)]
pub struct MskIamBearerTokens {
    /// Where the AWS credentials come from.
    pub credentials: std::sync::Arc<dyn crate::credentials::CredentialProvider<AwsCredentials>>,
    /// The region of the cluster (the AWS SDK's region chain; the broker
    /// host is not known to a token provider, as in the Java library).
    pub region: String,
    /// The `User-Agent` parameter.
    pub user_agent: String,
}

impl crate::credentials::CredentialProvider<crate::credentials::BearerToken>
    for MskIamBearerTokens
{
    fn credential(
        &self,
    ) -> crate::credentials::BoxFuture<
        '_,
        Result<crate::credentials::BearerToken, crate::credentials::CredentialError>,
    > {
        Box::pin(async move {
            let credentials = self.credentials.credential().await?;
            let (token, expires_at) = oauth_token(
                &self.region,
                &credentials,
                &self.user_agent,
                SystemTime::now(),
            );
            Ok(crate::credentials::BearerToken {
                value: crate::credentials::Secret::new(token),
                expires_at: Some(expires_at),
                extensions: Vec::new(),
            })
        })
    }
}

/// The `AWS_MSK_IAM` mechanism for one authentication: its payload is made
/// when the mechanism is built, from credentials already fetched.
#[derive(Debug)]
pub(crate) struct AwsMskIam {
    payload: Option<Vec<u8>>,
    request_id: Option<String>,
}

impl AwsMskIam {
    /// A client for broker `host`, signing for `region` with `credentials`
    /// at `now`.
    pub(crate) fn new(
        host: &str,
        region: &str,
        credentials: &AwsCredentials,
        user_agent: &str,
        now: SystemTime,
    ) -> Self {
        AwsMskIam {
            payload: Some(payload(host, region, credentials, user_agent, now)),
            request_id: None,
        }
    }
}

impl SaslMechanism for AwsMskIam {
    fn initial_response(&mut self) -> Result<Vec<u8>, SaslError> {
        self.payload
            .take()
            .ok_or_else(|| SaslError("AWS_MSK_IAM sends its payload only once".into()))
    }

    fn evaluate(&mut self, challenge: &[u8]) -> Result<SaslStep, SaslError> {
        if self.payload.is_some() {
            return Err(SaslError(
                "AWS_MSK_IAM received a challenge before sending its payload".into(),
            ));
        }
        if self.request_id.is_some() {
            return Err(SaslError(
                "AWS_MSK_IAM received a message after the exchange completed".into(),
            ));
        }
        if challenge.is_empty() {
            return Err(SaslError(
                "the broker's AWS_MSK_IAM response is empty (a successful one is a JSON \
                 document)"
                    .into(),
            ));
        }
        let response: serde_json::Value = serde_json::from_slice(challenge).map_err(|e| {
            SaslError(format!(
                "the broker's AWS_MSK_IAM response is not JSON ({e})"
            ))
        })?;
        let version = response.get("version").and_then(|v| v.as_str());
        if version != Some(VERSION) {
            return Err(SaslError(format!(
                "the broker's AWS_MSK_IAM response has version {}, expected {VERSION}",
                version.map_or_else(|| "none".to_string(), |v| format!("`{v}`"))
            )));
        }
        let request_id = response
            .get("request-id")
            .and_then(|v| v.as_str())
            .ok_or_else(|| {
                SaslError("the broker's AWS_MSK_IAM response has no request-id".into())
            })?;
        tracing::debug!(request_id, "AWS_MSK_IAM authentication accepted");
        self.request_id = Some(request_id.to_string());
        Ok(SaslStep::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::Secret;
    use std::time::UNIX_EPOCH;

    fn credentials(token: Option<&str>) -> AwsCredentials {
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: token.map(Secret::new),
            expires_at: None,
        }
    }

    #[test]
    fn the_payload_has_the_fields_of_the_java_library() {
        let now = UNIX_EPOCH + Duration::from_secs(1_603_372_800); // 2020-10-22T13:20:00Z
        let host = "b-1.demo.abc123.c2.kafka.us-west-2.amazonaws.com";
        let bytes = payload(
            host,
            "us-west-2",
            &credentials(Some("tok/en+=")),
            "ua/1",
            now,
        );
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let field = |k: &str| json[k].as_str().unwrap_or_else(|| panic!("{k}: {json}"));
        assert_eq!(field("version"), "2020_10_22");
        assert_eq!(field("host"), host);
        assert_eq!(field("user-agent"), "ua/1");
        assert_eq!(field("action"), "kafka-cluster:Connect");
        assert_eq!(field("x-amz-algorithm"), "AWS4-HMAC-SHA256");
        assert_eq!(
            field("x-amz-credential"),
            "AKIDEXAMPLE/20201022/us-west-2/kafka-cluster/aws4_request"
        );
        assert_eq!(field("x-amz-date"), "20201022T132000Z");
        assert_eq!(field("x-amz-expires"), "900");
        assert_eq!(field("x-amz-signedheaders"), "host");
        assert_eq!(field("x-amz-security-token"), "tok/en+=");
        assert_eq!(field("x-amz-signature").len(), 64);
        assert_eq!(json.as_object().unwrap().len(), 11);
        let without = payload(host, "us-west-2", &credentials(None), "ua/1", now);
        let json: serde_json::Value = serde_json::from_slice(&without).unwrap();
        assert!(json.get("x-amz-security-token").is_none());
    }

    #[test]
    fn the_oauth_token_expires_fifteen_minutes_after_its_whole_second_signing_time() {
        let now = UNIX_EPOCH + Duration::from_millis(1_603_372_800_750);
        let (token, expires_at) = oauth_token("us-west-2", &credentials(None), "ua/1", now);
        assert_eq!(
            expires_at,
            UNIX_EPOCH + Duration::from_secs(1_603_372_800 + 900)
        );
        use base64::Engine as _;
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token)
            .expect("base64url");
        let url = String::from_utf8(url).expect("utf-8");
        assert!(
            url.starts_with(
                "https://kafka.us-west-2.amazonaws.com?Action=kafka-cluster%3AConnect&"
            ) && url.contains("X-Amz-Date=20201022T132000Z")
                && url.ends_with("&User-Agent=ua%2F1"),
            "{url}"
        );
    }

    #[test]
    fn the_exchange_ends_on_the_brokers_json_answer() {
        let now = UNIX_EPOCH + Duration::from_secs(1_603_372_800);
        let mut m = AwsMskIam::new(
            "b-1.x.kafka.us-east-1.amazonaws.com",
            "us-east-1",
            &credentials(None),
            "ua",
            now,
        );
        assert!(m.evaluate(b"{}").is_err(), "challenge before the payload");
        assert!(!m.initial_response().unwrap().is_empty());
        assert!(m.initial_response().is_err());
        for bad in [
            &b""[..],
            b"not json",
            b"{\"version\":\"1999\",\"request-id\":\"r\"}",
            b"{\"version\":\"2020_10_22\"}",
        ] {
            let mut m = AwsMskIam::new("h", "us-east-1", &credentials(None), "ua", now);
            m.initial_response().unwrap();
            assert!(m.evaluate(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(
            m.evaluate(b"{\"version\":\"2020_10_22\",\"request-id\":\"7e1c\"}")
                .unwrap(),
            SaslStep::Done
        );
        assert!(m.evaluate(b"{}").is_err());
    }
}
