//! The HTTP surface: state, the one function that composes the router and its layers, the
//! request pipeline stages and the (thin) handlers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};

use enygma_formats::server_timing::ServerTiming;
use enygma_prover::statements::{self, Action, AnyStatement, Instance};
use tracing::Instrument;

use crate::admission::{Admission, AdmissionConfig, AdmitError, Slot};
use crate::auth::Auth;
use crate::backend::ProofBackend;
use crate::body::RequestBody;
use crate::caller::Caller;
use crate::hosting::Hosted;
use crate::idempotency::{self, Claim, IdempotencyConfig, IdempotencyStore};
use crate::metrics::{Metrics, QueueKind};
use crate::request::{is_probe, ApiError, ErrorNote, ReqCtx, JSON};
use crate::tables::{TableCache, TableConfig};
use crate::transport::{close_after_response, ConnectionSlot};

/// The reference's exact health body (gin serialises `gin.H` with sorted keys).
pub const HEALTH_BODY: &str = r#"{"message":"Server is healthy","status":"ok"}"#;

static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
static SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");
/// On a proof: the SHA-256 (hex) of the proving key file it was made with, so that a client can
/// tell which verifying key it is for while keys are replaced.
static KEY_SHA256: HeaderName = HeaderName::from_static("enygma-key-sha256");

/// Shared state of the service.
pub struct AppState<B: ProofBackend> {
    backend: OnceLock<Arc<B>>,
    /// Every admission policy: the proving slots and queue, the verify routes' limit, the
    /// request checks' pool, the allowances of malformed requests and failed authentications.
    pub(crate) admission: Admission,
    pub metrics: Arc<Metrics>,
    /// Bearer tokens of the API and of `/metrics` (none by default: open).
    pub auth: Arc<Auth>,
    /// The precomputed MSM tables that follow the traffic (none by default).
    pub tables: TableCache<B>,
    /// The answers of proving requests with an `Idempotency-Key`, and those in flight.
    idempotency: Arc<IdempotencyStore>,
    draining: AtomicBool,
    body_limit: usize,
    /// The statement instances this server proves and verifies (`--circuits`); the routes of
    /// the others answer 404. Changed by a reload of a `--circuits @FILE` list
    /// ([`crate::server::reload_keys`]).
    pub(crate) hosted: Hosted,
}

impl<B: ProofBackend> AppState<B> {
    /// The state of a server that hosts `hosted` (whose backend must load their keys).
    pub fn new(
        cfg: &AdmissionConfig,
        body_limit: usize,
        hosted: Vec<Instance>,
    ) -> Result<Self, String> {
        let metrics = Arc::new(Metrics::for_instances(&hosted));
        Ok(AppState {
            backend: OnceLock::new(),
            admission: Admission::new(cfg, metrics.clone())?,
            tables: TableCache::new(TableConfig::default(), metrics.clone()),
            idempotency: IdempotencyStore::new(IdempotencyConfig::default(), metrics.clone()),
            metrics,
            auth: Arc::new(Auth::default()),
            draining: AtomicBool::new(false),
            body_limit,
            hosted: Hosted::new(hosted, None),
        })
    }

    pub fn hosts(&self, instance: Instance) -> bool {
        self.hosted.contains(instance)
    }

    /// Reads the hosted list again from `file` on each reload (`--circuits @FILE`); the list
    /// the state was made with is the file's at start.
    pub fn with_hosted_file(mut self, file: std::path::PathBuf) -> Self {
        self.hosted = Hosted::new(self.hosted.list(), Some(file));
        self
    }

    /// Requires the bearer tokens of `auth` (see [`crate::auth`]).
    pub fn with_auth(mut self, auth: Arc<Auth>) -> Self {
        self.auth = auth;
        self
    }

    /// Builds precomputed MSM tables for the instances that receive proofs, as `config` says
    /// ([`crate::tables`]).
    pub fn with_tables(mut self, config: TableConfig) -> Self {
        self.tables = TableCache::new(config, self.metrics.clone());
        self
    }

    /// Keeps the answers of keyed proving requests within `config`'s time and memory
    /// ([`crate::idempotency`]).
    pub fn with_idempotency(mut self, config: IdempotencyConfig) -> Self {
        self.idempotency = IdempotencyStore::new(config, self.metrics.clone());
        self
    }

