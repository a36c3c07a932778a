//! kafka-lite's data operations (through `Client`) against a real broker: ListOffsets, Fetch,
//! Produce and PartitionReader, and interoperability with Kafka's own Java
//! producer and consumer for every compression codec and for transactions.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use e2e::{clusters, unique_name};
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

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
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

// ---------------------------------------------------------------- produce + fetch

async fn round_trip(codec: Codec) {
    let client = connect().await;
    let topic = create_topic(&client, &format!("data-rt-{}", codec.name())).await;
    let mut sent = numbered(0, 20);
    sent[3].headers = vec![
        Header::new("h1", "v1"),
        Header {
            key: "h2".into(),
            value: None,
        },
    ];
    sent[4].key = None;
    sent[5].value = None;
    let base = produce(&client, &topic, &sent, codec).await;
    assert_eq!(base, 0);

    let fetched = fetch(&client, &topic, 0, FetchOptions::default()).await;
    assert_eq!(offsets(&fetched.records), (0..20).collect::<Vec<_>>());
    for (got, want) in fetched.records.iter().zip(&sent) {
        assert_eq!(got.key, want.key);
        assert_eq!(got.value, want.value);
        assert_eq!(got.headers, want.headers);
        assert_eq!(got.timestamp, want.timestamp);
    }
    assert_eq!(fetched.high_watermark, 20);
    assert_eq!(fetched.next_offset, 20);
    assert_eq!(fetched.log_start_offset, 0);
    assert_eq!(stored_codecs(&client, &topic).await, vec![codec]);
}

#[tokio::test]
async fn produce_then_fetch_round_trips_uncompressed() {
    round_trip(Codec::None).await;
}

#[tokio::test]
async fn produce_then_fetch_round_trips_gzip() {
    round_trip(Codec::Gzip).await;
}

#[tokio::test]
async fn produce_then_fetch_round_trips_snappy() {
    round_trip(Codec::Snappy).await;
}

#[tokio::test]
async fn produce_then_fetch_round_trips_lz4() {
    round_trip(Codec::Lz4).await;
}

