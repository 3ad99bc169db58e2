//! Parsing the `Server-Timing` response header (W3C Server Timing):
//! `queue;dur=12.3, witness;dur=40.1, prove;dur=610.4, total;dur=663.0` (milliseconds).

use serde::Serialize;

/// The phases the Enygma server reports, in milliseconds; any may be missing (e.g. the
/// reference service sends no header at all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ServerTiming {
    pub queue_ms: Option<f64>,
    pub witness_ms: Option<f64>,
    pub prove_ms: Option<f64>,
    pub total_ms: Option<f64>,
}

impl ServerTiming {
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
