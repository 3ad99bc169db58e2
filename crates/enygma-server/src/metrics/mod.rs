//! Prometheus metrics on prometheus-client, served in the text exposition format (version 0.0.4).
//!
//! The names, types and labels are an interface: deploy/'s alert rules, dashboards and KEDA
//! triggers and the load generator read them, so they keep the names they have always had.
//! Counters are registered without their `_total` (prometheus-client appends it) and the info
//! series as `enygma_build` and `enygma_key` (it appends `_info`, and the 0.0.4 encoder types
//! them `gauge`).
//!
//! Two kinds of series: the ones this type updates as the service runs live in a [`Registry`]
//! of typed families ([`labels`] has their label sets); the ones read at scrape time (counters
//! other parts of the service keep in atomics, gauges the handler samples) go through the
//! collector API ([`scraped`]).
//!
//! Statements are labelled one way everywhere: `statement` is the statement's name
//! (`transfer`, `ownership-721`) and `k` its size, `"none"` for a statement without sizes (or,
//! on the request counter, a path whose k is not valid). The witness and prove histograms have
//! one series per hosted instance: `enygma_prove_seconds{statement="transfer",k="6"}`. Label
//! values are never taken from the request: a path with an unknown k is counted under
//! `k="none"`, an unknown path under `route="other"`.

mod idempotency;
mod labels;
mod scraped;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use enygma_prover::statements::{self, Instance};
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use labels::{
    AuthLabels, BuildLabels, InstanceLabels, KeyLabels, KeyReloadLabels, QueueLabels,
    RequestLabels, TableBuildLabels, TableProofLabels, TableUse, K,
};
use scraped::{AdmissionCounters, CallerShares, KeyInfo, ServiceState};

pub use idempotency::IdempotencyFamilies;
pub use labels::{
    AuthFailure, AuthScope, BuildOutcome, EvictionReason, KeyReloadResult, QueueKind,
};
pub use scraped::{CallerShare, ConnectionCounters, QueueCounters, QueueGauges};

/// The `Content-Type` of `/metrics`: the Prometheus text format, version 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

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

/// Histograms by a label set: the family builds each new series with its own buckets.
type Histograms<L> = Family<L, Histogram>;

/// A gauge of a count or a size.
type Amount = Gauge<u64, AtomicU64>;

/// Everything the service counts.
pub struct Metrics {
    /// The families below and the collectors over the atomics of the queues and connections.
    registry: Registry,
    /// The statement instances this server hosts or hosted since it started: the only ones
    /// with proof and table series. An instance added while serving ([`Metrics::host`]) gets
    /// its series then; a retired one keeps them (its counters keep their totals, and the
    /// proofs it still had running are counted), its tables' bytes at zero.
    hosted: std::sync::RwLock<Vec<Instance>>,
    requests: Family<RequestLabels, Counter>,
    queue: Arc<AdmissionCounters>,
    queue_wait: Histograms<QueueLabels>,
    witness_seconds: Histograms<InstanceLabels>,
    prove_seconds: Histograms<InstanceLabels>,
    proofs_started: Counter,
    proofs_in_flight: Amount,
    proofs_in_flight_peak: Amount,
    proofs_discarded: Counter,
    proof_panics: Counter,
    /// Proving requests refused because the request checks' pool and queue were full.
    checks_refused: Counter,
    /// Failed authentications answered 429: their address had spent its allowance.
    auth_failures_limited: Counter,
    auth_rejected: Family<AuthLabels, Counter>,
    key_reloads: Family<KeyReloadLabels, Counter>,
    pub connections: Arc<ConnectionCounters>,
    tables: TableFamilies,
    pub idempotency: IdempotencyFamilies,
}

