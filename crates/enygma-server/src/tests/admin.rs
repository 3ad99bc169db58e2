//! The admin listener (`--admin-bind`): probes and `/metrics` in plain HTTP without tokens,
//! beside an API listener that requires a client certificate and a bearer token; nothing else
//! on it; `/metrics` on the API listener closed when only API tokens are configured; both
//! listeners stop together after the drain.

use super::*;
use crate::auth::TokenFile;
use crate::tls::{Tls, TlsFiles};
use crate::transport::Limits;

use super::access::tls_client::{client_config, temp_dir, Ca, H1};

const H1_ONLY: &[&[u8]] = &[b"http/1.1"];
const API_TOKEN: &str = "gw-token-0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_listener_serves_probes_and_metrics_while_the_api_requires_mtls_and_a_token() {
    let dir = temp_dir("admin");
    let (server_ca, client_ca) = (Ca::new("server CA"), Ca::new("client CA"));
    let (cert, key) = server_ca.server().write(&dir, "server");
    let client_ca_file = dir.join("client-ca.crt");
    std::fs::write(&client_ca_file, client_ca.pem()).unwrap();
    let tls = Tls::load(TlsFiles {
        cert,
        key,
        client_ca: Some(client_ca_file),
        client_names: None,
        client_crl: None,
    })
    .unwrap();
    let tokens = dir.join("api-tokens");
    std::fs::write(&tokens, format!("bank-a {API_TOKEN}\n")).unwrap();
    // API tokens, and no metrics tokens.
    let auth = Arc::new(Auth {
        api: Some(TokenFile::load(&tokens, "--auth-token-file").unwrap()),
        metrics: None,
    });
    let log = Arc::new(FakeLog::default());
    let fake = Fake(log.clone());
    let state = Arc::new(
        AppState::<Fake>::new(
            &cfg(Some(1), 4, 5_000),
            64 * 1024,
            enygma_prover::statements::instances().collect(),
        )
        .unwrap()
        .with_auth(auth),
    );
    let server = RunningServer::start_with_admin(
        state,
        move || Ok(fake),
        Duration::from_secs(10),
        Transport {
            tls: Some(Arc::new(tls)),
            limits: Limits::default(),
        },
    )
    .await;
    let (api, admin) = (server.addr, server.admin.unwrap());
    assert!(admin.ip().is_loopback() && admin != api);
    let s = TestServer {
        addr: api,
        log,
        server,
    };

    // The admin listener: plain HTTP, no token, the API listener's bodies.
    let deadline = Instant::now() + T;
    while get(admin, "/readyz").await.unwrap().status != 200 {
        assert!(Instant::now() < deadline, "not ready in time");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let readyz = get(admin, "/readyz").await.unwrap();
    // The fake backend has no key files, so no keys to list.
    assert_eq!(readyz.body, r#"{"keys":{},"status":"ready"}"#);
    let livez = get(admin, "/livez").await.unwrap();
    assert_eq!(
        (livez.status, livez.body.as_str()),
        (200, r#"{"status":"ok"}"#)
    );
    let m = get(admin, "/metrics").await.unwrap();
    assert_eq!(m.status, 200);
    assert_eq!(metric(&m.body, "enygma_ready"), Some(1.0), "{}", m.body);

    // Nothing else is served there: no proof, no verification, no document, not even with
    // the API's token.
    let bearer = format!("Bearer {API_TOKEN}");
    for (method, path) in [
        ("POST", "/generateProofTransfer-2"),
        ("POST", "/verifyProofTransfer-2"),
        ("GET", "/openapi.json"),
        ("GET", "/healthcheck"),
    ] {
        let r = http::request(
            admin,
            method,
            path,
            &[("Authorization", &bearer)],
            &body("on-admin", 0),
            T,
        )
        .await
        .unwrap();
        assert_eq!(r.status, 404, "{method} {path}: {}", r.body);
    }
    assert_eq!(s.log.prepared.load(Ordering::SeqCst), 0);
    assert!(s.log.verified.lock().unwrap().is_empty());

    // The API listener: TLS with a client certificate, then a token.
    assert!(
        get(api, "/livez").await.is_err(),
        "plain HTTP on the API port"
    );
    let gateway = client_ca.client("gateway");
    let refused = match H1::tls(api, client_config(&[&server_ca], None, H1_ONLY)).await {
        Err(_) => true,
        Ok(mut c) => c.send("GET", "/livez", &[], b"").await.is_err(),
    };
    assert!(refused, "a client without a certificate got an answer");
    let config = client_config(&[&server_ca], Some(&gateway), H1_ONLY);
    let mut conn = H1::tls(api, config.clone()).await.unwrap();
    let no_token = conn
        .send(
            "POST",
            "/generateProofTransfer-2",
            &[],
            &body("no-token", 0),
        )
        .await
        .unwrap();
    assert_eq!(no_token.status, 401);
    let mut conn = H1::tls(api, config.clone()).await.unwrap();
    let r = conn
        .send(
            "POST",
            "/generateProofTransfer-2",
            &[("Authorization", &bearer)],
            &body("with-token", 0),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);

    // /metrics on the API listener: closed to every caller, the API's token included, and the
    // answer points to the admin listener. The probes stay open there.
    let closed = conn
        .send("GET", "/metrics", &[("Authorization", &bearer)], b"")
        .await
        .unwrap();
    assert_eq!(closed.status, 401);
    assert!(closed.error().contains("admin listener"), "{}", closed.body);
    assert!(closed.header("www-authenticate").is_some());
    let mut conn = H1::tls(api, config.clone()).await.unwrap();
    assert_eq!(
        conn.send("GET", "/metrics", &[], b"").await.unwrap().status,
        401
    );
    let mut conn = H1::tls(api, config.clone()).await.unwrap();
    for probe in ["/healthcheck", "/livez", "/readyz"] {
        assert_eq!(
            conn.send("GET", probe, &[], b"").await.unwrap().status,
            200,
            "{probe}"
        );
    }
    let m = get(admin, "/metrics").await.unwrap().body;
    for (series, n) in [
        (
            "enygma_auth_rejected_total{scope=\"metrics\",reason=\"invalid\"}",
            1.0,
        ),
        (
            "enygma_auth_rejected_total{scope=\"metrics\",reason=\"missing\"}",
            1.0,
        ),
        (
            "enygma_auth_rejected_total{scope=\"api\",reason=\"missing\"}",
            1.0,
        ),
    ] {
        assert_eq!(metric(&m, series), Some(n), "{series}");
    }
    assert!(!m.contains(API_TOKEN));
    assert_eq!(s.proved_tags(), ["with-token"]);

    // Shutdown: while a proof drains, the admin listener answers /readyz 503 `draining`;
    // then both listeners close.
    let slow = {
        let mut conn = H1::tls(api, config.clone()).await.unwrap();
        let bearer = bearer.clone();
        tokio::spawn(async move {
            conn.send(
                "POST",
                "/generateProofTransfer-2",
                &[("Authorization", &bearer)],
                &body("draining", 600),
            )
            .await
            .unwrap()
        })
    };
    let deadline = Instant::now() + T;
    while metric(
        &get(admin, "/metrics").await.unwrap().body,
        "enygma_proofs_in_flight",
    ) != Some(1.0)
    {
        assert!(Instant::now() < deadline, "the slow proof never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopping = tokio::spawn(s.stop());
    let deadline = Instant::now() + T;
    loop {
        let r = get(admin, "/readyz").await.unwrap();
        if r.status == 503 {
            assert_eq!(r.body, r#"{"status":"draining"}"#);
            break;
        }
        assert!(Instant::now() < deadline, "admin /readyz never turned 503");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(slow.await.unwrap().status, 200);
    assert_eq!(stopping.await.unwrap(), Exit::Clean);
    assert!(tokio::net::TcpStream::connect(admin).await.is_err());
    assert!(tokio::net::TcpStream::connect(api).await.is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
