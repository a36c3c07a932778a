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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    FindCoordinatorRequest, MetadataRequest, MetadataResponse, TopicName,
    metadata_request::MetadataRequestTopic,
};
use kafka_protocol::protocol::StrBytes;

use crate::backoff::{Backoff, RetryPolicy};
use crate::config::ConnectionConfig;
use crate::connection::{BrokerConnection, Connector};
use crate::error::Error;
use crate::pool::BrokerPool;

tokio::task_local! {
    /// The deadline of the operation running in this task, so retries
    /// nested inside it (a coordinator lookup inside a commit, say) give up
    /// with it instead of starting their own clock.
    static DEADLINE: tokio::time::Instant;
}

/// FindCoordinator key type for consumer groups.
const GROUP_KEY_TYPE: i8 = 0;
/// Most keys put in one batched (v4+) FindCoordinator request.
const MAX_COORDINATOR_KEYS: usize = 1000;

/// One broker of the cluster, as Metadata or FindCoordinator describes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BrokerInfo {
    /// The broker's node id.
    pub node_id: i32,
    /// The advertised host.
    pub host: String,
    /// The advertised port.
    pub port: i32,
    /// The broker's rack, if configured.
    pub rack: Option<String>,
}

impl BrokerInfo {
    /// `host:port`, the key of the broker's connection.
    pub fn address(&self) -> String {
        if self.host.contains(':') && !self.host.starts_with('[') {
            // A bare IPv6 literal.
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for BrokerInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "broker {} ({})", self.node_id, self.address())
    }
}

/// One partition as Metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    /// The partition index.
    pub partition: i32,
    /// The leader's node id; `-1` when there is no leader.
    pub leader_id: i32,
    /// The leader epoch.
    pub leader_epoch: i32,
    /// Node ids of the replicas.
    pub replicas: Vec<i32>,
    /// Node ids of the in-sync replicas.
    pub isr: Vec<i32>,
    /// The partition's error (LEADER_NOT_AVAILABLE, ...), if any.
    pub error: Option<ResponseError>,
}

/// One topic as Metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    /// The topic name.
    pub name: String,
    /// The topic id (all zero before Metadata v10).
    pub topic_id: [u8; 16],
    /// Whether it is an internal topic (`__consumer_offsets`, ...).
    pub is_internal: bool,
    /// The topic's error, if any (never UNKNOWN_TOPIC_OR_PARTITION: such
    /// topics are not cached).
    pub error: Option<ResponseError>,
    /// The partitions by index.
    pub partitions: BTreeMap<i32, PartitionMetadata>,
}

/// A snapshot of what the client knows about the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterMetadata {
    /// The cluster id, if the broker reports one.
    pub cluster_id: Option<String>,
    /// The controller's node id (`-1` if unknown).
    pub controller_id: i32,
    /// The live brokers by node id.
    pub brokers: BTreeMap<i32, BrokerInfo>,
    /// The topics fetched so far (and not invalidated since), by name.
    pub topics: BTreeMap<String, TopicMetadata>,
}

