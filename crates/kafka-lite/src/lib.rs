//! kafka-lite: a minimal pure-Rust Kafka wire-protocol client.
//!
//! It knows nothing about MirrorMaker. See `docs/client.md` for its layers.
//!
//! # Public surface
//!
//! Everything a caller needs is re-exported here, at the crate root; the
//! modules behind it are private. Two modules are public on purpose:
//!
//! - [`records`], the record-batch codec: a self-contained API (encode,
//!   decode, read_committed filtering) that benchmarks, fuzz targets and
//!   tests use directly, and whose record types appear in the data
//!   operations' signatures;
//! - [`frame`], the length-prefixed wire framing, for fake brokers in tests
//!   and for the response-decoding fuzz target.
//!
//! # Layers
//!
//! The connection layer:
//! - [`ConnectionConfig`] (with [`TlsConfig`], [`SaslConfig`]) describes how to
//!   reach a cluster; [`Connector`] validates it once. TLS material is a PEM
//!   file or PEM bytes in memory ([`Pem`], [`PemBytes`]).
//! - [`BrokerConnection`] is one pipelined connection; [`BrokerConnection::send`]
//!   negotiates the version from the [`ApiRequest`] table.
//! - [`BrokerPool`] keeps one connection per broker, reconnects lazily and
//!   counts the requests sent on its connections
//!   ([`BrokerPool::requests_sent`]).
//! - Every failure is an [`Error`] (cheap to clone); [`Error::is_retriable`]
//!   says whether to retry, [`Error::is_virtual`] whether kafka-lite made up
//!   a Kafka error code that no broker sent.
//!
//! The cluster layer: [`Client`] (metadata cache, leader and coordinator
//! routing, retries with [`RetryPolicy`]).
//!
//! The operations, as [`Client`] methods: consumer groups (list, describe,
//! fetch and commit offsets) and topic creation, batched per broker;
//! ListOffsets, Fetch and Produce; and [`PartitionReader`], which reads a
//! partition to its end and then follows it. Record batches are
//! [`records`].
#![warn(unreachable_pub)]

mod admin;
mod api;
pub mod aws;
mod backoff;
mod client;
mod config;
mod connection;
mod counts;
mod credentials;
mod data;
mod error;
pub mod frame;
mod http;
mod membership;
mod oauth;
mod pool;
pub mod records;
mod sasl;
mod tls;
mod transport;
mod txn;

#[cfg(test)]
mod hostile_input;

pub use admin::TopicPartition;
pub use admin::groups::{
    CommitResults, CommittedOffset, CommittedRef, FetchedOffset, GroupDescription, GroupMember,
    GroupOffsets, GroupState, GroupType, ListedGroup, ListedGroups, OffsetFetchOptions,
    OffsetToCommit,
};
pub use admin::topics::CreateTopicOutcome;
pub use api::ApiRequest;
pub use backoff::RetryPolicy;
pub use client::{BrokerInfo, Client, ClusterMetadata, PartitionMetadata, TopicMetadata};
pub use config::{
    AwsMskIamSettings, ClientCertConfig, ConnectionConfig, DEFAULT_MAX_FRAME_BYTES,
    DynamicCredentials, Pem, PemBytes, SaslConfig, SaslMechanismKind, TlsConfig,
};
pub use connection::{BrokerConnection, Connector, SendWindow};
pub use counts::RequestCounts;
pub use credentials::{BearerToken, BoxFuture, CredentialError, CredentialProvider, Secret};
pub use data::{
    AheadFetch, FetchOptions, FetchedPartition, IsolationLevel, ListedOffset, OffsetSpec,
    PartitionOffset, PartitionReader, PartitionRecords, ProduceOptions, RawFetch, StartOffset,
    TopicPoll, TopicReader,
};
pub use error::{Error, TlsFailure, kafka_error_name};
pub use http::{HttpClient, HttpClientConfig, HttpError, HttpRequest, HttpResponse, HttpUrl};
pub use membership::{Joined, JoinedMember, MemberConfig};
pub use oauth::{OAuthBearerTokens, OAuthConfig, RefreshConfig, TokenSource};
pub use pool::BrokerPool;
pub use tls::{
    BuiltIn, ClientIdentityCheck, ClientIdentityError, CpuFacts, TlsProviderChoice,
    TlsProviderKind, TlsProviderRequest, check_client_identity, choose_tls_provider,
    client_config as tls_client_config, crypto_provider, crypto_provider_for, graviola_cpu_support,
    portable, this_cpu, tls_provider, tls_provider_for,
};
pub use txn::TransactionalProducer;
