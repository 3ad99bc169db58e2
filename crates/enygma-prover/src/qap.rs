//! The R1CS-to-QAP reduction the keys are made for: libsnark's, applied to the R1CS with each
//! constraint turned round where that keeps a variable out of the B side.
//!
//! Why: B is the only MSM of a proof done in G2, where an addition costs about three G1 ones,
//! and it runs over every variable that occurs in the B factor of some constraint. `a·b = c`
//! and `b·a = c` are one constraint, so which factor is B is ours to choose. A variable that
//! occurs in both factors of one constraint (a bit's `b·(1 − b) = 0`, a square `x·x`) is in B
//! whatever we choose; a constraint whose A factor holds only such variables (or the constant 1)
//! while its B factor holds another one is turned round, which moves that variable to A (a G1
//! MSM) for free. On the k=6 transfer this takes B from 23,169 variables to 19,704, and the
//! B-side variables whose values are full-size scalars (the ones that cost a bucket addition per
//! window, 0 and ±1 cost nothing or one addition) from 6,244 to 4,802 for a sample witness.
//!
//! Soundness: the turned R1CS has the same constraints, so exactly the same assignments satisfy
//! it, and the reduction applied to it is libsnark's, unchanged. Keys made with
//! [`OrientedReduction`] only fit proofs computed with it (or with the matrices [`orient`] gives),
//! which is why the development keys are made, and proofs computed, with it alone.

use ark_ff::{FftField, Field, One, PrimeField, Zero};
use ark_groth16::r1cs_to_qap::{LibsnarkReduction, R1CSToQAP};
use ark_poly::EvaluationDomain;
use ark_relations::gr1cs::{ConstraintSystemRef, Matrix, SynthesisError, R1CS_PREDICATE_LABEL};
use enygma_circuit::Fr;
use rayon::prelude::*;

use crate::{fft::CosetFft, matrix::Rows};

/// Groth16 over BN254 with the keys and proofs of [`OrientedReduction`].
pub type Groth16 = ark_groth16::Groth16<ark_bn254::Bn254, OrientedReduction>;

/// Groth16 over BN254 with the keys and proofs of [`CircomOrientedReduction`]: keys shaped as
/// snarkjs makes them from our exported R1CS.
pub type CircomGroth16 = ark_groth16::Groth16<ark_bn254::Bn254, CircomOrientedReduction>;

/// Which witness map a proving key's H query is made for. Both reduce the same oriented R1CS
/// (with the public inputs' constraints `xᵢ · 0 = 0` appended) over the same domain H of size
/// n; they differ in the basis of H's query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reduction {
    /// libsnark's (arkworks' default): H holds `τⁱ·Z(τ)/δ` for i < n − 1, the prover computes
    /// the coefficients of `(A·B − C)/Z` ([`witness_map`]). Our development and single-party
    /// keys.
    Libsnark,
    /// snarkjs' (circom-compat's `CircomReduction`): H holds the Lagrange basis of the odd
    /// points of the domain of size 2n, divided by δ, and the prover multiplies in the values
    /// of `A·B − C` on the coset `ω₂ₙ·H` ([`witness_map_circom`]). Keys imported from a zkey.
    Circom,
}

impl Reduction {
    /// Its name in a key file's record, the server's log, `/readyz` and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Libsnark => "libsnark",
            Reduction::Circom => "circom",
        }
    }

    /// The number of points of the H query of a key for a QAP domain of size `n`.
    pub fn h_query_len(self, n: usize) -> usize {
        match self {
            Reduction::Libsnark => n - 1,
            Reduction::Circom => n,
        }
    }

    /// `h` for the H query of a key of this reduction.
    pub fn witness_map<M: Rows>(
        self,
        matrices: &[M],
        num_inputs: usize,
        num_constraints: usize,
        full_assignment: &[Fr],
    ) -> Result<Vec<Fr>, SynthesisError> {
        match self {
            Reduction::Libsnark => {
                witness_map(matrices, num_inputs, num_constraints, full_assignment)
            }
            Reduction::Circom => {
                witness_map_circom(matrices, num_inputs, num_constraints, full_assignment)
            }
        }
    }
}

