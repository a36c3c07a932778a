//! Seeding a workload: a fresh topic, its offset syncs (written with the
//! core's encoder) and the groups, committed at the newest sync.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use mm2_checkpoint::core::format::OffsetSync;
use mm2_checkpoint::core::{CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::FlowCluster;
use mm2_checkpoint::driver::OutRecord;

use super::env::lite;
use super::side_by_side::{Bench, Flow};
use crate::topics;

/// Upstream offsets get a sync every `SYNC_STEP` records, `SYNCS_PER_PARTITION`
/// times; groups commit at the newest one, which both sides translate exactly.
pub(super) const SYNC_STEP: i64 = 100;
pub(super) const SYNCS_PER_PARTITION: i64 = 11;
/// The mirror's offset = upstream + `SHIFT`.
pub(super) const SHIFT: i64 = 7;
/// Records per produce request when filling a syncs topic.
const PRODUCE_BATCH: usize = 5_000;

pub(super) fn sync_record(topic: &str, partition: i32, upstream: i64) -> Result<OutRecord> {
    let sync = OffsetSync {
        topic_partition: TopicPartition::new(topic, partition),
        upstream_offset: upstream,
        downstream_offset: upstream + SHIFT,
    };
    Ok(OutRecord {
        key: sync
            .encode_key()
            .with_context(|| format!("encoding a sync key for {topic}"))?,
        value: sync.encode_value(),
        timestamp: 0,
    })
}

impl Bench {
    /// A fresh topic, its syncs (SYNCS_PER_PARTITION per partition, or
    /// `total_syncs` spread over the partitions), and `groups` committed at the
    /// newest sync of every partition.
    pub(super) fn seed(&self, flow: &Flow, total_syncs: Option<u64>) -> Result<()> {
        let s = &self.source;
        let syncs = topics::offset_syncs(&flow.target_alias);
        self.rt.block_on(async {
            lite(
                &format!("creating {}", flow.topic),
                s.create_topic(&flow.topic, flow.partitions, 1, &[]).await,
            )?;
            lite(
                &format!("creating {syncs}"),
                s.create_topic(&syncs, 1, 1, &[("cleanup.policy", "compact")])
                    .await,
            )?;
            let per_partition = match total_syncs {
                Some(n) => n.div_ceil(flow.partitions as u64) as i64,
                None => SYNCS_PER_PARTITION,
            };
            let mut batch = Vec::with_capacity(PRODUCE_BATCH);
            let mut written = 0u64;
            let limit = total_syncs.unwrap_or(u64::MAX);
            'outer: for k in 0..per_partition {
                for p in 0..flow.partitions {
                    if written == limit {
                        break 'outer;
                    }
                    batch.push(sync_record(&flow.topic, p, k * SYNC_STEP)?);
                    written += 1;
                    if batch.len() == PRODUCE_BATCH {
                        lite(
                            &format!("producing syncs to {syncs}"),
                            s.produce(&syncs, 0, &batch).await,
                        )?;
                        batch.clear();
                    }
                }
            }
            if !batch.is_empty() {
                lite(
                    &format!("producing syncs to {syncs}"),
                    s.produce(&syncs, 0, &batch).await,
                )?;
            }
            // Commit at the newest sync every partition got.
            let newest = (per_partition.max(1) - 1) * SYNC_STEP;
            let offsets: BTreeMap<TopicPartition, CommittedOffset> = (0..flow.partitions)
                .map(|p| {
                    (
                        TopicPartition::new(&flow.topic, p),
                        CommittedOffset::new(newest, ""),
                    )
                })
                .collect();
            for chunk in flow.groups.chunks(200) {
                let mut set = tokio::task::JoinSet::new();
                for g in chunk {
                    let (s, g, offsets) = (s.clone(), g.clone(), offsets.clone());
                    set.spawn(async move {
                        let r = s.commit_group_offsets(&g, &offsets).await;
                        (g, r)
                    });
                }
                while let Some(joined) = set.join_next().await {
                    let (g, r) = joined.context("a commit task panicked")?;
                    lite(&format!("committing group {g}"), r)?;
                }
            }
            Ok(())
        })
    }
}
