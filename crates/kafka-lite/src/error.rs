//! The one error type of kafka-lite.
//!
//! Every variant carries enough context (broker address, API name, versions,
//! SASL mechanism) for a user to act on it without reading the source. No
//! variant ever holds a secret: SASL failures name the mechanism and the
//! broker's message, never the password.
//!
//! [`Error::is_retriable`] tells the layers above (cluster routing, retries)
//! whether trying again — possibly on a fresh connection — can help.
//!
//! Errors are cheap to clone (an I/O error is shared behind an [`Arc`]), so a
//! failed batch request can be reported once per item it carried.
//!
//! Kafka error codes come in two kinds: [`Error::Kafka`] is a code a broker
//! sent; [`Error::Virtual`] is a code kafka-lite chose itself when no broker
//! answer said so (no live leader in the metadata, a group missing from a
//! response, ...). Both display alike and both report their code through
//! [`Error::kafka_error`]; [`Error::is_virtual`] tells them apart.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::protocol::VersionRange;

/// Everything that can go wrong talking to Kafka brokers.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading from or writing to the broker's socket failed (including a
    /// refused connection).
    #[error("I/O error with broker {broker}: {source}")]
    Io {
        /// The broker address (`host:port`).
        broker: String,
        /// The underlying error (shared, so that the error can be cloned).
        #[source]
        source: Arc<std::io::Error>,
    },

    /// The broker address could not be parsed or resolved.
    #[error("invalid broker address {broker:?}: {detail}")]
    InvalidAddress {
        /// The address as given.
        broker: String,
        /// What is wrong with it.
        detail: String,
    },

    /// The TCP connection (plus TLS handshake) did not complete in time.
    #[error("connecting to broker {broker} timed out after {timeout:?}")]
    ConnectTimeout {
        /// The broker address.
        broker: String,
        /// The configured connect timeout.
        timeout: Duration,
    },

    /// The TLS handshake or the TLS session failed (bad certificate, unknown
    /// CA, name mismatch, client certificate required, ...).
    #[error("TLS error with broker {broker}: {detail}")]
    Tls {
        /// The broker address.
        broker: String,
        /// What rustls reported.
        detail: String,
        /// Which kind of failure, for callers that point at the setting to fix.
        kind: TlsFailure,
    },

    /// The local TLS configuration is unusable (unreadable PEM file, no
    /// certificate in it, key does not match, ...).
    #[error("invalid TLS configuration: {detail}")]
    TlsConfig {
        /// What is wrong, naming the file involved.
        detail: String,
    },

    /// The CPU lacks instructions the graviola TLS crypto provider needs.
    #[error(
        "this CPU ({arch}) lacks features required by the graviola TLS provider: {missing}; \
         the portable provider runs on every CPU (ask for `auto` or `portable`)"
    )]
    UnsupportedCpu {
        /// The CPU architecture.
        arch: &'static str,
        /// The missing CPU features, comma separated.
        missing: String,
    },

    /// SASL authentication was rejected or could not be completed.
    #[error("SASL {mechanism} authentication with broker {broker} failed: {detail}")]
    Authentication {
        /// The broker address.
        broker: String,
        /// The SASL mechanism, e.g. `SCRAM-SHA-512`.
        mechanism: String,
        /// The broker's or the mechanism's explanation (never a secret).
        detail: String,
    },

    /// A mechanism's [`CredentialProvider`](crate::CredentialProvider) could
    /// not provide a credential (a token endpoint was down or refused us).
    #[error("SASL {mechanism} credentials for broker {broker}: {error}")]
    Credentials {
        /// The broker address.
        broker: String,
        /// The SASL mechanism, e.g. `OAUTHBEARER`.
        mechanism: String,
        /// The provider's error (never a secret); retriable when it says so.
        error: Box<crate::CredentialError>,
    },

    /// We and the broker share no version of an API.
    #[error(
        "broker {broker} and kafka-lite share no version of {api}: broker supports {}, \
         kafka-lite supports {}",
        fmt_range(.broker_range),
        fmt_range(&Some(*.supported_range))
    )]
    UnsupportedVersion {
        /// The broker address.
        broker: String,
        /// The API name, e.g. `OffsetFetch`.
        api: &'static str,
        /// The versions the broker advertised; `None` if it does not offer the API.
        broker_range: Option<VersionRange>,
        /// The versions kafka-lite implements.
        supported_range: VersionRange,
    },

    /// A frame length announced by the broker is negative or above the limit.
    #[error(
        "broker {broker} sent a frame of {size} bytes; the limit is {max} bytes{}",
        tls_hint(*.size)
    )]
    FrameTooLarge {
        /// The broker address.
        broker: String,
        /// The announced frame size.
        size: i64,
        /// The configured `max_frame_bytes`.
        max: usize,
    },

    /// A request could not be encoded (a field not representable at the
    /// chosen version, for example).
    #[error("cannot encode {api} v{version} request: {detail}")]
    Encode {
        /// The API name.
        api: &'static str,
        /// The version it was encoded at.
        version: i16,
        /// What kafka-protocol reported.
        detail: String,
    },

    /// A response could not be decoded.
    #[error("malformed {api} v{version} response from broker {broker}: {detail}")]
    MalformedResponse {
        /// The broker address.
        broker: String,
        /// The API name.
        api: &'static str,
        /// The version it was decoded at.
        version: i16,
        /// What went wrong.
        detail: String,
    },

    /// The request was not written: the [`SendWindow`](crate::SendWindow) it
    /// was sent under had closed (its writer's right to write had lapsed).
    #[error(
        "{api} request to broker {broker} was not sent: the send window it was given had closed"
    )]
    SendWindowClosed {
        /// The broker address.
        broker: String,
        /// The API name.
        api: &'static str,
    },

    /// No response arrived within the request timeout.
    #[error("{api} request to broker {broker} timed out after {timeout:?}")]
    RequestTimeout {
        /// The broker address.
        broker: String,
        /// The API name.
        api: &'static str,
        /// The configured request timeout.
        timeout: Duration,
    },

    /// The connection is closed or broken; every in-flight request fails with
    /// this. A new connection may succeed.
    #[error("connection to broker {broker} is closed: {detail}")]
    ConnectionClosed {
        /// The broker address.
        broker: String,
        /// Why it closed.
        detail: String,
    },

    /// The broker answered with a Kafka error code.
    #[error("{api} failed{}: {} (Kafka error code {})", fmt_context(.context), kafka_error_name(.error), .error.code())]
    Kafka {
        /// The API name.
        api: &'static str,
        /// The error code, as kafka-protocol's enum.
        error: ResponseError,
        /// What it applied to (group, topic-partition, ...), possibly empty.
        context: String,
    },

    /// A Kafka error code that no broker sent: kafka-lite concluded it from
    /// what it knows (a partition with no live leader in the metadata, a
    /// coordinator or a group missing from an answer, a new topic not yet
    /// in the metadata). Displayed and classified ([`Error::is_retriable`],
    /// [`Error::kafka_error`]) like [`Error::Kafka`] with the same code;
    /// [`Error::is_virtual`] is true only for this variant.
    #[error("{api} failed{}: {} (Kafka error code {})", fmt_context(.context), kafka_error_name(.error), .error.code())]
    Virtual {
        /// The API the code stands for the answer of.
        api: &'static str,
        /// The error code, as kafka-protocol's enum.
        error: ResponseError,
        /// What it applied to (group, topic-partition, ...), possibly empty.
        context: String,
    },
}

