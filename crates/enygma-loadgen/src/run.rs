//! The `run` subcommand: start (or attach to) a server, run every phase of the schedule,
//! cross-check the served count against `/metrics`, and write the report files.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::chart;
use crate::cli::{RunArgs, ScheduleArgs};
use crate::client::HttpClient;
use crate::load::{self, Ctx, Live, Record};
use crate::machine;
use crate::metrics::{self, Selector};
use crate::mix::Targets;
use crate::output;
use crate::progress::Progress;
use crate::prove_log::{ProveLog, STAMP_SLACK};
use crate::report::{PhaseView, Report, ServerInfo, Settings, SCHEMA_VERSION};
use crate::rss::{self, RssSampler};
use crate::schedule::{build_phases, nominal_time, Load, PhaseKind};
use crate::spawn::{self, Server};

/// Which server to measure.
#[derive(Debug, Clone)]
pub enum Target {
    /// Already running; sample this pid's RSS if given.
    External { pid: Option<u32> },
    /// Start it with this shell command (and a working directory), stop it afterwards.
    Spawn { cmd: String, dir: Option<PathBuf> },
}

pub struct Job<'a> {
    pub url: &'a str,
    pub schedule: &'a ScheduleArgs,
    pub target: Target,
    pub out: &'a Path,
    pub label: Option<String>,
    pub abort: Arc<AtomicBool>,
}

/// The served counter now, summed over `endpoints` (the routes of a `--mix`): `None` if the
/// metrics route is missing or unreachable, `Some(None)` if it answered without the counter
/// (Prometheus clients often omit a labelled series until its first increment, so that reads
/// as 0 when a later scrape finds it).
pub async fn served_now(
    client: &HttpClient,
    path: Option<&str>,
    endpoints: &[&str],
    sel: Option<&Selector>,
) -> Option<Option<f64>> {
    let (code, body) = client.get(path?, Duration::from_secs(10)).await.ok()?;
    if code != 200 {
        return None;
    }
    let samples = metrics::parse(&String::from_utf8_lossy(&body));
    if sel.is_some() {
        return Some(metrics::served_ok(&samples, endpoints[0], sel));
    }
    Some(
        endpoints
            .iter()
            .filter_map(|e| metrics::served_ok(&samples, e, None))
            .reduce(|a, b| a + b),
    )
}

/// The served delta of one phase from the scrapes before and after it.
pub fn served_delta(before: Option<Option<f64>>, after: Option<Option<f64>>) -> Option<f64> {
    match (before, after) {
        (Some(b), Some(Some(a))) => Some(a - b.unwrap_or(0.0)),
        _ => None,
    }
}

fn settings(url: &str, s: &ScheduleArgs, targets: &Targets, target: &Target) -> Settings {
    Settings {
        url: url.to_string(),
        endpoint: targets.describe(),
        requests: match &s.requests {
            Some(path) => path.display().to_string(),
            None => format!(
                "generated: {} per instance (--mix-pool), seed {}",
                s.mix_pool, s.seed
            ),
        },
        request_pool_size: targets.pool_len(),
        request_pool_distinct: targets.pool_distinct(),
        levels: s.levels.0.clone(),
        duration_s: s.duration.as_secs_f64(),
        warmup_s: s.warmup.as_secs_f64(),
        soak_concurrency: s.soak,
        soak_duration_s: s.soak_duration.as_secs_f64(),
        window_s: s.window.as_secs_f64(),
        open_rates_rps: s.open_rate.clone().map(|l| l.0).unwrap_or_default(),
        timeout_s: s.client.timeout.as_secs_f64(),
        seed: s.seed,
        rss_interval_ms: s.rss_interval.as_millis() as u64,
        server_pid: match target {
            Target::External { pid } => *pid,
            Target::Spawn { .. } => None,
        },
        spawn_server: match target {
            Target::Spawn { cmd, .. } => Some(cmd.clone()),
            Target::External { .. } => None,
        },
        max_outstanding: s.client.max_outstanding,
        honor_retry_after: !s.client.ignore_retry_after,
        metrics_path: s.metrics_path().map(str::to_string),
        served_metric: s.served_metric.clone(),
    }
}

