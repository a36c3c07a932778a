//! The daemon half of `cargo xtask dist-test` (and the flow of `cargo xtask
//! footprint`): real `run --once` rounds of a release binary, inside an
//! empty root, against the local test clusters.
//!
//! Each round gets its own cluster aliases, topic and group (so rounds never
//! see each other's data), seeded with [`demo::seed_flow`]: a source topic, its
//! shifted mirror on the target, offset syncs on the source and a committed
//! source group. The root gets an `mm2.properties` (bootstrap addresses are
//! `127.0.0.1` literals: the root has no `/etc/hosts`) and the test CA as
//! `/ca.pem` and client certificate and key as `/client.pem`, `/client.key`
//! (mTLS); SASL_SSL logs in as each cluster's SCRAM-SHA-512 test user. After the binary exits, the checkpoints it wrote are read
//! back from the target with the driver's own client and compared with the
//! offsets the seed makes exact.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use mm2_checkpoint::core::format::Checkpoint;
use mm2_checkpoint::core::{CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::ClusterClient;
use mm2_checkpoint::driver::FlowCluster;

use crate::demo::{self, PARTITIONS, SYNC_POINTS, Seed};
use crate::kafka::{self, ClusterInfo, ClustersGuard, GuardNotes, Layout, Listener};
use crate::topics;

/// Where the config and CA file live inside the root.
pub const CONFIG_IN_ROOT: &str = "/mm2.properties";
/// The CA certificate's path inside the root.
pub const CA_IN_ROOT: &str = "/ca.pem";
/// The test client certificate's path inside the root (mTLS).
pub const CLIENT_CERT_IN_ROOT: &str = "/client.pem";
/// The test client key's path inside the root (mTLS).
pub const CLIENT_KEY_IN_ROOT: &str = "/client.key";

/// How the binary in the root reaches both clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// The PLAINTEXT listener.
    Plaintext,
    /// The SSL listener (server authentication), CA given as a PEM truststore.
    Ssl,
    /// The mTLS listener: SSL with the test client certificate and key as
    /// PEM files.
    Mtls,
    /// The SASL_SSL listener: SCRAM-SHA-512 as the cluster's test user, over
    /// TLS trusting the test CA.
    SaslSsl,
}

impl Protocol {
    /// Every way, in test order.
    pub const ALL: [Protocol; 4] = [
        Protocol::Plaintext,
        Protocol::Ssl,
        Protocol::Mtls,
        Protocol::SaslSsl,
    ];

    /// The ways over TLS, in test order.
    pub const TLS: [Protocol; 3] = [Protocol::Ssl, Protocol::Mtls, Protocol::SaslSsl];

    /// A short name for logs and round labels.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Plaintext => "PLAINTEXT",
            Protocol::Ssl => "SSL",
            Protocol::Mtls => "mTLS",
            Protocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The `security.protocol` value.
    fn security_protocol(self) -> &'static str {
        match self {
            Protocol::Plaintext => "PLAINTEXT",
            Protocol::Ssl | Protocol::Mtls => "SSL",
            Protocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Whether the binary speaks TLS (and so picks a crypto provider).
    pub fn uses_tls(self) -> bool {
        self != Protocol::Plaintext
    }

    /// The listener of `info` this way connects to.
    fn bootstrap(self, info: &ClusterInfo) -> &str {
        let listener = match self {
            Protocol::Plaintext => Listener::Plaintext,
            Protocol::Ssl => Listener::Ssl,
            Protocol::Mtls => Listener::Mtls,
            Protocol::SaslSsl => Listener::SaslSsl,
        };
        info.bootstrap.get(listener)
    }
}

/// The test clusters, with a client for each: where the rounds are seeded
/// and checked. Those of `$MM2_CLUSTERS_FILE` if it is set (never started or
/// stopped here), else this worktree's, started by [`Testbed::up`] if they
/// were not running and stopped again on drop only in that case (a
/// [`ClustersGuard`]). (Not a `Cluster`: that name is the driver's client and
/// `e2e`'s test cluster.)
pub struct Testbed {
    /// Declared first: stops the clusters (if started here) before the
    /// clients and runtime go.
    _clusters: Option<ClustersGuard>,
    source: ClusterInfo,
    target: ClusterInfo,
    source_client: ClusterClient,
    target_client: ClusterClient,
    rt: tokio::runtime::Runtime,
}

impl Testbed {
    /// Brings the clusters up (if needed) and connects to both over PLAINTEXT.
    pub fn up(layout: &Layout) -> Result<Testbed> {
        let (clusters, file) = match std::env::var_os("MM2_CLUSTERS_FILE") {
            Some(path) => {
                let path = std::path::PathBuf::from(path);
                let text = fs::read_to_string(&path)
                    .with_context(|| format!("reading $MM2_CLUSTERS_FILE {}", path.display()))?;
                let file: kafka::ClustersFile = serde_json::from_str(&text)
                    .with_context(|| format!("parsing {}", path.display()))?;
                eprintln!("xtask: using the clusters of {}", path.display());
                (None, file)
            }
            None => {
                let clusters = ClustersGuard::up(
                    layout,
                    GuardNotes {
                        prefix: "xtask",
                        leaving: Some(
                            "leaving the clusters running (they were up before this command)",
                        ),
                        timed: false,
                    },
                )?;
                // From here on, a failure drops `clusters`, which stops what
                // it started.
                let file = kafka::read_clusters_file(layout)?;
                (Some(clusters), file)
            }
        };
        let get = |name: &str| -> Result<ClusterInfo> {
            file.clusters
                .get(name)
                .cloned()
                .with_context(|| format!("cluster {name} missing from clusters.json"))
        };
        let source = get("source")?;
        let target = get("target")?;
        let connect = |info: &ClusterInfo| {
            ClusterClient::new(
                &info.name,
                vec![info.bootstrap.plaintext.clone()],
                kafka_lite::ConnectionConfig::default(),
            )
            .with_context(|| format!("client for {}", info.name))
        };
        let source_client = connect(&source)?;
        let target_client = connect(&target)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("tokio runtime")?;
        Ok(Testbed {
            _clusters: clusters,
            source,
            target,
            source_client,
            target_client,
            rt,
        })
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
        let syncs = topics::offset_syncs(&round.target_alias);
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
            sb = protocol.bootstrap(&self.source),
            tb = protocol.bootstrap(&self.target),
            g = round.group,
            p = protocol.security_protocol(),
        );
        if protocol.uses_tls() {
            text.push_str(&format!(
                "ssl.truststore.type = PEM\nssl.truststore.location = {CA_IN_ROOT}\n"
            ));
        }
        if protocol == Protocol::Mtls {
            text.push_str(&format!(
                "ssl.keystore.type = PEM\n\
                 ssl.keystore.certificate.chain = {CLIENT_CERT_IN_ROOT}\n\
                 ssl.keystore.key = {CLIENT_KEY_IN_ROOT}\n"
            ));
        }
        if protocol == Protocol::SaslSsl {
            // Each cluster has its own SCRAM user, so the login is per alias.
            for (alias, info) in [
                (&round.source_alias, &self.source),
                (&round.target_alias, &self.target),
            ] {
                let user = &info.sasl_users.scram_sha_512;
                text.push_str(&format!(
                    "{alias}.sasl.mechanism = SCRAM-SHA-512\n\
                     {alias}.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule \
                     required username=\"{}\" password=\"{}\";\n",
                    user.user,
                    user.password.expose()
                ));
            }
        }
        text
    }

