//! Log output: human-readable text by default, or one JSON object per line.
//!
//! Every crate of the daemon logs through `tracing`; this module installs the
//! subscriber that writes those events to stderr (stdout is kept for command
//! output such as `translate`'s table). Which events are written is chosen
//! with `RUST_LOG`-style directives (`info`, `mm2_checkpoint=debug,kafka_lite=warn`)
//! from `--log-level`, else the `MM2_LOG` environment variable, else `info`.
//! The line format is `--log-format`, else the `MM2_LOG_FORMAT` environment
//! variable, else text (docs/operations.md, "Logging").
//! Messages from crates that use the `log` facade (rustls) are bridged in.
//!
//! Secrets never reach a log line: configuration types keep them in
//! [`crate::config::Secret`] (kafka-lite's), whose `Debug` and `Display`
//! print `[redacted]`.

use std::fmt;

use tracing::Subscriber;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// The environment variable read when `--log-level` is not given.
pub const LOG_ENV: &str = "MM2_LOG";

/// The environment variable read when `--log-format` is not given: `text`
/// or `json`.
pub const LOG_FORMAT_ENV: &str = "MM2_LOG_FORMAT";

/// The filter used when neither `--log-level` nor `MM2_LOG` is set.
pub const DEFAULT_DIRECTIVES: &str = "info";

/// How each event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `2026-01-01T00:00:00.000000Z  INFO target: message key=value`.
    #[default]
    Text,
    /// One JSON object per line, for log collectors: `timestamp`, `level`,
    /// `target` and the event's `fields` (its message included).
    Json,
}

/// A log setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoggingError {
    /// The filter directives do not parse.
    InvalidFilter {
        /// Where the directives came from: `--log-level` or `MM2_LOG`.
        source: &'static str,
        /// The directives as given.
        directives: String,
        /// The parser's explanation.
        reason: String,
    },
    /// `MM2_LOG_FORMAT` names no log format.
    InvalidFormat {
        /// The value as given.
        value: String,
    },
    /// A global subscriber was already installed.
    AlreadyInstalled,
}

impl fmt::Display for LoggingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoggingError::InvalidFilter {
                source,
                directives,
                reason,
            } => write!(
                f,
                "{source}: `{directives}` is not a valid log filter: {reason}; use a level \
                 (off, error, warn, info, debug, trace) or directives such as \
                 `info,kafka_lite=debug`"
            ),
            LoggingError::InvalidFormat { value } => write!(
                f,
                "{LOG_FORMAT_ENV}: `{value}` is not a log format; use `text` or `json`"
            ),
            LoggingError::AlreadyInstalled => f.write_str("a log subscriber is already installed"),
        }
    }
}

impl std::error::Error for LoggingError {}

/// Picks the filter directives and builds the filter: `cli` (`--log-level`)
/// wins over `env` (the value of `MM2_LOG`), which wins over [`DEFAULT_DIRECTIVES`].
/// Empty values count as unset.
pub fn filter(cli: Option<&str>, env: Option<&str>) -> Result<EnvFilter, LoggingError> {
    fn present(v: Option<&str>) -> Option<&str> {
        v.map(str::trim).filter(|v| !v.is_empty())
    }
    let (source, directives) = match (present(cli), present(env)) {
        (Some(d), _) => ("--log-level", d),
        (None, Some(d)) => (LOG_ENV, d),
        (None, None) => ("default", DEFAULT_DIRECTIVES),
    };
    let invalid = |reason: String| LoggingError::InvalidFilter {
        source,
        directives: directives.to_string(),
        reason,
    };
    check_bare_levels(directives).map_err(invalid)?;
    EnvFilter::builder()
        .parse(directives)
        .map_err(|e| invalid(e.to_string()))
}

