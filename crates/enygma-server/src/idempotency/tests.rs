use std::sync::Arc;
use std::time::Duration;

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use enygma_formats::prometheus::value as metric;
use enygma_prover::statements::{self, Instance};

use super::*;
use crate::metrics::Metrics;
use crate::request::JSON;

fn transfer6() -> Instance {
    statements::instance("transfer", Some(6)).unwrap()
}

fn new_store(config: IdempotencyConfig) -> (Arc<IdempotencyStore>, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::for_instances(&[transfer6()]));
    (IdempotencyStore::new(config, metrics.clone()), metrics)
}

fn page(metrics: &Metrics) -> String {
    metrics.render(true, false, Default::default(), Default::default(), 0)
}

fn proof(body: &str) -> Response {
    (StatusCode::OK, [(CONTENT_TYPE, JSON)], body.to_owned()).into_response()
}

async fn body_of(resp: Response) -> (StatusCode, Option<String>, Option<String>, String) {
    let status = resp.status();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (ct, replayed) = (header("content-type"), header("idempotent-replayed"));
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        ct,
        replayed,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

fn lead(claim: Result<Claim, ApiError>) -> Lead {
    match claim {
        Ok(Claim::Lead(lead)) => lead,
        Ok(Claim::Wait(_)) => panic!("waits, expected to lead"),
        Ok(Claim::Replay(_)) => panic!("replays, expected to lead"),
        Err(e) => panic!("refused ({e:?}), expected to lead"),
    }
}

fn wait(claim: Result<Claim, ApiError>) -> Wait {
    match claim {
        Ok(Claim::Wait(wait)) => wait,
        _ => panic!("expected to wait"),
    }
}

fn replay(claim: Result<Claim, ApiError>) -> Arc<KeptAnswer> {
    match claim {
        Ok(Claim::Replay(answer)) => answer,
        _ => panic!("expected a replay"),
    }
}

async fn conflict(claim: Result<Claim, ApiError>) {
    let Err(e) = claim else {
        panic!("expected a conflict")
    };
    let (status, ct, _, body) = body_of(e.into_response()).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(ct.as_deref(), Some(JSON));
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("Idempotency-Key"),
        "{body}"
    );
}

#[tokio::test]
async fn a_second_request_waits_for_the_first_and_a_later_one_gets_the_answer_again() {
    let (store, metrics) = new_store(IdempotencyConfig::default());
    let caller = Caller::anonymous();
    let digest = digest_of(b"{\"a\":1}");
    let first = lead(store.claim(&caller, transfer6(), "k1", digest));
    let second = wait(store.claim(&caller, transfer6(), "k1", digest));
    let waiting = tokio::spawn(second.answer());
    // The first request's client gets its response as it was, unmarked.
    let resp = first.finish(proof("{\"pi_a\":1}")).await;
    assert_eq!(
        body_of(resp).await,
        (
            StatusCode::OK,
            Some(JSON.to_owned()),
            None,
            "{\"pi_a\":1}".to_owned()
        )
    );
    let waited = waiting.await.unwrap().expect("the first request's answer");
    let again = replay(store.claim(&caller, transfer6(), "k1", digest));
    for answer in [waited, again] {
        assert_eq!(
            body_of(answer.replay()).await,
            (
                StatusCode::OK,
                Some(JSON.to_owned()),
                Some("true".to_owned()),
                "{\"pi_a\":1}".to_owned()
            )
        );
    }
    let text = page(&metrics);
    assert_eq!(metric(&text, "enygma_idempotency_waits_total"), Some(1.0));
    assert_eq!(metric(&text, "enygma_idempotency_replays_total"), Some(1.0));
    assert_eq!(metric(&text, "enygma_idempotency_entries"), Some(1.0));
    let entry = (ENTRY_OVERHEAD + 2 + 10 + ("content-type".len() + JSON.len()) as u64) as f64;
    assert_eq!(metric(&text, "enygma_idempotency_bytes"), Some(entry));
    assert_eq!(
        metric(&text, "enygma_idempotency_memory_budget_bytes"),
        Some(DEFAULT_MEMORY as f64)
    );
}

#[tokio::test]
async fn a_proof_is_given_again_with_the_key_it_was_made_with() {
    let (store, metrics) = new_store(IdempotencyConfig::default());
    let caller = Caller::anonymous();
    let digest = digest_of(b"x");
    let mut resp = proof("{}");
    let key_sha256 = "ab".repeat(32);
    resp.headers_mut().insert(
        "enygma-key-sha256",
        HeaderValue::from_str(&key_sha256).unwrap(),
    );
    resp.headers_mut()
        .insert("x-not-kept", HeaderValue::from_static("1"));
    let _ = lead(store.claim(&caller, transfer6(), "k", digest))
        .finish(resp)
        .await;
    let again = replay(store.claim(&caller, transfer6(), "k", digest)).replay();
    assert_eq!(
        again.headers().get("enygma-key-sha256").unwrap(),
        key_sha256.as_str()
    );
    assert!(again.headers().get("x-not-kept").is_none());
    // The key, the body, and the two kept headers' names and values.
    let entry = ENTRY_OVERHEAD
        + (1 + 2 + "content-type".len() + JSON.len() + "enygma-key-sha256".len() + 64) as u64;
    assert_eq!(
        metric(&page(&metrics), "enygma_idempotency_bytes"),
        Some(entry as f64)
    );
}

