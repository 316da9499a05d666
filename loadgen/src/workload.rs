//! Workload objects the demo, the stress runner and the tests seed the server with.

use serde_json::{Value, json};

/// A ReplicaSet `name` in `namespace` with selector and template label `app=<name>`, running
/// pause containers.
pub fn replicaset_manifest(namespace: &str, name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
            }
        }
    })
}

/// A StatefulSet `name` of the pause image with one claim template, `replicas` Pods, ordered or
/// parallel.
pub fn statefulset_manifest(namespace: &str, name: &str, replicas: i32, parallel: bool) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": if parallel { "Parallel" } else { "OrderedReady" },
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "db", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }]
        }
    })
}

/// A Job `name` of the pause image: `parallelism` at once until `completions` succeed.
pub fn job_manifest(
    namespace: &str,
    name: &str,
    parallelism: i32,
    completions: i32,
    indexed: bool,
) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"job": name}},
        "spec": {
            "parallelism": parallelism,
            "completions": completions,
            "backoffLimit": 6,
            "completionMode": if indexed { "Indexed" } else { "NonIndexed" },
            "template": {
                "metadata": {"labels": {"job": name}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
            }
        }
    })
}

/// A DaemonSet `name` of the pause image, on every Node.
pub fn daemonset_manifest(namespace: &str, name: &str) -> Value {
    daemonset_manifest_on(namespace, name, None)
}

/// A DaemonSet `name` of the pause image, on the Nodes labelled `<node_label>=true` (every Node
/// when `None`).
pub fn daemonset_manifest_on(namespace: &str, name: &str, node_label: Option<&str>) -> Value {
    let mut spec = json!({"containers": [{"name": "agent", "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]});
    if let Some(label) = node_label {
        spec["nodeSelector"] = json!({label: "true"});
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": spec
            }
        }
    })
}
