//! The stable stand-in for a fuzz smoke run in CI: the seed corpus
//! and a few thousand deterministic mutations of it go through the fuzz target's entry point
//! (`enygma_prover::fuzzing::prepare_input`: every statement's parser, then its checks), and
//! none may panic. The cargo-fuzz target itself needs nightly and runs with `scripts/fuzz.sh`.
//!
//! The mutations are those a fuzzer needs many executions to stumble on in a JSON request:
//! byte-level ones (flips, interesting bytes, insertions, deletions, truncation) and JSON-aware
//! ones that keep the body parseable so that the checks run (a value replaced by a boundary
//! number, another type, a longer or shorter array, a missing field, one field's value moved to
//! another).

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    path::PathBuf,
};

use enygma_prover::{fuzzing, statements, ProveError};
use rand::{seq::SliceRandom, Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::Value;

fn samples_dir() -> PathBuf {
    std::env::var_os("ENYGMA_REFERENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference")
        })
        .join("requests")
}

/// Inputs whose processing panicked, with the panic message.
fn run(input: &[u8], panics: &mut Vec<(Vec<u8>, String)>) -> Option<Result<(), String>> {
    match catch_unwind(AssertUnwindSafe(|| fuzzing::prepare_input(input))) {
        Ok(result) => result.map(|r| r.map(|_| ()).map_err(|e| e.to_string())),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panics.push((input.to_vec(), message));
            None
        }
    }
}

/// Field elements at the edges of what the parsers and checks handle.
const BOUNDARY_NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "255",
    "256",
    "340282366920938463463374607431768211455",
    "1000000000000000000000000000000000000",
    "2736030358979909402780800718157159386076813972158567259200215660948447373041",
    "2736030358979909402780800718157159386076813972158567259200215660948447373040",
    "7237005577332262213973186563042994240829374041602535252466099000494570602495",
    "21888242871839275222246405745257275088548364400416034343698204186575808495616",
    "21888242871839275222246405745257275088548364400416034343698204186575808495617",
    "115792089237316195423570985008687907853269984665640564039457584007913129639935",
    "115792089237316195423570985008687907853269984665640564039457584007913129639936",
    "",
    "00",
    "-1",
    "1e3",
    "0x10",
];

/// Replaces a random node of `v` (descending into objects and arrays with some probability at
/// each level), or removes or duplicates an element on the way down.
fn mutate_json(v: &mut Value, rng: &mut ChaCha20Rng, donors: &[Value]) {
    let descend = rng.gen_bool(0.6);
    match v {
        Value::Object(o) if descend && !o.is_empty() => {
            let key = o.keys().nth(rng.gen_range(0..o.len())).cloned().unwrap();
            if rng.gen_bool(0.1) {
                o.remove(&key);
            } else if let Some(child) = o.get_mut(&key) {
                mutate_json(child, rng, donors);
            }
            return;
        }
        Value::Array(a) if descend && !a.is_empty() => {
            let i = rng.gen_range(0..a.len());
            match rng.gen_range(0..10) {
                0 => {
                    a.remove(i);
                }
                1 => {
                    let copy = a[i].clone();
                    a.push(copy);
                }
                _ => mutate_json(&mut a[i], rng, donors),
            }
            return;
        }
        _ => {}
    }
    let replacement = match rng.gen_range(0..8) {
        0..=3 => Value::from(*BOUNDARY_NUMBERS.choose(rng).unwrap()),
        4 => donors.choose(rng).cloned().unwrap_or(Value::Null),
        5 => serde_json::json!([]),
        6 => Value::from(rng.gen::<u32>()),
        _ => match &*v {
            // A decimal one unit off, so that the body still parses and a check must catch it.
            Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                let mut digits = s.clone().into_bytes();
                let last = digits.len() - 1;
                digits[last] = if digits[last] == b'9' {
                    b'0'
                } else {
                    digits[last] + 1
                };
                Value::from(String::from_utf8(digits).unwrap())
            }
            _ => Value::Null,
        },
    };
    *v = replacement;
}

