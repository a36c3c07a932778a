//! Routing by the metadata cache: the [`Client`] methods that fetch Metadata, find
//! partition leaders and pick a broker to talk to.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    MetadataRequest, TopicName, metadata_request::MetadataRequestTopic,
};
use kafka_protocol::protocol::StrBytes;

use super::Client;
use super::metadata::{BrokerInfo, ClusterMetadata, TopicMetadata};
use crate::connection::BrokerConnection;
use crate::error::Error;

impl Client {
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
}
