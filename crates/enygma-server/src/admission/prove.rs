//! Admission for the proving routes: a slot from the queue, the pool the proof runs on, and
//! the proof itself, run off the async runtime with its slot held until it ends.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::config::AdmissionConfig;
use super::limiter::{AdmitError, Limiter};
use super::pools::{build_pool, IdlePools, Pools, ProveThreads};
use super::queue::{Held, Queue};
use super::service_time::SlotOccupancy;
use crate::caller::Caller;
use crate::metrics::{Metrics, QueueGauges, QueueKind};

/// What a job on a proving slot is: a request's proof, counted in the metrics and moving the
/// service-time estimate, or the start-up calibration, whose time replaces the estimate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Job {
    Request,
    Calibration,
}

/// The job of a proof panicked.
#[derive(Debug)]
pub(crate) struct JobPanicked;

/// Admission for the proving routes: `max_inflight` slots given out by one FIFO [`Limiter`] or
/// by per-caller fair shares ([`super::fair`], `--admission`), each proof run on the rayon pool
/// its [`ProveThreads`] layout gives it; or, with `--unlimited`, no limit and a fresh pool per
/// proof.
pub(crate) struct ProveAdmission {
    queue: Queue,
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

/// The right to prove now: a permit (if limited) and the pool to prove on.
pub(crate) struct Slot {
    pool: Option<Arc<rayon::ThreadPool>>,
    /// Where to return the pool; only for the pools of one slot.
    idle_pools: Option<IdlePools>,
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

impl ProveAdmission {
    /// The proving admission `cfg` describes: its slots, queue and thread layout, and fair
    /// shares unless `cfg.fair` is `None`.
    pub(crate) fn from_config(
        cfg: &AdmissionConfig,
        metrics: Arc<Metrics>,
    ) -> Result<Self, String> {
        let prove = Self::new(
            cfg.max_inflight,
            cfg.prove_threads,
            cfg.queue_depth,
            cfg.queue_timeout,
            cfg.service_time,
            metrics,
            cfg.pin_cpus,
        )?;
        Ok(match &cfg.fair {
            Some(fair) => prove.with_fair_shares(
                fair.shares(),
                fair.caller_queue_depth,
                fair.caller_max_inflight,
            ),
            None => prove,
        })
    }

    /// `max_inflight: None` means unlimited. `threads`: one pool shared by the slots, or a
    /// pool per slot (see [`ProveThreads`]). `service_time` seeds the estimate of one proof's
    /// time on a slot at full load (see [`Limiter::expected_wait`]). `pin_cpus`: every prove
    /// thread on a CPU of its own (`--pin-cpus`, see [`super::pinning`]); refused with a
    /// message when the threads exceed the CPUs allowed, or when unlimited. The service builds
    /// it from an [`AdmissionConfig`] ([`Self::from_config`]); the unit tests from its parts.
    pub(super) fn new(
        max_inflight: Option<usize>,
        threads: ProveThreads,
        queue_depth: usize,
        queue_timeout: Duration,
        service_time: Duration,
        metrics: Arc<Metrics>,
        pin_cpus: bool,
    ) -> Result<Self, String> {
        let pools = Pools::start(max_inflight, threads, pin_cpus)?;
        let occupancy = match max_inflight {
            Some(slots) if pools.follow_the_queue() => Some(Arc::new(SlotOccupancy::new(slots))),
            _ => None,
        };
        let queue = match max_inflight {
            None => Queue::Unlimited,
            Some(n) => Queue::Fifo(
                Limiter::new(
                    QueueKind::Prove,
                    n,
                    queue_depth,
                    queue_timeout,
                    metrics.clone(),
                )
                .with_service_time(service_time),
            ),
        };
        Ok(ProveAdmission {
            queue,
            pools,
            prove_threads: threads.pool_threads(),
            occupancy,
            holding: Arc::new(AtomicUsize::new(0)),
            metrics,
        })
    }

    /// Gives the slots out by per-caller fair shares instead of one FIFO queue: every caller
    /// of `callers` (with its weight) gets a queue of `caller_queue_depth` places and at most
    /// `caller_max_inflight` proofs in flight; the slots, the queue timeout and the service
    /// time estimate stay this controller's. No effect in unlimited mode.
    fn with_fair_shares(
        mut self,
        callers: Vec<(Caller, u32)>,
        caller_queue_depth: usize,
        caller_max_inflight: usize,
    ) -> Self {
        self.queue = self.queue.into_fair(
            callers,
            caller_queue_depth,
            caller_max_inflight,
            self.metrics.clone(),
        );
        self
    }

    /// See [`Limiter::shed_early`] and the fair shares' own ([`super::fair`]); never in
    /// unlimited mode.
    pub(crate) fn shed_early(&self, caller: &Caller) -> bool {
        self.queue.shed_early(caller)
    }

