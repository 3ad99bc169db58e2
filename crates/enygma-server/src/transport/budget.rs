//! Who may hold a connection slot: the connection budget, checked around `accept`.
//!
//! Three limits, so that clients who never authenticate cannot take the service's connections
//! away from those who do:
//!
//! - **All connections** (`--max-connections`): a slot is reserved before `accept`; past the
//!   cap new clients wait in the kernel's backlog.
//! - **Connections not yet authenticated** (`--max-unauthenticated-connections`, half the
//!   slots by default): a connection holds one of these from `accept` until a request on it
//!   passes authentication ([`ConnectionSlot::authenticated`]); it is reserved before `accept`
//!   too, so while unauthenticated connections hold all of them, new clients wait in the
//!   backlog, and the other slots stay for the connections that authenticated. Every
//!   unauthenticated connection is closed by the handshake or header deadline, so the wait is
//!   bounded.
//! - **Connections per client address** (`--max-connections-per-ip`): checked right after
//!   `accept` (the address is not known before); a connection past it is closed at once and
//!   counted in `enygma_connections_refused_total{reason="per_ip"}`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::metrics::Metrics;

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
    per_ip: Mutex<HashMap<IpAddr, usize>>,
    max_per_ip: usize,
    metrics: Arc<Metrics>,
}

/// Slots reserved before `accept`, for the next connection.
pub struct Reserved {
    all: OwnedSemaphorePermit,
    unauthenticated: OwnedSemaphorePermit,
}

/// Why an accepted connection was closed at once (the label of
/// `enygma_connections_refused_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its address already holds `--max-connections-per-ip` connections.
    PerIp,
}

impl Budget {
    pub fn new(limits: BudgetLimits, metrics: Arc<Metrics>) -> Arc<Self> {
        let max_connections = limits.max_connections.max(1);
        Arc::new(Budget {
            all: Arc::new(Semaphore::new(max_connections)),
            unauthenticated: Arc::new(Semaphore::new(
                limits.max_unauthenticated.clamp(1, max_connections),
            )),
            per_ip: Mutex::new(HashMap::new()),
            max_per_ip: limits.max_per_ip.max(1),
            metrics,
        })
    }

    /// Waits for a free slot and a free unauthenticated slot; a wait is counted by the budget
    /// that made it (`enygma_connection_waits_total`).
    pub async fn reserve(&self) -> Reserved {
        let counters = &self.metrics.connections;
        let all = acquire(&self.all, || {
            counters.waits_for_slot.fetch_add(1, Ordering::Relaxed);
        })
        .await;
        let unauthenticated = acquire(&self.unauthenticated, || {
            counters
                .waits_for_unauthenticated
                .fetch_add(1, Ordering::Relaxed);
        })
        .await;
        Reserved {
            all,
            unauthenticated,
        }
    }

    /// Gives the reserved slots to the connection accepted from `ip`, unless its address holds
    /// its share already (the slots are then released).
    pub fn admit(
        self: &Arc<Self>,
        reserved: Reserved,
        ip: IpAddr,
    ) -> Result<Arc<ConnectionSlot>, Refusal> {
        let ip = ip.to_canonical();
        {
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
        }
        self.metrics
            .connections
            .unauthenticated
            .fetch_add(1, Ordering::Relaxed);
        Ok(Arc::new(ConnectionSlot {
            budget: self.clone(),
            ip,
            _all: reserved.all,
            unauthenticated: Mutex::new(Some(reserved.unauthenticated)),
        }))
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
/// connection out of the unauthenticated budget.
pub struct ConnectionSlot {
    budget: Arc<Budget>,
    ip: IpAddr,
    _all: OwnedSemaphorePermit,
    unauthenticated: Mutex<Option<OwnedSemaphorePermit>>,
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
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.authenticated();
        let mut per_ip = self.budget.per_ip.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = per_ip.get_mut(&self.ip) {
            *held -= 1;
            if *held == 0 {
                per_ip.remove(&self.ip);
            }
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

    fn reserve_now(b: &Budget) -> Option<Reserved> {
        futures_now(b.reserve())
    }

    /// Polls `f` once: `Some` if it is ready without waiting.
    fn futures_now<F: std::future::Future>(f: F) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        match std::pin::pin!(f).poll(&mut cx) {
            std::task::Poll::Ready(out) => Some(out),
            std::task::Poll::Pending => None,
        }
    }

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn an_address_holds_at_most_its_share_and_gets_it_back_when_a_connection_closes() {
        let b = budget(16, 16, 2);
        let first = b.admit(reserve_now(&b).unwrap(), A).unwrap();
        let _second = b.admit(reserve_now(&b).unwrap(), A).unwrap();
        assert_eq!(
            b.admit(reserve_now(&b).unwrap(), A).err(),
            Some(Refusal::PerIp)
        );
        // An IPv4-mapped IPv6 address is the same client.
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
        assert_eq!(
            b.admit(reserve_now(&b).unwrap(), mapped).err(),
            Some(Refusal::PerIp)
        );
        let _other = b.admit(reserve_now(&b).unwrap(), B).unwrap();
        drop(first);
        let _again = b.admit(reserve_now(&b).unwrap(), A).unwrap();
        let c = &b.metrics.connections;
        assert_eq!(c.refused_per_ip.load(Ordering::Relaxed), 2);
        // A refused connection gave its slots back: 3 held of 16.
        assert_eq!(b.all.available_permits(), 13);
    }

    #[test]
    fn unauthenticated_connections_cannot_hold_every_slot() {
        let b = budget(4, 2, 16);
        let gauge = |b: &Budget| {
            b.metrics
                .connections
                .unauthenticated
                .load(Ordering::Relaxed)
        };
        let first = b.admit(reserve_now(&b).unwrap(), A).unwrap();
        let idle = b.admit(reserve_now(&b).unwrap(), B).unwrap();
        // Both unauthenticated slots are held: the next newcomer waits, with two slots free.
        assert!(
            reserve_now(&b).is_none(),
            "a third unauthenticated connection"
        );
        assert_eq!(b.all.available_permits(), 2);
        let c = &b.metrics.connections;
        assert_eq!(c.waits_for_unauthenticated.load(Ordering::Relaxed), 1);
        assert_eq!(gauge(&b), 2);
        // Authenticating moves a connection out of that budget (once, however often).
        first.authenticated();
        first.authenticated();
        assert!(!first.is_unauthenticated() && idle.is_unauthenticated());
        assert_eq!(gauge(&b), 1);
        let newcomer = b.admit(reserve_now(&b).unwrap(), B).unwrap();
        assert!(
            reserve_now(&b).is_none(),
            "a third unauthenticated connection"
        );
        newcomer.authenticated();
        let last = b.admit(reserve_now(&b).unwrap(), B).unwrap();
        last.authenticated();
        // All four slots are held now, authenticated or not.
        assert!(reserve_now(&b).is_none(), "a fifth connection");
        assert_eq!(c.waits_for_slot.load(Ordering::Relaxed), 1);
        drop(idle);
        assert_eq!(gauge(&b), 0);
        assert!(reserve_now(&b).is_some());
    }
}
