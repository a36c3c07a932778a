//! Membership series (docs/membership.md, "Readiness, metrics and logs"): who owns each flow.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::labels::{FlowLabels, flow_labels};

/// A member's role in its flow's group (label `role`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberRole {
    /// Joining the group (also during a rebalance): writes nothing new.
    Joining,
    /// A member without the flow: ready to take it over.
    Standby,
    /// The flow's one writer.
    Owner,
}

impl MemberRole {
    const ALL: [MemberRole; 3] = [MemberRole::Joining, MemberRole::Standby, MemberRole::Owner];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            MemberRole::Joining => "joining",
            MemberRole::Standby => "standby",
            MemberRole::Owner => "owner",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RoleLabels {
    flow: String,
    role: &'static str,
}

/// The membership metric families.
pub(super) struct MembershipMetrics {
    role: Family<RoleLabels, Gauge>,
    generation: Family<FlowLabels, Gauge>,
    rebalances: Family<FlowLabels, Counter>,
    takeovers: Family<FlowLabels, Counter>,
    fenced: Family<FlowLabels, Counter>,
}

impl MembershipMetrics {
    /// Registers the families in `registry`.
    pub(super) fn register(registry: &mut Registry) -> Self {
        let role = Family::<RoleLabels, Gauge>::default();
        registry.register(
            "membership_role",
            "1 for this instance's role in the flow's membership group (joining, standby, owner), 0 for the others; absent without membership",
            role.clone(),
        );
        let generation = Family::<FlowLabels, Gauge>::default();
        registry.register(
            "membership_generation",
            "The generation of the flow's membership group this instance last joined",
            generation.clone(),
        );
        let rebalances = Family::<FlowLabels, Counter>::default();
        registry.register(
            "membership_rebalances",
            "Times this instance (re)joined the flow's membership group",
            rebalances.clone(),
        );
        let takeovers = Family::<FlowLabels, Counter>::default();
        registry.register(
            "membership_takeovers",
            "Times this instance took the flow over (fencing the previous writer)",
            takeovers.clone(),
        );
        let fenced = Family::<FlowLabels, Counter>::default();
        registry.register(
            "fenced_writes",
            "Writes of this instance refused because another instance had taken the flow over (a fenced producer or a lapsed lease)",
            fenced.clone(),
        );
        MembershipMetrics {
            role,
            generation,
            rebalances,
            takeovers,
            fenced,
        }
    }
}

impl MembershipMetrics {
    /// Sets `membership_role{flow,role}` to 1 for `role`, 0 for the others.
    pub(super) fn set_member_role(&self, flow: &str, role: MemberRole) {
        let m = self;
        // The counters exist at 0 from the member's start, so that the
        // first fenced write or takeover is an increase to `rate()` and
        // `increase()`, not a new series.
        let labels = flow_labels(flow);
        let _ = m.takeovers.get_or_create(&labels);
        let _ = m.fenced.get_or_create(&labels);
        for r in MemberRole::ALL {
            m.role
                .get_or_create(&RoleLabels {
                    flow: flow.to_string(),
                    role: r.as_str(),
                })
                .set(i64::from(r == role));
        }
    }

    /// A (re)join of `flow`'s group completed at `generation`.
    pub(super) fn member_joined(&self, flow: &str, generation: i32) {
        let m = self;
        let labels = flow_labels(flow);
        m.generation
            .get_or_create(&labels)
            .set(i64::from(generation));
        m.rebalances.get_or_create(&labels).inc();
    }

    /// This instance took `flow` over.
    pub(super) fn member_took_over(&self, flow: &str) {
        self.takeovers.get_or_create(&flow_labels(flow)).inc();
    }

    /// A write of `flow` was refused: this instance no longer owns it.
    pub(super) fn fenced_write(&self, flow: &str) {
        self.fenced.get_or_create(&flow_labels(flow)).inc();
    }
}
