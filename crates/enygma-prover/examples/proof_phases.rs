//! Where the time of one k=6 transfer proof goes: the phases of `groth16::create_proof` with
//! each MSM backend, next to ark-groth16's whole prover (with the same oriented reduction), on 1
//! and 2 threads.
//!
//! `cargo run --release -p enygma-prover --features bench --example proof_phases -- [proofs per
//! setting] [threads] [arkworks|enygma-g1|enygma]`; the last two restrict the run to one setting
//! (for `perf record`). With `TABLES=1` the enygma backend is also timed with precomputed
//! MSM tables.
//! Times are medians over the proofs. Keys come from a seeded setup of the current circuit, so
//! the run does not depend on the key files matching it.

use std::time::{Duration, Instant};

use ark_ec::AffineRepr;
use ark_snark::SNARK;
use ark_std::{UniformRand, Zero};
use enygma_circuit::Fr;
use enygma_prover::groth16::{
    create_proof, full_assignment, r1cs, sample_transfer, MsmBackend, PhaseTimings,
    PrecomputedQueries, SparseProvingKey,
};
use enygma_prover::qap::Groth16;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let proofs: usize = std::env::args()
        .nth(1)
        .map_or(10, |n| n.parse().expect("proofs per setting"));
    let only_threads: Option<usize> = std::env::args()
        .nth(2)
        .map(|n| n.parse().expect("thread count"));
    let only_backend = std::env::args().nth(3).map(|b| match b.as_str() {
        "arkworks" => MsmBackend::Arkworks,
        "enygma-g1" => MsmBackend::EnygmaG1,
        "enygma" => MsmBackend::Enygma,
        other => panic!("unknown backend {other}"),
    });
    // `TABLES=1`: also prove with the precomputed MSM tables (`enygma-server --precompute`).
    let with_tables = std::env::var_os("TABLES").is_some_and(|v| v == "1");
    let k = 6;
    let (setup, proving) = sample_transfer(k, &mut ChaCha20Rng::seed_from_u64(4));
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let started = Instant::now();
    let (pk, vk) = Groth16::circuit_specific_setup(setup.clone(), &mut rng).unwrap();
    eprintln!("setup {:.1} s", started.elapsed().as_secs_f64());
    let shape = r1cs(setup).unwrap();
    let (matrices, instance, constraints) = (
        &shape.matrices,
        shape.num_instance_variables,
        shape.num_constraints,
    );
    let assignment = full_assignment(proving).unwrap();
    let key = SparseProvingKey::new(pk.clone()).unwrap();
    let tables = with_tables.then(|| {
        let started = Instant::now();
        let tables = PrecomputedQueries::new(&key);
        eprintln!(
            "tables {:.1} MiB in {:.1} s",
            tables.memory_bytes() as f64 / (1 << 20) as f64,
            started.elapsed().as_secs_f64()
        );
        tables
    });

    let zeros = assignment.iter().filter(|x| x.is_zero()).count();
    let ones = assignment.iter().filter(|x| **x == Fr::from(1u64)).count();
    let identities = |q: &[ark_bn254::G1Affine]| q.iter().filter(|p| p.is_zero()).count();
    println!(
        "k={k}: {constraints} constraints, {instance} instance variables, {} variables; assignment: {zeros} zero, {ones} one",
        assignment.len()
    );
    println!(
        "identity points: a_query {}/{}, b_g1_query {}/{}, b_g2_query {}/{}, h_query {}/{}, l_query {}/{}",
        identities(&pk.a_query),
        pk.a_query.len(),
        identities(&pk.b_g1_query),
        pk.b_g1_query.len(),
        pk.b_g2_query.iter().filter(|p| p.is_zero()).count(),
        pk.b_g2_query.len(),
        identities(&pk.h_query),
        pk.h_query.len(),
        identities(&pk.l_query),
        pk.l_query.len()
    );

    println!("| threads | prover | witness map | to bigint | MSM A | MSM B G1 | MSM B G2 | MSM H | MSM L | total (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for threads in [1, 2]
        .into_iter()
        .filter(|t| only_threads.is_none_or(|o| o == *t))
    {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let public = &assignment[1..instance];
        let mut ark = Vec::new();
        for _ in 0..if only_backend.is_some() { 0 } else { proofs } {
            let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
            let started = Instant::now();
            let proof = pool.install(|| {
                Groth16::create_proof_with_reduction_and_matrices(
                    &pk,
                    r,
                    s,
                    matrices,
                    instance,
                    constraints,
                    &assignment,
                )
                .unwrap()
            });
            ark.push(started.elapsed());
            assert!(Groth16::verify(&vk, public, &proof).unwrap());
        }
        if !ark.is_empty() {
            println!(
                "| {threads} | ark-groth16 | | | | | | | | {:.0} |",
                median(ark)
            );
        }
        let with_tables = tables.as_ref().map(|t| (MsmBackend::Enygma, Some(t)));
        let settings = [
            (MsmBackend::Arkworks, None),
            (MsmBackend::EnygmaG1, None),
            (MsmBackend::Enygma, None),
        ];
        for (backend, tables) in settings
            .into_iter()
            .chain(with_tables)
            .filter(|(b, _)| only_backend.is_none_or(|o| o == *b))
        {
            let mut all: Vec<PhaseTimings> = Vec::new();
            for _ in 0..proofs {
                let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
                let (proof, t) = pool
                    .install(|| create_proof(&key, tables, &shape, &assignment, r, s, backend))
                    .unwrap();
                assert!(Groth16::verify(&vk, public, &proof).unwrap());
                all.push(t);
            }
            let backend = match tables {
                Some(_) => format!("{backend:?} + tables"),
                None => format!("{backend:?}"),
            };
            let medians: Vec<String> = (0..PhaseTimings::default().named().len())
                .map(|i| {
                    format!(
                        "{:.0}",
                        median(all.iter().map(|t| t.named()[i].1).collect())
                    )
                })
                .collect();
            println!(
                "| {threads} | groth16.rs, {backend} | {} |",
                medians.join(" | ")
            );
        }
    }
}
