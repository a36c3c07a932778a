//! A transactional producer: records and consumer-group offsets written in
//! one transaction that commits or aborts as a whole, and fencing of a
//! previous incarnation with the same transactional id.
//!
//! [`TransactionalProducer::init`] finds the transaction coordinator of the
//! transactional id and sends InitProducerId: the coordinator aborts any
//! transaction the previous holder of the id left open and bumps the epoch,
//! so from then on the previous holder's Produce, TxnOffsetCommit and EndTxn
//! are refused (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH:
//! [`Error::is_fenced`]). A transaction begins with the first
//! [`produce`](TransactionalProducer::produce) or
//! [`commit_offsets`](TransactionalProducer::commit_offsets) after the last
//! end, which add their partition or group to it (AddPartitionsToTxn,
//! AddOffsetsToTxn), and ends with [`commit`](TransactionalProducer::commit)
//! or [`abort`](TransactionalProducer::abort) (EndTxn). Readers with
//! `read_committed` see its records only after the commit and never after an
//! abort; offsets committed in it take effect at the commit.
//!
//! Versions: the client protocol of transactions before KIP-890's second
//! part (InitProducerId 1–4, AddPartitionsToTxn 1–3, AddOffsetsToTxn 1–3,
//! TxnOffsetCommit 2–4, EndTxn 1–4, Produce as usual), which Kafka 3.x and
//! 4.x brokers serve: partitions are added explicitly.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, FindCoordinatorRequest,
    InitProducerIdRequest, ProducerId, TopicName, TransactionalId, TxnOffsetCommitRequest,
    add_partitions_to_txn_request::AddPartitionsToTxnTopic,
    txn_offset_commit_request::{TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic},
};
use kafka_protocol::protocol::StrBytes;

use crate::admin::TopicPartition;
use crate::admin::groups::group_id;
use crate::client::{BrokerInfo, Client};
use crate::connection::BrokerConnection;
use crate::data::ProduceOptions;
use crate::data::produce::{encode_error, produce_as, produce_encoded, produce_version};
use crate::error::Error;
use crate::records::{BatchBuilder, BatchProducer, ProducerRecord};

/// FindCoordinator key type for transactional ids.
const TRANSACTION_KEY_TYPE: i8 = 1;

impl Error {
    /// Whether this producer has been fenced: another producer initialized
    /// the same transactional id with a newer epoch. Nothing more it sends is
    /// accepted; it must stop.
    pub fn is_fenced(&self) -> bool {
        matches!(
            self.kafka_error(),
            Some(ResponseError::ProducerFenced | ResponseError::InvalidProducerEpoch)
        )
    }
}

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// A producer of transactions under one transactional id. Not `Clone`: one
/// transaction at a time, driven by one owner.
#[derive(Debug)]
pub struct TransactionalProducer {
    client: Client,
    transactional_id: String,
    producer_id: i64,
    epoch: i16,
    coordinator: std::sync::Mutex<Option<BrokerInfo>>,
    /// Next sequence number per partition (from 0 after InitProducerId).
    sequences: HashMap<TopicPartition, i32>,
    /// What the open transaction has added (empty: no transaction open).
    partitions: BTreeSet<TopicPartition>,
    groups: BTreeSet<String>,
}

impl TransactionalProducer {
    /// Takes `transactional_id` over: InitProducerId at its transaction
    /// coordinator, which aborts what a previous holder left open and
    /// fences it. `transaction_timeout` is how long the coordinator lets a
    /// transaction stay open before aborting it.
    pub async fn init(
        client: &Client,
        transactional_id: &str,
        transaction_timeout: Duration,
    ) -> Result<TransactionalProducer, Error> {
        let mut producer = TransactionalProducer {
            client: client.clone(),
            transactional_id: transactional_id.to_owned(),
            producer_id: -1,
            epoch: -1,
            coordinator: std::sync::Mutex::new(None),
            sequences: HashMap::new(),
            partitions: BTreeSet::new(),
            groups: BTreeSet::new(),
        };
        let timeout_ms = i32::try_from(transaction_timeout.as_millis()).unwrap_or(i32::MAX);
        let (id, epoch) = producer
            .on_coordinator("InitProducerId", |connection| async move {
                let version = connection.version_for::<InitProducerIdRequest>()?;
                let request = InitProducerIdRequest::default()
                    .with_transactional_id(Some(TransactionalId(str_bytes(transactional_id))))
                    .with_transaction_timeout_ms(timeout_ms)
                    .with_producer_id(ProducerId(-1))
                    .with_producer_epoch(-1);
                let response = connection.send_with_version(request, version).await?;
                Error::check_code(
                    "InitProducerId",
                    response.error_code,
                    format!("transactional id {transactional_id:?}"),
                )?;
                Ok((response.producer_id.0, response.producer_epoch))
            })
            .await?;
        producer.producer_id = id;
        producer.epoch = epoch;
        Ok(producer)
    }

