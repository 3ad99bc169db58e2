#!/usr/bin/env bash
# Proof time with keys from a (throw-away) snarkjs ceremony against the development keys, on the
# same machine, interleaved (crates/enygma-prover/examples/key_origins.rs), for the k = 6
# transfer and the Enygma DvP join-split.
#
# usage: benches/ceremony_keys.sh OUT_DIR [ROUNDS] [THREADS]
#
# OUT_DIR keeps the ceremony of each instance (scripts/ceremony.sh local: a throw-away phase 1 of
# 2^16, two contributions and a beacon, imported into OUT_DIR/STEM/keys), the requests and the
# report (OUT_DIR/report.md). A phase 1 already in OUT_DIR is reused; PTAU=FILE supplies one
# (2^16 or more). The phase 1 costs most of the time (half an hour of one core at 2^16).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: benches/ceremony_keys.sh OUT_DIR [ROUNDS] [THREADS]}"
rounds="${2:-20}"
threads="${3:-$(nproc)}"
power=16
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$root"

cargo build --release -p enygma-cli
cargo build --release -p enygma-prover --features bench --example key_origins
export ENYGMA="$root/target/release/enygma"
"$ENYGMA" setup --keys-dir keys --keep-existing

ptau="$out/phase1-2^$power-throw-away.ptau"
if [ -n "${PTAU:-}" ] && [ ! -f "$ptau" ]; then cp "$PTAU" "$ptau"; fi
[ -f "$ptau" ] || bash scripts/ceremony.sh phase1-local "$power" "$ptau"

{
  echo "# Proof time: ceremony keys against development keys"
  echo
  echo "$(date -u +%F), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $threads prove threads,"
  echo "commit $(git rev-parse --short HEAD); ceremony keys from a throw-away local phase 1 (2^$power)."
  echo
} >"$out/report.md"

for stem in transfer-k6 join-split-enygma; do
  dir="$out/$stem"
  mkdir -p "$dir"
  ln -sf "$ptau" "$dir/phase1-2^$power-throw-away.ptau"
  [ -f "$dir/keys/$stem.pk" ] || bash scripts/ceremony.sh local "$stem" "$dir" "$power"
  "$ENYGMA" gen-request --circuit "$stem" --seed 11 --count 4 --out "$dir/requests" >/dev/null
  "$root/target/release/examples/key_origins" "$stem" keys "$dir/keys" "$rounds" "$threads" \
    "$dir"/requests/*.json | tee -a "$out/report.md"
  echo >>"$out/report.md"
done
echo "report: $out/report.md"
