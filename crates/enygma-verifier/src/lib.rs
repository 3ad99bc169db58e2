//! Verifier artifacts for enygma's Groth16 proofs over BN254.
//!
//! Everything a third party needs to check one of our proofs without trusting our prover:
//!
//! - [`response`]: the reference service's proof response
//!   (`{"pi_a":[ax,ay], "pi_b":[[bx1,bx0],[by1,by0]], "pi_c":[cx,cy], "public_signal":[...]}`,
//!   decimal strings, G2 coordinates in (c1, c0) order), parsed strictly into an arkworks
//!   [`Proof`] and public inputs, and rendered from them.
//! - [`snarkjs`]: snarkjs's `verification_key.json`, `proof.json` and `public.json`.
//! - [`solidity`]: a self-contained Solidity verifier contract for one verifying key, using the
//!   BN254 precompiles (0x06, 0x07, 0x08).
//! - [`arkworks`]: `CanonicalSerialize` compressed bytes, raw or hex.
//! - [`verify_proof`] / [`verify_response`]: native verification with the input count checked.
//! - [`fixtures`]: writes the fixture directories that `verifier-tests/` (snarkjs, solc, EVM) reads.
//!
//! - [`decimal`]: canonical decimal field elements, the one parser and renderer of the
//!   workspace (the prover's request parser uses it too).
//! - [`json`]: the rule that a key appears once per object, for every request and proof body.
//!
//! The crate depends on arkworks, serde, serde_json, hex, thiserror and zeroize only.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arkworks;
pub mod decimal;
mod error;
pub mod fixtures;
pub mod json;
mod points;
pub mod response;
pub mod snarkjs;
pub mod solidity;

use std::str::FromStr;

use ark_bn254::G1Projective;
use ark_ec::VariableBaseMSM;

pub use ark_bn254::{Bn254, Fq, Fr};
pub use ark_groth16::{PreparedVerifyingKey, Proof, VerifyingKey};
pub use error::Error;
pub use response::{parse_proof_response, ProofResponse};

/// BN254 scalar field order r, in decimal. Every public input must be below it.
pub const SCALAR_FIELD_MODULUS: &str =
    "21888242871839275222246405745257275088548364400416034343698204186575808495617";
/// BN254 base field modulus p, in decimal. Every curve coordinate must be below it.
pub const BASE_FIELD_MODULUS: &str =
    "21888242871839275222246405745257275088696311157297823662689037894645226208583";

/// Number of public inputs a verifying key takes (`gamma_abc_g1.len() - 1`, snarkjs's `nPublic`).
pub fn num_public_inputs(vk: &VerifyingKey<Bn254>) -> usize {
    vk.gamma_abc_g1.len().saturating_sub(1)
}

/// Verifies a Groth16 proof natively (arkworks), after checking that the number of public inputs
/// matches the key (arkworks itself silently ignores extra inputs and treats missing ones as 0).
pub fn verify_proof(
    vk: &VerifyingKey<Bn254>,
    proof: &Proof<Bn254>,
    public_inputs: &[Fr],
) -> Result<bool, Error> {
    verify_prepared(
        &ark_groth16::prepare_verifying_key(vk),
        proof,
        public_inputs,
    )
}

/// [`verify_proof`] with a prepared key (prepare it once per key and reuse it).
pub fn verify_prepared(
    pvk: &PreparedVerifyingKey<Bn254>,
    proof: &Proof<Bn254>,
    public_inputs: &[Fr],
) -> Result<bool, Error> {
    if pvk.vk.gamma_abc_g1.is_empty() {
        return Err(Error::InvalidKey("verifying key has no IC points".into()));
    }
    let expected = num_public_inputs(&pvk.vk);
    if public_inputs.len() != expected {
        return Err(Error::PublicInputCount {
            expected,
            got: public_inputs.len(),
        });
    }
    // ark-groth16's `prepare_inputs` multiplies the public inputs' points one by one; a
    // statement with 50 public inputs spends most of a verification there, and one MSM of them
    // gives the same point for a fraction of the work.
    let (constant, points) = pvk
        .vk
        .gamma_abc_g1
        .split_first()
        .expect("checked non-empty above");
    let prepared_inputs = *constant + G1Projective::msm_unchecked(points, public_inputs);
    ark_groth16::Groth16::<Bn254>::verify_proof_with_prepared_inputs(pvk, proof, &prepared_inputs)
        .map_err(|e| Error::Verification(e.to_string()))
}

/// Parses a reference-format response (see [`parse_proof_response`]) and verifies it against
/// `pvk`. `Err` means the body is malformed or has the wrong number of public inputs;
/// `Ok(false)` means a well-formed proof that does not verify.
pub fn verify_response(pvk: &PreparedVerifyingKey<Bn254>, json: &str) -> Result<bool, Error> {
    let (proof, inputs) = parse_proof_response(json)?;
    verify_prepared(pvk, &proof, &inputs)
}

/// Output formats of a verifying key, as named on the command line
/// (`enygma export-vk --format ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VkFormat {
    /// snarkjs `verification_key.json` ([`snarkjs::vk_to_snarkjs_json`]).
    Snarkjs,
    /// Solidity verifier contract source ([`solidity::solidity_verifier`]).
    Solidity,
    /// Lowercase hex of the arkworks compressed serialization ([`arkworks::vk_to_hex`]).
    Arkworks,
    /// Raw arkworks compressed serialization ([`arkworks::vk_to_bytes`]).
    ArkworksBin,
}

impl VkFormat {
    /// All formats, with their command-line names.
    pub const ALL: [(&'static str, VkFormat); 4] = [
        ("snarkjs", VkFormat::Snarkjs),
        ("solidity", VkFormat::Solidity),
        ("arkworks", VkFormat::Arkworks),
        ("arkworks-bin", VkFormat::ArkworksBin),
    ];

    /// The command-line name of the format.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    /// Conventional file name for this format (`verification_key.json`, `Verifier.sol`, ...).
    pub fn file_name(self) -> &'static str {
        match self {
            VkFormat::Snarkjs => "verification_key.json",
            VkFormat::Solidity => "Verifier.sol",
            VkFormat::Arkworks => "verifying_key.hex",
            VkFormat::ArkworksBin => "verifying_key.bin",
        }
    }
}

impl FromStr for VkFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                Error::InvalidFormat(format!(
                    "unknown verifying key format {s:?}: expected one of snarkjs, solidity, arkworks, arkworks-bin"
                ))
            })
    }
}

/// Renders a verifying key in `format`. `contract_name` is used by the Solidity format only
/// (see [`solidity::solidity_verifier`]). Text formats are UTF-8; the snarkjs JSON has no trailing
/// newline (as snarkjs writes it), the Solidity source ends with one, the hex has none.
pub fn export_vk(
    vk: &VerifyingKey<Bn254>,
    format: VkFormat,
    contract_name: &str,
) -> Result<Vec<u8>, Error> {
    Ok(match format {
        VkFormat::Snarkjs => snarkjs::vk_to_snarkjs_json(vk).into_bytes(),
        VkFormat::Solidity => solidity::solidity_verifier(vk, contract_name)?.into_bytes(),
        VkFormat::Arkworks => arkworks::vk_to_hex(vk).into_bytes(),
        VkFormat::ArkworksBin => arkworks::vk_to_bytes(vk),
    })
}
