//! Constraint matrices in the compact form the prover keeps for the life of the process.
//!
//! ark-relations gives a matrix as `Vec<Vec<(Fr, usize)>>`: 40 bytes per term (a 32-byte
//! coefficient and a 64-bit variable index) and a 24-byte `Vec` header per row, each row its own
//! heap block. An R1CS coefficient is nearly always one of a few hundred values (1, −1, the
//! powers of two of bit decompositions, a gadget's constants: 1,148 to 3,419 per matrix in the
//! statements here), so [`CompactMatrix`] stores the rows back to back (CSR) as 6-byte terms, a
//! 32-bit variable and a 16-bit index into a table of the matrix's distinct coefficients (32-bit
//! past 65,536 of them), plus 4 bytes per row. Every statement's matrices stay
//! loaded, so this is a large part of an idle server's memory
//! (`benches/results/2026-12-03-memory.md`).
//!
//! [`Rows`] is what the witness map needs of a matrix: its rows' values at an assignment. Both
//! forms implement it and give the same values (the sum of `coefficient × value` over a row's
//! terms, which is exact in the field whatever the order).

use std::collections::HashMap;

use ark_ff::{One, Zero};
use ark_groth16::r1cs_to_qap::evaluate_constraint;
use ark_relations::gr1cs::{Matrix, SynthesisError};
use ark_serialize::{
    CanonicalDeserialize, CanonicalSerialize, Compress, Read, SerializationError, Valid, Validate,
    Write,
};
use enygma_circuit::Fr;

/// A constraint matrix as the witness map reads it.
pub trait Rows: Sync {
    fn num_rows(&self) -> usize;

    /// `Σ coefficient × assignment[variable]` over the terms of `row`.
    fn evaluate(&self, row: usize, assignment: &[Fr]) -> Fr;
}

impl Rows for Matrix<Fr> {
    fn num_rows(&self) -> usize {
        self.len()
    }

    fn evaluate(&self, row: usize, assignment: &[Fr]) -> Fr {
        evaluate_constraint(&self[row], assignment)
    }
}

/// A matrix's rows back to back, each term a variable and the index of its coefficient.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactMatrix {
    /// Row `r`'s terms are `terms[starts[r]..starts[r + 1]]`.
    starts: Vec<u32>,
    /// The variable of each term.
    variables: Vec<u32>,
    /// The index of each term's coefficient.
    coefficient_ids: CoefficientIds,
    /// The distinct coefficients; index 0 is 1, which is added without a product.
    coefficients: Vec<Fr>,
}

/// Index of the coefficient 1 in every [`CompactMatrix`].
const ONE: u32 = 0;

/// Coefficient indices, 16-bit while the matrix has at most 65,536 distinct coefficients.
#[derive(Clone, Debug, PartialEq, Eq)]
enum CoefficientIds {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl CoefficientIds {
    fn get(&self, term: usize) -> u32 {
        match self {
            Self::Narrow(ids) => u32::from(ids[term]),
            Self::Wide(ids) => ids[term],
        }
    }

    fn memory_bytes(&self) -> usize {
        match self {
            Self::Narrow(ids) => ids.capacity() * 2,
            Self::Wide(ids) => ids.capacity() * 4,
        }
    }
}

impl CompactMatrix {
    /// The compact form of `matrix`. Refused (as a synthesis error) only past 2^32 variables,
    /// terms or distinct coefficients, far beyond any statement here.
    pub fn new(matrix: &Matrix<Fr>) -> Result<Self, SynthesisError> {
        let narrow = |n: usize| u32::try_from(n).map_err(|_| SynthesisError::Unsatisfiable);
        let total: usize = matrix.iter().map(Vec::len).sum();
        let mut starts = Vec::with_capacity(matrix.len() + 1);
        let mut variables = Vec::with_capacity(total);
        let mut ids = Vec::with_capacity(total);
        let mut coefficients = vec![Fr::one()];
        let mut index: HashMap<Fr, u32> = HashMap::from([(Fr::one(), ONE)]);
        starts.push(0);
        for row in matrix {
            for &(coefficient, variable) in row {
                let next = narrow(coefficients.len())?;
                let c = *index.entry(coefficient).or_insert(next);
                if c == next {
                    coefficients.push(coefficient);
                }
                variables.push(narrow(variable)?);
                ids.push(c);
            }
            starts.push(narrow(variables.len())?);
        }
        coefficients.shrink_to_fit();
        let coefficient_ids = if coefficients.len() <= 1 << 16 {
            CoefficientIds::Narrow(ids.into_iter().map(|c| c as u16).collect())
        } else {
            CoefficientIds::Wide(ids)
        };
        Ok(Self {
            starts,
            variables,
            coefficient_ids,
            coefficients,
        })
    }

