//! Admission control: a global cap on work in flight, a bounded FIFO queue with a timeout, and
//! immediate shedding when the queue is full or when a newcomer's expected wait would exceed the
//! queue timeout. See the crate documentation for the design.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use crate::caller::Caller;
use crate::fair::{FairShares, Grant, SharesConfig};
use crate::metrics::{Metrics, QueueGauges, QueueKind};

/// Why a request was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdmitError {
    /// Every slot is busy and the queue is full: 503 at once.
    Shed,
    /// Waited the whole queue timeout without getting a slot: 504.
    Timeout(Duration),
}

/// How long one job holds its slot, as a running estimate: seeded with a measured figure (see
/// `config::default_service_time`) and then moved towards every observed job time by an
/// exponentially weighted average, so that it follows the machine and the mix of statements and
/// k actually served.
#[derive(Debug)]
pub struct ServiceTime {
    nanos: AtomicU64,
}

impl ServiceTime {
    /// Weight of the newest observation: about the last ten jobs dominate the estimate, so a
    /// single slow proof does not swing it.
    const WEIGHT: f64 = 0.2;

    pub fn new(initial: Duration) -> Self {
        ServiceTime {
            nanos: AtomicU64::new(duration_nanos(initial).max(1)),
        }
    }

    pub fn get(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }

    pub fn observe(&self, took: Duration) {
        let took = duration_nanos(took) as f64;
        let _ = self
            .nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                let next = old as f64 + Self::WEIGHT * (took - old as f64);
                Some((next.round() as u64).max(1))
            });
    }
}

fn duration_nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

/// A counting semaphore with a bounded FIFO queue in front of it.
///
/// tokio's `Semaphore` is fair: waiters are served strictly in arrival order and a released
/// permit goes to the oldest waiter before any newcomer can `try_acquire` it. On top of it this
/// type bounds the number of waiters (the queue depth), bounds how long each may wait, and
/// counts the waiters that give up because their request future was dropped (client gone).
///
/// With a [`ServiceTime`] it also refuses a place to a request whose expected wait exceeds the
/// queue timeout (see [`Self::expected_wait`]): such a request would only wait to be answered
/// 504, so it is answered 503 with `Retry-After` at once instead.
pub struct Limiter {
    kind: QueueKind,
    semaphore: Arc<Semaphore>,
    max_inflight: usize,
    queue_depth: usize,
    queue_timeout: Duration,
    queued: AtomicUsize,
    service_time: Option<Arc<ServiceTime>>,
    metrics: Arc<Metrics>,
}

/// A held slot of a [`Limiter`]; dropping it frees the slot for the oldest waiter.
#[derive(Debug)]
pub struct Permit {
    _permit: OwnedSemaphorePermit,
}

impl Limiter {
    pub fn new(
        kind: QueueKind,
        max_inflight: usize,
        queue_depth: usize,
        queue_timeout: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        assert!(max_inflight > 0, "max_inflight must be at least 1");
        Limiter {
            kind,
            semaphore: Arc::new(Semaphore::new(max_inflight)),
            max_inflight,
            queue_depth,
            queue_timeout,
            queued: AtomicUsize::new(0),
            service_time: None,
            metrics,
        }
    }

    /// Sheds by expected wait too, starting from the estimate `initial` (see [`ServiceTime`]).
    pub fn with_service_time(mut self, initial: Duration) -> Self {
        self.service_time = Some(Arc::new(ServiceTime::new(initial)));
        self
    }

    /// The current service time estimate, if this limiter sheds by expected wait.
    pub fn service_time(&self) -> Option<Duration> {
        self.service_time.as_deref().map(ServiceTime::get)
    }

    /// The wait expected for the request at `position` (1 = next) in the queue: every
    /// `service_time` the `max_inflight` slots take `max_inflight` requests off the queue, so
    /// position p starts after about p x service_time / max_inflight (an upper estimate: the
    /// proofs in flight have already run part of theirs).
    pub fn expected_wait(&self, position: usize) -> Option<Duration> {
        let per_slot = duration_nanos(self.service_time()?) as u128;
        let nanos = position as u128 * per_slot / self.max_inflight as u128;
        Some(Duration::from_nanos(nanos.min(u64::MAX as u128) as u64))
    }

    /// Whether a newcomer finding `queued` requests waiting may join them: the queue has a free
    /// place and the newcomer's expected wait fits the queue timeout.
    fn has_room(&self, queued: usize) -> bool {
        queued < self.queue_depth
            && self
                .expected_wait(queued + 1)
                .is_none_or(|wait| wait <= self.queue_timeout)
    }

