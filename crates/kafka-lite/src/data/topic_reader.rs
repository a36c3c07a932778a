//! [`TopicReader`]: every partition of one topic, read to the end each had
//! when reading began, then followed, with one Fetch per partition leader.
//!
//! A broker serves the requests of one connection one at a time, so following
//! many partitions with one long-polling fetch each would queue the fetches
//! behind each other. Like a consumer, a [`TopicReader`] asks each leader for
//! all the partitions it leads in one request, and asks the leaders at once.

use std::collections::BTreeMap;

use tokio::task::JoinSet;

use super::fetch::{FetchOptions, FetchedPartition, fetch_partitions_on};
use super::offsets::OffsetSpec;
use super::reader::{PartitionReader, StartOffset};
use crate::Error;
use crate::client::Client;
use crate::records::ConsumerRecord;

/// Records one partition gave in a [`TopicReader::poll`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRecords {
    /// The partition.
    pub partition: i32,
    /// Its records, in offset order.
    pub records: Vec<ConsumerRecord>,
}

/// What one [`TopicReader::poll`] gave.
#[derive(Debug, Clone, Default)]
pub struct TopicPoll {
    /// The partitions that gave records, by partition.
    pub records: Vec<PartitionRecords>,
    /// The partitions whose fetch failed with an error that is not
    /// retriable (OFFSET_OUT_OF_RANGE, an authorization failure); their
    /// positions did not move.
    pub failed: Vec<(i32, Error)>,
}

/// Reads all partitions of a topic: first to the end offsets captured when it
/// was opened ([`is_caught_up`](Self::is_caught_up)), then whatever follows.
#[derive(Debug, Clone)]
pub struct TopicReader {
    topic: String,
    options: FetchOptions,
    readers: BTreeMap<i32, PartitionReader>,
    turn: usize,
}

impl Client {
    /// Opens a [`TopicReader`] on every partition `topic` has now, each at
    /// `start`, with its end offset (the high watermark, or the last stable
    /// offset under read_committed) looked up now.
    ///
    /// Errors: the topic's error from Metadata (UNKNOWN_TOPIC_OR_PARTITION,
    /// TOPIC_AUTHORIZATION_FAILED) or the first partition's ListOffsets error.
    pub async fn topic_reader(
        &self,
        topic: &str,
        start: StartOffset,
        options: FetchOptions,
    ) -> Result<TopicReader, Error> {
        let metadata = self
            .retry(
                "Metadata",
                || async move { self.topic_metadata(topic).await },
            )
            .await?;
        if let Some(error) = metadata.error {
            return Err(Error::Kafka {
                api: "Metadata",
                error,
                context: format!("topic {topic}"),
            });
        }
        let partitions: Vec<i32> = metadata.partitions.keys().copied().collect();
        let mut queries: Vec<(&str, i32, OffsetSpec)> = Vec::new();
        for &p in &partitions {
            queries.push((topic, p, OffsetSpec::Latest));
            if start == StartOffset::Earliest {
                queries.push((topic, p, OffsetSpec::Earliest));
            }
        }
        let answers = self.list_offsets(&queries, options.isolation).await;
        let mut latest = BTreeMap::new();
        let mut earliest = BTreeMap::new();
        for answer in answers {
            let offset = answer.result?.offset.unwrap_or(0);
            match answer.spec {
                OffsetSpec::Latest => latest.insert(answer.partition, offset),
                _ => earliest.insert(answer.partition, offset),
            };
        }
        let mut readers = BTreeMap::new();
        for p in partitions {
            let end = latest.get(&p).copied().unwrap_or(0);
            let position = match start {
                StartOffset::Earliest => earliest.get(&p).copied().unwrap_or(0),
                StartOffset::Latest => end,
                StartOffset::Offset(offset) => offset,
            };
            readers.insert(p, PartitionReader::new(topic, p, position, end, options));
        }
        Ok(TopicReader {
            topic: topic.to_owned(),
            options,
            readers,
            turn: 0,
        })
    }
}

