//! `enygma-server` binary: see the library documentation (`cargo doc -p enygma-server`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use enygma_server::admission::ProveThreads;
use enygma_server::auth::{Auth, TokenFile};
use enygma_server::config::{AccessArgs, AdminBind, Args, LogFormat};
use enygma_server::file_modes::{self, FileKind};
use enygma_server::prover::{missing_proving_keys, non_ceremony_keys, RealBackend};
use enygma_server::tls::Tls;
use enygma_server::transport::Transport;
use enygma_server::{reload_on_sighup, serve_with_admin, shutdown_signal, AppState, Exit};

fn main() -> ExitCode {
    let malloc = enygma_server::malloc::tune();
    let args = Args::parse();
    if args.prints_openapi() {
        // Before any logging: stdout is the document. A reader that stops early (`| head`)
        // is no failure of ours.
        use std::io::Write;
        let written =
            std::io::stdout().write_all(enygma_server::openapi::document_json().as_bytes());
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
    let exit = runtime.block_on(run(args));
    // Do not wait for a key load still running on the blocking pool.
    runtime.shutdown_timeout(Duration::from_secs(1));
    ExitCode::from(exit as u8)
}

async fn run(args: Args) -> Exit {
    let mut admission = args.admission();
    let hosted = args.hosted();
    let circuits: Vec<String> = hosted.iter().map(|i| i.key_stem()).collect();
    let precomputed = match args.precomputed() {
        Ok(list) => list,
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return Exit::Startup;
        }
    };
    let precomputed_stems: Vec<String> = precomputed.iter().map(|i| i.key_stem()).collect();
    tracing::info!(
        max_inflight = admission.max_inflight.map(|n| n as u64),
        prove_threads = admission.prove_threads.pool_threads(),
        queue_depth = admission.queue_depth,
        queue_timeout_s = admission.queue_timeout.as_secs_f64(),
        expected_service_time_s = admission.service_time.as_secs_f64(),
        verify_max_inflight = admission.verify_max_inflight,
        body_limit = args.body_limit,
        keys_dir = %args.keys_dir.display(),
        unlimited = args.unlimited,
        circuits = %circuits.join(","),
        require_keys = args.require_keys,
        require_ceremony_keys = args.require_ceremony_keys,
        precompute = %precomputed_stems.join(","),
        pin_cpus = admission.pin_cpus,
        msm_arithmetic = ?enygma_prover::MsmArithmetic::detected(),
        "starting enygma-server"
    );
    if args.require_keys {
        let missing = missing_proving_keys(&args.keys_dir, &hosted);
        if !missing.is_empty() {
            let files: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
            tracing::error!(
                missing = %files.join(", "),
                "--require-keys: proving keys of hosted circuits are missing; not starting (provide them, or host fewer circuits with --circuits)"
            );
            return Exit::Startup;
        }
    }
    if args.require_ceremony_keys {
        let refused = non_ceremony_keys(&args.keys_dir, &hosted);
        if !refused.is_empty() {
            tracing::error!(
                keys = %refused.join("; "),
                "--require-ceremony-keys: hosted circuits have keys that do not come from a ceremony; not starting (import the ceremony's zkeys with `enygma import-zkey`, see docs/production-keys.md)"
            );
            return Exit::Startup;
        }
    }
    let access = &args.access;
    if let Err(refused) = check_file_modes(&args, &hosted) {
        if access.allow_shared_secret_files {
            for line in refused.lines() {
                tracing::warn!("--allow-shared-secret-files: {line}");
            }
        } else {
            for line in refused.lines() {
                tracing::error!("not starting: {line}");
            }
            return Exit::Startup;
        }
    }
    let (tls, auth) = match (load_tls(access), load_auth(access)) {
        (Ok(tls), Ok(auth)) => (tls, auth),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(error = %e, "cannot start");
            return Exit::Startup;
        }
    };
    let limits = args.limits();
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
        tls_handshake_timeout_s = limits.tls_handshake_timeout.as_secs_f64(),
        max_connection_age_s = limits.max_connection_age.as_secs_f64(),
        "transport and access control"
    );
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
    if let Some(fair) = &mut admission.fair {
        // A share for every caller the configuration names; the rest share `anonymous`.
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
    } else {
        tracing::info!("admission: one FIFO queue for every caller");
    }
    for warning in access.exposure_warnings(args.bind) {
        tracing::warn!(bind = %args.bind, port = args.port, "{warning}");
    }
    let tables = args.tables(precomputed.clone());
    tracing::info!(
        table_memory = %tables.budget,
        build_after_proofs = enygma_server::tables::BUILD_AFTER_PROOFS,
        "precomputed MSM tables for the circuits that receive proofs"
    );
    let state = match AppState::<RealBackend>::new(&admission, args.body_limit, hosted.clone()) {
        Ok(state) => Arc::new(state.with_auth(auth.clone()).with_tables(tables)),
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return Exit::Startup;
        }
    };
    // Installed before the server says it listens, whatever is configured: from then on a
    // SIGHUP reloads (or logs that there is nothing to reload), never kills.
    tokio::spawn(reload_on_sighup(
        tls.clone(),
        auth.clone(),
        state.metrics.clone(),
        access.allow_shared_secret_files,
    ));
    let listener = match tokio::net::TcpListener::bind((args.bind, args.port)).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, bind = %args.bind, port = args.port, "cannot listen");
            return Exit::Startup;
        }
    };
    match listener.local_addr() {
        Ok(addr) => tracing::info!(addr = %addr, "listening"),
        Err(e) => tracing::warn!(error = %e, "listening (address unknown)"),
    }
    let admin = match bind_admin(args.admin_bind).await {
        Ok(admin) => admin,
        Err(()) => return Exit::Startup,
    };
    let (keys_dir, missing_keys) = (args.keys_dir.clone(), args.missing_keys());
    serve_with_admin(
        listener,
        admin,
        state,
        move || {
            let backend = RealBackend::load(&keys_dir, &hosted, missing_keys, &precomputed)?;
            // What the load freed (setup-mode synthesis, key file bytes) would otherwise stay
            // resident: see `malloc::release_free_memory`.
            enygma_server::malloc::release_free_memory();
            Ok(backend)
        },
        shutdown_signal(),
        args.drain_timeout(),
        Transport { tls, limits },
    )
    .await
}

