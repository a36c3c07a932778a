//! Checking a whole configuration in one pass: every independent error,
//! every warning, and what could not be checked.
//!
//! `validate` should list everything wrong with a file at once, not the first
//! problem only. So the reading code does not stop at an error: it records it
//! in a `Checker` and goes on with the next independent setting (the next
//! key, the next cluster, the next flow). A value that is wrong, or that was
//! not read (see [`Secrets::Skip`]), becomes `Unknown`; what depends on it
//! is skipped, because its verdict would only repeat the first problem or be
//! wrong. Where a whole part is skipped, a [`NotChecked`] entry says so.
//!
//! Nothing recorded here holds a secret: errors and warnings are built by the
//! code that knows which values are secret (see `error.rs`), and
//! [`NotChecked`] entries name keys, provider references and file paths only.

use std::cell::RefCell;
use std::fmt;

use super::error::ConfigError;

/// Whether loading reads the secrets a configuration refers to: config
/// provider values (`${env:...}`, `${file:...}`, `${dir:...}`) and key and
/// trust material (stores, PEM files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Secrets {
    /// Read and check them (`validate`, `run`, `translate`).
    #[default]
    Read,
    /// Check the structure only (`validate --no-secrets`, for CI without the
    /// production secrets): keys, values, flows and the rules between keys
    /// are checked; provider values are not read and material is not opened.
    /// Each value or file left out is reported as [`NotChecked`], and a value
    /// that depends on one is not checked either. The result never holds a
    /// runnable [`MirrorConfig`](super::MirrorConfig).
    Skip,
}

/// Something accepted but worth fixing: a key nothing reads, a key without
/// effect, a certificate near its end of validity, host names not verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigWarning {
    key: Option<String>,
    line: Option<usize>,
    message: String,
}

impl ConfigWarning {
    /// A warning about `key` (as written in the file) on `line`. `message` is
    /// the whole sentence as `validate` prints it, naming the key itself.
    pub fn new(key: Option<String>, line: Option<usize>, message: impl Into<String>) -> Self {
        Self {
            key,
            line,
            message: message.into(),
        }
    }

    /// The key the warning is about, as written in the file, if one is.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The 1-based line of that key, if it came from a file with lines.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The warning as `validate` prints it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A setting, or a part of the configuration, that was not checked, and why:
/// with [`Secrets::Skip`], a provider value or a store that was not read; or
/// a check that depends on a setting with an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotChecked {
    key: Option<String>,
    line: Option<usize>,
    why: String,
}

impl NotChecked {
    /// `key` (as written, on `line`) was not checked because of `why`.
    pub fn new(key: Option<String>, line: Option<usize>, why: impl Into<String>) -> Self {
        Self {
            key,
            line,
            why: why.into(),
        }
    }

    /// The key, as written in the file, if the entry is about one.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The 1-based line of that key, if known.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// Why it was not checked.
    pub fn why(&self) -> &str {
        &self.why
    }
}

impl fmt::Display for NotChecked {
    /// `<key> (line N) (<why>)`, or `<why>` without a key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.key, self.line) {
            (Some(key), Some(line)) => write!(f, "{key} (line {line}) ({})", self.why),
            (Some(key), None) => write!(f, "{key} ({})", self.why),
            (None, _) => f.write_str(&self.why),
        }
    }
}

/// The value of a setting could not be known: its error, or why it was not
/// read, is already recorded in the [`Checker`]. Whatever depends on the value
/// is skipped (propagate it with `?`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unknown;

/// What one check of a configuration has found so far. Shared by reference
/// (interior mutability), so that closures and nested readers can all record.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    secrets: Secrets,
    errors: RefCell<Vec<ConfigError>>,
    warnings: RefCell<Vec<ConfigWarning>>,
    not_checked: RefCell<Vec<NotChecked>>,
}

impl Checker {
    /// A fresh check that reads secrets or not.
    pub(crate) fn new(secrets: Secrets) -> Self {
        Self {
            secrets,
            ..Self::default()
        }
    }

    /// Whether provider values and key material are read.
    pub(crate) fn reads_secrets(&self) -> bool {
        self.secrets == Secrets::Read
    }

    /// Records `error` (once: a cluster shared by two flows, or a top-level
    /// key read by both, finds the same problem twice).
    pub(crate) fn error(&self, error: ConfigError) -> Unknown {
        let mut errors = self.errors.borrow_mut();
        if !errors.contains(&error) {
            errors.push(error);
        }
        Unknown
    }

    /// The value of `result`, or [`Unknown`] after recording its error.
    pub(crate) fn check<T>(&self, result: Result<T, ConfigError>) -> Result<T, Unknown> {
        result.map_err(|e| self.error(e))
    }

    /// Records a warning (once).
    pub(crate) fn warn(&self, warning: ConfigWarning) {
        let mut warnings = self.warnings.borrow_mut();
        if !warnings.contains(&warning) {
            warnings.push(warning);
        }
    }

    /// Records that something was not checked (once).
    pub(crate) fn not_checked(&self, entry: NotChecked) {
        let mut list = self.not_checked.borrow_mut();
        if !list.contains(&entry) {
            list.push(entry);
        }
    }

    /// The number of errors recorded so far.
    pub(crate) fn error_count(&self) -> usize {
        self.errors.borrow().len()
    }

    /// Everything recorded: errors, warnings, and what was not checked.
    pub(crate) fn into_findings(self) -> (Vec<ConfigError>, Vec<ConfigWarning>, Vec<NotChecked>) {
        (
            self.errors.into_inner(),
            self.warnings.into_inner(),
            self.not_checked.into_inner(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_error_warning_or_note_is_recorded_once() {
        let c = Checker::new(Secrets::Read);
        let e = ConfigError::for_key("A.security.protocol", "bad").at_line(Some(3));
        assert_eq!(c.check::<()>(Err(e.clone())), Err(Unknown));
        c.error(e.clone());
        c.error(ConfigError::for_key("B.security.protocol", "bad"));
        c.warn(ConfigWarning::new(None, None, "w"));
        c.warn(ConfigWarning::new(None, None, "w"));
        c.not_checked(NotChecked::new(Some("k".into()), Some(1), "why"));
        c.not_checked(NotChecked::new(Some("k".into()), Some(1), "why"));
        assert_eq!(c.error_count(), 2);
        let (errors, warnings, not_checked) = c.into_findings();
        assert_eq!(errors[0], e);
        assert_eq!(warnings.len(), 1);
        assert_eq!(not_checked.len(), 1);
        assert_eq!(not_checked[0].to_string(), "k (line 1) (why)");
    }

    #[test]
    fn a_value_check_passes_ok_values_through() {
        let c = Checker::new(Secrets::Skip);
        assert_eq!(c.check(Ok::<_, ConfigError>(5)), Ok(5));
        assert!(!c.reads_secrets());
        assert_eq!(c.error_count(), 0);
    }
}
