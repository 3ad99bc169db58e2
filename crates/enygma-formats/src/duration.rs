//! Durations on the command line of the server and the load generator.
//!
//! A decimal number and a unit: `250ms`, `30s`, `1.5s`, `2m`, `1h`, `250us`, or a bare number of
//! seconds (`30`, `0.5`). Not `humantime`: it accepts neither fractions (`1.5s`, used throughout
//! the docs and tests) nor bare seconds, and it accepts days (`5d`), which no flag here wants.

use std::time::Duration;

/// The longest duration accepted (about 31 years): any flag beyond it is a typo, and it keeps
/// every value far inside what `Instant + Duration` can hold.
const MAX_SECONDS: f64 = 1e9;

/// Parses a duration (see the module documentation); never panics.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: expected e.g. 30s, 1500ms, 2m"))?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" | "mins" => value * 60.0,
        "h" | "hr" | "hrs" => value * 3600.0,
        other => {
            return Err(format!(
                "invalid duration unit {other:?} in {s:?}: use ms, s, m or h"
            ))
        }
    };
    if !(0.0..=MAX_SECONDS).contains(&seconds) {
        return Err(format!("duration {s:?} out of range"));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("duration {s:?} out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_bare_seconds() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("300").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("0.5s").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration(" 0s ").unwrap(), Duration::ZERO);
    }

    #[test]
    fn refuses_garbage_and_unknown_units() {
        for bad in ["", "ten", "5x", "5d", "1.2.3s", "-1s", "s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn huge_values_are_an_error_not_a_panic() {
        for huge in ["1e999", "99999999999999999999999h", "2000000000s"] {
            let e = parse_duration(huge).unwrap_err();
            assert!(e.contains("out of range") || e.contains("invalid"), "{e}");
        }
        let nines = "9".repeat(400);
        assert!(parse_duration(&format!("{nines}s")).is_err());
    }
}
