//! The admission's settings with every default resolved, and the defaults that depend on the
//! machine: what `crate::config` resolves the flags into.

use std::time::Duration;

use clap::ValueEnum;

use super::pools::ProveThreads;
use crate::caller::Caller;

/// The admission settings with every default resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// `None` for `--unlimited`.
    pub max_inflight: Option<usize>,
    /// One pool shared by the slots (the default) or a pool per slot (`--max-inflight`,
    /// `--prove-threads`, `--unlimited`).
    pub prove_threads: ProveThreads,
    pub queue_depth: usize,
    pub queue_timeout: Duration,
    /// The initial estimate of one proof's time on a slot.
    pub service_time: Duration,
    /// Whether a proof at start replaces `service_time` before the first request is admitted
    /// (unless `--expected-service-time` states it).
    pub calibrate: bool,
    pub verify_max_inflight: usize,
    pub verify_queue_depth: usize,
    /// `--pin-cpus`.
    pub pin_cpus: bool,
    /// Fair shares per caller; `None` for the one FIFO queue (`--admission fifo`).
    pub fair: Option<FairConfig>,
    /// `--check-threads`, `--check-queue-depth` ([`super::check_pool`]).
    pub check_threads: usize,
    pub check_queue_depth: usize,
    /// `--bad-request-burst`, and the time `--bad-request-rate` refills one token in
    /// ([`super::abuse`]).
    pub bad_request_burst: u32,
    pub bad_request_refill: Duration,
    /// `--auth-failure-burst`, and the time `--auth-failure-rate` refills one token in.
    pub auth_failure_burst: u32,
    pub auth_failure_refill: Duration,
}

/// `--admission`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum AdmissionMode {
    /// A queue per caller, weighted deficit round robin.
    Fair,
    /// One queue in arrival order.
    Fifo,
}

/// The fair shares' settings with every default resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FairConfig {
    /// `--caller-weight`.
    pub weights: Vec<(Caller, u32)>,
    /// The callers the token files and `--tls-client-names` name (added at start).
    pub callers: Vec<Caller>,
    pub caller_queue_depth: usize,
    pub caller_max_inflight: usize,
}

impl FairConfig {
    /// Every caller equal, each with the whole queue depth and every slot.
    pub fn equal(caller_queue_depth: usize, caller_max_inflight: usize) -> Self {
        FairConfig {
            weights: Vec::new(),
            callers: Vec::new(),
            caller_queue_depth,
            caller_max_inflight,
        }
    }

    /// Every share with its weight: the weighted callers, then the other named ones (weight
    /// 1); `anonymous` is added by the scheduler unless weighted here.
    pub fn shares(&self) -> Vec<(Caller, u32)> {
        let mut shares = self.weights.clone();
        for caller in &self.callers {
            if !shares.iter().any(|(c, _)| c == caller) {
                shares.push((caller.clone(), 1));
            }
        }
        shares
    }
}

/// One k=6 transfer request without precomputed tables on the 2-core development machines,
/// rounded up: at most 200 ms on 2 threads and 350 ms on 1 (criterion, request to proof: 197.3
/// and 345.1 ms on AMD EPYC before the transforms in lanes, 158.7 and 262.1 ms on Intel Xeon
/// after them; `benches/results/2026-12-05-ifma.md`, `2026-12-05-intel-xeon.md`). More threads
/// were not measured, so they are assumed no faster than 2; the running estimate corrects it
/// after the first proofs either way. `prove_threads` is what one proof has while every slot is
/// busy (with threads that follow the queue: 1), since the estimate is a slot's time
/// at full load (see `super::service_time::SlotOccupancy`).
pub fn default_service_time(prove_threads: usize) -> Duration {
    if prove_threads >= 2 {
        Duration::from_millis(200)
    } else {
        Duration::from_millis(350)
    }
}

/// The default queue depth: as many requests as `max_inflight` slots work off within
/// `queue_timeout` at `service_time` each. A deeper queue would only hold requests that time
/// out; a shallower one sheds requests that would have been answered in time.
pub fn default_queue_depth(
    max_inflight: usize,
    queue_timeout: Duration,
    service_time: Duration,
) -> usize {
    let per_slot = (queue_timeout.as_secs_f64() / service_time.as_secs_f64().max(1e-3)).ceil();
    (per_slot as usize).saturating_mul(max_inflight)
}