    /// Writes the round's config (and for TLS the CA) into `root`, readable by
    /// the unprivileged user the binary runs as.
    pub fn install(&self, root: &Path, round: &Round, protocol: Protocol) -> Result<()> {
        self.install_at(root, CONFIG_IN_ROOT, round, protocol)
    }

    /// Like [`Testbed::install`], with the config at `config` (an absolute
    /// path inside `root`; missing directories are made, mode 0755).
    pub fn install_at(
        &self,
        root: &Path,
        config: &str,
        round: &Round,
        protocol: Protocol,
    ) -> Result<()> {
        let write = |name: &str, bytes: &[u8]| -> Result<()> {
            let path = root.join(name.trim_start_matches('/'));
            if let Some(dir) = path.parent() {
                for dir in dir
                    .ancestors()
                    .take_while(|d| d.starts_with(root) && *d != root)
                {
                    fs::create_dir_all(dir)
                        .with_context(|| format!("creating {}", dir.display()))?;
                    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
                }
            }
            fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o644))?;
            Ok(())
        };
        write(config, self.properties(round, protocol).as_bytes())?;
        let tls = &self.source.tls;
        for (inside, outside) in [
            (CA_IN_ROOT, &tls.ca_pem),
            (CLIENT_CERT_IN_ROOT, &tls.client_cert_pem),
            (CLIENT_KEY_IN_ROOT, &tls.client_key_pem),
        ] {
            let bytes =
                fs::read(outside).with_context(|| format!("reading {}", outside.display()))?;
            write(inside, &bytes)?;
        }
        Ok(())
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

    /// Commits each of `groups` on the source at upstream `offset` on every
    /// partition of the round's topic.
    pub fn commit_groups(&self, round: &Round, groups: &[String], offset: i64) -> Result<()> {
        self.rt.block_on(async {
            for name in groups {
                let map: BTreeMap<_, _> = (0..PARTITIONS)
                    .map(|p| {
                        (
                            TopicPartition::new(&round.topic, p),
                            CommittedOffset::new(offset, ""),
                        )
                    })
                    .collect();
                self.source_client.commit_group_offsets(name, &map).await?;
            }
            anyhow::Ok(())
        })
    }

    /// Every checkpoint in the round's checkpoints topic on the target.
    pub fn checkpoints(&self, round: &Round) -> Result<Vec<Checkpoint>> {
        self.rt.block_on(read_checkpoints(
            &self.target_client,
            &round.checkpoints_topic(),
        ))
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
        topics::remote(&self.source_alias, &self.topic)
    }

    fn checkpoints_topic(&self) -> String {
        topics::checkpoints(&self.source_alias)
    }
}

/// Every record of partition 0 of `topic` (empty if it does not exist), decoded.
async fn read_checkpoints(cluster: &ClusterClient, topic: &str) -> Result<Vec<Checkpoint>> {
    if !cluster.topic_exists(topic).await? {
        bail!("the checkpoints topic {topic} does not exist on the target");
    }
    let mut out = Vec::new();
    for r in cluster.read_to_end(topic, 0).await? {
        out.push(
            Checkpoint::decode(r.key.as_deref(), r.value.as_deref())
                .with_context(|| format!("decoding {topic} offset {}", r.offset))?,
        );
    }
    Ok(out)
}
