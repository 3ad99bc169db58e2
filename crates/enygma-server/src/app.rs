//! The HTTP surface: state, the one function that composes the router and its layers, the
//! request pipeline stages and the (thin) handlers.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{ALLOW, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};

use enygma_formats::server_timing::ServerTiming;
use enygma_prover::statements::{self, Action, Instance};

use crate::admission::{AdmitError, Limiter, Permit, ProveAdmission, Slot};
use crate::auth::Auth;
use crate::backend::{BackendError, ProofBackend};
use crate::body::RequestBody;
use crate::config::AdmissionConfig;
use crate::metrics::{Metrics, QueueKind};

/// gin's JSON content type.
const JSON: &str = "application/json; charset=utf-8";

/// The reference's exact health body (gin serialises `gin.H` with sorted keys).
pub const HEALTH_BODY: &str = r#"{"message":"Server is healthy","status":"ok"}"#;

static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
static SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

/// Shared state of the service.
pub struct AppState<B: ProofBackend> {
    backend: OnceLock<Arc<B>>,
    /// The proving admission controller, shared by every proving route.
    pub prove: ProveAdmission,
    /// Verification has its own small limit and never enters the proving queue.
    pub verify: Limiter,
    pub metrics: Arc<Metrics>,
    /// Bearer tokens of the API and of `/metrics` (none by default: open).
    pub auth: Arc<Auth>,
    draining: AtomicBool,
    body_limit: usize,
    /// The statement instances this server proves and verifies (`--circuits`); the routes of
    /// the others answer 404.
    hosted: Vec<Instance>,
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
            prove: ProveAdmission::new(
                cfg.max_inflight,
                cfg.prove_threads,
                cfg.queue_depth,
                cfg.queue_timeout,
                cfg.service_time,
                metrics.clone(),
                cfg.pin_cpus,
            )?,
            verify: Limiter::new(
                QueueKind::Verify,
                cfg.verify_max_inflight,
                cfg.verify_queue_depth,
                cfg.queue_timeout,
                metrics.clone(),
            ),
            metrics,
            auth: Arc::new(Auth::default()),
            draining: AtomicBool::new(false),
            body_limit,
            hosted,
        })
    }

    pub fn hosts(&self, instance: Instance) -> bool {
        self.hosted.contains(&instance)
    }

    /// Requires the bearer tokens of `auth` (see [`crate::auth`]).
    pub fn with_auth(mut self, auth: Arc<Auth>) -> Self {
        self.auth = auth;
        self
    }

    /// Makes the service ready. Only the first call has an effect.
    pub fn set_backend(&self, backend: B) {
        let _ = self.backend.set(Arc::new(backend));
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

/// Composes the whole service: routes, the proving pipeline and the per-request observer.
///
/// Every statement of the registry (`enygma_prover::statements::ALL`) has its prove and verify
/// route, registered in one loop; all have the same pipeline and share one proving admission
/// controller (one cap, one queue: they compete for the same cores) and one verify limiter. The
/// statement instance comes from the matched path; one this server does not host answers 404.
///
/// Proving requests pass, in order: `observe` (request id, log line, metrics, Server-Timing) →
/// `intake` (k, hosted, readiness, body limit) → `prepare` (an early 503 if the queue is already
/// full, else strict parse and every check, off the runtime) → `admit` (the one shared proving admission controller) → `prove` (the handler:
/// runs the proof on the slot's rayon pool). Bad requests are refused before admission, so they
/// never take a queue place. Probes are outside the pipeline: never limited nor queued.
pub fn router<B: ProofBackend>(state: Arc<AppState<B>>) -> Router {
    let st = &state;
    let (mut proving, mut verifying) = (Router::new(), Router::new());
    for statement in statements::all() {
        let d = statement.descriptor();
        proving = proving.route(d.prove_route, post(prove::<B>));
        verifying = verifying.route(d.verify_route, post(verify::<B>));
    }
    // `route_layer`s run last-added first.
    let proving = proving
        .route_layer(from_fn_with_state(st.clone(), admit::<B>))
        .route_layer(from_fn_with_state(st.clone(), prepare::<B>))
        .route_layer(from_fn_with_state(st.clone(), intake::<B>));
    let verifying = verifying
        .route_layer(from_fn_with_state(st.clone(), admit_verify::<B>))
        .route_layer(from_fn_with_state(st.clone(), intake::<B>));
    let probes = Router::new()
        .route("/healthcheck", get(healthcheck))
        .route("/livez", get(livez))
        .route("/readyz", get(readyz::<B>))
        .route("/metrics", get(metrics::<B>))
        .route("/openapi.json", get(openapi));
    Router::new()
        .merge(proving)
        .merge(verifying)
        .merge(probes)
        .fallback(not_found)
        .layer(from_fn_with_state(
            (st.auth.clone(), st.metrics.clone()),
            crate::auth::check,
        ))
        .layer(from_fn_with_state(st.clone(), observe::<B>))
        .with_state(state)
}

// ---------------------------------------------------------------------------------------------
// Errors

/// An error answer: `{"error": message}` with its status (and `Retry-After` when set). The
/// message must never contain a value from the request.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: Cow<'static, str>,
    retry_after: Option<u64>,
}

