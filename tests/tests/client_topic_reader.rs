//! kafka-lite's `TopicReader` against a real broker: every partition of a
//! topic read to its captured end, then followed, one Fetch per leader.

use std::time::Duration;

use bytes::Bytes;
use e2e::{clusters, unique_name};
use kafka_lite::records::ProducerRecord;
use kafka_lite::{
    Client, ConnectionConfig, FetchOptions, IsolationLevel, ProduceOptions, StartOffset,
    TopicReader,
};
use kafka_protocol::error::ResponseError;

async fn connect() -> Client {
    let config = ConnectionConfig {
        client_id: "e2e-topic-reader".into(),
        request_timeout: Duration::from_secs(40),
        ..ConnectionConfig::default()
    };
    Client::connect(
        vec![clusters().source().bootstrap.plaintext.clone()],
        config,
    )
    .await
    .expect("connect to the source cluster")
}

fn values(n: std::ops::Range<usize>, tag: &str) -> Vec<ProducerRecord> {
    n.map(|i| ProducerRecord {
        timestamp: 1_700_000_000_000,
        key: None,
        value: Some(Bytes::from(format!("{tag}-{i}"))),
        headers: Vec::new(),
    })
    .collect()
}

fn options() -> FetchOptions {
    FetchOptions {
        fetch_wait: Duration::from_millis(100),
        isolation: IsolationLevel::ReadCommitted,
        ..FetchOptions::default()
    }
}

/// (partition, value) of everything `poll` returns until `done` holds.
async fn poll_until(
    client: &Client,
    reader: &mut TopicReader,
    mut done: impl FnMut(&TopicReader, usize) -> bool,
) -> Vec<(i32, String)> {
    let mut got = Vec::new();
    for _ in 0..200 {
        if done(reader, got.len()) {
            return got;
        }
        let polled = reader.poll(client).await.expect("poll");
        assert!(polled.failed.is_empty(), "{:?}", polled.failed);
        for p in polled.records {
            for r in p.records {
                let v = r.value.map(|b| String::from_utf8_lossy(&b).into_owned());
                got.push((p.partition, v.unwrap_or_default()));
            }
        }
    }
    panic!("poll never finished; got {got:?}");
}

#[tokio::test]
async fn reads_every_partition_to_its_end_then_follows() {
    let client = connect().await;
    let topic = unique_name("topic-reader");
    client
        .create_topic(&topic, 3, 1, &[])
        .await
        .expect("create topic");
    let produce = ProduceOptions::default();
    for p in 0..3 {
        client
            .produce(&topic, p, &values(0..4, &format!("p{p}")), &produce)
            .await
            .expect("produce");
    }
    let mut reader = client
        .topic_reader(&topic, StartOffset::Earliest, options())
        .await
        .expect("open");
    assert_eq!(reader.partitions().count(), 3);
    assert_eq!(reader.remaining(), 12);
    let mut got = poll_until(&client, &mut reader, |r, _| r.is_caught_up()).await;
    got.sort();
    let want: Vec<(i32, String)> = (0..3)
        .flat_map(|p| (0..4).map(move |i| (p, format!("p{p}-{i}"))))
        .collect();
    assert_eq!(got, want);
    assert_eq!(reader.remaining(), 0);

    // Following: what is appended later, on any partition.
    client
        .produce(&topic, 2, &values(4..6, "p2"), &produce)
        .await
        .expect("produce");
    client
        .produce(&topic, 0, &values(4..5, "p0"), &produce)
        .await
        .expect("produce");
    let mut later = poll_until(&client, &mut reader, |_, n| n == 3).await;
    later.sort();
    assert_eq!(
        later,
        vec![
            (0, "p0-4".to_string()),
            (2, "p2-4".to_string()),
            (2, "p2-5".to_string())
        ]
    );
    // Nothing new: a poll waits the fetch wait and returns nothing.
    let polled = reader.poll(&client).await.expect("poll");
    assert!(polled.records.is_empty());
}

#[tokio::test]
async fn a_missing_topic_is_unknown_topic_or_partition() {
    let client = connect().await;
    let topic = unique_name("no-such-topic");
    let e = client
        .topic_reader(&topic, StartOffset::Earliest, options())
        .await
        .expect_err("a missing topic");
    assert_eq!(
        e.kafka_error(),
        Some(ResponseError::UnknownTopicOrPartition),
        "{e}"
    );
}
