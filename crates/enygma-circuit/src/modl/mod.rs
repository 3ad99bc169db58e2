//! Reduction modulo L, the order of Baby Jubjub's prime subgroup.
//!
//! The reference reduces hash outputs "mod L" in checks 2, 4, 5, 6, 8 and 14: the integer
//! remainder of the field element's canonical value. Since L < r < 8L, the quotient is at most 7,
//! and `7L + rem` stays below r only when `rem < r − 7L`: the gadget in [`constraints`] enforces
//! exactly these bounds, so that the remainder is the one this native function computes.

pub mod constraints;

use std::sync::OnceLock;

use ark_ff::{BigInteger, PrimeField};
use num_bigint::BigUint;

use crate::Fr;

/// L as a decimal string (the reference's `JubJubPrimeSubGroup`).
pub const L_DECIMAL: &str =
    "2736030358979909402780800718157159386076813972158567259200215660948447373041";

/// L has 251 bits: every remainder fits in 251 bits.
pub const L_BITS: usize = 251;

pub fn l_biguint() -> &'static BigUint {
    static L: OnceLock<BigUint> = OnceLock::new();
    L.get_or_init(|| L_DECIMAL.parse().expect("L is a decimal literal"))
}

/// L as an element of BN254's scalar field (L < r).
pub fn l_fr() -> Fr {
    static L: OnceLock<Fr> = OnceLock::new();
    *L.get_or_init(|| Fr::from(l_biguint().clone()))
}

/// L as the big integer of [`l_fr`], for scalar multiplication and comparisons.
pub fn l_fr_bigint() -> <Fr as PrimeField>::BigInt {
    l_fr().into_bigint()
}

/// The canonical integer of `x` on the heap, for public values and tests only: the secret
/// values' helpers ([`div_rem`], [`crate::amount::is_valid`]) work on the field element's fixed
/// limbs and wipe their copy, leaving nothing behind in freed memory.
pub fn to_biguint(x: &Fr) -> BigUint {
    BigUint::from_bytes_le(&x.into_bigint().to_bytes_le())
}

/// `(quotient, remainder)` of the canonical integer of `x` divided by L. The values reduced are
/// often secret (a key's hash, a balance): the canonical integer is copied into four limbs on
/// the stack, reduced by at most seven subtractions of L (r < 8L), and wiped.
pub fn div_rem(x: &Fr) -> (u8, Fr) {
    use zeroize::Zeroize;
    let l = l_fr_bigint();
    let mut n = x.into_bigint();
    let mut q = 0u8;
    while n >= l {
        n.sub_with_borrow(&l);
        q += 1;
    }
    debug_assert!(q <= 7, "r < 8L, so the quotient is at most 7");
    let rem = Fr::from_bigint(n).expect("a remainder below L is below r");
    n.0.zeroize();
    (q, rem)
}

/// The canonical integer of `x` modulo L, as a field element.
pub fn reduce(x: &Fr) -> Fr {
    div_rem(x).1
}

/// `true` when `x`'s canonical integer is below L: the one representative of its residue that a
/// balance, an amount, a tx value or a random value may take (an alias `x + L` stands for the
/// same group element, so accepting it would let one quantity pass as two).
pub fn is_reduced(x: &Fr) -> bool {
    x.into_bigint() < l_fr_bigint()
}

/// `true` when `x`'s canonical integer is a multiple of L (0, L, …, 7L): check 9's test that
/// Pedersen of a sum is the identity, without multiplying anything.
pub fn is_multiple_of_l(x: &Fr) -> bool {
    div_rem(x).1 == Fr::from(0u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::Field;

    #[test]
    fn l_fits_251_bits_and_r_is_below_8l() {
        assert_eq!(l_biguint().bits(), L_BITS as u64);
        let r = BigUint::from_bytes_le(&Fr::MODULUS.to_bytes_le());
        assert!(r < l_biguint() * 8u32 && r > l_biguint() * 7u32);
    }

    #[test]
    fn reduces_edges() {
        let l = l_fr();
        assert_eq!(div_rem(&Fr::from(0u64)), (0, Fr::from(0u64)));
        assert_eq!(div_rem(&l), (1, Fr::from(0u64)));
        assert_eq!(div_rem(&(l - Fr::ONE)), (0, l - Fr::ONE));
        // The largest field element: r − 1 = 7L + (r − 7L − 1).
        let minus_one = -Fr::ONE;
        let (q, rem) = div_rem(&minus_one);
        assert_eq!(q, 7);
        assert_eq!(Fr::from(7u64) * l + rem, minus_one);
    }

    #[test]
    fn limbs_agree_with_big_integer_division() {
        use ark_std::{test_rng, UniformRand};
        let l = l_fr();
        let mut rng = test_rng();
        let edges = (0..8u64).flat_map(|k| {
            let kl = Fr::from(k) * l;
            [kl, kl + Fr::ONE, kl - Fr::ONE]
        });
        for x in edges.chain((0..500).map(|_| Fr::rand(&mut rng))) {
            let n = to_biguint(&x);
            let expected_q = u8::try_from(&n / l_biguint()).unwrap();
            let expected_rem = Fr::from(&n % l_biguint());
            assert_eq!(div_rem(&x), (expected_q, expected_rem), "x = {x}");
        }
    }

    #[test]
    fn reduced_means_below_l() {
        let l = l_fr();
        for (x, expected) in [
            (Fr::from(0u64), true),
            (l - Fr::ONE, true),
            (l, false),
            (l + Fr::ONE, false),
            (-Fr::ONE, false),
        ] {
            assert_eq!(is_reduced(&x), expected, "x = {x}");
            assert_eq!(is_reduced(&x), reduce(&x) == x);
        }
    }
}
