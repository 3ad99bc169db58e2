//! The report of a `callers` run: each caller's requests (a phase of its own, run alongside
//! the others) become its throughput, latency and 503s through the same [`PhaseView`] as a
//! level of `run`; all callers' requests together make the total.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::caller_spec::schedule_text;
use crate::load::PhaseRun;
use crate::machine::Machine;
use crate::output::{errors_cell, f1, f2, push_notes};
use crate::report::{Counts, Internal, PhaseView};
use crate::schedule::Load;
use crate::stats::{r3, Summary};

/// What one caller (or all of them together) got in the measured part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallerStats {
    pub duration_s: f64,
    /// Requests sent in the measured part.
    pub sent: u64,
    /// Of those, answered 200.
    pub completed: u64,
    /// Failures by HTTP status (`"503"`) or `timeout`/`connect`/`io`/`client_dropped`.
    pub errors: BTreeMap<String, u64>,
    /// Answers 503: shed by the server (this caller's share full, or its expected wait too long).
    pub shed_503: u64,
    /// `completed / duration_s`.
    pub throughput_rps: f64,
    /// External latency of the requests answered 200 (from the scheduled send time).
    pub latency_ms: Option<Summary>,
    /// External latency of every measured request, failures included.
    pub latency_all_ms: Option<Summary>,
    #[serde(flatten)]
    pub internal: Internal,
    pub warmup: Counts,
}

