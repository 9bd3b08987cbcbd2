//! The JSON shapes of the answers, and the two encodings they need: times
//! as RFC 3339 strings (UTC, milliseconds: what the store keeps) and query
//! values percent-encoded for the `Link` header.

use serde::Serialize;
use serde_json::{Map, Value};
use state_store::{StepRecord, ThreadInfo};
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// One thread of `GET /threads`.
#[derive(Serialize)]
pub(crate) struct ThreadJson<'a> {
    id: &'a str,
    seq: u64,
    created_at: String,
    updated_at: String,
    forked_from: Option<ForkJson<'a>>,
}

#[derive(Serialize)]
struct ForkJson<'a> {
    thread: &'a str,
    seq: u64,
}

impl<'a> ThreadJson<'a> {
    pub(crate) fn new(info: &'a ThreadInfo) -> ThreadJson<'a> {
        ThreadJson {
            id: &info.id,
            seq: info.seq,
            created_at: rfc3339(info.created_at),
            updated_at: rfc3339(info.updated_at),
            forked_from: info
                .forked_from
                .as_ref()
                .map(|(thread, seq)| ForkJson { thread, seq: *seq }),
        }
    }
}

/// One step of `GET /threads/{id}/history`.
#[derive(Serialize)]
pub(crate) struct StepJson<'a> {
    seq: u64,
    kind: &'static str,
    metadata: &'a Map<String, Value>,
    body: &'a Value,
    /// When it was committed (DESIGN.md's `time`).
    time: String,
    state_version: u32,
}

impl<'a> StepJson<'a> {
    pub(crate) fn new(step: &'a StepRecord) -> StepJson<'a> {
        StepJson {
            seq: step.seq,
            kind: step.kind.as_str(),
            metadata: &step.metadata,
            body: &step.body,
            time: rfc3339(step.recorded_at),
            state_version: step.state_version,
        }
    }
}

/// The answer of `GET /threads/{id}/state`.
#[derive(Serialize)]
pub(crate) struct StateJson {
    pub seq: u64,
    pub values: Value,
}

/// The interrupts a pending step's body lists: the runner's shape,
/// `{"interrupts": [{"id", "task": {"node"}, "value"}, ..]}` (empty for any
/// other body: a failure, or a shape this version does not know).
pub(crate) fn pending_interrupts(body: &Value) -> &[Value] {
    body.get("interrupts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// One node's write in a superstep's body, delta by delta, in order: its
/// delta (no subgraph step), or, for a node that ran a subgraph logged as
/// its supersteps (`StepKind::Superstep`), each of their deltas with the
/// subgraph's superstep (from 0).
pub(crate) fn node_deltas(write: &Value) -> Vec<(Option<usize>, &Value)> {
    let Some(steps) = write.as_array() else {
        return vec![(None, write)];
    };
    let mut deltas = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match step.as_array() {
            Some(step) => deltas.extend(step.iter().map(|delta| (Some(i), delta))),
            None => deltas.push((Some(i), step)),
        }
    }
    deltas
}

/// Milliseconds since the Unix epoch (the store's precision; 0 before it).
pub(crate) fn millis(time: SystemTime) -> u64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// `2025-01-31T09:05:03.042Z`: UTC, always three digits of milliseconds.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let millis = millis(time);
    let (secs, ms) = (millis / 1000, millis % 1000);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// `2025-01-31T09:05:03.042137+00:00`: UTC with microseconds, as the
/// Agent Server (Python's `datetime.isoformat()`) writes its times.
pub(crate) fn rfc3339_micros(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}+00:00",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_micros()
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// `text` with every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`)
/// percent-encoded: safe in a query value and in a header.
pub(crate) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(millis: u64) -> String {
        rfc3339(UNIX_EPOCH + Duration::from_millis(millis))
    }

    #[test]
    fn agent_server_times_have_microseconds_and_an_offset() {
        let time = UNIX_EPOCH + Duration::from_micros(1_795_775_945_817_042);
        assert_eq!(rfc3339_micros(time), "2026-11-27T10:39:05.817042+00:00");
    }

    #[test]
    fn times_are_rfc3339_in_utc_with_milliseconds() {
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(at(1_735_689_600_042), "2025-01-01T00:00:00.042Z");
        assert_eq!(at(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
        // Before the epoch (a clock gone wrong): clamped, never a panic.
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00.000Z"
        );
        // Far in the future (a corrupt row): a string still, no overflow.
        let _ = at(u64::MAX);
    }

    #[test]
    fn every_day_of_four_centuries_follows_the_previous_one() {
        let mut previous = civil_from_days(0);
        assert_eq!(previous, (1970, 1, 1));
        for days in 1..146_097 {
            let (y, m, d) = civil_from_days(days);
            let (py, pm, pd) = previous;
            let next_day = (y, m, d) == (py, pm, pd + 1);
            let next_month = (y, m, d) == (py, pm + 1, 1) && pd >= 28;
            let next_year = (y, m, d) == (py + 1, 1, 1) && (pm, pd) == (12, 31);
            assert!(
                next_day || next_month || next_year,
                "{previous:?} -> {y}-{m}-{d}"
            );
            previous = (y, m, d);
        }
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(percent_encode("user-42_a.b~"), "user-42_a.b~");
        assert_eq!(percent_encode("1:a/b c&d"), "1%3Aa%2Fb%20c%26d");
        assert_eq!(percent_encode("é\0"), "%C3%A9%00");
    }
}
