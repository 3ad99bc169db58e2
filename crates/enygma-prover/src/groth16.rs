//! Groth16 proof assembly from cached matrices, with a choice of G1 MSM and a time per phase.
//!
//! It computes exactly what ark-groth16's `create_proof_with_reduction_and_matrices` computes
//! with the reduction the keys are made for, [`qap::OrientedReduction`] or
//! [`qap::CircomOrientedReduction`] as the key says ([`qap::Reduction`]; the same proof for the
//! same `r` and `s`), from its public pieces: the key's QAP witness map of the oriented
//! matrices for `h` ([`qap::witness_map`], [`qap::witness_map_circom`]), then
//! - `A = α + Σ aᵢ·a_queryᵢ + r·δ` (G1),
//! - `B = β + Σ aᵢ·b_queryᵢ + s·δ` (G2, and in G1 for C),
//! - `C = Σ wᵢ·l_queryᵢ + Σ hᵢ·h_queryᵢ + s·A + r·B₁ − r·s·δ`.
//!
//! Four things differ from ark-groth16: the witness map's transforms skip the bit-reversal
//! passes ([`crate::fft`]); the five MSMs (four in G1, one in G2) can use [`enygma_msm`]
//! (batch-affine, signed digits); they run concurrently when the rayon pool has more than
//! one thread, where ark-groth16 runs them one after another, and all but H's run beside the
//! witness map, which only H needs; and B's MSMs run over the variables B has only
//! ([`SparseProvingKey`]), not over identity points.

use std::time::{Duration, Instant};

use ark_bn254::{g1, g2, Bn254, G1Affine, G1Projective, G2Affine, G2Projective};
#[cfg(any(test, feature = "bench"))]
use ark_ec::VariableBaseMSM;
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::PrimeField;
use ark_groth16::Proof;
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, Matrix, OptimizationGoal, SynthesisError,
    SynthesisMode, R1CS_PREDICATE_LABEL,
};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use enygma_circuit::Fr;
use enygma_msm::{msm_precomputed, PrecomputedBases};
use rayon::prelude::*;

pub use crate::proving_key::SparseProvingKey;
use crate::{
    matrix::{CompactMatrix, Rows},
    qap,
    wipe::Wiped,
};

type Scalar = <Fr as PrimeField>::BigInt;

/// Which implementation computes the MSMs. The service proves with [`MsmBackend::Enygma`]; the
/// other two exist to measure it (`examples/proof_phases.rs`) and to test it against arkworks,
/// so they are built only for tests and with the `bench` feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsmBackend {
    /// ark-ec's `VariableBaseMSM::msm_bigint`, as ark-groth16 uses it.
    #[cfg(any(test, feature = "bench"))]
    Arkworks,
    /// [`enygma_msm::msm`] in G1, ark-ec in G2 (for measuring the G2 MSM's share).
    #[cfg(any(test, feature = "bench"))]
    EnygmaG1,
    /// [`enygma_msm::msm`] in G1 and G2: what the service proves with.
    Enygma,
}

/// Wall-clock time of each phase of one proof. When the MSMs run concurrently their times
/// overlap, and `total` is less than the sum.
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseTimings {
    /// The QAP witness map: constraint evaluation and the transforms giving `h` ([`crate::fft`]).
    pub witness_map: Duration,
    /// Converting the assignment and `h` out of Montgomery form for the MSMs (the sum of the
    /// two, which run on different branches).
    pub to_bigint: Duration,
    pub msm_a: Duration,
    pub msm_b_g1: Duration,
    pub msm_b_g2: Duration,
    pub msm_h: Duration,
    pub msm_l: Duration,
    pub total: Duration,
}

