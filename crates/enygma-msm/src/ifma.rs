//! BN254 prime-field arithmetic eight elements at a time with AVX-512 IFMA.
//!
//! Why: the batch-affine bucket additions of the MSM (over the base field `Fq`) and the
//! butterflies of the witness map's transforms (over the scalar field `Fr`, in
//! `enygma_prover::fft`) are thousands of independent field operations, and `vpmadd52luq` /
//! `vpmadd52huq` multiply eight 52-bit pairs per instruction.
//! Kept in 52-bit radix across many operations (converting around each single operation is
//! known to lose to scalar code), eight lanes beat the scalar 64-bit Montgomery code: 5.1x
//! arkworks' throughput for `Fq` and `Fq2` products on Zen 4
//! (`benches/results/2026-12-04-ifma-field.md`). This module is the field arithmetic and its
//! conversions; `crate::lanes` builds the bucket additions on it.
//!
//! What: [`Fp8`] holds eight elements of a field below `2^254` (its [`Modulus`]: [`Fq8`] and
//! [`Fr8`]), one per 64-bit lane, as five limbs of 52 bits (limb `k` of every lane in one
//! `__m512i`), in Montgomery form with `R = 2^260`: five limbs make the Montgomery reduction
//! five word steps of 52 bits, and `R = 2^260` leaves `R > 16p`, so products of inputs below
//! `4p` come out below `2p` without a final subtraction. [`Fq2x8`] is eight `ark_bn254::Fq2`
//! elements built on [`Fq8`].
//!
//! Invariant of every value an operation returns: each limb is below `2^52` and the
//! represented integer lies in `[0, 2p)` (lazily reduced). Operations accept inputs satisfying
//! it; [`Fp8::mul`] and [`Fp8::square`] also accept the unreduced sums of
//! [`Fp8::add_unreduced`] (below `4p`).
//!
//! The arithmetic functions carry `#[target_feature(enable = "avx512f,avx512ifma")]`: call
//! them from a function with the same features (where they inline) after
//! `is_x86_feature_detected!("avx512ifma")` returned true. [`Fp8::from_fq`] and
//! [`Fp8::to_fq`] go through the canonical integers, for tests; the MSM converts with
//! [`Fp8::from_arkworks`] and [`Fp8::to_arkworks`], one vector product each.

use ark_bn254::{Fq, Fq2, Fr};
use ark_ff::{AdditiveGroup, Field, Fp256, MontBackend, MontConfig, PrimeField};
use core::arch::x86_64::{
    __m512i, _mm512_add_epi64, _mm512_and_si512, _mm512_cmpeq_epi64_mask, _mm512_madd52hi_epu64,
    _mm512_madd52lo_epu64, _mm512_mask_blend_epi64, _mm512_set1_epi64, _mm512_setzero_si512,
    _mm512_srai_epi64, _mm512_srli_epi64, _mm512_sub_epi64, _mm512_test_epi64_mask,
};
use core::marker::PhantomData;

/// Lanes per vector: 512 bits of 64-bit lanes.
pub const LANES: usize = 8;
/// Limbs per `Fq` element.
pub const LIMBS: usize = 5;
const LIMB_MASK: u64 = (1 << 52) - 1;

/// The radix-2^52 limbs of a 256-bit little-endian integer (its top four bits land in the
/// fifth limb).
const fn radix52(words: [u64; 4]) -> [u64; LIMBS] {
    let mut limbs = [0; LIMBS];
    let mut k = 0;
    while k < LIMBS {
        let bit = 52 * k;
        let (word, shift) = (bit / 64, bit % 64);
        let mut limb = words[word] >> shift;
        // A limb straddles two words when it starts in a word's last 51 bits.
        if shift > 12 && word + 1 < 4 {
            limb |= words[word + 1] << (64 - shift);
        }
        limbs[k] = limb & LIMB_MASK;
        k += 1;
    }
    limbs
}

const fn double_limbs(limbs: [u64; LIMBS]) -> [u64; LIMBS] {
    let mut doubled = [0; LIMBS];
    let mut carry = 0;
    let mut k = 0;
    while k < LIMBS {
        let v = 2 * limbs[k] + carry;
        doubled[k] = v & LIMB_MASK;
        carry = v >> 52;
        k += 1;
    }
    doubled
}

/// `-m^{-1} mod 2^52` for an odd modulus whose lowest word is `m0`: the Montgomery
/// reduction's quotient factor.
const fn p_inv_neg(m0: u64) -> u64 {
    // Newton's iteration doubles the correct low bits: 1 → 2 → … → 64 after six steps.
    let mut inv = 1u64;
    let mut i = 0;
    while i < 6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(m0.wrapping_mul(inv)));
        i += 1;
    }
    inv.wrapping_neg() & LIMB_MASK
}

/// A BN254 prime field eight lanes at a time: the base field `Fq` (the MSM's coordinates) or the
/// scalar field `Fr` (the witness map's transforms). Both moduli are below `2^254`, so the
/// invariant and the bounds of the module documentation hold for either.
pub trait Modulus: Copy + core::fmt::Debug + 'static {
    /// arkworks' description of the field (`ark_bn254::FqConfig` or `FrConfig`).
    type Config: MontConfig<4>;
    /// `p` in radix 2^52.
    const P: [u64; LIMBS];
    /// `2p`: the bound of the lazily reduced representation.
    const P2: [u64; LIMBS];
    /// `-p^{-1} mod 2^52`.
    const P_INV_NEG: u64;
    /// Arkworks' Montgomery representation of `256`, i.e. the integer `2^264 mod p`: multiplying
    /// arkworks' representation `a·2^256` by it in our form (which divides by `2^260`) gives
    /// `a·2^260`, our representation of `a`.
    const FROM_ARKWORKS: [u64; LIMBS];
    /// Arkworks' representation of `1`, i.e. `2^256 mod p`: multiplying our `a·2^260` by it
    /// gives arkworks' `a·2^256`.
    const TO_ARKWORKS: [u64; LIMBS];
}

