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
mod names;
mod offsets;

#[cfg(doc)]
use crate::client::Client;

pub use self::describe::{
    GroupDescription, GroupMember, GroupState, GroupType, ListedGroup, ListedGroups,
};
pub(crate) use self::names::group_id;
pub use self::offsets::{
    CommitResults, CommittedOffset, CommittedRef, FetchedOffset, GroupOffsets, OffsetFetchOptions,
    OffsetToCommit,
};
