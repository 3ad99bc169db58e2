//! Acceptance tests of the service over real HTTP on 127.0.0.1: the real `enygma-server` binary with
//! the real prover and the repository's `keys/` directory (keys are created there on first use).
//!
//! Every wait is bounded; the servers listen on 127.0.0.1 with an ephemeral port, and the tests
//! run one at a time (proofs need the whole machine for the timing assertions).

// Each test has its own runtime; the std mutex only serialises the tests' threads.
#![allow(clippy::await_holding_lock)]

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::http::{self, get, post, Resp};
use enygma_formats::prometheus::value as metric;
use enygma_formats::server_timing::{parse_metrics as server_timing, ServerTiming};

/// Bound on key loading (and, the first time, key creation) at startup.
const READY_TIMEOUT: Duration = Duration::from_secs(900);
/// The server is killed (and the test fails) if its resident memory passes this while it loads
/// keys: the machine is shared. Override with `ENYGMA_TEST_MAX_RSS_MB`.
const DEFAULT_MAX_RSS_MB: u64 = 10_000;
/// Bound on any one proving request.
const PROVE_TIMEOUT: Duration = Duration::from_secs(180);

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The reference's sample requests: `$ENYGMA_REFERENCE_DIR/requests`, else `shared/reference`
/// beside the repository.
fn sample(name: &str) -> Vec<u8> {
    let dir = std::env::var_os("ENYGMA_REFERENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_dir().join("../shared/reference"));
    let path = dir.join("requests").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read sample {}: {e}", path.display()))
}

fn secret_of(body: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    let s = v["secret_key"].as_str().unwrap().to_owned();
    assert!(s.len() > 10, "unexpectedly short secret key");
    s
}

struct Server {
    child: Child,
    addr: SocketAddr,
    /// The admin listener (probes and `/metrics`, plain HTTP).
    admin: SocketAddr,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts the binary on 127.0.0.1:0 and waits until `/readyz` answers 200.
    async fn start(extra: &[&str]) -> Server {
        let mut server = Server::spawn(extra);
        server.wait_ready().await;
        server
    }

    /// Starts the binary on 127.0.0.1:0 (its admin listener too) and waits until it logs both
    /// addresses.
    fn spawn(extra: &[&str]) -> Server {
        Server::spawn_in(&repo_dir().join("keys"), extra)
    }

    /// [`Server::start`] with the keys in `keys` instead of the repository's.
    async fn start_in(keys: &Path, extra: &[&str]) -> Server {
        let mut server = Server::spawn_in(keys, extra);
        server.wait_ready().await;
        server
    }

    /// [`Server::spawn`] with the keys in `keys`.
    fn spawn_in(keys: &Path, extra: &[&str]) -> Server {
        let mut child = server_command()
            .args([
                "--bind",
                "127.0.0.1",
                "--port",
                "0",
                "--admin-bind",
                "127.0.0.1:0",
                "--log-format",
                "json",
                // These tests send many bad requests from one address on purpose.
                "--bad-request-burst",
                "0",
                "--keys-dir",
            ])
            .arg(keys)
            .args(extra)
            .spawn()
            .expect("start enygma-server");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        for (i, stream) in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ]
        .into_iter()
        .enumerate()
        {
            let (lines, addr_tx) = (lines.clone(), addr_tx.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if i == 0 {
                        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                            // (is it the admin listener, its address)
                            let listener = match v["message"].as_str() {
                                Some("listening") => Some(false),
                                Some(m) if m.starts_with("admin listening") => Some(true),
                                _ => None,
                            };
                            if let Some(admin) = listener {
                                if let Some(a) = v["addr"]
                                    .as_str()
                                    .and_then(|a| a.parse::<SocketAddr>().ok())
                                {
                                    let _ = addr_tx.send((admin, a));
                                }
                            }
                        }
                    }
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let (mut addr, mut admin) = (None, None);
        while addr.is_none() || admin.is_none() {
            match addr_rx.recv_timeout(Duration::from_secs(60)) {
                Ok((true, a)) => admin = Some(a),
                Ok((false, a)) => addr = Some(a),
                Err(_) => {
                    let _ = child.kill();
                    panic!(
                        "server did not log its addresses: {:?}",
                        lines.lock().unwrap()
                    );
                }
            }
        }
        let (addr, admin) = (addr.unwrap(), admin.unwrap());
        assert!(addr.ip().is_loopback() && admin.ip().is_loopback());
        Server {
            child,
            addr,
            admin,
            lines,
        }
    }

    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        let max_rss_mb = std::env::var("ENYGMA_TEST_MAX_RSS_MB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_MAX_RSS_MB);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("server exited ({status}) before ready: {:?}", self.logs());
            }
            if let Some(rss) = rss_mb(self.child.id()) {
                if rss > max_rss_mb {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!(
                        "server stopped: {rss} MB resident while loading keys (limit {max_rss_mb} MB, \
                         ENYGMA_TEST_MAX_RSS_MB); last log lines: {:?}",
                        self.logs().iter().filter(|l| !l.contains("enygma_server::access")).rev().take(5).collect::<Vec<_>>()
                    );
                }
            }
            if let Ok(r) = get(self.addr, "/readyz").await {
                if r.status == 200 {
                    return;
                }
                assert_eq!(r.status, 503, "{}", r.body);
            }
            assert!(Instant::now() < deadline, "not ready in {READY_TIMEOUT:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn logs(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    async fn prove(&self, k: usize, body: &[u8]) -> Resp {
        post(
            self.addr,
            &format!("/generateProofTransfer-{k}"),
            body,
            PROVE_TIMEOUT,
        )
        .await
        .unwrap()
    }

    /// `/metrics`, from the admin listener.
    async fn metrics(&self) -> String {
        get(self.admin, "/metrics").await.unwrap().body
    }

    async fn wait_metric(&self, series: &str, value: f64) {
        let deadline = Instant::now() + PROVE_TIMEOUT;
        while metric(&self.metrics().await, series) != Some(value) {
            assert!(Instant::now() < deadline, "{series} never reached {value}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn sighup(&self) {
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGHUP) };
        assert_eq!(rc, 0, "kill failed");
    }

    fn sigterm(&self) {
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill failed");
    }

    /// Waits (bounded) for the process to exit; returns its exit code.
    fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("server did not exit within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server with SIGTERM and checks that it exits 0.
    fn stop(mut self) -> Vec<String> {
        self.sigterm();
        assert_eq!(self.wait_exit(Duration::from_secs(120)), Some(0));
        // Let the reader threads drain the pipes.
        std::thread::sleep(Duration::from_millis(100));
        self.logs()
    }

    /// Access-log lines (one per request).
    fn access_lines(&self) -> Vec<serde_json::Value> {
        access_lines(&self.logs())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The server binary at log level info, its output piped for the test to read.
fn server_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_enygma-server"));
    cmd.env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Resident memory of a process (Linux), in MB.
fn rss_mb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024)
}

fn access_lines(logs: &[String]) -> Vec<serde_json::Value> {
    logs.iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["target"] == "enygma_server::access")
        .collect()
}

fn assert_no_secret_in(what: &str, text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!text.contains(s), "a secret key value appears in {what}");
    }
}

/// The response's `Server-Timing` phases.
fn timing(r: &Resp) -> ServerTiming {
    enygma_formats::server_timing::parse(r.header("server-timing"))
}

/// A proof response carries every phase of `Server-Timing`, in order.
fn assert_full_server_timing(r: &Resp, what: &str) {
    let phases = server_timing(r.header("server-timing").expect("Server-Timing"));
    let names: Vec<&str> = phases.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(names, ["queue", "witness", "prove", "total"], "{what}");
}

fn assert_no_secret(r: &Resp, secrets: &[&str]) {
    assert_no_secret_in("a response body", &r.body, secrets);
    for (k, v) in &r.headers {
        assert_no_secret_in(&format!("response header {k}"), v, secrets);
    }
}

/// No response and nothing in the metrics gives a secret away, and only the `proved` valid
/// requests reached the prover. Returns the metrics for the test's own counts.
async fn assert_refused_unproved_and_secret(
    server: &Server,
    responses: &[Resp],
    secrets: &[&str],
    proved: f64,
) -> String {
    for r in responses {
        assert_no_secret(r, secrets);
    }
    let m = server.metrics().await;
    assert_no_secret_in("the metrics", &m, secrets);
    assert_eq!(
        metric(&m, "enygma_proofs_started_total"),
        Some(proved),
        "invalid requests were proved"
    );
    m
}

/// Stops the server and checks that none of its log lines holds a secret; returns the lines.
fn stop_with_secret_free_logs(server: Server, secrets: &[&str]) -> Vec<String> {
    let logs = server.stop();
    for line in &logs {
        assert_no_secret_in("a log line", line, secrets);
    }
    logs
}

/// The access line of a proof has every timing.
fn assert_access_line_timed(line: &serde_json::Value) {
    for field in [
        "request_id",
        "queue_ms",
        "witness_ms",
        "prove_ms",
        "total_ms",
    ] {
        assert!(!line[field].is_null(), "access line lacks {field}: {line}");
    }
}

/// What a verify route answers for `body` (a proof response, perhaps tampered with): exactly
/// `{"valid": true}` or `{"valid": false}` with status 200, else the test fails.
async fn verdict(addr: SocketAddr, path: &str, body: &[u8]) -> bool {
    let v = post(addr, path, body, PROVE_TIMEOUT).await.unwrap();
    assert_eq!(v.status, 200, "{path}: {}", v.body);
    let json = v.json();
    let valid = json["valid"]
        .as_bool()
        .unwrap_or_else(|| panic!("{path}: {}", v.body));
    assert_eq!(json, serde_json::json!({ "valid": valid }), "{path}");
    valid
}

