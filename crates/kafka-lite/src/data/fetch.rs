//! Fetch: the records of one partition from an offset, on its leader.

use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::common::{IsolationLevel, partition_context};
use crate::records::{self, AbortedTransaction, ConsumerRecord, RecordRef};
use crate::{BrokerConnection, Error};

const API: &str = "Fetch";

/// How to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchOptions {
    /// Most record bytes to return for the partition (and for the whole
    /// response). The broker still returns a first batch larger than this
    /// whole (KIP-74). Default 1 MiB, Kafka's `max.partition.fetch.bytes`.
    pub max_bytes: i32,
    /// How long the broker may wait for new records when there are none
    /// (`fetch.max.wait.ms`). Default 500 ms. Must stay well below the
    /// connection's `request_timeout`.
    pub fetch_wait: Duration,
    /// Which records are visible. Default read_uncommitted.
    pub isolation: IsolationLevel,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            max_bytes: 1024 * 1024,
            fetch_wait: Duration::from_millis(500),
            isolation: IsolationLevel::ReadUncommitted,
        }
    }
}

/// What one fetch of one partition returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPartition {
    /// Data records at or after the requested offset, in offset order:
    /// control records (transaction markers) are never included, nor under
    /// read_committed the records of aborted transactions. Offsets may have
    /// gaps (compaction, transaction markers, aborted records).
    pub records: Vec<ConsumerRecord>,
    /// The partition's high watermark: the offset after the last record
    /// replicated to all in-sync replicas.
    pub high_watermark: i64,
    /// The last stable offset: the first offset of a still-open
    /// transaction, or the high watermark when none is open (-1 if the
    /// broker did not say).
    pub last_stable_offset: i64,
    /// The first offset still in the log (-1 if the broker did not say;
    /// Fetch v5+ always does).
    pub log_start_offset: i64,
    /// Where the next fetch should start: after the last batch returned,
    /// even when its records were all filtered out or compacted away; the
    /// requested offset when nothing was returned.
    pub next_offset: i64,
    /// The offset ranges (first, last, inclusive) of the transactional and
    /// control batches returned, whatever the isolation level kept of them:
    /// where a reader's isolation level matters.
    pub transactional_batches: Vec<(i64, i64)>,
}

/// Fetches records of `topic`/`partition` from `offset` on the broker behind
/// `connection`, which must lead the partition.
///
/// The broker answers as soon as it has any record at `offset` or later, or
/// after `options.fetch_wait`. No fetch session is used (every request is a
/// full fetch) and topics are named, not identified by id (Fetch v4–12).
///
/// Errors: the partition's Kafka error as [`Error::Kafka`] —
/// OFFSET_OUT_OF_RANGE (see [`Error::is_offset_out_of_range`]) when `offset`
/// is before the log start or after the log end; NOT_LEADER_OR_FOLLOWER and
/// similar retriable codes when leadership moved. Undecodable record data is
/// [`Error::MalformedResponse`].
pub(super) async fn fetch_on(
    connection: &BrokerConnection,
    topic: &str,
    partition: i32,
    offset: i64,
    options: &FetchOptions,
) -> Result<FetchedPartition, Error> {
    let mut answers =
        fetch_partitions_on(connection, topic, &[(partition, offset)], options).await?;
    match answers.pop() {
        Some((_, answer)) => answer,
        None => Err(Error::MalformedResponse {
            broker: connection.address().to_string(),
            api: API,
            version: connection.version_for::<FetchRequest>().unwrap_or(-1),
            detail: format!("no answer for {}", partition_context(topic, partition)),
        }),
    }
}

