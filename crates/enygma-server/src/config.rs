//! Command line and environment configuration.
//!
//! Every flag has an environment variable twin (`--port` / `ENYGMA_PORT`, ...); a flag given on
//! the command line wins over its variable.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use enygma_prover::statements::{self, Instance};

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
#[command(name = "enygma-server", version, about, long_about)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, env = "ENYGMA_BIND", default_value = "0.0.0.0")]
    pub bind: IpAddr,

    /// TCP port to listen on (0 picks a free port; the chosen address is logged).
    #[arg(long, env = "ENYGMA_PORT", default_value_t = 3003)]
    pub port: u16,

    /// Directory of the proving and verifying keys ({stem}.pk, {stem}.vk). Missing keys are
    /// created there at startup (development keys, logged as such) unless --require-keys.
    #[arg(long, env = "ENYGMA_KEYS_DIR", default_value = "keys")]
    pub keys_dir: PathBuf,

    /// The circuits this server hosts, comma-separated: key stems (transfer-k6) or statement
    /// names (deposit: every k). Only their keys are loaded and only their routes answer (the
    /// others 404); /readyz waits for them only [default: every statement and k].
    #[arg(long, env = "ENYGMA_CIRCUITS", value_name = "LIST", value_parser = parse_circuits)]
    pub circuits: Option<CircuitList>,

    /// Refuse to start when a proving key of a hosted circuit is missing, instead of creating
    /// development keys (for production).
    #[arg(long, env = "ENYGMA_REQUIRE_KEYS")]
    pub require_keys: bool,

    /// Maximum number of proofs computed at once, across all statements and k [default: 1, with --prove-threads
    /// using every CPU: the best setting of the load generator's sweep on a 2-core machine, see
    /// benches/results/2026-12-02-intel-xeon-processor/ab.md].
    #[arg(long, env = "ENYGMA_MAX_INFLIGHT", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_inflight: Option<u32>,

    /// Threads used by each proof (each proof slot owns a rayon pool of this size) [default:
    /// number of CPUs].
    #[arg(long, env = "ENYGMA_PROVE_THREADS", value_parser = clap::value_parser!(u32).range(1..))]
    pub prove_threads: Option<u32>,

    /// Maximum number of admitted requests waiting for a proof slot; beyond it requests are shed
    /// at once with 503 and Retry-After. 0 disables queueing [default: 4 x max-inflight].
    #[arg(long, env = "ENYGMA_QUEUE_DEPTH")]
    pub queue_depth: Option<u32>,

    /// Longest a request may wait in the queue before it is answered 504 (e.g. 30s, 1500ms, 2m).
    #[arg(long, env = "ENYGMA_QUEUE_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub queue_timeout: Duration,

    /// Behave like the reference for A/B tests: no cap and no queue, every request starts
    /// proving at once (each on its own pool of --prove-threads threads).
    #[arg(long, env = "ENYGMA_UNLIMITED")]
    pub unlimited: bool,

    /// Largest accepted request body in bytes; larger bodies are answered 413.
    #[arg(long, env = "ENYGMA_BODY_LIMIT", default_value_t = 64 * 1024)]
    pub body_limit: usize,

    /// On SIGTERM/SIGINT, how long to wait for in-flight and queued requests before exiting
    /// anyway (exit code 1).
    #[arg(long, env = "ENYGMA_DRAIN_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub drain_timeout: Duration,

    /// Maximum number of proof verifications computed at once (the statements' verify routes);
    /// verification has its own limit and never enters the proving queue.
    #[arg(long, env = "ENYGMA_VERIFY_MAX_INFLIGHT", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub verify_max_inflight: u32,

    /// Maximum number of verifications waiting for a verify slot (they share --queue-timeout).
    #[arg(long, env = "ENYGMA_VERIFY_QUEUE_DEPTH", default_value_t = 16)]
    pub verify_queue_depth: u32,

    /// Log format.
    #[arg(long, env = "ENYGMA_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// The admission settings with every default resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// `None` for `--unlimited`.
    pub max_inflight: Option<usize>,
    pub prove_threads: usize,
    pub queue_depth: usize,
    pub queue_timeout: Duration,
    pub verify_max_inflight: usize,
    pub verify_queue_depth: usize,
}

/// A `--circuits` list, resolved against the statement registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitList(pub Vec<Instance>);

/// Parses `--circuits`; an unknown item is an error that lists the valid ones.
fn parse_circuits(s: &str) -> Result<CircuitList, String> {
    statements::resolve_list(s).map(CircuitList)
}

impl Args {
    /// The statement instances to host: `--circuits`, else all of them.
    pub fn hosted(&self) -> Vec<Instance> {
        match &self.circuits {
            Some(CircuitList(list)) => list.clone(),
            None => statements::instances().collect(),
        }
    }

    /// What to do about a missing proving key.
    pub fn missing_keys(&self) -> enygma_prover::MissingKeys {
        if self.require_keys {
            enygma_prover::MissingKeys::Refuse
        } else {
            enygma_prover::MissingKeys::Create
        }
    }

    /// Resolves the defaults that depend on the machine or on other flags.
    pub fn admission(&self) -> AdmissionConfig {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let max_inflight = self.max_inflight.map_or(1, |n| n as usize);
        AdmissionConfig {
            max_inflight: (!self.unlimited).then_some(max_inflight),
            prove_threads: self.prove_threads.map_or(cpus, |n| n as usize),
            queue_depth: self
                .queue_depth
                .map(|n| n as usize)
                .unwrap_or(4 * max_inflight),
            queue_timeout: self.queue_timeout,
            verify_max_inflight: self.verify_max_inflight as usize,
            verify_queue_depth: self.verify_queue_depth as usize,
        }
    }
}

/// Parses `250ms`, `30s`, `2m`, `1h` or a bare number of seconds (`30`, `0.5`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: expected e.g. 30s, 1500ms, 2m"))?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1e3,
        "m" | "min" | "mins" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "invalid duration unit {other:?} in {s:?}: use ms, s, m or h"
            ))
        }
    };
    if !seconds.is_finite() || seconds > 1e9 {
        return Err(format!("duration {s:?} out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
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
    fn every_flag_has_an_env_twin_and_help() {
        let cmd = Args::command();
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
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
        assert_eq!(args.keys_dir, PathBuf::from("keys"));
        assert_eq!(args.body_limit, 65536);
        let adm = args.admission();
        let cpus = std::thread::available_parallelism().unwrap().get();
        assert_eq!(adm.max_inflight, Some(1));
        assert_eq!(adm.queue_depth, 4);
        assert_eq!(adm.prove_threads, cpus);
        assert_eq!(adm.queue_timeout, Duration::from_secs(30));
        assert_eq!(args.log_format, LogFormat::Text);
        assert_eq!(args.hosted(), statements::instances().collect::<Vec<_>>());
        assert_eq!(args.hosted().len(), 15);
        assert!(!args.require_keys);
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
        assert_eq!(adm.queue_depth, 12);
        assert_eq!(adm.queue_timeout, Duration::from_millis(1500));
        assert_eq!(args.log_format, LogFormat::Json);
        assert!(Args::try_parse_from(["enygma-server", "--max-inflight", "0"]).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("0.5s").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("").is_err());
    }
}
