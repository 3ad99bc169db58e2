//! Prometheus metrics, written by hand in the text exposition format (version 0.0.4).
//!
//! Why by hand: the service has a dozen series whose label values all come from small closed
//! sets (route template, statement and k from the statement registry, HTTP status, queue name),
//! so atomics plus ~150 lines of rendering cover it without a metrics facade, a registry and an
//! exporter (and their transitive dependencies). Label values are never taken from the request:
//! a path with an unknown k is counted under `k="none"`, an unknown path under `route="other"`.
//!
//! Statements are labelled one way everywhere: `statement` is the statement's name
//! (`transfer`, `ownership-721`) and `k` its size, `"none"` for a statement without sizes (or,
//! on the request counter, a path whose k is not valid). The witness and prove histograms have
//! one series per hosted instance: `enygma_prove_seconds{statement="transfer",k="6"}`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use enygma_prover::statements::{self, Instance};

/// Upper bounds (seconds) of the queue-wait histogram buckets.
const QUEUE_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Upper bounds (seconds) of the witness and prove histogram buckets.
const PROVE_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0,
];

/// Upper bounds (seconds) of the table build histogram buckets: a k = 6 transfer's build takes
/// seconds on a quiet core and a minute or two at low priority beside busy proofs.
const TABLE_BUILD_BUCKETS: &[f64] = &[
    0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

/// The two admission queues.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueKind {
    Prove = 0,
    Verify = 1,
}

impl QueueKind {
    pub fn label(self) -> &'static str {
        match self {
            QueueKind::Prove => "prove",
            QueueKind::Verify => "verify",
        }
    }
}

/// A fixed-bucket histogram.
pub struct Histogram {
    bounds: &'static [f64],
    /// Per-bucket (not cumulative) counts; the last one is +Inf.
    buckets: Vec<AtomicU64>,
    sum_nanos: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_nanos: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = self
            .bounds
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(self.bounds.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos
            .fetch_add(d.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn sum_secs(&self) -> f64 {
        self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (i, bound) in self.bounds.iter().enumerate() {
            cumulative += self.buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
            );
        }
        cumulative += self.buckets[self.bounds.len()].load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {cumulative}"
        );
        let braces = |l: &str| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{{{l}}}")
            }
        };
        let _ = writeln!(out, "{name}_sum{} {}", braces(labels), self.sum_secs());
        let _ = writeln!(out, "{name}_count{} {}", braces(labels), cumulative);
    }
}

/// Per-queue counters.
#[derive(Default)]
pub struct QueueCounters {
    pub shed: AtomicU64,
    pub timeouts: AtomicU64,
    pub abandoned: AtomicU64,
}

/// Gauges sampled from the admission controllers at scrape time.
#[derive(Clone, Debug, Default)]
pub struct QueueGauges {
    pub queued: usize,
    pub queue_capacity: usize,
    /// 0 when unlimited.
    pub max_inflight: usize,
    /// The running estimate of one job's slot time, when the queue sheds by expected wait.
    pub service_time: Option<Duration>,
}

/// Who was refused by the bearer-token check.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AuthScope {
    /// The proving and verifying routes (`--auth-token-file`).
    Api = 0,
    /// `/metrics` (`--metrics-token-file`).
    Metrics = 1,
}

impl AuthScope {
    pub fn label(self) -> &'static str {
        match self {
            AuthScope::Api => "api",
            AuthScope::Metrics => "metrics",
        }
    }
}

/// Why the bearer-token check refused a request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AuthFailure {
    /// No `Authorization: Bearer` header.
    Missing = 0,
    /// A token that is not in the token file.
    Invalid = 1,
}

impl AuthFailure {
    pub fn label(self) -> &'static str {
        match self {
            AuthFailure::Missing => "missing",
            AuthFailure::Invalid => "invalid",
        }
    }
}