/// Turns round (swaps the A and B rows of) every constraint whose B factor holds a variable that
/// the orientation can keep out of B, i.e. one that is not in both factors of any constraint,
/// while its A factor holds only variables that are in B anyway. Returns how many were turned.
///
/// `matrices` are `[A, B, C]` as ark-relations gives them; variable 0 is the constant 1, whose
/// query point is added outside the MSMs and so costs nothing on either side.
pub fn orient<F: Field>(matrices: &mut [Matrix<F>]) -> usize {
    let [a, b, ..] = matrices else {
        return 0;
    };
    let variables = a
        .iter()
        .chain(b.iter())
        .flatten()
        .map(|&(_, v)| v + 1)
        .max()
        .unwrap_or(0);
    // in_both[v]: v occurs in both factors of some constraint. `seen_in_a[v] = row + 1` marks
    // the A factor of the current row without clearing between rows.
    let mut in_both = vec![false; variables];
    let mut seen_in_a = vec![0usize; variables];
    for (row, (a_row, b_row)) in a.iter().zip(b.iter()).enumerate() {
        for &(_, v) in a_row {
            seen_in_a[v] = row + 1;
        }
        for &(_, v) in b_row {
            if seen_in_a[v] == row + 1 {
                in_both[v] = true;
            }
        }
    }
    in_both[0] = variables > 0;
    let free_in_b = |terms: &[(F, usize)]| terms.iter().all(|&(_, v)| in_both[v]);
    let mut turned = 0;
    for (a_row, b_row) in a.iter_mut().zip(b.iter_mut()) {
        if !free_in_b(b_row) && free_in_b(a_row) {
            std::mem::swap(a_row, b_row);
            turned += 1;
        }
    }
    turned
}

/// The oriented R1CS matrices of a constraint system with matrices.
fn oriented_matrices<F: PrimeField>(
    cs: &ConstraintSystemRef<F>,
) -> Result<Vec<Matrix<F>>, SynthesisError> {
    let mut matrices = cs
        .to_matrices()?
        .remove(R1CS_PREDICATE_LABEL)
        .ok_or(SynthesisError::MissingCS)?;
    orient(&mut matrices);
    Ok(matrices)
}

/// `h`, the coefficients of `(A·B − C) / Z` for the full assignment: libsnark's witness map
/// (what [`OrientedReduction::witness_map_from_matrices`] returns, bit for bit) with the
/// transforms of [`crate::fft`], the three polynomials transformed concurrently when the pool
/// has threads to spare.
pub fn witness_map<M: Rows>(
    matrices: &[M],
    num_inputs: usize,
    num_constraints: usize,
    full_assignment: &[Fr],
) -> Result<Vec<Fr>, SynthesisError> {
    let n = domain_size(num_constraints, num_inputs)?;
    let fft = CosetFft::for_size(n).ok_or(SynthesisError::PolynomialDegreeTooLarge)?;
    let (mut a, mut b, mut c) =
        coset_evaluations(&fft, matrices, num_inputs, num_constraints, full_assignment)?;
    // Z(X) = Xⁿ − 1 is gⁿ − 1 everywhere on the coset gH.
    let z_inverse = (Fr::GENERATOR.pow([n as u64]) - Fr::one())
        .inverse()
        .expect("g is not in H");
    a.par_iter_mut()
        .zip(&b)
        .zip(&c)
        .for_each(|((a, b), c)| *a = (*a * b - c) * z_inverse);
    // B and C of the assignment, like h, are derived from its secrets.
    crate::wipe::wipe("qap b", &mut b);
    crate::wipe::wipe("qap c", &mut c);
    fft.coset_to_coefficients(&mut a);
    Ok(a)
}

