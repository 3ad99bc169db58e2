//! The Enygma statements over BN254: the payment statements (transfer, deposit, withdraw) and
//! the DvP statements (ERC-20 and ERC-1155 join-splits, ERC-721 ownership).
//!
//! Every primitive lives in its own module with the native function in `mod.rs` and its R1CS
//! gadget in `constraints.rs`, so that each gadget is tested against its native twin:
//!
//! - [`poseidon`]: circomlib's Poseidon (iden3 constants, `state[0]` output) for 1..3 inputs.
//! - [`babyjubjub`]: Baby Jubjub in the reference's form (a = 168700, d = 168696), the Pedersen
//!   commitment `v·G + ρ·H`, and windowed fixed-base scalar multiplication.
//! - [`modl`]: reduction of a field element modulo L, the order of Baby Jubjub's prime subgroup.
//! - [`keys`]: the public key `Poseidon(sk, sk) mod L` of a secret key.
//! - [`bits`]: bit decompositions and the comparison of bits with a constant.
//! - [`amount`]: DvP token amounts, below 10^36.
//! - [`merkle`]: the depth-8 Merkle trees of the DvP notes.
//! - [`dvp`]: the DvP note commitments (C20, which is also the commitment deposits create and
//!   withdraws claim, C1155, C721) and nullifiers, and the DvP statements
//!   ([`dvp::join_split`], [`dvp::ownership`]).
//! - [`payment`]: the checks of the transfer, deposit and withdraw statements, natively (to
//!   refuse bad requests before any proving work) and as circuits generic over the
//!   anonymity-set size k.
//! - [`secret`]: [`Secret`], the type every private input is held in (redacted in `Debug`,
//!   zeroized on drop).

pub mod amount;
pub mod babyjubjub;
pub mod bits;
pub mod dvp;
pub mod keys;
pub mod merkle;
pub mod modl;
pub mod payment;
pub mod poseidon;
pub mod secret;

/// The BN254 scalar field: every value of the statement lives here.
pub use ark_bn254::Fr;
pub use secret::Secret;

/// The anonymity-set sizes the tests cover: those the service proves (the statement registry,
/// `enygma_prover::statements`, owns that list).
#[cfg(test)]
pub(crate) const SUPPORTED_K: std::ops::RangeInclusive<usize> = 2..=6;

/// Synthesizes `circuit` with a `ConstraintLayer` that records this crate's namespaces only
/// (arkworks' own gadget spans format their operands: synthesis would take minutes), and returns
/// the trace of the first unsatisfied constraint: which check or rule it belongs to. `Err` if
/// a hint cannot even be computed.
#[cfg(test)]
pub(crate) fn first_unsatisfied(
    circuit: impl ark_relations::gr1cs::ConstraintSynthesizer<Fr>,
) -> Result<Option<String>, ark_relations::gr1cs::SynthesisError> {
    use ark_relations::gr1cs::{ConstraintLayer, ConstraintSystem, TracingMode};
    use tracing_subscriber::{filter::filter_fn, layer::SubscriberExt};
    let subscriber = tracing_subscriber::registry()
        .with(ConstraintLayer::new(TracingMode::OnlyConstraints))
        .with(filter_fn(|m| {
            m.module_path()
                .is_some_and(|p| p.starts_with("enygma_circuit"))
        }));
    tracing::subscriber::with_default(subscriber, || {
        let cs = ConstraintSystem::<Fr>::new_ref();
        circuit.generate_constraints(cs.clone())?;
        cs.which_is_unsatisfied()
    })
}
