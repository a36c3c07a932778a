//! What Metadata says about brokers, topics and partitions: the snapshot the
//! [`Client`] caches (its methods that fetch it and route by it are in `routing`).

use std::collections::BTreeMap;
use std::fmt;

#[cfg(doc)]
use super::Client;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::MetadataResponse;

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
    pub(super) fn merged(&self, response: &MetadataResponse, all_topics: bool) -> ClusterMetadata {
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

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::StrBytes;

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
