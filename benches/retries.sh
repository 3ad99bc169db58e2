#!/usr/bin/env bash
# A gateway that retries every request after a short timeout, against one overloaded
# enygma-server, without and then with idempotency keys, in one run. `enygma-loadgen retries`
# keeps CONCURRENCY (16) distinct requests in flight, far past the server's slots, so that
# answers take longer than RETRY_AFTER (1s); an attempt without an answer by then is abandoned
# (its connection dropped) and the request sent again, at most MAX_RETRIES (3) times, the last
# attempt waiting up to 300 s. Each run sends new distinct requests for DURATION (30s); the
# server's enygma_proofs_started_total is read before a run and after it once the server is idle,
# so the proofs of abandoned attempts, which run on after their client left, are counted.
#
#   no-keys    each retry is a new request to the server
#   keys       every distinct request has its own Idempotency-Key, the same on its retries
#
# The claim: with keys every distinct request is proved once (proofs computed per distinct
# request 1.00) and the goodput is the server's capacity; without keys the retries' proofs are
# work thrown away.
#
# Writes OUT (default benches/results/<date>-retries-<cpu>/): README.md (the machine and the
# summary table), one directory per run with the load generator's report.json, report.md and
# command.txt, the server's idempotency and proof series after the run (metrics.prom), and the
# server's log. Takes about 2 x DURATION plus the runs' tails (a last attempt waits for its
# answer), the server's start (development keys are created once if missing) and builds.
#
#   benches/retries.sh                            # release build, transfer-k6, 30 s per run
#   benches/retries.sh --quick                    # a smoke test: ownership-721, 5 s per run
#   PROFILE=debug BUILD=0 benches/retries.sh --quick
# Env: PROFILE (release), BUILD (1), CIRCUIT (transfer-k6), DURATION, CONCURRENCY, RETRY_AFTER,
# MAX_RETRIES, POOL_SIZE (64), SEED (1), PORT (3027), KEYS (keys), OUT. Talks to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh

QUICK=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
  esac
done
if [ "$QUICK" = 1 ]; then
  CIRCUIT=${CIRCUIT:-ownership-721}
  DURATION=${DURATION:-5s}
  POOL_SIZE=${POOL_SIZE:-4}
fi
PROFILE=${PROFILE:-release}
CIRCUIT=${CIRCUIT:-transfer-k6}
DURATION=${DURATION:-30s}
CONCURRENCY=${CONCURRENCY:-16}
RETRY_AFTER=${RETRY_AFTER:-1s}
MAX_RETRIES=${MAX_RETRIES:-3}
POOL_SIZE=${POOL_SIZE:-64}
SEED=${SEED:-1}
PORT=${PORT:-3027}
KEYS=${KEYS:-keys}
URL="http://127.0.0.1:$PORT"

profile_binaries "$PROFILE"

CPU=$(cpu_model)
OUT=${OUT:-benches/results/$(date -u +%F)-retries-$(cpu_slug "$CPU")}
mkdir -p "$OUT"

REQUESTS=${REQUESTS:-target/loadgen-requests/$CIRCUIT-seed$SEED-n$POOL_SIZE}
request_pool "$ENYGMA_BIN" "$REQUESTS" "$SEED" "$POOL_SIZE" --circuit "$CIRCUIT"

# One server with its defaults for both runs: the runs differ only in the gateway's keys.
"$SERVER_BIN" --bind 127.0.0.1 --port "$PORT" --admin-bind none --keys-dir "$KEYS" \
  --circuits "$CIRCUIT" --log-format json >"$OUT/server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null' EXIT

