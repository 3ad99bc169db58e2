//! `enygma-loadgen`: closed- and open-loop load generation against an Enygma (or reference)
//! prove service, RSS sampling, reports and charts, an A/B runner and a capacity planner.
//!
//! One module, one job:
//! - [`schedule`]: the closed-loop phase plan and the seeded Poisson arrival schedule;
//! - [`pool`]: the request-body pool workers cycle through;
//! - [`mix`]: the routes of a run: one, or a weighted `--mix` of statement instances;
//! - [`client`]: the plain-HTTP client and one timed request;
//! - [`metrics`]: finding the "served" counter in the server's Prometheus samples;
//! - [`rss`]: sampling VmRSS from `/proc/<pid>/status`;
//! - [`spawn`]: starting/stopping a server and waiting until it is ready;
//! - [`prove_log`]: internal prove times from a spawned server's timing lines (the reference);
//! - [`load`]: running one closed-loop or open-loop phase and collecting per-request records;
//! - [`stats`]: exact percentiles and summaries;
//! - [`report`]: the report model and how records become levels, soak windows, open-loop rows;
//! - [`output`]: writing `report.json`, `report.md`, `requests.csv`, `rss.csv`;
//! - [`chart`]: SVG charts;
//! - [`run`]: the `run` subcommand (orchestrates levels, soak and open-loop phases);
//! - [`ab`]: the A/B runner and the `--max-inflight`/`--prove-threads` sweep;
//! - [`claims`]: the public load test's claims checked on a report (peak, fall, growth, memory, soak);
//! - [`ab_report`]: the best setting, `ab.md`, `ab.svg`, `ab.json`;
//! - [`token`]: bearer tokens (`--token`, `env:VAR`) and keeping them out of every output;
//! - [`caller_spec`]: the named callers of a `callers` run and their schedules;
//! - [`callers`]: the `callers` subcommand (several callers' loops at once);
//! - [`callers_report`]: each caller's figures and the total, `report.json` and `report.md`;
//! - [`plan`]: the capacity planner;
//! - [`machine`]: CPU model/cores, dates and slugs;
//! - [`progress`]: the progress line.
//!
//! Durations, `Server-Timing` and Prometheus samples are read with `enygma_formats`, the
//! formats' one owner, shared with the server.

pub mod ab;
pub mod ab_report;
pub mod ab_rounds;
pub mod caller_spec;
pub mod callers;
pub mod callers_report;
pub mod chart;
pub mod claims;
pub mod cli;
pub mod client;
pub mod load;
pub mod machine;
pub mod metrics;
pub mod mix;
pub mod output;
pub mod plan;
pub mod pool;
pub mod progress;
pub mod prove_log;
pub mod report;
pub mod rss;
pub mod run;
pub mod schedule;
pub mod spawn;
pub mod stats;
pub mod token;
