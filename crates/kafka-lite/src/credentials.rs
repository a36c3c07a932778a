//! Credentials a connection authenticates with: secrets that never print, bearer
//! tokens, and [`CredentialProvider`], the extension point for credentials fetched
//! when a connection authenticates. The SASL settings (config.rs) and the
//! mechanisms (`sasl`) build on these.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

/// A boxed, sendable future, as [`CredentialProvider`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The extension point for SASL credentials that must be fetched, possibly
/// over the network, when a connection authenticates: an OAuth token, cloud
/// credentials. kafka-lite asks again at every authentication and
/// re-authentication (KIP-368); caching and refreshing before expiry is the
/// provider's business.
///
/// Implementations must keep secrets out of their `Debug` output and out of
/// the [`CredentialError`]s they return.
pub trait CredentialProvider<C>: Send + Sync + fmt::Debug {
    /// The credential to authenticate with now.
    fn credential(&self) -> BoxFuture<'_, Result<C, CredentialError>>;
}

/// An OAuth 2 bearer token (a JWT for Kafka's OIDC support), with the SASL
/// extensions (RFC 7628 section 3.1, KIP-342) to send next to it.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken {
    /// The token (redacted in `Debug`).
    pub value: Secret,
    /// When the token expires, if known.
    pub expires_at: Option<SystemTime>,
    /// SASL extensions as key/value pairs (keys are letters only; values
    /// printable ASCII), sent in order after the token.
    pub extensions: Vec<(String, String)>,
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerToken")
            .field("value", &self.value)
            .field("expires_at", &self.expires_at)
            .field(
                "extensions",
                &self.extensions.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Why a [`CredentialProvider`] could not provide a credential. Its text
/// names where it looked (a URL, a file) and never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {detail}")]
pub struct CredentialError {
    /// Where the credential comes from, e.g. `token endpoint https://idp/token`.
    pub source_name: String,
    /// What went wrong.
    pub detail: String,
    /// Whether asking again later may succeed (the endpoint was unreachable
    /// or answered 5xx), as opposed to a refusal (wrong client secret).
    pub retriable: bool,
}

/// A secret string (a password, a token, an inline private key) that never
/// shows in `Debug` or `Display` output: both print `[redacted]`. The value
/// is only reachable through [`Secret::expose`], so every place that uses it
/// is easy to find.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_string())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}
