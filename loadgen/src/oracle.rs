//! The invariant oracle: records every write and checks the ReplicaSet invariant at commit time.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::object::{controller_uid, meta_str};
use crate::resource::Resource;

/// The verb of a recorded write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verb {
    /// POST.
    Create,
    /// PUT of the main resource.
    Update,
    /// PUT of the `/status` subresource.
    UpdateStatus,
    /// DELETE.
    Delete,
}

/// One committed write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriteRecord {
    /// The revision the write committed at.
    pub revision: u64,
    /// What kind of write.
    pub verb: Verb,
    /// The resource written.
    pub resource: Resource,
    /// Namespace of the object.
    pub namespace: String,
    /// Name of the object.
    pub name: String,
    /// Uid of the object.
    pub uid: String,
    /// The client's `User-Agent`, if it sent one (`loadgen` for in-process writes).
    pub user_agent: Option<String>,
    /// For a Lease: its `spec.holderIdentity` after the write (`None` when released or deleted).
    pub lease_holder: Option<String>,
    /// For a Node: after the write it is `Ready=Unknown` or carries the unreachable taint.
    pub node_marked: bool,
    /// When the write committed, in microseconds since the Unix epoch (server clock).
    pub at_micros: u64,
}

impl Serialize for Resource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.plural())
    }
}

/// Which invariant a violation broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ViolationKind {
    /// A Pod was created while its ReplicaSet already had `spec.replicas` live Pods or more.
    OverCreate,
    /// A live Pod was deleted while its ReplicaSet had `spec.replicas` live Pods or fewer.
    WantedPodDeleted,
    /// An OrderedReady StatefulSet's Pod was created before its predecessor was Running and Ready.
    OrdinalBeforePredecessorReady,
    /// A StatefulSet's Pod with an ordinal below `spec.replicas` was deleted.
    WantedOrdinalDeleted,
    /// A Job's Pod was created while the Job already ran `parallelism` active Pods.
    JobOverParallelism,
    /// An Indexed Job's Pod was created for an index that already had an active Pod.
    JobDuplicateIndex,
    /// A Job counted more successes than `completions`.
    JobOverCounted,
    /// A DaemonSet's Pod was created on a Node that already ran one of its Pods.
    DaemonSetTwoPodsOnANode,
    /// A DaemonSet's only Pod on a Node that still needs it was deleted.
    DaemonSetNeededPodDeleted,
}

/// A broken invariant, found at the revision of the write that broke it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Which invariant.
    pub kind: ViolationKind,
    /// The revision of the offending write.
    pub revision: u64,
    /// Namespace of the owning set.
    pub namespace: String,
    /// Name of the owning set (a ReplicaSet or a StatefulSet).
    pub replicaset: String,
    /// Live Pods of the ReplicaSet just before the write.
    pub live: i64,
    /// `spec.replicas` of the ReplicaSet just before the write.
    pub desired: i64,
    /// The Pod created or deleted.
    pub pod: String,
    /// The client's `User-Agent`, if any.
    pub user_agent: Option<String>,
}

/// The ground truth about one ReplicaSet, as the server sees it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplicaSetTruth {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.generation`.
    pub generation: i64,
    /// `spec.replicas` (default 1).
    pub spec_replicas: i64,
    /// Live Pods it controls (exist, not terminating, not Succeeded/Failed).
    pub live_pods: i64,
    /// `status.replicas`.
    pub status_replicas: i64,
    /// `status.readyReplicas`.
    pub status_ready_replicas: i64,
    /// `status.observedGeneration`.
    pub observed_generation: i64,
}

impl ReplicaSetTruth {
    /// It has its desired live Pods, and its status says so for its generation.
    pub fn is_converged(&self) -> bool {
        self.live_pods == self.spec_replicas
            && self.status_replicas == self.spec_replicas
            && self.observed_generation == self.generation
    }
}

#[derive(Debug, Clone)]
struct RsInfo {
    namespace: String,
    name: String,
    desired: i64,
}

/// The recorder and checker. Fed by the store under its write lock, so the state at each
/// revision is exact.
#[derive(Debug, Default)]
pub struct Oracle {
    writes: Vec<WriteRecord>,
    violations: Vec<Violation>,
    replicasets: HashMap<String, RsInfo>,
    live: HashMap<String, i64>,
    statefulsets: crate::sts_oracle::StatefulSetOracle,
    jobs: crate::job_oracle::JobOracle,
    daemonsets: crate::ds_oracle::DaemonSetOracle,
}

/// Whether a Node is marked unreachable: `Ready=Unknown`, or the unreachable taint.
pub fn node_is_marked(node: &Value) -> bool {
    let unknown = node["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "Unknown")
    });
    let tainted = node["spec"]["taints"].as_array().is_some_and(|ts| {
        ts.iter()
            .any(|t| t["key"] == "node.kubernetes.io/unreachable")
    });
    unknown || tainted
}

