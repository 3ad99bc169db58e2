"""Renders every kustomization under deploy/kubernetes/ with `kubectl kustomize` and validates
what it renders, offline:

- built-in kinds against the Kubernetes OpenAPI schemas of the target version, strictly
  (unknown fields are errors), with the `kubernetes-validate` package;
- KEDA ScaledObjects against KEDA's CRD schema (scaledobjects.mjs, @kubernetes-models/keda),
  and their HPA `behavior` as the autoscaling/v2 type it is;
- what no schema knows but the service needs (`rules`): the autoscaler scales a Deployment
  of the same render on queries that select that Deployment's own pods; probes, drain,
  read-only keys and resources agree with the server's flags; the alert rules' queue timeout is
  the Deployment's; secure by default: the API served with TLS and bearer tokens, ceremony keys
  required, probes on the admin port and a NetworkPolicy over the pods, except in an overlay
  named `local-dev` (DEV_OVERLAY), which may serve the API in the clear.

`--expect-refused DIR...` renders each DIR and fails unless the checks refuse it (the negative
fixtures under validate/refused/).

Any other kind without a schema is an error. `--self-test` breaks rendered manifests in known
ways and checks that each break is reported (the validator itself can fail).

Usage: python validate.py --kubernetes-version 1.32.0 [--self-test DIR] [--expect-refused DIR...] DIR...
Prints one line per checked kustomization and a closing `N passed, N failed`.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import yaml
from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

HERE = Path(__file__).resolve().parent
CRD_KINDS = {("keda.sh/v1alpha1", "ScaledObject")}
# The one overlay allowed to serve the API without TLS and tokens.
DEV_OVERLAY = "local-dev"
# The admin listener's port (--admin-bind) in the pods: probes and scrape.
ADMIN_PORT = 9464
# The threshold line of EnygmaP99OverQueueTimeout's expression (`> 10`): the queue timeout.
QUEUE_TIMEOUT_ALERT = re.compile(r"^\s*> (\d+(?:\.\d+)?)\s*$", re.M)


def render(directory: Path) -> list[dict]:
    out = subprocess.run(
        ["kubectl", "kustomize", str(directory)], check=True, capture_output=True, text=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def seconds(value: str) -> float:
    """`60s`, `1500ms`, `2m` or bare seconds, as the server's --drain-timeout parses them."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", value)
    if not m:
        raise ValueError(f"duration {value!r}")
    return float(m.group(1)) * {"ms": 1e-3, "s": 1, None: 1, "m": 60, "h": 3600}[m.group(2)]


def quantity(value) -> float:
    """Kubernetes quantities as used here: CPUs (`2`, `500m`) and bytes (`512Mi`)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(m|Ki|Mi|Gi)?", str(value))
    if not m:
        raise ValueError(f"quantity {value!r}")
    return float(m.group(1)) * {None: 1, "m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}[m.group(2)]


def schema_errors(doc: dict, version: str) -> list[str]:
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except ValidationError as e:
        return [f"{'/'.join(map(str, e.path))}: {e.message}"]
    except SchemaNotFoundError:
        return [f"no schema for {doc.get('apiVersion')} {doc.get('kind')} in Kubernetes {version}"]
    return []


def scaledobject_errors(docs: list[dict]) -> list[list[str]]:
    if not docs:
        return []
    out = subprocess.run(
        ["node", str(HERE / "scaledobjects.mjs")],
        input=json.dumps(docs),
        check=True,
        capture_output=True,
        text=True,
        cwd=HERE,
    ).stdout
    return [r["errors"] for r in json.loads(out)]


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def flag_or_env(container: dict, env: dict[str, str], flag: str, var: str) -> str | None:
    """The value of a server setting given as `--flag VALUE`, `--flag=VALUE` or its variable."""
    args = container.get("args", [])
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return env.get(var) or None


def security_rules(c: dict, env: dict[str, str], dev: bool) -> list[str]:
    """The API with TLS and tokens and ceremony keys (not in the dev overlay); probes on the
    admin listener, which listens on the pod's address."""
    errs = []
    if not dev:
        tls = all(flag_or_env(c, env, f, v) for f, v in (("--tls-cert", "ENYGMA_TLS_CERT"), ("--tls-key", "ENYGMA_TLS_KEY")))
        if not tls:
            errs.append(f"serves the API without TLS (set ENYGMA_TLS_CERT and ENYGMA_TLS_KEY; only an overlay named {DEV_OVERLAY} may not)")
        if not flag_or_env(c, env, "--auth-token-file", "ENYGMA_AUTH_TOKEN_FILE"):
            errs.append(f"serves the API without bearer tokens (set ENYGMA_AUTH_TOKEN_FILE; only an overlay named {DEV_OVERLAY} may not)")
        if "--require-ceremony-keys" not in c.get("args", []) and env.get("ENYGMA_REQUIRE_CEREMONY_KEYS") not in ("true", "1"):
            errs.append("production pods must refuse development keys (ENYGMA_REQUIRE_CEREMONY_KEYS=true)")
        if "--allow-shared-secret-files" in c.get("args", []) or env.get("ENYGMA_ALLOW_SHARED_SECRET_FILES") in ("true", "1"):
            errs.append("production pods must refuse secret files others may read (no ENYGMA_ALLOW_SHARED_SECRET_FILES: mount Secrets with fsGroup = runAsGroup)")
    admin = flag_or_env(c, env, "--admin-bind", "ENYGMA_ADMIN_BIND")
    if admin != f"0.0.0.0:{ADMIN_PORT}":
        errs.append(f"the admin listener must listen on the pod's address, 0.0.0.0:{ADMIN_PORT} (ENYGMA_ADMIN_BIND={admin})")
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    if ports.get("admin") != ADMIN_PORT:
        errs.append(f"container port `admin` must be {ADMIN_PORT}: {ports}")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        port = c.get(probe, {}).get("httpGet", {}).get("port")
        if port not in ("admin", ADMIN_PORT):
            errs.append(f"{probe} must use the admin port (the API port requires TLS and tokens): {port}")
    return errs


