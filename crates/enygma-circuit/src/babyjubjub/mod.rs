//! Baby Jubjub in the form the reference uses: `a·x² + y² = 1 + d·x²·y²` over BN254's scalar
//! field with a = 168700 and d = 168696 (iden3's form; `ark-ed-on-bn254` uses the a = 1 form,
//! whose x-coordinates differ by a factor √168700, so it cannot be used as is).
//!
//! The curve is given to ark-ec as a [`TECurveConfig`], so the native arithmetic (complete
//! twisted Edwards addition, scalar multiplication) is arkworks'. Its prime subgroup has order
//! L ([`crate::modl::L`]); the Pedersen generators G and H lie in it.

pub mod constraints;

use std::sync::OnceLock;

use ark_ec::{
    models::CurveConfig,
    twisted_edwards::{Affine, MontCurveConfig, Projective, TECurveConfig},
    AffineRepr, CurveGroup,
};
use ark_ff::{MontFp, PrimeField, Zero};

use crate::Fr;

/// The reference's Baby Jubjub parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BabyJubjubConfig;

impl CurveConfig for BabyJubjubConfig {
    type BaseField = Fr;
    /// Integers modulo L, the order of the prime subgroup.
    type ScalarField = ark_ed_on_bn254::Fr;
    const COFACTOR: &'static [u64] = &[8];
    const COFACTOR_INV: ark_ed_on_bn254::Fr =
        MontFp!("2394026564107420727433200628387514462817212225638746351800188703329891451411");
}

impl TECurveConfig for BabyJubjubConfig {
    const COEFF_A: Fr = MontFp!("168700");
    const COEFF_D: Fr = MontFp!("168696");
    /// The reference's Pedersen generator G (its value generator).
    const GENERATOR: Affine<Self> = Affine::new_unchecked(
        MontFp!("16540640123574156134436876038791482806971768689494387082833631921987005038935"),
        MontFp!("20819045374670962167435360035096875258406992893633759881276124905556507972311"),
    );
    type MontCurveConfig = Self;
}

/// The birationally equivalent Montgomery curve `v² = u³ + A·u² + u`:
/// A = 2(a + d)/(a − d) = 168698 and B = 4/(a − d) = 1.
impl MontCurveConfig for BabyJubjubConfig {
    const COEFF_A: Fr = MontFp!("168698");
    const COEFF_B: Fr = MontFp!("1");
    type TECurveConfig = Self;
}

pub type Point = Affine<BabyJubjubConfig>;
pub type PointProjective = Projective<BabyJubjubConfig>;

pub const COEFF_A: Fr = <BabyJubjubConfig as TECurveConfig>::COEFF_A;
pub const COEFF_D: Fr = <BabyJubjubConfig as TECurveConfig>::COEFF_D;
pub const MONT_A: Fr = <BabyJubjubConfig as MontCurveConfig>::COEFF_A;

/// Pedersen value generator G.
pub fn generator_g() -> Point {
    BabyJubjubConfig::GENERATOR
}

/// Pedersen blinding generator H.
pub fn generator_h() -> Point {
    Point::new_unchecked(
        MontFp!("10100005861917718053548237064487763771145251762383025193119768015180892676690"),
        MontFp!("7512830269827713629724023825249861327768672768516116945507944076335453576011"),
    )
}

/// `true` when `(x, y)` satisfies the curve equation (check 3). Points of small order are on
/// the curve too, exactly as in the reference.
pub fn is_on_curve(x: Fr, y: Fr) -> bool {
    Point::new_unchecked(x, y).is_on_curve()
}

/// `scalar·P` where the scalar is the canonical integer of a field element, as the reference's
/// `babyjub.Mul(v, P)` takes the big integer of its input.
pub fn mul(point: &Point, scalar: &Fr) -> PointProjective {
    point.mul_bigint(scalar.into_bigint())
}

/// Pedersen(v, ρ) = v·G + ρ·H.
pub fn pedersen(value: &Fr, blinding: &Fr) -> Point {
    (mul(&generator_g(), value) + mul(&generator_h(), blinding)).into_affine()
}

/// The identity (0, 1).
pub fn identity() -> Point {
    Point::zero()
}

/// Montgomery coordinates `(u, v) = ((1 + y)/(1 − y), u/x)` of a point that is neither the
/// identity nor of order 2 (circomlib's Edwards2Montgomery).
pub fn to_montgomery(p: &Point) -> (Fr, Fr) {
    assert!(
        !p.x.is_zero(),
        "the identity and (0, -1) have no Montgomery image"
    );
    let one = Fr::from(1u64);
    let u = (one + p.y) / (one - p.y);
    (u, u / p.x)
}

/// Both Pedersen generators, checked once to be in the prime-order subgroup.
pub fn generators() -> &'static (Point, Point) {
    static G: OnceLock<(Point, Point)> = OnceLock::new();
    G.get_or_init(|| {
        let (g, h) = (generator_g(), generator_h());
        for p in [g, h] {
            assert!(p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve());
        }
        (g, h)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn generators_are_in_the_prime_subgroup() {
        let (g, h) = generators();
        assert_ne!(g, h);
        let l = crate::modl::l_fr_bigint();
        assert!(g.mul_bigint(l).into_affine().is_zero());
        assert!(h.mul_bigint(l).into_affine().is_zero());
    }

    #[test]
    fn scalars_are_reduced_modulo_l() {
        let v = Fr::from(12345u64);
        let v_plus_l = v + crate::modl::l_fr();
        assert_eq!(pedersen(&v, &v), pedersen(&v_plus_l, &v_plus_l));
        assert_eq!(pedersen(&Fr::from(0u64), &Fr::from(0u64)), identity());
    }

    #[test]
    fn montgomery_map_lands_on_the_montgomery_curve() {
        let (u, v) = to_montgomery(&generator_g());
        assert_eq!(v * v, u * u * u + MONT_A * u * u + u);
        // circomlib's Montgomery2Edwards inverts it.
        let x = u / v;
        let y = (u - Fr::from(1u64)) / (u + Fr::from(1u64));
        assert_eq!((x, y), (generator_g().x, generator_g().y));
    }

    #[test]
    fn off_curve_points_are_detected() {
        let g = generator_g();
        assert!(is_on_curve(g.x, g.y));
        assert!(!is_on_curve(g.x, g.y + Fr::from(1u64)));
        assert!(is_on_curve(Fr::from(0u64), Fr::from(1u64)));
        let _ = Fr::from_str("1").unwrap();
    }
}
