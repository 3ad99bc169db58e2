//! The Enygma prover for the transfer, deposit and withdraw statements: strict request parsing,
//! the native checks, development keys, and Groth16 proofs from cached constraint matrices.
//!
//! Proving is split the way a server needs it:
//! - [`Prover::prepare`] parses a request and runs every check natively (milliseconds), so a
//!   bad request is refused before it costs any proving work or a queue slot;
//! - [`Prover::prove`] synthesizes only the witness (the matrices were built once per statement
//!   and k at load time) and runs the Groth16 prover on the caller's rayon pool.

pub mod fft;
pub mod groth16;
pub mod keys;
pub mod qap;
pub mod request;

use std::{
    fmt,
    path::Path,
    time::{Duration, Instant},
};

use ark_bn254::Bn254;
use ark_groth16::{Groth16, PreparedVerifyingKey, ProvingKey, VerifyingKey};
use ark_snark::SNARK;
use ark_std::UniformRand;
pub use enygma_circuit::payment::Kind;
pub use enygma_circuit::SUPPORTED_K;
use enygma_circuit::{
    payment::{constraints::PaymentCircuit, CheckFailure, PaymentInputs},
    Fr,
};
pub use enygma_verifier::ProofResponse;
pub use keys::KeyError;
pub use request::RequestError;

/// The tracing filter every binary should use: `RUST_LOG` (default `info`) with arkworks'
/// `gr1cs` spans always off. Its gadgets carry `#[tracing::instrument(target = "gr1cs")]`; with
/// those spans enabled every field operation formats its operands, which makes synthesis take
/// minutes and gigabytes instead of milliseconds.
pub fn log_filter() -> String {
    let requested = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
    format!("{requested},gr1cs=off")
}

/// Why a request was not proved. The messages are safe to return to a client: they name a
/// field or a check, never a value.
#[derive(Debug)]
pub enum ProveError {
    /// HTTP 400: the body is not a well-formed request.
    BadRequest(RequestError),
    /// HTTP 400, with the reference's message.
    UnsupportedK(usize),
    /// HTTP 422: a well-formed request whose statement is false.
    CheckFailed(CheckFailure),
    /// HTTP 500.
    Internal(String),
}

impl fmt::Display for ProveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadRequest(e) => e.fmt(f),
            Self::UnsupportedK(_) => f.write_str("k value not supported: must be between 2 and 6"),
            Self::CheckFailed(c) => c.fmt(f),
            Self::Internal(e) => write!(f, "internal error: {e}"),
        }
    }
}

impl std::error::Error for ProveError {}

/// Sizes of one statement's circuit for one k, as `enygma info` reports them.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CircuitInfo {
    #[serde(serialize_with = "kind_name")]
    pub circuit: Kind,
    pub k: usize,
    pub constraints: usize,
    pub witness_variables: usize,
    pub public_inputs: usize,
}

fn kind_name<S: serde::Serializer>(kind: &Kind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.name())
}

/// The constraint matrices of one statement and k, built once in setup mode.
pub struct CircuitShape {
    pub info: CircuitInfo,
    r1cs: groth16::R1cs,
}

impl CircuitShape {
    pub fn build(kind: Kind, k: usize) -> Result<Self, ProveError> {
        let r1cs = groth16::r1cs(PaymentCircuit::for_setup(kind, k))
            .map_err(|e| ProveError::Internal(format!("{kind} synthesis for k={k}: {e}")))?;
        Ok(Self {
            info: CircuitInfo {
                circuit: kind,
                k,
                constraints: r1cs.num_constraints,
                witness_variables: r1cs.num_witness_variables,
                public_inputs: r1cs.num_instance_variables - 1,
            },
            r1cs,
        })
    }
}

/// Everything needed to prove and verify one statement for one k.
pub struct CircuitKeys {
    pub shape: CircuitShape,
    pub proving_key: ProvingKey<Bn254>,
    prepared_vk: PreparedVerifyingKey<Bn254>,
}

impl CircuitKeys {
    pub fn verifying_key(&self) -> &VerifyingKey<Bn254> {
        &self.proving_key.vk
    }

