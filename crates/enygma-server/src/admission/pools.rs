//! The rayon pools the proofs run on, for each layout of [`ProveThreads`]: threads that follow
//! the queue, a pool per slot, or a fresh pool per proof; pinned to CPUs with `--pin-cpus`.

use std::sync::{Arc, Mutex};

use super::pinning;

/// How the proofs in flight get their threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProveThreads {
    /// Threads that follow the queue, for as many slots as this many threads (the default): a
    /// proof that starts while no other proof runs gets a pool of every thread (the latency of
    /// `1xN`); a proof that starts beside others gets a pool of one thread of its own (the
    /// throughput and memory of `Nx1`). Proofs side by side on one shared pool were tried: on a
    /// k = 6 transfer each took about a fifth longer than on a thread of its own (rayon's joins
    /// and the parallel loops' splits on a busy pool), so under load they do not share.
    Adaptive(usize),
    /// A pool of this many threads per slot (`--max-inflight` / `--prove-threads`): every
    /// proof has exactly that many threads, whatever else runs.
    PerSlot(usize),
}

impl ProveThreads {
    /// The threads of one pool.
    pub fn pool_threads(self) -> usize {
        match self {
            ProveThreads::Adaptive(n) | ProveThreads::PerSlot(n) => n,
        }
    }
}

/// The idle pools of one slot each: a proof takes one and its [`super::prove::Slot`] gives it
/// back.
pub(super) type IdlePools = Arc<Mutex<Vec<Arc<rayon::ThreadPool>>>>;

/// Where the proofs run.
pub(super) enum Pools {
    /// Threads that follow the queue: the whole pool, and the idle one-thread pools (one per
    /// slot, so a proof that starts beside others always finds one).
    Adaptive {
        whole: Arc<rayon::ThreadPool>,
        single: IdlePools,
    },
    /// A pool per slot; the idle ones. There are exactly `max_inflight` of them, so a request
    /// holding a permit always finds one.
    Dedicated(IdlePools),
    /// A fresh pool per proof (`--unlimited`).
    Fresh,
}

/// The pool a proof gets: the pool itself (none for a fresh one, started by the proof), where
/// it goes back to, and whether it is the whole pool of threads that follow the queue.
pub(super) struct Taken {
    pub(super) pool: Option<Arc<rayon::ThreadPool>>,
    pub(super) idle: Option<IdlePools>,
    pub(super) whole: bool,
}

impl Pools {
    /// The pools of `max_inflight` slots (`None`: unlimited, a fresh pool per proof) laid out
    /// as `threads` says. `pin_cpus`: every prove thread on a CPU of its own
    /// (`--pin-cpus`, see [`pinning`]); refused with a message when the threads exceed the
    /// CPUs allowed, or when unlimited.
    pub(super) fn start(
        max_inflight: Option<usize>,
        threads: ProveThreads,
        pin_cpus: bool,
    ) -> Result<Self, String> {
        if pin_cpus && max_inflight.is_none() {
            return Err(
                "--pin-cpus needs a cap: with --unlimited every proof runs on a \
                        fresh pool, and there is no fixed set of slots to pin"
                    .into(),
            );
        }
        // Which CPUs each of `pools` pools of `threads` threads runs on, if pinned.
        let plan = |pools: usize, threads: usize| -> Result<Option<Vec<Vec<usize>>>, String> {
            if !pin_cpus {
                return Ok(None);
            }
            let cpus = pinning::allowed_cpus()?;
            pinning::plan(pools, threads, &cpus).map(Some)
        };
        // `slots` pools of `threads` threads each, named `{name}{slot}`.
        let pools_of = |name: &str, slots: usize, threads: usize| {
            let cpus = plan(slots, threads)?;
            let mut idle = Vec::new();
            for slot in 0..slots {
                let pinned = cpus.as_ref().map(|plan| plan[slot].as_slice());
                idle.push(Arc::new(start_pool(
                    format!("{name}{slot}"),
                    threads,
                    pinned,
                )?));
            }
            Ok::<_, String>(Arc::new(Mutex::new(idle)))
        };
        Ok(match (threads, max_inflight) {
            (_, None) => Pools::Fresh,
            (ProveThreads::Adaptive(n), Some(slots)) => {
                let cpus = plan(1, n)?;
                let pinned = cpus.as_ref().map(|plan| plan[0].as_slice());
                Pools::Adaptive {
                    whole: Arc::new(start_pool("prove".into(), n, pinned)?),
                    single: pools_of("prove-one", slots, 1)?,
                }
            }
            (ProveThreads::PerSlot(n), Some(slots)) => {
                Pools::Dedicated(pools_of("prove", slots, n)?)
            }
        })
    }

