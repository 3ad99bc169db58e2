#!/usr/bin/env bash
# Fair shares between callers: caller A floods at A_INFLIGHT (16) requests in flight while
# caller B sends one at a time (B_INFLIGHT, 1), each with its own bearer token, against one
# enygma-server with its default capacity flags (only the admission mode changes). Four runs of
# `enygma-loadgen callers`, each DURATION (60s) after WARMUP (5s):
#
#   b-alone    B alone (what B gets from an idle server)
#   a-alone    A alone (the server's capacity under A's load)
#   fair       A and B together, --admission fair
#   fifo       A and B together, --admission fifo (one queue: B waits behind A's)
#
# The claim: under fair shares B's p50 stays within 3x of its p50 alone, and A still gets the
# rest of the capacity (work-conserving); the FIFO run shows what B suffered without them.
#
# Writes OUT (default benches/results/<date>-<cpu>-fair-shares/): summary.md (B's p50 against
# alone, A's throughput against alone and the total), one directory per run with the load
# generator's report.json, report.md, requests.csv and command.txt, the per-caller metrics the
# server exported after it (metrics.prom), and each server's log. The tokens are random, live in
# a temporary directory and are written to no file of OUT. Takes about 4 x (DURATION + WARMUP)
# plus builds and server starts.
#
#   benches/fair_shares.sh                       # release build, transfer-k6, 60 s per run
#   benches/fair_shares.sh --quick               # a smoke test: ownership-721, 3 s per run
#   PROFILE=debug BUILD=0 benches/fair_shares.sh --quick
# Env: PROFILE (release), BUILD (1), CIRCUIT (transfer-k6), DURATION, WARMUP, A_INFLIGHT,
# B_INFLIGHT, POOL_SIZE (64), SEED (1), PORT (3023), KEYS (keys), OUT. Talks to 127.0.0.1 only.
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
  DURATION=${DURATION:-3s}
  WARMUP=${WARMUP:-1s}
  POOL_SIZE=${POOL_SIZE:-4}
fi
PROFILE=${PROFILE:-release}
CIRCUIT=${CIRCUIT:-transfer-k6}
DURATION=${DURATION:-60s}
WARMUP=${WARMUP:-5s}
A_INFLIGHT=${A_INFLIGHT:-16}
B_INFLIGHT=${B_INFLIGHT:-1}
POOL_SIZE=${POOL_SIZE:-64}
SEED=${SEED:-1}
PORT=${PORT:-3023}
KEYS=${KEYS:-keys}
URL="http://127.0.0.1:$PORT"

profile_binaries "$PROFILE"

OUT=${OUT:-benches/results/$(date -u +%F)-$(cpu_slug "$(cpu_model)")-fair-shares}
mkdir -p "$OUT"

# Secrets stay in a private temporary directory, removed at exit.
secrets=$(mktemp -d)
chmod 700 "$secrets"
pid=
trap '[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$secrets"' EXIT
new_token() { od -An -tx1 -N24 /dev/urandom | tr -d ' \n'; }
export FAIR_SHARES_A_TOKEN FAIR_SHARES_B_TOKEN
FAIR_SHARES_A_TOKEN=$(new_token)
FAIR_SHARES_B_TOKEN=$(new_token)
metrics_token=$(new_token)
(umask 077
 printf 'a %s\nb %s\n' "$FAIR_SHARES_A_TOKEN" "$FAIR_SHARES_B_TOKEN" >"$secrets/api"
 printf '%s\n' "$metrics_token" >"$secrets/metrics"
 printf 'Authorization: Bearer %s\n' "$metrics_token" >"$secrets/metrics.header")

REQUESTS=${REQUESTS:-target/loadgen-requests/$CIRCUIT-seed$SEED-n$POOL_SIZE}
request_pool "$ENYGMA_BIN" "$REQUESTS" "$SEED" "$POOL_SIZE" --circuit "$CIRCUIT"

# A server with its defaults but the admission mode; its log goes to OUT/server-MODE.log.
start_server() {
  "$SERVER_BIN" --bind 127.0.0.1 --port "$PORT" --admin-bind none --keys-dir "$KEYS" \
    --circuits "$CIRCUIT" --admission "$1" --log-format json \
    --auth-token-file "$secrets/api" --metrics-token-file "$secrets/metrics" \
    >"$OUT/server-$1.log" 2>&1 &
  pid=$!
}
stop_server() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=
}