/// Picks the log format: `cli` (`--log-format`) wins over `env` (the value
/// of `MM2_LOG_FORMAT`, `text` or `json` in any case), which wins over text.
/// An empty value counts as unset.
pub fn format(cli: Option<LogFormat>, env: Option<&str>) -> Result<LogFormat, LoggingError> {
    if let Some(format) = cli {
        return Ok(format);
    }
    match env.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(LogFormat::default()),
        Some(v) if v.eq_ignore_ascii_case("text") => Ok(LogFormat::Text),
        Some(v) if v.eq_ignore_ascii_case("json") => Ok(LogFormat::Json),
        Some(v) => Err(LoggingError::InvalidFormat {
            value: v.to_string(),
        }),
    }
}

/// The level names a directive without `=` may be.
const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// Refuses a directive that is neither a level nor `TARGET=LEVEL`. `EnvFilter`
/// reads a bare word such as `warning` as a target name enabled at every
/// level, so a mistyped level would silently drop every event.
fn check_bare_levels(directives: &str) -> Result<(), String> {
    for directive in directives.split(',').map(str::trim) {
        if directive.is_empty() || directive.contains(['=', '[']) {
            continue;
        }
        if LEVELS.iter().any(|l| l.eq_ignore_ascii_case(directive)) {
            continue;
        }
        let lower = directive.to_ascii_lowercase();
        let hint = LEVELS
            .iter()
            .find(|l| lower.starts_with(*l) || (lower.len() >= 3 && l.starts_with(&lower)))
            .map(|l| format!("; did you mean `{l}`?"))
            .unwrap_or_default();
        return Err(format!(
            "`{directive}` is not a level{hint} (a target needs a level: `{directive}=debug`)"
        ));
    }
    Ok(())
}

/// The subscriber writing events that pass `filter` to `writer` in `format`.
pub fn subscriber<W>(
    format: LogFormat,
    filter: EnvFilter,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_target(true)
        // A failed write (stderr closed) is dropped: reporting it would
        // `eprintln!`, which panics on the same closed stderr.
        .log_internal_errors(false);
    match format {
        LogFormat::Text => Box::new(builder.finish()),
        LogFormat::Json => Box::new(
            builder
                .json()
                // Event fields stay under "fields", so a field named like a
                // top-level key (`target`, `level`) cannot produce duplicate keys.
                .with_current_span(true)
                .with_span_list(false)
                .finish(),
        ),
    }
}

