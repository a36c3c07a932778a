//! Transactions in fetched data: the aborted transactions a Fetch response lists, and
//! the read_committed filter.

use super::{ControlRecordType, DecodedBatch};

/// An aborted transaction as listed in a Fetch response partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AbortedTransaction {
    /// The producer that aborted.
    pub producer_id: i64,
    /// The first offset the aborted transaction wrote in this partition.
    pub first_offset: i64,
}

impl From<&kafka_protocol::messages::fetch_response::AbortedTransaction> for AbortedTransaction {
    fn from(aborted: &kafka_protocol::messages::fetch_response::AbortedTransaction) -> Self {
        AbortedTransaction {
            producer_id: aborted.producer_id.0,
            first_offset: aborted.first_offset,
        }
    }
}

/// Keeps the records a `read_committed` consumer returns: drops control batches and the
/// transactional batches of aborted transactions, given the partition's list of aborted
/// transactions from the same Fetch response.
///
/// This follows the Java consumer: an aborted transaction applies to the batches of its
/// producer from its `first_offset` up to that producer's abort marker. Compute the next
/// fetch offset from the batches *before* filtering (a fetch may end in batches that are
/// all dropped).
pub fn read_committed(
    batches: Vec<DecodedBatch>,
    aborted_transactions: &[AbortedTransaction],
) -> Vec<DecodedBatch> {
    let mut pending: Vec<AbortedTransaction> = aborted_transactions.to_vec();
    pending.sort_by_key(|aborted| std::cmp::Reverse(aborted.first_offset));
    let mut aborting: Vec<i64> = Vec::new();
    let mut kept = Vec::with_capacity(batches.len());
    for batch in batches {
        // Transactions that started at or before this batch's end are now in effect.
        while pending
            .last()
            .is_some_and(|aborted| aborted.first_offset <= batch.last_offset)
        {
            if let Some(aborted) = pending.pop() {
                aborting.push(aborted.producer_id);
            }
        }
        if batch.is_control {
            if batch.control_type() == Some(ControlRecordType::Abort) {
                aborting.retain(|producer| *producer != batch.producer_id);
            }
            continue;
        }
        if batch.is_transactional && aborting.contains(&batch.producer_id) {
            continue;
        }
        kept.push(batch);
    }
    kept
}
