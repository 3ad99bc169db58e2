//! Command-line arguments of every subcommand.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use enygma_prover::statements;

use crate::client::HttpClient;
use crate::mix::{self, Targets};
use crate::schedule::ScheduleSpec;
use crate::token::{Secret, TokenArgs};
use enygma_formats::duration::parse_duration;

#[derive(Parser, Debug)]
#[command(
    name = "enygma-loadgen",
    version,
    about = "Load generator, A/B runner and capacity planner for Enygma prove services",
    long_about = "Load generator, A/B runner and capacity planner for Enygma prove services \
(enygma-server or the reference rayls-sovereign-gnark-api).\n\n\
Examples:\n  \
enygma-loadgen run --url http://127.0.0.1:3003 --requests reqs/ --spawn-server 'target/release/enygma-server --keys-dir keys' --out out/\n  \
enygma-loadgen run --url http://127.0.0.1:3003 --requests reqs/ --server-pid 1234 --levels 1,2,4 --duration 20s --soak 4 --open-rate 0.5,1 --out out/\n  \
enygma-loadgen ab --requests reqs/ --server-cmd target/release/enygma-server --keys-dir keys\n  \
enygma-loadgen plan --throughput 1.6 --peak-factor 2"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run closed-loop levels, an optional soak and optional open-loop rates against one server.
    Run(RunArgs),
    /// Start the server once `--unlimited` and once with its capped defaults, run the same
    /// schedule on each (and on the reference if given), sweep --max-inflight x --prove-threads,
    /// and write both reports and a side-by-side table.
    ///
    /// Variants run one after the other on the same port; each gets OUT/<variant>/ with its
    /// report.json, report.md, chart.svg, rss.svg, requests.csv, rss.csv and server.log. OUT gets
    /// ab.md (side by side: throughput, p50, p99, peak RSS per level; the sweep; the best
    /// setting), ab.json, ab.svg and command.txt. `benches/run_load.sh` builds everything in
    /// release mode and runs this with the full schedule.
    Ab(AbArgs),
    /// Several named callers at once, each with its own bearer token and its own closed or open
    /// loop, for the whole run: each caller's throughput, p50/p99 latency and 503s, and the total.
    ///
    /// Callers come from `--caller NAME:TOKEN:SCHEDULE` (repeatable) and `--callers FILE` (one
    /// `NAME TOKEN SCHEDULE` a line); TOKEN may be `env:VAR`; SCHEDULE is `closed=N` (N requests
    /// in flight) or `open=R/s` (Poisson arrivals). OUT gets report.json, report.md,
    /// requests.csv and command.txt (tokens replaced by ***). `benches/fair_shares.sh` runs a
    /// flooding caller beside a light one under fair and FIFO admission.
    Callers(CallersArgs),
    /// A gateway that abandons a request after a timeout and sends it again: `--concurrency`
    /// distinct requests in flight, each sent again after --retry-after-timeout without an answer
    /// (or after a 503, 504 or 429) up to --max-retries times, with --idempotency-keys under one
    /// Idempotency-Key per distinct request.
    ///
    /// Reports the proofs the server computed per distinct request (its
    /// enygma_proofs_started_total before the run and once it is idle after it), the goodput
    /// (distinct requests answered with a proof per second), attempts per distinct request and
    /// latency from the first send. OUT gets report.json, report.md and command.txt.
    /// `benches/retries.sh` runs it with and without keys on one server.
    Retries(RetriesArgs),
    /// Machines needed for a daily volume within an operating window (CHAPS and Fedwire built in).
    Plan(PlanArgs),
}

