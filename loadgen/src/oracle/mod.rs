//! The invariant oracle: records every write, and checks every controller's Pod decisions
//! against the state when its request arrived (see [`Oracle`]).

pub mod adoption;
pub mod claim_retention;
pub mod daemonset;
pub mod in_flight;
pub mod job;
pub mod knowable;
pub mod leadership;
pub mod malformed;
pub mod node;
pub mod range_writers;
pub mod replicaset;
mod shared;
pub mod statefulset;
pub mod template_mark;
pub mod truth;

pub use shared::{Arriving, SharedOracle};

use serde::Serialize;
use serde_json::Value;

use crate::meta::meta_str;
use crate::oracle::in_flight::{Decision, InFlight};
use crate::oracle::replicaset::ReplicaSetOracle;
use crate::resource::Resource;
pub use crate::store::{Commit, RequestId, Verb};

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
    /// For a Node that after the write carries node lifecycle's `NoExecute` taint (`not-ready`
    /// or `unreachable`): its zone (the `topology.kubernetes.io/zone` label, empty without).
    pub node_evicting_zone: Option<String>,
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
    /// A StatefulSet's Pod with an ordinal below `spec.replicas` was deleted (and not as a
    /// rolling update's replacement of a Pod of an older template).
    WantedOrdinalDeleted,
    /// A rolling update deleted a StatefulSet Pod while `maxUnavailable` wanted Pods or more were
    /// already unavailable.
    RolloutBeyondMaxUnavailable,
    /// A Job's Pod was created while the Job already ran `parallelism` active Pods.
    JobOverParallelism,
    /// An Indexed Job's Pod was created for an index that already had an active Pod.
    JobDuplicateIndex,
    /// A Job counted more successes than `completions`.
    JobOverCounted,
    /// A Job's Pod was created while the Job was suspended.
    JobPodWhileSuspended,
    /// A Job failed for its backoff limit while the failures its podFailurePolicy does not
    /// ignore were within it.
    JobFailedDespiteIgnoredFailures,
    /// A DaemonSet's Pod was created on a Node that already ran one of its Pods.
    DaemonSetTwoPodsOnANode,
    /// A DaemonSet's only Pod on a Node that still needs it was deleted.
    DaemonSetNeededPodDeleted,
    /// A Pod was created or deleted for an owner whose decisive fields were malformed.
    ActionOnMalformedOwner,
    /// A ReplicaSet's Pod was created while orphans older than the set, that its selector
    /// matches, would have made up its `spec.replicas` once adopted.
    AdoptionOverCreate,
    /// A Pod has two ownerReferences with `controller: true`.
    TwoControllers,
    /// An orphan was adopted by an owner being deleted, or by one that no longer exists.
    AdoptedByOwnerBeingDeleted,
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
    /// Live Pods of the owner (active Pods of a Job, Pods of the DaemonSet on the Node) when the
    /// decision was judged.
    pub live: i64,
    /// Creates minus deletes of the owner's Pods already in flight then.
    pub in_flight: i64,
    /// `spec.replicas` of the owner (a Job's parallelism) then.
    pub desired: i64,
    /// Judged at the request's arrival (else at its commit).
    pub at_arrival: bool,
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
    /// Live Pods of an older template (a StatefulSet's rolling update still running).
    pub outdated_pods: i64,
    /// The status names one revision as both current and update (always for ReplicaSets).
    pub revisions_settled: bool,
}

impl ReplicaSetTruth {
    /// It has its desired live Pods, all of its template, and its status says so for its
    /// generation.
    pub fn is_converged(&self) -> bool {
        self.live_pods == self.spec_replicas
            && self.status_replicas == self.spec_replicas
            && self.observed_generation == self.generation
            && self.outdated_pods == 0
            && self.revisions_settled
    }
}

