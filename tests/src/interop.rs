//! Shared setup of the tests that run our binary next to the real MirrorMaker
//! 2 (`interop_*.rs`): our `mm2.properties` for the test clusters, one
//! `run --once`, and source-group commits through Kafka's own consumer.

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::java::{CommitMode, GroupOffset, helpers};
use crate::{Listener, clusters};

/// The value of `result`, or a panic naming `what` and the error.
pub fn ok<T, E: Display>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// A fresh directory for one test's files, under the target's test tmpdir.
pub fn test_dir(name: &str) -> PathBuf {
    let dir = crate::binary::target_tmp_dir().join(name);
    std::fs::create_dir_all(&dir).expect("test dir");
    dir
}

/// Runs ours once per translation mode (`precise`, then `mm2`) on `topic`,
/// each checkpointing its own groups, `<topic>-<mode>-*`, with its files under
/// `test_dir(topic)/<mode>`.
pub fn run_once_per_mode(topic: &str) {
    let dir = test_dir(topic);
    for (mode, extra) in [
        ("precise", "mm2-checkpoint.offset.translation = precise\n"),
        ("mm2", ""),
    ] {
        let mode_dir = dir.join(mode);
        std::fs::create_dir_all(&mode_dir).expect("mode dir");
        run_once(&our_config(
            &mode_dir,
            topic,
            &format!("{topic}-{mode}-.*"),
            extra,
        ));
    }
}

/// Writes our `mm2.properties` for the `source->target` flow of the test
/// clusters into `dir`, checkpointing `groups` on `topic`, with the
/// `key = value` lines of `extra` appended; returns its path.
pub fn our_config(dir: &Path, topic: &str, groups: &str, extra: &str) -> PathBuf {
    let c = clusters();
    let properties = dir.join("mm2.properties");
    std::fs::write(
        &properties,
        format!(
            "clusters = source, target\n\
             source.bootstrap.servers = {}\n\
             target.bootstrap.servers = {}\n\
             source->target.enabled = true\n\
             topics = {topic}\n\
             groups = {groups}\n\
             checkpoints.topic.replication.factor = 1\n\
             {extra}",
            c.source().bootstrap.get(Listener::Plaintext),
            c.target().bootstrap.get(Listener::Plaintext),
        ),
    )
    .expect("write mm2.properties");
    properties
}

/// Runs `mm2-checkpoint run --once` on `properties`; fails the test unless it
/// succeeds. Returns its log (stderr, one JSON object per line).
pub fn run_once(properties: &Path) -> String {
    let out = Command::new(crate::binary::mm2_checkpoint())
        .args(["run", "--once", "--log-format", "json", "--config"])
        .arg(properties)
        .output()
        .expect("run mm2-checkpoint");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "run --once failed:\n{log}");
    log
}

/// The numeric field `field` of the first event logged with `message` in a
/// [`run_once`] log, if any.
pub fn logged_number(log: &str, message: &str, field: &str) -> Option<u64> {
    log.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| event["fields"]["message"] == message)
        .and_then(|event| event["fields"][field].as_u64())
}

/// Commits `(partition, offset)` pairs of `topic` for `group` on the source
/// cluster, as a classic-protocol member, without metadata.
pub fn commit(group: &str, topic: &str, offsets: &[(i32, i64)]) {
    let offsets: Vec<GroupOffset> = offsets
        .iter()
        .map(|&(partition, offset)| GroupOffset {
            topic: topic.to_owned(),
            partition,
            offset,
            metadata: String::new(),
        })
        .collect();
    ok(
        helpers().commit_offsets(
            clusters().source().bootstrap.get(Listener::Plaintext),
            group,
            CommitMode::Classic,
            &offsets,
        ),
        "committing a source group",
    );
}
