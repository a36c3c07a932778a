//! The `mm2-checkpoint` command-line entry point.
//!
//! Order of work for every command: parse arguments, check log settings, load
//! and validate the whole configuration, and only then start the runtime and
//! touch the network. So every usage or configuration error exits with code 2
//! before any connection is attempted.
//!
//! Exit codes: 0 success (for `run`, also stopped by a signal), 1 runtime
//! failure (or a signal stopped `run --once` or `translate` before it
//! finished), 2 usage or configuration error, 3 `translate --apply` could not
//! commit every requested group, 4 `cutover` committed (or would commit) every
//! group with a re-read bound somewhere, 5 `cutover` refused, timed out on or
//! did not commit some group (docs/operations.md, "Exit codes").

mod cli;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;

use mm2_checkpoint::config::{
    self, ConfigError, FlowConfig, MirrorConfig, ProcessEnvironment, Secrets, Validation,
};
use mm2_checkpoint::core::GroupFilter;
use mm2_checkpoint::core::cutover::{Direction, Outcome};
use mm2_checkpoint::driver::{self, CutoverOptions, RunOptions, StatusOptions, TranslateOptions};
use mm2_checkpoint::metrics::{Metrics, MetricsServer};
use mm2_checkpoint::shutdown::{self, ShutdownReason, ShutdownSignal};
use mm2_checkpoint::{console, logging, notify};

use cli::{
    Cli, Command, ConfigFile, ConfigFormatFlag, CutoverArgs, LogArgs, RunArgs, StatusArgs,
    TranslateArgs, ValidateArgs, ValidateFormatArg,
};

/// A broker, the network or the runtime failed.
const EXIT_FAILURE: u8 = 1;
/// Bad arguments or configuration; nothing was sent to any broker.
const EXIT_USAGE: u8 = 2;
/// `translate --apply` ran, but at least one requested group was not committed.
const EXIT_NOT_APPLIED: u8 = 3;
/// `cutover`: every group committed (or, in a dry run, would be), some
/// partition with a re-read bound above 0.
const EXIT_CUTOVER_BOUNDED: u8 = 4;
/// `cutover`: some group refused, timed out or not committed.
const EXIT_CUTOVER_REFUSED: u8 = 5;

fn main() -> ExitCode {
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with code 0, usage errors to stderr with 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE));
        }
    };
    let outcome = match cli.command {
        Command::Validate(args) => validate(&args),
        Command::Run(args) => run(args),
        Command::Translate(args) => translate(args),
        Command::Cutover(args) => cutover(args),
        Command::Status(args) => status(args),
        Command::Completions(args) => {
            console::out_bytes(&cli::completions(args.shell));
            Ok(())
        }
        Command::Man => cli::man_page()
            .map(|page| console::out_bytes(&page))
            .map_err(|e| {
                console::err_line(&format!("error: cannot render the man page: {e}"));
                EXIT_FAILURE
            }),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => ExitCode::from(code),
    }
}

fn validate(args: &ValidateArgs) -> Result<(), u8> {
    let Some(path) = args.config.path() else {
        return Err(usage("give the configuration file with --config FILE"));
    };
    let secrets = match args.no_secrets {
        true => Secrets::Skip,
        false => Secrets::Read,
    };
    let mut validation = MirrorConfig::validate_file(
        path,
        args.config_format.format(),
        &ProcessEnvironment,
        secrets,
    );
    validation
        .keep_targets(&args.clusters)
        .map_err(|e| usage(&format!("--clusters: {e}")))?;
    let passes = validation.passes(args.strict);
    match args.format {
        ValidateFormatArg::Json => {
            console::out(&config::render_validation_json(&validation, args.strict));
        }
        ValidateFormatArg::Text if !validation.is_ok() => report_errors(&validation),
        ValidateFormatArg::Text => {
            console::out(&config::render_validation_text(&validation));
            if !passes {
                let n = validation.warnings.len();
                console::err_line(&format!(
                    "error: --strict: the configuration has {n} warning{} (--strict fails on \
                     every warning):",
                    if n == 1 { "" } else { "s" }
                ));
                for warning in &validation.warnings {
                    console::err_line(&format!("  - {warning}"));
                }
            }
        }
    }
    match passes {
        true => Ok(()),
        false => Err(EXIT_USAGE),
    }
}

