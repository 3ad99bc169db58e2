//! A fake prove server for dry runs of the tooling and for this crate's tests: the same proving
//! routes (every statement's, from the registry), flags, `Server-Timing` header, `/readyz` and
//! `/metrics` as enygma-server, but it sleeps instead of proving (and touches some memory so RSS
//! moves). Never a benchmark of anything.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use enygma_prover::statements::{self, Action};

use crate::cli::MockArgs;

/// The counter the mock exposes (label names as the heuristic in `metrics` expects).
pub const REQUESTS_METRIC: &str = "enygma_http_requests_total";

struct State {
    args: MockArgs,
    ready_at: Instant,
    permits: Option<Semaphore>,
    waiting: AtomicUsize,
    proving: AtomicUsize,
    counts: Mutex<BTreeMap<(String, u16), u64>>,
}

fn respond(code: StatusCode, body: impl Into<Bytes>, content_type: &str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .header("content-type", content_type)
        .body(Full::new(body.into()))
        .expect("valid response")
}

fn json_error(code: StatusCode, msg: &str) -> Response<Full<Bytes>> {
    respond(
        code,
        serde_json::json!({ "error": msg }).to_string(),
        "application/json",
    )
}

impl State {
    fn prove_duration(&self, active: usize) -> Duration {
        let cores = self.args.cores.max(1) as f64;
        let threads = if self.args.unlimited {
            cores
        } else {
            self.args.prove_threads.max(1) as f64
        };
        let solo = self.args.prove_time.as_secs_f64() * cores / threads.min(cores);
        let share = (active as f64 * threads / cores).max(1.0);
        Duration::from_secs_f64(solo * share)
    }

    async fn prove(&self, body: Bytes) -> Response<Full<Bytes>> {
        if serde_json::from_slice::<serde_json::Value>(&body).is_err() {
            return json_error(StatusCode::BAD_REQUEST, "invalid JSON body");
        }
        let t0 = Instant::now();
        let _permit = match &self.permits {
            None => None,
            Some(sem) => {
                if self.waiting.load(Ordering::SeqCst) >= self.args.queue_depth
                    && sem.available_permits() == 0
                {
                    // Like enygma-server's shedding: 503 and a (fixed) Retry-After.
                    let mut r = json_error(StatusCode::SERVICE_UNAVAILABLE, "queue full");
                    r.headers_mut()
                        .insert("retry-after", hyper::header::HeaderValue::from_static("1"));
                    return r;
                }
                self.waiting.fetch_add(1, Ordering::SeqCst);
                let p = tokio::time::timeout(self.args.queue_timeout, sem.acquire()).await;
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                match p {
                    Ok(Ok(p)) => Some(p),
                    _ => return json_error(StatusCode::SERVICE_UNAVAILABLE, "queue timeout"),
                }
            }
        };
        let queue = t0.elapsed();
        tokio::time::sleep(self.args.witness_time).await;
        let witness = t0.elapsed() - queue;
        let active = self.proving.fetch_add(1, Ordering::SeqCst) + 1;
        let mut mem = vec![0u8; self.args.alloc_mb << 20];
        for i in (0..mem.len()).step_by(4096) {
            mem[i] = 1;
        }
        tokio::time::sleep(self.prove_duration(active)).await;
        std::hint::black_box(&mem);
        drop(mem);
        self.proving.fetch_sub(1, Ordering::SeqCst);
        let prove = t0.elapsed() - queue - witness;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let body = serde_json::json!({
            "pi_a": ["1", "2"], "pi_b": [["1", "2"], ["3", "4"]], "pi_c": ["1", "2"], "public_signal": []
        });
        let mut r = respond(StatusCode::OK, body.to_string(), "application/json");
        let timing = format!(
            "queue;dur={:.1}, witness;dur={:.1}, prove;dur={:.1}, total;dur={:.1}",
            ms(queue),
            ms(witness),
            ms(prove),
            ms(t0.elapsed())
        );
        r.headers_mut()
            .insert("server-timing", timing.parse().expect("ascii header"));
        r
    }

    fn metrics(&self) -> String {
        let mut s = format!("# HELP {REQUESTS_METRIC} Requests by route and status.\n# TYPE {REQUESTS_METRIC} counter\n");
        // Labelled like enygma-server: templated route, k (or "none"), status.
        for ((path, status), n) in self.counts.lock().unwrap().iter() {
            let (route, k) = match statements::match_path(path) {
                Some(m) => (
                    m.route,
                    m.instance()
                        .ok()
                        .and_then(|i| i.k())
                        .map_or_else(|| "none".to_string(), |k| k.to_string()),
                ),
                None => (path.as_str(), "none".to_string()),
            };
            s.push_str(&format!(
                "{REQUESTS_METRIC}{{route=\"{route}\",k=\"{k}\",status=\"{status}\"}} {n}\n"
            ));
        }
        s.push_str(&format!(
            "enygma_proofs_in_progress {}\n",
            self.proving.load(Ordering::SeqCst)
        ));
        s.push_str(&format!(
            "enygma_queue_waiting {}\n",
            self.waiting.load(Ordering::SeqCst)
        ));
        s
    }

    async fn handle(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = req.uri().path().to_string();
        let method = req.method().clone();
        let resp = match (method, path.as_str()) {
            (Method::GET, "/readyz") if Instant::now() >= self.ready_at => {
                respond(StatusCode::OK, "ready", "text/plain")
            }
            (Method::GET, "/readyz") => respond(
                StatusCode::SERVICE_UNAVAILABLE,
                "loading keys",
                "text/plain",
            ),
            (Method::GET, "/healthcheck") => respond(
                StatusCode::OK,
                r#"{"status":"ok","message":"Server is healthy"}"#,
                "application/json",
            ),
            (Method::GET, "/metrics") => {
                respond(StatusCode::OK, self.metrics(), "text/plain; version=0.0.4")
            }
            (Method::POST, p) if is_prove_route(p) => match req.into_body().collect().await {
                Ok(b) => self.prove(b.to_bytes()).await,
                Err(_) => json_error(StatusCode::BAD_REQUEST, "unreadable body"),
            },
            _ => json_error(StatusCode::NOT_FOUND, "not found"),
        };
        *self
            .counts
            .lock()
            .unwrap()
            .entry((path, resp.status().as_u16()))
            .or_default() += 1;
        resp
    }
}

/// A statement instance's proving path (`/generateProofTransfer-6`).
fn is_prove_route(path: &str) -> bool {
    statements::match_path(path).is_some_and(|m| m.action == Action::Prove && m.instance().is_ok())
}

/// Entry point of the hidden `enygma-loadgen mock-server`.
pub async fn main(args: MockArgs) -> Result<()> {
    let listener = TcpListener::bind((args.bind.as_str(), args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind, args.port))?;
    let state = Arc::new(State {
        ready_at: Instant::now() + args.ready_delay,
        permits: (!args.unlimited).then(|| Semaphore::new(args.max_inflight.max(1))),
        waiting: AtomicUsize::new(0),
        proving: AtomicUsize::new(0),
        counts: Mutex::new(BTreeMap::new()),
        args,
    });
    eprintln!(
        "mock prove server on {} (sleeps instead of proving)",
        listener.local_addr()?
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let st = state.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let st = st.clone();
                async move { Ok::<_, Infallible>(st.handle(req).await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}
