//! `enygma-server` binary: see the library documentation (`cargo doc -p enygma-server`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches};
use tracing_subscriber::EnvFilter;

use enygma_server::{
    check_file_modes as check_modes, missing_proving_keys, non_ceremony_keys, reload_on_sighup,
    shutdown_signal, AccessArgs, AdminBind, AdmissionConfig, AppState, Args, Auth, Config,
    ConfigError, Exit, FileKind, Limits, LogFormat, ProveThreads, RealBackend, Service, Tls,
    TokenFile, Transport,
};

fn main() -> ExitCode {
    let malloc = enygma_server::tune_malloc();
    let matches = Args::command().get_matches();
    let args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // The default admin port may be another server's on this host: then any free port.
    let admin_default =
        matches.value_source("admin_bind") == Some(clap::parser::ValueSource::DefaultValue);
    if args.prints_openapi() {
        // Before any logging: stdout is the document. A reader that stops early (`| head`)
        // is no failure of ours.
        use std::io::Write;
        let written = std::io::stdout().write_all(enygma_server::openapi_document().as_bytes());
        return match written {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => ExitCode::FAILURE,
            _ => ExitCode::SUCCESS,
        };
    }
    init_tracing(args.log_format);
    install_panic_hook();
    tracing::info!(
        version = enygma_build_info::VERSION,
        commit = enygma_build_info::COMMIT,
        "enygma-server starting"
    );
    tracing::info!(
        mmap_threshold = malloc.mmap_threshold.map(|n| n as u64),
        arena_max = malloc.arena_max.map(|n| n as u64),
        "malloc settings (unset: the environment's or glibc's)"
    );

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::from(Exit::Startup as u8);
        }
    };
    let exit = runtime.block_on(run(args, admin_default));
    // Do not wait for a key load still running on the blocking pool.
    runtime.shutdown_timeout(Duration::from_secs(1));
    ExitCode::from(exit as u8)
}

/// Why the service did not start (exit code 2). Logged once, at ERROR, with what to do.
#[derive(Debug, thiserror::Error)]
enum StartupError {
    /// A combination of flags that cannot work.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An admission layout that cannot be built (more pinned threads than CPUs, ...).
    #[error("{0}")]
    Admission(String),
    #[error(
        "--require-keys: proving keys of hosted circuits are missing: {0}; not starting \
         (provide them, or host fewer circuits with --circuits)"
    )]
    MissingKeys(String),
    #[error(
        "--require-ceremony-keys: hosted circuits have keys that do not come from a ceremony: \
         {0}; not starting (import the ceremony's zkeys with `enygma import-zkey`, see \
         docs/production-keys.md)"
    )]
    NonCeremonyKeys(String),
    /// A secret others may read, or a proving key others may write, one a line.
    #[error("not starting: {0}")]
    FileModes(String),
    /// A TLS or token file that cannot be loaded.
    #[error("{0}")]
    Access(String),
    #[error("cannot listen on {addr}: {error}")]
    Listen {
        addr: std::net::SocketAddr,
        error: std::io::Error,
    },
    #[error(
        "cannot listen on the admin address {addr}: {error}; give each server on a host its \
         own --admin-bind, or --admin-bind none"
    )]
    AdminListen {
        addr: std::net::SocketAddr,
        error: std::io::Error,
    },
}

/// The service's start, step by step; every refusal is a [`StartupError`].
async fn run(args: Args, admin_default: bool) -> Exit {
    match start(&args, admin_default).await {
        Ok(started) => started.serve().await,
        Err(e) => {
            for line in e.to_string().lines() {
                tracing::error!("cannot start: {line}");
            }
            Exit::Startup
        }
    }
}

/// Everything resolved and bound, before the keys load.
struct Started {
    state: Arc<AppState<RealBackend>>,
    config: Config,
    listener: tokio::net::TcpListener,
    admin: Option<tokio::net::TcpListener>,
    transport: Transport,
}

