//! The test clusters' `OAUTH` listener: SASL OAUTHBEARER validated by Kafka's
//! own `OAuthBearerValidatorCallbackHandler` against a JWKS file, plus
//! SCRAM-SHA-512, with a short `connections.max.reauth.ms` so that tests see
//! KIP-368 re-authentication.
//!
//! `kafka up` makes one RSA signing key (with `openssl`) and writes its public
//! half as a JWKS under `<root>/oauth/`; tests read the private key from
//! `clusters.json` and sign their own RS256 tokens with it (they also play
//! the token endpoint). Kafka 4 only fetches a JWKS from URLs listed in the
//! JVM system property `org.apache.kafka.sasl.oauthbearer.allowed.urls`,
//! which [`allowed_urls_property`] gives the broker.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::layout::Layout;
use crate::certs::openssl;

/// The listener's `connections.max.reauth.ms`: short, so a test of a minute
/// sees several re-authentications.
pub(super) const REAUTH_MS: u64 = 10_000;
/// The `kid` of the signing key in the JWKS.
const KEY_ID: &str = "xtask-oauth-1";
/// The `iss` claim the brokers expect.
const ISSUER: &str = "https://oauth.mm2-checkpoint.test";
/// The `aud` claim the brokers expect.
const AUDIENCE: &str = "kafka-test-clusters";

/// The files and expectations of the OAUTH listeners.
#[derive(Debug, Clone)]
pub(super) struct OAuthFiles {
    pub(super) jwks: PathBuf,
    pub(super) signing_key_pem: PathBuf,
}

impl Layout {
    fn oauth_dir(&self) -> PathBuf {
        self.root.join("oauth")
    }
}

/// The JWKS path under `layout`.
fn jwks_path(layout: &Layout) -> PathBuf {
    layout.oauth_dir().join("jwks.json")
}

/// The broker JVM's `-D` option allowing the JWKS file URL.
pub(super) fn allowed_urls_property(layout: &Layout) -> String {
    format!(
        "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file://{}",
        jwks_path(layout).display()
    )
}

/// Makes a fresh RSA signing key and its JWKS under `<root>/oauth/`.
pub(super) fn generate(layout: &Layout) -> Result<OAuthFiles> {
    let dir = layout.oauth_dir();
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    openssl(
        &dir,
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            "signing-key.pem",
        ],
    )?;
    let out = Command::new("openssl")
        .args(["rsa", "-in", "signing-key.pem", "-noout", "-modulus"])
        .current_dir(&dir)
        .output()
        .context("running `openssl rsa -modulus`")?;
    if !out.status.success() {
        bail!(
            "`openssl rsa -modulus` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = text
        .trim()
        .strip_prefix("Modulus=")
        .context("`openssl rsa -modulus` printed no Modulus=")?;
    let modulus = decode_hex(hex)?;
    // openssl genpkey uses the public exponent 65537 (0x010001).
    let jwks = serde_json::json!({
        "keys": [{
            "kty": "RSA",
            "kid": KEY_ID,
            "use": "sig",
            "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(modulus),
            "e": URL_SAFE_NO_PAD.encode([1u8, 0, 1]),
        }]
    });
    let jwks_file = jwks_path(layout);
    fs::write(&jwks_file, serde_json::to_string_pretty(&jwks)? + "\n")
        .with_context(|| format!("writing {}", jwks_file.display()))?;
    Ok(OAuthFiles {
        jwks: jwks_file,
        signing_key_pem: dir.join("signing-key.pem"),
    })
}

fn decode_hex(hex: &str) -> Result<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        bail!("odd-length modulus from openssl");
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).context("modulus is not hex"))
        .collect()
}

/// The `server.properties` lines of the OAUTH listener (its port is in
/// `listeners`; the protocol map names it `OAUTH:SASL_PLAINTEXT`).
///
/// The validator class is named explicitly: in Kafka 4.1.1 the handler's
/// default (`DefaultJwtValidator` built without a key resolver) falls back
/// to the client-side validator, which checks neither the signature nor the
/// audience and issuer (seen in the 4.1.1 jar; a token for another audience
/// was accepted before this line was added).
pub(super) fn listener_properties(files: &OAuthFiles) -> String {
    let prefix = "listener.name.oauth";
    format!(
        "# OAUTH: OAUTHBEARER (JWTs checked against the JWKS file) and SCRAM-SHA-512, re-authenticated every {REAUTH_MS} ms.
{prefix}.sasl.enabled.mechanisms=OAUTHBEARER,SCRAM-SHA-512
{prefix}.connections.max.reauth.ms={REAUTH_MS}
{prefix}.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;
{prefix}.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
{prefix}.sasl.oauthbearer.jwt.validator.class=org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator
{prefix}.sasl.oauthbearer.jwks.endpoint.url=file://{jwks}
{prefix}.sasl.oauthbearer.expected.audience={AUDIENCE}
{prefix}.sasl.oauthbearer.expected.issuer={ISSUER}
{prefix}.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
",
        jwks = files.jwks.display(),
    )
}

/// What `clusters.json` records of a cluster's OAUTH listener at `address`.
pub(super) fn listener_info(files: &OAuthFiles, address: String) -> e2e::OAuthListener {
    e2e::OAuthListener {
        bootstrap: address,
        jwks: files.jwks.clone(),
        signing_key_pem: files.signing_key_pem.clone(),
        key_id: KEY_ID.to_owned(),
        issuer: ISSUER.to_owned(),
        audience: AUDIENCE.to_owned(),
        reauth_ms: REAUTH_MS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn listener_names_the_jwks_and_expectations() {
        let files = OAuthFiles {
            jwks: Path::new("/k/oauth/jwks.json").to_path_buf(),
            signing_key_pem: Path::new("/k/oauth/signing-key.pem").to_path_buf(),
        };
        let p = listener_properties(&files);
        assert!(
            p.contains("jwks.endpoint.url=file:///k/oauth/jwks.json"),
            "{p}"
        );
        assert!(p.contains("connections.max.reauth.ms=10000"), "{p}");
        assert_eq!(decode_hex("00ff10").unwrap(), [0, 255, 16]);
    }
}
