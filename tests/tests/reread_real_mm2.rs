//! The re-read after a failover against lag with the real MirrorMaker 2
//! beside ours, in one run (docs/benchmarks.md, "Re-read after a failover
//! against lag"). A measurement, not a CI test: it mirrors about
//! a million records, so it is ignored; run it with
//!
//! ```text
//! cargo test --release -p mm2-checkpoint --test reread_real_mm2 -- --ignored --nocapture
//! ```
//!
//! (`REREAD_RECORDS=N` mirrors N records instead of 1,000,010.) By default the
//! records are all on the source before MM2 starts, a backlog; with
//! `REREAD_PACE=R` MM2 starts first and mirrors a live stream of R records a
//! second (batches of 100).
//!
//! MM2 4.1.1 mirrors a fresh one-partition topic (an identity mirror, so a
//! group's true downstream position is its committed offset) with
//! `offset.lag.max = 100` and its checkpoint connector ON, for the groups
//! `<topic>-ref-<lag>`. Once every record is mirrored, three groups commit at
//! each lag (100 to 10^6 behind the log end): MM2 checkpoints its own, and
//! `mm2-checkpoint run --once` checkpoints the others, once in the default
//! (`mm2`) mode and once in `precise` mode, into the same checkpoints topic
//! (the groups differ). The re-read of a group resuming at checkpoint `d`
//! is `committed - d`. The test asserts what must hold (never past the truth,
//! precise at least MM2's answer, our `mm2` mode equal to MM2's own
//! checkpoint, checked after the table is printed); the table is the result.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use e2e::interop::{ok, our_config, run_once, test_dir};
use e2e::java::helpers;
use e2e::mm2::{CHECKPOINTS_TOPIC, Mm2Config, Mm2Process, remote_topic};
use e2e::{Listener, clusters, unique_name};
use kafka_lite::ProduceOptions;
use kafka_lite::records::ProducerRecord;
use mm2_checkpoint::core::{CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::FlowCluster;

const SPACING: i64 = 100;
const LAGS: [i64; 7] = [100, 1_000, 10_000, 100_000, 500_000, 900_000, 1_000_000];
const PRECISE: &str = "mm2-checkpoint.offset.translation = precise\n";
const BUDGET: Duration = Duration::from_secs(1_800);

fn cell(checkpoint: Option<i64>, committed: i64) -> String {
    checkpoint.map_or_else(
        || "none | –".to_owned(),
        |d| format!("{d} | {}", committed - d),
    )
}

#[test]
#[ignore = "a measurement: mirrors a million records through the real MM2"]
fn reread_after_failover_against_lag_real_mm2_beside_ours() {
    let records: i64 = std::env::var("REREAD_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_010);
    let pace: Option<u64> = std::env::var("REREAD_PACE")
        .ok()
        .and_then(|v| v.parse().ok());
    let started = Instant::now();
    let c = clusters();
    let rt = e2e::world::rt();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("reread");
    let remote = remote_topic(&topic);
    let end = records;

    let mut config = Mm2Config::new(&topic, &format!("{topic}-ref-.*"));
    config.offset_lag_max = SPACING as u64;
    let source_client = e2e::world::client(c.source());
    let (mut mm2, produced, mm2_started) = match pace {
        None => {
            // A backlog: every record is there before MM2 starts.
            ok(
                helpers().produce(source, &topic, 1, u32::try_from(records).expect("records")),
                "producing to the source",
            );
            let produced = started.elapsed();
            let mm2 = ok(
                Mm2Process::start_replicating(c, &config, BUDGET),
                "starting MirrorMaker 2 and its replication task",
            );
            (mm2, produced, Instant::now())
        }
        Some(per_second) => {
            // A live stream: MM2 runs first, then batches of 100 records
            // arrive at `per_second`.
            ok(
                rt.block_on(source_client.create_topic(&topic, 1, 1, &[])),
                "creating the source topic",
            );
            let mm2 = ok(
                Mm2Process::start_replicating(c, &config, BUDGET),
                "starting MirrorMaker 2 and its replication task",
            );
            let mm2_started = Instant::now();
            let kafka = ok(rt.block_on(source_client.kafka()), "source client");
            let batch = 100;
            let interval = Duration::from_secs_f64(batch as f64 / per_second as f64);
            let t0 = Instant::now();
            let mut next = 0;
            while next < end {
                let upto = (next + batch).min(end);
                let timestamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                let records: Vec<ProducerRecord> = (next..upto)
                    .map(|i| ProducerRecord {
                        timestamp,
                        key: Some(Bytes::from(format!("key-0-{i}"))),
                        value: Some(Bytes::from(format!("value-0-{i}"))),
                        headers: Vec::new(),
                    })
                    .collect();
                let base = ok(
                    rt.block_on(kafka.produce(&topic, 0, &records, &ProduceOptions::default())),
                    "producing to the source",
                );
                assert_eq!(base, next, "offsets are the record numbers");
                next = upto;
                let due = t0 + interval * u32::try_from(next / batch).expect("batches");
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            (mm2, t0.elapsed(), mm2_started)
        }
    };
    e2e::world::wait_for_mirrored_end(&rt, &mut mm2, &remote, end, BUDGET);
    let mirror_time = mm2_started.elapsed();
    let syncs = ok(
        mm2.wait_for_offset_syncs(&topic, 1, end - 2 * SPACING, BUDGET),
        "waiting for MM2's offset syncs of the last records",
    );
    let history = e2e::world::identity_sync_history(&syncs);
    let widest = history.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let wide = history
        .windows(2)
        .filter(|w| w[1] - w[0] > SPACING + 1)
        .count();

    // The groups, committed once everything is mirrored and synced.
    let lags: Vec<i64> = LAGS.iter().copied().filter(|&l| l < end).collect();
    let group = |side: &str, lag: i64| format!("{topic}-{side}-{lag}");
    for side in ["ref", "mm2", "precise"] {
        for &lag in &lags {
            let offsets = BTreeMap::from([(
                TopicPartition::new(&topic, 0),
                CommittedOffset::new(end - lag, ""),
            )]);
            ok(
                rt.block_on(source_client.commit_group_offsets(&group(side, lag), &offsets)),
                "committing a source group",
            );
        }
    }
    // MM2's checkpoints of its groups: the nearest group first, then a few
    // more emit intervals (1 s) for the others.
    let nearest = group("ref", lags[0]);
    ok(
        mm2.wait_for_checkpoints(&nearest, Duration::from_secs(120), |cps| {
            cps.iter().any(|cp| cp.upstream == end - lags[0])
        }),
        "waiting for MM2's checkpoint of the nearest group",
    );
    std::thread::sleep(Duration::from_secs(10));

    // Ours, one run per mode.
    let dir = test_dir(&topic);
    let mut our_time = BTreeMap::new();
    for (mode, extra) in [("mm2", ""), ("precise", PRECISE)] {
        let mode_dir = dir.join(mode);
        std::fs::create_dir_all(&mode_dir).expect("mode dir");
        let t = Instant::now();
        run_once(&our_config(
            &mode_dir,
            &topic,
            &format!("{topic}-{mode}-.*"),
            extra,
        ));
        our_time.insert(mode, t.elapsed());
    }
    let latest: BTreeMap<String, i64> = ok(
        helpers().checkpoints(target, CHECKPOINTS_TOPIC),
        "reading the checkpoints with MM2's decoder",
    )
    .into_iter()
    .filter(|cp| cp.group.starts_with(&topic) && cp.topic == remote)
    .map(|cp| (cp.group, cp.downstream))
    .collect();
    drop(mm2);

    println!(
        "reread: {records} records ({}), produced in {produced:?}, mirrored by MM2 in {mirror_time:?}; \
         {} offset syncs, {wide} gaps wider than {} (widest {widest}); ours: mm2 mode {:?}, precise {:?}",
        pace.map_or_else(|| "a backlog".to_owned(), |r| format!("live, {r} a second")),
        history.len(),
        SPACING + 1,
        our_time["mm2"],
        our_time["precise"],
    );
    println!(
        "| lag (records) | true position | MM2 4.1.1 checkpoint | MM2 re-read | ours `mm2` | re-read | ours `precise` | re-read | MM2's syncs around |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut differ = Vec::new();
    for &lag in &lags {
        let committed = end - lag;
        let get = |side: &str| latest.get(&group(side, lag)).copied();
        let (reference, ours_mm2, ours_precise) = (get("ref"), get("mm2"), get("precise"));
        for d in [reference, ours_mm2, ours_precise].into_iter().flatten() {
            assert!(
                d <= committed,
                "lag {lag}: checkpoint {d} past the truth {committed}"
            );
        }
        if let (Some(p), Some(m)) = (ours_precise, ours_mm2) {
            assert!(m <= p, "lag {lag}: precise {p} below mm2 mode {m}");
        }
        if reference != ours_mm2 {
            differ.push(format!("lag {lag}: MM2 {reference:?}, ours {ours_mm2:?}"));
        }
        let next = history.partition_point(|&s| s <= committed);
        let around = match (next.checked_sub(1).map(|i| history[i]), history.get(next)) {
            (Some(b), Some(a)) => format!("{b}..{a}"),
            (Some(b), None) => format!("{b}.."),
            (None, _) => "none below".to_owned(),
        };
        println!(
            "| {lag} | {committed} | {} | {} | {} | {around} |",
            cell(reference, committed),
            cell(ours_mm2, committed),
            cell(ours_precise, committed)
        );
    }
    println!("reread: wall time {:?}", started.elapsed());
    // Our default mode is MM2's store: the same answer as MM2's own
    // checkpoint connector for the same group.
    assert!(
        differ.is_empty(),
        "ours (mm2 mode) differs from MM2: {differ:?}"
    );
}
