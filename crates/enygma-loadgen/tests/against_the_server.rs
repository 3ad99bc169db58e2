//! The load generator end to end against the real enygma-server running a prover that sleeps
//! instead of proving (`enygma_server::test_support`): fast, needs no keys, and exercises the
//! server's real admission, status codes, metric names and probes.
//!
//! Most tests run the server in this process. The tests of `--spawn-server` and the A/B runner
//! need a server command: this test binary is it (`<this binary> sleeping-server --prove-time
//! 20ms <enygma-server flags>`), which is why it has its own small harness (`harness = false`).

mod common;

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Duration;

use common::*;
use enygma_server::test_support::{self, BackgroundServer, SleepingBackend};

/// The first argument that makes this binary the sleeping server instead of the tests.
const SLEEPING_SERVER: &str = "sleeping-server";

/// The real server in this process, configured by `flags`, proving in `prove_time`.
fn sleeping_server(prove_time: Duration, flags: &[&str]) -> BackgroundServer {
    let server = BackgroundServer::start(flags, SleepingBackend::proving_for(prove_time))
        .unwrap_or_else(|e| panic!("sleeping server {flags:?}: {e}"));
    wait_ready(&server.url(), None, Duration::from_secs(30));
    server
}

/// The command that starts this binary as the sleeping server (flags are appended to it).
fn sleeping_server_cmd(prove_time: &str) -> String {
    let exe = std::env::current_exe().expect("the test binary's path");
    format!(
        "{} {SLEEPING_SERVER} --prove-time {prove_time}",
        exe.display()
    )
}

/// `enygma-loadgen run` against `url` writing its report to `out`, without the progress line;
/// each test adds its schedule and where its requests come from.
fn loadgen_run(url: &str, out: &Path) -> Command {
    let mut cmd = Command::new(loadgen_bin());
    cmd.args(["run", "--quiet", "--url", url])
        .arg("--out")
        .arg(out);
    cmd
}

/// This process's id for `--server-pid`: the server under test runs in it.
fn this_pid() -> String {
    std::process::id().to_string()
}

