//! The daemon half of `cargo xtask dist-test`: real `run --once` rounds of a
//! release binary, inside an empty root, against the local test clusters.
//!
//! Each round gets its own cluster aliases, topic and group (so rounds never
//! see each other's data), seeded with [`demo::seed_flow`]: a source topic, its
//! shifted mirror on the target, offset syncs on the source and a committed
//! source group. The root gets an `mm2.properties` (bootstrap addresses are
//! `127.0.0.1` literals: the root has no `/etc/hosts`) and, for TLS, the test
//! CA as `/ca.pem`. After the binary exits, the checkpoints it wrote are read
//! back from the target with the driver's own client and compared with the
//! offsets the seed makes exact.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use mm2_checkpoint::core::format::Checkpoint;
use mm2_checkpoint::driver::kafka::{ClusterClient, OffsetSpec};

use crate::demo::{self, PARTITIONS, SYNC_POINTS, Seed};
use crate::kafka::{self, ClusterInfo, Layout};

/// Where the config and CA file live inside the root.
pub const CONFIG_IN_ROOT: &str = "/mm2.properties";
/// The CA certificate's path inside the root.
pub const CA_IN_ROOT: &str = "/ca.pem";

/// How the binary in the root reaches both clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// The PLAINTEXT listener.
    Plaintext,
    /// The SSL listener (server authentication), CA given as a PEM truststore.
    Ssl,
}

impl Protocol {
    /// Both, in test order.
    pub const ALL: [Protocol; 2] = [Protocol::Plaintext, Protocol::Ssl];

    /// The `security.protocol` value.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Plaintext => "PLAINTEXT",
            Protocol::Ssl => "SSL",
        }
    }
}

/// The test clusters, started by [`Clusters::up`] if they were not running
/// and stopped again on drop only in that case.
pub struct Clusters {
    layout: Layout,
    started_here: bool,
    source: ClusterInfo,
    target: ClusterInfo,
    source_client: ClusterClient,
    target_client: ClusterClient,
    rt: tokio::runtime::Runtime,
}

impl Clusters {
    /// Brings the clusters up (if needed) and connects to both over PLAINTEXT.
    pub fn up(layout: &Layout) -> Result<Clusters> {
        let started_here = kafka::up(layout)?;
        // From here on, a failure must still stop what we started.
        let down_on_error = |e: anyhow::Error| {
            if started_here {
                if let Err(down) = kafka::down(layout) {
                    eprintln!("xtask: warning: stopping the clusters failed: {down:#}");
                }
            }
            e
        };
        let file = kafka::read_clusters_file(layout).map_err(down_on_error)?;
        let get = |name: &str| -> Result<ClusterInfo> {
            file.clusters
                .get(name)
                .cloned()
                .with_context(|| format!("cluster {name} missing from clusters.json"))
        };
        let source = get("source").map_err(down_on_error)?;
        let target = get("target").map_err(down_on_error)?;
        let connect = |info: &ClusterInfo| {
            ClusterClient::new(
                &info.name,
                vec![info.bootstrap.plaintext.clone()],
                kafka_lite::ConnectionConfig::default(),
            )
            .with_context(|| format!("client for {}", info.name))
        };
        let source_client = connect(&source).map_err(down_on_error)?;
        let target_client = connect(&target).map_err(down_on_error)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("tokio runtime")
            .map_err(down_on_error)?;
        Ok(Clusters {
            layout: layout.clone(),
            started_here,
            source,
            target,
            source_client,
            target_client,
            rt,
        })
    }

    /// The test CA that signed both brokers' certificates.
    pub fn ca_pem(&self) -> &Path {
        &self.source.tls.ca_pem
    }

