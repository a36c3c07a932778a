//! Prometheus metrics and the HTTP endpoint that serves them.
//!
//! [`Metrics`] owns one registry with every series the daemon exports, named
//! `mm2_checkpoint_*` and labelled by `flow` (`"A->B"`). The driver records
//! through typed methods (`checkpoints_emitted`, `set_checkpoint_latency`, ...)
//! so metric names and label spellings live only here. [`Readiness`] is the flag
//! behind `/readyz` and the `mm2_checkpoint_ready` gauge. [`MetricsServer`]
//! answers `/metrics`, `/healthz`, `/readyz` and `/status` (the document a
//! [`StatusBoard`] holds).
//!
//! The checkpoint latency is also exported under MirrorMaker 2's names as
//! Strimzi's metrics rules produce them, and its labels follow the configured
//! granularity (the `latency` module). [`Metrics::register_flow`] gives every family its
//! zero-valued series when a flow starts (docs/operations.md, Metrics).
//!
//! Exposition uses the `prometheus-client` crate (the Prometheus project's own
//! pure-Rust client): it handles text-format escaping, both the Prometheus 0.0.4
//! and OpenMetrics formats, and lock-free counters.

mod follower;
mod labels;
mod latency;
mod membership;
mod process;
mod readiness;
mod registry;
mod requests;
mod server;
mod status;
mod stream;

pub use crate::config::metrics::{LatencyGranularity, MetricsSettings, Mm2NameFormats};
pub use latency::{MM2_NEW_PREFIX, MM2_PREFIX};
pub use membership::MemberRole;
pub use readiness::Readiness;
pub use registry::{
    CONTENT_SEARCH_OUTCOMES, FlowIdentity, GroupSyncOutcome, Metrics, PREFIX, RecordSkipReason,
    TopicKind, UntranslatableReason,
};
pub use requests::RequestSource;
pub use server::{MetricsServer, ServerLimits};
pub use status::{FlowStatusCounts, STATUS_VALUES, StatusBoard};

#[cfg(test)]
mod tests;
