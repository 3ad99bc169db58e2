//! The proving key as the prover holds it: ark-groth16's `ProvingKey` without the identity
//! points of its B query.
//!
//! Why: ark-groth16 stores a B point, in G1 and in G2, for every variable. A variable that
//! occurs in no B factor has the identity there, and since the constraints are oriented to keep
//! variables out of B ([`crate::qap::orient`]) that is 28 % of a k=6 transfer's variables and
//! 130,675 points over the 18 instances: 192 bytes each (64 in G1, 128 in G2), about 24 MiB of
//! a loaded server that add nothing to a proof. B is kept at the variables it has, with their
//! positions (4 bytes each), and the B MSMs run over those variables only, which also spares
//! them the identity additions. A stays whole: its identities are 6 % of its points, and a
//! position per point would cost about what they save.

use ark_bn254::{Bn254, G1Affine, G2Affine};
use ark_ec::AffineRepr;
use ark_groth16::{ProvingKey, VerifyingKey};

use crate::qap::Reduction;

/// Why a proving key cannot be held: its queries disagree on the number of variables.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the proving key's queries disagree: A has {a} points, B {b_g1} in G1 and {b_g2} in G2")]
pub struct QueryLengthsError {
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
}

/// A Groth16 proving key with its B query held sparsely ([`BQuery`]); everything else is
/// ark-groth16's, point for point. The same proofs come out of it.
pub struct SparseProvingKey {
    pub vk: VerifyingKey<Bn254>,
    pub beta_g1: G1Affine,
    pub delta_g1: G1Affine,
    /// `A_i(τ)·G1` for every variable, the constant 1 first.
    pub a_query: Vec<G1Affine>,
    pub b_query: BQuery,
    pub h_query: Vec<G1Affine>,
    pub l_query: Vec<G1Affine>,
    /// The witness map the H query is made for.
    pub reduction: Reduction,
}

/// `B_i(τ)` in G1 and G2 at the variables `i` where it is not the identity in both groups.
pub struct BQuery {
    /// The constant 1's points: added outside the MSMs, like A's.
    pub constant_g1: G1Affine,
    pub constant_g2: G2Affine,
    /// The variables (besides the constant) B has, in increasing order, as positions in the
    /// assignment without the constant (variable `i` at `i − 1`): the MSMs' scalars are
    /// gathered from these positions.
    pub positions: Vec<u32>,
    pub g1: Vec<G1Affine>,
    pub g2: Vec<G2Affine>,
}

impl SparseProvingKey {
    /// Takes `pk`'s points, leaving out B's identities. Refused when B's queries and A do not
    /// have one point per variable, or when they hold not even the constant's.
    pub fn new(pk: ProvingKey<Bn254>) -> Result<Self, QueryLengthsError> {
        Self::with_reduction(pk, Reduction::Libsnark)
    }

    /// [`SparseProvingKey::new`] for a key of `reduction`.
    pub fn with_reduction(
        pk: ProvingKey<Bn254>,
        reduction: Reduction,
    ) -> Result<Self, QueryLengthsError> {
        let ProvingKey {
            vk,
            beta_g1,
            delta_g1,
            a_query,
            b_g1_query,
            b_g2_query,
            h_query,
            l_query,
        } = pk;
        let (variables, b_g1_len, b_g2_len) = (a_query.len(), b_g1_query.len(), b_g2_query.len());
        if variables == 0
            || b_g1_len != variables
            || b_g2_len != variables
            || u32::try_from(variables).is_err()
        {
            return Err(QueryLengthsError {
                a: variables,
                b_g1: b_g1_len,
                b_g2: b_g2_len,
            });
        }
        let in_b: Vec<usize> = (1..variables)
            .filter(|&i| !(b_g1_query[i].is_zero() && b_g2_query[i].is_zero()))
            .collect();
        let b_query = BQuery {
            constant_g1: b_g1_query[0],
            constant_g2: b_g2_query[0],
            positions: in_b.iter().map(|&i| (i - 1) as u32).collect(),
            g1: in_b.iter().map(|&i| b_g1_query[i]).collect(),
            g2: in_b.iter().map(|&i| b_g2_query[i]).collect(),
        };
        Ok(Self {
            vk,
            beta_g1,
            delta_g1,
            a_query,
            b_query,
            h_query,
            l_query,
            reduction,
        })
    }

