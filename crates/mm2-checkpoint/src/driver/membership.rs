//! A flow's membership (docs/membership.md): this instance's member of the
//! flow's group on the target cluster, which tells the flow when it owns the
//! work and keeps the owner's lease.
//!
//! The member joins, the leader picks the owner ([`crate::core::ownership`]),
//! and then it heartbeats. Each heartbeat the coordinator answered extends
//! the [`SendWindow`] (the lease) to the heartbeat's send time plus the session
//! timeout minus one heartbeat interval: the coordinator cannot have dropped
//! the member before then, so no other instance can own the flow yet. The
//! group sync's commits are sent under that window. A rebalance closes it at
//! once; the member rejoins. Ownership that carries on from one generation to
//! the next keeps its tenure; ownership gained after any gap starts a new
//! tenure, which makes the flow take over again (fence, restore).

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_lite::{Client, Error, MemberConfig, SendWindow};
use tokio::sync::watch;

use crate::config::MembershipConfig;
use crate::core::ownership::{
    Candidate, MemberClaim, PROTOCOL, PROTOCOL_TYPE, choose_owner, encode_assignment,
    owns_by_assignment,
};
use crate::core::schedule::Backoff;
use crate::metrics::{MemberRole, Metrics};
use crate::shutdown::ShutdownSignal;

/// The first wait after a failed join of the membership group.
const JOIN_BACKOFF_FIRST: Duration = Duration::from_millis(500);

/// The longest wait between joins of the membership group.
const JOIN_BACKOFF_CAP: Duration = Duration::from_secs(10);

/// What the member currently is, for the flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Joining or rejoining the group.
    Joining,
    /// A member without the flow.
    Standby,
    /// The owner; `tenure` changes whenever ownership was not continuous.
    Owner {
        /// Counts this instance's takeovers of the flow.
        tenure: u64,
    },
}

/// The flow's side of its member: the role and the owner's lease.
#[derive(Clone, Debug)]
pub struct Membership {
    /// The member's current role.
    pub role: watch::Receiver<Role>,
    /// Open while this instance may write as the owner.
    pub lease: SendWindow,
}

/// How long the coordinator holds a JoinGroup for the members to rejoin: the
/// session timeout, at least 10 s (an owner rejoins at its next heartbeat).
fn rebalance_timeout(cfg: &MembershipConfig) -> Duration {
    cfg.session_timeout.max(Duration::from_secs(10))
}

/// Starts the member of flow `flow` in a task of its own; it leaves the
/// group when `shutdown` fires (a dynamic member: a static one keeps its
/// place for its next incarnation, as Kafka's own static members do).
pub fn start(
    flow: String,
    client: Client,
    cfg: MembershipConfig,
    metrics: Metrics,
    shutdown: ShutdownSignal,
) -> Membership {
    let (role_tx, role) = watch::channel(Role::Joining);
    let lease = SendWindow::closed();
    let member = Member {
        flow,
        client,
        member: MemberConfig {
            group: cfg.group.clone(),
            protocol_type: PROTOCOL_TYPE.to_string(),
            protocols: Vec::new(),
            instance_id: cfg.instance_id.clone(),
            session_timeout: cfg.session_timeout,
            rebalance_timeout: rebalance_timeout(&cfg),
        },
        cfg,
        metrics,
        role: role_tx,
        lease: lease.clone(),
        member_id: String::new(),
        owned_in: None,
        tenure: 0,
    };
    tokio::spawn(member.run(shutdown));
    Membership { role, lease }
}

struct Member {
    flow: String,
    client: Client,
    member: MemberConfig,
    cfg: MembershipConfig,
    metrics: Metrics,
    role: watch::Sender<Role>,
    lease: SendWindow,
    member_id: String,
    /// The last generation in which this member owned the flow.
    owned_in: Option<i32>,
    tenure: u64,
}

