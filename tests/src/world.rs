//! One test's world on the real clusters (from `cargo xtask kafka up`): unique
//! cluster aliases and topics, MM2-style offset syncs written with kafka-lite
//! and the core's encoders, group commits, and reading back what the binary
//! wrote (checkpoints, target group offsets).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Cluster as TestCluster, Listener, clusters, unique_name};
use mm2_checkpoint::core::format::OffsetSync;
use mm2_checkpoint::core::{Checkpoint, CommittedOffset, ReplicationPolicy, TopicPartition};
use mm2_checkpoint::driver::FlowCluster;
use mm2_checkpoint::driver::{ClusterClient, OutRecord};

/// A tokio runtime for the async client calls.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A kafka-lite client of a test cluster over PLAINTEXT.
pub fn client(c: &TestCluster) -> ClusterClient {
    ClusterClient::new(
        &c.name,
        vec![c.bootstrap.get(Listener::Plaintext).to_string()],
        kafka_lite::ConnectionConfig::default(),
    )
    .expect("client")
}

/// One test's world: unique aliases (so unique internal topics), a unique
/// upstream topic, and clients of both clusters.
pub struct World {
    /// Source alias.
    pub s: String,
    /// Target alias.
    pub t: String,
    /// Upstream topic on the source.
    pub topic: String,
    /// Its name on the target.
    pub remote: String,
    /// Source client.
    pub source: ClusterClient,
    /// Target client.
    pub target: ClusterClient,
    /// Working directory of this test.
    pub dir: PathBuf,
}

/// The replication policy the tests' flows use (MM2's default, separator `.`):
/// every topic name a test needs comes from the core's naming rules.
pub fn policy() -> ReplicationPolicy {
    ReplicationPolicy::default()
}

/// The name of `topic` of cluster `source` on the target: unchanged under the
/// identity policy, else as the default policy names remote topics.
fn remote_name(identity: bool, source: &str, topic: &str) -> String {
    if identity {
        ReplicationPolicy::new_identity(None, None, Some(source))
            .expect("identity policy")
            .format_remote_topic(source, topic)
    } else {
        policy().format_remote_topic(source, topic)
    }
}

impl World {
    /// A fresh world; `topic` gets `partitions` partitions on the source and its
    /// remote twin `<s>.<topic>` on the target.
    pub fn new(rt: &tokio::runtime::Runtime, name: &str, partitions: i32) -> World {
        Self::build(rt, name, partitions, false)
    }

    /// Like [`World::new`] for IdentityReplicationPolicy: the target topic has
    /// the upstream topic's name.
    pub fn identity(rt: &tokio::runtime::Runtime, name: &str, partitions: i32) -> World {
        Self::build(rt, name, partitions, true)
    }

    fn build(rt: &tokio::runtime::Runtime, name: &str, partitions: i32, identity: bool) -> World {
        let id = unique_name(name).replace(['-', '.'], "_");
        let s = format!("s{id}");
        let t = format!("t{id}");
        let topic = format!("orders_{id}");
        let c = clusters();
        let source = client(c.source());
        let target = client(c.target());
        rt.block_on(async {
            source
                .create_topic(&topic, partitions, 1, &[])
                .await
                .expect("create source topic");
            let remote = remote_name(identity, &s, &topic);
            target
                .create_topic(&remote, partitions, 1, &[])
                .await
                .expect("create target topic");
        });
        let dir = crate::binary::target_tmp_dir().join(&id);
        std::fs::create_dir_all(&dir).expect("test dir");
        let remote = remote_name(identity, &s, &topic);
        World {
            s,
            t,
            topic,
            remote,
            source,
            target,
            dir,
        }
    }

    /// The offset-syncs topic for location=source.
    pub fn syncs_topic(&self) -> String {
        policy().offset_syncs_topic(&self.t)
    }

    /// The checkpoints topic on the target.
    pub fn checkpoints_topic(&self) -> String {
        policy().checkpoints_topic(&self.s)
    }

    /// Writes offset syncs `(partition, upstream, downstream)` of the upstream
    /// topic to `topic` on `cluster`, as MM2's source task does (creating the
    /// topic, one compacted partition, if needed).
    pub fn write_syncs(
        &self,
        rt: &tokio::runtime::Runtime,
        on: &ClusterClient,
        topic: &str,
        syncs: &[(i32, i64, i64)],
    ) {
        let records = sync_records(&self.topic, syncs);
        rt.block_on(async {
            on.create_topic(topic, 1, 1, &[("cleanup.policy", "compact")])
                .await
                .expect("create syncs topic");
            on.produce(topic, 0, &records).await.expect("produce syncs");
        });
    }

    /// Appends raw records (key, value) to partition 0 of `topic` on `on`.
    pub fn write_raw(
        &self,
        rt: &tokio::runtime::Runtime,
        on: &ClusterClient,
        topic: &str,
        records: &[(&[u8], &[u8])],
    ) {
        let records: Vec<OutRecord> = records
            .iter()
            .map(|(k, v)| OutRecord {
                key: k.to_vec(),
                value: v.to_vec(),
                timestamp: 0,
            })
            .collect();
        rt.block_on(on.produce(topic, 0, &records))
            .expect("produce raw records");
    }

