//! The command line: subcommands, options, `--help` and `--version`.
//!
//! Parsing uses `clap`'s derive API: subcommands with their own options,
//! generated `--help` (and `help SUBCOMMAND`), "did you mean" suggestions and
//! exit code 2 on usage errors come for free. Shell completions (`completions
//! SHELL`, `clap_complete`) and the man page (`man`, `clap_mangen`) are
//! generated from this same definition, so they cannot drift from it. Colour
//! output is left out to keep the binary small.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use clap::{Args, Parser, Subcommand, ValueEnum};

use mm2_checkpoint::config::ConfigFormat;
use mm2_checkpoint::driver::TranslateFormat;
use mm2_checkpoint::logging::LogFormat;

/// The package version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The target triple this binary was built for.
pub const TARGET: &str = env!("MM2_CHECKPOINT_TARGET");

/// What `--version` prints after the program name: with the TLS crypto
/// provider this process would use on this CPU, and why
/// (docs/tls-providers.md).
static LONG_VERSION: LazyLock<String> = LazyLock::new(|| {
    let provider = match mm2_checkpoint::tls_provider::choice() {
        Ok(choice) => format!("rustls with {} ({})", choice.kind, choice.reason),
        Err(e) => format!("none: {e}"),
    };
    format!("{VERSION}\ntarget: {TARGET}\ntls provider: {provider}")
});

const EXIT_CODES: &str = "\
Exit codes:
  0  success (run: also when stopped by SIGTERM or SIGINT)
  1  runtime failure (a broker or the network failed, a signal stopped run --once or
     translate before it finished, or a second signal cut shutdown short)
  2  usage or configuration error (detected before any network I/O)
  3  translate --apply: at least one requested group was not committed (each is named on stderr)
  4  cutover: every group was committed (or, without --execute, would be), some partition
     with a re-read bound above 0 (printed per partition)
  5  cutover: at least one group was refused, timed out waiting, or not committed (each is
     named on stderr); 0 from cutover means every group exact";

/// MirrorMaker 2 checkpointing (offset translation and consumer group offset
/// sync) as one small binary. Reads MM2's own mm2.properties.
#[derive(Debug, Parser)]
#[command(
    name = "mm2-checkpoint",
    version,
    long_version = LONG_VERSION.as_str(),
    after_help = EXIT_CODES
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check mm2.properties and print every enabled flow's effective settings
    /// (secrets masked) and warnings. Connects to nothing.
    Validate(ValidateArgs),
    /// Emit checkpoints (and sync group offsets, if enabled) for every enabled
    /// flow until SIGTERM or SIGINT.
    Run(RunArgs),
    /// Translate the committed offsets of consumer groups across one flow, and
    /// optionally commit them on the target.
    Translate(TranslateArgs),
    /// Move consumer groups from one side of a flow to the other (a planned
    /// failover, or failing back): wait until the mirror covers their final
    /// commits, then print the positions (a dry run) or, with --execute,
    /// commit them.
    Cutover(CutoverArgs),
    /// Tell whether consumer groups may move from a flow's source to its
    /// target now (exact, with a re-read bound, waiting, or not ready and
    /// why), and how each flow stands: its membership, its newest checkpoint
    /// and offset sync. Reads only; exits 0 whatever the groups' status.
    Status(StatusArgs),
    /// Print a shell completion script for bash, zsh, fish, elvish or
    /// powershell, e.g. `mm2-checkpoint completions bash > /etc/bash_completion.d/mm2-checkpoint`.
    Completions(CompletionsArgs),
    /// Print the man page (roff), e.g. `mm2-checkpoint man > mm2-checkpoint.1`.
    Man,
}

/// Options of `completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// The completion script for `shell`, generated from the command definition.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "mm2-checkpoint", &mut out);
    out
}

