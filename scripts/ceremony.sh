#!/usr/bin/env bash
# A Groth16 trusted-setup ceremony for one statement instance, with snarkjs (the version pinned in
# verifier-tests/package-lock.json), ending in keys this prover serves. docs/production-keys.md
# is the operator's guide: who runs which step, what to publish, how to check a finished
# ceremony.
#
# usage: scripts/ceremony.sh COMMAND ARGS...
#
# Phase 1 (powers of tau, shared by every circuit):
#   ptau-check PTAU [BLAKE2B]     print a .ptau file's blake2b-512 (what the Perpetual Powers of
#                                 Tau publish for each file), compare it when given, and print the
#                                 file's power and contribution log (snarkjs powersoftau verify)
#   phase1-local POWER OUT.ptau   a THROW-AWAY phase 1 made on this machine by one party (new,
#                                 one contribution, prepare phase2): for tests and benchmarks only
# Phase 2 (per circuit; each step may run on a different party's machine):
#   new STEM PTAU DIR             write DIR/STEM.r1cs (enygma export-r1cs) and DIR/STEM_0000.zkey
#                                 (snarkjs groth16 setup); prints the r1cs's SHA-256 and the
#                                 prover's version and commit, to publish
#   contribute IN.zkey OUT.zkey NAME
#                                 add a contribution with fresh entropy (snarkjs' own OS
#                                 randomness, plus 64 bytes of /dev/urandom); prints the hash to
#                                 publish
#   beacon IN.zkey OUT.zkey BEACON_HEX [ITERATIONS_EXP]
#                                 the final contribution from a public random beacon (default
#                                 2^10 iterations)
#   verify STEM PTAU FINAL.zkey   check every contribution of the zkey against the .ptau and
#                                 the checked-out source's constraint system (snarkjs zkey verify
#                                 on an enygma export-r1cs built from this checkout, unless
#                                 ENYGMA names a CLI); prints the commit it was built from
#   export FINAL.zkey DIR         snarkjs' verification_key.json and Solidity verifier
#                                 (Groth16Verifier) into DIR
#   import STEM FINAL.zkey KEYS_DIR [--force]
#                                 enygma import-zkey: our proving and verifying keys for the
#                                 instance, checked against its constraint system
# All at once, for tests and benchmarks:
#   local STEM DIR [POWER]        phase1-local (2^POWER, default: the smallest that fits), new,
#                                 two contributions, a beacon, verify, export and import into
#                                 DIR/keys; every file stays in DIR
#
# environment:
#   ENYGMA    the enygma CLI (default: target/release/enygma, else target/debug/enygma, else
#             cargo run -q --release -p enygma-cli --)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
snarkjs_dir="$root/verifier-tests"

die() { echo "ceremony: $*" >&2; exit 1; }
say() { echo "== $*" >&2; }

