//! End-to-end: requests to proofs that verify, with the repository's development keys.

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use enygma_circuit::transfer::TransferInputs;
use enygma_prover::{keys, prepare, request, KeyError, ProveError, TransferProver, SUPPORTED_K};
use rand::SeedableRng;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn prover() -> &'static TransferProver {
    static P: OnceLock<TransferProver> = OnceLock::new();
    P.get_or_init(|| TransferProver::load_or_create(&repo().join("keys")).expect("keys load"))
}

fn sample(name: &str) -> Vec<u8> {
    std::fs::read(repo().join("../shared/reference/requests").join(name)).expect("reference samples are beside the repo")
}

fn prove_and_verify(k: usize, body: &[u8]) -> enygma_prover::ProofResponse {
    let prepared = prepare(k, body).unwrap_or_else(|e| panic!("k={k}: {e}"));
    let (response, _) = prover().prove(&prepared).unwrap();
    assert!(prover().verify(k, &response).unwrap(), "k={k}: proof must verify");
    response
}

#[test]
fn reference_samples_prove_and_verify_and_echo_their_public_inputs() {
    for (k, name) in [(6, "transfer-k6.json"), (2, "transfer-k2.json")] {
        let body = sample(name);
        let response = prove_and_verify(k, &body);
        let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let s = |v: &serde_json::Value| v.as_str().unwrap().to_string();
        assert_eq!(response.public_signal[0], s(&req["hashed_shared_secrets"][0]));
        assert_eq!(response.public_signal[4 * k + 1], s(&req["tx_commits"][0][1]));
        assert_eq!(response.public_signal[6 * k], s(&req["nullifier"]));
        assert_eq!(response.public_signal[8 * k + 1], s(&req["message_tags"][k - 1]));

        // Any changed public signal fails verification.
        for i in [0, 3 * k, 8 * k + 1] {
            let mut tampered = response.clone();
            let v: num_bigint::BigUint = tampered.public_signal[i].parse().unwrap();
            tampered.public_signal[i] = (v + 1u32).to_string();
            assert!(!prover().verify(k, &tampered).unwrap(), "k={k}: tampered input {i} must not verify");
        }
    }
}

#[test]
fn generated_requests_of_every_k_and_several_senders_prove() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(42);
    for k in SUPPORTED_K {
        for sender in [0, k / 2, k - 1] {
            let inputs = TransferInputs::generate(k, sender, 7 + sender as u64, 1_000, &mut rng);
            let body = request::to_request_json(&inputs).to_string();
            let prepared = prepare(k, body.as_bytes()).unwrap();
            assert_eq!(prepared.sender_index, sender);
            prove_and_verify(k, body.as_bytes());
        }
    }
}

#[test]
fn bad_samples_and_wrong_k_are_refused_with_the_reason_named() {
    let msg = |k: usize, name: &str| match prepare(k, &sample(name)) {
        Err(e) => e,
        Ok(_) => panic!("{name} must be refused"),
    };
    let e = msg(6, "bad-transfer-k6.json");
    assert!(matches!(e, ProveError::BadRequest(_)));
    assert_eq!(e.to_string(), "hashed_shared_secrets[0]: not below the field modulus r");
    let e = msg(2, "bad-transfer-k2.json");
    assert!(matches!(e, ProveError::CheckFailed(_)));
    assert_eq!(e.to_string(), "check 2 (sender tx value) failed");
    // A k6 body on the k2 route: the arrays have the wrong length.
    assert_eq!(msg(2, "transfer-k6.json").to_string(), "anonymity_set: expected 2 elements, got 6");
    assert_eq!(msg(7, "transfer-k6.json").to_string(), "k value not supported: must be between 2 and 6");
}

#[test]
fn committed_verifying_keys_regenerate_from_the_seed() {
    for k in SUPPORTED_K {
        let committed = keys::load_verifying_key(&keys::KeyPaths::new(&repo().join("keys"), k).verifying).unwrap();
        assert!(keys::generate(k).unwrap().vk == committed, "k={k}: committed verifying key differs from the seed's");
    }
}

#[test]
fn keys_of_another_circuit_stop_the_load() {
    let dir = std::env::temp_dir().join(format!("enygma-mismatch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = keys::KeyPaths::new(&repo().join("keys"), 2);
    let dst = keys::KeyPaths::new(&dir, 3);
    prover(); // the k=2 keys exist once the shared prover has loaded
    for (a, b) in [(&src.proving, &dst.proving), (&src.proving_digest, &dst.proving_digest), (&src.verifying, &dst.verifying)] {
        std::fs::copy(a, b).unwrap();
    }
    let err = enygma_prover::CircuitKeys::load_or_create(&dir, 3).err().expect("k=2 keys must not load as k=3");
    assert!(matches!(err, KeyError::Mismatch { k: 3, .. }), "{err}");
    assert!(err.to_string().contains("do not match the transfer circuit"));
    std::fs::remove_dir_all(&dir).unwrap();
}
