//! What the pipeline knows of one request: its context ([`ReqCtx`], for the log line and
//! `Server-Timing`), its error answer ([`ApiError`]), and which routes are probes.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::admission::AdmitError;
use crate::backend::BackendError;
use crate::caller::Caller;
use crate::metrics::QueueKind;

/// gin's JSON content type.
pub(crate) const JSON: &str = "application/json; charset=utf-8";

/// An error answer: `{"error": message}` with its status (and `Retry-After` when set). The
/// message must never contain a value from the request.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: Cow<'static, str>,
    retry_after: Option<u64>,
}

/// The error message of a response, for the access log.
#[derive(Clone, Debug)]
pub(crate) struct ErrorNote(pub(crate) Cow<'static, str>);

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<Cow<'static, str>>) -> Self {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    pub(crate) fn internal(message: &'static str) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    pub(crate) fn unavailable(message: &'static str, retry_after: u64) -> Self {
        ApiError {
            retry_after: Some(retry_after),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, message)
        }
    }

    pub(crate) fn from_admit(err: AdmitError, kind: QueueKind, retry_after: u64) -> Self {
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
            BackendError::NotHosted(_) => StatusCode::NOT_FOUND,
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

/// What the pipeline learns about a request, for the log line and Server-Timing.
#[derive(Clone, Default)]
pub(crate) struct ReqCtx(Arc<Mutex<ReqInfo>>);

#[derive(Default, Clone)]
pub(crate) struct ReqInfo {
    /// Who the request is served for, once the token check has named it.
    pub(crate) caller: Option<Caller>,
    /// The statement's name, from the route (known as soon as the path matches).
    pub(crate) statement: Option<&'static str>,
    /// Set once the path's k is valid.
    pub(crate) k: Option<usize>,
    pub(crate) queue: Option<Duration>,
    pub(crate) witness: Option<Duration>,
    pub(crate) prove: Option<Duration>,
}

impl ReqCtx {
    pub(crate) fn update(&self, f: impl FnOnce(&mut ReqInfo)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub(crate) fn get(&self) -> ReqInfo {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The request's caller; `anonymous` until the token check has named it.
    pub(crate) fn caller(&self) -> Caller {
        self.get().caller.unwrap_or_else(Caller::anonymous)
    }

    /// Names the request's caller (see [`crate::auth::check`]).
    pub(crate) fn set_caller(&self, caller: Caller) {
        self.update(|i| i.caller = Some(caller));
    }
}

/// The probes and `/metrics`: never limited, never queued.
pub(crate) fn is_probe(route: &str) -> bool {
    matches!(route, "/healthcheck" | "/livez" | "/readyz" | "/metrics")
}