/// The precomputed MSM tables of the hosted instances ([`crate::tables`]).
struct TableFamilies {
    /// `--table-memory`, resolved.
    budget: Amount,
    /// Resident now (pinned ones included).
    bytes: Family<InstanceLabels, Amount>,
    /// Proofs with tables, and without.
    proofs: Family<TableProofLabels, Counter>,
    builds_started: Family<InstanceLabels, Counter>,
    builds_finished: Family<TableBuildLabels, Counter>,
    build_seconds: Histograms<InstanceLabels>,
    evictions: Family<InstanceLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Metrics of a server that hosts every statement instance.
    pub fn new() -> Self {
        Self::for_instances(&statements::instances().collect::<Vec<_>>())
    }

    /// Metrics of a server that hosts `hosted`: their series start at zero, so that a dashboard
    /// shows every instance before its first proof.
    pub fn for_instances(hosted: &[Instance]) -> Self {
        let metrics = Metrics {
            registry: Registry::default(),
            hosted: std::sync::RwLock::new(hosted.to_vec()),
            requests: Family::default(),
            queue: Arc::default(),
            queue_wait: Family::new_with_constructor(|| {
                Histogram::new(QUEUE_BUCKETS.iter().copied())
            }),
            witness_seconds: Family::new_with_constructor(|| {
                Histogram::new(PROVE_BUCKETS.iter().copied())
            }),
            prove_seconds: Family::new_with_constructor(|| {
                Histogram::new(PROVE_BUCKETS.iter().copied())
            }),
            proofs_started: Counter::default(),
            proofs_in_flight: Amount::default(),
            proofs_in_flight_peak: Amount::default(),
            proofs_discarded: Counter::default(),
            proof_panics: Counter::default(),
            checks_refused: Counter::default(),
            auth_failures_limited: Counter::default(),
            auth_rejected: Family::default(),
            key_reloads: Family::default(),
            connections: Arc::default(),
            tables: TableFamilies {
                budget: Amount::default(),
                bytes: Family::default(),
                proofs: Family::default(),
                builds_started: Family::default(),
                builds_finished: Family::default(),
                build_seconds: Family::new_with_constructor(|| {
                    Histogram::new(TABLE_BUILD_BUCKETS.iter().copied())
                }),
                evictions: Family::default(),
            },
            idempotency: IdempotencyFamilies::default(),
        };
        metrics.initialise_series();
        metrics.register()
    }

    /// Creates every series whose label values are known up front (the handles are shared,
    /// so dropping them keeps the series).
    fn initialise_series(&self) {
        for queue in QueueKind::ALL {
            self.queue_wait.get_or_create_owned(&QueueLabels { queue });
        }
        for result in [
            KeyReloadResult::Replaced,
            KeyReloadResult::Refused,
            KeyReloadResult::Added,
            KeyReloadResult::Retired,
        ] {
            self.key_reloads
                .get_or_create_owned(&KeyReloadLabels { result });
        }
        for scope in [AuthScope::Api, AuthScope::Metrics] {
            for reason in [AuthFailure::Missing, AuthFailure::Invalid] {
                self.auth_rejected
                    .get_or_create_owned(&AuthLabels { scope, reason });
            }
        }
        for instance in self.hosted_now() {
            self.initialise_instance(instance);
        }
    }

