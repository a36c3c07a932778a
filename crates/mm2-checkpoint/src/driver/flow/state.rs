//! [`FlowState`]: a running flow's stages, and startup, which builds them
//! (the checkpoints topic, group discovery, the checkpoint store's restore,
//! the first read of the offset syncs).

use std::collections::BTreeMap;
use std::time::Instant;

use crate::core::{CheckpointStore, FollowedOffsets, GroupOffsets, InitMode, OffsetSyncStore};

use super::archive::SyncHistory;
use super::checkpoints::{Checkpoints, RoundSummary};
use super::cluster::FlowCluster;
use super::content::ContentSearch;
use super::context::{FlowContext, StepCause, StepError};
use super::groups::discover_groups;
use super::offset_syncs::OffsetSyncs;
use super::topics::ensure_checkpoints_topic;

/// The changing state of a running flow: its stages, each owning its own
/// state. The methods below only hand one stage what another holds.
pub struct FlowState {
    /// The offset syncs read so far and where the reading stands.
    pub syncs: OffsetSyncs,
    /// The checkpoint store and the groups it covers.
    pub checkpoints: Checkpoints,
    /// With precise translation: what to write to the sync-history topic.
    pub history: SyncHistory,
    /// With content search: the decided searches.
    pub content: ContentSearch,
}

impl FlowState {
    /// Startup: topic, groups, restore, initial read of the offset syncs.
    pub async fn start<C: FlowCluster>(ctx: &FlowContext<C>) -> Result<FlowState, StepError> {
        Self::start_with(ctx, None).await
    }

    /// [`start`](Self::start); with `followed` (the commit follower's view,
    /// read to its end) the groups are the view's and the checkpoint store
    /// is restored for every group the filter accepts, since the follower
    /// learns new groups as they commit (docs/commit-follower.md section 2).
    pub async fn start_with<C: FlowCluster>(
        ctx: &FlowContext<C>,
        followed: Option<&FollowedOffsets>,
    ) -> Result<FlowState, StepError> {
        let readiness = ctx.metrics.readiness();
        readiness.set_not_ready(
            ctx.ready_condition(),
            "the offset-syncs topic has not been read to its end",
        );
        ensure_checkpoints_topic(ctx).await?;
        let (groups, store) = match followed {
            None => {
                let groups = discover_groups(ctx).await?;
                tracing::info!(flow = %ctx.name, groups = groups.len(), "discovered consumer groups");
                let store = CheckpointStore::new(groups.iter().cloned());
                (groups, store)
            }
            Some(view) => {
                let groups: Vec<String> = view.group_names().map(str::to_owned).collect();
                let mut store = CheckpointStore::for_filter(ctx.group_filter.clone());
                groups.iter().for_each(|g| store.assign(g));
                (groups, store)
            }
        };
        let (checkpoints, restored) = Checkpoints::restore(ctx, store, groups).await;
        let mode = if restored {
            InitMode::LoadAllHistory
        } else {
            InitMode::MustReadToEnd
        };
        let mut state = FlowState {
            syncs: OffsetSyncs::new(
                OffsetSyncStore::with_precision(mode, ctx.cfg.sync_precision()),
                followed.is_some(),
            ),
            checkpoints,
            history: SyncHistory::default(),
            content: ContentSearch::default(),
        };
        let c = &ctx.syncs_cluster;
        let exists = ctx.step(c, "Metadata", c.topic_exists(&ctx.syncs_topic).await)?;
        if !exists {
            return Err(StepError {
                cluster: c.alias().to_owned(),
                op: "Metadata",
                error: StepCause::Driver {
                    what: format!(
                        "the offset-syncs topic {} does not exist yet (is MM2's source connector running?)",
                        ctx.syncs_topic
                    ),
                    cause: None,
                },
            });
        }
        let applied = state.syncs.load(ctx, &mut state.history, mode).await?;
        ctx.metrics.offset_syncs_read(&ctx.name, applied);
        readiness.set_ready(&ctx.ready_condition());
        let syncs = state.syncs.store();
        tracing::info!(
            flow = %ctx.name, syncs = applied, partitions = syncs.partition_count(),
            mode = ?mode, translation = ctx.cfg.offset_translation.as_str(),
            syncs_held = syncs.precise_syncs(),
            "offset syncs loaded; translation is ready"
        );
        Ok(state)
    }

    /// Reads new offset syncs (non-blocking) up to the current end; the
    /// sync-history writer follows them.
    pub async fn poll_syncs<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
    ) -> Result<u64, StepError> {
        self.syncs.poll(ctx, &mut self.history).await
    }

    /// One emission round over every group of the checkpoints stage
    /// ([`Checkpoints::emit_round`]), then, once per round, the precise
    /// history's new syncs to the sync-history topic (docs/translation.md,
    /// "Restarts and compaction").
    pub async fn emit_round<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
    ) -> Result<RoundSummary, StepError> {
        let summary = self
            .checkpoints
            .emit_round(ctx, self.syncs.store(), &mut self.content)
            .await?;
        self.history.write(ctx, self.syncs.position()).await;
        Ok(summary)
    }

    /// [`emit_round`](Self::emit_round), planned from the commit follower's
    /// view ([`Checkpoints::emit_round_from_view`]).
    pub async fn emit_round_from_view<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        view: &FollowedOffsets,
    ) -> Result<RoundSummary, StepError> {
        let summary = self
            .checkpoints
            .emit_round_from_view(ctx, self.syncs.store(), &mut self.content, view)
            .await?;
        self.history.write(ctx, self.syncs.position()).await;
        Ok(summary)
    }

    /// Plans and produces the checkpoints of `groups`
    /// ([`Checkpoints::emit_offsets`]).
    pub async fn emit_offsets<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        groups: BTreeMap<String, GroupOffsets>,
        started: Instant,
        whole: bool,
    ) -> Result<RoundSummary, StepError> {
        self.checkpoints
            .emit_offsets(
                ctx,
                self.syncs.store(),
                &mut self.content,
                groups,
                started,
                whole,
            )
            .await
    }
}
