//! End-to-end: requests to proofs that verify, with the repository's development keys.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
};

use enygma_circuit::{
    payment::{Kind, PaymentInputs},
    Fr,
};
use enygma_prover::{
    keys, prepare, request::to_decimal, statements, statements::payment::request, Instance,
    KeyError, ProveError, Prover,
};
use rand::SeedableRng;

/// The registry's instance of a payment statement.
fn instance(kind: Kind, k: usize) -> Instance {
    let name = match kind {
        Kind::Transfer => "transfer",
        Kind::Deposit => "deposit",
        Kind::Withdraw => "withdraw",
    };
    statements::instance(name, Some(k)).unwrap()
}

/// The sender index the checks found.
fn sender_of(kind: Kind, k: usize, body: &[u8]) -> usize {
    prepare(instance(kind, k), body)
        .unwrap()
        .inputs::<PaymentInputs>()
        .expect("payment inputs")
        .check()
        .unwrap()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn prover() -> &'static Prover {
    static P: OnceLock<Prover> = OnceLock::new();
    P.get_or_init(|| Prover::load_or_create(&repo().join("keys")).expect("keys load"))
}

/// A reference sample: `$ENYGMA_REFERENCE_DIR/requests`, else `shared/reference` beside the
/// repository.
fn sample(name: &str) -> Vec<u8> {
    let dir = std::env::var_os("ENYGMA_REFERENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared/reference"));
    std::fs::read(dir.join("requests").join(name))
        .expect("reference samples: set ENYGMA_REFERENCE_DIR or put shared/ beside the repo")
}

fn prove_and_verify(kind: Kind, k: usize, body: &[u8]) -> enygma_prover::ProofResponse {
    let instance = instance(kind, k);
    let prepared = prepare(instance, body).unwrap_or_else(|e| panic!("{instance}: {e}"));
    let (response, _) = prover().prove(&prepared).unwrap();
    assert!(
        prover().verify(instance, &response).unwrap(),
        "{instance}: proof must verify"
    );
    response
}

#[test]
fn reference_samples_prove_and_verify_and_echo_their_public_inputs() {
    for (k, name) in [(6, "transfer-k6.json"), (2, "transfer-k2.json")] {
        let body = sample(name);
        let response = prove_and_verify(Kind::Transfer, k, &body);
        let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let s = |v: &serde_json::Value| v.as_str().unwrap().to_string();
        assert_eq!(
            response.public_signal[0],
            s(&req["hashed_shared_secrets"][0])
        );
        assert_eq!(
            response.public_signal[4 * k + 1],
            s(&req["tx_commits"][0][1])
        );
        assert_eq!(response.public_signal[6 * k], s(&req["nullifier"]));
        assert_eq!(
            response.public_signal[8 * k + 1],
            s(&req["message_tags"][k - 1])
        );

        // Any changed public signal fails verification.
        for i in [0, 3 * k, 8 * k + 1] {
            let mut tampered = response.clone();
            let v: num_bigint::BigUint = tampered.public_signal[i].parse().unwrap();
            tampered.public_signal[i] = (v + 1u32).to_string();
            assert!(
                !prover()
                    .verify(instance(Kind::Transfer, k), &tampered)
                    .unwrap(),
                "k={k}: tampered input {i} must not verify"
            );
        }
    }
}

#[test]
fn generated_transfers_of_every_k_and_several_senders_prove() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(42);
    for k in 2..=6 {
        for sender in [0, k / 2, k - 1] {
            let inputs = PaymentInputs::generate(
                Kind::Transfer,
                k,
                sender,
                7 + sender as u64,
                1_000,
                &mut rng,
            );
            let body = request::to_request_json(&inputs).to_string();
            assert_eq!(sender_of(Kind::Transfer, k, body.as_bytes()), sender);
            prove_and_verify(Kind::Transfer, k, body.as_bytes());
        }
    }
}

#[test]
fn generated_deposits_and_withdraws_of_every_k_prove_and_only_verify_as_themselves() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(43);
    for kind in [Kind::Deposit, Kind::Withdraw] {
        for k in 2..=6 {
            let sender = k - 1 - k % 2;
            let inputs = PaymentInputs::generate(kind, k, sender, 10 + k as u64, 500, &mut rng);
            let body = request::to_request_json(&inputs).to_string();
            assert_eq!(sender_of(kind, k, body.as_bytes()), sender);
            let response = prove_and_verify(kind, k, body.as_bytes());
            assert_eq!(response.public_signal.len(), kind.num_public_inputs(k));
            let dvp_signal = &response.public_signal[8 * k + 2..];
            let hashes: Vec<String> = match &inputs.dvp {
                enygma_circuit::payment::Dvp::Deposit(d) => vec![to_decimal(&d.hash)],
                enygma_circuit::payment::Dvp::Withdraw(w) => {
                    w.hashes.iter().map(to_decimal).collect()
                }
                enygma_circuit::payment::Dvp::None => unreachable!(),
            };
            assert_eq!(
                dvp_signal,
                hashes.as_slice(),
                "{kind} k={k}: the DvP hashes come last"
            );
            // A changed DvP hash fails verification.
            let mut tampered = response.clone();
            tampered.public_signal[8 * k + 2] = "1".into();
            assert!(
                !prover().verify(instance(kind, k), &tampered).unwrap(),
                "{kind} k={k}: tampered hash must not verify"
            );
            // The other statements' keys refuse it: their public inputs differ in number.
            for other in [Kind::Transfer, Kind::Deposit, Kind::Withdraw]
                .into_iter()
                .filter(|&o| o != kind)
            {
                assert!(
                    prover().verify(instance(other, k), &response).is_err(),
                    "{kind} proof checked as {other}"
                );
            }
        }
    }
}

