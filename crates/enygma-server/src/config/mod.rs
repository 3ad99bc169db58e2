//! Command line and environment configuration, resolved into one validated [`Config`].
//!
//! Every flag has an environment variable twin (`--port` / `ENYGMA_PORT`, ...); a flag given on
//! the command line wins over its variable. [`Args`] is what clap parses; [`Config::from_args`]
//! resolves every default that depends on the machine or on other flags, once, and refuses a
//! combination that cannot work ([`ConfigError`]).

mod access;
mod args;
mod headings;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

pub use access::AccessArgs;
pub use args::{AdminBind, Args, LogFormat};

use enygma_prover::{Instance, MissingKeys};

use crate::admission::AdmissionConfig;
use crate::idempotency::IdempotencyConfig;
use crate::tables::TableConfig;
use crate::transport::Limits;

/// A combination of flags that cannot work.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `--precompute` names an instance that `--circuits` does not host.
    #[error("{0}")]
    Precompute(String),
}

/// The service's configuration: every flag with its default resolved, checked once at start.
pub struct Config {
    /// The API listener's address (`--bind`, `--port`).
    pub api: SocketAddr,
    /// The admin listener's (`--admin-bind`).
    pub admin_bind: AdminBind,
    pub keys_dir: PathBuf,
    /// The statement instances served at start (`--circuits`, else all).
    pub hosted: Vec<Instance>,
    /// `--circuits @FILE`: the file the hosted list is read from again on SIGHUP.
    pub hosted_file: Option<PathBuf>,
    /// The hosted instances whose MSM tables are built at key load (`--precompute`).
    pub precomputed: Vec<Instance>,
    /// Where matrices and tables are kept between runs (`--cache-dir`), or none.
    pub cache_dir: Option<PathBuf>,
    /// `--require-keys`.
    pub require_keys: bool,
    /// `--require-ceremony-keys`.
    pub require_ceremony_keys: bool,
    /// What to do about a missing proving key.
    pub missing_keys: MissingKeys,
    /// `--unlimited`: no cap and no queue.
    pub unlimited: bool,
    pub admission: AdmissionConfig,
    pub tables: TableConfig,
    /// How long and within which memory the answers of keyed proving requests are kept
    /// (`--idempotency-ttl`, `--idempotency-memory`).
    pub idempotency: IdempotencyConfig,
    /// The API listener's connection-level limits.
    pub limits: Limits,
    pub body_limit: usize,
    pub drain_timeout: Duration,
    pub log_format: LogFormat,
    /// TLS, token files and the exposure checks.
    pub access: AccessArgs,
}

impl Config {
    /// Resolves `args`: every default derived here, and nowhere else.
    pub fn from_args(args: &Args) -> Result<Config, ConfigError> {
        let precomputed = args.precomputed().map_err(ConfigError::Precompute)?;
        Ok(Config {
            api: SocketAddr::new(args.bind, args.port),
            admin_bind: args.admin_bind,
            keys_dir: args.keys_dir.clone(),
            hosted: args.hosted(),
            hosted_file: args.hosted_file(),
            tables: args.tables(precomputed.clone()),
            precomputed,
            cache_dir: args.cache_dir(),
            require_keys: args.require_keys,
            require_ceremony_keys: args.require_ceremony_keys,
            missing_keys: args.missing_keys(),
            unlimited: args.unlimited,
            admission: args.admission(),
            idempotency: args.idempotency(),
            limits: args.limits(),
            body_limit: args.body_limit,
            drain_timeout: args.drain_timeout(),
            log_format: args.log_format,
            access: args.access.clone(),
        })
    }

    /// The address `--bind` names.
    pub fn bind(&self) -> IpAddr {
        self.api.ip()
    }
}