    /// Loads the keys of `kind` for k from `dir`, creating development keys if the proving key
    /// is missing, and refuses keys that do not fit the circuit.
    pub fn load_or_create(dir: &Path, kind: Kind, k: usize) -> Result<Self, KeyError> {
        let mismatch = |reason: String| KeyError::Mismatch {
            kind,
            k,
            dir: dir.display().to_string(),
            reason,
        };
        let shape = CircuitShape::build(kind, k).map_err(|e| mismatch(e.to_string()))?;
        let paths = keys::KeyPaths::new(dir, kind, k);
        let committed_vk = paths
            .verifying
            .exists()
            .then(|| keys::load_verifying_key(&paths.verifying))
            .transpose()?;
        let proving_key = if paths.proving.exists() {
            keys::load_proving_key(&paths)?
        } else {
            tracing::warn!(circuit = kind.name(), k, dir = %dir.display(), "no proving key: creating DEVELOPMENT keys from the fixed public seed (not for production)");
            let pk = keys::generate(kind, k)?;
            if committed_vk.as_ref().is_some_and(|vk| *vk != pk.vk) {
                return Err(mismatch(
                    "the verifying key on disk is not the one the seed gives for this circuit"
                        .into(),
                ));
            }
            keys::save(dir, kind, k, &pk)?;
            pk
        };
        if committed_vk.is_some_and(|vk| vk != proving_key.vk) {
            return Err(mismatch(
                "the verifying key on disk does not belong to the proving key".into(),
            ));
        }
        let variables = shape.r1cs.num_instance_variables + shape.r1cs.num_witness_variables;
        if proving_key.vk.gamma_abc_g1.len() != shape.r1cs.num_instance_variables
            || proving_key.a_query.len() != variables
        {
            return Err(mismatch(format!(
                "the proving key is for {} public inputs and {} variables, the circuit has {} and {}",
                proving_key.vk.gamma_abc_g1.len().saturating_sub(1),
                proving_key.a_query.len(),
                shape.info.public_inputs,
                variables
            )));
        }
        let prepared_vk = ark_groth16::prepare_verifying_key(&proving_key.vk);
        Ok(Self {
            shape,
            proving_key,
            prepared_vk,
        })
    }
}

/// A malformed proof response, as a 400 that names its field.
fn proof_error(e: enygma_verifier::Error) -> RequestError {
    use enygma_verifier::Error;
    let (field, reason) = match e {
        Error::InvalidNumber { field, reason } => (field, reason),
        Error::NotOnCurve { field } => (field, "not a point on BN254".into()),
        Error::NotInSubgroup { field } => (field, "not in the prime-order subgroup".into()),
        other => ("body".into(), other.to_string()),
    };
    RequestError { field, reason }
}

/// A parsed request that passed every native check.
pub struct Prepared {
    pub kind: Kind,
    pub k: usize,
    pub sender_index: usize,
    inputs: PaymentInputs,
}

impl Prepared {
    pub fn public_inputs(&self) -> Vec<Fr> {
        self.inputs.public_inputs()
    }
}

/// Where the time of one proof went.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProveTimings {
    /// Witness synthesis (no matrices).
    pub witness: Duration,
    /// QAP witness map, the MSMs, and the self-check of the proof.
    pub prove: Duration,
}

/// Keys and matrices for every statement and supported k.
pub struct Prover {
    /// Indexed by `Kind` (in `Kind::ALL`'s order), then by k − 2.
    circuits: Vec<Vec<CircuitKeys>>,
}

/// Parses and checks a request of `kind` for k; no keys needed.
pub fn prepare(kind: Kind, k: usize, body: &[u8]) -> Result<Prepared, ProveError> {
    if !SUPPORTED_K.contains(&k) {
        return Err(ProveError::UnsupportedK(k));
    }
    let inputs = request::parse_request(kind, k, body).map_err(ProveError::BadRequest)?;
    let sender_index = inputs.check().map_err(ProveError::CheckFailed)?;
    Ok(Prepared {
        kind,
        k,
        sender_index,
        inputs,
    })
}

impl Prover {
    /// Loads (or creates) the keys of every statement and k in `keys_dir`. Logs that the keys
    /// are development keys, every time.
    pub fn load_or_create(keys_dir: &Path) -> Result<Self, KeyError> {
        tracing::warn!(
            dir = %keys_dir.display(),
            "using DEVELOPMENT keys from a single-party setup with a public seed: proofs are not secure for production"
        );
        let load = |kind: Kind, k: usize| {
            let started = Instant::now();
            let keys = CircuitKeys::load_or_create(keys_dir, kind, k)?;
            tracing::info!(
                circuit = kind.name(),
                k,
                constraints = keys.shape.info.constraints,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "keys and matrices loaded"
            );
            Ok(keys)
        };
        let circuits = Kind::ALL
            .into_iter()
            .map(|kind| {
                SUPPORTED_K
                    .map(|k| load(kind, k))
                    .collect::<Result<Vec<_>, KeyError>>()
            })
            .collect::<Result<Vec<_>, KeyError>>()?;
        Ok(Self { circuits })
    }