    /// The number of variables the key is for, the constant 1 included.
    pub fn num_variables(&self) -> usize {
        self.a_query.len()
    }

    /// Heap bytes of the queries and the positions (the verifying key's few points aside).
    pub fn memory_bytes(&self) -> usize {
        let g1 = std::mem::size_of::<G1Affine>();
        let b = &self.b_query;
        (self.a_query.len() + b.g1.len() + self.h_query.len() + self.l_query.len()) * g1
            + b.g2.len() * std::mem::size_of::<G2Affine>()
            + b.positions.len() * 4
    }
}

impl BQuery {
    /// The scalars of B's MSMs: `assignment` (without the constant) at B's positions.
    pub fn gather<T: Copy>(&self, assignment: &[T]) -> Vec<T> {
        self.positions
            .iter()
            .map(|&p| assignment[p as usize])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_bn254::{G1Projective, G2Projective};
    use ark_ec::{CurveGroup, PrimeGroup};

    /// A key of 5 variables whose B is the identity at variables 2 and 4 (in both groups), and
    /// only in G2 at variable 3.
    fn key() -> ProvingKey<Bn254> {
        let g1 = |k: u64| (G1Projective::generator() * ark_bn254::Fr::from(k)).into_affine();
        let g2 = |k: u64| (G2Projective::generator() * ark_bn254::Fr::from(k)).into_affine();
        let (zero1, zero2) = (G1Affine::zero(), G2Affine::zero());
        ProvingKey {
            vk: VerifyingKey::default(),
            beta_g1: g1(100),
            delta_g1: g1(101),
            a_query: (1..=5).map(g1).collect(),
            b_g1_query: vec![g1(10), g1(11), zero1, g1(13), zero1],
            b_g2_query: vec![g2(20), g2(21), zero2, zero2, zero2],
            h_query: vec![g1(30), g1(31)],
            l_query: vec![g1(40), g1(41), g1(42), g1(43)],
        }
    }

    #[test]
    fn b_keeps_the_variables_it_has_and_their_points() {
        let pk = key();
        let sparse = SparseProvingKey::new(pk.clone()).unwrap();
        let b = &sparse.b_query;
        assert_eq!(b.constant_g1, pk.b_g1_query[0]);
        assert_eq!(b.constant_g2, pk.b_g2_query[0]);
        // Variables 1 and 3 (positions 0 and 2); 3 is kept for its G1 point.
        assert_eq!(b.positions, [0, 2]);
        assert_eq!(b.g1, [pk.b_g1_query[1], pk.b_g1_query[3]]);
        assert_eq!(b.g2, [pk.b_g2_query[1], G2Affine::zero()]);
        assert_eq!(sparse.a_query, pk.a_query);
        assert_eq!(sparse.h_query, pk.h_query);
        assert_eq!(sparse.l_query, pk.l_query);
        assert_eq!((sparse.beta_g1, sparse.delta_g1), (pk.beta_g1, pk.delta_g1));
        assert_eq!(sparse.num_variables(), 5);
        assert_eq!(b.gather(&['a', 'b', 'c', 'd']), ['a', 'c']);
        assert_eq!(
            sparse.memory_bytes(),
            (5 + 2 + 2 + 4) * 64 + 2 * 128 + 2 * 4
        );
    }

    #[test]
    fn queries_of_different_lengths_are_refused() {
        let mut pk = key();
        pk.b_g2_query.pop();
        assert_eq!(
            SparseProvingKey::new(pk).err(),
            Some(QueryLengthsError {
                a: 5,
                b_g1: 5,
                b_g2: 4
            })
        );
        let mut pk = key();
        pk.b_g1_query.push(G1Affine::zero());
        assert!(SparseProvingKey::new(pk).is_err());
        let mut empty = key();
        (empty.a_query, empty.b_g1_query, empty.b_g2_query) = (vec![], vec![], vec![]);
        assert!(SparseProvingKey::new(empty).is_err());
    }
}
