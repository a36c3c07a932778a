//! A Java `.properties` reader that follows `java.util.Properties.load`.
//!
//! MM2 reads `mm2.properties` with `Properties.load`, so a file must mean the same
//! thing to us as to the JVM. The rules reproduced here:
//!
//! * Lines end at `\n`, `\r` or `\r\n`.
//! * Leading spaces, tabs and form feeds are skipped. A line whose first other
//!   character is `#` or `!` is a comment. A `#` anywhere else is an ordinary
//!   character, so `topics = a#b` has the value `a#b`.
//! * A line ending in an odd number of backslashes continues on the next line;
//!   the backslash is dropped and so is the next line's leading whitespace. A
//!   continuation line is never a comment, and a blank one ends the entry.
//! * The key ends at the first unescaped `=`, `:` or whitespace. Whitespace around
//!   the separator is skipped; `key value`, `key=value` and `key : value` are all
//!   the same entry. Trailing whitespace stays in the value.
//! * Escapes `\t \n \r \f \uXXXX` are decoded in keys and values; any other
//!   escaped character stands for itself (`\=`, `\:`, `\ `, `\\`, `\#`).
//! * A key given twice keeps its last value.
//!
//! One deliberate difference: `Properties.load(InputStream)` decodes bytes as
//! ISO-8859-1, while we decode the file as UTF-8 (and reject invalid UTF-8). For
//! ASCII files, and files that write non-ASCII characters as `\uXXXX`, both read
//! the same keys and values.

use std::collections::BTreeMap;
use std::fmt;

use super::error::ConfigError;

/// The entries of one properties file, with the line each key was defined on.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Properties {
    entries: BTreeMap<String, Entry>,
}

#[derive(Clone, PartialEq, Eq)]
struct Entry {
    value: String,
    /// The line of the file, if the entry came from one.
    line: Option<usize>,
    /// How the user wrote the key when it differs from `key` (a connector
    /// configuration's key, see `connector.rs`).
    written_as: Option<String>,
}

impl fmt::Debug for Properties {
    /// Lists keys and lines only: values may be passwords.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|(k, e)| (k, e.line)))
            .finish()
    }
}

impl Properties {
    /// Parses the bytes of a properties file, which must be UTF-8.
    pub fn parse_bytes(bytes: &[u8]) -> Result<Self, ConfigError> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Self::parse(text),
            Err(e) => {
                let good = bytes.get(..e.valid_up_to()).unwrap_or_default();
                let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
                Err(ConfigError::new(
                    "the file is not valid UTF-8 (write non-ASCII characters as \\uXXXX)",
                )
                .at_line(Some(line)))
            }
        }
    }

    /// Parses properties text; fails with the first line that cannot be read.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let (props, errors) = Self::parse_all(text);
        match errors.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(props),
        }
    }

    /// Parses properties text, reading past lines that cannot be read: the
    /// entries that could be read, and an error for every line that could not
    /// (its key is then missing from the entries).
    pub fn parse_all(text: &str) -> (Self, Vec<ConfigError>) {
        let lines = physical_lines(text);
        let mut entries = BTreeMap::new();
        let mut errors = Vec::new();
        let mut next = 0;
        while let Some(&(first_line, raw)) = lines.get(next) {
            next += 1;
            let start = skip_leading_whitespace(raw);
            if start.is_empty() || start.starts_with('#') || start.starts_with('!') {
                continue;
            }
            let mut logical = String::new();
            let mut current = start;
            loop {
                if ends_in_continuation(current) {
                    logical.push_str(&current[..current.len() - 1]);
                    match lines.get(next) {
                        Some(&(_, following)) => {
                            next += 1;
                            current = skip_leading_whitespace(following);
                        }
                        // A backslash on the last line of the file is dropped.
                        None => break,
                    }
                } else {
                    logical.push_str(current);
                    break;
                }
            }
            match split_entry(&logical, first_line) {
                Ok((key, value)) => {
                    entries.insert(
                        key,
                        Entry {
                            value,
                            line: Some(first_line),
                            written_as: None,
                        },
                    );
                }
                Err(e) => errors.push(e),
            }
        }
        (Self { entries }, errors)
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(|e| e.value.as_str())
    }

    /// The 1-based line on which `key` was (last) defined.
    pub fn line(&self, key: &str) -> Option<usize> {
        self.entries.get(key).and_then(|e| e.line)
    }

    /// The key as the user wrote it: `key` itself, unless the entry was
    /// derived from differently named input (a connector configuration).
    pub fn written_as<'k>(&'k self, key: &'k str) -> &'k str {
        self.entries
            .get(key)
            .and_then(|e| e.written_as.as_deref())
            .unwrap_or(key)
    }

    /// Adds (or replaces) `key`, read from `line` of the input where the user
    /// wrote it as `written_as`.
    pub(crate) fn insert(
        &mut self,
        key: String,
        value: String,
        line: Option<usize>,
        written_as: Option<String>,
    ) {
        self.entries.insert(
            key,
            Entry {
                value,
                line,
                written_as,
            },
        );
    }

    /// Whether `key` is present (with any value, even empty).
    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// All keys, in sorted order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The number of distinct keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the file defined no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Splits text into (1-based line number, line without terminator).
