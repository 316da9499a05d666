//! Kubelet emulation (like kwok): each created Pod is bound to a fake node and becomes
//! Running and Ready after a delay, written through the normal commit path.

pub mod nodes;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::clock::now_rfc3339;
use crate::meta::meta_str;
use crate::resource::Resource;
use crate::store::Verb;
use crate::store::deletion::DeleteOptions;
use crate::store::{PodStarted, PodTerminating, Preconditions, Store};

/// User agent of kubelet writes.
pub const KUBELET_USER_AGENT: &str = "kubelet";

/// The name of fake node `i`.
pub fn node_name(i: usize) -> String {
    format!("node-{i}")
}

/// Moves `pod` to Running/Ready on `node` (if it has no node yet) with `ip`. A Pod whose shape
/// no real server would store (a hostile-server simulation: the body, its `spec` or its
/// `containers` of the wrong type) is left as it is: returns whether it was started.
pub fn start_pod(pod: &mut Value, node: &str, ip: &str) -> bool {
    let now = now_rfc3339();
    let Value::Object(object) = pod else {
        return false;
    };
    let spec = object
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if spec.is_null() {
        *spec = Value::Object(Map::new());
    }
    let Value::Object(spec) = spec else {
        return false;
    };
    if spec
        .get("nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        spec.insert("nodeName".into(), Value::from(node));
    }
    let containers: Vec<Value> = match spec.get("containers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(cs)) => cs
            .iter()
            .map(|c| {
                json!({
                    "name": c.get("name").cloned().unwrap_or(Value::Null),
                    "image": c.get("image").cloned().unwrap_or(Value::Null),
                    "imageID": "",
                    "ready": true,
                    "started": true,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                })
            })
            .collect(),
        Some(_) => return false,
    };
    let condition = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    let host_ip = "192.0.2.1";
    object.insert(
        "status".into(),
        json!({
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
        }),
    );
    true
}

/// The annotation that makes a Job's Pod fail instead of succeed.
pub const FAIL_ANNOTATION: &str = "loadgen.tidemark.dev/fail";
/// The annotation that makes one Job Pod in N (by a hash of its name) fail instead of succeed.
pub const FAIL_ONE_IN_ANNOTATION: &str = "loadgen.tidemark.dev/fail-one-in";
/// The annotation giving the exit code a failing Pod's containers end with (default 1).
pub const EXIT_CODE_ANNOTATION: &str = "loadgen.tidemark.dev/exit-code";

/// Whether the Job Pod `pod` fails, and with which exit code, as its annotations say.
pub fn failure_of(pod: &Value) -> Option<i32> {
    let annotations = &pod["metadata"]["annotations"];
    let code = annotations[EXIT_CODE_ANNOTATION]
        .as_str()
        .and_then(|c| c.parse::<i32>().ok())
        .filter(|c| *c != 0)
        .unwrap_or(1);
    let one_in = annotations[FAIL_ONE_IN_ANNOTATION]
        .as_str()
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| *n > 0);
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let fails = annotations[FAIL_ANNOTATION] == "true" || one_in.is_some_and(|n| hash % n == 0);
    fails.then_some(code)
}

/// Whether `pod` is controlled by a Job.
pub fn owned_by_job(pod: &Value) -> bool {
    pod["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| refs.iter().any(|o| o["kind"] == "Job"))
}

/// Moves a Running `pod` to Succeeded, or to Failed with its containers ending with `failed`'s
/// exit code. A Pod whose status has a shape no real server would store is left as it is:
/// returns whether it moved.
pub fn finish_pod(pod: &mut Value, failed: Option<i32>) -> bool {
    let now = now_rfc3339();
    let (phase, code, reason) = match failed {
        Some(code) => ("Failed", code, "Error"),
        None => ("Succeeded", 0, "Completed"),
    };
    let Some(Value::Object(status)) = pod.get_mut("status") else {
        return false;
    };
    let started = status.get("startTime").cloned().unwrap_or(Value::Null);
    status.insert("phase".into(), Value::from(phase));
    if let Some(Value::Array(conditions)) = status.get_mut("conditions") {
        for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
            let kind = c.get("type").and_then(Value::as_str);
            if matches!(kind, Some("Ready" | "ContainersReady")) {
                c.insert("status".into(), Value::from("False"));
                c.insert("reason".into(), Value::from("PodCompleted"));
                c.insert("lastTransitionTime".into(), Value::from(now.as_str()));
            }
        }
    }
    if let Some(Value::Array(statuses)) = status.get_mut("containerStatuses") {
        for c in statuses.iter_mut().filter_map(Value::as_object_mut) {
            c.insert("ready".into(), Value::from(false));
            c.insert("started".into(), Value::from(false));
            c.insert(
                "state".into(),
                json!({"terminated": {
                    "exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now,
                }}),
            );
        }
    }
    true
}

/// How the kubelet emulation behaves.
#[derive(Debug, Clone, Copy)]
pub struct KubeletConfig {
    /// How long after creation a Pod becomes Running and Ready.
    pub ready_after: Duration,
    /// How many fake nodes Pods are bound to.
    pub node_count: usize,
    /// How long a Job's Pod runs before it Succeeds (or Fails, with [`FAIL_ANNOTATION`]).
    pub job_pod_runtime: Duration,
}

