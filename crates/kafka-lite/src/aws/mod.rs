//! AWS pieces for Amazon MSK's IAM authentication (SASL `AWS_MSK_IAM`):
//! credentials, SigV4 signing ([`sigv4`]), the region of a broker, and the
//! standard credential chain ([`credentials`]). See docs/configuration.md,
//! "AWS MSK IAM".

pub mod credentials;
mod keys;
pub mod sigv4;

pub use self::keys::AwsCredentials;

pub use crate::sasl::aws_msk_iam::{
    MskIamBearerTokens, VERSION as MSK_IAM_VERSION, oauth_token as msk_iam_oauth_token,
    payload as msk_iam_payload,
};

/// The AWS region a host name contains, as the MSK IAM library finds it:
/// MSK broker names end in `.kafka.<region>.amazonaws.com` (or
/// `.kafka-serverless.<region>...`). The first dot-separated label that
/// looks like a region (`us-east-1`, `eu-central-2`, `us-gov-west-1`,
/// `cn-north-1`) is taken. `None` for other names (a private DNS alias).
pub fn region_from_host(host: &str) -> Option<&str> {
    host.split('.').find(|label| looks_like_region(label))
}

/// `<letters>(-<letters>)+-<digits>`, e.g. `ap-southeast-2`.
fn looks_like_region(label: &str) -> bool {
    let parts: Vec<&str> = label.split('-').collect();
    let Some((number, words)) = parts.split_last() else {
        return false;
    };
    words.len() >= 2
        && words.len() <= 3
        && words[0].len() == 2
        && words
            .iter()
            .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()))
        && !number.is_empty()
        && number.len() <= 2
        && number.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::Secret;

    #[test]
    fn the_region_comes_from_msk_broker_names() {
        for (host, region) in [
            (
                "b-1.mycluster.abc123.c2.kafka.us-east-1.amazonaws.com",
                Some("us-east-1"),
            ),
            (
                "b-3.prod.x1y2z3.c11.kafka.eu-central-1.amazonaws.com",
                Some("eu-central-1"),
            ),
            (
                "boot-abc.c1.kafka-serverless.ap-southeast-2.amazonaws.com",
                Some("ap-southeast-2"),
            ),
            (
                "b-1.c.kafka.us-gov-west-1.amazonaws.com",
                Some("us-gov-west-1"),
            ),
            (
                "b-1.c.kafka.cn-north-1.amazonaws.com.cn",
                Some("cn-north-1"),
            ),
            ("kafka.internal.example.com", None),
            (
                "b-1-public.c.kafka.us-west-2.amazonaws.com",
                Some("us-west-2"),
            ),
            ("127.0.0.1", None),
        ] {
            assert_eq!(region_from_host(host), region, "{host}");
        }
    }

    #[test]
    fn debug_hides_the_secrets() {
        let c = AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: Secret::new("wJalrXUtnFEMI"),
            session_token: Some(Secret::new("FwoGZXIvYXdz")),
            expires_at: None,
        };
        let shown = format!("{c:?}");
        assert!(shown.contains("AKIDEXAMPLE"));
        assert!(
            !shown.contains("wJalrXUtnFEMI") && !shown.contains("FwoGZXIvYXdz"),
            "{shown}"
        );
    }
}
