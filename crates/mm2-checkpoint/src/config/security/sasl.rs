//! SASL settings of a cluster connection: the mechanism and the credentials
//! read from `sasl.jaas.config` (PLAIN and SCRAM login modules, the MSK IAM
//! library's `IAMLoginModule` for `AWS_MSK_IAM`), or the OAUTHBEARER
//! settings ([`super::oauth`]).

use kafka_lite::Secret;

use super::cluster::Keys;
use super::oauth::{OAUTH_LOGIN_HANDLERS, OAUTH_LOGIN_MODULE, OAuthSettings, build_oauth};
use crate::config::check::{NotChecked, Unknown};
use crate::config::error::ConfigError;
use crate::config::jaas;
use crate::config::providers::{Resolution, is_one_reference, replace_references};

const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
/// The login module of Amazon MSK's IAM library (`aws-msk-iam-auth`).
const IAM_LOGIN_MODULE: &str = "software.amazon.msk.auth.iam.IAMLoginModule";
/// Its SASL client callback handler, which MSK's documentation sets next to
/// it; it names our built-in `AWS_MSK_IAM` client.
const IAM_CALLBACK_HANDLER: &str = "software.amazon.msk.auth.iam.IAMClientCallbackHandler";
/// The library's OAUTHBEARER handler (the OAUTHBEARER form MSK accepts).
const IAM_OAUTHBEARER_HANDLER: &str =
    "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler";

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
    /// `AWS_MSK_IAM`: Amazon MSK's IAM authentication with AWS credentials.
    AwsMskIam,
}

impl SaslMechanism {
    /// The mechanism name as Kafka spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
            Self::OAuthBearer => "OAUTHBEARER",
            Self::AwsMskIam => "AWS_MSK_IAM",
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
    /// `AWS_MSK_IAM`: where the AWS credentials come from (`None` for the
    /// other mechanisms, whose credentials are `username` and `password`).
    pub aws_iam: Option<AwsIamLogin>,
}

