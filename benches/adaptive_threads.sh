#!/usr/bin/env bash
# The default server, started with no flags at all (a slot per CPU on one shared pool, tables
# built for the traffic), against the best explicit settings `1x2` and `2x1` (--max-inflight x
# --prove-threads) with their tables built at start (--precompute transfer-k6), and against the
# reference when REFERENCE_CMD is set: one run on one machine, the k = 6 transfer at 1, 2, 4 and
# 8 in flight (from anywhere in the repository):
#
#   REFERENCE_CMD=/path/to/rayls-api REFERENCE_DIR=/path/to/its/checkout \
#       benches/adaptive_threads.sh benches/results/<date>-<cpu>-adaptive-threads
#
# Warm-up, stated in each report's notes: before its first level every server proves one
# request at a time until its k = 6 tables are resident (--prime-until on
# enygma_table_bytes; at once for --precompute, after the background build for the default;
# the reference exports no such metric and gets the one priming request only). OUT is a
# `benches/run_load.sh` directory: ab.md puts the default ("capped") beside the sweep and the
# reference (`--unlimited` runs too, as run_load.sh always does). DURATION (default 30s) and
# WARMUP (5s) set each level's length. About 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: benches/adaptive_threads.sh OUT}
export OUT LEVELS=1,2,4,8 SOAK= SWEEP=1x2,2x1 DURATION=${DURATION:-30s} WARMUP=${WARMUP:-5s}
benches/run_load.sh --quiet --sweep-args "--precompute transfer-k6" \
    --prime-until 'enygma_table_bytes{statement="transfer",k="6"}'
