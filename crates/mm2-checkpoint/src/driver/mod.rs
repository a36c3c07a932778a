//! The boundary between the command line and the run loop.
//!
//! TEMPORARY: the functions below only define the interface the binary calls.
//! Their bodies return [`DriverError::NotBuilt`]; the driver that runs flows on
//! `kafka-lite` replaces this file, keeping these signatures (or changing
//! `main.rs` with them). Everything the binary hands over is listed here:
//!
//! * a validated [`MirrorConfig`] (no network I/O has happened yet);
//! * [`RunOptions`] / [`TranslateOptions`] from the command line;
//! * a [`ShutdownSignal`] that SIGTERM/SIGINT trigger; the driver returns once
//!   it fires, after finishing or abandoning the round in flight;
//! * [`Metrics`], including its [`crate::metrics::Readiness`]
//!   (`metrics.readiness()`), which starts not ready with the `startup`
//!   condition that the driver clears.

use std::fmt;

use crate::config::MirrorConfig;
use crate::metrics::Metrics;
use crate::shutdown::ShutdownSignal;

/// How `mm2-checkpoint run` was asked to run.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RunOptions {
    /// `--once`: run one round of every enabled flow, then return.
    pub once: bool,
}

/// Output format of `translate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TranslateFormat {
    /// An aligned text table.
    #[default]
    Table,
    /// A JSON document.
    Json,
}

/// What `mm2-checkpoint translate` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranslateOptions {
    /// The flow, `S->T`; the binary has checked that it is an enabled flow of the config.
    pub flow: String,
    /// Consumer groups of the source cluster to translate (at least one).
    pub groups: Vec<String>,
    /// How to print the result on stdout.
    pub format: TranslateFormat,
    /// `--apply`: also commit the translated offsets to the target groups.
    pub apply: bool,
}

/// Why the driver stopped with a failure (exit code 1).
#[derive(Debug)]
pub enum DriverError {
    /// TEMPORARY: the run loop is not part of this build yet.
    NotBuilt,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::NotBuilt => f.write_str("the run loop is not built yet"),
        }
    }
}

impl std::error::Error for DriverError {}

/// Runs every enabled flow until `shutdown` fires (or one round with `--once`).
pub async fn run(
    config: MirrorConfig,
    options: RunOptions,
    shutdown: ShutdownSignal,
    metrics: Metrics,
) -> Result<(), DriverError> {
    let _ = (config, options, shutdown, metrics);
    Err(DriverError::NotBuilt)
}

/// Translates the committed offsets of `options.groups` across `options.flow`,
/// prints them in `options.format` on stdout, and commits them with `--apply`.
pub async fn translate(
    config: MirrorConfig,
    options: TranslateOptions,
    shutdown: ShutdownSignal,
) -> Result<(), DriverError> {
    let _ = (config, options, shutdown);
    Err(DriverError::NotBuilt)
}