    /// Takes a free slot at once, or queues (FIFO) for one if the queue has room, or sheds.
    /// Returns the slot and how long it waited. If the returned future is dropped while queued,
    /// the request leaves the queue and is counted as abandoned.
    pub async fn acquire(&self) -> Result<(Permit, Duration), AdmitError> {
        let start = Instant::now();
        if let Ok(p) = self.semaphore.clone().try_acquire_owned() {
            self.metrics.observe_queue_wait(self.kind, Duration::ZERO);
            return Ok((Permit { _permit: p }, Duration::ZERO));
        }
        // Reserve a place in the queue, or shed.
        let reserved = self
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |q| {
                self.has_room(q).then_some(q + 1)
            })
            .is_ok();
        if !reserved {
            self.metrics
                .queue(self.kind)
                .shed
                .fetch_add(1, Ordering::Relaxed);
            return Err(AdmitError::Shed);
        }
        let mut place = QueuePlace {
            limiter: self,
            settled: false,
        };
        let outcome =
            tokio::time::timeout(self.queue_timeout, self.semaphore.clone().acquire_owned()).await;
        place.settled = true;
        drop(place);
        let waited = start.elapsed();
        match outcome {
            Ok(Ok(p)) => {
                self.metrics.observe_queue_wait(self.kind, waited);
                Ok((Permit { _permit: p }, waited))
            }
            // The semaphore is never closed; treat it like a timeout if it ever is.
            Ok(Err(_)) | Err(_) => {
                self.metrics
                    .queue(self.kind)
                    .timeouts
                    .fetch_add(1, Ordering::Relaxed);
                Err(AdmitError::Timeout(waited))
            }
        }
    }

    /// Sheds a request before any work is spent on it when every slot is busy and the queue has
    /// no room for it (full, or its expected wait exceeds the queue timeout; counted like any
    /// other shed). Without this, a storm of retries against a full
    /// queue made the server parse and check every one of them first, and that CPU came out of
    /// the proofs: measured at 16 clients in flight, throughput fell from 2.4 to 0.8 proofs/s.
    /// [`Self::acquire`] stays the authority; this only answers early what it would answer.
    pub fn shed_early(&self) -> bool {
        let saturated = self.semaphore.available_permits() == 0
            && !self.has_room(self.queued.load(Ordering::SeqCst));
        if saturated {
            self.metrics
                .queue(self.kind)
                .shed
                .fetch_add(1, Ordering::Relaxed);
        }
        saturated
    }

    /// Seconds a shed client should wait before retrying, between 1 and 60: the time until a
    /// newcomer would find room, i.e. until the queue has shrunk below both its depth and the
    /// length whose expected wait fits the queue timeout, at `max_inflight` requests per
    /// service time. 1 without a service time estimate.
    pub fn retry_after_secs(&self) -> u64 {
        let Some(service) = self.service_time() else {
            return 1;
        };
        let service = service.as_secs_f64();
        let n = self.max_inflight as f64;
        let fits_timeout = (self.queue_timeout.as_secs_f64() * n / service).floor();
        let room = (self.queue_depth as f64).min(fits_timeout);
        let waiting = (self.queued.load(Ordering::SeqCst) + 1) as f64;
        let excess = (waiting - room).max(1.0);
        (excess * service / n).ceil().clamp(1.0, 60.0) as u64
    }

    pub fn gauges(&self) -> QueueGauges {
        QueueGauges {
            queued: self.queued.load(Ordering::SeqCst),
            queue_capacity: self.queue_depth,
            max_inflight: self.max_inflight,
            service_time: self.service_time(),
        }
    }

    /// Slots in use now.
    pub fn in_use(&self) -> usize {
        self.max_inflight - self.semaphore.available_permits()
    }
}

/// A reserved place in a [`Limiter`]'s queue; releases it when dropped.
struct QueuePlace<'a> {
    limiter: &'a Limiter,
    /// False while waiting: a drop then means the request future was dropped (client gone).
    settled: bool,
}

