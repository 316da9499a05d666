#!/usr/bin/env python3
"""Checks deploy/ without a cluster: every overlay renders, every object is valid against the
schema of the Kubernetes version targeted (unknown fields refused), the objects refer to each
other correctly, every flag of the Deployment parses with the real `tidemark run`, and the
Dockerfile copies the binary the release build makes.

    python3 deploy/test/check_manifests.py --tidemark target/release/tidemark

Needs kubectl (kustomize is built in), kubernetes-validate and cloudcoil's prometheus-operator
models (.ci/deploy.sh installs both). Prints one line a check and closes with "N passed, N failed".
"""

import argparse
import copy
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parent.parent
REPO = DEPLOY.parent
# KEP-5647 (stale controller consistency) is v1.36's: the version Tidemark stands in for.
KUBERNETES_VERSION = "1.36.0"
OVERLAYS = ["base", "overlays/canary", "overlays/canary-nodes", "overlays/production"]
CONTROLLER_BINDINGS = {
    "replicaset": "tidemark:controller:replicaset-controller",
    "statefulset": "tidemark:controller:statefulset-controller",
    "daemonset": "tidemark:controller:daemonset-controller",
    "job": "tidemark:controller:job-controller",
    "nodelifecycle": "tidemark:controller:nodelifecycle-controller",
}
# What distroless/cc-debian12 ships of the libraries a Rust binary links dynamically.
RUNTIME_LIBS = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2",
                "libdl.so.2", "libpthread.so.0", "librt.so.1"}
# `tidemark run` refuses --metrics-addr without --embedded only after clap has parsed every flag
# and the flags' values have been checked (feature gates, controllers, leader election timings,
# shards), and before it reads a kubeconfig, binds a port or connects anywhere: appending it makes
# a dry run of a command line that reaches nothing.
SENTINEL_FLAG = "--metrics-addr=127.0.0.1:1"
SENTINEL_TEXT = "--metrics-addr 127.0.0.1:1 serves plain HTTP without authentication and is for --embedded only"


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            print(f"ok: {what}")
        else:
            self.failed += 1
            print(f"FAILED: {what}{': ' + detail if detail else ''}")
        return ok


