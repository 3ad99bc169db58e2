#!/usr/bin/env bash
# The soak test (throughput and memory held steady for 30 minutes), in one command (from anywhere in the repository):
#
#   benches/soak.sh
#
# 30 minutes at 4 requests in flight against the release server with its default configuration
# (cap, queue, shedding), after a warm-up, with the server's RSS sampled every 100 ms. The report
# (report.md, report.json, chart.svg, rss.svg, rss.csv, requests.csv, server.log; files over
# 1 MB gzipped) gives every window's throughput and its deviation from the soak's mean (the
# public load test's criterion: within ±7 %), latency, RSS per window and the RSS growth trend
# (least-squares slope over every sample, MB/h).
#
#   SOAK_DURATION=600s benches/soak.sh     # shorter (the report says so)
#   CIRCUIT=withdraw-k4 benches/soak.sh    # another statement instance (a key stem)
# Nothing else may run on the machine meanwhile: the windows measure the CPU's throughput.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh

CIRCUIT=${CIRCUIT:-transfer-k6}
CONCURRENCY=${CONCURRENCY:-4}
SOAK_DURATION=${SOAK_DURATION:-1800s}
WINDOW=${WINDOW:-60s}
WARMUP=${WARMUP:-30s}
POOL_SIZE=${POOL_SIZE:-64}
SEED=${SEED:-1}
PORT=${PORT:-3013}
KEYS_DIR=${KEYS_DIR:-keys}
OUT=${OUT:-benches/results/$(date -u +%F)-soak-$CIRCUIT}

build_load_binaries --release

REQUESTS=target/loadgen-requests/$CIRCUIT-seed$SEED-n$POOL_SIZE
request_pool target/release/enygma "$REQUESTS" "$SEED" "$POOL_SIZE" --circuit "$CIRCUIT"

status=0
target/release/enygma-loadgen run \
    --url "http://127.0.0.1:$PORT" \
    --spawn-server "target/release/enygma-server --bind 127.0.0.1 --port $PORT --keys-dir $KEYS_DIR" \
    --requests "$REQUESTS" --endpoint "$CIRCUIT" \
    --levels none --warmup "$WARMUP" \
    --soak "$CONCURRENCY" --soak-duration "$SOAK_DURATION" --window "$WINDOW" \
    --seed "$SEED" --quiet --out "$OUT" \
    --label "soak: $CIRCUIT, $CONCURRENCY in flight, $SOAK_DURATION in $WINDOW windows, default server configuration" \
    || status=$?
find "$OUT" -type f -size +1M ! -name '*.gz' -exec gzip -9 {} +
exit $status