impl Drop for QueuePlace<'_> {
    fn drop(&mut self) {
        self.limiter.queued.fetch_sub(1, Ordering::SeqCst);
        if !self.settled {
            self.limiter
                .metrics
                .queue(self.limiter.kind)
                .abandoned
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The job of a proof panicked.
#[derive(Debug)]
pub struct JobPanicked;

/// Admission for the proving routes: `max_inflight` slots given out by one FIFO [`Limiter`] or
/// by per-caller [`FairShares`] (`--admission`), each proof run on the rayon pool its
/// [`ProveThreads`] layout gives it; or, with `--unlimited`, no limit and a fresh pool per proof.
pub struct ProveAdmission {
    queue: Option<Queue>,
    pools: Pools,
    prove_threads: usize,
    /// How busy the slots were over each proof's time, to state a proof's time on the whole
    /// pool at full load (see [`SlotOccupancy`]); only for threads that follow the queue.
    occupancy: Option<Arc<SlotOccupancy>>,
    /// The slots held now; with threads that follow the queue, a proof that finds none held
    /// gets the whole pool.
    holding: Arc<AtomicUsize>,
    metrics: Arc<Metrics>,
}

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

/// Where the proofs run.
enum Pools {
    /// Threads that follow the queue: the whole pool, and the idle one-thread pools (one per
    /// slot, so a proof that starts beside others always finds one).
    Adaptive {
        whole: Arc<rayon::ThreadPool>,
        single: Arc<Mutex<Vec<Arc<rayon::ThreadPool>>>>,
    },
    /// A pool per slot; the idle ones. There are exactly `max_inflight` of them, so a request
    /// holding a permit always finds one.
    Dedicated(Arc<Mutex<Vec<Arc<rayon::ThreadPool>>>>),
    /// A fresh pool per proof (`--unlimited`).
    Fresh,
}

/// How the queue is served.
enum Queue {
    /// One queue in arrival order, for every caller.
    Fifo(Limiter),
    /// A queue per caller, in weighted turns.
    Fair(FairShares),
}

/// A held slot of either queue.
enum Held {
    // Never read: held for its drop, which frees the slot.
    #[allow(dead_code)]
    Fifo(Permit),
    #[allow(dead_code)]
    Fair(Grant),
}

/// The right to prove now: a permit (if limited) and the pool to prove on.
pub struct Slot {
    pool: Option<Arc<rayon::ThreadPool>>,
    /// Where to return the pool; only for the pools of one slot.
    idle_pools: Option<Arc<Mutex<Vec<Arc<rayon::ThreadPool>>>>>,
    /// Whether the pool is every thread of threads that follow the queue.
    whole: bool,
    /// The admission's count of slots held, given back on drop.
    holding: Option<Arc<AtomicUsize>>,
    permit: Option<Held>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        // Return the pool before releasing the permit, so that the next holder finds it.
        if let (Some(pool), Some(idle)) = (self.pool.take(), &self.idle_pools) {
            idle.lock().unwrap_or_else(|e| e.into_inner()).push(pool);
        }
        if let Some(holding) = self.holding.take() {
            holding.fetch_sub(1, Ordering::SeqCst);
        }
        self.permit.take();
    }
}

/// The time integral of the slots in use, so that a proof can tell how many proofs shared the
/// pool with it on average.
///
/// On the whole pool a proof alone takes about half the time it takes on one thread beside
/// another on two CPUs, but the queue's expected wait (position x service time / slots) needs
/// the time a proof holds its slot while every slot is busy, which is when requests queue. So
/// the time `t` of a proof on the whole pool, at an average of `c` slots in use, is entered as
/// `t x slots / c`: for a lone proof its time at full load if the threads scaled perfectly (an
/// upper estimate, since they do not quite: the safe side for shedding).
pub struct SlotOccupancy {
    slots: usize,
    state: Mutex<Occupancy>,
}

struct Occupancy {
    in_use: usize,
    since: Instant,
    /// Slot-seconds in use from the start up to `since`.
    slot_seconds: f64,
}

/// A proof's start, for [`SlotOccupancy::leave`].
pub struct OccupancyMark {
    at: Instant,
    slot_seconds: f64,
}

impl SlotOccupancy {
    pub fn new(slots: usize) -> Self {
        SlotOccupancy {
            slots: slots.max(1),
            state: Mutex::new(Occupancy {
                in_use: 0,
                since: Instant::now(),
                slot_seconds: 0.0,
            }),
        }
    }

    /// A proof takes a slot.
    pub fn enter(&self) -> OccupancyMark {
        self.enter_at(Instant::now())
    }

    /// The proof of `mark` gives its slot back: its time, stated at full load.
    pub fn leave(&self, mark: OccupancyMark) -> Duration {
        self.leave_at(mark, Instant::now())
    }

    fn lock(&self) -> MutexGuard<'_, Occupancy> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enter_at(&self, now: Instant) -> OccupancyMark {
        let mut st = self.lock();
        st.advance(now);
        st.in_use += 1;
        OccupancyMark {
            at: now,
            slot_seconds: st.slot_seconds,
        }
    }

    fn leave_at(&self, mark: OccupancyMark, now: Instant) -> Duration {
        let mut st = self.lock();
        st.advance(now);
        st.in_use = st.in_use.saturating_sub(1);
        let held = now.saturating_duration_since(mark.at);
        let secs = held.as_secs_f64();
        if secs <= 0.0 {
            return held;
        }
        let average_in_use =
            ((st.slot_seconds - mark.slot_seconds) / secs).clamp(1.0, self.slots as f64);
        held.mul_f64(self.slots as f64 / average_in_use)
    }
}

impl Occupancy {
    fn advance(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.since);
        self.slot_seconds += self.in_use as f64 * elapsed.as_secs_f64();
        self.since = self.since.max(now);
    }
}

fn build_pool(threads: usize, name: String) -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .map_err(|e| format!("cannot start a prove pool: {e}"))
}

