//! Where a window's bucket sums live: the [`BucketStore`] a [`crate::window::Window`] fills,
//! and [`AffineBuckets`], the store on the scalar arithmetic (arkworks' field types, the
//! products of [`crate::field`]).

use ark_ec::{
    short_weierstrass::{Affine, Projective, SWCurveConfig},
    AffineRepr, CurveGroup,
};
use ark_ff::{Field, Zero};

use crate::curve::Curve;
use crate::reduce::reduce_runs_batch_affine;

/// Where a window's bucket sums live and how a batch of additions into them is computed.
pub(crate) trait BucketStore<P: Curve> {
    fn len(&self) -> usize;
    fn is_empty_bucket(&self, bucket: usize) -> bool;
    /// Asks for the bucket's memory ahead of its batch (a hint; nothing by default).
    fn prefetch(&self, _bucket: usize) {}
    /// Sets an empty bucket to `point`.
    fn put(&mut self, bucket: usize, point: &Affine<P>);
    /// `buckets[b] += point` for every `(b, point)` of `batch`, whose buckets are distinct and
    /// not empty, with one field inversion for the whole batch. An addition whose bucket holds
    /// `point` or `-point` (a zero denominator) goes to `overflow[b]` instead.
    fn add_batch(&mut self, batch: &[(u32, Affine<P>)], overflow: &mut [Projective<P>]);
    /// The bucket sums, the identity for an empty bucket.
    fn into_affine(self) -> Vec<Affine<P>>;

    /// `(Σ (k + 1)·(B_k + overflow_k), Σ (B_k + overflow_k))` of each run of buckets, the runs
    /// `lengths` long end to end, in batch-affine form with the runs side by side
    /// ([`reduce_runs_batch_affine`]); the rare overflow is folded into the buckets first. The
    /// IFMA store runs the same rounds in lanes.
    fn reduce_runs(
        self,
        overflow: &[Projective<P>],
        lengths: &[usize],
    ) -> Vec<(Projective<P>, Projective<P>)>
    where
        Self: Sized,
    {
        let mut buckets = self.into_affine();
        for (b, sum) in folded_overflow(overflow, |b| buckets[b]) {
            buckets[b] = sum;
        }
        reduce_runs_batch_affine(&buckets, lengths)
    }
}

/// Each bucket with an overflow, and its sum `bucket(b) + overflow[b]`: what a reduction folds
/// into the buckets first. The overflow is rare, so its Jacobian additions and their one batch
/// normalisation cost little.
pub(crate) fn folded_overflow<P: SWCurveConfig>(
    overflow: &[Projective<P>],
    bucket: impl Fn(usize) -> Affine<P>,
) -> Vec<(usize, Affine<P>)> {
    let spilled: Vec<usize> = (0..overflow.len())
        .filter(|&b| !overflow[b].is_zero())
        .collect();
    let sums: Vec<Projective<P>> = spilled.iter().map(|&b| overflow[b] + bucket(b)).collect();
    spilled
        .into_iter()
        .zip(Projective::normalize_batch(&sums))
        .collect()
}

/// Asks the cache for every line `item` spans (a G1 bucket is 72 bytes, a G2 one 136): a hint,
/// which a store gives when an addition is scheduled so that the bucket has arrived when its
/// batch is computed, the misses of a batch overlapping instead of stalling one by one.
pub(crate) fn prefetch<T>(item: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = (item as *const T).cast::<i8>();
        let size = std::mem::size_of::<T>();
        for offset in (0..size).step_by(64).chain([size.saturating_sub(1)]) {
            // SAFETY: a prefetch reads nothing into the program, and every address lies in
            // `item`.
            unsafe { _mm_prefetch(start.wrapping_add(offset), _MM_HINT_T0) };
        }
    }
}

/// Buckets as arkworks affine points (an empty one holds the identity).
pub(crate) struct AffineBuckets<P: Curve> {
    buckets: Vec<Affine<P>>,
    /// Whether a bucket holds a point, one byte per bucket. Scheduling an addition asks this
    /// of a random bucket, and a group of narrow windows keeps tens of thousands of buckets
    /// (1.7 MiB of G1 buckets for 2^15 points, more than a core's L2 cache): reading the bucket
    /// itself there took a fifth of a scalar MSM's time, waiting for memory. The bucket is
    /// prefetched instead ([`prefetch`]).
    filled: Vec<bool>,
    /// Per addition of the batch: its denominator (1 when exceptional), the product of the
    /// denominators before it, and whether it is exceptional.
    denominators: Vec<P::BaseField>,
    prefix: Vec<P::BaseField>,
    exceptional: Vec<bool>,
}

impl<P: Curve> AffineBuckets<P> {
    pub(crate) fn new(buckets: usize) -> Self {
        Self {
            buckets: vec![Affine::identity(); buckets],
            filled: vec![false; buckets],
            denominators: Vec::new(),
            prefix: Vec::new(),
            exceptional: Vec::new(),
        }
    }
}

impl<P: Curve> BucketStore<P> for AffineBuckets<P> {
    fn len(&self) -> usize {
        self.buckets.len()
    }

    fn is_empty_bucket(&self, bucket: usize) -> bool {
        !self.filled[bucket]
    }

    fn prefetch(&self, bucket: usize) {
        prefetch(&self.buckets[bucket]);
    }

    fn put(&mut self, bucket: usize, point: &Affine<P>) {
        debug_assert!(!point.is_zero(), "the window skips the identity");
        self.buckets[bucket] = *point;
        self.filled[bucket] = true;
    }

    fn add_batch(&mut self, batch: &[(u32, Affine<P>)], overflow: &mut [Projective<P>]) {
        self.denominators.clear();
        self.prefix.clear();
        self.exceptional.clear();
        let mut product = P::BaseField::ONE;
        for (bucket, point) in batch {
            let denominator = point.x - self.buckets[*bucket as usize].x;
            let exceptional = denominator.is_zero();
            let denominator = if exceptional {
                P::BaseField::ONE
            } else {
                denominator
            };
            self.prefix.push(product);
            product = P::product(&product, &denominator);
            self.denominators.push(denominator);
            self.exceptional.push(exceptional);
        }
        let mut inverse = product.inverse().expect("denominators are non-zero");
        for (i, (bucket, point)) in batch.iter().enumerate().rev() {
            let inv_i = P::product(&inverse, &self.prefix[i]);
            inverse = P::product(&inverse, &self.denominators[i]);
            let b = *bucket as usize;
            if self.exceptional[i] {
                overflow[b] += point;
                continue;
            }
            let q = self.buckets[b];
            let lambda = P::product(&(point.y - q.y), &inv_i);
            let x = P::square(&lambda) - q.x - point.x;
            let y = P::product(&lambda, &(q.x - x)) - q.y;
            self.buckets[b] = Affine::new_unchecked(x, y);
        }
    }

    fn into_affine(self) -> Vec<Affine<P>> {
        self.buckets
    }
}

#[cfg(test)]
impl<P: Curve> AffineBuckets<P> {
    pub(crate) fn buckets_for_tests(&self) -> &[Affine<P>] {
        &self.buckets
    }
}
