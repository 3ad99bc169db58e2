//! Token amounts of the DvP notes: integers below 10^36, the reference's bound. Ten inputs (or
//! two outputs) below it sum to less than 10^37, far below r, so value conservation checked in
//! the field is conservation of integers.

pub mod constraints;

use std::sync::OnceLock;

use num_bigint::BigUint;

use ark_ff::PrimeField;

use crate::Fr;

/// Every amount is below `10^36 < 2^120`: its bits fit in 120.
pub const AMOUNT_BITS: usize = 120;

/// 10^36, the first amount that is refused.
pub fn bound() -> &'static BigUint {
    static BOUND: OnceLock<BigUint> = OnceLock::new();
    BOUND.get_or_init(|| BigUint::from(10u32).pow(36))
}

/// `true` when `x`'s canonical integer is a valid amount (below 10^36). Amounts are secret: the
/// comparison runs on a copy of the field element's limbs, wiped afterwards, not on a heap copy.
pub fn is_valid(x: &Fr) -> bool {
    use zeroize::Zeroize;
    static BOUND: OnceLock<<Fr as PrimeField>::BigInt> = OnceLock::new();
    let bound = BOUND.get_or_init(|| Fr::from(bound().clone()).into_bigint());
    let mut n = x.into_bigint();
    let valid = n < *bound;
    n.0.zeroize();
    valid
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modl::to_biguint;
    use ark_ff::Field;

    #[test]
    fn bound_fits_120_bits_and_sums_cannot_wrap() {
        assert_eq!((bound() - 1u32).bits(), AMOUNT_BITS as u64);
        let r = to_biguint(&-Fr::ONE) + 1u32;
        assert!(bound() * 10u32 < r);
    }

    #[test]
    fn edges() {
        let max = Fr::from(bound() - 1u32);
        assert!(is_valid(&Fr::from(0u64)));
        assert!(is_valid(&max));
        assert!(!is_valid(&(max + Fr::ONE)));
        assert!(!is_valid(&-Fr::ONE));
    }

    #[test]
    fn limbs_agree_with_big_integers() {
        use ark_std::{test_rng, UniformRand};
        let mut rng = test_rng();
        let max = Fr::from(bound() - 1u32);
        let near = [max - Fr::ONE, max, max + Fr::ONE, max + Fr::from(2u64)];
        let small: Vec<Fr> = (0..200)
            .map(|_| Fr::from(u128::rand(&mut rng) >> 8))
            .collect();
        let large: Vec<Fr> = (0..200).map(|_| Fr::rand(&mut rng)).collect();
        for x in near.into_iter().chain(small).chain(large) {
            assert_eq!(is_valid(&x), to_biguint(&x) < *bound(), "x = {x}");
        }
    }
}
