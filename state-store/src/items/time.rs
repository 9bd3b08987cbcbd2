//! Item times: stored as microseconds since the Unix epoch (LangGraph's
//! precision), written to JSON as Python's `datetime.isoformat()` writes an
//! aware UTC time (`2026-11-27T10:40:29.480913+00:00`, no fraction when it
//! is zero), the shape LangGraph's `Item.dict()` and its Agent Server give.

use serde::{Deserialize, Deserializer, Serializer};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last time handed out by [`now_micros`] in this process.
static LAST: AtomicI64 = AtomicI64::new(i64::MIN);

/// Now, in microseconds since the epoch, later than any time this process
/// handed out before: two puts of one process never share an
/// `updated_at`, so newest-first is the order they were made in (as in
/// LangGraph's `InMemoryStore`), even within a microsecond.
pub(crate) fn now_micros() -> i64 {
    let now = to_micros(SystemTime::now());
    let previous = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(now.max(last.saturating_add(1)))
        })
        .unwrap_or(now);
    now.max(previous.saturating_add(1))
}

pub(crate) fn to_micros(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_micros()).map_or(i64::MIN, |us| -us),
    }
}

/// A stored time (any `i64` reads as some time, never a panic).
pub(crate) fn from_micros(micros: i64) -> SystemTime {
    let magnitude = Duration::from_micros(micros.unsigned_abs());
    let time = if micros >= 0 {
        UNIX_EPOCH.checked_add(magnitude)
    } else {
        UNIX_EPOCH.checked_sub(magnitude)
    };
    time.unwrap_or(UNIX_EPOCH)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day since 1970-01-01 (`civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`.
pub(crate) fn isoformat(time: SystemTime) -> String {
    let micros = to_micros(time);
    let seconds = micros.div_euclid(1_000_000);
    let fraction = micros.rem_euclid(1_000_000);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    let mut text = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
    if fraction != 0 {
        text.push_str(&format!(".{fraction:06}"));
    }
    text.push_str("+00:00");
    text
}

/// Reads what Python's `datetime.fromisoformat` reads for a time of day
/// with a date: `YYYY-MM-DD` then `T` or a space, `HH:MM[:SS[.f...]]`, and
/// `Z`, `±HH:MM` or nothing (UTC). Fractions beyond microseconds are cut.
pub(crate) fn parse_iso(text: &str) -> Option<SystemTime> {
    fn number(text: &str) -> Option<i64> {
        (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse().ok())
            .flatten()
    }
    let (date, rest) = (text.get(..10)?, text.get(10..)?);
    let mut parts = date.split('-');
    let (year, month, day) = (
        number(parts.next()?)?,
        number(parts.next()?)?,
        number(parts.next()?)?,
    );
    if parts.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let rest = rest.strip_prefix(['T', ' '])?;
    // The offset starts at the first `Z`, `+` or `-` after the time.
    let (clock, offset) = match rest.find(['Z', 'z', '+', '-']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let (clock, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut fields = clock.split(':');
    let hour = number(fields.next()?)?;
    let minute = number(fields.next()?)?;
    let second = fields.next().map_or(Some(0), number)?;
    if fields.next().is_some() || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let micros = if fraction.is_empty() {
        0
    } else {
        number(fraction)?;
        let digits: String = fraction.chars().chain("000000".chars()).take(6).collect();
        number(&digits)?
    };
    let offset_seconds = match offset {
        "" | "Z" | "z" => 0,
        _ => {
            let sign = if offset.starts_with('-') { -1 } else { 1 };
            let (hours, minutes) = offset[1..].split_once(':').unwrap_or((&offset[1..], "00"));
            let (hours, minutes) = (number(hours)?, number(minutes.get(..2)?)?);
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        - offset_seconds;
    Some(from_micros(
        seconds.checked_mul(1_000_000)?.checked_add(micros)?,
    ))
}

/// `#[serde(with = "iso")]` for an item's times.
pub(crate) mod iso {
    use super::*;

    pub fn serialize<S: Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&isoformat(*time))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_iso(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "expected an ISO 8601 time as 2026-11-27T10:40:29.480913+00:00, got {text:?}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_python_writes_an_aware_utc_datetime() {
        // datetime(2026, 11, 27, 10, 40, 29, 480913, tzinfo=timezone.utc)
        let time = from_micros(1_795_776_029_480_913);
        assert_eq!(isoformat(time), "2026-11-27T10:40:29.480913+00:00");
        assert_eq!(isoformat(UNIX_EPOCH), "1970-01-01T00:00:00+00:00");
        assert_eq!(
            isoformat(from_micros(-1)),
            "1969-12-31T23:59:59.999999+00:00"
        );
        assert_eq!(
            isoformat(from_micros(951_782_400_000_000)),
            "2000-02-29T00:00:00+00:00"
        );
    }

    #[test]
    fn a_process_never_hands_out_the_same_time_twice() {
        let times: Vec<i64> = (0..1000).map(|_| now_micros()).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]));
        let _ = from_micros(i64::MIN);
        let _ = from_micros(i64::MAX);
    }

    #[test]
    fn times_read_back_in_the_shapes_python_writes() {
        for micros in [
            0,
            1_795_776_029_480_913,
            -1,
            951_782_400_000_000,
            4_102_444_800_000_001,
        ] {
            let time = from_micros(micros);
            assert_eq!(parse_iso(&isoformat(time)), Some(time), "{micros}");
            assert_eq!(to_micros(time), micros);
        }
        let at = |text| parse_iso(text).map(to_micros);
        assert_eq!(
            at("2026-11-27T10:40:29.480913Z"),
            Some(1_795_776_029_480_913)
        );
        assert_eq!(
            at("2026-11-27 11:40:29.480913+01:00"),
            Some(1_795_776_029_480_913)
        );
        assert_eq!(
            at("2026-11-27T10:40:29.4809139-00:00"),
            Some(1_795_776_029_480_913)
        );
        assert_eq!(at("2026-11-27T10:40"), Some(1_795_776_000_000_000));
        for bad in [
            "",
            "2026-11-27",
            "2026-13-01T00:00",
            "2026-11-27T25:00",
            "nonsense-and-more",
            "2026-11-27T10:40:29.x",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
    }
}
