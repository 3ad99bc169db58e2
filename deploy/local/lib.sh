# Local multi-replica setup, sourced by deploy/local/up.sh, deploy/local/acceptance.sh and
# benches/multi_replica.sh: N enygma-server replicas on loopback ports behind HAProxy
# (haproxy.cfg.in), and a Prometheus (prometheus.yml.in) scraping their admin listeners
# (--admin-bind: probes and /metrics, one port per replica) with the alert rules of
# deploy/kubernetes/monitoring loaded. Everything listens on 127.0.0.1 on ports picked free at
# start; every process started here is stopped by local_stop (call it from an EXIT trap).
#
# Settings (environment, with defaults):
#   REPLICAS=3 QUEUE_DEPTH=4 QUEUE_TIMEOUT=120s DRAIN_TIMEOUT=60s
#   MAX_INFLIGHT= PROVE_THREADS=  unset: the server's default admission (a slot per CPU, threads
#                          that follow the queue); each is passed (--max-inflight, --prove-threads)
#                          only when set, and either selects a pool per slot
#   BALANCER_MAXCONN=SLOTS+1  requests the balancer lets a replica hold (haproxy.cfg.in); SLOTS
#                          is a replica's proof slots as it reports them once ready
#   CIRCUITS=transfer-k6   statements each replica hosts (--circuits); passed only if the
#                          server has the flag, else every statement loads (slower start).
#                          CIRCUITS= (empty) loads every statement.
#   SERVER_BIN (else $ENYGMA_SERVER_BIN, else target/debug/enygma-server)
#   KEYS_DIR=keys          shared by the replicas, which only read it
#   WORK=<new temp dir>    configs, logs and Prometheus' data
#   READY_TIMEOUT=600      seconds for every replica to load its keys
#   RETRIES=6 BALANCER_QUEUE_TIMEOUT=120s
#   PROXY_PROTOCOL=1       HAProxy sends each replica a PROXY v2 header (send-proxy-v2) and the
#                          replicas trust it from 127.0.0.1 (--proxy-protocol-from), so their
#                          per-address limits and logs see the client, not the balancer. Only
#                          when the server has the flag; 0 turns it off. The replicas' API ports
#                          then expect that header: talk to them directly on their admin ports.

LOCAL_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$LOCAL_DIR/../.." && pwd)"
source "$REPO_DIR/deploy/tools.sh"

REPLICAS="${REPLICAS:-3}"
MAX_INFLIGHT="${MAX_INFLIGHT:-}"
PROVE_THREADS="${PROVE_THREADS:-}"
THREAD_ARGS=()
[ -z "$MAX_INFLIGHT" ] || THREAD_ARGS+=(--max-inflight "$MAX_INFLIGHT")
[ -z "$PROVE_THREADS" ] || THREAD_ARGS+=(--prove-threads "$PROVE_THREADS")
# A replica's proof slots: set by local_read_slots.
SLOTS=
QUEUE_DEPTH="${QUEUE_DEPTH:-4}"
QUEUE_TIMEOUT="${QUEUE_TIMEOUT:-120s}"
DRAIN_TIMEOUT="${DRAIN_TIMEOUT:-60s}"
CIRCUITS="${CIRCUITS-transfer-k6}"
SERVER_BIN="${SERVER_BIN:-${ENYGMA_SERVER_BIN:-$REPO_DIR/target/debug/enygma-server}}"
KEYS_DIR="${KEYS_DIR:-$REPO_DIR/keys}"
READY_TIMEOUT="${READY_TIMEOUT:-600}"
RETRIES="${RETRIES:-6}"
BALANCER_MAXCONN="${BALANCER_MAXCONN:-}"
BALANCER_QUEUE_TIMEOUT="${BALANCER_QUEUE_TIMEOUT:-120s}"
RULES_FILE="$REPO_DIR/deploy/kubernetes/monitoring/alerts.rules.yml"
PROXY_PROTOCOL="${PROXY_PROTOCOL:-1}"
PROXY_ARGS=()

REPLICA_PIDS=()
REPLICA_PORTS=()
# Each replica's admin listener (empty when the server has no --admin-bind: /metrics on the API
# port then).
ADMIN_PORTS=()
BALANCER_PID=
PROMETHEUS_PID=

log() { echo "[$(date +%T)] $*" >&2; }

# Free loopback ports, one a line (bound then released: nothing else here races for them).
local_free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))
PY
}

