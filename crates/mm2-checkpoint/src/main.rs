//! The `mm2-checkpoint` command-line entry point.
//!
//! Order of work for every command: parse arguments, check log settings, load
//! and validate the whole configuration, and only then start the runtime and
//! touch the network. So every usage or configuration error exits with code 2
//! before any connection is attempted.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error,
//! 3 `translate --apply` could not commit every requested group.

mod cli;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;

use mm2_checkpoint::config::{ConfigError, MirrorConfig, ProcessEnvironment};
use mm2_checkpoint::driver::{self, RunOptions, TranslateOptions};
use mm2_checkpoint::logging;
use mm2_checkpoint::metrics::{Metrics, MetricsServer};
use mm2_checkpoint::shutdown::{self, ShutdownReason, ShutdownSignal};

use cli::{Cli, Command, ConfigFile, LogArgs, RunArgs, TranslateArgs, ValidateArgs};

/// A broker, the network or the runtime failed.
const EXIT_FAILURE: u8 = 1;
/// Bad arguments or configuration; nothing was sent to any broker.
const EXIT_USAGE: u8 = 2;
/// `translate --apply` ran, but at least one requested group was not committed.
const EXIT_NOT_APPLIED: u8 = 3;

fn main() -> ExitCode {
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
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => ExitCode::from(code),
    }
}

fn validate(args: &ValidateArgs) -> Result<(), u8> {
    let config = load_config(&args.config)?;
    print!(
        "{}",
        mm2_checkpoint::config::render_effective_settings(&config)
    );
    if args.strict && !config.unknown_keys.is_empty() {
        let keys: Vec<&str> = config.unknown_keys.iter().map(|u| u.key.as_str()).collect();
        eprintln!(
            "error: --strict: {} key(s) that nothing reads: {}",
            keys.len(),
            keys.join(", ")
        );
        return Err(EXIT_USAGE);
    }
    Ok(())
}

fn run(args: RunArgs) -> Result<(), u8> {
    let filter = log_filter(&args.log)?;
    let config = load_config(&args.config)?;
    if let Some(addr) = &args.metrics_addr {
        cli::check_metrics_addr(addr).map_err(|e| usage(&format!("--metrics-addr: {e}")))?;
    }
    start_logging(&args.log, filter)?;
    log_startup(&config);
    let runtime = build_runtime()?;
    runtime.block_on(async move {
        let shutdown = install_signals()?;
        let metrics = Metrics::with_settings(cli::VERSION, cli::TLS_PROVIDER, config.metrics);
        let server = match &args.metrics_addr {
            Some(addr) => Some(start_metrics_server(addr, &metrics, &shutdown).await?),
            None => None,
        };
        let options = RunOptions { once: args.once };
        let result = driver::run(config, options, shutdown.clone(), metrics).await;
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
    })
}

fn translate(args: TranslateArgs) -> Result<(), u8> {
    let filter = log_filter(&args.log)?;
    let config = load_config(&args.config)?;
    if !config.flows.iter().any(|f| f.name() == args.flow) {
        let enabled: Vec<String> = config.flows.iter().map(|f| f.name()).collect();
        return Err(usage(&format!(
            "--flow: `{}` is not an enabled flow of the configuration; enabled flows: {}",
            args.flow,
            enabled.join(", ")
        )));
    }
    if args.groups.iter().any(|g| g.is_empty()) {
        return Err(usage("--group: a group name cannot be empty"));
    }
    start_logging(&args.log, filter)?;
    let runtime = build_runtime()?;
    runtime.block_on(async move {
        let shutdown = install_signals()?;
        let options = TranslateOptions {
            flow: args.flow,
            groups: args.groups,
            format: args.format.into(),
            apply: args.apply,
        };
        let report = driver::translate(config, options, shutdown)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "translate failed");
                EXIT_FAILURE
            })?;
        if report.not_applied.is_empty() {
            return Ok(());
        }
        for (group, why) in &report.not_applied {
            eprintln!("error: --apply: group {group} was not committed: {why}");
        }
        Err(EXIT_NOT_APPLIED)
    })
}

/// Prints a usage error and returns its exit code.
fn usage(message: &str) -> u8 {
    eprintln!("error: {message}");
    EXIT_USAGE
}

fn load_config(file: &ConfigFile) -> Result<MirrorConfig, u8> {
    let Some(path) = file.path() else {
        return Err(usage("give the configuration file with --config FILE"));
    };
    load_config_file(path).map_err(|e| {
        eprintln!("{}", describe_config_error(&e));
        EXIT_USAGE
    })
}

fn load_config_file(path: &Path) -> Result<MirrorConfig, ConfigError> {
    MirrorConfig::load(path, &ProcessEnvironment)
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

fn start_logging(log: &LogArgs, filter: tracing_subscriber::EnvFilter) -> Result<(), u8> {
    logging::init(log.log_format.into(), filter).map_err(|e| {
        eprintln!("error: {e}");
        EXIT_FAILURE
    })
}

/// Logs what is about to run and every configuration warning; a disabled TLS
/// host name check gets its own warning per cluster.
fn log_startup(config: &MirrorConfig) {
    let flows: Vec<String> = config.flows.iter().map(|f| f.name()).collect();
    tracing::info!(
        version = cli::VERSION,
        build_target = cli::TARGET,
        tls_provider = cli::TLS_PROVIDER,
        flows = %flows.join(", "),
        "mm2-checkpoint starting"
    );
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

fn build_runtime() -> Result<tokio::runtime::Runtime, u8> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            tracing::error!(error = %e, "cannot start the async runtime");
            EXIT_FAILURE
        })
}

fn install_signals() -> Result<ShutdownSignal, u8> {
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
    let server = MetricsServer::bind(addr).await.map_err(|e| {
        tracing::error!(addr, error = %e, "cannot listen for the metrics endpoint");
        EXIT_FAILURE
    })?;
    match server.local_addr() {
        Ok(bound) => tracing::info!(addr = %bound, "serving /metrics, /healthz and /readyz"),
        Err(e) => tracing::warn!(error = %e, "metrics endpoint bound, address unknown"),
    }
    Ok(tokio::spawn(
        server.serve(metrics.clone(), shutdown.clone()),
    ))
}