    /// The matrix in ark-relations' form again (terms in their original order).
    pub fn to_matrix(&self) -> Matrix<Fr> {
        self.starts
            .windows(2)
            .map(|w| {
                (w[0] as usize..w[1] as usize)
                    .map(|t| {
                        let c = self.coefficient_ids.get(t);
                        (self.coefficients[c as usize], self.variables[t] as usize)
                    })
                    .collect()
            })
            .collect()
    }

    /// Heap bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.starts.capacity() * 4
            + self.variables.capacity() * 4
            + self.coefficient_ids.memory_bytes()
            + self.coefficients.capacity() * std::mem::size_of::<Fr>()
    }

    /// Terms over all rows.
    pub fn num_terms(&self) -> usize {
        self.variables.len()
    }

    /// Variables other than the constant 1 (variable 0) with a non-zero coefficient in some
    /// row: those whose QAP polynomial of this matrix is not zero, hence whose proving-key
    /// point is not the identity.
    pub fn num_variables_used(&self) -> usize {
        let mut used = vec![false; self.variables.iter().max().map_or(0, |&v| v as usize + 1)];
        for (t, &v) in self.variables.iter().enumerate() {
            if !self.coefficients[self.coefficient_ids.get(t) as usize].is_zero() {
                used[v as usize] = true;
            }
        }
        used.iter().skip(1).filter(|&&u| u).count()
    }

    /// The largest variable any term names, if any: what a reader checks against the circuit's
    /// number of variables.
    pub fn max_variable(&self) -> Option<usize> {
        self.variables.iter().max().map(|&v| v as usize)
    }

    /// Distinct coefficients (1 always counted).
    pub fn num_coefficients(&self) -> usize {
        self.coefficients.len()
    }
}

impl Rows for CompactMatrix {
    fn num_rows(&self) -> usize {
        self.starts.len() - 1
    }

    fn evaluate(&self, row: usize, assignment: &[Fr]) -> Fr {
        let terms = self.starts[row] as usize..self.starts[row + 1] as usize;
        let mut sum = Fr::zero();
        let mut add = |variable: u32, c: u32| {
            let value = assignment[variable as usize];
            if c == ONE {
                sum += value;
            } else {
                sum += value * self.coefficients[c as usize];
            }
        };
        let variables = &self.variables[terms.clone()];
        match &self.coefficient_ids {
            CoefficientIds::Narrow(ids) => variables
                .iter()
                .zip(&ids[terms])
                .for_each(|(&v, &c)| add(v, u32::from(c))),
            CoefficientIds::Wide(ids) => variables
                .iter()
                .zip(&ids[terms])
                .for_each(|(&v, &c)| add(v, c)),
        }
        sum
    }
}

