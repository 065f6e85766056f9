//! The one clock and RFC 3339 timestamps (UTC, whole seconds), read and written with `chrono`
//! (the app's own date-time library).

use std::fmt;

/// Seconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

/// Where "now" comes from: the system clock, or a fixed instant (`DOCTOR_NOW`, tests).
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    /// The system clock.
    System,
    /// A fixed instant.
    Fixed(Timestamp),
}

impl Clock {
    /// The current instant of this clock.
    // `Clock::System` is the one reading of the system clock (clippy.toml).
    #[allow(clippy::disallowed_methods)]
    pub fn now(&self) -> Timestamp {
        match self {
            Clock::Fixed(t) => *t,
            Clock::System => {
                let d = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                Timestamp(d.as_secs() as i64)
            }
        }
    }
}

/// The wall clock in nanoseconds since the Unix epoch, whatever `DOCTOR_NOW` says: what the
/// verdict cache (`store::cache`) compares the kernel's file timestamps with.
// The second reading of the system clock (clippy.toml): a fixed clock must not move it.
#[allow(clippy::disallowed_methods)]
pub fn wall_clock_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}

/// Why a text is not an instant the doctor accepts ([`Timestamp::parse_strict`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadInstant {
    /// Not RFC 3339, or a date or time that does not exist (`2026-02-31`, hour 24).
    NotRfc3339,
    /// Second 60: a leap second, which no run id or receipt can spell.
    LeapSecond,
    /// In UTC, outside the years 0000 to 9999 that a run id (`YYYYMMDDTHHMMSSZ`) can spell.
    OutOfRange,
}

impl fmt::Display for BadInstant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BadInstant::NotRfc3339 => "is not an RFC 3339 time",
            BadInstant::LeapSecond => {
                "is a leap second (second 60), which no run id can spell: give the second before or after it"
            }
            BadInstant::OutOfRange => {
                "is outside the years 0000 to 9999 (UTC) that a run id (YYYYMMDDTHHMMSSZ) can spell"
            }
        })
    }
}

impl Timestamp {
    /// The first instant a run id can spell: `0000-01-01T00:00:00Z`.
    pub const MIN: Timestamp = Timestamp(-62_167_219_200);
    /// The last instant a run id can spell: `9999-12-31T23:59:59Z`.
    pub const MAX: Timestamp = Timestamp(253_402_300_799);

    /// Parses RFC 3339 strictly (`2026-09-01T10:00:00Z`; fractional seconds, which are dropped,
    /// and offsets allowed), with `chrono`: the date must exist, second 60 (a leap second) is
    /// refused, and so is an instant outside [`Timestamp::MIN`]..=[`Timestamp::MAX`]. `None`
    /// for anything else; [`Timestamp::parse_strict`] says why.
    pub fn parse(s: &str) -> Option<Timestamp> {
        Timestamp::parse_strict(s).ok()
    }

    /// [`Timestamp::parse`], saying why a text is refused.
    pub fn parse_strict(s: &str) -> Result<Timestamp, BadInstant> {
        let t = chrono::DateTime::parse_from_rfc3339(s).map_err(|_| BadInstant::NotRfc3339)?;
        // chrono reads second 60 as a nanosecond count past one second.
        if chrono::Timelike::nanosecond(&t) >= 1_000_000_000 {
            return Err(BadInstant::LeapSecond);
        }
        let t = Timestamp(t.timestamp());
        if !t.is_spellable() {
            return Err(BadInstant::OutOfRange);
        }
        Ok(t)
    }

    /// An instant as the app reads one: chrono's `DateTime<Utc>` deserialization (its relaxed
    /// RFC 3339, which also takes a space before the offset, `UTC`, and a leap second), so a
    /// document is judged by the very parser that loads it. Only documents' timestamps are read
    /// this way; the doctor's own clock and records use [`Timestamp::parse`].
    pub fn parse_as_app(s: &str) -> Option<Timestamp> {
        Timestamp::parse_as_app_nanos(s).map(|(t, _)| t)
    }

    /// [`Timestamp::parse_as_app`], and the nanoseconds past that second (past 999,999,999 in
    /// a leap second, as chrono counts them), so instants compare as the app compares them.
    pub fn parse_as_app_nanos(s: &str) -> Option<(Timestamp, u32)> {
        s.parse::<chrono::DateTime<chrono::FixedOffset>>()
            .ok()
            .map(|t| (Timestamp(t.timestamp()), t.timestamp_subsec_nanos()))
    }

    /// Whether a run id can spell this instant: its UTC year is 0000 to 9999.
    pub fn is_spellable(&self) -> bool {
        (Timestamp::MIN..=Timestamp::MAX).contains(self)
    }

    /// `YYYYMMDDTHHMMSSZ`, the time part of a run id (for an instant [`Timestamp::is_spellable`]).
    pub fn compact(&self) -> String {
        self.format("%Y%m%dT%H%M%SZ")
    }

    fn format(&self, pattern: &str) -> String {
        match chrono::DateTime::from_timestamp(self.0, 0) {
            Some(t) => t.format(pattern).to_string(),
            // Past chrono's range (about 262,000 years either way): the seconds themselves.
            None => format!("@{}", self.0),
        }
    }
}

