//! The cluster layer: one [`Client`] per Kafka cluster.
//!
//! A client bootstraps from a list of addresses, keeps a metadata cache
//! (brokers, topics, partitions, leaders), routes partition requests to
//! leaders and group requests to coordinators (cached per group), and
//! retries retriable failures with backoff under a deadline
//! ([`Client::retry`]).
//!
//! # Retry rules
//!
//! - An error is retried when [`Error::is_retriable`] says so: I/O and
//!   connection failures, timeouts, closed connections and Kafka's retriable
//!   error codes (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE,
//!   NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
//!   REQUEST_TIMED_OUT, ...). Everything else surfaces at once.
//! - UNKNOWN_TOPIC_OR_PARTITION is retried at most
//!   [`RetryPolicy::max_unknown_topic_retries`] times.
//! - Errors that say the group is in use ([`Error::is_group_active`]) are
//!   never retried.
//! - Delays grow exponentially with jitter ([`crate::backoff`]); once the
//!   operation's deadline ([`RetryPolicy::deadline`], 30 s by default) has
//!   passed, the last error is returned. Retries nested in an operation
//!   (a metadata refresh or coordinator lookup inside a retried call) share
//!   its deadline rather than starting their own.
//! - Before a retry, stale routing is dropped: errors about leadership or
//!   unknown topics, and any connection failure, clear the cached topic
//!   metadata (the next lookup fetches it again); a connection failure also
//!   forgets the coordinators on that broker. Coordinator errors
//!   (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) forget the group's
//!   coordinator.

mod coordinators;
mod metadata;
mod retry;
mod routing;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use crate::backoff::RetryPolicy;
use crate::config::ConnectionConfig;
use crate::connection::Connector;
use crate::error::Error;
use crate::pool::BrokerPool;

pub use self::metadata::{BrokerInfo, ClusterMetadata, PartitionMetadata, TopicMetadata};

/// A connection to one Kafka cluster: metadata, routing, retries, and the
/// operations (group and topic administration). Cheap to clone; clones share
/// connections and caches.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    pool: BrokerPool,
    bootstrap: Vec<String>,
    retry: RetryPolicy,
    metadata: Mutex<Arc<ClusterMetadata>>,
    /// Serialises metadata refreshes so concurrent misses share one.
    refresh: tokio::sync::Mutex<()>,
    coordinators: Mutex<HashMap<String, BrokerInfo>>,
    next_broker: AtomicUsize,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("bootstrap", &self.inner.bootstrap)
            .field("retry", &self.inner.retry)
            .field("brokers", &self.metadata().brokers.len())
            .finish()
    }
}

impl Client {
    /// Connects to the cluster: tries the `bootstrap` addresses in turn
    /// until one answers Metadata, and caches the broker list. Uses the
    /// default [`RetryPolicy`].
    pub async fn connect(
        bootstrap: Vec<String>,
        config: ConnectionConfig,
    ) -> Result<Client, Error> {
        Self::connect_with_retry(bootstrap, config, RetryPolicy::default()).await
    }

    /// [`connect`](Self::connect) with an explicit retry policy (deadline,
    /// backoff).
    pub async fn connect_with_retry(
        bootstrap: Vec<String>,
        config: ConnectionConfig,
        retry: RetryPolicy,
    ) -> Result<Client, Error> {
        let bootstrap: Vec<String> = bootstrap
            .into_iter()
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        if bootstrap.is_empty() {
            return Err(Error::InvalidAddress {
                broker: String::new(),
                detail: "no bootstrap servers given".to_string(),
            });
        }
        let client = Client::unconnected(Connector::new(config)?, bootstrap, retry);
        client.refresh_metadata(Some(&[])).await?;
        Ok(client)
    }

    /// A client with empty caches that has not talked to any broker yet.
    fn unconnected(connector: Connector, bootstrap: Vec<String>, retry: RetryPolicy) -> Client {
        Client {
            inner: Arc::new(Inner {
                pool: BrokerPool::new(connector),
                bootstrap,
                retry,
                metadata: Mutex::default(),
                refresh: tokio::sync::Mutex::new(()),
                coordinators: Mutex::default(),
                next_broker: AtomicUsize::new(0),
            }),
        }
    }

    /// The retry policy of this client.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.inner.retry
    }

    /// The connection pool (one connection per broker address).
    pub fn pool(&self) -> &BrokerPool {
        &self.inner.pool
    }

    /// Number of requests sent so far on the client's connections
    /// ([`BrokerPool::requests_sent`]): every request of its operations, and
    /// any a caller sends on a connection the client handed out. Connection
    /// setup (ApiVersions, SASL) is not counted. Useful to check batching.
    pub fn requests_sent(&self) -> u64 {
        self.inner.pool.requests_sent()
    }

    /// The requests sent on this client's connections, in total and per API
    /// (shared with the pool: it keeps counting).
    pub fn request_counts(&self) -> std::sync::Arc<crate::RequestCounts> {
        self.inner.pool.request_counts()
    }
}
