//! Connections: the accept loop, TLS, HTTP/1.1 and HTTP/2, and the limits that keep a slow or
//! idle client from holding resources.
//!
//! Why our own loop instead of `axum::serve`: axum's loop exposes none of the connection-level
//! settings below (header timeout, header size, HTTP/2 streams, a connection cap) and no TLS.
//! This is the loop it would be, over hyper and hyper-util's `auto` connection (which serves
//! both protocols), plus:
//!
//! - **A connection budget** ([`budget`]): a cap on open connections (`--max-connections`),
//!   a smaller one on connections that have not authenticated yet
//!   (`--max-unauthenticated-connections`), both taken before `accept` so that past them new
//!   clients wait in the kernel's backlog instead of costing a task, buffers and a TLS
//!   handshake, and a cap per client address (`--max-connections-per-ip`).
//! - **TLS** (`crate::tls`): the handshake must finish within `--tls-handshake-timeout` (at most
//!   `--header-read-timeout`); ALPN picks HTTP/2 or HTTP/1.1. A client certificate's subject
//!   and caller are logged at the handshake. In plain text, HTTP/2 with prior knowledge is
//!   recognised by its preface.
//! - **A deadline for every request head** (`--header-read-timeout`): a connection that does
//!   not deliver a complete request head within that time of opening, or of its previous
//!   response, is closed. HTTP/1.1: hyper's own header read timer. Before the protocol is known
//!   and on HTTP/2 (where hyper has no such timer): a watchdog closes the connection when no
//!   request has been in progress for that long (GOAWAY, then a hard close after a grace).
//! - **A deadline for every request body** (`--body-read-timeout`, [`DeadlineBody`]): a body
//!   that has not fully arrived in that time of its head fails with [`BodyTimeout`]; the
//!   service answers 408. Bodies are read before admission, so a slow client never holds a
//!   queue place.
//! - **Early answers over HTTP/2** ([`drain`]): a request answered before its body was read
//!   (401, 413, 503) has the rest of its body read and discarded, within limits, so that its
//!   stream ends cleanly instead of with a reset some clients report as an error.
//! - **A maximum connection age** (`--max-connection-age`): a connection older than it is
//!   asked to close gracefully (HTTP/1.1: `Connection: close` on the response in progress, or
//!   closed when idle; HTTP/2: GOAWAY, the streams in progress finish), so that a client whose
//!   certificate or token was revoked must reconnect, and be checked again, within that time.
//! - **Header size** (`--max-header-bytes`) and **HTTP/2 streams per connection**
//!   (`--http2-max-streams`).
//! - **Graceful drain:** on stop the listener closes, every connection is asked to shut down
//!   gracefully (idle HTTP/1.1 connections close, HTTP/2 ones get GOAWAY) and
//!   [`serve_connections`] returns once every request in progress is answered.

use std::fmt;
use std::future::{pending, Future};
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Sleep;
use tower::ServiceExt;

use crate::caller::{Caller, CertificateCaller, PeerAddress};
use crate::metrics::Metrics;
use crate::tls::Tls;

mod budget;
mod drain;

pub use budget::ConnectionSlot;
use budget::{Budget, BudgetLimits};
use drain::DrainOnDrop;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long an idle connection asked to close may take to do so before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Connection-level limits (see the module documentation and `docs/security.md`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub max_connections: usize,
    pub max_header_bytes: usize,
    pub http2_max_streams: u32,
    /// Connections that no request has authenticated yet, at most (see [`budget`]).
    pub max_unauthenticated: usize,
    /// Connections from one client address, at most.
    pub max_connections_per_ip: usize,
    /// The TLS handshake's deadline (the header deadline, if that is shorter).
    pub tls_handshake_timeout: Duration,
    /// A connection older than this is closed gracefully after its requests in progress.
    pub max_connection_age: Duration,
    /// After an early answer over HTTP/2, at most this many more body bytes are read and
    /// discarded (the service's `--body-limit`).
    pub early_answer_drain_bytes: usize,
}

impl Default for Limits {
    /// The flags' defaults (`config::AccessArgs`; its `defaults` test checks that they agree).
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            max_connections: 1024,
            max_header_bytes: 16 * 1024,
            http2_max_streams: 16,
            max_unauthenticated: 512,
            max_connections_per_ip: 128,
            tls_handshake_timeout: Duration::from_secs(5),
            max_connection_age: Duration::from_secs(600),
            early_answer_drain_bytes: 64 * 1024,
        }
    }
}

/// How clients reach the service: TLS (if any) and the connection limits.
#[derive(Clone, Default)]
pub struct Transport {
    pub tls: Option<Arc<Tls>>,
    pub limits: Limits,
}

/// What every connection task shares.
struct Shared {
    app: Router,
    tls: Option<Arc<Tls>>,
    limits: Limits,
    metrics: Arc<Metrics>,
}

