//! Finding how many requests the server says it answered with 200 (the "served" counter) in
//! its Prometheus samples ([`enygma_formats::prometheus`]), to cross-check the load generator's
//! counts.

pub use enygma_formats::prometheus::{parse, Sample, Selector};

const STATUS_LABELS: [&str; 3] = ["status", "code", "status_code"];
const ROUTE_LABELS: [&str; 5] = ["route", "path", "endpoint", "handler", "uri"];

fn route_matches(label: &str, endpoint: &str) -> bool {
    let norm = |s: &str| s.trim_start_matches('/').to_string();
    let (l, e) = (norm(label), norm(endpoint));
    if l == e {
        return true;
    }
    // Templated routes: `generateProofTransfer-{k}` or `generateProofTransfer-:k` match `-6`.
    if let Some(i) = l.find(['{', ':', '*']) {
        return i > 0 && e.starts_with(&l[..i]);
    }
    false
}

/// The `k` label of `endpoint`'s requests: its registry instance's size, `none` for a
/// statement without sizes (`/ownership-721`); for a path outside the registry, the number
/// after its last `-` (`/generateProofTransfer-6` → `6`), if any.
fn endpoint_k(endpoint: &str) -> Option<String> {
    if let Some(instance) =
        enygma_prover::statements::match_path(endpoint).and_then(|m| m.instance().ok())
    {
        return Some(
            instance
                .k()
                .map_or_else(|| "none".to_string(), |k| k.to_string()),
        );
    }
    let (_, k) = endpoint.rsplit_once('-')?;
    (!k.is_empty() && k.chars().all(|c| c.is_ascii_digit())).then(|| k.to_string())
}

/// Requests answered with 200 for `endpoint`, found heuristically when no selector is given:
/// counters named `*requests_total` with a `status`/`code` label equal to `200`, restricted to
/// the endpoint when they carry a route label. Proof-specific counters (`*proofs_total`) with a
/// status/outcome label are used only if no request counter matches.
pub fn served_ok(samples: &[Sample], endpoint: &str, selector: Option<&Selector>) -> Option<f64> {
    if let Some(sel) = selector {
        return sel.sum(samples);
    }
    let pick = |name_ok: &dyn Fn(&str) -> bool, ok_values: &[&str]| -> Option<f64> {
        let mut found: Option<f64> = None;
        for s in samples {
            if !name_ok(&s.name) {
                continue;
            }
            let status_ok = STATUS_LABELS
                .iter()
                .chain(["outcome", "result"].iter())
                .any(|k| {
                    s.labels
                        .get(*k)
                        .is_some_and(|v| ok_values.contains(&v.as_str()))
                });
            if !status_ok {
                continue;
            }
            let route = ROUTE_LABELS.iter().find_map(|k| s.labels.get(*k));
            if let Some(r) = route {
                if !route_matches(r, endpoint) {
                    continue;
                }
            }
            // enygma-server labels the templated route with a separate `k`.
            if let (Some(k), Some(ek)) = (s.labels.get("k"), endpoint_k(endpoint)) {
                if *k != ek {
                    continue;
                }
            }
            *found.get_or_insert(0.0) += s.value;
        }
        found
    };
    pick(&|n: &str| n.ends_with("requests_total"), &["200"]).or_else(|| {
        pick(
            &|n: &str| n.ends_with("proofs_total"),
            &["200", "ok", "success"],
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only what the served-counter heuristic looks at; the exposition format itself is
    /// tested by its owner, `enygma_formats::prometheus`.
    const TEXT: &str = r#"
enygma_http_requests_total{route="/generateProofTransfer-6",status="200"} 17
enygma_http_requests_total{route="/generateProofTransfer-6",status="503"} 2
enygma_http_requests_total{route="/generateProofTransfer-2",status="200"} 5
enygma_http_requests_total{route="/metrics",status="200"} 40
enygma_inflight 3
"#;

    #[test]
    fn finds_served_by_heuristic_and_selector() {
        let s = parse(TEXT);
        assert_eq!(served_ok(&s, "/generateProofTransfer-6", None), Some(17.0));
        assert_eq!(served_ok(&s, "/generateProofTransfer-2", None), Some(5.0));
        let sel = Selector::parse(r#"enygma_http_requests_total{status="200"}"#).unwrap();
        assert_eq!(served_ok(&s, "/x", Some(&sel)), Some(62.0));
        let none = Selector::parse("nope").unwrap();
        assert_eq!(served_ok(&s, "/x", Some(&none)), None);
    }

    #[test]
    fn enygma_server_format() {
        // As rendered by crates/enygma-server/src/metrics.rs.
        let s = parse(
            "# TYPE enygma_http_requests_total counter\n\
             enygma_http_requests_total{route=\"/generateProofTransfer-{k}\",k=\"6\",status=\"200\"} 12\n\
             enygma_http_requests_total{route=\"/generateProofTransfer-{k}\",k=\"6\",status=\"503\"} 3\n\
             enygma_http_requests_total{route=\"/generateProofTransfer-{k}\",k=\"2\",status=\"200\"} 5\n\
             enygma_http_requests_total{route=\"/verifyProofTransfer-{k}\",k=\"6\",status=\"200\"} 7\n\
             enygma_http_requests_total{route=\"/metrics\",k=\"none\",status=\"200\"} 40\n",
        );
        assert_eq!(served_ok(&s, "/generateProofTransfer-6", None), Some(12.0));
        assert_eq!(served_ok(&s, "/generateProofTransfer-2", None), Some(5.0));
        assert_eq!(served_ok(&s, "/generateProofTransfer-4", None), None);
        assert_eq!(endpoint_k("/generateProofTransfer-6").as_deref(), Some("6"));
        // A statement without sizes is labelled k="none", whatever digits its path ends with.
        assert_eq!(endpoint_k("/ownership-721").as_deref(), Some("none"));
        assert_eq!(endpoint_k("/join-split-enygma").as_deref(), Some("none"));
        assert_eq!(endpoint_k("/other-route-12").as_deref(), Some("12"));
        let dvp = parse(
            "enygma_http_requests_total{route=\"/ownership-721\",k=\"none\",status=\"200\"} 3\n\
             enygma_http_requests_total{route=\"/join-split-1155\",k=\"none\",status=\"200\"} 2\n",
        );
        assert_eq!(served_ok(&dvp, "/ownership-721", None), Some(3.0));
        assert_eq!(served_ok(&dvp, "/join-split-1155", None), Some(2.0));
    }

    #[test]
    fn templated_routes_and_unlabelled_counters() {
        let s = parse(
            "http_requests_total{path=\"/generateProofTransfer-{k}\",code=\"200\"} 4\n\
             http_requests_total{path=\"/readyz\",code=\"200\"} 9\n",
        );
        assert_eq!(served_ok(&s, "/generateProofTransfer-6", None), Some(4.0));
        let s =
            parse("app_requests_total{status=\"200\"} 3\napp_requests_total{status=\"500\"} 1\n");
        assert_eq!(served_ok(&s, "/generateProofTransfer-6", None), Some(3.0));
        let s = parse(
            "enygma_proofs_total{outcome=\"ok\"} 8\nenygma_proofs_total{outcome=\"error\"} 1\n",
        );
        assert_eq!(served_ok(&s, "/generateProofTransfer-6", None), Some(8.0));
        assert_eq!(served_ok(&parse("x 1\n"), "/a", None), None);
    }
}
