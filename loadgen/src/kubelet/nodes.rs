//! The fake nodes of the kubelet emulation: a Node object per node (Ready), and a node
//! Lease per Node in `kube-node-lease`, renewed periodically unless renewal is stopped.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::apiserver::status::ApiError;
use crate::clock::now_rfc3339;
use crate::kubelet::{KUBELET_USER_AGENT, node_name};
use crate::resource::Resource;
use crate::store::Store;
use crate::store::Verb;

/// The namespace of node Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// `leaseDurationSeconds` of node Leases (upstream's default node lease duration).
pub const NODE_LEASE_SECONDS: i64 = 40;
/// Namespaces a fresh cluster has.
pub const SYSTEM_NAMESPACES: [&str; 4] = [
    "default",
    "kube-system",
    "kube-public",
    NODE_LEASE_NAMESPACE,
];

/// The current time as a Kubernetes `MicroTime`, e.g. `2026-01-01T00:00:00.000000Z`.
pub fn now_micro() -> String {
    let now = crate::clock::now_timestamp();
    format!(
        "{}.{:06}Z",
        now.strftime("%Y-%m-%dT%H:%M:%S"),
        now.subsec_microsecond()
    )
}

/// Which nodes have their Lease renewals stopped (a node that went silent).
#[derive(Debug, Default)]
pub struct LeaseControl {
    stopped: Mutex<HashSet<String>>,
}

impl LeaseControl {
    /// Stops renewing `node`'s Lease.
    pub fn stop(&self, node: &str) {
        self.stopped.lock().insert(node.to_string());
    }

    /// Renews `node`'s Lease again.
    pub fn resume(&self, node: &str) {
        self.stopped.lock().remove(node);
    }

    /// Whether `node`'s Lease is renewed.
    pub fn renews(&self, node: &str) -> bool {
        !self.stopped.lock().contains(node)
    }
}

/// How many zones the fake nodes are spread over (node `i` is in zone `i % ZONES`).
pub const ZONES: usize = 3;

/// The zone label value of fake node `i`.
pub fn node_zone(i: usize) -> String {
    format!("zone-{}", i % ZONES)
}

/// The Node object of fake node `i`, Ready, in zone [`node_zone`] of region `loadgen`.
pub fn node_object(i: usize) -> Value {
    let name = node_name(i);
    let now = now_rfc3339();
    let condition = |t: &str, status: &str, reason: &str| {
        json!({"type": t, "status": status, "reason": reason, "message": "loadgen kubelet",
            "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    let resources =
        json!({"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"});
    json!({
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/region": "loadgen",
            "topology.kubernetes.io/zone": node_zone(i),
        }},
        "spec": {"podCIDR": format!("10.244.{i}.0/24")},
        "status": {
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID"),
                condition("Ready", "True", "KubeletReady"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": format!("192.0.2.{}", i % 250 + 1)},
                {"type": "Hostname", "address": name},
            ],
            "capacity": resources,
            "allocatable": resources,
            "nodeInfo": {
                "kubeletVersion": "v1.36.0", "kubeProxyVersion": "v1.36.0",
                "operatingSystem": "linux", "architecture": "amd64",
                "containerRuntimeVersion": "loadgen://1", "osImage": "loadgen",
                "kernelVersion": "6.0.0", "machineID": "", "systemUUID": "", "bootID": "",
            },
        },
    })
}

/// The node Lease of `node` (owned by the Node with `node_uid`), renewed now.
pub fn lease_object(node: &str, node_uid: &str) -> Value {
    let now = now_micro();
    json!({
        "metadata": {"name": node, "ownerReferences": [{
            "apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid,
        }]},
        "spec": {
            "holderIdentity": node,
            "leaseDurationSeconds": NODE_LEASE_SECONDS,
            "renewTime": now,
        },
    })
}

/// Creates the system namespaces, `count` Nodes and their Leases (skipping any that exist).
pub fn bootstrap(store: &Store, count: usize) -> Result<(), ApiError> {
    let ua = Some(KUBELET_USER_AGENT);
    let ignore_exists = |r: Result<_, ApiError>| match r {
        Err(ApiError::AlreadyExists { .. }) => Ok(()),
        other => other.map(|_| ()),
    };
    for ns in SYSTEM_NAMESPACES {
        ignore_exists(store.create(
            Resource::Namespaces,
            "",
            json!({"metadata": {"name": ns}}),
            ua,
        ))?;
    }
    for i in 0..count.max(1) {
        let node = store.create(Resource::Nodes, "", node_object(i), ua);
        let uid = match node {
            Ok(n) => n.value["metadata"]["uid"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            Err(ApiError::AlreadyExists { .. }) => continue,
            Err(e) => return Err(e),
        };
        let name = node_name(i);
        ignore_exists(store.create(
            Resource::Leases,
            NODE_LEASE_NAMESPACE,
            lease_object(&name, &uid),
            ua,
        ))?;
    }
    Ok(())
}

/// Spawns the renewal loop: every `interval`, each node whose renewal is not stopped sets
/// its Lease's `spec.renewTime` to now, and posts `Ready=True` if its Node says otherwise (a
/// kubelet back from silence corrects the status node lifecycle wrote meanwhile).
pub fn spawn_renewals(
    store: Arc<Store>,
    count: usize,
    interval: Duration,
    control: Arc<LeaseControl>,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval.max(Duration::from_millis(1)));
        tick.tick().await;
        loop {
            tokio::select! {
                _ = tick.tick() => {},
                _ = shutdown.changed() => return,
            }
            for i in 0..count.max(1) {
                let name = node_name(i);
                if !control.renews(&name) {
                    continue;
                }
                renew_lease(&store, &name);
                post_ready(&store, &name);
            }
        }
    })
}

