#!/usr/bin/env bash
# Runs the README's quick start, so that it cannot rot. Called by scripts/test.sh after the Rust
# tests; alone: `bash scripts/quickstart.sh` (builds the debug server if it is missing).
#
# README.md marks its blocks with an HTML comment on the line before the ```sh fence:
#   <!-- quickstart: server -->  the command that starts the server;
#   <!-- quickstart -->          the client's commands, run here in order.
# Two things differ from a reader's run, and only these:
#   - the server is the debug binary (CI builds only the debug profile; a release build would
#     add about ten minutes), started with the README's flags, if it gives any after `--`, plus
#     `--bind 127.0.0.1 --port 0 --admin-bind none --log-format json`, so that it listens on a
#     free loopback port beside other tests and tells us which;
#   - the client blocks run verbatim except that `http://localhost:3003` becomes that address.
# They run with `set -euo pipefail` in a scratch directory holding a link to the repository's
# examples/, and the last one must print the verify route's `{"valid":true}`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"

bin="${ENYGMA_SERVER_BIN:-${CARGO_TARGET_DIR:-$repo/target}/debug/enygma-server}"
[ -x "$bin" ] || cargo build --bin enygma-server

# The fenced block after each line equal to $1, one block per NUL-terminated record.
blocks() {
  awk -v marker="$1" '
    $0 == marker { want = 1; next }
    want && /^```sh$/ { inside = 1; want = 0; block = ""; next }
    inside && /^```$/ { printf "%s%c", block, 0; inside = 0; next }
    inside { block = block $0 "\n" }
  ' README.md
}

mapfile -d '' server_blocks < <(blocks '<!-- quickstart: server -->')
mapfile -d '' client_blocks < <(blocks '<!-- quickstart -->')
[ "${#server_blocks[@]}" -eq 1 ] || { echo "README.md: expected one quickstart server block, found ${#server_blocks[@]}" >&2; exit 1; }
[ "${#client_blocks[@]}" -ge 1 ] || { echo "README.md: no quickstart client block" >&2; exit 1; }

server_cmd="$(printf '%s' "${server_blocks[0]}" | sed -e 's/[[:space:]]*$//')"
run_prefix='cargo run --release --bin enygma-server'
case "$server_cmd" in
  "$run_prefix") flags="" ;;
  "$run_prefix -- "*) flags="${server_cmd#"$run_prefix -- "}" ;;
  *) echo "README.md: the quickstart server block is not \`$run_prefix [-- FLAGS]\`: $server_cmd" >&2; exit 1 ;;
esac

scratch="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -z "$server_pid" ] || { kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
  rm -rf "$scratch"
}
trap cleanup EXIT

# The README's server runs from the repository's root (its keys are in ./keys).
# shellcheck disable=SC2086 # the README's flags, split as a shell would
"$bin" $flags --bind 127.0.0.1 --port 0 --admin-bind none --log-format json \
  >"$scratch/server.log" 2>&1 &
server_pid=$!

addr=""
for _ in $(seq 600); do
  addr="$(sed -n 's/.*"message":"listening".*"addr":"\([0-9.:]*\)".*/\1/p; s/.*"addr":"\([0-9.:]*\)".*"message":"listening".*/\1/p' "$scratch/server.log" | head -n 1)"
  [ -n "$addr" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$scratch/server.log" >&2; echo "the server exited before listening" >&2; exit 1; }
  sleep 0.1
done
[ -n "$addr" ] || { tail -n 20 "$scratch/server.log" >&2; echo "the server did not log its address within 60 s" >&2; exit 1; }
echo "quickstart: server on $addr ($bin${flags:+ $flags})"

ln -s "$repo/examples" "$scratch/examples"
output=""
for i in "${!client_blocks[@]}"; do
  block="${client_blocks[$i]//http:\/\/localhost:3003/http://$addr}"
  echo "quickstart: block $((i + 1)) of ${#client_blocks[@]}"
  # Bounded: the README's readiness loop waits for the keys (created on a first start).
  if ! output="$(cd "$scratch" && timeout 900 bash -euo pipefail -c "$block" 2>&1)"; then
    printf '%s\n' "$output" >&2
    tail -n 20 "$scratch/server.log" >&2
    echo "quickstart: block $((i + 1)) failed:" >&2
    printf '%s' "$block" >&2
    exit 1
  fi
  [ -z "$output" ] || printf '%s\n' "$output"
done

case "$output" in
  *'{"valid":true}'*) echo "quickstart: the proof verified" ;;
  *) echo "quickstart: the last block did not print {\"valid\":true}" >&2; exit 1 ;;
esac