/// The error message of a response, for the access log.
#[derive(Clone, Debug)]
struct ErrorNote(Cow<'static, str>);

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<Cow<'static, str>>) -> Self {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    fn internal(message: &'static str) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    fn unavailable(message: &'static str, retry_after: u64) -> Self {
        ApiError {
            retry_after: Some(retry_after),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, message)
        }
    }

    fn from_admit(err: AdmitError, kind: QueueKind, retry_after: u64) -> Self {
        match err {
            AdmitError::Shed => Self::unavailable(
                match kind {
                    QueueKind::Prove => "server busy: the proving queue is full, retry later",
                    QueueKind::Verify => "server busy: the verification queue is full, retry later",
                },
                retry_after,
            ),
            AdmitError::Timeout(waited) => Self::new(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "timed out after {:.1}s waiting for a {} slot",
                    waited.as_secs_f64(),
                    kind.label()
                ),
            ),
        }
    }
}

impl From<BackendError> for ApiError {
    fn from(e: BackendError) -> Self {
        let status = match e {
            BackendError::BadRequest(_) => StatusCode::BAD_REQUEST,
            BackendError::CheckFailed(_) => StatusCode::UNPROCESSABLE_ENTITY,
            BackendError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message }).to_string();
        let mut resp = (self.status, [(CONTENT_TYPE, JSON)], body).into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(secs));
        }
        resp.extensions_mut().insert(ErrorNote(self.message));
        resp
    }
}

// ---------------------------------------------------------------------------------------------
// Per-request context and the observer

/// What the pipeline learns about a request, for the log line and Server-Timing.
#[derive(Clone, Default)]
pub struct ReqCtx(Arc<Mutex<ReqInfo>>);

#[derive(Default, Clone, Copy)]
struct ReqInfo {
    /// The statement's name, from the route (known as soon as the path matches).
    statement: Option<&'static str>,
    /// Set once the path's k is valid.
    k: Option<usize>,
    queue: Option<Duration>,
    witness: Option<Duration>,
    prove: Option<Duration>,
}