/// Sets `node`'s Lease's `spec.renewTime` to now, as its kubelet does; whether it was written.
pub fn renew_lease(store: &Store, node: &str) -> bool {
    store
        .write_as(
            Resource::Leases,
            NODE_LEASE_NAMESPACE,
            node,
            |l| {
                if l["spec"].is_object() {
                    l["spec"]["renewTime"] = Value::from(now_micro());
                }
            },
            Verb::Update,
            KUBELET_USER_AGENT,
        )
        .is_ok()
}

/// Sets `node`'s `Ready` condition to `True` when it is not, as its kubelet posts its status
/// when the status differs from what it observes; whether it wrote.
pub fn post_ready(store: &Store, node: &str) -> bool {
    let is_ready = |n: &Value| {
        n["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
    };
    let Some(stored) = store.get(Resource::Nodes, "", node) else {
        return false;
    };
    if is_ready(&stored.value) {
        return false;
    }
    let now = now_rfc3339();
    store
        .write_as(
            Resource::Nodes,
            "",
            node,
            |n| {
                let Some(conditions) = n["status"]["conditions"].as_array_mut() else {
                    return;
                };
                for c in conditions.iter_mut() {
                    let (status, reason) = match c["type"].as_str() {
                        Some("Ready") => ("True", "KubeletReady"),
                        Some("MemoryPressure") => ("False", "KubeletHasSufficientMemory"),
                        Some("DiskPressure") => ("False", "KubeletHasNoDiskPressure"),
                        Some("PIDPressure") => ("False", "KubeletHasSufficientPID"),
                        _ => continue,
                    };
                    c["status"] = Value::from(status);
                    c["reason"] = Value::from(reason);
                    c["message"] = Value::from("loadgen kubelet");
                    c["lastHeartbeatTime"] = Value::from(now.as_str());
                    c["lastTransitionTime"] = Value::from(now.as_str());
                }
            },
            Verb::Update,
            KUBELET_USER_AGENT,
        )
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_has_six_fraction_digits() {
        let t = now_micro();
        assert_eq!(t.len(), 27, "{t}");
        assert_eq!(&t[19..20], ".");
    }

    #[test]
    fn a_kubelet_back_from_silence_posts_ready_again_and_a_ready_node_is_not_written() {
        let store = Store::new(100, None);
        bootstrap(&store, 1).expect("bootstrap");
        assert!(!post_ready(&store, "node-0"), "Ready already");
        store
            .write_as(
                Resource::Nodes,
                "",
                "node-0",
                |n| n["status"]["conditions"][3]["status"] = Value::from("Unknown"),
                Verb::Update,
                "tidemark",
            )
            .expect("marked");
        assert!(post_ready(&store, "node-0"));
        let node = store.get(Resource::Nodes, "", "node-0").expect("node");
        assert_eq!(node.value["status"]["conditions"][3]["status"], "True");
        assert_eq!(
            node.value["metadata"]["labels"]["topology.kubernetes.io/zone"],
            "zone-0"
        );
    }

    #[test]
    fn a_stopped_node_is_resumed() {
        let c = LeaseControl::default();
        c.stop("node-0");
        assert!(!c.renews("node-0"));
        c.resume("node-0");
        assert!(c.renews("node-0"));
    }
}
