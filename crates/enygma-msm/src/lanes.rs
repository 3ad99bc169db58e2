//! A window's buckets with AVX-512 IFMA: the batch-affine additions of [`crate::window`]
//! computed eight at a time, on the field arithmetic of [`crate::ifma`].
//!
//! Why it is shaped this way:
//! - A batch of additions is cut into groups of eight, one addition per lane, so Montgomery's
//!   trick runs as eight interleaved chains: the prefix products of the forward pass and the
//!   back pass are vector products, and the eight chain ends share one scalar inversion.
//! - Buckets stay in radix 2^52 (our Montgomery form) for the whole window and go back to
//!   arkworks' form once, for the reduction. Points arrive in arkworks' form (the proving key's,
//!   shared with every other user of the key) and are converted as they are gathered, one
//!   vector product per coordinate ([`crate::ifma::Fq8::from_arkworks`]).
//! - The exceptional additions (the bucket holds the point or its negation) show as a zero
//!   denominator in their lane; that lane's denominator is replaced by 1 and the point goes to
//!   the bucket's Jacobian overflow, so no coordinate is compared on the scalar side.

use ark_bn254::{Fq, Fq2};
use ark_ec::{
    short_weierstrass::{Affine, Projective},
    AffineRepr,
};
use ark_ff::Field;

use crate::ifma::{self, Fq2x8, Fq8, LANES, LIMBS};
use crate::window::BucketStore;
use crate::Curve;

/// A base field eight elements at a time: what the bucket additions need of [`Fq8`] (G1) and
/// [`Fq2x8`] (G2).
///
/// # Safety
/// The `unsafe` methods need AVX-512 F and IFMA; they are only called from functions that
/// enable both, on a CPU where they were detected.
pub trait LaneField: Copy {
    /// The arkworks field.
    type Element: Field;
    /// One element's limbs as stored in a bucket.
    type Limbs: Copy + Default;
    /// One element's limbs, converted on the scalar side (for a point put in an empty bucket).
    fn limbs_of(element: &Self::Element) -> Self::Limbs;
    /// Eight stored elements, one per lane.
    fn gather(limbs: [&Self::Limbs; LANES]) -> Self;
    /// Each lane's limbs: the inverse of `gather`.
    fn split(self) -> [Self::Limbs; LANES];
    fn one() -> Self;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn from_arkworks(elements: [&Self::Element; LANES]) -> Self;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn to_arkworks(self) -> [Self::Element; LANES];
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn sub(self, rhs: Self) -> Self;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn mul(self, rhs: Self) -> Self;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn square(self) -> Self;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn zero_lanes(self) -> u8;
    /// # Safety
    /// AVX-512 F and IFMA must be enabled.
    unsafe fn blend(self, mask: u8, if_set: Self) -> Self;
}

