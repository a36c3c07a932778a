//! Precise translation end to end (docs/translation.md, "Precise translation"):
//! a long identity history of offset syncs, one every 100 records as MM2's source
//! task writes them with `offset.lag.max = 100`, and groups lagging the log end by
//! about 150 to 100,000 records. In precise mode every checkpoint is within the
//! sync spacing below the group's true position (its committed offset: the mirror
//! is an identity) and never past it; in the default mode the checkpoints are those
//! of MM2's algorithm; `translate` shows (and `--apply` commits) the precise values.

use std::collections::BTreeMap;
use std::time::Duration;

use e2e::binary::{mm2, run_once};
use e2e::faults::{Daemon, latest, wait_for};
use e2e::world::{World, rt, sync_records};
use mm2_checkpoint::core::{InitMode, OffsetSyncStore, Translation};
use mm2_checkpoint::driver::FlowCluster;

/// Records of the identity mirror: offsets `0..END`, a sync every `SPACING`.
const END: i64 = 1_000_000;
const SPACING: i64 = 100;
/// How far behind the log end each group is.
const LAGS: [i64; 4] = [150, 1_030, 10_050, 100_070];
const PRECISE: &str = "mm2-checkpoint.offset.translation = precise";
/// [`PRECISE`] with a budget covering every group of the tests that use it (the
/// default, 1,000 syncs, covers 100,000 records at this spacing; the largest of
/// [`LAGS`] is 100,070 behind, and 400,070 once the running daemon's head moved on).
const PRECISE_WIDE: &str = "mm2-checkpoint.offset.translation = precise\n\
                            mm2-checkpoint.offset.translation.max.syncs.per.partition = 10000";

/// The identity syncs `(0, o, o)` for `o` in `from..to`, every `SPACING`.
fn identity_syncs(from: i64, to: i64) -> Vec<(i32, i64, i64)> {
    (from..to)
        .step_by(SPACING as usize)
        .map(|o| (0, o, o))
        .collect()
}

/// Writes `syncs` to the world's offset-syncs topic in batches.
fn write(rt: &tokio::runtime::Runtime, w: &World, syncs: &[(i32, i64, i64)]) {
    for chunk in syncs.chunks(2_000) {
        w.write_syncs(rt, &w.source, &w.syncs_topic(), chunk);
    }
}

fn group(w: &World, lag: i64) -> String {
    format!("g{lag}-{}", w.topic)
}

/// The `groups` filter selecting every group of [`group`].
fn groups_filter(w: &World) -> String {
    format!("g[0-9]+-{}", w.topic)
}

/// MM2's answer for `u` after `syncs`, from the core's port of its store.
fn mm2_answer(syncs: &[(i32, i64, i64)], u: i64) -> i64 {
    let mut store = OffsetSyncStore::new(InitMode::LoadAllHistory);
    for &(p, up, down) in syncs {
        store.apply("t", p, up, down);
    }
    store.finish_initial_read();
    match store.translate_offset("t", 0, u) {
        Translation::Translated(d) => d,
        other => panic!("MM2 does not translate {u}: {other:?}"),
    }
}

/// A world whose identity history ends at `END`, with one group per lag.
fn world(rt: &tokio::runtime::Runtime, name: &str) -> (World, Vec<(String, i64)>) {
    let w = World::new(rt, name, 1);
    write(rt, &w, &identity_syncs(0, END));
    let groups = LAGS
        .iter()
        .map(|&lag| {
            let g = group(&w, lag);
            w.commit_source(rt, &g, &[(0, END - lag)]);
            (g, END - lag)
        })
        .collect();
    (w, groups)
}

/// The newest checkpoint of each group on partition 0: group → (upstream, downstream).
fn checkpointed(rt: &tokio::runtime::Runtime, w: &World) -> BTreeMap<String, (i64, i64)> {
    latest(&w.checkpoints(rt))
        .into_iter()
        .filter(|((_, p), _)| *p == 0)
        .map(|((g, _), v)| (g, v))
        .collect()
}

/// Asserts a precise checkpoint of committed offset `u`: never past the true
/// position (`u`, the mirror being an identity), less than `SPACING` below it.
#[track_caller]
fn assert_precise(group: &str, u: i64, (up, down): (i64, i64)) {
    assert_eq!(up, u, "{group}: checkpoint of another offset");
    assert!(
        down <= u && u - down < SPACING,
        "{group} at {u}: checkpoint {down} re-reads {}",
        u - down
    );
}

