//! Key pairs of the reference's statements: a secret scalar `sk` and its public key
//! `pk = Poseidon(sk, sk) mod L`, the integer remainder of the hash's canonical value. No curve
//! arithmetic is involved: spending authority is knowledge of `sk`.
//!
//! The transfer checks the sender's key with it (check 6), a withdraw derives the owner key of
//! each deposit it claims, and the DvP notes are owned by such keys. The gadget in
//! [`constraints`] reduces the hash soundly (bounded quotient, remainder below L, no wrap past r).

pub mod constraints;

use crate::{modl, poseidon, Fr};

/// `Poseidon(sk, sk) mod L`.
pub fn public_key(secret_key: &Fr) -> Fr {
    modl::reduce(&poseidon::hash(&[*secret_key, *secret_key]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    /// dvp.md: pk(0), the key of the dummy slots, whose secret (0) everyone knows.
    #[test]
    fn public_key_of_zero() {
        assert_eq!(
            public_key(&Fr::from(0u64)),
            Fr::from_str(
                "1064117825066864194675208233812661767203424494133923785770246770998905963951"
            )
            .unwrap()
        );
    }
}
