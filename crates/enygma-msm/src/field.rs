//! The base-field products of the scalar path's bucket additions, inlined where they are used.
//!
//! **Fq.** arkworks' Fq product is assembly (MULX/ADX) behind a call that takes its operands and
//! leaves its result in memory; in a batch of affine additions the result is then read back in
//! 16-byte loads that cannot be forwarded from the call's 8-byte stores, and those stalls were
//! the hottest instructions of the scalar G1 MSM on an AMD EPYC Zen 3. [`fq_mul`] is the same
//! Montgomery product (CIOS with the no-carry shortcut BN254's modulus allows, as arkworks' and
//! gnark-crypto's) in portable Rust, inlined, its result in registers: a tenth off the scalar
//! G1 MSM there, though alone in a loop it is a little slower than the assembly.
//!
//! **Fq2** = Fq[u]/(u² + 1). arkworks computes an Fq2 product as two sums of two products (four
//! 256×256 products and two reductions) in portable Rust; a G2 MSM on it took 1.23-1.42x
//! gnark-crypto's time where G1 took about the same. Here, as in gnark-crypto's E2 arithmetic,
//! Karatsuba needs three products, `a0·b0`, `a1·b1` and `(a0 + a1)·(b0 + b1)`, and each
//! coefficient is reduced once from its double-width value ([`fq2_mul`]):
//! - `c0 = a0·b0 − a1·b1 + p²`, in `(0, 2p²)`;
//! - `c1 = (a0 + a1)·(b0 + b1) − a0·b0 − a1·b1 = a0·b1 + a1·b0`, in `[0, 2p²)`.
//!
//! Both are below `p·2²⁵⁶` (as `2p < 2²⁵⁶`), the bound under which a Montgomery reduction
//! returns a value below `2p`, so one conditional subtraction makes it canonical. Inputs are
//! canonical (`< p`, arkworks' invariant), so `a0 + a1 < 2p < 2²⁵⁵` needs no reduction either.
//! A square takes two products ([`fq2_square`]: `(a0 + a1)(a0 − a1)` and `2·a0·a1`).
//!
//! **Assembly.** Where the build enables BMI2 and ADX (x86-64, `.cargo/config.toml`), the
//! products and reductions are [`adx`]'s: the same algorithms with two carry chains at once, a
//! fifth less time per Fq product than the portable Rust on an AMD EPYC Zen 3.

use ark_bn254::{Fq, Fq2, FqConfig};
use ark_ff::{BigInt, MontConfig};

#[cfg(all(
    target_arch = "x86_64",
    target_feature = "bmi2",
    target_feature = "adx"
))]
mod adx;

/// `$assembly` where [`adx`] is compiled in (x86-64 with BMI2 and ADX enabled at build time),
/// else `$portable`: the one place that chooses between them.
macro_rules! assembly_or_portable {
    ($assembly:expr, $portable:expr) => {{
        #[cfg(all(
            target_arch = "x86_64",
            target_feature = "bmi2",
            target_feature = "adx"
        ))]
        let value = $assembly;
        #[cfg(not(all(
            target_arch = "x86_64",
            target_feature = "bmi2",
            target_feature = "adx"
        )))]
        let value = $portable;
        value
    }};
}

const LIMBS: usize = 4;
const P: [u64; LIMBS] = <FqConfig as MontConfig<LIMBS>>::MODULUS.0;
/// `−p⁻¹ mod 2⁶⁴`.
const INV: u64 = <FqConfig as MontConfig<LIMBS>>::INV;

type Wide = [u64; 2 * LIMBS];

/// `p²`, added to `a0·b0 − a1·b1` to keep it non-negative.
const P_SQUARED: Wide = wide_product_portable(&P, &P);

/// The modulus' limbs and `−p⁻¹ mod 2⁶⁴`, where the assembly reads them.
#[cfg(all(
    target_arch = "x86_64",
    target_feature = "bmi2",
    target_feature = "adx"
))]
static FQ_MODULUS: adx::Modulus = [P[0], P[1], P[2], P[3], INV];

