//! `enygma-server` binary: see the library documentation (`cargo doc -p enygma-server`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use enygma_server::config::{Args, LogFormat};
use enygma_server::prover::{missing_proving_keys, RealBackend};
use enygma_server::{serve, shutdown_signal, AppState, Exit};

fn main() -> ExitCode {
    let malloc = enygma_server::malloc::tune();
    let args = Args::parse();
    init_tracing(args.log_format);
    install_panic_hook();
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
    let admission = args.admission();
    let hosted = args.hosted();
    let circuits: Vec<String> = hosted.iter().map(|i| i.key_stem()).collect();
    tracing::info!(
        max_inflight = admission.max_inflight.map(|n| n as u64),
        prove_threads = admission.prove_threads,
        queue_depth = admission.queue_depth,
        queue_timeout_s = admission.queue_timeout.as_secs_f64(),
        verify_max_inflight = admission.verify_max_inflight,
        body_limit = args.body_limit,
        keys_dir = %args.keys_dir.display(),
        unlimited = args.unlimited,
        circuits = %circuits.join(","),
        require_keys = args.require_keys,
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
    let state = match AppState::<RealBackend>::new(&admission, args.body_limit, hosted.clone()) {
        Ok(state) => Arc::new(state),
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return Exit::Startup;
        }
    };
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
    let (keys_dir, missing_keys) = (args.keys_dir.clone(), args.missing_keys());
    serve(
        listener,
        state,
        move || RealBackend::load(&keys_dir, &hosted, missing_keys),
        shutdown_signal(),
        args.drain_timeout,
    )
    .await
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
