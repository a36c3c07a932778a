//! The step-machine interface every SASL mechanism implements, and its outcomes.

/// What a mechanism wants after evaluating a server message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SaslStep {
    /// Send these bytes to the server and wait for its next message.
    Respond(Vec<u8>),
    /// Authentication completed successfully on the client side.
    Done,
}

/// Why a mechanism gave up. The text never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SaslError(pub String);

/// A client-side SASL mechanism, driven one server message at a time.
pub(crate) trait SaslMechanism: Send {
    /// The first message the client sends (may be empty).
    fn initial_response(&mut self) -> Result<Vec<u8>, SaslError>;

    /// Evaluates the server's reply to the previous client message.
    fn evaluate(&mut self, challenge: &[u8]) -> Result<SaslStep, SaslError>;

    /// What the server told the mechanism about a failure before the broker
    /// failed the exchange (OAUTHBEARER's error document), if anything: a
    /// sentence for the error, and the server's text as received.
    fn failure_detail(&self) -> Option<(String, String)> {
        None
    }
}