/// `a · b` in Fq2, equal to arkworks' `a * b`.
#[inline(always)]
pub(crate) fn fq2_mul(a: &Fq2, b: &Fq2) -> Fq2 {
    let (a0, a1) = (&a.c0.0 .0, &a.c1.0 .0);
    let (b0, b1) = (&b.c0.0 .0, &b.c1.0 .0);
    let v0 = wide_product(a0, b0);
    let v1 = wide_product(a1, b1);
    let sums = wide_product(&add(a0, a1), &add(b0, b1));
    let c0 = wide_add(&wide_sub(&v0, &v1), &P_SQUARED);
    let c1 = wide_sub(&wide_sub(&sums, &v0), &v1);
    Fq2::new(reduce(&c0), reduce(&c1))
}

/// `a²` in Fq2, equal to arkworks' `a.square()`.
#[inline(always)]
pub(crate) fn fq2_square(a: &Fq2) -> Fq2 {
    let c1 = fq_mul(&a.c0, &a.c1);
    Fq2::new(fq_mul(&(a.c0 + a.c1), &(a.c0 - a.c1)), c1 + c1)
}

/// `a · b` in Fq, equal to arkworks' `a * b`.
#[inline(always)]
pub(crate) fn fq_mul(a: &Fq, b: &Fq) -> Fq {
    assembly_or_portable!(
        canonical(adx::mont_mul(&a.0 .0, &b.0 .0, &FQ_MODULUS)),
        fq_mul_portable(a, b)
    )
}

/// [`fq_mul`] in portable Rust: for each limb of `b`, multiply and reduce by one limb (CIOS).
/// The modulus' top limb is below `2⁶³ − 2`, so the running value needs no fifth limb (the
/// no-carry shortcut, which [`adx::mont_mul`] takes too).
#[inline(always)]
// Where the assembly serves, only the tests call it.
#[cfg_attr(not(test), allow(dead_code))]
fn fq_mul_portable(a: &Fq, b: &Fq) -> Fq {
    const { assert!(P[LIMBS - 1] < u64::MAX / 2 - 1) };
    let (a, b) = (&a.0 .0, &b.0 .0);
    let mut t = [0u64; LIMBS];
    for &b_i in b {
        let mut carry1 = 0;
        t[0] = mac(t[0], a[0], b_i, &mut carry1);
        let k = t[0].wrapping_mul(INV);
        let mut carry2 = 0;
        // The low limb becomes zero by the choice of k.
        mac(t[0], k, P[0], &mut carry2);
        for j in 1..LIMBS {
            t[j] = mac(t[j], a[j], b_i, &mut carry1);
            t[j - 1] = mac(t[j], k, P[j], &mut carry2);
        }
        t[LIMBS - 1] = carry1 + carry2;
    }
    canonical(t)
}

/// `r` or `r − p`, whichever is below `p`, for `r < 2p`.
#[inline(always)]
fn canonical(r: [u64; LIMBS]) -> Fq {
    let mut borrow = 0;
    let s: [u64; LIMBS] = std::array::from_fn(|i| sbb(r[i], P[i], &mut borrow));
    Fq::new_unchecked(BigInt(if borrow == 0 { s } else { r }))
}

/// `a + b + carry`, the carry out in `carry`.
#[inline(always)]
fn adc(a: u64, b: u64, carry: &mut u64) -> u64 {
    let t = a as u128 + b as u128 + *carry as u128;
    *carry = (t >> 64) as u64;
    t as u64
}

/// `a − b − borrow`, the borrow (0 or 1) out in `borrow`.
#[inline(always)]
fn sbb(a: u64, b: u64, borrow: &mut u64) -> u64 {
    let (d, b1) = a.overflowing_sub(b);
    let (d, b2) = d.overflowing_sub(*borrow);
    *borrow = (b1 | b2) as u64;
    d
}

