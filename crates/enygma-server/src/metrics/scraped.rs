//! Series read at scrape time, through prometheus-client's collector API: counters other parts
//! of the service keep in plain atomics (the admission queues', the transport's), and gauges
//! whose values the `/metrics` handler samples (readiness, queue depths, fair shares, keys).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::{MetricType, TypedMetric};

use super::labels::{
    CallerLabels, CloseLabels, CloseReason, KeyLabels, QueueKind, QueueLabels, RefusalLabels,
    RefusalReason, ReloadLabels, ReloadResult, WaitBudget, WaitLabels,
};

/// Per-queue counters.
#[derive(Debug, Default)]
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

/// Connection-level counters (see `crate::transport`), which the transport updates itself.
#[derive(Debug, Default)]
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

/// One family: its HELP and TYPE, then a sample per label set (none: the header alone).
fn family<L, M>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, M)>,
) -> fmt::Result
where
    L: EncodeLabelSet,
    M: EncodeMetric + TypedMetric,
{
    let mut family = encoder.encode_descriptor(name, help, None, M::TYPE)?;
    for (labels, metric) in series {
        metric.encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// One series without labels.
fn single<M: EncodeMetric + TypedMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric: M,
) -> fmt::Result {
    metric.encode(encoder.encode_descriptor(name, help, None, M::TYPE)?)
}

fn counter(value: &AtomicU64) -> ConstCounter<u64> {
    ConstCounter::new(value.load(Ordering::Relaxed))
}

fn gauge(value: impl TryInto<i64>) -> ConstGauge<i64> {
    ConstGauge::new(value.try_into().unwrap_or(i64::MAX))
}

/// The refusals, timeouts and abandons of both admission queues, which the admission code
/// counts in [`QueueCounters`].
#[derive(Debug, Default)]
pub(super) struct AdmissionCounters(pub(super) [QueueCounters; 2]);

impl Collector for AdmissionCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        type Read = fn(&QueueCounters) -> &AtomicU64;
        let counters: [(&str, &str, Read); 3] = [
            (
                "enygma_shed",
                "Requests refused at once with 503 because the queue was full.",
                |c| &c.shed,
            ),
            (
                "enygma_queue_timeouts",
                "Requests answered 504 after waiting the queue timeout.",
                |c| &c.timeouts,
            ),
            (
                "enygma_abandoned",
                "Queued requests whose client disconnected; they were never run.",
                |c| &c.abandoned,
            ),
        ];
        for (name, help, read) in counters {
            let series = QueueKind::ALL.map(|queue| {
                (
                    QueueLabels { queue },
                    counter(read(&self.0[queue as usize])),
                )
            });
            family(&mut encoder, name, help, series)?;
        }
        Ok(())
    }
}

impl Collector for ConnectionCounters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let e = &mut encoder;
        single(
            e,
            "enygma_connections_open",
            "Client connections open now.",
            gauge(self.open.load(Ordering::Relaxed)),
        )?;
        single(
            e,
            "enygma_connections_accepted",
            "Client connections accepted.",
            counter(&self.accepted),
        )?;
        single(
            e,
            "enygma_connections_timed_out",
            "Connections closed for not delivering a complete request head in time (TLS handshake, headers, or idle).",
            counter(&self.timed_out),
        )?;
        single(
            e,
            "enygma_tls_handshake_failures",
            "TLS handshakes that failed (including clients refused by --tls-client-ca).",
            counter(&self.tls_handshake_failures),
        )?;
        single(
            e,
            "enygma_connections_unauthenticated",
            "Open connections on which no request has passed authentication yet.",
            gauge(self.unauthenticated.load(Ordering::Relaxed)),
        )?;
        family(
            e,
            "enygma_connections_refused",
            "Connections closed right after accept, by reason (per_ip: the address held --max-connections-per-ip).",
            [(
                RefusalLabels {
                    reason: RefusalReason::PerIp,
                },
                counter(&self.refused_per_ip),
            )],
        )?;
        family(
            e,
            "enygma_connection_waits",
            "Times a new connection waited in the backlog, by the budget that was full (connections: --max-connections, unauthenticated: --max-unauthenticated-connections).",
            [
                (WaitBudget::Connections, &self.waits_for_slot),
                (WaitBudget::Unauthenticated, &self.waits_for_unauthenticated),
            ]
            .map(|(budget, value)| (WaitLabels { budget }, counter(value))),
        )?;
        single(
            e,
            "enygma_connections_aged_out",
            "Connections closed gracefully for their age (--max-connection-age).",
            counter(&self.aged_out),
        )?;
        family(
            e,
            "enygma_connections_closed",
            "Connections the service closed, by reason (evicted: unauthenticated, for a newcomer; unauthenticated_timeout: --unauthenticated-timeout; malformed_requests: their allowance of 400/408/413 spent; auth_failure: after a 401 or 429; unauthenticated_probe: a probe on a connection that never authenticated while credentials are required; proxy_header: a trusted proxy's connection without a valid PROXY header; revoked: a reloaded --client-crl revokes its client certificate).",
            [
                (CloseReason::Evicted, &self.evicted),
                (
                    CloseReason::UnauthenticatedTimeout,
                    &self.unauthenticated_timed_out,
                ),
                (CloseReason::MalformedRequests, &self.closed_malformed),
                (CloseReason::AuthFailure, &self.closed_auth_failure),
                (
                    CloseReason::UnauthenticatedProbe,
                    &self.closed_unauthenticated_probe,
                ),
                (CloseReason::ProxyHeader, &self.proxy_header_failures),
                (CloseReason::Revoked, &self.closed_revoked),
            ]
            .map(|(reason, value)| (CloseLabels { reason }, counter(value))),
        )?;
        family(
            e,
            "enygma_tls_reloads",
            "Reloads of the TLS certificate, key and client CA (SIGHUP) by result; a failed reload keeps the previous ones.",
            [
                (ReloadResult::Ok, &self.tls_reloads_ok),
                (ReloadResult::Error, &self.tls_reloads_failed),
            ]
            .map(|(result, value)| (ReloadLabels { result }, counter(value))),
        )
    }
}

