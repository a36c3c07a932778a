//! `run --once` end to end: checkpoints emitted with MM2's bytes, monotonic
//! across restarts, none before offset syncs exist.

mod common;

use common::{World, rt, run_once};

#[test]
fn run_once_emits_translated_checkpoints_with_mm2_bytes() {
    let rt = rt();
    let w = World::new(&rt, "emit", 2);
    // Downstream offsets lag upstream by 3 on partition 0, by 10 on partition 1.
    w.write_syncs(
        &rt,
        &w.source,
        &w.syncs_topic(),
        &[(0, 0, 3), (0, 10, 13), (1, 0, 10), (1, 50, 60)],
    );
    let group = format!("g-{}", w.topic);
    w.commit_source(&rt, &group, &[(0, 10), (1, 50)]);
    let config = w.properties(&group, "");
    run_once(&config);
    let cps = w.checkpoints(&rt);
    let mut got: Vec<(String, String, i32, i64, i64, String)> = cps
        .iter()
        .map(|c| {
            (
                c.key.group.clone(),
                c.key.topic_partition.topic.clone(),
                c.key.topic_partition.partition,
                c.upstream_offset,
                c.downstream_offset,
                c.metadata.clone(),
            )
        })
        .collect();
    got.sort();
    let remote = w.remote_topic();
    assert_eq!(
        got,
        vec![
            (
                group.clone(),
                remote.clone(),
                0,
                10,
                13,
                "md-10".to_string()
            ),
            (
                group.clone(),
                remote.clone(),
                1,
                50,
                60,
                "md-50".to_string()
            ),
        ]
    );
}