macro_rules! modulus {
    ($(#[$doc:meta])* $name:ident, $field:ty, $config:ty) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name;

        impl Modulus for $name {
            type Config = $config;
            const P: [u64; LIMBS] = radix52(<$field as PrimeField>::MODULUS.0);
            const P2: [u64; LIMBS] = double_limbs(Self::P);
            const P_INV_NEG: u64 = p_inv_neg(<$field as PrimeField>::MODULUS.0[0]);
            const FROM_ARKWORKS: [u64; LIMBS] = {
                const TWO_POW_8: $field = ark_ff::MontFp!("256");
                radix52(TWO_POW_8.0 .0)
            };
            const TO_ARKWORKS: [u64; LIMBS] = radix52(<$field as Field>::ONE.0 .0);
        }
    };
}

modulus!(
    /// BN254's base field `Fq`.
    FqModulus,
    Fq,
    ark_bn254::FqConfig
);
modulus!(
    /// BN254's scalar field `Fr`.
    FrModulus,
    Fr,
    ark_bn254::FrConfig
);

/// The arkworks field of `M`.
pub type Element<M> = Fp256<MontBackend<<M as Modulus>::Config, 4>>;

/// The four 64-bit words of a radix-2^52 integer below `2^256`.
const fn words(limbs: [u64; LIMBS]) -> [u64; 4] {
    [
        limbs[0] | limbs[1] << 52,
        limbs[1] >> 12 | limbs[2] << 40,
        limbs[2] >> 24 | limbs[3] << 28,
        limbs[3] >> 36 | limbs[4] << 16,
    ]
}

/// One element's limbs in our form, converted on the scalar side: our representation of `a` is
/// `a·2^260`, which is arkworks' representation of `16·a` (four doublings, no product).
pub fn limbs_of<T: MontConfig<4>>(x: &Fp256<MontBackend<T, 4>>) -> [u64; LIMBS] {
    let sixteen_x = x.double().double().double().double();
    radix52(sixteen_x.0 .0)
}

/// Eight elements of the field of `M` in 52-bit radix Montgomery form (`R = 2^260`), lazily
/// reduced to `[0, 2p)`; see the module documentation for the invariant.
#[derive(Clone, Copy, Debug)]
pub struct Fp8<M: Modulus> {
    limbs: [__m512i; LIMBS],
    modulus: PhantomData<M>,
}

/// Eight `Fq` elements (the MSM's coordinates).
pub type Fq8 = Fp8<FqModulus>;
/// Eight `Fr` elements (the witness map's transforms).
pub type Fr8 = Fp8<FrModulus>;

/// Eight `Fq2 = Fq[u]/(u^2 + 1)` elements: `c0 + c1·u`, each coefficient an [`Fq8`].
#[derive(Clone, Copy, Debug)]
pub struct Fq2x8 {
    pub c0: Fq8,
    pub c1: Fq8,
}

fn to_vector(lanes: [u64; LANES]) -> __m512i {
    // SAFETY: `[u64; 8]` and `__m512i` are both 64 bytes of plain integers; every bit pattern
    // is valid for each. No AVX-512 instruction is needed to move the bytes.
    unsafe { core::mem::transmute::<[u64; LANES], __m512i>(lanes) }
}

fn to_lanes(vector: __m512i) -> [u64; LANES] {
    // SAFETY: as in `to_vector`.
    unsafe { core::mem::transmute::<__m512i, [u64; LANES]>(vector) }
}

/// `2^260 mod p` as an arkworks element: multiplying by it moves a value into our Montgomery
/// form once arkworks' own `R = 2^256` is stripped by `into_bigint`.
fn r260<F: PrimeField>() -> F {
    F::from(2u64).pow([260u64])
}

impl<M: Modulus> Fp8<M> {
    fn from_vectors(limbs: [__m512i; LIMBS]) -> Self {
        Self {
            limbs,
            modulus: PhantomData,
        }
    }

    /// The limbs of each lane, `[limb][lane]`.
    pub(crate) fn limb_lanes(&self) -> [[u64; LANES]; LIMBS] {
        self.limbs.map(to_lanes)
    }

    /// From the Montgomery representations' limbs, `[limb][lane]`, each below `2^52`.
    pub(crate) fn from_limb_lanes(limbs: [[u64; LANES]; LIMBS]) -> Self {
        Self::from_vectors(limbs.map(to_vector))
    }

    /// Eight arkworks elements, converted with one vector product: their Montgomery
    /// representations (`a·2^256`, below `p`) are already valid inputs of ours, standing for
    /// `a/16`, and the product by [`Modulus::FROM_ARKWORKS`] turns them into `a·2^260`.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn from_arkworks(elements: [&Element<M>; LANES]) -> Self {
        let mut limbs = [[0u64; LANES]; LIMBS];
        for (lane, x) in elements.iter().enumerate() {
            for (k, limb) in radix52(x.0 .0).into_iter().enumerate() {
                limbs[k][lane] = limb;
            }
        }
        Self::from_limb_lanes(limbs).mul(Self::splat(M::FROM_ARKWORKS))
    }

    /// The eight elements as arkworks values: one vector product by [`Modulus::TO_ARKWORKS`], a
    /// conditional subtraction of `p` to reach the canonical representation, and a repacking.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn to_arkworks(self) -> [Element<M>; LANES] {
        let product = self.mul(Self::splat(M::TO_ARKWORKS));
        let canonical = Self::from_vectors(subtract_if_not_below(product.limbs, M::P));
        let limbs = canonical.limb_lanes();
        core::array::from_fn(|lane| {
            let raw = words(core::array::from_fn(|k| limbs[k][lane]));
            Element::<M>::new_unchecked(ark_ff::BigInt(raw))
        })
    }

    /// Eight stored elements (limbs in our form, each satisfying the invariant).
    #[inline]
    pub fn gather(elements: [&[u64; LIMBS]; LANES]) -> Self {
        Self::from_limb_lanes(core::array::from_fn(|k| {
            core::array::from_fn(|lane| elements[lane][k])
        }))
    }

    /// Each lane's limbs, the inverse of [`Fp8::gather`].
    #[inline]
    pub fn split(self) -> [[u64; LIMBS]; LANES] {
        let limbs = self.limb_lanes();
        core::array::from_fn(|lane| core::array::from_fn(|k| limbs[k][lane]))
    }

    /// The same element (limbs in our form, satisfying the invariant) in every lane.
    #[inline]
    pub fn splat(limbs: [u64; LIMBS]) -> Self {
        Self::from_limb_lanes(limbs.map(|limb| [limb; LANES]))
    }

    /// `0` in every lane.
    #[inline]
    pub fn zero() -> Self {
        Self::splat([0; LIMBS])
    }

    /// `1` in every lane.
    #[inline]
    pub fn one() -> Self {
        Self::splat(limbs_of(&Element::<M>::ONE))
    }

    /// The lanes (as a bit mask) whose value is `0 mod p`: represented by `0` or `p`.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn zero_lanes(self) -> u8 {
        let (mut zero, mut p) = (0xff, 0xff);
        for (limb, p_limb) in self.limbs.into_iter().zip(M::P) {
            zero &= _mm512_cmpeq_epi64_mask(limb, _mm512_setzero_si512());
            p &= _mm512_cmpeq_epi64_mask(limb, _mm512_set1_epi64(p_limb as i64));
        }
        zero | p
    }

    /// `if_set` in the lanes of `mask`, `self` elsewhere.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn blend(self, mask: u8, if_set: Self) -> Self {
        let mut limbs = self.limbs;
        for (k, limb) in limbs.iter_mut().enumerate() {
            *limb = _mm512_mask_blend_epi64(mask, *limb, if_set.limbs[k]);
        }
        Self::from_vectors(limbs)
    }

    pub fn from_fq(elements: &[Element<M>; LANES]) -> Self {
        let r = r260::<Element<M>>();
        let mut limbs = [[0u64; LANES]; LIMBS];
        for (lane, x) in elements.iter().enumerate() {
            let montgomery = radix52((*x * r).into_bigint().0);
            for (k, limb) in montgomery.into_iter().enumerate() {
                limbs[k][lane] = limb;
            }
        }
        Self::from_limb_lanes(limbs)
    }

    /// Accepts any representation (not only the invariant's), so tests can convert whatever
    /// an operation returned.
    pub fn to_fq(&self) -> [Element<M>; LANES] {
        let r_inv = r260::<Element<M>>()
            .inverse()
            .expect("2^260 is a unit mod p");
        let limbs = self.limb_lanes();
        core::array::from_fn(|lane| {
            // 5 limbs of up to 64 bits each, summed into a 384-bit little-endian integer.
            let mut words = [0u64; 6];
            for (k, limb) in limbs.iter().enumerate() {
                let wide = (limb[lane] as u128) << ((52 * k) % 64);
                let word = 52 * k / 64;
                let mut carry = 0u128;
                for (i, part) in [wide as u64, (wide >> 64) as u64].into_iter().enumerate() {
                    let sum = words[word + i] as u128 + part as u128 + carry;
                    words[word + i] = sum as u64;
                    carry = sum >> 64;
                }
                let mut i = word + 2;
                while carry != 0 {
                    let sum = words[i] as u128 + carry;
                    words[i] = sum as u64;
                    carry = sum >> 64;
                    i += 1;
                }
            }
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            Element::<M>::from_le_bytes_mod_order(&bytes) * r_inv
        })
    }

    /// `self · rhs`, for inputs below `4p`; the result is below `2p`.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled: from a function with the same
    /// target features, or after `is_x86_feature_detected!("avx512ifma")`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn mul(self, rhs: Self) -> Self {
        let (a, b) = (&self.limbs, &rhs.limbs);
        // 64-bit accumulators have 12 bits of headroom over the 52-bit partial products, far
        // more than the at most ten products and carries any column receives.
        let mut t = [_mm512_setzero_si512(); 2 * LIMBS];
        for i in 0..LIMBS {
            for j in 0..LIMBS {
                t[i + j] = _mm512_madd52lo_epu64(t[i + j], a[i], b[j]);
                t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a[i], b[j]);
            }
        }
        Self::from_vectors(montgomery_reduce::<M>(t))
    }

    /// `self^2` for an input below `4p`: the ten cross products are computed once and doubled,
    /// 15 limb products instead of 25.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled: from a function with the same
    /// target features, or after `is_x86_feature_detected!("avx512ifma")`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn square(self) -> Self {
        let a = &self.limbs;
        let mut t = [_mm512_setzero_si512(); 2 * LIMBS];
        for i in 0..LIMBS {
            for j in i + 1..LIMBS {
                t[i + j] = _mm512_madd52lo_epu64(t[i + j], a[i], a[j]);
                t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a[i], a[j]);
            }
        }
        for column in &mut t {
            *column = _mm512_add_epi64(*column, *column);
        }
        for i in 0..LIMBS {
            t[2 * i] = _mm512_madd52lo_epu64(t[2 * i], a[i], a[i]);
            t[2 * i + 1] = _mm512_madd52hi_epu64(t[2 * i + 1], a[i], a[i]);
        }
        Self::from_vectors(montgomery_reduce::<M>(t))
    }

    /// `self + rhs` reduced to `[0, 2p)`.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled: from a function with the same
    /// target features, or after `is_x86_feature_detected!("avx512ifma")`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn add(self, rhs: Self) -> Self {
        Self::from_vectors(subtract_if_not_below(self.add_unreduced(rhs).limbs, M::P2))
    }

    /// `self + rhs` below `4p`, normalised limbs but not reduced: only for feeding
    /// [`Fp8::mul`] or [`Fp8::square`] (Karatsuba's sums), which accept it.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled: from a function with the same
    /// target features, or after `is_x86_feature_detected!("avx512ifma")`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn add_unreduced(self, rhs: Self) -> Self {
        let mut sum = [_mm512_setzero_si512(); LIMBS];
        for (k, limb) in sum.iter_mut().enumerate() {
            *limb = _mm512_add_epi64(self.limbs[k], rhs.limbs[k]);
        }
        // Below 4p < 2^256 the top limb keeps the last carry.
        Self::from_vectors(propagate_carries(sum))
    }

    /// `self - rhs` in `[0, 2p)`: the difference, plus `2p` in the lanes where it is negative.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled: from a function with the same
    /// target features, or after `is_x86_feature_detected!("avx512ifma")`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn sub(self, rhs: Self) -> Self {
        let (difference, negative) = sub_with_borrow(self.limbs, rhs.limbs);
        let mut wrapped = [_mm512_setzero_si512(); LIMBS];
        for (k, limb) in wrapped.iter_mut().enumerate() {
            *limb = _mm512_add_epi64(difference[k], _mm512_set1_epi64(M::P2[k] as i64));
        }
        // The difference is the true one plus 2^260 where negative; the carry out of the top
        // limb drops that 2^260 again.
        let mut wrapped = propagate_carries(wrapped);
        wrapped[LIMBS - 1] = _mm512_and_si512(wrapped[LIMBS - 1], limb_mask());
        let mut limbs = difference;
        for (k, limb) in limbs.iter_mut().enumerate() {
            *limb = _mm512_mask_blend_epi64(negative, *limb, wrapped[k]);
        }
        Self::from_vectors(limbs)
    }
}