#[tokio::test]
async fn produce_then_fetch_round_trips_zstd() {
    round_trip(Codec::Zstd).await;
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

#[tokio::test]
async fn a_batch_built_record_by_record_round_trips_with_every_codec() {
    let client = connect().await;
    for codec in Codec::ALL {
        let topic = create_topic(&client, &format!("data-built-{}", codec.name())).await;
        let mut sent = numbered(0, 20);
        sent[4].key = None;
        sent[5].value = None;
        let base = produce_built(&client, &topic, built(&sent[..12]), codec).await;
        assert_eq!(base, 0, "{codec}");
        let base = produce_built(&client, &topic, built(&sent[12..]), codec).await;
        assert_eq!(base, 12, "{codec}");
        let fetched = fetch(&client, &topic, 0, FetchOptions::default()).await;
        assert_eq!(offsets(&fetched.records), (0..20).collect::<Vec<_>>());
        for (got, want) in fetched.records.iter().zip(&sent) {
            assert_eq!(got.key, want.key, "{codec}");
            assert_eq!(got.value, want.value, "{codec}");
            assert_eq!(got.timestamp, want.timestamp, "{codec}");
        }
        assert_eq!(stored_codecs(&client, &topic).await, vec![codec, codec]);
    }
}

#[tokio::test]
async fn produce_returns_consecutive_base_offsets() {
    let client = connect().await;
    let topic = create_topic(&client, "data-base").await;
    assert_eq!(
        produce(&client, &topic, &numbered(0, 3), Codec::None).await,
        0
    );
    assert_eq!(
        produce(&client, &topic, &numbered(3, 4), Codec::Lz4).await,
        3
    );
    assert_eq!(
        produce(&client, &topic, &numbered(7, 1), Codec::Gzip).await,
        7
    );
}

#[tokio::test]
async fn produce_to_a_missing_partition_names_the_kafka_error_and_partition() {
    let client = connect().await;
    let topic = create_topic(&client, "data-nopart").await;
    // Wait until the topic exists so the error is about the partition.
    produce(&client, &topic, &numbered(0, 1), Codec::None).await;
    let err = client
        .produce(&topic, 7, &numbered(0, 1), &ProduceOptions::default())
        .await
        .expect_err("partition 7 does not exist");
    assert_eq!(
        err.kafka_error(),
        Some(ResponseError::UnknownTopicOrPartition),
        "{err}"
    );
    assert!(err.to_string().contains(&format!("{topic}-7")), "{err}");
}

#[tokio::test]
async fn produce_of_no_records_is_an_encode_error() {
    let client = connect().await;
    let topic = create_topic(&client, "data-empty-produce").await;
    let err = client
        .produce(&topic, 0, &[], &ProduceOptions::default())
        .await
        .expect_err("empty batch");
    assert!(matches!(err, Error::Encode { .. }), "{err}");
}

#[tokio::test]
async fn fetch_returns_several_batches_in_one_response() {
    let client = connect().await;
    let topic = create_topic(&client, "data-multi").await;
    produce(&client, &topic, &numbered(0, 3), Codec::None).await;
    produce(&client, &topic, &numbered(3, 3), Codec::Zstd).await;
    produce(&client, &topic, &numbered(6, 3), Codec::Snappy).await;
    let fetched = fetch(&client, &topic, 0, FetchOptions::default()).await;
    assert_eq!(offsets(&fetched.records), (0..9).collect::<Vec<_>>());
    assert_eq!(fetched.next_offset, 9);
}

#[tokio::test]
async fn fetch_drops_records_before_the_requested_offset_in_the_first_batch() {
    let client = connect().await;
    let topic = create_topic(&client, "data-mid").await;
    produce(&client, &topic, &numbered(0, 5), Codec::Gzip).await;
    let fetched = fetch(&client, &topic, 2, FetchOptions::default()).await;
    assert_eq!(offsets(&fetched.records), [2, 3, 4]);
    assert_eq!(values(&fetched.records), ["value-2", "value-3", "value-4"]);
    assert_eq!(fetched.next_offset, 5);
}

#[tokio::test]
async fn a_small_fetch_limit_returns_whole_batches_and_resumes_after_them() {
    let client = connect().await;
    let topic = create_topic(&client, "data-limit").await;
    let big = |first: usize| -> Vec<ProducerRecord> {
        (first..first + 4)
            .map(|i| record(&format!("key-{i}"), &"x".repeat(300), now_ms()))
            .collect()
    };
    produce(&client, &topic, &big(0), Codec::None).await;
    produce(&client, &topic, &big(4), Codec::None).await;
    produce(&client, &topic, &big(8), Codec::None).await;
    // Smaller than one batch: the broker still returns the first batch whole
    // and at most a cut-off part of the next one.
    let small = FetchOptions {
        max_bytes: 1500,
        ..FetchOptions::default()
    };
    let first = fetch(&client, &topic, 0, small).await;
    assert_eq!(offsets(&first.records), [0, 1, 2, 3]);
    assert_eq!(first.next_offset, 4);
    let second = fetch(&client, &topic, first.next_offset, small).await;
    assert_eq!(offsets(&second.records), [4, 5, 6, 7]);
}

#[tokio::test]
async fn fetch_at_the_end_waits_and_returns_nothing() {
    let client = connect().await;
    let topic = create_topic(&client, "data-end").await;
    produce(&client, &topic, &numbered(0, 2), Codec::None).await;
    let options = FetchOptions {
        fetch_wait: Duration::from_millis(300),
        ..FetchOptions::default()
    };
    let started = Instant::now();
    let fetched = fetch(&client, &topic, 2, options).await;
    assert!(fetched.records.is_empty());
    assert_eq!(fetched.next_offset, 2);
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn fetch_past_the_log_end_is_offset_out_of_range() {
    let client = connect().await;
    let topic = create_topic(&client, "data-oor").await;
    produce(&client, &topic, &numbered(0, 3), Codec::None).await;
    let err = client
        .fetch(&topic, 0, 100, &FetchOptions::default())
        .await
        .expect_err("offset 100 is past the end");
    assert!(err.is_offset_out_of_range(), "{err}");
    assert!(!err.is_retriable());
    assert!(err.to_string().contains("offset 100"), "{err}");
}

// ---------------------------------------------------------------- list_offsets

#[tokio::test]
async fn list_offsets_gives_earliest_latest_and_by_timestamp() {
    let client = connect().await;
    let topic = create_topic(&client, "data-lo").await;
    let t0 = now_ms() - 60_000;
    let sent = [
        record("a", "1", t0),
        record("b", "2", t0 + 1_000),
        record("c", "3", t0 + 2_000),
    ];
    produce(&client, &topic, &sent, Codec::None).await;
    let queries = [
        (topic.as_str(), 0, OffsetSpec::Earliest),
        (topic.as_str(), 0, OffsetSpec::Latest),
        (topic.as_str(), 0, OffsetSpec::Timestamp(t0 + 500)),
        (topic.as_str(), 0, OffsetSpec::Timestamp(t0 + 1_000)),
        (topic.as_str(), 0, OffsetSpec::Timestamp(t0 + 10_000)),
        (topic.as_str(), 0, OffsetSpec::MaxTimestamp),
    ];
    let answers = client
        .list_offsets(&queries, IsolationLevel::ReadUncommitted)
        .await;
    let got: Vec<_> = answers
        .into_iter()
        .map(|a| {
            let o = a.result.expect("partition answer");
            (a.spec, o.offset, o.timestamp)
        })
        .collect();
    assert_eq!(
        got,
        [
            (OffsetSpec::Earliest, Some(0), None),
            (OffsetSpec::Latest, Some(3), None),
            (OffsetSpec::Timestamp(t0 + 500), Some(1), Some(t0 + 1_000)),
            (OffsetSpec::Timestamp(t0 + 1_000), Some(1), Some(t0 + 1_000)),
            (OffsetSpec::Timestamp(t0 + 10_000), None, None),
            (OffsetSpec::MaxTimestamp, Some(2), Some(t0 + 2_000)),
        ]
    );
}

#[tokio::test]
async fn list_offsets_of_an_unknown_partition_is_a_per_partition_error() {
    let client = connect().await;
    let topic = create_topic(&client, "data-lo-err").await;
    produce(&client, &topic, &numbered(0, 1), Codec::None).await;
    let queries = [
        (topic.as_str(), 0, OffsetSpec::Latest),
        (topic.as_str(), 9, OffsetSpec::Latest),
    ];
    let answers = client
        .list_offsets(&queries, IsolationLevel::ReadUncommitted)
        .await;
    assert_eq!(
        answers[0].result.as_ref().expect("partition 0").offset,
        Some(1)
    );
    let err = answers[1]
        .result
        .as_ref()
        .expect_err("partition 9 does not exist");
    assert!(err.kafka_error().is_some(), "{err}");
    assert!(err.to_string().contains(&format!("{topic}-9")), "{err}");
}

#[tokio::test]
async fn list_offsets_asks_each_leader_once_for_many_partitions() {
    let client = connect().await;
    let topic = unique_name("data-lo-batch");
    client
        .create_topic(&topic, 3, 1, &[])
        .await
        .expect("create topic");
    let queries: Vec<(&str, i32, OffsetSpec)> = (0..3)
        .flat_map(|p| {
            [
                (topic.as_str(), p, OffsetSpec::Earliest),
                (topic.as_str(), p, OffsetSpec::Latest),
            ]
        })
        .collect();
    // Warm the metadata cache (and wait for the new partitions' leader).
    let warm = client
        .list_offsets(&queries, IsolationLevel::ReadUncommitted)
        .await;
    assert!(warm.iter().all(|a| a.result.is_ok()), "{warm:?}");

    let before = client.requests_sent();
    let answers = client
        .list_offsets(&queries, IsolationLevel::ReadUncommitted)
        .await;
    // One broker: one request with the earliest offsets, one with the latest
    // (a partition may appear once per request).
    assert_eq!(client.requests_sent() - before, 2);
    let got: Vec<_> = answers
        .iter()
        .map(|a| {
            (
                a.partition,
                a.spec,
                a.result.as_ref().expect("answer").offset,
            )
        })
        .collect();
    let want: Vec<_> = (0..3)
        .flat_map(|p| {
            [
                (p, OffsetSpec::Earliest, Some(0)),
                (p, OffsetSpec::Latest, Some(0)),
            ]
        })
        .collect();
    assert_eq!(got, want);
}

// ---------------------------------------------------------------- PartitionReader

#[tokio::test]
async fn reading_an_empty_partition_ends_at_once() {
    let client = connect().await;
    let topic = create_topic(&client, "data-rd-empty").await;
    let mut reader = earliest_reader(&client, &topic, FetchOptions::default()).await;
    assert_eq!((reader.position(), reader.end()), (0, 0));
    let started = Instant::now();
    assert!(reader.read(&client).await.expect("read").is_none());
    assert!(started.elapsed() < Duration::from_millis(100));
}

#[tokio::test]
async fn reader_reads_to_the_end_captured_at_start_then_follows() {
    let client = connect().await;
    let topic = create_topic(&client, "data-rd").await;
    for batch in 0..5 {
        produce(
            &client,
            &topic,
            &numbered(batch * 10, 10),
            Codec::ALL[batch],
        )
        .await;
    }
    let options = FetchOptions {
        max_bytes: 600, // a few batches per fetch
        ..FetchOptions::default()
    };
    let mut reader = earliest_reader(&client, &topic, options).await;
    assert_eq!(reader.end(), 50);
    // Appended after opening: not part of the initial read.
    produce(&client, &topic, &numbered(50, 5), Codec::None).await;

    let mut read = Vec::new();
    let mut fetches = 0;
    while let Some(records) = reader.read(&client).await.expect("read") {
        read.extend(records);
        fetches += 1;
        assert!(fetches < 100, "no progress at {}", reader.position());
    }
    assert!(fetches > 1, "expected several fetches, got {fetches}");
    assert_eq!(offsets(&read), (0..50).collect::<Vec<_>>());
    assert_eq!(reader.position(), 50);

    let mut followed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while followed.len() < 5 && Instant::now() < deadline {
        followed.extend(reader.follow(&client).await.expect("follow"));
    }
    assert_eq!(offsets(&followed), (50..55).collect::<Vec<_>>());
}

#[tokio::test]
async fn reader_from_latest_reads_nothing_and_follows_new_records() {
    let client = connect().await;
    let topic = create_topic(&client, "data-rd-latest").await;
    produce(&client, &topic, &numbered(0, 3), Codec::None).await;
    let mut reader = client
        .partition_reader(&topic, 0, StartOffset::Latest, FetchOptions::default())
        .await
        .expect("open");
    assert!(reader.read(&client).await.expect("read").is_none());
    produce(&client, &topic, &numbered(3, 2), Codec::None).await;
    let followed = reader.follow(&client).await.expect("follow");
    assert_eq!(offsets(&followed), [3, 4]);
}

#[tokio::test]
async fn reader_moves_past_offsets_removed_by_compaction() {
    let client = connect().await;
    let topic = unique_name("data-compacted");
    let configs: Vec<(String, String)> = [
        ("cleanup.policy", "compact"),
        ("segment.ms", "100"),
        ("min.cleanable.dirty.ratio", "0.01"),
        ("min.compaction.lag.ms", "0"),
        ("delete.retention.ms", "100"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    client
        .create_topic(&topic, 1, 1, &configs)
        .await
        .expect("create topic");
    // Offsets 0..10: keys k0..k4 twice; the first five become garbage.
    let ts = now_ms();
    let round = |n: usize| -> Vec<ProducerRecord> {
        (0..5)
            .map(|k| record(&format!("k{k}"), &format!("v{k}-{n}"), ts))
            .collect()
    };
    produce(&client, &topic, &round(0), Codec::None).await;
    produce(&client, &topic, &round(1), Codec::Lz4).await;
    // Roll the segment so the cleaner may compact the first one, and keep
    // rolling until it has: the log cleaner wakes every 15 s by default.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut filler = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        produce(
            &client,
            &topic,
            &[record("filler", &filler.to_string(), now_ms())],
            Codec::None,
        )
        .await;
        filler += 1;
        let first = fetch(&client, &topic, 0, FetchOptions::default()).await;
        if first.records.first().is_some_and(|r| r.offset >= 5) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the log cleaner did not compact {topic} in 90 s"
        );
    }

    let mut reader = earliest_reader(&client, &topic, FetchOptions::default()).await;
    assert_eq!(reader.position(), 0, "compaction keeps the log start");
    let read = read_to_end(&client, &mut reader).await;
    let data: Vec<(String, String)> = read
        .iter()
        .filter(|r| text(&r.key) != "filler")
        .map(|r| (text(&r.key), text(&r.value)))
        .collect();
    let want: Vec<(String, String)> = (0..5)
        .map(|k| (format!("k{k}"), format!("v{k}-1")))
        .collect();
    assert_eq!(data, want);
    assert!(read.iter().all(|r| r.offset >= 5));
    assert_eq!(reader.position(), reader.end());
}

// ---------------------------------------------------------------- Java interop

/// Runs a Kafka CLI tool, feeding `stdin`, and returns its stdout.
fn run_tool(tool: &str, args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(clusters().tool(tool))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {tool}: {e}"));
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).expect("write tool stdin");
    }
    let output = child.wait_with_output().expect("wait for tool");
    assert!(
        output.status.success(),
        "{tool} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

async fn java_consumer_reads_what_we_produce(codec: Codec) {
    let client = connect().await;
    let topic = create_topic(&client, &format!("data-j-in-{}", codec.name())).await;
    // The first half as encoded from `ProducerRecord`s, the second written
    // record by record (`BatchBuilder`).
    produce(&client, &topic, &numbered(0, 5), codec).await;
    produce_built(&client, &topic, built(&numbered(5, 5)), codec).await;
    assert_eq!(stored_codecs(&client, &topic).await, vec![codec, codec]);
    let topic2 = topic.clone();
    let out = tokio::task::spawn_blocking(move || {
        run_tool(
            "kafka-console-consumer",
            &[
                "--bootstrap-server",
                bootstrap(),
                "--topic",
                &topic2,
                "--from-beginning",
                "--max-messages",
                "10",
                "--timeout-ms",
                "30000",
                "--property",
                "print.key=true",
                "--property",
                "key.separator=:",
            ],
            "",
        )
    })
    .await
    .expect("tool task");
    let lines: Vec<&str> = out.lines().collect();
    let want: Vec<String> = (0..10).map(|i| format!("key-{i}:value-{i}")).collect();
    assert_eq!(lines, want);
}

#[tokio::test]
async fn java_consumer_reads_our_uncompressed_records() {
    java_consumer_reads_what_we_produce(Codec::None).await;
}

#[tokio::test]
async fn java_consumer_reads_our_gzip_records() {
    java_consumer_reads_what_we_produce(Codec::Gzip).await;
}

#[tokio::test]
async fn java_consumer_reads_our_snappy_records() {
    java_consumer_reads_what_we_produce(Codec::Snappy).await;
}

#[tokio::test]
async fn java_consumer_reads_our_lz4_records() {
    java_consumer_reads_what_we_produce(Codec::Lz4).await;
}

#[tokio::test]
async fn java_consumer_reads_our_zstd_records() {
    java_consumer_reads_what_we_produce(Codec::Zstd).await;
}

async fn we_read_what_the_java_producer_writes(codec: Codec) {
    let client = connect().await;
    let topic = create_topic(&client, &format!("data-j-out-{}", codec.name())).await;
    let input: String = (0..10).map(|i| format!("key-{i}:value-{i}\n")).collect();
    let topic2 = topic.clone();
    tokio::task::spawn_blocking(move || {
        run_tool(
            "kafka-console-producer",
            &[
                "--bootstrap-server",
                bootstrap(),
                "--topic",
                &topic2,
                // The console producer overrides `compression.type` with
                // this option's value (default none).
                "--compression-codec",
                codec.name(),
                "--producer-property",
                "linger.ms=1000",
                "--property",
                "parse.key=true",
                "--property",
                "key.separator=:",
            ],
            &input,
        )
    })
    .await
    .expect("tool task");
    let stored = stored_codecs(&client, &topic).await;
    assert!(
        !stored.is_empty() && stored.iter().all(|c| *c == codec),
        "{stored:?}"
    );
    let fetched = fetch(&client, &topic, 0, FetchOptions::default()).await;
    let got: Vec<String> = fetched
        .records
        .iter()
        .map(|r| format!("{}:{}", text(&r.key), text(&r.value)))
        .collect();
    let want: Vec<String> = (0..10).map(|i| format!("key-{i}:value-{i}")).collect();
    assert_eq!(got, want);
    assert_eq!(offsets(&fetched.records), (0..10).collect::<Vec<_>>());
}

#[tokio::test]
async fn we_read_uncompressed_records_of_the_java_producer() {
    we_read_what_the_java_producer_writes(Codec::None).await;
}

#[tokio::test]
async fn we_read_gzip_records_of_the_java_producer() {
    we_read_what_the_java_producer_writes(Codec::Gzip).await;
}

#[tokio::test]
async fn we_read_snappy_records_of_the_java_producer() {
    we_read_what_the_java_producer_writes(Codec::Snappy).await;
}

#[tokio::test]
async fn we_read_lz4_records_of_the_java_producer() {
    we_read_what_the_java_producer_writes(Codec::Lz4).await;
}

#[tokio::test]
async fn we_read_zstd_records_of_the_java_producer() {
    we_read_what_the_java_producer_writes(Codec::Zstd).await;
}

// ---------------------------------------------------------------- transactions

/// `tests/java/TxnProducer.java`, compiled once per test binary into
/// `target/java-data/`.
fn txn_producer_classes() -> &'static PathBuf {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    CLASSES.get_or_init(|| {
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let out = manifest
            .join("..")
            .join("target")
            .join("java-data")
            .join(unique_name("classes"));
        std::fs::create_dir_all(&out).expect("create class directory");
        let output = Command::new("javac")
            .args(["-nowarn", "-cp", &clusters().kafka_libs, "-d"])
            .arg(&out)
            .arg(manifest.join("java").join("TxnProducer.java"))
            .output()
            .expect("run javac (is a JDK installed?)");
        assert!(
            output.status.success(),
            "javac TxnProducer.java failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        out
    })
}

