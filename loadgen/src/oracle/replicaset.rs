//! The ReplicaSet invariants: no Pod created while its ReplicaSet already has `spec.replicas`
//! live Pods or more (counting the creates and deletes of its Pods already on their way, and
//! apart the orphans it was to adopt), and no live Pod deleted while it has that many or fewer.
//! Both judge the controller's decision against the state when its request reached the server.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::meta::{controller_uid, meta_str};
use crate::oracle::adoption::AdoptionOracle;
use crate::oracle::in_flight::{Decision, InFlight};
use crate::oracle::knowable::Desired;
use crate::oracle::{Violation, ViolationKind, desired_replicas};

#[derive(Debug, Clone)]
struct RsInfo {
    namespace: String,
    name: String,
    desired: Desired,
}

/// What the checker knows about every ReplicaSet and its live Pods.
#[derive(Debug, Default)]
pub struct ReplicaSetOracle {
    sets: HashMap<String, RsInfo>,
    live: HashMap<String, i64>,
}

/// The controlling owner uid of a Pod if the Pod counts as live.
pub fn live_owner(pod: &Value) -> Option<&str> {
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

impl ReplicaSetOracle {
    /// A ReplicaSet was written at `at` (`new` absent: deleted).
    pub fn record_set(&mut self, prev: Option<&Value>, new: Option<&Value>, at: Instant) {
        let Some(obj) = new.or(prev) else { return };
        let uid = meta_str(obj, "uid").to_string();
        match new {
            Some(rs) => {
                // A ReplicaSet being deleted (foreground deletion waits for its Pods) wants
                // none: removing its Pods is not a violation, creating one is.
                let size = if rs["metadata"]["deletionTimestamp"].is_null() {
                    desired_replicas(rs)
                } else {
                    0
                };
                let desired = Desired::follow(self.sets.get(&uid).map(|k| k.desired), size, at);
                self.sets.insert(
                    uid,
                    RsInfo {
                        namespace: meta_str(rs, "namespace").to_string(),
                        name: meta_str(rs, "name").to_string(),
                        desired,
                    },
                );
            }
            None => {
                self.sets.remove(&uid);
            }
        }
    }

    /// What `decision`, arriving at `at`, breaks, judged against the state now, the writes
    /// `in_flight`, the size the set had until less than `allowance` ago, and the orphans
    /// `adoption` says the set was to adopt.
    pub fn judge(
        &self,
        decision: Decision<'_>,
        in_flight: &InFlight,
        allowance: Duration,
        at: Instant,
        adoption: &AdoptionOracle,
    ) -> Option<Violation> {
        let pod = decision.pod();
        let owner = live_owner(pod)?;
        let rs = self.sets.get(owner)?;
        let live = self.live_pods(owner);
        let coming = in_flight.net_creates(owner);
        let (fewest, most) = rs.desired.range(allowance, at);
        let (kind, broken) = match decision {
            Decision::Create(_) if live + coming >= most => (ViolationKind::OverCreate, true),
            Decision::Create(_) => (
                ViolationKind::AdoptionOverCreate,
                live + coming + adoption.adoptable(owner) >= most,
            ),
            Decision::Delete(_) => (ViolationKind::WantedPodDeleted, live + coming <= fewest),
        };
        broken.then(|| Violation {
            kind,
            revision: 0,
            namespace: rs.namespace.clone(),
            replicaset: rs.name.clone(),
            live,
            in_flight: coming,
            desired: rs.desired.now,
            pod: meta_str(pod, "name").to_string(),
            user_agent: None,
            at_arrival: false,
        })
    }

    /// A Pod was written: its owner's live count follows.
    pub fn record_pod(&mut self, prev: Option<&Value>, new: Option<&Value>) {
        let before = prev.and_then(live_owner);
        let after = new.and_then(live_owner);
        if before == after {
            return;
        }
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

    /// Live Pods controlled by the owner with `uid`.
    pub fn live_pods(&self, uid: &str) -> i64 {
        self.live.get(uid).copied().unwrap_or(0)
    }
}
