//! MirrorMaker 2's topic names, as the core computes them.
//!
//! xtask seeds offset syncs, reads checkpoints and names mirrors for the
//! clusters it drives; every such name comes from the core's
//! [`ReplicationPolicy`] (MM2's default policy, `.` separators), so xtask
//! never spells an MM2 naming rule itself and cannot drift from the binary
//! it tests.

use mm2_checkpoint::core::ReplicationPolicy;

/// The offset-syncs topic MM2 writes on the source for `target_alias`:
/// `mm2-offset-syncs.<target alias>.internal`.
pub fn offset_syncs(target_alias: &str) -> String {
    ReplicationPolicy::default().offset_syncs_topic(target_alias)
}

/// The checkpoints topic on the target for `source_alias`:
/// `<source alias>.checkpoints.internal`.
pub fn checkpoints(source_alias: &str) -> String {
    ReplicationPolicy::default().checkpoints_topic(source_alias)
}

/// The mirror of `topic` from `source_alias` on the target:
/// `<source alias>.<topic>`.
pub fn remote(source_alias: &str, topic: &str) -> String {
    ReplicationPolicy::default().format_remote_topic(source_alias, topic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_mm2_defaults() {
        assert_eq!(offset_syncs("target"), "mm2-offset-syncs.target.internal");
        assert_eq!(checkpoints("source"), "source.checkpoints.internal");
        assert_eq!(remote("source", "orders"), "source.orders");
    }
}
