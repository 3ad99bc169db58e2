//! The two transforms of the QAP witness map, each without a bit-reversal pass: domain
//! evaluations to coset evaluations, and coset evaluations to coefficients.
//!
//! ark-poly does the first as an inverse FFT then a coset FFT and the second as a coset inverse
//! FFT, each reordering its output and recomputing its roots of unity on every call; the witness
//! map runs seven of them per proof (about 10 ms each at 2^15 on one thread). Here a decimation-in-frequency pass (natural order
//! in, bit-reversed out) is followed by a decimation-in-time pass (bit-reversed in, natural out),
//! so no reordering is needed between them; the coset shift and the `1/n` scaling are one
//! multiplication per element by a precomputed table in bit-reversed order; and the twiddles
//! of each stage are stored contiguously, built once per domain size.
//!
//! Where the CPU has AVX-512 IFMA (the MSM's [`Arithmetic::detected`], so
//! `ENYGMA_MSM_ARITHMETIC=scalar` turns both off), all but the three widest stages and the
//! coset scaling run eight elements at a time ([`lanes`]), with results identical to the scalar
//! path's.

#[cfg(target_arch = "x86_64")]
mod lanes;

use std::sync::{Arc, Mutex, OnceLock};

use ark_ff::{FftField, Field, One};
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};
use enygma_circuit::Fr;
use enygma_msm::Arithmetic;
use rayon::prelude::*;

/// Butterflies of one stage are handed to rayon in groups of at least this many elements, so
/// that its per-task overhead stays small next to the ~10 ns of a butterfly.
const GRAIN: usize = 1 << 12;

/// Precomputed tables for transforms over the radix-2 domain `H` of size n and its coset `gH`,
/// `g` being `Fr::GENERATOR` as in ark-poly's `get_coset` (and ark-groth16's witness map), or
/// another shift ([`CosetFft::with_shift`]: snarkjs' witness map uses `ω₂ₙ`).
pub struct CosetFft {
    log_n: u32,
    /// The coset's shift g.
    shift: Fr,
    /// `ω_{2m}^j` at `m − 1 + j` for each stage half-size `m` and `j < m`.
    twiddles: Vec<Fr>,
    /// The same for `ω⁻¹`.
    inverse_twiddles: Vec<Fr>,
    /// `g^{rev(p)} / n` at p: turns `n ×` bit-reversed coefficients of f(X) into those of f(gX).
    to_coset: Vec<Fr>,
    /// `g^{−rev(p)} / n` at p: turns `n ×` bit-reversed coefficients of f(gX) into those of f(X).
    from_coset: Vec<Fr>,
    /// The same tables for the stages and scaling done in lanes, when they are.
    #[cfg(target_arch = "x86_64")]
    lanes: Option<lanes::LaneTables>,
}

fn bit_reverse(i: usize, log_n: u32) -> usize {
    if log_n == 0 {
        0
    } else {
        i.reverse_bits() >> (usize::BITS - log_n)
    }
}

fn stage_twiddles(root: Fr, n: usize) -> Vec<Fr> {
    let mut out = Vec::with_capacity(n.max(1) - 1);
    let mut m = 1;
    while m < n {
        // ω_{2m} = root^(n / 2m)
        let step = root.pow([(n / (2 * m)) as u64]);
        let mut w = Fr::one();
        for _ in 0..m {
            out.push(w);
            w *= step;
        }
        m *= 2;
    }
    out
}

impl CosetFft {
    /// The tables for size n, a power of two the field supports (up to 2^28 for BN254's Fr),
    /// for the arithmetic this CPU runs fastest.
    pub fn new(n: usize) -> Option<Self> {
        Self::with_arithmetic(n, Arithmetic::detected())
    }

    /// The tables for size n, the transforms done with `arithmetic`; sizes below 16 (no stage
    /// is narrow enough for lanes) and CPUs without AVX-512 IFMA run scalar whatever is asked
    /// ([`CosetFft::arithmetic`] says which).
    pub fn with_arithmetic(n: usize, arithmetic: Arithmetic) -> Option<Self> {
        Self::with_shift(n, Fr::GENERATOR, arithmetic)
    }

    /// [`CosetFft::with_arithmetic`] for the coset `shift·H`; `None` also for a zero shift.
    pub fn with_shift(n: usize, shift: Fr, arithmetic: Arithmetic) -> Option<Self> {
        let domain = Radix2EvaluationDomain::<Fr>::new(n)?;
        if domain.size() != n {
            return None;
        }
        let log_n = n.trailing_zeros();
        let n_inv = domain.size_inv();
        let g = shift;
        let g_inv = g.inverse()?;
        let shifts = |base: Fr| {
            let mut powers = Vec::with_capacity(n);
            let mut x = n_inv;
            for _ in 0..n {
                powers.push(x);
                x *= base;
            }
            (0..n)
                .map(|p| powers[bit_reverse(p, log_n)])
                .collect::<Vec<_>>()
        };
        let scalar = Self {
            log_n,
            shift,
            twiddles: stage_twiddles(domain.group_gen(), n),
            inverse_twiddles: stage_twiddles(domain.group_gen_inv(), n),
            to_coset: shifts(g),
            from_coset: shifts(g_inv),
            #[cfg(target_arch = "x86_64")]
            lanes: None,
        };
        Some(match arithmetic {
            Arithmetic::Scalar => scalar,
            #[cfg(target_arch = "x86_64")]
            Arithmetic::Ifma => Self {
                lanes: lanes::LaneTables::new(&scalar),
                ..scalar
            },
        })
    }

