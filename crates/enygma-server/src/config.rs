//! Command line and environment configuration.
//!
//! Every flag has an environment variable twin (`--port` / `ENYGMA_PORT`, ...); a flag given on
//! the command line wins over its variable.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use enygma_formats::duration::parse_duration;
use enygma_prover::statements::{self, Instance};

use crate::admission::ProveThreads;
use crate::caller::Caller;

/// The help headings that group the flags by concern (`--help`).
const H_LISTEN: &str = "Listening and TLS";
const H_CALLERS: &str = "Callers";
const H_ADMISSION: &str = "Admission";
const H_TABLES: &str = "Tables and threads";
const H_KEYS: &str = "Keys";
const H_LOG: &str = "Logging";
const H_ADV: &str = "Advanced (rarely needed tuning)";

/// Log output format.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Groth16 prove service for the Enygma statements, a drop-in replacement for
/// rayls-sovereign-gnark-api with a concurrency cap, a bounded FIFO queue and load shedding.
///
/// Every flag can also be set through the environment variable shown with it. Log verbosity
/// follows RUST_LOG (default "info").
#[derive(Clone, Debug, Parser)]
#[command(
    name = "enygma-server",
    version = enygma_build_info::LONG_VERSION,
    about,
    long_about
)]
pub struct Args {
    /// Address to listen on.
    #[arg(help_heading = H_LISTEN, long, env = "ENYGMA_BIND", default_value = "0.0.0.0")]
    pub bind: IpAddr,

    /// TCP port to listen on (0 picks a free port; the chosen address is logged).
    #[arg(help_heading = H_LISTEN, long, env = "ENYGMA_PORT", default_value_t = 3003)]
    pub port: u16,

