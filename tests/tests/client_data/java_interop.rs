//! Kafka's own Java consumer reads what we produce, and we read what its
//! producer writes, for every codec.

use super::*;

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
