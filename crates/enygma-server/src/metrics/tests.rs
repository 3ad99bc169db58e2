use std::collections::BTreeMap;

use super::*;

#[test]
fn exports_the_build_version_and_commit() {
    let text = Metrics::new().render(
        false,
        false,
        QueueGauges::default(),
        QueueGauges::default(),
        0,
    );
    let line = format!(
        "enygma_build_info{{version=\"{}\",commit=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        enygma_build_info::COMMIT
    );
    assert!(
        text.lines().any(|l| l == line),
        "missing {line:?} in\n{text}"
    );
    assert!(text.contains("# TYPE enygma_build_info gauge"));
}

#[test]
fn renders_prometheus_text() {
    let m = Metrics::new();
    m.request("generateProofTransfer", Some(6), 200);
    m.request("generateProofTransfer", None, 400);
    m.observe_queue_wait(QueueKind::Prove, Duration::from_millis(3));
    let transfer6 = statements::instance("transfer", Some(6)).unwrap();
    let deposit2 = statements::instance("deposit", Some(2)).unwrap();
    m.observe_proof(
        transfer6,
        Duration::from_millis(40),
        Duration::from_millis(600),
    );
    m.proof_started();
    m.proof_started();
    m.proof_finished();
    m.queue(QueueKind::Prove)
        .shed
        .fetch_add(5, Ordering::Relaxed);
    m.auth_rejected(AuthScope::Metrics, AuthFailure::Invalid);
    let text = m.render(
        true,
        false,
        QueueGauges {
            queued: 2,
            queue_capacity: 8,
            max_inflight: 2,
            service_time: Some(Duration::from_millis(350)),
        },
        QueueGauges::default(),
        0,
    );
    for line in [
        "enygma_ready 1",
        "enygma_http_requests_total{route=\"generateProofTransfer\",k=\"6\",status=\"200\"} 1",
        "enygma_http_requests_total{route=\"generateProofTransfer\",k=\"none\",status=\"400\"} 1",
        "enygma_proofs_in_flight 1",
        "enygma_proofs_in_flight_peak 2",
        "enygma_queue_depth{queue=\"prove\"} 2",
        "enygma_shed_total{queue=\"prove\"} 5",
        "enygma_queue_wait_seconds_bucket{queue=\"prove\",le=\"0.005\"} 1",
        "enygma_queue_wait_seconds_bucket{queue=\"prove\",le=\"0.001\"} 0",
        "enygma_prove_seconds_bucket{statement=\"transfer\",k=\"6\",le=\"1\"} 1",
        "enygma_prove_seconds_bucket{statement=\"transfer\",k=\"6\",le=\"+Inf\"} 1",
        "enygma_prove_seconds_count{statement=\"transfer\",k=\"6\"} 1",
        "enygma_witness_seconds_count{statement=\"transfer\",k=\"6\"} 1",
        // The statements are no longer mixed: a deposit of the same k has its own series.
        "enygma_prove_seconds_count{statement=\"deposit\",k=\"6\"} 0",
        "enygma_service_time_estimate_seconds{queue=\"prove\"} 0.35",
        "enygma_auth_rejected_total{scope=\"metrics\",reason=\"invalid\"} 1",
        "enygma_auth_rejected_total{scope=\"api\",reason=\"missing\"} 0",
        "enygma_connections_open 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    // Every sample line is `name{labels} value` or `name value`.
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let value = l.rsplit(' ').next().unwrap();
        assert!(value.parse::<f64>().is_ok(), "bad sample {l:?}");
    }
    // A server hosting one instance renders that one's histograms only.
    let one = Metrics::for_instances(&[deposit2]);
    one.observe_proof(
        transfer6,
        Duration::from_millis(1),
        Duration::from_millis(2),
    );
    let text = one.render(
        true,
        false,
        QueueGauges::default(),
        QueueGauges::default(),
        0,
    );
    let series: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("enygma_prove_seconds_count"))
        .collect();
    assert_eq!(
        series,
        ["enygma_prove_seconds_count{statement=\"deposit\",k=\"2\"} 0"]
    );
}

