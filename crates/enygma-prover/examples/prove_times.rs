//! Proof time of the registry's instances whose key stem contains a filter, on a given number of
//! threads: what `benches/results/` compares with the reference's proof times, run by a script
//! that alternates it with the reference's own prover (A B A B ...).
//!
//! `cargo run --release -p enygma-prover --example prove_times -- FILTER THREADS PROOFS
//! [REAL_INPUTS [tables]]`, e.g. `join-split 1 5`. For each matching instance: keys from
//! `keys/` (created as development keys if missing), one warm-up proof, then PROOFS proofs of
//! one generated request, timed as the service times them (`Prover::prove`: witness
//! synthesis, then the proof and its verification). Prints one line per instance with the
//! medians in ms.
//!
//! Until the DvP statements are in the registry, a filter that matches no registry instance
//! falls back to the DvP circuits of `enygma_circuit::dvp` by their own names (the same
//! synthesis, proof and verification calls `Prover::prove` makes, with a seeded setup and
//! inputs from their `generate`, REAL_INPUTS spent notes for a join-split, default 1 as in
//! dvp.md's worked examples; its proving key is cached in the temporary directory). Remove the
//! fallback once the registry has them. `tables` (fallback only) proves with the fixed-base
//! tables of `groth16::PrecomputedQueries`, which the service does not use yet.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use ark_bn254::Bn254;
use ark_ec::AffineRepr;
use ark_ff::{One, Zero};
use ark_groth16::ProvingKey;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use ark_snark::SNARK;
use ark_std::UniformRand;
use enygma_circuit::{
    dvp::{
        join_split::{constraints::JoinSplitCircuit, JoinSplitInputs, TokenKind},
        ownership::{self, constraints::OwnershipCircuit, OwnershipInputs},
    },
    Fr,
};
use enygma_prover::{
    groth16::{self, MsmBackend, PhaseTimings, PrecomputedQueries},
    prepare,
    qap::Groth16,
    statements::{self, Circuit, RequestSpec},
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
}

