#!/usr/bin/env bash
# `enygma prove` of ownership-721, transfer-k2 and transfer-k6, one fresh process per proof as
# an operator runs it, with two CLI builds alternated (A B A B ...) so that both see the same
# machine load: how a proof's time follows the circuit's size, before and after a change.
#
# usage: benches/prove_instances.sh BEFORE AFTER [ROUNDS] [--precompute]
#
# BEFORE and AFTER are `enygma` binaries (copy target/release/enygma aside before rebuilding).
# Keys come from keys/ (development keys are created there if missing); requests are generated
# once (seed 7) into a temporary directory. Prints one line per proof, `NAME INSTANCE MS` (the
# `prove` time the CLI reports: witness map, MSMs and the proof's verification), then the
# median per binary and instance. Run it on a quiet machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
before="${1:?usage: benches/prove_instances.sh BEFORE AFTER [ROUNDS] [--precompute]}"
after="${2:?usage: benches/prove_instances.sh BEFORE AFTER [ROUNDS] [--precompute]}"
rounds="${3:-5}"
flags=("${@:4}")
instances=(ownership-721 transfer-k2 transfer-k6)
requests="$(mktemp -d)"
trap 'rm -rf "$requests"' EXIT
cd "$root"
for instance in "${instances[@]}"; do
    "$before" gen-request --circuit "$instance" --seed 7 --out "$requests" >/dev/null
done

# "ownership-721: witness 3.1ms, prove 41.2ms" -> 41.2 (Duration's Debug form: ms or s).
prove_ms() {
    sed -n 's/.*prove \([0-9.]*\)\(µs\|ms\|s\)$/\1 \2/p' | awk '
        $2 == "s" { print $1 * 1000; next }
        $2 == "µs" { print $1 / 1000; next }
        { print $1 }'
}

results="$(mktemp)"
for ((round = 1; round <= rounds; round++)); do
    for instance in "${instances[@]}"; do
        for side in before after; do
            binary="$before"
            [ "$side" = after ] && binary="$after"
            ms="$("$binary" prove --circuit "$instance" --keys-dir keys "${flags[@]}" \
                "$requests/$instance-0.json" 2>&1 >/dev/null | prove_ms)"
            echo "$side $instance $ms" | tee -a "$results"
        done
    done
done
echo "median over $rounds rounds (ms):"
for instance in "${instances[@]}"; do
    for side in before after; do
        awk -v s="$side" -v i="$instance" '$1 == s && $2 == i { print $3 }' "$results" |
            sort -n | awk -v s="$side" -v i="$instance" '
                { v[NR] = $1 }
                END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                      printf "%s %s %.1f\n", s, i, m }'
    done
done
rm -f "$results"