/// Counts equal the server's own, levels and warm-ups add up, internal ≤ external.
fn closed_loop_counts_match_server_metrics() {
    let _g = serial();
    let dir = scratch("closed");
    let pool = request_pool(&dir, 3);
    let server = sleeping_server(Duration::from_millis(40), &["--max-inflight", "2"]);
    let url = server.url();
    let before = served(&url);
    let out = dir.join("out");
    let o = run_bounded(
        loadgen_run(&url, &out)
            .args(["--levels", "1,2,4", "--duration", "1s", "--warmup", "0.3s"])
            .args(["--soak", "2", "--soak-duration", "1s", "--window", "0.5s"])
            .arg("--requests")
            .arg(&pool)
            .args(["--server-pid", &this_pid()]),
        Duration::from_secs(60),
    );
    assert_success(&o, "loadgen run");
    let after = served(&url);
    let r = read_report(&out);
    let levels = r["levels"].as_array().unwrap();
    assert_eq!(
        levels
            .iter()
            .map(|l| l["concurrency"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![1, 2, 4]
    );
    let mut client_total = 0;
    for l in levels.iter().chain([&r["soak"]]) {
        let (c, w) = (
            l["completed"].as_u64().unwrap(),
            l["warmup"]["completed"].as_u64().unwrap(),
        );
        assert!(c > 0, "{l}");
        assert_eq!(l["errors"], serde_json::json!({}));
        assert_eq!(
            l["served_check"]["server_served"].as_f64().unwrap(),
            (c + w) as f64,
            "{l}"
        );
        assert_eq!(l["served_check"]["matches"], true);
        assert!(l["rss_peak_mb"].as_f64().unwrap() > 0.0);
        client_total += c + w;
    }
    // One priming request (`--prime`, default 1) before the first level, in no phase.
    assert_eq!(after - before, (client_total + 1) as f64);
    assert!(
        r["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("1 request(s) were sent")),
        "{}",
        r["notes"]
    );
    assert_eq!(r["soak"]["windows"].as_array().unwrap().len(), 2);
    assert_internal_within_external(&out, &r);
    for f in [
        "report.json",
        "report.md",
        "chart.svg",
        "rss.svg",
        "requests.csv",
        "rss.csv",
    ] {
        assert!(out.join(f).is_file(), "missing {f}");
    }
    // With the cap at 2, level 4 waits in the queue.
    assert!(
        levels[2]["queue_wait_ms"]["p50"].as_f64().unwrap() > 5.0,
        "{}",
        levels[2]
    );
}

/// Shed requests per closed-loop level of 4 against a server that proves one at a time and
/// queues none, with and without waiting the 503's `Retry-After`.
fn shed_at_level_4(ignore_retry_after: bool) -> (u64, u64) {
    let _g = serial();
    let dir = scratch(if ignore_retry_after {
        "retry-storm"
    } else {
        "retry-after"
    });
    let pool = request_pool(&dir, 3);
    let server = sleeping_server(
        Duration::from_millis(40),
        &["--max-inflight", "1", "--queue-depth", "0"],
    );
    let url = server.url();
    let out = dir.join("out");
    let mut cmd = loadgen_run(&url, &out);
    cmd.args(["--levels", "4", "--duration", "2s", "--warmup", "0s"])
        .arg("--requests")
        .arg(&pool)
        .args(["--server-pid", &this_pid()]);
    if ignore_retry_after {
        cmd.arg("--ignore-retry-after");
    }
    assert_success(
        &run_bounded(&mut cmd, Duration::from_secs(60)),
        "loadgen run",
    );
    let r = read_report(&out);
    let level = &r["levels"][0];
    assert_eq!(r["settings"]["honor_retry_after"], !ignore_retry_after);
    (
        level["completed"].as_u64().unwrap(),
        level["errors"]["503"].as_u64().unwrap_or(0),
    )
}

/// A shed worker waits the `Retry-After` (at least 1 s), so over 2 s each of the 4 workers is
/// shed at most twice (8 in all). Without waiting they spin.
fn closed_loop_waits_retry_after_when_shed() {
    let (completed, shed) = shed_at_level_4(false);
    assert!(completed > 0);
    assert!((1..=9).contains(&shed), "{shed} shed answers");
    let (completed, storm) = shed_at_level_4(true);
    assert!(completed > 0);
    assert!(storm > 100, "{storm} shed answers without back-off");
}

/// Open loop: latency from the schedule, spawn-server path, server stopped afterwards.
fn open_loop_with_spawned_server() {
    let _g = serial();
    let dir = scratch("open");
    let pool = request_pool(&dir, 2);
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let out = dir.join("out");
    let spawn = format!(
        "{} --bind 127.0.0.1 --port {port}",
        sleeping_server_cmd("20ms")
    );
    let o = run_bounded(
        loadgen_run(&url, &out)
            .args(["--levels", "none", "--open-rate", "20"])
            .args(["--duration", "1.5s", "--warmup", "0s"])
            .args(["--spawn-server", &spawn])
            .arg("--requests")
            .arg(&pool),
        Duration::from_secs(60),
    );
    assert_success(&o, "loadgen run --open-rate");
    let r = read_report(&out);
    let ol = &r["open_loop"][0];
    assert_eq!(ol["rate_rps"], 20.0);
    let n = ol["scheduled"].as_u64().unwrap();
    assert!((10..=60).contains(&n), "scheduled {n} at 20/s for 1.5 s");
    assert_eq!(ol["completed"].as_u64().unwrap(), n);
    assert_eq!(ol["served_check"]["matches"], true);
    assert!(
        ol["latency_ms"]["p50"].as_f64().unwrap()
            >= ol["internal_prove_ms"]["p50"].as_f64().unwrap()
    );
    assert_internal_within_external(&out, &r);
    let pid = r["server"]["pid"].as_u64().expect("spawned server pid");
    assert!(r["levels"][0].is_null() && r["open_loop"][0]["rss_samples"].as_u64().unwrap() > 3);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "spawned server still running"
    );
    assert!(
        get(&url, "/readyz").is_none(),
        "spawned server still answering"
    );
}

/// The A/B runner end to end: variants, side-by-side table, sweep and the best setting.
fn ab_against_the_sleeping_server() {
    let _g = serial();
    let dir = scratch("ab");
    let pool = request_pool(&dir, 2);
    let out = dir.join("ab");
    let port = free_port();
    let server_cmd = sleeping_server_cmd("20ms");
    let o = run_bounded(
        Command::new(loadgen_bin())
            .args([
                "ab",
                "--server-cmd",
                &server_cmd,
                "--port",
                &port.to_string(),
                "--levels",
                "1,2",
            ])
            .args([
                "--duration",
                "0.6s",
                "--warmup",
                "0.2s",
                "--sweep",
                "1x2,2x1",
                "--quiet",
            ])
            .arg("--keys-dir")
            .arg(&dir)
            .arg("--requests")
            .arg(&pool)
            .arg("--out")
            .arg(&out),
        Duration::from_secs(120),
    );
    assert_success(&o, "loadgen ab");
    for v in ["unlimited", "capped", "sweep-1x2", "sweep-2x1"] {
        let r = read_report(&out.join(v));
        assert_eq!(r["levels"].as_array().unwrap().len(), 2, "{v}");
        assert!(out.join(v).join("chart.svg").is_file());
    }
    let unl = read_report(&out.join("unlimited"));
    assert!(unl["server"]["command"]
        .as_str()
        .unwrap()
        .ends_with("--unlimited"));
    let md = std::fs::read_to_string(out.join("ab.md")).unwrap();
    assert!(md.contains("## Side by side"));
    assert!(
        md.contains("| Concurrency | Throughput (req/s) unlimited | Throughput (req/s) capped |")
    );
    assert!(md.contains("**Best setting: `--max-inflight "), "{md}");
    let ab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("ab.json")).unwrap()).unwrap();
    assert!(ab["best"]["max_inflight"].is_u64());
    assert!(out.join("ab.svg").is_file() && out.join("command.txt").is_file());
}

