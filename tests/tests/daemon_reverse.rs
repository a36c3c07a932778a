//! Reverse checkpoints against bad input, end to end (docs/operations.md,
//! "Failing back"): a topic deleted and created again on the source since its
//! offset syncs, a group that never committed on the target, and a group
//! with members (KIP-848 protocol) on the source. The offset
//! syncs are written as MM2 writes them; `run --once` runs the reverse round
//! after the forward one. (The whole lifecycle with the real MirrorMaker 2 is
//! `failback_lifecycle.rs`.)

use e2e::binary::run_once;
use e2e::world::{World, checkpoints_in, committed_offsets, policy, rt};

/// The flow's config with group sync and reverse checkpoints on.
fn config(w: &World, group: &str) -> std::path::PathBuf {
    w.properties(
        group,
        "sync.group.offsets.enabled = true\n\
         mm2-checkpoint.emit.reverse.checkpoints.enabled = true",
    )
}

/// Appends records `from..to` to the upstream topic on the source.
fn fill(rt: &tokio::runtime::Runtime, w: &World, from: i32, to: i32) {
    let records: Vec<(Vec<u8>, Vec<u8>)> = (from..to)
        .map(|i| (format!("k{i}").into_bytes(), format!("v{i}").into_bytes()))
        .collect();
    let refs: Vec<(&[u8], &[u8])> = records
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    w.write_raw(rt, &w.source, &w.topic, &refs);
}

