//! A failover with the real MirrorMaker 2 and Kafka's own Java consumer
//! (docs/translation.md, "Precise translation"): MM2 4.1.1 mirrors a fresh
//! topic with `offset.lag.max = 100` (its checkpoint connector refused), so
//! the offset syncs are its own; source groups lag the log end by 0 to 20,000
//! records; `mm2-checkpoint run --once` checkpoints one set of groups in
//! precise mode and an identical set in the default (`mm2`) mode. Then each
//! group fails over as an application does: `RemoteClusterUtils.translateOffsets`
//! on the target, a consumer seeking there and reading to the end. Every
//! record names its source offset, so the test counts, per group, the records
//! read again (source offset below the group's commit) and the records lost
//! (at or above the commit, never read). Lost must be 0 in both modes; in
//! precise mode the re-read is at most the sync spacing at every lag.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use e2e::interop::{ok, run_once_per_mode};
use e2e::java::helpers;
use e2e::mm2::{Mm2Config, Mm2Process, SOURCE_ALIAS, remote_topic};
use e2e::{Listener, clusters, unique_name};
use mm2_checkpoint::core::{CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::FlowCluster;

/// Records produced to the source topic's single partition: record `i` is at
/// source offset `i` with the value `value-0-<i>`.
const RECORDS: u32 = 25_000;
/// MM2's `offset.lag.max`: a sync at least every this many records.
const SPACING: i64 = 100;
/// How far behind the log end each group commits.
const LAGS: [i64; 5] = [0, 150, 1_000, 10_000, 20_000];
const STARTUP_BUDGET: Duration = Duration::from_secs(120);

/// What one group saw after failing over.
#[derive(Debug, Default)]
struct Resumed {
    /// The target offset `translateOffsets` gave.
    from: Option<i64>,
    /// The source offsets named by the records read from there.
    read: Vec<i64>,
}

/// Runs the `FailOver` Java helper for `groups`: per group, the offset
/// `RemoteClusterUtils.translateOffsets` gives on `remote` partition 0 and
/// the source offsets of the records a consumer reads from it to the end.
fn fail_over(target: &str, remote: &str, groups: &[String]) -> BTreeMap<String, Resumed> {
    let mut args = vec![target, SOURCE_ALIAS, "20000"];
    args.extend(groups.iter().map(String::as_str));
    let out = ok(helpers().run("FailOver", &args), "FailOver");
    let mut resumed: BTreeMap<String, Resumed> = BTreeMap::new();
    for line in out.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields.as_slice() {
            ["from", group, topic, "0", offset] => {
                assert_eq!(*topic, remote, "{line}");
                let r = resumed.entry((*group).to_owned()).or_default();
                r.from = Some(offset.parse().expect("offset"));
            }
            ["record", group, "0", _offset, value] => {
                let source_offset = value
                    .strip_prefix("value-0-")
                    .and_then(|i| i.parse().ok())
                    .unwrap_or_else(|| panic!("a record not from the source topic: {line}"));
                resumed
                    .entry((*group).to_owned())
                    .or_default()
                    .read
                    .push(source_offset);
            }
            _ => panic!("unexpected FailOver line: {line}"),
        }
    }
    resumed
}

/// Records read again (source offset below `committed`) and records lost (in
/// `committed..end`, never read).
fn count(committed: i64, end: i64, read: &[i64]) -> (usize, usize) {
    let duplicates = read.iter().filter(|&&o| o < committed).count();
    let seen: BTreeSet<i64> = read.iter().copied().collect();
    let lost = (committed..end).filter(|o| !seen.contains(o)).count();
    (duplicates, lost)
}

/// The upstream offsets of MM2's newest sync at or below `offset` and of the
/// next one, if any (`history` in log order, increasing).
fn bracket(history: &[i64], offset: i64) -> (i64, Option<i64>) {
    let next = history.partition_point(|&s| s <= offset);
    let below = next
        .checked_sub(1)
        .and_then(|i| history.get(i))
        .copied()
        .unwrap_or_else(|| panic!("no sync at or below {offset}"));
    (below, history.get(next).copied())
}

/// `offset` if MM2's syncs around it are at most the spacing apart (or it
/// is at or past the newest), else the same distance past the nearest lower
/// sync that is (within its bracket).
fn place(history: &[i64], offset: i64) -> i64 {
    let (below, above) = bracket(history, offset);
    if above.is_none_or(|a| a - below <= SPACING + 1) {
        return offset;
    }
    let dense = history
        .windows(2)
        .rfind(|w| w[1] <= offset && w[1] - w[0] <= SPACING + 1)
        .unwrap_or_else(|| panic!("MM2 wrote no sync at the spacing below {offset}"));
    dense[0] + (offset - below).min(dense[1] - dense[0] - 1)
}