# One run: NAME, then the callers (`a` and/or `b`).
run() {
  local name=$1; shift
  local callers=()
  for c in "$@"; do
    case "$c" in
      a) callers+=(--caller "a:env:FAIR_SHARES_A_TOKEN:closed=$A_INFLIGHT") ;;
      b) callers+=(--caller "b:env:FAIR_SHARES_B_TOKEN:closed=$B_INFLIGHT") ;;
    esac
  done
  echo "== $name: $*" >&2
  "$LOADGEN_BIN" callers --url "$URL" --endpoint "$CIRCUIT" --requests "$REQUESTS" \
    --duration "$DURATION" --warmup "$WARMUP" --label "$name" --out "$OUT/$name" "${callers[@]}"
  curl -fsS -H @"$secrets/metrics.header" "$URL/metrics" | grep '^enygma_caller_' \
    >"$OUT/$name/metrics.prom" || true
}

start_server fair
run b-alone b
run a-alone a
run fair a b
stop_server
start_server fifo
run fifo a b
stop_server

# The summary, from the four reports.
python3 - "$OUT" "$CIRCUIT" "$DURATION" "$WARMUP" "$A_INFLIGHT" "$B_INFLIGHT" "$QUICK" <<'EOF' >"$OUT/summary.md"
import json, sys
out, circuit, duration, warmup, a_n, b_n, quick = sys.argv[1:]
runs = {n: json.load(open(f"{out}/{n}/report.json")) for n in ["b-alone", "a-alone", "fair", "fifo"]}

def caller(run, name):
    return next(c for c in runs[run]["callers"] if c["name"] == name)

def p(c, q):
    return (c.get("latency_ms") or {}).get(q)

def fmt(x, d=1):
    return "–" if x is None else f"{x:.{d}f}"

def ratio(x, y):
    return None if x is None or not y else x / y

m = runs["fair"]["machine"]
print(f"# Fair shares: caller A at {a_n} in flight beside caller B at {b_n}\n")
print(f"{circuit}, enygma-server defaults but `--admission`; {duration} per run after a {warmup} warm-up; "
      f"{m['cpu_model']}, {m['logical_cpus']} logical CPUs.\n")
if quick == "1":
    print("**Smoke run (`--quick`)**: each run lasts fewer proofs than A keeps in flight, so A's "
          "figures are mostly its warm-up's backlog; they do not measure fair shares.\n")
print("| run | caller | schedule | completed | 503 | other errors | throughput (req/s) | p50 (ms) | p99 (ms) |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for run in runs:
    for c in runs[run]["callers"]:
        other = sum(v for k, v in c["errors"].items() if k != "503")
        print(f"| {run} | {c['name']} | {c['schedule']} | {c['completed']} | {c['shed_503']} | {other} | "
              f"{c['throughput_rps']:.2f} | {fmt(p(c, 'p50'))} | {fmt(p(c, 'p99'))} |")
b_alone = p(caller("b-alone", "b"), "p50")
a_alone = caller("a-alone", "a")["throughput_rps"]
print("\n| | fair | fifo |\n|---|---:|---:|")
print("| B's p50 / B's p50 alone (target: at most 3) | "
      + " | ".join(fmt(ratio(p(caller(r, "b"), "p50"), b_alone), 2) for r in ["fair", "fifo"]) + " |")
print("| A's throughput / A's alone | "
      + " | ".join(fmt(ratio(caller(r, "a")["throughput_rps"], a_alone), 2) for r in ["fair", "fifo"]) + " |")
print("| A + B throughput / A's alone (capacity used) | "
      + " | ".join(fmt(ratio(runs[r]["total"]["throughput_rps"], a_alone), 2) for r in ["fair", "fifo"]) + " |")
print("| B's share of the answers | "
      + " | ".join(fmt(ratio(caller(r, "b")["completed"], runs[r]["total"]["completed"]), 2) for r in ["fair", "fifo"]) + " |")
fair_ratio = ratio(p(caller("fair", "b"), "p50"), b_alone)
verdict = "holds" if fair_ratio is not None and fair_ratio <= 3 else "does NOT hold"
print(f"\nB's p50 under fair shares is {fmt(fair_ratio, 2)}x its p50 alone: the 3x bound {verdict}. "
      f"A alone is the server's capacity under this load ({a_alone:.2f} req/s).")
EOF
echo "wrote $OUT/summary.md" >&2
cat "$OUT/summary.md"
