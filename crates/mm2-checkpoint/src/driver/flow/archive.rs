//! The sync-history topic (docs/translation.md, "Restarts and compaction"):
//! reading it at start, handing the restore decision's outcome to the store
//! and the writer, and writing what the writer says once per emission round.
//! Every decision is the core's (`core::sync_archive`).

use crate::core::sync_archive::{ArchiveRestore, ArchiveWriter, RestoreDecision};
use crate::core::{InitMode, OffsetSync, Precision};
use crate::metrics::TopicKind;

use super::super::kafka::error_label;
use super::{Archive, FlowCluster, FlowContext, FlowState, now_ms};

/// Records per produce request (a chunk record is about 150 bytes).
const WRITE_BATCH: usize = 2_000;

/// Records a failing writer may hold for a retry before it gives up for this
/// run (what the topic holds stays consistent up to its last mark).
const MAX_UNWRITTEN: usize = 100_000;

impl<C: FlowCluster> FlowContext<C> {
    /// With precise translation: creates the sync-history topic if missing and
    /// reads it to its end. Sets `state.archive` (the writer, numbering new
    /// generations above the archived ones) and returns the restore to feed
    /// the offset-syncs topic's initial read through. On any failure warns
    /// and returns `None`: the flow runs without persisting its history.
    pub(super) async fn open_archive(&self, state: &mut FlowState) -> Option<ArchiveRestore> {
        let topic = self.sync_history_topic.as_deref()?;
        let Precision::Precise { max_syncs } = state.syncs.precision() else {
            return None;
        };
        if let Err(e) = self.ensure_compacted_topic(topic, "sync-history").await {
            tracing::warn!(
                flow = %self.name, topic, error = %e,
                "cannot create the sync-history topic; precise translation runs without it \
                 (after a restart that follows compaction of the offset-syncs topic, lagging \
                 groups are translated with the precision the offset-syncs topic still gives)"
            );
            return None;
        }
        let mut restore = ArchiveRestore::new();
        let mut bad = 0usize;
        let r = self
            .read_to_end(&self.target, topic, TopicKind::SyncHistory, |rec| {
                if restore
                    .record(rec.key.as_deref(), rec.value.as_deref())
                    .is_err()
                {
                    bad += 1;
                }
            })
            .await;
        if let Err(e) = r {
            tracing::warn!(
                flow = %self.name, topic, error = %e,
                "cannot read the sync-history topic; precise translation runs without it"
            );
            return None;
        }
        if bad > 0 {
            tracing::warn!(flow = %self.name, topic, skipped = bad, "skipped undecodable records of the sync-history topic");
        }
        state.archive = Some(Archive {
            writer: ArchiveWriter::new(max_syncs, restore.next_generation()),
            unwritten: Vec::new(),
            warned: false,
            last_mark: None,
        });
        Some(restore)
    }

