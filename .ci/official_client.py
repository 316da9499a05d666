"""The official Kubernetes Python client against `loadgen apiserver`, with the kubeconfig it
writes: HTTPS verified against the CA in it, the admin's client certificate, CRUD, a watch,
a TokenRequest whose token RBAC then refuses (403) until a Role allows it, and 401 without
credentials. Run by .ci/real_clients.sh."""

import json
import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

kubeconfig = sys.argv[1]
config.load_kube_config(config_file=kubeconfig)
core = client.CoreV1Api()
rbac = client.RbacAuthorizationV1Api()

pod = client.V1Pod(
    metadata=client.V1ObjectMeta(name="from-python"),
    spec=client.V1PodSpec(containers=[client.V1Container(name="app", image="registry.invalid/app:1")]),
)
created = core.create_namespaced_pod("default", pod)
assert created.metadata.resource_version, "the server returned a resourceVersion"
names = [p.metadata.name for p in core.list_namespaced_pod("default").items]
assert "from-python" in names, names

w = watch.Watch()
seen = []
for event in w.stream(core.list_namespaced_pod, "default", timeout_seconds=2,
                      resource_version="1"):
    seen.append((event["type"], event["object"].metadata.name))
    if ("ADDED", "from-python") in seen:
        w.stop()
assert ("ADDED", "from-python") in seen, seen

core.create_namespaced_service_account("default", client.V1ServiceAccount(
    metadata=client.V1ObjectMeta(name="python-robot")))
token = core.create_namespaced_service_account_token(
    "python-robot", "default",
    client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)),
).status.token

robot_config = client.Configuration.get_default_copy()
robot_config.cert_file = None
robot_config.key_file = None
robot_config.api_key = {"authorization": "Bearer " + token}
robot = client.CoreV1Api(client.ApiClient(robot_config))
try:
    robot.list_namespaced_pod("default")
    raise SystemExit("a ServiceAccount without a binding listed Pods")
except ApiException as e:
    assert e.status == 403, e
    status = json.loads(e.body)
    assert status["reason"] == "Forbidden", status
    assert 'cannot list resource "pods"' in status["message"], status

rbac.create_namespaced_role("default", client.V1Role(
    metadata=client.V1ObjectMeta(name="pod-reader"),
    rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["list"])]))
rbac.create_namespaced_role_binding("default", client.V1RoleBinding(
    metadata=client.V1ObjectMeta(name="robot-reads-pods"),
    role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="pod-reader"),
    subjects=[client.RbacV1Subject(kind="ServiceAccount", name="python-robot", namespace="default")]))
assert "from-python" in [p.metadata.name for p in robot.list_namespaced_pod("default").items]

anonymous_config = client.Configuration.get_default_copy()
anonymous_config.cert_file = None
anonymous_config.key_file = None
anonymous = client.CoreV1Api(client.ApiClient(anonymous_config))
try:
    anonymous.list_namespaced_pod("default")
    raise SystemExit("an anonymous request was served")
except ApiException as e:
    assert e.status == 401, e

core.delete_namespaced_pod("from-python", "default", grace_period_seconds=0)
print("official Python client: ok (TLS, client certificate, CRUD, watch, TokenRequest, 403, 401)")
