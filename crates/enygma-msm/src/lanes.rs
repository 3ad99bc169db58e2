//! A window's buckets with AVX-512 IFMA: the batch-affine additions of [`crate::window`], and
//! the wide windows' batch-affine reduction of [`crate::reduce`], computed eight at a time on
//! the field arithmetic of [`crate::ifma`].
//!
//! Why it is shaped this way:
//! - A batch of additions is cut into groups of eight, one addition per lane, so Montgomery's
//!   trick runs as eight interleaved chains: the prefix products of the forward pass and the
//!   back pass are vector products, and the eight chain ends share one scalar inversion.
//! - Buckets stay in radix 2^52 (our Montgomery form) for the whole window and are reduced in
//!   lanes too: a wide window alone, the narrow windows of a group side by side, so that their
//!   reductions share rounds of additions as their filling did (a narrow window's running sums
//!   in Jacobian form, two full additions per bucket, had cost up to a fifth of the MSM).
//!   Points arrive in arkworks' form (the proving key's, shared with the scalar path and every
//!   other user of the key) and are converted as they are gathered, one vector product per
//!   coordinate ([`crate::ifma::Fq8::from_arkworks`]).
//! - The exceptional additions (the bucket holds the point or its negation) show as a zero
//!   denominator in their lane; that lane's denominator is replaced by 1 and the point goes to
//!   the bucket's Jacobian overflow, so no coordinate is compared on the scalar side.

use ark_ec::{
    short_weierstrass::{Affine, Projective},
    AffineRepr,
};
use ark_ff::{Field, Zero};

use crate::buckets::{folded_overflow, BucketStore};
use crate::curve::Curve;
use crate::ifma::LANES;
use crate::lane_field::LaneField;
use crate::reduce::Segments;

type Lanes<P> = <P as Curve>::Lanes;
type Limbs<P> = <Lanes<P> as LaneField>::Limbs;

/// Segments of the batch-affine reduction advanced together (see [`crate::reduce`]): a round
/// of additions shares one inversion (a scalar inversion and the conversions of eight chain
/// ends, a few microseconds), so more segments than the scalar reduction's 256 pay here.
const REDUCE_SEGMENTS: usize = 512;

/// One group of eight additions between the forward and the back pass.
struct Group<L> {
    point: (L, L),
    bucket: (L, L),
    denominator: L,
    /// The product of the denominators of the earlier groups, lane by lane.
    prefix: L,
    /// Lanes that hold an addition and are not exceptional: the lanes to write back.
    written: u8,
}

/// Buckets in radix 2^52; `x` and `y` of bucket `b` at `coordinates[b]`.
pub(crate) struct LaneBuckets<P: Curve> {
    coordinates: Vec<[Limbs<P>; 2]>,
    filled: Vec<bool>,
    groups: Vec<Group<Lanes<P>>>,
}

impl<P: Curve> LaneBuckets<P> {
    /// `None` on a CPU without AVX-512 IFMA: the only way to build one, so that its methods
    /// may use the instructions.
    pub(crate) fn new(buckets: usize) -> Option<Self> {
        crate::Arithmetic::ifma_detected().then(|| Self::new_unchecked(buckets))
    }

    /// For the reduction's accumulators, built where IFMA was already checked.
    fn new_unchecked(buckets: usize) -> Self {
        Self {
            coordinates: vec![Default::default(); buckets],
            filled: vec![false; buckets],
            groups: Vec::new(),
        }
    }