    /// The instances with series, as they are now.
    fn hosted_now(&self) -> Vec<Instance> {
        self.hosted
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// An instance hosted from now on (added while serving): its series start at zero.
    pub fn host(&self, instance: Instance) {
        {
            let mut hosted = self.hosted.write().unwrap_or_else(|e| e.into_inner());
            if hosted.contains(&instance) {
                return;
            }
            hosted.push(instance);
        }
        self.initialise_instance(instance);
    }

    /// An instance no longer hosted: its tables were dropped.
    pub fn retire(&self, instance: Instance) {
        self.table_bytes(instance, 0);
    }

    /// Creates the series of one instance.
    fn initialise_instance(&self, instance: Instance) {
        let labels = InstanceLabels::from(instance);
        self.witness_seconds.get_or_create_owned(&labels);
        self.prove_seconds.get_or_create_owned(&labels);
        let t = &self.tables;
        t.bytes.get_or_create_owned(&labels);
        t.evictions.get_or_create_owned(&labels);
        t.builds_started.get_or_create_owned(&labels);
        for tables in [TableUse::Hit, TableUse::Miss] {
            t.proofs.get_or_create_owned(&TableProofLabels {
                instance: labels.clone(),
                tables,
            });
        }
        for outcome in [
            BuildOutcome::Built,
            BuildOutcome::Read,
            BuildOutcome::Failed,
        ] {
            t.builds_finished.get_or_create_owned(&TableBuildLabels {
                instance: labels.clone(),
                outcome,
            });
        }
        t.build_seconds.get_or_create_owned(&labels);
    }

    /// Registers the families above and the collectors over the atomics of the queues and
    /// connections. The help texts have no final period: the registry adds it.
    fn register(mut self) -> Self {
        let r = &mut self.registry;
        r.register(
            "enygma_build",
            "1, labelled with the version and the git commit the server was built from",
            Info::new(BuildLabels {
                version: enygma_build_info::VERSION,
                commit: enygma_build_info::COMMIT,
            }),
        );
        r.register(
            "enygma_http_requests",
            "Finished HTTP requests by route, k and status (499: the client went away first)",
            self.requests.clone(),
        );
        r.register(
            "enygma_proofs_in_flight",
            "Proofs running on the prove pools now",
            self.proofs_in_flight.clone(),
        );
        r.register(
            "enygma_proofs_in_flight_peak",
            "Most proofs ever running at once since start",
            self.proofs_in_flight_peak.clone(),
        );
        r.register(
            "enygma_proofs_started",
            "Proofs started on the prove pools",
            self.proofs_started.clone(),
        );
        r.register(
            "enygma_proofs_discarded",
            "Proofs that finished after their client had disconnected",
            self.proofs_discarded.clone(),
        );
        r.register(
            "enygma_proof_panics",
            "Proofs whose prover panicked (answered 500)",
            self.proof_panics.clone(),
        );
        r.register_collector(Box::new(self.queue.clone()));
        r.register(
            "enygma_queue_wait_seconds",
            "Time from admission to a free slot",
            self.queue_wait.clone(),
        );
        r.register(
            "enygma_witness_seconds",
            "Witness synthesis time by statement and k (\"none\" for a statement without sizes)",
            self.witness_seconds.clone(),
        );
        r.register(
            "enygma_prove_seconds",
            "Groth16 prove time (after the witness) by statement and k (\"none\" for a statement without sizes)",
            self.prove_seconds.clone(),
        );
        let t = &self.tables;
        r.register(
            "enygma_table_memory_budget_bytes",
            "Memory the precomputed MSM tables may take (--table-memory, pinned ones included; 0: no automatic tables)",
            t.budget.clone(),
        );
        r.register(
            "enygma_table_bytes",
            "Bytes of precomputed MSM tables resident per instance (built at start or for traffic)",
            t.bytes.clone(),
        );
        r.register(
            "enygma_table_evictions",
            "Precomputed MSM tables evicted (least recently proved) to make room for another instance's",
            t.evictions.clone(),
        );
        r.register(
            "enygma_table_builds_started",
            "Background builds of precomputed MSM tables started",
            t.builds_started.clone(),
        );
        r.register(
            "enygma_table_proofs",
            "Proofs by instance, with precomputed MSM tables (tables=\"hit\") or without (\"miss\")",
            t.proofs.clone(),
        );
        r.register(
            "enygma_table_builds_finished",
            "Background builds of precomputed MSM tables finished, by outcome (built, read from the cache, failed: the instance proves without)",
            t.builds_finished.clone(),
        );
        r.register(
            "enygma_table_build_seconds",
            "Time of each background build of precomputed MSM tables (one thread at low priority)",
            t.build_seconds.clone(),
        );
        r.register(
            "enygma_check_refused",
            "Proving requests refused with 503 before their checks: the check pool and its queue were full",
            self.checks_refused.clone(),
        );
        r.register_collector(Box::new(self.connections.clone()));
        r.register(
            "enygma_key_reloads",
            "Changed proving key files met by a reload (SIGHUP), by result (replaced, refused: the loaded key stays)",
            self.key_reloads.clone(),
        );
        r.register(
            "enygma_auth_rejected",
            "Requests answered 401 by scope (api, metrics) and reason (missing, invalid token)",
            self.auth_rejected.clone(),
        );
        r.register(
            "enygma_auth_failures_limited",
            "Failed authentications answered 429 instead of 401: their client address had spent its allowance (--auth-failure-burst)",
            self.auth_failures_limited.clone(),
        );
        self.idempotency.register(r);
        self
    }

    /// The label set of `instance`'s series, if this server hosts it (others are not counted).
    fn hosted(&self, instance: Instance) -> Option<InstanceLabels> {
        self.hosted
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&instance)
            .then(|| InstanceLabels::from(instance))
    }

