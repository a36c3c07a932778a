//! The sync-history stage ([`SyncHistory`]) keeps the sync-history topic
//! (docs/translation.md, "Restarts and compaction"): reading it at start,
//! handing the restore decision's outcome to the offset-sync store and the
//! writer, feeding the writer every applied sync, and writing what the
//! writer says once per emission round. Every decision is the core's
//! (`core::sync_archive`).

use crate::core::sync_archive::{ArchiveRestore, ArchiveWriter, RestoreDecision};
use crate::core::{InitMode, OffsetSync, OffsetSyncStore, Precision, TopicPartition};
use crate::metrics::TopicKind;

use super::super::kafka::error_label;
use super::cluster::FlowCluster;
use super::context::{FlowContext, now_ms};
use super::read::read_to_end;
use super::topics::ensure_compacted_topic;

/// Records per produce request (a chunk record is about 150 bytes).
const WRITE_BATCH: usize = 2_000;

/// Records a failing writer may hold for a retry before it gives up for this
/// run (what the topic holds stays consistent up to its last mark).
const MAX_UNWRITTEN: usize = 100_000;

/// The sync-history stage: with precise translation, what to write to the
/// sync-history topic (nothing when it cannot be read, or with `mm2`
/// translation).
#[derive(Default)]
pub struct SyncHistory {
    archive: Option<Archive>,
}

/// The sync-history topic's writer state (docs/translation.md, "Restarts
/// and compaction").
struct Archive {
    /// The core's writer, fed every applied sync.
    writer: ArchiveWriter,
    /// Records of a failed write, written again first next time.
    unwritten: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Whether a failed write was warned about since the last success.
    warned: bool,
    /// The mark last written (nothing is written while it stays the same and
    /// no sync arrived).
    last_mark: Option<i64>,
}

