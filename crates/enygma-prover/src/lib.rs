//! The Enygma prover: the statement registry ([`statements`]), strict request parsing, the
//! native checks, development keys, and Groth16 proofs from cached constraint matrices.
//!
//! Proving is split the way a server needs it:
//! - [`prepare`] parses a request of one statement [`Instance`] and runs every check natively
//!   (milliseconds), so a bad request is refused before it costs any proving work or a queue
//!   slot;
//! - [`Prover::prove`] synthesizes only the witness (the matrices were built once per instance
//!   at load time) and runs the Groth16 prover on the caller's rayon pool.
//!
//! What a loaded instance holds: its proving key without B's identity points
//! ([`proving_key::SparseProvingKey`]) and its constraint matrices in a compact form
//! ([`matrix::CompactMatrix`]), which together keep a server hosting every instance under the
//! reference's resident memory for one circuit (`benches/results/2026-12-04-sparse-b.md`).

pub mod cache;
pub mod ceremony;
pub mod fft;
#[doc(hidden)]
pub mod fuzzing;
pub mod groth16;
pub mod keys;
pub mod matrix;
pub mod proving_key;
pub mod qap;
pub mod request;
pub mod statements;
pub mod wipe;

use std::{
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::{Duration, Instant},
};

use ark_bn254::Bn254;
use ark_groth16::{PreparedVerifyingKey, VerifyingKey};
use ark_std::UniformRand;
use enygma_circuit::Fr;
/// The field arithmetic of the MSMs' bucket additions and of the witness map's transforms on
/// this CPU (AVX-512 IFMA where detected), for the server's start-up log.
pub use enygma_msm::Arithmetic as MsmArithmetic;
pub use enygma_verifier::ProofResponse;
pub use keys::{KeyError, MissingKeys};
pub use request::RequestError;
pub use statements::Instance;

/// The tracing filter every binary should use: `RUST_LOG` (default `info`) with arkworks'
/// `gr1cs` spans always off. Its gadgets carry `#[tracing::instrument(target = "gr1cs")]`; with
/// those spans enabled every field operation formats its operands, which makes synthesis take
/// minutes and gigabytes instead of milliseconds.
pub fn log_filter() -> String {
    let requested = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
    format!("{requested},gr1cs=off")
}

/// Why a request was not proved. The messages are safe to return to a client: they name a
/// field or a rule, never a value.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// HTTP 400: the body is not a well-formed request.
    #[error(transparent)]
    BadRequest(#[from] RequestError),
    /// HTTP 422: a well-formed request whose statement is false: the statement's
    /// [`statements::Statement::CheckFailure`], whose message names the rule.
    #[error("{0}")]
    CheckFailed(Box<dyn std::error::Error + Send + Sync>),
    /// HTTP 500.
    #[error("internal error: {0}")]
    Internal(String),
    /// HTTP 404 in a server: the instance's keys are not loaded: it is not hosted, or it was
    /// retired ([`Prover::reload_hosted`]) before this request held its keys.
    #[error("the keys of {0} are not loaded")]
    NotLoaded(Instance),
}

/// Sizes of one instance's circuit, as `enygma info` reports them.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CircuitInfo {
    /// The statement's name.
    pub circuit: &'static str,
    /// Its size, or `null` for a statement without sizes.
    pub k: Option<usize>,
    pub constraints: usize,
    pub witness_variables: usize,
    pub public_inputs: usize,
    /// Bytes of the fixed-base MSM tables of this instance's proving key, when precomputed
    /// (`enygma-server --precompute`).
    pub precomputed_table_bytes: usize,
}

/// The constraint matrices of one instance, built once in setup mode.
pub struct CircuitShape {
    pub instance: Instance,
    pub info: CircuitInfo,
    r1cs: groth16::R1cs<matrix::CompactMatrix>,
}

impl CircuitShape {
    pub fn build(instance: Instance) -> Result<Self, ProveError> {
        let r1cs = groth16::r1cs(instance.circuit_for_setup())
            .and_then(groth16::R1cs::compact)
            .map_err(|e| ProveError::Internal(format!("{instance} synthesis: {e}")))?;
        Ok(Self::from_r1cs(instance, r1cs))
    }

    fn from_r1cs(instance: Instance, r1cs: groth16::R1cs<matrix::CompactMatrix>) -> Self {
        Self {
            instance,
            info: CircuitInfo {
                circuit: instance.name(),
                k: instance.k(),
                constraints: r1cs.num_constraints,
                witness_variables: r1cs.num_witness_variables,
                public_inputs: r1cs.num_instance_variables - 1,
                precomputed_table_bytes: precomputed_table_bytes(&r1cs),
            },
            r1cs,
        }
    }

    /// [`CircuitShape::build`], or the matrices kept in `cache_dir` for this circuit
    /// ([`cache`]): a synthesis is most of a start. Matrices synthesized are kept there for the
    /// next start; a file that is stale, damaged or cannot be written is logged and costs the
    /// synthesis only.
    pub fn load_or_build(instance: Instance, cache_dir: Option<&Path>) -> Result<Self, ProveError> {
        let Some(dir) = cache_dir else {
            return Self::build(instance);
        };
        let stem = instance.key_stem();
        let path = cache::path(dir, &stem, cache::Kind::Matrices);
        let binding = cache::matrices_binding(&stem);
        if let Some(r1cs) = cache::read_kept(&path, cache::Kind::Matrices, &binding, &instance) {
            return Ok(Self::from_r1cs(instance, r1cs));
        }
        let shape = Self::build(instance)?;
        cache::keep(
            &path,
            cache::Kind::Matrices,
            &binding,
            &shape.r1cs,
            &instance,
        );
        Ok(shape)
    }

    /// Heap bytes of the constraint matrices kept for proving.
    pub fn matrix_bytes(&self) -> usize {
        self.r1cs.matrices.iter().map(|m| m.memory_bytes()).sum()
    }
}

