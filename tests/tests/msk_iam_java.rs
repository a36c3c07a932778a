//! AWS_MSK_IAM, differential: kafka-lite's authentication payload against
//! the one Amazon MSK's own Java library (`software.amazon.msk:
//! aws-msk-iam-auth`, with the AWS SDK v2 signer it uses) makes for the same
//! broker host and credentials. The Java library signs at the current time;
//! kafka-lite then signs at the time the Java payload names, and every field
//! must be equal, the signature included. No MSK broker is reachable here:
//! this, the SigV4 test-suite vectors and the credential endpoints served in
//! the kafka-lite tests are what is verified (docs/configuration.md, "AWS MSK
//! IAM").

use std::time::{Duration, UNIX_EPOCH};

use e2e::clusters;
use e2e::java::msk_iam_payload;
use kafka_lite::Secret;
use kafka_lite::aws::sigv4::parse_iso8601;
use kafka_lite::aws::{AwsCredentials, msk_iam_payload as rust_payload, region_from_host};
use serde_json::{Map, Value};

fn object(text: &[u8]) -> Map<String, Value> {
    match serde_json::from_slice(text) {
        Ok(Value::Object(map)) => map,
        other => panic!(
            "not a JSON object: {other:?}: {}",
            String::from_utf8_lossy(text)
        ),
    }
}

#[test]
fn the_payload_equals_the_official_java_librarys_field_by_field() {
    let cases = [
        (
            "b-1.demo-cluster.abc123.c2.kafka.us-east-1.amazonaws.com",
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            None,
        ),
        (
            "b-2.prod.x1y2z3.c11.kafka.eu-central-1.amazonaws.com",
            "ASIAXAMPLEXAMPLE1234",
            "tH1s+1s/A=Secret",
            // A session token with the characters that need URL-encoding in
            // the canonical query but must stay raw in the JSON.
            Some("IQoJb3JpZ2luX2VjE/+token==with/slashes+plus"),
        ),
        (
            "boot-abcd1234.c3.kafka-serverless.ap-southeast-2.amazonaws.com",
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            Some("short"),
        ),
    ];
    for (host, key_id, secret, token) in cases {
        let user_agent = "mm2-checkpoint-differential/1";
        // The library asks for 15 minutes from "now" and the signer counts
        // from its own "now": 899 s when a second boundary fell in between
        // (rare). Ask again then, so the signature is always compared.
        let java = (0..3)
            .map(|_| {
                let text = msk_iam_payload(
                    clusters(),
                    host,
                    key_id,
                    secret,
                    token.unwrap_or("-"),
                    user_agent,
                )
                .unwrap_or_else(|e| panic!("{host}: {e}"));
                object(text.trim().as_bytes())
            })
            .find(|java| java["x-amz-expires"] == "900")
            .expect("an X-Amz-Expires of 900 s in three tries");
        let date = java["x-amz-date"].as_str().expect("x-amz-date");
        let iso = format!(
            "{}-{}-{}T{}:{}:{}Z",
            &date[0..4],
            &date[4..6],
            &date[6..8],
            &date[9..11],
            &date[11..13],
            &date[13..15]
        );
        let at = parse_iso8601(&iso).expect("the Java payload's date");
        assert!(at > UNIX_EPOCH + Duration::from_secs(1_700_000_000));
        let credentials = AwsCredentials {
            access_key_id: key_id.to_string(),
            secret_access_key: Secret::new(secret),
            session_token: token.map(Secret::new),
            expires_at: None,
        };
        let region = region_from_host(host).expect("an MSK host names its region");
        let ours = object(&rust_payload(host, region, &credentials, user_agent, at));
        let keys = |m: &Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&ours), keys(&java), "{host}: the same fields");
        for (key, value) in &java {
            assert_eq!(ours.get(key), Some(value), "{host}: field {key}");
        }
    }
}

/// The OAUTHBEARER form: the token of the library's
/// `IAMOAuthBearerLoginCallbackHandler` (credentials and region from the
/// environment, as its default chains read them) against kafka-lite's for
/// the same credentials, region, user agent and signing time: the same
/// base64url text, byte for byte, and the same lifetime.
#[test]
fn the_oauthbearer_token_equals_the_official_java_librarys() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    for (region, key_id, secret, token) in [
        (
            "eu-west-1",
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            None,
        ),
        (
            "us-east-2",
            "ASIAXAMPLEXAMPLE1234",
            "tH1s+1s/A=Secret",
            Some("IQoJb3/+tok=="),
        ),
    ] {
        // Asked again when a second boundary fell between the library's
        // "now + 15 min" and its signer's "now" (X-Amz-Expires 899).
        let (java_token, lifetime_ms) = (0..3)
            .map(|_| {
                e2e::java::msk_iam_oauth_token(clusters(), region, key_id, secret, token)
                    .unwrap_or_else(|e| panic!("{region}: {e}"))
            })
            .find(|(t, _)| {
                String::from_utf8(b64.decode(t).expect("base64url"))
                    .expect("utf-8")
                    .contains("X-Amz-Expires=900&")
            })
            .expect("an X-Amz-Expires of 900 s in three tries");
        let url = String::from_utf8(b64.decode(&java_token).unwrap()).unwrap();
        let param = |name: &str| {
            url.split(['?', '&'])
                .find_map(|p| p.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("{name} in {url}"))
                .to_string()
        };
        let date = param("X-Amz-Date");
        let at = parse_iso8601(&format!(
            "{}-{}-{}T{}:{}:{}Z",
            &date[0..4],
            &date[4..6],
            &date[6..8],
            &date[9..11],
            &date[11..13],
            &date[13..15]
        ))
        .unwrap();
        // The user agent is the library's own (it names the JVM); use it.
        let user_agent = percent_decode(&param("User-Agent"));
        let credentials = AwsCredentials {
            access_key_id: key_id.to_string(),
            secret_access_key: Secret::new(secret),
            session_token: token.map(Secret::new),
            expires_at: None,
        };
        let (ours, expires) =
            kafka_lite::aws::msk_iam_oauth_token(region, &credentials, &user_agent, at);
        assert_eq!(
            String::from_utf8(b64.decode(&ours).unwrap()).unwrap(),
            url,
            "{region}: the URLs"
        );
        assert_eq!(ours, java_token, "{region}: the tokens");
        let expires_ms = expires.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        assert_eq!(expires_ms, lifetime_ms, "{region}: the lifetime");
    }
}

/// `%XX` decoding (the user agent parameter).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}
