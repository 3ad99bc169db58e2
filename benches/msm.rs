//! BN254 G1 MSM: enygma-msm against ark-ec's `msm_bigint` at the sizes of the k=6 proof's
//! queries (2^15) and one size up, on 1 and 2 threads.
//! Run with `cargo bench -p enygma-msm`; results with the machine go to benches/results/.

use ark_bn254::{Fr, G1Affine, G1Projective};
use ark_ec::{CurveGroup, VariableBaseMSM};
use ark_ff::PrimeField;
use ark_std::UniformRand;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn bench(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    let max = 1 << 16;
    let points: Vec<G1Projective> = (0..max).map(|_| G1Projective::rand(&mut rng)).collect();
    let bases = G1Projective::normalize_batch(&points);
    let scalars: Vec<_> = (0..max).map(|_| Fr::rand(&mut rng).into_bigint()).collect();

    let mut group = c.benchmark_group("msm-g1");
    group.sample_size(10);
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for log in [15, 16] {
            let (b, s): (&[G1Affine], _) = (&bases[..1 << log], &scalars[..1 << log]);
            let id = format!("2^{log}, {threads} thread(s)");
            group.bench_function(BenchmarkId::new("ark-ec msm_bigint", &id), |bench| {
                bench.iter(|| pool.install(|| G1Projective::msm_bigint(b, s)))
            });
            group.bench_function(BenchmarkId::new("enygma-msm", &id), |bench| {
                bench.iter(|| pool.install(|| enygma_msm::msm(b, s)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