fn standard_notes(s: &ScheduleArgs, targets: &Targets) -> Vec<String> {
    let mut notes = vec![
        "A request belongs to the warm-up or to the measured part by the time it was (scheduled to \
         be) sent; nothing is sent after a phase's end and every request sent is awaited, so the \
         server is idle between phases."
            .to_string(),
        "throughput_rps = requests sent in the measured part and answered 200, divided by the \
         measured duration. Latency percentiles are over those requests (nearest rank, exact); \
         latency_all_ms includes failed ones."
            .to_string(),
        "internal_prove_ms, queue_wait_ms, witness_ms and server_total_ms come from the Server-Timing \
         header; gap_ms = external latency − server total. A server without that header (the \
         reference) has internal_prove_ms from the timing line it prints per proof, matched to \
         requests by time."
            .to_string(),
        "rss_peak_mb is the peak over the whole phase (warm-up and drain included); rss_mean_mb the \
         mean over the measured part. Sampled from VmRSS."
            .to_string(),
    ];
    if s.prime > 0 {
        notes.insert(
            0,
            format!(
                "{} request(s) were sent one at a time once the server was ready and before the \
                 first phase, and are in no phase (--prime): the reference loads its keys on its \
                 first request.",
                s.prime
            ),
        );
    }
    if s.open_rate.as_ref().is_some_and(|r| !r.0.is_empty()) {
        notes.push(
            "Open loop: latency is measured from each request's scheduled (Poisson) send time, not \
             from when it was actually sent, so client-side delays are not hidden (no coordinated \
             omission)."
                .to_string(),
        );
    }
    if s.duration < Duration::from_secs(60) && !s.levels.0.is_empty() {
        notes.push(format!(
            "Shortened run: each level was held for {} s after a {} s warm-up (the article held 60 s \
             and excluded the first 5 s).",
            s.duration.as_secs_f64(),
            s.warmup.as_secs_f64()
        ));
    }
    if targets.pool_distinct() < targets.pool_len() || targets.pool_len() == 1 {
        notes.push(format!(
            "The request pool has only {} distinct bodies out of {}.",
            targets.pool_distinct(),
            targets.pool_len()
        ));
    }
    if targets.is_mix() {
        notes.push(format!(
            "Mix {}: requests follow a smooth weighted round robin over these instances' proving \
             routes, shared by every worker; each phase's per-instance counts follow.",
            targets.describe()
        ));
    }
    notes
}

