//! Development keys: one Groth16 proving key and verifying key per statement instance (a
//! statement and its anonymity-set size k, or a statement without sizes; see
//! `crate::statements`).
//!
//! Keys come from a single-party setup seeded with a fixed, documented seed (like the
//! reference's own setup): anyone can regenerate them, so they are for development and
//! testing only. Production keys need a multi-party ceremony.
//!
//! Layout under the keys directory, for each instance's key stem (`transfer-k6`,
//! [`Instance::key_stem`]):
//! - `{stem}.vk`: the verifying key, compressed arkworks serialization (committed);
//! - `{stem}.pk`: the proving key, uncompressed so that it loads in milliseconds;
//! - `{stem}.pk.sha256`: the SHA-256 of the `.pk` file written with it. A proving key
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
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

use crate::{qap::Groth16, statements::Instance};

/// The seed of the development keys of an instance:
/// `SHA-256("enygma-prover development keys v1: {statement} k={k}")` (without ` k={k}` for a
/// statement without sizes) feeds ChaCha20, which then draws Groth16's toxic waste.
pub fn development_seed(instance: Instance) -> [u8; 32] {
    Sha256::digest(instance.development_seed_text()).into()
}

/// What loading does about a missing proving key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingKeys {
    /// Create development keys from the public seed (and write them).
    Create,
    /// Refuse: production keys must be provided, never made up.
    Refuse,
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
    #[error("key generation for {stem} failed: {reason}")]
    Setup { stem: String, reason: String },
    #[error(
        "the {stem} keys do not match the {circuit} circuit ({reason}); delete {dir}/{stem}.* \
         and run `enygma setup` to make new development keys"
    )]
    Mismatch {
        stem: String,
        circuit: &'static str,
        dir: String,
        reason: String,
    },
    #[error("the proving key of {stem} is missing: {path} does not exist (and development keys are not to be created)")]
    Missing { stem: String, path: PathBuf },
}

pub struct KeyPaths {
    pub proving: PathBuf,
    pub proving_digest: PathBuf,
    pub verifying: PathBuf,
}

impl KeyPaths {
    pub fn new(dir: &Path, instance: Instance) -> Self {
        let stem = instance.key_stem();
        Self {
            proving: dir.join(format!("{stem}.pk")),
            proving_digest: dir.join(format!("{stem}.pk.sha256")),
            verifying: dir.join(format!("{stem}.vk")),
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs the deterministic development setup of `instance`, for the oriented reduction the
/// prover uses ([`crate::qap`]).
pub fn generate(instance: Instance) -> Result<ProvingKey<Bn254>, KeyError> {
    let mut rng = ChaCha20Rng::from_seed(development_seed(instance));
    let (pk, _) =
        Groth16::circuit_specific_setup(instance.circuit_for_setup(), &mut rng).map_err(|e| {
            KeyError::Setup {
                stem: instance.key_stem(),
                reason: e.to_string(),
            }
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
pub fn save(dir: &Path, instance: Instance, pk: &ProvingKey<Bn254>) -> Result<(), KeyError> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let paths = KeyPaths::new(dir, instance);
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
    fn seeds_differ_per_instance_and_are_stable() {
        let seeds: std::collections::HashSet<[u8; 32]> = crate::statements::instances()
            .map(development_seed)
            .collect();
        assert_eq!(seeds.len(), crate::statements::instances().count());
        let transfer6 = crate::statements::instance("transfer", Some(6)).unwrap();
        assert_eq!(
            hex::encode(development_seed(transfer6)),
            hex::encode(Sha256::digest(
                b"enygma-prover development keys v1: transfer k=6"
            ))
        );
    }
}
