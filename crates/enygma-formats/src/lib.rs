//! The small text formats that `enygma-server` writes and `enygma-loadgen` (and the server's
//! own tests) read, each with one owner:
//! - [`server_timing`]: the `Server-Timing` response header (written by the server, parsed by
//!   the load generator and the tests);
//! - [`prometheus`]: samples of the Prometheus text exposition (`/metrics`);
//! - [`duration`]: durations on the command line (`30s`, `1.5s`, `500ms`, `2m`, `1h`);
//! - [`reference_log`]: the reference service's per-request timing line (its internal prove
//!   time, read by the load generator when it starts the reference).

pub mod duration;
pub mod prometheus;
pub mod reference_log;
pub mod server_timing;
