//! The sequence of kafka-lite operations the checkpointer uses, shared by the
//! tests that run it over different transports and broker versions.

use std::collections::BTreeMap;

use crate::{now_ms, unique_name};
use bytes::Bytes;
use kafka_lite::records::{Codec, ProducerRecord};
use kafka_lite::{
    Client, CreateTopicOutcome, FetchOptions, GroupState, IsolationLevel, OffsetSpec,
    OffsetToCommit, ProduceOptions, StartOffset, TopicPartition,
};

/// Creates a topic, produces (LZ4), lists offsets, fetches, reads to the end,
/// commits and fetches group offsets, describes and lists the group, all
/// through `client`, asserting each result. `via` names the way of connecting
/// in panic messages; names of topics and groups start with `prefix`.
pub async fn every_operation(client: &Client, via: &str, prefix: &str) {
    let topic = unique_name(prefix);
    let created = client
        .create_topic(&topic, 1, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("create_topic over {via}: {e}"));
    assert_eq!(created, CreateTopicOutcome::Created);

    let ts = now_ms();
    let records: Vec<ProducerRecord> = (0..5)
        .map(|i| ProducerRecord {
            timestamp: ts,
            key: Some(Bytes::from(format!("key-{i}"))),
            value: Some(Bytes::from(format!("value-{i}"))),
            headers: Vec::new(),
        })
        .collect();
    let options = ProduceOptions {
        codec: Codec::Lz4,
        ..ProduceOptions::default()
    };
    let base = client
        .produce(&topic, 0, &records, &options)
        .await
        .unwrap_or_else(|e| panic!("produce over {via}: {e}"));
    assert_eq!(base, 0);

    let listed = client
        .list_offsets(
            &[
                (&topic, 0, OffsetSpec::Earliest),
                (&topic, 0, OffsetSpec::Latest),
            ],
            IsolationLevel::ReadUncommitted,
        )
        .await;
    let offsets: Vec<Option<i64>> = listed
        .iter()
        .map(|l| {
            l.result
                .as_ref()
                .unwrap_or_else(|e| panic!("list_offsets over {via}: {e}"))
                .offset
        })
        .collect();
    assert_eq!(offsets, vec![Some(0), Some(5)]);

    let fetched = client
        .fetch(&topic, 0, 2, &FetchOptions::default())
        .await
        .unwrap_or_else(|e| panic!("fetch over {via}: {e}"));
    let values: Vec<Option<Bytes>> = fetched.records.iter().map(|r| r.value.clone()).collect();
    assert_eq!(
        values,
        vec![
            Some(Bytes::from("value-2")),
            Some(Bytes::from("value-3")),
            Some(Bytes::from("value-4"))
        ]
    );
    assert_eq!(fetched.high_watermark, 5);

    let mut reader = client
        .partition_reader(&topic, 0, StartOffset::Earliest, FetchOptions::default())
        .await
        .unwrap_or_else(|e| panic!("partition_reader over {via}: {e}"));
    let mut read = 0;
    while let Some(batch) = reader
        .read(client)
        .await
        .unwrap_or_else(|e| panic!("reader over {via}: {e}"))
    {
        read += batch.len();
    }
    assert_eq!(read, 5);
    assert!(reader.is_caught_up());

    let group = unique_name(&format!("{prefix}-group"));
    let mut commit = BTreeMap::new();
    commit.insert(TopicPartition::new(&topic, 0), OffsetToCommit::new(3));
    let results = client
        .commit_group_offsets(&group, &commit)
        .await
        .unwrap_or_else(|e| panic!("commit_group_offsets over {via}: {e}"));
    assert!(results.values().all(Result::is_ok), "{results:?}");

    let mut fetched = client
        .fetch_group_offsets(std::slice::from_ref(&group))
        .await;
    let group_offsets = fetched
        .swap_remove(&group)
        .expect("a result for the group")
        .unwrap_or_else(|e| panic!("fetch_group_offsets over {via}: {e}"));
    let committed: Vec<Option<i64>> = group_offsets
        .values()
        .map(|r| r.as_ref().expect("partition fetched").offset)
        .collect();
    assert_eq!(committed, vec![Some(3)]);

    let mut described = client.describe_groups(std::slice::from_ref(&group)).await;
    let description = described
        .swap_remove(&group)
        .expect("a result for the group")
        .unwrap_or_else(|e| panic!("describe_groups over {via}: {e}"));
    assert_eq!(description.state, GroupState::Empty);

    let listed = client
        .list_groups()
        .await
        .unwrap_or_else(|e| panic!("list_groups over {via}: {e}"));
    assert!(
        listed.groups.iter().any(|g| g.group_id == group),
        "group {group} missing from list_groups over {via}"
    );
}
