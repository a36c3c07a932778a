//! What the data operations share: the isolation level a read asks for, and how
//! an error names a partition.

/// Which records a read may see (Kafka's `isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IsolationLevel {
    /// Every record up to the high watermark, including records of open
    /// and aborted transactions (`read_uncommitted`, Kafka's default).
    #[default]
    ReadUncommitted,
    /// Records up to the last stable offset (LSO), without the records of
    /// aborted transactions (`read_committed`).
    ReadCommitted,
}

impl IsolationLevel {
    /// The protocol's `isolation_level` byte.
    pub(super) fn to_protocol(self) -> i8 {
        match self {
            IsolationLevel::ReadUncommitted => 0,
            IsolationLevel::ReadCommitted => 1,
        }
    }
}

/// `topic-partition` as used in error contexts.
pub(super) fn partition_context(topic: &str, partition: i32) -> String {
    format!("topic-partition {topic}-{partition}")
}
