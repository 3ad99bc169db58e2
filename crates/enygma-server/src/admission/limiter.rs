//! One FIFO queue in front of a fixed number of slots: a global cap on work in flight, a bounded
//! queue with a timeout, and immediate shedding when the queue is full or when a newcomer's
//! expected wait would exceed the queue timeout. See the crate documentation for the design.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::service_time::{duration_nanos, ServiceTime};
use crate::metrics::{Metrics, QueueGauges, QueueKind};

/// Why a request was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AdmitError {
    /// Every slot is busy and the queue is full: 503 at once.
    Shed,
    /// Waited the whole queue timeout without getting a slot: 504.
    Timeout(Duration),
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
pub(crate) struct Limiter {
    kind: QueueKind,
    semaphore: Arc<Semaphore>,
    pub(super) max_inflight: usize,
    queue_depth: usize,
    pub(super) queue_timeout: Duration,
    queued: AtomicUsize,
    pub(super) service_time: Option<Arc<ServiceTime>>,
    metrics: Arc<Metrics>,
}

/// A held slot of a [`Limiter`]; dropping it frees the slot for the oldest waiter.
#[derive(Debug)]
pub(crate) struct Permit {
    _permit: OwnedSemaphorePermit,
}

impl Limiter {
    pub(crate) fn new(
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
    pub(crate) fn with_service_time(mut self, initial: Duration) -> Self {
        self.service_time = Some(Arc::new(ServiceTime::new(initial)));
        self
    }

    /// The current service time estimate, if this limiter sheds by expected wait.
    pub(crate) fn service_time(&self) -> Option<Duration> {
        self.service_time.as_deref().map(ServiceTime::get)
    }

    /// The wait expected for the request at `position` (1 = next) in the queue: every
    /// `service_time` the `max_inflight` slots take `max_inflight` requests off the queue, so
    /// position p starts after about p x service_time / max_inflight (an upper estimate: the
    /// proofs in flight have already run part of theirs).
    pub(crate) fn expected_wait(&self, position: usize) -> Option<Duration> {
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
    pub(crate) async fn acquire(&self) -> Result<(Permit, Duration), AdmitError> {
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
    pub(crate) fn shed_early(&self) -> bool {
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
    pub(crate) fn retry_after_secs(&self) -> u64 {
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

    pub(crate) fn gauges(&self) -> QueueGauges {
        QueueGauges {
            queued: self.queued.load(Ordering::SeqCst),
            queue_capacity: self.queue_depth,
            max_inflight: self.max_inflight,
            service_time: self.service_time(),
        }
    }

    /// Slots in use now.
    #[cfg(test)]
    pub(crate) fn in_use(&self) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

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
}
