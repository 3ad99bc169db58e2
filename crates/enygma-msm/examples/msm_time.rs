//! Runs one MSM size repeatedly on the current thread count, for `perf stat` / `perf record`:
//! `cargo run --release -p enygma-msm --example msm_time -- <log2 size> <ark|enygma> <runs>`.

use ark_bn254::{Fr, G1Projective};
use ark_ec::{CurveGroup, VariableBaseMSM};
use ark_ff::PrimeField;
use ark_std::UniformRand;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let log: usize = args.get(1).map_or(15, |a| a.parse().unwrap());
    let which = args.get(2).map_or("enygma", |a| a.as_str()).to_string();
    let runs: usize = args.get(3).map_or(5, |a| a.parse().unwrap());
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    if which == "field" {
        // Cost of the field operations the cost model counts, in ns.
        use ark_ff::Field;
        let mut x = ark_bn254::Fq::rand(&mut rng);
        let y = ark_bn254::Fq::rand(&mut rng);
        let t = Instant::now();
        for _ in 0..1_000_000 {
            x *= y;
        }
        let mul = t.elapsed().as_nanos() as f64 / 1e6;
        let t = Instant::now();
        for _ in 0..10_000 {
            x = x.inverse().unwrap() + y;
        }
        let inv = t.elapsed().as_nanos() as f64 / 1e4;
        println!("Fq mul {mul:.1} ns, inverse {inv:.0} ns ({x})");
        return;
    }
    let n = 1usize << log;
    let points: Vec<G1Projective> = (0..n).map(|_| G1Projective::rand(&mut rng)).collect();
    let bases = G1Projective::normalize_batch(&points);
    let scalars: Vec<_> = (0..n).map(|_| Fr::rand(&mut rng).into_bigint()).collect();
    let started = Instant::now();
    let mut check = G1Projective::default();
    for _ in 0..runs {
        check += match which.as_str() {
            "ark" => G1Projective::msm_bigint(&bases, &scalars),
            _ => enygma_msm::msm(&bases, &scalars),
        };
    }
    println!(
        "{which} 2^{log}: {:.1} ms per MSM ({check:?})",
        started.elapsed().as_secs_f64() * 1e3 / runs as f64
    );
}
