//! PartitionReader: empty partitions, reading to the end captured at start
//! and following, starting at latest, compacted offsets.

use super::*;

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
