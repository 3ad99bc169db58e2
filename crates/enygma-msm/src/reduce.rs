//! Bucket reduction `Σ (k + 1)·B_k` with batch-affine additions, for every window: the usual
//! running sum's two Jacobian additions per bucket, ~27 multiplications, cost as much as a
//! fifth of an MSM (of the precomputed MSM's wide window, and of a group of narrow ones).
//!
//! The buckets, one run per window, are cut into about `LANES` contiguous segments
//! ([`Segments`]) whose running sums advance together, one bucket per step: a step is two rounds
//! of independent affine additions (`R += B`, then `T += R`) sharing one inversion per round
//! (Montgomery's trick), ~6 multiplications each. The segments' results are then combined with
//! Jacobian arithmetic, once per segment. `lanes` runs the same rounds eight at a time.

use ark_ec::{
    short_weierstrass::{Affine, Projective, SWCurveConfig},
    AdditiveGroup, AffineRepr, PrimeGroup,
};
use ark_ff::{Field, Zero};

use crate::curve::Curve;

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
struct BatchAdder<P: Curve> {
    kinds: Vec<Kind>,
    denominators: Vec<P::BaseField>,
    prefix: Vec<P::BaseField>,
}

impl<P: Curve> BatchAdder<P> {
    fn new() -> Self {
        Self {
            kinds: Vec::new(),
            denominators: Vec::new(),
            prefix: Vec::new(),
        }
    }

    /// `acc[k] += add(k)` for every `k`, with one field inversion for all of them.
    fn add_pairs(&mut self, acc: &mut [Affine<P>], add: impl Fn(usize) -> Affine<P>) {
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
                product = P::product(&product, &denominator);
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
            let inv_k = P::product(&inverse, &self.prefix[k]);
            inverse = P::product(&inverse, &self.denominators[k]);
            let (a, b) = (acc[k], add(k));
            let lambda = if self.kinds[k] == Kind::Double {
                let xx = a.x.square();
                P::product(&(xx.double() + xx + P::COEFF_A), &inv_k)
            } else {
                P::product(&(b.y - a.y), &inv_k)
            };
            let x = P::square(&lambda) - a.x - b.x;
            let y = P::product(&lambda, &(a.x - x)) - a.y;
            acc[k] = Affine::new_unchecked(x, y);
        }
    }
}

/// Runs of buckets (each window's, end to end in one store) cut into segments of one length,
/// about `target` segments in all, which a reduction advances side by side, one bucket per step.
/// A run's last segment may be shorter: [`combine_segments`] weighs segment `i` of a run by
/// `i·length` only.
pub(crate) struct Segments {
    /// The steps: the length of every segment but a run's last.
    pub(crate) length: usize,
    /// `(first bucket, length)` of every segment, run after run.
    pub(crate) spans: Vec<(usize, usize)>,
    /// How many segments each run has.
    per_run: Vec<usize>,
}

impl Segments {
    pub(crate) fn new(lengths: &[usize], target: usize) -> Self {
        let buckets: usize = lengths.iter().sum();
        let length = buckets.div_ceil(target).max(1);
        let mut spans = Vec::new();
        let mut per_run = Vec::with_capacity(lengths.len());
        let mut first = 0;
        for &len in lengths {
            let before = spans.len();
            spans.extend(
                (0..len)
                    .step_by(length)
                    .map(|offset| (first + offset, length.min(len - offset))),
            );
            per_run.push(spans.len() - before);
            first += len;
        }
        Self {
            length,
            spans,
            per_run,
        }
    }

    /// Where segment `l`'s bucket at step `t` is, if it has one.
    pub(crate) fn bucket(&self, l: usize, t: usize) -> Option<usize> {
        let (first, len) = self.spans[l];
        (t < len).then_some(first + t)
    }