snarkjs() {
  if [ ! -f "$snarkjs_dir/node_modules/snarkjs/build/cli.cjs" ]; then
    say "installing snarkjs from verifier-tests/package-lock.json (npm ci)"
    (cd "$snarkjs_dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
  fi
  node "$snarkjs_dir/node_modules/snarkjs/build/cli.cjs" "$@"
}

# The CLI built from this checkout (cargo keeps it up to date), or ENYGMA: for `verify`, whose
# constraint system must be the checked-out source's, not whichever binary lies around.
enygma_from_source() {
  if [ -n "${ENYGMA:-}" ]; then
    # shellcheck disable=SC2086 # ENYGMA may be a command line
    $ENYGMA "$@"
  else
    (cd "$root" && cargo run -q --release -p enygma-cli -- "$@")
  fi
}

# The power of a .ptau file: its header section (type 1) holds the field size n8, the modulus,
# then the power (snarkjs' binfileutils layout: "ptau", version, section count, then sections
# of type u32 and size u64, all little-endian).
ptau_power() {
  python3 - "$1" <<'PY'
import struct, sys
with open(sys.argv[1], "rb") as f:
    magic, _version, sections = struct.unpack("<4sII", f.read(12))
    if magic != b"ptau":
        sys.exit(f"{sys.argv[1]}: not a .ptau file")
    for _ in range(sections):
        kind, size = struct.unpack("<IQ", f.read(12))
        if kind == 1:
            (n8,) = struct.unpack("<I", f.read(4))
            f.seek(n8, 1)
            (power,) = struct.unpack("<I", f.read(4))
            print(power)
            break
        f.seek(size, 1)
    else:
        sys.exit(f"{sys.argv[1]}: no header section")
PY
}

enygma() {
  if [ -n "${ENYGMA:-}" ]; then
    # shellcheck disable=SC2086 # ENYGMA may be a command line
    $ENYGMA "$@"
  elif [ -x "$root/target/release/enygma" ]; then
    "$root/target/release/enygma" "$@"
  elif [ -x "$root/target/debug/enygma" ]; then
    "$root/target/debug/enygma" "$@"
  else
    (cd "$root" && cargo run -q --release -p enygma-cli -- "$@")
  fi
}

# The smallest phase 1 for an instance: snarkjs' domain holds the constraints plus one row per
# public input and one for the constant (as ours), and needs a ptau of at least that power.
min_power() {
  enygma info --json | node -e '
    const stem = process.argv[1];
    const rows = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const row = rows.find((r) => (r.k == null ? r.circuit : `${r.circuit}-k${r.k}`) === stem);
    if (!row) { console.error(`ceremony: unknown instance ${stem} (enygma info lists them)`); process.exit(1); }
    console.log(Math.ceil(Math.log2(row.constraints + row.public_inputs + 1)));' "$1"
}

# The hash a snarkjs contribution step printed last ("contribution hash" block of 4 lines of 4
# words), joined into one 128-hex-digit string.
last_hash() {
  grep -A4 -i 'hash' | grep -E '^\s*([0-9a-f]{8}\s+){3}[0-9a-f]{8}\s*$' | tail -4 | tr -d ' \t\n'
}

# Extra entropy for a contribution. snarkjs hashes it together with 64 bytes of its own from the
# operating system's generator, so the value on its command line (visible to this machine's other
# users while it runs) is never the contribution's only randomness.
entropy() {
  head -c 64 /dev/urandom | od -An -tx1 | tr -d ' \n'
}

cmd_ptau_check() {
  local ptau="$1" expected="${2:-}"
  [ -f "$ptau" ] || die "$ptau does not exist"
  local sum
  sum="$(b2sum "$ptau" | cut -d' ' -f1)"
  echo "blake2b-512 $sum  $ptau"
  local power
  power="$(ptau_power "$ptau")"
  echo "power $power: circuits of up to 2^$power - 1 constraints and public inputs  $ptau"
  if [ -n "$expected" ]; then
    [ "$sum" = "$expected" ] || die "$ptau: blake2b-512 is $sum, the published hash is $expected: do not use this file"
    say "$ptau matches the published hash"
  fi
  say "snarkjs powersoftau verify $ptau (checks every contribution; minutes for large files)"
  snarkjs powersoftau verify "$ptau"
}

cmd_phase1_local() {
  local power="$1" out="$2" tmp
  tmp="$(mktemp -d)"
  say "THROW-AWAY phase 1 (2^$power), one party on this machine: for tests and benchmarks, never production"
  snarkjs powersoftau new bn128 "$power" "$tmp/pot_0000.ptau" >&2
  snarkjs powersoftau contribute "$tmp/pot_0000.ptau" "$tmp/pot_0001.ptau" \
    --name="local throw-away phase 1" -e="$(entropy)" >&2
  snarkjs powersoftau prepare phase2 "$tmp/pot_0001.ptau" "$out" >&2
  rm -rf "$tmp"
  echo "$out"
}

cmd_new() {
  local stem="$1" ptau="$2" dir="$3"
  mkdir -p "$dir"
  enygma export-r1cs --circuit "$stem" --out "$dir/$stem.r1cs" >&2
  snarkjs r1cs info "$dir/$stem.r1cs" >&2
  snarkjs groth16 setup "$dir/$stem.r1cs" "$ptau" "$dir/${stem}_0000.zkey" >&2
  # What to publish beside the contributions: the circuit and the build it comes from.
  say "publish: r1cs sha256 $(sha256sum "$dir/$stem.r1cs" | cut -d' ' -f1), prover $(enygma --version)"
  echo "$dir/${stem}_0000.zkey"
}

cmd_contribute() {
  local in="$1" out="$2" name="$3" log
  log="$(snarkjs zkey contribute "$in" "$out" --name="$name" -e="$(entropy)" 2>&1)" ||
    { echo "$log" >&2; die "contribution failed"; }
  echo "$log" >&2
  echo "contribution hash ($name): $(echo "$log" | last_hash)"
}

cmd_beacon() {
  local in="$1" out="$2" beacon="$3" iterations="${4:-10}" log
  log="$(snarkjs zkey beacon "$in" "$out" "$beacon" "$iterations" --name="final beacon" 2>&1)" ||
    { echo "$log" >&2; die "beacon failed"; }
  echo "$log" >&2
  echo "beacon contribution hash: $(echo "$log" | last_hash)"
}

cmd_verify() {
  local stem="$1" ptau="$2" zkey="$3" tmp status=0
  tmp="$(mktemp -d)"
  if [ -z "${ENYGMA:-}" ]; then
    say "constraint system of $stem from this checkout: commit $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  fi
  enygma_from_source export-r1cs --circuit "$stem" --out "$tmp/$stem.r1cs" >&2
  snarkjs zkey verify "$tmp/$stem.r1cs" "$ptau" "$zkey" || status=$?
  rm -rf "$tmp"
  [ "$status" = 0 ] || die "$zkey does not verify against $ptau and this build's $stem constraint system"
}

cmd_export() {
  local zkey="$1" dir="$2"
  mkdir -p "$dir"
  snarkjs zkey export verificationkey "$zkey" "$dir/verification_key.json" >&2
  snarkjs zkey export solidityverifier "$zkey" "$dir/Verifier.sol" >&2
  echo "$dir/verification_key.json $dir/Verifier.sol"
}

cmd_import() {
  local stem="$1" zkey="$2" keys="$3"
  shift 3
  enygma import-zkey --circuit "$stem" --keys-dir "$keys" "$@" "$zkey"
}

cmd_local() {
  local stem="$1" dir="$2" power="${3:-}"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  [ -n "$power" ] || power="$(min_power "$stem")"
  local ptau="$dir/phase1-2^$power-throw-away.ptau"
  [ -f "$ptau" ] || cmd_phase1_local "$power" "$ptau" >/dev/null
  cmd_new "$stem" "$ptau" "$dir" >/dev/null
  {
    cmd_contribute "$dir/${stem}_0000.zkey" "$dir/${stem}_0001.zkey" "first contributor"
    cmd_contribute "$dir/${stem}_0001.zkey" "$dir/${stem}_0002.zkey" "second contributor"
    # A fixed beacon stands for a public random value (a future block hash, a drand round).
    cmd_beacon "$dir/${stem}_0002.zkey" "$dir/${stem}_final.zkey" \
      "$(printf 'enygma local ceremony %s' "$stem" | sha256sum | cut -d' ' -f1)" 10
  } | tee "$dir/contributions.txt"
  cmd_verify "$stem" "$ptau" "$dir/${stem}_final.zkey" >&2
  cmd_export "$dir/${stem}_final.zkey" "$dir/snarkjs" >/dev/null
  cmd_import "$stem" "$dir/${stem}_final.zkey" "$dir/keys" --force
  say "$stem: ceremony files and keys in $dir (THROW-AWAY phase 1)"
}

[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
command="$1"
shift
need() { [ "$1" -ge "$2" ] || die "$command: missing arguments (scripts/ceremony.sh without arguments shows the usage)"; }
case "$command" in
  ptau-check) need $# 1; cmd_ptau_check "$@" ;;
  phase1-local) need $# 2; cmd_phase1_local "$@" ;;
  new) need $# 3; cmd_new "$@" ;;
  contribute) need $# 3; cmd_contribute "$@" ;;
  beacon) need $# 3; cmd_beacon "$@" ;;
  verify) need $# 3; cmd_verify "$@" ;;
  export) need $# 2; cmd_export "$@" ;;
  import) need $# 3; cmd_import "$@" ;;
  local) need $# 2; cmd_local "$@" ;;
  *) die "unknown command $command (scripts/ceremony.sh without arguments shows the usage)" ;;
esac
