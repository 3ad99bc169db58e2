//! The command line ([`Args`]) and how its flags resolve into the settings of each part of the
//! service (admission, tables, limits).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use enygma_formats::duration::parse_duration;
use enygma_prover::statements::{self, Instance};

use super::access::AccessArgs;
use super::headings::*;
use crate::admission::{
    default_queue_depth, default_service_time, AdmissionConfig, AdmissionMode, FairConfig,
    ProveThreads,
};
use crate::caller::Caller;
use crate::idempotency::IdempotencyConfig;

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
    /// others 404); /readyz waits for them only. `@FILE`: the list is read from FILE (items
    /// separated by commas or newlines, `#` comments), and read again on every SIGHUP: circuits
    /// added to it are loaded and checked as at start (--require-keys,
    /// --require-ceremony-keys), circuits removed are retired (their routes 404, their proofs
    /// in flight and queued finish); a file that does not parse changes nothing. A plain LIST
    /// is fixed until a restart [default: every statement and k but the hidden-sender payments,
    /// which are hosted only when named].
    #[arg(help_heading = H_KEYS, long, env = "ENYGMA_CIRCUITS", value_name = "LIST|@FILE", value_parser = parse_circuits)]
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
    #[arg(help_heading = H_TABLES, long, env = "ENYGMA_TABLE_MEMORY", value_name = "BYTES", value_parser = crate::tables::parse_bytes)]
    pub table_memory: Option<u64>,

    /// Where the constraint matrices and the MSM tables are kept between runs: written once
    /// derived, read instead of deriving them again when a file there was written for the same
    /// circuit (the sources' fingerprint) or proving key (its SHA-256) and is whole, so that a
    /// restarted or new server starts in a fraction of the time and is at full speed after a
    /// fraction of a second instead of a table build. A stale or corrupt file is derived again
    /// and replaced; a directory that cannot be written (a read-only volume another process
    /// filled: `enygma cache`) costs only that. `none`: nothing is kept [default:
    /// <keys-dir>/cache].
    #[arg(help_heading = H_TABLES, long, env = "ENYGMA_CACHE_DIR", value_name = "DIR|none")]
    pub cache_dir: Option<PathBuf>,

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
    /// default --queue-depth; after start the estimate follows the observed proof times. When
    /// not given, the server measures it before it is ready: one proof of a generated request
    /// (of transfer-k6 when hosted, else of the largest hosted instance) on a proving slot, as
    /// a request would run, so the first burst is shed by this CPU's speed and not by another
    /// one's [default: measured at start; the default --queue-depth is derived from 200ms with
    /// 2 or more --prove-threads, 350ms with 1 and with the default shared pool (whose slots,
    /// when all busy, have a thread each): a k=6 transfer request on the 2-core development
    /// machines, benches/results/2026-12-05-intel-xeon.md; 0 also means the default].
    #[arg(help_heading = H_ADMISSION, long, env = "ENYGMA_EXPECTED_SERVICE_TIME", value_parser = parse_duration)]
    pub expected_service_time: Option<Duration>,

    /// Behave like the reference for A/B tests: no cap and no queue, every request starts
    /// proving at once (each on its own pool of --prove-threads threads).
    #[arg(help_heading = H_ADMISSION, long, env = "ENYGMA_UNLIMITED")]
    pub unlimited: bool,

    /// How long the answer of a proving request sent with an Idempotency-Key header is kept
    /// and given again to a request with the same key and body (e.g. 10m, 90s). Longer than a
    /// gateway retries one request; proofs and answers about the request (400, 422) are kept,
    /// refusals for load or time (503, 504) are not.
    #[arg(help_heading = H_IDEMPOTENCY, long, env = "ENYGMA_IDEMPOTENCY_TTL", value_name = "DURATION",
          default_value = "10m", value_parser = parse_duration)]
    pub idempotency_ttl: Duration,

    /// Memory the kept answers of keyed proving requests may take; past it the oldest are
    /// dropped first. Bytes, or with a unit: 64MiB, 1GiB (1024-based), 50MB (1000-based); 0
    /// keeps no answer (requests in flight are still shared).
    #[arg(help_heading = H_IDEMPOTENCY, long, env = "ENYGMA_IDEMPOTENCY_MEMORY", value_name = "BYTES",
          default_value = "64MiB", value_parser = parse_idempotency_memory)]
    pub idempotency_memory: u64,

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