    /// Where the admin listener serves /livez, /readyz and /metrics in plain HTTP without
    /// tokens, for the kubelet and Prometheus (ADDR:PORT; port 0 picks a free one, logged), or
    /// `none` for no admin listener. Loopback by default: open it beyond (0.0.0.0:9464 in a
    /// pod) only behind a NetworkPolicy or firewall. One port per process: unset, a server whose
    /// default port is taken (another server on the host) takes a free port instead, logged;
    /// an explicit address that is taken stops the start.
    #[arg(help_heading = H_LISTEN, long, env = "ENYGMA_ADMIN_BIND", value_name = "ADDR:PORT|none",
          default_value = DEFAULT_ADMIN_BIND, value_parser = parse_admin_bind)]
    pub admin_bind: AdminBind,

    /// Directory of the proving and verifying keys ({stem}.pk, {stem}.vk). Missing keys are
    /// created there at startup (development keys, logged as such) unless --require-keys.
    #[arg(help_heading = H_KEYS, long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
    pub keys_dir: PathBuf,

    /// The circuits this server hosts, comma-separated: key stems (transfer-k6) or statement
    /// names (deposit: every k). Only their keys are loaded and only their routes answer (the
    /// others 404); /readyz waits for them only [default: every statement and k but the
    /// hidden-sender payments, which are hosted only when named].
    #[arg(help_heading = H_KEYS, long, env = "ENYGMA_CIRCUITS", value_name = "LIST", value_parser = parse_circuits)]
    pub circuits: Option<CircuitList>,

    /// Refuse to start when a proving key of a hosted circuit is missing, instead of creating
    /// development keys (for production).
    #[arg(help_heading = H_KEYS, long, env = "ENYGMA_REQUIRE_KEYS")]
    pub require_keys: bool,

    /// Refuse to start unless every hosted circuit's proving key comes from a multi-party
    /// ceremony (`enygma import-zkey`): development keys (anyone can forge proofs) and
    /// single-party keys (their setup's operator can) are refused, and missing keys are never
    /// created. For production.
    #[arg(help_heading = H_KEYS, long, env = "ENYGMA_REQUIRE_CEREMONY_KEYS")]
    pub require_ceremony_keys: bool,

    /// Precompute fixed-base MSM tables for these hosted circuits at key load, before /readyz
    /// turns ready: their proofs take about 0.7x the time, for about (D + 2V + 3B) KiB each
    /// (143.5 MiB for transfer-k6; docs/running.md has every instance's size, and the start-up
    /// log each table's). `none`, `all` (every hosted circuit), or a comma-separated list of
    /// key stems and statement names as in --circuits.
    #[arg(help_heading = H_TABLES, long, env = "ENYGMA_PRECOMPUTE", value_name = "none|all|LIST",
          default_value = "none", value_parser = parse_precompute)]
    pub precompute: Precompute,

    /// Memory for the MSM tables built in the background for the circuits that receive proofs
    /// (after their second proof, one build at a time at low priority; the least recently
    /// proved circuit's tables are dropped when a new one would not fit). Bytes, or with a unit:
    /// 512MiB, 2GiB (1024-based), 500MB (1000-based); 0 turns the automatic tables off. The
    /// --precompute tables count in it and are never dropped [default: half the container's
    /// memory limit (cgroup v2 memory.max or v1 memory.limit_in_bytes), or of the physical
    /// memory without one, and no more than the loaded process and 24 MiB per proof in flight
    /// leave of that limit].
    #[arg(help_heading = H_TABLES, long, env = "ENYGMA_TABLE_MEMORY", value_name = "BYTES", value_parser = parse_bytes)]
    pub table_memory: Option<u64>,

    /// Pin every prove thread to a processor of its own (Linux). With the default threads that
    /// follow the queue, thread t of the whole pool and the one-thread pool of slot t run only
    /// on the t-th allowed CPU (the threads stop migrating). With --max-inflight / --prove-threads, slot s, thread t runs only on the
    /// (s x prove-threads + t)-th allowed CPU, CPUs of one physical core kept together, so
    /// that slots never share a core; needs max-inflight x prove-threads allowed CPUs at most.
    /// Not with --unlimited.
    #[arg(help_heading = H_TABLES, long, env = "ENYGMA_PIN_CPUS")]
    pub pin_cpus: bool,

    /// Maximum number of proofs computed at once, across all statements and k. Given (or with
    /// --prove-threads), every proof slot owns a pool of --prove-threads threads [default: one
    /// proof slot per CPU, threads that follow the queue: a proof that starts alone gets every
    /// CPU's thread, one that starts beside others a thread of its own; see docs/running.md].
    #[arg(help_heading = H_ADMISSION, long, env = "ENYGMA_MAX_INFLIGHT", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_inflight: Option<u32>,

    /// Threads used by each proof: each proof slot owns a rayon pool of this size, whatever
    /// else runs [default: threads that follow the queue, as --max-inflight's default; with
    /// --max-inflight alone, the number of CPUs].
    #[arg(help_heading = H_TABLES, long, env = "ENYGMA_PROVE_THREADS", value_parser = clap::value_parser!(u32).range(1..))]
    pub prove_threads: Option<u32>,

    /// Maximum number of admitted requests waiting for a proof slot; beyond it requests are shed
    /// at once with 503 and Retry-After. 0 disables queueing [default: as many as the slots work
    /// off within --queue-timeout at --expected-service-time: ceil(queue-timeout /
    /// expected-service-time) x max-inflight, 172 per CPU with the defaults].
    #[arg(help_heading = H_ADMISSION, long, env = "ENYGMA_QUEUE_DEPTH")]
    pub queue_depth: Option<u32>,

    /// Longest a request may wait in the queue before it is answered 504 (e.g. 60s, 1500ms, 2m).
    /// A request whose expected wait (its queue position x the service time estimate /
    /// max-inflight) already exceeds it is shed at once with 503 instead.
    #[arg(help_heading = H_ADMISSION, long, env = "ENYGMA_QUEUE_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub queue_timeout: Duration,

    /// Initial estimate of one proof's time on a slot, for the expected-wait shedding and the
    /// default --queue-depth; after start the estimate follows the observed proof times
    /// [default: 200ms with 2 or more --prove-threads, 350ms with 1 and with the default shared
    /// pool (whose slots, when all busy, have a thread each): a k=6 transfer request on the
    /// 2-core development machines, benches/results/2026-12-05-intel-xeon.md; 0 also means the
    /// default].
    #[arg(help_heading = H_ADMISSION, long, env = "ENYGMA_EXPECTED_SERVICE_TIME", value_parser = parse_duration)]
    pub expected_service_time: Option<Duration>,

    /// Behave like the reference for A/B tests: no cap and no queue, every request starts
    /// proving at once (each on its own pool of --prove-threads threads).
    #[arg(help_heading = H_ADMISSION, long, env = "ENYGMA_UNLIMITED")]
    pub unlimited: bool,

    /// Largest accepted request body in bytes; larger bodies are answered 413.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_BODY_LIMIT", default_value_t = 64 * 1024)]
    pub body_limit: usize,

    /// On SIGTERM/SIGINT, how long to wait for in-flight and queued requests before exiting
    /// anyway (exit code 1) [default: --queue-timeout + 30s, so that a full queue drains].
    #[arg(help_heading = H_ADMISSION, long, env = "ENYGMA_DRAIN_TIMEOUT", value_parser = parse_duration)]
    pub drain_timeout: Option<Duration>,

    /// Maximum number of proof verifications computed at once (the statements' verify routes);
    /// verification has its own limit and never enters the proving queue.
    #[arg(help_heading = H_ADMISSION, long, env = "ENYGMA_VERIFY_MAX_INFLIGHT", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub verify_max_inflight: u32,

    /// Maximum number of verifications waiting for a verify slot (they share --queue-timeout).
    #[arg(help_heading = H_ADMISSION, long, env = "ENYGMA_VERIFY_QUEUE_DEPTH", default_value_t = 16)]
    pub verify_queue_depth: u32,

    /// Threads that parse and check proving requests before they queue (the native checks of
    /// `prepare`) [default: the CPUs].
    #[arg(help_heading = H_TABLES, long, env = "ENYGMA_CHECK_THREADS", value_parser = clap::value_parser!(u32).range(1..))]
    pub check_threads: Option<u32>,

    /// Proving requests waiting for a check thread; past it, 503 with `Retry-After` before any
    /// check runs [default: the proving queue's depth, so that a burst the proving queue takes
    /// is not shed by its checks; the check threads alone bound the CPU they use].
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_CHECK_QUEUE_DEPTH")]
    pub check_queue_depth: Option<u32>,

    /// Malformed requests (answered 400, 408 or 413) one connection may send at once; past
    /// it the connection is closed after that answer (the requests in progress on it are still
    /// answered) and the client must reconnect. Never counts a false statement (422) or an
    /// unknown instance (404), and never refuses a request. 0 turns the limit off.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_BAD_REQUEST_BURST", default_value_t = 20)]
    pub bad_request_burst: u32,

    /// Malformed requests per second a connection's allowance refills at, after its burst.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_BAD_REQUEST_RATE", default_value_t = 2.0)]
    pub bad_request_rate: f64,

    /// Failed authentications (401) one client address may cause at once; past it a failure
    /// is answered 429 with `Retry-After` instead of 401 (a valid token from that address is
    /// still served). Every failure closes its connection. 0 turns the 429 off.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_AUTH_FAILURE_BURST", default_value_t = 20)]
    pub auth_failure_burst: u32,

    /// Failed authentications per second an address's allowance refills at, after its burst.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_AUTH_FAILURE_RATE", default_value_t = 1.0)]
    pub auth_failure_rate: f64,

    /// How proving slots are given out: `fair`, a queue per caller (named by its token or
    /// client certificate; unnamed callers share the `anonymous` queue) served by weighted
    /// deficit round robin, each caller shed (503, Retry-After) from its own share; or `fifo`,
    /// one queue in arrival order for everybody (for comparison).
    #[arg(help_heading = H_CALLERS, long, env = "ENYGMA_ADMISSION", value_enum, default_value_t = AdmissionMode::Fair)]
    pub admission: AdmissionMode,

    /// A caller's weight in the fair shares, NAME=WEIGHT (1 to 1000), repeatable or
    /// comma-separated: a caller of weight 2 starts two proofs in its turn where one of weight
    /// 1 starts one [default: 1 for every caller, `anonymous` included].
    #[arg(help_heading = H_CALLERS, long = "caller-weight", env = "ENYGMA_CALLER_WEIGHTS", value_name = "NAME=WEIGHT",
          value_delimiter = ',', value_parser = parse_weight)]
    pub caller_weights: Vec<(Caller, u32)>,

    /// Most requests waiting in one caller's queue (fair shares); beyond it, or when the
    /// caller's expected wait at its share of the slots exceeds --queue-timeout, the caller
    /// is shed [default: --queue-depth].
    #[arg(help_heading = H_CALLERS, long, env = "ENYGMA_CALLER_QUEUE_DEPTH")]
    pub caller_queue_depth: Option<u32>,

    /// Most proofs of one caller in flight at once (fair shares) [default: --max-inflight].
    #[arg(help_heading = H_CALLERS, long, env = "ENYGMA_CALLER_MAX_INFLIGHT", value_parser = clap::value_parser!(u32).range(1..))]
    pub caller_max_inflight: Option<u32>,

    /// Log format.
    #[arg(help_heading = H_LOG, long, env = "ENYGMA_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// The former spelling of the `openapi` command, kept for the scripts that use it.
    #[arg(long, hide = true)]
    pub openapi: bool,

    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub access: AccessArgs,
}