#[test]
fn precise_checkpoints_are_within_the_sync_spacing_at_every_lag_and_translate_shows_them() {
    let rt = rt();
    let (w, groups) = world(&rt, "precise");
    let config = w.properties(&groups_filter(&w), PRECISE_WIDE);
    run_once(&config);
    let got = checkpointed(&rt, &w);
    assert_eq!(got.len(), groups.len(), "{got:?}");
    let history = identity_syncs(0, END);
    for (g, u) in &groups {
        assert_precise(g, *u, got[g]);
        // MM2 re-reads far more beyond the few syncs near the head.
        let mm2 = mm2_answer(&history, *u);
        assert!(got[g].1 >= mm2, "{g}: below MM2's {mm2}");
        if END - u > 1_000 {
            assert!(u - mm2 > 500, "{g}: MM2 re-reads only {}", u - mm2);
        }
    }

    // `translate` reads the same checkpoints, and --apply commits them.
    let flow = format!("{}->{}", w.s, w.t);
    let mut args = vec![
        "translate",
        "--config",
        config.to_str().unwrap(),
        "--flow",
        &flow,
        "--format",
        "json",
        "--apply",
    ];
    for (g, _) in &groups {
        args.extend(["--group", g.as_str()]);
    }
    let out = mm2(&args, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    for entry in doc["groups"].as_array().expect("groups") {
        let g = entry["group"].as_str().expect("group");
        let offsets = entry["offsets"].as_array().expect("offsets");
        assert_eq!(offsets.len(), 1, "{entry}");
        assert_eq!(offsets[0]["source_offset"].as_i64(), Some(got[g].0));
        assert_eq!(offsets[0]["target_offset"].as_i64(), Some(got[g].1));
        assert_eq!(w.target_offsets(&rt, g), [(0, got[g].1)].into());
    }
}

#[test]
fn the_default_mode_writes_exactly_the_checkpoints_of_mm2s_algorithm() {
    let rt = rt();
    let (w, groups) = world(&rt, "precisedefault");
    run_once(&w.properties(&groups_filter(&w), ""));
    let got = checkpointed(&rt, &w);
    let history = identity_syncs(0, END);
    for (g, u) in &groups {
        assert_eq!(got[g], (*u, mm2_answer(&history, *u)), "{g}");
    }
    // The example: about 100,000 behind, MM2 makes the group re-read
    // about 80,000 records (80,799 at exactly 100,000).
    let far = &groups[3];
    assert_eq!(far.1 - got[&far.0].1, 80_729);
}

/// While MM2's source task keeps writing syncs at the head (MM2's store would
/// evict the syncs near the lagging groups) and the groups move forward slowly,
/// the running daemon keeps every checkpoint within the sync spacing.
#[test]
fn a_running_daemon_stays_precise_while_syncs_arrive_and_lagging_groups_move_slowly() {
    let rt = rt();
    let w = World::new(&rt, "preciselive", 1);
    let head = 200_000;
    let mut history = identity_syncs(0, head);
    write(&rt, &w, &history);
    let mut groups: Vec<(String, i64)> = LAGS
        .iter()
        .map(|&lag| (group(&w, lag), head - lag))
        .collect();
    for (g, u) in &groups {
        w.commit_source(&rt, g, &[(0, *u)]);
    }
    let config = w.properties(&groups_filter(&w), PRECISE_WIDE);
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for("the first checkpoints", Duration::from_secs(60), || {
        let got = checkpointed(&rt, &w);
        groups
            .iter()
            .all(|(g, u)| got.get(g).is_some_and(|c| c.0 == *u))
    });
    let got = checkpointed(&rt, &w);
    for (g, u) in &groups {
        assert_precise(g, *u, got[g]);
    }

    // 300,000 more records mirrored: 3,000 new syncs at the head, and a new
    // group near the new head, precise only if the daemon read them.
    let more = identity_syncs(head, head + 300_000);
    write(&rt, &w, &more);
    history.extend(&more);
    let lagging = groups.len();
    // 250 behind: after the two moves below it is 50 behind the log end.
    let near_head = (group(&w, 250), head + 300_000 - 250);
    w.commit_source(&rt, &near_head.0, &[(0, near_head.1)]);
    groups.push(near_head);
    // Each group moves forward by one sync spacing, twice.
    for _ in 0..2 {
        for (g, u) in &mut groups {
            *u += SPACING;
            w.commit_source(&rt, g, &[(0, *u)]);
        }
        wait_for(
            "the moved groups' checkpoints",
            Duration::from_secs(30),
            || {
                let got = checkpointed(&rt, &w);
                groups
                    .iter()
                    .all(|(g, u)| got.get(g).is_some_and(|c| c.0 == *u))
            },
        );
        let got = checkpointed(&rt, &w);
        for (g, u) in &groups {
            assert_precise(g, *u, got[g]);
        }
        for (g, u) in &groups[..lagging] {
            // Far behind the new head MM2 would re-read thousands of records.
            let mm2 = mm2_answer(&history, *u);
            assert!(u - mm2 > 1_000, "{g} at {u}: MM2 re-reads only {}", u - mm2);
        }
    }
    let fallback = format!(
        "mm2_checkpoint_precise_fallback_partitions{{flow=\"{}->{}\"}}",
        w.s, w.t
    );
    assert_eq!(daemon.metric(&fallback), Some(0.0));
    assert_eq!(daemon.sigterm().code(), Some(0));
}

/// A budget smaller than the history: the partition falls back to MM2's
/// precision for the oldest offsets, with one WARN and the metric at 1, while
/// groups within the budget stay precise.
#[test]
fn past_its_budget_a_partition_falls_back_to_mm2s_answer_with_a_warning_and_a_metric() {
    let rt = rt();
    let w = World::new(&rt, "precisebudget", 1);
    let history = identity_syncs(0, 100_000);
    write(&rt, &w, &history);
    let recent = (group(&w, 950), 100_000 - 950);
    let old = (group(&w, 90_050), 100_000 - 90_050);
    for (g, u) in [&recent, &old] {
        w.commit_source(&rt, g, &[(0, *u)]);
    }
    let config = w.properties(
        &groups_filter(&w),
        &format!("{PRECISE}\nmm2-checkpoint.offset.translation.max.syncs.per.partition = 50"),
    );
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for("the checkpoints", Duration::from_secs(60), || {
        checkpointed(&rt, &w).len() == 2
    });
    let got = checkpointed(&rt, &w);
    assert_precise(&recent.0, recent.1, got[&recent.0]);
    assert_eq!(got[&old.0], (old.1, mm2_answer(&history, old.1)));
    let fallback = format!(
        "mm2_checkpoint_precise_fallback_partitions{{flow=\"{}->{}\"}}",
        w.s, w.t
    );
    assert_eq!(daemon.metric(&fallback), Some(1.0));
    let log = daemon.log_text();
    let warnings = log
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("max.syncs.per.partition = 50"))
        .count();
    assert_eq!(warnings, 1, "{log}");
    assert_eq!(daemon.sigterm().code(), Some(0));
}