impl PhaseTimings {
    /// Every phase with its field's name, in this order (`total` last): what a report lists.
    pub fn named(&self) -> [(&'static str, Duration); 8] {
        [
            ("witness_map", self.witness_map),
            ("to_bigint", self.to_bigint),
            ("msm_a", self.msm_a),
            ("msm_b_g1", self.msm_b_g1),
            ("msm_b_g2", self.msm_b_g2),
            ("msm_h", self.msm_h),
            ("msm_l", self.msm_l),
            ("total", self.total),
        ]
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed())
}

/// Runs `a` and `b`, concurrently when the current pool has a second thread. `rayon::join`
/// on one thread would run them in order anyway; the check only keeps that path obvious.
fn both<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    if rayon::current_num_threads() > 1 {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}

fn msm_g1(
    backend: MsmBackend,
    bases: &[G1Affine],
    table: Option<&PrecomputedBases<g1::Config>>,
    scalars: &[Scalar],
) -> G1Projective {
    match (backend, table) {
        #[cfg(any(test, feature = "bench"))]
        (MsmBackend::Arkworks, _) => G1Projective::msm_bigint(bases, scalars),
        (_, Some(table)) => msm_precomputed(table, scalars),
        (_, None) => enygma_msm::msm(bases, scalars),
    }
}

fn msm_g2(
    backend: MsmBackend,
    bases: &[G2Affine],
    table: Option<&PrecomputedBases<g2::Config>>,
    scalars: &[Scalar],
) -> G2Projective {
    match (backend, table) {
        #[cfg(any(test, feature = "bench"))]
        (MsmBackend::Arkworks | MsmBackend::EnygmaG1, _) => {
            G2Projective::msm_bigint(bases, scalars)
        }
        (_, Some(table)) => msm_precomputed(table, scalars),
        (_, None) => enygma_msm::msm(bases, scalars),
    }
}

/// Fixed-base tables of a proving key's five MSM queries ([`enygma_msm::PrecomputedBases`]),
/// built once per key: each base is stored with its multiples `2^(c·j)·P`, which makes every
/// MSM a single bucket pass. Each table takes the width the cost model picks for its number of
/// bases (16 for a k=6 transfer: 1 KiB per G1 base, 2 KiB per G2 base); on a witness's
/// scalars (zeros and ones skipped, a third full-size) that width measured as fast as
/// narrower ones, with less memory. B's tables hold the variables B has only
/// ([`SparseProvingKey`]). Serialized, they are kept beside the key ([`crate::table_file`]).
#[derive(CanonicalSerialize, CanonicalDeserialize)]
pub struct PrecomputedQueries {
    a: PrecomputedBases<g1::Config>,
    b_g1: PrecomputedBases<g1::Config>,
    b_g2: PrecomputedBases<g2::Config>,
    h: PrecomputedBases<g1::Config>,
    l: PrecomputedBases<g1::Config>,
}

impl PrecomputedQueries {
    pub fn new(key: &SparseProvingKey) -> Self {
        // The constant's query points are added outside the MSMs.
        Self {
            a: PrecomputedBases::new(key.a_query.get(1..).unwrap_or(&[])),
            b_g1: PrecomputedBases::new(&key.b_query.g1),
            b_g2: PrecomputedBases::new(&key.b_query.g2),
            h: PrecomputedBases::new(&key.h_query),
            l: PrecomputedBases::new(&key.l_query),
        }
    }

    /// The bytes [`PrecomputedQueries::new`] will hold for a key with these numbers of points:
    /// A's (the constant included), B's variables (the constant excluded), H's and L's.
    pub fn memory_bytes_for(a: usize, b: usize, h: usize, l: usize) -> usize {
        let g1 = PrecomputedBases::<g1::Config>::memory_bytes_for;
        let g2 = PrecomputedBases::<g2::Config>::memory_bytes_for;
        g1(a.saturating_sub(1)) + g1(b) + g2(b) + g1(h) + g1(l)
    }

    /// [`PrecomputedQueries::memory_bytes_for`] the queries of `key`.
    pub fn memory_bytes_for_key(key: &SparseProvingKey) -> usize {
        Self::memory_bytes_for(
            key.a_query.len(),
            key.b_query.positions.len(),
            key.h_query.len(),
            key.l_query.len(),
        )
    }

