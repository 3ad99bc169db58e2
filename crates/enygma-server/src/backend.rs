//! The seam between the HTTP service and the prover.
//!
//! The server only needs three operations from a prover. Keeping them behind a small trait lets
//! the admission tests run against a deterministic fake (see `crate::tests`) while the binary
//! uses the real `enygma_prover::Prover` through [`crate::prover::RealBackend`].

pub use enygma_prover::keys::KeyRecord;
pub use enygma_prover::statements::Instance;
pub use enygma_prover::KeyReload;
use enygma_prover::ProveError;
use std::time::Duration;

/// A prover as the server sees it. Every method is synchronous and may block: the server calls
/// `prepare` and `verify` on tokio's blocking pool and `prove` on a dedicated rayon pool.
pub trait ProofBackend: Send + Sync + 'static {
    /// A parsed request whose checks all passed, ready to prove.
    type Prepared: Send + Sync + 'static;

    /// Strict parse of a request body of statement instance `instance` and the native
    /// evaluation of every check. Cheap.
    fn prepare(&self, instance: Instance, body: &[u8]) -> Result<Self::Prepared, BackendError>;

    /// Witness synthesis and the Groth16 proof. CPU-heavy; uses the current rayon pool.
    fn prove(&self, prepared: &Self::Prepared) -> Result<ProofOutput, BackendError>;

    /// Verifies a proof of `instance` given as the JSON body that its prove route answered.
    fn verify(&self, instance: Instance, proof_json: &[u8]) -> Result<bool, BackendError>;

    /// A valid request whose proof stands for the traffic, prepared: what the start-up
    /// calibration of the service-time estimate proves. `None` when this prover has none
    /// (the tests' fakes), and the estimate keeps its seed.
    fn calibration_request(&self) -> Option<(Instance, Self::Prepared)> {
        None
    }

    /// What each loaded key is (its origin, QAP reduction and file digest), in the order of
    /// the hosted instances: what `/readyz` and the `enygma_key_info` metric report. A prover
    /// without key files (the tests' fakes) reports none.
    fn keys(&self) -> Vec<LoadedKey> {
        Vec::new()
    }

    /// Replaces the keys whose files changed, each once loaded and checked (see
    /// `enygma_prover::Prover::reload_keys`), and with `hosted` (a `--circuits @FILE` list read
    /// again) makes the hosted set that list: instances added are loaded and checked as at
    /// start, instances gone are retired (see `enygma_prover::Prover::reload_hosted`). What it
    /// did with each instance. Slow: called on the blocking pool. A prover without key files
    /// has nothing to reload.
    fn reload_keys(&self, _hosted: Option<&[Instance]>) -> Vec<(Instance, KeyReload)> {
        Vec::new()
    }

    /// Bytes the precomputed MSM tables of `instance` take (built or not), or `None` when this
    /// prover has no tables for it: the table cache ([`crate::tables`]) leaves it alone.
    fn table_bytes(&self, _instance: Instance) -> Option<usize> {
        None
    }

    /// Reads the tables of `instance` from where they were kept by an earlier run, if they were
    /// kept for this key; proofs that start afterwards use them. Returns whether it did: a
    /// fraction of a second of I/O and hashing, so it runs at normal priority, before any build.
    fn read_kept_tables(&self, _instance: Instance) -> bool {
        false
    }

    /// Builds the tables of `instance` on the current rayon pool (and keeps them where
    /// `read_kept_tables` looks; it is called after that found none); proofs that start
    /// afterwards use them. Slow (seconds); never called on a prove pool.
    fn build_tables(&self, _instance: Instance) -> Result<(), BackendError> {
        Err(BackendError::Internal("this prover has no tables".into()))
    }

    /// Drops the tables of `instance`; returns the bytes they held.
    fn drop_tables(&self, _instance: Instance) -> usize {
        0
    }
}

/// A loaded key as `/readyz` and `enygma_key_info` report it.
#[derive(Clone, Debug)]
pub struct LoadedKey {
    pub instance: Instance,
    pub record: KeyRecord,
    /// The SHA-256 of its proving key file.
    pub sha256: [u8; 32],
}

/// A finished proof: the 200 body, already serialised, and where the time went.
#[derive(Clone, Debug)]
pub struct ProofOutput {
    pub json: Vec<u8>,
    pub witness: Duration,
    pub prove: Duration,
    /// Whether the proof used precomputed MSM tables.
    pub precomputed: bool,
    /// The SHA-256 of the proving key file the proof was made with, when the prover has key
    /// files: answered in a header, so that a client can tell which key a proof is for while
    /// keys are replaced.
    pub key_sha256: Option<[u8; 32]>,
}

/// Why a request could not be served. Messages must be safe to return and log: they may name a
/// field or a check, never a value taken from the request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// Malformed JSON, missing or mis-shaped field, non-decimal or non-canonical value: 400.
    #[error("{0}")]
    BadRequest(String),
    /// A well-formed request that fails one of the statement's rules: 422.
    #[error("{0}")]
    CheckFailed(String),
    /// Anything else: 500.
    #[error("{0}")]
    Internal(String),
    /// The instance is not hosted (any more): 404, as a route of an instance never hosted.
    /// A request that passed the route's check just before its instance was retired gets it
    /// from its checks.
    #[error("{0}")]
    NotHosted(String),
}

/// The prover's error messages name fields and checks, never values: safe to return.
impl From<ProveError> for BackendError {
    fn from(e: ProveError) -> Self {
        let message = e.to_string();
        match e {
            ProveError::BadRequest(_) => BackendError::BadRequest(message),
            ProveError::CheckFailed(_) => BackendError::CheckFailed(message),
            ProveError::Internal(_) => BackendError::Internal(message),
            // The route's own 404, word for word.
            ProveError::NotLoaded(instance) => {
                BackendError::NotHosted(crate::hosting::not_hosted(instance))
            }
        }
    }
}
