//! Least privilege: the daemon against the ACL-enforcing `secure` cluster
//! (`StandardAuthorizer`, nothing allowed without a grant), with exactly the
//! ACLs docs/operations.md ("Least privilege") lists and nothing more.
//!
//! Both aliases of the flow point at the one `secure` cluster (their topic
//! names differ), the source alias as `mm2-source` and the target alias as
//! `mm2-target`, so each principal is only allowed what its side needs.
//! Setup (topics, offset syncs, the source group's commit) runs as `admin`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use e2e::access::sasl_as;
use e2e::binary::mm2;
use e2e::world::{checkpoints_in, committed_offsets, policy, rt, sync_records, tuple};
use e2e::{Cluster as TestCluster, Credentials, Listener, clusters, unique_name};
use mm2_checkpoint::core::{Checkpoint, CommittedOffset, TopicPartition};
use mm2_checkpoint::driver::ClusterClient;
use mm2_checkpoint::driver::FlowCluster;

/// One ACL of the documented least-privilege set. Describe on a topic or
/// group is implied by Read or Write on it, so it is granted on its own only
/// where nothing else is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grant {
    /// The source principal on the offset-syncs topic.
    SourceSyncsRead,
    /// The source principal on the replicated (upstream) topic.
    SourceTopicDescribe,
    /// The source principal on the consumer group.
    SourceGroupDescribe,
    /// The target principal on the checkpoints topic.
    TargetCheckpointsCreate,
    /// The target principal on the checkpoints topic.
    TargetCheckpointsRead,
    /// The target principal on the checkpoints topic.
    TargetCheckpointsWrite,
    /// The target principal on the remote topic (group sync: OffsetCommit).
    TargetRemoteRead,
    /// The target principal on the consumer group (group sync: OffsetCommit).
    TargetGroupRead,
    /// With membership (docs/membership.md): the target principal on the
    /// flow's membership group.
    TargetMembershipGroupRead,
    /// With membership: the target principal on the transactional id (the
    /// membership group's name).
    TargetTransactionalIdWrite,
}

/// The grants membership adds.
const MEMBERSHIP: [Grant; 2] = [
    Grant::TargetMembershipGroupRead,
    Grant::TargetTransactionalIdWrite,
];

/// Every documented grant, source side then target side.
const ALL: [Grant; 8] = [
    Grant::SourceSyncsRead,
    Grant::SourceTopicDescribe,
    Grant::SourceGroupDescribe,
    Grant::TargetCheckpointsCreate,
    Grant::TargetCheckpointsRead,
    Grant::TargetCheckpointsWrite,
    Grant::TargetRemoteRead,
    Grant::TargetGroupRead,
];

/// One test's flow on the secure cluster.
struct SecureWorld {
    s: String,
    t: String,
    topic: String,
    group: String,
    admin: ClusterClient,
    dir: PathBuf,
}

fn sasl(c: &Credentials) -> kafka_lite::ConnectionConfig {
    kafka_lite::ConnectionConfig {
        sasl: Some(sasl_as(c, kafka_lite::SaslMechanismKind::ScramSha512)),
        ..kafka_lite::ConnectionConfig::default()
    }
}

fn secure() -> &'static TestCluster {
    clusters().secure()
}

impl SecureWorld {
    /// Topics `<topic>` and `<s>.<topic>`, the offset syncs `(0, 0, 3)` and
    /// `(0, 10, 13)`, and the group's commit of offset 10, all as `admin`.
    fn new(rt: &tokio::runtime::Runtime, name: &str) -> SecureWorld {
        let id = unique_name(name).replace(['-', '.'], "_");
        let c = secure();
        let users = c.acl_users.as_ref().expect("secure cluster has ACL users");
        let admin = ClusterClient::new(
            "admin",
            vec![c.bootstrap.get(Listener::SaslPlaintext).to_string()],
            sasl(&users.admin),
        )
        .expect("admin client");
        let w = SecureWorld {
            s: format!("s{id}"),
            t: format!("t{id}"),
            topic: format!("orders_{id}"),
            group: format!("g_{id}"),
            admin,
            dir: PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(&id),
        };
        std::fs::create_dir_all(&w.dir).expect("test dir");
        let syncs = sync_records(&w.topic, &[(0, 0, 3), (0, 10, 13)]);
        let offsets: BTreeMap<TopicPartition, CommittedOffset> = [(
            TopicPartition::new(&w.topic, 0),
            CommittedOffset::new(10, ""),
        )]
        .into();
        rt.block_on(async {
            w.admin
                .create_topic(&w.topic, 1, 1, &[])
                .await
                .expect("create upstream topic");
            w.admin
                .create_topic(&w.remote(), 1, 1, &[])
                .await
                .expect("create remote topic");
            w.admin
                .create_topic(&w.syncs(), 1, 1, &[("cleanup.policy", "compact")])
                .await
                .expect("create syncs topic");
            w.admin
                .produce(&w.syncs(), 0, &syncs)
                .await
                .expect("produce syncs");
            w.admin
                .commit_group_offsets(&w.group, &offsets)
                .await
                .expect("commit source group");
        });
        w
    }

