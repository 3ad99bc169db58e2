//! Precomputed MSM tables that follow the traffic: the table cache.
//!
//! Fixed-base tables make a proof take about 0.7x the time, but the tables of all 18 instances
//! take 2.6 GiB, and a server usually proves a few of them. So the server builds the tables of
//! the instances that receive proofs, in the background, within a memory budget
//! (`--table-memory`), and drops the least recently proved instance's tables when a new one
//! would not fit. An idle server holds none: its memory stays that of its keys.
//!
//! The policy ([`TablePolicy`], pure and unit-tested):
//! - an instance's tables are built once it has been proved [`BUILD_AFTER_PROOFS`] times
//!   (counted afresh after an eviction);
//! - only one build at a time; an instance proved while another builds waits for its next
//!   proof;
//! - the budget counts the tables resident, the one being built and those of `--precompute`
//!   (pinned: built at start, never evicted); an instance whose tables cannot fit even with every
//!   other evictable table gone is never built;
//! - a build that fails leaves its instance proving without tables, and is not retried.
//!
//! The builds ([`TableCache`]) run on one thread of their own, outside the prove pools, at
//! nice [`BUILD_NICE`]; a proof that starts while its instance's tables are being built proves
//! without them, and no request ever waits for a build. Evicted tables are freed as soon as the
//! proofs still using them end; then, and after each build (whose chunks of projective points
//! were allocated below the mmap threshold), the allocator's free pages go back to the kernel
//! ([`crate::malloc::release_free_memory`]).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use enygma_prover::statements::Instance;

use crate::backend::ProofBackend;
use crate::metrics::Metrics;

/// Proofs of an instance before its tables are built. Why 2 and not 1: one proof is no
/// evidence of traffic (a smoke test, a client trying a route), and a build costs seconds of a
/// core and may evict the tables of an instance that does carry traffic; the second proof is the
/// first sign of repeat traffic, and waiting for it costs one proof without tables more.
pub const BUILD_AFTER_PROOFS: u64 = 2;

/// The niceness of the build thread. Why 10 and not 19: under full load a thread at 19 gets
/// about 1.5 % of a core against the proofs' threads (CFS weights 15 against 1024), so a k = 6
/// transfer's 9 s build would take ten minutes; at 10 (weight 110) it gets about a tenth of a
/// core and takes one to two, while the proofs lose at most that tenth meanwhile.
pub const BUILD_NICE: i32 = 10;

/// The default budget's share of the memory limit: half. The other half holds the keys and
/// matrices (240-380 MB for all 18 instances) and the proofs in flight (about 20 MB each with
/// tables), and the default is further capped to what the loaded process leaves of the limit
/// ([`default_budget`]).
pub const DEFAULT_SHARE_PERCENT: u64 = 50;

/// Memory kept for each proof in flight when the default budget is derived: 20.3 MB measured
/// per request in flight with tables (Intel Xeon, 2026-12-05), rounded up.
pub const IN_FLIGHT_RESERVE_BYTES: u64 = 24 << 20;

/// What the tables of one instance are doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableState {
    /// Not built (never, or evicted).
    Absent,
    Building,
    /// Built by the cache: evictable.
    Resident,
    /// Built at start (`--precompute`): never evicted.
    Pinned,
    /// The build failed: the instance proves without tables.
    Failed,
    /// Larger than the budget leaves once the pinned tables are counted: never built.
    TooLarge,
}

impl TableState {
    /// Whether the tables hold (or are about to hold) their bytes of the budget.
    fn holds_memory(self) -> bool {
        matches!(
            self,
            TableState::Building | TableState::Resident | TableState::Pinned
        )
    }
}

#[derive(Debug)]
struct Entry {
    instance: Instance,
    bytes: u64,
    /// Proofs since start, or since the tables were last evicted.
    proofs: u64,
    /// The policy's clock at the last proof.
    last_proved: u64,
    state: TableState,
}

/// A build the policy decided: evict these instances' tables first, then build `instance`'s.
#[derive(Debug, PartialEq, Eq)]
pub struct Build {
    pub instance: Instance,
    pub bytes: u64,
    pub evict: Vec<Instance>,
}