fn physical_lines(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push((lines.len() + 1, &text[start..i]));
                i += 1;
                start = i;
            }
            b'\r' => {
                lines.push((lines.len() + 1, &text[start..i]));
                i += 1;
                if bytes.get(i) == Some(&b'\n') {
                    i += 1;
                }
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < bytes.len() {
        lines.push((lines.len() + 1, &text[start..]));
    }
    lines
}

fn is_properties_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

fn skip_leading_whitespace(line: &str) -> &str {
    line.trim_start_matches(is_properties_whitespace)
}

/// A line continues when it ends in an odd number of backslashes.
fn ends_in_continuation(line: &str) -> bool {
    let trailing = line.bytes().rev().take_while(|&b| b == b'\\').count();
    trailing % 2 == 1
}

/// Splits a logical line into its decoded key and value.
fn split_entry(logical: &str, line: usize) -> Result<(String, String), ConfigError> {
    let mut key_end = logical.len();
    let mut value_start = logical.len();
    let mut has_separator = false;
    let mut escaped = false;
    for (i, c) in logical.char_indices() {
        if !escaped && (c == '=' || c == ':') {
            key_end = i;
            value_start = i + 1;
            has_separator = true;
            break;
        }
        if !escaped && is_properties_whitespace(c) {
            key_end = i;
            value_start = i + c.len_utf8();
            break;
        }
        escaped = c == '\\' && !escaped;
    }
    let mut rest = &logical[value_start..];
    loop {
        let mut chars = rest.chars();
        match chars.next() {
            Some(c) if is_properties_whitespace(c) => rest = chars.as_str(),
            Some('=' | ':') if !has_separator => {
                has_separator = true;
                rest = chars.as_str();
            }
            _ => break,
        }
    }
    let key = unescape(&logical[..key_end])
        .map_err(|m| ConfigError::new(format!("in a key: {m}")).at_line(Some(line)))?;
    let value = unescape(rest).map_err(|m| {
        // The key is not secret; the value might be, so it is not repeated.
        ConfigError::for_key(key.clone(), format!("in the value: {m}")).at_line(Some(line))
    })?;
    Ok((key, value))
}

/// Decodes `\t \n \r \f \uXXXX` and `\<any>`; combines UTF-16 surrogate pairs.
fn unescape(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let unit = read_utf16_unit(&mut chars)?;
                if (0xD800..0xDC00).contains(&unit) {
                    let low = match (chars.next(), chars.next()) {
                        (Some('\\'), Some('u')) => read_utf16_unit(&mut chars)?,
                        _ => return Err(
                            "a \\uD800-\\uDBFF escape must be followed by a \\uDC00-\\uDFFF escape"
                                .into(),
                        ),
                    };
                    match char::decode_utf16([unit, low]).next() {
                        Some(Ok(ch)) => out.push(ch),
                        _ => return Err("invalid UTF-16 surrogate pair in \\u escapes".into()),
                    }
                } else {
                    match char::from_u32(u32::from(unit)) {
                        Some(ch) => out.push(ch),
                        None => return Err("unpaired UTF-16 surrogate in a \\u escape".into()),
                    }
                }
            }
            Some(other) => out.push(other),
            // Cannot happen for a logical line (a final odd backslash is a
            // continuation), but a lone trailing backslash means nothing.
            None => {}
        }
    }
    Ok(out)
}

