//! Baby Jubjub points as constraints.
//!
//! - [`PointVar::add`] is the complete twisted Edwards addition (6 constraints, 3 when one side
//!   is a constant): complete because a = 168700 is a square and d = 168696 is not, so its
//!   denominators never vanish on curve points and a prover cannot exploit an exceptional case.
//! - [`FixedBaseTable`] multiplies a constant generator by a scalar given as bits, with 3-bit
//!   windows looked up in precomputed constant tables and accumulated with Montgomery additions
//!   (3 constraints for the lookup, 3 for the addition: 2 per bit instead of ~10 per bit for
//!   double-and-add). Montgomery addition is incomplete (it breaks when both points share an
//!   x-coordinate), so the tables are built so that this provably never happens; see
//!   [`FixedBaseTable::new`].

use std::{
    borrow::Borrow,
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
};

use ark_ec::{AffineRepr, CurveGroup, PrimeGroup};
use ark_ff::{AdditiveGroup, Field};
use ark_r1cs_std::{
    alloc::{AllocVar, AllocationMode},
    boolean::Boolean,
    eq::EqGadget,
    fields::fp::FpVar,
    fields::FieldVar,
    select::CondSelectGadget,
    GR1CSVar,
};
use ark_relations::gr1cs::{Namespace, SynthesisError};
use num_bigint::BigUint;

use super::{generators, to_montgomery, Point, PointProjective, COEFF_A, COEFF_D, MONT_A};
#[cfg(test)]
use crate::bits::alloc_bits;
use crate::{modl, Fr};

/// Allocates `num / den` and enforces `quotient · den = num` (one constraint). Callers only
/// divide by values that cannot be zero for honest inputs; a zero denominator makes witness
/// generation fail instead of producing an unsatisfiable proof.
fn quotient(num: &FpVar<Fr>, den: &FpVar<Fr>) -> Result<FpVar<Fr>, SynthesisError> {
    if let (FpVar::Constant(n), FpVar::Constant(d)) = (num, den) {
        return Ok(FpVar::Constant(
            *n * d.inverse().ok_or(SynthesisError::DivisionByZero)?,
        ));
    }
    let cs = num.cs().or(den.cs());
    let q = FpVar::new_witness(cs, || {
        Ok(num.value()?
            * den
                .value()?
                .inverse()
                .ok_or(SynthesisError::DivisionByZero)?)
    })?;
    q.mul_equals(den, num)?;
    Ok(q)
}

/// An affine Baby Jubjub point in the reference's (a = 168700) coordinates.
#[derive(Clone, Debug)]
pub struct PointVar {
    pub x: FpVar<Fr>,
    pub y: FpVar<Fr>,
}

impl PointVar {
    pub fn constant(p: &Point) -> Self {
        let (x, y) = p.xy().unwrap_or((Fr::ZERO, Fr::ONE));
        Self {
            x: FpVar::Constant(x),
            y: FpVar::Constant(y),
        }
    }

    pub fn new(x: FpVar<Fr>, y: FpVar<Fr>) -> Self {
        Self { x, y }
    }

    /// Check 3: `a·x² + y² = 1 + d·x²·y²` (3 constraints).
    pub fn enforce_on_curve(&self) -> Result<(), SynthesisError> {
        let x2 = self.x.square()?;
        let y2 = self.y.square()?;
        (x2.clone() * COEFF_D).mul_equals(&y2, &(x2 * COEFF_A + &y2 - Fr::ONE))
    }

    /// Complete addition: x3 = (x1·y2 + y1·x2)/(1 + d·x1·x2·y1·y2),
    /// y3 = (y1·y2 − a·x1·x2)/(1 − d·x1·x2·y1·y2).
    pub fn add(&self, other: &Self) -> Result<Self, SynthesisError> {
        let xx = &self.x * &other.x;
        let yy = &self.y * &other.y;
        let cross = (&self.x + &self.y) * (&other.x + &other.y) - &xx - &yy;
        let dxxyy = (&xx * &yy) * COEFF_D;
        let x = quotient(&cross, &(FpVar::one() + &dxxyy))?;
        let y = quotient(&(yy - xx * COEFF_A), &(FpVar::one() - dxxyy))?;
        Ok(Self { x, y })
    }

    /// `−P = (−x, y)`: free, a linear combination.
    pub fn negate(&self) -> Self {
        Self {
            x: FpVar::zero() - &self.x,
            y: self.y.clone(),
        }
    }

