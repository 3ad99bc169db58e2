//! Fair shares: one queue per caller, served by weighted deficit round robin.
//!
//! A prover behind several institutions' gateways must not be one queue: a gateway that
//! resubmits the moment a place frees would keep a global FIFO full, and every other caller
//! would be shed. Here every caller ([`crate::caller`]) has a queue of its own, with its own
//! bound on waiting and in-flight proofs, and a free proving slot goes to the callers in turn:
//! each, when its turn comes, may start `weight` proofs (its quantum; a proof costs 1, so
//! deficit round robin with unit cost is weighted round robin that keeps no credit for a caller
//! with nothing waiting). The scheduler is work-conserving: a slot never idles while any caller
//! below its in-flight limit has a request waiting, so a caller alone gets every slot.
//!
//! A caller's 503 and `Retry-After` come from its own share: it is shed when its own queue is
//! full or when its own expected wait, at its share of the slots, exceeds the queue timeout.
//! Callers are the names configured at start (token files, `--tls-client-names`,
//! `--caller-weight`) plus `anonymous`; any other request is served in the `anonymous` share, so
//! the number of shares (and of metric labels) is bounded by the configuration.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::limiter::AdmitError;
use super::service_time::ServiceTime;
use crate::caller::Caller;
use crate::metrics::{CallerShare, Metrics, QueueGauges, QueueKind};

/// The configuration of the shares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SharesConfig {
    /// Slots (proofs in flight) in all.
    pub(crate) max_inflight: usize,
    /// Most requests waiting in one caller's queue.
    pub(crate) caller_queue_depth: usize,
    /// Most proofs of one caller in flight at once.
    pub(crate) caller_max_inflight: usize,
    pub(crate) queue_timeout: Duration,
    /// The callers, each with its weight (`anonymous` is added with weight 1 unless listed).
    pub(crate) callers: Vec<(Caller, u32)>,
}

/// One caller's share.
struct Share {
    caller: Caller,
    weight: u32,
    /// Proofs it may still start in its current turn.
    deficit: u32,
    /// Waiters in arrival order; a waiter that gave up leaves its sender closed here, skipped
    /// when its turn comes.
    waiters: VecDeque<oneshot::Sender<Grant>>,
    /// Waiters still waiting (the senders above that are not closed).
    queued: usize,
    in_flight: usize,
    admitted: u64,
    shed: u64,
}

struct State {
    free: usize,
    shares: Vec<Share>,
    /// Shares with waiters, in round-robin order; the front one has the turn.
    active: VecDeque<usize>,
}

struct Inner {
    config: SharesConfig,
    index: HashMap<Arc<str>, usize>,
    anonymous: usize,
    state: Mutex<State>,
    service_time: Arc<ServiceTime>,
    metrics: Arc<Metrics>,
}

/// The per-caller admission controller (see the module documentation).
#[derive(Clone)]
pub(crate) struct FairShares(Arc<Inner>);

/// A held slot, counted against its caller's share; dropping it gives the slot to the next
/// caller in turn.
pub(crate) struct Grant {
    inner: Option<Arc<Inner>>,
    share: usize,
}

impl Drop for Grant {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let mut st = inner.lock();
            st.free += 1;
            st.shares[self.share].in_flight -= 1;
            inner.dispatch(&mut st);
        }
    }
}

impl FairShares {
    pub(crate) fn new(
        mut config: SharesConfig,
        service_time: Arc<ServiceTime>,
        metrics: Arc<Metrics>,
    ) -> Self {
        assert!(config.max_inflight > 0, "max_inflight must be at least 1");
        if !config.callers.iter().any(|(c, _)| c.is_anonymous()) {
            config.callers.push((Caller::anonymous(), 1));
        }
        let mut index = HashMap::new();
        let mut shares = Vec::new();
        for (caller, weight) in &config.callers {
            if index.contains_key(caller.name()) {
                continue;
            }
            index.insert(Arc::from(caller.name()), shares.len());
            shares.push(Share {
                caller: caller.clone(),
                weight: (*weight).max(1),
                deficit: 0,
                waiters: VecDeque::new(),
                queued: 0,
                in_flight: 0,
                admitted: 0,
                shed: 0,
            });
        }
        let anonymous = index[crate::caller::ANONYMOUS];
        let state = State {
            free: config.max_inflight,
            shares,
            active: VecDeque::new(),
        };
        FairShares(Arc::new(Inner {
            config,
            index,
            anonymous,
            state: Mutex::new(state),
            service_time,
            metrics,
        }))
    }