#[test]
fn a_java_consumer_failing_over_from_precise_checkpoints_rereads_at_most_the_sync_spacing() {
    let started = Instant::now();
    let c = clusters();
    let java = helpers();
    let rt = e2e::world::rt();
    let source = c.source().bootstrap.get(Listener::Plaintext);
    let target = c.target().bootstrap.get(Listener::Plaintext);
    let topic = unique_name("failover");
    let remote = remote_topic(&topic);
    let end = i64::from(RECORDS);

    ok(
        java.produce(source, &topic, 1, RECORDS),
        "producing to the source",
    );
    // The real MM2 mirrors the topic and writes its offset syncs; its
    // checkpoint connector is refused, so every checkpoint below is ours.
    let mut config = Mm2Config::new(&topic, &format!("{topic}-.*")).without_checkpoints();
    config.offset_lag_max = SPACING as u64;
    let mut mm2 = ok(
        Mm2Process::start_replicating(c, &config, STARTUP_BUDGET),
        "starting MirrorMaker 2 and its replication task",
    );
    // The sync of the last multiple of the spacing, and every record mirrored.
    let syncs = ok(
        mm2.wait_for_offset_syncs(&topic, 1, end - SPACING, STARTUP_BUDGET),
        "waiting for MM2's offset syncs up to the last records",
    );
    e2e::world::wait_for_mirrored_end(&rt, &mut mm2, &remote, end, STARTUP_BUDGET);
    // MM2's own syncs of the topic. The mirror is an identity (a fresh remote
    // topic); a sync comes every `offset.lag.max + 1` records, except where
    // the source task's ten in-flight permits were all taken and a newer
    // sync replaced a pending one (docs/behaviour.md, C.1): under a backlog
    // MM2 leaves wider gaps, and no translation can be finer than them.
    let history = e2e::world::identity_sync_history(&syncs);
    assert_eq!(history.first(), Some(&0), "MM2's first sync: {history:?}");
    let gaps = history
        .windows(2)
        .filter(|w| w[1] - w[0] > SPACING + 1)
        .count();
    eprintln!(
        "failover: MM2 wrote {} offset syncs for {RECORDS} records, {gaps} gaps wider than {}",
        history.len(),
        SPACING + 1
    );

    // Where the groups commit: about `lag` behind the end, moved down into
    // the nearest stretch where MM2 wrote its syncs at the spacing if a gap
    // of its is there; and, if MM2 left gaps, one more group in the middle of
    // the widest, where precise mode can only be as fine as MM2's syncs.
    let mut placed: Vec<(String, i64)> = LAGS
        .iter()
        .map(|&lag| (lag.to_string(), place(&history, end - lag)))
        .collect();
    if let Some(w) = history
        .windows(2)
        .filter(|w| w[1] - w[0] > SPACING + 1)
        .max_by_key(|w| w[1] - w[0])
    {
        placed.push(("gap".to_owned(), (w[0] + w[1]) / 2));
    }
    let group = |mode: &str, label: &str| format!("{topic}-{mode}-{label}");
    let source_client = e2e::world::client(c.source());
    for mode in ["precise", "mm2"] {
        for (label, committed) in &placed {
            let offsets = BTreeMap::from([(
                TopicPartition::new(&topic, 0),
                CommittedOffset::new(*committed, ""),
            )]);
            ok(
                rt.block_on(source_client.commit_group_offsets(&group(mode, label), &offsets)),
                "committing a source group",
            );
        }
    }

    // Our checkpoints, one run per mode, each for its own groups.
    run_once_per_mode(&topic);

    // Every group fails over.
    let groups: Vec<String> = ["precise", "mm2"]
        .iter()
        .flat_map(|mode| placed.iter().map(|(label, _)| group(mode, label)))
        .collect();
    let resumed = fail_over(target, &remote, &groups);
    eprintln!("failover: {RECORDS} records, a sync every {SPACING}; records read again per lag:");
    eprintln!(
        "failover: {:>6} {:>7} {:>8} {:>8}",
        "group", "lag", "precise", "mm2"
    );
    for (label, committed) in &placed {
        let (label, committed) = (label.as_str(), *committed);
        let lag = end - committed;
        let mut reread = Vec::new();
        for mode in ["precise", "mm2"] {
            let g = group(mode, label);
            let r = resumed
                .get(&g)
                .unwrap_or_else(|| panic!("{g}: translateOffsets gave nothing"));
            assert!(r.from.is_some(), "{g}: no offset for {remote}");
            let (duplicates, lost) = count(committed, end, &r.read);
            assert_eq!(lost, 0, "{g}: resuming at {:?} loses records", r.from);
            reread.push(duplicates);
        }
        let (precise, mm2_mode) = (reread[0], reread[1]);
        // Precise: through MM2's newest sync at or below the commit, so the
        // re-read is what lies between them, and under the sync spacing
        // wherever MM2 wrote its syncs at that spacing.
        let (below, above) = bracket(&history, committed);
        let expected = (committed - below - 1).max(0);
        assert_eq!(
            precise as i64, expected,
            "lag {lag}: precise mode re-reads {precise}, not {expected} (MM2's syncs {below} and {above:?})"
        );
        let dense = above.is_none_or(|a| a - below <= SPACING + 1);
        assert!(dense || label == "gap", "{label}: placed in a gap");
        if dense {
            assert!(
                expected < SPACING,
                "lag {lag}: precise mode re-reads {precise}"
            );
        }
        // A precise checkpoint is at least MM2's answer (docs/translation.md).
        assert!(
            precise <= mm2_mode,
            "lag {lag}: precise re-reads {precise}, more than mm2's {mm2_mode}"
        );
        let between = above.map_or_else(|| format!("{below}.."), |a| format!("{below}..{a}"));
        eprintln!(
            "failover: {label:>6} {lag:>7} {precise:>8} {mm2_mode:>8}   (MM2's syncs {between})"
        );
    }
    drop(mm2);
    eprintln!("failover: wall time {:?}", started.elapsed());
}
