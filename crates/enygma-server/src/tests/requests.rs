//! Request-level refusals with the real request parser (the sleeping prover of
//! `test_support`): a key repeated in a body.

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