/// The time one token of an allowance refilled at `per_second` takes (none: never).
fn refill_time(per_second: f64) -> Duration {
    if per_second > 0.0 {
        Duration::from_secs_f64(1.0 / per_second)
    } else {
        Duration::MAX
    }
}

/// What the binary does instead of serving.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::Subcommand)]
pub enum Command {
    /// Print the service's OpenAPI 3.1 document (what GET /openapi.json answers) and exit,
    /// without keys or a listener: `enygma-server openapi > crates/enygma-server/openapi.json`
    /// regenerates the committed file.
    Openapi,
}

impl Args {
    /// Whether to print the OpenAPI document instead of serving (`openapi`, or `--openapi`).
    pub fn prints_openapi(&self) -> bool {
        self.openapi || self.command == Some(Command::Openapi)
    }
}

/// `--admin-bind`'s default: loopback, so that nothing but the host (the kubelet's exec, a
/// sidecar, an operator) reaches it unless the deployment says so, on 9464, a port of the
/// range Prometheus exporters use (9100-9999) and far from the API's 3003, so that replicas
/// on consecutive API ports never collide with it.
pub const DEFAULT_ADMIN_BIND: &str = "127.0.0.1:9464";

/// `--admin-bind`: the admin listener's address, `None` for none.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AdminBind(pub Option<std::net::SocketAddr>);

fn parse_admin_bind(s: &str) -> Result<AdminBind, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("none") {
        return Ok(AdminBind(None));
    }
    s.parse()
        .map(|addr| AdminBind(Some(addr)))
        .map_err(|_| format!("expected ADDR:PORT (e.g. {DEFAULT_ADMIN_BIND}, [::1]:9464) or none"))
}

/// The admission settings with every default resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// `None` for `--unlimited`.
    pub max_inflight: Option<usize>,
    /// One pool shared by the slots (the default) or a pool per slot (`--max-inflight`,
    /// `--prove-threads`, `--unlimited`).
    pub prove_threads: ProveThreads,
    pub queue_depth: usize,
    pub queue_timeout: Duration,
    /// The initial estimate of one proof's time on a slot.
    pub service_time: Duration,
    pub verify_max_inflight: usize,
    pub verify_queue_depth: usize,
    /// `--pin-cpus`.
    pub pin_cpus: bool,
    /// Fair shares per caller; `None` for the one FIFO queue (`--admission fifo`).
    pub fair: Option<FairConfig>,
    /// `--check-threads`, `--check-queue-depth` ([`crate::check_pool`]).
    pub check_threads: usize,
    pub check_queue_depth: usize,
    /// `--bad-request-burst`, and the time `--bad-request-rate` refills one token in
    /// ([`crate::bad_requests`]).
    pub bad_request_burst: u32,
    pub bad_request_refill: Duration,
    /// `--auth-failure-burst`, and the time `--auth-failure-rate` refills one token in.
    pub auth_failure_burst: u32,
    pub auth_failure_refill: Duration,
}

/// `--admission`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum AdmissionMode {
    /// A queue per caller, weighted deficit round robin.
    Fair,
    /// One queue in arrival order.
    Fifo,
}

/// The fair shares' settings with every default resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FairConfig {
    /// `--caller-weight`.
    pub weights: Vec<(Caller, u32)>,
    /// The callers the token files and `--tls-client-names` name (added at start).
    pub callers: Vec<Caller>,
    pub caller_queue_depth: usize,
    pub caller_max_inflight: usize,
}

impl FairConfig {
    /// Every caller equal, each with the whole queue depth and every slot.
    pub fn equal(caller_queue_depth: usize, caller_max_inflight: usize) -> Self {
        FairConfig {
            weights: Vec::new(),
            callers: Vec::new(),
            caller_queue_depth,
            caller_max_inflight,
        }
    }

    /// Every share with its weight: the weighted callers, then the other named ones (weight
    /// 1); `anonymous` is added by the scheduler unless weighted here.
    pub fn shares(&self) -> Vec<(Caller, u32)> {
        let mut shares = self.weights.clone();
        for caller in &self.callers {
            if !shares.iter().any(|(c, _)| c == caller) {
                shares.push((caller.clone(), 1));
            }
        }
        shares
    }
}

/// Parses one `--caller-weight` item, NAME=WEIGHT (`anonymous` may be weighted too).
fn parse_weight(s: &str) -> Result<(Caller, u32), String> {
    let (name, weight) = s
        .trim()
        .split_once('=')
        .ok_or("expected NAME=WEIGHT, e.g. bank-a=2")?;
    let caller = if name == crate::caller::ANONYMOUS {
        Caller::anonymous()
    } else {
        crate::caller::check_name(name)?
    };
    let weight: u32 = weight
        .parse()
        .ok()
        .filter(|w| (1..=1000).contains(w))
        .ok_or("the weight is a whole number from 1 to 1000")?;
    Ok((caller, weight))
}

/// `--precompute`: the circuits whose MSM tables are built at key load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Precompute {
    None,
    /// Every hosted circuit.
    All,
    /// These circuits, each of which must be hosted.
    Only(Vec<Instance>),
}

/// Parses `--precompute`: `none`, `all`, or a `--circuits`-style list (an unknown item is an
/// error that lists the valid ones).
fn parse_precompute(s: &str) -> Result<Precompute, String> {
    match s.trim() {
        "none" | "" => Ok(Precompute::None),
        "all" => Ok(Precompute::All),
        list => statements::resolve_list(list)
            .map(Precompute::Only)
            .map_err(|e| format!("{e}; or `none`, `all`")),
    }
}

/// Parses `--table-memory`: a number of bytes with an optional unit (`bytesize`'s: KiB, MiB,
/// GiB are 1024-based, KB, MB, GB 1000-based).
pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|_| {
            format!("--table-memory takes bytes, e.g. 0, 536870912, 512MiB or 2GiB; got {s:?}")
        })
}

/// A `--circuits` list, resolved against the statement registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitList(pub Vec<Instance>);

/// Parses `--circuits`; an unknown item is an error that lists the valid ones.
fn parse_circuits(s: &str) -> Result<CircuitList, String> {
    statements::resolve_list(s)
        .map(CircuitList)
        .map_err(|e| e.to_string())
}

