//! SASL settings of a cluster connection: the mechanism and the credentials
//! read from `sasl.jaas.config` (PLAIN and SCRAM login modules), or the
//! OAUTHBEARER settings ([`super::oauth`]).

use super::Keys;
use super::oauth::{OAUTH_LOGIN_HANDLERS, OAUTH_LOGIN_MODULE, OAuthSettings, build_oauth};
use crate::config::check::{NotChecked, Unknown};
use crate::config::error::ConfigError;
use crate::config::jaas;
use crate::config::providers::{Resolution, is_one_reference, replace_references};
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
    /// `OAUTHBEARER` with tokens from an OIDC token endpoint or a file.
    OAuthBearer,
}

impl SaslMechanism {
    /// The mechanism name as Kafka spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
            Self::OAuthBearer => "OAUTHBEARER",
        }
    }
}

/// SASL mechanism and credentials, from `sasl.mechanism` and `sasl.jaas.config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaslCredentials {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// The `username` option of the JAAS entry (PLAIN, SCRAM; empty for
    /// OAUTHBEARER).
    pub username: String,
    /// The `password` option of the JAAS entry (PLAIN, SCRAM).
    pub password: Secret,
    /// The OAUTHBEARER settings; `Some` iff the mechanism is OAUTHBEARER.
    pub oauth: Option<OAuthSettings>,
}

/// Why GSSAPI is refused, and what to use instead.
const GSSAPI_REFUSAL: &str = "mm2-checkpoint does not support Kerberos and will not: it \
    needs a Kerberos library (MIT krb5 or Heimdal, both C), which the static, C-free binary \
    cannot carry. Give this client a SCRAM-SHA-512 or SCRAM-SHA-256 identity (or PLAIN over \
    SASL_SSL, or a client certificate over SSL) and set sasl.mechanism accordingly";

/// How `validate --no-secrets` shows a JAAS option that comes from a config
/// provider it did not read.
pub const NOT_READ: &str = "[not read: --no-secrets]";

/// Stands for an unread provider reference inside a JAAS text, so that the
/// text's structure can still be checked: a JAAS word, never a real value.
const NOT_READ_TOKEN: &str = "__mm2_checkpoint_not_read__";