    /// `bucket[target(i)] += addend(i)` for `i` in `0..len`, the targets distinct and filled,
    /// with one inversion for all of them; `addend` gathers eight entries' `(x, y)` at once.
    /// An exceptional addition (the bucket holds the addend or its negation) is left to
    /// `exceptional(i)`.
    ///
    /// # Safety
    /// AVX-512 F and IFMA must be available.
    #[target_feature(enable = "avx512f,avx512ifma")]
    unsafe fn add_in_lanes(
        &mut self,
        len: usize,
        target: impl Fn(usize) -> usize,
        addend: impl Fn([usize; LANES]) -> (Lanes<P>, Lanes<P>),
        mut exceptional: impl FnMut(usize),
    ) {
        if len == 0 {
            // The reduction's first rounds only copy into empty accumulators.
            return;
        }
        let one = Lanes::<P>::one();
        self.groups.clear();
        let mut product = one;
        for start in (0..len).step_by(LANES) {
            // A short last group repeats its last addition in the spare lanes, which are
            // neither counted in the chains nor written back.
            let entries: [usize; LANES] = core::array::from_fn(|lane| (start + lane).min(len - 1));
            let present = (1u16 << (len - start).min(LANES)).wrapping_sub(1) as u8;
            let point = addend(entries);
            let bucket = |lane: usize| &self.coordinates[target(entries[lane])];
            let q = (
                Lanes::<P>::gather(core::array::from_fn(|lane| &bucket(lane)[0])),
                Lanes::<P>::gather(core::array::from_fn(|lane| &bucket(lane)[1])),
            );
            let denominator = point.0.sub(q.0);
            let zero = denominator.zero_lanes() & present;
            let denominator = denominator.blend(!present | zero, one);
            self.groups.push(Group {
                point,
                bucket: q,
                denominator,
                prefix: product,
                written: present & !zero,
            });
            product = product.mul(denominator);
        }

        let mut ends = product.to_arkworks();
        // One inversion for the eight lanes, on this thread: `ark_ff::batch_inversion` splits
        // so short a slice across the pool's threads, an inversion and a rayon join each.
        ark_ff::fields::serial_batch_inversion_and_mul(&mut ends, &Field::ONE);
        let mut inverse = Lanes::<P>::from_arkworks(core::array::from_fn(|lane| &ends[lane]));

        for (g, group) in self.groups.iter().enumerate().rev() {
            let inv = inverse.mul(group.prefix);
            inverse = inverse.mul(group.denominator);
            let (px, py) = group.point;
            let (qx, qy) = group.bucket;
            let lambda = py.sub(qy).mul(inv);
            let x = lambda.square().sub(qx).sub(px);
            let y = lambda.mul(qx.sub(x)).sub(qy);
            let (x, y) = (x.split(), y.split());
            for lane in 0..(len - g * LANES).min(LANES) {
                let i = g * LANES + lane;
                if group.written >> lane & 1 == 1 {
                    self.coordinates[target(i)] = [x[lane], y[lane]];
                } else {
                    exceptional(i);
                }
            }
        }
    }

    /// See [`BucketStore::add_batch`].
    ///
    /// # Safety
    /// As [`LaneBuckets::add_in_lanes`].
    #[target_feature(enable = "avx512f,avx512ifma")]
    unsafe fn add_batch_in_lanes(
        &mut self,
        batch: &[(u32, Affine<P>)],
        overflow: &mut [Projective<P>],
    ) {
        self.add_in_lanes(
            batch.len(),
            |i| batch[i].0 as usize,
            // SAFETY: called within `add_in_lanes`, where the features are enabled.
            |entries| unsafe {
                (
                    Lanes::<P>::from_arkworks(entries.map(|i| &batch[i].1.x)),
                    Lanes::<P>::from_arkworks(entries.map(|i| &batch[i].1.y)),
                )
            },
            |i| overflow[batch[i].0 as usize] += &batch[i].1,
        );
    }

    /// Bucket `b` as an arkworks point (the identity if empty); for the rare cases.
    ///
    /// # Safety
    /// As [`LaneBuckets::add_in_lanes`].
    #[target_feature(enable = "avx512f,avx512ifma")]
    unsafe fn affine(&self, b: usize) -> Affine<P> {
        if !self.filled[b] {
            return Affine::identity();
        }
        affine_of(&self.coordinates[b])
    }