impl Fq2x8 {
    pub fn from_fq2(elements: &[Fq2; LANES]) -> Self {
        Self {
            c0: Fq8::from_fq(&elements.map(|x| x.c0)),
            c1: Fq8::from_fq(&elements.map(|x| x.c1)),
        }
    }

    pub fn to_fq2(&self) -> [Fq2; LANES] {
        let (c0, c1) = (self.c0.to_fq(), self.c1.to_fq());
        core::array::from_fn(|lane| Fq2::new(c0[lane], c1[lane]))
    }

    /// See [`Fq8::from_arkworks`].
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn from_arkworks(elements: [&Fq2; LANES]) -> Self {
        Self {
            c0: Fq8::from_arkworks(elements.map(|x| &x.c0)),
            c1: Fq8::from_arkworks(elements.map(|x| &x.c1)),
        }
    }

    /// See [`Fq8::to_arkworks`].
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn to_arkworks(self) -> [Fq2; LANES] {
        let (c0, c1) = (self.c0.to_arkworks(), self.c1.to_arkworks());
        core::array::from_fn(|lane| Fq2::new(c0[lane], c1[lane]))
    }

    /// See [`Fq8::gather`]: the two coefficients' limbs, `c0` first.
    #[inline]
    pub fn gather(elements: [&[[u64; LIMBS]; 2]; LANES]) -> Self {
        Self {
            c0: Fq8::gather(elements.map(|x| &x[0])),
            c1: Fq8::gather(elements.map(|x| &x[1])),
        }
    }

