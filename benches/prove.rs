//! Criterion benchmarks of the k=6 transfer proof (the reference's `transfer-k6.json`):
//! request to proof on 1 thread and on all threads, without and with the precomputed MSM
//! tables (`enygma-server --precompute`), witness synthesis alone, verification, key loading,
//! and the witness map's transforms in each arithmetic.
//! Run with `cargo bench -p enygma-prover`; results with the machine go to benches/results/.

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use enygma_prover::{
    fft::CosetFft, prepare, statements, CircuitKeys, MissingKeys, MsmArithmetic, Prover,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bench(c: &mut Criterion) {
    let keys = repo().join("keys");
    let transfer6 = statements::by_stem("transfer-k6").expect("a registry instance");
    let prover = Prover::load(&keys, &[transfer6], MissingKeys::Create).expect("keys");
    let mut with_tables = Prover::load(&keys, &[transfer6], MissingKeys::Refuse).expect("keys");
    with_tables.precompute(&[transfer6]).expect("tables");
    let body = std::fs::read(repo().join("../shared/reference/requests/transfer-k6.json"))
        .expect("sample");

    let mut group = c.benchmark_group("transfer-k6");
    group.sample_size(10);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    for n in [1, threads] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap();
        for (prover, tables) in [(&prover, ""), (&with_tables, ", precomputed tables")] {
            group.bench_function(format!("request to proof, {n} thread(s){tables}"), |b| {
                b.iter(|| {
                    pool.install(|| prover.prove(&prepare(transfer6, &body).unwrap()).unwrap())
                })
            });
        }
    }
    let prepared = prepare(transfer6, &body).unwrap();
    group.bench_function("parse and native checks", |b| {
        b.iter(|| prepare(transfer6, &body).unwrap())
    });
    group.bench_function("witness synthesis", |b| {
        b.iter(|| prover.assignment(&prepared).unwrap())
    });
    // What every proof's self-check and every call of the verify route costs.
    let (response, _) = prover.prove(&prepared).unwrap();
    group.bench_function("verify a proof", |b| {
        b.iter(|| assert!(prover.verify(transfer6, &response).unwrap()))
    });
    group.bench_function("load keys and matrices (k=6)", |b| {
        b.iter(|| CircuitKeys::load_or_create(&keys, transfer6).unwrap())
    });
    group.finish();
}

/// The witness map's two transforms at the k=6 transfer's size (2^15) on 1 thread, in every
/// arithmetic this CPU has (`enygma_prover::fft`).
fn transforms(c: &mut Criterion) {
    use ark_std::UniformRand;
    use rand::SeedableRng;
    let n = 1 << 15;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let values: Vec<enygma_circuit::Fr> = (0..n).map(|_| UniformRand::rand(&mut rng)).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut group = c.benchmark_group("transforms 2^15, 1 thread");
    for arithmetic in MsmArithmetic::available() {
        let tables = CosetFft::with_arithmetic(n, arithmetic).expect("a supported size");
        let mut x = values.clone();
        group.bench_function(format!("domain to coset, {arithmetic:?}"), |b| {
            b.iter(|| pool.install(|| tables.domain_to_coset(&mut x)))
        });
        group.bench_function(format!("coset to coefficients, {arithmetic:?}"), |b| {
            b.iter(|| pool.install(|| tables.coset_to_coefficients(&mut x)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench, transforms);
criterion_main!(benches);