/// Which tables to build and which to evict: LRU within a budget, pinned tables never evicted.
#[derive(Debug)]
pub struct TablePolicy {
    budget: u64,
    build_after: u64,
    clock: u64,
    entries: Vec<Entry>,
}

impl TablePolicy {
    /// A policy holding at most `budget` bytes of tables, building an instance's after
    /// `build_after` proofs (at least 1).
    pub fn new(budget: u64, build_after: u64) -> Self {
        TablePolicy {
            budget,
            build_after: build_after.max(1),
            clock: 0,
            entries: Vec::new(),
        }
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// An instance whose tables take `bytes`, `pinned` when they were built at start. Adding
    /// an instance twice keeps the first.
    pub fn add(&mut self, instance: Instance, bytes: u64, pinned: bool) {
        if self.entry(instance).is_some() {
            return;
        }
        self.entries.push(Entry {
            instance,
            bytes,
            proofs: 0,
            last_proved: 0,
            state: if pinned {
                TableState::Pinned
            } else {
                TableState::Absent
            },
        });
    }

    fn entry(&self, instance: Instance) -> Option<&Entry> {
        self.entries.iter().find(|e| e.instance == instance)
    }

    fn entry_mut(&mut self, instance: Instance) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.instance == instance)
    }

    pub fn state(&self, instance: Instance) -> Option<TableState> {
        self.entry(instance).map(|e| e.state)
    }

    /// Bytes of the tables resident, pinned and being built.
    pub fn used_bytes(&self) -> u64 {
        self.bytes_where(TableState::holds_memory)
    }

    fn bytes_where(&self, f: impl Fn(TableState) -> bool) -> u64 {
        self.entries
            .iter()
            .filter(|e| f(e.state))
            .map(|e| e.bytes)
            .sum()
    }

    /// Records a proof of `instance` and returns the build it calls for, if any: its tables
    /// are absent, it has been proved often enough, no other build runs, and it fits the budget
    /// once the least recently proved resident tables are evicted (those are in the build's
    /// `evict`, oldest first, and count as gone from now on).
    pub fn proved(&mut self, instance: Instance) -> Option<Build> {
        self.clock += 1;
        let (clock, build_after) = (self.clock, self.build_after);
        let building = self.entries.iter().any(|e| e.state == TableState::Building);
        let pinned = self.bytes_where(|s| s == TableState::Pinned);
        let budget = self.budget;
        let entry = self.entry_mut(instance)?;
        entry.last_proved = clock;
        entry.proofs += 1;
        if entry.state != TableState::Absent || entry.proofs < build_after || building {
            return None;
        }
        let bytes = entry.bytes;
        if pinned.saturating_add(bytes) > budget {
            entry.state = TableState::TooLarge;
            return None;
        }
        let mut evict = Vec::new();
        while self.used_bytes() + bytes > budget {
            let victim = self
                .entries
                .iter_mut()
                .filter(|e| e.state == TableState::Resident)
                .min_by_key(|e| e.last_proved)
                .expect("pinned tables plus these fit the budget: something resident is over it");
            victim.state = TableState::Absent;
            victim.proofs = 0;
            evict.push(victim.instance);
        }
        self.entry_mut(instance).expect("found above").state = TableState::Building;
        Some(Build {
            instance,
            bytes,
            evict,
        })
    }

    /// The build of `instance` ended: its tables are resident, or it goes on without.
    pub fn built(&mut self, instance: Instance, ok: bool) {
        if let Some(e) = self.entry_mut(instance) {
            if e.state == TableState::Building {
                e.state = if ok {
                    TableState::Resident
                } else {
                    TableState::Failed
                };
            }
        }
    }
}

/// Where the default budget comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryLimit {
    /// cgroup v2 `memory.max` (the lowest on the way to the root).
    CgroupV2(u64),
    /// cgroup v1 `memory.limit_in_bytes`.
    CgroupV1(u64),
    /// No cgroup limit: the physical memory.
    Physical(u64),
}

impl MemoryLimit {
    pub fn bytes(self) -> u64 {
        match self {
            MemoryLimit::CgroupV2(b) | MemoryLimit::CgroupV1(b) | MemoryLimit::Physical(b) => b,
        }
    }

