//! Listing and describing groups: ListGroups on every broker, DescribeGroups and
//! ConsumerGroupDescribe on each coordinator, and the types they return.

use std::fmt;

use indexmap::IndexMap;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_describe_response::Member as ConsumerGroupMember;
use kafka_protocol::messages::describe_groups_response::DescribedGroupMember;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, DescribeGroupsRequest, ListGroupsRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::names::group_id;
use crate::client::{BrokerInfo, Client};
use crate::error::Error;

/// The state of a consumer group, as the coordinator reports it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GroupState {
    /// No members (offsets may be committed).
    Empty,
    /// Members joined and have their assignment.
    Stable,
    /// Classic: a rebalance started; members must rejoin.
    PreparingRebalance,
    /// Classic: waiting for the leader's assignment.
    CompletingRebalance,
    /// The group does not exist (or is being removed).
    Dead,
    /// KIP-848: the coordinator is computing a new assignment.
    Assigning,
    /// KIP-848: members are moving to a new assignment.
    Reconciling,
    /// A state this version of kafka-lite does not know.
    Unknown(String),
}

impl GroupState {
    /// Parses the state name Kafka sends (either spelling Kafka uses:
    /// `PreparingRebalance` or `preparing_rebalance`, case-insensitive).
    pub fn parse(name: &str) -> GroupState {
        let normal: String = name
            .chars()
            .filter(|c| *c != '_')
            .map(|c| c.to_ascii_lowercase())
            .collect();
        match normal.as_str() {
            "empty" => GroupState::Empty,
            "stable" => GroupState::Stable,
            "preparingrebalance" => GroupState::PreparingRebalance,
            "completingrebalance" => GroupState::CompletingRebalance,
            "dead" => GroupState::Dead,
            "assigning" => GroupState::Assigning,
            "reconciling" => GroupState::Reconciling,
            _ => GroupState::Unknown(name.to_string()),
        }
    }

    /// Whether the group has (or is getting) members, i.e. is neither
    /// `Empty` nor `Dead`.
    pub fn is_active(&self) -> bool {
        !matches!(self, GroupState::Empty | GroupState::Dead)
    }
}

impl fmt::Display for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupState::Empty => f.write_str("Empty"),
            GroupState::Stable => f.write_str("Stable"),
            GroupState::PreparingRebalance => f.write_str("PreparingRebalance"),
            GroupState::CompletingRebalance => f.write_str("CompletingRebalance"),
            GroupState::Dead => f.write_str("Dead"),
            GroupState::Assigning => f.write_str("Assigning"),
            GroupState::Reconciling => f.write_str("Reconciling"),
            GroupState::Unknown(s) => f.write_str(s),
        }
    }
}

/// The kind of group (ListGroups v5 `group_type`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GroupType {
    /// The classic JoinGroup/SyncGroup protocol.
    Classic,
    /// The KIP-848 consumer protocol.
    Consumer,
    /// Another type (`share`, `streams`, ...).
    Other(String),
}

impl GroupType {
    /// Parses Kafka's type name (case-insensitive).
    pub fn parse(name: &str) -> GroupType {
        match name.to_ascii_lowercase().as_str() {
            "classic" => GroupType::Classic,
            "consumer" => GroupType::Consumer,
            _ => GroupType::Other(name.to_string()),
        }
    }
}

impl fmt::Display for GroupType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupType::Classic => f.write_str("classic"),
            GroupType::Consumer => f.write_str("consumer"),
            GroupType::Other(s) => f.write_str(s),
        }
    }
}

/// A group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    /// The group id.
    pub group_id: String,
    /// The protocol type (`consumer` for consumer groups, empty for groups
    /// that only commit offsets).
    pub protocol_type: String,
    /// The state; `None` from brokers older than ListGroups v4.
    pub state: Option<GroupState>,
    /// The type; `None` from brokers older than ListGroups v5.
    pub group_type: Option<GroupType>,
    /// The broker that listed it (its coordinator).
    pub coordinator: BrokerInfo,
}

/// The answer of [`Client::list_groups`]: the groups of every broker that
/// answered, and an error for each broker that did not.
#[derive(Debug, Default)]
pub struct ListedGroups {
    /// Groups, sorted by id.
    pub groups: Vec<ListedGroup>,
    /// Brokers whose ListGroups failed (after retries), with the error.
    pub broker_errors: Vec<(BrokerInfo, Error)>,
}

