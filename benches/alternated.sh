#!/usr/bin/env bash
# Server settings alternated round after round (A B A B ...) on the same requests, so that every
# setting sees the same drift of the machine: on a shared 2 vCPU guest the same configuration
# measured minutes apart moves by 10-20 %, more than the differences worth deciding on. A thin
# wrapper over `enygma-loadgen ab --variant ... --rounds N`, with the requests made for CIRCUIT.
# From anywhere in the repository:
#
#   benches/alternated.sh OUT [ROUNDS]
#
# VARIANTS lists `name=extra server flags` separated by `;` (default: the server with no flags
# against `2x1` with its tables built at start); LEVELS (default 8), DURATION (30s), WARMUP (5s),
# CIRCUIT (transfer-k6). Before its first level every server proves one request at a time until
# the instance's tables are resident (--prime-until-tables). OUT/ab.md has each run side by side
# and, across the rounds, each setting's median, least and most with the ratios to the first
# setting; OUT/NAME-ROUND/ each run's report.
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

variant_args=()
IFS=';' read -ra variants <<<"$VARIANTS"
for variant in "${variants[@]}"; do
    variant_args+=(--variant "$variant")
done
target/release/enygma-loadgen ab --server-cmd target/release/enygma-server --port "$PORT" \
    --keys-dir keys --requests "$REQUESTS" --endpoint "$CIRCUIT" "${variant_args[@]}" \
    --rounds "$ROUNDS" --sweep none --levels "$LEVELS" --duration "$DURATION" --warmup "$WARMUP" \
    --ready-timeout 1800s --prime-until-tables --quiet --out "$OUT"