/// `spec.replicas` of a ReplicaSet (the API default is 1).
pub fn desired_replicas(rs: &Value) -> i64 {
    rs["spec"]["replicas"].as_i64().unwrap_or(1)
}

/// The controlling owner uid of a Pod if the Pod counts as live.
fn live_owner(pod: &Value) -> Option<&str> {
    if !pod["metadata"]["deletionTimestamp"].is_null() {
        return None;
    }
    if matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) {
        return None;
    }
    controller_uid(pod)
}

impl Oracle {
    /// Records a write of `resource` from `prev` to `new` (either absent for create / delete)
    /// at `revision`, checking the invariants against the state just before it.
    pub fn record(
        &mut self,
        revision: u64,
        verb: Verb,
        resource: Resource,
        prev: Option<&Value>,
        new: Option<&Value>,
        user_agent: Option<&str>,
    ) {
        let Some(obj) = new.or(prev) else { return };
        self.writes.push(WriteRecord {
            revision,
            verb,
            resource,
            namespace: meta_str(obj, "namespace").to_string(),
            name: meta_str(obj, "name").to_string(),
            uid: meta_str(obj, "uid").to_string(),
            user_agent: user_agent.map(str::to_string),
            lease_holder: match (resource, new) {
                (Resource::Leases, Some(lease)) => lease["spec"]["holderIdentity"]
                    .as_str()
                    .filter(|h| !h.is_empty())
                    .map(str::to_string),
                _ => None,
            },
            node_marked: match (resource, new) {
                (Resource::Nodes, Some(node)) => node_is_marked(node),
                _ => false,
            },
            at_micros: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
        });
        match resource {
            Resource::Pods => {
                if let Some(v) = self
                    .statefulsets
                    .record_pod(revision, verb, prev, new, user_agent)
                {
                    self.violations.push(v);
                }
                if let Some(v) = self.jobs.record_pod(revision, verb, prev, new, user_agent) {
                    self.violations.push(v);
                }
                if let Some(v) = self
                    .daemonsets
                    .record_pod(revision, verb, prev, new, user_agent)
                {
                    self.violations.push(v);
                }
                self.record_pod(revision, verb, prev, new, obj, user_agent)
            }
            Resource::StatefulSets => self.statefulsets.record_set(prev, new),
            Resource::DaemonSets => self.daemonsets.record_set(prev, new),
            Resource::Nodes => self.daemonsets.record_node(prev, new),
            Resource::Jobs => {
                if let Some(v) = self.jobs.record_job(revision, prev, new, user_agent) {
                    self.violations.push(v);
                }
            }
            Resource::ReplicaSets => {
                let uid = meta_str(obj, "uid").to_string();
                match new {
                    Some(rs) => {
                        self.replicasets.insert(
                            uid,
                            RsInfo {
                                namespace: meta_str(rs, "namespace").to_string(),
                                name: meta_str(rs, "name").to_string(),
                                // A ReplicaSet being deleted (foreground deletion
                                // waits for its Pods) wants none: removing its Pods
                                // is not a violation, creating one is.
                                desired: if rs["metadata"]["deletionTimestamp"].is_null() {
                                    desired_replicas(rs)
                                } else {
                                    0
                                },
                            },
                        );
                    }
                    None => {
                        self.replicasets.remove(&uid);
                    }
                }
            }
            _ => {}
        }
    }

    fn record_pod(
        &mut self,
        revision: u64,
        verb: Verb,
        prev: Option<&Value>,
        new: Option<&Value>,
        obj: &Value,
        user_agent: Option<&str>,
    ) {
        let before = prev.and_then(live_owner);
        let after = new.and_then(live_owner);
        let check = match (verb, before, after) {
            (Verb::Create, _, Some(owner)) => Some((ViolationKind::OverCreate, owner)),
            (Verb::Delete, Some(owner), _) => Some((ViolationKind::WantedPodDeleted, owner)),
            _ => None,
        };
        if let Some((kind, owner)) = check
            && let Some(rs) = self.replicasets.get(owner)
        {
            let live = self.live.get(owner).copied().unwrap_or(0);
            let broken = match kind {
                ViolationKind::OverCreate => live >= rs.desired,
                ViolationKind::WantedPodDeleted => live <= rs.desired,
                ViolationKind::OrdinalBeforePredecessorReady
                | ViolationKind::WantedOrdinalDeleted
                | ViolationKind::JobOverParallelism
                | ViolationKind::JobDuplicateIndex
                | ViolationKind::JobOverCounted
                | ViolationKind::DaemonSetTwoPodsOnANode
                | ViolationKind::DaemonSetNeededPodDeleted => false,
            };
            if broken {
                self.violations.push(Violation {
                    kind,
                    revision,
                    namespace: rs.namespace.clone(),
                    replicaset: rs.name.clone(),
                    live,
                    desired: rs.desired,
                    pod: meta_str(obj, "name").to_string(),
                    user_agent: user_agent.map(str::to_string),
                });
            }
        }
        if before != after {
            if let Some(b) = before {
                let gone = self.live.get_mut(b).map(|n| {
                    *n -= 1;
                    *n <= 0
                });
                if gone == Some(true) {
                    self.live.remove(b);
                }
            }
            if let Some(a) = after {
                *self.live.entry(a.to_string()).or_insert(0) += 1;
            }
        }
    }

