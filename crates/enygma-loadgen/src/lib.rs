//! `enygma-loadgen`: closed- and open-loop load generation against an Enygma (or reference)
//! prove service, RSS sampling, reports and charts, an A/B runner and a capacity planner.
//!
//! One module, one job:
//! - `schedule`: the closed-loop phase plan and the seeded Poisson arrival schedule;
//! - `pool`: the request-body pool workers cycle through;
//! - `mix`: the routes of a run: one, or a weighted `--mix` of statement instances;
//! - `client`: the plain-HTTP client and one timed request;
//! - `metrics`: finding the "served" counter in the server's Prometheus samples;
//! - `rss`: sampling VmRSS from `/proc/<pid>/status`;
//! - `spawn`: starting/stopping a server and waiting until it is ready;
//! - `prove_log`: internal prove times from a spawned server's timing lines (the reference);
//! - `load`: running one closed-loop or open-loop phase and collecting per-request records;
//! - `stats`: exact percentiles and summaries;
//! - `report`: the report model and how records become levels, soak windows, open-loop rows;
//! - `output`: writing `report.json`, `report.md`, `requests.csv`, `rss.csv`;
//! - `chart`: SVG charts;
//! - `run`: the `run` subcommand (orchestrates levels, soak and open-loop phases);
//! - `ab`: the A/B runner and the `--max-inflight`/`--prove-threads` sweep;
//! - `claims`: the public load test's claims checked on a report (peak, fall, growth, memory, soak);
//! - `ab_variant`: the servers an A/B run compares;
//! - `ab_report`: the best setting, `ab.md`, `ab.svg`, `ab.json`;
//! - `token`: bearer tokens (`--token`, `env:VAR`) and keeping them out of every output;
//! - `caller_spec`: the named callers of a `callers` run and their schedules;
//! - `callers`: the `callers` subcommand (several callers' loops at once);
//! - `callers_report`: each caller's figures and the total, `report.json` and `report.md`;
//! - `retries`: the `retries` subcommand (a gateway that retries after a timeout, with or
//!   without idempotency keys) and its report;
//! - `plan`: the capacity planner;
//! - `machine`: CPU model/cores, dates and slugs;
//! - `progress`: the progress line.
//!
//! Modules are private; what the binary and the tests use is re-exported below.
//!
//! Durations, `Server-Timing` and Prometheus samples are read with `enygma_formats`, the
//! formats' one owner, shared with the server.

mod ab;
mod ab_report;
mod ab_rounds;
mod ab_variant;
mod caller_spec;
mod callers;
mod callers_report;
mod chart;
mod claims;
mod cli;
mod client;
mod load;
mod machine;
mod metrics;
mod mix;
mod output;
mod plan;
mod pool;
mod progress;
mod prove_log;
mod report;
mod retries;
mod rss;
mod run;
mod schedule;
mod spawn;
mod stats;
mod token;

/// The `ab` subcommand: the A/B runner and its sweep.
pub use ab::main as run_ab;
/// The `callers` subcommand: several named callers' loads at once.
pub use callers::main as run_callers;
/// The command line of every subcommand.
pub use cli::{Cli, Command};
/// The plain-HTTP client the loads send with.
pub use client::HttpClient;
/// A statement instance's pool of generated request bodies.
pub use mix::generate_pool;
/// The `plan` subcommand: the capacity planner.
pub use plan::main as plan_capacity;
/// The `retries` subcommand: a gateway that sends a request again after a timeout.
pub use retries::main as run_retries;
/// The `run` subcommand: closed-loop levels, soak and open-loop phases.
pub use run::main as run_load;
/// The seeded Poisson arrival times of an open-loop phase.
pub use schedule::poisson_schedule;
/// Exact percentiles of sorted samples.
pub use stats::percentile;
/// A bearer token, kept out of every output.
pub use token::Token;
