//! `enygma-loadgen retries` against the real `enygma-server` on 127.0.0.1, scaled down: one
//! proof at a time (`--max-inflight 1`), the smallest statement instance (ownership-721), a
//! gateway with 6 distinct requests in flight that abandons an attempt after about two proofs
//! without an answer and sends it again. An answer then takes up to 6 proofs, so most distinct
//! requests are sent more than once; with idempotency keys each is still proved once. The proof
//! time is measured on the server first, so the timing holds on a slow or busy machine.
//!
//! Needs the server binary (`target/debug/enygma-server` or `ENYGMA_SERVER_BIN`) and the
//! repository's `keys/` (the server creates ownership-721's development key if it is missing).

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use enygma_loadgen::HttpClient;

const STEM: &str = "ownership-721";

#[test]
fn with_keys_a_retrying_gateway_gets_one_proof_per_distinct_request() {
    let _g = serial();
    server_bin(); // fail first, and clearly, if the server is not built
    let dir = scratch("retries");
    let requests = request_files(&dir, STEM);
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let _server = start_server(&dir, port, &["--circuits", STEM, "--max-inflight", "1"]);
    let client = HttpClient::new(&url, Duration::from_secs(120)).unwrap();
    let proof = proof_time(&client, &requests, STEM);
    let retry = (proof * 2).max(Duration::from_millis(50));
    // About 30 distinct requests' worth of proofs, bounded on a slow machine.
    let duration = (proof * 30).clamp(Duration::from_secs(2), Duration::from_secs(20));
    let out = dir.join("out");
    let o = run_bounded(
        Command::new(loadgen_bin())
            .args(["retries", "--url", &url, "--endpoint", STEM])
            .args([
                "--concurrency",
                "6",
                "--max-retries",
                "5",
                "--timeout",
                "120s",
            ])
            .args(["--prime", "0", "--idempotency-keys"])
            .arg("--retry-after-timeout")
            .arg(format!("{}ms", retry.as_millis()))
            .arg("--duration")
            .arg(format!("{}ms", duration.as_millis()))
            .arg("--requests")
            .arg(&requests)
            .arg("--out")
            .arg(&out),
        Duration::from_secs(300),
    );
    assert_success(&o, "enygma-loadgen retries --idempotency-keys");
    let r = read_report(&out);
    eprintln!("proof {proof:?}, retry after {retry:?}: {r}");
    let distinct = r["distinct_requests"].as_u64().unwrap();
    assert!(distinct >= 6, "{r}");
    assert_eq!(r["proved"].as_u64(), Some(distinct), "{r}");
    assert_eq!(r["failed"], serde_json::json!({}), "{r}");
    // The gateway did send requests again, and got the answers of their first attempts ...
    assert!(r["attempts"].as_u64().unwrap() > distinct, "no retry: {r}");
    assert!(r["replayed"].as_u64().unwrap() > 0, "{r}");
    // ... and the server proved each distinct request once.
    assert_eq!(r["proofs_computed"].as_f64(), Some(distinct as f64), "{r}");
    assert_eq!(r["proofs_per_distinct_request"].as_f64(), Some(1.0), "{r}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| yes |"), "{md}");
}
