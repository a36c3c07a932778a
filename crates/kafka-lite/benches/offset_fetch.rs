//! OffsetFetch for 1,000 consumer groups against a real broker: batched
//! (multi-group OffsetFetch v8+) versus one request per group.
//!
//! Needs the test clusters: run `cargo xtask kafka up` first. The cluster
//! file is `$MM2_CLUSTERS_FILE` or `target/kafka/clusters.json`; without it
//! the bench exits with a message. Run with
//! `cargo bench -p kafka-lite --bench offset_fetch`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_main};
use kafka_lite::{Client, ConnectionConfig, OffsetFetchOptions, OffsetToCommit, TopicPartition};

/// Groups under `cargo bench`.
const GROUPS: usize = 1_000;
/// Groups when `cargo test --all-targets` runs the bench once as a test.
const GROUPS_IN_TEST_MODE: usize = 20;
const PARTITIONS: i32 = 4;

fn bootstrap() -> Option<String> {
    let path = std::env::var_os("MM2_CLUSTERS_FILE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/kafka/clusters.json")
        });
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!(
                "offset_fetch bench: no Kafka cluster file at {} ({e}); run `cargo xtask kafka up` first",
                path.display()
            );
            return None;
        }
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(json) => json,
        Err(e) => {
            eprintln!("offset_fetch bench: {} is malformed: {e}", path.display());
            return None;
        }
    };
    let address = json["clusters"]["source"]["bootstrap"]["plaintext"].as_str();
    if address.is_none() {
        eprintln!(
            "offset_fetch bench: {} has no clusters.source.bootstrap.plaintext",
            path.display()
        );
    }
    address.map(str::to_string)
}

/// Connects and commits offsets for `count` fresh groups.
async fn setup(bootstrap: String, count: usize) -> (Client, Vec<String>) {
    let client = Client::connect(vec![bootstrap], ConnectionConfig::default())
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let run = std::process::id();
    let topic = format!("bench-offset-fetch-{run}");
    client
        .create_topic(&topic, PARTITIONS, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("create topic: {e}"));
    let groups: Vec<String> = (0..count)
        .map(|i| format!("bench-offset-fetch-{run}-{i}"))
        .collect();
    let offsets: BTreeMap<TopicPartition, OffsetToCommit> = (0..PARTITIONS)
        .map(|p| (TopicPartition::new(&topic, p), OffsetToCommit::new(42)))
        .collect();
    let mut tasks = tokio::task::JoinSet::new();
    for group in groups.clone() {
        let client = client.clone();
        let offsets = offsets.clone();
        tasks.spawn(async move { client.commit_group_offsets(&group, &offsets).await });
    }
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => panic!("commit: {e}"),
            Err(e) => panic!("commit task: {e}"),
        }
    }
    (client, groups)
}

async fn fetch(client: &Client, groups: &[String], options: &OffsetFetchOptions) {
    let fetched = client.fetch_group_offsets_with(groups, options).await;
    assert_eq!(fetched.len(), groups.len());
    for (group, result) in &fetched {
        match result {
            Ok(offsets) => assert_eq!(offsets.len(), PARTITIONS as usize, "group {group}"),
            Err(e) => panic!("group {group}: {e}"),
        }
    }
}

fn offset_fetch(c: &mut Criterion) {
    let Some(bootstrap) = bootstrap() else {
        return;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => panic!("tokio runtime: {e}"),
    };
    // `cargo bench` passes `--bench`; `cargo test` runs each bench once.
    let count = if std::env::args().any(|a| a == "--bench") {
        GROUPS
    } else {
        GROUPS_IN_TEST_MODE
    };
    let (client, groups) = runtime.block_on(setup(bootstrap, count));

    let mut group = c.benchmark_group("offset_fetch_1000_groups");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for (name, per_request) in [
        ("batched_1000_per_request", 1000),
        ("batched_200_per_request", 200),
        ("one_request_per_group", 1),
    ] {
        let options = OffsetFetchOptions {
            max_groups_per_request: per_request,
            ..OffsetFetchOptions::default()
        };
        let before = client.requests_sent();
        runtime.block_on(fetch(&client, &groups, &options));
        eprintln!(
            "{name}: {} requests per call",
            client.requests_sent() - before
        );
        group.bench_function(name, |b| {
            b.iter(|| runtime.block_on(fetch(&client, &groups, &options)));
        });
    }
    group.finish();
}

// The macro generates an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::offset_fetch);
}

criterion_main!(group::benches);