/// What kind of TLS failure an [`Error::Tls`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The broker's certificate does not chain to a CA the client trusts
    /// (rustls' `UnknownIssuer`): the trust roots lack the CA that signed it.
    UntrustedCertificate,
    /// Any other failure: an alert from the broker, a certificate that is
    /// expired or names another host, a broken session, ...
    Other,
}

impl Error {
    /// Whether the broker's certificate was refused because no trusted CA
    /// signed it: the trust roots (`TlsConfig::ca_pem_file` / `ca_pem`, or
    /// the built-in roots) lack its CA.
    pub fn is_untrusted_certificate(&self) -> bool {
        matches!(
            self,
            Error::Tls {
                kind: TlsFailure::UntrustedCertificate,
                ..
            }
        )
    }

    /// Whether retrying (on a new connection if this one is closed) may succeed.
    ///
    /// I/O failures, timeouts and closed connections are retriable; Kafka
    /// error codes follow the protocol's own retriable flag, plus
    /// CONCURRENT_TRANSACTIONS (the transaction coordinator is still
    /// completing the previous transaction of the id; Kafka's own clients
    /// retry it, though the protocol's table does not flag it). Configuration,
    /// TLS, authentication, version and decoding errors are not.
    pub fn is_retriable(&self) -> bool {
        match self {
            Error::Io { .. }
            | Error::ConnectTimeout { .. }
            | Error::RequestTimeout { .. }
            | Error::ConnectionClosed { .. } => true,
            Error::Kafka { error, .. } | Error::Virtual { error, .. } => {
                error.is_retriable() || *error == ResponseError::ConcurrentTransactions
            }
            Error::Credentials { error, .. } => error.retriable,
            Error::InvalidAddress { .. }
            | Error::Tls { .. }
            | Error::TlsConfig { .. }
            | Error::UnsupportedCpu { .. }
            | Error::Authentication { .. }
            | Error::UnsupportedVersion { .. }
            | Error::FrameTooLarge { .. }
            | Error::Encode { .. }
            | Error::SendWindowClosed { .. }
            | Error::MalformedResponse { .. } => false,
        }
    }

