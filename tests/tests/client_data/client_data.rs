//! kafka-lite's data operations (through `Client`) against a real broker: ListOffsets, Fetch,
//! Produce and PartitionReader, and interoperability with Kafka's own Java
//! producer and consumer for every compression codec and for transactions;
//! one module per subject, the shared helpers here.

mod java_interop;
mod list_offsets;
mod produce_fetch;
mod reader;
mod transactions;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use e2e::{clusters, now_ms, unique_name};
use kafka_lite::records::{BatchBuilder, Codec, ConsumerRecord, Header, ProducerRecord};
use kafka_lite::{
    Client, ConnectionConfig, CreateTopicOutcome, Error, FetchOptions, FetchedPartition,
    IsolationLevel, OffsetSpec, PartitionReader, ProduceOptions, StartOffset,
};
use kafka_protocol::error::ResponseError;

/// The source cluster's plaintext bootstrap address (its only broker).
fn bootstrap() -> &'static str {
    &clusters().source().bootstrap.plaintext
}

async fn connect() -> Client {
    let config = ConnectionConfig {
        client_id: "e2e-client-data".into(),
        request_timeout: Duration::from_secs(40),
        ..ConnectionConfig::default()
    };
    Client::connect(vec![bootstrap().to_string()], config)
        .await
        .expect("connect to the source cluster")
}

/// Creates a one-partition topic named after `prefix`.
async fn create_topic(client: &Client, prefix: &str) -> String {
    let topic = unique_name(prefix);
    let outcome = client
        .create_topic(&topic, 1, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("create topic {topic}: {e}"));
    assert_eq!(outcome, CreateTopicOutcome::Created);
    topic
}

fn record(key: &str, value: &str, timestamp: i64) -> ProducerRecord {
    ProducerRecord {
        timestamp,
        key: Some(Bytes::copy_from_slice(key.as_bytes())),
        value: Some(Bytes::copy_from_slice(value.as_bytes())),
        headers: Vec::new(),
    }
}

/// `n` records `key-<first+i>` / `value-<first+i>`.
fn numbered(first: usize, n: usize) -> Vec<ProducerRecord> {
    let ts = now_ms();
    (first..first + n)
        .map(|i| record(&format!("key-{i}"), &format!("value-{i}"), ts))
        .collect()
}

async fn produce(client: &Client, topic: &str, records: &[ProducerRecord], codec: Codec) -> i64 {
    let options = ProduceOptions {
        codec,
        ..ProduceOptions::default()
    };
    client
        .produce(topic, 0, records, &options)
        .await
        .unwrap_or_else(|e| panic!("produce to {topic}: {e}"))
}

async fn fetch(
    client: &Client,
    topic: &str,
    offset: i64,
    options: FetchOptions,
) -> FetchedPartition {
    client
        .fetch(topic, 0, offset, &options)
        .await
        .unwrap_or_else(|e| panic!("fetch {topic} at {offset}: {e}"))
}

fn text(bytes: &Option<Bytes>) -> String {
    bytes
        .as_ref()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_else(|| "<null>".into())
}

fn values(records: &[ConsumerRecord]) -> Vec<String> {
    records.iter().map(|r| text(&r.value)).collect()
}

fn offsets(records: &[ConsumerRecord]) -> Vec<i64> {
    records.iter().map(|r| r.offset).collect()
}

/// Fetch options reading only committed records.
fn read_committed() -> FetchOptions {
    FetchOptions {
        isolation: IsolationLevel::ReadCommitted,
        ..FetchOptions::default()
    }
}

/// A reader of partition 0 of `topic` from its earliest offset.
async fn earliest_reader(client: &Client, topic: &str, options: FetchOptions) -> PartitionReader {
    client
        .partition_reader(topic, 0, StartOffset::Earliest, options)
        .await
        .expect("open")
}

/// Every record up to the end the reader captured when it opened.
async fn read_to_end(client: &Client, reader: &mut PartitionReader) -> Vec<ConsumerRecord> {
    let mut read = Vec::new();
    while let Some(records) = reader.read(client).await.expect("read") {
        read.extend(records);
    }
    read
}

/// The codecs of the batches stored in partition 0, as written (read with
/// plain Fetch requests, bypassing `fetch_on`).
async fn stored_codecs(client: &Client, topic: &str) -> Vec<Codec> {
    e2e::stored::stored_batches(client, topic, 0)
        .await
        .iter()
        .map(|b| b.codec)
        .collect()
}

/// `records` (no headers) written record by record into one batch.
fn built(records: &[ProducerRecord]) -> BatchBuilder {
    let mut batch = BatchBuilder::default();
    for r in records {
        batch
            .push(r.timestamp, r.key.as_deref(), r.value.as_deref())
            .unwrap();
    }
    batch
}

async fn produce_built(client: &Client, topic: &str, batch: BatchBuilder, codec: Codec) -> i64 {
    let options = ProduceOptions {
        codec,
        ..ProduceOptions::default()
    };
    client
        .produce_built(topic, 0, batch, &options)
        .await
        .unwrap_or_else(|e| panic!("produce to {topic}: {e}"))
}