    /// Seeds a fresh flow for one round; `label` goes into the names.
    pub fn prepare(&self, label: &str) -> Result<Round> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let id = format!("{label}_{}_{nanos}", std::process::id())
            .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let round = Round {
            source_alias: format!("s{id}"),
            target_alias: format!("t{id}"),
            topic: format!("orders_{id}"),
            group: format!("group_{id}"),
        };
        // The latest sync point on every partition: translates exactly.
        let latest = SYNC_POINTS.last().copied().unwrap_or(0);
        let groups = vec![(round.group.clone(), [latest; 3])];
        let remote = round.remote_topic();
        let syncs = format!("mm2-offset-syncs.{}.internal", round.target_alias);
        self.rt
            .block_on(demo::seed_flow(
                &self.source_client,
                &self.target_client,
                &Seed {
                    topic: &round.topic,
                    remote: &remote,
                    syncs: &syncs,
                    groups: &groups,
                },
                false,
            ))
            .with_context(|| format!("seeding round {id}"))?;
        Ok(round)
    }

    /// The `mm2.properties` for `round` over `protocol`, as seen from inside
    /// the root.
    pub fn properties(&self, round: &Round, protocol: Protocol) -> String {
        let (sb, tb) = match protocol {
            Protocol::Plaintext => (
                &self.source.bootstrap.plaintext,
                &self.target.bootstrap.plaintext,
            ),
            Protocol::Ssl => (&self.source.bootstrap.ssl, &self.target.bootstrap.ssl),
        };
        let mut text = format!(
            "# Written by `cargo xtask dist-test`.\n\
             clusters = {s}, {t}\n\
             {s}.bootstrap.servers = {sb}\n\
             {t}.bootstrap.servers = {tb}\n\
             {s}->{t}.enabled = true\n\
             groups = {g}\n\
             checkpoints.topic.replication.factor = 1\n\
             admin.timeout.ms = 30000\n\
             security.protocol = {p}\n",
            s = round.source_alias,
            t = round.target_alias,
            g = round.group,
            p = protocol.name(),
        );
        if protocol == Protocol::Ssl {
            text.push_str(&format!(
                "ssl.truststore.type = PEM\nssl.truststore.location = {CA_IN_ROOT}\n"
            ));
        }
        text
    }

    /// Writes the round's config (and for TLS the CA) into `root`, readable by
    /// the unprivileged user the binary runs as.
    pub fn install(&self, root: &Path, round: &Round, protocol: Protocol) -> Result<()> {
        let write = |name: &str, bytes: &[u8]| -> Result<()> {
            let path = root.join(name.trim_start_matches('/'));
            fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o644))?;
            Ok(())
        };
        write(CONFIG_IN_ROOT, self.properties(round, protocol).as_bytes())?;
        let ca = fs::read(self.ca_pem())
            .with_context(|| format!("reading {}", self.ca_pem().display()))?;
        write(CA_IN_ROOT, &ca)
    }

    /// Checks that the round's checkpoints are on the target: one per
    /// partition of the mirror, with the committed upstream offset and its
    /// exact translation.
    pub fn verify(&self, round: &Round) -> Result<()> {
        let topic = round.checkpoints_topic();
        let found = self
            .rt
            .block_on(read_checkpoints(&self.target_client, &topic))?;
        let ours: BTreeMap<i32, &Checkpoint> = found
            .iter()
            .filter(|c| {
                c.key.group == round.group && c.key.topic_partition.topic == round.remote_topic()
            })
            .map(|c| (c.key.topic_partition.partition, c))
            .collect();
        let latest = SYNC_POINTS.last().copied().unwrap_or(0);
        for p in 0..PARTITIONS {
            let Some(c) = ours.get(&p) else {
                bail!(
                    "no checkpoint for group {} on {}-{p} in {topic} ({} records there)",
                    round.group,
                    round.remote_topic(),
                    found.len()
                );
            };
            let want = demo::downstream_offset(p, latest);
            if c.upstream_offset != latest || c.downstream_offset != want {
                bail!(
                    "checkpoint for {}-{p}: upstream {} -> downstream {}, expected {latest} -> {want}",
                    round.remote_topic(),
                    c.upstream_offset,
                    c.downstream_offset
                );
            }
        }
        Ok(())
    }
}

impl Drop for Clusters {
    fn drop(&mut self) {
        if self.started_here {
            if let Err(e) = kafka::down(&self.layout) {
                eprintln!("xtask: warning: stopping the clusters failed: {e:#}");
            }
        } else {
            eprintln!("xtask: leaving the clusters running (they were up before dist-test)");
        }
    }
}

/// The unique names of one round.
#[derive(Debug, Clone)]
pub struct Round {
    /// The source cluster's alias.
    pub source_alias: String,
    /// The target cluster's alias.
    pub target_alias: String,
    /// The upstream topic.
    pub topic: String,
    /// The committed source group.
    pub group: String,
}

impl Round {
    fn remote_topic(&self) -> String {
        format!("{}.{}", self.source_alias, self.topic)
    }

    fn checkpoints_topic(&self) -> String {
        format!("{}.checkpoints.internal", self.source_alias)
    }
}

/// Every record of partition 0 of `topic` (empty if it does not exist), decoded.
async fn read_checkpoints(cluster: &ClusterClient, topic: &str) -> Result<Vec<Checkpoint>> {
    if !cluster.topic_exists(topic).await? {
        bail!("the checkpoints topic {topic} does not exist on the target");
    }
    let end = cluster.list_offset(topic, 0, OffsetSpec::Latest).await?;
    let mut pos = cluster.list_offset(topic, 0, OffsetSpec::Earliest).await?;
    let mut out = Vec::new();
    while pos < end {
        let fetched = cluster.fetch(topic, 0, pos, 500).await?;
        for r in fetched.records.iter().filter(|r| r.offset < end) {
            out.push(
                Checkpoint::decode(r.key.as_deref(), r.value.as_deref())
                    .with_context(|| format!("decoding {topic} offset {}", r.offset))?,
            );
        }
        if fetched.next_offset <= pos {
            bail!("fetching {topic} made no progress at offset {pos}");
        }
        pos = fetched.next_offset;
    }
    Ok(out)
}

