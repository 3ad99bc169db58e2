//! Idempotent proving: a proving request with an `Idempotency-Key` header is proved once, however
//! often it is sent.
//!
//! A gateway that times out and sends its request again, or a hop that retries after a broken
//! connection, would otherwise make the service prove the same statement twice, and it happens
//! exactly when the service is loaded and answers slowly. With a key (the IETF draft's
//! `Idempotency-Key` header), the request is held under (caller, statement instance, key):
//!
//! - while the first request of a key is in flight, another with the same key and the same body
//!   (by its SHA-256) waits for the first's answer and gets it;
//! - once answered, the answer is kept for `--idempotency-ttl` and given again, with
//!   `Idempotent-Replayed: true`, to every later request with that key and body;
//! - the same key with another body is refused with 422: the key names one request.
//!
//! Only the answer is kept (status, body, content type, the proving key's `Enygma-Key-Sha256`),
//! never the request: of the body only its digest, which tells a repeated request from another
//! without holding its secrets. A kept answer is given only to a request whose body has the same
//! digest, so nobody reads an answer whose request it could not have sent itself.
//!
//! Which answers are kept: a proof (2xx) and an answer about the request itself (400 malformed,
//! 422 a check fails), which the same body would get again. Refusals for load or time (503, 504,
//! 429) and failures of the service (500) are not kept, so that a retry can succeed. When the
//! first request of a key ends with an answer that is not kept (or without one), the requests
//! that waited for it go on as if they had just arrived: the first of them proves, the others
//! wait for it in turn.
//!
//! The keys of one caller are theirs alone: the caller is the one the token check names (a
//! bearer token's or a client certificate's name), and every unnamed request shares the
//! `anonymous` caller, as in the fair shares. The client's address is not part of the key: a
//! gateway retries from whichever of its addresses, and behind a proxy every client has the
//! proxy's. Sharing is safe because an answer is only given for the same body.
//!
//! Memory is bounded twice: an answer expires after `--idempotency-ttl`, and the answers kept
//! take at most `--idempotency-memory` by the store's count (the answer, the key, a fixed
//! overhead per entry), the oldest dropped first. Expired answers are dropped as the store is
//! used and when `/metrics` is scraped. Behind several replicas, a key must reach the same
//! replica every time (hash the header at the load balancer): the store is per process.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use enygma_prover::statements::Instance;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::caller::Caller;
use crate::metrics::{EvictionReason, Metrics};
use crate::request::{ApiError, ErrorNote};

/// The request header that names a request (the IETF draft's spelling).
pub(crate) static IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// Set on an answer that an earlier request with the same key caused: given again after it
/// was answered, or to a request that waited for it.
pub(crate) static IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Longest key: a UUID is 36 characters, a ULID 26; 255 leaves room for a prefix of the
/// gateway's own, and bounds what an entry costs.
pub(crate) const MAX_KEY_LEN: usize = 255;

/// `--idempotency-ttl`'s default: longer than any gateway's retries of one request (the queue
/// timeout is 60 s), short enough that the default memory holds the keys of a busy replica.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// `--idempotency-memory`'s default: about ten thousand k = 6 transfer proofs (5 KiB each with
/// their public signal), more than a replica proves in ten minutes.
pub(crate) const DEFAULT_MEMORY: u64 = 64 << 20;

/// What an entry costs beyond its key and answer: the map's and the queue's slots, the caller's
/// handle, the digest, the channel of an entry in flight. A round estimate, so that a flood of
/// tiny entries is bounded too.
const ENTRY_OVERHEAD: u64 = 256;

/// The store's bounds (`--idempotency-ttl`, `--idempotency-memory`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdempotencyConfig {
    pub ttl: Duration,
    pub memory: u64,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        IdempotencyConfig {
            ttl: DEFAULT_TTL,
            memory: DEFAULT_MEMORY,
        }
    }
}

