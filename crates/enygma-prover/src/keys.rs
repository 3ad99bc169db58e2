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
//! - `{stem}.pk`: the proving key, uncompressed so that it loads in milliseconds, after a
//!   two-line header saying what it is ([`KeyRecord`]: its origin and the QAP reduction its H
//!   query is for); a file without the header is a development key of the libsnark reduction,
//!   as written before keys had one;
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

use crate::{
    qap::{Groth16, Reduction},
    statements::Instance,
};

/// The first line of a proving key file with a header; the second is its [`KeyRecord`] in JSON.
const HEADER_MAGIC: &[u8] = b"enygma proving key v1\n";

/// Where a key's toxic waste went: who could forge proofs for it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum KeyOrigin {
    /// From the public seed ([`development_seed`]): anyone can forge proofs.
    DevelopmentSeed,
    /// `enygma setup --random`: fresh OS entropy, dropped after the setup; whoever ran that
    /// process could have kept it.
    SingleParty,
    /// A multi-party ceremony's snarkjs zkey: sound if one contributor destroyed their entropy.
    Ceremony {
        /// Contributions to its phase 2, the final beacon included.
        contributions: u32,
        /// The last contribution's hash as snarkjs prints it (`zkey verify`, `zkey beacon`),
        /// 64 bytes in hex.
        final_hash: Option<String>,
        /// SHA-256 of the imported zkey file.
        zkey_sha256: String,
    },
}

impl KeyOrigin {
    /// The short name the server's log, `/readyz` and metric use.
    pub fn kind(&self) -> &'static str {
        match self {
            KeyOrigin::DevelopmentSeed => "development-seed",
            KeyOrigin::SingleParty => "single-party-random",
            KeyOrigin::Ceremony { .. } => "ceremony",
        }
    }

    pub fn is_ceremony(&self) -> bool {
        matches!(self, KeyOrigin::Ceremony { .. })
    }
}

impl std::fmt::Display for KeyOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyOrigin::Ceremony {
                contributions,
                final_hash,
                ..
            } => write!(
                f,
                "ceremony zkey, {contributions} contributions, final hash {}",
                final_hash.as_deref().unwrap_or("unknown")
            ),
            other => f.write_str(other.kind()),
        }
    }
}

/// What a proving key file says about its key.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyRecord {
    pub origin: KeyOrigin,
    pub reduction: Reduction,
}

impl KeyRecord {
    /// The development keys': the public seed, libsnark's reduction.
    pub const DEVELOPMENT: KeyRecord = KeyRecord {
        origin: KeyOrigin::DevelopmentSeed,
        reduction: Reduction::Libsnark,
    };
}

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
    generate_with_reduction(instance, Reduction::Libsnark)
}

/// The development setup of `instance` for the H query of `reduction`. Both reductions draw
/// the same toxic waste from the seed (α, β, γ, δ, the generators, then τ) and differ only in
/// H's points, so a key of snarkjs' reduction ([`Reduction::Circom`], what
/// [`crate::ceremony::zkey::write`] lays out for snarkjs and rapidsnark) has the development
/// key's verifying key and A, B and L queries.
pub fn generate_with_reduction(
    instance: Instance,
    reduction: Reduction,
) -> Result<ProvingKey<Bn254>, KeyError> {
    let mut rng = ChaCha20Rng::from_seed(development_seed(instance));
    let circuit = instance.circuit_for_setup();
    let setup = match reduction {
        Reduction::Libsnark => Groth16::circuit_specific_setup(circuit, &mut rng),
        Reduction::Circom => crate::qap::CircomGroth16::circuit_specific_setup(circuit, &mut rng),
    };
    setup.map(|(pk, _)| pk).map_err(|e| KeyError::Setup {
        stem: instance.key_stem(),
        reason: e.to_string(),
    })
}

/// δ₁ of the development keys of `instance` (of either reduction), from the first draws of
/// their seeded setup alone (α, β, γ, δ, then the G1 generator): how an imported zkey without
/// contributions is recognized as a development key ([`crate::ceremony::zkey::import`]).
pub fn development_delta_g1(instance: Instance) -> ark_bn254::G1Affine {
    use ark_ec::CurveGroup;
    use ark_std::UniformRand;
    let mut rng = ChaCha20Rng::from_seed(development_seed(instance));
    let [_alpha, _beta, _gamma, delta] = [0; 4].map(|_| enygma_circuit::Fr::rand(&mut rng));
    let g1 = ark_bn254::G1Projective::rand(&mut rng);
    (g1 * delta).into_affine()
}