/// Every family `/metrics` has, with its type: the interface deploy/'s rules, dashboards and
/// triggers and the load generator read. A rename here is a breaking change for them.
const FAMILIES: &[(&str, &str)] = &[
    ("enygma_abandoned_total", "counter"),
    ("enygma_auth_failures_limited_total", "counter"),
    ("enygma_auth_rejected_total", "counter"),
    ("enygma_build_info", "gauge"),
    ("enygma_caller_admitted_total", "counter"),
    ("enygma_caller_proofs_in_flight", "gauge"),
    ("enygma_caller_queued", "gauge"),
    ("enygma_caller_shed_total", "counter"),
    ("enygma_caller_weight", "gauge"),
    ("enygma_check_pending", "gauge"),
    ("enygma_check_refused_total", "counter"),
    ("enygma_connection_waits_total", "counter"),
    ("enygma_connections_accepted_total", "counter"),
    ("enygma_connections_aged_out_total", "counter"),
    ("enygma_connections_closed_total", "counter"),
    ("enygma_connections_open", "gauge"),
    ("enygma_connections_refused_total", "counter"),
    ("enygma_connections_timed_out_total", "counter"),
    ("enygma_connections_unauthenticated", "gauge"),
    ("enygma_draining", "gauge"),
    ("enygma_http_requests_total", "counter"),
    ("enygma_idempotency_bytes", "gauge"),
    ("enygma_idempotency_conflicts_total", "counter"),
    ("enygma_idempotency_entries", "gauge"),
    ("enygma_idempotency_evictions_total", "counter"),
    ("enygma_idempotency_memory_budget_bytes", "gauge"),
    ("enygma_idempotency_replays_total", "counter"),
    ("enygma_idempotency_waits_total", "counter"),
    ("enygma_key_info", "gauge"),
    ("enygma_key_reloads_total", "counter"),
    ("enygma_max_inflight", "gauge"),
    ("enygma_proof_panics_total", "counter"),
    ("enygma_proofs_discarded_total", "counter"),
    ("enygma_proofs_in_flight", "gauge"),
    ("enygma_proofs_in_flight_peak", "gauge"),
    ("enygma_proofs_started_total", "counter"),
    ("enygma_prove_seconds", "histogram"),
    ("enygma_queue_capacity", "gauge"),
    ("enygma_queue_depth", "gauge"),
    ("enygma_queue_timeouts_total", "counter"),
    ("enygma_queue_wait_seconds", "histogram"),
    ("enygma_ready", "gauge"),
    ("enygma_service_time_estimate_seconds", "gauge"),
    ("enygma_shed_total", "counter"),
    ("enygma_table_build_seconds", "histogram"),
    ("enygma_table_builds_finished_total", "counter"),
    ("enygma_table_builds_started_total", "counter"),
    ("enygma_table_bytes", "gauge"),
    ("enygma_table_evictions_total", "counter"),
    ("enygma_table_memory_budget_bytes", "gauge"),
    ("enygma_table_proofs_total", "counter"),
    ("enygma_tls_handshake_failures_total", "counter"),
    ("enygma_tls_reloads_total", "counter"),
    ("enygma_witness_seconds", "histogram"),
];

/// The whole page the `/metrics` handler serves, before any event: one hosted instance, a
/// queue that sheds by expected wait, a caller, a key.
fn page_of_a_fresh_server() -> String {
    let transfer6 = statements::instance("transfer", Some(6)).unwrap();
    let m = Metrics::for_instances(&[transfer6]);
    m.request("/healthcheck", None, 200);
    let mut text = m.render(
        true,
        false,
        QueueGauges {
            service_time: Some(Duration::from_millis(350)),
            ..QueueGauges::default()
        },
        QueueGauges::default(),
        0,
    );
    render_caller_shares(
        &mut text,
        vec![CallerShare {
            caller: "anonymous".to_string(),
            queued: 0,
            in_flight: 0,
            admitted: 0,
            shed: 0,
            weight: 1,
        }],
    );
    render_key_info(
        &mut text,
        &[crate::backend::LoadedKey {
            instance: transfer6,
            record: enygma_prover::keys::KeyRecord::DEVELOPMENT,
            sha256: [0xab; 32],
        }],
    );
    text
}

