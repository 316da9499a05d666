//! The DaemonSet invariants: never two live Pods of one DaemonSet on one Node (checked at every
//! commit), and no Pod deleted from a Node that still needs it: the DaemonSet's only live Pod
//! there, on a Node that exists and matches the DaemonSet's `nodeSelector` (judged at the
//! request's arrival), unless it is made from an older template and a rolling update may replace
//! it: fewer than `maxUnavailable` needed Nodes are without a live Pod, deletes in flight
//! counted. The second check is skipped for DaemonSets with a node affinity.

use crate::oracle::in_flight::{Decision, InFlight};
use crate::oracle::template_mark::{TemplateMark, mark_of};
use crate::oracle::{Verb, Violation, ViolationKind, pod_is_live};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

type Labels = BTreeMap<String, String>;

#[derive(Debug)]
struct DsInfo {
    namespace: String,
    name: String,
    /// `nodeSelector`; `None` when a node affinity makes the Nodes it wants unknown here.
    selector: Option<Labels>,
    /// The template's mark: a Pod of another was made from an older template.
    mark: TemplateMark,
    /// `maxUnavailable` of a rolling update; `None` for `OnDelete`.
    max_unavailable: Option<Value>,
}

/// `maxUnavailable` as a count of `needed` Nodes: a number, or a percentage rounded up (as
/// upstream scales it for DaemonSets); at least one, as upstream's rolling update needs.
fn scaled(max_unavailable: &Value, needed: usize) -> usize {
    let count = match max_unavailable {
        Value::Number(n) => n.as_u64().map_or(1, |n| n as usize),
        Value::String(p) => p
            .strip_suffix('%')
            .and_then(|p| p.parse::<usize>().ok())
            .map_or(1, |p| (p * needed).div_ceil(100)),
        _ => 1,
    };
    count.max(1)
}

/// What the checker knows about DaemonSets, their live Pods and the Nodes.
#[derive(Debug, Default)]
pub struct DaemonSetOracle {
    sets: HashMap<String, DsInfo>,
    /// (DaemonSet uid, node) -> live Pod uids.
    placed: HashMap<(String, String), HashSet<String>>,
    /// Existing Nodes and their labels.
    nodes: HashMap<String, Labels>,
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}