    /// See [`Fq8::split`].
    #[inline]
    pub fn split(self) -> [[[u64; LIMBS]; 2]; LANES] {
        let (c0, c1) = (self.c0.split(), self.c1.split());
        core::array::from_fn(|lane| [c0[lane], c1[lane]])
    }

    #[inline]
    pub fn one() -> Self {
        Self {
            c0: Fq8::one(),
            c1: Fq8::splat([0; LIMBS]),
        }
    }

    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn zero_lanes(self) -> u8 {
        self.c0.zero_lanes() & self.c1.zero_lanes()
    }

    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn blend(self, mask: u8, if_set: Self) -> Self {
        Self {
            c0: self.c0.blend(mask, if_set.c0),
            c1: self.c1.blend(mask, if_set.c1),
        }
    }

    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn add(self, rhs: Self) -> Self {
        Self {
            c0: self.c0.add(rhs.c0),
            c1: self.c1.add(rhs.c1),
        }
    }

    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn sub(self, rhs: Self) -> Self {
        Self {
            c0: self.c0.sub(rhs.c0),
            c1: self.c1.sub(rhs.c1),
        }
    }

    /// `(c0 + c1)(c0 - c1) + 2·c0·c1·u`: two base products instead of three.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn square(self) -> Self {
        let sum = self.c0.add_unreduced(self.c1);
        let difference = self.c0.sub(self.c1);
        let cross = self.c0.mul(self.c1);
        Self {
            c0: sum.mul(difference),
            c1: cross.add(cross),
        }
    }

    /// Karatsuba: `(a0·b0 - a1·b1) + ((a0+a1)(b0+b1) - a0·b0 - a1·b1)·u`, three base-field
    /// products. The sums stay unreduced: products accept inputs below `4p`.
    ///
    /// # Safety
    /// Callable only where AVX-512 F and IFMA are enabled: from a function with the same
    /// target features, or after `is_x86_feature_detected!("avx512ifma")`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub fn mul(self, rhs: Self) -> Self {
        let a0b0 = self.c0.mul(rhs.c0);
        let a1b1 = self.c1.mul(rhs.c1);
        let sums = self
            .c0
            .add_unreduced(self.c1)
            .mul(rhs.c0.add_unreduced(rhs.c1));
        Self {
            c0: a0b0.sub(a1b1),
            c1: sums.sub(a0b0).sub(a1b1),
        }
    }
}

