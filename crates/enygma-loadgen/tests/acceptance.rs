//! Acceptance tests of the load generator against the real `enygma-server` on 127.0.0.1.
//!
//! They need the server binary: `target/debug/enygma-server` (build it first with
//! `cargo build -p enygma-server`), or the path in `ENYGMA_SERVER_BIN`. Keys come from the
//! repository's `keys/` (or `ENYGMA_KEYS_DIR`); the server creates missing development keys
//! there at startup, which the first time takes a while (bounded by `ENYGMA_READY_TIMEOUT_S`,
//! default 900). Request bodies: see `common::request_pool`.
//!
//! Each level runs for `ENYGMA_LOADGEN_TEST_DURATION` (default 3s) after a 1 s warm-up; every
//! process has a deadline, and the tests run one at a time.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use enygma_loadgen::poisson_schedule;

fn level_duration() -> String {
    std::env::var("ENYGMA_LOADGEN_TEST_DURATION").unwrap_or_else(|_| "3s".into())
}

/// Bound on one loadgen run: levels are a few seconds, but a debug-build proof may take a few.
const RUN_LIMIT: Duration = Duration::from_secs(600);

fn loadgen_run(url: &str, pool: &std::path::Path, out: &std::path::Path, args: &[&str]) {
    let o = run_bounded(
        Command::new(loadgen_bin())
            .args(["run", "--url", url, "--quiet", "--timeout", "300s"])
            // Every request the server sees is one of a phase (the counts are compared).
            .args(["--prime", "0"])
            .arg("--requests")
            .arg(pool)
            .arg("--out")
            .arg(out)
            .args(args),
        RUN_LIMIT,
    );
    assert_success(&o, "enygma-loadgen run");
}

/// Closed loop: every level's completed count (plus its warm-up's) is what the server's
/// `/metrics` says it served, and internal prove time never exceeds external latency.
#[test]
fn closed_loop_counts_match_server_metrics() {
    let _g = serial();
    server_bin(); // fail first, and clearly, if the server is not built
    let dir = scratch("real-closed");
    let pool = request_pool(&dir, 4);
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let server = start_server(&dir, port, &[]);
    let pid = server.pid().to_string();
    let d = level_duration();
    // One run into `dir/name`: where it wrote, its report, and how many the server served
    // meanwhile.
    let closed_loop = |name: &str, levels: &str, warmup: &str| {
        let out = dir.join(name);
        let before = served(&url);
        let args = [
            "--levels",
            levels,
            "--duration",
            &d,
            "--warmup",
            warmup,
            "--server-pid",
            &pid,
        ];
        loadgen_run(&url, &pool, &out, &args);
        let served_meanwhile = served(&url) - before;
        (read_report(&out), served_meanwhile, out)
    };

    // 1. Levels 1 and 2 with a 1 s warm-up.
    let (r, served_meanwhile, out) = closed_loop("levels", "1,2", "1s");
    let levels = r["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    let mut total = 0;
    for l in levels {
        let c = l["completed"].as_u64().unwrap();
        let w = l["warmup"]["completed"].as_u64().unwrap();
        assert!(
            c >= 1,
            "no request completed in the measured part (proofs slower than {d}?): {l}"
        );
        assert_eq!(l["errors"], serde_json::json!({}), "{l}");
        // The load generator's own scrape around each level, warm-up included.
        assert_eq!(
            l["served_check"]["server_served"].as_f64(),
            Some((c + w) as f64),
            "{l}"
        );
        assert!(l["rss_peak_mb"].as_f64().unwrap() > 0.0);
        assert!(l["internal_prove_ms"]["p50"].as_f64().unwrap() > 0.0);
        total += c + w;
    }
    assert_eq!(
        served_meanwhile, total as f64,
        "server served {served_meanwhile} but the report counts {total}"
    );
    assert_internal_within_external(&out, &r);
    assert_eq!(r["server"]["pid"], server.pid());

    // 2. No warm-up: `completed` alone equals the server's count.
    let (r, served_meanwhile, out) = closed_loop("no-warmup", "2", "0s");
    let c = r["levels"][0]["completed"].as_u64().unwrap();
    assert!(c >= 1);
    assert_eq!(
        served_meanwhile, c as f64,
        "server served {served_meanwhile} but the report says completed = {c}"
    );
    assert_internal_within_external(&out, &r);
    drop(server);
}

/// Open loop against a server the load generator starts itself (`--spawn-server`): RSS is
/// sampled, counts match `/metrics`, latency is measured from the schedule, and the server is
/// stopped at the end.
#[test]
fn open_loop_with_spawned_server() {
    let _g = serial();
    server_bin(); // fail first, and clearly, if the server is not built
    let dir = scratch("real-open");
    let pool = request_pool(&dir, 4);
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let out = dir.join("out");
    let spawn = format!(
        "{} --bind 127.0.0.1 --port {port} --admin-bind 127.0.0.1:0 --keys-dir {}",
        server_bin().display(),
        keys_dir().display()
    );
    let ready = format!("{}s", ready_timeout().as_secs());
    loadgen_run(
        &url,
        &pool,
        &out,
        &[
            "--levels",
            "none",
            "--open-rate",
            "0.5",
            "--duration",
            "4s",
            "--warmup",
            "0s",
            "--spawn-server",
            &spawn,
            "--ready-timeout",
            &ready,
        ],
    );
    let r = read_report(&out);
    let o = &r["open_loop"][0];
    let expected = poisson_schedule(0.5, Duration::from_secs(4), 1).len() as u64;
    assert!(expected >= 1);
    assert_eq!(o["scheduled"].as_u64(), Some(expected), "{o}");
    assert_eq!(o["completed"].as_u64(), Some(expected), "{o}");
    assert_eq!(
        o["served_check"]["server_served"].as_f64(),
        Some(expected as f64),
        "{o}"
    );
    assert!(o["rss_samples"].as_u64().unwrap() > 0 && o["rss_peak_mb"].as_f64().unwrap() > 0.0);
    assert_internal_within_external(&out, &r);
    let pid = r["server"]["pid"].as_u64().unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the spawned server is still running"
    );
}

