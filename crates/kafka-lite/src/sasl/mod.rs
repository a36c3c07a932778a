//! SASL mechanisms as small step machines, independent of the wire.
//!
//! A [`SaslMechanism`] produces an initial response, then evaluates each
//! server challenge into either a further response or "done". The
//! connection layer carries those bytes in SaslAuthenticate frames after a
//! SaslHandshake v1; the mechanisms know nothing about Kafka framing, so
//! another mechanism (OAUTHBEARER, say) only needs to implement this trait.

mod plain;
mod scram;

pub(crate) use plain::Plain;
pub(crate) use scram::{Scram, ScramHash};

use crate::config::{SaslConfig, SaslMechanismKind};

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
}

/// Creates the mechanism configured in `config`, with a fresh random nonce
/// where the mechanism needs one.
pub(crate) fn mechanism_for(config: &SaslConfig) -> Result<Box<dyn SaslMechanism>, SaslError> {
    let username = config.username.clone();
    let password = config.password.clone();
    Ok(match config.mechanism {
        SaslMechanismKind::Plain => Box::new(Plain::new(username, password)),
        SaslMechanismKind::ScramSha256 => {
            Box::new(Scram::new(ScramHash::Sha256, username, password)?)
        }
        SaslMechanismKind::ScramSha512 => {
            Box::new(Scram::new(ScramHash::Sha512, username, password)?)
        }
    })
}
