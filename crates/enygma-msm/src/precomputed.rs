//! Fixed-base MSM: the proving key's bases never change, so each base `P` can be stored with
//! its shifted multiples `2^(c·j)·P`, one per window `j`. Then
//! `Σ sᵢ·Pᵢ = Σᵢ Σⱼ dᵢⱼ·(2^(c·j)·Pᵢ)`, where `dᵢⱼ` are the signed base-`2^c` digits of `sᵢ`,
//! is a single-window MSM over all `(i, j)`: one set of `2^(c-1)` buckets, one bucket
//! reduction and no doublings (Herold, "Notes on MSMs with precomputation", 2023). The
//! plain Pippenger in [`crate::msm`] pays one reduction per window; this form makes the
//! window wide (c = 16 against 11) for the price of one reduction, so it needs fewer additions
//! per scalar (16 against 24 at 2^15 scalars).
//!
//! Zero digits are skipped, so a scalar below `2^b` costs `b / c + 1` additions at most:
//! small witness values need no separate grouping by size.
//!
//! Threads split the bucket range, not the points: each thread scans every digit and keeps
//! those of its buckets, so that no reduction is duplicated.

use ark_bn254::Fr;
use ark_ec::{
    short_weierstrass::{Affine, Projective, SWCurveConfig},
    AdditiveGroup, AffineRepr, CurveGroup, PrimeGroup,
};
use ark_ff::{BigInteger, PrimeField, Zero};
use ark_serialize::{
    CanonicalDeserialize, CanonicalSerialize, Compress, Read, SerializationError, Valid, Validate,
    Write,
};
use rayon::prelude::*;

use crate::curve::{Arithmetic, Curve, Scalar};
use crate::pippenger::{for_each_signed_digit, TopWindow};
use crate::window::{self, FILL_COST, FOLDED_BITS};

/// Field multiplications per bucket of the batch-affine reduction ([`crate::reduce`]): two
/// affine additions.
const BATCH_REDUCE_COST: usize = 14;
/// What this model charges a bucket of a window narrower than `WIDE_WINDOW`: the two
/// Jacobian additions of the running sums such windows had when the tables' widths were chosen.
/// Every window is reduced in batch-affine form since; charging it here would narrow the tables
/// of a few hundred to a thousand bases by a bit (more memory for a few per cent), which was
/// not measured, so the widths stay as they were.
const NARROW_REDUCE_COST: usize = 27;

/// The window width for `n` dense scalars over precomputed bases: the widest `c` in `2..=16`
/// whose cost `n × windows × FILL_COST + buckets × reduction cost` is within 5 % of the least
/// (a wider window stores fewer points per base, and the table is kept as long as the key).
/// Capped at 16: the buckets of wider windows outgrow the caches.
pub fn precomputed_window_bits(n: usize) -> usize {
    let cost = |c: usize| {
        let buckets = 1usize << (c - 1);
        let reduce = if buckets >= crate::window::WIDE_WINDOW {
            BATCH_REDUCE_COST
        } else {
            NARROW_REDUCE_COST
        };
        (FOLDED_BITS / c + 1) * n * FILL_COST + buckets * reduce
    };
    let least = (2..=16).map(cost).min().expect("non-empty range");
    (2..=16)
        .rev()
        .find(|&c| cost(c) * 100 <= least * 105)
        .expect("the least is within 5 % of itself")
}

/// Bases with their shifted multiples, for [`msm_precomputed`].
pub struct PrecomputedBases<P: SWCurveConfig> {
    c: usize,
    windows: usize,
    len: usize,
    /// `table[i * windows + j] = 2^(c·j) · bases[i]`.
    table: Vec<Affine<P>>,
}

impl<P: Curve> PrecomputedBases<P> {
    /// The table for `bases` with the window width the cost model picks for their number.
    pub fn new(bases: &[Affine<P>]) -> Self {
        Self::with_window(bases, precomputed_window_bits(bases.len()))
    }