    /// `self[ℓ] += source(ℓ)` for every accumulator `ℓ` that has a source: copied into an
    /// empty accumulator, added in lanes to the others (the targets are gathered in `targets`,
    /// scratch space kept by the caller). An exceptional addition goes to `overflow[ℓ]`.
    ///
    /// # Safety
    /// As [`LaneBuckets::add_in_lanes`].
    #[target_feature(enable = "avx512f,avx512ifma")]
    unsafe fn accumulate<'a>(
        &mut self,
        targets: &mut Vec<usize>,
        source: impl Fn(usize) -> Option<&'a [Limbs<P>; 2]>,
        overflow: &mut [Projective<P>],
    ) where
        Limbs<P>: 'a,
    {
        targets.clear();
        for l in 0..self.filled.len() {
            let Some(point) = source(l) else { continue };
            if self.filled[l] {
                targets.push(l);
            } else {
                self.coordinates[l] = *point;
                self.filled[l] = true;
            }
        }
        let addend = |i: usize| source(targets[i]).expect("a target has a source");
        self.add_in_lanes(
            targets.len(),
            |i| targets[i],
            |entries| {
                let points = entries.map(addend);
                (
                    Lanes::<P>::gather(points.map(|c| &c[0])),
                    Lanes::<P>::gather(points.map(|c| &c[1])),
                )
            },
            // SAFETY: called within `add_in_lanes`, where the features are enabled.
            |i| overflow[targets[i]] += unsafe { affine_of::<P>(addend(i)) },
        );
    }

    /// Sets bucket `b` to `point`, or empties it for the identity.
    fn set(&mut self, b: usize, point: &Affine<P>) {
        self.filled[b] = !point.is_zero();
        if self.filled[b] {
            self.put(b, point);
        }
    }

    /// # Safety
    /// As [`LaneBuckets::add_in_lanes`].
    #[target_feature(enable = "avx512f,avx512ifma")]
    unsafe fn to_affine_in_lanes(&self) -> Vec<Affine<P>> {
        let mut affine = Vec::with_capacity(self.coordinates.len());
        let n = self.coordinates.len();
        for start in (0..n).step_by(LANES) {
            let bucket = |lane: usize| &self.coordinates[(start + lane).min(n - 1)];
            let x = Lanes::<P>::gather(core::array::from_fn(|lane| &bucket(lane)[0]));
            let y = Lanes::<P>::gather(core::array::from_fn(|lane| &bucket(lane)[1]));
            let (x, y) = (x.to_arkworks(), y.to_arkworks());
            for lane in 0..LANES.min(n - start) {
                affine.push(if self.filled[start + lane] {
                    Affine::new_unchecked(x[lane], y[lane])
                } else {
                    Affine::identity()
                });
            }
        }
        affine
    }

    /// The batch-affine reduction of [`crate::reduce::reduce_runs_batch_affine`] on these buckets,
    /// in lanes, for each run of buckets (the runs `lengths` long, end to end): the runs are cut
    /// into about `REDUCE_SEGMENTS` segments ([`Segments`]), whose running sums `R` and
    /// weighted sums `T` advance one bucket per step, `R += B` then `T += R`, each a round of
    /// [`LaneBuckets::add_in_lanes`]. A wide window is one run; the narrow windows of a group
    /// are one run each, so that their reductions share rounds and inversions as their filling
    /// did. The exceptional additions go to Jacobian overflows beside the accumulators; `T`'s
    /// takes `R`'s at every step, as `T` takes `R`.
    ///
    /// # Safety
    /// As [`LaneBuckets::add_in_lanes`].
    #[target_feature(enable = "avx512f,avx512ifma")]
    unsafe fn reduce_runs_in_lanes(
        &self,
        lengths: &[usize],
    ) -> Vec<(Projective<P>, Projective<P>)> {
        debug_assert_eq!(
            lengths.iter().sum::<usize>(),
            self.filled.len(),
            "the runs cover the store"
        );
        let segments = Segments::new(lengths, REDUCE_SEGMENTS);
        let count = segments.spans.len();
        let mut running = Self::new_unchecked(count);
        let mut total = Self::new_unchecked(count);
        let mut running_overflow = vec![Projective::<P>::zero(); count];
        let mut total_overflow = vec![Projective::<P>::zero(); count];
        let mut targets = Vec::with_capacity(count);
        for t in (0..segments.length).rev() {
            running.accumulate(
                &mut targets,
                |l| {
                    let k = segments.bucket(l, t)?;
                    self.filled[k].then(|| &self.coordinates[k])
                },
                &mut running_overflow,
            );
            // T takes R, and T's overflow R's.
            for (total, running) in total_overflow.iter_mut().zip(&running_overflow) {
                if !running.is_zero() {
                    *total += running;
                }
            }
            total.accumulate(
                &mut targets,
                |l| running.filled[l].then(|| &running.coordinates[l]),
                &mut total_overflow,
            );
        }
        let sums = |accumulators: &Self, overflow: Vec<Projective<P>>| -> Vec<Projective<P>> {
            // SAFETY: the caller of this function has the features (see its Safety).
            let affine = unsafe { accumulators.to_affine_in_lanes() };
            affine.iter().zip(overflow).map(|(a, o)| o + a).collect()
        };
        let (running, total) = (
            sums(&running, running_overflow),
            sums(&total, total_overflow),
        );
        segments.combine(&running, &total)
    }

    /// See [`BucketStore::reduce_runs`].
    ///
    /// # Safety
    /// As [`LaneBuckets::add_in_lanes`].
    #[target_feature(enable = "avx512f,avx512ifma")]
    unsafe fn reduce_runs_with_overflow(
        mut self,
        overflow: &[Projective<P>],
        lengths: &[usize],
    ) -> Vec<(Projective<P>, Projective<P>)> {
        // Fold the rare Jacobian overflow into the buckets first, on the scalar side.
        // SAFETY: this function has the features `affine` needs (see its Safety).
        for (b, sum) in folded_overflow(overflow, |b| unsafe { self.affine(b) }) {
            self.set(b, &sum);
        }
        self.reduce_runs_in_lanes(lengths)
    }
}

