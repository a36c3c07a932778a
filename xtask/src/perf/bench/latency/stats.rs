//! The pure part of `bench latency`: which commit round an observed offset
//! belongs to, when each commit became covered on the target, and the
//! percentiles of those delays.

use serde::Serialize;

use super::super::seed::{SHIFT, SYNC_STEP, SYNCS_PER_PARTITION};

/// The upstream offset of the seeded commit (round 0): the newest seeded sync.
pub const BASE: i64 = (SYNCS_PER_PARTITION - 1) * SYNC_STEP;

/// The upstream offset every group commits on every partition in round `k`
/// (round 0 is the seeded commit). A sync is written at each of these
/// offsets one round ahead, so every commit translates exactly.
pub fn upstream_of_round(k: i64) -> i64 {
    BASE + k * SYNC_STEP
}

/// The round a checkpoint's upstream offset stands for: the first round whose
/// commit it covers (rounded up, so an offset between two rounds counts for the
/// later one). `None` below round 0 (not the bench's).
pub fn round_of_upstream(upstream: i64) -> Option<i64> {
    let d = upstream - BASE;
    (d >= 0).then(|| (d + SYNC_STEP - 1).div_euclid(SYNC_STEP))
}

/// The round a target group offset stands for. An exact translation of round
/// `k` is `upstream_of_round(k) + SHIFT`; one made before the sync of round `k`
/// was read is the previous sync's downstream + 1, still above round `k - 1`'s.
pub fn round_of_downstream(downstream: i64) -> Option<i64> {
    round_of_upstream(downstream - SHIFT)
}

/// When one group-partition was seen on the target covering `round` (ms since
/// the side's origin).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    /// The round of the offset seen.
    pub round: i64,
    /// Milliseconds since the origin.
    pub at_ms: f64,
}

/// Delays from each commit to the first observation covering it.
///
/// `commits[i]` is when round `i + 1` was committed (acknowledged), ms since
/// the origin; `seen` are the observations of the same group-partition, in any
/// order. A commit is covered by the first observation (by time) of its round
/// or a later one: a checkpoint of a later commit is what a failed-over
/// consumer would resume from, so a superseded commit counts as covered then.
/// Returns the delays (ms, in round order) and how many commits were never
/// covered.
pub fn coverage_delays(commits: &[f64], seen: &[Seen]) -> (Vec<f64>, usize) {
    let mut seen: Vec<Seen> = seen.to_vec();
    seen.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    let mut delays = Vec::with_capacity(commits.len());
    let mut next = 0usize; // index into commits: round next + 1
    let mut covered = i64::MIN;
    for s in &seen {
        covered = covered.max(s.round);
        while next < commits.len() && (next as i64 + 1) <= covered {
            delays.push(s.at_ms - commits[next]);
            next += 1;
        }
    }
    (delays, commits.len() - next)
}

/// p50, p99 and max of a set of delays (ms), by nearest rank.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// How many delays.
    pub count: usize,
    /// Median (ms).
    pub p50_ms: f64,
    /// 99th percentile (ms).
    pub p99_ms: f64,
    /// Largest (ms).
    pub max_ms: f64,
}

/// The nearest-rank percentiles of `values`; `None` if it is empty.
pub fn percentiles(values: &[f64]) -> Option<Percentiles> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = |q: f64| {
        let r = (q * v.len() as f64).ceil() as usize;
        v[r.clamp(1, v.len()) - 1]
    };
    Some(Percentiles {
        count: v.len(),
        p50_ms: rank(0.50),
        p99_ms: rank(0.99),
        max_ms: v[v.len() - 1],
    })
}
