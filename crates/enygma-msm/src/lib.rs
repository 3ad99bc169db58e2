//! Multi-scalar multiplication on BN254's G1 and G2 for the Groth16 prover.
//!
//! A Pippenger bucket method with three changes over ark-ec's `msm_bigint`, the same three that
//! make gnark-crypto's MSM about twice as fast:
//! - signed digits: every window digit lies in `[-2^(c-1), 2^(c-1)]`, so a window needs only
//!   `2^(c-1)` buckets (the negation of an affine point is free), and scalars above `r/2` are
//!   replaced by `r - s` on the negated point, which saves a bit of scalar;
//! - batch-affine bucket additions: additions into distinct buckets are collected and share
//!   one field inversion (Montgomery's trick), so an addition costs about 6 multiplications
//!   instead of the 11 of a mixed Jacobian addition;
//! - a window size chosen from a cost model of both phases (bucket filling and reduction).
//!
//! Windows are independent and run in parallel on the current rayon pool: narrow ones in a
//! group per thread, filled together so that their additions share batches (one inversion per
//! thousand additions, where a window of 128 buckets alone paid one per few dozen), and with
//! IFMA reduced together in batch-affine rounds (where two Jacobian additions per bucket had
//! cost 15-20 % of a proof's time on one thread).
//!
//! For bases that never change (a proving key's), [`PrecomputedBases`] stores each base with
//! its multiples `2^(c·j)·P` and [`msm_precomputed`] computes the same sum as one wide window
//! with a single, batch-affine bucket reduction: 0.61-0.73x the time of [`msm`] on 2^15 random
//! G1 scalars, for 1 KiB per G1 base (2 KiB per G2 base) at c = 16.
//!
//! The code is generic over a short-Weierstrass curve whose scalar field is BN254's `Fr`, so
//! that G1 (over Fq) and G2 (over Fq2) share it: a G2 batch addition costs about three times a
//! G1 one, but so does the mixed Jacobian addition it replaces, and the inversion it amortises
//! is one Fq inversion plus a few products. On the scalar path the additions' products are
//! inlined Montgomery products (`field`), Fq2's with three Fq products and two reductions.
//!
//! On x86_64 CPUs with AVX-512 IFMA the bucket additions run eight at a time in 52-bit radix
//! ([`ifma`] for the field, `lanes` for the additions), chosen at run time
//! ([`Arithmetic::detected`]); the scalar path on arkworks' field stays, and the tests hold
//! both to the same results.

mod buckets;
mod curve;
mod field;
#[cfg(target_arch = "x86_64")]
pub mod ifma;
#[cfg(target_arch = "x86_64")]
mod lane_field;
#[cfg(target_arch = "x86_64")]
mod lanes;
mod pippenger;
mod precomputed;
mod reduce;
#[cfg(test)]
mod test_support;
mod window;

/// The groups (G1, G2), the scalars, and the arithmetic of the bucket additions.
pub use curve::{Arithmetic, Curve, Scalar};
/// The MSM of bases given at each call.
pub use pippenger::{msm, msm_with, msm_with_window};
/// The MSM of bases known in advance, with their precomputed multiples.
pub use precomputed::{
    msm_precomputed, msm_precomputed_with, precomputed_window_bits, PrecomputedBases,
};
/// The window width the MSM picks for a number of points.
pub use window::window_bits;