/// Serves `app` on `listener` (with TLS when `tls` is set) until `stop` completes, then stops
/// accepting, asks every connection to shut down gracefully and returns when all are closed.
pub async fn serve_connections(
    listener: TcpListener,
    app: Router,
    transport: Transport,
    metrics: Arc<Metrics>,
    stop: impl Future<Output = ()>,
) {
    let Transport { tls, limits } = transport;
    let budget = Budget::new(
        BudgetLimits {
            max_connections: limits.max_connections,
            max_unauthenticated: limits.max_unauthenticated,
            max_per_ip: limits.max_connections_per_ip,
        },
        metrics.clone(),
    );
    let shared = Arc::new(Shared {
        app,
        tls,
        limits,
        metrics,
    });
    // Every connection task holds a receiver; `closed()` below waits for all of them.
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut stop = pin!(stop);
    loop {
        let reserved = tokio::select! {
            _ = &mut stop => break,
            reserved = budget.reserve() => reserved,
        };
        let (tcp, peer) = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    accept_error(e).await;
                    continue;
                }
            },
        };
        let slot = match budget.admit(reserved, peer.ip()) {
            Ok(slot) => slot,
            Err(refusal) => {
                tracing::debug!(peer = %peer, reason = ?refusal, "connection refused");
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(connection(tcp, peer, shared.clone(), stop_rx.clone(), slot));
    }
    drop(listener);
    drop(stop_rx);
    let _ = stop_tx.send(true);
    stop_tx.closed().await;
}

/// Like hyper's and axum's loops: errors of one connection (reset before accept) are skipped;
/// others (out of file descriptors) are retried after a pause rather than spinning.
async fn accept_error(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accept failed; retrying in 1s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Counts a connection as open for as long as it lives.
struct OpenConnection(Arc<Metrics>);

impl OpenConnection {
    fn new(metrics: Arc<Metrics>) -> Self {
        metrics.connections.accepted.fetch_add(1, Ordering::Relaxed);
        metrics.connections.open.fetch_add(1, Ordering::Relaxed);
        OpenConnection(metrics)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Which protocol to speak on a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// Plain text: HTTP/2 if the client starts with the HTTP/2 preface, else HTTP/1.1.
    Detect,
    Http1,
    Http2,
}

async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    slot: Arc<ConnectionSlot>,
) {
    let _open = OpenConnection::new(shared.metrics.clone());
    let counters = &shared.metrics.connections;
    let Some(tls) = &shared.tls else {
        return serve_http(
            TokioIo::new(tcp),
            Protocol::Detect,
            peer,
            None,
            slot,
            &shared,
            stop,
        )
        .await;
    };
    let limits = &shared.limits;
    let handshake = tokio::time::timeout(
        limits.tls_handshake_timeout.min(limits.header_read_timeout),
        tls.acceptor().accept(tcp),
    );
    let stream = tokio::select! {
        done = handshake => match done {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                counters.tls_handshake_failures.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(peer = %peer, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                counters.timed_out.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(peer = %peer, "TLS handshake timed out");
                return;
            }
        },
        // Draining: a connection without a request yet has nothing to finish.
        _ = stop.wait_for(|stopping| *stopping) => return,
    };
    let session = stream.get_ref().1;
    let protocol = match session.alpn_protocol() {
        Some(b"h2") => Protocol::Http2,
        _ => Protocol::Http1,
    };
    let certificate = session.peer_certificates();
    let caller = tls.caller_of(certificate);
    if tls.requires_client_cert() && certificate.is_some() {
        // The handshake verified the client's certificate: it has authenticated.
        slot.authenticated();
        tls.log_client(peer, certificate, caller.as_ref());
    }
    serve_http(
        TokioIo::new(stream),
        protocol,
        peer,
        caller,
        slot,
        &shared,
        stop,
    )
    .await
}

fn builder(limits: &Limits, protocol: Protocol) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        // The request head must fit hyper's read buffer, so its size caps the head (431).
        .max_buf_size(limits.max_header_bytes.max(8192));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.http2_max_streams)
        .max_header_list_size(limits.max_header_bytes as u32);
    match protocol {
        Protocol::Detect => builder,
        Protocol::Http1 => builder.http1_only(),
        Protocol::Http2 => builder.http2_only(),
    }
}

