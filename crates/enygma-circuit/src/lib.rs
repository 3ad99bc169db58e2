//! The Enygma payment statements (transfer, deposit, withdraw) over BN254.
//!
//! Every primitive lives in its own module with the native function in `mod.rs` and its R1CS
//! gadget in `constraints.rs`, so that each gadget is tested against its native twin:
//!
//! - [`poseidon`]: circomlib's Poseidon (iden3 constants, `state[0]` output) for 1..3 inputs.
//! - [`babyjubjub`]: Baby Jubjub in the reference's form (a = 168700, d = 168696), the Pedersen
//!   commitment `v·G + ρ·H`, and windowed fixed-base scalar multiplication.
//! - [`modl`]: reduction of a field element modulo L, the order of Baby Jubjub's prime subgroup.
//! - [`dvp`]: the hash of a DvP commitment that deposits create and withdraws claim.
//! - [`payment`]: the checks of the transfer, deposit and withdraw statements, natively (to
//!   refuse bad requests before any proving work) and as circuits generic over the
//!   anonymity-set size k.

pub mod babyjubjub;
pub mod bits;
pub mod dvp;
pub mod modl;
pub mod payment;
pub mod poseidon;

/// The BN254 scalar field: every value of the statement lives here.
pub use ark_bn254::Fr;

/// Anonymity-set sizes the service supports, as the reference does.
pub const SUPPORTED_K: std::ops::RangeInclusive<usize> = 2..=6;