#[test]
fn no_reverse_checkpoint_past_the_end_of_a_source_topic_created_again() {
    let rt = rt();
    let w = World::new(&rt, "revrecreated", 1);
    // The syncs describe 101 records of the topic's first life on S; the
    // topic now on S (created again) holds 20.
    let group = w.seed(&rt, &[(0, 0, 0), (0, 100, 100)], &[(0, 5)]);
    fill(&rt, &w, 0, 20);
    // The group read 150 on T (after the failover).
    w.commit_target(&rt, &group, &[(0, 150)]);
    let out = run_once(&config(&w, &group));
    let log = String::from_utf8_lossy(&out.stderr);
    let back = policy().checkpoints_topic(&w.t);
    let mine = |rt: &tokio::runtime::Runtime| -> Vec<(i64, i64)> {
        checkpoints_in(rt, &w.source, &back)
            .into_iter()
            .filter(|cp| cp.key.group == group)
            .map(|cp| (cp.upstream_offset, cp.downstream_offset))
            .collect()
    };
    assert!(mine(&rt).is_empty(), "a reverse checkpoint past the end");
    assert!(
        log.contains("is past the partition's end") && log.contains("101 > 20"),
        "no warning naming the position and the end:\n{log}"
    );
    assert_eq!(
        committed_offsets(&rt, &w.source, &group, &w.topic),
        [(0, 5)].into(),
        "the group on S was moved"
    );
    // Once the partition reaches the position, the reverse checkpoint is
    // written and the group raised.
    fill(&rt, &w, 20, 101);
    run_once(&config(&w, &group));
    assert_eq!(mine(&rt), [(150, 101)]);
    assert_eq!(
        committed_offsets(&rt, &w.source, &group, &w.topic),
        [(0, 101)].into()
    );
    // `translate` of the flow T->S reads them, as `translateOffsets` on S does.
    let c = e2e::clusters();
    let back_config = w.dir.join("back.properties");
    std::fs::write(
        &back_config,
        format!(
            "clusters = {s}, {t}\n{s}.bootstrap.servers = {sb}\n{t}.bootstrap.servers = {tb}\n\
             {t}->{s}.enabled = true\n",
            s = w.s,
            t = w.t,
            sb = c.source().bootstrap.get(e2e::Listener::Plaintext),
            tb = c.target().bootstrap.get(e2e::Listener::Plaintext),
        ),
    )
    .expect("write back.properties");
    let flow = format!("{}->{}", w.t, w.s);
    let out = e2e::binary::mm2(
        &[
            "translate",
            "--config",
            back_config.to_str().expect("utf-8"),
            "--flow",
            &flow,
            "--group",
            &group,
            "--format",
            "json",
        ],
        std::time::Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "translate failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let offsets = &doc["groups"][0]["offsets"][0];
    assert_eq!(
        (
            offsets["topic"].as_str(),
            offsets["partition"].as_i64(),
            offsets["target_offset"].as_i64()
        ),
        (Some(w.topic.as_str()), Some(0), Some(101)),
        "{doc}"
    );
}

#[test]
fn a_group_that_never_committed_on_the_target_gets_no_reverse_checkpoint() {
    let rt = rt();
    let w = World::new(&rt, "revnever", 1);
    fill(&rt, &w, 0, 200);
    let group = w.seed(&rt, &[(0, 0, 0), (0, 100, 100)], &[(0, 5)]);
    let out = run_once(&config(&w, &group));
    // The forward round synced the group into T (5 → 1), so it has a commit
    // on T now; its reverse position (1 → 1) is not ahead of 5 on S.
    let back = policy().checkpoints_topic(&w.t);
    let reverse: Vec<_> = checkpoints_in(&rt, &w.source, &back)
        .into_iter()
        .filter(|cp| cp.key.group == group)
        .map(|cp| (cp.upstream_offset, cp.downstream_offset))
        .collect();
    assert_eq!(
        w.target_offsets(&rt, &group),
        [(0, 1)].into(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(reverse, [(1, 1)]);
    assert_eq!(
        committed_offsets(&rt, &w.source, &group, &w.topic),
        [(0, 5)].into(),
        "the group on S was lowered"
    );
    // A group only on S, without group sync into T: nothing at all.
    let w = World::new(&rt, "revnever2", 1);
    fill(&rt, &w, 0, 200);
    let group = w.seed(&rt, &[(0, 0, 0), (0, 100, 100)], &[(0, 5)]);
    run_once(&w.properties(
        &group,
        "mm2-checkpoint.emit.reverse.checkpoints.enabled = true",
    ));
    let back = policy().checkpoints_topic(&w.t);
    assert!(
        checkpoints_in(&rt, &w.source, &back)
            .iter()
            .all(|cp| cp.key.group != group)
    );
    assert_eq!(
        committed_offsets(&rt, &w.source, &group, &w.topic),
        [(0, 5)].into()
    );
}

#[test]
fn a_group_with_kip_848_members_on_the_source_is_never_written() {
    use mm2_checkpoint::core::TargetGroupState;
    use mm2_checkpoint::driver::FlowCluster;
    use std::time::{Duration, Instant};
    let rt = rt();
    let w = World::new(&rt, "revactive", 1);
    fill(&rt, &w, 0, 200);
    let group = w.seed(&rt, &[(0, 0, 0), (0, 100, 100)], &[(0, 5)]);
    w.commit_target(&rt, &group, &[(0, 150)]);
    // A consumer of the new protocol in the group on S, committing nothing.
    let c = e2e::clusters();
    let member = std::process::Command::new(c.tool("kafka-console-consumer"))
        .args([
            "--bootstrap-server",
            c.source().bootstrap.get(e2e::Listener::Plaintext),
            "--topic",
            &w.topic,
            "--group",
            &group,
            "--consumer-property",
            "group.protocol=consumer",
            "--consumer-property",
            "enable.auto.commit=false",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn kafka-console-consumer");
    let mut member = scopeguard(member);
    let started = Instant::now();
    loop {
        let described = rt
            .block_on(w.source.describe_groups(std::slice::from_ref(&group)))
            .expect("describe");
        if described
            .get(&group)
            .is_some_and(|d| d.state == TargetGroupState::Stable)
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the consumer never joined {group} on S: {described:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = run_once(&config(&w, &group));
    let log = String::from_utf8_lossy(&out.stderr);
    let back = policy().checkpoints_topic(&w.t);
    // The reverse checkpoint is written; the group on S is left alone.
    assert!(
        checkpoints_in(&rt, &w.source, &back)
            .iter()
            .any(|cp| cp.key.group == group && cp.downstream_offset == 101),
        "{log}"
    );
    assert_eq!(
        committed_offsets(&rt, &w.source, &group, &w.topic),
        [(0, 5)].into(),
        "a group with members on S was written:\n{log}"
    );
    // Left alone by our decision (it was described with members), not only by
    // the broker's refusal of the commit.
    assert!(
        log.contains("group sync into the source done")
            && log.contains("skipped_active=1")
            && !log.contains("became active"),
        "{log}"
    );
    let _ = member.0.kill();
    let _ = member.0.wait();
}

/// Kills the child on drop (a failed assertion leaves no consumer behind).
struct Guard(std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scopeguard(child: std::process::Child) -> Guard {
    Guard(child)
}