    /// Bytes held by the five tables.
    pub fn memory_bytes(&self) -> usize {
        self.a.memory_bytes()
            + self.b_g1.memory_bytes()
            + self.b_g2.memory_bytes()
            + self.h.memory_bytes()
            + self.l.memory_bytes()
    }

    /// Whether the tables were built from `key`'s queries: their lengths, first non-identity
    /// bases (a variable outside A has the identity there, in every key) and last bases.
    /// A guard against wiring the tables of another key, not a proof of origin.
    fn are_for(&self, key: &SparseProvingKey) -> bool {
        fn same<P: enygma_msm::Curve>(
            table: &PrecomputedBases<P>,
            bases: &[ark_ec::short_weierstrass::Affine<P>],
        ) -> bool {
            let first = bases.iter().position(|b| !b.is_zero());
            let last = bases.len().checked_sub(1);
            table.len() == bases.len()
                && [first, last]
                    .into_iter()
                    .flatten()
                    .all(|i| *table.base(i) == bases[i])
        }
        same(&self.a, &key.a_query[1..])
            && same(&self.b_g1, &key.b_query.g1)
            && same(&self.b_g2, &key.b_query.g2)
            && same(&self.h, &key.h_query)
            && same(&self.l, &key.l_query)
    }
}

/// A Groth16 proof of `full_assignment` (the constant 1, the public inputs, then the witness)
/// for `r1cs`, with randomness `r` and `s`, and the enygma MSMs over `tables` (built from `key`
/// by [`PrecomputedQueries::new`]) when given: the same proof, faster.
///
/// The proof is the one ark-groth16's `create_proof_with_reduction_and_matrices` returns for
/// the key `key` was made from, the same matrices, assignment, `r` and `s`.
pub fn create_proof<M: Rows>(
    key: &SparseProvingKey,
    tables: Option<&PrecomputedQueries>,
    r1cs: &R1cs<M>,
    full_assignment: &[Fr],
    r: Fr,
    s: Fr,
    msm: MsmBackend,
) -> Result<(Proof<Bn254>, PhaseTimings), SynthesisError> {
    let started = Instant::now();
    let mut t = PhaseTimings::default();
    let variables = full_assignment.len();
    let num_instance_variables = r1cs.num_instance_variables;
    // A key of another circuit would otherwise give a wrong proof silently: the MSMs stop at
    // the shorter of bases and scalars.
    if num_instance_variables == 0
        || num_instance_variables > variables
        || key.num_variables() != variables
        || key.l_query.len() != variables - num_instance_variables
        || key.h_query.len()
            != key
                .reduction
                .h_query_len((r1cs.num_constraints + num_instance_variables).next_power_of_two())
        || tables.is_some_and(|t| !t.are_for(key))
    {
        return Err(SynthesisError::Unsatisfiable);
    }

    // Only the H MSM needs the witness map's h: A, B and L start at once, beside it, so that on
    // two threads the transforms overlap the other four MSMs instead of preceding them.
    // Every vector below is derived from the assignment, hence from the request's secrets:
    // each is wiped when dropped (`crate::wipe`), on every path out of this function.
    // The constant 1 is not a scalar of the MSMs: its query points are added directly.
    let (h_side, assignment_side) = both(
        || -> Result<_, SynthesisError> {
            let (h, witness_map) = timed(|| {
                key.reduction.witness_map(
                    &r1cs.matrices,
                    num_instance_variables,
                    r1cs.num_constraints,
                    full_assignment,
                )
            });
            let h = Wiped::new("qap h", h?);
            let (h, to_bigint) =
                timed(|| h.par_iter().map(|x| x.into_bigint()).collect::<Vec<_>>());
            let h = Wiped::new("qap h scalars", h);
            let h_acc = timed(|| msm_g1(msm, &key.h_query, tables.map(|t| &t.h), &h));
            Ok((witness_map, to_bigint, h_acc))
        },
        || {
            let (assignment, to_bigint) = timed(|| {
                full_assignment[1..]
                    .par_iter()
                    .map(|x| x.into_bigint())
                    .collect::<Vec<_>>()
            });
            let assignment = Wiped::new("assignment scalars", assignment);
            let witness = &assignment[num_instance_variables - 1..];
            let in_b = Wiped::new("b scalars", key.b_query.gather(&assignment));
            let g1 = |bases: &[G1Affine], table, scalars: &[Scalar]| {
                timed(|| msm_g1(msm, bases, table, scalars))
            };
            let (l_and_a, b) = both(
                || {
                    both(
                        || g1(&key.l_query, tables.map(|t| &t.l), witness),
                        || g1(&key.a_query[1..], tables.map(|t| &t.a), &assignment),
                    )
                },
                || {
                    both(
                        || g1(&key.b_query.g1, tables.map(|t| &t.b_g1), &in_b),
                        || timed(|| msm_g2(msm, &key.b_query.g2, tables.map(|t| &t.b_g2), &in_b)),
                    )
                },
            );
            (to_bigint, l_and_a, b)
        },
    );
    let (witness_map, h_to_bigint, (h_acc, msm_h)) = h_side?;
    let (to_bigint, ((l_acc, msm_l), (a_acc, msm_a)), ((b1_acc, msm_b_g1), (b2_acc, msm_b_g2))) =
        assignment_side;
    t.witness_map = witness_map;
    t.to_bigint = to_bigint + h_to_bigint;
    (t.msm_h, t.msm_l, t.msm_a, t.msm_b_g1, t.msm_b_g2) = (msm_h, msm_l, msm_a, msm_b_g1, msm_b_g2);

    let delta_g1 = key.delta_g1;
    let g_a = a_acc + key.a_query[0] + key.vk.alpha_g1 + delta_g1 * r;
    let g1_b = b1_acc + key.b_query.constant_g1 + key.beta_g1 + delta_g1 * s;
    let g2_b = b2_acc + key.b_query.constant_g2 + key.vk.beta_g2 + key.vk.delta_g2 * s;
    let g_c = g_a * s + g1_b * r - delta_g1 * (r * s) + l_acc + h_acc;
    let proof = Proof {
        a: g_a.into_affine(),
        b: g2_b.into_affine(),
        c: g_c.into_affine(),
    };
    t.total = started.elapsed();
    Ok((proof, t))
}

/// A circuit's R1CS as the prover needs it: the matrices `[A, B, C]` and its sizes.
pub struct R1cs<M = Matrix<Fr>> {
    pub matrices: Vec<M>,
    /// Instance variables including the constant 1.
    pub num_instance_variables: usize,
    pub num_witness_variables: usize,
    pub num_constraints: usize,
}

impl R1cs {
    /// The same R1CS with its matrices in the compact form kept for the life of a prover
    /// ([`CompactMatrix`]); the ark-relations form is freed.
    pub fn compact(self) -> Result<R1cs<CompactMatrix>, SynthesisError> {
        Ok(R1cs {
            matrices: self
                .matrices
                .iter()
                .map(CompactMatrix::new)
                .collect::<Result<_, _>>()?,
            num_instance_variables: self.num_instance_variables,
            num_witness_variables: self.num_witness_variables,
            num_constraints: self.num_constraints,
        })
    }
}

/// The file form of the compact R1CS (kept between runs: [`crate::cache`]); reading checks that
/// it has three matrices of one row per constraint whose terms name existing variables.
impl CanonicalSerialize for R1cs<CompactMatrix> {
    fn serialize_with_mode<W: ark_serialize::Write>(
        &self,
        mut writer: W,
        compress: ark_serialize::Compress,
    ) -> Result<(), ark_serialize::SerializationError> {
        self.matrices.serialize_with_mode(&mut writer, compress)?;
        for n in [
            self.num_instance_variables,
            self.num_witness_variables,
            self.num_constraints,
        ] {
            (n as u64).serialize_with_mode(&mut writer, compress)?;
        }
        Ok(())
    }