local_setup() {
  need_debian haproxy haproxy
  need_debian prometheus prometheus
  [ -x "$SERVER_BIN" ] || { echo "no server binary at $SERVER_BIN (cargo build -p enygma-server)" >&2; return 1; }
  WORK="${WORK:-$(mktemp -d /tmp/enygma-local.XXXXXX)}"
  mkdir -p "$WORK"
  local ports
  mapfile -t ports < <(local_free_ports $((2 * REPLICAS + 3)))
  REPLICA_PORTS=("${ports[@]:0:REPLICAS}")
  BALANCER_PORT=${ports[REPLICAS]}
  STATS_PORT=${ports[REPLICAS + 1]}
  PROMETHEUS_PORT=${ports[REPLICAS + 2]}
  if "$SERVER_BIN" --help | grep -q -- '--admin-bind'; then
    ADMIN_PORTS=("${ports[@]:REPLICAS + 3:REPLICAS}")
  else
    ADMIN_PORTS=("${REPLICA_PORTS[@]}")
  fi
  if [ "$PROXY_PROTOCOL" = 1 ] && "$SERVER_BIN" --help | grep -q -- '--proxy-protocol-from'; then
    PROXY_ARGS=(--proxy-protocol-from 127.0.0.1)
  fi
  BALANCER_URL="http://127.0.0.1:$BALANCER_PORT"
  PROMETHEUS_URL="http://127.0.0.1:$PROMETHEUS_PORT"
  CIRCUITS_ARGS=()
  if [ -n "$CIRCUITS" ]; then
    if "$SERVER_BIN" --help | grep -q -- '--circuits'; then
      CIRCUITS_ARGS=(--circuits "$CIRCUITS")
    else
      log "this enygma-server has no --circuits flag: every replica loads every statement"
    fi
  fi
  log "work dir $WORK"
}

# The command line of replica $1 (0-based), into REPLICA_ARGS.
replica_args() {
  local admin=()
  [ "${ADMIN_PORTS[$1]}" = "${REPLICA_PORTS[$1]}" ] || admin=(--admin-bind "127.0.0.1:${ADMIN_PORTS[$1]}")
  REPLICA_ARGS=("$SERVER_BIN" --bind 127.0.0.1 --port "${REPLICA_PORTS[$1]}" "${admin[@]}" --keys-dir "$KEYS_DIR"
    "${THREAD_ARGS[@]}" --queue-depth "$QUEUE_DEPTH" --queue-timeout "$QUEUE_TIMEOUT"
    --drain-timeout "$DRAIN_TIMEOUT" "${CIRCUITS_ARGS[@]}" "${PROXY_ARGS[@]}")
}

local_start_replicas() {
  local i
  for ((i = 0; i < REPLICAS; i++)); do
    replica_args "$i"
    "${REPLICA_ARGS[@]}" >"$WORK/replica-$((i + 1)).log" 2>&1 &
    REPLICA_PIDS[i]=$!
    log "replica r$((i + 1)): pid ${REPLICA_PIDS[i]}: ${REPLICA_ARGS[*]}"
  done
}

# Waits until every replica answers /readyz 200 (keys loaded), bounded by READY_TIMEOUT.
local_wait_replicas() {
  local deadline=$((SECONDS + READY_TIMEOUT)) i ready
  while :; do
    ready=0
    for ((i = 0; i < REPLICAS; i++)); do
      kill -0 "${REPLICA_PIDS[i]}" 2>/dev/null || { log "replica r$((i + 1)) exited at start:"; tail -5 "$WORK/replica-$((i + 1)).log" >&2; return 1; }
      [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:${ADMIN_PORTS[i]}/readyz")" = 200 ] && ready=$((ready + 1))
    done
    [ $ready = "$REPLICAS" ] && { log "all $REPLICAS replicas ready after ${SECONDS}s of this script"; return 0; }
    [ $SECONDS -lt $deadline ] || { log "replicas not ready within ${READY_TIMEOUT}s"; return 1; }
    sleep 1
  done
}

# SLOTS from the first replica's enygma_max_inflight{queue="prove"}, and BALANCER_MAXCONN from
# it unless set: with the default admission the slots follow the CPUs the server sees (its
# affinity and cgroup quota), which a count taken here could miss. When the series cannot be
# read: MAX_INFLIGHT, else one slot (the fixed layout's default).
local_read_slots() {
  SLOTS=$(curl -s --max-time 2 "http://127.0.0.1:${ADMIN_PORTS[0]}/metrics" |
    awk '$1 == "enygma_max_inflight{queue=\"prove\"}" { print $2 }') || true
  if ! [[ "$SLOTS" =~ ^[1-9][0-9]*$ ]]; then
    SLOTS=${MAX_INFLIGHT:-1}
    log "replica r1 reports no proof slots: taking $SLOTS"
  fi
  BALANCER_MAXCONN="${BALANCER_MAXCONN:-$((SLOTS + 1))}"
  log "each replica has $SLOTS proof slots; the balancer lets it hold $BALANCER_MAXCONN requests"
}

