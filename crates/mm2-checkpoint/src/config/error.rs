//! The one error type of the configuration module.
//!
//! Every problem found while reading `mm2.properties` becomes a [`ConfigError`]
//! that names the key the user has to fix and, when the key came from the file,
//! the line it is on. Messages never contain secret values: code that builds an
//! error about a password, a JAAS config or a private key describes the problem
//! without echoing the value.

use std::fmt;

/// A configuration problem: which key, where in the file, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    key: Option<String>,
    line: Option<usize>,
    message: String,
}

impl ConfigError {
    /// An error not tied to one key (for example "the file is not UTF-8").
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            key: None,
            line: None,
            message: message.into(),
        }
    }

    /// An error about `key`.
    pub fn for_key(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: Some(key.into()),
            line: None,
            message: message.into(),
        }
    }

    /// Attaches the 1-based line number of the file the key was read from.
    pub fn at_line(mut self, line: Option<usize>) -> Self {
        if line.is_some() {
            self.line = line;
        }
        self
    }

    /// The key the user has to fix, as written in the file (e.g. `A->B.topics`),
    /// or the logical key name when the problem is a missing key.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The 1-based line of `mm2.properties` the key was read from, if known.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// What is wrong and, where possible, what to do instead.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        if let Some(key) = &self.key {
            write!(f, "`{key}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_line_and_key() {
        let e = ConfigError::for_key("A.bootstrap.servers", "is required").at_line(Some(7));
        assert_eq!(e.to_string(), "line 7: `A.bootstrap.servers`: is required");
    }

    #[test]
    fn display_without_key_or_line_is_the_message() {
        assert_eq!(ConfigError::new("no flows").to_string(), "no flows");
    }
}
