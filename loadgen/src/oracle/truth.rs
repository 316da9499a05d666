//! The ground truth about the sets a stress workload scales, as the server sees them now, in the
//! shape of [`ReplicaSetTruth`]: what convergence and the liveness verdict are judged on.

use crate::apiserver::server::ApiServer;
use crate::oracle::{ReplicaSetTruth, SharedOracle};
use crate::resource::Resource;
use crate::scenario::WorkloadKind;
use crate::store::Store;
use serde_json::Value;

/// The ground truth about the sets the workload scales.
pub fn truth(server: &ApiServer, kind: WorkloadKind) -> Vec<ReplicaSetTruth> {
    truth_in(server.store(), server.oracle(), kind)
}

/// The ground truth about the sets of `kind` in `store`, as `oracle` has counted their Pods
/// (the simulation, which has a store and no server, asks this).
pub fn truth_in(store: &Store, oracle: &SharedOracle, kind: WorkloadKind) -> Vec<ReplicaSetTruth> {
    match kind {
        WorkloadKind::Replicaset => oracle.replicaset_truth(store),
        WorkloadKind::Statefulset => oracle.statefulset_truth(store),
        WorkloadKind::Job => job_truth(store),
        WorkloadKind::Daemonset => daemonset_truth(store),
    }
}

fn list(store: &Store, r: Resource) -> Vec<Value> {
    store
        .all(r, None)
        .0
        .into_iter()
        .map(|s| s.value.clone())
        .collect()
}

/// A DaemonSet seen as a set: converged when every Node runs exactly one of its live Pods, none
/// runs elsewhere, every one is of its template now, and its status says so for its generation.
fn daemonset_truth(store: &Store) -> Vec<ReplicaSetTruth> {
    let all_nodes = list(store, Resource::Nodes);
    let pods = list(store, Resource::Pods);
    list(store, Resource::DaemonSets)
        .iter()
        .map(|ds| {
            let selector = &ds["spec"]["template"]["spec"]["nodeSelector"];
            let nodes: Vec<String> = all_nodes
                .iter()
                .filter(|n| n["metadata"]["deletionTimestamp"].is_null())
                .filter(|n| {
                    selector.as_object().is_none_or(|s| {
                        s.iter()
                            .all(|(k, v)| n["metadata"]["labels"][k.as_str()] == *v)
                    })
                })
                .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_string))
                .collect();
            let uid = ds["metadata"]["uid"].as_str().unwrap_or("");
            let live: Vec<&Value> = pods
                .iter()
                .filter(|p| {
                    p["metadata"]["deletionTimestamp"].is_null()
                        && p["metadata"]["ownerReferences"][0]["uid"] == uid
                })
                .collect();
            let placed: Vec<&str> = live
                .iter()
                .filter_map(|p| p["spec"]["nodeName"].as_str())
                .collect();
            let current = crate::oracle::template_mark::mark_of(&ds["spec"]["template"]);
            let outdated = live
                .iter()
                .filter(|p| crate::oracle::template_mark::mark_of(p) != current)
                .count();
            let exact = placed.len() == nodes.len()
                && nodes
                    .iter()
                    .all(|n| placed.iter().filter(|p| **p == n).count() == 1);
            let n = nodes.len() as i64;
            ReplicaSetTruth {
                namespace: ds["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                name: ds["metadata"]["name"].as_str().unwrap_or("").to_string(),
                generation: ds["metadata"]["generation"].as_i64().unwrap_or(0),
                spec_replicas: n,
                live_pods: if exact { n } else { placed.len() as i64 - 1000 },
                status_replicas: ds["status"]["currentNumberScheduled"]
                    .as_i64()
                    .unwrap_or(-1),
                status_ready_replicas: ds["status"]["numberReady"].as_i64().unwrap_or(-1),
                observed_generation: ds["status"]["observedGeneration"].as_i64().unwrap_or(0),
                outdated_pods: outdated as i64,
                revisions_settled: true,
            }
        })
        .collect()
}

/// A Job seen as a set: converged once it is Complete with exactly `completions` successes.
fn job_truth(store: &Store) -> Vec<ReplicaSetTruth> {
    list(store, Resource::Jobs)
        .iter()
        .map(|j| {
            let complete = j["status"]["conditions"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Complete"));
            let completions = j["spec"]["completions"].as_i64().unwrap_or(1);
            let succeeded = j["status"]["succeeded"].as_i64().unwrap_or(0);
            ReplicaSetTruth {
                namespace: j["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                name: j["metadata"]["name"].as_str().unwrap_or("").to_string(),
                generation: 0,
                spec_replicas: completions,
                live_pods: if complete { succeeded } else { -1 },
                status_replicas: succeeded,
                status_ready_replicas: succeeded,
                observed_generation: 0,
                outdated_pods: 0,
                revisions_settled: true,
            }
        })
        .collect()
}