/// One k=6 transfer request without precomputed tables on the 2-core development machines,
/// rounded up: at most 200 ms on 2 threads and 350 ms on 1 (criterion, request to proof: 197.3
/// and 345.1 ms on AMD EPYC before the transforms in lanes, 158.7 and 262.1 ms on Intel Xeon
/// after them; `benches/results/2026-12-05-ifma.md`, `2026-12-05-intel-xeon.md`). More threads
/// were not measured, so they are assumed no faster than 2; the running estimate corrects it
/// after the first proofs either way. `prove_threads` is what one proof has while every slot is
/// busy (with threads that follow the queue: 1), since the estimate is a slot's time
/// at full load (see `admission::SlotOccupancy`).
pub fn default_service_time(prove_threads: usize) -> Duration {
    if prove_threads >= 2 {
        Duration::from_millis(200)
    } else {
        Duration::from_millis(350)
    }
}

/// The default queue depth: as many requests as `max_inflight` slots work off within
/// `queue_timeout` at `service_time` each. A deeper queue would only hold requests that time
/// out; a shallower one sheds requests that would have been answered in time.
pub fn default_queue_depth(
    max_inflight: usize,
    queue_timeout: Duration,
    service_time: Duration,
) -> usize {
    let per_slot = (queue_timeout.as_secs_f64() / service_time.as_secs_f64().max(1e-3)).ceil();
    (per_slot as usize).saturating_mul(max_inflight)
}

impl Args {
    /// The statement instances to host: `--circuits`, else all of them.
    pub fn hosted(&self) -> Vec<Instance> {
        match &self.circuits {
            Some(CircuitList(list)) => list.clone(),
            None => statements::instances().collect(),
        }
    }

    /// The hosted circuits whose MSM tables are precomputed, in registry order. A circuit that
    /// `--precompute` names but the server does not host is an error naming it.
    pub fn precomputed(&self) -> Result<Vec<Instance>, String> {
        let hosted = self.hosted();
        match &self.precompute {
            Precompute::None => Ok(Vec::new()),
            Precompute::All => Ok(hosted),
            Precompute::Only(list) => match list.iter().find(|i| !hosted.contains(i)) {
                Some(other) => Err(format!(
                    "--precompute names {other}, which this server does not host (see --circuits)"
                )),
                None => Ok(list.clone()),
            },
        }
    }

    /// The table cache's configuration: `--table-memory` (or the default share of the memory
    /// limit, with room for the proofs `--max-inflight` allows) and the `--precompute` circuits,
    /// pinned.
    pub fn tables(&self, pinned: Vec<Instance>) -> crate::tables::TableConfig {
        use crate::tables::{MemoryLimit, TableBudget};
        let budget = match self.table_memory {
            Some(bytes) => TableBudget::Fixed(bytes),
            None => TableBudget::Share {
                limit: MemoryLimit::detect(),
                in_flight: self.admission().max_inflight.map_or_else(
                    || std::thread::available_parallelism().map_or(2, |n| n.get() as u64),
                    |n| n as u64,
                ),
            },
        };
        crate::tables::TableConfig { budget, pinned }
    }

    /// What to do about a missing proving key.
    pub fn missing_keys(&self) -> enygma_prover::MissingKeys {
        if self.require_keys || self.require_ceremony_keys {
            enygma_prover::MissingKeys::Refuse
        } else {
            enygma_prover::MissingKeys::Create
        }
    }

    /// The connection-level limits: the transport flags', and `--body-limit` as the most an
    /// early answer's body is drained of over HTTP/2.
    pub fn limits(&self) -> crate::transport::Limits {
        crate::transport::Limits {
            early_answer_drain_bytes: self.body_limit,
            ..self.access.limits()
        }
    }

    /// Resolves the defaults that depend on the machine or on other flags.
    pub fn admission(&self) -> AdmissionConfig {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        // Either flag (or --unlimited) asks for the fixed layout: a pool per slot, the
        // other flag at its former default (1 slot, every CPU per proof).
        let explicit =
            self.max_inflight.is_some() || self.prove_threads.is_some() || self.unlimited;
        let (max_inflight, prove_threads) = if explicit {
            (
                self.max_inflight.map_or(1, |n| n as usize),
                ProveThreads::PerSlot(self.prove_threads.map_or(cpus, |n| n as usize)),
            )
        } else {
            // As many proofs in flight as a pool per slot of one thread (the throughput and the
            // memory per proof in flight of `cpus`x1), but a proof that starts alone gets every
            // thread (the latency of 1x`cpus`).
            (cpus, ProveThreads::Adaptive(cpus))
        };
        // What one proof has when every slot is busy, which is when the estimate matters.
        let threads_at_full_load = match prove_threads {
            ProveThreads::PerSlot(n) => n,
            ProveThreads::Adaptive(n) => (n / max_inflight).max(1),
        };
        let service_time = self
            .expected_service_time
            .filter(|d| !d.is_zero())
            .unwrap_or_else(|| default_service_time(threads_at_full_load));
        let queue_depth = self
            .queue_depth
            .map(|n| n as usize)
            .unwrap_or_else(|| default_queue_depth(max_inflight, self.queue_timeout, service_time));
        AdmissionConfig {
            max_inflight: (!self.unlimited).then_some(max_inflight),
            prove_threads,
            queue_depth,
            queue_timeout: self.queue_timeout,
            service_time,
            verify_max_inflight: self.verify_max_inflight as usize,
            verify_queue_depth: self.verify_queue_depth as usize,
            pin_cpus: self.pin_cpus,
            check_threads: self.check_threads.map_or(cpus, |n| n as usize),
            check_queue_depth: self.check_queue_depth.map_or(queue_depth, |n| n as usize),
            bad_request_burst: self.bad_request_burst,
            bad_request_refill: refill_time(self.bad_request_rate),
            auth_failure_burst: self.auth_failure_burst,
            auth_failure_refill: refill_time(self.auth_failure_rate),
            fair: (self.admission == AdmissionMode::Fair).then(|| FairConfig {
                weights: self.caller_weights.clone(),
                callers: Vec::new(),
                caller_queue_depth: self.caller_queue_depth.map_or(queue_depth, |n| n as usize),
                caller_max_inflight: self
                    .caller_max_inflight
                    .map_or(max_inflight, |n| n as usize),
            }),
        }
    }

    /// `--drain-timeout`, or long enough for a full queue: queue timeout + 30 s.
    pub fn drain_timeout(&self) -> Duration {
        self.drain_timeout
            .unwrap_or(self.queue_timeout + Duration::from_secs(30))
    }
}

// ---------------------------------------------------------------------------------------------
// Transport and access control: TLS, bearer tokens, connection-level limits.

