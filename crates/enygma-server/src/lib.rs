//! `enygma-server`: the drop-in replacement of the reference prove service
//! (`rayls-sovereign-gnark-api`): same port, routes and JSON, but with a cap on proofs in
//! flight, a bounded FIFO queue and immediate load shedding.
//!
//! # Routes
//! Every statement of the registry (`enygma_prover::statements::ALL`) has a prove and a verify
//! route, e.g. `POST /generateProofTransfer-{k}` and `/verifyProofTransfer-{k}` (k = 2..6), or
//! plain paths for a statement without sizes; `enygma_prover::statements` is the list.
//! - A prove route answers the proof of that statement instance (200), or `{"error": "..."}`
//!   with 400 (bad k, malformed or non-canonical input; the message names the field), 404 (the
//!   instance is not hosted here, see `--circuits`), 413 (body over the limit), 422 (a check
//!   fails; the message names it), 503 + `Retry-After` (queue full, or keys still loading), 504
//!   (queue timeout), 500 (prover failure). With an `Idempotency-Key` header a request is
//!   proved once however often it is sent: the same request in flight is waited for, an
//!   answered one gets its kept answer again, another body under the key gets 422
//!   (`idempotency`).
//! - A verify route takes a 200 body of the same instance's prove route and answers
//!   `{"valid": true|false}`. They share their own small limit and queue and never wait behind
//!   proofs.
//! - `GET /healthcheck` (the reference's body), `/livez`, `/readyz` (503 until the keys of every
//!   hosted statement instance are loaded, and again while draining), `/metrics` (Prometheus
//!   text). Never limited. The admin listener (`--admin-bind`, [`admin_router`]) serves
//!   `/livez`, `/readyz` and `/metrics` alone, in plain HTTP without tokens; with API tokens
//!   and no metrics tokens, `/metrics` on the API port is refused.
//! - `GET /openapi.json`: the OpenAPI 3.1 description of every route, status and body,
//!   generated from the registry ([`openapi_document`]); in the API token scope.
//!
//! # Admission design
//! Proving is CPU-bound: past the number of cores, more concurrent proofs only add latency and
//! memory (the reference, which starts everything at once, degrades 11-14x past 2-4 in flight).
//! So every proving request goes through one shared `admission::Admission` (`src/admission/`):
//!
//! 1. **Validate before admission.** The prove handler (`app::router` lists its steps) reads
//!    the instance from the path (k, hosted, readiness) and the body under the limit, sheds at
//!    once if the queue is already full, then parses strictly and evaluates every check of the
//!    route's statement on tokio's blocking pool, so a bad request is answered 400/413/422
//!    without ever taking a queue place.
//! 2. **Cap.** A tokio [`Semaphore`](tokio::sync::Semaphore) with `--max-inflight` permits. It
//!    is fair: waiters are served in arrival order (FIFO), and a released permit goes to the
//!    oldest waiter before any newcomer can grab it.
//! 3. **Bounded queue.** At most `--queue-depth` requests may wait for a permit (an atomic
//!    counter reserved before waiting), and only while the newcomer's expected wait (its
//!    position x a running service-time estimate / `--max-inflight`) fits `--queue-timeout`. A
//!    request that finds no room is shed at once with 503 and `Retry-After` (the time until a
//!    newcomer would find room). A waiter that does not get a permit within `--queue-timeout`
//!    gets 504. The default depth is what the slots work off within the timeout,
//!    `ceil(queue-timeout / expected-service-time) x max-inflight`: a queued request costs a few
//!    kilobytes, only proofs in flight cost memory.
//! 4. **Disconnects.** hyper drops the request future when the client closes the connection;
//!    a queued request then leaves the queue without ever being proved, and
//!    `enygma_abandoned_total` counts it. Once proving has started, the proof runs to completion
//!    and its slot stays taken until then (the CPU is busy regardless, so the cap counts it).
//! 5. **Threads that follow the queue.** By default there is a slot per CPU and one rayon pool
//!    of a thread per CPU, shared by the slots: a proof is spawned on it
//!    (`ThreadPool::spawn`, so the prover's parallel code uses that pool), and rayon's work
//!    stealing gives a proof alone every thread (the latency of one proof on all CPUs) and
//!    splits the threads among proofs side by side as soon as requests queue (the throughput
//!    of a proof per CPU, at the same memory per proof in flight). `--max-inflight` or
//!    `--prove-threads` instead give each slot a dedicated pool of `--prove-threads` threads.
//!    Either way the proof hands its result back over a oneshot channel, and no proof ever
//!    runs on a tokio worker, so `/healthcheck` stays fast under load.
//!
//! The controller is one object in the shared state, used by every prove handler, so all
//! statements and all k share one limit and one queue (they compete for the same cores).
//!
//! Why not tower: `LoadShed → Buffer(depth) → GlobalConcurrencyLimit` is tower's bounded FIFO
//! (a shared cap, at most `depth` waiting, the rest shed), and it is close. What it lacks:
//! - a timeout on the wait alone: tower's `Timeout` around it would also bound the proof, and
//!   inside it would not see the queue; a waiter here gets 504 after `--queue-timeout` in the
//!   queue, whatever the proof then takes;
//! - shedding on the expected wait (queue position x service-time estimate) and a
//!   `Retry-After` from it, rather than only on a full buffer;
//! - gauges: the queue depth, slots in use and waits as metrics;
//! - a permit that travels into the proof job: tower releases its permit when the response
//!   future ends, so a client that disconnects mid-proof would free a slot while its proof
//!   still occupies a core; here the slot moves into the job on the rayon pool and is
//!   released when the proof finishes.
//!
//! The semaphore version (`admission::limiter`) is a few hundred lines with its unit tests.
//!
//! `--unlimited` disables the cap and the queue: every request starts proving at once on a
//! fresh pool, like the reference (for A/B load tests).
//!
//! # Transport and access control
//! `transport` runs the connections (HTTP/1.1 and HTTP/2, TLS from `tls`, the connection
//! budget with its per-address cap and its share for unauthenticated connections, handshake,
//! header and body deadlines, the maximum connection age, graceful drain, PROXY headers of
//! trusted proxies); `admission::abuse` says what a client may cost without sending a statement;
//! `auth` checks bearer tokens right inside
//! the observer, before any other stage, so a refused request is logged and counted but never
//! reads its body or takes a queue place. See `docs/security.md` for the threat model.
//!
//! # Observability
//! One log line per request (target `enygma_server::access`; text or JSON): request id (an
//! incoming `X-Request-Id` is honoured and echoed), caller, client address, route, statement, k,
//! status, and queue / witness / prove / total milliseconds; 401 and 429 at DEBUG (the token
//! check logs failures at WARN once per address and minute). Proving responses carry
//! `Server-Timing: queue;dur=.., witness;dur=.., prove;dur=.., total;dur=..`. Request bodies and
//! secret values never reach a log line, an error message or a metric label: the server never
//! logs a body, error messages come from the prover's field/check names, and metric labels come
//! from closed sets. See `metrics` for the series.