/// Runs TxnProducer: one transaction per step (`commit:a,b` / `abort:c`).
fn run_txn_producer(topic: &str, steps: &[&str]) {
    let classes = txn_producer_classes();
    let classpath = format!("{}:{}", classes.display(), clusters().kafka_libs);
    let output = Command::new("java")
        .args([
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            &classpath,
        ])
        .args(["TxnProducer", bootstrap(), topic, &unique_name("txn")])
        .args(steps)
        .output()
        .expect("run java");
    assert!(
        output.status.success(),
        "TxnProducer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn transactional_topic() -> (Client, String) {
    let client = connect().await;
    let topic = create_topic(&client, "data-txn").await;
    let topic2 = topic.clone();
    tokio::task::spawn_blocking(move || {
        run_txn_producer(&topic2, &["commit:c1,c2", "abort:a1,a2", "commit:c3"])
    })
    .await
    .expect("java task");
    (client, topic)
}

#[tokio::test]
async fn read_committed_hides_aborted_records_and_markers() {
    let (client, topic) = transactional_topic().await;
    let fetched = fetch(&client, &topic, 0, read_committed()).await;
    assert_eq!(values(&fetched.records), ["c1", "c2", "c3"]);
    // c1 c2 COMMIT a1 a2 ABORT c3 COMMIT
    assert_eq!(offsets(&fetched.records), [0, 1, 6]);
    assert_eq!(fetched.next_offset, 8);
    assert_eq!(fetched.last_stable_offset, 8);
}

#[tokio::test]
async fn read_uncommitted_shows_aborted_records_but_no_markers() {
    let (client, topic) = transactional_topic().await;
    let fetched = fetch(&client, &topic, 0, FetchOptions::default()).await;
    assert_eq!(values(&fetched.records), ["c1", "c2", "a1", "a2", "c3"]);
    assert_eq!(offsets(&fetched.records), [0, 1, 3, 4, 6]);
    assert_eq!(fetched.next_offset, 8);
}

#[tokio::test]
async fn reader_under_read_committed_reads_committed_records_to_the_end() {
    let (client, topic) = transactional_topic().await;
    let mut reader = earliest_reader(&client, &topic, read_committed()).await;
    assert_eq!(reader.end(), 8);
    let read = read_to_end(&client, &mut reader).await;
    assert_eq!(values(&read), ["c1", "c2", "c3"]);
}

#[tokio::test]
async fn latest_under_read_committed_is_the_last_stable_offset_of_an_open_transaction() {
    let client = connect().await;
    let topic = create_topic(&client, "data-txn-open").await;
    let topic2 = topic.clone();
    // c1 COMMIT o1 o2 (open)
    tokio::task::spawn_blocking(move || run_txn_producer(&topic2, &["commit:c1", "open:o1,o2"]))
        .await
        .expect("java task");
    let queries = [(topic.as_str(), 0, OffsetSpec::Latest)];
    let latest = |answers: Vec<kafka_lite::ListedOffset>| {
        answers
            .into_iter()
            .map(|a| a.result.expect("partition answer").offset)
            .collect::<Vec<_>>()
    };
    let committed = client
        .list_offsets(&queries, IsolationLevel::ReadCommitted)
        .await;
    let uncommitted = client
        .list_offsets(&queries, IsolationLevel::ReadUncommitted)
        .await;
    assert_eq!(latest(committed), [Some(2)]);
    assert_eq!(latest(uncommitted), [Some(4)]);

    let mut reader = earliest_reader(&client, &topic, read_committed()).await;
    assert_eq!(reader.end(), 2);
    let read = read_to_end(&client, &mut reader).await;
    assert_eq!(values(&read), ["c1"]);
}
