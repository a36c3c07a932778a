//! Produce and Fetch: round trips with every codec, batches built record by
//! record, base offsets, errors, fetch limits and the log end.

use super::*;

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
