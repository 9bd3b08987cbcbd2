//! A cron's schedule, as LangGraph's server reads it (croniter): five
//! fields (minute granularity) or six, the sixth being seconds; `@hourly`
//! and the like; in a time zone (UTC unless named). The next time is
//! computed with `croner`, which takes seconds first: a six-field
//! schedule is turned around for it.

use croner::Cron;
use croner::parser::{CronParser, Seconds};
use jiff::Timestamp;
use jiff::tz::TimeZone;

/// A parsed schedule, in its time zone.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    cron: Cron,
    zone: TimeZone,
}

impl Schedule {
    /// Parses `schedule` in the IANA time zone `timezone` (UTC when
    /// `None`), or says what is wrong with either, naming the field.
    pub(crate) fn parse(schedule: &str, timezone: Option<&str>) -> Result<Schedule, String> {
        let fields: Vec<&str> = schedule.split_whitespace().collect();
        let pattern = match fields.len() {
            1 if fields[0].starts_with('@') => fields[0].to_owned(),
            5 => fields.join(" "),
            // croniter's seconds come last, croner's first.
            6 => format!("{} {}", fields[5], fields[..5].join(" ")),
            _ => {
                return Err(format!(
                    "schedule: \"{schedule}\" is not a cron schedule: five fields (minute hour \
                     day month weekday), six (then seconds), or @hourly, @daily, ..."
                ));
            }
        };
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .build()
            .parse(&pattern)
            .map_err(|error| format!("schedule: \"{schedule}\" is not a cron schedule: {error}"))?;
        let zone = match timezone {
            None => TimeZone::UTC,
            Some(name) => TimeZone::get(name).map_err(|_| {
                format!(
                    "timezone: \"{name}\" is not a time zone this machine knows (an IANA name \
                     such as \"Europe/Paris\", or \"UTC\")"
                )
            })?,
        };
        // A schedule that never fires (say, February 30th) is refused now.
        let schedule = Schedule { cron, zone };
        match schedule.next_after(Timestamp::now().as_microsecond()) {
            Some(_) => Ok(schedule),
            None => Err(format!("schedule: \"{}\" never fires", fields.join(" "))),
        }
    }

    /// The first time it fires strictly after `micros` (since the Unix
    /// epoch), in microseconds; `None` if it never does again.
    pub(crate) fn next_after(&self, micros: i64) -> Option<i64> {
        let after = Timestamp::from_microsecond(micros)
            .ok()?
            .to_zoned(self.zone.clone());
        self.cron
            .find_next_occurrence(&after, false)
            .ok()
            .map(|next| next.timestamp().as_microsecond())
    }
}

/// Parses an RFC 3339 time (`end_time`) into microseconds, naming `field`.
pub(crate) fn parse_time(field: &str, text: &str) -> Result<i64, String> {
    text.parse::<Timestamp>()
        .map(|time| time.as_microsecond())
        .map_err(|error| format!("{field}: \"{text}\" is not an RFC 3339 time: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: i64 = 60_000_000;

    #[test]
    fn five_fields_fire_on_the_minute() {
        let every = Schedule::parse("* * * * *", None).unwrap();
        let at = 1_800_000_000_000_000 + 1_500_000; // 1.5 s past a minute
        let next = every.next_after(at).unwrap();
        assert_eq!(next % MINUTE, 0);
        assert!(next > at && next - at <= MINUTE);
    }

    #[test]
    fn a_sixth_field_is_seconds_as_croniter_reads_it() {
        // Every minute at second 30 (croniter: seconds last).
        let half = Schedule::parse("* * * * * 30", None).unwrap();
        let minute = 1_800_000_000_000_000 / MINUTE * MINUTE;
        assert_eq!(half.next_after(minute), Some(minute + 30_000_000));
        assert_eq!(
            half.next_after(minute + 30_000_000),
            Some(minute + MINUTE + 30_000_000)
        );
    }

    #[test]
    fn a_time_zone_moves_the_hour() {
        let nine = Schedule::parse("0 9 * * *", Some("Asia/Tokyo")).unwrap();
        let next = nine.next_after(1_800_000_000_000_000).unwrap();
        // 09:00 in Tokyo is 00:00 UTC.
        assert_eq!(next % (24 * 60 * MINUTE), 0);
    }

    #[test]
    fn bad_schedules_and_zones_are_named() {
        for (schedule, zone, field) in [
            ("every minute", None, "schedule"),
            ("* * *", None, "schedule"),
            ("61 * * * *", None, "schedule"),
            ("0 0 30 2 *", None, "schedule"),
            ("* * * * *", Some("Mars/Olympus"), "timezone"),
        ] {
            let error = Schedule::parse(schedule, zone).unwrap_err();
            assert!(error.starts_with(field), "{schedule}: {error}");
        }
    }

    #[test]
    fn end_times_are_rfc_3339() {
        assert_eq!(
            parse_time("end_time", "1970-01-01T00:00:01Z"),
            Ok(1_000_000)
        );
        assert_eq!(
            parse_time("end_time", "1970-01-01T01:00:01+01:00"),
            Ok(1_000_000)
        );
        assert!(
            parse_time("end_time", "tomorrow")
                .unwrap_err()
                .starts_with("end_time")
        );
    }
}
