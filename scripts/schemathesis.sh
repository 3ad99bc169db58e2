#!/usr/bin/env bash
# The OpenAPI document against the live server, called by
# scripts/test.sh after `cargo test`:
#   1. validates the committed crates/enygma-server/openapi.json against the OpenAPI 3.1
#      meta-schema (openapi-spec-validator);
#   2. starts the debug enygma-server on 127.0.0.1 and a free port, hosting a subset of the
#      registry (below), waits until it is ready, and checks that it serves the committed
#      document;
#   3. runs schemathesis against it with a bounded number of examples per operation: no 5xx,
#      every status documented, every body and documented header matching its schema, 405 for
#      undocumented methods, schema-invalid requests refused with 4xx; then stops the server.
#
# Needs python3 (with venv) and PyPI: schemathesis and the validator are installed, pinned, in a
# virtual environment under target/ (reused while the pins match). The proving keys must exist
# (test.sh runs `enygma setup --keep-existing` first).
#
# Hosted subset: every statement at its smallest k (ENYGMA_SCHEMATHESIS_CIRCUITS overrides, as
# key stems). Their operations, the other-k templates and the service routes are tested; the
# other instances' operations are left out, since they only answer 404 "not hosted" (which the
# document describes, and the Rust tests check against it). The hosted ones get the examples
# of the document (valid requests) and so return real proofs, whose 200 bodies are checked
# against the proof schemas; hosting every k would add key loading and proofs without testing
# another code path. Which answers are right where schemathesis cannot know (a schema-valid
# request failing a statement's rule is 422): scripts/schemathesis.toml.
#
# Environment: ENYGMA_SERVER_BIN (default target/debug/enygma-server), ENYGMA_KEYS_DIR
# (default keys), SCHEMATHESIS_MAX_EXAMPLES (default 8 per operation), SCHEMATHESIS_SEED
# (default fixed, for a reproducible CI run), SCHEMATHESIS_TIME_LIMIT (default 170 s for the
# schemathesis run, a hard bound), SCHEMATHESIS_VENV, SCHEMATHESIS_SERVER_LOG (a file to keep
# the server's log in).
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
SPEC_VALIDATOR_VERSION=0.9.0

target="${CARGO_TARGET_DIR:-$PWD/target}"
server_bin="${ENYGMA_SERVER_BIN:-$target/debug/enygma-server}"
keys_dir="${ENYGMA_KEYS_DIR:-keys}"
circuits="${ENYGMA_SCHEMATHESIS_CIRCUITS:-transfer-k2,deposit-k2,withdraw-k2}"
max_examples="${SCHEMATHESIS_MAX_EXAMPLES:-8}"
seed="${SCHEMATHESIS_SEED:-20261203}"
time_limit="${SCHEMATHESIS_TIME_LIMIT:-170}"
venv="${SCHEMATHESIS_VENV:-$target/schemathesis-venv}"
document=crates/enygma-server/openapi.json

command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 1; }
[ -x "$server_bin" ] || { echo "$server_bin not built (cargo build -p enygma-server)" >&2; exit 1; }

