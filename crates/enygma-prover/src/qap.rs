//! The QAP witness map of libsnark's R1CS-to-QAP reduction (the one ark-groth16's keys are
//! made for), computed with the transforms of [`crate::fft`].

use ark_ff::{FftField, Field, One, Zero};
use ark_groth16::r1cs_to_qap::evaluate_constraint;
use ark_relations::gr1cs::{Matrix, SynthesisError};
use enygma_circuit::Fr;
use rayon::prelude::*;

use crate::fft::CosetFft;

/// `h`, the coefficients of `(A·B − C) / Z` for the full assignment: libsnark's witness map
/// (what ark-groth16's `LibsnarkReduction::witness_map_from_matrices` returns, bit for bit) with the
/// transforms of [`crate::fft`], the three polynomials transformed concurrently when the pool
/// has threads to spare.
pub fn witness_map(
    matrices: &[Matrix<Fr>],
    num_inputs: usize,
    num_constraints: usize,
    full_assignment: &[Fr],
) -> Result<Vec<Fr>, SynthesisError> {
    let n = (num_constraints + num_inputs)
        .checked_next_power_of_two()
        .ok_or(SynthesisError::PolynomialDegreeTooLarge)?;
    let fft = CosetFft::for_size(n).ok_or(SynthesisError::PolynomialDegreeTooLarge)?;
    if matrices.len() != 3 || matrices.iter().any(|m| m.len() != num_constraints) {
        return Err(SynthesisError::Unsatisfiable);
    }
    let evaluate = |matrix: &Matrix<Fr>| {
        let mut values = vec![Fr::zero(); n];
        values[..num_constraints]
            .par_iter_mut()
            .zip(&matrix[..num_constraints])
            .for_each(|(value, row)| *value = evaluate_constraint(row, full_assignment));
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
    // Z(X) = Xⁿ − 1 is gⁿ − 1 everywhere on the coset gH.
    let z_inverse = (Fr::GENERATOR.pow([n as u64]) - Fr::one())
        .inverse()
        .expect("g is not in H");
    a.par_iter_mut()
        .zip(&b)
        .zip(&c)
        .for_each(|((a, b), c)| *a = (*a * b - c) * z_inverse);
    drop((b, c));
    fft.coset_to_coefficients(&mut a);
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::{full_assignment, r1cs, sample_transfer};
    use ark_groth16::r1cs_to_qap::{LibsnarkReduction, R1CSToQAP};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// The fast witness map gives libsnark's h for the k=3 transfer, for an honest and for an
    /// unsatisfying assignment, on 1 and 2 threads.
    #[test]
    fn witness_map_is_libsnarks() {
        let (setup, proving) = sample_transfer(3, &mut ChaCha20Rng::seed_from_u64(8));
        let shape = r1cs(setup).unwrap();
        let honest = full_assignment(proving).unwrap();
        let mut forged = honest.clone();
        forged[shape.num_instance_variables + 5] += Fr::from(1u64);
        for assignment in [honest, forged] {
            let expected = LibsnarkReduction::witness_map_from_matrices::<
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
}
