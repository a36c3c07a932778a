//! SASL mechanisms as small step machines, independent of the wire.
//!
//! A [`SaslMechanism`] produces an initial response, then evaluates each
//! server challenge into either a further response or "done". The
//! connection layer carries those bytes in SaslAuthenticate frames after a
//! SaslHandshake v1; the mechanisms know nothing about Kafka framing, so
//! another mechanism only needs to implement this trait. Credentials that
//! must be fetched first (OAUTHBEARER's token) are fetched by [`start`]
//! before the step machine is built, so the machines stay synchronous.

pub(crate) mod aws_msk_iam;
mod mechanism;
mod oauthbearer;
mod plain;
mod scram;

pub(crate) use mechanism::{SaslError, SaslMechanism, SaslStep};
pub(crate) use oauthbearer::OAuthBearer;
pub(crate) use plain::Plain;
pub(crate) use scram::{Scram, ScramHash};

use crate::config::{DynamicCredentials, SaslConfig, SaslMechanismKind};
use crate::credentials::CredentialError;

/// Why a mechanism could not start.
#[derive(Debug)]
pub(crate) enum StartError {
    /// The configuration does not fit the mechanism.
    Sasl(SaslError),
    /// The credential provider failed.
    Credentials(CredentialError),
}

/// Creates the mechanism configured in `config` for one authentication with
/// the broker at `broker` (`host:port`; mechanisms that sign for the host,
/// such as AWS_MSK_IAM, need it): fetches its credential from the provider
/// if it has one, and draws a fresh random nonce where the mechanism needs
/// one.
pub(crate) async fn start(
    config: &SaslConfig,
    broker: &str,
) -> Result<Box<dyn SaslMechanism>, StartError> {
    match (config.mechanism, &config.credentials) {
        (SaslMechanismKind::AwsMskIam, Some(DynamicCredentials::AwsMskIam(settings))) => {
            let host = broker
                .rsplit_once(':')
                .map_or(broker, |(host, _)| host)
                .trim_start_matches('[')
                .trim_end_matches(']');
            let region = crate::aws::region_from_host(host)
                .or(settings.region.as_deref())
                .ok_or_else(|| {
                    StartError::Sasl(SaslError(format!(
                        "the broker host name `{host}` names no AWS region (MSK's own names \
                         do): set the region (AWS_REGION, or the profile's region)"
                    )))
                })?;
            let credentials = settings
                .credentials
                .credential()
                .await
                .map_err(StartError::Credentials)?;
            Ok(Box::new(aws_msk_iam::AwsMskIam::new(
                host,
                region,
                &credentials,
                &settings.user_agent,
                std::time::SystemTime::now(),
            )))
        }
        (SaslMechanismKind::AwsMskIam, _) => Err(StartError::Sasl(SaslError(
            "AWS_MSK_IAM needs AWS credentials (SaslConfig::aws_msk_iam)".into(),
        ))),
        (SaslMechanismKind::OAuthBearer, Some(DynamicCredentials::BearerToken(provider))) => {
            let token = provider
                .credential()
                .await
                .map_err(StartError::Credentials)?;
            Ok(Box::new(OAuthBearer::new(token)))
        }
        (SaslMechanismKind::OAuthBearer, _) => Err(StartError::Sasl(SaslError(
            "OAUTHBEARER needs a bearer-token provider (SaslConfig::oauth_bearer)".into(),
        ))),
        _ => mechanism_for(config).map_err(StartError::Sasl),
    }
}

/// Creates a password mechanism (PLAIN, SCRAM) configured in `config`.
fn mechanism_for(config: &SaslConfig) -> Result<Box<dyn SaslMechanism>, SaslError> {
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
        SaslMechanismKind::OAuthBearer | SaslMechanismKind::AwsMskIam => {
            return Err(SaslError(format!(
                "{} takes a credential provider, not a password",
                config.mechanism.name()
            )));
        }
    })
}