    fn serialized_size(&self, compress: ark_serialize::Compress) -> usize {
        self.matrices.serialized_size(compress) + 3 * 8
    }
}

impl ark_serialize::Valid for R1cs<CompactMatrix> {
    fn check(&self) -> Result<(), ark_serialize::SerializationError> {
        let variables = self.num_instance_variables + self.num_witness_variables;
        let shaped = self.matrices.len() == 3
            && self.num_instance_variables > 0
            && self.matrices.iter().all(|m| {
                m.num_rows() == self.num_constraints
                    && m.max_variable().is_none_or(|v| v < variables)
            });
        if shaped {
            Ok(())
        } else {
            Err(ark_serialize::SerializationError::InvalidData)
        }
    }
}

impl CanonicalDeserialize for R1cs<CompactMatrix> {
    fn deserialize_with_mode<R: ark_serialize::Read>(
        mut reader: R,
        compress: ark_serialize::Compress,
        validate: ark_serialize::Validate,
    ) -> Result<Self, ark_serialize::SerializationError> {
        let matrices: Vec<CompactMatrix> =
            Vec::deserialize_with_mode(&mut reader, compress, validate)?;
        let mut count = || -> Result<usize, ark_serialize::SerializationError> {
            usize::try_from(u64::deserialize_with_mode(&mut reader, compress, validate)?)
                .map_err(|_| ark_serialize::SerializationError::InvalidData)
        };
        let r1cs = R1cs {
            matrices,
            num_instance_variables: count()?,
            num_witness_variables: count()?,
            num_constraints: count()?,
        };
        ark_serialize::Valid::check(&r1cs)?;
        Ok(r1cs)
    }
}

/// The R1CS of a circuit, from a setup-mode synthesis, oriented as the keys of
/// [`crate::qap::OrientedReduction`] expect.
pub fn r1cs<C: ConstraintSynthesizer<Fr>>(circuit: C) -> Result<R1cs, SynthesisError> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(SynthesisMode::Setup);
    circuit.generate_constraints(cs.clone())?;
    cs.finalize();
    let mut matrices = cs
        .to_matrices()?
        .remove(R1CS_PREDICATE_LABEL)
        .ok_or(SynthesisError::MissingCS)?;
    qap::orient(&mut matrices);
    Ok(R1cs {
        matrices,
        num_instance_variables: cs.num_instance_variables(),
        num_witness_variables: cs.num_witness_variables(),
        num_constraints: cs.num_constraints(),
    })
}