impl ReqCtx {
    fn update(&self, f: impl FnOnce(&mut ReqInfo)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn get(&self) -> ReqInfo {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

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

pub(crate) fn is_probe(route: &str) -> bool {
    matches!(route, "/healthcheck" | "/livez" | "/readyz" | "/metrics")
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
        } else if is_probe(self.route) {
            // Probes are polled constantly (and /readyz answers 503 while loading).
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
    mut req: Request,
    next: Next,
) -> Response {
    let id = request_id(req.headers());
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

// ---------------------------------------------------------------------------------------------
// Pipeline stages of the proving and verifying routes

/// A request's statement instance and body, read under the body limit. The body is wiped when
/// the last stage that holds it lets it go ([`RequestBody`]).
#[derive(Clone)]
struct Intake {
    instance: Instance,
    body: RequestBody,
}

/// A request whose checks passed.
struct Prepared<P>(Arc<P>);

impl<P> Clone for Prepared<P> {
    fn clone(&self) -> Self {
        Prepared(self.0.clone())
    }
}

/// A proof slot handed from `admit` to the handler (extensions need `Clone`).
#[derive(Clone)]
struct SlotCell(Arc<Mutex<Option<Slot>>>);

/// A verify slot handed from `admit_verify` to the handler.
#[derive(Clone)]
struct PermitCell(Arc<Mutex<Option<Permit>>>);

fn take<T>(cell: &Mutex<Option<T>>) -> Option<T> {
    cell.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// The method (the statement routes take POST only), the statement instance from the path (k
/// with the reference's messages), whether this server hosts it, readiness, and the body under
/// the size limit.
async fn intake<B: ProofBackend>(
    State(st): State<Arc<AppState<B>>>,
    Extension(ctx): Extension<ReqCtx>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    // axum's `route_layer` wraps a route's method fallback too, so without this a GET or TRACE
    // would run the whole pipeline (parse, checks, even a queue place) before its 405.
    if req.method() != Method::POST {
        return Ok((StatusCode::METHOD_NOT_ALLOWED, [(ALLOW, "POST")]).into_response());
    }
    // The route is a statement's: the registry tells which, and what stands for its k.
    let instance = statements::match_path(req.uri().path())
        .ok_or_else(|| ApiError::internal("route without a statement"))?
        .instance()
        .map_err(|msg| ApiError::new(StatusCode::BAD_REQUEST, msg))?;
    ctx.update(|i| i.k = instance.k());
    if !st.hosts(instance) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("circuit {instance} is not hosted here"),
        ));
    }
    if st.backend().is_none() {
        return Err(ApiError::unavailable(
            "service is starting: keys are still loading",
            5,
        ));
    }
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, st.body_limit)
        .await
        .map_err(|e| {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if too_large {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("request body larger than {} bytes", st.body_limit),
                )
            } else if let Some(t) = crate::transport::BodyTimeout::find(&e) {
                ApiError::new(StatusCode::REQUEST_TIMEOUT, t.to_string())
            } else {
                ApiError::new(StatusCode::BAD_REQUEST, "could not read the request body")
            }
        })?;
    let mut req = Request::from_parts(parts, Body::empty());
    req.extensions_mut().insert(Intake {
        instance,
        body: RequestBody::take(body),
    });
    Ok(next.run(req).await)
}

/// Strict parse and every check, on the blocking pool (it is cheap, but not free).
async fn prepare<B: ProofBackend>(
    State(st): State<Arc<AppState<B>>>,
    Extension(intake): Extension<Intake>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    // Nothing to queue behind: shed before spending the checks' CPU on a request that would be
    // shed anyway (see `Limiter::shed_early`).
    if st.prove.shed_early() {
        return Err(ApiError::from_admit(
            AdmitError::Shed,
            QueueKind::Prove,
            st.prove.retry_after_secs(),
        ));
    }
    let backend = st
        .backend()
        .ok_or_else(|| ApiError::internal("backend missing"))?;
    // The body is not needed past parsing: the request's copy goes now, this stage's with the
    // closure, so that the body is wiped before the request queues (or is refused).
    if let Some(held) = req.extensions_mut().get_mut::<Intake>() {
        held.body = RequestBody::empty();
    }
    let prepared = tokio::task::spawn_blocking(move || {
        let Intake { instance, body } = intake;
        backend.prepare(instance, &body)
    })
    .await
    .map_err(|_| ApiError::internal("request validation failed unexpectedly"))??;
    req.extensions_mut().insert(Prepared(Arc::new(prepared)));
    Ok(next.run(req).await)
}

