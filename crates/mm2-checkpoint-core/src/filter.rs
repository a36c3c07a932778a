//! Topic and group filters (docs/behaviour.md E, F.1): MM2's `DefaultTopicFilter` and
//! `DefaultGroupFilter` with `java.util.regex`-compatible semantics.
//!
//! # How a filter value is read
//!
//! Exactly like MM2 (a Kafka `LIST` config joined into one `Pattern`):
//! 1. the value is trimmed and split on commas, removing whitespace around each comma
//!    (an all-blank value is the empty list);
//! 2. the pieces are joined with `|` into one regex, which must match the **whole**
//!    name (Java `Matcher.matches()`; here `\A(?:…)\z`);
//! 3. a name is selected iff the include regex matches and the exclude regex does not
//!    (exclude wins). An empty include list selects nothing; an empty exclude list
//!    excludes nothing.
//!
//! Quirk H.11 is kept: because of step 1, a regex containing a comma such as
//! `a{1,3}` is split into `a{1` and `3}`. The error message says so when that
//! split makes the pattern invalid.
//!
//! # Java vs Rust regex
//!
//! Filters are compiled with the `regex` crate, after a small translation that keeps
//! Java's meaning where the two engines disagree on the same syntax:
//! * `\d \w \s` and their negations are ASCII-only in Java; they become the ASCII
//!   classes `[[:digit:]]`, `[[:word:]]`, `[[:space:]]` (Rust's are Unicode);
//! * `.` in Java excludes every line terminator (`\n \r \u0085 \u2028 \u2029`), not
//!   only `\n`; it becomes a class excluding all five;
//! * `\Q…\E` quoting is supported: the quoted text is escaped literally;
//! * `\t \n \r \f \a \e \xhh \x{h…} \uhhhh` become Rust hex escapes.
//!
//! Constructs that Java has and Rust lacks, or that the two read differently, are
//! **rejected** with a [`FilterError`] naming the config key, the value and the
//! construct, rather than silently matching something else: possessive quantifiers
//! (`*+ ++ ?+ }+`), lookahead/lookbehind (`(?= (?! (?<= (?<!`), atomic groups
//! (`(?>`), inline flags (`(?i)` etc.: Java's `(?i)` is ASCII-only and `(?U)` means
//! something else in Rust), backreferences (`\1`, `\k<name>`), octal escapes
//! (`\0`), word boundaries and other anchors Java defines differently (`\b \B \G \Z`),
//! `\h \H \v \V \R \X \N \c`, Unicode properties other than general categories
//! (`\p{javaLowerCase}`, `\p{Alpha}`, `\p{IsLatin}`, `\p{InGreek}`), nested
//! character classes (`[a[b]]`), class intersection `&&` (Java) and the Rust-only
//! class operators `--` and `~~` (literal characters in Java), and a `]` right after
//! `[` or `[^`.
//!
//! One difference remains and is only documented: Java's `$` also matches before a
//! final line terminator. Kafka topic names cannot contain one.

use std::fmt;

use regex::Regex;

/// Config key of the topic include list.
pub const TOPICS_KEY: &str = "topics";
/// Config key of the topic exclude list.
pub const TOPICS_EXCLUDE_KEY: &str = "topics.exclude";
/// Config key of the group include list.
pub const GROUPS_KEY: &str = "groups";
/// Config key of the group exclude list.
pub const GROUPS_EXCLUDE_KEY: &str = "groups.exclude";

/// MM2's default `topics`.
pub const DEFAULT_TOPICS: &str = ".*";
/// MM2's default `topics.exclude` since Kafka 4.0 (KIP-1074: only MM2's own
/// internal topics, not every name ending in `-internal` or `.internal`).
pub const DEFAULT_TOPICS_EXCLUDE: &str = r"mm2.*\.internal, .*\.replica, __.*";
/// MM2's default `groups`.
pub const DEFAULT_GROUPS: &str = ".*";
/// MM2's default `groups.exclude`.
pub const DEFAULT_GROUPS_EXCLUDE: &str = "console-consumer-.*, connect-.*, __.*";

/// Java's `.`: anything but a line terminator.
const JAVA_DOT: &str = r"[^\n\r\x{85}\x{2028}\x{2029}]";

/// A filter config value that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    /// The config key (`topics`, `groups.exclude`, ...).
    pub key: &'static str,
    /// The config value as given.
    pub value: String,
    /// What is wrong with it.
    pub reason: FilterErrorReason,
}