fn dur(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

/// `--endpoint`: a path (`/generateProofTransfer-6`), or a statement instance's key stem
/// (`transfer-k6`, see `enygma_prover::statements`) for its proving path.
fn endpoint(s: &str) -> Result<String, String> {
    if s.starts_with('/') {
        return Ok(s.to_string());
    }
    statements::by_stem(s)
        .map(|instance| instance.prove_path())
        .ok_or_else(|| {
            let stems = statements::key_stems();
            format!(
                "{s:?} is neither a path (/...) nor a key stem ({})",
                stems.join(", ")
            )
        })
}

/// A comma-separated list given as one argument (`1,2,4,8,16`).
#[derive(Debug, Clone, PartialEq)]
pub struct List<T>(pub Vec<T>);

/// `1,2,4,8,16`, or `none` for no closed-loop levels.
fn levels(s: &str) -> Result<List<usize>, String> {
    let s = s.trim();
    if s.is_empty() || s.eq_ignore_ascii_case("none") {
        return Ok(List(Vec::new()));
    }
    s.split(',')
        .map(|x| match x.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "invalid level {x:?}: expected positive integers like 1,2,4,8,16"
            )),
        })
        .collect::<Result<_, _>>()
        .map(List)
}

fn rates(s: &str) -> Result<List<f64>, String> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| match x.trim().parse::<f64>() {
            Ok(r) if r > 0.0 && r.is_finite() => Ok(r),
            _ => Err(format!(
                "invalid rate {x:?}: expected requests per second > 0"
            )),
        })
        .collect::<Result<_, _>>()
        .map(List)
}

/// How the load generator talks to the server; shared by `run`, `ab` and `callers`.
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// Per-request timeout (counted as error `timeout`).
    #[arg(long, default_value = "300s", value_parser = dur)]
    pub timeout: Duration,
    /// Open loop: arrivals beyond this many outstanding requests (of one caller) are not sent
    /// and are counted as error `client_dropped`.
    #[arg(long, default_value_t = 512)]
    pub max_outstanding: usize,
    /// Closed loop: retry a shed request (503 or 429) at once instead of first waiting its
    /// `Retry-After`, like a gateway without back-off. A retry storm measures the client as
    /// much as the server: on 2 cores it shares their CPU with the proofs.
    #[arg(long)]
    pub ignore_retry_after: bool,
    /// Readiness route polled before load starts (falls back to /healthcheck on 404).
    #[arg(long, default_value = "/readyz")]
    pub ready_path: String,
    /// How long to wait for the server to be ready (key loading, or creation the first time).
    #[arg(long, default_value = "600s", value_parser = dur)]
    pub ready_timeout: Duration,
}

