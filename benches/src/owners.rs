//! ReplicaSets as a cluster holds them: made by a Deployment, with a full Pod template (a
//! container with ports, env, resources, probes and volume mounts) and `metadata.managedFields`
//! entries of kube-controller-manager (spec and status) and kubectl (a scale), each with its
//! `fieldsV1` tree: about 5 KB of JSON, where the bench's lean ReplicaSets are 0.6 KB.

use serde_json::{Value, json};
use tidemark_loadgen::bench::pods::namespace_of;

/// ReplicaSet `rs` owning `replicas` Pods at resourceVersion `rv`, selecting the labels
/// `tidemark_loadgen::bench::pods::PodTemplates` gives its Pods (same name, namespace and UID).
pub fn realistic_replicaset_json(rs: u64, replicas: u64, rv: u64) -> Vec<u8> {
    let name = format!("web-{rs}");
    let hash = "7d9f8b6c5d";
    let labels = json!({"app": name, "pod-template-hash": hash, "tier": "web"});
    serde_json::to_vec(&json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": name, "namespace": namespace_of(rs),
            "uid": format!("{rs:08x}-7e2a-4c1d-8b6f-{rs:012x}"),
            "resourceVersion": rv.to_string(), "generation": 3,
            "creationTimestamp": "2026-12-02T15:03:30Z",
            "labels": labels,
            "annotations": {
                "deployment.kubernetes.io/desired-replicas": replicas.to_string(),
                "deployment.kubernetes.io/max-replicas": (replicas + replicas / 4 + 1).to_string(),
                "deployment.kubernetes.io/revision": "4"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": format!("web-{rs}-deploy"),
                "uid": format!("{rs:08x}-1b3d-4e5f-9a7c-{rs:012x}"), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": managed_fields()},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name, "pod-template-hash": hash}},
            "template": {
                "metadata": {"labels": labels,
                    "annotations": {"prometheus.io/port": "9102", "prometheus.io/scrape": "true"}},
                "spec": pod_spec()}},
        "status": {"replicas": replicas, "fullyLabeledReplicas": replicas, "readyReplicas": replicas,
            "availableReplicas": replicas, "observedGeneration": 3}
    }))
    .unwrap_or_default()
}