/// Fetches several partitions of `topic`, each from its own offset, in one
/// request to the broker behind `connection`, which must lead them all
/// (what a consumer does per broker). Each partition, and the response as a
/// whole, gets up to `options.max_bytes` (the broker fills the partitions in
/// the order asked, so a caller that asks repeatedly should rotate them). The
/// broker answers as soon as any partition has records, or after
/// `options.fetch_wait`.
///
/// Returns one answer per asked partition, in the order asked, each with its
/// own result (as [`fetch_on`] describes); `Err` when the request as a whole
/// failed or the response is malformed. A partition the response left out is
/// a [`Error::MalformedResponse`] answer of its own.
pub(super) async fn fetch_partitions_on(
    connection: &BrokerConnection,
    topic: &str,
    partitions: &[(i32, i64)],
    options: &FetchOptions,
) -> Result<Vec<(i32, Result<FetchedPartition, Error>)>, Error> {
    let version = connection.version_for::<FetchRequest>()?;
    let max_bytes = options.max_bytes.max(1);
    let request = fetch_request(topic, partitions, options);
    let response = connection.send_with_version(request, version).await?;
    let context = |partition: i32, offset: i64| {
        format!("{} at offset {offset}", partition_context(topic, partition))
    };
    if let Some(&(partition, offset)) = partitions.first() {
        Error::check_code(API, response.error_code, context(partition, offset))?;
    }
    let malformed = |detail: String| Error::MalformedResponse {
        broker: connection.address().to_string(),
        api: API,
        version,
        detail,
    };
    let mut by_partition: std::collections::BTreeMap<i32, PartitionData> = response
        .responses
        .into_iter()
        .filter(|t| t.topic.0.as_str() == topic)
        .flat_map(|t| t.partitions)
        .map(|p| (p.partition_index, p))
        .collect();
    Ok(partitions
        .iter()
        .map(|&(partition, offset)| {
            let answer = match by_partition.remove(&partition) {
                None => Err(malformed(format!(
                    "no answer for {}",
                    partition_context(topic, partition)
                ))),
                Some(data) => Error::check_code(API, data.error_code, context(partition, offset))
                    .and_then(|()| {
                        read_partition(data, offset, options.isolation, max_bytes).map_err(
                            |detail| malformed(format!("{}: {detail}", context(partition, offset))),
                        )
                    }),
            };
            (partition, answer)
        })
        .collect())
}

/// The Fetch request for `partitions` of `topic` (each from its offset), as
/// [`fetch_partitions_on`] describes it.
fn fetch_request(topic: &str, partitions: &[(i32, i64)], options: &FetchOptions) -> FetchRequest {
    let wait_ms = i32::try_from(options.fetch_wait.as_millis()).unwrap_or(i32::MAX);
    let max_bytes = options.max_bytes.max(1);
    let fetch_partitions = partitions
        .iter()
        .map(|&(partition, offset)| {
            FetchPartition::default()
                .with_partition(partition)
                .with_current_leader_epoch(-1)
                .with_fetch_offset(offset)
                .with_last_fetched_epoch(-1)
                .with_log_start_offset(-1)
                .with_partition_max_bytes(max_bytes)
        })
        .collect();
    FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(max_bytes)
        .with_isolation_level(options.isolation.to_protocol())
        // Session id 0 with epoch -1: a full fetch that opens no session.
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(fetch_partitions),
        ])
}

/// What one Fetch of one partition returned, its records left undecoded
/// (read from the batch headers only; see [`crate::records::batch_spans`]).
/// A reference for how fast the broker serves a partition: never for
/// reading data, nothing of it is checked beyond the batch lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawFetch {
    /// Bytes of whole batches returned.
    pub bytes: usize,
    /// Records the batch headers count (compaction may have removed some
    /// offsets of a batch; its header still counts the records left).
    pub records: u64,
    /// Where the next fetch should start.
    pub next_offset: i64,
    /// The partition's high watermark.
    pub high_watermark: i64,
}

/// One partition's answer to a Fetch of that partition alone, its error
/// codes checked (the response's and the partition's).
struct OneFetched {
    data: PartitionData,
    version: i16,
    /// `topic-partition at offset N`, for errors about the answer.
    context: String,
}