impl SyncHistory {
    /// With precise translation (`precision`): creates the sync-history
    /// topic if missing and reads it to its end. Sets up the writer
    /// (numbering new generations above the archived ones) and returns the
    /// restore to feed the offset-syncs topic's initial read through. On any
    /// failure warns and returns `None`: the flow runs without persisting its
    /// history.
    pub(super) async fn open<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        precision: Precision,
    ) -> Option<ArchiveRestore> {
        let topic = ctx.sync_history_topic.as_deref()?;
        let Precision::Precise { max_syncs } = precision else {
            return None;
        };
        if let Err(e) = ensure_compacted_topic(ctx, topic, "sync-history").await {
            tracing::warn!(
                flow = %ctx.name, topic, error = %e,
                "cannot create the sync-history topic; precise translation runs without it \
                 (after a restart that follows compaction of the offset-syncs topic, lagging \
                 groups are translated with the precision the offset-syncs topic still gives)"
            );
            return None;
        }
        let mut restore = ArchiveRestore::new();
        let mut bad = 0usize;
        let r = read_to_end(ctx, &ctx.target, topic, TopicKind::SyncHistory, |rec| {
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
                flow = %ctx.name, topic, error = %e,
                "cannot read the sync-history topic; precise translation runs without it"
            );
            return None;
        }
        if bad > 0 {
            tracing::warn!(flow = %ctx.name, topic, skipped = bad, "skipped undecodable records of the sync-history topic");
        }
        self.archive = Some(Archive {
            writer: ArchiveWriter::new(max_syncs, restore.next_generation()),
            unwritten: Vec::new(),
            warned: false,
            last_mark: None,
        });
        Some(restore)
    }

    /// After the initial read (of the offset-syncs topic up to `position`,
    /// in `mode`): decides with `restore` which archived histories to use,
    /// puts them in the offset-sync `store` and the writer, and logs
    /// the outcome once. Returns the partitions whose restored history is
    /// past its budget (warned about as such).
    pub(super) fn finish<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        restore: ArchiveRestore,
        position: i64,
        mode: InitMode,
        store: &mut OffsetSyncStore,
    ) -> Vec<TopicPartition> {
        let mut fell_back_partitions = Vec::new();
        let Some(topic) = ctx.sync_history_topic.as_deref() else {
            return fell_back_partitions;
        };
        let had = restore.chunk_count();
        let d: RestoreDecision = restore.finish(position, mode);
        let Some(archive) = self.archive.as_mut() else {
            return fell_back_partitions;
        };
        archive.writer.tombstone(d.stale.iter().cloned());
        let (mut partitions, mut syncs, mut not_taken) = (0usize, 0usize, 0usize);
        for r in &d.accepted {
            let held: Vec<OffsetSync> = r.syncs.iter().map(|s| s.sync).collect();
            match store.restore_history(&r.topic, r.partition, &held, r.complete) {
                Some(fell_back) => {
                    archive.writer.adopt(r);
                    partitions += 1;
                    syncs += held.len();
                    if fell_back {
                        fell_back_partitions.push(TopicPartition::new(&r.topic, r.partition));
                    }
                }
                None => not_taken += 1,
            }
        }
        ctx.metrics
            .set_precise_fallback_partitions(&ctx.name, store.fallen_back_partitions());
        match &d.refused_all {
            Some(reason) if had > 0 => tracing::warn!(
                flow = %ctx.name, topic, %reason, archived_chunks = had,
                "not using the precise history kept in the sync-history topic: {reason}; lagging \
                 groups are translated from what the offset-syncs topic still holds (never past \
                 their position), and the history is written anew"
            ),
            _ => {}
        }
        if let Some(((t, p), reason)) = d.refused.first() {
            tracing::warn!(
                flow = %ctx.name, topic, refused = d.refused.len(), first = %format!("{t}-{p}"), %reason,
                "not using the kept precise history of {} source partitions (first {t}-{p}: {reason}); \
                 they are translated from what the offset-syncs topic still holds",
                d.refused.len()
            );
        }
        if d.refused_all.is_none() && had > 0 {
            tracing::info!(
                flow = %ctx.name, topic, partitions, syncs, refused = d.refused.len() + not_taken,
                skipped_records = d.skipped,
                "restored the precise history of {partitions} source partitions ({syncs} offset syncs) \
                 from the sync-history topic"
            );
        }
        fell_back_partitions
    }

    /// Feeds the writer the sync applied from the record at `offset` of the
    /// offset-syncs topic (nothing without a writer).
    pub(super) fn on_sync(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        sync: OffsetSync,
        restarted: bool,
    ) {
        if let Some(archive) = &mut self.archive {
            archive
                .writer
                .on_sync(topic, partition, offset, sync, restarted);
        }
    }

    /// Writes what the sync-history writer has (chunks, tombstones, then the
    /// mark at `position`, the flow's offset-syncs position), in order,
    /// through the same producer as the checkpoints (the owner's
    /// transactions under membership). A failure is warned about once and
    /// the records are written again, first, next time.
    pub async fn write<C: FlowCluster>(&mut self, ctx: &FlowContext<C>, position: i64) {
        let (Some(topic), Some(archive)) =
            (ctx.sync_history_topic.as_deref(), self.archive.as_mut())
        else {
            return;
        };
        let mut records = std::mem::take(&mut archive.unwritten);
        let taken = archive.writer.take_records(position);
        if records.is_empty() && taken.len() == 1 && archive.last_mark == Some(position) {
            // Nothing new: only the same mark again.
            return;
        }
        records.extend(
            taken
                .into_iter()
                .filter_map(|(k, v)| Some((k.encode()?, v))),
        );
        let t = &ctx.target;
        let ts = now_ms();
        let mut done = 0;
        let mut failure = None;
        for batch in records.chunks(WRITE_BATCH) {
            match t.produce_nullable(topic, 0, batch, ts).await {
                Ok(_) => done += batch.len(),
                Err(e) => {
                    ctx.metrics
                        .request_error(t.alias(), "Produce", &error_label(&e));
                    failure = Some(e);
                    break;
                }
            }
        }
        match failure {
            None => {
                archive.last_mark = Some(position);
                if archive.warned {
                    tracing::info!(flow = %ctx.name, topic, "writing the sync-history topic works again");
                }
                archive.warned = false;
            }
            Some(e) => {
                archive.unwritten = records.split_off(done);
                if !archive.warned {
                    archive.warned = true;
                    tracing::warn!(
                        flow = %ctx.name, cluster = t.alias(), topic, error = %e,
                        pending = archive.unwritten.len(),
                        "cannot write the sync-history topic; retrying each round (logged once \
                         until it works again)"
                    );
                }
                if archive.unwritten.len() > MAX_UNWRITTEN {
                    tracing::warn!(
                        flow = %ctx.name, topic, pending = archive.unwritten.len(),
                        "giving up writing the sync-history topic until the next start; what it \
                         holds stays valid up to its last mark, and the next start checks it"
                    );
                    self.archive = None;
                } else if e.kafka_error()
                    == Some(kafka_protocol::error::ResponseError::UnknownTopicOrPartition)
                {
                    // Deleted while running: create it again; what was
                    // written before is gone, so a later restore keeps only
                    // the chunks written from now on (the newest syncs).
                    let _ = ensure_compacted_topic(ctx, topic, "sync-history").await;
                }
            }
        }
    }
}
