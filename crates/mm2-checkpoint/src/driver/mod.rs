//! The driver: runs the pure core on kafka-lite.
//!
//! Per enabled flow one task (`flow`): create the checkpoints topic, discover
//! the source groups, restore the checkpoint store, read the offset-syncs topic to
//! its end, then emission rounds, group syncs and group refreshes on their
//! intervals, with the offset-syncs topic followed in between. Every decision is
//! the core's; this module moves facts and reports outcomes (logs, metrics,
//! readiness). `translate` reads the checkpoints of a few groups and optionally
//! commits them to the target groups.
//!
//! The CLI hands over a validated [`MirrorConfig`], [`RunOptions`] /
//! [`TranslateOptions`], a [`ShutdownSignal`] and [`Metrics`].

mod api;
mod columns;
mod connect;
mod cutover;
mod flow;
mod kafka;
mod membership;
mod run;
mod seam;
mod status;
mod translate;

// What the binary, xtask and the end-to-end tests use of the driver besides
// `run` and `translate`: a cluster client to seed and read topics with.
pub use flow::FlowCluster;
pub use flow::cluster::CommitOutcome;
pub use kafka::{ClusterClient, OutRecord, fetch_options};

pub use status::{
    DaemonReport, FlowReport, GroupReport, MemberReport, MembershipReport, PartitionReport,
    StatusDoc, StatusOptions, SummaryReport, TopicReport,
};

pub use api::{
    CutoverOptions, CutoverReport, DriverError, RunOptions, TranslateFormat, TranslateOptions,
    TranslateReport, uses_tls,
};

use crate::config::MirrorConfig;
use crate::metrics::Metrics;
use crate::shutdown::ShutdownSignal;

/// Runs every enabled flow until `shutdown` fires (or one round with `--once`).
pub async fn run(
    config: MirrorConfig,
    options: RunOptions,
    shutdown: ShutdownSignal,
    metrics: Metrics,
) -> Result<(), DriverError> {
    run::run(config, options, shutdown, metrics).await
}

/// Prints whether groups may move across the flows now, and how the flows
/// stand (docs/operations.md, "status"): one read-only pass; the document
/// printed is returned too.
pub async fn status(
    config: MirrorConfig,
    options: StatusOptions,
    shutdown: ShutdownSignal,
) -> Result<StatusDoc, DriverError> {
    status::status(config, options, shutdown).await
}

/// The daemon's status pass (docs/operations.md, "status"): every
/// `interval`, the status of every enabled flow, published on `metrics`'
/// status board (`GET /status` and the `status_*` gauges), until `shutdown`.
pub async fn publish_status(
    config: MirrorConfig,
    interval: std::time::Duration,
    metrics: Metrics,
    shutdown: ShutdownSignal,
) {
    status::publish(config, interval, metrics, shutdown).await;
}

/// Moves `options.groups` across `options.flow` (docs/operations.md,
/// "Planned cutover"): waits until the offset syncs cover their final
/// commits, prints the plan in `options.format` and, with `--execute`,
/// commits it; the report tells the outcome.
pub async fn cutover(
    config: MirrorConfig,
    options: CutoverOptions,
    shutdown: ShutdownSignal,
) -> Result<CutoverReport, DriverError> {
    cutover::cutover(config, options, shutdown).await
}

/// Translates the committed offsets of `options.groups` across `options.flow`,
/// prints them in `options.format` on stdout, and commits them with `--apply`;
/// the report lists the groups `--apply` could not commit.
pub async fn translate(
    config: MirrorConfig,
    options: TranslateOptions,
    shutdown: ShutdownSignal,
) -> Result<TranslateReport, DriverError> {
    translate::translate(config, options, shutdown).await
}
