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

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use enygma_loadgen::{generate_pool, percentile, HttpClient};
use enygma_prover::statements;

const STEM: &str = "ownership-721";

/// Four distinct requests of the smallest instance, as files for `--requests`.
fn request_files(dir: &Path) -> PathBuf {
    let out = dir.join("requests");
    std::fs::create_dir_all(&out).unwrap();
    let instance = statements::by_stem(STEM).expect("the instance is in the registry");
    for (i, body) in generate_pool(instance, 4, 1).unwrap().iter().enumerate() {
        std::fs::write(out.join(format!("{STEM}-{i}.json")), body).unwrap();
    }
    out
}

/// One proof's time on this server now: the median server time (without queueing) of requests
/// sent one at a time, after one that warms the server up.
fn proof_time(url: &str, requests: &Path) -> Duration {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = HttpClient::new(url, Duration::from_secs(120)).unwrap();
    let uri = client
        .uri(&statements::by_stem(STEM).unwrap().prove_path())
        .unwrap();
    let body = std::fs::read(requests.join(format!("{STEM}-0.json"))).unwrap();
    let mut times: Vec<f64> = rt.block_on(async {
        let mut t = Vec::new();
        for i in 0..4 {
            let r = client.post_json(&uri, body.clone().into()).await;
            assert!(r.status.is_ok(), "calibration request: {:?}", r.status);
            if i > 0 {
                t.push(r.timing.total_ms.unwrap() - r.timing.queue_ms.unwrap_or(0.0));
            }
        }
        t
    });
    times.sort_by(f64::total_cmp);
    Duration::from_secs_f64(percentile(&times, 50.0).unwrap() / 1e3)
}

#[test]
fn with_keys_a_retrying_gateway_gets_one_proof_per_distinct_request() {
    let _g = serial();
    server_bin(); // fail first, and clearly, if the server is not built
    let dir = scratch("retries");
    let requests = request_files(&dir);
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let _server = start_server(&dir, port, &["--circuits", STEM, "--max-inflight", "1"]);
    let proof = proof_time(&url, &requests);
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
