#!/usr/bin/env bash
# Precomputed MSM tables that follow the traffic, against tables built at start and against
# none. Every server hosts all 18 statement instances with the capped defaults; ROUNDS (2)
# rounds, each starting, in turn:
#
#   default     no flag: no tables at start; transfer-k6's are built in the background after
#               its second proof (within the default --table-memory)
#   precompute  --precompute transfer-k6: its tables built before /readyz
#   off         --table-memory 0: never any tables (the default server's proofs before its
#               tables are built, without a build competing for the CPU)
#
# For each: RSS once ready and idle for IDLE seconds (10); for `default`, the warm-up: k = 6
# transfer proofs one at a time until its tables are built (how many, how long, their p50), then
# RSS; then `enygma-loadgen run` at 1 in flight for DURATION (30s) after 3 s of warm-up, and RSS.
# Then one eviction run: a server with --table-memory EVICT_BUDGET (150MiB) builds transfer-k6's
# tables (143.5 MiB), then ownership-721's (29.9 MiB), which evicts them: RSS at each step shows
# whether the evicted tables' memory goes back to the kernel.
#
# The servers keep no cache (`--cache-dir none`): these runs measure builds, which tables kept by
# an earlier run would skip (benches/startup.sh measures that).
# Nothing else should run on the machine meanwhile (the script takes no lock itself).
# Writes OUT (default benches/results/<date>-<cpu>-tables-follow-traffic/): summary.tsv (one line
# per server and step), one directory per loadgen run (report.json, report.md, requests.csv),
# each server's metrics after its run and its log. Env: ROUNDS, IDLE, DURATION, EVICT_BUDGET,
# PORT (3031), ADMIN_PORT (9471), KEYS (keys), OUT, BUILD (1). Talks to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh

ROUNDS=${ROUNDS:-2}
IDLE=${IDLE:-10}
DURATION=${DURATION:-30s}
EVICT_BUDGET=${EVICT_BUDGET:-150MiB}
PORT=${PORT:-3031}
ADMIN_PORT=${ADMIN_PORT:-9471}
KEYS=${KEYS:-keys}
URL="http://127.0.0.1:$PORT"
ADMIN="http://127.0.0.1:$ADMIN_PORT"
if [ "${BUILD:-1}" = 1 ]; then
  build_load_binaries --release -j 2
fi
BIN=${CARGO_TARGET_DIR:-target}/release
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //; s/([^)]*)//g; s/ \+/ /g' \
  | awk '{print tolower($1"-"$2)}')
OUT=${OUT:-benches/results/$(date -u +%F)-$cpu-tables-follow-traffic}
mkdir -p "$OUT"
REQ="$OUT/requests"
mkdir -p "$REQ"
"$BIN/enygma" gen-request --circuit transfer-k6 --seed 1 --count 4 --out "$REQ" > /dev/null
"$BIN/enygma" gen-request --circuit ownership-721 --seed 1 > "$OUT/ownership-721.json"
SUMMARY="$OUT/summary.tsv"
printf 'round\tserver\tstep\trss_mb\tproofs\tseconds\tp50_ms\tnote\n' > "$SUMMARY"

rss_mb() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
metric() { curl -sf "$ADMIN/metrics" | awk -v s="$1" '$1 == s {print $2}'; }
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$SUMMARY"; }

start_server() { # NAME FLAGS...
  local name=$1; shift
  "$BIN/enygma-server" --bind 127.0.0.1 --port "$PORT" --admin-bind "127.0.0.1:$ADMIN_PORT" \
    --keys-dir "$KEYS" --log-format json --cache-dir none "$@" > "$OUT/$name.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1200); do
    curl -sf "$ADMIN/readyz" > /dev/null && return 0
    kill -0 "$SERVER" 2>/dev/null || { echo "$name did not start" >&2; exit 1; }
    sleep 0.5
  done
  echo "$name never ready" >&2; exit 1
}
stop_server() {
  kill -TERM "$SERVER"; wait "$SERVER" || true
  SERVER=
}
SERVER=
# A failed step leaves no server behind.
trap '[ -z "$SERVER" ] || kill -TERM "$SERVER" 2>/dev/null || true' EXIT

