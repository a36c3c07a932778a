//! SASL OAUTHBEARER (RFC 7628) as Kafka speaks it (KIP-255, KIP-342): one
//! client message carrying the bearer token and any SASL extensions.
//!
//! On success the broker answers with an empty message. On failure it sends
//! a JSON error document (RFC 7628 section 3.2.2) as a challenge; the client
//! must answer it with a single kvsep (`0x01`), after which the broker fails
//! the exchange with a SaslAuthenticate error. The JSON is kept so that the
//! error the caller sees carries the broker's reason.

use super::mechanism::{SaslError, SaslMechanism, SaslStep};
use crate::credentials::BearerToken;

/// RFC 7628's key/value separator.
const KVSEP: u8 = 0x01;

/// The OAUTHBEARER mechanism with one token.
#[derive(Debug)]
pub(crate) struct OAuthBearer {
    token: BearerToken,
    sent: bool,
    /// The broker's error document, once it sent one.
    server_error: Option<String>,
}

impl OAuthBearer {
    /// A client that authenticates with `token`.
    pub(crate) fn new(token: BearerToken) -> Self {
        OAuthBearer {
            token,
            sent: false,
            server_error: None,
        }
    }
}

/// RFC 6750's `b64token`: what a bearer token may consist of.
fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

/// Checks a SASL extension against RFC 7628 section 3.1 (key: letters;
/// value: printable ASCII, space, tab, CR, LF) and Kafka's reservation of
/// the key `auth`.
fn check_extension(key: &str, value: &str) -> Result<(), SaslError> {
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(SaslError(format!(
            "SASL extension name `{key}` must consist of letters only (RFC 7628)"
        )));
    }
    if key == "auth" {
        return Err(SaslError(
            "SASL extension name `auth` is reserved for the token (RFC 7628)".into(),
        ));
    }
    if !value
        .bytes()
        .all(|b| (0x20..=0x7e).contains(&b) || b"\t\r\n".contains(&b))
    {
        return Err(SaslError(format!(
            "SASL extension `{key}` has a value with characters other than printable ASCII \
             (RFC 7628)"
        )));
    }
    Ok(())
}

impl SaslMechanism for OAuthBearer {
    fn initial_response(&mut self) -> Result<Vec<u8>, SaslError> {
        let token = self.token.value.expose();
        if !is_b64token(token) {
            return Err(SaslError(
                "the bearer token is not an RFC 6750 b64token (empty, or has spaces or other \
                 characters a JWT cannot contain)"
                    .into(),
            ));
        }
        let mut message = Vec::with_capacity(token.len() + 32);
        message.extend_from_slice(b"n,,");
        message.push(KVSEP);
        message.extend_from_slice(b"auth=Bearer ");
        message.extend_from_slice(token.as_bytes());
        for (key, value) in &self.token.extensions {
            check_extension(key, value)?;
            message.push(KVSEP);
            message.extend_from_slice(key.as_bytes());
            message.push(b'=');
            message.extend_from_slice(value.as_bytes());
        }
        message.push(KVSEP);
        message.push(KVSEP);
        self.sent = true;
        Ok(message)
    }

    fn evaluate(&mut self, challenge: &[u8]) -> Result<SaslStep, SaslError> {
        if !self.sent {
            return Err(SaslError(
                "OAUTHBEARER received a challenge before sending its message".into(),
            ));
        }
        if self.server_error.is_some() {
            return Err(SaslError(format!(
                "broker sent a second challenge after its error: {}",
                self.failure_detail().unwrap_or_default().0
            )));
        }
        if challenge.is_empty() {
            return Ok(SaslStep::Done);
        }
        // The broker's error JSON, e.g. {"status":"invalid_token"}: bounded
        // and made printable, it holds no secret of ours.
        let shown: String = String::from_utf8_lossy(&challenge[..challenge.len().min(1024)])
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        self.server_error = Some(shown);
        Ok(SaslStep::Respond(vec![KVSEP]))
    }

    fn failure_detail(&self) -> Option<(String, String)> {
        self.server_error
            .as_ref()
            .map(|json| (format!("broker's OAUTHBEARER error: {json}"), json.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::Secret;

    fn token(value: &str, extensions: &[(&str, &str)]) -> BearerToken {
        BearerToken {
            value: Secret::new(value),
            expires_at: None,
            extensions: extensions
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn initial_response_follows_rfc_7628() {
        let mut m = OAuthBearer::new(token("eyJ.abc.def", &[]));
        assert_eq!(
            m.initial_response().unwrap(),
            b"n,,\x01auth=Bearer eyJ.abc.def\x01\x01"
        );
        assert_eq!(m.evaluate(b"").unwrap(), SaslStep::Done);
    }

    #[test]
    fn extensions_follow_the_token() {
        let mut m = OAuthBearer::new(token("t0k", &[("logicalCluster", "lkc-1"), ("a", "b c")]));
        assert_eq!(
            m.initial_response().unwrap(),
            b"n,,\x01auth=Bearer t0k\x01logicalCluster=lkc-1\x01a=b c\x01\x01"
        );
    }

    #[test]
    fn bad_tokens_and_extensions_are_refused_without_showing_the_token() {
        for bad in ["", "two words", "tab\there"] {
            let err = OAuthBearer::new(token(bad, &[]))
                .initial_response()
                .unwrap_err();
            assert!(err.0.contains("b64token"), "{err}");
            if !bad.is_empty() {
                assert!(!err.0.contains(bad), "{err}");
            }
        }
        for (k, v) in [("auth", "x"), ("a1", "x"), ("", "x"), ("k", "\u{1}")] {
            assert!(
                OAuthBearer::new(token("t", &[(k, v)]))
                    .initial_response()
                    .is_err(),
                "{k}={v:?}"
            );
        }
    }

    #[test]
    fn server_error_is_answered_with_kvsep_and_kept() {
        let mut m = OAuthBearer::new(token("t", &[]));
        m.initial_response().unwrap();
        let step = m
            .evaluate(br#"{"status":"invalid_token","scope":"x"}"#)
            .unwrap();
        assert_eq!(step, SaslStep::Respond(vec![KVSEP]));
        let (detail, raw) = m.failure_detail().unwrap();
        assert!(detail.contains("invalid_token"), "{detail}");
        assert_eq!(raw, r#"{"status":"invalid_token","scope":"x"}"#);
        assert!(m.evaluate(b"again").is_err());
    }
}
