//! Our proof alone on a snarkjs zkey and a `.wtns` witness: the inputs rapidsnark proves in
//! `benches/peers/rapidsnark.sh`, timed the way its harness (`prove_times.cpp`) times it.
//!
//! `cargo run --release -p enygma-prover --example peer_prove -- STEM ZKEY WTNS PROOFS [tables]`
//!
//! The zkey is imported as `enygma import-zkey` imports it (checked against the instance's
//! R1CS) and the witness read once; neither is timed, nor are the constraint matrices or, with
//! `tables`, the fixed-base MSM tables (`enygma-server --precompute`). Each proof is one
//! `groth16::create_proof` (witness map and MSMs) with fresh `r` and `s`, on the rayon pool's
//! threads (every CPU the process may run on: `taskset -c 0` gives one). Prints `load_ms X`
//! once and `proof_ms X` per proof; the last proof is checked against the zkey's verifying key.

use std::time::Instant;

use ark_std::UniformRand;
use enygma_prover::{
    ceremony::{wtns_file, zkey},
    groth16::{self, MsmBackend, PrecomputedQueries, SparseProvingKey},
    keys, statements,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (stem, zkey_path, wtns_path, proofs, tables) = match args.as_slice() {
        [stem, z, w, n] => (stem, z, w, n.parse::<usize>()?, false),
        [stem, z, w, n, t] if t == "tables" => (stem, z, w, n.parse::<usize>()?, true),
        _ => return Err("usage: peer_prove STEM ZKEY WTNS PROOFS [tables]".into()),
    };
    let instance =
        statements::by_stem(stem).ok_or_else(|| format!("no statement instance {stem}"))?;

    let started = Instant::now();
    let r1cs = groth16::r1cs(instance.circuit_for_setup())?;
    let (pk, record) = zkey::import(
        &std::fs::read(zkey_path)?,
        &r1cs,
        &keys::development_delta_g1(instance),
    )?;
    let vk = enygma_verifier::PreparedVerifyingKey::from(pk.vk.clone());
    let key = SparseProvingKey::with_reduction(pk, record.reduction)?;
    let r1cs = r1cs.compact()?;
    let tables = tables.then(|| PrecomputedQueries::new(&key));
    let assignment = wtns_file::read(&std::fs::read(wtns_path)?)?;
    println!("load_ms {:.3}", started.elapsed().as_secs_f64() * 1e3);

    let mut rng = rand::thread_rng();
    let mut last = None;
    for _ in 0..proofs {
        let (r, s) = (
            enygma_circuit::Fr::rand(&mut rng),
            enygma_circuit::Fr::rand(&mut rng),
        );
        let started = Instant::now();
        let (proof, _) = groth16::create_proof(
            &key,
            tables.as_ref(),
            &r1cs,
            &assignment,
            r,
            s,
            MsmBackend::Enygma,
        )?;
        println!("proof_ms {:.3}", started.elapsed().as_secs_f64() * 1e3);
        last = Some(proof);
    }
    if let Some(proof) = last {
        let public = &assignment[1..r1cs.num_instance_variables];
        if !enygma_verifier::verify_prepared(&vk, &proof, public)? {
            return Err("the last proof does not verify against the zkey's verifying key".into());
        }
    }
    Ok(())
}