/// `h` for a key of snarkjs' reduction: the values of `A·B − C` on the coset `ω₂ₙ·H` (the odd
/// points of the domain of size 2n), which its H query, the Lagrange basis of those points
/// divided by δ, takes as they are: no division by Z (it is `−2` on that coset, folded into
/// the key) and no inverse transform. The same transforms as [`witness_map`], with the shift
/// `ω₂ₙ` instead of the field's generator.
pub fn witness_map_circom<M: Rows>(
    matrices: &[M],
    num_inputs: usize,
    num_constraints: usize,
    full_assignment: &[Fr],
) -> Result<Vec<Fr>, SynthesisError> {
    let n = domain_size(num_constraints, num_inputs)?;
    let omega_2n =
        Fr::get_root_of_unity(2 * n as u64).ok_or(SynthesisError::PolynomialDegreeTooLarge)?;
    let fft = CosetFft::for_size_and_shift(n, omega_2n)
        .ok_or(SynthesisError::PolynomialDegreeTooLarge)?;
    let (mut a, mut b, mut c) =
        coset_evaluations(&fft, matrices, num_inputs, num_constraints, full_assignment)?;
    a.par_iter_mut()
        .zip(&b)
        .zip(&c)
        .for_each(|((a, b), c)| *a = *a * b - c);
    crate::wipe::wipe("qap b", &mut b);
    crate::wipe::wipe("qap c", &mut c);
    Ok(a)
}

/// The QAP domain's size: the constraints and one per instance variable (the constant 1
/// included), rounded up to a power of two.
fn domain_size(num_constraints: usize, num_inputs: usize) -> Result<usize, SynthesisError> {
    (num_constraints + num_inputs)
        .checked_next_power_of_two()
        .ok_or(SynthesisError::PolynomialDegreeTooLarge)
}

/// A, B and C of the assignment on the domain H (the public inputs' constraints `xᵢ · 0 = 0`
/// appended, as libsnark and snarkjs both do), transformed to the coset of `fft`, the three
/// concurrently when the pool has threads to spare.
#[allow(clippy::type_complexity)]
fn coset_evaluations<M: Rows>(
    fft: &CosetFft,
    matrices: &[M],
    num_inputs: usize,
    num_constraints: usize,
    full_assignment: &[Fr],
) -> Result<(Vec<Fr>, Vec<Fr>, Vec<Fr>), SynthesisError> {
    let n = fft.size();
    if matrices.len() != 3 || matrices.iter().any(|m| m.num_rows() != num_constraints) {
        return Err(SynthesisError::Unsatisfiable);
    }
    let evaluate = |matrix: &M| {
        let mut values = vec![Fr::zero(); n];
        values[..num_constraints]
            .par_iter_mut()
            .enumerate()
            .for_each(|(row, value)| *value = matrix.evaluate(row, full_assignment));
        values
    };
    let mut a = evaluate(&matrices[0]);
    // The public inputs' constraints `xᵢ · 0 = 0`, as libsnark appends them.
    a[num_constraints..num_constraints + num_inputs]
        .copy_from_slice(&full_assignment[..num_inputs]);
    let mut b = evaluate(&matrices[1]);
    let mut c = evaluate(&matrices[2]);
    rayon::join(
        || {
            rayon::join(
                || fft.domain_to_coset(&mut a),
                || fft.domain_to_coset(&mut b),
            )
        },
        || fft.domain_to_coset(&mut c),
    );
    Ok((a, b, c))
}

/// libsnark's reduction of the R1CS turned round by [`orient`].
pub struct OrientedReduction;

