//! Group and topic names as the protocol's message types carry them.

use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;

pub(crate) fn group_id(name: &str) -> GroupId {
    GroupId(StrBytes::from_string(name.to_string()))
}

pub(super) fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}