/// Connection-level counters (see `crate::transport`).
#[derive(Default)]
pub struct ConnectionCounters {
    pub accepted: AtomicU64,
    pub open: AtomicU64,
    /// Closed for sending no complete request head in time (TLS handshake, first bytes, headers,
    /// or an idle keep-alive / HTTP/2 connection).
    pub timed_out: AtomicU64,
    pub tls_handshake_failures: AtomicU64,
    pub tls_reloads_ok: AtomicU64,
    pub tls_reloads_failed: AtomicU64,
    /// Open connections on which no request has passed authentication yet (gauge).
    pub unauthenticated: AtomicU64,
    /// Closed right after `accept`: their address held `--max-connections-per-ip` already.
    pub refused_per_ip: AtomicU64,
    /// Times the accept loop waited for a free slot (`--max-connections`).
    pub waits_for_slot: AtomicU64,
    /// Times it waited for a free unauthenticated slot (`--max-unauthenticated-connections`).
    pub waits_for_unauthenticated: AtomicU64,
    /// Closed gracefully for their age (`--max-connection-age`).
    pub aged_out: AtomicU64,
    /// Unauthenticated connections closed for a newcomer (the budget was full).
    pub evicted: AtomicU64,
    /// Closed for not authenticating within `--unauthenticated-timeout`.
    pub unauthenticated_timed_out: AtomicU64,
    /// Closed after their allowance of malformed requests was spent.
    pub closed_malformed: AtomicU64,
    /// Closed after a failed authentication.
    pub closed_auth_failure: AtomicU64,
    /// Closed after a probe, never having authenticated while credentials are required.
    pub closed_unauthenticated_probe: AtomicU64,
    /// Connections from a trusted proxy without a valid PROXY header.
    pub proxy_header_failures: AtomicU64,
    /// Closed because a reloaded `--client-crl` revokes their client certificate.
    pub closed_revoked: AtomicU64,
}

/// The witness and prove times of one statement instance.
struct ProofTimes {
    instance: Instance,
    witness: Histogram,
    prove: Histogram,
}

/// The precomputed MSM tables of one hosted instance ([`crate::tables`]).
struct TableSeries {
    instance: Instance,
    /// Resident now (pinned ones included).
    bytes: AtomicU64,
    /// Proofs with tables, and without.
    hits: AtomicU64,
    misses: AtomicU64,
    builds_started: AtomicU64,
    builds_built: AtomicU64,
    builds_failed: AtomicU64,
    build_seconds: Histogram,
    evictions: AtomicU64,
}