/// The file form of a compact matrix (kept between runs: [`crate::cache`]). Reading checks the
/// shape whatever `Validate` says (rows that start in order and end at the last term, one
/// coefficient index per term, each within the table, the table's first entry 1), so a damaged
/// file is refused instead of indexing out of bounds; the variables are checked against the
/// circuit's count by the caller, who knows it ([`CompactMatrix::max_variable`]).
impl CanonicalSerialize for CompactMatrix {
    fn serialize_with_mode<W: Write>(
        &self,
        mut writer: W,
        compress: Compress,
    ) -> Result<(), SerializationError> {
        self.starts.serialize_with_mode(&mut writer, compress)?;
        self.variables.serialize_with_mode(&mut writer, compress)?;
        match &self.coefficient_ids {
            CoefficientIds::Narrow(ids) => {
                0u8.serialize_with_mode(&mut writer, compress)?;
                ids.serialize_with_mode(&mut writer, compress)?;
            }
            CoefficientIds::Wide(ids) => {
                1u8.serialize_with_mode(&mut writer, compress)?;
                ids.serialize_with_mode(&mut writer, compress)?;
            }
        }
        self.coefficients.serialize_with_mode(&mut writer, compress)
    }

    fn serialized_size(&self, compress: Compress) -> usize {
        let ids = match &self.coefficient_ids {
            CoefficientIds::Narrow(ids) => ids.serialized_size(compress),
            CoefficientIds::Wide(ids) => ids.serialized_size(compress),
        };
        self.starts.serialized_size(compress)
            + self.variables.serialized_size(compress)
            + 1
            + ids
            + self.coefficients.serialized_size(compress)
    }
}

impl Valid for CompactMatrix {
    fn check(&self) -> Result<(), SerializationError> {
        let ids_len = match &self.coefficient_ids {
            CoefficientIds::Narrow(ids) => ids.len(),
            CoefficientIds::Wide(ids) => ids.len(),
        };
        let in_table = |id: u32| (id as usize) < self.coefficients.len();
        let ids_in_table = match &self.coefficient_ids {
            CoefficientIds::Narrow(ids) => ids.iter().all(|&id| in_table(u32::from(id))),
            CoefficientIds::Wide(ids) => ids.iter().all(|&id| in_table(id)),
        };
        let shaped = self.starts.first() == Some(&0)
            && self.starts.windows(2).all(|w| w[0] <= w[1])
            && self.starts.last().map(|&end| end as usize) == Some(self.variables.len())
            && ids_len == self.variables.len()
            && self.coefficients.first() == Some(&Fr::one())
            && ids_in_table;
        if shaped {
            Ok(())
        } else {
            Err(SerializationError::InvalidData)
        }
    }
}

impl CanonicalDeserialize for CompactMatrix {
    fn deserialize_with_mode<R: Read>(
        mut reader: R,
        compress: Compress,
        validate: Validate,
    ) -> Result<Self, SerializationError> {
        let starts = Vec::deserialize_with_mode(&mut reader, compress, validate)?;
        let variables = Vec::deserialize_with_mode(&mut reader, compress, validate)?;
        let coefficient_ids = match u8::deserialize_with_mode(&mut reader, compress, validate)? {
            0 => {
                CoefficientIds::Narrow(Vec::deserialize_with_mode(&mut reader, compress, validate)?)
            }
            1 => CoefficientIds::Wide(Vec::deserialize_with_mode(&mut reader, compress, validate)?),
            _ => return Err(SerializationError::InvalidData),
        };
        let coefficients = Vec::deserialize_with_mode(&mut reader, compress, validate)?;
        let mut matrix = Self {
            starts,
            variables,
            coefficient_ids,
            coefficients,
        };
        matrix.check()?;
        // Kept for the life of the prover: no spare capacity from reading.
        matrix.starts.shrink_to_fit();
        matrix.variables.shrink_to_fit();
        match &mut matrix.coefficient_ids {
            CoefficientIds::Narrow(ids) => ids.shrink_to_fit(),
            CoefficientIds::Wide(ids) => ids.shrink_to_fit(),
        }
        matrix.coefficients.shrink_to_fit();
        Ok(matrix)
    }
}