impl R1CSToQAP for OrientedReduction {
    /// libsnark's instance map (ark-groth16's `LibsnarkReduction`, whose version reads the
    /// matrices from `cs` itself and so cannot take oriented ones): the QAP polynomials of each
    /// variable evaluated at `t`, with the public inputs' extra constraints `xᵢ · 0 = 0` after
    /// the circuit's.
    #[allow(clippy::type_complexity)]
    fn instance_map_with_evaluation<F: PrimeField, D: EvaluationDomain<F>>(
        cs: ConstraintSystemRef<F>,
        t: &F,
    ) -> Result<(Vec<F>, Vec<F>, Vec<F>, F, usize, usize), SynthesisError> {
        let matrices = oriented_matrices(&cs)?;
        let num_constraints = cs.num_constraints();
        let num_instance = cs.num_instance_variables();
        let domain = D::new(num_constraints + num_instance)
            .ok_or(SynthesisError::PolynomialDegreeTooLarge)?;
        let zt = domain.evaluate_vanishing_polynomial(*t);
        let u = domain.evaluate_all_lagrange_coefficients(*t);

        let qap_num_variables = (num_instance - 1) + cs.num_witness_variables();
        let mut a = vec![F::zero(); qap_num_variables + 1];
        let mut b = vec![F::zero(); qap_num_variables + 1];
        let mut c = vec![F::zero(); qap_num_variables + 1];
        a[..num_instance].copy_from_slice(&u[num_constraints..num_constraints + num_instance]);
        for (i, u_i) in u.iter().enumerate().take(num_constraints) {
            for (polys, matrix) in [(&mut a, &matrices[0]), (&mut b, &matrices[1])] {
                for &(coeff, v) in &matrix[i] {
                    polys[v] += *u_i * coeff;
                }
            }
            for &(coeff, v) in &matrices[2][i] {
                c[v] += *u_i * coeff;
            }
        }
        Ok((a, b, c, zt, qap_num_variables, domain.size()))
    }

    fn witness_map<F: PrimeField, D: EvaluationDomain<F>>(
        prover: ConstraintSystemRef<F>,
    ) -> Result<Vec<F>, SynthesisError> {
        let matrices = oriented_matrices(&prover)?;
        let mut assignment = prover.instance_assignment()?;
        assignment.extend(prover.witness_assignment()?);
        Self::witness_map_from_matrices::<F, D>(
            &matrices,
            prover.num_instance_variables(),
            prover.num_constraints(),
            &assignment,
        )
    }

    /// libsnark's witness map; `matrices` must be the oriented ones.
    fn witness_map_from_matrices<F: PrimeField, D: EvaluationDomain<F>>(
        matrices: &[Matrix<F>],
        num_inputs: usize,
        num_constraints: usize,
        full_assignment: &[F],
    ) -> Result<Vec<F>, SynthesisError> {
        LibsnarkReduction::witness_map_from_matrices::<F, D>(
            matrices,
            num_inputs,
            num_constraints,
            full_assignment,
        )
    }

    fn h_query_scalars<F: PrimeField, D: EvaluationDomain<F>>(
        max_power: usize,
        t: F,
        zt: F,
        delta_inverse: F,
    ) -> Result<Vec<F>, SynthesisError> {
        LibsnarkReduction::h_query_scalars::<F, D>(max_power, t, zt, delta_inverse)
    }
}

/// snarkjs' reduction of the R1CS turned round by [`orient`]: the instance map of
/// [`OrientedReduction`], the H query of snarkjs' keys. A setup with it makes the key snarkjs'
/// `groth16 setup` would make from our exported R1CS for the same toxic waste.
pub struct CircomOrientedReduction;

impl R1CSToQAP for CircomOrientedReduction {
    #[allow(clippy::type_complexity)]
    fn instance_map_with_evaluation<F: PrimeField, D: EvaluationDomain<F>>(
        cs: ConstraintSystemRef<F>,
        t: &F,
    ) -> Result<(Vec<F>, Vec<F>, Vec<F>, F, usize, usize), SynthesisError> {
        OrientedReduction::instance_map_with_evaluation::<F, D>(cs, t)
    }