/// TLS, mTLS, bearer tokens and the connection-level limits.
#[derive(Clone, Debug, clap::Args)]
pub struct AccessArgs {
    /// Serve HTTPS with this certificate chain (PEM, leaf first). Reloaded with the key on
    /// SIGHUP without dropping connections.
    #[arg(
        help_heading = H_LISTEN,
        long,
        env = "ENYGMA_TLS_CERT",
        requires = "tls_key",
        value_name = "FILE"
    )]
    pub tls_cert: Option<PathBuf>,

    /// Private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(
        help_heading = H_LISTEN,
        long,
        env = "ENYGMA_TLS_KEY",
        requires = "tls_cert",
        value_name = "FILE"
    )]
    pub tls_key: Option<PathBuf>,

    /// Require a client certificate signed by one of these CAs (PEM); other clients are refused
    /// during the TLS handshake (mTLS). Needs --tls-cert. Reloaded on SIGHUP.
    #[arg(
        help_heading = H_LISTEN,
        long,
        env = "ENYGMA_TLS_CLIENT_CA",
        requires = "tls_cert",
        value_name = "FILE"
    )]
    pub tls_client_ca: Option<PathBuf>,

    /// Name the callers by their client certificate: one rule a line, `NAME cn:COMMON-NAME`,
    /// `NAME dns:DNS-NAME` or `NAME uri:URI` (subject alternative names); a certificate of the
    /// client CA that no rule names is refused at the handshake. Needs --tls-client-ca.
    /// Reloaded on SIGHUP.
    #[arg(
        help_heading = H_LISTEN,
        long,
        env = "ENYGMA_TLS_CLIENT_NAMES",
        requires = "tls_client_ca",
        value_name = "FILE"
    )]
    pub tls_client_names: Option<PathBuf>,

    /// Refuse client certificates that these certificate revocation lists (PEM, from the
    /// client CA) revoke, at the handshake; on SIGHUP the lists are read again and the open
    /// connections of the certificates they now revoke are closed. Needs --tls-client-ca.
    #[arg(
        help_heading = H_LISTEN,
        long,
        env = "ENYGMA_CLIENT_CRL",
        requires = "tls_client_ca",
        value_name = "FILE"
    )]
    pub client_crl: Option<PathBuf>,

    /// Require `Authorization: Bearer <token>` with one of these tokens on every route but
    /// /healthcheck, /livez, /readyz and /metrics. One caller a line: `NAME TOKEN`, `NAME
    /// sha256:HEX` (the token's SHA-256 digest) or a bare `TOKEN` (an anonymous caller); blank
    /// lines and lines starting with # are skipped; a token has at least 16 characters of
    /// [A-Za-z0-9-._~+/=], a name 1 to 64 of [A-Za-z0-9._-]. Reloaded on SIGHUP (the whole
    /// file is checked before it replaces the previous tokens).
    #[arg(help_heading = H_CALLERS, long, env = "ENYGMA_AUTH_TOKEN_FILE", value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,

    /// Require a bearer token from this file (same format) on /metrics [default: /metrics open].
    #[arg(help_heading = H_CALLERS, long, env = "ENYGMA_METRICS_TOKEN_FILE", value_name = "FILE")]
    pub metrics_token_file: Option<PathBuf>,

    /// A connection must complete its TLS handshake and send a complete request head within
    /// this time of opening or of its previous response, else it is closed (HTTP/2: when no
    /// stream is open for this long).
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub header_read_timeout: Duration,

    /// A request body must arrive completely within this time of its head, else 408 and the
    /// connection is closed (before the request takes a queue place).
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_BODY_READ_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub body_read_timeout: Duration,

    /// Most client connections open at once; further clients wait in the kernel's accept
    /// backlog until one closes.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_MAX_CONNECTIONS", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// Largest request head (request line and headers; HTTP/2: the header list) in bytes, at
    /// least 8192 (hyper's smallest read buffer); larger heads get 431 (HTTP/1.1) or a stream
    /// reset (HTTP/2).
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_MAX_HEADER_BYTES", default_value_t = 16 * 1024,
          value_parser = clap::value_parser!(u32).range(8192..=1024 * 1024))]
    pub max_header_bytes: u32,

    /// Most concurrent HTTP/2 streams (requests) per connection.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_HTTP2_MAX_STREAMS", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub http2_max_streams: u32,

    // Connection hardening: who may hold a connection, and for how long (`crate::transport`).
    /// Most connections from one client address at once; more are closed right after accept.
    /// The default leaves room for the reference's stress test (100 concurrent requests from one
    /// client) while one address alone holds at most an eighth of the default --max-connections.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_MAX_CONNECTIONS_PER_IP", default_value_t = 128,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_ip: u32,

    /// Most connections on which no request has passed authentication yet (a valid bearer
    /// token; with mTLS, the client certificate at the handshake; without tokens, any request
    /// but a probe), at most --max-connections - 1; past it a newcomer takes the place of the
    /// oldest such connection without a request in progress (closed at once), so that they
    /// never hold the slots of those that authenticated nor keep a newcomer out [default: half
    /// of --max-connections].
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_MAX_UNAUTHENTICATED_CONNECTIONS",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_unauthenticated_connections: Option<u32>,

    /// A TLS handshake must finish within this time of connecting (at most
    /// --header-read-timeout), else the connection is closed.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_TLS_HANDSHAKE_TIMEOUT", default_value = "5s",
          value_parser = parse_nonzero_duration)]
    pub tls_handshake_timeout: Duration,

    /// A connection older than this is closed gracefully: the response in progress gets
    /// `Connection: close` (HTTP/2: GOAWAY, the streams in progress finish). Clients reconnect
    /// and are checked again, so a revoked client certificate or token stops within this time.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_MAX_CONNECTION_AGE", default_value = "10m",
          value_parser = parse_nonzero_duration)]
    pub max_connection_age: Duration,

    /// A connection on which no request has authenticated within this time of its accept (a
    /// valid bearer token; with mTLS, the client certificate at the handshake; without tokens,
    /// any request but a probe) is closed, whatever it does meanwhile.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_UNAUTHENTICATED_TIMEOUT", default_value = "10s",
          value_parser = parse_nonzero_duration)]
    pub unauthenticated_timeout: Duration,

    /// Proxies (addresses or networks, comma-separated: `10.0.0.0/8,192.168.1.10`) whose
    /// connections start with a PROXY protocol header (v1 or v2, e.g. HAProxy's `send-proxy-v2`):
    /// the client address it names counts for --max-connections-per-ip, the failed
    /// authentications and the logs. A connection from them without a valid header is closed;
    /// other clients' connections are read as they are [default: none].
    #[arg(help_heading = H_LISTEN, long, env = "ENYGMA_PROXY_PROTOCOL_FROM", value_name = "CIDR",
          value_delimiter = ',', value_parser = parse_network)]
    pub proxy_protocol_from: Vec<ipnet::IpNet>,

    /// Start even when the TLS private key or a token file is readable by group or others, or
    /// a proving key is writable by them (a warning instead of a refusal): for the setups whose
    /// files cannot be owner-only, e.g. a Kubernetes Secret volume mounted with `fsGroup`.
    #[arg(help_heading = H_KEYS, long, env = "ENYGMA_ALLOW_SHARED_SECRET_FILES")]
    pub allow_shared_secret_files: bool,
}

