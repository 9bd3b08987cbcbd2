//! Retries with backoff, for every provider: which failures are tried
//! again, and how long to wait before each try (the official SDKs' rule:
//! the server's `retry-after` when it gives a sane one, else 0.5 s doubling
//! to 8 s, less up to a quarter of jitter). Only a call that has not
//! started streaming is retried: chunks already given out cannot be taken
//! back.

use crate::error::ModelError;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// How often and how patiently a failed call is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// Tries after the first (the SDKs' default: 2).
    pub(crate) max_retries: u32,
    /// The first wait, doubled for each later one.
    pub(crate) initial: Duration,
    /// The longest computed wait.
    pub(crate) max: Duration,
}

/// The longest `retry-after` honoured: beyond it the server's wait is taken
/// for a mistake and the computed backoff is used (as the SDKs do).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

impl RetryPolicy {
    /// `max_retries` tries after the first, waiting 0.5 s doubling to 8 s.
    pub(crate) fn new(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            initial: Duration::from_millis(500),
            max: Duration::from_secs(8),
        }
    }

    /// How long to wait before retry number `retry` (0 for the first) after
    /// `error`, or `None` when it is not to be retried.
    pub(crate) fn delay(&self, retry: u32, error: &ModelError) -> Option<Duration> {
        if retry >= self.max_retries || !error.is_retryable() {
            return None;
        }
        if let Some(wait) = error.retry_after()
            && wait <= MAX_RETRY_AFTER
        {
            return Some(wait);
        }
        let backoff = self
            .initial
            .saturating_mul(1u32 << retry.min(16))
            .min(self.max);
        // Up to a quarter less, so that clients refused together do not all
        // come back at the same instant.
        Some(backoff.mul_f64(1.0 - 0.25 * jitter()))
    }
}

/// Calls `attempt` until it succeeds, fails for good, or `policy` has no
/// retry left; sleeps between tries.
pub(crate) async fn with_retries<T, F, Fut>(
    policy: RetryPolicy,
    mut attempt: F,
) -> Result<T, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ModelError>>,
{
    let mut retry = 0;
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) => match policy.delay(retry, &error) {
                Some(wait) => {
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
                None => return Err(error),
            },
        }
    }
}

/// A number in [0, 1) that differs from call to call (std's randomly keyed
/// hasher: no random-number crate for a jitter).
fn jitter() -> f64 {
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// The wait a response's headers ask for: `retry-after-ms` (Anthropic's),
/// else `retry-after` in seconds.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    header("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ModelErrorKind;

    fn error(kind: ModelErrorKind) -> ModelError {
        ModelError::new("test", kind)
    }

    #[test]
    fn backoff_doubles_to_its_cap_less_a_jitter() {
        let policy = RetryPolicy::new(10);
        for (retry, full) in [
            (0, 500),
            (1, 1000),
            (2, 2000),
            (3, 4000),
            (4, 8000),
            (9, 8000),
        ] {
            let wait = policy.delay(retry, &error(ModelErrorKind::Server)).unwrap();
            let full = Duration::from_millis(full);
            assert!(
                wait <= full && wait >= full.mul_f64(0.75),
                "{retry}: {wait:?}"
            );
        }
    }

    #[test]
    fn retry_after_wins_when_sane() {
        let policy = RetryPolicy::new(2);
        let asked = error(ModelErrorKind::RateLimited).with_retry_after(Duration::from_secs(3));
        assert_eq!(policy.delay(0, &asked), Some(Duration::from_secs(3)));
        let absurd = error(ModelErrorKind::RateLimited).with_retry_after(Duration::from_secs(3600));
        assert!(policy.delay(0, &absurd).unwrap() <= Duration::from_millis(500));
    }

    #[test]
    fn permanent_failures_and_spent_budgets_are_not_retried() {
        let policy = RetryPolicy::new(2);
        assert_eq!(policy.delay(0, &error(ModelErrorKind::Auth)), None);
        assert_eq!(policy.delay(0, &error(ModelErrorKind::BadRequest)), None);
        assert_eq!(policy.delay(2, &error(ModelErrorKind::Server)), None);
        assert_eq!(
            RetryPolicy::new(0).delay(0, &error(ModelErrorKind::Timeout)),
            None
        );
    }

    #[test]
    fn retry_after_headers() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut date = reqwest::header::HeaderMap::new();
        date.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&date), None);
    }
}
