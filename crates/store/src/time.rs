//! The one clock and RFC 3339 timestamps (UTC, whole seconds) without a date library.

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

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

impl Timestamp {
    /// Parses RFC 3339 (`2026-09-01T10:00:00Z`, fractional seconds and offsets allowed).
    pub fn parse(s: &str) -> Option<Timestamp> {
        let b = s.as_bytes();
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
            return None;
        }
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            let part = s.get(r)?;
            if !part.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            part.parse().ok()
        };
        let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
            return None;
        }
        let mut rest = &s[19..];
        if let Some(frac) = rest.strip_prefix('.') {
            let n = frac.bytes().take_while(|c| c.is_ascii_digit()).count();
            if n == 0 {
                return None;
            }
            rest = &frac[n..];
        }
        let offset = match rest {
            "Z" | "z" => 0,
            _ => {
                let ob = rest.as_bytes();
                if ob.len() != 6 || !matches!(ob[0], b'+' | b'-') || ob[3] != b':' {
                    return None;
                }
                let oh: i64 = rest.get(1..3)?.parse().ok()?;
                let om: i64 = rest.get(4..6)?.parse().ok()?;
                let sign = if ob[0] == b'-' { -1 } else { 1 };
                sign * (oh * 3600 + om * 60)
            }
        };
        let days = days_from_civil(y, mo, d);
        Some(Timestamp(days * 86_400 + h * 3600 + mi * 60 + se - offset))
    }

    /// `YYYYMMDDTHHMMSSZ`, the time part of a run id.
    pub fn compact(&self) -> String {
        let (y, mo, d, h, mi, s) = self.parts();
        format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
    }

    fn parts(&self) -> (i64, i64, i64, i64, i64, i64) {
        let days = self.0.div_euclid(86_400);
        let secs = self.0.rem_euclid(86_400);
        let (y, mo, d) = civil_from_days(days);
        (y, mo, d, secs / 3600, secs % 3600 / 60, secs % 60)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, mo, d, h, mi, s) = self.parts();
        write!(f, "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
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
