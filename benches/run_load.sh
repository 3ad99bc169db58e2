#!/usr/bin/env bash
# The full A/B load test (our server capped and unlimited, and the reference), in one command (from anywhere in the repository):
#
#   benches/run_load.sh
#
# It builds enygma-server, enygma-loadgen and the enygma CLI in release mode, makes a pool of
# distinct requests of one statement instance, by default transfer-k6 (`enygma gen-request`),
# then runs `enygma-loadgen ab`: the server once `--unlimited` (like the reference) and once with
# its capped defaults, the same schedule on each (levels 1,2,4,8,16 for 60 s after 5 s of
# warm-up, then a 5-minute soak at 4 in flight in 30 s windows), then a sweep of --max-inflight x --prove-threads (1x2, 2x1, 4x1). It
# writes benches/results/<date>-<cpu>/ (ab.md side-by-side table, ab.json, ab.svg, and one
# directory per variant with report.json, report.md, chart.svg, rss.svg, requests.csv, rss.csv,
# server.log; files over 1 MB gzipped) and names the best setting.
#
# Everything is an environment variable; extra arguments go to `enygma-loadgen ab` as is:
#   DURATION=20s benches/run_load.sh            # shorter levels (the report says so)
#   CIRCUIT=withdraw-k4 benches/run_load.sh     # another statement instance (a key stem; `enygma info` lists them)
#   SOAK= SWEEP=none benches/run_load.sh        # no soak, no sweep
#   OPEN_RATE=0.5,1 benches/run_load.sh         # add open-loop (Poisson) phases
#   IGNORE_RETRY_AFTER=1 benches/run_load.sh    # shed clients retry at once (a retry storm)
#   REFERENCE_CMD=/path/to/rayls-api REFERENCE_DIR=/path/to/its/checkout benches/run_load.sh
#                                               # third column: the reference (port 3003)
# Full schedule: about 2 x 11 min (A and B) + 3 x 5.5 min (sweep), plus server start-ups.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh

# A statement instance of the registry (enygma_prover::statements): the CLI generates its
# requests and the load generator posts them to its proving route.
CIRCUIT=${CIRCUIT:-transfer-k6}
LEVELS=${LEVELS:-1,2,4,8,16}
DURATION=${DURATION:-60s}
WARMUP=${WARMUP:-5s}
SOAK=${SOAK-4}                       # empty: no soak
SOAK_DURATION=${SOAK_DURATION:-300s}
WINDOW=${WINDOW:-30s}
OPEN_RATE=${OPEN_RATE:-}             # e.g. 0.5,1 (requests/s)
IGNORE_RETRY_AFTER=${IGNORE_RETRY_AFTER:-} # non-empty: no back-off after a 503
SWEEP=${SWEEP:-1x2,2x1,4x1}          # MAX_INFLIGHTxPROVE_THREADS,... or none
SWEEP_LEVELS=${SWEEP_LEVELS:-$LEVELS}
POOL_SIZE=${POOL_SIZE:-64}
SEED=${SEED:-1}
KEYS_DIR=${KEYS_DIR:-keys}
PORT=${PORT:-3003}
READY_TIMEOUT=${READY_TIMEOUT:-1800s} # the first start creates missing development keys
OUT=${OUT:-}                         # default: benches/results/<date>-<cpu>/
REFERENCE_CMD=${REFERENCE_CMD:-}
REFERENCE_DIR=${REFERENCE_DIR:-}
REFERENCE_URL=${REFERENCE_URL:-http://127.0.0.1:3003}

build_load_binaries --release

REQUESTS=${REQUESTS:-target/loadgen-requests/$CIRCUIT-seed$SEED-n$POOL_SIZE}
request_pool target/release/enygma "$REQUESTS" "$SEED" "$POOL_SIZE" --circuit "$CIRCUIT"

args=(ab
    --server-cmd target/release/enygma-server --keys-dir "$KEYS_DIR" --port "$PORT"
    --requests "$REQUESTS" --endpoint "$CIRCUIT"
    --levels "$LEVELS" --duration "$DURATION" --warmup "$WARMUP"
    --soak-duration "$SOAK_DURATION" --window "$WINDOW" --seed "$SEED"
    --sweep "$SWEEP" --sweep-levels "$SWEEP_LEVELS" --ready-timeout "$READY_TIMEOUT")
[ -n "$SOAK" ] && args+=(--soak "$SOAK")
[ -n "$OPEN_RATE" ] && args+=(--open-rate "$OPEN_RATE")
[ -n "$IGNORE_RETRY_AFTER" ] && args+=(--ignore-retry-after)
[ -n "$OUT" ] && args+=(--out "$OUT")
if [ -n "$REFERENCE_CMD" ]; then
    args+=(--reference-cmd "$REFERENCE_CMD" --reference-url "$REFERENCE_URL")
    [ -n "$REFERENCE_DIR" ] && args+=(--reference-dir "$REFERENCE_DIR")
fi

# Recorded in ab.md as the one command that reproduces this run.
ENYGMA_RUN_LOAD_CMD="CIRCUIT=$CIRCUIT LEVELS=$LEVELS DURATION=$DURATION WARMUP=$WARMUP SOAK=$SOAK SOAK_DURATION=$SOAK_DURATION"
ENYGMA_RUN_LOAD_CMD+=" WINDOW=$WINDOW SWEEP=$SWEEP SWEEP_LEVELS=$SWEEP_LEVELS POOL_SIZE=$POOL_SIZE SEED=$SEED"
[ -n "$OPEN_RATE" ] && ENYGMA_RUN_LOAD_CMD+=" OPEN_RATE=$OPEN_RATE"
[ -n "$IGNORE_RETRY_AFTER" ] && ENYGMA_RUN_LOAD_CMD+=" IGNORE_RETRY_AFTER=1"
[ -n "$REFERENCE_CMD" ] && ENYGMA_RUN_LOAD_CMD+=" REFERENCE_CMD=<reference binary>"
ENYGMA_RUN_LOAD_CMD+=" benches/run_load.sh"
[ $# -gt 0 ] && ENYGMA_RUN_LOAD_CMD+=" $*"
export ENYGMA_RUN_LOAD_CMD

# Raw logs over 1 MB (the access log, requests.csv) are committed gzipped: compress what this
# run wrote, wherever --out put it.
started=$(mktemp)
trap 'rm -f "$started"' EXIT
status=0
target/release/enygma-loadgen "${args[@]}" "$@" || status=$?
find "${OUT:-benches/results}" -type f -newer "$started" -size +1M ! -name '*.gz' -exec gzip -9 {} +
exit $status