#[tokio::test]
async fn the_same_key_with_another_body_is_refused_in_flight_and_after() {
    let (store, metrics) = new_store(IdempotencyConfig::default());
    let caller = Caller::anonymous();
    let (one, other) = (digest_of(b"one"), digest_of(b"other"));
    let first = lead(store.claim(&caller, transfer6(), "k", one));
    conflict(store.claim(&caller, transfer6(), "k", other)).await;
    let _ = first.finish(proof("{}")).await;
    conflict(store.claim(&caller, transfer6(), "k", other)).await;
    replay(store.claim(&caller, transfer6(), "k", one));
    assert_eq!(
        metric(&page(&metrics), "enygma_idempotency_conflicts_total"),
        Some(2.0)
    );
}

#[tokio::test]
async fn keys_are_per_caller_and_per_instance() {
    let (store, _) = new_store(IdempotencyConfig::default());
    let bank = crate::caller::check_name("bank-a").unwrap();
    let deposit2 = statements::instance("deposit", Some(2)).unwrap();
    let _first = lead(store.claim(&Caller::anonymous(), transfer6(), "k", digest_of(b"1")));
    // Another caller's or another route's key of the same spelling is another key.
    let _bank = lead(store.claim(&bank, transfer6(), "k", digest_of(b"2")));
    let _deposit = lead(store.claim(&Caller::anonymous(), deposit2, "k", digest_of(b"3")));
}