/// Values of a body, to move into other fields.
fn donors(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(o) => o.values().for_each(|x| donors(x, out)),
        Value::Array(a) => {
            out.push(v.clone());
            a.iter().for_each(|x| donors(x, out))
        }
        other => out.push(other.clone()),
    }
}

fn mutate_bytes(input: &mut Vec<u8>, rng: &mut ChaCha20Rng) {
    if input.is_empty() {
        input.push(rng.gen());
        return;
    }
    let i = rng.gen_range(0..input.len());
    match rng.gen_range(0..6) {
        0 => input[i] ^= 1 << rng.gen_range(0..8),
        1 => input[i] = *b"\x00\xff\"\\0123456789[]{},:-e.".choose(rng).unwrap(),
        2 => input.insert(i, rng.gen()),
        3 => {
            let end = (i + rng.gen_range(1..64)).min(input.len());
            input.drain(i..end);
        }
        4 => {
            let end = (i + rng.gen_range(1..64)).min(input.len());
            let copy = input[i..end].to_vec();
            input.splice(i..i, copy);
        }
        _ => input.truncate(i),
    }
}

#[test]
fn seeds_and_mutations_never_panic() {
    let dir = samples_dir();
    assert!(
        dir.is_dir(),
        "reference samples not found at {}",
        dir.display()
    );
    let seeds = fuzzing::seeds(Some(&dir)).unwrap();
    let instances = statements::instances().count();
    assert!(seeds.len() > 2 * instances, "{} seeds", seeds.len());

    let mut panics = Vec::new();
    // Every generated request is valid: the seeds reach the checks and pass them.
    for (name, input) in &seeds {
        let outcome = run(input, &mut panics);
        if name.starts_with("gen-") {
            assert_eq!(outcome, Some(Ok(())), "{name}");
        }
    }

    let mut rng = ChaCha20Rng::seed_from_u64(17);
    let (mut accepted, mut bad_request, mut check_failed, mut json_mutants) = (0, 0, 0, 0);
    const MUTANTS: usize = 4000;
    for _ in 0..MUTANTS {
        let (_, input) = seeds.choose(&mut rng).unwrap();
        let (instance, body) = fuzzing::split_input(input).unwrap();
        let mutated = match serde_json::from_slice::<Value>(body) {
            Ok(mut value) if rng.gen_bool(0.7) => {
                json_mutants += 1;
                let mut pool = Vec::new();
                donors(&value, &mut pool);
                for _ in 0..rng.gen_range(1..=3) {
                    mutate_json(&mut value, &mut rng, &pool);
                }
                fuzzing::seed(instance, value.to_string().as_bytes())
            }
            _ => {
                let mut bytes = input.clone();
                for _ in 0..rng.gen_range(1..=4) {
                    mutate_bytes(&mut bytes, &mut rng);
                }
                bytes
            }
        };
        match catch_unwind(AssertUnwindSafe(|| fuzzing::prepare_input(&mutated))) {
            Ok(Some(Ok(_))) => accepted += 1,
            Ok(Some(Err(ProveError::BadRequest(_)))) => bad_request += 1,
            Ok(Some(Err(ProveError::CheckFailed(_)))) => check_failed += 1,
            Ok(Some(Err(ProveError::Internal(e)))) => panic!("a 500 for a request: {e}"),
            Ok(Some(Err(ProveError::NotLoaded(i)))) => {
                panic!("the key-free checks asked for {i}'s keys")
            }
            Ok(None) => {}
            Err(_) => {
                run(&mutated, &mut panics);
            }
        }
    }
    assert!(
        panics.is_empty(),
        "{} inputs panicked; the first ({}): {:?}",
        panics.len(),
        panics[0].1,
        String::from_utf8_lossy(&panics[0].0)
    );
    // The mutations must reach both the parsers' errors and the checks, or they test little.
    eprintln!(
        "{MUTANTS} mutants ({json_mutants} JSON-aware): {accepted} accepted, {bad_request} 400, {check_failed} 422"
    );
    assert!(
        bad_request > MUTANTS / 10,
        "{bad_request} refused by a parser"
    );
    // (152 of 4000 with the 18 instances of six statements: the DvP requests' mutants mostly
    // break their stricter JSON shape first.)
    assert!(
        check_failed > MUTANTS / 40,
        "{check_failed} refused by a check"
    );
}

