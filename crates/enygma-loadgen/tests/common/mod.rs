//! Helpers shared by the integration tests: processes with deadlines, free ports, request
//! pools, scraping the served counter, and reading a run's output files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use enygma_formats::prometheus::{self as metrics, Selector};
use enygma_loadgen::HttpClient;

/// The tests start servers and offer load: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn loadgen_bin() -> &'static str {
    env!("CARGO_BIN_EXE_enygma-loadgen")
}

/// A fresh scratch directory in the temp dir; removed when the test passes, kept (and its path
/// printed) when it fails.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("test files kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("enygma-loadgen-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process that is stopped (SIGTERM, then SIGKILL) when dropped, even on panic.
pub struct Proc {
    pub child: Child,
    pub name: String,
    pub log: PathBuf,
}

impl Proc {
    pub fn spawn(name: &str, cmd: &mut Command, log: &Path) -> Proc {
        let f = std::fs::File::create(log).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            child,
            name: name.into(),
            log: log.to_path_buf(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_tail(&self) -> String {
        let t = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    pub fn stop(&mut self) {
        if self.exited().is_some() {
            return;
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.exited().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs a command to completion within `limit`, killing it if it overruns.
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let to = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let te = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = Command::new("kill")
                .arg("-INT")
                .arg(child.id().to_string())
                .status();
            std::thread::sleep(Duration::from_secs(5));
            let _ = child.kill();
            let s = child.wait().unwrap();
            let (o, e) = (to.join().unwrap(), te.join().unwrap());
            panic!(
                "command overran {limit:?} ({s}):\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&o),
                String::from_utf8_lossy(&e)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: to.join().unwrap(),
        stderr: te.join().unwrap(),
    }
}

pub fn assert_success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// GET `path`: (status, body), or `None` if nothing answers.
pub fn get(url: &str, path: &str) -> Option<(u16, String)> {
    let c = HttpClient::new(url, Duration::from_secs(10)).unwrap();
    rt().block_on(c.get(path, Duration::from_secs(10)))
        .ok()
        .map(|(s, b)| (s, String::from_utf8_lossy(&b).into_owned()))
}

/// Polls `/readyz` until 200; panics (with the server process's log, if it is one) if the
/// process exits or the limit passes.
pub fn wait_ready(url: &str, mut server: Option<&mut Proc>, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(p) = server.as_deref_mut() {
            if let Some(s) = p.exited() {
                panic!(
                    "{} exited ({s}) before it was ready:\n{}",
                    p.name,
                    p.log_tail()
                );
            }
        }
        if let Some((200, _)) = get(url, "/readyz") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{url} not ready within {limit:?}:\n{}",
            server.as_deref().map(Proc::log_tail).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// enygma-server's counter of proving requests answered 200 for k = 6 (see
/// crates/enygma-server/src/metrics.rs); a series not yet rendered counts as 0.
pub const SERVED_K6: &str =
    r#"enygma_http_requests_total{route="/generateProofTransfer-{k}",k="6",status="200"}"#;

pub fn served(url: &str) -> f64 {
    let (code, body) = get(url, "/metrics").expect("GET /metrics");
    assert_eq!(code, 200, "GET /metrics answered {code}");
    Selector::parse(SERVED_K6)
        .unwrap()
        .sum(&metrics::parse(&body))
        .unwrap_or(0.0)
}

pub fn read_report(dir: &Path) -> serde_json::Value {
    let p = dir.join("report.json");
    let text =
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

/// One row of requests.csv.
#[derive(Debug)]
pub struct Row {
    pub label: String,
    pub warmup: bool,
    pub latency_ms: f64,
    pub status: String,
    pub queue_ms: Option<f64>,
    pub prove_ms: Option<f64>,
    pub total_ms: Option<f64>,
}

pub fn read_requests(dir: &Path) -> Vec<Row> {
    let mut csv = csv::Reader::from_path(dir.join("requests.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (l, w, lat, st, q, p, t) = (
        col("label"),
        col("warmup"),
        col("latency_ms"),
        col("status"),
        col("queue_ms"),
        col("prove_ms"),
        col("total_ms"),
    );
    let num = |s: &str| (!s.is_empty()).then(|| s.parse::<f64>().unwrap());
    csv.records()
        .map(|record| {
            let c = record.unwrap();
            Row {
                label: c[l].into(),
                warmup: &c[w] == "true",
                latency_ms: c[lat].parse().unwrap(),
                status: c[st].into(),
                queue_ms: num(&c[q]),
                prove_ms: num(&c[p]),
                total_ms: num(&c[t]),
            }
        })
        .collect()
}

/// Internal time never exceeds external latency, request by request, and the report agrees.
pub fn assert_internal_within_external(dir: &Path, report: &serde_json::Value) {
    let rows = read_requests(dir);
    let ok: Vec<&Row> = rows.iter().filter(|r| r.status == "200").collect();
    assert!(!ok.is_empty(), "no successful request in {}", dir.display());
    for r in &ok {
        let prove = r
            .prove_ms
            .unwrap_or_else(|| panic!("200 without Server-Timing prove: {r:?}"));
        assert!(
            prove <= r.latency_ms,
            "prove {prove} ms > external latency {} ms: {r:?}",
            r.latency_ms
        );
        if let Some(t) = r.total_ms {
            assert!(
                t <= r.latency_ms,
                "server total {t} ms > external latency {} ms: {r:?}",
                r.latency_ms
            );
            assert!(prove <= t, "prove {prove} ms > server total {t} ms: {r:?}");
        }
    }
    let entries = report["levels"]
        .as_array()
        .unwrap()
        .iter()
        .chain(report["open_loop"].as_array().unwrap())
        .chain(report["soak"].as_object().map(|_| &report["soak"]));
    for e in entries {
        assert_eq!(e["timing_violations"], 0, "{e}");
        if e["completed"].as_u64().unwrap() > 0 {
            for p in ["p50", "p99", "max"] {
                let (ip, ext) = (
                    e["internal_prove_ms"][p].as_f64().unwrap(),
                    e["latency_ms"][p].as_f64().unwrap(),
                );
                assert!(
                    ip <= ext,
                    "internal_prove_ms.{p} {ip} > latency_ms.{p} {ext}"
                );
            }
        }
    }
}

/// Four distinct requests of the instance `stem`, as files for `--requests` (`{stem}-{i}.json`).
pub fn request_files(dir: &Path, stem: &str) -> PathBuf {
    let out = dir.join("requests");
    std::fs::create_dir_all(&out).unwrap();
    let instance =
        enygma_prover::statements::by_stem(stem).expect("the instance is in the registry");
    for (i, body) in enygma_loadgen::generate_pool(instance, 4, 1)
        .unwrap()
        .iter()
        .enumerate()
    {
        std::fs::write(out.join(format!("{stem}-{i}.json")), body).unwrap();
    }
    out
}

/// One proof's time on the server `client` talks to, now: the median server time (without
/// queueing) of requests of `stem` from [`request_files`] sent one at a time, after one that
/// warms the server up.
pub fn proof_time(client: &HttpClient, requests: &Path, stem: &str) -> Duration {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let uri = client
        .uri(
            &enygma_prover::statements::by_stem(stem)
                .unwrap()
                .prove_path(),
        )
        .unwrap();
    let body = std::fs::read(requests.join(format!("{stem}-0.json"))).unwrap();
    let mut times: Vec<f64> = rt.block_on(async {
        let mut t = Vec::new();
        for i in 0..4 {
            let r = client.post_json(&uri, body.clone().into()).await;
            assert!(r.status.is_ok(), "calibration request: {:?}", r.status);
            if i > 0 {
                t.push(r.timing.total_ms.unwrap() - r.timing.queue_ms.unwrap_or(0.0));
            }
        }
        t
    });
    times.sort_by(f64::total_cmp);
    Duration::from_secs_f64(enygma_loadgen::percentile(&times, 50.0).unwrap() / 1e3)
}

/// A pool of request bodies for k = 6: `$ENYGMA_REQUESTS_DIR`; else `enygma gen-request` if the
/// CLI is built; else copies of the reference's sample (`$ENYGMA_REFERENCE_DIR` or
/// `shared/reference` beside the repository).
pub fn request_pool(dir: &Path, count: usize) -> PathBuf {
    if let Some(d) = std::env::var_os("ENYGMA_REQUESTS_DIR") {
        return PathBuf::from(d);
    }
    let out = dir.join("requests");
    std::fs::create_dir_all(&out).unwrap();
    let cli = std::env::var_os("ENYGMA_CLI_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_dir().join("target/debug/enygma"));
    if cli.exists() {
        let o = run_bounded(
            Command::new(&cli)
                .args([
                    "gen-request",
                    "--k",
                    "6",
                    "--seed",
                    "1",
                    "--count",
                    &count.to_string(),
                    "--out",
                ])
                .arg(&out),
            Duration::from_secs(300),
        );
        let made = std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0);
        if o.status.success() && made > 0 {
            return out;
        }
        eprintln!(
            "note: `{} gen-request` failed ({}), using copies of the reference sample: {}",
            cli.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let refdir = std::env::var_os("ENYGMA_REFERENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_dir().join("../shared/reference"));
    let sample = refdir.join("requests/transfer-k6.json");
    let body = std::fs::read(&sample).unwrap_or_else(|e| {
        panic!("no request pool: set ENYGMA_REQUESTS_DIR, build `enygma` (gen-request) or provide {}: {e}", sample.display())
    });
    for i in 0..count {
        std::fs::write(out.join(format!("transfer-k6-{i:03}.json")), &body).unwrap();
    }
    out
}

pub fn server_bin() -> PathBuf {
    let p = std::env::var_os("ENYGMA_SERVER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_dir().join("target/debug/enygma-server"));
    assert!(
        p.is_file(),
        "enygma-server binary not found at {}: build it first (`cargo build -p enygma-server`) or set \
         ENYGMA_SERVER_BIN to its path",
        p.display()
    );
    p
}

pub fn keys_dir() -> PathBuf {
    let k = std::env::var_os("ENYGMA_KEYS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_dir().join("keys"));
    std::fs::create_dir_all(&k).unwrap();
    k
}

pub fn ready_timeout() -> Duration {
    Duration::from_secs(
        std::env::var("ENYGMA_READY_TIMEOUT_S")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(900),
    )
}

pub fn start_server(dir: &std::path::Path, port: u16, extra: &[&str]) -> Proc {
    let mut cmd = Command::new(server_bin());
    // The admin listener on a free port of its own: its fixed default would collide between
    // servers started side by side.
    cmd.args([
        "--bind",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--admin-bind",
        "127.0.0.1:0",
        "--keys-dir",
    ])
    .arg(keys_dir())
    .args(extra);
    let mut p = Proc::spawn("enygma-server", &mut cmd, &dir.join("server.log"));
    wait_ready(
        &format!("http://127.0.0.1:{port}"),
        Some(&mut p),
        ready_timeout(),
    );
    p
}