/// What [`groth16::PrecomputedQueries::memory_bytes_for_key`] gives for the proving key of
/// `r1cs`, from its sizes: A over every variable, B over the variables of its B matrix (the
/// key's other B points are the identity and not kept: [`groth16::SparseProvingKey`]), L over
/// the witness, H over the QAP domain less one.
fn precomputed_table_bytes(r1cs: &groth16::R1cs<matrix::CompactMatrix>) -> usize {
    let variables = r1cs.num_instance_variables + r1cs.num_witness_variables;
    let domain = (r1cs.num_constraints + r1cs.num_instance_variables).next_power_of_two();
    groth16::PrecomputedQueries::memory_bytes_for(
        variables,
        r1cs.matrices[1].num_variables_used(),
        domain - 1,
        r1cs.num_witness_variables,
    )
}

/// Everything needed to prove and verify one instance.
pub struct CircuitKeys {
    pub shape: CircuitShape,
    pub proving_key: groth16::SparseProvingKey,
    prepared_vk: PreparedVerifyingKey<Bn254>,
    /// Fixed-base tables of the proving key's MSM bases, when built ([`Prover::precompute`] at
    /// start, [`Prover::build_tables`] later): proofs take 0.67-0.77x the time for about
    /// `(D + 2V + 3B)` KiB, `B` the variables of the B query
    /// (`benches/results/2026-12-03-msm-techniques.md`). Shared, so that a proof keeps the
    /// tables it started with when they are dropped meanwhile ([`Prover::drop_tables`]): their
    /// memory goes when the last such proof ends.
    tables: RwLock<Option<Arc<groth16::PrecomputedQueries>>>,
    /// Where the key's toxic waste went and the QAP reduction its H query is for (its file's
    /// [`keys::KeyRecord`]).
    pub record: keys::KeyRecord,
    /// The SHA-256 of the proving key's file, which its kept tables are bound to
    /// ([`cache`]).
    pub key_sha256: [u8; 32],
}

impl CircuitKeys {
    pub fn verifying_key(&self) -> &VerifyingKey<Bn254> {
        &self.proving_key.vk
    }

    /// Bytes the precomputed MSM tables of this instance hold, or would hold once built.
    pub fn precomputed_table_bytes(&self) -> usize {
        self.tables().map_or_else(
            || groth16::PrecomputedQueries::memory_bytes_for_key(&self.proving_key),
            |t| t.memory_bytes(),
        )
    }

    /// Whether proofs of this instance (those that start now) use precomputed MSM tables.
    pub fn is_precomputed(&self) -> bool {
        self.tables().is_some()
    }

    /// The tables, if built, for one proof to hold until it ends.
    fn tables(&self) -> Option<Arc<groth16::PrecomputedQueries>> {
        // A panic while the lock was held cannot leave the Option half-written: use it as is.
        self.tables
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_tables(
        &self,
        tables: Option<Arc<groth16::PrecomputedQueries>>,
    ) -> Option<Arc<groth16::PrecomputedQueries>> {
        let mut slot = self.tables.write().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *slot, tables)
    }

    /// Loads the keys of `instance` from `dir`, creating development keys if the proving key is
    /// missing, and refuses keys that do not fit the circuit.
    pub fn load_or_create(dir: &Path, instance: Instance) -> Result<Self, KeyError> {
        Self::load(dir, instance, MissingKeys::Create)
    }

    /// Loads the keys of `instance` from `dir`; a missing proving key is created as a
    /// development key or refused, as `missing` says. Keys that do not fit the circuit are
    /// refused.
    pub fn load(dir: &Path, instance: Instance, missing: MissingKeys) -> Result<Self, KeyError> {
        Self::load_cached(dir, instance, missing, None)
    }

