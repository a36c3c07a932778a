//! The content-search stage ([`ContentSearch`]): content search inside the
//! sync bracket (docs/translation.md, "Content search") reads the records
//! the core compares ([`crate::core::content_search`]), within a per-round
//! budget, and the stage keeps the decisions so a group that did not move
//! costs nothing the next round.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;

use crate::config::{CONTENT_SEARCH_MAX_BYTES, CONTENT_SEARCH_MAX_RECORDS};
use crate::core::content_search::{
    Bracket, ContentCache, Fallback, SearchLimits, SideRead, bracket, bracket_sync, decide,
};
use crate::core::{OffsetsWindow, TopicPartition};

use crate::core::OffsetSyncStore;

use super::super::kafka::error_label;
use super::cluster::FlowCluster;
use super::context::FlowContext;

/// Most searches in one planning step (a window of a round, or a follower
/// emission); the others keep the sync answer this time and are searched in
/// a later round.
pub const SEARCHES_PER_ROUND: usize = 200;

/// Most time one planning step spends searching, reads included.
pub const SEARCH_TIME_PER_ROUND: Duration = Duration::from_secs(1);

/// The first Fetch of a side asks for this much; a second, of
/// [`CONTENT_SEARCH_MAX_BYTES`], only when it was not enough (a Fetch decodes
/// what it returns, whatever the bracket needs).
pub const FIRST_FETCH_BYTES: i32 = 16 * 1024;

/// The content-search stage: the decided searches, and the topics whose
/// read was refused.
#[derive(Debug, Default)]
pub struct ContentSearch {
    /// The decided searches.
    cache: ContentCache,
    /// Topics whose read was refused (TOPIC_AUTHORIZATION_FAILED), warned once.
    warned: BTreeSet<String>,
}

/// What the round searched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchSummary {
    /// Searches decided this round.
    pub searched: usize,
    /// Of which found the exact position.
    pub exact: usize,
    /// Brackets left for a later round (budget reached).
    pub deferred: usize,
}

impl ContentSearch {
    /// The decided searches, which the plan's translator consults.
    pub fn cache(&self) -> &ContentCache {
        &self.cache
    }

    /// Ends a round: drops the decisions of offsets no group held during it
    /// (`ContentCache::end_round`).
    pub fn end_round(&mut self) {
        self.cache.end_round();
    }

