//! ListOffsets: earliest, latest and by timestamp, per-partition errors, one
//! request per leader.

use super::*;

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