    /// [`CircuitKeys::load`], reading the instance's matrices from `cache_dir` when kept there
    /// for this circuit, and keeping them there after a synthesis otherwise.
    pub fn load_cached(
        dir: &Path,
        instance: Instance,
        missing: MissingKeys,
        cache_dir: Option<&Path>,
    ) -> Result<Self, KeyError> {
        let mismatch = |reason: String| KeyError::Mismatch {
            stem: instance.key_stem(),
            circuit: instance.name(),
            dir: dir.display().to_string(),
            reason,
        };
        let paths = keys::KeyPaths::new(dir, instance);
        if missing == MissingKeys::Refuse && !paths.proving.exists() {
            return Err(KeyError::Missing {
                stem: instance.key_stem(),
                path: paths.proving,
            });
        }
        let shape = CircuitShape::load_or_build(instance, cache_dir)
            .map_err(|e| mismatch(e.to_string()))?;
        let committed_vk = paths
            .verifying
            .exists()
            .then(|| keys::load_verifying_key(&paths.verifying))
            .transpose()?;
        let keys::LoadedProvingKey {
            key: proving_key,
            record,
            sha256: key_sha256,
        } = if paths.proving.exists() {
            keys::load_proving_key(&paths)?
        } else {
            tracing::warn!(circuit = %instance, dir = %dir.display(), "no proving key: creating DEVELOPMENT keys from the fixed public seed (not for production)");
            let pk = keys::generate(instance)?;
            if committed_vk.as_ref().is_some_and(|vk| *vk != pk.vk) {
                return Err(mismatch(
                    "the verifying key on disk is not the one the seed gives for this circuit"
                        .into(),
                ));
            }
            let sha256 = keys::save(dir, instance, &pk, &keys::KeyRecord::DEVELOPMENT)?;
            keys::LoadedProvingKey {
                key: pk,
                record: keys::KeyRecord::DEVELOPMENT,
                sha256,
            }
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
        let domain =
            (shape.r1cs.num_constraints + shape.r1cs.num_instance_variables).next_power_of_two();
        let h_expected = record.reduction.h_query_len(domain);
        if proving_key.h_query.len() != h_expected {
            return Err(mismatch(format!(
                "the proving key's H query has {} points, the {:?} reduction of this circuit needs {h_expected}",
                proving_key.h_query.len(),
                record.reduction
            )));
        }
        let proving_key = groth16::SparseProvingKey::with_reduction(proving_key, record.reduction)
            .map_err(|e| mismatch(e.to_string()))?;
        let mut shape = shape;
        if record.reduction == qap::Reduction::Libsnark {
            debug_assert_eq!(
                shape.info.precomputed_table_bytes,
                groth16::PrecomputedQueries::memory_bytes_for_key(&proving_key),
                "the table sizes enygma info reports are the key's"
            );
        } else {
            shape.info.precomputed_table_bytes =
                groth16::PrecomputedQueries::memory_bytes_for_key(&proving_key);
        }
        Ok(Self {
            shape,
            proving_key,
            prepared_vk,
            tables: RwLock::new(None),
            record,
            key_sha256,
        })
    }
}

/// `load(instance)` of every instance, in their order, on as many threads as the process may
/// use: an instance's load (its circuit synthesized in setup mode, its key read and digested)
/// runs on one core, so a server hosting all 18 instances is ready in about half the time on
/// two. Scoped threads rather than the rayon pool: at start the pools are not yet sized for
/// proving, and the loads must not wait behind proofs. The first error is returned; the other
/// loads finish first (they hold no lock and write nothing but a missing development key).
fn load_in_parallel<T: Send>(
    instances: &[Instance],
    load: impl Fn(Instance) -> Result<T, KeyError> + Sync,
) -> Result<Vec<T>, KeyError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(instances.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let mut loaded: Vec<(usize, Result<T, KeyError>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&instance) = instances.get(i) else {
                            break mine;
                        };
                        mine.push((i, load(instance)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    loaded.sort_by_key(|(i, _)| *i);
    loaded.into_iter().map(|(_, result)| result).collect()
}

/// The keys of `instance` ([`CircuitKeys::load_cached`]), with the log lines of a load: what
/// was loaded, and a warning, every time, about a key whose toxic waste someone may know. The
/// same at start and for an instance added while serving.
fn load_logged(
    keys_dir: &Path,
    instance: Instance,
    missing: MissingKeys,
    cache_dir: Option<&Path>,
) -> Result<CircuitKeys, KeyError> {
    let started = Instant::now();
    let keys = CircuitKeys::load_cached(keys_dir, instance, missing, cache_dir)?;
    let origin = &keys.record.origin;
    tracing::info!(
        circuit = %instance,
        constraints = keys.shape.info.constraints,
        origin = %origin,
        reduction = keys.record.reduction.name(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "keys and matrices loaded"
    );
    match origin {
        keys::KeyOrigin::DevelopmentSeed => tracing::warn!(
            circuit = %instance,
            "DEVELOPMENT keys from a public seed: anyone can forge proofs for them; not for production"
        ),
        keys::KeyOrigin::SingleParty => tracing::warn!(
            circuit = %instance,
            "single-party keys: whoever ran their setup could forge proofs; for staging, not for production"
        ),
        keys::KeyOrigin::Ceremony { .. } => {}
    }
    Ok(keys)
}

/// Bytes in MiB with one decimal, for log fields.
fn mib(bytes: usize) -> f64 {
    (bytes as f64 / (1 << 20) as f64 * 10.0).round() / 10.0
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

/// A parsed request that passed every native check of its statement. Its `Debug` shows the
/// public values only; its private ones are zeroized when it is dropped.
#[derive(Debug)]
pub struct Prepared {
    pub instance: Instance,
    /// The statement's own inputs type, erased.
    pub(crate) inputs: statements::Inputs,
    /// The keys loaded when [`Prover::prepare`] checked the request, for its proof should the
    /// instance be retired while it waits for a slot; none from the key-free [`prepare`].
    held: HeldKeys,
}

/// The keys a prepared request holds ([`Prepared`]). Its `Debug` names the key only.
struct HeldKeys(Option<Arc<CircuitKeys>>);

impl std::fmt::Debug for HeldKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(keys) => write!(f, "HeldKeys({})", hex::encode(&keys.key_sha256[..8])),
            None => f.write_str("HeldKeys(none)"),
        }
    }
}

impl Prepared {
    /// The public inputs in the circuit's order.
    pub fn public_inputs(&self) -> Result<Vec<Fr>, ProveError> {
        self.instance
            .statement()
            .public_inputs(&self.inputs)
            .ok_or_else(|| foreign_inputs(self.instance))
    }

    /// The statement's inputs, for a caller that knows their type (`PaymentInputs` for the
    /// payment statements).
    pub fn inputs<T: 'static>(&self) -> Option<&T> {
        (*self.inputs).as_any().downcast_ref()
    }
}

/// The full assignment of a prepared request (the constant 1, the public inputs in the
/// statement's order, then the private wires: the wire order of
/// [`ceremony::r1cs_file`]), from a witness-only synthesis; no keys needed. Its public inputs
/// are checked to be the statement's. Wiped when dropped.
pub fn full_assignment(prepared: &Prepared) -> Result<wipe::Wiped<Fr>, ProveError> {
    let instance = prepared.instance;
    let circuit = instance
        .statement()
        .circuit_for_proving(&prepared.inputs)
        .ok_or_else(|| foreign_inputs(instance))?;
    let assignment = groth16::full_assignment(circuit)
        .map_err(|e| ProveError::Internal(format!("witness synthesis: {e}")))?;
    let public = prepared.public_inputs()?;
    if assignment.get(1..=public.len()) != Some(public.as_slice()) {
        return Err(ProveError::Internal(format!(
            "the {instance} circuit's public inputs differ from the statement's"
        )));
    }
    Ok(assignment)
}

fn foreign_inputs(instance: Instance) -> ProveError {
    ProveError::Internal(format!("inputs of another statement given to {instance}"))
}

/// Where the time of one proof went.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProveTimings {
    /// Witness synthesis (no matrices).
    pub witness: Duration,
    /// QAP witness map, the MSMs, and the self-check of the proof.
    pub prove: Duration,
    /// Whether the MSMs used the instance's precomputed tables.
    pub precomputed: bool,
    /// The SHA-256 of the proving key's file the proof was made with (and checked against):
    /// with keys replaced while serving, which of them a proof is for.
    pub key_sha256: [u8; 32],
    /// The proof's own phases (part of `prove`): where a proof's time went, for benchmarks.
    pub phases: groth16::PhaseTimings,
}

