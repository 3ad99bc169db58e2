//! Fair shares against the real `enygma-server` on 127.0.0.1, scaled down: two named callers
//! from a token file, `alice` flooding at 6 in flight and `bob` at 1, one proof at a time
//! (`--max-inflight 1`), the smallest statement instance (ownership-721). Driven through
//! `enygma-loadgen callers` (the binary), with the tokens in environment variables.
//!
//! Under `--admission fair` bob waits at most for the proof in progress before his own starts,
//! so his median latency stays within 3 proofs; under `--admission fifo` he waits behind
//! alice's whole queue (about 7 proofs). Proof time is the server's own (`Server-Timing`: total
//! minus queue) in the same run, so the bounds hold on a slow or busy machine. Each run lasts
//! about 20 proofs (4 to 20 s).
//!
//! A second test checks `run --token-file` against the same kind of server (401 without it).
//!
//! Needs the server binary (`target/debug/enygma-server` or `ENYGMA_SERVER_BIN`) and the
//! repository's `keys/` (the server creates ownership-721's development key if it is missing).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use enygma_loadgen::percentile;
use enygma_loadgen::HttpClient;
use enygma_loadgen::Token;

const STEM: &str = "ownership-721";
const ALICE_TOKEN: &str = "alice-fair-shares-token-0123456789";
const BOB_TOKEN: &str = "bob-fair-shares-token-0123456789ab";

/// The server's token file: two named callers (mode 600, as the server requires).
fn token_file(dir: &Path) -> std::path::PathBuf {
    let f = dir.join("tokens");
    std::fs::write(&f, format!("alice {ALICE_TOKEN}\nbob {BOB_TOKEN}\n")).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    f
}

/// What one admission mode gave each caller.
struct Outcome {
    /// The median proof time (server total minus queue) over the run's answers.
    proof_ms: f64,
    bob_p50_ms: f64,
    bob_completed: u64,
    alice_completed: u64,
    total_rps: f64,
}