/// Topic settings that let the broker's cleaner compact the offset-syncs
/// topic within seconds of a segment roll (the cleaner itself wakes up every
/// `log.cleaner.backoff.ms`, 15 s by default on the test clusters).
const AGGRESSIVE_COMPACTION: [(&str, &str); 5] = [
    ("cleanup.policy", "compact"),
    ("segment.ms", "100"),
    ("min.cleanable.dirty.ratio", "0.01"),
    ("delete.retention.ms", "100"),
    ("min.compaction.lag.ms", "0"),
];

/// How long a test waits for the cleaner to compact (bounded: the cleaner
/// wakes every 15 s and compacts a tiny log in well under a second).
const COMPACTION_WAIT: Duration = Duration::from_secs(120);

/// History up to this upstream offset in the compaction tests.
const HEAD: i64 = 20_000;

/// A world whose offset-syncs topic compacts aggressively, with the identity
/// history `0..HEAD` and groups lagging about 10^3 and 10^4 records.
fn compacting_world(rt: &tokio::runtime::Runtime, name: &str) -> (World, Vec<(String, i64)>) {
    let w = World::new(rt, name, 1);
    rt.block_on(
        w.source
            .create_topic(&w.syncs_topic(), 1, 1, &AGGRESSIVE_COMPACTION),
    )
    .expect("create the offset-syncs topic");
    write(rt, &w, &identity_syncs(0, HEAD));
    let groups = [1_030, 10_050]
        .iter()
        .map(|&lag| {
            let g = group(&w, lag);
            w.commit_source(rt, &g, &[(0, HEAD - lag)]);
            (g, HEAD - lag)
        })
        .collect();
    (w, groups)
}

