//! The `retries` subcommand: a gateway that gives up on a slow answer and sends the request
//! again, as gateways do under load, and what that costs the server.
//!
//! `--concurrency` workers each hold one distinct request at a time. An attempt that has no
//! answer after `--retry-after-timeout` is abandoned (its connection dropped) and the same body
//! sent again; a shed answer (503, 429: after its `Retry-After` unless `--ignore-retry-after`,
//! at most the retry timeout) and a queue timeout (504) are sent again too; after
//! `--max-retries` retries the last attempt waits `--timeout`. With `--idempotency-keys` every
//! distinct request has an `Idempotency-Key` of its own, the same on its retries.
//!
//! What the server computed is read from its own counter: `enygma_proofs_started_total` before
//! the run and after it, once the server is idle (no proof in flight, nothing queued), so that
//! the proofs of abandoned attempts, which go on after their client left, are counted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hyper::header::HeaderValue;
use serde::Serialize;
use tokio::task::JoinSet;

use crate::cli::RetriesArgs;
use crate::client::{HttpClient, Status};
use crate::machine::{self, Machine};
use crate::mix::Targets;
use crate::run::{command_line, prime};
use crate::spawn;
use crate::stats::{r3, Summary};

/// What became of one distinct request.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    /// Its last attempt's status.
    status: Status,
    attempts: u32,
    /// From the first attempt's send to the last attempt's end.
    latency: Duration,
    /// The answer was the one an earlier attempt with the same key caused.
    replayed: bool,
}

/// The report of one run.
#[derive(Debug, Serialize)]
pub struct RetriesReport {
    pub tool: String,
    pub generated_at: String,
    pub label: Option<String>,
    pub machine: Machine,
    pub url: String,
    pub endpoint: String,
    pub concurrency: u32,
    pub duration_s: f64,
    pub retry_after_timeout_s: f64,
    pub max_retries: u32,
    pub idempotency_keys: bool,
    /// Distinct requests sent (each once or more).
    pub distinct_requests: u64,
    /// Distinct requests answered with a proof (200).
    pub proved: u64,
    /// Distinct requests whose last attempt failed, by its status.
    pub failed: std::collections::BTreeMap<String, u64>,
    /// Attempts sent, retries included.
    pub attempts: u64,
    /// Answers marked `Idempotent-Replayed: true`.
    pub replayed: u64,
    /// `enygma_proofs_started_total` after the run (server idle) minus before.
    pub proofs_computed: Option<f64>,
    /// proofs_computed / distinct_requests: 1.00 when no request is proved twice.
    pub proofs_per_distinct_request: Option<f64>,
    /// Distinct requests answered with a proof per second, from the first send to the last answer.
    pub goodput_rps: f64,
    /// Latency of the proved distinct requests, from their first send (ms).
    pub latency_ms: Option<Summary>,
    pub notes: Vec<String>,
}

/// One worker: distinct requests one after the other until `end`.
async fn worker(
    client: HttpClient,
    targets: Arc<Targets>,
    a: Arc<RetriesArgs>,
    run: u64,
    next_id: Arc<AtomicU64>,
    end: Instant,
    abort: Arc<AtomicBool>,
) -> Vec<Outcome> {
    let mut out = Vec::new();
    while Instant::now() < end && !abort.load(Ordering::Relaxed) {
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let key = a.idempotency_keys.then(|| {
            HeaderValue::from_str(&format!("loadgen-{run:016x}-{id}"))
                .expect("a key of visible ASCII")
        });
        let (_, uri, body) = targets.next();
        let first = Instant::now();
        let mut attempts = 0;
        let reply = loop {
            attempts += 1;
            let last = attempts > a.max_retries;
            let limit = if last {
                a.client.timeout
            } else {
                a.retry_after_timeout
            };
            let reply = client
                .post_keyed(uri, body.clone(), key.as_ref(), limit)
                .await;
            let again = match reply.status {
                Status::Timeout | Status::Io | Status::Http(503 | 504 | 429) => true,
                Status::Connect => {
                    // Server gone: do not spin.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    true
                }
                _ => false,
            };
            if !again || last {
                break reply;
            }
            if let Some(wait) = reply.retry_after.filter(|_| !a.client.ignore_retry_after) {
                tokio::time::sleep(wait.min(a.retry_after_timeout)).await;
            }
        };
        out.push(Outcome {
            status: reply.status,
            attempts,
            latency: reply.done - first,
            replayed: reply.replayed,
        });
    }
    out
}