impl Clock {
    /// Refuses a clock whose "now" no run id can spell (outside the years 0000 to 9999): the
    /// system clock set that far, or a fixed instant made that way. The error says which.
    pub fn check(&self) -> Result<(), String> {
        let now = self.now();
        if now.is_spellable() {
            return Ok(());
        }
        Err(match self {
            Clock::System => format!(
                "the system clock reads {now}, outside the years 0000 to 9999 that a run id can \
                 spell: set the clock (or DOCTOR_NOW)"
            ),
            Clock::Fixed(_) => format!("the fixed clock {now} {}", BadInstant::OutOfRange),
        })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format("%Y-%m-%dT%H:%M:%SZ"))
    }
}

/// Parses a duration into whole seconds: `90s`, `30m`, `24h`, `14d`, and the combined and long
/// forms `humantime` reads (`1h30m`, `2w`, `36h`, `1day`, `1.5h`). A number without a unit, a
/// negative one, and a duration past `i64` seconds are refused.
pub fn parse_duration(s: &str) -> Option<i64> {
    let s = s.trim();
    // humantime reads a bare `0` as zero seconds: a duration here always names its unit.
    if !s.bytes().any(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let d = humantime::parse_duration(s).ok()?;
    i64::try_from(d.as_secs()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_rfc3339() {
        let t = Timestamp::parse("2026-11-29T12:34:56Z").unwrap();
        assert_eq!(t.to_string(), "2026-11-29T12:34:56Z");
        assert_eq!(t.compact(), "20261129T123456Z");
        assert_eq!(Timestamp::parse("1970-01-01T00:00:00Z"), Some(Timestamp(0)));
        assert_eq!(
            Timestamp::parse("2026-11-29T13:34:56.250+01:00"),
            Some(t),
            "offsets and fractions are honoured"
        );
        assert_eq!(
            Timestamp::parse("2000-02-29T00:00:00Z")
                .unwrap()
                .to_string(),
            "2000-02-29T00:00:00Z"
        );
    }

    #[test]
    fn rejects_malformed_timestamps() {
        for bad in [
            "",
            "2026-11-29",
            "2026-13-01T00:00:00Z",
            "2026-11-29T00:00:00",
            "yesterday",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad}");
        }
    }

    /// Strict: a date that does not exist, a leap second, and an instant whose UTC year a run
    /// id cannot spell are refused, each saying why; the bounds themselves are accepted.
    #[test]
    fn instants_are_parsed_strictly() {
        use BadInstant::*;
        for (text, why) in [
            ("2026-02-31T00:00:00Z", NotRfc3339),
            ("2026-02-29T00:00:00Z", NotRfc3339),
            ("2026-11-29T24:00:00Z", NotRfc3339),
            ("9999-12-31T23:59:60Z", LeapSecond),
            ("2016-12-31T23:59:60Z", LeapSecond),
            ("9999-12-31T23:59:59-00:01", OutOfRange),
            ("0000-01-01T00:00:00+00:01", OutOfRange),
        ] {
            assert_eq!(Timestamp::parse_strict(text), Err(why.clone()), "{text}");
        }
        assert_eq!(
            Timestamp::parse("0000-01-01T00:00:00Z"),
            Some(Timestamp::MIN)
        );
        assert_eq!(
            Timestamp::parse("9999-12-31T23:59:59Z"),
            Some(Timestamp::MAX)
        );
        assert_eq!(Timestamp::MAX.compact(), "99991231T235959Z");
        assert_eq!(Timestamp::MIN.to_string(), "0000-01-01T00:00:00Z");
        assert!(!Timestamp(Timestamp::MAX.0 + 1).is_spellable());
        assert!(Clock::Fixed(Timestamp(Timestamp::MAX.0 + 1))
            .check()
            .is_err());
        assert!(Clock::Fixed(Timestamp::MAX).check().is_ok());
        assert!(Clock::System.check().is_ok());
    }

    /// Documents are read as the app reads them (chrono's relaxed form): a leap second and a
    /// space before the offset are fine there, a date that does not exist is not.
    #[test]
    fn documents_timestamps_are_read_as_the_app_reads_them() {
        let t = Timestamp::parse("2016-12-31T23:59:59Z").unwrap();
        assert_eq!(Timestamp::parse_as_app("2016-12-31T23:59:60Z"), Some(t));
        assert_eq!(
            Timestamp::parse_as_app("2026-11-29T12:00:00 +00:00"),
            Timestamp::parse("2026-11-29T12:00:00Z")
        );
        assert_eq!(Timestamp::parse_as_app("2026-02-31T00:00:00Z"), None);
        assert_eq!(Timestamp::parse_as_app("yesterday"), None);
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("90s"), Some(90));
        assert_eq!(parse_duration("30m"), Some(1800));
        assert_eq!(parse_duration("24h"), Some(86_400));
        assert_eq!(parse_duration("14d"), Some(14 * 86_400));
        assert_eq!(parse_duration("0s"), Some(0));
        assert_eq!(parse_duration("1h30m"), Some(5400));
        assert_eq!(parse_duration("2w"), Some(14 * 86_400));
        assert_eq!(parse_duration("36h"), Some(36 * 3600));
        assert_eq!(parse_duration("1day"), Some(86_400));
        assert_eq!(parse_duration("1.5h"), Some(5400));
        for bad in ["", "h", "10", "-5m", "soon", "99999999999999999999d"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_bare_zero_is_a_number_without_a_unit() {
        // Found by the fuzz target `duration` (fuzz/regressions/duration/bare-zero-accepted):
        // humantime reads a bare `0` as zero seconds, which would purge every run.
        for bad in ["0", "0 ", " 0", "00"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
        assert_eq!(parse_duration("0s"), Some(0));
    }
}