    /// The memory budget of the automatic tables.
    pub fn table_budget(&self, bytes: u64) {
        self.tables.budget.set(bytes);
    }

    /// A proof of `instance` ended, with its tables (`hit`) or without.
    pub fn table_proof(&self, instance: Instance, hit: bool) {
        if let Some(instance) = self.hosted(instance) {
            let tables = if hit { TableUse::Hit } else { TableUse::Miss };
            self.tables
                .proofs
                .get_or_create(&TableProofLabels { instance, tables })
                .inc();
        }
    }

    pub fn table_build_started(&self, instance: Instance) {
        if let Some(labels) = self.hosted(instance) {
            self.tables.builds_started.get_or_create(&labels).inc();
        }
    }

    /// A build of `instance`'s tables ended after `took`: built, read from the cache, or failed.
    pub fn table_build_finished(&self, instance: Instance, took: Duration, outcome: BuildOutcome) {
        if let Some(labels) = self.hosted(instance) {
            let t = &self.tables;
            t.build_seconds
                .get_or_create(&labels)
                .observe(took.as_secs_f64());
            t.builds_finished
                .get_or_create(&TableBuildLabels {
                    instance: labels,
                    outcome,
                })
                .inc();
        }
    }

    /// The tables of `instance` now hold `bytes`.
    pub fn table_bytes(&self, instance: Instance, bytes: u64) {
        if let Some(labels) = self.hosted(instance) {
            self.tables.bytes.get_or_create(&labels).set(bytes);
        }
    }

    /// The tables of `instance` were evicted.
    pub fn table_evicted(&self, instance: Instance) {
        if let Some(labels) = self.hosted(instance) {
            self.tables.evictions.get_or_create(&labels).inc();
            self.tables.bytes.get_or_create(&labels).set(0);
        }
    }

    /// Counts what a reload did with one circuit's keys (or a list file it refused).
    pub fn key_reloaded(&self, result: KeyReloadResult) {
        self.key_reloads
            .get_or_create(&KeyReloadLabels { result })
            .inc();
    }

    /// Counts a request refused with 401.
    pub fn auth_rejected(&self, scope: AuthScope, why: AuthFailure) {
        self.auth_rejected
            .get_or_create(&AuthLabels { scope, reason: why })
            .inc();
    }

    /// Counts a finished request. `route` and `k` must come from closed sets (a route
    /// template, a k of the route's statement).
    pub fn request(&self, route: &'static str, k: Option<usize>, status: u16) {
        self.requests
            .get_or_create(&RequestLabels {
                route,
                k: K(k),
                status,
            })
            .inc();
    }

    pub fn queue(&self, kind: QueueKind) -> &QueueCounters {
        &self.queue.0[kind as usize]
    }

    pub fn observe_queue_wait(&self, kind: QueueKind, d: Duration) {
        self.queue_wait
            .get_or_create(&QueueLabels { queue: kind })
            .observe(d.as_secs_f64());
    }

