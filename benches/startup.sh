#!/usr/bin/env bash
# A new replica's first seconds: how long from its start to /readyz, and how soon after that its
# k = 6 transfer proofs run at their warm speed, with and without the cache directory an earlier
# run filled (--cache-dir: matrices and MSM tables kept on disk).
#
# ROUNDS (2) rounds, each with, in turn (every server hosting all 18 instances, default flags):
#
#   cold      an empty cache directory: matrices derived, transfer-k6's tables built after its
#             second proof (in the background, at low priority beside the proofs) and kept in
#             the directory; it proves until they are resident (at most 600 s), so that the
#             restart finds them
#   restart   the directory the cold server filled: matrices and tables read back
#   none      --cache-dir none (what a replica without a cache does every time)
#
# For each: the time from exec to /readyz 200 (polled every 20 ms), then PROOFS (30) transfer-k6
# proofs one at a time (the same request), each with its latency, its end in seconds after ready
# and whether transfer-k6's tables were resident when it ended. Warm speed is the p50 of the
# round's proofs with tables resident; the summary gives when the first proof within 1.1x of it
# ended, and when the tables became resident. Writes OUT (default
# benches/results/<date>-<cpu>-startup/): summary.md, proofs.tsv, the servers' logs packed in
# raw.tar.xz. Env: ROUNDS,
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
printf 'round\tserver\tproof\tlatency_ms\tend_after_ready_s\ttables\n' > "$PROOF_LOG"
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

# Whether transfer-k6's tables are resident (1) or not (0).
tables_resident() {
  curl -sf "$ADMIN/metrics" | awk '$1 == "enygma_table_bytes{statement=\"transfer\",k=\"6\"}" {print ($2 > 0) ? 1 : 0}'
}

# prove_sequence ROUND NAME [UNTIL_TABLES]: PROOFS proofs, then with UNTIL_TABLES more until the
# tables are resident (at most 600 s after ready).
prove_sequence() {
  local i=0 latency resident=0
  while [ "$i" -lt "$PROOFS" ] || { [ "${3:-}" = until-tables ] && [ "$resident" = 0 ]; }; do
    i=$((i + 1))
    latency=$(curl -sf -o /dev/null -w '%{time_total}' -H 'content-type: application/json' \
      --data-binary "@$work/transfer-k6.json" "$URL/generateProofTransfer-6")
    resident=$(tables_resident)
    printf '%s\t%s\t%s\t%.1f\t%.2f\t%s\n' "$1" "$2" "$i" "$(awk -v t="$latency" 'BEGIN {print 1000 * t}')" \
      "$(awk -v a="$READY_AT" -v b="$(now)" 'BEGIN {print b - a}')" "$resident" >> "$PROOF_LOG"
    if awk -v a="$READY_AT" -v b="$(now)" 'BEGIN {exit !(b - a > 600)}'; then
      echo "$2: no tables within 600 s" >&2
      break
    fi
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
    if [ "$name" = cold ]; then
      prove_sequence "$round" "$name" until-tables
    else
      prove_sequence "$round" "$name"
    fi
    stop_server
  done
done

# The summary: per round and server, ready time, first proof, p50, when the tables became
# resident and when the first proof at warm speed (within 1.1x of the p50 of the round's proofs
# with tables) ended.
python3 - "$PROOF_LOG" "$READY_LOG" "$model" "$PROOFS" > "$OUT/summary.md" <<'EOF'
import csv, statistics, sys
proofs, ready, model, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = list(csv.DictReader(open(proofs), delimiter="\t"))
ready_s = {(r, s): float(t) for r, s, t in (l.split("\t") for l in open(ready).read().split("\n") if l)}
print(f"# A new replica's first seconds: ready time and k = 6 transfer proofs after ready\n")
print(f"- Machine: {model}; {n} transfer-k6 proofs one at a time after /readyz; every server hosts all 18 instances")
print("- warm = p50 of the round's proofs that ended with transfer-k6's tables resident; p50 without = of those that ended without\n")
print("| round | server | ready after start (s) | proofs | first proof (ms) | p50 without tables (ms) | tables resident (s after ready) | warm (ms) | first proof within 1.1x warm ended (s after ready) |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for (rnd, server), t in ready_s.items():
    mine = [r for r in rows if r["round"] == rnd and r["server"] == server]
    hits = [float(r["latency_ms"]) for r in rows if r["round"] == rnd and r["tables"] == "1"]
    warm = statistics.median(hits) if hits else None
    lat = [float(r["latency_ms"]) for r in mine]
    without = [float(r["latency_ms"]) for r in mine if r["tables"] == "0"]
    resident = next((float(r["end_after_ready_s"]) for r in mine if r["tables"] == "1"), None)
    at_warm = None if warm is None else next((float(r["end_after_ready_s"]) for r in mine if float(r["latency_ms"]) <= 1.1 * warm), None)
    fmt = lambda v, f: "never" if v is None else f.format(v)
    print(f"| {rnd} | {server} | {t:.2f} | {len(lat)} | {lat[0]:.0f} | {fmt(statistics.median(without) if without else None, '{:.0f}')} | {fmt(resident, '{:.2f}')} | {fmt(warm, '{:.0f}')} | {fmt(at_warm, '{:.2f}')} |")
EOF
# The servers' logs: raw output, packed (benches/results/README.md, "Raw logs").
(cd "$OUT" && tar -cJf raw.tar.xz round*.log && rm round*.log)
cat "$OUT/summary.md"
