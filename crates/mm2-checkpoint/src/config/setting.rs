//! One value read from the file ([`Setting`]) and the parsers shared by the
//! readers of its kinds of values.

use super::check::{ConfigWarning, Unknown};
use super::error::ConfigError;
use super::providers::Resolution;

/// A value read from the file: the (provider-resolved) text and where it came from.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Setting {
    /// The value, with `${...}` references resolved; when they were not
    /// (see `resolution`), the text as written.
    pub(crate) value: String,
    /// The key as written in the file, e.g. `A->B.topics`.
    pub(crate) origin: String,
    /// The line that key is on.
    pub(crate) line: Option<usize>,
    /// Whether `value` is the real value.
    pub(crate) resolution: Resolution,
}

impl Setting {
    /// The value, or [`Unknown`] when it is not the real one: a reference in
    /// it failed (that error is recorded) or was not read (`--no-secrets`).
    /// Checks of a value's content go through this; presence checks need not.
    pub(crate) fn text(&self) -> Result<&str, Unknown> {
        match self.resolution {
            Resolution::Resolved => Ok(&self.value),
            Resolution::Failed | Resolution::NotRead => Err(Unknown),
        }
    }

    /// A warning about this setting's key.
    pub(crate) fn warning(&self, message: impl Into<String>) -> ConfigWarning {
        ConfigWarning::new(Some(self.origin.clone()), self.line, message)
    }

    /// An error about this setting's key, at its line.
    pub(crate) fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::for_key(self.origin.clone(), message).at_line(self.line)
    }

    /// `key (line N)`, or the key alone when it has no line.
    pub(crate) fn describe_origin(&self) -> String {
        match self.line {
            Some(line) => format!("{} (line {line})", self.origin),
            None => self.origin.clone(),
        }
    }
}

/// Java's `Boolean.parseBoolean`: `true` in any case is true, anything else false.
pub(crate) fn java_parse_boolean(value: &str) -> bool {
    value.eq_ignore_ascii_case("true")
}

/// A boolean setting: `true` or `false`, in any case.
pub(crate) fn parse_bool(s: &Setting) -> Result<bool, ConfigError> {
    let v = s.value.trim();
    if v.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(s.error(format!("`{v}` is not a boolean; use `true` or `false`")))
    }
}

/// A whole number.
pub(crate) fn parse_i64(s: &Setting) -> Result<i64, ConfigError> {
    let v = s.value.trim();
    v.parse::<i64>()
        .map_err(|_| s.error(format!("`{v}` is not an integer")))
}

/// A whole number of at least 1.
pub(crate) fn parse_positive(s: &Setting) -> Result<u64, ConfigError> {
    match parse_i64(s)? {
        v if v >= 1 => Ok(v.unsigned_abs()),
        v => Err(s.error(format!("must be at least 1, got {v}"))),
    }
}