fn with_field(
    body: &[u8],
    f: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(body).unwrap();
    f(v.as_object_mut().unwrap());
    serde_json::to_vec(&v).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_proofs_verify_and_bad_inputs_get_their_status() {
    let _serial = serial();
    let (k6, k2) = (sample("transfer-k6.json"), sample("transfer-k2.json"));
    let (bad6, bad2) = (
        sample("bad-transfer-k6.json"),
        sample("bad-transfer-k2.json"),
    );
    let (s6, s2) = (secret_of(&k6), secret_of(&k2));
    let secrets = [s6.as_str(), s2.as_str()];
    let server = Server::start(&["--max-inflight", "1"]).await;
    let mut responses = Vec::new();

    let health = get(server.addr, "/healthcheck").await.unwrap();
    assert_eq!(
        health.json(),
        serde_json::json!({"status": "ok", "message": "Server is healthy"})
    );

    // The two real samples: 200, and the proofs verify.
    for (k, body, n_public) in [(6, &k6, 50), (2, &k2, 18)] {
        let r = server.prove(k, body).await;
        assert_eq!(r.status, 200, "k={k}: {}", r.body);
        let proof = r.json();
        assert_eq!(proof["pi_a"].as_array().unwrap().len(), 2);
        assert_eq!(proof["pi_b"].as_array().unwrap().len(), 2);
        assert_eq!(proof["pi_c"].as_array().unwrap().len(), 2);
        assert_eq!(proof["public_signal"].as_array().unwrap().len(), n_public);
        assert_full_server_timing(&r, &format!("k={k}"));
        let verify_path = format!("/verifyProofTransfer-{k}");
        assert!(
            verdict(server.addr, &verify_path, r.body.as_bytes()).await,
            "k={k}"
        );
        // A proof with a different public input does not verify.
        let mut forged = proof.clone();
        forged["public_signal"][0] = serde_json::json!("1");
        assert!(
            !verdict(server.addr, &verify_path, forged.to_string().as_bytes()).await,
            "k={k}"
        );
        responses.push(r);
    }

    // The reference's bad samples are refused, and the message names the field or the check.
    let r = server.prove(6, &bad6).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("hashed_shared_secrets[0]"), "{}", r.body);
    responses.push(r);
    let r = server.prove(2, &bad2).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.error().contains("check"), "{}", r.body);
    responses.push(r);

    // Every other bad input class.
    let cases: Vec<(String, Vec<u8>, u16, &str)> = vec![
        (
            "/generateProofTransfer-7".into(),
            k6.clone(),
            400,
            "k value not supported: must be between 2 and 6",
        ),
        (
            "/generateProofTransfer-x".into(),
            k6.clone(),
            400,
            "Invalid k parameter: must be a number",
        ),
        ("/generateProofTransfer-2".into(), k6.clone(), 400, ""), // arrays of length 6 for k=2
        (
            "/generateProofTransfer-6".into(),
            b"{\"sender_id\": ".to_vec(),
            400,
            "",
        ),
        (
            "/generateProofTransfer-6".into(),
            with_field(&k6, |m| {
                m.remove("nullifier");
            }),
            400,
            "nullifier",
        ),
        (
            "/generateProofTransfer-6".into(),
            with_field(&k6, |m| {
                m.insert("block_number".into(), "0x1f".into());
            }),
            400,
            "block_number",
        ),
        (
            "/generateProofTransfer-6".into(),
            with_field(&k6, |m| {
                m.insert("sender_tx_value".into(), "007".into());
            }),
            400,
            "sender_tx_value",
        ),
        (
            "/generateProofTransfer-6".into(),
            vec![b' '; 64 * 1024 + 1],
            413,
            "",
        ),
    ];
    for (path, body, status, needle) in cases {
        let r = post(server.addr, &path, &body, PROVE_TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.status, status, "{path}: {}", r.body);
        assert!(
            r.error().contains(needle),
            "{path}: {:?} lacks {needle:?}",
            r.error()
        );
        responses.push(r);
    }
    // A request whose secret key is itself malformed: the message names the field only.
    let r = server
        .prove(
            6,
            &with_field(&k6, |m| {
                m.insert("secret_key".into(), format!("{s6}x").into());
            }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("secret_key"), "{}", r.body);
    responses.push(r);

    let m = assert_refused_unproved_and_secret(&server, &responses, &secrets, 2.0).await;
    for k in ["6", "2"] {
        assert_eq!(
            metric(
                &m,
                &format!("enygma_prove_seconds_count{{statement=\"transfer\",k=\"{k}\"}}")
            ),
            Some(1.0)
        );
    }

    // Let the log reader threads catch up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let proving_lines = server
        .access_lines()
        .into_iter()
        .filter(|l| l["route"] == "/generateProofTransfer-{k}")
        .count();
    assert_eq!(
        proving_lines,
        2 + 2 + 8 + 1,
        "one access line per proving request"
    );
    let logs = stop_with_secret_free_logs(server, &secrets);
    let ok_line = access_lines(&logs)
        .into_iter()
        .find(|l| l["status"] == 200 && l["k"] == 6)
        .expect("access line of the k=6 proof");
    assert_access_line_timed(&ok_line);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn burst_of_eight_with_one_slot_and_two_queue_places() {
    let _serial = serial();
    let k2 = sample("transfer-k2.json");
    let server = Server::start(&["--max-inflight", "1", "--queue-depth", "2"]).await;
    let addr = server.addr;
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let body = k2.clone();
            tokio::spawn(async move {
                let r = post(addr, "/generateProofTransfer-2", &body, PROVE_TIMEOUT)
                    .await
                    .unwrap();
                (r, t0.elapsed())
            })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    let ok: Vec<_> = results.iter().filter(|(r, _)| r.status == 200).collect();
    let shed: Vec<_> = results.iter().filter(|(r, _)| r.status == 503).collect();
    assert!(ok.len() >= 3, "admitted only {}", ok.len());
    assert_eq!(
        ok.len() + shed.len(),
        8,
        "{:?}",
        results.iter().map(|r| r.0.status).collect::<Vec<_>>()
    );
    for (r, latency) in &shed {
        assert!(*latency < Duration::from_secs(1), "shed after {latency:?}");
        assert!(
            r.header("retry-after")
                .and_then(|v| v.parse::<u64>().ok())
                .is_some(),
            "no Retry-After"
        );
    }
    let m = server.metrics().await;
    assert_eq!(
        metric(&m, "enygma_proofs_in_flight_peak"),
        Some(1.0),
        "two proofs ran at once"
    );
    // A 503 comes from the full prove queue, or earlier from the request checks' own queue
    // (as deep as the prove queue) when the burst outruns the check threads.
    let refused = metric(&m, "enygma_shed_total{queue=\"prove\"}").unwrap_or(0.0)
        + metric(&m, "enygma_check_refused_total").unwrap_or(0.0);
    assert_eq!(refused, shed.len() as f64);
    // The Server-Timing intervals agree: each admitted proof waited for the previous ones.
    let mut waits: Vec<f64> = ok
        .iter()
        .map(|(r, _)| timing(r).queue_ms.expect("queue time"))
        .collect();
    waits.sort_by(f64::total_cmp);
    let prove_ms = |r: &Resp| {
        let t = timing(r);
        t.witness_ms.expect("witness time") + t.prove_ms.expect("prove time")
    };
    let shortest_proof = ok
        .iter()
        .map(|(r, _)| prove_ms(r))
        .fold(f64::INFINITY, f64::min);
    for (i, w) in waits.iter().enumerate().skip(1) {
        assert!(
            *w >= i as f64 * shortest_proof * 0.9,
            "queue waits {waits:?} vs proof {shortest_proof} ms"
        );
    }

    // A queued request whose client hangs up is never proved.
    let started = metric(&m, "enygma_proofs_started_total").unwrap();
    let first = tokio::spawn({
        let body = k2.clone();
        async move {
            post(addr, "/generateProofTransfer-2", &body, PROVE_TIMEOUT)
                .await
                .unwrap()
        }
    });
    server.wait_metric("enygma_proofs_in_flight", 1.0).await;
    let gone = http::send(addr, "POST", "/generateProofTransfer-2", &[], &k2)
        .await
        .unwrap();
    server
        .wait_metric("enygma_queue_depth{queue=\"prove\"}", 1.0)
        .await;
    drop(gone);
    server
        .wait_metric("enygma_abandoned_total{queue=\"prove\"}", 1.0)
        .await;
    assert_eq!(first.await.unwrap().status, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let m = server.metrics().await;
    assert_eq!(
        metric(&m, "enygma_proofs_started_total"),
        Some(started + 1.0),
        "the abandoned request was proved"
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_timeout_gives_504() {
    let _serial = serial();
    let k6 = sample("transfer-k6.json");
    // An estimate under the timeout, so that the late request queues and times out (with the
    // default estimate its expected wait would exceed 50 ms and it would be shed at once).
    let server = Server::start(&[
        "--max-inflight",
        "1",
        "--queue-timeout",
        "50ms",
        "--expected-service-time",
        "10ms",
    ])
    .await;
    let addr = server.addr;
    let first = tokio::spawn({
        let body = k6.clone();
        async move {
            post(addr, "/generateProofTransfer-6", &body, PROVE_TIMEOUT)
                .await
                .unwrap()
        }
    });
    server.wait_metric("enygma_proofs_in_flight", 1.0).await;
    let late = server.prove(6, &k6).await;
    assert_eq!(late.status, 504, "{}", late.body);
    assert_eq!(first.await.unwrap().status, 200);
    assert_eq!(
        metric(
            &server.metrics().await,
            "enygma_queue_timeouts_total{queue=\"prove\"}"
        ),
        Some(1.0)
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthcheck_is_fast_under_full_load_and_sigterm_drains() {
    let _serial = serial();
    let k6 = sample("transfer-k6.json");
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut server =
        Server::start(&["--max-inflight", &cpus.to_string(), "--queue-depth", "4"]).await;
    let addr = server.addr;
    // Every slot busy, and one more queued.
    let tasks: Vec<_> = (0..cpus + 1)
        .map(|_| {
            let body = k6.clone();
            tokio::spawn(async move {
                post(addr, "/generateProofTransfer-6", &body, PROVE_TIMEOUT)
                    .await
                    .unwrap()
            })
        })
        .collect();
    server
        .wait_metric("enygma_proofs_in_flight", cpus as f64)
        .await;
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        let t0 = Instant::now();
        let r = get(addr, "/healthcheck").await.unwrap();
        assert_eq!(r.status, 200);
        worst = worst.max(t0.elapsed());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        worst < Duration::from_millis(100),
        "/healthcheck took {worst:?} under load"
    );

    // SIGTERM while proving: in-flight and queued proofs finish, then exit 0.
    server.sigterm();
    for t in tasks {
        let r = t.await.unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert_eq!(server.wait_exit(Duration::from_secs(120)), Some(0));
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        server.logs().iter().any(|l| l.contains("drained")),
        "{:?}",
        server.logs()
    );
}

/// A valid generated request of the instance `stem` (the statement's own generator).
fn generated(stem: &str, seed: u64) -> Vec<u8> {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let spec = enygma_prover::statements::RequestSpec {
        sender: Some(0),
        amount: 40,
        ..Default::default()
    };
    let body = enygma_prover::statements::by_stem(stem)
        .unwrap()
        .generate(&spec, &mut rng)
        .unwrap();
    serde_json::to_vec(&body).unwrap()
}

fn public_inputs_of(stem: &str) -> usize {
    enygma_prover::statements::by_stem(stem)
        .unwrap()
        .num_public_inputs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deposit_and_withdraw_prove_and_verify_on_their_own_routes() {
    let _serial = serial();
    let deposit = generated("deposit-k2", 7);
    let withdraw = generated("withdraw-k2", 8);
    let stale_deposit = sample("deposit-k6.json");
    let dep: serde_json::Value = serde_json::from_slice(&deposit).unwrap();
    let wd: serde_json::Value = serde_json::from_slice(&withdraw).unwrap();
    // Every secret of the two requests: the secret keys and the withdrawn deposits' keys.
    let mut secret_values = vec![
        secret_of(&deposit),
        secret_of(&withdraw),
        secret_of(&stale_deposit),
    ];
    for sk in wd["sk_deposits"].as_array().expect("sk_deposits") {
        let sk = sk.as_str().unwrap();
        if sk.len() > 10 {
            secret_values.push(sk.to_owned());
        }
    }
    let secrets: Vec<&str> = secret_values.iter().map(String::as_str).collect();
    let server = Server::start(&["--max-inflight", "1"]).await;
    let mut responses = Vec::new();

    for (name, body, n_public) in [
        ("Deposit", &deposit, public_inputs_of("deposit-k2")),
        ("Withdraw", &withdraw, public_inputs_of("withdraw-k2")),
    ] {
        let r = post(
            server.addr,
            &format!("/generateProof{name}-2"),
            body,
            PROVE_TIMEOUT,
        )
        .await
        .unwrap();
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        let proof = r.json();
        assert_eq!(
            proof["public_signal"].as_array().unwrap().len(),
            n_public,
            "{name}"
        );
        assert_full_server_timing(&r, name);
        // It verifies on its own statement's route...
        assert!(
            verdict(
                server.addr,
                &format!("/verifyProof{name}-2"),
                r.body.as_bytes()
            )
            .await,
            "{name}"
        );
        // ... not as a transfer of the same k (its public signal has a different length)...
        let v = post(
            server.addr,
            "/verifyProofTransfer-2",
            r.body.as_bytes(),
            PROVE_TIMEOUT,
        )
        .await
        .unwrap();
        assert_eq!(
            v.status, 400,
            "{name} proof on the transfer route: {}",
            v.body
        );
        assert!(
            v.error().contains("public_signal"),
            "{name} proof on the transfer route: {}",
            v.body
        );
        responses.push(v);
        // A body that is not a proof at all: the message names this statement's prove route.
        let v = post(
            server.addr,
            &format!("/verifyProof{name}-2"),
            b"[",
            PROVE_TIMEOUT,
        )
        .await
        .unwrap();
        assert_eq!(v.status, 400, "{}", v.body);
        assert!(
            v.error().contains(&format!("/generateProof{name}-2")),
            "{}",
            v.body
        );
        // ... and not with a different public input.
        let mut forged = proof.clone();
        forged["public_signal"][0] = serde_json::json!("1");
        assert!(
            !verdict(
                server.addr,
                &format!("/verifyProof{name}-2"),
                forged.to_string().as_bytes()
            )
            .await,
            "{name}"
        );
        responses.push(r);
    }
    assert!(
        dep["hash"].is_string() && dep["saltOut"].is_string(),
        "generated deposit lacks its DvP fields"
    );

    // A deposit whose DvP hash does not match: 422 naming check 15.
    let r = post(
        server.addr,
        "/generateProofDeposit-2",
        &with_field(&deposit, |m| {
            m.insert("hash".into(), "12345".into());
        }),
        PROVE_TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.error().contains("check 15"), "{}", r.body);
    responses.push(r);
    // A withdraw whose empty slot names a deposit hash: 422 naming check 17 and its slot.
    let r = post(
        server.addr,
        "/generateProofWithdraw-2",
        &with_field(&withdraw, |m| {
            m["hashes"][7] = "12345".into();
        }),
        PROVE_TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.error()
            .contains("check 17 (empty deposit slot) failed: hashes[7]"),
        "{}",
        r.body
    );
    responses.push(r);
    // A withdraw without its salts: 400 naming the field.
    let r = post(
        server.addr,
        "/generateProofWithdraw-2",
        &with_field(&withdraw, |m| {
            m.remove("saltsIn");
        }),
        PROVE_TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("saltsIn"), "{}", r.body);
    responses.push(r);
    // The reference's stale deposit sample (old field names, no saltOut): 400.
    let r = post(
        server.addr,
        "/generateProofDeposit-6",
        &stale_deposit,
        PROVE_TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400, "{}", r.body);
    responses.push(r);
    // A deposit body on the withdraw route is a bad request, not a proof.
    let r = post(
        server.addr,
        "/generateProofWithdraw-2",
        &deposit,
        PROVE_TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400, "{}", r.body);
    responses.push(r);

    let m = assert_refused_unproved_and_secret(&server, &responses, &secrets, 2.0).await;
    assert_eq!(
        metric(&m, "enygma_http_requests_total{route=\"/generateProofDeposit-{k}\",k=\"2\",status=\"200\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &m,
            "enygma_http_requests_total{route=\"/verifyProofWithdraw-{k}\",k=\"2\",status=\"200\"}"
        ),
        Some(2.0)
    );

    tokio::time::sleep(Duration::from_millis(300)).await;
    let logs = stop_with_secret_free_logs(server, &secrets);
    let lines = access_lines(&logs);
    for (route, statement) in [
        ("/generateProofDeposit-{k}", "deposit"),
        ("/generateProofWithdraw-{k}", "withdraw"),
    ] {
        let ok = lines
            .iter()
            .find(|l| l["route"] == route && l["status"] == 200)
            .unwrap_or_else(|| panic!("no access line for a 200 on {route}"));
        assert_eq!(ok["statement"], statement, "{ok}");
        assert_eq!(ok["k"], 2, "{ok}");
        assert_access_line_timed(ok);
    }
}

/// A replica that hosts `transfer-k6` alone loads only its keys, answers its routes,
/// 404s every other statement instance with a message, and is ready without the others' keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_hosting_transfer_k6_alone() {
    let _serial = serial();
    let k6 = sample("transfer-k6.json");
    let server = Server::start(&["--circuits", "transfer-k6"]).await;
    let ready = get(server.addr, "/readyz").await.unwrap();
    assert_eq!(ready.status, 200);
    // The API listener's probe answers its status alone ...
    assert_eq!(ready.body, r#"{"status":"ready"}"#);
    // ... the admin listener's and the metrics say which keys it proves with: the repository's
    // development keys.
    // With the key file's SHA-256, which tells a replaced key from the one before.
    let sha256 = hex::encode(
        enygma_prover::keys::file_sha256(&repo_dir().join("keys/transfer-k6.pk")).unwrap(),
    );
    let ready = get(server.admin, "/readyz").await.unwrap();
    assert_eq!(ready.status, 200);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&ready.body).unwrap(),
        serde_json::json!({
            "status": "ready",
            "keys": { "transfer-k6": {
                "origin": { "kind": "development-seed" },
                "reduction": "libsnark",
                "sha256": sha256,
            } },
        })
    );
    let metrics = get(server.addr, "/metrics").await.unwrap().body;
    let key_info: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("enygma_key_info{"))
        .collect();
    assert_eq!(
        key_info,
        [format!("enygma_key_info{{statement=\"transfer\",k=\"6\",origin=\"development-seed\",reduction=\"libsnark\",sha256=\"{sha256}\"}} 1")]
    );
    // And which build it is: the same version and commit as `--version` and the start-up log.
    let build_info = format!(
        "enygma_build_info{{version=\"{}\",commit=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        enygma_build_info::COMMIT
    );
    assert!(
        metrics.lines().any(|l| l == build_info),
        "no {build_info:?} in\n{metrics}"
    );

    let proof = server.prove(6, &k6).await;
    assert_eq!(proof.status, 200, "{}", proof.body);
    assert!(verdict(server.addr, "/verifyProofTransfer-6", proof.body.as_bytes()).await);

    for (path, stem) in [
        ("/generateProofDeposit-3", "deposit-k3"),
        ("/generateProofTransfer-2", "transfer-k2"),
        ("/verifyProofWithdraw-6", "withdraw-k6"),
    ] {
        let r = post(server.addr, path, &k6, PROVE_TIMEOUT).await.unwrap();
        assert_eq!(
            (r.status, r.error()),
            (404, format!("circuit {stem} is not hosted here")),
            "{path}"
        );
    }
    assert_eq!(
        metric(&server.metrics().await, "enygma_proofs_started_total"),
        Some(1.0)
    );

    let logs = server.stop();
    let loaded: Vec<String> = logs
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["message"] == "keys and matrices loaded")
        .map(|v| v["circuit"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(loaded, ["transfer-k6"], "only the hosted keys are loaded");
    let starting = logs
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["message"] == "enygma-server starting")
        .expect("a start-up line naming the build");
    assert_eq!(
        (&starting["version"], &starting["commit"]),
        (
            &serde_json::json!(env!("CARGO_PKG_VERSION")),
            &serde_json::json!(enygma_build_info::COMMIT)
        ),
        "{starting}"
    );
}

/// `--version` prints the package version and the git commit of the checkout it was built in.
#[test]
fn version_names_the_package_version_and_the_git_commit() {
    let out = Command::new(env!("CARGO_BIN_EXE_enygma-server"))
        .arg("--version")
        .output()
        .expect("run enygma-server --version");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let commit = text
        .trim()
        .strip_prefix(&format!(
            "enygma-server {} (commit ",
            env!("CARGO_PKG_VERSION")
        ))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("unexpected --version output {text:?}"));
    // Whether the tree is dirty may have changed since the build; the hash may not.
    let built = commit.strip_suffix("-dirty").unwrap_or(commit);
    assert_eq!(built, head_commit().as_deref().unwrap_or("unknown"));
}

/// The checkout's HEAD as `git rev-parse --short=12` names it, or `None` outside a checkout.
fn head_commit() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Runs the server with `args` until it exits by itself (bounded): its exit code and output.
fn refused_start(args: &[&str], keys_dir: &Path) -> (Option<i32>, String) {
    let mut child = server_command()
        .args(["--bind", "127.0.0.1", "--port", "0", "--keys-dir"])
        .arg(keys_dir)
        .args(args)
        .spawn()
        .expect("start enygma-server");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server did not exit by itself: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (status.code(), text)
}

/// A second server on a host whose default admin port (9464) is taken starts all the same, its
/// admin listener on a free port (logged); an explicit `--admin-bind` that is taken refuses.
#[test]
fn a_taken_default_admin_port_is_no_reason_to_refuse_the_start() {
    let _serial = serial();
    // Held here, unless another process on this host holds it already: taken either way.
    let _holder = std::net::TcpListener::bind("127.0.0.1:9464");
    let mut child = server_command()
        .args([
            "--bind",
            "127.0.0.1",
            "--port",
            "0",
            "--circuits",
            "ownership-721",
        ])
        .arg("--keys-dir")
        .arg(repo_dir().join("keys"))
        .spawn()
        .expect("start enygma-server");
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines_tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    let admin = loop {
        let line = lines_rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no admin listener logged: {seen:#?}"));
        if line.contains("admin listening") {
            break line;
        }
        seen.push(line);
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen.iter()
            .any(|l| l.contains("the default admin port is taken")),
        "{seen:#?}"
    );
    assert!(
        admin.contains("127.0.0.1:") && !admin.contains(":9464"),
        "{admin}"
    );

    let (status, text) = refused_start(
        &[
            "--admin-bind",
            "127.0.0.1:9464",
            "--circuits",
            "ownership-721",
        ],
        &repo_dir().join("keys"),
    );
    assert_eq!(status, Some(2), "{text}");
    assert!(
        text.contains("cannot listen on the admin address"),
        "{text}"
    );
}

/// `--require-keys` with no keys refuses to start, names the missing key, and creates nothing.
#[test]
fn require_keys_without_keys_refuses_to_start() {
    let dir = std::env::temp_dir().join(format!("enygma-require-keys-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (status, text) = refused_start(
        &["--require-keys", "--circuits", "transfer-k2,deposit-k2"],
        &dir,
    );
    assert_eq!(status, Some(2), "{text}");
    assert!(text.contains("--require-keys"), "{text}");
    for key in ["transfer-k2.pk", "deposit-k2.pk"] {
        assert!(
            text.contains(key),
            "the message does not name {key}: {text}"
        );
    }
    assert!(!text.contains("listening"), "it listened: {text}");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "keys were created"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Transport security on the binary: TLS (HTTP/1.1 and HTTP/2) with bearer tokens, a SIGHUP that swaps
/// the certificate while a connection stays open, the token never in a log line, and a clean
/// SIGTERM. Authentication comes before readiness, so none of this waits for the keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_tokens_and_sighup_reload_on_the_binary() {
    use common::tls::{client_config, temp_dir, Ca, H1, H2};
    let _serial = serial();
    const TOKEN: &str = "gateway-token-7f3a9c2e51d04b88";
    let dir = temp_dir("acceptance-tls");
    let (first_ca, second_ca) = (Ca::new("first CA"), Ca::new("second CA"));
    let (cert, key) = first_ca.server().write(&dir, "server");
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("{TOKEN}\n")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let server = Server::spawn(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--auth-token-file",
        tokens.to_str().unwrap(),
    ]);
    let addr = server.addr;
    let trust_first = client_config(&[&first_ca], None, &[b"http/1.1"]);
    // A gateway's connection, kept across the reload: its token authenticates it (a probe
    // alone would not keep it open while tokens are required).
    let bearer = format!("Bearer {TOKEN}");
    let mut kept = H1::tls(addr, trust_first.clone()).await.unwrap();
    assert_eq!(
        kept.send("GET", "/openapi.json", &[("authorization", &bearer)], b"")
            .await
            .unwrap()
            .status,
        200
    );
    let k2 = sample("transfer-k2.json");
    // The 401s on a connection of their own: a refused client's connection is closed.
    let mut refused = H1::tls(addr, trust_first.clone()).await.unwrap();
    let missing = refused
        .send("POST", "/generateProofTransfer-2", &[], &k2)
        .await
        .unwrap();
    assert_eq!(missing.header("connection"), Some("close"));
    assert!(
        refused.send("GET", "/livez", &[], b"").await.is_err(),
        "the connection stayed open after a 401"
    );
    assert_eq!(missing.status, 401, "{}", missing.body);
    assert_eq!(
        missing.header("www-authenticate"),
        Some(r#"Bearer realm="enygma-prover""#)
    );
    let mut refused = H1::tls(addr, trust_first.clone()).await.unwrap();
    let wrong = refused
        .send(
            "POST",
            "/generateProofTransfer-2",
            &[("authorization", "Bearer not-the-gateway-token-000")],
            &k2,
        )
        .await
        .unwrap();
    assert_eq!(wrong.status, 401);
    // With the token the request passes authentication: 400 for an empty object, or 503
    // while the keys are still loading.
    let mut h2 = H2::tls(addr, client_config(&[&first_ca], None, &[b"h2"]))
        .await
        .unwrap();
    let passed = h2
        .send(
            "POST",
            "/generateProofTransfer-2",
            &[("authorization", &bearer)],
            b"{}",
        )
        .await
        .unwrap();
    assert_eq!(passed.version, hyper::Version::HTTP_2);
    assert!(
        [400, 503].contains(&passed.status),
        "{} {}",
        passed.status,
        passed.body
    );

    // Rotate the certificate and send SIGHUP.
    second_ca.server().write(&dir, "server");
    let rc = unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGHUP) };
    assert_eq!(rc, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server
        .logs()
        .iter()
        .any(|l| l.contains("TLS certificate, key and client CA reloaded"))
    {
        assert!(Instant::now() < deadline, "no reload: {:?}", server.logs());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        H1::tls(addr, trust_first).await.is_err(),
        "a new handshake still got the old certificate"
    );
    let mut fresh = H1::tls(addr, client_config(&[&second_ca], None, &[b"http/1.1"]))
        .await
        .unwrap();
    assert_eq!(
        fresh.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );
    // With API tokens and no metrics tokens, /metrics is refused on the API listener, the
    // API's token included, and read on the admin listener (plain HTTP, no token).
    let mut closed = H1::tls(addr, client_config(&[&second_ca], None, &[b"http/1.1"]))
        .await
        .unwrap();
    let refused_metrics = closed
        .send("GET", "/metrics", &[("authorization", &bearer)], b"")
        .await
        .unwrap();
    assert_eq!(refused_metrics.status, 401, "{}", refused_metrics.body);
    let m = server.metrics().await;
    assert_eq!(
        metric(&m, "enygma_tls_reloads_total{result=\"ok\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &m,
            "enygma_auth_rejected_total{scope=\"api\",reason=\"missing\"}"
        ),
        Some(1.0)
    );
    // The connections opened before the reload still work.
    assert_eq!(
        kept.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );
    assert_eq!(
        h2.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );
    drop((kept, fresh, h2, closed));

    let logs = server.stop();
    assert!(
        logs.iter().all(|l| !l.contains(TOKEN)),
        "the token appears in the logs"
    );
    // Refused requests are logged at DEBUG (not in this log), and their address once a
    // minute at WARN: three failures from 127.0.0.1, one line.
    let refused: Vec<_> = access_lines(&logs)
        .into_iter()
        .filter(|l| l["status"] == 401)
        .collect();
    assert_eq!(refused.len(), 0, "{refused:?}");
    let warned: Vec<_> = logs
        .iter()
        .filter(|l| l.contains("authentication failed"))
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("\"peer\":\"127.0.0.1\""),
        "{}",
        warned[0]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A valid generated request of a DvP statement (no sizes; `index` sets how many notes a
/// join-split spends: index + 1).
fn generated_dvp(name: &str, index: usize, seed: u64) -> Vec<u8> {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let spec = enygma_prover::statements::RequestSpec {
        index,
        ..Default::default()
    };
    let body = enygma_prover::statements::by_stem(name)
        .unwrap()
        .generate(&spec, &mut rng)
        .unwrap();
    serde_json::to_vec(&body).unwrap()
}

/// Two clients proving ownership-721 one request after another (distinct generated requests,
/// at most `per_client` each) until `stop` is set; each returns its answers in order.
fn ownership_clients(
    addr: SocketAddr,
    stop: &Arc<AtomicBool>,
    per_client: u64,
) -> Vec<tokio::task::JoinHandle<Vec<Resp>>> {
    (0..2u64)
        .map(|client| {
            let stop = stop.clone();
            tokio::spawn(async move {
                let first = 1000 * (client + 1);
                let mut answers = Vec::new();
                for seed in first..first + per_client {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let body = generated_dvp("ownership-721", 0, seed);
                    answers.push(
                        post(addr, "/ownership-721", &body, PROVE_TIMEOUT)
                            .await
                            .unwrap(),
                    );
                }
                answers
            })
        })
        .collect()
}

/// The public inputs the service computes for a request, in `public_signal`'s order.
fn expected_public_signal(name: &str, body: &[u8]) -> Vec<String> {
    let instance = enygma_prover::statements::by_stem(name).unwrap();
    let prepared = enygma_prover::prepare(instance, body).unwrap();
    prepared
        .public_inputs()
        .unwrap()
        .iter()
        .map(enygma_prover::request::to_decimal)
        .collect()
}

/// Every key of a JSON value (nested objects too) in upper case, as Go's decoder accepts them.
fn upper_case_keys(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .map(|(k, v)| (k.to_uppercase(), upper_case_keys(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        serde_json::Value::Array(a) => a.iter().map(upper_case_keys).collect(),
        other => other.clone(),
    }
}

/// The three DvP endpoints over HTTP with the real prover, beside a transfer under
/// one admission: generated requests prove with `public_signal` in dvp.md's order, verify on
/// their own route (and not with a changed public input, even one in no constraint), keys in
/// another case and addresses without `0x` are accepted, bad requests get 400 naming the field
/// and each rule a request can break gets 422 naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dvp_statements_prove_verify_and_refuse_bad_requests() {
    let _serial = serial();
    let erc20 = generated_dvp("join-split-enygma", 2, 21); // 3 notes spent
    let erc1155 = generated_dvp("join-split-1155", 0, 22);
    let erc721 = generated_dvp("ownership-721", 0, 23);
    let json = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).unwrap();
    let (j20, j1155, j721) = (json(&erc20), json(&erc1155), json(&erc721));
    let mut secret_values: Vec<String> = j20["keyPairsIn"]
        .as_array()
        .unwrap()
        .iter()
        .chain(j1155["keyPairsIn"].as_array().unwrap())
        .chain([&j721["keyPairIn"]])
        .map(|pair| pair["privateKey"].as_str().unwrap().to_owned())
        .collect();
    secret_values.extend(
        j20["saltsIn"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned()),
    );
    assert!(secret_values.iter().all(|s| s.len() > 10));
    let secrets: Vec<&str> = secret_values.iter().map(String::as_str).collect();
    let server = Server::start(&[
        "--max-inflight",
        "1",
        "--circuits",
        "transfer-k2,join-split-enygma,join-split-1155,ownership-721",
    ])
    .await;
    let mut responses = Vec::new();

    // The ERC-1155 request with every key upper-cased and its address without 0x.
    let mut shouted = upper_case_keys(&j1155);
    let address = shouted["ERC1155ADDRESS"].as_str().unwrap().to_owned();
    shouted["ERC1155ADDRESS"] = address.trim_start_matches("0x").into();
    let shouted = serde_json::to_vec(&shouted).unwrap();
    for (name, body, n_public, tamper) in [
        ("join-split-enygma", &erc20, 34, [0usize, 21]),
        ("join-split-1155", &shouted, 34, [0, 33]),
        ("ownership-721", &erc721, 6, [0, 3]),
    ] {
        let r = post(server.addr, &format!("/{name}"), body, PROVE_TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        let proof = r.json();
        let signal: Vec<String> = proof["public_signal"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(signal.len(), n_public, "{name}");
        assert_eq!(signal, expected_public_signal(name, body), "{name}");
        let verify = format!("/verify-{name}");
        assert!(
            verdict(server.addr, &verify, r.body.as_bytes()).await,
            "{name}"
        );
        // Not with another nftCommitment / paymentCommitment or tree number (inputs the
        // reference leaves out of every constraint), nor another output commitment.
        for i in tamper {
            let mut forged = proof.clone();
            forged["public_signal"][i] = serde_json::json!("12345");
            assert!(
                !verdict(server.addr, &verify, forged.to_string().as_bytes()).await,
                "{name}: public_signal[{i}] changed"
            );
        }
        responses.push(r);
    }
    // dvp.md's order for the join-split: nftCommitment, merkleRoots (then "0"), nullifiers
    // (then H(0, 0)), treeNumbers (then "0"), the two output commitments, the revert.
    let signal = expected_public_signal("join-split-enygma", &erc20);
    assert_eq!(signal[0], j20["nftCommitment"].as_str().unwrap());
    assert_eq!(signal[1..4], j20["merkleRoots"].as_array().unwrap()[..]);
    assert!(signal[4..11].iter().all(|r| r == "0"));
    let dummy = "14744269619966411208579211824598458697587494354926760081771325075741142829156";
    assert!(signal[14..21].iter().all(|n| n == dummy));
    for (i, tree) in j20["treeNumbers"].as_array().unwrap().iter().enumerate() {
        assert_eq!(signal[21 + i], tree.to_string());
    }

    let r = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
    let edit = |body: &[u8], f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = json(body);
        f(&mut v);
        serde_json::to_vec(&v).unwrap()
    };
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        // 400, naming the field.
        (
            "/join-split-enygma",
            edit(&erc20, &|v| v["valuesIn"][0] = "007".into()),
            400,
            "valuesIn[0]: leading zeros are not allowed",
        ),
        (
            "/join-split-enygma",
            edit(&erc20, &|v| v["valuesOut"][1] = "-1".into()),
            400,
            "valuesOut[1]: not a decimal number",
        ),
        (
            "/join-split-enygma",
            edit(&erc20, &|v| v["merkleProofs"][0]["elements"][4] = r.into()),
            400,
            "merkleProofs[0].elements[4]: not below the field modulus r",
        ),
        (
            "/join-split-1155",
            edit(&erc1155, &|v| {
                v["merkleProofs"][0]["elements"]
                    .as_array_mut()
                    .unwrap()
                    .truncate(7)
            }),
            400,
            "merkleProofs[0].elements: expected 8 elements, got 7",
        ),
        (
            "/join-split-1155",
            edit(&erc1155, &|v| {
                v.as_object_mut().unwrap().remove("erc1155TokenId");
            }),
            400,
            "erc1155TokenId: missing",
        ),
        (
            "/join-split-enygma",
            edit(&erc20, &|v| v["treeNumbers"][0] = (-1).into()),
            400,
            "treeNumbers[0]: expected a non-negative JSON integer",
        ),
        (
            "/ownership-721",
            edit(&erc721, &|v| v["uid"] = "+5".into()),
            400,
            "uid: not a decimal number",
        ),
        (
            "/ownership-721",
            edit(&erc721, &|v| {
                v.as_object_mut().unwrap().remove("revertSalt");
            }),
            400,
            "revertSalt: missing",
        ),
        (
            "/ownership-721",
            b"[1]".to_vec(),
            400,
            "body: expected a JSON object",
        ),
        // 422, naming the rule and the field.
        (
            "/join-split-enygma",
            edit(&erc20, &|v| v["merkleRoots"][1] = "5".into()),
            422,
            "check (note in the tree) failed: merkleRoots[1]",
        ),
        (
            "/join-split-enygma",
            edit(&erc20, &|v| v["valuesOut"][0] = "1".into()),
            422,
            "check (value conservation) failed: valuesOut",
        ),
        (
            "/join-split-enygma",
            edit(&erc20, &|v| {
                v["valuesOut"][0] = "1000000000000000000000000000000000000".into()
            }),
            422,
            "check (amount below 10^36) failed: valuesOut[0]",
        ),
        (
            "/join-split-enygma",
            edit(&erc20, &|v| v["merkleProofs"][2]["indices"] = "256".into()),
            422,
            "check (leaf index below 256) failed: merkleProofs[2].indices",
        ),
        (
            // Slot 2 spends the note of slot 1 again.
            "/join-split-enygma",
            edit(&erc20, &|v| {
                for field in [
                    "valuesIn",
                    "keyPairsIn",
                    "merkleProofs",
                    "merkleRoots",
                    "saltsIn",
                ] {
                    v[field][2] = v[field][1].clone();
                }
            }),
            422,
            "check (distinct nullifiers) failed: nullifiers[2]",
        ),
        (
            // A dummy slot (key 0, index 0) that carries an amount.
            "/join-split-1155",
            edit(&erc1155, &|v| {
                v["keyPairsIn"][0]["privateKey"] = "0".into();
                v["merkleProofs"][0]["indices"] = "0".into();
            }),
            422,
            "check (dummy slot carries no amount) failed: valuesIn[0]",
        ),
        (
            // Slot 0 a written-out dummy while slot 1 spends a note: the revert would go to pk(0).
            "/join-split-enygma",
            edit(&erc20, &|v| {
                let total: u128 = v["valuesIn"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .skip(1)
                    .map(|x| x.as_str().unwrap().parse::<u128>().unwrap())
                    .sum();
                v["valuesIn"][0] = "0".into();
                v["keyPairsIn"][0]["privateKey"] = "0".into();
                v["merkleProofs"][0] =
                    serde_json::json!({"indices": "0", "elements": vec!["0"; 8]});
                v["merkleRoots"][0] = "0".into();
                v["saltsIn"][0] = "0".into();
                v["valuesOut"] = serde_json::json!([total.to_string(), "0"]);
            }),
            422,
            "check (slot 0 holds a note) failed: keyPairsIn[0]",
        ),
        (
            "/ownership-721",
            edit(&erc721, &|v| v["saltIn"] = "12".into()),
            422,
            "check (note in the tree) failed: merkleRoot",
        ),
        (
            "/ownership-721",
            edit(&erc721, &|v| v["merkleProof"]["indices"] = "300".into()),
            422,
            "check (leaf index below 256) failed: merkleProof.indices",
        ),
    ];
    for (path, body, status, message) in cases {
        let resp = post(server.addr, path, &body, PROVE_TIMEOUT).await.unwrap();
        assert_eq!(
            (resp.status, resp.error().as_str()),
            (status, message),
            "{path}"
        );
        responses.push(resp);
    }
    let m = assert_refused_unproved_and_secret(&server, &responses, &secrets, 3.0).await;
    for name in ["join-split-enygma", "join-split-1155", "ownership-721"] {
        assert_eq!(
            metric(
                &m,
                &format!("enygma_prove_seconds_count{{statement=\"{name}\",k=\"none\"}}")
            ),
            Some(1.0),
            "{name}"
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop_with_secret_free_logs(server, &secrets);
}

/// `--require-ceremony-keys` refuses the repository's development keys, and missing keys, before
/// it listens, naming each key and its origin; it creates nothing.
#[test]
fn require_ceremony_keys_refuses_development_keys() {
    let (status, text) = refused_start(
        &[
            "--require-ceremony-keys",
            "--circuits",
            "ownership-721,transfer-k2",
        ],
        &repo_dir().join("keys"),
    );
    assert_eq!(status, Some(2), "{text}");
    assert!(text.contains("--require-ceremony-keys"), "{text}");
    for key in ["ownership-721: ", "transfer-k2: "] {
        assert!(
            text.contains(key),
            "the message does not name {key}: {text}"
        );
    }
    assert!(text.contains("development-seed keys"), "{text}");
    assert!(!text.contains("listening"), "it listened: {text}");

    let dir = std::env::temp_dir().join(format!("enygma-ceremony-keys-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (status, text) = refused_start(
        &["--require-ceremony-keys", "--circuits", "ownership-721"],
        &dir,
    );
    assert_eq!(status, Some(2), "{text}");
    assert!(text.contains("ownership-721.pk"), "{text}");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "keys were created"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Tables follow the traffic, on the smallest instance: a replica hosting ownership-721 starts
/// without tables, builds them in the background after the instance's second proof, and proves
/// with them from then on; that proof still verifies. The tables are kept in the cache
/// directory: a restarted replica reads them back at the same point instead of building them,
/// and its proofs with them verify; a kept file that is damaged is built again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_are_built_for_the_instance_that_receives_proofs() {
    let _serial = serial();
    let cache = std::env::temp_dir().join(format!("enygma-table-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let cache_arg = cache.to_str().unwrap();
    let server = Server::start(&["--circuits", "ownership-721", "--cache-dir", cache_arg]).await;
    let labels = r#"statement="ownership-721",k="none""#;
    let series = |name: &str, extra: &str| format!("{name}{{{labels}{extra}}}");
    let metrics = server.metrics().await;
    assert_eq!(
        metric(&metrics, &series("enygma_table_bytes", "")),
        Some(0.0),
        "no tables before traffic"
    );
    let budget = metric(&metrics, "enygma_table_memory_budget_bytes").unwrap();
    assert!(budget > 64.0 * 1024.0 * 1024.0, "default budget {budget}");
    // Before it was ready, the server measured its service-time estimate with a proof of its
    // largest instance (the only one here), which is not counted as a proof.
    let calibration: serde_json::Value = server
        .logs()
        .iter()
        .find(|l| l.contains("service-time estimate measured on this machine"))
        .map(|l| serde_json::from_str(l).unwrap())
        .expect("no calibration line in the log");
    assert_eq!(calibration["circuit"], "ownership-721");
    assert_eq!(
        metric(
            &metrics,
            r#"enygma_service_time_estimate_seconds{queue="prove"}"#
        ),
        calibration["expected_service_time_s"].as_f64()
    );
    assert_eq!(metric(&metrics, "enygma_proofs_started_total"), Some(0.0));

    // A proof of a generated request on the server at `addr`, answered 200.
    async fn prove_at(addr: SocketAddr, seed: u64) -> Resp {
        let body = generated_dvp("ownership-721", 0, seed);
        let r = post(addr, "/ownership-721", &body, PROVE_TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        r
    }
    let prove = |seed: u64| prove_at(server.addr, seed);
    for seed in [31, 32] {
        prove(seed).await;
    }
    assert_eq!(
        metric(
            &server.metrics().await,
            &series("enygma_table_proofs_total", r#",tables="miss""#)
        ),
        Some(2.0)
    );
    server
        .wait_metric(
            &series("enygma_table_builds_finished_total", r#",outcome="built""#),
            1.0,
        )
        .await;
    let metrics = server.metrics().await;
    assert_eq!(
        metric(&metrics, &series("enygma_table_builds_started_total", "")),
        Some(1.0)
    );
    let bytes = metric(&metrics, &series("enygma_table_bytes", "")).unwrap();
    // 29.9 MiB for ownership-721 (docs/running.md).
    assert!(
        (20.0 * 1048576.0..40.0 * 1048576.0).contains(&bytes),
        "{bytes}"
    );

    let proof = prove(33).await;
    assert!(verdict(server.addr, "/verify-ownership-721", proof.body.as_bytes()).await);
    assert_eq!(
        metric(
            &server.metrics().await,
            &series("enygma_table_proofs_total", r#",tables="hit""#)
        ),
        Some(1.0)
    );
    let logs = server.stop();
    assert!(
        logs.iter()
            .any(|l| l.contains("precomputed MSM tables built") && l.contains("ownership-721")),
        "no build line in the log"
    );

    // A restart: the same traffic reads the kept tables back, and the proofs with them verify.
    // (the seeds of its three proofs, how the tables become resident)
    let restart = |seeds: [u64; 3], outcome: &'static str| {
        let cache_arg = cache_arg.to_owned();
        async move {
            let server =
                Server::start(&["--circuits", "ownership-721", "--cache-dir", &cache_arg]).await;
            for seed in &seeds[..2] {
                prove_at(server.addr, *seed).await;
            }
            server
                .wait_metric(
                    &series(
                        "enygma_table_builds_finished_total",
                        &format!(",outcome=\"{outcome}\""),
                    ),
                    1.0,
                )
                .await;
            let proof = prove_at(server.addr, seeds[2]).await;
            assert!(verdict(server.addr, "/verify-ownership-721", proof.body.as_bytes()).await);
            assert_eq!(
                metric(
                    &server.metrics().await,
                    &series("enygma_table_proofs_total", r#",tables="hit""#)
                ),
                Some(1.0)
            );
            server.stop()
        }
    };
    let read_back = |logs: &[String]| {
        logs.iter().any(|l| {
            l.contains("precomputed MSM tables read from the cache") && l.contains("ownership-721")
        })
    };
    let logs = restart([34, 35, 36], "read").await;
    assert!(read_back(&logs), "the kept tables were not read back");
    assert!(
        !logs
            .iter()
            .any(|l| l.contains("precomputed MSM tables built")),
        "tables built although kept"
    );

    // A kept table file cut short is refused (its digest no longer matches) and built again.
    let tables: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tables"))
        .collect();
    assert_eq!(tables.len(), 1, "one kept table file: {tables:?}");
    let len = std::fs::metadata(&tables[0]).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&tables[0])
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let logs = restart([37, 38, 39], "built").await;
    assert!(!read_back(&logs), "a damaged table file was read");
    assert!(
        logs.iter()
            .any(|l| l.contains("precomputed MSM tables built") && l.contains("ownership-721")),
        "the damaged tables were not built again"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

/// Keys replaced while serving: two clients prove ownership-721 one request after another while
/// its key file is replaced by a single-party key and the server is sent SIGHUP. No request
/// fails; every proof names the key it was made with (`Enygma-Key-Sha256`; both keys appear)
/// and verifies under that key's verifying key; `/readyz`, `enygma_key_info` and
/// `enygma_key_reloads_total` report the change. Then a key file that is not a key takes its
/// place: the reload refuses it, and the loaded key goes on proving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_replaced_under_load_fails_no_request() {
    use enygma_prover::keys::{self, KeyOrigin, KeyPaths, KeyRecord};
    use enygma_prover::{parse_proof_response, statements, MissingKeys, Prover};
    let _serial = serial();
    let root = std::env::temp_dir().join(format!("enygma-key-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (serving, old, new) = (root.join("serving"), root.join("old"), root.join("new"));
    let owner = statements::by_stem("ownership-721").unwrap();
    let copy_keys = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to).unwrap();
        let (from, to) = (KeyPaths::new(from, owner), KeyPaths::new(to, owner));
        // The verifying key and the digest first: the proving key's file is what a reload
        // looks at.
        for (a, b) in [
            (&from.verifying, &to.verifying),
            (&from.proving_digest, &to.proving_digest),
            (&from.proving, &to.proving),
        ] {
            std::fs::copy(a, b).unwrap();
        }
    };
    // The development key the server starts with, kept aside; the single-party key it gets.
    Prover::load(&serving, &[owner], MissingKeys::Create).unwrap();
    copy_keys(&serving, &old);
    let record = KeyRecord {
        origin: KeyOrigin::SingleParty,
        reduction: enygma_prover::qap::Reduction::Libsnark,
    };
    keys::save(&new, owner, &keys::generate_random(owner).unwrap(), &record).unwrap();
    let digest =
        |dir: &Path| hex::encode(keys::file_sha256(&KeyPaths::new(dir, owner).proving).unwrap());
    let (old_sha, new_sha) = (digest(&old), digest(&new));
    assert_ne!(old_sha, new_sha);

    let server = Server::start_in(
        &serving,
        &["--circuits", "ownership-721", "--cache-dir", "none"],
    )
    .await;
    let addr = server.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let clients = ownership_clients(addr, &stop, 200);
    let proofs_started =
        || async { metric(&server.metrics().await, "enygma_proofs_started_total").unwrap_or(0.0) };
    let wait_for_proofs = |at_least: f64| async move {
        let deadline = Instant::now() + PROVE_TIMEOUT;
        while proofs_started().await < at_least {
            assert!(Instant::now() < deadline, "fewer than {at_least} proofs");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    wait_for_proofs(3.0).await;
    copy_keys(&new, &serving);
    server.sighup();
    let deadline = Instant::now() + PROVE_TIMEOUT;
    loop {
        let ready = get(server.admin, "/readyz").await.unwrap();
        assert_eq!(ready.status, 200, "{}", ready.body);
        let keys: serde_json::Value = serde_json::from_str(&ready.body).unwrap();
        if keys["keys"]["ownership-721"]["sha256"] == new_sha.as_str() {
            assert_eq!(
                keys["keys"]["ownership-721"]["origin"]["kind"], "single-party",
                "{keys}"
            );
            break;
        }
        assert_eq!(keys["keys"]["ownership-721"]["sha256"], old_sha.as_str());
        assert!(Instant::now() < deadline, "the new key was never served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let switched = proofs_started().await;
    wait_for_proofs(switched + 4.0).await;
    stop.store(true, Ordering::SeqCst);
    let mut answers = Vec::new();
    for client in clients {
        answers.extend(client.await.unwrap());
    }

    let verifiers = [
        (
            old_sha.as_str(),
            Prover::load(&old, &[owner], MissingKeys::Refuse).unwrap(),
        ),
        (
            new_sha.as_str(),
            Prover::load(&new, &[owner], MissingKeys::Refuse).unwrap(),
        ),
    ];
    let mut made_with = [0, 0];
    for answer in &answers {
        assert_eq!(answer.status, 200, "{}", answer.body);
        let key = answer.header("enygma-key-sha256").expect("no key header");
        let (i, (_, verifier)) = verifiers
            .iter()
            .enumerate()
            .find(|(_, (sha, _))| *sha == key)
            .unwrap_or_else(|| panic!("a proof of an unknown key {key}"));
        let response = parse_proof_response(owner, answer.body.as_bytes()).unwrap();
        assert!(
            verifier.verify(owner, &response).unwrap(),
            "a proof that its key refuses"
        );
        assert!(
            !verifiers[1 - i].1.verify(owner, &response).unwrap(),
            "a proof the other key accepts"
        );
        made_with[i] += 1;
    }
    assert!(made_with[0] >= 1 && made_with[1] >= 4, "{made_with:?}");
    let metrics = server.metrics().await;
    assert_eq!(
        metric(&metrics, r#"enygma_key_reloads_total{result="replaced"}"#),
        Some(1.0)
    );
    let info = format!(
        r#"enygma_key_info{{statement="ownership-721",k="none",origin="single-party-random",reduction="libsnark",sha256="{new_sha}"}}"#
    );
    assert_eq!(metric(&metrics, &info), Some(1.0), "{metrics}");

    // Not a key: refused, and the loaded key stays.
    std::fs::write(KeyPaths::new(&serving, owner).proving, b"not a proving key").unwrap();
    server.sighup();
    server
        .wait_metric(r#"enygma_key_reloads_total{result="refused"}"#, 1.0)
        .await;
    let proof = post(
        addr,
        "/ownership-721",
        &generated_dvp("ownership-721", 0, 7),
        PROVE_TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!(proof.status, 200, "{}", proof.body);
    assert_eq!(proof.header("enygma-key-sha256"), Some(new_sha.as_str()));
    let logs = server.stop();
    assert!(
        logs.iter().any(|l| l.contains("proving key not replaced")),
        "no refusal in the log"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// Circuits added and retired while serving (`--circuits @FILE`, SIGHUP): two clients prove
/// ownership-721 one request after another while the list file trades it for transfer-k2 and
/// the server is sent SIGHUP. Every answer is a proof (200) or the 404 of a circuit not hosted,
/// never anything else (a request checked just before the retirement is proved with the keys it
/// holds), and no proof follows a client's first 404. transfer-k2 (a development key created
/// as at start) proves once `/readyz` lists it; `enygma_key_info` and the reload counters
/// follow. Then a list naming an unknown circuit: refused, and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_circuit_retired_under_load_fails_no_request() {
    let _serial = serial();
    let root = std::env::temp_dir().join(format!("enygma-hosted-list-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let keys = root.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let list = root.join("circuits");
    std::fs::write(&list, "# served here\nownership-721\n").unwrap();
    let flag = format!("@{}", list.display());
    let server = Server::start_in(&keys, &["--circuits", &flag, "--cache-dir", "none"]).await;
    let addr = server.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let clients = ownership_clients(addr, &stop, 400);
    let deadline = Instant::now() + PROVE_TIMEOUT;
    while metric(&server.metrics().await, "enygma_proofs_started_total").unwrap_or(0.0) < 3.0 {
        assert!(Instant::now() < deadline, "fewer than 3 proofs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    std::fs::write(&list, "transfer-k2\n").unwrap();
    server.sighup();
    let ready_keys = || async {
        let ready = get(server.admin, "/readyz").await.unwrap();
        assert_eq!(ready.status, 200, "{}", ready.body);
        let body: serde_json::Value = serde_json::from_str(&ready.body).unwrap();
        body["keys"].as_object().unwrap().clone()
    };
    let deadline = Instant::now() + PROVE_TIMEOUT;
    let transfer_sha = loop {
        let keys = ready_keys().await;
        if let Some(key) = keys.get("transfer-k2") {
            assert_eq!(keys.len(), 1, "{keys:?}");
            break key["sha256"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "transfer-k2 was never added");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::SeqCst);
    let not_hosted = r#"{"error":"circuit ownership-721 is not hosted here"}"#;
    let (mut proved, mut refused) = (0, 0);
    for client in clients {
        let answers = client.await.unwrap();
        let first_404 = answers.iter().position(|answer| answer.status == 404);
        for (i, Resp { status, body, .. }) in answers.iter().enumerate() {
            match status {
                200 if first_404.is_none_or(|at| i < at) => proved += 1,
                404 if body == not_hosted => refused += 1,
                _ => panic!("answer {i}: {status} {body}"),
            }
        }
    }
    assert!(
        proved >= 3 && refused >= 2,
        "{proved} proofs, {refused} 404s"
    );

    let proof = post(
        addr,
        "/generateProofTransfer-2",
        &generated("transfer-k2", 1),
        PROVE_TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!(proof.status, 200, "{}", proof.body);
    assert_eq!(
        proof.header("enygma-key-sha256"),
        Some(transfer_sha.as_str())
    );
    let metrics = server.metrics().await;
    for (result, count) in [("added", 1.0), ("retired", 1.0), ("refused", 0.0)] {
        let series = format!(r#"enygma_key_reloads_total{{result="{result}"}}"#);
        assert_eq!(metric(&metrics, &series), Some(count), "{series}");
    }
    let info: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("enygma_key_info{"))
        .collect();
    assert_eq!(info.len(), 1, "{info:?}");
    assert!(
        info[0].contains(r#"statement="transfer",k="2""#),
        "{info:?}"
    );

    // A list that does not parse: refused as a whole, the hosted set as it was.
    std::fs::write(&list, "transfer-k2\nownership-72\n").unwrap();
    server.sighup();
    server
        .wait_metric(r#"enygma_key_reloads_total{result="refused"}"#, 1.0)
        .await;
    assert_eq!(
        ready_keys().await.keys().collect::<Vec<_>>(),
        ["transfer-k2"]
    );
    let proof = post(
        addr,
        "/generateProofTransfer-2",
        &generated("transfer-k2", 2),
        PROVE_TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!(proof.status, 200, "{}", proof.body);
    let logs = server.stop();
    for expected in [
        "circuit added",
        "circuit retired",
        "line 2: unknown circuit",
    ] {
        assert!(
            logs.iter().any(|l| l.contains(expected)),
            "no {expected:?} in the log"
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// A server that hosts the hidden sender's transfer (named in `--circuits`; no server hosts it
/// unprompted): the reference's own sample without `nullifier` proves, the response's public
/// signal carries the nullifier the statement computed where the reference's sits (index 6k),
/// everything else as the reference-compatible statement gives it; the proof verifies on the
/// statement's own route; the sample's own nullifier, the reference's rule, is refused naming
/// check 12; and the reference's routes are not hosted there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_hosting_the_hidden_senders_transfer() {
    use enygma_prover::{request::to_decimal, statements};
    let _serial = serial();
    let k2 = sample("transfer-k2.json");
    let without_nullifier = with_field(&k2, |o| {
        o.remove("nullifier");
    });
    let server = Server::start(&["--circuits", "hidden-sender-transfer-k2"]).await;
    let proof = post(
        server.addr,
        "/generateProofHiddenSenderTransfer-2",
        &without_nullifier,
        PROVE_TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!(proof.status, 200, "{}", proof.body);
    let signal: Vec<String> =
        serde_json::from_value(proof.json()["public_signal"].clone()).unwrap();
    let public = |name: &str, body: &[u8]| -> Vec<String> {
        let instance = statements::instance(name, Some(2)).unwrap();
        let prepared = enygma_prover::prepare(instance, body).unwrap();
        prepared
            .public_inputs()
            .unwrap()
            .iter()
            .map(to_decimal)
            .collect()
    };
    let reference = public("transfer", &k2);
    assert_eq!(signal, public("hidden-sender-transfer", &without_nullifier));
    assert_eq!(signal.len(), reference.len());
    for (i, (ours, theirs)) in signal.iter().zip(&reference).enumerate() {
        assert_eq!(i == 12, ours != theirs, "public_signal[{i}]");
    }
    assert!(
        verdict(
            server.addr,
            "/verifyProofHiddenSenderTransfer-2",
            proof.body.as_bytes()
        )
        .await
    );

    let todays = post(
        server.addr,
        "/generateProofHiddenSenderTransfer-2",
        &k2,
        PROVE_TIMEOUT,
    )
    .await
    .unwrap();
    assert_eq!(
        (todays.status, todays.error()),
        (422, "check 12 (nullifier) failed".to_string())
    );
    for (path, stem) in [
        ("/generateProofTransfer-2", "transfer-k2"),
        ("/verifyProofTransfer-2", "transfer-k2"),
        (
            "/generateProofHiddenSenderTransfer-3",
            "hidden-sender-transfer-k3",
        ),
    ] {
        let r = post(server.addr, path, &k2, PROVE_TIMEOUT).await.unwrap();
        assert_eq!(
            (r.status, r.error()),
            (404, format!("circuit {stem} is not hosted here")),
            "{path}"
        );
    }
    server.stop();
}

/// The metric names a text reads: every `enygma_…` word that is not a Rust path.
fn metric_names_in(text: &str) -> Vec<String> {
    let is_name_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    let mut names = Vec::new();
    for (at, _) in text.match_indices("enygma_") {
        if text[..at].chars().next_back().is_some_and(is_name_char) {
            continue;
        }
        let rest = &text[at..];
        let end = rest.find(|c| !is_name_char(c)).unwrap_or(rest.len());
        if !rest[end..].starts_with("::") {
            names.push(rest[..end].to_string());
        }
    }
    names
}

/// The metric names deploy/'s files read (alert rules and their tests, the dashboard, the KEDA
/// triggers, the local acceptance scripts), with the file that reads each.
fn metric_names_deploy_reads() -> std::collections::BTreeMap<String, PathBuf> {
    let mut names = std::collections::BTreeMap::new();
    let mut dirs = vec![repo_dir().join("deploy")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                // Installed npm packages are not the deployment's.
                if !path.ends_with("node_modules") {
                    dirs.push(path);
                }
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                for name in metric_names_in(&text) {
                    names.entry(name).or_insert_with(|| path.clone());
                }
            }
        }
    }
    names
}

/// Every series deploy/ reads is on `/metrics` of a server that has just started and answered
/// one request: its families are initialised at start, so no alert rule, dashboard panel or
/// autoscaling trigger watches a name the server does not export (a rule on a missing series
/// never fires).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_series_deploy_reads_is_on_metrics() {
    let _serial = serial();
    let read = metric_names_deploy_reads();
    for name in [
        "enygma_ready",
        "enygma_shed_total",
        "enygma_prove_seconds_bucket",
    ] {
        assert!(
            read.contains_key(name),
            "deploy/ no longer reads {name}: {read:?}"
        );
    }
    let server = Server::start(&["--circuits", "transfer-k2"]).await;
    // Refused before the prover, and counted.
    assert_eq!(server.prove(2, b"{}").await.status, 400);
    let text = server.metrics().await;
    let exported: std::collections::BTreeSet<String> = enygma_formats::prometheus::parse(&text)
        .into_iter()
        .map(|sample| sample.name)
        .collect();
    let missing: Vec<String> = read
        .iter()
        .filter(|(name, _)| !exported.contains(*name))
        .map(|(name, file)| format!("{name} (read by {})", file.display()))
        .collect();
    assert!(missing.is_empty(), "not on /metrics: {missing:?}\n{text}");
    server.stop();
}

/// A proving request sent with an `Idempotency-Key` is proved once: two at once with the same
/// key and body get one proof (the second waits for the first), the key sent again gets the
/// kept answer, another body under the key is refused with 422, and a malformed key with 400.
/// Without the header, the same body is proved again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_request_is_proved_once() {
    let _serial = serial();
    let body = generated("transfer-k6", 11);
    let other = generated("transfer-k6", 12);
    let server = Server::start(&["--circuits", "transfer-k6"]).await;
    let path = "/generateProofTransfer-6";
    let started = |text: &str| metric(text, "enygma_proofs_started_total").unwrap();
    let before = started(&server.metrics().await);
    let key = ("Idempotency-Key", "8e03978e-40d5-43e8-bc93-6894a57f9324");
    let send = |headers: Vec<(&'static str, &'static str)>, body: Vec<u8>| {
        let addr = server.addr;
        async move {
            http::request(addr, "POST", path, &headers, &body, PROVE_TIMEOUT)
                .await
                .unwrap()
        }
    };

    let (a, b) = tokio::join!(send(vec![key], body.clone()), send(vec![key], body.clone()));
    for r in [&a, &b] {
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.header("content-type"),
            Some("application/json; charset=utf-8")
        );
    }
    assert_eq!(a.body, b.body, "the two answers are one proof");
    // Exactly one of them was proved; the other waited for it.
    let marked: Vec<Option<&str>> = [&a, &b]
        .iter()
        .map(|r| r.header("idempotent-replayed"))
        .collect();
    assert!(
        marked == [None, Some("true")] || marked == [Some("true"), None],
        "{marked:?}"
    );
    assert!(verdict(server.addr, "/verifyProofTransfer-6", a.body.as_bytes()).await);
    let m = server.metrics().await;
    assert_eq!(started(&m), before + 1.0, "one proof for two requests");
    assert_eq!(metric(&m, "enygma_idempotency_waits_total"), Some(1.0));

    // Sent again: the kept answer, no proof.
    let again = send(vec![key], body.clone()).await;
    assert_eq!(
        (again.status, again.header("idempotent-replayed")),
        (200, Some("true"))
    );
    assert_eq!(again.body, a.body);

    // The key with another body: 422 naming the header, nothing proved.
    let conflict = send(vec![key], other.clone()).await;
    assert_eq!(conflict.status, 422, "{}", conflict.body);
    assert!(
        conflict.error().contains("Idempotency-Key"),
        "{}",
        conflict.body
    );
    // A malformed key: 400 naming the header.
    let long: &'static str = Box::leak("k".repeat(256).into_boxed_str());
    for bad in ["", long] {
        let r = send(vec![("Idempotency-Key", bad)], body.clone()).await;
        assert_eq!(r.status, 400, "{}", r.body);
        assert!(r.error().contains("Idempotency-Key"), "{}", r.body);
    }
    let m = server.metrics().await;
    assert_eq!(started(&m), before + 1.0);
    assert_eq!(metric(&m, "enygma_idempotency_replays_total"), Some(1.0));
    assert_eq!(metric(&m, "enygma_idempotency_conflicts_total"), Some(1.0));
    assert_eq!(metric(&m, "enygma_idempotency_entries"), Some(1.0));

    // Without the header nothing changes: the same body is proved again.
    let plain = send(Vec::new(), body.clone()).await;
    assert_eq!(plain.status, 200, "{}", plain.body);
    assert_eq!(plain.header("idempotent-replayed"), None);
    assert_eq!(started(&server.metrics().await), before + 2.0);
    server.stop();
}