/// A point stored in our form as an arkworks point.
///
/// # Safety
/// AVX-512 F and IFMA must be available.
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn affine_of<P: Curve>([x, y]: &[Limbs<P>; 2]) -> Affine<P> {
    let (x, y) = (
        Lanes::<P>::gather([x; LANES]).to_arkworks(),
        Lanes::<P>::gather([y; LANES]).to_arkworks(),
    );
    Affine::new_unchecked(x[0], y[0])
}

impl<P: Curve> BucketStore<P> for LaneBuckets<P> {
    fn len(&self) -> usize {
        self.filled.len()
    }

    fn is_empty_bucket(&self, bucket: usize) -> bool {
        !self.filled[bucket]
    }

    fn prefetch(&self, bucket: usize) {
        crate::buckets::prefetch(&self.coordinates[bucket]);
    }

    fn put(&mut self, bucket: usize, point: &Affine<P>) {
        debug_assert!(!point.is_zero(), "the window skips the identity");
        self.coordinates[bucket] = [
            Lanes::<P>::limbs_of(&point.x),
            Lanes::<P>::limbs_of(&point.y),
        ];
        self.filled[bucket] = true;
    }

    fn add_batch(&mut self, batch: &[(u32, Affine<P>)], overflow: &mut [Projective<P>]) {
        // SAFETY: a `LaneBuckets` exists only where `new` detected AVX-512 F and IFMA.
        unsafe { self.add_batch_in_lanes(batch, overflow) }
    }

    fn into_affine(self) -> Vec<Affine<P>> {
        // SAFETY: as in `add_batch`.
        unsafe { self.to_affine_in_lanes() }
    }

