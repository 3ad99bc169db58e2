//! Transport and access control over real sockets on 127.0.0.1, with the fake prover: TLS with
//! HTTP/1.1 and HTTP/2 and a reload that keeps open connections, mTLS, bearer tokens, slow and
//! idle clients, the connection cap, the drain over TLS, and the default queue under the
//! reference's stress test (100 concurrent requests).

use std::path::Path;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;
use crate::auth::TokenFile;
use crate::config::Args;
use crate::log_capture::CapturedLog;
use crate::tls::{Tls, TlsFiles};
use crate::transport::Limits;
use clap::Parser;

#[path = "../../tests/common/tls.rs"]
pub(super) mod tls_client;
use tls_client::{client_config, temp_dir, Ca, Issued, H1, H2};

/// Connection hardening: per-address cap, unauthenticated budget, handshake deadline, early
/// answers over HTTP/2, connection age.
mod hardening;

const H1_ONLY: &[&[u8]] = &[b"http/1.1"];
const H2_ONLY: &[&[u8]] = &[b"h2"];

async fn start_tls(cfg: AdmissionConfig, tls: Arc<Tls>) -> TestServer {
    start_on(
        cfg,
        Transport {
            tls: Some(tls),
            limits: Limits::default(),
        },
    )
    .await
}

/// A server over plain TCP with these connection limits.
async fn start_limited(cfg: AdmissionConfig, limits: Limits) -> TestServer {
    start_on(cfg, Transport { tls: None, limits }).await
}

/// A server on `transport`, without tokens, its keys loaded at once.
async fn start_on(cfg: AdmissionConfig, transport: Transport) -> TestServer {
    start_full(
        cfg,
        Duration::ZERO,
        Duration::from_secs(10),
        false,
        transport,
        Arc::new(Auth::default()),
    )
    .await
}

fn tls_files(dir: &Path, ca: &Ca, client_ca: Option<&Ca>) -> TlsFiles {
    let (cert, key) = ca.server().write(dir, "server");
    let client_ca = client_ca.map(|c| {
        let path = dir.join("client-ca.crt");
        std::fs::write(&path, c.pem()).unwrap();
        path
    });
    TlsFiles {
        cert,
        key,
        client_ca,
        client_names: None,
        client_crl: None,
    }
}