/// One implementation for both fields: each method forwards to the inherent one.
macro_rules! lane_field {
    ($lanes:ty, $element:ty, $limbs:ty, $limbs_of:expr) => {
        impl LaneField for $lanes {
            type Element = $element;
            type Limbs = $limbs;
            fn limbs_of(element: &$element) -> $limbs {
                $limbs_of(element)
            }
            #[inline]
            fn gather(limbs: [&$limbs; LANES]) -> Self {
                <$lanes>::gather(limbs)
            }
            #[inline]
            fn split(self) -> [$limbs; LANES] {
                <$lanes>::split(self)
            }
            #[inline]
            fn one() -> Self {
                <$lanes>::one()
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn from_arkworks(elements: [&$element; LANES]) -> Self {
                <$lanes>::from_arkworks(elements)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn to_arkworks(self) -> [$element; LANES] {
                <$lanes>::to_arkworks(self)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn sub(self, rhs: Self) -> Self {
                <$lanes>::sub(self, rhs)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn mul(self, rhs: Self) -> Self {
                <$lanes>::mul(self, rhs)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn square(self) -> Self {
                <$lanes>::square(self)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn zero_lanes(self) -> u8 {
                <$lanes>::zero_lanes(self)
            }
            #[inline]
            #[target_feature(enable = "avx512f,avx512ifma")]
            unsafe fn blend(self, mask: u8, if_set: Self) -> Self {
                <$lanes>::blend(self, mask, if_set)
            }
        }
    };
}

lane_field!(Fq8, Fq, [u64; LIMBS], ifma::limbs_of);
lane_field!(Fq2x8, Fq2, [[u64; LIMBS]; 2], |x: &Fq2| [
    ifma::limbs_of(&x.c0),
    ifma::limbs_of(&x.c1)
]);

type Lanes<P> = <P as Curve>::Lanes;
type Limbs<P> = <Lanes<P> as LaneField>::Limbs;

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
        crate::Arithmetic::ifma_detected().then(|| Self {
            coordinates: vec![Default::default(); buckets],
            filled: vec![false; buckets],
            groups: Vec::new(),
        })
    }

    /// See [`BucketStore::add_batch`].
    ///
    /// # Safety
    /// AVX-512 F and IFMA must be available (they are: [`LaneBuckets::new`] checked).
    #[target_feature(enable = "avx512f,avx512ifma")]
    unsafe fn add_batch_in_lanes(
        &mut self,
        batch: &[(u32, Affine<P>)],
        overflow: &mut [Projective<P>],
    ) {
        let one = Lanes::<P>::one();
        self.groups.clear();
        let mut product = one;
        for chunk in batch.chunks(LANES) {
            // A short last group repeats its last addition in the spare lanes, which are
            // neither counted in the chains nor written back.
            let entry = |lane: usize| &chunk[lane.min(chunk.len() - 1)];
            let present = (1u16 << chunk.len()).wrapping_sub(1) as u8;
            let bucket = |lane| &self.coordinates[entry(lane).0 as usize];
            let point = (
                Lanes::<P>::from_arkworks(core::array::from_fn(|lane| &entry(lane).1.x)),
                Lanes::<P>::from_arkworks(core::array::from_fn(|lane| &entry(lane).1.y)),
            );
            let q = (
                Lanes::<P>::gather(core::array::from_fn(|lane| &bucket(lane)[0])),
                Lanes::<P>::gather(core::array::from_fn(|lane| &bucket(lane)[1])),
            );
            let denominator = point.0.sub(q.0);
            let exceptional = denominator.zero_lanes() & present;
            let denominator = denominator.blend(!present | exceptional, one);
            self.groups.push(Group {
                point,
                bucket: q,
                denominator,
                prefix: product,
                written: present & !exceptional,
            });
            product = product.mul(denominator);
        }

        let mut ends = product.to_arkworks();
        ark_ff::batch_inversion(&mut ends);
        let mut inverse = Lanes::<P>::from_arkworks(core::array::from_fn(|lane| &ends[lane]));

        for (chunk, group) in batch.chunks(LANES).zip(&self.groups).rev() {
            let inv = inverse.mul(group.prefix);
            inverse = inverse.mul(group.denominator);
            let (px, py) = group.point;
            let (qx, qy) = group.bucket;
            let lambda = py.sub(qy).mul(inv);
            let x = lambda.square().sub(qx).sub(px);
            let y = lambda.mul(qx.sub(x)).sub(qy);
            let (x, y) = (x.split(), y.split());
            for (lane, (bucket, point)) in chunk.iter().enumerate() {
                let b = *bucket as usize;
                if group.written >> lane & 1 == 1 {
                    self.coordinates[b] = [x[lane], y[lane]];
                } else {
                    overflow[b] += point;
                }
            }
        }
    }

    /// # Safety
    /// As [`LaneBuckets::add_batch_in_lanes`].
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
}

impl<P: Curve> BucketStore<P> for LaneBuckets<P> {
    fn len(&self) -> usize {
        self.filled.len()
    }

    fn is_empty_bucket(&self, bucket: usize) -> bool {
        !self.filled[bucket]
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{on_g1_and_g2, random_bases, Group};
    use crate::window::AffineBuckets;
    use ark_ec::CurveGroup;
    use ark_ff::Zero;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    on_g1_and_g2!(batches_match_the_scalar_store);

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
