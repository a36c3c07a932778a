//! What the daemon last found of its flows' groups (docs/operations.md,
//! "status"): the JSON document `/status` serves, and a few gauges per flow
//! that sum the groups up. The number of series does not grow with the
//! groups: four counts, the largest re-read bound and the oldest
//! checkpoint's age, per flow.

use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::labels::{FlowLabels, flow_labels};

/// The values of `status_groups{flow, status}`.
pub const STATUS_VALUES: [&str; 4] = ["exact", "bounded", "waiting", "not_ready"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    flow: String,
    status: &'static str,
}

/// One flow's groups summed up, as the gauges show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowStatusCounts {
    /// Groups ready, every partition exact.
    pub exact: usize,
    /// Groups ready with a re-read bound.
    pub bounded: usize,
    /// Groups waiting for the mirror or the syncs.
    pub waiting: usize,
    /// Groups that cannot move now.
    pub not_ready: usize,
    /// The largest re-read bound of the ready groups.
    pub max_reread: i64,
    /// The oldest of the groups' newest checkpoints, in milliseconds.
    pub max_checkpoint_age_ms: Option<i64>,
}

/// The status document and its gauges. Cheap to clone; clones share.
#[derive(Clone, Debug, Default)]
pub struct StatusBoard {
    document: Arc<Mutex<Option<String>>>,
    groups: Family<StatusLabels, Gauge>,
    max_reread: Family<FlowLabels, Gauge>,
    max_checkpoint_age: Family<FlowLabels, Gauge>,
}

impl StatusBoard {
    /// A board whose gauges are registered in `registry` (prefixed there).
    pub(super) fn register(registry: &mut Registry) -> Self {
        let board = StatusBoard::default();
        registry.register(
            "status_groups",
            "Groups of the flow by whether they may be cut over now (status: exact, bounded, waiting, not_ready), from the last status pass",
            board.groups.clone(),
        );
        registry.register(
            "status_max_reread_records",
            "The largest re-read bound of the flow's groups that are ready to be cut over, from the last status pass",
            board.max_reread.clone(),
        );
        registry.register(
            "status_max_checkpoint_age_seconds",
            "The age of the oldest among the flow's groups' newest checkpoints, from the last status pass",
            board.max_checkpoint_age.clone(),
        );
        board
    }

    /// Replaces the document `/status` serves.
    pub fn publish(&self, json: String) {
        *self.document.lock().unwrap_or_else(PoisonError::into_inner) = Some(json);
    }

    /// The document, once a status pass has published one.
    pub fn document(&self) -> Option<String> {
        self.document
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sets flow `flow`'s gauges.
    pub fn set_flow(&self, flow: &str, counts: &FlowStatusCounts) {
        let values = [
            counts.exact,
            counts.bounded,
            counts.waiting,
            counts.not_ready,
        ];
        for (status, n) in STATUS_VALUES.into_iter().zip(values) {
            self.groups
                .get_or_create(&StatusLabels {
                    flow: flow.to_owned(),
                    status,
                })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        self.max_reread
            .get_or_create(&flow_labels(flow))
            .set(counts.max_reread);
        self.max_checkpoint_age
            .get_or_create(&flow_labels(flow))
            .set(counts.max_checkpoint_age_ms.unwrap_or(0) / 1000);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_board_serves_what_was_published_and_sets_four_counts_per_flow() {
        let mut registry = Registry::default();
        let board = StatusBoard::register(&mut registry);
        assert_eq!(board.document(), None);
        board.clone().publish("{\"flows\":[]}".into());
        assert_eq!(board.document().as_deref(), Some("{\"flows\":[]}"));
        board.set_flow(
            "A->B",
            &FlowStatusCounts {
                exact: 3,
                bounded: 1,
                waiting: 0,
                not_ready: 2,
                max_reread: 17,
                max_checkpoint_age_ms: Some(61_500),
            },
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        for line in [
            "status_groups{flow=\"A->B\",status=\"exact\"} 3",
            "status_groups{flow=\"A->B\",status=\"bounded\"} 1",
            "status_groups{flow=\"A->B\",status=\"waiting\"} 0",
            "status_groups{flow=\"A->B\",status=\"not_ready\"} 2",
            "status_max_reread_records{flow=\"A->B\"} 17",
            "status_max_checkpoint_age_seconds{flow=\"A->B\"} 61",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
    }
}