def render(overlay):
    out = subprocess.run(["kubectl", "kustomize", str(DEPLOY / overlay)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def find(docs, kind, name=None):
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs, kind):
    found = find(docs, kind)
    if len(found) != 1:
        raise RuntimeError(f"expected one {kind}, found {len(found)}")
    return found[0]


def matches(selector, labels):
    """A label selector (matchLabels and matchExpressions, or a plain map) against labels."""
    if "matchLabels" in selector or "matchExpressions" in selector:
        plain = selector.get("matchLabels", {})
        for e in selector.get("matchExpressions", []):
            value = labels.get(e["key"])
            op = e["operator"]
            if op == "In" and value not in e["values"]:
                return False
            if op == "NotIn" and value in e["values"]:
                return False
            if op == "Exists" and e["key"] not in labels:
                return False
            if op == "DoesNotExist" and e["key"] in labels:
                return False
    else:
        plain = selector
    return bool(plain) and all(labels.get(k) == v for k, v in plain.items())


def unknown_fields(given, kept, path=""):
    """Fields of `given` that a pydantic model dropped: cloudcoil's models ignore unknown fields,
    so what validation kept, dumped back, shows what it did not know."""
    if isinstance(given, dict):
        if not isinstance(kept, dict):
            return [path or "."]
        missing = []
        for k, v in given.items():
            if k not in kept:
                missing.append(f"{path}.{k}")
            else:
                missing += unknown_fields(v, kept[k], f"{path}.{k}")
        return missing
    if isinstance(given, list) and isinstance(kept, list) and len(given) == len(kept):
        return [m for i, (g, k) in enumerate(zip(given, kept)) for m in unknown_fields(g, k, f"{path}[{i}]")]
    return []


def validate_schema(c, overlay, docs):
    import kubernetes_validate
    from cloudcoil.models.prometheus_operator import v1 as monitoring

    crds = {"ServiceMonitor": monitoring.ServiceMonitor, "PrometheusRule": monitoring.PrometheusRule}
    for d in docs:
        what = f"{overlay}: {d['kind']} {d['metadata']['name']} is valid"
        if d["kind"] in crds:
            try:
                model = crds[d["kind"]].model_validate(copy.deepcopy(d))
            except Exception as e:  # pydantic's ValidationError, with every field at fault
                c.check(False, what + " (prometheus-operator CRD)", str(e).replace("\n", " "))
                continue
            kept = model.model_dump(by_alias=True, exclude_unset=True, mode="json")
            extra = unknown_fields(d, kept)
            c.check(not extra, what + " (prometheus-operator CRD, unknown fields refused)", f"unknown fields {extra}")
            continue
        try:
            kubernetes_validate.validate(d, KUBERNETES_VERSION, strict=True)
            c.check(True, what + f" (Kubernetes {KUBERNETES_VERSION} OpenAPI, strict)")
        except Exception as e:
            c.check(False, what + f" (Kubernetes {KUBERNETES_VERSION} OpenAPI, strict)", str(e).splitlines()[0])


def served_paths():
    """The paths the binary routes, read from its router."""
    text = (REPO / "actors/src/metrics/endpoints.rs").read_text()
    return set(re.findall(r'\.route\("(/[^"]*)"', text))


def flag_values(args, name):
    """Values of `--name=value` or `--name value` in args."""
    values = []
    for i, a in enumerate(args):
        if a == f"--{name}" and i + 1 < len(args):
            values.append(args[i + 1])
        elif a.startswith(f"--{name}="):
            values.append(a.split("=", 1)[1])
    return values


def dry_run(tidemark, args):
    """(parsed, output) of `tidemark ARGS` stopped right after its flags were checked."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "RUST_BACKTRACE", "RUST_LOG")}
    env["HOME"] = tempfile.mkdtemp()
    out = subprocess.run([tidemark, *args, SENTINEL_FLAG], capture_output=True, text=True, env=env, timeout=30)
    text = out.stdout + out.stderr
    return SENTINEL_TEXT in text and out.returncode == 2, text.strip()


def cross_references(c, overlay, docs, tidemark, dockerfile_user):
    dep = one(docs, "Deployment")
    ns = dep["metadata"]["namespace"]
    pod = dep["spec"]["template"]
    spec = pod["spec"]
    labels = pod["metadata"]["labels"]
    container = spec["containers"][0]
    args = container["args"]
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}

    sa = spec.get("serviceAccountName")
    c.check(bool(find([d for d in docs if d["metadata"].get("namespace") == ns], "ServiceAccount", sa)),
            f"{overlay}: the Deployment's ServiceAccount {ns}/{sa} is in the manifests")
    bound = [b for b in find(docs, "ClusterRoleBinding") + find(docs, "RoleBinding")
             if any(s.get("kind") == "ServiceAccount" and s.get("name") == sa and s.get("namespace") == ns
                    for s in b.get("subjects", []))]
    roles = {(d["kind"], d["metadata"]["name"]) for d in find(docs, "ClusterRole") + find(docs, "Role")}
    missing = [b["roleRef"]["name"] for b in bound if (b["roleRef"]["kind"], b["roleRef"]["name"]) not in roles]
    c.check(bound and not missing, f"{overlay}: every binding of the ServiceAccount names a role in the manifests",
            f"missing roles {missing}")

    c.check(matches(dep["spec"]["selector"], labels), f"{overlay}: the Deployment's selector selects its Pod template")
    scale_out = flag_values(args, "scale-out") == ["true"]
    if overlay == "overlays/production":
        c.check(dep["spec"]["replicas"] == 3 and scale_out and flag_values(args, "leader-elect") == ["true"],
                f"{overlay}: three replicas scaling out, with leader election")
    else:
        c.check(dep["spec"]["replicas"] == 2 and not scale_out and flag_values(args, "leader-elect") == ["true"],
                f"{overlay}: two replicas with leader election")

    svc = one(docs, "Service")
    c.check(svc["metadata"]["namespace"] == ns and matches(svc["spec"]["selector"], labels),
            f"{overlay}: the Service selects the Deployment's Pods")
    bad_targets = [p["targetPort"] for p in svc["spec"]["ports"]
                   if isinstance(p["targetPort"], str) and p["targetPort"] not in ports
                   or isinstance(p["targetPort"], int) and p["targetPort"] not in ports.values()]
    c.check(not bad_targets, f"{overlay}: the Service's target ports are container ports", str(bad_targets))
    # /readyz is ready only on the leader: without this the standby has no endpoint to scrape.
    c.check(svc["spec"].get("publishNotReadyAddresses") is True,
            f"{overlay}: the Service publishes not-ready addresses, so the standby is scraped too")

    sm = one(docs, "ServiceMonitor")
    sm_ns = sm["spec"].get("namespaceSelector", {})
    c.check(matches(sm["spec"]["selector"], svc["metadata"].get("labels", {}))
            and (sm_ns.get("any") or ns in sm_ns.get("matchNames", [sm["metadata"]["namespace"]])),
            f"{overlay}: the ServiceMonitor selects the Service")
    svc_ports = {p.get("name") for p in svc["spec"]["ports"]}
    for ep in sm["spec"]["endpoints"]:
        c.check(ep.get("port") in svc_ports, f"{overlay}: ServiceMonitor port {ep.get('port')!r} is a port of the Service")
        c.check(ep.get("path", "/metrics") in served_paths() and ep.get("scheme") == "https",
                f"{overlay}: the ServiceMonitor scrapes a served path over HTTPS (the secure port)")

    secure_port = int((flag_values(args, "secure-port") or ["10257"])[-1])
    allowed = ",".join(flag_values(args, "authorization-always-allow-paths") or ["/healthz,/readyz,/livez"]).split(",")
    for kind, want in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        probe = container.get(kind, {}).get("httpGet", {})
        port = probe.get("port")
        port = ports.get(port) if isinstance(port, str) else port
        c.check(probe.get("path") == want and want in served_paths(),
                f"{overlay}: {kind} asks {want}, which the binary serves")
        c.check(port == secure_port and probe.get("scheme") == "HTTPS",
                f"{overlay}: {kind} hits the secure port ({secure_port}) over HTTPS")
        # The kubelet sends no credentials: a path that needs them would fail every probe.
        c.check(probe.get("path") in allowed, f"{overlay}: {kind}'s path needs no credentials (--authorization-always-allow-paths)")

    psc = spec.get("securityContext", {})
    csc = container.get("securityContext", {})
    seccomp = (csc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
    c.check((psc.get("runAsNonRoot") or csc.get("runAsNonRoot")) is True
            and csc.get("allowPrivilegeEscalation") is False
            and csc.get("readOnlyRootFilesystem") is True
            and seccomp == "RuntimeDefault"
            and "ALL" in csc.get("capabilities", {}).get("drop", []),
            f"{overlay}: non-root, no privilege escalation, read-only root, seccomp RuntimeDefault, no capabilities")
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    c.check(uid is not None and str(uid) == dockerfile_user.split(":")[0],
            f"{overlay}: the Pod runs as the image's user ({dockerfile_user})", f"runAsUser {uid}")
    res = container.get("resources", {})
    units = {"": 1, "m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}

    def quantity(q):
        m = re.fullmatch(r"([0-9.]+)(m|Ki|Mi|Gi|)", str(q))
        return float(m.group(1)) * units[m.group(2)]

    ok = all(r in res.get(k, {}) for k in ("requests", "limits") for r in ("cpu", "memory")) and all(
        quantity(res["requests"][r]) <= quantity(res["limits"][r]) for r in ("cpu", "memory"))
    c.check(ok, f"{overlay}: CPU and memory requested and limited, requests within limits", json.dumps(res))

    pdb = one(docs, "PodDisruptionBudget")
    c.check(matches(pdb["spec"]["selector"], labels), f"{overlay}: the PodDisruptionBudget selects the Pods")
    # A drain while the standby is not ready (always: /readyz needs the Lease): 2 Pods, 1 healthy.
    # Scaled out, every replica holding a range is ready.
    expected = dep["spec"]["replicas"]
    healthy = expected if scale_out else 1
    if "maxUnavailable" in pdb["spec"]:
        mu = pdb["spec"]["maxUnavailable"]
        mu = -(-expected * int(mu[:-1]) // 100) if isinstance(mu, str) else mu
        desired = max(0, expected - mu)
    else:
        ma = pdb["spec"].get("minAvailable", 0)
        desired = -(-expected * int(ma[:-1]) // 100) if isinstance(ma, str) else ma
    c.check(healthy - desired >= 1 and pdb["spec"].get("unhealthyPodEvictionPolicy") == "AlwaysAllow",
            f"{overlay}: the PodDisruptionBudget lets a drain evict the leader and the not-ready standby",
            f"{healthy - desired} disruptions allowed")

    netpol = one(docs, "NetworkPolicy")
    c.check(matches(netpol["spec"]["podSelector"], labels), f"{overlay}: the NetworkPolicy applies to the Pods")
    ingress_ports = [p.get("port") for rule in netpol["spec"].get("ingress", []) for p in rule.get("ports", [])]
    c.check(any(p in ("https", secure_port) for p in ingress_ports),
            f"{overlay}: the NetworkPolicy lets scrapes reach the secure port")

    selected = flag_values(args, "controllers")[-1].split(",")
    every = selected == ["*"]
    for controller, binding in CONTROLLER_BINDINGS.items():
        on = every or controller in selected
        c.check(bool(find(docs, "ClusterRoleBinding", binding)) == on,
                f"{overlay}: {controller} is {'run and bound' if on else 'not run and not bound'}")

    parsed, output = dry_run(tidemark, args)
    c.check(parsed, f"{overlay}: every flag of the Deployment parses with `tidemark run` ({len(args) - 1} flags)", output)
    return args


def dockerfile_checks(c, tidemark):
    text = (DEPLOY / "Dockerfile").read_text()
    lines = re.sub(r"\\\n", " ", text).splitlines()
    instructions = [l.strip() for l in lines if l.strip() and not l.strip().startswith("#")]
    stages = [i for i in instructions if i.upper().startswith("FROM ")]
    build_stage = stages[0].split()[-1]
    workdir = next(i.split()[1] for i in instructions if i.upper().startswith("WORKDIR "))
    run = " ".join(i for i in instructions if i.upper().startswith("RUN "))
    build = re.search(r"cargo build ([^&;]*)", run)
    build_args = shlex.split(build.group(1)) if build else []

    meta = json.loads(subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
                                     cwd=REPO, capture_output=True, text=True, check=True).stdout)
    owner = [p["name"] for p in meta["packages"] for t in p["targets"] if "bin" in t["kind"] and t["name"] == "tidemark"]
    target_dir = Path(meta["target_directory"]).relative_to(REPO) if Path(meta["target_directory"]).is_relative_to(REPO) else None
    c.check(build is not None and "--release" in build_args and "--bin" in build_args
            and build_args[build_args.index("--bin") + 1] == "tidemark"
            and build_args[build_args.index("-p") + 1] in owner
            and not any(a.startswith(("--target", "--profile")) for a in build_args)
            and "CARGO_TARGET_DIR" not in text,
            "Dockerfile: builds the tidemark binary of its package with the release profile, default target",
            f"cargo build {' '.join(build_args)}; bin tidemark is in {owner}")
    # Where that command puts the binary: <target dir>/release/tidemark, as cargo metadata says.
    made = f"{target_dir}/release/tidemark" if target_dir else None
    copy_in_run = re.search(r"cp (\S+) (\S+)", run)
    copy_from = [i.split() for i in instructions if i.upper().startswith("COPY --FROM=")]
    if copy_in_run:
        src, staged = copy_in_run.group(1), copy_in_run.group(2)
        chain_ok = src in (made, f"{workdir}/{made}") and any(cf[0] == f"COPY" and cf[1] == f"--from={build_stage}"
                                                            and cf[2] == staged for cf in copy_from)
    else:
        chain_ok = any(cf[1] == f"--from={build_stage}" and cf[2] == f"{workdir}/{made}" for cf in copy_from)
    c.check(made is not None and chain_ok, f"Dockerfile: copies {made}, where that release build puts the binary")
    # The binary checked here came out of the same kind of build (CI's `cargo test --release`).
    c.check(Path(tidemark).parts[-2:] == ("release", "tidemark") and Path(tidemark).is_file(),
            f"Dockerfile: the binary dry-run here is a release build at <target>/release/tidemark ({tidemark})")

    rust = re.search(r"FROM rust:(\d+)\.(\d+)", text)
    floor = tuple(int(x) for x in re.search(r'rust-version = "(\d+)\.(\d+)', (REPO / "Cargo.toml").read_text()).groups())
    c.check(rust is not None and (int(rust.group(1)), int(rust.group(2))) >= floor,
            f"Dockerfile: its toolchain is at least the workspace's rust-version {floor[0]}.{floor[1]}")

    entry = json.loads(next(i for i in instructions if i.upper().startswith("ENTRYPOINT ")).split(None, 1)[1])
    cmd = json.loads(next(i for i in instructions if i.upper().startswith("CMD ")).split(None, 1)[1])
    copy_dest = copy_from[-1][-1]
    c.check(entry[0] == copy_dest, f"Dockerfile: the entrypoint is the binary it copied ({copy_dest})")
    parsed, output = dry_run(tidemark, entry[1:] + cmd)
    c.check(parsed, f"Dockerfile: its entrypoint and command ({' '.join(entry[1:] + cmd)}) parse", output)
    user = next(i.split()[1] for i in instructions if i.upper().startswith("USER "))
    c.check(user.split(":")[0].isdigit() and user.split(":")[0] != "0", f"Dockerfile: runs as a numeric non-root user ({user})")

    ldd = subprocess.run(["ldd", tidemark], capture_output=True, text=True).stdout
    libs = {Path(l.split()[0]).name for l in ldd.splitlines() if l.strip()}
    c.check(libs and libs <= RUNTIME_LIBS, "Dockerfile: the runtime image has every library the binary links",
            f"extra: {sorted(libs - RUNTIME_LIBS)}")
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    c.check("target" in ignore, "Dockerfile: the build context leaves target/ out")
    return user


def self_test(c, tidemark):
    """The dry run refuses what it must, so a pass above means something."""
    parsed, _ = dry_run(tidemark, ["run", "--controllers=*", "--no-such-flag"])
    c.check(not parsed, "dry run: an unknown flag is refused")
    parsed, _ = dry_run(tidemark, ["run", "--feature-gates=NoSuchGate=true"])
    c.check(not parsed, "dry run: a bad flag value is refused")
    parsed, _ = dry_run(tidemark, ["run", "--controllers=replicaset", "--shards=2"])
    c.check(parsed, "dry run: a good command line passes")
    sm = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "x", "namespace": "y"},
          "spec": {"selector": {}, "endpoints": [{"port": "https", "bearerTokenFil": "typo"}]}}
    probe = Checks()
    with open(os.devnull, "w") as null:
        stdout, sys.stdout = sys.stdout, null
        try:
            validate_schema(probe, "self-test", [sm, {"apiVersion": "v1", "kind": "Service",
                                                      "metadata": {"name": "x", "labelz": {}}, "spec": {}}])
        finally:
            sys.stdout = stdout
    c.check(probe.failed == 2, "schema validation: an unknown field is refused, in a CRD and in a core object")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tidemark", default=str(REPO / "target/release/tidemark"))
    a = parser.parse_args()
    c = Checks()
    self_test(c, a.tidemark)
    user = dockerfile_checks(c, a.tidemark)
    rendered = {}
    for overlay in OVERLAYS:
        try:
            docs = render(overlay)
        except RuntimeError as e:
            c.check(False, f"{overlay}: renders with kubectl kustomize", str(e))
            continue
        c.check(True, f"{overlay}: renders with kubectl kustomize ({len(docs)} objects)")
        rendered[overlay] = docs
        validate_schema(c, overlay, docs)
        cross_references(c, overlay, docs, a.tidemark, user)

    rule = yaml.safe_load((DEPLOY / "prometheus/alerts.yaml").read_text())
    plain = yaml.safe_load((DEPLOY / "prometheus/rules.yml").read_text())
    c.check(rule["spec"]["groups"] == plain["groups"], "prometheus: alerts.yaml's groups are rules.yml's")
    canary = rendered.get("overlays/canary")
    if canary:
        ctl = flag_values(one(canary, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"], "controllers")
        c.check(ctl == ["replicaset"], "canary: runs the ReplicaSet controller alone", str(ctl))
    nodes = rendered.get("overlays/canary-nodes")
    if nodes:
        args = one(nodes, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
        ctl = flag_values(args, "controllers")
        c.check(ctl == ["nodelifecycle"], "canary-nodes: runs node lifecycle alone", str(ctl))
        selector = flag_values(args, "node-selector")
        c.check(selector == ["tidemark.io/canary=true"], "canary-nodes: marks only the labelled pool", str(selector))
        bindings = {d["metadata"]["name"] for d in nodes if d["kind"] == "ClusterRoleBinding"}
        c.check("tidemark:controller:nodelifecycle-controller" in bindings
                and "tidemark:controller:replicaset-controller" not in bindings,
                "canary-nodes: node lifecycle's grants alone", str(sorted(bindings)))
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
