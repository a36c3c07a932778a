//! The pure core: facts in, actions out, no I/O.
//!
//! Nothing under this module may use sockets, files, clocks or async runtimes; the
//! driver passes time and broker answers in as plain values.

pub mod sync_store;
pub mod types;

pub use sync_store::{InitMode, OffsetSync, OffsetSyncStore, SlotLayout};
pub use types::{OffsetTranslator, TopicPartition, Translation};