    /// Makes the service ready. Only the first call has an effect.
    pub fn set_backend(&self, backend: impl Into<Arc<B>>) {
        let backend = backend.into();
        if self.backend.get().is_none() {
            self.tables.attach(&backend, &self.hosted.list());
        }
        let _ = self.backend.set(backend);
    }

    pub fn backend(&self) -> Option<Arc<B>> {
        self.backend.get().cloned()
    }

    pub fn is_ready(&self) -> bool {
        self.backend.get().is_some() && !self.is_draining()
    }

    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// Composes the whole service: routes and the per-request observer.
///
/// Every statement of the registry (`enygma_prover::statements::ALL`) has its prove and verify
/// route, registered in one loop with the statement it serves; all share one proving admission
/// controller (one cap, one queue: they compete for the same cores) and one verify limiter. A
/// statement instance this server does not host answers 404.
///
/// Every request passes `observe` (request id, log line, metrics, Server-Timing), then the
/// bearer-token check ([`crate::auth`]), then its handler. The prove handler ([`prove`]) reads
/// as its steps: the instance from the path (k, hosted, ready), the body under the limit, an
/// early 503 if the queue is already full, strict parse and every check off the runtime (the
/// body is wiped there), a slot from the admission controller, the proof on the slot's rayon
/// pool. Bad requests are refused before admission, so they never take a queue place. Probes
/// are never limited nor queued. Other methods on a statement route get axum's 405 (`Allow:
/// POST`) without running any step.
pub fn router<B: ProofBackend>(state: Arc<AppState<B>>) -> Router {
    let st = &state;
    let mut routes = Router::new();
    for statement in statements::all() {
        let d = statement.descriptor();
        routes = routes
            .route(
                d.prove_route,
                post(
                    move |State(st): State<Arc<AppState<B>>>,
                          Extension(ctx): Extension<ReqCtx>,
                          k: Option<Path<String>>,
                          headers: HeaderMap,
                          body: Body| {
                        prove(statement, st, ctx, k, headers, body)
                    },
                ),
            )
            .route(
                d.verify_route,
                post(
                    move |State(st): State<Arc<AppState<B>>>,
                          Extension(ctx): Extension<ReqCtx>,
                          k: Option<Path<String>>,
                          body: Body| verify(statement, st, ctx, k, body),
                ),
            );
    }
    routes
        .route("/healthcheck", get(healthcheck))
        .route("/livez", get(livez))
        .route("/readyz", get(readyz::<B>))
        .route("/metrics", get(metrics::<B>))
        .route("/openapi.json", get(openapi))
        .fallback(not_found)
        .layer(from_fn_with_state(
            st.clone(),
            limit_malformed_requests::<B>,
        ))
        .layer(from_fn_with_state(
            (
                st.auth.clone(),
                st.metrics.clone(),
                st.admission.auth_failures(),
            ),
            crate::auth::check,
        ))
        .layer(from_fn_with_state(st.clone(), observe::<B>))
        .with_state(state)
}

/// The admin listener's routes ([`crate::server::Service`]): `/livez`, `/readyz` and
/// `/metrics`, with the same answers as on the API listener, and nothing else (every other path
/// 404s, the prove and verify routes included). No token check: the admin listener is for the
/// kubelet and Prometheus and is reached only from loopback or through a NetworkPolicy. Its
/// requests are logged and counted like the API's.
pub fn admin_router<B: ProofBackend>(state: Arc<AppState<B>>) -> Router {
    Router::new()
        .route("/livez", get(livez))
        .route("/readyz", get(readyz_with_keys::<B>))
        .route("/metrics", get(metrics::<B>))
        .fallback(not_found)
        .layer(from_fn_with_state(state.clone(), observe::<B>))
        .with_state(state)
}

// ---------------------------------------------------------------------------------------------
// The observer

fn route_label(path: &str) -> &'static str {
    match path {
        "/healthcheck" => "/healthcheck",
        "/livez" => "/livez",
        "/readyz" => "/readyz",
        "/metrics" => "/metrics",
        "/openapi.json" => "/openapi.json",
        p => statements::match_path(p).map_or("other", |m| m.route),
    }
}

/// Honours a sane incoming `X-Request-Id` (up to 128 visible ASCII characters), else makes one.
fn request_id(headers: &HeaderMap) -> String {
    if let Some(v) = headers.get(&X_REQUEST_ID).and_then(|v| v.to_str().ok()) {
        let ok = |c: char| c.is_ascii_alphanumeric() || "-_.:/+=@".contains(c);
        if !v.is_empty() && v.len() <= 128 && v.chars().all(ok) {
            return v.to_owned();
        }
    }
    // Unpredictable, so one client cannot guess another's id.
    format!("{:016x}", rand::random::<u64>())
}

