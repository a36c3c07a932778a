//! The metadata cache and routing: what Metadata says about brokers, topics and
//! partitions, and the [`Client`] methods that fetch it, find partition leaders and
//! pick a broker to talk to.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    MetadataRequest, MetadataResponse, TopicName, metadata_request::MetadataRequestTopic,
};
use kafka_protocol::protocol::StrBytes;

use super::Client;
use crate::connection::BrokerConnection;
use crate::error::Error;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
