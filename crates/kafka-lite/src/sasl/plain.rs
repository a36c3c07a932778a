//! SASL PLAIN (RFC 4616): one message, `authzid NUL authcid NUL password`.

use super::mechanism::{SaslError, SaslMechanism, SaslStep};
use crate::credentials::Secret;

/// The PLAIN mechanism. The password crosses the wire as-is, so use it over TLS.
#[derive(Debug)]
pub(crate) struct Plain {
    username: String,
    password: Secret,
    sent: bool,
}

impl Plain {
    /// A PLAIN client for `username` with an empty authorization id.
    pub(crate) fn new(username: String, password: Secret) -> Self {
        Plain {
            username,
            password,
            sent: false,
        }
    }
}

impl SaslMechanism for Plain {
    fn initial_response(&mut self) -> Result<Vec<u8>, SaslError> {
        if self.username.contains('\0') || self.password.expose().contains('\0') {
            return Err(SaslError(
                "PLAIN username and password must not contain NUL".into(),
            ));
        }
        self.sent = true;
        let mut message =
            Vec::with_capacity(2 + self.username.len() + self.password.expose().len());
        message.push(0);
        message.extend_from_slice(self.username.as_bytes());
        message.push(0);
        message.extend_from_slice(self.password.expose().as_bytes());
        Ok(message)
    }

    fn evaluate(&mut self, _challenge: &[u8]) -> Result<SaslStep, SaslError> {
        // The broker answers a successful PLAIN exchange with an empty
        // message; a failure arrives as a SaslAuthenticate error code instead.
        if self.sent {
            Ok(SaslStep::Done)
        } else {
            Err(SaslError(
                "PLAIN received a challenge before sending its message".into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_response_is_nul_separated_credentials() {
        let mut plain = Plain::new("alice".into(), Secret::new("pw"));
        assert_eq!(plain.initial_response().unwrap(), b"\0alice\0pw");
        assert_eq!(plain.evaluate(b"").unwrap(), SaslStep::Done);
    }

    #[test]
    fn nul_in_username_is_rejected() {
        let mut plain = Plain::new("al\0ice".into(), Secret::new("pw"));
        assert!(plain.initial_response().is_err());
    }
}
