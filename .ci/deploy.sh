#!/usr/bin/env bash
# deploy/ without a cluster: the manifests render and validate, refer to each other and parse
# with the real binary; the alerts pass promtool's unit tests (one per cause), each test can
# fail, and a real Prometheus scraping a real `tidemark run` fires each alert on its cause.
# Everything talks to loopback only. Installs what it needs when missing: Debian's prometheus
# (promtool and the server), and from PyPI kubernetes-validate (the Kubernetes OpenAPI schemas)
# and cloudcoil's prometheus-operator models (the ServiceMonitor and PrometheusRule schemas).
set -euo pipefail
cd "$(dirname "$0")/.."
release="${CARGO_TARGET_DIR:-target}/release"

if ! command -v promtool > /dev/null || ! command -v prometheus > /dev/null; then
  echo "installing Debian's prometheus (promtool, server)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus > /dev/null
fi
# The Debian package starts a server on :9090 where systemd runs; ours picks its own port.
if ! python3 -c 'import kubernetes_validate' 2> /dev/null; then
  pip install -q kubernetes-validate==1.37.0
fi
if ! python3 -c 'import cloudcoil.models.prometheus_operator' 2> /dev/null; then
  pip install -q cloudcoil==0.6.0 cloudcoil-models-prometheus-operator==0.80.1.0
fi
command -v kubectl > /dev/null || { echo "kubectl is missing (its kustomize renders the overlays)" >&2; exit 1; }

echo "-- manifests: render, schema, cross-references, flags, Dockerfile"
python3 deploy/test/check_manifests.py --tidemark "$release/tidemark"

echo "-- alert rules: promtool check and unit tests (one per cause)"
python3 deploy/test/rules_cases.py --check
promtool check rules deploy/prometheus/rules.yml
promtool test rules deploy/prometheus/rules_test.yml
python3 deploy/test/mutate_rules.py

echo "-- alerts against a real Prometheus scraping tidemark under loadgen stress (loopback)"
python3 deploy/test/live_alerts.py --release "$release"
