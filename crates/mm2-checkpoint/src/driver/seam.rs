//! The seam between kafka-lite and the core: the one place where the
//! client's plain types become the core's and back. The core depends on no
//! Kafka client (docs/architecture.md), so it has its own partition and
//! record types; they carry the same fields, and converting moves them.

use kafka_lite::records::{ConsumerRecord, Header};

use crate::core::TopicPartition;
use crate::core::content_search::{Record, RecordHeader};

/// The core's partition as kafka-lite's.
pub(crate) fn to_client(tp: &TopicPartition) -> kafka_lite::TopicPartition {
    kafka_lite::TopicPartition::new(tp.topic.clone(), tp.partition)
}

/// A record kafka-lite decoded, as content search compares it.
pub(crate) fn record(r: ConsumerRecord) -> Record {
    Record {
        offset: r.offset,
        timestamp: r.timestamp,
        key: r.key,
        value: r.value,
        headers: r.headers.into_iter().map(header).collect(),
    }
}

fn header(h: Header) -> RecordHeader {
    RecordHeader {
        key: h.key,
        value: h.value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_and_records_cross_the_seam_unchanged() {
        let core = TopicPartition::new("orders", 7);
        let tp = to_client(&core);
        assert_eq!(tp, kafka_lite::TopicPartition::new("orders", 7));
        assert_eq!(core.to_string(), tp.to_string());
        let r = ConsumerRecord {
            offset: 5,
            timestamp: 1_700_000_000_000,
            key: Some("k".into()),
            value: None,
            headers: vec![
                Header::new("h", "v"),
                Header {
                    key: "n".into(),
                    value: None,
                },
            ],
        };
        let c = record(r);
        assert_eq!(
            c,
            Record {
                offset: 5,
                timestamp: 1_700_000_000_000,
                key: Some("k".into()),
                value: None,
                headers: vec![
                    RecordHeader::new("h", "v"),
                    RecordHeader {
                        key: "n".into(),
                        value: None
                    }
                ],
            }
        );
    }
}