/// The proving admission controller: a slot now, a place in the FIFO queue, or 503/504.
async fn admit<B: ProofBackend>(
    State(st): State<Arc<AppState<B>>>,
    Extension(ctx): Extension<ReqCtx>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    match st.prove.acquire().await {
        Ok((slot, waited)) => {
            ctx.update(|i| i.queue = Some(waited));
            req.extensions_mut()
                .insert(SlotCell(Arc::new(Mutex::new(Some(slot)))));
            Ok(next.run(req).await)
        }
        Err(e) => {
            if let AdmitError::Timeout(waited) = e {
                ctx.update(|i| i.queue = Some(waited));
            }
            Err(ApiError::from_admit(
                e,
                QueueKind::Prove,
                st.prove.retry_after_secs(),
            ))
        }
    }
}

/// The verify route's own limiter.
async fn admit_verify<B: ProofBackend>(
    State(st): State<Arc<AppState<B>>>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let (permit, _waited) = st
        .verify
        .acquire()
        .await
        .map_err(|e| ApiError::from_admit(e, QueueKind::Verify, 1))?;
    req.extensions_mut()
        .insert(PermitCell(Arc::new(Mutex::new(Some(permit)))));
    Ok(next.run(req).await)
}

// ---------------------------------------------------------------------------------------------
// Handlers

/// A statement's prove route (`POST /generateProofTransfer-{k}`): runs the prepared proof on
/// the admitted slot.
async fn prove<B: ProofBackend>(
    State(st): State<Arc<AppState<B>>>,
    Extension(ctx): Extension<ReqCtx>,
    Extension(intake): Extension<Intake>,
    Extension(prepared): Extension<Prepared<B::Prepared>>,
    Extension(slot): Extension<SlotCell>,
) -> Result<Response, ApiError> {
    let slot = take(&slot.0).ok_or_else(|| ApiError::internal("no proving slot"))?;
    let backend = st
        .backend()
        .ok_or_else(|| ApiError::internal("backend missing"))?;
    let out = st
        .prove
        .run(slot, move || backend.prove(&prepared.0))
        .await
        .map_err(|_| ApiError::internal("the prover failed unexpectedly"))??;
    ctx.update(|i| {
        i.witness = Some(out.witness);
        i.prove = Some(out.prove);
    });
    st.metrics
        .observe_proof(intake.instance, out.witness, out.prove);
    Ok(([(CONTENT_TYPE, JSON)], out.json).into_response())
}

/// A statement's verify route (`POST /verifyProofTransfer-{k}`): `{"valid": bool}` for a body
/// the same instance's prove route answered.
async fn verify<B: ProofBackend>(
    State(st): State<Arc<AppState<B>>>,
    Extension(intake): Extension<Intake>,
    Extension(permit): Extension<PermitCell>,
) -> Result<Response, ApiError> {
    let permit = take(&permit.0);
    let backend = st
        .backend()
        .ok_or_else(|| ApiError::internal("backend missing"))?;
    let valid = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        backend.verify(intake.instance, &intake.body)
    })
    .await
    .map_err(|_| ApiError::internal("verification failed unexpectedly"))??;
    Ok(json_response(
        StatusCode::OK,
        serde_json::json!({ "valid": valid }).to_string(),
    ))
}

fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    (status, [(CONTENT_TYPE, JSON)], body.into()).into_response()
}

async fn healthcheck() -> Response {
    json_response(StatusCode::OK, HEALTH_BODY)
}

async fn livez() -> Response {
    json_response(StatusCode::OK, r#"{"status":"ok"}"#)
}

async fn readyz<B: ProofBackend>(State(st): State<Arc<AppState<B>>>) -> Response {
    if st.is_draining() {
        json_response(StatusCode::SERVICE_UNAVAILABLE, r#"{"status":"draining"}"#)
    } else if st.is_ready() {
        json_response(StatusCode::OK, r#"{"status":"ready"}"#)
    } else {
        json_response(StatusCode::SERVICE_UNAVAILABLE, r#"{"status":"loading"}"#)
    }
}

async fn metrics<B: ProofBackend>(State(st): State<Arc<AppState<B>>>) -> Response {
    let text = st.metrics.render(
        st.is_ready(),
        st.is_draining(),
        st.prove.gauges(),
        st.verify.gauges(),
    );
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response()
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
