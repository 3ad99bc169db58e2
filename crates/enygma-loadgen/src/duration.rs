//! Human durations on the command line: `60s`, `1.5s`, `500ms`, `5m`, `1h`, `300` (seconds).

use std::time::Duration;

/// Parses `60s`, `1.5s`, `500ms`, `2m`, `1h`, `250us`; a bare number means seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty duration".into());
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: expected e.g. 60s, 500ms, 5m"))?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" | "mins" => value * 60.0,
        "h" | "hr" | "hrs" => value * 3600.0,
        other => {
            return Err(format!(
                "invalid duration unit {other:?} in {s:?} (use ms, s, m or h)"
            ))
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("invalid duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats a duration the way [`parse_duration`] reads it (`60s`, `1.5s`, `500ms`).
pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 || s == 0.0 {
        let r = (s * 1000.0).round() / 1000.0;
        format!("{r}s")
    } else {
        format!("{}ms", (s * 1e3 * 1000.0).round() / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("300").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        assert!(parse_duration("").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("abc").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for s in ["60s", "1.5s", "500ms", "0s"] {
            let d = parse_duration(s).unwrap();
            assert_eq!(fmt_duration(d), s);
        }
    }
}