/// Spawns the kubelet loop: Pods arrive in creation order and are started `ready_after` later.
pub fn spawn(
    store: Arc<Store>,
    rx: mpsc::UnboundedReceiver<PodStarted>,
    ready_after: Duration,
    node_count: usize,
    shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let config = KubeletConfig {
        ready_after,
        node_count,
        job_pod_runtime: Duration::from_secs(1),
    };
    spawn_with(store, rx, config, shutdown)
}

fn complete_later(
    store: Arc<Store>,
    pod: PodStarted,
    after: Duration,
    mut stop: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep(after) => {},
            _ = stop.changed() => return,
        }
        let (ns, name) = &pod.key;
        let _ = store.write_as(
            Resource::Pods,
            ns,
            name,
            |v| {
                let ours = meta_str(v, "uid") == pod.uid;
                let running = v["status"]["phase"] == "Running";
                let deleting = !v["metadata"]["deletionTimestamp"].is_null();
                if ours && running && !deleting && !finish_pod(v, failure_of(v)) {
                    tracing::warn!(pod = %name, "kubelet: a Pod of a shape no server would store is left as it is");
                }
            },
            Verb::UpdateStatus,
            KUBELET_USER_AGENT,
        );
    });
}

/// [`spawn`] with every setting.
pub fn spawn_with(
    store: Arc<Store>,
    mut rx: mpsc::UnboundedReceiver<PodStarted>,
    config: KubeletConfig,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let ready_after = config.ready_after;
    tokio::spawn(async move {
        let nodes = config.node_count.max(1);
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
            let mut job = false;
            let result = store.write_as(
                Resource::Pods,
                ns,
                name,
                |v| {
                    let pending =
                        v["status"]["phase"] == "Pending" || v["status"]["phase"].is_null();
                    let deleting = !v["metadata"]["deletionTimestamp"].is_null();
                    if meta_str(v, "uid") == pod.uid && pending && !deleting {
                        job = start_pod(v, &node, &ip) && owned_by_job(v);
                    }
                },
                Verb::UpdateStatus,
                KUBELET_USER_AGENT,
            );
            if result.is_ok() {
                started += 1;
            }
            if job {
                complete_later(store.clone(), pod, config.job_pod_runtime, shutdown.clone());
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
    fn a_pod_fails_as_its_annotations_say_one_in_n_by_its_name() {
        let pod = |name: &str, annotations: Value| json!({"metadata": {"name": name, "annotations": annotations}});
        assert_eq!(failure_of(&pod("a", json!({}))), None);
        assert_eq!(
            failure_of(&pod("a", json!({FAIL_ANNOTATION: "true"}))),
            Some(1)
        );
        assert_eq!(
            failure_of(&pod(
                "a",
                json!({FAIL_ANNOTATION: "true", EXIT_CODE_ANNOTATION: "137"})
            )),
            Some(137)
        );
        let one_in_three = (0..300)
            .filter(|i| {
                failure_of(&pod(
                    &format!("job-{i}"),
                    json!({FAIL_ONE_IN_ANNOTATION: "3"}),
                ))
                .is_some()
            })
            .count();
        assert!((60..140).contains(&one_in_three), "{one_in_three} of 300");
    }

    #[test]
    fn a_started_pod_is_running_ready_and_bound() {
        let mut pod = json!({"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
        assert!(start_pod(&mut pod, "node-3", "10.244.0.2"));
        assert_eq!(pod["spec"]["nodeName"], "node-3");
        assert_eq!(pod["status"]["phase"], "Running");
        assert_eq!(pod["status"]["podIP"], "10.244.0.2");
        let ready = pod["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
            .map(|c| c["status"].clone());
        assert_eq!(ready, Some(json!("True")));
        assert!(finish_pod(&mut pod, Some(1)));
        assert_eq!(pod["status"]["phase"], "Failed");
        assert_eq!(
            pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
            1
        );
    }

    #[test]
    fn pods_of_any_shape_are_started_or_left_alone_never_a_panic() {
        let shapes = [
            json!("not-an-object"),
            json!({"spec": "x"}),
            json!({"spec": {"containers": "x"}}),
            json!({"spec": {"containers": ["x", 1, null, {"name": 5}]}}),
            json!({"spec": {"nodeName": 7}}),
            json!({"status": "x"}),
            json!({"status": {"conditions": ["x", {"type": "Ready"}], "containerStatuses": [1]}}),
            json!([]),
            json!(null),
        ];
        for shape in shapes {
            let mut pod = shape.clone();
            start_pod(&mut pod, "node-0", "10.0.0.1");
            let mut pod = shape.clone();
            finish_pod(&mut pod, None);
            let mut pod = shape;
            if start_pod(&mut pod, "node-0", "10.0.0.1") {
                assert!(finish_pod(&mut pod, Some(1)));
                assert_eq!(pod["status"]["phase"], "Failed");
            }
        }
    }
}
