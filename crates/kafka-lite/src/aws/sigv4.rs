//! AWS Signature Version 4: the canonical request, the string to sign, the
//! derived signing key and the signature, for requests signed in headers
//! (STS) and presigned in the query string (the MSK IAM authentication
//! payload). Pure functions of their inputs, the time included, so that they
//! can be checked against the AWS SigV4 test suite and the official Java
//! library (see docs/configuration.md, "AWS MSK IAM").

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::keys::AwsCredentials;

/// The algorithm name SigV4 writes everywhere.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// The time of a signature in SigV4's two forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmzDate {
    /// `YYYYMMDDTHHMMSSZ`, e.g. `20150830T123600Z`.
    pub timestamp: String,
    /// `YYYYMMDD`, the credential scope's date.
    pub day: String,
}

impl AmzDate {
    /// The SigV4 form of `time` (UTC, whole seconds).
    pub fn of(time: SystemTime) -> Self {
        let secs = time
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs();
        let (y, m, d) = civil_from_days((secs / 86_400) as i64);
        let rem = secs % 86_400;
        let day = format!("{y:04}{m:02}{d:02}");
        AmzDate {
            timestamp: format!(
                "{day}T{:02}{:02}{:02}Z",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            ),
            day,
        }
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of
/// [`civil_from_days`]).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses an ISO 8601 UTC time as AWS services write expirations
/// (`2024-05-01T12:00:00Z`, optionally with fractional seconds, or a
/// `+00:00` offset). `None` for anything else.
pub fn parse_iso8601(text: &str) -> Option<SystemTime> {
    let text = text.trim();
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let s = text.get(range)?;
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &frac[digits..];
    }
    if !matches!(rest, "Z" | "z" | "+00:00" | "") {
        return None;
    }
    let days = days_from_civil(i64::from(y), mo, d);
    let secs = days * 86_400 + i64::from(h * 3600 + mi * 60 + s);
    u64::try_from(secs)
        .ok()
        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// Hex SHA-256 of `data`, SigV4's payload and canonical-request hash.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// SigV4's URI encoding: every byte but the unreserved `A-Z a-z 0-9 - _ .
/// ~` as `%XX` (uppercase hex); `/` kept when `keep_slash` (paths).
pub fn uri_encode(text: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && b == b'/')
        {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `k=v&k=v`, both sides [`uri_encode`]d (`/` too), in the order given: a
/// canonical query (sorted first), a presigned URL's query, and an
/// `application/x-www-form-urlencoded` body (SigV4's encoding is a valid
/// form encoding).
pub fn encode_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    pairs
        .into_iter()
        .map(|(k, v)| format!("{}={}", uri_encode(k, false), uri_encode(v, false)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Where and for what a request is signed.
#[derive(Debug, Clone)]
pub struct Scope<'a> {
    /// The region, e.g. `us-east-1`.
    pub region: &'a str,
    /// The service's signing name, e.g. `kafka-cluster`, `sts`.
    pub service: &'a str,
    /// The signing time.
    pub date: &'a AmzDate,
}

impl Scope<'_> {
    /// `<day>/<region>/<service>/aws4_request`.
    pub fn credential_scope(&self) -> String {
        format!(
            "{}/{}/{}/aws4_request",
            self.date.day, self.region, self.service
        )
    }
}

/// A request to sign: method, canonical (already encoded) path, query
/// parameters (raw; encoded and sorted here), headers (names any case;
/// lowercased, trimmed and sorted here, every one signed) and the payload
/// hash.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `GET`, `POST`.
    pub method: &'a str,
    /// The canonical URI, e.g. `/`.
    pub path: &'a str,
    /// Query parameters, raw.
    pub query: Vec<(String, String)>,
    /// Headers to sign.
    pub headers: Vec<(String, String)>,
    /// Hex SHA-256 of the body.
    pub payload_hash: String,
}

/// What signing produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The canonical request (for tests and diagnostics; contains no secret
    /// but may contain a session token in a presigned query).
    pub canonical_request: String,
    /// The string to sign.
    pub string_to_sign: String,
    /// `host;x-amz-date`...
    pub signed_headers: String,
    /// The hex signature.
    pub signature: String,
}

/// Signs `request`: canonical request, string to sign, signature.
pub fn sign(request: &Request<'_>, scope: &Scope<'_>, secret_access_key: &str) -> Signed {
    // Sorted by the encoded key, then the encoded value.
    let mut query: Vec<&(String, String)> = request.query.iter().collect();
    query.sort_by_cached_key(|(k, v)| (uri_encode(k, false), uri_encode(v, false)));
    let canonical_query = encode_pairs(query.into_iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                v.split_whitespace().collect::<Vec<_>>().join(" "),
            )
        })
        .collect();
    headers.sort();
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed_headers = headers
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_request = format!(
        "{}\n{}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{}",
        request.method, request.path, request.payload_hash
    );
    let string_to_sign = format!(
        "{ALGORITHM}\n{}\n{}\n{}",
        scope.date.timestamp,
        scope.credential_scope(),
        sha256_hex(canonical_request.as_bytes())
    );
    let mut key = hmac(
        format!("AWS4{secret_access_key}").as_bytes(),
        scope.date.day.as_bytes(),
    );
    for part in [scope.region, scope.service, "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex(&hmac(&key, string_to_sign.as_bytes()));
    Signed {
        canonical_request,
        string_to_sign,
        signed_headers,
        signature,
    }
}

