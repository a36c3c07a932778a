//! Group and topic operations on a [`Client`], shaped like franz-go's
//! `kadm`: one call covers many items, and every item gets its own result,
//! so nothing fails silently and nothing needs one round trip per item.
//!
//! - [`groups`] — `list_groups`, `describe_groups`, `fetch_group_offsets`,
//!   `commit_group_offsets`.
//! - [`topics`] — `create_topic`.

pub(crate) mod groups;
pub(crate) mod topics;

use std::collections::HashSet;
use std::fmt;
use std::future::Future;

use indexmap::IndexMap;
use kafka_protocol::error::ResponseError;

use crate::client::{BrokerInfo, Client};
use crate::error::Error;

/// A topic name and partition index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// The topic name.
    pub topic: String,
    /// The partition index.
    pub partition: i32,
}

impl TopicPartition {
    /// `topic`/`partition`.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Whether a group-level error means "ask the coordinator again": the
/// cached coordinator is dropped and the group retried.
pub(crate) fn is_coordinator_error(error: &Error) -> bool {
    matches!(
        error.kafka_error(),
        Some(
            ResponseError::NotCoordinator
                | ResponseError::CoordinatorNotAvailable
                | ResponseError::CoordinatorLoadInProgress
        )
    )
}

/// One result per group, in the order the groups were given.
type PerGroup<T> = IndexMap<String, Result<T, Error>>;

impl Client {
    /// Runs `op` once per coordinator with the groups it coordinates, in
    /// parallel, and retries the groups that failed retriably (after
    /// dropping their cached coordinator on coordinator errors) until the
    /// deadline. `op` returns one result per group it was given, or one
    /// error for the whole request.
    pub(crate) async fn per_coordinator<T, F, Fut>(
        &self,
        what: &'static str,
        groups: &[String],
        op: F,
    ) -> PerGroup<T>
    where
        T: Send + 'static,
        F: Fn(Client, BrokerInfo, Vec<String>) -> Fut,
        Fut: Future<Output = Result<Vec<(String, Result<T, Error>)>, Error>> + Send + 'static,
    {
        // `None` until the group has a result; keeps the caller's order. A
        // group still without one at the end gets COORDINATOR_NOT_AVAILABLE,
        // made then: most calls never need it, and building an error per
        // group up front was a visible part of a batched call's CPU.
        let mut results: IndexMap<String, Option<Result<T, Error>>> =
            IndexMap::with_capacity(groups.len());
        let mut seen = HashSet::new();
        let mut pending: Vec<String> = groups
            .iter()
            .filter(|g| seen.insert(g.as_str()))
            .cloned()
            .collect();
        for group in &pending {
            results.insert(group.clone(), None);
        }
        let mut backoff = self.new_backoff();
        let deadline = backoff.deadline();
        while !pending.is_empty() {
            let (buckets, failed) =
                Client::within(deadline, self.coordinator_buckets(&pending)).await;
            // Already retried by group_coordinators.
            for (group, e) in failed {
                results.insert(group, Some(Err(e)));
            }
            let mut tasks = tokio::task::JoinSet::new();
            for (broker, bucket) in buckets {
                let fut = op(self.clone(), broker, bucket.clone());
                tasks.spawn(Client::within(deadline, async move { (bucket, fut.await) }));
            }
            let mut retry = Vec::new();
            while let Some(joined) = tasks.join_next().await {
                let Ok((bucket, outcome)) = joined else {
                    // A panicked task leaves its groups with the placeholder error.
                    tracing::error!(operation = what, "coordinator task ended unexpectedly");
                    continue;
                };
                let mut per_group = match outcome {
                    Ok(per_group) => per_group,
                    Err(e) => bucket.iter().map(|g| (g.clone(), Err(e.clone()))).collect(),
                };
                let answered: HashSet<&str> = per_group.iter().map(|(g, _)| g.as_str()).collect();
                let unanswered: Vec<String> = bucket
                    .iter()
                    .filter(|g| !answered.contains(g.as_str()))
                    .cloned()
                    .collect();
                per_group.extend(unanswered.into_iter().map(|g| {
                    let error = Error::made_up(
                        what,
                        ResponseError::UnknownServerError,
                        format!("group {g:?} missing from the response"),
                    );
                    (g, Err(error))
                }));
                for (group, result) in per_group {
                    if let Err(e) = &result {
                        self.observe_error(e);
                        if is_coordinator_error(e) {
                            self.invalidate_coordinator(&group);
                        }
                        if e.is_retriable() && !e.is_group_active() {
                            retry.push(group.clone());
                        }
                    }
                    if let Some(slot) = results.get_mut(&group) {
                        *slot = Some(result);
                    }
                }
            }
            if retry.is_empty() || !backoff.wait().await {
                break;
            }
            tracing::debug!(operation = what, groups = retry.len(), "retrying groups");
            pending = retry;
        }
        results
            .into_iter()
            .map(|(group, result)| {
                let result = result.unwrap_or_else(|| {
                    Err(Error::made_up(
                        what,
                        ResponseError::CoordinatorNotAvailable,
                        format!("group {group:?}"),
                    ))
                });
                (group, result)
            })
            .collect()
    }
}