    /// Not used by our prover, which calls [`witness_map_circom`] on cached matrices; ark-groth16
    /// needs it only to prove, which we do not do through it.
    fn witness_map_from_matrices<F: PrimeField, D: EvaluationDomain<F>>(
        _matrices: &[Matrix<F>],
        _num_inputs: usize,
        _num_constraints: usize,
        _full_assignment: &[F],
    ) -> Result<Vec<F>, SynthesisError> {
        Err(SynthesisError::AssignmentMissing)
    }

    /// The Lagrange basis of the odd points of the domain of size 2n at t, divided by δ:
    /// `L'ᵢ(t)/δ` for the points `ω₂ₙ^{2i+1}`, from the powers `t^j/δ`, j < 2n − 1, by an
    /// inverse transform of size 2n (the odd entries), as snarkjs reads them from the prepared
    /// Powers of Tau.
    fn h_query_scalars<F: PrimeField, D: EvaluationDomain<F>>(
        max_power: usize,
        t: F,
        _zt: F,
        delta_inverse: F,
    ) -> Result<Vec<F>, SynthesisError> {
        let mut scalars: Vec<F> = (0..2 * max_power + 1)
            .map(|i| delta_inverse * t.pow([i as u64]))
            .collect();
        let domain = D::new(scalars.len()).ok_or(SynthesisError::PolynomialDegreeTooLarge)?;
        domain.ifft_in_place(&mut scalars);
        Ok(scalars.into_iter().skip(1).step_by(2).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::{full_assignment, r1cs, sample_transfer};
    use ark_bn254::{Bn254, Fr};
    use ark_ec::AffineRepr;
    use ark_r1cs_std::{
        alloc::AllocVar, boolean::Boolean, eq::EqGadget, fields::fp::FpVar, fields::FieldVar,
    };
    use ark_relations::gr1cs::{
        ConstraintSynthesizer, ConstraintSystem, OptimizationGoal, SynthesisMode,
    };
    use ark_snark::SNARK;
    use ark_std::UniformRand;
    use enygma_circuit::payment::{constraints::PaymentCircuit, Kind};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// The matrices as ark-relations gives them, before [`orient`].
    fn unoriented<C: ConstraintSynthesizer<Fr>>(circuit: C) -> Vec<Matrix<Fr>> {
        let cs = ConstraintSystem::<Fr>::new_ref();
        cs.set_optimization_goal(OptimizationGoal::Constraints);
        cs.set_mode(SynthesisMode::Setup);
        circuit.generate_constraints(cs.clone()).unwrap();
        cs.finalize();
        cs.to_matrices()
            .unwrap()
            .remove(R1CS_PREDICATE_LABEL)
            .unwrap()
    }

    fn evaluate(terms: &[(Fr, usize)], assignment: &[Fr]) -> Fr {
        terms.iter().map(|&(c, v)| c * assignment[v]).sum()
    }

    fn variables_in(matrix: &Matrix<Fr>) -> usize {
        let mut used: Vec<usize> = matrix.iter().flatten().map(|&(_, v)| v).collect();
        used.sort_unstable();
        used.dedup();
        used.len()
    }

    /// `x·y = z` with public z and a bit x: x is in B anyway (its booleanity `x·(1 − x) = 0`),
    /// so the product's row is turned round and y leaves B.
    #[derive(Clone)]
    struct Small {
        x: bool,
        y: Fr,
    }

    impl ConstraintSynthesizer<Fr> for Small {
        fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
            let z = FpVar::new_input(cs.clone(), || {
                Ok(if self.x { self.y } else { Fr::from(0u64) })
            })?;
            let x = Boolean::new_witness(cs.clone(), || Ok(self.x))?;
            let y = FpVar::new_witness(cs.clone(), || Ok(self.y))?;
            // x·y = z, written with y on the B side.
            (FpVar::from(x) * y).enforce_equal(&z)
        }
    }

    #[test]
    fn turned_rows_are_the_same_constraints_and_still_satisfied() {
        let (setup, proving) = sample_transfer(3, &mut ChaCha20Rng::seed_from_u64(7));
        let original = unoriented(setup.clone());
        let oriented = r1cs(setup).unwrap().matrices;
        let assignment = full_assignment(proving).unwrap();
        let mut turned = 0;
        for row in 0..original[0].len() {
            let same = oriented[0][row] == original[0][row] && oriented[1][row] == original[1][row];
            let swapped =
                oriented[0][row] == original[1][row] && oriented[1][row] == original[0][row];
            assert!(same || swapped, "row {row} changed beyond a turn");
            assert_eq!(oriented[2][row], original[2][row], "C of row {row}");
            turned += (swapped && !same) as usize;
            let [a, b, c] = [0, 1, 2].map(|m| evaluate(&oriented[m][row], &assignment));
            assert_eq!(a * b, c, "row {row} unsatisfied after orientation");
        }
        assert!(turned > 0, "the k=3 transfer has rows to turn");
        let mut again = oriented.clone();
        assert_eq!(orient(&mut again), 0, "orientation is idempotent");
        assert_eq!(again, oriented);
    }

    /// The exact effect on the k=6 transfer (as the constraint counts are tested): the B side
    /// loses 3,466 of its 23,179 variables; the A side takes 3,494 more; 4,636 of the 28,294
    /// constraints are turned round.
    #[test]
    fn k6_transfer_b_side_shrinks() {
        let mut matrices = unoriented(PaymentCircuit::for_setup(Kind::Transfer, 6));
        assert_eq!(variables_in(&matrices[1]), 23_179);
        assert_eq!(variables_in(&matrices[0]), 21_585);
        let turned = orient(&mut matrices);
        assert_eq!(variables_in(&matrices[1]), 19_713);
        assert_eq!(variables_in(&matrices[0]), 25_079);
        assert_eq!(turned, 4_636, "constraints turned round");
    }

    /// The fast witness map gives libsnark's h for the k=3 transfer, for an honest and for an
    /// unsatisfying assignment, on 1 and 2 threads.
    #[test]
    fn witness_map_is_libsnarks() {
        let (setup, proving) = sample_transfer(3, &mut ChaCha20Rng::seed_from_u64(8));
        let shape = r1cs(setup).unwrap();
        let compact = r1cs(sample_transfer(3, &mut ChaCha20Rng::seed_from_u64(8)).0)
            .unwrap()
            .compact()
            .unwrap();
        let honest = full_assignment(proving).unwrap().to_vec();
        let mut forged = honest.clone();
        forged[shape.num_instance_variables + 5] += Fr::from(1u64);
        for assignment in [honest, forged] {
            let expected = OrientedReduction::witness_map_from_matrices::<
                Fr,
                ark_poly::GeneralEvaluationDomain<Fr>,
            >(
                &shape.matrices,
                shape.num_instance_variables,
                shape.num_constraints,
                &assignment,
            )
            .unwrap();
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let h = pool
                    .install(|| {
                        witness_map(
                            &shape.matrices,
                            shape.num_instance_variables,
                            shape.num_constraints,
                            &assignment,
                        )
                    })
                    .unwrap();
                assert!(h == expected, "h differs on {threads} thread(s)");
                let h = pool
                    .install(|| {
                        witness_map(
                            &compact.matrices,
                            shape.num_instance_variables,
                            shape.num_constraints,
                            &assignment,
                        )
                    })
                    .unwrap();
                assert!(h == expected, "compact: h differs on {threads} thread(s)");
            }
        }
        // Matrices of another circuit are refused, not read past their end.
        let short = &shape.matrices[..2];
        let too_many = shape.num_constraints + 1;
        let assignment = vec![Fr::from(1u64); shape.num_instance_variables];
        assert!(witness_map(
            short,
            shape.num_instance_variables,
            shape.num_constraints,
            &assignment
        )
        .is_err());
        assert!(witness_map(
            &shape.matrices,
            shape.num_instance_variables,
            too_many,
            &assignment
        )
        .is_err());
    }

