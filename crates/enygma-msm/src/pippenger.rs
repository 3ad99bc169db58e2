//! The MSM of bases given at each call: Pippenger's bucket method with signed digits, the
//! windows filled with batch-affine additions ([`crate::window`]).

use ark_bn254::Fr;
use ark_ec::{
    short_weierstrass::{Affine, Projective},
    AdditiveGroup, AffineRepr,
};
use ark_ff::{BigInteger, PrimeField, Zero};
use rayon::prelude::*;

use crate::curve::{Arithmetic, Curve, Scalar};
use crate::window::{self, window_bits, FOLDED_BITS};

/// `Σ scalars[i] · bases[i]` over the common length of the two slices.
///
/// Scalars must be canonical (`< r`); bases may be the identity.
///
/// Witness vectors are mostly 0 and ±1 (bits, flags): those are skipped or added directly,
/// and the window width is chosen for the remaining scalars only.
pub fn msm<P: Curve>(bases: &[Affine<P>], scalars: &[Scalar]) -> Projective<P> {
    msm_with(bases, scalars, Arithmetic::detected())
}

/// [`msm`] with the given arithmetic (one of [`Arithmetic::available`]).
pub fn msm_with<P: Curve>(
    bases: &[Affine<P>],
    scalars: &[Scalar],
    arithmetic: Arithmetic,
) -> Projective<P> {
    let n = bases.len().min(scalars.len());
    let one = Scalar::from(1u64);
    let mut minus_one = Fr::MODULUS;
    minus_one.sub_with_borrow(&one);
    let mut units = Projective::<P>::zero();
    let mut rest = Vec::with_capacity(n);
    for (i, (base, scalar)) in bases[..n].iter().zip(&scalars[..n]).enumerate() {
        if scalar.is_zero() || base.is_zero() {
            continue;
        }
        if *scalar == one {
            units += base;
        } else if *scalar == minus_one {
            units -= base;
        } else {
            rest.push(i as u32);
        }
    }
    units + pippenger(bases, scalars, &rest, window_bits(rest.len()), arithmetic)
}

/// [`msm`] without the special cases, with a fixed window width `c` in `2..=15` (the digits
/// are stored in 16 bits).
pub fn msm_with_window<P: Curve>(
    bases: &[Affine<P>],
    scalars: &[Scalar],
    c: usize,
    arithmetic: Arithmetic,
) -> Projective<P> {
    let n = bases.len().min(scalars.len());
    let all: Vec<u32> = (0..n as u32).collect();
    pippenger(bases, scalars, &all, c, arithmetic)
}

/// `Σ scalars[i] · bases[i]` over `i` in `indices`.
fn pippenger<P: Curve>(
    bases: &[Affine<P>],
    scalars: &[Scalar],
    indices: &[u32],
    c: usize,
    arithmetic: Arithmetic,
) -> Projective<P> {
    assert!((2..=15).contains(&c), "window width {c} outside 2..=15");
    let m = indices.len();
    if m == 0 {
        return Projective::zero();
    }
    let windows = FOLDED_BITS / c + 1;
    let mut digits = vec![0u16; m * windows];
    // Chunks keep rayon's per-item overhead small next to the ~20 ns of digit work per scalar.
    digits
        .par_chunks_mut(windows * 1024)
        .zip(indices.par_chunks(1024))
        .for_each(|(out, indices)| {
            for (out, &i) in out.chunks_exact_mut(windows).zip(indices) {
                signed_digits(&scalars[i as usize], c, out);
            }
        });

    let buckets = 1usize << (c - 1);
    let sums: Vec<Projective<P>> = if buckets >= window::WIDE_WINDOW {
        (0..windows)
            .into_par_iter()
            .map(|w| {
                let points = indices.iter().map(|&i| &bases[i as usize]);
                let digits = digits[w..].iter().step_by(windows).map(|&d| u32::from(d));
                window::bucket_sums(buckets, points.zip(digits), arithmetic).0
            })
            .collect()
    } else {
        // Narrow windows are filled a group at a time, one group per thread, so that their
        // additions share batches and inversions (`window::segment_sums`).
        let per_group = windows.div_ceil(rayon::current_num_threads().clamp(1, windows));
        let top = TopWindow::new(c, windows);
        (0..windows.div_ceil(per_group))
            .into_par_iter()
            .flat_map_iter(|g| {
                let group = g * per_group..windows.min((g + 1) * per_group);
                let with_top = group.contains(&top.window);
                let mut lengths = vec![buckets; group.len() - usize::from(with_top)];
                if with_top {
                    lengths.extend(std::iter::repeat_n(top.magnitudes, top.copies));
                }
                let items = indices.iter().enumerate().flat_map(|(j, &i)| {
                    let digits = &digits[j * windows..][group.clone()];
                    let start = group.start;
                    digits
                        .iter()
                        .enumerate()
                        .filter(|(_, &d)| d >= 2)
                        .map(move |(s, &d)| {
                            // Where window s's run of buckets starts in the group's store; the top
                            // window's copy of its few buckets follows from the point.
                            let mut run = s * buckets;
                            if start + s == top.window {
                                run += (j % top.copies) * top.magnitudes;
                            }
                            (&bases[i as usize], u32::from(d) + ((run as u32) << 1))
                        })
                });
                let mut sums = window::segment_sums(&lengths, items, arithmetic);
                if with_top {
                    let copies = sums.split_off(sums.len() - top.copies);
                    sums.push(copies.into_iter().sum());
                }
                sums
            })
            .collect()
    };

    let mut total = Projective::<P>::zero();
    for sum in sums.iter().rev() {
        for _ in 0..c {
            total.double_in_place();
        }
        total += sum;
    }
    total
}