/// `acc + a·b + carry`, the high word out in `carry`.
#[inline(always)]
const fn mac(acc: u64, a: u64, b: u64, carry: &mut u64) -> u64 {
    let t = acc as u128 + a as u128 * b as u128 + *carry as u128;
    *carry = (t >> 64) as u64;
    t as u64
}

/// `a + b` of two values below `p < 2²⁵⁴`: no carry out.
#[inline(always)]
fn add(a: &[u64; LIMBS], b: &[u64; LIMBS]) -> [u64; LIMBS] {
    let mut carry = 0;
    std::array::from_fn(|i| adc(a[i], b[i], &mut carry))
}

/// `a · b`, all 512 bits.
#[inline(always)]
fn wide_product(a: &[u64; LIMBS], b: &[u64; LIMBS]) -> Wide {
    assembly_or_portable!(adx::wide_product(a, b), wide_product_portable(a, b))
}

/// [`wide_product`] in portable Rust (schoolbook; `const` for [`P_SQUARED`], hence the `while`
/// loops).
#[inline(always)]
const fn wide_product_portable(a: &[u64; LIMBS], b: &[u64; LIMBS]) -> Wide {
    let mut r = [0u64; 2 * LIMBS];
    let mut i = 0;
    while i < LIMBS {
        let mut carry = 0;
        let mut j = 0;
        while j < LIMBS {
            r[i + j] = mac(r[i + j], a[i], b[j], &mut carry);
            j += 1;
        }
        r[i + LIMBS] = carry;
        i += 1;
    }
    r
}

/// `a + b mod 2⁵¹²` (the callers' sums fit).
#[inline(always)]
fn wide_add(a: &Wide, b: &Wide) -> Wide {
    let mut carry = 0;
    std::array::from_fn(|i| adc(a[i], b[i], &mut carry))
}

/// `a − b mod 2⁵¹²` (the callers' differences are non-negative once `p²` is added).
#[inline(always)]
fn wide_sub(a: &Wide, b: &Wide) -> Wide {
    let mut borrow = 0;
    std::array::from_fn(|i| sbb(a[i], b[i], &mut borrow))
}

/// `t · 2⁻²⁵⁶ mod p`, canonical, for `t < p·2²⁵⁶`.
#[inline(always)]
fn reduce(t: &Wide) -> Fq {
    assembly_or_portable!(canonical(adx::reduce(t, &FQ_MODULUS)), reduce_portable(t))
}

