//! Checked construction of BN254 points from decimal coordinates, and their decimal rendering.
//!
//! The point at infinity has no affine coordinates; like the EVM precompiles (EIP-196/197) we
//! write it as all-zero coordinates, and accept all-zero coordinates as it.

use ark_bn254::{Fq, Fq2, G1Affine, G2Affine};
use ark_ec::short_weierstrass::{Affine, SWCurveConfig};
use ark_ec::AffineRepr;
use ark_ff::Zero;

use crate::decimal::{parse_field, to_decimal};
use crate::Error;

/// A G1 point from its affine coordinates, checked to be on the curve (G1 has cofactor 1).
pub(crate) fn g1_from_fq(x: Fq, y: Fq, field: &str) -> Result<G1Affine, Error> {
    checked_point(x, y, field)
}

/// A G2 point from its affine coordinates, checked to be on the twist and in the r-torsion
/// subgroup (the twist has a large cofactor, so the subgroup check matters).
pub(crate) fn g2_from_fq2(x: Fq2, y: Fq2, field: &str) -> Result<G2Affine, Error> {
    checked_point(x, y, field)
}

/// The point `(x, y)` of a short-Weierstrass group, all-zero as the identity, refused (naming
/// `field`) off the curve or outside the prime-order subgroup.
fn checked_point<P: SWCurveConfig>(
    x: P::BaseField,
    y: P::BaseField,
    field: &str,
) -> Result<Affine<P>, Error> {
    if x.is_zero() && y.is_zero() {
        return Ok(Affine::identity());
    }
    let p = Affine::<P>::new_unchecked(x, y);
    if !p.is_on_curve() {
        return Err(Error::NotOnCurve {
            field: field.to_string(),
        });
    }
    if !p.is_in_correct_subgroup_assuming_on_curve() {
        return Err(Error::NotInSubgroup {
            field: field.to_string(),
        });
    }
    Ok(p)
}

/// G1 from decimal `[x, y]`.
pub(crate) fn g1_from_decimal(c: &[String; 2], field: &str) -> Result<G1Affine, Error> {
    let x = parse_field::<Fq>(&c[0], &format!("{field}[0]"))?;
    let y = parse_field::<Fq>(&c[1], &format!("{field}[1]"))?;
    g1_from_fq(x, y, field)
}

/// An Fq2 element from decimal `(c0, c1)`; `path0`/`path1` name the two strings for errors.
pub(crate) fn fq2_from_decimal(c0: &str, c1: &str, path0: &str, path1: &str) -> Result<Fq2, Error> {
    Ok(Fq2::new(
        parse_field::<Fq>(c0, path0)?,
        parse_field::<Fq>(c1, path1)?,
    ))
}

/// G2 from the EVM/reference order `[[x.c1, x.c0], [y.c1, y.c0]]`.
pub(crate) fn g2_from_decimal_evm(c: &[[String; 2]; 2], field: &str) -> Result<G2Affine, Error> {
    let x = fq2_from_decimal(
        &c[0][1],
        &c[0][0],
        &format!("{field}[0][1]"),
        &format!("{field}[0][0]"),
    )?;
    let y = fq2_from_decimal(
        &c[1][1],
        &c[1][0],
        &format!("{field}[1][1]"),
        &format!("{field}[1][0]"),
    )?;
    g2_from_fq2(x, y, field)
}

/// Affine coordinates, (0, 0) for the point at infinity.
pub(crate) fn g1_xy(p: &G1Affine) -> (Fq, Fq) {
    p.xy().unwrap_or((Fq::zero(), Fq::zero()))
}

/// Affine coordinates, (0, 0) for the point at infinity.
pub(crate) fn g2_xy(p: &G2Affine) -> (Fq2, Fq2) {
    p.xy().unwrap_or((Fq2::zero(), Fq2::zero()))
}

/// G1 as decimal `[x, y]`.
pub(crate) fn g1_to_decimal(p: &G1Affine) -> [String; 2] {
    let (x, y) = g1_xy(p);
    [to_decimal(&x), to_decimal(&y)]
}

/// G2 as decimal in the EVM/reference order `[[x.c1, x.c0], [y.c1, y.c0]]`.
pub(crate) fn g2_to_decimal_evm(p: &G2Affine) -> [[String; 2]; 2] {
    let (x, y) = g2_xy(p);
    [
        [to_decimal(&x.c1), to_decimal(&x.c0)],
        [to_decimal(&y.c1), to_decimal(&y.c0)],
    ]
}

/// An Fq2 element as decimal `[c0, c1]` (snarkjs order).
pub(crate) fn fq2_to_decimal(x: &Fq2) -> [String; 2] {
    [to_decimal(&x.c0), to_decimal(&x.c1)]
}