fn ms(d: Option<Duration>) -> Option<f64> {
    d.map(|d| (d.as_secs_f64() * 1e4).round() / 10.0)
}

/// Writes the request's log line and counts it; if the request future is dropped first (the
/// client went away), it still does so, with status 499.
struct AccessLog {
    metrics: Arc<Metrics>,
    id: String,
    /// The client's address (behind a trusted proxy, the one its PROXY header names).
    peer: Option<std::net::IpAddr>,
    method: axum::http::Method,
    route: &'static str,
    ctx: ReqCtx,
    start: Instant,
    done: bool,
}

impl AccessLog {
    fn finish(&mut self, status: u16, error: Option<&str>) {
        self.done = true;
        let info = self.ctx.get();
        self.metrics.request(self.route, info.k, status);
        let total = ms(Some(self.start.elapsed()));
        macro_rules! line {
            ($lvl:expr) => {
                tracing::event!(
                    target: "enygma_server::access",
                    $lvl,
                    request_id = %self.id,
                    caller = info.caller.as_ref().map(Caller::name),
                    peer = self.peer.map(tracing::field::display),
                    method = %self.method,
                    route = self.route,
                    statement = info.statement,
                    k = info.k.map(|k| k as u64),
                    status,
                    queue_ms = ms(info.queue),
                    witness_ms = ms(info.witness),
                    prove_ms = ms(info.prove),
                    total_ms = total,
                    error,
                    "request"
                )
            };
        }
        if status >= 500 && status != 503 {
            line!(tracing::Level::WARN)
        } else if is_probe(self.route) || matches!(status, 401 | 429) {
            // Probes are polled constantly (and /readyz answers 503 while loading); refused
            // credentials are logged by the token check, at WARN once per address and minute.
            line!(tracing::Level::DEBUG)
        } else {
            line!(tracing::Level::INFO)
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        if !self.done {
            self.finish(
                499,
                Some("client closed the connection before the response"),
            );
        }
    }
}

/// Outermost layer of every route: request id, one log line, the request counter and, on the
/// proving routes, `Server-Timing`.
async fn observe<B: ProofBackend>(
    State(st): State<Arc<AppState<B>>>,
    req: Request,
    next: Next,
) -> Response {
    let id = request_id(req.headers());
    // The span of everything the request does, its log line included; the token check records
    // the caller.
    let span = tracing::info_span!("request", request_id = %id, caller = tracing::field::Empty);
    observe_in_span(st, id, req, next).instrument(span).await
}

async fn observe_in_span<B: ProofBackend>(
    st: Arc<AppState<B>>,
    id: String,
    mut req: Request,
    next: Next,
) -> Response {
    let route = route_label(req.uri().path());
    let ctx = ReqCtx::default();
    let action = statements::match_path(req.uri().path()).map(|m| {
        ctx.update(|i| i.statement = Some(m.statement.descriptor().name));
        m.action
    });
    req.extensions_mut().insert(ctx.clone());
    let mut log = AccessLog {
        metrics: st.metrics.clone(),
        id,
        peer: req
            .extensions()
            .get::<crate::caller::PeerAddress>()
            .map(|p| p.0.ip()),
        method: req.method().clone(),
        route,
        ctx: ctx.clone(),
        start: Instant::now(),
        done: false,
    };

    let mut resp = next.run(req).await;

    if action == Some(Action::Prove) {
        let info = ctx.get();
        let timing =
            ServerTiming::from_durations(info.queue, info.witness, info.prove, log.start.elapsed());
        if let Ok(v) = HeaderValue::from_str(&timing.header_value()) {
            resp.headers_mut().insert(SERVER_TIMING.clone(), v);
        }
    }
    if let Ok(v) = HeaderValue::from_str(&log.id) {
        resp.headers_mut().insert(X_REQUEST_ID.clone(), v);
    }
    let error = resp.extensions().get::<ErrorNote>().map(|e| e.0.clone());
    log.finish(resp.status().as_u16(), error.as_deref());
    resp
}

/// Inside the token check: a malformed request (400, 408, 413) takes one from its connection's
/// allowance, and once that is spent the connection is closed after this response
/// ([`crate::admission::abuse`]). Nothing is refused here, and no other answer is counted: a false
/// statement (422) or an unknown instance (404) is an answer about the data.
async fn limit_malformed_requests<B: ProofBackend>(
    State(st): State<Arc<AppState<B>>>,
    req: Request,
    next: Next,
) -> Response {
    let slot = req.extensions().get::<Arc<ConnectionSlot>>().cloned();
    let version = req.version();
    let mut resp = next.run(req).await;
    let malformed = matches!(
        resp.status(),
        StatusCode::BAD_REQUEST | StatusCode::REQUEST_TIMEOUT | StatusCode::PAYLOAD_TOO_LARGE
    );
    if let Some(slot) = slot.filter(|_| malformed) {
        if !slot.malformed_request(st.admission.malformed_requests(), Instant::now()) {
            st.metrics
                .connections
                .closed_malformed
                .fetch_add(1, Ordering::Relaxed);
            close_after_response(&mut resp, &slot, version);
        }
    }
    resp
}

// ---------------------------------------------------------------------------------------------
// The prove and verify routes

/// A statement's prove route (`POST /generateProofTransfer-{k}`): the proof of the instance
/// the path names. The steps, in order; each refuses with its own status, and nothing a refused
/// request did costs a queue place or a proving slot. A request with an `Idempotency-Key` is
/// proved once however often it is sent ([`keyed`]).
async fn prove<B: ProofBackend>(
    statement: &'static dyn AnyStatement,
    st: Arc<AppState<B>>,
    ctx: ReqCtx,
    k: Option<Path<String>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (instance, backend) = st.serving(statement, k, &ctx)?;
    let key = idempotency::key_of(&headers)?;
    let body = read_body(body, st.body_limit).await?;
    let job = ProofJob {
        st,
        ctx,
        instance,
        backend,
        body,
    };
    match key {
        None => job.run().await,
        Some(key) => keyed(job, &key).await,
    }
}

/// A keyed proving request: the kept answer of the same request, the answer of the same request
/// in flight, or this one proved, its answer kept for the next ([`crate::idempotency`]). The
/// proof of the first request of a key runs in a task of its own, so that it goes on when that
/// request's client leaves: the client's retry, or the requests waiting, take its answer.
async fn keyed<B: ProofBackend>(job: ProofJob<B>, key: &str) -> Result<Response, ApiError> {
    let caller = job.ctx.caller();
    let digest = idempotency::digest_of(&job.body);
    loop {
        match job
            .st
            .idempotency
            .claim(&caller, job.instance, key, digest)?
        {
            Claim::Replay(answer) => return Ok(answer.replay()),
            Claim::Wait(wait) => {
                if let Some(answer) = wait.answer().await {
                    return Ok(answer.replay());
                }
                // The first request's answer is not kept (refused for load, failed): this one
                // goes on as if it had just arrived.
            }
            Claim::Lead(lead) => {
                let task = async move {
                    let resp = job.run().await.into_response();
                    lead.finish(resp).await
                };
                return tokio::spawn(task.in_current_span())
                    .await
                    .map_err(|_| ApiError::internal("the prover failed unexpectedly"));
            }
        }
    }
}

/// A proving request whose instance is served and whose body is read: what is left to do.
struct ProofJob<B: ProofBackend> {
    st: Arc<AppState<B>>,
    ctx: ReqCtx,
    instance: Instance,
    backend: Arc<B>,
    body: RequestBody,
}

impl<B: ProofBackend> ProofJob<B> {
    /// The early shedding, the checks, a slot and the proof.
    async fn run(self) -> Result<Response, ApiError> {
        let ProofJob {
            st,
            ctx,
            instance,
            backend,
            body,
        } = self;
        let caller = ctx.caller();
        // Nothing to queue behind: shed before spending the checks' CPU on a request that would
        // be shed anyway (see `Admission::shed_early`).
        if st.admission.shed_early(&caller) {
            return Err(ApiError::from_admit(
                AdmitError::Shed,
                QueueKind::Prove,
                st.admission.retry_after_secs(&caller),
            ));
        }
        let prepared = prepare(&st, &backend, instance, body).await?;
        let slot = admit_proof(&st, &ctx, &caller).await?;
        let prover = backend.clone();
        let out = st
            .admission
            .prove(slot, move || prover.prove(&prepared))
            .await
            .map_err(|_| ApiError::internal("the prover failed unexpectedly"))??;
        ctx.update(|i| {
            i.witness = Some(out.witness);
            i.prove = Some(out.prove);
        });
        st.metrics.observe_proof(instance, out.witness, out.prove);
        st.tables.proved(&backend, instance, out.precomputed);
        let mut resp = ([(CONTENT_TYPE, JSON)], out.json).into_response();
        if let Some(digest) = out.key_sha256 {
            if let Ok(v) = HeaderValue::from_str(&hex::encode(digest)) {
                resp.headers_mut().insert(KEY_SHA256.clone(), v);
            }
        }
        Ok(resp)
    }
}

/// A statement's verify route (`POST /verifyProofTransfer-{k}`): `{"valid": bool}` for a body
/// the same instance's prove route answered. Verification has its own small limiter and never
/// waits behind proofs.
async fn verify<B: ProofBackend>(
    statement: &'static dyn AnyStatement,
    st: Arc<AppState<B>>,
    ctx: ReqCtx,
    k: Option<Path<String>>,
    body: Body,
) -> Result<Response, ApiError> {
    let (instance, backend) = st.serving(statement, k, &ctx)?;
    let body = read_body(body, st.body_limit).await?;
    let (permit, _waited) = st
        .admission
        .acquire_verify()
        .await
        .map_err(|e| ApiError::from_admit(e, QueueKind::Verify, 1))?;
    let valid = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        backend.verify(instance, &body)
    })
    .await
    .map_err(|_| ApiError::internal("verification failed unexpectedly"))??;
    Ok(json_response(
        StatusCode::OK,
        serde_json::json!({ "valid": valid }).to_string(),
    ))
}