    /// The bytes [`PrecomputedBases::new`] will hold for `n` bases, known before building it
    /// (so that a server can log, and an operator plan, the memory of its tables).
    pub fn memory_bytes_for(n: usize) -> usize {
        let windows = FOLDED_BITS / precomputed_window_bits(n) + 1;
        n * windows * std::mem::size_of::<Affine<P>>()
    }

    /// The table for `bases` with window width `c` in `2..=16`: `FOLDED_BITS / c + 1` points
    /// per base. Bases may be the identity.
    pub fn with_window(bases: &[Affine<P>], c: usize) -> Self {
        assert!((2..=16).contains(&c), "window width {c} outside 2..=16");
        let windows = FOLDED_BITS / c + 1;
        assert!(
            bases.len() * windows <= u32::MAX as usize,
            "table indices are stored in 32 bits"
        );
        // Jacobian doublings, normalised a chunk at a time so that one inversion serves
        // `256 × windows` points and the Jacobian copies stay small.
        let mut table = bases
            .par_chunks(256)
            .flat_map_iter(|chunk| {
                let mut shifted = Vec::with_capacity(chunk.len() * windows);
                for base in chunk {
                    let mut p = base.into_group();
                    for j in 0..windows {
                        if j > 0 {
                            for _ in 0..c {
                                p.double_in_place();
                            }
                        }
                        shifted.push(p);
                    }
                }
                Projective::normalize_batch(&shifted)
            })
            .collect::<Vec<_>>();
        // Kept as long as the key: no spare capacity (and `memory_bytes_for` stays exact).
        table.shrink_to_fit();
        Self {
            c,
            windows,
            len: bases.len(),
            table,
        }
    }

    /// The number of bases.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The window width `c`.
    pub fn window_bits(&self) -> usize {
        self.c
    }

    /// Bytes held by the table (`windows` affine points per base).
    pub fn memory_bytes(&self) -> usize {
        self.table.capacity() * std::mem::size_of::<Affine<P>>()
    }

    /// The base `i` itself (the multiple for window 0).
    pub fn base(&self, i: usize) -> &Affine<P> {
        &self.table[i * self.windows]
    }
}

/// A table is kept beside its proving key so that a restarted server need not rebuild it: the
/// window width, the number of bases and the points (uncompressed; checked only with
/// [`Validate::Yes`], since a file's owner checks its digest instead, which is far cheaper than
/// putting two million points on the curve). The shape is always checked: a table whose length
/// does not match its window width and bases is refused, never indexed out of bounds.
impl<P: Curve> CanonicalSerialize for PrecomputedBases<P> {
    fn serialize_with_mode<W: Write>(
        &self,
        mut writer: W,
        compress: Compress,
    ) -> Result<(), SerializationError> {
        (self.c as u8).serialize_with_mode(&mut writer, compress)?;
        (self.len as u64).serialize_with_mode(&mut writer, compress)?;
        self.table.serialize_with_mode(&mut writer, compress)
    }

    fn serialized_size(&self, compress: Compress) -> usize {
        1 + 8 + self.table.serialized_size(compress)
    }
}

impl<P: Curve> Valid for PrecomputedBases<P> {
    fn check(&self) -> Result<(), SerializationError> {
        self.table.check()
    }
}

impl<P: Curve> CanonicalDeserialize for PrecomputedBases<P> {
    fn deserialize_with_mode<R: Read>(
        mut reader: R,
        compress: Compress,
        validate: Validate,
    ) -> Result<Self, SerializationError> {
        let c = u8::deserialize_with_mode(&mut reader, compress, validate)? as usize;
        let len = u64::deserialize_with_mode(&mut reader, compress, validate)?;
        if !(2..=16).contains(&c) {
            return Err(SerializationError::InvalidData);
        }
        let windows = FOLDED_BITS / c + 1;
        let points = usize::try_from(len)
            .ok()
            .and_then(|len| len.checked_mul(windows))
            .filter(|&points| points <= u32::MAX as usize)
            .ok_or(SerializationError::InvalidData)?;
        // The count is checked before anything is allocated, and the table allocated at its
        // size: ark-serialize's `Vec` grows by doubling, which would leave up to half again as
        // much memory unused for the life of the table.
        if u64::deserialize_with_mode(&mut reader, compress, validate)? != points as u64 {
            return Err(SerializationError::InvalidData);
        }
        let mut table = Vec::with_capacity(points);
        for _ in 0..points {
            table.push(Affine::<P>::deserialize_with_mode(
                &mut reader,
                compress,
                validate,
            )?);
        }
        Ok(Self {
            c,
            windows,
            len: len as usize,
            table,
        })
    }
}