/// The recorder and checker. It observes the store's commits as a
/// [`crate::store::CommitObserver`] (through [`SharedOracle`]), told of each under the store's
/// write lock, so the state at each arrival and each revision is exact; the store knows nothing
/// of it.
///
/// A controller's decision (create or delete a Pod) is judged against what was knowable when
/// its request reached the server: the state then, and the Pod writes that had arrived before
/// it and not committed yet. A request that then waits (injected latency) while the user
/// changes the spec commits a race no controller could avoid, and is not counted. Writes made
/// inside the server (no arrival) are judged at commit. Checks that are invariants of the
/// state itself (two Pods of one DaemonSet on a Node, two active Pods for one Job index) are
/// made at commit.
#[derive(Debug, Default)]
pub struct Oracle {
    writes: Vec<WriteRecord>,
    violations: Vec<Violation>,
    in_flight: InFlight,
    replicasets: ReplicaSetOracle,
    statefulsets: crate::oracle::statefulset::StatefulSetOracle,
    jobs: crate::oracle::job::JobOracle,
    daemonsets: crate::oracle::daemonset::DaemonSetOracle,
    malformed: crate::oracle::malformed::MalformedOwners,
    adoption: crate::oracle::adoption::AdoptionOracle,
    /// How long a change of a set's size may take to reach a controller (see
    /// [`knowable`]); zero judges against the state at arrival alone.
    delivery_allowance: std::time::Duration,
}

/// Node lifecycle's two marks on a Node: `Ready=Unknown`, and the unreachable taint.
pub fn node_marks(node: &Value) -> (bool, bool) {
    let unknown = node["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "Unknown")
    });
    let tainted = node["spec"]["taints"].as_array().is_some_and(|ts| {
        ts.iter()
            .any(|t| t["key"] == "node.kubernetes.io/unreachable")
    });
    (unknown, tainted)
}

/// The zone of a Node that carries node lifecycle's `NoExecute` taint (its Pods are being
/// evicted); `None` for one that does not.
pub fn node_evicting_zone(node: &Value) -> Option<String> {
    let evicting = node["spec"]["taints"].as_array().is_some_and(|ts| {
        ts.iter().any(|t| {
            t["effect"] == "NoExecute"
                && (t["key"] == "node.kubernetes.io/unreachable"
                    || t["key"] == "node.kubernetes.io/not-ready")
        })
    });
    evicting.then(|| {
        node["metadata"]["labels"]["topology.kubernetes.io/zone"]
            .as_str()
            .unwrap_or("")
            .to_string()
    })
}

/// Whether a Node is marked unreachable: `Ready=Unknown`, or the unreachable taint.
pub fn node_is_marked(node: &Value) -> bool {
    let (unknown, tainted) = node_marks(node);
    unknown || tainted
}

/// `spec.replicas` of a ReplicaSet (the API default is 1).
pub fn desired_replicas(rs: &Value) -> i64 {
    rs["spec"]["replicas"].as_i64().unwrap_or(1)
}

/// A Pod that exists, is not terminating and has not finished.
pub fn pod_is_live(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && !matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        )
}

impl Oracle {
    /// A request to create or delete a Pod in `namespace` reached the server: the decision is
    /// judged now, and counted as in flight until it commits or its request ends.
    pub fn arrive(&mut self, namespace: &str, decision: Decision<'_>) -> RequestId {
        let verdicts = self.judge(decision);
        self.in_flight.arrive(namespace, decision, verdicts)
    }

    /// The request `id` ended (committed or not).
    pub fn depart(&mut self, id: RequestId) {
        self.in_flight.depart(id);
    }

    /// Lets a decision made on a set's previous size count as fair while the change is younger
    /// than `allowance` (the real server; the deterministic simulation keeps zero).
    pub fn set_delivery_allowance(&mut self, allowance: std::time::Duration) {
        self.delivery_allowance = allowance;
    }

