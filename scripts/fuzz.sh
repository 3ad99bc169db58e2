#!/usr/bin/env bash
# Fuzzes every cargo-fuzz target (fuzz/fuzz_targets/) for SECONDS each (default 60): `prepare`,
# which takes the statement instance from its input and so covers every statement of the
# registry (each request parser, then its native checks), and `verify`, the verify routes' proof
# parser (seeded from crates/enygma-prover/tests/fuzz-corpus/verify/). Needs the nightly
# toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
#
# The seed corpus (generated requests of every instance, as `enygma gen-request` writes them,
# and the reference's sample requests) is written into fuzz/corpus/{target}/ first; libFuzzer
# adds what it finds there. Crashes land in fuzz/artifacts/{target}/ and fail the script.
# Neither directory is committed. Extra arguments go to libFuzzer (`-jobs=2`, `-dict=...`).
#
#   bash scripts/fuzz.sh 600         # 10 minutes per target
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
samples="${ENYGMA_REFERENCE_DIR:-$PWD/../shared/reference}/requests"
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz is required: cargo install cargo-fuzz" >&2; exit 1; }

for target in $(cd fuzz && cargo +nightly fuzz list); do
    corpus="fuzz/corpus/$target"
    if [ "$target" = verify ]; then
        # The proof parser's seeds are committed (the CI replay reads them too).
        mkdir -p "$corpus" && cp crates/enygma-prover/tests/fuzz-corpus/verify/* "$corpus/"
    else
        cargo run -q -p enygma-prover --example fuzz_seeds -- "$corpus" "$samples"
    fi
    echo "== $target: ${seconds}s"
    (cd fuzz && cargo +nightly fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1 "$@")
done