/// Keys and matrices for a set of instances (by default all of them).
pub struct Prover {
    /// The hosted instances' keys, in registry order. Each is replaceable while serving
    /// ([`Prover::reload_keys`]), and the set changes with [`Prover::reload_hosted`]: a proof
    /// holds the keys it started with (a prepared request those it was checked with) until it
    /// ends, so nothing here waits for proofs. A panic while the lock was held cannot leave the
    /// list half-written (each change is one push, removal or assignment): it is used as is.
    circuits: RwLock<Vec<Arc<CircuitKeys>>>,
    /// Where matrices and tables are kept between runs ([`cache`]); none: derived every time.
    cache_dir: Option<PathBuf>,
    /// Held by [`Prover::reload_keys`]: two reloads at once would load the same keys twice.
    reloading: std::sync::Mutex<()>,
}

/// What [`Prover::reload_keys`] or [`Prover::reload_hosted`] did with one instance's keys.
#[derive(Clone, Debug)]
pub enum KeyReload {
    /// Its proving key file is the one loaded.
    Unchanged,
    /// Replaced: proofs that start from now on use the new keys. `tables`: the old keys had MSM
    /// tables, and the new keys got theirs before the switch.
    Replaced {
        previous: [u8; 32],
        now: [u8; 32],
        record: keys::KeyRecord,
        tables: bool,
    },
    /// Not replaced: the loaded keys stay, for this reason (it names files and checks, never
    /// key material). For an instance the reload was to add: not added, it stays unhosted.
    Refused(String),
    /// Newly hosted: its keys loaded and checked as at start; proofs of it can start now.
    Added {
        now: [u8; 32],
        record: keys::KeyRecord,
    },
    /// No longer hosted: new requests are refused ([`ProveError::NotLoaded`]); the proofs
    /// running or prepared finish with the keys they hold. `table_bytes`: the MSM tables
    /// dropped, freed once those proofs end.
    Retired { table_bytes: usize },
}

/// Parses and checks a request of `instance`; no keys needed.
pub fn prepare(instance: Instance, body: &[u8]) -> Result<Prepared, ProveError> {
    let inputs = instance.statement().parse_and_check(instance.k(), body)?;
    Ok(Prepared {
        instance,
        inputs,
        held: HeldKeys(None),
    })
}

impl Prover {
    /// Loads (or creates) the keys of every instance hosted by default (`statements::instances`)
    /// in `keys_dir`.
    pub fn load_or_create(keys_dir: &Path) -> Result<Self, KeyError> {
        let all: Vec<Instance> = statements::instances().collect();
        Self::load(keys_dir, &all, MissingKeys::Create)
    }

    /// Loads the keys of `instances` from `keys_dir`, creating missing ones as development keys
    /// or refusing to, as `missing` says. Logs each key's origin, and warns, every time, about
    /// each key whose toxic waste someone may know.
    pub fn load(
        keys_dir: &Path,
        instances: &[Instance],
        missing: MissingKeys,
    ) -> Result<Self, KeyError> {
        Self::load_cached(keys_dir, instances, missing, None)
    }

    /// [`Prover::load`] with a cache directory ([`cache`]): the matrices are read from there
    /// when kept for these circuits, and so are the MSM tables that [`Prover::precompute`] and
    /// [`Prover::build_tables`] would build when kept for these keys; what is derived is kept
    /// there for the next start. A directory that cannot be written costs only the derivation.
    pub fn load_cached(
        keys_dir: &Path,
        instances: &[Instance],
        missing: MissingKeys,
        cache_dir: Option<PathBuf>,
    ) -> Result<Self, KeyError> {
        let circuits = load_in_parallel(instances, |instance| {
            load_logged(keys_dir, instance, missing, cache_dir.as_deref())
        })?;
        Ok(Self {
            circuits: RwLock::new(circuits.into_iter().map(Arc::new).collect()),
            cache_dir,
            reloading: std::sync::Mutex::new(()),
        })
    }

    /// Reads the tables of `instance` from the cache directory, if kept there for its key, and
    /// lets the proofs that start from then on use them. Returns their bytes when the instance
    /// has tables afterwards (read now or before), `None` when none were kept (or no cache
    /// directory is set, or the instance is not loaded).
    pub fn read_kept_tables(&self, instance: Instance) -> Option<usize> {
        let keys = self.circuit(instance)?;
        if let Some(tables) = keys.tables() {
            return Some(tables.memory_bytes());
        }
        let tables = self.kept_tables(&keys)?;
        let bytes = tables.memory_bytes();
        keys.set_tables(Some(Arc::new(tables)));
        Some(bytes)
    }

    /// The tables kept in the cache for `keys`, if any. Logs why a kept file was not used.
    fn kept_tables(&self, keys: &CircuitKeys) -> Option<groth16::PrecomputedQueries> {
        let instance = keys.shape.instance;
        let path = self.tables_path(instance)?;
        cache::read_kept(&path, cache::Kind::Tables, &keys.key_sha256, &instance)
    }

    /// Where the tables of `instance` are kept, if a cache directory is set.
    fn tables_path(&self, instance: Instance) -> Option<PathBuf> {
        let dir = self.cache_dir.as_ref()?;
        Some(cache::path(dir, &instance.key_stem(), cache::Kind::Tables))
    }

