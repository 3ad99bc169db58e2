//! The buckets of one Pippenger window, filled with batch-affine additions.

use ark_ec::{
    short_weierstrass::{Affine, Projective, SWCurveConfig},
    AdditiveGroup, AffineRepr, CurveGroup,
};
use ark_ff::{Field, Zero};

use crate::reduce::{reduce_batch_affine, BatchAdder};

/// Windows with at least this many buckets are reduced in batch-affine form
/// ([`reduce_batch_affine`]); the plain MSM's narrower windows (1,024 buckets at 2^15 points)
/// keep the running sums they were measured with.
pub(crate) const BATCH_AFFINE_REDUCTION: usize = 4096;

/// One pending batch-affine addition `buckets[bucket] += point`.
#[derive(Clone, Copy)]
struct Addition<P: SWCurveConfig> {
    bucket: u32,
    doubling: bool,
    point: Affine<P>,
}

/// The buckets of one window and the batch of additions waiting for their shared inversion.
pub(crate) struct Window<P: SWCurveConfig> {
    /// Affine bucket sums; the identity marks an empty bucket.
    buckets: Vec<Affine<P>>,
    /// Additions that could not be batched because their bucket was already in the batch and
    /// the queue was full: mixed Jacobian additions, rare for random scalars, but the bulk for
    /// many equal scalars (0/1 witnesses), where batching cannot help.
    overflow: Vec<Projective<P>>,
    /// Whether a bucket already has an addition in `batch`: a bucket can take only one
    /// addition per inversion.
    pending: Vec<bool>,
    batch: Vec<Addition<P>>,
    /// Denominators of `batch`, inverted in place by `flush`.
    denominators: Vec<P::BaseField>,
    prefix: Vec<P::BaseField>,
    /// Additions that met a pending bucket, retried after the next flush.
    queue: Vec<(u32, Affine<P>)>,
    batch_capacity: usize,
    queue_capacity: usize,
}

impl<P: SWCurveConfig> Window<P> {
    /// Empty buckets for the digit magnitudes `1..=buckets` (bucket `k` takes magnitude `k + 1`).
    pub(crate) fn new(buckets: usize) -> Self {
        // Large batches amortise the inversion (~330 multiplications on the test machine) but
        // collide more often with buckets already in the batch; half the buckets measured
        // slightly better than a quarter, the collisions wait in the queue.
        let batch_capacity = (buckets / 2).clamp(16, 1024);
        let queue_capacity = batch_capacity / 2;
        Self {
            buckets: vec![Affine::identity(); buckets],
            overflow: vec![Projective::zero(); buckets],
            pending: vec![false; buckets],
            batch: Vec::with_capacity(batch_capacity),
            denominators: Vec::with_capacity(batch_capacity),
            prefix: Vec::with_capacity(batch_capacity),
            queue: Vec::with_capacity(queue_capacity),
            batch_capacity,
            queue_capacity,
        }
    }

    /// `Σ digit · point` over `(point, digit)` pairs, each digit encoded as
    /// `magnitude << 1 | negative` with a magnitude in `0..=buckets` (0 is skipped).
    pub(crate) fn sum<'a>(
        mut self,
        items: impl Iterator<Item = (&'a Affine<P>, u32)>,
    ) -> Projective<P> {
        self.fill(items);
        self.reduce().0
    }

