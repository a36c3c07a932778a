//! A parser for the one-entry JAAS text Kafka takes in `sasl.jaas.config`.
//!
//! Kafka's `JaasConfig` tokenises the value with Java's `StreamTokenizer`:
//!
//! ```text
//! org.apache.kafka.common.security.scram.ScramLoginModule required
//!     username="alice" password="p\"w";
//! ```
//!
//! i.e. a login-module class, a control flag (`required`, `requisite`,
//! `sufficient` or `optional`, any case), `name=value` options and a `;`. Values
//! may be bare words or quoted with `"` or `'`; quoted values decode the
//! `StreamTokenizer` escapes (`\n \t \r \b \f \a \v`, octal `\NNN`, and `\x` for
//! any other `x`). `//`, `/* */` and a lone `/` start comments, as in Java.
//!
//! Error messages describe what is wrong but never repeat option values, because
//! the text holds a password.

use std::collections::BTreeMap;

/// One parsed login-module entry.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct JaasEntry {
    /// The login module's class name.
    pub(crate) module: String,
    /// The options, by name. Values may be secret.
    pub(crate) options: BTreeMap<String, String>,
}

impl std::fmt::Debug for JaasEntry {
    /// Shows the module and option names only: option values may be passwords.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JaasEntry")
            .field("module", &self.module)
            .field("options", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Equals,
    Semicolon,
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '$' | '-')
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() || c.is_control() {
            chars.next();
        } else if c == '/' {
            chars.next();
            if chars.peek() == Some(&'*') {
                chars.next();
                let mut prev = '\0';
                let mut closed = false;
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        closed = true;
                        break;
                    }
                    prev = c;
                }
                if !closed {
                    return Err("unterminated /* comment".into());
                }
            } else {
                // `//` and a lone `/` both comment out the rest of the line.
                for c in chars.by_ref() {
                    if c == '\n' || c == '\r' {
                        break;
                    }
                }
            }
        } else if c == '=' {
            chars.next();
            tokens.push(Token::Equals);
        } else if c == ';' {
            chars.next();
            tokens.push(Token::Semicolon);
        } else if c == '"' || c == '\'' {
            chars.next();
            tokens.push(Token::Quoted(quoted(&mut chars, c)?));
        } else if is_word_char(c) {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if !is_word_char(c) {
                    break;
                }
                word.push(c);
                chars.next();
            }
            tokens.push(Token::Word(word));
        } else {
            return Err(
                "unexpected character outside quotes (quote option values with \"...\")".into(),
            );
        }
    }
    Ok(tokens)
}

fn quoted(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    quote: char,
) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let Some(c) = chars.next() else {
            return Err("unterminated quoted value".into());
        };
        if c == quote {
            return Ok(out);
        }
        if c == '\n' || c == '\r' {
            return Err("unterminated quoted value".into());
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            return Err("unterminated quoted value".into());
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                let max_digits = if e <= '3' { 2 } else { 1 };
                for _ in 0..max_digits {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
            }
            other => out.push(other),
        }
    }
}

/// Parses a `sasl.jaas.config` value holding exactly one login module.
pub(crate) fn parse(text: &str) -> Result<JaasEntry, String> {
    let mut tokens = tokenize(text)?.into_iter();
    let module =
        match tokens.next() {
            Some(Token::Word(m)) => m,
            None => return Err(
                "is empty; expected `<LoginModule> required username=\"...\" password=\"...\";`"
                    .into(),
            ),
            Some(_) => return Err("must start with a login module class name".into()),
        };
    match tokens.next() {
        Some(Token::Word(flag))
            if ["required", "requisite", "sufficient", "optional"]
                .iter()
                .any(|f| flag.eq_ignore_ascii_case(f)) => {}
        Some(Token::Word(flag)) => {
            return Err(format!(
                "invalid control flag `{flag}` after the login module (use `required`)"
            ));
        }
        _ => return Err("expected a control flag (`required`) after the login module".into()),
    }
    let mut options = BTreeMap::new();
    loop {
        match tokens.next() {
            None | Some(Token::Semicolon) => break,
            Some(Token::Word(name)) => {
                if tokens.next() != Some(Token::Equals) {
                    return Err(format!("option `{name}` is not followed by `=`"));
                }
                match tokens.next() {
                    Some(Token::Word(v) | Token::Quoted(v)) => {
                        options.insert(name, v);
                    }
                    _ => return Err(format!("no value given for option `{name}`")),
                }
            }
            Some(_) => return Err("expected an option name".into()),
        }
    }
    if tokens.next().is_some() {
        return Err("contains more than one login module; exactly one is allowed".into());
    }
    Ok(JaasEntry { module, options })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scram_entry_with_quoted_values() {
        let e = parse(
            r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="pw";"#,
        )
        .unwrap();
        assert_eq!(
            e.module,
            "org.apache.kafka.common.security.scram.ScramLoginModule"
        );
        assert_eq!(e.options.get("username").map(String::as_str), Some("alice"));
        assert_eq!(e.options.get("password").map(String::as_str), Some("pw"));
    }

    #[test]
    fn quoted_values_decode_escapes() {
        let e = parse(r#"M required password="a\"b\\c\td\101" other='x y';"#).unwrap();
        assert_eq!(
            e.options.get("password").map(String::as_str),
            Some("a\"b\\c\tdA")
        );
        assert_eq!(e.options.get("other").map(String::as_str), Some("x y"));
    }

    #[test]
    fn quoted_values_may_hold_separators_and_equals() {
        let e = parse(r#"M required password="p=w;/*x*/ //";"#).unwrap();
        assert_eq!(
            e.options.get("password").map(String::as_str),
            Some("p=w;/*x*/ //")
        );
    }

    #[test]
    fn control_flag_is_case_insensitive() {
        assert!(parse("M REQUIRED a=b;").is_ok());
        assert!(parse("M Optional a=b;").is_ok());
    }

    #[test]
    fn invalid_control_flag_is_an_error() {
        assert!(
            parse("M mandatory a=b;")
                .unwrap_err()
                .contains("control flag")
        );
    }

    #[test]
    fn comments_are_skipped() {
        let e = parse("M /* c */ required // rest\n a=b;").unwrap();
        assert_eq!(e.options.get("a").map(String::as_str), Some("b"));
    }

    #[test]
    fn missing_final_semicolon_is_accepted() {
        assert!(parse("M required a=b").is_ok());
    }

    #[test]
    fn two_modules_are_an_error() {
        assert!(
            parse("M required a=b; N required c=d;")
                .unwrap_err()
                .contains("more than one")
        );
    }

    #[test]
    fn option_without_value_is_an_error_naming_the_option() {
        assert!(
            parse("M required username=;")
                .unwrap_err()
                .contains("username")
        );
    }

    #[test]
    fn unterminated_quote_is_an_error_without_the_value() {
        let err = parse(r#"M required password="hunter2"#).unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn unexpected_character_error_does_not_echo_it() {
        let err = parse("M required password=p@ss;").unwrap_err();
        assert!(!err.contains('@'), "{err}");
    }
}