    /// Whether these are threads that follow the queue.
    pub(super) fn follow_the_queue(&self) -> bool {
        matches!(self, Pools::Adaptive { .. })
    }

    /// The pool for a proof that starts now; `alone`: no other slot is held.
    pub(super) fn take(&self, alone: bool) -> Taken {
        let idle_pool = |idle: &IdlePools, whole: bool| {
            let pool = idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            debug_assert!(pool.is_some(), "a permit holder always finds an idle pool");
            Taken {
                pool,
                idle: Some(idle.clone()),
                whole,
            }
        };
        match self {
            Pools::Adaptive { whole, .. } if alone => Taken {
                pool: Some(whole.clone()),
                idle: None,
                whole: true,
            },
            Pools::Adaptive { single, .. } => idle_pool(single, false),
            Pools::Dedicated(idle) => idle_pool(idle, false),
            Pools::Fresh => Taken {
                pool: None,
                idle: None,
                whole: false,
            },
        }
    }
}

pub(super) fn build_pool(threads: usize, name: String) -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .map_err(|e| format!("cannot start a prove pool: {e}"))
}

/// A pool whose thread `i` runs on `cpus[i]` only ([`super::pinning`]). Each thread pins
/// itself as it starts; the pinning is then read back from every thread, so a CPU the kernel
/// refuses stops the start instead of leaving a thread unpinned.
fn build_pinned_pool(name: String, cpus: Vec<usize>) -> Result<rayon::ThreadPool, String> {
    let wanted = cpus.clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cpus.len())
        .thread_name({
            let name = name.clone();
            move |i| format!("{name}-{i}")
        })
        .start_handler(move |i| {
            if let Err(e) = pinning::pin_current_thread(cpus[i]) {
                tracing::error!(cpu = cpus[i], error = %e, "cannot pin a prove thread");
            }
        })
        .build()
        .map_err(|e| format!("cannot start a prove pool: {e}"))?;
    let seen = pool.broadcast(|ctx| (ctx.index(), pinning::current_thread_cpus()));
    for (i, cpus) in seen {
        match cpus {
            Ok(cpus) if cpus == [wanted[i]] => {}
            Ok(cpus) => {
                return Err(format!(
                    "--pin-cpus: thread {name}-{i} runs on CPUs {} instead of {} only",
                    pinning::list(&cpus),
                    wanted[i]
                ))
            }
            Err(e) => {
                return Err(format!(
                    "--pin-cpus: cannot read back {name}-{i}'s CPUs: {e}"
                ))
            }
        }
    }
    Ok(pool)
}

/// A pool named `name`, its threads pinned to `cpus` if given.
fn start_pool(
    name: String,
    threads: usize,
    cpus: Option<&[usize]>,
) -> Result<rayon::ThreadPool, String> {
    match cpus {
        Some(cpus) => {
            let pool = build_pinned_pool(name.clone(), cpus.to_vec())?;
            tracing::info!(
                pool = %name,
                cpus = %pinning::list(cpus),
                "prove threads pinned"
            );
            Ok(pool)
        }
        None => build_pool(threads, name),
    }
}
