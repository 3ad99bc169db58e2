//! Starting a server (`--spawn-server CMD`, the A/B runner), waiting until it is ready, and
//! stopping it again.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::process::{Child, Command};

use crate::client::HttpClient;
use crate::prove_log::ProveLog;

pub struct Server {
    child: Child,
    pid: u32,
    pub log: PathBuf,
    /// The timing lines of its standard output (the reference's internal prove times).
    pub prove_log: ProveLog,
}

impl Server {
    /// Runs `sh -c "exec CMD"` (so the pid we sample is the server itself, not a shell), with
    /// stdout and stderr appended to `log`; stdout passes through a [`ProveLog`] on its way.
    pub fn spawn(cmd: &str, dir: Option<&Path>, log: &Path) -> Result<Server> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("opening {}", log.display()))?;
        let err = out.try_clone()?;
        let mut command = Command::new("sh");
        command.arg("-c").arg(format!("exec {cmd}"));
        if let Some(d) = dir {
            command.current_dir(d);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting server: {cmd}"))?;
        let pid = child.id().context("server exited at once")?;
        let stdout = child.stdout.take().context("server's stdout not piped")?;
        Ok(Server {
            child,
            pid,
            log: log.to_path_buf(),
            prove_log: ProveLog::tap(stdout, out),
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `Some(status)` if the process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log, lines)
    }

    /// SIGTERM, then SIGKILL after `grace`. Waits for the process to be gone.
    pub async fn stop(mut self, grace: Duration) {
        if self.exited().is_some() {
            return;
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await;
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Polls `ready_path` (then `/healthcheck`, for services without a readiness route, e.g. the
/// reference) until it answers 200. Fails early if the spawned server exits.
pub async fn wait_ready(
    client: &HttpClient,
    ready_path: &str,
    timeout: Duration,
    mut server: Option<&mut Server>,
) -> Result<Duration> {
    let start = Instant::now();
    let mut path = ready_path.to_string();
    let mut last;
    loop {
        if let Some(s) = server.as_deref_mut() {
            if let Some(st) = s.exited() {
                bail!(
                    "server exited ({st}) before becoming ready; last lines of {}:\n{}",
                    s.log.display(),
                    s.log_tail(20)
                );
            }
        }
        match client.get(&path, Duration::from_secs(5)).await {
            Ok((200, _)) => return Ok(start.elapsed()),
            Ok((404, _)) if path != "/healthcheck" => {
                path = "/healthcheck".into();
                continue;
            }
            Ok((code, _)) => last = format!("{path} answered {code}"),
            Err(e) => last = format!("{e:#}"),
        }
        if start.elapsed() > timeout {
            let tail = server.map(|s| s.log_tail(20)).unwrap_or_default();
            bail!(
                "{} not ready after {timeout:?} ({last}){}{tail}",
                client.base(),
                if tail.is_empty() {
                    ""
                } else {
                    "; server log:\n"
                }
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