    #[test]
    fn keys_are_libsnarks_when_nothing_turns() {
        // Squares and bits only: every variable is in both factors of its constraint.
        #[derive(Clone)]
        struct Squares(Fr);
        impl ConstraintSynthesizer<Fr> for Squares {
            fn generate_constraints(
                self,
                cs: ConstraintSystemRef<Fr>,
            ) -> Result<(), SynthesisError> {
                let x = FpVar::new_witness(cs.clone(), || Ok(self.0))?;
                let y = FpVar::new_input(cs.clone(), || Ok(self.0.square()))?;
                x.square()?.enforce_equal(&y)?;
                Boolean::new_witness(cs, || Ok(true)).map(|_| ())
            }
        }
        let circuit = Squares(Fr::from(9u64));
        let mut matrices = r1cs(circuit.clone()).unwrap().matrices;
        assert_eq!(orient(&mut matrices), 0);
        let ours =
            Groth16::circuit_specific_setup(circuit.clone(), &mut ChaCha20Rng::seed_from_u64(1))
                .unwrap();
        let libsnark = ark_groth16::Groth16::<Bn254>::circuit_specific_setup(
            circuit,
            &mut ChaCha20Rng::seed_from_u64(1),
        )
        .unwrap();
        assert!(ours.0 == libsnark.0, "proving keys differ");
    }

