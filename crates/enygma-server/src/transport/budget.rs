//! Who may hold a connection slot: the connection budget, checked around `accept`.
//!
//! Three limits, so that clients who never authenticate cannot take the service's connections
//! away from those who do:
//!
//! - **All connections** (`--max-connections`): a slot is reserved before `accept`; past the
//!   cap new clients wait in the kernel's backlog.
//! - **Connections not yet authenticated** (`--max-unauthenticated-connections`, half the
//!   slots by default): a connection holds one of these from `accept` until a request on it
//!   passes authentication ([`ConnectionSlot::authenticated`]). When they are all held, a
//!   newcomer takes the place of an unauthenticated connection that has no request in
//!   progress, the oldest of the address holding the most of them: that one is closed at once
//!   ([`Closing::Evicted`]). So clients without credentials that hold every such slot (idle, or
//!   only asking probes) delay a newcomer by an eviction, not by their deadlines, and they
//!   evict each other rather than a token holder's new connection (from an address of its
//!   own) while it sends its first request; to make it a candidate they would need more
//!   addresses than the budget has slots, each holding one. Only when every unauthenticated
//!   connection is in the middle of a request does a newcomer wait, and each has an absolute
//!   deadline (`--unauthenticated-timeout`). At least one slot of all must stay outside this
//!   budget for a newcomer to be accepted into (the flags see to it).
//! - **Connections per client address** (`--max-connections-per-ip`): checked right after
//!   `accept` (the address is not known before; behind a trusted proxy, once its PROXY header
//!   has named the client); a connection past it is closed at once and counted in
//!   `enygma_connections_refused_total{reason="per_ip"}`.
//!
//! A slot also carries what the service may ask of its connection: to close it after the
//! response in progress ([`ConnectionSlot::close_after_response`]), or at once.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::admission::abuse::{Allowance, Bucket};
use crate::metrics::Metrics;

/// How long an eviction may take before the next candidate is evicted too (an evicted
/// connection closes within microseconds; this only guards against one that does not).
const EVICTION_PATIENCE: Duration = Duration::from_millis(100);

/// The limits of a [`Budget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetLimits {
    pub max_connections: usize,
    pub max_unauthenticated: usize,
    pub max_per_ip: usize,
}

/// The connection slots of one listener.
pub struct Budget {
    all: Arc<Semaphore>,
    unauthenticated: Arc<Semaphore>,
    /// The connections holding an unauthenticated slot, oldest first, for eviction.
    unauthenticated_by_age: Mutex<BTreeMap<u64, Weak<ConnectionSlot>>>,
    next_id: AtomicU64,
    per_ip: Mutex<HashMap<IpAddr, usize>>,
    max_per_ip: usize,
    metrics: Arc<Metrics>,
}

/// A slot reserved before `accept`, for the next connection.
pub struct Reserved {
    all: OwnedSemaphorePermit,
}

/// Why an accepted connection was closed at once (the label of
/// `enygma_connections_refused_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its address already holds `--max-connections-per-ip` connections.
    PerIp,
}

/// What the service asks of an open connection; only ever escalates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Closing {
    /// Keep serving it.
    Open,
    /// Close it gracefully: the requests in progress are answered (HTTP/1.1 with `Connection:
    /// close`, HTTP/2 after a GOAWAY), no further request is read.
    AfterResponse,
    /// Close it now: an unauthenticated connection without a request in progress gave its
    /// slot to a newcomer.
    Evicted,
}

impl Budget {
    pub fn new(limits: BudgetLimits, metrics: Arc<Metrics>) -> Arc<Self> {
        let max_connections = limits.max_connections.max(1);
        Arc::new(Budget {
            all: Arc::new(Semaphore::new(max_connections)),
            unauthenticated: Arc::new(Semaphore::new(
                limits.max_unauthenticated.clamp(1, max_connections),
            )),
            unauthenticated_by_age: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(0),
            per_ip: Mutex::new(HashMap::new()),
            max_per_ip: limits.max_per_ip.max(1),
            metrics,
        })
    }

    /// Waits for a free slot; a wait is counted (`enygma_connection_waits_total`).
    pub async fn reserve(&self) -> Reserved {
        let counters = &self.metrics.connections;
        let all = acquire(&self.all, || {
            counters.waits_for_slot.fetch_add(1, Ordering::Relaxed);
        })
        .await;
        Reserved { all }
    }