/// Sends the Fetch of `partition` from `offset` and takes its answer out of
/// the response: what [`fetch_raw_on`] and [`fetch_bytes_on`] share.
async fn fetch_one_on(
    connection: &BrokerConnection,
    topic: &str,
    partition: i32,
    offset: i64,
    options: &FetchOptions,
) -> Result<OneFetched, Error> {
    let version = connection.version_for::<FetchRequest>()?;
    let request = fetch_request(topic, &[(partition, offset)], options);
    let response = connection.send_with_version(request, version).await?;
    let context = format!("{} at offset {offset}", partition_context(topic, partition));
    Error::check_code(API, response.error_code, context.clone())?;
    let data = response
        .responses
        .into_iter()
        .filter(|t| t.topic.0.as_str() == topic)
        .flat_map(|t| t.partitions)
        .find(|p| p.partition_index == partition)
        .ok_or_else(|| Error::MalformedResponse {
            broker: connection.address().to_string(),
            api: API,
            version,
            detail: format!("no answer for {}", partition_context(topic, partition)),
        })?;
    Error::check_code(API, data.error_code, context.clone())?;
    Ok(OneFetched {
        data,
        version,
        context,
    })
}

/// [`fetch_on`] without decoding the records: see [`RawFetch`].
pub(super) async fn fetch_raw_on(
    connection: &BrokerConnection,
    topic: &str,
    partition: i32,
    offset: i64,
    options: &FetchOptions,
) -> Result<RawFetch, Error> {
    let one = fetch_one_on(connection, topic, partition, offset, options).await?;
    let (data, context) = (one.data, one.context);
    let malformed = |detail: String| Error::MalformedResponse {
        broker: connection.address().to_string(),
        api: API,
        version: one.version,
        detail,
    };
    let bytes = data.records.unwrap_or_default();
    let spans = records::batch_spans(&bytes).map_err(|e| malformed(format!("{context}: {e}")))?;
    if spans.next_offset.is_none() && !bytes.is_empty() {
        return Err(malformed(format!(
            "{context}: the first record batch is cut short ({} bytes returned)",
            bytes.len()
        )));
    }
    Ok(RawFetch {
        bytes: spans.bytes,
        records: spans.records,
        next_offset: spans.next_offset.map_or(offset, |n| n.max(offset)),
        high_watermark: data.high_watermark,
    })
}

/// One partition of a Fetch response with its records not yet read: what
/// [`PartitionReader::read_visit`](crate::PartitionReader::read_visit) visits
/// without building a [`ConsumerRecord`] per record.
#[derive(Debug, Clone)]
pub(crate) struct FetchedBytes {
    /// The partition's `records` field as the broker sent it.
    records: bytes::Bytes,
    /// The offset fetched at.
    offset: i64,
    isolation: IsolationLevel,
    max_bytes: i32,
    aborted: Vec<AbortedTransaction>,
    pub(crate) high_watermark: i64,
    pub(crate) last_stable_offset: i64,
    /// For errors, as [`fetch_on`] names them.
    broker: String,
    version: i16,
    context: String,
}

/// What [`FetchedBytes::visit`] went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VisitedFetch {
    /// Records visited.
    pub(crate) records: usize,
    /// Where the next fetch starts (as [`FetchedPartition::next_offset`]).
    pub(crate) next_offset: i64,
}

/// [`fetch_on`] with the records left in the response's bytes: the same
/// request, the same errors for the request and the partition; the records
/// are read (and checked) by [`FetchedBytes::visit`].
pub(super) async fn fetch_bytes_on(
    connection: &BrokerConnection,
    topic: &str,
    partition: i32,
    offset: i64,
    options: &FetchOptions,
) -> Result<FetchedBytes, Error> {
    let one = fetch_one_on(connection, topic, partition, offset, options).await?;
    let (data, version, context) = (one.data, one.version, one.context);
    let broker = connection.address().to_string();
    Ok(FetchedBytes::new(
        data, offset, options, broker, version, context,
    ))
}