/// The request's `Idempotency-Key`, if it has one: 1 to 255 visible ASCII characters, one
/// header. Anything else is 400 naming the header (the value is never quoted back: it is the
/// client's, and could be anything).
pub(crate) fn key_of(headers: &HeaderMap) -> Result<Option<Box<str>>, ApiError> {
    let mut values = headers.get_all(&IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let refused = |why: &str| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("invalid Idempotency-Key header: {why}"),
        )
    };
    if values.next().is_some() {
        return Err(refused("send it once"));
    }
    let bytes = value.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_KEY_LEN {
        return Err(refused("it has 1 to 255 characters"));
    }
    if !bytes.iter().all(|b| b.is_ascii_graphic()) {
        return Err(refused("it has visible ASCII characters only"));
    }
    // Visible ASCII is UTF-8.
    Ok(Some(String::from_utf8_lossy(bytes).into()))
}

/// The SHA-256 of a request body: what tells a repeated request from another one under the same
/// key, without keeping the body.
pub(crate) fn digest_of(body: &[u8]) -> [u8; 32] {
    Sha256::digest(body).into()
}

/// The headers of an answer that are given again with it: its content type, and on a proof the
/// SHA-256 of the proving key it was made with (which verifying key it is for, while keys are
/// replaced).
const KEPT_HEADERS: [HeaderName; 2] = [CONTENT_TYPE, HeaderName::from_static("enygma-key-sha256")];

/// An answer as it is given again: the status, the headers that say what the body is, the body,
/// and the error message for the access log.
#[derive(Debug)]
pub(crate) struct KeptAnswer {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
    note: Option<Cow<'static, str>>,
}

impl KeptAnswer {
    /// Whether an answer with `status` is kept: the ones the same request would get again.
    pub(crate) fn is_kept(status: StatusCode) -> bool {
        status.is_success()
            || status == StatusCode::BAD_REQUEST
            || status == StatusCode::UNPROCESSABLE_ENTITY
    }

    /// Takes a response apart (its body is in memory: the service's answers are built whole),
    /// and gives back the same response for the first request's client.
    pub(crate) async fn capture(resp: Response) -> (Arc<KeptAnswer>, Response) {
        let (parts, body) = resp.into_parts();
        // A body the service built in memory; failing to read it cannot happen, and would at
        // worst give an empty body again.
        let body = axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap_or_default();
        let kept = Arc::new(KeptAnswer {
            status: parts.status,
            headers: KEPT_HEADERS
                .iter()
                .filter_map(|name| Some((name.clone(), parts.headers.get(name)?.clone())))
                .collect(),
            body: body.clone(),
            note: parts.extensions.get::<ErrorNote>().map(|n| n.0.clone()),
        });
        (kept, Response::from_parts(parts, Body::from(body)))
    }

    /// The answer again, marked as caused by an earlier request.
    pub(crate) fn replay(&self) -> Response {
        let mut resp = (self.status, Body::from(self.body.clone())).into_response();
        let headers = resp.headers_mut();
        for (name, value) in &self.headers {
            headers.insert(name.clone(), value.clone());
        }
        headers.insert(
            IDEMPOTENT_REPLAYED.clone(),
            HeaderValue::from_static("true"),
        );
        if let Some(note) = &self.note {
            resp.extensions_mut().insert(ErrorNote(note.clone()));
        }
        resp
    }

    /// What keeping it costs, by the store's count.
    fn bytes(&self) -> u64 {
        let headers: usize = self
            .headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len())
            .sum();
        (self.body.len() + headers) as u64
    }
}

/// Who asked what: an entry's place in the store.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct EntryKey {
    caller: Caller,
    /// The statement's name and k: the route the key was sent to.
    statement: &'static str,
    k: Option<usize>,
    key: Box<str>,
}

/// What the store holds under a key.
enum Entry {
    /// The first request is running; its answer will be sent on the channel (dropped without an
    /// answer: none to keep).
    InFlight {
        digest: [u8; 32],
        answer: watch::Receiver<Option<Arc<KeptAnswer>>>,
        /// Tells this request's entry from a later one under the same key.
        id: u64,
    },
    /// Answered at `at`; kept until the TTL.
    Answered {
        digest: [u8; 32],
        answer: Arc<KeptAnswer>,
        at: Instant,
        bytes: u64,
        id: u64,
    },
}