    /// A slot for `caller`: at once if one is free and the caller is below its in-flight
    /// limit, else after a place in its own queue, or shed (503) when its queue has no room,
    /// or 504 after the queue timeout. If the future is dropped while queued, the request
    /// leaves the queue and is counted as abandoned.
    pub(crate) async fn acquire(&self, caller: &Caller) -> Result<(Grant, Duration), AdmitError> {
        let inner = &self.0;
        let start = Instant::now();
        let share = inner.share_of(caller);
        let rx = {
            let mut st = inner.lock();
            if st.free > 0 && st.shares[share].in_flight < inner.config.caller_max_inflight {
                st.free -= 1;
                let s = &mut st.shares[share];
                s.in_flight += 1;
                s.admitted += 1;
                drop(st);
                inner
                    .metrics
                    .observe_queue_wait(QueueKind::Prove, Duration::ZERO);
                return Ok((
                    Grant {
                        inner: Some(inner.clone()),
                        share,
                    },
                    Duration::ZERO,
                ));
            }
            if !inner.has_room(&st, share) {
                st.shares[share].shed += 1;
                inner
                    .metrics
                    .queue(QueueKind::Prove)
                    .shed
                    .fetch_add(1, Ordering::Relaxed);
                return Err(AdmitError::Shed);
            }
            let (tx, rx) = oneshot::channel();
            let s = &mut st.shares[share];
            s.waiters.push_back(tx);
            s.queued += 1;
            if !st.active.contains(&share) {
                st.active.push_back(share);
            }
            // A free slot may wait only for callers at their in-flight limit: this one is
            // not, once another of its proofs ends; dispatch in case one already did.
            inner.dispatch(&mut st);
            rx
        };
        let mut place = Place {
            inner,
            share,
            settled: false,
        };
        let outcome = tokio::time::timeout(inner.config.queue_timeout, rx).await;
        place.settled = true;
        drop(place);
        let waited = start.elapsed();
        match outcome {
            Ok(Ok(grant)) => {
                inner.lock().shares[share].admitted += 1;
                inner.metrics.observe_queue_wait(QueueKind::Prove, waited);
                Ok((grant, waited))
            }
            Ok(Err(_)) | Err(_) => {
                inner
                    .metrics
                    .queue(QueueKind::Prove)
                    .timeouts
                    .fetch_add(1, Ordering::Relaxed);
                Err(AdmitError::Timeout(waited))
            }
        }
    }

    /// Whether [`Self::acquire`] would shed `caller` now (counted as a shed): before any work
    /// is spent on its request.
    pub(crate) fn shed_early(&self, caller: &Caller) -> bool {
        let inner = &self.0;
        let share = inner.share_of(caller);
        let mut st = inner.lock();
        let can_start =
            st.free > 0 && st.shares[share].in_flight < inner.config.caller_max_inflight;
        let shed = !can_start && !inner.has_room(&st, share);
        if shed {
            st.shares[share].shed += 1;
            inner
                .metrics
                .queue(QueueKind::Prove)
                .shed
                .fetch_add(1, Ordering::Relaxed);
        }
        shed
    }

    /// Seconds a shed `caller` should wait: until its own queue, served at its share of the
    /// slots, has room again (1 to 60).
    pub(crate) fn retry_after_secs(&self, caller: &Caller) -> u64 {
        let inner = &self.0;
        let share = inner.share_of(caller);
        let st = inner.lock();
        let service = inner.service_time.get().as_secs_f64().max(1e-3);
        let rate = inner.slots_of(&st, share) / service;
        let fits_timeout = (inner.config.queue_timeout.as_secs_f64() * rate).floor();
        let room = (inner.config.caller_queue_depth as f64).min(fits_timeout);
        let waiting = (st.shares[share].queued + 1) as f64;
        let excess = (waiting - room).max(1.0);
        (excess / rate).ceil().clamp(1.0, 60.0) as u64
    }

    pub(crate) fn service_time(&self) -> Arc<ServiceTime> {
        self.0.service_time.clone()
    }

    /// The queue gauges summed over the callers.
    pub(crate) fn gauges(&self) -> QueueGauges {
        let inner = &self.0;
        let st = inner.lock();
        QueueGauges {
            queued: st.shares.iter().map(|s| s.queued).sum(),
            queue_capacity: inner.config.caller_queue_depth * st.shares.len(),
            max_inflight: inner.config.max_inflight,
            service_time: Some(inner.service_time.get()),
        }
    }