    pub fn value(&self) -> Result<Point, SynthesisError> {
        Ok(Point::new_unchecked(self.x.value()?, self.y.value()?))
    }
}

/// Both coordinates, x first. The point is not checked to be on the curve: a public point may
/// be anything, and [`PointVar::enforce_on_curve`] says where that matters.
impl AllocVar<Point, Fr> for PointVar {
    fn new_variable<T: Borrow<Point>>(
        cs: impl Into<Namespace<Fr>>,
        f: impl FnOnce() -> Result<T, SynthesisError>,
        mode: AllocationMode,
    ) -> Result<Self, SynthesisError> {
        let cs = cs.into().cs();
        let xy = f().map(|p| (p.borrow().x, p.borrow().y));
        Ok(Self {
            x: FpVar::new_variable(cs.clone(), || xy.map(|(x, _)| x), mode)?,
            y: FpVar::new_variable(cs, || xy.map(|(_, y)| y), mode)?,
        })
    }
}

/// Coordinate-wise: affine coordinates are unique, so equal points have equal coordinates.
/// Enforcing equality costs one constraint per coordinate that is not constant on both sides.
impl EqGadget<Fr> for PointVar {
    fn is_eq(&self, other: &Self) -> Result<Boolean<Fr>, SynthesisError> {
        Ok(self.x.is_eq(&other.x)? & self.y.is_eq(&other.y)?)
    }

    fn conditional_enforce_equal(
        &self,
        other: &Self,
        should_enforce: &Boolean<Fr>,
    ) -> Result<(), SynthesisError> {
        self.x.conditional_enforce_equal(&other.x, should_enforce)?;
        self.y.conditional_enforce_equal(&other.y, should_enforce)
    }

    fn enforce_equal(&self, other: &Self) -> Result<(), SynthesisError> {
        self.x.enforce_equal(&other.x)?;
        self.y.enforce_equal(&other.y)
    }
}

/// Coordinate-wise (one constraint per coordinate unless the condition is constant).
impl CondSelectGadget<Fr> for PointVar {
    fn conditionally_select(
        cond: &Boolean<Fr>,
        true_value: &Self,
        false_value: &Self,
    ) -> Result<Self, SynthesisError> {
        Ok(Self {
            x: FpVar::conditionally_select(cond, &true_value.x, &false_value.x)?,
            y: FpVar::conditionally_select(cond, &true_value.y, &false_value.y)?,
        })
    }
}

/// A point on the Montgomery form `v² = u³ + A·u² + u`, used only inside a fixed-base
/// multiplication where no exceptional addition can occur.
#[derive(Clone)]
struct MontPointVar {
    u: FpVar<Fr>,
    v: FpVar<Fr>,
}

impl MontPointVar {
    /// Incomplete addition (3 constraints); the caller guarantees `self.u != other.u`.
    fn add(&self, other: &Self) -> Result<Self, SynthesisError> {
        let lambda = quotient(&(&other.v - &self.v), &(&other.u - &self.u))?;
        let cs = lambda.cs();
        let u = FpVar::new_witness(cs.clone(), || {
            Ok(lambda.value()?.square() - MONT_A - self.u.value()? - other.u.value()?)
        })?;
        lambda.mul_equals(&lambda, &(&u + MONT_A + &self.u + &other.u))?;
        let v = FpVar::new_witness(cs, || {
            Ok(lambda.value()? * (self.u.value()? - u.value()?) - self.v.value()?)
        })?;
        lambda.mul_equals(&(&self.u - &u), &(&v + &self.v))?;
        Ok(Self { u, v })
    }

    /// circomlib's Montgomery2Edwards: x = u/v, y = (u − 1)/(u + 1) (2 constraints).
    fn into_edwards(self) -> Result<PointVar, SynthesisError> {
        let x = quotient(&self.u, &self.v)?;
        let y = quotient(&(&self.u - Fr::ONE), &(&self.u + Fr::ONE))?;
        Ok(PointVar { x, y })
    }
}

