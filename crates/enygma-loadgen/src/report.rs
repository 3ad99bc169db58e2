//! The report model (what `report.json` holds) and how one phase's records become a level,
//! a soak or an open-loop entry.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::load::{PhaseRun, Record};
use crate::machine::Machine;
use crate::rss::{peak_mean_mb, RssSample};
use crate::stats::{max_abs_dev, mean, r3, slope, Summary};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    pub tool: String,
    pub generated_at: String,
    /// Free text naming what was measured (`--label`, or the A/B variant).
    pub label: Option<String>,
    pub machine: Machine,
    pub settings: Settings,
    pub server: ServerInfo,
    /// Closed-loop levels, in the order run.
    pub levels: Vec<LevelReport>,
    pub soak: Option<SoakReport>,
    pub open_loop: Vec<OpenReport>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub url: String,
    pub endpoint: String,
    pub requests: String,
    pub request_pool_size: usize,
    pub request_pool_distinct: usize,
    pub levels: Vec<usize>,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub soak_concurrency: Option<usize>,
    pub soak_duration_s: f64,
    pub window_s: f64,
    pub open_rates_rps: Vec<f64>,
    pub timeout_s: f64,
    pub seed: u64,
    pub rss_interval_ms: u64,
    pub server_pid: Option<u32>,
    pub spawn_server: Option<String>,
    pub max_outstanding: usize,
    /// Closed-loop workers waited a shed answer's `Retry-After` (absent in older reports).
    #[serde(default)]
    pub honor_retry_after: bool,
    pub metrics_path: Option<String>,
    pub served_metric: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ServerInfo {
    pub pid: Option<u32>,
    pub command: Option<String>,
    pub ready_after_s: Option<f64>,
    /// VmHWM (the kernel's own RSS high-water mark) at the end of the run.
    pub vm_hwm_mb: Option<f64>,
    pub log: Option<String>,
}

/// Request counts of one part of a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub sent: u64,
    pub completed: u64,
    pub errors: BTreeMap<String, u64>,
}

impl Counts {
    pub fn of<'a>(records: impl IntoIterator<Item = &'a Record>) -> Counts {
        let mut c = Counts::default();
        for r in records {
            c.sent += 1;
            if r.status.is_ok() {
                c.completed += 1;
            } else {
                *c.errors.entry(r.status.key()).or_default() += 1;
            }
        }
        c
    }
}

/// Server-side timings and the gap to what the client saw, over successful requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Internal {
    pub internal_prove_ms: Option<Summary>,
    pub queue_wait_ms: Option<Summary>,
    pub witness_ms: Option<Summary>,
    pub server_total_ms: Option<Summary>,
    /// External latency minus the server's own total (HTTP, parsing, scheduling outside it).
    pub gap_ms: Option<Summary>,
    /// Requests whose server-reported prove (or total) time exceeded the external latency:
    /// impossible if both clocks are right, so anything but 0 is a bug somewhere.
    pub timing_violations: u64,
}

impl Internal {
    pub fn of(ok: &[&Record]) -> Internal {
        let col = |f: &dyn Fn(&Record) -> Option<f64>| -> Vec<f64> {
            ok.iter().filter_map(|r| f(r)).collect()
        };
        let gap = col(&|r| r.timing.internal_ms().map(|t| r.service_ms() - t));
        // 1 µs tolerance for the header's rounding.
        let violations = ok
            .iter()
            .filter(|r| {
                let ext = r.service_ms() + 1e-3;
                r.timing.prove_ms.is_some_and(|p| p > ext)
                    || r.timing.internal_ms().is_some_and(|t| t > ext)
            })
            .count() as u64;
        Internal {
            internal_prove_ms: Summary::of(&col(&|r| r.timing.prove_ms)),
            queue_wait_ms: Summary::of(&col(&|r| r.timing.queue_ms)),
            witness_ms: Summary::of(&col(&|r| r.timing.witness_ms)),
            server_total_ms: Summary::of(&col(&|r| r.timing.total_ms)),
            gap_ms: Summary::of(&gap),
            timing_violations: violations,
        }
    }
}