impl FetchedBytes {
    /// One partition of a Fetch response made at `offset` with `options`,
    /// from `broker` (its Fetch `version`); `context` names the partition
    /// and offset in errors.
    fn new(
        data: PartitionData,
        offset: i64,
        options: &FetchOptions,
        broker: String,
        version: i16,
        context: String,
    ) -> Self {
        let aborted = match options.isolation {
            IsolationLevel::ReadUncommitted => Vec::new(),
            IsolationLevel::ReadCommitted => data
                .aborted_transactions
                .unwrap_or_default()
                .iter()
                .map(AbortedTransaction::from)
                .collect(),
        };
        FetchedBytes {
            records: data.records.unwrap_or_default(),
            offset,
            isolation: options.isolation,
            max_bytes: options.max_bytes.max(1),
            aborted,
            high_watermark: data.high_watermark,
            last_stable_offset: data.last_stable_offset,
            broker,
            version,
            context,
        }
    }

    /// Where the next fetch starts if the records are read without error
    /// (from the batch headers alone).
    pub(crate) fn next_offset(&self) -> i64 {
        records::batch_spans(&self.records)
            .ok()
            .and_then(|s| s.next_offset)
            .map_or(self.offset, |n| n.max(self.offset))
    }

    /// Visits the records [`fetch_on`] would return whose offsets are below
    /// `until`, in order, borrowed from the response (see
    /// [`records::visit_batches`]): control records never, under
    /// read_committed not those of aborted transactions, nor records before
    /// the offset fetched at. Undecodable record data is the
    /// [`Error::MalformedResponse`] `fetch_on` returns for it; `visit` may
    /// then have seen some records.
    pub(crate) fn visit(
        &self,
        until: i64,
        mut visit: impl FnMut(RecordRef<'_>),
    ) -> Result<VisitedFetch, Error> {
        let malformed = |detail: String| Error::MalformedResponse {
            broker: self.broker.clone(),
            api: API,
            version: self.version,
            detail: format!("{}: {detail}", self.context),
        };
        let (from, mut count) = (self.offset, 0usize);
        let mut each = |r: RecordRef<'_>| {
            if r.offset >= from && r.offset < until {
                count += 1;
                visit(r);
            }
        };
        let visited = match self.isolation {
            IsolationLevel::ReadUncommitted => records::visit_batches(&self.records, &mut each),
            IsolationLevel::ReadCommitted => {
                let mut filter = records::CommittedFilter::new(&self.aborted);
                records::visit_batches_where(&self.records, |b| filter.keep(b), &mut each)
            }
        }
        .map_err(|e| malformed(e.to_string()))?;
        if visited.batches == 0 && !self.records.is_empty() {
            return Err(malformed(format!(
                "the first record batch is cut short ({} bytes returned, limit {})",
                self.records.len(),
                self.max_bytes
            )));
        }
        Ok(VisitedFetch {
            records: count,
            next_offset: visited.next_offset.map_or(from, |n| n.max(from)),
        })
    }
}