def cpu_rules(c: dict, env: dict[str, str], res: dict) -> list[str]:
    """The CPUs the pod gets are the CPUs its proof slots use. With neither thread setting, the
    server runs a slot per CPU of its limit (the cgroup quota, rounded down), threads that follow the queue,
    so the limit must be whole CPUs and the request equal to it; with both, a pool per slot,
    --max-inflight x --prove-threads CPUs. One alone also selects a pool per slot, the other at
    its default, which no sizing here assumes."""
    inflight = flag_or_env(c, env, "--max-inflight", "ENYGMA_MAX_INFLIGHT")
    threads = flag_or_env(c, env, "--prove-threads", "ENYGMA_PROVE_THREADS")
    request = quantity(res.get("requests", {}).get("cpu", 0))
    if inflight is None and threads is None:
        limit = res.get("limits", {}).get("cpu")
        if limit is None:
            return ["the default threads need a CPU limit: the server runs a slot per CPU of it"]
        cpus = quantity(limit)
        if cpus < 1 or not cpus.is_integer():
            return [f"CPU limit {limit} must be a whole number of CPUs with the default threads "
                    "(the server rounds the quota down to its slots and threads)"]
        if request != cpus:
            return [f"CPU request {request} must equal the limit {cpus} = the slots of the default threads"]
        return []
    if inflight is None or threads is None:
        return ["set both ENYGMA_MAX_INFLIGHT and ENYGMA_PROVE_THREADS, or neither (the default threads): "
                f"one alone selects a pool per slot with the other at its default (max-inflight {inflight}, prove-threads {threads})"]
    slots = int(inflight) * int(threads)
    if slots == 0 or request != slots:
        return [f"CPU request {request} must be --max-inflight x --prove-threads = {slots}"]
    return []


