//! The plain-HTTP client (hyper-util's pooled client, keep-alive, no TLS) and one timed request.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::token::Token;

/// The request header that names a request, so that its retries are proved once.
const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The response header of an answer an earlier request with the same key caused.
const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";
use enygma_formats::server_timing::{self, ServerTiming};

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Http(u16),
    /// No complete response within `--timeout`.
    Timeout,
    /// Could not connect (server down, port closed).
    Connect,
    /// Connection broken mid-request or body unreadable.
    Io,
    /// Open loop: not sent because too many requests were already outstanding.
    Dropped,
}

impl Status {
    pub fn is_ok(&self) -> bool {
        *self == Status::Http(200)
    }
    /// The key used in `errors` maps: the HTTP status code, or `timeout`/`connect`/`io`.
    pub fn key(&self) -> String {
        match self {
            Status::Http(c) => c.to_string(),
            Status::Timeout => "timeout".into(),
            Status::Connect => "connect".into(),
            Status::Io => "io".into(),
            Status::Dropped => "client_dropped".into(),
        }
    }
}

/// A response as the load generator sees it.
#[derive(Debug, Clone, Copy)]
pub struct Reply {
    pub status: Status,
    pub timing: ServerTiming,
    /// When the last byte of the body arrived (or the request failed).
    pub done: Instant,
    pub bytes: usize,
    /// A shed answer's (503 or 429) `Retry-After`, in whole seconds as the server sends it.
    pub retry_after: Option<Duration>,
    /// `Idempotent-Replayed: true`: the answer an earlier request with the same
    /// `Idempotency-Key` caused.
    pub replayed: bool,
}

#[derive(Clone)]
pub struct HttpClient {
    inner: Client<HttpConnector, Full<Bytes>>,
    base: String,
    timeout: Duration,
    /// `Authorization: Bearer ...` on every request, marked sensitive.
    bearer: Option<HeaderValue>,
}

impl HttpClient {
    /// `base_url` like `http://127.0.0.1:3003` (plain http only).
    pub fn new(base_url: &str, timeout: Duration) -> Result<Self> {
        let base = base_url.trim_end_matches('/').to_string();
        if !base.starts_with("http://") {
            bail!("--url {base_url:?}: only plain http:// URLs are supported");
        }
        base.parse::<Uri>()
            .with_context(|| format!("invalid --url {base_url:?}"))?;
        let mut conn = HttpConnector::new();
        conn.set_nodelay(true);
        conn.set_connect_timeout(Some(Duration::from_secs(10)));
        let inner = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(120))
            .build(conn);
        Ok(Self {
            inner,
            base,
            timeout,
            bearer: None,
        })
    }

    /// The same client sending `token` (if any) with every request. Clones share the
    /// connection pool, so several callers' clients cost no more connections than one.
    pub fn with_bearer(&self, token: Option<&Token>) -> Self {
        Self {
            bearer: token.map(Token::header),
            ..self.clone()
        }
    }

    fn authorize(&self, req: &mut Request<Full<Bytes>>) {
        if let Some(v) = &self.bearer {
            req.headers_mut().insert(AUTHORIZATION, v.clone());
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn uri(&self, path: &str) -> Result<Uri> {
        let sep = if path.starts_with('/') { "" } else { "/" };
        let s = format!("{}{sep}{path}", self.base);
        s.parse().with_context(|| format!("invalid URL {s:?}"))
    }

    /// POSTs a JSON body and reads the whole response. Never fails: failures are a [`Status`].
    pub async fn post_json(&self, uri: &Uri, body: Bytes) -> Reply {
        self.post_keyed(uri, body, None, self.timeout).await
    }

    /// POSTs a JSON body with an `Idempotency-Key` (if any), abandoning it after `timeout`
    /// (the connection is dropped, as a gateway's timeout does).
    pub async fn post_keyed(
        &self,
        uri: &Uri,
        body: Bytes,
        key: Option<&HeaderValue>,
        timeout: Duration,
    ) -> Reply {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(uri.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(Full::new(body))
            .expect("static request parts are valid");
        if let Some(key) = key {
            req.headers_mut().insert(IDEMPOTENCY_KEY, key.clone());
        }
        self.authorize(&mut req);
        self.exchange(req, timeout).await
    }

    async fn exchange(&self, req: Request<Full<Bytes>>, timeout: Duration) -> Reply {
        let fut = async {
            let res = match self.inner.request(req).await {
                Ok(r) => r,
                Err(e) if e.is_connect() => {
                    return (Status::Connect, ServerTiming::default(), 0, None, false)
                }
                Err(_) => return (Status::Io, ServerTiming::default(), 0, None, false),
            };
            let code = res.status().as_u16();
            let retry_after = match code {
                429 | 503 => retry_after(res.headers().get(RETRY_AFTER)),
                _ => None,
            };
            let status = Status::Http(code);
            let replayed = res
                .headers()
                .get(IDEMPOTENT_REPLAYED)
                .is_some_and(|v| v.as_bytes() == b"true");
            let timing = server_timing::parse(
                res.headers()
                    .get_all("server-timing")
                    .iter()
                    .filter_map(|v| v.to_str().ok()),
            );
            match res.into_body().collect().await {
                Ok(b) => (status, timing, b.to_bytes().len(), retry_after, replayed),
                Err(_) => (Status::Io, timing, 0, None, false),
            }
        };
        let (status, timing, bytes, retry_after, replayed) =
            match tokio::time::timeout(timeout, fut).await {
                Ok(r) => r,
                Err(_) => (Status::Timeout, ServerTiming::default(), 0, None, false),
            };
        Reply {
            status,
            timing,
            done: Instant::now(),
            bytes,
            retry_after,
            replayed,
        }
    }

    /// GET `path`; returns the status and body. Errors only on transport failure.
    pub async fn get(&self, path: &str, timeout: Duration) -> Result<(u16, Bytes)> {
        let mut req = Request::builder()
            .method(Method::GET)
            .uri(self.uri(path)?)
            .body(Full::new(Bytes::new()))?;
        self.authorize(&mut req);
        let fut = async {
            let res = self.inner.request(req).await?;
            let status = res.status().as_u16();
            let body = res.into_body().collect().await?.to_bytes();
            anyhow::Ok((status, body))
        };
        tokio::time::timeout(timeout, fut)
            .await
            .with_context(|| format!("GET {path}: no answer within {timeout:?}"))?
    }
}

/// `Retry-After` in its delay-seconds form; the HTTP-date form is not used by the servers
/// measured here and reads as absent.
fn retry_after(value: Option<&HeaderValue>) -> Option<Duration> {
    let secs: u64 = value?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_delay_seconds_only() {
        let v = |s: &'static str| HeaderValue::from_static(s);
        assert_eq!(retry_after(Some(&v("3"))), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(Some(&v(" 0 "))), Some(Duration::ZERO));
        assert_eq!(retry_after(Some(&v("Wed, 21 Oct 2026 07:28:00 GMT"))), None);
        assert_eq!(retry_after(Some(&v("-1"))), None);
        assert_eq!(retry_after(None), None);
    }
}
