//! Running the service: the listeners first, the keys in the background, graceful drain.

use std::future::{pending, Future};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::{oneshot, Notify};

use crate::app::{admin_router, router, AppState};
use crate::auth::Auth;
use crate::backend::{Instance, KeyReload, ProofBackend};
use crate::metrics::{KeyReloadResult, Metrics};
use crate::tls::Tls;
use crate::transport::{serve_connections, Limits, Transport};

/// How the service ended; the process exit code.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Stopped by a signal, every in-flight and queued request answered: exit 0.
    Clean = 0,
    /// The drain timeout expired with requests still running: exit 1.
    DrainTimeout = 1,
    /// The keys could not be loaded or created (e.g. a key that does not match its circuit):
    /// exit 2.
    Startup = 2,
}

/// A service ready to run: its state, its bound listeners, the key loading and the shutdown
/// signal. [`Self::run`] is the one way to run it.
///
/// The listeners are already bound, so `/livez` and `/healthcheck` answer at once while `load`
/// (the slow key loading) runs on the blocking pool; `/readyz` answers 503 until it has
/// succeeded. If `load` fails the service stops with [`Exit::Startup`].
///
/// On `shutdown` the API listener closes, `/readyz` turns 503, idle keep-alive connections
/// close (HTTP/2: GOAWAY), and every in-flight and queued request is still answered. If that
/// takes longer than `drain_timeout`, the service stops anyway with [`Exit::DrainTimeout`].
///
/// The admin listener, when given, serves `/livez`, `/readyz` and `/metrics`
/// ([`admin_router`]) in plain HTTP without tokens, for the kubelet and Prometheus. It keeps
/// answering while the API listener drains (so the orchestrator sees `/readyz` 503 `draining`
/// and Prometheus scrapes the last proofs), and stops once the API listener has stopped. It has
/// its own small connection cap ([`ADMIN_MAX_CONNECTIONS`]), so API clients can never take the
/// probes' connections, nor the other way round. Nobody authenticates there, so every admin
/// connection counts as unauthenticated: a newcomer takes the place of the oldest idle one when
/// the cap is reached, one address holds at most [`ADMIN_MAX_CONNECTIONS_PER_IP`], and a
/// connection is closed after [`ADMIN_IDLE_TIMEOUT`] idle and that long after its accept. Idle
/// keep-alive connections cannot keep the kubelet's probe out.
pub struct Service<B: ProofBackend, L, S> {
    pub state: Arc<AppState<B>>,
    /// The API listener, served over TLS and within the limits of `transport`.
    pub listener: TcpListener,
    /// The admin listener, if any.
    pub admin: Option<TcpListener>,
    /// Loads the keys and makes the backend (on the blocking pool).
    pub load: L,
    /// Completes when the service is to drain and stop.
    pub shutdown: S,
    pub drain_timeout: Duration,
    pub transport: Transport,
}

impl<B, L, S> Service<B, L, S>
where
    B: ProofBackend,
    L: FnOnce() -> Result<B, String> + Send + 'static,
    S: Future<Output = ()> + Send + 'static,
{
    /// Serves until `shutdown` completes, then drains (see [`Service`]).
    pub async fn run(mut self) -> Exit {
        let (admin_stop, admin_stopped) = oneshot::channel::<()>();
        let admin_task = self.admin.take().map(|admin| {
            let limits = Limits {
                max_connections: ADMIN_MAX_CONNECTIONS,
                // All but one: the newcomer's slot, from which it evicts the oldest idle one.
                max_unauthenticated: ADMIN_MAX_CONNECTIONS - 1,
                max_connections_per_ip: ADMIN_MAX_CONNECTIONS_PER_IP,
                header_read_timeout: self
                    .transport
                    .limits
                    .header_read_timeout
                    .min(ADMIN_IDLE_TIMEOUT),
                unauthenticated_timeout: ADMIN_IDLE_TIMEOUT,
                trusted_proxies: Vec::new(),
                ..self.transport.limits.clone()
            };
            tokio::spawn(serve_connections(
                admin,
                admin_router(self.state.clone()),
                Transport { tls: None, limits },
                self.state.metrics.clone(),
                async move {
                    let _ = admin_stopped.await;
                },
            ))
        });
        let exit = self.serve_api().await;
        let _ = admin_stop.send(());
        if let Some(task) = admin_task {
            // Probes and scrapes are quick; a client that holds its connection longer is dropped.
            if tokio::time::timeout(ADMIN_STOP_GRACE, task).await.is_err() {
                tracing::warn!("admin listener: connections still open at exit, dropped");
            }
        }
        exit
    }
}