async fn serve_http<I>(
    io: TokioIo<I>,
    protocol: Protocol,
    peer: SocketAddr,
    caller: Option<Caller>,
    slot: Arc<ConnectionSlot>,
    shared: &Shared,
    mut stop: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = &shared.limits;
    let counters = &shared.metrics.connections;
    let (busy_tx, busy_rx) = watch::channel(0usize);
    let busy_tx = Arc::new(busy_tx);
    let service = {
        let (app, body_timeout) = (shared.app.clone(), limits.body_read_timeout);
        let drain_bytes = limits.early_answer_drain_bytes;
        service_fn(move |req: hyper::Request<Incoming>| {
            let in_progress = InProgress::new(busy_tx.clone());
            let http2 = req.version() == hyper::Version::HTTP_2;
            let mut req = req.map(|body| {
                let body = DrainOnDrop::new(body, http2.then_some(drain_bytes), body_timeout);
                Body::new(DeadlineBody::new(body, body_timeout))
            });
            req.extensions_mut().insert(slot.clone());
            if let Some(caller) = &caller {
                req.extensions_mut()
                    .insert(CertificateCaller(caller.clone()));
            }
            req.extensions_mut().insert(PeerAddress(peer));
            let app = app.clone();
            async move {
                let resp = app.oneshot(req).await;
                drop(in_progress);
                resp
            }
        })
    };
    let builder = builder(limits, protocol);
    let mut conn = pin!(builder.serve_connection(io, service));

    let why = tokio::select! {
        result = conn.as_mut() => {
            report(result, peer, counters);
            return;
        }
        _ = idle(busy_rx, limits.header_read_timeout) => Close::Idle,
        _ = tokio::time::sleep(limits.max_connection_age) => Close::Aged,
        _ = stop.wait_for(|stopping| *stopping) => Close::Stopping,
    };
    conn.as_mut().graceful_shutdown();
    if why == Close::Aged {
        counters.aged_out.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(peer = %peer, "connection reached --max-connection-age; closing it gracefully");
    }
    if why != Close::Idle {
        // Every request in progress is answered (HTTP/1.1: with `Connection: close`); on a
        // stop, the caller bounds the drain.
        let result = conn.await;
        report(result, peer, counters);
    } else {
        counters.timed_out.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(peer = %peer, "connection idle or too slow to send a request; closed");
        let _ = tokio::time::timeout(CLOSE_GRACE, conn).await;
    }
}

/// Why a connection is asked to close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Close {
    /// No request for `--header-read-timeout`.
    Idle,
    /// Older than `--max-connection-age`.
    Aged,
    /// The service is stopping.
    Stopping,
}

fn report(
    result: Result<(), BoxError>,
    peer: SocketAddr,
    counters: &crate::metrics::ConnectionCounters,
) {
    let Err(e) = result else { return };
    let header_timeout = e
        .downcast_ref::<hyper::Error>()
        .is_some_and(hyper::Error::is_timeout);
    if header_timeout {
        counters.timed_out.fetch_add(1, Ordering::Relaxed);
    }
    tracing::debug!(peer = %peer, error = %e, "connection error");
}

/// A request in progress on a connection (from its head to its response), for [`idle`].
struct InProgress(Arc<watch::Sender<usize>>);

impl InProgress {
    fn new(busy: Arc<watch::Sender<usize>>) -> Self {
        busy.send_modify(|n| *n += 1);
        InProgress(busy)
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// Completes once no request has been in progress for `timeout`.
async fn idle(mut busy: watch::Receiver<usize>, timeout: Duration) {
    loop {
        let idle_now = *busy.borrow_and_update() == 0;
        let changed = if idle_now {
            match tokio::time::timeout(timeout, busy.changed()).await {
                Err(_) => return,
                Ok(changed) => changed,
            }
        } else {
            busy.changed().await
        };
        if changed.is_err() {
            // The service is gone: the connection is ending on its own.
            pending::<()>().await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Request body deadline

/// The error of a request body that did not arrive within `--body-read-timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTimeout(pub Duration);

impl fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "request body not received within {:.1}s",
            self.0.as_secs_f64()
        )
    }
}

impl std::error::Error for BodyTimeout {}

impl BodyTimeout {
    /// The body timeout behind `err`, however deeply the body layers wrapped it.
    pub fn find<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a BodyTimeout> {
        let mut current = Some(err);
        while let Some(e) = current {
            if let Some(t) = e.downcast_ref::<BodyTimeout>() {
                return Some(t);
            }
            current = e.source();
        }
        None
    }
}

/// A request body that fails with [`BodyTimeout`] once `timeout` has passed since the request
/// head, unless it has ended. One deadline for the whole body, not per chunk: a client that
/// dribbles a byte now and then is cut off all the same. (tower-http's `TimeoutBody` restarts
/// its timer on every frame, which such a client defeats; hence these few lines.)
pub struct DeadlineBody<B> {
    inner: B,
    timeout: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl<B> DeadlineBody<B> {
    pub fn new(inner: B, timeout: Duration) -> Self {
        DeadlineBody {
            inner,
            timeout,
            deadline: Box::pin(tokio::time::sleep(timeout)),
        }
    }
}

impl<B> hyper::body::Body for DeadlineBody<B>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimeout(self.timeout))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
