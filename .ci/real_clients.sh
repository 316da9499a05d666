#!/usr/bin/env bash
# Real clients against `loadgen apiserver` with the kubeconfig it writes: kubectl and the
# official Python client. Installs them when missing (Debian's kubernetes-client, PyPI's
# kubernetes), so a clean machine runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
release="${CARGO_TARGET_DIR:-target}/release"
if ! command -v kubectl >/dev/null; then
  echo "installing kubectl (Debian kubernetes-client)"
  (sudo -n true 2>/dev/null && sudo apt-get install -y -q kubernetes-client) || apt-get install -y -q kubernetes-client
fi
if ! python3 -c "import kubernetes" 2>/dev/null; then
  echo "installing the official Python client"
  pip install -q kubernetes==37.0.2
fi
dir="$(mktemp -d)"
"$release"/loadgen apiserver --kubeconfig-out "$dir/kubeconfig" --no-kubelet > "$dir/out" 2> "$dir/err" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$dir/kubeconfig" ] && break; sleep 0.1; done
k() { kubectl --kubeconfig "$dir/kubeconfig" "$@"; }
k version -o json > /dev/null
# kubectl's typed commands (create namespace, create token, auth can-i) send protobuf, which
# the simulator does not speak yet (415): apply and --raw send JSON.
cat <<'YAML' | k apply -f - > /dev/null
apiVersion: v1
kind: Namespace
metadata:
  name: ci
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: reader
  namespace: ci
YAML
k get namespaces | grep -q '^ci '
k get serviceaccounts -n ci | grep -q '^reader '
review='{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"delete","resource":"nodes"}}}'
echo "$review" | k create --raw /apis/authorization.k8s.io/v1/selfsubjectaccessreviews -f - | grep -q '"allowed":true'
request='{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":600}}'
token="$(echo "$request" | k create --raw /api/v1/namespaces/ci/serviceaccounts/reader/token -f - \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["token"])')"
# A kubeconfig of the ServiceAccount alone: with the admin's certificate beside the token, the
# certificate would authenticate first (as kube-apiserver's union authenticator orders them).
python3 - "$dir/kubeconfig" "$dir/reader" "$token" <<'PY'
import sys, yaml
kc = yaml.safe_load(open(sys.argv[1]))
kc["users"] = [{"name": "loadgen", "user": {"token": sys.argv[3]}}]
yaml.safe_dump(kc, open(sys.argv[2], "w"))
PY
if kubectl --kubeconfig "$dir/reader" get pods -n ci 2> "$dir/forbidden"; then
  echo "kubectl: a ServiceAccount without a binding listed Pods" >&2
  exit 1
fi
grep -q 'cannot list resource "pods"' "$dir/forbidden"
# A CustomResourceDefinition, then an object of it: applied twice (the second apply is a merge
# patch, as kubectl sends for custom resources), listed by plural and by short name.
cat <<'YAML' | k apply -f - > /dev/null
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
YAML
k wait --for condition=Established crd/widgets.example.com --timeout=10s > /dev/null
for size in 3 4; do
  printf 'apiVersion: example.com/v1alpha1\nkind: Widget\nmetadata: {name: gear, namespace: ci}\nspec: {size: %s}\n' "$size" \
    | k apply -f - > /dev/null
done
k get widgets -n ci | grep -q '^gear '
[ "$(k get wd gear -n ci -o jsonpath='{.spec.size}')" = 4 ]
echo "kubectl: ok (TLS, client certificate, apply, get, SelfSubjectAccessReview, TokenRequest, 403 as a ServiceAccount, a CRD and a custom object)"
python3 .ci/official_client.py "$dir/kubeconfig"

# kubectl rollout status judges a StatefulSet rollout from the status Tidemark writes: a second
# server with its kubelet, `tidemark run` against it, a set rolled out and then given a new image.
roll="$(mktemp -d)"
"$release"/loadgen apiserver --kubeconfig-out "$roll/kubeconfig" > "$roll/out" 2> "$roll/err" &
roll_server=$!
for _ in $(seq 1 100); do [ -s "$roll/kubeconfig" ] && break; sleep 0.1; done
"$release"/tidemark run --kubeconfig "$roll/kubeconfig" --controllers statefulset \
  --leader-elect=false --secure-port 0 --duration 120s > "$roll/tidemark.log" 2>&1 &
manager=$!
trap 'kill $server $roll_server $manager 2>/dev/null || true' EXIT
r() { kubectl --kubeconfig "$roll/kubeconfig" -n default "$@"; }
cat <<'YAML' | r apply -f - > /dev/null
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "registry.k8s.io/pause:3.10"}]}
YAML
r rollout status sts/db --timeout=60s > /dev/null
r patch sts db --type merge \
  -p '{"spec":{"template":{"spec":{"containers":[{"name":"db","image":"registry.k8s.io/pause:3.11"}]}}}}' > /dev/null
r rollout status sts/db --timeout=60s > /dev/null
images="$(r get pods -o 'jsonpath={range .items[*]}{.spec.containers[0].image}{"\n"}{end}' | sort -u)"
if [ "$images" != "registry.k8s.io/pause:3.11" ]; then
  echo "kubectl rollout status: the rollout ended with images: $images" >&2
  cat "$roll/tidemark.log" >&2
  exit 1
fi
echo "kubectl rollout status: ok (a StatefulSet rolled out, then rolled to a new image, every Pod replaced)"