fn read_utf16_unit(chars: &mut std::str::Chars<'_>) -> Result<u16, String> {
    let mut unit: u16 = 0;
    for _ in 0..4 {
        let digit = chars
            .next()
            .and_then(|c| c.to_digit(16))
            .ok_or_else(|| "malformed \\uXXXX escape (needs four hex digits)".to_string())?;
        unit = unit * 16 + digit as u16;
    }
    Ok(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Properties {
        match Properties::parse(text) {
            Ok(p) => p,
            Err(e) => panic!("parse failed: {e}"),
        }
    }

    #[test]
    fn equals_colon_and_whitespace_separate_key_and_value() {
        let p = parse("a = 1\nb: 2\nc 3\nd=4\ne\t5\n");
        assert_eq!(p.get("a"), Some("1"));
        assert_eq!(p.get("b"), Some("2"));
        assert_eq!(p.get("c"), Some("3"));
        assert_eq!(p.get("d"), Some("4"));
        assert_eq!(p.get("e"), Some("5"));
    }

    #[test]
    fn whitespace_then_separator_counts_as_one_separator() {
        let p = parse("a   =   b\nc :=d\n");
        assert_eq!(p.get("a"), Some("b"));
        // Only one separator is consumed: the second `=` belongs to the value.
        assert_eq!(p.get("c"), Some("=d"));
    }

    #[test]
    fn hash_and_bang_start_comments_only_at_line_start() {
        let p = parse("# comment\n  ! also a comment\ntopics = a#b\nx = 1 # not a comment\n");
        assert_eq!(p.len(), 2);
        assert_eq!(p.get("topics"), Some("a#b"));
        assert_eq!(p.get("x"), Some("1 # not a comment"));
    }

    #[test]
    fn trailing_whitespace_is_kept_in_values() {
        assert_eq!(parse("a = b  \n").get("a"), Some("b  "));
    }

    #[test]
    fn key_without_value_has_empty_value() {
        let p = parse("empty\nempty2 =\n");
        assert_eq!(p.get("empty"), Some(""));
        assert_eq!(p.get("empty2"), Some(""));
    }

    #[test]
    fn backslash_continues_and_strips_next_lines_leading_whitespace() {
        let p = parse("list = a, \\\n       b, \\\n\t c\nnext = 1\n");
        assert_eq!(p.get("list"), Some("a, b, c"));
        assert_eq!(p.get("next"), Some("1"));
    }

    #[test]
    fn even_number_of_backslashes_does_not_continue() {
        let p = parse("path = C:\\\\\nnext = 1\n");
        assert_eq!(p.get("path"), Some("C:\\"));
        assert_eq!(p.get("next"), Some("1"));
    }

    #[test]
    fn continuation_line_starting_with_hash_is_not_a_comment() {
        let p = parse("a = x\\\n  # y\n");
        assert_eq!(p.get("a"), Some("x# y"));
    }

    #[test]
    fn comment_line_ending_in_backslash_does_not_continue() {
        let p = parse("# comment \\\na = 1\n");
        assert_eq!(p.get("a"), Some("1"));
    }

    #[test]
    fn blank_continuation_line_ends_the_entry() {
        let p = parse("a = x\\\n\nb = 2\n");
        assert_eq!(p.get("a"), Some("x"));
        assert_eq!(p.get("b"), Some("2"));
    }

    #[test]
    fn backslash_on_last_line_is_dropped() {
        assert_eq!(parse("a = x\\").get("a"), Some("x"));
    }

    #[test]
    fn cr_and_crlf_end_lines() {
        let p = parse("a = 1\r\nb = 2\rc = 3");
        assert_eq!(p.get("a"), Some("1"));
        assert_eq!(p.get("b"), Some("2"));
        assert_eq!(p.get("c"), Some("3"));
        assert_eq!(p.line("c"), Some(3));
    }

    #[test]
    fn escapes_are_decoded_in_values() {
        let p = parse("a = tab\\tnl\\ncr\\rff\\fbs\\\\q\\q\\u00e9\\u20AC\n");
        assert_eq!(p.get("a"), Some("tab\tnl\ncr\rff\x0cbs\\qq\u{e9}\u{20ac}"));
    }

    #[test]
    fn escaped_separators_and_spaces_stay_in_keys() {
        let p = parse("a\\=b\\:c\\ d = v\n");
        assert_eq!(p.get("a=b:c d"), Some("v"));
    }

    #[test]
    fn surrogate_pair_escapes_combine() {
        assert_eq!(parse("a = \\uD83D\\uDE00\n").get("a"), Some("\u{1F600}"));
    }

    #[test]
    fn unpaired_surrogate_is_an_error_with_line_and_key() {
        let e = Properties::parse("x = 1\na = \\uD83D\n").unwrap_err();
        assert_eq!(e.line(), Some(2));
        assert_eq!(e.key(), Some("a"));
    }

    #[test]
    fn malformed_unicode_escape_is_an_error_with_line() {
        let e = Properties::parse("\n\npassword = ab\\u12G4cd\n").unwrap_err();
        assert_eq!(e.line(), Some(3));
        assert!(e.message().contains("\\uXXXX"), "{e}");
        assert!(!e.to_string().contains("ab"), "value leaked: {e}");
    }

    #[test]
    fn malformed_unicode_escape_in_key_is_an_error() {
        let e = Properties::parse("a\\u12 = 1\n").unwrap_err();
        assert_eq!(e.line(), Some(1));
        assert_eq!(e.key(), None);
    }

    #[test]
    fn last_duplicate_wins_and_records_its_line() {
        let p = parse("a = 1\nb = 2\na = 3\n");
        assert_eq!(p.get("a"), Some("3"));
        assert_eq!(p.line("a"), Some(3));
    }

    #[test]
    fn line_of_a_continued_entry_is_its_first_line() {
        let p = parse("\n\na = 1\\\n 2\nb = 3\n");
        assert_eq!(p.line("a"), Some(3));
        assert_eq!(p.line("b"), Some(5));
    }

    #[test]
    fn invalid_utf8_is_an_error_naming_the_line() {
        let e = Properties::parse_bytes(b"a = 1\nb = \xff\n").unwrap_err();
        assert_eq!(e.line(), Some(2));
        assert!(e.message().contains("UTF-8"));
    }

    #[test]
    fn utf8_text_is_read_as_utf8() {
        let p = Properties::parse_bytes("a = caf\u{e9}\n".as_bytes()).unwrap();
        assert_eq!(p.get("a"), Some("caf\u{e9}"));
    }

    #[test]
    fn arrows_in_keys_are_ordinary_characters() {
        let p = parse("A->B.enabled = true\n");
        assert_eq!(p.get("A->B.enabled"), Some("true"));
    }

    #[test]
    fn debug_output_hides_values() {
        let p = parse("sasl.jaas.config = secret-stuff\n");
        let dbg = format!("{p:?}");
        assert!(!dbg.contains("secret-stuff"), "{dbg}");
        assert!(dbg.contains("sasl.jaas.config"));
    }

    #[test]
    fn parse_all_reports_every_bad_line_and_keeps_the_good_ones() {
        let (p, errors) = Properties::parse_all("a = \\u12\nb = 2\nc\\u00 = 3\nd = \\uZZZZ\n");
        assert_eq!(p.get("b"), Some("2"));
        assert_eq!(p.len(), 1);
        let lines: Vec<_> = errors.iter().map(ConfigError::line).collect();
        assert_eq!(lines, [Some(1), Some(3), Some(4)]);
        assert_eq!(
            Properties::parse("a = \\u12\nd = \\uZZZZ\n").unwrap_err(),
            errors[0]
        );
    }
}