    /// The tables of `keys`: read from the cache directory when kept there for this key, built
    /// otherwise (and then kept there).
    fn obtain_tables(&self, keys: &CircuitKeys) -> groth16::PrecomputedQueries {
        self.kept_tables(keys)
            .unwrap_or_else(|| self.derive_tables(keys))
    }

    /// The tables of `keys`, built, and kept in the cache directory if one is set.
    fn derive_tables(&self, keys: &CircuitKeys) -> groth16::PrecomputedQueries {
        let tables = groth16::PrecomputedQueries::new(&keys.proving_key);
        let instance = keys.shape.instance;
        if let Some(path) = self.tables_path(instance) {
            cache::keep(
                &path,
                cache::Kind::Tables,
                &keys.key_sha256,
                &tables,
                &instance,
            );
        }
        tables
    }

    /// Builds the fixed-base MSM tables of `instances` ([`groth16::PrecomputedQueries`]), so
    /// that their proofs use them; on the current rayon pool, seconds per instance. Each
    /// table's size is logged before it is built, and the total after. An instance that is not
    /// loaded is an error (naming it); one already precomputed is left as it is.
    pub fn precompute(&mut self, instances: &[Instance]) -> Result<(), ProveError> {
        if let Some(missing) = instances.iter().find(|&&i| self.circuit(i).is_none()) {
            return Err(ProveError::Internal(format!(
                "cannot precompute the tables of {missing}: its keys are not loaded"
            )));
        }
        let mut total = 0;
        for keys in self
            .loaded()
            .into_iter()
            .filter(|c| instances.contains(&c.shape.instance) && !c.is_precomputed())
        {
            let bytes = keys.precomputed_table_bytes();
            let started = Instant::now();
            tracing::info!(
                circuit = %keys.shape.instance,
                table_mib = mib(bytes),
                "building precomputed MSM tables"
            );
            keys.set_tables(Some(Arc::new(self.obtain_tables(&keys))));
            total += bytes;
            tracing::info!(
                circuit = %keys.shape.instance,
                table_mib = mib(bytes),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "precomputed MSM tables built"
            );
        }
        if !instances.is_empty() {
            tracing::info!(
                circuits = instances.len(),
                table_mib = mib(total),
                "precomputed MSM tables ready"
            );
        }
        Ok(())
    }

    /// Builds the fixed-base MSM tables of one loaded instance on the current rayon pool (or
    /// reads them from the cache directory, when kept there for this key) and lets the proofs
    /// that start from then on use them (those already running go on without). Returns the
    /// tables' bytes. Tables already built are kept as they are.
    pub fn build_tables(&self, instance: Instance) -> Result<usize, ProveError> {
        self.install_tables(instance, Self::obtain_tables)
    }

    /// [`Prover::build_tables`] without looking in the cache directory first, for a caller
    /// that just did ([`Prover::read_kept_tables`]): a kept file that could not be used is not
    /// read a second time. The tables built are kept there.
    pub fn build_fresh_tables(&self, instance: Instance) -> Result<usize, ProveError> {
        self.install_tables(instance, Self::derive_tables)
    }

    /// The tables `obtain` gives for the keys of `instance` now, set on those keys.
    fn install_tables(
        &self,
        instance: Instance,
        obtain: fn(&Self, &CircuitKeys) -> groth16::PrecomputedQueries,
    ) -> Result<usize, ProveError> {
        loop {
            let keys = self.keys(instance)?;
            if let Some(tables) = keys.tables() {
                return Ok(tables.memory_bytes());
            }
            let tables = obtain(self, &keys);
            let bytes = tables.memory_bytes();
            keys.set_tables(Some(Arc::new(tables)));
            // Keys replaced during the build ([`Prover::reload_keys`]) got the old keys'
            // tables: build the new ones'.
            if Arc::ptr_eq(&keys, &self.keys(instance)?) {
                return Ok(bytes);
            }
        }
    }

    /// Loads again the key of every loaded instance whose proving key file changed in
    /// `keys_dir` (its SHA-256 differs from the loaded key's), and switches to it once it is
    /// loaded and checked: it must fit the circuit and its verifying key file, as at start, and
    /// pass `accept` (what `--require-ceremony-keys` asks of a key). The old keys' MSM tables are
    /// replaced by the new keys' (read from the cache directory or built) before the switch.
    /// Proofs already running finish with the keys they started with; proofs that start after
    /// the switch use the new ones. An instance whose new key file is missing, unreadable or
    /// refused keeps its loaded keys. One reload at a time; slow (a load per changed key, and a
    /// table build where tables were resident and none are kept for the new key).
    pub fn reload_keys(
        &self,
        keys_dir: &Path,
        accept: impl Fn(Instance, &keys::KeyRecord) -> Result<(), String>,
    ) -> Vec<(Instance, KeyReload)> {
        let hosted: Vec<Instance> = self.instances().collect();
        self.reload_hosted(keys_dir, &hosted, MissingKeys::Refuse, accept)
    }

    /// [`Prover::reload_keys`], and the hosted set made `hosted`: an instance loaded but not in
    /// `hosted` is retired (its tables dropped; proofs running or prepared finish with the keys
    /// they hold, new ones are refused with [`ProveError::NotLoaded`]); one in `hosted` but not
    /// loaded is loaded and checked as at start ([`CircuitKeys::load_cached`], a missing proving
    /// key created or refused as `missing` says, and `accept` on its record before and after
    /// the load), then hosted, without tables (the caller's table policy builds them). One
    /// refused stays unhosted. The result has a line per instance loaded before or in `hosted`,
    /// retirements first, in registry order within each kind.
    pub fn reload_hosted(
        &self,
        keys_dir: &Path,
        hosted: &[Instance],
        missing: MissingKeys,
        accept: impl Fn(Instance, &keys::KeyRecord) -> Result<(), String>,
    ) -> Vec<(Instance, KeyReload)> {
        let _one_at_a_time = self.reloading.lock().unwrap_or_else(|e| e.into_inner());
        let loaded = self.loaded();
        let mut results: Vec<(Instance, KeyReload)> = loaded
            .iter()
            .filter(|keys| !hosted.contains(&keys.shape.instance))
            .map(|keys| (keys.shape.instance, self.retire(keys)))
            .collect();
        for &instance in hosted {
            let reload = match loaded.iter().find(|k| k.shape.instance == instance) {
                Some(old) => self.reload_one(old, keys_dir, &accept),
                None => self.add_one(instance, keys_dir, missing, &accept),
            };
            results.push((instance, reload));
        }
        results
    }

