//! `msm` against `msm_precomputed` on the scalars of a proof's MSMs, interleaved in one
//! process (the machine is shared, so alternation matters more than repetition):
//!
//! `cargo run --release -p enygma-msm --example precomputed_time -- <g1|g2> <log2 n>
//! <dense|witness> <threads> <rounds> [widths...]`
//!
//! `dense`: n random scalars (the h of the witness map). `witness`: the make-up of a k=6
//! transfer's assignment (27,536 values: 41 % zeros, 24 % ones, 35 % field elements, and 8
//! values of at most 64 bits), drawn at random over n positions. Each round times `msm` once
//! and `msm_precomputed` once per table width (`16 13` by default), each with every arithmetic
//! the CPU has (scalar, then IFMA where detected); medians and ranges over the rounds, with
//! each table's size and build time.

use std::time::Instant;

use ark_bn254::Fr;
use ark_ec::{
    short_weierstrass::{Affine, Projective, SWCurveConfig},
    CurveGroup,
};
use ark_ff::{PrimeField, UniformRand};
use enygma_msm::{msm, msm_precomputed_with, msm_with, Arithmetic, PrecomputedBases, Scalar};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn random_points<P: SWCurveConfig>(n: usize, rng: &mut ChaCha20Rng) -> Vec<Affine<P>> {
    let r: Vec<Projective<P>> = (0..256).map(|_| Projective::rand(rng)).collect();
    let s: Vec<Projective<P>> = (0..256).map(|_| Projective::rand(rng)).collect();
    let points: Vec<Projective<P>> = (0..n).map(|i| r[i / 256 % 256] + s[i % 256]).collect();
    Projective::normalize_batch(&points)
}

fn scalars(n: usize, kind: &str, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    (0..n)
        .map(|_| match kind {
            "dense" => Fr::rand(rng),
            "witness" => match rng.gen_range(0..27_536) {
                0..11_404 => Fr::from(0u64),
                11_404..17_876 => Fr::from(1u64),
                17_876..17_884 => Fr::from(rng.gen::<u64>()),
                _ => Fr::rand(rng),
            },
            other => panic!("scalars {other}: dense or witness"),
        })
        .map(|s| s.into_bigint())
        .collect()
}

fn median(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn run<P: enygma_msm::Curve>(log: usize, kind: &str, rounds: usize, widths: &[usize]) {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let n = 1 << log;
    let bases = random_points::<P>(n, &mut rng);
    let scalars = scalars(n, kind, &mut rng);
    let tables: Vec<PrecomputedBases<P>> = widths
        .iter()
        .map(|&c| {
            let started = Instant::now();
            let table = PrecomputedBases::with_window(&bases, c);
            println!(
                "table c = {c}: {:.1} MiB, {} bytes per base, built in {:.0} ms",
                table.memory_bytes() as f64 / (1 << 20) as f64,
                table.memory_bytes() / n,
                started.elapsed().as_secs_f64() * 1e3
            );
            table
        })
        .collect();
    let expected = msm(&bases, &scalars).into_affine();
    let arithmetics = Arithmetic::available();
    let mut plain = vec![Vec::new(); arithmetics.len()];
    let mut pre = vec![vec![Vec::new(); arithmetics.len()]; tables.len()];
    for _ in 0..rounds {
        for (a, &arithmetic) in arithmetics.iter().enumerate() {
            let started = Instant::now();
            assert_eq!(
                msm_with(&bases, &scalars, arithmetic).into_affine(),
                expected
            );
            plain[a].push(started.elapsed().as_secs_f64() * 1e3);
            for (table, times) in tables.iter().zip(&mut pre) {
                let started = Instant::now();
                let sum = msm_precomputed_with(table, &scalars, arithmetic);
                assert_eq!(sum.into_affine(), expected);
                times[a].push(started.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let (scalar_plain, _, _) = median(&mut plain[0].clone());
    for (a, arithmetic) in arithmetics.iter().enumerate() {
        let (p, lo, hi) = median(&mut plain[a]);
        println!(
            "msm {arithmetic:?}: {p:.1} ms ({lo:.1}-{hi:.1}), {:.2}x msm Scalar",
            p / scalar_plain
        );
        for (c, times) in widths.iter().zip(&mut pre) {
            let (m, lo, hi) = median(&mut times[a]);
            println!(
                "msm_precomputed {arithmetic:?} c = {c}: {m:.1} ms ({lo:.1}-{hi:.1}), {:.2}x msm Scalar",
                m / scalar_plain
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize| -> usize { args[i].parse().expect("a number") };
    let (group, log, kind, threads, rounds) = (&args[0], number(1), &args[2], number(3), number(4));
    let widths: Vec<usize> = if args.len() > 5 {
        (5..args.len()).map(number).collect()
    } else {
        vec![16, 13]
    };
    println!("{group} 2^{log} {kind} scalars, {threads} thread(s), {rounds} rounds");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    pool.install(|| match group.as_str() {
        "g1" => run::<ark_bn254::g1::Config>(log, kind, rounds, &widths),
        "g2" => run::<ark_bn254::g2::Config>(log, kind, rounds, &widths),
        other => panic!("group {other}: g1 or g2"),
    });
}
