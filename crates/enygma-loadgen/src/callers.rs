//! The `callers` subcommand: several named callers offer load at once, each with its own
//! bearer token (so the server tells them apart) and its own closed or open loop, for the
//! same warm-up and duration. Each caller's loop is one phase of [`load`] run alongside the
//! others, so the rules of `run` hold for every caller (membership by send time, latency from
//! the scheduled send time, every request awaited).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use tokio::task::JoinSet;

use crate::caller_spec::{self, schedule_text, CallerSpec};
use crate::callers_report::{self, CallerRun, CallersReport, CallersSettings};
use crate::cli::CallersArgs;
use crate::client::HttpClient;
use crate::load::{self, Ctx, Live};
use crate::machine;
use crate::mix::Targets;
use crate::output;
use crate::progress::Progress;
use crate::report::SCHEMA_VERSION;
use crate::run::{command_line, prime};
use crate::schedule::Load;
use crate::spawn;

fn settings(a: &CallersArgs, targets: &Targets, callers: &[CallerSpec]) -> CallersSettings {
    CallersSettings {
        url: a.url.clone(),
        endpoint: targets.describe(),
        requests: a.requests.display().to_string(),
        request_pool_size: targets.pool_len(),
        request_pool_distinct: targets.pool_distinct(),
        callers: callers
            .iter()
            .map(|c| format!("{} {}", c.name, schedule_text(&c.load)))
            .collect(),
        duration_s: a.duration.as_secs_f64(),
        warmup_s: a.warmup.as_secs_f64(),
        timeout_s: a.client.timeout.as_secs_f64(),
        seed: a.seed,
        max_outstanding: a.client.max_outstanding,
        honor_retry_after: !a.client.ignore_retry_after,
        prime: a.prime,
    }
}

fn standard_notes(a: &CallersArgs) -> Vec<String> {
    let mut notes = vec![
        "Every caller runs its own loop with its own bearer token, all at once, for the same \
         warm-up and measured part. A request belongs to the measured part by when it was \
         (scheduled to be) sent; every request sent is awaited."
            .to_string(),
        "throughput_rps = a caller's measured requests answered 200 / the measured duration; \
         latency percentiles are over those requests (nearest rank), from the scheduled send \
         time. shed_503 counts the server's 503 answers (the caller's share or queue was full, \
         or its expected wait too long); errors holds every failure by status."
            .to_string(),
    ];
    notes.push(if a.client.ignore_retry_after {
        "Closed loops retried a shed request at once (--ignore-retry-after).".to_string()
    } else {
        "Closed loops waited a shed answer's Retry-After before their next request.".to_string()
    });
    if a.prime > 0 {
        notes.push(format!(
            "{} request(s) were sent one at a time with the first caller's token before the run \
             and are in no caller's figures (--prime).",
            a.prime
        ));
    }
    notes
}

/// Runs every caller's loop at once; returns their runs in the order given.
async fn run_callers(
    base: &HttpClient,
    targets: Arc<Targets>,
    callers: &[CallerSpec],
    a: &CallersArgs,
    live: Arc<Live>,
    abort: Arc<AtomicBool>,
) -> Vec<CallerRun> {
    let epoch = Instant::now();
    let mut set = JoinSet::new();
    for (i, c) in callers.iter().enumerate() {
        let ctx = Ctx {
            client: base.with_bearer(Some(&c.token)),
            targets: targets.clone(),
            epoch,
            live: live.clone(),
            abort: abort.clone(),
            seed: a.seed,
            max_outstanding: a.client.max_outstanding,
            honor_retry_after: !a.client.ignore_retry_after,
        };
        let (load, warmup, duration) = (c.load, a.warmup, a.duration);
        // The caller's index is its phase: its records say whose they are, and each open loop
        // gets a Poisson schedule of its own.
        set.spawn(async move {
            let run = match load {
                Load::Closed { concurrency } => {
                    load::run_closed(&ctx, i, concurrency, warmup, duration).await
                }
                Load::Open { rate_rps } => {
                    load::run_open(&ctx, i, rate_rps, warmup, duration).await
                }
            };
            (i, run)
        });
    }
    let mut runs: Vec<Option<CallerRun>> = callers.iter().map(|_| None).collect();
    while let Some(done) = set.join_next().await {
        let (i, run) = done.expect("a caller's loop panicked");
        runs[i] = Some(CallerRun {
            name: callers[i].name.clone(),
            load: callers[i].load,
            run,
        });
    }
    runs.into_iter().flatten().collect()
}

