//! The data operations as [`Client`] methods: routed to partition leaders,
//! retried after metadata refreshes (see [`Client::retry`] for the rules).

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;

use super::common::IsolationLevel;
use super::fetch::{
    FetchOptions, FetchedBytes, FetchedPartition, RawFetch, fetch_bytes_on, fetch_on,
};
use super::offsets::{ListedOffset, OffsetSpec, list_offsets_on};
use super::produce::{ProduceOptions, encode_error, produce_encoded, produce_on, produce_version};
use super::reader::{PartitionReader, StartOffset};
use crate::Error;
use crate::client::{BrokerInfo, Client};
use crate::records::{BatchBuilder, ConsumerRecord, ProducerRecord, RecordRef};

impl Client {
    /// Looks up offsets of many partitions: one ListOffsets request per
    /// partition leader (leaders asked one after another), answers in the
    /// order of `queries`, each with its own result.
    ///
    /// Partitions whose answer is a retriable error (a moved leader, a
    /// failed connection) are asked again, after a metadata refresh and a
    /// backoff, until the retry deadline; then their last error is their
    /// answer. UNKNOWN_TOPIC_OR_PARTITION is retried only
    /// [`RetryPolicy::max_unknown_topic_retries`](crate::RetryPolicy) times.
    /// Under [`IsolationLevel::ReadCommitted`], [`OffsetSpec::Latest`] is
    /// the last stable offset.
    pub async fn list_offsets(
        &self,
        queries: &[(&str, i32, OffsetSpec)],
        isolation: IsolationLevel,
    ) -> Vec<ListedOffset> {
        let mut answers: Vec<Option<ListedOffset>> = queries.iter().map(|_| None).collect();
        let mut pending: Vec<usize> = (0..queries.len()).collect();
        let mut backoff = self.new_backoff();
        let deadline = backoff.deadline();
        let mut unknown_topic_rounds = 0u32;
        loop {
            // Pending queries by leader address (with the leader).
            let mut by_leader: BTreeMap<String, (BrokerInfo, Vec<usize>)> = BTreeMap::new();
            for &index in &pending {
                let Some(&(topic, partition, spec)) = queries.get(index) else {
                    continue;
                };
                match Self::within(deadline, self.leader(topic, partition)).await {
                    Ok(leader) => {
                        by_leader
                            .entry(leader.address())
                            .or_insert_with(|| (leader, Vec::new()))
                            .1
                            .push(index);
                    }
                    Err(error) => {
                        set_answer(&mut answers, index, topic, partition, spec, Err(error))
                    }
                }
            }
            for (leader, indexes) in by_leader.into_values() {
                let asked: Vec<(&str, i32, OffsetSpec)> = indexes
                    .iter()
                    .filter_map(|&i| queries.get(i).copied())
                    .collect();
                let outcome = match self.connection_to(&leader).await {
                    Ok(connection) => list_offsets_on(&connection, &asked, isolation).await,
                    Err(error) => Err(error),
                };
                match outcome {
                    Ok(listed) => {
                        for (index, answer) in indexes.iter().zip(listed) {
                            if let Some(slot) = answers.get_mut(*index) {
                                *slot = Some(answer);
                            }
                        }
                    }
                    Err(error) => {
                        for (&index, &(topic, partition, spec)) in indexes.iter().zip(&asked) {
                            let copy = error.clone();
                            set_answer(&mut answers, index, topic, partition, spec, Err(copy));
                        }
                    }
                }
            }

            // Keep the partitions worth asking again.
            let mut unknown_topic = false;
            pending.retain(|&index| {
                let Some(Some(answer)) = answers.get(index) else {
                    return false;
                };
                let Err(error) = &answer.result else {
                    return false;
                };
                self.observe_error(error);
                if error.kafka_error() == Some(ResponseError::UnknownTopicOrPartition) {
                    unknown_topic = true;
                }
                error.is_retriable()
            });
            if unknown_topic {
                unknown_topic_rounds += 1;
                if unknown_topic_rounds > self.retry_policy().max_unknown_topic_retries {
                    pending.retain(|&index| {
                        answers
                            .get(index)
                            .and_then(Option::as_ref)
                            .and_then(|a| a.result.as_ref().err())
                            .and_then(Error::kafka_error)
                            != Some(ResponseError::UnknownTopicOrPartition)
                    });
                }
            }
            if pending.is_empty() || !backoff.wait().await {
                break;
            }
            tracing::debug!(partitions = pending.len(), "retrying ListOffsets");
        }
        answers.into_iter().flatten().collect()
    }

