//! Sound reduction modulo L.
//!
//! The reference takes the remainder of `x mod L` from a hint and never ties it to `x` (or
//! bounds only the remainder, leaving the quotient free): any value passes. Here the prover
//! supplies the quotient q and the remainder as bits, and the constraints pin them down:
//!
//! - `x = q·L + rem` in the field, with q given by 3 bits (q ≤ 7, since x < r < 8L);
//! - `rem` is the linear combination of 251 bits (rem ≥ 0, rem < 2²⁵¹);
//! - `t = L − 1 − rem − [q = 7]·(8L − r)` has 251 bits too, so `rem < L`, and when q = 7,
//!   `rem < r − 7L`: the integer `q·L + rem` is then below r, so the field equation holds over
//!   the integers (no wrap-around) and rem is exactly the remainder of x's canonical value.
//!
//! Cost: 3 + 251 + 1 + 2 + 251 + 1 = 509 constraints.

use ark_ff::{AdditiveGroup, Field, PrimeField};
use ark_r1cs_std::{
    boolean::Boolean,
    eq::EqGadget,
    fields::{fp::FpVar, FieldVar},
    GR1CSVar,
};
use ark_relations::gr1cs::SynthesisError;
use num_bigint::BigUint;

use super::{div_rem, l_biguint, l_fr, L_BITS};
use crate::{bits::alloc_bits, Fr};

/// `8L − r`: how far the largest quotient's range `[7L, 8L)` reaches past the field.
pub fn wrap_margin() -> Fr {
    let r = BigUint::from_bytes_le(&ark_ff::BigInteger::to_bytes_le(&Fr::MODULUS));
    Fr::from(l_biguint() * 8u32 - r)
}

/// `x mod L` with its little-endian bits (251 of them).
pub struct Reduced {
    pub remainder: FpVar<Fr>,
    pub remainder_bits: Vec<Boolean<Fr>>,
}

/// Reduces `x` modulo L; see the module documentation for why this is sound.
pub fn reduce(x: &FpVar<Fr>) -> Result<Reduced, SynthesisError> {
    reduce_with_hint(x, || Ok(div_rem(&x.value()?)))
}

/// [`reduce`] with the prover's hint `(q, rem)` given explicitly, so that tests can show that
/// no dishonest hint satisfies the constraints.
pub(crate) fn reduce_with_hint(
    x: &FpVar<Fr>,
    hint: impl Fn() -> Result<(u8, Fr), SynthesisError>,
) -> Result<Reduced, SynthesisError> {
    let remainder_bits = alloc_bits(x.cs(), || Ok(hint()?.1), L_BITS)?;
    let remainder = Boolean::le_bits_to_fp(&remainder_bits)?;
    enforce_remainder_with_hint(x, &remainder, || Ok(hint()?.0))?;
    Ok(Reduced {
        remainder,
        remainder_bits,
    })
}

/// Enforces `remainder = x mod L` for a remainder that is already known to be a non-negative
/// integer below 2²⁵² (a linear combination of at most 252 constrained bits). Only the quotient
/// (3 bits) and the upper bound (251 bits) are added: 258 constraints instead of [`reduce`]'s 509.
pub fn enforce_remainder(x: &FpVar<Fr>, remainder: &FpVar<Fr>) -> Result<(), SynthesisError> {
    enforce_remainder_with_hint(x, remainder, || Ok(div_rem(&x.value()?).0))
}