/// Appends `roll` after the segment time so the segments holding everything
/// before it become cleanable, then waits until the cleaner left at most
/// `kept` records below `below`; returns the offsets left.
fn compact(
    rt: &tokio::runtime::Runtime,
    w: &World,
    roll: &[(i32, i64, i64)],
    below: i64,
    kept: usize,
) -> Vec<i64> {
    std::thread::sleep(Duration::from_millis(500));
    // The broker rolls a segment by record timestamps: the synthetic syncs
    // carry timestamp 0, so the roll record carries the wall clock.
    let topic = w.syncs_topic();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let mut records = sync_records(&w.topic, roll);
    records.iter_mut().for_each(|r| r.timestamp = now);
    rt.block_on(w.source.produce(&topic, 0, &records))
        .expect("produce the roll record");
    let mut left = Vec::new();
    wait_for(
        "the offset-syncs topic's compaction",
        COMPACTION_WAIT,
        || {
            let records = rt
                .block_on(w.source.read_to_end(&topic, 0))
                .expect("read the offset-syncs topic");
            left = records.iter().map(|r| r.offset).collect();
            left.iter().filter(|&&o| o < below).count() <= kept
        },
    );
    left
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The history kept in the sync-history topic survives a restart after
/// compaction removed the old syncs: groups that lagged before the restart
/// and moved meanwhile are checkpointed within the sync spacing, never past
/// their position. Without the kept history the topic's last sync alone
/// would leave them untranslatable.
#[test]
fn after_compaction_removed_the_old_syncs_a_restart_keeps_lagging_groups_precise() {
    let rt = rt();
    let (w, mut groups) = compacting_world(&rt, "precisecompact");
    let config = w.properties(&groups_filter(&w), PRECISE);
    run_once(&config);
    let got = checkpointed(&rt, &w);
    for (g, u) in &groups {
        assert_precise(g, *u, got[g]);
    }

    // Stopped; MM2 writes one more sync at the head and compaction runs.
    let syncs_before = (HEAD / SPACING) as usize;
    let left = compact(&rt, &w, &[(0, HEAD, HEAD)], syncs_before as i64, 2);
    assert!(
        left.len() <= 3,
        "the offset-syncs topic still holds {left:?}"
    );

    // The groups moved forward a little while we were stopped (past the next
    // sync, off the sync offsets), and a new group lags about 5,000 records.
    for (g, u) in &mut groups {
        *u += SPACING + 37;
        w.commit_source(&rt, g, &[(0, *u)]);
    }
    let fresh = (group(&w, 4_960), HEAD - 4_960);
    w.commit_source(&rt, &fresh.0, &[(0, fresh.1)]);
    groups.push(fresh);

    let out = run_once(&config);
    let log = stderr(&out);
    assert!(
        log.contains("restored the precise history of 1 source partitions"),
        "{log}"
    );
    let got = checkpointed(&rt, &w);
    for (g, u) in &groups {
        assert_precise(g, *u, got[g]);
    }
}

/// A rewind while the daemon was stopped (the source and remote topics
/// recreated, their syncs written again from offset 0), then compaction:
/// the kept history describes the old topics and must not come back. It is
/// refused, and no checkpoint goes past a group's true position on the new
/// topics.
#[test]
fn a_rewind_while_stopped_refuses_the_kept_history_and_nothing_passes_the_truth() {
    let rt = rt();
    let (w, groups) = compacting_world(&rt, "preciserewind");
    let config = w.properties(&groups_filter(&w), PRECISE);
    run_once(&config);

    // The new topics: record `u` lands at about `u / 2` (half are filtered),
    // far below where the old history would put it.
    let rewound: Vec<(i32, i64, i64)> = (0..HEAD)
        .step_by(SPACING as usize)
        .map(|o| (0, o, o / 2))
        .collect();
    write(&rt, &w, &rewound);
    let end = 2 * HEAD / SPACING;
    compact(&rt, &w, &[(0, HEAD, HEAD / 2)], end, 2);

    // The groups commit on the new topic; one is at the head.
    let mut moved: Vec<(String, i64)> = groups.iter().map(|(g, u)| (g.clone(), u + 37)).collect();
    moved.push((group(&w, 0), HEAD + 50));
    for (g, u) in &moved {
        w.commit_source(&rt, g, &[(0, *u)]);
    }
    let out = run_once(&config);
    let got = checkpointed(&rt, &w);
    for (g, u) in &moved {
        // The true position of `u` is past the newest sync at or below it.
        let truth_floor = (u - u % SPACING) / 2 + 1;
        if let Some(&(up, down)) = got.get(g).filter(|c| c.0 == *u) {
            assert_eq!(up, *u);
            assert!(
                down <= truth_floor,
                "{g} at {u}: checkpoint {down} past {truth_floor}"
            );
        }
    }
    let head = &moved[moved.len() - 1];
    assert_eq!(got[&head.0], (head.1, HEAD / 2 + 1));
    let log = stderr(&out);
    assert!(
        log.contains("not using the precise history kept in the sync-history topic"),
        "{log}"
    );
}