/// Waits (bounded) until `/readyz` answers 200 on `conn`.
async fn ready_over(conn: &mut H1) {
    let deadline = Instant::now() + T;
    loop {
        let r = conn.send("GET", "/readyz", &[], b"").await.unwrap();
        if r.status == 200 {
            return;
        }
        assert!(Instant::now() < deadline, "not ready in time");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Polls `series` on `/metrics` over `conn` until it equals `value` (bounded).
async fn wait_metric_over(conn: &mut H1, series: &str, value: f64) {
    let deadline = Instant::now() + T;
    loop {
        // The token matters only to a server with tokens (whose metrics token is this one).
        let bearer = format!("Bearer {API_TOKEN}");
        let m = conn
            .send(
                "GET",
                "/metrics",
                &[("Authorization", bearer.as_str())],
                b"",
            )
            .await
            .unwrap()
            .body;
        if metric(&m, series) == Some(value) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{series} never reached {value}: {:?}",
            metric(&m, series)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_http1_and_http2_and_a_reload_keeps_open_connections() {
    let dir = temp_dir("tls-reload");
    let (ca1, ca2) = (Ca::new("first CA"), Ca::new("second CA"));
    let files = tls_files(&dir, &ca1, None);
    let tls = Arc::new(Tls::load(files.clone()).unwrap());
    let s = start_tls(cfg(Some(1), 4, 5_000), tls.clone()).await;

    let mut h1 = H1::tls(s.addr, client_config(&[&ca1], None, H1_ONLY))
        .await
        .unwrap();
    ready_over(&mut h1).await;
    let r = h1
        .send(
            "POST",
            "/generateProofTransfer-2",
            &[],
            &body("over-tls", 0),
        )
        .await
        .unwrap();
    assert_eq!((r.status, r.version), (200, hyper::Version::HTTP_11));
    assert!(r.body.contains("over-tls"));

    // ALPN h2: the same routes over HTTP/2.
    let mut h2 = H2::tls(s.addr, client_config(&[&ca1], None, H2_ONLY))
        .await
        .unwrap();
    let r = h2
        .send("POST", "/generateProofDeposit-3", &[], &body("h2", 0))
        .await
        .unwrap();
    assert_eq!((r.status, r.version), (200, hyper::Version::HTTP_2));
    assert!(r.header("server-timing").is_some());

    // Plain HTTP on the TLS port gets no HTTP answer.
    assert!(get(s.addr, "/livez").await.is_err());

    // Rotate to a certificate of another CA and reload (what SIGHUP does in the binary).
    ca2.server().write(&dir, "server");
    tls.reload().unwrap();
    let err = H1::tls(s.addr, client_config(&[&ca1], None, H1_ONLY)).await;
    assert!(
        err.is_err(),
        "a new handshake still got the old certificate"
    );
    let mut fresh = H1::tls(s.addr, client_config(&[&ca2], None, H1_ONLY))
        .await
        .unwrap();
    assert_eq!(
        fresh.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );
    // The connections opened before the reload still serve requests.
    assert_eq!(
        h1.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );
    let r = h2
        .send("POST", "/generateProofTransfer-2", &[], &body("after", 0))
        .await
        .unwrap();
    assert_eq!(r.status, 200);

    assert_eq!(s.proved_tags(), ["over-tls", "h2", "after"]);
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
}

/// True if a client with `config` gets no HTTP answer (refused during or right after the
/// handshake: with TLS 1.3 the client may finish its side before the server checks its
/// certificate, and learns of the refusal on its first read).
async fn refused(addr: SocketAddr, config: Arc<tokio_rustls::rustls::ClientConfig>) -> bool {
    match H1::tls(addr, config).await {
        Err(_) => true,
        Ok(mut conn) => conn.send("GET", "/livez", &[], b"").await.is_err(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_refuses_clients_without_a_certificate_from_the_client_ca() {
    let dir = temp_dir("mtls");
    let (server_ca, client_ca, rogue_ca) = (
        Ca::new("server CA"),
        Ca::new("client CA"),
        Ca::new("rogue CA"),
    );
    let tls = Arc::new(Tls::load(tls_files(&dir, &server_ca, Some(&client_ca))).unwrap());
    assert!(tls.requires_client_cert());
    let s = start_tls(cfg(Some(1), 4, 5_000), tls).await;

    let gateway = client_ca.client("gateway");
    let mut good = H1::tls(
        s.addr,
        client_config(&[&server_ca], Some(&gateway), H1_ONLY),
    )
    .await
    .unwrap();
    ready_over(&mut good).await;
    let r = good
        .send("POST", "/generateProofTransfer-2", &[], &body("mtls", 0))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    // HTTP/2 with a client certificate too.
    let mut h2 = H2::tls(
        s.addr,
        client_config(&[&server_ca], Some(&gateway), H2_ONLY),
    )
    .await
    .unwrap();
    assert_eq!(
        h2.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );

    // No certificate, or one from another CA: refused in the handshake.
    assert!(refused(s.addr, client_config(&[&server_ca], None, H1_ONLY)).await);
    let rogue = rogue_ca.client("gateway");
    assert!(refused(s.addr, client_config(&[&server_ca], Some(&rogue), H1_ONLY)).await);
    wait_metric_over(&mut good, "enygma_tls_handshake_failures_total", 2.0).await;
    assert_eq!(s.proved_tags(), ["mtls"]);
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_client_certificate_is_refused_and_its_open_connection_closed_on_reload() {
    let dir = temp_dir("crl");
    let (server_ca, client_ca) = (Ca::new("server CA"), Ca::new("client CA"));
    let (alice, bob) = (client_ca.client("bank-a"), client_ca.client("bank-b"));
    let crl = dir.join("client.crl");
    std::fs::write(&crl, client_ca.crl(&[])).unwrap();
    let files = TlsFiles {
        client_crl: Some(crl.clone()),
        ..tls_files(&dir, &server_ca, Some(&client_ca))
    };
    let tls = Arc::new(Tls::load(files).unwrap());
    let s = start_tls(cfg(Some(1), 4, 5_000), tls.clone()).await;
    let connect = |who: &Issued| H1::tls(s.addr, client_config(&[&server_ca], Some(who), H1_ONLY));
    let mut open = connect(&alice).await.unwrap();
    ready_over(&mut open).await;
    let mut other = connect(&bob).await.unwrap();
    assert_eq!(
        other.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );

    // The CA revokes bank-a's certificate; the reload (SIGHUP) closes its open connection and
    // refuses its new ones, and bank-b is served as before.
    std::fs::write(&crl, client_ca.crl(&[&alice])).unwrap();
    let metrics = crate::metrics::Metrics::new();
    crate::server::reload(Some(&tls), &Auth::default(), &metrics, false);
    assert_eq!(
        metrics.connections.closed_revoked.load(Ordering::Relaxed),
        1
    );
    let deadline = Instant::now() + T;
    while open.send("GET", "/livez", &[], b"").await.is_ok() {
        assert!(
            Instant::now() < deadline,
            "the revoked client's connection stayed open"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(refused(s.addr, client_config(&[&server_ca], Some(&alice), H1_ONLY)).await);
    assert_eq!(
        other.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );
    let mut fresh = connect(&bob).await.unwrap();
    assert_eq!(
        fresh.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );
    // A list that cannot be read keeps the previous one.
    std::fs::write(&crl, "not a CRL").unwrap();
    assert!(tls.reload().is_err());
    assert!(refused(s.addr, client_config(&[&server_ca], Some(&alice), H1_ONLY)).await);
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_drain_answers_in_flight_requests_and_closes_idle_http2_connections() {
    let dir = temp_dir("tls-drain");
    let ca = Ca::new("CA");
    let tls = Arc::new(Tls::load(tls_files(&dir, &ca, None)).unwrap());
    let s = start_tls(cfg(Some(1), 4, 10_000), tls).await;
    let mut probe = H1::tls(s.addr, client_config(&[&ca], None, H1_ONLY))
        .await
        .unwrap();
    ready_over(&mut probe).await;
    // An idle HTTP/2 connection must not hold the drain up.
    let mut idle = H2::tls(s.addr, client_config(&[&ca], None, H2_ONLY))
        .await
        .unwrap();
    assert_eq!(
        idle.send("GET", "/livez", &[], b"").await.unwrap().status,
        200
    );

    let addr = s.addr;
    let cfg_h1 = client_config(&[&ca], None, H1_ONLY);
    let in_flight = tokio::spawn(async move {
        let mut c = H1::tls(addr, cfg_h1).await.unwrap();
        c.send(
            "POST",
            "/generateProofTransfer-2",
            &[],
            &body("in-flight", 500),
        )
        .await
        .unwrap()
    });
    wait_metric_over(&mut probe, "enygma_proofs_in_flight", 1.0).await;
    drop(probe);
    let t0 = Instant::now();
    assert_eq!(s.stop().await, Exit::Clean);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let r = in_flight.await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    // The listener is closed.
    assert!(TcpStream::connect(addr).await.is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

const API_TOKEN: &str = "api-token-0123456789abcdef";
const METRICS_TOKEN: &str = "metrics-token-0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_guard_every_route_but_the_probes() {
    let dir = temp_dir("tokens");
    let api_file = dir.join("api-tokens");
    let metrics_file = dir.join("metrics-tokens");
    std::fs::write(&api_file, format!("# gateway\n{API_TOKEN}\n")).unwrap();
    std::fs::write(&metrics_file, format!("{METRICS_TOKEN}\n")).unwrap();
    let auth = Arc::new(Auth {
        api: Some(TokenFile::load(&api_file, "--auth-token-file").unwrap()),
        metrics: Some(TokenFile::load(&metrics_file, "--metrics-token-file").unwrap()),
    });
    let s = start_full(
        cfg(Some(1), 4, 5_000),
        Duration::ZERO,
        Duration::from_secs(10),
        false,
        Transport::default(),
        auth,
    )
    .await;
    let a = s.addr;
    let api = format!("Bearer {API_TOKEN}");
    let metrics_bearer = format!("Bearer {METRICS_TOKEN}");
    let send = |method: &'static str, path: &'static str, auth: Option<String>, b: Vec<u8>| async move {
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|v| vec![("Authorization", v)])
            .unwrap_or_default();
        http::request(a, method, path, &headers, &b, T)
            .await
            .unwrap()
    };
    let prove = "/generateProofTransfer-2";

    let missing = send("POST", prove, None, body("no-token", 0)).await;
    assert_eq!(missing.status, 401);
    assert_eq!(
        missing.header("www-authenticate"),
        Some(r#"Bearer realm="enygma-prover""#)
    );
    assert!(missing.error().contains("missing bearer token"));
    let wrong = send(
        "POST",
        prove,
        Some("Bearer not-the-token-0123456789".into()),
        body("wrong", 0),
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert_eq!(
        wrong.header("www-authenticate"),
        Some(r#"Bearer realm="enygma-prover", error="invalid_token""#)
    );
    let basic = send("POST", prove, Some("Basic YTpi".into()), body("basic", 0)).await;
    assert_eq!(basic.status, 401);
    // The metrics token does not open the API, nor the API token /metrics.
    let cross = send(
        "POST",
        prove,
        Some(metrics_bearer.clone()),
        body("cross", 0),
    )
    .await;
    assert_eq!(cross.status, 401);
    let ok = send("POST", prove, Some(api.clone()), body("with-token", 0)).await;
    assert_eq!(ok.status, 200, "{}", ok.body);

    let verify_missing = send(
        "POST",
        "/verifyProofTransfer-2",
        None,
        br#"{"tag":"good"}"#.to_vec(),
    )
    .await;
    assert_eq!(verify_missing.status, 401);
    let verify_ok = send(
        "POST",
        "/verifyProofTransfer-2",
        Some(api.clone()),
        br#"{"tag":"good"}"#.to_vec(),
    )
    .await;
    assert_eq!(
        (verify_ok.status, verify_ok.body.as_str()),
        (200, r#"{"valid":true}"#)
    );
    // Unknown paths: 401 without a token (no route discovery), 404 with one.
    assert_eq!(
        send("GET", "/join-split-erc20", None, vec![]).await.status,
        401
    );
    assert_eq!(
        send("GET", "/join-split-erc20", Some(api.clone()), vec![])
            .await
            .status,
        404
    );

    for probe in ["/healthcheck", "/livez", "/readyz"] {
        assert_eq!(get(a, probe).await.unwrap().status, 200, "{probe}");
    }
    assert_eq!(send("GET", "/metrics", None, vec![]).await.status, 401);
    assert_eq!(
        send("GET", "/metrics", Some(api.clone()), vec![])
            .await
            .status,
        401
    );
    let m = send("GET", "/metrics", Some(metrics_bearer), vec![]).await;
    assert_eq!(m.status, 200);
    let m = m.body;
    for (series, n) in [
        ("enygma_auth_rejected_total{scope=\"api\",reason=\"missing\"}", 3.0),
        ("enygma_auth_rejected_total{scope=\"api\",reason=\"invalid\"}", 3.0),
        ("enygma_auth_rejected_total{scope=\"metrics\",reason=\"missing\"}", 1.0),
        ("enygma_auth_rejected_total{scope=\"metrics\",reason=\"invalid\"}", 1.0),
        (
            "enygma_http_requests_total{route=\"/generateProofTransfer-{k}\",k=\"none\",status=\"401\"}",
            4.0,
        ),
    ] {
        assert_eq!(metric(&m, series), Some(n), "{series}");
    }
    // The 401s are as the OpenAPI document describes them; the document itself is in the API
    // token scope.
    for (path, r) in [
        (prove, &missing),
        (prove, &wrong),
        ("/verifyProofTransfer-2", &verify_missing),
    ] {
        crate::openapi::tests::assert_conforms("POST", path, r.status, &r.headers, &r.body);
    }
    let doc_missing = send("GET", "/openapi.json", None, vec![]).await;
    assert_eq!(doc_missing.status, 401);
    crate::openapi::tests::assert_conforms(
        "GET",
        "/openapi.json",
        doc_missing.status,
        &doc_missing.headers,
        &doc_missing.body,
    );
    let doc = send("GET", "/openapi.json", Some(api.clone()), vec![]).await;
    assert_eq!(
        (doc.status, doc.body.as_str()),
        (200, crate::openapi::document_json())
    );
    // Refused requests never reached the checks or the prover.
    assert_eq!(s.proved_tags(), ["with-token"]);
    assert_eq!(s.log.prepared.load(Ordering::SeqCst), 1);
    // No token is echoed anywhere.
    for r in [
        &missing,
        &wrong,
        &basic,
        &cross,
        &ok,
        &verify_missing,
        &verify_ok,
    ] {
        for secret in [API_TOKEN, METRICS_TOKEN] {
            assert!(!r.body.contains(secret));
            assert!(r.headers.iter().all(|(_, v)| !v.contains(secret)));
        }
    }
    assert!(!m.contains(API_TOKEN) && !m.contains(METRICS_TOKEN));
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reads until the server closes the connection; returns what it sent and when it closed.
fn read_until_closed(mut rd: tokio::net::tcp::OwnedReadHalf) -> JoinHandle<(Vec<u8>, Instant)> {
    tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = tokio::time::timeout(T, rd.read_to_end(&mut buf)).await;
        (buf, Instant::now())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_are_cut_off_and_take_no_queue_place() {
    let timeout = Duration::from_millis(400);
    let limits = Limits {
        header_read_timeout: timeout,
        body_read_timeout: timeout,
        ..Limits::default()
    };
    let s = start_limited(cfg(Some(1), 4, 10_000), limits).await;
    let a = s.addr;
    // The slot is busy: a slow client that took a queue place would show in the queue depth.
    let busy = tokio::spawn(async move {
        post(a, "/generateProofTransfer-2", &body("busy", 2_500), T)
            .await
            .unwrap()
    });
    s.wait_metric("enygma_proofs_in_flight", 1.0).await;
    let prepared = s.log.prepared.load(Ordering::SeqCst);
    let t0 = Instant::now();

    // 1. Headers dribbled a line every 100 ms: closed at the header timeout, no answer.
    let (rd, mut dribbler) = TcpStream::connect(a).await.unwrap().into_split();
    let closed = read_until_closed(rd);
    dribbler
        .write_all(b"POST /generateProofTransfer-2 HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    for i in 0..30 {
        if closed.is_finished() {
            break;
        }
        let _ = dribbler
            .write_all(format!("X-Slow-{i}: y\r\n").as_bytes())
            .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (answer, at) = closed.await.unwrap();
    let after = at - t0;
    assert!(answer.is_empty(), "{:?}", String::from_utf8_lossy(&answer));
    assert!(
        after >= Duration::from_millis(300) && after < Duration::from_secs(2),
        "slow headers cut off after {after:?}"
    );

    // 2. A connection that sends nothing, and 3. an HTTP/2 connection with no request.
    let t1 = Instant::now();
    let (rd, _silent) = TcpStream::connect(a).await.unwrap().into_split();
    let silent = read_until_closed(rd);
    let (rd, mut h2c) = TcpStream::connect(a).await.unwrap().into_split();
    let h2_idle = read_until_closed(rd);
    // The HTTP/2 preface and an empty SETTINGS frame.
    h2c.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    for (what, task) in [("silent", silent), ("idle HTTP/2", h2_idle)] {
        let (_, at) = task.await.unwrap();
        let after = at - t1;
        assert!(
            after >= Duration::from_millis(300) && after < Duration::from_secs(3),
            "{what} connection closed after {after:?}"
        );
    }

    // 4. A body dribbled a byte every 100 ms: 408 at the body timeout, before admission.
    let (rd, mut slow_body) = TcpStream::connect(a).await.unwrap().into_split();
    let answered = read_until_closed(rd);
    let t2 = Instant::now();
    slow_body
        .write_all(b"POST /generateProofTransfer-2 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{")
        .await
        .unwrap();
    for _ in 0..30 {
        if answered.is_finished() {
            break;
        }
        let _ = slow_body.write_all(b" ").await;
        assert_eq!(
            metric(&s.metrics().await, "enygma_queue_depth{queue=\"prove\"}"),
            Some(0.0),
            "a slow client holds a queue place"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (answer, at) = answered.await.unwrap();
    let r = http::parse(&answer).unwrap();
    assert_eq!(r.status, 408, "{}", r.body);
    assert_eq!(r.error(), "request body not received within 0.4s");
    let after = at - t2;
    assert!(
        after >= Duration::from_millis(300) && after < Duration::from_secs(2),
        "slow body answered after {after:?}"
    );

    // 5. A request head over --max-header-bytes: 431.
    let big = "x".repeat(20 * 1024);
    let r = http::request(a, "GET", "/livez", &[("X-Big", &big)], b"", T)
        .await
        .unwrap();
    assert_eq!(r.status, 431);

    assert_eq!(busy.await.unwrap().status, 200);
    // None of them reached the checks or a queue place.
    assert_eq!(s.log.prepared.load(Ordering::SeqCst), prepared);
    assert_eq!(s.proved_tags(), ["busy"]);
    let m = s.metrics().await;
    assert_eq!(metric(&m, "enygma_connections_timed_out_total"), Some(3.0));
    assert_eq!(
        metric(&m, "enygma_http_requests_total{route=\"/generateProofTransfer-{k}\",k=\"2\",status=\"408\"}"),
        Some(1.0)
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_cap_holds_new_clients_until_one_closes() {
    let limits = Limits {
        max_connections: 2,
        ..Limits::default()
    };
    let s = start_limited(cfg(Some(1), 4, 5_000), limits).await;
    let first = TcpStream::connect(s.addr).await.unwrap();
    // The idle connection and the scrape's own on the admin listener are open (once the
    // readiness probes' connections have closed).
    s.wait_metric("enygma_connections_open", 2.0).await;
    let second = TcpStream::connect(s.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Both slots are held: a third client waits in the backlog, unanswered.
    let addr = s.addr;
    let third = tokio::spawn(async move { (get(addr, "/livez").await, Instant::now()) });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!third.is_finished(), "answered beyond the connection cap");
    let released = Instant::now();
    drop(first);
    let (r, at) = third.await.unwrap();
    assert_eq!(r.unwrap().status, 200);
    assert!(at - released < Duration::from_secs(2));
    drop(second);
    let m = s.metrics().await;
    assert!(metric(&m, "enygma_connections_accepted_total").unwrap() >= 4.0);
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_text_http2_with_prior_knowledge_is_served() {
    let s = start(cfg(Some(1), 4, 5_000)).await;
    let mut h2 = H2::plain(s.addr).await.unwrap();
    let r = h2
        .send("POST", "/generateProofWithdraw-4", &[], &body("h2c", 0))
        .await
        .unwrap();
    assert_eq!((r.status, r.version), (200, hyper::Version::HTTP_2));
    assert_eq!(s.stop().await, Exit::Clean);
}

/// The reference's own stress test sends 100 identical k=6 transfers at once. With the default
/// configuration (whose queue depth derives from the queue timeout and the expected service
/// time) every one is answered 200, a proof per CPU at a time at most, none shed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_concurrent_requests_against_the_default_configuration_are_all_answered() {
    let args = Args::try_parse_from(["enygma-server"]).unwrap();
    let adm = args.admission();
    assert!(adm.queue_depth >= 99, "{adm:?}");
    let slots = adm.max_inflight.expect("capped by default") as f64;
    let s = start_full(
        adm,
        Duration::ZERO,
        args.drain_timeout(),
        false,
        Transport {
            tls: None,
            limits: args.access.limits(),
        },
        Arc::new(Auth::default()),
    )
    .await;
    let bodies = (0..100).map(|i| body(&format!("s{i}"), 20)).collect();
    let results = burst(s.addr, "/generateProofTransfer-6", bodies).await;
    let statuses: Vec<u16> = results.iter().map(|(r, _)| r.status).collect();
    assert!(statuses.iter().all(|&st| st == 200), "{statuses:?}");
    assert_eq!(s.log.proofs.lock().unwrap().len(), 100);
    let m = s.metrics().await;
    assert_eq!(metric(&m, "enygma_proofs_in_flight_peak"), Some(slots));
    assert_eq!(metric(&m, "enygma_shed_total{queue=\"prove\"}"), Some(0.0));
    assert_eq!(
        metric(&m, "enygma_queue_timeouts_total{queue=\"prove\"}"),
        Some(0.0)
    );
    assert_eq!(s.stop().await, Exit::Clean);
}

/// The expected-wait rule: with one slot, a service time estimate of 500 ms and a queue timeout
/// of 5.25 s, positions 1..10 expect to wait 0.5..5.0 s and are queued; position 11 expects
/// 5.5 s and is shed at once with 503, instead of waiting 5.25 s for a 504.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_would_wait_past_the_queue_timeout_is_shed_at_once() {
    let mut c = cfg(Some(1), 100, 5_250);
    c.service_time = Duration::from_millis(500);
    let s = start(c).await;
    let bodies = (0..20).map(|i| body(&format!("w{i}"), 500)).collect();
    let results = burst(s.addr, "/generateProofTransfer-6", bodies).await;
    let ok = results.iter().filter(|(r, _)| r.status == 200).count();
    let shed: Vec<_> = results.iter().filter(|(r, _)| r.status == 503).collect();
    assert_eq!(ok, 11, "{results:?}");
    assert_eq!(shed.len(), 9, "{results:?}");
    for (r, latency) in &shed {
        assert!(*latency < Duration::from_secs(1), "shed after {latency:?}");
        let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=60).contains(&retry));
    }
    let m = s.metrics().await;
    assert_eq!(
        metric(&m, "enygma_queue_timeouts_total{queue=\"prove\"}"),
        Some(0.0)
    );
    assert_eq!(metric(&m, "enygma_shed_total{queue=\"prove\"}"), Some(9.0));
    // The estimate followed the observed proofs (500 ms each).
    let estimate = metric(&m, "enygma_service_time_estimate_seconds{queue=\"prove\"}").unwrap();
    assert!((0.49..0.7).contains(&estimate), "{estimate}");
    assert_eq!(s.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "current_thread")]
async fn callers_are_named_by_their_token_in_the_access_log_and_span_never_by_the_token() {
    let (log, _guard) = CapturedLog::start();
    let dir = temp_dir("named-tokens");
    let file = dir.join("tokens");
    const BANK_A: &str = "bank-a-token-0123456789abcdef";
    std::fs::write(&file, format!("bank-a {BANK_A}\n{API_TOKEN}\n")).unwrap();
    let auth = Arc::new(Auth {
        api: Some(TokenFile::load(&file, "--auth-token-file").unwrap()),
        metrics: None,
    });
    let s = start_full(
        cfg(Some(1), 4, 5_000),
        Duration::ZERO,
        Duration::from_secs(10),
        false,
        Transport::default(),
        auth,
    )
    .await;
    for (id, token, status) in [
        ("req-named", BANK_A, 200),
        ("req-bare", API_TOKEN, 200),
        ("req-wrong", "not-a-token-0123456789abcdef", 401),
    ] {
        let bearer = format!("Bearer {token}");
        let r = http::request(
            s.addr,
            "POST",
            "/generateProofTransfer-2",
            &[("Authorization", &bearer), ("X-Request-Id", id)],
            &body(id, 0),
            T,
        )
        .await
        .unwrap();
        assert_eq!(r.status, status, "{id}: {}", r.body);
    }
    let named = log.access_line("req-named");
    assert!(named.contains("caller=\"bank-a\""), "{named}");
    // The request's span carries it too (the fmt layer prints the span before the event).
    assert!(
        named.contains("request{request_id=req-named caller=\"bank-a\"}"),
        "{named}"
    );
    assert!(log.access_line("req-bare").contains("caller=\"anonymous\""));
    let wrong = log.access_line("req-wrong");
    assert!(
        wrong.contains("status=401") && !wrong.contains("caller="),
        "{wrong}"
    );
    let text = log.text();
    for token in [BANK_A, API_TOKEN, "not-a-token-0123456789abcdef"] {
        assert!(!text.contains(token), "a token reached the log");
    }
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "current_thread")]
async fn mtls_callers_are_named_by_their_certificate_and_unnamed_ones_refused() {
    let (log, _guard) = CapturedLog::start();
    let dir = temp_dir("mtls-names");
    let (server_ca, client_ca) = (Ca::new("server CA"), Ca::new("client CA"));
    let mut files = tls_files(&dir, &server_ca, Some(&client_ca));
    let names = dir.join("client-names");
    std::fs::write(&names, "bank-a dns:gw.bank-a.example\n").unwrap();
    files.client_names = Some(names);
    let s = start_tls(cfg(Some(1), 4, 5_000), Arc::new(Tls::load(files).unwrap())).await;

    let bank_a = client_ca.client("gw.bank-a.example");
    let mut conn = H1::tls(s.addr, client_config(&[&server_ca], Some(&bank_a), H1_ONLY))
        .await
        .unwrap();
    ready_over(&mut conn).await;
    let r = conn
        .send(
            "POST",
            "/generateProofTransfer-2",
            &[("X-Request-Id", "req-cert")],
            &body("cert", 0),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(log.access_line("req-cert").contains("caller=\"bank-a\""));

    // A certificate of the same CA that no rule names: refused at the handshake, and logged.
    let stranger = client_ca.client("gw.bank-z.example");
    assert!(
        refused(
            s.addr,
            client_config(&[&server_ca], Some(&stranger), H1_ONLY)
        )
        .await
    );
    let text = log.text();
    assert!(
        text.contains("client certificate refused at the TLS handshake")
            && text.contains("names no caller")
            && text.contains("gw.bank-z.example"),
        "{text}"
    );
    assert_eq!(s.proved_tags(), ["cert"]);
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
}
