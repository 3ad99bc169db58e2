#!/usr/bin/env bash
# A whole ceremony on the smallest instance, ownership-721 (domain 2^13), end to end with the
# ecosystem's tools: a throw-away local phase 1, two contributions and a beacon
# (scripts/ceremony.sh), the zkey imported as our keys, a proof made by the real server started
# with --require-ceremony-keys, then verified by our verify route, by `enygma verify`, by snarkjs
# against the ceremony's own verification_key.json and by snarkjs' Solidity verifier in an EVM
# (test/ceremony.test.js). Also: the zkey refused for another instance, truncated and with one
# bit flipped.
#
# usage: verifier-tests/ceremony.sh [WORK_DIR]   (default: a temporary directory, removed after)
# environment:
#   ENYGMA, ENYGMA_SERVER   the CLI and server binaries (default: target/debug/*)
#   PTAU                    a prepared phase 1 of at least 2^13 to use instead of making one
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
stem=ownership-721
export ENYGMA="${ENYGMA:-$root/target/debug/enygma}"
server_bin="${ENYGMA_SERVER:-$root/target/debug/enygma-server}"
work="${1:-}"
keep_work=1
if [ -z "$work" ]; then
  work="$(mktemp -d)"
  keep_work=0
fi
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if [ "$keep_work" = 0 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
mkdir -p "$work"
work="$(cd "$work" && pwd)"
fail() { echo "ceremony test: $*" >&2; exit 1; }

if [ -n "${PTAU:-}" ]; then
  cp "$PTAU" "$work/phase1-2^13-throw-away.ptau"
fi
echo "== ceremony for $stem in $work"
bash "$root/scripts/ceremony.sh" local "$stem" "$work" 13 2>"$work/ceremony.log" ||
  { tail -40 "$work/ceremony.log" >&2; fail "the ceremony failed"; }
final_hash="$(sed -n 's/^beacon contribution hash: //p' "$work/contributions.txt")"
[ "${#final_hash}" = 128 ] || fail "no beacon hash in contributions.txt"

echo "== refusals: another instance, truncated, one bit flipped"
refused() {
  local what="$1" expect="$2"
  shift 2
  local out
  if out="$("$ENYGMA" import-zkey --keys-dir "$work/refused" "$@" 2>&1)"; then
    fail "$what: imported"
  fi
  grep -q "$expect" <<<"$out" || fail "$what: the message does not say '$expect': $out"
  [ ! -e "$work/refused" ] || [ -z "$(ls -A "$work/refused")" ] || fail "$what: keys were written"
  echo "refused ($what): $(tail -1 <<<"$out")"
}
zkey="$work/${stem}_final.zkey"
refused "a zkey of ownership-721 for transfer-k2" "transfer-k2" --circuit transfer-k2 "$zkey"
size="$(stat -c %s "$zkey")"
head -c $((size - 100)) "$zkey" >"$work/truncated.zkey"
refused "truncated" "ownership-721" --circuit "$stem" "$work/truncated.zkey"
cp "$zkey" "$work/flipped.zkey"
# One bit in the middle of the file: a point's coordinate (or a coefficient) of the key.
offset=$((size / 2))
byte="$(od -An -tu1 -j "$offset" -N1 "$zkey" | tr -d ' ')"
printf "$(printf '\\%03o' $((byte ^ 4)))" | dd of="$work/flipped.zkey" bs=1 seek="$offset" conv=notrunc status=none
refused "one bit flipped" "ownership-721" --circuit "$stem" "$work/flipped.zkey"

echo "== the server with the ceremony keys (--require-ceremony-keys)"
# The admin listener on a free port: its /readyz lists the keys in use (the API port's answers
# its status alone).
"$server_bin" --bind 127.0.0.1 --port 0 --admin-bind 127.0.0.1:0 --keys-dir "$work/keys" \
  --circuits "$stem" --require-ceremony-keys --log-format json >"$work/server.log" 2>&1 &
server=$!
port=""
admin=""
for _ in $(seq 1 600); do
  port="$(sed -n 's/.*"addr":"127\.0\.0\.1:\([0-9]*\)".*"listening".*/\1/p; s/.*"message":"listening".*"addr":"127\.0\.0\.1:\([0-9]*\)".*/\1/p' "$work/server.log" | head -1)"
  admin="$(sed -n 's/.*"message":"admin listening[^"]*".*"addr":"127\.0\.0\.1:\([0-9]*\)".*/\1/p' "$work/server.log" | head -1)"
  if [ -n "$port" ] && [ -n "$admin" ] && curl -sf "http://127.0.0.1:$admin/readyz" -o "$work/readyz.json"; then break; fi
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; fail "the server exited"; }
  sleep 0.1
done
[ -s "$work/readyz.json" ] || { cat "$work/server.log" >&2; fail "the server did not get ready"; }
node -e '
  const [file, stem, hash] = process.argv.slice(1);
  const r = JSON.parse(require("fs").readFileSync(file, "utf8"));
  const k = r.keys[stem];
  const ok = r.status === "ready" && k.reduction === "circom" && k.origin.kind === "ceremony"
    && k.origin.contributions === 3 && k.origin.final_hash === hash;
  if (!ok) { console.error(`unexpected /readyz: ${JSON.stringify(r)}`); process.exit(1); }
  console.log(`/readyz: ${stem} ceremony keys, 3 contributions, final hash ${hash.slice(0, 16)}…`);
' "$work/readyz.json" "$stem" "$final_hash"
pk_sha256=$(sha256sum "$work/keys/$stem.pk" | cut -d' ' -f1)
curl -sf "http://127.0.0.1:$port/metrics" | grep -F "enygma_key_info{statement=\"$stem\",k=\"none\",origin=\"ceremony\",reduction=\"circom\",sha256=\"$pk_sha256\"} 1" ||
  fail "no enygma_key_info series for the ceremony key"

"$ENYGMA" gen-request --circuit "$stem" --seed 7 >"$work/request.json"
status="$(curl -s -o "$work/response.json" -w '%{http_code}' --max-time 120 \
  -H 'Content-Type: application/json' --data-binary @"$work/request.json" "http://127.0.0.1:$port/$stem")"
[ "$status" = 200 ] || fail "/$stem answered $status: $(cat "$work/response.json")"
verdict="$(curl -s --max-time 60 -H 'Content-Type: application/json' \
  --data-binary @"$work/response.json" "http://127.0.0.1:$port/verify-$stem")"
[ "$verdict" = '{"valid":true}' ] || fail "/verify-$stem answered $verdict"
echo "/verify-$stem: $verdict"
"$ENYGMA" verify --keys-dir "$work/keys" --circuit "$stem" "$work/response.json"
kill "$server"
wait "$server" || true
server=""

echo "== snarkjs and the EVM (test/ceremony.test.js)"
(cd "$here" && CEREMONY_DIR="$work" node --test --test-reporter=spec test/ceremony.test.js)
