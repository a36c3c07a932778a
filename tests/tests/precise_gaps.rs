//! Precise translation where the real MirrorMaker 2's mapping has gaps
//! (docs/translation.md, "Precise translation"): the source topic is
//! compacted (every thousand records, twenty share a key, and the log cleaner
//! removes nineteen of them before MM2 starts), and MM2's source connector
//! drops the records marked with a `drop` header (Connect's `Filter` SMT with
//! the `HasHeaderKey` predicate). So some upstream offsets have no
//! downstream record, and an extrapolation from a sync would land past the
//! true position there.
//!
//! Every record's value names its source offset, so the test reads the truth
//! from the remote topic: for a group committed at upstream offset `u`, the
//! true downstream position is the offset of the first mirrored record whose
//! source offset is at least `u` (or the remote log end). Groups commit at
//! lags of 0, about 150, 10^3, 10^4 and 10^5 (110,760 records), each lag
//! three times: at the lag, inside the compacted-away stretch below it,
//! and on a filtered record below it. `mm2-checkpoint run --once` then
//! checkpoints them in precise mode and in the default (`mm2`) mode.
//!
//! Precise mode: exactly MM2's rule applied to MM2's newest sync at or below
//! the commit; never past the truth; short of it by at most the downstream
//! distance between the syncs around the commit, which is at most
//! `offset.lag.max` wherever MM2 wrote every sync it triggered. Default mode:
//! never past the truth, never ahead of precise; its byte identity with MM2's
//! own checkpoints is the interop harness's (interop_mm2.rs).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use e2e::interop::{ok, run_once_per_mode};
use e2e::java::helpers;
use e2e::mm2::{Mm2Config, Mm2Process, OFFSET_SYNCS_TOPIC, SOURCE_ALIAS, remote_topic};
use e2e::{Listener, clusters, now_ms, unique_name};
use kafka_lite::ProduceOptions;
use kafka_lite::records::{Header, ProducerRecord};
use mm2_checkpoint::core::{CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::FlowCluster;

/// MM2's `offset.lag.max`: a sync at least every this many mirrored records.
const SPACING: i64 = 100;
/// In every thousand source records, these twenty share one key: compaction
/// keeps only the last.
const COMPACTED: std::ops::Range<i64> = 300..320;
/// In every thousand source records, these carry a `drop` header: MM2's
/// `Filter` drops them.
const FILTERED: std::ops::Range<i64> = 600..610;
/// Where the test commits in a compacted stretch and on a filtered record.
const IN_COMPACTED: i64 = 305;
const IN_FILTERED: i64 = 605;
const STARTUP_BUDGET: Duration = Duration::from_secs(180);
/// Our checkpoints topic (the default name for the `source` alias).
const CHECKPOINTS: &str = "source.checkpoints.internal";

/// The record at source offset `i`: key, value and whether it is marked.
fn record(i: i64, timestamp: i64) -> ProducerRecord {
    let within = i % 1000;
    let key = if COMPACTED.contains(&within) {
        format!("dup-{}", i / 1000)
    } else {
        format!("key-0-{i}")
    };
    let headers = if FILTERED.contains(&within) {
        vec![Header {
            key: "drop".to_owned(),
            value: Some(Bytes::from_static(b"1")),
        }]
    } else {
        Vec::new()
    };
    ProducerRecord {
        timestamp,
        key: Some(Bytes::from(key)),
        value: Some(Bytes::from(format!("value-0-{i}"))),
        headers,
    }
}

/// The source offset a record's value names.
fn source_offset(value: Option<&[u8]>) -> i64 {
    value
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.strip_prefix("value-0-"))
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("a record not from the source topic: {value:?}"))
}

/// The true downstream position for a commit at upstream `u`: the first
/// mirrored record from `u` on, else the remote log end. `mirrored` holds
/// (source offset, downstream offset) in downstream order.
fn truth(mirrored: &[(i64, i64)], remote_end: i64, u: i64) -> i64 {
    let i = mirrored.partition_point(|&(src, _)| src < u);
    mirrored.get(i).map_or(remote_end, |&(_, down)| down)
}