    /// Waits for a proof slot for `caller` (see [`Limiter::acquire`] and [`super::fair`]);
    /// immediate in unlimited mode.
    pub(crate) async fn acquire(&self, caller: &Caller) -> Result<(Slot, Duration), AdmitError> {
        let Some((permit, waited)) = self.queue.acquire(caller).await? else {
            return Ok((
                Slot {
                    pool: None,
                    idle_pools: None,
                    whole: false,
                    holding: None,
                    permit: None,
                },
                Duration::ZERO,
            ));
        };
        // Counted before a pool is chosen, so that of two proofs starting at once only one
        // finds no other slot held.
        let alone = self.holding.fetch_add(1, Ordering::SeqCst) == 0;
        let taken = self.pools.take(alone);
        Ok((
            Slot {
                pool: taken.pool,
                idle_pools: taken.idle,
                whole: taken.whole,
                holding: Some(self.holding.clone()),
                permit: Some(permit),
            },
            waited,
        ))
    }

    /// Runs `job` on the slot's pool (never on a tokio thread) and hands back its result. The
    /// slot stays held until the job ends, even if the awaiting request is dropped meanwhile:
    /// the CPU is busy until then, so the cap must count it.
    pub(crate) async fn run<R, F>(&self, slot: Slot, job: F) -> Result<R, JobPanicked>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        self.run_as(slot, job, Job::Request)
            .await
            .map(|(result, _)| result)
    }

    /// Measures the service time on this machine before the first request is admitted: runs
    /// `job` (a proof that stands for the traffic; it says whether it proved) as a request's
    /// proof would run, on a slot and its pool, and makes its time at full load the estimate.
    /// Not counted as a proof in the metrics (its slot's zero wait is, in the queue-wait
    /// histogram). Returns the new estimate; `None` in unlimited mode (no estimate) or when the
    /// job did not prove, and the estimate keeps its seed.
    pub(crate) async fn calibrate<F>(&self, job: F) -> Option<Duration>
    where
        F: FnOnce() -> bool + Send + 'static,
    {
        let estimate = self.queue.service_time()?;
        let (slot, _) = self.acquire(&Caller::anonymous()).await.ok()?;
        let (proved, held) = self.run_as(slot, job, Job::Calibration).await.ok()?;
        if !proved {
            return None;
        }
        estimate.set(held);
        Some(estimate.get())
    }

    /// Runs `job` on the slot's pool; returns its result and the slot's time at full load.
    async fn run_as<R, F>(
        &self,
        mut slot: Slot,
        job: F,
        kind: Job,
    ) -> Result<(R, Duration), JobPanicked>
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
        let service_time = self.queue.service_time();
        let held_since = Instant::now();
        let occupancy = self.occupancy.clone();
        let mark = occupancy.as_ref().map(|o| o.enter());
        let whole = slot.whole;
        let request = kind == Job::Request;
        pool.spawn(move || {
            if request {
                metrics.proof_started();
            }
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
            if let (Some(estimate), true) = (service_time, request) {
                estimate.observe(held);
            }
            if request {
                metrics.proof_finished();
                if result.is_err() {
                    metrics.proof_panicked();
                }
            }
            drop(slot);
            if tx.send(result.map(|r| (r, held))).is_err() && request {
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
    pub(crate) fn retry_after_secs(&self, caller: &Caller) -> u64 {
        self.queue.retry_after_secs(caller)
    }

    pub(crate) fn gauges(&self) -> QueueGauges {
        self.queue.gauges()
    }

    /// The per-caller series of fair shares (nothing for the FIFO).
    pub(crate) fn render_callers(&self, out: &mut String) {
        self.queue.render_callers(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let cpus = crate::admission::pinning::allowed_cpus().unwrap();
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
                            let tid = crate::admission::pinning::current_thread_id();
                            let status =
                                std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
                                    .unwrap();
                            let line = status
                                .lines()
                                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                                .unwrap()
                                .to_owned();
                            crate::admission::pinning::parse_list(&line).unwrap()
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
                rayon::broadcast(|_| crate::admission::pinning::current_thread_cpus().unwrap())
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

    /// The start-up calibration replaces the seed with its proof's time at full load (alone on
    /// the whole pool of 2 slots: twice its time), is not counted as a proof, and leaves the
    /// seed as it was when its proof fails or panics; later proofs move the estimate as before.
    #[tokio::test]
    async fn the_calibration_proof_replaces_the_seeded_estimate() {
        let (adm, m) = shared(2, 2, 0);
        let estimate = || adm.gauges().service_time.unwrap();
        assert_eq!(estimate(), Duration::from_millis(100));
        assert_eq!(adm.calibrate(|| false).await, None);
        assert_eq!(adm.calibrate(|| -> bool { panic!("boom") }).await, None);
        assert_eq!(estimate(), Duration::from_millis(100));

        let measured = adm
            .calibrate(|| {
                std::thread::sleep(Duration::from_millis(300));
                true
            })
            .await
            .unwrap();
        assert_eq!(measured, estimate());
        assert!(
            (Duration::from_millis(600)..Duration::from_millis(900)).contains(&measured),
            "{measured:?}"
        );
        assert_eq!(m.proofs_started(), 0);
        assert_eq!(m.proofs_in_flight(), 0);

        let (slot, _) = adm.acquire(&Caller::anonymous()).await.unwrap();
        adm.run(slot, || ()).await.unwrap();
        assert!(estimate() < measured, "a quick proof moves it down");
        assert_eq!(m.proofs_started(), 1);
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