    fn judge(&self, decision: Decision<'_>) -> Vec<Violation> {
        let f = &self.in_flight;
        let (allowance, at) = (self.delivery_allowance, crate::clock::monotonic_now());
        [
            self.replicasets
                .judge(decision, f, allowance, at, &self.adoption),
            self.statefulsets.judge(decision, f, allowance, at),
            self.jobs.judge(decision, f, allowance, at),
            self.daemonsets.judge(decision, f),
            self.malformed.judge(decision),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Records a committed write, checking the invariants against the state just before it
    /// (or, for a decision the oracle saw arrive, against the state at its arrival).
    pub fn observe(&mut self, c: &Commit<'_>) {
        let Some(obj) = c.new.or(c.prev) else { return };
        self.writes.push(WriteRecord {
            revision: c.revision,
            verb: c.verb,
            resource: c.resource,
            namespace: meta_str(obj, "namespace").to_string(),
            name: meta_str(obj, "name").to_string(),
            uid: meta_str(obj, "uid").to_string(),
            user_agent: c.user_agent.map(str::to_string),
            lease_holder: match (c.resource, c.new) {
                (Resource::Leases, Some(lease)) => lease["spec"]["holderIdentity"]
                    .as_str()
                    .filter(|h| !h.is_empty())
                    .map(str::to_string),
                _ => None,
            },
            node_marked: match (c.resource, c.new) {
                (Resource::Nodes, Some(node)) => node_is_marked(node),
                _ => false,
            },
            node_evicting_zone: match (c.resource, c.new) {
                (Resource::Nodes, Some(node)) => node_evicting_zone(node),
                _ => None,
            },
            at_micros: crate::clock::wall_micros(),
        });
        if matches!(
            c.resource,
            Resource::ReplicaSets | Resource::StatefulSets | Resource::DaemonSets | Resource::Jobs
        ) {
            self.malformed.record_owner(c.resource, c.prev, c.new);
            self.adoption
                .record_owner(c.resource, c.prev, c.new, c.revision);
        }
        match c.resource {
            Resource::Pods => self.observe_pod(c, obj),
            Resource::ReplicaSets => {
                self.replicasets
                    .record_set(c.prev, c.new, crate::clock::monotonic_now())
            }
            Resource::StatefulSets => {
                self.statefulsets
                    .record_set(c.prev, c.new, crate::clock::monotonic_now())
            }
            Resource::DaemonSets => self.daemonsets.record_set(c.prev, c.new),
            Resource::Nodes => self.daemonsets.record_node(c.prev, c.new),
            Resource::Jobs => {
                if let Some(v) = self
                    .jobs
                    .record_job(c.revision, c.prev, c.new, c.user_agent)
                {
                    self.violations.push(v);
                }
            }
            _ => {}
        }
    }

    fn observe_pod(&mut self, c: &Commit<'_>, obj: &Value) {
        let decision = match (c.verb, c.prev, c.new) {
            (Verb::Create, _, Some(pod)) if pod_is_live(pod) => Some(Decision::Create(pod)),
            (Verb::Delete, Some(pod), after)
                if pod_is_live(pod) && !after.is_some_and(pod_is_live) =>
            {
                Some(Decision::Delete(pod))
            }
            _ => None,
        };
        let (namespace, name) = (meta_str(obj, "namespace"), meta_str(obj, "name"));
        let at_arrival = c
            .request
            .and_then(|id| self.in_flight.commit(id, c.verb, namespace, name));
        let verdicts = match (decision, at_arrival) {
            (None, _) => Vec::new(),
            (Some(_), Some(verdicts)) => verdicts
                .into_iter()
                .map(|v| Violation {
                    at_arrival: true,
                    ..v
                })
                .collect(),
            (Some(d), None) => self.judge(d),
        };
        let strict = [
            self.jobs.record_pod(c.verb, c.prev, c.new),
            self.daemonsets.record_pod(c.verb, c.prev, c.new),
        ];
        let adoption = self.adoption.record_pod(c.prev, c.new, c.revision);
        self.statefulsets.record_pod(c.prev, c.new);
        self.replicasets.record_pod(c.prev, c.new);
        for v in verdicts
            .into_iter()
            .chain(strict.into_iter().flatten())
            .chain(adoption)
        {
            self.violations.push(Violation {
                revision: c.revision,
                pod: if v.pod.is_empty() {
                    name.to_string()
                } else {
                    v.pod
                },
                user_agent: c.user_agent.map(str::to_string),
                ..v
            });
        }
    }

    /// Live Pods of the StatefulSet `uid` made from an older template.
    pub fn outdated_statefulset_pods(&self, uid: &str) -> i64 {
        self.statefulsets.outdated_pods(uid)
    }

    /// Live Pods controlled by the owner with `uid`.
    pub fn live_pods(&self, uid: &str) -> i64 {
        self.replicasets.live_pods(uid)
    }

    /// Pod writes that arrived and have not committed (or failed) yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
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
mod tests;