/// The last window of a width-`c` decomposition holds only the top bits of a folded scalar
/// (`FOLDED_BITS - c·(windows - 1)` of them), so its digits take a few magnitudes: every point
/// would add into the same few buckets, which one batch can take only one addition each of.
/// Its run of buckets is split into `copies` runs of `magnitudes` buckets instead, a point
/// adding into copy `j mod copies`, and the copies are summed after the reduction.
pub(crate) struct TopWindow {
    pub(crate) window: usize,
    pub(crate) magnitudes: usize,
    pub(crate) copies: usize,
}

impl TopWindow {
    pub(crate) fn new(c: usize, windows: usize) -> Self {
        let buckets = 1usize << (c - 1);
        let top_bits = FOLDED_BITS - c * (windows - 1);
        // A top digit is below 2^top_bits plus the carry from the window under it.
        let magnitudes = (1usize << top_bits).min(buckets);
        Self {
            window: windows - 1,
            magnitudes,
            copies: buckets / magnitudes,
        }
    }

    /// As many copies as fill about `buckets` buckets (at least one).
    pub(crate) fn with_buckets(self, buckets: usize) -> Self {
        Self {
            copies: (buckets / self.magnitudes).max(1),
            ..self
        }
    }
}

/// `(r - 1) / 2`: scalars above it are negated.
fn half_modulus() -> Scalar {
    let mut half = Fr::MODULUS;
    half.div2();
    half
}

/// Writes the signed base-`2^c` digits of `s`, least significant first, as
/// `magnitude << 1 | negative` (0 for a zero digit).
fn signed_digits(s: &Scalar, c: usize, out: &mut [u16]) {
    debug_assert!(
        c <= 15,
        "a magnitude of 2^15 does not fit 16 bits with its sign"
    );
    out.fill(0);
    for_each_signed_digit(s, c, |w, digit| out[w] = digit as u16);
}