impl Member {
    fn set_role(&self, role: Role) {
        let label = match role {
            Role::Joining => MemberRole::Joining,
            Role::Standby => MemberRole::Standby,
            Role::Owner { .. } => MemberRole::Owner,
        };
        self.metrics.set_member_role(&self.flow, label);
        let readiness = self.metrics.readiness();
        let condition = format!("flow {} membership", self.flow);
        match role {
            Role::Joining => readiness.set_not_ready(
                condition,
                format!("joining group {:?} on the target", self.cfg.group),
            ),
            Role::Standby | Role::Owner { .. } => readiness.set_ready(&condition),
        }
        self.role.send_replace(role);
    }

    /// The lease after a membership request sent at `sent` was answered.
    fn extend_lease(&self, sent: Instant) {
        let until = sent + self.cfg.session_timeout - self.cfg.heartbeat_interval;
        self.lease.open_until(until);
    }

    async fn run(mut self, shutdown: ShutdownSignal) {
        let mut backoff = Backoff::starting(JOIN_BACKOFF_FIRST, JOIN_BACKOFF_CAP);
        self.set_role(Role::Joining);
        loop {
            let generation = tokio::select! {
                _ = shutdown.triggered() => break,
                r = self.join() => r,
            };
            let generation = match generation {
                Ok(g) => {
                    backoff.succeeded();
                    g
                }
                Err(e) => {
                    self.lease.close();
                    self.set_role(Role::Joining);
                    if e.kafka_error()
                        == Some(kafka_protocol::error::ResponseError::UnknownMemberId)
                    {
                        self.member_id.clear();
                    }
                    if e.needs_rejoin() {
                        // The group moved on while we joined (another member
                        // came): join again at once, as the same member, or
                        // the coordinator waits a session timeout for the
                        // member we were.
                        continue;
                    }
                    let fenced = e.kafka_error()
                        == Some(kafka_protocol::error::ResponseError::FencedInstanceId);
                    if fenced {
                        tracing::error!(flow = %self.flow, group = %self.cfg.group, error = %e,
                            "another instance runs with the same {} ; this one waits as a non-member",
                            crate::config::MEMBERSHIP_INSTANCE_KEY);
                    }
                    let wait = backoff.failed();
                    if !fenced {
                        tracing::warn!(flow = %self.flow, group = %self.cfg.group, error = %e,
                            retry_in_ms = wait.as_millis() as u64, "joining the membership group failed; retrying");
                    }
                    tokio::select! {
                        _ = shutdown.triggered() => break,
                        _ = tokio::time::sleep(wait) => {}
                    }
                    continue;
                }
            };
            self.heartbeat_until_rebalance(generation, &shutdown).await;
            if shutdown.is_triggered() {
                break;
            }
        }
        self.lease.close();
        if self.cfg.instance_id.is_none() && !self.member_id.is_empty() {
            let leave = self.client.leave_group(&self.member, &self.member_id);
            let failed = match tokio::time::timeout(Duration::from_secs(5), leave).await {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("no answer within 5 s".to_string()),
            };
            if let Some(error) = failed {
                tracing::warn!(flow = %self.flow, %error, "leaving the membership group failed; the coordinator drops the member after its session timeout");
            }
        }
    }