/// What is wrong with a filter value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterErrorReason {
    /// A Java regex construct we reject because Rust lacks it or reads it differently.
    Unsupported {
        /// The construct as written (e.g. `(?=`).
        construct: String,
        /// Byte offset in the joined pattern (pieces joined with `|`).
        offset: usize,
        /// Why it is rejected.
        why: &'static str,
    },
    /// The regex engine rejected the (translated) pattern.
    Invalid {
        /// The engine's message.
        message: String,
        /// True if the value contains a comma, so MM2-style list splitting (quirk
        /// H.11) may have cut a regex such as `a{1,3}` in two.
        split_at_comma: bool,
    },
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid `{}` value `{}`: ", self.key, self.value)?;
        match &self.reason {
            FilterErrorReason::Unsupported {
                construct,
                offset,
                why,
            } => write!(
                f,
                "unsupported regex construct `{construct}` at byte {offset} of the joined \
                 pattern: {why}"
            ),
            FilterErrorReason::Invalid {
                message,
                split_at_comma,
            } => {
                write!(f, "not a valid regex: {message}")?;
                if *split_at_comma {
                    f.write_str(
                        " (note: like MM2, the value is split at every comma into separate \
                         patterns, so a regex containing a comma such as `a{1,3}` is cut in two)",
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for FilterError {}

/// Splits a Kafka `LIST` config value: trim, then split on `\s*,\s*`, keeping empty
/// pieces; a blank value is the empty list.
fn parse_list(value: &str) -> Vec<&str> {
    // Java `String.trim` removes every char <= U+0020; `\s` is [ \t\n\x0B\f\r].
    let trimmed = value.trim_matches(|c: char| c <= ' ');
    if trimmed.is_empty() {
        return Vec::new();
    }
    let java_space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r');
    trimmed
        .split(',')
        .map(|p| p.trim_matches(java_space))
        .collect()
}

fn unsupported(
    construct: impl Into<String>,
    offset: usize,
    why: &'static str,
) -> FilterErrorReason {
    FilterErrorReason::Unsupported {
        construct: construct.into(),
        offset,
        why,
    }
}

/// Pushes `c` as a literal, escaped if it is a regex meta character.
fn push_literal(out: &mut String, c: char) {
    let mut buf = [0u8; 4];
    out.push_str(&regex::escape(c.encode_utf8(&mut buf)));
}

/// Translates one joined Java pattern to an equivalent Rust pattern, or rejects it.
fn translate(pattern: &str) -> Result<String, FilterErrorReason> {
    let chars: Vec<(usize, char)> = pattern.char_indices().collect();
    let at = |i: usize| chars.get(i).map(|&(_, c)| c);
    let offset = |i: usize| chars.get(i).map_or(pattern.len(), |&(o, _)| o);
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut in_class = false;
    let mut i = 0;
    while let Some(c) = at(i) {
        match c {
            '\\' => {
                i = translate_escape(&chars, i, in_class, &mut out, offset(i))?;
                continue;
            }
            '[' if in_class => {
                return Err(unsupported(
                    "[",
                    offset(i),
                    "nested character classes (Java unions) are not supported",
                ));
            }
            '[' => {
                in_class = true;
                out.push('[');
                i += 1;
                if at(i) == Some('^') {
                    out.push('^');
                    i += 1;
                }
                if at(i) == Some(']') {
                    return Err(unsupported(
                        "[]",
                        offset(i),
                        "a `]` right after `[` or `[^` is read differently by Java and Rust; \
                         escape it as `\\]`",
                    ));
                }
                continue;
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '&' | '-' | '~' if in_class && at(i + 1) == Some(c) => {
                let why = if c == '&' {
                    "Java class intersection `&&` is not supported"
                } else {
                    "`--` and `~~` are set operators in Rust classes but literals in Java; \
                     escape them"
                };
                return Err(unsupported(format!("{c}{c}"), offset(i), why));
            }
            '(' if !in_class && at(i + 1) == Some('?') => {
                match (at(i + 2), at(i + 3)) {
                    (Some(':'), _) => {
                        out.push_str("(?:");
                        i += 3;
                    }
                    (Some('='), _) | (Some('!'), _) => {
                        return Err(unsupported(
                            format!("(?{}", at(i + 2).unwrap_or_default()),
                            offset(i),
                            "lookahead is not supported by the Rust regex engine",
                        ));
                    }
                    (Some('<'), Some('=')) | (Some('<'), Some('!')) => {
                        return Err(unsupported(
                            format!("(?<{}", at(i + 3).unwrap_or_default()),
                            offset(i),
                            "lookbehind is not supported by the Rust regex engine",
                        ));
                    }
                    (Some('<'), _) => {
                        // Named group `(?<name>…)`: same syntax and meaning in both.
                        out.push_str("(?<");
                        i += 3;
                    }
                    (Some('>'), _) => {
                        return Err(unsupported(
                            "(?>",
                            offset(i),
                            "atomic groups are not supported by the Rust regex engine",
                        ));
                    }
                    _ => {
                        return Err(unsupported(
                            "(?",
                            offset(i),
                            "inline flags and other `(?` groups differ between Java and Rust \
                             (only `(?:` and `(?<name>` are accepted)",
                        ));
                    }
                }
                continue;
            }
            '*' | '+' | '?' | '}' if !in_class && at(i + 1) == Some('+') => {
                return Err(unsupported(
                    format!("{c}+"),
                    offset(i),
                    "possessive quantifiers are not supported by the Rust regex engine",
                ));
            }
            '.' if !in_class => out.push_str(JAVA_DOT),
            _ => out.push(c),
        }
        i += 1;
    }
    Ok(out)
}

/// Translates the escape starting at `chars[i]` (a backslash); returns the index
/// after it.
fn translate_escape(
    chars: &[(usize, char)],
    i: usize,
    in_class: bool,
    out: &mut String,
    offset: usize,
) -> Result<usize, FilterErrorReason> {
    let at = |j: usize| chars.get(j).map(|&(_, c)| c);
    let Some(e) = at(i + 1) else {
        return Err(unsupported(
            "\\",
            offset,
            "a pattern may not end with a lone backslash",
        ));
    };
    let ascii_class = |name: &str, out: &mut String| {
        if in_class {
            out.push_str(&format!("[:{name}:]"));
        } else {
            out.push_str(&format!("[[:{name}:]]"));
        }
    };
    match e {
        'Q' => {
            // Quote everything up to `\E` (or the end) literally.
            let mut j = i + 2;
            while let Some(c) = at(j) {
                if c == '\\' && at(j + 1) == Some('E') {
                    return Ok(j + 2);
                }
                push_literal(out, c);
                j += 1;
            }
            Ok(j)
        }
        'd' => {
            ascii_class("digit", out);
            Ok(i + 2)
        }
        'D' => {
            ascii_class("^digit", out);
            Ok(i + 2)
        }
        'w' => {
            ascii_class("word", out);
            Ok(i + 2)
        }
        'W' => {
            ascii_class("^word", out);
            Ok(i + 2)
        }
        's' => {
            ascii_class("space", out);
            Ok(i + 2)
        }
        'S' => {
            ascii_class("^space", out);
            Ok(i + 2)
        }
        't' | 'n' | 'r' | 'f' | 'a' | 'e' => {
            let code = match e {
                't' => 0x09,
                'n' => 0x0A,
                'r' => 0x0D,
                'f' => 0x0C,
                'a' => 0x07,
                _ => 0x1B,
            };
            out.push_str(&format!("\\x{{{code:X}}}"));
            Ok(i + 2)
        }
        'x' | 'u' => {
            // `\xhh`, `\x{h…}` or `\uhhhh`.
            let (digits, next) = if e == 'x' && at(i + 2) == Some('{') {
                let mut j = i + 3;
                let mut d = String::new();
                while let Some(c) = at(j) {
                    if c == '}' {
                        break;
                    }
                    d.push(c);
                    j += 1;
                }
                if at(j) != Some('}') {
                    return Err(unsupported("\\x{", offset, "unterminated `\\x{` escape"));
                }
                (d, j + 1)
            } else {
                let width = if e == 'x' { 2 } else { 4 };
                let d: String = (0..width).filter_map(|k| at(i + 2 + k)).collect();
                (d, i + 2 + width)
            };
            let braced = e == 'x' && at(i + 2) == Some('{');
            let width_ok = braced || digits.chars().count() == if e == 'x' { 2 } else { 4 };
            if digits.is_empty() || !width_ok || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(unsupported(
                    format!("\\{e}{digits}"),
                    offset,
                    "malformed hexadecimal escape",
                ));
            }
            out.push_str(&format!("\\x{{{digits}}}"));
            Ok(next)
        }
        'p' | 'P' => {
            let (name, next) = if at(i + 2) == Some('{') {
                let mut j = i + 3;
                let mut n = String::new();
                while let Some(c) = at(j) {
                    if c == '}' {
                        break;
                    }
                    n.push(c);
                    j += 1;
                }
                if at(j) != Some('}') {
                    return Err(unsupported(
                        format!("\\{e}{{{n}"),
                        offset,
                        "unterminated Unicode property escape",
                    ));
                }
                (n, j + 1)
            } else {
                (at(i + 2).map(String::from).unwrap_or_default(), i + 3)
            };
            let mut name_chars = name.chars();
            let general_category = name_chars.next().is_some_and(|c| c.is_ascii_uppercase())
                && name_chars.all(|c| c.is_ascii_alphabetic())
                && name.len() <= 2;
            if !general_category {
                return Err(unsupported(
                    format!("\\{e}{{{name}}}"),
                    offset,
                    "only Unicode general categories (`\\p{L}`, `\\p{Lu}`, ...) are accepted; \
                     Java's POSIX, java*, script and block properties differ from Rust's",
                ));
            }
            out.push_str(&format!("\\{e}{{{name}}}"));
            Ok(next)
        }
        'A' | 'z' if !in_class => {
            out.push('\\');
            out.push(e);
            Ok(i + 2)
        }
        '0' => Err(unsupported(
            "\\0",
            offset,
            "octal escapes are not supported; use `\\xhh`",
        )),
        '1'..='9' | 'k' => Err(unsupported(
            format!("\\{e}"),
            offset,
            "backreferences are not supported by the Rust regex engine",
        )),
        c if c.is_ascii_alphanumeric() => Err(unsupported(
            format!("\\{c}"),
            offset,
            "this escape is missing in Rust or means something else there \
             (e.g. `\\b`, `\\Z`, `\\h`, `\\v`, `\\R`)",
        )),
        c => {
            // A backslash before any other character quotes it in Java.
            push_literal(out, c);
            Ok(i + 2)
        }
    }
}

/// One compiled list (`topics`, `groups.exclude`, ...): matches a whole name.
#[derive(Clone, Debug)]
struct NameList {
    /// `None` for an empty list, which matches nothing.
    regex: Option<Regex>,
}

impl NameList {
    fn compile(key: &'static str, value: &str) -> Result<Self, FilterError> {
        let pieces = parse_list(value);
        if pieces.is_empty() {
            return Ok(NameList { regex: None });
        }
        let joined = pieces.join("|");
        let error = |reason| FilterError {
            key,
            value: value.to_owned(),
            reason,
        };
        let translated = translate(&joined).map_err(error)?;
        let regex = Regex::new(&format!(r"\A(?:{translated})\z")).map_err(|e| {
            error(FilterErrorReason::Invalid {
                message: e.to_string(),
                split_at_comma: value.contains(','),
            })
        })?;
        Ok(NameList { regex: Some(regex) })
    }

    fn matches(&self, name: &str) -> bool {
        self.regex.as_ref().is_some_and(|r| r.is_match(name))
    }
}

/// One Java regular expression (not a comma-separated list) that must match
/// a whole name, as Java's `Matcher.matches()` does; e.g. the environment
/// config provider's `allowlist.pattern`.
#[derive(Clone, Debug)]
pub struct WholeNamePattern(Regex);

impl WholeNamePattern {
    /// Compiles `pattern`, read from config key `key`.
    pub fn new(key: &'static str, pattern: &str) -> Result<Self, FilterError> {
        let error = |reason| FilterError {
            key,
            value: pattern.to_owned(),
            reason,
        };
        let translated = translate(pattern).map_err(error)?;
        Regex::new(&format!(r"\A(?:{translated})\z"))
            .map(Self)
            .map_err(|e| {
                error(FilterErrorReason::Invalid {
                    message: e.to_string(),
                    split_at_comma: false,
                })
            })
    }

    /// Whether the whole of `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        self.0.is_match(name)
    }
}

/// An include list and an exclude list; exclude wins.
#[derive(Clone, Debug)]
struct IncludeExclude {
    include: NameList,
    exclude: NameList,
}

impl IncludeExclude {
    fn new(
        include_key: &'static str,
        include: &str,
        exclude_key: &'static str,
        exclude: &str,
    ) -> Result<Self, FilterError> {
        Ok(IncludeExclude {
            include: NameList::compile(include_key, include)?,
            exclude: NameList::compile(exclude_key, exclude)?,
        })
    }

    fn accepts(&self, name: &str) -> bool {
        self.include.matches(name) && !self.exclude.matches(name)
    }
}

/// MM2's `DefaultTopicFilter`: `topics` / `topics.exclude`.
#[derive(Clone, Debug)]
pub struct TopicFilter(IncludeExclude);

impl TopicFilter {
    /// Builds the filter from the `topics` and `topics.exclude` values; an absent key
    /// takes MM2's default.
    pub fn new(topics: Option<&str>, topics_exclude: Option<&str>) -> Result<Self, FilterError> {
        IncludeExclude::new(
            TOPICS_KEY,
            topics.unwrap_or(DEFAULT_TOPICS),
            TOPICS_EXCLUDE_KEY,
            topics_exclude.unwrap_or(DEFAULT_TOPICS_EXCLUDE),
        )
        .map(TopicFilter)
    }

    /// Whether checkpoints (and replication) cover `topic`.
    pub fn should_replicate_topic(&self, topic: &str) -> bool {
        self.0.accepts(topic)
    }

    /// A filter that accepts every topic, for a plan whose topics were
    /// filtered already under other names (reverse translation filters the
    /// names on the source). Should its pattern not compile, it accepts none.
    pub fn accepting_all() -> Self {
        TopicFilter(IncludeExclude {
            include: NameList {
                regex: Regex::new(r"(?s)\A.*\z").ok(),
            },
            exclude: NameList { regex: None },
        })
    }
}

impl Default for TopicFilter {
    /// MM2's defaults.
    fn default() -> Self {
        // The defaults are constants known to compile (tested below); fall back to a
        // filter that selects nothing rather than panic.
        TopicFilter::new(None, None).unwrap_or(TopicFilter(IncludeExclude {
            include: NameList { regex: None },
            exclude: NameList { regex: None },
        }))
    }
}

/// MM2's `DefaultGroupFilter`: `groups` / `groups.exclude`.
#[derive(Clone, Debug)]
pub struct GroupFilter(IncludeExclude);

impl GroupFilter {
    /// Builds the filter from the `groups` and `groups.exclude` values; an absent key
    /// takes MM2's default.
    pub fn new(groups: Option<&str>, groups_exclude: Option<&str>) -> Result<Self, FilterError> {
        IncludeExclude::new(
            GROUPS_KEY,
            groups.unwrap_or(DEFAULT_GROUPS),
            GROUPS_EXCLUDE_KEY,
            groups_exclude.unwrap_or(DEFAULT_GROUPS_EXCLUDE),
        )
        .map(GroupFilter)
    }

    /// Whether group `group` is checkpointed.
    pub fn should_replicate_group(&self, group: &str) -> bool {
        self.0.accepts(group)
    }
}

impl Default for GroupFilter {
    /// MM2's defaults.
    fn default() -> Self {
        GroupFilter::new(None, None).unwrap_or(GroupFilter(IncludeExclude {
            include: NameList { regex: None },
            exclude: NameList { regex: None },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topics(include: &str, exclude: &str) -> TopicFilter {
        TopicFilter::new(Some(include), Some(exclude)).unwrap()
    }

    fn reason(err: FilterError) -> FilterErrorReason {
        err.reason
    }

    fn rejected_construct(include: &str) -> String {
        match reason(TopicFilter::new(Some(include), None).unwrap_err()) {
            FilterErrorReason::Unsupported { construct, .. } => construct,
            other => panic!("expected an unsupported construct, got {other:?}"),
        }
    }

    #[test]
    fn defaults_compile() {
        TopicFilter::new(None, None).unwrap();
        GroupFilter::new(None, None).unwrap();
    }

    /// Kafka 4.0's default (KIP-1074) excludes MM2's own internal topics, not
    /// every name ending in `-internal` or `.internal` as 3.x did.
    #[test]
    fn e_default_topic_filter_excludes_mm2_internal_replica_and_dunder() {
        let f = TopicFilter::default();
        assert!(f.should_replicate_topic("orders"));
        assert!(f.should_replicate_topic("S.orders"));
        for t in [
            "mm2-offsets.S.internal",
            "mm2-offset-syncs.T.internal",
            "orders.replica",
            "__consumer_offsets",
        ] {
            assert!(!f.should_replicate_topic(t), "{t}");
        }
        for t in [
            "internal",
            "x-internal",
            "app.internal",
            "S.checkpoints.internal",
        ] {
            assert!(f.should_replicate_topic(t), "{t}");
        }
    }

    #[test]
    fn e_default_group_filter_excludes_console_connect_and_dunder() {
        let f = GroupFilter::default();
        assert!(f.should_replicate_group("billing"));
        for g in ["console-consumer-123", "connect-sink", "__x"] {
            assert!(!f.should_replicate_group(g), "{g}");
        }
    }

    #[test]
    fn e_match_is_whole_name_not_substring() {
        let f = topics("ord", "");
        assert!(f.should_replicate_topic("ord"));
        assert!(!f.should_replicate_topic("orders"));
        assert!(!f.should_replicate_topic("word"));
    }

    #[test]
    fn e_list_is_comma_split_with_whitespace_trimmed() {
        let f = topics("  a ,\tb\n,c.* ", "");
        for t in ["a", "b", "cxyz"] {
            assert!(f.should_replicate_topic(t), "{t}");
        }
        assert!(!f.should_replicate_topic(" a"));
        assert!(!f.should_replicate_topic("d"));
    }

    #[test]
    fn e_alternatives_are_anchored_as_a_group() {
        // Without the group, `^a|b$` would match "ax".
        let f = topics("a,b", "");
        assert!(!f.should_replicate_topic("ax"));
        assert!(!f.should_replicate_topic("xb"));
    }

    #[test]
    fn e_exclude_wins_over_include() {
        let f = topics("orders.*", "orders-secret");
        assert!(f.should_replicate_topic("orders-public"));
        assert!(!f.should_replicate_topic("orders-secret"));
    }

    #[test]
    fn e_empty_include_list_includes_nothing() {
        let f = topics("", "");
        assert!(!f.should_replicate_topic("orders"));
        let f = topics("  ", "");
        assert!(!f.should_replicate_topic("orders"));
    }

    #[test]
    fn e_empty_exclude_list_excludes_nothing() {
        let f = topics(".*", "");
        assert!(f.should_replicate_topic("__consumer_offsets"));
    }

    /// Quirk H.11, kept: `a{1,3}` is cut at the comma like MM2 does, and the error says so.
    #[test]
    fn h11_regex_with_comma_is_split_like_mm2() {
        let err = TopicFilter::new(Some("a{1,3}"), None).unwrap_err();
        assert_eq!(err.key, "topics");
        assert!(matches!(
            err.reason,
            FilterErrorReason::Invalid {
                split_at_comma: true,
                ..
            }
        ));
        assert!(err.to_string().contains("a{1,3}"));
        // A comma-free counted repetition works.
        assert!(topics("a{2}", "").should_replicate_topic("aa"));
    }

    #[test]
    fn shorthand_classes_are_ascii_only_like_java() {
        let f = topics(r"\w+\d", "");
        assert!(f.should_replicate_topic("abc1"));
        assert!(
            !f.should_replicate_topic("été1"),
            "Rust's Unicode \\w would match"
        );
        assert!(
            !f.should_replicate_topic("abc١"),
            "Arabic-Indic digit is not \\d in Java"
        );
        let f = topics(r"[\w-]+", "");
        assert!(f.should_replicate_topic("a-b_c"));
    }

    #[test]
    fn negated_shorthand_classes_match_non_ascii() {
        let f = topics(r"\W", "");
        assert!(f.should_replicate_topic("é"));
        assert!(!f.should_replicate_topic("e"));
    }

    #[test]
    fn dot_excludes_java_line_terminators() {
        let f = GroupFilter::new(Some("a.b"), Some("")).unwrap();
        assert!(f.should_replicate_group("axb"));
        assert!(!f.should_replicate_group("a\rb"));
        assert!(!f.should_replicate_group("a\u{2028}b"));
    }

    #[test]
    fn quoted_literal_section_is_supported() {
        let f = topics(r"\Qa.b*\E.*", "");
        assert!(f.should_replicate_topic("a.b*xyz"));
        assert!(!f.should_replicate_topic("axbbxyz"));
        let f = topics(r"x\Q[y]", "");
        assert!(f.should_replicate_topic("x[y]"));
    }

    #[test]
    fn escaped_punctuation_is_literal() {
        let f = topics(r"a\.b\<", "");
        assert!(f.should_replicate_topic("a.b<"));
        assert!(!f.should_replicate_topic("axb<"));
    }

    #[test]
    fn hex_and_unicode_escapes_are_translated() {
        let f = topics(r"\x41\u0042\x{43}", "");
        assert!(f.should_replicate_topic("ABC"));
    }

    #[test]
    fn general_category_properties_are_accepted() {
        let f = topics(r"\p{Lu}\pL", "");
        assert!(f.should_replicate_topic("Ab"));
        assert!(!f.should_replicate_topic("ab"));
    }

    #[test]
    fn named_and_non_capturing_groups_are_accepted() {
        let f = topics(r"(?<env>prod|dev)(?:-[a-z]+)?", "");
        assert!(f.should_replicate_topic("prod-orders"));
        assert!(!f.should_replicate_topic("test"));
    }

    #[test]
    fn possessive_quantifiers_are_rejected() {
        assert_eq!(rejected_construct("a*+"), "*+");
        assert_eq!(rejected_construct("a++"), "++");
        assert_eq!(rejected_construct("a?+"), "?+");
        assert_eq!(rejected_construct("a{2}+"), "}+");
    }

    #[test]
    fn lazy_quantifiers_are_accepted() {
        assert!(topics("a+?b*?", "").should_replicate_topic("aab"));
    }

    #[test]
    fn lookaround_is_rejected() {
        assert_eq!(rejected_construct("(?=a)a"), "(?=");
        assert_eq!(rejected_construct("(?!a)."), "(?!");
        assert_eq!(rejected_construct("(?<=a)b"), "(?<=");
        assert_eq!(rejected_construct("(?<!a)b"), "(?<!");
    }

    #[test]
    fn atomic_groups_and_inline_flags_are_rejected() {
        assert_eq!(rejected_construct("(?>a)"), "(?>");
        assert_eq!(rejected_construct("(?i)orders"), "(?");
    }

    #[test]
    fn backreferences_and_octal_are_rejected() {
        assert_eq!(rejected_construct(r"(a)\1"), r"\1");
        assert_eq!(rejected_construct(r"(?<x>a)\k<x>"), r"\k");
        assert_eq!(rejected_construct(r"\012"), r"\0");
    }

    #[test]
    fn java_only_properties_are_rejected() {
        assert_eq!(
            rejected_construct(r"\p{javaLowerCase}"),
            r"\p{javaLowerCase}"
        );
        assert_eq!(rejected_construct(r"\p{Alpha}"), r"\p{Alpha}");
        assert_eq!(rejected_construct(r"\p{IsLatin}"), r"\p{IsLatin}");
    }

    #[test]
    fn differing_escapes_are_rejected() {
        for (p, c) in [
            (r"\bx", r"\b"),
            (r"x\Z", r"\Z"),
            (r"\h", r"\h"),
            (r"\v", r"\v"),
        ] {
            assert_eq!(rejected_construct(p), c);
        }
    }

    #[test]
    fn class_set_operators_and_nesting_are_rejected() {
        assert_eq!(rejected_construct("[a-z&&[^b]]"), "&&");
        assert_eq!(rejected_construct("[a--b]"), "--");
        assert_eq!(rejected_construct("[a~~b]"), "~~");
        assert_eq!(rejected_construct("[a[b]]"), "[");
        assert_eq!(rejected_construct("[]a]"), "[]");
    }

    #[test]
    fn error_names_key_value_and_construct() {
        let err = GroupFilter::new(None, Some("a, (?=b)")).unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.key, "groups.exclude");
        assert!(msg.contains("`groups.exclude`"), "{msg}");
        assert!(msg.contains("a, (?=b)"), "{msg}");
        assert!(msg.contains("(?="), "{msg}");
    }

    proptest::proptest! {
        /// The translator is hand-written and reads operator config: it must never
        /// panic, whatever the input.
        #[test]
        fn arbitrary_filter_values_never_panic(value in r"[\\\[\]()?*+{}<>=!&~:,.a-zQEpPxu0-9 -]{0,24}") {
            let _ = TopicFilter::new(Some(&value), Some(&value));
        }
    }

    #[test]
    fn invalid_regex_is_an_error_not_a_panic() {
        let err = TopicFilter::new(Some("(unclosed"), None).unwrap_err();
        assert!(matches!(
            err.reason,
            FilterErrorReason::Invalid {
                split_at_comma: false,
                ..
            }
        ));
        assert!(TopicFilter::new(Some("trailing\\"), None).is_err());
    }
}
