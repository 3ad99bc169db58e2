//! The buckets of one Pippenger window, filled with batch-affine additions.
//!
//! [`Window`] owns the scheduling: which addition joins the current batch, which waits in the
//! queue because its bucket already has one, which spills to a Jacobian overflow. How the
//! buckets are stored and a batch is computed belongs to a [`BucketStore`]: [`AffineBuckets`]
//! on arkworks' field arithmetic, or `lanes::LaneBuckets` eight additions at a time with
//! AVX-512 IFMA.

use ark_ec::{
    short_weierstrass::{Affine, Projective, SWCurveConfig},
    AffineRepr, CurveGroup,
};
use ark_ff::{Field, Zero};

use crate::reduce::reduce_runs_batch_affine;
use crate::{Arithmetic, Curve};

/// Windows with at least this many buckets are filled and reduced one at a time; narrower ones
/// a group at a time ([`segment_sums`]), so that their additions share batches.
pub(crate) const WIDE_WINDOW: usize = 4096;

/// `(Σ (i + 1) · bucket_i, Σ bucket_i)` of the window with `buckets` buckets filled from
/// `items` (see [`Window::fill`]), computed with `arithmetic`.
pub(crate) fn bucket_sums<'a, P: Curve>(
    buckets: usize,
    items: impl Iterator<Item = (&'a Affine<P>, u32)>,
    arithmetic: Arithmetic,
) -> (Projective<P>, Projective<P>) {
    match arithmetic {
        Arithmetic::Scalar => {
            let mut window = Window::<P, AffineBuckets<P>>::new(AffineBuckets::new(buckets));
            window.fill(items);
            window.reduce()
        }
        #[cfg(target_arch = "x86_64")]
        Arithmetic::Ifma => {
            let store = crate::lanes::LaneBuckets::<P>::new(buckets)
                .expect("Arithmetic::Ifma is only chosen where the CPU has AVX-512 IFMA");
            let mut window = Window::new(store);
            window.fill(items);
            window.reduce()
        }
    }
}

/// `Σ (k + 1) · bucket_k` of each run of buckets, the runs `lengths` long and laid end to end
/// in one store filled from `items`: an item's digit counts its magnitude from the start of its
/// run (`start + magnitude`, see [`Window::fill`]). A batch takes one addition per bucket, so a
/// narrow window alone pays an inversion for every few dozen additions; windows filled
/// together share batches of up to a thousand.
pub(crate) fn segment_sums<'a, P: Curve>(
    lengths: &[usize],
    items: impl Iterator<Item = (&'a Affine<P>, u32)>,
    arithmetic: Arithmetic,
) -> Vec<Projective<P>> {
    let buckets = lengths.iter().sum();
    match arithmetic {
        Arithmetic::Scalar => {
            let mut window = Window::<P, AffineBuckets<P>>::new(AffineBuckets::new(buckets));
            window.fill(items);
            window.reduce_segments(lengths)
        }
        #[cfg(target_arch = "x86_64")]
        Arithmetic::Ifma => {
            let store = crate::lanes::LaneBuckets::<P>::new(buckets)
                .expect("Arithmetic::Ifma is only chosen where the CPU has AVX-512 IFMA");
            let mut window = Window::new(store);
            window.fill(items);
            window.reduce_segments(lengths)
        }
    }
}

/// Where a window's bucket sums live and how a batch of additions into them is computed.
pub(crate) trait BucketStore<P: SWCurveConfig> {
    fn len(&self) -> usize;
    fn is_empty_bucket(&self, bucket: usize) -> bool;
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

/// Buckets as arkworks affine points (the identity marks an empty one).
pub(crate) struct AffineBuckets<P: SWCurveConfig> {
    buckets: Vec<Affine<P>>,
    /// Per addition of the batch: its denominator (1 when exceptional), the product of the
    /// denominators before it, and whether it is exceptional.
    denominators: Vec<P::BaseField>,
    prefix: Vec<P::BaseField>,
    exceptional: Vec<bool>,
}

impl<P: SWCurveConfig> AffineBuckets<P> {
    pub(crate) fn new(buckets: usize) -> Self {
        Self {
            buckets: vec![Affine::identity(); buckets],
            denominators: Vec::new(),
            prefix: Vec::new(),
            exceptional: Vec::new(),
        }
    }
}

impl<P: SWCurveConfig> BucketStore<P> for AffineBuckets<P> {
    fn len(&self) -> usize {
        self.buckets.len()
    }

    fn is_empty_bucket(&self, bucket: usize) -> bool {
        self.buckets[bucket].is_zero()
    }