/// The full assignment (the constant 1, the public inputs, then the witness) from a
/// witness-only synthesis, wiped when dropped.
pub fn full_assignment<C: ConstraintSynthesizer<Fr>>(
    circuit: C,
) -> Result<Wiped<Fr>, SynthesisError> {
    full_assignment_sized(circuit, None)
}

/// [`full_assignment`], for a circuit of `sizes` = (instance variables with the constant 1,
/// witness variables) when known: the constraint system's vectors are then allocated at their
/// final sizes, so that no reallocation during synthesis leaves a copy of the witness in freed
/// memory. (Without sizes, or with wrong ones, the result is the same; only that guarantee is
/// lost.) The constraint system's own vectors are wiped before it is freed, also when synthesis
/// fails.
pub fn full_assignment_sized<C: ConstraintSynthesizer<Fr>>(
    circuit: C,
    sizes: Option<(usize, usize)>,
) -> Result<Wiped<Fr>, SynthesisError> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(SynthesisMode::Prove {
        construct_matrices: false,
        generate_lc_assignments: false,
    });
    let wipe_on_exit = WipeAssignments(cs.clone());
    if let Some((instance, witness)) = sizes {
        let mut inner = cs.borrow_mut().ok_or(SynthesisError::MissingCS)?;
        // The instance vector becomes the full assignment: room for the witness too.
        let assignments = &mut inner.assignments;
        assignments.instance_assignment.reserve_exact(
            (instance + witness).saturating_sub(assignments.instance_assignment.len()),
        );
        assignments.witness_assignment.reserve_exact(witness);
    }
    circuit.generate_constraints(cs.clone())?;
    let assignment = {
        let mut inner = cs.borrow_mut().ok_or(SynthesisError::MissingCS)?;
        let assignments = &mut inner.assignments;
        let mut full = Wiped::new(
            "assignment",
            std::mem::take(&mut assignments.instance_assignment),
        );
        full.extend_from_slice(&assignments.witness_assignment);
        full
    };
    drop(wipe_on_exit);
    Ok(assignment)
}

