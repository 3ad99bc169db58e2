//! Bit decompositions shared by the gadgets, and the comparison of such bits with a constant.

use ark_ff::{BigInteger, PrimeField};
use ark_r1cs_std::{
    alloc::AllocVar,
    boolean::Boolean,
    eq::EqGadget,
    fields::{fp::FpVar, FieldVar},
};
use ark_relations::gr1cs::{ConstraintSystemRef, SynthesisError};
use num_bigint::BigUint;

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

/// Enforces that the integer with little-endian bits `bits` (each already boolean) is at most
/// the constant `bound`.
///
/// Scanning from the most significant bit, the number stays ≤ `bound` as long as, at every zero
/// of `bound`, either some higher bit was already below `bound`'s or this bit is 0. With `p` the
/// flag "every higher bit equals `bound`'s":
///
/// - a run of zeros of `bound` costs one constraint, `p · Σ bits = 0` (booleans sum to 0 only if
///   all are 0), and leaves `p` unchanged;
/// - a run of k ones updates `p` to `p ∧ (all k bits are 1)`: free for a single leading bit,
///   one product for two bits or a single bit after the first run, otherwise one zero test of
///   `(k − Σ bits) + (1 − p)` (two constraints; the sum is a small integer, so it cannot wrap);
/// - the run of ones at the bottom of `bound` needs nothing: whatever those bits are, the number
///   is at most `bound` once the bits above agree with it.
///
/// ark-r1cs-std's `Boolean::enforce_smaller_or_equal_than_le` follows the same scan but spends
/// one constraint per zero *bit* rather than per run of zeros: 111 constraints instead of 48 for
/// `10^36 − 1`, and the amount check runs twelve times in a join-split. Bits above `bound`'s
/// length must be zero (one constraint for all of them).
pub fn enforce_at_most(bits: &[Boolean<Fr>], bound: &BigUint) -> Result<(), SynthesisError> {
    let n = bound.bits() as usize;
    let sum =
        |bits: &[Boolean<Fr>]| -> FpVar<Fr> { bits.iter().map(|b| FpVar::from(b.clone())).sum() };
    if bits.len() > n {
        sum(&bits[n..]).enforce_equal(&FpVar::zero())?;
    }
    if bits.len() < n {
        // Below 2^len ≤ 2^(n−1) ≤ bound, whatever the bits.
        return Ok(());
    }
    let bits = &bits[..n];
    let bound_bit = |i: usize| bound.bit(i as u64);
    // Bits below the lowest zero of `bound` are free.
    let Some(lowest_zero) = (0..n).find(|&i| !bound_bit(i)) else {
        return Ok(());
    };
    // `None` stands for the constant `true` before any bit is read.
    let mut prefix_equal: Option<FpVar<Fr>> = None;
    let mut i = bits.len();
    while i > lowest_zero {
        let one = bound_bit(i - 1);
        let mut start = i - 1;
        while start > lowest_zero && bound_bit(start - 1) == one {
            start -= 1;
        }
        let run = &bits[start..i];
        if one {
            prefix_equal = Some(match (&prefix_equal, run) {
                (None, [a]) => FpVar::from(a.clone()),
                (None, [a, b]) => FpVar::from(a.clone()) * FpVar::from(b.clone()),
                (Some(p), [a]) => p * FpVar::from(a.clone()),
                (p, run) => {
                    let not_p = p
                        .as_ref()
                        .map_or(FpVar::zero(), |p| FpVar::one() - p.clone());
                    let missing = FpVar::Constant(Fr::from(run.len() as u64)) - sum(run) + not_p;
                    FpVar::from(missing.is_zero()?)
                }
            });
        } else {
            match &prefix_equal {
                None => sum(run).enforce_equal(&FpVar::zero())?,
                Some(p) => p.mul_equals(&sum(run), &FpVar::zero())?,
            }
        }
        i = start;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_relations::gr1cs::ConstraintSystem;

    fn at_most(value: u64, width: usize, bound: u64) -> (bool, usize) {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let bits = alloc_bits(cs.clone(), || Ok(Fr::from(value)), width).unwrap();
        let before = cs.num_constraints();
        enforce_at_most(&bits, &BigUint::from(bound)).unwrap();
        (cs.is_satisfied().unwrap(), cs.num_constraints() - before)
    }

    /// Every value and every bound of up to 6 bits, including bits wider than the bound.
    #[test]
    fn agrees_with_integer_comparison_exhaustively() {
        for width in 1..=6usize {
            for bound in 0..(1u64 << 6) {
                for value in 0..(1u64 << width) {
                    assert_eq!(
                        at_most(value, width, bound).0,
                        value <= bound,
                        "{value} ≤ {bound} on {width} bits"
                    );
                }
            }
        }
    }

    #[test]
    fn costs_one_per_run_of_zeros_and_at_most_two_per_run_of_ones() {
        // 0b1011_0111: runs (from the top) 1, 0, 11, 0, then free ones.
        // Leading single one: free; zero run: 1; run of two after it: 2; zero run: 1.
        assert_eq!(at_most(0, 8, 0b1011_0111).1, 4);
        // All ones: nothing to check.
        assert_eq!(at_most(5, 8, 0xff).1, 0);
        // Extra high bits cost one constraint for all of them.
        assert_eq!(at_most(5, 10, 0xff).1, 1);
        // 10^36 − 1, the amount bound: 120 bits, 48 constraints.
        let bound = BigUint::from(10u32).pow(36) - 1u32;
        let cs = ConstraintSystem::<Fr>::new_ref();
        let bits = alloc_bits(cs.clone(), || Ok(Fr::from(7u64)), 120).unwrap();
        enforce_at_most(&bits, &bound).unwrap();
        assert_eq!(cs.num_constraints() - 120, 48);
        assert!(cs.is_satisfied().unwrap());
    }

    /// The stock gadget's cost on the same bound, for the comparison in the documentation.
    #[test]
    fn stock_comparison_costs_more() {
        let bound = BigUint::from(10u32).pow(36) - 1u32;
        let cs = ConstraintSystem::<Fr>::new_ref();
        let bits = alloc_bits(cs.clone(), || Ok(Fr::from(7u64)), 120).unwrap();
        Boolean::enforce_smaller_or_equal_than_le(&bits, bound.to_u64_digits()).unwrap();
        assert_eq!(cs.num_constraints() - 120, 111);
    }
}
