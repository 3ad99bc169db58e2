//! Writes one test-fixture directory for the independent verifiers in `verifier-tests/`
//! (snarkjs and the Solidity verifier in an EVM). The layout is the contract between this crate
//! and those node tests:
//!
//! ```text
//! DIR/NAME/verification_key.json   snarkjs key
//!          Verifier.sol            Solidity verifier (contract `contract_name`)
//!          verifying_key.hex       arkworks compressed key, hex
//!          response.json           the proof response, exactly as given
//!          proof.json, public.json snarkjs proof files converted from response.json
//!          meta.json               {"contract", "k", "nPublic", "name", "source", "committed"}
//! ```

use std::path::{Path, PathBuf};

use ark_bn254::Bn254;
use ark_groth16::VerifyingKey;

use crate::{arkworks, snarkjs, solidity, Error};

/// What goes into one fixture directory.
#[derive(Debug, Clone, Copy)]
pub struct Fixture<'a> {
    /// Directory name, e.g. `transfer-k6-sample` or `toy-k2`.
    pub name: &'a str,
    /// The circuit's size k, if it has one (the tests sort by it and the gas report shows it).
    pub k: Option<usize>,
    /// Where key and proof come from, e.g. `toy`, `keys/transfer-k6 (development)`.
    pub source: &'a str,
    /// Solidity contract name for `Verifier.sol`.
    pub contract_name: &'a str,
    /// The verifying key.
    pub vk: &'a VerifyingKey<Bn254>,
    /// A proof response body in the reference format, as the prover or server returned it.
    pub response_json: &'a str,
    /// For a key of the repository's `keys/`: the exports committed beside it, which the
    /// fixture's key and verifier must equal.
    pub committed: Option<CommittedExports<'a>>,
}

/// File names (in the keys directory) of a key's committed snarkjs key and Solidity verifier.
#[derive(Debug, Clone, Copy)]
pub struct CommittedExports<'a> {
    /// The snarkjs key, e.g. `transfer-k6.verification_key.json`.
    pub verification_key: &'a str,
    /// The Solidity verifier, e.g. `EnygmaTransferVerifierK6.sol`.
    pub solidity: &'a str,
}

fn write(path: &Path, contents: &[u8]) -> Result<(), Error> {
    std::fs::write(path, contents).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// Writes `dir/<name>/` (creating it; existing files are overwritten) and returns its path.
/// The response is parsed strictly first and must have the key's number of public inputs, but
/// is not verified: a fixture may hold a proof that should fail.
pub fn write_fixture(dir: &Path, f: &Fixture<'_>) -> Result<PathBuf, Error> {
    if f.name.is_empty() || f.name.contains(['/', '\\']) || f.name.starts_with('.') {
        return Err(Error::Io(format!("bad fixture name {:?}", f.name)));
    }
    let (_, inputs) = crate::parse_proof_response(f.response_json)?;
    let n_public = crate::num_public_inputs(f.vk);
    if inputs.len() != n_public {
        return Err(Error::PublicInputCount {
            expected: n_public,
            got: inputs.len(),
        });
    }
    let files = snarkjs::response_to_snarkjs(f.response_json)?;
    let sol = solidity::solidity_verifier(f.vk, f.contract_name)?;
    let meta = serde_json::json!({
        "name": f.name,
        "k": f.k,
        "nPublic": n_public,
        "source": f.source,
        "contract": f.contract_name,
        "committed": f.committed.map(|c| serde_json::json!({
            "verificationKey": c.verification_key,
            "solidity": c.solidity,
        })),
    });

    let out = dir.join(f.name);
    std::fs::create_dir_all(&out).map_err(|e| Error::Io(format!("{}: {e}", out.display())))?;
    write(
        &out.join("verification_key.json"),
        snarkjs::vk_to_snarkjs_json(f.vk).as_bytes(),
    )?;
    write(&out.join("Verifier.sol"), sol.as_bytes())?;
    write(
        &out.join("verifying_key.hex"),
        arkworks::vk_to_hex(f.vk).as_bytes(),
    )?;
    write(&out.join("response.json"), f.response_json.as_bytes())?;
    write(&out.join("proof.json"), files.proof_json.as_bytes())?;
    write(&out.join("public.json"), files.public_json.as_bytes())?;
    write(
        &out.join("meta.json"),
        snarkjs::to_snarkjs_string(&meta).as_bytes(),
    )?;
    Ok(out)
}
