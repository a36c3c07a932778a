//! SASL settings of a cluster connection: the mechanism and the credentials
//! read from `sasl.jaas.config` (PLAIN and SCRAM login modules only).

use super::Keys;
use crate::config::error::ConfigError;
use crate::config::jaas;
use crate::config::secret::Secret;

const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// A supported SASL mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaslMechanism {
    /// `PLAIN` (only sensible over TLS).
    Plain,
    /// `SCRAM-SHA-256`.
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
}

impl SaslMechanism {
    /// The mechanism name as Kafka spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

/// SASL mechanism and credentials, from `sasl.mechanism` and `sasl.jaas.config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaslCredentials {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// The `username` option of the JAAS entry.
    pub username: String,
    /// The `password` option of the JAAS entry.
    pub password: Secret,
}

/// Why GSSAPI is refused, and what to use instead.
const GSSAPI_REFUSAL: &str = "mm2-checkpoint does not support Kerberos and will not: it \
    needs a Kerberos library (MIT krb5 or Heimdal, both C), which the static, C-free binary \
    cannot carry. Give this client a SCRAM-SHA-512 or SCRAM-SHA-256 identity (or PLAIN over \
    SASL_SSL, or a client certificate over SSL) and set sasl.mechanism accordingly";

pub(super) fn build_sasl(keys: &Keys<'_>) -> Result<SaslCredentials, ConfigError> {
    for handler in [
        "sasl.login.callback.handler.class",
        "sasl.client.callback.handler.class",
        "sasl.login.class",
    ] {
        if let Some(s) = keys.get(handler) {
            return Err(s.error(
                "custom SASL login and callback classes are not supported by mm2-checkpoint; \
                 use sasl.mechanism PLAIN or SCRAM-SHA-256/512 with username and password in \
                 sasl.jaas.config",
            ));
        }
    }
    let (mechanism, module) = match keys.get("sasl.mechanism").map(|s| s.value.trim()) {
        Some("PLAIN") => (SaslMechanism::Plain, PLAIN_LOGIN_MODULE),
        Some("SCRAM-SHA-256") => (SaslMechanism::ScramSha256, SCRAM_LOGIN_MODULE),
        Some("SCRAM-SHA-512") => (SaslMechanism::ScramSha512, SCRAM_LOGIN_MODULE),
        None => {
            return Err(ConfigError::for_key(
                keys.missing("sasl.mechanism"),
                format!(
                    "is not set, so MirrorMaker 2 would use Kafka's default, GSSAPI (Kerberos); \
                     {GSSAPI_REFUSAL}"
                ),
            ));
        }
        Some("GSSAPI") => {
            return Err(keys.error(
                "sasl.mechanism",
                format!("GSSAPI (Kerberos): {GSSAPI_REFUSAL}"),
            ));
        }
        Some(m @ "OAUTHBEARER") => {
            return Err(keys.error(
                "sasl.mechanism",
                format!(
                    "{m} is not supported by mm2-checkpoint yet; use SCRAM-SHA-512, SCRAM-SHA-256 \
                     or PLAIN (over SASL_SSL), or mutual TLS"
                ),
            ));
        }
        Some(other) => {
            return Err(keys.error(
                "sasl.mechanism",
                format!("unknown mechanism `{other}`; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
            ));
        }
    };
    let jaas_setting = keys.get("sasl.jaas.config").ok_or_else(|| {
        ConfigError::for_key(
            keys.missing("sasl.jaas.config"),
            format!(
                "is required for SASL (JAAS files given with java.security.auth.login.config are \
                 not read); e.g. `{module} required username=\"...\" password=\"...\";`"
            ),
        )
    })?;
    let entry = jaas::parse(&jaas_setting.value).map_err(|m| jaas_setting.error(m))?;
    if entry.module != module {
        return Err(jaas_setting.error(format!(
            "login module `{}` does not match sasl.mechanism={}; use {module}",
            entry.module,
            mechanism.name()
        )));
    }
    if entry
        .options
        .get("tokenauth")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return Err(jaas_setting.error(
            "delegation-token authentication (tokenauth=true) is not supported by mm2-checkpoint",
        ));
    }
    let username = entry
        .options
        .get("username")
        .cloned()
        .ok_or_else(|| jaas_setting.error("has no `username` option"))?;
    let password = entry
        .options
        .get("password")
        .cloned()
        .ok_or_else(|| jaas_setting.error("has no `password` option"))?;
    Ok(SaslCredentials {
        mechanism,
        username,
        password: Secret::new(password),
    })
}
