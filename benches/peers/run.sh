#!/usr/bin/env bash
# Peer benchmark: gnark-crypto's BN254 MultiExp against enygma-msm on the same inputs, in one
# run, interleaved, with a table of the ratios. A benchmark, not a test: CI does not run it.
#
#   benches/peers/run.sh                       # G1 and G2, 2^13 to 2^16, 1 and 2 threads
#   ROUNDS=5 RUNS=7 SIZES="15" GROUPS_="g1" THREADS="1" VARIANTS="plain pre" benches/peers/run.sh
#
# VARIANTS are enygma-msm's: `plain` (msm), `pre` (msm_precomputed with the cost model's
# window width; the table is built before the timing), `pre<c>` (width c); each with a
# `-scalar` suffix (`plain-scalar`) times the scalar bucket additions instead of AVX-512 IFMA,
# so that one run measures what IFMA gives. The default: `plain pre`, and on a CPU with IFMA
# also `plain-scalar pre-scalar` (the scalar path, as on a CPU without AVX-512, stated as such).
#
# Each round runs gnark then enygma (the order alternates between rounds) for each setting;
# each run prints the median of RUNS timed MSMs after a warm-up. The table gives the median over
# the rounds and the range of the rounds' medians. Both sides must return the same point.
# Needs the Go toolchain (gnark-crypto comes from the Go module proxy) and cargo.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-5}
SIZES=${SIZES:-"13 14 15 16"}
GROUPS_=${GROUPS_:-"g1 g2"}
THREADS=${THREADS:-"1 2"}
if grep -qw avx512ifma /proc/cpuinfo; then
  VARIANTS=${VARIANTS:-"plain pre plain-scalar pre-scalar"}
else
  VARIANTS=${VARIANTS:-"plain pre"}
fi
INPUTS=${INPUTS:-$root/target/peers-inputs}
OUT=${OUT:-$root/target/peers-$(date -u +%Y%m%dT%H%M%S).log}

cargo build --quiet --release -p enygma-msm --example peer_msm --manifest-path "$root/Cargo.toml"
rust_bin=$root/target/release/examples/peer_msm
go_bin=$root/target/peers-gnark
(cd "$root/benches/peers/gnark" && go build -o "$go_bin" .)
[ -f "$INPUTS/g2.bin" ] || "$rust_bin" write "$INPUTS"

echo "# $(date -u +%FT%TZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT"
for round in $(seq "$ROUNDS"); do
  for group in $GROUPS_; do
    for log in $SIZES; do
      for threads in $THREADS; do
        sides="go $VARIANTS"
        if [ $((round % 2)) -eq 0 ]; then sides=$(echo "$sides" | tr ' ' '\n' | tac | xargs); fi
        for side in $sides; do
          if [ "$side" = go ]; then
            "$go_bin" "$INPUTS" "$group" "$log" "$threads" "$RUNS"
          else
            "$rust_bin" run "$INPUTS" "$group" "$log" "$threads" "$RUNS" "$side" 2>/dev/null
          fi | tee -a "$OUT"
        done
      done
    done
  done
done

# Table: median over rounds of each side's median, ratio to gnark, ns per point.
awk '
  /median_ms=/ {
    split($5, m, "="); split($4, t, "=");
    key = $2 " " $3 " " t[2]; side = $1;
    times[key, side] = times[key, side] " " m[2];
    res = $6 " " $7;
    if ((key) in result && result[key] != res) { bad[key] = 1 } else { result[key] = res }
    if (!(key in seen)) { seen[key] = 1; keys[++n] = key }
    if (side != "gnark" && !(side in known)) { known[side] = 1; sides[++ns] = side }
  }
  function median(list,   v, k, i, j, x) {
    k = split(list, v, " ");
    for (i = 2; i <= k; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] + 0 > x + 0; j--) v[j + 1] = v[j]; v[j + 1] = x }
    lo = v[1]; hi = v[k];
    return (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2;
  }
  END {
    print "";
    print "| MSM | threads | gnark-crypto ms (range) | ours | ours ms (range) | ours / gnark | ours ns/point | same result |";
    print "|---|---|---|---|---|---|---|---|";
    for (i = 1; i <= n; i++) {
      key = keys[i]; split(key, f, " ");
      g = median(times[key, "gnark"]); glo = lo; ghi = hi;
      size = f[2]; sub(/2\^/, "", size);
      for (s = 1; s <= ns; s++) {
        if (!((key, sides[s]) in times)) continue;
        e = median(times[key, sides[s]]);
        printf "| %s %s | %s | %.1f (%.1f-%.1f) | %s | %.1f (%.1f-%.1f) | **%.2f** | %.0f | %s |\n",
          f[1], f[2], f[3], g, glo, ghi, sides[s], e, lo, hi, e / g, e * 1e6 / 2 ^ size, (key in bad) ? "NO" : "yes";
      }
    }
  }' "$OUT" | tee -a "$OUT"
echo "log: $OUT"
