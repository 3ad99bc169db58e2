#!/usr/bin/env bash
# Independent verification of enygma's verifier artifacts:
#   1. installs the pinned npm packages (npm ci, from package-lock.json),
#   2. writes fixtures: real proofs with the development keys in keys/ (the reference's k=6
#      sample request, and one generated request for every instance of the registry), each with
#      the key's snarkjs export and Solidity verifier,
#   3. runs the node tests: snarkjs groth16 verify, and the Solidity verifier compiled with
#      solc-js and executed in @ethereumjs/evm (gas written to $OUT_DIR/gas.json); the real
#      fixtures' key and verifier must also be the files committed in keys/; and snarkjs'
#      own prover on a request's exported witness and the development key exported as a zkey.
# Exits non-zero if anything fails.
#
# usage: verifier-tests/run.sh [FIXTURES_DIR]
#   FIXTURES_DIR   where fixtures are written and read (default: verifier-tests/fixtures, which
#                  is emptied first; a directory you name is not emptied).
# environment:
#   MAKE_FIXTURES  command that writes fixtures into the directory given as its last argument
#                  (default: $ENYGMA, else cargo run -q -p enygma-cli --, verifier-fixtures
#                  --keys-dir keys --sample verifier-tests/samples/transfer-k6.json)
#   ENYGMA         the CLI binary (default: built by cargo from this checkout)
#   SKIP_NPM_CI=1  use the installed npm packages (the caller ran `npm ci` in verifier-tests/)
#   WITH_TOY=1     also write the toy-circuit fixtures (enygma-verifier's make-fixtures example)
#   SKIP_FIXTURES=1  do not generate, test what is already in FIXTURES_DIR
#   KEYS_DIR       the keys the fixtures use and the committed exports are compared with
#                  (default: keys/ at the repository root)
#   ENYGMA         the CLI that exports witnesses and zkeys (default: the debug build, built
#                  if missing)
#   OUT_DIR        reports (default: verifier-tests/out)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
default_fixtures="$here/fixtures"
fixtures="${1:-$default_fixtures}"
out="${OUT_DIR:-$here/out}"
keys="$(cd "${KEYS_DIR:-$root/keys}" && pwd)"
make_toy_fixtures="cargo run -q -p enygma-verifier --example make-fixtures --"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "verifier-tests: $tool is not installed (need node >= 20)" >&2; exit 1; }
done
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
  echo "verifier-tests: node $(node --version) is too old, need >= 20" >&2
  exit 1
fi

# SKIP_NPM_CI=1: the caller has just run `npm ci` here (scripts/test.sh does, for its phase 1).
if [ "${SKIP_NPM_CI:-0}" = 1 ] && [ -d "$here/node_modules" ]; then
  echo "== npm packages installed by the caller (node $(node --version))"
else
  echo "== npm ci (node $(node --version), npm $(npm --version))"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi

# The CLI: ENYGMA when given (scripts/test.sh gives the one its workspace build made; `cargo run
# -p enygma-cli` would build it again for that package's own feature set, minutes), else built
# from this checkout by `cargo run`.
fixtures_cli="cargo run -q -p enygma-cli --"
[ -n "${ENYGMA:-}" ] && fixtures_cli="$ENYGMA"
make_fixtures="${MAKE_FIXTURES:-$fixtures_cli verifier-fixtures --keys-dir $keys --sample $here/samples/transfer-k6.json}"

if [ "${SKIP_FIXTURES:-0}" != 1 ]; then
  if [ "$fixtures" = "$default_fixtures" ]; then rm -rf "$fixtures"; fi
  mkdir -p "$fixtures"
  fixtures="$(cd "$fixtures" && pwd)"
  echo "== fixtures: $make_fixtures $fixtures"
  # shellcheck disable=SC2086 # MAKE_FIXTURES is a command line
  (cd "$root" && $make_fixtures "$fixtures")
  if [ "${WITH_TOY:-0}" = 1 ]; then
    echo "== toy fixtures: $make_toy_fixtures $fixtures"
    # shellcheck disable=SC2086
    (cd "$root" && $make_toy_fixtures "$fixtures")
  fi
fi

export ENYGMA="${ENYGMA:-${CARGO_TARGET_DIR:-$root/target}/debug/enygma}"
if [ ! -x "$ENYGMA" ]; then
  echo "== building $ENYGMA"
  (cd "$root" && cargo build -q -p enygma-cli)
fi

mkdir -p "$out"
out="$(cd "$out" && pwd)"
echo "== node tests (fixtures: $fixtures)"
status=0
(cd "$here" && FIXTURES_DIR="$fixtures" OUT_DIR="$out" KEYS_DIR="$keys" node --test \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$out/results.tap" \
  test/snarkjs.test.js test/solidity.test.js test/wtns-zkey.test.js) || status=$?

pass="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$out/results.tap" | tail -1)"
fail="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$out/results.tap" | tail -1)"
if [ -f "$out/gas.json" ]; then
  echo
  echo "== gas ($out/gas.json)"
  (cd "$here" && node scripts/gas-table.js "$out/gas.json")
fi
echo
if [ -z "$pass" ] || [ "$pass" = 0 ]; then
  echo "verifier-tests: no test ran" >&2
  status=1
fi
echo "verifier-tests: ${pass:-0} passed, ${fail:-0} failed"
exit "$status"