/// Most connections open at once on the admin listener: a kubelet's probes and a few
/// Prometheus servers need a handful.
pub const ADMIN_MAX_CONNECTIONS: usize = 64;

/// Most admin connections from one address: a kubelet and a Prometheus server need one or two
/// each.
pub const ADMIN_MAX_CONNECTIONS_PER_IP: usize = 8;

/// How long an admin connection may stay idle, and open at all: a probe or a scrape takes
/// milliseconds.
pub const ADMIN_IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the admin listener's open connections get to close once the API has stopped.
const ADMIN_STOP_GRACE: Duration = Duration::from_secs(2);

impl<B, L, S> Service<B, L, S>
where
    B: ProofBackend,
    L: FnOnce() -> Result<B, String> + Send + 'static,
    S: Future<Output = ()> + Send + 'static,
{
    /// The API listener's part of [`Self::run`].
    async fn serve_api(self) -> Exit {
        let Service {
            state,
            listener,
            load,
            shutdown,
            drain_timeout,
            transport,
            ..
        } = self;
        let fatal = Arc::new(Notify::new());
        let failed = Arc::new(AtomicBool::new(false));

        {
            let (state, fatal, failed) = (state.clone(), fatal.clone(), failed.clone());
            tokio::spawn(async move {
                let start = Instant::now();
                let outcome = match tokio::task::spawn_blocking(load).await {
                    Ok(Ok(backend)) => {
                        let backend = Arc::new(backend);
                        calibrate_service_time(&state, &backend).await;
                        state.set_backend(backend);
                        tracing::info!(
                            elapsed_ms = start.elapsed().as_millis() as u64,
                            "keys loaded; ready"
                        );
                        return;
                    }
                    Ok(Err(e)) => e,
                    Err(_) => "key loading panicked".to_string(),
                };
                tracing::error!(error = %outcome, "cannot load the proving keys; stopping");
                failed.store(true, Ordering::SeqCst);
                fatal.notify_one();
            });
        }

        let (drain_tx, drain_rx) = oneshot::channel::<()>();
        let trigger = {
            let state = state.clone();
            async move {
                tokio::select! {
                    _ = shutdown => {
                        let prove = state.admission.prove_gauges();
                        tracing::info!(
                            in_flight = state.metrics.proofs_in_flight(),
                            queued = prove.queued,
                            "shutdown signal: no new connections, draining in-flight and queued requests"
                        );
                    }
                    _ = fatal.notified() => {}
                }
                state.start_draining();
                let _ = drain_tx.send(());
            }
        };

        let server = serve_connections(
            listener,
            router(state.clone()),
            transport,
            state.metrics.clone(),
            trigger,
        );
        let mut server = std::pin::pin!(server);
        let drain_deadline = async {
            match drain_rx.await {
                Ok(()) => tokio::time::sleep(drain_timeout).await,
                Err(_) => pending().await,
            }
        };

        tokio::select! {
            () = &mut server => {}
            _ = drain_deadline => {
                tracing::error!(
                    drain_timeout_s = drain_timeout.as_secs_f64(),
                    in_flight = state.metrics.proofs_in_flight(),
                    queued = state.admission.prove_gauges().queued,
                    "drain timeout expired with requests still running; exiting anyway"
                );
                return Exit::DrainTimeout;
            }
        }
        if failed.load(Ordering::SeqCst) {
            Exit::Startup
        } else {
            tracing::info!("drained; exiting");
            Exit::Clean
        }
    }
}