/// A single-party setup of `instance` for staging, for the oriented libsnark reduction: α, β,
/// γ, δ drawn from the operating system's entropy and zeroized once the key is made, the
/// evaluation point τ drawn inside ark-groth16's generator from the same source. ark-groth16
/// takes the four by value and keeps τ to itself, so the copies in its frames are dropped, not
/// zeroized: whoever controls this process while it runs could keep them. Sound only if that
/// one party is trusted; production keys come from a ceremony ([`crate::ceremony`]).
pub fn generate_random(instance: Instance) -> Result<ProvingKey<Bn254>, KeyError> {
    use ark_std::UniformRand;
    let mut rng = rand::rngs::OsRng;
    let waste = zeroize::Zeroizing::new([0; 4].map(|_| enygma_circuit::Fr::rand(&mut rng)));
    Groth16::generate_parameters_with_qap(
        instance.circuit_for_setup(),
        waste[0],
        waste[1],
        waste[2],
        waste[3],
        ark_ec::PrimeGroup::generator(),
        ark_ec::PrimeGroup::generator(),
        &mut rng,
    )
    .map_err(|e| KeyError::Setup {
        stem: instance.key_stem(),
        reason: e.to_string(),
    })
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

/// Writes the proving key (uncompressed, after its record), its digest and the verifying key
/// (compressed). Returns the digest: the SHA-256 of the proving key's file.
pub fn save(
    dir: &Path,
    instance: Instance,
    pk: &ProvingKey<Bn254>,
    record: &KeyRecord,
) -> Result<[u8; 32], KeyError> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let paths = KeyPaths::new(dir, instance);
    let mut pk_bytes = HEADER_MAGIC.to_vec();
    serde_json::to_writer(&mut pk_bytes, record).expect("a record serializes");
    pk_bytes.push(b'\n');
    pk_bytes.extend(serialize(pk, Compress::No));
    write_atomically(&paths.proving, &pk_bytes)?;
    let digest: [u8; 32] = Sha256::digest(&pk_bytes).into();
    write_atomically(
        &paths.proving_digest,
        format!("{}\n", hex::encode(digest)).as_bytes(),
    )?;
    write_atomically(&paths.verifying, &serialize(&pk.vk, Compress::Yes))?;
    Ok(digest)
}

pub fn load_verifying_key(path: &Path) -> Result<VerifyingKey<Bn254>, KeyError> {
    let bytes = fs::read(path).map_err(io(path))?;
    VerifyingKey::deserialize_compressed(bytes.as_slice()).map_err(|source| KeyError::Format {
        path: path.to_path_buf(),
        source,
    })
}

/// Splits a proving key file into its record (the development one for a file without a
/// header) and the key's bytes.
fn split_header(bytes: &[u8]) -> Result<(KeyRecord, &[u8]), String> {
    let Some(rest) = bytes.strip_prefix(HEADER_MAGIC) else {
        return Ok((KeyRecord::DEVELOPMENT, bytes));
    };
    let end = rest
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("the key record's line is not terminated")?;
    let record = serde_json::from_slice(&rest[..end])
        .map_err(|e| format!("the key record is not valid: {e}"))?;
    Ok((record, &rest[end + 1..]))
}

/// The record of a proving key file, read from its first lines only (what the server checks
/// before it listens, without loading the key).
pub fn read_record(path: &Path) -> Result<KeyRecord, KeyError> {
    // The record line is a few hundred bytes; a headerless file needs only the magic's length.
    let mut head = Vec::with_capacity(4096);
    fs::File::open(path)
        .map_err(io(path))?
        .take(4096)
        .read_to_end(&mut head)
        .map_err(io(path))?;
    match split_header(&head) {
        Ok((record, _)) => Ok(record),
        Err(reason) => Err(KeyError::Format {
            path: path.to_path_buf(),
            source: ark_serialize::SerializationError::IoError(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                reason,
            )),
        }),
    }
}

/// The SHA-256 of a file, read in blocks: how a reload tells a replaced key file from the one
/// loaded without parsing it.
pub fn file_sha256(path: &Path) -> Result<[u8; 32], KeyError> {
    let mut file = BufReader::with_capacity(1 << 20, fs::File::open(path).map_err(io(path))?);
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(io(path))?;
    Ok(hasher.finalize().into())
}

/// A proving key as loaded from its file.
pub struct LoadedProvingKey {
    pub key: ProvingKey<Bn254>,
    pub record: KeyRecord,
    /// The SHA-256 of the file: what the key's precomputed tables are bound to.
    pub sha256: [u8; 32],
}

