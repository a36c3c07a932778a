//! The compacted topics a flow keeps on the target (the checkpoints topic,
//! the sync-history topic): created when missing.

use kafka_lite::Error;
use kafka_protocol::error::ResponseError;

use super::cluster::{CreateOutcome, FlowCluster};
use super::context::{FlowContext, StepError};

/// Creates the checkpoints topic on the target if missing (1 partition,
/// compacted, the configured replication factor, falling back to the broker
/// count when the factor is invalid for this cluster).
pub async fn ensure_checkpoints_topic<C: FlowCluster>(
    ctx: &FlowContext<C>,
) -> Result<(), StepError> {
    ensure_compacted_topic(ctx, &ctx.checkpoints_topic, "checkpoints").await
}

/// Creates `topic` on the target as the checkpoints topic is created
/// (see [`ensure_checkpoints_topic`]);
/// `what` names it in log lines.
pub async fn ensure_compacted_topic<C: FlowCluster>(
    ctx: &FlowContext<C>,
    topic: &str,
    what: &str,
) -> Result<(), StepError> {
    let t = &ctx.target;
    let exists = ctx.step(t, "Metadata", t.topic_exists(topic).await)?;
    if exists {
        return Ok(());
    }
    let configs = [("cleanup.policy", "compact")];
    let rf = ctx.cfg.checkpoints_topic_replication_factor;
    match t.create_topic(topic, 1, rf, &configs).await {
        Ok(CreateOutcome::Created) => {
            tracing::info!(flow = %ctx.name, topic, replication_factor = rf, "created the {what} topic");
            Ok(())
        }
        Ok(CreateOutcome::AlreadyExisted) => Ok(()),
        Err(Error::Kafka {
            error: ResponseError::InvalidReplicationFactor,
            ..
        }) => {
            let brokers = ctx.step(t, "Metadata", t.broker_count().await)?;
            let fallback = i16::try_from(brokers.max(1)).unwrap_or(i16::MAX);
            tracing::warn!(
                flow = %ctx.name,
                topic,
                "checkpoints.topic.replication.factor={rf} is invalid on cluster {} \
                 ({brokers} brokers); creating the topic with replication factor {fallback}",
                t.alias()
            );
            let r = t.create_topic(topic, 1, fallback, &configs).await;
            ctx.step(t, "CreateTopics", r).map(|_| ())
        }
        Err(e) => ctx.step(t, "CreateTopics", Err(e)),
    }
}