impl ClusterMetadata {
    /// The leader of `topic`/`partition`, if known and live.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<&BrokerInfo> {
        let p = self.topics.get(topic)?.partitions.get(&partition)?;
        self.brokers.get(&p.leader_id)
    }

    /// Merges a Metadata response. With `all_topics` the topic list is
    /// replaced; otherwise the returned topics are updated and those the
    /// broker does not know (UNKNOWN_TOPIC_OR_PARTITION) are dropped.
    fn merged(&self, response: &MetadataResponse, all_topics: bool) -> ClusterMetadata {
        let brokers = response
            .brokers
            .iter()
            .map(|b| {
                (
                    b.node_id.0,
                    BrokerInfo {
                        node_id: b.node_id.0,
                        host: b.host.to_string(),
                        port: b.port,
                        rack: b.rack.as_ref().map(|r| r.to_string()),
                    },
                )
            })
            .collect();
        let mut topics = if all_topics {
            BTreeMap::new()
        } else {
            self.topics.clone()
        };
        for topic in &response.topics {
            let Some(name) = topic.name.as_ref().map(|n| n.0.to_string()) else {
                continue;
            };
            let error = ResponseError::try_from_code(topic.error_code);
            if error == Some(ResponseError::UnknownTopicOrPartition) {
                topics.remove(&name);
                continue;
            }
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    (
                        p.partition_index,
                        PartitionMetadata {
                            partition: p.partition_index,
                            leader_id: p.leader_id.0,
                            leader_epoch: p.leader_epoch,
                            replicas: p.replica_nodes.iter().map(|n| n.0).collect(),
                            isr: p.isr_nodes.iter().map(|n| n.0).collect(),
                            error: ResponseError::try_from_code(p.error_code),
                        },
                    )
                })
                .collect();
            topics.insert(
                name.clone(),
                TopicMetadata {
                    name,
                    topic_id: *topic.topic_id.as_bytes(),
                    is_internal: topic.is_internal,
                    error,
                    partitions,
                },
            );
        }
        ClusterMetadata {
            cluster_id: response.cluster_id.as_ref().map(|c| c.to_string()),
            controller_id: response.controller_id.0,
            brokers,
            topics,
        }
    }
}

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

    // ----- metadata -----------------------------------------------------

    /// The current metadata snapshot (no network).
    pub fn metadata(&self) -> Arc<ClusterMetadata> {
        self.inner
            .metadata
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The live brokers, from the cache (refreshed with every Metadata).
    pub fn brokers(&self) -> Vec<BrokerInfo> {
        self.metadata().brokers.values().cloned().collect()
    }

    /// Fetches Metadata (with retries) and merges it into the cache:
    /// `None` fetches every topic (replacing the cached list), `Some(list)`
    /// those topics only (`Some(&[])`: just the brokers). Returns the new
    /// snapshot. Topics the cluster does not know are absent from it.
    pub async fn refresh_metadata(
        &self,
        topics: Option<&[String]>,
    ) -> Result<Arc<ClusterMetadata>, Error> {
        self.retry("Metadata", || self.refresh_metadata_once(topics))
            .await
    }

    async fn refresh_metadata_once(
        &self,
        topics: Option<&[String]>,
    ) -> Result<Arc<ClusterMetadata>, Error> {
        let _guard = self.inner.refresh.lock().await;
        let connection = self.any_broker().await?;
        let version = connection.version_for::<MetadataRequest>()?;
        let mut request = MetadataRequest::default();
        request.topics = topics.map(|names| {
            names
                .iter()
                .map(|name| {
                    MetadataRequestTopic::default()
                        .with_name(Some(TopicName(StrBytes::from_string(name.clone()))))
                })
                .collect()
        });
        if version >= 4 {
            request.allow_auto_topic_creation = false;
        }
        let response = connection.send_with_version(request, version).await?;
        if version >= 13 {
            Error::check_code("Metadata", response.error_code, "")?;
        }
        let mut current = self
            .inner
            .metadata
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let merged = Arc::new(current.merged(&response, topics.is_none()));
        *current = merged.clone();
        Ok(merged)
    }

    /// Drops the cached topic metadata; the next lookup fetches it again.
    /// Brokers stay known.
    pub fn invalidate_metadata(&self) {
        let mut current = self
            .inner
            .metadata
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if !current.topics.is_empty() {
            let mut next = (**current).clone();
            next.topics.clear();
            *current = Arc::new(next);
        }
    }

    /// The metadata of `topic`: from the cache, else fetched. A topic the
    /// cluster does not know is [`Error::Kafka`] UNKNOWN_TOPIC_OR_PARTITION
    /// (the broker's answer for it in Metadata).
    pub async fn topic_metadata(&self, topic: &str) -> Result<TopicMetadata, Error> {
        if let Some(t) = self.metadata().topics.get(topic) {
            return Ok(t.clone());
        }
        let snapshot = self.refresh_metadata(Some(&[topic.to_string()])).await?;
        snapshot
            .topics
            .get(topic)
            .cloned()
            .ok_or_else(|| Error::Kafka {
                api: "Metadata",
                error: ResponseError::UnknownTopicOrPartition,
                context: format!("topic {topic:?}"),
            })
    }

    /// The leader of `topic`/`partition`: from the cache, else after one
    /// metadata refresh of the topic. No live leader is a virtual
    /// ([`Error::is_virtual`]) LEADER_NOT_AVAILABLE (retriable); a topic
    /// error in the response (such as TOPIC_AUTHORIZATION_FAILED) is that
    /// error; an unknown topic is the broker's UNKNOWN_TOPIC_OR_PARTITION, an
    /// unknown partition of a known topic a virtual one.
    pub async fn leader(&self, topic: &str, partition: i32) -> Result<BrokerInfo, Error> {
        if let Some(leader) = self.metadata().leader(topic, partition) {
            return Ok(leader.clone());
        }
        let snapshot = self.refresh_metadata(Some(&[topic.to_string()])).await?;
        if let Some(leader) = snapshot.leader(topic, partition) {
            return Ok(leader.clone());
        }
        let context = format!("topic-partition {topic}-{partition}");
        let (error, sent) = match snapshot.topics.get(topic) {
            // The partition is listed, its leader is not a live broker.
            Some(t) if t.partitions.contains_key(&partition) => {
                (ResponseError::LeaderNotAvailable, false)
            }
            // E.g. TOPIC_AUTHORIZATION_FAILED: the broker lists the topic with
            // no partitions; say why instead of "unknown topic".
            Some(TopicMetadata { error: Some(e), .. }) => (*e, true),
            // The topic is listed, the partition is not.
            Some(_) => (ResponseError::UnknownTopicOrPartition, false),
            // The broker answered UNKNOWN_TOPIC_OR_PARTITION for the topic
            // (such topics are not cached).
            None => (ResponseError::UnknownTopicOrPartition, true),
        };
        if sent {
            Err(Error::Kafka {
                api: "Metadata",
                error,
                context,
            })
        } else {
            Err(Error::made_up("Metadata", error, context))
        }
    }

    /// A connection to the leader of `topic`/`partition` (see
    /// [`leader`](Self::leader)).
    pub async fn leader_connection(
        &self,
        topic: &str,
        partition: i32,
    ) -> Result<BrokerConnection, Error> {
        let leader = self.leader(topic, partition).await?;
        self.connection_to(&leader).await
    }

    /// A connection to `broker`.
    pub async fn connection_to(&self, broker: &BrokerInfo) -> Result<BrokerConnection, Error> {
        self.inner.pool.get(&broker.address()).await
    }

    /// A connection to any reachable broker: the known brokers in rotation,
    /// then the bootstrap addresses. Stops at the first non-retriable error
    /// (TLS, authentication), else returns the last failure.
    pub async fn any_broker(&self) -> Result<BrokerConnection, Error> {
        let known: Vec<String> = self.brokers().iter().map(BrokerInfo::address).collect();
        let mut candidates = Vec::with_capacity(known.len() + self.inner.bootstrap.len());
        if !known.is_empty() {
            let start = self.inner.next_broker.fetch_add(1, Ordering::Relaxed) % known.len();
            candidates.extend(known[start..].iter().cloned());
            candidates.extend(known[..start].iter().cloned());
        }
        for address in &self.inner.bootstrap {
            if !candidates.contains(address) {
                candidates.push(address.clone());
            }
        }
        let mut last = None;
        for address in candidates {
            match self.inner.pool.get(&address).await {
                Ok(connection) => return Ok(connection),
                Err(e) if !e.is_retriable() => return Err(e),
                Err(e) => {
                    tracing::debug!(broker = %address, error = %e, "broker unreachable");
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| Error::InvalidAddress {
            broker: String::new(),
            detail: "no brokers known".to_string(),
        }))
    }

    // ----- coordinators -------------------------------------------------

    /// The coordinator of consumer group `group`: cached, else looked up
    /// with FindCoordinator (with retries).
    pub async fn group_coordinator(&self, group: &str) -> Result<BrokerInfo, Error> {
        let mut found = self.group_coordinators(&[group.to_string()]).await;
        found.remove(group).unwrap_or_else(|| {
            Err(Error::made_up(
                "FindCoordinator",
                ResponseError::CoordinatorNotAvailable,
                format!("group {group:?}"),
            ))
        })
    }

    /// A connection to the coordinator of `group`.
    pub async fn coordinator_connection(&self, group: &str) -> Result<BrokerConnection, Error> {
        let coordinator = self.group_coordinator(group).await?;
        self.connection_to(&coordinator).await
    }

    /// The coordinators of many groups, with one result per group. Cached
    /// ones cost nothing; the rest are looked up with batched FindCoordinator
    /// (v4+, up to 1000 keys a request) or one request per group on older
    /// brokers, retrying retriable errors until the deadline.
    pub async fn group_coordinators(
        &self,
        groups: &[String],
    ) -> HashMap<String, Result<BrokerInfo, Error>> {
        let mut results = HashMap::with_capacity(groups.len());
        let mut pending: Vec<String> = Vec::new();
        {
            let cache = self
                .inner
                .coordinators
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let mut seen = HashSet::new();
            for group in groups {
                if !seen.insert(group.as_str()) {
                    continue;
                }
                match cache.get(group) {
                    Some(b) => {
                        results.insert(group.clone(), Ok(b.clone()));
                    }
                    None => pending.push(group.clone()),
                }
            }
        }
        let mut backoff = self.new_backoff();
        let deadline = backoff.deadline();
        while !pending.is_empty() {
            let round = Self::within(deadline, self.find_coordinators_once(&pending)).await;
            let mut retry = Vec::new();
            for (group, result) in round {
                match result {
                    Ok(broker) => {
                        self.inner
                            .coordinators
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(group.clone(), broker.clone());
                        results.insert(group, Ok(broker));
                    }
                    Err(e) => {
                        self.observe_error(&e);
                        if e.is_retriable() {
                            retry.push(group.clone());
                        }
                        results.insert(group, Err(e));
                    }
                }
            }
            if retry.is_empty() || !backoff.wait().await {
                break;
            }
            tracing::debug!(groups = retry.len(), "retrying FindCoordinator");
            pending = retry;
        }
        results
    }

    async fn find_coordinators_once(
        &self,
        groups: &[String],
    ) -> Vec<(String, Result<BrokerInfo, Error>)> {
        let all_fail = |e: &Error| -> Vec<(String, Result<BrokerInfo, Error>)> {
            groups.iter().map(|g| (g.clone(), Err(e.clone()))).collect()
        };
        let connection = match self.any_broker().await {
            Ok(c) => c,
            Err(e) => return all_fail(&e),
        };
        let version = match connection.version_for::<FindCoordinatorRequest>() {
            Ok(v) => v,
            Err(e) => return all_fail(&e),
        };
        let mut out = Vec::with_capacity(groups.len());
        if version >= 4 {
            for chunk in groups.chunks(MAX_COORDINATOR_KEYS) {
                let request = FindCoordinatorRequest::default()
                    .with_key_type(GROUP_KEY_TYPE)
                    .with_coordinator_keys(
                        chunk
                            .iter()
                            .map(|g| StrBytes::from_string(g.clone()))
                            .collect(),
                    );
                match connection.send_with_version(request, version).await {
                    Ok(response) => {
                        let mut answered = HashSet::new();
                        for c in &response.coordinators {
                            let group = c.key.to_string();
                            let result = Error::check_code(
                                "FindCoordinator",
                                c.error_code,
                                format!("group {group:?}"),
                            )
                            .map(|()| BrokerInfo {
                                node_id: c.node_id.0,
                                host: c.host.to_string(),
                                port: c.port,
                                rack: None,
                            });
                            answered.insert(group.clone());
                            out.push((group, result));
                        }
                        for group in chunk.iter().filter(|g| !answered.contains(*g)) {
                            out.push((
                                group.clone(),
                                Err(Error::MalformedResponse {
                                    broker: connection.address().to_string(),
                                    api: "FindCoordinator",
                                    version,
                                    detail: format!("no coordinator returned for group {group:?}"),
                                }),
                            ));
                        }
                    }
                    Err(e) => {
                        out.extend(chunk.iter().map(|g| (g.clone(), Err(e.clone()))));
                    }
                }
            }
        } else {
            let mut tasks = tokio::task::JoinSet::new();
            for group in groups {
                let connection = connection.clone();
                let group = group.clone();
                tasks.spawn(async move {
                    let request = FindCoordinatorRequest::default()
                        .with_key(StrBytes::from_string(group.clone()))
                        .with_key_type(GROUP_KEY_TYPE);
                    let result = connection
                        .send_with_version(request, version)
                        .await
                        .and_then(|r| {
                            Error::check_code(
                                "FindCoordinator",
                                r.error_code,
                                format!("group {group:?}"),
                            )?;
                            Ok(BrokerInfo {
                                node_id: r.node_id.0,
                                host: r.host.to_string(),
                                port: r.port,
                                rack: None,
                            })
                        });
                    (group, result)
                });
            }
            while let Some(joined) = tasks.join_next().await {
                match joined {
                    Ok(pair) => out.push(pair),
                    Err(e) => tracing::error!(error = %e, "FindCoordinator task failed"),
                }
            }
            // A task that panicked leaves its group unanswered: report it.
            let answered: HashSet<String> = out.iter().map(|(g, _)| g.clone()).collect();
            for group in groups.iter().filter(|g| !answered.contains(*g)) {
                out.push((
                    group.clone(),
                    Err(Error::ConnectionClosed {
                        broker: connection.address().to_string(),
                        detail: "FindCoordinator task ended unexpectedly".to_string(),
                    }),
                ));
            }
        }
        out
    }

    /// Forgets the cached coordinator of `group`.
    pub fn invalidate_coordinator(&self, group: &str) {
        self.inner
            .coordinators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(group);
    }

    // ----- retries ------------------------------------------------------

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
            tracing::debug!(
                operation = what,
                attempt = backoff.attempts() + 1,
                error = %error,
                "retrying"
            );
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
    use std::time::Duration;

    use kafka_protocol::messages::BrokerId;
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };

    /// (name, error code, [(partition, leader)])
    type TopicSpec<'a> = (&'a str, i16, &'a [(i32, i32)]);

    fn response(topics: &[TopicSpec<'_>]) -> MetadataResponse {
        MetadataResponse::default()
            .with_brokers(vec![
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(1))
                    .with_host(StrBytes::from_static_str("b1"))
                    .with_port(9092),
            ])
            .with_topics(
                topics
                    .iter()
                    .map(|(name, code, parts)| {
                        MetadataResponseTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
                            .with_error_code(*code)
                            .with_partitions(
                                parts
                                    .iter()
                                    .map(|(p, leader)| {
                                        MetadataResponsePartition::default()
                                            .with_partition_index(*p)
                                            .with_leader_id(BrokerId(*leader))
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            )
    }

    #[test]
    fn merge_updates_named_topics_and_keeps_others() {
        let first = ClusterMetadata::default().merged(&response(&[("a", 0, &[(0, 1)])]), false);
        let second = first.merged(&response(&[("b", 0, &[(0, 1), (1, -1)])]), false);
        assert!(second.topics.contains_key("a"));
        assert_eq!(
            second.leader("b", 0).map(|b| b.address()),
            Some("b1:9092".into())
        );
        assert_eq!(second.leader("b", 1), None, "no leader");
        assert_eq!(second.leader("b", 2), None, "no such partition");
    }

    #[test]
    fn merge_drops_unknown_topics_and_all_topics_replaces_the_list() {
        let first = ClusterMetadata::default().merged(&response(&[("a", 0, &[(0, 1)])]), false);
        let gone = first.merged(&response(&[("a", 3, &[])]), false);
        assert!(!gone.topics.contains_key("a"));
        let all = first.merged(&response(&[("c", 0, &[])]), true);
        assert_eq!(all.topics.keys().collect::<Vec<_>>(), vec!["c"]);
    }

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
    fn ipv6_broker_addresses_get_brackets() {
        let broker = BrokerInfo {
            node_id: 1,
            host: "::1".into(),
            port: 9092,
            rack: None,
        };
        assert_eq!(broker.address(), "[::1]:9092");
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
