//! `mm2_checkpoint_requests_total{cluster,api}`: the Kafka requests the flows'
//! clients sent, read from kafka-lite's per-API counts at each scrape rather
//! than counted twice.

use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;

/// Reads one client's counts: (API name, requests sent).
pub type RequestSource = Box<dyn Fn() -> Vec<(&'static str, u64)> + Send + Sync>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    cluster: String,
    api: String,
}

/// The registered clients, by cluster alias. A cluster may have several
/// clients (a flow's own, the commit follower's, other flows'): their counts
/// are added up.
#[derive(Clone, Default)]
pub(super) struct RequestCounters {
    sources: Arc<Mutex<Vec<(String, RequestSource)>>>,
}

impl std::fmt::Debug for RequestCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestCounters").finish_non_exhaustive()
    }
}

impl RequestCounters {
    pub(super) fn add(&self, cluster: &str, source: RequestSource) {
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((cluster.to_owned(), source));
    }

    /// (cluster, API) → requests, summed over the clients, sorted.
    fn totals(&self) -> std::collections::BTreeMap<(String, &'static str), u64> {
        let mut totals = std::collections::BTreeMap::new();
        for (cluster, source) in self
            .sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            for (api, n) in source() {
                *totals.entry((cluster.clone(), api)).or_default() += n;
            }
        }
        totals
    }
}

impl Collector for RequestCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let totals = self.totals();
        if totals.is_empty() {
            return Ok(());
        }
        let mut family = encoder.encode_descriptor(
            "requests",
            "Kafka requests sent, by cluster and API (connection setup not counted)",
            None,
            MetricType::Counter,
        )?;
        for ((cluster, api), n) in totals {
            let labels = RequestLabels {
                cluster,
                api: api.to_owned(),
            };
            ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}
