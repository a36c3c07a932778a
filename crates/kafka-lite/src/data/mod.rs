//! Data operations: ListOffsets, Fetch and Produce for single partitions, and
//! [`PartitionReader`], which reads a partition to the end it had when it
//! started and then follows it.
//!
//! Each operation is one crate-internal function taking the partition
//! leader's [`BrokerConnection`] (`list_offsets_on`, `fetch_on`,
//! `produce_on`: one request, no routing, no retries), and the public
//! [`Client`] method built on it, which finds the leader and retries
//! retriable errors (stale leadership, closed connections) after refreshing
//! metadata. [`PartitionReader`] offers both levels: `open_on`, `read_on`
//! and `follow_on` take a connection the caller picked, `read` and `follow`
//! go through a [`Client`]. Requests are counted by the pool the connection
//! came from ([`BrokerPool::requests_sent`](crate::BrokerPool::requests_sent)).
//!
//! Records are encoded and decoded by [`crate::records`]; this module adds
//! the protocol around them: which offsets to drop, control batches,
//! read_committed, and where the next fetch starts.
//!
//! [`BrokerConnection`]: crate::BrokerConnection
//! [`Client`]: crate::Client

mod client;
pub use client::AheadFetch;
mod fetch;
mod offsets;
pub(crate) mod produce;
mod reader;
mod topic_reader;

pub use fetch::{FetchOptions, FetchedPartition, RawFetch};
pub use offsets::{ListedOffset, OffsetSpec, PartitionOffset};
pub use produce::ProduceOptions;
pub use reader::{PartitionReader, StartOffset};
pub use topic_reader::{PartitionRecords, TopicPoll, TopicReader};

use kafka_protocol::error::ResponseError;

use crate::Error;

/// Which records a read may see (Kafka's `isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IsolationLevel {
    /// Every record up to the high watermark, including records of open
    /// and aborted transactions (`read_uncommitted`, Kafka's default).
    #[default]
    ReadUncommitted,
    /// Records up to the last stable offset (LSO), without the records of
    /// aborted transactions (`read_committed`).
    ReadCommitted,
}

impl IsolationLevel {
    /// The protocol's `isolation_level` byte.
    fn to_protocol(self) -> i8 {
        match self {
            IsolationLevel::ReadUncommitted => 0,
            IsolationLevel::ReadCommitted => 1,
        }
    }
}

impl Error {
    /// Whether the broker answered OFFSET_OUT_OF_RANGE: the offset asked for
    /// is before the log start (deleted by retention) or after the log end.
    /// A reader can reset to the earliest or latest offset and carry on.
    pub fn is_offset_out_of_range(&self) -> bool {
        self.kafka_error() == Some(ResponseError::OffsetOutOfRange)
    }
}

/// `topic-partition` as used in error contexts.
fn partition_context(topic: &str, partition: i32) -> String {
    format!("topic-partition {topic}-{partition}")
}
