#!/usr/bin/env bash
# Peer benchmark: iden3's rapidsnark (C++ with ffiasm's assembly field arithmetic) against our
# prover on the same zkey and the same witness, proof alone and whole process, on one CPU and on
# all of them, rounds alternated. A benchmark, not a test: CI does not run it.
#
#   RAPIDSNARK_DIR=/path/to/rapidsnark benches/peers/rapidsnark.sh [OUT_DIR]
#
# RAPIDSNARK_DIR is a rapidsnark checkout outside this repository with its submodules in
# depends/ (ffiasm, json); nothing of it is committed. It is built in BUILD_DIR with cmake
# (Debian: build-essential cmake libgmp-dev libsodium-dev nasm; its build_gmp.sh is not needed,
# cmake links the system GMP), and benches/peers/rapidsnark/prove_times.cpp is linked against
# its library.
#
# Inputs, per instance: a generated request (seed 7), its witness (`enygma export-wtns`) and the
# instance's development key as a zkey (`enygma export-zkey`: snarkjs' H points, every other
# point the development key's). A proof of rapidsnark's CLI is checked with `enygma verify`
# against keys/ before anything is timed.
#
# Measured, per round, instance and CPU setting (`taskset -c 0` for 1, none for all), the sides
# in an order that alternates between rounds:
# - proof alone: rapidsnark's groth16_prover_prove (prove_times.cpp: the zkey loaded once by
#   groth16_prover_create) against groth16::create_proof on the same zkey and witness
#   (crates/enygma-prover/examples/peer_prove.rs), without and with precomputed tables; each
#   process makes PROOFS + 1 proofs and its first is dropped as a warm-up;
# - whole process: rapidsnark's `prover ZKEY WTNS PROOF PUBLIC` against `enygma prove REQUEST`
#   (witness synthesis from the request, our development key from keys/ with the matrices
#   kept in keys/cache, and the proof's self-check), wall time of each process.
#
# environment: ROUNDS (3), PROOFS (5), PROCESSES (whole-process runs per side and round, 3),
#   INSTANCES ("ownership-721 transfer-k6 join-split-enygma"), CPUS ("1 all"),
#   BUILD_DIR (target/rapidsnark-build), WORK (target/rapidsnark-inputs).
# OUT_DIR (default benches/results/DATE-rapidsnark-CPU) gets raw.log (one line per timing) and
# README.md (the machine, the load, the medians and the ratios ours / rapidsnark).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source benches/lib.sh
rapidsnark="${RAPIDSNARK_DIR:?set RAPIDSNARK_DIR to a rapidsnark checkout with depends/ffiasm and depends/json}"
rapidsnark="$(cd "$rapidsnark" && pwd)"
ROUNDS=${ROUNDS:-3}
PROOFS=${PROOFS:-5}
PROCESSES=${PROCESSES:-3}
INSTANCES=${INSTANCES:-"ownership-721 transfer-k6 join-split-enygma"}
CPUS=${CPUS:-"1 all"}
target="${CARGO_TARGET_DIR:-$root/target}"
build="${BUILD_DIR:-$target/rapidsnark-build}"
work="${WORK:-$target/rapidsnark-inputs}"
model="$(cpu_model)"
if grep -qm1 -o avx512ifma /proc/cpuinfo; then ifma=avx512ifma; else ifma=no-avx512ifma; fi
out="${1:-benches/results/$(date -u +%F)-rapidsnark-$(cpu_slug "$model")-$ifma}"
mkdir -p "$out" "$work"
raw="$out/raw.log"
: >"$raw"

echo "== building enygma, peer_prove and rapidsnark ($rapidsnark)"
cargo build --quiet --release -p enygma-cli
cargo build --quiet --release -p enygma-prover --example peer_prove
enygma="$target/release/enygma"
peer_prove="$target/release/examples/peer_prove"
[ -d "$rapidsnark/depends/ffiasm/c" ] && [ -d "$rapidsnark/depends/json/single_include" ] ||
    { echo "$rapidsnark/depends/ffiasm and depends/json are missing (git submodule update --init)" >&2; exit 1; }
