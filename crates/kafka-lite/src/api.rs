//! The requests kafka-lite sends, with the version range it implements for
//! each — the one table the version negotiation uses.
//!
//! A range here is what the layers above are written for, not just what
//! kafka-protocol can encode. Caps, and why:
//!
//! | API | versions | note |
//! |---|---|---|
//! | ApiVersions | 0–4 | falls back to the broker's own max on UNSUPPORTED_VERSION |
//! | Metadata | 1–12 | v0 means "all topics" for an empty list; v13 only adds a top-level error |
//! | FindCoordinator | 0–4 | v4+ batches keys (`coordinator_keys`); v5/v6 add transaction/share-group semantics only |
//! | ListGroups | 0–5 | v4 state filter, v5 type filter |
//! | DescribeGroups | 0–5 | |
//! | ConsumerGroupDescribe | 0–1 | KIP-848 groups |
//! | OffsetFetch | 1–9 | v8+ batches groups; v10 (topic ids) not implemented |
//! | OffsetCommit | 2–9 | v10 (topic ids) not implemented |
//! | CreateTopics | 2–7 | |
//! | ListOffsets | 1–8 | |
//! | Fetch | 4–12 | v13+ identifies topics by id only |
//! | Produce | 3–9 | v10+ adds KIP-890/topic-id semantics |
//! | SaslHandshake | 1 | v0 (raw SASL tokens) is not implemented |
//! | SaslAuthenticate | 0–2 | |
//!
//! The request builders of the layers above must fill the fields of the
//! version they are given (see [`crate::BrokerConnection::version_for`]).

use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, ApiVersionsRequest,
    ConsumerGroupDescribeRequest, CreateTopicsRequest, DescribeGroupsRequest, EndTxnRequest,
    FetchRequest, FindCoordinatorRequest, HeartbeatRequest, InitProducerIdRequest,
    JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest, ListOffsetsRequest, MetadataRequest,
    OffsetCommitRequest, OffsetFetchRequest, ProduceRequest, SaslAuthenticateRequest,
    SaslHandshakeRequest, SyncGroupRequest, TxnOffsetCommitRequest,
};
use kafka_protocol::protocol::{Request, VersionRange};

/// A Kafka request kafka-lite knows how to send, with its name and the
/// version range kafka-lite implements.
pub trait ApiRequest: Request + Send + 'static {
    /// The API's name as Kafka documents it, e.g. `"OffsetFetch"`.
    const NAME: &'static str;
    /// The lowest version kafka-lite sends.
    const MIN_VERSION: i16;
    /// The highest version kafka-lite sends.
    const MAX_VERSION: i16;

    /// `MIN_VERSION..=MAX_VERSION` as a kafka-protocol range.
    fn supported_versions() -> VersionRange {
        VersionRange {
            min: Self::MIN_VERSION,
            max: Self::MAX_VERSION,
        }
    }
}

macro_rules! api_requests {
    ($($ty:ident => $name:literal, $min:literal ..= $max:literal;)*) => {
        $(
            impl ApiRequest for $ty {
                const NAME: &'static str = $name;
                const MIN_VERSION: i16 = $min;
                const MAX_VERSION: i16 = $max;
            }
        )*

        /// The name kafka-lite uses for an API key (`"ApiKey(n)"` for keys
        /// it does not send).
        #[cfg(test)]
        fn api_name(key: i16) -> String {
            $(
                if key == <$ty as Request>::KEY {
                    return $name.to_string();
                }
            )*
            format!("ApiKey({key})")
        }

        #[cfg(test)]
        fn all_ranges() -> Vec<(&'static str, VersionRange, VersionRange)> {
            vec![$(($name, <$ty as ApiRequest>::supported_versions(), <$ty as kafka_protocol::protocol::Message>::VERSIONS)),*]
        }
    };
}

api_requests! {
    ApiVersionsRequest => "ApiVersions", 0..=4;
    MetadataRequest => "Metadata", 1..=12;
    FindCoordinatorRequest => "FindCoordinator", 0..=4;
    ListGroupsRequest => "ListGroups", 0..=5;
    DescribeGroupsRequest => "DescribeGroups", 0..=5;
    ConsumerGroupDescribeRequest => "ConsumerGroupDescribe", 0..=1;
    OffsetFetchRequest => "OffsetFetch", 1..=9;
    OffsetCommitRequest => "OffsetCommit", 2..=9;
    CreateTopicsRequest => "CreateTopics", 2..=7;
    ListOffsetsRequest => "ListOffsets", 1..=8;
    FetchRequest => "Fetch", 4..=12;
    ProduceRequest => "Produce", 3..=9;
    JoinGroupRequest => "JoinGroup", 5..=9;
    SyncGroupRequest => "SyncGroup", 3..=5;
    HeartbeatRequest => "Heartbeat", 3..=4;
    LeaveGroupRequest => "LeaveGroup", 3..=5;
    InitProducerIdRequest => "InitProducerId", 1..=4;
    AddPartitionsToTxnRequest => "AddPartitionsToTxn", 1..=3;
    AddOffsetsToTxnRequest => "AddOffsetsToTxn", 1..=3;
    TxnOffsetCommitRequest => "TxnOffsetCommit", 2..=4;
    EndTxnRequest => "EndTxn", 1..=4;
    SaslHandshakeRequest => "SaslHandshake", 1..=1;
    SaslAuthenticateRequest => "SaslAuthenticate", 0..=2;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_range_is_encodable_by_kafka_protocol() {
        for (name, ours, codec) in all_ranges() {
            assert!(!ours.is_empty(), "{name}");
            assert!(
                ours.min >= codec.min && ours.max <= codec.max,
                "{name}: {ours} vs {codec}"
            );
        }
    }

    #[test]
    fn api_names_come_from_the_table() {
        assert_eq!(api_name(9), "OffsetFetch");
        assert_eq!(api_name(18), "ApiVersions");
        assert_eq!(api_name(1000), "ApiKey(1000)");
    }
}
