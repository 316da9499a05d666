//! The oracle as the server runs it: one [`Oracle`] shared between the store, which it observes
//! as a [`CommitObserver`], and the request path, which shows it Pod writes as they arrive.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use crate::meta::meta_str;
use crate::oracle::in_flight::Decision;
use crate::oracle::{
    Oracle, ReplicaSetTruth, Violation, WriteRecord, desired_replicas, pod_is_live,
};
use crate::resource::Resource;
use crate::store::{Commit, CommitObserver, RequestId, Store};

/// A Pod write that reached the server, as [`SharedOracle::arrive`] takes it.
#[derive(Debug, Clone, Copy)]
pub enum Arriving<'a> {
    /// A create with this body.
    Create(&'a Value),
    /// A delete of the Pod with this name.
    Delete(&'a str),
}

/// A handle on one oracle; clones share it. Lock order: the store's write lock, then the
/// oracle's (commits arrive holding the first), never the other way round.
#[derive(Debug, Clone, Default)]
pub struct SharedOracle(Arc<Mutex<Oracle>>);

impl CommitObserver for SharedOracle {
    fn committed(&mut self, commit: &Commit<'_>) {
        self.0.lock().observe(commit);
    }
}

impl SharedOracle {
    /// A new oracle observing every commit of `store` from now on.
    pub fn observing(store: &Store) -> SharedOracle {
        let oracle = SharedOracle::default();
        store.observe_commits(oracle.clone());
        oracle
    }

    /// A request to create a Pod (`body`) or delete the Pod `name` reached the server: the
    /// oracle judges it against the state now, with commits held off while it does. `None`
    /// when there is nothing to judge (no live Pod of that name to delete).
    pub fn arrive(
        &self,
        store: &Store,
        namespace: &str,
        arriving: Arriving<'_>,
    ) -> Option<RequestId> {
        store.read_locked(|objects| {
            let decision = match arriving {
                Arriving::Create(body) => Decision::Create(body),
                Arriving::Delete(name) => {
                    let key = (namespace.to_string(), name.to_string());
                    let pod = objects.get(Resource::Pods, &key)?;
                    Decision::Delete(pod_is_live(pod).then_some(pod)?)
                }
            };
            Some(self.0.lock().arrive(namespace, decision))
        })
    }

    /// The request `id` ended, committed or not.
    pub fn depart(&self, id: RequestId) {
        self.0.lock().depart(id);
    }

    /// Lets the oracle judge a decision made on a set's previous size fair while the change is
    /// younger than `allowance` (see [`crate::oracle::knowable`]).
    pub fn set_delivery_allowance(&self, allowance: std::time::Duration) {
        self.0.lock().set_delivery_allowance(allowance);
    }

    /// Every violation found.
    pub fn violations(&self) -> Vec<Violation> {
        self.0.lock().violations().to_vec()
    }

    /// How many violations were found (cheap: the simulation checks it after every step).
    pub fn violation_count(&self) -> usize {
        self.0.lock().violations().len()
    }

    /// Every write recorded.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.0.lock().writes().to_vec()
    }

    /// How many writes were recorded.
    pub fn write_count(&self) -> u64 {
        self.0.lock().writes().len() as u64
    }

    /// The ground truth about every ReplicaSet of `store`.
    pub fn replicaset_truth(&self, store: &Store) -> Vec<ReplicaSetTruth> {
        self.set_truth(store, Resource::ReplicaSets)
    }

    /// The ground truth about every StatefulSet of `store` (the same figures as for
    /// ReplicaSets).
    pub fn statefulset_truth(&self, store: &Store) -> Vec<ReplicaSetTruth> {
        self.set_truth(store, Resource::StatefulSets)
    }

    fn set_truth(&self, store: &Store, resource: Resource) -> Vec<ReplicaSetTruth> {
        store.read_locked(|objects| {
            let oracle = self.0.lock();
            objects
                .values(resource)
                .map(|v| Self::truth_of(&oracle, resource, v))
                .collect()
        })
    }

    fn truth_of(oracle: &Oracle, resource: Resource, v: &Value) -> ReplicaSetTruth {
        let uid = meta_str(v, "uid");
        ReplicaSetTruth {
            namespace: meta_str(v, "namespace").to_string(),
            name: meta_str(v, "name").to_string(),
            generation: v["metadata"]["generation"].as_i64().unwrap_or(0),
            spec_replicas: desired_replicas(v),
            live_pods: oracle.live_pods(uid),
            status_replicas: v["status"]["replicas"].as_i64().unwrap_or(0),
            status_ready_replicas: v["status"]["readyReplicas"].as_i64().unwrap_or(0),
            observed_generation: v["status"]["observedGeneration"].as_i64().unwrap_or(0),
            outdated_pods: if resource == Resource::StatefulSets {
                oracle.outdated_statefulset_pods(uid)
            } else {
                0
            },
            revisions_settled: resource != Resource::StatefulSets
                || v["status"]["currentRevision"] == v["status"]["updateRevision"],
        }
    }
}