/// The man page in roff, generated from the command definition: the usual
/// sections of the top-level command, then one section per subcommand with
/// its synopsis, description and options, then the exit codes.
pub fn man_page() -> std::io::Result<Vec<u8>> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("mm2-checkpoint {}", sub.get_name());
        let page = clap_mangen::Man::new(sub.clone().bin_name(name.clone()));
        let mut section = Vec::new();
        page.render_synopsis_section(&mut section)?;
        page.render_description_section(&mut section)?;
        page.render_options_section(&mut section)?;
        push_section(&mut out, &name.to_uppercase(), &section);
    }
    let mut section = Vec::new();
    man.render_extra_section(&mut section)?;
    push_section(&mut out, "EXIT STATUS", &section);
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// Appends rendered roff under the heading `heading`, in place of the
/// `.SH` headings it came with.
fn push_section(out: &mut Vec<u8>, heading: &str, roff: &[u8]) {
    out.extend_from_slice(format!(".SH \"{heading}\"\n").as_bytes());
    let text = String::from_utf8_lossy(roff);
    for line in text.lines().filter(|l| !l.starts_with(".SH ")) {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
}

/// The configuration file, given as `--config FILE` or as the first argument.
#[derive(Debug, Args)]
#[group(id = "config_file", required = true, multiple = false)]
pub struct ConfigFile {
    /// MM2's mm2.properties file.
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Same as --config FILE.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
}

/// `--config-format` (docs/configuration.md, "Connector-style input").
#[derive(Debug, Args)]
pub struct ConfigFormatFlag {
    /// How FILE is written: `mm2` (MirrorMaker 2's mm2.properties), `connector`
    /// (one MirrorCheckpointConnector configuration, as properties or as
    /// Connect REST JSON) or `auto` (decided by the content).
    #[arg(long = "config-format", value_enum, value_name = "FORMAT", default_value_t = ConfigFormatArg::Auto)]
    config_format: ConfigFormatArg,
}

/// `--config-format` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ConfigFormatArg {
    /// JSON, or properties with `connector.class` and no `clusters`, is a
    /// connector configuration; anything else is mm2.properties.
    Auto,
    /// MirrorMaker 2's mm2.properties.
    Mm2,
    /// One MirrorCheckpointConnector configuration.
    Connector,
}

impl ConfigFile {
    /// The file given (clap requires exactly one of the two forms).
    pub fn path(&self) -> Option<&Path> {
        self.config.as_deref().or(self.file.as_deref())
    }
}

impl ConfigFormatFlag {
    /// How the configuration file is written.
    pub fn format(&self) -> ConfigFormat {
        match self.config_format {
            ConfigFormatArg::Auto => ConfigFormat::Auto,
            ConfigFormatArg::Mm2 => ConfigFormat::Mm2,
            ConfigFormatArg::Connector => ConfigFormat::Connector,
        }
    }
}

/// Options of `validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The configuration file.
    #[command(flatten)]
    pub config: ConfigFile,
    /// How the configuration file is written.
    #[command(flatten)]
    pub config_format: ConfigFormatFlag,
    /// Also fail (exit 2) on every warning: keys that nothing reads (misspelt
    /// ones), keys that are ignored (top-level client keys, flow-level
    /// connection keys, ssl.*/sasl.* keys the protocol does not use),
    /// certificates expired, not yet valid or expiring within 30 days,
    /// disabled host name verification, SASL PLAIN without TLS, and flows
    /// enabled by the top-level `enabled`. Keys MirrorMaker 2 reads that only
    /// do not concern checkpointing are listed, not warned about.
    #[arg(long)]
    pub strict: bool,
    /// Check the structure only, for CI gates without the production secrets:
    /// keys, values, flows and the rules between keys are checked, but config
    /// provider values (${env:..}, ${file:..}, ${dir:..}) are not read and key
    /// and trust stores and PEM files are not opened; each is listed as `not
    /// checked`, and the output says that material was not checked.
    #[arg(long)]
    pub no_secrets: bool,
    /// Only the flows whose target is one of these cluster aliases, as
    /// MirrorMaker 2's --clusters: `FILE --clusters west east` (after FILE, or
    /// with --config FILE, since it takes every word that follows) or
    /// `--clusters west,east`; by default every enabled flow.
    #[arg(long, value_name = "ALIAS", num_args = 1.., value_delimiter = ',')]
    pub clusters: Vec<String>,
    /// Output format on stdout: `text` (the effective settings; errors on
    /// stderr) or `json` (one document with settings, errors and warnings).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = ValidateFormatArg::Text)]
    pub format: ValidateFormatArg,
}

