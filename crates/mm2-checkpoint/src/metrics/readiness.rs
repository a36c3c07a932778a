//! The readiness flag behind `/readyz` and `mm2_checkpoint_ready`.
//!
//! Readiness is a set of unmet conditions, each named by the component that owns
//! it (`"startup"`, `"A->B initial read"`, `"cluster primary"`) with a reason an
//! operator can read. The process is ready when the set is empty. Components set
//! and clear only their own condition, so no component can declare the whole
//! process ready while another still waits.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::metrics::gauge::Gauge;

/// The condition every new [`Readiness`] starts with; the driver clears it with
/// `set_ready(STARTUP)` once it has registered its own conditions.
pub const STARTUP: &str = "startup";

/// Shared readiness state. Cheap to clone; every clone sees the same state.
#[derive(Clone, Debug)]
pub struct Readiness {
    unmet: Arc<Mutex<BTreeMap<String, String>>>,
    gauge: Gauge,
}

impl Default for Readiness {
    fn default() -> Self {
        Self::with_gauge(Gauge::default())
    }
}

impl Readiness {
    /// Not ready, with the [`STARTUP`] condition unmet; mirrors its state into
    /// `gauge` (1 ready, 0 not).
    pub(crate) fn with_gauge(gauge: Gauge) -> Self {
        let unmet = BTreeMap::from([(
            STARTUP.to_string(),
            "the run loop has not finished starting".to_string(),
        )]);
        gauge.set(0);
        Self {
            unmet: Arc::new(Mutex::new(unmet)),
            gauge,
        }
    }

    /// Marks `condition` unmet because of `reason` (replacing an earlier reason).
    pub fn set_not_ready(&self, condition: impl Into<String>, reason: impl Into<String>) {
        let mut unmet = self.lock();
        unmet.insert(condition.into(), reason.into());
        self.gauge.set(0);
    }

    /// Marks `condition` met.
    pub fn set_ready(&self, condition: &str) {
        let mut unmet = self.lock();
        unmet.remove(condition);
        self.gauge.set(i64::from(unmet.is_empty()));
    }

    /// Whether every condition is met.
    pub fn is_ready(&self) -> bool {
        self.lock().is_empty()
    }

    /// `Ok` when ready, else every unmet condition as `condition: reason`, one a line.
    pub fn status(&self) -> Result<(), String> {
        let unmet = self.lock();
        if unmet.is_empty() {
            return Ok(());
        }
        Err(unmet
            .iter()
            .map(|(condition, reason)| format!("{condition}: {reason}"))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        // Every update is a single map operation; a poisoned lock holds a valid map.
        self.unmet.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_not_ready_with_the_startup_condition() {
        let r = Readiness::default();
        assert!(!r.is_ready());
        let reason = r.status().expect_err("not ready");
        assert!(reason.starts_with("startup: "), "{reason}");
        assert_eq!(r.gauge.get(), 0);
    }

    #[test]
    fn ready_only_when_every_condition_is_met() {
        let r = Readiness::default();
        r.set_not_ready("A->B initial read", "offset-syncs topic 40% read");
        r.set_ready(STARTUP);
        assert!(!r.is_ready());
        assert_eq!(r.gauge.get(), 0);
        assert_eq!(
            r.status(),
            Err("A->B initial read: offset-syncs topic 40% read".to_string())
        );
        r.set_ready("A->B initial read");
        assert_eq!(r.status(), Ok(()));
        assert_eq!(r.gauge.get(), 1);
    }

    #[test]
    fn clones_share_state() {
        let r = Readiness::default();
        let clone = r.clone();
        clone.set_ready(STARTUP);
        assert!(r.is_ready());
        r.set_not_ready("cluster primary", "unreachable");
        assert!(!clone.is_ready());
        assert_eq!(clone.gauge.get(), 0);
    }
}