    /// Commits `offsets` (partition → offset) of the upstream topic for `group` on the source.
    pub fn commit_source(&self, rt: &tokio::runtime::Runtime, group: &str, offsets: &[(i32, i64)]) {
        let map: BTreeMap<TopicPartition, CommittedOffset> = offsets
            .iter()
            .map(|&(p, o)| {
                (
                    TopicPartition::new(&self.topic, p),
                    CommittedOffset::new(o, format!("md-{o}")),
                )
            })
            .collect();
        rt.block_on(self.source.commit_group_offsets(group, &map))
            .expect("commit source group");
    }

    /// Commits offsets of the downstream topic for `group` on the target.
    pub fn commit_target(&self, rt: &tokio::runtime::Runtime, group: &str, offsets: &[(i32, i64)]) {
        let map: BTreeMap<TopicPartition, CommittedOffset> = offsets
            .iter()
            .map(|&(p, o)| {
                (
                    TopicPartition::new(self.remote_topic(), p),
                    CommittedOffset::new(o, ""),
                )
            })
            .collect();
        rt.block_on(self.target.commit_group_offsets(group, &map))
            .expect("commit target group");
    }

    /// `<s>.<topic>`.
    pub fn remote_topic(&self) -> String {
        self.remote.clone()
    }

    /// An mm2.properties for this world (PLAINTEXT, fast intervals, the given
    /// groups filter) plus `extra` lines; returns its path.
    pub fn properties(&self, groups: &str, extra: &str) -> PathBuf {
        let c = clusters();
        let text = format!(
            "clusters = {s}, {t}\n\
             {s}.bootstrap.servers = {sb}\n\
             {t}.bootstrap.servers = {tb}\n\
             {s}->{t}.enabled = true\n\
             groups = {groups}\n\
             emit.checkpoints.interval.seconds = 1\n\
             sync.group.offsets.interval.seconds = 1\n\
             admin.timeout.ms = 20000\n\
             {extra}\n",
            s = self.s,
            t = self.t,
            sb = c.source().bootstrap.get(Listener::Plaintext),
            tb = c.target().bootstrap.get(Listener::Plaintext),
        );
        let path = self.dir.join("mm2.properties");
        std::fs::write(&path, text).expect("write mm2.properties");
        path
    }

    /// An mm2.properties named `name` whose target is reached on its mTLS
    /// listener (`SSL`) with `tls` lines, in which `{t}` stands for the target
    /// alias; the source is PLAINTEXT, only `group` is checkpointed. Returns
    /// its path.
    pub fn mtls_target_properties(&self, group: &str, name: &str, tls: &str) -> PathBuf {
        let c = clusters();
        let text = format!(
            "clusters = {s}, {t}\n\
             {s}.bootstrap.servers = {sb}\n\
             {t}.bootstrap.servers = {tb}\n\
             {t}.security.protocol = SSL\n\
             {tls}\n\
             {s}->{t}.enabled = true\n\
             groups = {group}\n\
             admin.timeout.ms = 20000\n",
            s = self.s,
            t = self.t,
            sb = c.source().bootstrap.get(Listener::Plaintext),
            tb = c.target().bootstrap.get(Listener::Mtls),
            tls = tls.replace("{t}", &self.t),
        );
        let path = self.dir.join(name);
        std::fs::write(&path, text).expect("write config");
        path
    }

    /// The checkpoints topic's records, decoded, in order.
    /// Empty while the topic does not exist yet.
    pub fn checkpoints(&self, rt: &tokio::runtime::Runtime) -> Vec<Checkpoint> {
        checkpoints_in(rt, &self.target, &self.checkpoints_topic())
    }

    /// The committed offsets of `group` on the target: partition → offset.
    pub fn target_offsets(&self, rt: &tokio::runtime::Runtime, group: &str) -> BTreeMap<i32, i64> {
        committed_offsets(rt, &self.target, group, &self.remote)
    }

    /// Writes `syncs` to the offset-syncs topic on the source and commits
    /// `commits` (partition → offset) of the upstream topic for the group
    /// `g-<topic>`, which it returns.
    pub fn seed(
        &self,
        rt: &tokio::runtime::Runtime,
        syncs: &[(i32, i64, i64)],
        commits: &[(i32, i64)],
    ) -> String {
        self.write_syncs(rt, &self.source, &self.syncs_topic(), syncs);
        let group = format!("g-{}", self.topic);
        self.commit_source(rt, &group, commits);
        group
    }
}

/// MM2's offset-sync records `(partition, upstream, downstream)` of `topic`.
pub fn sync_records(topic: &str, syncs: &[(i32, i64, i64)]) -> Vec<OutRecord> {
    syncs
        .iter()
        .map(|&(p, up, down)| {
            let sync = OffsetSync {
                topic_partition: TopicPartition::new(topic, p),
                upstream_offset: up,
                downstream_offset: down,
            };
            OutRecord {
                key: sync.encode_key().expect("key"),
                value: sync.encode_value(),
                timestamp: 0,
            }
        })
        .collect()
}