/// Calls `f(window, magnitude << 1 | negative)` for each non-zero signed base-`2^c` digit
/// of `s` (`c` in `2..=16`), least significant first. Magnitudes are at most `2^(c-1)`, and
/// the digits of a scalar below `2^b` (or above `r - 2^b`) stop at window `b / c`, so small
/// scalars cost as little as their size.
pub(crate) fn for_each_signed_digit(s: &Scalar, c: usize, mut f: impl FnMut(usize, u32)) {
    debug_assert!(*s < Fr::MODULUS, "scalar not canonical");
    debug_assert!((2..=16).contains(&c));
    let (limbs, negated) = if *s > half_modulus() {
        let mut folded = Fr::MODULUS;
        folded.sub_with_borrow(s);
        (folded.0, true)
    } else {
        (s.0, false)
    };
    let bits = limbs
        .iter()
        .rposition(|&l| l != 0)
        .map_or(0, |top| 64 * top + 64 - limbs[top].leading_zeros() as usize);
    let half = 1u64 << (c - 1);
    let mask = (1u64 << c) - 1;
    let mut carry = 0u64;
    let mut w = 0;
    while w * c < bits || carry != 0 {
        let bit = w * c;
        let (limb, shift) = (bit / 64, bit % 64);
        let mut raw = limbs[limb] >> shift;
        if shift + c > 64 && limb + 1 < limbs.len() {
            raw |= limbs[limb + 1] << (64 - shift);
        }
        let digit = (raw & mask) + carry;
        let (magnitude, negative) = if digit > half {
            carry = 1;
            ((1u64 << c) - digit, true)
        } else {
            carry = 0;
            (digit, false)
        };
        if magnitude != 0 {
            f(w, ((magnitude as u32) << 1) | (negative ^ negated) as u32);
        }
        w += 1;
    }
    // A folded scalar has at most FOLDED_BITS bits, so its top digit never carries out of
    // window FOLDED_BITS / c.
    debug_assert!(w <= FOLDED_BITS / c + 1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::VariableBaseMSM;
    use ark_std::UniformRand;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use crate::test_support::{on_g1_and_g2, random_bases, random_scalars, Group};
    use crate::window::MAX_WINDOW_BITS;

    on_g1_and_g2!(
        matches_arkworks_on_random_inputs,
        empty_input_is_the_identity,
        zero_scalars_give_the_identity,
        scalars_r_minus_one_and_around_half_r,
        repeated_identical_bases,
        equal_small_scalars_on_distinct_bases,
        identity_bases_are_ignored,
        opposite_bases_cancel,
        a_single_nonzero_scalar_is_a_scalar_multiplication,
        any_number_of_threads_gives_the_same_sum,
    );

    fn reference<P: Group>(bases: &[Affine<P>], scalars: &[Scalar]) -> Projective<P> {
        Projective::<P>::msm_bigint(bases, scalars)
    }

    /// Every arithmetic the CPU has (scalar, and IFMA where detected) against arkworks.
    fn check<P: Group>(bases: &[Affine<P>], scalars: &[Scalar], what: &str) {
        let expected = reference(bases, scalars);
        assert_eq!(msm(bases, scalars), expected, "{what}: n = {}", bases.len());
        for arithmetic in Arithmetic::available() {
            assert_eq!(
                msm_with(bases, scalars, arithmetic),
                expected,
                "{what}: n = {}, {arithmetic:?}",
                bases.len()
            );
            // Every window width must agree, not just the one the cost model picks.
            for c in [2, 5, 8, 13] {
                assert_eq!(
                    msm_with_window(bases, scalars, c, arithmetic),
                    expected,
                    "{what}: n = {}, c = {c}, {arithmetic:?}",
                    bases.len()
                );
            }
        }
    }

    fn matches_arkworks_on_random_inputs<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for n in [1, 2, 3, 7, 100, 1000, 1 << 12] {
            let bases = random_bases::<P>(n, &mut rng);
            let scalars = random_scalars(n, &mut rng);
            check(&bases, &scalars, "random");
        }
    }

    /// The narrow windows are split into one group per thread, the top window spread over
    /// copies of its buckets (`TopWindow`): every split, and the wide windows filled one at a
    /// time (c = 13), must give arkworks' sum.
    fn any_number_of_threads_gives_the_same_sum<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(12);
        let bases = random_bases::<P>(600, &mut rng);
        let scalars = random_scalars(600, &mut rng);
        let expected = reference(&bases, &scalars);
        for threads in [1, 2, 3, 5] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for arithmetic in Arithmetic::available() {
                for c in [3, 4, 7, 8, 10, 11, 13] {
                    let sum = pool.install(|| msm_with_window(&bases, &scalars, c, arithmetic));
                    assert_eq!(sum, expected, "{threads} threads, c = {c}, {arithmetic:?}");
                }
            }
        }
    }

    #[test]
    #[ignore = "large: run with --release -- --ignored"]
    fn matches_arkworks_at_2_pow_16() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let bases = random_bases::<ark_bn254::g1::Config>(1 << 16, &mut rng);
        let scalars = random_scalars(1 << 16, &mut rng);
        assert_eq!(msm(&bases, &scalars), reference(&bases, &scalars));
    }

    fn empty_input_is_the_identity<P: Group>() {
        assert!(msm::<P>(&[], &[]).is_zero());
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let bases = random_bases::<P>(3, &mut rng);
        assert!(msm(&bases, &[]).is_zero(), "the common length is 0");
    }

    fn zero_scalars_give_the_identity<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let bases = random_bases::<P>(1000, &mut rng);
        let scalars = vec![Scalar::zero(); 1000];
        assert!(msm(&bases, &scalars).is_zero());
        check(&bases, &scalars, "zeros");
    }

    fn scalars_r_minus_one_and_around_half_r<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let bases = random_bases::<P>(500, &mut rng);
        let minus_one = (-Fr::from(1u64)).into_bigint();
        check(&bases, &vec![minus_one; 500], "r - 1");
        let half = half_modulus();
        let mut half_plus_one = half;
        half_plus_one.add_with_carry(&Scalar::from(1u64));
        let mut half_minus_one = half;
        half_minus_one.sub_with_borrow(&Scalar::from(1u64));
        let around: Vec<Scalar> = (0..500)
            .map(|i| [half, half_plus_one, half_minus_one][i % 3])
            .collect();
        check(&bases, &around, "(r-1)/2 and its neighbours");
    }

    fn repeated_identical_bases<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        let base = random_bases::<P>(1, &mut rng)[0];
        let bases = vec![base; 3000];
        // Equal scalars put every point into the same bucket: the doubling and queue paths.
        check(
            &bases,
            &vec![Fr::rand(&mut rng).into_bigint(); 3000],
            "same base, same scalar",
        );
        check(
            &bases,
            &random_scalars(3000, &mut rng),
            "same base, random scalars",
        );
        check(
            &bases,
            &vec![Scalar::from(1u64); 3000],
            "same base, scalar 1",
        );
    }

    fn equal_small_scalars_on_distinct_bases<P: Group>() {
        // Circuits' witnesses are mostly 0 and 1: all of them hit one bucket of one window.
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let bases = random_bases::<P>(4096, &mut rng);
        let scalars: Vec<Scalar> = (0..4096)
            .map(|i| Scalar::from((i % 3 == 0) as u64))
            .collect();
        check(&bases, &scalars, "0/1 scalars");
        let mixed: Vec<Scalar> = (0..4096)
            .map(|i| {
                if i % 2 == 0 {
                    Scalar::from(1u64)
                } else {
                    Fr::rand(&mut rng).into_bigint()
                }
            })
            .collect();
        check(&bases, &mixed, "half 1, half random");
    }

    fn identity_bases_are_ignored<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let mut bases = random_bases::<P>(300, &mut rng);
        for b in bases.iter_mut().step_by(2) {
            *b = Affine::identity();
        }
        check(&bases, &random_scalars(300, &mut rng), "half identity");
        let all_identity = vec![Affine::<P>::identity(); 50];
        assert!(msm(&all_identity, &random_scalars(50, &mut rng)).is_zero());
    }

    fn opposite_bases_cancel<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let half = random_bases::<P>(200, &mut rng);
        let bases: Vec<Affine<P>> = half.iter().flat_map(|p| [*p, -*p]).collect();
        let s = random_scalars(200, &mut rng);
        let same: Vec<Scalar> = s.iter().flat_map(|s| [*s, *s]).collect();
        assert!(msm(&bases, &same).is_zero(), "P·s + (-P)·s");
        check(&bases, &same, "P and -P, same scalar");
        check(
            &bases,
            &random_scalars(400, &mut rng),
            "P and -P, random scalars",
        );
        // The same point with scalars s and r - s also cancels, through the folding.
        let negated: Vec<Scalar> = s
            .iter()
            .flat_map(|s| [*s, (-Fr::from_bigint(*s).unwrap()).into_bigint()])
            .collect();
        let doubled: Vec<Affine<P>> = half.iter().flat_map(|p| [*p, *p]).collect();
        assert!(msm(&doubled, &negated).is_zero(), "P·s + P·(r-s)");
    }

    fn a_single_nonzero_scalar_is_a_scalar_multiplication<P: Group>() {
        let mut rng = ChaCha20Rng::seed_from_u64(10);
        let bases = random_bases::<P>(1000, &mut rng);
        let mut scalars = vec![Scalar::zero(); 1000];
        let s = Fr::rand(&mut rng);
        scalars[617] = s.into_bigint();
        assert_eq!(msm(&bases, &scalars), bases[617] * s);
        check(&bases, &scalars, "one nonzero");
    }

    #[test]
    fn window_width_grows_with_size() {
        let (small, large) = (window_bits(100), window_bits(1 << 16));
        assert!(
            small < large,
            "c({small}) for 100 points, c({large}) for 2^16"
        );
        assert!((2..=MAX_WINDOW_BITS).contains(&window_bits(1)));
        assert_eq!(window_bits(1 << 24), MAX_WINDOW_BITS);
    }

    #[test]
    fn digits_recompose_to_the_scalar() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let mut scalars = random_scalars(200, &mut rng);
        scalars.extend([
            Scalar::zero(),
            Scalar::from(1u64),
            (-Fr::from(1u64)).into_bigint(),
            half_modulus(),
            Scalar::from(2u64),
            Scalar::from(u64::MAX),
            (-Fr::from(5u64)).into_bigint(),
            (-Fr::from(u64::MAX)).into_bigint(),
        ]);
        for c in 2..=16 {
            let windows = FOLDED_BITS / c + 1;
            for s in &scalars {
                let mut digits = vec![0u32; windows];
                for_each_signed_digit(s, c, |w, d| digits[w] = d);
                if c <= 15 {
                    let mut short = vec![0u16; windows];
                    signed_digits(s, c, &mut short);
                    assert!(short
                        .iter()
                        .map(|&d| u32::from(d))
                        .eq(digits.iter().copied()));
                }
                let mut value = Fr::from(0u64);
                for &d in digits.iter().rev() {
                    value *= Fr::from(1u64 << c);
                    let magnitude = Fr::from((d >> 1) as u64);
                    assert!((d >> 1) as u64 <= 1 << (c - 1), "digit out of range");
                    if d & 1 == 1 {
                        value -= magnitude
                    } else {
                        value += magnitude
                    }
                }
                assert_eq!(value.into_bigint(), *s, "c = {c}");
            }
        }
    }
}
