//! The Rust side of the peer benchmark (`benches/peers/run.sh`): writes the inputs that
//! gnark-crypto's MultiExp and enygma-msm both read, and times enygma-msm on them.
//!
//! `cargo run --release -p enygma-msm --example peer_msm -- write <dir>` writes 2^16 random
//! scalars and G1 and G2 bases (the formats are those `benches/peers/gnark/main.go` reads);
//! `... -- run <dir> <g1|g2> <log2 size> <threads> <runs> [plain|pre|pre<c>][-scalar]` prints
//! the median time of `msm` (plain, the default) or of `msm_precomputed` (`pre`: the table's
//! own window width, `pre14`: width 14) over the first 2^log of them and the result, in the
//! line format of the Go side; `-scalar` times the scalar bucket arithmetic instead of the
//! CPU's fastest (AVX-512 IFMA where there is one). The table is built before the timing, as a
//! prover builds it when it loads a key; its size and build time go to stderr.
//!
//! The timed work is the same as gnark's `G1Affine.MultiExp`: scalars out of Montgomery form,
//! the MSM, the result to affine.

use std::{fs, path::Path, time::Instant};

use ark_bn254::{Fq, Fr};
use ark_ec::{
    short_weierstrass::{Affine, Projective, SWCurveConfig},
    CurveGroup,
};
use ark_ff::{BigInteger, PrimeField, UniformRand};
use enygma_msm::{msm_precomputed_with, Arithmetic, PrecomputedBases};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

const LOG_MAX: usize = 16;

fn be(x: &Fq) -> Vec<u8> {
    x.into_bigint().to_bytes_be()
}

fn from_be(b: &[u8]) -> Fq {
    Fq::from_be_bytes_mod_order(b)
}

/// `n` random points as sums `R_i + S_j` of two tables of 256 random points: as good as
/// random for an MSM, and 2^16 additions instead of 2^16 scalar multiplications.
fn random_points<P: SWCurveConfig>(n: usize, rng: &mut ChaCha20Rng) -> Vec<Affine<P>> {
    let r: Vec<Projective<P>> = (0..256).map(|_| Projective::rand(rng)).collect();
    let s: Vec<Projective<P>> = (0..256).map(|_| Projective::rand(rng)).collect();
    let points: Vec<Projective<P>> = (0..n).map(|i| r[i / 256] + s[i % 256]).collect();
    Projective::normalize_batch(&points)
}

fn write(dir: &Path) {
    fs::create_dir_all(dir).expect("create the inputs directory");
    let n = 1 << LOG_MAX;
    let mut rng = ChaCha20Rng::seed_from_u64(20_261_203);
    let scalars: Vec<u8> = (0..n)
        .flat_map(|_| Fr::rand(&mut rng).into_bigint().to_bytes_be())
        .collect();
    let g1: Vec<u8> = random_points::<ark_bn254::g1::Config>(n, &mut rng)
        .iter()
        .flat_map(|p| [be(&p.x), be(&p.y)].concat())
        .collect();
    let g2: Vec<u8> = random_points::<ark_bn254::g2::Config>(n, &mut rng)
        .iter()
        .flat_map(|p| [be(&p.x.c0), be(&p.x.c1), be(&p.y.c0), be(&p.y.c1)].concat())
        .collect();
    for (name, data) in [("scalars.bin", scalars), ("g1.bin", g1), ("g2.bin", g2)] {
        fs::write(dir.join(name), data).expect("write an input file");
    }
}

fn read(dir: &Path, name: &str, n: usize, size: usize) -> Vec<u8> {
    let data = fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(data.len() >= n * size, "{name}: fewer than {n} entries");
    data[..n * size].to_vec()
}

/// Reads `n` points with `decode`, checking that each is on the curve and in the group.
fn points<P: SWCurveConfig>(
    raw: &[u8],
    size: usize,
    decode: impl Fn(&[u8]) -> Affine<P>,
) -> Vec<Affine<P>> {
    raw.chunks_exact(size)
        .map(|b| {
            let p = decode(b);
            assert!(p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve());
            p
        })
        .collect()
}

/// Which MSM to time.
#[derive(Clone, Copy)]
enum Variant {
    Plain,
    /// Precomputed bases, with the cost model's window width or the one given.
    Precomputed(Option<usize>),
}