    #[test]
    fn oriented_keys_prove_and_refuse_a_forged_witness() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let honest = Small {
            x: true,
            y: Fr::rand(&mut rng),
        };
        let mut matrices = r1cs(honest.clone()).unwrap().matrices;
        assert_eq!(orient(&mut matrices), 0, "r1cs() gives oriented matrices");
        let (pk, vk) = Groth16::circuit_specific_setup(honest.clone(), &mut rng).unwrap();
        // y left B: its G2 query point is the identity, x's is not.
        assert!(pk.b_g2_query[3].is_zero(), "y is not in B");
        assert!(!pk.b_g2_query[2].is_zero(), "x is in B");
        let libsnark =
            ark_groth16::Groth16::<Bn254>::circuit_specific_setup(honest.clone(), &mut rng)
                .unwrap()
                .0;
        assert!(!libsnark.b_g2_query[3].is_zero(), "libsnark keeps y in B");

        let public = [honest.y];
        let proof = Groth16::prove(&pk, honest.clone(), &mut rng).unwrap();
        assert!(Groth16::verify(&vk, &public, &proof).unwrap());
        // ark-groth16's default reduction computes another h: its proof does not fit these keys.
        let unoriented =
            ark_groth16::Groth16::<Bn254>::prove(&pk, honest.clone(), &mut rng).unwrap();
        assert!(!Groth16::verify(&vk, &public, &unoriented).unwrap());

