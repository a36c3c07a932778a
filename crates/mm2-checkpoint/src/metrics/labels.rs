//! The label set most families share: the flow (`"A->B"`).

use prometheus_client::encoding::EncodeLabelSet;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct FlowLabels {
    pub(super) flow: String,
}

pub(super) fn flow_labels(flow: &str) -> FlowLabels {
    FlowLabels {
        flow: flow.to_string(),
    }
}