/// Prints every error of `validation` on stderr, then what was not checked
/// because of them, then how many errors there were (when more than one).
fn report_errors(validation: &Validation) {
    for e in &validation.errors {
        console::err_line(&describe_config_error(e));
    }
    for n in &validation.not_checked {
        console::err_line(&format!("note: not checked: {n}"));
    }
    let n = validation.errors.len();
    if n > 1 {
        console::err_line(&format!(
            "error: the configuration has {n} errors (each is listed above)"
        ));
    }
}

fn run(args: RunArgs) -> Result<(), u8> {
    let filter = log_filter(&args.log)?;
    let log_format = log_format(&args.log)?;
    let config = load_config(&args.config, &args.config_format, &args.clusters)?;
    if let Some(addr) = &args.metrics_addr {
        cli::check_metrics_addr(addr).map_err(|e| usage(&format!("--metrics-addr: {e}")))?;
    }
    let provider = tls_provider(&config)?;
    start_logging(log_format, filter)?;
    let runtime = build_runtime()?;
    // The handlers are in place before the first log line, so a supervisor
    // that signals as soon as it sees the daemon start gets a clean exit.
    let shutdown = install_signals(&runtime)?;
    log_startup(&config, &provider);
    let outcome = runtime.block_on(async move {
        let tls_provider = provider.as_ref().map_or("none", |c| c.kind.name());
        let metrics = Metrics::with_settings(cli::VERSION, tls_provider, config.metrics);
        let server = match &args.metrics_addr {
            Some(addr) => Some(start_metrics_server(addr, &metrics, &shutdown).await?),
            None => None,
        };
        if !args.once {
            notify_systemd(&metrics, &shutdown);
        }
        // `GET /status`: a read-only status pass of its own, only where the
        // endpoint serves it and `mm2-checkpoint.status.interval.ms` turns
        // it on (it reads the clusters again: off by default).
        if let (Some(_), false, Some(interval)) =
            (&server, args.once, config.metrics.status_interval)
        {
            tokio::spawn(driver::publish_status(
                config.clone(),
                interval,
                metrics.clone(),
                shutdown.clone(),
            ));
        }
        let options = RunOptions { once: args.once };
        let result = until_shutdown(
            driver::run(config, options, shutdown.clone(), metrics),
            &shutdown,
        )
        .await
        .unwrap_or_else(|reason| match args.once {
            // The daemon stops at a signal; `--once` did not finish its round.
            false => Ok(()),
            true => Err(driver::DriverError::Interrupted(reason.to_string())),
        });
        let reason = shutdown.reason();
        shutdown.trigger(ShutdownReason::Requested);
        if let Some(server) = server {
            let _ = server.await;
        }
        match result {
            Ok(()) => {
                match reason {
                    Some(reason) => tracing::info!(%reason, "stopped"),
                    None => tracing::info!("stopped"),
                }
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "stopped on error");
                Err(EXIT_FAILURE)
            }
        }
    });
    stop_runtime(runtime);
    outcome
}

/// Makes every panic, on any thread, [`log_panic`].
fn install_panic_hook() {
    std::panic::set_hook(Box::new(log_panic));
}

/// A panic is a bug: it is logged as one ERROR line (through the log, so
/// JSON logs keep it whole) naming where and what, and the process ends with
/// SIGABRT (systemd and Kubernetes restart it). The release build's
/// `panic = "abort"` would abort anyway; the hook aborts itself so that every
/// build does, even when the panic is in a runtime worker, whose panic tokio
/// would otherwise catch and leave the daemon running without that task.
fn log_panic(info: &std::panic::PanicHookInfo<'_>) {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
        .replace('\n', " ");
    let location = info
        .location()
        .map(|l| format!("{}:{}", l.file(), l.line()))
        .unwrap_or_else(|| "unknown place".to_owned());
    let thread = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_owned();
    if tracing::dispatcher::has_been_set() {
        tracing::error!(%location, thread, panic = %message, "panicked: an internal error (a bug); the process ends; please report this line");
    } else {
        console::err_line(&format!(
            "error: panicked: an internal error (a bug) at {location} in thread {thread}: {message}"
        ));
    }
    std::process::abort();
}

