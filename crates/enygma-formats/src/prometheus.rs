//! Samples of the Prometheus text exposition format (what `/metrics` answers): parsing a page,
//! selecting series by name and labels.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

fn parse_labels(s: &str) -> Option<BTreeMap<String, String>> {
    // s is the text between `{` and `}`.
    let mut out = BTreeMap::new();
    let mut chars = s.chars().peekable();
    loop {
        while matches!(chars.peek(), Some(c) if c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Some(out);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while matches!(chars.peek(), Some(c) if c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return None;
        }
        while matches!(chars.peek(), Some(c) if c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('"') {
            return None;
        }
        let mut val = String::new();
        loop {
            match chars.next()? {
                '\\' => match chars.next()? {
                    'n' => val.push('\n'),
                    c => val.push(c),
                },
                '"' => break,
                c => val.push(c),
            }
        }
        out.insert(key, val);
    }
}

/// Parses the text format; comment lines and unparsable lines are skipped.
pub fn parse(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, labels, rest) = if let Some(open) = line.find('{') {
            let Some(close) = line.rfind('}') else {
                continue;
            };
            if close < open {
                continue;
            }
            let Some(labels) = parse_labels(&line[open + 1..close]) else {
                continue;
            };
            (line[..open].trim(), labels, &line[close + 1..])
        } else {
            let Some((n, r)) = line.split_once(char::is_whitespace) else {
                continue;
            };
            (n, BTreeMap::new(), r)
        };
        let Some(v) = rest.split_whitespace().next() else {
            continue;
        };
        let value = match v {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => match v.parse::<f64>() {
                Ok(x) => x,
                Err(_) => continue,
            },
        };
        out.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    out
}

/// A selector like `name` or `name{label="value",other="x"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

impl Selector {
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if let Some(open) = s.find('{') {
            let close = s
                .rfind('}')
                .ok_or_else(|| format!("unclosed '{{' in {s:?}"))?;
            let labels = parse_labels(&s[open + 1..close])
                .ok_or_else(|| format!("bad label matchers in {s:?}"))?;
            Ok(Self {
                name: s[..open].trim().to_string(),
                labels,
            })
        } else {
            Ok(Self {
                name: s.to_string(),
                labels: BTreeMap::new(),
            })
        }
    }

    /// The sum of the samples named `name` whose labels include every matcher.
    pub fn sum(&self, samples: &[Sample]) -> Option<f64> {
        let mut found = None;
        for s in samples {
            if s.name == self.name && self.labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)) {
                *found.get_or_insert(0.0) += s.value;
            }
        }
        found
    }
}

/// The value of the one series of `text` written exactly as `series` (its name and its whole
/// label set, in any order), e.g. `enygma_shed_total{queue="prove"}`.
pub fn value(text: &str, series: &str) -> Option<f64> {
    let wanted = Selector::parse(series).ok()?;
    parse(text)
        .into_iter()
        .find(|s| s.name == wanted.name && s.labels == wanted.labels)
        .map(|s| s.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
# HELP enygma_http_requests_total Requests by route and status.
# TYPE enygma_http_requests_total counter
enygma_http_requests_total{route="/generateProofTransfer-6",status="200"} 17
enygma_http_requests_total{route="/generateProofTransfer-6",status="503"} 2
enygma_http_requests_total{route="/generateProofTransfer-2",status="200"} 5
enygma_http_requests_total{route="/metrics",status="200"} 40
enygma_inflight 3
enygma_prove_seconds_bucket{le="+Inf"} 22 1700000000000
weird{a="x\"y,z",b="\\"} 1.5e3
garbage line here
"#;

    #[test]
    fn parses_samples() {
        let s = parse(TEXT);
        assert_eq!(s.len(), 7);
        assert_eq!(s[0].name, "enygma_http_requests_total");
        assert_eq!(s[0].labels["status"], "200");
        assert_eq!(s[0].value, 17.0);
        assert_eq!(s[4].name, "enygma_inflight");
        assert!(s[4].labels.is_empty());
        assert_eq!(s[5].value, 22.0);
        assert_eq!(s[6].labels["a"], "x\"y,z");
        assert_eq!(s[6].labels["b"], "\\");
        assert_eq!(s[6].value, 1500.0);
    }

    #[test]
    fn selectors_sum_and_values_match_exactly() {
        let s = parse(TEXT);
        let ok = Selector::parse(r#"enygma_http_requests_total{status="200"}"#).unwrap();
        assert_eq!(ok.sum(&s), Some(62.0));
        assert_eq!(Selector::parse("nope").unwrap().sum(&s), None);
        assert!(Selector::parse("x{a=\"1\"").is_err());
        assert_eq!(
            value(
                TEXT,
                r#"enygma_http_requests_total{status="503",route="/generateProofTransfer-6"}"#
            ),
            Some(2.0)
        );
        // A subset of the labels is another series.
        assert_eq!(
            value(TEXT, r#"enygma_http_requests_total{status="503"}"#),
            None
        );
        assert_eq!(value(TEXT, "enygma_inflight"), Some(3.0));
    }
}