/// One group: its label, upstream lag and committed offset.
struct Placed {
    label: String,
    committed: i64,
}

/// Runs the scenario with `records` source records (`records % 1000 == 760`,
/// so the last batch holds no compacted stretch) and groups at `lags`.
fn scenario(records: i64, lags: &[i64]) {
    assert_eq!(records % 1000, 760, "records: {records}");
    let started = Instant::now();
    let c = clusters();
    let rt = e2e::world::rt();
    let topic = unique_name("gaps");
    let remote = remote_topic(&topic);
    let end = records;
    let source_client = e2e::world::client(c.source());
    let target_client = e2e::world::client(c.target());

    // The compacted source topic: segments roll after 100 ms, and any dirty
    // segment is cleanable.
    ok(
        rt.block_on(source_client.create_topic(
            &topic,
            1,
            1,
            &[
                ("cleanup.policy", "compact"),
                ("segment.ms", "100"),
                ("min.cleanable.dirty.ratio", "0.01"),
                ("min.compaction.lag.ms", "0"),
            ],
        )),
        "creating the compacted source topic",
    );
    // Batches from x500 to (x+1)500, 120 ms apart, so each compacted stretch
    // lies in a segment rolled before the last batch.
    let kafka = ok(rt.block_on(source_client.kafka()), "source client");
    let mut next = 0;
    while next < end {
        let upto = if next == 0 { 500 } else { next + 1000 }.min(end);
        let ts = now_ms();
        let batch: Vec<ProducerRecord> = (next..upto).map(|i| record(i, ts)).collect();
        let base = ok(
            rt.block_on(kafka.produce(&topic, 0, &batch, &ProduceOptions::default())),
            "producing to the source",
        );
        assert_eq!(
            base, next,
            "the source topic's offsets are the record numbers"
        );
        next = upto;
        std::thread::sleep(Duration::from_millis(120));
    }
    // Wait until the log cleaner removed every compacted stretch below the
    // last batch (19 records each): the gaps exist before MM2 reads.
    let last_batch = (end / 1000) * 1000 + 500;
    let stretches = (0..=end / 1000)
        .filter(|k| k * 1000 + COMPACTED.end <= last_batch)
        .count() as i64;
    let expected_gone = stretches * (COMPACTED.end - COMPACTED.start - 1);
    let deadline = Instant::now() + Duration::from_secs(120);
    let source_offsets: Vec<i64> = loop {
        let read = ok(
            rt.block_on(source_client.read_to_end(&topic, 0)),
            "reading the source topic",
        );
        let offsets: Vec<i64> = read.iter().map(|r| r.offset).collect();
        let gone = end - offsets.len() as i64;
        if gone >= expected_gone {
            break offsets;
        }
        assert!(
            Instant::now() < deadline,
            "compaction removed {gone} of {expected_gone} source records in 120 s"
        );
        std::thread::sleep(Duration::from_secs(2));
    };
    let gaps = source_offsets
        .windows(2)
        .filter(|w| w[1] - w[0] > 1)
        .count();
    eprintln!(
        "gaps: {end} records produced, {} left after compaction ({gaps} gaps in the upstream offsets) after {:?}",
        source_offsets.len(),
        started.elapsed()
    );

    // The groups: at each lag, at an offset compacted away below it and on a
    // filtered record below it.
    let mut placed = vec![Placed {
        label: "0".into(),
        committed: end,
    }];
    for &lag in lags.iter().filter(|&&l| l > 0) {
        let at = end - lag;
        let below = |within: i64| {
            let o = (at / 1000) * 1000 + within;
            if o <= at { o } else { o - 1000 }
        };
        placed.push(Placed {
            label: format!("{lag}"),
            committed: at,
        });
        let compacted = below(IN_COMPACTED);
        assert!(
            source_offsets.binary_search(&compacted).is_err(),
            "source offset {compacted} was not compacted away"
        );
        placed.push(Placed {
            label: format!("{lag}-compacted"),
            committed: compacted,
        });
        placed.push(Placed {
            label: format!("{lag}-filtered"),
            committed: below(IN_FILTERED),
        });
    }
    let group = |mode: &str, label: &str| format!("{topic}-{mode}-{label}");
    for mode in ["precise", "mm2"] {
        for p in &placed {
            let offsets = BTreeMap::from([(
                TopicPartition::new(&topic, 0),
                CommittedOffset::new(p.committed, ""),
            )]);
            ok(
                rt.block_on(source_client.commit_group_offsets(&group(mode, &p.label), &offsets)),
                "committing a source group",
            );
        }
    }

    // The real MM2 mirrors the topic, dropping the marked records, and writes
    // its offset syncs; its checkpoint connector is refused.
    let mut config = Mm2Config::new(&topic, &format!("{topic}-.*")).without_checkpoints();
    config.offset_lag_max = SPACING as u64;
    let flow = format!("{SOURCE_ALIAS}->target");
    for (k, v) in [
        ("transforms", "drop"),
        (
            "transforms.drop.type",
            "org.apache.kafka.connect.transforms.Filter",
        ),
        ("transforms.drop.predicate", "marked"),
        ("predicates", "marked"),
        (
            "predicates.marked.type",
            "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        ),
        ("predicates.marked.name", "drop"),
    ] {
        config.extra.push((format!("{flow}.{k}"), v.to_owned()));
    }
    let mut mm2 = ok(
        Mm2Process::start_replicating(c, &config, STARTUP_BUDGET),
        "starting MirrorMaker 2 and its replication task",
    );
    let filtered_count = source_offsets
        .iter()
        .filter(|&&o| FILTERED.contains(&(o % 1000)))
        .count() as i64;
    let expected_remote = source_offsets.len() as i64 - filtered_count;
    let mirrored_at =
        e2e::world::wait_for_mirrored_end(&rt, &mut mm2, &remote, expected_remote, STARTUP_BUDGET);
    // MM2's last syncs (held back by its in-flight permits) come with the next
    // offset flush, every second.
    ok(
        mm2.wait_for_offset_syncs(&topic, 1, end - 2 * SPACING, STARTUP_BUDGET),
        "waiting for MM2's offset syncs of the last records",
    );
    std::thread::sleep(Duration::from_secs(3));
    let read_syncs = || {
        let syncs = ok(
            helpers().offset_syncs(
                c.source().bootstrap.get(Listener::Plaintext),
                OFFSET_SYNCS_TOPIC,
            ),
            "reading MM2's offset syncs",
        );
        syncs
            .into_iter()
            .filter(|s| s.topic == topic && s.partition == 0)
            .map(|s| (s.upstream, s.downstream))
            .collect::<Vec<_>>()
    };
    let history = read_syncs();
    eprintln!(
        "gaps: MM2 mirrored {expected_remote} records ({filtered_count} filtered) {:?} after its start, {} offset syncs",
        mirrored_at,
        history.len()
    );

    // The truth, from the remote topic.
    let remote_records = ok(
        rt.block_on(target_client.read_to_end(&remote, 0)),
        "reading the remote topic",
    );
    let mirrored: Vec<(i64, i64)> = remote_records
        .iter()
        .map(|r| (source_offset(r.value.as_deref()), r.offset))
        .collect();
    assert_eq!(mirrored.len() as i64, expected_remote);
    assert!(
        mirrored.windows(2).all(|w| w[0].0 < w[1].0),
        "the remote topic is not in source order"
    );
    assert!(
        mirrored
            .iter()
            .all(|&(src, _)| !FILTERED.contains(&(src % 1000))),
        "a marked record was mirrored"
    );

    // Our checkpoints, one run per mode, each for its own groups.
    run_once_per_mode(&topic);
    assert_eq!(
        read_syncs(),
        history,
        "MM2 wrote syncs while ours ran: the expectations below would not hold"
    );
    drop(mm2);
    let checkpoints: BTreeMap<String, i64> =
        e2e::world::checkpoints_in(&rt, &target_client, CHECKPOINTS)
            .into_iter()
            .filter(|cp| cp.key.group.starts_with(&topic))
            .map(|cp| {
                assert_eq!(cp.key.topic_partition.topic, remote);
                (cp.key.group.clone(), cp.downstream_offset)
            })
            .collect();

    let remote_end = expected_remote;
    eprintln!(
        "gaps: {:>18} {:>7} {:>7} {:>8} {:>6} {:>8} {:>6} {:>6}",
        "group", "commit", "truth", "precise", "short", "mm2", "short", "bound"
    );
    let mut sparse = 0;
    for p in &placed {
        let u = p.committed;
        let true_position = truth(&mirrored, remote_end, u);
        let precise_group = group("precise", &p.label);
        let mm2_group = group("mm2", &p.label);
        let precise = *checkpoints
            .get(&precise_group)
            .unwrap_or_else(|| panic!("{precise_group}: no checkpoint"));
        let mm2_mode = *checkpoints
            .get(&mm2_group)
            .unwrap_or_else(|| panic!("{mm2_group}: no checkpoint"));
        // MM2's syncs around the commit.
        let next = history.partition_point(|&(up, _)| up <= u);
        let (below_up, below_down) = history[..next]
            .last()
            .copied()
            .unwrap_or_else(|| panic!("{}: no sync at or below {u}", p.label));
        let above_down = history.get(next).map_or(remote_end, |&(_, d)| d);
        let expected = if u == below_up {
            below_down
        } else {
            below_down + 1
        };
        assert_eq!(
            precise, expected,
            "{}: precise checkpoint {precise}, not MM2's rule on its sync ({below_up}, {below_down})",
            p.label
        );
        assert!(
            precise <= true_position,
            "{}: precise checkpoint {precise} past the truth {true_position}",
            p.label
        );
        // The gaps are real: inside a compacted stretch, extrapolating from
        // the sync below (one downstream record per upstream offset) would
        // land past the truth.
        if p.label.ends_with("-compacted") {
            let extrapolated = below_down + (u - below_up);
            assert!(
                extrapolated > true_position,
                "{}: an extrapolation ({extrapolated}) would not overshoot the truth {true_position}",
                p.label
            );
        }
        let bound = (above_down - below_down - 1).max(0);
        let short = true_position - precise;
        assert!(
            short <= bound,
            "{}: precise is {short} short of the truth, more than the {bound} between MM2's syncs",
            p.label
        );
        if bound <= SPACING {
            assert!(short <= SPACING, "{}: precise short by {short}", p.label);
        } else {
            sparse += 1;
        }
        assert!(
            mm2_mode <= true_position,
            "{}: mm2-mode checkpoint {mm2_mode} past the truth {true_position}",
            p.label
        );
        assert!(
            mm2_mode <= precise,
            "{}: mm2 mode {mm2_mode} ahead of precise {precise}",
            p.label
        );
        eprintln!(
            "gaps: {:>18} {u:>7} {true_position:>7} {precise:>8} {short:>6} {mm2_mode:>8} {:>6} {bound:>6}",
            p.label,
            true_position - mm2_mode
        );
    }
    eprintln!(
        "gaps: {} groups per mode, {sparse} where MM2's syncs around the commit were more than {SPACING} apart downstream; wall time {:?}",
        placed.len(),
        started.elapsed()
    );
}

/// 110,760 records, 10^5 behind included: about 40 s here (docs/testing.md).
#[test]
fn precise_checkpoints_over_compacted_and_filtered_records_are_never_past_and_within_the_sync_spacing()
 {
    scenario(110_760, &[0, 150, 1_000, 10_000, 100_000]);
}
