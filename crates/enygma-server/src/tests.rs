//! In-process tests of the service over real HTTP on 127.0.0.1, with a deterministic fake
//! prover: admission (cap, FIFO, shedding, queue timeout, disconnects), probes under load,
//! status codes, observability and graceful drain.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::task::JoinHandle;

use crate::admission::AdmissionConfig;
use crate::auth::Auth;
use crate::backend::{BackendError, Instance, ProofBackend, ProofOutput};
use crate::test_support::RunningServer;
use crate::transport::Transport;
use crate::{AppState, Exit};

#[path = "../tests/common/http.rs"]
mod http;
use enygma_formats::prometheus::value as metric;
use enygma_formats::server_timing::parse_metrics as server_timing;
use http::{get, post};

/// Transport and access control over real sockets: TLS, mTLS, HTTP/2, tokens, slow clients,
/// connection cap, the default queue under the reference's stress test.
mod access;

/// Fair shares per caller against the FIFO.
mod shares;

/// The admin listener beside an API listener that requires mTLS and tokens.
mod admin;

/// Request-level refusals with the real request parser.
mod requests;

/// Circuits added and retired by a reloaded `--circuits @FILE` list.
mod hosting;

const SECRET: &str = "31415926535897932384626433832795028841971";
const T: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// The fake prover

/// The fake's request: how long to "prove", and how to fail.
#[derive(Deserialize, Clone, Debug)]
struct FakeReq {
    tag: String,
    /// The key stem of the route that prepared it (set by `prepare`, not by the client).
    #[serde(skip)]
    instance: String,
    #[serde(default)]
    ms: u64,
    /// How long the checks take.
    #[serde(default)]
    check_ms: u64,
    /// Busy-spin instead of sleeping (to load the CPU).
    #[serde(default)]
    spin: bool,
    /// "bad" (400), "check" (422), "internal" (500 from prove), "panic" (prove panics).
    #[serde(default)]
    fail: Option<String>,
    #[allow(dead_code)]
    #[serde(default)]
    secret_key: Option<String>,
}

#[derive(Default)]
struct FakeLog {
    /// (tag, start, end, thread name) of every proof.
    proofs: Mutex<Vec<(String, Instant, Instant, String)>>,
    /// (tag, key stem) of every proof, in order.
    kinds: Mutex<Vec<(String, String)>>,
    /// The key stem of every verification.
    verified: Mutex<Vec<String>>,
    prepared: AtomicUsize,
}

struct Fake(Arc<FakeLog>);

impl ProofBackend for Fake {
    type Prepared = FakeReq;

    fn prepare(&self, instance: Instance, body: &[u8]) -> Result<FakeReq, BackendError> {
        self.0.prepared.fetch_add(1, Ordering::SeqCst);
        let mut req: FakeReq = serde_json::from_slice(body)
            .map_err(|_| BackendError::BadRequest("invalid JSON body".into()))?;
        match req.fail.as_deref() {
            Some("bad") => Err(BackendError::BadRequest(
                "secret_key: not a decimal number".into(),
            )),
            Some("check") => Err(BackendError::CheckFailed(
                "check 12 (nullifier) failed".into(),
            )),
            _ => {
                std::thread::sleep(Duration::from_millis(req.check_ms));
                req.instance = instance.key_stem();
                Ok(req)
            }
        }
    }

    fn prove(&self, req: &FakeReq) -> Result<ProofOutput, BackendError> {
        let start = Instant::now();
        let d = Duration::from_millis(req.ms);
        if req.spin {
            while start.elapsed() < d {
                std::hint::spin_loop();
            }
        } else {
            std::thread::sleep(d);
        }
        let end = Instant::now();
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        self.0
            .proofs
            .lock()
            .unwrap()
            .push((req.tag.clone(), start, end, thread));
        self.0
            .kinds
            .lock()
            .unwrap()
            .push((req.tag.clone(), req.instance.clone()));
        match req.fail.as_deref() {
            Some("internal") => Err(BackendError::Internal(
                "prover failed: constraint system unsatisfied".into(),
            )),
            Some("panic") => panic!("fake prover panic"),
            _ => Ok(ProofOutput {
                json: serde_json::json!({ "tag": req.tag, "pi_a": ["1", "2"] })
                    .to_string()
                    .into_bytes(),
                witness: Duration::from_millis(1),
                prove: end - start,
                precomputed: false,
                key_sha256: None,
            }),
        }
    }

    fn verify(&self, instance: Instance, body: &[u8]) -> Result<bool, BackendError> {
        self.0.verified.lock().unwrap().push(instance.key_stem());
        let v: serde_json::Value = serde_json::from_slice(body)
            .map_err(|_| BackendError::BadRequest("invalid proof JSON".into()))?;
        Ok(v["tag"] == "good")
    }
}

/// A k=2 transfer the fake backend proves in `ms`, sent in the background (to hold a proving
/// slot or a queue place while the test sends others).
fn spawn_transfer(addr: SocketAddr, tag: &str, ms: u64) -> JoinHandle<http::Resp> {
    let b = body(tag, ms);
    tokio::spawn(async move { post(addr, "/generateProofTransfer-2", &b, T).await.unwrap() })
}

/// Posts a request the fake backend proves in `ms` and asserts it was: 200, the backend's
/// answer for `tag`, and the full Server-Timing every proving route carries.
async fn assert_proved(a: SocketAddr, path: &str, tag: &str, ms: u64) -> http::Resp {
    let r = post(a, path, &body(tag, ms), T).await.unwrap();
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    assert_eq!(r.json()["tag"], tag);
    let names: Vec<String> = server_timing(r.header("server-timing").expect("Server-Timing"))
        .into_iter()
        .map(|p| p.0)
        .collect();
    assert_eq!(names, ["queue", "witness", "prove", "total"], "{path}");
    r
}