#[inline]
#[target_feature(enable = "avx512f")]
fn limb_mask() -> __m512i {
    _mm512_set1_epi64(LIMB_MASK as i64)
}

/// Carries every limb's bits above 52 into the next limb; the top limb keeps its excess.
#[inline]
#[target_feature(enable = "avx512f")]
fn propagate_carries(mut limbs: [__m512i; LIMBS]) -> [__m512i; LIMBS] {
    for k in 0..LIMBS - 1 {
        limbs[k + 1] = _mm512_add_epi64(limbs[k + 1], _mm512_srli_epi64::<52>(limbs[k]));
        limbs[k] = _mm512_and_si512(limbs[k], limb_mask());
    }
    limbs
}

/// `a - b` limb by limb with borrows, modulo 2^260, and the lanes where `a < b`.
/// Both operands have normalised limbs.
#[inline]
#[target_feature(enable = "avx512f")]
fn sub_with_borrow(a: [__m512i; LIMBS], b: [__m512i; LIMBS]) -> ([__m512i; LIMBS], u8) {
    let mut difference = [_mm512_setzero_si512(); LIMBS];
    // 0 or -1 per lane; the arithmetic shift of a signed limb difference yields it.
    let mut borrow = _mm512_setzero_si512();
    for k in 0..LIMBS {
        let v = _mm512_add_epi64(_mm512_sub_epi64(a[k], b[k]), borrow);
        borrow = _mm512_srai_epi64::<52>(v);
        difference[k] = _mm512_and_si512(v, limb_mask());
    }
    (difference, _mm512_test_epi64_mask(borrow, borrow))
}

/// `a - m` in the lanes where `a >= m`, `a` elsewhere.
#[inline]
#[target_feature(enable = "avx512f")]
fn subtract_if_not_below(a: [__m512i; LIMBS], m: [u64; LIMBS]) -> [__m512i; LIMBS] {
    let (difference, below) = sub_with_borrow(a, m.map(|limb| _mm512_set1_epi64(limb as i64)));
    let mut limbs = difference;
    for (k, limb) in limbs.iter_mut().enumerate() {
        *limb = _mm512_mask_blend_epi64(below, *limb, a[k]);
    }
    limbs
}