        // A forged witness for the same public z: y changed, so x·y ≠ z.
        let shape = r1cs(honest.clone()).unwrap();
        let mut forged = full_assignment(honest).unwrap();
        forged[3] += Fr::from(1u64);
        let key = crate::groth16::SparseProvingKey::new(pk.clone()).unwrap();
        let (proof, _) = crate::groth16::create_proof(
            &key,
            None,
            &shape,
            &forged,
            Fr::rand(&mut rng),
            Fr::rand(&mut rng),
            crate::groth16::MsmBackend::Enygma,
        )
        .unwrap();
        assert!(!Groth16::verify(&vk, &public, &proof).unwrap());
    }

    /// A key of snarkjs' reduction (made by a setup with its H query, as snarkjs makes it from
    /// our R1CS) proves with [`witness_map_circom`] and verifies, on the k=3 transfer, with and
    /// without precomputed tables; h of the other reduction gives a proof that does not verify
    /// with it, and both reductions' keys give verifying proofs of the same assignment.
    #[test]
    fn circom_keys_prove_with_their_witness_map() {
        use crate::groth16::{create_proof, MsmBackend, PrecomputedQueries, SparseProvingKey};
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let (setup, proving) = sample_transfer(3, &mut rng);
        let shape = r1cs(setup.clone()).unwrap();
        let assignment = full_assignment(proving).unwrap();
        let public = &assignment[1..shape.num_instance_variables];
        let (pk, vk) = CircomGroth16::circuit_specific_setup(setup.clone(), &mut rng).unwrap();
        let n = (shape.num_constraints + shape.num_instance_variables).next_power_of_two();
        assert_eq!(pk.h_query.len(), n, "the H query covers the odd points");
        let (libsnark_pk, libsnark_vk) = Groth16::circuit_specific_setup(setup, &mut rng).unwrap();
        let circom = SparseProvingKey::with_reduction(pk.clone(), Reduction::Circom).unwrap();
        let tables = PrecomputedQueries::new(&circom);
        for tables in [None, Some(&tables)] {
            let (proof, _) = create_proof(
                &circom,
                tables,
                &shape,
                &assignment,
                Fr::rand(&mut rng),
                Fr::rand(&mut rng),
                MsmBackend::Enygma,
            )
            .unwrap();
            assert!(CircomGroth16::verify(&vk, public, &proof).unwrap());
        }
        let libsnark = SparseProvingKey::new(libsnark_pk).unwrap();
        let (proof, _) = create_proof(
            &libsnark,
            None,
            &shape,
            &assignment,
            Fr::rand(&mut rng),
            Fr::rand(&mut rng),
            MsmBackend::Enygma,
        )
        .unwrap();
        assert!(Groth16::verify(&libsnark_vk, public, &proof).unwrap());
        // The circom key's points with the libsnark witness map: the H query's length differs,
        // refused; with the last point dropped, h is of the wrong basis and the proof fails.
        let mut wrong = SparseProvingKey::with_reduction(pk.clone(), Reduction::Libsnark).unwrap();
        assert!(create_proof(
            &wrong,
            None,
            &shape,
            &assignment,
            Fr::rand(&mut rng),
            Fr::rand(&mut rng),
            MsmBackend::Enygma
        )
        .is_err());
        wrong.h_query.pop();
        let (proof, _) = create_proof(
            &wrong,
            None,
            &shape,
            &assignment,
            Fr::rand(&mut rng),
            Fr::rand(&mut rng),
            MsmBackend::Enygma,
        )
        .unwrap();
        assert!(!CircomGroth16::verify(&vk, public, &proof).unwrap());
    }

    /// snarkjs' h (circom-compat's witness map, written out with ark-poly) equals ours.
    #[test]
    fn circom_witness_map_matches_ark_poly() {
        use ark_poly::{GeneralEvaluationDomain, Radix2EvaluationDomain};
        let (setup, proving) = sample_transfer(3, &mut ChaCha20Rng::seed_from_u64(12));
        let shape = r1cs(setup).unwrap();
        let assignment = full_assignment(proving).unwrap();
        let (m, inputs) = (shape.num_constraints, shape.num_instance_variables);
        let domain = GeneralEvaluationDomain::<Fr>::new(m + inputs).unwrap();
        let n = domain.size();
        let mut evals = [0, 1, 2].map(|k| {
            let mut v: Vec<Fr> = (0..m)
                .map(|row| evaluate(&shape.matrices[k][row], &assignment))
                .collect();
            v.resize(n, Fr::zero());
            v
        });
        evals[0][m..m + inputs].copy_from_slice(&assignment[..inputs]);
        let shift = Radix2EvaluationDomain::<Fr>::new(2 * n)
            .unwrap()
            .group_gen();
        let coset = domain.get_coset(shift).unwrap();
        for v in evals.iter_mut() {
            domain.ifft_in_place(v);
            coset.fft_in_place(v);
        }
        let expected: Vec<Fr> = (0..n)
            .map(|i| evals[0][i] * evals[1][i] - evals[2][i])
            .collect();
        let ours = witness_map_circom(&shape.matrices, inputs, m, &assignment).unwrap();
        assert!(ours == expected);
    }
}