/// The checkpoint records of `topic` on `on`, decoded, in order.
/// Empty while the topic does not exist yet.
pub fn checkpoints_in(
    rt: &tokio::runtime::Runtime,
    on: &ClusterClient,
    topic: &str,
) -> Vec<Checkpoint> {
    let exists = rt.block_on(on.topic_exists(topic)).expect("metadata");
    if !exists {
        return Vec::new();
    }
    read_all(rt, on, topic)
        .into_iter()
        .map(|(k, v)| Checkpoint::decode(k.as_deref(), v.as_deref()).expect("checkpoint decodes"))
        .collect()
}

/// The committed offsets of `group` on `on` for `topic`: partition → offset.
pub fn committed_offsets(
    rt: &tokio::runtime::Runtime,
    on: &ClusterClient,
    group: &str,
    topic: &str,
) -> BTreeMap<i32, i64> {
    let all = rt
        .block_on(on.fetch_group_offsets(&[group.to_string()]))
        .expect("fetch group offsets");
    all.get(group)
        .and_then(|r| r.as_ref().ok())
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|(tp, _)| tp.topic == topic)
        .filter_map(|(tp, v)| v.map(|c| (tp.partition, c.offset)))
        .collect()
}

/// Kafka's console consumer in `group` on the target, reading the world's
/// remote topic with the extra `--consumer-property` settings `props`;
/// SIGKILLed on drop.
pub struct ConsoleConsumer(pub Child);

impl ConsoleConsumer {
    /// Starts the consumer.
    pub fn join(w: &World, group: &str, props: &[&str]) -> ConsoleConsumer {
        let c = clusters();
        let mut cmd = Command::new(c.tool("kafka-console-consumer"));
        cmd.args([
            "--bootstrap-server",
            c.target().bootstrap.get(Listener::Plaintext),
            "--topic",
            &w.remote_topic(),
            "--group",
            group,
        ]);
        for p in props {
            cmd.args(["--consumer-property", p]);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn kafka-console-consumer");
        ConsoleConsumer(child)
    }

    /// SIGTERM: the consumer leaves the group (LeaveGroup) as it closes;
    /// SIGKILL (on drop) after 30 s if it has not exited.
    pub fn leave(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ConsoleConsumer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A record's key and value bytes.
pub type RawRecord = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Every record of partition 0 of `topic` up to its current end.
pub fn read_all(rt: &tokio::runtime::Runtime, c: &ClusterClient, topic: &str) -> Vec<RawRecord> {
    rt.block_on(c.read_to_end(topic, 0))
        .expect("read the topic to its end")
        .into_iter()
        .map(|r| (r.key.map(|b| b.to_vec()), r.value.map(|b| b.to_vec())))
        .collect()
}

/// A checkpoint as a comparable tuple: (group, topic, partition, upstream, downstream).
pub fn tuple(c: &Checkpoint) -> (String, String, i32, i64, i64) {
    (
        c.key.group.clone(),
        c.key.topic_partition.topic.clone(),
        c.key.topic_partition.partition,
        c.upstream_offset,
        c.downstream_offset,
    )
}

/// Waits, through `mm2`'s watch of its process (so a MirrorMaker that dies
/// fails the wait at once), until partition 0 of `remote` on the target ends
/// at `end`: every record mirrored. Returns the time waited.
pub fn wait_for_mirrored_end(
    rt: &tokio::runtime::Runtime,
    mm2: &mut crate::mm2::Mm2Process,
    remote: &str,
    end: i64,
    budget: Duration,
) -> Duration {
    let target = client(clusters().target());
    let kafka = rt
        .block_on(target.kafka())
        .unwrap_or_else(|e| panic!("target client: {e}"));
    let listed_end = || {
        let listed = rt.block_on(kafka.list_offsets(
            &[(remote, 0, kafka_lite::OffsetSpec::Latest)],
            kafka_lite::IsolationLevel::ReadUncommitted,
        ));
        listed.into_iter().next()?.result.ok()?.offset
    };
    let ((), waited) = mm2
        .wait_until("every record on the remote topic", budget, |_| {
            Ok::<_, std::convert::Infallible>((listed_end() == Some(end)).then_some(()))
        })
        .unwrap_or_else(|e| panic!("waiting for the remote topic: {e}"));
    waited
}

/// The upstream offsets of MM2's syncs of partition 0, oldest first, from an
/// identity mirror (a fresh remote topic): each sync's downstream offset must
/// equal its upstream one.
pub fn identity_sync_history(syncs: &[crate::java::OffsetSyncRecord]) -> Vec<i64> {
    syncs
        .iter()
        .filter(|s| s.partition == 0)
        .map(|s| {
            assert_eq!(s.upstream, s.downstream, "not an identity mirror: {s:?}");
            s.upstream
        })
        .collect()
}