def deployment_rules(d: dict, dev: bool = False) -> list[str]:
    errs = []
    pod = d["spec"]["template"]["spec"]
    (c,) = [c for c in pod["containers"] if c["name"] == "enygma-server"]
    env = env_of(c)
    probes = {p: c.get(p, {}).get("httpGet", {}).get("path") for p in ("startupProbe", "readinessProbe", "livenessProbe")}
    if probes != {"startupProbe": "/readyz", "readinessProbe": "/readyz", "livenessProbe": "/livez"}:
        errs.append(f"probes must be startup /readyz, readiness /readyz, liveness /livez: {probes}")
    errs += security_rules(c, env, dev)
    # The drain: `preStop` sleep, then SIGTERM and up to --drain-timeout of draining.
    pre_stop = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    pause = float(pre_stop[-1]) if pre_stop[:1] == ["/bin/sleep"] else 0.0
    drain = seconds(env.get("ENYGMA_DRAIN_TIMEOUT", "60s"))
    grace = pod.get("terminationGracePeriodSeconds", 30)
    if not grace > pause + drain:
        errs.append(f"terminationGracePeriodSeconds {grace} must exceed preStop {pause} s + drain timeout {drain} s")
    if "--require-keys" not in c.get("args", []) and env.get("ENYGMA_REQUIRE_KEYS") not in ("true", "1"):
        errs.append("production pods must run with --require-keys (never create keys in a pod)")
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    keys_dir = env.get("ENYGMA_KEYS_DIR")
    key_mounts = [m for m in mounts.values() if m["mountPath"] == keys_dir]
    if not key_mounts or not key_mounts[0].get("readOnly"):
        errs.append(f"the keys dir {keys_dir} must be a read-only volume mount")
    else:
        (vol,) = [v for v in pod.get("volumes", []) if v["name"] == key_mounts[0]["name"]]
        if "persistentVolumeClaim" in vol and not vol["persistentVolumeClaim"].get("readOnly"):
            errs.append("the keys claim must be mounted readOnly")
    res = c.get("resources", {})
    errs += cpu_rules(c, env, res)
    for r in ("cpu", "memory"):
        if quantity(res.get("limits", {}).get(r, 0)) < quantity(res.get("requests", {}).get(r, 0)):
            errs.append(f"{r} limit below its request")
    component = d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")
    circuits = env.get("ENYGMA_CIRCUITS")
    if component != "prover" and circuits != component:
        errs.append(f"a Deployment of component {component} must host that statement (ENYGMA_CIRCUITS={circuits})")
    return errs


def scaledobject_rules(so: dict, deployments: dict[str, dict]) -> list[str]:
    errs = []
    target = so["spec"]["scaleTargetRef"]
    d = deployments.get(target.get("name"))
    if target.get("kind", "Deployment") != "Deployment" or d is None:
        return [f"scaleTargetRef {target} is not a Deployment of this render"]
    component = d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
    namespace = so["metadata"].get("namespace")
    for t in so["spec"]["triggers"]:
        q = t["metadata"].get("query", "")
        for selector in re.findall(r"\{([^}]*)\}", q):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', selector))
            want = {"job": "enygma-server", "namespace": namespace, "component": component}
            got = {k: labels.get(k) for k in want}
            if got != want:
                errs.append(f"trigger {t.get('name')}: selector {{{selector}}} must select {want}")
        if t.get("metricType", "AverageValue") != "AverageValue":
            errs.append(f"trigger {t.get('name')}: thresholds here are per replica (AverageValue)")
    return errs


def network_policy_rules(docs: list[dict], deployments: dict[str, dict]) -> list[str]:
    """Every Deployment's pods are selected by a NetworkPolicy of the render that admits
    ingress only on named ports, each from a namespace selector, and egress to nobody (or DNS
    alone)."""
    errs = []
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    for name, d in deployments.items():
        labels = d["spec"]["template"]["metadata"]["labels"]
        covering = [
            p for p in policies
            if all(labels.get(k) == v for k, v in p["spec"]["podSelector"].get("matchLabels", {}).items())
        ]
        if not covering:
            errs.append(f"Deployment/{name}: no NetworkPolicy selects its pods")
        for p in covering:
            for rule in p["spec"].get("ingress", []):
                if not rule.get("from") or not rule.get("ports"):
                    errs.append(f"NetworkPolicy/{p['metadata']['name']}: an ingress rule open to every source or port")
        egress_closed = [
            p for p in covering
            if "Egress" in p["spec"].get("policyTypes", [])
            and all(port.get("port") == 53 for rule in p["spec"].get("egress", []) for port in rule.get("ports", [{}]))
        ]
        if covering and not egress_closed:
            errs.append(f"Deployment/{name}: no NetworkPolicy closes its pods' egress (policyTypes Egress, no rule but DNS)")
    return errs


def namespace_rules(docs: list[dict]) -> list[str]:
    """Every Namespace of the render enforces the `restricted` Pod Security profile."""
    return [
        f"Namespace/{d['metadata']['name']}: no pod-security.kubernetes.io/enforce: restricted"
        for d in docs
        if d["kind"] == "Namespace"
        and d["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce") != "restricted"
    ]