async fn start(args: &Args, admin_default: bool) -> Result<Started, StartupError> {
    let mut config = Config::from_args(args)?;
    log_settings(&config);
    check_keys(&config)?;
    check_file_modes(&config)?;
    let (tls, auth) = load_access(&config.access)?;
    log_access(&tls, &auth, &config.limits);
    log_admission(&config.admission);
    share_among_callers(&mut config.admission, &auth, &tls);
    for warning in config.access.exposure_warnings(config.bind()) {
        tracing::warn!(bind = %config.bind(), port = config.api.port(), "{warning}");
    }
    tracing::info!(
        table_memory = %config.tables.budget,
        build_after_proofs = enygma_server::BUILD_AFTER_PROOFS,
        "precomputed MSM tables for the circuits that receive proofs"
    );
    let mut state =
        AppState::<RealBackend>::new(&config.admission, config.body_limit, config.hosted.clone())
            .map_err(StartupError::Admission)?;
    if let Some(file) = &config.hosted_file {
        state = state.with_hosted_file(file.clone());
    }
    let state = Arc::new(
        state
            .with_auth(auth.clone())
            .with_tables(config.tables.clone())
            .with_idempotency(config.idempotency),
    );
    // Installed before the server says it listens, whatever is configured: from then on a
    // SIGHUP reloads (or logs that there is nothing to reload), never kills.
    tokio::spawn(reload_on_sighup(
        state.clone(),
        tls.clone(),
        auth,
        config.access.allow_shared_secret_files,
    ));
    let listener = bind_api(config.api).await?;
    let admin = bind_admin(config.admin_bind, admin_default).await?;
    let transport = Transport {
        tls,
        limits: config.limits.clone(),
    };
    Ok(Started {
        state,
        config,
        listener,
        admin,
        transport,
    })
}

impl Started {
    /// Serves until a signal stops it, the keys loading in the background.
    async fn serve(self) -> Exit {
        let Config {
            keys_dir,
            missing_keys,
            hosted,
            precomputed,
            cache_dir,
            drain_timeout,
            require_ceremony_keys,
            access,
            ..
        } = self.config;
        let allow_shared_files = access.allow_shared_secret_files;
        Service {
            state: self.state,
            listener: self.listener,
            admin: self.admin,
            load: move || {
                let backend = RealBackend::load(
                    &keys_dir,
                    &hosted,
                    missing_keys,
                    cache_dir,
                    &precomputed,
                    require_ceremony_keys,
                    allow_shared_files,
                )?;
                // What the load freed (setup-mode synthesis, key file bytes) would otherwise
                // stay resident: see `release_free_memory`.
                enygma_server::release_free_memory();
                Ok(backend)
            },
            shutdown: shutdown_signal(),
            drain_timeout,
            transport: self.transport,
        }
        .run()
        .await
    }
}

fn log_settings(config: &Config) {
    let stems = |list: &[enygma_prover::Instance]| -> String {
        list.iter()
            .map(|i| i.key_stem())
            .collect::<Vec<_>>()
            .join(",")
    };
    let admission = &config.admission;
    tracing::info!(
        max_inflight = admission.max_inflight.map(|n| n as u64),
        prove_threads = admission.prove_threads.pool_threads(),
        queue_depth = admission.queue_depth,
        queue_timeout_s = admission.queue_timeout.as_secs_f64(),
        expected_service_time_s = admission.service_time.as_secs_f64(),
        verify_max_inflight = admission.verify_max_inflight,
        body_limit = config.body_limit,
        idempotency_ttl_s = config.idempotency.ttl.as_secs_f64(),
        idempotency_memory = config.idempotency.memory,
        keys_dir = %config.keys_dir.display(),
        unlimited = config.unlimited,
        circuits = %stems(&config.hosted),
        circuits_file = config.hosted_file.as_ref().map(|f| tracing::field::display(f.display())),
        require_keys = config.require_keys,
        require_ceremony_keys = config.require_ceremony_keys,
        precompute = %stems(&config.precomputed),
        pin_cpus = admission.pin_cpus,
        msm_arithmetic = ?enygma_prover::MsmArithmetic::detected(),
        "starting enygma-server"
    );
}