    /// After the initial read: decides with `restore` which archived histories
    /// to use, puts them in the store and the writer, and logs the outcome once.
    pub(super) fn finish_archive(
        &self,
        state: &mut FlowState,
        restore: ArchiveRestore,
        mode: InitMode,
    ) {
        let Some(topic) = self.sync_history_topic.as_deref() else {
            return;
        };
        let had = restore.chunk_count();
        let d: RestoreDecision = restore.finish(state.syncs_pos, mode);
        let Some(archive) = state.archive.as_mut() else {
            return;
        };
        archive.writer.tombstone(d.stale.iter().cloned());
        let (mut partitions, mut syncs, mut not_taken) = (0usize, 0usize, 0usize);
        for r in &d.accepted {
            let held: Vec<OffsetSync> = r.syncs.iter().map(|s| s.sync).collect();
            match state
                .syncs
                .restore_history(&r.topic, r.partition, &held, r.complete)
            {
                Some(fell_back) => {
                    archive.writer.adopt(r);
                    partitions += 1;
                    syncs += held.len();
                    if fell_back {
                        state
                            .fallback_warned
                            .insert(crate::core::TopicPartition::new(&r.topic, r.partition));
                    }
                }
                None => not_taken += 1,
            }
        }
        self.metrics
            .set_precise_fallback_partitions(&self.name, state.syncs.fallen_back_partitions());
        match &d.refused_all {
            Some(reason) if had > 0 => tracing::warn!(
                flow = %self.name, topic, %reason, archived_chunks = had,
                "not using the precise history kept in the sync-history topic: {reason}; lagging \
                 groups are translated from what the offset-syncs topic still holds (never past \
                 their position), and the history is written anew"
            ),
            _ => {}
        }
        if let Some(((t, p), reason)) = d.refused.first() {
            tracing::warn!(
                flow = %self.name, topic, refused = d.refused.len(), first = %format!("{t}-{p}"), %reason,
                "not using the kept precise history of {} source partitions (first {t}-{p}: {reason}); \
                 they are translated from what the offset-syncs topic still holds",
                d.refused.len()
            );
        }
        if d.refused_all.is_none() && had > 0 {
            tracing::info!(
                flow = %self.name, topic, partitions, syncs, refused = d.refused.len() + not_taken,
                skipped_records = d.skipped,
                "restored the precise history of {partitions} source partitions ({syncs} offset syncs) \
                 from the sync-history topic"
            );
        }
    }

    /// Writes what the sync-history writer has (chunks, tombstones, then the
    /// mark at the flow's offset-syncs position), in order, through the same
    /// producer as the checkpoints (the owner's transactions under
    /// membership). A failure is warned about once and the records are
    /// written again, first, next time.
    pub(super) async fn write_archive(&self, state: &mut FlowState) {
        let (Some(topic), Some(archive)) =
            (self.sync_history_topic.as_deref(), state.archive.as_mut())
        else {
            return;
        };
        let mut records = std::mem::take(&mut archive.unwritten);
        let taken = archive.writer.take_records(state.syncs_pos);
        if records.is_empty() && taken.len() == 1 && archive.last_mark == Some(state.syncs_pos) {
            // Nothing new: only the same mark again.
            return;
        }
        records.extend(
            taken
                .into_iter()
                .filter_map(|(k, v)| Some((k.encode()?, v))),
        );
        let t = &self.target;
        let ts = now_ms();
        let mut done = 0;
        let mut failure = None;
        for batch in records.chunks(WRITE_BATCH) {
            match t.produce_nullable(topic, 0, batch, ts).await {
                Ok(_) => done += batch.len(),
                Err(e) => {
                    self.metrics
                        .request_error(t.alias(), "Produce", &error_label(&e));
                    failure = Some(e);
                    break;
                }
            }
        }
        match failure {
            None => {
                archive.last_mark = Some(state.syncs_pos);
                if archive.warned {
                    tracing::info!(flow = %self.name, topic, "writing the sync-history topic works again");
                }
                archive.warned = false;
            }
            Some(e) => {
                archive.unwritten = records.split_off(done);
                if !archive.warned {
                    archive.warned = true;
                    tracing::warn!(
                        flow = %self.name, cluster = t.alias(), topic, error = %e,
                        pending = archive.unwritten.len(),
                        "cannot write the sync-history topic; retrying each round (logged once \
                         until it works again)"
                    );
                }
                if archive.unwritten.len() > MAX_UNWRITTEN {
                    tracing::warn!(
                        flow = %self.name, topic, pending = archive.unwritten.len(),
                        "giving up writing the sync-history topic until the next start; what it \
                         holds stays valid up to its last mark, and the next start checks it"
                    );
                    state.archive = None;
                } else if e.kafka_error()
                    == Some(kafka_protocol::error::ResponseError::UnknownTopicOrPartition)
                {
                    // Deleted while running: create it again; what was
                    // written before is gone, so a later restore keeps only
                    // the chunks written from now on (the newest syncs).
                    let _ = self.ensure_compacted_topic(topic, "sync-history").await;
                }
            }
        }
    }
}
