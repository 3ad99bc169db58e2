//! How the proving slots are given out: one FIFO queue, fair shares per caller, or (with
//! `--unlimited`) no queue at all. Each operation of [`super::prove::ProveAdmission`] that
//! depends on the queue is one method here.

use std::sync::Arc;
use std::time::Duration;

use super::fair::{FairShares, Grant, SharesConfig};
use super::limiter::{AdmitError, Limiter, Permit};
use super::service_time::ServiceTime;
use crate::caller::Caller;
use crate::metrics::{Metrics, QueueGauges};

/// How the queue is served.
pub(super) enum Queue {
    /// No cap and no queue (`--unlimited`): every request proves at once.
    Unlimited,
    /// One queue in arrival order, for every caller.
    Fifo(Limiter),
    /// A queue per caller, in weighted turns.
    Fair(FairShares),
}

/// A held slot of either queue.
pub(super) enum Held {
    // Never read: held for its drop, which frees the slot.
    #[allow(dead_code)]
    Fifo(Permit),
    #[allow(dead_code)]
    Fair(Grant),
}

impl Queue {
    /// The same slots, queue timeout and service time estimate given out by per-caller fair
    /// shares: every caller of `callers` (with its weight) gets a queue of
    /// `caller_queue_depth` places and at most `caller_max_inflight` proofs in flight. Only
    /// the FIFO changes; no effect in unlimited mode.
    pub(super) fn into_fair(
        self,
        callers: Vec<(Caller, u32)>,
        caller_queue_depth: usize,
        caller_max_inflight: usize,
        metrics: Arc<Metrics>,
    ) -> Self {
        let Queue::Fifo(limiter) = self else {
            return self;
        };
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
        Queue::Fair(FairShares::new(config, service_time, metrics))
    }

    /// See [`Limiter::shed_early`] and [`FairShares::shed_early`]; never in unlimited mode.
    pub(super) fn shed_early(&self, caller: &Caller) -> bool {
        match self {
            Queue::Unlimited => false,
            Queue::Fifo(limiter) => limiter.shed_early(),
            Queue::Fair(shares) => shares.shed_early(caller),
        }
    }

    /// A slot for `caller` and how long it waited; `None` in unlimited mode, where nothing is
    /// held.
    pub(super) async fn acquire(
        &self,
        caller: &Caller,
    ) -> Result<Option<(Held, Duration)>, AdmitError> {
        Ok(match self {
            Queue::Unlimited => None,
            Queue::Fifo(limiter) => {
                let (permit, waited) = limiter.acquire().await?;
                Some((Held::Fifo(permit), waited))
            }
            Queue::Fair(shares) => {
                let (grant, waited) = shares.acquire(caller).await?;
                Some((Held::Fair(grant), waited))
            }
        })
    }

    /// The running estimate of a proof's time on a slot; none in unlimited mode.
    pub(super) fn service_time(&self) -> Option<Arc<ServiceTime>> {
        match self {
            Queue::Unlimited => None,
            Queue::Fifo(limiter) => limiter.service_time.clone(),
            Queue::Fair(shares) => Some(shares.service_time()),
        }
    }

    /// Seconds a shed `caller` should wait before retrying: from the one queue, or from its
    /// own share.
    pub(super) fn retry_after_secs(&self, caller: &Caller) -> u64 {
        match self {
            Queue::Unlimited => 1,
            Queue::Fifo(limiter) => limiter.retry_after_secs(),
            Queue::Fair(shares) => shares.retry_after_secs(caller),
        }
    }

    pub(super) fn gauges(&self) -> QueueGauges {
        match self {
            Queue::Unlimited => QueueGauges::default(),
            Queue::Fifo(limiter) => limiter.gauges(),
            Queue::Fair(shares) => shares.gauges(),
        }
    }

    /// The per-caller series of fair shares (nothing for the FIFO).
    pub(super) fn render_callers(&self, out: &mut String) {
        if let Queue::Fair(shares) = self {
            shares.render(out);
        }
    }
}
