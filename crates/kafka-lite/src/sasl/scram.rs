//! SCRAM-SHA-256 / SCRAM-SHA-512 client (RFC 5802, RFC 7677), without
//! channel binding (`n,,` GS2 header), as Kafka uses it.
//!
//! Exchange: client-first (`n,,n=user,r=nonce`) → server-first (`r=nonce+server
//! nonce,s=salt,i=iterations`) → client-final (`c=biws,r=...,p=proof`) →
//! server-final (`v=server signature`). The server signature is checked, so a
//! server that does not know the password cannot impersonate the broker.
//!
//! The password is used as UTF-8 bytes without SASLprep, like Kafka's own
//! clients and broker.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

use super::mechanism::{SaslError, SaslMechanism, SaslStep};
use crate::credentials::Secret;

/// Highest iteration count accepted from a server, so a hostile server
/// cannot make the client spin for minutes in PBKDF2.
const MAX_ITERATIONS: u32 = 1_000_000;

/// The hash function of a SCRAM variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScramHash {
    /// SCRAM-SHA-256.
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl ScramHash {
    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        // HMAC accepts keys of any length, so new_from_slice cannot fail.
        match self {
            ScramHash::Sha256 => match Hmac::<Sha256>::new_from_slice(key) {
                Ok(mut mac) => {
                    mac.update(data);
                    mac.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            },
            ScramHash::Sha512 => match Hmac::<Sha512>::new_from_slice(key) {
                Ok(mut mac) => {
                    mac.update(data);
                    mac.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            },
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => Sha256::digest(data).to_vec(),
            ScramHash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// `Hi()` of RFC 5802: PBKDF2 with HMAC of this hash.
    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => {
                pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec()
            }
            ScramHash::Sha512 => {
                pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec()
            }
        }
    }
}

enum State {
    Initial,
    /// Client-first sent; waiting for server-first.
    SentClientFirst {
        client_first_bare: String,
    },
    /// Client-final sent; waiting for server-final with this expected signature.
    SentClientFinal {
        server_signature: Vec<u8>,
    },
    Done,
    Failed,
}

/// A SCRAM client for one authentication exchange.
pub(crate) struct Scram {
    hash: ScramHash,
    username: String,
    password: Secret,
    client_nonce: String,
    state: State,
}

impl std::fmt::Debug for Scram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scram")
            .field("hash", &self.hash)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Scram {
    /// A SCRAM client with a fresh random 24-byte nonce.
    pub(crate) fn new(
        hash: ScramHash,
        username: String,
        password: Secret,
    ) -> Result<Self, SaslError> {
        let mut raw = [0u8; 24];
        getrandom::fill(&mut raw)
            .map_err(|e| SaslError(format!("cannot get random bytes for the SCRAM nonce: {e}")))?;
        Ok(Self::with_nonce(
            hash,
            username,
            password,
            BASE64.encode(raw),
        ))
    }

    /// A SCRAM client with a caller-chosen nonce (for test vectors only; a
    /// nonce must never repeat).
    pub(crate) fn with_nonce(
        hash: ScramHash,
        username: String,
        password: Secret,
        client_nonce: String,
    ) -> Self {
        Scram {
            hash,
            username,
            password,
            client_nonce,
            state: State::Initial,
        }
    }

    fn fail(&mut self, detail: impl Into<String>) -> SaslError {
        self.state = State::Failed;
        SaslError(detail.into())
    }

    fn handle_server_first(
        &mut self,
        client_first_bare: &str,
        message: &str,
    ) -> Result<SaslStep, SaslError> {
        let attrs = parse_attributes(message)
            .map_err(|e| self.fail(format!("bad server-first message: {e}")))?;
        if let Some(first) = attrs.first()
            && first.0 == 'm'
        {
            return Err(self.fail("server requires an unsupported SCRAM extension"));
        }
        if let Some(e) = find(&attrs, 'e') {
            return Err(self.fail(format!("server error: {e}")));
        }
        let nonce = find(&attrs, 'r')
            .ok_or_else(|| self.fail("server-first message lacks the nonce (r=)"))?;
        if !nonce.starts_with(self.client_nonce.as_str()) || nonce.len() <= self.client_nonce.len()
        {
            return Err(self.fail("server nonce does not extend the client nonce"));
        }
        let salt_b64 = find(&attrs, 's')
            .ok_or_else(|| self.fail("server-first message lacks the salt (s=)"))?;
        let salt = BASE64
            .decode(salt_b64)
            .map_err(|_| self.fail("server salt is not valid base64"))?;
        let iterations: u32 = find(&attrs, 'i')
            .and_then(|i| i.parse().ok())
            .ok_or_else(|| self.fail("server-first message lacks a valid iteration count (i=)"))?;
        if iterations == 0 || iterations > MAX_ITERATIONS {
            return Err(self.fail(format!(
                "server iteration count {iterations} is outside 1..={MAX_ITERATIONS}"
            )));
        }

        let h = self.hash;
        let salted = h.salted_password(self.password.expose().as_bytes(), &salt, iterations);
        let client_key = h.hmac(&salted, b"Client Key");
        let stored_key = h.hash(&client_key);
        // "biws" is base64("n,,"): no channel binding, no authzid.
        let client_final_without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{client_first_bare},{message},{client_final_without_proof}");
        let client_signature = h.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = h.hmac(&salted, b"Server Key");
        let server_signature = h.hmac(&server_key, auth_message.as_bytes());

        self.state = State::SentClientFinal { server_signature };
        let client_final = format!("{client_final_without_proof},p={}", BASE64.encode(proof));
        Ok(SaslStep::Respond(client_final.into_bytes()))
    }

    fn handle_server_final(
        &mut self,
        expected: &[u8],
        message: &str,
    ) -> Result<SaslStep, SaslError> {
        let attrs = parse_attributes(message)
            .map_err(|e| self.fail(format!("bad server-final message: {e}")))?;
        if let Some(e) = find(&attrs, 'e') {
            return Err(self.fail(format!("server error: {e}")));
        }
        let verifier = find(&attrs, 'v')
            .ok_or_else(|| self.fail("server-final message lacks the signature (v=)"))?;
        let signature = BASE64
            .decode(verifier)
            .map_err(|_| self.fail("server signature is not valid base64"))?;
        if !constant_time_eq(&signature, expected) {
            return Err(self.fail("server signature does not match: the broker did not prove it knows the credentials"));
        }
        self.state = State::Done;
        Ok(SaslStep::Done)
    }
}

impl SaslMechanism for Scram {
    fn initial_response(&mut self) -> Result<Vec<u8>, SaslError> {
        if !matches!(self.state, State::Initial) {
            return Err(self.fail("SCRAM exchange already started"));
        }
        let client_first_bare = format!(
            "n={},r={}",
            escape_username(&self.username),
            self.client_nonce
        );
        let message = format!("n,,{client_first_bare}");
        self.state = State::SentClientFirst { client_first_bare };
        Ok(message.into_bytes())
    }

    fn evaluate(&mut self, challenge: &[u8]) -> Result<SaslStep, SaslError> {
        let message = std::str::from_utf8(challenge)
            .map_err(|_| self.fail("server message is not UTF-8"))?
            .to_string();
        match std::mem::replace(&mut self.state, State::Failed) {
            State::SentClientFirst { client_first_bare } => {
                self.handle_server_first(&client_first_bare, &message)
            }
            State::SentClientFinal { server_signature } => {
                self.handle_server_final(&server_signature, &message)
            }
            State::Initial => {
                Err(self.fail("SCRAM received a server message before the client-first message"))
            }
            State::Done => Err(self.fail("SCRAM received a server message after completion")),
            State::Failed => Err(self.fail("SCRAM exchange already failed")),
        }
    }
}

/// `saslname` escaping of RFC 5802: `=` → `=3D`, `,` → `=2C`.
fn escape_username(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

/// Splits `a=value,b=value` into `(a, value)` pairs.
fn parse_attributes(message: &str) -> Result<Vec<(char, &str)>, String> {
    message
        .split(',')
        .map(|part| {
            let mut chars = part.chars();
            match (chars.next(), chars.next()) {
                (Some(name), Some('=')) if name.is_ascii_alphabetic() => Ok((name, &part[2..])),
                _ => Err(format!("attribute {part:?} is not of the form x=value")),
            }
        })
        .collect()
}

fn find<'a>(attrs: &[(char, &'a str)], name: char) -> Option<&'a str> {
    attrs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SCRAM-SHA-256 example exchange of RFC 7677, section 3.
    #[test]
    fn sha256_matches_rfc7677_example() {
        let mut scram = Scram::with_nonce(
            ScramHash::Sha256,
            "user".into(),
            Secret::new("pencil"),
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        assert_eq!(
            scram.initial_response().unwrap(),
            b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
        );
        let server_first =
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let client_final = scram.evaluate(server_first).unwrap();
        assert_eq!(
            client_final,
            SaslStep::Respond(
                b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
                    .to_vec()
            )
        );
        let step = scram
            .evaluate(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        assert_eq!(step, SaslStep::Done);
    }

    #[test]
    fn wrong_server_signature_is_an_authentication_failure() {
        let mut scram = Scram::with_nonce(
            ScramHash::Sha256,
            "user".into(),
            Secret::new("pencil"),
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        scram.initial_response().unwrap();
        scram
            .evaluate(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
            .unwrap();
        // First character of the RFC signature changed.
        let err = scram
            .evaluate(b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap_err();
        assert!(err.0.contains("server signature does not match"), "{err}");
    }

    #[test]
    fn server_nonce_must_extend_client_nonce() {
        let mut scram = Scram::with_nonce(
            ScramHash::Sha256,
            "user".into(),
            Secret::new("pencil"),
            "abc".into(),
        );
        scram.initial_response().unwrap();
        let err = scram
            .evaluate(b"r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
            .unwrap_err();
        assert!(err.0.contains("nonce"), "{err}");
    }

    #[test]
    fn absurd_iteration_count_is_rejected() {
        let mut scram = Scram::with_nonce(
            ScramHash::Sha512,
            "user".into(),
            Secret::new("pencil"),
            "abc".into(),
        );
        scram.initial_response().unwrap();
        let err = scram
            .evaluate(b"r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4000000000")
            .unwrap_err();
        assert!(err.0.contains("iteration"), "{err}");
    }

    #[test]
    fn username_special_characters_are_escaped() {
        let mut scram = Scram::with_nonce(
            ScramHash::Sha256,
            "a=b,c".into(),
            Secret::new("p"),
            "n".into(),
        );
        assert_eq!(scram.initial_response().unwrap(), b"n,,n=a=3Db=2Cc,r=n");
    }

    /// A minimal SCRAM-SHA-512 server written directly against the RFC
    /// formulas with the `sha2`/`hmac`/`pbkdf2` primitives (not through
    /// `ScramHash`), to check the client end to end.
    #[test]
    fn sha512_round_trip_with_independent_server() {
        let password = "s3cr3t-päss";
        let salt = b"0123456789abcdef";
        let iterations = 4096;
        let mut client =
            Scram::new(ScramHash::Sha512, "mm2".into(), Secret::new(password)).unwrap();

        let client_first = String::from_utf8(client.initial_response().unwrap()).unwrap();
        let client_first_bare = client_first.strip_prefix("n,,").unwrap().to_string();
        let client_nonce = client_first_bare.split(",r=").nth(1).unwrap().to_string();
        let server_first = format!(
            "r={client_nonce}SERVERNONCE,s={},i={iterations}",
            BASE64.encode(salt)
        );

        let SaslStep::Respond(client_final) = client.evaluate(server_first.as_bytes()).unwrap()
        else {
            panic!("expected client-final");
        };
        let client_final = String::from_utf8(client_final).unwrap();
        let (without_proof, proof_b64) = client_final.split_once(",p=").unwrap();
        assert_eq!(without_proof, format!("c=biws,r={client_nonce}SERVERNONCE"));

        // Server side: recover ClientKey from the proof and check H(ClientKey) == StoredKey.
        let salted = pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password.as_bytes(), salt, iterations);
        let mac = |key: &[u8], data: &[u8]| {
            let mut m = Hmac::<Sha512>::new_from_slice(key).unwrap();
            m.update(data);
            m.finalize().into_bytes().to_vec()
        };
        let stored_key = Sha512::digest(mac(&salted, b"Client Key")).to_vec();
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let client_signature = mac(&stored_key, auth_message.as_bytes());
        let proof = BASE64.decode(proof_b64).unwrap();
        let client_key: Vec<u8> = proof
            .iter()
            .zip(&client_signature)
            .map(|(p, s)| p ^ s)
            .collect();
        assert_eq!(
            Sha512::digest(&client_key).to_vec(),
            stored_key,
            "client proof must verify"
        );

        let server_signature = mac(&mac(&salted, b"Server Key"), auth_message.as_bytes());
        let server_final = format!("v={}", BASE64.encode(server_signature));
        assert_eq!(
            client.evaluate(server_final.as_bytes()).unwrap(),
            SaslStep::Done
        );
    }

    #[test]
    fn server_error_attribute_is_reported() {
        let mut scram =
            Scram::with_nonce(ScramHash::Sha512, "u".into(), Secret::new("p"), "n".into());
        scram.initial_response().unwrap();
        let err = scram.evaluate(b"e=unknown-user").unwrap_err();
        assert_eq!(err.0, "server error: unknown-user");
    }
}
