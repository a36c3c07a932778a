//! What the driver's callers hand it and get back: the options of `run`,
//! `translate` and `cutover`, their reports, the driver's errors; and the check
//! that a TLS crypto provider can run. The driver's modules import these
//! from here, so none of them imports driver/mod.rs (which calls into them).

use std::fmt;

use crate::config::MirrorConfig;

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
#[derive(Clone, Debug)]
pub struct TranslateOptions {
    /// The flow, `S->T`; the binary has checked that it is an enabled flow of the config.
    pub flow: String,
    /// Consumer groups of the source cluster to translate, by name.
    pub groups: Vec<String>,
    /// Also every group with checkpoints in the checkpoints topic that this
    /// filter accepts (`--group-regex`, or every group for `--all-groups`).
    pub matching: Option<crate::core::GroupFilter>,
    /// How to print the result on stdout.
    pub format: TranslateFormat,
    /// `--apply`: also commit the translated offsets to the target groups.
    pub apply: bool,
}

/// What `translate` did, beyond what it printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TranslateReport {
    /// With `--apply`: every requested group whose checkpoints were not
    /// committed (refused as active, at or ahead of the checkpoints, in an
    /// unknown state, without a checkpoint, or the commit failed), with why.
    pub not_applied: Vec<(String, String)>,
}

/// What `mm2-checkpoint cutover` asks for (docs/operations.md, "Planned
/// cutover").
#[derive(Clone, Debug)]
pub struct CutoverOptions {
    /// The flow, `S->T`; the binary has checked that it is an enabled flow of the config.
    pub flow: String,
    /// Which way the groups move: forward (S to T) or back (T to S).
    pub direction: crate::core::cutover::Direction,
    /// Consumer groups to move, by name.
    pub groups: Vec<String>,
    /// Also every group on the side left that this filter accepts.
    pub matching: Option<crate::core::GroupFilter>,
    /// How to print the plan on stdout.
    pub format: TranslateFormat,
    /// How long to wait for the mirror and the offset syncs to cover the
    /// groups' final commits.
    pub timeout: std::time::Duration,
    /// `--execute`: commit the positions; otherwise only print the plan.
    pub execute: bool,
}

/// What `cutover` did, beyond what it printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutoverReport {
    /// Whether every group was (with `--execute`) or would be committed, and
    /// exactly: the exit code tells these apart.
    pub outcome: crate::core::cutover::Outcome,
    /// Every group not committed (in a dry run: that would not be), with why.
    pub not_committed: Vec<(String, String)>,
}

/// Why the driver stopped with a failure (exit code 1).
#[derive(Debug)]
pub enum DriverError {
    /// No TLS crypto provider can run (a forced one this build or CPU
    /// lacks, or a bad `MM2_TLS_PROVIDER`).
    Cpu(String),
    /// A flow could not be set up (connection settings, filters).
    Setup(String),
    /// `--once`: a flow's round could not complete.
    Once {
        /// The flow.
        flow: String,
        /// What failed.
        error: String,
    },
    /// `translate` or `cutover`: reading or committing failed.
    Translate(String),
    /// A flow task panicked or was cancelled.
    Task(String),
    /// A signal (named) stopped `run --once` or `translate` before it finished.
    Interrupted(String),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Cpu(e) => write!(f, "{e}"),
            DriverError::Setup(e) => write!(f, "{e}"),
            DriverError::Once { flow, error } => {
                write!(f, "flow {flow}: the round could not complete: {error}")
            }
            DriverError::Translate(e) => write!(f, "{e}"),
            DriverError::Task(e) => write!(f, "a flow task failed: {e}"),
            DriverError::Interrupted(signal) => {
                write!(f, "interrupted by {signal} before finishing")
            }
        }
    }
}

impl std::error::Error for DriverError {}

/// Whether any cluster of `config` is reached over TLS.
pub fn uses_tls(config: &MirrorConfig) -> bool {
    config
        .flows
        .iter()
        .any(|f| f.source.tls.is_some() || f.target.tls.is_some())
}

/// Checks a TLS crypto provider can run here (kafka-lite chooses it once
/// per process: docs/tls-providers.md). The binary checks this before any
/// network I/O already; this is for other callers of the driver.
pub(crate) fn check_cpu(config: &MirrorConfig) -> Result<(), DriverError> {
    if uses_tls(config) {
        crate::tls_provider::choice().map_err(|e| DriverError::Cpu(e.to_string()))?;
    }
    Ok(())
}