/// Under a systemd `Type=notify` unit: tells systemd the daemon has started
/// and keeps it informed (docs/deploy.md). A socket that cannot be used is a
/// WARN, not a failure: the unit's start then times out and says why.
fn notify_systemd(metrics: &Metrics, shutdown: &ShutdownSignal) {
    match notify::Notifier::from_env() {
        Ok(Some(notifier)) => {
            tokio::spawn(notify::serve(
                notifier,
                metrics.readiness(),
                notify::watchdog_interval(),
                shutdown.clone(),
            ));
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(error = %e, "NOTIFY_SOCKET is set but unusable; systemd is not told the daemon started")
        }
    }
}

/// The enabled flow of `config` named `name` (`--flow`), or a usage error
/// listing the enabled ones.
fn enabled_flow<'a>(config: &'a MirrorConfig, name: &str) -> Result<&'a FlowConfig, u8> {
    config
        .flows
        .iter()
        .find(|f| f.name() == name)
        .ok_or_else(|| {
            let enabled: Vec<String> = config.flows.iter().map(|f| f.name()).collect();
            usage(&format!(
                "--flow: `{name}` is not an enabled flow of the configuration; enabled flows: {}",
                enabled.join(", ")
            ))
        })
}

/// The groups a one-off command is given: those of `--group` (`named`) and
/// `--groups-file` (`file`), and the filter of `--group-regex` (`regex`) or
/// `--all-groups` (`all`), read like MM2's `groups`.
fn select_groups(
    named: &[String],
    file: Option<&Path>,
    regex: Option<&str>,
    all: bool,
) -> Result<(Vec<String>, Option<GroupFilter>), u8> {
    if named.iter().any(String::is_empty) {
        return Err(usage("--group: a group name cannot be empty"));
    }
    let mut groups = named.to_vec();
    if let Some(file) = file {
        groups.extend(read_groups_file(file)?);
    }
    let matching = if all { Some(".*") } else { regex };
    let matching = matching
        .map(|regex| {
            GroupFilter::new(Some(regex), Some(""))
                .map_err(|e| usage(&format!("--group-regex (read like MM2's `groups`): {e}")))
        })
        .transpose()?;
    Ok((groups, matching))
}

fn translate(args: TranslateArgs) -> Result<(), u8> {
    let filter = log_filter(&args.log)?;
    let log_format = log_format(&args.log)?;
    let config = load_config(&args.config, &args.config_format, &[])?;
    enabled_flow(&config, &args.flow)?;
    let (groups, matching) = select_groups(
        &args.groups,
        args.groups_file.as_deref(),
        args.group_regex.as_deref(),
        args.all_groups,
    )?;
    let options = TranslateOptions {
        flow: args.flow,
        groups,
        matching,
        format: args.format.into(),
        apply: args.apply,
    };
    let report = run_one_off(
        "translate",
        config,
        (log_format, filter),
        |config, shutdown| driver::translate(config, options, shutdown),
    )?;
    if report.not_applied.is_empty() {
        return Ok(());
    }
    for (group, why) in &report.not_applied {
        console::err_line(&format!(
            "error: --apply: group {group} was not committed: {why}"
        ));
    }
    Err(EXIT_NOT_APPLIED)
}

