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
//! - **An absolute deadline for unauthenticated connections** (`--unauthenticated-timeout`):
//!   a connection on which no request has authenticated within that time of its accept is
//!   closed at once, whatever it does meanwhile (probes, refused requests, a slow TLS
//!   handshake).
//! - **Closing on the service's request** ([`ConnectionSlot::close_after_response`]): after a
//!   401, after a probe answered to a connection that has not authenticated while credentials
//!   are required, and once a connection's allowance of malformed requests is spent
//!   (`crate::admission::abuse`), the connection is closed after that response (HTTP/1.1:
//!   `Connection: close`; HTTP/2: GOAWAY, the other streams in progress finish). An
//!   unauthenticated connection evicted by a newcomer ([`budget`]) is closed at once.
//! - **Client addresses behind a proxy** (`--proxy-protocol-from`): a connection from a
//!   trusted proxy must start with a PROXY protocol header (v1 or v2, parsed by `ppp`, within
//!   the header deadline); the client address it names is the connection's for the
//!   per-address cap, the failed-authentication counts and the logs. Other connections send no
//!   such header, and none is read from them.
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
use std::net::{IpAddr, SocketAddr};
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
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Sleep;
use tower::ServiceExt;

use crate::caller::{Caller, CertificateCaller, PeerAddress};
use crate::metrics::Metrics;
use crate::tls::Tls;

pub(crate) mod budget;
mod drain;

pub use budget::ConnectionSlot;
use budget::{Budget, BudgetLimits, Closing};
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
    /// A connection on which no request has authenticated this long after its accept is
    /// closed.
    pub unauthenticated_timeout: Duration,
    /// Connections from these networks are a proxy's: they start with a PROXY protocol header
    /// naming the client.
    pub trusted_proxies: Vec<ipnet::IpNet>,
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
            unauthenticated_timeout: Duration::from_secs(10),
            trusted_proxies: Vec::new(),
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
        // A trusted proxy's connection is counted against the client its header names, once
        // read (in the connection's task, under its deadline).
        let proxied = shared.is_trusted_proxy(peer.ip());
        let admitted = tokio::select! {
            _ = &mut stop => break,
            admitted = budget.admit(reserved, (!proxied).then_some(peer.ip())) => admitted,
        };
        let slot = match admitted {
            Ok(slot) => slot,
            Err(refusal) => {
                tracing::debug!(peer = %peer, reason = ?refusal, "connection refused");
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(connection(
            tcp,
            peer,
            proxied,
            shared.clone(),
            stop_rx.clone(),
            slot,
        ));
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
    proxied: bool,
    shared: Arc<Shared>,
    stop: watch::Receiver<bool>,
    slot: Arc<ConnectionSlot>,
) {
    let _open = OpenConnection::new(shared.metrics.clone());
    let counters = &shared.metrics.connections;
    tokio::select! {
        () = handshake_and_serve(tcp, peer, proxied, &shared, stop, slot.clone()) => {}
        _ = slot.closing_at_least(Closing::Evicted) => {
            tracing::debug!(peer = %peer, "unauthenticated connection closed for a newcomer");
        }
        () = unauthenticated_for(&slot, shared.limits.unauthenticated_timeout) => {
            counters.unauthenticated_timed_out.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(peer = %peer, "no request authenticated within --unauthenticated-timeout; closed");
        }
    }
}

/// Completes once the connection has been open for `timeout` without authenticating.
async fn unauthenticated_for(slot: &ConnectionSlot, timeout: Duration) {
    tokio::time::sleep(timeout).await;
    if !slot.is_unauthenticated() {
        pending::<()>().await;
    }
}

impl Shared {
    fn is_trusted_proxy(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.limits
            .trusted_proxies
            .iter()
            .any(|net| net.contains(&ip))
    }
}

/// The PROXY protocol header of a trusted proxy's connection, read (and consumed) within the
/// header deadline: the client's address, or `None` for a connection the proxy makes for
/// itself (`LOCAL`, `UNKNOWN`: its health checks).
async fn proxy_header(
    tcp: &mut TcpStream,
    deadline: Duration,
) -> Result<Option<SocketAddr>, String> {
    use ppp::{v1, v2, HeaderResult, PartialResult};
    /// The largest header read: a v1 header is at most 107 bytes, a v2 header's addresses and
    /// the TLVs a proxy sends (ALPN, authority, SSL) fit well within this.
    const MAX_HEADER: usize = 1024;
    let read = async {
        let mut buf = vec![0u8; MAX_HEADER];
        loop {
            // Peek until the header is complete, so that nothing after it is consumed here.
            let n = tcp.peek(&mut buf).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("connection closed before its PROXY header".to_string());
            }
            let parsed = HeaderResult::parse(&buf[..n]);
            if parsed.is_incomplete() {
                if n == MAX_HEADER {
                    return Err("PROXY header too long".to_string());
                }
                // More bytes are on their way; a peek returns at once while some are there.
                tokio::time::sleep(Duration::from_millis(2)).await;
                continue;
            }
            let (len, client) = match parsed {
                HeaderResult::V1(Ok(h)) => (
                    h.header.len(),
                    match h.addresses {
                        v1::Addresses::Tcp4(a) => {
                            Some(SocketAddr::from((a.source_address, a.source_port)))
                        }
                        v1::Addresses::Tcp6(a) => {
                            Some(SocketAddr::from((a.source_address, a.source_port)))
                        }
                        v1::Addresses::Unknown => None,
                    },
                ),
                HeaderResult::V2(Ok(h)) => (
                    h.len(),
                    match (h.command, h.addresses) {
                        (v2::Command::Proxy, v2::Addresses::IPv4(a)) => {
                            Some(SocketAddr::from((a.source_address, a.source_port)))
                        }
                        (v2::Command::Proxy, v2::Addresses::IPv6(a)) => {
                            Some(SocketAddr::from((a.source_address, a.source_port)))
                        }
                        _ => None,
                    },
                ),
                _ => return Err("no valid PROXY protocol header".to_string()),
            };
            let mut consumed = vec![0u8; len];
            tcp.read_exact(&mut consumed)
                .await
                .map_err(|e| e.to_string())?;
            return Ok(client);
        }
    };
    tokio::time::timeout(deadline, read)
        .await
        .map_err(|_| "no PROXY header within --header-read-timeout".to_string())?
}