/// What load to offer; shared by `run` and `ab`.
#[derive(Args, Debug, Clone)]
pub struct ScheduleArgs {
    /// Route to POST request bodies to: a path, or the key stem of a statement instance
    /// (transfer-k6, withdraw-k4, ...) for its proving route.
    #[arg(long, default_value = statements::DEFAULT_INSTANCE, value_parser = endpoint)]
    pub endpoint: String,
    /// Directory of request bodies (*.json, e.g. from `enygma gen-request`), or a single file.
    /// Workers cycle through them round-robin. Not with --mix.
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "mix",
        conflicts_with = "mix"
    )]
    pub requests: Option<PathBuf>,
    /// A weighted mix of statement instances in one run instead of --endpoint and --requests:
    /// `transfer-k6=8,join-split-enygma=1` (key stems, weight 1 when omitted). Each instance's
    /// requests are drawn from a pool its own generator makes (--mix-pool per instance, from
    /// --seed); the routes follow a smooth weighted round robin. The report's notes give each
    /// instance's counts and latency per phase.
    #[arg(long, value_name = "STEM=W[,...]", value_parser = mix::parse_mix, conflicts_with = "endpoint")]
    pub mix: Option<mix::Mix>,
    /// With --mix: requests generated per instance.
    #[arg(long, default_value_t = 16, requires = "mix")]
    pub mix_pool: usize,
    /// Closed-loop levels (requests in flight), or `none`.
    #[arg(long, default_value = "1,2,4,8,16", value_parser = levels)]
    pub levels: List<usize>,
    /// How long each level (and each open-loop rate) is measured, after the warm-up.
    #[arg(long, default_value = "60s", value_parser = dur)]
    pub duration: Duration,
    /// Warm-up before each phase; its requests are reported separately and excluded from stats.
    #[arg(long, default_value = "5s", value_parser = dur)]
    pub warmup: Duration,
    /// Also run a soak at this many requests in flight after the levels.
    #[arg(long, value_name = "LEVEL")]
    pub soak: Option<usize>,
    /// How long the soak is measured (after --warmup).
    #[arg(long, default_value = "300s", value_parser = dur)]
    pub soak_duration: Duration,
    /// Soak reporting window.
    #[arg(long, default_value = "30s", value_parser = dur)]
    pub window: Duration,
    /// Open-loop Poisson arrival rate(s) in requests/s, e.g. `0.5` or `0.5,1,1.5`; each is run
    /// for --duration after --warmup. Latency is measured from the scheduled send time.
    #[arg(long, value_name = "R[,R...]", value_parser = rates)]
    pub open_rate: Option<List<f64>>,
    /// Seed of the Poisson schedule.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub client: ClientArgs,
    /// Requests sent one at a time once the server is ready and before the first phase, and not
    /// counted: the reference loads a circuit's keys on its first request (about 9 s), which
    /// would otherwise fall into the first level; ours loads them before `/readyz` answers.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub prime: usize,
    /// After --prime, go on sending requests one at a time until the server's metric SELECTOR
    /// reads above zero, e.g. `enygma_table_bytes{statement="transfer",k="6"}` (that instance's
    /// precomputed tables built for its traffic): the warm-up of a server that builds state for
    /// the traffic it sees. Skipped for a server that does not export SELECTOR (the reference).
    #[arg(long, value_name = "SELECTOR")]
    pub prime_until: Option<String>,
    /// The most requests --prime-until sends; the run goes on (with a note) if SELECTOR is still
    /// zero then.
    #[arg(
        long,
        default_value_t = 2000,
        value_name = "N",
        requires = "prime_until"
    )]
    pub prime_until_limit: usize,
    /// Prometheus route scraped before and after each phase to cross-check the served count
    /// (`none` to skip).
    #[arg(long, default_value = "/metrics")]
    pub metrics_path: String,
    /// Selector of the server's counter of 200 answers, e.g.
    /// `enygma_http_requests_total{status="200"}`; default: found heuristically.
    #[arg(long, value_name = "SELECTOR")]
    pub served_metric: Option<String>,
    /// RSS sampling interval.
    #[arg(long, default_value = "100ms", value_parser = dur)]
    pub rss_interval: Duration,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub token: TokenArgs,
}

impl ScheduleArgs {
    /// The routes `--mix`, or `--endpoint` with `--requests`, name.
    pub fn targets(&self, client: &HttpClient) -> anyhow::Result<Targets> {
        match (&self.mix, &self.requests) {
            (Some(mix), _) => Targets::mix(client, &mix.0, self.mix_pool, self.seed),
            (None, Some(requests)) => Targets::single(client, &self.endpoint, requests),
            (None, None) => anyhow::bail!("give --requests (with --endpoint) or --mix"),
        }
    }
}

impl ScheduleArgs {
    pub fn spec(&self) -> ScheduleSpec {
        ScheduleSpec {
            levels: self.levels.0.clone(),
            duration: self.duration,
            warmup: self.warmup,
            soak: self.soak,
            soak_duration: self.soak_duration,
            window: self.window,
            open_rates: self.open_rate.clone().map(|l| l.0).unwrap_or_default(),
        }
    }

    pub fn metrics_path(&self) -> Option<&str> {
        let p = self.metrics_path.trim();
        (!p.is_empty() && !p.eq_ignore_ascii_case("none")).then_some(p)
    }
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Base URL of the service (plain http).
    #[arg(long, default_value = "http://127.0.0.1:3003")]
    pub url: String,
    #[command(flatten)]
    pub schedule: ScheduleArgs,
    /// Sample this process's RSS (VmRSS from /proc/PID/status).
    #[arg(long, value_name = "PID", conflicts_with = "spawn_server")]
    pub server_pid: Option<u32>,
    /// Start the server with this shell command (run as `exec CMD`, so give the binary itself,
    /// not `cargo run`), sample its RSS, stop it at the end. Its output goes to OUT/server.log.
    #[arg(long, value_name = "CMD")]
    pub spawn_server: Option<String>,
    /// Output directory (created): report.json, report.md, chart.svg, rss.svg, requests.csv, rss.csv.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Free-text label stored in the report.
    #[arg(long)]
    pub label: Option<String>,
}

