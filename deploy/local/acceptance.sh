#!/usr/bin/env bash
# Multi-replica acceptance test (run by scripts/test.sh, hence CI): 3 replicas of
# enygma-server (1 proof at a time, 1 prove thread each) behind HAProxy, which health-checks
# /readyz, balances by least connections and resends a request that a replica shed (503),
# refused or dropped; a Prometheus scrapes the replicas with the alert rules loaded.
#
# A burst of BURST valid k = 6 transfers goes through the balancer at once. While it runs, one
# replica is SIGKILLed and another SIGTERMed, each while it is proving. Asserted: every request
# got 200 through the balancer (curl, no client-side retry) and every proof verifies; the
# SIGTERMed replica drained the work it held and exited 0; the balancer did resend requests;
# the ScaledObject's queries (rendered from deploy/kubernetes/overlays/keda) and every dashboard
# query evaluate on the replicas' real metrics, and the alert rules evaluate without error.
#
# Settings: BURST=18, ENYGMA_REFERENCE_DIR (else ../shared/reference beside the repository),
# CLIENT_TIMEOUT=300 (s, per request), and those of deploy/local/lib.sh, except
# MAX_INFLIGHT=1 PROVE_THREADS=1 here (set them empty for the server's default admission).
set -euo pipefail
cd "$(dirname "$0")/../.."
# One slot on one thread per replica, not lib.sh's default admission: three replicas share 2
# cores in CI, and this is the load the burst, its timeouts and the fault timing were settled
# on.
MAX_INFLIGHT="${MAX_INFLIGHT-1}"
PROVE_THREADS="${PROVE_THREADS-1}"
source deploy/local/lib.sh

BURST="${BURST:-18}"
CLIENT_TIMEOUT="${CLIENT_TIMEOUT:-300}"
REQUEST="${ENYGMA_REFERENCE_DIR:-$REPO_DIR/../shared/reference}/requests/transfer-k6.json"
[ -r "$REQUEST" ] || { echo "no sample request at $REQUEST (set ENYGMA_REFERENCE_DIR)" >&2; exit 1; }
[ "$REPLICAS" -ge 3 ] || { echo "the test kills one replica and drains another: REPLICAS >= 3" >&2; exit 1; }
command -v kubectl >/dev/null || { echo "kubectl (with kustomize) is required" >&2; exit 1; }

passed=0 failed=0
check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then
    passed=$((passed + 1)); echo "ok   $what"
  else
    failed=$((failed + 1)); echo "FAIL $what"
  fi
}

# Stop everything started here; keep the logs (WORK) only when something failed.
trap 'local_stop; if [ "$failed" = 0 ] && [ "$passed" -gt 0 ]; then rm -rf "$WORK"; fi' EXIT
need_venv
local_up

local_keda_triggers >"$WORK/triggers.tsv"
# Prints "value" of an instant query, or "error: ..." / "empty".
prom_value() {
  local_prom_query "$1" | "$VENV/bin/python" -c '
import json, sys
a = json.load(sys.stdin)
if a.get("status") != "success":
    print("error:", a.get("error"))
elif not a["data"]["result"]:
    print("empty")
else:
    print(" ".join(r["value"][1] for r in a["data"]["result"]))
'
}
metric_of() { # metric_of PORT NAME: the replica's own value of an unlabelled series
  curl -s --max-time 2 "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'
}

mkdir -p "$WORK/burst"
log "burst: $BURST transfers (k = 6) through $BALANCER_URL"
curl_pids=()
for ((i = 1; i <= BURST; i++)); do
  curl -s -o "$WORK/burst/$i.json" -w '%{http_code}\n' --max-time "$CLIENT_TIMEOUT" \
    -H 'Content-Type: application/json' -H "X-Request-Id: burst-$i" \
    --data-binary @"$REQUEST" "$BALANCER_URL/generateProofTransfer-6" >"$WORK/burst/$i.status" 2>&1 &
  curl_pids+=($!)