fn plan_prints_both_examples() {
    let o = run_bounded(
        Command::new(loadgen_bin()).args(["plan", "--throughput", "1.6"]),
        Duration::from_secs(10),
    );
    assert_success(&o, "plan");
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("| CHAPS | 210,483 | 06:00-18:00 (12 h) | 4.872 | none | 4.872 | 4 |"),
        "{s}"
    );
    assert!(
        s.contains("| Fedwire | 869,187 | 22 h | 10.975 | none | 10.975 | 7 |"),
        "{s}"
    );
    assert!(s.contains("First-order estimate") && s.contains("ignores intraday peaks"));
    let o = run_bounded(
        Command::new(loadgen_bin()).args([
            "plan",
            "--throughput",
            "1.6",
            "--peak-factor",
            "2",
            "--daily",
            "100000",
            "--window",
            "09:00-17:00",
            "--json",
        ]),
        Duration::from_secs(10),
    );
    assert_success(&o, "plan --json");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 3);
    assert_eq!(v["rows"][0]["machines"], 7); // 2 × 4.872 / 1.6 = 6.09
    assert_eq!(v["rows"][2]["workload"]["window_hours"], 8.0);
}

/// `--mix`: one run offers a weighted mix of statement instances (here a transfer and the
/// three DvP statements), each from its own generated pool; the server counts every route's
/// answers, the served cross-check sums them, and the notes give per-instance counts.
fn a_weighted_mix_of_statements_in_one_run() {
    let _g = serial();
    let dir = scratch("mix");
    let server = sleeping_server(Duration::from_millis(40), &["--max-inflight", "2"]);
    let url = server.url();
    let out = dir.join("out");
    let o = run_bounded(
        loadgen_run(&url, &out)
            .args(["--prime", "0", "--levels", "2"])
            .args(["--duration", "1.5s", "--warmup", "0s"])
            .args([
                "--mix",
                "transfer-k2=4,join-split-enygma=2,join-split-1155=1,ownership-721=1",
                "--mix-pool",
                "3",
            ])
            .args(["--server-pid", &this_pid()]),
        Duration::from_secs(120),
    );
    assert_success(&o, "loadgen run --mix");
    let r = read_report(&out);
    let level = &r["levels"][0];
    let completed = level["completed"].as_u64().unwrap();
    assert!(completed >= 8, "{level}");
    assert_eq!(level["errors"], serde_json::json!({}));
    assert_eq!(level["served_check"]["matches"], true, "{level}");
    assert_eq!(
        r["settings"]["endpoint"],
        "transfer-k2=4,join-split-enygma=2,join-split-1155=1,ownership-721=1"
    );
    assert_eq!(r["settings"]["request_pool_size"], 12);
    assert_eq!(r["settings"]["request_pool_distinct"], 12);

    // The server's own per-route counts follow the weights 4:2:1:1 (within one round-robin cycle).
    let (_, metrics) = get(&url, "/metrics").unwrap();
    let samples = enygma_formats::prometheus::parse(&metrics);
    let count = |route: &str, k: &str| {
        enygma_formats::prometheus::Selector::parse(&format!(
            "enygma_http_requests_total{{route=\"{route}\",k=\"{k}\",status=\"200\"}}"
        ))
        .unwrap()
        .sum(&samples)
        .unwrap_or(0.0)
    };
    let transfer = count("/generateProofTransfer-{k}", "2");
    let erc20 = count("/join-split-enygma", "none");
    let erc1155 = count("/join-split-1155", "none");
    let erc721 = count("/ownership-721", "none");
    assert_eq!(transfer + erc20 + erc1155 + erc721, completed as f64);
    let cycles = completed as f64 / 8.0;
    for (n, weight) in [(transfer, 4.0), (erc20, 2.0), (erc1155, 1.0), (erc721, 1.0)] {
        assert!(
            (n - weight * cycles).abs() <= weight + 1.0,
            "{n} requests for weight {weight} in {completed}"
        );
    }
    let note = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.contains("per instance"))
        .expect("a per-instance note");
    for stem in [
        "transfer-k2",
        "join-split-enygma",
        "join-split-1155",
        "ownership-721",
    ] {
        assert!(note.contains(&format!("{stem} ok ")), "{note}");
    }
}