/// Runs the whole schedule against one server and writes the report files into `job.out`.
pub async fn execute(job: Job<'_>) -> Result<Report> {
    let s = job.schedule;
    std::fs::create_dir_all(job.out).with_context(|| format!("creating {}", job.out.display()))?;
    let client =
        HttpClient::new(job.url, s.client.timeout)?.with_bearer(s.token.resolve()?.as_ref());
    let targets = Arc::new(s.targets(&client)?);
    let selector = s
        .served_metric
        .as_deref()
        .map(Selector::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let prime_until = s
        .prime_until
        .as_deref()
        .map(|text| Selector::parse(text).map(|selector| (text, selector)))
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let phases = build_phases(&s.spec());
    anyhow::ensure!(
        !phases.is_empty(),
        "nothing to run: no --levels, --soak or --open-rate"
    );

    let mut server_info = ServerInfo::default();
    let mut server = match &job.target {
        Target::Spawn { cmd, dir } => {
            let log = job.out.join("server.log");
            match dir {
                Some(d) => eprintln!("starting server (in {}): {cmd}", d.display()),
                None => eprintln!("starting server: {cmd}"),
            }
            let srv = Server::spawn(cmd, dir.as_deref(), &log)?;
            server_info.command = Some(cmd.clone());
            server_info.log = Some(log.display().to_string());
            Some(srv)
        }
        Target::External { .. } => None,
    };
    let pid = match (&job.target, &server) {
        (Target::External { pid }, _) => *pid,
        (_, Some(srv)) => Some(srv.pid()),
        _ => None,
    };
    server_info.pid = pid;
    // Sample from before readiness, so start-up memory (key loading) is in rss.csv too.
    let epoch = Instant::now();
    let sampler = pid.map(|p| RssSampler::start(p, s.rss_interval));

    let result = async {
        eprintln!("waiting for {}{} ...", client.base(), s.client.ready_path);
        let ready = spawn::wait_ready(
            &client,
            &s.client.ready_path,
            s.client.ready_timeout,
            server.as_mut(),
        )
        .await?;
        server_info.ready_after_s = Some(crate::stats::r3(ready.as_secs_f64()));
        eprintln!(
            "ready after {:.1} s; {} phases, at least {:.0} s",
            ready.as_secs_f64(),
            phases.len(),
            nominal_time(&phases).as_secs_f64()
        );
        let mut priming = prime(&client, &targets, s.prime).await;
        if let Some((text, until)) = &prime_until {
            let metrics_path = s.metrics_path().unwrap_or("/metrics");
            let until = (*text, until);
            priming.extend(
                prime_until_metric(&client, &targets, metrics_path, until, s.prime_until_limit)
                    .await,
            );
        }
        if let Some(srv) = server.as_ref() {
            // The priming proofs' timing lines belong to no phase.
            attach_prove_log(&srv.prove_log, &mut [], epoch).await;
        }
        let (levels, soak, open, all, spans, mut notes) = run_phases(
            &job,
            &client,
            targets.clone(),
            &phases,
            epoch,
            sampler.as_ref(),
            selector.as_ref(),
            server.as_mut(),
        )
        .await?;
        // A failed priming request is the run's first note.
        notes.splice(0..0, priming);
        Ok::<Phases, anyhow::Error>((levels, soak, open, all, spans, notes))
    }
    .await;

    let rss_samples = sampler.map(|x| x.stop()).unwrap_or_default();
    if let Some(p) = pid {
        server_info.vm_hwm_mb =
            rss::read_status_kb(p, "VmHWM").map(|kb| crate::stats::r3(kb as f64 / 1024.0));
    }
    if let Some(srv) = server.take() {
        srv.stop(Duration::from_secs(10)).await;
    }
    let (levels, soak, open, records, phase_spans, mut notes) = result?;
    notes.splice(0..0, standard_notes(s, &targets));
    let report = Report {
        schema_version: SCHEMA_VERSION,
        tool: format!("enygma-loadgen {}", env!("CARGO_PKG_VERSION")),
        generated_at: machine::now_rfc3339(),
        label: job.label.clone(),
        machine: machine::detect(),
        settings: settings(job.url, s, &targets, &job.target),
        server: server_info,
        levels,
        soak,
        open_loop: open,
        notes,
    };
    output::write_json(&report, job.out)?;
    output::write_markdown(&report, job.out)?;
    output::write_requests_csv(&records, job.out)?;
    output::write_rss_csv(&rss_samples, epoch, &phase_spans, job.out)?;
    chart::draw_report(&report, &job.out.join("chart.svg"))?;
    let pts: Vec<(f64, f64)> = rss_samples
        .iter()
        .map(|x| (x.at.saturating_duration_since(epoch).as_secs_f64(), x.mb()))
        .collect();
    chart::draw_rss_timeline(
        &job.out.join("rss.svg"),
        "Server RSS over the run",
        &pts,
        &phase_spans,
    )?;
    Ok(report)
}

type Phases = (
    Vec<crate::report::LevelReport>,
    Option<crate::report::SoakReport>,
    Vec<crate::report::OpenReport>,
    Vec<(String, Record)>,
    Vec<(String, f64, f64)>,
    Vec<String>,
);

#[allow(clippy::too_many_arguments)]
async fn run_phases(
    job: &Job<'_>,
    client: &HttpClient,
    targets: Arc<Targets>,
    phases: &[crate::schedule::Phase],
    epoch: Instant,
    sampler: Option<&RssSampler>,
    selector: Option<&Selector>,
    mut server: Option<&mut Server>,
) -> Result<Phases> {
    let s = job.schedule;
    let live = Arc::new(Live::default());
    let ctx = Ctx {
        client: client.clone(),
        targets: targets.clone(),
        epoch,
        live: live.clone(),
        abort: job.abort.clone(),
        seed: s.seed,
        max_outstanding: s.client.max_outstanding,
        honor_retry_after: !s.client.ignore_retry_after,
    };
    let progress = Progress::start(live.clone(), sampler.map(|x| x.latest_handle()), s.quiet);
    let metrics_path = s.metrics_path();
    let endpoints: Vec<&str> = targets.targets.iter().map(|t| t.path.as_str()).collect();
    let (mut levels, mut soak, mut open) = (Vec::new(), None, Vec::new());
    let (mut all, mut spans, mut notes) = (Vec::new(), Vec::new(), Vec::new());
    let mut metrics_missing = false;
    for (i, phase) in phases.iter().enumerate() {
        if job.abort.load(std::sync::atomic::Ordering::Relaxed) {
            notes.push("Run interrupted: later phases were not run.".into());
            break;
        }
        if let Some(st) = server.as_deref_mut().and_then(|s| s.exited()) {
            let msg = format!(
                "The server exited ({st}) before {label}; later phases were not run.",
                label = phase.label()
            );
            eprintln!("{msg}");
            notes.push(msg);
            break;
        }
        let label = phase.label();
        live.reset();
        let before = served_now(client, metrics_path, &endpoints, selector).await;
        progress.phase(
            label.clone(),
            i + 1,
            phases.len(),
            phase.warmup,
            phase.duration,
        );
        let mut run = match phase.load {
            Load::Closed { concurrency } => {
                load::run_closed(&ctx, i, concurrency, phase.warmup, phase.duration).await
            }
            Load::Open { rate_rps } => {
                load::run_open(&ctx, i, rate_rps, phase.warmup, phase.duration).await
            }
        };
        if let Some(srv) = server.as_deref() {
            let unmatched = attach_prove_log(&srv.prove_log, &mut run.records, epoch).await;
            if unmatched > 0 {
                notes.push(format!(
                    "{label}: {unmatched} of the server's timing lines matched no request (prove times of those requests are missing)."
                ));
            }
        }
        let after = served_now(client, metrics_path, &endpoints, selector).await;
        let served = served_delta(before, after);
        metrics_missing |= served.is_none();
        let rss_now = sampler
            .map(|x| x.between(epoch, Instant::now()))
            .unwrap_or_default();
        let view = PhaseView::new(&run, &rss_now, epoch);
        let summary = match (phase.kind, phase.load) {
            (PhaseKind::Soak, Load::Closed { concurrency }) => {
                let r = view.soak(
                    concurrency,
                    phase.window.unwrap_or(s.window),
                    &rss_now,
                    epoch,
                    served,
                );
                let line = summary_line(&label, &r.overall);
                soak = Some(r);
                line
            }
            (_, Load::Closed { concurrency }) => {
                let r = view.level(concurrency, served);
                let line = summary_line(&label, &r);
                levels.push(r);
                line
            }
            (_, Load::Open { rate_rps }) => {
                let r = view.open(rate_rps, served);
                let line = format!(
                    "{label}: scheduled {} ok {} err {}  {:.3} req/s  p50 {} ms  p99 {} ms (from schedule)",
                    r.scheduled,
                    r.completed,
                    r.errors.values().sum::<u64>(),
                    r.throughput_rps,
                    output::f1(r.latency_ms.map(|x| x.p50)),
                    output::f1(r.latency_ms.map(|x| x.p99)),
                );
                open.push(r);
                line
            }
        };
        if let Some(c) = view.served_check(served) {
            if !c.matches {
                notes.push(format!(
                    "{label}: the server counted {} requests served but the client got {} answers 200.",
                    c.server_served, c.client_completed
                ));
            }
        }
        progress.done(&summary);
        if targets.is_mix() {
            let line = mix_line(&label, &targets, &run.records);
            eprintln!("  {line}");
            notes.push(line);
        }
        spans.push((
            label.clone(),
            run.start.as_secs_f64(),
            run.drained.as_secs_f64(),
        ));
        all.extend(run.records.iter().map(|r| (label.clone(), *r)));
        if run.aborted {
            notes.push(format!(
                "{label}: interrupted before its end; its numbers are partial."
            ));
        }
    }
    if metrics_missing && metrics_path.is_some() {
        notes.push(format!(
            "No served counter found at {} (route missing or counter not recognised; see --served-metric): \
             served_check is null.",
            metrics_path.unwrap_or_default()
        ));
    }
    Ok((levels, soak, open, all, spans, notes))
}

/// Sends `n` requests one at a time and waits for each: the server's first proof of the run
/// (lazy key loading in the reference, FFT tables in ours) then falls in no phase. A failed
/// one is reported (the returned notes) and the run goes on: a server that sheds or times out
/// everything is still worth measuring.
pub(crate) async fn prime(client: &HttpClient, targets: &Targets, n: usize) -> Vec<String> {
    let mut notes = Vec::new();
    for i in 1..=n {
        let (_, uri, body) = targets.next();
        let started = Instant::now();
        let r = client.post_json(uri, body).await;
        let took = started.elapsed().as_secs_f64();
        if r.status.is_ok() {
            eprintln!("primed: request {i} of {n} answered in {took:.1} s");
        } else {
            let note = format!(
                "Priming request {i} of {n} to {uri} failed after {took:.1} s: {}.",
                r.status.key()
            );
            eprintln!("{note}");
            notes.push(note);
        }
    }
    notes
}

/// Sends requests one at a time until the metric `until` (written `wanted`) of the server's
/// `metrics_path` reads above zero, at most `limit` of them; returns the run's note on what
/// happened (a server that does not export the metric gets none sent).
pub(crate) async fn prime_until_metric(
    client: &HttpClient,
    targets: &Targets,
    metrics_path: &str,
    (wanted, until): (&str, &Selector),
    limit: usize,
) -> Vec<String> {
    let started = Instant::now();
    let mut sent = 0;
    loop {
        let value = match client.get(metrics_path, Duration::from_secs(10)).await {
            Ok((200, body)) => until.sum(&metrics::parse(&String::from_utf8_lossy(&body))),
            _ => None,
        };
        let Some(value) = value else {
            let note = format!(
                "--prime-until: the server does not export {wanted} at {metrics_path}; no \
                 request was sent for it."
            );
            eprintln!("{note}");
            return vec![note];
        };
        if value > 0.0 {
            let note = format!(
                "Warm-up before the first phase: {sent} request(s) sent one at a time until \
                 {wanted} read {value} ({:.1} s, --prime-until); they are in no phase.",
                started.elapsed().as_secs_f64()
            );
            eprintln!("{note}");
            return vec![note];
        }
        if sent == limit {
            let note = format!(
                "--prime-until: {wanted} still read 0 after {sent} requests ({:.1} s); the run \
                 went on without it.",
                started.elapsed().as_secs_f64()
            );
            eprintln!("{note}");
            return vec![note];
        }
        let (_, uri, body) = targets.next();
        let r = client.post_json(uri, body).await;
        sent += 1;
        if !r.status.is_ok() {
            eprintln!("--prime-until: request {sent} failed: {}", r.status.key());
        }
    }
}

/// Gives a phase's requests the prove times the server printed (the reference's timing
/// lines; our server's come in `Server-Timing` and it prints none). Returns the lines that
/// matched no request.
async fn attach_prove_log(log: &ProveLog, records: &mut [Record], epoch: Instant) -> usize {
    if !log.seen_any() {
        return 0;
    }
    // Every line of the phase was written before its response; let the tap catch up.
    tokio::time::sleep(STAMP_SLACK).await;
    ProveLog::attach(&log.drain(), records, epoch)
}

/// A phase's measured requests per instance of a mix: answered 200, failed, p50 latency.
fn mix_line(label: &str, targets: &Targets, records: &[Record]) -> String {
    let per: Vec<String> = targets
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mine: Vec<&Record> = records
                .iter()
                .filter(|r| {
                    r.target == i && !r.warmup && r.status != crate::client::Status::Dropped
                })
                .collect();
            let mut ok: Vec<f64> = mine
                .iter()
                .filter(|r| r.status.is_ok())
                .map(|r| r.latency_ms())
                .collect();
            ok.sort_by(f64::total_cmp);
            format!(
                "{} ok {} err {} p50 {} ms",
                t.label,
                ok.len(),
                mine.len() - ok.len(),
                output::f1(crate::stats::percentile(&ok, 50.0))
            )
        })
        .collect();
    format!("{label} per instance: {}", per.join("; "))
}

