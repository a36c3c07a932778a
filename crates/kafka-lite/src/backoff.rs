//! Retry timing: exponential backoff with jitter under an overall deadline.
//!
//! [`RetryPolicy`] is the configuration; [`Backoff`] is one operation's
//! retry state. Delays double from `initial_backoff` up to `max_backoff`;
//! each delay is drawn uniformly from its upper half ("equal jitter"), so
//! many clients retrying at once spread out while each still waits at
//! least half the nominal delay. No delay runs past the deadline.
//!
//! The jitter comes from a small xorshift generator seeded from the
//! operating system (`getrandom`), falling back to the clock; it needs no
//! cryptographic quality.

use std::time::Duration;

use tokio::time::Instant;

/// How long and how often the cluster layer retries retriable errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Nominal delay before the first retry. Default 100 ms.
    pub initial_backoff: Duration,
    /// Cap on the nominal delay. Default 2 s.
    pub max_backoff: Duration,
    /// Overall time budget of one operation, first attempt included.
    /// After it, the last error is returned. Default 30 s.
    pub deadline: Duration,
    /// How many times UNKNOWN_TOPIC_OR_PARTITION is retried (after a
    /// metadata refresh) before it is returned: a topic that was just
    /// created may not have reached every broker yet, but a topic that does
    /// not exist never will. Default 3.
    pub max_unknown_topic_retries: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            deadline: Duration::from_secs(30),
            max_unknown_topic_retries: 3,
        }
    }
}

/// The retry state of one operation: attempts so far, jitter source and
/// deadline.
#[derive(Debug)]
pub(crate) struct Backoff {
    policy: RetryPolicy,
    attempt: u32,
    deadline: Instant,
    rng: XorShift,
}

impl Backoff {
    /// Starts the clock for one operation.
    #[cfg(test)]
    pub(crate) fn new(policy: RetryPolicy) -> Self {
        Self::until(policy, Instant::now() + policy.deadline)
    }

    /// Retry state that gives up at `deadline` (e.g. an enclosing
    /// operation's) instead of `policy.deadline` from now.
    pub(crate) fn until(policy: RetryPolicy, deadline: Instant) -> Self {
        Backoff {
            policy,
            attempt: 0,
            deadline,
            rng: XorShift::seeded(),
        }
    }

    /// When this operation gives up.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Number of delays handed out so far.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempt
    }

    /// Time left before the deadline.
    pub(crate) fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The delay before the next attempt, or `None` when the deadline has
    /// passed (give up). The delay never ends after the deadline.
    pub(crate) fn next_delay(&mut self) -> Option<Duration> {
        let remaining = self.remaining();
        if remaining.is_zero() {
            return None;
        }
        let nominal = self.nominal(self.attempt);
        self.attempt = self.attempt.saturating_add(1);
        let half = nominal / 2;
        let jitter_nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let jitter = match jitter_nanos {
            0 => Duration::ZERO,
            n => Duration::from_nanos(self.rng.next() % (n + 1)),
        };
        Some((half + jitter).min(remaining))
    }

    /// Waits [`next_delay`](Self::next_delay); returns `false` (at once) if
    /// the deadline has passed.
    pub(crate) async fn wait(&mut self) -> bool {
        match self.next_delay() {
            Some(delay) => {
                tokio::time::sleep(delay).await;
                // Waiting until exactly the deadline leaves no time to try.
                !self.remaining().is_zero()
            }
            None => false,
        }
    }

    fn nominal(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX);
        self.policy
            .initial_backoff
            .saturating_mul(factor)
            .min(self.policy.max_backoff)
    }
}

/// xorshift64*: tiny, fast, good enough for jitter.
#[derive(Debug)]
struct XorShift(u64);

impl XorShift {
    fn seeded() -> Self {
        let mut seed = [0u8; 8];
        let seed = match getrandom::fill(&mut seed) {
            Ok(()) => u64::from_le_bytes(seed),
            Err(_) => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64),
        };
        // xorshift must not start at zero.
        XorShift(seed | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(800),
            deadline: Duration::from_secs(10),
            max_unknown_topic_retries: 3,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn delays_double_within_the_upper_half_and_stop_at_the_cap() {
        let mut backoff = Backoff::new(policy());
        for nominal_ms in [100u64, 200, 400, 800, 800, 800] {
            let delay = backoff.next_delay().expect("before the deadline");
            let nominal = Duration::from_millis(nominal_ms);
            assert!(
                delay >= nominal / 2 && delay <= nominal,
                "{delay:?} vs {nominal:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn no_delay_after_the_deadline_and_none_past_it() {
        let mut backoff = Backoff::new(RetryPolicy {
            deadline: Duration::from_millis(250),
            ..policy()
        });
        tokio::time::advance(Duration::from_millis(200)).await;
        let delay = backoff.next_delay().expect("50 ms left");
        assert!(delay <= Duration::from_millis(50), "{delay:?}");
        tokio::time::advance(Duration::from_millis(60)).await;
        assert_eq!(backoff.next_delay(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn wait_reports_false_once_the_deadline_is_reached() {
        let mut backoff = Backoff::new(RetryPolicy {
            deadline: Duration::from_millis(120),
            ..policy()
        });
        let mut waits = 0;
        while backoff.wait().await {
            waits += 1;
            assert!(waits < 10, "never gave up");
        }
        assert!(backoff.remaining().is_zero());
    }

    #[test]
    fn jitter_source_varies() {
        let mut rng = XorShift::seeded();
        let a = rng.next();
        let b = rng.next();
        assert_ne!(a, b);
    }
}