/// `t / 2^260 mod p` for a double-width product `t` (columns of unnormalised 64-bit limbs) of
/// inputs below `4p`: five word steps each add the multiple `m·p` of the column that clears
/// its low 52 bits. The result, `(t + M·p) / R < 16p²/R + p < 2p`, needs no subtraction.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn montgomery_reduce<M: Modulus>(mut t: [__m512i; 2 * LIMBS]) -> [__m512i; LIMBS] {
    let p = M::P.map(|limb| _mm512_set1_epi64(limb as i64));
    let p_inv_neg = _mm512_set1_epi64(M::P_INV_NEG as i64);
    for i in 0..LIMBS {
        // IFMA reads only the low 52 bits of t[i], which is all m depends on.
        let m = _mm512_madd52lo_epu64(_mm512_setzero_si512(), t[i], p_inv_neg);
        for j in 0..LIMBS {
            t[i + j] = _mm512_madd52lo_epu64(t[i + j], m, p[j]);
            t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], m, p[j]);
        }
        t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_srli_epi64::<52>(t[i]));
    }
    propagate_carries([t[5], t[6], t[7], t[8], t[9]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{BigInteger, One, Zero};
    use ark_std::UniformRand;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn ifma() -> bool {
        let detected = is_x86_feature_detected!("avx512ifma");
        if !detected {
            eprintln!("skipped: this CPU has no AVX-512 IFMA");
        }
        detected
    }

    /// The invariant: limbs below 2^52, value below 2p.
    fn assert_invariant<M: Modulus>(x: &Fp8<M>) {
        let limbs = x.limb_lanes();
        for (k, limb) in limbs.iter().enumerate() {
            for (lane, &l) in limb.iter().enumerate() {
                assert!(l <= LIMB_MASK, "limb {k} lane {lane} too wide");
            }
        }
        let values: [[u64; LIMBS]; LANES] =
            core::array::from_fn(|lane| core::array::from_fn(|k| limbs[k][lane]));
        for (lane, value) in values.iter().enumerate() {
            // Most significant limb first, so that the limbs compare as integers.
            let below = value.iter().rev().cmp(M::P2.iter().rev()).is_lt();
            assert!(below, "lane {lane} not below 2p");
        }
    }

    fn random_fq8(rng: &mut ChaCha20Rng) -> [Fq; LANES] {
        random_lanes::<FqModulus>(rng)
    }

    fn random_lanes<M: Modulus>(rng: &mut ChaCha20Rng) -> [Element<M>; LANES] {
        core::array::from_fn(|_| Element::<M>::rand(rng))
    }

    /// Arkworks' field elements with their canonical value near 2^254 (which exceeds p) and
    /// the usual suspects.
    fn edge_elements<M: Modulus>() -> Vec<Element<M>> {
        type E<M> = Element<M>;
        let p_minus_one = E::<M>::zero() - E::<M>::one();
        let two_254 = E::<M>::from(2u64).pow([254u64]);
        vec![
            E::<M>::zero(),
            E::<M>::one(),
            E::<M>::from(2u64),
            p_minus_one,
            p_minus_one - E::<M>::one(),
            p_minus_one / E::<M>::from(2u64),
            two_254,
            two_254 - E::<M>::one(),
            two_254 + E::<M>::one(),
            E::<M>::from(2u64).pow([253u64]),
        ]
    }

    /// Montgomery representations (raw integers, `R = 2^260`) at the edges of `[0, 2p)`, as
    /// radix-52 limbs: operations must accept every representation the invariant allows.
    fn edge_representations<M: Modulus>() -> Vec<[u64; LIMBS]> {
        let p = <Element<M> as PrimeField>::MODULUS;
        let mut two_p = p;
        two_p.add_with_carry(&p);
        let below = |x: &ark_ff::BigInt<4>, k: u64| {
            let mut y = *x;
            y.sub_with_borrow(&ark_ff::BigInt::from(k));
            y
        };
        let mut two_254 = ark_ff::BigInt::<4>::zero();
        two_254.0[3] = 1 << 62;
        let mut raw = vec![
            ark_ff::BigInt::zero(),
            ark_ff::BigInt::from(1u64),
            below(&p, 1),
            p,
            below(&two_254, 1),
            two_254,
            below(&two_p, 1),
            below(&two_p, 2),
        ];
        let mut above_254 = two_254;
        above_254.add_with_carry(&ark_ff::BigInt::from(12345u64));
        raw.push(above_254);
        raw.into_iter().map(|x| radix52(x.0)).collect()
    }

    fn from_representations<M: Modulus>(lanes: &[[u64; LIMBS]]) -> Fp8<M> {
        let mut limbs = [[0u64; LANES]; LIMBS];
        for lane in 0..LANES {
            for k in 0..LIMBS {
                limbs[k][lane] = lanes[lane % lanes.len()][k];
            }
        }
        Fp8::from_limb_lanes(limbs)
    }

    /// Every operation on `a` and `b`, lane by lane, against arkworks.
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn check_ops<M: Modulus>(a: Fp8<M>, b: Fp8<M>) {
        let (x, y) = (a.to_fq(), b.to_fq());
        type Expected<M> = fn(Element<M>, Element<M>) -> Element<M>;
        let cases: [(&str, Fp8<M>, Expected<M>); 4] = [
            ("mul", a.mul(b), |x, y| x * y),
            ("add", a.add(b), |x, y| x + y),
            ("sub", a.sub(b), |x, y| x - y),
            ("square", a.square(), |x, _| x.square()),
        ];
        for (name, result, expected) in cases {
            assert_invariant(&result);
            let got = result.to_fq();
            for lane in 0..LANES {
                assert_eq!(got[lane], expected(x[lane], y[lane]), "{name} lane {lane}");
            }
        }
        // The unreduced sum is only promised as an input to a product.
        let sum_product = a.add_unreduced(b).mul(a.add_unreduced(a)).to_fq();
        let sum_square = a.add_unreduced(b).square().to_fq();
        for lane in 0..LANES {
            assert_eq!(sum_product[lane], (x[lane] + y[lane]) * (x[lane] + x[lane]));
            assert_eq!(sum_square[lane], (x[lane] + y[lane]).square());
        }
    }

    fn constants_of<M: Modulus>() {
        // p · (-p^{-1}) ≡ -1 mod 2^52.
        assert_eq!(M::P[0].wrapping_mul(M::P_INV_NEG) & LIMB_MASK, LIMB_MASK);
        let p = <Element<M> as PrimeField>::MODULUS;
        let mut two_p = p;
        two_p.add_with_carry(&p);
        assert_eq!(M::P2, radix52(two_p.0));
        assert_eq!(M::P, radix52(p.0));
    }

    #[test]
    fn constants() {
        constants_of::<FqModulus>();
        constants_of::<FrModulus>();
        assert_ne!(FqModulus::P, FrModulus::P);
    }

    #[test]
    fn conversions_round_trip() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for _ in 0..100 {
            let x = random_fq8(&mut rng);
            let v = Fq8::from_fq(&x);
            assert_invariant(&v);
            assert_eq!(v.to_fq(), x);
        }
    }

    fn random_values_match_arkworks_in<M: Modulus>() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        for _ in 0..1000 {
            let a = Fp8::<M>::from_fq(&random_lanes::<M>(&mut rng));
            let b = Fp8::<M>::from_fq(&random_lanes::<M>(&mut rng));
            // SAFETY: the callers checked that the CPU has AVX-512 F and IFMA.
            unsafe { check_ops(a, b) };
        }
    }

    #[test]
    fn random_values_match_arkworks() {
        if !ifma() {
            return;
        }
        random_values_match_arkworks_in::<FqModulus>();
        random_values_match_arkworks_in::<FrModulus>();
    }

    #[test]
    fn edge_values_match_arkworks() {
        if !ifma() {
            return;
        }
        edge_values_match_arkworks_in::<FqModulus>();
        edge_values_match_arkworks_in::<FrModulus>();
    }

    fn edge_values_match_arkworks_in<M: Modulus>() {
        // Every ordered pair, eight different pairs per vector.
        let elements = edge_elements::<M>();
        let pairs: Vec<(Element<M>, Element<M>)> = elements
            .iter()
            .flat_map(|&x| elements.iter().map(move |&y| (x, y)))
            .collect();
        for chunk in pairs.chunks(LANES) {
            let a = Fp8::<M>::from_fq(&core::array::from_fn(|i| chunk[i % chunk.len()].0));
            let b = Fp8::<M>::from_fq(&core::array::from_fn(|i| chunk[i % chunk.len()].1));
            // SAFETY: the caller checked that the CPU has AVX-512 F and IFMA.
            unsafe { check_ops(a, b) };
        }
        let representations = edge_representations::<M>();
        let pairs: Vec<([u64; LIMBS], [u64; LIMBS])> = representations
            .iter()
            .flat_map(|&x| representations.iter().map(move |&y| (x, y)))
            .collect();
        for chunk in pairs.chunks(LANES) {
            let a = from_representations::<M>(&chunk.iter().map(|p| p.0).collect::<Vec<_>>());
            let b = from_representations::<M>(&chunk.iter().map(|p| p.1).collect::<Vec<_>>());
            assert_invariant(&a);
            assert_invariant(&b);
            // SAFETY: the caller checked that the CPU has AVX-512 F and IFMA.
            unsafe { check_ops(a, b) };
        }
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn chain(mut x: Fq8, mut y: Fq8, steps: usize) -> (Fq8, Fq8) {
        for step in 0..steps {
            x = x.mul(y);
            assert_invariant(&x);
            y = if step % 3 == 0 { y.add(x) } else { y.sub(x) };
            assert_invariant(&y);
            if step % 5 == 0 {
                x = x.square();
            }
        }
        (x, y)
    }

    #[test]
    fn dependent_chains_match_arkworks() {
        if !ifma() {
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let (mut x, mut y) = (random_fq8(&mut rng), random_fq8(&mut rng));
        // Two lanes start at the edges, where a drifting bound shows first.
        x[0] = Fq::zero() - Fq::one();
        y[1] = Fq::zero() - Fq::from(2u64);
        // SAFETY: the CPU has AVX-512 F and IFMA (checked above).
        let (vx, vy) = unsafe { chain(Fq8::from_fq(&x), Fq8::from_fq(&y), 1000) };
        for step in 0..1000 {
            for lane in 0..LANES {
                x[lane] *= y[lane];
                y[lane] = if step % 3 == 0 {
                    y[lane] + x[lane]
                } else {
                    y[lane] - x[lane]
                };
                if step % 5 == 0 {
                    x[lane].square_in_place();
                }
            }
        }
        assert_eq!(vx.to_fq(), x);
        assert_eq!(vy.to_fq(), y);
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn fq2_products(a: Fq2x8, b: Fq2x8) -> Fq2x8 {
        let product = a.mul(b);
        assert_invariant(&product.c0);
        assert_invariant(&product.c1);
        product
    }

    #[test]
    fn fq2_products_match_arkworks() {
        if !ifma() {
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        for _ in 0..1000 {
            let x: [Fq2; LANES] = core::array::from_fn(|_| Fq2::rand(&mut rng));
            let y: [Fq2; LANES] = core::array::from_fn(|_| Fq2::rand(&mut rng));
            let (a, b) = (Fq2x8::from_fq2(&x), Fq2x8::from_fq2(&y));
            // SAFETY: the CPU has AVX-512 F and IFMA (checked above).
            let product = unsafe { fq2_products(a, b) }.to_fq2();
            for lane in 0..LANES {
                assert_eq!(product[lane], x[lane] * y[lane], "lane {lane}");
            }
        }
        // Coefficients at the edges, in both representations of [0, 2p).
        let elements = edge_elements::<FqModulus>();
        let representations = edge_representations::<FqModulus>();
        for (i, &e) in elements.iter().enumerate() {
            let c1 = from_representations(
                &(0..LANES)
                    .map(|l| representations[(i + l) % representations.len()])
                    .collect::<Vec<_>>(),
            );
            let a = Fq2x8 {
                c0: Fq8::from_fq(&core::array::from_fn(|l| {
                    elements[(i + l) % elements.len()]
                })),
                c1,
            };
            let b = Fq2x8 {
                c0: c1,
                c1: Fq8::from_fq(&[e; LANES]),
            };
            let (x, y) = (a.to_fq2(), b.to_fq2());
            // SAFETY: the CPU has AVX-512 F and IFMA (checked above).
            let product = unsafe { fq2_products(a, b) }.to_fq2();
            for lane in 0..LANES {
                assert_eq!(product[lane], x[lane] * y[lane], "edge {i} lane {lane}");
            }
        }
    }

    #[test]
    fn fq2_chain_matches_arkworks() {
        if !ifma() {
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let mut x: [Fq2; LANES] = core::array::from_fn(|_| Fq2::rand(&mut rng));
        let y: [Fq2; LANES] = core::array::from_fn(|_| Fq2::rand(&mut rng));
        let (mut a, b) = (Fq2x8::from_fq2(&x), Fq2x8::from_fq2(&y));
        for _ in 0..1000 {
            // SAFETY: the CPU has AVX-512 F and IFMA (checked above).
            a = unsafe { fq2_products(a, b) };
            for lane in 0..LANES {
                x[lane] *= y[lane];
            }
        }
        assert_eq!(a.to_fq2(), x);
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn arkworks_round_trip(x: &[Fq; LANES]) -> (Fq8, [Fq; LANES]) {
        let v = Fq8::from_arkworks(core::array::from_fn(|lane| &x[lane]));
        (v, v.to_arkworks())
    }

    #[test]
    fn fast_conversions_match_the_slow_ones() {
        if !ifma() {
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        let edges = edge_elements::<FqModulus>();
        let mut inputs: Vec<[Fq; LANES]> = (0..100).map(|_| random_fq8(&mut rng)).collect();
        inputs.push(core::array::from_fn(|lane| edges[lane]));
        inputs.push(core::array::from_fn(|lane| edges[(lane + 2) % edges.len()]));
        for x in inputs {
            // SAFETY: the CPU has AVX-512 F and IFMA (checked above).
            let (v, back) = unsafe { arkworks_round_trip(&x) };
            assert_invariant(&v);
            assert_eq!(v.to_fq(), x, "from_arkworks");
            assert_eq!(back, x, "to_arkworks");
            let scalar = Fq8::gather(
                core::array::from_fn(|lane| &x[lane])
                    .map(limbs_of)
                    .each_ref(),
            );
            assert_invariant(&scalar);
            assert_eq!(scalar.to_fq(), x, "limbs_of");
            assert_eq!(Fq8::gather(scalar.split().each_ref()).to_fq(), x, "split");
        }
        // Every representation of [0, 2p) comes back canonical.
        let representations = edge_representations::<FqModulus>();
        let v = from_representations::<FqModulus>(&representations);
        // SAFETY: as above.
        let back = unsafe { v.to_arkworks() };
        assert_eq!(back, v.to_fq());
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn zero_lanes_and_blend(v: Fq8) -> (u8, [Fq; LANES]) {
        (v.zero_lanes(), v.blend(0b1010_1010, Fq8::one()).to_fq())
    }

    #[test]
    fn zero_lanes_are_the_representations_of_zero() {
        if !ifma() {
            return;
        }
        // Lanes: 0, p, 1, p - 1, 2p - 1, 2^254, 0, p.
        let lanes = [[0; LIMBS], FqModulus::P, radix52([1, 0, 0, 0]), {
            let mut p_minus_one = <Fq as PrimeField>::MODULUS;
            p_minus_one.sub_with_borrow(&ark_ff::BigInt::from(1u64));
            radix52(p_minus_one.0)
        }];
        let mut all = lanes.to_vec();
        all.extend(edge_representations::<FqModulus>()[6..7].iter().copied());
        all.push(radix52([0, 0, 0, 1 << 62]));
        all.extend([[0; LIMBS], FqModulus::P]);
        let v = from_representations(&all);
        let values = v.to_fq();
        // SAFETY: the CPU has AVX-512 F and IFMA (checked above).
        let (zero, blended) = unsafe { zero_lanes_and_blend(v) };
        assert_eq!(zero, 0b1100_0011);
        for lane in 0..LANES {
            let expected = if lane % 2 == 1 {
                Fq::one()
            } else {
                values[lane]
            };
            assert_eq!(blended[lane], expected, "blend lane {lane}");
        }
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn fq2_ops(a: Fq2x8, b: Fq2x8) -> [[Fq2; LANES]; 4] {
        let (sum, difference, square) = (a.add(b), a.sub(b), a.square());
        for x in [sum, difference, square] {
            assert_invariant(&x.c0);
            assert_invariant(&x.c1);
        }
        let zero = a.sub(a).zero_lanes();
        assert_eq!(zero, 0xff, "a - a is zero in every lane");
        let elements = a.to_fq2();
        let converted = Fq2x8::from_arkworks(core::array::from_fn(|lane| &elements[lane]));
        [
            sum.to_fq2(),
            difference.to_fq2(),
            square.to_fq2(),
            converted.to_arkworks(),
        ]
    }

    #[test]
    fn fq2_additions_squares_and_conversions_match_arkworks() {
        if !ifma() {
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for _ in 0..200 {
            let x: [Fq2; LANES] = core::array::from_fn(|_| Fq2::rand(&mut rng));
            let y: [Fq2; LANES] = core::array::from_fn(|_| Fq2::rand(&mut rng));
            // SAFETY: the CPU has AVX-512 F and IFMA (checked above).
            let [sum, difference, square, converted] =
                unsafe { fq2_ops(Fq2x8::from_fq2(&x), Fq2x8::from_fq2(&y)) };
            for lane in 0..LANES {
                assert_eq!(sum[lane], x[lane] + y[lane]);
                assert_eq!(difference[lane], x[lane] - y[lane]);
                assert_eq!(square[lane], x[lane].square());
                assert_eq!(converted[lane], x[lane]);
            }
        }
    }

    #[test]
    fn checks_can_fail() {
        // A representation at 2p breaks the invariant and must be caught.
        let at_bound = from_representations::<FqModulus>(&[FqModulus::P2]);
        assert!(std::panic::catch_unwind(|| assert_invariant(&at_bound)).is_err());
    }
}