/// `--variant NAME=FLAGS`: a server setting of the A/B runner.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedVariant {
    /// Its directory and column.
    pub name: String,
    pub flags: String,
}

fn named_variant(s: &str) -> Result<NamedVariant, String> {
    let (name, flags) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=FLAGS (FLAGS may be empty)"))?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(format!(
            "variant name {name:?}: letters, digits, '.', '_' and '-' only (it names a directory)"
        ));
    }
    Ok(NamedVariant {
        name: name.to_string(),
        flags: flags.trim().to_string(),
    })
}

impl AbArgs {
    /// The sweep's settings: --sweep, else `1x2,2x1,4x1` for A and B and none for named ones.
    pub fn sweep(&self) -> &str {
        match &self.sweep {
            Some(sweep) => sweep,
            None if self.variants.is_empty() => "1x2,2x1,4x1",
            None => "none",
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct AbArgs {
    #[command(flatten)]
    pub schedule: ScheduleArgs,
    /// The server binary (or a command prefix); each variant appends
    /// `--bind B --port P --keys-dir K` and its own flags.
    #[arg(
        long,
        default_value = "target/release/enygma-server",
        value_name = "CMD"
    )]
    pub server_cmd: String,
    #[arg(long, default_value = "keys", value_name = "DIR")]
    pub keys_dir: PathBuf,
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    #[arg(long, default_value_t = 3003)]
    pub port: u16,
    /// Extra arguments for every variant of the server.
    #[arg(
        long,
        default_value = "",
        value_name = "ARGS",
        allow_hyphen_values = true
    )]
    pub server_args: String,
    /// A named server setting, `NAME=FLAGS`, repeatable: the named settings run instead of
    /// `unlimited` and `capped`, each with its flags after --server-args (none: the defaults);
    /// the first is the baseline of the ratios. E.g. `--variant default= --variant
    /// '2x1-pre=--max-inflight 2 --prove-threads 1 --precompute transfer-k6'`.
    #[arg(
        long = "variant",
        value_name = "NAME=FLAGS",
        value_parser = named_variant,
        allow_hyphen_values = true
    )]
    pub variants: Vec<NamedVariant>,
    /// Run the settings (A and B, or the named ones) this many times, alternated A B A B ...,
    /// so that each sees the same drift of the machine; ab.md then combines each level across
    /// the rounds (median, least and most, and the ratios of the medians).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Prime every server until the endpoint instance's precomputed MSM tables are resident:
    /// --prime-until with `enygma_table_bytes` of the instance's statement and k.
    #[arg(long, conflicts_with_all = ["prime_until", "mix"])]
    pub prime_until_tables: bool,
    /// `--max-inflight x --prove-threads` settings to sweep after A and B, e.g. `1x2,2x1,4x1`,
    /// or `none` [default: 1x2,2x1,4x1; none with --variant].
    #[arg(long)]
    pub sweep: Option<String>,
    /// Extra arguments for the sweep variants only, after their `--max-inflight x
    /// --prove-threads`: e.g. `--precompute transfer-k6`, to hold the default (A and B, with
    /// --server-args only) against explicit settings with their best flags.
    #[arg(
        long,
        default_value = "",
        value_name = "ARGS",
        allow_hyphen_values = true
    )]
    pub sweep_args: String,
    /// Levels for the sweep runs (default: --levels).
    #[arg(long, value_parser = levels)]
    pub sweep_levels: Option<List<usize>>,
    /// Run the soak (if --soak) on the sweep runs too (default: only on A and B).
    #[arg(long)]
    pub sweep_soak: bool,
    /// Command that starts the reference service (third column), e.g. its built binary.
    #[arg(long, value_name = "CMD")]
    pub reference_cmd: Option<String>,
    /// Base URL of the reference service (it listens on 3003).
    #[arg(long, default_value = "http://127.0.0.1:3003")]
    pub reference_url: String,
    /// Working directory for --reference-cmd (where its keys are).
    #[arg(long, value_name = "DIR")]
    pub reference_dir: Option<PathBuf>,
    /// Output directory; default benches/results/<date>-<cpu>/.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only check the setup and print the commands that would run.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug, Clone)]
