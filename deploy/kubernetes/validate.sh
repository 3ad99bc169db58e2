#!/usr/bin/env bash
# Offline checks of deploy/kubernetes/ (run by scripts/test.sh, hence CI):
# 1. every overlay renders with `kubectl kustomize` and validates strictly against the
#    Kubernetes schemas, its ScaledObjects against KEDA's CRD schema, plus the service's own
#    rules (validate/validate.py); a self-test shows the validator rejects known breaks, and
#    the renders of validate/refused/ (an overlay serving the API without TLS) must be refused;
# 2. the alert rules pass `promtool check rules` and their unit tests (`promtool test rules`);
# 3. every query of the Grafana dashboard parses as PromQL (promtool, as recording rules).
# Installs kubernetes-validate (PyPI), @kubernetes-models/keda (npm, from the lockfile) and
# promtool (Debian's prometheus) when missing.
set -euo pipefail
cd "$(dirname "$0")"
source ../tools.sh

KUBERNETES_VERSION="${KUBERNETES_VERSION:-1.32.0}"  # the oldest minor still supported upstream
command -v kubectl >/dev/null || { echo "kubectl (with kustomize) is required" >&2; exit 1; }
need_debian promtool prometheus
need_venv
[ -d validate/node_modules/@kubernetes-models/keda ] || (cd validate && npm ci --no-audit --no-fund >&2)

status=0
overlays=(overlays/*/ keys-loader/)
"$VENV/bin/python" validate/validate.py --kubernetes-version "$KUBERNETES_VERSION" \
  --rules monitoring/alerts.rules.yml --self-test overlays/keda \
  --expect-refused validate/refused/*/ -- "${overlays[@]%/}" || status=1

echo "== promtool"
promtool check rules monitoring/alerts.rules.yml || status=1
(cd monitoring && promtool test rules alerts.test.yml) || status=1

echo "== dashboard queries"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Grafana's variables replaced by what they expand to, each query a recording rule.
"$VENV/bin/python" - monitoring/dashboard.json > "$tmp/dashboard.rules.yml" <<'PY' || status=1
import json, sys, yaml
d = json.load(open(sys.argv[1]))
subst = {"$__rate_interval": "1m", "$__range": "1h", "$namespace": ".*", "$component": ".*"}
rules = []
for p in d["panels"]:
    for t in p["targets"]:
        e = t["expr"]
        for k, v in subst.items():
            e = e.replace(k, v)
        rules.append({"record": f"dashboard:panel{p['id']}:{t['refId']}", "expr": e})
print(f"{len(rules)} queries in {len(d['panels'])} panels", file=sys.stderr)
yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, sys.stdout)
PY
promtool check rules "$tmp/dashboard.rules.yml" || status=1

[ $status = 0 ] && echo "deploy/kubernetes: all checks passed" || echo "deploy/kubernetes: FAILED" >&2
exit $status
