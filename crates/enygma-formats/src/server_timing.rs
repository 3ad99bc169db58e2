//! The `Server-Timing` response header (W3C Server Timing) of a proving response:
//! `queue;dur=12.3, witness;dur=40.1, prove;dur=610.4, total;dur=663.0` (milliseconds).
//! The server writes it with [`ServerTiming::header_value`]; the load generator and the tests
//! read it with [`parse`] (or [`parse_metrics`], which keeps every metric in order).

use std::time::Duration;

use serde::Serialize;

/// Where a proving request's time went, in milliseconds; any phase may be missing (a request
/// refused before it queued has no `witness`; the reference service sends no header at all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ServerTiming {
    pub queue_ms: Option<f64>,
    pub witness_ms: Option<f64>,
    pub prove_ms: Option<f64>,
    pub total_ms: Option<f64>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl ServerTiming {
    /// The phases the server measured.
    pub fn from_durations(
        queue: Option<Duration>,
        witness: Option<Duration>,
        prove: Option<Duration>,
        total: Duration,
    ) -> Self {
        ServerTiming {
            queue_ms: queue.map(ms),
            witness_ms: witness.map(ms),
            prove_ms: prove.map(ms),
            total_ms: Some(ms(total)),
        }
    }

    /// The phases in the order the server writes them.
    fn phases(&self) -> [(&'static str, Option<f64>); 4] {
        [
            ("queue", self.queue_ms),
            ("witness", self.witness_ms),
            ("prove", self.prove_ms),
            ("total", self.total_ms),
        ]
    }

    /// The header value: the known phases, in order, to 0.1 ms.
    pub fn header_value(&self) -> String {
        self.phases()
            .iter()
            .filter_map(|(name, dur)| dur.map(|d| format!("{name};dur={d:.1}")))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Time the server accounts for: `total` if sent, else the sum of the parts it sent.
    pub fn internal_ms(&self) -> Option<f64> {
        if self.total_ms.is_some() {
            return self.total_ms;
        }
        let parts = [self.queue_ms, self.witness_ms, self.prove_ms];
        if parts.iter().all(Option::is_none) {
            return None;
        }
        Some(parts.iter().flatten().sum())
    }

    pub fn is_empty(&self) -> bool {
        *self == ServerTiming::default()
    }
}

/// Splits on `sep` outside double-quoted strings (with `\` escapes inside quotes).
fn split_unquoted(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut in_q, mut esc) = (0, false, false);
    for (i, c) in s.char_indices() {
        if esc {
            esc = false;
        } else if in_q && c == '\\' {
            esc = true;
        } else if c == '"' {
            in_q = !in_q;
        } else if c == sep && !in_q {
            out.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    out.push(&s[start..]);
    out
}

/// All `(name, dur)` metrics of one header value, in order; metrics without a `dur` get `None`.
pub fn parse_metrics(value: &str) -> Vec<(String, Option<f64>)> {
    let mut out = Vec::new();
    for metric in split_unquoted(value, ',') {
        let mut parts = split_unquoted(metric, ';').into_iter();
        let name = parts.next().unwrap_or("").trim();
        if name.is_empty() {
            continue;
        }
        let mut dur = None;
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                if k.trim().eq_ignore_ascii_case("dur") {
                    dur = v
                        .trim()
                        .trim_matches('"')
                        .parse::<f64>()
                        .ok()
                        .filter(|d| d.is_finite());
                }
            }
        }
        out.push((name.to_ascii_lowercase(), dur));
    }
    out
}

/// Parses every `Server-Timing` header value of a response (several headers combine).
pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> ServerTiming {
    let mut t = ServerTiming::default();
    for v in values {
        for (name, dur) in parse_metrics(v) {
            let slot = match name.as_str() {
                "queue" | "queue_wait" | "wait" => &mut t.queue_ms,
                "witness" => &mut t.witness_ms,
                "prove" => &mut t.prove_ms,
                "total" => &mut t.total_ms,
                _ => continue,
            };
            if dur.is_some() {
                *slot = dur;
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_server_format() {
        let t = parse(["queue;dur=12.3, witness;dur=40.1, prove;dur=610.4, total;dur=663.0"]);
        assert_eq!(t.queue_ms, Some(12.3));
        assert_eq!(t.witness_ms, Some(40.1));
        assert_eq!(t.prove_ms, Some(610.4));
        assert_eq!(t.total_ms, Some(663.0));
        assert_eq!(t.internal_ms(), Some(663.0));
    }

    #[test]
    fn writes_what_it_reads() {
        let t = ServerTiming::from_durations(
            Some(Duration::from_micros(12_340)),
            None,
            Some(Duration::from_millis(610)),
            Duration::from_micros(663_049),
        );
        let value = t.header_value();
        assert_eq!(value, "queue;dur=12.3, prove;dur=610.0, total;dur=663.0");
        let back = parse([value.as_str()]);
        assert_eq!(
            (back.queue_ms, back.witness_ms, back.prove_ms, back.total_ms),
            (Some(12.3), None, Some(610.0), Some(663.0))
        );
    }

    #[test]
    fn tolerates_spacing_case_desc_and_order() {
        let t = parse([r#"prove ; DUR = 5 ; desc="a, b; c", Queue;desc="x";dur=0"#]);
        assert_eq!(t.prove_ms, Some(5.0));
        assert_eq!(t.queue_ms, Some(0.0));
        assert_eq!(t.total_ms, None);
        assert_eq!(t.internal_ms(), Some(5.0));
    }

    #[test]
    fn combines_several_headers_and_ignores_unknown() {
        let t = parse(["queue;dur=1", "db;dur=9, prove;dur=2", "cache;desc=hit"]);
        assert_eq!(t.queue_ms, Some(1.0));
        assert_eq!(t.prove_ms, Some(2.0));
        assert_eq!(t.internal_ms(), Some(3.0));
    }

    #[test]
    fn missing_or_garbage_gives_none() {
        assert!(parse([]).is_empty());
        assert!(parse(["", " , ,"]).is_empty());
        let t = parse(["prove;dur=abc, total;dur=NaN, witness"]);
        assert!(t.is_empty());
        assert_eq!(t.internal_ms(), None);
    }

    #[test]
    fn lists_metrics_in_order() {
        let m = parse_metrics("a;dur=1, b, c;dur=2.5");
        assert_eq!(
            m,
            vec![
                ("a".into(), Some(1.0)),
                ("b".into(), None),
                ("c".into(), Some(2.5))
            ]
        );
    }
}
