//! Record batches (message format v2, "magic 2"): encoding for Produce requests,
//! decoding of Fetch responses, and the read_committed filter.
//!
//! Encoding is kafka-protocol's [`RecordBatchEncoder`], fed through its custom
//! compression hook so that all five codecs work without C code (see the `compression`
//! submodule); [`BatchBuilder`] writes the same bytes record by record into one buffer,
//! for producers that encode many records (no allocation per record). Decoding is this
//! module's own, for robustness: kafka-protocol 0.18's
//! `RecordBatchDecoder` trusts the data it reads. It reserves memory for the declared
//! record count and for each record's declared header count (fuzzing found a 3-byte
//! header count asking for 36 GiB), adds timestamp deltas without overflow checks, and
//! keeps headers in a map, losing repeated header keys, which Kafka allows. Here:
//!
//! * each complete batch's header is checked (magic, CRC-32C, codec id, offset range,
//!   record count against the bytes present) before anything is allocated for it;
//! * decompression is bounded by [`MAX_DECOMPRESSED_BATCH_BYTES`];
//! * records are parsed with the Java client's rules (fields fill the declared sizes
//!   exactly, no bytes left over), every length and count bounded by the bytes left,
//!   so corrupt or hostile input yields a [`RecordsError`], never a panic, an abort on
//!   allocation or a wrapped number;
//! * a Fetch response may end in a partial batch (see [`decode_batches`]);
//! * [`read_committed`] drops aborted transactional records and control batches the way
//!   the Java consumer does for `isolation.level=read_committed`.
//!
//! Limitations: only magic v2 is read (brokers from 0.11 write it; Kafka 4 accepts
//! nothing else). Encoding goes through kafka-protocol's header map, so it refuses a
//! record that repeats a header key rather than drop one silently; decoding keeps
//! repeated keys.

mod codec;
mod compression;
mod decode;
mod encode;
mod error;
mod layout;
mod transactions;
mod types;

#[cfg(doc)]
use kafka_protocol::records::RecordBatchEncoder;

pub use self::codec::{Codec, UnknownCodec};
pub(crate) use self::decode::visit_batches_where;
pub use self::decode::{
    BatchSpans, RecordHeaders, RecordRef, Visited, batch_spans, decode_batches,
    decode_batches_into, visit_batches,
};
pub use self::encode::{BatchBuilder, BatchProducer, encode_batch, encode_batch_as};
pub use self::error::RecordsError;
pub use self::layout::MAX_DECOMPRESSED_BATCH_BYTES;
pub(crate) use self::transactions::CommittedFilter;
pub use self::transactions::{AbortedTransaction, read_committed};
pub use self::types::{
    ConsumerRecord, ControlRecordType, DecodedBatch, Header, ProducerRecord, TimestampType,
};

#[cfg(test)]
use self::layout::*;
#[cfg(test)]
mod java_vectors;
#[cfg(test)]
mod tests;