    /// Takes `keys` out of the hosted set and drops their tables (see [`KeyReload::Retired`]).
    fn retire(&self, keys: &Arc<CircuitKeys>) -> KeyReload {
        self.write_circuits().retain(|c| !Arc::ptr_eq(c, keys));
        // The keys stay alive while a prepared request holds them; the tables need not.
        let table_bytes = keys.set_tables(None).map_or(0, |t| t.memory_bytes());
        KeyReload::Retired { table_bytes }
    }

    /// Loads and checks the keys of `instance`, not hosted, and hosts them in registry order.
    fn add_one(
        &self,
        instance: Instance,
        keys_dir: &Path,
        missing: MissingKeys,
        accept: &impl Fn(Instance, &keys::KeyRecord) -> Result<(), String>,
    ) -> KeyReload {
        let refused = |why: String| KeyReload::Refused(why);
        let paths = keys::KeyPaths::new(keys_dir, instance);
        // A key file refused by its record costs no load (a synthesis, seconds for k = 6).
        if paths.proving.exists() {
            match keys::read_record(&paths.proving) {
                Ok(record) => {
                    if let Err(why) = accept(instance, &record) {
                        return refused(why);
                    }
                }
                Err(e) => return refused(e.to_string()),
            }
        }
        let new = match load_logged(keys_dir, instance, missing, self.cache_dir.as_deref()) {
            Ok(new) => new,
            Err(e) => return refused(e.to_string()),
        };
        // Created as a development key, or changed since its record was read: what is served.
        if let Err(why) = accept(instance, &new.record) {
            return refused(why);
        }
        let added = KeyReload::Added {
            now: new.key_sha256,
            record: new.record.clone(),
        };
        let order = |i: Instance| statements::all_instances().position(|j| j == i);
        let mut circuits = self.write_circuits();
        let at = circuits.partition_point(|c| order(c.shape.instance) < order(instance));
        circuits.insert(at, Arc::new(new));
        added
    }