run() { # run NAME [--idempotency-keys]
  local name=$1; shift
  echo "== $name" >&2
  # The time bound: the gateway sends for DURATION; a distinct request in flight then takes at
  # most MAX_RETRIES x RETRY_AFTER plus its last attempt's 300 s.
  "$LOADGEN_BIN" retries --url "$URL" --endpoint "$CIRCUIT" --requests "$REQUESTS" \
    --concurrency "$CONCURRENCY" --duration "$DURATION" --retry-after-timeout "$RETRY_AFTER" \
    --max-retries "$MAX_RETRIES" --timeout 300s --label "$name" --out "$OUT/$name" "$@"
  curl -fsS "$URL/metrics" | grep -E '^enygma_(idempotency_|proofs_started|proofs_discarded|abandoned)' \
    >"$OUT/$name/metrics.prom" || true
}

# The machine's load when the runs start: other work on it slows the proofs down (not the
# proofs per distinct request, as long as answers take longer than the retry timeout).
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
run no-keys
run keys --idempotency-keys

# The summary, from the two reports.
python3 - "$OUT" "$CIRCUIT" "$CPU" "$QUICK" "$LOAD" <<'EOF' >"$OUT/README.md"
import json, sys
out, circuit, cpu, quick, load = sys.argv[1:]
runs = {n: json.load(open(f"{out}/{n}/report.json")) for n in ["no-keys", "keys"]}
first = runs["no-keys"]
m = first["machine"]
ifma = "with" if "avx512ifma" in open("/proc/cpuinfo").read() else "without"

def fmt(x, d=2):
    return "–" if x is None else f"{x:.{d}f}"

print("# A gateway that retries after a timeout, with and without idempotency keys\n")
print(f"{first['generated_at'][:10]}, {cpu} ({ifma} AVX-512 IFMA), {m['available_parallelism']} CPUs "
      f"available, {m['mem_total_mb']} MB, kernel {m['kernel']}; the release enygma-server with its "
      f"defaults and `--circuits {circuit}`, one server for both runs, on 127.0.0.1 beside the load "
      f"generator; load average {load} when the runs started.\n")
print(f"The gateway keeps {first['concurrency']} distinct requests in flight for {first['duration_s']:.0f} s; "
      f"an attempt without an answer after {first['retry_after_timeout_s']:.1f} s is abandoned and sent "
      f"again, at most {first['max_retries']} times (the last attempt waits up to 300 s). The proofs "
      f"computed are the server's `enygma_proofs_started_total` after the run, once idle, minus "
      f"before.\n")
if quick == "1":
    print("**Smoke run (`--quick`)**: a few seconds of a small statement; it shows the mechanism, "
          "not a measurement.\n")
print("| run | distinct requests | proved | failed | attempts | replayed | proofs computed | proofs per distinct request | goodput (proofs/s) | p50 (ms) | p99 (ms) |")
print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
for name, r in runs.items():
    failed = ", ".join(f"{k}: {v}" for k, v in r["failed"].items()) or "0"
    lat = r.get("latency_ms") or {}
    print(f"| {name} | {r['distinct_requests']} | {r['proved']} | {failed} | {r['attempts']} | "
          f"{r['replayed']} | {fmt(r['proofs_computed'], 0)} | {fmt(r['proofs_per_distinct_request'])} | "
          f"{fmt(r['goodput_rps'])} | {fmt(lat.get('p50'), 0)} | {fmt(lat.get('p99'), 0)} |")
keys, plain = runs["keys"], runs["no-keys"]
print()
print(f"With keys: {fmt(keys['proofs_per_distinct_request'])} proofs per distinct request (goal 1.00), "
      f"goodput {fmt(keys['goodput_rps'])}/s; without: {fmt(plain['proofs_per_distinct_request'])} and "
      f"{fmt(plain['goodput_rps'])}/s. One run each on a shared machine: goodput varies by 10-20 % "
      f"between runs; the proofs per distinct request do not depend on the machine's speed as long as "
      f"answers take longer than the retry timeout.")
for name, r in runs.items():
    for note in r["notes"]:
        print(f"\n{name}: {note}")
EOF
echo "wrote $OUT/README.md" >&2
cat "$OUT/README.md"
