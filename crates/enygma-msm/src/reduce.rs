//! Bucket reduction `Σ (k + 1)·B_k` with batch-affine additions, for the wide single window of
//! the precomputed MSM (2^15 buckets, where the usual running sum's two Jacobian additions
//! per bucket, ~27 multiplications, cost as much as a fifth of the whole MSM).
//!
//! The buckets are cut into `LANES` contiguous segments whose running sums advance together,
//! one bucket per step: a step is two rounds of independent affine additions (`R += B`, then
//! `T += R`) sharing one inversion per round (Montgomery's trick), ~6 multiplications each.
//! The segments' results are then combined with Jacobian arithmetic, once per segment.

use ark_ec::{
    short_weierstrass::{Affine, Projective, SWCurveConfig},
    AdditiveGroup, AffineRepr, PrimeGroup,
};
use ark_ff::{Field, Zero};

/// Segments advanced together: enough additions per inversion (~330 multiplications) to make
/// its share small, few enough to keep the per-segment combination cheap.
const LANES: usize = 256;

/// How one pair of [`BatchAdder::add_pairs`] is settled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Settled without a division: an operand was the identity, or the sum is.
    Done,
    Add,
    Double,
}

/// Scratch space for [`BatchAdder::add_pairs`].
pub(crate) struct BatchAdder<P: SWCurveConfig> {
    kinds: Vec<Kind>,
    denominators: Vec<P::BaseField>,
    prefix: Vec<P::BaseField>,
}

impl<P: SWCurveConfig> BatchAdder<P> {
    pub(crate) fn new() -> Self {
        Self {
            kinds: Vec::new(),
            denominators: Vec::new(),
            prefix: Vec::new(),
        }
    }

    /// `acc[k] += add(k)` for every `k`, with one field inversion for all of them.
    pub(crate) fn add_pairs(&mut self, acc: &mut [Affine<P>], add: impl Fn(usize) -> Affine<P>) {
        self.kinds.clear();
        self.denominators.clear();
        self.prefix.clear();
        let mut product = P::BaseField::ONE;
        for (k, a) in acc.iter_mut().enumerate() {
            let b = add(k);
            let (kind, denominator) = if b.is_zero() {
                (Kind::Done, P::BaseField::ONE)
            } else if a.is_zero() {
                *a = b;
                (Kind::Done, P::BaseField::ONE)
            } else if a.x == b.x {
                if a.y != b.y || a.y.is_zero() {
                    // a = -b (or a point of order 2, which BN254's groups do not have).
                    *a = Affine::identity();
                    (Kind::Done, P::BaseField::ONE)
                } else {
                    (Kind::Double, a.y.double())
                }
            } else {
                (Kind::Add, b.x - a.x)
            };
            self.kinds.push(kind);
            self.prefix.push(product);
            if kind != Kind::Done {
                product *= denominator;
            }
            self.denominators.push(denominator);
        }
        let Some(mut inverse) = product.inverse() else {
            unreachable!("denominators are non-zero")
        };
        for k in (0..acc.len()).rev() {
            if self.kinds[k] == Kind::Done {
                continue;
            }
            let inv_k = inverse * self.prefix[k];
            inverse *= self.denominators[k];
            let (a, b) = (acc[k], add(k));
            let lambda = if self.kinds[k] == Kind::Double {
                let xx = a.x.square();
                (xx.double() + xx + P::COEFF_A) * inv_k
            } else {
                (b.y - a.y) * inv_k
            };
            let x = lambda.square() - a.x - b.x;
            let y = lambda * (a.x - x) - a.y;
            acc[k] = Affine::new_unchecked(x, y);
        }
    }
}