    /// Counts the connection accepted from `ip` against its address's share (refused when the
    /// address holds it already: the reserved slot is released), then gives it an
    /// unauthenticated slot, evicting the oldest idle unauthenticated connection when none is
    /// free.
    ///
    /// `None` for a connection from a trusted proxy: its address is counted once the proxy's
    /// header names the client ([`ConnectionSlot::client_address`]).
    pub async fn admit(
        self: &Arc<Self>,
        reserved: Reserved,
        ip: Option<IpAddr>,
    ) -> Result<Arc<ConnectionSlot>, Refusal> {
        let ip = ip.map(|ip| self.count_address(ip)).transpose()?;
        let unauthenticated = self.unauthenticated_slot().await;
        self.metrics
            .connections
            .unauthenticated
            .fetch_add(1, Ordering::Relaxed);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (closing, _) = watch::channel(Closing::Open);
        let (busy, _) = watch::channel(0);
        let slot = Arc::new(ConnectionSlot {
            budget: self.clone(),
            id,
            ip: Mutex::new(ip),
            _all: reserved.all,
            unauthenticated: Mutex::new(Some(unauthenticated)),
            busy,
            closing,
            malformed: Mutex::new(None),
        });
        self.unauthenticated_by_age
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Arc::downgrade(&slot));
        Ok(slot)
    }

    /// Takes one of `ip`'s places, or refuses when it holds its share.
    fn count_address(&self, ip: IpAddr) -> Result<IpAddr, Refusal> {
        let ip = ip.to_canonical();
        let mut per_ip = self.per_ip.lock().unwrap_or_else(|e| e.into_inner());
        let held = per_ip.entry(ip).or_insert(0);
        if *held >= self.max_per_ip {
            drop(per_ip);
            self.metrics
                .connections
                .refused_per_ip
                .fetch_add(1, Ordering::Relaxed);
            return Err(Refusal::PerIp);
        }
        *held += 1;
        Ok(ip)
    }

    fn release_address(&self, ip: IpAddr) {
        let mut per_ip = self.per_ip.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = per_ip.get_mut(&ip) {
            *held -= 1;
            if *held == 0 {
                per_ip.remove(&ip);
            }
        }
    }

    /// An unauthenticated slot: a free one, else the one of the oldest unauthenticated
    /// connection without a request in progress (evicted), else the first to come free.
    async fn unauthenticated_slot(&self) -> OwnedSemaphorePermit {
        if let Ok(permit) = self.unauthenticated.clone().try_acquire_owned() {
            return permit;
        }
        let counters = &self.metrics.connections;
        counters
            .waits_for_unauthenticated
            .fetch_add(1, Ordering::Relaxed);
        loop {
            if self.evict_oldest_idle() {
                counters.evicted.fetch_add(1, Ordering::Relaxed);
            }
            tokio::select! {
                permit = self.unauthenticated.clone().acquire_owned() => {
                    return permit.expect("the budget's semaphores are never closed");
                }
                () = tokio::time::sleep(EVICTION_PATIENCE) => {}
            }
        }
    }

    /// Closes an unauthenticated connection without a request in progress, `false` when there
    /// is none: the oldest of those of the address that holds the most unauthenticated
    /// connections. So clients without credentials that crowd the budget from a few addresses
    /// evict each other, not a newcomer from an address of its own while it sends its first
    /// request.
    fn evict_oldest_idle(&self) -> bool {
        let by_age: Vec<(u64, Weak<ConnectionSlot>)> = self
            .unauthenticated_by_age
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(&id, slot)| (id, slot.clone()))
            .collect();
        // Upgraded without the lock held: the last reference to a closing connection's slot
        // may be dropped here, and its drop takes the lock.
        let live: Vec<(u64, Option<IpAddr>, Arc<ConnectionSlot>)> = by_age
            .into_iter()
            .filter_map(|(id, slot)| {
                let slot = slot.upgrade()?;
                let ip = *slot.ip.lock().unwrap_or_else(|e| e.into_inner());
                Some((id, ip, slot))
            })
            .collect();
        let mut held: HashMap<Option<IpAddr>, usize> = HashMap::new();
        for (_, ip, _) in &live {
            *held.entry(*ip).or_default() += 1;
        }
        // Oldest first (the map's order); the first of the most crowded address wins.
        let chosen = live
            .iter()
            .filter(|(_, _, slot)| *slot.busy.borrow() == 0)
            .rev()
            .max_by_key(|(_, ip, _)| held[ip]);
        let Some((id, _, slot)) = chosen else {
            return false;
        };
        self.unauthenticated_by_age
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        slot.close(Closing::Evicted);
        true
    }
}

/// Takes a permit, calling `on_wait` first if none is free now.
async fn acquire(semaphore: &Arc<Semaphore>, on_wait: impl FnOnce()) -> OwnedSemaphorePermit {
    match semaphore.clone().try_acquire_owned() {
        Ok(permit) => permit,
        Err(TryAcquireError::NoPermits) => {
            on_wait();
            semaphore
                .clone()
                .acquire_owned()
                .await
                .expect("the budget's semaphores are never closed")
        }
        Err(TryAcquireError::Closed) => unreachable!("the budget's semaphores are never closed"),
    }
}