fn enforce_remainder_with_hint(
    x: &FpVar<Fr>,
    remainder: &FpVar<Fr>,
    quotient: impl Fn() -> Result<u8, SynthesisError>,
) -> Result<(), SynthesisError> {
    let cs = x.cs().or(remainder.cs());
    let q_bits = alloc_bits(cs.clone(), || Ok(Fr::from(quotient()?)), 3)?;
    let q = Boolean::le_bits_to_fp(&q_bits)?;
    x.enforce_equal(&(q * l_fr() + remainder))?;

    // rem ≤ L − 1, and rem ≤ r − 7L − 1 when q = 7: the slack is a 251-bit number. A remainder
    // of at most 252 bits above its bound would leave a "negative" slack ≥ r − 2²⁵², which has
    // no 251-bit decomposition.
    let q_is_7 = FpVar::from(q_bits[0].clone())
        * FpVar::from(q_bits[1].clone())
        * FpVar::from(q_bits[2].clone());
    let slack = FpVar::Constant(l_fr() - Fr::ONE) - remainder - q_is_7 * wrap_margin();
    let slack_bits = alloc_bits(cs, || slack.value(), L_BITS)?;
    slack.enforce_equal(&Boolean::le_bits_to_fp(&slack_bits)?)
}

/// Bits allocated for a quantity that must be reduced (below L): one more than L has, so that an
/// alias `x + L` (below 2L < 2²⁵²) is representable and refused by the comparison in
/// [`enforce_reduced`], rather than silently truncated into some other value.
pub const REDUCED_ALLOC_BITS: usize = L_BITS + 1;

/// Enforces that the integer of the little-endian `bits` (each already boolean) is below L,
/// the native [`super::is_reduced`]: `bits ≤ L − 1` by [`crate::bits::enforce_at_most`]. For
/// [`REDUCED_ALLOC_BITS`] bits it costs [`REDUCED_COST`] constraints.
pub fn enforce_reduced(bits: &[Boolean<Fr>]) -> Result<(), SynthesisError> {
    crate::bits::enforce_at_most(bits, &(l_biguint() - 1u32))
}

/// Constraints of [`enforce_reduced`] on [`REDUCED_ALLOC_BITS`] bits (one for the top bit, the
/// rest for the runs of L − 1's bits).
pub const REDUCED_COST: usize = 152;