    pub fn source(self) -> &'static str {
        match self {
            MemoryLimit::CgroupV2(_) => "cgroup v2 memory.max",
            MemoryLimit::CgroupV1(_) => "cgroup v1 memory.limit_in_bytes",
            MemoryLimit::Physical(_) => "physical memory",
        }
    }

    /// This process's: the cgroup's limit when there is one below the physical memory, else
    /// the physical memory.
    pub fn detect() -> MemoryLimit {
        let physical = physical_memory();
        let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        cgroup_limit(&proc_cgroup, Path::new("/sys/fs/cgroup"), physical, |p| {
            std::fs::read_to_string(p).ok()
        })
        .unwrap_or(MemoryLimit::Physical(physical))
    }
}

/// The memory limit of the cgroup `proc_self_cgroup` (the text of `/proc/self/cgroup`) names,
/// under the cgroup file system at `root`, reading files with `read`. The v2 line (`0::PATH`)
/// wins over a v1 `memory` controller line; each tries PATH and its parents up to the root (a
/// limit anywhere above applies too; with a cgroup namespace PATH is `/` and the root's files
/// are the container's) and keeps the lowest. `max`, and v1's "unlimited" (a value at or above
/// `physical`), are no limit.
pub fn cgroup_limit(
    proc_self_cgroup: &str,
    root: &Path,
    physical: u64,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<MemoryLimit> {
    let lowest = |dir: PathBuf, path: &str, file: &str| {
        let mut limits = Vec::new();
        let mut p = Path::new(path.trim_start_matches('/'));
        loop {
            if let Some(text) = read(&dir.join(p).join(file)) {
                if let Ok(bytes) = text.trim().parse::<u64>() {
                    limits.push(bytes);
                }
            }
            match p.parent() {
                Some(parent) => p = parent,
                None => break,
            }
        }
        limits.into_iter().filter(|&b| b < physical).min()
    };
    let mut v1 = None;
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            if let Some(b) = lowest(root.to_path_buf(), path, "memory.max") {
                return Some(MemoryLimit::CgroupV2(b));
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            v1 = lowest(root.join("memory"), path, "memory.limit_in_bytes")
                .map(MemoryLimit::CgroupV1);
        }
    }
    v1
}

fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads system parameters.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages.max(0) as u64).saturating_mul(page.max(0) as u64)
}

/// The default `--table-memory`: [`DEFAULT_SHARE_PERCENT`] of `limit`, and never more than
/// what the loaded process (`loaded_rss`, keys and matrices) and `in_flight` proofs of
/// [`IN_FLIGHT_RESERVE_BYTES`] each leave of it.
pub fn default_budget(limit: u64, loaded_rss: u64, in_flight: u64) -> u64 {
    let share = (u128::from(limit) * u128::from(DEFAULT_SHARE_PERCENT) / 100) as u64;
    let reserve = loaded_rss.saturating_add(in_flight.saturating_mul(IN_FLIGHT_RESERVE_BYTES));
    share.min(limit.saturating_sub(reserve))
}

/// This process's resident memory (`/proc/self/statm`), if readable.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a system parameter.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * page.max(0) as u64)
}

/// How much memory the automatic tables may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableBudget {
    /// `--table-memory BYTES` (0: no automatic tables).
    Fixed(u64),
    /// The default: a share of `limit`, less what the loaded keys and `in_flight` proofs need
    /// ([`default_budget`]), resolved once the keys are loaded.
    Share { limit: MemoryLimit, in_flight: u64 },
}

impl std::fmt::Display for TableBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            TableBudget::Fixed(0) => write!(f, "0 (no automatic tables)"),
            TableBudget::Fixed(bytes) => write!(f, "{} MiB", mib(bytes)),
            TableBudget::Share { limit, in_flight } => write!(
                f,
                "{DEFAULT_SHARE_PERCENT} % of the {} ({} MiB), less the loaded keys and {in_flight} proofs in flight",
                limit.source(),
                mib(limit.bytes())
            ),
        }
    }
}

/// What the cache is configured with.
#[derive(Clone, Debug)]
pub struct TableConfig {
    pub budget: TableBudget,
    /// `--precompute`: built at start, never evicted.
    pub pinned: Vec<Instance>,
}

