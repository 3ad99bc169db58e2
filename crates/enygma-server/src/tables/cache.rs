//! The table cache: the policy shared by every prove handler, and the build thread.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use enygma_prover::statements::Instance;

use super::memory::{default_budget, mib, resident_bytes, TableBudget, TableConfig};
use super::policy::{Build, TablePolicy, BUILD_AFTER_PROOFS};
use crate::backend::ProofBackend;
use crate::metrics::{BuildOutcome, Metrics};

/// The niceness of the build thread. Why 10 and not 19: under full load a thread at 19 gets
/// about 1.5 % of a core against the proofs' threads (CFS weights 15 against 1024), so a k = 6
/// transfer's 9 s build would take ten minutes; at 10 (weight 110) it gets about a tenth of a
/// core and takes one to two, while the proofs lose at most that tenth meanwhile.
pub(crate) const BUILD_NICE: i32 = 10;

/// A build for the build thread: the backend to build with, the instance and the evictions
/// that make room for it.
struct Job<B> {
    backend: Arc<B>,
    build: Build,
}

/// The policy and the build thread, shared by every prove handler.
pub struct TableCache<B: ProofBackend> {
    config: TableConfig,
    policy: Arc<Mutex<TablePolicy>>,
    metrics: Arc<Metrics>,
    /// Started with the first build.
    builder: OnceLock<Mutex<Sender<Job<B>>>>,
}

impl<B: ProofBackend> TableCache<B> {
    pub(crate) fn new(config: TableConfig, metrics: Arc<Metrics>) -> Self {
        TableCache {
            config,
            policy: Arc::new(Mutex::new(TablePolicy::new(0, BUILD_AFTER_PROOFS))),
            metrics,
            builder: OnceLock::new(),
        }
    }

    fn policy(&self) -> std::sync::MutexGuard<'_, TablePolicy> {
        self.policy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the loaded backend's table sizes for `hosted`, marks the pinned ones resident and
    /// resolves the budget. Call once, when the keys are loaded.
    pub(crate) fn attach(&self, backend: &B, hosted: &[Instance]) {
        let budget = match self.config.budget {
            TableBudget::Fixed(bytes) => bytes,
            TableBudget::Share { limit, in_flight } => {
                let rss = resident_bytes().unwrap_or(0);
                let budget = default_budget(limit.bytes(), rss, in_flight);
                tracing::info!(
                    limit_mib = mib(limit.bytes()),
                    limit_source = limit.source(),
                    loaded_rss_mib = mib(rss),
                    in_flight,
                    table_memory_mib = mib(budget),
                    "table memory: the default share of the memory limit"
                );
                budget
            }
        };
        let mut policy = TablePolicy::new(budget, BUILD_AFTER_PROOFS);
        for &instance in hosted {
            let Some(bytes) = backend.table_bytes(instance) else {
                continue;
            };
            let pinned = self.config.pinned.contains(&instance);
            policy.add(instance, bytes as u64, pinned);
            if pinned {
                self.metrics.table_bytes(instance, bytes as u64);
            }
        }
        self.metrics.table_budget(budget);
        *self.policy() = policy;
    }

    /// An instance hosted from now on (added while serving): its tables follow the traffic like
    /// any other's. `--precompute` pins only the instances hosted at start: they are built
    /// before the service is ready, and an added instance must not wait for its tables.
    pub(crate) fn host(&self, backend: &B, instance: Instance) {
        if let Some(bytes) = backend.table_bytes(instance) {
            self.policy().add(instance, bytes as u64, false);
        }
    }

    /// An instance no longer hosted, whose tables the backend dropped: it leaves the policy,
    /// and its bytes leave the budget.
    pub(crate) fn retire(&self, instance: Instance) {
        self.policy().remove(instance);
        self.metrics.retire(instance);
    }

    #[cfg(test)]
    pub(crate) fn state(&self, instance: Instance) -> Option<super::policy::TableState> {
        self.policy().state(instance)
    }

    /// A proof of `instance` ended, with its tables or without (`precomputed`): counts it, and
    /// starts the build it calls for, if any, on the build thread. Never waits for a build.
    pub(crate) fn proved(&self, backend: &Arc<B>, instance: Instance, precomputed: bool) {
        self.metrics.table_proof(instance, precomputed);
        let Some(build) = self.policy().proved(instance) else {
            return;
        };
        let job = Job {
            backend: backend.clone(),
            build,
        };
        let sender = self
            .builder
            .get_or_init(|| Mutex::new(spawn_builder(self.policy.clone(), self.metrics.clone())));
        let sent = sender.lock().unwrap_or_else(|e| e.into_inner()).send(job);
        if let Err(unsent) = sent {
            tracing::warn!(circuit = %unsent.0.build.instance, "the table build thread is gone: no tables");
            self.policy().built(unsent.0.build.instance, false);
        }
    }
}