fn pod_spec() -> Value {
    let env: Vec<Value> = [
        ("LOG_LEVEL", "info"),
        ("HTTP_PORT", "8080"),
        ("METRICS_PORT", "9102"),
        ("UPSTREAM_URL", "http://backend.bench.svc.cluster.local:8080"),
    ]
    .iter()
    .map(|(k, v)| json!({"name": k, "value": v}))
    .chain([
        json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}),
        json!({"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}),
    ])
    .collect();
    let probe = |path: &str, delay: u64| {
        json!({"httpGet": {"path": path, "port": 8080, "scheme": "HTTP"}, "initialDelaySeconds": delay,
               "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3})
    };
    json!({
        "containers": [
            {"name": "web", "image": "registry.example.com/shop/web:1.24.3",
             "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                       {"name": "metrics", "containerPort": 9102, "protocol": "TCP"}],
             "env": env,
             "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
             "livenessProbe": probe("/healthz", 10), "readinessProbe": probe("/readyz", 5),
             "volumeMounts": [{"name": "config", "mountPath": "/etc/web", "readOnly": true},
                              {"name": "cache", "mountPath": "/var/cache/web"}],
             "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                 "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}},
             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
             "imagePullPolicy": "IfNotPresent"}],
        "volumes": [{"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}},
                    {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "web", "serviceAccount": "web", "schedulerName": "default-scheduler",
        "securityContext": {"fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}}
    })
}

/// The `fieldsV1` of a field set whose leaves are `names` (each `f:name: {}`).
fn leaves(names: &[&str]) -> Value {
    let mut map = serde_json::Map::new();
    map.insert(".".into(), json!({}));
    for name in names {
        map.insert(format!("f:{name}"), json!({}));
    }
    Value::Object(map)
}

fn managed_fields() -> Value {
    let container = json!({
        ".": {}, "f:env": {".": {},
            "k:{\"name\":\"LOG_LEVEL\"}": leaves(&["name", "value"]),
            "k:{\"name\":\"HTTP_PORT\"}": leaves(&["name", "value"]),
            "k:{\"name\":\"METRICS_PORT\"}": leaves(&["name", "value"]),
            "k:{\"name\":\"UPSTREAM_URL\"}": leaves(&["name", "value"]),
            "k:{\"name\":\"POD_NAME\"}": {".": {}, "f:name": {}, "f:valueFrom": {".": {}, "f:fieldRef": {}}},
            "k:{\"name\":\"POD_IP\"}": {".": {}, "f:name": {}, "f:valueFrom": {".": {}, "f:fieldRef": {}}}},
        "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
        "f:livenessProbe": {".": {}, "f:failureThreshold": {}, "f:httpGet": leaves(&["path", "port", "scheme"]),
            "f:initialDelaySeconds": {}, "f:periodSeconds": {}, "f:successThreshold": {}, "f:timeoutSeconds": {}},
        "f:readinessProbe": {".": {}, "f:failureThreshold": {}, "f:httpGet": leaves(&["path", "port", "scheme"]),
            "f:initialDelaySeconds": {}, "f:periodSeconds": {}, "f:successThreshold": {}, "f:timeoutSeconds": {}},
        "f:ports": {".": {},
            "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": leaves(&["containerPort", "name", "protocol"]),
            "k:{\"containerPort\":9102,\"protocol\":\"TCP\"}": leaves(&["containerPort", "name", "protocol"])},
        "f:resources": {".": {}, "f:limits": leaves(&["cpu", "memory"]), "f:requests": leaves(&["cpu", "memory"])},
        "f:securityContext": {".": {}, "f:allowPrivilegeEscalation": {}, "f:capabilities": leaves(&["drop"]),
            "f:readOnlyRootFilesystem": {}, "f:runAsNonRoot": {}},
        "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
        "f:volumeMounts": {".": {},
            "k:{\"mountPath\":\"/etc/web\"}": leaves(&["mountPath", "name", "readOnly"]),
            "k:{\"mountPath\":\"/var/cache/web\"}": leaves(&["mountPath", "name"])}
    });
    let spec = json!({
        "f:replicas": {}, "f:selector": {},
        "f:template": {
            "f:metadata": {"f:annotations": leaves(&["prometheus.io/port", "prometheus.io/scrape"]),
                           "f:labels": leaves(&["app", "pod-template-hash", "tier"])},
            "f:spec": {
                "f:containers": {"k:{\"name\":\"web\"}": container},
                "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                "f:securityContext": {".": {}, "f:fsGroup": {}, "f:seccompProfile": leaves(&["type"])},
                "f:serviceAccount": {}, "f:serviceAccountName": {}, "f:terminationGracePeriodSeconds": {},
                "f:volumes": {".": {},
                    "k:{\"name\":\"cache\"}": {".": {}, "f:emptyDir": leaves(&["sizeLimit"]), "f:name": {}},
                    "k:{\"name\":\"config\"}": {".": {}, "f:configMap": leaves(&["defaultMode", "name"]), "f:name": {}}}}}
    });
    json!([
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
         "time": "2026-12-01T09:12:44Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {
             "f:annotations": leaves(&["deployment.kubernetes.io/desired-replicas", "deployment.kubernetes.io/max-replicas",
                                      "deployment.kubernetes.io/revision"]),
             "f:labels": leaves(&["app", "pod-template-hash", "tier"]),
             "f:ownerReferences": {".": {}, "k:{\"uid\":\"deployment\"}": {}}},
             "f:spec": spec}},
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
         "time": "2026-12-02T15:03:41Z", "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": {"f:status": leaves(&["availableReplicas", "fullyLabeledReplicas", "observedGeneration",
                                            "readyReplicas", "replicas"])}},
        {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
         "time": "2026-12-02T10:41:07Z", "fieldsType": "FieldsV1", "subresource": "scale",
         "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_loadgen::bench::pods::PodTemplates;

    #[test]
    fn a_realistic_replicaset_is_about_five_kilobytes_with_its_managed_fields() {
        let bytes = realistic_replicaset_json(3, 10, 42);
        let rs: Value = serde_json::from_slice(&bytes).expect("valid JSON");
        assert!((4_500..=6_500).contains(&bytes.len()), "{} B", bytes.len());
        let managed = rs["metadata"]["managedFields"]
            .as_array()
            .expect("managedFields");
        let managers: Vec<_> = managed
            .iter()
            .filter_map(|m| m["manager"].as_str())
            .collect();
        assert_eq!(
            managers,
            [
                "kube-controller-manager",
                "kube-controller-manager",
                "kubectl"
            ]
        );
        assert_eq!(
            rs["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"],
            8080
        );
    }

    #[test]
    fn a_realistic_replicaset_owns_the_bench_pods_it_selects() {
        let pods = PodTemplates::new(4);
        let pod: Value = serde_json::from_slice(&pods.render(6, 1, 0)).expect("pod");
        let rs: Value = serde_json::from_slice(&realistic_replicaset_json(2, 5, 2)).expect("rs");
        for (label, wanted) in rs["spec"]["selector"]["matchLabels"]
            .as_object()
            .expect("selector")
        {
            assert_eq!(&pod["metadata"]["labels"][label], wanted, "{label}");
        }
        assert_eq!(
            rs["metadata"]["uid"],
            pod["metadata"]["ownerReferences"][0]["uid"]
        );
        assert_eq!(rs["metadata"]["namespace"], pod["metadata"]["namespace"]);
        assert_eq!(rs["spec"]["replicas"], 5);
    }
}
