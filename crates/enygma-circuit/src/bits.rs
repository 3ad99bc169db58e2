//! Bit decompositions shared by the gadgets, and the integer sum of bit-decomposed values.

use ark_ff::{BigInteger, PrimeField};
use ark_r1cs_std::{
    alloc::AllocVar,
    boolean::Boolean,
    eq::EqGadget,
    fields::{fp::FpVar, FieldVar},
    GR1CSVar,
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

/// Longest values [`enforce_integer_sum`] takes: two 126-bit halves.
pub const MAX_SUMMED_BITS: usize = 252;
/// Most values [`enforce_integer_sum`] adds up: the carry between the halves then has 4 bits.
pub const MAX_SUMMANDS: usize = 16;

/// Enforces `Σ parts = total` over the integers, every value given by its `n`-bit little-endian
/// decomposition (n ≤ 252, at most 16 parts). In the field alone the sum could wrap: ten values
/// below 2²⁵² add up to as much as 2²⁵⁵ > r, so their field sum can equal a small total.
///
/// Each value is split at h = n/2 into a low and a high half, `x = x_hi·2ʰ + x_lo`, and with a
/// carry c given by its 4 bits (4 constraints) two equations are enforced (1 constraint each):
///
/// - `Σ lo = total_lo + c·2ʰ`: both sides are integers below 16·2ʰ ≤ 2¹³⁰ < r, so the field
///   equation is an integer one;
/// - `Σ hi + c = total_hi`: likewise below 2¹³¹.
///
/// Then `Σ parts = Σ hi·2ʰ + Σ lo = (total_hi − c)·2ʰ + total_lo + c·2ʰ = total` over the
/// integers. The carry is the only hint: `⌊Σ lo / 2ʰ⌋`, forced by the first equation since
/// `total_lo < 2ʰ`. The bits themselves are the callers' (e.g. from [`alloc_bits`]).
pub fn enforce_integer_sum(
    parts: &[Vec<Boolean<Fr>>],
    total: &[Boolean<Fr>],
) -> Result<(), SynthesisError> {
    let half = total.len() / 2;
    let honest_carry = || -> Result<Fr, SynthesisError> {
        let mut low_sum = BigUint::ZERO;
        for part in parts {
            let mut low = BigUint::ZERO;
            for (i, bit) in part[..half].iter().enumerate() {
                low.set_bit(i as u64, bit.value()?);
            }
            low_sum += low;
        }
        Ok(Fr::from(low_sum >> half))
    };
    enforce_integer_sum_with_carry(parts, total, honest_carry)
}

/// Bits of the carry between the halves of [`enforce_integer_sum`].
const CARRY_BITS: usize = 4;

/// [`enforce_integer_sum`] with the carry hint supplied by the caller (tests try every carry).
fn enforce_integer_sum_with_carry(
    parts: &[Vec<Boolean<Fr>>],
    total: &[Boolean<Fr>],
    carry: impl Fn() -> Result<Fr, SynthesisError>,
) -> Result<(), SynthesisError> {
    let n = total.len();
    assert!(
        n <= MAX_SUMMED_BITS && parts.len() <= MAX_SUMMANDS && (1 << CARRY_BITS) >= MAX_SUMMANDS,
        "the halves' sums must stay far below r"
    );
    assert!(
        parts.iter().all(|p| p.len() == n),
        "parts and total have the same width"
    );
    let half = n / 2;
    let cs = parts.iter().fold(total.cs(), |cs, part| cs.or(part.cs()));
    let carry_bits = alloc_bits(cs, carry, CARRY_BITS)?;
    let carry = Boolean::le_bits_to_fp(&carry_bits)?;
    let (mut low_sum, mut high_sum) = (FpVar::zero(), FpVar::zero());
    for part in parts {
        low_sum += Boolean::le_bits_to_fp(&part[..half])?;
        high_sum += Boolean::le_bits_to_fp(&part[half..])?;
    }
    let total_low = Boolean::le_bits_to_fp(&total[..half])?;
    let total_high = Boolean::le_bits_to_fp(&total[half..])?;
    let shift = FpVar::Constant(Fr::from(BigUint::from(1u8) << half));
    low_sum.enforce_equal(&(total_low + &carry * shift))?;
    (high_sum + carry).enforce_equal(&total_high)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modl::to_biguint;
    use ark_ff::{AdditiveGroup, Field, UniformRand};
    use ark_relations::gr1cs::ConstraintSystem;
    use rand::{Rng, SeedableRng};

    const BITS: usize = 252;

    /// A fresh system with `parts` and `total` allocated as 252-bit witnesses (their low bits,
    /// for values that do not fit) and the sum enforced with `carry`, or the honest carry.
    fn sum_system(parts: &[Fr], total: &Fr, carry: Option<u64>) -> ConstraintSystemRef<Fr> {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let bits = |x: Fr| alloc_bits(cs.clone(), || Ok(x), BITS).unwrap();
        let parts: Vec<_> = parts.iter().map(|p| bits(*p)).collect();
        let total = bits(*total);
        match carry {
            None => enforce_integer_sum(&parts, &total).unwrap(),
            Some(c) => enforce_integer_sum_with_carry(&parts, &total, || Ok(Fr::from(c))).unwrap(),
        }
        cs
    }

    /// Satisfied for some carry: nothing a prover can choose as the hint.
    fn any_carry_satisfies(parts: &[Fr], total: &Fr) -> bool {
        (0..1u64 << CARRY_BITS).any(|c| sum_system(parts, total, Some(c)).is_satisfied().unwrap())
    }

    fn below_2_252<R: Rng>(rng: &mut R) -> Fr {
        let x = to_biguint(&Fr::rand(rng)) >> 2u32;
        Fr::from(x)
    }

    #[test]
    fn gadget_agrees_with_the_integer_sum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(30);
        for n in [1, 2, 10, 16] {
            // Random parts whose integer sum is below 2^252: each below 2^252 / n.
            let parts: Vec<Fr> = (0..n)
                .map(|_| Fr::from(to_biguint(&below_2_252(&mut rng)) / n as u32))
                .collect();
            let sum: BigUint = parts.iter().map(to_biguint).sum();
            assert!(sum.bits() <= BITS as u64);
            let total = Fr::from(sum);
            let cs = sum_system(&parts, &total, None);
            assert!(cs.is_satisfied().unwrap(), "n = {n}");
            // Off by one either way: no carry helps.
            assert!(!any_carry_satisfies(&parts, &(total + Fr::ONE)), "n = {n}");
            assert!(!any_carry_satisfies(&parts, &(total - Fr::ONE)), "n = {n}");
        }
        // Edge values: all zero, all bits set in the low halves (the carry is 9 for ten parts).
        let zeros = vec![Fr::ZERO; 10];
        assert!(sum_system(&zeros, &Fr::ZERO, None).is_satisfied().unwrap());
        let low_ones = Fr::from((BigUint::from(1u8) << 126u32) - 1u32);
        let parts = vec![low_ones; 10];
        let total = Fr::from(to_biguint(&low_ones) * 10u32);
        assert!(sum_system(&parts, &total, None).is_satisfied().unwrap());
        assert!(!sum_system(&parts, &total, Some(8)).is_satisfied().unwrap());
    }

    /// Ten parts below 2^252 whose integer sum is total + r: their field sum is the total, and
    /// no carry makes the system hold.
    #[test]
    fn a_sum_that_wraps_past_r_is_refused_whatever_the_carry() {
        let r = to_biguint(&-Fr::ONE) + 1u32;
        let total = BigUint::from(1000u32);
        let wrapped = &r + &total;
        let part = &wrapped / 10u32;
        let mut parts = vec![part.clone(); 10];
        parts[9] = &wrapped - &part * 9u32;
        assert!(parts.iter().all(|p| p.bits() <= BITS as u64));
        let parts: Vec<Fr> = parts.into_iter().map(Fr::from).collect();
        let total = Fr::from(total);
        assert_eq!(
            parts.iter().sum::<Fr>(),
            total,
            "the field sum is blind to it"
        );
        assert!(!any_carry_satisfies(&parts, &total));
    }

    #[test]
    fn the_sum_of_ten_252_bit_values_costs_6_constraints_beyond_their_bits() {
        let cs = ConstraintSystem::<Fr>::new_ref();
        cs.set_mode(ark_relations::gr1cs::SynthesisMode::Setup);
        let bits =
            || alloc_bits(cs.clone(), || Err(SynthesisError::AssignmentMissing), BITS).unwrap();
        let parts: Vec<_> = (0..10).map(|_| bits()).collect();
        let total = bits();
        let before = cs.num_constraints();
        assert_eq!(before, 11 * BITS, "one booleanity constraint per bit");
        enforce_integer_sum(&parts, &total).unwrap();
        // The carry's 4 bits and the two equations.
        assert_eq!(cs.num_constraints() - before, 6);
    }
}