/// `cargo xtask footprint [--groups N]`: runtime figures of the static x86_64
/// binary (default variant) against the test clusters, for docs/benchmarks.md.
///
/// Seeds one flow with `N` committed source groups (default 300), then
/// measures the peak RSS of `run --once` (`/usr/bin/time -v`), and in daemon
/// mode with `--metrics-addr` the time from process start to `/readyz` 200 and
/// `VmRSS` after the first round.
pub fn footprint(workspace: &Path, args: &[&str]) -> Result<()> {
    let mut groups = 300usize;
    let mut rest = args.iter();
    while let Some(&arg) = rest.next() {
        match arg {
            "--groups" => {
                groups = rest
                    .next()
                    .context("`--groups` needs a value")?
                    .parse()
                    .context("`--groups` takes a number")?
            }
            _ => bail!("unknown argument `{arg}` to `cargo xtask footprint`"),
        }
    }
    let package = crate::dist::Package::load(workspace)?;
    let binary = package.artefact(crate::dist::Arch::X86_64, crate::dist::Variant::Default);
    if !binary.is_file() {
        bail!("{} missing: run `cargo xtask dist` first", binary.display());
    }
    let clusters = Clusters::up(&Layout::new(workspace))?;
    let round = clusters.prepare("footprint")?;
    let latest = SYNC_POINTS.last().copied().unwrap_or(0);
    let names: Vec<String> = (0..groups)
        .map(|i| format!("{}_{i:04}", round.group))
        .collect();
    clusters.rt.block_on(async {
        for name in &names {
            let map: BTreeMap<_, _> = (0..PARTITIONS)
                .map(|p| {
                    (
                        mm2_checkpoint::core::TopicPartition::new(&round.topic, p),
                        mm2_checkpoint::core::CommittedOffset::new(latest, ""),
                    )
                })
                .collect();
            clusters
                .source_client
                .commit_group_offsets(name, &map)
                .await?;
        }
        anyhow::Ok(())
    })?;
    let dir = package.dist_dir().join("footprint");
    fs::create_dir_all(&dir)?;
    let config = dir.join("mm2.properties");
    let text = clusters.properties(&round, Protocol::Plaintext).replace(
        &format!("groups = {}\n", round.group),
        &format!("groups = {}_.*\n", round.group),
    ) + "emit.checkpoints.interval.seconds = 10\nsync.group.offsets.interval.seconds = 10\n";
    fs::write(&config, text)?;
    let config_arg = config.to_str().context("non-UTF-8 path")?;

    // One round, measured by GNU time.
    let out = std::process::Command::new("/usr/bin/time")
        .arg("-v")
        .arg(&binary)
        .args(["run", "--config", config_arg, "--once"])
        .output()
        .context("running /usr/bin/time -v")?;
    let report = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("run --once failed: {report}");
    }
    let field = |key: &str| {
        report
            .lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    println!(
        "run --once, {groups} groups x {PARTITIONS} partitions: max RSS {} KiB, wall {}, user {} s, sys {} s",
        field("Maximum resident set size (kbytes):"),
        field("Elapsed (wall clock) time (h:mm:ss or m:ss):"),
        field("User time (seconds):"),
        field("System time (seconds):")
    );
    let checkpoints = clusters.rt.block_on(read_checkpoints(
        &clusters.target_client,
        &round.checkpoints_topic(),
    ))?;
    println!(
        "  checkpoints written: {} (expected {})",
        checkpoints.len(),
        groups * PARTITIONS as usize
    );

    // Daemon mode: start → /readyz 200, then VmRSS between rounds.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let addr = format!("127.0.0.1:{port}");
    let started = std::time::Instant::now();
    let mut child = std::process::Command::new(&binary)
        .args(["run", "--config", config_arg, "--metrics-addr", &addr])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting the daemon")?;
    let result = (|| -> Result<()> {
        let ready = loop {
            if started.elapsed() > std::time::Duration::from_secs(60) {
                bail!("not ready after 60 s");
            }
            if http_status(&addr, "/readyz") == Some(200) {
                break started.elapsed();
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        println!("daemon: start to /readyz 200 in {} ms", ready.as_millis());
        // First round is done with readiness; sample while idle before the next.
        std::thread::sleep(std::time::Duration::from_secs(3));
        let status = fs::read_to_string(format!("/proc/{}/status", child.id()))?;
        for key in ["VmRSS:", "VmHWM:"] {
            let value = status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(str::trim)
                .unwrap_or("?");
            println!("daemon idle after the first round: {key} {value}");
        }
        Ok(())
    })();
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// The HTTP status of `GET path` on `addr`, or `None` if there is no answer.
fn http_status(addr: &str, path: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut head = [0u8; 16];
    let n = stream.read(&mut head).ok()?;
    let text = std::str::from_utf8(head.get(..n)?).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}