    /// The per-caller series (Prometheus text), one label value per configured caller.
    pub(crate) fn render(&self, out: &mut String) {
        let shares = self
            .0
            .lock()
            .shares
            .iter()
            .map(|s| CallerShare {
                caller: s.caller.name().to_string(),
                queued: s.queued,
                in_flight: s.in_flight,
                admitted: s.admitted,
                shed: s.shed,
                weight: s.weight,
            })
            .collect();
        crate::metrics::render_caller_shares(out, shares);
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn share_of(&self, caller: &Caller) -> usize {
        self.index
            .get(caller.name())
            .copied()
            .unwrap_or(self.anonymous)
    }

    /// The slots `share` can count on: the weighted part of all slots among the callers with
    /// work (itself included), at most its in-flight limit.
    fn slots_of(&self, st: &State, share: usize) -> f64 {
        let busy = |i: usize| i == share || st.shares[i].queued > 0 || st.shares[i].in_flight > 0;
        let total: u64 = (0..st.shares.len())
            .filter(|&i| busy(i))
            .map(|i| st.shares[i].weight as u64)
            .sum();
        let part = st.shares[share].weight as f64 / total.max(1) as f64;
        (self.config.max_inflight as f64 * part).min(self.config.caller_max_inflight as f64)
    }

    /// Whether a newcomer of `share` may queue: its queue has a place, and its expected wait
    /// (its position x service time / its slots) fits the queue timeout.
    fn has_room(&self, st: &State, share: usize) -> bool {
        let position = st.shares[share].queued + 1;
        if position > self.config.caller_queue_depth {
            return false;
        }
        let wait =
            position as f64 * self.service_time.get().as_secs_f64() / self.slots_of(st, share);
        wait <= self.config.queue_timeout.as_secs_f64()
    }

    /// Gives free slots to waiters, callers in turn.
    fn dispatch(self: &Arc<Self>, st: &mut State) {
        while st.free > 0 {
            let Some(share) = self.next_waiter(st) else {
                return;
            };
            let tx = st.shares[share]
                .waiters
                .pop_front()
                .expect("next_waiter picks a share with a waiter");
            st.free -= 1;
            st.shares[share].in_flight += 1;
            let grant = Grant {
                inner: Some(self.clone()),
                share,
            };
            if let Err(mut grant) = tx.send(grant) {
                // The waiter left between the check and the send: undo without re-locking.
                grant.inner = None;
                st.free += 1;
                st.shares[share].in_flight -= 1;
            }
        }
    }

    /// The share whose front waiter gets the next slot (deficit round robin, unit cost), or
    /// `None` when no caller below its in-flight limit waits.
    fn next_waiter(&self, st: &mut State) -> Option<usize> {
        let mut skipped = 0;
        while let Some(&share) = st.active.front() {
            let limit = self.config.caller_max_inflight;
            let s = &mut st.shares[share];
            while s.waiters.front().is_some_and(|tx| tx.is_closed()) {
                s.waiters.pop_front();
            }
            if s.waiters.is_empty() {
                s.deficit = 0;
                st.active.pop_front();
                continue;
            }
            if s.in_flight >= limit {
                // Keeps its turn's credit for when a proof of its own ends.
                st.active.rotate_left(1);
                skipped += 1;
                if skipped >= st.active.len() {
                    return None;
                }
                continue;
            }
            if s.deficit == 0 {
                s.deficit = s.weight;
            }
            s.deficit -= 1;
            if s.deficit == 0 {
                st.active.rotate_left(1);
            }
            return Some(share);
        }
        None
    }
}

/// A place in a caller's queue; releases it when dropped.
struct Place<'a> {
    inner: &'a Arc<Inner>,
    share: usize,
    /// False while waiting: a drop then means the request future was dropped (client gone).
    settled: bool,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.inner.lock().shares[self.share].queued -= 1;
        if !self.settled {
            self.inner
                .metrics
                .queue(QueueKind::Prove)
                .abandoned
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::check_name;

    /// One slot; A (weight 2) and B (weight 1) queue 6 each behind a held slot: the slot then
    /// goes A, A, B, A, A, B, ... and a caller at its in-flight limit or queue depth is skipped
    /// or shed alone.
    #[tokio::test]
    async fn weights_set_the_turns_and_limits_are_per_caller() {
        let (a, b) = (check_name("bank-a").unwrap(), check_name("bank-b").unwrap());
        let shares = FairShares::new(
            SharesConfig {
                max_inflight: 1,
                caller_queue_depth: 6,
                caller_max_inflight: 1,
                queue_timeout: Duration::from_secs(10),
                callers: vec![(a.clone(), 2), (b.clone(), 1)],
            },
            Arc::new(ServiceTime::new(Duration::from_millis(1))),
            Arc::new(Metrics::new()),
        );
        let (held, _) = shares.acquire(&Caller::anonymous()).await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for caller in [&a, &b] {
            for _ in 0..6 {
                let (shares, caller, order) = (shares.clone(), caller.clone(), order.clone());
                tasks.push(tokio::spawn(async move {
                    let (grant, _) = shares.acquire(&caller).await.unwrap();
                    order.lock().unwrap().push(caller.to_string());
                    drop(grant);
                }));
                tokio::task::yield_now().await;
            }
        }
        while shares.gauges().queued < 12 {
            tokio::task::yield_now().await;
        }
        // A's queue is full: A alone is shed, with a Retry-After from its own share.
        assert_eq!(shares.acquire(&a).await.err(), Some(AdmitError::Shed));
        assert!(shares.shed_early(&a) && !shares.shed_early(&Caller::anonymous()));
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(
            order[..9],
            [
                "bank-a", "bank-a", "bank-b", "bank-a", "bank-a", "bank-b", "bank-a", "bank-a",
                "bank-b"
            ],
            "{order:?}"
        );
        let mut text = String::new();
        shares.render(&mut text);
        assert!(
            text.contains("enygma_caller_admitted_total{caller=\"bank-a\"} 6"),
            "{text}"
        );
        assert!(
            text.contains("enygma_caller_shed_total{caller=\"bank-a\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("enygma_caller_weight{caller=\"anonymous\"} 1"),
            "{text}"
        );
    }
}