started=$(date +%s)
pins="schemathesis==$SCHEMATHESIS_VERSION openapi-spec-validator==$SPEC_VALIDATOR_VERSION"
if [ "$(cat "$venv/pins" 2>/dev/null)" != "$pins" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/pip" install --quiet --disable-pip-version-check $pins
  echo "$pins" >"$venv/pins"
fi

echo "== $document against the OpenAPI 3.1 meta-schema"
"$venv/bin/python" - "$document" <<'EOF'
import json, sys
from openapi_spec_validator import validate
from openapi_spec_validator.validation import OpenAPIV31SpecValidator

with open(sys.argv[1]) as f:
    document = json.load(f)
assert document["openapi"].startswith("3.1."), document["openapi"]
validate(document, cls=OpenAPIV31SpecValidator)
print(f"valid: {len(document['paths'])} paths")
EOF

work=$(mktemp -d)
server_pid=
stop_server() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap stop_server EXIT

echo "== enygma-server --circuits $circuits"
# JSON logs, to read the chosen port from the "listening" line.
# No admin listener: its fixed default port would collide with another server on this host.
# No connection closed for repeated malformed requests: schemathesis sends them on purpose.
RUST_LOG=info "$server_bin" --bind 127.0.0.1 --port 0 --admin-bind none --bad-request-burst 0 \
  --keys-dir "$keys_dir" \
  --circuits "$circuits" --log-format json >"$work/server.log" 2>&1 &
server_pid=$!

addr=
for _ in $(seq 1 600); do
  addr=$(sed -n 's/.*"addr":"\([0-9.:]*\)".*"message":"listening".*/\1/p; s/.*"message":"listening".*"addr":"\([0-9.:]*\)".*/\1/p' "$work/server.log" | head -n1)
  [ -n "$addr" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "the server exited" >&2; exit 1; }
  sleep 0.2
done
[ -n "$addr" ] || { cat "$work/server.log" >&2; echo "the server did not listen" >&2; exit 1; }
base="http://$addr"

# HTTP from the venv's Python (the machine may have no curl): the status of GET $1, the body
# written to $2 if given.
http_get() {
  "$venv/bin/python" - "$@" <<'EOF'
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        status, body = r.status, r.read()
except urllib.error.HTTPError as e:
    status, body = e.code, e.read()
except OSError:
    status, body = 0, b""
if len(sys.argv) > 2:
    open(sys.argv[2], "wb").write(body)
print(status)
EOF
}

ready=
for _ in $(seq 1 600); do
  if [ "$(http_get "$base/readyz")" = 200 ]; then ready=1; break; fi
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "the server exited" >&2; exit 1; }
  sleep 0.5
done
[ -n "$ready" ] || { tail -n 20 "$work/server.log" >&2; echo "the server was not ready in 300 s" >&2; exit 1; }
echo "ready at $base after $(( $(date +%s) - started )) s"

[ "$(http_get "$base/openapi.json" "$work/served.json")" = 200 ] || { echo "GET /openapi.json failed" >&2; exit 1; }
cmp -s "$work/served.json" "$document" || { echo "GET /openapi.json is not $document" >&2; exit 1; }

echo "== schemathesis $SCHEMATHESIS_VERSION: $max_examples examples per operation, seed $seed"
# The operations of the hosted instances, the other-k templates and the service routes; the
# other instances' routes only answer 404 "not hosted" (their conformance is tested in Rust).
hosted=$(echo "$circuits" | tr ',' '|')
operations="^((?!prove-|verify-).*|(prove|verify)-($hosted)|(prove|verify)-.*-other-k)\$"
status=0
timeout --signal=INT --kill-after=10 "$time_limit" \
  "$venv/bin/schemathesis" --config-file scripts/schemathesis.toml \
  run "$document" --url "$base" \
  --include-operation-id-regex "$operations" \
  --checks all \
  --max-examples "$max_examples" --seed "$seed" \
  --generation-database none \
  --workers 1 \
  --request-timeout 60 \
  --no-color \
  --report junit --report-dir "$work/report" \
  || status=$?

# The document's examples must have reached the prover: real proofs, checked against the proof
# schemas (else the 200 path went untested).
proved=$(grep '"status":200' "$work/server.log" | grep -c '"prove_ms"' || true)
echo "answers with a proof: $proved"
if [ "$status" -eq 0 ] && [ "$proved" -eq 0 ]; then
  echo "no request was proved: the examples did not reach the prover" >&2
  status=1
fi
[ -n "${SCHEMATHESIS_SERVER_LOG:-}" ] && cp "$work/server.log" "$SCHEMATHESIS_SERVER_LOG"
stop_server
trap - EXIT
if [ "$status" -eq 124 ]; then
  echo "schemathesis did not finish within $time_limit s" >&2
fi
echo "schemathesis exited $status after $(( $(date +%s) - started )) s in all"
exit "$status"
