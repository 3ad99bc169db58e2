//! The commitment a deposit leaves in the DvP (delivery-versus-payment) contract and a withdraw
//! claims back: `Poseidon(Poseidon(Poseidon(owner_key, salt), value), address)`, a chain of
//! three 2-input Poseidons with no reduction (the reference's "V2" formula).
//!
//! The deposit proves it for the public `hash` with the owner's key given directly; a withdraw
//! proves it for each of its 10 public `hashes` whose value is not zero, with the owner's key
//! derived from the deposit's secret key (`Poseidon(sk, sk) mod L`, the same public-key rule as
//! the transfer's check 6).
//!
//! A withdraw must not claim the same commitment twice ([`repeated_note`]): once its credited
//! value is the sum of its deposits' values, a repeated deposit would count twice. Empty slots
//! carry the hash 0 and may repeat.

pub mod constraints;

use ark_ff::Zero;

use crate::{poseidon, Fr};

/// Slots a withdraw always carries, used or not (the reference's fixed `[10]` arrays).
pub const WITHDRAW_SLOTS: usize = 10;

/// `Poseidon(Poseidon(Poseidon(owner_key, salt), value), address)`.
pub fn commitment_hash(owner_key: &Fr, salt: &Fr, value: &Fr, address: &Fr) -> Fr {
    let keyed = poseidon::hash(&[*owner_key, *salt]);
    let valued = poseidon::hash(&[keyed, *value]);
    poseidon::hash(&[valued, *address])
}

/// The first pair of slots (i < j) that carry the same non-zero hash, i.e. claim the same DvP
/// commitment twice; `None` when the non-zero hashes are pairwise distinct.
pub fn repeated_note(hashes: &[Fr]) -> Option<(usize, usize)> {
    (0..hashes.len())
        .flat_map(|j| (0..j).map(move |i| (i, j)))
        .find(|&(i, j)| hashes[i] == hashes[j] && !hashes[i].is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_note_finds_the_first_repeat_and_ignores_empty_slots() {
        let h = |x: u64| Fr::from(x);
        assert_eq!(repeated_note(&[h(1), h(2), h(3)]), None);
        assert_eq!(repeated_note(&[h(0), h(0), h(5), h(0)]), None);
        assert_eq!(repeated_note(&[h(7), h(0), h(7)]), Some((0, 2)));
        assert_eq!(repeated_note(&[h(1), h(4), h(9), h(4), h(1)]), Some((1, 3)));
        assert_eq!(repeated_note(&[]), None);
    }
}