/// Picks entry `b0 + 2·b1 + 4·b2` of a constant 8-entry table: one constraint for `b0·b1`,
/// shared by both coordinates, and one per coordinate for the `b2` half.
fn lookup3(bits: &[Boolean<Fr>; 3], table: &[(Fr, Fr); 8]) -> Result<MontPointVar, SynthesisError> {
    let [b0, b1, b2]: [FpVar<Fr>; 3] = bits.clone().map(FpVar::from);
    let b01 = &b0 * &b1;
    let select = |c: [Fr; 8]| -> FpVar<Fr> {
        let low = FpVar::Constant(c[0])
            + &b0 * (c[1] - c[0])
            + &b1 * (c[2] - c[0])
            + &b01 * (c[3] - c[2] - c[1] + c[0]);
        let high = FpVar::Constant(c[4] - c[0])
            + &b0 * (c[5] - c[4] - c[1] + c[0])
            + &b1 * (c[6] - c[4] - c[2] + c[0])
            + &b01 * (c[7] - c[6] - c[5] + c[4] - c[3] + c[2] + c[1] - c[0]);
        low + &b2 * high
    };
    Ok(MontPointVar {
        u: select(table.map(|e| e.0)),
        v: select(table.map(|e| e.1)),
    })
}

/// Windows per segment: the accumulated multiple of a segment's base must stay below L (see
/// [`FixedBaseTable::new`]); 83 windows (249 bits) is the largest count that does.
const MAX_WINDOWS_PER_SEGMENT: usize = 83;

struct Segment {
    /// Index of the segment's first window in the scalar.
    first_window: usize,
    /// `tables[j][w]`: Montgomery coordinates of the point added for window value `w`.
    tables: Vec<[(Fr, Fr); 8]>,
}

/// Constant tables for multiplying one generator by scalars of a given bit length.
pub struct FixedBaseTable {
    num_bits: usize,
    segments: Vec<Segment>,
    /// Minus the sum of every segment's constant offset (added once at the end).
    correction: Point,
}

impl FixedBaseTable {
    /// Splits the windows into segments of at most 83 windows. In a segment with base P and n
    /// windows, window 0 looks up `(O + w + 1)·P` with `O = 8ⁿ + 1`, and window j ≥ 1 adds
    /// `(w + 1)·8ʲ·P`. Before window j the accumulator is `s·P` with `O ≤ s`, and the added point
    /// is `t·P` with `t ≤ 8ʲ⁺¹ ≤ 8ⁿ < O`; every partial sum stays below L (asserted here), so
    /// `0 < t < s < s + t < L` and `s·P ≠ ±t·P`: the two points never share an x-coordinate,
    /// the Montgomery additions are never exceptional, and nothing is left to a hint.
    pub fn new(base: &Point, num_bits: usize) -> Self {
        let num_windows = num_bits.div_ceil(3);
        let num_segments = num_windows.div_ceil(MAX_WINDOWS_PER_SEGMENT);
        let base_len = num_windows / num_segments;
        let mut segments = Vec::with_capacity(num_segments);
        let mut correction = PointProjective::default();
        let mut first_window = 0;
        for m in 0..num_segments {
            let n = base_len + usize::from(m < num_windows % num_segments);
            let segment_base =
                base.mul_bigint(BigUint::from(8u32).pow(first_window as u32).to_u64_digits());
            let offset = BigUint::from(8u32).pow(n as u32) + 1u32;
            let max_total = &offset + (BigUint::from(8u32).pow(n as u32 + 1) - 8u32) / 7u32;
            assert!(
                &max_total < modl::l_biguint(),
                "segment of {n} windows would reach L"
            );
            let mut tables = Vec::with_capacity(n);
            for j in 0..n {
                let step = BigUint::from(8u32).pow(j as u32);
                let table = std::array::from_fn(|w| {
                    let mut k = &step * (w as u32 + 1);
                    if j == 0 {
                        k += &offset;
                    }
                    to_montgomery(&segment_base.mul_bigint(k.to_u64_digits()).into_affine())
                });
                tables.push(table);
            }
            // The segment's result exceeds (Σ wⱼ 8ʲ)·P by (O + Σ 8ʲ)·P.
            let excess = offset + (BigUint::from(8u32).pow(n as u32) - 1u32) / 7u32;
            correction -= segment_base.mul_bigint(excess.to_u64_digits());
            segments.push(Segment {
                first_window,
                tables,
            });
            first_window += n;
        }
        Self {
            num_bits,
            segments,
            correction: correction.into_affine(),
        }
    }

