//! mm2-checkpoint: MirrorMaker 2's checkpointing engine.
//!
//! [`core`] is the pure, I/O-free heart: record formats, replication policies,
//! filters, the offset-sync store, the checkpoint store, the decisions of each
//! round and the flow's schedule. It is its own crate, `mm2-checkpoint-core`,
//! which depends on no async runtime and no Kafka client, so the compiler
//! keeps it pure; it is re-exported here as `core`. A thin driver runs it on
//! `kafka-lite`.

pub mod config;
pub mod console;
pub use mm2_checkpoint_core as core;
pub mod driver;
pub mod logging;
pub mod metrics;
pub mod notify;
pub mod shutdown;
pub mod tls_provider;