    /// The producer id and epoch this producer writes with.
    pub fn producer(&self) -> (i64, i16) {
        (self.producer_id, self.epoch)
    }

    /// Whether a transaction is open (something was added since the last end).
    pub fn in_transaction(&self) -> bool {
        !self.partitions.is_empty() || !self.groups.is_empty()
    }

    fn context(&self) -> String {
        format!(
            "transactional id {:?} (producer {} epoch {})",
            self.transactional_id, self.producer_id, self.epoch
        )
    }

    /// A connection to the transaction coordinator (found once, again after
    /// a coordinator error).
    async fn coordinator(&self) -> Result<BrokerConnection, Error> {
        let cached = self.cached_coordinator().clone();
        if let Some(c) = cached {
            return self.client.connection_to(&c).await;
        }
        let found = find_transaction_coordinator(&self.client, &self.transactional_id).await?;
        let connection = self.client.connection_to(&found).await?;
        *self.cached_coordinator() = Some(found);
        Ok(connection)
    }

    fn cached_coordinator(&self) -> std::sync::MutexGuard<'_, Option<BrokerInfo>> {
        self.coordinator.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `op`'s request to the transaction coordinator with retries,
    /// finding the coordinator again after a coordinator error.
    async fn on_coordinator<T, F, Fut>(&self, what: &str, op: F) -> Result<T, Error>
    where
        F: Fn(BrokerConnection) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        self.client
            .retry(what, || async {
                let r = async { op(self.coordinator().await?).await }.await;
                if let Err(e) = &r
                    && crate::admin::is_coordinator_error(e)
                {
                    *self.cached_coordinator() = None;
                }
                r
            })
            .await
    }

    /// Appends `records` to `topic`/`partition` in the open transaction
    /// (beginning one if none is open); returns the first record's offset.
    /// A retry after an unanswered request cannot duplicate them: the
    /// broker deduplicates by producer id, epoch and sequence.
    pub async fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        records: &[ProducerRecord],
        options: &ProduceOptions,
    ) -> Result<i64, Error> {
        let (tp, stamp) = self.stamp_for(topic, partition).await?;
        let id = self.transactional_id.clone();
        let client = self.client.clone();
        let offset = client
            .retry("Produce", || async {
                let connection = client.leader_connection(topic, partition).await?;
                produce_as(
                    &connection,
                    topic,
                    partition,
                    records,
                    options,
                    Some((&id, stamp)),
                )
                .await
            })
            .await?;
        let count = i32::try_from(records.len()).unwrap_or(i32::MAX);
        self.sequences
            .insert(tp, stamp.base_sequence.wrapping_add(count) & i32::MAX);
        Ok(offset)
    }

    /// [`produce`](Self::produce) of a batch written record by record
    /// ([`BatchBuilder`]): stamped with this producer's id, epoch and the
    /// partition's next sequence, finished once, the same bytes sent again
    /// on a retry.
    pub async fn produce_built(
        &mut self,
        topic: &str,
        partition: i32,
        batch: BatchBuilder,
        options: &ProduceOptions,
    ) -> Result<i64, Error> {
        let (tp, stamp) = self.stamp_for(topic, partition).await?;
        let count = i32::try_from(batch.len()).unwrap_or(i32::MAX);
        let encoded = batch.finish(options.codec, Some(stamp));
        let encoded = &encoded;
        let id = self.transactional_id.clone();
        let id = id.as_str();
        let client = self.client.clone();
        let client = &client;
        let offset = client
            .retry("Produce", || async move {
                let connection = client.leader_connection(topic, partition).await?;
                let batch = match encoded {
                    Ok(b) => b.clone(),
                    Err(e) => {
                        let version = produce_version(&connection)?;
                        return Err(encode_error(version, topic, partition, e.clone()));
                    }
                };
                produce_encoded(&connection, topic, partition, batch, options, Some(id)).await
            })
            .await?;
        self.sequences
            .insert(tp, stamp.base_sequence.wrapping_add(count) & i32::MAX);
        Ok(offset)
    }

    /// The stamp of the next batch for `topic`/`partition`: this producer's
    /// id and epoch and the partition's next sequence, the partition added to
    /// the transaction first if it is not in it yet.
    async fn stamp_for(
        &mut self,
        topic: &str,
        partition: i32,
    ) -> Result<(TopicPartition, BatchProducer), Error> {
        let tp = TopicPartition::new(topic, partition);
        if !self.partitions.contains(&tp) {
            self.add_partition(&tp).await?;
        }
        let stamp = BatchProducer {
            producer_id: self.producer_id,
            producer_epoch: self.epoch,
            base_sequence: self.sequences.get(&tp).copied().unwrap_or(0),
            transactional: true,
        };
        Ok((tp, stamp))
    }

    async fn add_partition(&mut self, tp: &TopicPartition) -> Result<(), Error> {
        let context = self.context();
        let (id, pid, epoch) = (self.transactional_id.clone(), self.producer_id, self.epoch);
        self.on_coordinator("AddPartitionsToTxn", |connection| {
            let (context, id) = (context.clone(), id.clone());
            async move {
                let version = connection.version_for::<AddPartitionsToTxnRequest>()?;
                let request = AddPartitionsToTxnRequest::default()
                    .with_v3_and_below_transactional_id(TransactionalId(str_bytes(&id)))
                    .with_v3_and_below_producer_id(ProducerId(pid))
                    .with_v3_and_below_producer_epoch(epoch)
                    .with_v3_and_below_topics(vec![
                        AddPartitionsToTxnTopic::default()
                            .with_name(TopicName(str_bytes(&tp.topic)))
                            .with_partitions(vec![tp.partition]),
                    ]);
                let response = connection.send_with_version(request, version).await?;
                Error::check_code("AddPartitionsToTxn", response.error_code, context.clone())?;
                for topic in &response.results_by_topic_v3_and_below {
                    for p in &topic.results_by_partition {
                        Error::check_code(
                            "AddPartitionsToTxn",
                            p.partition_error_code,
                            format!("{context}, {}-{}", tp.topic, p.partition_index),
                        )?;
                    }
                }
                Ok(())
            }
        })
        .await?;
        self.partitions.insert(tp.clone());
        Ok(())
    }

    /// Commits `offsets` for the consumer group `group` in the open
    /// transaction (beginning one if none is open), as an admin client
    /// does: generation -1 and no member, which the group coordinator
    /// accepts only while the group has no members. They take effect when
    /// the transaction commits. Returns one result per partition.
    pub async fn commit_offsets(
        &mut self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<BTreeMap<TopicPartition, Result<(), Error>>, Error> {
        if !self.groups.contains(group) {
            self.add_offsets(group).await?;
        }
        let client = self.client.clone();
        let (id, pid, epoch) = (self.transactional_id.clone(), self.producer_id, self.epoch);
        let context = self.context();
        client
            .retry("TxnOffsetCommit", || async {
                let connection = client.coordinator_connection(group).await?;
                let version = connection.version_for::<TxnOffsetCommitRequest>()?;
                let mut by_topic: BTreeMap<&str, Vec<TxnOffsetCommitRequestPartition>> =
                    BTreeMap::new();
                for (tp, offset) in offsets {
                    by_topic.entry(&tp.topic).or_default().push(
                        TxnOffsetCommitRequestPartition::default()
                            .with_partition_index(tp.partition)
                            .with_committed_offset(*offset)
                            .with_committed_leader_epoch(-1)
                            .with_committed_metadata(Some(StrBytes::default())),
                    );
                }
                let request = TxnOffsetCommitRequest::default()
                    .with_transactional_id(TransactionalId(str_bytes(&id)))
                    .with_group_id(group_id(group))
                    .with_producer_id(ProducerId(pid))
                    .with_producer_epoch(epoch)
                    .with_generation_id(-1)
                    .with_member_id(StrBytes::default())
                    .with_topics(
                        by_topic
                            .into_iter()
                            .map(|(name, partitions)| {
                                TxnOffsetCommitRequestTopic::default()
                                    .with_name(TopicName(str_bytes(name)))
                                    .with_partitions(partitions)
                            })
                            .collect(),
                    );
                let response = connection.send_with_version(request, version).await?;
                let mut out = BTreeMap::new();
                for topic in &response.topics {
                    for p in &topic.partitions {
                        let tp = TopicPartition::new(topic.name.0.to_string(), p.partition_index);
                        let result = Error::check_code(
                            "TxnOffsetCommit",
                            p.error_code,
                            format!("{context}, group {group:?}, {tp}"),
                        );
                        // A fenced producer or a coordinator that moved fails
                        // the whole request.
                        if let Err(e) = &result
                            && (e.is_fenced()
                                || e.is_group_active()
                                || crate::admin::is_coordinator_error(e))
                        {
                            return client.note_coordinator(group, Err(e.clone()));
                        }
                        out.insert(tp, result);
                    }
                }
                Ok(out)
            })
            .await
    }

    async fn add_offsets(&mut self, group: &str) -> Result<(), Error> {
        let context = self.context();
        let (id, pid, epoch) = (self.transactional_id.clone(), self.producer_id, self.epoch);
        self.on_coordinator("AddOffsetsToTxn", |connection| {
            let (context, id) = (context.clone(), id.clone());
            async move {
                let version = connection.version_for::<AddOffsetsToTxnRequest>()?;
                let request = AddOffsetsToTxnRequest::default()
                    .with_transactional_id(TransactionalId(str_bytes(&id)))
                    .with_producer_id(ProducerId(pid))
                    .with_producer_epoch(epoch)
                    .with_group_id(group_id(group));
                let response = connection.send_with_version(request, version).await?;
                Error::check_code(
                    "AddOffsetsToTxn",
                    response.error_code,
                    format!("{context}, group {group:?}"),
                )
            }
        })
        .await?;
        self.groups.insert(group.to_owned());
        Ok(())
    }

    /// Commits the open transaction (nothing to do if none is open).
    pub async fn commit(&mut self) -> Result<(), Error> {
        self.end(true).await
    }

    /// Aborts the open transaction (nothing to do if none is open): its
    /// records are never visible to `read_committed` readers and its
    /// offsets never take effect.
    pub async fn abort(&mut self) -> Result<(), Error> {
        self.end(false).await
    }

    async fn end(&mut self, committed: bool) -> Result<(), Error> {
        if !self.in_transaction() {
            return Ok(());
        }
        let context = self.context();
        let (id, pid, epoch) = (self.transactional_id.clone(), self.producer_id, self.epoch);
        self.on_coordinator("EndTxn", |connection| {
            let (context, id) = (context.clone(), id.clone());
            async move {
                let version = connection.version_for::<EndTxnRequest>()?;
                let request = EndTxnRequest::default()
                    .with_transactional_id(TransactionalId(str_bytes(&id)))
                    .with_producer_id(ProducerId(pid))
                    .with_producer_epoch(epoch)
                    .with_committed(committed);
                let response = connection.send_with_version(request, version).await?;
                Error::check_code("EndTxn", response.error_code, context)
            }
        })
        .await?;
        self.partitions.clear();
        self.groups.clear();
        Ok(())
    }
}

