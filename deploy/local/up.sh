#!/usr/bin/env bash
# The local multi-replica setup, for trying it out: REPLICAS (default 3) enygma-server
# replicas on loopback ports behind HAProxy (retries on another replica) and a Prometheus
# scraping them. Prints the addresses, then runs until Ctrl-C (or for UP_FOR seconds), and
# stops everything it started. Builds the binaries (debug; PROFILE=release for release) and the
# development keys if they are missing; settings as in deploy/local/lib.sh.
#   bash deploy/local/up.sh
#   curl -s -H 'Content-Type: application/json' --data-binary @request.json \
#     http://127.0.0.1:<balancer port>/generateProofTransfer-6
set -euo pipefail
cd "$(dirname "$0")/../.."
PROFILE="${PROFILE:-debug}"
if [ -z "${SERVER_BIN:-}" ]; then
  if [ "$PROFILE" = release ]; then release=--release; else release=; fi
  cargo build $release -p enygma-server -p enygma-cli --bins
  SERVER_BIN="$PWD/target/$PROFILE/enygma-server"
  "target/$PROFILE/enygma" setup --keep-existing
fi
source deploy/local/lib.sh
trap local_stop EXIT
trap 'exit 0' INT TERM
local_up
cat <<EOT

Balancer (send requests here): $BALANCER_URL
HAProxy stats:                 http://127.0.0.1:$STATS_PORT/stats
Prometheus:                    $PROMETHEUS_URL (alerts: $PROMETHEUS_URL/alerts)
Replicas (API, behind HAProxy's PROXY header): $(for p in "${REPLICA_PORTS[@]}"; do printf '127.0.0.1:%s ' "$p"; done)
Replicas' admin listeners:     $(for p in "${ADMIN_PORTS[@]}"; do printf 'http://127.0.0.1:%s ' "$p"; done)
Logs and configs:              $WORK
EOT
echo "Running until Ctrl-C${UP_FOR:+ or ${UP_FOR} s}."
deadline=$((SECONDS + ${UP_FOR:-31536000}))
while [ $SECONDS -lt $deadline ]; do sleep 1; done