    /// Adds every point of `items` to the bucket of its digit (see [`Window::sum`]) and
    /// completes the pending additions.
    pub(crate) fn fill<'a>(&mut self, items: impl Iterator<Item = (&'a Affine<P>, u32)>) {
        for (base, digit) in items {
            if digit < 2 || base.is_zero() {
                continue;
            }
            let bucket = (digit >> 1) - 1;
            let point = if digit & 1 == 1 { -*base } else { *base };
            self.add(bucket, point);
        }
        loop {
            self.flush();
            if self.queue.is_empty() {
                break;
            }
            self.drain_queue();
        }
    }

    fn add(&mut self, bucket: u32, point: Affine<P>) {
        let b = bucket as usize;
        if self.pending[b] {
            if self.queue.len() < self.queue_capacity {
                self.queue.push((bucket, point));
            } else {
                self.overflow[b] += &point;
            }
            return;
        }
        self.schedule(bucket, point);
        while self.batch.len() >= self.batch_capacity {
            self.flush();
            self.drain_queue();
        }
    }

    /// Retries the queued additions after a flush; a second addition to the same bucket
    /// goes back to the queue, which cannot outgrow its capacity because it only shrinks here.
    fn drain_queue(&mut self) {
        let queued = std::mem::take(&mut self.queue);
        for &(bucket, point) in &queued {
            if self.pending[bucket as usize] {
                self.queue.push((bucket, point));
            } else {
                self.schedule(bucket, point);
            }
        }
        // Reuse the allocation the next time the queue is taken.
        if self.queue.capacity() < queued.capacity() {
            let mut queued = queued;
            queued.clear();
            queued.extend_from_slice(&self.queue);
            self.queue = queued;
        }
    }

    /// Adds `point` to a bucket that is not pending. The exceptional cases are settled here,
    /// while the bucket's value is final, so that no denominator of the batch is zero: an
    /// empty bucket takes the point, `Q + (-Q)` empties the bucket (and so does `Q + Q` for a
    /// point of order 2, `y = 0`, which BN254's odd-order groups do not have), and any other
    /// `Q + Q` is batched as a doubling.
    fn schedule(&mut self, bucket: u32, point: Affine<P>) {
        let b = bucket as usize;
        let current = self.buckets[b];
        if current.is_zero() {
            self.buckets[b] = point;
            return;
        }
        let (doubling, denominator) = if current.x == point.x {
            if current.y != point.y || current.y.is_zero() {
                self.buckets[b] = Affine::identity();
                return;
            }
            (true, current.y.double())
        } else {
            (false, point.x - current.x)
        };
        self.pending[b] = true;
        self.batch.push(Addition {
            bucket,
            doubling,
            point,
        });
        self.denominators.push(denominator);
    }

    /// Performs the batched additions with one inversion for all of them.
    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        self.prefix.clear();
        let mut product = P::BaseField::ONE;
        for d in &self.denominators {
            self.prefix.push(product);
            product *= d;
        }
        let mut inverse = product.inverse().expect("denominators are non-zero");
        for i in (0..self.batch.len()).rev() {
            let inv_i = inverse * self.prefix[i];
            inverse *= self.denominators[i];
            let Addition {
                bucket,
                doubling,
                point,
            } = self.batch[i];
            let b = bucket as usize;
            let q = self.buckets[b];
            let lambda = if doubling {
                let xx = q.x.square();
                (xx.double() + xx + P::COEFF_A) * inv_i
            } else {
                (point.y - q.y) * inv_i
            };
            let x = lambda.square() - q.x - point.x;
            let y = lambda * (q.x - x) - q.y;
            self.buckets[b] = Affine::new_unchecked(x, y);
            self.pending[b] = false;
        }
        self.batch.clear();
        self.denominators.clear();
    }

    /// `(Σ (i + 1) · bucket_i, Σ bucket_i)`: with running sums, or in batch-affine form for
    /// the wide windows of precomputed tables.
    pub(crate) fn reduce(mut self) -> (Projective<P>, Projective<P>) {
        if self.buckets.len() >= BATCH_AFFINE_REDUCTION {
            // Fold the rare Jacobian overflow into the affine buckets first.
            let spilled: Vec<usize> = (0..self.buckets.len())
                .filter(|&b| !self.overflow[b].is_zero())
                .collect();
            let extra: Vec<Projective<P>> = spilled.iter().map(|&b| self.overflow[b]).collect();
            let extra = Projective::normalize_batch(&extra);
            let mut acc: Vec<Affine<P>> = spilled.iter().map(|&b| self.buckets[b]).collect();
            BatchAdder::new().add_pairs(&mut acc, |k| extra[k]);
            for (&b, sum) in spilled.iter().zip(acc) {
                self.buckets[b] = sum;
            }
            return reduce_batch_affine(&self.buckets);
        }
        let mut running = Projective::<P>::zero();
        let mut total = Projective::<P>::zero();
        for (bucket, overflow) in self.buckets.iter().zip(&self.overflow).rev() {
            running += bucket;
            if !overflow.is_zero() {
                running += overflow;
            }
            total += &running;
        }
        (total, running)
    }
}