    fn put(&mut self, bucket: usize, point: &Affine<P>) {
        self.buckets[bucket] = *point;
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
            product *= denominator;
            self.denominators.push(denominator);
            self.exceptional.push(exceptional);
        }
        let mut inverse = product.inverse().expect("denominators are non-zero");
        for (i, (bucket, point)) in batch.iter().enumerate().rev() {
            let inv_i = inverse * self.prefix[i];
            inverse *= self.denominators[i];
            let b = *bucket as usize;
            if self.exceptional[i] {
                overflow[b] += point;
                continue;
            }
            let q = self.buckets[b];
            let lambda = (point.y - q.y) * inv_i;
            let x = lambda.square() - q.x - point.x;
            let y = lambda * (q.x - x) - q.y;
            self.buckets[b] = Affine::new_unchecked(x, y);
        }
    }

    fn into_affine(self) -> Vec<Affine<P>> {
        self.buckets
    }
}

#[cfg(test)]
impl<P: SWCurveConfig> AffineBuckets<P> {
    pub(crate) fn buckets_for_tests(&self) -> &[Affine<P>] {
        &self.buckets
    }
}

/// The buckets of one window and the batch of additions waiting for their shared inversion.
pub(crate) struct Window<P: SWCurveConfig, S: BucketStore<P>> {
    store: S,
    /// Additions that could not be batched: an exceptional one (the bucket held the point or
    /// its negation), or one whose bucket was already in the batch while the queue was full.
    /// Mixed Jacobian additions, rare for random scalars, but the bulk for many equal scalars
    /// (0/1 witnesses), where batching cannot help.
    overflow: Vec<Projective<P>>,
    /// Whether a bucket already has an addition in `batch`: a bucket can take only one
    /// addition per inversion.
    pending: Vec<bool>,
    batch: Vec<(u32, Affine<P>)>,
    /// Additions that met a pending bucket, retried after the next flush.
    queue: Vec<(u32, Affine<P>)>,
    batch_capacity: usize,
    queue_capacity: usize,
}

impl<P: SWCurveConfig, S: BucketStore<P>> Window<P, S> {
    /// A window over `store`'s buckets: bucket `k` takes magnitude `k + 1`.
    pub(crate) fn new(store: S) -> Self {
        let buckets = store.len();
        // Large batches amortise the inversion (~330 multiplications on the test machine) but
        // collide more often with buckets already in the batch; the collisions wait in a queue
        // as long as the batch. At a quarter of the buckets few of them overflow to Jacobian
        // additions; at half, a tenth of a small proof's additions did (windows filled
        // together, `segment_sums`).
        let batch_capacity = (buckets / 4).clamp(16, 1024);
        let queue_capacity = batch_capacity;
        Self {
            store,
            overflow: vec![Projective::zero(); buckets],
            pending: vec![false; buckets],
            batch: Vec::with_capacity(batch_capacity),
            queue: Vec::with_capacity(queue_capacity),
            batch_capacity,
            queue_capacity,
        }
    }

    /// Adds `digit · point` for every `(point, digit)` of `items`, each digit encoded as
    /// `magnitude << 1 | negative` with a magnitude in `0..=buckets` (0 is skipped), to the
    /// bucket of its magnitude, and completes the pending additions.
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

    /// Adds `point` to a bucket that is not pending: an empty bucket takes the point, any
    /// other joins the batch (the store settles `Q + Q` and `Q + (-Q)` there).
    fn schedule(&mut self, bucket: u32, point: Affine<P>) {
        let b = bucket as usize;
        if self.store.is_empty_bucket(b) {
            self.store.put(b, &point);
            return;
        }
        self.pending[b] = true;
        self.batch.push((bucket, point));
    }

    /// Performs the batched additions with one inversion for all of them.
    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        self.store.add_batch(&self.batch, &mut self.overflow);
        for &(bucket, _) in &self.batch {
            self.pending[bucket as usize] = false;
        }
        self.batch.clear();
    }

    /// `(Σ (i + 1) · bucket_i, Σ bucket_i)` (see [`BucketStore::reduce_runs`]).
    pub(crate) fn reduce(self) -> (Projective<P>, Projective<P>) {
        let len = self.store.len();
        self.store.reduce_runs(&self.overflow, &[len])[0]
    }

    /// `Σ (k + 1) · bucket_k` of each run of buckets, the runs `lengths` long (see
    /// [`segment_sums`]).
    pub(crate) fn reduce_segments(self, lengths: &[usize]) -> Vec<Projective<P>> {
        self.store
            .reduce_runs(&self.overflow, lengths)
            .into_iter()
            .map(|(weighted, _)| weighted)
            .collect()
    }
}