    /// Fetches records of `topic`/`partition` from `offset` from its leader,
    /// retrying retriable errors.
    ///
    /// The broker answers as soon as it has any record at `offset` or later,
    /// or after `options.fetch_wait`. No fetch session is used (every request
    /// is a full fetch) and topics are named, not identified by id (Fetch
    /// v4–12). See [`FetchedPartition`] for what is returned.
    ///
    /// Errors: the partition's Kafka error as [`Error::Kafka`]; OFFSET_OUT_OF_RANGE
    /// (offset before the log start or after the log end) is not retried
    /// ([`Error::is_offset_out_of_range`]). Undecodable record data is
    /// [`Error::MalformedResponse`].
    pub async fn fetch(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        options: &FetchOptions,
    ) -> Result<FetchedPartition, Error> {
        self.retry("Fetch", || async move {
            let connection = self.leader_connection(topic, partition).await?;
            fetch_on(&connection, topic, partition, offset, options).await
        })
        .await
    }

    /// Appends `records` as one batch to `topic`/`partition` on its leader
    /// and returns the offset of the first record (the others follow it
    /// consecutively). The write is acknowledged by all in-sync replicas
    /// (`acks=all`).
    ///
    /// Errors: [`Error::Encode`] for records that cannot be encoded (none at
    /// all, a negative timestamp, a repeated header key); the partition's
    /// Kafka error as [`Error::Kafka`], with the broker's message in its
    /// context.
    ///
    /// Retriable errors (NOT_LEADER_OR_FOLLOWER, timeouts, closed
    /// connections) are retried after a metadata refresh. The producer is
    /// not idempotent, so a retry after a request that did reach the broker
    /// can append the records twice — harmless for compacted topics keyed
    /// by what they describe (like MirrorMaker's checkpoints), not for
    /// others.
    pub async fn produce(
        &self,
        topic: &str,
        partition: i32,
        records: &[ProducerRecord],
        options: &ProduceOptions,
    ) -> Result<i64, Error> {
        self.retry("Produce", || async move {
            let connection = self.leader_connection(topic, partition).await?;
            produce_on(&connection, topic, partition, records, options).await
        })
        .await
    }

    /// [`produce`](Self::produce) of a batch written record by record
    /// ([`BatchBuilder`]): it is finished (compressed with `options.codec`,
    /// its CRC computed) once, and the same bytes are sent again on a retry.
    pub async fn produce_built(
        &self,
        topic: &str,
        partition: i32,
        batch: BatchBuilder,
        options: &ProduceOptions,
    ) -> Result<i64, Error> {
        let encoded = batch.finish(options.codec, None);
        let encoded = &encoded;
        self.retry("Produce", || async move {
            let connection = self.leader_connection(topic, partition).await?;
            let batch = match encoded {
                Ok(b) => b.clone(),
                Err(e) => {
                    let version = produce_version(&connection)?;
                    return Err(encode_error(version, topic, partition, e.clone()));
                }
            };
            produce_encoded(&connection, topic, partition, batch, options, None).await
        })
        .await
    }

    /// Opens a [`PartitionReader`] on `topic`/`partition`: looks up the start
    /// and the end offset (the high watermark, or the last stable offset
    /// under read_committed) now.
    pub async fn partition_reader(
        &self,
        topic: &str,
        partition: i32,
        start: StartOffset,
        options: FetchOptions,
    ) -> Result<PartitionReader, Error> {
        self.retry("ListOffsets", || async move {
            let connection = self.leader_connection(topic, partition).await?;
            PartitionReader::open_on(&connection, topic, partition, start, options).await
        })
        .await
    }

    async fn reader_fetch(&self, reader: &PartitionReader) -> Result<FetchedPartition, Error> {
        self.fetch(
            reader.topic(),
            reader.partition(),
            reader.position(),
            reader.options(),
        )
        .await
    }
}

impl PartitionReader {
    /// [`read_on`](Self::read_on) through `client`: the next records before
    /// [`end`](Self::end), `Ok(None)` once it is reached.
    pub async fn read(&mut self, client: &Client) -> Result<Option<Vec<ConsumerRecord>>, Error> {
        if self.is_caught_up() {
            return Ok(None);
        }
        let fetched = client.reader_fetch(self).await?;
        Ok(Some(self.advance_to_end(fetched)))
    }

