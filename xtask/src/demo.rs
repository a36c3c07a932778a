//! `cargo xtask demo`: the main job end to end on the two local test clusters.
//!
//! It mimics what MM2's source connector would have done (a mirrored topic with
//! shifted offsets and the offset syncs describing the shift), commits a few
//! consumer groups on the source, then runs `mm2-checkpoint run --once` with group
//! offset sync on, and shows the result with `mm2-checkpoint translate` and the
//! target groups' committed offsets. Re-running reuses the seeded data.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use mm2_checkpoint::core::format::OffsetSync;
use mm2_checkpoint::core::{CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::FlowCluster;
use mm2_checkpoint::driver::{ClusterClient, OutRecord};

use crate::kafka::{self, Layout};
use crate::topics;

const TOPIC: &str = "orders";
/// The cluster aliases of the demo's flow, `source->target`.
const SOURCE: &str = "source";
const TARGET: &str = "target";
/// Partitions of the seeded topic and its mirror.
pub const PARTITIONS: i32 = 3;
const RECORDS: i64 = 100;
/// Records already in the mirror before replication started, per partition: the
/// downstream offset of upstream offset `u` is `u + SHIFT[p]`.
pub const SHIFT: [i64; 3] = [7, 0, 25];
/// Upstream offsets MM2 wrote offset syncs for (it writes one every so often).
pub const SYNC_POINTS: [i64; 4] = [0, 30, 60, 90];
/// Source groups and their committed offsets per partition.
const GROUPS: [(&str, [i64; 3]); 3] = [
    ("billing", [90, 60, 30]),
    ("analytics", [95, 40, 0]),
    ("fraud-checks", [31, 31, 31]),
];

fn step(text: &str) {
    println!("\n==> {text}");
}

/// Runs the demo.
pub fn demo(workspace: &Path, layout: &Layout) -> Result<()> {
    let started = Instant::now();
    step("Kafka: two local clusters, `source` and `target` (started if not running)");
    kafka::up(layout)?;
    let file = kafka::read_clusters_file(layout)?;
    let addr = |name: &str| -> Result<String> {
        Ok(file
            .clusters
            .get(name)
            .with_context(|| format!("cluster {name} missing from clusters.json"))?
            .bootstrap
            .plaintext
            .clone())
    };
    let (source_addr, target_addr) = (addr("source")?, addr("target")?);

    step("Building mm2-checkpoint (debug)");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "mm2-checkpoint",
            "--bin",
            "mm2-checkpoint",
        ])
        .current_dir(workspace)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build -p mm2-checkpoint failed");
    }
    let bin = workspace.join("target/debug/mm2-checkpoint");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let connect = |alias: &str, addr: &str| {
        ClusterClient::new(
            alias,
            vec![addr.to_owned()],
            kafka_lite::ConnectionConfig::default(),
        )
        .with_context(|| format!("client for {alias}"))
    };
    let source = connect("source", &source_addr)?;
    let target = connect("target", &target_addr)?;
    rt.block_on(seed(&source, &target))?;

    let dir = workspace.join("target/demo");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let config = dir.join("mm2.properties");
    let groups: Vec<&str> = GROUPS.iter().map(|(g, _)| *g).collect();
    std::fs::write(
        &config,
        format!(
            "# Written by `cargo xtask demo` for the local test clusters.\n\
             clusters = source, target\n\
             source.bootstrap.servers = {source_addr}\n\
             target.bootstrap.servers = {target_addr}\n\
             source->target.enabled = true\n\
             groups = {}\n\
             checkpoints.topic.replication.factor = 1\n\
             emit.checkpoints.interval.seconds = 5\n\
             sync.group.offsets.enabled = true\n\
             sync.group.offsets.interval.seconds = 5\n",
            groups.join(", ")
        ),
    )
    .with_context(|| format!("writing {}", config.display()))?;
    step(&format!(
        "Config: {} (sync.group.offsets.enabled = true)",
        config.display()
    ));
    print!("{}", std::fs::read_to_string(&config)?);

    let config_arg = config.to_str().context("non-UTF-8 path")?;
    step(
        "mm2-checkpoint run --once: read the offset syncs, translate each group, write checkpoints, sync the target groups",
    );
    let status = Command::new(&bin)
        .args(["run", "--once", "--config", config_arg])
        .status()
        .context("running mm2-checkpoint run --once")?;
    if !status.success() {
        bail!("mm2-checkpoint run --once failed ({status})");
    }

    step(&format!(
        "mm2-checkpoint translate: the checkpoints in {} on the target",
        topics::checkpoints(SOURCE)
    ));
    let mut args = vec![
        "translate",
        "--config",
        config_arg,
        "--flow",
        "source->target",
    ];
    for g in &groups {
        args.extend(["--group", g]);
    }
    let status = Command::new(&bin)
        .args(&args)
        .status()
        .context("running mm2-checkpoint translate")?;
    if !status.success() {
        bail!("mm2-checkpoint translate failed ({status})");
    }

    step(
        "Target groups now: consumers failing over to `target` resume at these offsets of source.orders",
    );
    let names: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    let remote = topics::remote(SOURCE, TOPIC);
    let offsets = rt
        .block_on(target.fetch_group_offsets(&names))
        .context("fetching the target groups' offsets")?;
    println!(
        "{:<14} {:<16} {:>9} {:>14} {:>14}",
        "GROUP", "TOPIC", "PARTITION", "SOURCE OFFSET", "TARGET OFFSET"
    );
    for (group, committed) in GROUPS {
        let theirs = offsets.get(group).and_then(|r| r.as_ref().ok());
        for p in 0..PARTITIONS {
            let tp = TopicPartition::new(&remote, p);
            let target_offset = theirs
                .and_then(|o| o.get(&tp))
                .and_then(|v| v.as_ref())
                .map_or("-".to_string(), |c| c.offset.to_string());
            let up = usize::try_from(p)
                .ok()
                .and_then(|i| committed.get(i))
                .copied()
                .unwrap_or(-1);
            println!("{group:<14} {remote:<16} {p:>9} {up:>14} {target_offset:>14}");
        }
    }
    println!(
        "\n(the mirror is upstream + {SHIFT:?} per partition. An offset with a sync translates exactly; \
         any other offset translates to just after the nearest older sync the store kept (MM2 keeps \
         exponentially spaced syncs, so older offsets land further back): consumers may re-read \
         records after failover but never skip one)"
    );
    println!("\ndemo done in {:.1}s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Creates and fills `orders` and its mirror, writes the offset syncs and commits
/// the source groups, unless `orders` already exists (a previous demo run).
async fn seed(source: &ClusterClient, target: &ClusterClient) -> Result<()> {
    if source.topic_exists(TOPIC).await? {
        step("Seed: `orders` already exists on source (an earlier demo run); reusing it");
        return Ok(());
    }
    let groups: Vec<(String, [i64; 3])> =
        GROUPS.iter().map(|(g, o)| ((*g).to_owned(), *o)).collect();
    seed_flow(
        source,
        target,
        &Seed {
            topic: TOPIC,
            remote: &topics::remote(SOURCE, TOPIC),
            syncs: &topics::offset_syncs(TARGET),
            groups: &groups,
        },
        true,
    )
    .await
}

/// The names one seeded flow uses (see [`seed_flow`]).
#[derive(Debug, Clone, Copy)]
pub struct Seed<'a> {
    /// The upstream topic on the source cluster.
    pub topic: &'a str,
    /// Its mirror on the target (`<source alias>.<topic>` by default).
    pub remote: &'a str,
    /// The offset-syncs topic on the source (`mm2-offset-syncs.<target alias>.internal`).
    pub syncs: &'a str,
    /// Source groups and their committed offsets per partition.
    pub groups: &'a [(String, [i64; 3])],
}