/// The A/B runner drives the real binary: `--unlimited`, the capped defaults and a sweep
/// setting all start, serve and report; `--sweep-args` reaches the sweep's server only (and the
/// best setting it names, so that it reproduces), and
/// `--prime-until` stops once the server's metric reads above zero (here at once: the priming
/// request already counts).
#[test]
fn ab_runs_unlimited_capped_and_sweep() {
    let _g = serial();
    server_bin(); // fail first, and clearly, if the server is not built
    let dir = scratch("real-ab");
    let pool = request_pool(&dir, 4);
    let out = dir.join("ab");
    let port = free_port();
    let ready = format!("{}s", ready_timeout().as_secs());
    let o = run_bounded(
        Command::new(loadgen_bin())
            // The servers it starts: each admin listener on a free port of its own.
            .env("ENYGMA_ADMIN_BIND", "127.0.0.1:0")
            .args([
                "ab",
                "--quiet",
                "--port",
                &port.to_string(),
                "--levels",
                "1",
                "--duration",
                "2s",
                "--warmup",
                "0s",
            ])
            .args(["--sweep", "1x2", "--ready-timeout", &ready])
            .args([
                "--sweep-args",
                "--queue-depth 3",
                "--prime-until",
                SERVED_K6,
            ])
            .arg("--server-cmd")
            .arg(server_bin())
            .arg("--keys-dir")
            .arg(keys_dir())
            .arg("--requests")
            .arg(&pool)
            .arg("--out")
            .arg(&out),
        RUN_LIMIT * 2,
    );
    assert_success(&o, "enygma-loadgen ab");
    for v in ["unlimited", "capped", "sweep-1x2"] {
        let r = read_report(&out.join(v));
        let l = &r["levels"][0];
        assert!(l["completed"].as_u64().unwrap() >= 1, "{v}: {l}");
        assert_eq!(l["served_check"]["matches"], true, "{v}: {l}");
        assert_internal_within_external(&out.join(v), &r);
        let command = r["settings"]["spawn_server"].as_str().unwrap();
        assert_eq!(
            command.contains("--queue-depth 3"),
            v == "sweep-1x2",
            "{v}: {command}"
        );
        let notes = r["notes"].to_string();
        assert!(
            notes.contains("0 request(s) sent one at a time until"),
            "{v}: {notes}"
        );
    }
    let md = std::fs::read_to_string(out.join("ab.md")).unwrap();
    assert!(
        md.contains("## Side by side")
            && md
                .contains("**Best setting: `--max-inflight 1 --prove-threads 2 --queue-depth 3`**"),
        "{md}"
    );
}