/// What the `/metrics` handler samples from the service as it answers: readiness, the
/// admission controllers' gauges and the request checks' backlog.
#[derive(Debug)]
pub(super) struct ServiceState {
    pub ready: bool,
    pub draining: bool,
    pub queues: [(QueueKind, QueueGauges); 2],
    pub check_pending: usize,
}

impl Collector for ServiceState {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let e = &mut encoder;
        single(
            e,
            "enygma_ready",
            "1 once the keys of every hosted statement instance are loaded, else 0.",
            gauge(self.ready as u8),
        )?;
        single(
            e,
            "enygma_draining",
            "1 after SIGTERM/SIGINT, while in-flight and queued requests finish.",
            gauge(self.draining as u8),
        )?;
        type Read = fn(&QueueGauges) -> usize;
        let per_queue: [(&str, &str, Read); 3] = [
            (
                "enygma_max_inflight",
                "Configured concurrency limit per queue (0: unlimited).",
                |g| g.max_inflight,
            ),
            (
                "enygma_queue_capacity",
                "Configured queue depth per queue.",
                |g| g.queue_capacity,
            ),
            (
                "enygma_queue_depth",
                "Requests waiting for a slot now.",
                |g| g.queued,
            ),
        ];
        for (name, help, read) in per_queue {
            let series = self
                .queues
                .iter()
                .map(|(queue, g)| (QueueLabels { queue: *queue }, gauge(read(g))));
            family(e, name, help, series)?;
        }
        // Only the queues that shed by expected wait keep an estimate.
        family(
            e,
            "enygma_service_time_estimate_seconds",
            "Running estimate of one job's time on a slot, used to shed requests whose expected wait exceeds the queue timeout.",
            self.queues.iter().filter_map(|(queue, g)| {
                let estimate = g.service_time?;
                Some((
                    QueueLabels { queue: *queue },
                    ConstGauge::new(estimate.as_secs_f64()),
                ))
            }),
        )?;
        single(
            e,
            "enygma_check_pending",
            "Proving requests being checked or waiting for a check thread.",
            gauge(self.check_pending),
        )
    }
}

/// One caller's share of the proving slots under fair sharing, as the round robin sees it now.
#[derive(Clone, Debug)]
pub struct CallerShare {
    pub caller: String,
    pub queued: usize,
    pub in_flight: usize,
    pub admitted: u64,
    pub shed: u64,
    pub weight: u32,
}

#[derive(Debug)]
pub(super) struct CallerShares(pub Vec<CallerShare>);

impl Collector for CallerShares {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let labels = |s: &CallerShare| CallerLabels {
            caller: s.caller.clone(),
        };
        type Gauge = fn(&CallerShare) -> ConstGauge<i64>;
        let gauges: [(&str, &str, Gauge); 2] = [
            (
                "enygma_caller_queued",
                "Proving requests of the caller waiting in its queue.",
                |s| gauge(s.queued),
            ),
            (
                "enygma_caller_proofs_in_flight",
                "Proofs of the caller in flight.",
                |s| gauge(s.in_flight),
            ),
        ];
        for (name, help, value) in gauges {
            let series = self.0.iter().map(|s| (labels(s), value(s)));
            family(&mut encoder, name, help, series)?;
        }
        type Counter = fn(&CallerShare) -> u64;
        let counters: [(&str, &str, Counter); 2] = [
            (
                "enygma_caller_admitted",
                "Proving requests of the caller that got a slot.",
                |s| s.admitted,
            ),
            (
                "enygma_caller_shed",
                "Proving requests of the caller shed with 503 from its own share.",
                |s| s.shed,
            ),
        ];
        for (name, help, value) in counters {
            let series = self
                .0
                .iter()
                .map(|s| (labels(s), ConstCounter::new(value(s))));
            family(&mut encoder, name, help, series)?;
        }
        family(
            &mut encoder,
            "enygma_caller_weight",
            "The caller's weight in the round robin.",
            self.0.iter().map(|s| (labels(s), gauge(s.weight))),
        )
    }
}

/// `enygma_key_info`: one series per loaded key, saying where its toxic waste went (the alert
/// on production deployments that run other than ceremony keys reads it).
#[derive(Debug)]
pub(super) struct KeyInfo(pub Vec<KeyLabels>);

impl Collector for KeyInfo {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        // Registered as `enygma_key`: an info metric's samples take the `_info` suffix.
        let mut family = encoder.encode_descriptor(
            "enygma_key",
            "1 per loaded key: its origin (development-seed: anyone can forge proofs; \
             single-party-random: its setup's operator can; ceremony) and the QAP reduction its \
             H query is for.",
            None,
            MetricType::Info,
        )?;
        for key in &self.0 {
            family.encode_info(key)?;
        }
        Ok(())
    }
}