/// The `IAMLoginModule` options that choose AWS credentials (the MSK IAM
/// library's names). Without any, the AWS SDK's default chain is used.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct AwsIamLogin {
    /// `awsProfileName`: a profile of the shared credentials/config files.
    pub profile: Option<String>,
    /// `awsRoleArn`: a role to assume through STS.
    pub role_arn: Option<String>,
    /// `awsRoleSessionName` (the library's default `aws-msk-iam-auth`).
    pub role_session_name: Option<String>,
    /// `awsRoleExternalId`.
    pub role_external_id: Option<String>,
    /// `awsRoleAccessKeyId`, `awsRoleSecretAccessKey`, `awsRoleSessionToken`:
    /// the credentials that assume `role_arn` (else the default chain's).
    pub role_keys: Option<(String, Secret, Option<Secret>)>,
    /// `awsStsRegion` (default `aws-global`).
    pub sts_region: Option<String>,
    /// `awsAddDefaultProviders` (default true): whether the default chain
    /// follows the profile and role providers.
    pub default_providers: bool,
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
    let iam = keys
        .get("sasl.mechanism")
        .and_then(|s| s.text().ok())
        .is_some_and(|m| m.trim() == "AWS_MSK_IAM");
    let oauth_bearer = keys
        .get("sasl.mechanism")
        .and_then(|s| s.text().ok())
        .is_some_and(|m| m.trim() == "OAUTHBEARER");
    for handler in [
        "sasl.login.callback.handler.class",
        "sasl.client.callback.handler.class",
        "sasl.login.class",
    ] {
        let Some(s) = keys.get(handler) else {
            continue;
        };
        let class = s.text().map(str::trim).unwrap_or("");
        if handler == "sasl.client.callback.handler.class" && class == IAM_CALLBACK_HANDLER {
            if !iam {
                handlers = Err(keys.fail(s.error(format!(
                    "{IAM_CALLBACK_HANDLER} belongs to sasl.mechanism=AWS_MSK_IAM"
                ))));
            }
            continue;
        }
        // The MSK IAM library's OAUTHBEARER handler names our built-in MSK
        // IAM token; whether it fits the mechanism is checked below. Its
        // README sets it as the client callback handler too.
        if handler == "sasl.login.callback.handler.class" && class == IAM_OAUTHBEARER_HANDLER {
            continue;
        }
        if handler == "sasl.client.callback.handler.class" && class == IAM_OAUTHBEARER_HANDLER {
            if !oauth_bearer {
                handlers = Err(keys.fail(s.error(format!(
                    "{IAM_OAUTHBEARER_HANDLER} belongs to sasl.mechanism=OAUTHBEARER"
                ))));
            }
            continue;
        }
        // The known OAuth login handler names our built-in token fetching;
        // whether it fits the mechanism is checked with the mechanism.
        if handler == "sasl.login.callback.handler.class"
            && s.text()
                .is_ok_and(|v| OAUTH_LOGIN_HANDLERS.contains(&v.trim()))
        {
            continue;
        }
        // A class name is no secret; an unread one (`--no-secrets`) is shown as such.
        let class = s.text().map(str::trim).unwrap_or(NOT_READ);
        handlers = Err(keys.fail(s.error(format!(
            "class `{class}` is not supported: mm2-checkpoint runs no Java and has no custom \
             SASL login or callback classes; use sasl.mechanism PLAIN or SCRAM-SHA-256/512 \
             with username and password in sasl.jaas.config, OAUTHBEARER with login callback \
             handler org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler, \
             or AWS_MSK_IAM with the MSK IAM library's class names"
        ))));
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
        Some("AWS_MSK_IAM") => Ok((SaslMechanism::AwsMskIam, IAM_LOGIN_MODULE)),
        Some(other) => refused(format!(
            "unknown mechanism `{other}`; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, \
             OAUTHBEARER or AWS_MSK_IAM"
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
                SaslMechanism::OAuthBearer if !msk_iam_oauth(keys) => {
                    Some(build_oauth(keys, None, NOT_READ)?)
                }
                _ => None,
            };
            return Ok(SaslCredentials {
                mechanism,
                username: NOT_READ.to_string(),
                password: Secret::new(""),
                oauth,
                aws_iam: (mechanism == SaslMechanism::AwsMskIam
                    || (mechanism == SaslMechanism::OAuthBearer && msk_iam_oauth(keys)))
                .then(|| AwsIamLogin {
                    default_providers: true,
                    ..AwsIamLogin::default()
                }),
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
    if mechanism == SaslMechanism::AwsMskIam
        || (mechanism == SaslMechanism::OAuthBearer && msk_iam_oauth(keys))
    {
        let aws_iam = aws_iam_login(&entry.options).map_err(fail)?;
        return Ok(SaslCredentials {
            mechanism,
            username: String::new(),
            password: Secret::new(""),
            oauth: None,
            aws_iam: Some(aws_iam),
        });
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
            aws_iam: None,
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
        aws_iam: None,
    })
}

/// Whether an OAUTHBEARER cluster takes its tokens from the MSK IAM
/// library's handler (MSK's OAUTHBEARER form of IAM authentication) rather
/// than from an OIDC token endpoint.
fn msk_iam_oauth(keys: &Keys<'_>) -> bool {
    keys.get("sasl.login.callback.handler.class")
        .and_then(|s| s.text().ok())
        .is_some_and(|v| v.trim() == IAM_OAUTHBEARER_HANDLER)
}

/// The options of an `IAMLoginModule` entry (or, for MSK's OAUTHBEARER
/// form, of the `OAuthBearerLoginModule` entry, which takes the same ones). Options the library knows but
/// mm2-checkpoint has no use for are accepted; ones that would change what
/// it does and that it cannot honour are refused; others are refused as
/// unknown (a misspelt `awsRoleArn` must not silently use other
/// credentials). Messages never repeat option values.
fn aws_iam_login(
    options: &std::collections::BTreeMap<String, String>,
) -> Result<AwsIamLogin, String> {
    let text = |k: &str| {
        options
            .get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let flag = |k: &str, default: bool| -> Result<bool, String> {
        match options.get(k).map(|v| v.trim().to_ascii_lowercase()) {
            None => Ok(default),
            Some(v) if v == "true" => Ok(true),
            Some(v) if v == "false" => Ok(false),
            Some(_) => Err(format!("option `{k}` must be true or false")),
        }
    };
    for key in options.keys() {
        match key.as_str() {
            "awsProfileName"
            | "awsRoleArn"
            | "awsRoleSessionName"
            | "awsRoleExternalId"
            | "awsRoleAccessKeyId"
            | "awsRoleSecretAccessKey"
            | "awsRoleSessionToken"
            | "awsStsRegion"
            | "awsAddDefaultProviders"
            | "awsDebugCreds"
            | "awsMaxRetries"
            | "awsMaxBackOffTimeMs"
            | "awsShouldUseFips" => {}
            "awsMskRegionProvider" => {
                return Err(
                    "option `awsMskRegionProvider` names a Java class, which mm2-checkpoint \
                     cannot load; the region comes from the broker host name, else AWS_REGION"
                        .into(),
                );
            }
            other => {
                return Err(format!(
                    "option `{other}` is not an option of {IAM_LOGIN_MODULE}"
                ));
            }
        }
    }
    if flag("awsShouldUseFips", false)? {
        return Err(
            "awsShouldUseFips=true (FIPS STS endpoints) is not supported by mm2-checkpoint; \
             set the STS endpoint with AWS_ENDPOINT_URL_STS instead"
                .into(),
        );
    }
    flag("awsDebugCreds", false)?;
    for k in ["awsMaxRetries", "awsMaxBackOffTimeMs"] {
        if let Some(v) = options.get(k)
            && v.trim().parse::<u32>().is_err()
        {
            return Err(format!("option `{k}` must be a whole number"));
        }
    }
    let role_keys = match (
        text("awsRoleAccessKeyId"),
        options
            .get("awsRoleSecretAccessKey")
            .filter(|v| !v.is_empty()),
    ) {
        (None, None) => None,
        (Some(id), Some(secret)) => Some((
            id,
            Secret::new(secret.clone()),
            options
                .get("awsRoleSessionToken")
                .filter(|v| !v.is_empty())
                .map(|t| Secret::new(t.clone())),
        )),
        _ => {
            return Err("awsRoleAccessKeyId and awsRoleSecretAccessKey go together".into());
        }
    };
    let role_arn = text("awsRoleArn");
    if role_arn.is_none()
        && (role_keys.is_some()
            || text("awsRoleSessionName").is_some()
            || text("awsRoleExternalId").is_some())
    {
        return Err(
            "awsRoleSessionName, awsRoleExternalId and awsRoleAccessKeyId need awsRoleArn".into(),
        );
    }
    Ok(AwsIamLogin {
        profile: text("awsProfileName"),
        role_arn,
        role_session_name: text("awsRoleSessionName"),
        role_external_id: text("awsRoleExternalId"),
        role_keys,
        sts_region: text("awsStsRegion"),
        default_providers: flag("awsAddDefaultProviders", true)?,
    })
}