/// `--proxy-protocol-from`: a network (`10.0.0.0/8`) or one address.
fn parse_network(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("expected an address or a network (10.0.0.0/8, ::1): {s:?}"))
}

/// A duration flag that must be more than zero.
fn parse_nonzero_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("duration {s:?} must be more than zero")),
        d => Ok(d),
    }
}

impl AccessArgs {
    /// The connection-level limits.
    pub fn limits(&self) -> crate::transport::Limits {
        crate::transport::Limits {
            header_read_timeout: self.header_read_timeout,
            body_read_timeout: self.body_read_timeout,
            max_connections: self.max_connections as usize,
            max_header_bytes: self.max_header_bytes as usize,
            http2_max_streams: self.http2_max_streams,
            // At most all but one of the connections: a newcomer needs a free slot to be
            // accepted into before it can take an unauthenticated connection's place.
            max_unauthenticated: self
                .max_unauthenticated_connections
                .map_or(self.max_connections.div_ceil(2), |n| {
                    n.min(self.max_connections.saturating_sub(1)).max(1)
                }) as usize,
            max_connections_per_ip: self.max_connections_per_ip as usize,
            tls_handshake_timeout: self.tls_handshake_timeout,
            max_connection_age: self.max_connection_age,
            unauthenticated_timeout: self.unauthenticated_timeout,
            trusted_proxies: self.proxy_protocol_from.clone(),
            early_answer_drain_bytes: crate::transport::Limits::default().early_answer_drain_bytes,
        }
    }

    /// The TLS files, if TLS is on.
    pub fn tls_files(&self) -> Option<crate::tls::TlsFiles> {
        Some(crate::tls::TlsFiles {
            cert: self.tls_cert.clone()?,
            key: self.tls_key.clone()?,
            client_ca: self.tls_client_ca.clone(),
            client_names: self.tls_client_names.clone(),
            client_crl: self.client_crl.clone(),
        })
    }