/// `--format` values of `validate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ValidateFormatArg {
    /// The effective settings as text on stdout, errors on stderr.
    Text,
    /// One JSON document on stdout (docs/configuration.md, "validate").
    Json,
}

/// Logging options shared by the commands that talk to brokers.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Log line format (logs go to stderr) [default: $MM2_LOG_FORMAT, else text]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub log_format: Option<LogFormatArg>,
    /// Log filter: a level (off, error, warn, info, debug, trace) or RUST_LOG-style
    /// directives such as `info,kafka_lite=debug` [default: $MM2_LOG, else info]
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
}

/// `--log-format` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormatArg {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl From<LogFormatArg> for LogFormat {
    fn from(value: LogFormatArg) -> Self {
        match value {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        }
    }
}

/// Options of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The configuration file.
    #[command(flatten)]
    pub config: ConfigFile,
    /// How the configuration file is written.
    #[command(flatten)]
    pub config_format: ConfigFormatFlag,
    /// Only the flows whose target is one of these cluster aliases, as
    /// MirrorMaker 2's --clusters: `FILE --clusters west east` (after FILE, or
    /// with --config FILE, since it takes every word that follows) or
    /// `--clusters west,east`; by default every enabled flow.
    #[arg(long, value_name = "ALIAS", num_args = 1.., value_delimiter = ',')]
    pub clusters: Vec<String>,
    /// Run one round of every flow, then exit.
    #[arg(long)]
    pub once: bool,
    /// Serve /metrics, /healthz and /readyz over HTTP on this address.
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_addr: Option<String>,
    /// Logging.
    #[command(flatten)]
    pub log: LogArgs,
}

/// `--format` values of `translate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TranslateFormatArg {
    /// An aligned text table.
    Table,
    /// A JSON document.
    Json,
}

impl From<TranslateFormatArg> for TranslateFormat {
    fn from(value: TranslateFormatArg) -> Self {
        match value {
            TranslateFormatArg::Table => TranslateFormat::Table,
            TranslateFormatArg::Json => TranslateFormat::Json,
        }
    }
}

/// Options of `translate`. The groups are the union of `--group`,
/// `--groups-file` and `--group-regex`/`--all-groups`; at least one is needed.
#[derive(Debug, Args)]
#[group(id = "selection", required = true, multiple = true)]
pub struct TranslateArgs {
    /// The configuration file.
    #[command(flatten)]
    pub config: ConfigFile,
    /// How the configuration file is written.
    #[command(flatten)]
    pub config_format: ConfigFormatFlag,
    /// The flow to translate across, `SOURCE->TARGET` (quote it in a shell).
    #[arg(long, value_name = "SOURCE->TARGET")]
    pub flow: String,
    /// A consumer group of the source cluster; repeat for more groups.
    #[arg(long = "group", value_name = "GROUP", group = "selection")]
    pub groups: Vec<String>,
    /// Read group names from FILE, one per line (`-` for stdin); blank lines
    /// and lines starting with `#` are skipped.
    #[arg(long, value_name = "FILE", group = "selection")]
    pub groups_file: Option<PathBuf>,
    /// Also every group with checkpoints in the checkpoints topic whose whole
    /// name matches REGEX (Java syntax, a comma-separated list like MM2's
    /// `groups` key).
    #[arg(long, value_name = "REGEX", group = "selection")]
    pub group_regex: Option<String>,
    /// Every group with checkpoints in the checkpoints topic.
    #[arg(long, group = "selection")]
    pub all_groups: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = TranslateFormatArg::Table)]
    pub format: TranslateFormatArg,
    /// Also commit the translated offsets to the groups on the target cluster.
    /// Exits 3 if any requested group was not committed (refused or failed).
    #[arg(long)]
    pub apply: bool,
    /// Logging.
    #[command(flatten)]
    pub log: LogArgs,
}