/// Withdraws claiming 1 and 10 deposits prove and verify (the circuit tests cover every count).
#[test]
fn withdraws_of_one_and_ten_deposits_prove() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(45);
    for notes in [vec![77], (1..=10).map(|i| i * 1_000_000_007).collect()] {
        let inputs = PaymentInputs::generate_withdraw(2, 1, &notes, 5, &mut rng);
        let body = request::to_request_json(&inputs).to_string();
        let response = prove_and_verify(Kind::Withdraw, 2, body.as_bytes());
        let zeros = response.public_signal[8 * 2 + 2..]
            .iter()
            .filter(|h| *h == "0")
            .count();
        assert_eq!(zeros, 10 - notes.len(), "empty slots are public zeros");
    }
}

/// Every check of deposit and withdraw has a request that the prover refuses naming it.
#[test]
fn deposit_and_withdraw_requests_failing_each_check_are_refused_with_the_check_named() {
    use enygma_circuit::payment::Dvp;
    use serde_json::Value;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(44);
    for kind in [Kind::Deposit, Kind::Withdraw] {
        let good = PaymentInputs::generate(kind, 3, 1, 30, 50, &mut rng);
        let body = request::to_request_json(&good);
        let refused = |edit: &dyn Fn(&mut Value)| -> String {
            let mut v = body.clone();
            edit(&mut v);
            match prepare(instance(kind, 3), v.to_string().as_bytes()) {
                Err(e @ ProveError::CheckFailed(_)) => e.to_string(),
                Err(e) => panic!("{kind}: refused as {e:?}, not by a check"),
                Ok(_) => panic!("{kind}: accepted"),
            }
        };
        let bump = |v: &mut Value| {
            let n: num_bigint::BigUint = v.as_str().unwrap().parse().unwrap();
            *v = (n + 1u32).to_string().into();
        };
        let check = |edit: &dyn Fn(&mut Value)| {
            refused(edit)
                .split(' ')
                .nth(1)
                .unwrap()
                .parse::<u8>()
                .unwrap()
        };
        assert_eq!(check(&|v| v["sender_id"] = "7".into()), 1);
        assert_eq!(check(&|v| bump(&mut v["tx_values"][1])), 2);
        assert_eq!(check(&|v| bump(&mut v["tx_commits"][0][0])), 3);
        assert_eq!(check(&|v| bump(&mut v["secret_key"])), 4);
        assert_eq!(check(&|v| bump(&mut v["hashed_shared_secrets"][2])), 5);
        assert_eq!(check(&|v| bump(&mut v["public_keys"][1])), 6);
        assert_eq!(check(&|v| bump(&mut v["previous_sender_balance"])), 7);
        assert_eq!(check(&|v| bump(&mut v["message_tags"][0])), 8);
        assert_eq!(check(&|v| bump(&mut v["tx_random_values"][2])), 9);
        assert_eq!(check(&|v| bump(&mut v["nullifier"])), 12);
        assert_eq!(check(&|v| bump(&mut v["address"])), 15);
        // Check 11: v above 2^252 (for a deposit also above the balance), with check 2 made
        // consistent so that 11 is the first to fail.
        let big = Fr::from(num_bigint::BigUint::from(1u8) << 252u32);
        let mut over = good.clone();
        *over.sender_tx_value = big;
        over.tx_values[1] = enygma_circuit::payment::sender_tx_value(kind, &big);
        let over_body = request::to_request_json(&over).to_string();
        let e = prepare(instance(kind, 3), over_body.as_bytes())
            .expect_err("v ≥ 2^252 must be refused");
        assert!(
            e.to_string().starts_with("check 9") || e.to_string().starts_with("check 11"),
            "{kind}: {e}"
        );
        // Check 13: a receiver's value at 2^252 with its commitment made consistent.
        let mut wide = good.clone();
        wide.tx_values[0] = big;
        let p = enygma_circuit::babyjubjub::pedersen(&wide.tx_values[0], &wide.tx_random_values[0]);
        wide.tx_commits[0] = (p.x, p.y);
        let e = prepare(
            instance(kind, 3),
            request::to_request_json(&wide).to_string().as_bytes(),
        )
        .err()
        .unwrap();
        assert!(
            e.to_string().starts_with("check 9") || e.to_string().starts_with("check 13"),
            "{kind}: {e}"
        );
        assert_eq!(
            check(&|v| v["tx_commits"].as_array_mut().unwrap().swap(0, 2)),
            13
        );
        match &good.dvp {
            Dvp::Deposit(_) => {
                assert_eq!(
                    refused(&|v| bump(&mut v["hash"])),
                    "check 15 (dvp hash) failed"
                );
                assert_eq!(check(&|v| bump(&mut v["saltOut"])), 15);
                // Overspending the balance.
                let mut t = PaymentInputs::generate(kind, 3, 1, 51, 51, &mut rng);
                *t.previous_sender_balance = Fr::from(50u64);
                let p = enygma_circuit::babyjubjub::pedersen(
                    &t.previous_sender_balance,
                    &t.previous_sender_random_value,
                );
                t.previous_commits[1] = (p.x, p.y);
                let e = prepare(
                    instance(kind, 3),
                    request::to_request_json(&t).to_string().as_bytes(),
                )
                .err()
                .unwrap();
                assert_eq!(
                    e.to_string(),
                    "check 11 (balance range) failed: sender_tx_value must not exceed previous_sender_balance"
                );
            }
            Dvp::Withdraw(_) => {
                assert_eq!(
                    refused(&|v| bump(&mut v["hashes"][1])),
                    "check 15 (dvp hash) failed: hashes[1]"
                );
                assert_eq!(
                    refused(&|v| bump(&mut v["sk_deposits"][0])),
                    "check 15 (dvp hash) failed: hashes[0]"
                );
                assert_eq!(
                    refused(&|v| bump(&mut v["saltsIn"][1])),
                    "check 15 (dvp hash) failed: hashes[1]"
                );
                // The reference proves the next three; they are refused naming the rule.
                // Credited 30 for no deposit at all.
                assert_eq!(
                    refused(&|v| {
                        for j in 0..10 {
                            for field in ["hashes", "sk_deposits", "v_per_deposit", "saltsIn"] {
                                v[field][j] = "0".into();
                            }
                        }
                    }),
                    "check 16 (withdrawn value) failed: \
                     sender_tx_value must be the sum of v_per_deposit"
                );
                // An empty slot naming a deposit (for the contract to mark spent).
                assert_eq!(
                    refused(&|v| v["hashes"][7] = "12345".into()),
                    "check 17 (empty deposit slot) failed: hashes[7]"
                );
                // The deposit of slot 0 claimed again in slot 1 (30 = 15 + 15 either way).
                assert_eq!(
                    refused(&|v| {
                        for field in ["hashes", "sk_deposits", "v_per_deposit", "saltsIn"] {
                            v[field][1] = v[field][0].clone();
                        }
                    }),
                    "check 18 (distinct deposits) failed: hashes[0] and hashes[1]"
                );
            }
            Dvp::None => unreachable!(),
        }
    }
}