/// Runs the callers against the server at `a.url` and writes the report files into `a.out`.
pub async fn execute(a: &CallersArgs, abort: Arc<AtomicBool>) -> Result<CallersReport> {
    let callers = caller_spec::collect(&a.caller, a.callers.as_deref())?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    std::fs::write(a.out.join("command.txt"), command_line() + "\n")?;
    let base = HttpClient::new(&a.url, a.client.timeout)?;
    let targets = Arc::new(Targets::single(&base, &a.endpoint, &a.requests)?);

    eprintln!("waiting for {}{} ...", base.base(), a.client.ready_path);
    let ready =
        spawn::wait_ready(&base, &a.client.ready_path, a.client.ready_timeout, None).await?;
    let mut notes = prime(
        &base.with_bearer(Some(&callers[0].token)),
        &targets,
        a.prime,
    )
    .await;
    eprintln!(
        "{} callers for {:.0} s after a {:.0} s warm-up: {}",
        callers.len(),
        a.duration.as_secs_f64(),
        a.warmup.as_secs_f64(),
        callers
            .iter()
            .map(|c| format!("{} {}", c.name, schedule_text(&c.load)))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let live = Arc::new(Live::default());
    let progress = Progress::start(live.clone(), None, a.quiet);
    progress.phase("callers".into(), 1, 1, a.warmup, a.duration);
    let runs = run_callers(&base, targets.clone(), &callers, a, live, abort).await;
    progress.done("callers: done");

    let (caller_reports, total) = callers_report::aggregate(&runs);
    if runs.iter().any(|c| c.run.aborted) {
        notes.push("The run was interrupted before its end; its numbers are partial.".into());
    }
    notes.splice(0..0, standard_notes(a));
    let report = CallersReport {
        schema_version: SCHEMA_VERSION,
        tool: format!("enygma-loadgen {}", env!("CARGO_PKG_VERSION")),
        generated_at: machine::now_rfc3339(),
        label: a.label.clone(),
        machine: machine::detect(),
        settings: settings(a, &targets, &callers),
        ready_after_s: Some(crate::stats::r3(ready.as_secs_f64())),
        callers: caller_reports,
        total,
        notes,
    };
    callers_report::write(&report, &a.out)?;
    let records: Vec<(String, load::Record)> = runs
        .iter()
        .flat_map(|c| c.run.records.iter().map(|r| (c.name.clone(), *r)))
        .collect();
    output::write_requests_csv(&records, &a.out)?;
    Ok(report)
}

/// Entry point of `enygma-loadgen callers`.
pub async fn main(a: CallersArgs, abort: Arc<AtomicBool>) -> Result<()> {
    let report = execute(&a, abort).await?;
    for c in &report.callers {
        eprintln!("  {}", summary_line(&c.name, &c.schedule, &c.stats));
    }
    eprintln!("  {}", summary_line("total", "", &report.total));
    eprintln!(
        "wrote {}/report.json, report.md, requests.csv",
        a.out.display()
    );
    Ok(())
}

fn summary_line(name: &str, schedule: &str, s: &callers_report::CallerStats) -> String {
    format!(
        "{name} {schedule}: ok {} 503 {} other errors {}  {:.3} req/s  p50 {} ms  p99 {} ms",
        s.completed,
        s.shed_503,
        s.errors.values().sum::<u64>() - s.shed_503,
        s.throughput_rps,
        output::f1(s.latency_ms.map(|x| x.p50)),
        output::f1(s.latency_ms.map(|x| x.p99)),
    )
}