/// Options of `cutover`. The groups are the union of `--group`,
/// `--groups-file` and `--group-regex`; at least one is needed.
#[derive(Debug, Args)]
#[group(id = "cutover_selection", required = true, multiple = true)]
pub struct CutoverArgs {
    /// The configuration file.
    #[command(flatten)]
    pub config: ConfigFile,
    /// How the configuration file is written.
    #[command(flatten)]
    pub config_format: ConfigFormatFlag,
    /// The flow whose mirror and offset syncs carry the groups, `SOURCE->TARGET`
    /// (quote it in a shell).
    #[arg(long, value_name = "SOURCE->TARGET")]
    pub flow: String,
    /// The cluster the groups go to: the flow's TARGET (forward, from SOURCE)
    /// or its SOURCE (back, from TARGET).
    #[arg(long, value_name = "CLUSTER")]
    pub to: String,
    /// A consumer group to move; repeat for more groups.
    #[arg(long = "group", value_name = "GROUP", group = "cutover_selection")]
    pub groups: Vec<String>,
    /// Read group names from FILE, one per line (`-` for stdin); blank lines
    /// and lines starting with `#` are skipped.
    #[arg(long, value_name = "FILE", group = "cutover_selection")]
    pub groups_file: Option<PathBuf>,
    /// Also every group on the cluster the groups leave whose whole name
    /// matches REGEX (Java syntax, a comma-separated list like MM2's `groups`).
    #[arg(long, value_name = "REGEX", group = "cutover_selection")]
    pub group_regex: Option<String>,
    /// How long to wait for the mirror and the offset syncs to cover the
    /// groups' final commits: a number with a unit, `ms`, `s`, `m` or `h`
    /// (e.g. `90s`, `5m`).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Commit the positions on the cluster the groups go to. Without it,
    /// only print what would be committed (a dry run).
    #[arg(long)]
    pub execute: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = TranslateFormatArg::Table)]
    pub format: TranslateFormatArg,
    /// Logging.
    #[command(flatten)]
    pub log: LogArgs,
}

/// Options of `status`. The groups are the union of `--group`,
/// `--groups-file` and `--group-regex`/`--all-groups`; with none of them,
/// every group the flow's `groups` filter accepts.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The configuration file.
    #[command(flatten)]
    pub config: ConfigFile,
    /// How the configuration file is written.
    #[command(flatten)]
    pub config_format: ConfigFormatFlag,
    /// Only this flow, `SOURCE->TARGET` (quote it in a shell); every enabled
    /// flow without it.
    #[arg(long, value_name = "SOURCE->TARGET")]
    pub flow: Option<String>,
    /// The cluster the groups would go to: the flow's TARGET (forward, the
    /// default) or its SOURCE (back, failing back: the groups are read on
    /// TARGET). Needs `--flow`.
    #[arg(long, value_name = "CLUSTER", requires = "flow")]
    pub to: Option<String>,
    /// A consumer group of the cluster the groups leave (the source, or the
    /// target with `--to SOURCE`); repeat for more groups.
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
    /// Read group names from FILE, one per line (`-` for stdin); blank lines
    /// and lines starting with `#` are skipped.
    #[arg(long, value_name = "FILE")]
    pub groups_file: Option<PathBuf>,
    /// Also every group on the cluster the groups leave whose whole name
    /// matches REGEX (Java syntax, a comma-separated list like MM2's `groups`).
    #[arg(long, value_name = "REGEX", conflicts_with = "all_groups")]
    pub group_regex: Option<String>,
    /// Every group on the cluster the groups leave.
    #[arg(long)]
    pub all_groups: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = TranslateFormatArg::Table)]
    pub format: TranslateFormatArg,
    /// Logging.
    #[command(flatten)]
    pub log: LogArgs,
}