/// What a proof could carry but the ledger could not use: a member named twice in the anonymity
/// set (any statement), a deposit of 10^36 or more (a note no join-split spends). Refused with
/// their own checks, before any proving work.
#[test]
fn a_member_named_twice_and_a_deposit_of_ten_to_the_36_are_refused_naming_their_checks() {
    use enygma_circuit::payment::{sender_tx_value, Spend};
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(46);
    let refused = |kind: Kind, k: usize, t: &PaymentInputs| -> String {
        match prepare(
            instance(kind, k),
            request::to_request_json(t).to_string().as_bytes(),
        ) {
            Err(e @ ProveError::CheckFailed(_)) => e.to_string(),
            Err(e) => panic!("{kind}: refused as {e:?}, not by a check"),
            Ok(_) => panic!("{kind}: accepted"),
        }
    };
    for kind in [Kind::Transfer, Kind::Deposit, Kind::Withdraw] {
        // The sender is member 1; members 0 and 3 become one, every value left consistent.
        let mut twice = PaymentInputs::generate(kind, 4, 1, 30, 50, &mut rng);
        twice.anonymity_set[3] = twice.anonymity_set[0];
        assert_eq!(
            refused(kind, 4, &twice),
            "check 20 (distinct members) failed: anonymity_set[0] and anonymity_set[3] name one \
             member",
            "{kind}"
        );
    }
    let good = PaymentInputs::generate(Kind::Deposit, 3, 2, 30, 50, &mut rng);
    let big = Fr::from(num_bigint::BigUint::from(10u8).pow(36));
    for (amount, accepted) in [(big - Fr::from(1u8), true), (big, false)] {
        let mut spend = Spend::of(&good);
        spend.balance = big;
        spend.amount = amount;
        spend.tx_values[spend.sender] = sender_tx_value(Kind::Deposit, &amount);
        let deposit = spend.inputs();
        if accepted {
            assert_eq!(
                sender_of(
                    Kind::Deposit,
                    3,
                    request::to_request_json(&deposit).to_string().as_bytes()
                ),
                2
            );
        } else {
            assert_eq!(
                refused(Kind::Deposit, 3, &deposit),
                "check 21 (deposit value range) failed: a deposit's sender_tx_value must be \
                 below 10^36"
            );
        }
    }
}

