//! circomlib's Poseidon over BN254 (iden3's round constants and MDS matrices), as the reference
//! uses it: the state is `[0, inputs..]` and the output is `state[0]` after the permutation.
//!
//! The native hash is light-poseidon's `new_circom`, a well-kept implementation of exactly this
//! construction. The gadget in [`constraints`] replays the same permutation on the same
//! parameters, so the two cannot drift apart.

pub mod constraints;

use std::{cell::RefCell, sync::OnceLock};

use light_poseidon::{parameters::bn254_x5, Poseidon, PoseidonHasher, PoseidonParameters};

use crate::Fr;

/// Largest number of inputs the statement hashes at once (width 4).
pub const MAX_INPUTS: usize = 3;

/// circom parameters for `n` inputs (width `n + 1`), built once per width.
pub fn parameters(n: usize) -> &'static PoseidonParameters<Fr> {
    static CACHE: [OnceLock<PoseidonParameters<Fr>>; MAX_INPUTS] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    assert!(
        (1..=MAX_INPUTS).contains(&n),
        "Poseidon over {n} inputs is not used here"
    );
    CACHE[n - 1].get_or_init(|| {
        bn254_x5::get_poseidon_parameters::<Fr>((n + 1) as u8)
            .expect("light-poseidon ships circom parameters for widths 2..=13")
    })
}

/// Poseidon of 1 to 3 field elements.
pub fn hash(inputs: &[Fr]) -> Fr {
    thread_local! {
        // light-poseidon's hasher is stateful and its parameters are not `Clone`: keep one
        // hasher per width and thread instead of rebuilding the constants on every call.
        static HASHERS: RefCell<[Option<Poseidon<Fr>>; MAX_INPUTS]> = const { RefCell::new([None, None, None]) };
    }
    let n = inputs.len();
    assert!(
        (1..=MAX_INPUTS).contains(&n),
        "Poseidon over {n} inputs is not used here"
    );
    HASHERS.with(|hashers| {
        let mut hashers = hashers.borrow_mut();
        hashers[n - 1]
            .get_or_insert_with(|| {
                Poseidon::<Fr>::new_circom(n).expect("circom parameters exist for 1..=12 inputs")
            })
            .hash(inputs)
            .expect("the hasher's width matches the number of inputs")
    })
}

/// `Poseidon(12)`: the domain constant of message tags (check 8).
pub fn message_tag_domain() -> Fr {
    static C: OnceLock<Fr> = OnceLock::new();
    *C.get_or_init(|| hash(&[Fr::from(12u64)]))
}

/// `Poseidon(21)`: the domain constant of the random factors (check 14).
pub fn random_factor_domain() -> Fr {
    static C: OnceLock<Fr> = OnceLock::new();
    *C.get_or_init(|| hash(&[Fr::from(21u64)]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn fr(s: &str) -> Fr {
        Fr::from_str(s).unwrap()
    }

    /// Test vectors from iden3's circomlibjs (`poseidon.js` tests) and go-iden3-crypto.
    #[test]
    fn matches_iden3_vectors() {
        assert_eq!(
            hash(&[fr("1")]),
            fr("18586133768512220936620570745912940619677854269274689475585506675881198879027")
        );
        assert_eq!(
            hash(&[fr("1"), fr("2")]),
            fr("7853200120776062878684798364095072458815029376092732009249414926327459813530")
        );
        assert_eq!(
            hash(&[fr("1"), fr("2"), fr("3")]),
            fr("6542985608222806190361240322586112750744169038454362455181422643027100751666")
        );
    }

    #[test]
    fn hashes_of_different_widths_differ() {
        assert_ne!(
            hash(&[Fr::from(0u64)]),
            hash(&[Fr::from(0u64), Fr::from(0u64)])
        );
        assert_ne!(message_tag_domain(), random_factor_domain());
    }
}
