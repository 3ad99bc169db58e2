//! Proof time of the registry's instances whose key stem contains a filter, on a given number of
//! threads: what `benches/results/` compares with the reference's proof times, run by a script
//! that alternates it with the reference's own prover (A B A B ...).
//!
//! `cargo run --release -p enygma-prover --example prove_times -- FILTER THREADS PROOFS
//! [tables]`, e.g. `join-split 1 5`. For each matching instance: keys from `keys/` (created as
//! development keys if missing), one warm-up proof, then PROOFS proofs of one generated request,
//! timed as the service times them (`Prover::prove`: witness synthesis, then the proof and its
//! verification). `tables` proves with the fixed-base MSM tables (`enygma-server
//! --precompute`). Prints one line per instance with the medians in ms.
//!
//! (The DvP figures of `benches/results/2026-12-03-dvp-reference.md` were taken before the DvP
//! statements joined the registry, through the same calls on enygma-circuit's circuits; that
//! path is gone now that the registry has them.)

use std::{path::Path, time::Duration};

use enygma_prover::{
    groth16::PhaseTimings,
    prepare,
    statements::{self, RequestSpec},
    MissingKeys, Prover,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn median_ms(mut v: Vec<Duration>) -> f64 {
    v.sort();
    let n = v.len();
    let mid = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    };
    mid.as_secs_f64() * 1e3
}

fn report(
    name: &str,
    threads: usize,
    constraints: usize,
    witness: Vec<Duration>,
    prove: Vec<Duration>,
    phases: Vec<PhaseTimings>,
) {
    let each: Vec<String> = prove
        .iter()
        .map(|d| format!("{:.0}", d.as_secs_f64() * 1e3))
        .collect();
    let total: Vec<Duration> = witness.iter().zip(&prove).map(|(w, p)| *w + *p).collect();
    println!(
        "RESULT side=ours circuit={name} constraints={constraints} threads={threads} n={} witness_ms={:.1} prove_ms_median={:.1} total_ms_median={:.1} prove_ms=[{}]",
        prove.len(),
        median_ms(witness),
        median_ms(prove),
        median_ms(total),
        each.join(" ")
    );
    // The phases overlap on two threads (see `PhaseTimings`): each median is of that phase's
    // own wall-clock time, and `total` is create_proof's whole time (prove less verification).
    let medians: Vec<String> = PhaseTimings::default()
        .named()
        .iter()
        .enumerate()
        .map(|(i, (phase, _))| {
            let times = phases.iter().map(|p| p.named()[i].1).collect();
            format!("{phase}={:.1}", median_ms(times))
        })
        .collect();
    println!(
        "PHASES circuit={name} threads={threads} {}",
        medians.join(" ")
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let filter = args.next().expect("FILTER (part of a key stem)");
    let threads: usize = args.next().map_or(1, |n| n.parse().expect("THREADS"));
    let proofs: usize = args.next().map_or(5, |n| n.parse().expect("PROOFS"));
    let with_tables = args.next().is_some_and(|a| a == "tables");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");

    let keys = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../keys");
    let instances: Vec<_> = statements::instances()
        .filter(|i| i.key_stem().contains(&filter))
        .collect();
    assert!(
        !instances.is_empty(),
        "no instance's key stem contains {filter:?}"
    );
    let mut prover = Prover::load(&keys, &instances, MissingKeys::Create).expect("keys");
    if with_tables {
        prover.precompute(&instances).expect("tables");
    }
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for instance in instances {
        let body = instance
            .generate(&RequestSpec::default(), &mut rng)
            .expect("a generated request");
        let body = serde_json::to_vec(&body).unwrap();
        let prepared = prepare(instance, &body).expect("a valid request");
        let (mut witness, mut prove, mut phases) = (Vec::new(), Vec::new(), Vec::new());
        pool.install(|| {
            prover.prove(&prepared).expect("warm-up proof");
            for _ in 0..proofs {
                let (_, t) = prover.prove(&prepared).expect("proof");
                witness.push(t.witness);
                prove.push(t.prove);
                phases.push(t.phases);
            }
        });
        let constraints = prover.circuit(instance).unwrap().shape.info.constraints;
        let label = if with_tables {
            format!("{}+tables", instance.key_stem())
        } else {
            instance.key_stem()
        };
        report(&label, threads, constraints, witness, prove, phases);
    }
}