#[test]
fn the_stale_reference_samples_of_deposit_and_withdraw_are_refused_naming_a_field() {
    for (kind, k, name, field) in [
        (
            Kind::Deposit,
            2,
            "deposit-k2.json",
            "anonymity_set: missing",
        ),
        (Kind::Deposit, 6, "deposit-k6.json", "saltOut: missing"),
        (Kind::Withdraw, 2, "withdraw-k2.json", "saltsIn: missing"),
        (Kind::Withdraw, 6, "withdraw-k6.json", "saltsIn: missing"),
    ] {
        match prepare(instance(kind, k), &sample(name)) {
            Err(e @ ProveError::BadRequest(_)) => assert_eq!(e.to_string(), field, "{name}"),
            Err(e) => panic!("{name}: {e}"),
            Ok(_) => panic!("{name} must be refused"),
        }
    }
}

#[test]
fn bad_samples_and_wrong_k_are_refused_with_the_reason_named() {
    let msg = |k: usize, name: &str| match prepare(instance(Kind::Transfer, k), &sample(name)) {
        Err(e) => e,
        Ok(_) => panic!("{name} must be refused"),
    };
    let e = msg(6, "bad-transfer-k6.json");
    assert!(matches!(e, ProveError::BadRequest(_)));
    assert_eq!(
        e.to_string(),
        "hashed_shared_secrets[0]: not below the field modulus r"
    );
    let e = msg(2, "bad-transfer-k2.json");
    assert!(matches!(e, ProveError::CheckFailed(_)));
    assert_eq!(e.to_string(), "check 2 (sender tx value) failed");
    // A k6 body on the k2 route: the arrays have the wrong length.
    assert_eq!(
        msg(2, "transfer-k6.json").to_string(),
        "anonymity_set: expected 2 elements, got 6"
    );
    // There is no k = 7 instance: the registry refuses it with the reference's message.
    assert_eq!(
        statements::instance("transfer", Some(7))
            .unwrap_err()
            .to_string(),
        "k value not supported: must be between 2 and 6"
    );
}

#[test]
fn committed_verifying_keys_regenerate_from_the_seed() {
    for instance in statements::all_instances() {
        let path = keys::KeyPaths::new(&repo().join("keys"), instance).verifying;
        let committed = keys::load_verifying_key(&path).unwrap();
        assert!(
            keys::generate(instance).unwrap().vk == committed,
            "{instance}: committed verifying key differs from the seed's"
        );
    }
}

