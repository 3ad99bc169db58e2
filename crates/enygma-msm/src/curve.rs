//! The groups the MSM serves, its scalars, and the field arithmetic of its bucket additions.

use ark_bn254::{g1, g2, Fr};
use ark_ec::short_weierstrass::SWCurveConfig;
use ark_ff::{Field, PrimeField};

#[cfg(target_arch = "x86_64")]
use crate::ifma;
#[cfg(target_arch = "x86_64")]
use crate::lane_field::LaneField;

/// A group of BN254 the MSM serves: G1 or G2, each with its base field eight lanes at a time.
pub trait Curve: SWCurveConfig<ScalarField = Fr> {
    #[cfg(target_arch = "x86_64")]
    #[doc(hidden)]
    type Lanes: LaneField<Element = Self::BaseField>;

    /// `a · b` in the base field as the scalar path's bucket additions compute it, inlined
    /// ([`crate::field`]).
    #[doc(hidden)]
    #[inline(always)]
    fn product(a: &Self::BaseField, b: &Self::BaseField) -> Self::BaseField {
        *a * b
    }

    /// `a²` in the base field, as [`Curve::product`].
    #[doc(hidden)]
    #[inline(always)]
    fn square(a: &Self::BaseField) -> Self::BaseField {
        a.square()
    }
}

impl Curve for g1::Config {
    #[cfg(target_arch = "x86_64")]
    type Lanes = ifma::Fq8;

    #[inline(always)]
    fn product(a: &Self::BaseField, b: &Self::BaseField) -> Self::BaseField {
        crate::field::fq_mul(a, b)
    }

    #[inline(always)]
    fn square(a: &Self::BaseField) -> Self::BaseField {
        crate::field::fq_mul(a, a)
    }
}

impl Curve for g2::Config {
    #[cfg(target_arch = "x86_64")]
    type Lanes = ifma::Fq2x8;

    #[inline(always)]
    fn product(a: &Self::BaseField, b: &Self::BaseField) -> Self::BaseField {
        crate::field::fq2_mul(a, b)
    }

    #[inline(always)]
    fn square(a: &Self::BaseField) -> Self::BaseField {
        crate::field::fq2_square(a)
    }
}

/// The field arithmetic of the bucket additions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arithmetic {
    /// 64-bit Montgomery arithmetic, one addition at a time (arkworks' field types, the
    /// products inlined from `field`).
    Scalar,
    /// AVX-512 IFMA, eight additions at a time (x86_64 CPUs that have it).
    #[cfg(target_arch = "x86_64")]
    Ifma,
}

impl Arithmetic {
    /// The fastest this CPU runs: [`Arithmetic::Ifma`] where AVX-512 F and IFMA are detected,
    /// unless the environment sets `ENYGMA_MSM_ARITHMETIC=scalar` (for comparing the two in
    /// one build, or as a way out should the vector path misbehave on some CPU).
    pub fn detected() -> Self {
        static CHOSEN: std::sync::OnceLock<Arithmetic> = std::sync::OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let forced_scalar = std::env::var("ENYGMA_MSM_ARITHMETIC").is_ok_and(|v| v == "scalar");
            Self::available()
                .into_iter()
                .rfind(|&a| !forced_scalar || a == Arithmetic::Scalar)
                .unwrap_or(Arithmetic::Scalar)
        })
    }

    /// Every arithmetic this CPU can run, scalar first.
    pub fn available() -> Vec<Self> {
        // Only x86_64 has a second arithmetic to push.
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut all = vec![Arithmetic::Scalar];
        #[cfg(target_arch = "x86_64")]
        if Self::ifma_detected() {
            all.push(Arithmetic::Ifma);
        }
        all
    }

    #[cfg(target_arch = "x86_64")]
    pub(crate) fn ifma_detected() -> bool {
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512ifma")
    }
}

/// A scalar in canonical form (`< r`), as `Fr::into_bigint` returns it.
pub type Scalar = <Fr as PrimeField>::BigInt;