/// `--require-keys` and `--require-ceremony-keys`, before anything listens.
fn check_keys(config: &Config) -> Result<(), StartupError> {
    let hosted = &config.hosted;
    if config.require_keys {
        let missing = missing_proving_keys(&config.keys_dir, hosted);
        if !missing.is_empty() {
            let files: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
            return Err(StartupError::MissingKeys(files.join(", ")));
        }
    }
    if config.require_ceremony_keys {
        let refused = non_ceremony_keys(&config.keys_dir, hosted);
        if !refused.is_empty() {
            return Err(StartupError::NonCeremonyKeys(refused.join("; ")));
        }
    }
    Ok(())
}

fn log_access(tls: &Option<Arc<Tls>>, auth: &Auth, limits: &Limits) {
    tracing::info!(
        tls = tls.is_some(),
        client_certificates = tls.as_ref().is_some_and(|t| t.requires_client_cert()),
        api_tokens = auth.api.as_ref().map(|t| t.len() as u64),
        metrics_tokens = auth.metrics.as_ref().map(|t| t.len() as u64),
        header_read_timeout_s = limits.header_read_timeout.as_secs_f64(),
        body_read_timeout_s = limits.body_read_timeout.as_secs_f64(),
        max_connections = limits.max_connections,
        max_header_bytes = limits.max_header_bytes,
        http2_max_streams = limits.http2_max_streams,
        max_unauthenticated_connections = limits.max_unauthenticated,
        max_connections_per_ip = limits.max_connections_per_ip,
        unauthenticated_timeout_s = limits.unauthenticated_timeout.as_secs_f64(),
        trusted_proxies = limits.trusted_proxies.len(),
        tls_handshake_timeout_s = limits.tls_handshake_timeout.as_secs_f64(),
        max_connection_age_s = limits.max_connection_age.as_secs_f64(),
        "transport and access control"
    );
}

fn log_admission(admission: &AdmissionConfig) {
    match (admission.max_inflight, admission.prove_threads) {
        (Some(slots), ProveThreads::Adaptive(threads)) => tracing::info!(
            slots,
            threads,
            "admission: {slots} proof slots, threads that follow the queue: a proof that starts \
             alone gets all {threads} prove threads, one that starts beside others a thread of \
             its own (--max-inflight or --prove-threads give each slot a fixed pool instead)"
        ),
        (Some(slots), ProveThreads::PerSlot(threads)) => tracing::info!(
            slots,
            threads,
            "admission: {slots} proof slots, each with a pool of its own of {threads} prove \
             threads (--max-inflight, --prove-threads)"
        ),
        (None, threads) => tracing::info!(
            threads = threads.pool_threads(),
            "admission: unlimited, every proof on a fresh pool of its own"
        ),
    }
}

/// Under fair shares, a share for every caller the token files and the client certificate
/// names name; the rest share `anonymous`.
fn share_among_callers(admission: &mut AdmissionConfig, auth: &Auth, tls: &Option<Arc<Tls>>) {
    let Some(fair) = &mut admission.fair else {
        tracing::info!("admission: one FIFO queue for every caller");
        return;
    };
    fair.callers = [&auth.api, &auth.metrics]
        .into_iter()
        .flatten()
        .flat_map(|t| t.callers())
        .chain(tls.iter().flat_map(|t| t.callers()))
        .collect();
    let names: Vec<(String, u32)> = fair
        .shares()
        .into_iter()
        .map(|(c, w)| (c.to_string(), w))
        .collect();
    tracing::info!(
        callers = ?names,
        caller_queue_depth = fair.caller_queue_depth,
        caller_max_inflight = fair.caller_max_inflight,
        "admission: fair shares per caller (plus anonymous)"
    );
}

