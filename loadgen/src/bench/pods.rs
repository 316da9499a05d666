//! Realistic Pods and ReplicaSets for the bench, rendered from templates: 4 to 7 KB of JSON a Pod
//! with managedFields, as kwok-based scale tests produce, in about a microsecond each.

use serde_json::json;

/// Which ReplicaSet owns Pod `index` when there are `replicasets` of them.
pub fn owner_of(index: u64, replicasets: u64) -> u64 {
    index % replicasets.max(1)
}

/// The namespace of ReplicaSet `rs` (and of its Pods).
pub fn namespace_of(rs: u64) -> String {
    format!("bench-{}", rs % 16)
}

/// A template split around its placeholders; rendering concatenates the parts.
#[derive(Debug, Clone)]
pub(super) struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Text(Vec<u8>),
    Name,
    Owner,
    Namespace,
    Uid,
    OwnerUid,
    Rv,
    Restarts,
}

const PLACEHOLDERS: [(&str, Part); 7] = [
    ("\"@@RESTARTS@@\"", Part::Restarts),
    ("@@NAME@@", Part::Name),
    ("@@OWNER@@", Part::Owner),
    ("@@NS@@", Part::Namespace),
    ("@@UID@@", Part::Uid),
    ("@@OWNERUID@@", Part::OwnerUid),
    ("@@RV@@", Part::Rv),
];

impl Template {
    pub(super) fn new(text: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = text;
        loop {
            let next = PLACEHOLDERS
                .iter()
                .filter_map(|(p, part)| rest.find(p).map(|at| (at, p.len(), part)))
                .min_by_key(|(at, _, _)| *at);
            match next {
                Some((at, len, part)) => {
                    parts.push(Part::Text(rest.as_bytes()[..at].to_vec()));
                    parts.push(part.clone());
                    rest = &rest[at + len..];
                }
                None => {
                    parts.push(Part::Text(rest.as_bytes().to_vec()));
                    break;
                }
            }
        }
        Self { parts }
    }

    /// Whether it has a placeholder.
    pub(super) fn has_placeholders(&self) -> bool {
        self.parts.iter().any(|p| !matches!(p, Part::Text(_)))
    }

    pub(super) fn render_into(&self, out: &mut Vec<u8>, pod: &PodFields<'_>) {
        use std::io::Write;
        for part in &self.parts {
            // Writing into a Vec cannot fail.
            let _ = match part {
                Part::Text(t) => {
                    out.extend_from_slice(t);
                    Ok(())
                }
                Part::Name => write!(out, "web-{}-{:x}", pod.owner, pod.index),
                Part::Owner => write!(out, "web-{}", pod.owner),
                Part::Namespace => {
                    out.extend_from_slice(pod.namespace.as_bytes());
                    Ok(())
                }
                Part::Uid => write!(out, "{:08x}-5d1c-4b7e-9a3f-{:012x}", pod.index, pod.index),
                Part::OwnerUid => {
                    write!(out, "{:08x}-7e2a-4c1d-8b6f-{:012x}", pod.owner, pod.owner)
                }
                Part::Rv => write!(out, "{}", pod.rv),
                Part::Restarts => write!(out, "{}", pod.restarts),
            };
        }
    }
}

/// What a rendered Pod's placeholders are filled with.
pub(super) struct PodFields<'a> {
    pub(super) index: u64,
    pub(super) owner: u64,
    pub(super) namespace: &'a str,
    pub(super) rv: u64,
    pub(super) restarts: u64,
}

/// Renders realistic Pods. Four variants (more or fewer managedFields entries, env vars and
/// annotations) spread the sizes over 4 to 7 KB.
#[derive(Debug, Clone)]
pub struct PodTemplates {
    variants: Vec<Template>,
    /// The variants' JSON text, placeholders in place (what the protobuf templates are built from).
    texts: Vec<String>,
    replicasets: u64,
}

impl PodTemplates {
    /// Templates for Pods owned by `replicasets` ReplicaSets.
    pub fn new(replicasets: u64) -> Self {
        let texts: Vec<String> = [(4, 3, 2), (6, 5, 3), (8, 7, 4), (10, 9, 5)]
            .into_iter()
            .map(|(managed, env, annotations)| pod_template_text(managed, env, annotations))
            .collect();
        Self {
            variants: texts.iter().map(|t| Template::new(t)).collect(),
            texts,
            replicasets: replicasets.max(1),
        }
    }

    /// The variants' JSON text with the placeholders in place.
    pub(super) fn texts(&self) -> &[String] {
        &self.texts
    }

    /// Which variant Pod `index` is rendered from, and its owner and namespace.
    pub(super) fn identity(&self, index: u64) -> (usize, u64, String) {
        let owner = owner_of(index, self.replicasets);
        let variant = (index % self.variants.len() as u64) as usize;
        (variant, owner, namespace_of(owner))
    }

