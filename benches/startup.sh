#!/usr/bin/env bash
# A new replica's first seconds: how long from its start to /readyz, and how soon after that its
# k = 6 transfer proofs run at their warm speed, with and without the cache directory an earlier
# run filled (--cache-dir: matrices and MSM tables kept on disk).
#
# ROUNDS (2) rounds, each with, in turn (every server hosting all 18 instances, default flags):
#
#   cold      an empty cache directory: matrices derived, transfer-k6's tables built after its
#             second proof (and kept in the directory)
#   restart   the directory the cold server filled: matrices and tables read back
#   none      --cache-dir none (what a replica without a cache does every time)
#
# For each: the time from exec to /readyz 200 (polled every 20 ms), then PROOFS (30) transfer-k6
# proofs one at a time (the same request), each with its latency and its end in seconds after
# ready. Warm speed is the restart's p50 of its last 10 proofs (tables resident); the summary gives
# when the first proof within 1.1x of it ended. Writes OUT (default
# benches/results/<date>-<cpu>-startup/): summary.md, proofs.tsv, each server's log. Env: ROUNDS,
# PROOFS, PORT (3041), ADMIN_PORT (9481), KEYS (keys), OUT, BUILD (1). Talks to 127.0.0.1 only;
# nothing else should run on the machine meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh

ROUNDS=${ROUNDS:-2}
PROOFS=${PROOFS:-30}
PORT=${PORT:-3041}
ADMIN_PORT=${ADMIN_PORT:-9481}
KEYS=${KEYS:-keys}
URL="http://127.0.0.1:$PORT"
ADMIN="http://127.0.0.1:$ADMIN_PORT"
if [ "${BUILD:-1}" = 1 ]; then
  build_load_binaries --release -j 2
fi
BIN=${CARGO_TARGET_DIR:-target}/release
model=$(cpu_model)
OUT=${OUT:-benches/results/$(date -u +%F)-$(cpu_slug "$model")-startup}
mkdir -p "$OUT"
work=$(mktemp -d)
SERVER=
trap '[ -z "$SERVER" ] || kill -TERM "$SERVER" 2>/dev/null || true; rm -rf "$work"' EXIT
"$BIN/enygma" setup --keep-existing --keys-dir "$KEYS" > /dev/null
"$BIN/enygma" gen-request --circuit transfer-k6 --seed 1 > "$work/transfer-k6.json"
PROOF_LOG="$OUT/proofs.tsv"
printf 'round\tserver\tproof\tlatency_ms\tend_after_ready_s\n' > "$PROOF_LOG"
READY_LOG="$work/ready.tsv"
: > "$READY_LOG"

now() { date +%s.%N; }

start_server() { # ROUND NAME FLAGS...
  local round=$1 name=$2 t0
  shift 2
  t0=$(now)
  "$BIN/enygma-server" --bind 127.0.0.1 --port "$PORT" --admin-bind "127.0.0.1:$ADMIN_PORT" \
    --keys-dir "$KEYS" --log-format json "$@" > "$OUT/round$round-$name.log" 2>&1 &
  SERVER=$!
  until curl -sf -o /dev/null "$ADMIN/readyz"; do
    kill -0 "$SERVER" 2>/dev/null || { echo "$name did not start" >&2; exit 1; }
    sleep 0.02
  done
  READY_AT=$(now)
  printf '%s\t%s\t%s\n' "$round" "$name" "$(awk -v a="$t0" -v b="$READY_AT" 'BEGIN {printf "%.2f", b - a}')" >> "$READY_LOG"
}

prove_sequence() { # ROUND NAME
  local i latency
  for i in $(seq "$PROOFS"); do
    latency=$(curl -sf -o /dev/null -w '%{time_total}' -H 'content-type: application/json' \
      --data-binary "@$work/transfer-k6.json" "$URL/generateProofTransfer-6")
    printf '%s\t%s\t%s\t%.1f\t%.2f\n' "$1" "$2" "$i" "$(awk -v t="$latency" 'BEGIN {print 1000 * t}')" \
      "$(awk -v a="$READY_AT" -v b="$(now)" 'BEGIN {print b - a}')" >> "$PROOF_LOG"
  done
}

stop_server() {
  kill -TERM "$SERVER"
  wait "$SERVER" || true
  SERVER=
}

for round in $(seq "$ROUNDS"); do
  cache="$work/cache-$round"
  for name in cold restart none; do
    case $name in
      cold | restart) flags=(--cache-dir "$cache") ;;
      none) flags=(--cache-dir none) ;;
    esac
    start_server "$round" "$name" "${flags[@]}"
    prove_sequence "$round" "$name"
    stop_server
  done
done

# The summary: per round and server, ready time, first proof, p50, and when the first proof at
# warm speed (within 1.1x of the round's restart p50 over its last 10 proofs) ended.
python3 - "$PROOF_LOG" "$READY_LOG" "$model" "$PROOFS" > "$OUT/summary.md" <<'EOF'
import csv, statistics, sys
proofs, ready, model, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = list(csv.DictReader(open(proofs), delimiter="\t"))
ready_s = {(r, s): float(t) for r, s, t in (l.split("\t") for l in open(ready).read().split("\n") if l)}
print(f"# A new replica's first seconds: ready time and k = 6 transfer proofs after ready\n")
print(f"- Machine: {model}; {n} transfer-k6 proofs one at a time after /readyz; every server hosts all 18 instances")
print("- warm = p50 of the restart's last 10 proofs in the same round (tables resident)\n")
print("| round | server | ready after start (s) | first proof (ms) | p50 (ms) | warm (ms) | first proof within 1.1x warm ended (s after ready) |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for (rnd, server), t in ready_s.items():
    mine = [r for r in rows if r["round"] == rnd and r["server"] == server]
    warm_rows = [r for r in rows if r["round"] == rnd and r["server"] == "restart"][-10:]
    warm = statistics.median(float(r["latency_ms"]) for r in warm_rows)
    lat = [float(r["latency_ms"]) for r in mine]
    at_warm = next((float(r["end_after_ready_s"]) for r in mine if float(r["latency_ms"]) <= 1.1 * warm), None)
    print(f"| {rnd} | {server} | {t:.2f} | {lat[0]:.0f} | {statistics.median(lat):.0f} | {warm:.0f} | {'never' if at_warm is None else f'{at_warm:.2f}'} |")
EOF
cat "$OUT/summary.md"