/// Wipes a constraint system's assignment vectors when dropped: the witness the synthesis wrote
/// there, before the system is freed.
struct WipeAssignments(ark_relations::gr1cs::ConstraintSystemRef<Fr>);

impl Drop for WipeAssignments {
    fn drop(&mut self) {
        // Not borrowed at this point on any path: the synthesis' borrows have ended (and on
        // an unwinding panic, their guards were dropped in the frames below this one).
        if let Some(mut cs) = self.0.borrow_mut() {
            let a = &mut cs.assignments;
            crate::wipe::wipe("cs instance", &mut a.instance_assignment);
            crate::wipe::wipe("cs witness", &mut a.witness_assignment);
            crate::wipe::wipe("cs lc values", &mut a.lc_assignment);
        }
    }
}

/// The setup-mode circuit of a k transfer and the proving-mode circuit of a random valid
/// transfer (sender 2, amount 25 of a balance of 100), for tests and measurements.
#[cfg(any(test, feature = "bench"))]
pub fn sample_transfer<R: rand::Rng>(
    k: usize,
    rng: &mut R,
) -> (
    enygma_circuit::payment::constraints::PaymentCircuit,
    enygma_circuit::payment::constraints::PaymentCircuit,
) {
    use enygma_circuit::payment::{constraints::PaymentCircuit, Kind, PaymentInputs};
    let inputs = PaymentInputs::generate(Kind::Transfer, k, 2, 25, 100, rng);
    (
        PaymentCircuit::for_setup(Kind::Transfer, k),
        PaymentCircuit::for_proving(inputs),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qap::Groth16;
    use ark_groth16::ProvingKey;
    use ark_r1cs_std::{
        alloc::AllocVar, eq::EqGadget, fields::fp::FpVar, fields::FieldVar, GR1CSVar,
    };
    use ark_relations::gr1cs::ConstraintSystemRef;
    use ark_snark::SNARK;
    use ark_std::UniformRand;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    const BACKENDS: [MsmBackend; 3] = [
        MsmBackend::Arkworks,
        MsmBackend::EnygmaG1,
        MsmBackend::Enygma,
    ];

    /// A random circuit: products and sums of random public and private values, with some
    /// 0/1 witnesses (the common case in real circuits) and enough constraints to need a
    /// non-trivial FFT domain.
    #[derive(Clone)]
    struct RandomCircuit {
        public: Vec<Fr>,
        private: Vec<Fr>,
        rounds: usize,
    }

    impl RandomCircuit {
        fn new(rng: &mut ChaCha20Rng) -> Self {
            let public = (0..5).map(|_| Fr::rand(rng)).collect();
            let private = (0..40)
                .map(|i| {
                    if i % 4 == 0 {
                        Fr::from((i % 8 == 0) as u64)
                    } else {
                        Fr::rand(rng)
                    }
                })
                .collect();
            Self {
                public,
                private,
                rounds: 300,
            }
        }
    }

    impl ConstraintSynthesizer<Fr> for RandomCircuit {
        fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
            let public: Vec<_> = self
                .public
                .iter()
                .map(|x| FpVar::new_input(cs.clone(), || Ok(*x)))
                .collect::<Result<_, _>>()?;
            let private: Vec<_> = self
                .private
                .iter()
                .map(|x| FpVar::new_witness(cs.clone(), || Ok(*x)))
                .collect::<Result<_, _>>()?;
            let mut acc = public[0].clone();
            for i in 0..self.rounds {
                let x = &private[i % private.len()];
                let y = &public[i % public.len()];
                acc = (&acc * x + y) * &private[(i * 7 + 3) % private.len()];
            }
            // Ties the result to a public value so that the instance matters.
            let out = FpVar::new_input(cs.clone(), || acc.value())?;
            out.enforce_equal(&acc)?;
            let square = acc.square()?;
            square.enforce_equal(&(&acc * &acc))?;
            Ok(())
        }
    }

    fn prove_both_ways(pk: &ProvingKey<Bn254>, r1cs: &R1cs, assignment: &[Fr], r: Fr, s: Fr) {
        let expected = Groth16::create_proof_with_reduction_and_matrices(
            pk,
            r,
            s,
            &r1cs.matrices,
            r1cs.num_instance_variables,
            r1cs.num_constraints,
            assignment,
        )
        .unwrap();
        let public = &assignment[1..r1cs.num_instance_variables];
        assert!(
            Groth16::verify(&pk.vk, public, &expected).unwrap(),
            "ark-groth16's proof must verify"
        );
        let key = SparseProvingKey::new(pk.clone()).unwrap();
        let precomputed = PrecomputedQueries::new(&key);
        for (backend, tables) in BACKENDS
            .into_iter()
            .map(|b| (b, None))
            .chain(BACKENDS.into_iter().map(|b| (b, Some(&precomputed))))
        {
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let (proof, t) = pool
                    .install(|| create_proof(&key, tables, r1cs, assignment, r, s, backend))
                    .unwrap();
                let precomputed = tables.is_some();
                assert_eq!(
                    proof, expected,
                    "{backend:?} on {threads} thread(s), precomputed: {precomputed}"
                );
                assert!(Groth16::verify(&pk.vk, public, &proof).unwrap());
                assert!(t.total >= t.witness_map && t.total >= t.msm_a, "{t:?}");
            }
        }
    }

    /// A random circuit made from a seed, with its proving key, R1CS and satisfying assignment,
    /// and the generator where the setup left it.
    struct RandomSetup {
        circuit: RandomCircuit,
        pk: ProvingKey<Bn254>,
        r1cs: R1cs,
        assignment: Wiped<Fr>,
        rng: ChaCha20Rng,
    }

    fn random_setup(seed: u64) -> RandomSetup {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let circuit = RandomCircuit::new(&mut rng);
        let (pk, _) = Groth16::circuit_specific_setup(circuit.clone(), &mut rng).unwrap();
        RandomSetup {
            r1cs: r1cs(circuit.clone()).unwrap(),
            assignment: full_assignment(circuit.clone()).unwrap(),
            circuit,
            pk,
            rng,
        }
    }

    #[test]
    fn groth16_random_circuit_matches_ark_groth16() {
        let RandomSetup {
            pk,
            r1cs,
            assignment,
            mut rng,
            ..
        } = random_setup(1);
        assert_eq!(
            r1cs.num_instance_variables, 7,
            "1, 5 public values and the output"
        );
        let key = SparseProvingKey::new(pk.clone()).unwrap();
        assert!(
            key.b_query.positions.len() < key.num_variables() - 1,
            "some variables are not in B: the sparse B query is exercised"
        );
        for (r, s) in [
            (Fr::rand(&mut rng), Fr::rand(&mut rng)),
            (Fr::from(0u64), Fr::from(0u64)),
            (Fr::from(0u64), Fr::rand(&mut rng)),
        ] {
            prove_both_ways(&pk, &r1cs, &assignment, r, s);
        }
    }

    #[test]
    fn groth16_wrong_statement_does_not_verify() {
        let RandomSetup {
            pk,
            r1cs,
            mut assignment,
            ..
        } = random_setup(2);
        let instance = r1cs.num_instance_variables;
        // A witness change that breaks the constraints: the proof must not verify.
        assignment[instance + 1] += Fr::from(1u64);
        let key = SparseProvingKey::new(pk.clone()).unwrap();
        for backend in BACKENDS {
            let (three, five) = (Fr::from(3u64), Fr::from(5u64));
            let (proof, _) =
                create_proof(&key, None, &r1cs, &assignment, three, five, backend).unwrap();
            assert!(
                !Groth16::verify(&pk.vk, &assignment[1..instance], &proof).unwrap(),
                "{backend:?}"
            );
        }
    }

    #[test]
    fn groth16_key_of_another_circuit_is_refused() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let circuit = RandomCircuit::new(&mut rng);
        let mut other = RandomCircuit::new(&mut rng);
        other.private.pop();
        let (pk, _) = Groth16::circuit_specific_setup(other, &mut rng).unwrap();
        let key = SparseProvingKey::new(pk).unwrap();
        let r1cs = r1cs(circuit.clone()).unwrap();
        let assignment = full_assignment(circuit).unwrap();
        let (three, five) = (Fr::from(3u64), Fr::from(5u64));
        let result = create_proof(
            &key,
            None,
            &r1cs,
            &assignment,
            three,
            five,
            MsmBackend::Enygma,
        );
        assert!(matches!(result, Err(SynthesisError::Unsatisfiable)));
    }

    #[test]
    fn groth16_tables_of_another_key_are_refused() {
        let RandomSetup {
            circuit,
            pk,
            r1cs,
            assignment,
            mut rng,
        } = random_setup(6);
        // Same circuit, another setup: same sizes, other bases.
        let (other, _) = Groth16::circuit_specific_setup(circuit, &mut rng).unwrap();
        let key = SparseProvingKey::new(pk).unwrap();
        let other = SparseProvingKey::new(other).unwrap();
        let prove = |tables: &PrecomputedQueries| {
            let (three, five) = (Fr::from(3u64), Fr::from(5u64));
            create_proof(
                &key,
                Some(tables),
                &r1cs,
                &assignment,
                three,
                five,
                MsmBackend::Enygma,
            )
        };
        let tables = PrecomputedQueries::new(&key);
        assert_eq!(
            tables.memory_bytes(),
            PrecomputedQueries::memory_bytes_for_key(&key)
        );
        assert!(prove(&tables).is_ok());
        let wrong = PrecomputedQueries::new(&other);
        assert!(matches!(prove(&wrong), Err(SynthesisError::Unsatisfiable)));
    }

    #[test]
    fn groth16_transfer_k6_matches_ark_groth16() {
        let (setup, proving) = sample_transfer(6, &mut ChaCha20Rng::seed_from_u64(4));
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let (pk, _) = Groth16::circuit_specific_setup(setup.clone(), &mut rng).unwrap();
        let r1cs = r1cs(setup).unwrap();
        let assignment = full_assignment(proving).unwrap();
        let constraints = r1cs.num_constraints;
        assert!(constraints > 20_000, "k=6 has {constraints} constraints");
        // The oriented B side (`qap::tests::k6_transfer_b_side_shrinks`): 19,713 variables with
        // the constant, whose points are all the sparse key keeps.
        let key = SparseProvingKey::new(pk.clone()).unwrap();
        assert_eq!(key.b_query.positions.len(), 19_712);
        prove_both_ways(
            &pk,
            &r1cs,
            &assignment,
            Fr::rand(&mut rng),
            Fr::rand(&mut rng),
        );
    }
}