pub struct CallersArgs {
    /// Base URL of the service (plain http).
    #[arg(long, default_value = "http://127.0.0.1:3003")]
    pub url: String,
    /// Route to POST request bodies to: a path, or the key stem of a statement instance.
    #[arg(long, default_value = statements::DEFAULT_INSTANCE, value_parser = endpoint)]
    pub endpoint: String,
    /// Directory of request bodies (*.json), or a single file; every caller cycles through them.
    #[arg(long, value_name = "DIR")]
    pub requests: PathBuf,
    /// A caller: `NAME:TOKEN:SCHEDULE`, e.g. `alice:env:ALICE_TOKEN:closed=16` or
    /// `bob:TOKEN:open=2/s` (repeatable). NAME is the caller's name in the server's token file.
    #[arg(long = "caller", value_name = "NAME:TOKEN:SCHEDULE", value_parser = Secret::from_arg)]
    pub caller: Vec<Secret>,
    /// A file of callers, one `NAME TOKEN SCHEDULE` a line (`#` comments); added to --caller.
    #[arg(long, value_name = "FILE")]
    pub callers: Option<PathBuf>,
    /// How long every caller is measured, after the warm-up (all callers at once).
    #[arg(long, default_value = "60s", value_parser = dur)]
    pub duration: Duration,
    /// Warm-up before the measured part; its requests are reported apart.
    #[arg(long, default_value = "5s", value_parser = dur)]
    pub warmup: Duration,
    /// Seed of the open loops' Poisson schedules (each caller's is its own).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub client: ClientArgs,
    /// Requests sent one at a time (with the first caller's token) before the run, in no caller's
    /// figures: the server's first proof warms its caches.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub prime: usize,
    /// Output directory (created): report.json, report.md, requests.csv, command.txt.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Free-text label stored in the report.
    #[arg(long)]
    pub label: Option<String>,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args, Debug, Clone)]
