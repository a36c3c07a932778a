//! Topic operations: create a topic idempotently.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    CreateTopicsRequest, TopicName,
    create_topics_request::{CreatableTopic, CreatableTopicConfig},
};
use kafka_protocol::protocol::StrBytes;

use crate::client::Client;
use crate::error::Error;

/// What [`Client::create_topic`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateTopicOutcome {
    /// The topic was created.
    Created,
    /// A topic of that name already existed (its settings are not checked).
    AlreadyExisted,
}

impl Client {
    /// Creates topic `name` with `partitions` partitions, `replication_factor`
    /// replicas and the given topic configs (`-1` for either number means
    /// the broker default, CreateTopics v4+).
    ///
    /// TOPIC_ALREADY_EXISTS is success ([`CreateTopicOutcome::AlreadyExisted`]).
    /// A replication factor above the number of brokers fails with
    /// [`Error::Kafka`] INVALID_REPLICATION_FACTOR (check with
    /// `err.kafka_error() == Some(ResponseError::InvalidReplicationFactor)`),
    /// so a caller can retry with fewer replicas. The broker's error
    /// message, if any, is part of the error. Retriable errors are retried.
    ///
    /// A newly created topic is returned only once the cluster's metadata
    /// shows every partition with a leader, so a produce or an offset commit
    /// issued right after does not meet UNKNOWN_TOPIC_OR_PARTITION while the
    /// brokers catch up with the controller.
    pub async fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(String, String)],
    ) -> Result<CreateTopicOutcome, Error> {
        let outcome = self
            .retry("CreateTopics", || {
                self.create_topic_once(name, partitions, replication_factor, configs)
            })
            .await?;
        if outcome == CreateTopicOutcome::Created {
            self.retry("Metadata", || self.topic_ready_once(name, partitions))
                .await?;
        }
        Ok(outcome)
    }

    /// One look at fresh metadata: `Ok` when `name` has `partitions`
    /// partitions (or any, for `-1`), each with a leader; otherwise the
    /// retriable LEADER_NOT_AVAILABLE.
    async fn topic_ready_once(&self, name: &str, partitions: i32) -> Result<(), Error> {
        let snapshot = self.refresh_metadata(Some(&[name.to_string()])).await?;
        let ready = snapshot.topics.get(name).is_some_and(|t| {
            !t.partitions.is_empty()
                && (partitions < 0 || t.partitions.len() == partitions as usize)
                && t.partitions.values().all(|p| p.leader_id >= 0)
        });
        if ready {
            Ok(())
        } else {
            Err(Error::made_up(
                "Metadata",
                ResponseError::LeaderNotAvailable,
                format!("new topic {name:?} not yet in the cluster metadata"),
            ))
        }
    }

    async fn create_topic_once(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(String, String)],
    ) -> Result<CreateTopicOutcome, Error> {
        let connection = self.any_broker().await?;
        let version = connection.version_for::<CreateTopicsRequest>()?;
        let timeout = self.pool().connector().config().request_timeout;
        // Leave the broker time to answer before our own request timeout.
        let timeout_ms =
            i32::try_from(timeout.as_millis().saturating_sub(1000).max(1000)).unwrap_or(i32::MAX);
        let topic = CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(name.to_string())))
            .with_num_partitions(partitions)
            .with_replication_factor(replication_factor)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default()
                            .with_name(StrBytes::from_string(k.clone()))
                            .with_value(Some(StrBytes::from_string(v.clone())))
                    })
                    .collect(),
            );
        let request = CreateTopicsRequest::default()
            .with_topics(vec![topic])
            .with_timeout_ms(timeout_ms);
        let response = connection.send_with_version(request, version).await?;
        let Some(result) = response.topics.iter().find(|t| t.name.0.as_str() == name) else {
            return Err(Error::MalformedResponse {
                broker: connection.address().to_string(),
                api: "CreateTopics",
                version,
                detail: format!("no result for topic {name:?}"),
            });
        };
        match ResponseError::try_from_code(result.error_code) {
            None => Ok(CreateTopicOutcome::Created),
            Some(ResponseError::TopicAlreadyExists) => Ok(CreateTopicOutcome::AlreadyExisted),
            Some(error) => {
                let mut context = format!("topic {name:?}");
                if let Some(message) = result.error_message.as_ref().filter(|m| !m.is_empty()) {
                    context.push_str(&format!(" ({message})"));
                }
                Err(Error::Kafka {
                    api: "CreateTopics",
                    error,
                    context,
                })
            }
        }
    }
}