# rapidsnark's CMakeLists.txt only configures with its tests on; they are not built.
cmake -S "$rapidsnark" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$build.cmake.log" 2>&1 ||
    { tail -20 "$build.cmake.log" >&2; exit 1; }
make -C "$build" -j"$(nproc)" prover rapidsnarkStatic >"$build.make.log" 2>&1 ||
    { tail -20 "$build.make.log" >&2; exit 1; }
rs_cli="$build/src/prover"
rs_times="$build/prove_times"
g++ -O2 -std=c++11 -fopenmp -I"$rapidsnark/src" benches/peers/rapidsnark/prove_times.cpp \
    -o "$rs_times" -L"$build/src" -lrapidsnark -lfr -lfq -lgmp -lpthread 2>"$build.harness.log" ||
    { cat "$build.harness.log" >&2; exit 1; }

# rapidsnark's proof.json and public.json as a response our verifier reads (G2 as (c1, c0)).
to_response() {
    node -e '
      const fs = require("fs");
      const p = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
      const pub = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
      const swap = ([c0, c1]) => [c1, c0];
      console.log(JSON.stringify({ pi_a: p.pi_a.slice(0, 2), pi_b: p.pi_b.slice(0, 2).map(swap),
        pi_c: p.pi_c.slice(0, 2), public_signal: pub }));
    ' "$1" "$2"
}

echo "== inputs in $work"
for stem in $INSTANCES; do
    "$enygma" gen-request --circuit "$stem" --seed 7 >"$work/$stem.json"
    "$enygma" export-wtns --circuit "$stem" --out "$work/$stem.wtns" "$work/$stem.json"
    [ -s "$work/$stem.zkey" ] || "$enygma" export-zkey --circuit "$stem" --keys-dir keys --out "$work/$stem.zkey"
    "$rs_cli" "$work/$stem.zkey" "$work/$stem.wtns" "$work/$stem.proof.json" "$work/$stem.public.json"
    to_response "$work/$stem.proof.json" "$work/$stem.public.json" >"$work/$stem.rapidsnark-response.json"
    "$enygma" verify --circuit "$stem" --keys-dir keys "$work/$stem.rapidsnark-response.json" 2>&1 | tail -1
    # Keys, matrices kept in keys/cache: the whole-process runs below start warm, as a
    # deployment's processes do.
    "$enygma" prove --circuit "$stem" --keys-dir keys "$work/$stem.json" >/dev/null 2>&1
done

