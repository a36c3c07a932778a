//! Reading a state topic (the offset-syncs, checkpoints or sync-history
//! topic, partition 0) from its start to the end captured when the read
//! begins, each fetch running as a task of its own; counting the records
//! that cannot be decoded.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kafka_lite::records::{ConsumerRecord, RecordRef};
use kafka_lite::{AheadFetch, PartitionReader, StartOffset};

use crate::core::DecodeError;
use crate::metrics::{self, Metrics, TopicKind};

use super::cluster::FlowCluster;
use super::context::{FlowContext, StepError};

/// How long a fetch of the initial read waits for records.
const READ_WAIT: Duration = Duration::from_millis(500);

/// Reads partition 0 of `topic` on `cluster` from the earliest offset to the end
/// captured at start, handing each record to `apply`. Logs progress every 5 s.
pub async fn read_to_end<C: FlowCluster>(
    ctx: &FlowContext<C>,
    cluster: &C,
    topic: &str,
    kind: TopicKind,
    mut apply: impl FnMut(&ConsumerRecord),
) -> Result<i64, StepError> {
    let keep = Prepare::Records(|records, _| records);
    read_to_end_prepared(ctx, cluster, topic, kind, keep, |records| {
        records.iter().for_each(&mut apply);
        None
    })
    .await
}

/// [`read_to_end`], each fetch's records first turned
/// into a `T` by `prepare` on the fetch's own task (another worker thread,
/// while the previous fetch is applied here), then handed to `apply` here,
/// one fetch after the other in log order. What `apply` gives back is
/// handed to a later `prepare` to fill again (its allocations reused: a
/// fresh multi-MB buffer per fetch costs a page fault per 4 KiB).
pub async fn read_to_end_prepared<C: FlowCluster, T: Send + 'static>(
    ctx: &FlowContext<C>,
    cluster: &C,
    topic: &str,
    kind: TopicKind,
    prepare: Prepare<T>,
    mut apply: impl FnMut(T) -> Option<T>,
) -> Result<i64, StepError> {
    let r = cluster
        .open_reader(topic, 0, StartOffset::Earliest, READ_WAIT)
        .await;
    let reader = ctx.step(cluster, "ListOffsets", r)?;
    let (start, end) = (reader.position(), reader.end());
    let mut last_log = Instant::now();
    let began = Instant::now();
    let total = end.saturating_sub(start).max(1) as f64;
    let name = kind.log_name();
    // The reader stops at the captured end, or lower if the log was
    // truncated below it meanwhile. Each fetch runs as a task of its own,
    // the next one started before the last one's records are applied
    // here, so the broker's and the network's time, the decoding of its
    // records and `prepare` (on another worker thread) overlap applying
    // them; records are still applied in log order, one fetch after the
    // other.
    // Under `Prepare::Visit` each fetch task also starts the Fetch after
    // its own (where it will end is in its batch headers) before visiting
    // its records, so the broker's time for the next fetch overlaps the
    // decoding of this one; the next task uses it if the reader did end
    // there, else fetches again.
    let (mut reader, first, mut ahead) =
        NextFetch::spawn(cluster, reader.clone(), prepare, None, None)
            .join(cluster, &reader)
            .await;
    let mut fetched = ctx.step(cluster, "Fetch", first)?;
    let mut spare = None;
    while let Some(prepared) = fetched {
        let next = NextFetch::spawn(cluster, reader.clone(), prepare, spare.take(), ahead);
        spare = apply(prepared);
        let (r, next, next_ahead) = next.join(cluster, &reader).await;
        reader = r;
        ahead = next_ahead;
        fetched = ctx.step(cluster, "Fetch", next)?;
        let pos = reader.position();
        if kind == TopicKind::OffsetSyncs {
            ctx.metrics.set_initial_read_progress(
                &ctx.name,
                topic,
                pos.saturating_sub(start) as f64 / total,
            );
        }
        if last_log.elapsed() >= Duration::from_secs(5) {
            last_log = Instant::now();
            tracing::info!(flow = %ctx.name, topic, position = pos, end, "reading the {name} topic");
        }
    }
    if kind == TopicKind::OffsetSyncs {
        ctx.metrics.set_initial_read_progress(&ctx.name, topic, 1.0);
    }
    tracing::info!(
        flow = %ctx.name, topic, records = end.saturating_sub(start),
        elapsed_ms = began.elapsed().as_millis() as u64,
        "read the {name} topic to its end"
    );
    Ok(reader.position())
}

