#!/usr/bin/env bash
# The reference's own stress test against enygma-server with its default flags: N identical
# k=6 transfer requests (the reference's sample) sent at once, one connection each. Prints
# the status counts, the wall time, the server's resident memory before, during (sampled every
# 50 ms) and at its peak, and the admission metrics afterwards, as Markdown.
#
#   cargo build --release -p enygma-server
#   benches/stress_100.sh > benches/results/<date>-stress-100.md
#
# Env: SERVER (default target/release/enygma-server), KEYS (default keys; missing keys are
# created at start), SAMPLE (default ../shared/reference/requests/transfer-k6.json beside the
# repository), N (default 100), PORT (default 3013), BUSY_CPU (unset; a CPU number: a busy loop
# pinned to that CPU runs from before the server starts to the end of the burst, "another
# process using one core"). Only --bind 127.0.0.1 and --port are given: every capacity flag
# keeps its default. Talks to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER=${SERVER:-target/release/enygma-server}
KEYS=${KEYS:-keys}
SAMPLE=${SAMPLE:-../shared/reference/requests/transfer-k6.json}
N=${N:-100}
PORT=${PORT:-3013}
URL="http://127.0.0.1:$PORT"
work=$(mktemp -d)
pid=""
busy=""
trap 'kill "$pid" $busy 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
if [ -n "${BUSY_CPU:-}" ]; then
  taskset -c "$BUSY_CPU" sh -c 'while :; do :; done' &
  busy=$!
fi

[ -f "$SAMPLE" ] || { echo "no sample at $SAMPLE (set SAMPLE)" >&2; exit 1; }
"$SERVER" --bind 127.0.0.1 --port "$PORT" --keys-dir "$KEYS" --log-format json \
  >"$work/server.log" 2>&1 &
pid=$!

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }
for _ in $(seq 1 3000); do
  curl -fs "$URL/readyz" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
curl -fs "$URL/readyz" >/dev/null || { echo "server not ready" >&2; exit 1; }
rss_ready=$(rss_kb)
estimate_ready=$(curl -fs "$URL/metrics" | awk '$1 == "enygma_service_time_estimate_seconds{queue=\"prove\"}" {print $2}')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# Sample the resident memory during the burst.
( while kill -0 "$pid" 2>/dev/null; do rss_kb; sleep 0.05; done ) >"$work/rss" 2>/dev/null &
sampler=$!

start=$(date +%s.%N)
seq "$N" | xargs -P "$N" -I{} curl -s -o /dev/null --max-time 600 \
  -w '%{http_code} %{time_total}\n' -X POST -H 'Content-Type: application/json' \
  --data-binary @"$SAMPLE" "$URL/generateProofTransfer-6" >"$work/results"
end=$(date +%s.%N)
kill "$sampler" 2>/dev/null || true
[ -z "$busy" ] || { kill "$busy"; busy=""; }
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
metrics=$(curl -fs "$URL/metrics")
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
peak_burst=$(sort -n "$work/rss" | tail -1)

metric() { awk -v s="$1" '$1 == s {print $2}' <<<"$metrics"; }
mb() { awk -v kb="$1" 'BEGIN {printf "%.0f", kb / 1024}'; }

echo "# Stress test: $N concurrent k=6 transfers against enygma-server defaults"
echo
echo "- Date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "- Machine: $(lscpu | awk -F: '/^Model name/ {gsub(/^ +/, "", $2); print $2}'), $(nproc) CPUs, $(free -m | awk '/^Mem:/ {print $2}') MB RAM"
echo "- Load average (1, 5, 15 min) before the burst: $load_before; after: $load_after"
echo "- Server: \`$SERVER --bind 127.0.0.1 --port $PORT --keys-dir $KEYS\` (every capacity flag at its default)"
echo "- Request: \`$(basename "$SAMPLE")\` sent $N times at once (\`xargs -P $N curl\`, one connection each)"
if [ -n "${BUSY_CPU:-}" ]; then
  echo "- Another process: a busy loop pinned to CPU $BUSY_CPU from before the start to the end of the burst"
fi
echo "- Service-time estimate when ready: ${estimate_ready:-none} s (measured at start unless --expected-service-time)"
echo
echo "| status | count |"
echo "|---|---:|"
awk '{print $1}' "$work/results" | sort | uniq -c | awk '{printf "| %s | %s |\n", $2, $1}'
echo
wall=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
sort -n -k2 "$work/results" | awk -v wall="$wall" '
  { t[NR] = $2; if ($1 == 200) ok++ }
  END {
    printf "- Wall time for all %d answers: %s s (%d proofs answered 200: %.2f proofs/s)\n", NR, wall, ok, ok / wall
    printf "- Latency per request: min %.2f s, median %.2f s, max %.2f s\n", t[1], t[int((NR + 1) / 2)], t[NR]
  }'
echo "- Resident memory: $(mb "$rss_ready") MB when ready, peak $(mb "$peak_burst") MB during the burst (sampled every 50 ms), VmHWM $(mb "$hwm") MB (whole run, key loading included)"
echo "- Admission: max in flight $(metric enygma_max_inflight'{queue="prove"}'), queue capacity $(metric enygma_queue_capacity'{queue="prove"}'), peak proofs in flight $(metric enygma_proofs_in_flight_peak), shed $(metric enygma_shed_total'{queue="prove"}'), queue timeouts $(metric enygma_queue_timeouts_total'{queue="prove"}'), service-time estimate afterwards $(metric enygma_service_time_estimate_seconds'{queue="prove"}') s"
echo
echo '```'
grep '^enygma_queue_wait_seconds_bucket{queue="prove"' <<<"$metrics"
grep -E '^enygma_(prove_seconds_(sum|count)|witness_seconds_sum)\{statement="transfer",k="6"\}' <<<"$metrics"
echo '```'