/// One member of a described group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The member id.
    pub member_id: String,
    /// The static membership id, if any.
    pub instance_id: Option<String>,
    /// The member's `client.id`.
    pub client_id: String,
    /// The member's host.
    pub client_host: String,
    /// The assignment the group's leader gave the member, as the
    /// coordinator holds it (DescribeGroups, classic groups); empty from
    /// ConsumerGroupDescribe, whose assignments are partitions.
    pub assignment: Vec<u8>,
}

impl GroupMember {
    fn new(
        member_id: &StrBytes,
        instance_id: Option<&StrBytes>,
        client_id: &StrBytes,
        client_host: &StrBytes,
        assignment: &[u8],
    ) -> Self {
        GroupMember {
            member_id: member_id.to_string(),
            instance_id: instance_id.map(|s| s.to_string()),
            client_id: client_id.to_string(),
            client_host: client_host.to_string(),
            assignment: assignment.to_vec(),
        }
    }
}

impl From<&DescribedGroupMember> for GroupMember {
    fn from(m: &DescribedGroupMember) -> Self {
        let instance = m.group_instance_id.as_ref();
        GroupMember::new(
            &m.member_id,
            instance,
            &m.client_id,
            &m.client_host,
            &m.member_assignment,
        )
    }
}

impl From<&ConsumerGroupMember> for GroupMember {
    fn from(m: &ConsumerGroupMember) -> Self {
        let instance = m.instance_id.as_ref();
        GroupMember::new(&m.member_id, instance, &m.client_id, &m.client_host, &[])
    }
}

/// A group as DescribeGroups or ConsumerGroupDescribe reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// The group id.
    pub group_id: String,
    /// The state (`Dead` for a group that does not exist).
    pub state: GroupState,
    /// Classic or KIP-848 consumer group. A group that does not exist is
    /// reported as `Classic` with state `Dead`.
    pub group_type: GroupType,
    /// Classic groups: the protocol type (`consumer`, or empty for a group
    /// that only has committed offsets). KIP-848 groups: `consumer`.
    pub protocol_type: String,
    /// Classic groups: the chosen assignment protocol (`range`, ...).
    /// KIP-848 groups: the server-side assignor (`uniform`, ...).
    pub protocol: String,
    /// The members.
    pub members: Vec<GroupMember>,
    /// The coordinator that described it.
    pub coordinator: BrokerInfo,
}

impl GroupDescription {
    /// Number of members.
    pub fn member_count(&self) -> usize {
        self.members.len()
    }
}