/// Check 9: the canonical integer of `x` is one of 0, L, …, 7L (the multiples of L below r),
/// i.e. `Π_{j=0}^{7} (x − j·L) = 0` (7 constraints).
pub fn enforce_multiple_of_l(x: &FpVar<Fr>) -> Result<(), SynthesisError> {
    let mut product = x.clone();
    for j in 1..7u64 {
        product *= x - l_fr() * Fr::from(j);
    }
    product.mul_equals(&(x - l_fr() * Fr::from(7u64)), &FpVar::Constant(Fr::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_r1cs_std::alloc::AllocVar;
    use ark_relations::gr1cs::ConstraintSystem;
    use ark_std::UniformRand;
    use rand::{Rng, SeedableRng};

    fn reduce_value(x: Fr) -> (Fr, bool, usize) {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let xv = FpVar::new_witness(cs.clone(), || Ok(x)).unwrap();
        let before = cs.num_constraints();
        let r = reduce(&xv).unwrap();
        (
            r.remainder.value().unwrap(),
            cs.is_satisfied().unwrap(),
            cs.num_constraints() - before,
        )
    }

    #[test]
    fn gadget_agrees_with_native_and_costs_509() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let l = l_fr();
        let seven_l = l * Fr::from(7u64);
        let edges = [
            Fr::ZERO,
            Fr::ONE,
            l - Fr::ONE,
            l,
            seven_l,
            seven_l - Fr::ONE,
            -Fr::ONE,
            wrap_margin() - Fr::ONE,
        ];
        for x in edges.into_iter().chain((0..20).map(|_| Fr::rand(&mut rng))) {
            let (rem, ok, cost) = reduce_value(x);
            assert!(ok, "honest reduction of {x} must satisfy");
            assert_eq!(rem, super::super::reduce(&x));
            assert_eq!(cost, 509);
        }
    }

    /// Builds the reduction with a chosen hint (q, rem) instead of the honest one.
    fn forged(x: Fr, q: u8, rem: Fr) -> bool {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let xv = FpVar::new_witness(cs.clone(), || Ok(x)).unwrap();
        reduce_with_hint(&xv, || Ok((q, rem))).unwrap();
        cs.is_satisfied().unwrap()
    }

    #[test]
    fn forged_remainders_are_rejected() {
        let l = l_fr();
        // The honest reduction passes through the same builder.
        let x = l * Fr::from(3u64) + Fr::from(5u64);
        assert!(forged(x, 3, Fr::from(5u64)));
        // A remainder that is not below L (quotient one too small).
        assert!(!forged(x, 2, l + Fr::from(5u64)));
        // Wrap-around: x small, claimed as 7L + (x + r − 7L), which is ≡ x in the field.
        let small = Fr::from(5u64);
        let wrapped_rem = small - l * Fr::from(7u64);
        assert!(!forged(small, 7, wrapped_rem));
        assert!(forged(small, 0, small));
    }

    fn remainder_check(x: Fr, rem: Fr, q: u8) -> (bool, usize) {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let xv = FpVar::new_witness(cs.clone(), || Ok(x)).unwrap();
        let rem_bits = alloc_bits(cs.clone(), || Ok(rem), 252).unwrap();
        let remv = Boolean::le_bits_to_fp(&rem_bits).unwrap();
        let before = cs.num_constraints();
        enforce_remainder_with_hint(&xv, &remv, || Ok(q)).unwrap();
        (cs.is_satisfied().unwrap(), cs.num_constraints() - before)
    }

    #[test]
    fn given_remainders_are_bound_and_cost_258() {
        let l = l_fr();
        let x = l * Fr::from(3u64) + Fr::from(5u64);
        assert_eq!(remainder_check(x, Fr::from(5u64), 3), (true, 258));
        // Not reduced: same residue, quotient one less.
        assert!(!remainder_check(x, l + Fr::from(5u64), 2).0);
        // Wrap-around: a small x as 7L + (x + r − 7L).
        let small = Fr::from(5u64);
        assert!(!remainder_check(small, small - l * Fr::from(7u64), 7).0);
        // The honest path agrees with the native reduction on the largest value.
        let top = -Fr::ONE;
        let (q, rem) = super::super::div_rem(&top);
        assert!(remainder_check(top, rem, q).0);
    }

    #[test]
    fn reduced_bits_agree_with_native_and_cost_their_count() {
        let l = l_fr();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let edges = [
            Fr::ZERO,
            Fr::ONE,
            l - Fr::ONE,
            l,
            l + Fr::ONE,
            l + l - Fr::ONE,
        ];
        for x in edges.into_iter().chain((0..20).map(|_| {
            super::super::reduce(&Fr::rand(&mut rng)) + l * Fr::from(u64::from(rng.gen::<bool>()))
        })) {
            let cs = ConstraintSystem::<Fr>::new_ref();
            let bits = alloc_bits(cs.clone(), || Ok(x), REDUCED_ALLOC_BITS).unwrap();
            assert_eq!(
                Boolean::le_bits_to_fp(&bits).unwrap().value().unwrap(),
                x,
                "representable"
            );
            let before = cs.num_constraints();
            enforce_reduced(&bits).unwrap();
            assert_eq!(cs.num_constraints() - before, REDUCED_COST);
            assert_eq!(
                cs.is_satisfied().unwrap(),
                super::super::is_reduced(&x),
                "x = {x}"
            );
        }
    }

    #[test]
    fn multiples_of_l_agree_with_native_and_cost_7() {
        let l = l_fr();
        for (x, expected) in [
            (Fr::ZERO, true),
            (l, true),
            (l * Fr::from(7u64), true),
            (Fr::ONE, false),
            (-Fr::ONE, false),
            (l * Fr::from(8u64), false),
        ] {
            assert_eq!(super::super::is_multiple_of_l(&x), expected);
            let cs = ConstraintSystem::<Fr>::new_ref();
            let xv = FpVar::new_witness(cs.clone(), || Ok(x)).unwrap();
            enforce_multiple_of_l(&xv).unwrap();
            assert_eq!(cs.is_satisfied().unwrap(), expected, "x = {x}");
            assert_eq!(cs.num_constraints(), 7);
        }
    }
}