    fn write_circuits(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Arc<CircuitKeys>>> {
        self.circuits.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Switches the hosted keys of `new`'s instance to `new`, if it is still hosted.
    fn switch(&self, new: Arc<CircuitKeys>) {
        let instance = new.shape.instance;
        if let Some(slot) = self
            .write_circuits()
            .iter_mut()
            .find(|c| c.shape.instance == instance)
        {
            *slot = new;
        }
    }

    fn reload_one(
        &self,
        old: &Arc<CircuitKeys>,
        keys_dir: &Path,
        accept: &impl Fn(Instance, &keys::KeyRecord) -> Result<(), String>,
    ) -> KeyReload {
        let instance = old.shape.instance;
        let paths = keys::KeyPaths::new(keys_dir, instance);
        let refused = |why: String| KeyReload::Refused(why);
        let digest = match keys::file_sha256(&paths.proving) {
            Ok(digest) => digest,
            Err(e) => return refused(e.to_string()),
        };
        if digest == old.key_sha256 {
            return KeyReload::Unchanged;
        }
        let record = match keys::read_record(&paths.proving) {
            Ok(record) => record,
            Err(e) => return refused(e.to_string()),
        };
        if let Err(why) = accept(instance, &record) {
            return refused(why);
        }
        let new = match CircuitKeys::load_cached(
            keys_dir,
            instance,
            MissingKeys::Refuse,
            self.cache_dir.as_deref(),
        ) {
            Ok(new) => new,
            Err(e) => return refused(e.to_string()),
        };
        // The file may have changed again since it was hashed: the record of what is served.
        if let Err(why) = accept(instance, &new.record) {
            return refused(why);
        }
        let tables = old.is_precomputed();
        if tables {
            new.set_tables(Some(Arc::new(self.obtain_tables(&new))));
        }
        let new = Arc::new(new);
        let reload = KeyReload::Replaced {
            previous: old.key_sha256,
            now: new.key_sha256,
            record: new.record.clone(),
            tables,
        };
        self.switch(new.clone());
        // Tables that a build set on the old keys after they were looked at above.
        if old.is_precomputed() && !new.is_precomputed() {
            new.set_tables(Some(Arc::new(self.obtain_tables(&new))));
        }
        reload
    }

    /// Drops the MSM tables of `instance`, if built: proofs that start from now on run without
    /// them, and their memory is freed once the proofs still using them end. Returns the bytes
    /// they held (0 when there were none, or the instance is not loaded).
    pub fn drop_tables(&self, instance: Instance) -> usize {
        self.circuit(instance)
            .and_then(|keys| keys.set_tables(None))
            .map_or(0, |tables| tables.memory_bytes())
    }

    /// The instances whose keys are loaded.
    pub fn instances(&self) -> impl Iterator<Item = Instance> + '_ {
        self.loaded().into_iter().map(|c| c.shape.instance)
    }

    /// The keys of every loaded instance as they are now.
    fn loaded(&self) -> Vec<Arc<CircuitKeys>> {
        self.circuits
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The keys of `instance` as they are now: a proof that holds them keeps them when they are
    /// replaced (or retired) meanwhile.
    pub fn circuit(&self, instance: Instance) -> Option<Arc<CircuitKeys>> {
        self.circuits
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|c| c.shape.instance == instance)
            .cloned()
    }

    fn keys(&self, instance: Instance) -> Result<Arc<CircuitKeys>, ProveError> {
        self.circuit(instance)
            .ok_or(ProveError::NotLoaded(instance))
    }

    /// The keys a proof of `prepared` is made with: the instance's as they are now, or, if it
    /// was retired since the request was checked, those the request holds.
    fn keys_for(&self, prepared: &Prepared) -> Result<Arc<CircuitKeys>, ProveError> {
        self.circuit(prepared.instance)
            .or_else(|| prepared.held.0.clone())
            .ok_or(ProveError::NotLoaded(prepared.instance))
    }

    pub fn info(&self) -> Vec<CircuitInfo> {
        self.loaded()
            .into_iter()
            .map(|c| c.shape.info.clone())
            .collect()
    }

    /// See [`prepare`]; and the request holds the instance's keys as they are now, so that
    /// its proof is made should the instance be retired before it starts. An instance not
    /// loaded (not hosted, or retired) is refused with [`ProveError::NotLoaded`].
    pub fn prepare(&self, instance: Instance, body: &[u8]) -> Result<Prepared, ProveError> {
        let keys = self.keys(instance)?;
        let mut prepared = prepare(instance, body)?;
        prepared.held = HeldKeys(Some(keys));
        Ok(prepared)
    }

    /// Witness synthesis and the Groth16 proof, on the current rayon pool. The proof is
    /// verified before it is returned: a prover bug surfaces as an internal error, never as an
    /// invalid proof.
    pub fn prove(&self, prepared: &Prepared) -> Result<(ProofResponse, ProveTimings), ProveError> {
        self.prove_with_rng(prepared, &mut rand::thread_rng())
    }

    /// [`Prover::prove`] with the proof's randomness `r` and `s` drawn from `rng`, which must be
    /// a cryptographic generator never seeded twice alike: a proof's `r` and `s` hide the
    /// witness. A seeded generator is for tests only (the same seed gives the same proof, with
    /// or without precomputed tables).
    pub fn prove_with_rng<R: rand::RngCore + rand::CryptoRng>(
        &self,
        prepared: &Prepared,
        rng: &mut R,
    ) -> Result<(ProofResponse, ProveTimings), ProveError> {
        let keys = self.keys_for(prepared)?;
        let shape = &keys.shape;
        // Taken once: tables dropped or built while this proof runs do not change it.
        let tables = keys.tables();
        let started = Instant::now();
        let assignment = self.assignment(prepared)?;
        let internal =
            |e: ark_relations::gr1cs::SynthesisError| ProveError::Internal(e.to_string());
        let witness = started.elapsed();

        let started = Instant::now();
        // The proof's blinding factors: secret like the witness, zeroized below on every path.
        let blinding = zeroize::Zeroizing::new([Fr::rand(rng), Fr::rand(rng)]);
        // Our assembly of ark-groth16's proof (the same proof for the same r and s, tested in
        // `groth16`), with enygma-msm's MSMs running concurrently on the caller's pool.
        let (proof, phases) = groth16::create_proof(
            &keys.proving_key,
            tables.as_deref(),
            &shape.r1cs,
            &assignment,
            blinding[0],
            blinding[1],
            groth16::MsmBackend::Enygma,
        )
        .map_err(internal)?;
        let public_inputs = &assignment[1..shape.r1cs.num_instance_variables];
        let valid = enygma_verifier::verify_prepared(&keys.prepared_vk, &proof, public_inputs)
            .map_err(|e| ProveError::Internal(e.to_string()))?;
        if !valid {
            return Err(ProveError::Internal("the proof did not verify".into()));
        }
        let prove = started.elapsed();
        Ok((
            ProofResponse::from_proof(&proof, public_inputs),
            ProveTimings {
                witness,
                prove,
                precomputed: tables.is_some(),
                key_sha256: keys.key_sha256,
                phases,
            },
        ))
    }

    /// The full assignment (the constant 1, the public inputs, then the witness) from a
    /// witness-only synthesis: no constraint matrices are built per request. Its public inputs
    /// must be the statement's, in the statement's order.
    ///
    /// The assignment is wiped when dropped, and the constraint system it is synthesized in is
    /// allocated at the circuit's sizes and wiped ([`groth16::full_assignment_sized`]).
    pub fn assignment(&self, prepared: &Prepared) -> Result<wipe::Wiped<Fr>, ProveError> {
        let instance = prepared.instance;
        let shape = &self.keys_for(prepared)?.shape;
        let circuit = instance
            .statement()
            .circuit_for_proving(&prepared.inputs)
            .ok_or_else(|| foreign_inputs(instance))?;
        let sizes = (
            shape.r1cs.num_instance_variables,
            shape.r1cs.num_witness_variables,
        );
        let assignment = groth16::full_assignment_sized(circuit, Some(sizes))
            .map_err(|e| ProveError::Internal(format!("witness synthesis: {e}")))?;
        if assignment.len() != shape.r1cs.num_instance_variables + shape.r1cs.num_witness_variables
        {
            return Err(ProveError::Internal(
                "witness size differs from the circuit's".into(),
            ));
        }
        if assignment[1..shape.r1cs.num_instance_variables] != prepared.public_inputs()? {
            return Err(ProveError::Internal(format!(
                "the {instance} circuit's public inputs differ from the statement's"
            )));
        }
        Ok(assignment)
    }

    /// Checks a proof in the reference's response format against the verifying key of
    /// `instance`.
    pub fn verify(&self, instance: Instance, response: &ProofResponse) -> Result<bool, ProveError> {
        let keys = self.keys(instance)?;
        let (proof, inputs) = proof_of(instance, response)?;
        enygma_verifier::verify_prepared(&keys.prepared_vk, &proof, &inputs)
            .map_err(|e| ProveError::Internal(e.to_string()))
    }
}

/// The verify route's body as a proof response: JSON with each key once per object
/// ([`enygma_verifier::json`]) and the response's exact shape. A 400 names the repeated key, or
/// says where the JSON went wrong, never quoting it (serde's messages can quote input).
pub fn parse_proof_response(instance: Instance, body: &[u8]) -> Result<ProofResponse, ProveError> {
    enygma_verifier::json::check_unique_keys(body).map_err(|e| {
        ProveError::BadRequest(request::error(
            e.path,
            "duplicate key (each key may appear only once in an object)",
        ))
    })?;
    serde_json::from_slice(body).map_err(|e| {
        ProveError::BadRequest(request::error(
            "body",
            format!(
                "invalid proof JSON ({:?} error at line {} column {}): expected the 200 body of {}",
                e.classify(),
                e.line(),
                e.column(),
                instance.prove_path(),
            ),
        ))
    })
}

/// A proof response's proof and public inputs, checked without a key: coordinates canonical and
/// on the curve (G2 in its subgroup), inputs canonical and as many as `instance` takes.
pub fn proof_of(
    instance: Instance,
    response: &ProofResponse,
) -> Result<(ark_groth16::Proof<Bn254>, Vec<Fr>), ProveError> {
    let (proof, inputs) = response
        .to_proof()
        .map_err(|e| ProveError::BadRequest(proof_error(e)))?;
    let expected = instance.num_public_inputs();
    if inputs.len() != expected {
        return Err(ProveError::BadRequest(RequestError {
            field: "public_signal".into(),
            reason: format!("expected {expected} elements, got {}", inputs.len()),
        }));
    }
    Ok((proof, inputs))
}

#[cfg(test)]
mod secret_hygiene_tests {
    //! Secrets in memory: parsed inputs print no secret, and the buffers the proof path
    //! derives from them read zero once the proof is done.
    use super::*;
    use crate::{statements::RequestSpec, wipe::test_log};
    use rand::SeedableRng;