    /// Live Pods controlled by the owner with `uid`.
    pub fn live_pods(&self, uid: &str) -> i64 {
        self.live.get(uid).copied().unwrap_or(0)
    }

    /// Every violation found so far.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Every write so far, in revision order.
    pub fn writes(&self) -> &[WriteRecord] {
        &self.writes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rs(replicas: i64) -> Value {
        json!({"metadata": {"name": "web", "namespace": "ns", "uid": "rs-1"}, "spec": {"replicas": replicas}})
    }

    fn pod(name: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "uid": name,
            "ownerReferences": [{"uid": "rs-1", "controller": true}]}})
    }

    #[test]
    fn one_pod_too_many_is_an_over_create() {
        let mut o = Oracle::default();
        o.record(
            1,
            Verb::Create,
            Resource::ReplicaSets,
            None,
            Some(&rs(2)),
            None,
        );
        o.record(2, Verb::Create, Resource::Pods, None, Some(&pod("a")), None);
        o.record(3, Verb::Create, Resource::Pods, None, Some(&pod("b")), None);
        assert!(o.violations().is_empty());
        o.record(
            4,
            Verb::Create,
            Resource::Pods,
            None,
            Some(&pod("c")),
            Some("ctl"),
        );
        let v = &o.violations()[0];
        assert_eq!(
            (v.kind, v.revision, v.live, v.desired),
            (ViolationKind::OverCreate, 4, 2, 2)
        );
        assert_eq!(o.live_pods("rs-1"), 3);
        assert_eq!(o.writes().len(), 4);
    }

    #[test]
    fn a_replicaset_being_deleted_wants_no_pods() {
        let mut o = Oracle::default();
        o.record(
            1,
            Verb::Create,
            Resource::ReplicaSets,
            None,
            Some(&rs(2)),
            None,
        );
        o.record(2, Verb::Create, Resource::Pods, None, Some(&pod("a")), None);
        let mut terminating = rs(2);
        terminating["metadata"]["deletionTimestamp"] = "2026-12-02T16:00:00Z".into();
        o.record(
            3,
            Verb::Update,
            Resource::ReplicaSets,
            Some(&rs(2)),
            Some(&terminating),
            None,
        );
        o.record(4, Verb::Delete, Resource::Pods, Some(&pod("a")), None, None);
        assert!(
            o.violations().is_empty(),
            "foreground GC of its Pods is wanted"
        );
        o.record(5, Verb::Create, Resource::Pods, None, Some(&pod("b")), None);
        assert_eq!(
            o.violations().len(),
            1,
            "a Pod for a terminating owner is an over-create"
        );
    }

    #[test]
    fn deleting_a_wanted_pod_is_a_violation_but_gc_after_the_owner_is_not() {
        let mut o = Oracle::default();
        o.record(
            1,
            Verb::Create,
            Resource::ReplicaSets,
            None,
            Some(&rs(1)),
            None,
        );
        o.record(2, Verb::Create, Resource::Pods, None, Some(&pod("a")), None);
        o.record(3, Verb::Create, Resource::Pods, None, Some(&pod("b")), None);
        o.record(4, Verb::Delete, Resource::Pods, Some(&pod("b")), None, None);
        assert_eq!(o.violations().len(), 1, "the over-create only");
        o.record(5, Verb::Delete, Resource::Pods, Some(&pod("a")), None, None);
        assert_eq!(o.violations()[1].kind, ViolationKind::WantedPodDeleted);
        o.record(6, Verb::Create, Resource::Pods, None, Some(&pod("c")), None);
        o.record(
            7,
            Verb::Delete,
            Resource::ReplicaSets,
            Some(&rs(1)),
            None,
            None,
        );
        o.record(8, Verb::Delete, Resource::Pods, Some(&pod("c")), None, None);
        assert_eq!(o.violations().len(), 2);
        assert_eq!(o.live_pods("rs-1"), 0);
    }

    #[test]
    fn a_failed_pod_is_not_live() {
        let mut o = Oracle::default();
        o.record(
            1,
            Verb::Create,
            Resource::ReplicaSets,
            None,
            Some(&rs(1)),
            None,
        );
        o.record(2, Verb::Create, Resource::Pods, None, Some(&pod("a")), None);
        let mut failed = pod("a");
        failed["status"] = json!({"phase": "Failed"});
        o.record(
            3,
            Verb::UpdateStatus,
            Resource::Pods,
            Some(&pod("a")),
            Some(&failed),
            None,
        );
        o.record(4, Verb::Create, Resource::Pods, None, Some(&pod("b")), None);
        o.record(5, Verb::Delete, Resource::Pods, Some(&failed), None, None);
        assert!(o.violations().is_empty());
    }
}