    /// A failed authentication answered 429 ([`crate::bad_requests`]).
    pub fn auth_failure_limited(&self) {
        self.auth_failures_limited.inc();
    }

    /// A proving request refused before its checks: their pool and queue were full.
    pub fn check_refused(&self) {
        self.checks_refused.inc();
    }

    /// Records a proof of a hosted instance (others are not counted).
    pub fn observe_proof(&self, instance: Instance, witness: Duration, prove: Duration) {
        if let Some(labels) = self.hosted(instance) {
            self.witness_seconds
                .get_or_create(&labels)
                .observe(witness.as_secs_f64());
            self.prove_seconds
                .get_or_create(&labels)
                .observe(prove.as_secs_f64());
        }
    }

    /// A proof starts running on a prove pool.
    pub fn proof_started(&self) {
        self.proofs_started.inc();
        // Sequentially consistent, unlike the gauge's own methods: the peak must never miss
        // a moment when more proofs ran at once.
        let now = self.proofs_in_flight.inner().fetch_add(1, Ordering::SeqCst) + 1;
        self.proofs_in_flight_peak
            .inner()
            .fetch_max(now, Ordering::SeqCst);
    }

    /// A proof stopped running (finished, failed or panicked).
    pub fn proof_finished(&self) {
        self.proofs_in_flight.inner().fetch_sub(1, Ordering::SeqCst);
    }

    pub fn proof_panicked(&self) {
        self.proof_panics.inc();
    }

    /// A proof finished after its client had gone.
    pub fn proof_discarded(&self) {
        self.proofs_discarded.inc();
    }

    pub fn proofs_started(&self) -> u64 {
        self.proofs_started.get()
    }

    pub fn proofs_in_flight(&self) -> u64 {
        self.proofs_in_flight.inner().load(Ordering::SeqCst)
    }

    /// Renders every series in the Prometheus text format, with the gauges the handler sampled
    /// for this scrape. The names and labels are an interface: deploy/'s alert rules and
    /// dashboards use them.
    pub fn render(
        &self,
        ready: bool,
        draining: bool,
        prove: QueueGauges,
        verify: QueueGauges,
        check_pending: usize,
    ) -> String {
        let mut out = String::with_capacity(32 * 1024);
        encode(&mut out, &self.registry);
        let mut sampled = Registry::default();
        sampled.register_collector(Box::new(ServiceState {
            ready,
            draining,
            queues: [(QueueKind::Prove, prove), (QueueKind::Verify, verify)],
            check_pending,
        }));
        encode(&mut out, &sampled);
        out
    }
}

/// Appends `registry`'s series to `out`. The 0.0.4 format has no `# EOF`, so the pieces of one
/// scrape (this type's series, the fair shares', the keys') can follow one another.
fn encode(out: &mut String, registry: &Registry) {
    // Writing to a String cannot fail, and the encoder refuses nothing but native-only
    // histograms, which this service has none of.
    prometheus_text::encode(out, registry).expect("encoding metrics into a String");
}

/// Appends the per-caller series of fair shares, one label value per configured caller.
pub fn render_caller_shares(out: &mut String, shares: Vec<CallerShare>) {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(CallerShares(shares)));
    encode(out, &registry);
}

/// Appends `enygma_key_info`: one series per loaded key, saying where its toxic waste went (the
/// alert on production deployments that run other than ceremony keys reads it).
pub fn render_key_info(out: &mut String, keys: &[crate::backend::LoadedKey]) {
    let keys = keys
        .iter()
        .map(|key| KeyLabels {
            instance: InstanceLabels::from(key.instance),
            origin: key.record.origin.kind(),
            reduction: key.record.reduction.name(),
            sha256: hex::encode(key.sha256),
        })
        .collect();
    let mut registry = Registry::default();
    registry.register_collector(Box::new(KeyInfo(keys)));
    encode(out, &registry);
}

#[cfg(test)]
mod tests;