/// The committed corpus of the `verify` fuzz target (`tests/fuzz-corpus/verify/`), sorted.
fn verify_corpus() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus/verify");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// A well-formed response for `instance`: the generators as its points, and as many public
/// inputs as it takes; it passes every key-free check (it verifies against no key).
fn well_formed(instance: statements::Instance) -> Vec<u8> {
    use ark_ec::AffineRepr;
    let proof = ark_groth16::Proof::<ark_bn254::Bn254> {
        a: ark_bn254::G1Affine::generator(),
        b: ark_bn254::G2Affine::generator(),
        c: ark_bn254::G1Affine::generator(),
    };
    let inputs = vec![ark_bn254::Fr::from(7u64); instance.num_public_inputs()];
    let response = enygma_prover::ProofResponse::from_proof(&proof, &inputs);
    fuzzing::seed(instance, response.to_json().as_bytes())
}

/// The verify route's proof parser, as the `verify` fuzz target drives it, over its committed
/// corpus, a well-formed response per instance and deterministic mutations of all of them:
/// errors (400) only, never a panic nor a 500.
#[test]
fn verify_corpus_and_mutations_never_panic() {
    let mut seeds = verify_corpus();
    assert!(seeds.len() >= 8, "{} corpus files", seeds.len());
    let outcome = |input: &[u8]| {
        catch_unwind(AssertUnwindSafe(|| fuzzing::verify_input(input)))
            .unwrap_or_else(|_| panic!("panicked on {:?}", String::from_utf8_lossy(input)))
    };
    for (name, input) in &seeds {
        match outcome(input) {
            Some(Ok(())) | Some(Err(ProveError::BadRequest(_))) => {}
            other => panic!("{name}: {other:?}"),
        }
    }
    let repeated = &seeds.iter().find(|(n, _)| n == "repeated-key").unwrap().1;
    match outcome(repeated) {
        Some(Err(ProveError::BadRequest(e))) => assert_eq!(e.field, "pi_a", "{e}"),
        other => panic!("repeated-key: {other:?}"),
    }
    for instance in statements::instances() {
        let input = well_formed(instance);
        assert_eq!(outcome(&input).map(|r| r.is_ok()), Some(true), "{instance}");
        seeds.push((format!("well-formed-{instance}"), input));
    }

    let mut rng = ChaCha20Rng::seed_from_u64(29);
    let (mut accepted, mut refused) = (0, 0);
    const MUTANTS: usize = 2000;
    for _ in 0..MUTANTS {
        let (_, input) = seeds.choose(&mut rng).unwrap();
        let mutated = match fuzzing::split_input(input) {
            Some((instance, body)) if rng.gen_bool(0.6) => {
                match serde_json::from_slice::<Value>(body) {
                    Ok(mut value) => {
                        let mut pool = Vec::new();
                        donors(&value, &mut pool);
                        for _ in 0..rng.gen_range(1..=2) {
                            mutate_json(&mut value, &mut rng, &pool);
                        }
                        fuzzing::seed(instance, value.to_string().as_bytes())
                    }
                    Err(_) => input.clone(),
                }
            }
            _ => {
                let mut bytes = input.clone();
                for _ in 0..rng.gen_range(1..=4) {
                    mutate_bytes(&mut bytes, &mut rng);
                }
                bytes
            }
        };
        match outcome(&mutated) {
            Some(Ok(())) => accepted += 1,
            Some(Err(ProveError::BadRequest(_))) => refused += 1,
            Some(Err(e)) => panic!("not a 400 for a proof: {e}"),
            None => {}
        }
    }
    eprintln!("{MUTANTS} verify mutants: {accepted} accepted, {refused} 400");
    // Both sides reached: mutants refused, and some still well-formed (a mutation that kept the
    // values valid), so the checks past the JSON ran on them.
    assert!(
        refused > MUTANTS / 2 && accepted > 0,
        "{accepted} / {refused}"
    );
}