/// [`reduce`] in portable Rust: Montgomery's reduction one limb at a time, the carries of each
/// round's top limb chained into the next.
#[inline(always)]
// Where the assembly serves, only the tests call it.
#[cfg_attr(not(test), allow(dead_code))]
fn reduce_portable(t: &Wide) -> Fq {
    let mut t = *t;
    let mut top_carry = 0;
    for i in 0..LIMBS {
        let m = t[i].wrapping_mul(INV);
        let mut carry = 0;
        // The low limb becomes zero by the choice of m.
        mac(t[i], m, P[0], &mut carry);
        for j in 1..LIMBS {
            t[i + j] = mac(t[i + j], m, P[j], &mut carry);
        }
        t[i + LIMBS] = adc(t[i + LIMBS], carry, &mut top_carry);
    }
    // Below 2p < 2²⁵⁵: the last carry is zero, and one subtraction of p at most.
    debug_assert_eq!(top_carry, 0);
    canonical(std::array::from_fn(|i| t[LIMBS + i]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{AdditiveGroup, BigInteger, Field, UniformRand};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// 0, 1, 2, p − 2, p − 1, and p − 1 as the raw Montgomery form (the largest limbs an
    /// operand can have): the extremes of every carry and of the final subtraction.
    fn edge_fq() -> Vec<Fq> {
        let minus_one = -Fq::ONE;
        let mut top = <FqConfig as MontConfig<LIMBS>>::MODULUS;
        top.sub_with_borrow(&BigInt::from(1u64));
        vec![
            Fq::ZERO,
            Fq::ONE,
            Fq::ONE.double(),
            minus_one - Fq::ONE,
            minus_one,
            Fq::new_unchecked(top),
        ]
    }

    #[test]
    fn fq_product_agrees_with_arkworks() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for _ in 0..10_000 {
            let (a, b) = (Fq::rand(&mut rng), Fq::rand(&mut rng));
            assert_eq!(fq_mul(&a, &b), a * b);
            assert_eq!(fq_mul_portable(&a, &b), a * b);
        }
        for a in edge_fq() {
            for b in edge_fq() {
                assert_eq!(fq_mul(&a, &b), a * b, "{a} · {b}");
                assert_eq!(fq_mul_portable(&a, &b), a * b, "{a} · {b}, portable");
            }
        }
    }

    /// The wide product and the reduction Fq2's product is made of, the assembly (where
    /// compiled) against the portable Rust: every pair of edge limbs and random ones, and the
    /// reduction's extremes (0, and `p·2²⁵⁶ − 1`, the largest input it is given a bound for).
    #[test]
    fn wide_product_and_reduction_agree_with_the_portable_ones() {
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        let mut limbs: Vec<[u64; LIMBS]> = edge_fq().iter().map(|x| x.0 .0).collect();
        limbs.extend([[u64::MAX; LIMBS], [0, 0, 0, u64::MAX], [u64::MAX, 0, 0, 0]]);
        limbs.extend((0..200).map(|_| Fq::rand(&mut rng).0 .0));
        for a in &limbs {
            for b in &limbs {
                assert_eq!(
                    wide_product(a, b),
                    wide_product_portable(a, b),
                    "{a:?} · {b:?}"
                );
            }
        }
        // p·2²⁵⁶ − 1 = (p − 1)·2²⁵⁶ + (2²⁵⁶ − 1); p is odd, so p − 1 only clears its low bit.
        let largest: Wide = [
            u64::MAX,
            u64::MAX,
            u64::MAX,
            u64::MAX,
            P[0] - 1,
            P[1],
            P[2],
            P[3],
        ];
        let mut wides = vec![
            [0u64; 2 * LIMBS],
            P_SQUARED,
            wide_add(&P_SQUARED, &P_SQUARED),
            largest,
        ];
        // Products of canonical values (the first limbs are the edge elements, then random).
        let canonical = || limbs.iter().filter(|l| BigInt(**l) < BigInt(P));
        wides.extend(
            canonical().flat_map(|a| canonical().take(20).map(|b| wide_product_portable(a, b))),
        );
        for t in &wides {
            assert_eq!(reduce(t), reduce_portable(t), "{t:?}");
        }
    }

    #[test]
    fn fq2_product_and_square_agree_with_arkworks() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for _ in 0..10_000 {
            let (a, b) = (Fq2::rand(&mut rng), Fq2::rand(&mut rng));
            assert_eq!(fq2_mul(&a, &b), a * b);
            assert_eq!(fq2_square(&a), a.square());
        }
        let edges: Vec<Fq2> = edge_fq()
            .into_iter()
            .flat_map(|c0| edge_fq().into_iter().map(move |c1| Fq2::new(c0, c1)))
            .collect();
        for a in &edges {
            assert_eq!(fq2_square(a), a.square(), "{a}²");
            for b in &edges {
                assert_eq!(fq2_mul(a, b), *a * b, "{a} · {b}");
            }
        }
    }

    #[test]
    fn p_squared_is_the_square_of_the_modulus() {
        let p = <FqConfig as MontConfig<LIMBS>>::MODULUS;
        let (low, high) = p.mul(&p);
        assert_eq!(P_SQUARED[..LIMBS], low.0);
        assert_eq!(P_SQUARED[LIMBS..], high.0);
    }
}
