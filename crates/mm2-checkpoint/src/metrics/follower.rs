//! The commit follower's series (docs/commit-follower.md section 5).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::labels::{FlowLabels, flow_labels};

/// The ways a flow learns its groups' commits (label `mode`).
const MODES: [&str; 2] = ["follow", "poll"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModeLabels {
    flow: String,
    mode: &'static str,
}

/// The follower's metric families.
pub(super) struct FollowerMetrics {
    mode: Family<ModeLabels, Gauge>,
    commits: Family<FlowLabels, Counter>,
    corrections: Family<FlowLabels, Counter>,
}

impl FollowerMetrics {
    /// Registers the families in `registry`.
    pub(super) fn register(registry: &mut Registry) -> Self {
        let mode = Family::<ModeLabels, Gauge>::default();
        registry.register(
            "group_offsets_mode",
            "1 for how the flow learns its source groups' commits (follow: __consumer_offsets, poll: OffsetFetch), 0 for the other",
            mode.clone(),
        );
        let commits = Family::<FlowLabels, Counter>::default();
        registry.register(
            "followed_commits",
            "Offset commits and removals of checkpointed groups read from __consumer_offsets",
            commits.clone(),
        );
        let corrections = Family::<FlowLabels, Counter>::default();
        registry.register(
            "follower_corrections",
            "Checkpoints the periodic full round emitted while the follower ran (0 when it keeps up)",
            corrections.clone(),
        );
        FollowerMetrics {
            mode,
            commits,
            corrections,
        }
    }
}

impl FollowerMetrics {
    /// Creates `flow`'s follower series at 0 (both modes 0 until the flow
    /// decides).
    pub(super) fn register_follower_flow(&self, flow: &str) {
        let f = self;
        for mode in MODES {
            let _ = f.mode.get_or_create(&ModeLabels {
                flow: flow.to_string(),
                mode,
            });
        }
        let _ = f.commits.get_or_create(&flow_labels(flow));
        let _ = f.corrections.get_or_create(&flow_labels(flow));
    }

    /// Sets `group_offsets_mode{flow,mode}`: 1 for `following` (follow) or not
    /// (poll), 0 for the other mode.
    pub(super) fn set_group_offsets_mode(&self, flow: &str, following: bool) {
        let running = if following { "follow" } else { "poll" };
        for mode in MODES {
            self.mode
                .get_or_create(&ModeLabels {
                    flow: flow.to_string(),
                    mode,
                })
                .set(i64::from(mode == running));
        }
    }

    /// Adds `count` to `followed_commits_total{flow}`.
    pub(super) fn followed_commits(&self, flow: &str, count: u64) {
        self.commits.get_or_create(&flow_labels(flow)).inc_by(count);
    }

    /// Adds `count` to `follower_corrections_total{flow}`.
    pub(super) fn follower_corrections(&self, flow: &str, count: u64) {
        self.corrections
            .get_or_create(&flow_labels(flow))
            .inc_by(count);
    }
}
