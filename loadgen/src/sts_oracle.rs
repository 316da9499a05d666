//! The StatefulSet invariants, checked at each write under the store's lock: under OrderedReady
//! no ordinal is created before its predecessor is Running and Ready, and a scale-down deletes
//! only ordinals at or above `spec.replicas` (never a wanted one). Two live Pods with one ordinal
//! cannot exist: a StatefulSet Pod's name is its ordinal, and names are unique.

use crate::oracle::{Verb, Violation, ViolationKind};
use serde_json::Value;
use std::collections::HashMap;

#[derive(Debug)]
struct SetInfo {
    namespace: String,
    name: String,
    desired: i64,
    parallel: bool,
}

/// What the checker knows about every StatefulSet and its live Pods.
#[derive(Debug, Default)]
pub struct StatefulSetOracle {
    sets: HashMap<String, SetInfo>,
    /// (set uid, ordinal) -> Running and Ready.
    live: HashMap<(String, usize), bool>,
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}

fn controller(pod: &Value) -> Option<(&str, &str)> {
    pod["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true)
        .and_then(|o| Some((o["kind"].as_str()?, o["uid"].as_str()?)))
}

fn live(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && !matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        )
}

fn running_and_ready(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running"
        && pod["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

impl StatefulSetOracle {
    /// A StatefulSet was written (`new` absent: deleted).
    pub fn record_set(&mut self, prev: Option<&Value>, new: Option<&Value>) {
        let Some(obj) = new.or(prev) else { return };
        let uid = meta(obj, "uid").to_string();
        match new {
            Some(set) => {
                let terminating = !set["metadata"]["deletionTimestamp"].is_null();
                self.sets.insert(
                    uid,
                    SetInfo {
                        namespace: meta(set, "namespace").to_string(),
                        name: meta(set, "name").to_string(),
                        desired: if terminating {
                            0
                        } else {
                            set["spec"]["replicas"].as_i64().unwrap_or(1)
                        },
                        parallel: set["spec"]["podManagementPolicy"] == "Parallel",
                    },
                );
            }
            None => {
                self.sets.remove(&uid);
            }
        }
    }

    /// A Pod was written; returns the violation it is, if any.
    pub fn record_pod(
        &mut self,
        revision: u64,
        verb: Verb,
        prev: Option<&Value>,
        new: Option<&Value>,
        user_agent: Option<&str>,
    ) -> Option<Violation> {
        let obj = new.or(prev)?;
        let (kind, uid) = controller(obj)?;
        if kind != "StatefulSet" {
            return None;
        }
        let set = self.sets.get(uid)?;
        let ordinal: usize = meta(obj, "name")
            .strip_prefix(set.name.as_str())?
            .strip_prefix('-')?
            .parse()
            .ok()?;
        let was = prev.is_some_and(live);
        let is = new.is_some_and(live);
        let violation = |kind, pod_live: i64| Violation {
            kind,
            revision,
            namespace: set.namespace.clone(),
            replicaset: set.name.clone(),
            live: pod_live,
            desired: set.desired,
            pod: meta(obj, "name").to_string(),
            user_agent: user_agent.map(str::to_string),
        };
        let live_count = self.live.keys().filter(|(u, _)| u == uid).count() as i64;
        let found = if verb == Verb::Create && is && !set.parallel && ordinal > 0 {
            let predecessor = self.live.get(&(uid.to_string(), ordinal - 1)).copied();
            (predecessor != Some(true))
                .then(|| violation(ViolationKind::OrdinalBeforePredecessorReady, live_count))
        } else if was && !is && (ordinal as i64) < set.desired {
            Some(violation(ViolationKind::WantedOrdinalDeleted, live_count))
        } else {
            None
        };
        let slot = (uid.to_string(), ordinal);
        match new.filter(|p| live(p)) {
            Some(pod) => {
                self.live.insert(slot, running_and_ready(pod));
            }
            None => {
                self.live.remove(&slot);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(replicas: i64, parallel: bool) -> Value {
        json!({"metadata": {"name": "db", "namespace": "ns", "uid": "s1"},
            "spec": {"replicas": replicas, "podManagementPolicy": if parallel { "Parallel" } else { "OrderedReady" }}})
    }

    fn pod(ordinal: usize, ready: bool) -> Value {
        let status = if ready {
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
        } else {
            json!({"phase": "Pending"})
        };
        json!({"metadata": {"name": format!("db-{ordinal}"), "namespace": "ns",
            "ownerReferences": [{"kind": "StatefulSet", "uid": "s1", "controller": true}]},
            "status": status})
    }

    #[test]
    fn an_ordinal_created_before_its_predecessor_is_ready_is_caught() {
        let mut o = StatefulSetOracle::default();
        o.record_set(None, Some(&set(3, false)));
        assert!(
            o.record_pod(1, Verb::Create, None, Some(&pod(0, false)), None)
                .is_none()
        );
        let early = o.record_pod(2, Verb::Create, None, Some(&pod(1, false)), None);
        assert_eq!(
            early.map(|v| v.kind),
            Some(ViolationKind::OrdinalBeforePredecessorReady)
        );
        o.record_pod(
            3,
            Verb::UpdateStatus,
            Some(&pod(1, false)),
            Some(&pod(1, true)),
            None,
        );
        assert!(
            o.record_pod(4, Verb::Create, None, Some(&pod(2, false)), None)
                .is_none()
        );
    }

    #[test]
    fn parallel_sets_may_create_out_of_order_but_never_delete_a_wanted_ordinal() {
        let mut o = StatefulSetOracle::default();
        o.record_set(None, Some(&set(2, true)));
        assert!(
            o.record_pod(1, Verb::Create, None, Some(&pod(1, false)), None)
                .is_none()
        );
        o.record_pod(2, Verb::Create, None, Some(&pod(2, true)), None);
        assert!(
            o.record_pod(3, Verb::Delete, Some(&pod(2, true)), None, None)
                .is_none()
        );
        let wanted = o.record_pod(4, Verb::Delete, Some(&pod(1, false)), None, None);
        assert_eq!(
            wanted.map(|v| v.kind),
            Some(ViolationKind::WantedOrdinalDeleted)
        );
    }
}
