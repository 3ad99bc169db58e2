//! Admission: what a request must get through before it costs the service CPU, and the policy
//! of each step. The app calls one type, [`Admission`], built from one [`AdmissionConfig`].
//!
//! - [`limiter`]: one FIFO queue in front of a fixed number of slots, with its timeout and
//!   shedding (the verify routes' limit, and the proving queue with `--admission fifo`);
//! - [`fair`]: a queue per caller, served in weighted turns (the proving queue by default);
//! - [`queue`]: which of the two gives out the proving slots, or none (`--unlimited`);
//! - [`service_time`]: the running estimate of a proof's time on a slot, which the expected
//!   wait and `Retry-After` come from;
//! - [`pools`] and [`pinning`]: the rayon pools the proofs run on, and `--pin-cpus`;
//! - [`prove`]: a proving slot, its pool, and the proof run off the async runtime;
//! - [`check_pool`]: the bounded pool the request checks run on before admission;
//! - [`abuse`]: what a client may cost without sending a statement (malformed requests per
//!   connection, failed authentications per address);
//! - [`config`]: the settings with every default resolved.

pub(crate) mod abuse;
pub(crate) mod check_pool;
mod config;
mod fair;
mod limiter;
pub(crate) mod pinning;
mod pools;
mod prove;
mod queue;
mod service_time;

use std::sync::Arc;
use std::time::Duration;

pub use config::{
    default_queue_depth, default_service_time, AdmissionConfig, AdmissionMode, FairConfig,
};
pub(crate) use limiter::{AdmitError, Permit};
pub use pools::ProveThreads;
pub(crate) use prove::{JobPanicked, Slot};

use abuse::{AddressAllowances, Allowance};
use check_pool::{CheckPool, Full, Lost};
use limiter::Limiter;
use prove::ProveAdmission;

use crate::caller::Caller;
use crate::metrics::{Metrics, QueueGauges, QueueKind};

/// Every admission policy of the service, built from one [`AdmissionConfig`]: the proving
/// slots and their queue, the verify routes' own small limit, the request checks' pool, and the
/// allowances of malformed requests and failed authentications.
pub(crate) struct Admission {
    /// Shared by every proving route: all statements and all k compete for the same cores.
    prove: ProveAdmission,
    /// Verification has its own small limit and never enters the proving queue.
    verify: Limiter,
    /// The parse and checks of proving requests, on their own bounded pool.
    checks: CheckPool,
    /// Each connection's allowance of malformed requests ([`abuse`]).
    malformed_requests: Allowance,
    /// Failed authentications per client address ([`abuse`]).
    auth_failures: Arc<AddressAllowances>,
    /// Whether the service time is measured at start ([`AdmissionConfig::calibrate`]).
    calibrate: bool,
}

impl Admission {
    /// The admission `cfg` describes; an error names a layout that cannot be built (more
    /// pinned threads than CPUs, a pool that does not start).
    pub(crate) fn new(cfg: &AdmissionConfig, metrics: Arc<Metrics>) -> Result<Self, String> {
        Ok(Admission {
            prove: ProveAdmission::from_config(cfg, metrics.clone())?,
            verify: Limiter::new(
                QueueKind::Verify,
                cfg.verify_max_inflight,
                cfg.verify_queue_depth,
                cfg.queue_timeout,
                metrics,
            ),
            checks: CheckPool::new(cfg.check_threads, cfg.check_queue_depth)?,
            malformed_requests: Allowance::new(cfg.bad_request_burst, cfg.bad_request_refill),
            auth_failures: Arc::new(AddressAllowances::new(Allowance::new(
                cfg.auth_failure_burst,
                cfg.auth_failure_refill,
            ))),
            calibrate: cfg.calibrate,
        })
    }

    /// Whether a proving request of `caller` would be shed now: answered before its checks
    /// spend any CPU (see `Limiter::shed_early`).
    pub(crate) fn shed_early(&self, caller: &Caller) -> bool {
        self.prove.shed_early(caller)
    }

    /// Seconds a shed `caller` should wait before retrying.
    pub(crate) fn retry_after_secs(&self, caller: &Caller) -> u64 {
        self.prove.retry_after_secs(caller)
    }

    /// Runs a request's checks on their own pool, or refuses at once when it and its queue are
    /// full.
    pub(crate) async fn check<T, F>(&self, job: F) -> Result<Result<T, Lost>, Full>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.checks.run(job).await
    }

    /// Waits for a proving slot for `caller`; returns it and how long it waited.
    pub(crate) async fn acquire_proof(
        &self,
        caller: &Caller,
    ) -> Result<(Slot, Duration), AdmitError> {
        self.prove.acquire(caller).await
    }

    /// Runs `job` on the slot's pool, the slot held until the job ends.
    pub(crate) async fn prove<R, F>(&self, slot: Slot, job: F) -> Result<R, JobPanicked>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        self.prove.run(slot, job).await
    }

    /// Whether a proof at start is to set the service-time estimate ([`Self::calibrate`]).
    pub(crate) fn calibrates(&self) -> bool {
        self.calibrate
    }

    /// Runs `job`, a proof that stands for the traffic (it says whether it proved), on a
    /// proving slot as a request's would run, and makes its time the service-time estimate;
    /// returns the estimate.
    pub(crate) async fn calibrate<F>(&self, job: F) -> Option<Duration>
    where
        F: FnOnce() -> bool + Send + 'static,
    {
        self.prove.calibrate(job).await
    }

    /// Waits for a verification slot.
    pub(crate) async fn acquire_verify(&self) -> Result<(Permit, Duration), AdmitError> {
        self.verify.acquire().await
    }

    /// Each connection's allowance of malformed requests.
    pub(crate) fn malformed_requests(&self) -> &Allowance {
        &self.malformed_requests
    }

    /// Failed authentications per client address.
    pub(crate) fn auth_failures(&self) -> Arc<AddressAllowances> {
        self.auth_failures.clone()
    }

    /// The proving queue's gauges.
    pub(crate) fn prove_gauges(&self) -> QueueGauges {
        self.prove.gauges()
    }

    /// The verification queue's gauges.
    pub(crate) fn verify_gauges(&self) -> QueueGauges {
        self.verify.gauges()
    }

    /// Request checks running or queued now.
    pub(crate) fn checks_pending(&self) -> usize {
        self.checks.pending()
    }

    /// The per-caller series of fair shares (nothing for the FIFO).
    pub(crate) fn render_callers(&self, out: &mut String) {
        self.prove.render_callers(out);
    }
}
