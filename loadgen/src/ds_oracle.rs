//! The DaemonSet invariants, checked at each write under the store's lock: never two live Pods of
//! one DaemonSet on one Node, and no Pod deleted from a Node that still needs it (the DaemonSet's
//! only live Pod there, on a Node that exists). The second check assumes every Node wants the Pod,
//! so it is skipped for DaemonSets with a node selector or affinity.

use crate::oracle::{Verb, Violation, ViolationKind};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

#[derive(Debug)]
struct DsInfo {
    namespace: String,
    name: String,
    every_node: bool,
}

/// What the checker knows about DaemonSets, their live Pods and the Nodes.
#[derive(Debug, Default)]
pub struct DaemonSetOracle {
    sets: HashMap<String, DsInfo>,
    /// (DaemonSet uid, node) -> live Pod uids.
    placed: HashMap<(String, String), HashSet<String>>,
    nodes: HashSet<String>,
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}

fn live(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && !matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        )
}

impl DaemonSetOracle {
    /// A DaemonSet was written (`new` absent: deleted).
    pub fn record_set(&mut self, prev: Option<&Value>, new: Option<&Value>) {
        let Some(obj) = new.or(prev) else { return };
        let uid = meta(obj, "uid").to_string();
        match new.filter(|d| d["metadata"]["deletionTimestamp"].is_null()) {
            Some(ds) => {
                let spec = &ds["spec"]["template"]["spec"];
                self.sets.insert(
                    uid,
                    DsInfo {
                        namespace: meta(ds, "namespace").to_string(),
                        name: meta(ds, "name").to_string(),
                        every_node: spec["nodeSelector"].is_null() && spec["affinity"].is_null(),
                    },
                );
            }
            None => {
                self.sets.remove(&uid);
            }
        }
    }

    /// A Node was written (`new` absent: deleted).
    pub fn record_node(&mut self, prev: Option<&Value>, new: Option<&Value>) {
        let Some(obj) = new.or(prev) else { return };
        let name = meta(obj, "name").to_string();
        if new.is_some_and(|n| n["metadata"]["deletionTimestamp"].is_null()) {
            self.nodes.insert(name);
        } else {
            self.nodes.remove(&name);
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
        let owner = obj["metadata"]["ownerReferences"]
            .as_array()?
            .iter()
            .find(|o| o["controller"] == true && o["kind"] == "DaemonSet")?;
        let ds_uid = owner["uid"].as_str()?.to_string();
        let node = obj["spec"]["nodeName"].as_str()?.to_string();
        let pod_uid = meta(obj, "uid").to_string();
        let set = self.sets.get(&ds_uid);
        let here = self.placed.entry((ds_uid, node.clone())).or_default();
        let was = prev.is_some_and(live);
        let is = new.is_some_and(live);
        let found = set.and_then(|set| {
            let violation = |kind| Violation {
                kind,
                revision,
                namespace: set.namespace.clone(),
                replicaset: set.name.clone(),
                live: here.len() as i64,
                desired: 1,
                pod: format!("{} on {node}", meta(obj, "name")),
                user_agent: user_agent.map(str::to_string),
            };
            if verb == Verb::Create && is && !here.is_empty() {
                Some(violation(ViolationKind::DaemonSetTwoPodsOnANode))
            } else if was
                && !is
                && set.every_node
                && self.nodes.contains(&node)
                && here.len() == 1
                && here.contains(&pod_uid)
            {
                Some(violation(ViolationKind::DaemonSetNeededPodDeleted))
            } else {
                None
            }
        });
        if is {
            here.insert(pod_uid);
        } else {
            here.remove(&pod_uid);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: &str) -> Value {
        json!({"metadata": {"name": name, "uid": format!("u-{name}"),
            "ownerReferences": [{"kind": "DaemonSet", "uid": "d1", "controller": true}]},
            "spec": {"nodeName": node}})
    }

    fn oracle() -> DaemonSetOracle {
        let mut o = DaemonSetOracle::default();
        o.record_set(
            None,
            Some(
                &json!({"metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
            "spec": {"template": {"spec": {}}}}),
            ),
        );
        o.record_node(None, Some(&json!({"metadata": {"name": "n1"}})));
        o
    }

    #[test]
    fn a_second_pod_on_a_node_is_caught() {
        let mut o = oracle();
        assert!(
            o.record_pod(1, Verb::Create, None, Some(&pod("a", "n1")), None)
                .is_none()
        );
        let twice = o.record_pod(2, Verb::Create, None, Some(&pod("b", "n1")), None);
        assert_eq!(
            twice.map(|v| v.kind),
            Some(ViolationKind::DaemonSetTwoPodsOnANode)
        );
        assert!(
            o.record_pod(3, Verb::Delete, Some(&pod("b", "n1")), None, None)
                .is_none(),
            "a duplicate may go"
        );
    }

    #[test]
    fn deleting_the_only_pod_of_a_node_that_still_exists_is_caught() {
        let mut o = oracle();
        o.record_pod(1, Verb::Create, None, Some(&pod("a", "n1")), None);
        let gone = o.record_pod(2, Verb::Delete, Some(&pod("a", "n1")), None, None);
        assert_eq!(
            gone.map(|v| v.kind),
            Some(ViolationKind::DaemonSetNeededPodDeleted)
        );
    }
}
