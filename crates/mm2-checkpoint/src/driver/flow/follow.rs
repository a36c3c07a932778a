//! The commit follower (docs/commit-follower.md sections 2 to 4): reads the
//! source's `__consumer_offsets` read_committed, replays it to its end before
//! anything is emitted, then hands each batch of commits to the core's
//! [`FollowedOffsets`]; the run loop turns what changed into checkpoints.
//! Every decision stays the core's: which records count, what a commit
//! means, what to emit. [`CommitFollower`] owns its reader and its view; its
//! methods take the flow's context.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kafka_lite::{Error, FetchOptions, IsolationLevel, StartOffset, TopicReader};
use kafka_protocol::error::ResponseError;

use crate::config::GroupOffsetsMode;
use crate::core::consumer_offsets::{self, OffsetsDecodeError};
use crate::core::{Applied, FollowedOffsets};
use crate::metrics::{RecordSkipReason, TopicKind};

use super::super::kafka::ClusterClient;
use super::context::{FlowContext, StepCause, StepError};

/// The topic the follower reads.
pub const CONSUMER_OFFSETS: &str = "__consumer_offsets";

/// How long a follower fetch waits for new commits. Short, so a commit is
/// seen soon and the run loop's timers stay on time.
const FOLLOW_WAIT: Duration = Duration::from_millis(100);

/// A flow's reader of `__consumer_offsets` and what it learnt.
pub struct CommitFollower {
    client: ClusterClient,
    reader: TopicReader,
    /// The committed offsets of the flow's groups.
    pub view: FollowedOffsets,
    logged: BTreeSet<&'static str>,
}

/// Why the follower does not run.
enum Unavailable {
    /// The principal may not read `__consumer_offsets`.
    Denied(Error),
    /// The source has no `__consumer_offsets` yet (no group ever committed).
    Missing(Error),
}

impl CommitFollower {
    /// Opens the follower and replays `__consumer_offsets` to its end, as
    /// the flow's mode asks: `Ok(None)` means the flow polls (mode `poll`, or
    /// `auto` where the topic cannot be read, with one WARN naming the ACL).
    /// In mode `follow` a topic that cannot be read is an error.
    pub async fn open(ctx: &FlowContext) -> Result<Option<CommitFollower>, StepError> {
        let mode = ctx.cfg.group_offsets_mode;
        let Some(client) = ctx.commits_client.clone() else {
            ctx.metrics.set_group_offsets_mode(&ctx.name, false);
            return Ok(None);
        };
        let options = FetchOptions {
            max_bytes: 4 * 1024 * 1024,
            fetch_wait: FOLLOW_WAIT,
            isolation: IsolationLevel::ReadCommitted,
        };
        let opened = match client
            .topic_reader(CONSUMER_OFFSETS, StartOffset::Earliest, options)
            .await
        {
            Ok(reader) => Ok(reader),
            Err(e) => Err(match e.kafka_error() {
                Some(ResponseError::TopicAuthorizationFailed) => Unavailable::Denied(e),
                Some(ResponseError::UnknownTopicOrPartition) => Unavailable::Missing(e),
                _ => return Err(follower_error(ctx, "ListOffsets", e)),
            }),
        };
        let reader = match (opened, mode) {
            (Ok(reader), _) => reader,
            (Err(why), GroupOffsetsMode::Follow) => {
                let e = match why {
                    Unavailable::Denied(e) | Unavailable::Missing(e) => e,
                };
                return Err(follower_error(ctx, "ListOffsets", e));
            }
            (Err(why), _) => {
                match why {
                    Unavailable::Denied(e) => tracing::warn!(
                        flow = %ctx.name, cluster = ctx.source.alias(), error = %e,
                        "cannot read {CONSUMER_OFFSETS} on cluster {}: the principal lacks Describe and \
                         Read on Topic:{CONSUMER_OFFSETS}; polling the groups' offsets every \
                         emit.checkpoints.interval.seconds instead (grant both to follow commits \
                         as they happen; see docs/commit-follower.md)",
                        ctx.source.alias()
                    ),
                    Unavailable::Missing(e) => tracing::info!(
                        flow = %ctx.name, cluster = ctx.source.alias(), error = %e,
                        "cluster {} has no {CONSUMER_OFFSETS} yet (no group has committed); polling \
                         the groups' offsets",
                        ctx.source.alias()
                    ),
                }
                ctx.metrics.set_group_offsets_mode(&ctx.name, false);
                return Ok(None);
            }
        };
        let mut follower = CommitFollower {
            client,
            reader,
            view: FollowedOffsets::new(ctx.group_filter.clone(), ctx.topic_filter.clone()),
            logged: BTreeSet::new(),
        };
        follower.replay(ctx).await?;
        ctx.metrics.set_group_offsets_mode(&ctx.name, true);
        Ok(Some(follower))
    }

