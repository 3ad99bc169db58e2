#!/usr/bin/env bash
# The ledger property test (crates/enygma-circuit/tests/ledger.rs) at length: forged payments
# derived from random honest ones, each accepted one applied to a simulated ledger whose
# invariants must hold. CI runs one seed of 24 steps; this runs SEEDS seeds of STEPS steps each
# in the release profile and prints each run's summary line.
#
#   benches/ledger.sh                 # seeds 1..8, 400 steps each
#   SEEDS="7 8" STEPS=2000 benches/ledger.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${SEEDS:-1 2 3 4 5 6 7 8}"
steps="${STEPS:-400}"
cargo test --release -q -p enygma-circuit --test ledger --no-run
for seed in $seeds; do
  LEDGER_SEED="$seed" LEDGER_STEPS="$steps" \
    cargo test --release -q -p enygma-circuit --test ledger -- --nocapture 2>&1 |
    grep -E '^seed |panicked|accepted, and|nullifier'
done
