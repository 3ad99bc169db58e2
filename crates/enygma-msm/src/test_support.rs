//! What the unit tests of both MSMs share: the groups they run on and their random bases.

use ark_bn254::Fr;
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::CurveGroup;
use ark_ff::PrimeField;
use ark_std::UniformRand;
use rand_chacha::ChaCha20Rng;

pub(crate) use crate::curve::Curve as Group;
use crate::curve::Scalar;

/// Every test named runs on G1 and on G2.
macro_rules! on_g1_and_g2 {
    ($($test:ident),* $(,)?) => {
        mod g1 { $( #[test] fn $test() { super::$test::<ark_bn254::g1::Config>() } )* }
        mod g2 { $( #[test] fn $test() { super::$test::<ark_bn254::g2::Config>() } )* }
    };
}
pub(crate) use on_g1_and_g2;

pub(crate) fn random_bases<P: Group>(n: usize, rng: &mut ChaCha20Rng) -> Vec<Affine<P>> {
    // Random multiples of the generator are as good as random points and much cheaper
    // than hashing to the curve.
    let points: Vec<Projective<P>> = (0..n).map(|_| Projective::<P>::rand(rng)).collect();
    Projective::normalize_batch(&points)
}

pub(crate) fn random_scalars(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    (0..n).map(|_| Fr::rand(rng).into_bigint()).collect()
}
