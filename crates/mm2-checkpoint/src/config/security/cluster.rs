//! The merged connection keys of one cluster ([`Keys`]), as the TLS, SASL
//! and OAuth readers of this module see them.

use std::collections::BTreeMap;

use crate::config::check::{Checker, Unknown};
use crate::config::error::ConfigError;
use crate::config::setting::Setting;

/// The merged client-connection keys of one cluster (un-prefixed key → setting).
pub(crate) type ConnectionSettings = BTreeMap<String, Setting>;

/// The merged connection keys of one cluster, read by the TLS, SASL and
/// OAuth readers, with the check that records their problems.
pub(super) struct Keys<'a> {
    /// The cluster alias, which names a missing key (`<alias>.<key>`).
    pub(super) alias: &'a str,
    /// The cluster's settings.
    pub(super) settings: &'a ConnectionSettings,
    /// Where problems are recorded.
    pub(super) checker: &'a Checker,
}

impl Keys<'_> {
    /// The setting, treating an all-whitespace value as absent (a value that
    /// is not known counts as present).
    pub(super) fn get(&self, key: &str) -> Option<&Setting> {
        self.settings
            .get(key)
            .filter(|s| s.text().is_err() || !s.value.trim().is_empty())
    }

    /// The setting as merged, blank or not.
    pub(super) fn raw(&self, key: &str) -> Option<&Setting> {
        self.settings.get(key)
    }

    /// The key to name when a setting is missing.
    pub(super) fn missing(&self, key: &str) -> String {
        format!("{}.{key}", self.alias)
    }

    /// An error about `key`: at its line, or naming it on the cluster when
    /// it is missing.
    pub(super) fn error(&self, key: &str, message: impl Into<String>) -> ConfigError {
        match self.raw(key) {
            Some(s) => s.error(message),
            None => ConfigError::for_key(self.missing(key), message),
        }
    }

    /// Records `error`; what depends on it is [`Unknown`].
    pub(super) fn fail(&self, error: ConfigError) -> Unknown {
        self.checker.error(error)
    }

    /// Whether every `<prefix>*` setting has its real value: none failed to
    /// resolve and none was left unread (`--no-secrets`).
    pub(super) fn all_known(&self, prefix: &str) -> bool {
        self.settings
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .all(|(_, s)| s.text().is_ok())
    }
}
