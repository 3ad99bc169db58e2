//! The real service with a prover that sleeps instead of proving, for this crate's tests and
//! for other crates' (`enygma-loadgen` tests its load generator against it). Behind the
//! `test-support` feature: never in the production binary.
//!
//! Everything but the proof is real: routes, strict parsing and every check of the statement
//! (the prover's key-free `prepare`), admission, status codes, `Server-Timing`, metrics, probes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::backend::{BackendError, Instance, ProofBackend, ProofOutput};
use crate::config::Args;
use crate::transport::Transport;
use crate::{shutdown_signal, AppState, Exit, Service};

/// A prover that checks requests for real and then sleeps for its witness and prove times.
#[derive(Clone, Copy, Debug)]
pub struct SleepingBackend {
    pub witness: Duration,
    pub prove: Duration,
}

impl SleepingBackend {
    /// Sleeps `prove` per proof (and a nominal 1 ms of witness synthesis).
    pub fn proving_for(prove: Duration) -> Self {
        SleepingBackend {
            witness: Duration::from_millis(1),
            prove,
        }
    }
}

/// A placeholder with the shape of a proof response (it proves nothing).
const PLACEHOLDER_PROOF: &str =
    r#"{"pi_a":["1","2"],"pi_b":[["1","2"],["3","4"]],"pi_c":["1","2"],"public_signal":[]}"#;

impl ProofBackend for SleepingBackend {
    type Prepared = enygma_prover::Prepared;

    fn prepare(&self, instance: Instance, body: &[u8]) -> Result<Self::Prepared, BackendError> {
        Ok(enygma_prover::prepare(instance, body)?)
    }

    fn prove(&self, _prepared: &Self::Prepared) -> Result<ProofOutput, BackendError> {
        std::thread::sleep(self.witness + self.prove);
        Ok(ProofOutput {
            json: PLACEHOLDER_PROOF.as_bytes().to_vec(),
            witness: self.witness,
            prove: self.prove,
            precomputed: false,
            key_sha256: None,
        })
    }

    /// The real parse of a proof response; a sleeping prover makes no proofs, so no proof
    /// verifies.
    fn verify(&self, instance: Instance, proof_json: &[u8]) -> Result<bool, BackendError> {
        enygma_prover::parse_proof_response(instance, proof_json)?;
        Ok(false)
    }
}

/// The server's command line (`enygma-server FLAGS...`), with the server's own defaults.
pub fn args(flags: &[&str]) -> Result<Args, String> {
    Args::try_parse_from(std::iter::once("enygma-server").chain(flags.iter().copied()))
        .map_err(|e| e.to_string())
}

/// The state of a server configured by `args` (admission, body limit, hosted instances).
pub fn state<B: ProofBackend>(args: &Args) -> Result<Arc<AppState<B>>, String> {
    AppState::new(&args.admission(), args.body_limit, args.hosted()).map(Arc::new)
}

/// A server running in the background of the current tokio runtime until [`Self::stop`].
pub struct RunningServer {
    pub addr: SocketAddr,
    /// The admin listener's address ([`Self::start_with_admin`]).
    pub admin: Option<SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<Exit>,
}

impl RunningServer {
    /// Serves `state` on 127.0.0.1 (an ephemeral port), with the backend `load` makes.
    pub async fn start<B, L>(
        state: Arc<AppState<B>>,
        load: L,
        drain_timeout: Duration,
        transport: Transport,
    ) -> RunningServer
    where
        B: ProofBackend,
        L: FnOnce() -> Result<B, String> + Send + 'static,
    {
        Self::start_listening(state, load, drain_timeout, transport, false).await
    }

    /// [`Self::start`], with the admin listener on another ephemeral port of 127.0.0.1.
    pub async fn start_with_admin<B, L>(
        state: Arc<AppState<B>>,
        load: L,
        drain_timeout: Duration,
        transport: Transport,
    ) -> RunningServer
    where
        B: ProofBackend,
        L: FnOnce() -> Result<B, String> + Send + 'static,
    {
        Self::start_listening(state, load, drain_timeout, transport, true).await
    }

    async fn start_listening<B, L>(
        state: Arc<AppState<B>>,
        load: L,
        drain_timeout: Duration,
        transport: Transport,
        with_admin: bool,
    ) -> RunningServer
    where
        B: ProofBackend,
        L: FnOnce() -> Result<B, String> + Send + 'static,
    {
        let bind = || async {
            TcpListener::bind("127.0.0.1:0")
                .await
                .expect("binding 127.0.0.1:0")
        };
        let listener = bind().await;
        let addr = listener.local_addr().expect("local address");
        let admin_listener = if with_admin { Some(bind().await) } else { None };
        let admin = admin_listener
            .as_ref()
            .map(|l| l.local_addr().expect("local address"));
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let service = Service {
            state,
            listener,
            admin: admin_listener,
            load,
            shutdown,
            drain_timeout,
            transport,
        };
        let task = tokio::spawn(service.run());
        RunningServer {
            addr,
            admin,
            stop: Some(stop),
            task,
        }
    }

    /// Signals shutdown (as SIGTERM would) and waits for the drain.
    pub async fn stop(mut self) -> Exit {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.await.expect("server task")
    }
}

/// A sleeping server on its own thread and runtime, for synchronous tests; stopped when
/// dropped.
pub struct BackgroundServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BackgroundServer {
    /// The server `flags` configure (`--max-inflight 2`, `--queue-depth 0`, ...; `--bind` and
    /// `--port` are ignored: it listens on 127.0.0.1, on an ephemeral port), proving with
    /// `backend`.
    pub fn start(flags: &[&str], backend: SleepingBackend) -> Result<BackgroundServer, String> {
        let args = args(flags)?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("sleeping-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                runtime.block_on(async move {
                    let state = match state::<SleepingBackend>(&args) {
                        Ok(state) => state,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let server = RunningServer::start(
                        state,
                        move || Ok(backend),
                        args.drain_timeout(),
                        Transport::default(),
                    )
                    .await;
                    let _ = ready_tx.send(Ok(server.addr));
                    let _ = stopped.await;
                    server.stop().await;
                });
            })
            .map_err(|e| e.to_string())?;
        let addr = ready_rx
            .recv()
            .map_err(|_| "the server thread ended before listening".to_string())??;
        Ok(BackgroundServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The sleeping server as a process: listens where `flags` say (`--bind`, `--port`; the other
/// flags as the real server reads them), until SIGTERM or SIGINT, then drains. For tests that
/// start a server command (the load generator's `--spawn-server` and A/B runner).
pub fn run_process(flags: &[&str], backend: SleepingBackend) -> Result<Exit, String> {
    let args = args(flags)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let state = state::<SleepingBackend>(&args)?;
        let listener = TcpListener::bind((args.bind, args.port))
            .await
            .map_err(|e| format!("binding {}:{}: {e}", args.bind, args.port))?;
        let exit = Service {
            state,
            listener,
            admin: None,
            load: move || Ok(backend),
            shutdown: shutdown_signal(),
            drain_timeout: args.drain_timeout(),
            transport: Transport::default(),
        }
        .run()
        .await;
        Ok::<_, String>(exit)
    })
}
