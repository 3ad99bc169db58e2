//! Capacity planning: how many machines a daily volume needs within its operating window,
//! given the throughput one machine sustains (from a load test report); and, with `--rate`, a
//! deployment plan: the replica's flags and resources, the replica counts and the autoscaler's
//! thresholds for deploy/kubernetes/, down to a kustomize overlay.

use std::fmt::Write as _;

use anyhow::{bail, Result};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    pub name: String,
    pub daily_volume: u64,
    /// Human description of the window (`06:00-18:00`, `22 h`).
    pub window: String,
    pub window_hours: f64,
}

impl Workload {
    /// The daily volume spread evenly over the window.
    pub fn average_rps(&self) -> f64 {
        self.daily_volume as f64 / (self.window_hours * 3600.0)
    }
}

/// The UK's CHAPS: 210,483 payments a day, settled 06:00-18:00.
pub fn chaps() -> Workload {
    Workload {
        name: "CHAPS".into(),
        daily_volume: 210_483,
        window: "06:00-18:00".into(),
        window_hours: 12.0,
    }
}

/// The US Fedwire Funds Service: 869,187 payments a day over a 22-hour operating day.
pub fn fedwire() -> Workload {
    Workload {
        name: "Fedwire".into(),
        daily_volume: 869_187,
        window: "22 h".into(),
        window_hours: 22.0,
    }
}

/// `06:00-18:00` → 12.0; a window past midnight (`21:00-19:00`) wraps (22.0).
pub fn parse_window(s: &str) -> Result<f64> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| anyhow::anyhow!("window {s:?}: expected HH:MM-HH:MM"))?;
    let mins = |t: &str| -> Result<u32> {
        let (h, m) = t.trim().split_once(':').unwrap_or((t.trim(), "0"));
        let (h, m): (u32, u32) = (h.parse()?, m.parse()?);
        if h > 24 || m > 59 || (h == 24 && m > 0) {
            bail!("bad time {t:?}");
        }
        Ok(h * 60 + m)
    };
    let (a, b) = (mins(a)?, mins(b)?);
    let d = if b > a { b - a } else { b + 24 * 60 - a };
    Ok(d as f64 / 60.0)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanRow {
    pub workload: Workload,
    /// Daily volume spread evenly over the window.
    pub average_rps: f64,
    pub peak_factor: Option<f64>,
    /// The rate sized for: average × peak factor.
    pub design_rps: f64,
    pub throughput_per_machine_rps: f64,
    /// ⌈design rate / per-machine throughput⌉, at least 1.
    pub machines: u64,
    /// Design rate / (machines × per-machine throughput).
    pub utilization: f64,
}

pub fn plan(w: &Workload, throughput_rps: f64, peak_factor: Option<f64>) -> Result<PlanRow> {
    if !(throughput_rps > 0.0 && throughput_rps.is_finite()) {
        bail!("--throughput must be a positive number of proofs per second per machine");
    }
    if let Some(f) = peak_factor {
        if !(f >= 1.0 && f.is_finite()) {
            bail!("--peak-factor must be >= 1 (peak rate / average rate)");
        }
    }
    if !(w.window_hours > 0.0 && w.window_hours <= 24.0) {
        bail!("operating window must be between 0 and 24 hours");
    }
    let average_rps = w.average_rps();
    let design_rps = average_rps * peak_factor.unwrap_or(1.0);
    // Tolerate float noise so that an exact fit does not round up to one more machine.
    let machines = ((design_rps / throughput_rps) - 1e-9).ceil().max(1.0) as u64;
    let utilization = design_rps / (machines as f64 * throughput_rps);
    Ok(PlanRow {
        workload: w.clone(),
        average_rps,
        peak_factor,
        design_rps,
        throughput_per_machine_rps: throughput_rps,
        machines,
        utilization,
    })
}

pub fn caveat(peak_factor: Option<f64>) -> String {
    match peak_factor {
        None => "First-order estimate: it assumes the daily volume arrives evenly over the operating \
                 window and ignores intraday peaks (pass --peak-factor F, the peak rate divided by the \
                 average rate, to size for them). It also leaves out redundancy (N+1), retries, \
                 growth and any headroom for latency targets."
            .into(),
        Some(f) => format!(
            "First-order estimate, sized for a peak of {f} × the average rate (--peak-factor {f}). It \
             still leaves out bursts above that peak, redundancy (N+1), retries, growth and any \
             headroom for latency targets."
        ),
    }
}