# Proves BODY on ROUTE one at a time until SERIES reaches 1 (at most 600 s); prints
# "proofs seconds p50_ms".
prove_until() { # ROUTE BODY SERIES
  local route=$1 body=$2 series=$3 t0 times=() n=0
  t0=$(date +%s.%N)
  while [ "$(metric "$series")" != 1 ]; do
    times+=("$(curl -sf -o /dev/null -w '%{time_total}' -H 'content-type: application/json' \
      --data-binary "@$body" "$URL$route")")
    n=$((n + 1))
    if awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN {exit !(now - t0 > 600)}'; then
      echo "no build within 600 s" >&2; exit 1
    fi
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v n="$n" -v t0="$t0" -v now="$(date +%s.%N)" \
    '{a[NR] = $1} END {printf "%d %.1f %.1f\n", n, now - t0, 1000 * a[int((NR + 1) / 2)]}'
}

load_run() { # ROUND NAME
  local dir="$OUT/round$1-$2"
  "$BIN/enygma-loadgen" run --url "$URL" --endpoint transfer-k6 --requests "$REQ" --levels 1 \
    --duration "$DURATION" --warmup 3s --prime 0 --server-pid "$SERVER" --quiet --out "$dir" \
    --label "$2, round $1" > /dev/null
  curl -sf "$ADMIN/metrics" > "$dir/metrics.prom"
  python3 -c "import json,sys; l=json.load(open(sys.argv[1]))['levels'][0]; print(l['latency_ms']['p50'], l['completed'])" \
    "$dir/report.json"
}

k6='statement="transfer",k="6"'
for round in $(seq "$ROUNDS"); do
  for server in default precompute off; do
    case $server in
      default) flags=() ;;
      precompute) flags=(--precompute transfer-k6) ;;
      off) flags=(--table-memory 0) ;;
    esac
    start_server "round$round-$server" "${flags[@]}"
    sleep "$IDLE"
    row "$round" "$server" idle "$(rss_mb "$SERVER")" "" "" "" \
      "budget $(metric enygma_table_memory_budget_bytes) B"
    if [ "$server" = default ]; then
      read -r n secs p50 < <(prove_until /generateProofTransfer-6 "$REQ/transfer-k6-0.json" \
        "enygma_table_builds_finished_total{$k6,outcome=\"built\"}")
      row "$round" "$server" warm-up "$(rss_mb "$SERVER")" "$n" "$secs" "$p50" \
        "until transfer-k6's tables were built; $(metric "enygma_table_bytes{$k6}") B of tables"
    fi
    read -r p50 completed < <(load_run "$round" "$server")
    row "$round" "$server" "1 in flight" "$(rss_mb "$SERVER")" "$completed" "${DURATION%s}" "$p50" \
      "hits $(metric "enygma_table_proofs_total{$k6,tables=\"hit\"}"), misses $(metric "enygma_table_proofs_total{$k6,tables=\"miss\"}")"
    stop_server
  done
done

# Eviction: transfer-k6's tables, then ownership-721's in their place.
start_server evict --table-memory "$EVICT_BUDGET"
sleep "$IDLE"
row evict "--table-memory $EVICT_BUDGET" idle "$(rss_mb "$SERVER")" "" "" "" ""
read -r n secs p50 < <(prove_until /generateProofTransfer-6 "$REQ/transfer-k6-0.json" \
  "enygma_table_builds_finished_total{$k6,outcome=\"built\"}")
sleep 2
row evict "--table-memory $EVICT_BUDGET" "transfer-k6 built" "$(rss_mb "$SERVER")" "$n" "$secs" "$p50" \
  "$(metric "enygma_table_bytes{$k6}") B of tables"
owner='statement="ownership-721",k="none"'
read -r n secs p50 < <(prove_until /ownership-721 "$OUT/ownership-721.json" \
  "enygma_table_builds_finished_total{$owner,outcome=\"built\"}")
sleep 2
row evict "--table-memory $EVICT_BUDGET" "ownership-721 built, transfer-k6 evicted" \
  "$(rss_mb "$SERVER")" "$n" "$secs" "$p50" \
  "evictions $(metric "enygma_table_evictions_total{$k6}"); $(metric "enygma_table_bytes{$k6}") + $(metric "enygma_table_bytes{$owner}") B of tables"
curl -sf "$ADMIN/metrics" > "$OUT/evict-metrics.prom"
stop_server
rm -r "$REQ"
column -t -s $'\t' "$SUMMARY"