    /// The segments' results, each `(O + Σ 8ʲ + Σ wⱼ 8ʲ)·(8^first·P)` in Edwards form; their sum
    /// plus [`Self::correction`] is `scalar·P`.
    fn segment_points(&self, bits: &[Boolean<Fr>]) -> Result<Vec<PointVar>, SynthesisError> {
        assert!(bits.len() <= self.num_bits, "scalar longer than the table");
        let window = |i: usize| -> [Boolean<Fr>; 3] {
            std::array::from_fn(|b| bits.get(3 * i + b).cloned().unwrap_or(Boolean::FALSE))
        };
        self.segments
            .iter()
            .map(|segment| {
                let mut acc = lookup3(&window(segment.first_window), &segment.tables[0])?;
                for (j, table) in segment.tables.iter().enumerate().skip(1) {
                    acc = acc.add(&lookup3(&window(segment.first_window + j), table)?)?;
                }
                acc.into_edwards()
            })
            .collect()
    }
}

/// The tables built so far, by generator and scalar length.
type TableCache = Mutex<HashMap<(Generator, usize), Arc<FixedBaseTable>>>;

/// Tables for the Pedersen generators, built once per scalar length.
fn table(generator: Generator, num_bits: usize) -> Arc<FixedBaseTable> {
    static CACHE: OnceLock<TableCache> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .expect("table cache poisoned");
    cache
        .entry((generator, num_bits))
        .or_insert_with(|| {
            let (g, h) = generators();
            let base = match generator {
                Generator::G => g,
                Generator::H => h,
            };
            Arc::new(FixedBaseTable::new(base, num_bits))
        })
        .clone()
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Generator {
    G,
    H,
}

/// `Σ scalarᵢ·generatorᵢ` for scalars given as little-endian bits, with a single correction.
pub fn fixed_base_msm(terms: &[(Generator, &[Boolean<Fr>])]) -> Result<PointVar, SynthesisError> {
    let mut correction = PointProjective::default();
    let mut points = Vec::new();
    for (generator, bits) in terms {
        let table = table(*generator, bits.len());
        correction += table.correction;
        points.extend(table.segment_points(bits)?);
    }
    let mut sum = points
        .pop()
        .unwrap_or_else(|| PointVar::constant(&Point::zero()));
    for p in points.iter().rev() {
        sum = p.add(&sum)?;
    }
    sum.add(&PointVar::constant(&correction.into_affine()))
}

/// Pedersen(v, ρ) = v·G + ρ·H for scalars given as little-endian bits.
pub fn pedersen(
    value_bits: &[Boolean<Fr>],
    blinding_bits: &[Boolean<Fr>],
) -> Result<PointVar, SynthesisError> {
    fixed_base_msm(&[(Generator::G, value_bits), (Generator::H, blinding_bits)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::babyjubjub::{generator_g, generator_h, pedersen as native_pedersen};
    use ark_ff::UniformRand;
    use ark_relations::gr1cs::{ConstraintSystem, ConstraintSystemRef};
    use rand::SeedableRng;

    fn bits_of(cs: &ConstraintSystemRef<Fr>, x: Fr, n: usize) -> Vec<Boolean<Fr>> {
        alloc_bits(cs.clone(), || Ok(x), n).unwrap()
    }

    #[test]
    fn pedersen_gadget_agrees_with_native() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let l = modl::l_fr();
        let edge = [Fr::ZERO, Fr::ONE, l - Fr::ONE, l, Fr::from(7u64)];
        for (v, r) in edge
            .iter()
            .zip(edge.iter().rev())
            .map(|(a, b)| (*a, *b))
            .chain((0..3).map(|_| {
                (
                    modl::reduce(&Fr::rand(&mut rng)),
                    modl::reduce(&Fr::rand(&mut rng)),
                )
            }))
        {
            let cs = ConstraintSystem::<Fr>::new_ref();
            let p = pedersen(&bits_of(&cs, v, 252), &bits_of(&cs, r, 251)).unwrap();
            assert_eq!(p.value().unwrap(), native_pedersen(&v, &r));
            assert!(cs.is_satisfied().unwrap());
        }
    }

    #[test]
    fn full_width_scalars_agree_with_native() {
        // 254-bit scalars (canonical decompositions of any field element).
        let cs = ConstraintSystem::<Fr>::new_ref();
        let (v, r) = (-Fr::ONE, -Fr::from(2u64));
        let p = pedersen(&bits_of(&cs, v, 254), &bits_of(&cs, r, 254)).unwrap();
        assert_eq!(p.value().unwrap(), native_pedersen(&v, &r));
        assert!(cs.is_satisfied().unwrap());
    }

    #[test]
    fn wrong_bits_are_rejected() {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let v = Fr::from(1000u64);
        let p = pedersen(&bits_of(&cs, v, 252), &bits_of(&cs, Fr::ONE, 251)).unwrap();
        let expected = PointVar::constant(&native_pedersen(&(v + Fr::ONE), &Fr::ONE));
        p.enforce_equal(&expected).unwrap();
        assert!(!cs.is_satisfied().unwrap());
    }

    /// Constraint counts: per segment of n windows, 3n for the lookups, 3(n − 1) for the
    /// Montgomery additions and 2 for the conversion to Edwards; then 6 per complete addition
    /// joining the segments and 3 for the constant correction. A window whose top bit is the
    /// constant padding (the last one of a 251-bit scalar) costs 1 instead of 3.
    #[test]
    fn pedersen_constraint_count() {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let vb = bits_of(&cs, Fr::from(5u64), 252);
        let rb = bits_of(&cs, Fr::from(6u64), 251);
        let before = cs.num_constraints();
        assert_eq!(before, 252 + 251);
        pedersen(&vb, &rb).unwrap();
        // 252 bits: 84 windows in two segments of 42; 251 bits: 84 windows likewise.
        let segment = |n: usize| 3 * n + 3 * (n - 1) + 2;
        let expected = 4 * segment(42) - 2 + 3 * 6 + 3;
        assert_eq!(cs.num_constraints() - before, expected);
        assert_eq!(expected, 1023);
    }

    #[test]
    fn complete_addition_handles_doubling_and_identity() {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let g = generator_g();
        let gv = PointVar::new(
            FpVar::new_witness(cs.clone(), || Ok(g.x)).unwrap(),
            FpVar::new_witness(cs.clone(), || Ok(g.y)).unwrap(),
        );
        let before = cs.num_constraints();
        let doubled = gv.add(&gv).unwrap();
        assert_eq!(cs.num_constraints() - before, 6);
        assert_eq!(doubled.value().unwrap(), (g + g).into_affine());
        let with_identity = gv.add(&PointVar::constant(&Point::zero())).unwrap();
        assert_eq!(with_identity.value().unwrap(), g);
        let before = cs.num_constraints();
        gv.enforce_on_curve().unwrap();
        assert_eq!(cs.num_constraints() - before, 3);
        assert!(cs.is_satisfied().unwrap());
        let h = generator_h();
        let off = PointVar::new(
            FpVar::new_witness(cs.clone(), || Ok(h.x)).unwrap(),
            FpVar::new_witness(cs.clone(), || Ok(h.y + Fr::ONE)).unwrap(),
        );
        off.enforce_on_curve().unwrap();
        assert!(!cs.is_satisfied().unwrap());
    }

    /// `AllocVar`, `EqGadget` and `CondSelectGadget` against the native points, and their
    /// exact costs: allocation and equality with a constant free of booleans, selection 2,
    /// `is_eq` 5 (2 per coordinate and their conjunction), `enforce_equal` 2.
    #[test]
    fn point_var_speaks_r1cs_std() {
        let cs = ConstraintSystem::<Fr>::new_ref();
        let (g, h) = (generator_g(), generator_h());
        let gv = PointVar::new_witness(cs.clone(), || Ok(g)).unwrap();
        let hv = PointVar::new_input(cs.clone(), || Ok(h)).unwrap();
        assert_eq!((gv.value().unwrap(), hv.value().unwrap()), (g, h));
        assert_eq!(cs.num_witness_variables(), 2);
        assert_eq!(cs.num_instance_variables(), 1 + 2);
        assert_eq!(cs.num_constraints(), 0);
        for bit in [true, false] {
            let cond = Boolean::new_witness(cs.clone(), || Ok(bit)).unwrap();
            let expected = if bit { g } else { h };
            let costs = |f: &dyn Fn()| {
                let before = cs.num_constraints();
                f();
                cs.num_constraints() - before
            };
            let picked = PointVar::conditionally_select(&cond, &gv, &hv).unwrap();
            assert_eq!(picked.value().unwrap(), expected);
            assert_eq!(
                costs(&|| {
                    PointVar::conditionally_select(&cond, &gv, &hv).unwrap();
                }),
                2
            );
            assert_eq!(
                costs(&|| assert_eq!(picked.is_eq(&gv).unwrap().value().unwrap(), bit)),
                5
            );
            assert_eq!(
                costs(&|| picked
                    .enforce_equal(&PointVar::constant(&expected))
                    .unwrap()),
                2
            );
        }
        assert!(cs.is_satisfied().unwrap());
        gv.enforce_equal(&hv).unwrap();
        assert!(!cs.is_satisfied().unwrap());
    }
}
