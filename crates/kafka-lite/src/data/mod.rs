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
mod common;
mod fetch;
mod offsets;
pub(crate) mod produce;
mod reader;
mod topic_reader;

pub use common::IsolationLevel;
pub use fetch::{FetchOptions, FetchedPartition, RawFetch};
pub use offsets::{ListedOffset, OffsetSpec, PartitionOffset};
pub use produce::ProduceOptions;
pub use reader::{PartitionReader, StartOffset};
pub use topic_reader::{PartitionRecords, TopicPoll, TopicReader};

use kafka_protocol::error::ResponseError;

use crate::Error;

impl Error {
    /// Whether the broker answered OFFSET_OUT_OF_RANGE: the offset asked for
    /// is before the log start (deleted by retention) or after the log end.
    /// A reader can reset to the earliest or latest offset and carry on.
    pub fn is_offset_out_of_range(&self) -> bool {
        self.kafka_error() == Some(ResponseError::OffsetOutOfRange)
    }
}