/// A request that waits past the server's `--queue-timeout` is answered 504 (a shed one 503),
/// and the report counts it under its status.
fn queue_timeouts_are_reported_as_504() {
    let _g = serial();
    let dir = scratch("queue-timeout");
    let pool = request_pool(&dir, 2);
    // An estimate under the timeout, so that a second request queues (rather than being shed)
    // and times out behind a 300 ms proof.
    let server = sleeping_server(
        Duration::from_millis(300),
        &[
            "--max-inflight",
            "1",
            "--queue-timeout",
            "50ms",
            "--expected-service-time",
            "10ms",
        ],
    );
    let out = dir.join("out");
    let o = run_bounded(
        loadgen_run(&server.url(), &out)
            .args(["--prime", "0", "--levels", "2"])
            .args(["--duration", "1s", "--warmup", "0s"])
            .arg("--requests")
            .arg(&pool),
        Duration::from_secs(60),
    );
    assert_success(&o, "loadgen run");
    let level = &read_report(&out)["levels"][0];
    assert!(level["completed"].as_u64().unwrap() > 0, "{level}");
    assert!(level["errors"]["504"].as_u64().unwrap_or(0) > 0, "{level}");
}

/// The tests of this binary, run one at a time.
const TESTS: &[(&str, fn())] = &[
    (
        "closed_loop_counts_match_server_metrics",
        closed_loop_counts_match_server_metrics,
    ),
    (
        "closed_loop_waits_retry_after_when_shed",
        closed_loop_waits_retry_after_when_shed,
    ),
    (
        "open_loop_with_spawned_server",
        open_loop_with_spawned_server,
    ),
    (
        "ab_against_the_sleeping_server",
        ab_against_the_sleeping_server,
    ),
    ("plan_prints_both_examples", plan_prints_both_examples),
    (
        "a_weighted_mix_of_statements_in_one_run",
        a_weighted_mix_of_statements_in_one_run,
    ),
    (
        "queue_timeouts_are_reported_as_504",
        queue_timeouts_are_reported_as_504,
    ),
];

/// `sleeping-server --prove-time D FLAGS...`: the sleeping server as a process, until SIGTERM.
fn sleeping_server_process(args: &[String]) -> ExitCode {
    let (prove_time, flags) = match args {
        [flag, time, flags @ ..] if flag == "--prove-time" => (time, flags),
        _ => {
            eprintln!("usage: {SLEEPING_SERVER} --prove-time DURATION [enygma-server flags]");
            return ExitCode::from(2);
        }
    };
    let prove = match enygma_formats::duration::parse_duration(prove_time) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("--prove-time: {e}");
            return ExitCode::from(2);
        }
    };
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    match test_support::run_process(&flags, SleepingBackend::proving_for(prove)) {
        Ok(exit) => ExitCode::from(exit as u8),
        Err(e) => {
            eprintln!("sleeping server: {e}");
            ExitCode::from(2)
        }
    }
}

/// Either the sleeping server, or the tests: those whose names contain one of the free
/// arguments (all without one), like libtest's filters; `--list` lists them.
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(SLEEPING_SERVER) {
        return sleeping_server_process(&args[1..]);
    }
    let filters: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected = TESTS
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f)));
    if args.iter().any(|a| a == "--list") {
        for (name, _) in selected {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let mut failed = Vec::new();
    for (name, test) in selected {
        println!("test {name} ...");
        match std::panic::catch_unwind(test) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed.push(*name);
            }
        }
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("failed: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}