/// A chunk of scalars' `(table index, digit)` entries, those of the top window apart, and the
/// sum of its ±1 terms.
type Chunk<P> = (Vec<(u32, u32)>, Vec<(u32, u32)>, Projective<P>);

/// `Σ scalars[i] · bases[i]` over the common length of `table`'s bases and `scalars`; the
/// same value as [`crate::msm`] on the bases the table was built from.
///
/// Scalars must be canonical (`< r`). As in [`crate::msm`], 0 is skipped and ±1 adds the base
/// directly (equal digits would all meet in one bucket and serialise the batched additions).
pub fn msm_precomputed<P: Curve>(table: &PrecomputedBases<P>, scalars: &[Scalar]) -> Projective<P> {
    msm_precomputed_with(table, scalars, Arithmetic::detected())
}

/// [`msm_precomputed`] with the given arithmetic (one of [`Arithmetic::available`]).
pub fn msm_precomputed_with<P: Curve>(
    table: &PrecomputedBases<P>,
    scalars: &[Scalar],
    arithmetic: Arithmetic,
) -> Projective<P> {
    let n = table.len.min(scalars.len());
    let (c, windows) = (table.c, table.windows);
    let one = Scalar::from(1u64);
    let mut minus_one = Fr::MODULUS;
    minus_one.sub_with_borrow(&one);

    // The top window's digits take a few magnitudes only: in the one set of buckets they would
    // all add into the same few, one addition each per batch. They are summed apart, spread
    // over copies of their few buckets (as the plain MSM's top window, `TopWindow`).
    // Apart only when few: a wide table's top window (13 bits at c = 16) fills its buckets like
    // any other. A thousand buckets take a batch's worth of additions at a small reduction.
    let top = TopWindow::new(c, windows).with_buckets(1024);
    let top_apart = top.magnitudes <= 64;
    // (table index, digit) of every non-zero digit, and the sum of the ±1 terms, per chunk.
    let chunks: Vec<Chunk<P>> = scalars[..n]
        .par_chunks(1024)
        .enumerate()
        .map(|(k, chunk)| {
            let mut entries = Vec::with_capacity(chunk.len() * windows);
            let mut top_entries = Vec::new();
            let mut units = Projective::<P>::zero();
            for (i, s) in (k * 1024..).zip(chunk) {
                if s.is_zero() {
                    continue;
                }
                if *s == one {
                    units += table.base(i);
                } else if *s == minus_one {
                    units -= table.base(i);
                } else {
                    for_each_signed_digit(s, c, |w, digit| {
                        let entry = ((i * windows + w) as u32, digit);
                        if top_apart && w == top.window {
                            top_entries.push(entry);
                        } else {
                            entries.push(entry);
                        }
                    });
                }
            }
            (entries, top_entries, units)
        })
        .collect();
    let units: Projective<P> = chunks.iter().map(|(_, _, u)| *u).sum();
    let entries: Vec<&[(u32, u32)]> = chunks.iter().map(|(e, _, _)| e.as_slice()).collect();

    // Bucket k holds magnitude k + 1; part p takes magnitudes lo+1..=hi.
    let buckets = 1usize << (c - 1);
    let parts = rayon::current_num_threads().clamp(1, buckets);
    let sums: Vec<Projective<P>> = (0..parts + usize::from(top_apart))
        .into_par_iter()
        .map(|p| {
            if p == parts {
                // The top window's entry k adds into copy k mod copies.
                let items = chunks
                    .iter()
                    .flat_map(|(_, top_entries, _)| top_entries)
                    .enumerate()
                    .map(|(k, &(t, digit))| {
                        let run = (k % top.copies) * top.magnitudes;
                        (&table.table[t as usize], digit + ((run as u32) << 1))
                    });
                let lengths = vec![top.magnitudes; top.copies];
                return window::segment_sums(&lengths, items, arithmetic)
                    .into_iter()
                    .sum();
            }
            let (lo, hi) = (buckets * p / parts, buckets * (p + 1) / parts);
            let mine = entries
                .iter()
                .flat_map(|e| e.iter())
                .filter_map(|&(t, digit)| {
                    let magnitude = (digit >> 1) as usize;
                    (lo < magnitude && magnitude <= hi).then(|| {
                        let local = ((magnitude - lo) as u32) << 1 | (digit & 1);
                        (&table.table[t as usize], local)
                    })
                });
            // Σ (m - lo)·B_m from the local buckets, plus lo · Σ B_m.
            let (weighted, plain) = window::bucket_sums(hi - lo, mine, arithmetic);
            weighted + plain.mul_bigint([lo as u64])
        })
        .collect();
    units + sums.into_iter().sum::<Projective<P>>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pippenger::msm;
    use ark_ff::Field;
    use ark_std::UniformRand;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    use crate::test_support::{on_g1_and_g2, random_bases, random_scalars, Group};

    on_g1_and_g2!(
        matches_msm_on_random_scalars,
        matches_msm_on_edge_case_scalars,
        matches_msm_on_small_scalars_of_every_size,
        matches_msm_on_a_witness_like_mixture,
        table_holds_the_shifted_multiples,
        tables_round_trip_through_their_file_form,
        identity_and_repeated_bases,
        lengths_differ,
    );

    fn minus(x: u64) -> Scalar {
        (-Fr::from(x)).into_bigint()
    }

    /// `msm_precomputed` equals `msm` for several window widths, on 1, 2 and 3 threads (the
    /// bucket range splits differently). The narrowest widths (127 points per base) only on
    /// small inputs, to keep the tests quick.
    fn check<P: Group>(bases: &[Affine<P>], scalars: &[Scalar], what: &str) {
        let expected = msm(bases, scalars);
        let narrow: &[usize] = if bases.len() <= 300 { &[5, 2] } else { &[] };
        for &c in [16, 15, 11, 8].iter().chain(narrow) {
            let table = PrecomputedBases::with_window(bases, c);
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                for arithmetic in Arithmetic::available() {
                    assert_eq!(
                        pool.install(|| msm_precomputed_with(&table, scalars, arithmetic)),
                        expected,
                        "{what}: n = {}, c = {c}, {threads} threads, {arithmetic:?}",
                        bases.len()
                    );
                }
            }
        }
    }

    fn matches_msm_on_random_scalars<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(21);
        for n in [0, 1, 2, 3, 100, 1000] {
            let bases = random_bases::<P>(n, &mut rng);
            check(&bases, &random_scalars(n, &mut rng), "random");
        }
    }

    fn matches_msm_on_edge_case_scalars<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(22);
        let bases = random_bases::<P>(300, &mut rng);
        let mut half = Fr::MODULUS;
        half.div2();
        let mut half_plus_one = half;
        half_plus_one.add_with_carry(&Scalar::from(1u64));
        let edges = [
            Scalar::zero(),
            Scalar::from(1u64),
            minus(1),
            Scalar::from(2u64),
            minus(2),
            half,
            half_plus_one,
            Scalar::from(1u64 << 15),
            Scalar::from((1u64 << 15) + 1),
            Scalar::from(1u64 << 16),
            minus(1 << 15),
            Scalar::from(u64::MAX),
        ];
        for e in edges {
            check(&bases, &vec![e; 300], "one edge value everywhere");
        }
        let cycled: Vec<Scalar> = (0..300).map(|i| edges[i % edges.len()]).collect();
        check(&bases, &cycled, "edge values cycled");
        let zeros = vec![Scalar::zero(); 300];
        assert!(msm_precomputed(&PrecomputedBases::new(&bases), &zeros).is_zero());
    }

    fn matches_msm_on_small_scalars_of_every_size<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(23);
        let bases = random_bases::<P>(500, &mut rng);
        for bits in [2, 8, 15, 16, 17, 32, 63, 64, 65, 128, 200] {
            let scalars: Vec<Scalar> = (0..500)
                .map(|i| {
                    let x = Fr::from(2u64).pow([bits as u64 - 1]) + Fr::from(rng.gen::<u64>());
                    // Half of them negative: r - x folds back to x.
                    if i % 2 == 0 { x } else { -x }.into_bigint()
                })
                .collect();
            check(&bases, &scalars, &format!("±(2^{} + u64)", bits - 1));
        }
    }

    fn matches_msm_on_a_witness_like_mixture<P: Group>() {
        // Like a circuit's witness: 40 % zeros, 25 % ones, some -1, small values and field
        // elements.
        let mut rng = ChaCha20Rng::seed_from_u64(24);
        let bases = random_bases::<P>(1500, &mut rng);
        let scalars: Vec<Scalar> = (0..1500)
            .map(|_| match rng.gen_range(0..20) {
                0..=7 => Scalar::zero(),
                8..=12 => Scalar::from(1u64),
                13 => minus(1),
                14 => Scalar::from(rng.gen_range(2..1000u64)),
                15 => Scalar::from(rng.gen::<u64>()),
                16 => minus(rng.gen::<u32>() as u64),
                _ => Fr::rand(&mut rng).into_bigint(),
            })
            .collect();
        check(&bases, &scalars, "witness-like");
    }

    fn table_holds_the_shifted_multiples<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(25);
        let bases = random_bases::<P>(5, &mut rng);
        for c in [2, 11, 16] {
            let table = PrecomputedBases::with_window(&bases, c);
            let windows = FOLDED_BITS / c + 1;
            assert_eq!((table.len(), table.window_bits()), (5, c));
            assert_eq!(
                table.memory_bytes(),
                5 * windows * std::mem::size_of::<Affine<P>>()
            );
            if c == precomputed_window_bits(5) {
                assert_eq!(
                    table.memory_bytes(),
                    PrecomputedBases::<P>::memory_bytes_for(5)
                );
            }
            for (i, base) in bases.iter().enumerate() {
                for j in 0..windows {
                    let shift = Fr::from(2u64).pow([(c * j) as u64]);
                    assert_eq!(table.table[i * windows + j], (*base * shift).into_affine());
                }
            }
        }
    }

    /// The file form gives back the same table (identity bases included), and a file whose
    /// shape does not add up is refused rather than indexed out of bounds.
    fn tables_round_trip_through_their_file_form<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(27);
        let mut bases = random_bases::<P>(40, &mut rng);
        bases[3] = Affine::identity();
        let scalars = random_scalars(40, &mut rng);
        for c in [2, 16] {
            let table = PrecomputedBases::with_window(&bases, c);
            let mut bytes = Vec::new();
            table.serialize_uncompressed(&mut bytes).unwrap();
            assert_eq!(bytes.len(), table.uncompressed_size());
            for validate in [Validate::Yes, Validate::No] {
                let read = PrecomputedBases::<P>::deserialize_with_mode(
                    bytes.as_slice(),
                    Compress::No,
                    validate,
                )
                .unwrap();
                assert_eq!((read.len(), read.window_bits()), (40, c));
                assert_eq!(read.table, table.table);
                assert_eq!(
                    read.memory_bytes(),
                    table.memory_bytes(),
                    "no spare capacity"
                );
                assert_eq!(msm_precomputed(&read, &scalars), msm(&bases, &scalars));
            }
            let mut wrong_width = bytes.clone();
            wrong_width[0] = 17;
            let mut wrong_count = bytes.clone();
            wrong_count[1] = 41;
            for broken in [wrong_width, wrong_count, bytes[..bytes.len() - 1].to_vec()] {
                assert!(PrecomputedBases::<P>::deserialize_uncompressed_unchecked(
                    broken.as_slice()
                )
                .is_err());
            }
        }
    }

    fn identity_and_repeated_bases<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(26);
        let mut bases = random_bases::<P>(400, &mut rng);
        for b in bases.iter_mut().step_by(3) {
            *b = Affine::identity();
        }
        check(&bases, &random_scalars(400, &mut rng), "a third identity");
        let same = vec![random_bases::<P>(1, &mut rng)[0]; 1000];
        // Equal scalars on equal bases: every addition meets the same bucket, doublings too.
        let s = Fr::rand(&mut rng).into_bigint();
        check(&same, &vec![s; 1000], "same base, same scalar");
        check(
            &same,
            &random_scalars(1000, &mut rng),
            "same base, random scalars",
        );
        // P·s + (-P)·s and P·s + P·(r - s) cancel.
        let p = same[0];
        let opposite: Vec<Affine<P>> = (0..200).map(|i| if i % 2 == 0 { p } else { -p }).collect();
        let table = PrecomputedBases::new(&opposite);
        assert!(msm_precomputed(&table, &vec![s; 200]).is_zero());
        let negated: Vec<Scalar> = (0..200)
            .map(|i| {
                if i % 2 == 0 {
                    s
                } else {
                    (-Fr::from_bigint(s).unwrap()).into_bigint()
                }
            })
            .collect();
        assert!(msm_precomputed(&PrecomputedBases::new(&same[..200]), &negated).is_zero());
    }

    fn lengths_differ<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(27);
        let bases = random_bases::<P>(50, &mut rng);
        let scalars = random_scalars(80, &mut rng);
        let table = PrecomputedBases::new(&bases);
        assert_eq!(
            msm_precomputed(&table, &scalars),
            msm(&bases, &scalars[..50])
        );
        assert_eq!(
            msm_precomputed(&table, &scalars[..20]),
            msm(&bases[..20], &scalars[..20])
        );
    }

    /// The size announced before building is the size held after, at the widths the cost
    /// model picks for small and large tables (built for G1 only up to 3,000 bases, to stay quick).
    #[test]
    fn memory_bytes_for_is_what_the_table_holds() {
        let mut rng = ChaCha20Rng::seed_from_u64(29);
        let bases = random_bases::<ark_bn254::g1::Config>(3000, &mut rng);
        for n in [0, 1, 7, 300, 3000] {
            let table = PrecomputedBases::new(&bases[..n]);
            assert_eq!(
                table.memory_bytes(),
                PrecomputedBases::<ark_bn254::g1::Config>::memory_bytes_for(n),
                "n = {n}"
            );
        }
        let g2 = random_bases::<ark_bn254::g2::Config>(50, &mut rng);
        assert_eq!(
            PrecomputedBases::new(&g2).memory_bytes(),
            PrecomputedBases::<ark_bn254::g2::Config>::memory_bytes_for(50)
        );
        // A k=6 transfer's H table: 2^15 - 1 bases at c = 16, 16 affine points each.
        assert_eq!(
            PrecomputedBases::<ark_bn254::g1::Config>::memory_bytes_for((1 << 15) - 1),
            ((1 << 15) - 1) * 16 * std::mem::size_of::<ark_bn254::G1Affine>()
        );
    }

    #[test]
    fn window_width_for_the_proof_sizes() {
        // A k=6 transfer: 2^15 dense scalars (h), and its ~9,600 full-size witness values.
        assert_eq!(precomputed_window_bits(1 << 15), 16);
        assert!((13..=16).contains(&precomputed_window_bits(9_600)));
        assert!(precomputed_window_bits(10) < 8);
    }

    #[test]
    #[ignore = "large: run with --release -- --ignored"]
    fn matches_msm_at_2_pow_16() {
        let mut rng = ChaCha20Rng::seed_from_u64(28);
        let bases = random_bases::<ark_bn254::g1::Config>(1 << 16, &mut rng);
        let scalars = random_scalars(1 << 16, &mut rng);
        let table = PrecomputedBases::new(&bases);
        assert_eq!(msm_precomputed(&table, &scalars), msm(&bases, &scalars));
    }
}
