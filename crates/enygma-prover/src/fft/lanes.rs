//! The transforms with AVX-512 IFMA: twelve of the fifteen stages of a 2^15 transform, and the
//! coset scaling, eight elements at a time in `enygma_msm::ifma`'s 52-bit radix.
//!
//! Why: the witness map's seven transforms were most of its time (about 6.5 ms each at 2^15 on
//! one Zen 4 thread), one scalar `Fr` product per butterfly, and IFMA products cost about a
//! fifth of arkworks' (`benches/results/2026-12-04-ifma-field.md`).
//!
//! Layout: the `n` elements are loaded as `n/8` vectors in columns, vector `i` holding elements
//! `i + lane·n/8`. A stage of half-size `m ≤ n/16` pairs element `j` with `j + m`; as `n/8` is a
//! multiple of `2m`, that is vector `i` with `i + m`, lane for lane, and the twiddle (which
//! depends on `j mod m = i mod m`) is the same in every lane: the stage runs on whole vectors
//! with a broadcast twiddle. The three widest stages pair lanes with each other; they run on
//! the arkworks elements, before loading (decimation in frequency) or after storing
//! (decimation in time), so each transform converts once each way.
//!
//! Results are identical to the scalar path's: both compute the same field values, and storing
//! returns canonical elements.

use enygma_circuit::Fr;
use enygma_msm::{
    ifma::{limbs_of, Fr8, LANES, LIMBS},
    Arithmetic,
};
use rayon::prelude::*;

use super::{dif, dit, stage_runs, CosetFft, GRAIN};

/// Vectors per parallel task: the scalar path's grain in elements.
const VECTOR_GRAIN: usize = GRAIN / LANES;

/// What the lane stages need beyond the scalar tables, built once per domain size.
pub(super) struct LaneTables {
    /// The scalar twiddles of the stages of half-size below `n/8`, in 52-bit radix.
    twiddles: Vec<[u64; LIMBS]>,
    inverse_twiddles: Vec<[u64; LIMBS]>,
    /// The coset scalings in columns.
    to_coset: Vec<Fr8>,
    from_coset: Vec<Fr8>,
}

impl LaneTables {
    /// `None` below size 16, where no stage is narrow enough for lanes, and on CPUs without
    /// AVX-512 IFMA: the `unsafe` calls below rely on lane tables existing only where it is.
    pub(super) fn new(scalar: &CosetFft) -> Option<Self> {
        let n = scalar.size();
        if n < 2 * LANES || !Arithmetic::available().contains(&Arithmetic::Ifma) {
            return None;
        }
        let radix = |twiddles: &[Fr]| twiddles[..n / LANES - 1].iter().map(limbs_of).collect();
        let columns = |table: &[Fr]| {
            let column = n / LANES;
            (0..column)
                .map(|i| {
                    let limbs: [[u64; LIMBS]; LANES] =
                        core::array::from_fn(|lane| limbs_of(&table[i + lane * column]));
                    Fr8::gather(core::array::from_fn(|lane| &limbs[lane]))
                })
                .collect()
        };
        Some(Self {
            twiddles: radix(&scalar.twiddles),
            inverse_twiddles: radix(&scalar.inverse_twiddles),
            to_coset: columns(&scalar.to_coset),
            from_coset: columns(&scalar.from_coset),
        })
    }

    /// [`CosetFft::domain_to_coset`]: the widest three stages of the first transform on the
    /// elements, the rest in lanes, the widest three of the second on the elements again.
    pub(super) fn domain_to_coset(&self, scalar: &CosetFft, x: &mut [Fr]) {
        let mut v = self.inverse_then_scale(scalar, x, &self.to_coset);
        self.dit(&mut v);
        store(&v, x);
        dit(x, &scalar.twiddles, x.len() / LANES);
    }

    /// [`CosetFft::coset_to_coefficients`] up to its final reordering.
    pub(super) fn coset_to_coefficients(&self, scalar: &CosetFft, x: &mut [Fr]) {
        let v = self.inverse_then_scale(scalar, x, &self.from_coset);
        store(&v, x);
    }

    /// The inverse transform without its reordering (decimation in frequency: its widest three
    /// stages on the elements, the rest in lanes), then the scaling by `by`, left in lanes.
    fn inverse_then_scale(&self, scalar: &CosetFft, x: &mut [Fr], by: &[Fr8]) -> Vec<Fr8> {
        dif(x, &scalar.inverse_twiddles, x.len() / LANES);
        let mut v = load(x);
        self.dif(&mut v);
        scale(&mut v, by);
        v
    }

    /// The decimation-in-frequency stages of half-size `n/16` down to 1 (the inverse
    /// transform's, as in the scalar path).
    fn dif(&self, v: &mut [Fr8]) {
        let twiddles = &self.inverse_twiddles;
        let mut m = v.len() / 2;
        while m >= 1 {
            stage_runs(
                v,
                m,
                &twiddles[m - 1..2 * m - 1],
                VECTOR_GRAIN,
                |lo, hi, tw| {
                    // SAFETY: lane tables exist only where the CPU has AVX-512 IFMA (`new`).
                    unsafe { dif_run(lo, hi, tw) }
                },
            );
            m /= 2;
        }
    }