/// The SASL settings of a cluster: the mechanism and the credentials in
/// `sasl.jaas.config`. Custom handler classes and the mechanism are checked
/// independently; the JAAS entry depends on the mechanism.
pub(super) fn build_sasl(keys: &Keys<'_>) -> Result<SaslCredentials, Unknown> {
    let mut handlers = Ok(());
    for handler in [
        "sasl.login.callback.handler.class",
        "sasl.client.callback.handler.class",
        "sasl.login.class",
    ] {
        let Some(s) = keys.get(handler) else {
            continue;
        };
        // The known OAuth login handler names our built-in token fetching;
        // whether it fits the mechanism is checked with the mechanism.
        if handler == "sasl.login.callback.handler.class"
            && s.text()
                .is_ok_and(|v| OAUTH_LOGIN_HANDLERS.contains(&v.trim()))
        {
            continue;
        }
        handlers = Err(keys.fail(s.error(
            "custom SASL login and callback classes are not supported by mm2-checkpoint; \
             use sasl.mechanism PLAIN or SCRAM-SHA-256/512 with username and password in \
             sasl.jaas.config, or OAUTHBEARER with login callback handler \
             org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        )));
    }
    let Ok((mechanism, module)) = mechanism(keys) else {
        if let Some(jaas) = keys.get("sasl.jaas.config") {
            keys.checker.not_checked(NotChecked::new(
                Some(jaas.origin.clone()),
                jaas.line,
                "its login module must match sasl.mechanism, which has an error or was not read",
            ));
        }
        return Err(Unknown);
    };
    if mechanism != SaslMechanism::OAuthBearer
        && let Some(s) = keys.get("sasl.login.callback.handler.class")
        && handlers.is_ok()
    {
        handlers = Err(keys.fail(s.error(format!(
            "the OAuth login callback handler applies to sasl.mechanism=OAUTHBEARER, not {}; \
             remove the key",
            mechanism.name()
        ))));
    }
    let credentials = credentials(keys, mechanism, module);
    handlers?;
    credentials
}

/// The mechanism and the login module it takes.
fn mechanism(keys: &Keys<'_>) -> Result<(SaslMechanism, &'static str), Unknown> {
    let value = match keys.get("sasl.mechanism") {
        Some(s) => Some(s.text()?.trim()),
        None => None,
    };
    let refused = |message: String| Err(keys.fail(keys.error("sasl.mechanism", message)));
    match value {
        Some("PLAIN") => Ok((SaslMechanism::Plain, PLAIN_LOGIN_MODULE)),
        Some("SCRAM-SHA-256") => Ok((SaslMechanism::ScramSha256, SCRAM_LOGIN_MODULE)),
        Some("SCRAM-SHA-512") => Ok((SaslMechanism::ScramSha512, SCRAM_LOGIN_MODULE)),
        None => Err(keys.fail(ConfigError::for_key(
            keys.missing("sasl.mechanism"),
            format!(
                "is not set, so MirrorMaker 2 would use Kafka's default, GSSAPI (Kerberos); \
                 {GSSAPI_REFUSAL}"
            ),
        ))),
        Some("GSSAPI") => refused(format!("GSSAPI (Kerberos): {GSSAPI_REFUSAL}")),
        Some("OAUTHBEARER") => Ok((SaslMechanism::OAuthBearer, OAUTH_LOGIN_MODULE)),
        Some(other) => refused(format!(
            "unknown mechanism `{other}`; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
        )),
    }
}

/// The username and password of the `sasl.jaas.config` entry for `module`.
///
/// With `--no-secrets`, an entry whose options come from config providers is
/// still checked for its structure (module, options present), with the
/// references standing for their values; an entry that is one reference as a
/// whole cannot be checked.
fn credentials(
    keys: &Keys<'_>,
    mechanism: SaslMechanism,
    module: &str,
) -> Result<SaslCredentials, Unknown> {
    let jaas_setting = keys.get("sasl.jaas.config").ok_or_else(|| {
        keys.fail(ConfigError::for_key(
            keys.missing("sasl.jaas.config"),
            format!(
                "is required for SASL (JAAS files given with java.security.auth.login.config are \
                 not read); e.g. `{module} required username=\"...\" password=\"...\";`"
            ),
        ))
    })?;
    let text = match jaas_setting.resolution {
        Resolution::Resolved => jaas_setting.value.clone(),
        Resolution::Failed => return Err(Unknown),
        Resolution::NotRead if is_one_reference(&jaas_setting.value) => {
            let oauth = match mechanism {
                SaslMechanism::OAuthBearer => Some(build_oauth(keys, None, NOT_READ)?),
                _ => None,
            };
            return Ok(SaslCredentials {
                mechanism,
                username: NOT_READ.to_string(),
                password: Secret::new(""),
                oauth,
            });
        }
        Resolution::NotRead => replace_references(&jaas_setting.value, NOT_READ_TOKEN),
    };
    let fail = |message: String| keys.fail(jaas_setting.error(message));
    let entry = jaas::parse(&text).map_err(fail)?;
    if entry.module != module {
        return Err(fail(format!(
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
        return Err(fail(
            "delegation-token authentication (tokenauth=true) is not supported by mm2-checkpoint"
                .to_string(),
        ));
    }
    if mechanism == SaslMechanism::OAuthBearer {
        let mut oauth = build_oauth(keys, Some((&entry, jaas_setting)), NOT_READ)?;
        oauth.client_id = oauth.client_id.replace(NOT_READ_TOKEN, NOT_READ);
        return Ok(SaslCredentials {
            mechanism,
            username: String::new(),
            password: Secret::new(""),
            oauth: Some(oauth),
        });
    }
    let username = entry
        .options
        .get("username")
        .map(|u| u.replace(NOT_READ_TOKEN, NOT_READ))
        .ok_or_else(|| fail("has no `username` option".to_string()))?;
    let password = entry
        .options
        .get("password")
        .cloned()
        .ok_or_else(|| fail("has no `password` option".to_string()))?;
    Ok(SaslCredentials {
        mechanism,
        username,
        password: Secret::new(password),
        oauth: None,
    })
}
