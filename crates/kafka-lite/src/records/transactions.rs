//! Transactions in fetched data: the aborted transactions a Fetch response lists, and
//! the read_committed filter.

use super::decode::BatchMeta;
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
    let mut filter = CommittedFilter::new(aborted_transactions);
    batches
        .into_iter()
        .filter(|batch| {
            filter.keep(&BatchMeta {
                last_offset: batch.last_offset,
                producer_id: batch.producer_id,
                is_transactional: batch.is_transactional,
                is_control: batch.is_control,
                control_type: batch.control_type(),
            })
        })
        .collect()
}

/// [`read_committed`]'s filter, one batch at a time, in log order (also what
/// a reader visiting records without decoding them uses).
pub(crate) struct CommittedFilter {
    /// Aborted transactions not yet in effect, the first offset last.
    pending: Vec<AbortedTransaction>,
    /// Producers whose aborted transaction is in effect.
    aborting: Vec<i64>,
}

impl CommittedFilter {
    pub(crate) fn new(aborted_transactions: &[AbortedTransaction]) -> Self {
        let mut pending: Vec<AbortedTransaction> = aborted_transactions.to_vec();
        pending.sort_by_key(|aborted| std::cmp::Reverse(aborted.first_offset));
        CommittedFilter {
            pending,
            aborting: Vec::new(),
        }
    }

    /// Whether a read_committed consumer keeps the records of `batch` (the
    /// batch after the ones given before); never a control batch.
    pub(crate) fn keep(&mut self, batch: &BatchMeta) -> bool {
        // Transactions that started at or before this batch's end are now in effect.
        while self
            .pending
            .last()
            .is_some_and(|aborted| aborted.first_offset <= batch.last_offset)
        {
            if let Some(aborted) = self.pending.pop() {
                self.aborting.push(aborted.producer_id);
            }
        }
        if batch.is_control {
            if batch.control_type == Some(ControlRecordType::Abort) {
                self.aborting
                    .retain(|producer| *producer != batch.producer_id);
            }
            return false;
        }
        !(batch.is_transactional && self.aborting.contains(&batch.producer_id))
    }
}