/// Installs the process-wide subscriber writing to stderr, and bridges the
/// `log` facade into it.
pub fn init(format: LogFormat, filter: EnvFilter) -> Result<(), LoggingError> {
    use tracing_subscriber::util::SubscriberInitExt as _;
    // `try_init` also installs the `log` → `tracing` bridge.
    subscriber(format, filter, std::io::stderr)
        .try_init()
        .map_err(|_| LoggingError::AlreadyInstalled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::sync::{Arc, Mutex};

    /// Collects everything the subscriber writes.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("capture lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Capture {
        type Writer = Capture;
        fn make_writer(&'w self) -> Self::Writer {
            self.clone()
        }
    }

    impl Capture {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("capture lock").clone()).expect("utf-8 logs")
        }
    }

    fn log_with(format: LogFormat, directives: &str, emit: impl FnOnce()) -> String {
        let capture = Capture::default();
        let filter = filter(Some(directives), None).expect("valid filter");
        let sub = subscriber(format, filter, capture.clone());
        tracing::subscriber::with_default(sub, emit);
        capture.text()
    }

    #[test]
    fn json_format_writes_one_object_per_line_with_fields() {
        let out = log_with(LogFormat::Json, "info", || {
            tracing::info!(flow = "A->B", groups = 3, "round done");
            tracing::warn!("second line");
        });
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(
            lines[0].starts_with('{') && lines[0].ends_with('}'),
            "{out}"
        );
        assert!(
            lines[0].contains(r#""fields":{"message":"round done","flow":"A->B","groups":3}"#),
            "{out}"
        );
        assert!(lines[0].contains(r#""level":"INFO""#), "{out}");
        assert!(lines[1].contains(r#""level":"WARN""#), "{out}");
    }

    #[test]
    fn text_format_is_human_readable() {
        let out = log_with(LogFormat::Text, "info", || {
            tracing::info!(flow = "A->B", "round done");
        });
        assert!(out.contains("INFO"), "{out}");
        assert!(out.contains("round done flow=\"A->B\""), "{out}");
        assert!(!out.trim_start().starts_with('{'), "{out}");
    }

    #[test]
    fn level_filter_drops_less_severe_events() {
        let out = log_with(LogFormat::Text, "warn", || {
            tracing::info!("hidden");
            tracing::warn!("shown");
        });
        assert!(!out.contains("hidden"), "{out}");
        assert!(out.contains("shown"), "{out}");
    }

    #[test]
    fn redacted_secrets_stay_redacted_in_logs() {
        let secret = crate::config::Secret::new("hunter2");
        let out = log_with(LogFormat::Json, "info", || {
            tracing::info!(password = ?secret, shown = %secret, "connecting");
        });
        assert!(!out.contains("hunter2"), "{out}");
        assert!(out.contains("[redacted]"), "{out}");
    }

    #[test]
    fn cli_level_wins_over_environment() {
        let f = filter(Some("debug"), Some("error")).expect("valid");
        assert_eq!(
            f.max_level_hint(),
            Some(tracing::level_filters::LevelFilter::DEBUG)
        );
    }

    #[test]
    fn environment_is_used_without_cli_level() {
        let f = filter(None, Some("error")).expect("valid");
        assert_eq!(
            f.max_level_hint(),
            Some(tracing::level_filters::LevelFilter::ERROR)
        );
    }

    #[test]
    fn default_is_info() {
        let f = filter(None, Some("  ")).expect("valid");
        assert_eq!(
            f.max_level_hint(),
            Some(tracing::level_filters::LevelFilter::INFO)
        );
    }

    #[test]
    fn a_word_that_is_not_a_level_is_refused_with_a_hint() {
        for (given, hint) in [
            ("warning", Some("warn")),
            ("bogus", None),
            ("info,Debugging", Some("debug")),
        ] {
            let e = filter(Some(given), None).expect_err(given).to_string();
            assert!(e.starts_with("--log-level: "), "{e}");
            assert!(e.contains("error, warn, info, debug, trace"), "{e}");
            match hint {
                Some(h) => assert!(e.contains(&format!("did you mean `{h}`?")), "{e}"),
                None => assert!(!e.contains("did you mean"), "{e}"),
            }
        }
        for ok in [
            "WARN",
            "off",
            "info,kafka_lite=debug",
            "mm2_checkpoint[flow]=trace",
        ] {
            filter(Some(ok), None).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn invalid_filter_names_its_source() {
        let e = filter(None, Some("mm2=notalevel")).expect_err("invalid");
        assert!(
            matches!(
                e,
                LoggingError::InvalidFilter {
                    source: "MM2_LOG",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("mm2=notalevel"), "{e}");
    }

    #[test]
    fn the_flag_wins_over_the_environment_which_wins_over_text() {
        assert_eq!(format(None, None), Ok(LogFormat::Text));
        assert_eq!(format(None, Some(" ")), Ok(LogFormat::Text));
        assert_eq!(format(None, Some("json")), Ok(LogFormat::Json));
        assert_eq!(format(None, Some(" JSON ")), Ok(LogFormat::Json));
        assert_eq!(format(None, Some("Text")), Ok(LogFormat::Text));
        assert_eq!(
            format(Some(LogFormat::Text), Some("json")),
            Ok(LogFormat::Text)
        );
        assert_eq!(
            format(Some(LogFormat::Json), Some("nonsense")),
            Ok(LogFormat::Json)
        );
        let e = format(None, Some("yaml")).expect_err("yaml");
        assert_eq!(
            e.to_string(),
            "MM2_LOG_FORMAT: `yaml` is not a log format; use `text` or `json`"
        );
    }
}