impl Client {
    /// Lists the groups of every broker (each coordinates its own groups),
    /// asking all brokers in parallel. Fills state (ListGroups v4+) and type
    /// (v5+). A broker that fails (after retries) is reported in
    /// [`ListedGroups::broker_errors`]; the others' groups are still listed.
    pub async fn list_groups(&self) -> Result<ListedGroups, Error> {
        let snapshot = self.refresh_metadata(Some(&[])).await?;
        let mut tasks = tokio::task::JoinSet::new();
        for broker in snapshot.brokers.values().cloned() {
            let client = self.clone();
            tasks.spawn(async move {
                let result = client
                    .retry("ListGroups", || client.list_groups_of(&broker))
                    .await;
                (broker, result)
            });
        }
        let mut listed = ListedGroups::default();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((_, Ok(groups))) => listed.groups.extend(groups),
                Ok((broker, Err(e))) => listed.broker_errors.push((broker, e)),
                Err(e) => tracing::error!(error = %e, "ListGroups task ended unexpectedly"),
            }
        }
        listed.groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        listed
            .broker_errors
            .sort_by_key(|(broker, _)| broker.node_id);
        Ok(listed)
    }

    async fn list_groups_of(&self, broker: &BrokerInfo) -> Result<Vec<ListedGroup>, Error> {
        let connection = self.connection_to(broker).await?;
        let version = connection.version_for::<ListGroupsRequest>()?;
        let response = connection
            .send_with_version(ListGroupsRequest::default(), version)
            .await?;
        Error::check_code("ListGroups", response.error_code, broker.to_string())?;
        Ok(response
            .groups
            .iter()
            .map(|g| ListedGroup {
                group_id: g.group_id.0.to_string(),
                protocol_type: g.protocol_type.to_string(),
                state: (version >= 4).then(|| GroupState::parse(&g.group_state)),
                group_type: (version >= 5).then(|| GroupType::parse(&g.group_type)),
                coordinator: broker.clone(),
            })
            .collect())
    }

    /// Describes many groups, classic and KIP-848 alike (see the module
    /// documentation), with one DescribeGroups (plus at most one
    /// ConsumerGroupDescribe) per coordinator. A group that does not exist
    /// is `Ok` with state [`GroupState::Dead`]. Results keep the order of
    /// `groups`.
    pub async fn describe_groups(
        &self,
        groups: &[String],
    ) -> IndexMap<String, Result<GroupDescription, Error>> {
        self.per_coordinator(
            "DescribeGroups",
            groups,
            |client, broker, bucket| async move { client.describe_on(&broker, &bucket).await },
        )
        .await
    }

    async fn describe_on(
        &self,
        broker: &BrokerInfo,
        groups: &[String],
    ) -> Result<Vec<(String, Result<GroupDescription, Error>)>, Error> {
        let connection = self.connection_to(broker).await?;
        let version = connection.version_for::<DescribeGroupsRequest>()?;
        let request = DescribeGroupsRequest::default()
            .with_groups(groups.iter().map(|g| group_id(g)).collect());
        let response = connection.send_with_version(request, version).await?;
        let mut out = Vec::with_capacity(groups.len());
        let mut maybe_consumer = Vec::new();
        // A classic group that does not exist; the base of every description.
        let absent = |id: &str| GroupDescription {
            group_id: id.to_string(),
            state: GroupState::Dead,
            group_type: GroupType::Classic,
            protocol_type: String::new(),
            protocol: String::new(),
            members: Vec::new(),
            coordinator: broker.clone(),
        };
        for g in &response.groups {
            let id = g.group_id.0.to_string();
            let error = ResponseError::try_from_code(g.error_code);
            let state = GroupState::parse(&g.group_state);
            // v6+ answers GROUP_ID_NOT_FOUND where v5 answers Dead.
            let dead = error == Some(ResponseError::GroupIdNotFound)
                || (error.is_none() && state == GroupState::Dead);
            if dead {
                maybe_consumer.push(id);
                continue;
            }
            // The context is formatted only for an error (this runs for
            // every group of every group sync).
            let checked = match error {
                None => Ok(()),
                Some(_) => {
                    Error::check_code("DescribeGroups", g.error_code, format!("group {id:?}"))
                }
            };
            let result = checked.map(|()| GroupDescription {
                state,
                protocol_type: g.protocol_type.to_string(),
                protocol: g.protocol_data.to_string(),
                members: g.members.iter().map(GroupMember::from).collect(),
                ..absent(&id)
            });
            out.push((id, result));
        }
        if maybe_consumer.is_empty() {
            return Ok(out);
        }
        let Ok(cgd_version) = connection.version_for::<ConsumerGroupDescribeRequest>() else {
            // A broker without KIP-848 has no consumer groups.
            out.extend(maybe_consumer.iter().map(|id| (id.clone(), Ok(absent(id)))));
            return Ok(out);
        };
        let request = ConsumerGroupDescribeRequest::default()
            .with_group_ids(maybe_consumer.iter().map(|g| group_id(g)).collect());
        let response = connection.send_with_version(request, cgd_version).await?;
        for g in &response.groups {
            let id = g.group_id.0.to_string();
            let error = ResponseError::try_from_code(g.error_code);
            let result = match error {
                // Not a consumer group either: it does not exist.
                Some(ResponseError::GroupIdNotFound) => Ok(absent(&id)),
                _ => Error::check_code(
                    "ConsumerGroupDescribe",
                    g.error_code,
                    format!("group {id:?}"),
                )
                .map(|()| GroupDescription {
                    state: GroupState::parse(&g.group_state),
                    group_type: GroupType::Consumer,
                    protocol_type: "consumer".to_string(),
                    protocol: g.assignor_name.to_string(),
                    members: g.members.iter().map(GroupMember::from).collect(),
                    ..absent(&id)
                }),
            };
            out.push((id, result));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_states_parse_both_spellings() {
        assert_eq!(GroupState::parse("Stable"), GroupState::Stable);
        assert_eq!(
            GroupState::parse("PreparingRebalance"),
            GroupState::PreparingRebalance
        );
        assert_eq!(
            GroupState::parse("completing_rebalance"),
            GroupState::CompletingRebalance
        );
        assert_eq!(GroupState::parse("ASSIGNING"), GroupState::Assigning);
        assert_eq!(
            GroupState::parse("Frozen"),
            GroupState::Unknown("Frozen".into())
        );
        assert!(GroupState::Reconciling.is_active());
        assert!(!GroupState::Empty.is_active());
    }

    #[test]
    fn group_types_parse() {
        assert_eq!(GroupType::parse("classic"), GroupType::Classic);
        assert_eq!(GroupType::parse("consumer"), GroupType::Consumer);
        assert_eq!(GroupType::parse("share"), GroupType::Other("share".into()));
    }
}
