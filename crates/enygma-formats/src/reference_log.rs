//! The reference service's (rayls-sovereign-gnark-api) per-request timing line: the only record
//! of its internal prove time, since it sends no `Server-Timing` header. Each proving handler
//! prints one to standard output after the proof is made and before the response is written:
//!
//! ```text
//! K=6 Timing: Bind=1.2ms, Parse=350µs, Prove=2.912s, Serialize=42ns, Total=2.913s
//! Enygma Join-Split Timing: Bind=…, Parse=…, Prove=…, Total=…
//! ```
//!
//! The durations are Go's `time.Duration` text (`1h2m3.5s`, `2.5s`, `12.3ms`, `850µs`, `42ns`).

use std::time::Duration;

/// What one timing line says about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimingLine {
    /// The text before ` Timing:` (`K=6`, `Enygma Join-Split`): which handler proved.
    pub handler: String,
    /// `groth16.Prove` alone (the reference's `Prove=` field).
    pub prove: Duration,
    /// From the start of the handler to the proof serialised (`Total=`), if printed.
    pub total: Option<Duration>,
}

/// Reads one line of the reference's output: `Some` only for a timing line with a valid
/// `Prove=` field; every other line (start-up, gin's access log, errors) is `None`.
pub fn parse_timing_line(line: &str) -> Option<TimingLine> {
    let (handler, fields) = line.trim().split_once(" Timing: ")?;
    let field = |name: &str| {
        fields
            .split(", ")
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .and_then(parse_go_duration)
    };
    Some(TimingLine {
        handler: handler.trim().to_string(),
        prove: field("Prove")?,
        total: field("Total"),
    })
}

/// Go's `time.Duration.String()`: one or more `<decimal><unit>` parts, units `h`, `m`, `s`,
/// `ms`, `µs` (or `μs`, `us`) and `ns`; `0s` for zero. Negative durations (which a timing line
/// cannot hold) and anything else are `None`.
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    let mut nanos = 0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        // Longest unit first: `ms` before `m`.
        let (unit_ns, len) = [
            ("ns", 1.0),
            ("us", 1e3),
            ("µs", 1e3),
            ("μs", 1e3),
            ("ms", 1e6),
            ("s", 1e9),
            ("m", 60e9),
            ("h", 3600e9),
        ]
        .iter()
        .find(|(u, _)| rest.starts_with(u))
        .map(|(u, ns)| (*ns, u.len()))?;
        nanos += value * unit_ns;
        rest = &rest[len..];
    }
    (nanos.is_finite() && nanos < 1e18).then(|| Duration::from_nanos(nanos.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_payment_handlers_line() {
        let t = parse_timing_line(
            "K=6 Timing: Bind=1.234ms, Parse=350.5µs, Prove=2.912345678s, Serialize=42ns, Total=2.914s",
        )
        .unwrap();
        assert_eq!(t.handler, "K=6");
        assert_eq!(t.prove, Duration::from_nanos(2_912_345_678));
        assert_eq!(t.total, Some(Duration::from_millis(2914)));
    }

    #[test]
    fn reads_the_dvp_handlers_line() {
        let t = parse_timing_line(
            "Enygma Join-Split Timing: Bind=2ms, Parse=1ms, Prove=1m2.5s, Total=1m2.6s",
        )
        .unwrap();
        assert_eq!(t.handler, "Enygma Join-Split");
        assert_eq!(t.prove, Duration::from_millis(62_500));
    }

    #[test]
    fn other_lines_are_not_timing_lines() {
        for line in [
            "",
            "✓ Circuit K=6 loaded and cached in 9.01s",
            "Input validation failed: nullifier mismatch",
            "[GIN] 2026/12/04 - 20:00:00 | 200 |  2.9s | 127.0.0.1 | POST /proof/enygma/k6",
            "K=6 Timing: Bind=1ms, Parse=1ms, Prove=soon, Total=2s",
            "K=6 Timing: Bind=1ms, Parse=1ms, Total=2s",
        ] {
            assert_eq!(parse_timing_line(line), None, "{line:?}");
        }
    }

    #[test]
    fn go_durations() {
        let ok = [
            ("0s", Duration::ZERO),
            ("42ns", Duration::from_nanos(42)),
            ("850µs", Duration::from_micros(850)),
            ("850μs", Duration::from_micros(850)),
            ("1.5us", Duration::from_nanos(1500)),
            ("12.25ms", Duration::from_micros(12_250)),
            ("2.5s", Duration::from_millis(2500)),
            ("3m0.5s", Duration::from_millis(180_500)),
            ("1h2m3s", Duration::from_secs(3723)),
        ];
        for (text, want) in ok {
            assert_eq!(parse_go_duration(text), Some(want), "{text}");
        }
        for bad in ["", "s", "5", "5x", "-1s", "1.2.3s", "1e999h", "9999999999h"] {
            assert_eq!(parse_go_duration(bad), None, "{bad:?}");
        }
    }
}
