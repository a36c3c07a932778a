//! A partition's record batches as the broker stores them, read with plain
//! Fetch requests (`read_uncommitted`): what the clients' readers hide, such
//! as producer ids and epochs, control batches and codecs.

use kafka_lite::Client;
use kafka_lite::records::{DecodedBatch, decode_batches};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

/// Every batch of `topic`-`partition` from offset 0 to its high watermark,
/// in log order. Panics on any failure (a test helper).
pub async fn stored_batches(client: &Client, topic: &str, partition: i32) -> Vec<DecodedBatch> {
    let connection = client
        .leader_connection(topic, partition)
        .await
        .expect("the partition's leader");
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let request = FetchRequest::default()
            .with_max_wait_ms(100)
            .with_min_bytes(1)
            .with_isolation_level(0)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(partition)
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]);
        let response = connection.send(request).await.expect("a plain Fetch");
        let stored = &response.responses[0].partitions[0];
        let mut bytes = stored.records.clone().unwrap_or_default();
        let batches = decode_batches(&mut bytes).expect("decodable batches");
        let Some(last) = batches.last() else {
            assert!(
                offset >= stored.high_watermark,
                "no batch at {offset} below the high watermark {}",
                stored.high_watermark
            );
            return out;
        };
        offset = last.last_offset + 1;
        out.extend(batches);
        if offset >= stored.high_watermark {
            return out;
        }
    }
}
