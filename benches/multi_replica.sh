#!/usr/bin/env bash
# The longer version of deploy/local/acceptance.sh: REPLICAS (3) enygma-server replicas behind
# HAProxy (deploy/local/), measured in two phases, with Prometheus scraping them.
#
# 1. Closed-loop load through the balancer (`enygma-loadgen run`, levels LEVELS of DURATION
#    after WARMUP): throughput, p50/p99 per level; which replica answered each request (the
#    balancer's log); the ScaledObject's two queries sampled every 5 s (what KEDA would ask for).
# 2. A burst of BURST requests at once, with one replica SIGKILLed and another SIGTERMed while
#    they prove: every answer's status and latency, the balancer's retries, the drained
#    replica's exit code.
#
# Writes OUT (default benches/results/<date>-<cpu>-multi-replica/): report.md, the load
# generator's report (load/), burst.csv, triggers.csv, the balancer's log and config, the
# Prometheus config, and each replica's log. Takes about DURATION x levels + 2 min.
#
#   benches/multi_replica.sh                       # release build, 3 replicas, default threads
#   PROFILE=debug LEVELS=3,6 DURATION=20s benches/multi_replica.sh
# Settings of deploy/local/lib.sh apply (REPLICAS, MAX_INFLIGHT, PROVE_THREADS, QUEUE_DEPTH,
# CIRCUITS, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh

PROFILE=${PROFILE:-release}
LEVELS=${LEVELS:-3,6,12}
DURATION=${DURATION:-30s}
WARMUP=${WARMUP:-5s}
BURST=${BURST:-36}
POOL_SIZE=${POOL_SIZE:-64}
SEED=${SEED:-1}

if [ "${BUILD:-1}" = 1 ]; then
  if [ "$PROFILE" = release ]; then release=--release; else release=; fi
  build_load_binaries $release
fi
BIN=target/$PROFILE
[ "$PROFILE" = debug ] || [ "$PROFILE" = release ] || { echo "PROFILE is debug or release" >&2; exit 2; }
export SERVER_BIN="${SERVER_BIN:-$PWD/$BIN/enygma-server}"
LOADGEN_BIN=${LOADGEN_BIN:-$BIN/enygma-loadgen}
ENYGMA_BIN=${ENYGMA_BIN:-$BIN/enygma}
"$ENYGMA_BIN" setup --keep-existing

REQUESTS=${REQUESTS:-target/loadgen-requests/transfer-k6-seed$SEED-n$POOL_SIZE}
request_pool "$ENYGMA_BIN" "$REQUESTS" "$SEED" "$POOL_SIZE" --circuit transfer --k 6

cpu=$(cpu_model)
OUT=${OUT:-benches/results/$(date -u +%F)-$(cpu_slug "$cpu")-multi-replica}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

source deploy/local/lib.sh
trap local_stop EXIT
need_venv
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
local_up

