//! What every provider's retries share: how long to wait before the next
//! attempt (the provider's `Retry-After`, else exponential backoff with
//! jitter, as the official OpenAI and Anthropic SDKs wait), and what an
//! error message may not show (the API key).

use std::time::Duration;

/// The first backoff, doubled on each retry.
const INITIAL: Duration = Duration::from_millis(500);
/// The longest backoff.
const MAX: Duration = Duration::from_secs(8);
/// The longest `Retry-After` honoured; a longer one (or none) falls back to
/// the backoff, as the official SDKs do, so one header cannot park a call
/// for an hour.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The wait before retry number `retry` (0 for the first): 0.5 s doubling
/// to at most 8 s, less up to a quarter at random, so clients that failed
/// together do not come back together.
pub(crate) fn backoff(retry: u32) -> Duration {
    let full = INITIAL.saturating_mul(2u32.saturating_pow(retry)).min(MAX);
    full.mul_f64(1.0 - 0.25 * random_unit())
}

/// A number in [0, 1) from the standard library's per-process random keys
/// (no random-number crate for one jitter).
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(u64::from(std::process::id()));
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// How long the provider asked to wait: `retry-after-ms` (OpenAI's), else
/// `Retry-After` in seconds (whole or not). `None` when absent, unreadable
/// (an HTTP date), not positive, or over a minute.
pub(crate) fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n > 0.0)
    };
    let wait = number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))?;
    (wait <= MAX_RETRY_AFTER).then_some(wait)
}

/// `text` with every occurrence of `secret` replaced, so no error shows the
/// API key, even when a server echoes it back.
pub(crate) fn scrub(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() => text.replace(secret, "[redacted]"),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_cap_with_jitter() {
        for retry in 0..10 {
            let wait = backoff(retry);
            let full = INITIAL.saturating_mul(2u32.pow(retry.min(5))).min(MAX);
            assert!(
                wait <= full && wait >= full.mul_f64(0.75),
                "{retry}: {wait:?}"
            );
        }
    }

    #[test]
    fn retry_after_reads_ms_then_seconds_and_ignores_the_rest() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = http::HeaderMap::new();
            for (k, v) in pairs {
                map.insert(*k, http::HeaderValue::from_static(v));
            }
            map
        };
        let secs = Duration::from_secs;
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.5")])),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "9"), ("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        for ignored in ["3600", "0", "-1", "Wed, 21 Oct 2015 07:28:00 GMT"] {
            let mut map = http::HeaderMap::new();
            map.insert("retry-after", ignored.parse().unwrap());
            assert_eq!(retry_after(&map), None, "{ignored}");
        }
        assert_eq!(retry_after(&http::HeaderMap::new()), None);
    }

    #[test]
    fn scrub_hides_the_key() {
        assert_eq!(
            scrub("bad key sk-123 given", Some("sk-123")),
            "bad key [redacted] given"
        );
        assert_eq!(scrub("nothing", Some("")), "nothing");
        assert_eq!(scrub("nothing", None), "nothing");
    }
}
