//! Request-level refusals: a key repeated in a body (with the real request parser, the
//! sleeping prover of `test_support`), the request checks' bounded pool, and 429 for a caller
//! that keeps sending bad requests.

use rand::SeedableRng;

use super::*;
use crate::test_support::{self, SleepingBackend};

/// A sleeping server configured by `flags`, on 127.0.0.1.
async fn sleeping(flags: &[&str]) -> RunningServer {
    let args = test_support::args(flags).unwrap();
    let state = test_support::state::<SleepingBackend>(&args).unwrap();
    let backend = SleepingBackend::proving_for(Duration::ZERO);
    let server = RunningServer::start(state, move || Ok(backend), T, Transport::default()).await;
    let deadline = Instant::now() + T;
    while get(server.addr, "/readyz").await.map_or(0, |r| r.status) != 200 {
        assert!(Instant::now() < deadline, "server not ready in time");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server
}

/// A valid k = 2 transfer request as JSON text, and its secret key.
fn transfer_k2() -> (String, String) {
    let instance = enygma_prover::statements::by_stem("transfer-k2").unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
    let body = instance
        .generate(&Default::default(), &mut rng)
        .expect("a generated request");
    let secret = body["secret_key"].as_str().unwrap().to_owned();
    (body.to_string(), secret)
}

/// `json` (an object) with `"key": value` added at its end, after the key it already has.
fn with_repeated(json: &str, key: &str, value: &str) -> Vec<u8> {
    let open = json.strip_suffix('}').unwrap();
    format!("{open},\"{key}\":{value}}}").into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_key_is_refused_with_400_naming_it_on_prove_and_verify_routes() {
    let server = sleeping(&["--circuits", "transfer-k2"]).await;
    let a = server.addr;
    let (request, secret) = transfer_k2();
    let r = post(a, "/generateProofTransfer-2", request.as_bytes(), T)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "the request without a repeat: {}", r.body);

    // Repeated with the same value (what serde would have proved) and with another.
    for value in [format!("\"{secret}\""), "\"1\"".into()] {
        let body = with_repeated(&request, "secret_key", &value);
        let r = post(a, "/generateProofTransfer-2", &body, T).await.unwrap();
        assert_eq!(r.status, 400, "{}", r.body);
        assert!(
            r.error().starts_with("secret_key: duplicate key"),
            "{}",
            r.body
        );
        assert!(!r.body.contains(&secret), "the 400 quotes the secret");
    }

    // The verify route reads proof responses under the same rule.
    let proof =
        r#"{"pi_a":["1","2"],"pi_b":[["1","2"],["3","4"]],"pi_c":["1","2"],"public_signal":[]}"#;
    let r = post(a, "/verifyProofTransfer-2", proof.as_bytes(), T)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post(
        a,
        "/verifyProofTransfer-2",
        &with_repeated(proof, "pi_c", r#"["1","2"]"#),
        T,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().starts_with("pi_c: duplicate key"), "{}", r.body);
    assert_eq!(server.stop().await, Exit::Clean);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_checks_run_on_a_bounded_pool_whose_full_queue_answers_503() {
    let mut config = cfg(Some(1), 4, 20_000);
    config.check_threads = 1;
    config.check_queue_depth = 1;
    let s = start(config).await;
    let a = s.addr;
    // One slow check holds the pool's thread, another its queue place.
    let held: Vec<_> = (0..2)
        .map(|i| {
            let b = body_with(
                &format!("held{i}"),
                0,
                serde_json::json!({"check_ms": 1000}),
            );
            tokio::spawn(async move { post(a, "/generateProofTransfer-2", &b, T).await.unwrap() })
        })
        .collect();
    s.wait_metric("enygma_check_pending", 2.0).await;
    let r = post(a, "/generateProofTransfer-2", &body("refused", 0), T)
        .await
        .unwrap();
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.error().contains("request checks"), "{}", r.body);
    assert_no_secret(&r);
    for h in held {
        assert_eq!(h.await.unwrap().status, 200);
    }
    // The refused request was never checked; the pool's threads are its own.
    assert_eq!(s.log.prepared.load(Ordering::SeqCst), 2);
    let threads: Vec<String> = s
        .log
        .proofs
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.3.clone())
        .collect();
    assert_eq!(threads.len(), 2);
    let m = s.metrics().await;
    assert_eq!(metric(&m, "enygma_check_refused_total"), Some(1.0), "{m}");
    assert_eq!(metric(&m, "enygma_check_pending"), Some(0.0), "{m}");
    assert_eq!(s.stop().await, Exit::Clean);
}

/// A valid k = 2 transfer request (its own seed), and three false statements made from it: a
/// balance that does not open its commitment, a wrong nullifier, a payment of other values.
fn transfer_k2_valid_and_false(seed: u64) -> (Vec<u8>, [Vec<u8>; 3]) {
    let instance = enygma_prover::statements::by_stem("transfer-k2").unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let valid = instance
        .generate(&Default::default(), &mut rng)
        .expect("a generated request");
    let falsify = |field: &str, value: serde_json::Value| {
        let mut body = valid.clone();
        body[field] = value;
        serde_json::to_vec(&body).unwrap()
    };
    // Another last digit: another integer of the same length (so still below the modulus).
    let other = |v: &serde_json::Value| {
        let text = v.as_str().unwrap();
        let (head, last) = text.split_at(text.len() - 1);
        let digit = (last.parse::<u8>().unwrap() + 1) % 10;
        serde_json::Value::String(format!("{head}{digit}"))
    };
    let plus_one = |field: &str| other(&valid[field]);
    let mut values = valid["tx_values"].clone();
    values[0] = other(&values[0]);
    (
        serde_json::to_vec(&valid).unwrap(),
        [
            falsify(
                "previous_sender_balance",
                plus_one("previous_sender_balance"),
            ),
            falsify("nullifier", plus_one("nullifier")),
            falsify("tx_values", values),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn false_statements_never_cost_a_caller_its_valid_requests() {
    // Default flags: the gateway's users' false statements (422) and unknown routes (404) are
    // answers about their data; every valid request among them is proved.
    let server = sleeping(&["--circuits", "transfer-k2"]).await;
    let a = server.addr;
    let mut requests = Vec::new();
    for seed in 0..10u64 {
        let (valid, falsified) = transfer_k2_valid_and_false(seed);
        requests.push(("/generateProofTransfer-2", valid, 200));
        for (i, body) in (0..10).map(|i| (i, falsified[i % 3].clone())) {
            let path = if i == 9 {
                "/generateProofTransfer-7"
            } else {
                "/generateProofTransfer-2"
            };
            let status = if i == 9 { 400 } else { 422 };
            requests.push((path, body, status));
        }
    }
    // 10 valid, 90 false, 10 with a k no statement has: as fast as eight connections go.
    let mut statuses = Vec::new();
    for chunk in requests.chunks(8) {
        let sent: Vec<_> = chunk
            .iter()
            .map(|(path, body, _)| {
                let (path, body) = (*path, body.clone());
                tokio::spawn(async move { post(a, path, &body, T).await.unwrap() })
            })
            .collect();
        for (r, (_, _, expected)) in sent.into_iter().zip(chunk) {
            let r = r.await.unwrap();
            statuses.push((r.status, *expected, r.body));
        }
    }
    let proved = statuses.iter().filter(|(s, ..)| *s == 200).count();
    assert_eq!(proved, 10, "{statuses:?}");
    for (status, expected, body) in &statuses {
        assert_eq!(status, expected, "{body}");
    }
    // Nothing was limited, and a 404 for a route no statement has is no limit either.
    let r = post(a, "/nope", b"{}", T).await.unwrap();
    assert_eq!(r.status, 404);
    let m = get(a, "/metrics").await.unwrap().body;
    assert_eq!(
        metric(&m, "enygma_auth_failures_limited_total"),
        Some(0.0),
        "{m}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_keeps_sending_malformed_requests_is_closed_and_nothing_is_refused() {
    let mut config = cfg(Some(1), 4, 20_000);
    config.bad_request_burst = 3;
    config.bad_request_refill = Duration::from_secs(30);
    let s = start(config).await;
    let a = s.addr;
    let malformed = body_with("bad", 0, serde_json::json!({"fail": "bad"}));
    // One keep-alive connection: three malformed requests spend its allowance, and it is
    // closed after the answer to the fourth.
    let mut conn = access::tls_client::H1::plain(a).await.unwrap();
    for i in 0..4 {
        let r = conn
            .send("POST", "/generateProofTransfer-2", &[], &malformed)
            .await
            .unwrap();
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.header("connection").is_some_and(|v| v == "close"), i == 3);
    }
    assert!(
        conn.send("GET", "/livez", &[], b"").await.is_err(),
        "the connection stayed open"
    );
    // A new connection of the same client is served, valid requests first of all.
    let r = post(a, "/generateProofTransfer-2", &body("good", 0), T)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    for _ in 0..5 {
        let r = post(a, "/generateProofTransfer-2", &malformed, T)
            .await
            .unwrap();
        assert_eq!(r.status, 400, "{}", r.body);
    }
    let m = s.metrics().await;
    assert_eq!(
        metric(
            &m,
            "enygma_connections_closed_total{reason=\"malformed_requests\"}"
        ),
        Some(1.0),
        "{m}"
    );
    assert_eq!(s.stop().await, Exit::Clean);
}
