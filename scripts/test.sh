#!/usr/bin/env bash
# The project's whole test suite, from a fresh clone: lints (rustfmt, clippy), builds what the
# tests start, creates the development keys if they are missing, runs the Rust tests, then checks
# our proofs with independent verifiers (snarkjs, and the exported Solidity verifier in an EVM),
# then the deployment: Kubernetes manifests, alert rules, and a multi-replica acceptance test.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo >/dev/null || { echo "cargo is required" >&2; exit 1; }
command -v npm >/dev/null || { echo "node and npm are required for verifier-tests/" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is required for scripts/schemathesis.sh" >&2; exit 1; }

# Each step's start and the time since the suite began, so a slow step shows in the log.
step() { echo "==== [$(date -u +%T), ${SECONDS}s] $*" >&2; }

# Lints first: formatting, modules that use each other, and clippy on every target with warnings
# as errors.
step "lints"
cargo fmt --all --check
# benches/results/ keeps summaries, raw output packed (benches/results/README.md): at most 10 MB.
results_bytes=$(git ls-files -z benches/results | xargs -0 stat -c %s | awk '{s += $1} END {print s}')
[ "$results_bytes" -le 10000000 ] || {
    echo "benches/results/ holds $results_bytes bytes, over 10 MB: pack the new run (benches/pack_raw.sh)" >&2
    exit 1
}
python3 scripts/module-cycles.py crates/enygma-server crates/enygma-loadgen crates/enygma-msm
cargo clippy --workspace --all-targets -- -D warnings
# The measurement-only code (enygma-prover's `bench` feature: examples/proof_phases.rs).
cargo clippy -p enygma-prover --all-targets --features bench -- -D warnings

# The integration tests spawn these binaries (debug profile; arkworks is optimised even there).
# Built with the tests in one build: dependencies get the features the tests' dev-dependencies
# add, so `cargo test` below finds every crate built instead of building the tree a second time.
step "debug build of the binaries and tests"
cargo build --workspace --bins --tests
bin="${CARGO_TARGET_DIR:-$PWD/target}/debug"  # absolute: tests run from their crate directories
export ENYGMA_SERVER_BIN="${ENYGMA_SERVER_BIN:-$bin/enygma-server}"

# Proving keys are not committed: create the missing ones (a few seconds) and check the rest.
"$bin/enygma" setup --keep-existing

# The ceremony test's throw-away phase 1 (snarkjs, mostly one core, minutes) runs beside the Rust
# tests, which leave a core idle much of the time.
step "npm packages; throw-away phase 1 in the background"
(cd verifier-tests && npm ci --no-audit --no-fund --loglevel=error)
ceremony_dir="$(mktemp -d)"
phase1=""
trap '[ -z "$phase1" ] || kill "$phase1" 2>/dev/null; rm -rf "$ceremony_dir"' EXIT
bash scripts/ceremony.sh phase1-local 13 "$ceremony_dir/phase1.ptau" >"$ceremony_dir/phase1.log" 2>&1 &
phase1=$!

# Every target with tests (libraries, binaries, integration tests); the examples, which clippy
# has checked above, are not built again, and no crate has documentation tests.
step "Rust tests"
cargo test --workspace --tests

# The README's quick start, its marked blocks run against the debug server (seconds).
step "README quick start"
bash scripts/quickstart.sh

# The OpenAPI document against the OpenAPI 3.1 meta-schema and, with schemathesis (PyPI, pinned,
# in a venv under target/), against the live debug server: no 5xx, every answer as documented.
step "OpenAPI and schemathesis"
bash scripts/schemathesis.sh

step "waiting for the throw-away phase 1"
wait "$phase1" || { cat "$ceremony_dir/phase1.log" >&2; echo "the throw-away phase 1 failed" >&2; exit 1; }
phase1=""
step "snarkjs and EVM verifiers"
SKIP_NPM_CI=1 ENYGMA="$bin/enygma" bash verifier-tests/run.sh
# A two-contributor ceremony for ownership-721 on that phase 1, imported, proved through the server
# with --require-ceremony-keys, verified by snarkjs and snarkjs' Solidity verifier in an EVM.
step "mini ceremony"
PTAU="$ceremony_dir/phase1.ptau" bash verifier-tests/ceremony.sh

# Deployment (deploy/README.md): the Kubernetes overlays render and validate offline and the alert
# rules pass promtool's tests; then 3 replicas behind HAProxy answer a burst with one replica
# killed and one drained. Both install what they need (Debian's haproxy and prometheus, PyPI's
# kubernetes-validate, npm's KEDA models).
step "Kubernetes manifests and alert rules"
bash deploy/kubernetes/validate.sh
step "multi-replica acceptance"
bash deploy/local/acceptance.sh
step "all passed"