/// Posts a request to `path` and asserts the refusal: `status` and exactly `message` as the
/// `{"error": ...}`.
async fn assert_refused(a: SocketAddr, path: &str, status: u16, message: &str) -> http::Resp {
    let r = post(a, path, &body("x", 0), T).await.unwrap();
    assert_eq!((r.status, r.error().as_str()), (status, message), "{path}");
    r
}

/// Posts a body the fake backend accepts to a verify route and asserts `{"valid": true}`.
async fn assert_verified(a: SocketAddr, path: &str) -> http::Resp {
    let r = post(a, path, br#"{"tag":"good"}"#, T).await.unwrap();
    assert_eq!(
        (r.status, r.json()),
        (200, serde_json::json!({"valid": true})),
        "{path}"
    );
    r
}

fn body(tag: &str, ms: u64) -> Vec<u8> {
    serde_json::json!({ "tag": tag, "ms": ms, "secret_key": SECRET })
        .to_string()
        .into_bytes()
}

fn body_with(tag: &str, ms: u64, extra: serde_json::Value) -> Vec<u8> {
    let mut v = serde_json::json!({ "tag": tag, "ms": ms, "secret_key": SECRET });
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v.to_string().into_bytes()
}

// ---------------------------------------------------------------------------------------------
// Harness

/// The service with the fake prover, running in the test's runtime.
struct TestServer {
    addr: SocketAddr,
    log: Arc<FakeLog>,
    server: RunningServer,
}

fn cfg(max_inflight: Option<usize>, queue_depth: usize, queue_timeout_ms: u64) -> AdmissionConfig {
    AdmissionConfig {
        max_inflight,
        prove_threads: crate::admission::ProveThreads::PerSlot(1),
        queue_depth,
        queue_timeout: Duration::from_millis(queue_timeout_ms),
        // Small enough that these tests' queues are bounded by their depth alone; the
        // expected-wait rule has tests of its own.
        service_time: Duration::from_millis(1),
        calibrate: false,
        verify_max_inflight: 2,
        verify_queue_depth: 4,
        pin_cpus: false,
        check_threads: 2,
        check_queue_depth: queue_depth.max(8),
        // Off: these tests send many bad requests on purpose; the limit has tests of its own.
        bad_request_burst: 0,
        bad_request_refill: Duration::from_millis(500),
        auth_failure_burst: 0,
        auth_failure_refill: Duration::from_millis(500),
        // The default admission: one caller here, so its queue is the FIFO's.
        fair: Some(crate::admission::FairConfig::equal(
            queue_depth,
            max_inflight.unwrap_or(1),
        )),
    }
}

async fn start_with(
    cfg: AdmissionConfig,
    load_delay: Duration,
    drain_timeout: Duration,
    fail_load: bool,
) -> TestServer {
    start_full(
        cfg,
        load_delay,
        drain_timeout,
        fail_load,
        Transport::default(),
        Arc::new(Auth::default()),
    )
    .await
}

/// [`start_hosting`] with every statement instance hosted.
async fn start_full(
    cfg: AdmissionConfig,
    load_delay: Duration,
    drain_timeout: Duration,
    fail_load: bool,
    transport: Transport,
    auth: Arc<Auth>,
) -> TestServer {
    let every = enygma_prover::statements::instances().collect();
    start_hosting(
        cfg,
        load_delay,
        drain_timeout,
        fail_load,
        every,
        transport,
        auth,
    )
    .await
}

async fn start_hosting(
    cfg: AdmissionConfig,
    load_delay: Duration,
    drain_timeout: Duration,
    fail_load: bool,
    hosted: Vec<Instance>,
    transport: Transport,
    auth: Arc<Auth>,
) -> TestServer {
    let tls = transport.tls.is_some();
    let state = Arc::new(
        AppState::<Fake>::new(&cfg, 64 * 1024, hosted)
            .unwrap()
            .with_auth(auth),
    );
    let log = Arc::new(FakeLog::default());
    let fake = Fake(log.clone());
    let load = move || {
        std::thread::sleep(load_delay);
        if fail_load {
            Err("proving key for k=2 does not match its circuit".to_string())
        } else {
            Ok(fake)
        }
    };
    let server = RunningServer::start_with_admin(state, load, drain_timeout, transport).await;
    let server = TestServer {
        addr: server.addr,
        log,
        server,
    };
    if !fail_load && load_delay.is_zero() && !tls {
        server.wait_ready().await;
    }
    server
}

async fn start(cfg: AdmissionConfig) -> TestServer {
    start_with(cfg, Duration::ZERO, Duration::from_secs(10), false).await
}

impl TestServer {
    async fn wait_ready(&self) {
        let deadline = Instant::now() + T;
        loop {
            if let Ok(r) = get(self.addr, "/readyz").await {
                if r.status == 200 {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "server not ready in time");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn prove_path(&self) -> &'static str {
        "/generateProofTransfer-2"
    }

    async fn prove(&self, body: &[u8]) -> http::Resp {
        post(self.addr, self.prove_path(), body, T).await.unwrap()
    }

    /// `/metrics` from the admin listener: open whatever tokens the API requires.
    async fn metrics(&self) -> String {
        let admin = self.server.admin.expect("an admin listener");
        get(admin, "/metrics").await.unwrap().body
    }

    /// Polls `/metrics` until `series` has `value` (a slot taken, a request queued, ...).
    async fn wait_metric(&self, series: &str, value: f64) {
        let deadline = Instant::now() + T;
        while metric(&self.metrics().await, series) != Some(value) {
            assert!(Instant::now() < deadline, "{series} never reached {value}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn proved_tags(&self) -> Vec<String> {
        self.log
            .proofs
            .lock()
            .unwrap()
            .iter()
            .map(|p| p.0.clone())
            .collect()
    }

    async fn stop(self) -> Exit {
        tokio::time::timeout(T, self.server.stop())
            .await
            .expect("server did not stop")
    }
}

fn assert_no_secret(r: &http::Resp) {
    assert!(!r.body.contains(SECRET), "secret in body: {}", r.body);
    for (k, v) in &r.headers {
        assert!(!v.contains(SECRET), "secret in header {k}");
    }
}

/// Concurrently sends `bodies` (all in flight at once); returns (response, latency) in order.
async fn burst(
    addr: SocketAddr,
    path: &'static str,
    bodies: Vec<Vec<u8>>,
) -> Vec<(http::Resp, Duration)> {
    let t0 = Instant::now();
    let tasks: Vec<_> = bodies
        .into_iter()
        .map(|b| {
            tokio::spawn(async move {
                let r = post(addr, path, &b, T).await.unwrap();
                (r, t0.elapsed())
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_answer_while_keys_load_and_readiness_follows() {
    let s = start_with(
        cfg(Some(1), 4, 5_000),
        Duration::from_millis(500),
        Duration::from_secs(5),
        false,
    )
    .await;
    let live = get(s.addr, "/livez").await.unwrap();
    assert_eq!(live.status, 200);
    let health = get(s.addr, "/healthcheck").await.unwrap();
    assert_eq!(health.status, 200);
    assert_eq!(
        health.body,
        r#"{"message":"Server is healthy","status":"ok"}"#
    );
    assert_eq!(
        health.json(),
        serde_json::json!({"status": "ok", "message": "Server is healthy"})
    );
    let ready = get(s.addr, "/readyz").await.unwrap();
    assert_eq!(ready.status, 503);
    let early = s.prove(&body("early", 0)).await;
    assert_eq!(early.status, 503);
    assert!(early.header("retry-after").is_some());
    assert!(metric(&s.metrics().await, "enygma_ready") == Some(0.0));

    s.wait_ready().await;
    let m = s.metrics().await;
    assert_eq!(metric(&m, "enygma_ready"), Some(1.0));
    assert_eq!(
        metric(&m, "enygma_max_inflight{queue=\"prove\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(&m, "enygma_queue_capacity{queue=\"prove\"}"),
        Some(4.0)
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_key_load_stops_the_service() {
    let s = start_with(
        cfg(Some(1), 4, 5_000),
        Duration::ZERO,
        Duration::from_secs(5),
        true,
    )
    .await;
    let exit = tokio::time::timeout(T, s.server.task)
        .await
        .expect("did not stop")
        .unwrap();
    assert_eq!(exit, Exit::Startup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_codes_and_no_secret_anywhere() {
    let s = start(cfg(Some(1), 4, 5_000)).await;
    let a = s.addr;
    let bad_k = assert_refused(
        a,
        "/generateProofTransfer-7",
        400,
        "k value not supported: must be between 2 and 6",
    )
    .await;
    let neg_k = assert_refused(
        a,
        "/generateProofTransfer--1",
        400,
        "k value not supported: must be between 2 and 6",
    )
    .await;
    let nan_k = assert_refused(
        a,
        "/generateProofTransfer-abc",
        400,
        "Invalid k parameter: must be a number",
    )
    .await;
    let six = post(a, "/generateProofTransfer-6", &body("six", 0), T)
        .await
        .unwrap();
    assert_eq!(six.status, 200);

    let big = vec![b' '; 64 * 1024 + 1];
    let too_big = s.prove(&big).await;
    assert_eq!(too_big.status, 413);
    assert!(too_big.error().contains("65536"));

    let not_json = s.prove(b"{not json").await;
    assert_eq!(not_json.status, 400);
    let bad = s
        .prove(&body_with("bad", 0, serde_json::json!({"fail": "bad"})))
        .await;
    assert_eq!(
        (bad.status, bad.error().as_str()),
        (400, "secret_key: not a decimal number")
    );
    let check = s
        .prove(&body_with("check", 0, serde_json::json!({"fail": "check"})))
        .await;
    assert_eq!(
        (check.status, check.error().as_str()),
        (422, "check 12 (nullifier) failed")
    );
    let internal = s
        .prove(&body_with(
            "internal",
            0,
            serde_json::json!({"fail": "internal"}),
        ))
        .await;
    assert_eq!(internal.status, 500);
    let panic = s
        .prove(&body_with("panic", 0, serde_json::json!({"fail": "panic"})))
        .await;
    assert_eq!(panic.status, 500);
    // The service survives a prover panic and frees the slot.
    let ok = s.prove(&body("ok", 0)).await;
    assert_eq!(ok.status, 200);
    assert_eq!(
        ok.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(ok.json()["tag"], "ok");

    let unknown = get(a, "/nope").await.unwrap();
    assert_eq!(unknown.status, 404);

    for r in [
        &bad_k, &neg_k, &nan_k, &too_big, &not_json, &bad, &check, &internal, &panic, &ok,
    ] {
        assert_no_secret(r);
        assert_eq!(
            r.header("content-type"),
            Some("application/json; charset=utf-8"),
            "{}",
            r.body
        );
    }
    // Every error answer is as the OpenAPI document describes it (status, headers, body).
    let conforms = |path: &str, r: &http::Resp| {
        crate::openapi::tests::assert_conforms("POST", path, r.status, &r.headers, &r.body)
    };
    conforms("/generateProofTransfer-7", &bad_k);
    conforms("/generateProofTransfer--1", &neg_k);
    conforms("/generateProofTransfer-abc", &nan_k);
    for r in [&too_big, &not_json, &bad, &check, &internal, &panic] {
        conforms(s.prove_path(), r);
    }
    for path in ["/healthcheck", "/livez", "/readyz", "/openapi.json"] {
        let r = get(a, path).await.unwrap();
        crate::openapi::tests::assert_conforms("GET", path, r.status, &r.headers, &r.body);
    }
    // Invalid requests never reached the prover, nor a queue place.
    assert_eq!(s.proved_tags(), vec!["six", "internal", "panic", "ok"]);
    let m = s.metrics().await;
    assert!(!m.contains(SECRET));
    assert_eq!(metric(&m, "enygma_proofs_started_total"), Some(4.0));
    assert_eq!(metric(&m, "enygma_proof_panics_total"), Some(1.0));
    assert_eq!(
        metric(&m, "enygma_http_requests_total{route=\"/generateProofTransfer-{k}\",k=\"none\",status=\"400\"}"),
        Some(3.0)
    );
    assert_eq!(
        metric(&m, "enygma_http_requests_total{route=\"/generateProofTransfer-{k}\",k=\"2\",status=\"422\"}"),
        Some(1.0)
    );
    assert_eq!(metric(&m, "enygma_proofs_in_flight"), Some(0.0));
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proof_responses_carry_timing_and_request_id() {
    let s = start(cfg(Some(1), 4, 5_000)).await;
    let r = http::request(
        s.addr,
        "POST",
        s.prove_path(),
        &[("X-Request-Id", "gw-42.abc")],
        &body("t", 30),
        T,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-request-id"), Some("gw-42.abc"));
    let parts = server_timing(r.header("server-timing").expect("Server-Timing"));
    let names: Vec<&str> = parts.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(names, ["queue", "witness", "prove", "total"]);
    let get_ms = |n: &str| parts.iter().find(|p| p.0 == n).unwrap().1.unwrap();
    assert!(get_ms("prove") >= 30.0, "{parts:?}");
    // (the fake reports a nominal 1 ms witness time that it does not spend)
    assert!(get_ms("total") >= get_ms("prove"), "{parts:?}");

    // Without (or with an unusable) X-Request-Id, one is generated.
    let r2 = http::request(
        s.addr,
        "POST",
        s.prove_path(),
        &[("X-Request-Id", "has spaces")],
        &body("t", 0),
        T,
    )
    .await
    .unwrap();
    let id = r2.header("x-request-id").unwrap();
    assert_eq!(id.len(), 16);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    // Errors on the proving route carry Server-Timing too (what is known).
    let e = s
        .prove(&body_with("c", 0, serde_json::json!({"fail": "check"})))
        .await;
    assert!(e.header("server-timing").unwrap().starts_with("total;dur="));
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cap_of_one_runs_proofs_one_at_a_time_in_fifo_order() {
    let s = start(cfg(Some(1), 8, 10_000)).await;
    let mut tasks = Vec::new();
    for tag in ["a", "b", "c", "d"] {
        let addr = s.addr;
        tasks.push(tokio::spawn(async move {
            post(addr, "/generateProofTransfer-3", &body(tag, 120), T)
                .await
                .unwrap()
        }));
        // Unambiguous arrival order.
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().status, 200);
    }
    let proofs = s.log.proofs.lock().unwrap().clone();
    let tags: Vec<&str> = proofs.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(tags, ["a", "b", "c", "d"], "FIFO order");
    for w in proofs.windows(2) {
        assert!(w[1].1 >= w[0].2, "two proofs overlapped");
    }
    // Proofs ran on the slot's dedicated rayon pool, never on a tokio worker.
    assert!(proofs.iter().all(|p| p.3 == "prove0-0"), "{proofs:?}");
    let m = s.metrics().await;
    assert_eq!(metric(&m, "enygma_proofs_in_flight_peak"), Some(1.0));
    assert_eq!(
        metric(&m, "enygma_queue_wait_seconds_count{queue=\"prove\"}"),
        Some(4.0)
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn burst_of_eight_admits_three_and_sheds_five_at_once() {
    let s = start(cfg(Some(1), 2, 10_000)).await;
    let bodies = (0..8).map(|i| body(&format!("r{i}"), 300)).collect();
    let results = burst(s.addr, "/generateProofTransfer-6", bodies).await;
    let ok = results.iter().filter(|(r, _)| r.status == 200).count();
    let shed: Vec<_> = results.iter().filter(|(r, _)| r.status == 503).collect();
    assert_eq!(ok, 3, "{results:?}");
    assert_eq!(shed.len(), 5, "{results:?}");
    for (r, latency) in &shed {
        assert!(*latency < Duration::from_secs(1), "shed after {latency:?}");
        let retry: u64 = r
            .header("retry-after")
            .expect("Retry-After")
            .parse()
            .unwrap();
        assert!((1..=60).contains(&retry));
        assert!(r.error().contains("busy"));
    }
    let proofs = s.log.proofs.lock().unwrap().clone();
    assert_eq!(proofs.len(), 3);
    for w in proofs.windows(2) {
        assert!(w[1].1 >= w[0].2, "two proofs overlapped");
    }
    let m = s.metrics().await;
    assert_eq!(metric(&m, "enygma_proofs_in_flight_peak"), Some(1.0));
    assert_eq!(metric(&m, "enygma_shed_total{queue=\"prove\"}"), Some(5.0));
    assert_eq!(metric(&m, "enygma_queue_depth{queue=\"prove\"}"), Some(0.0));
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_timeout_answers_504_and_never_proves() {
    let s = start(cfg(Some(1), 4, 200)).await;
    let addr = s.addr;
    let first = spawn_transfer(addr, "long", 1_000);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let t0 = Instant::now();
    let late = s.prove(&body("late", 0)).await;
    let waited = t0.elapsed();
    assert_eq!(late.status, 504, "{}", late.body);
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_millis(900),
        "{waited:?}"
    );
    assert!(late.error().contains("timed out"));
    let st = server_timing(late.header("server-timing").unwrap());
    assert!(
        st.iter()
            .any(|(n, d)| n == "queue" && d.is_some_and(|d| d >= 200.0)),
        "{st:?}"
    );
    assert_eq!(first.await.unwrap().status, 200);
    assert_eq!(s.proved_tags(), vec!["long"]);
    let m = s.metrics().await;
    assert_eq!(
        metric(&m, "enygma_queue_timeouts_total{queue=\"prove\"}"),
        Some(1.0)
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_request_whose_client_left_is_never_proved() {
    let s = start(cfg(Some(1), 4, 10_000)).await;
    let addr = s.addr;
    let first = spawn_transfer(addr, "first", 600);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let stream = http::send(
        addr,
        "POST",
        "/generateProofTransfer-2",
        &[],
        &body("gone", 0),
    )
    .await
    .unwrap();
    // Wait until it is queued, then hang up.
    s.wait_metric("enygma_queue_depth{queue=\"prove\"}", 1.0)
        .await;
    drop(stream);
    s.wait_metric("enygma_abandoned_total{queue=\"prove\"}", 1.0)
        .await;
    assert_eq!(first.await.unwrap().status, 200);
    // Give a (wrongly) surviving request every chance to be proved.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(s.proved_tags(), vec!["first"]);
    let m = s.metrics().await;
    assert_eq!(metric(&m, "enygma_queue_depth{queue=\"prove\"}"), Some(0.0));
    assert_eq!(metric(&m, "enygma_proofs_started_total"), Some(1.0));
    assert_eq!(
        metric(&m, "enygma_http_requests_total{route=\"/generateProofTransfer-{k}\",k=\"2\",status=\"499\"}"),
        Some(1.0)
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthcheck_stays_fast_while_proofs_saturate_the_cpu() {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let s = start(cfg(Some(cpus), 2 * cpus, 10_000)).await;
    let bodies = (0..2 * cpus)
        .map(|i| body_with(&format!("spin{i}"), 800, serde_json::json!({"spin": true})))
        .collect();
    let addr = s.addr;
    let load = tokio::spawn(async move { burst(addr, "/generateProofTransfer-2", bodies).await });
    // Wait until every slot is busy.
    s.wait_metric("enygma_proofs_in_flight", cpus as f64).await;
    let mut worst = Duration::ZERO;
    for _ in 0..10 {
        let t0 = Instant::now();
        let r = get(s.addr, "/healthcheck").await.unwrap();
        worst = worst.max(t0.elapsed());
        assert_eq!(r.status, 200);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        worst < Duration::from_millis(100),
        "healthcheck took {worst:?} under load"
    );
    for (r, _) in load.await.unwrap() {
        assert_eq!(r.status, 200);
    }
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_in_flight_and_queued_proofs() {
    let s = start(cfg(Some(1), 4, 10_000)).await;
    let addr = s.addr;
    let results = tokio::spawn(async move {
        burst(
            addr,
            "/generateProofTransfer-2",
            vec![body("in-flight", 400), body("queued", 200)],
        )
        .await
    });
    s.wait_metric("enygma_queue_depth{queue=\"prove\"}", 1.0)
        .await;
    let log = s.log.clone();
    let t0 = Instant::now();
    let exit = s.stop().await;
    assert_eq!(exit, Exit::Clean);
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "stopped before draining"
    );
    for (r, _) in results.await.unwrap() {
        assert_eq!(r.status, 200);
    }
    assert_eq!(log.proofs.lock().unwrap().len(), 2);
    // The listener is closed.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_timeout_gives_up() {
    let s = start_with(
        cfg(Some(1), 4, 10_000),
        Duration::ZERO,
        Duration::from_millis(200),
        false,
    )
    .await;
    let addr = s.addr;
    let _slow = tokio::spawn(async move {
        post(addr, "/generateProofTransfer-2", &body("slow", 3_000), T).await
    });
    s.wait_metric("enygma_proofs_in_flight", 1.0).await;
    let t0 = Instant::now();
    assert_eq!(s.stop().await, Exit::DrainTimeout);
    assert!(t0.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlimited_mode_starts_everything_at_once() {
    let s = start(cfg(None, 0, 10_000)).await;
    let t0 = Instant::now();
    let results = burst(
        s.addr,
        "/generateProofTransfer-2",
        (0..4).map(|i| body(&format!("u{i}"), 300)).collect(),
    )
    .await;
    assert!(results.iter().all(|(r, _)| r.status == 200));
    assert!(
        t0.elapsed() < Duration::from_millis(1_000),
        "{:?}",
        t0.elapsed()
    );
    let m = s.metrics().await;
    assert_eq!(metric(&m, "enygma_proofs_in_flight_peak"), Some(4.0));
    assert_eq!(
        metric(&m, "enygma_max_inflight{queue=\"prove\"}"),
        Some(0.0)
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_has_its_own_limit_and_skips_the_proving_queue() {
    // One proving slot and no queue: while it is busy every proving request is shed.
    let s = start(cfg(Some(1), 0, 10_000)).await;
    let addr = s.addr;
    let busy = spawn_transfer(addr, "busy", 600);
    s.wait_metric("enygma_proofs_in_flight", 1.0).await;
    assert_eq!(s.prove(&body("shed", 0)).await.status, 503);
    let t0 = Instant::now();
    let good = post(addr, "/verifyProofTransfer-2", br#"{"tag":"good"}"#, T)
        .await
        .unwrap();
    assert!(t0.elapsed() < Duration::from_millis(300));
    assert_eq!(
        (good.status, good.json()),
        (200, serde_json::json!({"valid": true}))
    );
    let forged = post(addr, "/verifyProofTransfer-2", br#"{"tag":"forged"}"#, T)
        .await
        .unwrap();
    assert_eq!(
        (forged.status, forged.json()),
        (200, serde_json::json!({"valid": false}))
    );
    let garbage = post(addr, "/verifyProofTransfer-2", b"[", T).await.unwrap();
    assert_eq!(garbage.status, 400);
    let bad_k = post(addr, "/verifyProofTransfer-9", br#"{"tag":"good"}"#, T)
        .await
        .unwrap();
    assert_eq!(
        (bad_k.status, bad_k.error().as_str()),
        (400, "k value not supported: must be between 2 and 6")
    );
    assert_eq!(busy.await.unwrap().status, 200);
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deposit_and_withdraw_routes_reach_the_backend_with_their_statement() {
    let s = start(cfg(Some(1), 4, 5_000)).await;
    let a = s.addr;
    for (path, tag) in [
        ("/generateProofTransfer-2", "t"),
        ("/generateProofDeposit-3", "d"),
        ("/generateProofWithdraw-4", "w"),
    ] {
        let r = assert_proved(a, path, tag, 10).await;
        assert_no_secret(&r);
    }
    assert_eq!(
        *s.log.kinds.lock().unwrap(),
        vec![
            ("t".to_string(), "transfer-k2".to_string()),
            ("d".to_string(), "deposit-k3".to_string()),
            ("w".to_string(), "withdraw-k4".to_string())
        ]
    );
    for path in [
        "/verifyProofTransfer-2",
        "/verifyProofDeposit-5",
        "/verifyProofWithdraw-6",
    ] {
        let r = assert_verified(a, path).await;
        assert!(r.header("server-timing").is_none(), "{path}");
    }
    assert_eq!(
        *s.log.verified.lock().unwrap(),
        ["transfer-k2", "deposit-k5", "withdraw-k6"]
    );

    // The reference's k messages and the statuses hold on the new routes too.
    assert_refused(
        a,
        "/generateProofDeposit-7",
        400,
        "k value not supported: must be between 2 and 6",
    )
    .await;
    assert_refused(
        a,
        "/verifyProofWithdraw-x",
        400,
        "Invalid k parameter: must be a number",
    )
    .await;
    let check = post(
        a,
        "/generateProofWithdraw-2",
        &body_with("c", 0, serde_json::json!({"fail": "check"})),
        T,
    )
    .await
    .unwrap();
    assert_eq!(check.status, 422);
    assert!(check
        .header("server-timing")
        .unwrap()
        .starts_with("total;dur="));
    // Unknown statements are not routes.
    assert_eq!(
        post(a, "/generateProofJoinsplit-2", &body("x", 0), T)
            .await
            .unwrap()
            .status,
        404
    );
    assert_eq!(
        post(a, "/generateProofdeposit-2", &body("x", 0), T)
            .await
            .unwrap()
            .status,
        404
    );

    let m = s.metrics().await;
    assert!(!m.contains(SECRET));
    for (route, k, status, n) in [
        ("/generateProofTransfer-{k}", "2", "200", 1.0),
        ("/generateProofDeposit-{k}", "3", "200", 1.0),
        ("/generateProofWithdraw-{k}", "4", "200", 1.0),
        ("/generateProofWithdraw-{k}", "2", "422", 1.0),
        ("/generateProofDeposit-{k}", "none", "400", 1.0),
        ("/verifyProofDeposit-{k}", "5", "200", 1.0),
        ("/verifyProofWithdraw-{k}", "6", "200", 1.0),
        ("/verifyProofWithdraw-{k}", "none", "400", 1.0),
        ("other", "none", "404", 2.0),
    ] {
        let series = format!(
            "enygma_http_requests_total{{route=\"{route}\",k=\"{k}\",status=\"{status}\"}}"
        );
        assert_eq!(metric(&m, &series), Some(n), "{series}");
    }
    assert_eq!(metric(&m, "enygma_proofs_started_total"), Some(3.0)); // the 422 never reached the prover
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_statements_share_one_proving_cap_and_queue() {
    // One slot and one queue place for the three statements together.
    let s = start(cfg(Some(1), 1, 10_000)).await;
    let addr = s.addr;
    let running = spawn_transfer(addr, "t-run", 500);
    s.wait_metric("enygma_proofs_in_flight", 1.0).await;
    let queued = tokio::spawn(async move {
        post(addr, "/generateProofWithdraw-2", &body("w-queued", 0), T)
            .await
            .unwrap()
    });
    s.wait_metric("enygma_queue_depth{queue=\"prove\"}", 1.0)
        .await;
    // The slot and the queue are full: a deposit (and another transfer) is shed at once.
    let prepared_before = s.log.prepared.load(Ordering::SeqCst);
    let t0 = Instant::now();
    let shed = post(addr, "/generateProofDeposit-2", &body("d-shed", 0), T)
        .await
        .unwrap();
    assert!(
        t0.elapsed() < Duration::from_millis(300),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(shed.status, 503, "{}", shed.body);
    assert!(shed.header("retry-after").is_some());
    assert!(shed.error().contains("busy"));
    assert_eq!(
        post(addr, "/generateProofTransfer-3", &body("t-shed", 0), T)
            .await
            .unwrap()
            .status,
        503
    );
    // Shed early: the checks of the shed requests never ran.
    assert_eq!(s.log.prepared.load(Ordering::SeqCst), prepared_before);
    // Verification of any statement skips the proving queue.
    let v = post(addr, "/verifyProofDeposit-2", br#"{"tag":"good"}"#, T)
        .await
        .unwrap();
    assert_eq!(
        (v.status, v.json()),
        (200, serde_json::json!({"valid": true}))
    );

    assert_eq!(running.await.unwrap().status, 200);
    assert_eq!(queued.await.unwrap().status, 200);
    let proofs = s.log.proofs.lock().unwrap().clone();
    let tags: Vec<&str> = proofs.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(tags, ["t-run", "w-queued"]);
    assert!(
        proofs[1].1 >= proofs[0].2,
        "a withdraw overlapped a transfer"
    );
    let m = s.metrics().await;
    assert_eq!(metric(&m, "enygma_proofs_in_flight_peak"), Some(1.0));
    assert_eq!(metric(&m, "enygma_shed_total{queue=\"prove\"}"), Some(2.0));
    assert_eq!(
        metric(&m, "enygma_http_requests_total{route=\"/generateProofDeposit-{k}\",k=\"2\",status=\"503\"}"),
        Some(1.0)
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_hosting_one_instance_answers_its_routes_and_404s_the_others() {
    let transfer6 = enygma_prover::statements::by_stem("transfer-k6").unwrap();
    let s = start_hosting(
        cfg(Some(1), 4, 5_000),
        Duration::ZERO,
        Duration::from_secs(10),
        false,
        vec![transfer6],
        Transport::default(),
        Arc::new(Auth::default()),
    )
    .await;
    s.wait_ready().await;
    let a = s.addr;
    let ok = post(a, "/generateProofTransfer-6", &body("t6", 0), T)
        .await
        .unwrap();
    assert_eq!(ok.status, 200, "{}", ok.body);
    let v = post(a, "/verifyProofTransfer-6", br#"{"tag":"good"}"#, T)
        .await
        .unwrap();
    assert_eq!(
        (v.status, v.json()),
        (200, serde_json::json!({"valid": true}))
    );
    let prepared = s.log.prepared.load(Ordering::SeqCst);
    for (path, stem) in [
        ("/generateProofTransfer-2", "transfer-k2"),
        ("/generateProofDeposit-3", "deposit-k3"),
        ("/verifyProofWithdraw-6", "withdraw-k6"),
    ] {
        let r = post(a, path, &body("x", 0), T).await.unwrap();
        assert_eq!(
            (r.status, r.error()),
            (404, format!("circuit {stem} is not hosted here")),
            "{path}"
        );
        assert_no_secret(&r);
        crate::openapi::tests::assert_conforms("POST", path, r.status, &r.headers, &r.body);
    }
    // Another method is 405 at once, hosted or not, whatever the body: it never reaches the
    // checks nor a queue place.
    for path in [
        "/generateProofTransfer-6",
        "/generateProofDeposit-3",
        "/verifyProofTransfer-6",
    ] {
        for method in ["GET", "PUT", "TRACE", "DELETE"] {
            let r = http::request(a, method, path, &[], &body("t6", 0), T)
                .await
                .unwrap();
            assert_eq!(
                (r.status, r.header("allow")),
                (405, Some("POST")),
                "{method} {path}"
            );
        }
    }
    // A bad k is still the reference's 400, on any statement's route.
    assert_refused(
        a,
        "/generateProofDeposit-7",
        400,
        "k value not supported: must be between 2 and 6",
    )
    .await;
    // The refused requests never reached the backend.
    assert_eq!(s.log.prepared.load(Ordering::SeqCst), prepared);
    assert_eq!(s.log.verified.lock().unwrap().as_slice(), ["transfer-k6"]);

    let m = s.metrics().await;
    assert_eq!(
        metric(&m, "enygma_http_requests_total{route=\"/generateProofDeposit-{k}\",k=\"3\",status=\"404\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &m,
            "enygma_prove_seconds_count{statement=\"transfer\",k=\"6\"}"
        ),
        Some(1.0)
    );
    // Only the hosted instance has proof histograms.
    let series: Vec<&str> = m
        .lines()
        .filter(|l| l.starts_with("enygma_witness_seconds_count"))
        .collect();
    assert_eq!(
        series,
        ["enygma_witness_seconds_count{statement=\"transfer\",k=\"6\"} 1"]
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

/// The three DvP statements (no sizes) get their routes from the registry: prove and verify
/// reach the backend with their instance, under the one proving cap and queue of every
/// statement, with `k="none"` in the metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dvp_routes_reach_the_backend_under_the_shared_admission() {
    // One slot and one queue place for every statement together.
    let s = start(cfg(Some(1), 1, 10_000)).await;
    let a = s.addr;
    for (path, tag) in [
        ("/join-split-enygma", "erc20"),
        ("/join-split-1155", "erc1155"),
        ("/ownership-721", "erc721"),
    ] {
        assert_proved(a, path, tag, 0).await;
    }
    assert_eq!(
        s.log.kinds.lock().unwrap().clone(),
        [
            ("erc20", "join-split-enygma"),
            ("erc1155", "join-split-1155"),
            ("erc721", "ownership-721"),
        ]
        .map(|(t, i)| (t.to_string(), i.to_string()))
    );
    for path in [
        "/verify-join-split-enygma",
        "/verify-join-split-1155",
        "/verify-ownership-721",
    ] {
        assert_verified(a, path).await;
    }
    assert_eq!(
        *s.log.verified.lock().unwrap(),
        ["join-split-enygma", "join-split-1155", "ownership-721"]
    );
    // A DvP path takes no k, and the reference's other spellings are not routes.
    for path in [
        "/join-split-enygma-2",
        "/join-split-erc20",
        "/Ownership-721",
    ] {
        let r = post(a, path, &body("x", 0), T).await.unwrap();
        assert_eq!(r.status, 404, "{path}");
    }

    // A transfer holds the slot, an ownership transfer the queue place: a join-split is shed.
    let running = tokio::spawn(async move {
        post(a, "/generateProofTransfer-2", &body("t-run", 500), T)
            .await
            .unwrap()
    });
    s.wait_metric("enygma_proofs_in_flight", 1.0).await;
    let queued = tokio::spawn(async move {
        post(a, "/ownership-721", &body("o-queued", 0), T)
            .await
            .unwrap()
    });
    s.wait_metric("enygma_queue_depth{queue=\"prove\"}", 1.0)
        .await;
    let shed = post(a, "/join-split-1155", &body("j-shed", 0), T)
        .await
        .unwrap();
    assert_eq!(shed.status, 503, "{}", shed.body);
    assert!(shed.header("retry-after").is_some());
    assert_eq!(running.await.unwrap().status, 200);
    assert_eq!(queued.await.unwrap().status, 200);
    assert!(!s.proved_tags().contains(&"j-shed".to_string()));

    let check = post(
        a,
        "/join-split-enygma",
        &body_with("c", 0, serde_json::json!({"fail": "check"})),
        T,
    )
    .await
    .unwrap();
    assert_eq!(check.status, 422);
    let bad = post(
        a,
        "/ownership-721",
        &body_with("b", 0, serde_json::json!({"fail": "bad"})),
        T,
    )
    .await
    .unwrap();
    assert_eq!(bad.status, 400);

    let m = s.metrics().await;
    assert!(!m.contains(SECRET));
    for (route, status, n) in [
        ("/join-split-enygma", "200", 1.0),
        ("/join-split-enygma", "422", 1.0),
        ("/join-split-1155", "200", 1.0),
        ("/join-split-1155", "503", 1.0),
        ("/ownership-721", "200", 2.0),
        ("/ownership-721", "400", 1.0),
        ("/verify-join-split-1155", "200", 1.0),
    ] {
        let series = format!(
            "enygma_http_requests_total{{route=\"{route}\",k=\"none\",status=\"{status}\"}}"
        );
        assert_eq!(metric(&m, &series), Some(n), "{series}");
    }
    assert_eq!(
        metric(
            &m,
            "enygma_prove_seconds_count{statement=\"ownership-721\",k=\"none\"}"
        ),
        Some(2.0)
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

/// A proving request's body is wiped (every byte of its buffer read back
/// as zero before it is freed) whatever the outcome: proved, refused by the parser (400) or a
/// check (422), failed in the prover (500), or shed (503). Each body has its own length, which
/// identifies its record in the wipe log.
#[tokio::test]
async fn request_bodies_are_wiped_on_every_outcome() {
    let s = start(cfg(Some(1), 0, 5_000)).await;
    let padded = |tag: &str, ms: u64, fail: Option<&str>, pad: usize| {
        body_with(
            tag,
            ms,
            serde_json::json!({ "fail": fail, "pad": "7".repeat(pad) }),
        )
    };
    let cases = [
        (padded("ok", 0, None, 3001), 200),
        (padded("bad", 0, Some("bad"), 3013), 400),
        (padded("check", 0, Some("check"), 3027), 422),
        (padded("internal", 0, Some("internal"), 3041), 500),
    ];
    for (body, status) in &cases {
        let r = s.prove(body).await;
        assert_eq!(r.status, *status, "{}", r.body);
    }
    // Shed: one proof in flight, no queue.
    let slow = padded("slow", 600, None, 3059);
    let shed = padded("shed", 0, None, 3067);
    let addr = s.addr;
    let path = s.prove_path();
    let in_flight = tokio::spawn(async move { post(addr, path, &slow, T).await.unwrap() });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = s.prove(&shed).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(in_flight.await.unwrap().status, 200);

    let records = crate::body::test_log::records();
    let lengths = cases
        .iter()
        .map(|(b, _)| b.len())
        .chain([padded("slow", 600, None, 3059).len(), shed.len()]);
    for len in lengths {
        let wiped: Vec<_> = records.iter().filter(|r| r.len == len).collect();
        assert!(!wiped.is_empty(), "the body of {len} bytes was not wiped");
        assert!(wiped.iter().all(|r| r.all_zero), "{wiped:?}");
    }
    s.stop().await;
}