/// Parses a duration of `--timeout`: digits and a unit (`ms`, `s`, `m`, `h`).
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    let n: u64 = digits.parse().map_err(|_| {
        format!("`{text}` is not a duration: a whole number and a unit, e.g. 90s or 5m")
    })?;
    let ms = match unit {
        "ms" => Some(n),
        "s" => n.checked_mul(1_000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        _ => {
            return Err(format!(
                "`{text}` has no unit or an unknown one: use ms, s, m or h, e.g. 90s or 5m"
            ));
        }
    };
    ms.map(std::time::Duration::from_millis)
        .ok_or_else(|| format!("`{text}` is too long"))
}

/// Checks that `--metrics-addr` looks like `HOST:PORT` (resolving and binding
/// happen later and fail as runtime errors).
pub fn check_metrics_addr(addr: &str) -> Result<(), String> {
    let Some((host, port)) = addr.rsplit_once(':') else {
        return Err(format!("`{addr}` is not HOST:PORT, e.g. [::]:9464"));
    };
    if host.is_empty() {
        return Err(format!("`{addr}` has no host; use e.g. [::]:{port}"));
    }
    if port.parse::<u16>().is_err() {
        return Err(format!(
            "`{port}` in `{addr}` is not a port number (0-65535)"
        ));
    }
    Ok(())
}

/// The IPv4 address to listen on instead when `addr`, every IPv6 address
/// (`[::]:PORT`), cannot be bound because this host has no IPv6: every IPv4
/// address on the same port. `None` for any other address. On Linux `[::]`
/// also accepts IPv4 connections (unless `net.ipv6.bindv6only` is set), so
/// `[::]:9464` serves both stacks where it can and IPv4 where IPv6 is off
/// (docs/operations.md, "HTTP endpoint").
pub fn ipv4_fallback(addr: &str) -> Option<String> {
    let (host, port) = addr.rsplit_once(':')?;
    let unspecified = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .and_then(|h| h.parse::<std::net::Ipv6Addr>().ok())
        .is_some_and(|ip| ip.is_unspecified());
    unspecified.then(|| format!("0.0.0.0:{port}"))
}

