//! An amount as constraints: its 120 bits (120 booleanity constraints) and the comparison of
//! those bits with 10^36 − 1 ([`crate::bits::enforce_at_most`], 48): 168 in all. The reference
//! decomposes each amount canonically into 254 bits and compares it twice (`< 10^36` and an
//! always-true `≥ 0`): about 1,489 constraints by dvp.md's estimate.

use ark_r1cs_std::{boolean::Boolean, fields::fp::FpVar};
use ark_relations::gr1cs::{ConstraintSystemRef, SynthesisError};

use super::{bound, AMOUNT_BITS};
use crate::{
    bits::{alloc_bits, enforce_at_most},
    Fr,
};

/// Allocates an amount as the combination of its bits, enforced below 10^36. A value of 2^120 or
/// more is taken modulo 2^120, so the returned variable is not the value: whatever it is then
/// bound to (a commitment, the conservation equation) fails.
pub fn alloc(
    cs: ConstraintSystemRef<Fr>,
    value: impl Fn() -> Result<Fr, SynthesisError>,
) -> Result<FpVar<Fr>, SynthesisError> {
    let bits = alloc_bits(cs, value, AMOUNT_BITS)?;
    enforce_at_most(&bits, &(bound() - 1u32))?;
    Boolean::le_bits_to_fp(&bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{Field, UniformRand};
    use ark_r1cs_std::GR1CSVar;
    use ark_relations::gr1cs::ConstraintSystem;
    use rand::{Rng, SeedableRng};

    /// (satisfied, the allocated variable equals the value, constraints).
    fn allocate(value: Fr) -> (bool, bool, usize) {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let v = alloc(cs.clone(), || Ok(value)).unwrap();
        (
            cs.is_satisfied().unwrap(),
            v.value().unwrap() == value,
            cs.num_constraints(),
        )
    }

    #[test]
    fn gadget_agrees_with_native_and_costs_168() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(61);
        let max = Fr::from(bound() - 1u32);
        let two_120 = Fr::from(2u64).pow([120]);
        let mut values = vec![
            Fr::from(0u64),
            Fr::from(1u64),
            max,
            max + Fr::ONE,
            two_120 - Fr::ONE,
            two_120,
            -Fr::ONE,
            Fr::rand(&mut rng),
        ];
        values.extend((0..8).map(|_| Fr::from(rng.gen::<u128>() >> rng.gen_range(0..12))));
        for value in values {
            let (ok, same, cost) = allocate(value);
            assert_eq!(cost, 168);
            assert_eq!(ok && same, super::super::is_valid(&value), "{value}");
        }
    }
}
