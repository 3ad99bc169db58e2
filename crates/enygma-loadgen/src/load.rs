//! Offering load for one phase and recording every request.
//!
//! Closed loop: N workers, each sending its next request as soon as the previous one answered.
//! Open loop: a dispatcher fires requests at Poisson-scheduled times whatever the server does;
//! latency is measured from the *scheduled* send time, so a slow server cannot hide its delay
//! by slowing the sender down (no coordinated omission).
//!
//! A request belongs to the warm-up or to the measured part according to when it was
//! (scheduled to be) sent. No request is sent after the phase's end, and every request sent is
//! awaited before the phase returns, so the server is idle between phases.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::client::{HttpClient, Reply, Status};
use crate::mix::Targets;
use crate::schedule::poisson_schedule;
use enygma_formats::server_timing::ServerTiming;

/// One request. Times are offsets from the run's epoch (shared with the RSS samples).
#[derive(Debug, Clone, Copy)]
pub struct Record {
    pub phase: usize,
    pub warmup: bool,
    /// Closed loop: the worker; open loop: the arrival's index.
    pub worker: usize,
    /// The route's index in the run's [`Targets`] (0 unless `--mix`).
    pub target: usize,
    /// When the request should have been sent (open loop) or was sent (closed loop).
    pub scheduled: Duration,
    pub sent: Duration,
    pub done: Duration,
    pub status: Status,
    pub timing: ServerTiming,
}

impl Record {
    /// External latency: from the scheduled send time to the last byte of the response.
    pub fn latency_ms(&self) -> f64 {
        self.done.saturating_sub(self.scheduled).as_secs_f64() * 1e3
    }
    /// How late the request left compared with its schedule (open loop; 0 for closed loop).
    pub fn send_lag_ms(&self) -> f64 {
        self.sent.saturating_sub(self.scheduled).as_secs_f64() * 1e3
    }
    /// From the actual send to the last byte.
    pub fn service_ms(&self) -> f64 {
        self.done.saturating_sub(self.sent).as_secs_f64() * 1e3
    }
}

/// Counters for the progress line.
#[derive(Debug, Default)]
pub struct Live {
    pub sent: AtomicU64,
    pub ok: AtomicU64,
    pub err: AtomicU64,
    pub inflight: AtomicU64,
    pub last_latency_us: AtomicU64,
}

impl Live {
    pub fn reset(&self) {
        for a in [
            &self.sent,
            &self.ok,
            &self.err,
            &self.inflight,
            &self.last_latency_us,
        ] {
            a.store(0, Ordering::Relaxed);
        }
    }
}

/// What every phase needs.
#[derive(Clone)]
pub struct Ctx {
    pub client: HttpClient,
    /// The routes and their request pools.
    pub targets: Arc<Targets>,
    pub epoch: Instant,
    pub live: Arc<Live>,
    pub abort: Arc<AtomicBool>,
    pub seed: u64,
    /// Open loop: arrivals beyond this many outstanding requests are dropped and counted as
    /// `client_dropped` (protects the client's file descriptors, never hides latency).
    pub max_outstanding: usize,
    /// Closed loop: a worker answered 503/429 with `Retry-After` waits that long (up to the
    /// phase's end) before its next request.
    pub honor_retry_after: bool,
}

/// The outcome of one phase.
#[derive(Debug, Clone)]
pub struct PhaseRun {
    /// Offsets from the epoch: phase start, end of warm-up, end of sending, last response.
    pub start: Duration,
    pub measure_from: Duration,
    pub end: Duration,
    pub drained: Duration,
    pub records: Vec<Record>,
    /// Open loop: the most requests outstanding at once.
    pub max_outstanding_seen: usize,
    pub aborted: bool,
}

/// A phase starting now: its start, the end of its warm-up, and its end.
fn phase_times(warmup: Duration, duration: Duration) -> [Instant; 3] {
    let start = Instant::now();
    [start, start + warmup, start + warmup + duration]
}

impl PhaseRun {
    /// A phase whose last response has just arrived: its records in order of (scheduled) send
    /// time, its times as offsets from the run's epoch.
    fn finished(
        ctx: &Ctx,
        [start, measure_from, end]: [Instant; 3],
        mut records: Vec<Record>,
        max_outstanding_seen: usize,
    ) -> PhaseRun {
        records.sort_by_key(|r| r.scheduled);
        PhaseRun {
            start: start - ctx.epoch,
            measure_from: measure_from - ctx.epoch,
            end: end - ctx.epoch,
            drained: Instant::now() - ctx.epoch,
            records,
            max_outstanding_seen,
            aborted: ctx.abort.load(Ordering::Relaxed),
        }
    }
}

