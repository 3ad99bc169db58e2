//! What a client may cost the service without sending a statement, and what happens past it.
//!
//! A false statement (422) or an unknown instance (404) is an answer about the data: a gateway
//! cannot know in advance which of its users' statements are false (that is what the prover
//! checks), so neither is ever counted, and no limit here ever refuses a request before it is
//! read. Two things are counted:
//!
//! - **Malformed requests** (400, 408, 413: a body that is not a request, arrives too slowly or
//!   is too large), per connection: each takes a token from the connection's [`Allowance`]
//!   (`--bad-request-burst` at once, refilled at `--bad-request-rate` per second); once it is
//!   spent, the connection is closed after that response (HTTP/1.1 `Connection: close`,
//!   HTTP/2 GOAWAY: the requests in progress on it are still answered). The client must open
//!   a new connection, and so pass the connection budget again; nothing it or anyone else sends
//!   later is refused. A per-connection allowance rather than a per-caller one, because one
//!   caller (a bank's gateway) carries many users: one user's garbage must not cost the
//!   others.
//! - **Failed authentication** (401), per client address ([`AddressAllowances`]): a failure
//!   always closes its connection; past the address's allowance (`--auth-failure-burst`,
//!   refilled at `--auth-failure-rate`), a failure is answered 429 with `Retry-After` instead
//!   of 401. A valid token is never refused, so clients sharing an address with a guesser are
//!   served. Failures are logged at DEBUG, and at WARN once per address and minute.
//!
//! A token bucket is a few lines here rather than a crate (`governor` keys a limit by request,
//! not by outcome: it cannot take a token after the answer is known).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A token bucket's settings: `burst` tokens at once, refilled at `per_second`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Allowance {
    burst: f64,
    per_second: f64,
}

/// The state of one bucket (`None`: full, never drawn from).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Allowance {
    /// `burst` tokens (0 turns the limit off), one refilled per `refill`.
    pub(crate) fn new(burst: u32, refill: Duration) -> Self {
        Allowance {
            burst: f64::from(burst),
            per_second: 1.0 / refill.as_secs_f64().max(1e-9),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.burst > 0.0
    }

    fn level(&self, bucket: Option<&Bucket>, now: Instant) -> f64 {
        bucket.map_or(self.burst, |b| {
            let refilled = now.saturating_duration_since(b.at).as_secs_f64() * self.per_second;
            (b.tokens + refilled).min(self.burst)
        })
    }

    /// Takes a token from `bucket`: `false` when there was none left (off: always `true`).
    pub(crate) fn take(&self, bucket: &mut Option<Bucket>, now: Instant) -> bool {
        if !self.enabled() {
            return true;
        }
        let level = self.level(bucket.as_ref(), now);
        let had_one = level >= 1.0;
        *bucket = Some(Bucket {
            tokens: (level - 1.0).max(0.0),
            at: now,
        });
        had_one
    }

    /// How long until `bucket` holds a token again (at most an hour: a rate of 0 must not
    /// overflow a `Duration`).
    pub(crate) fn refill_time(&self, bucket: Option<&Bucket>, now: Instant) -> Duration {
        let missing = (1.0 - self.level(bucket, now)).max(0.0);
        Duration::from_secs_f64((missing / self.per_second).min(3600.0))
    }
}

/// Most buckets held; past it, the full ones (addresses with no recent failure) are dropped.
const MAX_BUCKETS: usize = 16 * 1024;

/// How often an address's failures reach a WARN line.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// One [`Allowance`] per client address.
pub(crate) struct AddressAllowances {
    allowance: Allowance,
    buckets: Mutex<HashMap<IpAddr, Entry>>,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    bucket: Option<Bucket>,
    warned: Option<Instant>,
}

/// The outcome of one counted failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counted {
    /// `Some(retry after)` once the address's allowance is spent.
    pub(crate) over: Option<Duration>,
    /// This failure is the address's first in [`WARN_EVERY`]: worth a WARN line.
    pub(crate) warn: bool,
}

impl AddressAllowances {
    pub(crate) fn new(allowance: Allowance) -> Self {
        AddressAllowances {
            allowance,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// No allowance, only the pacing of WARN lines: once per address and minute.
    pub(crate) fn warnings_only() -> Self {
        Self::new(Allowance::new(0, Duration::from_secs(1)))
    }

    /// Counts one failure of `key`.
    pub(crate) fn failure(&self, key: &IpAddr, now: Instant) -> Counted {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(key) {
            let allowance = self.allowance;
            buckets.retain(|_, e| {
                allowance.level(e.bucket.as_ref(), now) < allowance.burst
                    || e.warned.is_some_and(|w| now.duration_since(w) < WARN_EVERY)
            });
        }
        let mut entry = buckets.get(key).copied().unwrap_or(Entry {
            bucket: None,
            warned: None,
        });
        let within = self.allowance.take(&mut entry.bucket, now);
        let warn = entry
            .warned
            .is_none_or(|w| now.saturating_duration_since(w) >= WARN_EVERY);
        if warn {
            entry.warned = Some(now);
        }
        let over = (!within).then(|| self.allowance.refill_time(entry.bucket.as_ref(), now));
        if buckets.len() < MAX_BUCKETS || buckets.contains_key(key) {
            buckets.insert(*key, entry);
        }
        Counted { over, warn }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_allowance_gives_its_burst_then_its_refill_rate() {
        let allowance = Allowance::new(3, Duration::from_millis(500));
        let mut bucket = None;
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(allowance.take(&mut bucket, t0));
        }
        assert!(!allowance.take(&mut bucket, t0));
        // Spent: one token at 2/s takes half a second.
        let wait = allowance.refill_time(bucket.as_ref(), t0);
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-6, "{wait:?}");
        assert!(!allowance.take(&mut bucket, t0 + Duration::from_millis(400)));
        let t1 = t0 + Duration::from_millis(1500);
        assert!(allowance.take(&mut bucket, t1));
        // Off: never spent.
        let off = Allowance::new(0, Duration::from_millis(500));
        let mut bucket = None;
        for _ in 0..100 {
            assert!(off.take(&mut bucket, t0));
        }
    }

    #[test]
    fn failures_are_counted_per_address_and_warned_once_a_minute() {
        let limit = AddressAllowances::new(Allowance::new(2, Duration::from_secs(1)));
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        assert_eq!(
            limit.failure(&a, t0),
            Counted {
                over: None,
                warn: true
            }
        );
        assert_eq!(
            limit.failure(&a, t0),
            Counted {
                over: None,
                warn: false
            }
        );
        let third = limit.failure(&a, t0);
        assert_eq!(third.over, Some(Duration::from_secs(1)));
        assert!(!third.warn);
        // Another address has its own allowance.
        assert_eq!(limit.failure(&b, t0).over, None);
        // A minute later: refilled, and worth a WARN line again.
        let later = limit.failure(&a, t0 + WARN_EVERY);
        assert_eq!(
            later,
            Counted {
                over: None,
                warn: true
            }
        );
    }
}
