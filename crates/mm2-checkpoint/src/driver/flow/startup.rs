//! Startup: the checkpoints topic, group discovery, the checkpoint store's
//! restore and the first read of the offset syncs; group refreshes.

use std::collections::BTreeSet;

use kafka_lite::Error;
use kafka_protocol::error::ResponseError;

use crate::core::{CheckpointStore, FollowedOffsets, InitMode, OffsetSyncStore};
use crate::metrics::TopicKind;

use super::super::kafka::error_label;
use super::cluster::CreateOutcome;
use super::syncs::note_skipped;
use super::{FlowCluster, FlowContext, FlowState, StepCause, StepError, is_group_denied};

impl<C: FlowCluster> FlowContext<C> {
    /// Startup: topic, groups, restore, initial read of the offset syncs.
    pub async fn start(&self) -> Result<FlowState, StepError> {
        self.start_with(None).await
    }

    /// [`start`](Self::start); with `followed` (the commit follower's view,
    /// read to its end) the groups are the view's and the checkpoint store
    /// is restored for every group the filter accepts, since the follower
    /// learns new groups as they commit (docs/commit-follower.md section 2).
    pub async fn start_with(
        &self,
        followed: Option<&FollowedOffsets>,
    ) -> Result<FlowState, StepError> {
        let readiness = self.metrics.readiness();
        readiness.set_not_ready(
            self.ready_condition(),
            "the offset-syncs topic has not been read to its end",
        );
        self.ensure_checkpoints_topic().await?;
        let (groups, store) = match followed {
            None => {
                let groups = self.discover_groups().await?;
                tracing::info!(flow = %self.name, groups = groups.len(), "discovered consumer groups");
                let store = CheckpointStore::new(groups.iter().cloned());
                (groups, store)
            }
            Some(view) => {
                let groups: Vec<String> = view.group_names().map(str::to_owned).collect();
                let mut store = CheckpointStore::for_filter(self.group_filter.clone());
                groups.iter().for_each(|g| store.assign(g));
                (groups, store)
            }
        };
        let (checkpoints, restored) = self.restore_into(store).await;
        let mode = if restored {
            InitMode::LoadAllHistory
        } else {
            InitMode::MustReadToEnd
        };
        let mut state = FlowState {
            syncs: OffsetSyncStore::with_precision(mode, self.cfg.sync_precision()),
            syncs_pos: 0,
            checkpoints,
            groups,
            synced: followed.map(|_| BTreeSet::new()),
            logged: BTreeSet::new(),
            fallback_warned: BTreeSet::new(),
            content: Default::default(),
            archive: None,
        };
        let c = &self.syncs_cluster;
        let exists = self.step(c, "Metadata", c.topic_exists(&self.syncs_topic).await)?;
        if !exists {
            return Err(StepError {
                cluster: c.alias().to_owned(),
                op: "Metadata",
                error: StepCause::Driver {
                    what: format!(
                        "the offset-syncs topic {} does not exist yet (is MM2's source connector running?)",
                        self.syncs_topic
                    ),
                    cause: None,
                },
            });
        }
        let mut restore = self.open_archive(&mut state).await;
        let applied = self.read_all_syncs(&mut state, restore.as_mut()).await?;
        if let Some(restore) = restore {
            self.finish_archive(&mut state, restore, mode);
        }
        self.metrics.offset_syncs_read(&self.name, applied);
        readiness.set_ready(&self.ready_condition());
        tracing::info!(
            flow = %self.name, syncs = applied, partitions = state.syncs.partition_count(),
            mode = ?mode, translation = self.cfg.offset_translation.as_str(),
            syncs_held = state.syncs.precise_syncs(),
            "offset syncs loaded; translation is ready"
        );
        Ok(state)
    }

    /// Creates the checkpoints topic on the target if missing (1 partition,
    /// compacted, the configured replication factor, falling back to the broker
    /// count when the factor is invalid for this cluster).
    pub async fn ensure_checkpoints_topic(&self) -> Result<(), StepError> {
        self.ensure_compacted_topic(&self.checkpoints_topic, "checkpoints")
            .await
    }

    /// Creates `topic` on the target as the checkpoints topic is created
    /// (see [`ensure_checkpoints_topic`](Self::ensure_checkpoints_topic));
    /// `what` names it in log lines.
    pub async fn ensure_compacted_topic(&self, topic: &str, what: &str) -> Result<(), StepError> {
        let t = &self.target;
        let exists = self.step(t, "Metadata", t.topic_exists(topic).await)?;
        if exists {
            return Ok(());
        }
        let configs = [("cleanup.policy", "compact")];
        let rf = self.cfg.checkpoints_topic_replication_factor;
        match t.create_topic(topic, 1, rf, &configs).await {
            Ok(CreateOutcome::Created) => {
                tracing::info!(flow = %self.name, topic, replication_factor = rf, "created the {what} topic");
                Ok(())
            }
            Ok(CreateOutcome::AlreadyExisted) => Ok(()),
            Err(Error::Kafka {
                error: ResponseError::InvalidReplicationFactor,
                ..
            }) => {
                let brokers = self.step(t, "Metadata", t.broker_count().await)?;
                let fallback = i16::try_from(brokers.max(1)).unwrap_or(i16::MAX);
                tracing::warn!(
                    flow = %self.name,
                    topic,
                    "checkpoints.topic.replication.factor={rf} is invalid on cluster {} \
                     ({brokers} brokers); creating the topic with replication factor {fallback}",
                    t.alias()
                );
                let r = t.create_topic(topic, 1, fallback, &configs).await;
                self.step(t, "CreateTopics", r).map(|_| ())
            }
            Err(e) => self.step(t, "CreateTopics", Err(e)),
        }
    }

