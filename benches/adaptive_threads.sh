#!/usr/bin/env bash
# The default admission (a slot per CPU on one shared pool) against the fixed layouts `1x2` and
# `2x1` (--max-inflight x --prove-threads), in one run on one machine, k = 6 transfer at 1, 2, 4
# and 8 in flight: once without tables and once with --precompute transfer-k6 for all three
# (from anywhere in the repository):
#
#   benches/adaptive_threads.sh benches/results/<date>-<cpu>-adaptive-threads
#
# OUT gets no-tables/ and precompute/, each a `benches/run_load.sh` directory (ab.md compares the
# default, "capped", with the sweep; `--unlimited` runs too, as run_load.sh always does).
# DURATION (default 30s) and WARMUP (5s) set each level's length. About 2 x 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: benches/adaptive_threads.sh OUT}
export LEVELS=1,2,4,8 SOAK= SWEEP=1x2,2x1 DURATION=${DURATION:-30s} WARMUP=${WARMUP:-5s}
OUT=$OUT/no-tables benches/run_load.sh --quiet --server-args "--circuits transfer-k6"
OUT=$OUT/precompute benches/run_load.sh --quiet --server-args "--circuits transfer-k6 --precompute transfer-k6"