    /// The arithmetic the transforms run with.
    pub fn arithmetic(&self) -> Arithmetic {
        #[cfg(target_arch = "x86_64")]
        if self.lanes.is_some() {
            return Arithmetic::Ifma;
        }
        Arithmetic::Scalar
    }

    /// The shared tables for size n and the coset `gH`, built on first use.
    pub fn for_size(n: usize) -> Option<Arc<Self>> {
        Self::for_size_and_shift(n, Fr::GENERATOR)
    }

    /// The shared tables for size n and the coset `shift·H`, built on first use.
    pub fn for_size_and_shift(n: usize, shift: Fr) -> Option<Arc<Self>> {
        static CACHE: OnceLock<Mutex<Vec<Arc<CosetFft>>>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = cache.iter().find(|t| t.size() == n && t.shift == shift) {
            return Some(found.clone());
        }
        let tables = Arc::new(Self::with_shift(n, shift, Arithmetic::detected())?);
        cache.push(tables.clone());
        Some(tables)
    }

    pub fn size(&self) -> usize {
        1 << self.log_n
    }

    /// Evaluations on H (natural order) to evaluations on gH (natural order), in place.
    pub fn domain_to_coset(&self, x: &mut [Fr]) {
        assert_eq!(x.len(), self.size(), "transform of the wrong size");
        #[cfg(target_arch = "x86_64")]
        if let Some(lanes) = &self.lanes {
            return lanes.domain_to_coset(self, x);
        }
        dif(x, &self.inverse_twiddles, 1);
        scale(x, &self.to_coset);
        dit(x, &self.twiddles, 1);
    }

    /// Evaluations on gH (natural order) to the coefficients of the polynomial of degree < n
    /// (natural order), in place.
    pub fn coset_to_coefficients(&self, x: &mut [Fr]) {
        assert_eq!(x.len(), self.size(), "transform of the wrong size");
        self.inverse_from_coset(x);
        for p in 0..x.len() {
            let q = bit_reverse(p, self.log_n);
            if p < q {
                x.swap(p, q);
            }
        }
    }

    /// [`CosetFft::coset_to_coefficients`] but for the final reordering: the coefficients in
    /// bit-reversed order.
    fn inverse_from_coset(&self, x: &mut [Fr]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(lanes) = &self.lanes {
            return lanes.coset_to_coefficients(self, x);
        }
        dif(x, &self.inverse_twiddles, 1);
        scale(x, &self.from_coset);
    }
}

fn scale(x: &mut [Fr], by: &[Fr]) {
    x.par_chunks_mut(GRAIN)
        .zip(by.par_chunks(GRAIN))
        .for_each(|(x, by)| x.iter_mut().zip(by).for_each(|(x, s)| *x *= s));
}

/// Runs `butterfly(lo[j], hi[j], twiddle[j])` for every block of `2m` elements of `x`, where
/// `lo` and `hi` are the block's halves, in parallel over blocks or, for blocks larger than
/// [`GRAIN`], over pieces of them.
fn stage(
    x: &mut [Fr],
    m: usize,
    twiddles: &[Fr],
    butterfly: impl Fn(&mut Fr, &mut Fr, &Fr) + Sync,
) {
    stage_runs(x, m, twiddles, GRAIN, |lo, hi, tw| {
        for ((a, b), w) in lo.iter_mut().zip(hi.iter_mut()).zip(tw) {
            butterfly(a, b, w);
        }
    });
}

/// Calls `run(lo, hi, twiddles)` on runs of butterflies covering every block of `2m` items of
/// `x` (`lo` and `hi` the matching pieces of the block's halves), in parallel over groups of
/// blocks of about `grain` items or, for larger blocks, over pieces of them. Items are field
/// elements or, in [`lanes`], vectors of eight.
fn stage_runs<T: Send, W: Sync>(
    x: &mut [T],
    m: usize,
    twiddles: &[W],
    grain: usize,
    run: impl Fn(&mut [T], &mut [T], &[W]) + Sync,
) {
    if 2 * m <= grain {
        x.par_chunks_mut(grain).for_each(|group| {
            for block in group.chunks_exact_mut(2 * m) {
                let (lo, hi) = block.split_at_mut(m);
                run(lo, hi, twiddles);
            }
        });
    } else {
        let piece = grain / 2;
        for block in x.chunks_exact_mut(2 * m) {
            let (lo, hi) = block.split_at_mut(m);
            lo.par_chunks_mut(piece)
                .zip(hi.par_chunks_mut(piece))
                .zip(twiddles.par_chunks(piece))
                .for_each(|((lo, hi), tw)| run(lo, hi, tw));
        }
    }
}