    fn reduce_runs(
        self,
        overflow: &[Projective<P>],
        lengths: &[usize],
    ) -> Vec<(Projective<P>, Projective<P>)> {
        // SAFETY: as in `add_batch`.
        unsafe { self.reduce_runs_with_overflow(overflow, lengths) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buckets::AffineBuckets;
    use crate::test_support::{on_g1_and_g2, random_bases, Group};
    use ark_ec::CurveGroup;
    use ark_ff::Zero;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    on_g1_and_g2!(
        batches_match_the_scalar_store,
        wide_reduction_matches_the_running_sum,
        runs_reduce_like_their_running_sums
    );

    /// The same batches through both stores leave the same buckets and the same overflow:
    /// batches of every length around the lane count (short last groups), with additions of a
    /// bucket's own point (a doubling) and of its negation (a cancellation) among them.
    fn batches_match_the_scalar_store<P: Group>() {
        let Some(mut lanes) = LaneBuckets::<P>::new(64) else {
            eprintln!("skipped: this CPU has no AVX-512 IFMA");
            return;
        };
        let mut rng = ChaCha20Rng::seed_from_u64(41);
        let mut scalar = AffineBuckets::<P>::new(64);
        let points = random_bases::<P>(200, &mut rng);
        let start = &points[..64];
        for (b, point) in start.iter().enumerate() {
            lanes.put(b, point);
            scalar.put(b, point);
        }
        let mut overflow_lanes = vec![Projective::<P>::zero(); 64];
        let mut overflow_scalar = vec![Projective::<P>::zero(); 64];
        let mut current: Vec<Affine<P>> = start.to_vec();
        for len in [1, 7, 8, 9, 15, 16, 17, 64] {
            let mut buckets: Vec<u32> = (0..64).collect();
            for i in 0..len {
                buckets.swap(i, rng.gen_range(i..64));
            }
            let batch: Vec<(u32, Affine<P>)> = buckets[..len]
                .iter()
                .enumerate()
                .map(|(i, &b)| {
                    let point = match i % 5 {
                        1 => current[b as usize],
                        3 => -current[b as usize],
                        _ => points[64 + rng.gen_range(0..136)],
                    };
                    (b, point)
                })
                .collect();
            lanes.add_batch(&batch, &mut overflow_lanes);
            scalar.add_batch(&batch, &mut overflow_scalar);
            current = scalar.buckets_for_tests().to_vec();
        }
        let exceptional = overflow_scalar.iter().filter(|o| !o.is_zero()).count();
        assert!(exceptional > 10, "the batches had exceptional additions");
        assert_eq!(lanes.into_affine(), scalar.into_affine());
        assert_eq!(
            Projective::normalize_batch(&overflow_lanes),
            Projective::normalize_batch(&overflow_scalar)
        );
    }

    /// `(Σ (k + 1)·(B_k + O_k), Σ (B_k + O_k))` the slow way.
    fn reference<P: Group>(
        buckets: &[Affine<P>],
        overflow: &[Projective<P>],
    ) -> (Projective<P>, Projective<P>) {
        let (mut running, mut total) = (Projective::zero(), Projective::zero());
        for (b, o) in buckets.iter().zip(overflow).rev() {
            running += *o + b;
            total += running;
        }
        (total, running)
    }

    /// Bucket counts around the segment count and the lane count; empty, equal and opposite
    /// buckets (so running sums double and cancel), and overflow in some buckets, one of them
    /// cancelling its bucket.
    fn wide_reduction_matches_the_running_sum<P: Group>() {
        if LaneBuckets::<P>::new(1).is_none() {
            eprintln!("skipped: this CPU has no AVX-512 IFMA");
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(43);
        let p = random_bases::<P>(1, &mut rng)[0];
        for m in [1, 7, 511, 512, 513, 4096, 4099] {
            let random = random_bases::<P>(m, &mut rng);
            for shape in ["random", "mixed", "equal"] {
                let buckets: Vec<Affine<P>> = (0..m)
                    .map(|k| match (shape, k % 5) {
                        ("random", _) | ("mixed", 4) => random[k],
                        ("mixed", 0) => Affine::identity(),
                        ("mixed", 3) => -p,
                        _ => p,
                    })
                    .collect();
                let mut overflow = vec![Projective::<P>::zero(); m];
                for k in (0..m).step_by(97) {
                    overflow[k] = random[(k * 7) % m].into_group();
                }
                if m > 5 && !buckets[5].is_zero() {
                    overflow[5] = (-buckets[5]).into_group();
                }
                let mut store = LaneBuckets::<P>::new(m).unwrap();
                for (k, b) in buckets.iter().enumerate() {
                    store.set(k, b);
                }
                assert_eq!(
                    store.reduce_runs(&overflow, &[m]),
                    vec![reference(&buckets, &overflow)],
                    "m = {m}, {shape}"
                );
            }
        }
    }

    /// Runs side by side, as the narrow windows of a group and the top window's copies are
    /// reduced: runs shorter than a segment, one bucket long, longer than the store's share of
    /// segments, and runs whose last segment is short; overflow in some buckets.
    fn runs_reduce_like_their_running_sums<P: Group>() {
        if LaneBuckets::<P>::new(1).is_none() {
            eprintln!("skipped: this CPU has no AVX-512 IFMA");
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(44);
        let p = random_bases::<P>(1, &mut rng)[0];
        for lengths in [
            vec![128; 20],
            vec![512, 512, 512, 4, 4, 4, 4],
            vec![1, 3, 700, 1, 2000, 9],
            vec![256; 3],
            vec![0, 5, 0],
        ] {
            let m: usize = lengths.iter().sum();
            let random = random_bases::<P>(m, &mut rng);
            let buckets: Vec<Affine<P>> = (0..m)
                .map(|k| match k % 7 {
                    0 => Affine::identity(),
                    3 => p,
                    5 => -p,
                    _ => random[k],
                })
                .collect();
            let mut overflow = vec![Projective::<P>::zero(); m];
            for k in (1..m).step_by(89) {
                overflow[k] = random[(k * 5) % m].into_group();
            }
            let mut store = LaneBuckets::<P>::new(m).unwrap();
            for (k, b) in buckets.iter().enumerate() {
                store.set(k, b);
            }
            let mut start = 0;
            let expected: Vec<_> = lengths
                .iter()
                .map(|&len| {
                    let run = start..start + len;
                    start += len;
                    reference(&buckets[run.clone()], &overflow[run])
                })
                .collect();
            assert_eq!(
                store.reduce_runs(&overflow, &lengths),
                expected,
                "{lengths:?}"
            );
        }
    }

    #[test]
    fn empty_buckets_come_back_as_the_identity() {
        let Some(mut lanes) = LaneBuckets::<ark_bn254::g1::Config>::new(11) else {
            return;
        };
        let mut rng = ChaCha20Rng::seed_from_u64(42);
        let points = random_bases(11, &mut rng);
        for b in [0, 3, 10] {
            lanes.put(b, &points[b]);
        }
        let affine = lanes.into_affine();
        for (b, point) in affine.iter().enumerate() {
            if [0, 3, 10].contains(&b) {
                assert_eq!(*point, points[b]);
            } else {
                assert!(point.is_zero(), "bucket {b} is empty");
            }
        }
    }
}
