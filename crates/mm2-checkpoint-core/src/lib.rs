//! The pure core: facts in, actions out, no I/O.
//!
//! Nothing under this module may use sockets, files, clocks or async runtimes; the
//! driver passes time and broker answers in as plain values.
//!
//! The behaviour it reproduces is written down in `docs/behaviour.md`; section
//! numbers in comments here (`D.3`, `C.5 steps 3–5`, quirk `H.4`) are that
//! document's.

pub mod sync_archive;
pub mod sync_history;
pub mod sync_store;
pub mod types;

pub use sync_history::SyncHistory;
pub use sync_store::{InitMode, OffsetSync, OffsetSyncStore, Precision, SlotLayout, SyncApplied};
pub use types::{OffsetTranslator, TopicPartition, Translation};
pub mod checkpoint_store;
pub mod consumer_offsets;
pub mod content_search;
pub mod cutover;
pub mod filter;
pub mod followed_offsets;
pub mod format;
pub mod group_sync;
pub mod name;
pub mod ownership;
pub mod policy;
pub mod reverse;
pub mod round;
pub mod schedule;
pub mod status;
pub mod topic_ids;
pub mod window;

pub use checkpoint_store::{
    CheckpointStore, GroupCheckpoints, RestoreOutcome, RestoreStats, StoredCheckpoint,
};
pub use filter::{FilterError, GroupFilter, TopicFilter};
pub use followed_offsets::{Applied, FollowedOffsets};
pub use format::{Checkpoint, CheckpointKey, DecodeError, EncodeError};
pub use group_sync::{
    DecidedCheckpoints, GroupCommit, GroupSyncDecision, GroupSyncPlan, PlannedCommits,
    SyncedGroups, TargetGroup, TargetGroupState, TargetOffsets, TargetRefresh, plan_group_sync,
    plan_group_sync_for,
};
pub use policy::{Flow, OffsetSyncsLocation, ReplicationPolicy};
pub use round::{
    CheckpointRound, CommittedOffset, CountedPlan, GroupOffsets, RoundPlan, SkipCounts, SkipReason,
};
pub use window::{GroupCommits, OffsetsWindow, group_commits};