    /// Joins and syncs once; returns the generation, with the role set.
    async fn join(&mut self) -> Result<i32, Error> {
        let claim = MemberClaim {
            owned_in: self.owned_in,
        };
        self.member.protocols = vec![(PROTOCOL.to_string(), Bytes::from(claim.encode()))];
        let sent = Instant::now();
        let joined = self
            .client
            .join_group(&self.member, &self.member_id)
            .await?;
        self.member_id = joined.member_id.clone();
        let assignments = if joined.is_leader() && !joined.skip_assignment {
            let members: Vec<Candidate> = joined
                .members
                .iter()
                .map(|m| Candidate {
                    member_id: m.member_id.clone(),
                    instance_id: m.instance_id.clone(),
                    claim: MemberClaim::decode(&m.metadata),
                })
                .collect();
            let owner = choose_owner(&self.cfg.group, &members);
            tracing::info!(flow = %self.flow, group = %self.cfg.group, generation = joined.generation,
                members = members.len(), owner = owner.unwrap_or("none"), "assigning the flow as the group's leader");
            members
                .iter()
                .map(|m| {
                    let owns = owner == Some(m.member_id.as_str());
                    (m.member_id.clone(), Bytes::from(encode_assignment(owns)))
                })
                .collect()
        } else {
            Vec::new()
        };
        let assignment = self
            .client
            .sync_group(&self.member, &joined, &assignments)
            .await?;
        let generation = joined.generation;
        self.metrics.member_joined(&self.flow, generation);
        if owns_by_assignment(&assignment) {
            // Continuous when this member owned the generation just before
            // this one (nobody else can have owned the flow in between);
            // otherwise a takeover.
            let continuous = self.tenure > 0 && self.owned_in.is_some_and(|g| g + 1 == generation);
            if !continuous {
                self.tenure += 1;
            }
            self.owned_in = Some(generation);
            self.extend_lease(sent);
            tracing::info!(flow = %self.flow, group = %self.cfg.group, generation, continuous, "this instance owns the flow");
            self.set_role(Role::Owner {
                tenure: self.tenure,
            });
        } else {
            self.lease.close();
            tracing::info!(flow = %self.flow, group = %self.cfg.group, generation, "standing by: another instance owns the flow");
            self.set_role(Role::Standby);
        }
        Ok(generation)
    }

    /// Heartbeats until the group rebalances (or drops this member), or
    /// `shutdown` fires.
    async fn heartbeat_until_rebalance(&mut self, generation: i32, shutdown: &ShutdownSignal) {
        loop {
            tokio::select! {
                _ = shutdown.triggered() => return,
                _ = tokio::time::sleep(self.cfg.heartbeat_interval) => {}
            }
            let sent = Instant::now();
            let beat = self
                .client
                .heartbeat(&self.member, generation, &self.member_id);
            // A heartbeat answered later than the lease is of no use.
            match tokio::time::timeout(self.cfg.session_timeout, beat).await {
                Ok(Ok(())) => {
                    if matches!(*self.role.borrow(), Role::Owner { .. }) {
                        self.extend_lease(sent);
                    }
                }
                Ok(Err(e)) if e.needs_rejoin() => {
                    // Stop writing before anyone else can own the flow.
                    self.lease.close();
                    tracing::info!(flow = %self.flow, group = %self.cfg.group, reason = %e, "the membership group is rebalancing; rejoining");
                    if matches!(
                        e.kafka_error(),
                        Some(
                            kafka_protocol::error::ResponseError::UnknownMemberId
                                | kafka_protocol::error::ResponseError::IllegalGeneration
                        )
                    ) {
                        // Dropped from the group: whatever comes next is a
                        // takeover, not a continuation.
                        self.owned_in = None;
                        if e.kafka_error()
                            == Some(kafka_protocol::error::ResponseError::UnknownMemberId)
                        {
                            self.member_id.clear();
                        }
                    }
                    self.set_role(Role::Joining);
                    return;
                }
                Ok(Err(e)) => {
                    tracing::warn!(flow = %self.flow, group = %self.cfg.group, error = %e, "a membership heartbeat failed; the lease is not extended");
                    if !self.lease.is_open() {
                        self.set_role(Role::Joining);
                        self.owned_in = None;
                        return;
                    }
                }
                Err(_) => {
                    tracing::warn!(flow = %self.flow, group = %self.cfg.group, "a membership heartbeat got no answer within the session timeout; rejoining");
                    self.lease.close();
                    self.owned_in = None;
                    self.set_role(Role::Joining);
                    return;
                }
            }
        }
    }
}
