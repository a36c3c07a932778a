//! Consumer group operations: list, describe, fetch and commit offsets.
//!
//! # Classic and KIP-848 groups
//!
//! Kafka 4.x has two kinds of consumer groups: *classic* ones (the
//! JoinGroup/SyncGroup protocol; DescribeGroups describes them) and
//! *consumer* ones (KIP-848; ConsumerGroupDescribe describes them).
//! Measured against Kafka 4.1.1: DescribeGroups (v5) reports a KIP-848
//! group exactly like a group that does not exist (state `Dead`, empty
//! protocol type, no error), and ConsumerGroupDescribe answers
//! GROUP_ID_NOT_FOUND both for classic groups and for groups that do not
//! exist. So [`Client::describe_groups`] sends DescribeGroups for every
//! group, then ConsumerGroupDescribe for those reported `Dead`; a group
//! neither describes is `Dead` (it does not exist).

mod describe;
mod offsets;

use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;

#[cfg(doc)]
use crate::client::Client;

pub use self::describe::{
    GroupDescription, GroupMember, GroupState, GroupType, ListedGroup, ListedGroups,
};
pub use self::offsets::{
    CommitResults, CommittedOffset, CommittedRef, FetchedOffset, GroupOffsets, OffsetFetchOptions,
    OffsetToCommit,
};

pub(crate) fn group_id(name: &str) -> GroupId {
    GroupId(StrBytes::from_string(name.to_string()))
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}