/// Measures the proving queue's service-time estimate on this machine before the service is
/// ready (see `Admission::calibrate`): one proof of the backend's calibration request. The
/// estimate seeded from another CPU would admit a burst this one cannot clear in time (or shed
/// one it could); after this, the observed proofs move it as before.
async fn calibrate_service_time<B: ProofBackend>(state: &AppState<B>, backend: &Arc<B>) {
    if !state.admission.calibrates() {
        return;
    }
    let seed = state.admission.prove_gauges().service_time;
    let request = {
        let backend = backend.clone();
        tokio::task::spawn_blocking(move || backend.calibration_request()).await
    };
    let Ok(Some((instance, prepared))) = request else {
        return;
    };
    let job = {
        let backend = backend.clone();
        move || backend.prove(&prepared).is_ok()
    };
    let started = Instant::now();
    match state.admission.calibrate(job).await {
        Some(estimate) => tracing::info!(
            circuit = %instance,
            proof_ms = started.elapsed().as_millis() as u64,
            expected_service_time_s = estimate.as_secs_f64(),
            seed_s = seed.map(|d| d.as_secs_f64()),
            "service-time estimate measured on this machine"
        ),
        None => tracing::warn!(
            circuit = %instance,
            "the service-time calibration proof failed; the estimate keeps its seed"
        ),
    }
}

