//! Fair shares against the FIFO on one slot: caller A floods the queue, caller B sends one
//! request at a time. The assertions are on the order of the proofs (how many of A's ran before
//! each of B's), never on wall time, so a busy machine cannot make them flaky.

use super::*;
use crate::admission::FairConfig;
use crate::auth::TokenFile;

const BANK_A: &str = "bank-a-token-0123456789abcdef";
const BANK_B: &str = "bank-b-token-0123456789abcdef";
/// A's requests queued at once, B's sent one after the other.
const FLOOD: usize = 10;
const B_REQUESTS: usize = 3;
/// A's proofs are long next to B's round trip between two requests, so that A's proofs that
/// run in those gaps stay few even on a busy machine.
const A_MS: u64 = 100;

/// The proof order (tags) of the flood and of B's requests under `fair` (or the FIFO).
async fn proof_order(fair: Option<FairConfig>) -> Vec<String> {
    let dir = tls_free_temp_dir(if fair.is_some() { "fair" } else { "fifo" });
    let file = dir.join("tokens");
    std::fs::write(&file, format!("bank-a {BANK_A}\nbank-b {BANK_B}\n")).unwrap();
    let tokens = TokenFile::load(&file, "--auth-token-file").unwrap();
    let mut config = cfg(Some(1), 2 * FLOOD, 20_000);
    config.fair = fair.map(|mut f| {
        f.callers = tokens.callers();
        f
    });
    let auth = Arc::new(Auth {
        api: Some(tokens),
        metrics: None,
    });
    let s = start_full(
        config,
        Duration::ZERO,
        Duration::from_secs(10),
        false,
        Transport::default(),
        auth,
    )
    .await;
    s.wait_ready().await;
    let addr = s.addr;
    let send = move |token: &'static str, tag: String, ms: u64| async move {
        let bearer = format!("Bearer {token}");
        http::request(
            addr,
            "POST",
            "/generateProofTransfer-2",
            &[("Authorization", &bearer)],
            &body(&tag, ms),
            T,
        )
        .await
        .unwrap()
    };
    // The flood: one in flight, the rest queued.
    let flood: Vec<_> = (0..FLOOD)
        .map(|i| tokio::spawn(send(BANK_A, format!("a{i}"), A_MS)))
        .collect();
    s.wait_metric("enygma_queue_depth{queue=\"prove\"}", (FLOOD - 1) as f64)
        .await;
    for i in 0..B_REQUESTS {
        let r = send(BANK_B, format!("b{i}"), 1).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    for a in flood {
        assert_eq!(a.await.unwrap().status, 200);
    }
    let order = s.proved_tags();
    assert_eq!(s.stop().await, Exit::Clean);
    let _ = std::fs::remove_dir_all(&dir);
    order
}

fn tls_free_temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("enygma-shares-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// How many of A's proofs ran before each of B's.
fn a_before_each_b(order: &[String]) -> Vec<usize> {
    let mut a = 0;
    let mut before = Vec::new();
    for tag in order {
        if tag.starts_with('a') {
            a += 1;
        } else {
            before.push(a);
        }
    }
    before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_caller_does_not_starve_one_at_a_time_under_fair_shares_as_it_does_under_fifo() {
    // Fair shares, equal weights: each of B's requests waits for at most the proof in flight
    // when it arrives and one turn of A, so B's k-th (0-based) comes after at most 2(k + 1) of
    // A's, plus one that may start while B's first request is on its way.
    let fair = proof_order(Some(FairConfig::equal(2 * FLOOD, 1))).await;
    let before = a_before_each_b(&fair);
    assert_eq!(before.len(), B_REQUESTS, "{fair:?}");
    for (k, &a) in before.iter().enumerate() {
        assert!(
            a <= 2 * k + 3,
            "B's request {k} waited for {a} of A's proofs: {fair:?}"
        );
    }
    // Work-conserving: A's flood was proved in full, the rest of the slot's time.
    assert_eq!(fair.len(), FLOOD + B_REQUESTS);

    // The FIFO: B's first request waits behind the whole flood.
    let fifo = proof_order(None).await;
    let before = a_before_each_b(&fifo);
    assert_eq!(before[0], FLOOD, "{fifo:?}");
}