/// Turns one partition of a Fetch response, fetched at `offset`, into what
/// [`fetch_on`] returns; `Err` describes undecodable record data.
fn read_partition(
    data: PartitionData,
    offset: i64,
    isolation: IsolationLevel,
    max_bytes: i32,
) -> Result<FetchedPartition, String> {
    let mut bytes = data.records.unwrap_or_default();
    // Under read_uncommitted every data batch's records are kept: they are
    // decoded straight into one vector, sized from the batch headers.
    let mut flat = Vec::new();
    let batches = match isolation {
        IsolationLevel::ReadUncommitted => {
            let counted = records::batch_spans(&bytes).map_or(0, |s| s.records);
            // Bounded by the bytes present: a record takes at least 7 bytes.
            let counted = usize::try_from(counted).unwrap_or(0).min(bytes.len() / 7);
            flat.reserve(counted);
            records::decode_batches_into(&mut bytes, &mut flat)
        }
        IsolationLevel::ReadCommitted => records::decode_batches(&mut bytes),
    }
    .map_err(|e| e.to_string())?;
    if batches.is_empty() && !bytes.is_empty() {
        // Brokers since 0.10.1 return at least one whole batch however small
        // the limit; only a cut-off first batch ends up here.
        return Err(format!(
            "the first record batch is cut short ({} bytes returned, limit {max_bytes})",
            bytes.len()
        ));
    }
    // The next fetch starts after the last batch, whatever filtering keeps.
    let next_offset = batches
        .last()
        .map_or(offset, |b| b.next_offset())
        .max(offset);
    let transactional_batches = batches
        .iter()
        .filter(|b| b.is_transactional || b.is_control)
        .map(|b| (b.base_offset, b.last_offset))
        .collect();
    let batches = match isolation {
        IsolationLevel::ReadUncommitted => batches,
        IsolationLevel::ReadCommitted => {
            let aborted: Vec<AbortedTransaction> = data
                .aborted_transactions
                .unwrap_or_default()
                .iter()
                .map(AbortedTransaction::from)
                .collect();
            records::read_committed(batches, &aborted)
        }
    };
    // One vector of the right size, filled batch by batch (no regrowth of a
    // vector of tens of thousands of records).
    let data_batches = || batches.iter().filter(|batch| !batch.is_control);
    let mut records = flat;
    records.reserve(data_batches().map(|b| b.records.len()).sum());
    for mut batch in batches.into_iter().filter(|batch| !batch.is_control) {
        if batch.base_offset >= offset {
            records.append(&mut batch.records);
        } else {
            // A batch that starts before `offset` is returned whole.
            records.extend(batch.records.into_iter().filter(|r| r.offset >= offset));
        }
    }
    // Read straight into `records`, a batch that started before `offset`
    // brought its earlier records along. A broker puts only the first batch
    // there, but any batch may claim lower offsets: every record is checked.
    if records.iter().any(|r| r.offset < offset) {
        records.retain(|r| r.offset >= offset);
    }
    Ok(FetchedPartition {
        records,
        high_watermark: data.high_watermark,
        last_stable_offset: data.last_stable_offset,
        log_start_offset: data.log_start_offset,
        next_offset,
        transactional_batches,
    })
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};

    use super::*;
    use crate::records::{Codec, ProducerRecord, encode_batch};

    /// A batch of `n` records (values `v<offset>`) at `base_offset`.
    fn batch(base_offset: i64, n: i64, codec: Codec) -> Bytes {
        let records: Vec<ProducerRecord> = (base_offset..base_offset + n)
            .map(|o| ProducerRecord {
                timestamp: 1_700_000_000_000,
                key: None,
                value: Some(Bytes::from(format!("v{o}"))),
                headers: Vec::new(),
            })
            .collect();
        let encoded = encode_batch(&records, codec).expect("encode");
        // The base offset is outside the CRC; the broker rewrites it the same way.
        let mut bytes = BytesMut::from(&encoded[..]);
        bytes[..8].copy_from_slice(&base_offset.to_be_bytes());
        bytes.freeze()
    }

    fn partition(parts: &[Bytes]) -> PartitionData {
        let mut all = BytesMut::new();
        for part in parts {
            all.extend_from_slice(part);
        }
        PartitionData::default()
            .with_high_watermark(100)
            .with_last_stable_offset(100)
            .with_log_start_offset(0)
            .with_records(Some(all.freeze()))
    }

    fn offsets(fetched: &FetchedPartition) -> Vec<i64> {
        fetched.records.iter().map(|r| r.offset).collect()
    }

    #[test]
    fn batches_of_different_codecs_read_in_order() {
        let data = partition(&[batch(0, 2, Codec::Zstd), batch(2, 3, Codec::Snappy)]);
        let fetched =
            read_partition(data, 0, IsolationLevel::ReadUncommitted, 1 << 20).expect("read");
        assert_eq!(offsets(&fetched), [0, 1, 2, 3, 4]);
        assert_eq!(fetched.next_offset, 5);
    }

    #[test]
    fn a_cut_off_last_batch_is_left_for_the_next_fetch() {
        let third = batch(5, 3, Codec::None);
        let data = partition(&[
            batch(0, 2, Codec::None),
            batch(2, 3, Codec::Gzip),
            third.slice(..third.len() - 7),
        ]);
        let fetched =
            read_partition(data, 0, IsolationLevel::ReadUncommitted, 1 << 20).expect("read");
        assert_eq!(offsets(&fetched), [0, 1, 2, 3, 4]);
        assert_eq!(fetched.next_offset, 5);
    }

    #[test]
    fn a_cut_off_first_batch_is_an_error_naming_the_limit() {
        let only = batch(0, 3, Codec::Lz4);
        let data = partition(&[only.slice(..only.len() - 1)]);
        let err = read_partition(data, 0, IsolationLevel::ReadUncommitted, 100)
            .expect_err("nothing whole");
        assert!(
            err.contains("cut short") && err.contains("limit 100"),
            "{err}"
        );
    }

    #[test]
    fn records_before_the_fetch_offset_are_dropped() {
        let data = partition(&[batch(10, 5, Codec::None)]);
        let fetched =
            read_partition(data, 12, IsolationLevel::ReadUncommitted, 1 << 20).expect("read");
        assert_eq!(offsets(&fetched), [12, 13, 14]);
        assert_eq!(fetched.next_offset, 15);
    }

    #[test]
    fn records_before_the_fetch_offset_are_dropped_from_every_batch() {
        // A later batch claiming lower offsets (a broken or hostile broker):
        // its records below the fetch offset are dropped too, under both
        // isolation levels, as the visiting reader drops them.
        for isolation in [
            IsolationLevel::ReadUncommitted,
            IsolationLevel::ReadCommitted,
        ] {
            let data = partition(&[batch(10, 2, Codec::None), batch(3, 2, Codec::None)]);
            let fetched = read_partition(data, 10, isolation, 1 << 20).expect("read");
            assert_eq!(offsets(&fetched), [10, 11], "{isolation:?}");
        }
    }

    #[test]
    fn no_records_leaves_the_next_offset_at_the_fetch_offset() {
        let data = partition(&[]);
        let fetched =
            read_partition(data, 7, IsolationLevel::ReadCommitted, 1 << 20).expect("read");
        assert!(fetched.records.is_empty());
        assert_eq!(fetched.next_offset, 7);
    }

    /// A batch whose records compaction removed entirely (kept for its
    /// producer state): offsets `base..=base+delta`, no records.
    fn empty_batch(base_offset: i64, last_offset_delta: i32) -> Bytes {
        empty_batch_with(base_offset, last_offset_delta, 0)
    }

    /// [`empty_batch`] with batch `attributes` (0x10 transactional, 0x20 control).
    fn empty_batch_with(base_offset: i64, last_offset_delta: i32, attributes: i16) -> Bytes {
        let mut b = BytesMut::new();
        b.extend_from_slice(&base_offset.to_be_bytes());
        b.extend_from_slice(&49i32.to_be_bytes()); // batch length after this field
        b.extend_from_slice(&0i32.to_be_bytes()); // partition leader epoch
        b.extend_from_slice(&[2]); // magic
        b.extend_from_slice(&[0; 4]); // CRC, filled below
        b.extend_from_slice(&attributes.to_be_bytes()); // attributes
        b.extend_from_slice(&last_offset_delta.to_be_bytes());
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes()); // base timestamp
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes()); // max timestamp
        b.extend_from_slice(&7i64.to_be_bytes()); // producer id
        b.extend_from_slice(&0i16.to_be_bytes()); // producer epoch
        b.extend_from_slice(&0i32.to_be_bytes()); // base sequence
        b.extend_from_slice(&0i32.to_be_bytes()); // record count
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b.freeze()
    }

    #[test]
    fn a_batch_compacted_to_nothing_still_moves_the_next_offset() {
        let data = partition(&[batch(0, 2, Codec::None), empty_batch(2, 4)]);
        let fetched =
            read_partition(data, 0, IsolationLevel::ReadUncommitted, 1 << 20).expect("read");
        assert_eq!(offsets(&fetched), [0, 1]);
        assert_eq!(fetched.next_offset, 7);
    }

    #[test]
    fn transactional_and_control_batches_are_reported_with_their_ranges() {
        let data = partition(&[
            batch(0, 2, Codec::None),
            empty_batch_with(2, 1, 0x10),
            empty_batch_with(4, 0, 0x30),
            batch(5, 1, Codec::None),
        ]);
        for isolation in [
            IsolationLevel::ReadUncommitted,
            IsolationLevel::ReadCommitted,
        ] {
            let fetched = read_partition(data.clone(), 0, isolation, 1 << 20).expect("read");
            assert_eq!(offsets(&fetched), [0, 1, 5]);
            assert_eq!(fetched.transactional_batches, [(2, 3), (4, 4)]);
        }
    }

    /// What [`FetchedBytes::visit`] sees of `data` fetched at `offset`, up to
    /// `until`: the records (as owned values) and the next offset, or the
    /// error's detail.
    fn visited(
        data: &PartitionData,
        offset: i64,
        until: i64,
        isolation: IsolationLevel,
        max_bytes: i32,
    ) -> Result<(Vec<ConsumerRecord>, i64), String> {
        let options = FetchOptions {
            max_bytes,
            isolation,
            ..FetchOptions::default()
        };
        let fetched = FetchedBytes::new(
            data.clone(),
            offset,
            &options,
            "b:9092".into(),
            12,
            "ctx".into(),
        );
        let mut seen = Vec::new();
        let visited = fetched
            .visit(until, |r| {
                seen.push(ConsumerRecord {
                    offset: r.offset,
                    timestamp: r.timestamp,
                    key: r.key.map(Bytes::copy_from_slice),
                    value: r.value.map(Bytes::copy_from_slice),
                    headers: r
                        .headers
                        .iter()
                        .map(|(k, v)| crate::records::Header {
                            key: k.to_owned(),
                            value: v.map(Bytes::copy_from_slice),
                        })
                        .collect(),
                })
            })
            .map_err(|e| match e {
                Error::MalformedResponse { detail, .. } => detail,
                other => panic!("not a malformed response: {other}"),
            })?;
        assert_eq!(visited.records, seen.len());
        assert_eq!(fetched.next_offset(), visited.next_offset);
        Ok((seen, visited.next_offset))
    }

    /// A transactional batch of `n` records of producer `pid` at `base_offset`.
    fn txn_batch(base_offset: i64, n: i64, pid: i64) -> Bytes {
        with_header(batch(base_offset, n, Codec::None), 0x10, pid)
    }

    /// A control batch (abort marker if `abort`, else commit) of producer `pid`.
    fn marker(base_offset: i64, pid: i64, abort: bool) -> Bytes {
        let kind: u8 = if abort { 0 } else { 1 };
        let record = ProducerRecord {
            timestamp: 1_700_000_000_000,
            key: Some(Bytes::from(vec![0, 0, 0, kind])),
            value: Some(Bytes::from_static(&[0, 0, 0, 0, 0, 0])),
            headers: Vec::new(),
        };
        let encoded = encode_batch(&[record], Codec::None).expect("encode");
        let mut bytes = BytesMut::from(&encoded[..]);
        bytes[..8].copy_from_slice(&base_offset.to_be_bytes());
        with_header(bytes.freeze(), 0x30, pid)
    }

    /// `batch` with its attributes and producer id set, CRC fixed up.
    fn with_header(batch: Bytes, attributes: i16, pid: i64) -> Bytes {
        let mut b = BytesMut::from(&batch[..]);
        b[21..23].copy_from_slice(&attributes.to_be_bytes());
        b[43..51].copy_from_slice(&pid.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b.freeze()
    }

    #[test]
    fn a_reader_moved_from_the_batch_headers_ends_where_visiting_leaves_it() {
        use crate::data::reader::PartitionReader;
        let third = batch(12, 3, Codec::None);
        let whole = partition(&[
            batch(0, 2, Codec::Zstd),
            txn_batch(2, 2, 7),
            marker(4, 7, true),
            batch(5, 5, Codec::None),
            empty_batch(10, 1),
            third.slice(..third.len() - 3),
        ]);
        // The readable end below the reader's end (a truncated log), and a
        // high watermark inside the fetched batches.
        let truncated = whole
            .clone()
            .with_high_watermark(7)
            .with_last_stable_offset(7);
        for isolation in [
            IsolationLevel::ReadUncommitted,
            IsolationLevel::ReadCommitted,
        ] {
            let options = FetchOptions {
                isolation,
                ..FetchOptions::default()
            };
            for data in [&whole, &truncated] {
                for (position, end) in [(0, 100), (0, 6), (3, 100), (6, 8), (11, 100)] {
                    let fetched = FetchedBytes::new(
                        data.clone(),
                        position,
                        &options,
                        "b:9092".into(),
                        12,
                        "ctx".into(),
                    );
                    let reader = PartitionReader::new("t", 0, position, end, options);
                    let mut skipped = reader.clone();
                    skipped.skip_to_end(&fetched);
                    let mut visited = reader.clone();
                    visited.visit_to_end(&fetched, |_| {}).expect("visit");
                    let at = |r: &PartitionReader| (r.position(), r.end());
                    assert_eq!(at(&skipped), at(&visited), "{isolation:?} {position} {end}");
                }
            }
        }
    }

    #[test]
    fn visiting_sees_what_read_partition_returns_for_both_isolation_levels() {
        let third = batch(12, 3, Codec::None);
        let mut aborted = partition(&[
            batch(0, 2, Codec::Zstd),
            txn_batch(2, 2, 7),
            txn_batch(4, 2, 8),
            marker(6, 7, true),
            marker(7, 8, false),
            batch(8, 2, Codec::Snappy),
            empty_batch(10, 1),
            third.slice(..third.len() - 3),
        ]);
        aborted.aborted_transactions = Some(vec![
            kafka_protocol::messages::fetch_response::AbortedTransaction::default()
                .with_producer_id(7.into())
                .with_first_offset(2),
        ]);
        for isolation in [
            IsolationLevel::ReadUncommitted,
            IsolationLevel::ReadCommitted,
        ] {
            for offset in [0, 1, 3, 9, 12] {
                let read =
                    read_partition(aborted.clone(), offset, isolation, 1 << 20).expect("read");
                let (seen, next) =
                    visited(&aborted, offset, i64::MAX, isolation, 1 << 20).expect("visit");
                assert_eq!(seen, read.records, "{isolation:?} at {offset}");
                assert_eq!(next, read.next_offset, "{isolation:?} at {offset}");
            }
            // Offsets at or past `until` are not visited.
            let (seen, _) = visited(&aborted, 0, 5, isolation, 1 << 20).expect("visit");
            assert!(seen.iter().all(|r| r.offset < 5), "{isolation:?}");
        }
        let read = read_partition(aborted.clone(), 0, IsolationLevel::ReadCommitted, 1 << 20)
            .expect("read");
        assert_eq!(
            offsets(&read),
            [0, 1, 4, 5, 8, 9],
            "the abort of producer 7 applies"
        );
    }

    #[test]
    fn visiting_fails_where_read_partition_does_with_the_same_detail() {
        let good = batch(0, 2, Codec::None);
        let mut bad = BytesMut::from(&good[..]);
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        let only = batch(0, 3, Codec::Lz4);
        for (data, max_bytes) in [
            (
                partition(&[batch(0, 1, Codec::None), bad.freeze()]),
                1 << 20,
            ),
            (partition(&[only.slice(..only.len() - 1)]), 100),
        ] {
            for isolation in [
                IsolationLevel::ReadUncommitted,
                IsolationLevel::ReadCommitted,
            ] {
                let err = read_partition(data.clone(), 0, isolation, max_bytes).expect_err("bad");
                let detail = visited(&data, 0, i64::MAX, isolation, max_bytes).expect_err("bad");
                assert_eq!(detail, format!("ctx: {err}"));
            }
        }
    }

    #[test]
    fn a_corrupt_batch_is_an_error() {
        let good = batch(0, 2, Codec::None);
        let mut bad = BytesMut::from(&good[..]);
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        let err = read_partition(
            partition(&[bad.freeze()]),
            0,
            IsolationLevel::ReadUncommitted,
            1 << 20,
        )
        .expect_err("CRC mismatch");
        assert!(err.contains("CRC"), "{err}");
    }
}