/// The connection's protocol setup (the PROXY header of a trusted proxy, the TLS handshake),
/// then its requests.
async fn handshake_and_serve(
    mut tcp: TcpStream,
    mut peer: SocketAddr,
    proxied: bool,
    shared: &Shared,
    mut stop: watch::Receiver<bool>,
    slot: Arc<ConnectionSlot>,
) {
    let counters = &shared.metrics.connections;
    let limits = &shared.limits;
    if proxied {
        match proxy_header(&mut tcp, limits.header_read_timeout).await {
            Ok(client) => {
                let proxy = peer;
                peer = client.unwrap_or(proxy);
                if slot.client_address(peer.ip()).is_err() {
                    tracing::debug!(peer = %peer, proxy = %proxy, "connection refused: its client holds --max-connections-per-ip");
                    return;
                }
            }
            Err(e) => {
                counters
                    .proxy_header_failures
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(proxy = %peer, error = %e, "connection from a trusted proxy without a valid PROXY header; closed");
                return;
            }
        }
    }
    let Some(tls) = &shared.tls else {
        return serve_http(
            TokioIo::new(tcp),
            Protocol::Detect,
            peer,
            None,
            slot,
            shared,
            stop,
        )
        .await;
    };
    let handshake = tokio::time::timeout(
        limits.tls_handshake_timeout.min(limits.header_read_timeout),
        tls.acceptor().accept(tcp),
    );
    let stream = tokio::select! {
        done = handshake => match done {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                counters.tls_handshake_failures.fetch_add(1, Ordering::Relaxed);
                tls.log_handshake_failure(peer, &e);
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
    let mut _tracked = None;
    if let (true, Some(leaf)) = (
        tls.requires_client_cert(),
        certificate.and_then(|c| c.first()),
    ) {
        // The handshake verified the client's certificate: it has authenticated.
        slot.authenticated();
        tls.log_client(peer, certificate, caller.as_ref());
        // A reload whose revocation lists revoke it closes this connection.
        _tracked = Some(tls.track_client(&slot, leaf));
    }
    serve_http(
        TokioIo::new(stream),
        protocol,
        peer,
        caller,
        slot,
        shared,
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
    let service = {
        let slot = slot.clone();
        let (app, body_timeout) = (shared.app.clone(), limits.body_read_timeout);
        let drain_bytes = limits.early_answer_drain_bytes;
        service_fn(move |req: hyper::Request<Incoming>| {
            let in_progress = slot.request_started();
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
        _ = slot.idle_for(limits.header_read_timeout) => Close::Idle,
        _ = slot.closing_at_least(Closing::AfterResponse) => Close::Asked,
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

/// Closes the connection of a request once `resp` is sent: HTTP/1.1 with `Connection: close`
/// on it, HTTP/2 with a GOAWAY (the connection's other streams in progress are answered).
pub fn close_after_response(
    resp: &mut axum::response::Response,
    slot: &ConnectionSlot,
    version: hyper::Version,
) {
    if version < hyper::Version::HTTP_2 {
        resp.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    slot.close_after_response();
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
    /// The service asked ([`ConnectionSlot::close_after_response`]).
    Asked,
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