    pub fn circuit(&self, kind: Kind, k: usize) -> Option<&CircuitKeys> {
        let by_k = &self.circuits[Kind::ALL.iter().position(|&c| c == kind)?];
        SUPPORTED_K
            .contains(&k)
            .then(|| &by_k[k - SUPPORTED_K.start()])
    }

    pub fn info(&self) -> Vec<CircuitInfo> {
        self.circuits
            .iter()
            .flatten()
            .map(|c| c.shape.info.clone())
            .collect()
    }

    /// See [`prepare`].
    pub fn prepare(&self, kind: Kind, k: usize, body: &[u8]) -> Result<Prepared, ProveError> {
        prepare(kind, k, body)
    }

    /// Witness synthesis and the Groth16 proof, on the current rayon pool. The proof is
    /// verified before it is returned: a prover bug surfaces as an internal error, never as an
    /// invalid proof.
    pub fn prove(&self, prepared: &Prepared) -> Result<(ProofResponse, ProveTimings), ProveError> {
        let keys = self
            .circuit(prepared.kind, prepared.k)
            .ok_or(ProveError::UnsupportedK(prepared.k))?;
        let shape = &keys.shape;
        let started = Instant::now();
        let assignment = self.assignment(prepared)?;
        let internal =
            |e: ark_relations::gr1cs::SynthesisError| ProveError::Internal(e.to_string());
        let witness = started.elapsed();

        let started = Instant::now();
        let mut rng = rand::thread_rng();
        let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
        // Our assembly of ark-groth16's proof (the same proof for the same r and s, tested in
        // `groth16`), with enygma-msm's MSMs running concurrently on the caller's pool.
        let (proof, _phases) = groth16::create_proof(
            &keys.proving_key,
            r,
            s,
            &shape.r1cs.matrices,
            shape.r1cs.num_instance_variables,
            shape.r1cs.num_constraints,
            &assignment,
            groth16::MsmBackend::Enygma,
        )
        .map_err(internal)?;
        let public_inputs = &assignment[1..shape.r1cs.num_instance_variables];
        let valid =
            Groth16::<Bn254>::verify_with_processed_vk(&keys.prepared_vk, public_inputs, &proof)
                .map_err(internal)?;
        if !valid {
            return Err(ProveError::Internal("the proof did not verify".into()));
        }
        let prove = started.elapsed();
        Ok((
            ProofResponse::from_proof(&proof, public_inputs),
            ProveTimings { witness, prove },
        ))
    }

    /// The full assignment (the constant 1, the public inputs, then the witness) from a
    /// witness-only synthesis: no constraint matrices are built per request.
    pub fn assignment(&self, prepared: &Prepared) -> Result<Vec<Fr>, ProveError> {
        let shape = &self
            .circuit(prepared.kind, prepared.k)
            .ok_or(ProveError::UnsupportedK(prepared.k))?
            .shape;
        let assignment =
            groth16::full_assignment(PaymentCircuit::for_proving(prepared.inputs.clone()))
                .map_err(|e| ProveError::Internal(format!("witness synthesis: {e}")))?;
        if assignment.len() != shape.r1cs.num_instance_variables + shape.r1cs.num_witness_variables
        {
            return Err(ProveError::Internal(
                "witness size differs from the circuit's".into(),
            ));
        }
        Ok(assignment)
    }

    /// Checks a proof in the reference's response format against the verifying key of `kind`
    /// for k.
    pub fn verify(
        &self,
        kind: Kind,
        k: usize,
        response: &ProofResponse,
    ) -> Result<bool, ProveError> {
        let keys = self.circuit(kind, k).ok_or(ProveError::UnsupportedK(k))?;
        let (proof, inputs) = response
            .to_proof()
            .map_err(|e| ProveError::BadRequest(proof_error(e)))?;
        let expected = kind.num_public_inputs(k);
        if inputs.len() != expected {
            return Err(ProveError::BadRequest(RequestError {
                field: "public_signal".into(),
                reason: format!("expected {expected} elements, got {}", inputs.len()),
            }));
        }
        Groth16::<Bn254>::verify_with_processed_vk(&keys.prepared_vk, &inputs, &proof)
            .map_err(|e| ProveError::Internal(e.to_string()))
    }
}
