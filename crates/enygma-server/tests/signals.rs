//! Signals on the real `enygma-server` binary, on 127.0.0.1: SIGHUP never kills it.
//!
//! The server hosts one small instance from an empty keys directory of its own, so it listens
//! at once (the keys are made in the background) and is stopped long before they are done.

#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

/// The binary, stopped (SIGKILL) when dropped, and what it has logged so far.
struct Server {
    child: Child,
    addr: SocketAddr,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(keys_dir: &std::path::Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_enygma-server"))
            .env("RUST_LOG", "info")
            .args(["--bind", "127.0.0.1", "--port", "0", "--log-format", "json"])
            .args(["--circuits", "deposit-k2", "--keys-dir"])
            .arg(keys_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start enygma-server");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let log = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                    if v["message"] == "listening" {
                        if let Some(a) = v["addr"].as_str().and_then(|a| a.parse().ok()) {
                            let _ = addr_tx.send(a);
                        }
                    }
                }
                log.lock().unwrap().push(line);
            }
        });
        let addr: SocketAddr = match addr_rx.recv_timeout(T) {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                panic!("no address logged: {:?}", lines.lock().unwrap());
            }
        };
        assert!(addr.ip().is_loopback());
        Server { child, addr, lines }
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(rc, 0, "kill failed");
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits (bounded) for a log line whose message is `message`.
    fn wait_logged(&self, message: &str) {
        let deadline = Instant::now() + T;
        while !self.lines.lock().unwrap().iter().any(|l| {
            serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["message"] == message)
        }) {
            assert!(
                Instant::now() < deadline,
                "never logged {message:?}: {:?}",
                self.lines.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The status line of `GET /livez`.
    fn livez(&self) -> std::io::Result<String> {
        let mut conn = TcpStream::connect_timeout(&self.addr, T)?;
        conn.set_read_timeout(Some(T))?;
        conn.write_all(b"GET /livez HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
        let mut answer = String::new();
        conn.read_to_string(&mut answer)?;
        Ok(answer.lines().next().unwrap_or_default().to_owned())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.running() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

#[test]
fn sighup_without_tls_or_token_files_keeps_the_server_serving() {
    let keys = std::env::temp_dir().join(format!("enygma-sighup-keys-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&keys);
    std::fs::create_dir_all(&keys).unwrap();
    let mut server = Server::start(&keys);
    assert_eq!(server.livez().unwrap(), "HTTP/1.1 200 OK");

    server.signal(libc::SIGHUP);
    // No TLS or token files, and the keys it would reload are still being made.
    server.wait_logged("SIGHUP: the proving keys are still loading; nothing to reload");
    server.signal(libc::SIGHUP);
    assert!(server.running(), "SIGHUP stopped the server");
    assert_eq!(server.livez().unwrap(), "HTTP/1.1 200 OK");

    // It still stops on SIGTERM.
    server.signal(libc::SIGTERM);
    let deadline = Instant::now() + T;
    while server.running() {
        assert!(Instant::now() < deadline, "SIGTERM did not stop the server");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&keys);
}