    /// Whether the broker could not be reached or stopped answering: a
    /// refused or failed connection, a connect or request timeout, a closed
    /// connection. These are the retriable errors an operator should see
    /// while they last.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            Error::Io { .. }
                | Error::ConnectTimeout { .. }
                | Error::RequestTimeout { .. }
                | Error::ConnectionClosed { .. }
        )
    }

    /// Whether the error says the consumer group is in use, so an admin
    /// offset commit (no member id, generation -1) was refused:
    /// UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS,
    /// FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID,
    /// FENCED_INSTANCE_ID or NON_EMPTY_GROUP. Never retried.
    pub fn is_group_active(&self) -> bool {
        matches!(
            self.kafka_error(),
            Some(
                ResponseError::UnknownMemberId
                    | ResponseError::IllegalGeneration
                    | ResponseError::RebalanceInProgress
                    | ResponseError::FencedMemberEpoch
                    | ResponseError::StaleMemberEpoch
                    | ResponseError::UnreleasedInstanceId
                    | ResponseError::FencedInstanceId
                    | ResponseError::NonEmptyGroup
            )
        )
    }

    /// The Kafka error code, if the broker answered with one
    /// ([`Error::Kafka`]) or kafka-lite stands one in for a missing answer
    /// ([`Error::Virtual`]).
    pub fn kafka_error(&self) -> Option<ResponseError> {
        match self {
            Error::Kafka { error, .. } | Error::Virtual { error, .. } => Some(*error),
            _ => None,
        }
    }

    /// Whether kafka-lite made this error up rather than a broker sending
    /// it: true only for [`Error::Virtual`]. A virtual error's code says
    /// what the broker *would* have to answer for the client to behave as it
    /// does (LEADER_NOT_AVAILABLE when the metadata names no live leader,
    /// say); it is not evidence that any broker reported that condition.
    pub fn is_virtual(&self) -> bool {
        matches!(self, Error::Virtual { .. })
    }

    /// A [`Error::Virtual`] error: code `error` for `api`, made up by
    /// kafka-lite.
    pub(crate) fn made_up(
        api: &'static str,
        error: ResponseError,
        context: impl Into<String>,
    ) -> Error {
        Error::Virtual {
            api,
            error,
            context: context.into(),
        }
    }

    /// Turns a Kafka error code into `Ok(())` (code 0) or [`Error::Kafka`].
    ///
    /// `context` names what the code applies to, e.g. `group "g1"` or
    /// `topic-partition t-0`; it may be empty.
    pub fn check_code(
        api: &'static str,
        code: i16,
        context: impl Into<String>,
    ) -> Result<(), Error> {
        match ResponseError::try_from_code(code) {
            None => Ok(()),
            Some(error) => Err(Error::Kafka {
                api,
                error,
                context: context.into(),
            }),
        }
    }
}

/// Kafka's canonical name for an error, e.g. `NOT_COORDINATOR`
/// (`UNKNOWN_ERROR_CODE_<n>` for codes kafka-protocol does not know).
pub fn kafka_error_name(error: &ResponseError) -> String {
    if let ResponseError::Unknown(code) = error {
        return format!("UNKNOWN_ERROR_CODE_{code}");
    }
    // kafka-protocol names variants in CamelCase after Kafka's UPPER_SNAKE names.
    let camel = format!("{error:?}");
    let mut name = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

fn fmt_range(range: &Option<VersionRange>) -> String {
    match range {
        Some(r) if r.is_empty() => "no versions".to_string(),
        Some(r) if r.min == r.max => format!("v{}", r.min),
        Some(r) => format!("v{}-v{}", r.min, r.max),
        None => "no versions (API not offered)".to_string(),
    }
}

/// What a frame length that is really the start of another protocol's
/// answer means: a plaintext client reading a TLS record sees its header
/// (content type 0x15 alert or 0x16 handshake, version 0x03xx); a Kafka
/// client talking to a web server sees `HTTP` (1213486160).
fn tls_hint(size: i64) -> &'static str {
    if matches!(size >> 16, 0x1503 | 0x1603) {
        " (these bytes look like TLS: is this an SSL listener? configure TLS)"
    } else if size == i64::from(u32::from_be_bytes(*b"HTTP")) {
        " (these bytes are `HTTP`: an HTTP server answered, not a Kafka broker; check the \
         address and port)"
    } else {
        ""
    }
}

