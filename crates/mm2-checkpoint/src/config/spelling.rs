//! Settings whose value is one of a few words. Each such enum's `as_str` is
//! the one list of its spellings; its `FromStr` reads them back through
//! [`parse_spelling`], over the enum's `ALL`.

use std::fmt;

/// A value that is none of a setting's spellings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownSpelling {
    /// The value as given.
    pub given: String,
    /// The spellings, as `` `a`, `b` or `c` ``.
    pub expected: String,
}

impl fmt::Display for UnknownSpelling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not valid; use {}", self.given, self.expected)
    }
}

impl std::error::Error for UnknownSpelling {}

/// The value of `all` that `as_str` spells `text` (exactly, case and all).
pub(crate) fn parse_spelling<T: Copy>(
    all: &[T],
    as_str: fn(T) -> &'static str,
    text: &str,
) -> Result<T, UnknownSpelling> {
    all.iter()
        .copied()
        .find(|&v| as_str(v) == text)
        .ok_or_else(|| UnknownSpelling {
            given: text.to_string(),
            expected: one_of(all.iter().map(|&v| as_str(v))),
        })
}

/// `` `a`, `b` or `c` ``.
fn one_of<'a>(words: impl ExactSizeIterator<Item = &'a str>) -> String {
    let last = words.len().saturating_sub(1);
    let mut out = String::new();
    for (i, word) in words.enumerate() {
        if i > 0 {
            out.push_str(if i == last { " or " } else { ", " });
        }
        out.push('`');
        out.push_str(word);
        out.push('`');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Word {
        A,
        B,
        C,
    }

    fn as_str(w: Word) -> &'static str {
        match w {
            Word::A => "a",
            Word::B => "b",
            Word::C => "c",
        }
    }

    #[test]
    fn a_spelling_reads_back_and_anything_else_names_them_all() {
        let all = [Word::A, Word::B, Word::C];
        assert_eq!(parse_spelling(&all, as_str, "b"), Ok(Word::B));
        let e = parse_spelling(&all, as_str, "B").unwrap_err();
        assert_eq!(e.to_string(), "`B` is not valid; use `a`, `b` or `c`");
        let e = parse_spelling(&all[..2], as_str, "x").unwrap_err();
        assert_eq!(e.expected, "`a` or `b`");
    }
}