/// A pool whose thread `i` runs on `cpus[i]` only ([`crate::affinity`]). Each thread pins
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
            if let Err(e) = crate::affinity::pin_current_thread(cpus[i]) {
                tracing::error!(cpu = cpus[i], error = %e, "cannot pin a prove thread");
            }
        })
        .build()
        .map_err(|e| format!("cannot start a prove pool: {e}"))?;
    let seen = pool.broadcast(|ctx| (ctx.index(), crate::affinity::current_thread_cpus()));
    for (i, cpus) in seen {
        match cpus {
            Ok(cpus) if cpus == [wanted[i]] => {}
            Ok(cpus) => {
                return Err(format!(
                    "--pin-cpus: thread {name}-{i} runs on CPUs {} instead of {} only",
                    crate::affinity::list(&cpus),
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
                cpus = %crate::affinity::list(cpus),
                "prove threads pinned"
            );
            Ok(pool)
        }
        None => build_pool(threads, name),
    }
}

impl ProveAdmission {
    /// `max_inflight: None` means unlimited. `threads`: one pool shared by the slots, or a
    /// pool per slot (see [`ProveThreads`]). `service_time` seeds the estimate of one proof's
    /// time on a slot at full load (see [`Limiter::expected_wait`]). `pin_cpus`: every prove
    /// thread on a CPU of its own (`--pin-cpus`, see [`crate::affinity`]); refused with a
    /// message when the threads exceed the CPUs allowed, or when unlimited.
    pub fn new(
        max_inflight: Option<usize>,
        threads: ProveThreads,
        queue_depth: usize,
        queue_timeout: Duration,
        service_time: Duration,
        metrics: Arc<Metrics>,
        pin_cpus: bool,
    ) -> Result<Self, String> {
        let prove_threads = threads.pool_threads();
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
            let cpus = crate::affinity::allowed_cpus()?;
            crate::affinity::plan(pools, threads, &cpus).map(Some)
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
        let pools = match (threads, max_inflight) {
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
        };
        let occupancy = match (&pools, max_inflight) {
            (Pools::Adaptive { .. }, Some(slots)) => Some(Arc::new(SlotOccupancy::new(slots))),
            _ => None,
        };
        Ok(ProveAdmission {
            queue: max_inflight.map(|n| {
                Queue::Fifo(
                    Limiter::new(
                        QueueKind::Prove,
                        n,
                        queue_depth,
                        queue_timeout,
                        metrics.clone(),
                    )
                    .with_service_time(service_time),
                )
            }),
            pools,
            prove_threads,
            occupancy,
            holding: Arc::new(AtomicUsize::new(0)),
            metrics,
        })
    }

    /// Gives the slots out by per-caller fair shares instead of one FIFO queue: every caller
    /// of `callers` (with its weight) gets a queue of `caller_queue_depth` places and at most
    /// `caller_max_inflight` proofs in flight; the slots, the queue timeout and the service
    /// time estimate stay this controller's. No effect in unlimited mode.
    pub fn with_fair_shares(
        mut self,
        callers: Vec<(Caller, u32)>,
        caller_queue_depth: usize,
        caller_max_inflight: usize,
    ) -> Self {
        if let Some(Queue::Fifo(limiter)) = &self.queue {
            let config = SharesConfig {
                max_inflight: limiter.max_inflight,
                caller_queue_depth,
                caller_max_inflight: caller_max_inflight.max(1),
                queue_timeout: limiter.queue_timeout,
                callers,
            };
            let service_time = limiter
                .service_time
                .clone()
                .expect("the proving limiter estimates its service time");
            self.queue = Some(Queue::Fair(FairShares::new(
                config,
                service_time,
                self.metrics.clone(),
            )));
        }
        self
    }

    /// Whether the slots are given out by fair shares.
    pub fn is_fair(&self) -> bool {
        matches!(self.queue, Some(Queue::Fair(_)))
    }

    /// See [`Limiter::shed_early`] and [`FairShares::shed_early`]; never in unlimited mode.
    pub fn shed_early(&self, caller: &Caller) -> bool {
        match &self.queue {
            None => false,
            Some(Queue::Fifo(limiter)) => limiter.shed_early(),
            Some(Queue::Fair(shares)) => shares.shed_early(caller),
        }
    }

    /// Waits for a proof slot for `caller` (see [`Limiter::acquire`] and
    /// [`FairShares::acquire`]); immediate in unlimited mode.
    pub async fn acquire(&self, caller: &Caller) -> Result<(Slot, Duration), AdmitError> {
        let (permit, waited) = match &self.queue {
            None => {
                return Ok((
                    Slot {
                        pool: None,
                        idle_pools: None,
                        whole: false,
                        holding: None,
                        permit: None,
                    },
                    Duration::ZERO,
                ))
            }
            Some(Queue::Fifo(limiter)) => {
                let (permit, waited) = limiter.acquire().await?;
                (Held::Fifo(permit), waited)
            }
            Some(Queue::Fair(shares)) => {
                let (grant, waited) = shares.acquire(caller).await?;
                (Held::Fair(grant), waited)
            }
        };
        // Counted before a pool is chosen, so that of two proofs starting at once only one
        // finds no other slot held.
        let alone = self.holding.fetch_add(1, Ordering::SeqCst) == 0;
        let idle_pool = |idle: &Arc<Mutex<Vec<Arc<rayon::ThreadPool>>>>| {
            let pool = idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            debug_assert!(pool.is_some(), "a permit holder always finds an idle pool");
            (pool, Some(idle.clone()))
        };
        let (pool, idle_pools, whole) = match &self.pools {
            Pools::Adaptive { whole, .. } if alone => (Some(whole.clone()), None, true),
            Pools::Adaptive { single, .. } => {
                let (pool, idle) = idle_pool(single);
                (pool, idle, false)
            }
            Pools::Dedicated(idle) => {
                let (pool, idle) = idle_pool(idle);
                (pool, idle, false)
            }
            Pools::Fresh => (None, None, false),
        };
        Ok((
            Slot {
                pool,
                idle_pools,
                whole,
                holding: Some(self.holding.clone()),
                permit: Some(permit),
            },
            waited,
        ))
    }

    /// Runs `job` on the slot's pool (never on a tokio thread) and hands back its result. The
    /// slot stays held until the job ends, even if the awaiting request is dropped meanwhile:
    /// the CPU is busy until then, so the cap must count it.
    pub async fn run<R, F>(&self, mut slot: Slot, job: F) -> Result<R, JobPanicked>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let pool = match slot.pool.clone() {
            Some(pool) => pool,
            None => match build_pool(self.prove_threads, "prove-u".to_string()) {
                Ok(pool) => {
                    let pool = Arc::new(pool);
                    slot.pool = Some(pool.clone());
                    pool
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot start a prove pool");
                    return Err(JobPanicked);
                }
            },
        };
        let (tx, rx) = oneshot::channel();
        let metrics = self.metrics.clone();
        let service_time = match &self.queue {
            None => None,
            Some(Queue::Fifo(limiter)) => limiter.service_time.clone(),
            Some(Queue::Fair(shares)) => Some(shares.service_time()),
        };
        let held_since = Instant::now();
        let occupancy = self.occupancy.clone();
        let mark = occupancy.as_ref().map(|o| o.enter());
        let whole = slot.whole;
        pool.spawn(move || {
            metrics.proof_started();
            let result = catch_unwind(AssertUnwindSafe(job));
            // Every proof counts in the occupancy; only a proof on the whole pool ran faster
            // than it will at full load, where each proof has one thread.
            let at_full_load = match (&occupancy, mark) {
                (Some(occupancy), Some(mark)) => Some(occupancy.leave(mark)),
                _ => None,
            };
            let held = match at_full_load {
                Some(scaled) if whole => scaled,
                _ => held_since.elapsed(),
            };
            if let Some(estimate) = service_time {
                estimate.observe(held);
            }
            metrics.proof_finished();
            if result.is_err() {
                metrics.proof_panicked();
            }
            drop(slot);
            if tx.send(result).is_err() {
                metrics.proof_discarded();
            }
        });
        match rx.await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) | Err(_) => Err(JobPanicked),
        }
    }

    /// Seconds a shed `caller` should wait before retrying: from the one queue, or from its
    /// own share.
    pub fn retry_after_secs(&self, caller: &Caller) -> u64 {
        match &self.queue {
            None => 1,
            Some(Queue::Fifo(limiter)) => limiter.retry_after_secs(),
            Some(Queue::Fair(shares)) => shares.retry_after_secs(caller),
        }
    }

    pub fn gauges(&self) -> QueueGauges {
        match &self.queue {
            None => QueueGauges::default(),
            Some(Queue::Fifo(limiter)) => limiter.gauges(),
            Some(Queue::Fair(shares)) => shares.gauges(),
        }
    }

    /// The per-caller series of fair shares (nothing for the FIFO).
    pub fn render_callers(&self, out: &mut String) {
        if let Some(Queue::Fair(shares)) = &self.queue {
            shares.render(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(n: usize, depth: usize, timeout_ms: u64) -> (Arc<Limiter>, Arc<Metrics>) {
        let m = Arc::new(Metrics::new());
        let l = Limiter::new(
            QueueKind::Prove,
            n,
            depth,
            Duration::from_millis(timeout_ms),
            m.clone(),
        );
        (Arc::new(l), m)
    }

    #[tokio::test]
    async fn sheds_beyond_cap_plus_queue() {
        let (l, m) = limiter(1, 2, 5_000);
        let (p1, w) = l.acquire().await.unwrap();
        assert_eq!(w, Duration::ZERO);
        let a = tokio::spawn({
            let l = l.clone();
            async move { l.acquire().await.map(|_| ()) }
        });
        let b = tokio::spawn({
            let l = l.clone();
            async move { l.acquire().await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(l.gauges().queued, 2);
        assert_eq!(l.acquire().await.unwrap_err(), AdmitError::Shed);
        assert_eq!(m.queue(QueueKind::Prove).shed.load(Ordering::Relaxed), 1);
        // The early check agrees, and counts its shed too.
        assert!(l.shed_early());
        assert_eq!(m.queue(QueueKind::Prove).shed.load(Ordering::Relaxed), 2);
        drop(p1);
        a.await.unwrap().unwrap();
        b.await.unwrap().unwrap();
        assert_eq!(l.gauges().queued, 0);
        assert_eq!(l.in_use(), 0);
        assert!(!l.shed_early(), "free slots: nothing to shed");
    }

    #[tokio::test]
    async fn queue_is_fifo() {
        let (l, _) = limiter(1, 10, 5_000);
        let (p, _) = l.acquire().await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..5 {
            let (l, order) = (l.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let (p, _) = l.acquire().await.unwrap();
                order.lock().unwrap().push(i);
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(p);
            }));
            // Make the arrival order unambiguous.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(p);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn times_out_and_counts() {
        let (l, m) = limiter(1, 4, 100);
        let (_p, _) = l.acquire().await.unwrap();
        let t0 = Instant::now();
        match l.acquire().await {
            Err(AdmitError::Timeout(w)) => assert!(w >= Duration::from_millis(100)),
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert_eq!(
            m.queue(QueueKind::Prove).timeouts.load(Ordering::Relaxed),
            1
        );
        assert_eq!(l.gauges().queued, 0);
    }

    #[tokio::test]
    async fn dropped_waiter_leaves_the_queue_and_is_counted() {
        let (l, m) = limiter(1, 4, 5_000);
        let (p, _) = l.acquire().await.unwrap();
        let waiter = tokio::spawn({
            let l = l.clone();
            async move { l.acquire().await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(l.gauges().queued, 1);
        waiter.abort();
        let _ = waiter.await;
        assert_eq!(l.gauges().queued, 0);
        assert_eq!(
            m.queue(QueueKind::Prove).abandoned.load(Ordering::Relaxed),
            1
        );
        drop(p);
        // The slot is free again, nobody took it.
        assert_eq!(l.in_use(), 0);
    }

    #[tokio::test]
    async fn sheds_a_newcomer_whose_expected_wait_exceeds_the_queue_timeout() {
        let ms = Duration::from_millis;
        for slots in [1, 2] {
            let m = Arc::new(Metrics::new());
            let l = Arc::new(
                Limiter::new(QueueKind::Prove, slots, 100, ms(1_000), m.clone())
                    .with_service_time(ms(100)),
            );
            // Position p waits about p x 100 ms / slots: 10 x slots places fit 1 s.
            let places = 10 * slots;
            assert_eq!(l.expected_wait(places), Some(ms(1_000)));
            assert_eq!(
                l.expected_wait(places + 1),
                Some(ms(1_000 + 100 / slots as u64))
            );
            let mut held = Vec::new();
            for _ in 0..slots {
                held.push(l.acquire().await.unwrap().0);
            }
            let waiters: Vec<_> = (0..places)
                .map(|_| {
                    let l = l.clone();
                    tokio::spawn(async move { l.acquire().await.map(|_| ()) })
                })
                .collect();
            let deadline = Instant::now() + Duration::from_secs(5);
            while l.gauges().queued < places {
                assert!(Instant::now() < deadline, "waiters never queued");
                tokio::time::sleep(ms(5)).await;
            }
            // The queue has places left, but the next newcomer would wait past the timeout.
            assert!(l.gauges().queue_capacity > places);
            assert!(l.shed_early());
            assert_eq!(l.acquire().await.unwrap_err(), AdmitError::Shed);
            assert_eq!(m.queue(QueueKind::Prove).shed.load(Ordering::Relaxed), 2);
            // One service time from now a place fits again.
            assert_eq!(l.retry_after_secs(), 1);
            drop(held);
            for w in waiters {
                w.await.unwrap().unwrap();
            }
            assert_eq!(
                m.queue(QueueKind::Prove).timeouts.load(Ordering::Relaxed),
                0
            );
        }
    }

    #[test]
    fn the_service_time_estimate_follows_observations() {
        let ms = Duration::from_millis;
        let estimate = ServiceTime::new(ms(100));
        estimate.observe(ms(300));
        // 100 + 0.2 x (300 - 100)
        assert_eq!(estimate.get(), ms(140));
        for _ in 0..60 {
            estimate.observe(ms(300));
        }
        assert!(ms(300) - estimate.get() < ms(1), "{:?}", estimate.get());
        // Without an estimate a limiter sheds on depth alone.
        let (l, _) = limiter(1, 4, 1);
        assert_eq!(l.expected_wait(1_000), None);
        assert_eq!(l.retry_after_secs(), 1);
    }

    #[tokio::test]
    async fn zero_depth_never_queues() {
        let (l, _) = limiter(1, 0, 5_000);
        let _p = l.acquire().await.unwrap();
        assert_eq!(l.acquire().await.unwrap_err(), AdmitError::Shed);
    }

    #[tokio::test]
    async fn jobs_run_off_the_runtime_and_hold_their_slot() {
        let m = Arc::new(Metrics::new());
        let adm = Arc::new(
            ProveAdmission::new(
                Some(1),
                ProveThreads::PerSlot(1),
                4,
                Duration::from_secs(5),
                Duration::from_millis(100),
                m.clone(),
                false,
            )
            .unwrap(),
        );
        let (slot, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
        let name = adm
            .run(slot, || std::thread::current().name().map(str::to_owned))
            .await
            .unwrap();
        assert_eq!(name.as_deref(), Some("prove0-0"));
        // A panicking job is reported, and its slot comes back.
        let (slot, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
        assert!(adm.run(slot, || -> () { panic!("boom") }).await.is_err());
        let (slot, w) = adm.acquire(&Caller::anonymous()).await.unwrap();
        assert_eq!(w, Duration::ZERO);
        drop(slot);
        assert_eq!(m.proofs_in_flight(), 0);
        assert_eq!(m.proofs_started(), 2);
    }

    /// `--pin-cpus` on every layout this machine's CPUs allow (on 2 CPUs: 2 slots x 1 thread
    /// and 1 slot x 2 threads): each prove thread's `Cpus_allowed_list`, read back from
    /// `/proc/self/task/{tid}/status`, is one CPU, and no two threads share one.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn pinned_slots_run_on_cpus_of_their_own() {
        let cpus = crate::affinity::allowed_cpus().unwrap();
        let n = cpus.len();
        for (slots, threads) in [(n, 1), (1, n)] {
            let adm = Arc::new(
                ProveAdmission::new(
                    Some(slots),
                    ProveThreads::PerSlot(threads),
                    4,
                    Duration::from_secs(5),
                    Duration::from_millis(100),
                    Arc::new(Metrics::new()),
                    true,
                )
                .unwrap(),
            );
            // Hold every slot at once, so that each pool is visited.
            let mut held = Vec::new();
            for _ in 0..slots {
                held.push(adm.acquire(&Caller::anonymous()).await.unwrap().0);
            }
            let mut jobs = Vec::new();
            for slot in held {
                let adm = adm.clone();
                jobs.push(tokio::spawn(async move {
                    adm.run(slot, || {
                        rayon::broadcast(|_| {
                            let tid = crate::affinity::current_thread_id();
                            let status =
                                std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
                                    .unwrap();
                            let line = status
                                .lines()
                                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                                .unwrap()
                                .to_owned();
                            crate::affinity::parse_list(&line).unwrap()
                        })
                    })
                    .await
                    .unwrap()
                }));
            }
            let mut seen = Vec::new();
            for job in jobs {
                let per_thread = job.await.unwrap();
                assert_eq!(per_thread.len(), threads);
                for allowed in per_thread {
                    assert_eq!(allowed.len(), 1, "{slots}x{threads}: {allowed:?}");
                    seen.push(allowed[0]);
                }
            }
            seen.sort_unstable();
            let mut expected = cpus.clone();
            expected.sort_unstable();
            assert_eq!(seen, expected, "{slots}x{threads}");
        }
        // Threads that follow the queue: the whole pool's thread t on the t-th CPU.
        let adm = ProveAdmission::new(
            Some(n),
            ProveThreads::Adaptive(n),
            4,
            Duration::from_secs(5),
            Duration::from_millis(100),
            Arc::new(Metrics::new()),
            true,
        )
        .unwrap();
        let (slot, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
        let mut seen = adm
            .run(slot, || {
                rayon::broadcast(|_| crate::affinity::current_thread_cpus().unwrap())
            })
            .await
            .unwrap();
        assert!(seen.iter().all(|cpus| cpus.len() == 1), "{seen:?}");
        seen.sort_unstable();
        let mut expected: Vec<Vec<usize>> = cpus.iter().map(|&c| vec![c]).collect();
        expected.sort_unstable();
        assert_eq!(seen, expected, "the whole pool");
        // One thread more than CPUs, or no cap: refused, saying why.
        let refused = |max_inflight, threads| {
            ProveAdmission::new(
                max_inflight,
                ProveThreads::PerSlot(threads),
                4,
                Duration::from_secs(5),
                Duration::from_millis(100),
                Arc::new(Metrics::new()),
                true,
            )
            .err()
            .expect("refused")
        };
        let err = refused(Some(n + 1), 1);
        assert!(
            err.contains(&format!("= {} threads", n + 1)) && err.contains(&format!("{n} CPUs")),
            "{err}"
        );
        assert!(refused(Some(1), n + 1).contains("--prove-threads"));
        assert!(refused(None, 1).contains("--unlimited"));
    }

    fn shared(
        slots: usize,
        threads: usize,
        queue_depth: usize,
    ) -> (Arc<ProveAdmission>, Arc<Metrics>) {
        let m = Arc::new(Metrics::new());
        let adm = ProveAdmission::new(
            Some(slots),
            ProveThreads::Adaptive(threads),
            queue_depth,
            Duration::from_secs(5),
            Duration::from_millis(100),
            m.clone(),
            false,
        )
        .unwrap();
        (Arc::new(adm), m)
    }

    /// The rayon thread indices a parallel loop of `items` short sleeps ran on.
    fn spread(items: usize) -> std::collections::BTreeSet<usize> {
        use rayon::prelude::*;
        (0..items)
            .into_par_iter()
            .map(|_| {
                std::thread::sleep(Duration::from_millis(2));
                rayon::current_thread_index().expect("runs on a rayon pool")
            })
            .collect::<Vec<_>>()
            .into_iter()
            .collect()
    }

    #[tokio::test]
    async fn a_lone_proof_gets_every_thread() {
        let (adm, _) = shared(2, 2, 4);
        let (slot, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
        let (threads, used, name) = adm
            .run(slot, || {
                (
                    rayon::current_num_threads(),
                    spread(64),
                    std::thread::current().name().map(str::to_owned),
                )
            })
            .await
            .unwrap();
        assert_eq!(threads, 2);
        assert_eq!(used.len(), 2, "the loop ran on threads {used:?} only");
        assert!(name.is_some_and(|n| n.starts_with("prove-")));
    }

    /// A proof that starts while another holds a slot gets a one-thread pool of its own, one
    /// that starts alone the whole pool; never more proofs than slots.
    #[tokio::test]
    async fn a_proof_beside_others_gets_a_thread_of_its_own() {
        let (adm, m) = shared(2, 2, 8);
        /// The threads of the pool a proof on `slot` runs on, and its thread's name.
        async fn threads(adm: &ProveAdmission, slot: Slot) -> (usize, Option<String>) {
            adm.run(slot, || {
                (
                    rayon::current_num_threads(),
                    std::thread::current().name().map(str::to_owned),
                )
            })
            .await
            .unwrap()
        }
        let (first, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
        let (second, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
        let (n, beside) = threads(&adm, second).await;
        assert_eq!(n, 1, "started beside another");
        // While `first` still holds its slot, the next one is beside it too.
        let (third, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
        let (n, _) = threads(&adm, third).await;
        assert_eq!(n, 1);
        let (n, alone) = threads(&adm, first).await;
        assert_eq!(n, 2, "started alone");
        assert_ne!(alone, beside);
        // Every slot free again: the next proof is alone.
        let (fourth, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
        assert_eq!(threads(&adm, fourth).await.0, 2);

        // Six proofs, each waiting until it sees another running: at most two at once, and
        // every proof but one that started alone ran on one thread.
        let running = Arc::new(AtomicUsize::new(0));
        let mut jobs = Vec::new();
        for _ in 0..6 {
            let (adm, running) = (adm.clone(), running.clone());
            jobs.push(tokio::spawn(async move {
                let (slot, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
                adm.run(slot, move || {
                    running.fetch_add(1, Ordering::SeqCst);
                    let deadline = Instant::now() + Duration::from_secs(10);
                    while Instant::now() < deadline && running.load(Ordering::SeqCst) < 2 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    let used = spread(32);
                    running.fetch_sub(1, Ordering::SeqCst);
                    (rayon::current_num_threads(), used)
                })
                .await
                .unwrap()
            }));
        }
        let mut one_thread = 0;
        for job in jobs {
            let (threads, used) = job.await.unwrap();
            assert!(
                used.len() <= threads && used.iter().all(|&i| i < threads),
                "{used:?}"
            );
            one_thread += usize::from(threads == 1);
        }
        assert!(
            one_thread >= 3,
            "{one_thread} of 6 proofs ran on one thread"
        );
        let metrics = m.render(true, false, Default::default(), Default::default(), 0);
        assert!(
            metrics.contains("enygma_proofs_in_flight_peak 2"),
            "{metrics}"
        );
        // Without a queue, a third request is shed while two proofs hold the slots.
        let (adm, _) = shared(2, 2, 0);
        let a = adm.acquire(&Caller::anonymous()).await.unwrap();
        let b = adm.acquire(&Caller::anonymous()).await.unwrap();
        assert_eq!(
            adm.acquire(&Caller::anonymous()).await.err(),
            Some(AdmitError::Shed)
        );
        drop((a, b));
        assert!(adm.acquire(&Caller::anonymous()).await.is_ok());
    }

    #[tokio::test]
    async fn a_panicking_proof_frees_its_slot_and_pool() {
        let (adm, m) = shared(2, 2, 0);
        for _ in 0..3 {
            let (slot, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
            assert!(adm.run(slot, || -> () { panic!("boom") }).await.is_err());
        }
        // Both slots are free, and the pools still prove: b started beside a, on one thread.
        let a = adm.acquire(&Caller::anonymous()).await.unwrap();
        let (b, w) = adm.acquire(&Caller::anonymous()).await.unwrap();
        assert_eq!(w, Duration::ZERO);
        drop(a);
        assert_eq!(adm.run(b, rayon::current_num_threads).await.unwrap(), 1);
        let (c, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
        assert_eq!(adm.run(c, rayon::current_num_threads).await.unwrap(), 2);
        assert_eq!(m.proofs_in_flight(), 0);
    }

    /// A proof time on the whole pool is entered at full load: a proof alone on 2 slots for
    /// 1 s counts as 2 s, one beside another all along as itself, one half alone as 1.33 s.
    #[test]
    fn whole_pool_times_are_stated_at_full_load() {
        let s = Duration::from_secs;
        let occupancy = SlotOccupancy::new(2);
        let t0 = Instant::now();
        let alone = occupancy.enter_at(t0);
        assert_eq!(occupancy.leave_at(alone, t0 + s(1)), s(2));
        let a = occupancy.enter_at(t0 + s(2));
        let b = occupancy.enter_at(t0 + s(2));
        assert_eq!(occupancy.leave_at(a, t0 + s(4)), s(2));
        // b: 2 s beside a, then 2 s alone: 1.5 slots on average.
        let held = occupancy.leave_at(b, t0 + s(6));
        assert!(
            (held.as_secs_f64() - 4.0 * 2.0 / 1.5).abs() < 1e-6,
            "{held:?}"
        );
        // A lone proof on one slot is itself.
        let one = SlotOccupancy::new(1);
        let mark = one.enter_at(t0);
        assert_eq!(one.leave_at(mark, t0 + s(3)), s(3));
    }

    #[tokio::test]
    async fn unlimited_runs_everything_at_once() {
        let m = Arc::new(Metrics::new());
        let adm = Arc::new(
            ProveAdmission::new(
                None,
                ProveThreads::PerSlot(1),
                0,
                Duration::from_secs(5),
                Duration::from_millis(100),
                m.clone(),
                false,
            )
            .unwrap(),
        );
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let adm = adm.clone();
            tasks.push(tokio::spawn(async move {
                let (slot, w) = adm.acquire(&Caller::anonymous()).await.unwrap();
                assert_eq!(w, Duration::ZERO);
                adm.run(slot, || std::thread::sleep(Duration::from_millis(200)))
                    .await
                    .unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert!(m
            .render(true, false, Default::default(), Default::default(), 0)
            .contains("enygma_proofs_in_flight_peak 4"));
    }
}