    /// Each run's `(Σ (k + 1)·B_k, Σ B_k)` from its segments' running sums (`running[l]`, the
    /// sum of segment `l`'s buckets) and weighted sums (`total[l]`).
    pub(crate) fn combine<P: SWCurveConfig>(
        &self,
        running: &[Projective<P>],
        total: &[Projective<P>],
    ) -> Vec<(Projective<P>, Projective<P>)> {
        let mut first = 0;
        self.per_run
            .iter()
            .map(|&count| {
                let run = first..first + count;
                first = run.end;
                combine_segments(&running[run.clone()], &total[run], self.length)
            })
            .collect()
    }
}

/// `(Σ (k + 1)·buckets[k], Σ buckets[k])` of each run of buckets, the runs `lengths` long end
/// to end: the runs' segments advance side by side, so that every run shares the rounds and
/// their inversions.
pub(crate) fn reduce_runs_batch_affine<P: Curve>(
    buckets: &[Affine<P>],
    lengths: &[usize],
) -> Vec<(Projective<P>, Projective<P>)> {
    debug_assert_eq!(lengths.iter().sum::<usize>(), buckets.len());
    let segments = Segments::new(lengths, LANES);
    let count = segments.spans.len();
    // Segment ℓ's running[ℓ] = Σ_{t ≥ step} B, and total[ℓ] = Σ_t (t + 1)·B_t after the
    // last step.
    let mut running = vec![Affine::<P>::identity(); count];
    let mut total = vec![Affine::<P>::identity(); count];
    let mut adder = BatchAdder::new();
    for t in (0..segments.length).rev() {
        adder.add_pairs(&mut running, |l| {
            segments
                .bucket(l, t)
                .map_or(Affine::identity(), |k| buckets[k])
        });
        adder.add_pairs(&mut total, |l| running[l]);
    }
    let projective = |points: &[Affine<P>]| points.iter().map(|p| p.into_group()).collect();
    let (running, total): (Vec<_>, Vec<_>) = (projective(&running), projective(&total));
    segments.combine(&running, &total)
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

    /// One run of `m` buckets, as a wide window is reduced.
    fn alone(buckets: &[Affine<g1::Config>]) -> (Projective<g1::Config>, Projective<g1::Config>) {
        reduce_runs_batch_affine(buckets, &[buckets.len()])[0]
    }

    #[test]
    fn matches_the_running_sum_on_every_shape() {
        let mut rng = ChaCha20Rng::seed_from_u64(31);
        let p = Projective::<g1::Config>::rand(&mut rng).into_affine();
        for m in [0, 1, 2, 255, 256, 257, 1000, 4099] {
            let mut buckets: Vec<Affine<g1::Config>> = (0..m)
                .map(|_| Projective::rand(&mut rng).into_affine())
                .collect();
            assert_eq!(alone(&buckets), reference(&buckets), "m = {m}");
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
            assert_eq!(alone(&buckets), reference(&buckets), "m = {m}, mixed");
            let same = vec![p; m];
            assert_eq!(alone(&same), reference(&same), "m = {m}, all equal");
        }
    }

    /// Runs side by side, as a group of narrow windows and the top window's copies are
    /// reduced: many short runs, runs shorter than a segment, one bucket long, and runs whose
    /// last segment is short; each run's sums are its own.
    #[test]
    fn runs_side_by_side_match_their_own_sums() {
        let mut rng = ChaCha20Rng::seed_from_u64(32);
        let p = Projective::<g1::Config>::rand(&mut rng).into_affine();
        for lengths in [
            vec![128; 20],
            vec![512, 512, 512, 4, 4, 4, 4],
            vec![1, 3, 700, 1, 2000, 9],
            vec![0, 5, 0],
        ] {
            let m: usize = lengths.iter().sum();
            let buckets: Vec<Affine<g1::Config>> = (0..m)
                .map(|k| match k % 7 {
                    0 => Affine::identity(),
                    3 => p,
                    5 => -p,
                    _ => Projective::rand(&mut rng).into_affine(),
                })
                .collect();
            let mut start = 0;
            let expected: Vec<_> = lengths
                .iter()
                .map(|&len| {
                    start += len;
                    reference(&buckets[start - len..start])
                })
                .collect();
            assert_eq!(
                reduce_runs_batch_affine(&buckets, &lengths),
                expected,
                "{lengths:?}"
            );
        }
    }
}
