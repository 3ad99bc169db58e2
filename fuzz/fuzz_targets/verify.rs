//! The verify route's proof parser on arbitrary input: the proof response's JSON (each key
//! once, exact shape), then its key-free checks (canonical coordinates, points on the curve and
//! in the subgroup, the input count). An error is fine, a panic is a bug. The input names its
//! statement instance as for `prepare` (`enygma_prover::fuzzing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = enygma_prover::fuzzing::verify_input(data);
});