    /// Every decimal string in a JSON value (the request's numbers).
    fn decimals(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| decimals(v, out)),
            serde_json::Value::Object(o) => o.values().for_each(|v| decimals(v, out)),
            _ => {}
        }
    }

    /// For every statement of the registry (its smallest instance): a generated request, parsed
    /// and checked, prints (`{:?}` and `{:#?}`) its public inputs and none of its private values.
    /// A private value is any number of the request that is not a public input; those of fewer
    /// than 6 digits (zeros of empty slots, small amounts) are left out, since they occur inside
    /// longer numbers by chance, so the spec's amount and balance are made long instead.
    #[test]
    fn debug_of_parsed_inputs_shows_no_private_value() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(17);
        let spec = RequestSpec {
            amount: 123_456_789,
            balance: 987_654_321,
            ..RequestSpec::default()
        };
        for statement in statements::all() {
            let instance = statements::instances_of(statement)[0];
            let body = instance.generate(&spec, &mut rng).unwrap();
            let prepared = prepare(instance, body.to_string().as_bytes()).unwrap();
            let public: Vec<String> = prepared
                .public_inputs()
                .unwrap()
                .iter()
                .map(request::to_decimal)
                .collect();
            let mut numbers = Vec::new();
            decimals(&body, &mut numbers);
            let private: Vec<&String> = numbers
                .iter()
                .filter(|n| n.len() >= 6 && !public.contains(n))
                .collect();
            assert!(
                private.len() >= 3,
                "{instance}: too few private values to test ({})",
                private.len()
            );
            for shown in [format!("{prepared:?}"), format!("{prepared:#?}")] {
                assert!(shown.contains("Secret(..)"), "{instance}: {shown}");
                let long_public = public.iter().find(|p| p.len() >= 6).unwrap();
                assert!(
                    shown.contains(long_public.as_str()),
                    "{instance}: the public values are shown"
                );
                for secret in &private {
                    assert!(
                        !shown.contains(secret.as_str()),
                        "{instance}: Debug shows the private value {secret}"
                    );
                }
            }
        }
    }

    /// A real proof (transfer, k = 2), then the wipe log read back: the full assignment, the
    /// constraint system's witness vector, the QAP's B, C and h and the MSM scalar forms of the
    /// assignment and h were all wiped, every byte of their allocations zero after the wipe,
    /// before they were freed. The lengths tie the records to this circuit.
    #[test]
    fn proving_wipes_the_assignment_and_the_qap_vectors() {
        let instance = statements::instance("transfer", Some(2)).unwrap();
        let keys_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../keys");
        let prover = Prover::load(&keys_dir, &[instance], MissingKeys::Create).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let body = instance
            .generate(&RequestSpec::default(), &mut rng)
            .unwrap();
        let prepared = prepare(instance, body.to_string().as_bytes()).unwrap();
        let (response, _) = prover.prove(&prepared).unwrap();
        assert!(prover.verify(instance, &response).unwrap());

        let shape = &prover.circuit(instance).unwrap().shape.r1cs;
        let variables = shape.num_instance_variables + shape.num_witness_variables;
        let domain = (shape.num_constraints + shape.num_instance_variables).next_power_of_two();
        let records = test_log::records();
        for (label, len) in [
            ("assignment", variables),
            ("cs witness", shape.num_witness_variables),
            ("assignment scalars", variables - 1),
            ("qap b", domain),
            ("qap c", domain),
            ("qap h", domain),
            ("qap h scalars", domain),
        ] {
            let found: Vec<_> = records.iter().filter(|r| r.label == label).collect();
            assert!(
                found.iter().any(|r| r.len == len),
                "{label}: no wipe of {len} elements in {found:?}"
            );
            assert!(
                found.iter().all(|r| r.all_zero && r.bytes >= r.len),
                "{label}: {found:?}"
            );
        }
        // Sized synthesis: the constraint system's witness vector never grew past its size.
        let cs_witness = records
            .iter()
            .find(|r| r.label == "cs witness" && r.len == shape.num_witness_variables)
            .unwrap();
        assert_eq!(
            cs_witness.bytes,
            shape.num_witness_variables * std::mem::size_of::<Fr>(),
            "allocated once, at its final size"
        );
    }
}