    /// Pod `index` at resourceVersion `rv` with `restarts` container restarts, appended to `out`.
    pub fn render_into(&self, out: &mut Vec<u8>, index: u64, rv: u64, restarts: u64) {
        let (variant, owner, namespace) = self.identity(index);
        let Some(variant) = self.variants.get(variant) else {
            return;
        };
        variant.render_into(
            out,
            &PodFields {
                index,
                owner,
                namespace: &namespace,
                rv,
                restarts,
            },
        );
    }

    /// Pod `index` as JSON bytes.
    pub fn render(&self, index: u64, rv: u64, restarts: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(7 * 1024);
        self.render_into(&mut out, index, rv, restarts);
        out
    }
}

/// ReplicaSet `rs` owning `replicas` Pods, at resourceVersion `rv`.
pub fn replicaset_json(rs: u64, replicas: u64, rv: u64) -> Vec<u8> {
    let name = format!("web-{rs}");
    serde_json::to_vec(&json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace_of(rs),
            "uid": format!("{rs:08x}-7e2a-4c1d-8b6f-{rs:012x}"), "resourceVersion": rv.to_string(),
            "generation": 1, "creationTimestamp": "2026-12-02T15:03:30Z",
            "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name, "pod-template-hash": "7d9f8b6c5d", "tier": "web"}},
                "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]}}},
        "status": {"replicas": replicas, "fullyLabeledReplicas": replicas, "readyReplicas": replicas,
            "availableReplicas": replicas, "observedGeneration": 1}
    }))
    .unwrap_or_default()
}

fn pod_template_text(managed: usize, env: usize, annotations: usize) -> String {
    let managed: Vec<_> = (0..managed)
        .map(|i| {
            json!({"manager": format!("kube-controller-manager-{i}"), "operation": "Update", "apiVersion": "v1",
                   "time": "2026-12-02T15:03:38Z", "fieldsType": "FieldsV1",
                   "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                                "f:ownerReferences": {".": {}, "k:{\"uid\":\"@@OWNERUID@@\"}": {}}},
                                "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}})
        })
        .collect();
    let env: Vec<_> = (0..env)
        .map(|i| json!({"name": format!("ENV_{i}"), "value": format!("value-{i}")}))
        .collect();
    let mut notes = serde_json::Map::new();
    notes.insert("kubernetes.io/psp".into(), "restricted".into());
    for i in 0..annotations {
        notes.insert(
            format!("bench.tidemark.dev/note-{i}"),
            format!("annotation value {i}").into(),
        );
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "@@NAME@@", "namespace": "@@NS@@", "uid": "@@UID@@",
            "resourceVersion": "@@RV@@", "creationTimestamp": "2026-12-02T15:03:38Z",
            "generateName": "@@OWNER@@-",
            "labels": {"app": "@@OWNER@@", "pod-template-hash": "7d9f8b6c5d", "tier": "web"},
            "annotations": notes,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "@@OWNER@@",
                "uid": "@@OWNERUID@@", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": managed},
        "spec": {"nodeName": "node-17", "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default", "schedulerName": "default-scheduler",
            "containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": env,
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
            "containerStatuses": [{"name": "web", "ready": true, "restartCount": "@@RESTARTS@@", "started": true,
                "image": "registry.k8s.io/pause:3.10", "imageID": "sha256:873ed75102791e5b0b8a7fcd41606c92fcec98d56d05ead4ac5131650004c136",
                "containerID": "containerd://4f1e2d3c4b5a69788796a5b4c3d2e1f0", "state": {"running": {"startedAt": "2026-12-02T15:03:40Z"}}}]}
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_pods_are_valid_json_of_four_to_seven_kilobytes() {
        let t = PodTemplates::new(10);
        for i in 0..8 {
            let bytes = t.render(i, 1000 + i, 3);
            let v: serde_json::Value = serde_json::from_slice(&bytes).expect("valid JSON");
            assert!(
                (4_000..=7_200).contains(&bytes.len()),
                "size {}",
                bytes.len()
            );
            assert_eq!(v["metadata"]["resourceVersion"], (1000 + i).to_string());
            assert_eq!(v["status"]["containerStatuses"][0]["restartCount"], 3);
            assert_eq!(
                v["metadata"]["ownerReferences"][0]["name"],
                format!("web-{}", i % 10)
            );
        }
    }

    #[test]
    fn a_replicaset_selects_the_labels_of_its_pods() {
        let t = PodTemplates::new(4);
        let pod: serde_json::Value = serde_json::from_slice(&t.render(6, 1, 0)).expect("pod");
        let rs: serde_json::Value = serde_json::from_slice(&replicaset_json(2, 5, 2)).expect("rs");
        assert_eq!(
            rs["spec"]["selector"]["matchLabels"]["app"],
            pod["metadata"]["labels"]["app"]
        );
        assert_eq!(
            rs["metadata"]["uid"],
            pod["metadata"]["ownerReferences"][0]["uid"]
        );
        assert_eq!(rs["metadata"]["namespace"], pod["metadata"]["namespace"]);
    }
}