/// The build thread: one build at a time, each on a one-thread rayon pool of its own at nice
/// [`BUILD_NICE`]. The thread itself keeps the normal priority: it reads tables kept by an
/// earlier run (a fraction of a second of I/O and hashing, which at nice 10 on a loaded server
/// would take as long as the proofs leave it: tens of seconds), and a thread cannot raise its
/// priority again once lowered.
fn spawn_builder<B: ProofBackend>(
    policy: Arc<Mutex<TablePolicy>>,
    metrics: Arc<Metrics>,
) -> Sender<Job<B>> {
    let (tx, rx) = channel::<Job<B>>();
    let spawned = std::thread::Builder::new()
        .name("table-builds".into())
        .spawn(move || {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "table-build".into())
                .start_handler(|_| lower_priority())
                .build();
            let pool = match pool {
                Ok(pool) => pool,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start the table build pool: no tables");
                    return;
                }
            };
            for job in rx {
                run_build(&pool, &policy, &metrics, job);
            }
        });
    if let Err(e) = spawned {
        // The receiver is gone with the closure: every send fails and says so.
        tracing::warn!(error = %e, "cannot start the table build thread: no tables");
    }
    tx
}

fn run_build<B: ProofBackend>(
    pool: &rayon::ThreadPool,
    policy: &Mutex<TablePolicy>,
    metrics: &Metrics,
    job: Job<B>,
) {
    let Job { backend, build } = job;
    for &victim in &build.evict {
        let freed = backend.drop_tables(victim);
        metrics.table_evicted(victim);
        tracing::info!(circuit = %victim, table_mib = mib(freed as u64), "precomputed MSM tables evicted (least recently proved)");
    }
    if !build.evict.is_empty() {
        crate::malloc::release_free_memory();
    }
    let instance = build.instance;
    metrics.table_build_started(instance);
    let started = Instant::now();
    // Tables an earlier run kept for this key are read (a fraction of a second), else built.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if backend.read_kept_tables(instance) {
            return Ok(BuildOutcome::Read);
        }
        tracing::info!(circuit = %instance, table_mib = mib(build.bytes), "building precomputed MSM tables in the background");
        pool.install(|| backend.build_tables(instance))
            .map(|()| BuildOutcome::Built)
    }));
    // The build's chunks were allocated below the mmap threshold and are free now.
    crate::malloc::release_free_memory();
    let elapsed = started.elapsed();
    let outcome = match &result {
        Ok(Ok(outcome)) => *outcome,
        _ => BuildOutcome::Failed,
    };
    let ok = outcome != BuildOutcome::Failed;
    let hosted = policy
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .built(instance, ok);
    metrics.table_build_finished(instance, elapsed, outcome);
    if !hosted {
        // Retired during the build: the tables went to keys no longer hosted, freed with them.
        tracing::info!(circuit = %instance, "precomputed MSM tables built for a circuit retired meanwhile: dropped");
        return;
    }
    if ok {
        metrics.table_bytes(instance, build.bytes);
        let how = if outcome == BuildOutcome::Read {
            "precomputed MSM tables read from the cache"
        } else {
            "precomputed MSM tables built"
        };
        tracing::info!(circuit = %instance, table_mib = mib(build.bytes), elapsed_ms = elapsed.as_millis() as u64, "{how}");
    } else {
        let error = match result {
            Ok(Err(e)) => e.to_string(),
            _ => "the build panicked".into(),
        };
        tracing::warn!(circuit = %instance, error = %error, "precomputed MSM tables not built: the circuit proves without them");
    }
}

/// Lowers the calling thread's priority to nice [`BUILD_NICE`] (Linux: `setpriority` on a
/// thread id changes that thread only).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority on this thread's id; lowering priority needs no privilege.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        if libc::setpriority(libc::PRIO_PROCESS, tid, BUILD_NICE) != 0 {
            tracing::warn!("cannot lower the table build thread's priority");
        }
    }
}

/// The calling thread's niceness (Linux), for tests.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn current_nice() -> i32 {
    // SAFETY: getpriority on this thread's id.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
}
