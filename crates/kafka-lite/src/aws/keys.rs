//! AWS credentials: the value the credential chain ([`super::credentials`]) finds
//! and SigV4 ([`super::sigv4`]) signs with.

use std::fmt;
use std::time::SystemTime;

use crate::credentials::Secret;

/// AWS credentials: an access key, its secret, and for temporary
/// credentials a session token and an expiry. `Debug` shows only the
/// access key id (which AWS does not treat as a secret).
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// `AKIA...` or `ASIA...`.
    pub access_key_id: String,
    /// The secret access key (redacted in `Debug`).
    pub secret_access_key: Secret,
    /// The session token of temporary credentials (redacted in `Debug`).
    pub session_token: Option<Secret>,
    /// When temporary credentials expire.
    pub expires_at: Option<SystemTime>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key)
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .finish()
    }
}
