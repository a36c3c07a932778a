//! Transactions (written by the Java producer): read_committed and
//! read_uncommitted, the reader, and the last stable offset.

use super::*;

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
