//! [`RequestCounts`]: how many requests a pool's connections sent, in total
//! and per API, for batching checks and for an application's metrics.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Requests sent, in total and by API name (`"OffsetFetch"`, ...). Connection
/// setup (ApiVersions, SASL) is not counted. Shared by a pool and the
/// connections it opens; cheap to read at any time.
#[derive(Debug, Default)]
pub struct RequestCounts {
    total: AtomicU64,
    by_api: Mutex<BTreeMap<&'static str, u64>>,
}

impl RequestCounts {
    /// Counts one request of `api`.
    pub(crate) fn count(&self, api: &'static str) {
        self.total.fetch_add(1, Ordering::Relaxed);
        let mut by_api = self.by_api.lock().unwrap_or_else(|e| e.into_inner());
        *by_api.entry(api).or_default() += 1;
    }

    /// Requests sent so far.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Requests sent so far per API, by name, the APIs never sent left out.
    pub fn by_api(&self) -> Vec<(&'static str, u64)> {
        self.by_api
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(api, n)| (*api, *n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::RequestCounts;

    #[test]
    fn counts_add_up_per_api_and_in_total() {
        let c = RequestCounts::default();
        for api in ["OffsetFetch", "Produce", "OffsetFetch"] {
            c.count(api);
        }
        assert_eq!(c.total(), 3);
        assert_eq!(c.by_api(), [("OffsetFetch", 2), ("Produce", 1)]);
    }
}