fn cutover(args: CutoverArgs) -> Result<(), u8> {
    let filter = log_filter(&args.log)?;
    let log_format = log_format(&args.log)?;
    let config = load_config(&args.config, &args.config_format, &[])?;
    let flow = enabled_flow(&config, &args.flow)?;
    let direction = direction_to(flow, &args.flow, &args.to)?;
    let (groups, matching) = select_groups(
        &args.groups,
        args.groups_file.as_deref(),
        args.group_regex.as_deref(),
        false,
    )?;
    if groups.is_empty() && matching.is_none() {
        return Err(usage("--groups-file: the file names no group"));
    }
    let options = CutoverOptions {
        flow: args.flow,
        direction,
        groups,
        matching,
        format: args.format.into(),
        timeout: args.timeout,
        execute: args.execute,
    };
    let report = run_one_off(
        "cutover",
        config,
        (log_format, filter),
        |config, shutdown| driver::cutover(config, options, shutdown),
    )?;
    for (group, why) in &report.not_committed {
        console::err_line(&format!("cutover: group {group}: {why}"));
    }
    match report.outcome {
        Outcome::AllExact => Ok(()),
        Outcome::Bounded => Err(EXIT_CUTOVER_BOUNDED),
        Outcome::Refused => Err(EXIT_CUTOVER_REFUSED),
    }
}

/// The direction of `--to CLUSTER` across flow `name` (`cutover`, `status`):
/// forward to the flow's target, back to its source; anything else is a
/// usage error naming both sides.
fn direction_to(flow: &FlowConfig, name: &str, to: &str) -> Result<Direction, u8> {
    if to == flow.target.alias {
        Ok(Direction::Forward)
    } else if to == flow.source.alias {
        Ok(Direction::Back)
    } else {
        Err(usage(&format!(
            "--to: `{to}` is neither side of flow {name}: use `{}` (forward, groups leave {}) or `{}` (back, groups leave {})",
            flow.target.alias, flow.source.alias, flow.source.alias, flow.target.alias
        )))
    }
}

fn status(args: StatusArgs) -> Result<(), u8> {
    let filter = log_filter(&args.log)?;
    let log_format = log_format(&args.log)?;
    let config = load_config(&args.config, &args.config_format, &[])?;
    let mut direction = Direction::Forward;
    if let Some(name) = &args.flow {
        let flow = enabled_flow(&config, name)?;
        if let Some(to) = &args.to {
            direction = direction_to(flow, name, to)?;
        }
    }
    let (groups, matching) = select_groups(
        &args.groups,
        args.groups_file.as_deref(),
        args.group_regex.as_deref(),
        args.all_groups,
    )?;
    if args.groups_file.is_some() && groups.is_empty() && matching.is_none() {
        return Err(usage("--groups-file: the file names no group"));
    }
    let options = StatusOptions {
        flow: args.flow,
        direction,
        groups,
        matching,
        format: args.format.into(),
    };
    run_one_off(
        "status",
        config,
        (log_format, filter),
        |config, shutdown| driver::status(config, options, shutdown),
    )
    .map(|_| ())
}

/// Runs the one-off command `name` (translate, cutover, status) after its
/// arguments and configuration were checked: picks the TLS provider, starts
/// logging, builds the runtime with the signal handlers and runs `command`
/// until it ends or a signal stops it ([`until_shutdown`]). Its error is
/// logged and is [`EXIT_FAILURE`].
fn run_one_off<T, F>(
    name: &str,
    config: MirrorConfig,
    (log_format, filter): (logging::LogFormat, tracing_subscriber::EnvFilter),
    command: impl FnOnce(MirrorConfig, ShutdownSignal) -> F,
) -> Result<T, u8>
where
    F: std::future::Future<Output = Result<T, driver::DriverError>>,
{
    let provider = tls_provider(&config)?;
    start_logging(log_format, filter)?;
    let runtime = build_runtime()?;
    let shutdown = install_signals(&runtime)?;
    log_tls_provider(&provider);
    let outcome = runtime.block_on(async {
        until_shutdown(command(config, shutdown.clone()), &shutdown)
            .await
            .unwrap_or_else(|reason| Err(driver::DriverError::Interrupted(reason.to_string())))
            .map_err(|e| {
                tracing::error!(error = %e, "{name} failed");
                EXIT_FAILURE
            })
    });
    stop_runtime(runtime);
    outcome
}

