//! The pure core: facts in, actions out, no I/O.
//!
//! Nothing under this module may use sockets, files, clocks or async runtimes; the
//! driver passes time and broker answers in as plain values.

pub mod types;

pub use types::{OffsetTranslator, TopicPartition, Translation};
pub mod checkpoint_store;
pub mod filter;
pub mod format;
pub mod group_sync;
pub mod policy;
pub mod round;