/// Loads a proving key and its record, skipping the point checks when the file's digest
/// matches the one recorded next to it.
pub fn load_proving_key(paths: &KeyPaths) -> Result<LoadedProvingKey, KeyError> {
    let mut bytes = Vec::new();
    BufReader::new(fs::File::open(&paths.proving).map_err(io(&paths.proving))?)
        .read_to_end(&mut bytes)
        .map_err(io(&paths.proving))?;
    let recorded = fs::read_to_string(&paths.proving_digest).unwrap_or_default();
    let sha256: [u8; 32] = Sha256::digest(&bytes).into();
    let trusted = recorded.trim() == hex::encode(sha256);
    let validate = if trusted { Validate::No } else { Validate::Yes };
    let format = |source| KeyError::Format {
        path: paths.proving.clone(),
        source,
    };
    let (record, key) = split_header(&bytes).map_err(|reason| {
        format(ark_serialize::SerializationError::IoError(
            std::io::Error::new(std::io::ErrorKind::InvalidData, reason),
        ))
    })?;
    let key = ProvingKey::deserialize_with_mode(key, Compress::No, validate).map_err(format)?;
    Ok(LoadedProvingKey {
        key,
        record,
        sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_file_without_one_is_a_development_key() {
        let record = KeyRecord {
            origin: KeyOrigin::Ceremony {
                contributions: 3,
                final_hash: Some("ab".repeat(64)),
                zkey_sha256: "cd".repeat(32),
            },
            reduction: Reduction::Circom,
        };
        let mut bytes = HEADER_MAGIC.to_vec();
        serde_json::to_writer(&mut bytes, &record).unwrap();
        bytes.extend(b"\nKEY");
        assert_eq!(split_header(&bytes).unwrap(), (record, &b"KEY"[..]));
        for reduction in [Reduction::Libsnark, Reduction::Circom] {
            assert_eq!(serde_json::to_value(reduction).unwrap(), reduction.name());
        }
        assert_eq!(
            split_header(b"KEY").unwrap(),
            (KeyRecord::DEVELOPMENT, &b"KEY"[..])
        );
        let mut cut = HEADER_MAGIC.to_vec();
        cut.extend(b"{\"origin\"");
        assert!(split_header(&cut).is_err());
    }

    #[test]
    fn the_record_is_read_without_the_key() {
        let dir = std::env::temp_dir().join(format!("enygma-record-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.pk");
        let record = KeyRecord {
            origin: KeyOrigin::SingleParty,
            reduction: Reduction::Libsnark,
        };
        let mut bytes = HEADER_MAGIC.to_vec();
        serde_json::to_writer(&mut bytes, &record).unwrap();
        bytes.push(b'\n');
        bytes.extend(std::iter::repeat_n(7u8, 1 << 16));
        fs::write(&path, &bytes).unwrap();
        assert_eq!(read_record(&path).unwrap(), record);
        fs::write(&path, [7u8; 100]).unwrap();
        assert_eq!(read_record(&path).unwrap(), KeyRecord::DEVELOPMENT);
        let mut cut = HEADER_MAGIC.to_vec();
        cut.extend(b"{\"origin\":");
        fs::write(&path, &cut).unwrap();
        assert!(read_record(&path).is_err());
        assert!(read_record(&dir.join("none.pk")).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn single_party_keys_are_fresh_and_load_as_single_party() {
        let ownership = crate::statements::instance("ownership-721", None).unwrap();
        let (a, b) = (
            generate_random(ownership).unwrap(),
            generate_random(ownership).unwrap(),
        );
        assert_ne!(a.vk, b.vk, "two random setups gave one key");
        assert_ne!(a.vk, generate(ownership).unwrap().vk, "the development key");
        let dir = std::env::temp_dir().join(format!("enygma-single-party-{}", std::process::id()));
        let record = KeyRecord {
            origin: KeyOrigin::SingleParty,
            reduction: Reduction::Libsnark,
        };
        save(&dir, ownership, &a, &record).unwrap();
        let loaded = crate::CircuitKeys::load(&dir, ownership, MissingKeys::Refuse).unwrap();
        assert_eq!(loaded.record, record);
        assert_eq!(*loaded.verifying_key(), a.vk);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn seeds_differ_per_instance_and_are_stable() {
        let seeds: std::collections::HashSet<[u8; 32]> = crate::statements::all_instances()
            .map(development_seed)
            .collect();
        assert_eq!(seeds.len(), crate::statements::all_instances().count());
        let transfer6 = crate::statements::instance("transfer", Some(6)).unwrap();
        assert_eq!(
            hex::encode(development_seed(transfer6)),
            hex::encode(Sha256::digest(
                b"enygma-prover development keys v1: transfer k=6"
            ))
        );
    }
}