/// The admin listener (`--admin-bind`), bound; a bind failure stops the start (logged).
async fn bind_admin(bind: AdminBind) -> Result<Option<tokio::net::TcpListener>, ()> {
    let Some(addr) = bind.0 else {
        tracing::info!(
            "no admin listener (--admin-bind none): probes and /metrics on the API port only"
        );
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        tracing::error!(
            error = %e,
            admin_bind = %addr,
            "cannot listen on the admin address: give each server on a host its own \
             --admin-bind, or --admin-bind none"
        )
    })?;
    let bound = listener.local_addr().unwrap_or(addr);
    tracing::info!(
        addr = %bound,
        routes = "/livez /readyz /metrics",
        "admin listening (plain HTTP, no tokens)"
    );
    Ok(Some(listener))
}

/// The modes of the configured secrets and of the hosted instances' proving keys
/// ([`enygma_server::file_modes`]).
fn check_file_modes(args: &Args, hosted: &[enygma_prover::Instance]) -> Result<(), String> {
    let mut files = args.access.secret_files();
    files.extend(hosted.iter().map(|&i| {
        let key = enygma_prover::keys::KeyPaths::new(&args.keys_dir, i).proving;
        ("--keys-dir", key, FileKind::ProvingKey)
    }));
    file_modes::check_all(&files)
}

fn load_tls(access: &AccessArgs) -> Result<Option<Arc<Tls>>, String> {
    access
        .tls_files()
        .map(|files| Tls::load(files).map(Arc::new))
        .transpose()
}

fn load_auth(access: &AccessArgs) -> Result<Arc<Auth>, String> {
    let load = |path: &Option<std::path::PathBuf>, flag| {
        path.as_deref()
            .map(|p| TokenFile::load(p, flag))
            .transpose()
    };
    Ok(Arc::new(Auth {
        api: load(&access.auth_token_file, "--auth-token-file")?,
        metrics: load(&access.metrics_token_file, "--metrics-token-file")?,
    }))
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