    /// [`read_visit_on`](Self::read_visit_on) through `client`, retrying as
    /// [`read`](Self::read) does: the next records before [`end`](Self::end)
    /// handed to `visit` borrowed, `Ok(None)` once the end is reached.
    pub async fn read_visit(
        &mut self,
        client: &Client,
        visit: impl FnMut(RecordRef<'_>),
    ) -> Result<Option<usize>, Error> {
        let fetched = self.fetch_ahead(client).await?;
        self.read_visit_fetched(client, fetched, visit).await
    }

    /// The Fetch [`read_visit`](Self::read_visit) would make next, made now
    /// and its records left unread, `Ok(None)` once the end is reached. With
    /// [`after`](Self::after) it lets a reader start the fetch after this one
    /// while this one's records are visited
    /// ([`read_visit_fetched`](Self::read_visit_fetched)).
    pub async fn fetch_ahead(&self, client: &Client) -> Result<Option<AheadFetch>, Error> {
        if self.is_caught_up() {
            return Ok(None);
        }
        let (topic, partition, offset) = (self.topic(), self.partition(), self.position());
        let options = self.options();
        let bytes = client
            .retry("Fetch", || async move {
                let connection = client.leader_connection(topic, partition).await?;
                fetch_bytes_on(&connection, topic, partition, offset, options).await
            })
            .await?;
        Ok(Some(AheadFetch {
            topic: topic.to_owned(),
            partition,
            offset,
            isolation: options.isolation,
            bytes,
        }))
    }

    /// This reader as [`read_visit_fetched`](Self::read_visit_fetched) of
    /// `fetched` will leave it if its records are read whole: where the fetch
    /// after it starts. Worked out from the batch headers alone, so the next
    /// fetch can be sent before this one's records are visited.
    pub fn after(&self, fetched: &AheadFetch) -> PartitionReader {
        let mut next = self.clone();
        next.skip_to_end(&fetched.bytes);
        next
    }

    /// [`read_visit`](Self::read_visit) with its Fetch made beforehand by
    /// [`fetch_ahead`](Self::fetch_ahead): used if it was made for this
    /// reader as it is now ([`AheadFetch::made_for`]), else (or if there is
    /// none) made again now.
    pub async fn read_visit_fetched(
        &mut self,
        client: &Client,
        fetched: Option<AheadFetch>,
        visit: impl FnMut(RecordRef<'_>),
    ) -> Result<Option<usize>, Error> {
        let fetched = match fetched {
            Some(f) if f.made_for(self) => Some(f),
            _ => self.fetch_ahead(client).await?,
        };
        match fetched {
            Some(f) => self.visit_to_end(&f.bytes, visit).map(Some),
            None => Ok(None),
        }
    }
    /// [`read_raw_on`](Self::read_raw_on) on the partition's leader through
    /// `client` (no retry): one Fetch, its records left undecoded.
    pub async fn read_raw(&mut self, client: &Client) -> Result<Option<RawFetch>, Error> {
        let connection = client
            .leader_connection(self.topic(), self.partition())
            .await?;
        self.read_raw_on(&connection).await
    }

    /// [`follow_on`](Self::follow_on) through `client`: whatever follows
    /// the position, waiting up to the fetch wait; may be empty.
    pub async fn follow(&mut self, client: &Client) -> Result<Vec<ConsumerRecord>, Error> {
        let fetched = client.reader_fetch(self).await?;
        Ok(self.advance(fetched))
    }

    /// [`follow`](Self::follow) through `client`, also returning the
    /// partition's high watermark from the same fetch, so a caller can tell
    /// whether more is already there.
    pub async fn follow_with_watermark(
        &mut self,
        client: &Client,
    ) -> Result<(Vec<ConsumerRecord>, i64), Error> {
        let fetched = client.reader_fetch(self).await?;
        let high_watermark = fetched.high_watermark;
        Ok((self.advance(fetched), high_watermark))
    }
}

fn set_answer(
    answers: &mut [Option<ListedOffset>],
    index: usize,
    topic: &str,
    partition: i32,
    spec: OffsetSpec,
    result: Result<super::PartitionOffset, Error>,
) {
    if let Some(slot) = answers.get_mut(index) {
        *slot = Some(ListedOffset {
            topic: topic.to_string(),
            partition,
            spec,
            result,
        });
    }
}

/// One Fetch of a [`PartitionReader`] made ahead of reading it
/// ([`PartitionReader::fetch_ahead`]): the response's bytes, its records not
/// read yet, and the partition, isolation level and offset it was made for.
#[derive(Debug)]
pub struct AheadFetch {
    topic: String,
    partition: i32,
    offset: i64,
    isolation: IsolationLevel,
    bytes: FetchedBytes,
}

impl AheadFetch {
    /// Whether this is the Fetch `reader` would make now: the same partition,
    /// isolation level and position, and the reader not at its end.
    pub fn made_for(&self, reader: &PartitionReader) -> bool {
        self.topic == reader.topic()
            && self.partition == reader.partition()
            && self.isolation == reader.options().isolation
            && self.offset == reader.position()
            && !reader.is_caught_up()
    }
}