fn summary_line(label: &str, l: &crate::report::LevelReport) -> String {
    format!(
        "{label}: ok {} err {}  {:.3} req/s  p50 {} ms  p99 {} ms  prove p50 {} ms  rss peak {} MB{}",
        l.completed,
        l.errors.values().sum::<u64>(),
        l.throughput_rps,
        output::f1(l.latency_ms.map(|x| x.p50)),
        output::f1(l.latency_ms.map(|x| x.p99)),
        output::f1(l.internal.internal_prove_ms.map(|x| x.p50)),
        output::f1(l.rss_peak_mb),
        l.served_check.map_or(String::new(), |c| format!(
            "  served {} / {}{}",
            c.server_served,
            c.client_completed,
            if c.matches { " ok" } else { " MISMATCH" }
        )),
    )
}

/// This process's command line with its tokens redacted ([`crate::token::redact_args`]), each
/// argument quoted for `sh`: what a run's `command.txt` records.
pub fn command_line() -> String {
    crate::token::redact_args(std::env::args())
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Single-quotes a string for `sh`.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=:,+@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Entry point of `enygma-loadgen run`.
pub async fn main(args: RunArgs, abort: Arc<AtomicBool>) -> Result<()> {
    let target = match (&args.spawn_server, args.server_pid) {
        (Some(cmd), _) => Target::Spawn {
            cmd: cmd.clone(),
            dir: None,
        },
        (None, pid) => Target::External { pid },
    };
    if matches!(target, Target::External { pid: None }) {
        eprintln!("note: no --server-pid or --spawn-server: RSS will not be sampled");
    }
    let report = execute(Job {
        url: &args.url,
        schedule: &args.schedule,
        target,
        out: &args.out,
        label: args.label.clone(),
        abort,
    })
    .await?;
    eprintln!(
        "wrote {}/report.json, report.md, chart.svg ({} levels{}{})",
        args.out.display(),
        report.levels.len(),
        if report.soak.is_some() { ", soak" } else { "" },
        if report.open_loop.is_empty() {
            ""
        } else {
            ", open loop"
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_deltas() {
        assert_eq!(served_delta(Some(Some(3.0)), Some(Some(10.0))), Some(7.0));
        assert_eq!(served_delta(Some(None), Some(Some(4.0))), Some(4.0));
        assert_eq!(served_delta(Some(None), Some(None)), None);
        assert_eq!(served_delta(None, Some(Some(4.0))), None);
        assert_eq!(served_delta(Some(Some(1.0)), None), None);
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/a/b-c"), "/a/b-c");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