#[test]
fn every_family_keeps_its_name_and_type() {
    let text = page_of_a_fresh_server();
    let mut families: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split_once(' ').unwrap())
        .collect();
    families.sort();
    assert_eq!(families, FAMILIES, "{text}");
    // Each family has its HELP, in the wording written here (the registry adds the final
    // period of the registered ones; a doubled one would mean both did).
    for (name, _) in FAMILIES {
        let help = format!("# HELP {name} ");
        let line = text.lines().find(|l| l.starts_with(&help));
        let line = line.unwrap_or_else(|| panic!("no HELP for {name}"));
        assert!(line.ends_with('.') && !line.ends_with(".."), "{line}");
    }
}

#[test]
fn samples_are_named_as_their_family_in_the_0_0_4_format() {
    let text = page_of_a_fresh_server();
    let types: BTreeMap<&str, &str> = FAMILIES.iter().copied().collect();
    for sample in enygma_formats::prometheus::parse(&text) {
        let name = sample.name.as_str();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                let family = name.strip_suffix(suffix)?;
                (types.get(family) == Some(&"histogram")).then_some(family)
            })
            .unwrap_or(name);
        assert!(types.contains_key(family), "{name} is in no family");
    }
    // Nothing of OpenMetrics: no `# EOF`, `# UNIT` or `_created` series.
    assert!(!text.contains("# EOF") && !text.contains("# UNIT") && !text.contains("_created"));
    // Bucket bounds are written as before: `le="1"`, not `le="1.0"`.
    for le in ["0.001", "0.35", "1", "60", "+Inf"] {
        let bucket = format!("enygma_queue_wait_seconds_bucket{{queue=\"prove\",le=\"{le}\"}}");
        assert_eq!(text.contains(&bucket), le != "0.35", "{bucket} in\n{text}");
    }
    assert!(text.contains("enygma_service_time_estimate_seconds{queue=\"prove\"} 0.35"));
    assert!(!text.contains("enygma_service_time_estimate_seconds{queue=\"verify\"}"));
    assert!(text.contains(
        &format!("enygma_key_info{{statement=\"transfer\",k=\"6\",origin=\"development-seed\",reduction=\"libsnark\",sha256=\"{}\"}} 1", "ab".repeat(32))
    ));
    assert!(text.contains("enygma_caller_weight{caller=\"anonymous\"} 1"));
}

#[test]
fn table_series_count_hosted_instances_only() {
    let transfer6 = statements::instance("transfer", Some(6)).unwrap();
    let deposit2 = statements::instance("deposit", Some(2)).unwrap();
    let m = Metrics::for_instances(&[transfer6]);
    m.table_budget(1 << 20);
    for instance in [transfer6, deposit2] {
        m.table_proof(instance, false);
        m.table_proof(instance, true);
        m.table_build_started(instance);
        m.table_build_finished(instance, Duration::from_secs(3), BuildOutcome::Built);
        m.table_bytes(instance, 4096);
    }
    m.table_evicted(transfer6);
    let text = m.render(false, false, Default::default(), Default::default(), 0);
    for line in [
        "enygma_table_memory_budget_bytes 1048576",
        "enygma_table_proofs_total{statement=\"transfer\",k=\"6\",tables=\"hit\"} 1",
        "enygma_table_proofs_total{statement=\"transfer\",k=\"6\",tables=\"miss\"} 1",
        "enygma_table_builds_started_total{statement=\"transfer\",k=\"6\"} 1",
        "enygma_table_builds_finished_total{statement=\"transfer\",k=\"6\",outcome=\"built\"} 1",
        "enygma_table_builds_finished_total{statement=\"transfer\",k=\"6\",outcome=\"read\"} 0",
        "enygma_table_builds_finished_total{statement=\"transfer\",k=\"6\",outcome=\"failed\"} 0",
        "enygma_table_build_seconds_bucket{statement=\"transfer\",k=\"6\",le=\"5\"} 1",
        "enygma_table_evictions_total{statement=\"transfer\",k=\"6\"} 1",
        "enygma_table_bytes{statement=\"transfer\",k=\"6\"} 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    assert!(!text.contains("statement=\"deposit\""), "{text}");
}