def check(docs: list[dict], version: str, alert_timeout: float | None, dev: bool = False) -> list[str]:
    errs = []
    for d in docs:
        if (d.get("apiVersion"), d.get("kind")) not in CRD_KINDS:
            errs += [f"{d['kind']}/{d['metadata']['name']}: {e}" for e in schema_errors(d, version)]
    scaled = [d for d in docs if (d.get("apiVersion"), d.get("kind")) in CRD_KINDS]
    for so, so_errs in zip(scaled, scaledobject_errors(scaled)):
        errs += [f"ScaledObject/{so['metadata']['name']}: {e}" for e in so_errs]
        behavior = so["spec"].get("advanced", {}).get("horizontalPodAutoscalerConfig", {}).get("behavior")
        if behavior is not None:
            hpa = {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "behavior-of-" + so["metadata"]["name"]},
                "spec": {"scaleTargetRef": so["spec"]["scaleTargetRef"], "maxReplicas": 1, "behavior": behavior},
            }
            errs += [f"ScaledObject/{so['metadata']['name']} behavior: {e}" for e in schema_errors(hpa, version)]
    deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
    for name, d in deployments.items():
        errs += [f"Deployment/{name}: {e}" for e in deployment_rules(d, dev)]
        env = env_of(d["spec"]["template"]["spec"]["containers"][0])
        timeout = seconds(env.get("ENYGMA_QUEUE_TIMEOUT", "30s"))
        if alert_timeout is not None and timeout != alert_timeout:
            errs.append(f"Deployment/{name}: queue timeout {timeout} s, but EnygmaP99OverQueueTimeout uses {alert_timeout} s")
    for so in scaled:
        errs += [f"ScaledObject/{so['metadata']['name']}: {e}" for e in scaledobject_rules(so, deployments)]
    errs += network_policy_rules(docs, deployments)
    errs += namespace_rules(docs)
    for h in (d for d in docs if d["kind"] == "HorizontalPodAutoscaler"):
        if h["spec"]["scaleTargetRef"]["name"] not in deployments:
            errs.append(f"HorizontalPodAutoscaler/{h['metadata']['name']}: target is not a Deployment of this render")
    return errs


def alert_queue_timeout(rules_file: Path) -> float:
    rules = yaml.safe_load(rules_file.read_text())
    (rule,) = [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == "EnygmaP99OverQueueTimeout"]
    (value,) = QUEUE_TIMEOUT_ALERT.findall(rule["expr"])
    return float(value)