/// Whether a failure to bind `[::]` means "no IPv6 here" (so the IPv4
/// fallback is worth a try) rather than a port in use or not allowed, which
/// IPv4 would not fix.
pub fn worth_ipv4_fallback(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    !matches!(
        error.kind(),
        ErrorKind::AddrInUse | ErrorKind::PermissionDenied
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use clap::error::ErrorKind;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("mm2-checkpoint").chain(args.iter().copied()))
    }

    #[test]
    fn command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn config_is_accepted_as_option_or_argument() {
        for args in [
            &["validate", "--config", "a.properties"][..],
            &["validate", "-c", "a.properties"],
            &["validate", "a.properties"],
        ] {
            let cli = parse(args).expect("parses");
            let Command::Validate(v) = cli.command else {
                panic!("not validate: {args:?}");
            };
            assert_eq!(v.config.path(), Some(Path::new("a.properties")));
        }
    }

    #[test]
    fn validate_takes_format_strict_and_no_secrets() {
        let Command::Validate(v) = parse(&["validate", "f"]).expect("parses").command else {
            panic!("not validate");
        };
        assert_eq!(v.format, ValidateFormatArg::Text);
        assert!(!v.strict && !v.no_secrets);
        let Command::Validate(v) = parse(&[
            "validate",
            "--format",
            "json",
            "--strict",
            "--no-secrets",
            "f",
        ])
        .expect("parses")
        .command
        else {
            panic!("not validate");
        };
        assert_eq!(v.format, ValidateFormatArg::Json);
        assert!(v.strict && v.no_secrets);
        let e = parse(&["validate", "--format", "yaml", "f"]).expect_err("refused");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn config_given_twice_is_a_usage_error() {
        let e = parse(&["validate", "--config", "a", "b"]).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::ArgumentConflict);
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn config_format_defaults_to_auto_and_takes_the_three_formats() {
        let format = |args: &[&str]| match parse(args) {
            Ok(Cli {
                command: Command::Validate(v),
            }) => v.config_format.format(),
            other => panic!("unexpected parse: {other:?}"),
        };
        assert_eq!(format(&["validate", "f"]), ConfigFormat::Auto);
        assert_eq!(
            format(&["validate", "--config-format", "connector", "f"]),
            ConfigFormat::Connector
        );
        assert_eq!(
            format(&["validate", "-c", "f", "--config-format", "mm2"]),
            ConfigFormat::Mm2
        );
        let e = parse(&["run", "--config-format", "json", "f"]).expect_err("refused");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn missing_config_is_a_usage_error() {
        let e = parse(&["run"]).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::MissingRequiredArgument);
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn run_options_parse() {
        let cli = parse(&[
            "run",
            "--config",
            "m.properties",
            "--once",
            "--metrics-addr",
            "127.0.0.1:9464",
            "--log-format",
            "json",
            "--log-level",
            "debug",
        ])
        .expect("parses");
        let Command::Run(r) = cli.command else {
            panic!("not run");
        };
        assert!(r.once);
        assert_eq!(r.metrics_addr.as_deref(), Some("127.0.0.1:9464"));
        assert_eq!(r.log.log_format, Some(LogFormatArg::Json));
        assert_eq!(r.log.log_level.as_deref(), Some("debug"));
    }

    #[test]
    fn run_defaults_to_no_log_format_flag_and_no_metrics_server() {
        let Command::Run(r) = parse(&["run", "m.properties"]).expect("parses").command else {
            panic!("not run");
        };
        assert!(!r.once);
        assert_eq!(r.metrics_addr, None);
        // Text unless MM2_LOG_FORMAT says otherwise (logging::format).
        assert_eq!(r.log.log_format, None);
        assert_eq!(r.log.log_level, None);
    }

    #[test]
    fn unknown_log_format_is_a_usage_error() {
        let e = parse(&["run", "m", "--log-format", "xml"]).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidValue);
    }

    #[test]
    fn translate_collects_repeated_groups() {
        let cli = parse(&[
            "translate",
            "m",
            "--flow",
            "A->B",
            "--group",
            "g1",
            "--group",
            "g2",
            "--format",
            "json",
            "--apply",
        ])
        .expect("parses");
        let Command::Translate(t) = cli.command else {
            panic!("not translate");
        };
        assert_eq!(t.flow, "A->B");
        assert_eq!(t.groups, ["g1", "g2"]);
        assert_eq!(t.format, TranslateFormatArg::Json);
        assert!(t.apply);
    }

    #[test]
    fn translate_selects_groups_by_file_regex_or_all_and_combines_them() {
        let cli = parse(&[
            "translate",
            "m",
            "--flow",
            "A->B",
            "--groups-file",
            "-",
            "--group-regex",
            "app-.*",
            "--group",
            "g1",
        ])
        .expect("parses");
        let Command::Translate(t) = cli.command else {
            panic!("not translate");
        };
        assert_eq!(t.groups_file.as_deref(), Some(Path::new("-")));
        assert_eq!(t.group_regex.as_deref(), Some("app-.*"));
        assert_eq!(t.groups, ["g1"]);
        assert!(!t.all_groups);
        let Command::Translate(t) = parse(&["translate", "m", "--flow", "A->B", "--all-groups"])
            .expect("parses")
            .command
        else {
            panic!("not translate");
        };
        assert!(t.all_groups && t.groups.is_empty());
    }

    #[test]
    fn completions_and_man_parse() {
        let Command::Completions(c) = parse(&["completions", "zsh"]).expect("parses").command
        else {
            panic!("not completions");
        };
        assert_eq!(c.shell, clap_complete::Shell::Zsh);
        assert!(matches!(
            parse(&["man"]).expect("parses").command,
            Command::Man
        ));
    }

    #[test]
    fn cutover_takes_a_direction_groups_a_timeout_and_execute() {
        let cli = parse(&[
            "cutover",
            "m",
            "--flow",
            "A->B",
            "--to",
            "B",
            "--group",
            "g",
            "--group-regex",
            "pay.*",
            "--timeout",
            "90s",
            "--execute",
            "--format",
            "json",
        ])
        .expect("parses");
        let Command::Cutover(c) = cli.command else {
            panic!("not cutover");
        };
        assert_eq!((c.flow.as_str(), c.to.as_str()), ("A->B", "B"));
        assert_eq!(c.groups, ["g"]);
        assert_eq!(c.group_regex.as_deref(), Some("pay.*"));
        assert_eq!(c.timeout, std::time::Duration::from_secs(90));
        assert!(c.execute);
        assert_eq!(c.format, TranslateFormatArg::Json);
        let Command::Cutover(c) = parse(&[
            "cutover", "m", "--flow", "A->B", "--to", "A", "--group", "g",
        ])
        .expect("parses")
        .command
        else {
            panic!("not cutover");
        };
        assert!(!c.execute, "a dry run by default");
        assert_eq!(c.timeout, std::time::Duration::from_secs(300));
    }

    #[test]
    fn cutover_needs_a_group_and_a_side_to_go_to() {
        let e = parse(&["cutover", "m", "--flow", "A->B", "--to", "B"]).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::MissingRequiredArgument);
        let e = parse(&["cutover", "m", "--flow", "A->B", "--group", "g"]).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(
            parse_duration("250ms"),
            Ok(std::time::Duration::from_millis(250))
        );
        assert_eq!(
            parse_duration("5m"),
            Ok(std::time::Duration::from_secs(300))
        );
        assert_eq!(
            parse_duration("2h"),
            Ok(std::time::Duration::from_secs(7200))
        );
        assert!(parse_duration("300").unwrap_err().contains("no unit"));
        assert!(parse_duration("5 m").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("99999999999999999h").is_err());
    }

    #[test]
    fn translate_requires_a_group() {
        let e = parse(&["translate", "m", "--flow", "A->B"]).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn long_version_names_target_and_tls_provider() {
        let e = parse(&["--version"]).expect_err("version is reported as an early exit");
        assert_eq!(e.kind(), ErrorKind::DisplayVersion);
        assert_eq!(e.exit_code(), 0);
        let text = e.to_string();
        assert!(text.contains(VERSION), "{text}");
        assert!(text.contains(&format!("target: {TARGET}")), "{text}");
        let chosen = mm2_checkpoint::tls_provider::choice().unwrap();
        assert!(
            text.contains(&format!(
                "tls provider: rustls with {} ({})",
                chosen.kind, chosen.reason
            )),
            "{text}"
        );
    }

    #[test]
    fn metrics_addr_must_be_host_and_port() {
        assert_eq!(check_metrics_addr("0.0.0.0:9464"), Ok(()));
        assert_eq!(check_metrics_addr("[::]:9464"), Ok(()));
        assert_eq!(check_metrics_addr("localhost:0"), Ok(()));
        assert_eq!(check_metrics_addr("[::1]:9464"), Ok(()));
        assert!(check_metrics_addr("9464").is_err());
        assert!(check_metrics_addr(":9464").is_err());
        assert!(check_metrics_addr("localhost:http").is_err());
        assert!(check_metrics_addr("localhost:70000").is_err());
    }

    #[test]
    fn only_the_ipv6_wildcard_falls_back_to_the_ipv4_wildcard() {
        assert_eq!(ipv4_fallback("[::]:9464").as_deref(), Some("0.0.0.0:9464"));
        assert_eq!(ipv4_fallback("[0:0::0]:0").as_deref(), Some("0.0.0.0:0"));
        for addr in [
            "0.0.0.0:9464",
            "[::1]:9464",
            "127.0.0.1:9464",
            "localhost:9464",
            "9464",
        ] {
            assert_eq!(ipv4_fallback(addr), None, "{addr}");
        }
    }

    #[test]
    fn a_port_in_use_or_forbidden_is_not_retried_on_ipv4() {
        use std::io::{Error, ErrorKind};
        assert!(!worth_ipv4_fallback(&Error::from(ErrorKind::AddrInUse)));
        assert!(!worth_ipv4_fallback(&Error::from(
            ErrorKind::PermissionDenied
        )));
        assert!(worth_ipv4_fallback(&Error::from(
            ErrorKind::AddrNotAvailable
        )));
        // socket(AF_INET6) on a kernel booted with ipv6.disable=1.
        assert!(worth_ipv4_fallback(&Error::from_raw_os_error(97)));
    }
}
