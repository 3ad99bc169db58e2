#!/usr/bin/env bash
# Server settings alternated round after round (A B A B ...) on the same requests, so that every
# setting sees the same drift of the machine: on a shared 2 vCPU guest the same configuration
# measured minutes apart moves by 10-20 %, more than the differences worth deciding on. From
# anywhere in the repository:
#
#   benches/alternated.sh OUT [ROUNDS]
#
# VARIANTS lists `name=extra server flags` separated by `;` (default: the server with no flags
# against `2x1` with its tables built at start); LEVELS (default 8), DURATION (30s), WARMUP (5s),
# CIRCUIT (transfer-k6). Before its first level every server proves one request at a time until
# the instance's tables are resident (--prime-until), as benches/adaptive_threads.sh does. Each
# run writes OUT/NAME-ROUND/ (report.md, report.json, the raw request log) and the last lines
# print one row per run: throughput, p50 and the internal prove p50 at each level.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh
OUT=${1:?usage: benches/alternated.sh OUT [ROUNDS]}
ROUNDS=${2:-3}
VARIANTS=${VARIANTS:-"default=;2x1-pre=--max-inflight 2 --prove-threads 1 --precompute transfer-k6"}
LEVELS=${LEVELS:-8}
DURATION=${DURATION:-30s}
WARMUP=${WARMUP:-5s}
CIRCUIT=${CIRCUIT:-transfer-k6}
PORT=${PORT:-3003}
POOL_SIZE=${POOL_SIZE:-64}
SEED=${SEED:-1}

build_load_binaries --release
REQUESTS=target/loadgen-requests/$CIRCUIT-seed$SEED-n$POOL_SIZE
request_pool target/release/enygma "$REQUESTS" "$SEED" "$POOL_SIZE" --circuit "$CIRCUIT"
# The tables' metric carries the statement, and k for the payment statements.
stem=${CIRCUIT%-k[0-9]*}
selector="enygma_table_bytes{statement=\"$stem\"}"
[ "$stem" != "$CIRCUIT" ] && selector="enygma_table_bytes{statement=\"$stem\",k=\"${CIRCUIT##*-k}\"}"

mkdir -p "$OUT"
IFS=';' read -ra variants <<<"$VARIANTS"
for ((round = 1; round <= ROUNDS; round++)); do
    for variant in "${variants[@]}"; do
        name=${variant%%=*}
        flags=${variant#*=}
        target/release/enygma-loadgen run --url "http://127.0.0.1:$PORT" \
            --requests "$REQUESTS" --endpoint "$CIRCUIT" \
            --spawn-server "target/release/enygma-server --bind 127.0.0.1 --port $PORT --keys-dir keys $flags" \
            --levels "$LEVELS" --duration "$DURATION" --warmup "$WARMUP" --ready-timeout 1800s \
            --prime-until "$selector" --quiet \
            --out "$OUT/$name-$round" --label "$name-$round" >"$OUT/$name-$round.log" 2>&1
        echo "$name round $round done"
    done
done
for run in "$OUT"/*/; do
    row=$(awk -F'|' '/^\| [0-9]+ \|/ { printf " c=%s %s/s p50 %s ms prove %s ms;", $2+0, $5+0, $6+0, $10+0 }' \
        "$run/report.md")
    echo "$(basename "$run"):$row"
done
