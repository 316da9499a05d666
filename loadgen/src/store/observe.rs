//! The oracle's view through the store: requests arriving and departing, violations, the
//! writes recorded and the ground truth about every set.

use crate::object::meta_str;
use crate::oracle::in_flight::{ArrivalId, Decision};
use crate::oracle::{ReplicaSetTruth, Violation, WriteRecord, desired_replicas};
use crate::resource::Resource;
use crate::store::{Arriving, Store};

impl Store {
    /// A request to create a Pod (`body`) or delete the Pod `name` reached the server: the
    /// oracle judges it against the state now. `None` when there is nothing to judge (no such
    /// Pod to delete).
    pub fn arrive(&self, namespace: &str, arriving: Arriving<'_>) -> Option<ArrivalId> {
        let mut inner = self.inner.lock();
        match arriving {
            Arriving::Create(body) => Some(inner.oracle.arrive(namespace, Decision::Create(body))),
            Arriving::Delete(name) => {
                let key = (namespace.to_string(), name.to_string());
                let pod = inner.objects[Resource::Pods.index()].get(&key)?.clone();
                crate::oracle::pod_is_live(&pod.value)
                    .then(|| inner.oracle.arrive(namespace, Decision::Delete(&pod.value)))
            }
        }
    }

    /// The request `id` ended, committed or not.
    pub fn depart(&self, id: ArrivalId) {
        self.inner.lock().oracle.depart(id);
    }

    /// Lets the oracle judge a decision made on a set's previous size fair while the change is
    /// younger than `allowance` (see [`crate::oracle::knowable`]).
    pub fn set_delivery_allowance(&self, allowance: std::time::Duration) {
        self.inner.lock().oracle.set_delivery_allowance(allowance);
    }

    /// Every violation the oracle found.
    pub fn violations(&self) -> Vec<Violation> {
        self.inner.lock().oracle.violations().to_vec()
    }

    /// How many violations the oracle found (cheap: the simulation checks it after every step).
    pub fn violation_count(&self) -> usize {
        self.inner.lock().oracle.violations().len()
    }

    /// Every write recorded.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.inner.lock().oracle.writes().to_vec()
    }

    /// How many writes were recorded.
    pub fn write_count(&self) -> u64 {
        self.inner.lock().oracle.writes().len() as u64
    }

    /// The ground truth about every ReplicaSet.
    pub fn replicaset_truth(&self) -> Vec<ReplicaSetTruth> {
        self.set_truth(Resource::ReplicaSets)
    }

    /// The ground truth about every StatefulSet (the same figures as for ReplicaSets).
    pub fn statefulset_truth(&self) -> Vec<ReplicaSetTruth> {
        self.set_truth(Resource::StatefulSets)
    }

    fn set_truth(&self, resource: Resource) -> Vec<ReplicaSetTruth> {
        let inner = self.inner.lock();
        inner.objects[resource.index()]
            .values()
            .map(|rs| {
                let v = &rs.value;
                ReplicaSetTruth {
                    namespace: meta_str(v, "namespace").to_string(),
                    name: meta_str(v, "name").to_string(),
                    generation: v["metadata"]["generation"].as_i64().unwrap_or(0),
                    spec_replicas: desired_replicas(v),
                    live_pods: inner.oracle.live_pods(meta_str(v, "uid")),
                    status_replicas: v["status"]["replicas"].as_i64().unwrap_or(0),
                    status_ready_replicas: v["status"]["readyReplicas"].as_i64().unwrap_or(0),
                    observed_generation: v["status"]["observedGeneration"].as_i64().unwrap_or(0),
                    outdated_pods: if resource == Resource::StatefulSets {
                        inner.oracle.outdated_statefulset_pods(meta_str(v, "uid"))
                    } else {
                        0
                    },
                    revisions_settled: resource != Resource::StatefulSets
                        || v["status"]["currentRevision"] == v["status"]["updateRevision"],
                }
            })
            .collect()
    }
}