impl<B: ProofBackend> AppState<B> {
    /// The statement instance a route's path names (k with the reference's messages), if this
    /// server hosts it and its keys are loaded, with the backend that serves it.
    fn serving(
        &self,
        statement: &'static dyn AnyStatement,
        k: Option<Path<String>>,
        ctx: &ReqCtx,
    ) -> Result<(Instance, Arc<B>), ApiError> {
        let sizes = &statement.descriptor().sizes;
        let k = match (sizes, k) {
            (Some(sizes), Some(Path(raw))) => Some(
                statements::parse_k(sizes, &raw)
                    .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.to_string()))?,
            ),
            _ => None,
        };
        let instance = Instance::new(statement, k)
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.to_string()))?;
        ctx.update(|i| i.k = instance.k());
        if !self.hosts(instance) {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                crate::hosting::not_hosted(instance),
            ));
        }
        let backend = self.backend().ok_or_else(|| {
            ApiError::unavailable("service is starting: keys are still loading", 5)
        })?;
        Ok((instance, backend))
    }
}

/// The whole request body, refused past `limit` bytes (413), when the client is too slow (408)
/// or when the connection breaks (400). Wiped when dropped ([`RequestBody`]).
async fn read_body(body: Body, limit: usize) -> Result<RequestBody, ApiError> {
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|e| {
        let too_large = std::error::Error::source(&e)
            .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        if too_large {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body larger than {limit} bytes"),
            )
        } else if let Some(t) = crate::transport::BodyTimeout::find(&e) {
            ApiError::new(StatusCode::REQUEST_TIMEOUT, t.to_string())
        } else {
            ApiError::new(StatusCode::BAD_REQUEST, "could not read the request body")
        }
    })?;
    Ok(RequestBody::take(bytes))
}

