//! mm2-checkpoint: MirrorMaker 2's checkpointing engine.
//!
//! [`core`] is the pure, I/O-free heart: record formats, replication policies,
//! filters, the offset-sync store, the checkpoint store and the decisions of each
//! round. A thin driver runs it on `kafka-lite`.

pub mod config;
pub mod console;
pub mod core;
pub mod driver;
pub mod logging;
pub mod metrics;
pub mod shutdown;
pub mod tls_provider;