impl Variant {
    /// The variant and its arithmetic: a `-scalar` suffix (`plain-scalar`, `pre-scalar`) times
    /// the scalar bucket additions, without it the CPU's fastest ([`Arithmetic::detected`]).
    fn parse(s: &str) -> (Self, Arithmetic) {
        match s.strip_suffix("-scalar") {
            Some(s) => (Self::parse_msm(s), Arithmetic::Scalar),
            None => (Self::parse_msm(s), Arithmetic::detected()),
        }
    }

    fn parse_msm(s: &str) -> Self {
        match s {
            "plain" => Variant::Plain,
            "pre" => Variant::Precomputed(None),
            _ => Variant::Precomputed(Some(
                s.strip_prefix("pre")
                    .and_then(|c| c.parse().ok())
                    .unwrap_or_else(|| panic!("variant {s}: plain, pre or pre<c>")),
            )),
        }
    }
}

/// Median time in ms of `runs` timed calls after one warm-up, and the result's coordinates.
fn time<P: enygma_msm::Curve>(
    bases: &[Affine<P>],
    scalars: &[Fr],
    runs: usize,
    (variant, arithmetic): (Variant, Arithmetic),
    coordinates: impl Fn(&Affine<P>) -> String,
) -> (f64, String) {
    let table = match variant {
        Variant::Plain => None,
        Variant::Precomputed(c) => {
            let started = Instant::now();
            let table = match c {
                None => PrecomputedBases::new(bases),
                Some(c) => PrecomputedBases::with_window(bases, c),
            };
            eprintln!(
                "table: c = {}, {:.1} MiB ({} bytes per base), built in {:.0} ms",
                table.window_bits(),
                table.memory_bytes() as f64 / (1 << 20) as f64,
                table.memory_bytes() / bases.len(),
                started.elapsed().as_secs_f64() * 1e3
            );
            Some(table)
        }
    };
    let msm = || {
        let s: Vec<_> = scalars.par_iter().map(|s| s.into_bigint()).collect();
        match &table {
            None => enygma_msm::msm_with(bases, &s, arithmetic),
            Some(table) => msm_precomputed_with(table, &s, arithmetic),
        }
        .into_affine()
    };
    let result = msm();
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            assert_eq!(msm(), result, "two different results");
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[runs / 2], coordinates(&result))
}

fn hex(parts: &[&Fq]) -> String {
    parts
        .iter()
        .flat_map(|x| be(x))
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn run(dir: &Path, group: &str, log: usize, threads: usize, runs: usize, variant: &str) {
    let name = if variant == "plain" {
        "enygma".to_string()
    } else {
        format!("enygma-{variant}")
    };
    let variant = Variant::parse(variant);
    let n = 1 << log;
    let scalars: Vec<Fr> = read(dir, "scalars.bin", n, 32)
        .chunks_exact(32)
        .map(Fr::from_be_bytes_mod_order)
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    let (ms, result) = match group {
        "g1" => {
            let raw = read(dir, "g1.bin", n, 64);
            let bases = points(&raw, 64, |b| {
                Affine::<ark_bn254::g1::Config>::new_unchecked(from_be(&b[..32]), from_be(&b[32..]))
            });
            pool.install(|| {
                time(&bases, &scalars, runs, variant, |p| {
                    format!("{} {}", hex(&[&p.x]), hex(&[&p.y]))
                })
            })
        }
        "g2" => {
            let raw = read(dir, "g2.bin", n, 128);
            let bases = points(&raw, 128, |b| {
                let f = |i: usize| from_be(&b[32 * i..32 * i + 32]);
                Affine::<ark_bn254::g2::Config>::new_unchecked(
                    ark_bn254::Fq2::new(f(0), f(1)),
                    ark_bn254::Fq2::new(f(2), f(3)),
                )
            });
            pool.install(|| {
                time(&bases, &scalars, runs, variant, |p| {
                    format!("{} {}", hex(&[&p.x.c0, &p.x.c1]), hex(&[&p.y.c0, &p.y.c1]))
                })
            })
        }
        other => panic!("group must be g1 or g2, not {other}"),
    };
    println!("{name} {group} 2^{log} threads={threads} median_ms={ms:.2} result={result}");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| -> usize {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("argument {i} must be a number"))
    };
    match args.first().map(String::as_str) {
        Some("write") => write(Path::new(&args[1])),
        Some("run") => run(
            Path::new(&args[1]),
            &args[2],
            arg(3),
            arg(4),
            arg(5),
            args.get(6).map_or("plain", String::as_str),
        ),
        _ => panic!("usage: peer_msm write <dir> | run <dir> <g1|g2> <log2 size> <threads> <runs> [plain|pre|pre<c>]"),
    }
}