pub fn render(rows: &[PlanRow], source: &str) -> String {
    let mut s = String::new();
    let (tput, f) = rows.first().map_or((0.0, None), |r| {
        (r.throughput_per_machine_rps, r.peak_factor)
    });
    let _ = writeln!(
        s,
        "Capacity plan at {tput:.3} proofs/s per machine ({source})\n"
    );
    let _ = writeln!(
        s,
        "| Workload | Daily volume | Window | Average rate (req/s) | Peak factor | Design rate (req/s) | Machines | Utilisation |"
    );
    let _ = writeln!(s, "|---|---:|---|---:|---:|---:|---:|---:|");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {} | {:.3} | {} | {:.0} % |",
            r.workload.name,
            group_thousands(r.workload.daily_volume),
            if r.workload.window.ends_with(" h") {
                r.workload.window.clone()
            } else {
                format!("{} ({} h)", r.workload.window, r.workload.window_hours)
            },
            r.average_rps,
            r.peak_factor.map_or("none".into(), |f| f.to_string()),
            r.design_rps,
            r.machines,
            r.utilization * 100.0
        );
    }
    let _ = writeln!(s, "\n{}", caveat(f));
    s
}

#[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87; the MSRV is 1.85
pub fn group_thousands(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Entry point of `enygma-loadgen plan`.
pub fn main(args: &crate::cli::PlanArgs) -> Result<()> {
    if let Some(rate) = &args.rate {
        return deployment_main(args, rate);
    }
    let (throughput, source) = match (args.throughput, &args.from_report) {
        (Some(x), _) => (x, "given with --throughput".to_string()),
        (None, Some(path)) => {
            let r = crate::output::read_json(path)?;
            let best = r
                .levels
                .iter()
                .max_by(|a, b| a.throughput_rps.total_cmp(&b.throughput_rps))
                .ok_or_else(|| anyhow::anyhow!("{} has no closed-loop levels", path.display()))?;
            (
                best.throughput_rps,
                format!(
                    "best level of {}: {} in flight on {}",
                    path.display(),
                    best.concurrency,
                    r.machine.cpu_model
                ),
            )
        }
        (None, None) => bail!("give --throughput X or --from-report report.json"),
    };
    let mut workloads = vec![chaps(), fedwire()];
    if let Some(daily) = args.daily {
        let (window, hours) = match (&args.window, args.hours) {
            (Some(w), _) => (w.clone(), parse_window(w)?),
            (None, Some(h)) => (format!("{h} h"), h),
            (None, None) => bail!("--daily needs --window HH:MM-HH:MM or --hours H"),
        };
        workloads.push(Workload {
            name: args.name.clone(),
            daily_volume: daily,
            window,
            window_hours: hours,
        });
    }
    let rows = workloads
        .iter()
        .map(|w| plan(w, throughput, args.peak_factor))
        .collect::<Result<Vec<_>>>()?;
    if args.json {
        let v = serde_json::json!({
            "throughput_per_machine_rps": throughput,
            "source": source,
            "peak_factor": args.peak_factor,
            "rows": rows,
            "caveat": caveat(args.peak_factor),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", render(&rows, &source));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Deployment plan (`--rate`): from what one replica sustained in a load test to the flags,
// resources, replica counts and autoscaler thresholds of deploy/kubernetes/.

/// What one replica sustained in a load test, and with which settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicaProfile {
    /// Proofs per second at the report's best closed-loop level.
    pub throughput_rps: f64,
    /// Requests in flight at that level.
    pub concurrency: usize,
    /// Proof slots.
    pub max_inflight: u32,
    /// Threads each proof has while every slot proves.
    pub prove_threads: u32,
    /// The server ran its default layout, named by neither thread flag: a slot per CPU, threads
    /// that follow the queue (a proof that starts alone gets every thread). The plan then sets
    /// no thread flags either, and the CPUs it gives a replica are its slots.
    pub default_layout: bool,
    /// p99 of the server's own prove time at that level (its `Server-Timing`).
    pub prove_p99_ms: f64,
    /// Highest RSS over all levels (the loaded process plus its proofs in flight).
    pub rss_peak_mb: f64,
    pub cpu_model: String,
    pub report: String,
}

/// The value of `--flag N` or `--flag=N` in a server command line.
fn flag_value(command: &str, flag: &str) -> Result<Option<u32>> {
    let words: Vec<&str> = command.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let value = if *w == flag {
            words.get(i + 1).copied()
        } else {
            w.strip_prefix(flag).and_then(|r| r.strip_prefix('='))
        };
        if let Some(v) = value {
            return v
                .parse()
                .map(Some)
                .map_err(|_| anyhow::anyhow!("{flag} {v:?} in the report's server command"));
        }
    }
    Ok(None)
}

/// The replica's settings from the report's server command (`--spawn-server`);
/// `max_inflight`/`prove_threads` override. A command that names neither flag ran the server's
/// default, a slot per CPU with threads that follow the queue; one that names one of them ran a pool per slot,
/// the other flag at its default (`--max-inflight 1`, `--prove-threads` = the machine's CPUs).
pub fn profile_from_report(
    report: &crate::report::Report,
    path: &str,
    max_inflight: Option<u32>,
    prove_threads: Option<u32>,
) -> Result<ReplicaProfile> {
    let command = report.settings.spawn_server.as_deref().unwrap_or("");
    let known = command.contains("enygma-server");
    if command.split_whitespace().any(|w| w == "--unlimited") {
        bail!("{path}: the server ran --unlimited (no cap, no queue): plan from a capped run");
    }
    let pick = |given: Option<u32>, flag: &str, default: u32| -> Result<u32> {
        match (given, flag_value(command, flag)?) {
            (Some(v), _) | (None, Some(v)) => Ok(v),
            (None, None) if known => Ok(default),
            (None, None) => {
                bail!("{path}: the report does not say how its server was started; give {flag}")
            }
        }
    };
    let cpus = report.machine.available_parallelism.max(1) as u32;
    let named = |given: Option<u32>, flag: &str| -> Result<bool> {
        Ok(given.is_some() || flag_value(command, flag)?.is_some())
    };
    let default_layout = known
        && !named(max_inflight, "--max-inflight")?
        && !named(prove_threads, "--prove-threads")?;
    let (max_inflight, prove_threads) = if default_layout {
        (cpus, 1)
    } else {
        (
            pick(max_inflight, "--max-inflight", 1)?,
            pick(prove_threads, "--prove-threads", cpus)?,
        )
    };
    let best = report
        .levels
        .iter()
        .max_by(|a, b| a.throughput_rps.total_cmp(&b.throughput_rps))
        .ok_or_else(|| anyhow::anyhow!("{path} has no closed-loop levels"))?;
    if best.throughput_rps <= 0.0 {
        bail!("{path}: no level answered a proof");
    }
    let prove_p99_ms = best
        .internal
        .internal_prove_ms
        .as_ref()
        .map(|s| s.p99)
        .ok_or_else(|| {
            anyhow::anyhow!("{path}: no Server-Timing prove times (not an enygma-server report?)")
        })?;
    let rss_peak_mb = report
        .levels
        .iter()
        .filter_map(|l| l.rss_peak_mb)
        .fold(f64::NAN, f64::max);
    if !rss_peak_mb.is_finite() {
        bail!("{path}: no RSS samples (run with --spawn-server or --server-pid)");
    }
    Ok(ReplicaProfile {
        throughput_rps: best.throughput_rps,
        concurrency: best.concurrency,
        max_inflight,
        prove_threads,
        default_layout,
        prove_p99_ms,
        rss_peak_mb,
        cpu_model: report.machine.cpu_model.clone(),
        report: path.to_string(),
    })
}

/// `chaps`, `fedwire` (their daily average over the operating window) or a rate in req/s.
pub fn parse_rate(s: &str) -> Result<(String, f64)> {
    let average = |w: Workload| (w.name.clone(), w.average_rps());
    match s.trim().to_ascii_lowercase().as_str() {
        "chaps" => Ok(average(chaps())),
        "fedwire" => Ok(average(fedwire())),
        n => match n.parse::<f64>() {
            Ok(r) if r > 0.0 && r.is_finite() => Ok((format!("{r} req/s"), r)),
            _ => bail!(
                "--rate {s:?}: expected chaps, fedwire or a positive number of requests per second"
            ),
        },
    }
}

/// Memory limit headroom over the measured peak RSS (allocator slack, request bodies, a
/// different mix of statements in flight).
const MEMORY_HEADROOM: f64 = 1.25;
/// Replicas never go below this: the PodDisruptionBudget lets one go at a time.
const MIN_REPLICAS: u64 = 2;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeploymentPlan {
    pub target: String,
    pub average_rps: f64,
    pub peak_factor: f64,
    /// average × peak factor.
    pub design_rps: f64,
    pub utilization: f64,
    pub replica: ReplicaProfile,
    /// CPU request and limit: --max-inflight × --prove-threads.
    pub cpus: u32,
    /// Memory request and limit, MiB: peak RSS × headroom, rounded up to 64 MiB.
    pub memory_mib: u64,
    pub queue_timeout_s: f64,
    /// What one replica serves within the queue timeout: deeper places would only time out.
    pub queue_depth: u64,
    /// Slowest answer: the queue timeout plus the p99 prove time.
    pub latency_bound_s: f64,
    /// ⌈average / (throughput × utilization)⌉, at least 2: the ScaledObject's minReplicaCount.
    pub min_replicas: u64,
    /// ⌈design rate / (throughput × utilization)⌉: the replicas at the peak (KEDA's fallback).
    pub peak_replicas: u64,
    /// peak + 1, so that the peak is still served while one replica is disrupted.
    pub max_replicas: u64,
    /// Waiting + running proofs per replica: utilization × --max-inflight.
    pub threshold_in_flight: f64,
    /// Proofs started + shed per second per replica: utilization × sustained throughput.
    pub threshold_demand: f64,
    /// The CPU HPA's averageUtilization, percent.
    pub hpa_cpu_percent: u32,
}

fn ceil_replicas(rate: f64, per_replica: f64) -> u64 {
    // Tolerate float noise so that an exact fit does not round up to one more replica.
    ((rate / per_replica) - 1e-9).ceil().max(1.0) as u64
}

/// Two decimals, without float noise, as the manifests write thresholds.
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

pub fn deployment_plan(
    target: &str,
    average_rps: f64,
    peak_factor: Option<f64>,
    replica: ReplicaProfile,
    queue_timeout: std::time::Duration,
    utilization: f64,
) -> Result<DeploymentPlan> {
    let peak_factor = peak_factor.unwrap_or(1.0);
    if !(peak_factor >= 1.0 && peak_factor.is_finite()) {
        bail!("--peak-factor must be >= 1 (peak rate / average rate)");
    }
    if !(utilization > 0.0 && utilization <= 1.0) {
        bail!("--utilization must be in (0, 1]");
    }
    let queue_timeout_s = queue_timeout.as_secs_f64();
    if queue_timeout_s <= 0.0 {
        bail!("--queue-timeout must be positive");
    }
    let design_rps = average_rps * peak_factor;
    let per_replica = replica.throughput_rps * utilization;
    let peak_replicas = ceil_replicas(design_rps, per_replica).max(MIN_REPLICAS);
    let min_replicas = ceil_replicas(average_rps, per_replica).max(MIN_REPLICAS);
    let memory_mib = ((replica.rss_peak_mb * MEMORY_HEADROOM) / 64.0).ceil() as u64 * 64;
    let queue_depth = ((replica.throughput_rps * queue_timeout_s).floor() as u64)
        .max(replica.max_inflight as u64);
    Ok(DeploymentPlan {
        target: target.to_string(),
        average_rps,
        peak_factor,
        design_rps,
        utilization,
        cpus: replica.max_inflight * replica.prove_threads,
        memory_mib,
        queue_timeout_s,
        queue_depth,
        latency_bound_s: queue_timeout_s + replica.prove_p99_ms / 1000.0,
        min_replicas,
        peak_replicas,
        max_replicas: peak_replicas + 1,
        threshold_in_flight: round2(utilization * replica.max_inflight as f64),
        threshold_demand: round2(utilization * replica.throughput_rps),
        hpa_cpu_percent: (utilization * 100.0).round() as u32,
        replica,
    })
}

/// `10s`, `4.5s`: how the manifests write a duration (the server parses both).
fn secs(s: f64) -> String {
    format!("{}s", round2(s))
}

pub fn render_deployment(p: &DeploymentPlan) -> String {
    let r = &p.replica;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Deployment plan: {}, {:.3} req/s on average x peak factor {} = {:.3} req/s to serve\n",
        p.target, p.average_rps, p.peak_factor, p.design_rps
    );
    let _ = writeln!(
        s,
        "One replica ({}: best level, {} in flight, on {}): {:.3} proofs/s, p99 prove {:.0} ms, peak RSS {:.0} MB",
        r.report, r.concurrency, r.cpu_model, r.throughput_rps, r.prove_p99_ms, r.rss_peak_mb
    );
    let _ = writeln!(
        s,
        "  flags:     {}--queue-depth {} --queue-timeout {}",
        thread_flags(r),
        p.queue_depth,
        secs(p.queue_timeout_s)
    );
    let _ = writeln!(
        s,
        "             (the queue holds what one replica serves within the timeout; slowest answer {:.1} s = timeout + p99 prove)",
        p.latency_bound_s
    );
    let _ = writeln!(
        s,
        "  resources: cpu {} ({}), memory {}Mi (peak RSS x {MEMORY_HEADROOM}, for the statements that report's server hosted); requests = limits",
        p.cpus,
        if r.default_layout {
            "= the slots: the default gives a slot per CPU"
        } else {
            "= max-inflight x prove-threads"
        },
        p.memory_mib
    );
    let _ = writeln!(
        s,
        "\nReplicas, each planned at {:.0} % of its sustained rate ({:.3} proofs/s):",
        p.utilization * 100.0,
        r.throughput_rps * p.utilization
    );
    let _ = writeln!(
        s,
        "  {} for the average, {} for the peak: ScaledObject minReplicaCount {}, maxReplicaCount {} (peak + 1 for a disrupted replica), fallback {}",
        p.min_replicas, p.peak_replicas, p.min_replicas, p.max_replicas, p.peak_replicas
    );
    let _ = writeln!(s, "\nScaledObject thresholds (per replica, AverageValue):");
    let _ = writeln!(
        s,
        "  in-flight (waiting + running proofs): {} = {:.0} % of {} slots",
        p.threshold_in_flight,
        p.utilization * 100.0,
        r.max_inflight
    );
    let _ = writeln!(
        s,
        "  demand (proofs started + shed per second): {} = {:.0} % of {:.3} proofs/s",
        p.threshold_demand,
        p.utilization * 100.0,
        r.throughput_rps
    );
    let _ = writeln!(
        s,
        "  without KEDA (overlays/hpa): CPU averageUtilization {} %",
        p.hpa_cpu_percent
    );
    let _ = writeln!(
        s,
        "\nThe same as an overlay: add --kustomize. Not included: growth, and bursts above the peak factor. A replica hosting fewer statements (--circuits) needs less memory: plan from its own report."
    );
    s
}

/// `--max-inflight N --prove-threads T ` for a pool per slot; nothing for the default.
fn thread_flags(r: &ReplicaProfile) -> String {
    if r.default_layout {
        String::new()
    } else {
        format!(
            "--max-inflight {} --prove-threads {} ",
            r.max_inflight, r.prove_threads
        )
    }
}

/// The overlay's environment entries for the thread flags: their values for a pool per slot;
/// for the default, deletions of whatever the base sets.
fn thread_env(r: &ReplicaProfile) -> String {
    let entry = |name: &str, value: String| {
        format!("                  - name: {name}\n                    {value}\n")
    };
    if r.default_layout {
        entry("ENYGMA_MAX_INFLIGHT", "$patch: delete".into())
            + &entry("ENYGMA_PROVE_THREADS", "$patch: delete".into())
    } else {
        entry(
            "ENYGMA_MAX_INFLIGHT",
            format!("value: \"{}\"", r.max_inflight),
        ) + &entry(
            "ENYGMA_PROVE_THREADS",
            format!("value: \"{}\"", r.prove_threads),
        )
    }
}

/// A kustomize overlay on top of deploy/kubernetes/overlays/keda with the plan's settings.
pub fn render_kustomization(p: &DeploymentPlan, command: &str) -> String {
    let r = &p.replica;
    let layout = if r.default_layout {
        format!(
            "the default admission, {} slots, threads that follow the queue",
            r.max_inflight
        )
    } else {
        format!(
            "--max-inflight {} --prove-threads {}",
            r.max_inflight, r.prove_threads
        )
    };
    format!(
        r#"# Generated by `{command}`: do not edit, rerun it.
# {target}: {avg:.3} req/s on average x {pf} = {design:.3} req/s; one replica sustained {tput:.3} proofs/s
# ({layout}, {cpu}), planned at {u:.0} %.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../keda
patches:
  - target:
      group: apps
      kind: Deployment
      name: enygma-server
    patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: enygma-server
      spec:
        template:
          spec:
            containers:
              - name: enygma-server
                env:
{thread_env}                  - name: ENYGMA_QUEUE_DEPTH
                    value: "{qd}"
                  - name: ENYGMA_QUEUE_TIMEOUT
                    value: {qt}
                resources:
                  requests:
                    cpu: "{cpus}"
                    memory: {mem}Mi
                  limits:
                    cpu: "{cpus}"
                    memory: {mem}Mi
  - target:
      group: keda.sh
      kind: ScaledObject
      name: enygma-server
    patch: |-
      - op: replace
        path: /spec/minReplicaCount
        value: {min}
      - op: replace
        path: /spec/maxReplicaCount
        value: {max}
      - op: replace
        path: /spec/fallback/replicas
        value: {peak}
      - op: replace
        path: /spec/triggers/0/metadata/threshold
        value: "{t_in}"
      - op: replace
        path: /spec/triggers/1/metadata/threshold
        value: "{t_demand}"
"#,
        target = p.target,
        avg = p.average_rps,
        pf = p.peak_factor,
        design = p.design_rps,
        tput = r.throughput_rps,
        thread_env = thread_env(r),
        cpu = r.cpu_model,
        u = p.utilization * 100.0,
        min = p.min_replicas,
        max = p.max_replicas,
        peak = p.peak_replicas,
        qd = p.queue_depth,
        qt = secs(p.queue_timeout_s),
        cpus = p.cpus,
        mem = p.memory_mib,
        t_in = p.threshold_in_flight,
        t_demand = p.threshold_demand,
    )
}

fn deployment_main(args: &crate::cli::PlanArgs, rate: &str) -> Result<()> {
    let path = args
        .from_report
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("--rate needs --from-report report.json"))?;
    let report = crate::output::read_json(path)?;
    let shown = path.display().to_string();
    let replica = profile_from_report(&report, &shown, args.max_inflight, args.prove_threads)?;
    let (target, average) = parse_rate(rate)?;
    let plan = deployment_plan(
        &target,
        average,
        args.peak_factor,
        replica,
        args.queue_timeout,
        args.utilization,
    )?;
    if args.kustomize {
        let command = std::iter::once("enygma-loadgen".to_string())
            .chain(std::env::args().skip(1))
            .collect::<Vec<_>>()
            .join(" ");
        print!("{}", render_kustomization(&plan, &command));
    } else if args.json {
        println!("{}", serde_json::to_string_pretty(&plan)?);
    } else {
        print!("{}", render_deployment(&plan));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chaps_and_fedwire_rates() {
        let c = plan(&chaps(), 1.0, None).unwrap();
        assert!((c.average_rps - 210_483.0 / 43_200.0).abs() < 1e-12);
        assert!((c.average_rps - 4.8723).abs() < 1e-4);
        assert_eq!(c.machines, 5);
        let f = plan(&fedwire(), 1.0, None).unwrap();
        assert!((f.average_rps - 869_187.0 / 79_200.0).abs() < 1e-12);
        assert!((f.average_rps - 10.9746).abs() < 1e-4);
        assert_eq!(f.machines, 11);
    }

    #[test]
    fn machines_round_up_and_peak_factor_scales() {
        // 4.872 req/s at 1.6/s per machine: 3.05 → 4 machines.
        let c = plan(&chaps(), 1.6, None).unwrap();
        assert_eq!(c.machines, 4);
        assert!((c.utilization - c.average_rps / 6.4).abs() < 1e-12);
        let p = plan(&chaps(), 1.6, Some(3.0)).unwrap();
        assert!((p.design_rps - 3.0 * c.average_rps).abs() < 1e-12);
        assert_eq!(p.machines, 10); // 14.617 / 1.6 = 9.14
                                    // Exact fit: 43,200 a day over 12 h is 1/s: one machine at 1/s, not two.
        let w = Workload {
            name: "x".into(),
            daily_volume: 43_200,
            window: "12 h".into(),
            window_hours: 12.0,
        };
        assert_eq!(plan(&w, 1.0, None).unwrap().machines, 1);
        assert_eq!(plan(&w, 1000.0, None).unwrap().machines, 1);
        assert!(plan(&w, 0.0, None).is_err());
        assert!(plan(&w, 1.0, Some(0.5)).is_err());
    }

    #[test]
    fn windows_and_text() {
        assert_eq!(parse_window("06:00-18:00").unwrap(), 12.0);
        assert_eq!(parse_window("21:00-19:00").unwrap(), 22.0);
        assert_eq!(parse_window("9-17:30").unwrap(), 8.5);
        assert!(parse_window("25:00-01:00").is_err());
        assert_eq!(group_thousands(869_187), "869,187");
        assert_eq!(group_thousands(1_000), "1,000");
        assert_eq!(group_thousands(12), "12");
        let txt = render(&[plan(&chaps(), 1.6, None).unwrap()], "given");
        assert!(txt.contains("| CHAPS | 210,483 | 06:00-18:00 (12 h) | 4.872 | none | 4.872 | 4 |"));
        assert!(txt.contains("First-order estimate"));
        assert!(txt.contains("ignores intraday peaks"));
        assert!(caveat(Some(2.0)).contains("peak of 2"));
    }

    /// The sweep-2x1 report of the 2026-12-03 AMD EPYC A/B, committed in benches/results/.
    const REPORT: &str = "benches/results/2026-12-03-amd-epyc/sweep-2x1/report.json";

    fn repo() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn epyc() -> ReplicaProfile {
        let r = crate::output::read_json(&repo().join(REPORT)).unwrap();
        profile_from_report(&r, REPORT, None, None).unwrap()
    }

    #[test]
    fn replica_profile_from_a_real_report() {
        let p = epyc();
        assert_eq!((p.max_inflight, p.prove_threads), (2, 1));
        assert_eq!((p.throughput_rps, p.concurrency), (3.25, 8));
        assert_eq!(p.prove_p99_ms, 707.1);
        assert_eq!(p.rss_peak_mb.round(), 394.0);
        assert_eq!(p.cpu_model, "AMD EPYC");
    }

    #[test]
    fn replica_settings_from_the_server_command() {
        let base = crate::output::read_json(&repo().join(REPORT)).unwrap();
        let with = |cmd: Option<&str>| {
            let mut r = base.clone();
            r.settings.spawn_server = cmd.map(str::to_string);
            r
        };
        let p = |cmd, mi, pt| profile_from_report(&with(cmd), "r", mi, pt);
        // The server's default when the command names no thread flag: a slot per CPU, threads
        // that follow the queue, so a thread per slot when all prove.
        let d = p(Some("target/release/enygma-server --port 3003"), None, None).unwrap();
        assert_eq!(
            (d.max_inflight, d.prove_threads, d.default_layout),
            (2, 1, true)
        );
        // One flag named: a pool per slot, the other at its former default.
        let one = p(Some("enygma-server --max-inflight 1"), None, None).unwrap();
        assert_eq!(
            (one.max_inflight, one.prove_threads, one.default_layout),
            (1, 2, false)
        );
        let e = p(
            Some("enygma-server --max-inflight=4 --prove-threads 3"),
            None,
            None,
        )
        .unwrap();
        assert_eq!((e.max_inflight, e.prove_threads), (4, 3));
        assert_eq!(
            p(Some("enygma-server --max-inflight 4"), Some(6), None)
                .unwrap()
                .max_inflight,
            6
        );
        // Not an enygma-server command (the reference, a server started by hand): no guessing.
        assert!(p(Some("/tmp/ref-bin/server"), None, None).is_err());
        assert!(p(None, None, None).is_err());
        assert!(p(None, Some(2), Some(1)).is_ok());
        assert!(p(Some("enygma-server --unlimited"), Some(2), Some(1)).is_err());
        assert!(p(Some("enygma-server --max-inflight two"), None, None).is_err());
    }

    #[test]
    fn rates() {
        let (n, r) = parse_rate("CHAPS").unwrap();
        assert_eq!(n, "CHAPS");
        assert!((r - 4.8723).abs() < 1e-4);
        assert!((parse_rate("fedwire").unwrap().1 - 10.9746).abs() < 1e-4);
        assert_eq!(
            parse_rate("12.5").unwrap(),
            ("12.5 req/s".to_string(), 12.5)
        );
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("swift").is_err());
    }

    #[test]
    fn deployment_plans_for_chaps_and_fedwire() {
        let t = std::time::Duration::from_secs(10);
        let c = deployment_plan(
            "CHAPS",
            parse_rate("chaps").unwrap().1,
            Some(2.0),
            epyc(),
            t,
            0.8,
        )
        .unwrap();
        // 4.872 / 2.6 = 1.87 -> 2; 9.745 / 2.6 = 3.75 -> 4.
        assert_eq!((c.min_replicas, c.peak_replicas, c.max_replicas), (2, 4, 5));
        assert_eq!((c.cpus, c.memory_mib, c.queue_depth), (2, 512, 32));
        assert_eq!(
            (c.threshold_in_flight, c.threshold_demand, c.hpa_cpu_percent),
            (1.6, 2.6, 80)
        );
        assert!((c.latency_bound_s - 10.7071).abs() < 1e-9);
        let f = deployment_plan(
            "Fedwire",
            parse_rate("fedwire").unwrap().1,
            Some(2.0),
            epyc(),
            t,
            0.8,
        )
        .unwrap();
        // 10.975 / 2.6 = 4.22 -> 5; 21.949 / 2.6 = 8.44 -> 9.
        assert_eq!(
            (f.min_replicas, f.peak_replicas, f.max_replicas),
            (5, 9, 10)
        );
        // Never fewer than 2; an exact fit does not round up; the queue holds at least the slots.
        let tiny = deployment_plan(
            "x",
            0.1,
            None,
            epyc(),
            std::time::Duration::from_millis(100),
            1.0,
        )
        .unwrap();
        assert_eq!(
            (tiny.min_replicas, tiny.peak_replicas, tiny.queue_depth),
            (2, 2, 2)
        );
        let exact = deployment_plan("x", 3.25 * 3.0, None, epyc(), t, 1.0).unwrap();
        assert_eq!(exact.peak_replicas, 3);
        assert!(deployment_plan("x", 1.0, Some(0.5), epyc(), t, 0.8).is_err());
        assert!(deployment_plan("x", 1.0, None, epyc(), t, 1.5).is_err());
        assert!(deployment_plan("x", 1.0, None, epyc(), std::time::Duration::ZERO, 0.8).is_err());
        let text = render_deployment(&c);
        assert!(text
            .contains("--max-inflight 2 --prove-threads 1 --queue-depth 32 --queue-timeout 10s"));
        assert!(text.contains("minReplicaCount 2, maxReplicaCount 5"));
    }

    /// The default server's report of the 2026-12-06 AMD EPYC run (no thread flags, tables built
    /// for the traffic), committed in benches/results/.
    const DEFAULT_REPORT: &str =
        "benches/results/2026-12-06-amd-epyc-adaptive-threads/capped/report.json";

    /// deploy/kubernetes/overlays/{chaps,fedwire} are this planner's output for the committed
    /// report of the default: the overlays CI renders and validates are the plan's, not
    /// hand-copied numbers, and set no thread flags.
    #[test]
    fn committed_overlays_are_the_plans() {
        let report = crate::output::read_json(&repo().join(DEFAULT_REPORT)).unwrap();
        let default = profile_from_report(&report, DEFAULT_REPORT, None, None).unwrap();
        assert!(default.default_layout);
        for rate in ["chaps", "fedwire"] {
            let command = format!(
                "enygma-loadgen plan --from-report {DEFAULT_REPORT} --rate {rate} --peak-factor 2 --kustomize"
            );
            let (name, avg) = parse_rate(rate).unwrap();
            let plan = deployment_plan(
                &name,
                avg,
                Some(2.0),
                default.clone(),
                std::time::Duration::from_secs(10),
                0.8,
            )
            .unwrap();
            let path = repo().join(format!(
                "deploy/kubernetes/overlays/{rate}/kustomization.yaml"
            ));
            let committed = std::fs::read_to_string(&path).unwrap();
            assert_eq!(
                committed,
                render_kustomization(&plan, &command),
                "{}: rerun `{command}`",
                path.display()
            );
        }
    }
}