local_start_balancer() {
  local i servers="" proxy=""
  [ -n "$SLOTS" ] || local_read_slots
  # The client's address to the replica in a PROXY v2 header (its health checks too).
  [ ${#PROXY_ARGS[@]} = 0 ] || proxy=" send-proxy-v2"
  for ((i = 0; i < REPLICAS; i++)); do
    servers+="    server r$((i + 1)) 127.0.0.1:${REPLICA_PORTS[i]}$proxy"$'\n'
  done
  sed -e "s|@BALANCER_PORT@|$BALANCER_PORT|" -e "s|@STATS_PORT@|$STATS_PORT|" \
    -e "s|@RETRIES@|$RETRIES|" -e "s|@SERVER_MAXCONN@|$BALANCER_MAXCONN|" \
    -e "s|@BALANCER_QUEUE_TIMEOUT@|$BALANCER_QUEUE_TIMEOUT|" \
    "$LOCAL_DIR/haproxy.cfg.in" | awk -v s="$servers" '/^@SERVERS@$/ { printf "%s", s; next } { print }' \
    >"$WORK/haproxy.cfg"
  haproxy -c -q -f "$WORK/haproxy.cfg"
  haproxy -db -f "$WORK/haproxy.cfg" >"$WORK/haproxy.log" 2>&1 &
  BALANCER_PID=$!
  log "balancer: pid $BALANCER_PID, $BALANCER_URL (stats http://127.0.0.1:$STATS_PORT/stats)"
}

# Replica name and status as the balancer's health checks see them: "r1 UP", one a line.
local_balancer_status() {
  curl -s --max-time 2 "http://127.0.0.1:$STATS_PORT/stats;csv" | awk -F, '$1 == "replicas" && $2 ~ /^r[0-9]+$/ { print $2, $18 }'
}

# While waiting on process NAME (pid PID, output in LOG): fails, showing LOG, once it exited.
local_still_running() { # local_still_running NAME PID LOG
  kill -0 "$2" 2>/dev/null || { log "$1 exited:"; cat "$3" >&2; return 1; }
}

local_wait_balancer() {
  local deadline=$((SECONDS + 30))
  while [ "$(local_balancer_status | grep -c ' UP$')" != "$REPLICAS" ]; do
    local_still_running haproxy "$BALANCER_PID" "$WORK/haproxy.log" || return 1
    [ $SECONDS -lt $deadline ] || { log "balancer does not see $REPLICAS replicas up: $(local_balancer_status | tr '\n' ' ')"; return 1; }
    sleep 0.5
  done
  log "balancer sees $REPLICAS replicas up"
}

local_start_prometheus() {
  local i targets=""
  for ((i = 0; i < REPLICAS; i++)); do
    targets+="      - targets: [\"127.0.0.1:${ADMIN_PORTS[i]}\"]"$'\n'
    targets+="        labels: {namespace: enygma, component: prover, pod: enygma-server-r$((i + 1))}"$'\n'
  done
  sed -e "s|@RULES_FILE@|$RULES_FILE|" "$LOCAL_DIR/prometheus.yml.in" |
    awk -v s="$targets" '/^@TARGETS@$/ { printf "%s", s; next } { print }' >"$WORK/prometheus.yml"
  promtool check config "$WORK/prometheus.yml" >/dev/null
  prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prometheus-data" \
    --web.listen-address="127.0.0.1:$PROMETHEUS_PORT" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
  PROMETHEUS_PID=$!
  local deadline=$((SECONDS + 60))
  until curl -sf --max-time 2 "$PROMETHEUS_URL/-/ready" >/dev/null; do
    local_still_running prometheus "$PROMETHEUS_PID" "$WORK/prometheus.log" || return 1
    [ $SECONDS -lt $deadline ] || { log "prometheus not ready within 60s"; return 1; }
    sleep 0.5
  done
  log "prometheus: pid $PROMETHEUS_PID, $PROMETHEUS_URL"
}

# An instant query; prints Prometheus' JSON answer.
local_prom_query() {
  curl -s --max-time 10 --get --data-urlencode "query=$1" "$PROMETHEUS_URL/api/v1/query"
}

# The ScaledObject's triggers, exactly as the keda overlay renders them, one a line:
# name<TAB>threshold<TAB>query. Needs kubectl (with kustomize) and need_venv's python.
local_keda_triggers() {
  kubectl kustomize "$REPO_DIR/deploy/kubernetes/overlays/keda" | "$VENV/bin/python" -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "ScaledObject":
        for t in d["spec"]["triggers"]:
            print(t["name"], t["metadata"]["threshold"], t["metadata"]["query"], sep="\t")
'
}

# Waits until Prometheus has scraped every replica (bounded).
local_wait_scraped() {
  local deadline=$((SECONDS + 30))
  until local_prom_query 'count(up{job="enygma-server"} == 1)' | grep -q "\"$REPLICAS\"\]"; do
    [ $SECONDS -lt $deadline ] || { log "prometheus has not scraped the $REPLICAS replicas within 30 s"; return 1; }
    sleep 0.5
  done
  log "prometheus scrapes all $REPLICAS replicas"
}

# Everything in one: replicas ready, balancer and Prometheus up.
local_up() {
  local_setup
  local_start_replicas
  local_wait_replicas
  local_start_balancer
  local_start_prometheus
  local_wait_balancer
  local_wait_scraped
}

# Stops what this shell started, by pid: TERM, then KILL after 10 s.
local_stop() {
  local pids=() pid deadline
  for pid in "${REPLICA_PIDS[@]}" $BALANCER_PID $PROMETHEUS_PID; do
    kill -0 "$pid" 2>/dev/null && pids+=("$pid")
  done
  [ ${#pids[@]} = 0 ] && return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  deadline=$((SECONDS + 10))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}