fn main() {
    let mut args = std::env::args().skip(1);
    let filter = args.next().expect("FILTER (part of a key stem)");
    let threads: usize = args.next().map_or(1, |n| n.parse().expect("THREADS"));
    let proofs: usize = args.next().map_or(5, |n| n.parse().expect("PROOFS"));
    let real_inputs: usize = args.next().map_or(1, |n| n.parse().expect("REAL_INPUTS"));
    let with_tables = args.next().is_some_and(|a| a == "tables");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");

    let keys = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../keys");
    let instances: Vec<_> = statements::instances()
        .filter(|i| i.key_stem().contains(&filter))
        .collect();
    if !instances.is_empty() {
        let prover = Prover::load(&keys, &instances, MissingKeys::Create).expect("keys");
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for instance in instances {
            let body = instance
                .generate(&RequestSpec::default(), &mut rng)
                .expect("a generated request");
            let body = serde_json::to_vec(&body).unwrap();
            let prepared = prepare(instance, &body).expect("a valid request");
            let (mut witness, mut prove) = (Vec::new(), Vec::new());
            pool.install(|| {
                prover.prove(&prepared).expect("warm-up proof");
                for _ in 0..proofs {
                    let (_, t) = prover.prove(&prepared).expect("proof");
                    witness.push(t.witness);
                    prove.push(t.prove);
                }
            });
            let constraints = prover.circuit(instance).unwrap().shape.info.constraints;
            report(&instance.key_stem(), threads, constraints, witness, prove);
        }
        return;
    }

    // Fallback (see the module docs): the DvP circuits straight from enygma-circuit.
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    type MakeCircuit = Box<dyn Fn() -> Circuit + Send + Sync>;
    let mut subjects: Vec<(&str, MakeCircuit, MakeCircuit)> = TokenKind::ALL
        .into_iter()
        .map(|kind| {
            let inputs = JoinSplitInputs::generate(kind, real_inputs, &mut rng);
            (
                kind.name(),
                Box::new(move || Circuit::new(JoinSplitCircuit::for_setup(kind))) as MakeCircuit,
                Box::new(move || Circuit::new(JoinSplitCircuit::for_proving(inputs.clone())))
                    as MakeCircuit,
            )
        })
        .collect();
    let nft = OwnershipInputs::generate(&mut rng);
    subjects.push((
        ownership::NAME,
        Box::new(|| Circuit::new(OwnershipCircuit::for_setup())),
        Box::new(move || Circuit::new(OwnershipCircuit::for_proving(nft.clone()))),
    ));
    for (name, setup, proving) in subjects.into_iter().filter(|s| s.0.contains(&filter)) {
        let r1cs = groth16::r1cs(setup()).unwrap();
        // Seeded setup, cached outside the repository so that alternating runs skip it; the
        // file name carries the circuit's size, so a changed circuit does not reuse its key.
        let cache = std::env::temp_dir().join("enygma-prove-times");
        let cached = cache.join(format!(
            "{name}-{}c-{}v-seed1.pk",
            r1cs.num_constraints, r1cs.num_witness_variables
        ));
        let pk: ProvingKey<Bn254> = match std::fs::read(&cached) {
            Ok(bytes) => ProvingKey::deserialize_uncompressed_unchecked(&bytes[..]).unwrap(),
            Err(_) => {
                let (pk, _) =
                    Groth16::circuit_specific_setup(setup(), &mut ChaCha20Rng::seed_from_u64(1))
                        .unwrap();
                let mut bytes = Vec::new();
                pk.serialize_uncompressed(&mut bytes).unwrap();
                std::fs::create_dir_all(&cache).unwrap();
                std::fs::write(&cached, bytes).unwrap();
                pk
            }
        };
        let pvk = ark_groth16::prepare_verifying_key(&pk.vk);
        // The fixed-base tables the service does not use yet (`groth16::PrecomputedQueries`):
        // built before the timing, as a key would be loaded with them.
        let tables = with_tables.then(|| PrecomputedQueries::new(&pk));
        // What `Prover::prove` does: witness synthesis, then the proof and its verification.
        let prove_once = || -> (Duration, Duration, PhaseTimings) {
            let started = Instant::now();
            let assignment = groth16::full_assignment(proving()).unwrap();
            let witness = started.elapsed();
            let started = Instant::now();
            let mut rng = rand::thread_rng();
            let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
            let (proof, phases) = groth16::create_proof_with_tables(
                &pk,
                tables.as_ref(),
                r,
                s,
                &r1cs.matrices,
                r1cs.num_instance_variables,
                r1cs.num_constraints,
                &assignment,
                MsmBackend::Enygma,
            )
            .unwrap();
            let public_inputs = &assignment[1..r1cs.num_instance_variables];
            assert!(
                ark_groth16::Groth16::<Bn254>::verify_with_processed_vk(
                    &pvk,
                    public_inputs,
                    &proof
                )
                .unwrap(),
                "the proof verifies"
            );
            (witness, started.elapsed(), phases)
        };
        let (mut witness, mut prove, mut phases) = (Vec::new(), Vec::new(), Vec::new());
        pool.install(|| {
            prove_once();
            for _ in 0..proofs {
                let (w, p, t) = prove_once();
                witness.push(w);
                prove.push(p);
                phases.push(t);
            }
        });
        let label = if with_tables {
            format!("{name}+tables")
        } else {
            name.to_string()
        };
        report(&label, threads, r1cs.num_constraints, witness, prove);
        let name = label;
        // Why the time is what it is: an MSM costs little for the zero and one scalars (skipped
        // or added directly), so the full-size values of the witness set its cost.
        let assignment = groth16::full_assignment(proving()).unwrap();
        let zeros = assignment.iter().filter(|x| x.is_zero()).count();
        let ones = assignment.iter().filter(|x| x.is_one()).count();
        let phase = |f: fn(&PhaseTimings) -> Duration| median_ms(phases.iter().map(f).collect());
        let bases = |identities: usize, all: usize| format!("{}/{all}", all - identities);
        let msm_bases = format!(
            "a={} b_g1={} b_g2={} h={} l={}",
            bases(
                pk.a_query
                    .iter()
                    .filter(|p| AffineRepr::is_zero(*p))
                    .count(),
                pk.a_query.len()
            ),
            bases(
                pk.b_g1_query
                    .iter()
                    .filter(|p| AffineRepr::is_zero(*p))
                    .count(),
                pk.b_g1_query.len()
            ),
            bases(
                pk.b_g2_query
                    .iter()
                    .filter(|p| AffineRepr::is_zero(*p))
                    .count(),
                pk.b_g2_query.len()
            ),
            bases(
                pk.h_query
                    .iter()
                    .filter(|p| AffineRepr::is_zero(*p))
                    .count(),
                pk.h_query.len()
            ),
            bases(
                pk.l_query
                    .iter()
                    .filter(|p| AffineRepr::is_zero(*p))
                    .count(),
                pk.l_query.len()
            ),
        );
        println!(
            "SCALARS side=ours circuit={name} variables={} zero={zeros} one={ones} other={} domain=2^{} msm_bases_non_identity: {msm_bases} phases_ms: witness_map={:.0} msm_a={:.0} msm_b_g1={:.0} msm_b_g2={:.0} msm_h={:.0} msm_l={:.0} total={:.0}",
            assignment.len(),
            assignment.len() - zeros - ones,
            (r1cs.num_constraints + r1cs.num_instance_variables).next_power_of_two().trailing_zeros(),
            phase(|t| t.witness_map),
            phase(|t| t.msm_a),
            phase(|t| t.msm_b_g1),
            phase(|t| t.msm_b_g2),
            phase(|t| t.msm_h),
            phase(|t| t.msm_l),
            phase(|t| t.total),
        );
    }
}