pin() { if [ "$1" = 1 ]; then echo "taskset -c 0"; fi; }
now_ns() { date +%s%N; }
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
started="$(date -u +%FT%TZ)"
echo "== $ROUNDS rounds, $PROOFS proofs per process, load $load_before"
for round in $(seq "$ROUNDS"); do
    for stem in $INSTANCES; do
        for cpus in $CPUS; do
            sides="rapidsnark enygma enygma-tables"
            if [ $((round % 2)) -eq 0 ]; then sides="enygma-tables enygma rapidsnark"; fi
            for side in $sides; do
                case $side in
                    rapidsnark) cmd=("$rs_times" "$work/$stem.zkey" "$work/$stem.wtns" $((PROOFS + 1))) ;;
                    enygma) cmd=("$peer_prove" "$stem" "$work/$stem.zkey" "$work/$stem.wtns" $((PROOFS + 1))) ;;
                    enygma-tables) cmd=("$peer_prove" "$stem" "$work/$stem.zkey" "$work/$stem.wtns" $((PROOFS + 1)) tables) ;;
                esac
                # shellcheck disable=SC2046 # pin is a command prefix or nothing
                $(pin "$cpus") "${cmd[@]}" | awk -v p="proof $stem $cpus $side" \
                    '/^proof_ms/ && seen++ { print p, $2 } /^load_ms/ { print "load", p, $2 }' | tee -a "$raw"
            done
            for _ in $(seq "$PROCESSES"); do
                for side in $(if [ $((round % 2)) -eq 0 ]; then echo enygma rapidsnark; else echo rapidsnark enygma; fi); do
                    t0=$(now_ns)
                    if [ "$side" = rapidsnark ]; then
                        # shellcheck disable=SC2046
                        $(pin "$cpus") "$rs_cli" "$work/$stem.zkey" "$work/$stem.wtns" "$work/$stem.p.json" "$work/$stem.pub.json"
                    else
                        # shellcheck disable=SC2046
                        $(pin "$cpus") "$enygma" prove --circuit "$stem" --keys-dir keys "$work/$stem.json" >/dev/null 2>&1
                    fi
                    echo "process $stem $cpus $side $(( ($(now_ns) - t0) / 1000 ))e-3" | awk '{ printf "%s %s %s %s %.1f\n", $1, $2, $3, $4, $5 }' | tee -a "$raw"
                done
            done
        done
    done
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# Medians per (kind, instance, cpus, side) and the ratios to rapidsnark.
summary="$(awk '
    $1 == "proof" || $1 == "process" { key = $1 " " $2 " " $3; v[key, $4] = v[key, $4] " " $5; n[key, $4]++
        if (!(key in seen)) { seen[key] = 1; keys[++k] = key } }
    function median(list,   a, m, i, j, x) {
        m = split(list, a, " ")
        for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    END {
        print "| what | instance | CPUs | rapidsnark ms | enygma ms | ratio | enygma with tables ms | ratio | runs per side |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        for (i = 1; i <= k; i++) {
            split(keys[i], f, " "); key = keys[i]
            r = median(v[key, "rapidsnark"]); e = median(v[key, "enygma"])
            what = (f[1] == "proof") ? "proof alone" : "whole process"
            t = ((key, "enygma-tables") in v) ? sprintf("%.1f | %.2f", median(v[key, "enygma-tables"]), median(v[key, "enygma-tables"]) / r) : "– | –"
            printf "| %s | %s | %s | %.1f | %.1f | %.2f | %s | %d |\n", what, f[2], f[3], r, e, e / r, t, n[key, "rapidsnark"]
        }
    }' "$raw")"

commit="$(git -C "$root" rev-parse --short HEAD)"
rs_commit="$(git -C "$rapidsnark" rev-parse --short HEAD 2>/dev/null || echo "unknown (not a git checkout)")"
{
    echo "# rapidsnark against enygma on the same zkey and witness, $started"
    echo
    echo "Machine: $model, $(nproc) CPUs, $( [ "$ifma" = avx512ifma ] && echo "AVX-512 IFMA" || echo "no AVX-512 IFMA"), $(free -g | awk '/^Mem:/ { print $2 }') GiB."
    echo "Load average (1, 5, 15 min): $load_before before, $load_after after."
    echo "enygma at $commit; rapidsnark at $rs_commit ($rapidsnark), built by benches/peers/rapidsnark.sh."
    echo
    echo "$summary"
    echo
    echo "Medians over $ROUNDS rounds; ratio = enygma / rapidsnark (below 1: we are faster)."
    echo "Proof alone: $PROOFS proofs per process after one warm-up proof, the key loaded once"
    echo "(rapidsnark: groth16_prover_prove; enygma: groth16::create_proof, tables built before)."
    echo "Whole process: $PROCESSES process(es) per side and round, wall time: rapidsnark's \`prover\`"
    echo "CLI (zkey and .wtns in, proof out) against \`enygma prove\` (request JSON in: witness"
    echo "synthesis, keys and kept matrices read, the proof verified before it is printed)."
    echo "1 CPU: \`taskset -c 0\` for both (rapidsnark's thread pool then shares that one CPU)."
    echo
    echo "Command: \`RAPIDSNARK_DIR=$rapidsnark ROUNDS=$ROUNDS PROOFS=$PROOFS PROCESSES=$PROCESSES INSTANCES=\"$INSTANCES\" CPUS=\"$CPUS\" benches/peers/rapidsnark.sh\`."
    echo "Every timing is in [raw.log](raw.log)."
} >"$out/README.md"
cat "$out/README.md"