/// Sends the next request of the run; returns its target's index and the reply.
async fn send_one(ctx: &Ctx) -> (usize, Reply) {
    let (target, uri, body) = ctx.targets.next();
    ctx.live.sent.fetch_add(1, Ordering::Relaxed);
    ctx.live.inflight.fetch_add(1, Ordering::Relaxed);
    let r = ctx.client.post_json(uri, body).await;
    ctx.live.inflight.fetch_sub(1, Ordering::Relaxed);
    if r.status.is_ok() {
        ctx.live.ok.fetch_add(1, Ordering::Relaxed);
    } else {
        ctx.live.err.fetch_add(1, Ordering::Relaxed);
    }
    (target, r)
}

/// Sends the next request (scheduled at `scheduled`, sent at `sent`) and records it; also
/// returns the `Retry-After` of a shed answer.
async fn send_recorded(
    ctx: &Ctx,
    phase: usize,
    worker: usize,
    warmup: bool,
    scheduled: Instant,
    sent: Instant,
) -> (Record, Option<Duration>) {
    let (target, r) = send_one(ctx).await;
    let rec = Record {
        phase,
        warmup,
        worker,
        target,
        scheduled: scheduled - ctx.epoch,
        sent: sent - ctx.epoch,
        done: r.done - ctx.epoch,
        status: r.status,
        timing: r.timing,
    };
    ctx.live
        .last_latency_us
        .store((rec.latency_ms() * 1e3) as u64, Ordering::Relaxed);
    (rec, r.retry_after)
}

/// Closed loop with `concurrency` workers for `warmup + duration`.
pub async fn run_closed(
    ctx: &Ctx,
    phase: usize,
    concurrency: usize,
    warmup: Duration,
    duration: Duration,
) -> PhaseRun {
    let [start, measure_from, end] = phase_times(warmup, duration);
    let mut set = JoinSet::new();
    for worker in 0..concurrency {
        let ctx = ctx.clone();
        set.spawn(async move {
            let mut out = Vec::new();
            loop {
                let now = Instant::now();
                if now >= end || ctx.abort.load(Ordering::Relaxed) {
                    break;
                }
                let (rec, retry_after) =
                    send_recorded(&ctx, phase, worker, now < measure_from, now, now).await;
                out.push(rec);
                if rec.status == Status::Connect {
                    // Server gone: do not spin; the phase still ends on time.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                } else if let Some(wait) = retry_after.filter(|_| ctx.honor_retry_after) {
                    tokio::time::sleep_until(end.min(Instant::now() + wait).into()).await;
                }
            }
            out
        });
    }
    let mut records = Vec::new();
    while let Some(r) = set.join_next().await {
        records.extend(r.expect("worker panicked"));
    }
    PhaseRun::finished(ctx, [start, measure_from, end], records, concurrency)
}

/// Open loop: Poisson arrivals at `rate_rps` for `warmup + duration`.
pub async fn run_open(
    ctx: &Ctx,
    phase: usize,
    rate_rps: f64,
    warmup: Duration,
    duration: Duration,
) -> PhaseRun {
    let [start, measure_from, end] = phase_times(warmup, duration);
    let arrivals = poisson_schedule(rate_rps, warmup + duration, ctx.seed ^ (phase as u64) << 32);
    let records = Arc::new(Mutex::new(Vec::with_capacity(arrivals.len())));
    let outstanding = Arc::new(AtomicU64::new(0));
    let mut max_seen = 0usize;
    let mut set = JoinSet::new();
    for (i, offset) in arrivals.into_iter().enumerate() {
        let at = start + offset;
        tokio::time::sleep_until(at.into()).await;
        if ctx.abort.load(Ordering::Relaxed) {
            break;
        }
        // Reap finished tasks so the set does not grow without bound.
        while set.try_join_next().is_some() {}
        let warmup_req = at < measure_from;
        let n = outstanding.load(Ordering::Relaxed) as usize;
        if n >= ctx.max_outstanding {
            let now = Instant::now() - ctx.epoch;
            ctx.live.err.fetch_add(1, Ordering::Relaxed);
            records.lock().unwrap().push(Record {
                phase,
                warmup: warmup_req,
                worker: i,
                target: 0,
                scheduled: at - ctx.epoch,
                sent: now,
                done: now,
                status: Status::Dropped,
                timing: ServerTiming::default(),
            });
            continue;
        }
        max_seen = max_seen.max(n + 1);
        outstanding.fetch_add(1, Ordering::Relaxed);
        let (ctx2, recs, out) = (ctx.clone(), records.clone(), outstanding.clone());
        set.spawn(async move {
            let (rec, _) = send_recorded(&ctx2, phase, i, warmup_req, at, Instant::now()).await;
            out.fetch_sub(1, Ordering::Relaxed);
            recs.lock().unwrap().push(rec);
        });
    }
    while let Some(r) = set.join_next().await {
        r.expect("request task panicked");
    }
    let records = std::mem::take(&mut *records.lock().unwrap());
    PhaseRun::finished(ctx, [start, measure_from, end], records, max_seen)
}