    /// Reads `__consumer_offsets` to the end captured when the follower
    /// opened, logging progress every 5 s.
    async fn replay(&mut self, ctx: &FlowContext) -> Result<(), StepError> {
        let began = Instant::now();
        let mut last_log = Instant::now();
        let total = self.reader.remaining().max(1);
        let mut records = 0u64;
        while !self.reader.is_caught_up() {
            records += self.step(ctx).await? as u64;
            let done = total.saturating_sub(self.reader.remaining()) as f64 / total as f64;
            ctx.metrics
                .set_initial_read_progress(&ctx.name, CONSUMER_OFFSETS, done);
            if last_log.elapsed() >= Duration::from_secs(5) {
                last_log = Instant::now();
                tracing::info!(
                    flow = %ctx.name, topic = CONSUMER_OFFSETS, records,
                    remaining = self.reader.remaining(), "reading the {CONSUMER_OFFSETS} topic"
                );
            }
        }
        ctx.metrics
            .set_initial_read_progress(&ctx.name, CONSUMER_OFFSETS, 1.0);
        self.view.clear_changed();
        tracing::info!(
            flow = %ctx.name, topic = CONSUMER_OFFSETS, records,
            partitions = self.reader.partitions().count(), groups = self.view.group_count(),
            group_partitions = self.view.partition_count(),
            elapsed_ms = began.elapsed().as_millis() as u64,
            "read the {CONSUMER_OFFSETS} topic to its end; following commits"
        );
        Ok(())
    }

    /// One fetch of every partition of `__consumer_offsets` (waiting up to
    /// 100 ms for new commits), applied to the follower's view. Returns the
    /// number of records read.
    pub async fn step(&mut self, ctx: &FlowContext) -> Result<usize, StepError> {
        let client = self.client.clone();
        let polled = client
            .poll_topic(&mut self.reader)
            .await
            .map_err(|e| follower_error(ctx, "Fetch", e))?;
        if let Some((partition, e)) = polled.failed.into_iter().next() {
            return Err(StepError {
                cluster: ctx.source.alias().to_owned(),
                op: "Fetch",
                error: StepCause::Driver {
                    what: format!("cannot read {CONSUMER_OFFSETS} partition {partition}"),
                    cause: Some(Box::new(e)),
                },
            });
        }
        let mut read = 0usize;
        let mut changed = 0u64;
        for part in polled.records {
            for rec in part.records {
                read += 1;
                match consumer_offsets::decode(rec.key.as_deref(), rec.value.as_deref()) {
                    Ok(record) => {
                        if matches!(
                            self.view.apply(record),
                            Applied::Committed | Applied::Removed
                        ) {
                            changed += 1;
                        }
                    }
                    Err(e) => self.note_skipped(ctx, part.partition, rec.offset, &e),
                }
            }
        }
        if changed > 0 {
            ctx.metrics.followed_commits(&ctx.name, changed);
        }
        Ok(read)
    }

    fn note_skipped(
        &mut self,
        ctx: &FlowContext,
        partition: i32,
        offset: i64,
        e: &OffsetsDecodeError,
    ) {
        let (reason, label) = match e {
            OffsetsDecodeError::UnsupportedValueVersion { .. } => {
                (RecordSkipReason::UnknownVersion, "unknown_version")
            }
            _ => (RecordSkipReason::Corrupt, "corrupt"),
        };
        ctx.metrics
            .record_skipped(&ctx.name, TopicKind::ConsumerOffsets, reason);
        if self.logged.insert(label) {
            tracing::warn!(
                flow = %ctx.name, topic = CONSUMER_OFFSETS, partition, offset, error = %e,
                "skipping a {label} record (logged once per kind; see records_skipped_total)"
            );
        }
    }
}

/// A failure of the follower's `op` on the source, as the flow's step error.
fn follower_error(ctx: &FlowContext, op: &'static str, e: Error) -> StepError {
    ctx.step::<()>(&ctx.source, op, Err(e))
        .err()
        .unwrap_or_else(|| StepError {
            cluster: ctx.source.alias().to_owned(),
            op,
            error: StepCause::Driver {
                what: "the commit follower failed".into(),
                cause: None,
            },
        })
}