def self_test(docs: list[dict], version: str, alert_timeout: float) -> list[str]:
    """Each break must be reported; returns the breaks that were not."""

    def container(ds):
        return first_in(ds, "Deployment")["spec"]["template"]["spec"]["containers"][0]

    def first_in(ds, kind):
        return next(d for d in ds if d["kind"] == kind)

    breaks = {
        "unknown Deployment field": lambda ds: first_in(ds, "Deployment")["spec"].update(replica=3),
        "Service port as a string": lambda ds: first_in(ds, "Service")["spec"]["ports"][0].update(port="3003"),
        "ScaledObject threshold as a number": lambda ds: first_in(ds, "ScaledObject")["spec"]["triggers"][0]["metadata"].update(threshold=1.6),
        "misspelt ScaledObject field": lambda ds: first_in(ds, "ScaledObject")["spec"].update(pollinInterval=15),
        "bad HPA behavior in a ScaledObject": lambda ds: first_in(ds, "ScaledObject")["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleUp"].update(window=1),
        "query selecting another component": lambda ds: first_in(ds, "ScaledObject")["spec"]["triggers"][1]["metadata"].update(
            query=first_in(ds, "ScaledObject")["spec"]["triggers"][1]["metadata"]["query"].replace('component="', 'component="x')),
        "ScaledObject on a missing Deployment": lambda ds: first_in(ds, "ScaledObject")["spec"]["scaleTargetRef"].update(name="nope"),
        "grace period within the drain": lambda ds: first_in(ds, "Deployment")["spec"]["template"]["spec"].update(terminationGracePeriodSeconds=60),
        "keys mounted writable": lambda ds: container(ds)["volumeMounts"][0].pop("readOnly"),
        "no --require-keys": lambda ds: container(ds).update(args=[]),
        "CPU request other than the slots": lambda ds: container(ds)["resources"]["requests"].update(cpu="1"),
        "fractional CPUs with the default threads": lambda ds: [container(ds)["resources"][r].update(cpu="1500m") for r in ("requests", "limits")],
        "CPU limit above the request with the default threads": lambda ds: container(ds)["resources"]["limits"].update(cpu="3"),
        "no CPU limit with the default threads": lambda ds: container(ds)["resources"]["limits"].pop("cpu"),
        "ENYGMA_MAX_INFLIGHT alone": lambda ds: container(ds)["env"].append({"name": "ENYGMA_MAX_INFLIGHT", "value": "2"}),
        "ENYGMA_PROVE_THREADS alone": lambda ds: container(ds)["env"].append({"name": "ENYGMA_PROVE_THREADS", "value": "1"}),
        "--prove-threads alone, as a flag": lambda ds: container(ds)["args"].extend(["--prove-threads", "1"]),
        "pool per slot, CPU request other than the product": lambda ds: container(ds)["env"].extend(
            [{"name": "ENYGMA_MAX_INFLIGHT", "value": "2"}, {"name": "ENYGMA_PROVE_THREADS", "value": "2"}]),
        "liveness on /readyz": lambda ds: container(ds)["livenessProbe"]["httpGet"].update(path="/readyz"),
        "no TLS": lambda ds: container(ds).update(env=[e for e in container(ds)["env"] if e["name"] != "ENYGMA_TLS_CERT"]),
        "no tokens": lambda ds: container(ds).update(env=[e for e in container(ds)["env"] if e["name"] != "ENYGMA_AUTH_TOKEN_FILE"]),
        "development keys allowed": lambda ds: [e.update(value="false") for e in container(ds)["env"] if e["name"] == "ENYGMA_REQUIRE_CEREMONY_KEYS"],
        "readiness on the API port": lambda ds: container(ds)["readinessProbe"]["httpGet"].update(port="https"),
        "admin listener on loopback": lambda ds: [e.update(value="127.0.0.1:9464") for e in container(ds)["env"] if e["name"] == "ENYGMA_ADMIN_BIND"],
        "no NetworkPolicy": lambda ds: ds.remove(first_in(ds, "NetworkPolicy")),
        "NetworkPolicy open to every source": lambda ds: first_in(ds, "NetworkPolicy")["spec"]["ingress"][0].pop("from"),
        "NetworkPolicy without egress": lambda ds: first_in(ds, "NetworkPolicy")["spec"].update(policyTypes=["Ingress"]),
        "NetworkPolicy open to every destination": lambda ds: first_in(ds, "NetworkPolicy")["spec"].update(egress=[{}]),
        "shared secret files allowed": lambda ds: container(ds)["env"].append({"name": "ENYGMA_ALLOW_SHARED_SECRET_FILES", "value": "true"}),
        "namespace without Pod Security": lambda ds: first_in(ds, "Namespace")["metadata"].pop("labels"),
        "queue timeout other than the alert's": lambda ds: [e.update(value="30s") for e in container(ds)["env"] if e["name"] == "ENYGMA_QUEUE_TIMEOUT"],
        "unknown kind": lambda ds: ds.append({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
    }
    missed = []
    for name, brk in breaks.items():
        broken = copy.deepcopy(docs)
        brk(broken)
        if not check(broken, version, alert_timeout):
            missed.append(name)
    return missed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kubernetes-version", required=True)
    p.add_argument("--rules", type=Path, required=True, help="the alert rules file")
    p.add_argument("--self-test", metavar="DIR", type=Path, help="break this render in known ways")
    p.add_argument("--expect-refused", metavar="DIR", type=Path, nargs="*", default=[],
                   help="renders that the checks must refuse")
    p.add_argument("dirs", nargs="+", type=Path)
    a = p.parse_args()
    alert_timeout = alert_queue_timeout(a.rules)
    passed = failed = 0
    for d in a.expect_refused:
        errs = check(render(d), a.kubernetes_version, alert_timeout, d.name == DEV_OVERLAY)
        if errs:
            passed += 1
            print(f"ok   {d}: refused as it must be ({errs[0]}{', ...' if len(errs) > 1 else ''})")
        else:
            failed += 1
            print(f"FAIL {d}: accepted, but it must be refused")
    for d in a.dirs:
        docs = render(d)
        errs = check(docs, a.kubernetes_version, alert_timeout, d.name == DEV_OVERLAY)
        kinds = sorted({x["kind"] for x in docs})
        if errs:
            failed += 1
            print(f"FAIL {d}: {len(docs)} objects")
            for e in errs:
                print(f"  {e}")
        else:
            passed += 1
            print(f"ok   {d}: {len(docs)} objects ({', '.join(kinds)}) valid for Kubernetes {a.kubernetes_version}")
    if a.self_test:
        missed = self_test(render(a.self_test), a.kubernetes_version, alert_timeout)
        if missed:
            failed += 1
            print(f"FAIL self-test: breaks not reported: {', '.join(missed)}")
        else:
            passed += 1
            print(f"ok   self-test: every known break of {a.self_test} is reported")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
