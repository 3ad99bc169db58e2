//! Every statement's request parser, then its native checks, on arbitrary input: an error is
//! fine, a panic (or a sanitizer report) is a bug. The input names its statement instance
//! (`enygma_prover::fuzzing`), so every statement of the registry is covered by this one target.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = enygma_prover::fuzzing::prepare_input(data);
});