#[tokio::test]
async fn refusals_for_load_and_failures_are_not_kept_and_waiters_go_on_by_themselves() {
    let (store, metrics) = new_store(IdempotencyConfig::default());
    let caller = Caller::anonymous();
    let digest = digest_of(b"x");
    for status in [
        StatusCode::SERVICE_UNAVAILABLE,
        StatusCode::GATEWAY_TIMEOUT,
        StatusCode::TOO_MANY_REQUESTS,
        StatusCode::INTERNAL_SERVER_ERROR,
    ] {
        let first = lead(store.claim(&caller, transfer6(), "k", digest));
        let waiter = wait(store.claim(&caller, transfer6(), "k", digest));
        let resp = first
            .finish(crate::request::ApiError::new(status, "busy").into_response())
            .await;
        // The first request's own client still gets its answer.
        assert_eq!(resp.status(), status);
        assert!(waiter.answer().await.is_none(), "{status} was kept");
        // The next request with the key proves again.
        drop(lead(store.claim(&caller, transfer6(), "k", digest)));
    }
    // A deterministic answer about the request is kept.
    for status in [StatusCode::BAD_REQUEST, StatusCode::UNPROCESSABLE_ENTITY] {
        let key = status.as_str();
        let first = lead(store.claim(&caller, transfer6(), key, digest));
        let resp = ApiError::new(status, "check `x` fails").into_response();
        let _ = first.finish(resp).await;
        let (got, _, replayed, body) =
            body_of(replay(store.claim(&caller, transfer6(), key, digest)).replay()).await;
        assert_eq!(
            (got, replayed.as_deref(), body.as_str()),
            (status, Some("true"), r#"{"error":"check `x` fails"}"#)
        );
    }
    assert_eq!(
        metric(&page(&metrics), "enygma_idempotency_entries"),
        Some(2.0)
    );
}

#[tokio::test]
async fn a_first_request_cancelled_lets_its_waiters_go_on() {
    let (store, metrics) = new_store(IdempotencyConfig::default());
    let caller = Caller::anonymous();
    let digest = digest_of(b"x");
    let first = lead(store.claim(&caller, transfer6(), "k", digest));
    let waiter = wait(store.claim(&caller, transfer6(), "k", digest));
    drop(first);
    assert!(waiter.answer().await.is_none());
    let text = page(&metrics);
    assert_eq!(metric(&text, "enygma_idempotency_entries"), Some(0.0));
    assert_eq!(metric(&text, "enygma_idempotency_bytes"), Some(0.0));
    drop(lead(store.claim(&caller, transfer6(), "k", digest)));
}

#[tokio::test]
async fn answers_expire_after_the_ttl() {
    let caller = Caller::anonymous();
    let digest = digest_of(b"x");
    // Kept for the TTL ...
    let (store, _) = new_store(IdempotencyConfig {
        ttl: Duration::from_secs(3600),
        memory: DEFAULT_MEMORY,
    });
    let _ = lead(store.claim(&caller, transfer6(), "k", digest))
        .finish(proof("{}"))
        .await;
    store.expire_now();
    replay(store.claim(&caller, transfer6(), "k", digest));
    // ... and not past it: expired at a scrape, and at the next use of the store.
    let (store, metrics) = store_with_ttl_zero();
    for key in ["k1", "k2"] {
        let _ = lead(store.claim(&caller, transfer6(), key, digest))
            .finish(proof("{}"))
            .await;
    }
    store.expire_now();
    let text = page(&metrics);
    assert_eq!(metric(&text, "enygma_idempotency_entries"), Some(0.0));
    assert_eq!(metric(&text, "enygma_idempotency_bytes"), Some(0.0));
    assert_eq!(
        metric(
            &text,
            "enygma_idempotency_evictions_total{reason=\"expired\"}"
        ),
        Some(2.0)
    );
    let _ = lead(store.claim(&caller, transfer6(), "k1", digest))
        .finish(proof("{}"))
        .await;
    drop(lead(store.claim(&caller, transfer6(), "k1", digest)));
}

fn store_with_ttl_zero() -> (Arc<IdempotencyStore>, Arc<Metrics>) {
    new_store(IdempotencyConfig {
        ttl: Duration::ZERO,
        memory: DEFAULT_MEMORY,
    })
}

#[tokio::test]
async fn the_oldest_answers_go_first_when_the_memory_is_spent() {
    let body = "x".repeat(1000);
    let entry = ENTRY_OVERHEAD + 2 + 1000 + ("content-type".len() + JSON.len()) as u64;
    // Room for two answers, not three.
    let (store, metrics) = new_store(IdempotencyConfig {
        ttl: DEFAULT_TTL,
        memory: 2 * entry + entry / 2,
    });
    let caller = Caller::anonymous();
    let digest = digest_of(b"x");
    for key in ["k1", "k2", "k3"] {
        let _ = lead(store.claim(&caller, transfer6(), key, digest))
            .finish(proof(&body))
            .await;
    }
    let text = page(&metrics);
    assert_eq!(
        metric(
            &text,
            "enygma_idempotency_evictions_total{reason=\"memory\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        metric(&text, "enygma_idempotency_bytes"),
        Some((2 * entry) as f64)
    );
    replay(store.claim(&caller, transfer6(), "k2", digest));
    replay(store.claim(&caller, transfer6(), "k3", digest));
    // The oldest was dropped: its key proves again.
    drop(lead(store.claim(&caller, transfer6(), "k1", digest)));

    // An answer larger than the whole budget is given to its request and not kept.
    let (store, metrics) = new_store(IdempotencyConfig {
        ttl: DEFAULT_TTL,
        memory: 1000,
    });
    let first = lead(store.claim(&caller, transfer6(), "k", digest));
    let waiter = wait(store.claim(&caller, transfer6(), "k", digest));
    let resp = first.finish(proof(&body)).await;
    assert_eq!(body_of(resp).await.3, body);
    assert_eq!(waiter.answer().await.map(|a| a.body.len()), Some(1000));
    let text = page(&metrics);
    assert_eq!(metric(&text, "enygma_idempotency_entries"), Some(0.0));
    assert_eq!(
        metric(
            &text,
            "enygma_idempotency_evictions_total{reason=\"memory\"}"
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn the_header_is_one_to_255_visible_ascii_characters_once() {
    let headers = |values: &[&[u8]]| {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(&IDEMPOTENCY_KEY, HeaderValue::from_bytes(v).unwrap());
        }
        h
    };
    assert_eq!(key_of(&HeaderMap::new()).unwrap(), None);
    let uuid = b"8e03978e-40d5-43e8-bc93-6894a57f9324";
    assert_eq!(
        key_of(&headers(&[uuid])).unwrap().as_deref(),
        Some("8e03978e-40d5-43e8-bc93-6894a57f9324")
    );
    let longest = vec![b'a'; MAX_KEY_LEN];
    assert_eq!(key_of(&headers(&[&longest])).unwrap().unwrap().len(), 255);
    let too_long = vec![b'a'; MAX_KEY_LEN + 1];
    for bad in [
        headers(&[b""]),
        headers(&[&too_long]),
        headers(&[b"two words"]),
        headers(&[b"tab\there"]),
        headers(&["caf\u{e9}".as_bytes()]),
        headers(&[b"a", b"b"]),
    ] {
        let e = key_of(&bad).unwrap_err().into_response();
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        let (_, _, _, body) = body_of(e).await;
        assert!(body.contains("Idempotency-Key"), "{body}");
    }
}