    fn remote(&self) -> String {
        policy().format_remote_topic(&self.s, &self.topic)
    }

    fn syncs(&self) -> String {
        policy().offset_syncs_topic(&self.t)
    }

    fn checkpoints_topic(&self) -> String {
        policy().checkpoints_topic(&self.s)
    }

    /// The flow's default membership group (and transactional id).
    fn membership_group(&self) -> String {
        mm2_checkpoint::config::FlowConfig::default_membership_group(&self.s, &self.t)
    }

    /// Adds `grants` with Kafka's own ACL tool, logged in as `admin`.
    fn grant(&self, grants: &[Grant]) {
        let c = secure();
        let users = c.acl_users.as_ref().expect("secure cluster has ACL users");
        let principal = |u: &Credentials| format!("User:{}", u.user);
        let (src, tgt) = (principal(&users.mm2_source), principal(&users.mm2_target));
        // (principal, resource kind, resource name) -> operations
        let mut acls: BTreeMap<(String, &str, String), Vec<&str>> = BTreeMap::new();
        for g in grants {
            let (who, kind, name, op) = match g {
                Grant::SourceSyncsRead => (&src, "--topic", self.syncs(), "Read"),
                Grant::SourceTopicDescribe => (&src, "--topic", self.topic.clone(), "Describe"),
                Grant::SourceGroupDescribe => (&src, "--group", self.group.clone(), "Describe"),
                Grant::TargetCheckpointsCreate => {
                    (&tgt, "--topic", self.checkpoints_topic(), "Create")
                }
                Grant::TargetCheckpointsRead => (&tgt, "--topic", self.checkpoints_topic(), "Read"),
                Grant::TargetCheckpointsWrite => {
                    (&tgt, "--topic", self.checkpoints_topic(), "Write")
                }
                Grant::TargetRemoteRead => (&tgt, "--topic", self.remote(), "Read"),
                Grant::TargetGroupRead => (&tgt, "--group", self.group.clone(), "Read"),
                Grant::TargetMembershipGroupRead => {
                    (&tgt, "--group", self.membership_group(), "Read")
                }
                Grant::TargetTransactionalIdWrite => {
                    (&tgt, "--transactional-id", self.membership_group(), "Write")
                }
            };
            acls.entry((who.clone(), kind, name)).or_default().push(op);
        }
        for ((who, kind, name), ops) in acls {
            // `kafka-acls` is `kafka-run-class org.apache.kafka.tools.AclCommand`.
            let mut cmd = Command::new(&clusters().kafka_run_class);
            cmd.arg("org.apache.kafka.tools.AclCommand")
                .arg("--bootstrap-server")
                .arg(c.bootstrap.get(Listener::SaslPlaintext))
                .arg("--command-config")
                .arg(&c.client_configs["sasl_admin"])
                .args(["--add", "--allow-principal", &who, kind, &name]);
            for op in ops {
                cmd.args(["--operation", op]);
            }
            let out = cmd.output().expect("run kafka-acls");
            assert!(
                out.status.success(),
                "kafka-acls failed for {who} {kind} {name}:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Adds (or removes) the source principal's Describe and Read on
    /// `__consumer_offsets`, the commit follower's grant.
    fn consumer_offsets_acl(&self, add: bool) {
        let c = secure();
        let users = c.acl_users.as_ref().expect("secure cluster has ACL users");
        let who = format!("User:{}", users.mm2_source.user);
        let mut cmd = Command::new(&clusters().kafka_run_class);
        cmd.arg("org.apache.kafka.tools.AclCommand")
            .arg("--bootstrap-server")
            .arg(c.bootstrap.get(Listener::SaslPlaintext))
            .arg("--command-config")
            .arg(&c.client_configs["sasl_admin"])
            .args([if add { "--add" } else { "--remove" }, "--force"])
            .args(["--allow-principal", &who, "--topic", "__consumer_offsets"])
            .args(["--operation", "Describe", "--operation", "Read"]);
        let out = cmd.output().expect("run kafka-acls");
        assert!(
            out.status.success(),
            "kafka-acls failed on __consumer_offsets:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// An mm2.properties: the source alias logs in as `mm2-source`, the target
    /// alias as `mm2-target`, both over SASL_PLAINTEXT SCRAM-SHA-512.
    fn properties(&self, sync: bool) -> PathBuf {
        self.properties_with(sync, "")
    }

    /// [`properties`](Self::properties) plus `extra` lines.
    fn properties_with(&self, sync: bool, extra: &str) -> PathBuf {
        let c = secure();
        let users = c.acl_users.as_ref().expect("secure cluster has ACL users");
        let login = |alias: &str, u: &Credentials| {
            format!(
                "{alias}.bootstrap.servers = {b}\n\
                 {alias}.security.protocol = SASL_PLAINTEXT\n\
                 {alias}.sasl.mechanism = SCRAM-SHA-512\n\
                 {alias}.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{user}\" password=\"{password}\";\n",
                b = c.bootstrap.get(Listener::SaslPlaintext),
                user = u.user,
                password = u.password.expose(),
            )
        };
        let text = format!(
            "clusters = {s}, {t}\n{src}{tgt}\
             {s}->{t}.enabled = true\n\
             groups = {group}\n\
             sync.group.offsets.enabled = {sync}\n\
             admin.timeout.ms = 10000\n\
             {extra}\n",
            s = self.s,
            t = self.t,
            src = login(&self.s, &users.mm2_source),
            tgt = login(&self.t, &users.mm2_target),
            group = self.group,
        );
        let path = self.dir.join("mm2-acl.properties");
        std::fs::write(&path, text).expect("write mm2.properties");
        path
    }

    fn run_once(&self, sync: bool) -> std::process::Output {
        let config = self.properties(sync);
        mm2(
            &["run", "--once", "--config", config.to_str().expect("utf-8")],
            std::time::Duration::from_secs(90),
        )
    }

    fn checkpoints(&self, rt: &tokio::runtime::Runtime) -> Vec<Checkpoint> {
        checkpoints_in(rt, &self.admin, &self.checkpoints_topic())
    }

    fn target_offsets(&self, rt: &tokio::runtime::Runtime) -> BTreeMap<i32, i64> {
        committed_offsets(rt, &self.admin, &self.group, &self.remote())
    }

    /// Grants every documented ACL but `missing` and runs `--once` without
    /// group sync.
    fn run_once_without(&self, missing: Grant) -> std::process::Output {
        let grants: Vec<Grant> = ALL.into_iter().filter(|g| *g != missing).collect();
        self.grant(&grants);
        self.run_once(false)
    }

    /// [`run_once_without`](Self::run_once_without), asserting it fails;
    /// returns its stderr.
    fn run_once_failing_without(&self, missing: Grant) -> String {
        let out = self.run_once_without(missing);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "run --once succeeded:\n{stderr}");
        stderr
    }
}

#[test]
fn the_documented_acls_suffice_for_checkpoints_and_group_sync() {
    let rt = rt();
    let w = SecureWorld::new(&rt, "acl_ok");
    w.grant(&ALL);
    let out = w.run_once(true);
    assert!(
        out.status.success(),
        "run --once failed with the documented ACLs ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<_> = w.checkpoints(&rt).iter().map(tuple).collect();
    assert_eq!(got, vec![(w.group.clone(), w.remote(), 0, 10, 13)]);
    assert_eq!(w.target_offsets(&rt), [(0, 13)].into());
}

#[test]
fn without_write_on_the_checkpoints_topic_the_run_fails_naming_it() {
    let rt = rt();
    let w = SecureWorld::new(&rt, "acl_nowrite");
    let stderr = w.run_once_failing_without(Grant::TargetCheckpointsWrite);
    assert!(
        stderr.contains(&w.checkpoints_topic()),
        "the error does not name the checkpoints topic:\n{stderr}"
    );
    assert!(
        stderr.to_lowercase().contains("authoriz"),
        "the error does not say it is an authorization failure:\n{stderr}"
    );
    assert!(w.checkpoints(&rt).is_empty());
}

#[test]
fn without_read_on_the_offset_syncs_topic_the_run_fails_naming_it() {
    let rt = rt();
    let w = SecureWorld::new(&rt, "acl_nosyncs");
    let stderr = w.run_once_failing_without(Grant::SourceSyncsRead);
    assert!(
        stderr.contains(&w.syncs()) && stderr.contains("TOPIC_AUTHORIZATION_FAILED"),
        "the error does not name the offset-syncs topic and the ACL failure:\n{stderr}"
    );
}

#[test]
fn without_describe_on_the_source_group_a_warning_names_the_group_and_the_acl() {
    let rt = rt();
    let w = SecureWorld::new(&rt, "acl_nogroup");
    let out = w.run_once_without(Grant::SourceGroupDescribe);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "run --once failed:\n{stderr}");
    let warning = format!("Describe on Group:{}", w.group);
    assert!(
        stderr.contains(&warning) && stderr.contains("GROUP_AUTHORIZATION_FAILED"),
        "no warning naming the group's missing Describe ACL:\n{stderr}"
    );
    assert_eq!(stderr.matches(&warning).count(), 1, "{stderr}");
    assert!(w.checkpoints(&rt).is_empty());
}

/// The commit follower's grant: without Describe and Read on
/// `__consumer_offsets` the daemon polls, says which ACL is missing and
/// reports the mode; with them it follows. One test, as the grant is the
/// same principal's for every flow on the cluster.
#[test]
fn without_read_on_consumer_offsets_the_daemon_polls_and_names_the_acl() {
    use e2e::faults::{Daemon, wait_for};
    use std::time::Duration;
    let rt = rt();
    let w = SecureWorld::new(&rt, "acl_follow");
    w.grant(&ALL);
    w.consumer_offsets_acl(false);
    let mode = |m: &str| {
        format!(
            "mm2_checkpoint_group_offsets_mode{{flow=\"{}->{}\",mode=\"{m}\"}}",
            w.s, w.t
        )
    };
    let config = w.properties(false);
    let daemon = Daemon::start(&config, &w.dir.join("polling.log"));
    wait_for("the polled checkpoint", Duration::from_secs(60), || {
        !w.checkpoints(&rt).is_empty()
    });
    assert_eq!(daemon.metric(&mode("poll")), Some(1.0));
    let log = daemon.log_text();
    let warning = "the principal lacks Describe and Read on Topic:__consumer_offsets";
    assert_eq!(log.matches(warning).count(), 1, "{log}");
    assert_eq!(daemon.sigterm().code(), Some(0));

    w.consumer_offsets_acl(true);
    let daemon = Daemon::start(&config, &w.dir.join("following.log"));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for("following", Duration::from_secs(60), || {
            daemon.metric(&mode("follow")) == Some(1.0)
        });
    }));
    w.consumer_offsets_acl(false);
    if let Err(e) = r {
        std::panic::resume_unwind(e);
    }
    assert_eq!(daemon.sigterm().code(), Some(0));
}

/// Membership's grants (docs/membership.md): with the documented ACLs plus
/// Read on the membership group and Write on the transactional id, the owner
/// takes the flow over, writes the checkpoint and syncs the group; without
/// the transactional id's grant it cannot take over and writes nothing.
#[test]
fn membership_needs_read_on_its_group_and_write_on_its_transactional_id() {
    use e2e::faults::{Daemon, wait_for};
    use std::time::Duration;
    let rt = rt();
    let w = SecureWorld::new(&rt, "acl_members");
    let membership = "mm2-checkpoint.membership.enabled = true\n\
         mm2-checkpoint.membership.session.timeout.ms = 6000\n\
         emit.checkpoints.interval.seconds = 1\n\
         sync.group.offsets.interval.seconds = 1";
    let config = w.properties_with(true, membership);
    let grants: Vec<Grant> = ALL
        .into_iter()
        .chain([Grant::TargetMembershipGroupRead])
        .collect();
    w.grant(&grants);
    let daemon = Daemon::start(&config, &w.dir.join("no-txn-acl.log"));
    wait_for("the refused takeover", Duration::from_secs(60), || {
        daemon
            .log_text()
            .contains("TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
    });
    assert!(
        w.checkpoints(&rt).is_empty(),
        "a checkpoint without the grant"
    );
    let log = daemon.log_text();
    assert!(log.contains("taking the flow over failed"), "{log}");
    assert_eq!(daemon.sigterm().code(), Some(0));

    w.grant(&MEMBERSHIP);
    let daemon = Daemon::start(&config, &w.dir.join("members.log"));
    wait_for(
        "the checkpoint and the synced group",
        Duration::from_secs(60),
        || !w.checkpoints(&rt).is_empty() && w.target_offsets(&rt).get(&0) == Some(&13),
    );
    let got: Vec<_> = w.checkpoints(&rt).iter().map(tuple).collect();
    assert_eq!(got, vec![(w.group.clone(), w.remote(), 0, 10, 13)]);
    assert!(daemon.log_text().contains("took the flow over"));
    assert_eq!(daemon.sigterm().code(), Some(0));
}