/// The server's own count of requests it answered 200, over the whole phase (warm-up
/// included), next to the load generator's count of the same.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ServedCheck {
    pub server_served: f64,
    pub client_completed: u64,
    pub matches: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LevelReport {
    pub concurrency: usize,
    pub warmup_s: f64,
    pub duration_s: f64,
    /// Time from the end of sending until the last response arrived.
    pub drain_s: f64,
    pub sent: u64,
    /// Requests sent in the measured part and answered 200.
    pub completed: u64,
    /// Measured-part failures by HTTP status (`"503"`) or `timeout`/`connect`/`io`.
    pub errors: BTreeMap<String, u64>,
    /// `completed / duration_s`.
    pub throughput_rps: f64,
    /// External latency of the successful measured requests.
    pub latency_ms: Option<Summary>,
    /// External latency of every measured request, errors included.
    pub latency_all_ms: Option<Summary>,
    #[serde(flatten)]
    pub internal: Internal,
    /// Peak over the whole phase (warm-up and drain included), mean over the measured part.
    pub rss_peak_mb: Option<f64>,
    pub rss_mean_mb: Option<f64>,
    pub rss_samples: usize,
    pub warmup: Counts,
    pub served_check: Option<ServedCheck>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SoakWindow {
    pub index: usize,
    pub start_s: f64,
    pub end_s: f64,
    pub completed: u64,
    pub errors: BTreeMap<String, u64>,
    pub throughput_rps: f64,
    /// (window throughput − soak mean throughput) / soak mean, in %.
    pub throughput_dev_pct: Option<f64>,
    pub latency_ms: Option<Summary>,
    pub rss_peak_mb: Option<f64>,
    pub rss_mean_mb: Option<f64>,
    /// Largest |RSS sample − the soak's mean RSS| in this window.
    pub rss_max_dev_mb: Option<f64>,
    /// Largest |latency − the soak's mean latency| in this window.
    pub latency_max_dev_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SoakReport {
    #[serde(flatten)]
    pub overall: LevelReport,
    pub window_s: f64,
    pub windows: Vec<SoakWindow>,
    pub throughput_mean_rps: f64,
    pub throughput_max_dev_pct: Option<f64>,
    pub rss_max_dev_mb: Option<f64>,
    /// Least-squares slope of every RSS sample of the soak, in MB per hour: the growth trend.
    #[serde(default)]
    pub rss_trend_mb_per_hour: Option<f64>,
    pub latency_max_dev_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpenReport {
    pub rate_rps: f64,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub drain_s: f64,
    /// Arrivals scheduled in the measured part.
    pub scheduled: u64,
    pub completed: u64,
    pub errors: BTreeMap<String, u64>,
    pub offered_rps: f64,
    pub throughput_rps: f64,
    /// From each request's *scheduled* send time (no coordinated omission).
    pub latency_ms: Option<Summary>,
    pub latency_all_ms: Option<Summary>,
    /// How late the client actually sent, against the schedule.
    pub send_lag_ms: Option<Summary>,
    #[serde(flatten)]
    pub internal: Internal,
    pub rss_peak_mb: Option<f64>,
    pub rss_mean_mb: Option<f64>,
    pub rss_samples: usize,
    pub max_outstanding: usize,
    pub warmup: Counts,
    pub served_check: Option<ServedCheck>,
}

fn secs(d: Duration) -> f64 {
    r3(d.as_secs_f64())
}

fn rss_in(
    samples: &[RssSample],
    epoch: std::time::Instant,
    from: Duration,
    to: Duration,
) -> Vec<RssSample> {
    samples
        .iter()
        .filter(|s| s.at >= epoch + from && s.at <= epoch + to)
        .copied()
        .collect()
}

/// Everything derived from one phase, shared by level, soak and open-loop entries.
pub struct PhaseView<'a> {
    pub run: &'a PhaseRun,
    pub measured: Vec<&'a Record>,
    pub ok: Vec<&'a Record>,
    pub counts: Counts,
    pub warmup: Counts,
    pub rss_peak_mb: Option<f64>,
    pub rss_mean_mb: Option<f64>,
    pub rss_samples: usize,
}

impl<'a> PhaseView<'a> {
    pub fn new(run: &'a PhaseRun, rss: &[RssSample], epoch: std::time::Instant) -> Self {
        let measured: Vec<&Record> = run.records.iter().filter(|r| !r.warmup).collect();
        let ok: Vec<&Record> = measured
            .iter()
            .copied()
            .filter(|r| r.status.is_ok())
            .collect();
        let counts = Counts::of(measured.iter().copied());
        let warmup = Counts::of(run.records.iter().filter(|r| r.warmup));
        let whole = rss_in(rss, epoch, run.start, run.drained);
        let part = rss_in(rss, epoch, run.measure_from, run.end);
        let (peak, _) = peak_mean_mb(&whole);
        let (_, mean) = peak_mean_mb(if part.is_empty() { &whole } else { &part });
        PhaseView {
            run,
            measured,
            ok,
            counts,
            warmup,
            rss_peak_mb: peak.map(r3),
            rss_mean_mb: mean.map(r3),
            rss_samples: whole.len(),
        }
    }

    pub fn duration(&self) -> Duration {
        self.run.end - self.run.measure_from
    }

    pub fn throughput(&self) -> f64 {
        let d = self.duration().as_secs_f64();
        if d > 0.0 {
            r3(self.counts.completed as f64 / d)
        } else {
            0.0
        }
    }

    pub fn latency(&self) -> Option<Summary> {
        Summary::of(&self.ok.iter().map(|r| r.latency_ms()).collect::<Vec<_>>())
    }

    pub fn latency_all(&self) -> Option<Summary> {
        Summary::of(
            &self
                .measured
                .iter()
                .filter(|r| r.status != crate::client::Status::Dropped)
                .map(|r| r.latency_ms())
                .collect::<Vec<_>>(),
        )
    }

    pub fn client_ok_total(&self) -> u64 {
        self.counts.completed + self.warmup.completed
    }

    pub fn served_check(&self, server_served: Option<f64>) -> Option<ServedCheck> {
        server_served.map(|s| ServedCheck {
            server_served: s,
            client_completed: self.client_ok_total(),
            matches: (s - self.client_ok_total() as f64).abs() < 0.5,
        })
    }

    pub fn level(&self, concurrency: usize, server_served: Option<f64>) -> LevelReport {
        LevelReport {
            concurrency,
            warmup_s: secs(self.run.measure_from - self.run.start),
            duration_s: secs(self.duration()),
            drain_s: secs(self.run.drained.saturating_sub(self.run.end)),
            sent: self.counts.sent,
            completed: self.counts.completed,
            errors: self.counts.errors.clone(),
            throughput_rps: self.throughput(),
            latency_ms: self.latency(),
            latency_all_ms: self.latency_all(),
            internal: Internal::of(&self.ok),
            rss_peak_mb: self.rss_peak_mb,
            rss_mean_mb: self.rss_mean_mb,
            rss_samples: self.rss_samples,
            warmup: self.warmup.clone(),
            served_check: self.served_check(server_served),
        }
    }

    pub fn open(&self, rate_rps: f64, server_served: Option<f64>) -> OpenReport {
        let d = self.duration().as_secs_f64().max(1e-9);
        OpenReport {
            rate_rps,
            warmup_s: secs(self.run.measure_from - self.run.start),
            duration_s: secs(self.duration()),
            drain_s: secs(self.run.drained.saturating_sub(self.run.end)),
            scheduled: self.counts.sent,
            completed: self.counts.completed,
            errors: self.counts.errors.clone(),
            offered_rps: r3(self.counts.sent as f64 / d),
            throughput_rps: self.throughput(),
            latency_ms: self.latency(),
            latency_all_ms: self.latency_all(),
            send_lag_ms: Summary::of(
                &self
                    .measured
                    .iter()
                    .map(|r| r.send_lag_ms())
                    .collect::<Vec<_>>(),
            ),
            internal: Internal::of(&self.ok),
            rss_peak_mb: self.rss_peak_mb,
            rss_mean_mb: self.rss_mean_mb,
            rss_samples: self.rss_samples,
            max_outstanding: self.run.max_outstanding_seen,
            warmup: self.warmup.clone(),
            served_check: self.served_check(server_served),
        }
    }

    /// The soak: the whole measured part as a level, plus windows of `window`.
    pub fn soak(
        &self,
        concurrency: usize,
        window: Duration,
        rss: &[RssSample],
        epoch: std::time::Instant,
        server_served: Option<f64>,
    ) -> SoakReport {
        let overall = self.level(concurrency, server_served);
        let window = window.max(Duration::from_millis(1));
        let (from, to) = (self.run.measure_from, self.run.end);
        let soak_rss = rss_in(rss, epoch, from, to);
        let rss_mean = mean(&soak_rss.iter().map(|s| s.mb()).collect::<Vec<_>>());
        let rss_trend = slope(
            &soak_rss
                .iter()
                .map(|s| ((s.at - soak_rss[0].at).as_secs_f64() / 3600.0, s.mb()))
                .collect::<Vec<_>>(),
        );
        let lat_mean = overall.latency_ms.map(|s| s.mean);
        let mut windows = Vec::new();
        let mut start = from;
        while start < to {
            let end = (start + window).min(to);
            let recs: Vec<&Record> = self
                .measured
                .iter()
                .copied()
                .filter(|r| r.scheduled >= start && r.scheduled < end)
                .collect();
            let counts = Counts::of(recs.iter().copied());
            let lats: Vec<f64> = recs
                .iter()
                .filter(|r| r.status.is_ok())
                .map(|r| r.latency_ms())
                .collect();
            let wrss = rss_in(rss, epoch, start, end);
            let (peak, wmean) = peak_mean_mb(&wrss);
            let mb: Vec<f64> = wrss.iter().map(|s| s.mb()).collect();
            let len = (end - start).as_secs_f64();
            windows.push(SoakWindow {
                index: windows.len(),
                start_s: secs(start - from),
                end_s: secs(end - from),
                completed: counts.completed,
                errors: counts.errors,
                throughput_rps: r3(counts.completed as f64 / len),
                throughput_dev_pct: None,
                latency_ms: Summary::of(&lats),
                rss_peak_mb: peak.map(r3),
                rss_mean_mb: wmean.map(r3),
                rss_max_dev_mb: rss_mean.and_then(|m| max_abs_dev(&mb, m)).map(r3),
                latency_max_dev_ms: lat_mean.and_then(|m| max_abs_dev(&lats, m)).map(r3),
            });
            start = end;
        }
        // Throughput mean over full-length windows (a short last window is noisy).
        let full: Vec<f64> = windows
            .iter()
            .filter(|w| (w.end_s - w.start_s) >= window.as_secs_f64() - 1e-3)
            .map(|w| w.throughput_rps)
            .collect();
        let tput_mean = mean(&full).unwrap_or(overall.throughput_rps);
        for w in &mut windows {
            if tput_mean > 0.0 {
                w.throughput_dev_pct = Some(r3((w.throughput_rps - tput_mean) / tput_mean * 100.0));
            }
        }
        let max_of = |f: &dyn Fn(&SoakWindow) -> Option<f64>| {
            windows
                .iter()
                .filter_map(f)
                .fold(None, |m: Option<f64>, x| {
                    Some(m.map_or(x.abs(), |m| m.max(x.abs())))
                })
        };
        SoakReport {
            throughput_mean_rps: r3(tput_mean),
            throughput_max_dev_pct: max_of(&|w| w.throughput_dev_pct),
            rss_max_dev_mb: max_of(&|w| w.rss_max_dev_mb),
            rss_trend_mb_per_hour: rss_trend.map(r3),
            latency_max_dev_ms: max_of(&|w| w.latency_max_dev_ms),
            window_s: secs(window),
            windows,
            overall,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::client::Status;
    use enygma_formats::server_timing::ServerTiming;
    use std::time::Instant;

    fn rec(warmup: bool, sched_ms: u64, done_ms: u64, status: u16, prove: Option<f64>) -> Record {
        Record {
            phase: 0,
            warmup,
            worker: 0,
            target: 0,
            scheduled: Duration::from_millis(sched_ms),
            sent: Duration::from_millis(sched_ms),
            done: Duration::from_millis(done_ms),
            status: Status::Http(status),
            timing: ServerTiming {
                queue_ms: Some(1.0),
                witness_ms: None,
                prove_ms: prove,
                total_ms: prove.map(|p| p + 1.0),
            },
        }
    }

    pub(crate) fn sample_run() -> PhaseRun {
        PhaseRun {
            start: Duration::ZERO,
            measure_from: Duration::from_secs(1),
            end: Duration::from_secs(3),
            drained: Duration::from_millis(3500),
            records: vec![
                rec(true, 0, 600, 200, Some(500.0)),
                rec(false, 1000, 1600, 200, Some(500.0)),
                rec(false, 1600, 2400, 200, Some(700.0)),
                rec(false, 2400, 2410, 503, None),
                rec(false, 2410, 3500, 200, Some(1000.0)),
            ],
            max_outstanding_seen: 1,
            aborted: false,
        }
    }

    /// RSS every 100 ms over [`sample_run`]'s 3.5 s, growing by 1 MB a sample from 100 MB.
    pub(crate) fn sample_rss(epoch: Instant) -> Vec<RssSample> {
        (0..=35)
            .map(|i| RssSample {
                at: epoch + Duration::from_millis(100 * i),
                kb: 1024 * (100 + i),
            })
            .collect()
    }

    #[test]
    fn level_from_records() {
        let run = sample_run();
        let epoch = Instant::now();
        let rss = sample_rss(epoch);
        let v = PhaseView::new(&run, &rss, epoch);
        let l = v.level(1, Some(4.0));
        assert_eq!((l.sent, l.completed), (4, 3));
        assert_eq!(l.errors.get("503"), Some(&1));
        assert_eq!(
            l.warmup,
            Counts {
                sent: 1,
                completed: 1,
                errors: BTreeMap::new()
            }
        );
        assert_eq!(l.throughput_rps, 1.5);
        let lat = l.latency_ms.unwrap();
        assert_eq!((lat.p50, lat.max), (800.0, 1090.0));
        assert_eq!(l.internal.internal_prove_ms.unwrap().p99, 1000.0);
        assert_eq!(l.internal.timing_violations, 0);
        assert_eq!(l.internal.gap_ms.unwrap().min, 89.0);
        assert_eq!(l.rss_peak_mb, Some(135.0));
        assert_eq!(l.rss_mean_mb, Some(120.0));
        assert_eq!(l.drain_s, 0.5);
        let c = l.served_check.unwrap();
        assert!(c.matches && c.client_completed == 4);
        assert!(!v.served_check(Some(5.0)).unwrap().matches);
    }

    #[test]
    fn violations_are_counted() {
        let mut run = sample_run();
        run.records[1].timing.prove_ms = Some(650.0); // external 600 ms
        let v = PhaseView::new(&run, &[], Instant::now());
        assert_eq!(v.level(1, None).internal.timing_violations, 1);
    }

    #[test]
    fn soak_windows() {
        let run = sample_run();
        let v = PhaseView::new(&run, &[], Instant::now());
        let s = v.soak(1, Duration::from_secs(1), &[], Instant::now(), None);
        assert_eq!(s.windows.len(), 2);
        assert_eq!(s.windows[0].completed, 2);
        assert_eq!(s.windows[1].completed, 1);
        assert_eq!(s.windows[1].errors.get("503"), Some(&1));
        assert_eq!(s.throughput_mean_rps, 1.5);
        assert_eq!(s.windows[0].throughput_dev_pct, Some(33.333));
        assert_eq!(s.windows[1].throughput_dev_pct, Some(-33.333));
        assert_eq!(s.throughput_max_dev_pct, Some(33.333));
        assert!(s.rss_max_dev_mb.is_none());
    }
}