/// What to do with a keyed request.
pub(crate) enum Claim {
    /// It is the first with its key: prove, then [`Lead::finish`] with the answer.
    Lead(Lead),
    /// The same request is in flight: wait for its answer with [`Wait::answer`].
    Wait(Wait),
    /// The same request was answered: give this again.
    Replay(Arc<KeptAnswer>),
}

/// The store of idempotency keys (see the module's documentation).
pub(crate) struct IdempotencyStore {
    inner: Mutex<Inner>,
    config: IdempotencyConfig,
    metrics: Arc<Metrics>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<EntryKey, Entry>,
    /// Answered entries, oldest first: the order of expiry and of eviction (every answer has
    /// the same TTL). An item whose entry has gone or been replaced is skipped.
    answered: VecDeque<(u64, EntryKey)>,
    /// The store's count of what it holds (entries in flight cost their overhead).
    bytes: u64,
    next_id: u64,
}

impl IdempotencyStore {
    pub(crate) fn new(config: IdempotencyConfig, metrics: Arc<Metrics>) -> Arc<Self> {
        metrics.idempotency.budget(config.memory);
        Arc::new(IdempotencyStore {
            inner: Mutex::default(),
            config,
            metrics,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What to do with the request `key` of `caller` to `instance`, whose body has `digest`;
    /// 422 naming the header when the key was used with another body.
    pub(crate) fn claim(
        self: &Arc<Self>,
        caller: &Caller,
        instance: Instance,
        key: &str,
        digest: [u8; 32],
    ) -> Result<Claim, ApiError> {
        let entry_key = EntryKey {
            caller: caller.clone(),
            statement: instance.name(),
            k: instance.k(),
            key: key.into(),
        };
        let now = Instant::now();
        let mut inner = self.lock();
        self.expire(&mut inner, now);
        let conflict = || {
            self.metrics.idempotency.conflicted();
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "the Idempotency-Key header was already used with another request body; \
                 send a new key for a new request",
            )
        };
        let claim = match inner.entries.get(&entry_key) {
            Some(Entry::InFlight {
                digest: d, answer, ..
            }) => {
                if *d != digest {
                    return Err(conflict());
                }
                self.metrics.idempotency.waited();
                Claim::Wait(Wait {
                    answer: answer.clone(),
                })
            }
            Some(Entry::Answered {
                digest: d, answer, ..
            }) => {
                if *d != digest {
                    return Err(conflict());
                }
                self.metrics.idempotency.replayed();
                Claim::Replay(answer.clone())
            }
            None => {
                let (tx, rx) = watch::channel(None);
                let id = inner.next_id;
                inner.next_id += 1;
                inner.bytes += ENTRY_OVERHEAD + key.len() as u64;
                inner.entries.insert(
                    entry_key.clone(),
                    Entry::InFlight {
                        digest,
                        answer: rx,
                        id,
                    },
                );
                Claim::Lead(Lead {
                    store: self.clone(),
                    key: Some(entry_key),
                    id,
                    tx,
                })
            }
        };
        self.publish(&inner);
        Ok(claim)
    }

    /// Drops the answers older than the TTL (at a scrape, so that the gauges are current).
    pub(crate) fn expire_now(&self) {
        let mut inner = self.lock();
        self.expire(&mut inner, Instant::now());
        self.publish(&inner);
    }

    fn expire(&self, inner: &mut Inner, now: Instant) {
        let mut expired = 0;
        while let Some((id, key)) = inner.answered.front() {
            match inner.entries.get(key) {
                Some(Entry::Answered { id: e, at, .. }) if e == id => {
                    if now.duration_since(*at) < self.config.ttl {
                        break;
                    }
                    let (_, key) = inner.answered.pop_front().expect("the front");
                    inner.remove(&key);
                    expired += 1;
                }
                // Gone or replaced since: nothing to expire.
                _ => {
                    inner.answered.pop_front();
                }
            }
        }
        if expired > 0 {
            self.metrics
                .idempotency
                .evicted(EvictionReason::Expired, expired);
        }
    }

    /// Drops the oldest answers until the store is within its memory.
    fn evict_for_memory(&self, inner: &mut Inner) {
        let mut evicted = 0;
        while inner.bytes > self.config.memory {
            let Some((id, key)) = inner.answered.pop_front() else {
                // Only requests in flight are left: they are bounded by the admission queue.
                break;
            };
            if matches!(inner.entries.get(&key), Some(Entry::Answered { id: e, .. }) if *e == id) {
                inner.remove(&key);
                evicted += 1;
            }
        }
        if evicted > 0 {
            self.metrics
                .idempotency
                .evicted(EvictionReason::Memory, evicted);
        }
    }

    /// The first request of a key ended with `answer` (none: not kept, or no answer at all).
    fn settle(&self, key: EntryKey, id: u64, answer: Option<Arc<KeptAnswer>>) {
        let mut inner = self.lock();
        let digest = match inner.entries.get(&key) {
            Some(Entry::InFlight { digest, id: e, .. }) if *e == id => *digest,
            // Not this request's entry (cannot happen: only its lead settles it).
            _ => return,
        };
        inner.remove(&key);
        if let Some(answer) = answer {
            let bytes = ENTRY_OVERHEAD + key.key.len() as u64 + answer.bytes();
            if bytes > self.config.memory {
                // Larger than the whole budget: given to this request and its waiters only.
                self.metrics.idempotency.evicted(EvictionReason::Memory, 1);
            } else {
                inner.bytes += bytes;
                inner.answered.push_back((id, key.clone()));
                inner.entries.insert(
                    key,
                    Entry::Answered {
                        digest,
                        answer,
                        at: Instant::now(),
                        bytes,
                        id,
                    },
                );
                self.evict_for_memory(&mut inner);
            }
        }
        self.publish(&inner);
    }

    fn publish(&self, inner: &Inner) {
        self.metrics
            .idempotency
            .held(inner.entries.len() as u64, inner.bytes);
    }
}

impl Inner {
    fn remove(&mut self, key: &EntryKey) {
        let bytes = match self.entries.remove(key) {
            Some(Entry::Answered { bytes, .. }) => bytes,
            Some(Entry::InFlight { .. }) => ENTRY_OVERHEAD + key.key.len() as u64,
            None => 0,
        };
        self.bytes -= bytes;
    }
}

/// The first request of a key. Its answer goes to the requests waiting for it and, if it is
/// kept, into the store; dropped without [`Lead::finish`] (the request's work was cancelled or
/// panicked), its waiters go on by themselves.
pub(crate) struct Lead {
    store: Arc<IdempotencyStore>,
    key: Option<EntryKey>,
    id: u64,
    tx: watch::Sender<Option<Arc<KeptAnswer>>>,
}

impl Lead {
    /// Settles the key with the first request's response, and gives the response back.
    pub(crate) async fn finish(mut self, resp: Response) -> Response {
        if !KeptAnswer::is_kept(resp.status()) {
            // Dropping `self` settles the key without an answer.
            return resp;
        }
        let (answer, resp) = KeptAnswer::capture(resp).await;
        if let Some(key) = self.key.take() {
            // Into the store before the waiters wake, so that a request arriving between the
            // two finds the answer and never a key that is neither in flight nor answered.
            self.store.settle(key, self.id, Some(answer.clone()));
        }
        let _ = self.tx.send(Some(answer));
        resp
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.store.settle(key, self.id, None);
        }
    }
}

/// A request waiting for the first of its key.
pub(crate) struct Wait {
    answer: watch::Receiver<Option<Arc<KeptAnswer>>>,
}

impl Wait {
    /// The first request's answer, or none when it is not kept (the waiter then claims the key
    /// again).
    pub(crate) async fn answer(mut self) -> Option<Arc<KeptAnswer>> {
        match self.answer.wait_for(Option::is_some).await {
            Ok(answer) => answer.clone(),
            Err(_) => None,
        }
    }
}

#[cfg(test)]
mod tests;