/// The labels of `enygma_http_requests_total`: route template, k (none for a statement without
/// sizes or an unknown k) and status.
type RequestLabels = (&'static str, Option<usize>, u16);

/// Everything the service counts.
pub struct Metrics {
    requests: Mutex<BTreeMap<RequestLabels, u64>>,
    queue: [QueueCounters; 2],
    queue_wait: [Histogram; 2],
    /// One per hosted instance, in registry order.
    proofs: Vec<ProofTimes>,
    proofs_started: AtomicU64,
    proofs_in_flight: AtomicU64,
    proofs_in_flight_peak: AtomicU64,
    proofs_discarded: AtomicU64,
    proof_panics: AtomicU64,
    /// Proving requests refused because the request checks' pool and queue were full.
    checks_refused: AtomicU64,
    /// Failed authentications answered 429: their address had spent its allowance.
    auth_failures_limited: AtomicU64,
    /// Indexed by [`AuthScope`], then [`AuthFailure`].
    auth_rejected: [[AtomicU64; 2]; 2],
    pub connections: ConnectionCounters,
    /// One per hosted instance, in registry order.
    tables: Vec<TableSeries>,
    /// `--table-memory`, resolved.
    table_budget: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// The label value for a k: the number, or "none".
pub fn k_label(k: Option<usize>) -> String {
    k.map_or_else(|| "none".to_string(), |k| k.to_string())
}

/// `statement="transfer",k="6"`.
fn instance_labels(instance: Instance) -> String {
    format!(
        "statement=\"{}\",k=\"{}\"",
        instance.name(),
        k_label(instance.k())
    )
}

impl Metrics {
    /// Metrics of a server that hosts every statement instance.
    pub fn new() -> Self {
        Self::for_instances(&statements::instances().collect::<Vec<_>>())
    }

    /// Metrics of a server that hosts `hosted`.
    pub fn for_instances(hosted: &[Instance]) -> Self {
        Metrics {
            requests: Mutex::new(BTreeMap::new()),
            queue: Default::default(),
            queue_wait: [Histogram::new(QUEUE_BUCKETS), Histogram::new(QUEUE_BUCKETS)],
            proofs: hosted
                .iter()
                .map(|&instance| ProofTimes {
                    instance,
                    witness: Histogram::new(PROVE_BUCKETS),
                    prove: Histogram::new(PROVE_BUCKETS),
                })
                .collect(),
            proofs_started: AtomicU64::new(0),
            proofs_in_flight: AtomicU64::new(0),
            proofs_in_flight_peak: AtomicU64::new(0),
            proofs_discarded: AtomicU64::new(0),
            proof_panics: AtomicU64::new(0),
            checks_refused: AtomicU64::new(0),
            auth_failures_limited: AtomicU64::new(0),
            auth_rejected: Default::default(),
            connections: ConnectionCounters::default(),
            tables: hosted
                .iter()
                .map(|&instance| TableSeries {
                    instance,
                    bytes: AtomicU64::new(0),
                    hits: AtomicU64::new(0),
                    misses: AtomicU64::new(0),
                    builds_started: AtomicU64::new(0),
                    builds_built: AtomicU64::new(0),
                    builds_failed: AtomicU64::new(0),
                    build_seconds: Histogram::new(TABLE_BUILD_BUCKETS),
                    evictions: AtomicU64::new(0),
                })
                .collect(),
            table_budget: AtomicU64::new(0),
        }
    }

    fn table_series(&self, instance: Instance) -> Option<&TableSeries> {
        self.tables.iter().find(|t| t.instance == instance)
    }

    /// The memory budget of the automatic tables.
    pub fn table_budget(&self, bytes: u64) {
        self.table_budget.store(bytes, Ordering::Relaxed);
    }

    /// A proof of `instance` ended, with its tables (`hit`) or without.
    pub fn table_proof(&self, instance: Instance, hit: bool) {
        if let Some(t) = self.table_series(instance) {
            let counter = if hit { &t.hits } else { &t.misses };
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn table_build_started(&self, instance: Instance) {
        if let Some(t) = self.table_series(instance) {
            t.builds_started.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A build of `instance`'s tables ended after `took`: built, or failed.
    pub fn table_build_finished(&self, instance: Instance, took: Duration, built: bool) {
        if let Some(t) = self.table_series(instance) {
            let counter = if built {
                &t.builds_built
            } else {
                &t.builds_failed
            };
            counter.fetch_add(1, Ordering::Relaxed);
            t.build_seconds.observe(took);
        }
    }

    /// The tables of `instance` now hold `bytes`.
    pub fn table_bytes(&self, instance: Instance, bytes: u64) {
        if let Some(t) = self.table_series(instance) {
            t.bytes.store(bytes, Ordering::Relaxed);
        }
    }

    /// The tables of `instance` were evicted.
    pub fn table_evicted(&self, instance: Instance) {
        if let Some(t) = self.table_series(instance) {
            t.evictions.fetch_add(1, Ordering::Relaxed);
            t.bytes.store(0, Ordering::Relaxed);
        }
    }

    /// Counts a request refused with 401.
    pub fn auth_rejected(&self, scope: AuthScope, why: AuthFailure) {
        self.auth_rejected[scope as usize][why as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a finished request. `route` and `k` must come from closed sets (a route
    /// template, a k of the route's statement).
    pub fn request(&self, route: &'static str, k: Option<usize>, status: u16) {
        let mut map = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry((route, k, status)).or_insert(0) += 1;
    }

    pub fn queue(&self, kind: QueueKind) -> &QueueCounters {
        &self.queue[kind as usize]
    }

    pub fn observe_queue_wait(&self, kind: QueueKind, d: Duration) {
        self.queue_wait[kind as usize].observe(d);
    }

    /// Records a proof of a hosted instance (others are not counted).
    /// A failed authentication answered 429 ([`crate::bad_requests`]).
    pub fn auth_failure_limited(&self) {
        self.auth_failures_limited.fetch_add(1, Ordering::Relaxed);
    }

    /// A proving request refused before its checks: their pool and queue were full.
    pub fn check_refused(&self) {
        self.checks_refused.fetch_add(1, Ordering::Relaxed);
    }

    pub fn observe_proof(&self, instance: Instance, witness: Duration, prove: Duration) {
        if let Some(p) = self.proofs.iter().find(|p| p.instance == instance) {
            p.witness.observe(witness);
            p.prove.observe(prove);
        }
    }

    /// A proof starts running on a prove pool.
    pub fn proof_started(&self) {
        self.proofs_started.fetch_add(1, Ordering::Relaxed);
        let now = self.proofs_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.proofs_in_flight_peak.fetch_max(now, Ordering::SeqCst);
    }

    /// A proof stopped running (finished, failed or panicked).
    pub fn proof_finished(&self) {
        self.proofs_in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    pub fn proof_panicked(&self) {
        self.proof_panics.fetch_add(1, Ordering::Relaxed);
    }

    /// A proof finished after its client had gone.
    pub fn proof_discarded(&self) {
        self.proofs_discarded.fetch_add(1, Ordering::Relaxed);
    }

    pub fn proofs_started(&self) -> u64 {
        self.proofs_started.load(Ordering::Relaxed)
    }

    pub fn proofs_in_flight(&self) -> u64 {
        self.proofs_in_flight.load(Ordering::SeqCst)
    }

    /// Mean witness + prove time over all instances so far, if any proof finished.
    pub fn mean_service_time(&self) -> Option<Duration> {
        let count: u64 = self.proofs.iter().map(|p| p.prove.count()).sum();
        let sum: f64 = self
            .proofs
            .iter()
            .map(|p| p.prove.sum_secs() + p.witness.sum_secs())
            .sum();
        (count > 0).then(|| Duration::from_secs_f64(sum / count as f64))
    }

    /// Renders every series in the Prometheus text format. The names and labels are an
    /// interface: deploy/'s alert rules and dashboards use them.
    pub fn render(
        &self,
        ready: bool,
        draining: bool,
        prove: QueueGauges,
        verify: QueueGauges,
        check_pending: usize,
    ) -> String {
        let gauges = [(QueueKind::Prove, prove), (QueueKind::Verify, verify)];
        let mut out = String::with_capacity(8 * 1024);
        let o = &mut out;
        render_build_info(o);
        render_lifecycle(o, ready, draining);
        self.render_requests(o);
        self.render_proofs(o);
        self.render_queues(o, &gauges);
        self.render_proof_times(o);
        self.render_admission_estimates(o, &gauges);
        self.render_tables(o);
        header(
            o,
            "enygma_check_pending",
            "gauge",
            "Proving requests being checked or waiting for a check thread.",
        );
        let _ = writeln!(o, "enygma_check_pending {check_pending}");
        header(
            o,
            "enygma_check_refused_total",
            "counter",
            "Proving requests refused with 503 before their checks: the check pool and its queue were full.",
        );
        let _ = writeln!(
            o,
            "enygma_check_refused_total {}",
            self.checks_refused.load(Ordering::Relaxed)
        );
        self.render_access(o);
        out
    }

    /// The precomputed MSM tables: budget, bytes, proofs with and without, builds, evictions.
    fn render_tables(&self, o: &mut String) {
        header(
            o,
            "enygma_table_memory_budget_bytes",
            "gauge",
            "Memory the precomputed MSM tables may take (--table-memory, pinned ones included; 0: no automatic tables).",
        );
        let _ = writeln!(
            o,
            "enygma_table_memory_budget_bytes {}",
            self.table_budget.load(Ordering::Relaxed)
        );
        type Series = fn(&TableSeries) -> &AtomicU64;
        let per_instance: [(&str, &str, &str, Series); 3] = [
            (
                "enygma_table_bytes",
                "gauge",
                "Bytes of precomputed MSM tables resident per instance (built at start or for traffic).",
                |t| &t.bytes,
            ),
            (
                "enygma_table_evictions_total",
                "counter",
                "Precomputed MSM tables evicted (least recently proved) to make room for another instance's.",
                |t| &t.evictions,
            ),
            (
                "enygma_table_builds_started_total",
                "counter",
                "Background builds of precomputed MSM tables started.",
                |t| &t.builds_started,
            ),
        ];
        for (name, kind, help, get) in per_instance {
            header(o, name, kind, help);
            for t in &self.tables {
                let _ = writeln!(
                    o,
                    "{name}{{{}}} {}",
                    instance_labels(t.instance),
                    get(t).load(Ordering::Relaxed)
                );
            }
        }
        // Counters of each instance split in two by one label.
        type Split = fn(&TableSeries) -> [(&str, &AtomicU64); 2];
        let split: [(&str, &str, &str, Split); 2] = [
            (
                "enygma_table_proofs_total",
                "tables",
                "Proofs by instance, with precomputed MSM tables (tables=\"hit\") or without (\"miss\").",
                |t| [("hit", &t.hits), ("miss", &t.misses)],
            ),
            (
                "enygma_table_builds_finished_total",
                "outcome",
                "Background builds of precomputed MSM tables finished, by outcome (built, failed: the instance proves without).",
                |t| [("built", &t.builds_built), ("failed", &t.builds_failed)],
            ),
        ];
        for (name, label, help, get) in split {
            header(o, name, "counter", help);
            for t in &self.tables {
                let labels = instance_labels(t.instance);
                for (value, counter) in get(t) {
                    let _ = writeln!(
                        o,
                        "{name}{{{labels},{label}=\"{value}\"}} {}",
                        counter.load(Ordering::Relaxed)
                    );
                }
            }
        }
        header(
            o,
            "enygma_table_build_seconds",
            "histogram",
            "Time of each background build of precomputed MSM tables (one thread at low priority).",
        );
        for t in &self.tables {
            t.build_seconds.render(
                o,
                "enygma_table_build_seconds",
                &instance_labels(t.instance),
            );
        }
    }

    /// Finished requests by route, k and status.
    fn render_requests(&self, o: &mut String) {
        header(
            o,
            "enygma_http_requests_total",
            "counter",
            "Finished HTTP requests by route, k and status (499: the client went away first).",
        );
        let map = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        for ((route, k, status), n) in map.iter() {
            let k = k_label(*k);
            let _ = writeln!(
                o,
                "enygma_http_requests_total{{route=\"{route}\",k=\"{k}\",status=\"{status}\"}} {n}"
            );
        }
    }

    /// The prove pools: proofs running now, at most, started, discarded and panicked.
    fn render_proofs(&self, o: &mut String) {
        header(
            o,
            "enygma_proofs_in_flight",
            "gauge",
            "Proofs running on the prove pools now.",
        );
        let _ = writeln!(o, "enygma_proofs_in_flight {}", self.proofs_in_flight());
        header(
            o,
            "enygma_proofs_in_flight_peak",
            "gauge",
            "Most proofs ever running at once since start.",
        );
        let _ = writeln!(
            o,
            "enygma_proofs_in_flight_peak {}",
            self.proofs_in_flight_peak.load(Ordering::SeqCst)
        );
        header(
            o,
            "enygma_proofs_started_total",
            "counter",
            "Proofs started on the prove pools.",
        );
        let _ = writeln!(o, "enygma_proofs_started_total {}", self.proofs_started());
        header(
            o,
            "enygma_proofs_discarded_total",
            "counter",
            "Proofs that finished after their client had disconnected.",
        );
        let _ = writeln!(
            o,
            "enygma_proofs_discarded_total {}",
            self.proofs_discarded.load(Ordering::Relaxed)
        );
        header(
            o,
            "enygma_proof_panics_total",
            "counter",
            "Proofs whose prover panicked (answered 500).",
        );
        let _ = writeln!(
            o,
            "enygma_proof_panics_total {}",
            self.proof_panics.load(Ordering::Relaxed)
        );
    }

    /// Each queue (prove, verify): its configuration, depth, refusals and waits.
    fn render_queues(&self, o: &mut String, gauges: &[(QueueKind, QueueGauges)]) {
        header(
            o,
            "enygma_max_inflight",
            "gauge",
            "Configured concurrency limit per queue (0: unlimited).",
        );
        for (kind, g) in gauges {
            let _ = writeln!(
                o,
                "enygma_max_inflight{{queue=\"{}\"}} {}",
                kind.label(),
                g.max_inflight
            );
        }
        header(
            o,
            "enygma_queue_capacity",
            "gauge",
            "Configured queue depth per queue.",
        );
        for (kind, g) in gauges {
            let _ = writeln!(
                o,
                "enygma_queue_capacity{{queue=\"{}\"}} {}",
                kind.label(),
                g.queue_capacity
            );
        }
        header(
            o,
            "enygma_queue_depth",
            "gauge",
            "Requests waiting for a slot now.",
        );
        for (kind, g) in gauges {
            let _ = writeln!(
                o,
                "enygma_queue_depth{{queue=\"{}\"}} {}",
                kind.label(),
                g.queued
            );
        }
        type Counter = fn(&QueueCounters) -> &AtomicU64;
        let counters: [(&str, &str, Counter); 3] = [
            (
                "enygma_shed_total",
                "Requests refused at once with 503 because the queue was full.",
                |c| &c.shed,
            ),
            (
                "enygma_queue_timeouts_total",
                "Requests answered 504 after waiting the queue timeout.",
                |c| &c.timeouts,
            ),
            (
                "enygma_abandoned_total",
                "Queued requests whose client disconnected; they were never run.",
                |c| &c.abandoned,
            ),
        ];
        for (name, help, get) in counters {
            header(o, name, "counter", help);
            for kind in [QueueKind::Prove, QueueKind::Verify] {
                let _ = writeln!(
                    o,
                    "{name}{{queue=\"{}\"}} {}",
                    kind.label(),
                    get(self.queue(kind)).load(Ordering::Relaxed)
                );
            }
        }

        header(
            o,
            "enygma_queue_wait_seconds",
            "histogram",
            "Time from admission to a free slot.",
        );
        for kind in [QueueKind::Prove, QueueKind::Verify] {
            self.queue_wait[kind as usize].render(
                o,
                "enygma_queue_wait_seconds",
                &format!("queue=\"{}\"", kind.label()),
            );
        }
    }

    /// Witness and prove times by statement instance.
    fn render_proof_times(&self, o: &mut String) {
        header(
            o,
            "enygma_witness_seconds",
            "histogram",
            "Witness synthesis time by statement and k (\"none\" for a statement without sizes).",
        );
        for p in &self.proofs {
            p.witness
                .render(o, "enygma_witness_seconds", &instance_labels(p.instance));
        }
        header(
            o,
            "enygma_prove_seconds",
            "histogram",
            "Groth16 prove time (after the witness) by statement and k (\"none\" for a statement without sizes).",
        );
        for p in &self.proofs {
            p.prove
                .render(o, "enygma_prove_seconds", &instance_labels(p.instance));
        }
    }

    fn render_admission_estimates(&self, o: &mut String, gauges: &[(QueueKind, QueueGauges)]) {
        header(
            o,
            "enygma_service_time_estimate_seconds",
            "gauge",
            "Running estimate of one job's time on a slot, used to shed requests whose expected wait exceeds the queue timeout.",
        );
        for (kind, g) in gauges {
            if let Some(d) = g.service_time {
                let _ = writeln!(
                    o,
                    "enygma_service_time_estimate_seconds{{queue=\"{}\"}} {}",
                    kind.label(),
                    d.as_secs_f64()
                );
            }
        }
    }

    /// Connections, TLS and bearer-token series.
    fn render_access(&self, o: &mut String) {
        let c = &self.connections;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        header(
            o,
            "enygma_connections_open",
            "gauge",
            "Client connections open now.",
        );
        let _ = writeln!(o, "enygma_connections_open {}", load(&c.open));
        let counters: [(&str, &str, &AtomicU64); 3] = [
            (
                "enygma_connections_accepted_total",
                "Client connections accepted.",
                &c.accepted,
            ),
            (
                "enygma_connections_timed_out_total",
                "Connections closed for not delivering a complete request head in time (TLS handshake, headers, or idle).",
                &c.timed_out,
            ),
            (
                "enygma_tls_handshake_failures_total",
                "TLS handshakes that failed (including clients refused by --tls-client-ca).",
                &c.tls_handshake_failures,
            ),
        ];
        for (name, help, value) in counters {
            header(o, name, "counter", help);
            let _ = writeln!(o, "{name} {}", load(value));
        }
        header(
            o,
            "enygma_connections_unauthenticated",
            "gauge",
            "Open connections on which no request has passed authentication yet.",
        );
        let _ = writeln!(
            o,
            "enygma_connections_unauthenticated {}",
            load(&c.unauthenticated)
        );
        header(
            o,
            "enygma_connections_refused_total",
            "counter",
            "Connections closed right after accept, by reason (per_ip: the address held --max-connections-per-ip).",
        );
        let _ = writeln!(
            o,
            "enygma_connections_refused_total{{reason=\"per_ip\"}} {}",
            load(&c.refused_per_ip)
        );
        header(
            o,
            "enygma_connection_waits_total",
            "counter",
            "Times a new connection waited in the backlog, by the budget that was full (connections: --max-connections, unauthenticated: --max-unauthenticated-connections).",
        );
        for (budget, value) in [
            ("connections", &c.waits_for_slot),
            ("unauthenticated", &c.waits_for_unauthenticated),
        ] {
            let _ = writeln!(
                o,
                "enygma_connection_waits_total{{budget=\"{budget}\"}} {}",
                load(value)
            );
        }
        header(
            o,
            "enygma_connections_aged_out_total",
            "counter",
            "Connections closed gracefully for their age (--max-connection-age).",
        );
        let _ = writeln!(o, "enygma_connections_aged_out_total {}", load(&c.aged_out));
        header(
            o,
            "enygma_connections_closed_total",
            "counter",
            "Connections the service closed, by reason (evicted: unauthenticated, for a newcomer; unauthenticated_timeout: --unauthenticated-timeout; malformed_requests: their allowance of 400/408/413 spent; auth_failure: after a 401 or 429; unauthenticated_probe: a probe on a connection that never authenticated while credentials are required; proxy_header: a trusted proxy's connection without a valid PROXY header; revoked: a reloaded --client-crl revokes its client certificate).",
        );
        for (reason, value) in [
            ("evicted", &c.evicted),
            ("unauthenticated_timeout", &c.unauthenticated_timed_out),
            ("malformed_requests", &c.closed_malformed),
            ("auth_failure", &c.closed_auth_failure),
            ("unauthenticated_probe", &c.closed_unauthenticated_probe),
            ("proxy_header", &c.proxy_header_failures),
            ("revoked", &c.closed_revoked),
        ] {
            let _ = writeln!(
                o,
                "enygma_connections_closed_total{{reason=\"{reason}\"}} {}",
                load(value)
            );
        }
        header(
            o,
            "enygma_tls_reloads_total",
            "counter",
            "Reloads of the TLS certificate, key and client CA (SIGHUP) by result; a failed reload keeps the previous ones.",
        );
        let _ = writeln!(
            o,
            "enygma_tls_reloads_total{{result=\"ok\"}} {}",
            load(&c.tls_reloads_ok)
        );
        let _ = writeln!(
            o,
            "enygma_tls_reloads_total{{result=\"error\"}} {}",
            load(&c.tls_reloads_failed)
        );
        header(
            o,
            "enygma_auth_rejected_total",
            "counter",
            "Requests answered 401 by scope (api, metrics) and reason (missing, invalid token).",
        );
        for scope in [AuthScope::Api, AuthScope::Metrics] {
            for why in [AuthFailure::Missing, AuthFailure::Invalid] {
                let _ = writeln!(
                    o,
                    "enygma_auth_rejected_total{{scope=\"{}\",reason=\"{}\"}} {}",
                    scope.label(),
                    why.label(),
                    load(&self.auth_rejected[scope as usize][why as usize])
                );
            }
        }
        header(
            o,
            "enygma_auth_failures_limited_total",
            "counter",
            "Failed authentications answered 429 instead of 401: their client address had spent its allowance (--auth-failure-burst).",
        );
        let _ = writeln!(
            o,
            "enygma_auth_failures_limited_total {}",
            load(&self.auth_failures_limited)
        );
    }
}

/// `enygma_build_info`: which version and commit this process runs, so that a dashboard or a
/// rollout check can tell replicas of different builds apart.
fn render_build_info(o: &mut String) {
    header(
        o,
        "enygma_build_info",
        "gauge",
        "1, labelled with the version and the git commit the server was built from.",
    );
    let _ = writeln!(
        o,
        "enygma_build_info{{version=\"{}\",commit=\"{}\"}} 1",
        enygma_build_info::VERSION,
        enygma_build_info::COMMIT
    );
}

/// Whether the service is ready (keys loaded) and whether it is draining.
fn render_lifecycle(o: &mut String, ready: bool, draining: bool) {
    header(
        o,
        "enygma_ready",
        "gauge",
        "1 once the keys of every hosted statement instance are loaded, else 0.",
    );
    let _ = writeln!(o, "enygma_ready {}", ready as u8);
    header(
        o,
        "enygma_draining",
        "gauge",
        "1 after SIGTERM/SIGINT, while in-flight and queued requests finish.",
    );
    let _ = writeln!(o, "enygma_draining {}", draining as u8);
}

/// `enygma_key_info`: one series per loaded key, saying where its toxic waste went (the alert
/// on production deployments that run other than ceremony keys reads it).
pub fn render_key_info(o: &mut String, keys: &[(Instance, enygma_prover::keys::KeyRecord)]) {
    header(
        o,
        "enygma_key_info",
        "gauge",
        "1 per loaded key: its origin (development-seed: anyone can forge proofs; \
         single-party-random: its setup's operator can; ceremony) and the QAP reduction its H \
         query is for.",
    );
    for (instance, record) in keys {
        let _ = writeln!(
            o,
            "enygma_key_info{{{},origin=\"{}\",reduction=\"{}\"}} 1",
            instance_labels(*instance),
            record.origin.kind(),
            record.reduction.name()
        );
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_the_build_version_and_commit() {
        let text = Metrics::new().render(
            false,
            false,
            QueueGauges::default(),
            QueueGauges::default(),
            0,
        );
        let line = format!(
            "enygma_build_info{{version=\"{}\",commit=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION"),
            enygma_build_info::COMMIT
        );
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
        assert!(text.contains("# TYPE enygma_build_info gauge"));
    }

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::new();
        m.request("generateProofTransfer", Some(6), 200);
        m.request("generateProofTransfer", None, 400);
        m.observe_queue_wait(QueueKind::Prove, Duration::from_millis(3));
        let transfer6 = statements::instance("transfer", Some(6)).unwrap();
        let deposit2 = statements::instance("deposit", Some(2)).unwrap();
        m.observe_proof(
            transfer6,
            Duration::from_millis(40),
            Duration::from_millis(600),
        );
        m.proof_started();
        m.proof_started();
        m.proof_finished();
        m.queue(QueueKind::Prove)
            .shed
            .fetch_add(5, Ordering::Relaxed);
        m.auth_rejected(AuthScope::Metrics, AuthFailure::Invalid);
        let text = m.render(
            true,
            false,
            QueueGauges {
                queued: 2,
                queue_capacity: 8,
                max_inflight: 2,
                service_time: Some(Duration::from_millis(350)),
            },
            QueueGauges::default(),
            0,
        );
        for line in [
            "enygma_ready 1",
            "enygma_http_requests_total{route=\"generateProofTransfer\",k=\"6\",status=\"200\"} 1",
            "enygma_http_requests_total{route=\"generateProofTransfer\",k=\"none\",status=\"400\"} 1",
            "enygma_proofs_in_flight 1",
            "enygma_proofs_in_flight_peak 2",
            "enygma_queue_depth{queue=\"prove\"} 2",
            "enygma_shed_total{queue=\"prove\"} 5",
            "enygma_queue_wait_seconds_bucket{queue=\"prove\",le=\"0.005\"} 1",
            "enygma_queue_wait_seconds_bucket{queue=\"prove\",le=\"0.001\"} 0",
            "enygma_prove_seconds_bucket{statement=\"transfer\",k=\"6\",le=\"1\"} 1",
            "enygma_prove_seconds_bucket{statement=\"transfer\",k=\"6\",le=\"+Inf\"} 1",
            "enygma_prove_seconds_count{statement=\"transfer\",k=\"6\"} 1",
            "enygma_witness_seconds_count{statement=\"transfer\",k=\"6\"} 1",
            // The statements are no longer mixed: a deposit of the same k has its own series.
            "enygma_prove_seconds_count{statement=\"deposit\",k=\"6\"} 0",
            "enygma_service_time_estimate_seconds{queue=\"prove\"} 0.35",
            "enygma_auth_rejected_total{scope=\"metrics\",reason=\"invalid\"} 1",
            "enygma_auth_rejected_total{scope=\"api\",reason=\"missing\"} 0",
            "enygma_connections_open 0",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        // Every sample line is `name{labels} value` or `name value`.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let value = l.rsplit(' ').next().unwrap();
            assert!(value.parse::<f64>().is_ok(), "bad sample {l:?}");
        }
        let mean = m.mean_service_time().unwrap();
        assert_eq!(mean, Duration::from_millis(640));

        // A server hosting one instance renders that one's histograms only.
        let one = Metrics::for_instances(&[deposit2]);
        one.observe_proof(
            transfer6,
            Duration::from_millis(1),
            Duration::from_millis(2),
        );
        let text = one.render(
            true,
            false,
            QueueGauges::default(),
            QueueGauges::default(),
            0,
        );
        let series: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("enygma_prove_seconds_count"))
            .collect();
        assert_eq!(
            series,
            ["enygma_prove_seconds_count{statement=\"deposit\",k=\"2\"} 0"]
        );
    }
}
