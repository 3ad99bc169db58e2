//! Repeated bad requests from one caller are slowed down: each answer in 4xx (after the token
//! check) takes a token from the caller's bucket, and a caller whose bucket is empty gets 429
//! with `Retry-After` before its request is read or checked, until the bucket refills. So a
//! client that sends malformed or failing requests in a loop cannot keep the request checks
//! busy and take the CPU from the proofs; a caller that sends good requests never drains it.
//!
//! Buckets are per caller name (a token or client certificate names it), or per IP address for
//! anonymous callers. A token bucket is a few lines here rather than a crate (`governor` keys a
//! limit by request, not by outcome: it cannot take a token after the answer is known).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::caller::Caller;

/// Whose bucket a request draws from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BucketKey {
    Named(Caller),
    /// An anonymous caller, by its address (`None`: unknown, one shared bucket).
    Address(Option<IpAddr>),
}

/// Most buckets held; past it, the full ones (callers with no recent bad request) are dropped.
const MAX_BUCKETS: usize = 16 * 1024;

/// `--bad-request-burst` bad requests at once, refilled at `--bad-request-rate` per second.
pub struct BadRequestLimit {
    burst: f64,
    per_second: f64,
    buckets: Mutex<HashMap<BucketKey, Bucket>>,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl BadRequestLimit {
    /// A bucket of `burst` tokens (0 turns the limit off) that refills one token per `refill`.
    pub fn new(burst: u32, refill: Duration) -> Self {
        BadRequestLimit {
            burst: f64::from(burst),
            per_second: 1.0 / refill.as_secs_f64().max(1e-9),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn enabled(&self) -> bool {
        self.burst > 0.0
    }

    fn level(&self, bucket: &Bucket, now: Instant) -> f64 {
        let refilled = now.saturating_duration_since(bucket.at).as_secs_f64() * self.per_second;
        (bucket.tokens + refilled).min(self.burst)
    }

    /// `Some(retry after)` when `key`'s bucket is empty: the request is refused.
    pub fn refused(&self, key: &BucketKey, now: Instant) -> Option<Duration> {
        if !self.enabled() {
            return None;
        }
        let buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let level = self.level(buckets.get(key)?, now);
        if level >= 1.0 {
            return None;
        }
        // At most an hour: a rate of 0 (no refill) must not overflow a Duration.
        let wait = ((1.0 - level) / self.per_second).min(3600.0);
        Some(Duration::from_secs_f64(wait))
    }

    /// Takes a token from `key`'s bucket: its request was answered with a 4xx.
    pub fn bad_request(&self, key: BucketKey, now: Instant) {
        if !self.enabled() {
            return;
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(&key) {
            buckets.retain(|_, b| self.level(b, now) < self.burst);
            if buckets.len() >= MAX_BUCKETS {
                return;
            }
        }
        let level = buckets.get(&key).map_or(self.burst, |b| self.level(b, now));
        buckets.insert(
            key,
            Bucket {
                tokens: (level - 1.0).max(0.0),
                at: now,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_refill_rate() {
        let limit = BadRequestLimit::new(3, Duration::from_millis(500));
        let a = BucketKey::Address(Some("127.0.0.1".parse().unwrap()));
        let b = BucketKey::Named(crate::caller::check_name("bank-b").unwrap());
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(limit.refused(&a, t0), None);
            limit.bad_request(a.clone(), t0);
        }
        // Empty: refused for half a second (one token at 2/s), then one more bad request.
        let wait = limit.refused(&a, t0).unwrap();
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-6, "{wait:?}");
        assert!(limit.refused(&a, t0 + Duration::from_millis(400)).is_some());
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(limit.refused(&a, t1), None);
        limit.bad_request(a.clone(), t1);
        assert!(limit.refused(&a, t1).is_some());
        // Another caller has its own bucket.
        assert_eq!(limit.refused(&b, t1), None);
        // Off: never refused.
        let off = BadRequestLimit::new(0, Duration::from_millis(500));
        off.bad_request(a.clone(), t0);
        assert_eq!(off.refused(&a, t0), None);
    }
}
