//! [`PartitionReader`]: read a partition up to where it ended when reading
//! began, then follow it.
//!
//! This is how a compacted "state" topic (offset syncs, checkpoints) is
//! loaded: read everything that was there at startup, know when that is done,
//! then keep up with what is appended later.

use super::common::IsolationLevel;
use super::fetch::{
    FetchOptions, FetchedBytes, FetchedPartition, RawFetch, fetch_bytes_on, fetch_on, fetch_raw_on,
};
use super::offsets::{OffsetSpec, list_offsets_on};
use crate::records::{ConsumerRecord, RecordRef};
use crate::{BrokerConnection, Error};

/// Where a [`PartitionReader`] starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StartOffset {
    /// At the log start offset: everything still stored.
    Earliest,
    /// At the end: only records appended later (reading to the end returns
    /// nothing).
    Latest,
    /// At this offset.
    Offset(i64),
}

/// Reads one partition from a start offset up to the end offset captured
/// when it was opened — the high watermark, or under read_committed the
/// last stable offset — and can then keep following the partition.
///
/// It only keeps a position: each call fetches from the partition leader
/// given to it (or found by the [`Client`](crate::Client)). Offsets may have
/// gaps (compaction, transaction markers, aborted records); the position
/// always moves past the last batch a fetch returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionReader {
    topic: String,
    partition: i32,
    options: FetchOptions,
    position: i64,
    end: i64,
}

impl PartitionReader {
    /// A reader at `position` that reads to `end` first; for callers that
    /// looked the offsets up themselves.
    pub fn new(
        topic: impl Into<String>,
        partition: i32,
        position: i64,
        end: i64,
        options: FetchOptions,
    ) -> Self {
        PartitionReader {
            topic: topic.into(),
            partition,
            options,
            position,
            end,
        }
    }

    /// Opens a reader: looks up the start (for [`StartOffset::Earliest`] and
    /// [`StartOffset::Latest`]) and the end offset on the partition leader
    /// behind `connection`.
    pub async fn open_on(
        connection: &BrokerConnection,
        topic: &str,
        partition: i32,
        start: StartOffset,
        options: FetchOptions,
    ) -> Result<Self, Error> {
        let mut queries = vec![(topic, partition, OffsetSpec::Latest)];
        if start == StartOffset::Earliest {
            queries.push((topic, partition, OffsetSpec::Earliest));
        }
        let answers = list_offsets_on(connection, &queries, options.isolation).await?;
        let mut end = None;
        let mut earliest = None;
        for answer in answers {
            let offset = answer.result?.offset;
            match answer.spec {
                OffsetSpec::Latest => end = offset,
                _ => earliest = offset,
            }
        }
        let missing = |what: &str| Error::MalformedResponse {
            broker: connection.address().to_string(),
            api: "ListOffsets",
            version: connection
                .version_for::<kafka_protocol::messages::ListOffsetsRequest>()
                .unwrap_or(-1),
            detail: format!("no {what} offset for topic-partition {topic}-{partition}"),
        };
        let end = end.ok_or_else(|| missing("latest"))?;
        let position = match start {
            StartOffset::Earliest => earliest.ok_or_else(|| missing("earliest"))?,
            StartOffset::Latest => end,
            StartOffset::Offset(offset) => offset,
        };
        Ok(Self::new(topic, partition, position, end, options))
    }

    /// The topic read.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The partition read.
    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// The offset the next fetch starts at.
    pub fn position(&self) -> i64 {
        self.position
    }

    /// The end offset captured when the reader was opened (lowered if the
    /// partition's end moved back, as after an unclean leader election).
    pub fn end(&self) -> i64 {
        self.end
    }

    /// The fetch options the reader uses.
    pub fn options(&self) -> &FetchOptions {
        &self.options
    }

    /// Whether the reader has reached [`end`](Self::end).
    pub fn is_caught_up(&self) -> bool {
        self.position >= self.end
    }