/// Strict parse and every check of the statement, on the request checks' own bounded pool
/// ([`crate::admission::check_pool`]; cheap, but not free): 503 at once when it and its queue are full. The body
/// is not needed past parsing: it goes (and is wiped) with the job, before the request queues
/// or is refused; a body refused by a full pool is dropped (and wiped) here.
async fn prepare<B: ProofBackend>(
    st: &AppState<B>,
    backend: &Arc<B>,
    instance: Instance,
    body: RequestBody,
) -> Result<B::Prepared, ApiError> {
    let backend = backend.clone();
    let prepared = st
        .admission
        .check(move || backend.prepare(instance, &body))
        .await
        .map_err(|_| {
            st.metrics.check_refused();
            ApiError::unavailable(
                "server busy: the request checks' queue is full, retry later",
                1,
            )
        })?
        .map_err(|_| ApiError::internal("request validation failed unexpectedly"))??;
    Ok(prepared)
}

/// A proving slot from the one shared admission controller: at once, after a place in the
/// caller's queue (or the one FIFO queue), or 503 (shed) / 504 (waited the whole queue
/// timeout).
async fn admit_proof<B: ProofBackend>(
    st: &AppState<B>,
    ctx: &ReqCtx,
    caller: &Caller,
) -> Result<Slot, ApiError> {
    match st.admission.acquire_proof(caller).await {
        Ok((slot, waited)) => {
            ctx.update(|i| i.queue = Some(waited));
            Ok(slot)
        }
        Err(e) => {
            if let AdmitError::Timeout(waited) = e {
                ctx.update(|i| i.queue = Some(waited));
            }
            Err(ApiError::from_admit(
                e,
                QueueKind::Prove,
                st.admission.retry_after_secs(caller),
            ))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Probes

fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    (status, [(CONTENT_TYPE, JSON)], body.into()).into_response()
}

async fn healthcheck() -> Response {
    json_response(StatusCode::OK, HEALTH_BODY)
}

async fn livez() -> Response {
    json_response(StatusCode::OK, r#"{"status":"ok"}"#)
}

/// The API listener's readiness: its status alone. Which keys the server proves with (their
/// origin tells whether proofs are forgeable) is for the operator: [`readyz_with_keys`] on the
/// admin listener.
async fn readyz<B: ProofBackend>(State(st): State<Arc<AppState<B>>>) -> Response {
    st.readiness().into_response()
}

/// The admin listener's readiness: the status and, once ready, which keys each instance is
/// proved with, so that a rollout can be checked from the probe.
async fn readyz_with_keys<B: ProofBackend>(State(st): State<Arc<AppState<B>>>) -> Response {
    match st.readiness() {
        Readiness::Ready(backend) => {
            let keys: serde_json::Map<String, serde_json::Value> = backend
                .keys()
                .into_iter()
                .map(|key| {
                    let mut record = serde_json::to_value(&key.record).unwrap_or_default();
                    if let Some(fields) = record.as_object_mut() {
                        fields.insert("sha256".into(), hex::encode(key.sha256).into());
                    }
                    (key.instance.key_stem(), record)
                })
                .collect();
            let body = serde_json::json!({ "status": "ready", "keys": keys });
            json_response(StatusCode::OK, body.to_string())
        }
        not_ready => not_ready.into_response(),
    }
}

/// Whether the service takes requests.
enum Readiness<B> {
    Ready(Arc<B>),
    Loading,
    Draining,
}

impl<B> IntoResponse for Readiness<B> {
    fn into_response(self) -> Response {
        match self {
            Readiness::Ready(_) => json_response(StatusCode::OK, r#"{"status":"ready"}"#),
            Readiness::Loading => {
                json_response(StatusCode::SERVICE_UNAVAILABLE, r#"{"status":"loading"}"#)
            }
            Readiness::Draining => {
                json_response(StatusCode::SERVICE_UNAVAILABLE, r#"{"status":"draining"}"#)
            }
        }
    }
}

impl<B: ProofBackend> AppState<B> {
    fn readiness(&self) -> Readiness<B> {
        if self.is_draining() {
            Readiness::Draining
        } else if let Some(backend) = self.backend() {
            Readiness::Ready(backend)
        } else {
            Readiness::Loading
        }
    }
}

async fn metrics<B: ProofBackend>(State(st): State<Arc<AppState<B>>>) -> Response {
    // The kept answers' gauges count no expired answer.
    st.idempotency.expire_now();
    let mut text = st.metrics.render(
        st.is_ready(),
        st.is_draining(),
        st.admission.prove_gauges(),
        st.admission.verify_gauges(),
        st.admission.checks_pending(),
    );
    st.admission.render_callers(&mut text);
    if let Some(backend) = st.backend() {
        crate::metrics::render_key_info(&mut text, &backend.keys());
    }
    ([(CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response()
}

/// The OpenAPI document ([`crate::openapi`]), built on the first request (off the runtime: it
/// generates an example request per instance).
async fn openapi() -> Result<Response, ApiError> {
    let text = tokio::task::spawn_blocking(crate::openapi::document_json)
        .await
        .map_err(|_| ApiError::internal("the OpenAPI document failed to build"))?;
    Ok(json_response(StatusCode::OK, text))
}

/// gin's answer to an unknown route.
async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(CONTENT_TYPE, "text/plain")],
        "404 page not found",
    )
        .into_response()
}