/// Presigns a request in its query string (SigV4 "query" signing): adds
/// `X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`, `X-Amz-Expires`,
/// `X-Amz-SignedHeaders` and, with a session token, `X-Amz-Security-Token`
/// to `request.query`, signs, and returns the full parameter list with
/// `X-Amz-Signature` last.
pub fn presign(
    mut request: Request<'_>,
    scope: &Scope<'_>,
    credentials: &AwsCredentials,
    expires: Duration,
) -> (Vec<(String, String)>, Signed) {
    let mut signed_headers: Vec<String> = request
        .headers
        .iter()
        .map(|(k, _)| k.to_ascii_lowercase())
        .collect();
    signed_headers.sort();
    request.query.extend([
        ("X-Amz-Algorithm".to_string(), ALGORITHM.to_string()),
        (
            "X-Amz-Credential".to_string(),
            format!("{}/{}", credentials.access_key_id, scope.credential_scope()),
        ),
        ("X-Amz-Date".to_string(), scope.date.timestamp.clone()),
        ("X-Amz-Expires".to_string(), expires.as_secs().to_string()),
        ("X-Amz-SignedHeaders".to_string(), signed_headers.join(";")),
    ]);
    if let Some(token) = &credentials.session_token {
        request.query.push((
            "X-Amz-Security-Token".to_string(),
            token.expose().to_string(),
        ));
    }
    let signed = sign(&request, scope, credentials.secret_access_key.expose());
    let mut query = request.query;
    query.push(("X-Amz-Signature".to_string(), signed.signature.clone()));
    (query, signed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::Secret;

    // Cases of the AWS SigV4 test suite, as published with AWS's signing
    // libraries (see docs/configuration.md, "AWS MSK IAM"): the credentials,
    // time, region and service every case uses, and for each case the
    // request, the header-signed and the query-signed (presigned, 3600 s)
    // signatures.
    const ACCESS_KEY: &str = "AKIDEXAMPLE";
    const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    const SESSION_TOKEN: &str = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
    const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    struct Case {
        name: &'static str,
        method: &'static str,
        query: &'static [(&'static str, &'static str)],
        token: Option<&'static str>,
        header_signature: &'static str,
        query_signature: &'static str,
    }

    const CASES: &[Case] = &[
        Case {
            name: "get-vanilla",
            method: "GET",
            query: &[],
            token: None,
            header_signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
            query_signature: "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d",
        },
        Case {
            name: "post-vanilla",
            method: "POST",
            query: &[],
            token: None,
            header_signature: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
            query_signature: "2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b",
        },
        Case {
            name: "get-vanilla-query-order-key-case",
            method: "GET",
            query: &[("Param2", "value2"), ("Param1", "value1")],
            token: None,
            header_signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
            query_signature: "86012e2c9ad4d77369f5d81c11f75158aae4f895a085212cc6d3f923d300bed5",
        },
        Case {
            name: "get-vanilla-with-session-token",
            method: "GET",
            query: &[],
            token: Some(SESSION_TOKEN),
            header_signature: "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
            query_signature: "7ff2b50b376cb4d151970630573d6291dc128cc5c2a12ffb237f73cc53f67b6c",
        },
    ];

    fn suite_date() -> AmzDate {
        // 2015-08-30T12:36:00Z
        let date = AmzDate::of(UNIX_EPOCH + Duration::from_secs(1_440_938_160));
        assert_eq!(date.timestamp, "20150830T123600Z");
        assert_eq!(date.day, "20150830");
        date
    }

    fn request(case: &Case, headers: Vec<(String, String)>) -> Request<'static> {
        Request {
            method: case.method,
            path: "/",
            query: case
                .query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            headers,
            payload_hash: EMPTY_SHA256.to_string(),
        }
    }

    #[test]
    fn header_signing_matches_the_sigv4_test_suite() {
        let date = suite_date();
        let scope = Scope {
            region: "us-east-1",
            service: "service",
            date: &date,
        };
        for case in CASES {
            let mut headers = vec![
                ("Host".to_string(), "example.amazonaws.com".to_string()),
                ("X-Amz-Date".to_string(), date.timestamp.clone()),
            ];
            if let Some(token) = case.token {
                headers.push(("X-Amz-Security-Token".to_string(), token.to_string()));
            }
            let signed = sign(&request(case, headers), &scope, SECRET_KEY);
            assert_eq!(signed.signature, case.header_signature, "{}", case.name);
        }
    }

    #[test]
    fn query_signing_matches_the_sigv4_test_suite() {
        let date = suite_date();
        let scope = Scope {
            region: "us-east-1",
            service: "service",
            date: &date,
        };
        for case in CASES {
            let credentials = AwsCredentials {
                access_key_id: ACCESS_KEY.to_string(),
                secret_access_key: Secret::new(SECRET_KEY),
                session_token: case.token.map(Secret::new),
                expires_at: None,
            };
            let headers = vec![("Host".to_string(), "example.amazonaws.com".to_string())];
            let (query, signed) = presign(
                request(case, headers),
                &scope,
                &credentials,
                Duration::from_secs(3600),
            );
            assert_eq!(signed.signature, case.query_signature, "{}", case.name);
            assert_eq!(
                query.last(),
                Some(&(
                    "X-Amz-Signature".to_string(),
                    case.query_signature.to_string()
                ))
            );
        }
        // The suite's canonical request for get-vanilla, byte for byte.
        let (_, signed) = presign(
            request(
                &CASES[0],
                vec![("Host".into(), "example.amazonaws.com".into())],
            ),
            &scope,
            &AwsCredentials {
                access_key_id: ACCESS_KEY.to_string(),
                secret_access_key: Secret::new(SECRET_KEY),
                session_token: None,
                expires_at: None,
            },
            Duration::from_secs(3600),
        );
        assert_eq!(
            signed.canonical_request,
            "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2F\
             us-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&\
             X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\n\
             e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            signed.string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n\
             bb7705b4aa3cb8e8f5e1e0b3d4c0b64030797a313c8ceee43e33117cc43eadc5"
        );
    }

    #[test]
    fn dates_round_trip_and_bad_times_are_refused() {
        for secs in [
            0u64,
            951_782_400,
            1_440_938_160,
            4_102_444_800,
            1_709_164_800,
        ] {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            let d = AmzDate::of(t);
            let iso = format!(
                "{}-{}-{}T{}:{}:{}Z",
                &d.timestamp[0..4],
                &d.timestamp[4..6],
                &d.timestamp[6..8],
                &d.timestamp[9..11],
                &d.timestamp[11..13],
                &d.timestamp[13..15]
            );
            assert_eq!(parse_iso8601(&iso), Some(t), "{iso}");
        }
        assert_eq!(
            AmzDate::of(UNIX_EPOCH + Duration::from_secs(951_782_400)).day,
            "20000229"
        );
        assert_eq!(
            parse_iso8601("2024-05-01T12:00:00.123Z"),
            parse_iso8601("2024-05-01T12:00:00Z")
        );
        for bad in [
            "",
            "2024-05-01",
            "2024-13-01T00:00:00Z",
            "2024-05-01T00:00:00+02:00",
            "x024-05-01T00:00:00Z",
            "2024-05-01T00:00:00é",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn uri_encoding_keeps_only_unreserved_bytes() {
        assert_eq!(uri_encode("a-Z_0.~", false), "a-Z_0.~");
        assert_eq!(
            uri_encode("kafka-cluster:Connect", false),
            "kafka-cluster%3AConnect"
        );
        assert_eq!(uri_encode("a/b c+é", false), "a%2Fb%20c%2B%C3%A9");
        assert_eq!(uri_encode("/a b", true), "/a%20b");
    }
}