/// Parses `--idempotency-memory`: bytes, or with a unit.
fn parse_idempotency_memory(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|_| format!("expected bytes, e.g. 0, 67108864, 64MiB or 1GiB; got {s:?}"))
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

/// A `--circuits` list, resolved against the statement registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitList {
    pub instances: Vec<Instance>,
    /// `@FILE`: where the list was read, to be read again on SIGHUP.
    pub file: Option<PathBuf>,
}

/// Parses `--circuits`: a list, or `@FILE` read now (the start's list). An unknown item is an
/// error that lists the valid ones; an unreadable file or a bad line names the file (and the
/// line).
fn parse_circuits(s: &str) -> Result<CircuitList, String> {
    if let Some(file) = s.strip_prefix('@') {
        let file = PathBuf::from(file);
        let instances = crate::hosting::read_list_file(&file)?;
        return Ok(CircuitList {
            instances,
            file: Some(file),
        });
    }
    statements::resolve_list(s)
        .map(|instances| CircuitList {
            instances,
            file: None,
        })
        .map_err(|e| e.to_string())
}

impl Args {
    /// The statement instances to host: `--circuits`, else all of them.
    pub(crate) fn hosted(&self) -> Vec<Instance> {
        match &self.circuits {
            Some(list) => list.instances.clone(),
            None => statements::instances().collect(),
        }
    }

    /// The hosted list's file (`--circuits @FILE`), read again on SIGHUP; none: the list is
    /// fixed.
    pub(crate) fn hosted_file(&self) -> Option<PathBuf> {
        self.circuits.as_ref().and_then(|list| list.file.clone())
    }

    /// Where matrices and tables are kept between runs (`--cache-dir`), or none.
    pub(crate) fn cache_dir(&self) -> Option<PathBuf> {
        match &self.cache_dir {
            None => Some(self.keys_dir.join("cache")),
            Some(dir) if dir.as_os_str() == "none" => None,
            Some(dir) => Some(dir.clone()),
        }
    }

    /// The hosted circuits whose MSM tables are precomputed, in registry order. A circuit that
    /// `--precompute` names but the server does not host is an error naming it.
    pub(crate) fn precomputed(&self) -> Result<Vec<Instance>, String> {
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
    pub(crate) fn tables(&self, pinned: Vec<Instance>) -> crate::tables::TableConfig {
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
    pub(crate) fn missing_keys(&self) -> enygma_prover::MissingKeys {
        if self.require_keys || self.require_ceremony_keys {
            enygma_prover::MissingKeys::Refuse
        } else {
            enygma_prover::MissingKeys::Create
        }
    }

    /// The connection-level limits: the transport flags', and `--body-limit` as the most an
    /// early answer's body is drained of over HTTP/2.
    pub(crate) fn limits(&self) -> crate::transport::Limits {
        crate::transport::Limits {
            early_answer_drain_bytes: self.body_limit,
            ..self.access.limits()
        }
    }

    /// Resolves the defaults that depend on the machine or on other flags.
    pub(crate) fn admission(&self) -> AdmissionConfig {
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
        let stated = self.expected_service_time.filter(|d| !d.is_zero());
        let service_time = stated.unwrap_or_else(|| default_service_time(threads_at_full_load));
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
            calibrate: stated.is_none() && !self.unlimited,
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

    /// The bounds of the kept answers of keyed proving requests.
    pub(crate) fn idempotency(&self) -> IdempotencyConfig {
        IdempotencyConfig {
            ttl: self.idempotency_ttl,
            memory: self.idempotency_memory,
        }
    }

    /// `--drain-timeout`, or long enough for a full queue: queue timeout + 30 s.
    pub(crate) fn drain_timeout(&self) -> Duration {
        self.drain_timeout
            .unwrap_or(self.queue_timeout + Duration::from_secs(30))
    }
}
