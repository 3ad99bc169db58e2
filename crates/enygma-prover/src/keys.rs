//! Development keys: one Groth16 proving key and verifying key per statement and anonymity-set
//! size.
//!
//! Keys come from a single-party setup seeded with a fixed, documented seed (like the
//! reference's own setup): anyone can regenerate them, so they are for development and
//! testing only. Production keys need a multi-party ceremony.
//!
//! Layout under the keys directory, for each statement (`transfer`, `deposit`, `withdraw`) and k:
//! - `{statement}-k{k}.vk`: the verifying key, compressed arkworks serialization (committed);
//! - `{statement}-k{k}.pk`: the proving key, uncompressed so that it loads in milliseconds;
//! - `{statement}-k{k}.pk.sha256`: the SHA-256 of the `.pk` file written with it. A proving key
//!   whose digest matches is loaded without point checks (they take tens of seconds); any other
//!   is loaded with full checks.

use std::{
    fs,
    io::{BufReader, BufWriter, Read, Write},
    path::{Path, PathBuf},
};

use ark_bn254::Bn254;
use ark_groth16::{ProvingKey, VerifyingKey};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize, Compress, Validate};
use ark_snark::SNARK;
use enygma_circuit::payment::{constraints::PaymentCircuit, Kind};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

use crate::qap::Groth16;

/// The seed of the development keys of a statement for k:
/// `SHA-256("enygma-prover development keys v1: {statement} k={k}")` feeds ChaCha20, which then
/// draws Groth16's toxic waste.
pub fn development_seed(kind: Kind, k: usize) -> [u8; 32] {
    Sha256::digest(format!("enygma-prover development keys v1: {kind} k={k}")).into()
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a valid key file ({source})")]
    Format {
        path: PathBuf,
        source: ark_serialize::SerializationError,
    },
    #[error("key generation for k={k} failed: {reason}")]
    Setup { k: usize, reason: String },
    #[error(
        "the {kind} keys for k={k} do not match the {kind} circuit ({reason}); delete {dir}/{kind}-k{k}.* \
         and run `enygma setup` to make new development keys"
    )]
    Mismatch {
        kind: Kind,
        k: usize,
        dir: String,
        reason: String,
    },
}

pub struct KeyPaths {
    pub proving: PathBuf,
    pub proving_digest: PathBuf,
    pub verifying: PathBuf,
}

impl KeyPaths {
    pub fn new(dir: &Path, kind: Kind, k: usize) -> Self {
        Self {
            proving: dir.join(format!("{kind}-k{k}.pk")),
            proving_digest: dir.join(format!("{kind}-k{k}.pk.sha256")),
            verifying: dir.join(format!("{kind}-k{k}.vk")),
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs the deterministic development setup of `kind` for k, for the oriented reduction the
/// prover uses ([`crate::qap`]).
pub fn generate(kind: Kind, k: usize) -> Result<ProvingKey<Bn254>, KeyError> {
    let mut rng = ChaCha20Rng::from_seed(development_seed(kind, k));
    let (pk, _) = Groth16::circuit_specific_setup(PaymentCircuit::for_setup(kind, k), &mut rng)
        .map_err(|e| KeyError::Setup {
            k,
            reason: e.to_string(),
        })?;
    Ok(pk)
}

/// Writes `bytes` to `path` through a temporary file and a rename, so that a reader (or a
/// concurrent writer) never sees a half-written key.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), KeyError> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        let mut f = BufWriter::new(fs::File::create(&tmp).map_err(io(&tmp))?);
        f.write_all(bytes).map_err(io(&tmp))?;
        f.flush().map_err(io(&tmp))?;
    }
    fs::rename(&tmp, path).map_err(io(path))
}

fn serialize<T: CanonicalSerialize>(value: &T, compress: Compress) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(value.serialized_size(compress));
    value
        .serialize_with_mode(&mut bytes, compress)
        .expect("serializing to memory cannot fail");
    bytes
}

/// Writes the proving key (uncompressed), its digest and the verifying key (compressed).
pub fn save(dir: &Path, kind: Kind, k: usize, pk: &ProvingKey<Bn254>) -> Result<(), KeyError> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let paths = KeyPaths::new(dir, kind, k);
    let pk_bytes = serialize(pk, Compress::No);
    write_atomically(&paths.proving, &pk_bytes)?;
    write_atomically(
        &paths.proving_digest,
        format!("{}\n", hex::encode(Sha256::digest(&pk_bytes))).as_bytes(),
    )?;
    write_atomically(&paths.verifying, &serialize(&pk.vk, Compress::Yes))
}

pub fn load_verifying_key(path: &Path) -> Result<VerifyingKey<Bn254>, KeyError> {
    let bytes = fs::read(path).map_err(io(path))?;
    VerifyingKey::deserialize_compressed(bytes.as_slice()).map_err(|source| KeyError::Format {
        path: path.to_path_buf(),
        source,
    })
}

/// Loads a proving key, skipping the point checks when the file's digest matches the one
/// recorded next to it.
pub fn load_proving_key(paths: &KeyPaths) -> Result<ProvingKey<Bn254>, KeyError> {
    let mut bytes = Vec::new();
    BufReader::new(fs::File::open(&paths.proving).map_err(io(&paths.proving))?)
        .read_to_end(&mut bytes)
        .map_err(io(&paths.proving))?;
    let recorded = fs::read_to_string(&paths.proving_digest).unwrap_or_default();
    let trusted = recorded.trim() == hex::encode(Sha256::digest(&bytes));
    let validate = if trusted { Validate::No } else { Validate::Yes };
    ProvingKey::deserialize_with_mode(bytes.as_slice(), Compress::No, validate).map_err(|source| {
        KeyError::Format {
            path: paths.proving.clone(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ_per_statement_and_k_and_are_stable() {
        assert_ne!(
            development_seed(Kind::Transfer, 2),
            development_seed(Kind::Transfer, 3)
        );
        assert_ne!(
            development_seed(Kind::Deposit, 2),
            development_seed(Kind::Withdraw, 2)
        );
        assert_eq!(
            hex::encode(development_seed(Kind::Transfer, 6)),
            hex::encode(Sha256::digest(
                b"enygma-prover development keys v1: transfer k=6"
            ))
        );
    }
}