/// Completes on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                tracing::warn!("cannot install signal handlers; graceful shutdown disabled");
                pending::<()>().await
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// On every SIGHUP, reads the TLS certificate, key and client CA and the token files again (if
/// configured), then the proving keys whose files changed ([`reload_keys`]). What fails to load
/// keeps its previous version (and is logged and counted); a token file whose mode lets others
/// read it fails unless `allow_shared_secret_files`, as at start. Open connections and proofs
/// in flight are never touched.
///
/// The handler is installed by this call, before the returned future is first polled: a SIGHUP
/// that arrives before installation would terminate the process (the signal's default action),
/// so the caller installs it before it announces that it listens, and spawns the loop after.
pub fn reload_on_sighup<B: ProofBackend>(
    state: Arc<AppState<B>>,
    tls: Option<Arc<Tls>>,
    auth: Arc<Auth>,
    allow_shared_secret_files: bool,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let hup = {
        use tokio::signal::unix::{signal, SignalKind};
        signal(SignalKind::hangup())
            .inspect_err(
                |e| tracing::warn!(error = %e, "cannot install the SIGHUP handler; no reloads"),
            )
            .ok()
    };
    async move {
        #[cfg(unix)]
        if let Some(mut hup) = hup {
            while hup.recv().await.is_some() {
                if tls.is_some() || auth.api.is_some() || auth.metrics.is_some() {
                    tracing::info!("SIGHUP: reloading the TLS files and token files");
                    reload(
                        tls.as_deref(),
                        &auth,
                        &state.metrics,
                        allow_shared_secret_files,
                    );
                }
                reload_keys(&state).await;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = (state, tls, auth, allow_shared_secret_files);
        }
    }
}

/// One reload of the proving keys (see `enygma_prover::Prover::reload_keys`): each changed key
/// file loaded, checked and switched to, or refused (the loaded key stays); logged per instance
/// and counted (`enygma_key_reloads_total`). Before the keys are loaded there is nothing to
/// reload: the load reads the files as they are.
///
/// With a hosted list file (`--circuits @FILE`) the file is read again first, and the hosted
/// set becomes what it names: a file that cannot be read or names an unknown circuit refuses the
/// whole reload (nothing changes, keys included). Instances gone from the list are retired
/// before the prover lets go of them, so that their routes answer 404 from then on while the
/// requests already past that check (in flight, queued or being checked) finish; instances
/// added are hosted once their keys are loaded and checked as at start, and get tables by the
/// table policy. This is what SIGHUP calls.
pub async fn reload_keys<B: ProofBackend>(state: &AppState<B>) {
    let Some(backend) = state.backend() else {
        tracing::info!("SIGHUP: the proving keys are still loading; nothing to reload");
        return;
    };
    let wanted = match state.hosted.file() {
        None => None,
        Some(file) => match crate::hosting::read_list_file(file) {
            Ok(list) => Some(list),
            Err(e) => {
                state.metrics.key_reloaded(KeyReloadResult::Refused);
                tracing::error!(
                    error = %e,
                    "SIGHUP: the hosted circuits and their keys stay as they were (fix the list file and send SIGHUP again)"
                );
                return;
            }
        },
    };
    let retiring: Vec<Instance> = match &wanted {
        Some(list) => {
            let now = state.hosted.list();
            now.into_iter().filter(|i| !list.contains(i)).collect()
        }
        None => Vec::new(),
    };
    state.hosted.remove(&retiring);
    tracing::info!(
        file = state
            .hosted
            .file()
            .map(|f| tracing::field::display(f.display())),
        "SIGHUP: reloading the proving keys whose files changed"
    );
    let reloads = {
        let backend = backend.clone();
        tokio::task::spawn_blocking(move || backend.reload_keys(wanted.as_deref())).await
    };
    let Ok(reloads) = reloads else {
        // The prover retires before it loads anything: what the list dropped is gone.
        for &instance in &retiring {
            state.tables.retire(instance);
        }
        tracing::error!(
            retired = retiring.len(),
            "the reload of the proving keys panicked; the loaded keys stay, and no circuit was added"
        );
        return;
    };
    let (mut replaced, mut refused, mut added, mut retired) = (0, 0, 0, 0);
    for (instance, reload) in reloads {
        match reload {
            KeyReload::Unchanged => {}
            KeyReload::Replaced {
                previous,
                now,
                record,
                tables,
            } => {
                replaced += 1;
                state.metrics.key_reloaded(KeyReloadResult::Replaced);
                tracing::info!(
                    circuit = %instance,
                    previous_sha256 = %hex::encode(previous),
                    sha256 = %hex::encode(now),
                    origin = %record.origin,
                    tables,
                    "proving key replaced: proofs that start from now on use it"
                );
            }
            KeyReload::Refused(why) if state.hosts(instance) => {
                refused += 1;
                state.metrics.key_reloaded(KeyReloadResult::Refused);
                tracing::error!(circuit = %instance, reason = %why, "proving key not replaced: the loaded key stays");
            }
            KeyReload::Refused(why) => {
                refused += 1;
                state.metrics.key_reloaded(KeyReloadResult::Refused);
                tracing::error!(circuit = %instance, reason = %why, "circuit not added: its routes answer 404");
            }
            KeyReload::Added { now, record } => {
                added += 1;
                state.metrics.key_reloaded(KeyReloadResult::Added);
                state.metrics.host(instance);
                state.tables.host(&backend, instance);
                state.hosted.add(instance);
                tracing::info!(
                    circuit = %instance,
                    sha256 = %hex::encode(now),
                    origin = %record.origin,
                    "circuit added: its routes answer from now on"
                );
            }
            KeyReload::Retired { table_bytes } => {
                retired += 1;
                state.metrics.key_reloaded(KeyReloadResult::Retired);
                state.tables.retire(instance);
                tracing::info!(
                    circuit = %instance,
                    table_bytes,
                    "circuit retired: its routes answer 404; its proofs in flight and queued finish"
                );
            }
        }
    }
    if retired > 0 {
        // The retired keys' matrices and tables go once their last proofs end; what is free
        // now goes back to the kernel now.
        crate::malloc::release_free_memory();
    }
    tracing::info!(
        replaced,
        refused,
        added,
        retired,
        "SIGHUP: proving keys reloaded"
    );
}

/// One reload of the TLS files and the token files (see [`reload_on_sighup`]).
pub fn reload(tls: Option<&Tls>, auth: &Auth, metrics: &Metrics, allow_shared_secret_files: bool) {
    if let Some(tls) = tls {
        let counters = &metrics.connections;
        match tls.reload() {
            Ok(revoked) => {
                counters.tls_reloads_ok.fetch_add(1, Ordering::Relaxed);
                counters
                    .closed_revoked
                    .fetch_add(revoked as u64, Ordering::Relaxed);
                tracing::info!(
                    revoked_connections_closed = revoked,
                    "TLS certificate, key and client CA reloaded (and the revocation lists, if any)"
                );
            }
            Err(e) => {
                counters.tls_reloads_failed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(error = %e, "TLS files not reloaded; the previous ones stay in use");
            }
        }
    }
    let _ = auth.reload(allow_shared_secret_files);
}