/// `(Σ (k + 1)·buckets[k], Σ buckets[k])`.
pub(crate) fn reduce_batch_affine<P: SWCurveConfig>(
    buckets: &[Affine<P>],
) -> (Projective<P>, Projective<P>) {
    let m = buckets.len();
    let lanes = LANES.min(m.max(1));
    let segment = m.div_ceil(lanes);
    let bucket = |lane: usize, t: usize| {
        buckets
            .get(lane * segment + t)
            .copied()
            .unwrap_or(Affine::identity())
    };
    // Lane ℓ covers buckets ℓ·S .. ℓ·S + S - 1: running[ℓ] = Σ_{t ≥ step} B, and
    // total[ℓ] = Σ_t (t + 1)·B_{ℓ·S + t} after the last step.
    let mut running = vec![Affine::<P>::identity(); lanes];
    let mut total = vec![Affine::<P>::identity(); lanes];
    let mut adder = BatchAdder::new();
    for t in (0..segment).rev() {
        adder.add_pairs(&mut running, |lane| bucket(lane, t));
        adder.add_pairs(&mut total, |lane| running[lane]);
    }
    let projective = |points: &[Affine<P>]| points.iter().map(|p| p.into_group()).collect();
    let (running, total): (Vec<_>, Vec<_>) = (projective(&running), projective(&total));
    combine_segments(&running, &total, segment)
}

/// `(Σ (k + 1)·B_k, Σ B_k)` from the segments' final sums: segment `ℓ` covers the buckets
/// `ℓ·S .. ℓ·S + S - 1` (`S = segment`), `running[ℓ]` is the sum of its buckets and `total[ℓ]`
/// is `Σ_t (t + 1)·B_{ℓ·S + t}`.
pub(crate) fn combine_segments<P: SWCurveConfig>(
    running: &[Projective<P>],
    total: &[Projective<P>],
    segment: usize,
) -> (Projective<P>, Projective<P>) {
    // Σ_k (k + 1)·B_k = Σ_ℓ (total[ℓ] + ℓ·S·running[ℓ]), and Σ_ℓ ℓ·running[ℓ] is a running sum
    // over the segments.
    let mut sum = Projective::<P>::zero();
    let mut weighted_lanes = Projective::<P>::zero();
    let mut weighted = Projective::<P>::zero();
    for (running, total) in running.iter().zip(total).rev() {
        weighted_lanes += &sum;
        sum += running;
        weighted += total;
    }
    // The loop adds running[ℓ] to `weighted_lanes` once per segment below ℓ: ℓ times.
    weighted += weighted_lanes.mul_bigint([segment as u64]);
    (weighted, sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_bn254::{g1, Fr};
    use ark_ec::CurveGroup;
    use ark_std::UniformRand;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn reference(
        buckets: &[Affine<g1::Config>],
    ) -> (Projective<g1::Config>, Projective<g1::Config>) {
        let mut weighted = Projective::zero();
        let mut sum = Projective::zero();
        for (k, b) in buckets.iter().enumerate() {
            weighted += *b * Fr::from(k as u64 + 1);
            sum += b;
        }
        (weighted, sum)
    }

    #[test]
    fn matches_the_running_sum_on_every_shape() {
        let mut rng = ChaCha20Rng::seed_from_u64(31);
        let p = Projective::<g1::Config>::rand(&mut rng).into_affine();
        for m in [0, 1, 2, 255, 256, 257, 1000, 4099] {
            let mut buckets: Vec<Affine<g1::Config>> = (0..m)
                .map(|_| Projective::rand(&mut rng).into_affine())
                .collect();
            assert_eq!(
                reduce_batch_affine(&buckets),
                reference(&buckets),
                "m = {m}"
            );
            // Empty buckets, equal buckets (doublings of running sums) and opposite ones
            // (running sums that cancel).
            for (k, b) in buckets.iter_mut().enumerate() {
                *b = match k % 5 {
                    0 => Affine::identity(),
                    1 | 2 => p,
                    3 => -p,
                    _ => *b,
                };
            }
            assert_eq!(
                reduce_batch_affine(&buckets),
                reference(&buckets),
                "m = {m}, mixed"
            );
            let same = vec![p; m];
            assert_eq!(
                reduce_batch_affine(&same),
                reference(&same),
                "m = {m}, all equal"
            );
        }
    }
}
