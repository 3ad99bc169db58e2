//! The commitment a deposit leaves in the DvP (delivery-versus-payment) contract and a withdraw
//! claims back: `Poseidon(Poseidon(Poseidon(owner_key, salt), value), address)`, a chain of
//! three 2-input Poseidons with no reduction (the reference's "V2" formula).
//!
//! The deposit proves it for the public `hash` with the owner's key given directly; a withdraw
//! proves it for each of its 10 public `hashes` whose value is not zero, with the owner's key
//! derived from the deposit's secret key (`Poseidon(sk, sk) mod L`, the same public-key rule as
//! the transfer's check 6).

pub mod constraints;

use crate::{poseidon, Fr};

/// Slots a withdraw always carries, used or not (the reference's fixed `[10]` arrays).
pub const WITHDRAW_SLOTS: usize = 10;

/// `Poseidon(Poseidon(Poseidon(owner_key, salt), value), address)`.
pub fn commitment_hash(owner_key: &Fr, salt: &Fr, value: &Fr, address: &Fr) -> Fr {
    let keyed = poseidon::hash(&[*owner_key, *salt]);
    let valued = poseidon::hash(&[keyed, *value]);
    poseidon::hash(&[valued, *address])
}