/// The mirror's offset of upstream offset `upstream` in `partition`: the mirror
/// holds [`SHIFT`] extra records per partition ahead of the replicated ones.
pub fn downstream_offset(partition: i32, upstream: i64) -> i64 {
    let shift = usize::try_from(partition)
        .ok()
        .and_then(|p| SHIFT.get(p))
        .copied()
        .unwrap_or(0);
    upstream + shift
}

/// What MM2's source connector would have left behind, on the real clusters:
/// `seed.topic` on the source with [`PARTITIONS`] x [`RECORDS`] records, its
/// mirror `seed.remote` on the target shifted by [`SHIFT`] records, offset syncs
/// for [`SYNC_POINTS`] in `seed.syncs` on the source, and `seed.groups`
/// committed on the source. `verbose` narrates each step on stdout.
pub async fn seed_flow(
    source: &ClusterClient,
    target: &ClusterClient,
    seed: &Seed<'_>,
    verbose: bool,
) -> Result<()> {
    let say = |text: &str| {
        if verbose {
            step(text);
        }
    };
    let Seed {
        topic,
        remote,
        syncs: syncs_topic,
        groups,
    } = *seed;
    say(&format!(
        "Seed: topic `{topic}` on source, {PARTITIONS} partitions x {RECORDS} records"
    ));
    source.create_topic(topic, PARTITIONS, 1, &[]).await?;
    target.create_topic(remote, PARTITIONS, 1, &[]).await?;
    let record = |p: i32, i: i64, label: &str| OutRecord {
        key: format!("order-{p}-{i}").into_bytes(),
        value: format!("{{\"order\":{i},\"partition\":{p},\"{label}\":true}}").into_bytes(),
        timestamp: 0,
    };
    for p in 0..PARTITIONS {
        let records: Vec<OutRecord> = (0..RECORDS).map(|i| record(p, i, "original")).collect();
        source.produce(topic, p, &records).await?;
    }
    say(&format!(
        "Seed: mirror `{remote}` on target, shifted by {SHIFT:?} records (data that was there before replication started)"
    ));
    for p in 0..PARTITIONS {
        let shift = downstream_offset(p, 0);
        let mut records: Vec<OutRecord> =
            (0..shift).map(|i| record(p, i, "pre_existing")).collect();
        records.extend((0..RECORDS).map(|i| record(p, i, "replicated")));
        target.produce(remote, p, &records).await?;
    }
    say(&format!(
        "Seed: offset syncs in `{syncs_topic}` on source, as MM2's source connector writes them (upstream {SYNC_POINTS:?})"
    ));
    if !source.topic_exists(syncs_topic).await? {
        source
            .create_topic(syncs_topic, 1, 1, &[("cleanup.policy", "compact")])
            .await?;
    }
    let mut syncs = Vec::new();
    for &u in &SYNC_POINTS {
        for p in 0..PARTITIONS {
            let sync = OffsetSync {
                topic_partition: TopicPartition::new(topic, p),
                upstream_offset: u,
                downstream_offset: downstream_offset(p, u),
            };
            syncs.push(OutRecord {
                key: sync.encode_key()?,
                value: sync.encode_value(),
                timestamp: 0,
            });
        }
    }
    source.produce(syncs_topic, 0, &syncs).await?;
    say("Seed: consumer groups on source with committed offsets");
    for (group, offsets) in groups {
        let map: BTreeMap<TopicPartition, CommittedOffset> = (0..PARTITIONS)
            .zip(*offsets)
            .map(|(p, o)| (TopicPartition::new(topic, p), CommittedOffset::new(o, "")))
            .collect();
        source.commit_group_offsets(group, &map).await?;
        if verbose {
            println!("    {group}: {offsets:?}");
        }
    }
    Ok(())
}