/// How the fetch task of an initial read turns a fetch's records into what
/// is applied.
pub enum Prepare<T> {
    /// The records as [`ConsumerRecord`]s, turned into a `T` (given the spare
    /// `T` handed back by an earlier apply).
    Records(fn(Vec<ConsumerRecord>, Option<T>) -> T),
    /// A `T` begun (from the spare, if any), then each record visited into it
    /// borrowed from the fetch response (see [`FlowCluster::read_visit`]).
    Visit {
        /// Starts a fetch's `T` (from the spare, if any).
        begin: fn(Option<T>) -> T,
        /// Adds one record to it.
        record: fn(&mut T, RecordRef<'_>),
    },
}

impl<T> Clone for Prepare<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Prepare<T> {}

/// The next fetch of an initial read, running as a task, its records prepared
/// there; aborted if dropped before it is joined (the read was given up).
struct NextFetch<T>(tokio::task::JoinHandle<(PartitionReader, ReadResult<T>, Option<Ahead>)>);

type ReadResult<T> = Result<Option<T>, kafka_lite::Error>;

impl<T: Send + 'static> NextFetch<T> {
    /// `ahead`: the Fetch after the last one, started by its task.
    fn spawn<C: FlowCluster>(
        cluster: &C,
        mut reader: PartitionReader,
        prepare: Prepare<T>,
        spare: Option<T>,
        ahead: Option<Ahead>,
    ) -> Self {
        let cluster = cluster.clone();
        NextFetch(tokio::spawn(async move {
            match prepare {
                Prepare::Records(prepare) => {
                    drop(ahead);
                    let r = cluster.read(&mut reader).await;
                    let r = r.map(|records| records.map(|r| prepare(r, spare)));
                    (reader, r, None)
                }
                Prepare::Visit { begin, record } => {
                    // The Fetch made ahead, if it was made at the position
                    // the reader did reach (else it is dropped, and so
                    // aborted); its failure is this fetch's.
                    let made = match ahead {
                        Some(ahead) if ahead.at == reader.position() => ahead.take().await,
                        _ => Ok(None),
                    };
                    let this = match made {
                        Ok(Some(f)) if f.made_for(&reader) => Ok(Some(f)),
                        Ok(_) => cluster.fetch_ahead(&reader).await,
                        Err(e) => Err(e),
                    };
                    let this = match this {
                        Ok(this) => this,
                        Err(e) => return (reader, Err(e), None),
                    };
                    let next = this
                        .as_ref()
                        .map(|f| reader.after(f))
                        .filter(|next| !next.is_caught_up())
                        .map(|next| Ahead::spawn(&cluster, next));
                    let mut prepared = begin(spare);
                    let r = cluster
                        .read_visit_fetched(&mut reader, this, |rec| record(&mut prepared, rec))
                        .await;
                    (reader, r.map(|read| read.map(|_| prepared)), next)
                }
            }
        }))
    }

    /// The reader moved past the fetch, what it read, and the Fetch after it
    /// if one was started. A panic in the task goes on here; a task cancelled
    /// by the runtime's shutdown is an error.
    async fn join<C: FlowCluster>(
        mut self,
        cluster: &C,
        reader: &PartitionReader,
    ) -> (PartitionReader, ReadResult<T>, Option<Ahead>) {
        match (&mut self.0).await {
            Ok(done) => done,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => {
                let cancelled = std::io::Error::other(
                    "the fetch task was cancelled (the runtime is shutting down)",
                );
                let error = kafka_lite::Error::Io {
                    broker: cluster.alias().to_owned(),
                    source: std::sync::Arc::new(cancelled),
                };
                (reader.clone(), Err(error), None)
            }
        }
    }
}

/// A Fetch made ahead of its turn at offset `at`, running as a task; aborted
/// if dropped.
struct Ahead {
    at: i64,
    task: tokio::task::JoinHandle<Result<Option<AheadFetch>, kafka_lite::Error>>,
}

impl Ahead {
    /// Starts the Fetch `reader` would make next.
    fn spawn<C: FlowCluster>(cluster: &C, reader: PartitionReader) -> Self {
        let cluster = cluster.clone();
        Ahead {
            at: reader.position(),
            task: tokio::spawn(async move { cluster.fetch_ahead(&reader).await }),
        }
    }

    /// What the Fetch got (its retries are over: its error is final); `None`
    /// if it made none or was cancelled by the runtime's shutdown.
    async fn take(mut self) -> Result<Option<AheadFetch>, kafka_lite::Error> {
        match (&mut self.task).await {
            Ok(fetched) => fetched,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Ok(None),
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<T> Drop for NextFetch<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Counts a skipped record of a state topic and warns once per kind.
pub(super) fn note_skipped(
    metrics: &Metrics,
    flow: &str,
    kind: TopicKind,
    e: &DecodeError,
    offset: i64,
    logged: &mut BTreeSet<&'static str>,
) {
    let (reason, label) = match e {
        DecodeError::Null { .. } => (metrics::RecordSkipReason::Tombstone, "tombstone"),
        DecodeError::UnsupportedVersion { .. } => {
            (metrics::RecordSkipReason::UnknownVersion, "unknown_version")
        }
        _ => (metrics::RecordSkipReason::Corrupt, "corrupt"),
    };
    metrics.record_skipped(flow, kind, reason);
    if logged.insert(label) {
        tracing::warn!(
            flow, topic_kind = kind.as_str(), offset, error = %e,
            "skipping a {label} record (logged once per kind; see records_skipped_total)"
        );
    }
}
