//! Connection hardening over real sockets on 127.0.0.1 (and 127.0.0.2, a second client address
//! on Linux's loopback): the per-address cap, the unauthenticated budget and its eviction, the
//! unauthenticated deadline, hostile clients without credentials against a token holder and the
//! admin listener, the TLS handshake deadline, early answers over HTTP/2, the maximum
//! connection age.

use hyper::body::Bytes;
use tokio::net::TcpSocket;

use super::*;

/// A second client address: every 127.0.0.0/8 address is local on Linux.
const OTHER_CLIENT: std::net::Ipv4Addr = std::net::Ipv4Addr::new(127, 0, 0, 2);

/// A TCP connection to `server` from `client`'s address.
async fn connect_from(client: std::net::Ipv4Addr, server: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((client, 0))).unwrap();
    socket.connect(server).await.unwrap()
}

/// One of the reference's sample requests: `$ENYGMA_REFERENCE_DIR/requests`, else
/// `shared/reference` beside the repository (as the acceptance tests read them).
fn reference_sample(name: &str) -> Vec<u8> {
    let dir = std::env::var_os("ENYGMA_REFERENCE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference"));
    let path = dir.join("requests").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read sample {}: {e}", path.display()))
}

/// A file of one API token, and the `Auth` that requires it.
fn api_auth(dir: &Path) -> Arc<Auth> {
    let file = dir.join("api-tokens");
    std::fs::write(&file, format!("{API_TOKEN}\n")).unwrap();
    Arc::new(Auth {
        api: Some(TokenFile::load(&file, "--auth-token-file").unwrap()),
        // With API tokens, /metrics on the API port needs a metrics token: the same one here.
        metrics: Some(TokenFile::load(&file, "--metrics-token-file").unwrap()),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_holds_at_most_its_share_of_connections() {
    let limits = Limits {
        max_connections_per_ip: 2,
        ..Limits::default()
    };
    let s = start_limited(cfg(Some(1), 4, 5_000), limits).await;
    let first = TcpStream::connect(s.addr).await.unwrap();
    let _second = TcpStream::connect(s.addr).await.unwrap();
    let mut other = H1::over(connect_from(OTHER_CLIENT, s.addr).await)
        .await
        .unwrap();
    wait_metric_over(&mut other, "enygma_connections_open", 3.0).await;

    // A third connection from 127.0.0.1 is closed at once, unanswered; 127.0.0.2 is served.
    assert!(get(s.addr, "/livez").await.is_err(), "served past the cap");
    let per_ip = "enygma_connections_refused_total{reason=\"per_ip\"}";
    wait_metric_over(&mut other, per_ip, 1.0).await;
    assert_eq!(
        other.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );

    // A closed connection gives its address's place back.
    drop(first);
    let deadline = Instant::now() + T;
    while get(s.addr, "/livez").await.is_err() {
        assert!(Instant::now() < deadline, "the place never came back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_authenticate_give_their_place_to_a_newcomer() {
    let dir = temp_dir("unauthenticated-budget");
    let limits = Limits {
        max_connections: 4,
        max_unauthenticated: 2,
        ..Limits::default()
    };
    let transport = Transport { tls: None, limits };
    let s = start_full(
        cfg(Some(1), 4, 5_000),
        Duration::ZERO,
        Duration::from_secs(10),
        false,
        transport,
        api_auth(&dir),
    )
    .await;
    let bearer = format!("Bearer {API_TOKEN}");
    let token = [("Authorization", bearer.as_str())];
    // A gateway's connection: its first request shows a token, so it leaves the budget.
    let mut gateway = H1::plain(s.addr).await.unwrap();
    let r = gateway
        .send("GET", "/openapi.json", &token, b"")
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    // While tokens are required, a probe does not keep a connection that never showed one.
    let mut prober = H1::plain(s.addr).await.unwrap();
    let r = prober.send("GET", "/livez", &[], b"").await.unwrap();
    assert_eq!((r.status, r.header("connection")), (200, Some("close")));
    assert!(prober.send("GET", "/livez", &[], b"").await.is_err());
    // Two clients that never send anything hold the unauthenticated budget.
    let (oldest, _oldest_writes) = TcpStream::connect(s.addr).await.unwrap().into_split();
    let oldest_closed = read_until_closed(oldest);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _younger = TcpStream::connect(s.addr).await.unwrap();
    wait_metric_over(&mut gateway, "enygma_connections_unauthenticated", 2.0).await;

    // A newcomer takes the oldest one's place at once, and is served.
    let start = Instant::now();
    let r = get(s.addr, "/livez").await.unwrap();
    assert_eq!(r.status, 200);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    let (sent, _) = oldest_closed.await.unwrap();
    assert!(sent.is_empty(), "the evicted connection got an answer");
    let m = gateway
        .send("GET", "/metrics", &token, b"")
        .await
        .unwrap()
        .body;
    for (series, n) in [
        (
            "enygma_connection_waits_total{budget=\"unauthenticated\"}",
            1.0,
        ),
        ("enygma_connections_closed_total{reason=\"evicted\"}", 1.0),
    ] {
        assert_eq!(metric(&m, series), Some(n), "{series}\n{m}");
    }
    // The prober's and the newcomer's probes closed their connections (and the readiness
    // probes of the test's start).
    let probes = "enygma_connections_closed_total{reason=\"unauthenticated_probe\"}";
    assert!(metric(&m, probes).unwrap() >= 2.0, "{m}");
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_connection_is_closed_at_its_deadline_whatever_it_does() {
    let limits = Limits {
        unauthenticated_timeout: Duration::from_millis(600),
        ..Limits::default()
    };
    // No tokens: a connection authenticates with any request but a probe.
    let s = start_limited(cfg(Some(1), 4, 5_000), limits).await;
    let mut prober = H1::plain(s.addr).await.unwrap();
    let mut worker = H1::plain(s.addr).await.unwrap();
    let r = worker
        .send("POST", "/generateProofTransfer-2", &[], &body("w", 0))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    // Probes every 100 ms keep no connection open past its deadline.
    let start = Instant::now();
    while prober.send("GET", "/livez", &[], b"").await.is_ok() {
        assert!(start.elapsed() < Duration::from_secs(5), "never closed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The connection that made an API request is still served.
    let r = worker.send("GET", "/livez", &[], b"").await.unwrap();
    assert_eq!(r.status, 200);
    let m = worker.send("GET", "/metrics", &[], b"").await.unwrap().body;
    assert_eq!(
        metric(
            &m,
            "enygma_connections_closed_total{reason=\"unauthenticated_timeout\"}"
        ),
        Some(1.0),
        "{m}"
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

/// Connections without credentials, from `client`, for as long as `until`: each either sends
/// nothing, asks probes, or presents wrong tokens over HTTP/1.1 or HTTP/2, and reconnects as
/// soon as it is closed. Returns how many connections it opened.
fn hostile_client(
    server: SocketAddr,
    client: std::net::Ipv4Addr,
    connections: usize,
    until: Instant,
) -> JoinHandle<usize> {
    tokio::spawn(async move {
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..connections {
            tasks.spawn(async move {
                let mut opened = 0;
                while Instant::now() < until {
                    let socket = TcpSocket::new_v4().unwrap();
                    socket.bind(SocketAddr::from((client, 0))).unwrap();
                    let left = until.saturating_duration_since(Instant::now());
                    let Ok(Ok(tcp)) = tokio::time::timeout(left, socket.connect(server)).await
                    else {
                        break;
                    };
                    opened += 1;
                    let hold = async {
                        match n % 4 {
                            // Holds its slot by sending nothing.
                            0 => {
                                let mut tcp = tcp;
                                let mut buf = [0u8; 64];
                                let _ = tcp.read(&mut buf).await;
                            }
                            // Probes, as fast as they are answered.
                            1 => {
                                let Ok(mut h1) = H1::over(tcp).await else {
                                    return;
                                };
                                while h1.send("GET", "/readyz", &[], b"").await.is_ok() {}
                            }
                            // Wrong tokens over HTTP/1.1.
                            2 => {
                                let Ok(mut h1) = H1::over(tcp).await else {
                                    return;
                                };
                                let wrong = [("Authorization", "Bearer wrong-token-0123456789")];
                                while h1.send("GET", "/openapi.json", &wrong, b"").await.is_ok() {}
                            }
                            // Wrong tokens over HTTP/2, several streams at once.
                            _ => {
                                let Ok(h2) = H2::plain_over(tcp).await else {
                                    return;
                                };
                                let wrong = [("Authorization", "Bearer wrong-token-0123456789")];
                                loop {
                                    let (mut a, mut b) = (h2.clone(), h2.clone());
                                    let (ra, rb) = tokio::join!(
                                        a.send("GET", "/openapi.json", &wrong, b""),
                                        b.send("GET", "/openapi.json", &wrong, b""),
                                    );
                                    if ra.is_err() || rb.is_err() {
                                        break;
                                    }
                                }
                            }
                        }
                    };
                    let left = until.saturating_duration_since(Instant::now());
                    let _ = tokio::time::timeout(left, hold).await;
                }
                opened
            });
        }
        let mut opened = 0;
        while let Some(n) = tasks.join_next().await {
            opened += n.unwrap_or(0);
        }
        opened
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_client_without_credentials_delays_a_token_holders_new_connection() {
    let dir = temp_dir("lock-out");
    // The default limits scaled down: 32 unauthenticated of 64 connections, 16 per address.
    let limits = Limits {
        max_connections: 64,
        max_unauthenticated: 32,
        max_connections_per_ip: 16,
        ..Limits::default()
    };
    let transport = Transport { tls: None, limits };
    let mut config = cfg(Some(1), 4, 5_000);
    config.auth_failure_burst = 20;
    config.auth_failure_refill = Duration::from_secs(1);
    let s = start_full(
        config,
        Duration::ZERO,
        Duration::from_secs(10),
        false,
        transport,
        api_auth(&dir),
    )
    .await;
    let admin = s.server.admin.expect("an admin listener");
    let until = Instant::now() + Duration::from_secs(4);
    // Four addresses hold the API's unauthenticated slots (16 connections each, past the 32
    // slots), eight hold the admin listener's 64 (8 each, its per-address cap).
    let mut hostile = Vec::new();
    for i in 0..4u8 {
        hostile.push(hostile_client(
            s.addr,
            std::net::Ipv4Addr::new(127, 0, 1, 1 + i),
            16,
            until,
        ));
    }
    for i in 0..8u8 {
        hostile.push(hostile_client(
            admin,
            std::net::Ipv4Addr::new(127, 0, 2, 1 + i),
            8,
            until,
        ));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Meanwhile, a token holder's new connections and the kubelet's probes are served at once.
    let bearer = format!("Bearer {API_TOKEN}");
    let mut slowest = (Duration::ZERO, Duration::ZERO);
    let mut round = 0;
    while Instant::now() + Duration::from_millis(600) < until {
        round += 1;
        let start = Instant::now();
        let r = http::request(
            s.addr,
            "POST",
            "/generateProofTransfer-2",
            &[("Authorization", bearer.as_str())],
            &body(&format!("holder-{round}"), 0),
            Duration::from_secs(1),
        )
        .await
        .unwrap_or_else(|e| panic!("round {round}: the token holder was not served: {e}"));
        assert_eq!(r.status, 200, "{}", r.body);
        slowest.0 = slowest.0.max(start.elapsed());
        let start = Instant::now();
        let r = http::request(admin, "GET", "/livez", &[], b"", Duration::from_secs(1))
            .await
            .unwrap_or_else(|e| panic!("round {round}: admin /livez was not served: {e}"));
        assert_eq!(r.status, 200);
        slowest.1 = slowest.1.max(start.elapsed());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(round >= 3, "{round} rounds");
    let mut opened = 0;
    for h in hostile {
        opened += h.await.unwrap();
    }
    // The hostile clients were really there: they opened more connections than the slots.
    assert!(opened > 96, "{opened} hostile connections");
    let r = http::request(admin, "GET", "/metrics", &[], b"", Duration::from_secs(5))
        .await
        .unwrap();
    let m = r.body;
    let evicted = metric(&m, "enygma_connections_closed_total{reason=\"evicted\"}").unwrap();
    let limited = metric(&m, "enygma_auth_failures_limited_total").unwrap();
    assert!(evicted > 0.0 && limited > 0.0, "{m}");
    eprintln!(
        "{round} rounds, {opened} hostile connections: slowest token holder {:?}, slowest admin /livez {:?}",
        slowest.0, slowest.1
    );
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_handshake_must_finish_within_its_own_deadline() {
    let dir = temp_dir("tls-handshake-deadline");
    let ca = Ca::new("CA");
    let tls = Arc::new(Tls::load(tls_files(&dir, &ca, None)).unwrap());
    let limits = Limits {
        tls_handshake_timeout: Duration::from_millis(300),
        header_read_timeout: Duration::from_secs(10),
        ..Limits::default()
    };
    let s = start_on(
        cfg(Some(1), 4, 5_000),
        Transport {
            tls: Some(tls),
            limits,
        },
    )
    .await;
    // A client that connects and never starts the handshake.
    let t0 = Instant::now();
    let (rd, _wr) = TcpStream::connect(s.addr).await.unwrap().into_split();
    let (answer, at) = read_until_closed(rd).await.unwrap();
    assert!(answer.is_empty());
    let after = at - t0;
    assert!(
        after >= Duration::from_millis(250) && after < Duration::from_secs(3),
        "closed after {after:?}, not at the handshake deadline"
    );
    // A client that completes it in time is served.
    let mut conn = H1::tls(s.addr, client_config(&[&ca], None, H1_ONLY))
        .await
        .unwrap();
    assert_eq!(
        conn.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );
    wait_metric_over(&mut conn, "enygma_connections_timed_out_total", 1.0).await;
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An HTTP/2 connection driven frame by frame (h2, the HTTP/2 implementation under hyper).
struct RawH2 {
    sender: h2::client::SendRequest<Bytes>,
    ping: h2::PingPong,
}

impl RawH2 {
    async fn tls(addr: SocketAddr, ca: &Ca) -> RawH2 {
        let io = tls_client::connect(addr, client_config(&[ca], None, H2_ONLY))
            .await
            .unwrap();
        let (sender, mut conn) = h2::client::handshake(io).await.unwrap();
        let ping = conn.ping_pong().unwrap();
        tokio::spawn(conn);
        RawH2 { sender, ping }
    }

    /// Posts the head of a request with `body` and its first `sent_first` bytes, and reads the
    /// whole answer: its status, and the stream the rest of the body would go on.
    async fn post_head(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        sent_first: usize,
    ) -> (u16, h2::SendStream<Bytes>) {
        let mut req = hyper::Request::post(format!("https://localhost{path}"))
            .header("content-type", "application/json")
            .header("content-length", body.len());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut sender = self.sender.clone().ready().await.unwrap();
        let (response, mut stream) = sender.send_request(req.body(()).unwrap(), false).unwrap();
        stream
            .send_data(Bytes::copy_from_slice(&body[..sent_first]), false)
            .unwrap();
        let response = response.await.unwrap();
        let status = response.status().as_u16();
        let mut answer = response.into_body();
        while let Some(chunk) = answer.data().await {
            let chunk = chunk.unwrap();
            let _ = answer.flow_control().release_capacity(chunk.len());
        }
        (status, stream)
    }

    /// Posts the head and the first `sent_first` bytes of `body` and reads the whole answer:
    /// its status, and whether the server then went away (GOAWAY: no new stream can start).
    async fn post_refused(&mut self, path: &str, body: &[u8], sent_first: usize) -> (u16, bool) {
        let fut = async {
            let (status, _stream) = self.post_head(path, &[], body, sent_first).await;
            let deadline = Instant::now() + T;
            let gone = loop {
                if self.sender.clone().ready().await.is_err() {
                    break true;
                }
                if Instant::now() > deadline {
                    break false;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            (status, gone)
        };
        tokio::time::timeout(T, fut).await.unwrap()
    }

    /// Posts `body` the way a client does whose request the server answers early: the head
    /// and the first `sent_first` bytes, then (once the whole answer has arrived and a PING
    /// round trip has flushed whatever the server sent after it) the rest, which ends the
    /// stream. Returns the status and whether the server reset the stream.
    async fn post_answered_early(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        sent_first: usize,
    ) -> (u16, bool) {
        let fut = async {
            let (status, mut stream) = self.post_head(path, headers, body, sent_first).await;
            self.ping.ping(h2::Ping::opaque()).await.unwrap();
            let rest = stream.send_data(Bytes::copy_from_slice(&body[sent_first..]), true);
            // Another round trip, for the server's answer to the end of the stream.
            self.ping.ping(h2::Ping::opaque()).await.unwrap();
            let reset = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(matches!(stream.poll_reset(cx), std::task::Poll::Ready(_)))
            })
            .await;
            (status, rest.is_err() || reset)
        };
        tokio::time::timeout(T, fut)
            .await
            .expect("HTTP/2 exchange timed out")
    }
}

/// Over HTTP/2 (TLS, ALPN h2, as curl does by default), answers sent before the request body
/// is read (503 while the keys load, 413 past the body limit) reach the client as their status
/// and end their stream without RST_STREAM: the rest of the body is read and discarded. (curl
/// reported such resets as "stream error", exit 92, instead of the status.) A 401 reaches the
/// client whole too, and then closes its connection with a GOAWAY.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_answers_over_http2_end_their_stream_without_a_reset() {
    let dir = temp_dir("h2-early-answers");
    let ca = Ca::new("CA");
    let tls = Arc::new(Tls::load(tls_files(&dir, &ca, None)).unwrap());
    // Keys that take a while to load: the first requests are answered 503.
    let s = start_full(
        cfg(Some(1), 4, 5_000),
        Duration::from_secs(3),
        Duration::from_secs(10),
        false,
        Transport {
            tls: Some(tls),
            limits: Limits::default(),
        },
        api_auth(&dir),
    )
    .await;
    let sample = reference_sample("transfer-k2.json");
    let bearer = format!("Bearer {API_TOKEN}");
    let token = [("Authorization", bearer.as_str())];
    let path = "/generateProofTransfer-2";
    let mut h2 = RawH2::tls(s.addr, &ca).await;

    let loading = Instant::now();
    for i in 0..20 {
        let (status, reset) = h2.post_answered_early(path, &token, &sample, 100).await;
        if status == 200 {
            // The keys came while this loop ran (a slow machine): enough 503s were seen.
            assert!(
                i >= 5 && loading.elapsed() > Duration::from_secs(2),
                "ready too soon"
            );
            break;
        }
        assert_eq!((status, reset), (503, false), "try {i} while the keys load");
    }
    // While tokens are required a probe closes a connection that showed none: one each.
    let deadline = Instant::now() + T;
    loop {
        let mut probe = H1::tls(s.addr, client_config(&[&ca], None, H1_ONLY))
            .await
            .unwrap();
        if probe.send("GET", "/readyz", &[], b"").await.unwrap().status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "not ready in time");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // A 401 closes its connection (GOAWAY) once its whole answer is sent: a client cannot
    // hold the connection by guessing. One connection each.
    for i in 0..5 {
        let mut once = RawH2::tls(s.addr, &ca).await;
        let (status, gone) = once.post_refused(path, &sample, 100).await;
        assert_eq!((status, gone), (401, true), "try {i} without a token");
    }
    // Past the 64 KiB body limit, with a few KiB still to come when the answer is sent.
    let too_large = vec![b' '; 70 * 1024];
    for i in 0..5 {
        let (status, reset) = h2
            .post_answered_early(path, &token, &too_large, 66 * 1024)
            .await;
        assert_eq!((status, reset), (413, false), "try {i} past the body limit");
    }
    // The connection is still good for a proof.
    let mut h2 = H2::tls(s.addr, client_config(&[&ca], None, H2_ONLY))
        .await
        .unwrap();
    let r = h2
        .send("POST", path, &token, &body("after", 0))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A connection older than `--max-connection-age` is closed after the response in progress:
/// HTTP/1.1 with `Connection: close`, HTTP/2 with GOAWAY.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_older_than_the_max_age_is_closed_after_its_response() {
    let limits = Limits {
        max_connection_age: Duration::from_millis(400),
        ..Limits::default()
    };
    let s = start_limited(cfg(Some(1), 4, 5_000), limits).await;
    let path = "/generateProofTransfer-2";
    // The proof outlasts the connection's age.
    let mut h1 = H1::over(TcpStream::connect(s.addr).await.unwrap())
        .await
        .unwrap();
    let r = h1
        .send("POST", path, &[], &body("aged-h1", 800))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("connection"), Some("close"));
    assert!(
        h1.send("GET", "/livez", &[], b"").await.is_err(),
        "still open"
    );

    let mut h2 = H2::plain(s.addr).await.unwrap();
    let r = h2
        .send("POST", path, &[], &body("aged-h2", 800))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(
        h2.send("GET", "/livez", &[], b"").await.is_err(),
        "still open"
    );

    let m = s.metrics().await;
    assert_eq!(metric(&m, "enygma_connections_aged_out_total"), Some(2.0));
    assert_eq!(s.proved_tags(), ["aged-h1", "aged-h2"]);
    assert_eq!(s.stop().await, Exit::Clean);
}