fn labels(map: &Value) -> Labels {
    map.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The DaemonSet uid and the Node of one of its Pods.
fn placement(pod: &Value) -> Option<(&str, &str)> {
    let owner = pod["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true && o["kind"] == "DaemonSet")?;
    Some((owner["uid"].as_str()?, pod["spec"]["nodeName"].as_str()?))
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
                        selector: spec["affinity"]
                            .is_null()
                            .then(|| labels(&spec["nodeSelector"])),
                        mark: mark_of(&ds["spec"]["template"]),
                        max_unavailable: match ds["spec"]["updateStrategy"]["type"].as_str() {
                            Some("OnDelete") => None,
                            _ => Some(
                                ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"]
                                    .clone(),
                            ),
                        },
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
        match new.filter(|n| n["metadata"]["deletionTimestamp"].is_null()) {
            Some(node) => {
                self.nodes.insert(name, labels(&node["metadata"]["labels"]));
            }
            None => {
                self.nodes.remove(&name);
            }
        }
    }

    /// Whether the DaemonSet wants a Pod on `node` (unknown: no).
    fn needs(&self, set: &DsInfo, node: &str) -> bool {
        let (Some(selector), Some(labels)) = (&set.selector, self.nodes.get(node)) else {
            return false;
        };
        selector.iter().all(|(k, v)| labels.get(k) == Some(v))
    }

    /// What `decision` breaks, judged against the state now.
    pub fn judge(&self, decision: Decision<'_>, in_flight: &InFlight) -> Option<Violation> {
        let Decision::Delete(pod) = decision else {
            return None;
        };
        let (ds_uid, node) = placement(pod)?;
        let set = self.sets.get(ds_uid)?;
        let here = self.placed.get(&(ds_uid.to_string(), node.to_string()))?;
        let only = here.len() == 1 && here.contains(meta(pod, "uid"));
        let replaceable = match &set.max_unavailable {
            Some(max_unavailable) if mark_of(pod) != set.mark => {
                let needed: Vec<&String> =
                    self.nodes.keys().filter(|n| self.needs(set, n)).collect();
                let without = needed
                    .iter()
                    .filter(|n| {
                        self.placed
                            .get(&(ds_uid.to_string(), n.to_string()))
                            .is_none_or(HashSet::is_empty)
                    })
                    .count();
                let deleting = usize::try_from(-in_flight.net_creates(ds_uid).min(0)).unwrap_or(0);
                without + deleting < scaled(max_unavailable, needed.len())
            }
            _ => false,
        };
        (only && !replaceable && self.needs(set, node)).then(|| Violation {
            kind: ViolationKind::DaemonSetNeededPodDeleted,
            revision: 0,
            namespace: set.namespace.clone(),
            replicaset: set.name.clone(),
            live: 1,
            in_flight: 0,
            desired: 1,
            pod: format!("{} on {node}", meta(pod, "name")),
            user_agent: None,
            at_arrival: false,
        })
    }

    /// A Pod was written; returns the violation its commit is (a second Pod on a Node), if any.
    pub fn record_pod(
        &mut self,
        verb: Verb,
        prev: Option<&Value>,
        new: Option<&Value>,
    ) -> Option<Violation> {
        let obj = new.or(prev)?;
        let (ds_uid, node) = placement(obj)?;
        let pod_uid = meta(obj, "uid").to_string();
        let set = self.sets.get(ds_uid);
        let here = self
            .placed
            .entry((ds_uid.to_string(), node.to_string()))
            .or_default();
        let is = new.is_some_and(pod_is_live);
        let found = set
            .filter(|_| verb == Verb::Create && is && !here.is_empty())
            .map(|set| Violation {
                kind: ViolationKind::DaemonSetTwoPodsOnANode,
                revision: 0,
                namespace: set.namespace.clone(),
                replicaset: set.name.clone(),
                live: here.len() as i64,
                in_flight: 0,
                desired: 1,
                pod: format!("{} on {node}", meta(obj, "name")),
                user_agent: None,
                at_arrival: false,
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

    fn oracle(node_selector: Value) -> DaemonSetOracle {
        let mut o = DaemonSetOracle::default();
        o.record_set(
            None,
            Some(
                &json!({"metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
                "spec": {"template": {"spec": {"nodeSelector": node_selector}}}}),
            ),
        );
        o.record_node(
            None,
            Some(&json!({"metadata": {"name": "n1", "labels": {"role": "agent"}}})),
        );
        o
    }

    fn judged(o: &DaemonSetOracle, name: &str) -> Option<ViolationKind> {
        o.judge(Decision::Delete(&pod(name, "n1")), &InFlight::default())
            .map(|v| v.kind)
    }

    #[test]
    fn a_second_pod_on_a_node_is_caught() {
        let mut o = oracle(Value::Null);
        assert!(
            o.record_pod(Verb::Create, None, Some(&pod("a", "n1")))
                .is_none()
        );
        let twice = o.record_pod(Verb::Create, None, Some(&pod("b", "n1")));
        assert_eq!(
            twice.map(|v| v.kind),
            Some(ViolationKind::DaemonSetTwoPodsOnANode)
        );
        assert_eq!(judged(&o, "b"), None, "a duplicate may go");
    }

    #[test]
    fn deleting_the_only_pod_of_a_node_that_still_exists_is_caught() {
        let mut o = oracle(Value::Null);
        o.record_pod(Verb::Create, None, Some(&pod("a", "n1")));
        assert_eq!(
            judged(&o, "a"),
            Some(ViolationKind::DaemonSetNeededPodDeleted)
        );
        o.record_node(Some(&json!({"metadata": {"name": "n1"}})), None);
        assert_eq!(judged(&o, "a"), None, "its Node is gone");
    }

    #[test]
    fn a_pod_is_needed_only_on_nodes_its_selector_matches() {
        let mut o = oracle(json!({"role": "agent"}));
        o.record_pod(Verb::Create, None, Some(&pod("a", "n1")));
        assert_eq!(
            judged(&o, "a"),
            Some(ViolationKind::DaemonSetNeededPodDeleted)
        );
        o.record_node(
            None,
            Some(&json!({"metadata": {"name": "n1", "labels": {"role": "none"}}})),
        );
        assert_eq!(judged(&o, "a"), None, "the Node no longer matches");
    }

    fn old_pod(name: &str, node: &str) -> Value {
        let mut p = pod(name, node);
        p["spec"]["containers"] = json!([{"name": "a", "image": "agent:old"}]);
        p
    }

    /// Three Nodes, each running an outdated Pod of a DaemonSet with `strategy`.
    fn rolling(strategy: Value) -> DaemonSetOracle {
        let mut o = DaemonSetOracle::default();
        o.record_set(
            None,
            Some(
                &json!({"metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
                "spec": {"updateStrategy": strategy,
                    "template": {"spec": {"containers": [{"name": "a", "image": "agent:new"}]}}}}),
            ),
        );
        for n in ["n1", "n2", "n3"] {
            o.record_node(None, Some(&json!({"metadata": {"name": n}})));
            let p = old_pod(&format!("p-{n}"), n);
            o.record_pod(Verb::Create, None, Some(&p));
        }
        o
    }

    fn judged_old(
        o: &DaemonSetOracle,
        name: &str,
        node: &str,
        f: &InFlight,
    ) -> Option<ViolationKind> {
        o.judge(Decision::Delete(&old_pod(name, node)), f)
            .map(|v| v.kind)
    }

    #[test]
    fn a_rolling_update_may_replace_an_outdated_pod_within_max_unavailable() {
        let mut o = rolling(json!({"type": "RollingUpdate"}));
        let none = InFlight::default();
        assert_eq!(
            judged_old(&o, "p-n1", "n1", &none),
            None,
            "one of three may go"
        );
        o.record_pod(Verb::Delete, Some(&old_pod("p-n1", "n1")), None);
        assert_eq!(
            judged_old(&o, "p-n2", "n2", &none),
            Some(ViolationKind::DaemonSetNeededPodDeleted),
            "n1 is still without its Pod"
        );
        let mut deleting = InFlight::default();
        let mut o = rolling(json!({"type": "RollingUpdate"}));
        deleting.arrive("ns", Decision::Delete(&old_pod("p-n1", "n1")), Vec::new());
        assert_eq!(
            judged_old(&o, "p-n2", "n2", &deleting),
            Some(ViolationKind::DaemonSetNeededPodDeleted),
            "a delete in flight counts"
        );
        o.record_pod(Verb::Delete, Some(&old_pod("p-n1", "n1")), None);
        let wider =
            rolling(json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}}));
        let mut one_gone = wider;
        one_gone.record_pod(Verb::Delete, Some(&old_pod("p-n1", "n1")), None);
        assert_eq!(
            judged_old(&one_gone, "p-n2", "n2", &none),
            None,
            "50% of 3 is 2"
        );
    }

    #[test]
    fn on_delete_or_a_current_pod_is_never_replaced_by_the_controller() {
        let o = rolling(json!({"type": "OnDelete"}));
        assert_eq!(
            judged_old(&o, "p-n1", "n1", &InFlight::default()),
            Some(ViolationKind::DaemonSetNeededPodDeleted)
        );
        let mut current = oracle(Value::Null);
        current.record_pod(Verb::Create, None, Some(&pod("a", "n1")));
        assert_eq!(
            judged(&current, "a"),
            Some(ViolationKind::DaemonSetNeededPodDeleted)
        );
    }
}
