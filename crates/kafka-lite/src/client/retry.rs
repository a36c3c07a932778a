//! Retries: the operation deadline shared by nested retries, [`Client::retry`], and
//! dropping the cached routing an error shows to be stale.

use std::future::Future;

use kafka_protocol::error::ResponseError;

use super::Client;
use crate::backoff::Backoff;
use crate::error::Error;

tokio::task_local! {
    /// The deadline of the operation running in this task, so retries
    /// nested inside it (a coordinator lookup inside a commit, say) give up
    /// with it instead of starting their own clock.
    static DEADLINE: tokio::time::Instant;
}

impl Client {
    /// Retry state for a new operation: its own deadline, or the enclosing
    /// operation's if that is sooner.
    pub(crate) fn new_backoff(&self) -> Backoff {
        let own = tokio::time::Instant::now() + self.inner.retry.deadline;
        let deadline = DEADLINE.try_with(|outer| (*outer).min(own)).unwrap_or(own);
        Backoff::until(self.inner.retry, deadline)
    }

    /// Runs `future` with `deadline` as the enclosing operation deadline.
    pub(crate) fn within<F: Future>(
        deadline: tokio::time::Instant,
        future: F,
    ) -> impl Future<Output = F::Output> {
        DEADLINE.scope(deadline, future)
    }

    /// Runs `op` until it succeeds, fails with a non-retriable error, or the
    /// deadline passes (then the last error is returned); see the module
    /// documentation for the rules. `what` names the operation in logs.
    pub async fn retry<T, F, Fut>(&self, what: &str, mut op: F) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut backoff = self.new_backoff();
        let deadline = backoff.deadline();
        let mut unknown_topic = 0u32;
        loop {
            let error = match Self::within(deadline, op()).await {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            self.observe_error(&error);
            if !error.is_retriable() || error.is_group_active() {
                return Err(error);
            }
            if error.kafka_error() == Some(ResponseError::UnknownTopicOrPartition) {
                unknown_topic += 1;
                if unknown_topic > self.inner.retry.max_unknown_topic_retries {
                    return Err(error);
                }
            }
            if error.is_unreachable() {
                // A broker that cannot be reached is what an operator must
                // hear about at once, with when we give up.
                let name = &self.inner.pool.connector().config().cluster_name;
                let cluster = match name.as_str() {
                    "" => "the cluster".to_string(),
                    name => format!("cluster {name}"),
                };
                tracing::warn!(
                    cluster = %name,
                    operation = what,
                    attempt = backoff.attempts() + 1,
                    gives_up_in_ms = backoff.remaining().as_millis() as u64,
                    "cannot reach {cluster}: {error}; retrying {what} until the deadline in {:.1} s",
                    backoff.remaining().as_secs_f64()
                );
            } else {
                tracing::debug!(
                    operation = what,
                    attempt = backoff.attempts() + 1,
                    error = %error,
                    "retrying"
                );
            }
            if !backoff.wait().await {
                tracing::debug!(operation = what, error = %error, "giving up: deadline passed");
                return Err(error);
            }
        }
    }

    /// Drops cached routing an error shows to be stale (see the module
    /// documentation). Called by [`retry`](Self::retry); call it when
    /// retrying by hand.
    pub fn observe_error(&self, error: &Error) {
        match error {
            Error::Kafka { error: code, .. } | Error::Virtual { error: code, .. } => {
                if matches!(
                    code,
                    ResponseError::NotLeaderOrFollower
                        | ResponseError::LeaderNotAvailable
                        | ResponseError::UnknownTopicOrPartition
                        | ResponseError::FencedLeaderEpoch
                        | ResponseError::UnknownLeaderEpoch
                        | ResponseError::KafkaStorageError
                        | ResponseError::UnknownTopicId
                ) {
                    self.invalidate_metadata();
                }
            }
            Error::Io { broker, .. }
            | Error::ConnectTimeout { broker, .. }
            | Error::RequestTimeout { broker, .. }
            | Error::ConnectionClosed { broker, .. } => {
                self.invalidate_metadata();
                self.inner
                    .coordinators
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .retain(|_, b| b.address() != *broker);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use crate::backoff::RetryPolicy;
    use crate::config::ConnectionConfig;
    use crate::connection::Connector;

    /// A client that never connected (no network needed for retry tests).
    fn offline_client(retry: RetryPolicy) -> Client {
        let connector = Connector::new(ConnectionConfig::default()).expect("plaintext config");
        Client::unconnected(connector, vec!["127.0.0.1:1".into()], retry)
    }

    fn kafka(error: ResponseError) -> Error {
        Error::Kafka {
            api: "Test",
            error,
            context: String::new(),
        }
    }

    async fn attempts_until_error(client: &Client, error: ResponseError) -> (u32, Error) {
        let attempts = std::sync::atomic::AtomicU32::new(0);
        let result: Result<(), Error> = client
            .retry("test", || {
                attempts.fetch_add(1, Ordering::Relaxed);
                async { Err(kafka(error)) }
            })
            .await;
        (
            attempts.load(Ordering::Relaxed),
            result.expect_err("always fails"),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn non_retriable_and_group_active_errors_are_not_retried() {
        let client = offline_client(RetryPolicy::default());
        for error in [
            ResponseError::InvalidReplicationFactor,
            ResponseError::UnknownMemberId,
            ResponseError::RebalanceInProgress,
        ] {
            let (attempts, e) = attempts_until_error(&client, error).await;
            assert_eq!(attempts, 1, "{error:?}");
            assert_eq!(e.kafka_error(), Some(error));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn unknown_topic_is_retried_a_bounded_number_of_times() {
        let client = offline_client(RetryPolicy::default());
        let (attempts, _) =
            attempts_until_error(&client, ResponseError::UnknownTopicOrPartition).await;
        assert_eq!(
            attempts,
            1 + RetryPolicy::default().max_unknown_topic_retries
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retriable_errors_are_retried_until_the_deadline() {
        let policy = RetryPolicy {
            deadline: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        let client = offline_client(policy);
        let start = tokio::time::Instant::now();
        let (attempts, e) = attempts_until_error(&client, ResponseError::NotCoordinator).await;
        assert!(attempts > 3, "{attempts}");
        assert_eq!(e.kafka_error(), Some(ResponseError::NotCoordinator));
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_secs(4) && elapsed <= Duration::from_secs(5),
            "{elapsed:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_nested_retry_shares_the_enclosing_deadline() {
        let client = offline_client(RetryPolicy::default());
        let outer = tokio::time::Instant::now() + Duration::from_secs(2);
        let inner = Client::within(outer, async { client.new_backoff().deadline() }).await;
        assert_eq!(inner, outer);
        let alone = client.new_backoff().deadline();
        assert!(alone > outer, "no enclosing operation: own 30 s deadline");
    }

    #[test]
    fn cloned_errors_keep_kind_and_message() {
        let e = Error::Io {
            broker: "b:1".into(),
            source: Arc::new(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "refused",
            )),
        };
        let c = e.clone();
        assert_eq!(e.to_string(), c.to_string());
        assert!(c.is_retriable());
    }
}