/// The server's `enygma_proofs_started_total`, once it has no proof in flight and nothing
/// queued (at most `settle`).
async fn proofs_started_when_idle(
    client: &HttpClient,
    path: &str,
    settle: Duration,
) -> Result<f64> {
    use enygma_formats::prometheus::value;
    let deadline = Instant::now() + settle;
    loop {
        let (status, body) = client.get(path, Duration::from_secs(10)).await?;
        if status != 200 {
            bail!("{path} answered {status}");
        }
        let text = String::from_utf8_lossy(&body);
        let started = value(&text, "enygma_proofs_started_total")
            .with_context(|| format!("{path} has no enygma_proofs_started_total"))?;
        let busy = value(&text, "enygma_proofs_in_flight").unwrap_or(0.0)
            + value(&text, "enygma_queue_depth{queue=\"prove\"}").unwrap_or(0.0);
        if busy == 0.0 {
            return Ok(started);
        }
        if Instant::now() > deadline {
            bail!("the server was still busy {settle:?} after the run");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs the gateway against the server at `a.url`.
pub async fn execute(a: RetriesArgs, abort: Arc<AtomicBool>) -> Result<RetriesReport> {
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    std::fs::write(a.out.join("command.txt"), command_line() + "\n")?;
    let client = HttpClient::new(&a.url, a.client.timeout)?;
    let metrics = match &a.metrics_url {
        Some(url) => {
            let (base, path) = split_url(url)?;
            (HttpClient::new(base, a.client.timeout)?, path.to_string())
        }
        None => (client.clone(), "/metrics".to_string()),
    };
    let targets = Arc::new(Targets::single(&client, &a.endpoint, &a.requests)?);
    eprintln!("waiting for {}{} ...", client.base(), a.client.ready_path);
    spawn::wait_ready(&client, &a.client.ready_path, a.client.ready_timeout, None).await?;
    let mut notes = prime(&client, &targets, a.prime).await;
    let before = proofs_started_when_idle(&metrics.0, &metrics.1, a.settle_timeout).await?;

    let a = Arc::new(a);
    // Keys of one run are its own: a second run against the same server replays nothing.
    let run: u64 = rand::random();
    let next_id = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let end = start + a.duration;
    eprintln!(
        "{} distinct requests in flight for {:.0} s, sent again after {:.1} s without an answer \
         (at most {} times), {}",
        a.concurrency,
        a.duration.as_secs_f64(),
        a.retry_after_timeout.as_secs_f64(),
        a.max_retries,
        if a.idempotency_keys {
            "with an Idempotency-Key each"
        } else {
            "without keys"
        }
    );
    let mut set = JoinSet::new();
    for _ in 0..a.concurrency {
        set.spawn(worker(
            client.clone(),
            targets.clone(),
            a.clone(),
            run,
            next_id.clone(),
            end,
            abort.clone(),
        ));
    }
    let mut outcomes = Vec::new();
    while let Some(done) = set.join_next().await {
        outcomes.extend(done.expect("a worker panicked"));
    }
    let answered = start.elapsed();
    let after = match proofs_started_when_idle(&metrics.0, &metrics.1, a.settle_timeout).await {
        Ok(after) => Some(after),
        Err(e) => {
            notes.push(format!("The proofs computed are unknown: {e:#}."));
            None
        }
    };
    if abort.load(Ordering::Relaxed) {
        notes.push("The run was interrupted before its end; its numbers are partial.".into());
    }
    Ok(report(
        &a,
        &outcomes,
        after.map(|after| after - before),
        answered,
        notes,
    ))
}

/// `http://host:port/path` → (`http://host:port`, `/path`).
fn split_url(url: &str) -> Result<(&str, &str)> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("--metrics-url {url:?}: only plain http:// URLs"))?;
    let path_at = rest.find('/').map_or(url.len(), |i| i + "http://".len());
    let (base, path) = url.split_at(path_at);
    Ok((base, if path.is_empty() { "/metrics" } else { path }))
}

fn report(
    a: &RetriesArgs,
    outcomes: &[Outcome],
    proofs_computed: Option<f64>,
    answered: Duration,
    notes: Vec<String>,
) -> RetriesReport {
    let distinct = outcomes.len() as u64;
    let proved: Vec<&Outcome> = outcomes.iter().filter(|o| o.status.is_ok()).collect();
    let mut failed = std::collections::BTreeMap::new();
    for o in outcomes.iter().filter(|o| !o.status.is_ok()) {
        *failed.entry(o.status.key()).or_insert(0) += 1;
    }
    let latencies: Vec<f64> = proved
        .iter()
        .map(|o| o.latency.as_secs_f64() * 1e3)
        .collect();
    RetriesReport {
        tool: format!("enygma-loadgen {}", env!("CARGO_PKG_VERSION")),
        generated_at: machine::now_rfc3339(),
        label: a.label.clone(),
        machine: machine::detect(),
        url: a.url.clone(),
        endpoint: a.endpoint.clone(),
        concurrency: a.concurrency,
        duration_s: a.duration.as_secs_f64(),
        retry_after_timeout_s: a.retry_after_timeout.as_secs_f64(),
        max_retries: a.max_retries,
        idempotency_keys: a.idempotency_keys,
        distinct_requests: distinct,
        proved: proved.len() as u64,
        failed,
        attempts: outcomes.iter().map(|o| o.attempts as u64).sum(),
        replayed: outcomes.iter().filter(|o| o.replayed).count() as u64,
        proofs_computed,
        proofs_per_distinct_request: proofs_computed
            .filter(|_| distinct > 0)
            .map(|p| r3(p / distinct as f64)),
        goodput_rps: r3(proved.len() as f64 / answered.as_secs_f64().max(1e-9)),
        latency_ms: Summary::of(&latencies),
        notes,
    }
}

/// The report as a Markdown table row and its header.
pub fn markdown(r: &RetriesReport) -> String {
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    let failed: Vec<String> = r.failed.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let mut md = format!(
        "# Retrying gateway{}\n\n\
         | keys | distinct requests | proved | failed | attempts | replayed | proofs computed | proofs per distinct request | goodput (proofs/s) | p50 (ms) | p99 (ms) |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n\
         | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {} | {} |\n\n",
        r.label.as_ref().map_or(String::new(), |l| format!(": {l}")),
        if r.idempotency_keys { "yes" } else { "no" },
        r.distinct_requests,
        r.proved,
        if failed.is_empty() { "0".to_string() } else { failed.join(", ") },
        r.attempts,
        r.replayed,
        opt(r.proofs_computed),
        opt(r.proofs_per_distinct_request),
        r.goodput_rps,
        opt(r.latency_ms.map(|l| l.p50)),
        opt(r.latency_ms.map(|l| l.p99)),
    );
    md.push_str(&format!(
        "{} distinct requests in flight for {:.0} s against {}{}; an attempt without an answer \
         after {:.1} s is abandoned and sent again, at most {} times. {} on {} ({} CPUs).\n",
        r.concurrency,
        r.duration_s,
        r.url,
        r.endpoint,
        r.retry_after_timeout_s,
        r.max_retries,
        r.generated_at,
        r.machine.cpu_model,
        r.machine.available_parallelism,
    ));
    for note in &r.notes {
        md.push_str(&format!("\n{note}\n"));
    }
    md
}

/// Entry point of `enygma-loadgen retries`.
pub async fn main(a: RetriesArgs, abort: Arc<AtomicBool>) -> Result<()> {
    let out = a.out.clone();
    let report = execute(a, abort).await?;
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    std::fs::write(out.join("report.md"), markdown(&report))?;
    eprintln!(
        "distinct {} proved {} attempts {} replayed {} proofs computed {} per distinct request {} \
         goodput {:.2}/s",
        report.distinct_requests,
        report.proved,
        report.attempts,
        report.replayed,
        report
            .proofs_computed
            .map_or("-".to_string(), |p| p.to_string()),
        report
            .proofs_per_distinct_request
            .map_or("-".to_string(), |p| format!("{p:.2}")),
        report.goodput_rps,
    );
    eprintln!("wrote {}/report.json, report.md", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_urls_split_into_base_and_path() {
        assert_eq!(
            split_url("http://127.0.0.1:9464/metrics").unwrap(),
            ("http://127.0.0.1:9464", "/metrics")
        );
        assert_eq!(
            split_url("http://127.0.0.1:9464").unwrap(),
            ("http://127.0.0.1:9464", "/metrics")
        );
        assert!(split_url("https://x/metrics").is_err());
    }
}