    /// Lists the source's groups, applies the group filter and keeps the groups
    /// with at least one committed partition the topic filter accepts (docs/behaviour.md E).
    ///
    /// ListGroups silently leaves out groups the principal may not describe, so
    /// the plain group names of `groups` that were not listed are asked for
    /// too: a GROUP_AUTHORIZATION_FAILED answer for one is warned about.
    pub async fn discover_groups(&self) -> Result<Vec<String>, StepError> {
        let s = &self.source;
        let listed = self.step(s, "ListGroups", s.list_groups().await)?;
        let mut candidates: BTreeSet<String> = listed
            .into_iter()
            .filter(|g| self.group_filter.should_replicate_group(g))
            .collect();
        let unlisted: BTreeSet<String> = plain_names(&self.cfg.filters.groups)
            .filter(|g| self.group_filter.should_replicate_group(g) && !candidates.contains(*g))
            .map(str::to_owned)
            .collect();
        candidates.extend(unlisted.iter().cloned());
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let candidates: Vec<String> = candidates.into_iter().collect();
        let offsets = self.step(s, "OffsetFetch", s.fetch_group_offsets(&candidates).await)?;
        let mut kept = Vec::new();
        for (group, result) in offsets {
            match result {
                Ok(tps) => {
                    if tps
                        .keys()
                        .any(|tp| self.topic_filter.should_replicate_topic(&tp.topic))
                    {
                        kept.push(group);
                    }
                }
                Err(e) if is_group_denied(&e) => {
                    let op = if unlisted.contains(&group) {
                        "ListGroups"
                    } else {
                        "OffsetFetch"
                    };
                    self.note_group_denied(s, op, &group, &e);
                }
                Err(e) => {
                    tracing::warn!(flow = %self.name, group, error = %e, "cannot list the group's offsets; left out");
                }
            }
        }
        Ok(kept)
    }

    /// A group operation on `cluster` was refused by an ACL: counts it in
    /// `request_errors_total` and warns once per group and operation, naming
    /// the ACL the cluster's principal lacks.
    /// Returns whether it warned (the first time for this group and operation).
    pub(super) fn note_group_denied(
        &self,
        cluster: &C,
        op: &'static str,
        group: &str,
        e: &Error,
    ) -> bool {
        let api = if op == "ListGroups" {
            "OffsetFetch"
        } else {
            op
        };
        self.metrics
            .request_error(cluster.alias(), api, &error_label(e));
        let first = self
            .denied
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((group.to_owned(), op));
        if !first {
            return false;
        }
        let what = if op == "ListGroups" {
            "is named in `groups` but not listed by ListGroups, and OffsetFetch of it is refused"
        } else {
            "cannot be read: OffsetFetch is refused"
        };
        tracing::warn!(
            flow = %self.name, cluster = cluster.alias(), op, group, error = %e,
            "group {group} on cluster {} {what} (GROUP_AUTHORIZATION_FAILED); it is not \
             checkpointed until the principal of alias {} is granted Describe on Group:{group} \
             (logged once; see request_errors_total)",
            cluster.alias(),
            cluster.alias()
        );
        true
    }

    /// Restores a checkpoint store for `groups` from the checkpoints topic.
    /// Returns the store and whether the read succeeded.
    pub async fn restore_checkpoints(&self, groups: &[String]) -> (CheckpointStore, bool) {
        self.restore_into(CheckpointStore::new(groups.iter().cloned()))
            .await
    }

    /// Restores the empty `store` from the checkpoints topic. Returns it and
    /// whether the read succeeded (an empty store like it when not).
    pub async fn restore_into(&self, mut store: CheckpointStore) -> (CheckpointStore, bool) {
        let empty = store.clone();
        let mut logged = BTreeSet::new();
        let metrics = self.metrics.clone();
        let name = self.name.clone();
        let r = self
            .read_to_end(
                &self.target,
                &self.checkpoints_topic,
                TopicKind::Checkpoints,
                |rec| {
                    if let crate::core::RestoreOutcome::Skipped(e) =
                        store.restore_record(rec.key.as_deref(), rec.value.as_deref())
                    {
                        note_skipped(
                            &metrics,
                            &name,
                            TopicKind::Checkpoints,
                            &e,
                            rec.offset,
                            &mut logged,
                        );
                    }
                },
            )
            .await;
        match r {
            Ok(_) => {
                let stats = store.restore_stats();
                tracing::info!(
                    flow = %self.name, restored = stats.restored, other_groups = stats.not_assigned,
                    skipped = stats.skipped(), "restored checkpoints"
                );
                (store, true)
            }
            Err(e) => {
                tracing::warn!(
                    flow = %self.name, error = %e,
                    "cannot read the checkpoints topic; offset syncs will be read in must-read-to-end mode"
                );
                (empty, false)
            }
        }
    }

    /// Re-discovers the groups; if the set changed, rebuilds the checkpoint store
    /// for the new set from the checkpoints topic.
    pub async fn refresh_groups(&self, state: &mut FlowState) -> Result<(), StepError> {
        let groups = self.discover_groups().await?;
        if groups != state.groups {
            tracing::info!(flow = %self.name, before = state.groups.len(), after = groups.len(), "the set of consumer groups changed");
            let (store, ok) = self.restore_checkpoints(&groups).await;
            if ok {
                state.checkpoints = store;
                state.groups = groups;
                let keep: BTreeSet<String> = state.groups.iter().cloned().collect();
                self.metrics
                    .retain_checkpoint_latency_groups(&self.name, |g| keep.contains(g));
            }
        }
        Ok(())
    }
}

/// The entries of a `groups` list that are plain group names (no regular
/// expression syntax besides `.`, which matches itself too).
pub(super) fn plain_names(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|name| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    })
}