mod admission;
mod app;
mod auth;
mod backend;
mod body;
mod caller;
mod client_names;
mod config;
mod file_modes;
mod hosting;
mod idempotency;
#[cfg(test)]
mod log_capture;
mod malloc;
mod metrics;
mod openapi;
mod prover;
mod request;
mod server;
mod tables;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
mod tls;
mod transport;

#[cfg(test)]
mod tests;

/// How the proofs in flight get their threads, as the start-up log states it.
pub use admission::{AdmissionConfig, ProveThreads};
/// The service's state and its two routers (the API's and the admin listener's).
pub use app::{admin_router, router, AppState};
/// The bearer tokens of the API and of `/metrics`, and a token file.
pub use auth::{Auth, TokenFile};
/// What the service proves with: the prover behind the routes, and its errors.
pub use backend::{BackendError, Instance, ProofBackend, ProofOutput};
/// The command line, its validated configuration and the refusal of a configuration.
pub use config::{AccessArgs, AdminBind, Args, Config, ConfigError, LogFormat};
/// The permission checks of the secrets and proving keys at start.
pub use file_modes::{check_all as check_file_modes, FileKind};
/// The allocator's settings at start, and giving its free pages back to the kernel.
pub use malloc::{release_free_memory, tune as tune_malloc};
/// The OpenAPI 3.1 document of every route (`GET /openapi.json`, `enygma-server openapi`).
pub use openapi::document_json as openapi_document;
/// The real prover, and the checks of the proving keys before the service starts.
pub use prover::{missing_proving_keys, non_ceremony_keys, RealBackend};
/// Running the service: its listeners, key loading, signals and exit code.
pub use server::{reload_on_sighup, shutdown_signal, Exit, Service};
/// Proofs of an instance before its precomputed MSM tables are built.
pub use tables::BUILD_AFTER_PROOFS;
/// TLS and mTLS, reloaded on SIGHUP.
pub use tls::Tls;
/// The connection-level limits and the transport the listeners serve with.
pub use transport::{Limits, Transport};