    /// The decimation-in-time stages of half-size 1 up to `n/16` (the forward transform's).
    fn dit(&self, v: &mut [Fr8]) {
        let twiddles = &self.twiddles;
        let mut m = 1;
        while m < v.len() {
            stage_runs(
                v,
                m,
                &twiddles[m - 1..2 * m - 1],
                VECTOR_GRAIN,
                |lo, hi, tw| {
                    // SAFETY: as in `dif`.
                    unsafe { dit_run(lo, hi, tw) }
                },
            );
            m *= 2;
        }
    }
}

/// `x` in columns.
fn load(x: &[Fr]) -> Vec<Fr8> {
    let column = x.len() / LANES;
    let mut v = vec![Fr8::zero(); column];
    v.par_chunks_mut(VECTOR_GRAIN)
        .enumerate()
        .for_each(|(chunk, vectors)| {
            // SAFETY: as in `LaneTables::dif`.
            unsafe { load_run(x, chunk * VECTOR_GRAIN, vectors) }
        });
    v
}

/// The columns back into `x`, canonical.
fn store(v: &[Fr8], x: &mut [Fr]) {
    let column = x.len() / LANES;
    // Task t writes the t-th piece of every column.
    let mut pieces: Vec<Vec<&mut [Fr]>> = (0..column.div_ceil(VECTOR_GRAIN))
        .map(|_| Vec::with_capacity(LANES))
        .collect();
    for lane in x.chunks_mut(column) {
        for (task, piece) in lane.chunks_mut(VECTOR_GRAIN).enumerate() {
            pieces[task].push(piece);
        }
    }
    pieces
        .into_par_iter()
        .zip(v.par_chunks(VECTOR_GRAIN))
        .for_each(|(mut lanes, vectors)| {
            // SAFETY: as in `LaneTables::dif`.
            unsafe { store_run(vectors, &mut lanes) }
        });
}

fn scale(v: &mut [Fr8], by: &[Fr8]) {
    v.par_chunks_mut(VECTOR_GRAIN)
        .zip(by.par_chunks(VECTOR_GRAIN))
        .for_each(|(v, by)| {
            // SAFETY: as in `LaneTables::dif`.
            unsafe { scale_run(v, by) }
        });
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn load_run(x: &[Fr], first: usize, vectors: &mut [Fr8]) {
    let column = x.len() / LANES;
    for (offset, vector) in vectors.iter_mut().enumerate() {
        let i = first + offset;
        *vector = Fr8::from_arkworks(core::array::from_fn(|lane| &x[i + lane * column]));
    }
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn store_run(vectors: &[Fr8], lanes: &mut [&mut [Fr]]) {
    for (offset, vector) in vectors.iter().enumerate() {
        for (lane, value) in vector.to_arkworks().into_iter().enumerate() {
            lanes[lane][offset] = value;
        }
    }
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn scale_run(v: &mut [Fr8], by: &[Fr8]) {
    for (x, s) in v.iter_mut().zip(by) {
        *x = x.mul(*s);
    }
}

/// Gentleman–Sande butterflies: `(a, b) ← (a + b, (a − b)·ω)`.
#[target_feature(enable = "avx512f,avx512ifma")]
fn dif_run(lo: &mut [Fr8], hi: &mut [Fr8], twiddles: &[[u64; LIMBS]]) {
    for ((a, b), w) in lo.iter_mut().zip(hi.iter_mut()).zip(twiddles) {
        let difference = a.sub(*b);
        *a = a.add(*b);
        *b = difference.mul(Fr8::splat(*w));
    }
}

/// Cooley–Tukey butterflies: `(a, b) ← (a + b·ω, a − b·ω)`.
#[target_feature(enable = "avx512f,avx512ifma")]
fn dit_run(lo: &mut [Fr8], hi: &mut [Fr8], twiddles: &[[u64; LIMBS]]) {
    for ((a, b), w) in lo.iter_mut().zip(hi.iter_mut()).zip(twiddles) {
        let t = b.mul(Fr8::splat(*w));
        *b = a.sub(t);
        *a = a.add(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{AdditiveGroup, Field};
    use ark_std::UniformRand;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// Loading and storing round-trip every element, including 0 and −1, through the columns.
    #[test]
    fn columns_round_trip() {
        if !Arithmetic::available().contains(&Arithmetic::Ifma) {
            eprintln!("no AVX-512 IFMA on this CPU: nothing to test");
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let n = 1 << 13;
        let mut x: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
        x[0] = Fr::ZERO;
        x[n - 1] = -Fr::ONE;
        let expected = x.clone();
        let v = load(&x);
        x.iter_mut().for_each(|e| *e = Fr::ONE);
        store(&v, &mut x);
        assert_eq!(x, expected);
    }
}
