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

pub mod api;
pub mod config;
pub mod connection;
pub mod error;
pub mod frame;
pub mod pool;
pub mod sasl;
pub mod tls;
pub mod transport;

#[cfg(test)]
mod hostile_input;

pub use api::ApiRequest;
pub use config::{
    ClientCertConfig, ConnectionConfig, SaslConfig, SaslMechanismKind, Secret, TlsConfig,
};
pub use connection::{BrokerConnection, Connector};
pub use error::Error;
pub use pool::BrokerPool;
