//! Small domain types shared by every part of the core.

use std::collections::BTreeMap;
use std::fmt;

/// A topic-partition, written `topic-N` like Kafka's `TopicPartition.toString`.
///
/// The core's own plain type: the core depends on no Kafka client, so the
/// driver turns the client's partitions into these at the seam
/// (docs/architecture.md).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// The topic name.
    pub topic: String,
    /// The partition index.
    pub partition: i32,
}

impl TopicPartition {
    /// `topic`/`partition`.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// The answer to "where downstream is upstream offset `u` of this source partition?"
///
/// MM2 folds the first three cases into "empty or -1"; we keep them apart so the
/// driver can count and log why a partition was not translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Translation {
    /// The offset-syncs topic has not been read to its end yet (docs/behaviour.md C.4): nothing
    /// may be translated before that.
    NotReady,
    /// No offset sync has ever been seen for this source partition.
    NoSync,
    /// The offset is older than the earliest usable sync (MM2's `-1`).
    TooOld,
    /// The offset translates to this downstream offset.
    Translated(i64),
}

/// Anything that translates upstream offsets of a source partition to downstream
/// offsets. The offset-sync store implements it; round decisions depend only on this.
pub trait OffsetTranslator {
    /// Translates upstream offset `upstream` of source partition `tp` (docs/behaviour.md C.5).
    fn translate(&self, tp: &TopicPartition, upstream: i64) -> Translation;
}

/// A source group's commit for one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedOffset {
    /// The committed offset.
    pub offset: i64,
    /// The commit metadata; the driver passes `""` for a null metadata, as Kafka's
    /// `OffsetAndMetadata` does.
    pub metadata: String,
}

impl CommittedOffset {
    /// `offset` with commit metadata `metadata`.
    pub fn new(offset: i64, metadata: impl Into<String>) -> Self {
        CommittedOffset {
            offset,
            metadata: metadata.into(),
        }
    }
}

/// A source group's committed offsets: `None` means the partition is committed at
/// -1 (ListConsumerGroupOffsets returns no offset for it).
pub type GroupOffsets = BTreeMap<TopicPartition, Option<CommittedOffset>>;

/// One offset sync: the record at `upstream` offset of the source partition was written
/// at `downstream` offset of its remote partition on the target (docs/behaviour.md A.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OffsetSync {
    /// Offset of the record in the source partition.
    pub upstream: i64,
    /// Offset the record got in the remote (replicated) partition.
    pub downstream: i64,
}

impl OffsetSync {
    /// Builds an offset sync.
    pub const fn new(upstream: i64, downstream: i64) -> Self {
        Self {
            upstream,
            downstream,
        }
    }
}

impl fmt::Display for OffsetSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.upstream, self.downstream)
    }
}