/// The slot of one open connection; released when the connection ends. Every request of the
/// connection carries it (a request extension), so that authentication can move the
/// connection out of the unauthenticated budget and the service can ask it to close.
pub struct ConnectionSlot {
    budget: Arc<Budget>,
    /// Accept order: the lower, the older.
    id: u64,
    /// The client's address as counted against `--max-connections-per-ip`; `None` until a
    /// trusted proxy's header has named it.
    ip: Mutex<Option<IpAddr>>,
    _all: OwnedSemaphorePermit,
    unauthenticated: Mutex<Option<OwnedSemaphorePermit>>,
    /// Requests in progress (from their head to their response).
    busy: watch::Sender<usize>,
    closing: watch::Sender<Closing>,
    /// The connection's allowance of malformed requests ([`crate::admission::abuse`]).
    malformed: Mutex<Option<Bucket>>,
}

impl ConnectionSlot {
    /// A request on this connection passed authentication (or its client certificate did at
    /// the handshake): its unauthenticated slot is released for the next newcomer. Idempotent.
    pub fn authenticated(&self) {
        let released = self
            .unauthenticated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if released.is_some() {
            self.budget
                .unauthenticated_by_age
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&self.id);
            self.budget
                .metrics
                .connections
                .unauthenticated
                .fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether the connection has not authenticated yet.
    pub fn is_unauthenticated(&self) -> bool {
        self.unauthenticated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Counts the connection against the address a trusted proxy's header named; refused
    /// when that address holds its share already.
    pub fn client_address(&self, ip: IpAddr) -> Result<(), Refusal> {
        let ip = self.budget.count_address(ip)?;
        let previous = self
            .ip
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(ip);
        if let Some(previous) = previous {
            self.budget.release_address(previous);
        }
        Ok(())
    }

    /// Asks the connection to close once the requests in progress are answered.
    pub fn close_after_response(&self) {
        self.close(Closing::AfterResponse);
    }

    fn close(&self, how: Closing) {
        self.closing.send_if_modified(|now| {
            let escalates = how > *now;
            if escalates {
                *now = how;
            }
            escalates
        });
    }

    /// Completes once the service has asked the connection to close in at least `how`'s way.
    pub(super) async fn closing_at_least(&self, how: Closing) {
        let mut asked = self.closing.subscribe();
        // The sender lives as long as `self`: `wait_for` cannot fail here.
        let _ = asked.wait_for(|c| *c >= how).await;
    }

    /// Counts a request in progress until the returned guard is dropped.
    pub(super) fn request_started(self: &Arc<Self>) -> InProgress {
        self.busy.send_modify(|n| *n += 1);
        InProgress(self.clone())
    }

    /// Completes once no request has been in progress for `timeout`.
    pub(super) async fn idle_for(&self, timeout: Duration) {
        let mut busy = self.busy.subscribe();
        loop {
            let idle_now = *busy.borrow_and_update() == 0;
            if idle_now {
                if tokio::time::timeout(timeout, busy.changed()).await.is_err() {
                    return;
                }
            } else {
                // The sender lives as long as `self`: `changed` cannot fail here.
                let _ = busy.changed().await;
            }
        }
    }

    /// Takes one from the connection's allowance of malformed requests; `false` once it is
    /// spent (the connection is then closed after its response).
    pub(crate) fn malformed_request(&self, allowance: &Allowance, now: Instant) -> bool {
        let mut bucket = self.malformed.lock().unwrap_or_else(|e| e.into_inner());
        allowance.take(&mut bucket, now)
    }
}

/// A request in progress on a connection; see [`ConnectionSlot::request_started`].
pub(super) struct InProgress(Arc<ConnectionSlot>);

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.busy.send_modify(|n| *n -= 1);
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.authenticated();
        let ip = self.ip.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(ip) = ip {
            self.budget.release_address(ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn budget(
        max_connections: usize,
        max_unauthenticated: usize,
        max_per_ip: usize,
    ) -> Arc<Budget> {
        Budget::new(
            BudgetLimits {
                max_connections,
                max_unauthenticated,
                max_per_ip,
            },
            Arc::new(Metrics::new()),
        )
    }

    /// Polls `f` once: `Some` if it is ready without waiting.
    fn now<F: std::future::Future>(f: F) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        match std::pin::pin!(f).poll(&mut cx) {
            std::task::Poll::Ready(out) => Some(out),
            std::task::Poll::Pending => None,
        }
    }

    /// A connection from `ip` admitted without waiting.
    fn connect(b: &Arc<Budget>, ip: IpAddr) -> Result<Arc<ConnectionSlot>, Refusal> {
        let reserved = now(b.reserve()).expect("a free slot");
        now(b.admit(reserved, Some(ip))).expect("admitted without waiting")
    }

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn an_address_holds_at_most_its_share_and_gets_it_back_when_a_connection_closes() {
        let b = budget(16, 16, 2);
        let first = connect(&b, A).unwrap();
        let _second = connect(&b, A).unwrap();
        assert_eq!(connect(&b, A).err(), Some(Refusal::PerIp));
        // An IPv4-mapped IPv6 address is the same client.
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
        assert_eq!(connect(&b, mapped).err(), Some(Refusal::PerIp));
        let _other = connect(&b, B).unwrap();
        drop(first);
        let _again = connect(&b, A).unwrap();
        let c = &b.metrics.connections;
        assert_eq!(c.refused_per_ip.load(Ordering::Relaxed), 2);
        // A refused connection gave its slots back: 3 held of 16.
        assert_eq!(b.all.available_permits(), 13);
    }

    #[test]
    fn a_proxied_connection_counts_against_the_client_its_proxy_names() {
        let b = budget(16, 16, 1);
        let proxied = {
            let reserved = now(b.reserve()).unwrap();
            now(b.admit(reserved, None)).unwrap().unwrap()
        };
        let second = {
            let reserved = now(b.reserve()).unwrap();
            now(b.admit(reserved, None)).unwrap().unwrap()
        };
        // The proxy's own address is never counted: both were admitted with a share of one.
        proxied.client_address(A).unwrap();
        assert_eq!(second.client_address(A), Err(Refusal::PerIp));
        second.client_address(B).unwrap();
        drop(proxied);
        let _direct = connect(&b, A).unwrap();
    }

    #[tokio::test]
    async fn a_newcomer_takes_the_place_of_the_oldest_idle_unauthenticated_connection() {
        let b = budget(8, 3, 16);
        let gauge = |b: &Budget| {
            b.metrics
                .connections
                .unauthenticated
                .load(Ordering::Relaxed)
        };
        let oldest = connect(&b, A).unwrap();
        let busy = connect(&b, A).unwrap();
        let idle = connect(&b, B).unwrap();
        let _request = busy.request_started();
        assert_eq!(gauge(&b), 3);

        // The budget is full: the next newcomer evicts the oldest connection without a
        // request in progress, and waits for its slot.
        let newcomer = {
            let b = b.clone();
            tokio::spawn(async move {
                let reserved = b.reserve().await;
                b.admit(reserved, Some(B)).await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!newcomer.is_finished());
        assert_eq!(*oldest.closing.borrow(), Closing::Evicted);
        assert_eq!(*busy.closing.borrow(), Closing::Open);
        assert_eq!(*idle.closing.borrow(), Closing::Open);
        let c = &b.metrics.connections;
        assert_eq!(c.waits_for_unauthenticated.load(Ordering::Relaxed), 1);
        assert_eq!(c.evicted.load(Ordering::Relaxed), 1);
        // The evicted connection closes: the newcomer has its slot.
        drop(oldest);
        let newcomer = tokio::time::timeout(Duration::from_secs(5), newcomer)
            .await
            .expect("the newcomer got the evicted slot")
            .unwrap()
            .unwrap();
        assert!(newcomer.is_unauthenticated());
        // Authenticating moves a connection out of the budget, once however often; an
        // authenticated connection is never evicted.
        newcomer.authenticated();
        newcomer.authenticated();
        assert!(!newcomer.is_unauthenticated());
        assert_eq!(gauge(&b), 2);
        assert!(!b
            .unauthenticated_by_age
            .lock()
            .unwrap()
            .contains_key(&newcomer.id));
        drop(idle);
        assert_eq!(gauge(&b), 1);
    }

    #[tokio::test]
    async fn the_crowded_address_is_evicted_first() {
        let b = budget(8, 3, 16);
        let lone = connect(&b, A).unwrap();
        let crowd_older = connect(&b, B).unwrap();
        let crowd_younger = connect(&b, B).unwrap();
        let newcomer = {
            let b = b.clone();
            tokio::spawn(async move {
                let reserved = b.reserve().await;
                b.admit(reserved, Some(A)).await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The lone connection of A is the oldest, but B holds more: B's oldest goes.
        assert_eq!(*lone.closing.borrow(), Closing::Open);
        assert_eq!(*crowd_older.closing.borrow(), Closing::Evicted);
        assert_eq!(*crowd_younger.closing.borrow(), Closing::Open);
        drop(crowd_older);
        let newcomer = newcomer.await.unwrap().unwrap();
        assert!(newcomer.is_unauthenticated());
    }

    #[test]
    fn closing_only_escalates() {
        let b = budget(4, 4, 4);
        let slot = connect(&b, A).unwrap();
        slot.close(Closing::Evicted);
        slot.close_after_response();
        assert_eq!(*slot.closing.borrow(), Closing::Evicted);
    }
}