/// Decimation in frequency (Gentleman–Sande): natural order in, bit-reversed order out. Runs
/// the stages of half-size `n/2` down to `lowest` (1 for the whole transform).
fn dif(x: &mut [Fr], twiddles: &[Fr], lowest: usize) {
    let mut m = x.len() / 2;
    while m >= lowest.max(1) {
        stage(x, m, &twiddles[m - 1..2 * m - 1], |a, b, w| {
            let d = *a - *b;
            *a += *b;
            *b = d * w;
        });
        m /= 2;
    }
}

/// Decimation in time (Cooley–Tukey): bit-reversed order in, natural order out. Runs the
/// stages of half-size `first` up to `n/2` (from 1 for the whole transform).
fn dit(x: &mut [Fr], twiddles: &[Fr], first: usize) {
    let mut m = first.max(1);
    while m < x.len() {
        stage(x, m, &twiddles[m - 1..2 * m - 1], |a, b, w| {
            let t = *b * w;
            *b = *a - t;
            *a += t;
        });
        m *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_poly::GeneralEvaluationDomain;
    use ark_std::UniformRand;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn random(n: usize, rng: &mut ChaCha20Rng) -> Vec<Fr> {
        (0..n).map(|_| Fr::rand(rng)).collect()
    }

    /// Both transforms agree with ark-poly's inverse FFT, coset FFT and coset inverse FFT for
    /// every size from 1 to 2^13, on 1 and 2 threads (2^13 is above GRAIN, so both ways of
    /// splitting a stage run), in every arithmetic this CPU has (sizes from 16 up run in lanes
    /// with IFMA).
    #[test]
    fn transforms_agree_with_ark_poly() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for (arithmetic, threads) in Arithmetic::available()
            .into_iter()
            .flat_map(|a| [(a, 1), (a, 2)])
        {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for log_n in 0..=13 {
                let n = 1usize << log_n;
                let domain = GeneralEvaluationDomain::<Fr>::new(n).unwrap();
                let coset = domain.get_coset(Fr::GENERATOR).unwrap();
                let tables = CosetFft::with_arithmetic(n, arithmetic).unwrap();
                let lanes = arithmetic != Arithmetic::Scalar && n >= 16;
                assert_eq!(tables.arithmetic() != Arithmetic::Scalar, lanes);
                let values = random(n, &mut rng);

                let mut expected = values.clone();
                domain.ifft_in_place(&mut expected);
                coset.fft_in_place(&mut expected);
                let mut ours = values.clone();
                pool.install(|| tables.domain_to_coset(&mut ours));
                assert_eq!(
                    ours, expected,
                    "domain to coset, n = {n}, {threads} threads, {arithmetic:?}"
                );

                let mut expected = values.clone();
                coset.ifft_in_place(&mut expected);
                let mut ours = values;
                pool.install(|| tables.coset_to_coefficients(&mut ours));
                assert_eq!(
                    ours, expected,
                    "coset to coefficients, n = {n}, {threads} threads, {arithmetic:?}"
                );
            }
        }
    }

    /// The coset of another shift (`ω₂ₙ`, snarkjs' witness map) agrees with ark-poly's coset
    /// FFT of that shift, in every arithmetic this CPU has.
    #[test]
    fn other_shifts_agree_with_ark_poly() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        for arithmetic in Arithmetic::available() {
            for log_n in [0, 4, 10] {
                let n = 1usize << log_n;
                let shift = Radix2EvaluationDomain::<Fr>::new(2 * n)
                    .unwrap()
                    .group_gen();
                let domain = GeneralEvaluationDomain::<Fr>::new(n).unwrap();
                let coset = domain.get_coset(shift).unwrap();
                let tables = CosetFft::with_shift(n, shift, arithmetic).unwrap();
                let values = random(n, &mut rng);
                let mut expected = values.clone();
                domain.ifft_in_place(&mut expected);
                coset.fft_in_place(&mut expected);
                let mut ours = values;
                tables.domain_to_coset(&mut ours);
                assert_eq!(ours, expected, "n = {n}, {arithmetic:?}");
            }
        }
        assert!(CosetFft::with_shift(8, Fr::from(0u64), Arithmetic::Scalar).is_none());
    }

    #[test]
    fn sizes_that_are_not_powers_of_two_are_refused_and_tables_are_shared() {
        assert!(CosetFft::new(12).is_none());
        assert!(CosetFft::new(0).is_none());
        let a = CosetFft::for_size(1 << 10).unwrap();
        let b = CosetFft::for_size(1 << 10).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.size(), 1024);
    }
}