    /// The secret files configured, with the flag that names each (checked by
    /// [`crate::file_modes`] before the server starts).
    pub fn secret_files(&self) -> Vec<(&'static str, PathBuf, crate::file_modes::FileKind)> {
        use crate::file_modes::FileKind::Secret;
        [
            ("--tls-key", &self.tls_key),
            ("--auth-token-file", &self.auth_token_file),
            ("--metrics-token-file", &self.metrics_token_file),
        ]
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path.clone()?, Secret)))
        .collect()
    }

    /// What an operator must hear at start (once, at WARN, one line per missing protection):
    /// the API served beyond loopback without TLS, or without bearer tokens or client
    /// certificates, and what anyone on the network can then do. The default stays open for
    /// drop-in compatibility with the reference, so these are warnings, not refusals.
    pub fn exposure_warnings(&self, bind: IpAddr) -> Vec<&'static str> {
        let mut warnings = Vec::new();
        if bind.is_loopback() {
            return warnings;
        }
        if self.tls_cert.is_none() {
            warnings.push(
                "INSECURE: the API is served on a non-loopback address without TLS: anyone on \
                 the network path can read the secret keys, balances and blinding values of \
                 every proving request, and read or alter the answers (set --tls-cert and \
                 --tls-key)",
            );
        }
        if self.auth_token_file.is_none() && self.tls_client_ca.is_none() {
            warnings.push(
                "INSECURE: the API is served on a non-loopback address without bearer tokens \
                 or client certificates: anyone who can reach the port can make the service \
                 prove, fill its queue so that the real callers get 503, and read /metrics \
                 (set --auth-token-file or --tls-client-ca)",
            );
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_valid() {
        Args::command().debug_assert();
    }

    #[test]
    fn the_secret_files_are_the_tls_key_and_the_token_files() {
        let args = crate::test_support::args(&[]).unwrap();
        assert!(args.access.secret_files().is_empty());
        assert!(!args.access.allow_shared_secret_files);
        let args = crate::test_support::args(&[
            "--tls-cert=c.pem",
            "--tls-key=k.pem",
            "--auth-token-file=t",
            "--metrics-token-file=m",
            "--allow-shared-secret-files",
        ])
        .unwrap();
        let flags: Vec<&str> = args.access.secret_files().iter().map(|f| f.0).collect();
        assert_eq!(
            flags,
            ["--tls-key", "--auth-token-file", "--metrics-token-file"]
        );
        assert!(args.access.allow_shared_secret_files);
    }

    #[test]
    fn every_flag_has_an_env_twin_and_help() {
        let cmd = Args::command();
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            // Commands that print and exit, not settings.
            if id == "help" || id == "version" || id == "openapi" {
                continue;
            }
            assert!(
                arg.get_env().is_some(),
                "--{id} has no environment variable"
            );
            assert!(arg.get_help().is_some(), "--{id} has no help");
        }
    }

    #[test]
    fn defaults() {
        let args = Args::try_parse_from(["enygma-server"]).unwrap();
        assert_eq!(args.bind.to_string(), "0.0.0.0");
        assert_eq!(args.port, 3003);
        assert_eq!(
            args.admin_bind,
            AdminBind(Some("127.0.0.1:9464".parse().unwrap()))
        );
        assert_eq!(args.keys_dir, PathBuf::from("keys"));
        assert_eq!(args.body_limit, 65536);
        let adm = args.admission();
        let cpus = std::thread::available_parallelism().unwrap().get();
        // A slot per CPU, threads that follow the queue.
        assert_eq!(adm.max_inflight, Some(cpus));
        assert_eq!(adm.prove_threads, ProveThreads::Adaptive(cpus));
        assert_eq!(adm.queue_timeout, Duration::from_secs(60));
        // At full load a proof has one thread: 350 ms, and ceil(60 s / 350 ms) = 172 per slot.
        assert_eq!(adm.service_time, default_service_time(1));
        assert_eq!(adm.queue_depth, 172 * cpus);
        assert_eq!(adm.fair.as_ref().unwrap().caller_max_inflight, cpus);
        assert_eq!(args.drain_timeout(), Duration::from_secs(90));
        assert_eq!(args.log_format, LogFormat::Text);
        assert_eq!(args.hosted(), statements::instances().collect::<Vec<_>>());
        assert_eq!(args.hosted().len(), 18);
        assert!(!args.require_keys);
        let access = &args.access;
        assert!(access.tls_files().is_none());
        assert!(access.auth_token_file.is_none() && access.metrics_token_file.is_none());
        let limits = access.limits();
        assert_eq!(limits.header_read_timeout, Duration::from_secs(10));
        assert_eq!(limits.body_read_timeout, Duration::from_secs(10));
        assert_eq!(limits.max_connections, 1024);
        assert_eq!(limits.max_header_bytes, 16384);
        assert_eq!(limits.http2_max_streams, 16);
        assert_eq!(limits.max_unauthenticated, 512);
        assert_eq!(limits.max_connections_per_ip, 128);
        assert_eq!(limits.tls_handshake_timeout, Duration::from_secs(5));
        assert_eq!(limits.max_connection_age, Duration::from_secs(600));
        assert_eq!(args.limits().early_answer_drain_bytes, args.body_limit);
        // The in-process default (tests, embedders) is the flags' default.
        assert_eq!(limits, crate::transport::Limits::default());
    }

    #[test]
    fn the_default_queue_holds_what_the_slots_work_off_within_the_timeout() {
        let ms = Duration::from_millis;
        assert_eq!(default_queue_depth(1, ms(60_000), ms(350)), 172);
        assert_eq!(default_queue_depth(2, ms(60_000), ms(700)), 172);
        assert_eq!(default_queue_depth(1, ms(1_000), ms(100)), 10);
        assert_eq!(default_queue_depth(3, ms(1_000), ms(300)), 12);
        assert_eq!(default_service_time(1), ms(350));
        assert_eq!(default_service_time(2), ms(200));
        assert_eq!(default_service_time(64), ms(200));
        // The reference's stress test (100 identical k=6 transfers at once) fits the default
        // queue, with room for the one in flight.
        let args = Args::try_parse_from(["enygma-server", "--prove-threads", "2"]).unwrap();
        assert!(args.admission().queue_depth >= 99);
        // Explicit flags win; a longer timeout deepens the derived queue.
        let args = Args::try_parse_from([
            "enygma-server",
            "--queue-timeout",
            "2m",
            "--expected-service-time",
            "1s",
            "--max-inflight",
            "2",
            "--drain-timeout",
            "5s",
        ])
        .unwrap();
        assert_eq!(args.admission().queue_depth, 240);
        assert_eq!(args.admission().service_time, ms(1_000));
        assert_eq!(args.drain_timeout(), ms(5_000));
    }

    #[test]
    fn access_flags() {
        let args = Args::try_parse_from([
            "enygma-server",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem",
            "--tls-client-ca",
            "ca.pem",
            "--auth-token-file",
            "tokens",
            "--header-read-timeout",
            "2s",
            "--max-connections",
            "8",
        ])
        .unwrap();
        let tls = args.access.tls_files().unwrap();
        assert_eq!(tls.cert, PathBuf::from("c.pem"));
        assert_eq!(tls.client_ca, Some(PathBuf::from("ca.pem")));
        assert_eq!(args.access.limits().max_connections, 8);
        assert_eq!(
            args.access.limits().header_read_timeout,
            Duration::from_secs(2)
        );
        // A certificate without its key, or a client CA without a certificate, is refused.
        assert!(Args::try_parse_from(["enygma-server", "--tls-cert", "c.pem"]).is_err());
        assert!(Args::try_parse_from(["enygma-server", "--tls-key", "k.pem"]).is_err());
        assert!(Args::try_parse_from(["enygma-server", "--tls-client-ca", "ca.pem"]).is_err());
        assert!(Args::try_parse_from(["enygma-server", "--max-header-bytes", "4096"]).is_err());
    }

    #[test]
    fn admin_bind_is_an_address_or_none() {
        let parse = |v: &str| Args::try_parse_from(["enygma-server", "--admin-bind", v]);
        assert_eq!(
            parse("0.0.0.0:9464").unwrap().admin_bind,
            AdminBind(Some("0.0.0.0:9464".parse().unwrap()))
        );
        assert_eq!(
            parse("[::1]:0").unwrap().admin_bind,
            AdminBind(Some("[::1]:0".parse().unwrap()))
        );
        assert_eq!(parse("none").unwrap().admin_bind, AdminBind(None));
        for bad in ["9464", "localhost:9464", "127.0.0.1", ""] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(
                err.contains("--admin-bind") && err.contains("ADDR:PORT"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn exposure_warnings_name_what_is_missing() {
        let open = Args::try_parse_from(["enygma-server"]).unwrap().access;
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let lo6: IpAddr = "::1".parse().unwrap();
        let w = open.exposure_warnings(any);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("without TLS") && w[1].contains("without bearer tokens"));
        // Each says what an attacker gets, and the flags that close it.
        assert!(w[0].contains("anyone on the network path can read the secret keys"));
        assert!(w[0].contains("--tls-cert"));
        assert!(w[1].contains("anyone who can reach the port can make the service prove"));
        assert!(w[1].contains("--auth-token-file"));
        assert!(w.iter().all(|w| w.starts_with("INSECURE: ")));
        assert!(open.exposure_warnings(lo).is_empty());
        assert!(open.exposure_warnings(lo6).is_empty());
        let hardened = Args::try_parse_from([
            "enygma-server",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem",
            "--auth-token-file",
            "t",
        ])
        .unwrap()
        .access;
        assert!(hardened.exposure_warnings(any).is_empty());
        let tls_only = Args::try_parse_from(["enygma-server", "--tls-cert", "c", "--tls-key", "k"])
            .unwrap()
            .access;
        assert_eq!(tls_only.exposure_warnings(any).len(), 1);
        let mtls = Args::try_parse_from([
            "enygma-server",
            "--tls-cert",
            "c",
            "--tls-key",
            "k",
            "--tls-client-ca",
            "ca",
        ])
        .unwrap()
        .access;
        assert!(mtls.exposure_warnings(any).is_empty());
    }

    #[test]
    fn circuits_and_require_keys() {
        let args = Args::try_parse_from([
            "enygma-server",
            "--circuits",
            "withdraw-k2,transfer-k6",
            "--require-keys",
        ])
        .unwrap();
        let stems: Vec<String> = args.hosted().iter().map(Instance::key_stem).collect();
        assert_eq!(stems, ["transfer-k6", "withdraw-k2"]);
        assert_eq!(args.missing_keys(), enygma_prover::MissingKeys::Refuse);
        let deposit = Args::try_parse_from(["enygma-server", "--circuits", "deposit"]).unwrap();
        assert_eq!(deposit.hosted().len(), 5);
        assert_eq!(deposit.missing_keys(), enygma_prover::MissingKeys::Create);
        let ceremony = Args::try_parse_from(["enygma-server", "--require-ceremony-keys"]).unwrap();
        assert_eq!(ceremony.missing_keys(), enygma_prover::MissingKeys::Refuse);
        let err = Args::try_parse_from(["enygma-server", "--circuits", "transfer-k9"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown circuit \"transfer-k9\""), "{err}");
        assert!(
            err.contains("transfer-k6") && err.contains("withdraw"),
            "{err}"
        );
    }

    #[test]
    fn table_memory_is_a_size_or_the_default_share() {
        use crate::tables::TableBudget;
        let parse = |flags: &[&str]| {
            Args::try_parse_from(std::iter::once("enygma-server").chain(flags.iter().copied()))
        };
        let budget = |flags: &[&str]| parse(flags).unwrap().tables(Vec::new()).budget;
        assert_eq!(
            budget(&["--table-memory", "2GiB"]),
            TableBudget::Fixed(2 << 30)
        );
        assert_eq!(budget(&["--table-memory", "0"]), TableBudget::Fixed(0));
        assert_eq!(
            budget(&["--table-memory", "500MB"]),
            TableBudget::Fixed(500_000_000)
        );
        // The default: half the limit, with room for the slots' proofs.
        match budget(&["--max-inflight", "3"]) {
            TableBudget::Share { in_flight, .. } => assert_eq!(in_flight, 3),
            other => panic!("{other:?}"),
        }
        let err = parse(&["--table-memory", "half"]).unwrap_err().to_string();
        assert!(err.contains("--table-memory takes bytes"), "{err}");
        let pinned = statements::by_stem("transfer-k6").unwrap();
        assert_eq!(
            parse(&["--precompute", "transfer-k6"])
                .unwrap()
                .tables(vec![pinned])
                .pinned,
            vec![pinned]
        );
    }

    #[test]
    fn precompute_names_hosted_circuits_or_is_refused() {
        let parse = |flags: &[&str]| {
            Args::try_parse_from(std::iter::once("enygma-server").chain(flags.iter().copied()))
        };
        let stems = |args: &Args| -> Vec<String> {
            args.precomputed()
                .unwrap()
                .iter()
                .map(Instance::key_stem)
                .collect()
        };
        let default = parse(&[]).unwrap();
        assert_eq!(default.precompute, Precompute::None);
        assert!(stems(&default).is_empty());
        assert!(!default.admission().pin_cpus);
        assert!(stems(&parse(&["--precompute", "none"]).unwrap()).is_empty());
        // `all` is every hosted circuit, in registry order.
        let all = parse(&[
            "--circuits",
            "withdraw-k2,transfer-k6",
            "--precompute",
            "all",
        ])
        .unwrap();
        assert_eq!(stems(&all), ["transfer-k6", "withdraw-k2"]);
        assert_eq!(
            parse(&["--precompute", "all"])
                .unwrap()
                .precomputed()
                .unwrap(),
            statements::instances().collect::<Vec<_>>()
        );
        let some = parse(&["--precompute", "transfer-k6, deposit-k2"]).unwrap();
        assert_eq!(stems(&some), ["transfer-k6", "deposit-k2"]);
        assert_eq!(
            stems(&parse(&["--precompute", "deposit"]).unwrap()).len(),
            5,
            "a statement name: every k"
        );
        // An unknown circuit: refused while parsing, with the valid names.
        let err = parse(&["--precompute", "transfer-k9"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown circuit \"transfer-k9\"")
                && err.contains("transfer-k6")
                && err.contains("`all`"),
            "{err}"
        );
        // A circuit this server does not host: refused at start, naming it.
        let err = parse(&["--circuits", "transfer-k6", "--precompute", "deposit-k2"])
            .unwrap()
            .precomputed()
            .unwrap_err();
        assert!(
            err.contains("deposit-k2") && err.contains("does not host"),
            "{err}"
        );
        let pinned = parse(&["--pin-cpus", "--max-inflight", "2"]).unwrap();
        assert!(pinned.admission().pin_cpus);
    }

    #[test]
    fn either_thread_flag_gives_every_slot_a_pool_of_its_own() {
        let cpus = std::thread::available_parallelism().unwrap().get();
        let adm = |flags: &[&str]| {
            Args::try_parse_from(std::iter::once("enygma-server").chain(flags.iter().copied()))
                .unwrap()
                .admission()
        };
        let one = adm(&["--max-inflight", "1"]);
        assert_eq!(
            (one.max_inflight, one.prove_threads),
            (Some(1), ProveThreads::PerSlot(cpus))
        );
        assert_eq!(one.service_time, default_service_time(cpus));
        let split = adm(&["--max-inflight", "2", "--prove-threads", "1"]);
        assert_eq!(
            (split.max_inflight, split.prove_threads),
            (Some(2), ProveThreads::PerSlot(1))
        );
        assert_eq!(split.service_time, Duration::from_millis(350));
        assert_eq!(split.queue_depth, 2 * 172);
        let threads = adm(&["--prove-threads", "1"]);
        assert_eq!(
            (threads.max_inflight, threads.prove_threads),
            (Some(1), ProveThreads::PerSlot(1))
        );
        let unlimited = adm(&["--unlimited"]);
        assert_eq!(
            (unlimited.max_inflight, unlimited.prove_threads),
            (None, ProveThreads::PerSlot(cpus))
        );
    }

    #[test]
    fn flags_and_unlimited() {
        let args = Args::try_parse_from([
            "enygma-server",
            "--max-inflight",
            "3",
            "--queue-timeout",
            "1500ms",
            "--unlimited",
            "--log-format",
            "json",
        ])
        .unwrap();
        let adm = args.admission();
        assert_eq!(adm.max_inflight, None);
        // ceil(1.5 s / service time) x 3
        let per_slot = (1.5 / adm.service_time.as_secs_f64()).ceil() as usize;
        assert_eq!(adm.queue_depth, 3 * per_slot);
        assert_eq!(adm.queue_timeout, Duration::from_millis(1500));
        assert_eq!(args.log_format, LogFormat::Json);
        assert!(Args::try_parse_from(["enygma-server", "--max-inflight", "0"]).is_err());
    }
}