done

# Faults while r1 and r2 are each proving (bounded wait): r1 SIGKILLed, r2 SIGTERMed.
deadline=$((SECONDS + 60))
until [ "$(metric_of "${ADMIN_PORTS[0]}" enygma_proofs_in_flight)" -ge 1 ] 2>/dev/null &&
  [ "$(metric_of "${ADMIN_PORTS[1]}" enygma_proofs_in_flight)" -ge 1 ] 2>/dev/null; do
  [ $SECONDS -lt $deadline ] || { log "r1 and r2 were not both proving within 60 s"; break; }
  sleep 0.2
done
kill -KILL "${REPLICA_PIDS[0]}"
kill -TERM "${REPLICA_PIDS[1]}"
log "r1 (pid ${REPLICA_PIDS[0]}) SIGKILLed, r2 (pid ${REPLICA_PIDS[1]}) SIGTERMed, mid-burst"

# The autoscaler's view while the burst runs: its exact queries on the replicas' metrics.
sleep 3
running=0
for pid in "${curl_pids[@]}"; do kill -0 "$pid" 2>/dev/null && running=$((running + 1)); done
echo "ScaledObject triggers (overlays/keda), evaluated by Prometheus 3 s after the faults, $running requests unanswered:"
while IFS=$'\t' read -r name threshold query; do
  value=$(prom_value "$query")
  echo "  $name = $value (threshold $threshold per replica) <- $query"
  echo "$name $value" >>"$WORK/trigger-values.txt"
  check "trigger $name evaluates to a number on the replicas' metrics" \
    python3 -c 'import math, sys; sys.exit(0 if math.isfinite(float(sys.argv[1])) else 1)' "$value" 2>/dev/null
done <"$WORK/triggers.tsv"
echo "  scrape targets up: $(prom_value 'up{job="enygma-server"}'); waiting + running per replica: $(prom_value 'enygma_queue_depth{queue="prove"} + ignoring(queue) enygma_proofs_in_flight')"
in_flight=$(awk '$1 == "in-flight" { print $2 }' "$WORK/trigger-values.txt")
if [ "$running" -gt 0 ]; then
  check "trigger in-flight counts the burst's proofs ($in_flight > 0 with $running requests unanswered)" \
    python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)' "$in_flight" 2>/dev/null
fi

