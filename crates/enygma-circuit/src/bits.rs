//! Bit decompositions shared by the gadgets, the comparison of such bits with a constant, and
//! the integer sum of bit-decomposed values.

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
