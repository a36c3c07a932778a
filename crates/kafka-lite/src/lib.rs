//! kafka-lite: a minimal pure-Rust Kafka wire-protocol client.
//!
//! It knows nothing about MirrorMaker. See `docs/client.md` for its layers.
//!
//! The connection layer:
//! - [`ConnectionConfig`] (with [`TlsConfig`], [`SaslConfig`]) describes how to
//!   reach a cluster; [`Connector`] validates it once.
//! - [`BrokerConnection`] is one pipelined connection; [`BrokerConnection::send`]
//!   negotiates the version from the [`ApiRequest`] table.
//! - [`BrokerPool`] keeps one connection per broker and reconnects lazily.
//! - Every failure is an [`Error`]; [`Error::is_retriable`] says whether to retry.
//!
//! The cluster layer: [`Client`] (metadata cache, leader and coordinator
//! routing, retries with [`RetryPolicy`]).
//!
//! The operations ([`admin`]): consumer groups (list, describe, fetch and
//! commit offsets) and topic creation, batched per broker.
//!
//! The data operations ([`data`]): ListOffsets, Fetch, Produce and
//! [`PartitionReader`]; record batches are [`records`].

pub mod admin;
pub mod api;
pub mod backoff;
pub mod client;
pub mod config;
pub mod connection;
pub mod data;
pub mod error;
pub mod frame;
pub mod pool;
pub mod records;
pub mod sasl;
pub mod tls;
pub mod transport;

#[cfg(test)]
mod hostile_input;

pub use admin::TopicPartition;
pub use admin::groups::{
    CommitResults, CommittedOffset, GroupDescription, GroupMember, GroupOffsets, GroupState,
    GroupType, ListedGroup, ListedGroups, OffsetFetchOptions, OffsetToCommit,
};
pub use admin::topics::CreateTopicOutcome;
pub use api::ApiRequest;
pub use backoff::{Backoff, RetryPolicy};
pub use client::{BrokerInfo, Client, ClusterMetadata, PartitionMetadata, TopicMetadata};
pub use config::{
    ClientCertConfig, ConnectionConfig, Pem, PemBytes, SaslConfig, SaslMechanismKind, Secret,
    TlsConfig,
};
pub use connection::{BrokerConnection, Connector};
pub use data::{
    FetchOptions, FetchedPartition, IsolationLevel, ListedOffset, OffsetSpec, PartitionOffset,
    PartitionReader, ProduceOptions, StartOffset,
};
pub use error::Error;
pub use pool::BrokerPool;