for pid in "${curl_pids[@]}"; do wait "$pid" || true; done
codes=$(cat "$WORK"/burst/*.status | sort | uniq -c | awk '{ printf "%s x %s, ", $1, $2 }')
log "burst answered: ${codes%, }"
check "all $BURST requests answered 200 through the balancer, no client retry (${codes%, })" \
  test "$(grep -lx 200 "$WORK"/burst/*.status | wc -l)" = "$BURST"

valid=0
for ((i = 1; i <= BURST; i++)); do
  [ "$(cat "$WORK/burst/$i.status")" = 200 ] || continue
  answer=$(curl -s --max-time 60 -H 'Content-Type: application/json' --data-binary @"$WORK/burst/$i.json" \
    "$BALANCER_URL/verifyProofTransfer-6")
  [ "$answer" = '{"valid":true}' ] && valid=$((valid + 1))
done
check "every proof verifies ($valid of $BURST)" test "$valid" = "$BURST"

# Behind the balancer the replicas see the client's address (HAProxy's PROXY v2 header), not
# the balancer's: a verification from 127.0.0.9 is logged with that address.
if [ ${#PROXY_ARGS[@]} -gt 0 ]; then
  first=$(grep -lx 200 "$WORK"/burst/*.status | head -1)
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 --interface 127.0.0.9 \
    -H 'Content-Type: application/json' -H 'X-Request-Id: from-127-0-0-9' \
    --data-binary @"${first%.status}.json" "$BALANCER_URL/verifyProofTransfer-6")
  seen=$(grep -h 'from-127-0-0-9' "$WORK"/replica-*.log | grep -o 'peer=[0-9.]*' | head -1)
  check "a replica behind the balancer sees the client's address (answer $code, ${seen:-no access line})" \
    test "$code:$seen" = "200:peer=127.0.0.9"
fi

r2_status=0
wait "${REPLICA_PIDS[1]}" || r2_status=$?
drain_line=$(grep -m1 'shutdown signal' "$WORK/replica-2.log" || true)
drained=no
grep -q 'drained; exiting' "$WORK/replica-2.log" && drained=yes
check "the SIGTERMed replica exited 0 after draining (exit $r2_status, drained: $drained)" \
  test "$r2_status:$drained" = 0:yes
busy=no
[[ "$drain_line" =~ in_flight=[1-9] ]] && busy=yes
check "it was proving when SIGTERMed (${drain_line##*draining in-flight and queued requests })" test $busy = yes
r1_status=0
wait "${REPLICA_PIDS[0]}" || r1_status=$?
check "the SIGKILLed replica died of it (exit $r1_status)" test "$r1_status" = 137

# The balancer's log: one line per request, with the replica that answered and its retries.
burst_lines=$(grep 'request_id=burst-' "$WORK/haproxy.log" || true)
retried=$(echo "$burst_lines" | grep -Ec 'retries=\+?[1-9]' || true)
echo "per replica (answers 200): $(echo "$burst_lines" | grep 'status=200' | sed -E 's/.*server=([^ ]+).*/\1/' | sort | uniq -c | awk '{ printf "%s %s, ", $2, $1 }')retried by the balancer: $retried"
check "the balancer resent the requests the faults hit ($retried retried)" test "$retried" -ge 1

# Alert rules and dashboard queries on the same metrics.
rules_health=$(curl -s --max-time 10 "$PROMETHEUS_URL/api/v1/rules" | "$VENV/bin/python" -c '
import json, sys
rules = [r for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]]
bad = [r["name"] for r in rules if r.get("health") != "ok"]
print(len(rules), "rules,", "unhealthy: " + ", ".join(bad) if bad else "all evaluated without error")
')
rules_ok=no
[[ "$rules_health" =~ ^[1-9][0-9]*\ rules,\ all\ evaluated\ without\ error$ ]] && rules_ok=yes
check "alert rules loaded and evaluated by Prometheus ($rules_health)" test $rules_ok = yes
dash=$("$VENV/bin/python" - deploy/kubernetes/monitoring/dashboard.json "$PROMETHEUS_URL" <<'PY'
import json, sys, urllib.error, urllib.parse, urllib.request
d = json.load(open(sys.argv[1]))
subst = {"$__rate_interval": "1m", "$__range": "5m", "$namespace": ".*", "$component": ".*"}
ok = empty = 0
errors = []
for p in d["panels"]:
    for t in p["targets"]:
        q = t["expr"]
        for k, v in subst.items():
            q = q.replace(k, v)
        url = sys.argv[2] + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            a = json.load(urllib.request.urlopen(url, timeout=10))
        except urllib.error.HTTPError as e:  # a query Prometheus refuses: 400 with its error
            a = json.load(e)
        if a["status"] != "success":
            errors.append(f"{p['title']}: {a.get('error')}")
        elif a["data"]["result"]:
            ok += 1
        else:
            empty += 1
print(f"{ok} with data, {empty} empty", "; errors: " + "; ".join(errors) if errors else "")
PY
)
echo "dashboard queries: $dash (the RSS panel reads cAdvisor and kube-state-metrics, absent here)"
dash_ok=no
[[ "$dash" =~ ^[0-9]+\ with\ data,\ [0-9]+\ empty\ *$ ]] && dash_ok=yes
check "every dashboard query evaluates" test $dash_ok = yes

[ "$failed" = 0 ] || echo "logs and configs: $WORK"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
