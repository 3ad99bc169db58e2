//! Criterion benchmarks of the k=6 transfer proof (the reference's `transfer-k6.json`):
//! request to proof on 1 thread and on all threads, without and with the precomputed MSM
//! tables (`enygma-server --precompute`), witness synthesis alone, verification, key loading.
//! Run with `cargo bench -p enygma-prover`; results with the machine go to benches/results/.

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use enygma_prover::{prepare, statements, CircuitKeys, MissingKeys, Prover};

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

criterion_group!(benches, bench);
criterion_main!(benches);