fn fmt_context(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!(" for {context}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_error_names_match_kafka_spelling() {
        assert_eq!(
            kafka_error_name(&ResponseError::NotCoordinator),
            "NOT_COORDINATOR"
        );
        assert_eq!(
            kafka_error_name(&ResponseError::CoordinatorLoadInProgress),
            "COORDINATOR_LOAD_IN_PROGRESS"
        );
        assert_eq!(
            kafka_error_name(&ResponseError::Unknown(999)),
            "UNKNOWN_ERROR_CODE_999"
        );
    }

    #[test]
    fn kafka_error_display_names_api_context_and_code() {
        let err = Error::check_code("OffsetFetch", 16, "group \"g1\"").unwrap_err();
        assert_eq!(
            err.to_string(),
            "OffsetFetch failed for group \"g1\": NOT_COORDINATOR (Kafka error code 16)"
        );
        assert!(err.is_retriable());
    }

    #[test]
    fn a_virtual_error_displays_and_classifies_like_the_broker_code() {
        let sent = Error::check_code("Metadata", 5, "topic-partition t-0").unwrap_err();
        let made_up = Error::made_up(
            "Metadata",
            ResponseError::LeaderNotAvailable,
            "topic-partition t-0",
        );
        assert_eq!(made_up.to_string(), sent.to_string());
        assert_eq!(made_up.kafka_error(), sent.kafka_error());
        assert_eq!(made_up.is_retriable(), sent.is_retriable());
        assert!(made_up.is_virtual());
        assert!(!sent.is_virtual());
        assert!(made_up.clone().is_virtual());
    }

    #[test]
    fn a_frame_length_that_is_http_or_tls_says_so() {
        let frame = |size: i64| Error::FrameTooLarge {
            broker: "b:80".into(),
            size,
            max: 1 << 20,
        };
        let http = frame(i64::from(u32::from_be_bytes(*b"HTTP"))).to_string();
        assert!(http.contains("frame of 1213486160 bytes"), "{http}");
        assert!(http.contains("an HTTP server answered"), "{http}");
        let tls = frame(0x1603_0100).to_string();
        assert!(tls.contains("look like TLS"), "{tls}");
        let other = frame(0x7fff_0000).to_string();
        assert!(!other.contains('('), "{other}");
    }

    #[test]
    fn unreachable_errors_are_the_connection_level_ones() {
        let io = Error::Io {
            broker: "b".into(),
            source: Arc::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        };
        assert!(io.is_unreachable());
        let kafka = Error::check_code("Metadata", 16, "").unwrap_err();
        assert!(kafka.is_retriable() && !kafka.is_unreachable());
    }

    #[test]
    fn code_zero_is_ok() {
        assert!(Error::check_code("Metadata", 0, "").is_ok());
    }

    #[test]
    fn unsupported_version_names_api_and_both_ranges() {
        let err = Error::UnsupportedVersion {
            broker: "b:9092".into(),
            api: "OffsetFetch",
            broker_range: Some(VersionRange { min: 0, max: 0 }),
            supported_range: VersionRange { min: 1, max: 9 },
        };
        assert_eq!(
            err.to_string(),
            "broker b:9092 and kafka-lite share no version of OffsetFetch: broker supports v0, \
             kafka-lite supports v1-v9"
        );
        assert!(!err.is_retriable());
    }

    #[test]
    fn closed_connection_is_retriable_and_auth_failure_is_not() {
        let closed = Error::ConnectionClosed {
            broker: "b".into(),
            detail: "eof".into(),
        };
        assert!(closed.is_retriable());
        let auth = Error::Authentication {
            broker: "b".into(),
            mechanism: "PLAIN".into(),
            detail: "bad credentials".into(),
        };
        assert!(!auth.is_retriable());
    }
}
