//! Fixtures shared by the benchmarks: realistic Pod and ReplicaSet JSON, and jemalloc's count of
//! allocated bytes.

pub mod owners;

pub use owners::realistic_replicaset_json;
use serde_json::json;

/// Bytes the program holds now (jemalloc `stats.allocated`, its stats epoch advanced first; 0
/// when jemalloc is not the allocator).
pub fn jemalloc_allocated() -> u64 {
    let _ = tikv_jemalloc_ctl::epoch::advance();
    tikv_jemalloc_ctl::stats::allocated::read().map_or(0, |v| v as u64)
}

/// A Pod of about 5 KB of JSON, managedFields included, as kwok-based scale tests produce.
pub fn pod_json(namespace: &str, name: &str, owner: &str, rv: u64) -> Vec<u8> {
    let managed: Vec<_> = (0..6)
        .map(|i| {
            json!({"manager": format!("kube-controller-manager-{i}"), "operation": "Update", "apiVersion": "v1",
                   "time": "2026-12-02T15:03:38Z", "fieldsType": "FieldsV1",
                   "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                                "f:ownerReferences": {".": {}, "k:{\"uid\":\"x\"}": {}}},
                                "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}})
        })
        .collect();
    serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("0f6c6e2a-{name}"),
            "resourceVersion": rv.to_string(), "creationTimestamp": "2026-12-02T15:03:38Z",
            "generateName": format!("{owner}-"),
            "labels": {"app": owner, "pod-template-hash": "7d9f8b6c5d", "tier": "web"},
            "annotations": {"kubernetes.io/psp": "restricted", "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                "uid": format!("rs-uid-{owner}"), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": managed},
        "spec": {"nodeName": "node-17", "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default", "schedulerName": "default-scheduler",
            "containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
                "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
                "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}]},
        "status": {"phase": "Running", "hostIP": "10.0.0.17", "podIP": "10.244.17.3", "qosClass": "Burstable",
            "startTime": "2026-12-02T15:03:39Z",
            "conditions": [{"type": "Initialized", "status": "True", "lastTransitionTime": "2026-12-02T15:03:39Z"},
                           {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-02T15:03:41Z"},
                           {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-12-02T15:03:41Z"},
                           {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-02T15:03:38Z"}],
            "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0, "started": true,
                "image": "registry.k8s.io/pause:3.10", "imageID": "sha256:873ed75102791e5b0b8a7fcd41606c92fcec98d56d05ead4ac5131650004c136",
                "containerID": "containerd://4f1e2d3c4b5a69788796a5b4c3d2e1f0", "state": {"running": {"startedAt": "2026-12-02T15:03:40Z"}}}]}
    }))
    .unwrap_or_default()
}
