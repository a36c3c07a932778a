//! Group membership with Kafka's classic group protocol: JoinGroup,
//! SyncGroup, Heartbeat and LeaveGroup, for applications that coordinate
//! their own instances through a group coordinator (as Kafka Connect's
//! workers do) rather than consume.
//!
//! One member's life: [`Client::join_group`] (the coordinator answers once
//! every member has joined, naming a leader and a generation), then
//! [`Client::sync_group`] (the leader hands in everyone's assignment, every
//! member gets its own back), then [`Client::heartbeat`] well within the
//! session timeout. A heartbeat that answers an error for which
//! [`Error::needs_rejoin`] holds means the group is rebalancing (or has
//! dropped this member): join again. [`Client::leave_group`] leaves at once
//! instead of waiting for the session to time out.
//!
//! Static membership (KIP-345): a member with a `group.instance.id` that
//! rejoins after a restart, within the session timeout and with the same
//! protocols, takes its old place without a rebalance; the coordinator fences
//! the previous incarnation (FENCED_INSTANCE_ID).
//!
//! The requests go to the group's coordinator over a connection of their own
//! (a pool lane apart from every other request), because the coordinator
//! holds a JoinGroup until the rebalance completes and a broker answers one
//! connection's requests one at a time. JoinGroup waits up to the rebalance
//! timeout plus the connection's request timeout.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest,
    join_group_request::JoinGroupRequestProtocol, leave_group_request::MemberIdentity,
    sync_group_request::SyncGroupRequestAssignment,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::Client;
use crate::connection::BrokerConnection;
use crate::error::Error;

/// The pool lane of membership requests: apart from the lanes of
/// `coordinator_connections`, so a JoinGroup held by the coordinator never
/// delays another request.
const MEMBERSHIP_LANE: usize = usize::MAX;

/// How a member joins: the group and what it tells the coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberConfig {
    /// The group id.
    pub group: String,
    /// The protocol type, the same for every member (`"consumer"` for
    /// consumers, `"connect"` for Connect; an application picks its own).
    pub protocol_type: String,
    /// The protocols this member supports, by preference, each with its
    /// metadata; the coordinator picks one every member supports.
    pub protocols: Vec<(String, Bytes)>,
    /// `group.instance.id` for static membership; `None` for a dynamic member.
    pub instance_id: Option<String>,
    /// How long the coordinator waits for a heartbeat before it drops the
    /// member (within the broker's `group.min/max.session.timeout.ms`).
    pub session_timeout: Duration,
    /// How long the coordinator waits for every member to rejoin in a rebalance.
    pub rebalance_timeout: Duration,
}

/// A member of the group as the coordinator reported it to the leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    /// Its member id.
    pub member_id: String,
    /// Its `group.instance.id`, if static.
    pub instance_id: Option<String>,
    /// The metadata it sent for the chosen protocol.
    pub metadata: Bytes,
}

/// What a completed JoinGroup answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    /// The generation this membership belongs to.
    pub generation: i32,
    /// This member's id (assigned by the coordinator).
    pub member_id: String,
    /// The leader's member id.
    pub leader: String,
    /// The protocol the coordinator chose.
    pub protocol: Option<String>,
    /// Every member with its metadata, for the leader only (empty for the
    /// others, and for a static leader that rejoined without a rebalance,
    /// which must not assign: [`skip_assignment`](Self::skip_assignment)).
    pub members: Vec<JoinedMember>,
    /// The leader rejoined as a static member and the group did not
    /// rebalance: it must send an empty assignment (KIP-814).
    pub skip_assignment: bool,
}

impl Joined {
    /// Whether this member leads the generation and assigns the work.
    pub fn is_leader(&self) -> bool {
        self.member_id == self.leader
    }
}

impl Error {
    /// Whether a membership request failed because this member must join
    /// the group again: the group is rebalancing, or the coordinator no
    /// longer knows this member or generation. FENCED_INSTANCE_ID is not
    /// among them: another incarnation of this static member has taken its
    /// place, and this one must stop.
    pub fn needs_rejoin(&self) -> bool {
        matches!(
            self.kafka_error(),
            Some(
                ResponseError::RebalanceInProgress
                    | ResponseError::IllegalGeneration
                    | ResponseError::UnknownMemberId
            )
        )
    }
}

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

impl Client {
    /// The connection membership requests of `group` use.
    async fn membership_connection(&self, group: &str) -> Result<BrokerConnection, Error> {
        let coordinator = self.group_coordinator(group).await?;
        self.pool()
            .get_lane(&coordinator.address(), MEMBERSHIP_LANE)
            .await
    }

    /// Joins `config.group` as `member_id` (empty for a new member) and waits
    /// for the rebalance to complete. A coordinator that asks for a member id
    /// first (MEMBER_ID_REQUIRED) is answered by joining again with it.
    pub async fn join_group(
        &self,
        config: &MemberConfig,
        member_id: &str,
    ) -> Result<Joined, Error> {
        let mut member_id = member_id.to_owned();
        loop {
            let attempt = self
                .retry("JoinGroup", || async {
                    let r = self.join_once(config, &member_id).await;
                    self.note_coordinator(&config.group, r)
                })
                .await?;
            match attempt {
                Err(MemberIdRequired(id)) => member_id = id,
                Ok(joined) => return Ok(joined),
            }
        }
    }