/// Heap bytes of a matrix in ark-relations' form (for comparison in measurements).
pub fn matrix_memory_bytes(matrix: &Matrix<Fr>) -> usize {
    matrix.capacity() * std::mem::size_of::<Vec<(Fr, usize)>>()
        + matrix
            .iter()
            .map(|row| row.capacity() * std::mem::size_of::<(Fr, usize)>())
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::{full_assignment, r1cs, sample_transfer};
    use ark_std::UniformRand;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn compact_rows_evaluate_as_arks_and_round_trip() {
        // k = 3: the sample's sender is member 2.
        let (setup, proving) = sample_transfer(3, &mut ChaCha20Rng::seed_from_u64(11));
        let shape = r1cs(setup).unwrap();
        let honest = full_assignment(proving).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(12);
        let random: Vec<Fr> = (0..honest.len()).map(|_| Fr::rand(&mut rng)).collect();
        for matrix in &shape.matrices {
            let compact = CompactMatrix::new(matrix).unwrap();
            assert_eq!(compact.num_rows(), matrix.len());
            assert_eq!(&compact.to_matrix(), matrix);
            for assignment in [&honest, &random] {
                for row in 0..matrix.len() {
                    assert_eq!(
                        compact.evaluate(row, assignment),
                        matrix.evaluate(row, assignment),
                        "row {row}"
                    );
                }
            }
            // The point of it: several times smaller (6 against 40 bytes a term, 4 against
            // 24 a row), with a few thousand distinct coefficients at most.
            assert!(
                compact.num_coefficients() < 5_000,
                "{}",
                compact.num_coefficients()
            );
            assert!(matches!(compact.coefficient_ids, CoefficientIds::Narrow(_)));
            assert!(
                compact.memory_bytes() * 5 < matrix_memory_bytes(matrix),
                "{} against {}",
                compact.memory_bytes(),
                matrix_memory_bytes(matrix)
            );
        }
    }

    #[test]
    fn edge_rows_and_coefficients() {
        let two = Fr::from(2u64);
        let minus_one = -Fr::one();
        let matrix: Matrix<Fr> = vec![
            vec![],
            vec![(Fr::one(), 0)],
            vec![(minus_one, 3), (two, 1), (Fr::zero(), 2), (two, 3)],
            vec![],
        ];
        let compact = CompactMatrix::new(&matrix).unwrap();
        assert_eq!(compact.to_matrix(), matrix);
        assert_eq!(compact.num_terms(), 5);
        assert_eq!(compact.num_coefficients(), 4, "1, -1, 2 and 0");
        let assignment = [1u64, 10, 100, 1000].map(Fr::from);
        let values: Vec<Fr> = (0..4).map(|r| compact.evaluate(r, &assignment)).collect();
        assert_eq!(values, [0u64, 1, 1020, 0].map(Fr::from));
        assert_eq!(
            compact.num_variables_used(),
            2,
            "1 and 3: 2 has only a zero coefficient, the constant is not counted"
        );
        let empty = CompactMatrix::new(&Vec::new()).unwrap();
        assert_eq!(empty.num_rows(), 0);
        assert_eq!(empty.num_variables_used(), 0);
    }

    /// Past 65,536 distinct coefficients the indices widen to 32 bits, values unchanged.
    #[test]
    fn many_distinct_coefficients_take_wide_indices() {
        let rows = 70_000;
        let matrix: Matrix<Fr> = (0..rows)
            .map(|i| vec![(Fr::from(i as u64 + 2), i % 7), (Fr::one(), 7)])
            .collect();
        let compact = CompactMatrix::new(&matrix).unwrap();
        assert!(matches!(compact.coefficient_ids, CoefficientIds::Wide(_)));
        assert_eq!(compact.num_coefficients(), rows + 1);
        assert_eq!(compact.to_matrix(), matrix);
        let assignment: Vec<Fr> = (0..8u64).map(|x| Fr::from(x * x + 1)).collect();
        for row in [0, 1, 65_534, 65_535, 65_536, rows - 1] {
            assert_eq!(
                compact.evaluate(row, &assignment),
                matrix.evaluate(row, &assignment)
            );
        }
        let small = CompactMatrix::new(&matrix[..100].to_vec()).unwrap();
        assert!(matches!(small.coefficient_ids, CoefficientIds::Narrow(_)));
    }
}
