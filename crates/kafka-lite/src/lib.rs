//! kafka-lite: a minimal pure-Rust Kafka wire-protocol client.
//!
//! It knows nothing about MirrorMaker. See `docs/client.md` for its layers.
pub mod records;
