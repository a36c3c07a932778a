//! One flow `S->T`: startup, emission rounds, group sync and the offset-syncs
//! follow loop. Every decision is the core's; this module only moves facts
//! between the clusters and the core.
//!
//! [`FlowContext`] ([`context`]) holds the fixed parts of a flow (clients,
//! filters, policy, topics, metrics) and what every stage shares: a failed
//! step's error, the readiness flags. The changing state belongs to stage
//! objects, each in its own file with private fields and the methods that
//! change it, taking the context (or the pieces they need) as a parameter:
//! [`OffsetSyncs`](offset_syncs::OffsetSyncs) ([`offset_syncs`]: the offset-sync store, read to its
//! end and then followed), [`Checkpoints`](checkpoints::Checkpoints) ([`checkpoints`]: the checkpoint
//! store and its groups, emission rounds), [`SyncHistory`](archive::SyncHistory) ([`archive`]: the
//! sync-history topic's writer), [`ContentSearch`](content::ContentSearch) ([`content`]: the decided
//! content searches) and [`CommitFollower`] ([`follow`]: the reader of
//! `__consumer_offsets`). [`FlowState`] ([`state`]) composes the stages and
//! builds them at startup. Stateless steps are functions: [`groups`] (group
//! discovery), [`topics`] (the compacted topics on the target), [`read`]
//! (reading a state topic to its end), [`group_sync`] (target group sync,
//! shared with `translate --apply`); [`sync_runner`] runs the loop's group
//! syncs, one at a time beside the loop. [`ReverseCheckpoints`]
//! ([`reverse`]) is the stage of the reverse rounds for failing back, which
//! run the checkpoints stage and group sync on the flow's reversed context;
//! the run loop holds it beside [`FlowState`]. The flow reaches its clusters only
//! through [`FlowCluster`] ([`cluster`]), so the orchestration is
//! unit-tested on an in-memory cluster.

pub mod archive;
pub mod checkpoints;
pub mod cluster;
pub mod content;
pub mod context;
pub mod follow;
pub mod group_sync;
pub mod groups;
pub mod offset_syncs;
pub mod read;
pub mod reverse;
pub mod state;
pub mod sync_runner;
#[cfg(test)]
mod tests;
pub mod topics;

pub use cluster::FlowCluster;
pub use context::{FlowContext, StepCause, StepError};
pub use follow::CommitFollower;
pub use group_sync::{GroupSyncResult, carry_out_group_sync};
pub use reverse::ReverseCheckpoints;
pub use state::FlowState;
