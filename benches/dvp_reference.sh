#!/usr/bin/env bash
# The three DvP statements (join-split-enygma, join-split-1155, ownership-721): the default
# server, started with no flags, against the reference, one statement after the other on the
# same machine (from anywhere in the repository):
#
#   REFERENCE_CMD=/path/to/rayls-api REFERENCE_DIR=/path/to/its/checkout \
#       benches/dvp_reference.sh benches/results/<date>-<cpu>-dvp-reference
#
# The reference needs its own keys for the three circuits, made outside this repository with
# its setup functions (docs/benchmarking.md). Each statement gets OUT/STEM/, a
# `benches/run_load.sh` directory (ab.md: the default as "capped", `--unlimited`, the
# reference) with distinct generated requests of that statement. Warm-up, stated in each
# report: our server proves one request at a time until the statement's tables are resident
# (--prime-until on enygma_table_bytes); the reference gets one priming request (it loads a
# circuit's keys on its first). LEVELS (default 1,2,4), DURATION (20s) and WARMUP (5s) set
# the schedule. About 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: benches/dvp_reference.sh OUT}
: "${REFERENCE_CMD:?set REFERENCE_CMD (and REFERENCE_DIR) to the reference service}"
export LEVELS=${LEVELS:-1,2,4} SOAK= SWEEP=none DURATION=${DURATION:-20s} WARMUP=${WARMUP:-5s}
for stem in join-split-enygma join-split-1155 ownership-721; do
    CIRCUIT=$stem OUT=$OUT/$stem benches/run_load.sh --quiet \
        --prime-until "enygma_table_bytes{statement=\"$stem\"}"
done