pub struct RetriesArgs {
    /// Base URL of the service (plain http).
    #[arg(long, default_value = "http://127.0.0.1:3003")]
    pub url: String,
    /// Route to POST request bodies to: a path, or the key stem of a statement instance.
    #[arg(long, default_value = statements::DEFAULT_INSTANCE, value_parser = endpoint)]
    pub endpoint: String,
    /// Directory of request bodies (*.json), or a single file; distinct requests cycle through
    /// them.
    #[arg(long, value_name = "DIR")]
    pub requests: PathBuf,
    /// Distinct requests in flight at once (the gateway's closed loop).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
    /// How long new distinct requests are sent; the ones in flight then finish.
    #[arg(long, default_value = "60s", value_parser = dur)]
    pub duration: Duration,
    /// An attempt without an answer after this long is abandoned (its connection dropped) and
    /// the request sent again; the last attempt waits --timeout.
    #[arg(long, value_name = "DURATION", value_parser = dur)]
    pub retry_after_timeout: Duration,
    /// Times one distinct request is sent again after the first attempt.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub max_retries: u32,
    /// Send every distinct request with an Idempotency-Key of its own, the same on its retries.
    #[arg(long)]
    pub idempotency_keys: bool,
    /// Where the server's Prometheus metrics are read (the proofs it started) [default:
    /// /metrics on --url].
    #[arg(long, value_name = "URL")]
    pub metrics_url: Option<String>,
    /// How long to wait, after the last answer, for the server to finish the proofs it still
    /// runs (abandoned attempts' included) before reading its proof count.
    #[arg(long, default_value = "120s", value_parser = dur)]
    pub settle_timeout: Duration,
    #[command(flatten)]
    pub client: ClientArgs,
    /// Requests sent one at a time before the run, not counted (they warm the server's caches).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub prime: usize,
    /// Output directory (created): report.json, report.md, command.txt.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Free-text label stored in the report.
    #[arg(long)]
    pub label: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct PlanArgs {
    /// Proofs per second one machine sustains (e.g. the best throughput_rps of a report).
    #[arg(long, value_name = "X", required_unless_present = "from_report")]
    pub throughput: Option<f64>,
    /// Take the throughput from a report.json (its best closed-loop level).
    #[arg(long, value_name = "REPORT")]
    pub from_report: Option<PathBuf>,
    /// Peak rate / average rate to size for; without it intraday peaks are ignored.
    #[arg(long, value_name = "F")]
    pub peak_factor: Option<f64>,
    /// A custom daily volume (in addition to CHAPS and Fedwire).
    #[arg(long, value_name = "N")]
    pub daily: Option<u64>,
    /// The custom volume's operating window, `HH:MM-HH:MM`.
    #[arg(long, value_name = "HH:MM-HH:MM", conflicts_with = "hours")]
    pub window: Option<String>,
    /// The custom volume's operating window in hours.
    #[arg(long, value_name = "H")]
    pub hours: Option<f64>,
    #[arg(long, default_value = "custom")]
    pub name: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Plan a deployment for this average rate: `chaps`, `fedwire` or requests per second.
    /// Needs --from-report (the replica's settings and what it sustained); sized for
    /// --peak-factor times the rate.
    #[arg(long, value_name = "chaps|fedwire|RPS", requires = "from_report", conflicts_with_all = ["throughput", "daily"])]
    pub rate: Option<String>,
    /// With --rate: the server's --queue-timeout; the queue depth is what one replica serves
    /// within it. 10s is what deploy/kubernetes/ and its alert rules use.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = dur, requires = "rate")]
    pub queue_timeout: Duration,
    /// With --rate: the share of a replica's sustained rate and proof slots to plan for (the
    /// rest absorbs bursts while the autoscaler adds replicas).
    #[arg(long, value_name = "U", default_value_t = 0.8, requires = "rate")]
    pub utilization: f64,
    /// With --rate: the replica's --max-inflight, when the report's server command does not
    /// name it (e.g. a report of a server started by hand).
    #[arg(long, value_name = "N", requires = "rate")]
    pub max_inflight: Option<u32>,
    /// With --rate: the replica's --prove-threads, when the report's server command does not
    /// name it.
    #[arg(long, value_name = "N", requires = "rate")]
    pub prove_threads: Option<u32>,
    /// With --rate: print a kustomize overlay (kustomization.yaml on top of
    /// deploy/kubernetes/overlays/keda) instead of the plan.
    #[arg(long, requires = "rate", conflicts_with = "json")]
    pub kustomize: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `enygma-loadgen run --requests r --out o` (the two required flags) and `extra`.
    fn run(extra: &[&str]) -> Result<Cli, clap::Error> {
        let required = ["enygma-loadgen", "run", "--requests", "r", "--out", "o"];
        Cli::try_parse_from(required.iter().chain(extra).copied())
    }

    fn run_args(extra: &[&str]) -> RunArgs {
        let Command::Run(r) = run(extra).unwrap().command else {
            panic!()
        };
        r
    }

    #[test]
    fn parses_run_defaults_and_lists() {
        let r = run_args(&[
            "--levels",
            "1,2",
            "--duration",
            "3s",
            "--open-rate",
            "0.5,2",
            "--soak",
            "4",
        ]);
        assert_eq!(r.url, "http://127.0.0.1:3003");
        assert_eq!(r.schedule.endpoint, "/generateProofTransfer-6");
        assert_eq!(r.schedule.levels.0, vec![1, 2]);
        assert_eq!(r.schedule.duration, Duration::from_secs(3));
        assert_eq!(r.schedule.warmup, Duration::from_secs(5));
        assert_eq!(r.schedule.open_rate, Some(List(vec![0.5, 2.0])));
        assert_eq!(r.schedule.soak_duration, Duration::from_secs(300));
        assert_eq!(r.schedule.window, Duration::from_secs(30));
        assert_eq!(r.schedule.metrics_path(), Some("/metrics"));
        assert_eq!(run_args(&[]).schedule.levels.0, vec![1, 2, 4, 8, 16]);
        // A key stem names its instance's proving route; a path is taken as given.
        for (given, path) in [
            ("withdraw-k4", "/generateProofWithdraw-4"),
            ("/anything-3", "/anything-3"),
        ] {
            assert_eq!(run_args(&["--endpoint", given]).schedule.endpoint, path);
        }
        let err = run(&["--endpoint", "transfer-k9"]).unwrap_err().to_string();
        assert!(err.contains("transfer-k6"), "{err}");
        assert!(run(&["--levels", "0"]).is_err());
        assert!(run(&["--server-pid", "1", "--spawn-server", "x"]).is_err());
        assert!(run_args(&["--levels", "none"]).schedule.levels.0.is_empty());
    }

    #[test]
    fn parses_callers_and_tokens_without_echoing_them() {
        let c = Cli::try_parse_from([
            "enygma-loadgen",
            "callers",
            "--requests",
            "r",
            "--out",
            "o",
            "--caller",
            "a:not a valid token:closed=0",
            "--caller",
            "b:env:B:open=1/s",
        ])
        .unwrap();
        let Command::Callers(a) = c.command else {
            panic!()
        };
        // Checked later by our own parser, whose errors never quote a token.
        assert_eq!(a.caller.len(), 2);
        assert_eq!(a.caller[0].expose(), "a:not a valid token:closed=0");
        assert!(!format!("{a:?}").contains("valid token"));
        assert_eq!(a.duration, Duration::from_secs(60));
        let r = run_args(&["--token", "env:GW_TOKEN"]);
        assert_eq!(
            r.schedule.token.token.as_ref().unwrap().expose(),
            "env:GW_TOKEN"
        );
        assert!(run(&["--token", "x", "--token-file", "f"]).is_err());
    }

    #[test]
    fn parses_ab_and_plan() {
        let c = Cli::try_parse_from(["enygma-loadgen", "ab", "--requests", "r"]).unwrap();
        let Command::Ab(a) = c.command else { panic!() };
        assert_eq!(a.sweep(), "1x2,2x1,4x1");
        assert_eq!(a.server_cmd, "target/release/enygma-server");
        assert!(Cli::try_parse_from(["enygma-loadgen", "plan"]).is_err());
        let c = Cli::try_parse_from([
            "enygma-loadgen",
            "plan",
            "--throughput",
            "1.5",
            "--peak-factor",
            "2",
        ])
        .unwrap();
        let Command::Plan(p) = c.command else {
            panic!()
        };
        assert_eq!((p.throughput, p.peak_factor), (Some(1.5), Some(2.0)));
        // A deployment plan needs the report (settings and measurements), not just a rate.
        let plan = |extra: &[&str]| {
            Cli::try_parse_from(["enygma-loadgen", "plan"].iter().chain(extra).copied())
        };
        assert!(plan(&["--rate", "chaps"]).is_err());
        assert!(plan(&["--rate", "chaps", "--throughput", "1", "--from-report", "r"]).is_err());
        assert!(plan(&["--from-report", "r", "--kustomize"]).is_err());
        let c = plan(&[
            "--from-report",
            "r",
            "--rate",
            "fedwire",
            "--queue-timeout",
            "5s",
        ])
        .unwrap();
        let Command::Plan(p) = c.command else {
            panic!()
        };
        assert_eq!(p.rate.as_deref(), Some("fedwire"));
        assert_eq!(
            (p.queue_timeout, p.utilization),
            (Duration::from_secs(5), 0.8)
        );
    }
}