    /// With content search on, before planning: searches the brackets of
    /// `groups`' committed offsets that were not decided yet, within the
    /// round's budget (per call: a round of several windows may search for
    /// longer). The decisions of offsets no group held during a whole round
    /// are dropped at its end (`ContentCache::end_round`).
    pub async fn search<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        syncs: &OffsetSyncStore,
        groups: &OffsetsWindow,
    ) -> SearchSummary {
        let mut summary = SearchSummary::default();
        if !ctx.cfg.content_search {
            return summary;
        }
        let mut todo: BTreeSet<(&TopicPartition, i64)> = BTreeSet::new();
        // The topic filter once per topic, not per group-partition.
        let mut replicated: std::collections::HashMap<&str, bool> = Default::default();
        for (tp, committed) in groups.commits() {
            let Some(committed) = committed else { continue };
            let u = committed.offset;
            let keep = *replicated
                .entry(tp.topic.as_str())
                .or_insert_with(|| ctx.topic_filter.should_replicate_topic(&tp.topic));
            if !keep {
                continue;
            }
            if let Some(s) = bracket_sync(syncs, tp, u)
                && !self.cache.touch(tp, u, s)
            {
                todo.insert((tp, u));
            }
        }
        let started = Instant::now();
        for (tp, u) in todo {
            if summary.searched >= SEARCHES_PER_ROUND || started.elapsed() >= SEARCH_TIME_PER_ROUND
            {
                summary.deferred += 1;
                continue;
            }
            let Some(b) = bracket(syncs, tp, u) else {
                continue;
            };
            // The budget bounds the reads too (a retried Fetch waits up to
            // the client's deadline): past it, searched again next round.
            let left = SEARCH_TIME_PER_ROUND.saturating_sub(started.elapsed());
            let Ok(outcome) = tokio::time::timeout(left, self.search_one(ctx, tp, &b)).await else {
                summary.deferred += 1;
                continue;
            };
            let Some(outcome) = outcome else {
                // A transient error: searched again next round.
                continue;
            };
            summary.searched += 1;
            let exact = match outcome {
                Ok(d) => {
                    summary.exact += 1;
                    ctx.metrics.content_search(&ctx.name, "exact");
                    Some(d)
                }
                Err(reason) => {
                    ctx.metrics.content_search(&ctx.name, reason.label());
                    None
                }
            };
            tracing::debug!(flow = %ctx.name, tp = %tp, upstream = u, sync = %b.sync, ?exact, "content search");
            self.cache.insert(tp.clone(), u, b.sync, exact);
        }
        if summary.searched > 0 || summary.deferred > 0 {
            tracing::info!(
                flow = %ctx.name, searched = summary.searched, exact = summary.exact,
                deferred = summary.deferred, micros = started.elapsed().as_micros() as u64,
                "content search round"
            );
        }
        summary
    }

    /// Reads both sides of `b` (one Fetch each) and decides. `None` for a
    /// transient read error (not decided: searched again next round). The
    /// rounds' search and `cutover` (forward) call it.
    pub async fn search_one<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        tp: &TopicPartition,
        b: &Bracket,
    ) -> Option<Result<i64, Fallback>> {
        let remote_topic = ctx.policy.checkpoint_topic(&ctx.flow, &tp.topic);
        let source = read_side(&ctx.source, &tp.topic, tp.partition, b.source_from(), |r| {
            b.source_end(r.high_watermark)
        })
        .await;
        let source = match source {
            Ok(read) => read,
            Err(e) => return self.unreadable(ctx, ctx.source.alias(), &tp.topic, &e),
        };
        let remote_end = b.remote_end(&source);
        let remote = read_side(
            &ctx.target,
            &remote_topic,
            tp.partition,
            b.remote_from(),
            |_| remote_end,
        )
        .await;
        let remote = match remote {
            Ok(read) => read,
            Err(e) => return self.unreadable(ctx, ctx.target.alias(), &remote_topic, &e),
        };
        let limits = SearchLimits {
            max_records: CONTENT_SEARCH_MAX_RECORDS,
        };
        Some(decide(b, &source, &remote, limits))
    }

    /// A side could not be read: an ACL refusal is warned once per topic and
    /// decided (the sync answer is kept); an offset out of range (the range
    /// deleted, or not written yet) or a missing topic is a gap; anything
    /// else is retried next round.
    fn unreadable<C: FlowCluster>(
        &mut self,
        ctx: &FlowContext<C>,
        cluster: &str,
        topic: &str,
        e: &kafka_lite::Error,
    ) -> Option<Result<i64, Fallback>> {
        ctx.metrics.request_error(cluster, "Fetch", &error_label(e));
        match e.kafka_error() {
            Some(ResponseError::TopicAuthorizationFailed) => {
                if self.warned.insert(topic.to_string()) {
                    tracing::warn!(
                        flow = %ctx.name, cluster, topic, error = %e,
                        "content search cannot read topic {topic} on cluster {cluster} (the principal \
                         needs Read on it, docs/operations.md); the sync answers are kept"
                    );
                }
                Some(Err(Fallback::Unreadable))
            }
            // The range deleted or not written yet, or the remote topic
            // missing: nothing to compare.
            Some(ResponseError::OffsetOutOfRange | ResponseError::UnknownTopicOrPartition) => {
                Some(Err(Fallback::Gap))
            }
            _ => {
                tracing::debug!(flow = %ctx.name, cluster, topic, error = %e, "content search read failed; retried next round");
                None
            }
        }
    }
}

/// One side from `from`, up to (not including) the offset `end` gives for
/// what was read: a first Fetch of [`FIRST_FETCH_BYTES`] (a bracket of a
/// few hundred ordinary records), and only if it stopped short of `end`
/// before the log end, one of [`CONTENT_SEARCH_MAX_BYTES`].
async fn read_side<C: FlowCluster>(
    cluster: &C,
    topic: &str,
    partition: i32,
    from: i64,
    end: impl Fn(&SideRead) -> i64,
) -> Result<SideRead, kafka_lite::Error> {
    let first = cluster
        .fetch_side(topic, partition, from, FIRST_FETCH_BYTES)
        .await?;
    if first.read_to >= end(&first) || first.read_to >= first.high_watermark {
        return Ok(first);
    }
    cluster
        .fetch_side(topic, partition, from, CONTENT_SEARCH_MAX_BYTES)
        .await
}