impl Default for TableConfig {
    /// No automatic tables, none pinned.
    fn default() -> Self {
        TableConfig {
            budget: TableBudget::Fixed(0),
            pinned: Vec::new(),
        }
    }
}

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
    pub fn new(config: TableConfig, metrics: Arc<Metrics>) -> Self {
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
    pub fn attach(&self, backend: &B, hosted: &[Instance]) {
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

    pub fn state(&self, instance: Instance) -> Option<TableState> {
        self.policy().state(instance)
    }

    /// A proof of `instance` ended, with its tables or without (`precomputed`): counts it, and
    /// starts the build it calls for, if any, on the build thread. Never waits for a build.
    pub fn proved(&self, backend: &Arc<B>, instance: Instance, precomputed: bool) {
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

fn mib(bytes: u64) -> f64 {
    (bytes as f64 / (1 << 20) as f64 * 10.0).round() / 10.0
}

/// The build thread: one build at a time, each on a one-thread rayon pool of its own, both
/// threads at nice [`BUILD_NICE`].
fn spawn_builder<B: ProofBackend>(
    policy: Arc<Mutex<TablePolicy>>,
    metrics: Arc<Metrics>,
) -> Sender<Job<B>> {
    let (tx, rx) = channel::<Job<B>>();
    let spawned = std::thread::Builder::new()
        .name("table-builds".into())
        .spawn(move || {
            lower_priority();
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
    tracing::info!(circuit = %instance, table_mib = mib(build.bytes), "building precomputed MSM tables in the background");
    metrics.table_build_started(instance);
    let started = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.install(|| backend.build_tables(instance))
    }));
    // The build's chunks were allocated below the mmap threshold and are free now.
    crate::malloc::release_free_memory();
    let elapsed = started.elapsed();
    let ok = matches!(outcome, Ok(Ok(())));
    policy
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .built(instance, ok);
    metrics.table_build_finished(instance, elapsed, ok);
    if ok {
        metrics.table_bytes(instance, build.bytes);
        tracing::info!(circuit = %instance, table_mib = mib(build.bytes), elapsed_ms = elapsed.as_millis() as u64, "precomputed MSM tables built");
    } else {
        let error = match outcome {
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

#[cfg(test)]
mod tests {
    use super::*;
    use enygma_prover::statements::instance;

    fn inst(stem: &str) -> Instance {
        let (name, k) = match stem.rsplit_once("-k") {
            Some((name, k)) => (name, Some(k.parse().unwrap())),
            None => (stem, None),
        };
        instance(name, k).unwrap()
    }

    fn policy(budget: u64, sizes: &[(&str, u64)]) -> TablePolicy {
        let mut p = TablePolicy::new(budget, 2);
        for &(stem, bytes) in sizes {
            p.add(inst(stem), bytes, false);
        }
        p
    }

    /// Proves `stem` and, if that calls for a build, finishes it.
    fn prove_and_build(p: &mut TablePolicy, stem: &str) -> Option<Build> {
        let build = p.proved(inst(stem));
        if let Some(b) = &build {
            p.built(b.instance, true);
        }
        build
    }

    #[test]
    fn builds_after_the_second_proof_one_at_a_time() {
        let mut p = policy(1000, &[("transfer-k6", 300), ("transfer-k2", 200)]);
        let (k6, k2) = (inst("transfer-k6"), inst("transfer-k2"));
        assert_eq!(p.proved(k6), None, "one proof is not traffic");
        assert_eq!(p.state(k6), Some(TableState::Absent));
        assert_eq!(
            p.proved(k6),
            Some(Build {
                instance: k6,
                bytes: 300,
                evict: vec![]
            })
        );
        assert_eq!(p.state(k6), Some(TableState::Building));
        assert_eq!(p.used_bytes(), 300, "a build holds its bytes of the budget");
        // k2 qualifies while k6 builds: it waits for its next proof.
        assert_eq!(p.proved(k2), None);
        assert_eq!(p.proved(k2), None);
        assert_eq!(p.proved(k6), None, "building");
        p.built(k6, true);
        assert_eq!(p.state(k6), Some(TableState::Resident));
        assert_eq!(p.proved(k2).map(|b| b.instance), Some(k2));
        p.built(k2, true);
        assert_eq!(p.used_bytes(), 500);
        assert_eq!(p.proved(k6), None, "resident");
    }

    #[test]
    fn evicts_the_least_recently_proved_to_stay_within_the_budget() {
        let sizes = [
            ("transfer-k2", 300),
            ("transfer-k3", 300),
            ("transfer-k4", 300),
            ("transfer-k5", 500),
        ];
        let mut p = policy(1000, &sizes);
        for stem in ["transfer-k2", "transfer-k2", "transfer-k3", "transfer-k3"] {
            prove_and_build(&mut p, stem);
        }
        prove_and_build(&mut p, "transfer-k4");
        // k2 proved again: k3 is now the least recently proved.
        prove_and_build(&mut p, "transfer-k2");
        assert_eq!(p.used_bytes(), 600);
        let b = prove_and_build(&mut p, "transfer-k4").unwrap();
        assert_eq!(b.evict, Vec::<Instance>::new(), "900 fits 1000");
        assert_eq!(p.used_bytes(), 900);
        // k5 needs 500: k3 then k2 go (least recently proved first), k4 stays.
        prove_and_build(&mut p, "transfer-k5");
        let b = prove_and_build(&mut p, "transfer-k5").unwrap();
        assert_eq!(b.evict, vec![inst("transfer-k3"), inst("transfer-k2")]);
        assert_eq!(p.state(inst("transfer-k3")), Some(TableState::Absent));
        assert_eq!(p.state(inst("transfer-k2")), Some(TableState::Absent));
        assert_eq!(p.state(inst("transfer-k4")), Some(TableState::Resident));
        assert_eq!(p.used_bytes(), 800);
        // An evicted instance counts its proofs afresh.
        assert_eq!(prove_and_build(&mut p, "transfer-k3"), None);
        let b = prove_and_build(&mut p, "transfer-k3").unwrap();
        assert_eq!(b.evict, vec![inst("transfer-k4")]);
        assert!(p.used_bytes() <= p.budget());
    }

    #[test]
    fn the_budget_is_never_exceeded() {
        // Random-ish traffic over six instances of different sizes.
        let stems = [
            "transfer-k2",
            "transfer-k3",
            "transfer-k4",
            "transfer-k5",
            "transfer-k6",
            "ownership-721",
        ];
        let sizes: Vec<(&str, u64)> = stems
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, 100 + 70 * i as u64))
            .collect();
        let mut p = policy(600, &sizes);
        let mut x = 7u64;
        let mut builds = 0;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let stem = stems[(x >> 33) as usize % stems.len()];
            if let Some(b) = p.proved(inst(stem)) {
                builds += 1;
                assert!(p.used_bytes() <= 600, "{}", p.used_bytes());
                p.built(b.instance, true);
            }
            assert!(p.used_bytes() <= 600);
        }
        assert!(builds > 10, "{builds}");
    }

    #[test]
    fn pinned_tables_are_never_evicted_and_count_in_the_budget() {
        let mut p = TablePolicy::new(1000, 1);
        let (k6, k2, k3, w6) = (
            inst("transfer-k6"),
            inst("transfer-k2"),
            inst("transfer-k3"),
            inst("withdraw-k6"),
        );
        p.add(k6, 600, true);
        p.add(k2, 300, false);
        p.add(k3, 300, false);
        p.add(w6, 500, false);
        assert_eq!(p.state(k6), Some(TableState::Pinned));
        assert_eq!(p.used_bytes(), 600);
        assert_eq!(p.proved(k6), None, "pinned: nothing to build");
        assert!(prove_and_build(&mut p, "transfer-k2").is_some());
        let b = prove_and_build(&mut p, "transfer-k3").unwrap();
        assert_eq!(b.evict, vec![k2], "k6 is older but pinned");
        assert_eq!(p.state(k6), Some(TableState::Pinned));
        // 600 pinned + 500 can never fit 1000: never built, nothing evicted for it.
        assert_eq!(p.proved(w6), None);
        assert_eq!(p.state(w6), Some(TableState::TooLarge));
        assert_eq!(p.state(k3), Some(TableState::Resident));
    }

    #[test]
    fn a_failed_build_is_not_retried_and_frees_its_place() {
        let mut p = policy(1000, &[("transfer-k2", 300), ("transfer-k3", 300)]);
        let k2 = inst("transfer-k2");
        p.proved(k2);
        assert!(p.proved(k2).is_some());
        p.built(k2, false);
        assert_eq!(p.state(k2), Some(TableState::Failed));
        assert_eq!(p.used_bytes(), 0);
        for _ in 0..5 {
            assert_eq!(p.proved(k2), None);
        }
        assert!(prove_and_build(&mut p, "transfer-k3").is_none());
        assert!(prove_and_build(&mut p, "transfer-k3").is_some());
    }

    #[test]
    fn a_zero_budget_builds_nothing() {
        let mut p = policy(0, &[("ownership-721", 30)]);
        for _ in 0..3 {
            assert_eq!(p.proved(inst("ownership-721")), None);
        }
        assert_eq!(p.state(inst("ownership-721")), Some(TableState::TooLarge));
        assert_eq!(p.proved(inst("transfer-k6")), None, "not an entry");
    }

    /// A prover whose tables take 100 bytes each and whose builds record where they ran.
    #[derive(Default)]
    struct TabledBackend {
        fail: bool,
        /// (instance, rayon threads, niceness, thread name) of each build.
        builds: Mutex<Vec<(String, usize, i32, String)>>,
        dropped: Mutex<Vec<String>>,
    }

    impl ProofBackend for TabledBackend {
        type Prepared = ();

        fn prepare(&self, _: Instance, _: &[u8]) -> Result<(), crate::BackendError> {
            Ok(())
        }

        fn prove(&self, _: &()) -> Result<crate::ProofOutput, crate::BackendError> {
            Err(crate::BackendError::Internal("not used here".into()))
        }

        fn verify(&self, _: Instance, _: &[u8]) -> Result<bool, crate::BackendError> {
            Ok(false)
        }

        fn table_bytes(&self, _: Instance) -> Option<usize> {
            Some(100)
        }

        fn build_tables(&self, instance: Instance) -> Result<(), crate::BackendError> {
            #[cfg(target_os = "linux")]
            let nice = current_nice();
            #[cfg(not(target_os = "linux"))]
            let nice = BUILD_NICE;
            let name = std::thread::current().name().unwrap_or("").to_owned();
            self.builds.lock().unwrap().push((
                instance.key_stem(),
                rayon::current_num_threads(),
                nice,
                name,
            ));
            if self.fail {
                return Err(crate::BackendError::Internal("out of table memory".into()));
            }
            Ok(())
        }

        fn drop_tables(&self, instance: Instance) -> usize {
            self.dropped.lock().unwrap().push(instance.key_stem());
            100
        }
    }

    fn wait_for(cache: &TableCache<TabledBackend>, instance: Instance, state: TableState) {
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while cache.state(instance) != Some(state) {
            assert!(Instant::now() < deadline, "{:?}", cache.state(instance));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    fn series(text: &str, line: &str) -> Option<f64> {
        enygma_formats::prometheus::value(text, line)
    }

    #[test]
    fn the_cache_builds_on_one_low_priority_thread_and_evicts_in_lru_order() {
        let (k2, k3, k4) = (
            inst("transfer-k2"),
            inst("transfer-k3"),
            inst("transfer-k4"),
        );
        let metrics = Arc::new(Metrics::for_instances(&[k2, k3, k4]));
        let config = TableConfig {
            budget: TableBudget::Fixed(250),
            pinned: vec![],
        };
        let cache: TableCache<TabledBackend> = TableCache::new(config, metrics.clone());
        let backend = Arc::new(TabledBackend::default());
        cache.attach(backend.as_ref(), &[k2, k3, k4]);
        for i in [k2, k3, k4] {
            for _ in 0..BUILD_AFTER_PROOFS {
                cache.proved(&backend, i, false);
            }
            wait_for(&cache, i, TableState::Resident);
        }
        cache.proved(&backend, k3, true);
        let builds = backend.builds.lock().unwrap().clone();
        let stems: Vec<&str> = builds.iter().map(|b| b.0.as_str()).collect();
        assert_eq!(stems, ["transfer-k2", "transfer-k3", "transfer-k4"]);
        for (_, threads, nice, name) in &builds {
            assert_eq!(*threads, 1, "one thread, not a prove pool");
            assert_eq!(name, "table-build");
            if cfg!(target_os = "linux") {
                assert_eq!(*nice, BUILD_NICE);
            }
        }
        assert_eq!(*backend.dropped.lock().unwrap(), ["transfer-k2"]);
        assert_eq!(cache.state(k2), Some(TableState::Absent));
        let text = metrics.render(false, false, Default::default(), Default::default(), 0);
        let k = |k: usize, rest: &str| format!("{{statement=\"transfer\",k=\"{k}\"{rest}}}");
        assert_eq!(
            series(&text, "enygma_table_memory_budget_bytes"),
            Some(250.0)
        );
        assert_eq!(
            series(&text, &format!("enygma_table_bytes{}", k(2, ""))),
            Some(0.0)
        );
        assert_eq!(
            series(&text, &format!("enygma_table_bytes{}", k(4, ""))),
            Some(100.0)
        );
        assert_eq!(
            series(&text, &format!("enygma_table_evictions_total{}", k(2, ""))),
            Some(1.0)
        );
        assert_eq!(
            series(
                &text,
                &format!(
                    "enygma_table_builds_finished_total{}",
                    k(3, ",outcome=\"built\"")
                )
            ),
            Some(1.0)
        );
        assert_eq!(
            series(
                &text,
                &format!("enygma_table_proofs_total{}", k(3, ",tables=\"hit\""))
            ),
            Some(1.0)
        );
        assert_eq!(
            series(
                &text,
                &format!("enygma_table_proofs_total{}", k(3, ",tables=\"miss\""))
            ),
            Some(BUILD_AFTER_PROOFS as f64)
        );
        assert_eq!(
            series(
                &text,
                &format!("enygma_table_build_seconds_count{}", k(4, ""))
            ),
            Some(1.0)
        );
    }

    #[test]
    fn a_failed_build_leaves_the_instance_proving_without_tables() {
        let owner = inst("ownership-721");
        let metrics = Arc::new(Metrics::for_instances(&[owner]));
        let config = TableConfig {
            budget: TableBudget::Fixed(1 << 30),
            pinned: vec![],
        };
        let cache: TableCache<TabledBackend> = TableCache::new(config, metrics.clone());
        let backend = Arc::new(TabledBackend {
            fail: true,
            ..TabledBackend::default()
        });
        cache.attach(backend.as_ref(), &[owner]);
        for _ in 0..BUILD_AFTER_PROOFS {
            cache.proved(&backend, owner, false);
        }
        wait_for(&cache, owner, TableState::Failed);
        for _ in 0..3 {
            cache.proved(&backend, owner, false);
        }
        assert_eq!(backend.builds.lock().unwrap().len(), 1, "not retried");
        let text = metrics.render(false, false, Default::default(), Default::default(), 0);
        let labels = "statement=\"ownership-721\",k=\"none\"";
        assert_eq!(
            series(
                &text,
                &format!("enygma_table_builds_finished_total{{{labels},outcome=\"failed\"}}")
            ),
            Some(1.0)
        );
        assert_eq!(
            series(
                &text,
                &format!("enygma_table_proofs_total{{{labels},tables=\"miss\"}}")
            ),
            Some(BUILD_AFTER_PROOFS as f64 + 3.0)
        );
        assert_eq!(
            series(&text, &format!("enygma_table_bytes{{{labels}}}")),
            Some(0.0)
        );
    }

    #[test]
    fn pinned_tables_show_from_the_start() {
        let (k6, owner) = (inst("transfer-k6"), inst("ownership-721"));
        let metrics = Arc::new(Metrics::for_instances(&[k6, owner]));
        let config = TableConfig {
            budget: TableBudget::Fixed(0),
            pinned: vec![k6],
        };
        let cache: TableCache<TabledBackend> = TableCache::new(config, metrics.clone());
        let backend = Arc::new(TabledBackend::default());
        cache.attach(backend.as_ref(), &[k6, owner]);
        assert_eq!(cache.state(k6), Some(TableState::Pinned));
        for _ in 0..3 {
            cache.proved(&backend, owner, false);
            cache.proved(&backend, k6, true);
        }
        assert_eq!(
            cache.state(owner),
            Some(TableState::TooLarge),
            "--table-memory 0"
        );
        assert!(backend.builds.lock().unwrap().is_empty());
        let text = metrics.render(false, false, Default::default(), Default::default(), 0);
        assert_eq!(
            series(&text, "enygma_table_bytes{statement=\"transfer\",k=\"6\"}"),
            Some(100.0)
        );
    }

    #[test]
    fn cgroup_limits_v2_v1_and_none() {
        let gib = 1u64 << 30;
        let physical = 16 * gib;
        let files = |pairs: &'static [(&'static str, &'static str)]| {
            move |p: &Path| {
                pairs
                    .iter()
                    .find(|(path, _)| Path::new(path) == p)
                    .map(|(_, text)| text.to_string())
            }
        };
        let root = Path::new("/sys/fs/cgroup");
        // v2 in a cgroup namespace: the root's memory.max is the container's.
        let limit = cgroup_limit(
            "0::/\n",
            root,
            physical,
            files(&[("/sys/fs/cgroup/memory.max", "1073741824\n")]),
        );
        assert_eq!(limit, Some(MemoryLimit::CgroupV2(gib)));
        // v2 without one: the lowest limit on the way up; `max` is none.
        let limit = cgroup_limit(
            "0::/kubepods/pod1/c1\n",
            root,
            physical,
            files(&[
                ("/sys/fs/cgroup/kubepods/pod1/c1/memory.max", "max\n"),
                ("/sys/fs/cgroup/kubepods/pod1/memory.max", "536870912\n"),
                ("/sys/fs/cgroup/kubepods/memory.max", "4294967296\n"),
            ]),
        );
        assert_eq!(limit, Some(MemoryLimit::CgroupV2(512 << 20)));
        let limit = cgroup_limit(
            "0::/\n",
            root,
            physical,
            files(&[("/sys/fs/cgroup/memory.max", "max\n")]),
        );
        assert_eq!(limit, None);
        // v1: the memory controller's line; its "unlimited" is a huge number.
        let v1 = "4:memory:/docker/abc\n3:cpuset:/\n0::/\n";
        let limit = cgroup_limit(
            v1,
            root,
            physical,
            files(&[(
                "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes",
                "805306368\n",
            )]),
        );
        assert_eq!(limit, Some(MemoryLimit::CgroupV1(768 << 20)));
        let limit = cgroup_limit(
            "4:cpuacct,memory:/x\n",
            root,
            physical,
            files(&[(
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            )]),
        );
        assert_eq!(limit, None);
        assert_eq!(cgroup_limit("", root, physical, |_| None), None);
    }

    #[test]
    fn default_budget_is_half_the_limit_less_what_the_process_needs() {
        let mib = 1u64 << 20;
        // 1 GiB limit, 380 MiB loaded, 2 in flight: half the limit fits.
        assert_eq!(default_budget(1024 * mib, 380 * mib, 2), 512 * mib);
        // 512 MiB limit, same process: what is left after the keys and proofs.
        assert_eq!(
            default_budget(512 * mib, 380 * mib, 2),
            512 * mib - 380 * mib - 2 * IN_FLIGHT_RESERVE_BYTES
        );
        assert_eq!(default_budget(256 * mib, 380 * mib, 2), 0);
        assert_eq!(TableBudget::Fixed(512 * mib).to_string(), "512 MiB");
        assert_eq!(TableBudget::Fixed(0).to_string(), "0 (no automatic tables)");
        let detected = MemoryLimit::detect();
        assert!(detected.bytes() > 64 * mib, "{detected:?}");
    }

    #[test]
    fn table_memory_sizes_parse_with_binary_and_decimal_units() {
        let parse = |s: &str| crate::config::parse_bytes(s);
        assert_eq!(parse("512MiB"), Ok(512 << 20));
        assert_eq!(parse("2GiB"), Ok(2 << 30));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("1000000"), Ok(1_000_000));
        assert!(parse("lots").unwrap_err().contains("--table-memory"));
    }
}
