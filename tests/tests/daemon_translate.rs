//! `translate`: the checkpointed offsets as a table or JSON, and `--apply`.

use std::time::Duration;

use e2e::binary::{mm2, run_once};
use e2e::world::{World, rt};

/// Runs `translate` over the world's flow with `extra` arguments.
fn run_translate(config: &std::path::Path, w: &World, extra: &[&str]) -> std::process::Output {
    let flow = format!("{}->{}", w.s, w.t);
    let mut args = vec![
        "translate",
        "--config",
        config.to_str().unwrap(),
        "--flow",
        &flow,
    ];
    args.extend_from_slice(extra);
    mm2(&args, Duration::from_secs(60))
}

/// [`run_translate`], asserting success.
fn translate(config: &std::path::Path, w: &World, extra: &[&str]) -> std::process::Output {
    let out = run_translate(config, w, extra);
    assert!(
        out.status.success(),
        "translate failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn translate_prints_each_groups_target_offsets_as_json() {
    let rt = rt();
    let w = World::new(&rt, "trjson", 2);
    let group = w.seed(
        &rt,
        &[(0, 0, 3), (0, 10, 13), (1, 0, 4), (1, 20, 24)],
        &[(0, 10), (1, 20)],
    );
    let other = format!("none-{}", w.topic);
    let config = w.properties(&group, "");
    run_once(&config);
    let out = translate(
        &config,
        &w,
        &["--group", &group, "--group", &other, "--format", "json"],
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let groups = doc["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["group"], group.as_str());
    let offsets: Vec<(String, i64, i64)> = groups[0]["offsets"]
        .as_array()
        .expect("offsets")
        .iter()
        .map(|o| {
            (
                o["topic"].as_str().unwrap().to_string(),
                o["partition"].as_i64().unwrap(),
                o["target_offset"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        offsets,
        vec![(w.remote_topic(), 0, 13), (w.remote_topic(), 1, 24)]
    );
    assert_eq!(groups[1]["offsets"].as_array().map(Vec::len), Some(0));
}

#[test]
fn translate_table_lists_the_target_offset() {
    let rt = rt();
    let w = World::new(&rt, "trtable", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let config = w.properties(&group, "");
    run_once(&config);
    let out = translate(&config, &w, &["--group", &group]);
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with(&group))
        .unwrap_or_else(|| panic!("no row for the group:\n{text}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cols,
        vec![group.as_str(), &w.remote_topic(), "0", "10", "13"]
    );
}

#[test]
fn translate_apply_commits_to_the_target_group_without_rewinding() {
    let rt = rt();
    let w = World::new(&rt, "trapply", 2);
    let group = w.seed(
        &rt,
        &[(0, 0, 3), (0, 10, 13), (1, 0, 4), (1, 20, 24)],
        &[(0, 10), (1, 20)],
    );
    // Partition 1 is already ahead on the target.
    w.commit_target(&rt, &group, &[(0, 1), (1, 99)]);
    let config = w.properties(&group, "");
    run_once(&config);
    let out = translate(&config, &w, &["--group", &group, "--apply"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("{group}: committed 1 partitions")),
        "{text}"
    );
    assert_eq!(w.target_offsets(&rt, &group), [(0, 13), (1, 99)].into());
}

#[test]
fn translate_apply_exits_3_naming_each_group_it_did_not_commit() {
    let rt = rt();
    let w = World::new(&rt, "trrefused", 1);
    let ahead = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let fresh = format!("fresh-{}", w.topic);
    w.commit_source(&rt, &fresh, &[(0, 10)]);
    // Committing 13 would rewind this target group.
    w.commit_target(&rt, &ahead, &[(0, 50)]);
    let config = w.properties(&format!("{ahead},{fresh}"), "");
    run_once(&config);
    let out = run_translate(
        &config,
        &w,
        &["--group", &ahead, "--group", &fresh, "--apply"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "stderr:\n{stderr}");
    assert!(
        stderr.contains(&format!("group {ahead} was not committed"))
            && stderr.contains("at or ahead"),
        "the refused group and why are not named:\n{stderr}"
    );
    assert!(!stderr.contains(&fresh), "{stderr}");
    assert_eq!(w.target_offsets(&rt, &fresh), [(0, 13)].into());
    assert_eq!(w.target_offsets(&rt, &ahead), [(0, 50)].into());
}

/// The groups of a JSON answer, in order.
fn json_groups(out: &std::process::Output) -> Vec<String> {
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    doc["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["group"].as_str().expect("group name").to_string())
        .collect()
}

/// `--group-regex` (Java syntax, whole name) and `--all-groups` pick groups
/// from the checkpoints topic, `--groups-file` reads names from a file or
/// stdin; `--apply` commits exactly the selected groups.
#[test]
fn translate_selects_groups_by_regex_all_groups_and_file() {
    let rt = rt();
    let w = World::new(&rt, "trselect", 1);
    let billing = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let audit = format!("audit-{}", w.topic);
    w.commit_source(&rt, &audit, &[(0, 10)]);
    let config = w.properties(&format!("{billing},{audit}"), "");
    run_once(&config);

    let out = translate(&config, &w, &["--group-regex", "g-.*", "--format", "json"]);
    assert_eq!(json_groups(&out), [billing.as_str()]);
    let out = translate(&config, &w, &["--all-groups", "--format", "json"]);
    assert_eq!(json_groups(&out), [audit.clone(), billing.clone()]);
    // A named group without checkpoints is listed too: named groups first, in
    // the order given, then the matching ones.
    let none = format!("none-{}", w.topic);
    let out = translate(
        &config,
        &w,
        &[
            "--group-regex",
            "audit-.*",
            "--group",
            &none,
            "--format",
            "json",
        ],
    );
    assert_eq!(json_groups(&out), [none, audit.clone()]);

    let file = w.dir.join("groups.txt");
    std::fs::write(&file, format!("# failover set\n\n  {audit}  \n")).expect("groups file");
    let out = translate(
        &config,
        &w,
        &["--groups-file", file.to_str().unwrap(), "--format", "json"],
    );
    assert_eq!(json_groups(&out), [audit.as_str()]);

    let flow = format!("{}->{}", w.s, w.t);
    let mut child = std::process::Command::new(e2e::binary::mm2_checkpoint())
        .args(["translate", config.to_str().unwrap(), "--flow", &flow])
        .args(["--groups-file", "-", "--format", "json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn translate");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "{billing}").expect("write stdin");
    }
    let out = child.wait_with_output().expect("translate output");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json_groups(&out), [billing.as_str()]);

    translate(&config, &w, &["--group-regex", "audit-.*", "--apply"]);
    assert_eq!(w.target_offsets(&rt, &audit), [(0, 13)].into());
    assert!(
        w.target_offsets(&rt, &billing).is_empty(),
        "a group the regex does not select was committed"
    );
}