    async fn join_once(
        &self,
        config: &MemberConfig,
        member_id: &str,
    ) -> Result<Result<Joined, MemberIdRequired>, Error> {
        let connection = self.membership_connection(&config.group).await?;
        let version = connection.version_for::<JoinGroupRequest>()?;
        let request = JoinGroupRequest::default()
            .with_group_id(crate::admin::groups::group_id(&config.group))
            .with_session_timeout_ms(millis(config.session_timeout))
            .with_rebalance_timeout_ms(millis(config.rebalance_timeout))
            .with_member_id(str_bytes(member_id))
            .with_group_instance_id(config.instance_id.as_deref().map(str_bytes))
            .with_protocol_type(str_bytes(&config.protocol_type))
            .with_protocols(
                config
                    .protocols
                    .iter()
                    .map(|(name, metadata)| {
                        JoinGroupRequestProtocol::default()
                            .with_name(str_bytes(name))
                            .with_metadata(metadata.clone())
                    })
                    .collect(),
            );
        let wait = config.rebalance_timeout + connection.request_timeout();
        let response = connection.send_within(request, version, wait).await?;
        let context = format!("group {:?}", config.group);
        if ResponseError::try_from_code(response.error_code)
            == Some(ResponseError::MemberIdRequired)
        {
            return Ok(Err(MemberIdRequired(response.member_id.to_string())));
        }
        Error::check_code("JoinGroup", response.error_code, context)?;
        Ok(Ok(Joined {
            generation: response.generation_id,
            member_id: response.member_id.to_string(),
            leader: response.leader.to_string(),
            protocol: response.protocol_name.map(|p| p.to_string()),
            members: response
                .members
                .into_iter()
                .map(|m| JoinedMember {
                    member_id: m.member_id.to_string(),
                    instance_id: m.group_instance_id.map(|i| i.to_string()),
                    metadata: m.metadata,
                })
                .collect(),
            skip_assignment: response.skip_assignment,
        }))
    }

    /// Completes the generation of `joined`: the leader hands in
    /// `assignments` (member id → assignment bytes), the others an empty
    /// list. Returns this member's own assignment.
    pub async fn sync_group(
        &self,
        config: &MemberConfig,
        joined: &Joined,
        assignments: &[(String, Bytes)],
    ) -> Result<Bytes, Error> {
        self.retry("SyncGroup", || async {
            let r = async {
                let connection = self.membership_connection(&config.group).await?;
                let version = connection.version_for::<SyncGroupRequest>()?;
                let request = SyncGroupRequest::default()
                    .with_group_id(crate::admin::groups::group_id(&config.group))
                    .with_generation_id(joined.generation)
                    .with_member_id(str_bytes(&joined.member_id))
                    .with_group_instance_id(config.instance_id.as_deref().map(str_bytes))
                    .with_protocol_type(Some(str_bytes(&config.protocol_type)))
                    .with_protocol_name(joined.protocol.as_deref().map(str_bytes))
                    .with_assignments(
                        assignments
                            .iter()
                            .map(|(member, bytes)| {
                                SyncGroupRequestAssignment::default()
                                    .with_member_id(str_bytes(member))
                                    .with_assignment(bytes.clone())
                            })
                            .collect(),
                    );
                // The coordinator holds a follower's SyncGroup until the leader's.
                let wait = config.rebalance_timeout + connection.request_timeout();
                let response = connection.send_within(request, version, wait).await?;
                Error::check_code(
                    "SyncGroup",
                    response.error_code,
                    format!("group {:?}", config.group),
                )?;
                Ok(response.assignment)
            }
            .await;
            self.note_coordinator(&config.group, r)
        })
        .await
    }

    /// Tells the coordinator this member of `generation` is alive. An error
    /// for which [`Error::needs_rejoin`] holds asks the member to join again.
    pub async fn heartbeat(
        &self,
        config: &MemberConfig,
        generation: i32,
        member_id: &str,
    ) -> Result<(), Error> {
        self.retry("Heartbeat", || async {
            let r = async {
                let connection = self.membership_connection(&config.group).await?;
                let version = connection.version_for::<HeartbeatRequest>()?;
                let request = HeartbeatRequest::default()
                    .with_group_id(crate::admin::groups::group_id(&config.group))
                    .with_generation_id(generation)
                    .with_member_id(str_bytes(member_id))
                    .with_group_instance_id(config.instance_id.as_deref().map(str_bytes));
                let response = connection.send_with_version(request, version).await?;
                Error::check_code(
                    "Heartbeat",
                    response.error_code,
                    format!("group {:?}", config.group),
                )
            }
            .await;
            self.note_coordinator(&config.group, r)
        })
        .await
    }

    /// Leaves the group now (the others rebalance without waiting for this
    /// member's session to time out). A static member leaves by its instance
    /// id. Leaving a group the coordinator no longer knows this member of
    /// succeeds.
    pub async fn leave_group(&self, config: &MemberConfig, member_id: &str) -> Result<(), Error> {
        self.retry("LeaveGroup", || async {
            let r = async {
                let connection = self.membership_connection(&config.group).await?;
                let version = connection.version_for::<LeaveGroupRequest>()?;
                let request = LeaveGroupRequest::default()
                    .with_group_id(crate::admin::groups::group_id(&config.group))
                    .with_members(vec![
                        MemberIdentity::default()
                            .with_member_id(str_bytes(member_id))
                            .with_group_instance_id(config.instance_id.as_deref().map(str_bytes)),
                    ]);
                let response = connection.send_with_version(request, version).await?;
                let context = format!("group {:?}", config.group);
                Error::check_code("LeaveGroup", response.error_code, context.clone())?;
                for member in &response.members {
                    match Error::check_code("LeaveGroup", member.error_code, context.clone()) {
                        Err(e) if e.kafka_error() == Some(ResponseError::UnknownMemberId) => {}
                        other => other?,
                    }
                }
                Ok(())
            }
            .await;
            self.note_coordinator(&config.group, r)
        })
        .await
    }
}

/// A JoinGroup answer of MEMBER_ID_REQUIRED (KIP-394), with the member id
/// to join again with: a step of the protocol, not a failure.
struct MemberIdRequired(String);

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}
