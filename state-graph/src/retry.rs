//! [`RetryPolicy`]: how often, and how patiently, a failing node runs again
//! (LangGraph's `RetryPolicy`, with its defaults).

use crate::error::NodeError;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

/// Retries of a fallible node: up to `max_attempts` runs in all, sleeping
/// `initial_interval * backoff_factor^(n-1)` (at most `max_interval`, with
/// up to 50% random jitter) before the n-th retry. An interrupt and a
/// panic are never retried; which errors are is [`retry_on`]'s choice
/// (every error, by default).
///
/// The defaults are LangGraph's: 3 attempts, 0.5 s, factor 2, at most
/// 128 s, jitter on.
///
/// ```
/// use state_graph::RetryPolicy;
/// use std::time::Duration;
///
/// let policy = RetryPolicy::new(5)
///     .initial_interval(Duration::from_millis(100))
///     .retry_on(|e| e.to_string().contains("timeout"));
/// assert_eq!(policy.max_attempts(), 5);
/// ```
///
/// [`retry_on`]: RetryPolicy::retry_on
#[derive(Clone)]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_interval: Duration,
    backoff_factor: f64,
    max_interval: Duration,
    jitter: bool,
    retry_on: Arc<dyn Fn(&NodeError) -> bool + Send + Sync>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::new(3)
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("initial_interval", &self.initial_interval)
            .field("backoff_factor", &self.backoff_factor)
            .field("max_interval", &self.max_interval)
            .field("jitter", &self.jitter)
            .finish_non_exhaustive()
    }
}

impl RetryPolicy {
    /// At most `max_attempts` runs in all (1: no retry; 0 counts as 1),
    /// with LangGraph's other defaults.
    pub fn new(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts: max_attempts.max(1),
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            jitter: true,
            retry_on: Arc::new(|_| true),
        }
    }

    /// The sleep before the first retry.
    pub fn initial_interval(mut self, interval: Duration) -> Self {
        self.initial_interval = interval;
        self
    }

    /// What each sleep is multiplied by (at least 1).
    pub fn backoff_factor(mut self, factor: f64) -> Self {
        self.backoff_factor = if factor.is_finite() {
            factor.max(1.0)
        } else {
            1.0
        };
        self
    }

    /// The longest sleep.
    pub fn max_interval(mut self, interval: Duration) -> Self {
        self.max_interval = interval;
        self
    }

    /// Whether sleeps vary at random by up to 50% (so workers that failed
    /// together do not retry together).
    pub fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// Which errors are retried; the others end the run at once.
    pub fn retry_on(
        mut self,
        retry_on: impl Fn(&NodeError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_on = Arc::new(retry_on);
        self
    }

    /// Runs in all, the first included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Whether the run that failed with `error` as attempt `attempt`
    /// (1-based) is followed by another.
    pub(crate) fn retries(&self, attempt: u32, error: &NodeError) -> bool {
        attempt < self.max_attempts && !error.is_interrupt() && (self.retry_on)(error)
    }

    /// The sleep before retry number `retry` (1-based).
    pub(crate) fn delay(&self, retry: u32) -> Duration {
        let exponent = i32::try_from(retry.saturating_sub(1)).unwrap_or(i32::MAX);
        let base = self.initial_interval.as_secs_f64() * self.backoff_factor.powi(exponent);
        let capped = base.min(self.max_interval.as_secs_f64());
        let scaled = if self.jitter {
            // A random factor in [1, 1.5): the std hasher's random keys are
            // randomness enough for spreading retries.
            let random = RandomState::new().build_hasher().finish();
            capped * (1.0 + (random % 1000) as f64 / 2000.0)
        } else {
            capped
        };
        Duration::try_from_secs_f64(scaled).unwrap_or(self.max_interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_by_the_factor_up_to_the_cap() {
        let policy = RetryPolicy::new(10)
            .initial_interval(Duration::from_millis(100))
            .max_interval(Duration::from_millis(350))
            .jitter(false);
        let delays: Vec<_> = (1..=4).map(|n| policy.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 350, 350]);
    }

    #[test]
    fn jitter_stays_within_half_again() {
        let policy = RetryPolicy::new(3).initial_interval(Duration::from_millis(100));
        for _ in 0..50 {
            let d = policy.delay(1).as_millis();
            assert!((100..150).contains(&d), "{d}");
        }
    }

    #[test]
    fn interrupts_and_the_last_attempt_are_not_retried() {
        let policy = RetryPolicy::new(2);
        let error = NodeError::msg("flaky");
        assert!(policy.retries(1, &error));
        assert!(!policy.retries(2, &error));
        assert!(!policy.retries(1, &NodeError::from(crate::Interrupted)));
        let picky = RetryPolicy::new(5).retry_on(|e| e.to_string() == "timeout");
        assert!(!picky.retries(1, &error));
    }
}