    /// Moves the position, e.g. to the log start after
    /// [`Error::is_offset_out_of_range`].
    pub fn seek(&mut self, offset: i64) {
        self.position = offset;
    }

    /// Reads the next records before [`end`](Self::end) from the partition
    /// leader behind `connection`: `Ok(None)` once the end is reached (at
    /// once for an empty partition), otherwise `Ok(Some(records))` — possibly
    /// empty when a fetch returned only control or compacted-away batches.
    pub async fn read_on(
        &mut self,
        connection: &BrokerConnection,
    ) -> Result<Option<Vec<ConsumerRecord>>, Error> {
        if self.is_caught_up() {
            return Ok(None);
        }
        let fetched = fetch_on(
            connection,
            &self.topic,
            self.partition,
            self.position,
            &self.options,
        )
        .await?;
        Ok(Some(self.advance_to_end(fetched)))
    }

    /// [`read_on`](Self::read_on), the records handed to `visit` one by one,
    /// borrowed from the response (no [`ConsumerRecord`] built; see
    /// [`crate::records::visit_batches`]): `Ok(None)` once the end is
    /// reached, otherwise `Ok(Some(n))` after visiting the `n` records
    /// `read_on` would have returned, in the same order. On error the
    /// position does not move and `visit` may have seen some records.
    pub async fn read_visit_on(
        &mut self,
        connection: &BrokerConnection,
        visit: impl FnMut(RecordRef<'_>),
    ) -> Result<Option<usize>, Error> {
        if self.is_caught_up() {
            return Ok(None);
        }
        let fetched = fetch_bytes_on(
            connection,
            &self.topic,
            self.partition,
            self.position,
            &self.options,
        )
        .await?;
        self.visit_to_end(&fetched, visit).map(Some)
    }

    /// [`read_on`](Self::read_on)'s fetch with the records left undecoded
    /// (see [`RawFetch`]): `Ok(None)` once the end is reached. Moves the
    /// position past the batches returned; their records may run past the
    /// end. For measuring the broker, not for reading data.
    pub async fn read_raw_on(
        &mut self,
        connection: &BrokerConnection,
    ) -> Result<Option<RawFetch>, Error> {
        if self.is_caught_up() {
            return Ok(None);
        }
        let raw = fetch_raw_on(
            connection,
            &self.topic,
            self.partition,
            self.position,
            &self.options,
        )
        .await?;
        self.position = self.position.max(raw.next_offset);
        Ok(Some(raw))
    }

    /// Fetches whatever follows the position from the partition leader
    /// behind `connection`, waiting up to the fetch wait for new records;
    /// may return nothing. Unlike [`read_on`](Self::read_on) it does not stop
    /// at [`end`](Self::end).
    pub async fn follow_on(
        &mut self,
        connection: &BrokerConnection,
    ) -> Result<Vec<ConsumerRecord>, Error> {
        let fetched = fetch_on(
            connection,
            &self.topic,
            self.partition,
            self.position,
            &self.options,
        )
        .await?;
        Ok(self.advance(fetched))
    }

    /// Takes a fetch result made at the position: moves past it and returns
    /// its records before the end.
    pub(crate) fn advance_to_end(&mut self, fetched: FetchedPartition) -> Vec<ConsumerRecord> {
        // The readable end may have moved back below the captured one (log
        // truncation); never wait for offsets that will not come.
        let bound = match self.options.isolation {
            IsolationLevel::ReadUncommitted => fetched.high_watermark,
            IsolationLevel::ReadCommitted => fetched.last_stable_offset,
        };
        if bound >= 0 && bound < self.end && fetched.next_offset >= bound {
            self.end = bound.max(self.position);
        }
        let end = self.end;
        let mut records = self.advance(fetched);
        // Records at or after the end belong to following; fetch them again then.
        if self.position > end {
            records.retain(|r| r.offset < end);
            self.position = end;
        }
        records
    }

    /// [`advance_to_end`](Self::advance_to_end) for a fetch whose records
    /// are visited rather than returned: the same end, the same records, the
    /// same position after it; nothing moves on error.
    pub(crate) fn visit_to_end(
        &mut self,
        fetched: &FetchedBytes,
        visit: impl FnMut(RecordRef<'_>),
    ) -> Result<usize, Error> {
        let end = self.end_after(fetched);
        // Records at or after the end belong to following; fetch them again then.
        let visited = fetched.visit(end, visit)?;
        self.end = end;
        self.position = self.position.max(visited.next_offset).min(end);
        Ok(visited.records)
    }

    /// Moves the reader as [`visit_to_end`](Self::visit_to_end) of `fetched`
    /// would, from its batch headers, without reading its records.
    pub(crate) fn skip_to_end(&mut self, fetched: &FetchedBytes) {
        let end = self.end_after(fetched);
        self.end = end;
        self.position = self.position.max(fetched.next_offset()).min(end);
    }

    /// The reader's end after `fetched`: lower than the captured one if the
    /// readable end moved back below it (log truncation), so the reader never
    /// waits for offsets that will not come.
    fn end_after(&self, fetched: &FetchedBytes) -> i64 {
        let bound = match self.options.isolation {
            IsolationLevel::ReadUncommitted => fetched.high_watermark,
            IsolationLevel::ReadCommitted => fetched.last_stable_offset,
        };
        if bound >= 0 && bound < self.end && fetched.next_offset() >= bound {
            bound.max(self.position)
        } else {
            self.end
        }
    }

    /// Takes a fetch result made at the position: moves past it and returns
    /// all its records.
    pub(crate) fn advance(&mut self, fetched: FetchedPartition) -> Vec<ConsumerRecord> {
        self.position = self.position.max(fetched.next_offset);
        fetched.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(offset: i64) -> ConsumerRecord {
        ConsumerRecord {
            offset,
            timestamp: 0,
            key: None,
            value: None,
            headers: Vec::new(),
        }
    }

    fn fetched(offsets: &[i64], next_offset: i64, high_watermark: i64) -> FetchedPartition {
        FetchedPartition {
            records: offsets.iter().copied().map(record).collect(),
            high_watermark,
            last_stable_offset: high_watermark,
            log_start_offset: 0,
            next_offset,
            transactional_batches: Vec::new(),
        }
    }

    fn reader(position: i64, end: i64) -> PartitionReader {
        PartitionReader::new("t", 0, position, end, FetchOptions::default())
    }

    #[test]
    fn an_empty_partition_is_caught_up_at_once() {
        assert!(reader(5, 5).is_caught_up());
    }

    #[test]
    fn records_past_the_captured_end_are_left_for_following() {
        let mut r = reader(0, 3);
        let got = r.advance_to_end(fetched(&[0, 1, 2, 3, 4], 5, 5));
        assert_eq!(got.iter().map(|r| r.offset).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(r.position(), 3);
        assert!(r.is_caught_up());
    }

    #[test]
    fn a_compaction_gap_moves_the_position_past_the_batch() {
        let mut r = reader(0, 10);
        let got = r.advance_to_end(fetched(&[0, 4], 8, 10));
        assert_eq!(got.len(), 2);
        assert_eq!(r.position(), 8);
        assert!(!r.is_caught_up());
    }

    #[test]
    fn a_lowered_high_watermark_lowers_the_end() {
        let mut r = reader(4, 10);
        let got = r.advance_to_end(fetched(&[], 4, 4));
        assert!(got.is_empty());
        assert_eq!(r.end(), 4);
        assert!(r.is_caught_up());
    }

    #[test]
    fn following_returns_everything_fetched() {
        let mut r = reader(3, 3);
        let got = r.advance(fetched(&[3, 4], 5, 5));
        assert_eq!(got.len(), 2);
        assert_eq!(r.position(), 5);
    }
}
