//! A base field eight elements at a time on AVX-512 IFMA: what the bucket additions of
//! `crate::lanes` need of [`Fq8`] (G1) and [`Fq2x8`] (G2).

use ark_bn254::{Fq, Fq2};
use ark_ff::Field;

use crate::ifma::{self, Fq2x8, Fq8, LANES, LIMBS};

/// A base field eight elements at a time: what the bucket additions need of [`Fq8`] (G1) and
/// [`Fq2x8`] (G2). Its `unsafe` methods need AVX-512 F and IFMA; they are only called from
/// functions that enable both, on a CPU where they were detected.
pub trait LaneField: Copy {
    /// The arkworks field.
    type Element: Field;
    /// One element's limbs as stored in a bucket.
    type Limbs: Copy + Default;
    /// One element's limbs, converted on the scalar side (for a point put in an empty bucket).
    fn limbs_of(element: &Self::Element) -> Self::Limbs;
    /// Eight stored elements, one per lane.
    fn gather(limbs: [&Self::Limbs; LANES]) -> Self;
    /// Each lane's limbs: the inverse of `gather`.
    fn split(self) -> [Self::Limbs; LANES];
    fn one() -> Self;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn from_arkworks(elements: [&Self::Element; LANES]) -> Self;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn to_arkworks(self) -> [Self::Element; LANES];
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn sub(self, rhs: Self) -> Self;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn mul(self, rhs: Self) -> Self;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn square(self) -> Self;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn zero_lanes(self) -> u8;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn blend(self, mask: u8, if_set: Self) -> Self;
}

/// One implementation for both fields: each method forwards to the inherent one.
macro_rules! lane_field {
    ($lanes:ty, $element:ty, $limbs:ty, $limbs_of:expr) => {
        impl LaneField for $lanes {
            type Element = $element;
            type Limbs = $limbs;
            fn limbs_of(element: &$element) -> $limbs {
                $limbs_of(element)
            }
            #[inline]
            fn gather(limbs: [&$limbs; LANES]) -> Self {
                <$lanes>::gather(limbs)
            }
            #[inline]
            fn split(self) -> [$limbs; LANES] {
                <$lanes>::split(self)
            }
            #[inline]
            fn one() -> Self {
                <$lanes>::one()
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn from_arkworks(elements: [&$element; LANES]) -> Self {
                <$lanes>::from_arkworks(elements)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn to_arkworks(self) -> [$element; LANES] {
                <$lanes>::to_arkworks(self)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn sub(self, rhs: Self) -> Self {
                <$lanes>::sub(self, rhs)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn mul(self, rhs: Self) -> Self {
                <$lanes>::mul(self, rhs)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn square(self) -> Self {
                <$lanes>::square(self)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn zero_lanes(self) -> u8 {
                <$lanes>::zero_lanes(self)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn blend(self, mask: u8, if_set: Self) -> Self {
                <$lanes>::blend(self, mask, if_set)
            }
        }
    };
}

lane_field!(Fq8, Fq, [u64; LIMBS], ifma::limbs_of);
lane_field!(Fq2x8, Fq2, [[u64; LIMBS]; 2], |x: &Fq2| [
    ifma::limbs_of(&x.c0),
    ifma::limbs_of(&x.c1)
]);