async fn bind_api(addr: std::net::SocketAddr) -> Result<tokio::net::TcpListener, StartupError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|error| StartupError::Listen { addr, error })?;
    match listener.local_addr() {
        Ok(addr) => tracing::info!(addr = %addr, "listening"),
        Err(e) => tracing::warn!(error = %e, "listening (address unknown)"),
    }
    Ok(listener)
}

/// The admin listener (`--admin-bind`), bound. On the default address (`default`: the flag and
/// its variable unset) a port another process holds, a second server on the host, is no reason
/// to refuse the start: the listener takes a free port of the same address instead, logged.
async fn bind_admin(
    bind: AdminBind,
    default: bool,
) -> Result<Option<tokio::net::TcpListener>, StartupError> {
    let Some(addr) = bind.0 else {
        tracing::info!(
            "no admin listener (--admin-bind none): probes and /metrics on the API port only"
        );
        return Ok(None);
    };
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) if default && error.kind() == std::io::ErrorKind::AddrInUse => {
            let any = std::net::SocketAddr::new(addr.ip(), 0);
            let listener = tokio::net::TcpListener::bind(any)
                .await
                .map_err(|error| StartupError::AdminListen { addr: any, error })?;
            tracing::warn!(
                taken = %addr,
                "the default admin port is taken (another server on this host?): the admin \
                 listener takes a free port instead; give each server its own --admin-bind to \
                 choose"
            );
            listener
        }
        Err(error) => return Err(StartupError::AdminListen { addr, error }),
    };
    let bound = listener.local_addr().unwrap_or(addr);
    tracing::info!(
        addr = %bound,
        routes = "/livez /readyz /metrics",
        "admin listening (plain HTTP, no tokens)"
    );
    Ok(Some(listener))
}

/// The modes of the configured secrets and of the hosted instances' proving keys
/// ([`enygma_server::check_file_modes`]): refused, or with `--allow-shared-secret-files` warned.
fn check_file_modes(config: &Config) -> Result<(), StartupError> {
    let mut files = config.access.secret_files();
    files.extend(config.hosted.iter().map(|&i| {
        let key = enygma_prover::keys::KeyPaths::new(&config.keys_dir, i).proving;
        ("--keys-dir", key, FileKind::ProvingKey)
    }));
    match check_modes(&files) {
        Ok(()) => Ok(()),
        Err(refused) if config.access.allow_shared_secret_files => {
            for line in refused.lines() {
                tracing::warn!("--allow-shared-secret-files: {line}");
            }
            Ok(())
        }
        Err(refused) => Err(StartupError::FileModes(refused)),
    }
}

/// The TLS files and the token files.
fn load_access(access: &AccessArgs) -> Result<(Option<Arc<Tls>>, Arc<Auth>), StartupError> {
    let tls = access
        .tls_files()
        .map(|files| Tls::load(files).map(Arc::new))
        .transpose()
        .map_err(StartupError::Access)?;
    let load = |path: &Option<std::path::PathBuf>, flag| {
        path.as_deref()
            .map(|p| TokenFile::load(p, flag))
            .transpose()
            .map_err(StartupError::Access)
    };
    let auth = Auth {
        api: load(&access.auth_token_file, "--auth-token-file")?,
        metrics: load(&access.metrics_token_file, "--metrics-token-file")?,
    };
    Ok((tls, Arc::new(auth)))
}

fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::new(enygma_prover::log_filter());
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
    }
}

/// Logs panics without their formatted message: a formatted panic message may carry runtime
/// values (an `assert_eq!` in prover code could print a secret), a static one cannot.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&'static str>()
            .copied()
            .unwrap_or("(formatted message withheld)");
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let thread = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_owned();
        tracing::error!(thread = %thread, location = %location, panic = message, "panic");
    }));
}
