//! The window width the cost model picks against the measured best: for each size, the median
//! time of `msm_with_window` at every width around `window_bits`'s choice, on the current
//! thread count, with the CPU's fastest arithmetic.
//!
//! `cargo run --release -p enygma-msm --example window_sweep -- <g1|g2> <threads> <runs>
//! <size>...`, e.g. `g1 1 9 4400 8192 32768`. Prints one line per size and width, the model's
//! choice marked `*`.

use std::time::{Duration, Instant};

use ark_bn254::{g1, g2, Fr};
use ark_ec::{
    short_weierstrass::{Affine, Projective},
    CurveGroup,
};
use ark_ff::PrimeField;
use ark_std::UniformRand;
use enygma_msm::{msm_with_window, window_bits, Arithmetic, Curve};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn sweep<P: Curve>(sizes: &[usize], runs: usize, rng: &mut ChaCha20Rng) {
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let points: Vec<Projective<P>> = (0..largest).map(|_| Projective::<P>::rand(rng)).collect();
    let bases: Vec<Affine<P>> = Projective::normalize_batch(&points);
    let scalars: Vec<_> = (0..largest).map(|_| Fr::rand(rng).into_bigint()).collect();
    for &n in sizes {
        let chosen = window_bits(n);
        for c in chosen.saturating_sub(3).max(2)..=(chosen + 3).min(15) {
            let mut times: Vec<Duration> = (0..runs)
                .map(|_| {
                    let started = Instant::now();
                    let sum =
                        msm_with_window(&bases[..n], &scalars[..n], c, Arithmetic::detected());
                    let _ = std::hint::black_box(sum);
                    started.elapsed()
                })
                .collect();
            times.sort();
            let mark = if c == chosen { "*" } else { " " };
            println!(
                "n={n} c={c}{mark} {:.2} ms",
                times[runs / 2].as_secs_f64() * 1e3
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let group = args.get(1).map_or("g1", |a| a.as_str());
    let threads: usize = args.get(2).map_or(1, |a| a.parse().expect("threads"));
    let runs: usize = args.get(3).map_or(9, |a| a.parse().expect("runs"));
    let sizes: Vec<usize> = args[4.min(args.len())..]
        .iter()
        .map(|a| a.parse().expect("size"))
        .collect();
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    pool.install(|| match group {
        "g2" => sweep::<g2::Config>(&sizes, runs, &mut rng),
        _ => sweep::<g1::Config>(&sizes, runs, &mut rng),
    });
}