/// The group names of `--groups-file` (`-` is stdin): one per line, blank
/// lines and `#` comments skipped, surrounding blanks trimmed.
fn read_groups_file(file: &Path) -> Result<Vec<String>, u8> {
    let text = if file == Path::new("-") {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(file)
    }
    .map_err(|e| {
        usage(&format!(
            "--groups-file: cannot read {}: {e}",
            file.display()
        ))
    })?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

/// Prints a usage error and returns its exit code.
fn usage(message: &str) -> u8 {
    console::err_line(&format!("error: {message}"));
    EXIT_USAGE
}

/// Loads the configuration in `file` with its secrets, keeping only the flows
/// whose target is in `targets` (`--clusters`; empty: every flow), or prints
/// every error (exit 2).
fn load_config(
    file: &ConfigFile,
    format: &ConfigFormatFlag,
    targets: &[String],
) -> Result<MirrorConfig, u8> {
    let Some(path) = file.path() else {
        return Err(usage("give the configuration file with --config FILE"));
    };
    let mut validation =
        MirrorConfig::validate_file(path, format.format(), &ProcessEnvironment, Secrets::Read);
    if !validation.is_ok() {
        report_errors(&validation);
        return Err(EXIT_USAGE);
    }
    validation
        .keep_targets(targets)
        .map_err(|e| usage(&format!("--clusters: {e}")))?;
    validation.into_config().map_err(|errors| {
        for e in &errors {
            console::err_line(&describe_config_error(e));
        }
        EXIT_USAGE
    })
}

/// `error: <key>: <message> (line N)`, leaving out what is unknown.
fn describe_config_error(e: &ConfigError) -> String {
    let mut out = String::from("error: ");
    if let Some(key) = e.key() {
        out.push_str(key);
        out.push_str(": ");
    }
    out.push_str(e.message());
    if let Some(line) = e.line() {
        out.push_str(&format!(" (line {line})"));
    }
    out
}

fn log_filter(log: &LogArgs) -> Result<tracing_subscriber::EnvFilter, u8> {
    let env = std::env::var(logging::LOG_ENV).ok();
    logging::filter(log.log_level.as_deref(), env.as_deref()).map_err(|e| usage(&e.to_string()))
}

/// `--log-format`, else `MM2_LOG_FORMAT`, else text; a bad
/// `MM2_LOG_FORMAT` is a usage error (exit 2).
fn log_format(log: &LogArgs) -> Result<logging::LogFormat, u8> {
    let env = std::env::var(logging::LOG_FORMAT_ENV).ok();
    logging::format(log.log_format.map(Into::into), env.as_deref())
        .map_err(|e| usage(&e.to_string()))
}

fn start_logging(
    log_format: logging::LogFormat,
    filter: tracing_subscriber::EnvFilter,
) -> Result<(), u8> {
    logging::init(log_format, filter).map_err(|e| {
        console::err_line(&format!("error: {e}"));
        EXIT_FAILURE
    })
}

/// The TLS crypto provider of this process (docs/tls-providers.md), chosen
/// before any network I/O. When a cluster uses TLS, a bad `MM2_TLS_PROVIDER`
/// or a forced provider this build or CPU cannot run is a configuration
/// error (exit 2); otherwise it only matters to the log (the inner `Err`).
fn tls_provider(
    config: &MirrorConfig,
) -> Result<Result<kafka_lite::TlsProviderChoice, String>, u8> {
    match mm2_checkpoint::tls_provider::choice() {
        Ok(choice) => Ok(Ok(choice)),
        Err(e) if driver::uses_tls(config) => Err(usage(&e.to_string())),
        Err(e) => Ok(Err(e.to_string())),
    }
}

/// Logs the TLS crypto provider and why it was chosen (INFO), or why there
/// is none (WARN; no cluster uses TLS then).
fn log_tls_provider(provider: &Result<kafka_lite::TlsProviderChoice, String>) {
    match provider {
        Ok(choice) => tracing::info!(
            tls_provider = choice.kind.name(),
            reason = %choice.reason,
            "TLS crypto provider: {}",
            choice.kind
        ),
        Err(e) => tracing::warn!("no TLS crypto provider (no cluster uses TLS): {e}"),
    }
}

/// Logs what is about to run and every configuration warning; a disabled TLS
/// host name check gets its own warning per cluster.
fn log_startup(config: &MirrorConfig, provider: &Result<kafka_lite::TlsProviderChoice, String>) {
    let flows: Vec<String> = config.flows.iter().map(|f| f.name()).collect();
    tracing::info!(
        version = cli::VERSION,
        build_target = cli::TARGET,
        tls_provider = provider.as_ref().map_or("none", |c| c.kind.name()),
        flows = %flows.join(", "),
        "mm2-checkpoint starting"
    );
    log_tls_provider(provider);
    for flow in &flows {
        tracing::info!(flow, "checkpointing: {}", config.ownership.reason(flow));
    }
    let left = config.ownership.left_to_mm2();
    if !left.is_empty() {
        tracing::info!(
            flows = %left.join(", "),
            "leaving these enabled flows to MirrorMaker 2's checkpoint connector"
        );
    }
    for warning in &config.warnings {
        tracing::warn!("configuration: {warning}");
    }
    let unverified: BTreeSet<&str> = config
        .flows
        .iter()
        .flat_map(|f| [&f.source, &f.target])
        .filter(|c| c.tls.as_ref().is_some_and(|t| !t.verify_hostname))
        .map(|c| c.alias.as_str())
        .collect();
    for cluster in unverified {
        tracing::warn!(
            cluster,
            "TLS HOST NAME VERIFICATION IS DISABLED for cluster `{cluster}`: broker \
             certificates are not matched against host names, so any holder of a certificate \
             from a trusted CA can impersonate these brokers"
        );
    }
}

/// How long an operation in flight (a produce, a commit) may go on after
/// SIGTERM or SIGINT before it is abandoned. Abandoning is safe: a request the
/// broker did not get changes nothing, and one it got stands (a checkpoint
/// is written again by the next run); see docs/operations.md, "Stopping".
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Runs `work` to its end, or, once `shutdown` fires, for at most
/// [`SHUTDOWN_GRACE`] more; then drops it (aborting the tasks it owns) and
/// returns the signal's reason.
async fn until_shutdown<T>(
    work: impl std::future::Future<Output = T>,
    shutdown: &ShutdownSignal,
) -> Result<T, ShutdownReason> {
    tokio::pin!(work);
    let reason = tokio::select! {
        done = &mut work => return Ok(done),
        reason = shutdown.triggered() => reason,
    };
    match tokio::time::timeout(SHUTDOWN_GRACE, work).await {
        Ok(done) => Ok(done),
        Err(_) => {
            tracing::warn!(
                signal = %reason,
                "work still in flight {} ms after the signal was abandoned",
                SHUTDOWN_GRACE.as_millis()
            );
            Err(reason)
        }
    }
}

/// Ends the runtime without waiting for blocking work (a DNS lookup) that
/// cannot be cancelled.
fn stop_runtime(runtime: tokio::runtime::Runtime) {
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
}

fn build_runtime() -> Result<tokio::runtime::Runtime, u8> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            tracing::error!(error = %e, "cannot start the async runtime");
            EXIT_FAILURE
        })
}

