//! The TLS crypto provider of this process (docs/tls-providers.md):
//! [`TLS_PROVIDER_ENV`], read once, on this build and CPU. kafka-lite reads
//! no environment for it: the request goes to it with every TLS
//! configuration ([`kafka_lite::TlsConfig::provider`]) and every client
//! identity check.

use std::env::VarError;
use std::sync::OnceLock;

use kafka_lite::{BuiltIn, TlsProviderChoice, TlsProviderRequest, choose_tls_provider, this_cpu};

/// The environment variable that forces a provider for the whole process:
/// `auto` (the default), `graviola`, `portable` or `ring` (builds with the
/// `ring` feature only).
pub const TLS_PROVIDER_ENV: &str = "MM2_TLS_PROVIDER";

/// What [`TLS_PROVIDER_ENV`] asks for (unset: `auto`), read at the first
/// call and the same afterwards. Fails on an unknown value, naming the
/// variable.
pub fn requested() -> Result<TlsProviderRequest, kafka_lite::Error> {
    static REQUEST: OnceLock<Result<TlsProviderRequest, kafka_lite::Error>> = OnceLock::new();
    REQUEST
        .get_or_init(|| parse_request(std::env::var(TLS_PROVIDER_ENV)))
        .clone()
}

/// The request in the variable's value (`Err(NotPresent)`: unset).
fn parse_request(value: Result<String, VarError>) -> Result<TlsProviderRequest, kafka_lite::Error> {
    match value {
        Ok(value) => value
            .parse()
            .map_err(|detail: String| kafka_lite::Error::TlsConfig {
                detail: format!("{TLS_PROVIDER_ENV}: {detail}"),
            }),
        Err(VarError::NotPresent) => Ok(TlsProviderRequest::Auto),
        Err(VarError::NotUnicode(_)) => Err(kafka_lite::Error::TlsConfig {
            detail: format!("{TLS_PROVIDER_ENV} is not valid UTF-8"),
        }),
    }
}

/// The provider this process uses and why: [`requested`] on this build and
/// CPU. Fails if the variable is bad or forces a provider that cannot run
/// here.
pub fn choice() -> Result<TlsProviderChoice, kafka_lite::Error> {
    choose_tls_provider(BuiltIn::THIS, &this_cpu(), requested()?, TLS_PROVIDER_ENV)
}

/// The request for [`kafka_lite::TlsConfig::provider`]; the error names the
/// variable.
pub fn for_clients() -> Result<Option<TlsProviderRequest>, String> {
    requested().map(Some).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_is_read_as_before() {
        assert_eq!(
            parse_request(Err(VarError::NotPresent)).unwrap(),
            TlsProviderRequest::Auto
        );
        assert_eq!(
            parse_request(Ok("Portable".into())).unwrap(),
            TlsProviderRequest::Portable
        );
        assert_eq!(
            parse_request(Ok(String::new())).unwrap(),
            TlsProviderRequest::Auto
        );
        let e = parse_request(Ok("openssl".into())).unwrap_err().to_string();
        assert!(e.contains("MM2_TLS_PROVIDER: unknown TLS provider"), "{e}");
        let e = parse_request(Err(VarError::NotUnicode("\u{fffd}".into())))
            .unwrap_err()
            .to_string();
        assert!(e.contains("MM2_TLS_PROVIDER is not valid UTF-8"), "{e}");
    }

    #[test]
    fn a_forced_provider_is_named_by_the_variable() {
        let choice = choose_tls_provider(
            BuiltIn::THIS,
            &this_cpu(),
            TlsProviderRequest::Portable,
            TLS_PROVIDER_ENV,
        )
        .unwrap();
        assert!(
            choice.reason.starts_with("MM2_TLS_PROVIDER=portable"),
            "{}",
            choice.reason
        );
    }
}