/// FindCoordinator for a transactional id (one attempt; callers retry).
async fn find_transaction_coordinator(
    client: &Client,
    transactional_id: &str,
) -> Result<BrokerInfo, Error> {
    let connection = client.any_broker().await?;
    let version = connection.version_for::<FindCoordinatorRequest>()?;
    let context = format!("transactional id {transactional_id:?}");
    let request = FindCoordinatorRequest::default().with_key_type(TRANSACTION_KEY_TYPE);
    let (code, node, host, port) = if version >= 4 {
        let response = connection
            .send_with_version(
                request.with_coordinator_keys(vec![str_bytes(transactional_id)]),
                version,
            )
            .await?;
        let c = response
            .coordinators
            .first()
            .ok_or_else(|| Error::MalformedResponse {
                broker: connection.address().to_string(),
                api: "FindCoordinator",
                version,
                detail: format!("no coordinator returned for {context}"),
            })?;
        (c.error_code, c.node_id.0, c.host.to_string(), c.port)
    } else {
        let r = connection
            .send_with_version(request.with_key(str_bytes(transactional_id)), version)
            .await?;
        (r.error_code, r.node_id.0, r.host.to_string(), r.port)
    };
    Error::check_code("FindCoordinator", code, context)?;
    Ok(BrokerInfo {
        node_id: node,
        host,
        port,
        rack: None,
    })
}
