//! Kubelet emulation (like kwok): each created Pod is bound to a fake node and becomes
//! Running and Ready after a delay, written through the normal commit path.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::deletion::DeleteOptions;
use crate::object::{meta_str, now_rfc3339};
use crate::oracle::Verb;
use crate::resource::Resource;
use crate::store::{PodStarted, PodTerminating, Preconditions, Store};

/// User agent of kubelet writes.
pub const KUBELET_USER_AGENT: &str = "kubelet";

/// The name of fake node `i`.
pub fn node_name(i: usize) -> String {
    format!("node-{i}")
}

/// Moves `pod` to Running/Ready on `node` (if it has no node yet) with `ip`.
pub fn start_pod(pod: &mut Value, node: &str, ip: &str) {
    let now = now_rfc3339();
    if pod["spec"]["nodeName"].as_str().unwrap_or("").is_empty() {
        if !pod["spec"].is_object() {
            pod["spec"] = json!({});
        }
        pod["spec"]["nodeName"] = Value::from(node);
    }
    let condition = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    let containers: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    json!({
                        "name": c["name"],
                        "image": c["image"],
                        "imageID": "",
                        "ready": true,
                        "started": true,
                        "restartCount": 0,
                        "state": {"running": {"startedAt": now}},
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let host_ip = "192.0.2.1";
    pod["status"] = json!({
        "phase": "Running",
        "conditions": [
            condition("PodReadyToStartContainers"),
            condition("Initialized"),
            condition("Ready"),
            condition("ContainersReady"),
            condition("PodScheduled"),
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "containerStatuses": containers,
        "qosClass": "BestEffort",
    });
}

/// Spawns the kubelet loop: Pods arrive in creation order and are started `ready_after` later.
pub fn spawn(
    store: Arc<Store>,
    mut rx: mpsc::UnboundedReceiver<PodStarted>,
    ready_after: Duration,
    node_count: usize,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let nodes = node_count.max(1);
        let mut started: usize = 0;
        loop {
            let next = tokio::select! {
                n = rx.recv() => n,
                _ = shutdown.changed() => None,
            };
            let Some(pod) = next else { return };
            let due = Instant::from_std(pod.at) + ready_after;
            tokio::select! {
                _ = tokio::time::sleep_until(due) => {},
                _ = shutdown.changed() => return,
            }
            let node = node_name(started % nodes);
            let ip = format!("10.244.{}.{}", (started / 250) % 250, started % 250 + 2);
            let (ns, name) = &pod.key;
            let result = store.write_as(
                Resource::Pods,
                ns,
                name,
                |v| {
                    if meta_str(v, "uid") == pod.uid && v["status"]["phase"] != "Running" {
                        start_pod(v, &node, &ip);
                    }
                },
                Verb::UpdateStatus,
                KUBELET_USER_AGENT,
            );
            if result.is_ok() {
                started += 1;
            }
        }
    })
}

/// Spawns the kubelet's termination loop: a Pod given a deletionTimestamp with a grace period
/// is removed (grace period 0, uid precondition) after `min(grace, after)`, as a kubelet that
/// stops its containers quickly does.
pub fn spawn_terminator(
    store: Arc<Store>,
    mut rx: mpsc::UnboundedReceiver<PodTerminating>,
    after: Duration,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                n = rx.recv() => n,
                _ = shutdown.changed() => None,
            };
            let Some(pod) = next else { return };
            let store = store.clone();
            let mut stop = shutdown.clone();
            let wait = pod.grace.min(after);
            tokio::spawn(async move {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {},
                    _ = stop.changed() => return,
                }
                let opts = DeleteOptions {
                    preconditions: Preconditions {
                        uid: Some(pod.uid.clone()),
                        resource_version: None,
                    },
                    grace_period_seconds: Some(0),
                    ..DeleteOptions::default()
                };
                let (ns, name) = &pod.key;
                let _ =
                    store.delete_opts(Resource::Pods, ns, name, &opts, Some(KUBELET_USER_AGENT));
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_pod_is_running_ready_and_bound() {
        let mut pod = json!({"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
        start_pod(&mut pod, "node-3", "10.244.0.2");
        assert_eq!(pod["spec"]["nodeName"], "node-3");
        assert_eq!(pod["status"]["phase"], "Running");
        assert_eq!(pod["status"]["podIP"], "10.244.0.2");
        let ready = pod["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
            .map(|c| c["status"].clone());
        assert_eq!(ready, Some(json!("True")));
    }
}
