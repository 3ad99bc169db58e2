//! Bit decompositions shared by the gadgets.

use ark_ff::{BigInteger, PrimeField};
use ark_r1cs_std::{alloc::AllocVar, boolean::Boolean};
use ark_relations::gr1cs::{ConstraintSystemRef, SynthesisError};

use crate::Fr;

/// Allocates the little-endian bits of a witness value known to be below `2^num_bits` (one
/// booleanity constraint each). The value itself is then the free linear combination
/// `Boolean::le_bits_to_fp(bits)`: wherever it is used, it is range-checked by construction.
pub fn alloc_bits(
    cs: ConstraintSystemRef<Fr>,
    value: impl Fn() -> Result<Fr, SynthesisError>,
    num_bits: usize,
) -> Result<Vec<Boolean<Fr>>, SynthesisError> {
    let v = value().ok().map(|v| v.into_bigint());
    (0..num_bits)
        .map(|i| {
            Boolean::new_witness(cs.clone(), || {
                v.map(|v| v.get_bit(i))
                    .ok_or(SynthesisError::AssignmentMissing)
            })
        })
        .collect()
}