#[test]
fn keys_of_another_circuit_stop_the_load() {
    let dir = std::env::temp_dir().join(format!("enygma-mismatch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = keys::KeyPaths::new(&repo().join("keys"), instance(Kind::Transfer, 2));
    let dst = keys::KeyPaths::new(&dir, instance(Kind::Transfer, 3));
    prover(); // the k=2 keys exist once the shared prover has loaded
    for (a, b) in [
        (&src.proving, &dst.proving),
        (&src.proving_digest, &dst.proving_digest),
        (&src.verifying, &dst.verifying),
    ] {
        std::fs::copy(a, b).unwrap();
    }
    let err = enygma_prover::CircuitKeys::load_or_create(&dir, instance(Kind::Transfer, 3))
        .err()
        .expect("k=2 keys must not load as k=3");
    assert!(
        matches!(&err, KeyError::Mismatch { stem, .. } if stem == "transfer-k3"),
        "{err}"
    );
    assert!(err
        .to_string()
        .contains("do not match the transfer circuit"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_keys_are_refused_when_they_must_not_be_created() {
    let dir = std::env::temp_dir().join(format!("enygma-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t6 = instance(Kind::Transfer, 6);
    let err = Prover::load(&dir, &[t6], keys::MissingKeys::Refuse)
        .err()
        .expect("no keys: refused");
    assert!(
        matches!(&err, KeyError::Missing { stem, .. } if stem == "transfer-k6"),
        "{err}"
    );
    assert!(
        err.to_string().contains("transfer-k6.pk does not exist"),
        "{err}"
    );
    // Nothing was created.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A gateway's request to the hidden sender's transfer and withdraw is today's, without the
/// nullifier: the proof verifies with the statement's own keys, its public signal carries the
/// nullifier the statement computed (not the reference's: nobody can tell the sender from it),
/// and neither the reference's keys nor a changed nullifier verify it.
#[test]
fn hidden_sender_payments_prove_and_carry_the_nullifier_the_statement_computed() {
    use enygma_circuit::payment::{sender_shared_secret, NullifierRule, Spend};
    let dir = std::env::temp_dir().join(format!("enygma-hidden-sender-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(46);
    for (kind, name, k) in [
        (Kind::Transfer, "hidden-sender-transfer", 2),
        (Kind::Withdraw, "hidden-sender-withdraw", 3),
    ] {
        let hidden = statements::instance(name, Some(k)).unwrap();
        let own_keys = Prover::load(&dir, &[hidden], keys::MissingKeys::Create).unwrap();
        let reference = PaymentInputs::generate(kind, k, 1, 40, 100, &mut rng);
        let mut body = request::to_request_json(&reference);
        body.as_object_mut().unwrap().remove("nullifier");
        let prepared = prepare(hidden, body.to_string().as_bytes()).unwrap();
        let (response, _) = own_keys.prove(&prepared).unwrap();
        assert!(own_keys.verify(hidden, &response).unwrap(), "{hidden}");
        let s_s = sender_shared_secret(
            &reference.previous_sender_random_value,
            &reference.secret_key,
        );
        let nullifier = NullifierRule::HiddenSender.nullifier(&s_s, &reference.block_number);
        assert_eq!(
            nullifier,
            Spend::of(&reference)
                .inputs_with(NullifierRule::HiddenSender)
                .nullifier
        );
        assert_eq!(response.public_signal[6 * k], to_decimal(&nullifier));
        assert_ne!(
            response.public_signal[6 * k],
            to_decimal(&reference.nullifier)
        );
        // Everything else of the public signal is the reference's.
        let reference_signal: Vec<String> =
            reference.public_inputs().iter().map(to_decimal).collect();
        for (i, (a, b)) in response
            .public_signal
            .iter()
            .zip(&reference_signal)
            .enumerate()
        {
            assert!(i == 6 * k || a == b, "{hidden}: public_signal[{i}]");
        }
        assert!(
            !prover().verify(instance(kind, k), &response).unwrap(),
            "{hidden}: verified by the reference's keys"
        );
        let mut tampered = response.clone();
        tampered.public_signal[6 * k] = reference_signal[6 * k].clone();
        assert!(!own_keys.verify(hidden, &tampered).unwrap(), "{hidden}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_prover_for_some_instances_proves_those_only() {
    let t2 = instance(Kind::Transfer, 2);
    let prover = Prover::load(&repo().join("keys"), &[t2], keys::MissingKeys::Create).unwrap();
    assert_eq!(prover.instances().collect::<Vec<_>>(), [t2]);
    let body = sample("transfer-k2.json");
    let (response, _) = prover.prove(&prepare(t2, &body).unwrap()).unwrap();
    assert!(prover.verify(t2, &response).unwrap());
    let d2 = instance(Kind::Deposit, 2);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(45);
    let deposit = d2
        .generate(&statements::RequestSpec::default(), &mut rng)
        .unwrap()
        .to_string();
    let err = prover
        .prove(&prepare(d2, deposit.as_bytes()).unwrap())
        .expect_err("deposit keys are not loaded");
    assert!(matches!(err, ProveError::NotLoaded(i) if i == d2), "{err}");
    assert_eq!(err.to_string(), "the keys of deposit-k2 are not loaded");
}

#[test]
fn precomputed_tables_give_the_same_proof_for_the_same_randomness() {
    use rand_chacha::ChaCha20Rng;
    let t2 = instance(Kind::Transfer, 2);
    let keys_dir = repo().join("keys");
    let plain = Prover::load(&keys_dir, &[t2], keys::MissingKeys::Create).unwrap();
    let mut tabled = Prover::load(&keys_dir, &[t2], keys::MissingKeys::Create).unwrap();
    let announced = tabled.circuit(t2).unwrap().precomputed_table_bytes();
    assert!(!tabled.circuit(t2).unwrap().is_precomputed());
    tabled.precompute(&[t2]).unwrap();
    let keys = tabled.circuit(t2).unwrap();
    assert!(keys.is_precomputed());
    assert_eq!(keys.precomputed_table_bytes(), announced);
    assert_eq!(
        keys.shape.info.precomputed_table_bytes, announced,
        "what `enygma info` reports"
    );
    // A k=2 transfer: 2^14 - 1 bases of H, ~12,200 variables in A, B and L, about 16 points
    // of 64 bytes (G1) or 128 (G2) per base: ~80 MiB.
    assert!((50 << 20..120 << 20).contains(&announced), "{announced}");

    let prepared = prepare(t2, &sample("transfer-k2.json")).unwrap();
    let seeded = || ChaCha20Rng::seed_from_u64(7);
    let (expected, _) = plain.prove_with_rng(&prepared, &mut seeded()).unwrap();
    let (proof, _) = tabled.prove_with_rng(&prepared, &mut seeded()).unwrap();
    assert_eq!(
        serde_json::to_string(&proof).unwrap(),
        serde_json::to_string(&expected).unwrap(),
        "the tables change how the MSMs are computed, not their sums"
    );
    assert!(plain.verify(t2, &proof).unwrap() && tabled.verify(t2, &proof).unwrap());
    // Fresh randomness: another proof of the same statement, valid too.
    let (fresh, _) = tabled.prove(&prepared).unwrap();
    assert_ne!(fresh.pi_a, proof.pi_a);
    assert_eq!(fresh.public_signal, proof.public_signal);
    assert!(plain.verify(t2, &fresh).unwrap());

    let t3 = instance(Kind::Transfer, 3);
    let err = tabled.precompute(&[t3]).unwrap_err().to_string();
    assert!(
        err.contains("transfer-k3") && err.contains("not loaded"),
        "{err}"
    );
}

/// Tables built and dropped while the prover serves: proofs that start after a build use the
/// tables (and verify), those after a drop run without them, and the bytes reported are the
/// announced ones.
#[test]
fn tables_built_and_dropped_at_run_time_change_the_proofs_that_start_after() {
    let owner = statements::by_stem("ownership-721").unwrap();
    let prover = Prover::load(&repo().join("keys"), &[owner], keys::MissingKeys::Create).unwrap();
    let announced = prover.circuit(owner).unwrap().precomputed_table_bytes();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(41);
    let body = owner
        .generate(&statements::RequestSpec::default(), &mut rng)
        .unwrap()
        .to_string();
    let prepared = prepare(owner, body.as_bytes()).unwrap();
    let prove = || {
        let (proof, timings) = prover.prove(&prepared).unwrap();
        assert!(prover.verify(owner, &proof).unwrap());
        timings.precomputed
    };

    assert!(!prove(), "no tables yet");
    assert_eq!(prover.drop_tables(owner), 0, "nothing to drop");
    assert_eq!(prover.build_tables(owner).unwrap(), announced);
    assert!(prover.circuit(owner).unwrap().is_precomputed());
    assert!(prove(), "built: used");
    assert_eq!(
        prover.build_tables(owner).unwrap(),
        announced,
        "kept as built"
    );
    assert_eq!(prover.drop_tables(owner), announced);
    assert!(!prover.circuit(owner).unwrap().is_precomputed());
    assert!(!prove(), "dropped: not used");

    let t2 = instance(Kind::Transfer, 2);
    let err = prover.build_tables(t2).unwrap_err().to_string();
    assert!(
        err.contains("transfer-k2") && err.contains("not loaded"),
        "{err}"
    );
}

/// Matrices and tables kept in the cache: a second prover reads them instead of deriving them,
/// proves with them, and its proofs verify; a file of another key, a damaged one, a cut one and
/// a missing one are refused as such, and the prover then derives the value and keeps a good
/// file again; a cache directory that cannot be written costs only the files.
#[test]
fn kept_matrices_and_tables_are_read_back_only_when_whole_and_for_the_same_key() {
    use enygma_prover::{
        cache::{self, CacheError, Kind},
        groth16::{PrecomputedQueries, R1cs},
        matrix::CompactMatrix,
    };
    let owner = statements::by_stem("ownership-721").unwrap();
    let stem = owner.key_stem();
    let dir = std::env::temp_dir().join(format!("enygma-kept-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let loaded = || {
        Prover::load_cached(
            &repo().join("keys"),
            &[owner],
            keys::MissingKeys::Create,
            Some(dir.clone()),
        )
        .unwrap()
    };
    let (tables, matrices) = (
        cache::path(&dir, &stem, Kind::Tables),
        cache::path(&dir, &stem, Kind::Matrices),
    );
    let first = loaded();
    let key = first.circuit(owner).unwrap().key_sha256;
    let read_tables = || cache::read::<PrecomputedQueries>(&tables, Kind::Tables, &key);
    let read_matrices = || {
        cache::read::<R1cs<CompactMatrix>>(
            &matrices,
            Kind::Matrices,
            &cache::matrices_binding(&stem),
        )
    };
    assert!(read_matrices().is_ok(), "matrices kept at the first load");
    assert!(matches!(read_tables(), Err(CacheError::Missing)));
    let bytes = first.build_tables(owner).unwrap();
    assert!(read_tables().is_ok(), "tables kept once built");
    let kept_tables = std::fs::read(&tables).unwrap();
    let kept_matrices = std::fs::read(&matrices).unwrap();

    let mut other_key = key;
    other_key[0] ^= 1;
    assert!(matches!(
        cache::read::<PrecomputedQueries>(&tables, Kind::Tables, &other_key),
        Err(CacheError::Stale)
    ));
    for (path, kept) in [(&tables, &kept_tables), (&matrices, &kept_matrices)] {
        let mut flipped = kept.clone();
        flipped[kept.len() / 2] ^= 0x10;
        for (what, bytes) in [
            ("one bit flipped", flipped),
            ("cut short", kept[..kept.len() - 40].to_vec()),
            ("a byte appended", [kept.as_slice(), &[0]].concat()),
        ] {
            std::fs::write(path, &bytes).unwrap();
            let refused = if path == &tables {
                read_tables().err()
            } else {
                read_matrices().err()
            };
            assert!(
                matches!(refused, Some(CacheError::Corrupt(_))),
                "{}: {what}: {refused:?}",
                path.display()
            );
            // A prover meeting the bad file derives the value and keeps it whole again.
            let rebuilt = loaded();
            assert_eq!(
                rebuilt.build_tables(owner).unwrap(),
                bytes_of(&rebuilt, owner)
            );
            assert_eq!(&std::fs::read(path).unwrap(), kept, "{what}: kept again");
        }
    }

    // Read, not derived: the same sizes, and proofs that use them verify.
    let second = loaded();
    assert_eq!(second.build_tables(owner).unwrap(), bytes);
    let info = |p: &Prover| serde_json::to_string(&p.circuit(owner).unwrap().shape.info).unwrap();
    assert_eq!(info(&second), info(&first));
    let matrix_bytes = |p: &Prover| p.circuit(owner).unwrap().shape.matrix_bytes();
    assert_eq!(
        matrix_bytes(&second),
        matrix_bytes(&first),
        "no spare capacity"
    );
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(43);
    let body = owner
        .generate(&statements::RequestSpec::default(), &mut rng)
        .unwrap()
        .to_string();
    let prepared = prepare(owner, body.as_bytes()).unwrap();
    let (proof, timings) = second.prove(&prepared).unwrap();
    assert!(timings.precomputed);
    assert!(first.verify(owner, &proof).unwrap());

    // A cache directory that cannot be written costs the files only.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, b"a file where the directory should be").unwrap();
    let unwritable = loaded();
    assert_eq!(unwritable.build_tables(owner).unwrap(), bytes);
    assert!(unwritable.circuit(owner).unwrap().is_precomputed());
    std::fs::remove_file(&dir).unwrap();
}

fn bytes_of(prover: &Prover, instance: Instance) -> usize {
    prover.circuit(instance).unwrap().precomputed_table_bytes()
}

/// A reload's acceptance rule that takes every key.
fn accept_all(_: Instance, _: &keys::KeyRecord) -> Result<(), String> {
    Ok(())
}

/// A reload's acceptance rule that takes ceremony keys only, as `--require-ceremony-keys`.
fn only_ceremony(_: Instance, record: &keys::KeyRecord) -> Result<(), String> {
    if record.origin.is_ceremony() {
        Ok(())
    } else {
        Err("not a ceremony key".to_string())
    }
}

/// A reload replaces only a key whose file changed, and only once it is loaded and accepted: a
/// key refused by the caller's rule, or a file that is no key, leaves the loaded key; a replaced
/// key gets tables before the switch when the old one had them; what a proof took before the
/// switch stays the old keys, and proofs after it are made with the new key.
#[test]
fn a_reload_replaces_changed_keys_once_loaded_and_accepted() {
    use enygma_prover::KeyReload;
    use keys::{KeyOrigin, KeyPaths, KeyRecord};
    let owner = statements::by_stem("ownership-721").unwrap();
    let dir = std::env::temp_dir().join(format!("enygma-key-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let prover = Prover::load(&dir, &[owner], keys::MissingKeys::Create).unwrap();
    let reload = |accept: &dyn Fn(Instance, &KeyRecord) -> Result<(), String>| {
        let mut all = prover.reload_keys(&dir, accept);
        assert_eq!(all.len(), 1);
        all.pop().unwrap().1
    };
    assert!(matches!(reload(&accept_all), KeyReload::Unchanged));

    let first = prover.circuit(owner).unwrap();
    prover.build_tables(owner).unwrap();
    let record = KeyRecord {
        origin: KeyOrigin::SingleParty,
        reduction: enygma_prover::qap::Reduction::Libsnark,
    };
    let new_sha = keys::save(&dir, owner, &keys::generate_random(owner).unwrap(), &record).unwrap();
    match reload(&only_ceremony) {
        KeyReload::Refused(why) => assert!(why.contains("not a ceremony key"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(Arc::ptr_eq(&first, &prover.circuit(owner).unwrap()));

    match reload(&accept_all) {
        KeyReload::Replaced {
            previous,
            now,
            record: replaced,
            tables,
        } => {
            assert_eq!(previous, first.key_sha256);
            assert_eq!(now, new_sha);
            assert_eq!(replaced.origin, KeyOrigin::SingleParty);
            assert!(tables, "the old key had tables");
        }
        other => panic!("{other:?}"),
    }
    let second = prover.circuit(owner).unwrap();
    assert_eq!(second.key_sha256, new_sha);
    assert!(second.is_precomputed(), "tables before the switch");
    assert!(matches!(reload(&accept_all), KeyReload::Unchanged));

    // Proofs from now on: the new key's, checked under it.
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
    let body = owner
        .generate(&statements::RequestSpec::default(), &mut rng)
        .unwrap()
        .to_string();
    let (proof, timings) = prover
        .prove(&prepare(owner, body.as_bytes()).unwrap())
        .unwrap();
    assert_eq!(timings.key_sha256, new_sha);
    assert!(prover.verify(owner, &proof).unwrap());
    // What was taken before the switch is the old keys, whole, with their tables.
    assert_ne!(first.key_sha256, second.key_sha256);
    assert!(first.is_precomputed());

    std::fs::write(KeyPaths::new(&dir, owner).proving, b"no key").unwrap();
    assert!(matches!(reload(&accept_all), KeyReload::Refused(_)));
    assert_eq!(prover.circuit(owner).unwrap().key_sha256, new_sha);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A reload with a hosted list: an instance gone from it is retired (new requests refused as
/// not loaded, a request prepared before still proved with the keys it holds, its tables
/// dropped); one new in it is loaded as at start (a missing key refused or created as asked,
/// the caller's rule on its record), then hosted in registry order.
#[test]
fn a_hosted_reload_adds_and_retires_instances() {
    use enygma_prover::KeyReload;
    use keys::{KeyRecord, MissingKeys};
    let owner = statements::by_stem("ownership-721").unwrap();
    let transfer = statements::by_stem("transfer-k2").unwrap();
    let dir = std::env::temp_dir().join(format!("enygma-hosted-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let prover = Prover::load(&dir, &[owner], MissingKeys::Create).unwrap();
    prover.build_tables(owner).unwrap();
    let owner_sha = prover.circuit(owner).unwrap().key_sha256;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
    let body = owner
        .generate(&statements::RequestSpec::default(), &mut rng)
        .unwrap()
        .to_string();
    let waiting = prover.prepare(owner, body.as_bytes()).unwrap();

    // Retired, and the key to add missing while missing keys are refused: nothing hosted.
    let results = prover.reload_hosted(&dir, &[transfer], MissingKeys::Refuse, accept_all);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        matches!(results[0], (i, KeyReload::Retired { table_bytes }) if i == owner && table_bytes > 0),
        "{results:?}"
    );
    assert!(
        matches!(&results[1], (i, KeyReload::Refused(why)) if *i == transfer && why.contains("transfer-k2")),
        "{results:?}"
    );
    assert_eq!(prover.instances().count(), 0);
    assert!(matches!(
        prover.prepare(owner, body.as_bytes()),
        Err(ProveError::NotLoaded(i)) if i == owner
    ));
    assert!(matches!(
        prover.prove(&prepare(owner, body.as_bytes()).unwrap()),
        Err(ProveError::NotLoaded(_))
    ));
    // Prepared before the retirement: proved with the keys it holds, without their tables.
    let (_, timings) = prover.prove(&waiting).unwrap();
    assert_eq!(timings.key_sha256, owner_sha);
    assert!(
        !timings.precomputed,
        "the retired instance's tables were dropped"
    );

    // Added as at start: a development key created when missing keys are.
    let results = prover.reload_hosted(&dir, &[transfer], MissingKeys::Create, accept_all);
    let transfer_sha = match &results[..] {
        [(i, KeyReload::Added { now, record })] if *i == transfer => {
            assert_eq!(*record, KeyRecord::DEVELOPMENT);
            *now
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(prover.circuit(transfer).unwrap().key_sha256, transfer_sha);
    assert!(!prover.circuit(transfer).unwrap().is_precomputed());

    // The caller's rule refuses the returning instance's development key before any load.
    let results =
        prover.reload_hosted(&dir, &[owner, transfer], MissingKeys::Refuse, only_ceremony);
    assert!(
        matches!(&results[0], (i, KeyReload::Refused(why)) if *i == owner && why.contains("not a ceremony key")),
        "{results:?}"
    );
    assert!(
        matches!(results[1], (_, KeyReload::Unchanged)),
        "{results:?}"
    );
    let results = prover.reload_hosted(&dir, &[owner, transfer], MissingKeys::Refuse, accept_all);
    assert!(
        matches!(&results[0], (i, KeyReload::Added { now, .. }) if *i == owner && *now == owner_sha),
        "{results:?}"
    );
    let in_order: Vec<Instance> = statements::all_instances()
        .filter(|i| [owner, transfer].contains(i))
        .collect();
    assert_eq!(prover.instances().collect::<Vec<_>>(), in_order);
    let (proof, _) = prover
        .prove(&prover.prepare(owner, body.as_bytes()).unwrap())
        .unwrap();
    assert!(prover.verify(owner, &proof).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}
