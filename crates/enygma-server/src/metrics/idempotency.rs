//! The series of idempotent proving ([`crate::idempotency`]): answers given again, requests
//! that waited for the first of their key, conflicting bodies, and the kept answers' count,
//! memory and evictions.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::labels::{EvictionLabels, EvictionReason};

/// A gauge of a count or a size.
type Amount = Gauge<u64, AtomicU64>;

/// The families of idempotent proving, registered with the service's others.
#[derive(Default)]
pub struct IdempotencyFamilies {
    replays: Counter,
    waits: Counter,
    conflicts: Counter,
    evictions: Family<EvictionLabels, Counter>,
    entries: Amount,
    bytes: Amount,
    budget: Amount,
}

impl IdempotencyFamilies {
    /// Both eviction reasons start at zero, so that an alert on their rate has a series.
    pub(super) fn register(&self, r: &mut Registry) {
        for reason in [EvictionReason::Expired, EvictionReason::Memory] {
            self.evictions
                .get_or_create_owned(&EvictionLabels { reason });
        }
        r.register(
            "enygma_idempotency_replays",
            "Proving requests answered with the kept answer of an earlier request with the same Idempotency-Key and body",
            self.replays.clone(),
        );
        r.register(
            "enygma_idempotency_waits",
            "Proving requests that waited for the request in flight with the same Idempotency-Key and body instead of proving again",
            self.waits.clone(),
        );
        r.register(
            "enygma_idempotency_conflicts",
            "Proving requests refused with 422: their Idempotency-Key was used with another body",
            self.conflicts.clone(),
        );
        r.register(
            "enygma_idempotency_evictions",
            "Kept answers of idempotent proving dropped, by reason (expired: older than --idempotency-ttl; memory: the oldest, to stay within --idempotency-memory)",
            self.evictions.clone(),
        );
        r.register(
            "enygma_idempotency_entries",
            "Idempotency keys held now: answers kept and requests in flight",
            self.entries.clone(),
        );
        r.register(
            "enygma_idempotency_bytes",
            "Memory the idempotency keys held now take, by the store's count",
            self.bytes.clone(),
        );
        r.register(
            "enygma_idempotency_memory_budget_bytes",
            "Memory the idempotency keys may take (--idempotency-memory)",
            self.budget.clone(),
        );
    }

    pub fn replayed(&self) {
        self.replays.inc();
    }

    pub fn waited(&self) {
        self.waits.inc();
    }

    pub fn conflicted(&self) {
        self.conflicts.inc();
    }

    pub fn evicted(&self, reason: EvictionReason, count: u64) {
        self.evictions
            .get_or_create(&EvictionLabels { reason })
            .inc_by(count);
    }

    /// What the store holds now.
    pub fn held(&self, entries: u64, bytes: u64) {
        self.entries.set(entries);
        self.bytes.set(bytes);
    }

    pub fn budget(&self, bytes: u64) {
        self.budget.set(bytes);
    }
}