impl CallerStats {
    pub fn of(view: &PhaseView) -> CallerStats {
        CallerStats {
            duration_s: r3(view.duration().as_secs_f64()),
            sent: view.counts.sent,
            completed: view.counts.completed,
            errors: view.counts.errors.clone(),
            shed_503: view.counts.errors.get("503").copied().unwrap_or(0),
            throughput_rps: view.throughput(),
            latency_ms: view.latency(),
            latency_all_ms: view.latency_all(),
            internal: Internal::of(&view.ok),
            warmup: view.warmup.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallerReport {
    pub name: String,
    /// `closed=16`, `open=2/s`.
    pub schedule: String,
    #[serde(flatten)]
    pub load: Load,
    #[serde(flatten)]
    pub stats: CallerStats,
}

/// One caller's run: its name, its load and its requests.
pub struct CallerRun {
    pub name: String,
    pub load: Load,
    pub run: PhaseRun,
}

/// Each caller's figures, in the order given, and the total over every caller's requests.
pub fn aggregate(runs: &[CallerRun]) -> (Vec<CallerReport>, CallerStats) {
    // No RSS in a callers run: the views need no clock of their own.
    let epoch = Instant::now();
    let callers = runs
        .iter()
        .map(|c| CallerReport {
            name: c.name.clone(),
            schedule: schedule_text(&c.load),
            load: c.load,
            stats: CallerStats::of(&PhaseView::new(&c.run, &[], epoch)),
        })
        .collect();
    let all = PhaseRun {
        start: runs.iter().map(|c| c.run.start).min().unwrap_or_default(),
        measure_from: runs
            .iter()
            .map(|c| c.run.measure_from)
            .min()
            .unwrap_or_default(),
        end: runs.iter().map(|c| c.run.end).max().unwrap_or_default(),
        drained: runs.iter().map(|c| c.run.drained).max().unwrap_or_default(),
        records: runs.iter().flat_map(|c| c.run.records.clone()).collect(),
        max_outstanding_seen: runs.iter().map(|c| c.run.max_outstanding_seen).sum(),
        aborted: runs.iter().any(|c| c.run.aborted),
    };
    let total = CallerStats::of(&PhaseView::new(&all, &[], epoch));
    (callers, total)
}

/// The settings of a callers run: no token appears here.
#[derive(Debug, Clone, Serialize)]
pub struct CallersSettings {
    pub url: String,
    pub endpoint: String,
    pub requests: String,
    pub request_pool_size: usize,
    pub request_pool_distinct: usize,
    /// `NAME SCHEDULE` of each caller.
    pub callers: Vec<String>,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub timeout_s: f64,
    pub seed: u64,
    pub max_outstanding: usize,
    pub honor_retry_after: bool,
    pub prime: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct CallersReport {
    pub schema_version: u32,
    pub tool: String,
    pub generated_at: String,
    pub label: Option<String>,
    pub machine: Machine,
    pub settings: CallersSettings,
    pub ready_after_s: Option<f64>,
    pub callers: Vec<CallerReport>,
    pub total: CallerStats,
    pub notes: Vec<String>,
}

/// The errors other than 503 (which has its own column).
fn other_errors(errors: &BTreeMap<String, u64>) -> String {
    let mut rest = errors.clone();
    rest.remove("503");
    errors_cell(&rest)
}

fn row(name: &str, schedule: &str, s: &CallerStats) -> String {
    format!(
        "| {name} | {schedule} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        s.completed,
        s.shed_503,
        other_errors(&s.errors),
        f2(s.throughput_rps),
        f1(s.latency_ms.map(|x| x.p50)),
        f1(s.latency_ms.map(|x| x.p99)),
        f1(s.internal.queue_wait_ms.map(|x| x.p50)),
        f1(s.internal.internal_prove_ms.map(|x| x.p50)),
    )
}

pub fn render_markdown(r: &CallersReport) -> String {
    let s = &r.settings;
    let mut md = format!("# Callers: {}{}\n\n", s.url, s.endpoint);
    if let Some(l) = &r.label {
        let _ = writeln!(md, "{l}\n");
    }
    let _ = writeln!(
        md,
        "{} caller(s) at once for {} s after a {} s warm-up; request pool: {} ({} bodies, {} distinct).\n",
        r.callers.len(),
        s.duration_s,
        s.warmup_s,
        s.requests,
        s.request_pool_size,
        s.request_pool_distinct
    );
    md.push_str(
        "| Caller | Schedule | Completed | 503 | Other errors | Throughput (req/s) | p50 (ms) | p99 (ms) | queue p50 (ms) | prove p50 (ms) |\n\
         |---|---|---:|---:|---|---:|---:|---:|---:|---:|\n",
    );
    for c in &r.callers {
        md.push_str(&row(&c.name, &c.schedule, &c.stats));
    }
    md.push_str(&row("**total**", "", &r.total));
    md.push('\n');
    push_notes(&mut md, &r.notes);
    md
}

pub fn write(report: &CallersReport, dir: &Path) -> Result<()> {
    let json = dir.join("report.json");
    std::fs::write(&json, serde_json::to_string_pretty(report)? + "\n")
        .with_context(|| format!("writing {}", json.display()))?;
    let md = dir.join("report.md");
    std::fs::write(&md, render_markdown(report))
        .with_context(|| format!("writing {}", md.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Status;
    use crate::load::Record;
    use enygma_formats::server_timing::ServerTiming;
    use std::time::Duration;

    /// A request of caller `phase`, sent at `sent_ms` and answered at `done_ms` with `status`.
    fn rec(phase: usize, warmup: bool, sent_ms: u64, done_ms: u64, status: u16) -> Record {
        Record {
            phase,
            warmup,
            worker: 0,
            target: 0,
            scheduled: Duration::from_millis(sent_ms),
            sent: Duration::from_millis(sent_ms),
            done: Duration::from_millis(done_ms),
            status: Status::Http(status),
            timing: ServerTiming {
                queue_ms: (status == 200).then_some(10.0 * phase as f64),
                witness_ms: None,
                prove_ms: (status == 200).then_some(100.0),
                total_ms: (status == 200).then_some(110.0 + 10.0 * phase as f64),
            },
        }
    }

    fn run(records: Vec<Record>) -> PhaseRun {
        PhaseRun {
            start: Duration::ZERO,
            measure_from: Duration::from_secs(1),
            end: Duration::from_secs(5),
            drained: Duration::from_millis(5200),
            records,
            max_outstanding_seen: 2,
            aborted: false,
        }
    }

    /// A floods (two in flight, some shed), B sends one at a time.
    fn two_callers() -> Vec<CallerRun> {
        let a = vec![
            rec(0, true, 0, 900, 200),
            rec(0, false, 1000, 1400, 200),
            rec(0, false, 1000, 1800, 200),
            rec(0, false, 1400, 1410, 503),
            rec(0, false, 1800, 2600, 200),
            rec(0, false, 2600, 2700, 408),
            rec(0, false, 4000, 5200, 200),
        ];
        let b = vec![
            rec(1, false, 1100, 1300, 200),
            rec(1, false, 1300, 1600, 200),
            rec(1, false, 1600, 2000, 200),
            rec(1, false, 2000, 2010, 503),
        ];
        vec![
            CallerRun {
                name: "a".into(),
                load: Load::Closed { concurrency: 2 },
                run: run(a),
            },
            CallerRun {
                name: "b".into(),
                load: Load::Open { rate_rps: 1.0 },
                run: run(b),
            },
        ]
    }

    #[test]
    fn each_caller_and_the_total() {
        let (callers, total) = aggregate(&two_callers());
        let (a, b) = (&callers[0], &callers[1]);
        assert_eq!((a.name.as_str(), a.schedule.as_str()), ("a", "closed=2"));
        assert_eq!(b.schedule, "open=1/s");
        // A: 6 measured (the warm-up one apart), 4 answered 200, one 503, one 408.
        assert_eq!((a.stats.sent, a.stats.completed), (6, 4));
        assert_eq!(a.stats.shed_503, 1);
        assert_eq!(a.stats.errors.get("408"), Some(&1));
        assert_eq!(a.stats.warmup.completed, 1);
        assert_eq!(a.stats.throughput_rps, 1.0); // 4 in 4 s
        let lat = a.stats.latency_ms.unwrap();
        // Latencies 400, 800, 800, 1200: nearest-rank p50 800, p99 1200.
        assert_eq!((lat.p50, lat.p99), (800.0, 1200.0));
        assert_eq!(a.stats.internal.queue_wait_ms.unwrap().p50, 0.0);
        // B: 3 of 4, latencies 200, 300, 400.
        assert_eq!(
            (b.stats.sent, b.stats.completed, b.stats.shed_503),
            (4, 3, 1)
        );
        assert_eq!(b.stats.latency_ms.unwrap().p50, 300.0);
        assert_eq!(b.stats.throughput_rps, 0.75);
        assert_eq!(b.stats.internal.queue_wait_ms.unwrap().p50, 10.0);
        // The total is every caller's requests together, over the same window.
        assert_eq!((total.sent, total.completed, total.shed_503), (10, 7, 2));
        assert_eq!(total.throughput_rps, 1.75);
        assert_eq!(total.errors.get("408"), Some(&1));
        assert_eq!(total.latency_ms.unwrap().count, 7);
        assert_eq!(total.latency_ms.unwrap().p50, 400.0);
        assert_eq!(total.warmup.sent, 1);
    }

    #[test]
    fn json_and_markdown_name_every_caller() {
        let (callers, total) = aggregate(&two_callers());
        let report = CallersReport {
            schema_version: 1,
            tool: "t".into(),
            generated_at: "now".into(),
            label: Some("fair".into()),
            machine: crate::machine::detect(),
            settings: CallersSettings {
                url: "http://127.0.0.1:3003".into(),
                endpoint: "/generateProofTransfer-6".into(),
                requests: "reqs".into(),
                request_pool_size: 2,
                request_pool_distinct: 2,
                callers: vec!["a closed=2".into(), "b open=1/s".into()],
                duration_s: 4.0,
                warmup_s: 1.0,
                timeout_s: 300.0,
                seed: 1,
                max_outstanding: 512,
                honor_retry_after: true,
                prime: 1,
            },
            ready_after_s: Some(0.1),
            callers,
            total,
            notes: vec!["a note".into()],
        };
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["callers"][0]["mode"], "closed");
        assert_eq!(v["callers"][0]["concurrency"], 2);
        assert_eq!(v["callers"][1]["rate_rps"], 1.0);
        assert_eq!(v["callers"][1]["shed_503"], 1);
        assert_eq!(v["callers"][1]["latency_ms"]["p50"], 300.0);
        assert_eq!(v["total"]["completed"], 7);
        let md = render_markdown(&report);
        assert!(
            md.contains("| a | closed=2 | 4 | 1 | 1×408 | 1.00 | 800.0 | 1200.0 | 0.0 | 100.0 |"),
            "{md}"
        );
        assert!(
            md.contains("| b | open=1/s | 3 | 1 | 0 | 0.75 | 300.0 | 400.0 | 10.0 | 100.0 |"),
            "{md}"
        );
        assert!(
            md.contains("| **total** |  | 7 | 2 | 1×408 | 1.75 |"),
            "{md}"
        );
        assert!(md.contains("- a note"));
    }
}