local_keda_triggers >"$WORK/triggers.tsv"
sample_triggers() { # every 5 s until killed: time, then per trigger value and desired replicas
  echo "t_s,trigger,value,threshold,replicas_wanted" >"$OUT/triggers.csv"
  local t0=$SECONDS value
  while :; do
    while IFS=$'\t' read -r name threshold query; do
      value=$(local_prom_query "$query" | "$VENV/bin/python" -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")' 2>/dev/null)
      [ -n "$value" ] && echo "$((SECONDS - t0)),$name,$value,$threshold,$(python3 -c "import math,sys; print(math.ceil(float(sys.argv[1]) / float(sys.argv[2]) - 1e-9))" "$value" "$threshold")" >>"$OUT/triggers.csv"
    done <"$WORK/triggers.tsv"
    sleep 5
  done
}
sample_triggers &
sampler=$!

log "phase 1: closed-loop levels $LEVELS through the balancer"
"$LOADGEN_BIN" run --url "$BALANCER_URL" --requests "$REQUESTS" --out "$OUT/load" \
  --levels "$LEVELS" --duration "$DURATION" --warmup "$WARMUP" --metrics-path none --quiet \
  --label "$REPLICAS replicas x ${THREAD_ARGS[*]:-$SLOTS slots on one shared pool} behind HAProxy"
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
cp "$WORK/haproxy.log" "$WORK/haproxy-load.log"
started_after_load=$(for p in "${ADMIN_PORTS[@]}"; do
  curl -s --max-time 5 "http://127.0.0.1:$p/metrics" | awk '$1 == "enygma_proofs_started_total" { print $2 }'
done | tr '\n' ' ')
rss_after_load=$(for p in "${REPLICA_PIDS[@]}"; do awk '/VmHWM/ { printf "%.0f ", $2 / 1024 }' "/proc/$p/status"; done)

log "phase 2: $BURST requests at once; r1 SIGKILLed and r2 SIGTERMed while they prove"
mkdir -p "$WORK/burst"
files=("$REQUESTS"/*.json)
curl_pids=()
for ((i = 1; i <= BURST; i++)); do
  f=${files[$(((i - 1) % ${#files[@]}))]}
  curl -s -o "$WORK/burst/$i.body" -w '%{http_code},%{time_total}\n' --max-time 600 \
    -H 'Content-Type: application/json' -H "X-Request-Id: burst-$i" \
    --data-binary @"$f" "$BALANCER_URL/generateProofTransfer-6" >"$WORK/burst/$i.out" 2>&1 &
  curl_pids+=($!)
done
burst_start=$SECONDS
metric_of() { curl -s --max-time 2 "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
deadline=$((SECONDS + 60))
until [ "$(metric_of "${ADMIN_PORTS[0]}" enygma_proofs_in_flight)" -ge 1 ] 2>/dev/null &&
  [ "$(metric_of "${ADMIN_PORTS[1]}" enygma_proofs_in_flight)" -ge 1 ] 2>/dev/null; do
  [ $SECONDS -lt $deadline ] || break
  sleep 0.2
done
kill -KILL "${REPLICA_PIDS[0]}"
kill -TERM "${REPLICA_PIDS[1]}"
for pid in "${curl_pids[@]}"; do wait "$pid" || true; done
burst_s=$((SECONDS - burst_start))
r2_status=0
wait "${REPLICA_PIDS[1]}" || r2_status=$?
echo "request,status,latency_s" >"$OUT/burst.csv"
for ((i = 1; i <= BURST; i++)); do echo "burst-$i,$(cat "$WORK/burst/$i.out")" >>"$OUT/burst.csv"; done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

cp "$WORK/haproxy.cfg" "$WORK/prometheus.yml" "$OUT/"
grep 'request_id=burst-' "$WORK/haproxy.log" >"$OUT/haproxy-burst.log" || true
gzip -c "$WORK/haproxy-load.log" >"$OUT/haproxy-load.log.gz"
for ((i = 1; i <= REPLICAS; i++)); do gzip -c "$WORK/replica-$i.log" >"$OUT/replica-$i.log.gz"; done

"$VENV/bin/python" - "$OUT" <<PY
import collections, csv, gzip, json, math, re, sys
out = sys.argv[1]
r = json.load(open(f"{out}/load/report.json"))
lines = []
w = lines.append
w("# Multi-replica run: $REPLICAS replicas behind HAProxy (deploy/local/)\n")
w(f"- Machine: $cpu (lscpu), {r['machine']['logical_cpus']} logical CPUs, {r['machine']['mem_total_mb']} MB")
w(f"- Date: {r['generated_at']}; build: $PROFILE; commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates deploy benches/multi_replica.sh || echo ' + uncommitted changes')")
w("- Replicas: $REPLICAS x \`$(echo "${REPLICA_ARGS[@]}" | sed "s|$PWD/||g; s|--port [0-9]*|--port P|")\`")
w("- Balancer: HAProxy, \`balance leastconn\`, health check \`GET /readyz\`, \`retry-on 503 conn-failure empty-response\`, \`option redispatch 1\`, \`retries $RETRIES\`, maxconn $BALANCER_MAXCONN per replica ([haproxy.cfg](haproxy.cfg))")
w("- **Shared machine**: other engineers were compiling on the same 2 cores during this run (load average $load_before before, $load_after after). $REPLICAS replicas x ${THREAD_ARGS[*]:-a slot and a pool thread per CPU} on 2 cores also oversubscribe the CPUs by design: this run measures distribution and fault handling, not the capacity of a replica (see benches/results/2026-12-03-amd-epyc/ab.md for that).")
w("- Reproduce: \`${MAX_INFLIGHT:+MAX_INFLIGHT=$MAX_INFLIGHT }${PROVE_THREADS:+PROVE_THREADS=$PROVE_THREADS }LEVELS=$LEVELS DURATION=$DURATION WARMUP=$WARMUP BURST=$BURST benches/multi_replica.sh\`\n")
w("## Phase 1: closed-loop load through the balancer\n")
w("| In flight | Throughput (proofs/s) | p50 (ms) | p99 (ms) | max (ms) | prove p50 (ms, server) | queue wait p50 (ms, server) | Errors |")
w("|---:|---:|---:|---:|---:|---:|---:|---|")
nan = float("nan")
for l in r["levels"]:
    lat = l["latency_ms"] or {}
    prove = l.get("internal_prove_ms") or {}
    wait = l.get("queue_wait_ms") or {}
    errs = ", ".join(f"{v} x {k}" for k, v in l["errors"].items()) or "0"
    w(f"| {l['concurrency']} | {l['throughput_rps']:.2f} | {lat.get('p50', nan):.0f} | {lat.get('p99', nan):.0f} | {lat.get('max', nan):.0f} | {prove.get('p50', nan):.0f} | {wait.get('p50', nan):.0f} | {errs} |")
w("\nThe balancer lets each replica hold $BALANCER_MAXCONN (maxconn = slots + 1) and queues the rest: latency above $((REPLICAS * SLOTS)) in flight is mostly waiting. A proof's own time (prove p50) shows how much CPU the replicas got on the shared machine.")
per = collections.Counter()
retried = 0
for line in gzip.open(f"{out}/haproxy-load.log.gz", "rt"):
    m = re.search(r"server=(\S+) status=(\d+) retries=(\S+).*path=/generateProof", line)
    if m:
        if m.group(2) == "200":
            per[m.group(1)] += 1
        if m.group(3).lstrip("+") != "0":
            retried += 1
total = sum(per.values())
w(f"\nAnswers 200 per replica (the balancer's log, warm-ups included): " + ", ".join(f"{k} {v} ({100 * v / total:.0f} %)" for k, v in sorted(per.items())) + f"; requests the balancer retried: {retried}.")
w(f"Proofs started per replica (their own counter): $started_after_load; peak RSS per replica (VmHWM, MB): $rss_after_load.\n")
rows = list(csv.DictReader(open(f"{out}/triggers.csv")))
for name in sorted({x["trigger"] for x in rows}):
    vals = [x for x in rows if x["trigger"] == name]
    if vals:
        top = max(vals, key=lambda x: float(x["value"]))
        w(f"ScaledObject trigger \`{name}\` (threshold {top['threshold']}), sampled every 5 s: max {float(top['value']):.2f}, i.e. KEDA would want {top['replicas_wanted']} replica(s) ([triggers.csv](triggers.csv)).")
w("\n## Phase 2: burst with one replica SIGKILLed and one SIGTERMed\n")
b = list(csv.DictReader(open(f"{out}/burst.csv")))
codes = collections.Counter(x["status"] for x in b)
lat = sorted(float(x["latency_s"]) for x in b if x["status"] == "200")
def pct(p):
    return lat[max(0, math.ceil(p / 100 * len(lat)) - 1)] * 1000 if lat else float("nan")
bl = open(f"{out}/haproxy-burst.log").read().splitlines()
per_b = collections.Counter(re.search(r"server=(\S+)", x).group(1) for x in bl if "status=200" in x)
retried_b = sum(1 for x in bl if re.search(r"retries=\+?[1-9]", x))
w(f"- {len(b)} requests at once; answers: " + ", ".join(f"{v} x {k}" for k, v in sorted(codes.items())) + " (curl, no client retry)")
w(f"- all answered after $burst_s s: {len(lat) / $burst_s:.2f} proofs/s; latency p50 {pct(50):.0f} ms, p99 {pct(99):.0f} ms, max {pct(100):.0f} ms")
w(f"- answered by: " + ", ".join(f"{k} {v}" for k, v in sorted(per_b.items())) + f"; retried by the balancer: {retried_b}")
w(f"- r2 (SIGTERM) exit code: $r2_status; files: [burst.csv](burst.csv), [haproxy-burst.log](haproxy-burst.log), replica-N.log.gz")
open(f"{out}/report.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
log "results in $OUT"