/// Installs the SIGTERM/SIGINT handlers on `runtime` (they are active when
/// this returns).
fn install_signals(runtime: &tokio::runtime::Runtime) -> Result<ShutdownSignal, u8> {
    let _context = runtime.enter();
    let signal = ShutdownSignal::new();
    shutdown::install_signal_handlers(signal.clone(), shutdown::exit_now).map_err(|e| {
        tracing::error!(error = %e, "cannot install SIGTERM/SIGINT handlers");
        EXIT_FAILURE
    })?;
    Ok(signal)
}

async fn start_metrics_server(
    addr: &str,
    metrics: &Metrics,
    shutdown: &ShutdownSignal,
) -> Result<tokio::task::JoinHandle<()>, u8> {
    let server = match MetricsServer::bind(addr).await {
        Ok(server) => server,
        // `[::]` on a host without IPv6: every IPv4 address instead.
        Err(e) => match cli::ipv4_fallback(addr).filter(|_| cli::worth_ipv4_fallback(&e)) {
            Some(ipv4) => {
                tracing::warn!(addr, error = %e, fallback = %ipv4, "no IPv6 here: listening on IPv4 only");
                MetricsServer::bind(ipv4.as_str()).await.map_err(|e| {
                    tracing::error!(addr = %ipv4, error = %e, "cannot listen for the metrics endpoint");
                    EXIT_FAILURE
                })?
            }
            None => {
                tracing::error!(addr, error = %e, "cannot listen for the metrics endpoint");
                return Err(EXIT_FAILURE);
            }
        },
    };
    match server.local_addr() {
        Ok(bound) => {
            tracing::info!(addr = %bound, "serving /metrics, /healthz, /readyz and /status")
        }
        Err(e) => tracing::warn!(error = %e, "metrics endpoint bound, address unknown"),
    }
    Ok(tokio::spawn(
        server.serve(metrics.clone(), shutdown.clone()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Set in the child process of the panic test: its log format.
    const PANIC_CHILD_ENV: &str = "MM2_CHECKPOINT_TEST_PANIC_CHILD";

    /// The child process of `a_panic_logs_one_error_line_and_ends_the_process`
    /// (this test binary run again, with [`PANIC_CHILD_ENV`] set): the
    /// binary's logging and panic hook, then a real bug (an index out of
    /// bounds) on a worker thread. Without the variable it does nothing.
    #[test]
    #[ignore = "the child process of a_panic_logs_one_error_line_and_ends_the_process"]
    fn panicking_child() {
        let Ok(format) = std::env::var(PANIC_CHILD_ENV) else {
            return;
        };
        let format = match format.as_str() {
            "json" => logging::LogFormat::Json,
            _ => logging::LogFormat::Text,
        };
        let filter = logging::filter(Some("info"), None).expect("filter");
        start_logging(format, filter).expect("logging");
        install_panic_hook();
        let worker = std::thread::Builder::new()
            .name("worker-7".to_owned())
            .spawn(|| {
                let partitions: Vec<i32> = std::hint::black_box(Vec::new());
                partitions[3]
            })
            .expect("spawn");
        let _ = worker.join();
        console::err_line("still running after the panic");
    }

    #[test]
    fn a_panic_logs_one_error_line_and_ends_the_process() {
        let exe = std::env::current_exe().expect("test binary");
        for format in ["text", "json"] {
            let out = Command::new(&exe)
                .args(["--ignored", "--exact", "tests::panicking_child"])
                .args(["--nocapture", "--test-threads=1"])
                .env(PANIC_CHILD_ENV, format)
                .env_remove(logging::LOG_ENV)
                .env_remove(logging::LOG_FORMAT_ENV)
                .output()
                .expect("child runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            #[cfg(unix)]
            {
                use std::os::unix::process::ExitStatusExt as _;
                assert_eq!(
                    out.status.signal(),
                    Some(6),
                    "{format}: ended by SIGABRT, not {:?}; stderr: {stderr}",
                    out.status
                );
            }
            assert!(!out.status.success(), "{format}: {stderr}");
            let lines: Vec<&str> = stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{format}: one line, got: {stderr}");
            let line = lines[0];
            for part in [
                "ERROR",
                "panicked: an internal error (a bug)",
                "index out of bounds: the len is 0 but the index is 3",
                "main.rs:",
                "worker-7",
            ] {
                assert!(line.contains(part), "{format}: `{part}` missing: {line}");
            }
            if format == "json" {
                let event: serde_json::Value = serde_json::from_str(line).expect("one JSON object");
                assert_eq!(event["level"], "ERROR", "{line}");
                assert_eq!(event["fields"]["thread"], "worker-7", "{line}");
            }
        }
    }
}
