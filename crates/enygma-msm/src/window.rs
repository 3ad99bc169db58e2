//! The buckets of one Pippenger window, filled with batch-affine additions.
//!
//! [`Window`] owns the scheduling: which addition joins the current batch, which waits in the
//! queue because its bucket already has one, which spills to a Jacobian overflow. How the
//! buckets are stored and a batch is computed belongs to a [`BucketStore`]: [`AffineBuckets`]
//! on the scalar arithmetic, or `lanes::LaneBuckets` eight additions at a time with
//! AVX-512 IFMA.

use ark_ec::{
    short_weierstrass::{Affine, Projective},
    AffineRepr,
};
use ark_ff::Zero;

use crate::buckets::{AffineBuckets, BucketStore};
use crate::curve::{Arithmetic, Curve};

/// Windows with at least this many buckets are filled and reduced one at a time; narrower ones
/// a group at a time ([`segment_sums`]), so that their additions share batches.
pub(crate) const WIDE_WINDOW: usize = 4096;

/// Scalars are folded into `[0, (r-1)/2]`, which is below `2^253`.
pub(crate) const FOLDED_BITS: usize = 253;

/// Field multiplications per point per window when filling buckets: the batch-affine addition
/// (2 products and a square, plus 3 products of Montgomery's trick) and the scan overhead.
pub(crate) const FILL_COST: usize = 7;
/// Field multiplications per bucket per window in the reduction: two batch-affine additions
/// ([`reduce`]).
pub(crate) const REDUCE_COST: usize = 14;
/// The widest window [`window_bits`] picks. Alone, 32,768 random G1 scalars took 2 % less time
/// at c = 12 than at 11 (`examples/window_sweep.rs`); inside a k = 6 transfer proof, its H MSM
/// (32,767 points) took 9 % more at 12 (one thread, five alternated rounds), where a group's
/// store of buckets doubles to some 45,000.
pub(crate) const MAX_WINDOW_BITS: usize = 11;

/// The window width in `2..=MAX_WINDOW_BITS` minimising
/// `windows × (n × FILL_COST + buckets × REDUCE_COST)`: the widths `examples/window_sweep.rs`
/// measured fastest at 4,400 and 8,192 G1 points.
pub fn window_bits(n: usize) -> usize {
    (2..=MAX_WINDOW_BITS)
        .min_by_key(|&c| {
            (FOLDED_BITS / c + 1) * (n * FILL_COST + (1usize << (c - 1)) * REDUCE_COST)
        })
        .expect("non-empty range")
}

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

/// The buckets of one window and the batch of additions waiting for their shared inversion.
pub(crate) struct Window<P: Curve, S: BucketStore<P>> {
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

impl<P: Curve, S: BucketStore<P>> Window<P, S> {
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
        self.store.prefetch(b);
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