fn run(dir: &Path, admission: &str, requests: &Path, tokens: &Path) -> Outcome {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let logs = dir.join(admission);
    std::fs::create_dir_all(&logs).unwrap();
    let tokens = tokens.to_str().unwrap();
    let _server = start_server(
        &logs,
        port,
        &[
            "--circuits",
            STEM,
            "--max-inflight",
            "1",
            "--admission",
            admission,
            "--auth-token-file",
            tokens,
        ],
    );
    // Alice's token: the server asks every caller for one.
    let token = Token::resolve(ALICE_TOKEN, "alice").unwrap();
    let client = HttpClient::new(&url, Duration::from_secs(120))
        .unwrap()
        .with_bearer(Some(&token));
    let proof = proof_time(&client, requests, STEM);
    // About 20 proofs: enough for bob's median under FIFO (a few answers), bounded on a slow
    // machine.
    let measured = (proof * 20).clamp(Duration::from_secs(4), Duration::from_secs(20));
    let out = logs.join("out");
    let o = run_bounded(
        Command::new(loadgen_bin())
            .env("FAIR_SHARES_ALICE", ALICE_TOKEN)
            .env("FAIR_SHARES_BOB", BOB_TOKEN)
            .args(["callers", "--quiet", "--url", &url, "--endpoint", STEM])
            .args(["--caller", "alice:env:FAIR_SHARES_ALICE:closed=6"])
            .args(["--caller", "bob:env:FAIR_SHARES_BOB:closed=1"])
            // The warm-up lets alice's queue fill; requests sent in it are not counted.
            .args(["--warmup", "1s", "--prime", "0"])
            .arg("--duration")
            .arg(format!("{}ms", measured.as_millis()))
            .arg("--requests")
            .arg(requests)
            .arg("--out")
            .arg(&out),
        Duration::from_secs(120),
    );
    assert_success(&o, &format!("enygma-loadgen callers ({admission})"));

    // The tokens went to the server and nowhere else.
    for f in std::fs::read_dir(&out).unwrap() {
        let path = f.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for t in [ALICE_TOKEN, BOB_TOKEN] {
            assert!(!text.contains(t), "a token in {}", path.display());
        }
    }

    let r = read_report(&out);
    let (alice, bob) = (&r["callers"][0], &r["callers"][1]);
    assert_eq!(
        (alice["name"].as_str(), bob["name"].as_str()),
        (Some("alice"), Some("bob"))
    );
    for c in [alice, bob] {
        assert_eq!(c["errors"], serde_json::json!({}), "{admission}: {c}");
    }
    let service: Vec<f64> = {
        let mut v: Vec<f64> = read_requests(&out)
            .iter()
            .filter(|row| row.status == "200")
            .map(|row| row.total_ms.unwrap() - row.queue_ms.unwrap_or(0.0))
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let outcome = Outcome {
        proof_ms: percentile(&service, 50.0).expect("answers 200"),
        bob_p50_ms: bob["latency_ms"]["p50"]
            .as_f64()
            .unwrap_or_else(|| panic!("{admission}: bob got no answer in {measured:?}: {bob}")),
        bob_completed: bob["completed"].as_u64().unwrap(),
        alice_completed: alice["completed"].as_u64().unwrap(),
        total_rps: r["total"]["throughput_rps"].as_f64().unwrap(),
    };
    eprintln!(
        "{admission}: proof {:.0} ms; bob p50 {:.0} ms ({:.1} proofs), {} answers; alice {} answers; \
         {:.2} proofs/s in all",
        outcome.proof_ms,
        outcome.bob_p50_ms,
        outcome.bob_p50_ms / outcome.proof_ms,
        outcome.bob_completed,
        outcome.alice_completed,
        outcome.total_rps
    );
    outcome
}

#[test]
fn a_light_caller_waits_at_most_one_proof_beside_a_flooding_one() {
    let _g = serial();
    server_bin(); // fail first, and clearly, if the server is not built
    let dir = scratch("fair-shares");
    let requests = request_files(&dir, STEM);
    let tokens = token_file(&dir);

    let fair = run(&dir, "fair", &requests, &tokens);
    // Bob's request waits for the proof in progress (alice's), then is next: within 3 proofs
    // from send to answer (2 plus the HTTP and checks around them).
    assert!(
        fair.bob_p50_ms <= 3.0 * fair.proof_ms,
        "fair: bob's p50 {:.0} ms is more than 3 proofs of {:.0} ms",
        fair.bob_p50_ms,
        fair.proof_ms
    );
    // Work-conserving: alice has the rest of the slot, which is busy most of the time.
    assert!(
        fair.alice_completed * 10 >= (fair.alice_completed + fair.bob_completed) * 3,
        "fair: alice got {} of {} answers",
        fair.alice_completed,
        fair.alice_completed + fair.bob_completed
    );
    assert!(
        fair.total_rps >= 0.6 * 1e3 / fair.proof_ms,
        "fair: {:.2} proofs/s in all, one slot proves {:.2}/s",
        fair.total_rps,
        1e3 / fair.proof_ms
    );

    // The same load under one FIFO queue: bob waits behind alice's queue.
    let fifo = run(&dir, "fifo", &requests, &tokens);
    assert!(
        fifo.bob_p50_ms >= 4.0 * fifo.proof_ms,
        "fifo: bob's p50 {:.0} ms is under 4 proofs of {:.0} ms: the contrast with fair shares \
         is gone",
        fifo.bob_p50_ms,
        fifo.proof_ms
    );
    assert!(fifo.bob_completed < fair.bob_completed);
}

/// `run --token-file` against the same server: its requests are answered with the token and
/// refused (401) without it, and the token is in none of the run's files.
#[test]
fn a_run_sends_its_token() {
    let _g = serial();
    server_bin(); // fail first, and clearly, if the server is not built
    let dir = scratch("run-token");
    let requests = request_files(&dir, STEM);
    let tokens = token_file(&dir);
    let token_file = dir.join("alice-token");
    std::fs::write(&token_file, format!("# alice's\n{ALICE_TOKEN}\n")).unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let _server = start_server(
        &dir,
        port,
        &[
            "--circuits",
            STEM,
            "--auth-token-file",
            tokens.to_str().unwrap(),
        ],
    );
    let level = |name: &str, token: &[&str]| {
        let out = dir.join(name);
        let o = run_bounded(
            Command::new(loadgen_bin())
                .args(["run", "--quiet", "--url", &url, "--endpoint", STEM])
                .args([
                    "--levels",
                    "1",
                    "--duration",
                    "1s",
                    "--warmup",
                    "0s",
                    "--prime",
                    "0",
                ])
                .arg("--requests")
                .arg(&requests)
                .arg("--out")
                .arg(&out)
                .args(token),
            Duration::from_secs(120),
        );
        assert_success(&o, &format!("enygma-loadgen run ({name})"));
        for f in std::fs::read_dir(&out).unwrap() {
            let path = f.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                !text.contains(ALICE_TOKEN),
                "the token is in {}",
                path.display()
            );
        }
        read_report(&out)["levels"][0].clone()
    };
    let with = level("with", &["--token-file", token_file.to_str().unwrap()]);
    assert!(with["completed"].as_u64().unwrap() > 0, "{with}");
    assert_eq!(with["errors"], serde_json::json!({}), "{with}");
    let without = level("without", &[]);
    assert_eq!(without["completed"], 0, "{without}");
    assert!(without["errors"]["401"].as_u64().unwrap() > 0, "{without}");
}