impl TopicReader {
    /// The topic read.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The partition readers, by partition (positions and captured ends).
    pub fn partitions(&self) -> impl Iterator<Item = &PartitionReader> {
        self.readers.values()
    }

    /// Whether every partition has been read to its captured end.
    pub fn is_caught_up(&self) -> bool {
        self.readers.values().all(PartitionReader::is_caught_up)
    }

    /// Offsets left before the captured ends, over all partitions.
    pub fn remaining(&self) -> i64 {
        self.readers
            .values()
            .map(|r| r.end().saturating_sub(r.position()).max(0))
            .sum()
    }

    /// One fetch per partition leader, all at once: until
    /// [`is_caught_up`](Self::is_caught_up), only the partitions short of
    /// their end, up to it; afterwards every partition, waiting up to the
    /// fetch wait for new records.
    ///
    /// A partition whose fetch failed with a retriable error (moved leader,
    /// lost connection) is skipped this time, after dropping the stale
    /// routing; one that failed otherwise is listed in [`TopicPoll::failed`].
    /// `Err` when every partition asked failed (nothing moved), so a caller
    /// facing a cluster that is down backs off instead of spinning.
    pub async fn poll(&mut self, client: &Client) -> Result<TopicPoll, Error> {
        let catching_up = !self.is_caught_up();
        let wanted: Vec<(i32, i64)> = self
            .readers
            .values()
            .filter(|r| !catching_up || !r.is_caught_up())
            .map(|r| (r.partition(), r.position()))
            .collect();
        // The broker fills a response in the order asked: start elsewhere
        // each time, so one busy partition cannot starve the others.
        let mut wanted = wanted;
        if !wanted.is_empty() {
            let turn = self.turn % wanted.len();
            wanted.rotate_left(turn);
            self.turn = self.turn.wrapping_add(1);
        }
        let asked = wanted.len();
        let mut by_leader: BTreeMap<String, (crate::BrokerInfo, Vec<(i32, i64)>)> = BTreeMap::new();
        let mut failures: Vec<Error> = Vec::new();
        for (partition, offset) in wanted {
            match client.leader(&self.topic, partition).await {
                Ok(leader) => by_leader
                    .entry(leader.address())
                    .or_insert_with(|| (leader, Vec::new()))
                    .1
                    .push((partition, offset)),
                Err(e) => failures.push(e),
            }
        }
        let mut fetches = JoinSet::new();
        for (leader, partitions) in by_leader.into_values() {
            let connection = match client.connection_to(&leader).await {
                Ok(c) => c,
                Err(e) => {
                    client.observe_error(&e);
                    failures.extend(partitions.iter().map(|_| e.clone()));
                    continue;
                }
            };
            let topic = self.topic.clone();
            let options = self.options;
            fetches.spawn(async move {
                let answers = fetch_partitions_on(&connection, &topic, &partitions, &options).await;
                (partitions, answers)
            });
        }
        let mut out = TopicPoll::default();
        while let Some(joined) = fetches.join_next().await {
            let Ok((partitions, answers)) = joined else {
                continue;
            };
            let answers: Vec<(i32, Result<FetchedPartition, Error>)> = match answers {
                Ok(answers) => answers,
                Err(e) => partitions
                    .iter()
                    .map(|&(p, _)| (p, Err(e.clone())))
                    .collect(),
            };
            for (partition, answer) in answers {
                match answer {
                    Ok(fetched) => {
                        let Some(reader) = self.readers.get_mut(&partition) else {
                            continue;
                        };
                        let records = if catching_up {
                            reader.advance_to_end(fetched)
                        } else {
                            reader.advance(fetched)
                        };
                        if !records.is_empty() {
                            out.records.push(PartitionRecords { partition, records });
                        }
                    }
                    Err(e) => {
                        client.observe_error(&e);
                        if !e.is_retriable() {
                            out.failed.push((partition, e.clone()));
                        }
                        failures.push(e);
                    }
                }
            }
        }
        if asked > 0
            && failures.len() >= asked
            && let Some(e) = failures.into_iter().next()
        {
            return Err(e);
        }
        out.records.sort_by_key(|p| p.partition);
        Ok(out)
    }
}
